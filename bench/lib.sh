# shellcheck shell=bash
# Guest-side helpers for the bench scenarios (bench/scenarios/NAME.sh), sourced
# by bench/guest.sh after tests/guest/lib.sh. Scenarios use:
#   Q (1 under BENCH_QUICK), REPS, RAW (output dir), SCEN (current scenario)
#   hddsim_dev NAME SIZE_MB        HDD model (dm hddsim over a zero-latency null_blk)
#   ssd_dev NAME SIZE_MB           SSD: null_blk, 50 us, queue depth 64
#   ssdprio_dev NAME HDD SSD [k v...]  ssdprio over HDD with blank cache SSD (+ format)
#   sched_dev DEV SCHED            loop (direct I/O, queue depth 1) over DEV with
#                                  an I/O scheduler: a disk without NCQ under
#                                  mq-deadline/bfq (a dm device has no scheduler)
#   fio_sum FILE                   "read_MBps write_MBps read_iops write_iops runtime_s"
#   fio_lat FILE                   "mean_ms p99_ms" completion latency
#   bwlog_json FILE                fio bw log (--log_unix_epoch=1) -> [[s, MB/s], ...]
#   keep FILE NAME                 copy an artifact into RAW/files (echoes its JSON path)
#   status_json DM_NAME            dmsetup status key/values as a JSON object
#   bfio OUT ARGS...               fio, JSON into OUT, checked (exit status, err=)
#   record CONFIG WORKLOAD REP k=v...   append one raw JSON line for SCEN
#   teardown                       remove every device the scenario made

HDDSIM_KO=$REPO/tests/hddsim/dm-hddsim.ko

