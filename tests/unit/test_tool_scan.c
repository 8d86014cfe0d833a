// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool's reading of a cache device (tools/cache_scan.c): images
 * encoded with the kernel's codec, scanned back from a temporary file.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "cache_scan.h"

#define IMG_SECTORS	(1ULL << 15)	/* 16 MiB: 15 sets of 1 MiB */
#define SET_BLOCKS	256U

struct img {
	int fd;
	char path[64];
	struct ssdp_sb_info sb;
	struct ssdp_layout l;
	u32 seed;
};

static void img_open(struct img *im, u32 flags, u64 seq)
{
	u8 sector[512];
	int i;

	strcpy(im->path, "/tmp/ssdp-scan-XXXXXX");
	im->fd = mkstemp(im->path);
	ASSERT_TRUE(im->fd >= 0);
	unlink(im->path);
	ASSERT_EQ(ftruncate(im->fd, IMG_SECTORS * 512), 0);

	memset(&im->sb, 0, sizeof(im->sb));
	ASSERT_EQ(ssdp_layout_compute(&im->l, IMG_SECTORS, 8, SET_BLOCKS), 0);
	im->sb.version = SSDP_FORMAT_VERSION;
	im->sb.flags = flags;
	for (i = 0; i < 16; i++)
		im->sb.uuid[i] = (u8)(i * 13 + 5);
	im->sb.origin_sectors = 64 * 2048;	/* 64 origin sets */
	im->sb.cache_sectors = IMG_SECTORS;
	im->sb.block_sectors = 8;
	im->sb.set_blocks = SET_BLOCKS;
	im->sb.nr_csets = im->l.nr_csets;
	im->sb.rec_bytes = im->l.rec_bytes;
	im->sb.rec_sectors = im->l.rec_sectors;
	im->sb.data_start = im->l.data_start;
	im->sb.seq = seq;
	im->sb.format_time = 1700000000;
	ssdp_sb_encode(&im->sb, sector);
	ASSERT_EQ(pwrite(im->fd, sector, 512, 0), 512);
	im->seed = ssdp_rec_seed(im->sb.uuid);
}

static off_t rec_off(const struct img *im, unsigned int copy, u32 slot)
{
	u32 rps = 512 / im->l.rec_bytes;

	(void)rps;
	return (off_t)(SSDP_SB_SECTORS + copy * im->l.rec_sectors) * 512 +
	       (off_t)slot * im->l.rec_bytes;
}

/* Record of @cset written in @copy at the slot of @slot (normally cset). */
static void put_rec(struct img *im, unsigned int copy, u32 slot, u32 cset,
		    u64 oset, u64 seq, u32 nvalid, u32 ndirty)
{
	u8 rec[512], valid[SET_BLOCKS / 8], dirty[SET_BLOCKS / 8];
	u32 i;

	memset(valid, 0, sizeof(valid));
	memset(dirty, 0, sizeof(dirty));
	for (i = 0; i < nvalid; i++)
		valid[i / 8] |= 1U << (i % 8);
	for (i = 0; i < ndirty; i++)
		dirty[i / 8] |= 1U << (i % 8);
	/* The tests' "seq" is both the commit and the mapping generation. */
	ssdp_rec_encode(rec, im->l.rec_bytes, im->seed, cset, SET_BLOCKS, oset,
			seq, seq, oset == SSDP_OSET_FREE ? NULL : valid,
			oset == SSDP_OSET_FREE ? NULL : dirty);
	ASSERT_EQ(pwrite(im->fd, rec, im->l.rec_bytes, rec_off(im, copy, slot)),
		  (ssize_t)im->l.rec_bytes);
}

static void flip_byte(struct img *im, unsigned int copy, u32 slot, u32 at)
{
	u8 b;

	ASSERT_EQ(pread(im->fd, &b, 1, rec_off(im, copy, slot) + at), 1);
	b ^= 0x40;
	ASSERT_EQ(pwrite(im->fd, &b, 1, rec_off(im, copy, slot) + at), 1);
}

static void scan(struct img *im, struct ssdp_scan *s)
{
	ASSERT_EQ(scan_cache(im->fd, IMG_SECTORS, s), 0);
	ASSERT_EQ(s->sb_res, SSDP_SB_OK);
}

