// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>

#include "harness.h"
#include "cache_map.h"

static void check_ok(struct ssdp_cmap *cm)
{
	const char *why = NULL;

	if (ssdp_cmap_check(cm, &why))
		ssdp_test_fail(__FILE__, __LINE__, "check: %s", why);
}

TEST(cmap_init_rejects_bad_geometry)
{
	struct ssdp_cmap cm;

	ASSERT_EQ(ssdp_cmap_init(&cm, 0, 256), -EINVAL);
	ASSERT_EQ(ssdp_cmap_init(&cm, 4, 0), -EINVAL);
	ASSERT_EQ(ssdp_cmap_init(&cm, 4, 3), -EINVAL);
	ASSERT_EQ(ssdp_cmap_init(&cm, 4, 2048), -EINVAL);
	ASSERT_EQ(ssdp_cmap_init(&cm, 1, 1), 0);
	check_ok(&cm);
	ssdp_cmap_destroy(&cm);
	ASSERT_EQ(ssdp_cmap_init(&cm, 3, 1024), 0);
	check_ok(&cm);
	ssdp_cmap_destroy(&cm);
}

TEST(cmap_memory_per_set_default_geometry)
{
	struct ssdp_cmap cm;
	u32 sizes[] = { 1000, 1024, 1025, 65536, 100000 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t per_set;

		ASSERT_EQ(ssdp_cmap_init(&cm, sizes[i], 256), 0);
		per_set = ssdp_cmap_mem_bytes(&cm) / sizes[i];
		printf("[%u sets: %zu B, %zu B/set] ", sizes[i],
		       ssdp_cmap_mem_bytes(&cm), per_set);
		ASSERT_LE(ssdp_cmap_mem_bytes(&cm), (size_t)sizes[i] * 256);
		/*
		 * ~0.45 B per 4 KiB block, incl. map_seq, the change bit and
		 * the dirty list with its ages.
		 */
		ASSERT_LE(per_set, 116);
		ssdp_cmap_destroy(&cm);
	}
}

TEST(cmap_map_lookup_unmap_free_list_order)
{
	struct ssdp_cmap cm;
	u32 c0, c1, c2;

	ASSERT_EQ(ssdp_cmap_init(&cm, 3, 16), 0);
	ASSERT_EQ(ssdp_cmap_lookup(&cm, 42), SSDP_NONE);
	c0 = ssdp_cmap_map(&cm, 42);
	c1 = ssdp_cmap_map(&cm, 7);
	c2 = ssdp_cmap_map(&cm, 1ULL << 40);
	/* free list starts in index order */
	ASSERT_EQ(c0, 0);
	ASSERT_EQ(c1, 1);
	ASSERT_EQ(c2, 2);
	ASSERT_EQ(ssdp_cmap_map(&cm, 99), SSDP_NONE);
	ASSERT_EQ(ssdp_cmap_nr_free(&cm), 0);
	ASSERT_EQ(ssdp_cmap_nr_mapped(&cm), 3);
	ASSERT_EQ(ssdp_cmap_lookup(&cm, 42), c0);
	ASSERT_EQ(ssdp_cmap_lookup(&cm, 7), c1);
	ASSERT_EQ(ssdp_cmap_lookup(&cm, 1ULL << 40), c2);
	ASSERT_EQ(ssdp_cmap_oset_of(&cm, c2), 1ULL << 40);
	check_ok(&cm);

	ASSERT_EQ(ssdp_cmap_unmap(&cm, c1), 0);
	ASSERT_EQ(ssdp_cmap_lookup(&cm, 7), SSDP_NONE);
	ASSERT_FALSE(ssdp_cmap_is_mapped(&cm, c1));
	ASSERT_EQ(ssdp_cmap_unmap(&cm, c0), 0);
	check_ok(&cm);
	/* unmapped sets go to the free tail: c1 is reused before c0 */
	ASSERT_EQ(ssdp_cmap_map(&cm, 5), c1);
	ASSERT_EQ(ssdp_cmap_map(&cm, 6), c0);
	check_ok(&cm);
	/* mapping an oset twice is a bug: warns and returns the cset */
	EXPECT_WARNS(ASSERT_EQ(ssdp_cmap_map(&cm, 6), c0));
	EXPECT_WARNS(ASSERT_EQ(ssdp_cmap_unmap(&cm, 77), -EINVAL));
	ssdp_cmap_destroy(&cm);
}

