// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>

#include "harness.h"
#include "frame_map.h"
#include "config.h"

static void check_ok(struct ssdp_fmap *fm)
{
	const char *why = NULL;

	if (ssdp_fmap_check(fm, &why))
		ssdp_test_fail(__FILE__, __LINE__, "check: %s", why);
}

/*
 * A random run's step @r on origin set @oset: false if it does not live in
 * @cset; else its blocks and its line, a new tag's for a write (SSDP_NONE
 * when none is left).
 */
static bool step_blocks(struct ssdp_fmap *fm, u32 r, u32 cset, u64 oset,
			bool write, u32 *first, u32 *nr, u32 *line)
{
	bool repl;

	if (ssdp_fmap_set_of(fm, oset) != cset)
		return false;
	*first = (r >> 8) % 16;
	*nr = 1 + (r >> 12) % (16 - *first);
	*line = ssdp_fmap_lookup(fm, oset);
	if (write && *line == SSDP_NONE)
		*line = ssdp_fmap_tag_alloc(fm, oset, &repl);
	return true;
}

/* A random run's step done: a commit of @cset or not, a check now and then. */
static void step_done(struct ssdp_fmap *fm, u32 cset, bool commit, u32 step)
{
	struct ssdp_rec_view v;

	if (commit) {
		ssdp_fmap_encode_set(fm, cset, &v);
		ssdp_fmap_commit_done(fm, cset);
	}
	if (step % 64 == 0)
		check_ok(fm);
}

/* The @n-th origin set (n >= 0) that lands in cache set @cset. */
static u64 oset_in(const struct ssdp_fmap *fm, u32 cset, u32 n)
{
	u64 o;

	for (o = 0;; o++)
		if (ssdp_fmap_set_of(fm, o) == cset && !n--)
			return o;
}

TEST(fmap_init_rejects_bad_geometry)
{
	struct ssdp_fmap fm;

	ASSERT_EQ(ssdp_fmap_init(&fm, 0, 512), -EINVAL);
	ASSERT_EQ(ssdp_fmap_init(&fm, 4, 0), -EINVAL);
	ASSERT_EQ(ssdp_fmap_init(&fm, 4, 3), -EINVAL);
	ASSERT_EQ(ssdp_fmap_init(&fm, 4, 2048), -EINVAL);
	ASSERT_EQ(ssdp_fmap_init(&fm, 1U << 28, 1), -EINVAL);
	ASSERT_EQ(ssdp_fmap_init(&fm, 1, 1), 0);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
	ASSERT_EQ(ssdp_fmap_init(&fm, 3, 1024), 0);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

TEST(fmap_memory_under_a_byte_per_block)
{
	struct ssdp_fmap fm;
	u32 sizes[] = { 100, 1000, 4096, 100000 };
	unsigned int i;

	struct ssdp_config def;

	/*
	 * 7 bits per frame (owner, valid, dirty, alt) and ~89 bytes per set:
	 * under a byte from 1024-frame sets (the default set size) on;
	 * 512-frame sets need 1.05 (docs/design.md).
	 */
	ssdp_config_defaults(&def);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		double per_block;

		ASSERT_EQ(ssdp_fmap_init(&fm, sizes[i], def.set_blocks), 0);
		per_block = (double)ssdp_fmap_mem_bytes(&fm) /
			    ((double)sizes[i] * def.set_blocks);
		printf("[%u sets: %.3f B/block] ", sizes[i], per_block);
		ASSERT_TRUE(per_block <= 1.0);
		ssdp_fmap_destroy(&fm);
		ASSERT_EQ(ssdp_fmap_init(&fm, sizes[i], 512), 0);
		per_block = (double)ssdp_fmap_mem_bytes(&fm) /
			    ((double)sizes[i] * 512);
		ASSERT_TRUE(per_block <= 1.06);
		ssdp_fmap_destroy(&fm);
	}
}

/* Where an origin set lives is on-disk meaning: pin it. */
TEST(fmap_placement_is_fixed_and_spread)
{
	u32 count[1000] = { 0 }, max = 0, i;
	u64 o;

	ASSERT_EQ(ssdp_oset_cset(0, 1000), 0);
	ASSERT_EQ(ssdp_oset_cset(1, 1000), 381);
	ASSERT_EQ(ssdp_oset_cset(2, 1000), 763);
	ASSERT_EQ(ssdp_oset_cset(3, 1000), 145);
	ASSERT_EQ(ssdp_oset_cset(1000, 1000), 966);
	ASSERT_EQ(ssdp_oset_cset(123456789, 1000), 256);
	ASSERT_EQ(ssdp_oset_cset(4294967294ULL, 1000), 738);
	for (o = 0; o < 8000; o++)
		count[ssdp_oset_cset(o, 1000)]++;
	for (i = 0; i < 1000; i++)
		max = count[i] > max ? count[i] : max;
	/* Neighbouring origin sets spread: no set gets 2x its share. */
	ASSERT_LE(max, 16);
}

TEST(fmap_tags_fill_then_evict_lru_clean_tag)
{
	struct ssdp_fmap fm;
	u32 lines[SSDP_FMAP_TAGS + 1], line, t;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 8, 16), 0);
	for (t = 0; t < SSDP_FMAP_TAGS; t++) {
		u64 o = oset_in(&fm, 3, t);

		ASSERT_EQ(ssdp_fmap_lookup(&fm, o), SSDP_NONE);
		lines[t] = ssdp_fmap_tag_alloc(&fm, o, &repl);
		ASSERT_NE(lines[t], SSDP_NONE);
		ASSERT_FALSE(repl);
		ASSERT_EQ(ssdp_line_cset(lines[t]), 3);
		ASSERT_EQ(ssdp_fmap_lookup(&fm, o), lines[t]);
		ASSERT_EQ(ssdp_fmap_oset_of(&fm, lines[t]), o);
	}
	ASSERT_EQ(fm.nr_tags_used, SSDP_FMAP_TAGS);
	ASSERT_EQ(fm.nr_mapped_sets, 1);
	/* Tag 0 holds a clean block; tag 1 a dirty one; 0 used last. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, lines[0], 0, 1, false, &repl), 1);
	ssdp_fmap_set_valid(&fm, lines[0], 0, 1);
	ASSERT_EQ(ssdp_fmap_claim(&fm, lines[1], 1, 1, false, &repl), 1);
	ssdp_fmap_set_valid(&fm, lines[1], 1, 1);
	ssdp_fmap_set_dirty(&fm, lines[1], 1, 1);
	for (t = 2; t < SSDP_FMAP_TAGS; t++)
		ssdp_fmap_touch(&fm, lines[t]);
	check_ok(&fm);
	/* LRU is tag 0 (clean: evictable), then 1 (dirty: not). */
	line = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 3, 20), &repl);
	ASSERT_EQ(line, lines[0]);
	ASSERT_TRUE(repl);
	ASSERT_EQ(fm.replaced, 1);
	ASSERT_EQ(ssdp_fmap_lookup(&fm, oset_in(&fm, 3, 0)), SSDP_NONE);
	ASSERT_EQ(ssdp_fmap_block(&fm, line, 0), SSDP_FMAP_MISS);
	check_ok(&fm);
	/* Next LRU: tag 1 is dirty, so tag 2 goes (empty: nothing replaced). */
	line = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 3, 21), &repl);
	ASSERT_EQ(line, lines[2]);
	ASSERT_FALSE(repl);
	/* User writes in flight: no tag is evicted. */
	ssdp_fmap_set_no_replace(&fm, 3, true);
	ASSERT_EQ(ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 3, 22), &repl),
		  SSDP_NONE);
	ssdp_fmap_set_no_replace(&fm, 3, false);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

TEST(fmap_claim_rules)
{
	struct ssdp_fmap fm;
	u32 a, b;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 4, 16), 0);
	ASSERT_EQ(ssdp_fmap_set_version(&fm, SSDP_FORMAT_V3), 0);
	a = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 1, 0), &repl);
	b = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 1, 1), &repl);
	ssdp_fmap_pin(&fm, 1);
	/*
	 * a fills every frame, home: 0..3 clean, 4 dirty, 5 claimed,
	 * 6..11 clean, 12 dirty (4's alt), 13 claimed (5's alt), 14, 15
	 * clean.
	 */
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 0, 16, false, &repl), 16);
	ASSERT_FALSE(repl);
	ASSERT_EQ(ssdp_fmap_frame(&fm, a, 9), 9);
	ssdp_fmap_set_valid(&fm, a, 0, 5);
	ssdp_fmap_set_valid(&fm, a, 6, 7);
	ssdp_fmap_set_valid(&fm, a, 14, 2);
	ssdp_fmap_set_dirty(&fm, a, 4, 1);
	ssdp_fmap_set_dirty(&fm, a, 12, 1);
	/* b takes a's clean blocks (home: a tie), stops at the dirty one. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 2, 8, false, &repl), 2);
	ASSERT_TRUE(repl);
	ASSERT_EQ(fm.replaced, 2);
	ASSERT_EQ(ssdp_fmap_frame(&fm, b, 2), 2);
	ASSERT_EQ(ssdp_fmap_block(&fm, a, 2), SSDP_FMAP_MISS);
	ASSERT_EQ(ssdp_fmap_block(&fm, a, 1), SSDP_FMAP_CLEAN);
	/* ... and at a's claims, in both frames. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 5, 1, false, &repl), 0);
	ASSERT_EQ(ssdp_fmap_unclaimable_run(&fm, b, 4, 12, false), 2);
	ASSERT_EQ(ssdp_fmap_unclaimable_run(&fm, b, 2, 12, false), 0);
	ASSERT_EQ(ssdp_fmap_unclaimable_run(&fm, b, 6, 10, true), 10);
	/* A lock-out is a dirty block in both candidates; a claim is not. */
	ASSERT_EQ(ssdp_fmap_foreign_dirty(&fm, b, 4, 1), 4);
	ASSERT_EQ(ssdp_fmap_foreign_dirty(&fm, b, 0, 16), 4);
	ASSERT_EQ(ssdp_fmap_foreign_dirty(&fm, b, 5, 1), SSDP_NONE);
	ASSERT_EQ(ssdp_fmap_foreign_dirty(&fm, b, 5, 11), 12);
	ASSERT_EQ(ssdp_fmap_foreign_dirty(&fm, a, 0, 16), SSDP_NONE);
	/* Own frames only (degraded). */
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 0, 2, true, &repl), 2);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 6, 2, true, &repl), 0);
	/* Writes in flight: b may not take a's clean blocks. */
	ssdp_fmap_set_no_replace(&fm, 1, true);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 6, 1, false, &repl), 0);
	ssdp_fmap_set_no_replace(&fm, 1, false);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 6, 1, false, &repl), 1);
	ASSERT_TRUE(repl);
	check_ok(&fm);
	ssdp_fmap_unpin(&fm, 1);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

