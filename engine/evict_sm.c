// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio deferred eviction state machine. See evict_sm.h; the caller
 * holds the lock.
 */
#include "ssdp_compat.h"
#include "evict_sm.h"

static const char * const state_names[SSDP_EVICT_NR_STATES] = {
	[SSDP_EVICT_NORMAL] = "normal",
	[SSDP_EVICT_WAIT] = "wait",
	[SSDP_EVICT_WRITEBACK] = "writeback",
};

const char *ssdp_esm_state_name(enum ssdp_evict_state state)
{
	return state < SSDP_EVICT_NR_STATES ? state_names[state] : "?";
}

void ssdp_esm_set_knobs(struct ssdp_evict_sm *sm, u32 free_floor,
			u64 wait_ns, u32 inflight_max)
{
	sm->free_floor = free_floor;
	sm->wait_ns = wait_ns;
	sm->inflight_max = inflight_max ? inflight_max : 1;
}

void ssdp_esm_set_max_wait(struct ssdp_evict_sm *sm, u64 max_wait_ns)
{
	sm->max_wait_ns = max_wait_ns;
}

void ssdp_esm_set_cleaning(struct ssdp_evict_sm *sm, u64 dirty_target,
			   u64 max_age_ns)
{
	sm->dirty_target = dirty_target;
	sm->max_age_ns = max_age_ns;
	sm->clean_armed = SSDP_CLEAN_UNARMED;
}

void ssdp_esm_set_clean_all(struct ssdp_evict_sm *sm, u64 all_wait_ns)
{
	sm->all_wait_ns = all_wait_ns;
	sm->clean_armed = SSDP_CLEAN_UNARMED;
}

void ssdp_esm_set_lockout(struct ssdp_evict_sm *sm, bool on)
{
	sm->lockout_on = on;
}

void ssdp_esm_init(struct ssdp_evict_sm *sm, u32 free_floor, u64 wait_ns,
		   u32 inflight_max)
{
	memset(sm, 0, sizeof(*sm));
	ssdp_esm_set_knobs(sm, free_floor, wait_ns, inflight_max);
	ssdp_esm_set_cleaning(sm, ~0ULL, 0);
	sm->state = SSDP_EVICT_NORMAL;
	sm->state_entries[SSDP_EVICT_NORMAL] = 1;
}

const char *ssdp_esm_why(const struct ssdp_evict_sm *sm)
{
	if (sm->stopped)
		return "suspended";
	/* Eviction's and cleaning's own writebacks beside a flush's. */
	if (sm->flushing && !sm->nr_wb && !sm->nr_lockout && !sm->nr_clean)
		return "flush";
	switch (sm->state) {
	case SSDP_EVICT_WRITEBACK:
		if (sm->stalled && !ssdp_esm_inflight(sm))
			return "blocked";
		return "quiet_writeback";
	case SSDP_EVICT_WAIT:
		/* In WAIT, an eviction writeback is one started under pressure. */
		if (sm->nr_wb)
			return "pressure";
		return sm->stalled ? "blocked" : "wait_quiet";
	default:
		break;
	}
	if (sm->nr_lockout)
		return "lockout_cleaning";
	if (sm->nr_clean)
		return "cleaning";
	if (sm->stalled)
		return "blocked";
	if (sm->clean_armed == SSDP_CLEAN_AT_QUIET)
		return "clean_wait_quiet";
	return "not_needed";
}

static void enter(struct ssdp_evict_sm *sm, enum ssdp_evict_state state,
		  u64 now)
{
	sm->state = state;
	sm->state_entries[state]++;
	if (state == SSDP_EVICT_WAIT)
		sm->wait_start = now;
	/* Only arrivals during this writeback phase may interrupt it. */
	sm->io_seen = false;
}

