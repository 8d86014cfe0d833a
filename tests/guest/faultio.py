#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Stamped-sector writer and checker with a model of what was acknowledged.

Every 512-byte sector holds 16 copies of a 32-byte stamp
(magic, sector number, generation, check word), so a read shows which
write of which sector it holds, a torn 4 KiB block shows as sectors of
different generations, and garbage or another sector's data never
passes.  A generation is one write call (its number grows by one per
call, whatever its size).

The model (a state file, pickled) keeps per sector of [0, N):
  acked[s]    the generation of the last write of s that was acknowledged
              (0: never written, the content is unknown: reads unchecked)
  tried[s]    generations written to s after acked[s] whose write failed
              (error or short count): s may hold any of them, or acked[s]
  ever[s]     (with --history) every generation ever written to s
A read of s must hold acked[s] or one of tried[s] (the default rule), or
with --any-gen one of ever[s]: "old or new, never garbage".

  faultio.py fill  DEV STATE --sectors N [--gen-start G]
  faultio.py run   DEV STATE --secs T --seed S [--partial P] [--pause P]
                   [--read-frac F] [--max-blocks B] [--ops N] [--strict-reads]
  faultio.py check DEV STATE [--any-gen] [--strict-reads] [--report FILE]

run writes random extents of 1..B 4 KiB blocks (and with --partial,
single 512-byte sectors) with O_DIRECT, reads back random extents and
checks them against the model as it goes, sleeps now and then (--pause:
quiet windows, so that eviction writes back), and records every error.
check reads every sector.  Both print a JSON summary on the last line:
writes, write_errors, reads, read_errors, bad (sectors that broke the
rule), and exit 1 if bad > 0 (or, with --strict-reads, read_errors > 0).
The first bad sectors are described on stderr.
"""
import argparse
import errno
import json
import mmap
import os
import pickle
import random
import struct
import sys
import time

SECTOR = 512
BLOCK = 4096
SPB = BLOCK // SECTOR
MAGIC = 0x5453504d41545346  # "FSTAMPST" little-endian-ish
STAMP = struct.Struct("<QQQQ")
MAX_BAD_REPORT = 20


def check_word(s, g):
    return ((s * 0x9E3779B97F4A7C15) ^ (g * 0xC2B2AE3D27D4EB4F) ^ 0x5A5A) & 0xFFFFFFFFFFFFFFFF


def stamp(s, g):
    return STAMP.pack(MAGIC, s, g, check_word(s, g)) * (SECTOR // STAMP.size)


def decode(buf):
    """(sector, gen) of a sector's content, or None if it is not a whole stamp."""
    m, s, g, c = STAMP.unpack_from(buf, 0)
    if m != MAGIC or c != check_word(s, g):
        return None
    if buf != stamp(s, g):
        return None
    return (s, g)


class Model:
    def __init__(self, n, history=False):
        self.n = n
        self.acked = [0] * n
        self.tried = {}  # sector -> set of generations
        self.ever = {} if history else None
        self.gen = 0
        self.stats = dict(writes=0, write_errors=0, reads=0, read_errors=0, bad=0)

    def next_gen(self):
        self.gen += 1
        return self.gen

    def wrote(self, s0, count, g, ok):
        for s in range(s0, s0 + count):
            if ok:
                self.acked[s] = g
                self.tried.pop(s, None)
            else:
                self.tried.setdefault(s, set()).add(g)
            if self.ever is not None:
                self.ever.setdefault(s, set()).add(g)

    def allowed(self, s, any_gen):
        if any_gen and self.ever is not None:
            return self.ever.get(s, set()) | {self.acked[s]}
        return {self.acked[s]} | self.tried.get(s, set())


def aligned(nbytes):
    return mmap.mmap(-1, max(nbytes, mmap.PAGESIZE))


class Dev:
    def __init__(self, path, write):
        flags = (os.O_RDWR if write else os.O_RDONLY) | os.O_DIRECT
        self.fd = os.open(path, flags)
        self.buf = aligned(256 * BLOCK)

    def pwrite(self, data, off):
        n = len(data)
        self.buf[:n] = data
        try:
            return os.pwrite(self.fd, memoryview(self.buf)[:n], off) == n, None
        except OSError as e:
            return False, e.errno

    def pread(self, off, n):
        try:
            got = os.preadv(self.fd, [memoryview(self.buf)[:n]], off)
        except OSError as e:
            return None, e.errno
        if got != n:
            return None, errno.EIO
        return bytes(self.buf[:n]), None


