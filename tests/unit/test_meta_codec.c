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
	in.version = 2;
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

static void fill_bits(u8 *valid, u8 *dirty, u32 bm, unsigned int seed)
{
	u32 i;

	for (i = 0; i < bm; i++) {
		valid[i] = (u8)(seed * 31 + i * 17);
		dirty[i] = valid[i] & (u8)(seed + i * 5);
	}
}

TEST(codec_rec_round_trip_every_geometry)
{
	u32 set_blocks, seed = ssdp_rec_seed((const u8 *)"0123456789abcdef");

	for (set_blocks = 1; set_blocks <= 1024; set_blocks <<= 1) {
		u32 rb = ssdp_rec_bytes(set_blocks), bm =
			ssdp_bitmap_bytes(set_blocks);
		u8 rec[512], valid[128], dirty[128];
		struct ssdp_rec_info out;

		ASSERT_TRUE(rb <= 512 && 512 % rb == 0);
		fill_bits(valid, dirty, bm, set_blocks);
		if (set_blocks < 8) {
			valid[0] &= (u8)((1U << set_blocks) - 1);
			dirty[0] &= valid[0];
		}
		ssdp_rec_encode(rec, rb, seed, 42, set_blocks, 77, 9, 33, valid,
				dirty);
		ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, 42, set_blocks, &out),
			  0);
		ASSERT_EQ(out.oset, 77);
		ASSERT_EQ(out.seq, 9);
		ASSERT_EQ(out.map_seq, 33);
		ASSERT_EQ(memcmp(out.valid, valid, bm), 0);
		ASSERT_EQ(memcmp(out.dirty, dirty, bm), 0);
		/* Misplaced (another cset's slot) and another format. */
		ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, 43, set_blocks, &out),
			  -EUCLEAN);
		ASSERT_EQ(ssdp_rec_decode(rec, rb, seed + 1, 42, set_blocks,
					  &out), -EBADMSG);
	}
}

TEST(codec_rec_every_bit_flip_is_detected)
{
	u32 seed = ssdp_rec_seed((const u8 *)"fedcba9876543210");
	u32 rb = ssdp_rec_bytes(256), bm = ssdp_bitmap_bytes(256);
	u8 rec[512], valid[32], dirty[32];
	struct ssdp_rec_info out;
	unsigned int bit;

	fill_bits(valid, dirty, bm, 3);
	ssdp_rec_encode(rec, rb, seed, 5, 256, 1000, 17, 4, valid, dirty);
	for (bit = 0; bit < rb * 8; bit++) {
		rec[bit / 8] ^= 1U << (bit % 8);
		ASSERT_NE(ssdp_rec_decode(rec, rb, seed, 5, 256, &out), 0);
		rec[bit / 8] ^= 1U << (bit % 8);
	}
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, 5, 256, &out), 0);
}

TEST(codec_rec_inconsistent_bits_are_refused)
{
	u32 seed = 1234, rb = ssdp_rec_bytes(4);
	u8 rec[64], valid[1], dirty[1];
	struct ssdp_rec_info out;

	/* Dirty without valid. */
	valid[0] = 0x1;
	dirty[0] = 0x2;
	ssdp_rec_encode(rec, rb, seed, 0, 4, 3, 1, 1, valid, dirty);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, 0, 4, &out), -EUCLEAN);
	/* A block past the end of a 4-block set. */
	valid[0] = 0x10;
	dirty[0] = 0;
	ssdp_rec_encode(rec, rb, seed, 0, 4, 3, 1, 1, valid, dirty);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, 0, 4, &out), -EUCLEAN);
	/* Valid blocks in a free set. */
	valid[0] = 0x1;
	ssdp_rec_encode(rec, rb, seed, 0, 4, SSDP_OSET_FREE, 1, 1, valid, dirty);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, 0, 4, &out), -EUCLEAN);
	/* A free set. */
	ssdp_rec_encode(rec, rb, seed, 0, 4, SSDP_OSET_FREE, 1, 1, NULL, NULL);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, seed, 0, 4, &out), 0);
	ASSERT_EQ(out.oset, SSDP_OSET_FREE);
}

/*
 * A torn sector write: the copy being written holds a mix of old and new
 * bytes.  The copy is refused and the other copy (the previous commit)
 * is believed; a completed write with a newer seq wins.
 */
TEST(codec_rec_torn_write_falls_back_to_the_other_copy)
{
	u32 seed = ssdp_rec_seed((const u8 *)"torn-write-test!");
	u32 rb = ssdp_rec_bytes(256), bm = ssdp_bitmap_bytes(256);
	u8 older[128], newer[128], torn[128], v1[32], d1[32], v2[32], d2[32];
	struct ssdp_rec_info out;
	u32 cut;

	fill_bits(v1, d1, bm, 1);
	fill_bits(v2, d2, bm, 2);
	ssdp_rec_encode(older, rb, seed, 9, 256, 500, 10, 2, v1, d1);
	ssdp_rec_encode(newer, rb, seed, 9, 256, 500, 11, 2, v2, d2);

	ASSERT_EQ(ssdp_rec_pick(older, newer, rb, seed, 9, 256, &out), 1);
	ASSERT_EQ(out.seq, 11);
	ASSERT_EQ(ssdp_rec_pick(newer, older, rb, seed, 9, 256, &out), 0);
	ASSERT_EQ(out.seq, 11);

	for (cut = 1; cut < rb; cut++) {
		memcpy(torn, newer, cut);
		memcpy(torn + cut, older + cut, rb - cut);
		if (!memcmp(torn, newer, rb) || !memcmp(torn, older, rb))
			continue;
		ASSERT_EQ(ssdp_rec_pick(torn, older, rb, seed, 9, 256, &out),
			  1);
		ASSERT_EQ(out.seq, 10);
		ASSERT_EQ(memcmp(out.valid, v1, bm), 0);
	}
	/* Neither copy ever written: the set is free. */
	memset(older, 0, rb);
	memset(newer, 0xff, rb);
	ASSERT_EQ(ssdp_rec_pick(older, newer, rb, seed, 9, 256, &out), -1);
}

/*
 * The origin identity hash is on disk (origin_uid): a change to it would
 * make every cache refuse its own origin.  Pinned values.
 */
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
