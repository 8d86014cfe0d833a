// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio dispatch policy. See sched_policy.h; the caller holds the lock.
 */
#include "ssdp_compat.h"
#include "sched_policy.h"

#define SSDP_NEVER	(~0ULL)
/* What an idle bio is taken to cost before one has been timed. */
#define SSDP_SCHED_SERVICE_START	(10 * SSDP_NS_PER_MS)

const char *ssdp_sched_mode_name(enum ssdp_sched_mode mode)
{
	return mode == SSDP_SCHED_MODE_BATCH ? "batch" : "normal";
}

void ssdp_sched_default_knobs(struct ssdp_sched_knobs *k)
{
	k->read_expire_ns = 500 * SSDP_NS_PER_MS;
	k->write_expire_ns = 5000 * SSDP_NS_PER_MS;
	k->fifo_batch = 16;
	k->writes_starved = 2;
	k->normal_depth = 32;
	k->idle_interval_ns = 200 * SSDP_NS_PER_MS;
	k->idle_grace_ns = 10 * SSDP_NS_PER_MS;
	k->batch_delay_ns = 5000 * SSDP_NS_PER_MS;
	k->idle_batch_depth = 16;
	k->idle_max_wait_ns = 10000 * SSDP_NS_PER_MS;
	k->idle_budget = 10;
}

void ssdp_sched_init(struct ssdp_sched_state *st,
		     const struct ssdp_sched_knobs *k, u64 now)
{
	memset(st, 0, sizeof(*st));
	st->k = *k;
	st->mode = SSDP_SCHED_MODE_NORMAL;
	st->last_dir = SSDP_DIR_READ;
	/* No batch running yet: the first dispatch selects a direction. */
	st->batching = ~0U;
	/* Creation counts as activity: batch mode needs a quiet delay. */
	st->last_normal = now;
	st->gaps.open = true;
	st->gaps.start = now;
	st->gaps.idle_service = SSDP_SCHED_SERVICE_START;
	st->gaps.thresh = SSDP_SCHED_INJ_START;
}

u64 ssdp_sched_gap_top(unsigned int i)
{
	if (i >= SSDP_SCHED_GAP_BUCKETS - 1)
		return SSDP_NEVER;
	/*
	 * 250 us times 2^(i/4): 250 us to 1 s in quarter-octaves, fine
	 * enough that a regular gap's bucket starts close to it.
	 */
	static const u32 base[4] = { 250000, 297302, 353553, 420448 };

	return (u64)base[i & 3] << (i / 4);
}

/* A gap past the learnt range: the normal job stopped. */
static u64 gap_stopped(void)
{
	return ssdp_sched_gap_top(SSDP_SCHED_GAP_BUCKETS - 2);
}

static unsigned int gap_bucket(u64 gap)
{
	unsigned int i;

	for (i = 0; i < SSDP_SCHED_GAP_BUCKETS - 1; i++)
		if (gap <= ssdp_sched_gap_top(i))
			break;
	return i;
}

/*
 * Weight of the learnt gaps longer than @x, each bucket's spread evenly
 * over it.  The last bucket is open-ended: its gaps count as longer than
 * any @x, so that they never count as ending within a window.
 */
static u64 gaps_above(const struct ssdp_sched_gaps *g, u64 x)
{
	u64 lo = 0, hi, sum = 0;
	unsigned int i;

	for (i = 0; i < SSDP_SCHED_GAP_BUCKETS; i++, lo = hi) {
		hi = ssdp_sched_gap_top(i);
		if (!g->w[i] || hi <= x)
			continue;
		if (lo >= x || hi == SSDP_NEVER)
			sum += g->w[i];
		else
			sum += div64_u64((u64)g->w[i] * (hi - x), hi - lo);
	}
	return sum;
}

/*
 * Does a gap that lasted @e end within an idle bio's service time?  With
 * a debt to pay, only where the learnt gaps say almost surely not.
 */
static bool gap_safe_at(const struct ssdp_sched_gaps *g, u64 e)
{
	u64 above = gaps_above(g, e);
	u32 thresh = g->thresh;

	if (!above)	/* longer than every gap learnt */
		return true;
	if (g->debt)
		thresh = min(thresh, SSDP_SCHED_INJ_SAFE);
	return (above - gaps_above(g, e + g->idle_service)) *
	       SSDP_SCHED_INJ_ONE <= (u64)thresh * above;
}

