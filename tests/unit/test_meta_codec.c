// SPDX-License-Identifier: GPL-2.0
/* The on-SSD format: superblock and record encode/decode, checksums. */
#include <stdlib.h>

#include "harness.h"
#include "meta_codec.h"

static void sample_sb(struct ssdp_sb_info *sb, uint64_t cache_sectors)
{
	struct ssdp_layout l;
	int i;

	memset(sb, 0, sizeof(*sb));
	ASSERT_EQ(ssdp_layout_compute(&l, cache_sectors, 8, 256), 0);
	sb->version = SSDP_FORMAT_VERSION;
	sb->flags = SSDP_SB_CLEAN;
	for (i = 0; i < 16; i++) {
		sb->uuid[i] = (u8)(i * 7 + 1);
		sb->origin_id[i] = (u8)(255 - i);
	}
	sb->origin_sectors = 1ULL << 30;
	sb->cache_sectors = cache_sectors;
	sb->block_sectors = 8;
	sb->set_blocks = 256;
	sb->nr_csets = l.nr_csets;
	sb->rec_bytes = l.rec_bytes;
	sb->rec_sectors = l.rec_sectors;
	sb->data_start = l.data_start;
	sb->seq = 0x123456789abcULL;
	sb->format_time = 1700000000;
}

TEST(codec_crc32c_matches_the_standard_check_value)
{
	/* CRC-32C("123456789") = 0xe3069283 with the usual inversions. */
	ASSERT_EQ(~ssdp_crc32c(~0U, "123456789", 9), 0xe3069283U);
}

TEST(codec_sb_round_trip_and_layout)
{
	struct ssdp_sb_info in, out;
	struct ssdp_layout l, want;
	u8 sector[512];

	sample_sb(&in, 1 << 21);
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_OK);
	ASSERT_EQ(memcmp(&in, &out, sizeof(in)), 0);
	ssdp_sb_layout(&out, &l);
	ASSERT_EQ(ssdp_layout_compute(&want, 1 << 21, 8, 256), 0);
	ASSERT_EQ(memcmp(&l, &want, sizeof(l)), 0);
	/* Little-endian on disk whatever the host: magic spells SSDPRIO1. */
	ASSERT_EQ(memcmp(sector, "SSDPRIO1", 8), 0);
}

TEST(codec_sb_every_bit_flip_is_refused)
{
	struct ssdp_sb_info in, out;
	u8 sector[512];
	unsigned int bit;

	sample_sb(&in, 1 << 21);
	ssdp_sb_encode(&in, sector);
	for (bit = 0; bit < 512 * 8; bit++) {
		sector[bit / 8] ^= 1U << (bit % 8);
		ASSERT_NE(ssdp_sb_decode(sector, &out), SSDP_SB_OK);
		sector[bit / 8] ^= 1U << (bit % 8);
	}
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_OK);
}

TEST(codec_sb_blank_foreign_version_features_layout)
{
	struct ssdp_sb_info in, out;
	u8 sector[512];

	memset(sector, 0, sizeof(sector));
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_BLANK);
	memcpy(sector, "\x7f" "ELF", 4);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_FOREIGN);

	sample_sb(&in, 1 << 21);
	in.version = SSDP_FORMAT_VERSION + 1;
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_BAD_VERSION);
	in.version = 0;
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_BAD_VERSION);

	sample_sb(&in, 1 << 21);
	in.incompat = 0x8;
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_BAD_FEATURES);

	sample_sb(&in, 1 << 21);
	in.nr_csets++;
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_BAD_LAYOUT);

	sample_sb(&in, 1 << 21);
	in.set_blocks = 3;
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_BAD_LAYOUT);
	ASSERT_TRUE(strlen(ssdp_sb_result_name(SSDP_SB_BAD_CRC)) > 0);
}

/*
 * A superblock of format version 1 (an earlier ssdprio) is recognised as
 * such, not as damage: its fields are read so the tool can name the cache,
 * whatever its geometry (version 1 records were smaller).
 */
