# shellcheck shell=bash
# Scenario 2 (the deadline paper's fig. 15): a normal and an idle sequential
# reader (different regions), throughput per second for both over the whole
# run. ssdprio with idle_dispatch_interval 200 ms and batch_mode_delay 5 s:
# the idle reader should sit near zero while the normal one runs, stay there
# for batch_mode_delay, then take the whole device. mq-deadline on the bare
# HDD model for contrast.
# status: ready
# minutes: 3
# mem_mb: 600

if ((Q)); then
	NORMAL_S=4 TAIL_S=4
else
	NORMAL_S=20 TAIL_S=12
fi
HDD_MB=512
REGION=256M
CONFIGS=${TIMELINE_CONFIGS:-hdd_ssdprio hdd_deadline}
IDI=200 BMD=5000

setup() {
	local hdd ssd
	hdd=$(hddsim_dev hdd "$HDD_MB")
	case $1 in
	hdd_deadline) sched_dev "$hdd" mq-deadline ;;
	hdd_ssdprio)
		ssd=$(ssd_dev ssd 64)
		dm_try_create ssdprio "0 $(sectors "$hdd") ssdprio $hdd $ssd 4 idle_dispatch_interval $IDI batch_mode_delay $BMD" ;;
	*) return 1 ;;
	esac
}

# bw log (msec, KiB/s, ...) -> JSON list of [seconds, MB/s]
bwlog_json() {
	python3 - "$1" "$2" <<'PY'
import sys, json
off = float(sys.argv[2])
pts = []
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split(",")]
    if len(f) >= 2:
        pts.append([round(int(f[0]) / 1000.0 + off, 3), round(int(f[1]) * 1024 / 1e6, 3)])
print(json.dumps(pts))
PY
}

for config in $CONFIGS; do
	if ! dev=$(setup "$config") || [[ ! -b $dev ]]; then
		record_skip "$config" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
		teardown
		continue
	fi
	base=(--filename="$dev" --direct=1 --ioengine=psync --iodepth=1 --time_based
		--rw=read --bs=128k --log_avg_msec=1000 --size="$REGION")
	rm -f /tmp/tl_*
	total=$((1 + NORMAL_S + BMD / 1000 + TAIL_S))
	ionice -c3 fio --output-format=json --output=/tmp/tl_idle.json "${base[@]}" \
		--runtime="$total" --offset="$REGION" --name=idle --write_bw_log=/tmp/tl_idle &
	idle_pid=$!
	t0=$(date +%s.%N)
	sleep 1
	t1=$(date +%s.%N)
	bfio /tmp/tl_normal.json "${base[@]}" --runtime="$NORMAL_S" --offset=0 \
		--name=normal --write_bw_log=/tmp/tl_normal
	wait "$idle_pid" || fail "idle fio failed"
	grep -Eq '"error" *: *[1-9]' /tmp/tl_idle.json && fail "idle fio reported an error"
	normal_off=$(awk -v a="$t1" -v b="$t0" 'BEGIN { print a - b }')
	record "$config" timeline 1 normal_start="$normal_off" normal_seconds="$NORMAL_S" \
		batch_mode_delay_s="$((BMD / 1000))" idle_dispatch_interval_ms="$IDI" \
		idle_series="$(bwlog_json /tmp/tl_idle_bw.1.log 0)" \
		normal_series="$(bwlog_json /tmp/tl_normal_bw.1.log "$normal_off")"
	log "timeline $config recorded"
	teardown
done
