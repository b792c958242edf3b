#!/bin/sh
# Command handler fixture for tier-2 sessions: a claim lookup that takes
# {"name", "number"} and answers {"ok": true, "text": "reviewed", "input": <payload>}.
payload=$(cat)
printf '{"ok":true,"text":"reviewed","input":%s}\n' "$payload"
