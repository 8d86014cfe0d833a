#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Corrupt the metadata of an ssdprio cache device (engine/ssdprio_format.h,
format 4 or 3) in one random way, and say how on stdout (one line).

  metacorrupt.py DEV --seed S [--kind KIND] [--nr-osets N]

Kinds: random damage that the checksums must catch (bit flips, zeroed
sectors or metadata blocks, random bytes; superblock, one record copy,
both copies of a record), and forged values with a correct checksum that
the loader must judge on their own (superblock fields; records that
contradict themselves: a tag placed in another cache set, one origin set in
two tags, an owner without a tag, dirty without an owner, one block in
both its frames (home and alt), another cache
set's index, the zero word or the padding set; records that are consistent
but name an origin set past the origin, with clean or dirty blocks; a huge
sequence number).  Forged records never give a block to an origin set that
another record could own: that is indistinguishable from real metadata.
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
# crc cset seq tags[15] zero; then 4-bit owners, then dirty bits, then alt bits
REC = struct.Struct("<IIQ15II")
TAGS = 15
TAG_FREE = 0xFFFFFFFF
M64 = (1 << 64) - 1
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


def oset_cset(oset, ncs):
    """ssdp_oset_cset(): the cache set origin set @oset lives in."""
    h = ((oset * 0x61C8864680B583EB) & M64) >> 32
    return (h * ncs) >> 32


