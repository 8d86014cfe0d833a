# shellcheck shell=bash
# Scenario 1 (the deadline-with-low-priority paper, fig. 10/11): a normal direct-I/O job (seqread, seqwrite 128 KiB; randread,
# randwrite 4 KiB; psync, queue depth 1) alone, then with a concurrent
# `ionice -c3` 128 KiB sequential reader on another region of the disk.
#
# Configs (HDD = the hddsim model, 512 MiB: normal region = first 256 MiB,
# idle region = second 256 MiB):
#   hdd_deadline       bare HDD, mq-deadline (loop, queue depth 1, over hddsim)
#   hdd_bfq            bare HDD, bfq (same loop)
#   hdd_ssdprio_sched  ssdprio `cache off` (scheduler only) over the HDD
#   hdd_ssdprio        ssdprio in full (64 MiB SSD cache): the normal job works
#                      on a 32 MiB region written once before measuring, so all
#                      of it is valid (dirty) in the SSD cache; the idle reader's
#                      region is never cached (idle_alloc off)
#   hdd_ssdprio_sched_aa  (control, full runs only) as
#                      hdd_ssdprio_sched, but the second job does no I/O (fio's
#                      null engine, 10 ops/s): the normal job twice, A/A, for
#                      the spread of the measurement itself
#   hdd_ssdprio_cpuctrl  (control, full runs only) as hdd_ssdprio, but the
#                      second reader works on another HDD model outside ssdprio:
#                      the normal job's loss is then the emulator's CPU alone
#   hdd_iocost         bare HDD, cgroup v2 io.cost with io.weight 10000 : 1
#                      (normal : idle job's cgroup; bench/lib.sh, anchor_dev)
#   hdd_bfq_cgroup     bare HDD, bfq with io.bfq.weight 1000 : 1
#   hdd_iocost_aa, hdd_bfq_cgroup_aa  (controls, full runs only) the anchors'
#                      A/A: as hdd_ssdprio_sched_aa, the second job in the
#                      idle cgroup but doing no I/O
#   ssd_deadline       bare SSD (null_blk) with mq-deadline
#   ssd_ssdprio_sched  ssdprio `cache off` over the SSD as origin
# Each measurement is one fio run: the normal job alone, then the idle reader
# (job option prioclass=3, i.e. its process is `ionice -c3`) with the normal
# job starting about 1 s after it. In repetition 1 it goes on
# for batch_mode_delay + 3 s after the normal job ends (to show it resuming at
# full speed); otherwise for 1 s. Its throughput while the normal job runs is
# taken from its bandwidth log over the normal job's time window.
# title: Contention (deadline paper fig. 10/11): normal job alone vs with an `ionice -c3` sequential reader, medians
# order: 20
# status: ready
# minutes: 45
# mem_mb: 700

if ((Q)); then
	RUNTIME=2 SSD_RUNTIME=2 PATTERNS=${CONTENTION_PATTERNS:-seqread}
	CONFIGS=${CONTENTION_CONFIGS:-hdd_bfq hdd_ssdprio_sched hdd_ssdprio ssd_ssdprio_sched}
else
	RUNTIME=5 SSD_RUNTIME=3 PATTERNS=${CONTENTION_PATTERNS:-seqread seqwrite randread randwrite}
	CONFIGS=${CONTENTION_CONFIGS:-hdd_deadline hdd_bfq hdd_iocost hdd_iocost_aa hdd_bfq_cgroup hdd_bfq_cgroup_aa hdd_ssdprio_sched hdd_ssdprio_sched_aa hdd_ssdprio hdd_ssdprio_cpuctrl ssd_deadline ssd_ssdprio_sched}
fi
HDD_MB=512 # two 256 MiB regions: normal job in the first, idle reader in the second
REGION=256M
CACHE_MB=64
WARM_REGION=32M # hdd_ssdprio: the normal job's region, all in the cache
BMD_S=5         # ssdprio's default batch_mode_delay

setup() { # CONFIG: echoes the device
	local hdd ssd
	case $1 in
	hdd_deadline | hdd_bfq)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		sched_dev "$hdd" "$([[ $1 == hdd_bfq ]] && echo bfq || echo mq-deadline)" ;;
	hdd_iocost | hdd_bfq_cgroup | hdd_iocost_aa | hdd_bfq_cgroup_aa)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		anchor_dev "${1%_aa}" "$hdd" ;;
	hdd_ssdprio_sched | hdd_ssdprio_sched_aa)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		ssd=$(ssd_dev ssd "$CACHE_MB")
		ssdprio_dev ssdprio "$hdd" "$ssd" cache off $CONTENTION_SSDPRIO_ARGS ;;
	hdd_ssdprio | hdd_ssdprio_cpuctrl)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		ssd=$(ssd_dev ssd "$CACHE_MB")
		ssdprio_dev ssdprio "$hdd" "$ssd" $CONTENTION_SSDPRIO_ARGS ;;
	ssd_deadline)
		ssd=$(ssd_dev rawssd "$HDD_MB")
		echo mq-deadline >/sys/block/rawssd/queue/scheduler
		echo "$ssd" ;;
	ssd_ssdprio_sched)
		hdd=$(ssd_dev ssdorig "$HDD_MB")
		ssd=$(ssd_dev ssd 16)
		ssdprio_dev ssdprio "$hdd" "$ssd" cache off ;;
	*) return 1 ;;
	esac
}

