// SPDX-License-Identifier: GPL-2.0
#include "harness.h"
#include "sched_policy.h"

#define MS	SSDP_NS_PER_MS

/*
 * Default knobs, but no anticipation grace, no starvation bound and no
 * learnt gaps: the tests of the other rules dispatch idle right after a
 * normal event, run for longer than the bound, and report no gaps (past
 * a second, a gap takes idle bios back to back); grace, bound and gaps
 * have their own tests.
 */
static void setup(struct ssdp_sched_state *st, u64 now)
{
	struct ssdp_sched_knobs k;

	ssdp_sched_default_knobs(&k);
	k.idle_grace_ns = 0;
	k.idle_max_wait_ns = 0;
	k.idle_budget = 0;
	ssdp_sched_init(st, &k, now);
}

static struct ssdp_sched_decision dec(struct ssdp_sched_state *st, u64 now,
				      const struct ssdp_sched_view *v)
{
	return ssdp_sched_decide(st, now, v);
}

static enum ssdp_sched_act act(struct ssdp_sched_state *st, u64 now,
			       const struct ssdp_sched_view *v)
{
	return ssdp_sched_decide(st, now, v).act;
}

TEST(sched_defaults_and_fast_path)
{
	struct ssdp_sched_state st;

	setup(&st, 0);
	ASSERT_EQ(st.k.read_expire_ns, 500 * MS);
	ASSERT_EQ(st.k.write_expire_ns, 5000 * MS);
	ASSERT_EQ(st.k.fifo_batch, 16);
	ASSERT_EQ(st.k.writes_starved, 2);
	ASSERT_EQ(st.k.idle_interval_ns, 200 * MS);
	ASSERT_EQ(st.k.batch_delay_ns, 5000 * MS);
	ASSERT_EQ(st.k.idle_max_wait_ns, 0);	/* setup()'s; default below */
	ASSERT_EQ(ssdp_sched_deadline(&st, SSDP_DIR_READ, 10), 10 + 500 * MS);
	ASSERT_EQ(ssdp_sched_deadline(&st, SSDP_DIR_WRITE, 10),
		  10 + 5000 * MS);
	ASSERT_TRUE(ssdp_sched_fast_path(&st, 0, 0));
	ASSERT_EQ(st.k.normal_depth, 32);
	ASSERT_TRUE(ssdp_sched_fast_path(&st, 0, 31));
	ASSERT_FALSE(ssdp_sched_fast_path(&st, 0, 32));	/* device full */
	ASSERT_FALSE(ssdp_sched_fast_path(&st, 1, 0));	/* keep order */
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_NORMAL);
	ASSERT_EQ(ssdp_sched_mode_name(SSDP_SCHED_MODE_BATCH)[0], 'b');
}

TEST(sched_empty_queues_nothing)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_view v = { 0 };

	setup(&st, 0);
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NOTHING);
	v.normal_inflight = 3;
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NOTHING);
	v.idle_inflight = 1;
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NOTHING);
}

TEST(sched_normal_reads_before_writes_before_idle)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_view v = {
		.nr_read = 3, .nr_write = 3, .nr_idle = 5,
		.read_has_next = true, .write_has_next = true,
		.idle_has_next = true,
	};

	setup(&st, 0);
	/* first pick: reads, from the FIFO head? no: sorted, has next */
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_READ_SORTED);
	v.nr_read = 0;
	v.read_has_next = false;
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_WRITE_SORTED);
	v.nr_write = 0;
	v.write_has_next = false;
	/* idle waits while normal bios are in flight */
	v.normal_inflight = 1;
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NOTHING);
	v.normal_inflight = 0;
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_IDLE_SORTED);
	ASSERT_EQ(st.idle_dispatched, 1);
}

TEST(sched_normal_depth_limit)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_view v = {
		.nr_read = 1, .read_has_next = true, .normal_inflight = 32,
	};

	setup(&st, 0);
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NOTHING);
	v.normal_inflight = 31;
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_READ_SORTED);
}

TEST(sched_fifo_batch_and_deadline_expiry)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_view v = {
		.nr_read = 100, .read_has_next = true,
	};
	int i;

	setup(&st, 0);
	/* a batch of fifo_batch sorted dispatches */
	for (i = 0; i < 16; i++)
		ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_READ_SORTED);
	/* batch over: re-select; expired FIFO head goes first */
	v.read_expired = true;
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_READ_FIFO);
	ASSERT_EQ(st.batching, 1);
	/* within the new batch, sorted again even if expired (mq-deadline) */
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_READ_SORTED);
	/* nothing after the last position: wrap to the FIFO head */
	v.read_has_next = false;
	v.read_expired = false;
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_READ_FIFO);
	/* expired writes also start from the FIFO head */
	v.nr_read = 0;
	v.nr_write = 4;
	v.write_has_next = true;
	v.write_expired = true;
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_WRITE_FIFO);
	ASSERT_EQ(st.last_dir, SSDP_DIR_WRITE);
	v.write_expired = false;
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_WRITE_SORTED);
}

TEST(sched_writes_starved_bound)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_view v = {
		.nr_read = 50, .nr_write = 50,
		.read_has_next = false, .write_has_next = false,
	};
	enum ssdp_sched_act seq[9];
	int i;

	setup(&st, 0);
	/* no next in sort order: every dispatch re-selects a direction */
	for (i = 0; i < 9; i++)
		seq[i] = act(&st, 1, &v);
	/* reads twice (writes_starved = 2), then one write, repeat */
	for (i = 0; i < 9; i++)
		ASSERT_EQ(seq[i], i % 3 == 2 ? SSDP_SCHED_NORMAL_WRITE_FIFO :
			  SSDP_SCHED_NORMAL_READ_FIFO);
	/* with sorted batches, starvation is counted per batch */
	setup(&st, 0);
	v.write_has_next = true;
	v.read_has_next = true;
	for (i = 0; i < 16; i++)
		ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_READ_SORTED);
	ASSERT_EQ(st.starved, 1);
	for (i = 0; i < 16; i++)
		ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_READ_SORTED);
	ASSERT_EQ(st.starved, 2);
	for (i = 0; i < 16; i++)
		ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_WRITE_SORTED);
	ASSERT_EQ(st.starved, 0);
	ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_READ_SORTED);
	/* only writes: no starvation counting */
	v.nr_read = 0;
	v.read_has_next = false;
	for (i = 0; i < 40; i++)
		ASSERT_EQ(act(&st, 1, &v), SSDP_SCHED_NORMAL_WRITE_SORTED);
	ASSERT_EQ(st.starved, 0);
}

TEST(sched_idle_interval_throttle)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_view v = {
		.nr_idle = 10, .idle_has_next = true, .idle_oldest = 0,
	};
	struct ssdp_sched_decision d;
	u64 t = 1000 * MS;

	setup(&st, 0);
	ssdp_sched_normal_complete(&st, t);	/* keeps batch mode away */
	ASSERT_EQ(act(&st, t, &v), SSDP_SCHED_IDLE_SORTED);
	/* one idle in flight at most */
	v.idle_inflight = 1;
	d = dec(&st, t + 300 * MS, &v);
	ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(d.when, t + 5000 * MS);	/* only batch entry wakes */
	/* completed quickly: next one only 200 ms after the last dispatch */
	v.idle_inflight = 0;
	d = dec(&st, t + 10 * MS, &v);
	ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(d.when, t + 200 * MS);
	d = dec(&st, t + 199 * MS, &v);
	ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
	v.idle_has_next = false;	/* wrap: oldest first */
	ASSERT_EQ(act(&st, t + 200 * MS, &v), SSDP_SCHED_IDLE_FIFO);
	/* over 2 s of quiet-ish time: at most 11 idle dispatches */
	{
		u64 now = t + 200 * MS, end = t + 2200 * MS;
		int n = 0;

		st.idle_dispatched = 0;
		while (now <= end) {
			d = dec(&st, now, &v);
			if (d.act == SSDP_SCHED_WAIT_UNTIL) {
				ASSERT_GT(d.when, now);
				now = d.when;
				continue;
			}
			ASSERT_EQ(d.act, SSDP_SCHED_IDLE_FIFO);
			n++;
		}
		ASSERT_EQ(n, 10);
	}
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_NORMAL);
}