void ssdp_esm_io_arrival(struct ssdp_evict_sm *sm, u64 now)
{
	if (!sm->io_ever || now >= sm->last_io + sm->wait_ns)
		sm->busy_since = now;
	sm->io_ever = true;
	sm->last_io = now;
	sm->cleaning_all = false;
	if (sm->state == SSDP_EVICT_WRITEBACK)
		sm->io_seen = true;
}

/*
 * A started writeback ended: give back its in-flight slot.  True if it
 * held one of eviction's (the caller counts an evicted set on success).
 */
static bool wb_slot_end(struct ssdp_evict_sm *sm, enum ssdp_evict_wb_kind kind)
{
	u32 *slots;

	sm->stalled = false;
	sm->flush_stalled = false;
	switch (kind) {
	case SSDP_WB_RETRY:
		return false;
	case SSDP_WB_CLEAN:
		slots = &sm->nr_clean;
		break;
	case SSDP_WB_LOCKOUT:
		slots = &sm->nr_lockout;
		break;
	case SSDP_WB_FLUSH:
		slots = &sm->nr_flush;
		break;
	default:
		slots = &sm->nr_wb;
		break;
	}
	if (WARN_ON_ONCE(!*slots))
		return false;
	(*slots)--;
	return slots == &sm->nr_wb;
}

void ssdp_esm_wb_done(struct ssdp_evict_sm *sm,
		      enum ssdp_evict_wb_kind kind)
{
	if (wb_slot_end(sm, kind))
		sm->sets_evicted++;
}

void ssdp_esm_wb_failed(struct ssdp_evict_sm *sm,
			enum ssdp_evict_wb_kind kind)
{
	sm->wb_failed++;
	wb_slot_end(sm, kind);
}

bool ssdp_esm_lockout(struct ssdp_evict_sm *sm)
{
	bool was = sm->lockout_pending;

	sm->lockout_pending = true;
	sm->stalled = false;
	sm->flush_stalled = false;
	return !was && !sm->stopped;
}

void ssdp_esm_timer(struct ssdp_evict_sm *sm)
{
	sm->stalled = false;
	sm->flush_stalled = false;
	sm->clean_armed = SSDP_CLEAN_UNARMED;
}

void ssdp_esm_kick(struct ssdp_evict_sm *sm)
{
	sm->stalled = false;
	sm->flush_stalled = false;
}

void ssdp_esm_flush_all(struct ssdp_evict_sm *sm)
{
	sm->flushing = true;
	sm->stalled = false;
	sm->flush_stalled = false;
}

void ssdp_esm_stop(struct ssdp_evict_sm *sm)
{
	sm->stopped = true;
}

void ssdp_esm_resume(struct ssdp_evict_sm *sm)
{
	sm->stopped = false;
	sm->stalled = false;
	sm->flush_stalled = false;
}

void ssdp_esm_action_failed(struct ssdp_evict_sm *sm,
			    enum ssdp_evict_act_type type)
{
	switch (type) {
	case SSDP_EVICT_ACT_FREE_CLEAN_HEAD:
		sm->sets_evicted--;
		break;
	case SSDP_EVICT_ACT_START_WRITEBACK:
		if (WARN_ON_ONCE(!sm->nr_wb))
			break;
		sm->nr_wb--;
		sm->wb_started--;
		break;
	case SSDP_EVICT_ACT_START_FLUSH:
		if (!WARN_ON_ONCE(!sm->nr_flush)) {
			sm->nr_flush--;
			sm->flush_started--;
		}
		/* The others may still start what they want. */
		sm->flush_stalled = true;
		return;
	case SSDP_EVICT_ACT_START_CLEAN:
		if (WARN_ON_ONCE(!sm->nr_clean))
			break;
		sm->nr_clean--;
		sm->clean_started--;
		break;
	case SSDP_EVICT_ACT_START_LOCKOUT:
		if (WARN_ON_ONCE(!sm->nr_lockout))
			break;
		sm->nr_lockout--;
		sm->lockout_started--;
		break;
	default:
		break;
	}
	sm->stalled = true;
}

