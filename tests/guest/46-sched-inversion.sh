#!/bin/bash
# No priority inversion behind our own background work: a writeback holds
# its set exclusively while its origin writes wait in the idle queue; a
# normal write to that set that cannot go on beside it (a writethrough one)
# of a block the cache holds waits for the writeback (one of a block it
# does not hold goes around it, to the origin).  With normal I/O
# pending all the time, an idle interval of an hour and no learnt gaps
# (idle_budget 0), the idle queue never moves by itself: the write completes only because background I/O
# a normal bio waits for is released at once (status idle_boosted).
# The same for a user's idle-class write held in the idle queue that a
# normal write of the same block waits for (the write range lock): it
# goes out at once, or the normal write would wait for the idle queue.
# And a write around a writeback that the origin fails (dm-flakey under a
# dm-linear origin leg): the error reaches its submitter at once, the
# writeback and its dirty data are untouched, the cache keeps no copy.
# What is released goes on as best-effort: the devices' own mq-deadline
# (its prio_aging_expire an hour here) would hold an idle-class bio again.
# timeout: 900
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
modprobe dm-flakey || fail "modprobe dm-flakey"
hdd=$(make_hdd hdd 256)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
# Under the devices, mq-deadline (a SATA disk's default) holds an idle-class
# request while others are pending, for prio_aging_expire (10 s by default):
# an hour here, so that a bio released for a normal one's sake but still
# idle-class below would hold it for that long.
for d in hdd ssd; do
	echo mq-deadline >"/sys/block/$d/queue/scheduler" || fail "mq-deadline on $d"
	echo 3600000 >"/sys/block/$d/queue/iosched/prio_aging_expire" ||
		fail "prio_aging_expire on $d"
done
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 13 format evict_wait 3600000 read_alloc off seq_cutoff 0 idle_dispatch_interval 3600000 batch_mode_delay 3600000 idle_budget 0")
st() { status_get sp "$1"; }

# A normal reader of uncached data keeps normal I/O pending on the origin.
start_reader() {
	fio --name=normal --filename="$dm" --rw=randread --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=4 --offset=64M --size=192M \
		--runtime=400 --time_based --randrepeat=0 --output=/tmp/normal.out &
	reader=$!
	trap 'kill $reader 2>/dev/null; wait' EXIT
	wait_status sp bios_normal -ge 50 120
}

stop_reader() {
	kill "$reader" 2>/dev/null
	wait 2>/dev/null || true
	trap - EXIT
}

# normal_write_completes FILE BLOCK WHAT: a normal 4 KiB write of FILE to
# BLOCK must complete while the reader still runs.
normal_write_completes() {
	local writer
	dd if="$1" of="$dm" bs=4k seek="$2" count=1 oflag=direct status=none &
	writer=$!
	wait_exit "$writer" 300 ||
		fail "a normal write waited for $3: $(dmsetup status sp)"
	wait "$writer" || fail "the normal write failed ($3)"
	kill -0 "$reader" 2>/dev/null || fail "the reader ended first: $3 proved nothing"
}

head -c 65536 /dev/urandom >/tmp/a
head -c 4096 /dev/urandom >/tmp/b
dd if=/tmp/a of="$dm" bs=64k count=1 oflag=direct status=none || fail "write set 0"
assert_eq "$(st dirty_blocks)" 16 "64 KiB dirty in set 0"

start_reader
# One idle bio goes out per idle_dispatch_interval, whenever normal I/O
# leaves a gap (a slow guest CPU leaves some): spend this hour's one now.
ionice -c3 dd if="$dm" of=/dev/null bs=4k count=1 skip=40000 iflag=direct status=none
wait_status sp idle_dispatched -ge 1 60
# From here on nothing but a boost may release the writeback: without the
# starvation bound a slow guest cannot let it age out before the checks.
dmsetup message sp 0 idle_max_wait 0 || fail "idle_max_wait 0"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp writeback_sets -ge 1 60
wait_status sp queued_idle -ge 1 60
log "writeback held in the idle queue: $(dmsetup status sp)"