TEST(codec_sb_version_1_is_old_not_corrupt)
{
	struct ssdp_sb_info in, out;
	u8 sector[512];

	sample_sb(&in, 1 << 21);
	in.version = 1;
	in.rec_bytes = 64;
	in.flags = 0;
	ssdp_sb_encode(&in, sector);
	memset(&out, 0, sizeof(out));
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_OLD_VERSION);
	ASSERT_EQ(out.version, 1);
	ASSERT_EQ(memcmp(out.uuid, in.uuid, 16), 0);
	ASSERT_EQ(out.cache_sectors, 1 << 21);
	ASSERT_EQ(out.flags, 0);
	ASSERT_TRUE(strstr(ssdp_sb_result_name(SSDP_SB_OLD_VERSION),
			   "older format") != NULL);
	/* A damaged version 1 superblock is damaged. */
	sector[100] ^= 1;
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_BAD_CRC);
}

/* The fields that say whether and for which origin a cache may be trusted. */
TEST(codec_sb_trust_fields_round_trip)
{
	struct ssdp_sb_info in, out;
	u8 sector[512];
	int i;

	sample_sb(&in, 1 << 21);
	in.flags = SSDP_SB_CLEAN | SSDP_SB_NO_DIRTY;
	in.incompat = SSDP_SB_INCOMPAT_BYPASSED;
	in.compat = SSDP_SB_COMPAT_ORIGIN_UID;
	for (i = 0; i < 8; i++)
		in.origin_uid[i] = (u8)(0x50 + i);
	in.origin_uid_len = 8;
	in.origin_uid_type = 3;
	in.origin_start = 2048;
	ssdp_sb_encode(&in, sector);
	/* A module that knows "bypassed" loads it; it never trusts its records. */
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_OK);
	ASSERT_EQ(memcmp(&in, &out, sizeof(in)), 0);

	/* An origin id flagged but empty or too long is not one of ours. */
	in.origin_uid_len = 0;
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_BAD_LAYOUT);
	in.origin_uid_len = 17;
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_BAD_LAYOUT);
	/* Without the compat bit the fields are not looked at. */
	in.compat = 0;
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_OK);
}

/* The @nth origin set (from 0) that cache set @cset of @nr_csets holds. */
static u32 oset_in(u32 cset, u64 nr_csets, u32 nth)
{
	u32 o;

	for (o = 0;; o++)
		if (ssdp_oset_cset(o, nr_csets) == cset && !nth--)
			return o;
}

static void rv_init(struct ssdp_rec_view *v, u64 seq)
{
	memset(v, 0, sizeof(*v));
	v->seq = seq;
	memset(v->tags, 0xff, sizeof(v->tags));
	memset(v->owners, 0xff, sizeof(v->owners));
}

static void rv_own(struct ssdp_rec_view *v, u32 blk, u32 owner, bool dirty)
{
	v->owners[blk / 2] &= ~(0xf << (blk % 2 * 4));
	v->owners[blk / 2] |= owner << (blk % 2 * 4);
	if (dirty)
		v->dirty[blk / 8] |= 1U << (blk % 8);
	else
		v->dirty[blk / 8] &= ~(1U << (blk % 8));
}

/*
 * A busy record of @cset: @ntags tags in use (placed in @cset), frames
 * owned by them or free in a pattern of @pat, some dirty.
 */
/* The format whose alt frames rv_fill() lays out. */
static u32 rv_version = SSDP_FORMAT_VERSION;

static void rv_fill(struct ssdp_rec_view *v, u64 seq, u32 cset, u64 nr_csets,
		    u32 set_blocks, u32 ntags, u32 pat)
{
	u32 t, blk, x;

	rv_init(v, seq);
	for (t = 0; t < ntags; t++)
		v->tags[(t * 7) % SSDP_REC_TAGS] = oset_in(cset, nr_csets, t);
	for (blk = 0; blk < set_blocks; blk++) {
		x = (blk * 2654435761U + pat) >> 7;
		if (!ntags || x % 5 == 0)
			continue;
		rv_own(v, blk, ((x / 5) % ntags * 7) % SSDP_REC_TAGS,
		       x % 3 == 0);
	}
	/*
	 * Alt or not by the pair of frames {f, f ^ x} of the owner: both of
	 * an owner's frames of one pair alike, so no block in two frames.
	 */
	for (blk = 0; blk < set_blocks; blk++) {
		t = ssdp_rec_owner(v, blk);
		if (t == 0xf)
			continue;
		x = ssdp_alt_xor(v->tags[t], set_blocks, rv_version);
		if (x && ((blk < (blk ^ x) ? blk : blk ^ x) * 31 + pat) % 4 == 0)
			v->alt[blk / 8] |= 1 << (blk % 8);
	}
}