bool ssdp_esm_needs_run(const struct ssdp_evict_sm *sm, u32 nr_free,
			u64 dirty_blocks, u32 crowded_events)
{
	if (sm->stopped)
		return false;
	if (sm->flushing || sm->state != SSDP_EVICT_NORMAL ||
	    (u64)nr_free + sm->nr_wb < sm->free_floor ||
	    (sm->lockout_pending && !sm->nr_lockout &&
	     ssdp_esm_lockout_on(sm)))
		return true;
	/* Cleaning to consider, and no timer that will. */
	switch (sm->clean_armed) {
	case SSDP_CLEAN_AT_QUIET:
		return false;
	case SSDP_CLEAN_AT_AGE:
	case SSDP_CLEAN_AT_ALL:
		return dirty_blocks > sm->dirty_target ||
		       crowded_events != sm->crowded_seen;
	default:
		return dirty_blocks > sm->dirty_target ||
		       crowded_events != sm->crowded_seen ||
		       (dirty_blocks && (sm->max_age_ns || sm->all_wait_ns));
	}
}

static struct ssdp_evict_action act(enum ssdp_evict_act_type type,
				    u64 deadline)
{
	struct ssdp_evict_action a = { .type = type, .deadline = deadline };

	return a;
}

/*
 * Cleaning, when eviction has nothing to start: dirty data over the target
 * or too old is written back, oldest first, then any crowded set, once the
 * device has been quiet for wait_ns; then, once it has been quiet for
 * all_wait_ns, the rest of the dirty data.  A timer re-checks when the
 * window (or the age) comes.
 */
static struct ssdp_evict_action clean_action(struct ssdp_evict_sm *sm, u64 now,
					     const struct ssdp_evict_view *v)
{
	u64 left = v->dirty_blocks - min(v->dirty_in_writeback, v->dirty_blocks);
	bool over = left > sm->dirty_target;
	bool old = sm->max_age_ns && v->oldest_age >= sm->max_age_ns;
	bool crowd = !over && !old && v->crowded;
	bool rest = !over && !old && !crowd && left && sm->all_wait_ns;
	struct ssdp_evict_action a;
	u64 quiet_at, age_at = ~0ULL;

	sm->clean_armed = SSDP_CLEAN_UNARMED;
	sm->crowded_seen = v->crowded_events;
	if (!v->cleanable || (!over && !old && !crowd && !rest))
		sm->clean_due_since = 0;
	else if (!sm->clean_due_since)
		sm->clean_due_since = now;
	if (!v->cleanable)
		return act(SSDP_EVICT_ACT_NONE, 0);
	if (!over && !old && !crowd) {
		if (sm->max_age_ns)
			age_at = now + (sm->max_age_ns - v->oldest_age);
		if (!rest) {
			if (!sm->max_age_ns)
				return act(SSDP_EVICT_ACT_NONE, 0);
			sm->clean_armed = SSDP_CLEAN_AT_AGE;
			return act(SSDP_EVICT_ACT_ARM_TIMER, age_at);
		}
		quiet_at = max(sm->clean_due_since, sm->last_io) +
			   sm->all_wait_ns;
		if (now < quiet_at) {
			sm->clean_armed = SSDP_CLEAN_AT_ALL;
			return act(SSDP_EVICT_ACT_ARM_TIMER,
				   min(quiet_at, age_at));
		}
	} else {
		quiet_at = max(sm->clean_due_since, sm->last_io) + sm->wait_ns;
		if (now < quiet_at) {
			sm->clean_armed = SSDP_CLEAN_AT_QUIET;
			return act(SSDP_EVICT_ACT_ARM_TIMER, quiet_at);
		}
	}
	if (ssdp_esm_inflight(sm) >= sm->inflight_max)
		return act(SSDP_EVICT_ACT_NONE, 0);	/* a completion calls */
	sm->cleaning_all = rest;
	sm->nr_clean++;
	sm->clean_started++;
	a = act(SSDP_EVICT_ACT_START_CLEAN, 0);
	a.crowded = crowd;
	return a;
}

