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
#define ORIGIN_SETS	1024U

struct img {
	int fd;
	char path[64];
	struct ssdp_sb_info sb;
	struct ssdp_layout l;
	u32 seed;
};

static void img_geom(struct img *im, u32 flags, u64 seq, u32 version,
		     u32 block_sectors, u32 set_blocks)
{
	u8 sector[512];
	int i;

	strcpy(im->path, "/tmp/ssdp-scan-XXXXXX");
	im->fd = mkstemp(im->path);
	ASSERT_TRUE(im->fd >= 0);
	unlink(im->path);
	ASSERT_EQ(ftruncate(im->fd, IMG_SECTORS * 512), 0);

	memset(&im->sb, 0, sizeof(im->sb));
	ASSERT_EQ(ssdp_layout_compute(&im->l, IMG_SECTORS, block_sectors,
				      set_blocks), 0);
	im->sb.version = version;
	im->sb.flags = flags;
	for (i = 0; i < 16; i++)
		im->sb.uuid[i] = (u8)(i * 13 + 5);
	im->sb.origin_sectors = (u64)ORIGIN_SETS * block_sectors * set_blocks;
	im->sb.cache_sectors = IMG_SECTORS;
	im->sb.block_sectors = block_sectors;
	im->sb.set_blocks = set_blocks;
	im->sb.nr_csets = im->l.nr_csets;
	im->sb.rec_bytes = im->l.rec_bytes;
	im->sb.rec_sectors = im->l.rec_sectors;
	im->sb.data_start = im->l.data_start;
	im->sb.seq = seq;
	im->sb.format_time = 1700000000;
	ssdp_sb_encode(&im->sb, sector);
	ASSERT_EQ(pwrite(im->fd, sector, 512, 0), 512);
	im->seed = ssdp_rec_seed(im->sb.uuid, im->sb.version);
}

static void img_open(struct img *im, u32 flags, u64 seq)
{
	img_geom(im, flags, seq, SSDP_FORMAT_VERSION, 8, SET_BLOCKS);
}

static off_t rec_off(const struct img *im, unsigned int copy, u32 slot)
{
	return (off_t)(SSDP_SB_SECTORS + copy * im->l.rec_sectors) * 512 +
	       (off_t)slot * im->l.rec_bytes;
}

/* The @nth origin set (from @from) that lives in cache set @cset. */
static u32 oset_in(const struct img *im, u32 cset, u32 from, u32 nth)
{
	u32 o;

	for (o = from;; o++)
		if (ssdp_oset_cset(o, im->l.nr_csets) == cset && !nth--)
			return o;
}

/* An empty view: no tag, every frame free. */
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

/* Tag @t = @oset owning frames [first, first + nvalid), nrdirty dirty. */
static void rv_tag(struct ssdp_rec_view *v, u32 t, u32 oset, u32 first,
		   u32 nvalid, u32 ndirty)
{
	u32 i;

	v->tags[t] = oset;
	for (i = 0; i < nvalid; i++)
		rv_own(v, first + i, t, i < ndirty);
}

/* Record of @cset written in @copy at the slot of @slot (normally cset). */
static void put_view(struct img *im, unsigned int copy, u32 slot, u32 cset,
		     const struct ssdp_rec_view *v)
{
	u8 rec[1024];

	ASSERT_TRUE(im->l.rec_bytes <= sizeof(rec));
	ssdp_rec_encode(rec, im->l.rec_bytes, im->seed, cset,
			im->sb.set_blocks, v);
	ASSERT_EQ(pwrite(im->fd, rec, im->l.rec_bytes, rec_off(im, copy, slot)),
		  (ssize_t)im->l.rec_bytes);
}

/* A record of one tag (or none: @oset SSDP_REC_TAG_FREE). */
static void put_rec(struct img *im, unsigned int copy, u32 cset, u32 oset,
		    u64 seq, u32 nvalid, u32 ndirty)
{
	struct ssdp_rec_view v;

	rv_init(&v, seq);
	if (oset != SSDP_REC_TAG_FREE)
		rv_tag(&v, 0, oset, 0, nvalid, ndirty);
	put_view(im, copy, cset, cset, &v);
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

static const struct scan_set *set_of(const struct ssdp_scan *s, u32 cset)
{
	u64 i;

	for (i = 0; i < s->nr_sets; i++)
		if (s->sets[i].cset == cset)
			return &s->sets[i];
	return NULL;
}

TEST(scan_blank_foreign_and_old_version)
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

	/* Format version 1: recognised, its fields read, records not. */
	img_geom(&im, SSDP_SB_CLEAN, 10, 1, 8, SET_BLOCKS);
	put_rec(&im, 0, 0, oset_in(&im, 0, 0, 0), 3, 10, 0);
	ASSERT_EQ(scan_cache(im.fd, IMG_SECTORS, &s), 0);
	ASSERT_EQ(s.sb_res, SSDP_SB_OLD_VERSION);
	ASSERT_EQ(s.sb.version, 1);
	ASSERT_EQ(s.sb.uuid[1], 18);
	ASSERT_TRUE(s.clean);
	ASSERT_EQ(s.nr_sets, 0);
	ASSERT_EQ(s.mapped_sets, 0);
	scan_free(&s);
	close(im.fd);
}