static void rv_same(const struct ssdp_rec_view *a,
		    const struct ssdp_rec_view *b, u32 set_blocks)
{
	ASSERT_EQ(a->seq, b->seq);
	ASSERT_EQ(memcmp(a->tags, b->tags, sizeof(a->tags)), 0);
	ASSERT_EQ(memcmp(a->owners, b->owners, (set_blocks + 1) / 2), 0);
	ASSERT_EQ(memcmp(a->dirty, b->dirty, ssdp_bitmap_bytes(set_blocks)),
		  0);
	ASSERT_EQ(memcmp(a->alt, b->alt, ssdp_bitmap_bytes(set_blocks)), 0);
}

/* Checksum a hand-edited record again, so only its contents are wrong. */
static void reseal(u8 *rec, u32 rb, u32 seed)
{
	u32 crc = ssdp_crc32c(seed, rec + 4, rb - 4);

	rec[0] = (u8)crc;
	rec[1] = (u8)(crc >> 8);
	rec[2] = (u8)(crc >> 16);
	rec[3] = (u8)(crc >> 24);
}

TEST(codec_rec_bytes_is_the_formula)
{
	u32 sb, need, want;

	for (sb = 1; sb <= SSDP_REC_MAX_BLOCKS; sb <<= 1) {
		need = 80 + (sb + 1) / 2 + 2 * ((sb + 7) / 8);
		for (want = 64; want < need; want <<= 1)
			;
		ASSERT_EQ(ssdp_rec_bytes(sb), want);
		ASSERT_EQ(4096 % want, 0);
	}
	ASSERT_EQ(ssdp_rec_bytes(1), 128);
	ASSERT_EQ(ssdp_rec_bytes(64), 128);
	ASSERT_EQ(ssdp_rec_bytes(128), 256);
	ASSERT_EQ(ssdp_rec_bytes(256), 512);
	ASSERT_EQ(ssdp_rec_bytes(512), 512);
	ASSERT_EQ(ssdp_rec_bytes(1024), 1024);
}

/*
 * Format version 2 had no alt bitmap.  Where its record size is version
 * 3's, a version 2 superblock is taken (its records read as every block
 * home: the bitmap's place was checksummed zero padding); where it is
 * not (256-frame sets), it is an old version, never misread.
 */
TEST(codec_version_2_taken_over_where_records_keep_their_size)
{
	u32 seed = ssdp_rec_seed((const u8 *)"0123456789abcdef", SSDP_FORMAT_V2);
	struct ssdp_sb_info in, out;
	struct ssdp_rec_view v, back;
	u8 sector[512], rec[512];
	u32 blk;

	struct ssdp_layout l;

	sample_sb(&in, 1 << 21);
	ASSERT_EQ(ssdp_layout_compute(&l, 1 << 21, 8, 512), 0);
	in.version = SSDP_FORMAT_V2;
	in.set_blocks = 512;
	in.nr_csets = l.nr_csets;
	in.rec_bytes = l.rec_bytes;
	in.rec_sectors = l.rec_sectors;
	in.data_start = l.data_start;
	ASSERT_EQ(ssdp_rec_bytes_v2(512), ssdp_rec_bytes(512));
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_OK);
	ASSERT_EQ(out.version, SSDP_FORMAT_V2);
	/* Version 3 (alt frames at b ^ S/2) is read as it is. */
	in.version = SSDP_FORMAT_V3;
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_OK);
	ASSERT_EQ(out.version, SSDP_FORMAT_V3);
	in.version = SSDP_FORMAT_V2;
	ssdp_sb_encode(&in, sector);
	/* A version 2 record: owners and dirty, then zeroes. */
	rv_fill(&v, 7, 9, 100, 512, 9, 3);
	memset(v.alt, 0, sizeof(v.alt));
	ssdp_rec_encode(rec, 512, seed, 9, 512, &v);
	ASSERT_TRUE(ssdp_all_zero(rec + 80 + 256 + 64, 64));
	ASSERT_EQ(ssdp_rec_decode(rec, 512, seed, 9, 512, 100, SSDP_FORMAT_VERSION, &back), 0);
	for (blk = 0; blk < 512; blk++)
		ASSERT_FALSE(ssdp_rec_alt(&back, blk));
	/* 256-frame sets: version 3 records are larger. */
	sample_sb(&in, 1 << 21);
	in.version = SSDP_FORMAT_V2;
	in.rec_bytes = ssdp_rec_bytes_v2(256);
	ssdp_sb_encode(&in, sector);
	ASSERT_EQ(ssdp_sb_decode(sector, &out), SSDP_SB_OLD_VERSION);
	ASSERT_EQ(out.version, SSDP_FORMAT_V2);
}