bool ssdp_sched_gap_safe(const struct ssdp_sched_gaps *g, u64 elapsed,
			 u64 *next)
{
	unsigned int i;
	u64 top;

	*next = SSDP_NEVER;
	/* The normal job stopped: nobody is left to protect. */
	if (elapsed >= gap_stopped())
		return true;
	/*
	 * Not learnt yet (or forgotten after a stop): only a stop is safe.
	 * A sparse job whose every gap is a stop is still served.
	 */
	if (g->total < SSDP_SCHED_GAP_TRUST) {
		*next = gap_stopped();
		return false;
	}
	if (gap_safe_at(g, elapsed))
		return true;
	/* The hazard changes where the gap leaves a bucket. */
	for (i = 0; i < SSDP_SCHED_GAP_BUCKETS - 1; i++) {
		top = ssdp_sched_gap_top(i);
		if (top > elapsed && gap_safe_at(g, top)) {
			*next = top;
			break;
		}
	}
	return false;
}

void ssdp_sched_normal_drained(struct ssdp_sched_state *st, u64 now)
{
	st->gaps.open = true;
	st->gaps.start = now;
}

static void gap_learn(struct ssdp_sched_gaps *g, u64 gap)
{
	unsigned int i;

	g->w[gap_bucket(gap)] += SSDP_SCHED_GAP_ONE;
	g->total += SSDP_SCHED_GAP_ONE;
	if (g->total <= SSDP_SCHED_GAP_MAX)
		return;
	g->total = 0;
	for (i = 0; i < SSDP_SCHED_GAP_BUCKETS; i++) {
		g->w[i] /= 2;
		g->total += g->w[i];
	}
}

/*
 * A normal bio arrived (idle_budget): a meeting runs up the debt and
 * halves the threshold at once; an arrival pays the debt down, and with
 * none left raises the threshold, if it held an idle bio back meanwhile.
 */
static void budget_arrival(struct ssdp_sched_gaps *g, u32 budget, bool met)
{
	if (met) {
		g->debt = min(g->debt + SSDP_SCHED_DEBT_MET,
			      SSDP_SCHED_DEBT_MAX);
		g->thresh = max(g->thresh / 2, 1U);
	} else {
		g->debt -= min(g->debt, budget);
		if (!g->debt && g->held)
			g->thresh = min(g->thresh + g->thresh / 16 + 1,
					SSDP_SCHED_INJ_MAX);
	}
	g->held = false;
}

/*
 * A gap past the learnt range: the normal job had stopped.  What it
 * taught is mostly forgotten (the histogram untrusted until a few gaps
 * of the next job are in), the threshold starts again and the old job's
 * debt is void.
 */
static void gaps_forget(struct ssdp_sched_gaps *g)
{
	unsigned int i;

	g->debt = 0;
	g->total = 0;
	for (i = 0; i < SSDP_SCHED_GAP_BUCKETS; i++) {
		g->w[i] /= 16;
		g->total += g->w[i];
	}
	g->thresh = min(g->thresh, SSDP_SCHED_INJ_START);
}

void ssdp_sched_normal_seen(struct ssdp_sched_state *st, u64 now,
			    bool idle_in_flight, bool budgeted_in_flight)
{
	struct ssdp_sched_gaps *g = &st->gaps;
	bool started = false;
	u64 gap;

	if (idle_in_flight)
		st->normal_met_idle++;
	if (g->open) {
		g->open = false;
		if (st->k.idle_budget && now >= g->start) {
			gap = now - g->start;
			if (gap > gap_stopped()) {
				gaps_forget(g);
				started = true;
			}
			gap_learn(g, gap);
		}
	}
	/*
	 * The first bio of a job that starts after a stop: no gap foretold
	 * it, and the idle bios it meets went out with nobody to protect.
	 * It is the bound's one unpaid meeting; charged, it would hold the
	 * new job's gaps shut for 1000 / idle_budget arrivals.
	 */
	if (st->k.idle_budget) {
		bool charged = budgeted_in_flight && !started;

		budget_arrival(g, st->k.idle_budget, charged);
		st->normal_met_charged += charged;
	}
}

void ssdp_sched_idle_complete(struct ssdp_sched_state *st, u64 now, u64 sent)
{
	struct ssdp_sched_gaps *g = &st->gaps;

	if (!st->k.idle_budget || now < sent)
		return;
	/* An eighth of each new time: a few bios follow a change of load. */
	g->idle_service = (7 * g->idle_service + (now - sent)) / 8;
}

void ssdp_sched_normal_arrival(struct ssdp_sched_state *st, u64 now)
{
	st->last_normal = now;
	st->mode = SSDP_SCHED_MODE_NORMAL;
}

void ssdp_sched_normal_complete(struct ssdp_sched_state *st, u64 now)
{
	st->last_normal = now;
}

void ssdp_sched_normal_position(struct ssdp_sched_state *st, u64 sector,
				u32 sectors)
{
	st->normal_near = sector <= st->normal_next + SSDP_SCHED_NEAR_SECTORS &&
			  sector + SSDP_SCHED_NEAR_SECTORS >= st->normal_next;
	st->normal_next = sector + sectors;
}

