// SPDX-License-Identifier: GPL-2.0
#include "harness.h"
#include "evict_sm.h"
#include "frame_map.h"

#define MS	1000000ULL
#define WAIT	(1000 * MS)

static struct ssdp_evict_view view(u32 nr_free, u32 dirty_sets,
				   enum ssdp_evict_head head)
{
	struct ssdp_evict_view v = {
		.nr_free = nr_free, .nr_dirty_sets = dirty_sets, .head = head,
	};

	return v;
}

static enum ssdp_evict_act_type next(struct ssdp_evict_sm *sm, u64 now,
				     u32 nr_free, u32 dirty_sets,
				     enum ssdp_evict_head head, u64 *deadline)
{
	struct ssdp_evict_view v = view(nr_free, dirty_sets, head);
	struct ssdp_evict_action a = ssdp_esm_next_action(sm, now, &v);

	if (deadline)
		*deadline = a.deadline;
	return a.type;
}

/* free_floor 10, wait 1 s, 4 in flight */
static void setup(struct ssdp_evict_sm *sm)
{
	ssdp_esm_init(sm, 10, WAIT, 4);
	ASSERT_EQ(ssdp_esm_state(sm), SSDP_EVICT_NORMAL);
}

TEST(evict_normal_idle_above_floor)
{
	struct ssdp_evict_sm sm;

	setup(&sm);
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 10, 0, 0));
	ASSERT_TRUE(ssdp_esm_needs_run(&sm, 9, 0, 0));
	ASSERT_EQ(next(&sm, 0, 10, 5, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(next(&sm, 0, 50, 5, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
	ASSERT_EQ(sm.sets_evicted, 0);
}

TEST(evict_clean_head_freed_at_once)
{
	struct ssdp_evict_sm sm;

	setup(&sm);
	ASSERT_EQ(next(&sm, 5, 9, 3, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_FREE_CLEAN_HEAD);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
	ASSERT_EQ(next(&sm, 5, 10, 3, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(sm.sets_evicted, 1);
	/* no sets mapped or all pinned: nothing to do, no state change */
	ASSERT_EQ(next(&sm, 5, 3, 0, SSDP_HEAD_NONE, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
}

TEST(evict_dirty_head_enters_wait_then_writeback)
{
	struct ssdp_evict_sm sm;
	u64 dl;

	setup(&sm);
	ssdp_esm_io_arrival(&sm, 100 * MS);
	ASSERT_EQ(next(&sm, 100 * MS, 9, 20, SSDP_HEAD_DIRTY, &dl),
		  SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_WAIT);
	ASSERT_EQ(dl, 100 * MS + WAIT);
	ASSERT_EQ(sm.state_entries[SSDP_EVICT_WAIT], 1);
	/* an early wake-up only re-arms */
	ssdp_esm_timer(&sm);
	ASSERT_EQ(next(&sm, 600 * MS, 9, 20, SSDP_HEAD_DIRTY, &dl),
		  SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(dl, 100 * MS + WAIT);
	/* quiet for evict_wait: writeback of LRU-head sets */
	ASSERT_EQ(next(&sm, 1100 * MS, 9, 20, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_WRITEBACK);
	ASSERT_EQ(sm.wb_started, 1);
	/* free + in flight = 10 = floor: no second set */
	ASSERT_EQ(next(&sm, 1100 * MS, 9, 19, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_TRUE(ssdp_esm_needs_run(&sm, 100, 0, 0));
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	ASSERT_EQ(sm.sets_evicted, 1);
	ASSERT_EQ(next(&sm, 1200 * MS, 10, 19, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
	ASSERT_EQ(sm.state_entries[SSDP_EVICT_NORMAL], 2);
}

/*
 * Every arrival restarts the quiet window.  Without a max wait (the
 * paper's rule) it waits for ever.  With one, it does not: max_wait after
 * running short, it writes the head back under pressure, one set at a
 * time; a real quiet window then gives the full writeback phase.
 */
TEST(evict_wait_restarted_by_every_arrival_then_pressure)
{
	struct ssdp_evict_sm sm;
	struct ssdp_evict_view v = view(5, 20, SSDP_HEAD_DIRTY);
	struct ssdp_evict_action a;
	u64 dl, t;
	int i;

	setup(&sm);
	ASSERT_EQ(next(&sm, 0, 5, 20, SSDP_HEAD_DIRTY, &dl),
		  SSDP_EVICT_ACT_ARM_TIMER);
	for (t = 900 * MS; t < 20000 * MS; t += 900 * MS) {
		ssdp_esm_io_arrival(&sm, t);
		ASSERT_EQ(next(&sm, dl, 5, 20, SSDP_HEAD_DIRTY, &dl),
			  SSDP_EVICT_ACT_ARM_TIMER);
		ASSERT_EQ(dl, t + WAIT);
	}
	ASSERT_EQ(sm.wb_started, 0);

	setup(&sm);
	ssdp_esm_set_max_wait(&sm, WAIT);
	ASSERT_EQ(next(&sm, 0, 5, 20, SSDP_HEAD_DIRTY, &dl),
		  SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(dl, WAIT);
	ssdp_esm_io_arrival(&sm, 900 * MS);
	ASSERT_EQ(next(&sm, 950 * MS, 5, 20, SSDP_HEAD_DIRTY, &dl),
		  SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(dl, WAIT);			/* the pressure point */
	/* arrivals every 100 ms: no quiet window, pressure one at a time */
	for (i = 0, t = WAIT; i < 20; i++, t += 100 * MS) {
		ssdp_esm_io_arrival(&sm, t);
		a = ssdp_esm_next_action(&sm, t, &v);
		ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_WRITEBACK);
		ASSERT_TRUE(a.pressure);
		ASSERT_EQ(ssdp_esm_next_action(&sm, t, &v).type,
			  SSDP_EVICT_ACT_NONE);
		ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_WAIT);
		ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	}
	ASSERT_EQ(sm.pressure_started, 20);
	ASSERT_EQ(sm.state_entries[SSDP_EVICT_WAIT], 1);
	/* quiet at last: the writeback phase, evict_inflight at once */
	t += WAIT;
	for (i = 0; i < 4; i++) {
		a = ssdp_esm_next_action(&sm, t, &v);
		ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_WRITEBACK);
		ASSERT_FALSE(a.pressure);
	}
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_WRITEBACK);
	ASSERT_EQ(sm.pressure_started, 20);
	/* a clean head while waiting is still freed at once */
	setup(&sm);
	next(&sm, 0, 5, 20, SSDP_HEAD_DIRTY, NULL);
	ASSERT_EQ(next(&sm, 10, 5, 20, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_FREE_CLEAN_HEAD);
	/* space came back (discard, clean frees): wait -> normal */
	ASSERT_EQ(next(&sm, 20, 10, 20, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
}

/*
 * Past the pressure point with every set pinned (no head to write back):
 * the timer is armed for the end of the quiet window, never for a time
 * already gone (the work would sleep for days).
 */
TEST(evict_pressure_past_with_pinned_head_arms_ahead)
{
	struct ssdp_evict_sm sm;
	u64 dl, t;

	setup(&sm);
	ssdp_esm_set_max_wait(&sm, WAIT);
	ASSERT_EQ(next(&sm, 0, 5, 20, SSDP_HEAD_DIRTY, &dl),
		  SSDP_EVICT_ACT_ARM_TIMER);
	for (t = 100 * MS; t <= 3 * WAIT; t += 100 * MS) {
		ssdp_esm_io_arrival(&sm, t);
		ASSERT_EQ(next(&sm, t + MS, 5, 20, SSDP_HEAD_NONE, &dl),
			  SSDP_EVICT_ACT_ARM_TIMER);
		ASSERT_TRUE(dl > t + MS);
		ASSERT_EQ(dl, t < WAIT ? min(WAIT, t + WAIT) : t + WAIT);
	}
	ASSERT_EQ(sm.wb_started, 0);
}

/* enter writeback at time 'at' with nr_free free sets */
static void to_writeback(struct ssdp_evict_sm *sm, u64 at, u32 nr_free)
{
	setup(sm);
	ASSERT_EQ(next(sm, 0, nr_free, 50, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(next(sm, at, nr_free, 50, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_WRITEBACK);
}

TEST(evict_writeback_inflight_limit_and_refill)
{
	struct ssdp_evict_sm sm;
	u64 t = WAIT;
	int i;

	to_writeback(&sm, t, 0);
	for (i = 1; i < 4; i++)
		ASSERT_EQ(next(&sm, t, 0, 50, SSDP_HEAD_DIRTY, NULL),
			  SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_EQ(ssdp_esm_inflight(&sm), 4);
	ASSERT_EQ(next(&sm, t, 0, 50, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	/* clean sets behind are freed even with 4 in flight */
	ASSERT_EQ(next(&sm, t, 0, 50, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_FREE_CLEAN_HEAD);
	/* each completion lets one more start */
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	ASSERT_EQ(next(&sm, t, 2, 49, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_EQ(next(&sm, t, 2, 49, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	/* all pinned: nothing to start */
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	ASSERT_EQ(next(&sm, t, 3, 48, SSDP_HEAD_NONE, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_WRITEBACK);
	/* finish: 3 in flight; free 7 + 3 = floor -> wait for them */
	ASSERT_EQ(next(&sm, t, 7, 48, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_WRITEBACK);
	for (i = 0; i < 3; i++)
		ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	ASSERT_EQ(next(&sm, t, 10, 45, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
	ASSERT_EQ(sm.wb_started, 5);
	ASSERT_EQ(sm.sets_evicted, 6);
	ASSERT_EQ(ssdp_esm_inflight(&sm), 0);
}

TEST(evict_writeback_interrupted_by_io)
{
	struct ssdp_evict_sm sm;
	u64 t = WAIT, dl;

	to_writeback(&sm, t, 0);
	ASSERT_EQ(next(&sm, t, 0, 50, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_WRITEBACK);
	ssdp_esm_io_arrival(&sm, t + 5 * MS);
	/* no new set starts while the two finish */
	ASSERT_EQ(next(&sm, t + 6 * MS, 0, 50, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	ASSERT_EQ(next(&sm, t + 7 * MS, 1, 49, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_WRITEBACK);
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	/* last one done: back to wait, quiet timer restarted from now */
	ASSERT_EQ(next(&sm, t + 50 * MS, 2, 48, SSDP_HEAD_DIRTY, &dl),
		  SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_WAIT);
	ASSERT_EQ(dl, t + 50 * MS + WAIT);
	ASSERT_EQ(sm.state_entries[SSDP_EVICT_WAIT], 2);
	/* quiet again: writeback resumes */
	ASSERT_EQ(next(&sm, dl, 2, 48, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_EQ(sm.state_entries[SSDP_EVICT_WRITEBACK], 2);
	/* an arrival in the old wait phase does not interrupt the new one */
	ASSERT_FALSE(sm.io_seen);
}

TEST(evict_interrupted_but_space_recovered_goes_normal)
{
	struct ssdp_evict_sm sm;

	to_writeback(&sm, WAIT, 9);
	ssdp_esm_io_arrival(&sm, WAIT + 1);
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	ASSERT_EQ(next(&sm, WAIT + 2, 10, 49, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
}

TEST(evict_zero_wait_starts_immediately)
{
	struct ssdp_evict_sm sm;

	ssdp_esm_init(&sm, 4, 0, 1);
	ssdp_esm_io_arrival(&sm, 7);
	ASSERT_EQ(next(&sm, 7, 0, 9, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_EQ(next(&sm, 7, 0, 9, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_io_arrival(&sm, 8);
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	/* interrupted -> wait of 0 -> writeback again at once */
	ASSERT_EQ(next(&sm, 9, 1, 8, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_WRITEBACK);
	/* inflight_max 0 is treated as 1 */
	ssdp_esm_set_knobs(&sm, 4, 0, 0);
	ASSERT_EQ(sm.inflight_max, 1);
}

TEST(evict_flush_all_ignores_wait_and_floor)
{
	struct ssdp_evict_sm sm;
	int i;

	setup(&sm);
	/* plenty of free sets, I/O going on: flush anyway */
	ssdp_esm_flush_all(&sm);
	ASSERT_TRUE(ssdp_esm_needs_run(&sm, 100, 0, 0));
	ssdp_esm_io_arrival(&sm, 1);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(next(&sm, 1, 100, 6, SSDP_HEAD_CLEAN, NULL),
			  SSDP_EVICT_ACT_START_FLUSH);
	ASSERT_EQ(next(&sm, 1, 100, 6, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_io_arrival(&sm, 2);
	for (i = 0; i < 4; i++)
		ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	/* 2 dirty sets left: only 2 started */
	ASSERT_EQ(next(&sm, 3, 100, 2, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_START_FLUSH);
	ASSERT_EQ(next(&sm, 3, 100, 2, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_START_FLUSH);
	ASSERT_EQ(next(&sm, 3, 100, 2, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	ASSERT_EQ(next(&sm, 3, 100, 1, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_TRUE(sm.flushing);
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	ASSERT_EQ(next(&sm, 3, 100, 0, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_FALSE(sm.flushing);
	ASSERT_EQ(sm.flush_started, 6);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 100, 0, 0));
}

/*
 * A failed writeback frees its slot at once and counts nothing as
 * evicted; the engine holds the set aside (not in nr_dirty_sets), so a
 * flush whose remaining sets all failed ends instead of waiting forever.
 */
TEST(evict_failed_writeback_frees_slot_and_ends_flush)
{
	struct ssdp_evict_sm sm;

	ssdp_esm_init(&sm, 10, 0, 1);
	ASSERT_EQ(next(&sm, 1, 0, 3, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_EQ(next(&sm, 1, 0, 3, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_wb_failed(&sm, SSDP_WB_EVICT);
	ASSERT_EQ(sm.sets_evicted, 0);
	ASSERT_EQ(sm.wb_failed, 1);
	/* The slot is free again: the next head may be tried. */
	ASSERT_EQ(next(&sm, 2, 0, 2, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_WRITEBACK);

	ssdp_esm_init(&sm, 1, WAIT, 4);
	ssdp_esm_flush_all(&sm);
	ASSERT_EQ(next(&sm, 1, 100, 1, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_START_FLUSH);
	ssdp_esm_wb_failed(&sm, SSDP_WB_FLUSH);
	ASSERT_TRUE(sm.flushing);
	/* The failed set is held aside: no dirty set is left to try. */
	ASSERT_EQ(next(&sm, 2, 100, 0, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_FALSE(sm.flushing);
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 100, 0, 0));
}

TEST(evict_flush_all_during_wait_then_normal_rules)
{
	struct ssdp_evict_sm sm;

	setup(&sm);
	ASSERT_EQ(next(&sm, 0, 5, 1, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_ARM_TIMER);
	ssdp_esm_flush_all(&sm);
	ASSERT_EQ(next(&sm, 1, 5, 1, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_FLUSH);
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	/* flushed and still short of space: the clean head goes */
	ASSERT_EQ(next(&sm, 2, 5, 0, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_FREE_CLEAN_HEAD);
	ASSERT_EQ(next(&sm, 2, 10, 0, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_FALSE(sm.flushing);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
}

TEST(evict_stop_and_resume)
{
	struct ssdp_evict_sm sm;

	to_writeback(&sm, WAIT, 0);
	ssdp_esm_stop(&sm);
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 0, 0, 0));
	ASSERT_EQ(next(&sm, WAIT, 0, 50, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(next(&sm, WAIT, 0, 50, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_flush_all(&sm);
	ASSERT_EQ(next(&sm, WAIT, 0, 50, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	/* in-flight work still completes */
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	ASSERT_EQ(ssdp_esm_inflight(&sm), 0);
	ssdp_esm_resume(&sm);
	ASSERT_EQ(next(&sm, WAIT, 1, 50, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_FLUSH);
}

TEST(evict_action_failed_stalls_until_event)
{
	struct ssdp_evict_sm sm;

	to_writeback(&sm, WAIT, 0);
	ssdp_esm_action_failed(&sm, SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_EQ(sm.wb_started, 0);
	ASSERT_EQ(ssdp_esm_inflight(&sm), 0);
	ASSERT_EQ(next(&sm, WAIT, 0, 50, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_kick(&sm);
	ASSERT_EQ(next(&sm, WAIT, 0, 50, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_EQ(next(&sm, WAIT, 0, 50, SSDP_HEAD_CLEAN, NULL),
		  SSDP_EVICT_ACT_FREE_CLEAN_HEAD);
	ssdp_esm_action_failed(&sm, SSDP_EVICT_ACT_FREE_CLEAN_HEAD);
	ASSERT_EQ(sm.sets_evicted, 0);
	ssdp_esm_timer(&sm);
	ssdp_esm_flush_all(&sm);
	ASSERT_EQ(next(&sm, WAIT, 0, 50, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_FLUSH);
	ssdp_esm_action_failed(&sm, SSDP_EVICT_ACT_START_FLUSH);
	ASSERT_EQ(sm.flush_started, 0);
	EXPECT_WARNS(ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH));
	ASSERT_EQ(ssdp_esm_state_name(SSDP_EVICT_WAIT)[0], 'w');
}

/*
 * A flush owes only what was dirty when it was asked: beside its
 * writebacks (all the slots but one first, the last when nothing else
 * wants it), cleaning, pressure eviction and lock-out cleaning start
 * when their own conditions hold; one it could not start stops only its
 * own until an event; it ends when nothing is owed and none of its
 * writebacks is in flight.
 */
TEST(evict_flush_leaves_the_others_their_rules)
{
	struct ssdp_evict_sm sm;
	struct ssdp_evict_view v = {
		.nr_free = 50, .nr_dirty_sets = 10, .head = SSDP_HEAD_DIRTY,
		.dirty_blocks = 300, .cleanable = true,
	};
	struct ssdp_evict_action a;
	u64 t;
	int i;

	setup(&sm);
	ssdp_esm_set_max_wait(&sm, 3 * WAIT);
	ssdp_esm_set_cleaning(&sm, 200, 0);
	ssdp_esm_set_lockout(&sm, true);
	ssdp_esm_io_arrival(&sm, 0);
	ssdp_esm_flush_all(&sm);
	/* Nothing else wants a slot yet: the flush takes all four. */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(ssdp_esm_next_action(&sm, 1, &v).type,
			  SSDP_EVICT_ACT_START_FLUSH);
	/* Cleaning is due (over the target): it waits for the window. */
	a = ssdp_esm_next_action(&sm, 1, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(a.deadline, 1 + WAIT);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "flush");

	/* Cleaning: in the quiet window, the slot a completion frees. */
	ssdp_esm_timer(&sm);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 2 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);		/* all four in use */
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 2 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_CLEAN);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "cleaning");
	ASSERT_EQ(ssdp_esm_next_action(&sm, 2 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	/* Freed slots: the flush's first, but for the last one. */
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 2 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_FLUSH);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 2 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_CLEAN);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 2 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(sm.nr_flush, 2);
	ASSERT_EQ(sm.nr_clean, 2);
	ssdp_esm_wb_done(&sm, SSDP_WB_CLEAN);
	ssdp_esm_wb_done(&sm, SSDP_WB_CLEAN);
	v.dirty_blocks = 100;			/* under the target */
	ASSERT_EQ(ssdp_esm_next_action(&sm, 2 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_FLUSH);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 2 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_FLUSH);	/* none wants the last */
	ASSERT_EQ(sm.nr_flush, 4);
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);

	/*
	 * Pressure: bios every 100 ms from 3 s on, and the cache short of
	 * room: past evict_max_wait, one eviction writeback beside the
	 * flush's three.
	 */
	v.nr_free = 5;
	for (t = 3 * WAIT; t < 7 * WAIT; t += 100 * MS) {
		ssdp_esm_io_arrival(&sm, t);
		a = ssdp_esm_next_action(&sm, t, &v);
		if (a.type == SSDP_EVICT_ACT_START_WRITEBACK)
			break;
		ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
		ssdp_esm_timer(&sm);
	}
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_TRUE(a.pressure);
	ASSERT_EQ(t, 6 * WAIT);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "pressure");
	ASSERT_EQ(ssdp_esm_next_action(&sm, t, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(sm.nr_flush, 3);
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	v.nr_free = 50;
	ASSERT_EQ(ssdp_esm_next_action(&sm, t, &v).type,
		  SSDP_EVICT_ACT_START_FLUSH);	/* the last slot again */
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);

	/* Lock-out cleaning: at once, in the slot a completion frees. */
	ASSERT_TRUE(ssdp_esm_lockout(&sm));
	v.lockout_sets = 1;
	v.lockout_ready = true;
	ASSERT_EQ(ssdp_esm_next_action(&sm, t, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	a = ssdp_esm_next_action(&sm, t, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_LOCKOUT);
	ASSERT_TRUE(a.pressure);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "lockout_cleaning");
	ssdp_esm_wb_done(&sm, SSDP_WB_LOCKOUT);
	v.lockout_sets = 0;
	v.lockout_ready = false;

	/*
	 * The engine found no owed set free: no flush writeback until an
	 * event, but cleaning still starts (too old, in a quiet window).
	 */
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	ASSERT_EQ(sm.nr_flush, 2);
	a = ssdp_esm_next_action(&sm, t, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_FLUSH);
	ssdp_esm_action_failed(&sm, a.type);
	ASSERT_EQ(sm.nr_flush, 2);
	ssdp_esm_set_cleaning(&sm, 200, 60000 * MS);
	v.oldest_age = 60000 * MS;
	a = ssdp_esm_next_action(&sm, t, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(a.deadline, t + WAIT);
	ASSERT_EQ(ssdp_esm_next_action(&sm, t + WAIT, &v).type,
		  SSDP_EVICT_ACT_START_CLEAN);
	ASSERT_EQ(ssdp_esm_next_action(&sm, t + WAIT, &v).type,
		  SSDP_EVICT_ACT_START_CLEAN);
	ASSERT_EQ(ssdp_esm_next_action(&sm, t + WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_wb_done(&sm, SSDP_WB_CLEAN);
	ssdp_esm_wb_done(&sm, SSDP_WB_CLEAN);
	v.oldest_age = 0;
	ssdp_esm_set_cleaning(&sm, ~0ULL, 0);
	ASSERT_EQ(ssdp_esm_next_action(&sm, t + WAIT, &v).type,
		  SSDP_EVICT_ACT_START_FLUSH);	/* the event came */

	/*
	 * It ends when nothing is owed and none of its writebacks is in
	 * flight, not when the cache has nothing dirty.
	 */
	v.nr_dirty_sets = 2;
	ASSERT_EQ(ssdp_esm_next_action(&sm, t + WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);		/* both held by its own */
	v.nr_dirty_sets = 0;
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	ASSERT_EQ(ssdp_esm_next_action(&sm, t + WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ASSERT_TRUE(sm.flushing);		/* one still in flight */
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	ASSERT_EQ(ssdp_esm_next_action(&sm, t + WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ASSERT_FALSE(sm.flushing);
	ASSERT_EQ(ssdp_esm_inflight(&sm), 0);
	ASSERT_EQ(v.dirty_blocks, 100);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "not_needed");
}

/*
 * End to end with a real frame map and a simulated engine: bursts of
 * writes separated by quiet gaps. Checks that no eviction writeback ever
 * starts within evict_wait of an arrival, that room is recovered in the
 * quiet gaps and that flush_all leaves nothing dirty.
 */
struct sim {
	struct ssdp_fmap fm;
	struct ssdp_evict_sm sm;
	u32 wb[8];
	u32 wb_dirty[8];	/* dirty blocks of each when it started */
	u32 nr_wb;
	u64 timer;		/* 0: not armed */
	u64 last_io;
	u32 cleaned;		/* cleaning writebacks started */
	/* Lock-out sets noted, oldest first (the engine's ring). */
	u32 lockout[64];
	u32 lockout_blk[64];	/* the refusing frame */
	u32 nr_lockout;
	u32 wb_only[8];		/* a lock-out writeback: its block */
	u32 refused;		/* writes a foreign dirty block kept out */
	u32 crowded_cleaned;	/* of the cleanings, crowded sets' */
};

#define SIM_EVICT	0x80000000U
#define SIM_CLEAN	0x40000000U
#define SIM_LOCKOUT	0x20000000U
#define SIM_CSET	0x1fffffffU

static bool sim_wb_busy(const struct sim *s, u32 c)
{
	for (u32 i = 0; i < s->nr_wb; i++)
		if ((s->wb[i] & SIM_CSET) == c)
			return true;
	return false;
}

/* The engine's ssdp_lockout_victim_locked(), without the rotation. */
static u32 sim_lockout_victim(const struct sim *s)
{
	for (u32 i = 0; i < s->nr_lockout; i++)
		if (ssdp_fmap_nr_dirty(&s->fm, s->lockout[i]) &&
		    !sim_wb_busy(s, s->lockout[i]))
			return i;
	return SSDP_NONE;
}

/* The engine's ssdp_crowded_set_locked(): the newest crowded unpinned. */
static u32 sim_crowded(const struct sim *s)
{
	u32 c;

	if (!s->fm.nr_crowded)
		return SSDP_NONE;
	for (c = ssdp_fmap_newest_dirty(&s->fm); c != SSDP_NONE;
	     c = ssdp_fmap_prev_dirty_set(&s->fm, c))
		if (ssdp_fmap_crowded(&s->fm, c) && !ssdp_fmap_pinned(&s->fm, c))
			return c;
	return SSDP_NONE;
}

static u32 sim_room_sets(const struct sim *s)
{
	return (u32)(ssdp_fmap_room(&s->fm) / s->fm.set_blocks);
}

/* The engine's view (evict.c), the sim's clock in ms for the ages. */
static void sim_view(struct sim *s, u64 now, struct ssdp_evict_view *v)
{
	u32 old = ssdp_fmap_oldest_dirty_unpinned(&s->fm, 64);

	v->nr_free = sim_room_sets(s);
	v->nr_dirty_sets = s->fm.nr_dirty_sets;
	v->head = old == SSDP_NONE ? SSDP_HEAD_NONE : SSDP_HEAD_DIRTY;
	v->dirty_blocks = s->fm.total_dirty;
	v->dirty_in_writeback = 0;
	for (u32 i = 0; i < s->nr_wb; i++)
		v->dirty_in_writeback += s->wb_dirty[i];
	v->cleanable = old != SSDP_NONE;
	v->oldest_age = v->cleanable ?
		(now / MS - ssdp_fmap_dirty_since(&s->fm, old)) * MS : 0;
	v->lockout_sets = s->nr_lockout;
	v->lockout_ready = sim_lockout_victim(s) != SSDP_NONE;
	v->crowded = sim_crowded(s) != SSDP_NONE;
	v->crowded_events = s->fm.crowded_events;
}

static void sim_start_set(struct sim *s, u32 c, u32 tag)
{
	ASSERT_NE(ssdp_fmap_nr_dirty(&s->fm, c), 0);
	ssdp_fmap_pin(&s->fm, c);
	ASSERT_LT(s->nr_wb, 8);
	s->wb_dirty[s->nr_wb] = ssdp_fmap_nr_dirty(&s->fm, c);
	s->wb[s->nr_wb++] = c | tag;
}

static void sim_start(struct sim *s, u32 tag)
{
	u32 c = ssdp_fmap_oldest_dirty_unpinned(&s->fm, 64);

	ASSERT_NE(c, SSDP_NONE);
	sim_start_set(s, c, tag);
}

static void sim_run(struct sim *s, u64 now)
{
	struct ssdp_evict_view v;
	struct ssdp_evict_action a;

	for (;;) {
		sim_view(s, now, &v);
		a = ssdp_esm_next_action(&s->sm, now, &v);
		switch (a.type) {
		case SSDP_EVICT_ACT_NONE:
			return;
		case SSDP_EVICT_ACT_ARM_TIMER:
			s->timer = a.deadline;
			return;
		case SSDP_EVICT_ACT_FREE_CLEAN_HEAD:
			ASSERT_TRUE(false);	/* the head is never clean */
			break;
		case SSDP_EVICT_ACT_START_CLEAN:
			ASSERT_GE(now, s->last_io + WAIT);
			if (a.crowded) {
				ASSERT_NE(sim_crowded(s), SSDP_NONE);
				sim_start_set(s, sim_crowded(s), SIM_CLEAN);
				s->crowded_cleaned++;
			} else {
				sim_start(s, SIM_CLEAN);
			}
			s->cleaned++;
			break;
		case SSDP_EVICT_ACT_START_WRITEBACK:
			if (!a.pressure)
				ASSERT_GE(now, s->last_io + WAIT);
			sim_start(s, SIM_EVICT);
			break;
		case SSDP_EVICT_ACT_START_LOCKOUT: {
			u32 i = sim_lockout_victim(s);

			ASSERT_TRUE(a.pressure);
			ASSERT_NE(i, SSDP_NONE);
			s->wb_only[s->nr_wb] = s->lockout_blk[i];
			sim_start_set(s, s->lockout[i], SIM_LOCKOUT);
			s->nr_lockout--;
			memmove(&s->lockout[i], &s->lockout[i + 1],
				(s->nr_lockout - i) * sizeof(s->lockout[0]));
			memmove(&s->lockout_blk[i], &s->lockout_blk[i + 1],
				(s->nr_lockout - i) * sizeof(s->lockout[0]));
			break;
		}
		case SSDP_EVICT_ACT_START_FLUSH:
			if (ssdp_fmap_oldest_dirty_unpinned(&s->fm, ~0U) ==
			    SSDP_NONE) {
				ssdp_esm_action_failed(&s->sm, a.type);
				break;
			}
			sim_start(s, 0);
			break;
		}
	}
}

/* complete the oldest writeback */
static void sim_complete(struct sim *s, u64 now)
{
	u32 c = s->wb[0] & SIM_CSET, lines[SSDP_FMAP_TAGS], n, i;
	enum ssdp_evict_wb_kind kind = SSDP_WB_FLUSH;
	u32 only = s->wb_only[0], first, nr;

	if (s->wb[0] & SIM_EVICT)
		kind = SSDP_WB_EVICT;
	else if (s->wb[0] & SIM_CLEAN)
		kind = SSDP_WB_CLEAN;
	else if (s->wb[0] & SIM_LOCKOUT)
		kind = SSDP_WB_LOCKOUT;

	memmove(&s->wb[0], &s->wb[1], (s->nr_wb - 1) * sizeof(s->wb[0]));
	memmove(&s->wb_only[0], &s->wb_only[1],
		(s->nr_wb - 1) * sizeof(s->wb_only[0]));
	memmove(&s->wb_dirty[0], &s->wb_dirty[1],
		--s->nr_wb * sizeof(s->wb_dirty[0]));
	n = ssdp_fmap_dirty_lines(&s->fm, c, lines);
	/* A lock-out writeback: only the dirty run from its frame's block. */
	if (kind == SSDP_WB_LOCKOUT) {
		u32 line, blk;

		if (ssdp_fmap_frame_dirty(&s->fm, c, only, &line, &blk) &&
		    ssdp_fmap_next_dirty_run(&s->fm, line, blk, &first, &nr))
			ssdp_fmap_clear_dirty(&s->fm, line, first, nr);
		n = 0;
	}
	for (i = 0; i < n; i++)
		ssdp_fmap_clear_dirty(&s->fm, lines[i], 0, s->fm.set_blocks);
	ssdp_fmap_unpin(&s->fm, c);
	ssdp_esm_wb_done(&s->sm, kind);
	sim_run(s, now);
}

static u64 sim_rnd = 88172645463325252ULL;

static u32 srnd(u32 n)
{
	sim_rnd ^= sim_rnd << 13;
	sim_rnd ^= sim_rnd >> 7;
	sim_rnd ^= sim_rnd << 17;
	return (u32)(sim_rnd % n);
}

static void sim_write(struct sim *s, u64 now, u64 oset, u32 blk)
{
	bool repl;
	u32 line;

	s->last_io = now;
	s->fm.clock = now / MS;
	ssdp_esm_io_arrival(&s->sm, now);
	line = ssdp_fmap_lookup(&s->fm, oset);
	if (line == SSDP_NONE)
		line = ssdp_fmap_tag_alloc(&s->fm, oset, &repl);
	if (line == SSDP_NONE)
		return;		/* bypass */
	/* The engine's worker runs after the write holds its set. */
	ssdp_fmap_pin(&s->fm, ssdp_line_cset(line));
	if (ssdp_fmap_claim(&s->fm, line, blk, 1, false, &repl) == 1) {
		ssdp_fmap_touch(&s->fm, line);
		ssdp_fmap_set_valid(&s->fm, line, blk, 1);
		ssdp_fmap_set_dirty(&s->fm, line, blk, 1);
	} else if (ssdp_fmap_foreign_dirty(&s->fm, line, blk, 1) != SSDP_NONE) {
		u32 c = ssdp_line_cset(line), i;
		u32 frame = ssdp_fmap_foreign_dirty(&s->fm, line, blk, 1);

		s->refused++;
		for (i = 0; i < s->nr_lockout && s->lockout[i] != c; i++)
			;
		if (i == s->nr_lockout && ssdp_esm_lockout_on(&s->sm) &&
		    s->nr_lockout < 64) {
			s->lockout_blk[s->nr_lockout] = frame;
			s->lockout[s->nr_lockout++] = c;
			ssdp_esm_lockout(&s->sm);
		}
	}
	ssdp_fmap_unpin(&s->fm, ssdp_line_cset(line));
	if (ssdp_esm_needs_run(&s->sm, sim_room_sets(s), s->fm.total_dirty,
			       s->fm.crowded_events))
		sim_run(s, now);
}

/*
 * @target, @age: cleaning knobs (~0, 0: off); @crowded_at: a set with more
 * dirty frames is crowded (16: none is).  After every quiet gap long
 * enough for the window and the writebacks, cleaning has brought the
 * dirty data under the target, nothing dirty is older than @age and no
 * set is crowded.
 */
static void simulate(u64 target, u64 age, u32 crowded_at)
{
	static struct sim s;
	u64 now = 0, gap_start;
	int burst, i;
	const char *why;

	memset(&s, 0, sizeof(s));
	ASSERT_EQ(ssdp_fmap_init(&s.fm, 64, 16), 0);
	ssdp_esm_init(&s.sm, 8, WAIT, 4);
	ssdp_esm_set_cleaning(&s.sm, target, age);
	ssdp_fmap_set_crowded(&s.fm, crowded_at);
	for (burst = 0; burst < 200; burst++) {
		u32 n = 1 + srnd(200);

		for (i = 0; i < (int)n; i++) {
			now += 1 + srnd(5 * MS);
			sim_write(&s, now, srnd(300), srnd(16));
			if (s.nr_wb && srnd(3) == 0)
				sim_complete(&s, now);
		}
		/* quiet gap of 0.5 .. 3 s: fire timers, complete I/O */
		gap_start = now;
		{
			u64 end = now + 500 * MS + srnd(2500) * MS;

			while (now < end) {
				if (s.nr_wb) {
					now += 10 * MS;
					sim_complete(&s, now);
				} else if (s.timer && s.timer <= end) {
					now = s.timer;
					s.timer = 0;
					ssdp_esm_timer(&s.sm);
					sim_run(&s, now);
				} else {
					now = end;
				}
			}
		}
		ASSERT_EQ(ssdp_fmap_check(&s.fm, &why), 0);
		/* a quiet gap longer than wait + writeback restored room */
		if (ssdp_esm_state(&s.sm) == SSDP_EVICT_NORMAL)
			ASSERT_GE(sim_room_sets(&s) + s.nr_wb, 8);
		/* 1 s window + at most 64 sets at 10 ms: 2 s is enough. */
		if (now - gap_start >= 2000 * MS && !s.nr_wb) {
			u32 old = ssdp_fmap_oldest_dirty(&s.fm);

			ASSERT_LE(s.fm.total_dirty, target);
			ASSERT_EQ(s.fm.nr_crowded, 0);
			if (age && old != SSDP_NONE)
				ASSERT_LT((now / MS - ssdp_fmap_dirty_since(&s.fm, old)) * MS,
					  age + 2000 * MS);
		}
	}
	if (target == ~0ULL && !age) {
		ASSERT_GT(s.sm.wb_started, 0);
		ASSERT_GT(s.sm.state_entries[SSDP_EVICT_WAIT], 1);
		ASSERT_EQ(s.cleaned, 0);
	} else {
		ASSERT_GT(s.cleaned, 0);
	}
	if (crowded_at < 16)
		ASSERT_GT(s.crowded_cleaned, 0);
	else
		ASSERT_EQ(s.crowded_cleaned, 0);

	ssdp_esm_flush_all(&s.sm);
	ssdp_esm_io_arrival(&s.sm, now);
	sim_run(&s, now);
	while (s.nr_wb)
		sim_complete(&s, now += MS);
	ASSERT_EQ(s.fm.total_dirty, 0);
	ASSERT_FALSE(s.sm.flushing);
	ASSERT_EQ(ssdp_fmap_check(&s.fm, &why), 0);
	ssdp_fmap_destroy(&s.fm);
}

TEST(evict_simulated_engine_with_frame_map)
{
	simulate(~0ULL, 0, 16);
}

/* 64 sets of 16 blocks: a target of 10% is 102 blocks. */
TEST(evict_simulated_cleaning_keeps_target_and_age)
{
	simulate(102, 0, 16);
	simulate(~0ULL, 1500 * MS, 16);
	simulate(102, 1500 * MS, 16);
}

/*
 * A crowded set under the target is written back in the quiet window, the
 * target and age still kept.  The threshold is low (3 of 16 frames) so
 * that this random load, spread over 300 origin sets, makes such sets
 * while under the target; with cleaning off (~0) crowded sets still go.
 */
TEST(evict_simulated_cleaning_leaves_no_crowded_set)
{
	simulate(102, 0, 3);
	simulate(102, 1500 * MS, 3);
	simulate(~0ULL, 1500 * MS, 4);
}

/*
 * Cleaning decisions with a fake clock: nothing while under the target
 * and young (a timer for when the oldest gets too old); over the target,
 * only after wait of quiet, up to the in-flight limit; every arrival moves
 * the window; a flush or an eviction comes first.
 */
TEST(evict_cleaning_waits_for_quiet_and_age)
{
	struct ssdp_evict_sm sm;
	struct ssdp_evict_view v = {
		.nr_free = 50, .nr_dirty_sets = 3, .head = SSDP_HEAD_DIRTY,
		.dirty_blocks = 100, .cleanable = true, .oldest_age = 0,
	};
	struct ssdp_evict_action a;
	int i;

	setup(&sm);
	/* No bio since the table loaded: still a window from when it is due. */
	ssdp_esm_set_cleaning(&sm, 50, 0);
	a = ssdp_esm_next_action(&sm, 5 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(a.deadline, 6 * WAIT);
	ssdp_esm_set_cleaning(&sm, ~0ULL, 0);
	ssdp_esm_timer(&sm);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 5 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(sm.clean_due_since, 0);
	/* Off by default. */
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 50, 100, 0));
	ASSERT_EQ(ssdp_esm_next_action(&sm, 0, &v).type, SSDP_EVICT_ACT_NONE);

	ssdp_esm_set_cleaning(&sm, 200, 60000 * MS);
	ASSERT_TRUE(ssdp_esm_needs_run(&sm, 50, 100, 0));
	a = ssdp_esm_next_action(&sm, 5 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);	/* when it is 60 s old */
	ASSERT_EQ(a.deadline, 5 * WAIT + 60000 * MS);
	ASSERT_EQ(sm.clean_armed, SSDP_CLEAN_AT_AGE);
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 50, 150, 0));
	ASSERT_TRUE(ssdp_esm_needs_run(&sm, 50, 201, 0));

	/* Over the target, I/O just now: wait for the window. */
	v.dirty_blocks = 300;
	ssdp_esm_io_arrival(&sm, 10 * WAIT);
	a = ssdp_esm_next_action(&sm, 10 * WAIT + 1, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(a.deadline, 11 * WAIT + 1);	/* due since then */
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 50, 300, 0));
	ssdp_esm_io_arrival(&sm, 10 * WAIT + 500 * MS);
	ssdp_esm_timer(&sm);
	a = ssdp_esm_next_action(&sm, 11 * WAIT + 1, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(a.deadline, 11 * WAIT + 500 * MS);
	/*
	 * Quiet: what is already under writeback counts as clean (here 50
	 * of the 300 per set): four at once, then the completions call again.
	 */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(ssdp_esm_next_action(&sm, 12 * WAIT, &v).type,
			  SSDP_EVICT_ACT_START_CLEAN);
		v.dirty_in_writeback += 20;
	}
	ASSERT_EQ(ssdp_esm_next_action(&sm, 12 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_inflight(&sm), 4);
	ssdp_esm_wb_done(&sm, SSDP_WB_CLEAN);
	ssdp_esm_wb_failed(&sm, SSDP_WB_CLEAN);
	ASSERT_EQ(ssdp_esm_inflight(&sm), 2);
	/* Not yet under the target, but the rest is being written back. */
	v.dirty_in_writeback = 101;
	ASSERT_EQ(ssdp_esm_next_action(&sm, 12 * WAIT, &v).type,
		  SSDP_EVICT_ACT_ARM_TIMER);
	v.dirty_in_writeback = 0;
	v.dirty_blocks = 150;			/* under the target: done */
	ASSERT_EQ(ssdp_esm_next_action(&sm, 12 * WAIT, &v).type,
		  SSDP_EVICT_ACT_ARM_TIMER);
	/* Too old, though under the target: cleaned in the window. */
	v.oldest_age = 60000 * MS;
	a = ssdp_esm_next_action(&sm, 12 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);	/* due from now */
	ASSERT_EQ(a.deadline, 13 * WAIT);
	ssdp_esm_timer(&sm);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 13 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_CLEAN);
	/* Nothing unpinned to clean: nothing to do. */
	v.cleanable = false;
	ASSERT_EQ(ssdp_esm_next_action(&sm, 12 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	/* Short of space with a clean victim: eviction first. */
	v.cleanable = true;
	v.nr_free = 1;
	v.head = SSDP_HEAD_CLEAN;
	ASSERT_EQ(ssdp_esm_next_action(&sm, 12 * WAIT, &v).type,
		  SSDP_EVICT_ACT_FREE_CLEAN_HEAD);
	/* Suspended: nothing. */
	v.nr_free = 50;
	ssdp_esm_stop(&sm);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 13 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
}

/*
 * A long quiet window (all_wait) cleans what is under the target too: a
 * short one does not; the next bio ends it; an age due earlier comes first;
 * what is under writeback already counts as clean; 0 turns it off.
 */
TEST(evict_long_quiet_cleans_all)
{
	struct ssdp_evict_sm sm;
	struct ssdp_evict_view v = {
		.nr_free = 50, .nr_dirty_sets = 3, .head = SSDP_HEAD_DIRTY,
		.dirty_blocks = 100, .cleanable = true,
	};
	struct ssdp_evict_action a;

	setup(&sm);
	ssdp_esm_set_cleaning(&sm, 200, 0);
	/* Off by default: under the target, nothing. */
	ssdp_esm_io_arrival(&sm, 10 * WAIT);
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 50, 100, 0));
	ASSERT_EQ(ssdp_esm_next_action(&sm, 20 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);

	ssdp_esm_set_clean_all(&sm, 5 * WAIT);
	ASSERT_TRUE(ssdp_esm_needs_run(&sm, 50, 100, 0));
	ssdp_esm_io_arrival(&sm, 30 * WAIT);
	a = ssdp_esm_next_action(&sm, 30 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(a.deadline, 35 * WAIT);
	ASSERT_EQ(sm.clean_armed, SSDP_CLEAN_AT_ALL);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "not_needed");
	/* Armed: only going over the target needs a run before then. */
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 50, 100, 0));
	ASSERT_TRUE(ssdp_esm_needs_run(&sm, 50, 201, 0));
	/* A short quiet window (evict_wait) is not enough. */
	ssdp_esm_timer(&sm);
	a = ssdp_esm_next_action(&sm, 32 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(a.deadline, 35 * WAIT);
	/* A bio moves the window. */
	ssdp_esm_io_arrival(&sm, 33 * WAIT);
	ssdp_esm_timer(&sm);
	a = ssdp_esm_next_action(&sm, 35 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(a.deadline, 38 * WAIT);
	ssdp_esm_timer(&sm);
	a = ssdp_esm_next_action(&sm, 38 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_CLEAN);
	ASSERT_FALSE(a.crowded);
	/* Its neighbours are taken down to 0, not to the target. */
	ASSERT_EQ(ssdp_esm_dirty_target(&sm), 0);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "cleaning");
	/* The rest is under writeback already: nothing more to start. */
	v.dirty_in_writeback = 100;
	a = ssdp_esm_next_action(&sm, 38 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_NONE);
	ssdp_esm_wb_done(&sm, SSDP_WB_CLEAN);
	v.dirty_in_writeback = 0;
	/* A bio ends it: the target is the knob's again. */
	ssdp_esm_io_arrival(&sm, 39 * WAIT);
	ASSERT_EQ(ssdp_esm_dirty_target(&sm), 200);
	a = ssdp_esm_next_action(&sm, 39 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(a.deadline, 44 * WAIT);
	/* An age that comes first arms the timer for it. */
	ssdp_esm_set_cleaning(&sm, 200, 2 * WAIT + 1);
	a = ssdp_esm_next_action(&sm, 40 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(a.deadline, 42 * WAIT + 1);
	/* Nothing dirty: nothing to wait for. */
	ssdp_esm_set_cleaning(&sm, 200, 0);
	v.dirty_blocks = 0;
	v.cleanable = false;
	ASSERT_EQ(ssdp_esm_next_action(&sm, 50 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	/* Off again: under the target stays dirty. */
	v.dirty_blocks = 100;
	v.cleanable = true;
	ssdp_esm_set_clean_all(&sm, 0);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 60 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
}

/* The status line's reason follows the machine through each of its phases. */
TEST(evict_why_names_each_phase)
{
	struct ssdp_evict_sm sm;
	struct ssdp_evict_view v = {
		.nr_free = 50, .nr_dirty_sets = 3, .head = SSDP_HEAD_DIRTY,
		.dirty_blocks = 300, .cleanable = true,
	};
	struct ssdp_evict_action a;

	setup(&sm);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "not_needed");
	/* short of space: wait for quiet, then pressure, then a window */
	ssdp_esm_set_max_wait(&sm, 3 * WAIT);
	ASSERT_EQ(next(&sm, 0, 5, 20, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "wait_quiet");
	ssdp_esm_io_arrival(&sm, 3 * WAIT - MS);
	a = ssdp_esm_next_action(&sm, 3 * WAIT, &(struct ssdp_evict_view){
		.nr_free = 5, .nr_dirty_sets = 20, .head = SSDP_HEAD_DIRTY });
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_TRUE(a.pressure);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "pressure");
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "wait_quiet");
	ASSERT_EQ(next(&sm, 10 * WAIT, 5, 20, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "quiet_writeback");
	/* all it could take is in use */
	ssdp_esm_action_failed(&sm, SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "blocked");
	ssdp_esm_kick(&sm);
	ASSERT_EQ(next(&sm, 10 * WAIT, 50, 20, SSDP_HEAD_DIRTY, NULL),
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "not_needed");

	/* cleaning: over the target, the window, then writing back */
	ssdp_esm_set_cleaning(&sm, 200, 0);
	ssdp_esm_io_arrival(&sm, 20 * WAIT);
	a = ssdp_esm_next_action(&sm, 20 * WAIT + 1, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "clean_wait_quiet");
	ssdp_esm_timer(&sm);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 22 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_CLEAN);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "cleaning");
	/* the engine found the set in use */
	ssdp_esm_action_failed(&sm, SSDP_EVICT_ACT_START_CLEAN);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "blocked");
	ssdp_esm_kick(&sm);

	ssdp_esm_flush_all(&sm);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "flush");
	ssdp_esm_stop(&sm);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "suspended");
}

/*
 * Lock-out cleaning: at once, whatever the quiet window and the dirty
 * share, one set at a time, in the pressure share; eviction and a flush
 * come first; off with the knob or with evict_max_wait 0.
 */
TEST(evict_lockout_cleans_without_quiet)
{
	struct ssdp_evict_sm sm;
	struct ssdp_evict_view v = {
		.nr_free = 50, .nr_dirty_sets = 3, .head = SSDP_HEAD_DIRTY,
		.dirty_blocks = 10, .cleanable = true,
		.lockout_sets = 2, .lockout_ready = true,
	};
	struct ssdp_evict_action a;
	int i;

	setup(&sm);
	ssdp_esm_set_max_wait(&sm, 3 * WAIT);
	/* Off after init: nothing noted, nothing started. */
	ASSERT_FALSE(ssdp_esm_lockout_on(&sm));
	ASSERT_EQ(ssdp_esm_next_action(&sm, 0, &v).type, SSDP_EVICT_ACT_NONE);

	ssdp_esm_set_lockout(&sm, true);
	ASSERT_TRUE(ssdp_esm_lockout_on(&sm));
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 50, 10, 0));
	ASSERT_TRUE(ssdp_esm_lockout(&sm));
	ASSERT_FALSE(ssdp_esm_lockout(&sm));	/* already due */
	ASSERT_TRUE(ssdp_esm_needs_run(&sm, 50, 10, 0));
	/* I/O this very moment, room and dirty share fine: at once. */
	ssdp_esm_io_arrival(&sm, 5 * WAIT);
	a = ssdp_esm_next_action(&sm, 5 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_LOCKOUT);
	ASSERT_TRUE(a.pressure);
	ASSERT_STR_EQ(ssdp_esm_why(&sm), "lockout_cleaning");
	/* One at a time: its completion calls again, not every unpin. */
	ASSERT_EQ(ssdp_esm_next_action(&sm, 5 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 50, 10, 0));
	ssdp_esm_wb_done(&sm, SSDP_WB_LOCKOUT);
	ASSERT_EQ(ssdp_esm_inflight(&sm), 0);
	ASSERT_EQ(sm.sets_evicted, 0);		/* kept, not evicted */
	ASSERT_EQ(ssdp_esm_next_action(&sm, 5 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_LOCKOUT);
	ssdp_esm_wb_failed(&sm, SSDP_WB_LOCKOUT);
	ASSERT_EQ(ssdp_esm_inflight(&sm), 0);
	ASSERT_EQ(sm.lockout_started, 2);

	/* The engine could not start it: counted back, stalled. */
	a = ssdp_esm_next_action(&sm, 5 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_LOCKOUT);
	ssdp_esm_action_failed(&sm, a.type);
	ASSERT_EQ(sm.lockout_started, 2);
	ASSERT_EQ(ssdp_esm_inflight(&sm), 0);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 5 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_kick(&sm);

	/* All in use: wait for an unpin, still due. */
	v.lockout_ready = false;
	ASSERT_EQ(ssdp_esm_next_action(&sm, 5 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ASSERT_TRUE(ssdp_esm_needs_run(&sm, 50, 10, 0));
	/* None left: no longer due. */
	v.lockout_sets = 0;
	ssdp_esm_next_action(&sm, 5 * WAIT, &v);
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 50, 10, 0));
	v.lockout_sets = 1;
	v.lockout_ready = true;

	/* The in-flight bound holds for it too. */
	ssdp_esm_set_cleaning(&sm, 0, 0);
	ssdp_esm_io_arrival(&sm, 10 * WAIT);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 12 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_LOCKOUT);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 12 * WAIT, &v).type,
		  SSDP_EVICT_ACT_ARM_TIMER);	/* cleaning's window */
	for (i = 0; i < 3; i++)
		ASSERT_EQ(ssdp_esm_next_action(&sm, 13 * WAIT, &v).type,
			  SSDP_EVICT_ACT_START_CLEAN);
	ssdp_esm_wb_done(&sm, SSDP_WB_LOCKOUT);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 13 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_LOCKOUT);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 13 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_wb_done(&sm, SSDP_WB_LOCKOUT);
	for (i = 0; i < 3; i++)
		ssdp_esm_wb_done(&sm, SSDP_WB_CLEAN);
	ssdp_esm_set_cleaning(&sm, ~0ULL, 0);

	/*
	 * Short of space: eviction's turn, no lock-out cleaning while it
	 * waits for its window, then eviction in the window.
	 */
	v.nr_free = 5;
	a = ssdp_esm_next_action(&sm, 20 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_WAIT);
	ASSERT_TRUE(ssdp_esm_needs_run(&sm, 5, 10, 0));
	ssdp_esm_timer(&sm);
	a = ssdp_esm_next_action(&sm, 22 * WAIT, &v);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_WRITEBACK);
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	v.nr_free = 50;
	ssdp_esm_next_action(&sm, 22 * WAIT, &v);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
	ssdp_esm_wb_done(&sm, SSDP_WB_LOCKOUT);
	/* A flush owes what was dirty then: lock-out cleaning goes on. */
	ssdp_esm_flush_all(&sm);
	v.nr_dirty_sets = 1;
	ASSERT_EQ(ssdp_esm_next_action(&sm, 20 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_FLUSH);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 20 * WAIT, &v).type,
		  SSDP_EVICT_ACT_START_LOCKOUT);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 20 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_wb_done(&sm, SSDP_WB_FLUSH);
	ssdp_esm_wb_done(&sm, SSDP_WB_LOCKOUT);
	v.nr_dirty_sets = 0;
	v.lockout_sets = 0;
	ssdp_esm_next_action(&sm, 20 * WAIT, &v);
	ASSERT_FALSE(sm.flushing);
	v.lockout_sets = 1;

	/* Suspended: nothing. */
	ssdp_esm_stop(&sm);
	ASSERT_FALSE(ssdp_esm_lockout(&sm));
	ASSERT_EQ(ssdp_esm_next_action(&sm, 20 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_resume(&sm);
	/* evict_max_wait 0, the paper's rule: nothing under load at all. */
	ssdp_esm_set_max_wait(&sm, 0);
	ASSERT_FALSE(ssdp_esm_lockout_on(&sm));
	ASSERT_FALSE(ssdp_esm_needs_run(&sm, 50, 10, 0));
	ASSERT_EQ(ssdp_esm_next_action(&sm, 20 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
	ssdp_esm_set_max_wait(&sm, 3 * WAIT);
	ssdp_esm_set_lockout(&sm, false);
	ASSERT_EQ(ssdp_esm_next_action(&sm, 20 * WAIT, &v).type,
		  SSDP_EVICT_ACT_NONE);
}

/*
 * The frame map under writes that never pause (no quiet window ever, room
 * and dirty share far from eviction): a hot set writes, then the load
 * moves to another.  The old set's dirty blocks keep some of the new
 * ones out; lock-out cleaning writes them back, so that in the end every
 * new write lands in the cache, and nothing else is written back.
 */
static u32 simulate_shift(bool lockout)
{
	static struct sim s;
	u64 now = 0;
	u32 refused_late = 0, phase, i;
	const char *why;

	memset(&s, 0, sizeof(s));
	sim_rnd = 88172645463325252ULL;
	ASSERT_EQ(ssdp_fmap_init(&s.fm, 64, 16), 0);
	ssdp_esm_init(&s.sm, 8, WAIT, 4);
	ssdp_esm_set_max_wait(&s.sm, 10 * WAIT);
	ssdp_esm_set_lockout(&s.sm, lockout);
	for (phase = 0; phase < 2; phase++) {
		for (i = 0; i < 6000; i++) {
			now += 1 + srnd(5 * MS);
			if (i == 5000)
				refused_late = s.refused;
			sim_write(&s, now, phase * 1000 + srnd(24), srnd(16));
			if (s.nr_wb && srnd(3) == 0)
				sim_complete(&s, now);
		}
		refused_late = s.refused - refused_late;
		ASSERT_EQ(ssdp_fmap_check(&s.fm, &why), 0);
	}
	/* Never short of room, never quiet, cleaning off: only lock-outs. */
	ASSERT_EQ(s.sm.wb_started, 0);
	ASSERT_EQ(s.cleaned, 0);
	ASSERT_GT(s.refused, 0);
	if (lockout)
		ASSERT_GT(s.sm.lockout_started, 0);
	else
		ASSERT_EQ(s.sm.lockout_started, 0);
	while (s.nr_wb)
		sim_complete(&s, now += MS);
	ssdp_fmap_destroy(&s.fm);
	return refused_late;
}

TEST(evict_simulated_lockout_cleaning_under_load)
{
	/* In the last 1000 writes of the new hot set. */
	ASSERT_GT(simulate_shift(false), 0);
	ASSERT_EQ(simulate_shift(true), 0);
}

/*
 * A load that has not paused since the last pressure writeback: when the
 * cache runs short again, pressure starts at once, not after another
 * max_wait of dirty data piling up.  A quiet window (wait_ns without a
 * bio) starts the count again.
 */
TEST(evict_pressure_at_once_under_a_load_that_never_paused)
{
	struct ssdp_evict_sm sm;
	struct ssdp_evict_view shortv = view(5, 20, SSDP_HEAD_DIRTY);
	struct ssdp_evict_view room = view(15, 20, SSDP_HEAD_DIRTY);
	struct ssdp_evict_action a;
	u64 t, resumed;

	setup(&sm);
	ssdp_esm_set_max_wait(&sm, 10 * WAIT);
	/* 30 s of bios every 100 ms, room all along */
	for (t = 0; t < 30000 * MS; t += 100 * MS) {
		ssdp_esm_io_arrival(&sm, t);
		ASSERT_EQ(ssdp_esm_next_action(&sm, t, &room).type,
			  SSDP_EVICT_ACT_NONE);
	}
	/* short: the load has gone on for 30 s without a window */
	ssdp_esm_io_arrival(&sm, t);
	a = ssdp_esm_next_action(&sm, t, &shortv);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_TRUE(a.pressure);
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	/* room again, then short again a second later: at once again */
	t += 100 * MS;
	ssdp_esm_io_arrival(&sm, t);
	ASSERT_EQ(ssdp_esm_next_action(&sm, t, &room).type,
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
	t += 900 * MS;
	ssdp_esm_io_arrival(&sm, t);
	a = ssdp_esm_next_action(&sm, t, &shortv);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_TRUE(a.pressure);
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	ASSERT_EQ(sm.pressure_started, 2);
	/* a quiet window: its writeback phase, then room */
	t += 2 * WAIT;
	a = ssdp_esm_next_action(&sm, t, &shortv);
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_FALSE(a.pressure);
	ssdp_esm_wb_done(&sm, SSDP_WB_EVICT);
	ASSERT_EQ(ssdp_esm_next_action(&sm, t, &room).type,
		  SSDP_EVICT_ACT_NONE);
	ASSERT_EQ(ssdp_esm_state(&sm), SSDP_EVICT_NORMAL);
	/* the load resumes; short 2 s later: max_wait from the window */
	t += 100 * MS;
	resumed = t;
	for (; t < resumed + 2000 * MS; t += 100 * MS)
		ssdp_esm_io_arrival(&sm, t);
	ASSERT_EQ(ssdp_esm_next_action(&sm, t, &shortv).type,
		  SSDP_EVICT_ACT_ARM_TIMER);
	for (; t < resumed + 15000 * MS; t += 100 * MS) {
		ssdp_esm_io_arrival(&sm, t);
		a = ssdp_esm_next_action(&sm, t, &shortv);
		if (a.type == SSDP_EVICT_ACT_START_WRITEBACK)
			break;
		ASSERT_EQ(a.type, SSDP_EVICT_ACT_ARM_TIMER);
	}
	ASSERT_EQ(a.type, SSDP_EVICT_ACT_START_WRITEBACK);
	ASSERT_TRUE(a.pressure);
	ASSERT_EQ(t, resumed + 10 * WAIT);
	ASSERT_EQ(sm.pressure_started, 3);
}
