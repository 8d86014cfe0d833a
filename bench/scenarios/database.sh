# shellcheck shell=bash
# Database beside a backup, with real software: PostgreSQL 15 under pgbench
# (TPC-B-like, 4 clients) on ext4 on the device under test. One pgbench run
# per repetition: WARM_S of warm-up, RUN_S alone, then an `ionice -c3` backup
# starts (tar of the live data directory to a file on the same file system,
# then fsync of it: a file-level base backup's I/O; not a consistent backup
# without pg_backup_start/stop, which does not matter for the I/O) and pgbench
# goes on RUN_S beside it; the backup runs to its end. pg_dump is not used:
# its reads are done by the server's backend, which ionice on pg_dump does
# not reach.
#
# The data set (pgbench scale 8 full, ~120 MiB of tables and indexes, 7x
# shared_buffers = 16MB, ~4x the 32 MiB SSD cache) is made on the host by
# database.prep and copied onto each configuration's fresh HDD model, so every
# configuration starts from the same bytes with a cold cache. The database's
# processes run in a cgroup with memory.max 96M (the backup in one with 64M):
# a server with less RAM than data, so reads reach the disk; without it the
# whole data set would sit in the guest's page cache.
#
# Configs: hdd_deadline, hdd_bfq (loop qd 1 over the HDD model with that
# scheduler), hdd_iocost (the cgroup v2 anchor: io.cost, io.weight 10000 : 1
# for the database's and the backup's cgroups; bench/lib.sh anchor_dev),
# hdd_ssdprio_sched (`cache off`), hdd_ssdprio (32 MiB cache, cold), both with
# the backup's cgroup named as an idle_cgroup (what an administrator does:
# ionice does not reach the backup's page-cache writes, which flusher threads
# write back); hdd_ssdprio_sched_ionice and hdd_ssdprio_ionice: ionice alone.
# An ssdprio config may end in +KEY=VALUE[+...] (table knobs:
# hdd_ssdprio_sched+idle_budget=10).
# Recorded per run: pgbench's per-transaction log (latency, completion time)
# and progress output, its summary TPS, the backup's start, end, exit status.
# A control run per repetition (DATABASE_CONTROL=1, the default in full
# runs): a second pgbench run, the same windows, with no backup: how much
# "beside" moves against "alone" without the backup (checkpoints, autovacuum,
# a cache still warming).
# title: Database beside a backup: PostgreSQL 15 pgbench TPS and latency alone vs beside an `ionice -c3` backup
# order: 110
# status: ready
# minutes: 50
# mem_mb: 1100

PGBIN=/usr/lib/postgresql/15/bin
if ((Q)); then
	RUN_S=12 WARM_S=6 HDD_MB=448
	# The smoke run checks that the scenario works, not a ratio: our
	# configuration alone.
	CONFIGS=${DATABASE_CONFIGS:-hdd_ssdprio_sched}
	CONTROL=${DATABASE_CONTROL:-0}
else
	RUN_S=25 WARM_S=10 HDD_MB=640
	CONFIGS=${DATABASE_CONFIGS:-hdd_ssdprio_sched hdd_deadline hdd_iocost hdd_ssdprio hdd_bfq}
	CONTROL=${DATABASE_CONTROL:-1}