TEST(sched_idle_blocked_by_normal)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_view v = {
		.nr_idle = 1, .idle_has_next = true, .nr_write = 1,
		.write_has_next = true,
	};

	setup(&st, 0);
	ASSERT_EQ(act(&st, 10 * 1000 * MS, &v),
		  SSDP_SCHED_NORMAL_WRITE_SORTED);
	v.nr_write = 0;
	v.normal_inflight = 1;
	ASSERT_EQ(act(&st, 10 * 1000 * MS, &v), SSDP_SCHED_NOTHING);
	ASSERT_EQ(st.idle_dispatched, 0);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_NORMAL);
}

TEST(sched_batch_mode_entry_and_exit)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_view v = {
		.nr_idle = 100, .idle_has_next = true,
	};
	struct ssdp_sched_decision d;
	u64 t = 100 * MS;
	u32 i;

	setup(&st, 0);
	ssdp_sched_normal_arrival(&st, t);
	ssdp_sched_normal_complete(&st, t + 5 * MS);
	ASSERT_EQ(act(&st, t + 5 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	v.idle_inflight = 1;
	d = dec(&st, t + 6 * MS, &v);
	ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(d.when, t + 5005 * MS);
	/* just before the delay: still throttled */
	ASSERT_EQ(act(&st, t + 5004 * MS, &v), SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_NORMAL);
	/* delay over: batch mode, idle unthrottled up to the depth */
	for (i = 1; i < 16; i++) {
		v.idle_inflight = i;
		ASSERT_EQ(act(&st, t + 5005 * MS, &v),
			  SSDP_SCHED_IDLE_SORTED);
	}
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_BATCH);
	ASSERT_EQ(st.batch_entries, 1);
	v.idle_inflight = 16;
	ASSERT_EQ(act(&st, t + 5005 * MS, &v), SSDP_SCHED_NOTHING);
	v.idle_inflight = 15;
	ASSERT_EQ(act(&st, t + 5006 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	ASSERT_EQ(st.batch_entries, 1);
	/* the first normal arrival ends batch mode at once */
	ssdp_sched_normal_arrival(&st, t + 5007 * MS);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_NORMAL);
	ASSERT_FALSE(ssdp_sched_fast_path(&st, 0, 32));
	ASSERT_TRUE(ssdp_sched_fast_path(&st, 0, 0));
	v.idle_inflight = 0;
	v.normal_inflight = 1;
	ASSERT_EQ(act(&st, t + 5008 * MS, &v), SSDP_SCHED_NOTHING);
	/* normal done: throttled again until another quiet delay */
	ssdp_sched_normal_complete(&st, t + 5010 * MS);
	v.normal_inflight = 0;
	ASSERT_EQ(act(&st, t + 5011 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	d = dec(&st, t + 5012 * MS, &v);
	ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(d.when, t + 5211 * MS);
	ASSERT_EQ(act(&st, t + 10010 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_BATCH);
	ASSERT_EQ(st.batch_entries, 2);
}

/*
 * File system housekeeping (a kernel thread's journal commit or metadata
 * writeback) is normal I/O: idle waits while it is in flight.  But it is
 * no sign of a normal workload: it neither restarts the quiet time before
 * batch mode nor ends batch mode.  An idle backup's own journal commits
 * (every 5 s on ext4) would otherwise keep it throttled for good.
 */
TEST(sched_housekeeping_not_normal_activity)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_view v = {
		.nr_idle = 100, .idle_has_next = true,
	};
	u64 t = 100 * MS;

	setup(&st, 0);
	ssdp_sched_normal_arrival(&st, t);
	ssdp_sched_normal_complete(&st, t + 5 * MS);
	ASSERT_EQ(act(&st, t + 5 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	/* a journal commit in flight: idle waits for it, as for any normal */
	ssdp_sched_housekeeping_arrival(&st);
	v.normal_inflight = 1;
	ASSERT_EQ(act(&st, t + 3000 * MS, &v), SSDP_SCHED_NOTHING);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_NORMAL);
	/* done (not reported): throttled idle again, by the interval only */
	v.normal_inflight = 0;
	ASSERT_EQ(act(&st, t + 3001 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	ASSERT_EQ(act(&st, t + 3002 * MS, &v), SSDP_SCHED_WAIT_UNTIL);
	/* the quiet time still runs from the last normal completion */
	ASSERT_EQ(act(&st, t + 5005 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_BATCH);
	ASSERT_EQ(st.batch_entries, 1);
	/* in batch mode: housekeeping does not end it, but is waited for */
	ssdp_sched_housekeeping_arrival(&st);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_BATCH);
	v.normal_inflight = 1;
	ASSERT_EQ(act(&st, t + 5006 * MS, &v), SSDP_SCHED_NOTHING);
	v.normal_inflight = 0;
	ASSERT_EQ(act(&st, t + 5007 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	v.idle_inflight = 1;
	ASSERT_EQ(act(&st, t + 5007 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_BATCH);
	ASSERT_EQ(st.batch_entries, 1);
	ASSERT_EQ(st.housekeeping, 2);
	/* a normal task's bio still ends batch mode at once */
	ssdp_sched_normal_arrival(&st, t + 5008 * MS);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_NORMAL);
	v.idle_inflight = 0;
	v.normal_inflight = 1;
	ASSERT_EQ(act(&st, t + 5009 * MS, &v), SSDP_SCHED_NOTHING);
	/* and its completion restarts the quiet time */
	ssdp_sched_normal_complete(&st, t + 5010 * MS);
	v.normal_inflight = 0;
	ASSERT_EQ(act(&st, t + 9000 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_NORMAL);
	ASSERT_EQ(act(&st, t + 10010 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_BATCH);
	ASSERT_EQ(st.batch_entries, 2);
}

TEST(sched_batch_mode_entered_without_idle_queued)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_view v = { 0 };

	setup(&st, 0);
	ASSERT_EQ(act(&st, 4999 * MS, &v), SSDP_SCHED_NOTHING);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_NORMAL);
	ASSERT_EQ(act(&st, 5000 * MS, &v), SSDP_SCHED_NOTHING);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_BATCH);
}

TEST(sched_starvation_bound)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	struct ssdp_sched_view v = {
		.nr_idle = 2, .idle_has_next = true, .idle_oldest = 1000 * MS,
		.nr_read = 5, .read_has_next = true, .normal_inflight = 3,
	};
	struct ssdp_sched_decision d;

	ssdp_sched_default_knobs(&k);
	k.idle_max_wait_ns = 2000 * MS;
	ssdp_sched_init(&st, &k, 0);
	/* not aged yet: normal first, idle not at all */
	ASSERT_EQ(act(&st, 2999 * MS, &v), SSDP_SCHED_NORMAL_READ_SORTED);
	v.nr_read = 0;
	d = dec(&st, 2999 * MS, &v);
	ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(d.when, 3000 * MS);
	/* aged: dispatched as normal, even with normal queued/in flight */
	v.nr_read = 5;
	ASSERT_EQ(act(&st, 3000 * MS, &v), SSDP_SCHED_IDLE_AS_NORMAL);
	ASSERT_EQ(st.idle_promoted, 1);
	ASSERT_EQ(st.idle_dispatched, 1);
	/* but only when the device has room */
	v.normal_inflight = 31;
	v.idle_inflight = 1;
	ASSERT_EQ(act(&st, 3001 * MS, &v), SSDP_SCHED_NOTHING);
	/* 0 = never promoted */
	k.idle_max_wait_ns = 0;
	ssdp_sched_init(&st, &k, 0);
	v.normal_inflight = 1;
	v.idle_inflight = 0;
	v.nr_read = 0;
	ASSERT_EQ(act(&st, 1000000 * MS, &v), SSDP_SCHED_NOTHING);
	ASSERT_EQ(st.idle_promoted, 0);
}

TEST(sched_throttled_wake_is_earliest_deadline)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	struct ssdp_sched_view v = {
		.nr_idle = 1, .idle_has_next = true, .idle_oldest = 0,
	};
	struct ssdp_sched_decision d;

	ssdp_sched_default_knobs(&k);
	k.idle_max_wait_ns = 150 * MS;
	ssdp_sched_init(&st, &k, 0);
	ASSERT_EQ(act(&st, 10 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	v.idle_oldest = 20 * MS;
	d = dec(&st, 30 * MS, &v);
	ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(d.when, 170 * MS);	/* aging before the 210 ms slot */
	ASSERT_EQ(act(&st, 170 * MS, &v), SSDP_SCHED_IDLE_AS_NORMAL);
}

TEST(sched_starvation_bound_default)
{
	struct ssdp_sched_knobs k;

	/* mq-deadline's prio_aging_expire: a normal task waiting on idle
	 * data it cannot see (a journal commit) waits at most this long. */
	ssdp_sched_default_knobs(&k);
	ASSERT_EQ(k.idle_max_wait_ns, 10000 * MS);
}

TEST(sched_grace_default)
{
	struct ssdp_sched_knobs k;

	ssdp_sched_default_knobs(&k);
	ASSERT_EQ(k.idle_grace_ns, 10 * MS);
}

/* A synchronous normal reader: idle never slips into its short gaps. */
TEST(sched_grace_sync_reader_gets_no_idle)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	struct ssdp_sched_view v = {
		.nr_idle = 4, .idle_has_next = true,
	};
	struct ssdp_sched_decision d;
	u64 now = 1000 * MS;
	int i;

	ssdp_sched_default_knobs(&k);
	k.idle_budget = 0;	/* the paper's rules; gaps have their own tests */
	k.idle_max_wait_ns = 0;	/* 10 s of reads: the grace alone holds idle */
	ssdp_sched_init(&st, &k, 0);
	/* 5 ms reads, 20 us between a completion and the next arrival */
	for (i = 0; i < 2000; i++) {
		ssdp_sched_normal_complete(&st, now);
		v.normal_inflight = 0;
		d = dec(&st, now, &v);
		ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
		ASSERT_EQ(d.when, now + 10 * MS);
		now += 20000;			/* 20 us */
		ssdp_sched_normal_arrival(&st, now);
		v.normal_inflight = 1;
		ASSERT_EQ(act(&st, now, &v), SSDP_SCHED_NOTHING);
		/* the timer armed for the grace fires mid-read: nothing */
		ASSERT_EQ(act(&st, now + 4 * MS, &v), SSDP_SCHED_NOTHING);
		now += 5 * MS;
	}
	ASSERT_EQ(st.idle_dispatched, 0);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_NORMAL);
}

/* The grace counts from the last normal arrival or completion. */
TEST(sched_grace_then_interval)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	struct ssdp_sched_view v = {
		.nr_idle = 10, .idle_has_next = true,
	};
	struct ssdp_sched_decision d;
	u64 t = 1000 * MS;

	ssdp_sched_default_knobs(&k);
	k.idle_budget = 0;	/* the paper's rules; gaps have their own tests */
	ssdp_sched_init(&st, &k, 0);
	ssdp_sched_normal_complete(&st, t);
	d = dec(&st, t + 1 * MS, &v);
	ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(d.when, t + 10 * MS);
	ASSERT_EQ(act(&st, t + 10 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	/* next: the interval (200 ms) bounds, not the grace */
	d = dec(&st, t + 20 * MS, &v);
	ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(d.when, t + 210 * MS);
	/* a normal bio late in the interval pushes the slot past its grace */
	ssdp_sched_normal_arrival(&st, t + 205 * MS);
	ssdp_sched_normal_complete(&st, t + 206 * MS);
	d = dec(&st, t + 210 * MS, &v);
	ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(d.when, t + 216 * MS);
	ASSERT_EQ(act(&st, t + 216 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	ASSERT_EQ(st.idle_dispatched, 2);
	/* grace 0: the interval alone */
	k.idle_grace_ns = 0;
	ssdp_sched_init(&st, &k, 0);
	ssdp_sched_normal_complete(&st, t);
	ASSERT_EQ(act(&st, t, &v), SSDP_SCHED_IDLE_SORTED);
}

/* Aged idle bios and batch mode ignore the grace. */
TEST(sched_grace_not_for_aged_or_batch)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	struct ssdp_sched_view v = {
		.nr_idle = 3, .idle_has_next = true, .idle_oldest = 0,
	};

	ssdp_sched_default_knobs(&k);
	k.idle_max_wait_ns = 100 * MS;
	k.idle_grace_ns = 50 * MS;
	ssdp_sched_init(&st, &k, 0);
	ssdp_sched_normal_complete(&st, 99 * MS);
	ASSERT_EQ(act(&st, 100 * MS, &v), SSDP_SCHED_IDLE_AS_NORMAL);
	/* batch mode: the delay already is a longer quiet time */
	k.idle_max_wait_ns = 0;
	ssdp_sched_init(&st, &k, 0);
	ASSERT_EQ(act(&st, 5000 * MS, &v), SSDP_SCHED_IDLE_SORTED);
	ASSERT_EQ(ssdp_sched_mode(&st), SSDP_SCHED_MODE_BATCH);
	v.idle_inflight = 1;
	ASSERT_EQ(act(&st, 5000 * MS, &v), SSDP_SCHED_IDLE_SORTED);
}

/*
 * Pressure bios (eviction with no quiet window) get a guaranteed share:
 * one per idle_dispatch_interval while normal I/O stays pending, ahead of
 * the normal queue at that moment, never more; plain idle bios still wait.
 * When idle may go anyway, pressure goes first.
 */
TEST(sched_pressure_share_under_normal_load)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_view v = {
		.nr_read = 5, .read_has_next = true, .nr_idle = 3,
		.nr_pressure = 2, .normal_inflight = 1,
	};
	struct ssdp_sched_decision d;
	u64 t, n = 0, p = 0;

	setup(&st, 0);
	ssdp_sched_normal_arrival(&st, 0);
	/* At once the first time, then once per interval over 10 s. */
	for (t = 0; t < 10000 * MS; t += MS) {
		ssdp_sched_normal_arrival(&st, t);
		d = dec(&st, t, &v);
		if (d.act == SSDP_SCHED_PRESSURE)
			p++;
		else if (d.act == SSDP_SCHED_NORMAL_READ_SORTED ||
			 d.act == SSDP_SCHED_NORMAL_READ_FIFO)
			n++;
		else
			ASSERT_TRUE(false);	/* never a plain idle bio */
	}
	ASSERT_EQ(p, 50);			/* 10 s / 200 ms */
	ASSERT_EQ(st.pressure_dispatched, 50);
	ASSERT_EQ(n, 10000 - 50);
	ASSERT_EQ(st.idle_dispatched, 0);

	/* The device full: pressure waits for room like aged idle bios. */
	v.normal_inflight = st.k.normal_depth;
	ASSERT_EQ(act(&st, 20000 * MS, &v), SSDP_SCHED_NOTHING);

	/* Nothing normal: the throttled idle slot, pressure first. */
	v.nr_read = 0;
	v.normal_inflight = 0;
	ASSERT_EQ(act(&st, 30000 * MS, &v), SSDP_SCHED_PRESSURE);
	/* Between shares, with normal I/O pending, a wake-up at the next. */
	v.nr_read = 1;
	v.normal_inflight = 1;
	st.last_pressure = 40000 * MS;
	d = dec(&st, 40000 * MS + 1, &v);
	ASSERT_NE(d.act, SSDP_SCHED_PRESSURE);
}

/*
 * Beside a scattered normal load, pressure bios need no grace and no
 * interval: one goes in every gap the load leaves on the device, one at a
 * time.  Plain idle bios still wait for the grace, and so does pressure
 * beside a stream (its next bio starts where the last one ended).
 */
TEST(sched_pressure_in_gaps_of_scattered_load)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	struct ssdp_sched_view v = { .nr_idle = 2, .idle_has_next = true };
	struct ssdp_sched_decision d;
	u64 now = 1000 * MS, sector = 0;
	int i;

	ssdp_sched_default_knobs(&k);
	k.idle_budget = 0;	/* the paper's rules; gaps have their own tests */
	k.idle_max_wait_ns = 0;
	ssdp_sched_init(&st, &k, 0);
	/* A queue-depth-1 reader, 4 KiB reads scattered 64 MiB apart. */
	for (i = 0; i < 100; i++) {
		sector = (sector + 131072 * 7) % (1ULL << 30);
		ssdp_sched_normal_arrival(&st, now);
		ssdp_sched_normal_position(&st, sector, 8);
		v.normal_inflight = 1;
		/* Idle never beside the normal bio in flight. */
		v.nr_pressure = 0;
		ASSERT_EQ(act(&st, now, &v), SSDP_SCHED_NOTHING);
		now += 5 * MS;
		ssdp_sched_normal_complete(&st, now);
		v.normal_inflight = 0;
		/* Plain idle alone: the grace. */
		v.nr_pressure = 0;
		d = dec(&st, now, &v);
		ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
		ASSERT_EQ(d.when, now + 10 * MS);
		/* Pressure: at once, and ahead of idle. */
		v.nr_pressure = 1;
		ASSERT_EQ(act(&st, now, &v), SSDP_SCHED_PRESSURE);
		/* One at a time. */
		v.idle_inflight = 1;
		ASSERT_NE(act(&st, now, &v), SSDP_SCHED_PRESSURE);
		v.idle_inflight = 0;
		now += 20000;
	}
	ASSERT_EQ(st.pressure_gaps, 100);
	ASSERT_EQ(st.pressure_dispatched, 0);

	/* A stream: pressure waits for the grace like any idle bio. */
	for (i = 0; i < 3; i++) {
		ssdp_sched_normal_arrival(&st, now);
		ssdp_sched_normal_position(&st, sector, 256);
		sector += 256;
		now += 2 * MS;
		ssdp_sched_normal_complete(&st, now);
	}
	v.nr_pressure = 1;
	d = dec(&st, now, &v);
	ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(d.when, now + 10 * MS);
	/* A short skip forward (under 1 MiB) is still a stream. */
	ssdp_sched_normal_arrival(&st, now);
	ssdp_sched_normal_position(&st, sector + 1024, 8);
	ssdp_sched_normal_complete(&st, now + MS);
	ASSERT_EQ(dec(&st, now + MS, &v).act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(st.pressure_gaps, 100);
}

/*
 * A burst: the pressure bios that follow the one in flight a short skip
 * on go right behind it, whichever rule let the first go (a gap, the
 * share), up to idle_batch_depth; one that does not follow waits, and so
 * does one after a plain idle dispatch.  Normal bios still come first
 * for what the burst does not hold.
 */
TEST(sched_pressure_burst_follows_in_flight)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	struct ssdp_sched_view v = { 0 };
	u64 now = 1000 * MS;
	u32 i;

	ssdp_sched_default_knobs(&k);
	k.idle_max_wait_ns = 0;
	ssdp_sched_init(&st, &k, 0);
	/* A scattered reader leaves a gap: the first of the burst goes. */
	ssdp_sched_normal_arrival(&st, now);
	ssdp_sched_normal_position(&st, 1 << 20, 8);
	ssdp_sched_normal_complete(&st, now + 5 * MS);
	now += 5 * MS;
	v.nr_pressure = 4;
	ASSERT_EQ(act(&st, now, &v), SSDP_SCHED_PRESSURE);
	ASSERT_EQ(st.pressure_gaps, 1);
	/* The rest follow, while the first is in flight. */
	v.idle_inflight = 1;
	v.pressure_follows = true;
	for (i = 1; i < 4; i++) {
		v.nr_pressure = 4 - i;
		ASSERT_EQ(act(&st, now, &v), SSDP_SCHED_PRESSURE);
		v.idle_inflight++;
	}
	ASSERT_EQ(st.pressure_burst, 3);
	/* One that does not follow waits for the next gap. */
	v.nr_pressure = 1;
	v.pressure_follows = false;
	ASSERT_NE(act(&st, now, &v), SSDP_SCHED_PRESSURE);
	/*
	 * Nor does a burst go on past idle_batch_depth: its own bios, or
	 * background bios in flight whatever sent them (batch mode).
	 */
	v.pressure_follows = true;
	st.burst = k.idle_batch_depth;
	ASSERT_NE(act(&st, now, &v), SSDP_SCHED_PRESSURE);
	st.burst = 1;
	v.idle_inflight = k.idle_batch_depth;
	ASSERT_NE(act(&st, now, &v), SSDP_SCHED_PRESSURE);
	v.idle_inflight = 4;
	ASSERT_EQ(st.pressure_burst, 3);
	/*
	 * Once nothing is in flight the burst is over (a normal bio in
	 * flight, the share not due: nothing else may send it either).
	 */
	v.idle_inflight = 0;
	v.normal_inflight = 1;
	st.pressure_ever = true;
	st.last_pressure = now;
	ASSERT_NE(act(&st, now, &v), SSDP_SCHED_PRESSURE);
	v.idle_inflight = 4;
	ASSERT_NE(act(&st, now, &v), SSDP_SCHED_PRESSURE);
	ASSERT_EQ(st.pressure_burst, 3);
	st.pressure_ever = false;
	v.normal_inflight = 0;

	/* The share's dispatch starts a burst too, beside normal I/O. */
	v.idle_inflight = 0;
	v.normal_inflight = 1;
	v.pressure_follows = false;
	ASSERT_EQ(act(&st, now, &v), SSDP_SCHED_PRESSURE);
	ASSERT_EQ(st.pressure_dispatched, 1);
	v.idle_inflight = 1;
	ASSERT_NE(act(&st, now + MS, &v), SSDP_SCHED_PRESSURE);
	v.pressure_follows = true;
	ASSERT_EQ(act(&st, now + MS, &v), SSDP_SCHED_PRESSURE);
	ASSERT_EQ(st.pressure_burst, 4);
	/* With the device full of normal bios, not even a burst. */
	v.normal_inflight = k.normal_depth - 1;
	ASSERT_NE(act(&st, now + MS, &v), SSDP_SCHED_PRESSURE);

	/* After a plain idle dispatch (not batch mode) no burst. */
	now = 100000 * MS;
	ssdp_sched_init(&st, &k, now - 20 * MS);
	memset(&v, 0, sizeof(v));
	v.nr_idle = 1;
	ASSERT_EQ(act(&st, now, &v), SSDP_SCHED_IDLE_FIFO);
	v.idle_inflight = 1;
	v.nr_pressure = 1;
	v.pressure_follows = true;
	ASSERT_NE(act(&st, now, &v), SSDP_SCHED_PRESSURE);
}

/*
 * A due pressure share or an aged idle bio without room because idle I/O
 * sent on unheld fills normal_depth by itself: a queued normal bio with room
 * of its own goes on (it would wait for idle completions otherwise); once
 * idle I/O leaves room beside the normal I/O, the next slot is the due
 * bio's again (normal waits), and then it goes.
 */
TEST(sched_due_bio_without_room_lets_normal_go)
{
	static const struct {
		u32 nr_pressure, nr_idle;
		enum ssdp_sched_act due;
	} c[] = {
		{ 1, 0, SSDP_SCHED_PRESSURE },		/* the share */
		{ 0, 1, SSDP_SCHED_IDLE_AS_NORMAL },	/* aged idle */
	};
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	struct ssdp_sched_view v;
	unsigned int i;

	for (i = 0; i < 2; i++) {
		memset(&v, 0, sizeof(v));
		v.nr_write = 1;
		v.write_has_next = true;
		v.nr_pressure = c[i].nr_pressure;
		v.nr_idle = c[i].nr_idle;
		v.idle_has_next = c[i].nr_idle;
		v.idle_inflight = 32;
		ssdp_sched_default_knobs(&k);
		k.idle_max_wait_ns = 2000 * MS;
		ssdp_sched_init(&st, &k, 0);
		ASSERT_EQ(act(&st, 3000 * MS, &v),
			  SSDP_SCHED_NORMAL_WRITE_SORTED);
		ASSERT_EQ(st.pressure_dispatched + st.idle_promoted, 0);
		v.normal_inflight = 4;
		v.idle_inflight = 28;
		ASSERT_EQ(act(&st, 3001 * MS, &v), SSDP_SCHED_NOTHING);
		v.idle_inflight = 27;
		ASSERT_EQ(act(&st, 3002 * MS, &v), c[i].due);
	}
}

/*
 * Work-conserving idle (idle_budget): a fake single-head device that
 * serves one bio at a time in the order sent, a QD1 normal job with think
 * times, and an idle backlog that never runs dry.
 */
struct gap_sim {
	struct ssdp_sched_state st;
	u64 now, dev_free, think, svc_normal, svc_idle, end;
	bool exp_think;			/* exponential think times */
	u64 jitter;			/* up to this much added to a think */
	bool idle_off;			/* no idle backlog (a normal job alone) */
	u64 stop_normal;		/* no normal bio from then on */
	u32 rng;
	/* normal job: thinking until next_arr, or in flight until n_end */
	u64 next_arr, n_end;
	bool n_busy;
	u64 i_end[32], i_sent[32];
	bool i_gap[32];
	u32 nr_idle;
	u64 idle_since;			/* the oldest idle bio queued */
	u64 wake;
	/* results */
	u64 normal_done, normal_delayed, max_delay, idle_done;
	u64 normal_busy, normal_arrived, normal_met;
	u64 stops;			/* gaps past a second: a new job */
	u64 last_done;
};

static u32 sim_rand(struct gap_sim *s)
{
	s->rng = s->rng * 1103515245U + 12345U;
	return s->rng >> 16;
}

static u64 sim_think_base(struct gap_sim *s)
{
	u32 r;

	if (!s->exp_think)
		return s->think;
	/* Inversion, think * -ln(U), U in 1/1024 steps from an LCG. */
	r = (sim_rand(s) & 1023) + 1;
	{
		/* ln(1024 / r) as ln 2 times a piecewise-linear log2 */
		u64 x = 1024 * 1024 / r, l = 0;

		while (x >= 2048) {
			x /= 2;
			l += 1024;
		}
		l += (x - 1024);
		return s->think * l * 693 / 1000 / 1024;
	}
}

static u64 sim_think(struct gap_sim *s)
{
	u64 t = sim_think_base(s);

	if (s->jitter)
		t += (u64)(sim_rand(s) & 1023) * s->jitter / 1024;
	return t;
}

static void sim_decide(struct gap_sim *s, u64 *wake)
{
	struct ssdp_sched_view v;
	struct ssdp_sched_decision d;
	u64 start;

	for (;;) {
		memset(&v, 0, sizeof(v));
		v.nr_idle = s->idle_off ? 0 : 1000;
		v.idle_has_next = !s->idle_off;
		/* A reader with one bio queued: the next, since the last. */
		v.idle_oldest = s->idle_since;
		v.normal_inflight = s->n_busy;
		v.idle_inflight = s->nr_idle;
		d = ssdp_sched_decide(&s->st, s->now, &v);
		if (d.act == SSDP_SCHED_WAIT_UNTIL) {
			*wake = d.when;
			return;
		}
		if (d.act == SSDP_SCHED_NOTHING) {
			*wake = ~0ULL;
			return;
		}
		ASSERT_TRUE(d.act == SSDP_SCHED_IDLE_SORTED ||
			    d.act == SSDP_SCHED_IDLE_FIFO ||
			    d.act == SSDP_SCHED_IDLE_AS_NORMAL);
		ASSERT_LT(s->nr_idle, 32);
		start = max(s->now, s->dev_free);
		s->dev_free = start + s->svc_idle;
		s->i_sent[s->nr_idle] = s->now;
		s->i_gap[s->nr_idle] = d.budgeted;
		s->idle_since = s->now;
		s->i_end[s->nr_idle++] = s->dev_free;
	}
}

static void sim_run(struct gap_sim *s)
{
	u64 t, start;
	u32 i, k;
	bool gap;

	while (s->now < s->end) {
		t = s->wake;
		if (!s->n_busy && s->next_arr < s->stop_normal)
			t = min(t, s->next_arr);
		if (s->n_busy)
			t = min(t, s->n_end);
		for (i = 0; i < s->nr_idle; i++)
			t = min(t, s->i_end[i]);
		ASSERT_NE(t, ~0ULL);
		ASSERT_GE(t, s->now);
		s->now = t;
		for (i = 0; i < s->nr_idle; i++) {
			if (s->i_end[i] > s->now)
				continue;
			if (s->nr_idle == 1 && !s->n_busy)
				ssdp_sched_idle_complete(&s->st, s->now,
							 s->i_sent[i]);
			for (k = i; k + 1 < s->nr_idle; k++) {
				s->i_end[k] = s->i_end[k + 1];
				s->i_sent[k] = s->i_sent[k + 1];
				s->i_gap[k] = s->i_gap[k + 1];
			}
			s->nr_idle--;
			s->idle_done++;
			i--;
		}
		if (s->n_busy && s->n_end <= s->now) {
			s->n_busy = false;
			s->normal_done++;
			s->last_done = s->now;
			ssdp_sched_normal_complete(&s->st, s->now);
			ssdp_sched_normal_drained(&s->st, s->now);
			s->next_arr = s->now + sim_think(s);
		}
		if (!s->n_busy && s->next_arr <= s->now &&
		    s->next_arr < s->stop_normal) {
			ssdp_sched_normal_arrival(&s->st, s->now);
			for (k = 0, gap = false; k < s->nr_idle; k++)
				gap |= s->i_gap[k];
			ssdp_sched_normal_seen(&s->st, s->now, s->nr_idle, gap);
			s->normal_arrived++;
			s->stops += s->normal_done &&
				    s->now - s->last_done >
				    ssdp_sched_gap_top(SSDP_SCHED_GAP_BUCKETS - 2);
			s->normal_met += !!s->nr_idle;
			start = max(s->now, s->dev_free);
			if (start > s->now)
				s->normal_delayed++;
			s->max_delay = max(s->max_delay, start - s->now);
			s->n_busy = true;
			s->n_end = start + s->svc_normal;
			s->dev_free = s->n_end;
			s->normal_busy += s->svc_normal;
		}
		sim_decide(s, &s->wake);
	}
}

static void sim_init(struct gap_sim *s, u32 budget, u64 think, bool exp)
{
	struct ssdp_sched_knobs k;

	memset(s, 0, sizeof(*s));
	ssdp_sched_default_knobs(&k);
	k.idle_budget = budget;
	ssdp_sched_init(&s->st, &k, 0);
	s->think = think;
	s->exp_think = exp;
	s->svc_normal = 5 * MS;
	s->svc_idle = 5 * MS;
	s->end = 120000 * MS;
	s->stop_normal = ~0ULL;
	s->rng = 1;
}

/* Idle share of the time normal I/O leaves unused, in per mille. */
static u64 sim_idle_share(const struct gap_sim *s)
{
	return s->idle_done * s->svc_idle * 1000 / (s->end - s->normal_busy);
}

TEST(sched_gap_buckets)
{
	unsigned int i;

	ASSERT_EQ(ssdp_sched_gap_top(0), 250000ULL);
	ASSERT_EQ(ssdp_sched_gap_top(4), 500000ULL);
	for (i = 1; i < SSDP_SCHED_GAP_BUCKETS; i++)
		ASSERT_GT(ssdp_sched_gap_top(i), ssdp_sched_gap_top(i - 1));
	ASSERT_GE(ssdp_sched_gap_top(SSDP_SCHED_GAP_BUCKETS - 2), 1000 * MS);
	ASSERT_EQ(ssdp_sched_gap_top(SSDP_SCHED_GAP_BUCKETS - 1), ~0ULL);
}

TEST(sched_gap_untrusted_until_learnt)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	u64 next, t = 0;
	int i;

	ssdp_sched_default_knobs(&k);
	k.idle_budget = 10;
	ssdp_sched_init(&st, &k, 0);
	for (i = 0; i < 7; i++) {
		ssdp_sched_normal_drained(&st, t);
		t += 50 * MS;
		ssdp_sched_normal_seen(&st, t, false, false);
	}
	ASSERT_FALSE(ssdp_sched_gap_safe(&st.gaps, 0, &next));
	ssdp_sched_normal_drained(&st, t);
	ssdp_sched_normal_seen(&st, t + 50 * MS, false, false);
	/* Now 8 gaps of 50 ms: a 10 ms idle bio fits at once. */
	ASSERT_TRUE(ssdp_sched_gap_safe(&st.gaps, 0, &next));
	/* Not with 45 ms of the gap gone; from past the learnt gaps, yes. */
	ASSERT_FALSE(ssdp_sched_gap_safe(&st.gaps, 45 * MS, &next));
	ASSERT_GT(next, 45 * MS);
	ASSERT_TRUE(ssdp_sched_gap_safe(&st.gaps, next, &next));
	ASSERT_TRUE(ssdp_sched_gap_safe(&st.gaps, 2000 * MS, &next));
}

/* Off (the default): the interval alone, as the paper has it. */
TEST(sched_gap_off_keeps_interval)
{
	struct gap_sim s;

	sim_init(&s, 0, 20 * MS, false);
	sim_run(&s);
	ASSERT_EQ(s.st.idle_injected, 0);
	ASSERT_LT(sim_idle_share(&s), 100);
}

/*
 * Fixed think times: the gaps are learnt, idle bios fill them, and a
 * normal bio never waits behind more than one idle bio.
 */
TEST(sched_gap_fixed_think_used_within_budget)
{
	static const u64 thinks[] = { 20 * MS, 50 * MS };
	struct gap_sim s;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(thinks); i++) {
		sim_init(&s, 10, thinks[i], false);
		sim_run(&s);
		ASSERT_GT(s.st.idle_injected, 0);
		/* >= 0.5 of the unused time at 20 ms, >= 0.8 at 50 ms */
		ASSERT_GE(sim_idle_share(&s), i ? 800 : 500);
		/* budget: 1% of normal bios meet idle I/O, AIMD's slack 2x */
		ASSERT_LE(s.normal_delayed * 1000, 20 * s.normal_done);
		ASSERT_LE(s.max_delay, s.svc_idle);
	}
}

/*
 * Exponential think times: no gap is safe, the budget decides, the
 * interval's floor included (alone it has 2.5% of the normal bios meet
 * idle I/O here).
 */
TEST(sched_gap_exponential_think_budget_holds)
{
	static const u64 thinks[] = { 20 * MS, 200 * MS };
	struct gap_sim s, off;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(thinks); i++) {
		sim_init(&off, 0, thinks[i], true);
		sim_run(&off);
		if (!i)
			ASSERT_GT(off.normal_delayed * 1000,
				  20 * off.normal_done);
		sim_init(&s, 10, thinks[i], true);
		sim_run(&s);
		ASSERT_GT(s.idle_done, 0);
		/* A new job (after a stop) starts with nothing owed. */
		ASSERT_LE(s.st.normal_met_charged * 1000,
			  10 * s.normal_done + 2000 * (1 + s.stops));
		/* uncharged: a new job's first bio */
		ASSERT_LE(s.normal_delayed - s.st.normal_met_charged, s.stops);
		ASSERT_LE(s.max_delay, s.svc_idle);
	}
}

/* The normal job stops: idle bios go back to back before batch mode. */
TEST(sched_gap_long_gap_used)
{
	struct gap_sim s;
	u64 before;

	sim_init(&s, 10, 20 * MS, false);
	s.stop_normal = 10000 * MS;
	s.end = 10000 * MS;
	sim_run(&s);
	before = s.idle_done;
	/* 4 s: still short of batch_mode_delay's 5 s */
	s.end = 14000 * MS;
	sim_run(&s);
	ASSERT_EQ(ssdp_sched_mode(&s.st), SSDP_SCHED_MODE_NORMAL);
	ASSERT_GE(s.idle_done - before, 4000 / 5 * 9 / 10);
}

/* With normal I/O back to back the starvation bound still holds. */
TEST(sched_gap_starvation_bound_holds)
{
	struct gap_sim s;
	struct ssdp_sched_knobs k;

	sim_init(&s, 10, 0, false);
	ssdp_sched_default_knobs(&k);
	k.idle_budget = 10;
	k.idle_max_wait_ns = 1000 * MS;
	ssdp_sched_init(&s.st, &k, 0);
	s.end = 20000 * MS;
	sim_run(&s);
	ASSERT_GE(s.idle_done, 15);
}

/* What one phase of a sim gave. */
struct sim_phase_res {
	u64 arrived, met;		/* normal arrivals, those that met idle */
	u64 charged;			/* of those met, charged to the budget */
	u64 dur;
	u64 share;			/* idle share of the unused time, 1/1000 */
	u64 max_delay;			/* the longest a normal bio waited */
};

/*
 * One phase of a changing workload: think time, idle backlog or not, for
 * @dur from now.
 */
static void sim_phase(struct gap_sim *s, u64 think, bool exp, bool idle,
		      u64 dur, struct sim_phase_res *r)
{
	u64 a = s->normal_arrived, m = s->normal_met, d = s->idle_done;
	u64 c = s->st.normal_met_charged;
	u64 busy = s->normal_busy;

	s->think = think;
	s->exp_think = exp;
	s->idle_off = !idle;
	s->end = s->now + dur;
	s->max_delay = 0;
	/* An idle bio that arrives asks for a decision (the engine's map). */
	sim_decide(s, &s->wake);
	sim_run(s);
	r->arrived = s->normal_arrived - a;
	r->met = s->normal_met - m;
	r->charged = s->st.normal_met_charged - c;
	r->dur = dur;
	busy = min(s->normal_busy - busy, dur - 1);
	r->share = (s->idle_done - d) * s->svc_idle * 1000 / (dur - busy);
	r->max_delay = s->max_delay;
}

/*
 * At most budget per mille of the arrivals met idle I/O sent by the
 * interval or into a gap, and two more: idle bios still go into the safe
 * part of a gap with one meeting unpaid, and one of them may meet the
 * next.  Nothing else sends idle bios here but the floor's, one per
 * interval, uncharged only at a job's first bio.
 */
#define ASSERT_WITHIN_BUDGET(s, r) do {					\
	ASSERT_LE((r).charged * 1000,					\
		  (s).st.k.idle_budget * (r).arrived + 2000);		\
	ASSERT_LE((r).met - (r).charged,				\
		  (r).dur / (s).st.k.idle_interval_ns + 1);		\
} while (0)

/*
 * A normal job alone (no idle I/O waiting) teaches the threshold nothing:
 * that no normal bio met idle I/O is no sign that risk is free.
 */
TEST(sched_gap_alone_keeps_threshold)
{
	struct gap_sim s;
	struct sim_phase_res r;

	sim_init(&s, 50, 0, false);
	sim_phase(&s, 0, false, false, 5000 * MS, &r);
	sim_phase(&s, 5 * MS, false, false, 5000 * MS, &r);
	ASSERT_GE(r.arrived, 500);
	ASSERT_EQ(s.st.gaps.thresh, SSDP_SCHED_INJ_START);
}

/*
 * A normal bio that meets idle I/O: the threshold halves at once, and
 * idle bios in gaps wait until later arrivals have paid for it, but for
 * the part of a gap the learnt gaps say is safe.
 */
TEST(sched_gap_meeting_backs_off_at_once)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	struct ssdp_sched_view v;
	u64 next, t = 0;
	int i;

	ssdp_sched_default_knobs(&k);
	k.idle_budget = 100;
	/* No floor here: it goes whatever the debt (its own test). */
	k.idle_grace_ns = 100000 * MS;
	ssdp_sched_init(&st, &k, 0);
	for (i = 0; i < 16; i++) {
		ssdp_sched_normal_drained(&st, t);
		t += 50 * MS;
		ssdp_sched_normal_seen(&st, t, false, false);
	}
	ASSERT_EQ(st.gaps.debt, 0);
	st.gaps.thresh = SSDP_SCHED_INJ_MAX;
	ASSERT_TRUE(ssdp_sched_gap_safe(&st.gaps, 38 * MS, &next));
	ssdp_sched_normal_drained(&st, t);
	t += 50 * MS;
	ssdp_sched_normal_seen(&st, t, true, true);
	ASSERT_EQ(st.gaps.thresh, SSDP_SCHED_INJ_MAX / 2);
	ASSERT_EQ(st.gaps.debt, SSDP_SCHED_DEBT_MET);
	/* The start of a gap still; not its risky end. */
	ASSERT_TRUE(ssdp_sched_gap_safe(&st.gaps, 0, &next));
	ASSERT_FALSE(ssdp_sched_gap_safe(&st.gaps, 38 * MS, &next));
	memset(&v, 0, sizeof(v));
	v.nr_idle = 1;
	ssdp_sched_normal_drained(&st, t);
	st.gaps.start = t;
	ASSERT_EQ(act(&st, t + 40 * MS, &v), SSDP_SCHED_WAIT_UNTIL);
	/* A second meeting: nothing in gaps until paid down. */
	ssdp_sched_normal_seen(&st, t + 50 * MS, true, true);
	ASSERT_GT(st.gaps.debt, SSDP_SCHED_DEBT_MET);
	ssdp_sched_normal_drained(&st, t + 55 * MS);
	ASSERT_TRUE(ssdp_sched_gap_safe(&st.gaps, 0, &next));
	ASSERT_EQ(act(&st, t + 55 * MS, &v), SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(st.idle_injected + st.idle_dispatched, 0);
	/* The normal job stops: after a second, nobody is left to pay. */
	ASSERT_LE(dec(&st, t + 55 * MS, &v).when, t + 1100 * MS);
	ASSERT_NE(act(&st, t + 1100 * MS, &v), SSDP_SCHED_WAIT_UNTIL);
	ASSERT_EQ(st.idle_injected, 1);
	ssdp_sched_normal_drained(&st, t + 1200 * MS);
	for (i = 0; i < 10; i++)
		ssdp_sched_normal_seen(&st, t + 1300 * MS, false, false);
	ASSERT_EQ(st.gaps.debt, SSDP_SCHED_DEBT_MET);
}

/*
 * A job that starts after a stop finds idle bios in flight (they went
 * back to back): no gap foretold it, so that meeting is not charged, and
 * its gaps open as soon as they are learnt.  A later meeting is charged.
 */
TEST(sched_gap_job_start_not_charged)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	u64 t = 0;
	u32 thresh;

	ssdp_sched_default_knobs(&k);
	k.idle_budget = 10;
	ssdp_sched_init(&st, &k, 0);
	ssdp_sched_normal_drained(&st, t);
	t += 3000 * MS;
	thresh = st.gaps.thresh;
	ssdp_sched_normal_seen(&st, t, true, true);
	ASSERT_EQ(st.normal_met_idle, 1);
	ASSERT_EQ(st.gaps.debt, 0);
	ASSERT_EQ(st.gaps.thresh, thresh);
	ssdp_sched_normal_drained(&st, t);
	t += 50 * MS;
	ssdp_sched_normal_seen(&st, t, true, true);
	ASSERT_EQ(st.normal_met_idle, 2);
	ASSERT_EQ(st.gaps.debt, SSDP_SCHED_DEBT_MET);
}

