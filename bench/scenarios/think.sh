# shellcheck shell=bash
# Think-time frontier: what an `ionice -c3` reader gets beside an interactive
# normal job, and what the normal job keeps, by think time and scheduler.
#
# Normal job: 4 KiB random reads, psync, queue depth 1, in the first 256 MiB
# of the HDD model (512 MiB), with a fixed think time after each read of 0,
# 5, 20 or 50 ms (fio --thinktime), or memoryless arrivals ("exp20": fio
# --rate_iops with --rate_process=poisson at the IOPS the 20 ms job reached
# alone in the same configuration and repetition; "expN" likewise for N).
# Idle job: an `ionice -c3` (prioclass=3) 128 KiB sequential reader, libaio,
# queue depth 4, in the second 256 MiB; under the cgroup configs it runs in a
# cgroup of its own (bench/lib.sh, anchor_dev), the normal job in another.
#
# Configs (all in one boot):
#   hdd_ssdprio_b0     ssdprio `cache off`, idle_budget 0 (the strict
#                      throttle: one idle bio per idle_dispatch_interval
#                      after idle_grace)
#   hdd_ssdprio_b10    the same with idle_budget 10 (per mille, the default)
#   hdd_ssdprio_b50    the same with idle_budget 50
#   hdd_deadline       bare HDD, mq-deadline (loop, queue depth 1) + ionice
#   hdd_bfq            bare HDD, bfq (same loop) + ionice
#   hdd_iocost         bare HDD, io.cost with io.weight 10000 : 1 over
#                      mq-deadline (+ ionice, as in contention)
# and, by THINK_CONFIGS only, the SSD model (a null_blk of HDD_MB):
#   ssd_ssdprio_bN     ssdprio `cache off` over it, idle_budget N
#   ssd_deadline       bare SSD, mq-deadline + ionice
#   ssd_bfq            bare SSD, bfq + ionice
# (no io.cost: its model here is the HDD's; an SSD's would need its own
# QoS and cost parameters)
#
# Per configuration and repetition, one fio run of stonewalled groups: the
# idle reader alone (its full rate), then per fixed think time the normal
# job alone and then the normal job and the idle reader together (same
# start, same runtime); a second fio run does the same for the exp variants
# (their rates come from the first). One fio run per think time costs ~40 s
# of start-up and tool execs under TCG on a loaded host. The reader's
# throughput while the normal job runs comes from its bandwidth log over the
# normal job's window (bench/report.py). ssdprio's status counters are taken
# by the normal job's exec_prerun/exec_postrun (the normal job's span).
# The normal job's mean service time is its mean completion latency alone
# at think 0 (same configuration and repetition): device time the normal job
# uses = its IOPS beside the reader x that service time.
# title: Think-time frontier: normal job kept vs idle share, by think time and scheduler
# order: 45
# status: ready
# minutes: 60
# mem_mb: 600

if ((Q)); then
	RUNTIME=2 THINKS=${THINK_PATTERNS:-0 20 exp20}
	CONFIGS=${THINK_CONFIGS:-hdd_ssdprio_b0 hdd_ssdprio_b10 hdd_iocost}
else
	RUNTIME=20 THINKS=${THINK_PATTERNS:-0 5 20 50 exp20}
	CONFIGS=${THINK_CONFIGS:-hdd_ssdprio_b0 hdd_ssdprio_b10 hdd_ssdprio_b50 hdd_deadline hdd_bfq hdd_iocost}
fi
# Seconds per run; an adaptive policy learns in its first seconds (at 50
# ms think, 8 gaps are 0.5 s, and a meeting's debt 100 arrivals, 5 s): 20 s
# runs show its steady state, 5 s ones mostly the learning.
RUNTIME=${THINK_RUNTIME:-$RUNTIME}
HDD_MB=512
REGION=256M

