// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>

#include "harness.h"
#include "wb_track.h"

static struct ssdp_wb_track *wbt_new(u32 set_blocks, const u32 *lines,
				     u32 nr)
{
	struct ssdp_wb_track *t = calloc(1, ssdp_wbt_size(set_blocks));

	ssdp_wbt_init(t, set_blocks, lines, nr);
	return t;
}

TEST(wbt_write_to_another_line_is_not_tracked)
{
	static const u32 lines[] = { 0x31, 0x52 };
	struct ssdp_wb_track *t = wbt_new(256, lines, 2);
	u32 first = 0, nr = 256;

	ASSERT_EQ(ssdp_wbt_index(t, 0x52), 1);
	ASSERT_EQ(ssdp_wbt_index(t, 0x33), SSDP_NONE);
	ASSERT_TRUE(ssdp_wbt_write(t, 0x33, 0, 256));
	ASSERT_TRUE(ssdp_wbt_untouched_run(t, 0, &first, &nr));
	ASSERT_EQ(first, 0);
	ASSERT_EQ(nr, 256);
	ASSERT_FALSE(ssdp_wbt_any_touched(t, 1, 0, 256));
	free(t);
}

TEST(wbt_window_refuses_overlapping_writes_until_cleared)
{
	static const u32 lines[] = { 0x10, 0x20 };
	struct ssdp_wb_track *t = wbt_new(64, lines, 2);

	ssdp_wbt_window_add(t, 0, 10, 4);
	ssdp_wbt_window_add(t, 0, 14, 2);	/* extends: 10..15 */
	ssdp_wbt_window_add(t, 1, 0, 3);
	ASSERT_EQ(t->nr_win, 2);
	ASSERT_FALSE(ssdp_wbt_write(t, 0x10, 15, 1));
	ASSERT_FALSE(ssdp_wbt_write(t, 0x10, 8, 3));
	ASSERT_FALSE(ssdp_wbt_write(t, 0x20, 2, 5));
	/* Refused writes touch nothing: they have not gone in. */
	ASSERT_FALSE(ssdp_wbt_any_touched(t, 0, 0, 64));
	ASSERT_TRUE(ssdp_wbt_write(t, 0x10, 16, 1));
	ASSERT_TRUE(ssdp_wbt_write(t, 0x10, 9, 1));
	ASSERT_TRUE(ssdp_wbt_write(t, 0x20, 3, 1));
	ASSERT_TRUE(ssdp_wbt_window_clear(t));
	ASSERT_FALSE(ssdp_wbt_window_clear(t));	/* noted once */
	ASSERT_TRUE(ssdp_wbt_write(t, 0x10, 12, 1));
	ASSERT_FALSE(ssdp_wbt_window_clear(t));
	ASSERT_TRUE(ssdp_wbt_any_touched(t, 0, 12, 1));
	free(t);
}

/*
 * The first untouched stretch of [first, first + nr) of line @idx, packed
 * as first << 16 | nr; the run as it was, with bit 31, when there is none.
 */
static u32 untouched(const struct ssdp_wb_track *t, u32 idx, u32 first, u32 nr)
{
	bool found = ssdp_wbt_untouched_run(t, idx, &first, &nr);

	return (found ? 0 : 1U << 31) | first << 16 | nr;
}

TEST(wbt_touched_blocks_split_runs)
{
	static const u32 lines[] = { 0x10, 0x20 };
	struct ssdp_wb_track *t = wbt_new(64, lines, 2);

	ASSERT_TRUE(ssdp_wbt_write(t, 0x20, 5, 2));
	ASSERT_TRUE(ssdp_wbt_write(t, 0x20, 12, 4));
	ASSERT_EQ(untouched(t, 1, 0, 16), 0U << 16 | 5);
	ASSERT_EQ(untouched(t, 1, 5, 11), 7U << 16 | 5);
	/* All touched: none, the run left as it was. */
	ASSERT_EQ(untouched(t, 1, 12, 4), 1U << 31 | 12U << 16 | 4);
	/* The other line shares no bit with it. */
	ASSERT_EQ(untouched(t, 0, 0, 64), 0U << 16 | 64);
	ASSERT_TRUE(ssdp_wbt_any_touched(t, 1, 4, 2));
	ASSERT_FALSE(ssdp_wbt_any_touched(t, 1, 7, 5));
	free(t);
}

