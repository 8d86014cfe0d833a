# shellcheck shell=bash
# Scenario 5 (the dm-ssd paper's fig. 8): sustained writes once the cache is
# full of dirty data, against the raw HDD, per second. ssdprio (64 MiB SSD
# cache) over the HDD model (256 MiB): the first 64 MiB are written first
# (fills every free set with dirty data), then, with no pause (the next job
# of the same fio run), a sustained write runs over the next 128 MiB (sets
# not in the cache). The raw HDD gets
# the same two writes. Patterns: sequential 1 MiB (libaio, queue depth 4) and
# random 4 KiB (psync, queue depth 1). Throughput per second from fio's
# bandwidth log; ssdprio's counters after each run. Also, named in
# CACHEFULL_CONFIGS: ssdprio-nolockout (lockout_clean off), ssdprio-paper
# (evict_max_wait 0: no writeback at all under load, the dm-ssd paper's rule).
# title: Cache full (dm-ssd paper fig. 8): sustained writes once the cache is full of dirty data, vs raw HDD
# order: 50
# status: ready
# minutes: 4
# mem_mb: 400

if ((Q)); then
	RUNTIME=3 PATTERNS=${CACHEFULL_PATTERNS:-seq}
else
	RUNTIME=12 PATTERNS=${CACHEFULL_PATTERNS:-seq rand}
fi
CONFIGS=${CACHEFULL_CONFIGS:-raw_hdd ssdprio}
HDD_MB=256
CACHE_MB=64
FILL=64M
REGION_OFF=64M
REGION=128M

setup() {
	local hdd ssd
	hdd=$(hddsim_dev hdd "$HDD_MB")
	case $1 in
	raw_hdd) echo "$hdd" ;;
	ssdprio)
		ssd=$(ssd_dev ssd "$CACHE_MB")
		ssdprio_dev ssdprio "$hdd" "$ssd" ;;
	ssdprio-nolockout)
		ssd=$(ssd_dev ssd "$CACHE_MB")
		ssdprio_dev ssdprio "$hdd" "$ssd" lockout_clean off ;;
	ssdprio-paper)
		ssd=$(ssd_dev ssd "$CACHE_MB")
		ssdprio_dev ssdprio "$hdd" "$ssd" evict_max_wait 0 ;;
	*) return 1 ;;
	esac
}

pattern_args() {
	case $1 in
	seq) echo "--rw=write --bs=1M --ioengine=libaio --iodepth=4" ;;
	rand) echo "--rw=randwrite --bs=4k --ioengine=psync --iodepth=1 --randrepeat=0 --randseed=$2" ;;
	esac
}

for rep in $(seq "$REPS"); do
	for p in $PATTERNS; do
		for config in $CONFIGS; do
			if ! dev=$(setup "$config") || [[ ! -b $dev ]]; then
				record_skip "$config" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
				teardown
				continue
			fi
			rm -f /tmp/cf_*
			post=()
			[[ $config == ssdprio* ]] && post=(--exec_postrun="sh -c 'dmsetup status ssdprio >/tmp/cf_full.st'")
			# Fill, then at once (stonewall, same fio run: no quiet time in
			# which deferred eviction could free sets) the sustained writes.
			# shellcheck disable=SC2046
			bfio /tmp/cf.json --filename="$dev" --direct=1 \
				--name=fill --ioengine=libaio --iodepth=4 --rw=write --bs=1M --size="$FILL" "${post[@]}" \
				--name=sustained --stonewall --time_based --runtime="$RUNTIME" \
				--offset="$REGION_OFF" --size="$REGION" $(pattern_args "$p" $((rep + 7))) \
				--log_avg_msec=1000 --log_unix_epoch=1 --write_bw_log=/tmp/cf
			read -r _ wmb _ wiops _ < <(fio_sum /tmp/cf.json sustained)
			extra=()
			[[ $config == ssdprio* ]] && extra+=(status_full="$(status_json - </tmp/cf_full.st 2>/dev/null)"
				status="$(status_json ssdprio)")
			record "$config" "$p" "$rep" write_mbps="$wmb" write_iops="$wiops" \
				series="$(bwlog_json /tmp/cf_bw.2.log)" "${extra[@]}"
			log "cachefull rep $rep $p $config: $wmb MB/s"
			teardown
		done
	done
done