/*
 * Alt frames: a block of a tag in frame b ^ x, x its origin set's alt xor
 * (format 4) or half the set (format 3).  The scan names a block's frame
 * as the kernel finds it (ssdprio-tool dirty lists the origin sectors of
 * dirty blocks by it).
 */
TEST(scan_finds_blocks_in_their_alt_frames)
{
	const struct scan_set *ss;
	struct ssdp_rec_view v;
	struct ssdp_scan s;
	struct img im;
	u32 a0, a1, x, ver, n;

	for (ver = SSDP_FORMAT_V3; ver <= SSDP_FORMAT_VERSION; ver++) {
		img_geom(&im, SSDP_SB_CLEAN, 10, ver, 8, SET_BLOCKS);
		a0 = oset_in(&im, 0, 0, 0);
		/* One whose format 4 xor is not half the set. */
		for (n = 1;; n++) {
			a1 = oset_in(&im, 0, 0, n);
			if (ssdp_alt_xor(a1, SET_BLOCKS, SSDP_FORMAT_VERSION) !=
			    SET_BLOCKS / 2)
				break;
		}
		x = ssdp_alt_xor(a1, SET_BLOCKS, ver);
		ASSERT_EQ(x % 8, 0);
		rv_init(&v, 3);
		/* a0: blocks 0-3 home, dirty; a1: blocks 0-3 alt (x..x+3). */
		rv_tag(&v, 0, a0, 0, 4, 4);
		rv_tag(&v, 1, a1, x, 4, 2);
		v.alt[x / 8] |= 0xf << (x % 8);
		put_view(&im, 0, 0, 0, &v);
		scan(&im, &s);
		ASSERT_EQ(scan_errors(&s), 0);
		ss = set_of(&s, 0);
		ASSERT_TRUE(ss != NULL);
		ASSERT_EQ(scan_set_frame(ss, SET_BLOCKS, ver, 0, 2), 2);
		ASSERT_EQ(scan_set_frame(ss, SET_BLOCKS, ver, 1, 2),
			  (int)(x + 2));
		ASSERT_EQ(scan_set_frame(ss, SET_BLOCKS, ver, 1, x + 2), -1);
		ASSERT_EQ(scan_set_frame(ss, SET_BLOCKS, ver, 1, 5), -1);
		ASSERT_TRUE(scan_set_dirty(ss, x + 1));
		ASSERT_FALSE(scan_set_dirty(ss, x + 2));
		ASSERT_EQ(ss->tag_dirty[1], 2);
		scan_free(&s);
		close(im.fd);
	}
}