TEST(scan_blank_and_foreign)
{
	struct ssdp_scan s;
	struct img im;

	u8 zero[512] = { 0 };

	img_open(&im, SSDP_SB_CLEAN, 10);
	ASSERT_EQ(pwrite(im.fd, zero, 512, 0), 512);
	ASSERT_EQ(scan_cache(im.fd, IMG_SECTORS, &s), 0);
	ASSERT_EQ(s.sb_res, SSDP_SB_BLANK);
	ASSERT_EQ(pwrite(im.fd, "XFSB", 4, 0), 4);
	ASSERT_EQ(scan_cache(im.fd, IMG_SECTORS, &s), 0);
	ASSERT_EQ(s.sb_res, SSDP_SB_FOREIGN);
	scan_free(&s);
	close(im.fd);
}

TEST(scan_picks_as_the_kernel_and_counts)
{
	struct ssdp_scan s;
	struct img im;

	img_open(&im, SSDP_SB_CLEAN, 10);
	ASSERT_EQ(im.l.nr_csets, 15);
	/* cset 0: copy 0 only (copy 1 never written). */
	put_rec(&im, 0, 0, 0, 5, 3, 100, 40);
	/* cset 1: copy 1 is newer and maps another origin set. */
	put_rec(&im, 0, 1, 1, 7, 2, 10, 10);
	put_rec(&im, 1, 1, 1, 8, 4, 20, 5);
	/* cset 2: copy 1 newer but torn: copy 0 is used. */
	put_rec(&im, 0, 2, 2, 9, 4, 256, 0);
	put_rec(&im, 1, 2, 2, 10, 6, 30, 30);
	flip_byte(&im, 1, 2, 50);
	/* cset 3: free in both copies. */
	put_rec(&im, 0, 3, 3, SSDP_OSET_FREE, 1, 0, 0);
	put_rec(&im, 1, 3, 3, SSDP_OSET_FREE, 2, 0, 0);

	scan(&im, &s);
	ASSERT_TRUE(s.clean);
	ASSERT_EQ(s.mapped_sets, 3);
	ASSERT_EQ(s.free_sets, 12);
	ASSERT_EQ(s.valid_blocks, 100 + 20 + 256);
	ASSERT_EQ(s.dirty_blocks, 40 + 5 + 0);
	ASSERT_EQ(s.load_dirty_blocks, 45);
	ASSERT_EQ(s.from_copy[0], 2);	/* csets 0 and 2 */
	ASSERT_EQ(s.from_copy[1], 2);	/* csets 1 and 3 */
	ASSERT_EQ(s.unwritten, 11);
	ASSERT_EQ(s.found[SCAN_TORN].count, 1);
	ASSERT_EQ(s.found[SCAN_TORN].first, 2);
	ASSERT_EQ(s.max_rec_seq, 4);
	ASSERT_EQ(scan_errors(&s), 0);
	ASSERT_EQ(s.nr_sets, 3);
	ASSERT_EQ(s.sets[1].oset, 8);
	ASSERT_EQ(s.sets[1].copy, 1);
	ASSERT_EQ(s.sets[1].other, SCAN_OTHER_GOOD);
	ASSERT_EQ(s.sets[0].other, SCAN_OTHER_BLANK);
	ASSERT_EQ(s.sets[2].other, SCAN_OTHER_BAD);
	ASSERT_EQ(s.sets[2].oset, 9);
	scan_free(&s);
	close(im.fd);
}

