# shellcheck shell=bash
# Scenario 3 (the deadline paper's fig. 16): the idle reader's throughput
# during normal load against idle_dispatch_interval. ssdprio scheduler only
# (`cache off`) over the HDD model (512 MiB). Normal load: 4 KiB random reads
# (psync, queue depth 1) in the first 256 MiB with 20 ms of think time after
# each (an interactive-like load that leaves the disk gaps; a load without
# gaps gets no idle bio beside it at any interval, see docs/scheduler.md,
# idle_grace). Idle: an `ionice -c3` 128 KiB sequential reader in the second
# 256 MiB. The normal job's throughput and latency are recorded beside, and a
# run without the idle reader gives the normal job's baseline.
# title: Knob sweep (deadline paper fig. 16): idle throughput during normal load vs idle_dispatch_interval
# order: 40
# status: ready
# minutes: 4
# mem_mb: 600

if ((Q)); then
	RUNTIME=2 INTERVALS=${SWEEP_INTERVALS:-0 1000}
else
	RUNTIME=6 INTERVALS=${SWEEP_INTERVALS:-0 50 100 200 500 1000}
fi
HDD_MB=512
REGION=256M
THINK_US=20000

hdd=$(hddsim_dev hdd "$HDD_MB")
ssd=$(ssd_dev ssd 16)
dev=$(ssdprio_dev ssdprio "$hdd" "$ssd" cache off) || fail "ssdprio setup failed"
[[ -b $dev ]] || fail "no $dev"
normal=(--name=normal --filename="$dev" --direct=1 --ioengine=psync --iodepth=1 --time_based
	--runtime="$RUNTIME" --offset=0 --size="$REGION" --rw=randread --bs=4k
	--thinktime="$THINK_US" --randrepeat=0)
# Paired with the normal job in one fio run (prioclass=3 = ionice -c3), from
# 1 s before it to 1 s after.
idle=(--name=idle --prioclass=3 --filename="$dev" --direct=1 --ioengine=psync --iodepth=1
	--time_based --runtime=$((RUNTIME + 2)) --offset="$REGION" --size="$REGION"
	--rw=read --bs=128k --log_avg_msec=500 --log_unix_epoch=1 --write_bw_log=/tmp/sw_idle)
logs=(--startdelay=1 --log_avg_msec=500 --log_unix_epoch=1 --write_bw_log=/tmp/sw_normal)

for rep in $(seq "$REPS"); do
	bfio /tmp/sw_base.json "${normal[@]}" --randseed=$((rep * 100))
	read -r nmb _ niops _ _ < <(fio_sum /tmp/sw_base.json)
	read -r nmean np99 < <(fio_lat /tmp/sw_base.json)
	record baseline none "$rep" normal_mbps="$nmb" normal_iops="$niops" \
		normal_lat_mean_ms="$nmean" normal_lat_p99_ms="$np99"
	for ms in $INTERVALS; do
		dmsetup message ssdprio 0 idle_dispatch_interval "$ms" || fail "message idle_dispatch_interval $ms"
		rm -f /tmp/sw_*.log
		st0=$(jq .idle_dispatched <<<"$(status_json ssdprio)")
		bfio /tmp/sw_normal.json "${idle[@]}" "${normal[@]}" --randseed=$((rep * 100 + ms + 1)) "${logs[@]}"
		st=$(status_json ssdprio)
		read -r nmb _ niops _ _ < <(fio_sum /tmp/sw_normal.json normal)
		read -r nmean np99 < <(fio_lat /tmp/sw_normal.json normal)
		# The idle reader's throughput while the normal job ran is taken on
		# the host from the two bandwidth logs (same clock); idle bios
		# dispatched during the whole fio run (idle alone 1 s before and
		# after the normal job) as a cross-check.
		idisp=$(($(jq .idle_dispatched <<<"$st") - st0))
		record ssdprio interval "$rep" interval_ms="$ms" idle_bios="$idisp" \
			normal_mbps="$nmb" normal_iops="$niops" \
			normal_lat_mean_ms="$nmean" normal_lat_p99_ms="$np99" status="$st" \
			normal_series="$(bwlog_json /tmp/sw_normal_bw.2.log)" \
			idle_series="$(bwlog_json /tmp/sw_idle_bw.1.log)"
		log "sweep rep $rep interval $ms ms: $idisp idle bios, normal $niops IOPS, p99 $np99 ms"
	done
done