TEST(scan_picks_as_the_kernel_and_counts)
{
	const struct scan_set *ss;
	struct ssdp_rec_view v;
	struct ssdp_scan s;
	struct img im;
	u32 a0, a1, b0, b1, c0, c1;

	img_open(&im, SSDP_SB_CLEAN, 10);
	ASSERT_EQ(im.l.nr_csets, 15);
	ASSERT_EQ(im.l.rec_bytes, 512);
	a0 = oset_in(&im, 0, 0, 0);
	a1 = oset_in(&im, 0, 0, 1);
	b0 = oset_in(&im, 1, 0, 0);
	b1 = oset_in(&im, 1, 0, 1);
	c0 = oset_in(&im, 2, 0, 0);
	c1 = oset_in(&im, 2, 0, 1);

	/* cset 0: copy 0 only (copy 1 never written), two tags. */
	rv_init(&v, 3);
	rv_tag(&v, 0, a0, 0, 100, 40);
	rv_tag(&v, 7, a1, 100, 20, 0);
	put_view(&im, 0, 0, 0, &v);
	/* cset 1: copy 1 is newer and holds another origin set. */
	put_rec(&im, 0, 1, b0, 2, 10, 10);
	put_rec(&im, 1, 1, b1, 4, 20, 5);
	/* cset 2: copy 1 newer but torn: copy 0 is used. */
	put_rec(&im, 0, 2, c0, 4, 256, 0);
	put_rec(&im, 1, 2, c1, 6, 30, 30);
	flip_byte(&im, 1, 2, 50);
	/* cset 3: no tag in either copy. */
	put_rec(&im, 0, 3, SSDP_REC_TAG_FREE, 1, 0, 0);
	put_rec(&im, 1, 3, SSDP_REC_TAG_FREE, 2, 0, 0);

	scan(&im, &s);
	ASSERT_TRUE(s.clean);
	ASSERT_EQ(s.mapped_sets, 3);
	ASSERT_EQ(s.free_sets, 12);
	ASSERT_EQ(s.tags_used, 4);
	ASSERT_EQ(s.valid_blocks, 100 + 20 + 20 + 256);
	ASSERT_EQ(s.dirty_blocks, 40 + 5 + 0);
	/*
	 * A clean shutdown: the load keeps every valid block of cset 1, and
	 * only the dirty ones of csets 0 and 2, whose other copy is blank or
	 * torn (what is left may be a commit old): cset 2 has none.
	 */
	ASSERT_EQ(s.load_mapped_sets, 2);
	ASSERT_EQ(s.load_valid_blocks, 40 + 20 + 0);
	ASSERT_EQ(s.load_dirty_blocks, 45);
	ASSERT_EQ(s.from_copy[0], 2);	/* csets 0 and 2 */
	ASSERT_EQ(s.from_copy[1], 2);	/* csets 1 and 3 */
	ASSERT_EQ(s.unwritten, 11);
	ASSERT_EQ(s.found[SCAN_TORN].count, 1);
	ASSERT_EQ(s.found[SCAN_TORN].first, 2);
	ASSERT_EQ(s.max_rec_seq, 4);
	ASSERT_EQ(scan_errors(&s), 0);
	ASSERT_EQ(s.nr_sets, 3);

	ss = set_of(&s, 0);
	ASSERT_TRUE(ss != NULL);
	ASSERT_EQ(ss->nr_tags, 2);
	ASSERT_EQ(ss->tags[0], a0);
	ASSERT_EQ(ss->tags[7], a1);
	ASSERT_EQ(ss->tags[1], SSDP_REC_TAG_FREE);
	ASSERT_EQ(ss->tag_valid[0], 100);
	ASSERT_EQ(ss->tag_dirty[0], 40);
	ASSERT_EQ(ss->tag_valid[7], 20);
	ASSERT_EQ(ss->tag_dirty[7], 0);
	ASSERT_EQ(ss->valid, 120);
	ASSERT_EQ(ss->other, SCAN_OTHER_BLANK);
	ASSERT_EQ(scan_set_owner(ss, 99), 0);
	ASSERT_EQ(scan_set_owner(ss, 100), 7);
	ASSERT_EQ(scan_set_owner(ss, 120), 0xf);
	ASSERT_TRUE(scan_set_dirty(ss, 39));
	ASSERT_FALSE(scan_set_dirty(ss, 40));

	ss = set_of(&s, 1);
	ASSERT_EQ(ss->tags[0], b1);
	ASSERT_EQ(ss->copy, 1);
	ASSERT_EQ(ss->other, SCAN_OTHER_GOOD);
	ss = set_of(&s, 2);
	ASSERT_EQ(ss->other, SCAN_OTHER_BAD);
	ASSERT_EQ(ss->tags[0], c0);
	ASSERT_EQ(ss->copy, 0);
	scan_free(&s);
	close(im.fd);
}

TEST(scan_unclean_keeps_only_dirty_blocks)
{
	struct ssdp_rec_view v;
	struct ssdp_scan s;
	struct img im;

	img_open(&im, 0, 10);
	/* cset 0: a clean tag and a tag with 8 dirty blocks of 30. */
	rv_init(&v, 12);
	rv_tag(&v, 0, oset_in(&im, 0, 0, 0), 0, 100, 0);
	rv_tag(&v, 1, oset_in(&im, 0, 0, 1), 100, 30, 8);
	put_view(&im, 0, 0, 0, &v);
	/* cset 4: clean only. */
	put_rec(&im, 1, 4, oset_in(&im, 4, 0, 0), 11, 16, 0);

	scan(&im, &s);
	ASSERT_FALSE(s.clean);
	ASSERT_EQ(s.mapped_sets, 2);
	ASSERT_EQ(s.tags_used, 3);
	ASSERT_EQ(s.valid_blocks, 146);
	ASSERT_EQ(s.dirty_blocks, 8);
	ASSERT_EQ(s.load_mapped_sets, 1);
	ASSERT_EQ(s.load_valid_blocks, 8);
	ASSERT_EQ(s.load_dirty_blocks, 8);
	ASSERT_EQ(scan_errors(&s), 0);	/* newer than sb: fine when unclean */
	ASSERT_EQ(s.found[SCAN_NEWER_THAN_SB].count, 0);
	scan_free(&s);
	close(im.fd);
}

