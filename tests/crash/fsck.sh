#!/bin/bash
# ext4 on the target, killed while files are being written and fsync'ed;
# after the reboot and the load (no `format`): the journal replays, e2fsck -fn
# is clean, every file whose fsync returned has its content.
#
# Boot 1 (fresh disks, `format`, evict_wait 20): mkfs.ext4, mount; fsio.py
#   creates, replaces (write a temporary file, fsync, rename, fsync the
#   directory) and deletes files, logging each operation once durable; a fio
#   job overwrites a preallocated file with fsync=8 beside it (cache churn,
#   extent conversions in the journal). Once both are going, a random 3-8 s
#   later, crash_arm: the host kills QEMU CRASH_KILL_AFTER seconds later,
#   with both still writing.
# Boot 2: create without `format`; mount (journal recovery), fsio check,
#   umount, e2fsck -fn; then flush_dirty, remove, and e2fsck -fn plus the
#   fsio check on the origin alone.
#
# targets: ssdprio linear
# boots: 2
# crash-boots: 1
# kill-after: 0.3-4
# rounds: 1
# disks: hdd:256M ssd:64M
# timeout: 420
# shellcheck source=tests/crash/lib.sh
. "$(dirname "$0")/lib.sh"

EVICT=(evict_wait 20)
MNT=/mnt/cx
run_secs=$(crash_rand 3 8)

fsio() { # fsio write|check ARGS...
	local cmd=$1
	shift
	"${FSIO[@]}" "$cmd" "$MNT/files" "$CRASH_STATE/fsio.log" --seed "$CRASH_SEED" "$@"
}

# check_fs DEV WHAT: journal replayed by a mount, files checked, fsck clean.
check_fs() {
	local dev=$1 what=$2 out
	mkdir -p "$MNT"
	mount -t ext4 "$dev" "$MNT" || fail "mount $what failed"
	log "mounted $what: $(dmesg | grep -E 'EXT4-fs .*(recovery|mounted)' | tail -2 | tr '\n' ' ')"
	fsio check >&2 || { umount "$MNT"; fail "files on $what: fsio check found problems (see above)"; }
	umount "$MNT" || fail "umount $what"
	out=$(e2fsck -fn "$dev" 2>&1) || fail "e2fsck -fn $what: status $?: $(tail -15 <<<"$out")"
	log "e2fsck -fn $what: clean ($(tail -1 <<<"$out"))"
}

case $CRASH_BOOT in
1)
	log "round $CRASH_ROUND seed $CRASH_SEED: writers run ${run_secs}s, then kill ${CRASH_KILL_AFTER:-?}s after crash_arm"
	dev=$(cx_create format "${EVICT[@]}")
	assert_meta_state formatted
	mkfs.ext4 -q -F "$dev" || fail "mkfs.ext4"
	mkdir -p "$MNT"
	mount -t ext4 "$dev" "$MNT" || fail "mount"
	mkdir "$MNT/files"
	sync -f "$MNT" || fail "syncfs"
	fsio write --pause-ms 30 >"$CRASH_STATE/fsio.out" 2>&1 &
	fsio_pid=$!
	fio --name=noise --directory="$MNT" --filename=noise --size=32M --rw=randwrite --bs=16k \
		--ioengine=psync --fsync=8 --time_based --runtime=3600 --thinktime=20ms \
		--thinktime_blocks=8 --randrepeat=0 --randseed="$CRASH_SEED" \
		>"$CRASH_STATE/fio-noise.out" 2>&1 &
	fio_pid=$!
	wait_lines "$CRASH_STATE/fsio.log" '^D' 5
	for _ in $(seq 600); do [[ -s $MNT/noise ]] && break; sleep 0.2; done
	[[ -s $MNT/noise ]] || fail "fio made no $MNT/noise in 120 s: $(cat "$CRASH_STATE/fio-noise.out")"
	log "writers going"
	sleep "$run_secs"
	kill -0 "$fsio_pid" 2>/dev/null || fail "fsio died: $(cat "$CRASH_STATE/fsio.out")"
	kill -0 "$fio_pid" 2>/dev/null || fail "fio died: $(cat "$CRASH_STATE/fio-noise.out")"
	log "$(grep -c '^D' "$CRASH_STATE/fsio.log") file operations done; status: $(cx_status)"
	arm_and_wait
	;;
2)
	dev=$(cx_load_after_crash "${EVICT[@]}" read_alloc on)
	check_fs "$dev" "$CX ($CRASH_TARGET)"
	if is_ssdprio; then
		cx_drain
		dm_remove "$CX"
		check_fs "$(vdisk hdd)" "the origin alone"
	else
		dm_remove "$CX"
	fi
	;;
esac