TEST(codec_rec_round_trip_every_geometry)
{
	u32 set_blocks, seed = ssdp_rec_seed((const u8 *)"0123456789abcdef", SSDP_FORMAT_VERSION);
	struct ssdp_rec_view in, out;
	u64 nr_csets = 100;
	u32 ntags, ver;

	for (ver = SSDP_FORMAT_V3; ver <= SSDP_FORMAT_VERSION; ver++)
	for (set_blocks = 1; set_blocks <= 1024; set_blocks <<= 1) {
		u32 rb = ssdp_rec_bytes(set_blocks);
		u8 rec[1024];

		for (ntags = 0; ntags <= SSDP_REC_TAGS; ntags += 5) {
			rv_version = ver;
			rv_fill(&in, 9 + ntags, 42, nr_csets, set_blocks, ntags,
				set_blocks);
			rv_version = SSDP_FORMAT_VERSION;
			ssdp_rec_encode(rec, rb, seed, 42, set_blocks, &in);
			ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, 42, set_blocks,
						  nr_csets, ver, &out), 0);
			rv_same(&in, &out, set_blocks);
			/* Frames past the set read as free and clean. */
			if (set_blocks < SSDP_REC_MAX_BLOCKS) {
				ASSERT_EQ(ssdp_rec_owner(&out, set_blocks),
					  0xf);
				ASSERT_FALSE(ssdp_rec_dirty(&out, set_blocks));
			}
			/* Misplaced (another cset's slot), another cache. */
			ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, 43, set_blocks,
						  nr_csets, SSDP_FORMAT_VERSION, &out), -EUCLEAN);
			ASSERT_EQ(ssdp_rec_decode(rec, rb, seed + 1, 42,
						  set_blocks, nr_csets, SSDP_FORMAT_VERSION, &out),
				  -EBADMSG);
		}
	}
}

TEST(codec_rec_every_bit_flip_is_detected)
{
	u32 seed = ssdp_rec_seed((const u8 *)"fedcba9876543210", SSDP_FORMAT_VERSION);
	u32 rb = ssdp_rec_bytes(256);
	struct ssdp_rec_view in, out;
	unsigned int bit;
	u8 rec[512];

	rv_fill(&in, 17, 5, 1000, 256, 15, 3);
	ssdp_rec_encode(rec, rb, seed, 5, 256, &in);
	for (bit = 0; bit < rb * 8; bit++) {
		rec[bit / 8] ^= 1U << (bit % 8);
		ASSERT_NE(ssdp_rec_decode(rec, rb, seed, 5, 256, 1000, SSDP_FORMAT_VERSION, &out),
			  0);
		rec[bit / 8] ^= 1U << (bit % 8);
	}
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, 5, 256, 1000, SSDP_FORMAT_VERSION, &out), 0);
}