/*
 * Copies that check out but contradict themselves are bad copies: the
 * other copy is believed, or the set is free.
 */
TEST(scan_inconsistent_copies_are_bad_copies)
{
	const struct scan_set *ss;
	struct ssdp_rec_view v;
	struct ssdp_scan s;
	struct img im;
	u32 o;

	img_open(&im, SSDP_SB_CLEAN, 100);
	/* cset 0: a tag placed in cset 1; copy 0 good and older. */
	put_rec(&im, 0, 0, oset_in(&im, 0, 0, 0), 5, 4, 0);
	put_rec(&im, 1, 0, oset_in(&im, 1, 0, 0), 6, 4, 0);
	/* cset 1: one origin set in two tags; nothing else. */
	o = oset_in(&im, 1, 0, 0);
	rv_init(&v, 7);
	rv_tag(&v, 0, o, 0, 2, 0);
	rv_tag(&v, 1, o, 2, 2, 0);
	put_view(&im, 0, 1, 1, &v);
	/* cset 2: an owner without a tag. */
	rv_init(&v, 7);
	rv_tag(&v, 0, oset_in(&im, 2, 0, 0), 0, 2, 0);
	rv_own(&v, 9, 4, false);
	put_view(&im, 1, 2, 2, &v);
	/* cset 3: dirty without an owner. */
	rv_init(&v, 7);
	rv_tag(&v, 0, oset_in(&im, 3, 0, 0), 0, 2, 0);
	v.dirty[1] = 0x1;
	put_view(&im, 0, 3, 3, &v);
	/* cset 4: a record written in cset 5's slot (good copy 1 too). */
	put_rec(&im, 1, 4, oset_in(&im, 4, 0, 0), 8, 3, 0);
	rv_init(&v, 9);
	rv_tag(&v, 0, oset_in(&im, 5, 0, 0), 0, 1, 0);
	put_view(&im, 0, 4, 5, &v);

	scan(&im, &s);
	ASSERT_EQ(s.found[SCAN_INCONSISTENT].count, 5);
	ASSERT_EQ(s.found[SCAN_INCONSISTENT].first, 0);
	ASSERT_EQ(scan_severity(&s, SCAN_INCONSISTENT), SCAN_ERROR);
	ASSERT_EQ(scan_errors(&s), 1);
	/* Not "unreadable" as well: that is for copies failing checksums. */
	ASSERT_EQ(s.found[SCAN_UNREADABLE].count, 0);
	ASSERT_EQ(s.mapped_sets, 2);
	ASSERT_EQ(s.valid_blocks, 4 + 3);
	ss = set_of(&s, 0);
	ASSERT_EQ(ss->copy, 0);
	ASSERT_EQ(ss->other, SCAN_OTHER_INCONSISTENT);
	ss = set_of(&s, 4);
	ASSERT_EQ(ss->copy, 1);
	ASSERT_EQ(ss->other, SCAN_OTHER_INCONSISTENT);
	scan_free(&s);
	close(im.fd);
}