/*
 * Lock-out cleaning does not wait for quiet: the load it serves is what
 * the dirty block keeps out.  One writeback at a time bounds what it adds
 * to the origin's load beside the pressure share's own pace.  And none
 * while the cache is short of room: eviction writes back then, for every
 * block, and a second writer against the same load would only slow the
 * writes that go to the origin meanwhile.
 */
static struct ssdp_evict_action lockout_action(struct ssdp_evict_sm *sm,
					       const struct ssdp_evict_view *v)
{
	struct ssdp_evict_action a = act(SSDP_EVICT_ACT_NONE, 0);

	if (!v->lockout_sets)
		sm->lockout_pending = false;
	if (!ssdp_esm_lockout_on(sm) || !v->lockout_ready ||
	    sm->state != SSDP_EVICT_NORMAL || sm->nr_lockout ||
	    ssdp_esm_inflight(sm) >= sm->inflight_max)
		return a;
	sm->nr_lockout++;
	sm->lockout_started++;
	a.type = SSDP_EVICT_ACT_START_LOCKOUT;
	a.pressure = true;
	return a;
}

/*
 * May a flush writeback start?  Only for owed sets no flush writeback
 * holds, within the in-flight bound (@slots of it), and not after the
 * engine found none to take (until an event).
 */
static bool flush_may_start(const struct ssdp_evict_sm *sm,
			    const struct ssdp_evict_view *v, u32 slots)
{
	return sm->flushing && !sm->flush_stalled &&
	       v->nr_dirty_sets > sm->nr_flush &&
	       ssdp_esm_inflight(sm) < slots;
}

static struct ssdp_evict_action flush_start(struct ssdp_evict_sm *sm)
{
	sm->nr_flush++;
	sm->flush_started++;
	return act(SSDP_EVICT_ACT_START_FLUSH, 0);
}

static struct ssdp_evict_action evict_action(struct ssdp_evict_sm *sm,
					     u64 now,
					     const struct ssdp_evict_view *v);

/*
 * A flush owes only what was dirty when it was asked: what is dirtied
 * since is eviction's and cleaning's, under their own rules, beside it.
 * The flush's writebacks come first but for one slot, which eviction,
 * lock-out cleaning and cleaning get when they want it: so room, the
 * dirty target and lock-outs are kept while a long flush runs (an idle
 * class flush under load may run for minutes).  The flush takes that slot
 * too when they do not want it now, and eviction is not waiting for it.
 */
struct ssdp_evict_action ssdp_esm_next_action(struct ssdp_evict_sm *sm,
					      u64 now,
					      const struct ssdp_evict_view *v)
{
	struct ssdp_evict_action e, c, l;

	if (sm->stopped || sm->stalled)
		return act(SSDP_EVICT_ACT_NONE, 0);
	if (sm->flushing && !v->nr_dirty_sets && !sm->nr_flush)
		sm->flushing = false;
	if (flush_may_start(sm, v, sm->inflight_max - 1))
		return flush_start(sm);
	e = evict_action(sm, now, v);
	if (e.type != SSDP_EVICT_ACT_NONE && e.type != SSDP_EVICT_ACT_ARM_TIMER)
		return e;
	l = lockout_action(sm, v);
	if (l.type != SSDP_EVICT_ACT_NONE)
		return l;
	c = clean_action(sm, now, v);
	if (c.type == SSDP_EVICT_ACT_START_CLEAN)
		return c;
	/* Not the slot eviction waits for (room comes first). */
	if (e.type == SSDP_EVICT_ACT_NONE &&
	    flush_may_start(sm, v, sm->inflight_max))
		return flush_start(sm);
	if (e.type == SSDP_EVICT_ACT_NONE)
		return c;
	if (c.type == SSDP_EVICT_ACT_ARM_TIMER && c.deadline < e.deadline)
		return c;
	return e;
}

