#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Corrupt the metadata of an ssdprio cache device (drivers/ssdprio_format.h)
in one random way, and say how on stdout (one line).

  metacorrupt.py DEV --seed S [--kind KIND] [--nr-osets N]

Kinds: random damage that the checksums must catch (bit flips, zeroed
sectors or metadata blocks, random bytes; superblock, one record copy,
both copies of a record), and forged values with a correct checksum that
the loader must judge on their own (superblock fields; records with an
origin set out of range, another cache set's index, a free set with valid
blocks, dirty blocks that are not valid, huge sequence numbers).  Forged
records never claim blocks or origin sets that another record could own:
that is indistinguishable from real metadata.
"""
import argparse
import mmap
import os
import random
import struct
import sys

SB = struct.Struct("<QIIII16s16sQQIIQIIQQQ")  # up to format_time; crc at 508
SB_FIELDS = ("magic version flags compat incompat uuid origin_id origin_sectors cache_sectors "
             "block_sectors set_blocks nr_csets rec_bytes rec_sectors data_start seq format_time").split()
REC = struct.Struct("<IIQQQ")  # crc cset oset seq map_seq
BLK = 4096

_table = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    _table.append(c)


def crc32c(seed, data):
    crc = seed
    for b in data:
        crc = _table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


class Dev:
    def __init__(self, path):
        self.fd = os.open(path, os.O_RDWR | os.O_DIRECT)
        self.buf = mmap.mmap(-1, BLK)

    def read(self, sector):  # the 4 KiB block holding @sector (8-aligned)
        off = sector // 8 * BLK
        os.preadv(self.fd, [self.buf], off)
        return bytearray(self.buf[:]), off

    def write(self, data, off):
        self.buf[:] = bytes(data)
        if os.pwrite(self.fd, self.buf, off) != BLK:
            raise SystemExit("short write")
        os.fsync(self.fd)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dev")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--kind")
    p.add_argument("--nr-osets", type=int, default=0)
    a = p.parse_args()
    rnd = random.Random(a.seed)
    d = Dev(a.dev)
    blk0, _ = d.read(0)
    sb = dict(zip(SB_FIELDS, SB.unpack_from(blk0, 0)))
    seed = crc32c(0xFFFFFFFF, sb["uuid"])
    rec_bytes, rec_sectors, ncs = sb["rec_bytes"], sb["rec_sectors"], sb["nr_csets"]
    if not (rec_bytes and rec_sectors and ncs):
        raise SystemExit("metacorrupt: no sane superblock on %s" % a.dev)
    kinds = ["sb_bitflip", "sb_bits", "sb_zero", "sb_random", "sb_forge", "rec_bitflip",
             "rec_bitflip_both", "rec_zero_block", "rec_zero_both", "rec_random", "rec_forge",
             "rec_forge", "meta_random_sector"]
    kind = a.kind or rnd.choice(kinds)

    def rec_loc(copy, cset):
        byte = cset * rec_bytes
        sector = 8 + copy * rec_sectors + byte // 512
        return sector, byte % 512

    def flip(buf, lo, hi, nbits):
        for _ in range(nbits):
            i = rnd.randrange(lo, hi)
            buf[i] ^= 1 << rnd.randrange(8)

    cset = rnd.randrange(ncs)
    if kind == "sb_bitflip":
        flip(blk0, 0, 512, 1)
        d.write(blk0, 0)
        return print("%s: one bit of the superblock" % kind)
    if kind == "sb_bits":
        n = rnd.randint(2, 64)
        flip(blk0, 0, 512, n)
        d.write(blk0, 0)
        return print("%s: %d random bits of the superblock" % (kind, n))
    if kind == "sb_zero":
        blk0[0:512] = bytes(512)
        d.write(blk0, 0)
        return print("%s: superblock sector zeroed" % kind)
    if kind == "sb_random":
        lo = rnd.randrange(512)
        hi = min(512, lo + rnd.randint(1, 64))
        blk0[lo:hi] = os.urandom(hi - lo)
        d.write(blk0, 0)
        return print("%s: superblock bytes [%d, %d) random" % (kind, lo, hi))
    if kind == "sb_forge":
        f = rnd.choice(SB_FIELDS[1:5] + SB_FIELDS[7:])
        vals = dict(sb)
        cur = sb[f]
        cands = [0, 1, cur + 1, cur - 1 if cur else 2, cur * 2, cur // 2, (1 << 32) - 1, (1 << 31),
                 rnd.getrandbits(32)]
        if f in ("origin_sectors", "cache_sectors", "nr_csets", "data_start", "seq", "format_time"):
            cands += [(1 << 64) - 1, 1 << 63, rnd.getrandbits(64)]
        v = rnd.choice(cands)
        if f in ("version", "flags", "compat", "incompat", "block_sectors", "set_blocks", "rec_bytes",
                 "rec_sectors"):
            v &= 0xFFFFFFFF
        else:
            v &= (1 << 64) - 1
        vals[f] = v
        SB.pack_into(blk0, 0, *[vals[k] for k in SB_FIELDS])
        struct.pack_into("<I", blk0, 508, crc32c(0xFFFFFFFF, bytes(blk0[:508])))
        d.write(blk0, 0)
        return print("%s: superblock %s %d -> %d, checksum recomputed" % (kind, f, cur, v))
    if kind in ("rec_bitflip", "rec_bitflip_both", "rec_random"):
        copies = [0, 1] if kind == "rec_bitflip_both" else [rnd.randrange(2)]
        for copy in copies:
            sec, off = rec_loc(copy, cset)
            buf, boff = d.read(sec)
            base = (sec % 8) * 512 + off
            if kind == "rec_random":
                n = rnd.randint(1, rec_bytes)
                s = base + rnd.randrange(rec_bytes - n + 1)
                buf[s:s + n] = os.urandom(n)
            else:
                flip(buf, base, base + rec_bytes, rnd.randint(1, 3))
            d.write(buf, boff)
        return print("%s: record of cache set %d, copies %s" % (kind, cset, copies))
    if kind in ("rec_zero_block", "rec_zero_both"):
        k = rnd.randrange(rec_sectors // 8)
        copies = [0, 1] if kind == "rec_zero_both" else [rnd.randrange(2)]
        for copy in copies:
            sec = 8 + copy * rec_sectors + 8 * k
            d.write(bytes(BLK), sec * 512)
        return print("%s: metadata block %d (cache sets %d..%d) zeroed, copies %s"
                     % (kind, k, k * BLK // rec_bytes, (k + 1) * BLK // rec_bytes - 1, copies))
    if kind == "meta_random_sector":
        sec = rnd.randrange(8 + 2 * rec_sectors)
        buf, boff = d.read(sec)
        i = (sec % 8) * 512
        buf[i:i + 512] = os.urandom(512)
        d.write(buf, boff)
        return print("%s: metadata sector %d random" % (kind, sec))
    if kind == "rec_forge":
        # the copy the loader would pick (higher seq), or both
        recs = []
        for copy in (0, 1):
            sec, off = rec_loc(copy, cset)
            buf, boff = d.read(sec)
            base = (sec % 8) * 512 + off
            recs.append((copy, buf, boff, base))
        how = rnd.choice(["oset_range", "oset_huge", "cset", "free_valid", "dirty_not_valid",
                          "seq_huge", "map_seq_huge"])
        bm = (sb["set_blocks"] + 7) // 8
        for copy, buf, boff, base in recs:
            crc, cs, oset, seq, mseq = REC.unpack_from(buf, base)
            if how == "oset_range":
                oset = a.nr_osets + rnd.randrange(1, 1000) if a.nr_osets else (1 << 40)
            elif how == "oset_huge":
                oset = rnd.choice([(1 << 64) - 2, 1 << 63, (1 << 32) + 1])
            elif how == "cset":
                cs = (cs + rnd.randrange(1, ncs)) % ncs if ncs > 1 else cs + 1
            elif how == "free_valid":
                oset = (1 << 64) - 1
                buf[base + 32] |= 1
            elif how == "dirty_not_valid":
                j = rnd.randrange(bm)
                bit = 1 << rnd.randrange(8)
                buf[base + 32 + j] &= ~bit & 0xFF
                buf[base + 32 + bm + j] |= bit
            elif how == "seq_huge":
                seq = (1 << 64) - 1
            elif how == "map_seq_huge":
                mseq = (1 << 64) - 1
            REC.pack_into(buf, base, 0, cs, oset, seq, mseq)
            c = crc32c(seed, bytes(buf[base + 4:base + rec_bytes]))
            struct.pack_into("<I", buf, base, c)
            d.write(buf, boff)
        return print("%s: record of cache set %d, both copies: %s, checksums recomputed"
                     % (kind, cset, how))
    raise SystemExit("unknown kind " + kind)


if __name__ == "__main__":
    sys.exit(main())