def alt_xor(oset, set_blocks, version):
    """ssdp_alt_xor(): block b of @oset in frame b or b ^ alt_xor (format 4)."""
    if version < 4 or set_blocks < 4:
        return set_blocks // 2
    z = (oset + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    z ^= z >> 31
    g = min(64, set_blocks // 4)
    return g * (1 + (((z >> 32) * (set_blocks // g - 1)) >> 32))


class Rec:
    """One record (format 3 or 4) at byte @base of a metadata block @buf."""

    def __init__(self, buf, base, rec_bytes, set_blocks):
        self.buf, self.base, self.rb, self.nb = buf, base, rec_bytes, set_blocks
        self.ob, self.db = (set_blocks + 1) // 2, (set_blocks + 7) // 8
        v = REC.unpack_from(buf, base)
        self.crc, self.cset, self.seq = v[0], v[1], v[2]
        self.tags, self.zero = list(v[3:3 + TAGS]), v[3 + TAGS]
        o = base + REC.size
        self.owners = bytearray(buf[o:o + self.ob])
        self.dirty = bytearray(buf[o + self.ob:o + self.ob + self.db])
        self.alt = bytearray(buf[o + self.ob + self.db:o + self.ob + 2 * self.db])

    def good(self, seed, cset):
        c = crc32c(seed, bytes(self.buf[self.base + 4:self.base + self.rb]))
        return c == self.crc and self.cset == cset

    def blank(self):
        return not any(self.buf[self.base:self.base + self.rb])

    def empty(self, cset):
        self.cset, self.seq, self.zero = cset, 1, 0
        self.tags = [TAG_FREE] * TAGS
        self.owners = bytearray([0xFF] * self.ob)
        self.dirty = bytearray(self.db)
        self.alt = bytearray(self.db)

    def owner(self, b):
        return (self.owners[b // 2] >> (b % 2 * 4)) & 0xF

    def set_owner(self, b, t, alt=False):
        sh = b % 2 * 4
        self.owners[b // 2] = (self.owners[b // 2] & ~(0xF << sh) & 0xFF) | (t << sh)
        if alt:
            self.alt[b // 8] |= 1 << (b % 8)
        else:
            self.alt[b // 8] &= ~(1 << (b % 8)) & 0xFF

    def is_alt(self, b):
        return (self.alt[b // 8] >> (b % 8)) & 1

    def is_dirty(self, b):
        return (self.dirty[b // 8] >> (b % 8)) & 1

    def set_dirty(self, b, on):
        if on:
            self.dirty[b // 8] |= 1 << (b % 8)
        else:
            self.dirty[b // 8] &= ~(1 << (b % 8)) & 0xFF

    def seal(self, seed):
        REC.pack_into(self.buf, self.base, 0, self.cset, self.seq & M64, *self.tags, self.zero)
        o = self.base + REC.size
        self.buf[o:o + self.ob] = self.owners
        self.buf[o + self.ob:o + self.ob + self.db] = self.dirty
        self.buf[o + self.ob + self.db:o + self.ob + 2 * self.db] = self.alt
        c = crc32c(seed, bytes(self.buf[self.base + 4:self.base + self.rb]))
        struct.pack_into("<I", self.buf, self.base, c)


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


def forge(rnd, kind, cset, ncs, seed, nr_osets, rec_at, d, version, how=None):
    """A record with a correct checksum that the loader must judge."""
    recs = [rec_at(copy, cset) for copy in (0, 1)]
    good = [r.good(seed, cset) for r, _ in recs]
    # the copy the loader believes (good checksum, higher seq), or both
    if good[0] or good[1]:
        pick = 0 if good[0] and (not good[1] or recs[0][0].seq >= recs[1][0].seq) else 1
    else:
        pick = rnd.randrange(2)
    copies = [pick] if rnd.randrange(2) else [0, 1]
    how = how or rnd.choice(["tag_misplaced", "tag_twice", "owner_no_tag", "dirty_no_owner", "cset",
                      "zero_word", "padding", "past_origin_clean", "past_origin_dirty",
                      "seq_huge", "two_frames"])
    nb = recs[0][0].nb
    for copy in copies:
        r, boff = recs[copy]
        if not r.good(seed, cset) or r.blank():
            r.empty(cset)
        used = [t for t in range(TAGS) if r.tags[t] != TAG_FREE]
        free = [t for t in range(TAGS) if r.tags[t] == TAG_FREE]
        free_frames = [b for b in range(nb) if r.owner(b) == 0xF]
        if how == "tag_misplaced":
            # an origin set of another cache set, in a used tag or a free one
            t = rnd.choice(used or free)
            while True:
                o = rnd.randrange(max(nr_osets, 1) if rnd.randrange(2) else 1 << 31)
                if oset_cset(o, ncs) != cset:
                    break
            r.tags[t] = o
        elif how == "tag_twice":
            if used and free:
                r.tags[rnd.choice(free)] = r.tags[rnd.choice(used)]
            elif len(used) >= 2:
                t, u = rnd.sample(used, 2)
                r.tags[u] = r.tags[t]
            else:
                o = next(o for o in range(1 << 31) if oset_cset(o, ncs) == cset)
                r.tags[0] = r.tags[1] = o
        elif how == "owner_no_tag":
            if free:
                r.set_owner(rnd.randrange(nb), rnd.choice(free))
            else:
                t = rnd.choice(used)
                r.tags[t] = TAG_FREE
                r.set_owner(rnd.randrange(nb), t)
        elif how == "dirty_no_owner":
            if free_frames:
                b = rnd.choice(free_frames)
            else:
                b = rnd.randrange(nb)
                r.set_owner(b, 0xF)
            r.set_dirty(b, True)
        elif how == "cset":
            r.cset = (cset + rnd.randrange(1, ncs)) % ncs if ncs > 1 else cset + 1
        elif how == "zero_word":
            r.zero = rnd.choice([1, 0x80000000, rnd.getrandbits(32) | 1])
        elif how == "padding":
            pad = r.rb - REC.size - r.ob - 2 * r.db
            if pad:
                r.buf[r.base + r.rb - 1 - rnd.randrange(pad)] |= 1 << rnd.randrange(8)
            else:
                r.zero = 1
        elif how in ("past_origin_clean", "past_origin_dirty"):
            # consistent: an origin set past the end, placed here, in a
            # free tag (or one taken over, its blocks gone), owning frames
            # nobody holds, else clean ones, else any (what they held is
            # lost, as a crash before its commit loses it): clean, it is
            # dropped; dirty, the table is refused
            o = max(nr_osets, 1)
            while oset_cset(o, ncs) != cset:
                o += 1
            t = rnd.choice(free) if free else rnd.choice(used)
            if not free:
                for b in range(nb):
                    if r.owner(b) == t:
                        r.set_dirty(b, False)
                        r.set_owner(b, 0xF)
            frames = ([b for b in range(nb) if r.owner(b) == 0xF] or
                      [b for b in range(nb) if not r.is_dirty(b)] or list(range(nb)))
            r.tags[t] = o
            for b in rnd.sample(frames, min(len(frames), rnd.randint(1, 4))):
                r.set_owner(b, t)
                r.set_dirty(b, how == "past_origin_dirty")
        elif how == "seq_huge":
            r.seq = M64
        elif how == "two_frames":
            # frame b holds block b of tag t (or b ^ x, alt: x by the
            # tag's origin set); frame b ^ x is made to hold the same block
            # of the same tag
            owned = [b for b in range(nb) if r.owner(b) != 0xF]
            if nb >= 2 and owned:
                b = rnd.choice(owned)
                x = alt_xor(r.tags[r.owner(b)], nb, version)
                r.set_owner(b ^ x, r.owner(b), not r.is_alt(b))
            else:
                r.zero = 1
        r.seal(seed)
        d.write(r.buf, boff)
    return print("%s: record of cache set %d, copies %s: %s, checksums recomputed"
                 % (kind, cset, copies, how))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dev")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--kind")
    p.add_argument("--nr-osets", type=int, default=0)
    p.add_argument("--block", type=int, help="metadata block of rec_zero_newest")
    p.add_argument("--how", help="rec_forge: which forgery (e.g. seq_huge)")
    a = p.parse_args()
    rnd = random.Random(a.seed)
    d = Dev(a.dev)
    blk0, _ = d.read(0)
    sb = dict(zip(SB_FIELDS, SB.unpack_from(blk0, 0)))
    seed = crc32c(0xFFFFFFFF, sb["uuid"])
    if sb["version"] >= 4:  # ssdp_rec_seed(): the version too
        seed = crc32c(seed, struct.pack("<I", sb["version"]))
    rec_bytes, rec_sectors, ncs = sb["rec_bytes"], sb["rec_sectors"], sb["nr_csets"]
    if not (rec_bytes and rec_sectors and ncs):
        raise SystemExit("metacorrupt: no sane superblock on %s" % a.dev)
    kinds = ["sb_bitflip", "sb_bits", "sb_zero", "sb_random", "sb_forge", "rec_bitflip",
             "rec_bitflip_both", "rec_zero_block", "rec_zero_both", "rec_random", "rec_forge",
             "rec_forge", "meta_random_sector"]
    kind = a.kind or rnd.choice(kinds)

    set_blocks = sb["set_blocks"]

    def rec_loc(copy, cset):
        """The sector of the 4 KiB block holding the record, its offset there."""
        byte = cset * rec_bytes
        return 8 + copy * rec_sectors + byte // BLK * 8, byte % BLK

    def rec_at(copy, cset):
        sec, base = rec_loc(copy, cset)
        buf, boff = d.read(sec)
        return Rec(buf, base, rec_bytes, set_blocks), boff

    def flip(buf, lo, hi, nbits):
        for _ in range(nbits):
            i = rnd.randrange(lo, hi)
            buf[i] ^= 1 << rnd.randrange(8)

    cset = rnd.randrange(ncs)
    if kind == "rec_forge":
        # a set with tags in a good copy, if there is one (the cache's data)
        used = []
        for cs in range(ncs):
            for copy in (0, 1):
                r, _ = rec_at(copy, cs)
                if r.good(seed, cs) and any(t != TAG_FREE for t in r.tags):
                    used.append(cs)
                    break
        if used:
            cset = rnd.choice(used)
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
            sec, base = rec_loc(copy, cset)
            buf, boff = d.read(sec)
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
    if kind == "rec_zero_newest":
        # the copy with the newest good record of the block is lost: the
        # other one is a commit older, and its clean frames may have
        # changed hands since
        k = a.block if a.block is not None else rnd.randrange(rec_sectors // 8)
        best = (-1, 0)
        for copy in (0, 1):
            for j in range(BLK // rec_bytes):
                cs = k * BLK // rec_bytes + j
                if cs >= ncs:
                    break
                r, _ = rec_at(copy, cs)
                if r.good(seed, cs) and r.seq > best[0]:
                    best = (r.seq, copy)
        d.write(bytes(BLK), (8 + best[1] * rec_sectors + 8 * k) * 512)
        return print("%s: metadata block %d zeroed in copy %d (seq %d)"
                     % (kind, k, best[1], best[0]))
    if kind == "meta_random_sector":
        sec = rnd.randrange(8 + 2 * rec_sectors)
        buf, boff = d.read(sec)
        i = (sec % 8) * 512
        buf[i:i + 512] = os.urandom(512)
        d.write(buf, boff)
        return print("%s: metadata sector %d random" % (kind, sec))
    if kind == "rec_forge":
        return forge(rnd, kind, cset, ncs, seed, a.nr_osets, rec_at, d, sb["version"], a.how)
    raise SystemExit("unknown kind " + kind)


if __name__ == "__main__":
    sys.exit(main())