/*
 * The think bench's sequence: per think time the normal job alone for
 * 5 s, then beside an idle reader for 5 s, thinks in rising order; fixed
 * think times jitter (a loaded guest) and idle bios cost more than normal
 * ones (128 KiB against 4 KiB).  Every phase beside the reader keeps to
 * the budget, whatever the phases before it taught (the 128-arrival
 * windows raised the threshold through the phases alone, and 110 of 184
 * normal bios met idle I/O at exponential 20 ms under budget 50), and a
 * normal bio waits for one idle bio at most.
 */
TEST(sched_gap_budget_holds_across_workloads)
{
	static const u64 thinks[] = { 0, 5 * MS, 20 * MS, 50 * MS };
	static const u32 budgets[] = { 10, 50 };
	struct sim_phase_res r;
	struct gap_sim s;
	unsigned int b, i, e;

	for (b = 0; b < ARRAY_SIZE(budgets); b++) {
		for (e = 0; e < 2; e++) {
			sim_init(&s, budgets[b], 0, false);
			s.svc_idle = 7 * MS;
			s.jitter = e ? 0 : 10 * MS;
			for (i = 0; i < ARRAY_SIZE(thinks); i++) {
				sim_phase(&s, thinks[i], e, false, 5000 * MS,
					  &r);
				sim_phase(&s, thinks[i], e, true, 5000 * MS,
					  &r);
				ASSERT_WITHIN_BUDGET(s, r);
				ASSERT_LE(r.max_delay, s.svc_idle);
				/* Fixed gaps are used, jitter and all. */
				if (!e && thinks[i] >= 20 * MS)
					ASSERT_GE(r.share, 400);
			}
		}
	}
}