TEST(scan_past_origin_warns_clean_and_refuses_dirty)
{
	const struct scan_set *ss;
	struct ssdp_rec_view v;
	struct ssdp_scan s;
	struct img im;
	u32 past;

	img_open(&im, SSDP_SB_CLEAN, 100);
	past = oset_in(&im, 6, ORIGIN_SETS, 0);
	rv_init(&v, 5);
	rv_tag(&v, 0, oset_in(&im, 6, 0, 0), 0, 10, 2);
	rv_tag(&v, 3, past, 10, 6, 0);
	put_view(&im, 0, 6, 6, &v);

	scan(&im, &s);
	ASSERT_EQ(s.found[SCAN_PAST_ORIGIN].count, 1);
	ASSERT_EQ(s.found[SCAN_PAST_ORIGIN].first, 6);
	ASSERT_EQ(scan_severity(&s, SCAN_PAST_ORIGIN), SCAN_WARN);
	ASSERT_EQ(scan_errors(&s), 0);
	/* Counted as the load keeps it: without the tag past the origin. */
	ASSERT_EQ(s.mapped_sets, 1);
	ASSERT_EQ(s.tags_used, 1);
	ASSERT_EQ(s.valid_blocks, 10);
	ss = set_of(&s, 6);
	ASSERT_EQ(ss->nr_tags, 2);
	ASSERT_EQ(ss->past_origin, 1U << 3);
	ASSERT_EQ(ss->tag_valid[3], 6);
	scan_free(&s);

	/* With dirty blocks the kernel refuses the cache. */
	v.seq = 6;
	rv_tag(&v, 3, past, 10, 6, 1);
	put_view(&im, 1, 6, 6, &v);
	scan(&im, &s);
	ASSERT_EQ(s.found[SCAN_PAST_ORIGIN].count, 1);
	ASSERT_EQ(s.past_origin_dirty, 1);
	ASSERT_EQ(scan_severity(&s, SCAN_PAST_ORIGIN), SCAN_ERROR);
	ASSERT_EQ(scan_errors(&s), 1);
	ASSERT_EQ(s.dirty_blocks, 2);
	scan_free(&s);

	/* A set whose only tag is past the origin is not mapped. */
	put_rec(&im, 0, 6, past, 20, 1, 0);
	put_rec(&im, 1, 6, past, 19, 1, 0);
	scan(&im, &s);
	ASSERT_EQ(s.mapped_sets, 0);
	ASSERT_EQ(s.free_sets, 15);
	ASSERT_EQ(s.nr_sets, 1);
	ASSERT_EQ(scan_errors(&s), 0);
	scan_free(&s);
	close(im.fd);
}

TEST(scan_errors_on_a_clean_cache)
{
	struct ssdp_rec_view v;
	struct ssdp_scan s;
	struct img im;
	u32 rpb;

	img_open(&im, SSDP_SB_CLEAN, 10);
	rpb = 4096 / im.l.rec_bytes;
	/* Newer than the clean superblock. */
	put_rec(&im, 0, 5, oset_in(&im, 5, 0, 0), 11, 1, 1);
	/* A seq no cache reaches (the kernel refuses the cache). */
	put_rec(&im, 0, 6, oset_in(&im, 6, 0, 0), SSDP_SEQ_LIMIT, 1, 1);
	/* Past the last cache set (slot 15 of a 16-per-block layout). */
	ASSERT_TRUE(im.l.nr_csets % rpb != 0);
	rv_init(&v, 3);
	put_view(&im, 1, im.l.nr_csets, im.l.nr_csets, &v);
	/* Neither copy checks out, not blank. */
	put_rec(&im, 0, 7, oset_in(&im, 7, 0, 0), 3, 1, 0);
	flip_byte(&im, 0, 7, 20);

	scan(&im, &s);
	ASSERT_EQ(s.found[SCAN_NEWER_THAN_SB].count, 2);
	ASSERT_EQ(s.found[SCAN_SEQ_PAST_LIMIT].count, 1);
	ASSERT_EQ(s.found[SCAN_SEQ_PAST_LIMIT].first, 6);
	ASSERT_EQ(scan_severity(&s, SCAN_SEQ_PAST_LIMIT), SCAN_ERROR);
	ASSERT_EQ(s.found[SCAN_STRAY].count, 1);
	ASSERT_EQ(s.found[SCAN_STRAY].first, 15);
	ASSERT_EQ(s.found[SCAN_UNREADABLE].count, 1);
	ASSERT_EQ(s.found[SCAN_UNREADABLE].first, 7);
	ASSERT_EQ(scan_severity(&s, SCAN_UNREADABLE), SCAN_WARN);
	ASSERT_EQ(s.found[SCAN_TORN].count, 0);
	ASSERT_EQ(scan_errors(&s), 3);
	ASSERT_EQ(s.mapped_sets, 2);
	scan_free(&s);

	/* A truncated device. */
	ASSERT_EQ(scan_cache(im.fd, IMG_SECTORS - 8, &s), 0);
	ASSERT_EQ(s.found[SCAN_TRUNCATED].count, 1);
	ASSERT_EQ(s.found[SCAN_TRUNCATED].first, IMG_SECTORS - 8);
	scan_free(&s);
	close(im.fd);
}