setup() { # CONFIG: echoes the device
	local hdd ssd
	case $1 in
	hdd_ssdprio_b* | ssd_ssdprio_b*)
		if [[ $1 == hdd_* ]]; then
			hdd=$(hddsim_dev hdd "$HDD_MB")
		else
			hdd=$(ssd_dev ssdorig "$HDD_MB")
		fi
		ssd=$(ssd_dev ssd 16)
		ssdprio_dev ssdprio "$hdd" "$ssd" cache off idle_budget "${1##*_b}" ;;
	hdd_deadline | hdd_bfq)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		sched_dev "$hdd" "$([[ $1 == hdd_bfq ]] && echo bfq || echo mq-deadline)" ;;
	hdd_iocost)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		anchor_dev "$1" "$hdd" ;;
	ssd_deadline | ssd_bfq)
		ssd=$(ssd_dev rawssd "$HDD_MB")
		echo "$([[ $1 == ssd_bfq ]] && echo bfq || echo mq-deadline)" \
			>/sys/block/rawssd/queue/scheduler || fail "scheduler on rawssd"
		echo "$ssd" ;;
	*) return 1 ;;
	esac
}

# fio_jobs FILE: per job "name read_MBps read_iops mean_ms p99_ms reads"
fio_jobs() {
	jq -r '.jobs[] | "\(.jobname) \(.read.bw_bytes / 1e6) \(.read.iops) \(.read.clat_ns.mean / 1e6) \((.read.clat_ns.percentile["99.000000"] // 0) / 1e6) \(.read.total_ios)"' "$1"
}
# counters FILE: "idle_dispatched idle_injected normal_met_idle" of a
# `dmsetup status` line (bash only: every exec costs under TCG)
counters() {
	local -a w
	local i d=0 j=0 m=0
	read -ra w <"$1" || true
	for ((i = 0; i < ${#w[@]} - 1; i++)); do
		case ${w[i]} in
		idle_dispatched) d=${w[i + 1]} ;;
		idle_injected) j=${w[i + 1]} ;;
		normal_met_idle) m=${w[i + 1]} ;;
		esac
	done
	echo "$d $j $m"
}

# run_groups JSON THINKS...: one fio run: the groups in the array pre, then
# for each think T (a fixed think in ms, or expN with its rate "expN:IOPS")
# the normal job alone, then the normal job and the idle reader.
run_groups() {
	local out=$1 t ms seed load args=("${pre[@]}")
	shift
	for t in "$@"; do
		case $t in
		exp*)
			ms=${t%%:*} ms=${ms#exp}
			load=(--rate_iops="${t#*:}" --rate_process=poisson)
			seed=$((rep * 1000 + ms + 500)) t=${t%%:*} ;;
		*)
			load=() seed=$((rep * 1000 + t))
			((t)) && load=(--thinktime=$((t * 1000))) ;;
		esac
		normal=(--filename="$dev" --direct=1 --ioengine=psync --iodepth=1 --time_based
			--runtime="$RUNTIME" --offset=0 --size="$REGION" --rw=randread --bs=4k
			--randrepeat=0 --randseed="$seed" "${load[@]}" "${nargs[@]}")
		args+=(--name="alone_$t" --stonewall "${normal[@]}"
			--name="idle_$t" --stonewall "${idle[@]}" --runtime="$RUNTIME"
			--log_avg_msec=500 --log_unix_epoch=1 --write_bw_log="/tmp/tk_idle_$t"
			--name="normal_$t" "${normal[@]}" "${status_cmd[@]}"
			--log_avg_msec=500 --log_unix_epoch=1 --write_bw_log="/tmp/tk_normal_$t")
	done
	rm -f /tmp/tk_*.log /tmp/normal_*.prerun.txt /tmp/normal_*.postrun.txt
	bfio "$out" "${args[@]}"
}