/*
 * The second candidate frame, format 3: block b may sit in frame b ^ S/2
 * (format 4 in the test below).  A free
 * candidate first, home before alt; else the clean block of the tag used
 * longer ago; runs stay contiguous on the SSD.
 */
TEST(fmap_second_frame_placement)
{
	struct ssdp_fmap fm;
	struct ssdp_rec_view v;
	enum ssdp_fmap_hit hit;
	u32 a, b, c, f;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 1, 16), 0);
	ASSERT_EQ(ssdp_fmap_set_version(&fm, SSDP_FORMAT_V3), 0);
	a = ssdp_fmap_tag_alloc(&fm, 0, &repl);
	b = ssdp_fmap_tag_alloc(&fm, 1, &repl);
	c = ssdp_fmap_tag_alloc(&fm, 2, &repl);
	ssdp_fmap_pin(&fm, 0);
	/* a: blocks 0..3 dirty, home. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 0, 4, false, &repl), 4);
	ssdp_fmap_set_valid(&fm, a, 0, 4);
	ssdp_fmap_set_dirty(&fm, a, 0, 4);
	/* b's blocks 1..5: homes 1..3 are dirty, so all go alt, 9..13. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 1, 5, false, &repl), 5);
	ASSERT_FALSE(repl);
	ASSERT_EQ(ssdp_fmap_frame(&fm, b, 1), 9);
	ASSERT_EQ(ssdp_fmap_frame_run(&fm, b, 1, 5, &f), 5);
	ASSERT_EQ(f, 9);
	ssdp_fmap_set_valid(&fm, b, 1, 5);
	ASSERT_EQ(ssdp_fmap_hit_run(&fm, b, 1, 5, &hit), 5);
	ASSERT_EQ(hit, SSDP_FMAP_CLEAN);
	/* An alt run stops at S/2: block 7's alt is 15, block 8's is 0. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 6, 2, false, &repl), 2);
	ssdp_fmap_set_valid(&fm, a, 6, 2);
	ssdp_fmap_set_dirty(&fm, a, 6, 2);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 6, 3, false, &repl), 2);
	ASSERT_EQ(ssdp_fmap_frame(&fm, b, 7), 15);
	ssdp_fmap_set_valid(&fm, b, 6, 2);
	ASSERT_EQ(ssdp_fmap_hit_run(&fm, b, 4, 4, &hit), 4);
	/* A run that changes frames is two runs: block 8 home, 7 alt. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 8, 1, false, &repl), 1);
	ASSERT_EQ(ssdp_fmap_frame(&fm, b, 8), 8);
	ssdp_fmap_set_valid(&fm, b, 8, 1);
	ASSERT_EQ(ssdp_fmap_hit_run(&fm, b, 6, 3, &hit), 2);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 7, 2, false, &repl), 1);
	/* Every frame of block 2 (home dirty, alt b's): c replaces b's. */
	ssdp_fmap_touch(&fm, b);
	ASSERT_EQ(ssdp_fmap_claim(&fm, c, 2, 1, false, &repl), 1);
	ASSERT_TRUE(repl);
	ASSERT_EQ(ssdp_fmap_frame(&fm, c, 2), 10);
	ASSERT_EQ(ssdp_fmap_block(&fm, b, 2), SSDP_FMAP_MISS);
	/* Both candidates clean: the tag used longer ago loses its block. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, c, 4, 1, false, &repl), 1);
	ASSERT_EQ(ssdp_fmap_frame(&fm, c, 4), 4);	/* home was free */
	ssdp_fmap_set_valid(&fm, c, 4, 1);
	ssdp_fmap_touch(&fm, c);			/* b older than c */
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 12, 1, false, &repl), 1);
	ASSERT_TRUE(repl);
	ASSERT_EQ(ssdp_fmap_frame(&fm, a, 12), 12);	/* b's block 4 went */
	ASSERT_EQ(ssdp_fmap_block(&fm, b, 4), SSDP_FMAP_MISS);
	ASSERT_EQ(ssdp_fmap_block(&fm, c, 4), SSDP_FMAP_CLEAN);
	ssdp_fmap_unpin(&fm, 0);
	check_ok(&fm);
	/* The alt bits go to the record and come back. */
	ssdp_fmap_encode_set(&fm, 0, &v);
	ASSERT_TRUE(ssdp_rec_alt(&v, 9));
	ASSERT_FALSE(ssdp_rec_alt(&v, 6));
	ASSERT_EQ(ssdp_rec_block(&v, 16, SSDP_FORMAT_V3, 9), 1);
	{
		struct ssdp_fmap back;
		u32 blk;

		ASSERT_EQ(ssdp_fmap_init(&back, 1, 16), 0);
		ASSERT_EQ(ssdp_fmap_set_version(&back, SSDP_FORMAT_V3), 0);
		ASSERT_EQ(ssdp_fmap_load_set(&back, 0, &v, true), 0);
		check_ok(&back);
		for (blk = 0; blk < 16; blk++) {
			ASSERT_EQ(ssdp_fmap_block(&back, b, blk),
				  ssdp_fmap_block(&fm, b, blk));
			ASSERT_EQ(ssdp_fmap_frame(&back, b, blk),
				  ssdp_fmap_block(&fm, b, blk) ==
				  SSDP_FMAP_MISS ? SSDP_NONE :
				  ssdp_fmap_frame(&fm, b, blk));
		}
		ssdp_fmap_destroy(&back);
	}
	ssdp_fmap_destroy(&fm);
}

/* An origin set of cache set @cset whose alt xor in 16-frame sets is @x. */
static u64 oset_with_xor(const struct ssdp_fmap *fm, u32 cset, u32 x,
			 u32 skip)
{
	u64 o;

	for (o = 0;; o++)
		if (ssdp_fmap_set_of(fm, o) == cset &&
		    ssdp_alt_xor(o, 16, SSDP_FORMAT_VERSION) == x && !skip--)
			return o;
}

/*
 * Format 4: each tag pairs its blocks with the alt frame of its own xor,
 * so tags of one set whose home frames are taken fall to different
 * frames; the frame of a dirty block names its block by its owner's xor,
 * and a record is refused only for one tag's block in both of that tag's
 * frames.
 */
TEST(fmap_skewed_alt_frame_per_tag)
{
	struct ssdp_fmap fm, back;
	struct ssdp_rec_view v;
	u32 a, b, c, line, blk, f;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 2, 16), 0);
	ASSERT_EQ(fm.version, SSDP_FORMAT_VERSION);
	a = ssdp_fmap_tag_alloc(&fm, oset_with_xor(&fm, 1, 4, 0), &repl);
	b = ssdp_fmap_tag_alloc(&fm, oset_with_xor(&fm, 1, 8, 0), &repl);
	c = ssdp_fmap_tag_alloc(&fm, oset_with_xor(&fm, 1, 12, 0), &repl);
	ssdp_fmap_pin(&fm, 1);
	/* a: blocks 0..3 dirty, home. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 0, 4, false, &repl), 4);
	ssdp_fmap_set_valid(&fm, a, 0, 4);
	ssdp_fmap_set_dirty(&fm, a, 0, 4);
	/* b's and c's blocks 0..3 go alt, to 8..11 and 12..15. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 0, 4, false, &repl), 4);
	ASSERT_EQ(ssdp_fmap_frame_run(&fm, b, 0, 4, &f), 4);
	ASSERT_EQ(f, 8);
	ASSERT_EQ(ssdp_fmap_claim(&fm, c, 0, 4, false, &repl), 4);
	ASSERT_EQ(ssdp_fmap_frame_run(&fm, c, 0, 4, &f), 4);
	ASSERT_EQ(f, 12);
	ssdp_fmap_set_valid(&fm, b, 0, 4);
	ssdp_fmap_set_dirty(&fm, b, 0, 4);
	ssdp_fmap_set_valid(&fm, c, 0, 4);
	/* The frame of a dirty block names its block by its owner's xor. */
	ASSERT_EQ(ssdp_fmap_frame_dirty(&fm, 1, 9, &line, &blk), true);
	ASSERT_EQ(line, b);
	ASSERT_EQ(blk, 1);
	/* a's block 8: home is b's dirty 0, alt (12) c's clean: taken. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 8, 1, false, &repl), 1);
	ASSERT_TRUE(repl);
	ASSERT_EQ(ssdp_fmap_frame(&fm, a, 8), 12);
	ASSERT_EQ(ssdp_fmap_block(&fm, c, 0), SSDP_FMAP_MISS);
	ssdp_fmap_set_valid(&fm, a, 8, 1);
	ssdp_fmap_set_dirty(&fm, a, 8, 1);
	/* a's block 9: home b's dirty 1, alt (13) c's clean 1. */
	ASSERT_EQ(ssdp_fmap_foreign_dirty(&fm, a, 9, 1), SSDP_NONE);
	/* c's block 0 now: home a's dirty, alt (12) a's dirty: a lock-out. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, c, 0, 1, false, &repl), 0);
	ASSERT_EQ(ssdp_fmap_foreign_dirty(&fm, c, 0, 1), 0);
	ASSERT_EQ(ssdp_fmap_frame_dirty(&fm, 1, 12, &line, &blk), true);
	ASSERT_EQ(line, a);
	ASSERT_EQ(blk, 8);
	ssdp_fmap_unpin(&fm, 1);
	check_ok(&fm);
	/* The record comes back as it went, by each owner's xor. */
	ssdp_fmap_encode_set(&fm, 1, &v);
	ASSERT_EQ(ssdp_rec_block(&v, 16, SSDP_FORMAT_VERSION, 12), 8);
	ASSERT_EQ(ssdp_rec_block(&v, 16, SSDP_FORMAT_VERSION, 9), 1);
	ASSERT_EQ(ssdp_fmap_init(&back, 2, 16), 0);
	ASSERT_EQ(ssdp_fmap_load_set(&back, 1, &v, true), 0);
	check_ok(&back);
	for (blk = 0; blk < 16; blk++) {
		ASSERT_EQ(ssdp_fmap_block(&back, a, blk),
			  ssdp_fmap_block(&fm, a, blk));
		ASSERT_EQ(ssdp_fmap_block(&back, b, blk),
			  ssdp_fmap_block(&fm, b, blk));
		ASSERT_EQ(ssdp_fmap_frame(&back, b, blk),
			  ssdp_fmap_frame(&fm, b, blk));
		ASSERT_EQ(ssdp_fmap_frame(&back, a, blk),
			  ssdp_fmap_frame(&fm, a, blk));
	}
	ssdp_fmap_destroy(&back);
	/*
	 * Read as format 3, the same record says something else: a's alt
	 * frame 12 holds block 12 ^ S/2 = 4, not 8.  The superblock's
	 * version decides what a record means.
	 */
	ASSERT_EQ(ssdp_fmap_init(&back, 2, 16), 0);
	ASSERT_EQ(ssdp_fmap_set_version(&back, SSDP_FORMAT_V3), 0);
	ASSERT_EQ(ssdp_fmap_load_set(&back, 1, &v, true), 0);
	ASSERT_EQ(ssdp_fmap_frame(&back, a, 4), 12);
	ASSERT_EQ(ssdp_fmap_block(&back, a, 8), SSDP_FMAP_MISS);
	ssdp_fmap_destroy(&back);
	/* a's block 1 in frame 1 and, alt, in frame 1 ^ 4: refused. */
	v.owners[5 / 2] = (v.owners[5 / 2] & 0x0f) | ssdp_line_tag(a) << 4;
	v.alt[0] |= 1 << 5;
	ASSERT_EQ(ssdp_fmap_init(&back, 2, 16), 0);
	ASSERT_EQ(ssdp_fmap_load_set(&back, 1, &v, true), -EUCLEAN);
	ssdp_fmap_destroy(&back);
	ssdp_fmap_destroy(&fm);
}