/* A record with a good checksum that contradicts itself is refused. */
TEST(codec_rec_inconsistent_records_are_refused)
{
	u32 seed = 1234, rb = ssdp_rec_bytes(4), cset = 3, other;
	struct ssdp_rec_view v, out;
	u64 nr = 10;
	u8 rec[128];

	other = oset_in(4, nr, 0);
	/* An empty record (no tag, all free) is fine. */
	rv_init(&v, 1);
	ssdp_rec_encode(rec, rb, seed, cset, 4, &v);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, cset, 4, nr, SSDP_FORMAT_VERSION, &out), 0);
	ASSERT_EQ(out.tags[0], SSDP_REC_TAG_FREE);

	/* A tag placed in another cache set. */
	rv_init(&v, 1);
	v.tags[2] = other;
	ssdp_rec_encode(rec, rb, seed, cset, 4, &v);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, cset, 4, nr, SSDP_FORMAT_VERSION, &out), -EUCLEAN);
	/* ... the same record is fine in that set. */
	ssdp_rec_encode(rec, rb, seed, 4, 4, &v);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, 4, 4, nr, SSDP_FORMAT_VERSION, &out), 0);

	/* One origin set in two tags. */
	rv_init(&v, 1);
	v.tags[0] = oset_in(cset, nr, 0);
	v.tags[9] = oset_in(cset, nr, 0);
	ssdp_rec_encode(rec, rb, seed, cset, 4, &v);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, cset, 4, nr, SSDP_FORMAT_VERSION, &out), -EUCLEAN);

	/* An owner without a tag. */
	rv_init(&v, 1);
	v.tags[0] = oset_in(cset, nr, 0);
	rv_own(&v, 0, 0, true);
	rv_own(&v, 3, 1, false);
	ssdp_rec_encode(rec, rb, seed, cset, 4, &v);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, cset, 4, nr, SSDP_FORMAT_VERSION, &out), -EUCLEAN);

	/* Dirty without an owner. */
	rv_init(&v, 1);
	v.tags[0] = oset_in(cset, nr, 0);
	rv_own(&v, 0, 0, false);
	v.dirty[0] = 0x2;
	ssdp_rec_encode(rec, rb, seed, cset, 4, &v);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, cset, 4, nr, SSDP_FORMAT_VERSION, &out), -EUCLEAN);

	/* A dirty bit past the end of a 4-block set. */
	rv_init(&v, 1);
	v.dirty[0] = 0x10;
	ssdp_rec_encode(rec, rb, seed, cset, 4, &v);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, cset, 4, nr, SSDP_FORMAT_VERSION, &out), -EUCLEAN);

	/* An owner in the unused half byte of a 1-block set. */
	rv_init(&v, 1);
	v.tags[0] = oset_in(cset, nr, 0);
	v.owners[0] = 0x0f;	/* frame 0 free, "frame 1" tag 0 */
	ssdp_rec_encode(rec, ssdp_rec_bytes(1), seed, cset, 1, &v);
	ASSERT_EQ(ssdp_rec_decode(rec, ssdp_rec_bytes(1), seed, cset, 1, nr, SSDP_FORMAT_VERSION,
				  &out), -EUCLEAN);
	v.owners[0] = 0xf0;	/* frame 0 tag 0 */
	ssdp_rec_encode(rec, ssdp_rec_bytes(1), seed, cset, 1, &v);
	ASSERT_EQ(ssdp_rec_decode(rec, ssdp_rec_bytes(1), seed, cset, 1, nr, SSDP_FORMAT_VERSION,
				  &out), 0);
	ASSERT_EQ(ssdp_rec_owner(&out, 0), 0);

	/* The zero word, or bytes past the bitmaps, not zero. */
	rv_init(&v, 1);
	ssdp_rec_encode(rec, rb, seed, cset, 4, &v);
	rec[76] = 1;
	reseal(rec, rb, seed);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, cset, 4, nr, SSDP_FORMAT_VERSION, &out), -EUCLEAN);
	ssdp_rec_encode(rec, rb, seed, cset, 4, &v);
	rec[rb - 1] = 1;
	reseal(rec, rb, seed);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, cset, 4, nr, SSDP_FORMAT_VERSION, &out), -EUCLEAN);
	/* And a record of this cache is never read for a set too big. */
	ssdp_rec_encode(rec, rb, seed, cset, 4, &v);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, cset, 2048, nr, SSDP_FORMAT_VERSION, &out),
		  -EUCLEAN);
}

/*
 * A torn sector write: the copy being written holds a mix of old and new
 * bytes.  The copy is refused and the other copy (the previous commit)
 * is believed; a completed write with a newer seq wins.
 */
