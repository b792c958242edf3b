#!/bin/sh
# Command handler fixture: starts a background child, writes its pid to
# $PIDFILE and waits for it. Cancelling the task must kill both.
sleep 300 &
echo $! > "$PIDFILE.tmp"
mv "$PIDFILE.tmp" "$PIDFILE"
wait
