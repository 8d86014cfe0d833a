#!/bin/bash
# Work-conserving idle (idle_budget, default 10): with the interval, batch
# mode and the starvation bound all out of reach, an ionice -c3 reader
# beside a normal job with think time gets bios into the gaps the policy
# learnt at the default, nothing with idle_budget 0, and bios again once
# it is set back; beside a sparse job (a bio every 1.5 s: every gap a
# stop, nothing learnt for long) and when the normal job stops, the idle
# reader goes on without waiting for batch mode.  Only normal bios that
# met idle I/O are charged to the budget, and none once idle I/O is done.  The knob takes only 0 to 1000 and shows
# in the table when not the default.  Counters only, no timing bound.
# timeout: 400
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 256)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 10 cache off idle_dispatch_interval 3600000 batch_mode_delay 3600000 idle_max_wait 0 idle_grace 3600000")
st() { status_get sp "$1"; }
msg() { dmsetup message sp 0 "$@"; }

before=$(dmsetup table sp)
for bad in "idle_budget 1001" "idle_budget -1" "idle_budget x"; do
	# shellcheck disable=SC2086 # two words
	msg $bad 2>/dev/null && fail "message '$bad' was accepted"
done
assert_eq "$(dmsetup table sp)" "$before" "rejected messages changed the table"
st normal_met_idle >/dev/null

# Normal job: 4 KiB random reads at QD1 with 30 ms think time.
fio --name=normal --filename="$dm" --rw=randread --bs=4k --direct=1 \
	--ioengine=psync --thinktime=30000 --size=128M --offset=0 \
	--runtime=600 --time_based --output=/tmp/normal.out &
normal=$!
ionice -c3 fio --name=idle --filename="$dm" --rw=read --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=4 --offset=128M --size=64M \
	--runtime=600 --time_based --output=/tmp/idle.out &
idle=$!
trap 'kill $normal $idle 2>/dev/null; wait' EXIT
for _ in $(seq 150); do
	[[ $(st bios_normal) -ge 20 && $(st queued_idle) -ge 1 ]] && break
	sleep 0.2
done
assert_ge "$(st queued_idle)" 1 "idle bios queued"

# gaps_used MIN: wait until MIN more idle bios went into learnt gaps (the
# policy learns 8 gaps first).
gaps_used() {
	local i0 i
	i0=$(st idle_injected)
	for _ in $(seq 300); do
		(($(st idle_injected) >= i0 + $1)) && break
		sleep 0.2
	done
	i=$(st idle_injected)
	log "$2: idle_injected +$((i - i0)), normal_met_idle $(st normal_met_idle), normal bios $(st bios_normal)"
	assert_ge $((i - i0)) "$1" "$2: idle bios sent into the normal job's gaps"
	assert_eq "$(st sched_mode)" normal "$2: no batch mode while the normal job runs"
}

# The default: the gaps are learnt, then used.
[[ $(dmsetup table sp) == *idle_budget* ]] && fail "the default idle_budget printed in the table"
gaps_used 20 "default"

# Off: nothing lets an idle bio go while the normal job runs.
msg idle_budget 0 || fail "idle_budget 0 rejected"
[[ $(dmsetup table sp) == *"idle_budget 0"* ]] || fail "idle_budget 0 missing from the table"
sleep 1
a=$(st idle_dispatched)
sleep 3
b=$(st idle_dispatched)
log "idle_budget 0: idle +$((b - a)) in 3 s, queued_idle $(st queued_idle)"
assert_eq $((b - a)) 0 "idle bios sent with idle_budget 0 and every other rule out of reach"

# On again: learnt anew, then used.
msg idle_budget 50 || fail "idle_budget 50 rejected"
[[ $(dmsetup table sp) == *"idle_budget 50"* ]] || fail "idle_budget 50 missing from the table"
gaps_used 20 "idle_budget 50"

# A sparse job: each gap is a stop, so what was learnt is forgotten at
# each bio; past a second the rest of each gap still goes to idle bios.
kill "$normal"
wait "$normal" 2>/dev/null
grep -Eq 'err= *[1-9]' /tmp/normal.out && fail "normal fio error"
fio --name=sparse --filename="$dm" --rw=randread --bs=4k --direct=1 \
	--ioengine=psync --thinktime=1500000 --size=128M --offset=0 \
	--runtime=600 --time_based --output=/tmp/sparse.out &
normal=$!
sleep 1
i0=$(st idle_injected)
n0=$(st bios_normal)
sleep 6
i1=$(st idle_injected)
log "sparse job: idle_injected +$((i1 - i0)) in 6 s, normal bios +$(($(st bios_normal) - n0))"
assert_ge $(($(st bios_normal) - n0)) 2 "the sparse job ran"
assert_ge $((i1 - i0)) 10 "idle bios in the gaps of a sparse job"
assert_eq "$(st sched_mode)" normal "batch mode not needed beside a sparse job"

# The normal job stops: the gap outlasts every one learnt, idle goes on.
kill "$normal"
wait "$normal" 2>/dev/null
grep -Eq 'err= *[1-9]' /tmp/sparse.out && fail "sparse fio error"
sleep 1
i0=$(st idle_injected)
sleep 2
i1=$(st idle_injected)
log "normal stopped: idle_injected +$((i1 - i0)) in 2 s"
assert_ge $((i1 - i0)) 10 "idle bios go on when the normal job stops"
assert_eq "$(st sched_mode)" normal "batch mode not needed for it"

kill "$idle"
wait "$idle" 2>/dev/null
trap - EXIT
grep -Eq 'err= *[1-9]' /tmp/idle.out && fail "idle fio error"

# Charged meetings are meetings; with idle I/O done, none at all.
for _ in $(seq 50); do
	[[ $(st idle_inflight) == 0 && $(st queued_idle) == 0 ]] && break
	sleep 0.2
done
m=$(st normal_met_idle)
c=$(st normal_met_charged)
log "normal_met_idle $m, normal_met_charged $c"
assert_ge "$m" "$c" "charged normal bios that met no idle I/O"
assert_eq "$(st idle_inflight)" 0 "idle bios in flight after the idle job ended"
dd if="$dm" of=/dev/null bs=4k count=20 iflag=direct status=none || fail "read after the jobs"
assert_eq "$(st normal_met_idle)" "$m" "normal bios met idle I/O with none in flight"
assert_eq "$(st normal_met_charged)" "$c" "normal bios charged with no idle I/O in flight"
dm_remove sp
remove_nullb hdd
remove_nullb ssd
log "ok"
