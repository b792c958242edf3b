#!/bin/sh
# Command handler fixture: reads the payload on stdin, reports progress and a
# log line on stderr, and prints a JSON result that embeds the payload.
payload=$(cat)
echo "progress: 50" >&2
echo "working on $SYNAPSE_TASK_TYPE" >&2
printf '{"got":%s,"task_id":"%s","greeting":"%s"}\n' "$payload" "$SYNAPSE_TASK_ID" "$GREETING"
