#!/bin/bash
# docs/runbook.md, step by step: an SSD that is dying (its writes fail) is
# drained with flush_dirty and replaced by a linear table and then a new
# cache without losing anything; an SSD that is dead (everything fails)
# still lets the device serve what the origin has, and `ssdprio-tool
# dirty` names exactly the origin ranges whose data went with it.
# timeout: 900
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
modprobe dm-flakey
TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || fail "build/ssdprio-tool missing (make tools)"

hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 32)
len=$(sectors "$hdd")
# leg MODE: the cache leg as linear, failing writes, or failing everything.
ssd_leg() { leg ssdleg "$ssd" "$1"; }
# swap TABLE: reload sp live (what the runbook does, no unmount).
swap() { dmsetup reload sp --table "$1" && dmsetup resume sp || fail "reload sp: $1"; }
# put FILE MIB_OFFSET [dd flags]: write FILE through sp.
put() { dd if="$1" of=/dev/mapper/sp bs=1M seek="$2" oflag=direct${3:+,$3} status=none; }
# same FILE MIB_OFFSET [DEV]: the data at that offset equals FILE.
same() {
	cmp -s "$1" <(dd if="${3:-/dev/mapper/sp}" bs=1M skip="$2" count=$(($(stat -c %s "$1") >> 20)) \
		iflag=direct status=none)
}
for f in A B C D; do head -c $((1 << 20)) /dev/urandom >/tmp/$f; done
head -c $((2 << 20)) /dev/urandom >/tmp/A

ssd_leg linear
dm_create sp "0 $len ssdprio $hdd /dev/mapper/ssdleg 5 format evict_wait 600000 seq_cutoff 0" >/dev/null
put /tmp/A 0 || fail "write A"
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks -eq 0 120
put /tmp/B 8 dsync || fail "write B"
assert_eq "$(status_get sp dirty_blocks)" 256 "B dirty"

# --- dying: writes fail, reads work ----------------------------------------------------
ssd_leg writes
put /tmp/C 16 && fail "a write into the cache succeeded on an SSD that fails writes"
assert_eq "$(status_get sp cache_mode)" degraded "cache_mode"
put /tmp/C 16 || fail "write C around the degraded cache"
dmsetup message sp 0 drain
wait_status sp dirty_blocks -eq 0 300
wait_status sp flush_state == idle 60
log "dying SSD drained: $(dmsetup status sp)"
swap "0 $len linear $hdd 0"
same /tmp/A 0 && same /tmp/B 8 && same /tmp/C 16 || fail "data after the swap to linear"
# The dying SSD could not record its clean shutdown: wipe refuses without
# --force, which the drain above (dirty_blocks 0) makes safe.
ssd_leg linear
"$TOOL" wipe /dev/mapper/ssdleg && fail "wipe of an uncleanly stopped cache without --force"
"$TOOL" wipe --force /dev/mapper/ssdleg || fail "wipe --force of the drained cache"
"$TOOL" attach sp /dev/mapper/ssdleg >/tmp/attach.out 2>&1 || fail "attach of the new cache: $(cat /tmp/attach.out)"
assert_eq "$(status_get sp cache_mode)" normal "a new cache starts normal"
same /tmp/A 0 && same /tmp/B 8 && same /tmp/C 16 || fail "data over the new cache"

# --- dead: everything fails ------------------------------------------------------------
dmsetup message sp 0 evict_wait 600000
put /tmp/D 24 dsync || fail "write D"
assert_ge "$(status_get sp dirty_blocks)" 256 "D dirty"
ssd_leg all
same /tmp/A 0 || fail "clean data while the SSD is dead"
if dd if=/dev/mapper/sp bs=1M skip=24 count=1 iflag=direct status=none of=/dev/null 2>/dev/null; then
	fail "a dirty block read without error from a dead SSD"
fi
dmsetup message sp 0 flush_dirty
wait_status sp flush_state == failed 300
ranges=$("$TOOL" dirty "$ssd") || fail "ssdprio-tool dirty"
log "dead SSD, dirty ranges: $ranges"
assert_eq "$ranges" "$((24 << 11)) $((1 << 11))" "ssdprio-tool dirty lists exactly D's range"
swap "0 $len linear $hdd 0"
same /tmp/A 0 && same /tmp/B 8 && same /tmp/C 16 || fail "data on the origin after the SSD died"
dm_remove sp
dm_remove ssdleg
log "ok"