pattern_args() {
	case $1 in
	seqread) echo "--rw=read --bs=128k" ;;
	seqwrite) echo "--rw=write --bs=128k" ;;
	randread) echo "--rw=randread --bs=4k --randrepeat=0 --randseed=$2" ;;
	randwrite) echo "--rw=randwrite --bs=4k --randrepeat=0 --randseed=$2" ;;
	esac
}

for config in $CONFIGS; do
	if ! dev=$(setup "$config") || [[ ! -b $dev ]]; then
		record_skip "$config" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
		teardown
		continue
	fi
	rt=$RUNTIME
	[[ $config == ssd_* ]] && rt=$SSD_RUNTIME
	nregion=$REGION
	cached='""'
	idle_dev=$dev
	idle_extra=()
	# A/A control: the second job exists but does no I/O.
	[[ $config == *_aa ]] && idle_extra=(--ioengine=null --rate_iops=10)
	if [[ $config == hdd_ssdprio_cpuctrl ]]; then
		# Control: the second reader works on another HDD model, outside
		# ssdprio: what the normal job loses then is the emulator's CPU.
		idle_dev=$(hddsim_dev hdd2 "$HDD_MB")
	fi
	if [[ $config == hdd_ssdprio* && $config != hdd_ssdprio_sched* ]]; then
		nregion=$WARM_REGION
		bfio /tmp/warm.json --filename="$dev" --direct=1 --ioengine=libaio --iodepth=4 \
			--rw=write --bs=1M --size="$nregion" --name=warm
		cached="\"normal region ($nregion) written once before measuring: all valid+dirty in the 64 MiB SSD cache; idle region uncached\""
		[[ $config == hdd_ssdprio_cpuctrl ]] &&
			cached="\"as hdd_ssdprio, but the second reader reads another HDD model outside ssdprio (control: the emulator's CPU contention alone)\""
	fi
	base=(--filename="$dev" --direct=1 --ioengine=psync --iodepth=1 --time_based
		--log_avg_msec=500 --log_unix_epoch=1)
	for rep in $(seq "$REPS"); do
		for p in $PATTERNS; do
			tail_s=1
			((rep == 1 && !Q)) && tail_s=$((BMD_S + 3))
			rm -f /tmp/ct_*.log
			# One fio run: the normal job alone; then (stonewall) the idle
			# reader (prioclass=3: its process is ionice -c3) and the same
			# normal job again, started rt + 2 s after fio's start
			# (startdelay counts from there), i.e. about 1 s after the idle
			# reader. Same clock for both logs, no fio start-up between.
			# shellcheck disable=SC2046
			bfio /tmp/ct.json "${base[@]}" \
				--name=alone --runtime="$rt" --offset=0 --size="$nregion" \
				$(pattern_args "$p" $((rep * 10))) $(anchor_args "$config" normal) \
				--name=idle --stonewall --prioclass=3 --filename="$idle_dev" --runtime=$((rt + 2 + tail_s)) \
				--offset="$REGION" --size="$REGION" --rw=read --bs=128k --write_bw_log=/tmp/ct_idle "${idle_extra[@]}" \
				$(anchor_args "$config" idle) \
				--name=normal --startdelay=$((rt + 2)) --runtime="$rt" --offset=0 --size="$nregion" \
				$(pattern_args "$p" $((rep * 10))) --write_bw_log=/tmp/ct_normal $(anchor_args "$config" normal)
			read -r rmb wmb _ _ _ < <(fio_sum /tmp/ct.json alone)
			alone=$(awk -v a="$rmb" -v b="$wmb" 'BEGIN { print a + b }')
			read -r rmb wmb _ _ _ < <(fio_sum /tmp/ct.json normal)
			with=$(awk -v a="$rmb" -v b="$wmb" 'BEGIN { print a + b }')
			read -r idle_total _ _ _ _ < <(fio_sum /tmp/ct.json idle)
			extra=()
			[[ $config == *ssdprio* ]] && extra+=(status="$(status_json ssdprio)")
			record "$config" "$p" "$rep" alone_mbps="$alone" with_mbps="$with" \
				idle_total_mbps="$idle_total" runtime_s="$rt" tail_s="$tail_s" \
				batch_mode_delay_s="$BMD_S" normal_region="\"$nregion\"" cached="$cached" \
				normal_series="$(bwlog_json /tmp/ct_normal_bw.3.log)" \
				idle_series="$(bwlog_json /tmp/ct_idle_bw.2.log)" "${extra[@]}"
			log "contention $config $p rep $rep: alone $alone MB/s, with idle $with MB/s (idle job overall $idle_total MB/s)"
		done
	done
	teardown
	anchor_teardown
done
