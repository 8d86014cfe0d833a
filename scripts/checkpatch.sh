#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch over every kernel source of the project.  The script comes
# from Debian's linux-source-6.1 (scripts/install-deps.sh unpacks it).
set -euo pipefail
cd "$(dirname "$0")/.."
cp=${CHECKPATCH:-}
for c in /opt/linux-src/scripts/checkpatch.pl build/linux-src/scripts/checkpatch.pl; do
	[ -n "$cp" ] && break
	[ -f "$c" ] && cp=$c
done
[ -n "$cp" ] || { echo "checkpatch.pl not found: run scripts/install-deps.sh --checkpatch"; exit 1; }
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.c' '*.h' |
	grep -vE '^(tests/unit|tools/.*\.py)' | grep -v '\.mod\.c$')
rc=0
# Kernel-version tests belong in the compat header alone (which checkpatch
# flags for testing LINUX_VERSION_CODE at all: it is the one place allowed).
compat=engine/ssdp_compat.h
if grep -n 'LINUX_VERSION_CODE' "${files[@]}" | grep -v "^$compat:"; then
	echo "checkpatch: LINUX_VERSION_CODE outside $compat (put the shim there)"
	rc=1
fi
for f in "${files[@]}"; do
	ign=FILE_PATH_CHANGES
	[ "$f" = $compat ] && ign=$ign,LINUX_VERSION_CODE,CONSTANT_COMPARISON
	out=$(perl "$cp" --no-tree --quiet --show-types \
		--ignore "$ign" -f "$f" 2>&1) || rc=1
	[ -n "$out" ] && { echo "$out"; rc=1; }
done
[ $rc -eq 0 ] && echo "checkpatch: ${#files[@]} files clean"
exit $rc