TEST(cmap_hash_collisions)
{
	struct ssdp_cmap cm;
	u64 osets[64];
	u32 n = 0, b, i;
	u64 o;

	/* 16 csets -> 16 buckets: collect osets all in one bucket */
	ASSERT_EQ(ssdp_cmap_init(&cm, 16, 8), 0);
	b = ssdp_cmap_bucket_of(&cm, 12345);
	for (o = 0; n < 12; o++)
		if (ssdp_cmap_bucket_of(&cm, o) == b)
			osets[n++] = o;
	for (i = 0; i < n; i++)
		ASSERT_NE(ssdp_cmap_map(&cm, osets[i]), SSDP_NONE);
	check_ok(&cm);
	for (i = 0; i < n; i++)
		ASSERT_EQ(ssdp_cmap_lookup(&cm, osets[i]), i);
	ASSERT_EQ(ssdp_cmap_lookup(&cm, 12345), SSDP_NONE);
	/* remove from the middle, head and tail of the chain */
	ASSERT_EQ(ssdp_cmap_unmap(&cm, 5), 0);
	ASSERT_EQ(ssdp_cmap_unmap(&cm, 0), 0);
	ASSERT_EQ(ssdp_cmap_unmap(&cm, n - 1), 0);
	check_ok(&cm);
	for (i = 0; i < n; i++) {
		u32 want = (i == 5 || i == 0 || i == n - 1) ? SSDP_NONE : i;

		ASSERT_EQ(ssdp_cmap_lookup(&cm, osets[i]), want);
	}
	/* sequential osets spread over the buckets */
	ssdp_cmap_destroy(&cm);
	ASSERT_EQ(ssdp_cmap_init(&cm, 1024, 8), 0);
	{
		static u32 hits[1024];
		u32 maxhit = 0;

		for (o = 0; o < 1024; o++)
			hits[ssdp_cmap_bucket_of(&cm, o)]++;
		for (i = 0; i < 1024; i++)
			if (hits[i] > maxhit)
				maxhit = hits[i];
		ASSERT_LE(maxhit, 3);
	}
	ssdp_cmap_destroy(&cm);
}

static void expect_lru(struct ssdp_cmap *cm, const u32 *want, u32 n)
{
	u32 c = ssdp_cmap_lru_head(cm), i;

	for (i = 0; i < n; i++) {
		ASSERT_EQ(c, want[i]);
		c = ssdp_cmap_lru_next(cm, c);
	}
	ASSERT_EQ(c, SSDP_NONE);
}

TEST(cmap_lru_order_touch_and_pins)
{
	struct ssdp_cmap cm;
	u32 i;

	ASSERT_EQ(ssdp_cmap_init(&cm, 5, 4), 0);
	ASSERT_EQ(ssdp_cmap_lru_head(&cm), SSDP_NONE);
	ASSERT_EQ(ssdp_cmap_lru_first_unpinned(&cm), SSDP_NONE);
	for (i = 0; i < 5; i++)
		ASSERT_EQ(ssdp_cmap_map(&cm, 100 + i), i);
	expect_lru(&cm, (u32[]){ 0, 1, 2, 3, 4 }, 5);
	ssdp_cmap_touch(&cm, 0);
	ssdp_cmap_touch(&cm, 2);
	expect_lru(&cm, (u32[]){ 1, 3, 4, 0, 2 }, 5);
	ssdp_cmap_touch(&cm, 2);	/* already the tail */
	expect_lru(&cm, (u32[]){ 1, 3, 4, 0, 2 }, 5);

	ssdp_cmap_pin(&cm, 1);
	ssdp_cmap_pin(&cm, 3);
	ssdp_cmap_pin(&cm, 3);
	ASSERT_EQ(ssdp_cmap_lru_first_unpinned(&cm), 4);
	ASSERT_EQ(ssdp_cmap_lru_next_unpinned(&cm, 4), 0);
	ASSERT_EQ(ssdp_cmap_lru_next_unpinned(&cm, 2), SSDP_NONE);
	EXPECT_WARNS(ASSERT_EQ(ssdp_cmap_unmap(&cm, 1), -EBUSY));
	ssdp_cmap_unpin(&cm, 3);
	ASSERT_TRUE(ssdp_cmap_pinned(&cm, 3));
	ssdp_cmap_unpin(&cm, 3);
	ASSERT_FALSE(ssdp_cmap_pinned(&cm, 3));
	ASSERT_EQ(ssdp_cmap_lru_first_unpinned(&cm), 3);
	EXPECT_WARNS(ssdp_cmap_unpin(&cm, 3));
	ssdp_cmap_unpin(&cm, 1);
	check_ok(&cm);

	ASSERT_EQ(ssdp_cmap_unmap(&cm, 4), 0);
	expect_lru(&cm, (u32[]){ 1, 3, 0, 2 }, 4);
	EXPECT_WARNS(ssdp_cmap_touch(&cm, 4));
	EXPECT_WARNS(ssdp_cmap_pin(&cm, 4));
	ASSERT_EQ(ssdp_cmap_map(&cm, 1000), 4);
	expect_lru(&cm, (u32[]){ 1, 3, 0, 2, 4 }, 5);
	check_ok(&cm);
	ssdp_cmap_destroy(&cm);
}

