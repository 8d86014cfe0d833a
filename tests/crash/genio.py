#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Generation-stamped block writer and its checker, for power-cut tests.

  genio.py write DEV LOG --offset BYTES --blocks N --seed S [--max-batch K]
                         [--dsync-pct P] [--pause-ms MS] [--count N] [--resume]
  genio.py check DEV LOG --offset BYTES --blocks N --seed S [--max-batch K]

`write` overwrites random 4 KiB blocks of DEV[offset, offset + 4 KiB * N)
with O_DIRECT, for ever (or --count writes); half the writes go to the first
64 blocks, so those are overwritten many times. Every 512-byte sector of a
block written by write number SEQ carries a header (magic, seed, block,
generation = how many times that block has been written, sector index,
SEQ) and a crc32 over the sector, so a sector read back later names exactly
which write produced it, and garbage or a sector of another block is
recognised. The block sequence is a function of the seed only.

What is durable is appended to LOG (a file on the host's 9p export, which
outlives the guest) only after the kernel acknowledged it:
  F SEQ   an fsync(2) of DEV returned after writes 1..SEQ completed: all of
          them are durable (REQ_PREFLUSH);
  D SEQ   write SEQ was issued with RWF_DSYNC (FUA, then a flush) and
          returned: that write is durable.
Between two F lines there are at most --max-batch writes, so no write with
SEQ > last F + max-batch was ever issued.

Each `write` is a session, opened by a line "S seed offset blocks max-batch
START". Without --resume it starts the log anew at write 1; with --resume
(after a crash) it appends a session that goes on with the same block
sequence at START = the first write number no earlier session can have
issued. An F line speaks for the writes of its own session only.