/*
 * A period with no normal I/O (idle bios back to back), then a normal job
 * of another kind: its first bio waits for one idle bio at most, the
 * budget holds from there on, and its fixed gaps are used.
 */
TEST(sched_gap_budget_holds_after_quiet)
{
	static const u32 budgets[] = { 10, 50 };
	struct sim_phase_res r;
	struct gap_sim s;
	unsigned int b, e;

	for (b = 0; b < ARRAY_SIZE(budgets); b++) {
		for (e = 0; e < 2; e++) {
			sim_init(&s, budgets[b], 0, false);
			s.svc_idle = 7 * MS;
			sim_phase(&s, 5 * MS, false, true, 5000 * MS, &r);
			s.stop_normal = s.now;
			sim_phase(&s, 5 * MS, false, true, 3000 * MS, &r);
			ASSERT_EQ(r.arrived, 0);
			ASSERT_GE(r.share, 900);
			s.stop_normal = ~0ULL;
			s.next_arr = s.now + 1 * MS;
			sim_phase(&s, 50 * MS, e, true, 5000 * MS, &r);
			ASSERT_WITHIN_BUDGET(s, r);
			ASSERT_LE(r.max_delay, s.svc_idle);
			/*
			 * Its first bio met the idle bios of the quiet: not a
			 * debt that shuts its gaps for 100 arrivals.
			 */
			if (!e)
				ASSERT_GE(r.share, 800);
		}
	}
}

