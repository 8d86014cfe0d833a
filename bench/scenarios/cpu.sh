# shellcheck shell=bash
# Scenario: CPU cost per I/O. Both legs are zero-latency memory null_blk
# (timer completion at 0 ns, queue depth 64): no device time anywhere, so IOPS
# and CPU time measure only what each I/O costs on its way through the stack.
# fio 4 KiB random I/O, libaio, queue depth 16, 1 and 2 jobs (each job on its
# own slice), on dm-linear over the SSD leg (the limit), ssdprio (defaults),
# dm-writecache, dm-cache (smq, writeback, 32 KiB blocks) and bcache
# (writeback), cache 4 GiB, origin 8x the cache, one fresh stack per
# repetition. Cases, in this order:
#   readhit, writehit  time-based runs over a 64 MiB working set written once
#                      before them (every I/O a hit)
#   readmiss, newwrite one pass over a region of its own that no one wrote
#                      or read (reads promote, as ssdprio does by default;
#                      writes allocate), capped in time before its end. The
#                      working set and the first run's new blocks stay under
#                      ssdprio's 10% dirty_target: no cleaning runs beside
#                      the second.
# CPU per I/O: the busy time of every guest CPU (/proc/stat: user, nice,
# system, irq, softirq, steal) over a window that starts WARM seconds after
# the device's first I/O completes and ends MEAS later, before the run does,
# divided by the I/Os the device completed in it (its own stat file); IOPS
# over the same window (a one-pass run whose region ran out inside it is not
# used). It counts the stack's workers, interrupts and
# fio alike; fio's own usr+sys per I/O is kept beside it. ssdprio's status
# before and after each run: its background work per I/O (meta_commits,
# promotions, blocks_written_back...) and, for the peers, their hit counters.
# CPU_CONFIGS, CPU_WORKLOADS, CPU_JOBS ("1 2 4 8"), CPU_SSDPRIO_ARGS,
# CPU_WS_MB, CPU_REGION_MB (new blocks and misses: the region one run may
# cover); CPU_SSD and CPU_ORIGIN (device paths instead of the null_blk legs:
# real drives on a scratch machine, docs/bench.md).
# title: CPU per I/O: 4 KiB random at queue depth 16 on zero-latency legs; IOPS and CPU time per I/O vs dm-linear
# order: 120
# status: ready
# minutes: 28
# mem_mb: 1400

# Runs: HIT_S (time-based) or at most NEW_S (one pass); the window from WARM
# seconds after the first completions, MEAS seconds long, ends before the run
# does (NEW_WARM, NEW_MEAS for the one-pass runs).
if ((Q)); then
	CACHE_MB=2048 WS_MB=16 REGION_MB=128
	HIT_S=4 WARM=1 MEAS=1.5 NEW_S=3.5 NEW_WARM=0.5 NEW_MEAS=1.5
else
	CACHE_MB=4096 WS_MB=64 REGION_MB=256
	HIT_S=6 WARM=1.5 MEAS=3 NEW_S=4.5 NEW_WARM=0.5 NEW_MEAS=2.5
fi
if [[ -n ${CPU_SSD:-} ]]; then
	CACHE_MB=$(($(blockdev --getsize64 "$CPU_SSD") >> 20))
fi
ORIGIN_MB=$((CACHE_MB * 8))
WS_MB=${CPU_WS_MB:-$WS_MB} REGION_MB=${CPU_REGION_MB:-$REGION_MB}
CONFIGS=${CPU_CONFIGS:-linear ssdprio writecache dmcache bcache}
WORKLOADS=${CPU_WORKLOADS:-readhit writehit newwrite readmiss}
JOBS=${CPU_JOBS:-1 2}
QD=16
HZ=$(getconf CLK_TCK)

# leg NAME SIZE_MB DEVICE: DEVICE, wiped at its start so that no earlier
# stack's superblock is taken up, or a zero-latency null_blk.
leg() {
	if [[ -n $3 ]]; then
		dd if=/dev/zero of="$3" bs=1M count=4 oflag=direct status=none || fail "wiping $3"
		echo "$3"
	else
		make_hdd "$1" "$2" 0 64
	fi
}

