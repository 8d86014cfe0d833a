/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio dispatch policy: mq-deadline for normal bios plus one throttled
 * low-priority (idle) queue, after the paper "A Deadline I/O Scheduler
 * Equipped with Low Priority Assignment" (idle_dispatch_interval, batch
 * mode after batch_mode_delay), with a starvation bound.
 *
 * The engine owns the bio queues (sector-sorted tree + FIFO for normal
 * reads, normal writes and idle bios) and the in-flight counts of one lower
 * device; this file only decides what to dispatch next and when to wake.
 *
 * Pure logic, NO LOCKING: the caller serialises all calls (the engine's
 * scheduler lock). Time is u64 nanoseconds from the caller; every knob is
 * stored in ns (the engine converts the ms table/message values).
 *
 * Use: on arrival of a normal bio call ssdp_sched_normal_arrival(), then
 * ssdp_sched_fast_path(): if true, submit it at once (no queueing). On a
 * normal completion ssdp_sched_normal_complete(). Then (and on the timer)
 * loop ssdp_sched_decide() and do what it says until WAIT_UNTIL (arm the
 * timer) or NOTHING (a completion or arrival will call again). decide()
 * commits its choice (batch counters, last idle dispatch time), so the
 * engine must dispatch what it returns; aged idle bios stay idle bios for
 * the accounting (idle in flight). An idle completion needs no event: the
 * engine drops its idle in-flight count and calls decide() again.
 *
 * Anticipation (idle_grace): outside batch mode a throttled idle bio goes
 * out only once no normal bio has arrived or completed for idle_grace. A
 * synchronous normal stream (one bio at a time) leaves a gap of a few
 * microseconds between a completion and its next arrival; an idle bio
 * dispatched into that gap would cost the normal stream two seeks. The
 * interval stays the upper bound: at most one idle per interval.
 *
 * Pressure: background writes the cache needs to make room (eviction with
 * no quiet window in sight) are idle bios with a guaranteed share: one per
 * idle_dispatch_interval goes out even while normal I/O is pending, so
 * that the cache keeps admitting under sustained load while the normal
 * job keeps all but that share of the disk.  When idle bios may go out
 * anyway (quiet, batch mode), pressure bios go first.  And beside a
 * scattered normal load (its last bio did not start near where the one
 * before it ended) they need no anticipation and no interval: one goes
 * whenever the device has no normal bio queued or in flight.  The next
 * normal bio seeks anyway, so the most it can lose is the time left of
 * that one write, while a cache short of room that waits for the grace
 * would keep turning the load away (on a queue-depth-1 load with cache
 * hits between its misses, the grace never comes).  A stream keeps the
 * anticipation: a write between two of its bios costs it two seeks.
 *
 * Bursts: a writeback under pressure sends the dirty runs of a stretch of
 * its set as several origin writes at once, in origin order.  Each one
 * that starts a short forward skip after the pressure bio dispatched
 * before it, while that one is in flight, goes right behind it,
 * whichever rule let the first one go: the disk serves the burst in one
 * pass over a track instead of a seek per run, and a burst counts as one
 * dispatch of the share, the gap or the interval.  At most
 * idle_batch_depth bios make a burst.
 *
 * Work-conserving idle (idle_budget > 0): the interval starves idle work
 * whatever the device time normal I/O leaves unused.  So the policy also
 * learns the normal class's gaps (from the moment no normal bio is queued
 * or in flight to the next normal arrival: a decayed histogram), and the
 * time one idle bio takes on the device.  After e ns of such a gap, one
 * idle bio (one at a time) goes out when the gaps learnt say the next
 * normal bio is unlikely to arrive during it: P(gap <= e + service |
 * gap > e) at most a threshold.  A gap longer than any learnt, or than a
 * second (learnt or not: a sparse job's every gap), takes idle bios back
 * to back.  A stream's gaps keep the anticipation (idle_grace), as
 * for pressure.  The budget is enforced per arrival, not estimated:
 * a normal bio that finds in flight an idle bio the budget's rules sent
 * (the interval's floor or a learnt gap) runs up a debt of one bio, which
 * every normal arrival pays down by idle_budget per mille; the floor
 * waits while any debt is left, and no idle bio goes in a gap while more
 * than one is owed (with one, only the gaps' safest part).  So over any
 * run of arrivals at most budget x arrivals + 2 of them meet idle I/O
 * those rules sent.  Batch mode, the starvation bound and the pressure
 * share have bounds of their own and are not charged: a cache short of
 * room beside a busy job meets its pressure bios many times a second,
 * and charged, the meetings would keep the gaps shut long after the busy
 * job is gone.
 * A meeting also halves the threshold at once; an arrival with no debt
 * after the threshold held an idle bio back raises it by a sixteenth
 * (BFQ's injection and blk-iolatency adjust the same way).
 * Only held bios raise it: a normal job alone, or one without gaps, does
 * not teach it that risk is free.  A gap past the learnt range (a second
 * and more: the normal job had stopped) forgets most of what was learnt,
 * so a new job is not judged by the old one's gaps, nor charged for the
 * old one's meetings.
 */
#ifndef SSDP_SCHED_POLICY_H
#define SSDP_SCHED_POLICY_H

#include "ssdp_compat.h"

#define SSDP_NS_PER_MS		1000000ULL

enum ssdp_sched_dir {
	SSDP_DIR_READ,
	SSDP_DIR_WRITE,
};

enum ssdp_sched_act {
	SSDP_SCHED_NOTHING,		/* an event will call again */
	SSDP_SCHED_WAIT_UNTIL,		/* arm the timer at .when */
	/* normal: next in sector order after the last of that direction */
	SSDP_SCHED_NORMAL_READ_SORTED,
	SSDP_SCHED_NORMAL_READ_FIFO,	/* oldest normal read */
	SSDP_SCHED_NORMAL_WRITE_SORTED,
	SSDP_SCHED_NORMAL_WRITE_FIFO,
	SSDP_SCHED_IDLE_SORTED,		/* next idle bio in sector order */
	SSDP_SCHED_IDLE_FIFO,		/* oldest idle bio */
	SSDP_SCHED_IDLE_AS_NORMAL,	/* oldest idle bio, aged past max_wait */
	SSDP_SCHED_PRESSURE,		/* oldest pressure bio (see below) */
};

struct ssdp_sched_decision {
	enum ssdp_sched_act act;
	u64 when;			/* for WAIT_UNTIL */
	/*
	 * Sent by the budget's rules, the interval's floor or a learnt gap
	 * (idle_budget): a normal bio that arrives while it is in flight is
	 * charged to the budget.
	 */
	bool budgeted;
};

/* What the engine's queues look like now. */
struct ssdp_sched_view {
	u32 nr_read;			/* queued normal reads */
	u32 nr_write;			/* queued normal writes */
	bool read_expired;		/* FIFO head read past its deadline */
	bool write_expired;
	/* a queued bio at/after the last dispatched one of that direction */
	bool read_has_next;
	bool write_has_next;
	u32 nr_idle;			/* queued idle bios */
	bool idle_has_next;		/* same, for the idle sorted queue */
	u64 idle_oldest;		/* arrival time of the oldest idle bio */
	u32 nr_pressure;		/* queued pressure bios */
	/*
	 * The oldest pressure bio starts at or after where the last one
	 * dispatched ended, at most SSDP_SCHED_NEAR_SECTORS on.
	 */
	bool pressure_follows;
	u32 normal_inflight;
	u32 idle_inflight;
};

struct ssdp_sched_knobs {
	u64 read_expire_ns;		/* 500 ms */
	u64 write_expire_ns;		/* 5000 ms */
	u32 fifo_batch;			/* 16 */
	u32 writes_starved;		/* 2 */
	u32 normal_depth;		/* normal bios in flight before queueing */
	u64 idle_interval_ns;		/* idle_dispatch_interval, 200 ms */
	u64 idle_grace_ns;		/* quiet time before a throttled idle */
	u64 batch_delay_ns;		/* batch_mode_delay, 5000 ms */
	u32 idle_batch_depth;		/* idle in flight in batch mode, 16 */
	u64 idle_max_wait_ns;		/* 0 = idle bios are never promoted */
	/*
	 * Per mille of normal arrivals that may find an idle bio in flight;
	 * 0 = no injection into learnt gaps (the interval's rule alone).
	 */
	u32 idle_budget;
};

/* Gap histogram buckets: bucket i holds gaps up to ssdp_sched_gap_top(i). */
#define SSDP_SCHED_GAP_BUCKETS	50
/* Fixed-point weight of one gap; all halve past SSDP_SCHED_GAP_MAX. */
#define SSDP_SCHED_GAP_ONE	16U
#define SSDP_SCHED_GAP_MAX	(64U * SSDP_SCHED_GAP_ONE)
/* Gaps learnt before the histogram is trusted. */
#define SSDP_SCHED_GAP_TRUST	(8U * SSDP_SCHED_GAP_ONE)
/* Injection threshold: probability in 1/1024. */
#define SSDP_SCHED_INJ_ONE	1024U
#define SSDP_SCHED_INJ_START	64U
#define SSDP_SCHED_INJ_MAX	512U
/* The threshold while a debt is paid: the gaps' early, safe part. */
#define SSDP_SCHED_INJ_SAFE	16U
/*
 * Budget debt, in thousandths of a normal bio that met idle I/O: a
 * meeting adds SSDP_SCHED_DEBT_MET, each normal arrival pays idle_budget.
 */
#define SSDP_SCHED_DEBT_MET	1000U
#define SSDP_SCHED_DEBT_MAX	(2U * SSDP_SCHED_DEBT_MET)

/* What the policy learns of the normal class (idle_budget). */
struct ssdp_sched_gaps {
	u32 w[SSDP_SCHED_GAP_BUCKETS];	/* decayed weights */
	u32 total;
	bool open;			/* a gap runs since @start */
	u64 start;
	u64 idle_service;		/* decayed idle service time, ns */
	u32 thresh;			/* injection threshold, 1/1024 */
	/* Owed for normal bios that met budgeted idle I/O (see the header). */
	u32 debt;
	/* The threshold held an idle bio back since the last arrival. */
	bool held;
};

enum ssdp_sched_mode {
	SSDP_SCHED_MODE_NORMAL,
	SSDP_SCHED_MODE_BATCH,
};

struct ssdp_sched_state {
	struct ssdp_sched_knobs k;

	enum ssdp_sched_mode mode;
	enum ssdp_sched_dir last_dir;
	u32 batching;			/* sorted dispatches in this batch */
	u32 starved;			/* times reads were chosen over writes */
	u64 last_normal;		/* last normal arrival or completion */
	u64 last_idle;			/* last throttled idle dispatch */
	bool idle_ever;			/* last_idle is meaningful */
	u64 last_pressure;		/* last pressure dispatch by share */
	bool pressure_ever;
	/*
	 * The last background dispatch was a pressure bio, and how many
	 * pressure bios have gone in its burst (see the header).
	 */
	bool pressure_last;
	u32 burst;
	bool burst_budgeted;		/* that burst was sent by the budget */
	/*
	 * Where the last normal bio ended, and whether it started within
	 * SSDP_SCHED_NEAR_SECTORS of where the one before it ended.
	 */
	u64 normal_next;
	bool normal_near;

	/* counters */
	u64 idle_dispatched;		/* all idle dispatches, aged included */
	u64 batch_entries;
	u64 idle_promoted;		/* dispatched as normal by age */
	u64 pressure_dispatched;	/* by the guaranteed share */
	u64 pressure_gaps;		/* in the gaps of a scattered load */
	u64 pressure_burst;		/* following one in flight */
	u64 housekeeping;		/* normal arrivals that were housekeeping */
	u64 idle_injected;		/* into learnt gaps (idle_budget) */
	u64 normal_met_idle;		/* normal arrivals with idle in flight */
	u64 normal_met_charged;		/* of those, charged to idle_budget */

	struct ssdp_sched_gaps gaps;
};

void ssdp_sched_default_knobs(struct ssdp_sched_knobs *k);
void ssdp_sched_init(struct ssdp_sched_state *st,
		     const struct ssdp_sched_knobs *k, u64 now);

/* Events. */
void ssdp_sched_normal_arrival(struct ssdp_sched_state *st, u64 now);
void ssdp_sched_normal_complete(struct ssdp_sched_state *st, u64 now);
/*
 * Where a normal bio that arrives goes (not housekeeping): 1 MiB either
 * side of where the previous one ended counts as near (a stream, or a
 * short skip an HDD serves from the same tracks).
 */
#define SSDP_SCHED_NEAR_SECTORS	2048ULL
void ssdp_sched_normal_position(struct ssdp_sched_state *st, u64 sector,
				u32 sectors);
/*
 * For idle_budget: the last normal bio left the device (none queued or in
 * flight); a normal bio arrived (not housekeeping), finding idle bios in
 * flight or not, and among them bios the budget's rules sent (decision
 * .budgeted) or not; an idle bio dispatched at @sent completed, alone on
 * the device (its time is a service time).
 */
void ssdp_sched_normal_drained(struct ssdp_sched_state *st, u64 now);
void ssdp_sched_normal_seen(struct ssdp_sched_state *st, u64 now,
			    bool idle_in_flight, bool budgeted_in_flight);
void ssdp_sched_idle_complete(struct ssdp_sched_state *st, u64 now,
			      u64 sent);
/* The upper bound of gap bucket @i, ns (the last is open-ended). */
u64 ssdp_sched_gap_top(unsigned int i);
/*
 * After @elapsed ns of a gap: may one idle bio go now?  If not, *@next is
 * the elapsed time from which it may (~0ULL: not yet known).
 */
bool ssdp_sched_gap_safe(const struct ssdp_sched_gaps *g, u64 elapsed,
			 u64 *next);

/*
 * A normal bio that is housekeeping (REQ_META/FUA/flush from a kernel
 * thread or an idle task; classify.c) arrives: only counted.  It
 * neither ends batch mode nor restarts the quiet time, and its completion
 * is not reported either; while queued or in flight it holds idle bios
 * back like any normal bio.
 */
void ssdp_sched_housekeeping_arrival(struct ssdp_sched_state *st);

/*
 * A normal bio that just arrived may skip the queues: nothing normal is
 * queued (so no reordering past older bios) and the device has room.
 */
static inline bool ssdp_sched_fast_path(const struct ssdp_sched_state *st,
					u32 nr_normal_queued,
					u32 normal_inflight)
{
	return !nr_normal_queued && normal_inflight < st->k.normal_depth;
}

/* FIFO deadline to stamp on a queued normal bio. */
static inline u64 ssdp_sched_deadline(const struct ssdp_sched_state *st,
				      enum ssdp_sched_dir dir, u64 now)
{
	return now + (dir == SSDP_DIR_WRITE ? st->k.write_expire_ns :
		      st->k.read_expire_ns);
}

struct ssdp_sched_decision ssdp_sched_decide(struct ssdp_sched_state *st,
					     u64 now,
					     const struct ssdp_sched_view *v);

static inline enum ssdp_sched_mode
ssdp_sched_mode(const struct ssdp_sched_state *st)
{
	return st->mode;
}

const char *ssdp_sched_mode_name(enum ssdp_sched_mode mode);

#endif /* SSDP_SCHED_POLICY_H */