`check` reads every block and requires, for each sector: a valid stamp of
this block (or all zeroes if the block had no durable write), with a
generation at least the newest durable one and at most the newest issued
one. A write that was not flushed may be lost, or (sector by sector, if it
was in flight) half there, but an older copy must never win over a durable
newer one, and nothing else may appear. Exit status 0 = consistent, 1 = not
(each bad sector is listed), 2 = usage or I/O error.
"""

import argparse
import mmap
import os
import random
import struct
import sys
import time
import zlib

MAGIC = b"SSDPGEN1"
BLOCK = 4096
SECTOR = 512
# magic, seed, block, gen, sector index, seq, crc
HDR = struct.Struct("<8sIIIIII")


def sector_bytes(seed, block, gen, idx, seq):
    body = struct.pack("<IIII", seed, block, gen, idx) * ((SECTOR - HDR.size) // 16)
    hdr = HDR.pack(MAGIC, seed, block, gen, idx, seq, 0)
    crc = zlib.crc32(hdr[:-4] + body)
    return HDR.pack(MAGIC, seed, block, gen, idx, seq, crc) + body


def block_bytes(seed, block, gen, seq):
    return b"".join(sector_bytes(seed, block, gen, i, seq) for i in range(BLOCK // SECTOR))


def parse_sector(buf):
    """(gen, seq, block, seed, idx) of a stamped sector, 'zero', or None (garbage)."""
    if buf.count(0) == SECTOR:
        return "zero"
    magic, seed, block, gen, idx, seq, crc = HDR.unpack_from(buf)
    if magic != MAGIC or zlib.crc32(bytes(buf[: HDR.size - 4]) + bytes(buf[HDR.size :])) != crc:
        return None
    return gen, seq, block, seed, idx


HOT_BLOCKS = 64  # half the writes go to the first 64 blocks: many generations there


def block_sequence(seed, nblocks):
    """The block of write 1, 2, ...: depends on the seed only."""
    rng = random.Random(seed)
    hot = min(HOT_BLOCKS, nblocks)
    while True:
        yield rng.randrange(hot) if rng.random() < 0.5 else rng.randrange(nblocks)


def open_log(path):
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def log_line(fd, text):
    os.write(fd, (text + "\n").encode())
    # The log must outlive the guest: 9p in 6.12 (netfs) caches writes in
    # the guest's page cache, which a killed QEMU loses.
    os.fsync(fd)


class Session:
    """One run of `write`: its first write number, last flush, DSYNC writes."""

    def __init__(self, start):
        self.start = start
        self.last_f = start - 1
        self.dsync = set()

    def max_issued(self, max_batch):
        return max([self.last_f + max_batch] + list(self.dsync))

    def durable(self, seq):
        return seq <= self.last_f or seq in self.dsync


def read_log(path, a):
    """The sessions in LOG, oldest first (checked against the arguments)."""
    sessions = []
    if not os.path.exists(path):
        return sessions
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w or not line.endswith("\n"):
                continue  # a line cut short by the crash says nothing
            if w[0] == "S":
                params = tuple(int(x) for x in w[1:5])
                if params != (a.seed, a.offset, a.blocks, a.max_batch):
                    sys.exit("genio: log %s is for seed/offset/blocks/max-batch %s, not %s"
                             % (path, params, (a.seed, a.offset, a.blocks, a.max_batch)))
                sessions.append(Session(int(w[5])))
            elif w[0] == "F":
                sessions[-1].last_f = max(sessions[-1].last_f, int(w[1]))
            elif w[0] == "D":
                sessions[-1].dsync.add(int(w[1]))
    return sessions


def cmd_write(a):
    fd = os.open(a.dev, os.O_RDWR | os.O_DIRECT)
    # A new session goes on after every write an earlier one may have
    # issued (a crashed one's unflushed writes may or may not be there).
    prev = read_log(a.log, a) if a.resume else []
    start = max([1] + [s.max_issued(a.max_batch) + 1 for s in prev])
    lfd = open_log(a.log)
    if not a.resume:
        os.ftruncate(lfd, 0)
    log_line(lfd, "S %d %d %d %d %d" % (a.seed, a.offset, a.blocks, a.max_batch, start))
    buf = mmap.mmap(-1, BLOCK)  # page aligned, as O_DIRECT wants
    ctl = random.Random((a.seed ^ 0x5A5A5A5A) + start)
    gens = {}
    seq = 0
    batch_left = ctl.randint(1, a.max_batch)
    for block in block_sequence(a.seed, a.blocks):
        if a.count and seq - start + 1 >= a.count:
            break
        seq += 1
        gen = gens.get(block, 0) + 1
        gens[block] = gen
        if seq < start:
            continue  # an earlier session's (the generation counts it all the same)
        buf[:] = block_bytes(a.seed, block, gen, seq)
        dsync = ctl.random() * 100 < a.dsync_pct
        n = os.pwritev(fd, [buf], a.offset + block * BLOCK, os.RWF_DSYNC if dsync else 0)
        if n != BLOCK:
            sys.exit("genio: short write %d at seq %d" % (n, seq))
        if dsync:
            log_line(lfd, "D %d" % seq)
        batch_left -= 1
        if batch_left == 0:
            os.fsync(fd)
            log_line(lfd, "F %d" % seq)
            batch_left = ctl.randint(1, a.max_batch)
            if a.pause_ms:
                # Quiet gaps let the cache's deferred eviction run.
                time.sleep(ctl.random() * a.pause_ms / 1000.0)
    os.fsync(fd)
    log_line(lfd, "F %d" % seq)
    print("genio: writes %d..%d" % (start, seq))


def cmd_check(a):
    sessions = read_log(a.log, a)
    if not sessions:
        sys.exit("genio: no session in %s" % a.log)
    max_issued = max(s.max_issued(a.max_batch) for s in sessions)
    durable = {}  # block -> (gen, seq) of the newest durable write
    issued = {}  # block -> newest gen issued
    gens = {}
    seq = 0
    si = 0
    for block in block_sequence(a.seed, a.blocks):
        seq += 1
        if seq > max_issued:
            break
        while si + 1 < len(sessions) and sessions[si + 1].start <= seq:
            si += 1
        gen = gens.get(block, 0) + 1
        gens[block] = gen
        issued[block] = gen
        if sessions[si].start <= seq and sessions[si].durable(seq):
            durable[block] = (gen, seq)
    fd = os.open(a.dev, os.O_RDONLY | os.O_DIRECT)
    chunk = 256  # blocks per read
    cbuf = mmap.mmap(-1, chunk * BLOCK)
    zero_block = bytes(BLOCK)
    bad = 0
    stats = {"durable": 0, "newer": 0, "zero": 0, "torn": 0}
    for block in range(a.blocks):
        off = a.offset + block * BLOCK
        if block % chunk == 0:
            n = min(chunk, a.blocks - block) * BLOCK
            if os.preadv(fd, [memoryview(cbuf)[:n]], off) != n:
                sys.exit("genio: short read at %d" % off)
        buf = cbuf[(block % chunk) * BLOCK : (block % chunk + 1) * BLOCK]
        dgen, dseq = durable.get(block, (0, 0))
        igen = issued.get(block, 0)
        if dgen == 0 and buf == zero_block:
            stats["zero"] += 1
            continue
        seen = set()
        for i in range(BLOCK // SECTOR):
            s = parse_sector(buf[i * SECTOR : (i + 1) * SECTOR])
            where = "block %d (byte %d) sector %d" % (block, off + i * SECTOR, i)
            want = "durable gen %d (write %d), newest issued gen %d" % (dgen, dseq, igen)
            if s is None:
                print("BAD %s: garbage (no valid stamp); %s" % (where, want))
                bad += 1
                continue
            if s == "zero":
                if dgen:
                    print("BAD %s: zeroes; %s" % (where, want))
                    bad += 1
                seen.add(0)
                continue
            gen, sseq, sblock, sseed, idx = s
            if sseed != a.seed or sblock != block or idx != i:
                print("BAD %s: stamp of seed %d block %d sector %d (gen %d, write %d); %s"
                      % (where, sseed, sblock, idx, gen, sseq, want))
                bad += 1
            elif gen < dgen:
                print("BAD %s: stale gen %d (write %d); %s" % (where, gen, sseq, want))
                bad += 1
            elif gen > igen:
                print("BAD %s: gen %d (write %d) was never issued; %s" % (where, gen, sseq, want))
                bad += 1
            seen.add(gen)
        if len(seen) > 1:
            stats["torn"] += 1
        elif seen == {0}:
            stats["zero"] += 1
        elif seen == {dgen}:
            stats["durable"] += 1
        else:
            stats["newer"] += 1
        if bad > 50:
            print("genio: too many bad sectors, stopping")
            break
    print("genio check %s: %d blocks; %s; up to write %d issued: %d at the durable gen, "
          "%d newer (unflushed writes that made it), %d zero, %d torn; %d bad sectors"
          % (a.dev, a.blocks, ", ".join("session from write %d: last flush at %d, %d DSYNC writes"
                                         % (x.start, x.last_f, len(x.dsync)) for x in sessions),
             max_issued, stats["durable"], stats["newer"], stats["zero"], stats["torn"], bad))
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cmd", choices=["write", "check"])
    p.add_argument("dev")
    p.add_argument("log")
    p.add_argument("--offset", type=int, required=True)
    p.add_argument("--blocks", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--max-batch", type=int, default=16)
    p.add_argument("--dsync-pct", type=float, default=10)
    p.add_argument("--pause-ms", type=float, default=0)
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--resume", action="store_true",
                   help="write: append a session to LOG (after a crash) instead of starting it anew")
    a = p.parse_args()
    if a.offset % BLOCK or a.blocks <= 0 or a.max_batch <= 0:
        sys.exit("genio: offset must be 4 KiB aligned, blocks and max-batch positive")
    a.seed &= 0xFFFFFFFF
    if a.cmd == "write":
        cmd_write(a)
        return 0
    return cmd_check(a)


if __name__ == "__main__":
    sys.exit(main())