TEST(cmap_bitmaps_counters_dirty_implies_valid)
{
	struct ssdp_cmap cm;
	u32 a, b;

	ASSERT_EQ(ssdp_cmap_init(&cm, 4, 256), 0);
	a = ssdp_cmap_map(&cm, 1);
	b = ssdp_cmap_map(&cm, 2);
	ssdp_cmap_set_valid(&cm, a, 0, 10);
	ssdp_cmap_set_valid(&cm, a, 5, 10);	/* overlap counts once */
	ASSERT_EQ(ssdp_cmap_nr_valid(&cm, a), 15);
	ASSERT_TRUE(ssdp_cmap_all_valid(&cm, a, 0, 15));
	ASSERT_FALSE(ssdp_cmap_all_valid(&cm, a, 0, 16));
	ASSERT_TRUE(ssdp_cmap_any_valid(&cm, a, 14, 100));
	ASSERT_FALSE(ssdp_cmap_any_valid(&cm, a, 15, 241));
	ASSERT_FALSE(ssdp_cmap_any_dirty(&cm, a, 0, 256));
	ASSERT_EQ(ssdp_cmap_nr_dirty_sets(&cm), 0);

	ssdp_cmap_set_dirty(&cm, b, 250, 6);	/* last blocks of the set */
	ASSERT_EQ(ssdp_cmap_nr_valid(&cm, b), 6);
	ASSERT_EQ(ssdp_cmap_nr_dirty(&cm, b), 6);
	ASSERT_TRUE(ssdp_cmap_all_valid(&cm, b, 250, 6));
	ASSERT_FALSE(ssdp_cmap_any_valid(&cm, a, 250, 6));
	ASSERT_EQ(ssdp_cmap_nr_dirty_sets(&cm), 1);
	ASSERT_EQ(ssdp_cmap_total_valid(&cm), 21);
	ASSERT_EQ(ssdp_cmap_total_dirty(&cm), 6);
	check_ok(&cm);

	/* clear_valid clears dirty too */
	ssdp_cmap_clear_valid(&cm, b, 252, 2);
	ASSERT_EQ(ssdp_cmap_nr_dirty(&cm, b), 4);
	ASSERT_EQ(ssdp_cmap_nr_valid(&cm, b), 4);
	ASSERT_FALSE(ssdp_cmap_block_dirty(&cm, b, 252));
	/* clear_dirty keeps the data valid */
	ssdp_cmap_clear_dirty(&cm, b, 0, 256);
	ASSERT_EQ(ssdp_cmap_nr_dirty(&cm, b), 0);
	ASSERT_EQ(ssdp_cmap_nr_valid(&cm, b), 4);
	ASSERT_TRUE(ssdp_cmap_block_valid(&cm, b, 255));
	ASSERT_EQ(ssdp_cmap_nr_dirty_sets(&cm), 0);
	check_ok(&cm);

	/* a dirty set cannot be unmapped; after clearing it can */
	ssdp_cmap_set_dirty(&cm, a, 3, 1);
	EXPECT_WARNS(ASSERT_EQ(ssdp_cmap_unmap(&cm, a), -EBUSY));
	ssdp_cmap_clear_dirty(&cm, a, 3, 1);
	ASSERT_EQ(ssdp_cmap_unmap(&cm, a), 0);
	ASSERT_EQ(ssdp_cmap_total_valid(&cm), 4);
	check_ok(&cm);

	/* out-of-range ranges warn and change nothing */
	EXPECT_WARNS(ssdp_cmap_set_dirty(&cm, b, 250, 7));
	EXPECT_WARNS(ssdp_cmap_set_valid(&cm, a, 0, 1));	/* free cset */
	ASSERT_EQ(ssdp_cmap_total_dirty(&cm), 0);
	check_ok(&cm);
	ssdp_cmap_destroy(&cm);
}

TEST(cmap_dirty_runs)
{
	struct ssdp_cmap cm;
	u32 c, first, nr, from;
	u32 got[8][2], n = 0;

	ASSERT_EQ(ssdp_cmap_init(&cm, 2, 128), 0);
	c = ssdp_cmap_map(&cm, 9);
	ASSERT_FALSE(ssdp_cmap_next_dirty_run(&cm, c, 0, &first, &nr));
	ASSERT_EQ(ssdp_cmap_next_dirty(&cm, c, 0), 128);
	ssdp_cmap_set_dirty(&cm, c, 0, 1);
	ssdp_cmap_set_dirty(&cm, c, 3, 5);
	ssdp_cmap_set_dirty(&cm, c, 60, 10);	/* crosses a word boundary */
	ssdp_cmap_set_valid(&cm, c, 70, 20);	/* valid, not dirty */
	ssdp_cmap_set_dirty(&cm, c, 127, 1);
	for (from = 0; ssdp_cmap_next_dirty_run(&cm, c, from, &first, &nr);
	     from = first + nr) {
		ASSERT_LT(n, 8);
		got[n][0] = first;
		got[n][1] = nr;
		n++;
	}
	ASSERT_EQ(n, 4);
	ASSERT_EQ(got[0][0], 0);
	ASSERT_EQ(got[0][1], 1);
	ASSERT_EQ(got[1][0], 3);
	ASSERT_EQ(got[1][1], 5);
	ASSERT_EQ(got[2][0], 60);
	ASSERT_EQ(got[2][1], 10);
	ASSERT_EQ(got[3][0], 127);
	ASSERT_EQ(got[3][1], 1);
	ASSERT_EQ(ssdp_cmap_next_dirty(&cm, c, 8), 60);
	/* a run starting mid-run */
	ASSERT_TRUE(ssdp_cmap_next_dirty_run(&cm, c, 65, &first, &nr));
	ASSERT_EQ(first, 65);
	ASSERT_EQ(nr, 5);
	check_ok(&cm);
	ssdp_cmap_destroy(&cm);
}

