# shellcheck shell=bash
# Scenario 1 (the deadline-with-low-priority paper, fig. 10/11): a normal
# direct-I/O job (seqread, seqwrite, randread, randwrite) alone, then with a
# concurrent `ionice -c3` sequential reader on another region of the disk.
# Configs: bare HDD with mq-deadline and with bfq (loop, queue depth 1, over
# the HDD model), ssdprio scheduler-only (cache off) and full over the HDD
# model, and the same on the SSD (null_blk with mq-deadline; ssdprio whose
# origin is an SSD).
# status: ready
# minutes: 20
# mem_mb: 700

if ((Q)); then
	RUNTIME=3 SSD_RUNTIME=3 PATTERNS="seqread randwrite"
	CONFIGS=${CONTENTION_CONFIGS:-hdd_deadline hdd_bfq hdd_ssdprio_sched hdd_ssdprio ssd_deadline ssd_ssdprio}
else
	RUNTIME=8 SSD_RUNTIME=5 PATTERNS="seqread seqwrite randread randwrite"
	CONFIGS=${CONTENTION_CONFIGS:-hdd_deadline hdd_bfq hdd_ssdprio_sched hdd_ssdprio ssd_deadline ssd_ssdprio}
fi
HDD_MB=512  # two 256 MiB regions: normal job in the first, idle reader in the second
REGION=256M
CACHE_MB=64

setup() { # CONFIG: echoes the device
	local hdd ssd
	case $1 in
	hdd_deadline)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		sched_dev "$hdd" mq-deadline ;;
	hdd_bfq)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		sched_dev "$hdd" bfq ;;
	hdd_ssdprio_sched)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		ssd=$(ssd_dev ssd "$CACHE_MB")
		dm_try_create ssdprio "0 $(sectors "$hdd") ssdprio $hdd $ssd 2 cache off" ;;
	hdd_ssdprio)
		hdd=$(hddsim_dev hdd "$HDD_MB")
		ssd=$(ssd_dev ssd "$CACHE_MB")
		dm_try_create ssdprio "0 $(sectors "$hdd") ssdprio $hdd $ssd" ;;
	ssd_deadline)
		ssd=$(ssd_dev rawssd "$HDD_MB")
		echo mq-deadline >/sys/block/rawssd/queue/scheduler
		echo "$ssd" ;;
	ssd_ssdprio)
		hdd=$(ssd_dev ssdorig "$HDD_MB")
		ssd=$(ssd_dev ssd "$CACHE_MB")
		dm_try_create ssdprio "0 $(sectors "$hdd") ssdprio $hdd $ssd" ;;
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
	base=(--filename="$dev" --direct=1 --ioengine=psync --iodepth=1 --time_based)
	for rep in $(seq "$REPS"); do
		for p in $PATTERNS; do
			# shellcheck disable=SC2046
			bfio /tmp/alone.json "${base[@]}" --runtime="$rt" --offset=0 --size="$REGION" \
				--name=normal $(pattern_args "$p" $((rep * 10)))
			read -r rmb wmb _ _ _ < <(fio_sum /tmp/alone.json)
			alone=$(awk -v a="$rmb" -v b="$wmb" 'BEGIN { print a + b }')

			# The idle reader starts first and runs 1 s past the normal job.
			ionice -c3 fio --output-format=json --output=/tmp/idle.json "${base[@]}" \
				--runtime=$((rt + 2)) --offset="$REGION" --size="$REGION" \
				--name=idle --rw=read --bs=128k &
			idle_pid=$!
			sleep 1
			# shellcheck disable=SC2046
			bfio /tmp/with.json "${base[@]}" --runtime="$rt" --offset=0 --size="$REGION" \
				--name=normal $(pattern_args "$p" $((rep * 10)))
			wait "$idle_pid" || fail "idle fio failed"
			grep -Eq '"error" *: *[1-9]' /tmp/idle.json && fail "idle fio reported an error"
			read -r rmb wmb _ _ _ < <(fio_sum /tmp/with.json)
			with=$(awk -v a="$rmb" -v b="$wmb" 'BEGIN { print a + b }')
			read -r idle _ _ _ _ < <(fio_sum /tmp/idle.json)
			record "$config" "$p" "$rep" alone_mbps="$alone" with_mbps="$with" idle_mbps="$idle"
			log "contention $config $p rep $rep: alone $alone MB/s, with idle $with MB/s, idle $idle MB/s"
		done
	done
	teardown
done
