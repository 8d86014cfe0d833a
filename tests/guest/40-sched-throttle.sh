#!/bin/bash
# The strict throttle (idle_budget 0; 49-sched-gaps has the default),
# cache off, on an HDD-like null_blk: while a normal job runs, an ionice -c3 reader gets at most about one bio per
# idle_dispatch_interval; after the normal job stops, idle stays throttled
# for batch_mode_delay, then batch mode lets it run at the device's speed.
# Behaviour is checked through the status counters; bounds are generous.
# timeout: 400
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 256)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
# interval 200 ms (default), batch mode after 2 s of normal quiet; the
# strict throttle (idle_budget 0): no idle bio goes into learnt gaps.
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 6 cache off batch_mode_delay 2000 idle_budget 0")

st() { status_get sp "$1"; }
now() { date +%s.%N; }

for k in sched_mode queued_normal_reads queued_normal_writes queued_idle \
	idle_inflight normal_inflight idle_dispatched batch_entries idle_promoted; do
	st "$k" >/dev/null
done

# Normal job: direct 4 KiB random reads with 30 ms think time, so there are
# quiet gaps longer than idle_grace (10 ms) where idle may trickle.
fio --name=normal --filename="$dm" --rw=randread --bs=4k --direct=1 \
	--ioengine=psync --thinktime=30000 --size=128M --offset=0 \
	--runtime=600 --time_based --output=/tmp/normal.out &
normal=$!
# Idle reader: sequential direct reads, 4 in flight, in the second half.
ionice -c3 fio --name=idle --filename="$dm" --rw=read --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=4 --offset=128M --size=64M \
	--runtime=60 --time_based --output=/tmp/idle.out &
idle=$!
trap 'kill $normal $idle 2>/dev/null; wait' EXIT

# fio starts slowly under TCG: wait for both jobs' first bios.
for _ in $(seq 100); do
	[[ $(st bios_idle) -ge 1 && $(st bios_normal) -ge 10 ]] && break
	sleep 0.2
done
assert_ge "$(st bios_idle)" 1 "idle reader classified idle"
sleep 1
assert_eq "$(st sched_mode)" normal "mode while the normal job runs"
d0=$(st idle_dispatched)
e0=$(st batch_entries)
t0=$(now)
q=0
for _ in $(seq 8); do
	sleep 1
	v=$(st queued_idle)
	((v > q)) && q=$v
done
d1=$(st idle_dispatched)
t1=$(now)
n_idle=$((d1 - d0))
max=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print int((b - a) / 0.2) + 10 }')
log "normal running: $n_idle idle bios in $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s (bound $max), max queued_idle $q"
assert_le "$n_idle" "$max" "idle bios dispatched while normal runs (<= 1 per 200 ms)"
assert_ge "$n_idle" 1 "idle still trickles in the normal job's quiet gaps"
assert_ge "$q" 1 "idle bios wait in the queue"
# The normal job pauses 30 ms at most, far below batch_mode_delay (2 s); but
# a loaded TCG host can stall the guest for a while, so tolerate one entry.
e1=$(st batch_entries)
((e1 == e0)) || log "note: $((e1 - e0)) batch entries while the normal job ran (guest stall?)"
assert_le "$e1" $((e0 + 1)) "no batch mode while the normal job runs"

kill "$normal"
wait "$normal" 2>/dev/null
grep -Eq 'err= *[1-9]' /tmp/normal.out && fail "normal fio error"
# fio's exit can take a second under TCG, and batch_mode_delay counts from the
# last normal bio (arrival or completion), not from the kill: one normal read
# marks the moment. Its bio comes after t_dd, so batch mode cannot start before
# t_dd + 2 s; how long dd and the sampler take to run is the host's business.
t_dd=$(now)
dd if="$dm" of=/dev/null bs=4k count=1 iflag=direct status=none
# Normal stopped: sample idle_dispatched every 0.25 s for 5 s.
samples=()
for _ in $(seq 20); do
	v=$(st idle_dispatched)
	m=$(st sched_mode)
	samples+=("$(awk -v a="$t_dd" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'):$v:$m")
	sleep 0.25
done
log "after stop (t since dd:idle_dispatched:mode): ${samples[*]}"
# Each sample reads the counter before the mode, so a sample that says normal
# counted only bios dispatched in normal mode. Within the delay (t < 1.8 s,
# the rest is clock slack) the mode must still be normal; over the samples
# that say normal, idle gets about one bio per 200 ms, plus slack.
first=
first_t=
early=
early_t=
late=
for s in "${samples[@]}"; do
	t=${s%%:*}
	v=${s#*:}
	m=${v#*:}
	v=${v%%:*}
	late=$v
	if awk -v t="$t" 'BEGIN { exit !(t < 1.8) }'; then
		assert_eq "$m" normal "mode ${t} s after the last normal bio (batch_mode_delay 2 s)"
	fi
	[[ $m == normal ]] || continue
	[[ -n $first ]] || { first=$v; first_t=$t; }
	early=$v
	early_t=$t
done
if [[ -n $first ]]; then
	max=$(awk -v a="$first_t" -v b="$early_t" 'BEGIN { print int((b - a) / 0.2) + 4 }')
	assert_le $((early - first)) "$max" "idle throttled during batch_mode_delay (${first_t}..${early_t} s)"
else
	log "note: no sample inside batch_mode_delay (guest stalled for 2 s)"
	early=${samples[0]#*:}
	early=${early%%:*}
fi
assert_ge $((late - early)) 40 "batch mode: idle runs freely after the delay"
assert_eq "$(st sched_mode)" batch "mode after the delay"
assert_ge "$(st batch_entries)" $((e0 + 1)) "batch_entries"

# Per-second idle throughput in batch mode, for the log.
a=$(st idle_dispatched)
sleep 1
b=$(st idle_dispatched)
log "batch mode: $((b - a)) idle bios/s (HDD model: 5 ms per I/O, qd 1)"

# A normal bio ends batch mode at once.
dd if="$dm" of=/dev/null bs=4k count=1 iflag=direct status=none
assert_eq "$(st sched_mode)" normal "the first normal bio ends batch mode"

kill "$idle" 2>/dev/null
wait "$idle" 2>/dev/null
trap - EXIT
assert_eq "$(st queued_idle)" 0 "nothing left queued"
dm_remove sp
log "ok"