void ssdp_sched_housekeeping_arrival(struct ssdp_sched_state *st)
{
	st->housekeeping++;
}

static struct ssdp_sched_decision decision(enum ssdp_sched_act act, u64 when)
{
	struct ssdp_sched_decision d = { .act = act, .when = when };

	return d;
}

static struct ssdp_sched_decision wait_until(u64 when)
{
	if (when == SSDP_NEVER)
		return decision(SSDP_SCHED_NOTHING, 0);
	return decision(SSDP_SCHED_WAIT_UNTIL, when);
}

static struct ssdp_sched_decision normal(enum ssdp_sched_dir dir, bool fifo)
{
	if (dir == SSDP_DIR_WRITE)
		return decision(fifo ? SSDP_SCHED_NORMAL_WRITE_FIFO :
				SSDP_SCHED_NORMAL_WRITE_SORTED, 0);
	return decision(fifo ? SSDP_SCHED_NORMAL_READ_FIFO :
			SSDP_SCHED_NORMAL_READ_SORTED, 0);
}

/* mq-deadline's __dd_dispatch_request() for one priority level. */
static struct ssdp_sched_decision dispatch_normal(struct ssdp_sched_state *st,
						  const struct ssdp_sched_view *v)
{
	u32 nr[2] = { v->nr_read, v->nr_write };
	bool has_next[2] = { v->read_has_next, v->write_has_next };
	bool expired[2] = { v->read_expired, v->write_expired };
	enum ssdp_sched_dir dir = st->last_dir;

	if (nr[dir] && has_next[dir] && st->batching < st->k.fifo_batch) {
		st->batching++;
		return normal(dir, false);
	}

	if (v->nr_read && !(v->nr_write &&
			    st->starved++ >= st->k.writes_starved)) {
		dir = SSDP_DIR_READ;
	} else {
		st->starved = 0;
		dir = SSDP_DIR_WRITE;
	}
	st->last_dir = dir;
	st->batching = 1;
	return normal(dir, expired[dir] || !has_next[dir]);
}

static struct ssdp_sched_decision pressure(struct ssdp_sched_state *st)
{
	st->pressure_last = true;
	st->burst = 1;
	st->burst_budgeted = false;
	return decision(SSDP_SCHED_PRESSURE, 0);
}

static struct ssdp_sched_decision dispatch_idle(struct ssdp_sched_state *st,
						const struct ssdp_sched_view *v)
{
	st->idle_dispatched++;
	if (v->nr_pressure)
		return pressure(st);
	st->pressure_last = false;
	return decision(v->idle_has_next ? SSDP_SCHED_IDLE_SORTED :
			SSDP_SCHED_IDLE_FIFO, 0);
}

/* By the budget's rules (the interval's floor, a learnt gap): charged. */
static struct ssdp_sched_decision dispatch_budgeted(struct ssdp_sched_state *st,
						    const struct ssdp_sched_view *v)
{
	struct ssdp_sched_decision d = dispatch_idle(st, v);

	d.budgeted = true;
	st->burst_budgeted = st->pressure_last;
	return d;
}

/*
 * A due pressure share or aged idle bio without room: the next slot is
 * kept for it (normal bios wait too, or a normal stream alone could keep
 * it out for ever), unless idle I/O alone fills the device: then normal
 * bios with room of their own go on, and it is the due bio that waits for
 * idle completions, not they.
 */
static bool no_room_for_due(const struct ssdp_sched_knobs *k,
			    const struct ssdp_sched_view *v)
{
	return v->normal_inflight + v->idle_inflight >= k->normal_depth &&
	       v->idle_inflight < k->normal_depth;
}