TEST(cmap_next_dirty_set_cursor)
{
	struct ssdp_cmap cm;
	u32 i;

	ASSERT_EQ(ssdp_cmap_init(&cm, 8, 8), 0);
	for (i = 0; i < 8; i++)
		ssdp_cmap_map(&cm, i * 10);
	ASSERT_EQ(ssdp_cmap_next_dirty_set(&cm, 0), SSDP_NONE);
	ssdp_cmap_set_dirty(&cm, 2, 0, 1);
	ssdp_cmap_set_dirty(&cm, 6, 7, 1);
	ASSERT_EQ(ssdp_cmap_next_dirty_set(&cm, 0), 2);
	ASSERT_EQ(ssdp_cmap_next_dirty_set(&cm, 3), 6);
	ASSERT_EQ(ssdp_cmap_next_dirty_set(&cm, 7), 2);	/* wraps */
	ssdp_cmap_pin(&cm, 2);
	ASSERT_EQ(ssdp_cmap_next_dirty_set(&cm, 0), 6);
	ssdp_cmap_unpin(&cm, 2);
	ssdp_cmap_destroy(&cm);
}

TEST(cmap_restore_and_bits_roundtrip)
{
	struct ssdp_cmap cm, cm2;
	u8 v[32], d[32], v2[32], d2[32];
	u32 order[] = { 5, 2, 7 }, i;

	ASSERT_EQ(ssdp_cmap_init(&cm, 8, 256), 0);
	ASSERT_EQ(ssdp_cmap_set_bytes(&cm), 32);
	/* restore in LRU order, specific csets */
	for (i = 0; i < 3; i++)
		ASSERT_EQ(ssdp_cmap_map_restore(&cm, order[i], 1000 + i, 50 + i), 0);
	ASSERT_EQ(ssdp_cmap_map_restore(&cm, 5, 77, 1), -EBUSY);
	ASSERT_EQ(ssdp_cmap_map_restore(&cm, 3, 1000, 1), -EEXIST);
	ASSERT_EQ(ssdp_cmap_map_restore(&cm, 8, 77, 1), -EINVAL);
	expect_lru(&cm, order, 3);
	/* the free list keeps the others */
	ASSERT_EQ(ssdp_cmap_map(&cm, 50), 0);
	check_ok(&cm);

	ssdp_cmap_set_valid(&cm, 2, 0, 100);
	ssdp_cmap_set_dirty(&cm, 2, 17, 9);
	ssdp_cmap_set_dirty(&cm, 2, 255, 1);
	ssdp_cmap_get_bits(&cm, 2, v, d);
	ASSERT_EQ(v[0], 0xff);
	/* blocks 17..25: bits 1..7 of byte 2, bits 0..1 of byte 3 */
	ASSERT_EQ(d[2], 0xfe);
	ASSERT_EQ(d[3], 0x03);
	ASSERT_EQ(d[31], 0x80);

	ASSERT_EQ(ssdp_cmap_init(&cm2, 8, 256), 0);
	ASSERT_EQ(ssdp_cmap_map_restore(&cm2, 2, 1001, 1), 0);
	ASSERT_EQ(ssdp_cmap_put_bits(&cm2, 2, v, d), 0);
	ASSERT_EQ(ssdp_cmap_nr_valid(&cm2, 2), ssdp_cmap_nr_valid(&cm, 2));
	ASSERT_EQ(ssdp_cmap_nr_dirty(&cm2, 2), 10);
	ssdp_cmap_get_bits(&cm2, 2, v2, d2);
	ASSERT_EQ(memcmp(v, v2, 32), 0);
	ASSERT_EQ(memcmp(d, d2, 32), 0);
	check_ok(&cm2);
	/* dirty without valid is rejected, nothing changed */
	memset(v2, 0, 32);
	ASSERT_EQ(ssdp_cmap_put_bits(&cm2, 2, v2, d), -EINVAL);
	ASSERT_EQ(ssdp_cmap_nr_dirty(&cm2, 2), 10);
	ASSERT_EQ(ssdp_cmap_put_bits(&cm2, 3, v, d), -EINVAL);	/* free */
	/* replacing bits keeps counters exact */
	ASSERT_EQ(ssdp_cmap_put_bits(&cm2, 2, v2, NULL), 0);
	ASSERT_EQ(ssdp_cmap_total_valid(&cm2), 0);
	ASSERT_EQ(ssdp_cmap_nr_dirty_sets(&cm2), 0);
	check_ok(&cm2);
	ssdp_cmap_destroy(&cm2);
	ssdp_cmap_destroy(&cm);
}