TEST(codec_rec_pick_by_seq_torn_and_both_bad)
{
	u32 seed = ssdp_rec_seed((const u8 *)"torn-write-test!", SSDP_FORMAT_VERSION);
	u32 rb = ssdp_rec_bytes(256);
	struct ssdp_rec_view v1, v2, out, scratch;
	u8 older[512], newer[512], torn[512];
	u64 nr = 64;
	bool lone;
	u32 cut;

	rv_fill(&v1, 10, 9, nr, 256, 3, 1);
	rv_fill(&v2, 11, 9, nr, 256, 6, 2);
	ssdp_rec_encode(older, rb, seed, 9, 256, &v1);
	ssdp_rec_encode(newer, rb, seed, 9, 256, &v2);

	ASSERT_EQ(ssdp_rec_pick(older, newer, rb, seed, 9, 256, nr, SSDP_FORMAT_VERSION, &out,
				&scratch, &lone), 1);
	rv_same(&out, &v2, 256);
	ASSERT_TRUE(!lone);
	ASSERT_EQ(ssdp_rec_pick(newer, older, rb, seed, 9, 256, nr, SSDP_FORMAT_VERSION, &out,
				&scratch, &lone), 0);
	rv_same(&out, &v2, 256);
	ASSERT_TRUE(!lone);
	/* The same seq in both: copy 0. */
	ASSERT_EQ(ssdp_rec_pick(older, older, rb, seed, 9, 256, nr, SSDP_FORMAT_VERSION, &out,
				&scratch, NULL), 0);

	for (cut = 1; cut < rb; cut++) {
		memcpy(torn, newer, cut);
		memcpy(torn + cut, older + cut, rb - cut);
		if (!memcmp(torn, newer, rb) || !memcmp(torn, older, rb))
			continue;
		/* The copy left may be a commit old: "lone" says so. */
		ASSERT_EQ(ssdp_rec_pick(torn, older, rb, seed, 9, 256, nr, SSDP_FORMAT_VERSION,
					&out, &scratch, &lone), 1);
		rv_same(&out, &v1, 256);
		ASSERT_TRUE(lone);
		ASSERT_EQ(ssdp_rec_pick(older, torn, rb, seed, 9, 256, nr, SSDP_FORMAT_VERSION,
					&out, &scratch, &lone), 0);
		ASSERT_EQ(out.seq, 10);
		ASSERT_TRUE(lone);
	}
	/* A newer copy that contradicts itself is a bad copy too. */
	v2.tags[0] = oset_in(10, nr, 0);
	ssdp_rec_encode(newer, rb, seed, 9, 256, &v2);
	ASSERT_EQ(ssdp_rec_pick(older, newer, rb, seed, 9, 256, nr, SSDP_FORMAT_VERSION, &out,
				&scratch, &lone), 0);
	ASSERT_EQ(out.seq, 10);
	ASSERT_TRUE(lone);
	/* A zeroed (lost) copy is a bad copy as well. */
	memset(torn, 0, rb);
	ASSERT_EQ(ssdp_rec_pick(torn, older, rb, seed, 9, 256, nr, SSDP_FORMAT_VERSION, &out,
				&scratch, &lone), 1);
	ASSERT_TRUE(lone);
	/* Neither copy ever written, or both bad: the set is free. */
	memcpy(torn, older, rb);
	torn[100] ^= 0x10;
	ASSERT_EQ(ssdp_rec_pick(torn, newer, rb, seed, 9, 256, nr, SSDP_FORMAT_VERSION, &out,
				&scratch, &lone), -1);
	memset(older, 0, rb);
	memset(newer, 0xff, rb);
	ASSERT_EQ(ssdp_rec_pick(older, newer, rb, seed, 9, 256, nr, SSDP_FORMAT_VERSION, &out,
				&scratch, NULL), -1);
}

/*
 * The origin identity hash is on disk (origin_uid): a change to it would
 * make every cache refuse its own origin.  Pinned values.
 */
/*
 * The alt frame's xor is on-disk meaning: pinned.  Format 4's is a
 * nonzero multiple of min(64, S/4) below S, every choice about as likely
 * among the origin sets of one cache set; format 3's is S/2.
 */
/*
 * Which copy a metadata block's next write goes to first: never the only
 * copy of any record's newest version, and after a torn write (records
 * newest in different copies) the torn copy, the one with the highest seq.
 */