# Writethrough: a write of the SSD alone would go on beside the writeback.
dmsetup message sp 0 write_policy writethrough || fail "write_policy writethrough"
# A write of a block the cache does not hold goes around the writeback, to
# the origin at once: no write of the writeback's covers it.
around=$(st writes_around_writeback) deferred=$(st deferred) boosted=$(st idle_boosted)
normal_write_completes /tmp/b 32 "the writeback, writing a block the cache does not hold"
# And a part of one (a partial write of a block the cache does not hold
# goes to the origin whatever the set's state).
dd if=/tmp/b of="$dm" bs=512 count=1 seek=$((40 * 8 + 3)) oflag=direct status=none &
writer=$!
wait_exit "$writer" 300 || fail "a normal partial write waited for the writeback: $(dmsetup status sp)"
wait "$writer" || fail "the partial write around the writeback"
assert_eq "$(st writes_around_writeback)" $((around + 2)) "writes around the writeback"
assert_eq "$(st deferred)" "$deferred" "writes deferred: the write of a block the cache does not hold"
assert_eq "$(st idle_boosted)" "$boosted" "background I/O boosted for a write that did not wait"
assert_ge "$(st writeback_sets)" 1 "the writeback still holds the set"
# A write of a block it holds (dirty, in the writeback): deferred, then it
# must complete while the reader still runs (not when normal I/O stops).
dd if=/tmp/b of="$dm" bs=4k seek=12 count=1 oflag=direct status=none &
writer=$!
wait_exit "$writer" 300 || fail "a normal write waited for idle-class writeback: $(dmsetup status sp)"
wait "$writer" || fail "the deferred write failed"
dmsetup message sp 0 write_policy writeback || fail "write_policy writeback"
kill -0 "$reader" 2>/dev/null || fail "the reader ended first: the test proved nothing"
assert_ge "$(st deferred)" 1 "the write was deferred behind the writeback"
assert_ge "$(st idle_boosted)" 1 "the writeback's origin I/O was boosted"
log "deferred write done while normal I/O ran: $(dmsetup status sp)"
stop_reader

cmp <(dd if="$dm" bs=4k skip=12 count=1 iflag=direct status=none) /tmp/b ||
	fail "the deferred write's data"
cmp <(dd if="$dm" bs=4k skip=32 count=1 iflag=direct status=none) /tmp/b ||
	fail "the data of the write around the writeback"
cmp <(dd if="$dm" bs=4k count=8 iflag=direct status=none) <(head -c 32768 /tmp/a) ||
	fail "set 0's older data"
dmsetup message sp 0 batch_mode_delay 100 || fail "batch_mode_delay"
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks -eq 0 600
for b in 12 32; do
	cmp <(dd if="$hdd" bs=4k skip=$b count=1 iflag=direct status=none) /tmp/b ||
		fail "block $b on the origin"
done
cmp <(dd if="$hdd" bs=512 skip=$((40 * 8 + 3)) count=1 iflag=direct status=none) \
	<(head -c 512 /tmp/b) || fail "the partial write around the writeback on the origin"
dm_remove sp

log "=== a normal write behind a held idle-class write of the same block"
# writearound: writes go to the origin through the scheduler, so the idle
# write waits in the idle queue holding its block's range lock.  No
# idle_max_wait, and an hour's idle_grace (no gap of the reader's counts):
# nothing but the normal writer would ever release it.
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 19 format write_policy writearound evict_wait 3600000 read_alloc off seq_cutoff 0 idle_dispatch_interval 3600000 batch_mode_delay 3600000 idle_max_wait 0 idle_grace 3600000 idle_budget 0")
head -c 4096 /dev/urandom >/tmp/c
start_reader
boosted=$(st idle_boosted)
ionice -c3 dd if=/tmp/c of="$dm" bs=4k seek=100 count=1 oflag=direct status=none &
idle_writer=$!
wait_status sp queued_idle -ge 1 60
log "idle write held: $(dmsetup status sp)"
normal_write_completes /tmp/b 100 "a held idle-class write of its block"
wait_exit "$idle_writer" 60 || fail "the idle write did not complete"
wait "$idle_writer" || fail "the idle write failed"
assert_ge "$(st deferred)" 1 "the normal write waited for the idle one"
assert_ge "$(st idle_boosted)" $((boosted + 1)) "the idle write was released for it"

# A chain: idle A (blocks 200-201) held, idle B (201-202) waiting for A,
# then normal C (202), which waits for B only: A must go for C too.
head -c 8192 /dev/urandom >/tmp/d
head -c 8192 /dev/urandom >/tmp/e
deferred=$(st deferred)
ionice -c3 dd if=/tmp/d of="$dm" bs=8k seek=$((200 * 4096)) count=1 \
	oflag=direct,seek_bytes status=none &
idle_a=$!
wait_status sp queued_idle -ge 1 60
ionice -c3 dd if=/tmp/e of="$dm" bs=8k seek=$((201 * 4096)) count=1 \
	oflag=direct,seek_bytes status=none &
idle_b=$!
wait_status sp deferred -ge $((deferred + 1)) 60
normal_write_completes /tmp/c 202 "idle writes through a chain"
for p in $idle_a $idle_b; do
	wait_exit "$p" 60 || fail "an idle write of the chain did not complete"
	wait "$p" || fail "an idle write of the chain failed"
done
stop_reader
cmp <(dd if="$dm" bs=4k skip=100 count=1 iflag=direct status=none) /tmp/b ||
	fail "the block holds the later (normal) write"
cmp <(dd if="$hdd" bs=4k skip=100 count=1 iflag=direct status=none) /tmp/b ||
	fail "the origin holds the later (normal) write"
cmp <(dd if="$dm" bs=4k skip=200 count=3 iflag=direct status=none) \
	<(head -c 4096 /tmp/d; cat /tmp/e | head -c 4096; cat /tmp/c) ||
	fail "the chain's blocks: A, then B, then C, in that order"
dm_remove sp

