#!/bin/bash
# SSD faults beside a writeback in flight (its origin write held in
# dm-delay) must never let a block's answer change with no write between.
# A 1 KiB write of a clean block beside it, which the SSD applies in part
# (a one-sector dm-error segment under the block's frame: the first sector
# lands, the second fails): the block must read as the origin has it while
# degraded, after the writeback and after a reload.  Kept clean it would
# read from the origin while degraded and from the SSD's half-written
# frame after the reload.  Once for a block the writeback does not carry
# (dropped at once), once for one it bridges (kept while its origin write
# may fail and leave the origin undefined, dropped when it succeeds).
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
modprobe dm-flakey || fail "modprobe dm-flakey"
modprobe dm-delay || fail "modprobe dm-delay"

# Sets of 16 blocks; no writeback but the flushes asked for, at once.
FEATS="set_size 16 evict_wait 600000 dirty_max_age 0 lockout_clean off seq_cutoff 0 read_alloc off writeback_gap 16 idle_dispatch_interval 5"
# table NAME [format]: the ssdprio table over NAME's legs.
table() {
	local args="$2 $FEATS"
	# shellcheck disable=SC2086
	set -- $args
	echo "0 $nh ssdprio /dev/mapper/hddleg /dev/mapper/ssdleg $# $args"
}
# frame_sector OSET BLK: the first SSD sector of the frame of block BLK of
# origin set OSET, the only origin set cached in its cache set (blocks go
# to their home frame first: block B in frame B).
frame_sector() {
	local cs
	cs=$("$REPO/build/ssdprio-tool" debug-placement "$ssd" "$1" | cut -d' ' -f2)
	echo $((ds + cs * 16 * 8 + $2 * 8))
}
# ssd_table [SECTOR LEN "TARGET ARGS"]...: the SSD leg linear but for
# those ranges (in order), mapped by their target.
ssd_table() {
	local pos=0 t=""
	while (($#)); do
		((${1} > pos)) && t+="$pos $(($1 - pos)) linear $ssd $pos"$'\n'
		t+="$1 $2 $3"$'\n'
		pos=$(($1 + $2))
		shift 3
	done
	leg_load ssdleg "$t$pos $((ns - pos)) linear $ssd $pos"
}
# put2 DEV BLOCKNR CHAR: a 1 KiB direct write at the block's start: two
# sectors, one partial block.
put2() {
	head -c 1024 </dev/zero | tr '\0' "$3" |
		dd of="$1" bs=1024 seek=$(($2 * 4)) count=1 oflag=direct conv=notrunc status=none 2>/dev/null
}
reload() {
	dmsetup suspend sp || fail "suspend"
	dmsetup reload sp --table "$(table sp)" || fail "reload"
	dmsetup resume sp || fail "resume"
	assert_eq "$(status_get sp cache_mode)" normal "cache_mode after the reload"
}
hold_origin_writes() {
	leg_load hddleg "0 $nh delay /dev/mapper/olow 0 0 /dev/mapper/olow 0 600000"
}
setup() {
	hdd=$(make_hdd "hdd$1" 64 0 32)
	ssd=$(make_ssd "ssd$1" 32)
	nh=$(sectors "$hdd")
	ns=$(sectors "$ssd")
	leg olow "$hdd" linear
	leg hddleg /dev/mapper/olow linear
	leg ssdleg "$ssd" linear
	dev=$(dm_create sp "$(table sp format)")
	ds=$(cache_data_start "$ssd")
}
teardown() {
	dm_remove sp
	dm_remove ssdleg
	dm_remove hddleg
	dm_remove olow
	remove_nullb "${hdd#/dev/}"
	remove_nullb "${ssd#/dev/}"
}

# --- (a) partial SSD writes of clean blocks beside a writeback ----------------------
# Blocks 0, 1, 2 and 8 cached clean (A); 0 and 2 rewritten: the flush's one
# origin write carries blocks 0-2, 1 bridged, and not 8.  A failed write
# leaves its sectors undefined, but with one answer: the origin's, once
# the cache has dropped the block (the origin still has A everywhere).
setup a
for b in 0 1 2 8; do blk_put "$dev" $b A || fail "write block $b"; done
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks -eq 0 60
# part_fault ROUND DIRTY BLOCK: blocks 0 and 2 rewritten with DIRTY and
# written back by a flush; while its origin write is held, a 1 KiB write
# into BLOCK whose second sector fails on the SSD (a one-sector dm-error
# segment under the block's frame); then the origin write goes on, and
# BLOCK must read A while degraded, after the writeback and after a reload.
part_fault() {
	local f got1 got2 got3
	blk_put "$dev" 0 "$2" || fail "rewrite block 0"
	blk_put "$dev" 2 "$2" || fail "rewrite block 2"
	hold_origin_writes
	dmsetup message sp 0 flush_dirty
	wait_held hddleg 5 1
	f=$(frame_sector 0 "$3")
	ssd_table $((f + 1)) 1 error
	# Beside the writeback (a rewrite of a cached block, on the SSD alone):
	# its first sector lands, its second fails.
	if put2 "$dev" "$3" W; then
		fail "$1: the write into the SSD's error segment succeeded"
	fi
	assert_eq "$(status_get sp cache_mode)" degraded "$1: cache_mode after the failed write"
	got1=$(blk_what "$dev" "$3")
	leg_load hddleg "0 $nh linear /dev/mapper/olow 0"
	wait_status sp dirty_blocks -eq 0 60
	got2=$(blk_what "$dev" "$3")
	leg ssdleg "$ssd" linear
	reload
	got3=$(blk_what "$dev" "$3")
	log "$1: block $3 degraded: $got1, after the writeback: $got2, after a reload: $got3"
	assert_eq "$got1" A "$1: block $3 while degraded"
	assert_eq "$got2" A "$1: block $3 after the writeback"
	assert_eq "$got3" A "$1: block $3 after the reload (the half-written SSD frame?)"
	assert_eq "$(blk_what "$hdd" 0)" "$2" "$1: origin block 0 after the writeback"
	assert_eq "$(blk_what "$dev" 2)" "$2" "$1: block 2 after the reload"
}
part_fault "not carried" B 8
part_fault "bridged" C 1
teardown

log "ok"
