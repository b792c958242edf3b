#!/usr/bin/env sh
# Prints the version that make build stamps into the binary (--version):
#   vX.Y.Z                    HEAD is the release tag vX.Y.Z (git tag, by the lead)
#   vX.Y.Z-N-gCOMMIT[-dirty]  N commits after the newest vX.Y.Z tag
#   vX.Y.Z-dev+COMMIT[.dirty] no vX.Y.Z tag reachable (a clone without tags):
#                             X.Y.Z from the file VERSION, the release being
#                             prepared, and the commit
#   vX.Y.Z-dev                no git at all (a source tarball)
set -eu
cd "$(dirname "$0")/.."
base=$(tr -d '[:space:]' <VERSION)
if ! echo "$base" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$'; then
	echo "version: VERSION holds '$base', want MAJOR.MINOR.PATCH" >&2
	exit 1
fi
if ! git rev-parse --git-dir >/dev/null 2>&1; then
	echo "v$base-dev"
	exit 0
fi
if v=$(git describe --tags --match 'v[0-9]*.[0-9]*.[0-9]*' --dirty 2>/dev/null); then
	echo "$v"
	exit 0
fi
commit=$(git rev-parse --short=12 HEAD)
dirty=
git diff --quiet HEAD -- 2>/dev/null || dirty=.dirty
echo "v$base-dev+$commit$dirty"
