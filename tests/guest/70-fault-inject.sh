#!/bin/bash
# Faults under either leg: each leg is a dm-linear that is reloaded, at
# random moments while stamped writes and checked reads run over a working
# set 3x the cache (eviction and promotion running), into dm-flakey
# (error_writes: writes fail; no feature: all I/O fails) or a table with a
# dm-error segment. tests/guest/faultio.py keeps a model of what was
# acknowledged: an acknowledged write reads back at its generation (or a
# later attempted one), a failed write leaves the old or the new data,
# never another sector's nor garbage. After the fault clears, flush_dirty
# must finish and the origin alone must hold the same.
#
# dm-flakey's drop_writes is not used: a device that acknowledges writes and
# loses them defeats any cache, and nothing above it can notice.
#
# Phases: (A) random faults on both legs; (B) origin writes failing during
# flush_dirty: the writeback fails, is reported and finishes once the fault
# clears; (C) cache-leg read errors on clean cached blocks: the reader sees
# no error (the origin's copy is served); (D) cache-leg write errors with
# dirty data: writes may fail, but no older data of an acknowledged write
# may become visible.
#
# SSDP_FAULT_SECS (default 20): length of the random-fault run;
# SSDP_FAULT_SEED: repeat one run (the seed is printed).
# timeout: 1200
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

FIO=$REPO/tests/guest/faultio.py
SECS=${SSDP_FAULT_SECS:-20}
SEED=${SSDP_FAULT_SEED:-$((($(date +%s) ^ $$) % 100000))}
RANDOM=$SEED
log "seed $SEED (SSDP_FAULT_SEED=$SEED repeats this run), fault run ${SECS}s"
STATE=/tmp/fault.model
failures=()

# A known defect must not hide the next phase's findings: collect, fail at the end.
soft_fail() {
	echo "FAIL: $*" >&2
	failures+=("$*")
}

load_module
hdd=$(make_hdd hdd 64 100000 4)
ssd=$(make_ssd ssd 16)
hsz=$(sectors "$hdd")
ssz=$(sectors "$ssd")
leg ohdd "$hdd" linear
leg ossd "$ssd" linear
O=/dev/mapper/ohdd C=/dev/mapper/ossd
WS_SECTORS=$((48 * 2048)) # 3x the ~15 MiB of cache sets

# --- legs ------------------------------------------------------------------------
leg_dev() { if [[ $1 == ohdd ]]; then echo "$hdd"; else echo "$ssd"; fi; }
leg_size() { if [[ $1 == ohdd ]]; then echo "$hsz"; else echo "$ssz"; fi; }
leg_ok() { leg "$1" "$(leg_dev "$1")" linear; }
leg_error_writes() { leg "$1" "$(leg_dev "$1")" writes; }
leg_all_errors() { leg "$1" "$(leg_dev "$1")" all; }
leg_error_range() { # leg_error_range NAME START LEN: dm-error over [START, START+LEN)
	local n=$1 s=$2 l=$3 dev sz t=""
	dev=$(leg_dev "$n") sz=$(leg_size "$n")
	((s > 0)) && t+="0 $s linear $dev 0"$'\n'
	t+="$s $l error"
	((s + l < sz)) && t+=$'\n'"$((s + l)) $((sz - s - l)) linear $dev $((s + l))"
	leg_load "$n" "$t"
}

# --- status ------------------------------------------------------------------------
st_opt() { # st_opt KEY: the value, or empty if the status has no such key
	dmsetup status sp | awk -v k="$1" '{ for (i = 4; i < NF; i += 2) if ($i == k) print $(i + 1) }'
}
# counter_ge KEY MIN MSG: assert when the engine reports KEY; log when it does not.
counter_ge() {
	local v
	v=$(st_opt "$1")
	if [[ -z $v ]]; then
		log "status has no '$1': assertion '$3' skipped"
		return 0
	fi
	_is_number "$v" || { soft_fail "$1 is not a number: $v"; return 0; }
	((v >= $2)) || soft_fail "$3: $1 = $v, expected >= $2"
}
counter_eq() {
	local v
	v=$(st_opt "$1")
	if [[ -z $v ]]; then
		log "status has no '$1': assertion '$3' skipped"
		return 0
	fi
	[[ $v == "$2" ]] || soft_fail "$3: $1 = $v, expected $2"
}
errors_sum() { # the legs' error counters reported by the engine, or empty
	local k v sum=0 any=0
	for k in "$@"; do
		v=$(st_opt "$k")
		[[ -n $v ]] && any=1 && sum=$((sum + v))
	done
	((any)) && echo "$sum"
}

# --- the model -----------------------------------------------------------------------
json_get() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# check DEV LABEL [--strict-reads]: every sector as the model allows; the
# JSON summary is in $last
check() {
	local dev=$1 label=$2 rc=0
	shift 2
	python3 "$FIO" check "$dev" "$STATE" --label "$label" "$@" >/tmp/check.out || rc=$?
	last=$(tail -1 /tmp/check.out)
	log "$label: $last"
	((rc == 0)) || soft_fail "$label: the data does not match what was acknowledged ($last)"
	return 0
}

