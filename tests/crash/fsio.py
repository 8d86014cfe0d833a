#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""fsync'ing file writer and its checker, for power-cut tests on a file system.

  fsio.py write DIR LOG --seed S [--pause-ms MS] [--count N]
  fsio.py check DIR LOG --seed S

`write` runs operations on files f000001... in DIR, one at a time, for ever
(or --count operations), each made durable the POSIX way before it is
logged as done:
  create/replace NAME: write the new content to a temporary file, fsync it,
      rename it over NAME, fsync DIR;
  delete NAME: unlink, fsync DIR.
Before an operation, "I SEQ OP NAME" is appended to LOG; after it is durable,
"D SEQ". File contents are a function of the seed and SEQ. LOG is meant to be
on the host's 9p export, so it outlives the guest.

`check` replays LOG: every file whose last operation is done must have
exactly that content (or be absent if deleted); the one operation in flight
at the crash (an I without its D) may have happened or not; no other file
may exist (temporary files excepted). Exit 0 = consistent, 1 = not (each
problem listed), 2 = usage error.
"""

import argparse
import os
import random
import sys
import time
import zlib

TMP_PREFIX = ".tmp"


def content(seed, seq):
    rng = random.Random(seed * 1000003 + seq)
    size = rng.choice([rng.randint(1, 4096), rng.randint(1, 65536), rng.randint(1, 262144)])
    return rng.randbytes(size)


def log_line(fd, text):
    os.write(fd, (text + "\n").encode())
    # The log must outlive the guest: 9p in 6.12 (netfs) caches writes in
    # the guest's page cache, which a killed QEMU loses.
    os.fsync(fd)


def fsync_dir(d):
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def cmd_write(a):
    lfd = os.open(a.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    rng = random.Random(a.seed)
    files = []
    next_name = 1
    seq = 0
    while not a.count or seq < a.count:
        seq += 1
        r = rng.random()
        if len(files) < 8 or r < 0.5:
            op, name = "create", "f%06d" % next_name
            next_name += 1
        elif r < 0.85:
            op, name = "replace", rng.choice(files)
        else:
            op, name = "delete", rng.choice(files)
        log_line(lfd, "I %d %s %s" % (seq, op, name))
        path = os.path.join(a.dir, name)
        if op == "delete":
            os.unlink(path)
            files.remove(name)
        else:
            tmp = os.path.join(a.dir, "%s%d" % (TMP_PREFIX, seq))
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            data = content(a.seed, seq)
            if os.write(fd, data) != len(data):
                sys.exit("fsio: short write")
            os.fsync(fd)
            os.close(fd)
            os.rename(tmp, path)
            if op == "create":
                files.append(name)
        fsync_dir(a.dir)
        log_line(lfd, "D %d" % seq)
        if a.pause_ms:
            time.sleep(rng.random() * a.pause_ms / 1000.0)
    print("fsio: %d operations" % seq)


def cmd_check(a):
    state = {}  # name -> seq of the content it must have, or None if deleted
    intents = {}
    done = set()
    with open(a.log) as f:
        for line in f:
            if not line.endswith("\n"):
                continue
            w = line.split()
            if w[0] == "I":
                intents[int(w[1])] = (w[2], w[3])
            elif w[0] == "D":
                seq = int(w[1])
                done.add(seq)
                op, name = intents[seq]
                state[name] = None if op == "delete" else seq
    pending = [s for s in intents if s not in done]
    if len(pending) > 1:
        sys.exit("fsio: log has %d operations without a D line: %s" % (len(pending), pending))
    pend_name, pend_allowed = None, set()
    if pending:
        op, pend_name = intents[pending[0]]
        pend_allowed = {state.get(pend_name), None if op == "delete" else pending[0]}
    bad = 0
    present = {n for n in os.listdir(a.dir) if not n.startswith(TMP_PREFIX) and n != "lost+found"}
    ok = 0
    for name in sorted(set(state) | present | ({pend_name} if pend_name else set())):
        path = os.path.join(a.dir, name)
        if name in present:
            with open(path, "rb") as f:
                data = f.read()
        else:
            data = None
        allowed = pend_allowed if name == pend_name else {state.get(name)}
        matched = False
        for seq in allowed:
            if seq is None:
                matched = matched or data is None
            elif data is not None:
                want = content(a.seed, seq)
                matched = matched or (data == want)
        if matched:
            ok += 1
            continue
        bad += 1
        desc = "absent" if data is None else "%d bytes, crc32 %08x" % (len(data), zlib.crc32(data))
        wants = []
        for seq in allowed:
            if seq is None:
                wants.append("absent")
            else:
                want = content(a.seed, seq)
                wants.append("content of op %d (%d bytes, crc32 %08x)" % (seq, len(want), zlib.crc32(want)))
        print("BAD %s: %s; expected %s" % (path, desc, " or ".join(wants)))
    print("fsio check %s: %d operations done, %s in flight, %d names ok, %d bad"
          % (a.dir, len(done), "1" if pending else "none", ok, bad))
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cmd", choices=["write", "check"])
    p.add_argument("dir")
    p.add_argument("log")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--pause-ms", type=float, default=0)
    p.add_argument("--count", type=int, default=0)
    a = p.parse_args()
    if a.cmd == "write":
        cmd_write(a)
        return 0
    return cmd_check(a)


if __name__ == "__main__":
    sys.exit(main())