class Checker:
    def __init__(self, model, any_gen, quiet=False):
        self.m = model
        self.any_gen = any_gen
        self.reported = 0
        self.quiet = quiet

    def check(self, s0, data, where):
        m = self.m
        bad = 0
        for i in range(len(data) // SECTOR):
            s = s0 + i
            if m.acked[s] == 0 and not m.tried.get(s) and not (
                    m.ever is not None and m.ever.get(s)):
                continue  # never written: unknown content
            sec = data[i * SECTOR:(i + 1) * SECTOR]
            ok = set(self.m.allowed(s, self.any_gen))
            # the cheap test first: it is the acked generation
            if sec == stamp(s, m.acked[s]):
                continue
            d = decode(sec)
            if d is not None and d[0] == s and d[1] in ok:
                continue
            bad += 1
            # what kind of wrong, for the summary: garbage, another
            # sector's data, or an older generation of this sector (after a
            # failed write to this very sector, or with none: collateral)
            if d is None:
                kind = "bad_garbage"
            elif d[0] != s:
                kind = "bad_foreign"
            elif d[1] < m.acked[s]:
                kind = "bad_older_failed" if m.tried.get(s) else "bad_older_untouched"
            else:
                kind = "bad_other_gen"
            m.stats[kind] = m.stats.get(kind, 0) + 1
            if self.reported < MAX_BAD_REPORT and not self.quiet:
                self.reported += 1
                if d is None:
                    what = "garbage (no whole stamp), first bytes %s" % sec[:32].hex()
                elif d[0] != s:
                    what = "sector %d's data (gen %d)" % d
                else:
                    what = "gen %d" % d[1]
                print("BAD %s: sector %d (block %d) holds %s; allowed gens %s (acked %d)"
                      % (where, s, s // SPB, what, sorted(ok), m.acked[s]),
                      file=sys.stderr)
        m.stats["bad"] += bad
        return bad


def save(model, path):
    with open(path + ".tmp", "wb") as f:
        pickle.dump(model, f)
    os.replace(path + ".tmp", path)


def load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def summary(model, extra=None):
    d = dict(model.stats)
    d["gen"] = model.gen
    if extra:
        d.update(extra)
    print(json.dumps(d), flush=True)


def cmd_fill(a):
    if a.state_in and os.path.exists(a.state):
        m = load(a.state)
    else:
        m = Model(a.sectors, a.history)
    if a.gen_start:
        m.gen = max(m.gen, a.gen_start - 1)
    dev = Dev(a.dev, True)
    chunk = 256 * SPB  # 1 MiB
    for s0 in range(0, m.n, chunk):
        cnt = min(chunk, m.n - s0)
        g = m.next_gen()
        data = b"".join(stamp(s, g) for s in range(s0, s0 + cnt))
        ok, e = dev.pwrite(data, s0 * SECTOR)
        m.stats["writes"] += 1
        if not ok:
            m.stats["write_errors"] += 1
        m.wrote(s0, cnt, g, ok)
    os.fsync(dev.fd)
    save(m, a.state)
    summary(m)
    return 0


def cmd_run(a):
    m = load(a.state)
    # the counts are this run's; the generations go on
    m.stats = dict(writes=0, write_errors=0, reads=0, read_errors=0, bad=0)
    rnd = random.Random(a.seed)
    dev = Dev(a.dev, True)
    chk = Checker(m, False)
    nblocks = m.n // SPB
    lo = a.lo_block
    hi = min(nblocks, a.hi_block or nblocks)
    end = time.monotonic() + a.secs
    ops = 0
    read_errs = {}
    write_errs = {}
    try:
        while time.monotonic() < end and (not a.ops or ops < a.ops):
            ops += 1
            r = rnd.random()
            if r < a.pause:
                time.sleep(rnd.uniform(0.05, 0.5))
                continue
            if rnd.random() < a.read_frac:
                nb = rnd.randint(1, a.max_blocks)
                b = rnd.randrange(lo, hi - nb + 1)
                data, e = dev.pread(b * BLOCK, nb * BLOCK)
                m.stats["reads"] += 1
                if data is None:
                    m.stats["read_errors"] += 1
                    read_errs[errno.errorcode.get(e, str(e))] = read_errs.get(
                        errno.errorcode.get(e, str(e)), 0) + 1
                    continue
                chk.check(b * SPB, data, "run read")
                continue
            g = m.next_gen()
            if rnd.random() < a.partial:
                s = rnd.randrange(lo * SPB, hi * SPB)
                ok, e = dev.pwrite(stamp(s, g), s * SECTOR)
                s0, cnt = s, 1
            else:
                nb = rnd.randint(1, a.max_blocks)
                b = rnd.randrange(lo, hi - nb + 1)
                s0, cnt = b * SPB, nb * SPB
                ok, e = dev.pwrite(b"".join(stamp(s, g) for s in range(s0, s0 + cnt)),
                                   s0 * SECTOR)
            m.stats["writes"] += 1
            if not ok:
                m.stats["write_errors"] += 1
                k = errno.errorcode.get(e, str(e))
                write_errs[k] = write_errs.get(k, 0) + 1
            m.wrote(s0, cnt, g, ok)
    finally:
        os.close(dev.fd)
        save(m, a.state)
    summary(m, dict(read_errnos=read_errs, write_errnos=write_errs))
    if m.stats["bad"]:
        return 1
    if a.strict_reads and m.stats["read_errors"]:
        return 1
    return 0


def cmd_check(a):
    m = load(a.state)
    # a check's counts are its own; the model's run counts stay in the file
    m.stats = dict(writes=0, write_errors=0, reads=0, read_errors=0, bad=0)
    dev = Dev(a.dev, False)
    chk = Checker(m, a.any_gen)
    chunk = 64 * SPB
    err_blocks = []
    for s0 in range(0, m.n, chunk):
        cnt = min(chunk, m.n - s0)
        data, e = dev.pread(s0 * SECTOR, cnt * SECTOR)
        m.stats["reads"] += 1
        if data is None:
            # find the failing blocks one by one: a range error says little
            for b in range(s0 // SPB, (s0 + cnt) // SPB):
                d, e = dev.pread(b * BLOCK, BLOCK)
                if d is None:
                    m.stats["read_errors"] += 1
                    err_blocks.append(b)
                else:
                    chk.check(b * SPB, d, a.label)
            continue
        chk.check(s0, data, a.label)
    os.close(dev.fd)
    if err_blocks:
        print("%s: read errors on %d blocks, first %s" % (a.label, len(err_blocks), err_blocks[:10]),
              file=sys.stderr)
    summary(m, dict(error_blocks=len(err_blocks)))
    if m.stats["bad"]:
        return 1
    if a.strict_reads and m.stats["read_errors"]:
        return 1
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fill")
    f.add_argument("dev")
    f.add_argument("state")
    f.add_argument("--sectors", type=int, required=True)
    f.add_argument("--gen-start", type=int, default=0)
    f.add_argument("--history", action="store_true")
    f.add_argument("--state-in", action="store_true", help="continue an existing model")
    r = sub.add_parser("run")
    r.add_argument("dev")
    r.add_argument("state")
    r.add_argument("--secs", type=float, default=10)
    r.add_argument("--ops", type=int, default=0)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--partial", type=float, default=0.0)
    r.add_argument("--pause", type=float, default=0.0)
    r.add_argument("--read-frac", type=float, default=0.3)
    r.add_argument("--max-blocks", type=int, default=8)
    r.add_argument("--lo-block", type=int, default=0)
    r.add_argument("--hi-block", type=int, default=0)
    r.add_argument("--strict-reads", action="store_true")
    c = sub.add_parser("check")
    c.add_argument("dev")
    c.add_argument("state")
    c.add_argument("--any-gen", action="store_true")
    c.add_argument("--strict-reads", action="store_true")
    c.add_argument("--label", default="check")
    a = p.parse_args()
    return {"fill": cmd_fill, "run": cmd_run, "check": cmd_check}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