log "=== a write around a writeback that the origin fails"
# The origin is a dm-linear leg, reloaded into dm-flakey (error_writes)
# while the writeback waits in the idle queue: the writes around it fail
# to their submitters, promptly; the writeback and its dirty blocks are
# untouched; the cache keeps no copy of the failed blocks (a read goes to
# the origin: its old data or the new, nothing else); once the origin
# heals, a write around goes again and the writeback finishes.
leg ohdd "$hdd" linear
dm=$(dm_create sp "0 $len ssdprio /dev/mapper/ohdd $ssd 17 format evict_wait 3600000 read_alloc off seq_cutoff 0 idle_dispatch_interval 3600000 batch_mode_delay 3600000 idle_max_wait 0 idle_grace 3600000 idle_budget 0")
head -c 65536 /dev/urandom >/tmp/f
head -c 4096 /dev/urandom >/tmp/g
head -c 4096 /dev/urandom >/tmp/h
dd if=/tmp/f of="$dm" bs=64k count=1 oflag=direct status=none || fail "write set 0"
dd if="$hdd" of=/tmp/old48 bs=4k skip=48 count=1 iflag=direct status=none
dd if="$hdd" of=/tmp/old56 bs=512 skip=$((56 * 8 + 5)) count=1 iflag=direct status=none
start_reader
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp writeback_sets -ge 1 60
wait_status sp queued_idle -ge 1 60
dmsetup message sp 0 write_policy writethrough || fail "write_policy writethrough"
around=$(st writes_around_writeback) deferred=$(st deferred)
boosted=$(st idle_boosted) oerr=$(st origin_write_errors) wberr=$(st writeback_errors)
leg ohdd "$hdd" writes
dd if=/tmp/g of="$dm" bs=4k seek=48 count=1 oflag=direct status=none &
writer=$!
wait_exit "$writer" 300 || fail "a write around the writeback hung on a failing origin: $(dmsetup status sp)"
wait "$writer" && fail "a write around the writeback succeeded on an origin failing writes"
dd if=/tmp/g of="$dm" bs=512 count=1 seek=$((56 * 8 + 5)) oflag=direct status=none &
writer=$!
wait_exit "$writer" 300 || fail "a partial write around the writeback hung on a failing origin"
wait "$writer" && fail "a partial write around the writeback succeeded on an origin failing writes"
leg ohdd "$hdd" linear
kill -0 "$reader" 2>/dev/null || fail "the reader ended first: the failing writes proved nothing"
assert_eq "$(st writes_around_writeback)" $((around + 2)) "failed writes around the writeback"
assert_eq "$(st origin_write_errors)" $((oerr + 2)) "origin write errors"
assert_eq "$(st deferred)" "$deferred" "writes deferred by the failed writes around"
assert_eq "$(st idle_boosted)" "$boosted" "background I/O boosted for the failed writes around"
assert_eq "$(st writeback_errors)" "$wberr" "writeback errors: the writeback did not fail"
assert_ge "$(st writeback_sets)" 1 "the writeback still holds the set"
assert_eq "$(st dirty_blocks)" 16 "dirty blocks under the writeback"
# old_or_new GOT OLD NEW WHAT: a failed write leaves one or the other.
old_or_new() {
	cmp -s "$1" "$2" || cmp -s "$1" "$3" ||
		fail "$4: neither the old data nor the failed write's"
}
dd if="$dm" of=/tmp/got bs=4k skip=48 count=1 iflag=direct status=none
old_or_new /tmp/got /tmp/old48 /tmp/g "block 48 after the failed write around"
dd if="$dm" of=/tmp/got bs=512 skip=$((56 * 8 + 5)) count=1 iflag=direct status=none
old_or_new /tmp/got /tmp/old56 <(head -c 512 /tmp/g) "the sector after the failed partial write around"
normal_write_completes /tmp/h 48 "the writeback, rewriting a block whose write around failed"
assert_eq "$(st writes_around_writeback)" $((around + 3)) "writes around the healed origin"
stop_reader
dmsetup message sp 0 write_policy writeback || fail "write_policy writeback"
dmsetup message sp 0 batch_mode_delay 100 || fail "batch_mode_delay"
dmsetup message sp 0 flush_dirty
wait_status sp dirty_blocks -eq 0 600
assert_eq "$(st writeback_errors)" "$wberr" "writeback errors after the origin healed"
cmp <(dd if="$hdd" bs=64k count=1 iflag=direct status=none) /tmp/f ||
	fail "set 0's dirty data on the origin after the failed writes around"
cmp <(dd if="$hdd" bs=4k skip=48 count=1 iflag=direct status=none) /tmp/h ||
	fail "block 48 on the origin: the write after the failed one"
dd if="$hdd" of=/tmp/got bs=512 skip=$((56 * 8 + 5)) count=1 iflag=direct status=none
old_or_new /tmp/got /tmp/old56 <(head -c 512 /tmp/g) "the failed partial write's sector on the origin"
dm_remove sp
dm_remove ohdd
log "ok"