/* Small sets: a line's bits do not start on a word. */
TEST(wbt_small_sets_keep_lines_apart)
{
	u32 lines[SSDP_WB_MAX_LINES], i, first, nr;
	struct ssdp_wb_track *t;

	for (i = 0; i < SSDP_WB_MAX_LINES; i++)
		lines[i] = i * 16 + 1;
	t = wbt_new(4, lines, SSDP_WB_MAX_LINES);
	for (i = 0; i < SSDP_WB_MAX_LINES; i += 2)
		ASSERT_TRUE(ssdp_wbt_write(t, lines[i], 0, 4));
	for (i = 0; i < SSDP_WB_MAX_LINES; i++) {
		first = 0;
		nr = 4;
		ASSERT_EQ(ssdp_wbt_untouched_run(t, i, &first, &nr), i & 1);
		ASSERT_EQ(ssdp_wbt_any_touched(t, i, 0, 4), !(i & 1));
	}
	free(t);
}

/*
 * A flush owes data: a block a write went into before the writeback
 * gathered it keeps its older data until a whole-block write of it has
 * completed; one rewritten after the gather was copied first.
 */
TEST(wbt_older_data_left_only_where_not_copied)
{
	static const u32 lines[] = { 0x10, 0x20 };
	struct ssdp_wb_track *t = wbt_new(16, lines, 2);

	ASSERT_FALSE(ssdp_wbt_older_left(t, 0));
	/* Gathered and read, then rewritten in part: it went out first. */
	ssdp_wbt_window_add(t, 0, 0, 4);
	ssdp_wbt_window_clear(t);
	ASSERT_TRUE(ssdp_wbt_write(t, 0x10, 2, 1));
	ASSERT_FALSE(ssdp_wbt_older_left(t, 0));
	/* Written whole before it was gathered: left while in flight... */
	ASSERT_TRUE(ssdp_wbt_write(t, 0x10, 5, 2));
	ASSERT_TRUE(ssdp_wbt_older_left(t, 0));
	/* ...or where the write completed on part of it only. */
	ssdp_wbt_overwritten(t, 0x10, 5, 1);
	ASSERT_TRUE(ssdp_wbt_older_left(t, 0));
	ssdp_wbt_overwritten(t, 0x10, 6, 1);
	ASSERT_FALSE(ssdp_wbt_older_left(t, 0));
	/* A partial write after that leaves nothing older either. */
	ASSERT_TRUE(ssdp_wbt_write(t, 0x10, 5, 1));
	ASSERT_FALSE(ssdp_wbt_older_left(t, 0));
	/* In part, before the gather, never replaced: left. */
	ASSERT_TRUE(ssdp_wbt_write(t, 0x20, 7, 1));
	ASSERT_TRUE(ssdp_wbt_older_left(t, 1));
	ASSERT_FALSE(ssdp_wbt_older_left(t, 0));
	/* A line not the writeback's is not its business. */
	ASSERT_TRUE(ssdp_wbt_write(t, 0x30, 0, 1));
	ssdp_wbt_overwritten(t, 0x30, 0, 1);
	ASSERT_FALSE(ssdp_wbt_older_left(t, 0));
	ASSERT_TRUE(ssdp_wbt_older_left(t, 1));
	free(t);
}

/*
 * Failed notes are a bitmap of their own: they neither touch a block nor
 * are touched by a write, each is taken once, and the last line's last
 * block of the largest tracker is one too (the allocation holds both maps).
 */
TEST(wbt_failed_notes_apart_from_touched)
{
	u32 lines[SSDP_WB_MAX_LINES], i, last = SSDP_WB_MAX_LINES - 1;
	struct ssdp_wb_track *t;

	for (i = 0; i < SSDP_WB_MAX_LINES; i++)
		lines[i] = i + 100;
	t = wbt_new(256, lines, SSDP_WB_MAX_LINES);
	ASSERT_TRUE(ssdp_wbt_write(t, lines[0], 5, 1));
	ASSERT_FALSE(ssdp_wbt_failed_take(t, 0, 5));
	ssdp_wbt_failed_note(t, 1, 7);
	ssdp_wbt_failed_note(t, last, 255);
	ASSERT_FALSE(ssdp_wbt_any_touched(t, 1, 0, 256));
	ASSERT_FALSE(ssdp_wbt_any_touched(t, last, 0, 256));
	ASSERT_FALSE(ssdp_wbt_failed_take(t, 1, 6));
	ASSERT_FALSE(ssdp_wbt_failed_take(t, 0, 7));
	ASSERT_TRUE(ssdp_wbt_failed_take(t, 1, 7));
	ASSERT_FALSE(ssdp_wbt_failed_take(t, 1, 7));	/* taken */
	ASSERT_TRUE(ssdp_wbt_failed_take(t, last, 255));
	/* Out of range: ignored. */
	ssdp_wbt_failed_note(t, SSDP_WB_MAX_LINES, 0);
	ssdp_wbt_failed_note(t, 0, 256);
	ASSERT_FALSE(ssdp_wbt_failed_take(t, 0, 256));
	ASSERT_TRUE(ssdp_wbt_any_touched(t, 0, 5, 1));
	ASSERT_FALSE(ssdp_wbt_older_left(t, 1));
	free(t);
}

