#!/bin/bash
# create and attach format a cache whose superblock sector is zero; a
# device holding something else with that sector zero (ext4 starts at byte
# 1024, an LVM label in sector 1, md 1.2 at 4 KiB, swap's signature at the
# end of its first page: ext4 and swap here) must be refused without --force, and `show` must
# say what is there.  Image files stand in for the devices (--dry-run:
# nothing is created).  Run by make tools-test.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOOL=${TOOL:-build/ssdprio-tool}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "test-tool-signature: FAIL: $*" >&2; exit 1; }

truncate -s 64M "$D/o.img" "$D/c.img"
"$TOOL" create --dry-run x "$D/o.img" "$D/c.img" >"$D/out" 2>/dev/null ||
	fail "a zeroed cache was refused"
grep -q " format'" "$D/out" || fail "no format for a zeroed cache: $(cat "$D/out")"

check() { # check WHAT: c.img holds WHAT now
	local rc=0
	cmp -s -n 512 "$D/c.img" /dev/zero || fail "$1: its first sector is not zero: the test proves nothing"
	"$TOOL" create --dry-run x "$D/o.img" "$D/c.img" >"$D/out" 2>"$D/err" || rc=$?
	((rc == 3)) || fail "$1: create --dry-run exited $rc: $(cat "$D/out" "$D/err")"
	grep -q "holds $1.*--force" "$D/err" || fail "$1: create said: $(cat "$D/err")"
	"$TOOL" show "$D/c.img" >"$D/out" 2>&1 || true
	grep -q "holds $1" "$D/out" || fail "$1: show said: $(cat "$D/out")"
	"$TOOL" create --dry-run --force x "$D/o.img" "$D/c.img" >"$D/out" 2>/dev/null ||
		fail "$1: --force was refused"
	grep -q " format'" "$D/out" || fail "$1: no format with --force"
}

mkfs.ext4 -q -F "$D/c.img"
check ext4
# check says what is there too, not "blank".
"$TOOL" check "$D/c.img" >"$D/out" 2>&1 && fail "check of an ext4 image succeeded"
grep -q "holds ext4" "$D/out" || fail "check of an ext4 image said: $(cat "$D/out")"
dd if=/dev/zero of="$D/c.img" bs=1M count=1 conv=notrunc status=none
mkswap "$D/c.img" >/dev/null 2>&1
check swap
echo "test-tool-signature: ok"
