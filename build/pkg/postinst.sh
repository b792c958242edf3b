#!/bin/sh
# synapse postinst: the system user and group synapse (no login, no home
# directory of its own), the data directory, and systemd told of the unit.
# The service is not started: read the README, then
#   systemctl enable --now synapse
set -e
if [ "$1" = configure ]; then
	if ! getent group synapse >/dev/null; then
		groupadd --system synapse
	fi
	if ! getent passwd synapse >/dev/null; then
		useradd --system --gid synapse --home-dir /var/lib/synapse --no-create-home \
			--shell /usr/sbin/nologin --comment "Synapse edge agent" synapse
	fi
	install -d -o synapse -g synapse -m 0700 /var/lib/synapse
	chgrp synapse /etc/synapse/config.json
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload >/dev/null || true
	fi
fi
exit 0
