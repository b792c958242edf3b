#!/bin/sh
# Command handler fixture: fails with exit status 3 and a message on stderr.
cat >/dev/null
echo "progress: 10" >&2
echo "the flux capacitor is cold" >&2
exit 3
