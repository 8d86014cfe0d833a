#!/bin/bash
# An origin flush that fails once (a path failing over) does not retire the
# cache: the metadata commit tries the flush again after a short backoff,
# and goes on only once one succeeded.  A flush that fails every try still
# ends meta_state failed, in a bounded number of tries, and the user's
# flush fails; the cache is not retired: a new table loads it.  The origin is dm-hddsim (tests/hddsim) at no modelled
# latency, whose message "fail_flushes N" fails its next N flushes.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

HDDSIM_KO=$REPO/tests/hddsim/dm-hddsim.ko
[[ -f $HDDSIM_KO ]] || make -C "$REPO/tests/hddsim" >/dev/null ||
	fail "cannot build $HDDSIM_KO"
cleanup() {
	cleanup_all
	_unload "$HDDSIM_KO"
}
trap cleanup EXIT

load_module
load_module "$HDDSIM_KO"
# A volatile write cache, or the block layer completes flushes at once.
hdd=$(NULLB_CACHE_MB=4 make_hdd fhdd 16 0 32)
ssd=$(make_ssd fssd 24)
nh=$(sectors "$hdd")
dm_create fleg "0 $nh hddsim $hdd rpm 100000 seq_mbps 100000 avg_seek_us 0 t2t_us 0" >/dev/null
# writethrough: every write reaches the origin, so every commit flushes it.
dev=$(dm_create sp "0 $nh ssdprio /dev/mapper/fleg $ssd 3 format write_policy writethrough")
failed() { status_get fleg flushes_failed; }

# --- one failed flush: retried, the cache stays healthy ---------------------------
blk_put "$dev" 0 a || fail "write block 0"
sync "$dev" || fail "flush"
dmesg -C
dmsetup message fleg 0 fail_flushes 1 || fail "hddsim: fail_flushes"
blk_put "$dev" 1 b || fail "write block 1"
sync "$dev" || fail "the user's flush failed after one failed origin flush"
assert_eq "$(failed)" 1 "origin flushes failed on purpose"
assert_eq "$(status_get sp meta_state)" formatted "meta_state after one failed origin flush"
assert_eq "$(status_get sp cache_mode)" normal "cache_mode after one failed origin flush"
dmesg | grep -q "origin flush failed.*trying again" ||
	fail "no retry in dmesg: $(dmesg | grep ssdprio | tail -3)"
assert_eq "$(blk_what "$dev" 0)" a "block 0 on the device"
assert_eq "$(blk_what "$dev" 1)" b "block 1 on the device"
assert_eq "$(blk_what "$hdd" 1)" b "block 1 on the origin"
# A clean shutdown after it, and a warm load.
dm_remove sp
dev=$(dm_create sp "0 $nh ssdprio /dev/mapper/fleg $ssd 2 write_policy writethrough")
assert_eq "$(status_get sp meta_state)" clean "meta_state after the clean shutdown"
assert_eq "$(blk_what "$dev" 1)" b "block 1 after the reload"
log "one failed origin flush retried; cache healthy"

# --- every flush fails: retired after a bounded number of tries --------------------
dmesg -C
dmsetup message fleg 0 fail_flushes 1000 || fail "hddsim: fail_flushes"
blk_put "$dev" 2 c || fail "write block 2"
timeout 60 sync "$dev" && fail "the user's flush succeeded though every origin flush failed"
n=$(($(failed) - 1))
assert_ge "$n" 2 "origin flush tries: tried again"
assert_le "$n" 5 "origin flush tries: bounded"
assert_eq "$(status_get sp meta_state)" failed "meta_state when every origin flush fails"
assert_eq "$(status_get sp cache_mode)" degraded "cache_mode when every origin flush fails"
dmsetup message fleg 0 fail_flushes 0 || fail "hddsim: fail_flushes 0"
assert_eq "$(blk_what "$dev" 2)" c "block 2 on the device"
timeout 60 dmsetup suspend sp || fail "suspend of the failed cache"
dmsetup resume sp || fail "resume"
dm_remove sp
# Not retired: loaded again as after a power cut.
dev=$(dm_create sp "0 $nh ssdprio /dev/mapper/fleg $ssd 2 write_policy writethrough")
assert_eq "$(status_get sp meta_state)" recovered "meta_state of the load after the failure"
assert_eq "$(blk_what "$dev" 1)" b "block 1 after the failure and a reload"
assert_eq "$(blk_what "$dev" 2)" c "block 2 after the failure and a reload"
dm_remove sp
log "persistent origin flush failure: meta_state failed after $n tries, loaded again"
dm_remove fleg
log "ok"
