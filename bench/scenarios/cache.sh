# shellcheck shell=bash
# Scenario 4 (the dm-ssd paper's table 3): w3g, r3g, wrand, rrand on raw HDD,
# raw SSD, ssdprio and the in-kernel peers. Scaled down with the paper's
# ratios: its 2 GB cache and 3 GB workloads become a 256 MiB cache and 384 MiB
# workloads (1.5x the cache); its 3000 random 4 KiB I/Os over the 3 GB become
# 384 over the 384 MiB (one per MiB, i.e. per 1 MiB set on average: about
# 0.63 x 384 distinct sets, which fit in the cache as the paper's ~1900 of
# 3000 fit in its 2000 sets); quick: 16 MiB / 24 MiB / 24 I/Os.
# Every workload runs on fresh devices (a cold cache, as the paper measured
# each program on its own): reads of never-written blocks cost the same on the
# HDD model, so r3g and rrand need no fill and read nothing the cache holds.
# ssdprio's status counters are recorded after each workload.
# title: Cache (dm-ssd paper table 3): time per workload, median; ratio to raw SSD / raw HDD
# order: 10
# status: ready
# minutes: 10
# mem_mb: 700

if ((Q)); then
	CACHE_MB=16 WS_MB=24
else
	CACHE_MB=256 WS_MB=384
fi
NRAND=${CACHE_NRAND:-$WS_MB} # the paper's density: one random I/O per MiB
HDD_MB=$((WS_MB + 32))
CONFIGS=${CACHE_CONFIGS:-raw_hdd raw_ssd ssdprio dmcache writecache bcache}

# setup CONFIG: echoes the device to measure.
setup() {
	case $1 in
	raw_hdd) hddsim_dev hdd "$HDD_MB" ;;
	raw_ssd) ssd_dev rawssd "$HDD_MB" ;;
	*) cache_peer_dev "$1" "$HDD_MB" "$CACHE_MB" $CACHE_SSDPRIO_ARGS ;;
	esac
}

workload_args() { # WORKLOAD REP
	case $1 in
	w3g) echo "--rw=write --bs=1M --ioengine=libaio --iodepth=4" ;;
	r3g) echo "--rw=read --bs=1M --ioengine=libaio --iodepth=4" ;;
	wrand) echo "--rw=randwrite --bs=4k --ioengine=psync --number_ios=$NRAND --randrepeat=0 --randseed=$((100 + $2))" ;;
	rrand) echo "--rw=randread --bs=4k --ioengine=psync --number_ios=$NRAND --randrepeat=0 --randseed=$((200 + $2))" ;;
	esac
}

WORKLOADS=${CACHE_WORKLOADS:-w3g r3g wrand rrand}
for rep in $(seq "$REPS"); do
	for config in $CONFIGS; do
		for w in $WORKLOADS; do
			if ! dev=$(setup "$config") || [[ ! -b $dev ]]; then
				record_skip "$config" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
				teardown
				continue 2
			fi
			# shellcheck disable=SC2046
			bfio /tmp/cache.json --filename="$dev" --direct=1 --size="${WS_MB}M" \
				--name="$w" $(workload_args "$w" "$rep")
			read -r rmb wmb riops wiops secs < <(fio_sum /tmp/cache.json "$w")
			extra=()
			# Where the I/O went (hits, bypass, promotions).
			[[ $config == ssdprio ]] && extra+=(status="$(status_json ssdprio)")
			record "$config" "$w" "$rep" seconds="$secs" read_mbps="$rmb" write_mbps="$wmb" \
				iops="$(awk -v a="$riops" -v b="$wiops" 'BEGIN { print a + b }')" "${extra[@]}"
			log "cache rep $rep $config $w: ${secs}s"
			teardown
		done
	done
done
