# shellcheck shell=bash
# Guest-side helpers for the bench scenarios (bench/scenarios/NAME.sh), sourced
# by bench/guest.sh after tests/guest/lib.sh. Scenarios use:
#   Q (1 under BENCH_QUICK), REPS, RAW (output dir), SCEN (current scenario)
#   hddsim_dev NAME SIZE_MB        HDD model (dm hddsim over a zero-latency null_blk)
#   ssd_dev NAME SIZE_MB           SSD: null_blk, 50 us, queue depth 64
#   sched_dev DEV SCHED            loop (direct I/O, queue depth 1) over DEV with
#                                  an I/O scheduler: a disk without NCQ under
#                                  mq-deadline/bfq (a dm device has no scheduler)
#   fio_sum FILE                   "read_MBps write_MBps read_iops write_iops runtime_s"
#   bfio OUT ARGS...               fio, JSON into OUT, checked (exit status, err=)
#   record CONFIG WORKLOAD REP k=v...   append one raw JSON line for SCEN
#   teardown                       remove every device the scenario made

HDDSIM_KO=$REPO/tests/hddsim/dm-hddsim.ko

bench_load_modules() {
	load_module "$HDDSIM_KO"
	[[ -f $MODULE ]] && load_module "$MODULE"
	modprobe dm-cache 2>/dev/null
	modprobe dm-cache-smq 2>/dev/null
	modprobe dm-writecache 2>/dev/null
	modprobe bcache 2>/dev/null
	modprobe bfq 2>/dev/null
	true
}

# loop with one request in flight, so the scheduler above it decides the order.
bench_loop_setup() {
	local d
	if [[ -e /sys/module/loop/parameters/hw_queue_depth ]]; then
		d=$(</sys/module/loop/parameters/hw_queue_depth)
		[[ $d == 1 ]] && return 0
		losetup -D
		rmmod loop 2>/dev/null || {
			log "loop is loaded with hw_queue_depth=$d and cannot be reloaded"
			return 0
		}
	fi
	modprobe loop hw_queue_depth=1 max_loop=0 || log "modprobe loop failed"
}

hddsim_dev() { # NAME SIZE_MB [hddsim key value...]
	local name=$1 size=$2 back
	shift 2
	back=$(make_hdd "${name}_b" "$size" 0 64)
	dm_create "$name" "0 $(sectors "$back") hddsim $back $*"
	echo 1 >"/sys/block/$(basename "$(readlink -f "/dev/mapper/$name")")/queue/rotational" 2>/dev/null
	true
}

ssd_dev() { make_ssd "$1" "$2"; }

sched_dev() { # DEV SCHED: echoes the loop device
	local dev=$1 sched=$2 loop q
	loop=$(losetup --direct-io=on --show -f "$dev") || fail "losetup $dev failed"
	q=/sys/block/$(basename "$loop")/queue
	echo 1 >"$q/rotational" 2>/dev/null
	echo "$sched" >"$q/scheduler" || fail "scheduler $sched on $loop"
	grep -q "\[$sched\]" "$q/scheduler" || fail "scheduler $sched not active on $loop"
	echo "$loop"
}

bfio() { # OUT ARGS...
	local out=$1
	shift
	fio_run --output-format=json --output="$out" "$@" >/dev/null
}

fio_sum() { # FILE [JOBNAME]: sums over jobs (or one job)
	python3 - "$@" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
jobs = [x for x in j["jobs"] if len(sys.argv) < 3 or x["jobname"] == sys.argv[2]]
rb = sum(x["read"]["bw_bytes"] for x in jobs) / 1e6
wb = sum(x["write"]["bw_bytes"] for x in jobs) / 1e6
ri = sum(x["read"]["iops"] for x in jobs)
wi = sum(x["write"]["iops"] for x in jobs)
rt = max(x["job_runtime"] for x in jobs) / 1000.0
print("%.3f %.3f %.1f %.1f %.3f" % (rb, wb, ri, wi, rt))
PY
}

record() { # CONFIG WORKLOAD REP key=value...
	local config=$1 workload=$2 rep=$3 kv line
	shift 3
	line="{\"scenario\": \"$SCEN\", \"config\": \"$config\", \"workload\": \"$workload\", \"rep\": $rep"
	for kv in "$@"; do
		line+=", \"${kv%%=*}\": ${kv#*=}"
	done
	echo "$line}" >>"$RAW/$SCEN.jsonl"
}

record_skip() { # CONFIG REASON
	echo "{\"scenario\": \"$SCEN\", \"config\": \"$1\", \"skipped\": \"$2\"}" >>"$RAW/$SCEN.jsonl"
	log "$SCEN: config $1 skipped: $2"
}

bcache_stop() {
	local b u i
	for b in /sys/block/bcache*/bcache/stop; do
		[[ -e $b ]] && echo 1 >"$b"
	done
	for u in /sys/fs/bcache/*-*-*-*-*/unregister; do
		[[ -e $u ]] && echo 1 >"$u"
	done
	for i in $(seq 50); do
		ls -d /sys/block/bcache* >/dev/null 2>&1 || ls -d /sys/fs/bcache/*-*-*-*-* >/dev/null 2>&1 || break
		sleep 0.2
	done
	_settle
}

loops_detach() { # loop devices hold the dm devices below them: detach first
	local i
	losetup -D 2>/dev/null
	for i in $(seq 100); do
		ls /sys/block/loop*/loop/backing_file >/dev/null 2>&1 || return 0
		sleep 0.1
	done
}

teardown() {
	bcache_stop
	loops_detach
	cleanup_all >/dev/null 2>&1 || cleanup_all || fail "teardown failed"
	bench_load_modules
}

# Device-model description for the results.
bench_model_json() {
	cat <<JSON
{"hdd": "dm hddsim over zero-latency memory null_blk: 7200 rpm, 150 MB/s, avg seek 4 ms + half rotation 4.17 ms (~120 random IOPS), one request at a time",
 "ssd": "memory null_blk, completion 50 us, queue depth 64 (TCG floor ~1 ms per synchronous 4 KiB I/O)",
 "sched_hdd": "bare-HDD schedulers run on loop (direct I/O, hw_queue_depth=$(cat /sys/module/loop/parameters/hw_queue_depth 2>/dev/null || echo '?')) over hddsim",
 "note": "QEMU TCG: the SSD/HDD contrast is ~7x, not ~70x; compare ratios, not absolute figures"}
JSON
}
