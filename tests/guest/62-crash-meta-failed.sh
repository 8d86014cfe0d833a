#!/bin/bash
# A cache whose metadata can no longer be written gives no frame away.
#
# Once a metadata write fails (here the superblock's, at suspend), the
# records on the SSD stay as the last commit left them: they still call
# A's blocks dirty in their frames after A is written back (its commit
# fails).  A write of another origin set B of the same cache set, whose
# candidate frames are A's, must not take them: after a restart the
# records would bring B's data back as A's.  A failed metadata write
# degrades the cache, so B's write goes to the origin.  Such a cache is not
# loaded again (its records are behind the device) while the module
# remembers it, the superblock write having failed too; after a restart
# (the module forgets), loaded from the SSD (the superblock never said
# clean: recovered), A reads as written and B as written.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
SET=$PAIR_SET
FEATS=$PAIR_FEATS
NF=$(wc -w <<<"$FEATS")

pair_devices
ssd_table() { # ssd_table broken|whole: the cache leg, its superblock failing or not
	if [[ $1 == broken ]]; then
		printf '0 8 error\n8 %s linear %s 8\n' $((ns - 8)) "$ssd"
	else
		echo "0 $ns linear $ssd 0"
	fi
}
leg_load ssdleg "$(ssd_table whole)"
dev=$(dm_create sp "0 $nh ssdprio $hdd /dev/mapper/ssdleg $((NF + 1)) format $FEATS")
assert_eq "$(status_get sp set_blocks)" $SET "set_blocks"

# Origin sets A and B of one cache set; A's blocks 0 and 8 dirty in frames 0
# and 8 (their home frames), B's block 0's two candidates.
pair_dirty sp "$dev" "$nh" $SET
sync "$dev" || fail "flush"   # durable: a flush commits

# The superblock stops taking writes: suspend commits the records (they
# are past it), then its clean mark fails; resume serves on.
leg_load ssdleg "$(ssd_table broken)"
dmsetup suspend sp || fail "suspend"
dmsetup resume sp || fail "resume after the failed superblock write"
assert_eq "$(status_get sp meta_state)" failed "meta_state after the failed superblock write"
assert_eq "$(status_get sp cache_mode)" degraded "cache_mode after the failed superblock write"

# A written back: clean in memory, its commit fails, the records keep it dirty.
w0=$(status_get sp blocks_written_back)
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
assert_ge "$(status_get sp blocks_written_back)" $((w0 + 2)) "A's blocks written back"
assert_eq "$(blk_what "$hdd" $a0)" a "A:0 on the origin"

# B's block 0: its candidate frames hold A's blocks, clean in memory.
blk_put "$dev" $b0 b || fail "write B:0"
assert_eq "$(blk_what "$dev" $a0)" a "A:0 live"
assert_eq "$(blk_what "$dev" $a8)" c "A:8 live"
assert_eq "$(blk_what "$dev" $b0)" b "B:0 live"
dm_remove sp
dm_remove ssdleg

# The SSD answers again, but the records fell behind the device (the
# superblock could not say so): not loaded again while the module
# remembers.
dm_refused sp "0 $nh ssdprio $hdd $ssd $NF $FEATS" \
	"metadata writes failed while it was in use \(noted in memory"

# What the devices hold now, as after a power cut (the module forgets).
unload_module
load_module
dev=$(dm_create sp "0 $nh ssdprio $hdd $ssd $NF $FEATS")
assert_eq "$(status_get sp meta_state)" recovered "meta_state: the superblock never said clean"
assert_eq "$(blk_what "$dev" $a0)" a \
	"A:0 after the restart (its frame given to B:0 after the failed metadata write reads as B's data)"
assert_eq "$(blk_what "$dev" $a8)" c "A:8 after the restart"
assert_eq "$(blk_what "$dev" $b0)" b "B:0 after the restart"
dm_remove sp
remove_nullb hdd
remove_nullb ssd
log "ok"
