#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host test of tools/replay-log: craft dm-log-writes logs in user space (the
format of drivers/md/dm-log-writes.c), replay them into files and compare with
a model; list, find-flushes, marks, limits, incremental replay, discards and
malformed logs.

usage: test-replay-log.py PATH/TO/replay-log
"""
import os
import struct
import subprocess
import sys
import tempfile

FLUSH, FUA, DISCARD, MARK, META = 1, 2, 4, 8, 16
MAGIC, VERSION = 0x6a736677736872, 1

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def pattern(tag, n):
    """n bytes of recognisable data for tag."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += ("%s-%d|" % (tag, i)).encode()
        i += 1
    return bytes(out[:n])


class Log:
    """A log under construction: entries as the kernel writes them."""

    def __init__(self, ss):
        self.ss = ss
        self.entries = []  # (sector, nr, flags, payload)

    def write(self, sector, data, flags=0):
        assert len(data) % self.ss == 0
        self.entries.append((sector, len(data) // self.ss, flags, data))

    def flush(self):
        self.entries.append((0, 0, FLUSH, b""))

    def discard(self, sector, nr):
        self.entries.append((sector, nr, DISCARD, b""))

    def mark(self, text):
        self.entries.append((0, 0, MARK, text.encode()))

    def build(self, nr_entries=None, pad=0):
        ss = self.ss
        sup = struct.pack("<QQQI", MAGIC, VERSION,
                          len(self.entries) if nr_entries is None else nr_entries, ss)
        # the kernel's struct is padded to 32 bytes with stack garbage
        out = bytearray(sup + b"\xa5" * 4 + b"\0" * (ss - 32))
        for sector, nr, flags, payload in self.entries:
            hdr = struct.pack("<QQQQ", sector, nr, flags, len(payload) if flags & MARK else 0)
            if flags & MARK:
                hdr += payload
            out += hdr + b"\0" * (ss - len(hdr))
            if not flags & (MARK | DISCARD):
                out += payload
        return bytes(out) + b"\0" * pad


def model(log, upto, start=0, base=None, size=None, discard_fill=b"\0"):
    """The replay file after entries [start, upto] (inclusive)."""
    img = bytearray(base)
    for i, (sector, nr, flags, payload) in enumerate(log.entries):
        if i < start or i > upto:
            continue
        off = sector * log.ss
        if flags & MARK:
            continue
        if flags & DISCARD:
            img[off:off + nr * log.ss] = discard_fill * (nr * log.ss)
        else:
            img[off:off + len(payload)] = payload
    return bytes(img)


def run(tool, *args, rc=0):
    p = subprocess.run([tool] + list(args), capture_output=True, text=True)
    check(p.returncode == rc, "%s: exit %d, expected %d; stderr: %s" %
          (" ".join(args), p.returncode, rc, p.stderr.strip()))
    return p


def main():
    tool = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="replay-log-test.")
    logf, rep = os.path.join(tmp, "log"), os.path.join(tmp, "replay")
    size = 64 * 4096
    base = b"\xee" * size

    def fresh():
        with open(rep, "wb") as f:
            f.write(base)

    def content():
        with open(rep, "rb") as f:
            return f.read()

    for ss in (512, 4096):
        lg = Log(ss)
        lg.write(0, pattern("a", 8 * 512))                 # 0
        lg.write(40, pattern("b", ss))                     # 1
        lg.flush()                                          # 2
        lg.mark("m1")                                       # 3
        lg.write(0, pattern("c", 2 * ss), FUA | META)      # 4
        lg.discard(40, 1)                                   # 5
        lg.write(8, pattern("d", 4 * ss), FLUSH)           # 6 flush with data
        lg.mark("two words\\x")                             # 7
        lg.write(20, pattern("e", ss))                     # 8
        lg.flush()                                          # 9
        lg.mark("dm-log-writes-end")                       # 10
        with open(logf, "wb") as f:
            f.write(lg.build())
        n = len(lg.entries)

        p = run(tool, "--log", logf, "--list")
        lines = [l for l in p.stdout.splitlines() if not l.startswith("#")]
        check(len(lines) == n, "ss %d: --list printed %d entries, not %d" % (ss, len(lines), n))
        want = ["0 0 %d WRITE" % (8 * 512 // ss), "1 40 1 WRITE", "2 0 0 FLUSH", "3 0 0 MARK m1",
                "4 0 2 FUA|METADATA", "5 40 1 DISCARD", "6 8 4 FLUSH",
                "7 0 0 MARK two\\x20words\\x5cx", "8 20 1 WRITE", "9 0 0 FLUSH",
                "10 0 0 MARK dm-log-writes-end"]
        check(lines == want, "ss %d: --list:\n%s\nexpected:\n%s" % (ss, "\n".join(lines), "\n".join(want)))
        check("sectorsize %d, %d entries" % (ss, n) in p.stdout.splitlines()[0],
              "ss %d: --list header: %s" % (ss, p.stdout.splitlines()[0]))

        p = run(tool, "--log", logf, "--find-flushes")
        check(p.stdout.split() == ["2", "4", "6", "9"], "ss %d: --find-flushes: %s" % (ss, p.stdout.split()))
        p = run(tool, "--log", logf, "--find-flushes", "--start-entry", "3", "--limit", "6")
        check(p.stdout.split() == ["4", "6"], "ss %d: --find-flushes in range: %s" % (ss, p.stdout.split()))

        # whole log, discards as zeroes
        fresh()
        run(tool, "--log", logf, "--replay", rep, "--discard-zeroes")
        check(content() == model(lg, n, base=base), "ss %d: full replay differs from the model" % ss)

        # discards passed on: a punched hole in a file reads as zeroes
        fresh()
        run(tool, "--log", logf, "--replay", rep)
        check(content() == model(lg, n, base=base), "ss %d: replay with hole punching differs" % ss)

        # up to a mark, and to an entry
        fresh()
        run(tool, "--log", logf, "--replay", rep, "--end-mark", "m1")
        check(content() == model(lg, 3, base=base), "ss %d: --end-mark m1 differs" % ss)
        fresh()
        run(tool, "--log", logf, "--replay", rep, "--limit", "4", "--discard-zeroes")
        check(content() == model(lg, 4, base=base), "ss %d: --limit 4 differs" % ss)

        # incremental: each flush in turn continues from the previous one
        fresh()
        prev = -1
        for stop in (2, 4, 6, 9):
            run(tool, "--log", logf, "--replay", rep, "--start-entry", str(prev + 1),
                "--limit", str(stop), "--discard-zeroes")
            check(content() == model(lg, stop, base=base),
                  "ss %d: incremental replay to %d differs" % (ss, stop))
            prev = stop
        # --limit beyond the end: everything
        fresh()
        run(tool, "--log", logf, "--replay", rep, "--limit", "1000", "--discard-zeroes")
        check(content() == model(lg, n, base=base), "ss %d: --limit past the end differs" % ss)
        p = run(tool, "--log", logf, "--list", "--end-mark", "two words\\x")
        got = [l.split()[0] for l in p.stdout.splitlines() if not l.startswith("#")]
        check(got == [str(i) for i in range(8)], "ss %d: --list --end-mark: %s" % (ss, got))
        # a mark searched from the start entry on
        p = run(tool, "--log", logf, "--list", "--start-entry", "4", "--end-mark", "m1", rc=1)
        check("not found" in p.stderr, "ss %d: missing mark message: %s" % (ss, p.stderr))

    # --crash-window: a power cut's state of the unflushed entries.
    lg = Log(512)
    lg.write(0, pattern("a", 8 * 512))              # 0 (before the window)
    lg.flush()                                      # 1
    lg.write(100, pattern("b", 8 * 512))            # 2 plain, in the tear range
    lg.write(200, pattern("c", 8 * 512))            # 3 plain, outside it
    lg.write(300, pattern("d", 8 * 512), FUA)       # 4 FUA, outside
    lg.write(104, pattern("e", 8 * 512), FUA)       # 5 FUA, in the tear range
    lg.mark("m")                                    # 6
    lg.discard(400, 8)                              # 7
    lg.write(100, pattern("f", 512))                # 8 over b's first sector
    lg.flush()                                      # 9 ends the window
    lg.write(450, pattern("x", 8 * 512))            # 10 (after it)
    with open(logf, "wb") as f:
        f.write(lg.build())
    ss = 512

    def sec(img, s_):
        return img[s_ * ss:(s_ + 1) * ss]

    def of(entry, k):
        return lg.entries[entry][3][k * ss:(k + 1) * ss]

    seen = {"b_torn": 0, "b_whole": 0, "b_none": 0, "e_torn": 0, "d": 0, "no_d": 0,
            "disc": 0, "nodisc": 0}
    states = set()
    for seed in range(1, 301):
        fresh()
        p = run(tool, "--log", logf, "--replay", rep, "--discard-zeroes", "--start-entry", "2",
                "--crash-window", "--seed", str(seed), "--tear-range", "96+16")
        img = content()
        states.add(img)
        check(p.stdout.startswith("crash window: entries [2, 9) (up to the next FLUSH)"),
              "seed %d: summary: %s" % (seed, p.stdout.strip()))
        # Nothing before the window nor from its FLUSH on is written.
        for s_ in list(range(0, 8)) + list(range(450, 458)):
            check(sec(img, s_) == base[:ss], "seed %d: sector %d written outside the window" % (seed, s_))
        # Outside the tear range a write is whole or absent.
        for ent, lo in ((3, 200), (4, 300)):
            got = [sec(img, lo + k) == of(ent, k) for k in range(8)]
            none = all(sec(img, lo + k) == base[:ss] for k in range(8))
            check(all(got) or none, "seed %d: entry %d partly written outside the tear range" % (seed, ent))
        d_whole = all(sec(img, 300 + k) == of(4, k) for k in range(8))
        seen["d" if d_whole else "no_d"] += 1
        e_in = [sec(img, 104 + k) == of(5, k) for k in range(8)]
        if any(e_in):
            check(d_whole, "seed %d: the second FUA write landed without the first" % seed)
        if any(e_in) and not all(e_in):
            seen["e_torn"] += 1
        # b (sectors 100-107) under e (104-111) and f (100): each sector is
        # the newest applied write's, never an older one over a newer.
        b_in = [sec(img, 100 + k) == of(2, k) for k in range(4)]
        for k in range(8):
            v = sec(img, 100 + k)
            ok = [base[:ss], of(2, k)]
            if k == 0:
                ok.append(of(8, 0))
            if k >= 4:
                ok.append(of(5, k - 4))
            check(v in ok, "seed %d: sector %d holds data no write gave it" % (seed, 100 + k))
            if k >= 4 and e_in[k - 4]:
                check(v == of(5, k - 4), "seed %d: sector %d: an older write over a newer" % (seed, 100 + k))
        if all(b_in[1:]):
            seen["b_whole"] += 1
        elif any(b_in[1:]):
            seen["b_torn"] += 1
        else:
            seen["b_none"] += 1
        zero = all(sec(img, 400 + k) == b"\0" * ss for k in range(8))
        untouched = all(sec(img, 400 + k) == base[:ss] for k in range(8))
        check(zero or untouched, "seed %d: discard half done" % seed)
        seen["disc" if zero else "nodisc"] += 1
    for k, v in seen.items():
        check(v > 0, "crash window: never saw %s in 300 seeds: %s" % (k, seen))
    check(len(states) > 20, "crash window: only %d distinct states" % len(states))
    # --must-tear: every state tears a write where one can.
    for seed in range(1, 41):
        fresh()
        p = run(tool, "--log", logf, "--replay", rep, "--discard-zeroes", "--start-entry", "2",
                "--crash-window", "--seed", str(seed), "--tear-range", "96+16", "--must-tear")
        check(" 0 torn," not in p.stdout, "seed %d: --must-tear tore nothing: %s" % (seed, p.stdout.strip()))
    # Where nothing can tear, it does not loop.
    fresh()
    p = run(tool, "--log", logf, "--replay", rep, "--start-entry", "2", "--crash-window",
            "--tear-range", "1000+16", "--must-tear")
    check(" 0 torn," in p.stdout, "--must-tear outside any write: %s" % p.stdout.strip())
    run(tool, "--log", logf, "--replay", rep, "--must-tear", rc=2)
    # The same seed gives the same state.
    outs = []
    for _ in range(2):
        fresh()
        run(tool, "--log", logf, "--replay", rep, "--discard-zeroes", "--start-entry", "2",
            "--crash-window", "--seed", "7", "--tear-range", "96+16")
        outs.append(content())
    check(outs[0] == outs[1], "crash window: seed 7 gave two states")
    # A window with no FLUSH after it runs to the log's end; an empty one
    # writes nothing.
    fresh()
    p = run(tool, "--log", logf, "--replay", rep, "--start-entry", "10", "--crash-window")
    check("up to the log's end" in p.stdout and "entries [10, 11)" in p.stdout,
          "crash window at the end: %s" % p.stdout.strip())
    fresh()
    p = run(tool, "--log", logf, "--replay", rep, "--start-entry", "8", "--crash-window",
            "--seed", "2")
    check("entries [8, 9)" in p.stdout, "one-entry window: %s" % p.stdout.strip())
    # Empty flushes at the start are passed: the window is the next epoch.
    fresh()
    p = run(tool, "--log", logf, "--replay", rep, "--start-entry", "1", "--crash-window")
    check("entries [2, 9)" in p.stdout, "window after an empty flush: %s" % p.stdout.strip())
    lg.flush()                                      # 11
    lg.flush()                                      # 12
    with open(logf, "wb") as f:
        f.write(lg.build())
    fresh()
    p = run(tool, "--log", logf, "--replay", rep, "--start-entry", "11", "--crash-window")
    check(content() == base and "entries [13, 13)" in p.stdout and
          "0 whole, 0 torn, 0 dropped" in p.stdout,
          "empty crash window wrote something: %s" % p.stdout.strip())
    run(tool, "--log", logf, "--crash-window", rc=2)
    run(tool, "--log", logf, "--replay", rep, "--crash-window", "--limit", "3", rc=2)
    run(tool, "--log", logf, "--replay", rep, "--seed", "3", rc=2)
    run(tool, "--log", logf, "--replay", rep, "--crash-window", "--tear-range", "5", rc=2)

    # --order: a plain write queued after the cut FUA write completed is
    # never written; one queued before it may be.  A commit (FUA, in the
    # tear range) and two plain writes logged at the next flush: g queued
    # before the commit completed, h after.
    lg = Log(512)
    lg.write(0, pattern("a", 8 * 512))              # 0
    lg.flush()                                      # 1
    lg.write(96, pattern("m", 8 * 512), FUA)        # 2 the commit
    lg.write(200, pattern("g", 8 * 512))            # 3 queued before 2 completed
    lg.write(300, pattern("h", 8 * 512))            # 4 queued after
    lg.flush()                                      # 5
    with open(logf, "wb") as f:
        f.write(lg.build())
    orderf = os.path.join(tmp, "order")
    trace = ["Q 0 8", "C 0 8", "Q 96 8", "Q 200 8", "C 96 8", "Q 300 8", "C 200 8", "C 300 8"]
    with open(orderf, "w") as f:
        f.write("\n".join(trace) + "\n")
    seen = {"cut": 0, "g_cut": 0, "h_whole": 0}
    for seed in range(1, 201):
        fresh()
        p = run(tool, "--log", logf, "--replay", rep, "--start-entry", "2", "--crash-window",
                "--seed", str(seed), "--tear-range", "96+8", "--order", orderf)
        img = content()
        m_whole = all(sec(img, 96 + k) == lg.entries[2][3][k * ss:(k + 1) * ss] for k in range(8))
        g_in = sec(img, 200) != base[:ss]
        h_in = sec(img, 300) != base[:ss]
        if not m_whole:
            seen["cut"] += 1
            check(not h_in, "seed %d: a write queued after the cut FUA landed: %s" % (seed, p.stdout.strip()))
            seen["g_cut"] += g_in
            check(" 0 queued after the cut FUA" not in p.stdout or not h_in,
                  "seed %d: summary: %s" % (seed, p.stdout.strip()))
        else:
            seen["h_whole"] += h_in
    for k, v in seen.items():
        check(v > 0, "--order: never saw %s in 200 seeds: %s" % (k, seen))
    # A trace that does not match the log is not used, and says so.
    with open(orderf, "w") as f:
        f.write("\n".join(trace[:-1]) + "\n")
    h_cut = 0
    for seed in range(1, 201):
        fresh()
        p = run(tool, "--log", logf, "--replay", rep, "--start-entry", "2", "--crash-window",
                "--seed", str(seed), "--tear-range", "96+8", "--order", orderf)
        check("not used" in p.stderr, "--order, a short trace: no message: %s" % p.stderr)
        img = content()
        m_whole = all(sec(img, 96 + k) == lg.entries[2][3][k * ss:(k + 1) * ss] for k in range(8))
        h_cut += not m_whole and sec(img, 300) != base[:ss]
    check(h_cut > 0, "--order, a short trace: still used")
    with open(orderf, "w") as f:
        f.write("X 1 2\n")
    run(tool, "--log", logf, "--replay", rep, "--start-entry", "2", "--crash-window",
        "--order", orderf, rc=1)
    run(tool, "--log", logf, "--replay", rep, "--order", orderf, rc=2)

    # Malformed logs are refused before anything is written.
    lg = Log(512)
    lg.write(0, pattern("x", 1024))
    lg.flush()
    good = lg.build()

    def refused(data, what, *extra):
        with open(logf, "wb") as f:
            f.write(data)
        fresh()
        p = run(tool, "--log", logf, "--replay", rep, *extra, rc=1)
        check(content() == base, "%s: replay target was modified" % what)
        check(p.stderr.strip() != "", "%s: no message" % what)
        return p.stderr

    bad = bytearray(good)
    bad[0] ^= 1
    check("magic" in refused(bytes(bad), "bad magic"), "bad magic: message")
    bad = bytearray(good)
    bad[8] = 2
    check("version" in refused(bytes(bad), "bad version"), "bad version: message")
    bad = bytearray(good)
    struct.pack_into("<I", bad, 24, 768)
    check("sector size" in refused(bytes(bad), "bad sector size"), "bad sector size: message")
    refused(good[:512 + 512 + 512], "truncated data")
    refused(lg.build(nr_entries=3), "more entries than the log holds")
    refused(good, "unknown mark", "--end-mark", "nope")
    lg2 = Log(512)
    lg2.write(size // 512 - 1, pattern("y", 1024))
    refused(lg2.build(), "write past the end of the target")

    # Usage errors
    run(tool, rc=2)
    run(tool, "--log", logf, rc=2)
    run(tool, "--log", logf, "--list", "--limit", "x", rc=2)
    run(tool, "--log", logf, "--list", "--find-flushes", rc=2)
    run(tool, "--help", rc=0)

    for f in (logf, rep, os.path.join(tmp, "order")):
        if os.path.exists(f):
            os.unlink(f)
    os.rmdir(tmp)
    if failures:
        print("replay-log test: %d failures" % failures)
        sys.exit(1)
    print("replay-log test: all passed")


if __name__ == "__main__":
    main()
