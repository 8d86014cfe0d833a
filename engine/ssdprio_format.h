/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio on-SSD format.  The one definition of it: the kernel module
 * and tools/ both include this header (it compiles in both), and
 * engine/meta_codec.c is the one encoder/decoder.
 *
 * Cache device, in 512-byte sectors:
 *
 *   0        1          8               8+R             8+2R      data_start
 *   +--------+----------+---------------+---------------+---------+----------
 *   | super  | (zeroes) | record copy 0 | record copy 1 | padding | set 0 ...
 *   +--------+----------+---------------+---------------+---------+----------
 *   |<-- SSDP_SB_SECTORS ->|<-- R = rec_sectors each -->|
 *
 *   Metadata is read and written in 4 KiB blocks (the superblock block, and
 *   R is a multiple of 8), so caches with 4 KiB logical blocks work too.
 *
 *   data_start is a multiple of max(1 MiB, set size), so SSD erase blocks
 *   and set I/O line up; set n's data is at data_start + n * set_sectors.
 *
 * Record area: cache set n's record is at byte n * rec_bytes of a copy.
 * rec_bytes (128 to 1024) is a power of two dividing 4 KiB, so a record
 * never straddles a metadata block; with n = 4096 / rec_bytes:
 *
 *   block k of a copy:  | rec nk | rec nk+1 | ... | rec nk+n-1 |
 *
 * The cache is a decoupled sectored cache (engine/frame_map.h): origin
 * set o lives only in cache set ssdp_oset_cset(o); a cache set holds
 * blocks of up to SSDP_REC_TAGS origin sets, block b of o in frame b
 * (home) or, with a set of S >= 2 frames, frame b ^ ssdp_alt_xor(o) (alt):
 * in version 4 a hash of o (the origin sets sharing a cache set pair their
 * frames differently), in version 3 S/2 for every o.  One record:
 *
 *   0      4      8      16                 76     80
 *   | crc  | cset | seq  | tags[15] (le32)  | zero | owners | dirty | alt | 0...
 *
 *   tags[t]: the origin set of tag t, or SSDP_REC_TAG_FREE.  An origin
 *            set number fits in 32 bits (checked against the origin size).
 *   owners:  4 bits per frame, frame 2k in the low nibble of byte k: the
 *            tag whose block the frame holds (valid), or 0xf (free).
 *   dirty:   a bit per frame (bit i = byte i / 8, bit i % 8); only where
 *            the frame has an owner.
 *   alt:     a bit per frame, as dirty: the frame holds block
 *            i ^ ssdp_alt_xor(o) of its owner o, not block i.  Only where
 *            the frame has an owner; a tag's block is in one frame at most
 *            (never in both i and i ^ ssdp_alt_xor(o)).
 *
 * A tag's cache set is fixed by the hash, so an origin set has at most one
 * record: a torn commit across two sets cannot leave two answers for it.
 *
 * Format version 1 (one origin set per cache set) is recognised and
 * refused: see SSDP_SB_OLD_VERSION in meta_codec.h.  Version 3 is version
 * 4 with the alt frame at b ^ S/2 for every origin set and the record
 * checksum seeded with the UUID alone: its caches are used as they are and
 * stay version 3 until formatted again.  Version 2 had no alt bitmap
 * (every block in its home frame): where its records have the size
 * version 3 gives them, the bitmap's place was zero padding under the
 * checksum, so a version 2 record reads as a version 3 one with every
 * block home and such a cache is taken over in place as version 3 (its
 * superblock is rewritten before any record); where the size differs
 * (ssdp_rec_bytes_v2()), it is refused as an old version.
 *
 * Each metadata block is written whole, alternately to copy 0 and copy 1,
 * so the other copy always holds the block's previous committed state: a
 * torn or lost write damages only the copy being written, and its records
 * fail their checksum or carry an older seq.  Load takes, record by
 * record, the copy with a good checksum and the higher seq.  A record good
 * in one copy only may be a commit old: only its dirty blocks are loaded.
 * A block's first write after format goes to both copies, so that after
 * it a bad copy means damage, never "not written yet".
 *
 * Checksums are crc32c.  The record checksum is seeded with the cache
 * UUID, so records left on the device by an earlier format (another UUID)
 * never check out: formatting writes only the superblock; and from
 * version 4 with the version too (ssdp_rec_seed()), so that a record is
 * never read with another version's meaning of its alt bits.
 */
#ifndef SSDPRIO_FORMAT_H
#define SSDPRIO_FORMAT_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#include <linux/types.h>
#endif

#define SSDP_SECTOR_SHIFT	9
#define SSDP_SECTOR_BYTES	512U
#define SSDP_SB_SECTORS		8ULL	/* 4 KiB superblock area */
#define SSDP_DATA_ALIGN		2048ULL	/* 1 MiB in sectors */
#define SSDP_META_COPIES	2U
#define SSDP_META_BLOCK_BYTES	4096U	/* unit of metadata I/O */
#define SSDP_META_BLOCK_SECTORS	8U

