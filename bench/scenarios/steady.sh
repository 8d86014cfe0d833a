# shellcheck shell=bash
# Scenario 7: steady state under a skewed random workload, the one real
# servers run: 4 KiB random I/O (psync, queue depth 1) over a region of the
# HDD model ORIGIN_X times the SSD cache, with a zipf or pareto popularity
# (scattered hot blocks), first WARM seconds not measured, then MEAS seconds
# measured, on the same devices for ssdprio (defaults) and the in-kernel
# peers: dm-writecache, dm-cache (smq, 32 KiB blocks), bcache (writeback).
# Each system's read hit ratio over the measured part is set beside the
# ideal one: a block-granular LRU of the cache's capacity over the same
# fio trace (bench/sim/lru_ideal.py, write_iolog of both parts). For
# ssdprio also the share of bios that bypassed the cache (no free set) and
# of the cache's blocks that hold data (valid_blocks / cache_blocks). For
# every system, what the HDD model served over the measured part (origin:
# reads, writes, seeks, busy_us): where the origin's time went.
# Mixes: MIX = DIST:PARAM:READ_PERCENT, e.g. zipf:1.1:70.
# title: Steady state: skewed 4 KiB random mixes over an origin 8x the cache, after a warm-up; vs the peers and a block-LRU ideal
# order: 80
# status: ready
# minutes: 80
# mem_mb: 900

if ((Q)); then
	CACHE_MB=16 ORIGIN_X=8 WARM=8 MEAS=8
	MIXES=${STEADY_WORKLOADS:-zipf:1.1:70}
	CONFIGS=${STEADY_CONFIGS:-ssdprio writecache}
else
	CACHE_MB=32 ORIGIN_X=8 WARM=60 MEAS=30
	MIXES=${STEADY_WORKLOADS:-zipf:1.1:70 zipf:1.1:30 zipf:0.9:70 pareto:0.9:70}
	CONFIGS=${STEADY_CONFIGS:-ssdprio writecache dmcache bcache}
fi
# STEADY_WS_MB, STEADY_WARM, STEADY_MEAS: other sizes and times for a study
# (a working set the cache holds whole: each system's hit path alone).
WS_MB=${STEADY_WS_MB:-$((CACHE_MB * ORIGIN_X))}
WARM=${STEADY_WARM:-$WARM} MEAS=${STEADY_MEAS:-$MEAS}
HDD_MB=$((WS_MB + 32))

# hits CONFIG DEV: "read_hits read_misses" counted by the cache so far.
hits() {
	local name=${2#/dev/mapper/} b
	case $1 in
	ssdprio*) echo "$(status_get "$name" read_hits) $(status_get "$name" read_misses)" ;;
	# 0 len cache mbs used/total cbs used/total read_hits read_misses ...
	dmcache) dmsetup status "$name" | awk '{ print $8, $9 }' ;;
	# 0 len writecache error blocks free writeback reads read_hits ...
	writecache) dmsetup status "$name" | awk '{ print $9, $8 - $9 }' ;;
	bcache)
		# Reads only; its counters reach stats_total on a timer every
		# 300/22 s: wait for one (no I/O meanwhile) so that both
		# snapshots hold everything before them.
		sleep 14
		b=/sys/block/${2#/dev/}/bcache/stats_total
		echo "$(<"$b/cache_hits") $(<"$b/cache_misses")" ;;
	esac
}

mix_args() { # MIX SEED
	local dist param rd
	IFS=: read -r dist param rd <<<"$1"
	echo "--random_distribution=$dist:$param --rwmixread=$rd --randrepeat=0 --randseed=$2"
}

