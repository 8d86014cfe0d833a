#!/bin/bash
# Power cut: QEMU is killed with SIGKILL
# while writes and eviction are going on; after a reboot the cache is loaded
# (no `format`) and every write that was durable before the kill must read
# back intact, through the cache and, after flush_dirty, from the origin alone.
#
# Boot 1 (fresh disks, `format`, evict_wait 20 so eviction runs in every
# quiet gap):
#   A. fio randwrite over [0, 96M) with crc32c verify headers, either sync=1
#      (O_DSYNC: every write is FUA + flush, durable when it completes) or
#      fsync=8 followed by an fsync of the device when fio stops. fio stops
#      after a random time (--trigger-timeout) and saves its verify state
#      (verify_state_save, into CRASH_STATE on the host): the number of writes
#      it issued and which had completed. fio 3.33 verifies only writes before
#      the last issued one, so every write it will check was durable.
#   B. all along, and until the kill: genio.py overwrites random 4 KiB blocks
#      of [128M, 136M) (half of them in its first 64 blocks) with generation
#      stamps, fsync every 1-16 writes and 10% RWF_DSYNC writes, with short
#      pauses, logging each acknowledged flush to CRASH_STATE.
#   Then crash_arm: the host kills QEMU CRASH_KILL_AFTER seconds later, during
#   B's writes and the eviction of A's dirty sets.
# Boot 2: create without `format` (recovery after an unclean shutdown):
#   meta_state recovered, every valid block dirty; then
#   fio verify_only + verify_state_load over A, genio check over B (each
#   sector: the newest durable generation or a newer issued one, never older,
#   never garbage); flush_dirty, remove, and the same two checks on the origin.
# CRASH_TARGET=linear runs the same over dm-linear (checks the test itself).
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

A_SIZE=96M
B_OFF=$((128 << 20))
B_BLOCKS=2048
EVICT=(evict_wait 20)

fio_mode=$(crash_rand 0 1) # 0: sync=1, 1: fsync=8 + fsync of the device at the end
fio_secs=$(crash_rand 2 5)
pause_ms=$(crash_rand 5 60)

fio_a() { # fio_a DEV ARGS...: job A, identical in both boots
	local dev=$1
	shift
	fio --name=pcA --filename="$dev" --offset=0 --size="$A_SIZE" --rw=randwrite \
		--bs=4k --direct=1 --ioengine=psync --iodepth=1 --verify=crc32c \
		--verify_fatal=1 --randrepeat=0 --randseed="$CRASH_SEED" \
		--aux-path="$CRASH_STATE" "$@"
}

genio() { # genio write|check DEV ARGS...
	local cmd=$1 dev=$2
	shift 2
	"${GENIO[@]}" "$cmd" "$dev" "$CRASH_STATE/genio.log" --offset "$B_OFF" \
		--blocks "$B_BLOCKS" --seed "$CRASH_SEED" --max-batch 16 "$@"
}

# check_all DEV WHAT: A and B must hold everything durable.
check_all() {
	local dev=$1 what=$2 out
	log "verify A on $what: fio verify_only, verify_state_load"
	out=$(fio_a "$dev" --verify_only=1 --verify_state_load=1 --verify_state_save=0 2>&1) ||
		fail "A on $what: fio verify failed: $(grep -E -m3 'verify|bad|err=' <<<"$out")"
	grep -E 'read:|issued rwts|Stop' <<<"$out" >&2 || true
	log "check B on $what: genio"
	genio check "$dev" >&2 || fail "B on $what: genio check found bad sectors (see above)"
}

# verify_boot: load after the last crash, check A and B through the target,
# flush_dirty, remove, check them on the origin alone.
verify_boot() {
	local dev
	dev=$(cx_load_after_crash "${EVICT[@]}" read_alloc on)
	log "genio log: $(grep -c '^F' "$CRASH_STATE/genio.log") flushes, last: $(grep '^F' "$CRASH_STATE/genio.log" | tail -1)"
	check_all "$dev" "$CX ($CRASH_TARGET)"
	if is_ssdprio; then
		cx_drain
		log "status after flush_dirty: $(cx_status)"
	fi
	dm_remove "$CX"
	if is_ssdprio; then check_all "$(vdisk hdd)" "the origin alone"; fi
}

# recrash_boot (recrash.sh, boot 2): load after the crash, B goes on (a new
# genio session), flush_dirty writes the recovered dirty blocks back, and the
# host kills QEMU again in the middle of it. (evict_wait stays long, so the
# writeback starts with flush_dirty, not before.)
recrash_boot() {
	local dev
	dev=$(cx_load_after_crash read_alloc on)
	genio write "$dev" --resume --dsync-pct 10 --pause-ms "$pause_ms" >"$CRASH_STATE/genio2.out" 2>&1 &
	wait_lines "$CRASH_STATE/genio.log" '^S' 2
	log "status before flush_dirty: $(cx_status)"
	if is_ssdprio; then
		dmsetup message "$CX" 0 flush_dirty || fail "flush_dirty failed"
	fi
	arm_and_wait
}

case $CRASH_BOOT in
1)
	log "round $CRASH_ROUND seed $CRASH_SEED: A $( ((fio_mode)) && echo fsync=8 || echo sync=1) for ${fio_secs}s, B pauses up to ${pause_ms} ms, kill ${CRASH_KILL_AFTER:-?}s after A"
	dev=$(cx_create format "${EVICT[@]}")
	assert_meta_state formatted
	genio write "$dev" --dsync-pct 10 --pause-ms "$pause_ms" >"$CRASH_STATE/genio.out" 2>&1 &
	genio_pid=$!
	wait_lines "$CRASH_STATE/genio.log" '^F' 1
	if ((fio_mode)); then sync_args=(--fsync=8); else sync_args=(--sync=1); fi
	out=$(fio_a "$dev" "${sync_args[@]}" --do_verify=0 --thinktime=20ms --thinktime_blocks=48 \
		--trigger-timeout="$fio_secs" 2>&1) || fail "fio A failed: $out"
	grep -Eq 'err= *[1-9]' <<<"$out" && fail "fio A: $(grep -E -m1 'err=' <<<"$out")"
	grep -E 'write:|issued rwts' <<<"$out" >&2
	log "fio A stopped"
	# fsync=8: the writes since fio's last fsync become durable here.
	((fio_mode)) && { sync "$dev" || fail "fsync of $dev failed"; }
	[[ -s $CRASH_STATE/local-pcA-0-verify.state ]] || fail "fio saved no verify state in $CRASH_STATE"
	kill -0 "$genio_pid" 2>/dev/null || fail "genio died: $(cat "$CRASH_STATE/genio.out")"
	log "status before the kill: $(cx_status)"
	arm_and_wait
	;;
2)
	if [[ ${PC_RECRASH:-0} == 1 ]]; then recrash_boot; else verify_boot; fi
	;;
3)
	verify_boot
	;;
esac
