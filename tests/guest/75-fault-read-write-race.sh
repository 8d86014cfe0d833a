#!/bin/bash
# A read hit that fails on the SSD after a write made its block dirty must
# not drop the block: the write's data is only on the SSD.
#
# X is cached clean.  A read of X goes to the SSD, which answers it only
# after 2 s, with an error.  Meanwhile a write of X (new) completes: X is
# dirty in its frame.  When the read fails it is served from the origin
# (old, the read overlapped the write: either answer is its own), but X
# stays dirty and reads as new from then on.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
modprobe dm-delay || fail "modprobe dm-delay"
HOLD_MS=2000
pair_devices
dm_create ssderr "0 $ns error" >/dev/null
leg_load ssdleg "0 $ns linear $ssd 0"
NF=$(wc -w <<<"$PAIR_FEATS")
dev=$(dm_create sp "0 $nh ssdprio $hdd /dev/mapper/ssdleg $((NF + 1)) format $PAIR_FEATS")
x=3

blk_put "$dev" $x o || fail "write of X"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
assert_eq "$(blk_what "$hdd" $x)" o "X written back"
assert_eq "$(status_get sp valid_blocks)" 1 "X cached, clean"

# Reads of the SSD: held, then failed; its writes and flushes pass.
leg_load ssdleg "0 $ns delay /dev/mapper/ssderr 0 $HOLD_MS $ssd 0 0"
f0=$(status_get sp read_fallbacks)
blk_what "$dev" $x >/tmp/75-read &
rpid=$!
sleep 0.5
blk_put "$dev" $x n || fail "write of X"
kill -0 $rpid 2>/dev/null ||
	fail "the read of X ended before the write did: the test proves nothing"
assert_eq "$(status_get sp dirty_blocks)" 1 "X dirty after the write"
wait $rpid || fail "the read of X failed (it should fall back to the origin)"
r=$(cat /tmp/75-read)
[[ $r == o || $r == n ]] || fail "the overlapping read of X read '$r'"
assert_ge "$(status_get sp read_fallbacks)" $((f0 + 1)) "the failed SSD read served from the origin"
leg_load ssdleg "0 $ns linear $ssd 0"

assert_eq "$(status_get sp dirty_blocks)" 1 "X still dirty after the failed read (0: dropped)"
assert_eq "$(blk_what "$dev" $x)" n "X after the failed read (o: the write was lost)"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
assert_eq "$(blk_what "$hdd" $x)" n "X written back"
dm_remove sp
dm_remove ssdleg
dm_remove ssderr
remove_nullb hdd
remove_nullb ssd
log "ok"
