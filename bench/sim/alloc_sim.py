#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Hit ratio and SSD fill of cache allocation schemes on a skewed trace.

The question behind the cache engine's next step (docs/design.md,
"Allocation granularity"): how much of the SSD holds data, and how many
accesses hit, when a scattered hot set is cached
  - by whole sets, as today: one origin set (set_size blocks) per cache set;
  - by slots: origin slots of SLOT blocks, any slot in any frame, LRU;
  - by a decoupled sectored cache (Seznec, ISCA 1994): each cache set has
    T origin-set tags, and each block frame holds its offset's block of
    one of them;
  - by blocks, LRU: the ideal the others are measured against.
Eviction is instant here (no writeback, no quiet window): only placement
and replacement differ.  The trace: 4 KiB accesses, zipf(theta) ranks
scattered over the origin (as fio's zipf), or read from a fio iolog.

    bench/sim/alloc_sim.py [--cache-mib 128] [--ratio 8] [--theta 1.1]
                           [--accesses 2000000] [--iolog FILE]
Pure user space, seeded, deterministic.
"""
import argparse
import bisect
import random
from collections import OrderedDict

BLOCK = 4096


def zipf_trace(n_blocks, theta, count, seed):
    rng = random.Random(seed)
    weights = [1.0 / (r ** theta) for r in range(1, n_blocks + 1)]
    cum, total = [], 0.0
    for w in weights:
        total += w
        cum.append(total)
    perm = list(range(n_blocks))
    rng.shuffle(perm)           # hot blocks scattered over the origin
    for _ in range(count):
        yield perm[bisect.bisect_left(cum, rng.random() * total)]


def iolog_trace(path):
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) >= 4 and w[1] in ("read", "write"):
                yield int(w[2]) // BLOCK


class BlockLRU:
    name = "block LRU (ideal)"

    def __init__(self, cache_blocks):
        self.cap, self.lru = cache_blocks, OrderedDict()

    def access(self, b):
        if b in self.lru:
            self.lru.move_to_end(b)
            return True
        if len(self.lru) >= self.cap:
            self.lru.popitem(last=False)
        self.lru[b] = True
        return False

    def valid(self):
        return len(self.lru)


class SlotLRU:
    """Units of `unit` blocks, fully associative, LRU; blocks fill on miss."""

    def __init__(self, cache_blocks, unit, name):
        self.cap, self.unit, self.name = cache_blocks // unit, unit, name
        self.lru = OrderedDict()    # unit -> set of valid offsets
        self.nvalid = 0

    def access(self, b):
        u, off = divmod(b, self.unit)
        blocks = self.lru.get(u)
        if blocks is not None:
            self.lru.move_to_end(u)
            if off in blocks:
                return True
        else:
            if len(self.lru) >= self.cap:
                _, gone = self.lru.popitem(last=False)
                self.nvalid -= len(gone)
            blocks = self.lru[u] = set()
        blocks.add(off)
        self.nvalid += 1
        return False

    def valid(self):
        return self.nvalid


class Sectored:
    """Decoupled sectored cache: set-associative on origin sets, T tags."""

    def __init__(self, cache_blocks, set_blocks, tags):
        self.S, self.T = set_blocks, tags
        self.nsets = cache_blocks // set_blocks
        self.name = f"decoupled sectored, {tags} tags/set"
        # per cache set: tag LRU (origin set -> True), frames[i] = oset
        self.tags = [OrderedDict() for _ in range(self.nsets)]
        self.frames = [dict() for _ in range(self.nsets)]
        self.nvalid = 0

    def access(self, b):
        oset, off = divmod(b, self.S)
        cs = hash((oset * 2654435761) & 0xffffffff) % self.nsets
        tags, frames = self.tags[cs], self.frames[cs]
        if oset in tags:
            tags.move_to_end(oset)
            if frames.get(off) == oset:
                return True
        else:
            if len(tags) >= self.T:
                old, _ = tags.popitem(last=False)
                for i in [i for i, o in frames.items() if o == old]:
                    del frames[i]
                    self.nvalid -= 1
            tags[oset] = True
        if off not in frames:
            self.nvalid += 1
        frames[off] = oset          # a conflict replaces the other tag's block
        return False

    def valid(self):
        return self.nvalid


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache-mib", type=int, default=128)
    ap.add_argument("--ratio", type=int, default=8, help="origin / cache")
    ap.add_argument("--set-blocks", type=int, default=256)
    ap.add_argument("--theta", type=float, default=1.1)
    ap.add_argument("--accesses", type=int, default=2000000)
    ap.add_argument("--warmup", type=float, default=0.5,
                    help="share of the trace before counting")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iolog", help="a fio write_iolog instead of zipf")
    a = ap.parse_args()

    cache_blocks = a.cache_mib * (1 << 20) // BLOCK
    origin_blocks = cache_blocks * a.ratio
    S = a.set_blocks
    schemes = [
        SlotLRU(cache_blocks, S, f"whole sets ({S} blocks, today)"),
        SlotLRU(cache_blocks, 16, "64 KiB slots"),
        SlotLRU(cache_blocks, 4, "16 KiB slots"),
        Sectored(cache_blocks, S, 16),
        Sectored(cache_blocks, S, 64),
        BlockLRU(cache_blocks),
    ]
    if a.iolog:
        trace = list(iolog_trace(a.iolog))
        src = a.iolog
    else:
        trace = list(zipf_trace(origin_blocks, a.theta, a.accesses, a.seed))
        src = f"zipf {a.theta} over {origin_blocks} blocks, seed {a.seed}"
    start = int(len(trace) * a.warmup)
    print(f"cache {a.cache_mib} MiB ({cache_blocks} blocks), origin {a.ratio}x, "
          f"{len(trace)} accesses ({src}), counted after {start}")
    print(f"{'scheme':36} {'hit ratio':>9} {'vs ideal':>8} {'blocks valid':>12}")
    res = []
    for s in schemes:
        hits = 0
        for i, b in enumerate(trace):
            h = s.access(b)
            if i >= start and h:
                hits += 1
        res.append((s.name, hits / (len(trace) - start), s.valid() / cache_blocks))
    ideal = res[-1][1]
    for name, hr, fill in res:
        print(f"{name:36} {hr:9.3f} {hr / ideal if ideal else 0:8.2f} {fill:12.1%}")


if __name__ == "__main__":
    main()
