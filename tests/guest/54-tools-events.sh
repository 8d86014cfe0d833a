#!/bin/bash
# Device-mapper events: the end of a flush_dirty wakes `ssdprio-tool wait`
# (the next event, and --until clean) without polling; an SSD that starts
# failing writes degrades the cache and wakes `dmsetup wait` at once, the
# event number risen; --timeout on a condition not reached exits 4, a
# missing device 1; a device removed under a waiter ends the wait (no hang).
# `status --watch` of one device prints a new round at the event, not only
# after its interval.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

TOOL=$REPO/build/ssdprio-tool
[[ -x $TOOL ]] || skip "$TOOL is missing: build it on the host first ('make tools'; make check does)"

load_module
modprobe dm-flakey

BLK=4096
# put DEV BLOCKNR CHAR: a direct write of one block of CHAR; dd's status.
put() {
	set -o pipefail
	head -c "$BLK" </dev/zero | tr '\0' "$3" |
		dd of="$1" bs="$BLK" seek="$2" count=1 oflag=direct conv=notrunc status=none 2>/dev/null
}
events() { dmsetup info -c --noheadings -o events "$1" | tr -d ' '; }
# reap PID WHAT: PID's exit status, in $rc, once it ended; fails the test if
# it still runs after 60 s (a wait no event ended).  Not in a $(...): a
# subshell cannot wait for its parent's child, and gets no status for one
# that ends after the subshell began.
reap() {
	rc=0
	if ! wait_exit "$1" 60; then
		kill "$1" 2>/dev/null
		fail "$2: still waiting 60 s on: $(dmsetup status sp)"
	fi
	wait "$1" || rc=$?
}

hdd=$(make_hdd hdd 64 0 32)
ssd=$(make_ssd ssd 32)
len=$(sectors "$hdd")
leg ssdleg "$ssd" linear
# Nothing cleans or evicts on its own: only the flush empties the cache.
dev=$(dm_create sp "0 $len ssdprio $hdd /dev/mapper/ssdleg 9 format evict_wait 600000 seq_cutoff 0 dirty_target 100 dirty_max_age 0")

# --- the end of a flush_dirty ------------------------------------------------------
for b in 1 2 3 4; do put "$dev" $b A || fail "write $b"; done
assert_eq "$(status_get sp dirty_blocks)" 4 "4 blocks dirty"
e0=$(events sp)
"$TOOL" wait sp >/tmp/next.out 2>&1 &
next=$!
"$TOOL" wait --until clean --timeout 120 sp >/tmp/clean.out 2>&1 &
clean=$!
sleep 1
kill -0 $next 2>/dev/null || fail "wait returned with no event: $(cat /tmp/next.out)"
kill -0 $clean 2>/dev/null || fail "wait --until clean returned with 4 blocks dirty: $(cat /tmp/clean.out)"
dmsetup message sp 0 flush_dirty
reap $next "wait (next event) after flush_dirty"
assert_eq "$rc" 0 "wait for the next event: $(cat /tmp/next.out)"
reap $clean "wait --until clean after flush_dirty"
assert_eq "$rc" 0 "wait --until clean: $(cat /tmp/clean.out)"
grep -q "clean:.*dirty_blocks 0" /tmp/clean.out || fail "wait --until clean said: $(cat /tmp/clean.out)"
assert_eq "$(status_get sp dirty_blocks)" 0 "dirty_blocks after the flush"
assert_ge "$(events sp)" $((e0 + 1)) "event number after the flush"
log "flush_dirty: $(cat /tmp/next.out); $(cat /tmp/clean.out)"

# --- what is not reached, what does not exist ----------------------------------------
rc=0
"$TOOL" wait --until degraded --timeout 1 sp >/tmp/to.out 2>&1 || rc=$?
assert_eq "$rc" 4 "--timeout 1 on a healthy cache's degraded: $(cat /tmp/to.out)"
rc=0
"$TOOL" wait --until clean nosuchdev >/tmp/nodev.out 2>&1 || rc=$?
assert_eq "$rc" 1 "a missing device: $(cat /tmp/nodev.out)"
rc=0
"$TOOL" wait --until dirty sp >/dev/null 2>&1 || rc=$?
assert_eq "$rc" 1 "--until with an unknown word"
# Reached already: no wait.
rc=0
"$TOOL" wait --until flushed --timeout 30 sp >/dev/null 2>&1 || rc=$?
assert_eq "$rc" 0 "--until flushed with no flush running"

# --- the SSD fails a write: degraded ---------------------------------------------------
# rounds FILE: the rounds `status --watch` printed to FILE so far.
rounds() {
	local line k=0
	while IFS= read -r line; do [[ $line == "ssdprio status at"* ]] && k=$((k + 1)); done <"$1"
	echo $k
}
e1=$(events sp)
dmsetup wait sp "$e1" &
dw=$!
"$TOOL" wait --until degraded sp >/tmp/deg.out 2>&1 &
deg=$!
# An hour's interval: only the event can end its first round.
"$TOOL" status --watch 3600 sp >/tmp/watch.out 2>&1 &
watch=$!
sleep 1
for ((i = 0; i < 120; i++)); do
	(($(rounds /tmp/watch.out) >= 1)) && break
	sleep 0.5
done
kill -0 $dw 2>/dev/null || fail "dmsetup wait returned with no event"
assert_eq "$(rounds /tmp/watch.out)" 1 "status --watch rounds before the event: $(cat /tmp/watch.out)"
grep -q "and at a state change" /tmp/watch.out || fail "status --watch of one device does not wait on its events: $(cat /tmp/watch.out)"
leg ssdleg "$ssd" writes
put "$dev" 9 B || true	# a new block: the SSD write fails
reap $dw "dmsetup wait $e1 after an SSD write error"
assert_eq "$rc" 0 "dmsetup wait"
reap $deg "wait --until degraded after an SSD write error"
assert_eq "$rc" 0 "wait --until degraded: $(cat /tmp/deg.out)"
assert_eq "$(status_get sp cache_mode)" degraded "cache_mode"
assert_ge "$(events sp)" $((e1 + 1)) "event number after degrading"
log "degraded: $(cat /tmp/deg.out)"
for ((i = 0; i < 120; i++)); do
	(($(rounds /tmp/watch.out) >= 2)) && break
	sleep 0.5
done
kill $watch 2>/dev/null
wait $watch || true
assert_ge "$(rounds /tmp/watch.out)" 2 "status --watch 3600: a new round at the event: $(cat /tmp/watch.out)"
sed -n '/^ssdprio status at/h; /^ssdprio status at/!H; ${x;p}' /tmp/watch.out | grep -q degraded ||
	fail "status --watch: the round after the event does not say degraded: $(cat /tmp/watch.out)"

# --- removed under a waiter ------------------------------------------------------------
leg ssdleg "$ssd" linear
"$TOOL" wait --until failed sp >/tmp/rm.out 2>&1 &
w=$!
sleep 1
kill -0 $w 2>/dev/null || fail "wait --until failed returned: $(cat /tmp/rm.out)"
dm_remove sp
reap $w "wait --until failed on a removed device"
assert_eq "$rc" 1 "wait on a device removed meanwhile: $(cat /tmp/rm.out)"
dm_remove ssdleg
log "ok"
