#!/bin/bash
# What a read miss puts into the cache is what the origin returned, not
# what the reader's pages hold by the time the read completes.
#
# O_DIRECT reads land in the reader's own pages, and a reader may change
# them while the read is in flight (another thread reusing the buffer, or a
# page several reads share: a VM guest's "dummy page" for data it throws
# away).  The promotion must not copy those pages: a block cached from them
# would serve the reader's scribble to everyone afterwards.  Here a thread
# rewrites the buffer without pause while cold blocks are read into it,
# small reads (copied out by end_io) and large ones (held for a worker);
# then every block, read again, must be the origin's.  A read miss the
# origin fails leaves nothing behind that suspend would wait for.
# timeout: 300
# shellcheck source=tests/guest/lib.sh
. "$(dirname "$0")/lib.sh"

load_module
hdd=$(make_hdd hdd 64)     # 5 ms a read: the window between data and end_io
ssd=$(make_ssd ssd 32)
nh=$(sectors "$hdd")
MB=16                      # the first 16 MiB: stamped, read, checked

# Every 4 KiB block of the origin stamped with its number.
python3 - "$hdd" $MB <<'PY' || fail "stamping the origin"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
blocks = int(sys.argv[2]) * 256
buf = b"".join(b"blk%09d" % n * 341 + b"\n" * 4 for n in range(blocks))
os.pwrite(fd, buf, 0)
os.fsync(fd)
PY
dev=$(dm_create sp "0 $nh ssdprio $hdd $ssd 3 format seq_cutoff 0")

# Cold reads into a buffer a second thread keeps overwriting: 4 KiB reads
# of the first 8 MiB, 64 KiB reads of the next 8 MiB (every other block
# range, so that each read is a miss of its own).
python3 - "$dev" $MB <<'PY' || fail "the scribbled reads"
import mmap, os, sys, threading
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
half = int(sys.argv[2]) << 19
buf = mmap.mmap(-1, 64 << 10)
stop = False
def scribble():
    junk = b"X" * len(buf)
    while not stop:
        buf[:] = junk
t = threading.Thread(target=scribble)
t.start()
try:
    for off in range(0, half, 8 << 10):
        os.preadv(fd, [memoryview(buf)[:4096]], off)
    for off in range(half, 2 * half, 128 << 10):
        os.preadv(fd, [buf], off)
finally:
    stop = True
    t.join()
PY
# The copies land in the background: wait until they stop coming.
last=-1
for _ in $(seq 60); do
	now=$(($(status_get sp promotions) + $(status_get sp promotions_skipped)))
	((now == last)) && break
	last=$now
	sleep 1
done
log "promotions $(status_get sp promotions), skipped $(status_get sp promotions_skipped), valid_blocks $(status_get sp valid_blocks), read_hits $(status_get sp read_hits)"
assert_ge "$(status_get sp promotions)" 1 "promotions (else the test proves nothing)"

# Every block, read again (hits where promoted), is the origin's.
h0=$(status_get sp read_hits)
python3 - "$dev" $MB <<'PY' || fail "blocks through the cache differ from the origin's (the reader's scribble was cached)"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 20)
bad = []
for mb in range(int(sys.argv[2])):
    os.preadv(fd, [buf], mb << 20)
    for i in range(256):
        n = mb * 256 + i
        if buf[i * 4096:(i + 1) * 4096] != b"blk%09d" % n * 341 + b"\n" * 4:
            bad.append(n)
if bad:
    sys.exit("%d blocks differ, first %s" % (len(bad), bad[:8]))
PY
assert_ge "$(status_get sp read_hits)" $((h0 + 1)) "read hits in the check (the cached copies were read)"
dm_remove sp

# A read miss the origin fails: its pages of our own go back, it ends no
# background job it never began, and suspend and remove do not wait for one.
# (A fresh cache: "format" loads a cache that carries a superblock.)
dd if=/dev/zero of="$ssd" bs=1M count=4 oflag=direct status=none || fail "wipe the cache"
leg_load ohdd "0 800 linear $hdd 0
800 8 error
808 $((nh - 808)) linear $hdd 808"
dev=$(dm_create sp "0 $nh ssdprio /dev/mapper/ohdd $ssd 3 format seq_cutoff 0")
for _ in 1 2; do
	if dd if="$dev" of=/dev/null bs=4k skip=100 count=1 iflag=direct status=none 2>/dev/null; then
		fail "a read of the failing origin block succeeded"
	fi
done
assert_ge "$(status_get sp origin_read_errors)" 1 "origin_read_errors"
dmsetup suspend sp || fail "suspend after failed read misses"
dmsetup resume sp || fail "resume"
dm_remove sp
dm_remove ohdd
remove_nullb hdd
remove_nullb ssd
log "ok"