TEST(scan_unclean_loads_valid_as_dirty_and_tolerates_a_torn_move)
{
	struct ssdp_scan s;
	struct img im;

	img_open(&im, 0, 10);
	put_rec(&im, 0, 0, 0, 5, 3, 100, 40);
	/* A torn commit: oset 5 moved to cset 4, cset 0 not yet rewritten. */
	put_rec(&im, 0, 4, 4, 5, 12, 8, 8);
	put_rec(&im, 0, 6, 6, 6, 12, 16, 0);
	/* The same seq: a set moved between two chunks of one commit. */
	put_rec(&im, 1, 8, 8, 6, 12, 4, 4);

	scan(&im, &s);
	ASSERT_FALSE(s.clean);
	ASSERT_EQ(s.mapped_sets, 2);
	ASSERT_EQ(s.valid_blocks, 8 + 16);
	ASSERT_EQ(s.dirty_blocks, 8);
	ASSERT_EQ(s.load_dirty_blocks, 24);
	ASSERT_EQ(s.found[SCAN_DUP].count, 1);
	ASSERT_EQ(s.found[SCAN_DUP].first, 0);
	ASSERT_EQ(scan_severity(&s, SCAN_DUP), SCAN_WARN);
	ASSERT_EQ(s.found[SCAN_DUP_AMBIGUOUS].count, 1);
	ASSERT_EQ(s.found[SCAN_DUP_AMBIGUOUS].first, 8);
	ASSERT_EQ(scan_severity(&s, SCAN_DUP_AMBIGUOUS), SCAN_WARN);
	ASSERT_EQ(scan_errors(&s), 0);	/* newer than sb: fine when unclean */
	ASSERT_TRUE(s.sets[0].lost);
	scan_free(&s);
	close(im.fd);
}

TEST(scan_errors_on_a_clean_cache)
{
	struct ssdp_scan s;
	struct img im;
	u32 rps;

	img_open(&im, SSDP_SB_CLEAN, 10);
	rps = 512 / im.l.rec_bytes;
	/* Duplicate with the same seq, on a clean superblock. */
	put_rec(&im, 0, 0, 0, 5, 3, 100, 40);
	put_rec(&im, 0, 1, 1, 5, 3, 10, 0);
	/* Past the origin's 64 sets. */
	put_rec(&im, 0, 2, 2, 64, 3, 1, 0);
	/* A record in another set's slot. */
	put_rec(&im, 1, 3, 7, 9, 3, 1, 0);
	/* Newer than the clean superblock. */
	put_rec(&im, 0, 5, 5, 11, 11, 1, 1);
	/* Past the last cache set (slot 15 of a 4-per-sector layout). */
	ASSERT_TRUE(im.l.nr_csets % rps != 0);
	put_rec(&im, 1, im.l.nr_csets, im.l.nr_csets, 12, 3, 1, 0);

	scan(&im, &s);
	ASSERT_EQ(s.found[SCAN_DUP_AMBIGUOUS].count, 1);
	ASSERT_EQ(s.found[SCAN_DUP_AMBIGUOUS].first, 1);
	ASSERT_EQ(s.found[SCAN_PAST_ORIGIN].count, 1);
	ASSERT_EQ(s.found[SCAN_INCONSISTENT].count, 1);
	ASSERT_EQ(s.found[SCAN_INCONSISTENT].first, 3);
	ASSERT_EQ(s.found[SCAN_NEWER_THAN_SB].count, 1);
	ASSERT_EQ(s.found[SCAN_STRAY].count, 1);
	ASSERT_EQ(scan_errors(&s), 5);
	/* The load keeps the lower cache set of the two. */
	ASSERT_EQ(s.mapped_sets, 2);
	ASSERT_EQ(s.valid_blocks, 101);
	scan_free(&s);

	/* A truncated device. */
	ASSERT_EQ(scan_cache(im.fd, IMG_SECTORS - 8, &s), 0);
	ASSERT_EQ(s.found[SCAN_TRUNCATED].count, 1);
	scan_free(&s);
	close(im.fd);
}

TEST(scan_read_unaligned_through_a_bounce)
{
	u8 buf[700], want[700];
	struct img im;
	u32 i;

	img_open(&im, SSDP_SB_CLEAN, 1);
	for (i = 0; i < sizeof(want); i++)
		want[i] = (u8)(i * 7);
	ASSERT_EQ(pwrite(im.fd, want, sizeof(want), 4096 * 3 + 100),
		  (ssize_t)sizeof(want));
	ASSERT_EQ(scan_read(im.fd, 4096 * 3 + 100, buf, sizeof(buf)), 0);
	ASSERT_EQ(memcmp(buf, want, sizeof(buf)), 0);
	/* Past the end reads as zeroes. */
	ASSERT_EQ(scan_read(im.fd, IMG_SECTORS * 512 - 100, buf, 300), 0);
	for (i = 100; i < 300; i++)
		ASSERT_EQ(buf[i], 0);
	close(im.fd);
}