for mix in $MIXES; do
	for config in $CONFIGS; do
		for rep in $(seq "$REPS"); do
			dev=$(peer_dev_or_skip "$config" "$HDD_MB" "$CACHE_MB") || continue 2
			name=${dev#/dev/mapper/}
			rm -f /tmp/st_*
			common=(--filename="$dev" --direct=1 --ioengine=psync --iodepth=1 --rw=randrw
				--bs=4k --size="${WS_MB}M" --time_based)
			# shellcheck disable=SC2046 # mix_args: words
			bfio /tmp/st_warm.json "${common[@]}" $(mix_args "$mix" $((rep * 7))) \
				--runtime="$WARM" --name=warm --write_iolog=/tmp/st_warm.iolog
			read -r h0 m0 < <(hits "$config" "$dev")
			[[ $config == ssdprio* ]] && s0=$(status_json "$name")
			hdd0=$(status_json hdd)
			# STEADY_TRACE=1: ssdprio's and the HDD model's status every
			# second of the measured part, in RAW/steady-CONFIG-MIX-REP.trace.
			tpid=
			if ((${STEADY_TRACE:-0})) && [[ $config == ssdprio* ]]; then
				while :; do
					echo "$(date +%s.%N) $(dmsetup status "$name" | head -1) | $(dmsetup status hdd)"
					sleep 1
				done >"$RAW/steady-$config-${mix//:/_}-$rep.trace" 2>&1 &
				tpid=$!
			fi
			# shellcheck disable=SC2046
			bfio /tmp/st_meas.json "${common[@]}" $(mix_args "$mix" $((rep * 7 + 1))) \
				--runtime="$MEAS" --name=measured --write_iolog=/tmp/st_meas.iolog
			[[ -z $tpid ]] || { kill "$tpid"; wait "$tpid" 2>/dev/null; }
			hdd1=$(status_json hdd)
			read -r h1 m1 < <(hits "$config" "$dev")
			read -r _ _ riops wiops _ < <(fio_sum /tmp/st_meas.json)
			read -r lmean lp99 < <(fio_lat /tmp/st_meas.json)
			cap=$((CACHE_MB * 256))
			ideal=$(python3 "$REPO/bench/sim/lru_ideal.py" "$cap" 4096 /tmp/st_warm.iolog /tmp/st_meas.iolog)
			hit=$(awk -v h=$((h1 - h0)) -v m=$((m1 - m0)) 'BEGIN { print (h + m) ? h / (h + m) : "null" }')
			extra=()
			if [[ $config == ssdprio* ]]; then
				s1=$(status_json "$name")
				extra+=(status_before="$s0" status="$s1"
					bypassed_share="$(jq -n --argjson a "$s0" --argjson b "$s1" \
						'($b.bypassed - $a.bypassed) / ([($b.bios_normal + $b.bios_idle) - ($a.bios_normal + $a.bios_idle), 1] | max)')"
					valid_share="$(jq -n --argjson b "$s1" '$b.valid_blocks / $b.cache_blocks')"
					frame_model="$(python3 "$REPO/bench/sim/frame_sim.py" --json \
						"$(jq -n --argjson b "$s1" '$b.cache_blocks / $b.set_blocks')" \
						"$(jq -n --argjson b "$s1" '$b.set_blocks')" /tmp/st_warm.iolog /tmp/st_meas.iolog)")
			fi
			record "$config" "$mix" "$rep" cache_mb="$CACHE_MB" origin_mb="$WS_MB" \
				warm_s="$WARM" measured_s="$MEAS" \
				iops="$(awk -v a="$riops" -v b="$wiops" 'BEGIN { print a + b }')" \
				read_hit_ratio="$hit" lru_ideal="$ideal" \
				lat_mean_ms="$lmean" lat_p99_ms="$lp99" \
				lat="$(jq -c '.jobs[0] | [.read, .write] | map({ios: .total_ios,
					mean_ms: (.clat_ns.mean / 1e6), p99_ms: (.clat_ns.percentile["99.000000"] / 1e6),
					p999_ms: (.clat_ns.percentile["99.900000"] / 1e6), max_ms: (.clat_ns.max / 1e6)}) |
					{read: .[0], write: .[1]}' /tmp/st_meas.json)" \
				origin="$(jq -cn --argjson a "$hdd0" --argjson b "$hdd1" \
					'$b | with_entries(select(.value | type == "number") | .value -= ($a[.key] // 0))')" \
				"${extra[@]}"
			log "steady $config $mix rep $rep: $riops + $wiops IOPS, read hits $hit (LRU ideal $(jq -r .read_hit_ratio <<<"$ideal")), p99 $lp99 ms"
			teardown
		done
	done
done