static struct ssdp_evict_action evict_action(struct ssdp_evict_sm *sm,
					     u64 now,
					     const struct ssdp_evict_view *v)
{
	/* Sets under eviction writeback are as good as free already. */
	bool short_of_space = (u64)v->nr_free + sm->nr_wb < sm->free_floor;
	u32 inflight = ssdp_esm_inflight(sm);
	u64 deadline;

	/* Dropping a clean set costs no I/O: never defer it. */
	if (short_of_space && v->head == SSDP_HEAD_CLEAN) {
		sm->sets_evicted++;
		return act(SSDP_EVICT_ACT_FREE_CLEAN_HEAD, 0);
	}

	for (;;) {
		switch (sm->state) {
		case SSDP_EVICT_NORMAL:
			if (!short_of_space || v->head != SSDP_HEAD_DIRTY)
				return act(SSDP_EVICT_ACT_NONE, 0);
			enter(sm, SSDP_EVICT_WAIT, now);
			continue;

		case SSDP_EVICT_WAIT:
			if (!short_of_space) {
				enter(sm, SSDP_EVICT_NORMAL, now);
				return act(SSDP_EVICT_ACT_NONE, 0);
			}
			deadline = max(sm->wait_start, sm->last_io) +
				   sm->wait_ns;
			if (now < deadline) {
				struct ssdp_evict_action a;
				u64 since = sm->wait_start, pressure_at;

				/*
				 * Busy without a quiet window since before it
				 * ran short: count from then (see the header).
				 */
				if (sm->io_ever && now < sm->last_io + sm->wait_ns)
					since = min(since, sm->busy_since);
				pressure_at = sm->max_wait_ns ?
					since + sm->max_wait_ns : ~0ULL;

				/*
				 * Past the pressure point with no dirty head
				 * (all pinned): the quiet window's end, never
				 * a time already gone.
				 */
				if (now < pressure_at)
					return act(SSDP_EVICT_ACT_ARM_TIMER,
						   min(pressure_at, deadline));
				if (v->head != SSDP_HEAD_DIRTY)
					return act(SSDP_EVICT_ACT_ARM_TIMER,
						   deadline);
				/* One at a time; its completion calls again. */
				if (sm->nr_wb || inflight >= sm->inflight_max)
					return act(SSDP_EVICT_ACT_NONE, 0);
				sm->nr_wb++;
				sm->wb_started++;
				sm->pressure_started++;
				a = act(SSDP_EVICT_ACT_START_WRITEBACK, 0);
				a.pressure = true;
				return a;
			}
			enter(sm, SSDP_EVICT_WRITEBACK, now);
			continue;

		case SSDP_EVICT_WRITEBACK:
			if (!short_of_space) {
				/* In-flight sets finish; then normal. */
				if (!sm->nr_wb)
					enter(sm, SSDP_EVICT_NORMAL, now);
				return act(SSDP_EVICT_ACT_NONE, 0);
			}
			if (sm->io_seen) {
				if (sm->nr_wb)
					return act(SSDP_EVICT_ACT_NONE, 0);
				enter(sm, SSDP_EVICT_WAIT, now);
				continue;
			}
			if (inflight < sm->inflight_max &&
			    v->head == SSDP_HEAD_DIRTY) {
				sm->nr_wb++;
				sm->wb_started++;
				return act(SSDP_EVICT_ACT_START_WRITEBACK, 0);
			}
			return act(SSDP_EVICT_ACT_NONE, 0);

		default:
			WARN_ON_ONCE(1);
			enter(sm, SSDP_EVICT_NORMAL, now);
			return act(SSDP_EVICT_ACT_NONE, 0);
		}
	}
}