/* A tag holds a block in one frame at most, limbo included. */
TEST(fmap_second_frame_never_two_copies)
{
	struct ssdp_fmap fm, back;
	struct ssdp_rec_view v;
	u32 a, line, blk;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 1, 8), 0);
	ASSERT_EQ(ssdp_fmap_set_version(&fm, SSDP_FORMAT_V3), 0);
	a = ssdp_fmap_tag_alloc(&fm, 0, &repl);
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 1, 1, false, &repl), 1);
	ssdp_fmap_set_valid(&fm, a, 1, 1);
	ssdp_fmap_set_dirty(&fm, a, 1, 1);
	ssdp_fmap_encode_set(&fm, 0, &v);
	ssdp_fmap_commit_done(&fm, 0);
	/* Discarded: limbo in frame 1.  Its alt (5) is free, yet no claim. */
	ssdp_fmap_drop(&fm, a, 1, 1);
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 1, 1, false, &repl), 0);
	ASSERT_EQ(ssdp_fmap_unclaimable_run(&fm, a, 1, 1, false), 1);
	ASSERT_EQ(ssdp_fmap_frame(&fm, a, 1), 1);
	ssdp_fmap_encode_set(&fm, 0, &v);
	ssdp_fmap_commit_done(&fm, 0);
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 1, 1, false, &repl), 1);
	ssdp_fmap_set_valid(&fm, a, 1, 1);
	check_ok(&fm);
	/* The frame of a dirty block names its line and block. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 2, 1, false, &repl), 1);
	ssdp_fmap_set_valid(&fm, a, 2, 1);
	ssdp_fmap_set_dirty(&fm, a, 2, 1);
	ASSERT_TRUE(ssdp_fmap_frame_dirty(&fm, 0, 2, &line, &blk));
	ASSERT_EQ(line, a);
	ASSERT_EQ(blk, 2);
	ASSERT_FALSE(ssdp_fmap_frame_dirty(&fm, 0, 1, &line, &blk));
	/* A record with one block in both frames is refused. */
	ssdp_fmap_encode_set(&fm, 0, &v);
	v.owners[5 / 2] &= ~(0xf << 4);		/* frame 5: a, alt: block 1 */
	v.owners[5 / 2] |= ssdp_line_tag(a) << 4;
	v.alt[0] |= 1 << 5;
	ASSERT_EQ(ssdp_fmap_init(&back, 1, 8), 0);
	ASSERT_EQ(ssdp_fmap_set_version(&back, SSDP_FORMAT_V3), 0);
	ASSERT_EQ(ssdp_fmap_load_set(&back, 0, &v, true), -EUCLEAN);
	/* Alt in a set of one frame, or on a free frame: refused too. */
	v.alt[0] &= ~(1 << 5);
	v.owners[5 / 2] |= 0xf << 4;
	v.alt[0] |= 1 << 6;			/* frame 6 is free */
	ASSERT_EQ(ssdp_fmap_load_set(&back, 0, &v, true), -EUCLEAN);
	v.alt[0] &= ~(1 << 6);
	ASSERT_EQ(ssdp_fmap_load_set(&back, 0, &v, true), 0);
	ssdp_fmap_destroy(&back);
	ssdp_fmap_destroy(&fm);
}

/*
 * Two tags of cache set 0 of 2 sets of 8 blocks: a holds all 8 blocks,
 * valid and clean, b none; the set is left pinned.
 */
static void two_tags_a_full(struct ssdp_fmap *fm, u32 *a, u32 *b)
{
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(fm, 2, 8), 0);
	*a = ssdp_fmap_tag_alloc(fm, oset_in(fm, 0, 0), &repl);
	*b = ssdp_fmap_tag_alloc(fm, oset_in(fm, 0, 1), &repl);
	ssdp_fmap_pin(fm, 0);
	ASSERT_EQ(ssdp_fmap_claim(fm, *a, 0, 8, false, &repl), 8);
	ssdp_fmap_set_valid(fm, *a, 0, 8);
}

TEST(fmap_drop_clean_pinned_stays_claimed_until_unpin)
{
	struct ssdp_fmap fm;
	u32 a, b;
	bool repl;

	two_tags_a_full(&fm, &a, &b);
	ssdp_fmap_set_dirty(&fm, a, 5, 1);	/* block 1's other frame */
	ssdp_fmap_drop(&fm, a, 1, 1);
	ASSERT_EQ(ssdp_fmap_block(&fm, a, 1), SSDP_FMAP_MISS);
	/* A reader of a's block may be in flight: b cannot land there. */
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 1, 1, false, &repl), 0);
	ssdp_fmap_unpin(&fm, 0);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 1, 1, false, &repl), 1);
	ASSERT_FALSE(repl);
	/* Unpinned: a dropped clean block is free at once. */
	ssdp_fmap_drop(&fm, a, 2, 1);
	ssdp_fmap_pin(&fm, 0);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 2, 1, false, &repl), 1);
	ASSERT_FALSE(repl);
	ssdp_fmap_unpin(&fm, 0);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

TEST(fmap_overwritten_clean_block_is_a_claim_until_the_write_completes)
{
	struct ssdp_fmap fm;
	u32 a, b;
	bool repl;

	two_tags_a_full(&fm, &a, &b);
	ssdp_fmap_unpin(&fm, 0);
	/* A whole-block write to a's blocks 0 and 1, in flight. */
	ssdp_fmap_pin(&fm, 0);
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 0, 2, false, &repl), 2);
	ASSERT_FALSE(repl);
	ASSERT_TRUE(ssdp_fmap_any_held(&fm, a, 0, 2));
	/* Valid blocks no write is writing: no claim among them yet. */
	ASSERT_FALSE(ssdp_fmap_any_claimed(&fm, a, 0, 4));
	ssdp_fmap_overwrite(&fm, a, 0, 2);
	/* A second write of block 1 meets the first one's claim. */
	ASSERT_TRUE(ssdp_fmap_any_claimed(&fm, a, 1, 2));
	ASSERT_FALSE(ssdp_fmap_any_claimed(&fm, a, 2, 2));
	ASSERT_EQ(ssdp_fmap_block(&fm, a, 0), SSDP_FMAP_MISS);
	ASSERT_EQ(ssdp_fmap_block(&fm, a, 2), SSDP_FMAP_CLEAN);
	ASSERT_EQ(fm.total_valid, 6);
	/*
	 * b may take a's other clean frames meanwhile, never those two: its
	 * blocks 0 and 1 go to their second frames, a's clean 4 and 5.
	 */
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 0, 2, false, &repl), 2);
	ASSERT_TRUE(repl);
	ASSERT_EQ(ssdp_fmap_frame(&fm, b, 0), 4);
	ASSERT_EQ(ssdp_fmap_frame(&fm, a, 0), 0);
	ASSERT_EQ(ssdp_fmap_frame(&fm, a, 4), SSDP_NONE);
	ssdp_fmap_set_valid(&fm, a, 0, 2);
	ssdp_fmap_set_dirty(&fm, a, 0, 2);
	ASSERT_EQ(ssdp_fmap_block(&fm, a, 1), SSDP_FMAP_DIRTY);
	ssdp_fmap_unpin(&fm, 0);
	/* b's claim was never written: swept with the last pin. */
	ASSERT_FALSE(ssdp_fmap_any_held(&fm, b, 0, 8));
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

TEST(fmap_dropped_dirty_block_waits_in_limbo_for_its_commit)
{
	struct ssdp_fmap fm;
	struct ssdp_rec_view v;
	u32 a, b;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 2, 8), 0);
	a = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 1, 0), &repl);
	b = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 1, 1), &repl);
	ssdp_fmap_pin(&fm, 1);
	ssdp_fmap_claim(&fm, a, 0, 2, false, &repl);
	ssdp_fmap_set_valid(&fm, a, 0, 2);
	ssdp_fmap_set_dirty(&fm, a, 0, 2);
	/* Block 0's other frame, 4, dirty too. */
	ssdp_fmap_claim(&fm, a, 4, 1, false, &repl);
	ssdp_fmap_set_valid(&fm, a, 4, 1);
	ssdp_fmap_set_dirty(&fm, a, 4, 1);
	ssdp_fmap_unpin(&fm, 1);
	ssdp_fmap_encode_set(&fm, 1, &v);
	ssdp_fmap_commit_done(&fm, 1);

	ssdp_fmap_drop(&fm, a, 0, 1);
	ASSERT_EQ(fm.total_limbo, 1);
	ASSERT_EQ(fm.nr_limbo_sets, 1);
	ASSERT_EQ(ssdp_fmap_room(&fm), 16 - 3);
	ASSERT_EQ(ssdp_fmap_next_changed(&fm, 0), 1);
	/* Nobody, not even a, reuses it before a commit says it is free. */
	ssdp_fmap_pin(&fm, 1);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 0, 1, false, &repl), 0);
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 0, 1, false, &repl), 0);
	ssdp_fmap_unpin(&fm, 1);
	/* A tag with a limbo frame is not evicted. */
	ssdp_fmap_encode_set(&fm, 1, &v);
	ASSERT_EQ(ssdp_rec_owner(&v, 0), SSDP_FMAP_FREE);
	ASSERT_EQ(ssdp_rec_owner(&v, 1), ssdp_line_tag(a));
	ASSERT_TRUE(ssdp_rec_dirty(&v, 1));
	/* Another drop after that encode: it waits for the next commit. */
	ssdp_fmap_drop(&fm, a, 1, 1);
	ssdp_fmap_commit_done(&fm, 1);
	ASSERT_EQ(fm.total_limbo, 2);
	ssdp_fmap_encode_set(&fm, 1, &v);
	ssdp_fmap_commit_done(&fm, 1);
	ASSERT_EQ(fm.total_limbo, 0);
	ASSERT_EQ(fm.nr_limbo_sets, 0);
	ssdp_fmap_pin(&fm, 1);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 0, 2, false, &repl), 2);
	ssdp_fmap_unpin(&fm, 1);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

