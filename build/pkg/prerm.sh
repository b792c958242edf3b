#!/bin/sh
# synapse prerm: stop the service before its files go.
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
	systemctl stop synapse.service >/dev/null 2>&1 || true
	systemctl disable synapse.service >/dev/null 2>&1 || true
fi
exit 0
