#!/bin/bash
# No priority inversion behind our own background work: a writeback holds
# its set exclusively while its origin writes wait in the idle queue; a
# normal write to that set waits for the writeback.  With normal I/O
# pending all the time and an idle interval of an hour, the idle queue
# never moves by itself: the write completes only because background I/O
# a normal bio waits for is released at once (status idle_boosted).
# timeout: 600
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 256)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 11 format evict_wait 3600000 read_alloc off seq_cutoff 0 idle_dispatch_interval 3600000 batch_mode_delay 3600000")
st() { status_get sp "$1"; }

head -c 65536 /dev/urandom >/tmp/a
head -c 4096 /dev/urandom >/tmp/b
dd if=/tmp/a of="$dm" bs=64k count=1 oflag=direct status=none || fail "write set 0"
assert_eq "$(st dirty_blocks)" 16 "64 KiB dirty in set 0"

# A normal reader of uncached data keeps normal I/O pending on the origin.
fio --name=normal --filename="$dm" --rw=randread --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=4 --offset=64M --size=192M \
	--runtime=400 --time_based --randrepeat=0 --output=/tmp/normal.out &
reader=$!
trap 'kill $reader 2>/dev/null; wait' EXIT
wait_status sp bios_normal -ge 50 120

# One idle bio goes out per idle_dispatch_interval, whenever normal I/O
# leaves a gap (a slow guest CPU leaves some): spend this hour's one now.
ionice -c3 dd if="$dm" of=/dev/null bs=4k count=1 skip=40000 iflag=direct status=none
wait_status sp idle_dispatched -ge 1 60
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp writeback_sets -ge 1 60
wait_status sp queued_idle -ge 1 60
log "writeback held in the idle queue: $(dmsetup status sp)"

# The normal write to the set under writeback: deferred, then it must
# complete while the reader still runs (not when normal I/O stops).
dd if=/tmp/b of="$dm" bs=4k seek=32 count=1 oflag=direct status=none &
writer=$!
wait_exit "$writer" 300 || fail "a normal write waited for idle-class writeback: $(dmsetup status sp)"
wait "$writer" || fail "the deferred write failed"
kill -0 "$reader" 2>/dev/null || fail "the reader ended first: the test proved nothing"
assert_ge "$(st deferred)" 1 "the write was deferred behind the writeback"
assert_ge "$(st idle_boosted)" 1 "the writeback's origin I/O was boosted"
log "deferred write done while normal I/O ran: $(dmsetup status sp)"
kill "$reader" 2>/dev/null
wait 2>/dev/null || true
trap - EXIT

cmp <(dd if="$dm" bs=4k skip=32 count=1 iflag=direct status=none) /tmp/b ||
	fail "the deferred write's data"
cmp <(dd if="$dm" bs=4k count=8 iflag=direct status=none) <(head -c 32768 /tmp/a) ||
	fail "set 0's older data"
dmsetup message sp 0 batch_mode_delay 100 || fail "batch_mode_delay"
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks -eq 0 600
log "ok"