/* A reader of a dirty block may be in flight when its limbo ends. */
TEST(fmap_limbo_ends_as_a_claim_in_a_pinned_set)
{
	struct ssdp_fmap fm;
	struct ssdp_rec_view v;
	u32 a, b;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 1, 4), 0);
	a = ssdp_fmap_tag_alloc(&fm, 0, &repl);
	b = ssdp_fmap_tag_alloc(&fm, 1, &repl);
	ssdp_fmap_pin(&fm, 0);
	ssdp_fmap_claim(&fm, a, 0, 1, false, &repl);
	ssdp_fmap_set_valid(&fm, a, 0, 1);
	ssdp_fmap_set_dirty(&fm, a, 0, 1);
	/* Frame 2, block 0's other candidate, holds a dirty block too. */
	ssdp_fmap_claim(&fm, a, 2, 1, false, &repl);
	ssdp_fmap_set_valid(&fm, a, 2, 1);
	ssdp_fmap_set_dirty(&fm, a, 2, 1);
	ssdp_fmap_drop(&fm, a, 0, 1);
	ssdp_fmap_encode_set(&fm, 0, &v);
	ssdp_fmap_commit_done(&fm, 0);
	ASSERT_EQ(fm.total_limbo, 0);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 0, 1, false, &repl), 0);
	ssdp_fmap_unpin(&fm, 0);
	ssdp_fmap_pin(&fm, 0);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 0, 1, false, &repl), 1);
	ssdp_fmap_unpin(&fm, 0);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

TEST(fmap_failed_commit_keeps_limbo)
{
	struct ssdp_fmap fm;
	struct ssdp_rec_view v;
	u32 a;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 1, 4), 0);
	a = ssdp_fmap_tag_alloc(&fm, 0, &repl);
	ssdp_fmap_pin(&fm, 0);
	ssdp_fmap_claim(&fm, a, 0, 1, false, &repl);
	ssdp_fmap_set_valid(&fm, a, 0, 1);
	ssdp_fmap_set_dirty(&fm, a, 0, 1);
	ssdp_fmap_unpin(&fm, 0);
	ssdp_fmap_drop(&fm, a, 0, 1);
	ssdp_fmap_encode_set(&fm, 0, &v);
	ssdp_fmap_commit_failed(&fm, 0);
	ASSERT_EQ(ssdp_fmap_next_changed(&fm, 0), 0);
	ssdp_fmap_commit_done(&fm, 0);
	ASSERT_EQ(fm.total_limbo, 1);
	ssdp_fmap_encode_set(&fm, 0, &v);
	ssdp_fmap_commit_done(&fm, 0);
	ASSERT_EQ(fm.total_limbo, 0);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

/*
 * Limbo made while a commit is out (both flags set), then that commit
 * fails, or a second encode comes before its end: every limbo frame is
 * freed by the next good commit, none is forgotten.
 */
TEST(fmap_limbo_both_flags_freed_after_failed_or_second_encode)
{
	struct ssdp_fmap fm;
	struct ssdp_rec_view v;
	int second;
	u32 a;
	bool repl;

	for (second = 0; second < 2; second++) {
		ASSERT_EQ(ssdp_fmap_init(&fm, 1, 4), 0);
		a = ssdp_fmap_tag_alloc(&fm, 7, &repl);
		ssdp_fmap_pin(&fm, 0);
		ssdp_fmap_claim(&fm, a, 0, 2, false, &repl);
		ssdp_fmap_set_valid(&fm, a, 0, 2);
		ssdp_fmap_set_dirty(&fm, a, 0, 2);
		ssdp_fmap_unpin(&fm, 0);
		ssdp_fmap_drop(&fm, a, 0, 1);
		ssdp_fmap_encode_set(&fm, 0, &v);
		ssdp_fmap_drop(&fm, a, 1, 1);	/* while the commit is out */
		if (second)
			ssdp_fmap_encode_set(&fm, 0, &v);
		else
			ssdp_fmap_commit_failed(&fm, 0);
		ASSERT_EQ(fm.total_limbo, 2);
		ssdp_fmap_encode_set(&fm, 0, &v);
		ssdp_fmap_commit_done(&fm, 0);
		ASSERT_EQ(fm.total_limbo, 0);
		ASSERT_EQ(ssdp_fmap_claimable(&fm, a, 0, 1, false), 1);
		check_ok(&fm);
		ssdp_fmap_destroy(&fm);
	}
}

/* Fill set 0 of @fm: tag a clean 0..3, dirty 4..5; tag b clean 8. */
static void fill_two_tags(struct ssdp_fmap *fm, u32 *a, u32 *b)
{
	bool repl;

	*a = ssdp_fmap_tag_alloc(fm, oset_in(fm, 0, 0), &repl);
	*b = ssdp_fmap_tag_alloc(fm, oset_in(fm, 0, 1), &repl);
	ssdp_fmap_pin(fm, 0);
	ssdp_fmap_claim(fm, *a, 0, 6, false, &repl);
	ssdp_fmap_set_valid(fm, *a, 0, 6);
	ssdp_fmap_set_dirty(fm, *a, 4, 2);
	ssdp_fmap_claim(fm, *b, 8, 1, false, &repl);
	ssdp_fmap_set_valid(fm, *b, 8, 1);
	ssdp_fmap_unpin(fm, 0);
}

TEST(fmap_record_roundtrip_clean_and_crash_loads)
{
	struct ssdp_fmap fm, back;
	struct ssdp_rec_view v, w, scratch;
	u32 a, b, rb = ssdp_rec_bytes(16);
	u8 rec[128], rec1[128];

	ASSERT_EQ(rb, 128);
	ASSERT_EQ(ssdp_fmap_init(&fm, 3, 16), 0);
	fill_two_tags(&fm, &a, &b);
	ASSERT_EQ(ssdp_fmap_next_changed(&fm, 0), 0);
	ssdp_fmap_encode_set(&fm, 0, &v);
	ASSERT_EQ(ssdp_fmap_next_changed(&fm, 0), SSDP_NONE);
	v.seq = 7;
	ssdp_rec_encode(rec, rb, 0x1234, 0, 16, &v);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, 0x1234, 0, 16, 3, SSDP_FORMAT_VERSION, &w), 0);
	ASSERT_EQ(w.seq, 7);
	ASSERT_EQ(memcmp(w.tags, v.tags, sizeof(v.tags)), 0);
	ASSERT_EQ(memcmp(w.owners, v.owners, 8), 0);
	ASSERT_EQ(memcmp(w.dirty, v.dirty, 2), 0);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, 0x1235, 0, 16, 3, SSDP_FORMAT_VERSION, &w), -EBADMSG);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, 0x1234, 1, 16, 3, SSDP_FORMAT_VERSION, &w), -EUCLEAN);
	/* The other copy is older: pick the newer, or the one that checks. */
	v.seq = 6;
	ssdp_rec_encode(rec1, rb, 0x1234, 0, 16, &v);
	ASSERT_EQ(ssdp_rec_pick(rec1, rec, rb, 0x1234, 0, 16, 3, SSDP_FORMAT_VERSION, &w,
				 &scratch, NULL), 1);
	ASSERT_EQ(w.seq, 7);
	rec[40] ^= 1;
	ASSERT_EQ(ssdp_rec_pick(rec1, rec, rb, 0x1234, 0, 16, 3, SSDP_FORMAT_VERSION, &w,
				 &scratch, NULL), 0);
	ASSERT_EQ(w.seq, 6);

	/* After a clean shutdown everything comes back. */
	ASSERT_EQ(ssdp_fmap_init(&back, 3, 16), 0);
	ASSERT_EQ(ssdp_fmap_load_set(&back, 0, &v, true), 0);
	ASSERT_EQ(back.total_valid, 7);
	ASSERT_EQ(back.total_dirty, 2);
	ASSERT_EQ(ssdp_fmap_lookup(&back, oset_in(&fm, 0, 1)), b);
	ASSERT_EQ(ssdp_fmap_next_changed(&back, 0), SSDP_NONE);
	check_ok(&back);
	ssdp_fmap_destroy(&back);
	/* After a crash only dirty blocks: b had none and its tag goes. */
	ASSERT_EQ(ssdp_fmap_init(&back, 3, 16), 0);
	ASSERT_EQ(ssdp_fmap_load_set(&back, 0, &v, false), 0);
	ASSERT_EQ(back.total_valid, 2);
	ASSERT_EQ(ssdp_fmap_block(&back, a, 4), SSDP_FMAP_DIRTY);
	ASSERT_EQ(ssdp_fmap_block(&back, a, 0), SSDP_FMAP_MISS);
	ASSERT_EQ(ssdp_fmap_lookup(&back, oset_in(&fm, 0, 1)), SSDP_NONE);
	/* The record still names the dropped blocks: it must be rewritten. */
	ASSERT_EQ(ssdp_fmap_next_changed(&back, 0), 0);
	check_ok(&back);
	ssdp_fmap_destroy(&back);
	ssdp_fmap_destroy(&fm);
}

