#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch over every kernel source of the project.  The script comes
# from Debian's linux-source-6.1 (tools/install-deps.sh unpacks it).
set -euo pipefail
cd "$(dirname "$0")/.."
cp=${CHECKPATCH:-}
for c in /opt/linux-src/scripts/checkpatch.pl build/linux-src/scripts/checkpatch.pl; do
	[ -n "$cp" ] && break
	[ -f "$c" ] && cp=$c
done
[ -n "$cp" ] || { echo "checkpatch.pl not found: run tools/install-deps.sh --checkpatch"; exit 1; }
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.c' '*.h' |
	grep -vE '^(tests/unit|tools/.*\.py)' | grep -v '\.mod\.c$')
rc=0
for f in "${files[@]}"; do
	out=$(perl "$cp" --no-tree --quiet --show-types \
		--ignore FILE_PATH_CHANGES -f "$f" 2>&1) || rc=1
	[ -n "$out" ] && { echo "$out"; rc=1; }
done
[ $rc -eq 0 ] && echo "checkpatch: ${#files[@]} files clean"
exit $rc
