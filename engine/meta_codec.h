/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio metadata codec: superblock and set records to and from their
 * on-disk form (engine/ssdprio_format.h).  Pure logic: the module, tools/
 * and the unit tests share it, so there is one encoder and one decoder.
 * No locking, no I/O, no allocation.
 */
#ifndef SSDP_META_CODEC_H
#define SSDP_META_CODEC_H

#include "ssdp_compat.h"
#include "ssdprio_format.h"

/*
 * Lay out a cache device of @cache_sectors: as many sets as fit after the
 * metadata they need.  Returns 0, or -1 when not even one set fits.  The
 * format's meaning (ssdprio_format.h): a superblock must agree with it.
 */
int ssdp_layout_compute(struct ssdp_layout *l, u64 cache_sectors,
			u32 block_sectors, u32 set_blocks);

/* The superblock in host order. */
struct ssdp_sb_info {
	u32 version;
	u32 flags;
	u32 compat;
	u32 incompat;
	u8 uuid[16];
	u8 origin_id[16];
	u64 origin_sectors;
	u64 cache_sectors;
	u32 block_sectors;
	u32 set_blocks;
	u64 nr_csets;
	u32 rec_bytes;
	u32 rec_sectors;
	u64 data_start;
	u64 seq;
	u64 format_time;
	u8 origin_uid[16];
	u32 origin_uid_len;
	u32 origin_uid_type;
	u64 origin_start;
};

/* What a superblock sector holds (ssdp_sb_decode's result). */
enum ssdp_sb_result {
	SSDP_SB_OK = 0,
	SSDP_SB_BLANK,			/* all zeroes */
	SSDP_SB_FOREIGN,		/* not our magic */
	SSDP_SB_BAD_CRC,		/* our magic, checksum fails */
	/*
	 * Format version 1, which an earlier ssdprio wrote (one origin set
	 * per cache set), or version 2 with a record size version 3 changes
	 * (the version field tells): its records are not read; the table
	 * says what to do (meta.c).
	 */
	SSDP_SB_OLD_VERSION,
	SSDP_SB_BAD_VERSION,		/* a format we do not know */
	SSDP_SB_BAD_FEATURES,		/* incompat bits we do not know */
	SSDP_SB_BAD_LAYOUT,		/* fields contradict each other */
};

/* crc32c, same value as the kernel's crc32c(seed, p, len). */
u32 ssdp_crc32c(u32 seed, const void *p, size_t len);
/* 128 bits naming an identity string (a DM or partition UUID). */
void ssdp_uid_hash(const char *s, size_t len, u8 out[16]);
/*
 * The origin_id derived from an identity of @kind (SSDP_DERIVED_*): 0, or
 * -EINVAL for an unknown kind or an empty or overlong @ident.
 */
int ssdp_derived_id(unsigned int kind, const char *ident, u8 out[16]);
/* The SSDP_DERIVED_* kind of an origin_id, 0 if it is not derived. */
unsigned int ssdp_derived_kind(const u8 id[16]);

void ssdp_sb_encode(const struct ssdp_sb_info *in, void *sector);
enum ssdp_sb_result ssdp_sb_decode(const void *sector,
				   struct ssdp_sb_info *out);
const char *ssdp_sb_result_name(enum ssdp_sb_result r);

/* The layout a superblock describes, for comparison with a table's. */
void ssdp_sb_layout(const struct ssdp_sb_info *sb, struct ssdp_layout *l);

/*
 * Record checksum seed of a cache: its UUID and, from version 4, its
 * format version, so that records are never read with another version's
 * meaning of their alt bits (a superblock's version changed under them
 * makes them fail their checksum instead).
 */
u32 ssdp_rec_seed(const u8 uuid[16], u32 version);

/*
 * One record, decoded (or to encode): the persistent view of a cache
 * set.  owners: 4 bits per frame, frame 2k in the low
 * nibble of byte k, 0xf free; dirty, alt: a bit per frame.
 */
struct ssdp_rec_view {
	u64 seq;
	u32 tags[SSDP_REC_TAGS];
	u8 owners[SSDP_REC_MAX_BLOCKS / 2];
	u8 dirty[SSDP_REC_MAX_BLOCKS / 8];
	u8 alt[SSDP_REC_MAX_BLOCKS / 8];
};

