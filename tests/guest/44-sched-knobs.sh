#!/bin/bash
# Scheduler knobs at run time: messages take effect at once (throttle off
# lets held idle bios through under normal load, throttle on holds them
# again), bad values are rejected and change nothing, the table shows the
# current settings, the starvation bound (idle_max_wait) promotes aged
# idle bios.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 128)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 4 cache off normal_depth 8")
st() { status_get sp "$1"; }
msg() { dmsetup message sp 0 "$@"; }

# Bad values: rejected, table unchanged.
before=$(dmsetup table sp)
for bad in "throttle maybe" "idle_dispatch_interval abc" "normal_depth 0" \
	"idle_grace -1" "batch_mode_delay 99999999999" "fifo_batch 0" \
	"no_such_knob 1"; do
	# shellcheck disable=SC2086 # two words
	msg $bad 2>/dev/null && fail "message '$bad' was accepted"
done
assert_eq "$(dmsetup table sp)" "$before" "rejected messages changed the table"

# Good values show in the table.
msg idle_dispatch_interval 100 || fail "idle_dispatch_interval 100 rejected"
msg idle_grace 5 || fail "idle_grace 5 rejected"
msg read_expire 250 || fail "read_expire 250 rejected"
table=$(dmsetup table sp)
for kv in "idle_dispatch_interval 100" "idle_grace 5" "read_expire 250" "normal_depth 8"; do
	[[ $table == *"$kv"* ]] || fail "'$kv' missing from the table: $table"
done

# Continuous normal load: idle is held.
fio --name=normal --filename="$dm" --rw=randread --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=4 --size=64M --runtime=120 --time_based \
	--output=/tmp/normal.out &
normal=$!
ionice -c3 fio --name=idle --filename="$dm" --rw=read --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=4 --offset=64M --size=32M --runtime=120 \
	--time_based --output=/tmp/idle.out &
idle=$!
trap 'kill $normal $idle 2>/dev/null; wait' EXIT
# fio starts slowly under TCG: wait until both jobs are running.
for _ in $(seq 150); do
	[[ $(st bios_normal) -ge 50 && $(st queued_idle) -ge 1 ]] && break
	sleep 0.2
done
sleep 1
a=$(st idle_dispatched)
sleep 2
b=$(st idle_dispatched)
log "throttled, continuous normal load: idle +$((b - a)) in 2 s, queued_idle $(st queued_idle)"
assert_le $((b - a)) 25 "idle held under continuous normal load"
assert_ge "$(st queued_idle)" 1 "idle bios queued"

# throttle off: idle flows at once, even under normal load.
msg throttle off || fail "throttle off rejected"
sleep 0.5
a=$(st idle_dispatched)
sleep 2
b=$(st idle_dispatched)
log "throttle off: idle +$((b - a)) in 2 s"
assert_ge $((b - a)) 40 "throttle off lets idle through"
[[ $(dmsetup table sp) == *"throttle off"* ]] || fail "throttle off not in the table"

# throttle on again: held again.
msg throttle on || fail "throttle on rejected"
sleep 1
a=$(st idle_dispatched)
sleep 2
b=$(st idle_dispatched)
log "throttle on again: idle +$((b - a)) in 2 s"
assert_le $((b - a)) 25 "throttle on holds idle again"

# Starvation bound: idle_max_wait 300 ms promotes aged idle bios.
p0=$(st idle_promoted)
msg idle_max_wait 300 || fail "idle_max_wait rejected"
sleep 3
p1=$(st idle_promoted)
log "idle_max_wait 300: idle_promoted +$((p1 - p0)) in 3 s"
assert_ge $((p1 - p0)) 3 "aged idle bios are promoted"
msg idle_max_wait 0 || fail "idle_max_wait 0 rejected"

kill "$normal" "$idle" 2>/dev/null
wait
trap - EXIT
assert_eq "$(st queued_idle)" 0 "nothing left queued"
assert_eq "$(st normal_inflight)" 0 "nothing normal in flight"
dm_remove sp
log "ok"