bench_load_modules() {
	local m
	load_module "$HDDSIM_KO"
	[[ -f $MODULE ]] && load_module "$MODULE"
	# Only what is missing: every exec costs under TCG.
	for m in dm_cache dm_cache_smq dm_writecache bcache bfq; do
		[[ -e /sys/module/$m ]] || modprobe "$m" 2>/dev/null
	done
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

# ssdprio_dev NAME ORIGIN CACHE [key value...]: an ssdprio device over ORIGIN with
# the blank CACHE; the table always carries the valueless flag `format` (a blank
# cache is refused without it once metadata is persistent). Echoes the device.
ssdprio_dev() {
	local name=$1 origin=$2 cache=$3
	shift 3
	dm_try_create "$name" "0 $(sectors "$origin") ssdprio $origin $cache $(($# + 1)) format $*"
}

hddsim_dev() { # NAME SIZE_MB [hddsim key value...]
	local name=$1 size=$2 back
	shift 2
	back=$(make_hdd "${name}_b" "$size" 0 64)
	dm_create "$name" "0 $(sectors "$back") hddsim $back $*"
	# /dev/mapper/NAME is a node of its own without udev: ask dm for dm-N.
	echo 1 2>/dev/null >"/sys/block/$(dmsetup info -c --noheadings -o blkdevname "$name")/queue/rotational"
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

# cgroup v2 anchors: what an administrator sets up today instead of ionice.
# The normal and the idle job each run in a cgroup of their own (fio's
# cgroup= option), with weights on the bare HDD model:
#   *_iocost      io.cost (mq-deadline below it): QoS on (latency targets
#                 of an HDD: reads 75 ms, writes 150 ms at p95) and a linear
#                 cost model of the HDD model (150 MB/s, ~120 random IOPS);
#                 io.weight 10000 (normal) : 1 (idle), the extremes allowed
#   *_bfq_cgroup  bfq with io.bfq.weight 1000 : 1, its extremes
# Debian's 6.1 and 6.12 kernels have io.cost but not io.latency.
ANCHOR_CG=/sys/fs/cgroup
anchor_dev() { # CONFIG HDD: echoes the loop device
	local config=$1 hdd=$2 loop majmin
	case $config in
	*_iocost) loop=$(sched_dev "$hdd" mq-deadline) ;;
	*_bfq_cgroup) loop=$(sched_dev "$hdd" bfq) ;;
	*) fail "anchor_dev: not an anchor config: $config" ;;
	esac
	mkdir -p "$ANCHOR_CG/ssdp_normal" "$ANCHOR_CG/ssdp_idle" || fail "mkdir cgroups"
	# A weight-1 cgroup's task may wait minutes for its share under these
	# anchors (io.cost held a backup's tar in D state for over 60 s): the
	# anchor doing as its weights say, on a stack without dm-ssdprio. The
	# hung-task report is for our stacks: 10 minutes while an anchor runs.
	echo 600 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
	if [[ $config == *_iocost ]]; then
		majmin=$(cat "/sys/block/${loop#/dev/}/dev")
		echo "$majmin enable=1 ctrl=user rpct=95.00 rlat=75000 wpct=95.00 wlat=150000 min=1.00 max=100.00" \
			>"$ANCHOR_CG/io.cost.qos" || fail "io.cost.qos"
		echo "$majmin ctrl=user model=linear rbps=150000000 rseqiops=1170 rrandiops=120 wbps=150000000 wseqiops=1170 wrandiops=120" \
			>"$ANCHOR_CG/io.cost.model" || fail "io.cost.model"
		echo "default 10000" >"$ANCHOR_CG/ssdp_normal/io.weight" || fail "io.weight"
		echo "default 1" >"$ANCHOR_CG/ssdp_idle/io.weight" || fail "io.weight"
	else
		echo "default 1000" >"$ANCHOR_CG/ssdp_normal/io.bfq.weight" || fail "io.bfq.weight"
		echo "default 1" >"$ANCHOR_CG/ssdp_idle/io.bfq.weight" || fail "io.bfq.weight"
	fi
	echo "$loop"
}
anchor_args() { # CONFIG normal|idle: fio's options for that job's cgroup
	case ${1%_aa} in
	*_iocost | *_bfq_cgroup) echo "--cgroup=ssdp_$2 --cgroup_nodelete=1" ;;
	esac
}
anchor_teardown() { # after fio has exited (the cgroups are empty)
	rmdir "$ANCHOR_CG/ssdp_normal" "$ANCHOR_CG/ssdp_idle" 2>/dev/null
	echo 60 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
	true
}

# cache_peer_dev CONFIG HDD_MB CACHE_MB [ssdprio args...]: a cache over a new
# HDD model and SSD; echoes the device to measure. CONFIG: ssdprio, dmcache
# (smq, writeback, 32 KiB blocks, metadata on an 8 MiB null_blk), writecache
# (dm-writecache, 4 KiB blocks), bcache (writeback, 2048 buckets),
# ssdprio-nolockout (ssdprio with lockout_clean off, to set lock-out
# cleaning's effect beside it), ssdprio-set2m (ssdprio with 2 MiB sets,
# set_size 512: the default before 4 MiB sets), ssdprio+KEY=VALUE[+...] (ssdprio
# with those table arguments, e.g. ssdprio+idle_batch_depth=4: a knob set beside
# the defaults in one boot). Returns 1 when the peer cannot be set up.
cache_peer_dev() {
	local config=$1 hdd_mb=$2 cache_mb=$3 hdd ssd meta
	shift 3
	case $config in
	ssdprio | ssdprio-nolockout | ssdprio-set2m | dmcache | writecache | bcache) ;;
	ssdprio+*=*) ;;
	raw_hdd) hddsim_dev hdd "$hdd_mb"; return ;;
	*) return 1 ;;
	esac
	[[ $config != bcache ]] || command -v make-bcache >/dev/null || return 1
	hdd=$(hddsim_dev hdd "$hdd_mb")
	ssd=$(ssd_dev ssd "$cache_mb")
	case $config in
	ssdprio) ssdprio_dev ssdprio "$hdd" "$ssd" "$@" ;;
	ssdprio-nolockout) ssdprio_dev ssdprio "$hdd" "$ssd" lockout_clean off "$@" ;;
	ssdprio-set2m) ssdprio_dev ssdprio "$hdd" "$ssd" set_size 512 "$@" ;;
	ssdprio+*)
		local kv knobs=()
		IFS=+ read -ra kv <<<"${config#ssdprio+}"
		for kv in "${kv[@]}"; do knobs+=("${kv%%=*}" "${kv#*=}"); done
		ssdprio_dev ssdprio "$hdd" "$ssd" "${knobs[@]}" "$@" ;;
	dmcache)
		meta=$(ssd_dev meta 8)
		dm_try_create dmcache "0 $(sectors "$hdd") cache $meta $ssd $hdd 64 1 writeback smq 0" ;;
	writecache)
		dm_try_create wcache "0 $(sectors "$hdd") writecache s $hdd $ssd 4096 0" ;;
	bcache) bcache_dev "$hdd" "$ssd" "$cache_mb" ;;
	esac
}