fi
CLIENTS=4
# The backup must finish: one that has not after this long is killed (rc 137).
BACKUP_MAX_S=${DATABASE_BACKUP_MAX_S:-240}
CACHE_MB=32
DB_MEM=96M BACKUP_MEM=64M
# Made by bench/run on the host (database.prep): the newest image.
IMG=$(ls -t "$REPO"/build/bench/prep/database/pgdata-s*.ext4 2>/dev/null | head -1)
SCALE=${IMG##*-s}
SCALE=${SCALE%.ext4}
MNT=/mnt/db
CG=/sys/fs/cgroup

setup() { # CONFIG HDD: echoes the device to mount
	local ssd kv knobs=()
	# An ssdprio config may end in +KEY=VALUE[+...]: table knobs.
	if [[ $1 == hdd_ssdprio*+*=* ]]; then
		IFS=+ read -ra kv <<<"${1#*+}"
		for kv in "${kv[@]}"; do knobs+=("${kv%%=*}" "${kv#*=}"); done
	fi
	case ${1%%+*} in
	hdd_deadline) sched_dev "$2" mq-deadline ;;
	hdd_bfq) sched_dev "$2" bfq ;;
	hdd_iocost | hdd_bfq_cgroup) anchor_dev "$1" "$2" ;;
	hdd_ssdprio_sched | hdd_ssdprio | hdd_ssdprio_sched_ionice | hdd_ssdprio_ionice)
		ssd=$(ssd_dev ssd "$CACHE_MB")
		if [[ $1 == hdd_ssdprio_sched* ]]; then
			dev=$(ssdprio_dev ssdprio "$2" "$ssd" cache off "${knobs[@]}") || return 1
		else
			dev=$(ssdprio_dev ssdprio "$2" "$ssd" "${knobs[@]}") || return 1
		fi
		# The backup's cgroup is an idle_cgroup: its page-cache writes,
		# which flusher threads write back whatever ionice says, are idle
		# too. The _ionice variants leave it out (ionice alone).
		if [[ ${1%%+*} != *_ionice ]]; then
			dmsetup message ssdprio 0 idle_cgroup "$CG/ssdp_idle" || return 1
		fi
		echo "$dev" ;;
	*) return 1 ;;
	esac
}

# in_cg NAME CMD...: run CMD in cgroup ssdp_NAME.
in_cg() {
	local cg=$1
	shift
	bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG/ssdp_$cg" "$@"
}

pg_start() {
	in_cg normal setpriv --reuid=postgres --regid=postgres --init-groups \
		"$PGBIN/postgres" -D "$MNT/pgdata" >/tmp/pg.log 2>&1 &
	PG_PID=$!
	for _ in $(seq 120); do
		"$PGBIN/pg_isready" -q -h /tmp -U postgres && return 0
		kill -0 "$PG_PID" 2>/dev/null || break
		sleep 1
	done
	log "postgres did not start: $(tail -5 /tmp/pg.log | tr '"\n' "' ")"
	return 1
}

pg_stop() { # fast shutdown (PG_PID is in_cg's subshell, not the postmaster)
	setpriv --reuid=postgres --regid=postgres --init-groups \
		"$PGBIN/pg_ctl" -D "$MNT/pgdata" -m fast -w -t 120 stop >/dev/null ||
		setpriv --reuid=postgres --regid=postgres --init-groups \
			"$PGBIN/pg_ctl" -D "$MNT/pgdata" -m immediate -w -t 60 stop >/dev/null
	wait "$PG_PID" 2>/dev/null
	PG_PID=
}

# pgb_start NAME SECONDS: pgbench in the background, with a per-transaction
# log and per-second progress; returns once its clients are connected (the
# first progress line: connecting 4 clients takes seconds under TCG).
pgb_start() {
	rm -f /tmp/pgl_"$1".* /tmp/pgb_"$1".out
	in_cg normal "$PGBIN/pgbench" -h /tmp -U postgres -n -c "$CLIENTS" -j 2 -T "$2" -P 1 \
		-l --log-prefix=/tmp/pgl_"$1" postgres >/tmp/pgb_"$1".out 2>&1 &
	PGB_PID=$!
	for _ in $(seq 600); do
		grep -q '^progress:' /tmp/pgb_"$1".out 2>/dev/null && return 0
		kill -0 "$PGB_PID" 2>/dev/null || break
		sleep 0.5
	done
	log "pgbench $1 did not start: $(tail -3 /tmp/pgb_"$1".out | tr '"\n' "' ")"
	return 1
}
# pgb_wait NAME: sets TPS (pgbench's summary); its log in /tmp/pgl_NAME.
pgb_wait() {
	wait "$PGB_PID" ||
		{ log "pgbench $1 failed: $(tail -3 /tmp/pgb_"$1".out | tr '"\n' "' ")"; return 1; }
	cat /tmp/pgl_"$1".* >/tmp/pgl_"$1"
	TPS=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' /tmp/pgb_"$1".out | head -1)
}