TEST(cmap_small_sets_share_words)
{
	struct ssdp_cmap cm;
	u8 v[1], d[1];
	u32 i;

	/* 2 blocks per set: 32 sets per bitmap word on 64-bit */
	ASSERT_EQ(ssdp_cmap_init(&cm, 40, 2), 0);
	for (i = 0; i < 40; i++)
		ssdp_cmap_map(&cm, i);
	ssdp_cmap_set_dirty(&cm, 31, 1, 1);
	ssdp_cmap_set_valid(&cm, 32, 0, 2);
	ASSERT_FALSE(ssdp_cmap_any_valid(&cm, 31, 0, 1));
	ASSERT_TRUE(ssdp_cmap_all_valid(&cm, 32, 0, 2));
	ASSERT_FALSE(ssdp_cmap_any_dirty(&cm, 32, 0, 2));
	ASSERT_EQ(ssdp_cmap_next_dirty(&cm, 30, 0), 2);
	ssdp_cmap_get_bits(&cm, 31, v, d);
	ASSERT_EQ(v[0], 2);
	ASSERT_EQ(d[0], 2);
	check_ok(&cm);
	ssdp_cmap_destroy(&cm);
}

/* Reference model for the randomized test. */
#define RM_SETS		48
#define RM_BLOCKS	32
#define RM_OSETS	200

struct ref_model {
	int cset_of[RM_OSETS];		/* -1: unmapped */
	u64 oset_of[RM_SETS];
	bool mapped[RM_SETS];
	int pins[RM_SETS];
	bool valid[RM_SETS][RM_BLOCKS];
	bool dirty[RM_SETS][RM_BLOCKS];
	u32 lru[RM_SETS];		/* lru[0] = head */
	u32 nr_lru;
};

static void ref_lru_remove(struct ref_model *m, u32 c)
{
	u32 i;

	for (i = 0; i < m->nr_lru; i++)
		if (m->lru[i] == c)
			break;
	memmove(&m->lru[i], &m->lru[i + 1],
		(m->nr_lru - i - 1) * sizeof(m->lru[0]));
	m->nr_lru--;
}

static u64 rnd_state = 0x9e3779b97f4a7c15ULL;

static u32 rnd(u32 n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (u32)(rnd_state % n);
}

static void compare_model(struct ssdp_cmap *cm, struct ref_model *m)
{
	u32 c, i, b;
	u64 tv = 0, td = 0;

	check_ok(cm);
	for (i = 0; i < RM_OSETS; i++)
		ASSERT_EQ(ssdp_cmap_lookup(cm, i),
			  m->cset_of[i] < 0 ? SSDP_NONE : (u32)m->cset_of[i]);
	c = ssdp_cmap_lru_head(cm);
	for (i = 0; i < m->nr_lru; i++) {
		ASSERT_EQ(c, m->lru[i]);
		c = ssdp_cmap_lru_next(cm, c);
	}
	ASSERT_EQ(c, SSDP_NONE);
	for (c = 0; c < RM_SETS; c++) {
		u32 nv = 0, nd = 0;

		ASSERT_EQ(ssdp_cmap_pinned(cm, c), m->pins[c] > 0);
		for (b = 0; b < RM_BLOCKS; b++) {
			ASSERT_EQ(ssdp_cmap_block_valid(cm, c, b),
				  m->valid[c][b]);
			ASSERT_EQ(ssdp_cmap_block_dirty(cm, c, b),
				  m->dirty[c][b]);
			nv += m->valid[c][b];
			nd += m->dirty[c][b];
		}
		ASSERT_EQ(ssdp_cmap_nr_valid(cm, c), nv);
		ASSERT_EQ(ssdp_cmap_nr_dirty(cm, c), nd);
		tv += nv;
		td += nd;
	}
	ASSERT_EQ(ssdp_cmap_total_valid(cm), tv);
	ASSERT_EQ(ssdp_cmap_total_dirty(cm), td);
	ASSERT_EQ(ssdp_cmap_nr_mapped(cm), m->nr_lru);
}

