# shellcheck shell=bash
# Writeback coalescing: how long cleaning takes to write back scattered dirty
# blocks over a cached region, and in how many origin writes, with
# writeback_gap 0 (only runs that touch are joined) and 16 (the default: runs
# up to 16 clean blocks apart are one write). A REGION_MB region of the HDD
# model is written and flushed (cached, clean), then 4 KiB random writes
# (psync, every block at most once) dirty a share of it with cleaning held off
# (dirty_target 100); then dirty_target 0 and the time until nothing is dirty
# is measured (cleaning after evict_wait of quiet). Two modes: "quiet" (the
# defaults: batch mode after batch_mode_delay of quiet, then unthrottled) and
# "paced" (batch_mode_delay 1 hour: every idle origin write waits its
# idle_dispatch_interval, 200 ms, as in the short quiet windows of a device
# that is never idle for long), with fewer dirty blocks.
# title: Writeback coalescing: cleaning scattered dirty blocks, writeback_gap 0 vs 16
# order: 95
# status: extra
# minutes: 8
# mem_mb: 400

if ((Q)); then
	REGION_MB=8 QUIET_IO=1M PACED_IO=256K
else
	REGION_MB=32 QUIET_IO=8M PACED_IO=2M
fi
CONFIGS=${COALESCE_CONFIGS:-gap0 gap16}
MODES=${COALESCE_MODES:-quiet paced}
HDD_MB=160
CACHE_MB=64

for rep in $(seq "$REPS"); do
	for mode in $MODES; do
		for config in $CONFIGS; do
			gap=${config#gap}
			extra=(writeback_gap "$gap" dirty_target 100 dirty_max_age 0 seq_cutoff 0)
			[[ $mode == paced ]] && extra+=(batch_mode_delay 3600000)
			size=$QUIET_IO
			[[ $mode == paced ]] && size=$PACED_IO
			hdd=$(hddsim_dev hdd "$HDD_MB")
			ssd=$(ssd_dev ssd "$CACHE_MB")
			if ! dev=$(ssdprio_dev ssdprio "$hdd" "$ssd" "${extra[@]}") || [[ ! -b $dev ]]; then
				record_skip "$config" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
				teardown
				continue
			fi
			dd if=/dev/urandom of="$dev" bs=1M count="$REGION_MB" oflag=direct status=none ||
				fail "coalesce: region write"
			dmsetup message ssdprio 0 flush_dirty || fail "flush_dirty"
			wait_status ssdprio dirty_blocks -eq 0 600
			bfio /tmp/co.json --filename="$dev" --direct=1 --ioengine=psync --iodepth=1 \
				--rw=randwrite --bs=4k --size="${REGION_MB}M" --io_size="$size" \
				--randrepeat=0 --randseed=$((rep * 7)) --name=scatter
			d0=$(status_get ssdprio dirty_blocks)
			w0=$(status_get ssdprio writeback_writes)
			g0=$(status_get ssdprio writeback_bridged_blocks)
			b0=$(status_get ssdprio blocks_written_back)
			t0=$(date +%s.%N)
			dmsetup message ssdprio 0 dirty_target 0 || fail "dirty_target 0"
			wait_status ssdprio dirty_blocks -eq 0 1800
			wait_status ssdprio writeback_sets -eq 0 60
			t1=$(date +%s.%N)
			record "$config" "$mode" "$rep" gap="$gap" dirty="$d0" \
				seconds="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" \
				writes=$(($(status_get ssdprio writeback_writes) - w0)) \
				bridged=$(($(status_get ssdprio writeback_bridged_blocks) - g0)) \
				written_back=$(($(status_get ssdprio blocks_written_back) - b0)) \
				status="$(status_json ssdprio)"
			log "coalesce $config $mode rep $rep: $d0 dirty blocks cleaned in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s, $(($(status_get ssdprio writeback_writes) - w0)) origin writes"
			teardown
		done
	done
done