# record_groups JSON THINKS...: one record per think from run_groups' output
record_groups() {
	local t ms process rate name mb iops mean p99 ios c0 c1 d0 j0 m0 d1 j1 m1
	local -A a_iops a_mean a_p99 a_ios i_mb
	while read -r name mb iops mean p99 ios; do
		a_iops[$name]=$iops a_mean[$name]=$mean a_p99[$name]=$p99 a_ios[$name]=$ios i_mb[$name]=$mb
	done < <(fio_jobs "$1")
	shift
	for t in "$@"; do
		rate=null process=fixed ms=$t
		if [[ $t == exp* ]]; then
			rate=${t#*:} t=${t%%:*} ms=${t#exp} process=poisson
		fi
		c0=$(counters "/tmp/normal_$t.prerun.txt")
		c1=$(counters "/tmp/normal_$t.postrun.txt")
		read -r d0 j0 m0 <<<"$c0"
		read -r d1 j1 m1 <<<"$c1"
		[[ $process == fixed ]] && fixed_iops[$ms]=${a_iops[alone_$t]}
		record "$config" "$t" "$rep" think_ms="$ms" process="\"$process\"" rate_iops="$rate" \
			runtime_s="$RUNTIME" alone_iops="${a_iops[alone_$t]}" alone_mean_ms="${a_mean[alone_$t]}" \
			alone_p99_ms="${a_p99[alone_$t]}" alone_ios="${a_ios[alone_$t]}" \
			with_iops="${a_iops[normal_$t]}" with_mean_ms="${a_mean[normal_$t]}" \
			with_p99_ms="${a_p99[normal_$t]}" with_ios="${a_ios[normal_$t]}" \
			idle_total_mbps="${i_mb[idle_$t]}" idle_dispatched=$((d1 - d0)) \
			idle_injected=$((j1 - j0)) normal_met_idle=$((m1 - m0)) \
			normal_series="$(bwlog_json /tmp/tk_normal_"${t}"_bw.*.log)" \
			idle_series="$(bwlog_json /tmp/tk_idle_"${t}"_bw.*.log)"
		log "think $config $t rep $rep: normal ${a_iops[alone_$t]} -> ${a_iops[normal_$t]} IOPS," \
			"p99 ${a_p99[alone_$t]} -> ${a_p99[normal_$t]} ms; idle ${i_mb[idle_$t]} MB/s;" \
			"dispatched $((d1 - d0)), injected $((j1 - j0)), met $((m1 - m0)) of ${a_ios[normal_$t]}"
	done
}

for config in $CONFIGS; do
	if ! dev=$(setup "$config") || [[ ! -b $dev ]]; then
		record_skip "$config" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
		teardown
		anchor_teardown
		continue
	fi
	# shellcheck disable=SC2207
	nargs=($(anchor_args "$config" normal))
	# shellcheck disable=SC2207
	iargs=($(anchor_args "$config" idle))
	# The exec delays the normal job's start in its group (the reader runs
	# alone meanwhile): the same exec for the peers, to start alike.
	st=$([[ $config == *_ssdprio_* ]] && echo "dmsetup status ssdprio" || echo "cat /proc/loadavg")
	status_cmd=(--exec_prerun="$st" --exec_postrun="$st")
	idle=(--prioclass=3 --filename="$dev" --direct=1 --ioengine=libaio --iodepth=4
		--time_based --offset="$REGION" --size="$REGION" --rw=read --bs=128k "${iargs[@]}")
	fixed=() exps=()
	for t in $THINKS; do
		if [[ $t == exp* ]]; then exps+=("$t"); else fixed+=("$t"); fi
	done
	for rep in $(seq "$REPS"); do
		declare -A fixed_iops=()
		# The idle reader alone first, in the same fio run.
		pre=(--name=ialone "${idle[@]}" --runtime="$RUNTIME")
		run_groups /tmp/tk.json "${fixed[@]}"
		record_groups /tmp/tk.json "${fixed[@]}"
		read -r _ imb _ _ _ _ < <(fio_jobs /tmp/tk.json | grep '^ialone ')
		record "$config" idle_alone "$rep" idle_alone_mbps="$imb" runtime_s="$RUNTIME"
		log "think $config rep $rep: idle reader alone $imb MB/s"
		if ((${#exps[@]})); then
			rates=()
			for t in "${exps[@]}"; do
				ms=${t#exp}
				[[ -n ${fixed_iops[$ms]:-} ]] || fail "think: $t needs think $ms in THINK_PATTERNS"
				rates+=("$t:$(awk -v x="${fixed_iops[$ms]}" 'BEGIN { r = int(x + 0.5); print r < 1 ? 1 : r }')")
			done
			pre=()
			run_groups /tmp/tk.json "${rates[@]}"
			record_groups /tmp/tk.json "${rates[@]}"
		fi
		unset fixed_iops
	done
	teardown
	anchor_teardown
done
