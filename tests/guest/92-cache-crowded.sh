#!/bin/bash
# Crowded sets: a cache set more than half of whose frames hold dirty blocks
# is written back in the next quiet window, though the cache's dirty share is
# far under dirty_target. Left dirty, it would refuse every block of the next
# origin set to land in it (both of a block's frames dirty: a lock-out), and
# those writes would go to the origin at HDD speed after a quiet window that
# had time to write it back (bench `bursts`).
#
# Origin sets A and B share one cache set of 16 frames (C is elsewhere). A written whole
# (16 dirty frames of 16) is written back in the window and stays cached,
# clean; then B's writes take A's clean frames: nothing bypasses the cache.
# C half dirty (8 of 16) is not crowded and stays dirty. With dirty_target
# 100 (no cleaning) A stays dirty and B's writes are refused (the lock-outs
# this prevents); a message bringing dirty_target back to 10 makes A
# crowded again and it goes in the next window. Data checked through the
# device and on the origin alone.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
SET=16
WAIT_MS=1000
# Nothing but cleaning writes back: no lock-out cleaning, no age bound, no
# promotion; idle origin writes at once.
FEATS="set_size $SET evict_wait $WAIT_MS dirty_max_age 0 lockout_clean off seq_cutoff 0 read_alloc off idle_dispatch_interval 5"

hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 16)
nh=$(sectors "$hdd")
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null 2>&1 || true
# shellcheck disable=SC2086 # the feature words
dev=$(dm_create sp "0 $nh ssdprio $hdd $ssd $(($(wc -w <<<"$FEATS") + 1)) format $FEATS")
st() { status_get sp "$1"; }
place() { "$REPO/build/ssdprio-tool" debug-placement "$ssd" "$@" | cut -d' ' -f2; }
ca=$(place 0)
# B: in A's cache set; C: in another one.
# shellcheck disable=SC2046 # a list of origin sets
read -r B C < <("$REPO/build/ssdprio-tool" debug-placement "$ssd" $(seq 1 $((nh / 8 / SET - 1))) |
	awk -v ca="$ca" '$2 == ca && !b { b = $1 } $2 != ca && !c { c = $1 } END { print b, c }')
[[ -n $B && -n $C ]] || fail "no origin sets B (in cache set $ca) and C (in another)"
log "origin sets 0 and $B share cache set $ca, $C is in $(place "$C"); $(st total_sets) sets of $SET blocks"
a=0 b=$((B * SET)) c=$((C * SET))

# quiet_window: longer than evict_wait with no I/O (a host stall only makes
# the "stays dirty" checks vacuous, never red).
quiet_window() { sleep $((4 * WAIT_MS / 1000)); }

# --- half dirty: not crowded, stays dirty ---------------------------------------------
for i in $(seq 0 $((SET / 2 - 1))); do blk_put "$dev" $((c + i)) h || fail "write C:$i"; done
assert_eq "$(st dirty_blocks)" $((SET / 2)) "dirty blocks after half a set"
quiet_window
assert_eq "$(st dirty_blocks)" $((SET / 2)) "half a set dirty after a quiet window (not crowded)"
assert_eq "$(st blocks_written_back)" 0 "blocks written back for half a set"

# --- A whole: crowded, written back in the window, kept clean ---------------------------
# In one write: written block by block, a host stall longer than evict_wait
# halfway would let cleaning take the first ones and leave the rest, not
# crowded, dirty.
head -c $((SET * BLK_BYTES)) </dev/zero | tr '\0' a |
	dd of="$dev" bs=$((SET * BLK_BYTES)) seek=$((a / SET)) count=1 iflag=fullblock oflag=direct status=none ||
	fail "write A"
log "A written: $(dmsetup status sp)"
wait_status sp blocks_written_back -ge "$SET" 120
wait_status sp writeback_sets -eq 0 60
assert_eq "$(st dirty_blocks)" $((SET / 2)) "dirty blocks after A's window (C's half set stays)"
assert_eq "$(st valid_blocks)" $((SET + SET / 2)) "A stays cached"
for i in 0 7 15; do
	assert_eq "$(blk_what "$hdd" $((a + i)))" a "A:$i on the origin after its writeback"
done

# B's blocks take A's clean frames: no write goes around the cache.
bypassed=$(st bypassed)
lockouts=$(st lockouts)
for i in $(seq 0 $((SET - 1))); do blk_put "$dev" $((b + i)) b || fail "write B:$i"; done
log "B written: $(dmsetup status sp)"
assert_eq "$(st bypassed)" "$bypassed" "writes of B that bypassed the cache"
assert_eq "$(st lockouts)" "$lockouts" "lock-outs of B"
assert_ge "$(st blocks_replaced)" 1 "A's clean blocks replaced by B's"
for i in 0 7 15; do
	assert_eq "$(blk_what "$dev" $((a + i)))" a "A:$i through the device"
	assert_eq "$(blk_what "$dev" $((b + i)))" b "B:$i through the device"
	assert_eq "$(blk_what "$dev" $((c + i % 8)))" h "C:$((i % 8)) through the device"
done
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
dm_remove sp
for i in 0 7 15; do
	assert_eq "$(blk_what "$hdd" $((b + i)))" b "B:$i on the origin alone"
	assert_eq "$(blk_what "$hdd" $((c + i % 8)))" h "C:$((i % 8)) on the origin alone"
done

# --- dirty_target 100: no cleaning, A stays dirty and refuses B ------------------------
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
# shellcheck disable=SC2086
dev=$(dm_create sp "0 $nh ssdprio $hdd $ssd $(($(wc -w <<<"$FEATS") + 3)) format $FEATS dirty_target 100")
for i in $(seq 0 $((SET - 1))); do blk_put "$dev" $((a + i)) A || fail "write A:$i"; done
quiet_window
assert_eq "$(st dirty_blocks)" "$SET" "A dirty after a quiet window at dirty_target 100"
assert_eq "$(st blocks_written_back)" 0 "blocks written back at dirty_target 100"
for i in 0 1 2 3; do blk_put "$dev" $((b + i)) B || fail "write B:$i"; done
log "B written at dirty_target 100: $(dmsetup status sp)"
assert_ge "$(st bypassed)" 1 "B's writes refused by A's dirty frames (the lock-outs crowded cleaning prevents)"
assert_eq "$(blk_what "$dev" $((b + 1)))" B "B:1 through the device"
assert_eq "$(blk_what "$hdd" $((b + 1)))" B "B:1 on the origin (it went around)"

# Back to 10%: A is crowded again and goes in the next window.
dmsetup message sp 0 dirty_target 10 || fail "dirty_target 10"
wait_status sp dirty_blocks -eq 0 120
for i in 0 7 15; do
	assert_eq "$(blk_what "$hdd" $((a + i)))" A "A:$i on the origin after dirty_target 10"
	assert_eq "$(blk_what "$dev" $((a + i)))" A "A:$i through the device"
done
dm_remove sp
log "ok"
