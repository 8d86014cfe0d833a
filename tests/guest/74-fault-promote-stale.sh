#!/bin/bash
# A promotion never brings back data older than a write that was written
# back and then dropped.
#
# A read miss of block b queues a copy of the origin's data (old) for the
# cache, behind other copies (their SSD writes held by dm-delay).  Meanwhile
# b is written (new, dirty on the SSD), written back (clean: the origin has
# new, and no user write reached the origin) and dropped when a read of it
# fails on the SSD (the read is served from the origin).  b is a miss again,
# as when the copy was made: the copy must still not go in, or b reads as
# old from then on.
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
modprobe dm-delay || fail "modprobe dm-delay"
SET=16
HOLD_MS=300                # each queued copy's SSD write
NQ=60                      # copies queued before b's: NQ * HOLD_MS of backlog
FEATS="set_size $SET evict_wait 3600000 dirty_max_age 0 seq_cutoff 0 lockout_clean off"
NF=$(wc -w <<<"$FEATS")

hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 32)
nh=$(sectors "$hdd")
ns=$(sectors "$ssd")
leg_load ssdleg "0 $ns linear $ssd 0"
dev=$(dm_create sp "0 $nh ssdprio $hdd /dev/mapper/ssdleg $((NF + 1)) format $FEATS")
ds=$(cache_data_start "$ssd")
SB=10                      # b: block 0 of origin set SB
b=$((SB * SET))
place() { "$REPO/build/ssdprio-tool" debug-placement "$ssd" "$@" | cut -d' ' -f2; }
cb=$(place $SB)
# The queued copies: block 0 of origin sets in cache sets other than b's.
# shellcheck disable=SC2046 # a list of origin sets
mapfile -t others < <("$REPO/build/ssdprio-tool" debug-placement "$ssd" $(seq 100 400) |
	awk -v cb="$cb" '$2 != cb { print $1 }' | head -n $NQ)
((${#others[@]} == NQ)) || fail "only ${#others[@]} origin sets outside cache set $cb"
blk_put "$hdd" $b o || fail "b's old data on the origin"

# data_leg ERROR: the SSD leg, data writes held HOLD_MS; with ERROR=1, b's
# cache set (its 16 frames) fails every I/O.
bad=$((ds + cb * SET * 8))
data_leg() {
	local t
	t="0 $ds linear $ssd 0"
	if (($1)); then
		t+=$'\n'"$ds $((bad - ds)) delay $ssd $ds 0 $ssd $ds $HOLD_MS"
		t+=$'\n'"$bad $((SET * 8)) error"
		t+=$'\n'"$((bad + SET * 8)) $((ns - bad - SET * 8)) delay $ssd $((bad + SET * 8)) 0 $ssd $((bad + SET * 8)) $HOLD_MS"
	else
		t+=$'\n'"$ds $((ns - ds)) delay $ssd $ds 0 $ssd $ds $HOLD_MS"
	fi
	leg_load ssdleg "$t"
}
data_leg 0

p0=$(($(status_get sp promotions) + $(status_get sp promotions_skipped)))
# One process, so that the copies queue up faster than they drain.
python3 - "$dev" $BLK_BYTES $SET "${others[@]}" <<'PY' || fail "reads of the other origin sets"
import mmap, os, sys
dev, blk, setb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, blk)
for o in sys.argv[4:]:
    if os.preadv(fd, [buf], int(o) * setb * blk) != blk:
        sys.exit("short read of origin set " + o)
PY
assert_eq "$(blk_what "$dev" $b)" o "b read (a miss: its copy queued last)"
log "$((NQ + 1)) copies queued, $(($(status_get sp promotions) + $(status_get sp promotions_skipped) - p0)) done"

blk_put "$dev" $b n || fail "write of b"
assert_eq "$(status_get sp dirty_blocks)" 1 "b dirty"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp dirty_blocks -eq 0 120
assert_eq "$(blk_what "$hdd" $b)" n "b written back to the origin"
done_now=$(($(status_get sp promotions) + $(status_get sp promotions_skipped) - p0))
log "before the drop: $done_now of $((NQ + 1)) copies done ($(status_get sp promotions) promoted, $(status_get sp promotions_skipped) skipped)"
((done_now <= NQ)) ||
	fail "b's copy was no longer queued when b was dropped: the test proves nothing"
data_leg 1
f0=$(status_get sp read_fallbacks)
assert_eq "$(blk_what "$dev" $b)" n "b read while its frame fails (from the origin)"
assert_ge "$(status_get sp read_fallbacks)" $((f0 + 1)) "b's failed SSD read served from the origin"
data_leg 0
for _ in $(seq 120); do
	(($(status_get sp promotions) + $(status_get sp promotions_skipped) - p0 >= NQ + 1)) && break
	sleep 1
done
log "copies: $(status_get sp promotions) promoted, $(status_get sp promotions_skipped) skipped"
assert_eq "$(blk_what "$dev" $b)" n "b after the queued copy of its old data ran (old: the copy went in)"
assert_eq "$(blk_what "$dev" $b)" n "b read again"
dm_remove sp
dm_remove ssdleg
remove_nullb hdd
remove_nullb ssd
log "ok"
