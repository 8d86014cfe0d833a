#!/bin/bash
# A drain finishes while a normal job keeps the origin busy, at queue
# depth 1 and 4, even with the strictest policy (idle_max_wait 0, an idle
# interval and batch delay of an hour), under which idle-class writeback
# (a flush_dirty's) never passes pending normal I/O: the drain's origin
# writes compete as normal I/O.  Meanwhile and after, writes make
# no new dirty data (writethrough), and the origin alone holds everything.
# write_policy writeback calls a drain off (its flush goes on as flush_dirty).
# flush_dirty ends with what was dirty when it was asked, under a light
# steady writer that dirties sets faster than the flush writes them back,
# and not before: a partial write beside its writeback leaves older data.
# timeout: 900
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 256)
ssd=$(make_ssd ssd 64)
len=$(sectors "$hdd")
# The origin through a leg, whose writes can be held (dm-delay) where the
# test needs a flush that cannot end yet.
leg ho "$hdd" linear
dm=$(dm_create sp "0 $len ssdprio /dev/mapper/ho $ssd 13 format evict_wait 3600000 read_alloc off seq_cutoff 0 idle_max_wait 0 idle_dispatch_interval 3600000 batch_mode_delay 3600000")
st() { status_get sp "$1"; }
reader=""
trap '[[ -n $reader ]] && kill $reader 2>/dev/null; wait' EXIT

for qd in 1 4; do
	head -c 8M /dev/urandom >/tmp/drain.a
	head -c 1M /dev/urandom >/tmp/drain.b
	dd if=/tmp/drain.a of="$dm" bs=64k oflag=direct status=none || fail "write 8 MiB"
	d0=$(st dirty_blocks)
	assert_ge "$d0" 2048 "8 MiB dirty"

	# A normal reader of uncached data keeps normal I/O pending on the origin.
	fio --name=normal --filename="$dm" --rw=randread --bs=4k --direct=1 \
		--ioengine=libaio --iodepth="$qd" --offset=64M --size=192M \
		--runtime=800 --time_based --randrepeat=0 --output=/tmp/drain.out &
	reader=$!
	n0=$(st bios_normal)
	wait_status sp bios_normal -ge $((n0 + 50)) 120

	dmsetup message sp 0 drain || fail "drain"
	dmsetup table sp | grep -q "write_policy writethrough" ||
		fail "drain did not switch to writethrough: $(dmsetup table sp)"
	# New data while draining: written through, so nothing new is dirty.
	dd if=/tmp/drain.b of="$dm" bs=64k seek=512 oflag=direct status=none || fail "write during the drain"
	assert_le "$(st dirty_blocks)" "$d0" "dirty blocks after a write during the drain"
	wait_status sp dirty_blocks -eq 0 600
	kill -0 "$reader" 2>/dev/null || fail "the reader ended first: the test proved nothing"
	wait_status sp flush_state == idle 60
	assert_eq "$(st draining)" 0 "draining after the drain ended"
	log "qd $qd: drained $d0 blocks while the reader ran: $(dmsetup status sp)"
	kill "$reader" 2>/dev/null
	wait "$reader" 2>/dev/null
	reader=""

	# The origin alone holds everything written, before and during the drain.
	cmp <(dd if="$hdd" bs=64k count=128 iflag=direct status=none) /tmp/drain.a ||
		fail "the origin lacks the drained data (qd $qd)"
	cmp <(dd if="$hdd" bs=64k skip=512 count=16 iflag=direct status=none) /tmp/drain.b ||
		fail "the origin lacks the data written during the drain (qd $qd)"
	cmp <(dd if="$dm" bs=64k count=128 iflag=direct status=none) /tmp/drain.a ||
		fail "the device's data after the drain (qd $qd)"
	dmsetup message sp 0 write_policy writeback || fail "write_policy writeback"
done

# write_policy writeback during a drain calls the drain off: its flush goes
# on as a flush_dirty (idle class: it waits for the reader to stop), and the
# writes from then on are dirty again.
dd if=/tmp/drain.a of="$dm" bs=64k oflag=direct status=none || fail "write 8 MiB"
fio --name=normal --filename="$dm" --rw=randread --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=4 --offset=64M --size=192M \
	--runtime=800 --time_based --randrepeat=0 --output=/tmp/drain.out &