# peer_dev_or_skip CONFIG HDD_MB CACHE_MB [ssdprio args...]: cache_peer_dev's
# device, or CONFIG recorded as skipped (with the kernel's last words), its
# devices torn down, and status 1.
peer_dev_or_skip() {
	local dev
	if dev=$(cache_peer_dev "$@") && [[ -b $dev ]]; then
		echo "$dev"
		return 0
	fi
	record_skip "$1" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
	teardown
	return 1
}

# bcache_dev HDD SSD CACHE_MB: bcache in writeback mode over HDD with SSD as
# its cache; echoes /dev/bcacheN, or returns 1.
bcache_dev() {
	local hdd=$1 ssd=$2 cache_mb=$3 b
	command -v make-bcache >/dev/null || return 1
	# bcache wants >= 1024 buckets ("nbuckets is too small"): 2048 of them.
	make-bcache --bucket "$((cache_mb / 2))k" --writeback -B "$hdd" -C "$ssd" >/dev/null 2>&1 || return 1
	_settle
	# udev may have registered them already; errors then are harmless.
	echo "$ssd" >/sys/fs/bcache/register 2>/dev/null
	readlink -f "$hdd" >/sys/fs/bcache/register 2>/dev/null
	for _ in $(seq 100); do
		b=$(compgen -G '/sys/block/bcache*' | head -1)
		[[ -n $b && -e $b/bcache/state && $(<"$b/bcache/state") != "no cache" ]] && break
		sleep 0.1
	done
	[[ -n $b && $(<"$b/bcache/state") != "no cache" ]] || return 1
	echo writeback >"$b/bcache/cache_mode"
	_settle
	echo "/dev/$(basename "$b")"
}

bfio() { # OUT ARGS...
	local out=$1
	shift
	# From /tmp: fio writes JOB.postrun.txt files (exec_postrun) to its cwd.
	(cd /tmp && fio_run --output-format=json --output="$out" "$@" >/dev/null)
}

fio_sum() { # FILE [JOBNAME]: sums over jobs (or one job)
	jq -r --arg n "${2:-}" '[.jobs[] | select($n == "" or .jobname == $n)] as $j |
		"\(([$j[].read.bw_bytes] | add) / 1e6) \(([$j[].write.bw_bytes] | add) / 1e6) " +
		"\([$j[].read.iops] | add) \([$j[].write.iops] | add) \(([$j[].job_runtime] | max) / 1000)"' "$1"
}

# fio_lat FILE [JOBNAME]: "mean_ms p99_ms" of completion latency over reads
# and writes of all jobs (or one), the larger p99 of the two directions.
fio_lat() {
	jq -r --arg n "${2:-}" '[.jobs[] | select($n == "" or .jobname == $n) | .read, .write |
		select(.total_ios > 0) | .clat_ns] as $c |
		"\(([$c[].mean] | add) / ([$c | length, 1] | max) / 1e6) " +
		"\(([$c[].percentile["99.000000"] // 0] | max) / 1e6)"' "$1"
}

