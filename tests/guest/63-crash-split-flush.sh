#!/bin/bash
# Power cuts where the origin and the SSD lose their volatile caches apart.
#
# 60-crash-logwrites logs both legs on ONE log-writes device, so a flush of
# either leg makes the other's completed writes durable too: an ordering
# that relies on an origin flush the module never sent (or an SSD flush)
# passes there.  Here one leg (LEG) is a log-writes device of its own and
# the other a dm-linear over a memory disk that keeps every completed write.
# While a stamped workload runs (eviction and writeback beside it: a cache
# smaller than the data, more metadata blocks than one commit chunk, so
# commits take several rounds), crash points are taken live, at random
# moments and right after quiet windows (writeback done):
#   1. suspend the other leg's linear: from then on nothing reaches it, and
#      every write it completed is in it (a legal crash state of that leg);
#   2. a log mark on the logged leg: replayed up to the mark, it holds what
#      its flushes and FUA writes made durable and nothing else (log-writes
#      logs a plain write only at the next flush): the logged leg lost its
#      whole volatile cache;
#   3. copy the other leg, resume it.
# No flush of the other leg can complete between 1 and 2, so the pair is a
# state a real power cut could leave.  Each crash point is then loaded
# without `format` (meta_state recovered) over a snapshot of the replay and
# a loop device on the copy, and every block must hold an acknowledged
# generation or a newer written one (tests/crash/logwrites/stampio.c check).
# The last crash point is also written back with flush_dirty and the origin
# checked alone; one more after the clean shutdown must load clean.
# LEG=origin catches a block called clean or free before the origin holds its
# data durably; LEG=cache a record written before the SSD holds the data it
# vouches for.
# Knobs: CRASH_SPLIT_LEGS ("origin cache"), CRASH_SPLIT_ROUNDS (12),
# CRASH_SPLIT_POINTS (3 at random moments; one more after every third
# round's quiet window).
# timeout: 1200
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/crash/logwrites/lwlib.sh
. "$REPO/tests/crash/logwrites/lwlib.sh"

LEGS=${CRASH_SPLIT_LEGS:-origin cache}
ROUNDS=${CRASH_SPLIT_ROUNDS:-12}
NCP=${CRASH_SPLIT_POINTS:-3}
REPLAY=$REPO/build/tools/replay-log
STAMP=$REPO/build/tools/stampio
[[ -x $REPLAY && -x $STAMP ]] || fail "$REPLAY or $STAMP missing: run 'make tools' on the host"

OMB=96                  # origin: NB stamped blocks
NB=$((OMB * 256))
CMB=72                  # cache: ~1100 sets of 64 KiB, ~36 metadata blocks
FEATS="write_policy writeback set_size 16 evict_wait 50"
RELOAD_FEATS="write_policy writeback set_size 16 evict_wait 50 throttle off"
SEED=$((RANDOM + 1))
SHM=/dev/shm/ssdp-split
OUTP=$RESULTS_DIR/${SSDPRIO_TEST:-63-crash-split-flush}

load_module
modprobe dm-log-writes || fail "no dm-log-writes"
modprobe dm-snapshot || fail "no dm-snapshot"
mkdir -p $SHM

lw_mark() { dmsetup message splw 0 mark "$1" || fail "log mark $1 failed"; }

# crash_point NAME: the other leg frozen, the logged leg marked, the copy.
crash_point() {
	local lk
	# One at a time: the workload's and the random ones.
	exec {lk}>/tmp/split.lock
	flock "$lk" || fail "flock"
	dmsetup suspend --noflush spleg || fail "suspending the other leg failed"
	lw_mark "$1"
	dd if="$FROZEN" of="$SHM/$1" bs=1M iflag=direct status=none ||
		fail "copying the other leg failed"
	dmsetup resume spleg || fail "resuming the other leg failed"
	exec {lk}>&-
}

# The crash points, at random moments of the workload.
crash_points() {
	local k
	for ((k = 1; k <= NCP; k++)); do
		sleep "$((RANDOM % 3 + 1)).$((RANDOM % 10))"
		[[ -e /tmp/split.done ]] && break
		crash_point "cp$k"
	done
}

workload() {
	local g mode
	for ((g = 1; g <= ROUNDS; g++)); do
		mode=fdatasync
		((g % 4 == 0)) && mode=dsync
		((g % 5 == 2)) && mode=none
		"$STAMP" write "$DUT" --blocks $NB --gen $g --seed $SEED --writes 600 \
			--sync $mode --reads 16 || fail "stampio write gen $g ($mode) failed"
		[[ $mode == none ]] || lw_mark "g$g"
		# Quiet windows longer than evict_wait: writeback, frames reused;
		# then a crash point: what the writeback called clean must be
		# durable on the origin before the records say so.
		if ((g % 3 == 0)); then
			sleep 1
			crash_point "q$g"
		fi
	done
	"$STAMP" write "$DUT" --blocks $NB --gen $g --seed $SEED --writes 600 --reads 64 ||
		fail "stampio write gen $g failed"
	lw_mark "g$g"
	WRITTEN=$g
}