reader=$!
n0=$(st bios_normal)
wait_status sp bios_normal -ge $((n0 + 50)) 120
# The drain's origin writes held until the leg is swapped back: else a drain
# on a fast machine may end before it is called off, and then the flush that
# goes on is not seen.
leg_load ho "0 $len delay $hdd 0 0 $hdd 0 600000"
dmsetup message sp 0 drain || fail "drain"
dmsetup message sp 0 write_policy writeback || fail "write_policy writeback"
assert_eq "$(st draining)" 0 "draining after write_policy writeback"
assert_eq "$(st flush_state)" running "flush_state: the flush goes on"
dmsetup table sp | grep -q "write_policy writethrough" && fail "write_policy: $(dmsetup table sp)"
leg ho "$hdd" linear
# Writes from now on are dirty again (writeback); the flush, a flush_dirty
# now, owes what was dirty when the drain was asked: it writes that back
# once the reader stops, and the new writes may stay dirty.
dd if=/tmp/drain.b of="$dm" bs=64k seek=768 oflag=direct status=none || fail "write after the drain was called off"
# The flush's idle-class writes: one an hour under this table's policy.
dmsetup message sp 0 idle_dispatch_interval 10 || fail "idle_dispatch_interval"
dmsetup message sp 0 batch_mode_delay 100 || fail "batch_mode_delay"
kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
reader=""
wait_status sp flush_state == idle 600
assert_le "$(st dirty_blocks)" 256 "dirty blocks after the flush: the new writes' at most"
cmp <(dd if="$hdd" bs=64k count=128 iflag=direct status=none) /tmp/drain.a ||
	fail "the origin lacks what was dirty when the drain was asked"
cmp <(dd if="$dm" bs=64k skip=768 count=16 iflag=direct status=none) /tmp/drain.b ||
	fail "the data written after the drain was called off"
cmp <(dd if="$dm" bs=64k count=128 iflag=direct status=none) /tmp/drain.a ||
	fail "the device's data after the drain was called off"
dm_remove sp
dm_remove ho

# A flush asked while its only dirty set is held by a reader (a read hit
# that the SSD, under dm-delay, takes seconds to serve) cannot start; it must
# start when the reader lets go, with nothing else happening on the device.
modprobe dm-delay || fail "modprobe dm-delay"
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
dm_create slow "0 $(sectors "$ssd") linear $ssd 0" >/dev/null
dm=$(dm_create sp "0 $len ssdprio $hdd /dev/mapper/slow 7 format evict_wait 3600000 read_alloc off dirty_max_age 0")
head -c 4096 /dev/urandom >/tmp/drain.c
dd if=/tmp/drain.c of="$dm" bs=4k oflag=direct status=none || fail "write one block"
assert_eq "$(st dirty_blocks)" 1 "one dirty block"
hold_data_reads slow "$ssd" 4000
dd if="$dm" of=/dev/null bs=4k count=1 iflag=direct status=none &
hit=$!
sleep 1
kill -0 "$hit" 2>/dev/null || fail "the read hit was not slow: the test proves nothing"
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait "$hit" || fail "the read hit"
log "read hit done, flush asked during it: $(st flush_state), $(st dirty_blocks) dirty"
wait_status sp dirty_blocks -eq 0 120
wait_status sp flush_state == idle 60
cmp <(dd if="$hdd" bs=4k count=1 iflag=direct status=none) /tmp/drain.c ||
	fail "the flushed block on the origin"
log "flushed once the reader let go"

# A write routed as writeback just before a drain (its SSD write held) makes
# its block dirty after the drain's flush found nothing dirty and ended: the
# drain must go on and write it back (no quiet-window cleaning here).
hold_data_io slow "$ssd" 0 3000
head -c 4096 /dev/urandom >/tmp/drain.d
dd if=/tmp/drain.d of="$dm" bs=4k seek=8192 oflag=direct status=none &
held=$!
sleep 1
kill -0 "$held" 2>/dev/null || fail "the write was not slow: the test proves nothing"
dmsetup message sp 0 drain || fail "drain"
wait "$held" || fail "the held write"
hold_data_io slow "$ssd" 0 0
wait_status sp dirty_blocks -eq 0 60
wait_status sp flush_state == idle 60
cmp <(dd if="$hdd" bs=4k skip=8192 count=1 iflag=direct status=none) /tmp/drain.d ||
	fail "the block written as the drain began, on the origin"
log "a write in flight when the drain began: written back"
# Fast again before the shutdown writes its metadata.
dmsetup reload slow --table "0 $(sectors "$ssd") linear $ssd 0" || fail "reload slow"
dmsetup resume slow || fail "resume slow"
dm_remove sp
dm_remove slow

# Blocks bigger than the writeback's 256 KiB buffer: a writeback copies at
# least one whole block (it wrote none and went round for ever, past the end
# of its job).
for bs in 1024 2048; do
	# A cache of another geometry is not formatted over: start blank.
	dd if=/dev/zero of="$ssd" bs=1M count=1 oflag=direct status=none || fail "wipe"
	dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 5 format block_size $bs set_size 4")
	head -c 4M /dev/urandom >/tmp/drain.e
	dd if=/tmp/drain.e of="$dm" bs=1M oflag=direct status=none || fail "block_size $bs: write"
	assert_ge "$(st dirty_blocks)" 1 "block_size $bs: dirty blocks"
	dmsetup message sp 0 flush_dirty || fail "block_size $bs: flush_dirty"
	wait_status sp dirty_blocks -eq 0 120
	wait_status sp flush_state == idle 60
	cmp <(dd if="$hdd" bs=1M count=4 iflag=direct status=none) /tmp/drain.e ||
		fail "block_size $bs: the written-back data on the origin"
	dm_remove sp
	log "block_size $bs: written back"
done

