#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The frame map's structural hit ratio on fio traces, beside variants.

The frame map (docs/design.md, "Allocation granularity") put block b of
origin set o in frame b of cache set ssdp_oset_cset(o), one place per
block, until format 3 gave it a second (b ^ S/2).  Two hot blocks at the same offset of origin sets sharing a cache
set evict each other (clean) or lock each other out (dirty: the frame is
not taken until written back).  This replays the steady scenario's traces
(fio write_iolog: warm-up, then measured) through that placement with
instant cleaning whenever dirty blocks pass DIRTY_CAP of the cache (the
oldest dirty set first), and through the same with 2 or 4 candidate frames
per block (b, b ^ S/2, ...; a frame then says which offset it holds), to
separate what the structure costs from what timing costs in the engine.
Ways "2s" is the skewed second frame of format 4: block b of origin set o in
frame b or b ^ alt_xor(o), a hash of o onto the nonzero multiples of
min(64, S/4) below S (ssdp_alt_xor() of engine/ssdprio_format.h), so that the
origin sets sharing a cache set pair their blocks with different partners
and a hot offset's conflicts spread; "2" is format 3's b ^ S/2.
The victim between two clean candidates is the block used least recently,
except in "2s-t", the engine's own choice: the block whose origin set was
used least recently (its cache set's tag recency; the engine keeps no
recency per block within its 1-byte budget).
Tags are not limited (the steady scenario's origin sets fit the 15 tags).

    frame_sim.py NR_CSETS SET_BLOCKS WARM_LOG MEASURED_LOG [DIRTY_CAP...]
    frame_sim.py --json NR_CSETS SET_BLOCKS WARM_LOG MEASURED_LOG

Prints a table: ways, dirty cap, read hit ratio over the measured trace,
accesses locked out by a dirty block, share of frames holding data.  With
--json, one object for the engine's own placement (format 4's skewed second
frame, dirty cap 0.2, the automatic pressure point):
what the steady scenario sets beside the engine's measured hit ratio; and
read_hit_ratio_tag_victim, the same with the engine's victim choice ("2s-t").
"""
import json
import sys
from collections import Counter, OrderedDict

BLOCK = 4096


def ios(path):
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) >= 5 and w[-3] in ("read", "write"):
                yield w[-3] == "read", int(w[-2]) // BLOCK


def oset_cset(o, n):
    """ssdp_oset_cset() of engine/ssdprio_format.h."""
    h = ((o * 0x61c8864680b583eb) & ((1 << 64) - 1)) >> 32
    return (h * n) >> 32


def alt_xor(o, S):
    """ssdp_alt_xor() of engine/ssdprio_format.h, format 4."""
    if S < 4:
        return S // 2
    m64 = (1 << 64) - 1
    z = (o + 0x9e3779b97f4a7c15) & m64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & m64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & m64
    z ^= z >> 31
    g = min(64, S // 4)
    return g * (1 + (((z >> 32) * (S // g - 1)) >> 32))


def run(nsets, S, dirty_cap, trace, start, ways, victim="block"):
    frames = [dict() for _ in range(nsets)]    # frame -> [oset, off, dirty, stamp]
    ostamp = {}                                 # oset -> last access
    dirty_sets = OrderedDict()                  # oldest first
    ndirty, c, cap = 0, Counter(), nsets * S
    # The victim of two clean candidates: the block used least recently
    # (a stamp per frame), or the engine's own choice, the block whose
    # origin set was used least recently (the tag recency of its cache set).
    def age(v):
        return v[3] if victim == "block" else ostamp[v[0]]

    step = [0, S // 2, S // 4, 3 * S // 4][:ways if ways != "2s" else 2]
    for i, (is_read, b) in enumerate(trace):
        o, off = divmod(b, S)
        cs = oset_cset(o, nsets)
        fr, counted = frames[cs], i >= start
        ostamp[o] = i
        if ways == "2s":
            cands = [off, off ^ alt_xor(o, S)]
        else:
            cands = [off ^ s for s in step]
        at = next((f for f in cands if f in fr and fr[f][0] == o and fr[f][1] == off), None)
        if at is not None:
            if is_read:
                c["hit"] += counted
            elif not fr[at][2]:
                fr[at][2] = True
                ndirty += 1
                dirty_sets.setdefault(cs, True)
            fr[at][3] = i
            continue
        c["miss"] += counted and is_read
        best = None
        for f in cands:
            if f not in fr:
                best = f
                break
            if not fr[f][2] and (best is None or
                                 age(fr[f]) < age(fr[best])):
                best = f
        if best is None:
            c["locked"] += counted
            continue
        fr[best] = [o, off, not is_read, i]
        if not is_read:
            ndirty += 1
            dirty_sets.setdefault(cs, True)
        while ndirty > dirty_cap * cap and dirty_sets:
            old, _ = dirty_sets.popitem(last=False)
            for v in frames[old].values():
                if v[2]:
                    v[2] = False
                    ndirty -= 1
    reads = c["hit"] + c["miss"]
    return (c["hit"] / reads if reads else 0, c["locked"],
            sum(len(f) for f in frames) / cap)


def main():
    args = sys.argv[1:]
    as_json = bool(args) and args[0] == "--json"
    if as_json:
        args = args[1:]
    if len(args) < 4:
        sys.exit(__doc__)
    nsets, S = int(args[0]), int(args[1])
    warm = list(ios(args[2]))
    trace = warm + list(ios(args[3]))
    if as_json:
        hr, locked, used = run(nsets, S, 0.2, trace, len(warm), "2s")
        hrt = run(nsets, S, 0.2, trace, len(warm), "2s", "tag")[0]
        print(json.dumps({"read_hit_ratio": round(hr, 4), "locked_out": locked,
                          "frames_used": round(used, 4),
                          "read_hit_ratio_tag_victim": round(hrt, 4)}))
        return
    caps = [float(x) for x in args[4:]] or [1.0, 0.2, 0.1]
    print(f"{'ways':>4} {'dirty cap':>9} {'read hits':>9} {'locked out':>10} {'frames used':>11}")
    for label, ways, victim in ((1, 1, "block"), (2, 2, "block"),
                                ("2s", "2s", "block"), ("2s-t", "2s", "tag"),
                                (4, 4, "block")):
        for cap in caps:
            hr, locked, used = run(nsets, S, cap, trace, len(warm), ways,
                                   victim)
            print(f"{label!s:>4} {cap:9.2f} {hr:9.3f} {locked:10} {used:11.1%}")


if __name__ == "__main__":
    main()