TEST(fmap_records_that_contradict_themselves_are_refused)
{
	struct ssdp_fmap fm;
	struct ssdp_rec_view v, bad, w;
	u32 a, b, rb = ssdp_rec_bytes(16);
	u8 rec[128];

	ASSERT_EQ(ssdp_fmap_init(&fm, 3, 16), 0);
	fill_two_tags(&fm, &a, &b);
	ssdp_fmap_encode_set(&fm, 0, &v);
	v.seq = 1;

	bad = v;			/* a tag placed in another set */
	bad.tags[5] = (u32)oset_in(&fm, 1, 0);
	ssdp_rec_encode(rec, rb, 1, 0, 16, &bad);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, 1, 0, 16, 3, SSDP_FORMAT_VERSION, &w), -EUCLEAN);
	bad = v;			/* one origin set twice */
	bad.tags[ssdp_line_tag(b)] = bad.tags[ssdp_line_tag(a)];
	ssdp_rec_encode(rec, rb, 1, 0, 16, &bad);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, 1, 0, 16, 3, SSDP_FORMAT_VERSION, &w), -EUCLEAN);
	bad = v;			/* a frame owned by a free tag */
	bad.owners[7] = 0x9f;
	ssdp_rec_encode(rec, rb, 1, 0, 16, &bad);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, 1, 0, 16, 3, SSDP_FORMAT_VERSION, &w), -EUCLEAN);
	bad = v;			/* dirty on a free frame */
	bad.dirty[1] |= 0x80;
	ssdp_rec_encode(rec, rb, 1, 0, 16, &bad);
	ASSERT_EQ(ssdp_rec_decode(rec, rb, 1, 0, 16, 3, SSDP_FORMAT_VERSION, &w), -EUCLEAN);

	/* The frame map refuses them too, leaving the set empty. */
	{
		struct ssdp_fmap e;

		ASSERT_EQ(ssdp_fmap_init(&e, 3, 16), 0);
		ASSERT_EQ(ssdp_fmap_load_set(&e, 0, &bad, true), -EUCLEAN);
		bad = v;
		bad.tags[5] = (u32)oset_in(&fm, 1, 0);
		ASSERT_EQ(ssdp_fmap_load_set(&e, 0, &bad, true), -EUCLEAN);
		ASSERT_EQ(e.total_valid, 0);
		ASSERT_EQ(e.nr_tags_used, 0);
		check_ok(&e);
		ssdp_fmap_destroy(&e);
	}
	EXPECT_WARNS(ssdp_fmap_load_set(&fm, 0, &v, true));
	ssdp_fmap_destroy(&fm);
}

/*
 * A random model: writes, reads with I/O in flight, discards, writeback
 * (with I/O beside it until its commit) and commits (I/O going on while
 * their writes are in flight), against a reference that knows which data
 * ("stamps") each origin block may hold.  A write's data may land on the
 * SSD as soon as it is issued (the worst case for the records).  The
 * checks are the ones a user would notice:
 *  - a read hit returns data of that block, no older than the newest
 *    write when it was issued;
 *  - after a power cut, every block the records bring back holds data of
 *    that block no older than what was acknowledged at the last commit.
 */
#define M_CSETS		2
#define M_BLOCKS	4
#define M_OSETS		40	/* over the tags of two sets */
#define M_HOT		5	/* most I/O goes to a few origin sets */
#define M_INFLIGHT	6
#define M_STEPS		200000
/* Which clauses of the engine's overlap rule the model applies. */
#define M_OVERLAP_CLAIMED	1
#define M_OVERLAP_GUARDED	2
#define M_OVERLAP_RULE		(M_OVERLAP_CLAIMED | M_OVERLAP_GUARDED)

struct m_io {
	bool busy, write, dirty;
	u32 line, blk, frame;	/* frame: where the block was at issue */
	u64 oset, stamp;
	u64 replaced;		/* fm.replaced when a read was issued */
};

struct model {
	struct ssdp_fmap fm;
	u64 acked[M_OSETS][M_BLOCKS];	/* newest completed write/discard */
	u64 durable[M_OSETS][M_BLOCKS];	/* acked as of the last commit */
	u64 frame[M_CSETS][M_BLOCKS];	/* the stamp each SSD frame holds */
	u32 stamp_oset[M_STEPS + 1];
	u8 stamp_blk[M_STEPS + 1];
	struct ssdp_rec_view rec[M_CSETS];	/* last durable records */
	u32 writers[M_CSETS];
	u32 busy[M_CSETS];		/* reads in flight (no_replace) */
	bool overlap[M_CSETS];		/* writes overlapped (no_replace) */
	bool wb_open[M_CSETS];		/* cleaned, its commit not yet done */
	bool keep_clean[M_CSETS];	/* wb_open under the engine's rule */
	struct ssdp_rec_view commit_rec[M_CSETS];	/* being written */
	u64 commit_floor[M_OSETS][M_BLOCKS];	/* acked when it began */
	u32 commit_sets;			/* encoded by it */
	bool commit_open;			/* its writes in flight */
	struct m_io io[M_INFLIGHT];
	u64 next_stamp;
	u64 violations;		/* data a user would call wrong */
	u32 overlap_rule;	/* M_OVERLAP_* */
	u32 wb_mode;		/* M_WB_* */
};

/* How the model's writeback turns blocks clean. */
enum {
	M_WB_NO_COMMIT,		/* the bug: clean, no commit before reuse */
	M_WB_ATOMIC,		/* clean and commit in one step */
	M_WB_WINDOW,		/* the engine: I/O goes on until the commit */
	M_WB_WINDOW_OPEN,	/* the bug: the window, frames not kept */
};

static void m_no_replace(struct model *m, u32 c)
{
	ssdp_fmap_set_no_replace(&m->fm, c, m->busy[c] || m->overlap[c] ||
				 m->keep_clean[c]);
}

/* An origin set, hot ones mostly, so that I/O races on one block. */
static u64 m_oset(u32 r)
{
	return r % 4 ? (r >> 2) % M_HOT : (r >> 2) % M_OSETS;
}

static u64 m_stamp(struct model *m, u64 oset, u32 blk)
{
	u64 s = ++m->next_stamp;

	m->stamp_oset[s] = oset;
	m->stamp_blk[s] = blk;
	return s;
}

/* Frame data must be of block (@oset, @blk), no older than @floor. */
static void m_check_data(struct model *m, u64 s, u64 oset, u32 blk,
			 u64 floor)
{
	if (!s || m->stamp_oset[s] != oset || m->stamp_blk[s] != blk ||
	    s < floor)
		m->violations++;
}

static void m_complete(struct model *m, struct m_io *io)
{
	u32 c = ssdp_line_cset(io->line);

	if (io->write &&
	    (!ssdp_fmap_all_claimed(&m->fm, io->line, io->blk, 1) ||
	     ssdp_fmap_frame(&m->fm, io->line, io->blk) != io->frame)) {
		/*
		 * Another origin set took the frame while the write was in
		 * flight: its last sectors may land over that set's block.
		 */
		m->frame[c][io->frame] = io->stamp;
		m->violations++;
		if (!--m->writers[c])
			m->overlap[c] = false;
	} else if (io->write) {
		ssdp_fmap_set_valid(&m->fm, io->line, io->blk, 1);
		if (io->dirty)
			ssdp_fmap_set_dirty(&m->fm, io->line, io->blk, 1);
		if (io->stamp > m->acked[io->oset][io->blk])
			m->acked[io->oset][io->blk] = io->stamp;
		if (!--m->writers[c])
			m->overlap[c] = false;
	} else {
		m_check_data(m, m->frame[c][io->frame], io->oset, io->blk,
			     io->stamp);
	}
	if (!io->write)
		m->busy[c]--;
	m_no_replace(m, c);
	ssdp_fmap_unpin(&m->fm, c);
	io->busy = false;
}

/* A write the cache cannot take goes to the origin; its copy goes. */
static void m_origin_write(struct model *m, u32 line, u64 oset, u32 blk)
{
	if (line != SSDP_NONE)
		ssdp_fmap_drop(&m->fm, line, blk, 1);
	m->acked[oset][blk] = m_stamp(m, oset, blk);
}

/* The engine's rule (cache.c): reads stand in for its guards here. */
static bool m_overlaps(struct model *m, u32 line, u32 blk)
{
	u32 c = ssdp_line_cset(line);

	if (!m->writers[c])
		return false;
	return (m->overlap_rule & M_OVERLAP_CLAIMED &&
		ssdp_fmap_any_claimed(&m->fm, line, blk, 1)) ||
	       (m->overlap_rule & M_OVERLAP_GUARDED && m->busy[c] &&
		ssdp_fmap_any_held(&m->fm, line, blk, 1));
}

static void m_start(struct model *m, struct m_io *io, u32 r)
{
	u64 oset = m_oset(r);
	u32 blk = (r >> 8) % M_BLOCKS, line, c;
	bool repl, overlap = false;

	line = ssdp_fmap_lookup(&m->fm, oset);
	io->write = (r >> 12) % 3 == 0;
	if (!io->write) {
		if (line == SSDP_NONE ||
		    ssdp_fmap_block(&m->fm, line, blk) == SSDP_FMAP_MISS)
			return;		/* a miss: the origin serves it */
		c = ssdp_line_cset(line);
		io->stamp = m->acked[oset][blk];
		io->frame = ssdp_fmap_frame(&m->fm, line, blk);
		io->dirty = ssdp_fmap_block(&m->fm, line, blk) ==
			    SSDP_FMAP_DIRTY;
	} else {
		if (line == SSDP_NONE)
			line = ssdp_fmap_tag_alloc(&m->fm, oset, &repl);
		else
			overlap = m_overlaps(m, line, blk);
		if (line == SSDP_NONE ||
		    ssdp_fmap_claim(&m->fm, line, blk, 1, false, &repl) != 1) {
			/* The engine keeps writes to dirty blocks in cache. */
			if (line != SSDP_NONE &&
			    ssdp_fmap_block(&m->fm, line, blk) ==
			    SSDP_FMAP_DIRTY)
				return;
			m_origin_write(m, line, oset, blk);
			return;
		}
		c = ssdp_line_cset(line);
		io->stamp = m_stamp(m, oset, blk);
		io->frame = ssdp_fmap_frame(&m->fm, line, blk);
		m->frame[c][io->frame] = io->stamp;
		io->dirty = (r >> 14) & 1 ||
			    ssdp_fmap_block(&m->fm, line, blk) ==
			    SSDP_FMAP_DIRTY;
		m->writers[c]++;
		m->overlap[c] |= overlap;
	}
	/*
	 * As the engine: a read keeps the set's clean frames where they are;
	 * a whole-block write turns its clean block into a claim instead.
	 */
	if (!io->write)
		m->busy[c]++;
	m_no_replace(m, c);
	ssdp_fmap_touch(&m->fm, line);
	ssdp_fmap_pin(&m->fm, c);
	if (io->write)
		ssdp_fmap_overwrite(&m->fm, line, blk, 1);
	io->busy = true;
	io->line = line;
	io->blk = blk;
	io->oset = oset;
	io->replaced = m->fm.replaced;
}

