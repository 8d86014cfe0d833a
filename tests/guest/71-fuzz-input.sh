#!/bin/bash
# Hostile input against the live module: hundreds of random table lines
# (loaded as creates of an empty device and as reloads of a live caching
# device) and messages: random tokens, huge, negative and overflowing
# numbers (2^32, 2^64, ...), empty values, very many arguments, every key
# of engine/config.c with bad values, wrong counts, wrong devices.
# tests/guest/dmfuzz.py checks each case: a refusal leaves a kernel
# message naming its cause and changes nothing; an accepted line or message
# is valid and shows in `dmsetup table`. The live device holds stamped dirty
# data that verifies every 500 cases and at the end, then the origin alone
# after flush_dirty. Any splat fails the test (the runner, and dmfuzz at once).
#
# SSDP_FUZZ_N (default 600): tables and messages each;
# SSDP_FUZZ_SEED: repeat one run (the seed is printed).
# timeout: 1200
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

N=${SSDP_FUZZ_N:-600}
SEED=${SSDP_FUZZ_SEED:-$((($(date +%s) ^ $$) % 100000))}
log "seed $SEED (SSDP_FUZZ_SEED=$SEED repeats this run), $N tables and $N messages"
FIO=$REPO/tests/guest/faultio.py
STATE=/tmp/fuzz.model

load_module
hdd=$(make_hdd hdd 32 100000 4)
ssd=$(make_ssd ssd 16)
hdd2=$(make_hdd hdd2 16 0 16)
ssd2=$(make_ssd ssd2 16)
len=$(sectors "$hdd")
WS=$((24 * 2048))

# Stamped data: the origin first, then dirty overwrites kept in the cache.
python3 "$FIO" fill "$hdd" "$STATE" --sectors "$WS" >/dev/null || fail "fill failed"
dev=$(dm_create sp "0 $len ssdprio $hdd $ssd 5 format set_size 16 evict_wait 3600000")
python3 "$FIO" run "$dev" "$STATE" --ops 2000 --seed "$SEED" --partial 0.05 --read-frac 0 \
	--max-blocks 4 --hi-block $((8 * 256)) >/dev/null || fail "stamped writes failed"
log "before: $(dmsetup status sp)"
assert_ge "$(status_get sp dirty_blocks)" 1 "dirty data before the fuzz"
table0=$(dmsetup table sp)

rc=0
python3 "$REPO/tests/guest/dmfuzz.py" --live sp --origin "$hdd" --cache "$ssd" \
	--spare-origin "$hdd2" --spare-cache "$ssd2" --config "$REPO/engine/config.c" \
	--tables "$N" --messages "$N" --seed "$SEED" --live-set-size 16 \
	--check-cmd "python3 $FIO check $dev $STATE --strict-reads --label 'through ssdprio' >/dev/null" ||
	rc=$?
log "after: $(dmsetup table sp)"
log "after: $(dmsetup status sp)"
((rc == 0)) || fail "the fuzzer found problems (seed $SEED)"
[[ $(dmsetup info -c --noheadings -o name | grep -c '^fz') == 0 ]] || fail "the fuzzer left a device"

# The origin alone holds the same once the dirty data is written back
# (whatever knobs the fuzz left: write_policy, evict_wait...).
dmsetup message sp 0 flush_dirty || fail "flush_dirty rejected"
wait_status sp dirty_blocks == 0 600
dm_remove sp
python3 "$FIO" check "$hdd" "$STATE" --strict-reads --label "origin alone" >/dev/null ||
	fail "the origin does not hold the acknowledged data after flush_dirty"
log "first table: $table0"
log "ok"