/* 1 KiB records (1024-block sets), four to a metadata block, two blocks. */
TEST(scan_large_records_across_blocks)
{
	const struct scan_set *ss;
	struct ssdp_rec_view v;
	struct ssdp_scan s;
	struct img im;
	u32 last;

	img_geom(&im, SSDP_SB_CLEAN, 50, SSDP_FORMAT_VERSION, 1, 1024);
	ASSERT_EQ(im.l.rec_bytes, 1024);
	ASSERT_EQ(im.l.nr_csets, 30);
	ASSERT_EQ(im.l.rec_sectors, 64);
	last = im.l.nr_csets - 1;
	rv_init(&v, 7);
	rv_tag(&v, 14, oset_in(&im, last, 0, 0), 1000, 24, 24);
	rv_tag(&v, 2, oset_in(&im, last, 0, 1), 0, 1000, 3);
	put_view(&im, 1, last, last, &v);
	put_rec(&im, 0, 5, oset_in(&im, 5, 0, 0), 8, 1024, 0);

	scan(&im, &s);
	ASSERT_EQ(s.nr_sets, 2);
	ASSERT_EQ(s.valid_blocks, 2048);
	ASSERT_EQ(s.dirty_blocks, 27);
	ASSERT_EQ(s.unwritten, 28);
	ASSERT_EQ(scan_errors(&s), 0);
	ss = set_of(&s, last);
	ASSERT_EQ(ss->tag_valid[14], 24);
	ASSERT_EQ(ss->tag_dirty[2], 3);
	ASSERT_EQ(scan_set_owner(ss, 1023), 14);
	ASSERT_TRUE(scan_set_dirty(ss, 1023));
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

/*
 * Reads of [fail_from, fail_to) fail with EIO: the unit tests link with
 * ld's --wrap=pread (tests/unit/Makefile), so that a scan meets a device
 * that cannot read part of one record copy.
 */
static off_t fail_from = -1, fail_to = -1;
ssize_t __real_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off)
{
	if (fail_from >= 0 && off < fail_to && off + (off_t)n > fail_from) {
		errno = EIO;
		return -1;
	}
	return __real_pread(fd, buf, n, off);
}

/*
 * A metadata block of one copy that cannot be read: its records come from
 * the other copy, as the kernel's load takes them, and are reported; one
 * that neither copy can give fails the scan, as it fails the load.
 */
TEST(scan_uses_the_other_copy_of_an_unreadable_metadata_block)
{
	struct ssdp_scan s;
	struct img im;
	u32 a0 = 0, b0, rpb;

	img_open(&im, 0, 1);
	rpb = SSDP_META_BLOCK_BYTES / im.l.rec_bytes;
	ASSERT_TRUE(rpb >= 1 && rpb < im.l.nr_csets);
	b0 = oset_in(&im, rpb, 0, 0);
	a0 = oset_in(&im, 0, 0, 0);
	/* cset 0 newest in copy 0, cset rpb (the next block) in copy 1. */
	put_rec(&im, 0, 0, a0, 3, 20, 10);
	put_rec(&im, 1, 0, a0, 2, 20, 20);
	put_rec(&im, 1, rpb, b0, 5, 8, 8);
	/* Copy 0's first metadata block unreadable. */
	fail_from = rec_off(&im, 0, 0);
	fail_to = fail_from + SSDP_META_BLOCK_BYTES;
	scan(&im, &s);
	ASSERT_EQ(s.found[SCAN_READ_ERROR].count, rpb);
	ASSERT_EQ(s.found[SCAN_READ_ERROR].first, 0);
	ASSERT_EQ(scan_severity(&s, SCAN_READ_ERROR), SCAN_WARN);
	ASSERT_EQ(scan_errors(&s), 0);
	ASSERT_EQ(s.found[SCAN_TORN].count, 0);
	/* cset 0 from copy 1 (the older, all it has), cset rpb as written. */
	ASSERT_EQ(s.mapped_sets, 2);
	ASSERT_EQ(s.dirty_blocks, 20 + 8);
	ASSERT_EQ(s.from_copy[1], 2);
	ASSERT_EQ(set_of(&s, 0)->other, SCAN_OTHER_BAD);
	scan_free(&s);
	/* The same block unreadable in both copies: no scan. */
	fail_to = rec_off(&im, 1, 0) + SSDP_META_BLOCK_BYTES;
	ASSERT_EQ(scan_cache(im.fd, IMG_SECTORS, &s), -EIO);
	scan_free(&s);
	fail_from = fail_to = -1;
	close(im.fd);
}