# run SECS SEED ARGS...: the writer/reader, in the background; $wpid
start_run() {
	local secs=$1 seed=$2
	shift 2
	python3 "$FIO" run "$D" "$STATE" --secs "$secs" --seed "$seed" "$@" >/tmp/run.out 2>/tmp/run.err &
	wpid=$!
}
end_run() { # end_run LABEL: wait for the writer, report its findings
	local rc=0
	wait "$wpid" || rc=$?
	last=$(tail -1 /tmp/run.out)
	log "$1: $last"
	if [[ -s /tmp/run.err ]]; then head -20 /tmp/run.err >&2; fi
	((rc == 0)) || soft_fail "$1: reads during the run broke the model (rc $rc, $last)"
}

# A fresh ssdprio over the legs (the origin holds the model's data): wipe
# the cache's superblock, format.
D=/dev/mapper/sp
sp_create() { # sp_create EXTRA-FEATURES (count included by the caller)
	dd if=/dev/zero of=$C bs=4k count=1 oflag=direct status=none || fail "wiping the cache failed"
	dm_create sp "0 $hsz ssdprio $O $C $1" >/dev/null
}
# flush_and_retire LABEL: flush_dirty must finish (hang guard, not a timing
# assertion), then the device is removed and the origin alone checked.
flush_and_retire() {
	local label=$1 end
	dmsetup message sp 0 flush_dirty || soft_fail "$label: flush_dirty rejected"
	end=$((SECONDS + 300))
	while (($(status_get sp dirty_blocks) > 0)); do
		if ((SECONDS > end)); then
			soft_fail "$label: flush_dirty did not finish in 300 s with no fault: $(dmsetup status sp)"
			break
		fi
		sleep 0.5
	done
	log "$label: after flush_dirty: $(dmsetup status sp)"
	dm_remove sp
	local before=${#failures[@]}
	check "$O" "$label: origin alone" --strict-reads
	# A phase that lost data must not make the next ones fail for it: the
	# origin is rewritten and the model follows.
	if ((${#failures[@]} > before)); then
		log "$label: rewriting the origin so the next phase starts from a known state"
		python3 "$FIO" fill "$O" "$STATE" --state-in --sectors "$WS_SECTORS" >/dev/null ||
			fail "refill failed"
	fi
}

# The origin holds generation-stamped data over the whole working set.
python3 "$FIO" fill "$O" "$STATE" --sectors "$WS_SECTORS" >/dev/null || fail "fill failed"

# --- A: random faults on both legs during writes, reads, eviction ------------------------
log "=== A: random faults on both legs, ${SECS}s"
sp_create "9 format set_size 16 evict_wait 50 idle_dispatch_interval 5 batch_mode_delay 150"
start_run "$SECS" "$SEED" --pause 0.03 --partial 0.05 --read-frac 0.3
faults=0
while kill -0 "$wpid" 2>/dev/null; do
	sleep "$((RANDOM % 3)).$((RANDOM % 10))"
	kill -0 "$wpid" 2>/dev/null || break
	leg=$([[ $((RANDOM % 2)) == 0 ]] && echo ohdd || echo ossd)
	case $((RANDOM % 3)) in
	0) kind=error_writes && leg_error_writes $leg ;;
	1) kind=all_errors && leg_all_errors $leg ;;
	2)
		sz=$(leg_size $leg)
		s=$(((RANDOM * 32768 + RANDOM) % (sz - 4096) / 8 * 8))
		kind="error [$s, +4096)" && leg_error_range $leg "$s" 4096
		;;
	esac
	faults=$((faults + 1))
	hold="$((RANDOM % 3)).$((RANDOM % 10))"
	log "fault $faults: $leg $kind for ${hold}s"
	sleep "$hold"
	leg_ok $leg
done
end_run "A: run with faults"
log "A: $faults faults; status: $(dmsetup status sp)"
user_werr=$(json_get "$last" write_errors)
user_rerr=$(json_get "$last" read_errors)
# Every error the user saw came from a leg's error, which the engine counts.
legs_werr=$(errors_sum ssd_write_errors origin_write_errors)
legs_rerr=$(errors_sum ssd_read_errors origin_read_errors)
if [[ -n $legs_werr ]]; then
	((legs_werr >= user_werr)) || soft_fail "A: $user_werr write errors reached the user, the legs' counters say $legs_werr"
	((legs_rerr >= user_rerr)) || soft_fail "A: $user_rerr read errors reached the user, the legs' counters say $legs_rerr"
	((faults == 0 || legs_werr + legs_rerr > 0)) || log "A: no leg error counted (no I/O met a fault?)"
else
	log "status has no leg error counters: A's counter assertions skipped"
fi
# The fault is gone: everything reads back without error, through the cache.
check "$D" "A: through ssdprio after the faults" --strict-reads
flush_and_retire "A"

# --- B: the origin fails writes while flush_dirty writes back ------------------------------
log "=== B: origin write errors during writeback"
sp_create "5 format set_size 16 evict_wait 3600000"
start_run 600 "$((SEED + 1))" --ops 3000 --partial 0.05 --read-frac 0 --max-blocks 4 \
	--hi-block $((12 * 256))
end_run "B: dirty writes"
dirty=$(status_get sp dirty_blocks)
assert_ge "$dirty" 1 "B: dirty blocks before the fault"
leg_error_writes ohdd
dmsetup message sp 0 flush_dirty || soft_fail "B: flush_dirty rejected while the origin fails"
sleep 5
log "B: origin failing for 5 s after flush_dirty: $(dmsetup status sp)"
assert_ge "$(status_get sp dirty_blocks)" 1 "B: dirty blocks while every origin write fails"
counter_ge writeback_errors 1 "B: failed writebacks are reported"
# Writeback I/O is ours, not the user's: counted as writeback_errors only.
counter_ge failed_sets 1 "B: sets whose writeback failed are held aside"
wait_status sp flush_state == failed 300
# Reads through the cache still serve what was acknowledged.
check "$D" "B: through ssdprio while the origin fails writes" --strict-reads
leg_ok ohdd
flush_and_retire "B"

# --- C: the cache fails reads of clean cached blocks --------------------------------------
log "=== C: cache read errors on clean blocks"
sp_create "5 format set_size 16 seq_cutoff 0"
ds=$(cache_data_start "$C")
# Cache the first 12 MiB: read twice (the first read promotes), then wait
# for the promotions to land.
promote() {
	for _ in 1 2; do
		dd if="$D" of=/dev/null bs=64k count=192 iflag=direct status=none || fail "C: reading to promote failed"
		sleep 1
	done
	wait_status sp valid_blocks ">=" 1 60
}
promote
valid=$(status_get sp valid_blocks)
assert_eq "$(status_get sp dirty_blocks)" 0 "C: cached blocks are clean"
log "C: $valid clean blocks cached; data area from sector $ds"
h0=$(status_get sp read_hits)
# No promotion from here on: a promotion's write into the failing range
# degrades the cache (as it must), and then no read reaches the SSD, which
# is what this part is about.
dmsetup message sp 0 read_alloc off || fail "C: read_alloc off"
# Every cache data read fails; the metadata area still works.
leg_error_range ossd "$ds" $((ssz - ds))
check "$D" "C: through ssdprio, cache data reads failing" --strict-reads
counter_ge read_fallbacks 1 "C: clean SSD read errors retried from the origin"
counter_ge ssd_read_errors 1 "C: SSD read errors are counted"
counter_eq origin_read_errors 0 "C: no origin read error"
log "C: read_hits $h0 -> $(status_get sp read_hits); $(dmsetup status sp)"
# The whole cache device failing (metadata too): reads still served. The
# blocks are cached again first: a failed read may have dropped them.
leg_ok ossd
dmsetup message sp 0 read_alloc on || fail "C: read_alloc on"
promote
log "C: $(status_get sp valid_blocks) valid blocks cached again"
leg_all_errors ossd
check "$D" "C: through ssdprio, the whole cache failing" --strict-reads
leg_ok ossd
flush_and_retire "C"

# --- D: the cache fails writes while it holds dirty data ---------------------------------
log "=== D: cache write errors with dirty data"
sp_create "5 format set_size 16 evict_wait 3600000"
start_run 600 "$((SEED + 2))" --ops 3000 --partial 0.1 --read-frac 0 --max-blocks 4 \
	--hi-block $((12 * 256))
end_run "D: dirty writes"
assert_ge "$(status_get sp dirty_blocks)" 1 "D: dirty blocks before the fault"
leg_error_writes ossd
# Full and 512-byte writes into the dirty blocks while the SSD fails writes,
# reads checked as they go: a failed write must not uncover older data.
start_run 600 "$((SEED + 3))" --ops 1500 --partial 0.4 --read-frac 0.4 --max-blocks 2 \
	--hi-block $((12 * 256))
end_run "D: writes into dirty blocks while the cache fails writes"
log "D: status: $(dmsetup status sp)"
counter_ge ssd_write_errors 1 "D: SSD write errors are counted"
counter_eq cache_mode degraded "D: the cache reports degraded mode after write errors"
check "$D" "D: through ssdprio while the cache fails writes"
leg_ok ossd
check "$D" "D: through ssdprio after the fault" --strict-reads
flush_and_retire "D"

dm_remove ohdd
dm_remove ossd
if ((${#failures[@]})); then
	printf 'failed: %s\n' "${failures[@]}" >&2
	fail "${#failures[@]} assertion(s) failed"
fi
log "ok"