#define SSDP_SB_MAGIC		0x314f495250445353ULL	/* "SSDPRIO1" */
#define SSDP_FORMAT_VERSION	4U
/* Alt frames at b ^ S/2: used as it is, and what version 2 becomes. */
#define SSDP_FORMAT_V3		3U
/* The oldest version whose caches are taken over (see the top). */
#define SSDP_FORMAT_V2		2U

/* Superblock flags; every writer rewrites them all (unknown ones drop). */
#define SSDP_SB_CLEAN		0x1U	/* written at clean shutdown */
/*
 * With SSDP_SB_CLEAN: no block was dirty at that shutdown.  A flag for
 * "no dirty data" rather than one for "dirty data", so that a superblock
 * last written by a module that did not know it reads as "maybe dirty".
 */
#define SSDP_SB_NO_DIRTY	0x2U

/*
 * Compatible features: an older reader may ignore them.
 * ORIGIN_UID: origin_uid holds the origin disk's unique id (VPD page 0x83
 * NAA/EUI-64/T10 designator, as the disk reports it), origin_uid_type its
 * designator type and origin_start the origin's first sector on that disk;
 * a table over a disk that reports another id (or the same disk at another
 * offset) is refused.  Besides the SPC designator types (1, 2, 3), the
 * origin's identity may be one the block layer or device-mapper keeps:
 * SSDP_UID_DM_UUID, a hash of a device-mapper origin's DM UUID (LVM,
 * multipath; for dm-crypt only its "CRYPT-<type>-<uuid>" part, the mapping's
 * name after it is chosen at every open); SSDP_UID_PART_UUID, a hash of a
 * partition's UUID (GPT PARTUUID, or the MBR's signature and number).
 * Either hash is ssdp_uid_hash() of the string, origin_uid_len 16.
 */
#define SSDP_SB_COMPAT_ORIGIN_UID	0x1U
#define SSDP_UID_DM_UUID		0x100U
#define SSDP_UID_PART_UUID		0x101U

/*
 * An origin_id that ssdprio-tool derives from an identity only user space
 * can read: an md array's UUID (udev's MD_UUID), or the serial or WWN of a
 * whole disk the kernel has no unique id for (virtio-blk, NVMe on 6.1).
 * Bytes 0-3 are SSDP_DERIVED_ID_MAGIC, byte 4 the kind, bytes 5-15 the
 * first eleven bytes of ssdp_uid_hash() of "<kind>:<identity>" (kind "md"
 * or "serial").  The kernel compares it as any other origin_id; the tool
 * recomputes it from the origin at every activation.  A random origin_id
 * (ssdprio-tool gen-origin-id) never starts with the magic.
 */
#define SSDP_DERIVED_ID_MAGIC		"sPiD"
#define SSDP_DERIVED_ID_MAGIC_LEN	4U
#define SSDP_DERIVED_MD			1U
#define SSDP_DERIVED_SERIAL		2U

/*
 * Incompatible features: a set bit we do not know refuses.
 * BYPASSED: a "cache off" table went live over this cache, so the origin
 * may have changed under it: its records and data are never used again
 * (the next caching table starts empty).  Incompatible so that a module
 * that does not know it refuses the cache instead of trusting it.
 */
#define SSDP_SB_INCOMPAT_BYPASSED	0x1U
/*
 * META_FAILED: a metadata write failed while the cache was in use, and the
 * device served on: the records are older than the device (a block written
 * back and written again since still reads as dirty, with its older data).
 * A caching table refuses it; what it holds is for ssdprio-tool (dirty,
 * wipe).  Written best effort when the failure happens: the superblock
 * write may be what failed.
 */
#define SSDP_SB_INCOMPAT_META_FAILED	0x2U
#define SSDP_SB_INCOMPAT_KNOWN		(SSDP_SB_INCOMPAT_BYPASSED | \
					 SSDP_SB_INCOMPAT_META_FAILED)

/*
 * Sequence numbers grow by one per commit: 2^56 is past what any cache
 * reaches (a million commits a second for two thousand years).  A seq
 * from there on is forged or corrupt, however good its checksum: the
 * commits after it would wrap to small numbers, and a later load would
 * believe the stale copies of every record rewritten since.
 */
#define SSDP_SEQ_LIMIT		(1ULL << 56)

#define SSDP_REC_TAGS		15U
#define SSDP_REC_TAG_FREE	0xffffffffU
#define SSDP_REC_HDR_BYTES	80U
#define SSDP_REC_MAX_BLOCKS	1024U
/* Cache sets at most: a line (cset << 4 | tag) is a u32 below ~0. */
#define SSDP_MAX_CSETS		((1U << 28) - 1)