TEST(cmap_randomized_against_model)
{
	static struct ref_model m;
	struct ssdp_cmap cm;
	u32 op, i;

	memset(&m, 0, sizeof(m));
	for (i = 0; i < RM_OSETS; i++)
		m.cset_of[i] = -1;
	ASSERT_EQ(ssdp_cmap_init(&cm, RM_SETS, RM_BLOCKS), 0);

	for (op = 0; op < 100000; op++) {
		u32 o = rnd(RM_OSETS), c = rnd(RM_SETS);
		u32 first = rnd(RM_BLOCKS);
		u32 nr = rnd(RM_BLOCKS - first + 1), b;
		bool any = false;

		switch (rnd(10)) {
		case 0:
		case 1:	/* map if absent */
			if (m.cset_of[o] >= 0) {
				ASSERT_EQ(ssdp_cmap_lookup(&cm, o),
					  (u32)m.cset_of[o]);
				break;
			}
			c = ssdp_cmap_map(&cm, o);
			if (m.nr_lru == RM_SETS) {
				ASSERT_EQ(c, SSDP_NONE);
				break;
			}
			ASSERT_LT(c, RM_SETS);
			ASSERT_FALSE(m.mapped[c]);
			m.mapped[c] = true;
			m.cset_of[o] = c;
			m.oset_of[c] = o;
			m.lru[m.nr_lru++] = c;
			break;
		case 2:	/* unmap if allowed (clean, unpinned) */
			if (!m.mapped[c] || m.pins[c])
				break;
			for (b = 0; b < RM_BLOCKS; b++)
				any |= m.dirty[c][b];
			if (any)
				ssdp_cmap_clear_dirty(&cm, c, 0, RM_BLOCKS);
			ASSERT_EQ(ssdp_cmap_unmap(&cm, c), 0);
			memset(m.valid[c], 0, sizeof(m.valid[c]));
			memset(m.dirty[c], 0, sizeof(m.dirty[c]));
			m.mapped[c] = false;
			m.cset_of[m.oset_of[c]] = -1;
			ref_lru_remove(&m, c);
			break;
		case 3:	/* touch */
			if (!m.mapped[c])
				break;
			ssdp_cmap_touch(&cm, c);
			ref_lru_remove(&m, c);
			m.lru[m.nr_lru++] = c;
			break;
		case 4:	/* pin / unpin */
			if (!m.mapped[c])
				break;
			if (m.pins[c] && rnd(2)) {
				ssdp_cmap_unpin(&cm, c);
				m.pins[c]--;
			} else if (m.pins[c] < 3) {
				ssdp_cmap_pin(&cm, c);
				m.pins[c]++;
			}
			break;
		case 5:
			if (!m.mapped[c])
				break;
			ssdp_cmap_set_valid(&cm, c, first, nr);
			for (b = first; b < first + nr; b++)
				m.valid[c][b] = true;
			break;
		case 6:
			if (!m.mapped[c])
				break;
			ssdp_cmap_set_dirty(&cm, c, first, nr);
			for (b = first; b < first + nr; b++) {
				m.valid[c][b] = true;
				m.dirty[c][b] = true;
			}
			break;
		case 7:
			ssdp_cmap_clear_valid(&cm, c, first, nr);
			for (b = first; b < first + nr; b++) {
				m.valid[c][b] = false;
				m.dirty[c][b] = false;
			}
			break;
		case 8:
			ssdp_cmap_clear_dirty(&cm, c, first, nr);
			for (b = first; b < first + nr; b++)
				m.dirty[c][b] = false;
			break;
		case 9:	/* queries */
			for (b = first; b < first + nr; b++)
				any |= m.dirty[c][b];
			ASSERT_EQ(ssdp_cmap_any_dirty(&cm, c, first, nr), any);
			any = nr > 0;
			for (b = first; b < first + nr; b++)
				any &= m.valid[c][b];
			ASSERT_EQ(ssdp_cmap_all_valid(&cm, c, first, nr),
				  any || !nr);
			break;
		}
		if (op % 997 == 0)
			compare_model(&cm, &m);
	}
	compare_model(&cm, &m);
	ssdp_cmap_destroy(&cm);
}

TEST(cmap_limbo_holds_unmapped_sets_until_released)
{
	struct ssdp_cmap cm;
	u32 a, b, c;

	ASSERT_EQ(ssdp_cmap_init(&cm, 3, 8), 0);
	a = ssdp_cmap_map(&cm, 10);
	b = ssdp_cmap_map(&cm, 11);
	c = ssdp_cmap_map(&cm, 12);
	ASSERT_EQ(ssdp_cmap_nr_free(&cm), 0);
	ASSERT_EQ(ssdp_cmap_unmap_deferred(&cm, b), 0);
	ASSERT_EQ(ssdp_cmap_unmap_deferred(&cm, a), 0);
	check_ok(&cm);
	/* In limbo: neither mapped nor allocatable. */
	ASSERT_EQ(ssdp_cmap_nr_limbo(&cm), 2);
	ASSERT_EQ(ssdp_cmap_nr_free(&cm), 0);
	ASSERT_EQ(ssdp_cmap_lookup(&cm, 11), SSDP_NONE);
	ASSERT_EQ(ssdp_cmap_map(&cm, 20), SSDP_NONE);
	/* FIFO: the first to enter is the first released. */
	ssdp_cmap_release_limbo(&cm, 1);
	check_ok(&cm);
	ASSERT_EQ(ssdp_cmap_nr_limbo(&cm), 1);
	ASSERT_EQ(ssdp_cmap_map(&cm, 20), b);
	ssdp_cmap_release_limbo(&cm, 5);
	ASSERT_EQ(ssdp_cmap_nr_limbo(&cm), 0);
	ASSERT_EQ(ssdp_cmap_map(&cm, 21), a);
	ASSERT_EQ(ssdp_cmap_lookup(&cm, 12), c);
	check_ok(&cm);
	ssdp_cmap_destroy(&cm);
}