struct ssdp_sched_decision ssdp_sched_decide(struct ssdp_sched_state *st,
					     u64 now,
					     const struct ssdp_sched_view *v)
{
	const struct ssdp_sched_knobs *k = &st->k;
	u32 nr_bg = v->nr_idle + v->nr_pressure;
	u64 wake = SSDP_NEVER, t;

	/*
	 * The rest of a burst: right behind the one in flight.  Nothing in
	 * flight, the burst is over (whatever route sent its last bio).
	 */
	if (!v->idle_inflight)
		st->pressure_last = false;
	if (v->nr_pressure && v->pressure_follows && st->pressure_last &&
	    st->burst < k->idle_batch_depth &&
	    v->idle_inflight < k->idle_batch_depth &&
	    v->normal_inflight + v->idle_inflight < k->normal_depth) {
		struct ssdp_sched_decision d = decision(SSDP_SCHED_PRESSURE, 0);

		st->burst++;
		st->idle_dispatched++;
		st->pressure_burst++;
		d.budgeted = st->burst_budgeted;
		return d;
	}

	/* The pressure share: one per interval, whatever else is pending. */
	if (v->nr_pressure && (v->nr_read || v->nr_write ||
			       v->normal_inflight)) {
		t = st->pressure_ever ? st->last_pressure + k->idle_interval_ns :
					now;
		if (now >= t) {
			if (no_room_for_due(k, v))
				return decision(SSDP_SCHED_NOTHING, 0);
			if (v->normal_inflight + v->idle_inflight >=
			    k->normal_depth)
				goto normal;
			st->pressure_ever = true;
			st->last_pressure = now;
			st->pressure_dispatched++;
			return pressure(st);
		}
		wake = t;
	}

	/* Starvation bound: an aged idle bio competes like a normal one. */
	if (k->idle_max_wait_ns && v->nr_idle) {
		t = v->idle_oldest + k->idle_max_wait_ns;
		if (now >= t) {
			if (no_room_for_due(k, v))
				return decision(SSDP_SCHED_NOTHING, 0);
			if (v->normal_inflight + v->idle_inflight >=
			    k->normal_depth)
				goto normal;
			st->idle_promoted++;
			st->idle_dispatched++;
			st->pressure_last = false;
			return decision(SSDP_SCHED_IDLE_AS_NORMAL, 0);
		}
		wake = min(wake, t);
	}

normal:
	if (v->nr_read || v->nr_write) {
		/* A completion calls again; aging waits for room as well. */
		if (v->normal_inflight >= k->normal_depth)
			return decision(SSDP_SCHED_NOTHING, 0);
		return dispatch_normal(st, v);
	}

	/* Idle waits until normal I/O has drained from the device. */
	if (v->normal_inflight)
		return wait_until(wake);

	if (st->mode == SSDP_SCHED_MODE_NORMAL &&
	    now >= st->last_normal + k->batch_delay_ns) {
		st->mode = SSDP_SCHED_MODE_BATCH;
		st->batch_entries++;
	}

	if (!nr_bg)
		return decision(SSDP_SCHED_NOTHING, 0);

	if (st->mode == SSDP_SCHED_MODE_BATCH) {
		if (v->idle_inflight >= k->idle_batch_depth)
			return decision(SSDP_SCHED_NOTHING, 0);
		return dispatch_idle(st, v);
	}

	wake = min(wake, st->last_normal + k->batch_delay_ns);
	if (v->idle_inflight)
		return wait_until(wake);
	/* Pressure beside a scattered load: in every gap (see the header). */
	if (v->nr_pressure && !st->normal_near) {
		st->pressure_gaps++;
		return dispatch_idle(st, v);
	}
	/*
	 * Normal bios still pay for more than one meeting: no idle bio in a
	 * gap (by the learnt gaps or the interval) until they have (an
	 * arrival calls again), unless the normal job stopped: nobody is
	 * left to pay.
	 */
	if (k->idle_budget && st->gaps.debt > SSDP_SCHED_DEBT_MET) {
		if (!st->gaps.open)
			return wait_until(wake);
		t = st->gaps.start + gap_stopped();
		if (now < t)
			return wait_until(min(wake, t));
	}
	/* Throttled: after the grace (anticipation) and the interval. */
	t = st->last_normal + k->idle_grace_ns;
	if (st->idle_ever)
		t = max(t, st->last_idle + k->idle_interval_ns);
	/*
	 * The floor takes its risk only with nothing to pay, and is charged:
	 * blind to the gaps, at a regular think time its bio meets the next
	 * normal one.
	 */
	if (k->idle_budget && st->gaps.debt)
		t = SSDP_NEVER;
	if (now >= t) {
		st->idle_ever = true;
		st->last_idle = now;
		return dispatch_budgeted(st, v);
	}
	/* Work-conserving: into a learnt gap (see the header). */
	if (k->idle_budget && st->gaps.open && now >= st->gaps.start) {
		u64 elapsed = now - st->gaps.start, next;

		/*
		 * A stream keeps the anticipation: an idle bio between two of
		 * its bios costs it two seeks, and its gaps are too short to
		 * tell a pause from jitter.
		 */
		if (st->normal_near &&
		    now < st->last_normal + k->idle_grace_ns)
			return wait_until(min(min(wake, t), st->last_normal +
						    k->idle_grace_ns));
		if (ssdp_sched_gap_safe(&st->gaps, elapsed, &next)) {
			/* The floor counts it: the interval is a bound. */
			st->idle_ever = true;
			st->last_idle = now;
			st->idle_injected++;
			return dispatch_budgeted(st, v);
		}
		if (st->gaps.total >= SSDP_SCHED_GAP_TRUST)
			st->gaps.held = true;
		if (next != SSDP_NEVER)
			t = min(t, st->gaps.start + next);
	}
	return wait_until(min(wake, t));
}
