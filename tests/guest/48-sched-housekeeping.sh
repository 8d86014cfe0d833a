#!/bin/bash
# File system housekeeping is no sign of normal activity. An idle task
# appending to a file on ext4 (commit=1) makes jbd2 commit every second:
# REQ_META writes of a kernel thread, normal (never held), counted in
# normal_housekeeping. With batch_mode_delay longer than the commit
# interval and nothing else on the device, batch mode must still come;
# counted as normal activity, the commits kept it away for good (an idle
# backup throttled by its own journal). A normal task's own fsync'd
# writes, by contrast, keep batch mode away.
# timeout: 400
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

cgroup_v2_setup
mkdir -p "$CG/hk_idle"

load_module
hdd=$(make_hdd hdd 256)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 6 cache off batch_mode_delay 3000 idle_cgroup $CG/hk_idle")
st() { status_get sp "$1"; }

mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dm" 128M || fail "mkfs.ext4"
mnt=/mnt/hk
mkdir -p "$mnt"
mount -t ext4 -o noatime,commit=1 "$dm" "$mnt" || fail "mount"
writer=
trap 'kill $writer 2>/dev/null; wait; umount "$mnt" 2>/dev/null' EXIT
sync

# sample SECONDS: sched_mode every 0.5 s; echoes how many samples said batch.
sample() {
	local end=$((SECONDS + $1)) n=0
	while ((SECONDS < end)); do
		[[ $(st sched_mode) == batch ]] && n=$((n + 1))
		sleep 0.5
	done
	echo "$n"
}

# The idle appender: a line every 0.2 s, in the idle cgroup and idle class.
bash -c 'echo $$ >"$1/cgroup.procs" && exec ionice -c3 bash -c "
	while :; do date +%s.%N >>\"\$0/idle.log\"; sleep 0.2; done" "$2"' _ "$CG/hk_idle" "$mnt" &
writer=$!
# Let the writer's first commits pass, then watch.
sleep 3
h0=$(st normal_housekeeping)
n0=$(($(st bios_normal) - h0))
batch=$(sample 12)
h1=$(st normal_housekeeping)
n1=$(($(st bios_normal) - h1))
log "idle appender: housekeeping +$((h1 - h0)), other normal +$((n1 - n0)), batch in $batch samples: $(dmsetup status sp)"
assert_ge $((h1 - h0)) 3 "jbd2's commits were counted as housekeeping"
assert_ge "$batch" 1 "batch mode came although the journal committed every second"
kill "$writer"
wait "$writer" 2>/dev/null
writer=

# A normal task's fsync'd writes, every 0.5 s, keep batch mode away (after
# the first one has ended it).
(
	end=$((SECONDS + 14))
	while ((SECONDS < end)); do
		dd if=/dev/zero of="$mnt/normal" bs=4k count=1 conv=fsync,notrunc status=none
		sleep 0.5
	done
) &
writer=$!
sleep 4
n0=$(($(st bios_normal) - $(st normal_housekeeping)))
batch=$(sample 8)
n1=$(($(st bios_normal) - $(st normal_housekeeping)))
log "normal writer: other normal +$((n1 - n0)), batch in $batch samples"
# At least one of its writes in the window (a loaded host may run the loop
# slower than every 0.5 s: it once managed 3 in the window, not 4).
assert_ge $((n1 - n0)) 1 "the normal task's writes were normal activity"
assert_eq "$batch" 0 "no batch mode beside a normal task's fsync'd writes"
wait "$writer"
writer=
umount "$mnt" || fail "umount"
dm_remove sp
rmdir "$CG/hk_idle" 2>/dev/null
log "ok"