TEST(cmap_changed_bits_track_persistent_state)
{
	struct ssdp_cmap cm;
	u32 a, b;

	ASSERT_EQ(ssdp_cmap_init(&cm, 4, 8), 0);
	ASSERT_EQ(ssdp_cmap_next_changed(&cm, 0), SSDP_NONE);
	a = ssdp_cmap_map(&cm, 1);
	b = ssdp_cmap_map(&cm, 2);
	ASSERT_EQ(ssdp_cmap_next_changed(&cm, 0), a < b ? a : b);
	ssdp_cmap_clear_changed(&cm, a);
	ssdp_cmap_clear_changed(&cm, b);
	ASSERT_EQ(ssdp_cmap_next_changed(&cm, 0), SSDP_NONE);

	/* LRU moves and no-op bit changes are not persistent changes. */
	ssdp_cmap_touch(&cm, a);
	ssdp_cmap_clear_valid(&cm, a, 0, 8);
	ASSERT_EQ(ssdp_cmap_next_changed(&cm, 0), SSDP_NONE);

	ssdp_cmap_set_valid(&cm, a, 0, 2);
	ASSERT_EQ(ssdp_cmap_next_changed(&cm, 0), a);
	ssdp_cmap_clear_changed(&cm, a);
	ssdp_cmap_set_valid(&cm, a, 0, 2);
	ASSERT_EQ(ssdp_cmap_next_changed(&cm, 0), SSDP_NONE);
	ssdp_cmap_set_dirty(&cm, a, 1, 1);
	ASSERT_EQ(ssdp_cmap_next_changed(&cm, 0), a);
	ssdp_cmap_clear_changed(&cm, a);
	ssdp_cmap_clear_dirty(&cm, a, 0, 8);
	ASSERT_EQ(ssdp_cmap_next_changed(&cm, 0), a);
	ssdp_cmap_clear_changed(&cm, a);
	ssdp_cmap_clear_valid(&cm, a, 0, 8);
	ASSERT_EQ(ssdp_cmap_next_changed(&cm, 0), a);
	ssdp_cmap_clear_changed(&cm, a);
	ASSERT_EQ(ssdp_cmap_unmap_deferred(&cm, b), 0);
	ASSERT_EQ(ssdp_cmap_next_changed(&cm, 0), b);
	ssdp_cmap_destroy(&cm);
}

TEST(cmap_map_seq_orders_mappings_across_restore)
{
	struct ssdp_cmap cm;
	u32 a, b;

	ASSERT_EQ(ssdp_cmap_init(&cm, 4, 8), 0);
	ASSERT_EQ(ssdp_cmap_map_restore(&cm, 2, 10, 40), 0);
	ASSERT_EQ(ssdp_cmap_map_seq(&cm, 2), 40);
	/* New mappings after a load come later than every loaded one. */
	a = ssdp_cmap_map(&cm, 11);
	ASSERT_EQ(ssdp_cmap_map_seq(&cm, a), 41);
	ASSERT_EQ(ssdp_cmap_unmap(&cm, a), 0);
	/* The same origin set mapped again: a later generation. */
	b = ssdp_cmap_map(&cm, 11);
	ASSERT_GT(ssdp_cmap_map_seq(&cm, b), 41);
	ssdp_cmap_destroy(&cm);
}

/*
 * The dirty list is in order of each set's first dirty block (cleaning
 * takes the oldest first), stamped with the caller's clock; a set leaves it
 * when its last dirty block is cleaned, written over by a discard or the
 * set is unmapped, and comes back at the tail, with a new stamp.
 */