static inline u32 ssdp_rec_owner(const struct ssdp_rec_view *v, u32 blk)
{
	return (v->owners[blk / 2] >> (blk % 2 * 4)) & 0xf;
}

static inline bool ssdp_rec_dirty(const struct ssdp_rec_view *v, u32 blk)
{
	return (v->dirty[blk / 8] >> (blk % 8)) & 1;
}

/* Frame @frame holds its owner's block @frame ^ ssdp_alt_xor(). */
static inline bool ssdp_rec_alt(const struct ssdp_rec_view *v, u32 frame)
{
	return (v->alt[frame / 8] >> (frame % 8)) & 1;
}

/*
 * The block that owned frame @frame of a set of @set_blocks holds, in a
 * cache of format @version.
 */
static inline u32 ssdp_rec_block(const struct ssdp_rec_view *v,
				 u32 set_blocks, u32 version, u32 frame)
{
	u32 own = ssdp_rec_owner(v, frame);

	if (!ssdp_rec_alt(v, frame) || own >= SSDP_REC_TAGS)
		return frame;
	return frame ^ ssdp_alt_xor(v->tags[own], set_blocks, version);
}

/* Encode @v as cache set @cset's record (@rec_bytes: ssdp_rec_bytes()). */
void ssdp_rec_encode(void *rec, u32 rec_bytes, u32 seed, u32 cset,
		     u32 set_blocks, const struct ssdp_rec_view *v);
/* @len bytes at @p are all zero (a blank sector, record or superblock). */
bool ssdp_all_zero(const void *p, size_t len);

/*
 * Decode the record of @cset of a cache of @nr_csets sets and format
 * @version (what an alt bit means, ssdp_alt_xor()).  Returns 0,
 * -EBADMSG when the checksum fails, or -EUCLEAN when it checks out but
 * contradicts itself: wrong cset, a tag not placed in this set
 * (ssdp_oset_cset()) or twice, an owner without a tag, dirty or alt
 * without an owner, a block in two frames, anything past the set.
 */
int ssdp_rec_decode(const void *rec, u32 rec_bytes, u32 seed, u32 cset,
		    u32 set_blocks, u64 nr_csets, u32 version,
		    struct ssdp_rec_view *out);
/*
 * Of the two copies of @cset's record, the one to believe (a good
 * checksum, the higher seq): 0 or 1 with *@out filled, or -1 when neither
 * decodes (the set is free).  @scratch: room for the other copy.  *@lone
 * (if not NULL) says whether the other copy failed to decode: the one
 * picked may then be a commit older than the newest (see meta.c).
 */
int ssdp_rec_pick(const void *rec0, const void *rec1, u32 rec_bytes,
		  u32 seed, u32 cset, u32 set_blocks, u64 nr_csets,
		  u32 version, struct ssdp_rec_view *out,
		  struct ssdp_rec_view *scratch, bool *lone);

/*
 * Which copy of a metadata block its next write goes to first, from the
 * picks of its records at load.  A record whose newest version is in one
 * copy only keeps it until the next write is durable: that write goes to
 * the other copy.  A torn write (sectors of a 4 KiB block, records of 1 KiB
 * and more spanning two) may leave records of one block newest in
 * different copies (mixed): then the write goes first to the copy with the
 * highest seq, the torn write's.  That commit never completed, so should
 * this write tear too, what is left is the commit before it, as the load's
 * rules allow (meta.c); the other copy may hold the only version of a
 * record one commit older, which no fallback could replace.
 */
struct ssdp_blk_copies {
	u64 hi_seq;
	int hi_copy;
	bool only[2];	/* some record's newest version is in this copy only */
};

void ssdp_blk_copies_init(struct ssdp_blk_copies *b);
/*
 * One record: @pick and @lone from ssdp_rec_pick(), @seq the picked copy's
 * seq, @seq1 copy 1's (used when copy 0 was picked and both decoded).
 */
void ssdp_blk_copies_add(struct ssdp_blk_copies *b, int pick, bool lone,
			 u64 seq, u64 seq1);
/* The copy to write first (0 or 1); *@mixed: newest versions in both. */
unsigned int ssdp_blk_copies_next(const struct ssdp_blk_copies *b,
				  bool *mixed);

#endif