/*
 * Only what the budget's rules send is charged to it: the interval's
 * floor and the learnt gaps.  The pressure share and the pressure in the
 * gaps of a scattered load have their own bounds, and a cache short of
 * room beside a busy job meets its bios many times a second: charged,
 * those meetings would keep the gaps shut for the idle job long after
 * the busy job is gone.
 */
TEST(sched_gap_only_budgeted_meetings_charged)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	struct ssdp_sched_view v;
	struct ssdp_sched_decision d;
	u64 t = 0, sector = 0;
	int i;

	ssdp_sched_default_knobs(&k);
	k.idle_max_wait_ns = 0;
	ssdp_sched_init(&st, &k, 0);
	memset(&v, 0, sizeof(v));
	v.nr_pressure = 1;
	/* A scattered job: pressure in its gaps, and by the share. */
	for (i = 0; i < 200; i++) {
		sector = (sector + 131072 * 7) % (1ULL << 30);
		ssdp_sched_normal_arrival(&st, t);
		ssdp_sched_normal_seen(&st, t, i > 0, false);
		ssdp_sched_normal_position(&st, sector, 8);
		v.normal_inflight = 1;
		v.idle_inflight = 0;
		d = dec(&st, t, &v);
		if (d.act == SSDP_SCHED_PRESSURE)
			ASSERT_FALSE(d.budgeted);
		t += 5 * MS;
		ssdp_sched_normal_complete(&st, t);
		ssdp_sched_normal_drained(&st, t);
		v.normal_inflight = 0;
		d = dec(&st, t, &v);
		ASSERT_EQ(d.act, SSDP_SCHED_PRESSURE);
		ASSERT_FALSE(d.budgeted);
		t += MS;
	}
	ASSERT_GE(st.pressure_gaps, 100);
	ASSERT_EQ(st.normal_met_idle, 199);
	ASSERT_EQ(st.normal_met_charged, 0);
	ASSERT_EQ(st.gaps.debt, 0);
	ASSERT_EQ(st.gaps.thresh, SSDP_SCHED_INJ_START);
	/* Past every gap learnt: plain idle goes into the gap, charged. */
	v.nr_pressure = 0;
	v.nr_idle = 1;
	v.idle_has_next = true;
	d = dec(&st, t, &v);
	ASSERT_NE(d.act, SSDP_SCHED_WAIT_UNTIL);
	ASSERT_TRUE(d.budgeted);
	ASSERT_EQ(st.idle_injected, 1);
	/* The floor's bios are charged too: blind, they meet more often. */
	d = dec(&st, t + 300 * MS, &v);
	ASSERT_TRUE(d.act == SSDP_SCHED_IDLE_SORTED ||
		    d.act == SSDP_SCHED_IDLE_FIFO);
	ASSERT_TRUE(d.budgeted);
	ASSERT_EQ(st.idle_injected, 1);
	/* A meeting with one of them is. */
	ssdp_sched_normal_seen(&st, t + 301 * MS, true, true);
	ASSERT_EQ(st.gaps.debt, SSDP_SCHED_DEBT_MET);
	ASSERT_EQ(st.normal_met_charged, 1);
}

