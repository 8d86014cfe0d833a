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

    for f in (logf, rep):
        if os.path.exists(f):
            os.unlink(f)
    os.rmdir(tmp)
    if failures:
        print("replay-log test: %d failures" % failures)
        sys.exit(1)
    print("replay-log test: all passed")


if __name__ == "__main__":
    main()