setup() { # CONFIG: echoes the device to measure
	local ssd origin meta b
	ssd=$(leg cpussd "$CACHE_MB" "${CPU_SSD:-}")
	if [[ $1 == linear ]]; then
		dm_try_create lin "0 $(sectors "$ssd") linear $ssd 0"
		return
	fi
	origin=$(leg cpuorig "$ORIGIN_MB" "${CPU_ORIGIN:-}")
	case $1 in
	# shellcheck disable=SC2086
	ssdprio) ssdprio_dev ssdprio "$origin" "$ssd" ${CPU_SSDPRIO_ARGS:-} ;;
	writecache) dm_try_create wcache "0 $(sectors "$origin") writecache s $origin $ssd 4096 0" ;;
	dmcache)
		meta=$(make_hdd cpumeta 8 0 64)
		dm_try_create dmcache "0 $(sectors "$origin") cache $meta $ssd $origin 64 1 writeback smq 0" ;;
	bcache)
		b=$(bcache_dev "$origin" "$ssd" "$CACHE_MB") || return 1
		# Random 4 KiB I/O is never sequential: its cut-off stays as it is.
		echo "$b" ;;
	*) return 1 ;;
	esac
}

why_not() { # CONFIG: why it cannot run in this guest, or nothing
	[[ $1 == bcache ]] || return 0
	if ! command -v make-bcache >/dev/null; then
		echo "bcache-tools (make-bcache) not installed"
	elif [[ ! -d /sys/fs/bcache ]]; then
		echo "no bcache module in this kernel"
	fi
}

# hits CONFIG: "[read_hits, read_misses, write_hits, write_misses]" by the
# peer's own counters (ssdprio's come from its whole status line).
hits() {
	case $1 in
	# 0 len cache mbs used/total cbs used/total read_hits read_misses write_hits write_misses ...
	dmcache) dmsetup status dmcache | awk '{ printf "[%s, %s, %s, %s]\n", $8, $9, $10, $11 }' ;;
	# 0 len writecache error blocks free writeback reads read_hits writes
	# write_hits_uncommitted write_hits_committed ...
	writecache) dmsetup status wcache |
		awk 'NF >= 12 { printf "[%s, %s, %s, %s]\n", $9, $8 - $9, $11 + $12, $10 - $11 - $12 }' ;;
	esac
}

# snap: S=(busy_jiffies all_jiffies device_ios usec) now. Builtins only: it
# runs inside the measured window, where every exec would be counted.
snap() {
	local _c u n s i w q sq st r a x
	read -r _c u n s i w q sq st x <"/proc/stat"
	read -r r x x x a x <"$IOSTAT"
	S=("$((u + n + s + q + sq + st))" "$((u + n + s + i + w + q + sq + st))" "$((r + a))" "${EPOCHREALTIME/./}")
}

# window PID BASE WARM MEAS: WIN="busy all ios usec device_ios_at_end"
# from WARM seconds after the device's count passed BASE (fio's first
# completions) until MEAS seconds later. A fixed window: a stack may stall its
# I/O for a moment (a metadata commit), which an end found by polling would
# take for the end of the run.
window() {
	local pid=$1 base=$2 i s0
	WIN=
	for ((i = 0; i < 1200; i++)); do
		snap
		((S[2] > base)) && break
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.05
	done
	sleep "$3"
	snap
	s0=("${S[@]}")
	sleep "$4"
	snap
	WIN="$((S[0] - s0[0])) $((S[1] - s0[1])) $((S[2] - s0[2])) $((S[3] - s0[3])) $((S[2] - base))"
}