/*
 * A sparse job, a bio every second and a half: every gap is a stop, so
 * what was learnt is forgotten at each bio and never trusted again.  The
 * rest of each gap after a second still goes to idle work, back to back,
 * not only the interval's floor until batch mode.
 */
TEST(sched_gap_sparse_job_gaps_used)
{
	struct sim_phase_res r;
	struct gap_sim s;

	sim_init(&s, 10, 0, false);
	sim_phase(&s, 1500 * MS, false, true, 30000 * MS, &r);
	ASSERT_GE(r.arrived, 15);
	ASSERT_LT(s.st.gaps.total, SSDP_SCHED_GAP_TRUST);
	ASSERT_EQ(s.st.batch_entries, 0);
	/* a third of the time, where the floor alone gives 2.5% */
	ASSERT_GE(r.share, 300);
	ASSERT_LE(r.max_delay, s.svc_idle);
}

/*
 * A stream keeps the anticipation in its gaps too: past every gap it
 * taught, an idle bio still waits for idle_grace after its last bio.  A
 * scattered job's gaps are used at once.
 */
TEST(sched_gap_stream_keeps_grace)
{
	struct ssdp_sched_state st;
	struct ssdp_sched_knobs k;
	struct ssdp_sched_view v;
	struct ssdp_sched_decision d;
	u64 t = 0, sector = 0;
	int i, stream;

	for (stream = 1; stream >= 0; stream--) {
		ssdp_sched_default_knobs(&k);
		k.idle_max_wait_ns = 0;
		ssdp_sched_init(&st, &k, 0);
		memset(&v, 0, sizeof(v));
		v.nr_idle = 1;
		v.idle_has_next = true;
		/* 128 KiB bios back to back, 200 us apart */
		for (i = 0; i < 100; i++) {
			sector = stream ? sector + 256 :
				 (sector + 131072 * 7) % (1ULL << 30);
			ssdp_sched_normal_arrival(&st, t);
			ssdp_sched_normal_seen(&st, t, false, false);
			ssdp_sched_normal_position(&st, sector, 256);
			t += MS;
			ssdp_sched_normal_complete(&st, t);
			ssdp_sched_normal_drained(&st, t);
			v.normal_inflight = 0;
			t += 200000;
		}
		t -= 200000;
		/* The floor out of reach: an idle bio went just now. */
		st.idle_ever = true;
		st.last_idle = t;
		/* 2 ms into a gap: longer than every gap learnt */
		d = dec(&st, t + 2 * MS, &v);
		if (stream) {
			ASSERT_EQ(d.act, SSDP_SCHED_WAIT_UNTIL);
			ASSERT_EQ(d.when, t + k.idle_grace_ns);
			d = dec(&st, t + k.idle_grace_ns, &v);
		}
		ASSERT_TRUE(d.act == SSDP_SCHED_IDLE_SORTED ||
			    d.act == SSDP_SCHED_IDLE_FIFO);
		ASSERT_TRUE(d.budgeted);
		ASSERT_EQ(st.idle_injected, 1);
		t += 5000 * MS;
	}
}