TEST(codec_blk_copies_never_overwrite_a_records_only_newest)
{
	/* Records: { pick, lone, seq of the copy picked, copy 1's seq }. */
	static const struct {
		int n;
		struct { int pick; bool lone; u64 seq, seq1; } r[3];
		unsigned int next;
		bool mixed;
	} cases[] = {
		/* Every record newest in copy 1: write copy 0. */
		{ 2, { { 1, false, 11, 11 }, { 1, false, 11, 11 } }, 0, false },
		/*
		 * The first record the same in both copies (a write to both
		 * that tore in its second copy): the others decide.  Record
		 * 0 alone would send the write to copy 1, over records 1-2's
		 * only good copies.
		 */
		{ 3, { { 0, false, 9, 9 }, { 1, true, 9, 9 }, { 1, true, 9, 9 } },
		  0, false },
		/* Newest in copy 0 (by seq, or alone): write copy 1. */
		{ 2, { { 0, false, 12, 11 }, { 0, true, 12, 0 } }, 1, false },
		/*
		 * Torn write to copy 1 (seq 11): record 0 landed, record 1 is
		 * bad there and good in copy 0 only (seq 10).  Copy 1 first:
		 * what a tear of it loses is the torn commit's, never
		 * acknowledged.
		 */
		{ 2, { { 1, false, 11, 11 }, { 0, true, 10, 0 } }, 1, true },
		/* The same, torn in copy 0, its untouched records one older. */
		{ 3, { { 0, false, 12, 11 }, { 1, false, 11, 11 }, { 1, true, 11, 11 } },
		  0, true },
		/* Records in neither copy, or the same in both: not mixed. */
		{ 2, { { -1, false, 0, 0 }, { 0, false, 7, 7 } }, 1, false },
	};
	struct ssdp_blk_copies b;
	unsigned int c;
	bool mixed;
	int i;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		ssdp_blk_copies_init(&b);
		for (i = 0; i < cases[c].n; i++)
			ssdp_blk_copies_add(&b, cases[c].r[i].pick,
					    cases[c].r[i].lone, cases[c].r[i].seq,
					    cases[c].r[i].seq1);
		ASSERT_EQ(ssdp_blk_copies_next(&b, &mixed), cases[c].next);
		ASSERT_EQ(mixed, cases[c].mixed);
	}
}

TEST(codec_alt_xor_is_pinned_and_spread)
{
	u32 count[16] = { 0 }, set_blocks, n = 0, i;
	u64 o;

	ASSERT_EQ(ssdp_alt_xor(0, 1024, SSDP_FORMAT_VERSION), 896);
	ASSERT_EQ(ssdp_alt_xor(1, 1024, SSDP_FORMAT_VERSION), 576);
	ASSERT_EQ(ssdp_alt_xor(12345, 1024, SSDP_FORMAT_VERSION), 128);
	ASSERT_EQ(ssdp_alt_xor(0, 512, SSDP_FORMAT_VERSION), 448);
	ASSERT_EQ(ssdp_alt_xor(2, 512, SSDP_FORMAT_VERSION), 320);
	ASSERT_EQ(ssdp_alt_xor(0, 16, SSDP_FORMAT_VERSION), 12);
	ASSERT_EQ(ssdp_alt_xor(0, 4, SSDP_FORMAT_VERSION), 3);
	ASSERT_EQ(ssdp_alt_xor(0, 2, SSDP_FORMAT_VERSION), 1);
	ASSERT_EQ(ssdp_alt_xor(0, 1, SSDP_FORMAT_VERSION), 0);
	for (set_blocks = 1; set_blocks <= 1024; set_blocks <<= 1) {
		ASSERT_EQ(ssdp_alt_xor(7, set_blocks, SSDP_FORMAT_V3),
			  set_blocks / 2);
		ASSERT_EQ(ssdp_alt_xor(7, set_blocks, SSDP_FORMAT_V2),
			  set_blocks / 2);
		for (o = 0; o < 2000; o++) {
			u32 x = ssdp_alt_xor(o, set_blocks,
					     SSDP_FORMAT_VERSION);
			u32 g = set_blocks / 4 < 64 ? set_blocks / 4 : 64;

			if (set_blocks < 4) {
				ASSERT_EQ(x, set_blocks / 2);
				continue;
			}
			ASSERT_TRUE(x && x < set_blocks && x % g == 0);
		}
	}
	/* Origin sets of cache set 3 of 8 (1024-frame sets): 15 choices. */
	for (o = 0; n < 15 * 200; o++) {
		if (ssdp_oset_cset(o, 8) != 3)
			continue;
		count[ssdp_alt_xor(o, 1024, SSDP_FORMAT_VERSION) / 64]++;
		n++;
	}
	ASSERT_EQ(count[0], 0);
	for (i = 1; i < 16; i++) {
		ASSERT_GT(count[i], 140);
		ASSERT_LT(count[i], 260);
	}
}