# backup: the idle job; sets B_START, B_END (epoch s), B_RC.
backup_start() {
	rm -f "$MNT/backup.tar"
	sync
	B_START=$(date +%s.%N)
	# tar and the fsync as the direct children of timeout, so that a backup
	# over time is killed for real (it holds the mount otherwise).
	in_cg idle ionice -c3 bash -c 'timeout -s KILL "$1" tar -cf "$0/backup.tar" \
		--warning=no-file-changed --warning=no-file-removed --ignore-failed-read -C "$0" pgdata
		rc=$?
		((rc <= 1)) || exit $rc
		timeout -s KILL "$1" sync "$0/backup.tar"' "$MNT" "$BACKUP_MAX_S" &
	B_PID=$!
}
backup_wait() {
	B_RC=0
	wait "$B_PID" || B_RC=$?
	B_END=$(date +%s.%N)
	B_BYTES=$(stat -c %s "$MNT/backup.tar" 2>/dev/null || echo 0)
}

# With DATABASE_TRACE=1, while the backup runs: every second the dirty and
# writeback page counts, the backup file's size and (ssdprio configs) the
# target's status line (the scheduler's counters), and a blktrace of the
# device under test whose queue events name each bio's submitter (flusher
# kworkers, jbd2, postgres, tar) and its flags (M = REQ_META, F = FUA/flush).
trace_start() { # DEV
	T_PIDS=()
	((${DATABASE_TRACE:-0})) || return 0
	rm -rf /tmp/bt /tmp/samples
	mkdir -p /tmp/bt
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	if command -v blktrace >/dev/null && [[ -d /sys/kernel/debug/block ]]; then
		blktrace -d "$1" -a queue -D /tmp/bt -o dut >/tmp/bt/blktrace.out 2>&1 &
		T_PIDS+=($!)
	fi
	(
		while :; do
			printf '%s %s tar=%s |' "$(date +%s.%N)" \
				"$(awk '/^(Dirty|Writeback):/ { printf "%s%s ", $1, $2 }' /proc/meminfo)" \
				"$(stat -c %s "$MNT/backup.tar" 2>/dev/null || echo 0)"
			if [[ $config == hdd_ssdprio* ]]; then dmsetup status ssdprio | head -1; else echo; fi
			sleep 1
		done
	) >/tmp/samples 2>&1 &
	T_PIDS+=($!)
}
trace_stop() { # keeps the samples and the parsed trace as CONFIG-REP.*
	local p
	((${#T_PIDS[@]})) || return 0
	# SIGINT makes blktrace write out its buffers; the sampler takes TERM
	# (a background subshell ignores SIGINT).
	for p in "${T_PIDS[@]}"; do kill -INT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	for p in "${T_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	T_PIDS=()
	keep /tmp/samples "$config-$rep.samples" >/dev/null
	if compgen -G '/tmp/bt/dut.blktrace.*' >/dev/null; then
		# time action RWBS sector blocks submitter
		blkparse -q -D /tmp/bt -i dut -f '%T.%9t %a %3d %S %n %C\n' >/tmp/bt/dut.txt 2>/dev/null
		keep /tmp/bt/dut.txt "$config-$rep.blktrace" >/dev/null
	fi
}

# copy_image HDD: the data set's image onto HDD (unwritten blocks of the
# memory null_blk read as zeroes: holes are skipped), grown to the device.
# Read over 9p once, then from the guest's /tmp.
copy_image() {
	if [[ ! -s /tmp/pgdata.ext4 ]]; then
		cp "$IMG" /tmp/pgdata.ext4.part && mv /tmp/pgdata.ext4.part /tmp/pgdata.ext4 || return 1
	fi
	dd if=/tmp/pgdata.ext4 of="$1" bs=1M conv=sparse,fsync status=none || return 1
	e2fsck -fy "$1" >/dev/null 2>&1
	(($? <= 1)) || return 1
	resize2fs "$1" >/dev/null 2>&1
}

if [[ -z $IMG ]]; then
	record_skip all "no data set image (bench/run runs bench/scenarios/database.prep on the host)"
	return 0 2>/dev/null || exit 0
fi
for config in $CONFIGS; do
	t0=$SECONDS
	hdd=$(hddsim_dev hdd "$HDD_MB")
	# The data set onto the bare HDD model, then the configuration on top.
	if ! copy_image "$hdd"; then
		record_skip "$config" "copying the data set failed"
		teardown
		continue
	fi
	log "database $config: data set copied ($((SECONDS - t0)) s)"
	mkdir -p "$CG/ssdp_normal" "$CG/ssdp_idle"
	if ! dev=$(setup "$config" "$hdd") || [[ ! -b $dev ]]; then
		record_skip "$config" "setup failed: $(dmesg | tail -2 | tr '"\n' "' ")"
		anchor_teardown
		teardown
		continue
	fi
	echo "$DB_MEM" >"$CG/ssdp_normal/memory.max"
	echo "$BACKUP_MEM" >"$CG/ssdp_idle/memory.max"
	mkdir -p "$MNT"
	modprobe ext4 2>/dev/null
	mount -o noatime "$dev" "$MNT" || fail "mount $dev"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	if ! pg_start; then
		record_skip "$config" "postgres did not start"
		umount "$MNT"
		anchor_teardown
		teardown
		continue
	fi
	log "database $config: postgres up ($((SECONDS - t0)) s)"
	for rep in $(seq "$REPS"); do
		# One pgbench run (one set of connections): WARM_S of warm-up, RUN_S
		# alone, then the backup starts and pgbench goes on for RUN_S beside
		# it. The report cuts the windows from the per-transaction log.
		pgb_start run $((WARM_S + 2 * RUN_S)) || break
		p_start=$(date +%s.%N)
		sleep $((WARM_S + RUN_S))
		trace_start "$dev"
		backup_start
		pgb_wait run || { backup_wait; trace_stop; break; }
		p_end=$(date +%s.%N)
		backup_wait
		trace_stop
		record "$config" run "$rep" tps="$TPS" warm_s="$WARM_S" run_s="$RUN_S" clients=$CLIENTS \
			scale="$SCALE" pgbench_start="$p_start" pgbench_end="$p_end" backup_start="$B_START" \
			backup_end="$B_END" backup_rc="$B_RC" backup_bytes="$B_BYTES" \
			log="$(keep /tmp/pgl_run "$config-$rep.log")" progress="$(keep /tmp/pgb_run.out "$config-$rep.progress")"
		log "database $config rep $rep: pgbench $TPS tps, backup beside it $(awk -v a="$B_START" -v b="$B_END" 'BEGIN { printf "%.1f", b - a }') s (rc $B_RC)"
		# The control: the same windows, no backup.
		if ((CONTROL)) && pgb_start ctl $((WARM_S + 2 * RUN_S)); then
			c_start=$(date +%s.%N)
			sleep $((WARM_S + RUN_S))
			c_mark=$(date +%s.%N)
			if pgb_wait ctl; then
				record "$config" control "$rep" tps="$TPS" warm_s="$WARM_S" run_s="$RUN_S" \
					clients=$CLIENTS scale="$SCALE" pgbench_start="$c_start" \
					pgbench_end="$(date +%s.%N)" mark="$c_mark" \
					log="$(keep /tmp/pgl_ctl "$config-$rep-control.log")"
				log "database $config rep $rep: control (no backup) pgbench $TPS tps"
			fi
		fi
		# The backup's own baseline (alone, the database idle): costs minutes
		# under TCG, so only when asked for (DATABASE_BACKUP_ALONE=1).
		if ((${DATABASE_BACKUP_ALONE:-0})); then
			backup_start
			backup_wait
			record "$config" backup_alone "$rep" start="$B_START" end="$B_END" rc="$B_RC" bytes="$B_BYTES"
		fi
	done
	extra=()
	[[ $config == hdd_ssdprio* ]] && extra+=(status="$(status_json ssdprio)")
	record "$config" done 0 wall_s=$((SECONDS - t0)) "${extra[@]}"
	pg_stop
	umount "$MNT" || { sleep 5; umount "$MNT"; } || fail "umount $MNT: $(fuser -vm "$MNT" 2>&1 | tr '"\n' "' ")"
	anchor_teardown
	teardown
done
rm -f /tmp/pgdata.ext4