# bwlog_json FILE: a fio bandwidth log (written with --log_unix_epoch=1) as a
# JSON list of [unix seconds, MB/s].
bwlog_json() {
	# Reads and writes log separate lines with the same time: summed.
	awk -F', *' 'NF >= 2 { if ($1 != t && n) out(); t = $1; v += $2; n = 1 }
		function out() { printf "%s[%.3f, %.3f]", sep, t / 1000.0, v * 1024 / 1e6; sep = ", "; v = 0 }
		BEGIN { printf "[" }
		END { if (n) out(); print "]" }' "$1"
}

# keep FILE NAME: copy an artifact (fio log...) into the raw results; echoes the
# JSON string to record (path relative to the raw dir).
keep() {
	mkdir -p "$RAW/files"
	cp "$1" "$RAW/files/$SCEN-$2"
	echo "\"files/$SCEN-$2\""
}

# status_json DM_NAME: `dmsetup status` key/value pairs as a JSON object
# (numbers as numbers). DM_NAME "-": convert a status line from stdin.
status_json() {
	{ if [[ $1 == - ]]; then head -1; else dmsetup status "$1" | head -1; fi; } | awk '{
		printf "{"
		for (i = 4; i < NF; i += 2) {
			v = $(i + 1)
			if (v !~ /^-?[0-9]+(\.[0-9]+)?$/) v = "\"" v "\""
			printf "%s\"%s\": %s", sep, $i, v
			sep = ", "
		}
		print "}"
	}'
}

record() { # CONFIG WORKLOAD REP key=value... (value: JSON; empty = null)
	local config=$1 workload=$2 rep=$3 kv v line
	shift 3
	line="{\"scenario\": \"$SCEN\", \"config\": \"$config\", \"workload\": \"$workload\", \"rep\": $rep"
	for kv in "$@"; do
		v=${kv#*=}
		line+=", \"${kv%%=*}\": ${v:-null}"
	done
	echo "$line}" >>"$RAW/$SCEN.jsonl"
}

record_skip() { # CONFIG REASON
	echo "{\"scenario\": \"$SCEN\", \"config\": \"$1\", \"skipped\": \"$2\"}" >>"$RAW/$SCEN.jsonl"
	log "$SCEN: config $1 skipped: $2"
}

bcache_stop() {
	local b u
	compgen -G '/sys/fs/bcache/*-*-*-*-*' >/dev/null || compgen -G '/sys/block/bcache*' >/dev/null || return 0
	for b in /sys/block/bcache*/bcache/stop; do
		[[ -e $b ]] && echo 1 >"$b"
	done
	for u in /sys/fs/bcache/*-*-*-*-*/unregister; do
		[[ -e $u ]] && echo 1 >"$u"
	done
	for _ in $(seq 50); do
		compgen -G "/sys/block/bcache*" >/dev/null || compgen -G "/sys/fs/bcache/*-*-*-*-*" >/dev/null || break
		sleep 0.2
	done
	_settle
}

loops_detach() { # loop devices hold the dm devices below them: detach first
	compgen -G '/sys/block/loop*/loop/backing_file' >/dev/null || return 0
	losetup -D 2>/dev/null
	for _ in $(seq 100); do
		ls /sys/block/loop*/loop/backing_file >/dev/null 2>&1 || return 0
		sleep 0.1
	done
}

teardown() {
	bcache_stop
	loops_detach
	# Everything but our modules (cleanup_all would unload them: reloading
	# costs seconds under TCG and buys nothing between configurations).
	MODULE=/nonexistent SSDPRIO_MODULES='' cleanup_all >/dev/null 2>&1 ||
		MODULE=/nonexistent SSDPRIO_MODULES='' cleanup_all || fail "teardown failed"
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
