# shellcheck shell=bash
# Scenario 9: a shifting hot set. 4 KiB random I/O (70% reads, zipf 1.1,
# psync, queue depth 1) over a region ORIGIN_X times the cache for PHASE
# seconds, then the same over the next, disjoint region (every hot block
# new) for PHASE seconds more. The read hit ratio is sampled every second;
# reported: the ratio before the shift (mean of its last third) and the
# seconds after the shift until the ratio (3 s moving average) is back at
# 90% of it. ssdprio (defaults), dm-writecache, dm-cache (smq, 32 KiB).
# bcache is left out: its hit counters reach sysfs on a timer, too coarse
# for a per-second ratio.
# title: A shifting hot set: read hit ratio per second, and the time to recover after the shift
# order: 100
# status: ready
# minutes: 20
# mem_mb: 700

if ((Q)); then
	CACHE_MB=16 ORIGIN_X=4 PHASE=10
	CONFIGS=${SHIFT_CONFIGS:-ssdprio writecache}
else
	CACHE_MB=32 ORIGIN_X=4 PHASE=60
	CONFIGS=${SHIFT_CONFIGS:-ssdprio writecache dmcache}
fi
WS_MB=$((CACHE_MB * ORIGIN_X))
HDD_MB=$((2 * WS_MB + 32))

# sample_hits CONFIG DEV OUT: "unix_time read_hits read_misses" every second
# until killed.
sample_hits() {
	local name=${2#/dev/mapper/}
	while :; do
		case $1 in
		ssdprio*) echo "$(status_get "$name" read_hits) $(status_get "$name" read_misses)" ;;
		dmcache) dmsetup status "$name" | awk '{ print $8, $9 }' ;;
		writecache) dmsetup status "$name" | awk '{ print $9, $8 - $9 }' ;;
		esac | sed "s/^/$(date +%s.%N) /" >>"$3"
		sleep 1
	done
}

for config in $CONFIGS; do
	for rep in $(seq "$REPS"); do
		dev=$(peer_dev_or_skip "$config" "$HDD_MB" "$CACHE_MB") || continue 2
		rm -f /tmp/sh_*
		common=(--filename="$dev" --direct=1 --ioengine=psync --iodepth=1 --rw=randrw
			--rwmixread=70 --random_distribution=zipf:1.1 --randrepeat=0 --bs=4k
			--size="${WS_MB}M" --time_based --runtime="$PHASE")
		sample_hits "$config" "$dev" /tmp/sh_hits.log &
		spid=$!
		bfio /tmp/sh_a.json "${common[@]}" --offset=0 --randseed=$((rep * 11)) --name=before
		shift_t=$(date +%s.%N)
		bfio /tmp/sh_b.json "${common[@]}" --offset="${WS_MB}M" --randseed=$((rep * 11 + 1)) --name=after
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		extra=()
		[[ $config == ssdprio* ]] && extra+=(status="$(status_json "${dev#/dev/mapper/}")")
		record "$config" zipf:1.1:70 "$rep" cache_mb="$CACHE_MB" origin_mb="$WS_MB" phase_s="$PHASE" \
			shift_t="$shift_t" hits_log="$(keep /tmp/sh_hits.log "$config-$rep-hits.log")" "${extra[@]}"
		log "shift $config rep $rep done"
		teardown
	done
done
