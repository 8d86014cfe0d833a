# shellcheck shell=bash
# Scenario 8: write bursts after quiet gaps, and a light steady write load
# (cleaning in quiet windows), shaped as a user meets them. Bursts: NB
# bursts of BURST_IOS 4 KiB random writes (psync, queue depth 1), each in a
# fresh BURST_MB region of an origin 8x the CACHE_MB cache (the region 40%
# of the cache, the writes scattered over it, each block at most once),
# GAP seconds of quiet between them. Each burst's time is set beside the
# first one's of the same run, every burst of every run: a cache that cleans
# in the gaps runs every burst at SSD speed, one that does not runs the later
# ones at HDD speed, or slower when its writes wait for writeback. raw_hdd:
# the bare HDD model, for scale. Light: 4 KiB random writes at LIGHT_IOPS
# over 4x the cache for LIGHT_S seconds, never quiet for a second; the dirty
# share over time. The device's status is sampled every second in both.
# ssdprio (defaults), dm-writecache (defaults: writes back above 50% full),
# bcache (writeback, defaults: writeback_percent 10).
# title: Write bursts after quiet gaps, and the dirty share under a light steady write load
# order: 90
# status: ready
# minutes: 50
# mem_mb: 1700

if ((Q)); then
	CACHE_MB=32 NB=4 GAP=10 LIGHT_IOPS=100 LIGHT_S=8
	CONFIGS=${BURSTS_CONFIGS:-ssdprio writecache}
else
	CACHE_MB=128 NB=6 GAP=30 LIGHT_IOPS=100 LIGHT_S=60
	CONFIGS=${BURSTS_CONFIGS:-raw_hdd ssdprio writecache bcache}
fi
NB=${BURSTS_NB:-$NB}
GAP=${BURSTS_GAP:-$GAP}
BURST_MB=$((CACHE_MB * 2 / 5))
# 1632 writes in 40% of a 128 MiB cache: one block in eight of the region.
BURST_IOS=$((BURST_MB * 256 / 8))
HDD_MB=$((8 * CACHE_MB + 32))

# sample_status CONFIG DEV OUT: one line per second until killed,
# "unix_time dirty_blocks cache_blocks" (4 KiB blocks).
sample_status() {
	local name=${2#/dev/mapper/} b dirty cap
	b=/sys/block/${2#/dev/}/bcache
	while :; do
		case $1 in
		ssdprio)
			dirty=$(status_get "$name" dirty_blocks)
			cap=$(status_get "$name" cache_blocks) ;;
		# 0 len writecache error blocks free writeback ...: all blocks not
		# free hold data; those under writeback or not yet written back
		# are dirty: dm-writecache keeps no clean copies once written back.
		writecache)
			read -r dirty cap < <(dmsetup status "$name" | awk '{ print $5 - $6, $5 }') ;;
		raw_hdd) dirty=0 cap=$((CACHE_MB * 256)) ;;
		bcache)
			# Human-readable ("0.0k", "12.3M"): bch_hprint's units.
			dirty=$(awk '{ v = $1; m = 1; u = substr(v, length(v))
				if (u ~ /[kKMGTPEZY]/) { v = substr(v, 1, length(v) - 1); m = 1024 ^ index("kMGTPEZY", u == "K" ? "k" : u) }
				printf "%d\n", v * m / 4096 }' "$b/dirty_data")
			cap=$((CACHE_MB * 256)) ;;
		esac
		printf '%s %s %s\n' "$(date +%s.%N)" "$dirty" "$cap" >>"$3"
		sleep 1
	done
}

for config in $CONFIGS; do
	for rep in $(seq "$REPS"); do
		# --- bursts ---
		dev=$(peer_dev_or_skip "$config" "$HDD_MB" "$CACHE_MB") || continue 2
		rm -f /tmp/bu_*
		sample_status "$config" "$dev" /tmp/bu_status.log &
		spid=$!
		times=() around=() lockouts=()
		for i in $(seq 0 $((NB - 1))); do
			((i == 0)) || sleep "$GAP"
			if [[ $config == ssdprio* ]]; then
				by0=$(status_get "${dev#/dev/mapper/}" bypassed)
				lo0=$(status_get "${dev#/dev/mapper/}" lockouts)
			fi
			bfio "/tmp/bu_$i.json" --filename="$dev" --direct=1 --ioengine=psync --iodepth=1 \
				--rw=randwrite --bs=4k --offset="$((i * BURST_MB))M" --size="${BURST_MB}M" --io_size="$((BURST_IOS * 4))k" \
				--randrepeat=0 --randseed=$((rep * 100 + i)) --name=burst
			read -r _ _ _ wiops rt < <(fio_sum "/tmp/bu_$i.json")
			times+=("$rt")
			# ssdprio: the burst's writes that went to the origin (a frame
			# refused them), the engine's own part of a slow burst.
			if [[ $config == ssdprio* ]]; then
				around+=($(($(status_get "${dev#/dev/mapper/}" bypassed) - by0)))
				lockouts+=($(($(status_get "${dev#/dev/mapper/}" lockouts) - lo0)))
			fi
			log "bursts $config rep $rep burst $i: $rt s ($wiops IOPS)${around:+, ${around[-1]} writes around the cache}"
		done
		sleep 2
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		extra=()
		[[ $config == ssdprio* ]] && extra+=(status="$(status_json "${dev#/dev/mapper/}")"
			burst_around="[$(IFS=,; echo "${around[*]}")]" burst_lockouts="[$(IFS=,; echo "${lockouts[*]}")]")
		record "$config" bursts "$rep" cache_mb="$CACHE_MB" burst_mb="$BURST_MB" gap_s="$GAP" \
			hdd_mb="$HDD_MB" burst_ios="$BURST_IOS" \
			burst_s="[$(IFS=,; echo "${times[*]}")]" \
			status_log="$(keep /tmp/bu_status.log "$config-bursts-$rep-status.log")" "${extra[@]}"
		teardown

		# --- light steady writes ---
		dev=$(peer_dev_or_skip "$config" "$HDD_MB" "$CACHE_MB") || continue 2
		rm -f /tmp/bu_*
		sample_status "$config" "$dev" /tmp/bu_status.log &
		spid=$!
		bfio /tmp/bu_light.json --filename="$dev" --direct=1 --ioengine=psync --iodepth=1 \
			--rw=randwrite --bs=4k --size="$((4 * CACHE_MB))M" --rate_iops="$LIGHT_IOPS" \
			--randrepeat=0 --randseed=$((rep * 100 + 99)) --time_based --runtime="$LIGHT_S" \
			--name=light
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		read -r _ _ _ wiops _ < <(fio_sum /tmp/bu_light.json)
		read -r lmean lp99 < <(fio_lat /tmp/bu_light.json)
		extra=()
		[[ $config == ssdprio* ]] && extra+=(status="$(status_json "${dev#/dev/mapper/}")")
		record "$config" light "$rep" cache_mb="$CACHE_MB" light_iops="$LIGHT_IOPS" light_s="$LIGHT_S" \
			iops="$wiops" lat_mean_ms="$lmean" lat_p99_ms="$lp99" \
			status_log="$(keep /tmp/bu_status.log "$config-light-$rep-status.log")" "${extra[@]}"
		log "bursts $config rep $rep light: $wiops IOPS, p99 $lp99 ms"
		teardown
	done
done
