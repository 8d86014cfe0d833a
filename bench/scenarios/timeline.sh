# shellcheck shell=bash
# Scenario 2 (the deadline paper's fig. 15): a normal and an idle (`ionice
# -c3`) 128 KiB sequential reader (psync, queue depth 1) on different regions
# of the HDD model, throughput per second for both over the whole run. ssdprio
# with idle_dispatch_interval 200 ms and batch_mode_delay 5 s: the idle reader
# should sit near zero while the normal one runs, stay there for
# batch_mode_delay, then take the whole device. Configs: ssdprio scheduler
# only (`cache off`), ssdprio in full (64 MiB cache, cold: the normal reader's
# 256 MiB region is 4x the cache) and mq-deadline on the bare HDD for contrast;
# the cgroup v2 anchors (bench/lib.sh, anchor_dev): io.cost with io.weight
# 10000 : 1, and bfq with io.bfq.weight 1000 : 1.
# title: Timeline (deadline paper fig. 15): normal and idle sequential readers, per second
# order: 30
# status: ready
# minutes: 5
# mem_mb: 600

if ((Q)); then
	NORMAL_S=3 TAIL_S=2
	CONFIGS=${TIMELINE_CONFIGS:-hdd_ssdprio_sched}
else
	NORMAL_S=15 TAIL_S=6
	CONFIGS=${TIMELINE_CONFIGS:-hdd_ssdprio_sched hdd_ssdprio hdd_deadline hdd_iocost hdd_bfq_cgroup}
fi
HDD_MB=512
REGION=256M
IDI=200 BMD=5000

setup() {
	local hdd ssd
	hdd=$(hddsim_dev hdd "$HDD_MB")
	case $1 in
	hdd_deadline) sched_dev "$hdd" mq-deadline ;;
	hdd_iocost | hdd_bfq_cgroup) anchor_dev "$1" "$hdd" ;;
	hdd_ssdprio_sched | hdd_ssdprio)
		ssd=$(ssd_dev ssd 64)
		if [[ $1 == hdd_ssdprio_sched ]]; then
			ssdprio_dev ssdprio "$hdd" "$ssd" cache off \
				idle_dispatch_interval $IDI batch_mode_delay $BMD
		else
			ssdprio_dev ssdprio "$hdd" "$ssd" idle_dispatch_interval $IDI batch_mode_delay $BMD
		fi ;;
	*) return 1 ;;
	esac
}

# 250 ms windows: the ramp after batch_mode_delay is timed to a quarter second
# (1 s windows could put it a second late); the plot shows them as they are.
LOG_MS=250
for config in $CONFIGS; do
	if ! dev=$(setup "$config") || [[ ! -b $dev ]]; then
		record_skip "$config" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
		teardown
		continue
	fi
	base=(--filename="$dev" --direct=1 --ioengine=psync --iodepth=1 --time_based
		--rw=read --bs=128k --log_avg_msec="$LOG_MS" --log_unix_epoch=1 --size="$REGION")
	rm -f /tmp/tl_*
	total=$((1 + NORMAL_S + BMD / 1000 + TAIL_S))
	# One fio, two jobs: the idle reader (prioclass=3 = ionice -c3) from
	# t=0, the normal one from t=1 s.
	# shellcheck disable=SC2046 # anchor_args: words
	bfio /tmp/tl.json "${base[@]}" \
		--name=idle --prioclass=3 --runtime="$total" --offset="$REGION" --write_bw_log=/tmp/tl_idle \
		$(anchor_args "$config" idle) \
		--name=normal --startdelay=1 --runtime="$NORMAL_S" --offset=0 --write_bw_log=/tmp/tl_normal \
		$(anchor_args "$config" normal)
	extra=()
	[[ $config == hdd_ssdprio* ]] && extra+=(status="$(status_json ssdprio)")
	record "$config" timeline 1 normal_seconds="$NORMAL_S" \
		batch_mode_delay_s="$((BMD / 1000))" idle_dispatch_interval_ms="$IDI" log_avg_ms="$LOG_MS" \
		idle_series="$(bwlog_json /tmp/tl_idle_bw.1.log)" \
		normal_series="$(bwlog_json /tmp/tl_normal_bw.2.log)" "${extra[@]}"
	log "timeline $config recorded"
	teardown
	anchor_teardown
done
