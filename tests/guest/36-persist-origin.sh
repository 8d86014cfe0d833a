#!/bin/bash
# The cache knows its origin without an origin_id in the table, also where
# the disk reports no id of its own: a device-mapper origin by its DM UUID
# (LVM, multipath; dm-crypt without the mapping's name, which changes with
# each open), a partition by its UUID.  An equal-size origin with another
# identity is refused and nothing is written; the right one loads with its
# dirty data.
# disks: part_disk:96M
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || fail "$TOOL missing (make tools)"
load_module
hdd=$(make_hdd hdd 64)
ssd=$(make_ssd ssd 24)
len=$(sectors "$hdd")

meta_sum() { dd if="$ssd" bs=1M count=4 iflag=direct status=none | sha256sum; }
# refused NAME TABLE: the table fails, as another origin, and the cache is untouched.
refused() {
	local before msg
	before=$(meta_sum)
	dmesg -C
	dm_try_create "$1" "$2" >/dev/null 2>&1 && fail "table accepted: $2"
	msg=$(dmesg | grep ssdprio || true)
	grep -q "another origin" <<<"$msg" || fail "expected 'another origin' for: $2; kernel said: $msg"
	[[ $(meta_sum) == "$before" ]] || fail "cache device written by a refused table: $2"
	dmsetup info "$1" >/dev/null 2>&1 && dmsetup remove "$1"
	log "refused: $2"
}
# uuid_leg NAME UUID: a linear device over the whole null_blk, with that DM UUID.
uuid_leg() {
	dmsetup create "$1" --uuid "$2" --table "0 $len linear $hdd 0" || fail "create $1"
	_settle
	dmsetup mknodes "$1"
	echo "/dev/mapper/$1"
}
# dirty_write ORIGIN: a fresh cache over it, left with 1 MiB of dirty data.
dirty_write() {
	"$TOOL" wipe --force "$ssd" >/dev/null || fail "wipe"
	dm_create sp "0 $(sectors "$1") ssdprio $1 $ssd 3 format evict_wait 3600000" >/dev/null
	head -c 1M /dev/urandom >/tmp/data
	dd if=/tmp/data of=/dev/mapper/sp bs=64k oflag=direct status=none || fail "write"
	assert_ge "$(status_get sp dirty_blocks)" 1 "dirty data in the cache"
	dm_remove sp
}
intact() { # ORIGIN: the cache loads over it and serves the dirty data
	dm_create sp "0 $(sectors "$1") ssdprio $1 $ssd" >/dev/null
	cmp <(dd if=/dev/mapper/sp bs=64k count=16 iflag=direct status=none) /tmp/data ||
		fail "dirty data over $1"
	dm_remove sp
}

# --- LVM-style DM UUID --------------------------------------------------------------------
a=$(uuid_leg lv_a "LVM-ssdprioTESTvgA0000000000000000lvA0000000000000000000")
b=$(uuid_leg lv_b "LVM-ssdprioTESTvgA0000000000000000lvB0000000000000000000")
dirty_write "$a"
"$TOOL" show "$ssd" | grep -q "origin id: *DM UUID hash" ||
	fail "no DM identity recorded: $("$TOOL" show "$ssd")"
refused sp "0 $len ssdprio $b $ssd"
refused sp "0 $len ssdprio $b $ssd 1 format"
intact "$a"
dmsetup remove lv_a lv_b

# --- dm-crypt: the mapping's name is not part of the identity -----------------------------
luks=0123456789abcdef0123456789abcdef
c1=$(uuid_leg crypt_one "CRYPT-LUKS2-$luks-crypt_one")
dirty_write "$c1"
dmsetup remove crypt_one
c2=$(uuid_leg crypt_two "CRYPT-LUKS2-$luks-crypt_two")
intact "$c2"
c3=$(uuid_leg crypt_three "CRYPT-LUKS2-fedcba9876543210fedcba9876543210-crypt_three")
refused sp "0 $len ssdprio $c3 $ssd"
dmsetup remove crypt_two crypt_three
# Plain dm-crypt names nothing stable: no identity, size alone is checked.
p=$(uuid_leg plain "CRYPT-PLAIN-plain")
dirty_write "$p"
"$TOOL" show "$ssd" | grep -Eq "UUID hash|origin disk:" && fail "an identity from a plain dm-crypt name"
intact "$p"
dmsetup remove plain

# --- partitions: GPT partition UUIDs ------------------------------------------------------
disk=$(vdisk part_disk)
sfdisk -q --wipe always "$disk" <<'EOF' || fail "sfdisk"
label: gpt
size=40MiB
size=40MiB
EOF
blockdev --rereadpt "$disk" 2>/dev/null || true
_settle
p1=${disk}1 p2=${disk}2
for _ in $(seq 50); do [[ -b $p2 ]] && break; sleep 0.1; done
[[ -b $p1 && -b $p2 ]] || fail "no partitions on $disk"
assert_eq "$(sectors "$p1")" "$(sectors "$p2")" "equal partitions"
dirty_write "$p1"
"$TOOL" show "$ssd" | grep -q "origin id: *partition UUID hash" ||
	fail "no partition identity recorded: $("$TOOL" show "$ssd")"
refused sp "0 $(sectors "$p2") ssdprio $p2 $ssd"
intact "$p1"
# Flush, so the next run's sfdisk starts from a clean disk.
dm_create sp "0 $(sectors "$p1") ssdprio $p1 $ssd" >/dev/null
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks -eq 0 300
dm_remove sp
log "ok"