/*
 * A commit in two steps, as meta.c's: the records are encoded (and the
 * devices flushed: what was acknowledged by then is what they promise),
 * I/O goes on while their writes are in flight, and only when those are
 * done do they replace the durable ones.  A power cut in between finds
 * the records before.
 */
static bool m_commit_done_early;	/* the bug: limbo freed at encode */

static void m_commit_begin(struct model *m)
{
	u32 c;

	memcpy(m->commit_floor, m->acked, sizeof(m->acked));
	while ((c = ssdp_fmap_next_changed(&m->fm, 0)) != SSDP_NONE) {
		ssdp_fmap_encode_set(&m->fm, c, &m->commit_rec[c]);
		m->commit_sets |= 1U << c;
		if (m_commit_done_early)
			ssdp_fmap_commit_done(&m->fm, c);
	}
	m->commit_open = true;
}

static void m_commit_end(struct model *m)
{
	u32 c;

	memcpy(m->durable, m->commit_floor, sizeof(m->durable));
	for (c = 0; c < M_CSETS; c++)
		if (m->commit_sets & 1U << c) {
			m->rec[c] = m->commit_rec[c];
			ssdp_fmap_commit_done(&m->fm, c);
		}
	m->commit_sets = 0;
	m->commit_open = false;
}

/* A whole commit; one in flight ends first (meta->lock orders them). */
static void m_commit(struct model *m)
{
	if (m->commit_open)
		m_commit_end(m);
	m_commit_begin(m);
	m_commit_end(m);
}

/* The oldest dirty set without writers: readers go on under writeback. */
static u32 m_wb_victim(struct model *m)
{
	u32 c;

	for (c = ssdp_fmap_oldest_dirty(&m->fm); c != SSDP_NONE;
	     c = ssdp_fmap_next_dirty_set(&m->fm, c))
		if (!m->writers[c] && !m->wb_open[c])
			return c;
	return SSDP_NONE;
}

/*
 * Write back the oldest dirty set; the engine commits before it lets
 * anyone reuse the frames it cleaned.
 */
static void m_writeback(struct model *m)
{
	u32 c = m_wb_victim(m);
	u32 lines[SSDP_FMAP_TAGS], n, i, first, nr;

	if (c == SSDP_NONE)
		return;
	n = ssdp_fmap_dirty_lines(&m->fm, c, lines);
	ASSERT_TRUE(n);
	for (i = 0; i < n; i++)
		while (ssdp_fmap_next_dirty_run(&m->fm, lines[i], 0, &first,
						&nr))
			ssdp_fmap_clear_dirty(&m->fm, lines[i], first, nr);
	if (m->wb_mode == M_WB_ATOMIC) {
		m_commit(m);
		return;
	}
	if (m->wb_mode == M_WB_NO_COMMIT)
		return;
	/*
	 * As the engine's job: the set stays pinned and I/O goes on beside
	 * it until m_writeback_end() commits.
	 */
	m->wb_open[c] = true;
	m->keep_clean[c] = m->wb_mode == M_WB_WINDOW;
	ssdp_fmap_pin(&m->fm, c);
	m_no_replace(m, c);
}

/* The job's commit, then the set is let go. */
static void m_writeback_end(struct model *m, u32 c)
{
	m_commit(m);
	m->wb_open[c] = false;
	m->keep_clean[c] = false;
	m_no_replace(m, c);
	ssdp_fmap_unpin(&m->fm, c);
}

/*
 * A discard of one block; under writers the engine makes it a no-op, and
 * under a writeback it waits for the job's end.
 */
static void m_discard(struct model *m, u32 r)
{
	u64 oset = m_oset(r);
	u32 blk = (r >> 8) % M_BLOCKS;
	u32 line = ssdp_fmap_lookup(&m->fm, oset);

	if (line != SSDP_NONE && (m->writers[ssdp_line_cset(line)] ||
				  m->wb_open[ssdp_line_cset(line)]))
		return;
	m_origin_write(m, line, oset, blk);
}

/* The format whose placement the model runs (its alt frames). */
static u32 m_version = SSDP_FORMAT_VERSION;

/* Power cut: frames hold whatever was written, records the committed. */
static void m_crash_check(struct model *m)
{
	struct ssdp_fmap back;
	u32 c, t, b;

	ASSERT_EQ(ssdp_fmap_init(&back, M_CSETS, M_BLOCKS), 0);
	ASSERT_EQ(ssdp_fmap_set_version(&back, m_version), 0);
	ssdp_fmap_set_crowded(&back, (m->fm.crowded_at * 3 + 1) % (M_BLOCKS + 1));
	for (c = 0; c < M_CSETS; c++)
		ASSERT_EQ(ssdp_fmap_load_set(&back, c, &m->rec[c], false), 0);
	for (c = 0; c < M_CSETS; c++)
		for (t = 0; t < SSDP_FMAP_TAGS; t++) {
			u32 line = ssdp_line(c, t);
			u64 oset;

			if (!ssdp_fmap_tag_used(&back, line))
				continue;
			oset = ssdp_fmap_oset_of(&back, line);
			for (b = 0; b < M_BLOCKS; b++)
				if (ssdp_fmap_block(&back, line, b) !=
				    SSDP_FMAP_MISS)
					m_check_data(m, m->frame[c]
						     [ssdp_fmap_frame(&back, line, b)],
						     oset, b, m->durable[oset][b]);
		}
	check_ok(&back);
	ssdp_fmap_destroy(&back);
}

static u64 m_run(u32 seed, u32 wb_mode, u32 overlap_rule)
{
	static struct model m;
	u32 step, i, r;

	srand(seed);
	memset(&m, 0, sizeof(m));
	m.overlap_rule = overlap_rule;
	m.wb_mode = wb_mode;
	ASSERT_EQ(ssdp_fmap_init(&m.fm, M_CSETS, M_BLOCKS), 0);
	ASSERT_EQ(ssdp_fmap_set_version(&m.fm, m_version), 0);
	/* Not from rand(): the seeds' runs stay what the tests chose. */
	ssdp_fmap_set_crowded(&m.fm, seed % (M_BLOCKS + 1));
	for (i = 0; i < M_CSETS; i++) {
		memset(m.rec[i].tags, 0xff, sizeof(m.rec[i].tags));
		memset(m.rec[i].owners, 0xff, sizeof(m.rec[i].owners));
	}
	for (step = 0; step < M_STEPS / 2; step++) {
		struct m_io *io = &m.io[rand() % M_INFLIGHT];

		r = rand();
		m.fm.clock = step / 100;
		switch (r % 8) {
		case 0: case 1: case 2:
			if (io->busy)
				m_complete(&m, io);
			else
				m_start(&m, io, r >> 3);
			break;
		case 3:
			m_discard(&m, r >> 3);
			break;
		case 4:
			if ((r >> 3) % 4)
				break;
			i = (r >> 5) % M_CSETS;
			if (m.wb_open[i])
				m_writeback_end(&m, i);
			else
				m_writeback(&m);
			break;
		case 5:
			if (m.commit_open)
				m_commit_end(&m);
			else if ((r >> 3) % 16 == 0)
				m_commit_begin(&m);
			break;
		case 6:
			m_crash_check(&m);
			break;
		default:
			if (!((r >> 3) % 64))
				check_ok(&m.fm);
			break;
		}
	}
	for (i = 0; i < M_INFLIGHT; i++)
		if (m.io[i].busy)
			m_complete(&m, &m.io[i]);
	for (i = 0; i < M_CSETS; i++)
		if (m.wb_open[i])
			m_writeback_end(&m, i);
	if (m.commit_open)
		m_commit_end(&m);
	check_ok(&m.fm);
	printf("[replaced %llu, valid %llu, wrong %llu] ",
	       (unsigned long long)m.fm.replaced,
	       (unsigned long long)m.fm.total_valid,
	       (unsigned long long)m.violations);
	ssdp_fmap_destroy(&m.fm);
	return m.violations;
}

/*
 * Random multi-block claims, drops, writebacks and commits in a few small
 * sets: every run the map hands out (a claim, a run of hits) lies in
 * consecutive frames, so that the engine can send it as one SSD I/O, and
 * the invariants hold throughout (one frame per block among them).
 */
TEST(fmap_random_runs_stay_contiguous)
{
	struct ssdp_fmap fm;
	enum ssdp_fmap_hit hit;
	u32 step, alt = 0, runs = 0;
	bool repl;

	srand(4242);
	ASSERT_EQ(ssdp_fmap_init(&fm, 3, 16), 0);
	for (step = 0; step < 200000; step++) {
		u32 r = rand(), c = r % 3, line, first, nr, n, f, b;
		u64 oset = (r >> 2) % 64;
		bool commit = false;

		if (!step_blocks(&fm, r, c, oset, (r >> 17) % 6 < 2, &first,
				 &nr, &line))
			continue;
		switch ((r >> 17) % 6) {
		case 0: case 1:		/* a write */
			if (line == SSDP_NONE)
				break;
			ssdp_fmap_pin(&fm, c);
			n = ssdp_fmap_claim(&fm, line, first, nr, false, &repl);
			if (n) {
				ASSERT_EQ(ssdp_fmap_frame_run(&fm, line, first,
							      n, &f), n);
				alt += f != first;
				runs++;
				ssdp_fmap_set_valid(&fm, line, first, n);
				if ((r >> 20) & 1)
					ssdp_fmap_set_dirty(&fm, line, first,
							    n);
			}
			ssdp_fmap_unpin(&fm, c);
			break;
		case 2:			/* a read */
			if (line == SSDP_NONE)
				break;
			n = ssdp_fmap_hit_run(&fm, line, first, nr, &hit);
			ASSERT_TRUE(n >= 1 && n <= nr);
			if (hit != SSDP_FMAP_MISS)
				ASSERT_EQ(ssdp_fmap_frame_run(&fm, line, first,
							      n, &f), n);
			break;
		case 3:			/* a discard */
			if (line != SSDP_NONE)
				ssdp_fmap_drop(&fm, line, first, nr);
			break;
		case 4:			/* a writeback of the set */
			for (b = 0; b < SSDP_FMAP_TAGS; b++)
				if (ssdp_fmap_tag_used(&fm, ssdp_line(c, b)))
					ssdp_fmap_clear_dirty(&fm,
							      ssdp_line(c, b),
							      0, 16);
			__attribute__((fallthrough));	/* it commits */
		default:
			commit = true;
			break;
		}
		step_done(&fm, c, commit, step);
	}
	check_ok(&fm);
	printf("[%u runs, %u alt] ", runs, alt);
	ASSERT_GT(alt, 0);
	ssdp_fmap_destroy(&fm);
}