/*
 * A record is sealed for its format version: under a superblock whose
 * version was changed to 3 (another meaning of the alt bits) a version 4
 * record fails its checksum instead of being misread; versions 2 and 3
 * share a seed (version 2 records are taken over as version 3 ones).
 */
TEST(codec_rec_seed_tells_the_version)
{
	const u8 *uuid = (const u8 *)"0123456789abcdef";
	u32 s4 = ssdp_rec_seed(uuid, SSDP_FORMAT_VERSION);
	u32 s3 = ssdp_rec_seed(uuid, SSDP_FORMAT_V3);
	struct ssdp_rec_view in, out;
	u32 rb = ssdp_rec_bytes(16);
	u8 rec[1024];

	ASSERT_EQ(s3, ssdp_rec_seed(uuid, SSDP_FORMAT_V2));
	ASSERT_NE(s3, s4);
	rv_fill(&in, 5, 3, 100, 16, 5, 1);
	ssdp_rec_encode(rec, rb, s4, 3, 16, &in);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, s4, 3, 16, 100, SSDP_FORMAT_VERSION,
				  &out), 0);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, s3, 3, 16, 100, SSDP_FORMAT_V3,
				  &out), -EBADMSG);
}

TEST(codec_uid_hash_is_pinned)
{
	static const char lvm[] = "LVM-abcdefghijklmnopqrstuvwxyz0123456789";
	/* crc32c (Castagnoli, no final inversion) seeded 0x55534944 + i */
	static const u8 want[16] = {
		0x16, 0x39, 0x55, 0x0c, 0x3d, 0x2c, 0x95, 0xd1,
		0xb1, 0x65, 0x39, 0xb2, 0x9a, 0x70, 0xf9, 0x6f,
	};
	u8 a[16], b[16];

	ssdp_uid_hash(lvm, strlen(lvm), a);
	ASSERT_TRUE(memcmp(a, want, 16) == 0);
	ssdp_uid_hash(lvm, strlen(lvm) - 1, b);
	ASSERT_TRUE(memcmp(a, b, 16) != 0);
}

/*
 * A derived origin_id is on disk too, and the tool must recognise its kind
 * again at every activation: the magic, the kind, the hash of the
 * "<kind>:<identity>" string.
 */
TEST(codec_derived_id_is_pinned)
{
	static const char md[] = "4d1f3c2a:9b8e7f60:11223344:55667788";
	u8 a[16], b[16], h[16];

	ASSERT_EQ(ssdp_derived_id(SSDP_DERIVED_MD, md, a), 0);
	ASSERT_TRUE(memcmp(a, "sPiD", 4) == 0);
	ASSERT_EQ(a[4], SSDP_DERIVED_MD);
	ssdp_uid_hash("md:4d1f3c2a:9b8e7f60:11223344:55667788",
		      strlen(md) + 3, h);
	ASSERT_TRUE(memcmp(a + 5, h, 11) == 0);
	ASSERT_EQ(ssdp_derived_kind(a), SSDP_DERIVED_MD);

	/* The same text as a serial is another origin. */
	ASSERT_EQ(ssdp_derived_id(SSDP_DERIVED_SERIAL, md, b), 0);
	ASSERT_EQ(ssdp_derived_kind(b), SSDP_DERIVED_SERIAL);
	ASSERT_TRUE(memcmp(a, b, 16) != 0);

	ASSERT_EQ(ssdp_derived_id(SSDP_DERIVED_MD, "", b), -EINVAL);
	ASSERT_EQ(ssdp_derived_id(7, md, b), -EINVAL);
	ASSERT_EQ(ssdp_derived_id(0, md, b), -EINVAL);
	memset(b, 0xab, sizeof(b));
	ASSERT_EQ(ssdp_derived_kind(b), 0);
}
