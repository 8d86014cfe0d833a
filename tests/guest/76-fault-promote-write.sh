#!/bin/bash
# A promotion whose SSD write fails is an SSD write error as a user write's
# is: counted (ssd_write_errors) and the cache degraded, so an SSD that
# fails every write is not handed one copy per read miss for ever.  The
# read itself is served from the origin, and reads as written.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 32)
nh=$(sectors "$hdd")
ns=$(sectors "$ssd")
leg_load ssdleg "0 $ns linear $ssd 0"
blk_put "$hdd" 8000 a || fail "block 8000 on the origin"
dev=$(dm_create sp "0 $nh ssdprio $hdd /dev/mapper/ssdleg 5 format set_size 16 seq_cutoff 0")
ds=$(cache_data_start "$ssd")
dm_remove sp
# The data area fails writes (reads pass); the metadata area works.
leg_load ssdleg "0 $ds linear $ssd 0
$ds $((ns - ds)) flakey $ssd $ds 0 1 1 error_writes"
# No copies of udev's probe reads: read_alloc on once the device is there.
dev=$(dm_create sp "0 $nh ssdprio $hdd /dev/mapper/ssdleg 6 set_size 16 seq_cutoff 0 read_alloc off")
assert_eq "$(status_get sp cache_mode)" normal "cache_mode before"
dmsetup message sp 0 read_alloc on || fail "read_alloc on"
assert_eq "$(blk_what "$dev" 8000)" a "block 8000 (a read miss)"
wait_status sp promotions_skipped -ge 1 60
log "$(status_get sp promotions) promoted, $(status_get sp promotions_skipped) skipped"
assert_eq "$(status_get sp promotions)" 0 "promotions into a failing SSD"
assert_ge "$(status_get sp ssd_write_errors)" 1 "the failed promotion counted as an SSD write error"
assert_eq "$(status_get sp cache_mode)" degraded "cache_mode after an SSD write failed"
# Degraded: no more copies.
s0=$(status_get sp promotions_skipped)
assert_eq "$(blk_what "$dev" 9000)" 0 "block 9000 (another miss)"
sleep 1
assert_eq "$(status_get sp promotions_skipped)" "$s0" "no copy tried once degraded"
assert_eq "$(blk_what "$dev" 8000)" a "block 8000 again"
dm_remove sp
dm_remove ssdleg
log "ok"