# check_point LEG NAME ENTRY LAST: load the crash state, check it.
check_point() {
	local leg=$1 cp=$2 e=$3 last=$4 a out loop logged orig cache ms want
	replay_to "$e"
	# What the load and the checks write must not reach the replay.
	dm_create spsnap "0 $(sectors "$REP") snapshot $REP $COW N 8" >/dev/null
	loop=$(losetup -f --show "$SHM/$cp") || fail "losetup failed"
	logged=/dev/mapper/spsnap
	if [[ $leg == origin ]]; then orig=$logged cache=$loop; else orig=$loop cache=$logged; fi
	# shellcheck disable=SC2086
	set -- $RELOAD_FEATS
	dm_create sprec "0 $((OMB * 2048)) ssdprio $orig $cache $# $*" >/dev/null
	ms=$(status_get sprec meta_state)
	want=recovered
	[[ $cp == end ]] && want=clean
	[[ $ms == "$want" ]] || fail "leg $leg, crash point $cp: meta_state $ms, expected $want"
	a=$(acked "$e" g)
	out=$("$STAMP" check /dev/mapper/sprec --blocks $NB --seed $SEED --writes 600 --acked "$a" --written "$WRITTEN") || {
		echo "$out" >&2
		log "status: $(dmsetup status sprec)"
		fail "leg $leg, crash point $cp (log entry $e, acked gen $a): bad blocks (above)"
	}
	if [[ $last == 1 ]]; then
		# The recovered dirty state is complete: written back, the origin
		# alone passes the same check.
		dmsetup message sprec 0 flush_dirty || fail "flush_dirty failed"
		wait_status sprec dirty_blocks == 0 300
		dm_remove sprec
		out=$("$STAMP" check "$orig" --blocks $NB --seed $SEED --writes 600 --acked "$a" --written "$WRITTEN") || {
			echo "$out" >&2
			fail "leg $leg, crash point $cp: after flush_dirty the origin alone has bad blocks (above)"
		}
	else
		dm_remove sprec
	fi
	losetup -d "$loop"
	dm_remove spsnap
	rm -f "$SHM/$cp"
	CHECKED+="$cp:${a}g "
}

run_leg() {
	local leg=$1 o c lsize cp e st n t0=$SECONDS
	log "=== leg $leg logged apart (origin $OMB MiB, cache $CMB MiB, seed $SEED)"
	o=$(make_ssd spo $OMB 0)
	c=$(make_ssd spc $CMB 0)
	LOGDEV=$(make_ssd splog 1024 0)
	if [[ $leg == origin ]]; then
		lsize=$OMB FROZEN=$c
		dm_create splw "0 $(sectors "$o") log-writes $o $LOGDEV" >/dev/null
		dm_create spleg "0 $(sectors "$c") linear $c 0" >/dev/null
		ORIG=/dev/mapper/splw CACHE=/dev/mapper/spleg
	else
		lsize=$CMB FROZEN=$o
		dm_create splw "0 $(sectors "$c") log-writes $c $LOGDEV" >/dev/null
		dm_create spleg "0 $(sectors "$o") linear $o 0" >/dev/null
		ORIG=/dev/mapper/spleg CACHE=/dev/mapper/splw
	fi
	REP=$(make_ssd sprep $lsize 0)
	COW=$(make_ssd spcow $lsize 0)
	# shellcheck disable=SC2086
	set -- $FEATS
	DUT=$(dm_create spsp "0 $((OMB * 2048)) ssdprio $ORIG $CACHE $(($# + 1)) format $*")
	lw_mark start
	rm -f /tmp/split.done
	crash_points &
	local cpp=$!
	workload
	: >/tmp/split.done
	wait $cpp || fail "taking the crash points failed"
	log "workload done in $((SECONDS - t0)) s; live status: $(dmsetup status spsp)"
	# Readaheads refused by the suspended leg are no SSD fault.
	assert_eq "$(status_get spsp cache_mode)" normal "cache_mode after the crash points"
	assert_eq "$(status_get spsp ssd_read_errors)" 0 "ssd_read_errors"
	dm_remove spsp
	# The clean shutdown: the other leg is complete as it is.
	lw_mark end
	dd if="$FROZEN" of="$SHM/end" bs=1M iflag=direct status=none || fail "copying the other leg failed"
	st=$(dmsetup status splw)
	[[ $st != *logging_disabled* ]] || fail "log device full or failed: $st"
	dm_remove spleg
	dm_remove splw
	"$REPLAY" --log "$LOGDEV" --list >/tmp/split.list || fail "replay-log --list failed"
	lw_load_marks /tmp/split.list
	n=$(grep -c FLUSH /tmp/split.list || true)
	log "log: $(grep -vc '^#' /tmp/split.list) entries, $n with a flush, ${#MARK_AT[@]} marks"
	REPLAYED=-1 CHECKED=
	local -a cps=()
	for cp in $(cd $SHM && ls -1 | grep -v '^end$'); do cps+=("$cp"); done
	((${#cps[@]} >= 1)) || fail "no crash point was taken during the workload"
	# In log order (the replay only goes forward).
	mapfile -t cps < <(for cp in "${cps[@]}"; do
		e=$(mark_entry "$cp")
		[[ -n $e ]] || fail "no mark $cp in the log"
		echo "$e $cp"
	done | sort -n)
	for cp in "${cps[@]}"; do
		check_point "$leg" "${cp#* }" "${cp%% *}" "$([[ $cp == "${cps[-1]}" ]] && echo 1 || echo 0)"
	done
	check_point "$leg" end "$(mark_entry end)" 0
	log "leg $leg: ${#cps[@]} crash points and the clean shutdown consistent ($CHECKED; $((SECONDS - t0)) s)"
	remove_nullb sprep
	remove_nullb spcow
	remove_nullb spo
	remove_nullb spc
	remove_nullb splog
}

for leg in $LEGS; do
	case $leg in origin | cache) ;; *) fail "CRASH_SPLIT_LEGS: origin or cache, not '$leg'" ;; esac
	run_leg "$leg"
done
rm -rf $SHM
log "ok (legs: $LEGS)"