# --- a partial write beside the flush's writeback ----------------------------------------
# Blocks 0 and 5 of origin set 0 are dirty when flush_dirty is asked.  Its
# writeback writes block 0 first (writeback_gap 0: apart from block 5), and
# that origin write waits in dm-delay; meanwhile 512 bytes go into block 5 on
# the SSD, beside the writeback, which then leaves block 5 dirty.  The rest of
# block 5 is from before the request: the flush owes it, and must not end
# before the origin has it.
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
leg hl "$hdd" linear
dm=$(dm_create sp "0 $len ssdprio /dev/mapper/hl $ssd 11 format set_size 16 evict_wait 3600000 read_alloc off seq_cutoff 0 writeback_gap 0")
blk_put "$dm" 0 A || fail "write block 0"
blk_put "$dm" 5 B || fail "write block 5"
assert_eq "$(st dirty_blocks)" 2 "blocks 0 and 5 dirty"
# Origin writes held until the table is swapped (dm-delay sends them then).
leg_load hl "0 $len delay $hdd 0 0 $hdd 0 600000"
held_writes() { dmsetup status hl | awk '{ print $5 }'; }
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
for _ in $(seq 600); do
	(($(held_writes) >= 1)) && break
	sleep 0.1
done
(($(held_writes) >= 1)) || fail "the writeback's origin write never went out"
b0=$(st writes_beside_writeback)
head -c 512 /dev/zero | tr '\0' C |
	dd of="$dm" bs=512 seek=40 count=1 oflag=direct conv=notrunc status=none ||
	fail "512 bytes into block 5"
assert_ge "$(st writes_beside_writeback)" $((b0 + 1)) \
	"the 512-byte write went beside the writeback: else the test proves nothing"
leg_load hl "0 $len linear $hdd 0"
wait_status sp flush_state == idle 300
{ head -c 512 /dev/zero | tr '\0' C; head -c 3584 /dev/zero | tr '\0' B; } >/tmp/drain.f
cmp <(dd if="$hdd" bs=4k skip=5 count=1 iflag=direct status=none) /tmp/drain.f ||
	fail "the origin lacks block 5's data from before flush_dirty was asked"
[[ $(blk_what "$hdd" 0) == A ]] || fail "origin block 0 after the flush"
cmp <(dd if="$dm" bs=4k skip=5 count=1 iflag=direct status=none) /tmp/drain.f ||
	fail "block 5 through the device"
dm_remove sp
dm_remove hl

# --- flush_dirty under a light steady writer ---------------------------------------------
# A writer dirties about ten new sets a second while the flush's idle-class
# writes go out one a second (never batched): a flush that waited for no set
# to be dirty would never end.  It ends with what was dirty when it was asked,
# all of it on the origin, while the writer goes on.
"$REPO/build/ssdprio-tool" wipe --force "$ssd" >/dev/null || fail "wipe"
dm=$(dm_create sp "0 $len ssdprio $hdd $ssd 13 format set_size 16 evict_wait 3600000 read_alloc off seq_cutoff 0 idle_dispatch_interval 1000 batch_mode_delay 3600000")
# owed_blocks DEV WHAT: block 0 of every 4th 64 KiB set, 20 of them; WHAT
# "write" writes them, "check" exits non-zero unless DEV holds them.
owed_blocks() {
	python3 - "$@" <<'PY'
import mmap, os, sys
dev, what = sys.argv[1], sys.argv[2]
fd = os.open(dev, (os.O_WRONLY if what == "write" else os.O_RDONLY) | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
bad = 0
for k in range(20):
    want = (b"owed%04d" % k) * 512
    at = 4 * k * 16 * 4096
    if what == "write":
        buf[:] = want
        os.pwrite(fd, buf, at)
    elif os.preadv(fd, [buf], at) != 4096 or buf[:] != want:
        print("block %d: not what was written" % (at // 4096))
        bad += 1
os.close(fd)
sys.exit(1 if bad else 0)
PY
}
owed_blocks "$dm" write || fail "write the blocks the flush owes"
assert_ge "$(st dirty_blocks)" 20 "the blocks the flush owes, dirty"
# The writer: a 4 KiB block every 0.1 s anywhere but block 0 of a set.
python3 - "$dm" <<'PY' &
import mmap, os, random, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
n = os.lseek(fd, 0, os.SEEK_END) // 4096
buf = mmap.mmap(-1, 4096)
buf[:] = b"later..." * 512
end = time.time() + 900
while time.time() < end:
    b = random.randrange(n)
    if b % 16:
        os.pwrite(fd, buf, b * 4096)
        time.sleep(0.1)
PY
reader=$!
sleep 3
dmsetup message sp 0 flush_dirty || fail "flush_dirty"
wait_status sp flush_state == idle 600
kill -0 "$reader" 2>/dev/null || fail "the writer ended first: the test proved nothing"
log "flush_dirty ended under the writer: $(dmsetup status sp)"
owed_blocks "$hdd" check || fail "the origin lacks blocks dirty when flush_dirty was asked"
owed_blocks "$dm" check || fail "the device's blocks after the flush"
kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
reader=""
dm_remove sp
log "ok"
