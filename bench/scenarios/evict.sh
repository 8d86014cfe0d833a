# shellcheck shell=bash
# Scenario 6: eviction under load. A mixed random workload (4 KiB, 50% reads,
# psync, queue depth 1) over 192 MiB of the HDD model, 3x the 64 MiB SSD
# cache, in bursts: BURST I/Os, then THINK seconds of quiet, for RUNTIME
# seconds. The normal job's completion latency per I/O (fio clat log) gives
# its p99 per second; the device's status is sampled every second (dirty
# blocks, blocks written back) to show when each cache writes back.
# ssdprio (defaults: evict_wait 1 s, writeback as idle-class I/O) against
# dm-cache (smq, writeback, 32 KiB blocks, metadata on an 8 MiB null_blk).
# title: Eviction under load: normal job's p99 latency over time, ssdprio vs dm-cache
# order: 60
# status: ready
# minutes: 4
# mem_mb: 400

if ((Q)); then
	RUNTIME=5 BURST=200 THINK=2
else
	RUNTIME=75 BURST=1500 THINK=6
fi
CONFIGS=${EVICT_CONFIGS:-ssdprio dmcache}
HDD_MB=224
CACHE_MB=64
WS=192M

setup() { # CONFIG: echoes the device
	local hdd ssd meta
	hdd=$(hddsim_dev hdd "$HDD_MB")
	ssd=$(ssd_dev ssd "$CACHE_MB")
	case $1 in
	ssdprio) ssdprio_dev ssdprio "$hdd" "$ssd" ;;
	dmcache)
		meta=$(ssd_dev meta 8)
		dm_try_create dmcache "0 $(sectors "$hdd") cache $meta $ssd $hdd 64 1 writeback smq 0" ;;
	*) return 1 ;;
	esac
}

for config in $CONFIGS; do
	if ! dev=$(setup "$config") || [[ ! -b $dev ]]; then
		record_skip "$config" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
		teardown
		continue
	fi
	name=${dev#/dev/mapper/}
	rm -f /tmp/ev_*
	fio --output-format=json --output=/tmp/ev.json --filename="$dev" --direct=1 \
		--ioengine=psync --iodepth=1 --rw=randrw --rwmixread=50 --bs=4k --size="$WS" \
		--randrepeat=0 --randseed=42 --time_based --runtime="$RUNTIME" \
		--thinktime="${THINK}s" --thinktime_blocks="$BURST" --name=normal \
		--log_unix_epoch=1 --write_lat_log=/tmp/ev &
	fio_pid=$!
	# Status once a second, while fio runs: "unix_time status-line".
	while kill -0 "$fio_pid" 2>/dev/null; do
		printf '%s %s\n' "$(date +%s.%N)" "$(dmsetup status "$name" | head -1)" >>/tmp/ev_status.log
		sleep 1
	done
	wait "$fio_pid" || fail "fio ($config) failed"
	grep -Eq '"error" *: *[1-9]' /tmp/ev.json && fail "fio ($config) reported an error"
	read -r rmb wmb riops wiops _ < <(fio_sum /tmp/ev.json)
	read -r lmean lp99 < <(fio_lat /tmp/ev.json)
	record "$config" mixed 1 runtime_s="$RUNTIME" burst_ios="$BURST" think_s="$THINK" \
		read_mbps="$rmb" write_mbps="$wmb" iops="$(awk -v a="$riops" -v b="$wiops" 'BEGIN { print a + b }')" \
		lat_mean_ms="$lmean" lat_p99_ms="$lp99" \
		clat_log="$(keep /tmp/ev_clat.1.log "$config-clat.log")" \
		status_log="$(keep /tmp/ev_status.log "$config-status.log")"
	log "evict $config: $riops + $wiops IOPS, p99 $lp99 ms"
	teardown
done