/*
 * What ssdp_fmap_claimable() says a claim would take, against what the
 * claim then takes, over random states (tags, clean, dirty, limbo, claims,
 * no_replace, own_only): never more, and all when it says all.  Under
 * no_replace (a writeback bridging clean blocks of the set, which it reads)
 * no claim replaces a clean block.
 */
TEST(fmap_claimable_says_what_claim_takes)
{
	struct ssdp_fmap fm;
	u32 step, all = 0, part = 0, more = 0;
	bool repl;

	srand(777);
	ASSERT_EQ(ssdp_fmap_init(&fm, 2, 16), 0);
	for (step = 0; step < 200000; step++) {
		u32 r = rand(), c = r % 2, line, first, nr, n, dry;
		u64 oset = (r >> 1) % 96;
		bool own = !((r >> 22) % 8), closed = !((r >> 25) % 4);
		bool commit = false;

		if (!step_blocks(&fm, r, c, oset, (r >> 17) % 5 < 2, &first,
				 &nr, &line))
			continue;
		switch ((r >> 17) % 5) {
		case 0: case 1:		/* a write, maybe left in flight */
			if (line == SSDP_NONE)
				break;
			ssdp_fmap_pin(&fm, c);
			ssdp_fmap_set_no_replace(&fm, c, closed);
			dry = ssdp_fmap_claimable(&fm, line, first, nr, own);
			n = ssdp_fmap_claim(&fm, line, first, nr, own, &repl);
			ssdp_fmap_set_no_replace(&fm, c, false);
			ASSERT_TRUE(n >= dry);
			/* A closed set gives no clean block away. */
			if (closed)
				ASSERT_FALSE(repl);
			if (dry == nr)
				all++;
			else if (dry)
				part++;
			more += n > dry;
			if (n && (r >> 20) % 4) {
				ssdp_fmap_set_valid(&fm, line, first, n);
				if ((r >> 27) & 1)
					ssdp_fmap_set_dirty(&fm, line, first,
							    n);
			}
			ssdp_fmap_unpin(&fm, c);
			break;
		case 2:			/* a discard */
			if (line != SSDP_NONE)
				ssdp_fmap_drop(&fm, line, first, nr);
			break;
		case 3:			/* a writeback of the line */
			if (line != SSDP_NONE)
				ssdp_fmap_clear_dirty(&fm, line, 0, 16);
			break;
		default:
			commit = true;
			break;
		}
		step_done(&fm, c, commit, step);
	}
	check_ok(&fm);
	printf("[%u all, %u part, %u took more] ", all, part, more);
	ASSERT_GT(all, 1000);
	ASSERT_GT(part, 100);
	ssdp_fmap_destroy(&fm);
}

/*
 * Walk blocks [first, first + n) of @line as the SSD leg of a write that
 * cannot be cut does, run by run: how many runs, or 0 if a block has no
 * frame.
 */
static u32 walk_runs(const struct ssdp_fmap *fm, u32 line, u32 first, u32 n)
{
	u32 done = 0, runs = 0, m, f;

	while (done < n) {
		m = ssdp_fmap_frame_run(fm, line, first + done, n - done, &f);
		if (!m)
			return 0;
		done += m;
		runs++;
	}
	return runs;
}

/*
 * A write that cannot be cut, claimed run by run: blocks 6-7 clean at
 * home, 8 at its alt frame 0.  The second run (8-13 in frames 0-5) would
 * go on to block 14's alt frame, 6, which holds block 6: taken, the write
 * would find block 6 with no frame.  It stops there, and 14 goes home.
 */
TEST(fmap_claim_runs_keep_the_blocks_earlier_runs_hold)
{
	struct ssdp_fmap fm;
	u32 a, b, runs, f;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 1, 16), 0);
	ASSERT_EQ(ssdp_fmap_set_version(&fm, SSDP_FORMAT_V3), 0);
	a = ssdp_fmap_tag_alloc(&fm, 0, &repl);
	b = ssdp_fmap_tag_alloc(&fm, 1, &repl);
	ssdp_fmap_pin(&fm, 0);
	ASSERT_EQ(ssdp_fmap_claim(&fm, b, 8, 1, false, &repl), 1);
	ssdp_fmap_set_valid(&fm, b, 8, 1);
	ssdp_fmap_set_dirty(&fm, b, 8, 1);
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 8, 1, false, &repl), 1);
	ASSERT_EQ(ssdp_fmap_frame(&fm, a, 8), 0);
	ASSERT_EQ(ssdp_fmap_claim(&fm, a, 6, 2, false, &repl), 2);
	ssdp_fmap_set_valid(&fm, a, 6, 3);
	ssdp_fmap_unpin(&fm, 0);

	ssdp_fmap_pin(&fm, 0);
	ASSERT_EQ(ssdp_fmap_claim_runs(&fm, a, 6, 9, false, &repl, &runs), 9);
	ASSERT_FALSE(repl);
	ASSERT_EQ(runs, 3);
	ASSERT_EQ(walk_runs(&fm, a, 6, 9), 3);
	ASSERT_EQ(ssdp_fmap_frame(&fm, a, 6), 6);
	ASSERT_EQ(ssdp_fmap_frame_run(&fm, a, 8, 7, &f), 6);
	ASSERT_EQ(f, 0);
	ASSERT_EQ(ssdp_fmap_frame(&fm, a, 14), 14);
	ssdp_fmap_overwrite(&fm, a, 6, 9);
	ssdp_fmap_set_valid(&fm, a, 6, 9);
	ssdp_fmap_unpin(&fm, 0);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

/*
 * Over random states: every block a run-by-run claim counts has a frame
 * when it returns, in as many runs of consecutive frames as it says, and
 * it takes at least what one claim would.
 */
TEST(fmap_claim_runs_leave_every_block_a_frame)
{
	struct ssdp_fmap fm;
	u32 step, multi = 0;
	bool repl;

	srand(9090);
	ASSERT_EQ(ssdp_fmap_init(&fm, 2, 16), 0);
	for (step = 0; step < 200000; step++) {
		u32 r = rand(), c = r % 2, line, first, nr, n, dry, runs;
		u64 oset = (r >> 1) % 96;
		bool commit = false;

		if (!step_blocks(&fm, r, c, oset, (r >> 17) % 5 < 2, &first,
				 &nr, &line))
			continue;
		switch ((r >> 17) % 5) {
		case 0: case 1:		/* a write that cannot be cut */
			if (line == SSDP_NONE)
				break;
			ssdp_fmap_pin(&fm, c);
			dry = ssdp_fmap_claimable(&fm, line, first, nr, false);
			n = ssdp_fmap_claim_runs(&fm, line, first, nr, false,
						 &repl, &runs);
			ASSERT_TRUE(n >= dry);
			ASSERT_EQ(walk_runs(&fm, line, first, n), runs);
			multi += runs > 1;
			if (n == nr) {
				ssdp_fmap_overwrite(&fm, line, first, n);
				ssdp_fmap_set_valid(&fm, line, first, n);
				if ((r >> 27) & 1)
					ssdp_fmap_set_dirty(&fm, line, first,
							    n);
			} else if (n) {
				/* To the origin: the cache's copies go. */
				ssdp_fmap_drop(&fm, line, first, nr);
			}
			ssdp_fmap_unpin(&fm, c);
			break;
		case 2:			/* a discard */
			if (line != SSDP_NONE)
				ssdp_fmap_drop(&fm, line, first, nr);
			break;
		case 3:			/* a writeback of the line */
			if (line != SSDP_NONE)
				ssdp_fmap_clear_dirty(&fm, line, 0, 16);
			break;
		default:
			commit = true;
			break;
		}
		step_done(&fm, c, commit, step);
	}
	check_ok(&fm);
	printf("[%u in more than one run] ", multi);
	ASSERT_GT(multi, 1000);
	ssdp_fmap_destroy(&fm);
}

TEST(fmap_random_model_with_io_in_flight_and_crashes)
{
	ASSERT_EQ(m_run(12345, M_WB_ATOMIC, M_OVERLAP_RULE), 0);
	ASSERT_EQ(m_run(777, M_WB_ATOMIC, M_OVERLAP_RULE), 0);
}

/*
 * A writeback as the engine runs it: blocks turn clean, then writes,
 * reads and power cuts go on beside the job until its commit, with the
 * set's clean frames kept (set_io.wb_keep_clean).
 */
TEST(fmap_random_model_with_io_beside_writeback)
{
	ASSERT_EQ(m_run(12345, M_WB_WINDOW, M_OVERLAP_RULE), 0);
	ASSERT_EQ(m_run(777, M_WB_WINDOW, M_OVERLAP_RULE), 0);
	ASSERT_EQ(m_run(4242, M_WB_WINDOW, M_OVERLAP_RULE), 0);
}

/* The same with format 3's placement (alt frame b ^ S/2 for every tag). */
TEST(fmap_random_model_format_3)
{
	m_version = SSDP_FORMAT_V3;
	ASSERT_EQ(m_run(12345, M_WB_WINDOW, M_OVERLAP_RULE), 0);
	ASSERT_EQ(m_run(777, M_WB_ATOMIC, M_OVERLAP_RULE), 0);
	m_version = SSDP_FORMAT_VERSION;
}

/*
 * Without the kept frames a write beside the writeback takes the frame
 * of a block just cleaned, whose durable record still calls it dirty.
 */
TEST(fmap_random_model_catches_writeback_window_without_keep_clean)
{
	ASSERT_GT(m_run(12345, M_WB_WINDOW_OPEN, M_OVERLAP_RULE), 0);
}

/*
 * A commit's records become durable only when their writes end: limbo
 * frames freed at the encode are taken and written before the records
 * that call them free are on the SSD.
 */
TEST(fmap_random_model_catches_limbo_freed_before_durable)
{
	u64 wrong;

	m_commit_done_early = true;
	wrong = m_run(12345, M_WB_WINDOW, M_OVERLAP_RULE) +
		m_run(777, M_WB_WINDOW, M_OVERLAP_RULE) +
		m_run(4242, M_WB_WINDOW, M_OVERLAP_RULE);
	m_commit_done_early = false;
	ASSERT_GT(wrong, 0);
}

/* The model is sharp enough to see a writeback that skips its commit. */
TEST(fmap_random_model_catches_writeback_without_commit)
{
	ASSERT_GT(m_run(12345, M_WB_NO_COMMIT, M_OVERLAP_RULE), 0);
}

