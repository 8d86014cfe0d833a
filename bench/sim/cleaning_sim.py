#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Cleaning policies for the frame map under a load that never pauses.

The frame map gives block b of an origin set one frame: b of its cache set.
A frame holding another origin set's dirty block refuses the claim until
that block is written back, and under continuous load the engine writes
back only when the cache as a whole runs short of non-dirty frames
(pressure, at twice dirty_target): dirty blocks of a hot set that has gone
cold lock the new hot blocks out.  This replays fio traces (write_iolog)
through the placement with no quiet window at all, dirty data written back
at the pace of the pressure share: one origin write (one dirty
run of one origin set) per WB_EVERY accesses, under three policies:
  today:        the oldest dirty set, while dirty blocks exceed PRESSURE_AT;
  lock-out:     that, plus every set whose dirty block refused a claim, first;
  lock-out run: that, but only the dirty run from the refusing frame (what
                the engine does: a writeback holds its set, writes to it wait).

    cleaning_sim.py NR_CSETS SET_BLOCKS [--pressure-at 0.2] [--wb-every 100]
                    LOG[:counted] ...

Logs are replayed in order; the read hit ratio is counted over those marked
":counted" (all if none is).  Prints, per policy: the read hit ratio, the
dirty share at the end, blocks written back, and the read hit ratio per
1000 accesses of the counted part.
"""
import argparse
import os
import sys
from collections import OrderedDict, deque

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frame_sim import ios, oset_cset  # noqa: E402  (the same trace reader and placement)


def run(trace, nsets, S, pressure_at, wb_every, lockout, run_only=False):
    frames = [dict() for _ in range(nsets)]     # offset -> [oset, dirty]
    dirty_sets = OrderedDict()                   # oldest first
    queue, queued = deque(), set()
    ndirty, written, since = 0, 0, 0
    hits = reads = win_hits = win_reads = 0
    series = []
    cap = nsets * S
    for is_read, b, counted in trace:
        o, off = divmod(b, S)
        cs = oset_cset(o, nsets)
        fr = frames[cs]
        v = fr.get(off)
        hit = bool(v) and v[0] == o
        if hit and not is_read and not v[1]:
            v[1] = True
            ndirty += 1
            dirty_sets.setdefault(cs, True)
        elif not hit:
            if v and v[1]:
                if lockout and cs not in queued:
                    queue.append((cs, off if run_only else None))
                    queued.add(cs)
            else:
                fr[off] = [o, not is_read]
                if not is_read:
                    ndirty += 1
                    dirty_sets.setdefault(cs, True)
        if is_read and counted:
            hits += hit
            reads += 1
            win_hits += hit
            win_reads += 1
            if win_reads == 1000:
                series.append(round(win_hits / win_reads, 2))
                win_hits = win_reads = 0
        if ndirty > pressure_at * cap and dirty_sets and not queue:
            c = next(iter(dirty_sets))
            queue.append((c, None))
            queued.add(c)
        since += 1
        if queue and since >= wb_every:
            since = 0
            c, first = queue.popleft()
            queued.discard(c)
            if first is None:
                run_offs = list(frames[c])
            else:
                owner, run_offs, k = frames[c].get(first, [None])[0], [], first
                while k in frames[c] and frames[c][k][0] == owner and frames[c][k][1]:
                    run_offs.append(k)
                    k += 1
            runs, prev = 0, None
            for k in sorted(run_offs):
                x = frames[c][k]
                if x[1]:
                    runs += prev is None or prev != (x[0], k - 1)
                    prev = (x[0], k)
                    x[1] = False
                    ndirty -= 1
                    written += 1
            # One origin write per run: the next waits for as many slots.
            since = -wb_every * max(runs - 1, 0)
            if not any(x[1] for x in frames[c].values()):
                dirty_sets.pop(c, None)
    return hits / max(reads, 1), ndirty / cap, written, series


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("nsets", type=int)
    ap.add_argument("set_blocks", type=int)
    ap.add_argument("--pressure-at", type=float, default=0.2)
    ap.add_argument("--wb-every", type=int, default=100)
    ap.add_argument("logs", nargs="+")
    a = ap.parse_args()
    marked = any(p.endswith(":counted") for p in a.logs)
    trace = []
    for p in a.logs:
        counted = p.endswith(":counted") or not marked
        path = p[:-len(":counted")] if p.endswith(":counted") else p
        trace += [(r, b, counted) for r, b in ios(path)]
    for name, lockout, run_only in (("today", False, False), ("lock-out", True, False),
                                    ("lock-out run", True, True)):
        hr, dirty, written, series = run(trace, a.nsets, a.set_blocks, a.pressure_at,
                                         a.wb_every, lockout, run_only)
        print(f"{name:12} read hits {hr:.3f}  dirty at end {dirty:5.1%}  written back {written}")
        print(f"{'':12} per 1000 reads: {' '.join(str(x) for x in series)}")


if __name__ == "__main__":
    main()
