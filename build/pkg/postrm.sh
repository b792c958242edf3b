#!/bin/sh
# synapse postrm: purge removes the data directory (the store, the identity
# key, admin.token), /etc/synapse and the system user; remove keeps them.
set -e
if [ "$1" = purge ]; then
	rm -rf /var/lib/synapse /etc/synapse
	if getent passwd synapse >/dev/null; then
		userdel synapse >/dev/null 2>&1 || true
	fi
	if getent group synapse >/dev/null; then
		groupdel synapse >/dev/null 2>&1 || true
	fi
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