/*
 * And a set left open while two writes of one block are in flight: the
 * first to complete makes the frame valid, another origin set takes it,
 * and the second write lands in that set's block.
 */
TEST(fmap_random_model_catches_overlap_without_claim_rule)
{
	ASSERT_GT(m_run(12345, M_WB_ATOMIC, M_OVERLAP_GUARDED), 0);
}

/* Blocks [first, first + nr) of @line written: claimed, valid, dirty. */
static void put_dirty(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr)
{
	bool repl;

	ssdp_fmap_claim(fm, line, first, nr, false, &repl);
	ssdp_fmap_set_valid(fm, line, first, nr);
	ssdp_fmap_set_dirty(fm, line, first, nr);
}

/* A set whose dirty blocks are all new goes to the end of the dirty list. */
TEST(fmap_dirty_renew_moves_the_set_to_the_end)
{
	struct ssdp_fmap fm;
	u32 a, b, c;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 4, 8), 0);
	fm.clock = 100;
	a = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 1, 0), &repl);
	b = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 2, 0), &repl);
	c = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 3, 0), &repl);
	put_dirty(&fm, a, 0, 2);
	fm.clock = 200;
	put_dirty(&fm, b, 0, 1);
	ASSERT_EQ(ssdp_fmap_oldest_dirty(&fm), 1);
	fm.clock = 300;
	ssdp_fmap_dirty_renew(&fm, 1);
	ASSERT_EQ(ssdp_fmap_oldest_dirty(&fm), 2);
	ASSERT_EQ(ssdp_fmap_next_dirty_set(&fm, 2), 1);
	ASSERT_EQ(ssdp_fmap_next_dirty_set(&fm, 1), SSDP_NONE);
	ASSERT_EQ(ssdp_fmap_dirty_since(&fm, 1), 300);
	ASSERT_EQ(fm.nr_dirty_sets, 2);
	/* A set with nothing dirty stays off the list. */
	ssdp_fmap_claim(&fm, c, 0, 1, false, &repl);
	ssdp_fmap_set_valid(&fm, c, 0, 1);
	ssdp_fmap_dirty_renew(&fm, 3);
	ASSERT_EQ(fm.nr_dirty_sets, 2);
	ASSERT_EQ(ssdp_fmap_next_dirty_set(&fm, 1), SSDP_NONE);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

/*
 * A flush owes the sets dirty when it was asked: one dirtied later is not
 * owed, a renewal keeps the debt, a set paid by going clean (written back
 * or its dirty blocks dropped) or by an explicit unmark.
 */
TEST(fmap_flush_marks_owe_what_was_dirty_when_asked)
{
	struct ssdp_fmap fm;
	u32 a, b, c;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 4, 8), 0);
	a = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 1, 0), &repl);
	b = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 2, 0), &repl);
	c = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 3, 0), &repl);
	put_dirty(&fm, a, 0, 2);
	put_dirty(&fm, b, 0, 1);
	ASSERT_EQ(ssdp_fmap_flush_mark_dirty(&fm), 2);
	ASSERT_TRUE(ssdp_fmap_flush_marked(&fm, 1));
	ASSERT_TRUE(ssdp_fmap_flush_marked(&fm, 2));
	check_ok(&fm);
	/* Dirty after the request: not owed. */
	put_dirty(&fm, c, 0, 1);
	ASSERT_FALSE(ssdp_fmap_flush_marked(&fm, 3));
	ASSERT_EQ(fm.nr_flush_marked, 2);
	/* Marked twice: counted once. */
	ssdp_fmap_flush_unmark(&fm, 3);
	ASSERT_EQ(fm.nr_flush_marked, 2);
	/* A renewal says nothing about what a flush owes. */
	ssdp_fmap_dirty_renew(&fm, 1);
	ASSERT_TRUE(ssdp_fmap_flush_marked(&fm, 1));
	ASSERT_EQ(fm.nr_flush_marked, 2);
	check_ok(&fm);
	/* Written back: paid.  Part of it only: still owed. */
	ssdp_fmap_clear_dirty(&fm, a, 0, 1);
	ASSERT_TRUE(ssdp_fmap_flush_marked(&fm, 1));
	ssdp_fmap_clear_dirty(&fm, b, 0, 1);
	ASSERT_FALSE(ssdp_fmap_flush_marked(&fm, 2));
	ASSERT_EQ(fm.nr_flush_marked, 1);
	/* Its last dirty block dropped (a discard): nothing left to owe. */
	ssdp_fmap_drop(&fm, a, 1, 1);
	ASSERT_FALSE(ssdp_fmap_flush_marked(&fm, 1));
	ASSERT_EQ(fm.nr_flush_marked, 0);
	check_ok(&fm);
	/* Asked again: what is dirty now. */
	ASSERT_EQ(ssdp_fmap_flush_mark_dirty(&fm), 1);
	ASSERT_TRUE(ssdp_fmap_flush_marked(&fm, 3));
	ssdp_fmap_flush_unmark(&fm, 3);
	ASSERT_EQ(fm.nr_flush_marked, 0);
	ASSERT_TRUE(ssdp_fmap_nr_dirty(&fm, 3) == 1);
	ASSERT_EQ(ssdp_fmap_flush_mark_dirty(&fm), 1);
	ssdp_fmap_flush_unmark_all(&fm);
	ASSERT_EQ(fm.nr_flush_marked, 0);
	/* One set: only a dirty one, once. */
	ssdp_fmap_flush_mark(&fm, 2);
	ASSERT_FALSE(ssdp_fmap_flush_marked(&fm, 2));
	ssdp_fmap_flush_mark(&fm, 3);
	ssdp_fmap_flush_mark(&fm, 3);
	ASSERT_TRUE(ssdp_fmap_flush_marked(&fm, 3));
	ASSERT_EQ(fm.nr_flush_marked, 1);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

/* The run a write to dirty and other blocks is cut at. */
TEST(fmap_dirty_run_ends_where_dirtiness_changes)
{
	struct ssdp_fmap fm;
	bool repl, dirty;
	u32 a;

	ASSERT_EQ(ssdp_fmap_init(&fm, 4, 8), 0);
	a = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 1, 0), &repl);
	put_dirty(&fm, a, 2, 2);
	ssdp_fmap_claim(&fm, a, 4, 1, false, &repl);
	ssdp_fmap_set_valid(&fm, a, 4, 1);
	/* Blocks 0-1 missing, 2-3 dirty, 4 clean, 5-7 missing. */
	ASSERT_EQ(ssdp_fmap_dirty_run(&fm, a, 0, 8, &dirty), 2);
	ASSERT_FALSE(dirty);
	ASSERT_EQ(ssdp_fmap_dirty_run(&fm, a, 2, 6, &dirty), 2);
	ASSERT_TRUE(dirty);
	ASSERT_EQ(ssdp_fmap_dirty_run(&fm, a, 3, 1, &dirty), 1);
	ASSERT_TRUE(dirty);
	ASSERT_EQ(ssdp_fmap_dirty_run(&fm, a, 4, 4, &dirty), 4);
	ASSERT_FALSE(dirty);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}

/*
 * Crowded sets: counted as they pass the threshold either way (writes,
 * writebacks, discards to limbo, a load), recounted when it changes;
 * each set turning crowded is an event, and the young end of the dirty
 * list is where the newest dirty set is found.
 */
TEST(fmap_crowded_sets_counted_both_ways)
{
	struct ssdp_fmap fm, back;
	struct ssdp_rec_view rec;
	u32 a, b, ev;
	bool repl;

	ASSERT_EQ(ssdp_fmap_init(&fm, 4, 8), 0);
	a = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 1, 0), &repl);
	b = ssdp_fmap_tag_alloc(&fm, oset_in(&fm, 2, 0), &repl);
	put_dirty(&fm, a, 0, 8);
	ASSERT_EQ(fm.nr_crowded, 0);		/* off after init */
	ASSERT_EQ(fm.crowded_events, 0);
	ssdp_fmap_set_crowded(&fm, 4);
	ASSERT_EQ(fm.nr_crowded, 1);
	ASSERT_EQ(fm.crowded_events, 1);
	ASSERT_TRUE(ssdp_fmap_crowded(&fm, 1));
	check_ok(&fm);

	put_dirty(&fm, b, 0, 4);		/* 4 of 8: not more than 4 */
	ASSERT_EQ(fm.nr_crowded, 1);
	ev = fm.crowded_events;
	put_dirty(&fm, b, 4, 1);
	ASSERT_EQ(fm.nr_crowded, 2);
	ASSERT_EQ(fm.crowded_events, ev + 1);
	ASSERT_EQ(ssdp_fmap_newest_dirty(&fm), 2);
	ASSERT_EQ(ssdp_fmap_prev_dirty_set(&fm, 2), 1);
	ASSERT_EQ(ssdp_fmap_prev_dirty_set(&fm, 1), SSDP_NONE);
	check_ok(&fm);

	/* Written back below it, then dirty again: a new event. */
	ssdp_fmap_clear_dirty(&fm, b, 0, 1);
	ASSERT_EQ(fm.nr_crowded, 1);
	put_dirty(&fm, b, 0, 1);
	ASSERT_EQ(fm.nr_crowded, 2);
	ASSERT_EQ(fm.crowded_events, ev + 2);
	/* A discard's limbo frames are not dirty ones. */
	ssdp_fmap_drop(&fm, a, 0, 5);
	ASSERT_EQ(fm.nr_crowded, 1);
	ASSERT_FALSE(ssdp_fmap_crowded(&fm, 1));
	check_ok(&fm);

	/* A load counts what it finds, against the threshold of the map. */
	ssdp_fmap_encode_set(&fm, 2, &rec);
	ASSERT_EQ(ssdp_fmap_init(&back, 4, 8), 0);
	ssdp_fmap_set_crowded(&back, 2);
	ASSERT_EQ(ssdp_fmap_load_set(&back, 2, &rec, false), 0);
	ASSERT_EQ(back.nr_crowded, 1);
	ASSERT_EQ(back.crowded_events, 1);
	check_ok(&back);
	/* Threshold set_blocks or more: none. */
	ssdp_fmap_set_crowded(&back, 100);
	ASSERT_EQ(back.nr_crowded, 0);
	check_ok(&back);
	ssdp_fmap_destroy(&back);

	ssdp_fmap_clear_dirty(&fm, b, 0, 8);
	ASSERT_EQ(fm.nr_crowded, 0);
	check_ok(&fm);
	ssdp_fmap_destroy(&fm);
}