# run CONFIG DEV WORKLOAD JOBS REP BASE_MB: one measured fio run, recorded;
# BASE_MB: where its region starts.
run() {
	local config=$1 dev=$2 w=$3 jobs=$4 rep=$5 base=$6 args slice warm meas seed st0= st1= h0= h1= pid
	local busy all ios us done_ios fio_iops fio_ios fio_cpu_s fio_s iops cpu_us util fio_cpu_us v ended=false
	case $w in
	readhit | writehit)
		slice=$((WS_MB / jobs)) warm=$WARM meas=$MEAS
		args=(--time_based --runtime="$HIT_S" --norandommap) ;;
	newwrite | readmiss)
		# The random map: every block of the slice at most once.
		slice=$((REGION_MB / jobs)) warm=$NEW_WARM meas=$NEW_MEAS
		args=(--runtime="$NEW_S") ;;
	esac
	case $w in
	readhit) seed=1 args+=(--rw=randread) ;;
	writehit) seed=2 args+=(--rw=randwrite) ;;
	newwrite) seed=3 args+=(--rw=randwrite) ;;
	readmiss) seed=4 args+=(--rw=randread) ;;
	esac
	[[ $config == ssdprio ]] && st0=$(status_json ssdprio)
	h0=$(hits "$config")
	snap
	bfio /tmp/cpu.json --filename="$dev" --direct=1 --ioengine=libaio --iodepth="$QD" --bs=4k \
		--numjobs="$jobs" --offset="${base}M" --size="${slice}M" --offset_increment="${slice}M" \
		--randrepeat=0 --randseed=$((1000 * rep + 10 * jobs + seed)) "${args[@]}" --name="$w" &
	pid=$!
	window "$pid" "${S[2]}" "$warm" "$meas"
	wait "$pid" || fail "fio $w ($config, $jobs jobs) failed"
	[[ -n $WIN ]] || fail "fio $w ($config, $jobs jobs): the device saw no I/O"
	[[ $config == ssdprio ]] && st1=$(status_json ssdprio)
	h1=$(hits "$config")
	read -r busy all ios us done_ios <<<"$WIN"
	read -r fio_iops fio_ios fio_cpu_s fio_s < <(jq -r '([.jobs[] | .read.iops + .write.iops] | add) as $iops |
		([.jobs[] | .read.total_ios + .write.total_ios] | add) as $n |
		([.jobs[] | (.usr_cpu + .sys_cpu) / 100 * .job_runtime / 1000] | add) as $c |
		"\($iops) \($n) \($c) \([.jobs[].job_runtime] | max / 1000)"' /tmp/cpu.json)
	read -r iops cpu_us util fio_cpu_us < <(awk -v b="$busy" -v a="$all" -v n="$ios" -v us="$us" -v hz="$HZ" \
		-v fc="$fio_cpu_s" -v fn="$fio_ios" 'BEGIN {
		printf "%s %s %s %s\n", (n > 0 ? n / (us / 1e6) : "-"), (n > 0 ? b * 1e6 / hz / n : "-"),
			(a > 0 ? b / a : "-"), (fn > 0 ? fc * 1e6 / fn : "-") }')
	for v in iops cpu_us util fio_cpu_us; do
		[[ ${!v} != - ]] || printf -v "$v" '%s' ''
	done
	# A one-pass run whose region ran out inside the window: its tail (jobs
	# ending apart, fio exiting) is in the figures; not used.
	if ((done_ios >= fio_ios)); then
		ended=true iops= cpu_us= util=
	fi
	record "$config" "$w" "$rep" jobs="$jobs" region_mb="$base" iops="$iops" cpu_us_per_io="$cpu_us" cpu_util="$util" \
		window_s="$(awk -v us="$us" 'BEGIN { print us / 1e6 }')" window_ios="$ios" busy_jiffies="$busy" \
		all_jiffies="$all" hz="$HZ" fio_iops="$fio_iops" fio_ios="$fio_ios" fio_s="$fio_s" \
		fio_cpu_us_per_io="$fio_cpu_us" ended_in_window="$ended" hits_before="$h0" hits_after="$h1" \
		status_before="$st0" status_after="$st1"
	log "cpu rep $rep $config $w ${jobs}j: $iops IOPS, ${cpu_us} us CPU per I/O (util $util)"
}

# prepare DEV REP: every block of the working set written once.
prepare() {
	bfio /tmp/cpu_prep.json --filename="$1" --direct=1 --ioengine=libaio --iodepth="$QD" --bs=4k \
		--size="${WS_MB}M" --randrepeat=0 --randseed=$((7 + $2)) --rw=randwrite --name=fill
}

# stack CONFIG: the device to measure in DEV and its stat file in IOSTAT,
# or CONFIG recorded as skipped.
stack() {
	local mm
	if ! DEV=$(setup "$1") || [[ ! -b $DEV ]]; then
		record_skip "$1" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
		teardown
		return 1
	fi
	mm=$(stat -L -c '%t %T' "$DEV")
	IOSTAT=/sys/dev/block/$((16#${mm% *})):$((16#${mm#* }))/stat
	[[ -r $IOSTAT ]] || fail "no stat file for $DEV ($IOSTAT)"
}

for w in $WORKLOADS; do
	[[ " readhit writehit newwrite readmiss " == *" $w "* ]] || fail "cpu: no workload '$w'"
done
skipped=" "
for rep in $(seq "$REPS"); do
	for config in $CONFIGS; do
		[[ $skipped == *" $config "* ]] && continue
		why=$(why_not "$config")
		if [[ -n $why ]]; then
			record_skip "$config" "$why"
			skipped+="$config "
			continue
		fi
		stack "$config" || { skipped+="$config "; continue; }
		prepare "$DEV" "$rep"
		# Misses before new blocks: promoted blocks are clean, and no
		# cleaning of the new blocks runs beside a later run.
		base=$WS_MB
		for w in readhit writehit readmiss newwrite; do
			[[ " $WORKLOADS " == *" $w "* ]] || continue
			for j in $JOBS; do
				case $w in
				*hit) run "$config" "$DEV" "$w" "$j" "$rep" 0 ;;
				*)
					run "$config" "$DEV" "$w" "$j" "$rep" "$base"
					base=$((base + REGION_MB)) ;;
				esac
			done
		done
		teardown
	done
done