TEST(cmap_dirty_list_oldest_first)
{
	struct ssdp_cmap cm;
	u32 a, b, c;

	ASSERT_EQ(ssdp_cmap_init(&cm, 4, 16), 0);
	ASSERT_EQ(ssdp_cmap_oldest_dirty(&cm), SSDP_NONE);
	a = ssdp_cmap_map(&cm, 10);
	b = ssdp_cmap_map(&cm, 11);
	c = ssdp_cmap_map(&cm, 12);
	cm.clock = 100;
	ssdp_cmap_set_dirty(&cm, b, 0, 2);
	cm.clock = 200;
	ssdp_cmap_set_dirty(&cm, a, 3, 1);
	ssdp_cmap_set_dirty(&cm, b, 5, 1);	/* already dirty: keeps 100 */
	cm.clock = 300;
	ssdp_cmap_set_dirty(&cm, c, 0, 16);
	check_ok(&cm);
	ASSERT_EQ(ssdp_cmap_oldest_dirty(&cm), b);
	ASSERT_EQ(ssdp_cmap_dirty_since(&cm, b), 100);
	ASSERT_EQ(ssdp_cmap_dirty_since(&cm, a), 200);

	/* Pinned (under writeback): the next one for cleaning. */
	ssdp_cmap_pin(&cm, b);
	ASSERT_EQ(ssdp_cmap_oldest_dirty(&cm), b);
	ASSERT_EQ(ssdp_cmap_oldest_dirty_unpinned(&cm, 8), a);
	ASSERT_EQ(ssdp_cmap_oldest_dirty_unpinned(&cm, 1), SSDP_NONE);
	ssdp_cmap_unpin(&cm, b);

	/* Partly cleaned: stays, with its age. */
	ssdp_cmap_clear_dirty(&cm, b, 0, 1);
	ASSERT_EQ(ssdp_cmap_oldest_dirty(&cm), b);
	/* All clean: leaves; dirtied again: at the tail, young. */
	ssdp_cmap_clear_dirty(&cm, b, 0, 16);
	check_ok(&cm);
	ASSERT_EQ(ssdp_cmap_oldest_dirty(&cm), a);
	cm.clock = 400;
	ssdp_cmap_set_dirty(&cm, b, 7, 1);
	ASSERT_EQ(ssdp_cmap_dirty_since(&cm, b), 400);
	/* A discard throws a's dirty block away. */
	ssdp_cmap_clear_valid(&cm, a, 0, 16);
	ASSERT_EQ(ssdp_cmap_oldest_dirty(&cm), c);
	check_ok(&cm);
	ssdp_cmap_clear_dirty(&cm, c, 0, 16);
	ASSERT_EQ(ssdp_cmap_oldest_dirty(&cm), b);
	ASSERT_EQ(ssdp_cmap_unmap(&cm, c), 0);
	ssdp_cmap_clear_dirty(&cm, b, 0, 16);
	ASSERT_EQ(ssdp_cmap_oldest_dirty(&cm), SSDP_NONE);
	ASSERT_EQ(ssdp_cmap_oldest_dirty_unpinned(&cm, 8), SSDP_NONE);
	check_ok(&cm);
	ssdp_cmap_destroy(&cm);
}

/*
 * A victim that costs no I/O: the coldest clean set, not the LRU head when
 * that one is dirty, within the scan bound, never a pinned one.
 */
TEST(cmap_clean_victim_skips_dirty_and_pinned)
{
	struct ssdp_cmap cm;
	u32 s[6], i;

	ASSERT_EQ(ssdp_cmap_init(&cm, 6, 8), 0);
	ASSERT_EQ(ssdp_cmap_clean_victim(&cm, 8), SSDP_NONE);
	for (i = 0; i < 6; i++)
		s[i] = ssdp_cmap_map(&cm, 100 + i);	/* s[0] coldest */
	ssdp_cmap_set_dirty(&cm, s[0], 0, 1);
	ssdp_cmap_set_dirty(&cm, s[1], 0, 1);
	ssdp_cmap_pin(&cm, s[2]);
	ASSERT_EQ(ssdp_cmap_clean_victim(&cm, 8), s[3]);
	/* s[0], s[1] and s[3] are the first three unpinned ones. */
	ASSERT_EQ(ssdp_cmap_clean_victim(&cm, 2), SSDP_NONE);
	ASSERT_EQ(ssdp_cmap_clean_victim(&cm, 3), s[3]);
	ssdp_cmap_touch(&cm, s[3]);
	ASSERT_EQ(ssdp_cmap_clean_victim(&cm, 8), s[4]);
	ssdp_cmap_unpin(&cm, s[2]);
	ASSERT_EQ(ssdp_cmap_clean_victim(&cm, 8), s[2]);
	check_ok(&cm);
	ssdp_cmap_destroy(&cm);
}

/*
 * When every cold set is dirty, the clean ones are the sets promotion just
 * filled: evicting them would throw the hottest data away, every time.
 */
TEST(cmap_clean_victim_never_in_the_warmer_half)
{
	struct ssdp_cmap cm;
	u32 s[5], i;

	ASSERT_EQ(ssdp_cmap_init(&cm, 8, 8), 0);
	for (i = 0; i < 5; i++)
		s[i] = ssdp_cmap_map(&cm, 100 + i);	/* s[0] coldest */
	for (i = 0; i < 3; i++)
		ssdp_cmap_set_dirty(&cm, s[i], 0, 1);
	/* s[3] and s[4] are clean, in the warmer half of five. */
	ASSERT_EQ(ssdp_cmap_clean_victim(&cm, 64), SSDP_NONE);
	ssdp_cmap_clear_dirty(&cm, s[2], 0, 1);
	ASSERT_EQ(ssdp_cmap_clean_victim(&cm, 64), s[2]);
	/* One mapped set is its own colder half. */
	ssdp_cmap_clear_dirty(&cm, s[1], 0, 1);
	for (i = 1; i < 5; i++)
		ASSERT_EQ(ssdp_cmap_unmap(&cm, s[i]), 0);
	ASSERT_EQ(ssdp_cmap_clean_victim(&cm, 64), SSDP_NONE);
	ssdp_cmap_clear_dirty(&cm, s[0], 0, 1);
	ASSERT_EQ(ssdp_cmap_clean_victim(&cm, 64), s[0]);
	check_ok(&cm);
	ssdp_cmap_destroy(&cm);
}