/*
 * A writeback and user writes interleaved at random, against a model: no
 * write goes in while the writeback reads its blocks, and what the
 * writeback may mark clean at the end (the untouched runs of what it
 * wrote) holds no block a write went into, before or after it was read;
 * and it says it left older data behind exactly where a write went into a
 * block before it was gathered and no whole-block write completed since.
 */
TEST(wbt_random_interleaving_never_cleans_a_rewritten_block)
{
	enum { SB = 32, NL = 3 };
	static const u32 lines[NL] = { 0x11, 0x21, 0x31 };
	u32 iter, step, idx, first, nr, b, pos;
	bool model_touched[NL][SB], model_win[NL][SB];
	bool model_gathered[NL][SB], model_replaced[NL][SB], model_kept[NL][SB];
	bool any_kept;
	struct ssdp_wb_track *t;
	unsigned int seed = 7;

	for (iter = 0; iter < 500; iter++) {
		t = wbt_new(SB, lines, NL);
		memset(model_touched, 0, sizeof(model_touched));
		memset(model_gathered, 0, sizeof(model_gathered));
		memset(model_replaced, 0, sizeof(model_replaced));
		memset(model_kept, 0, sizeof(model_kept));
		memset(model_win, 0, sizeof(model_win));
		for (step = 0; step < 60; step++) {
			idx = rand_r(&seed) % NL;
			first = rand_r(&seed) % SB;
			nr = 1 + rand_r(&seed) % (SB - first);
			switch (rand_r(&seed) % 3) {
			case 0: {	/* a user write */
				bool meets = false, done = rand_r(&seed) % 2;

				for (b = first; b < first + nr; b++)
					meets |= model_win[idx][b];
				ASSERT_EQ(ssdp_wbt_write(t, lines[idx], first,
							 nr), !meets);
				if (meets)
					break;
				for (b = first; b < first + nr; b++) {
					model_touched[idx][b] = true;
					if (!model_gathered[idx][b] &&
					    !model_replaced[idx][b])
						model_kept[idx][b] = true;
				}
				/* Whole blocks, completed (else in flight). */
				if (!done)
					break;
				ssdp_wbt_overwritten(t, lines[idx], first, nr);
				for (b = first; b < first + nr; b++) {
					model_kept[idx][b] = false;
					model_replaced[idx][b] = true;
				}
				break;
			}
			case 1:		/* the writeback gathers a run */
				if (!ssdp_wbt_untouched_run(t, idx, &first,
							    &nr))
					break;
				for (b = first; b < first + nr; b++) {
					ASSERT_FALSE(model_touched[idx][b]);
					model_win[idx][b] = true;
					model_gathered[idx][b] = true;
				}
				ssdp_wbt_window_add(t, idx, first, nr);
				break;
			default:	/* its reads are done */
				ssdp_wbt_window_clear(t);
				memset(model_win, 0, sizeof(model_win));
				break;
			}
		}
		/* What it may mark clean at the end. */
		for (idx = 0; idx < NL; idx++)
			for (pos = 0; pos < SB; pos = first + nr) {
				first = pos;
				nr = SB - pos;
				if (!ssdp_wbt_untouched_run(t, idx, &first,
							    &nr))
					break;
				for (b = first; b < first + nr; b++)
					ASSERT_FALSE(model_touched[idx][b]);
			}
		/* What it left of the data from before it started. */
		for (idx = 0; idx < NL; idx++) {
			any_kept = false;
			for (b = 0; b < SB; b++)
				any_kept |= model_kept[idx][b];
			ASSERT_EQ(ssdp_wbt_older_left(t, idx), any_kept);
		}
		free(t);
	}
}
