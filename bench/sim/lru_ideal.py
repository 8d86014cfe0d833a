#!/usr/bin/env python3
"""The hit ratio an ideal block-granular LRU cache of a given capacity gets
on fio traces (write_iolog, version 2 or 3): every block read or written is
cached (write-allocate, read-allocate), the least recently used block goes
first.  What a cache of whole sets cannot beat on scattered hot blocks; the
steady scenario reports each cache's hit ratio beside it.

    lru_ideal.py CAPACITY_BLOCKS BLOCK_BYTES WARM_LOG MEASURED_LOG

The warm-up trace fills the cache; the measured trace is counted.  Prints
one JSON object: read and write hit ratios over the measured trace.
"""
import json
import sys
from collections import OrderedDict


def ios(path, block):
    """(is_read, first_block, nr_blocks) for each read or write."""
    with open(path) as f:
        for line in f:
            w = line.split()
            # v3: time file action offset len; v2: file action offset len
            if len(w) >= 5 and w[-3] in ("read", "write"):
                act, off, ln = w[-3], int(w[-2]), int(w[-1])
            elif len(w) == 4 and w[1] in ("read", "write"):
                act, off, ln = w[1], int(w[2]), int(w[3])
            else:
                continue
            first = off // block
            last = (off + ln - 1) // block
            yield act == "read", first, last - first + 1


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    cap, block = int(sys.argv[1]), int(sys.argv[2])
    lru = OrderedDict()
    count = {True: [0, 0], False: [0, 0]}  # is_read -> [hits, all]

    def access(b, counted, is_read):
        hit = b in lru
        if hit:
            lru.move_to_end(b)
        else:
            lru[b] = True
            if len(lru) > cap:
                lru.popitem(last=False)
        if counted:
            count[is_read][0] += hit
            count[is_read][1] += 1

    for path, counted in ((sys.argv[3], False), (sys.argv[4], True)):
        for is_read, first, nr in ios(path, block):
            for b in range(first, first + nr):
                access(b, counted, is_read)

    def ratio(c):
        return round(c[0] / c[1], 4) if c[1] else None

    print(json.dumps({"read_hit_ratio": ratio(count[True]),
                      "write_hit_ratio": ratio(count[False]),
                      "reads": count[True][1], "writes": count[False][1]}))


if __name__ == "__main__":
    main()
