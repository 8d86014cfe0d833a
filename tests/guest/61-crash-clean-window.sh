#!/bin/bash
# A crash between a writeback's "clean" in memory and its commit.
#
# A writeback marks the blocks it wrote clean, then commits the metadata;
# until that commit is durable the SSD's records still call them dirty, so
# a crash brings them back from their frames.  A frame given to another
# block in that window (a new origin set's write, or a write beside the
# writeback) would then be read back as the old block: another block's
# data, the worst a cache can return.  Here the commit's metadata writes
# are held (dm-delay over the metadata area, data area direct) while a
# write of another origin set of the same cache set, whose two candidate
# frames hold the two blocks just written back, comes in; the devices'
# contents at that moment are a crash image.  Loaded again (recovery), both
# written-back blocks must read as written, and the other set's block as
# written or as before, never as anything else.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
modprobe dm-delay || fail "modprobe dm-delay"
SET=$PAIR_SET
HOLD_MS=8000               # how long the commit's metadata writes are held
FEATS=$PAIR_FEATS
NF=$(wc -w <<<"$FEATS")

pair_devices
META=2048                  # data_start: the first MiB holds the metadata
ssd_table() { # ssd_table HOLD_MS: the cache leg, metadata writes held that long
	if (($1)); then
		echo "0 $META delay $ssd 0 0 $ssd 0 $1 $ssd 0 0"
	else
		echo "0 $META linear $ssd 0"
	fi
	echo "$META $((ns - META)) linear $ssd $META"
}
leg_load ssdleg "$(ssd_table 0)"
dev=$(dm_create sp "0 $nh ssdprio $hdd /dev/mapper/ssdleg $((NF + 1)) format $FEATS")
assert_eq "$(status_get sp set_blocks)" $SET "set_blocks"

# Origin sets A and B of one cache set; A's blocks 0 and 8 dirty in frames 0
# and 8 (their home frames), B's block 0's two candidates.
pair_dirty sp "$dev" "$nh" $SET
# A flush: the records say so on the SSD.
c0=$(status_get sp meta_commits)
sync "$dev" || fail "flush"
assert_ge "$(status_get sp meta_commits)" $((c0 + 1)) "a commit for the flush"

# Hold the metadata writes, then write A back: its origin writes and flush
# go through, its commit waits in dm-delay.
leg_load ssdleg "$(ssd_table $HOLD_MS)"
c0=$(status_get sp meta_commits)
w0=$(status_get sp blocks_written_back)
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
# Counted under the lock that marks them clean, just before the commit.
wait_status sp blocks_written_back -ge $((w0 + 2)) 60
# B's block 0: its candidate frames 0 and 8 hold A's blocks, clean in memory,
# dirty in the records on the SSD.
blk_put "$dev" $b0 b &
writer=$!
sleep 1
# The crash image: what the devices hold now.
dd if="$ssd" of=/tmp/ssd.img bs=1M iflag=direct status=none || fail "copy of the SSD"
dd if="$hdd" of=/tmp/hdd.img bs=1M iflag=direct status=none || fail "copy of the origin"
assert_eq "$(status_get sp meta_commits)" "$c0" \
	"the writeback's commit still held when the image was taken (else the test proves nothing)"
wait "$writer" || fail "write B:0"
log "B:0 written through $(status_get sp bypassed) bypassed, $(status_get sp dirty_blocks) dirty"
wait_status sp meta_commits -gt "$c0" 120
leg_load ssdleg "$(ssd_table 0)"
assert_eq "$(blk_what "$dev" $a0)" a "A:0 live"
assert_eq "$(blk_what "$dev" $a8)" c "A:8 live"
assert_eq "$(blk_what "$dev" $b0)" b "B:0 live"
dm_remove sp
dm_remove ssdleg

# The crash image on fresh devices, loaded without format: recovery.
hdd2=$(make_hdd hdd2 16 0 32)
ssd2=$(make_ssd ssd2 2)
dd if=/tmp/hdd.img of="$hdd2" bs=1M oflag=direct status=none || fail "origin image"
dd if=/tmp/ssd.img of="$ssd2" bs=1M oflag=direct status=none || fail "SSD image"
dev=$(dm_create sp2 "0 $nh ssdprio $hdd2 $ssd2 $NF $FEATS")
assert_eq "$(status_get sp2 meta_state)" recovered "meta_state after the crash"
assert_eq "$(blk_what "$dev" $a0)" a \
	"A:0 after the crash (its frame given to B:0 before 'clean' was durable reads as B's data)"
assert_eq "$(blk_what "$dev" $a8)" c "A:8 after the crash"
got=$(blk_what "$dev" $b0)
[[ $got == b || $got == 0 ]] ||
	fail "B:0 after the crash: neither what was written nor what was there before: $got"
dm_remove sp2
remove_nullb hdd2
remove_nullb ssd2
log "ok"
