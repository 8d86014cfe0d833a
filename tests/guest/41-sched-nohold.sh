#!/bin/bash
# REQ_FUA / REQ_PREFLUSH bios from an idle task are never held: under a
# continuous normal load (which keeps plain idle bios waiting), an
# ionice -c3 O_DIRECT|O_SYNC writer (FUA writes) and an fsync (flush)
# complete promptly, while a plain ionice -c3 direct write stays queued
# until the normal load ends. Hang guards only; behaviour via counters.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 128)
# The SSD gets a volatile write cache (null_blk cache_size), so the dm
# device supports flush/FUA; without one the block layer strips REQ_FUA
# and REQ_PREFLUSH before .map and there is nothing to test.
_nullb_setup
d=$NULLB_CONFIGFS/ssd
mkdir "$d" || fail "mkdir $d"
for kv in size:64 blocksize:512 memory_backed:1 irqmode:2 completion_nsec:50000 \
	hw_queue_depth:64 cache_size:16 power:1; do
	echo "${kv#*:}" >"$d/${kv%%:*}" || fail "null_blk ssd: ${kv%%:*}"
done
for _ in $(seq 100); do
	[[ -b /dev/ssd ]] && break
	sleep 0.1
done
ssd=/dev/ssd
len=$(sectors "$hdd")
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 2 cache off")
[[ $(cat "/sys/block/$(basename "$(readlink -f "$dm")")/queue/fua") == 1 ]] ||
	skip "the dm device does not support FUA"
st() { status_get sp "$1"; }

# Continuous normal load: 4 random reads in flight, never a quiet gap.
fio --name=normal --filename="$dm" --rw=randread --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=4 --size=64M --runtime=120 --time_based \
	--output=/tmp/normal.out &
normal=$!
trap 'kill $normal 2>/dev/null; wait' EXIT
# fio starts slowly under TCG: wait until the normal load is running.
n0=$(st bios_normal)
for _ in $(seq 150); do
	(($(st bios_normal) >= n0 + 50)) && break
	sleep 0.2
done
(($(st bios_normal) >= n0 + 50)) || fail "the normal load did not start"

n0=$(st bios_normal)
i0=$(st bios_idle)
# FUA: O_DIRECT|O_DSYNC block device writes carry REQ_FUA.
timeout 60 ionice -c3 dd if=/dev/urandom of="$dm" bs=4k count=20 seek=1000 \
	oflag=direct,dsync status=none ||
	fail "idle FUA writes did not complete within 60 s (held?)"
n1=$(st bios_normal)
i1=$(st bios_idle)
log "FUA writes: bios_normal +$((n1 - n0)), bios_idle +$((i1 - i0))"
assert_eq $((i1 - i0)) 0 "FUA bios from an idle task are not idle"
# Flush: fsync of the (clean) block device from an idle task.
timeout 60 ionice -c3 python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.fsync(fd)
os.close(fd)' "$dm" || fail "idle fsync (flush) did not complete within 60 s"
# A plain idle direct write is held while the normal load runs.
# (200 writes: at most one per 200 ms gets out, even if a stalled TCG guest
# gives it a quiet window now and then.)
ionice -c3 dd if=/dev/zero of="$dm" bs=4k count=200 seek=20000 oflag=direct \
	status=none &
plain=$!
q=0
for _ in $(seq 25); do
	v=$(st queued_idle)
	((v > q)) && q=$v
	((q >= 1)) && break
	sleep 0.2
done
assert_ge "$q" 1 "a plain idle write waits under normal load"
kill -0 "$plain" 2>/dev/null || fail "the plain idle writes were not held"

kill -0 "$plain" 2>/dev/null || fail "the plain idle writes were not held"

kill "$normal"
wait "$normal" 2>/dev/null
trap - EXIT
# Normal load gone: the held write goes out (throttled, then batch mode).
wait_exit "$plain" 60 ||
	fail "held idle write never completed within 60 s after the normal load stopped"
wait "$plain" || fail "the held idle write failed"
assert_eq "$(st queued_idle)" 0 "nothing left queued"
dm_remove sp
log "ok"