/* Superblock: sector 0 of the cache device, crc32c over bytes 0..507. */
struct ssdp_disk_sb {
	__le64 magic;			/* SSDP_SB_MAGIC */
	__le32 version;			/* SSDP_FORMAT_VERSION */
	__le32 flags;			/* SSDP_SB_CLEAN */
	__le32 compat;			/* features an old reader may ignore */
	__le32 incompat;		/* features it must understand */
	__u8 uuid[16];			/* this cache, chosen at format */
	__u8 origin_id[16];		/* table's origin_id; zero if none */
	__le64 origin_sectors;		/* origin size at format */
	__le64 cache_sectors;		/* cache device size at format */
	__le32 block_sectors;		/* geometry ... */
	__le32 set_blocks;
	__le64 nr_csets;
	__le32 rec_bytes;
	__le32 rec_sectors;		/* sectors of one record copy */
	__le64 data_start;		/* sector of cache set 0 */
	__le64 seq;			/* last commit; grows forever */
	__le64 format_time;		/* seconds since the epoch */
	__u8 origin_uid[16];		/* SSDP_SB_COMPAT_ORIGIN_UID */
	__le32 origin_uid_len;		/* bytes of origin_uid: 8, 12 or 16 */
	__le32 origin_uid_type;		/* SPC designator type: 1, 2 or 3 */
	__le64 origin_start;		/* origin's first sector on its disk */
	__u8 pad[356];
	__le32 crc;
};

_Static_assert(sizeof(struct ssdp_disk_sb) == SSDP_SECTOR_BYTES,
	       "superblock is one sector");

/* Record header; owners, dirty and alt bits follow it (see the top). */
struct ssdp_disk_rec {
	__le32 crc;			/* crc32c(uuid seed, bytes 4..end) */
	__le32 cset;			/* its own index: catches misplaced writes */
	__le64 seq;			/* commit that wrote it */
	__le32 tags[SSDP_REC_TAGS];	/* origin sets, SSDP_REC_TAG_FREE */
	__le32 zero;
};

_Static_assert(sizeof(struct ssdp_disk_rec) == SSDP_REC_HDR_BYTES,
	       "record header size");

struct ssdp_layout {
	uint64_t nr_csets;
	uint64_t rec_bytes;
	uint64_t rec_sectors;		/* one copy of the records, 4 KiB multiple */
	uint64_t meta_sectors;		/* superblock area + both copies */
	uint64_t data_start;		/* sector of cache set 0 */
	uint64_t set_sectors;
};

static inline uint32_t ssdp_bitmap_bytes(uint32_t set_blocks)
{
	return (set_blocks + 7) / 8;
}

static inline uint64_t ssdp_rec_bytes_for(uint32_t set_blocks,
					   uint32_t bitmaps)
{
	uint64_t need = SSDP_REC_HDR_BYTES + (set_blocks + 1) / 2 +
			bitmaps * ssdp_bitmap_bytes(set_blocks);
	uint64_t r = 64;

	while (r < need)
		r <<= 1;
	return r;
}

/* Record size: owners, then the dirty and alt bitmaps. */
static inline uint64_t ssdp_rec_bytes(uint32_t set_blocks)
{
	return ssdp_rec_bytes_for(set_blocks, 2);
}

/* Format version 2's record size: no alt bitmap. */
static inline uint64_t ssdp_rec_bytes_v2(uint32_t set_blocks)
{
	return ssdp_rec_bytes_for(set_blocks, 1);
}

/*
 * The cache set of origin set @oset: Fibonacci hashing (2^64 / phi), so
 * neighbouring origin sets land in sets far apart, then a multiply-shift
 * onto [0, nr_csets).  On-disk meaning: never change it.
 */
static inline uint32_t ssdp_oset_cset(uint64_t oset, uint64_t nr_csets)
{
	uint64_t h = (oset * 0x61c8864680b583ebULL) >> 32;

	return (uint32_t)((h * nr_csets) >> 32);
}

/*
 * Block b of origin set @oset sits in frame b or b ^ ssdp_alt_xor() of a
 * set of @set_blocks frames.  Format @version 4: a hash of the origin set
 * (the splitmix64 finaliser, independent of ssdp_oset_cset()'s) onto the
 * nonzero multiples of g = min(64, S/4) below S, so that two origin sets
 * of one cache set rarely share a pair of frames and one crowded pair no
 * longer locks out the same offset of all of them; runs of alt blocks stay
 * contiguous on the SSD within aligned g-block pieces.  Version 3 (and 2,
 * which has no alt frames): S/2.  0 for a one-frame set (no alt frame).
 * On-disk meaning: never change it.
 */
static inline uint32_t ssdp_alt_xor(uint64_t oset, uint32_t set_blocks,
				    uint32_t version)
{
	uint64_t z = oset + 0x9e3779b97f4a7c15ULL;
	uint32_t g = set_blocks / 4 < 64 ? set_blocks / 4 : 64;
	uint32_t choices;

	if (version < 4 || set_blocks < 4)
		return set_blocks / 2;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	choices = set_blocks / g - 1;
	return g * (1 + (uint32_t)(((z >> 32) * choices) >> 32));
}

/* First sector of metadata block @k (0-based) of copy @copy. */
static inline uint64_t ssdp_rec_sector(const struct ssdp_layout *l,
				       unsigned int copy, uint64_t k)
{
	return SSDP_SB_SECTORS + copy * l->rec_sectors +
	       k * SSDP_META_BLOCK_SECTORS;
}

/* Metadata blocks in one copy of the records. */
static inline uint64_t ssdp_meta_blocks(const struct ssdp_layout *l)
{
	return l->rec_sectors / SSDP_META_BLOCK_SECTORS;
}

#endif
