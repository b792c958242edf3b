#!/bin/sh
# Command handler fixture: prints plain text rather than JSON.
cat >/dev/null
echo "all good"
