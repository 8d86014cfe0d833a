/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio deferred eviction, after the dm-ssd paper (normal -> wait ->
 * writeback): dirty sets are written back only in quiet windows, so that
 * eviction never competes with the user's I/O.
 *
 * Pure decision logic, NO LOCKING: the caller serialises all calls (the
 * engine's cache lock). Time is u64 nanoseconds supplied by the caller
 * (ktime_get_ns() in the kernel, a fake clock in tests); evict_wait is kept
 * in ns, the engine converts the ms knob.
 *
 * Under sustained load no quiet window comes: once max_wait_ns has passed
 * without one (0: for ever, the paper's rule), counted from when the
 * machine ran short or from the end of the last quiet window, whichever
 * is earlier, it writes the LRU head back anyway, one set at a time, with
 * origin writes in the scheduler's guaranteed share (action.pressure),
 * until a quiet window or enough space comes.  So a load that has not
 * paused since the last time the cache ran short gets pressure at once
 * when it runs short again, not after another max_wait_ns of dirty data
 * piling up with nothing written back.
 *
 * Lock-out cleaning: a block can only live in one frame of its cache set,
 * and a frame holding another origin set's dirty block refuses it until
 * that block is written back.  Under a load that never pauses, a hot set
 * gone cold keeps the new hot blocks out that way, though the cache has
 * room.  So the dirty block that refused a claim is written back at once
 * (one writeback at a time, in the scheduler's pressure share), whatever
 * the dirty share, unless the cache is short of room (eviction's turn);
 * off with the knob, or with max_wait_ns 0 (nothing under load).  Which
 * blocks go is the engine's choice (evict.c).
 *
 * A flush (flush_all) writes back what it owes (view.nr_dirty_sets) at
 * once, quiet or not, and ends when that is zero with none of its
 * writebacks in flight.  It owes only what was dirty when it was asked,
 * so eviction, lock-out cleaning and cleaning go on beside it under their
 * own rules: its writebacks take the in-flight slots but one first, the
 * last one when the others do not want it.
 *
 * Use: on every bio, ssdp_esm_io_arrival() (O(1)); after a mapping, a
 * writeback completion, a timer expiry or a message, run the worker, which
 * loops:
 *	fill a struct ssdp_evict_view from the cache map;
 *	act = ssdp_esm_next_action(sm, now, &view);
 * and performs act until it is NONE or ARM_TIMER. next_action() assumes the
 * returned action is carried out (it counts the writeback as in flight);
 * if the engine cannot, it calls ssdp_esm_action_failed(), which also
 * stops further actions until the next event, so the loop cannot spin
 * (a flush's: further flush writebacks only).
 *
 * Its functions are ssdp_esm_* (eviction state machine); the engine that
 * carries its actions out (evict.c) names its own ssdp_evict_*.
 */
#ifndef SSDP_EVICT_SM_H
#define SSDP_EVICT_SM_H

#include "ssdp_compat.h"

enum ssdp_evict_state {
	SSDP_EVICT_NORMAL,
	SSDP_EVICT_WAIT,
	SSDP_EVICT_WRITEBACK,
	SSDP_EVICT_NR_STATES,
};

/*
 * What eviction would take: a clean set among the coldest (dropping it
 * costs no I/O, so it goes first, even before a dirty LRU head), else the
 * dirty LRU head.
 */
enum ssdp_evict_head {
	SSDP_HEAD_NONE,		/* no mapped set, or all pinned */
	SSDP_HEAD_CLEAN,
	SSDP_HEAD_DIRTY,
};

struct ssdp_evict_view {
	u32 nr_free;		/* free cache sets */
	/*
	 * Sets a flush still has to write back, pinned too, not held aside:
	 * a drain's, every dirty set; a flush_dirty's, those dirty when it
	 * was asked (the engine's flush marks).  Read only while flushing.
	 */
	u32 nr_dirty_sets;
	enum ssdp_evict_head head;
	/* Cleaning: dirty blocks, and the oldest unpinned dirty set. */
	u64 dirty_blocks;
	/*
	 * Of those, the ones in sets under writeback now: they are as good
	 * as clean for the target, or cleaning overshoots it by up to
	 * evict_inflight sets.
	 */
	u64 dirty_in_writeback;
	bool cleanable;		/* there is an unpinned dirty set */
	u64 oldest_age;		/* ns since its first dirty block */
	/*
	 * A crowded set (most of its frames dirty: other origin sets' blocks
	 * find both their frames taken) that a writeback could take, and how
	 * many sets have turned crowded so far (the frame map's count).
	 */
	bool crowded;
	u32 crowded_events;
	/* Sets noted by ssdp_esm_lockout() still to write back. */
	u32 lockout_sets;
	bool lockout_ready;	/* one of them can be written back now */
};

enum ssdp_evict_act_type {
	SSDP_EVICT_ACT_NONE,		/* sleep until the next event */
	/* Unmap the LRU-head unpinned set (clean): metadata only. */
	SSDP_EVICT_ACT_FREE_CLEAN_HEAD,
	/*
	 * Pin the oldest unpinned dirty set, write its dirty blocks to the
	 * origin, keep them cached and clean (new blocks take clean frames
	 * in place); report with ssdp_esm_wb_done(EVICT).
	 */
	SSDP_EVICT_ACT_START_WRITEBACK,
	/*
	 * flush_dirty: pin any dirty unpinned set (the dirty list, oldest
	 * first), write its dirty blocks back, mark them clean, keep it
	 * mapped; report with ssdp_esm_wb_done(FLUSH).
	 */
	SSDP_EVICT_ACT_START_FLUSH,
	/* Call the worker again at .deadline (ns) unless an event does. */
	SSDP_EVICT_ACT_ARM_TIMER,
	/*
	 * Cleaning in a quiet window: write back the oldest unpinned dirty
	 * set (.crowded: a crowded one), keep it mapped and clean; report
	 * with ssdp_esm_wb_done(CLEAN).
	 */
	SSDP_EVICT_ACT_START_CLEAN,
	/*
	 * Lock-out cleaning: write back what refused a claim, keep it
	 * mapped and clean, origin writes in the pressure share; report
	 * with ssdp_esm_wb_done(LOCKOUT).
	 */
	SSDP_EVICT_ACT_START_LOCKOUT,
};

struct ssdp_evict_action {
	enum ssdp_evict_act_type type;
	u64 deadline;
	/*
	 * START_WRITEBACK with no quiet window: evict_wait has passed since
	 * the cache ran short and I/O never stopped.  One set at a time, its
	 * origin writes in the scheduler's guaranteed share (pressure).
	 * START_LOCKOUT: always.
	 */
	bool pressure;
	/*
	 * START_CLEAN with the dirty share under the target and nothing too
	 * old: the set to take is a crowded one (view.crowded).
	 */
	bool crowded;
};

/*
 * SSDP_CLEAN_AT_ALL: the timer comes at the long quiet window that cleans
 * all dirty data (or the age, if earlier); dirty data going over the
 * target still needs a run, as for SSDP_CLEAN_AT_AGE.
 */
enum {
	SSDP_CLEAN_UNARMED,
	SSDP_CLEAN_AT_AGE,
	SSDP_CLEAN_AT_QUIET,
	SSDP_CLEAN_AT_ALL,
};

enum ssdp_evict_wb_kind {
	SSDP_WB_EVICT,
	SSDP_WB_FLUSH,
	/* A set held aside after a failure, tried again: not counted here. */
	SSDP_WB_RETRY,
	SSDP_WB_CLEAN,
	SSDP_WB_LOCKOUT,
};

struct ssdp_evict_sm {
	/* knobs */
	u32 free_floor;		/* sets */
	u32 inflight_max;	/* sets under writeback at once, >= 1 */
	u64 wait_ns;		/* quiet time before writeback starts */
	u64 max_wait_ns;	/* short of space this long: pressure; 0 never */
	/*
	 * Cleaning: in quiet windows, dirty data above dirty_target blocks,
	 * or older than max_age_ns (0: no bound), is written back oldest
	 * first and stays cached, clean.
	 */
	u64 dirty_target;
	u64 max_age_ns;
	/*
	 * Quiet this long (0: never), cleaning writes back all dirty data,
	 * not only what is over the target: the device is idle, and a dirty
	 * block left behind keeps the next burst's blocks out of its frame.
	 * cleaning_all: the cleaning under way is that one (the target is
	 * 0 for it) until the next bio.
	 */
	u64 all_wait_ns;
	bool cleaning_all;
	/*
	 * And, whatever the share, a crowded set: left dirty, the next
	 * origin set to land in it goes to the origin block by block
	 * (lock-outs) at HDD speed, though the quiet window had time to
	 * write it back.  view.crowded_events when last considered.
	 */
	u32 crowded_seen;
	/*
	 * A timer re-checks cleaning: SSDP_CLEAN_AT_AGE when the oldest dirty
	 * set gets too old (dirty data going over the target still needs a
	 * run), SSDP_CLEAN_AT_QUIET when the quiet window comes.
	 */
	u8 clean_armed;
	/*
	 * When cleaning became due (0: it is not): the quiet window counts
	 * from then or the last bio, whichever is later, as eviction's wait
	 * does, so that a table loaded with no bio yet is not "quiet".
	 */
	u64 clean_due_since;
	u32 nr_clean;		/* cleaning writebacks in flight */
	u64 clean_started;
	bool lockout_on;	/* knob: lock-out cleaning */
	/* Lock-out sets noted and not yet all written back. */
	bool lockout_pending;
	u32 nr_lockout;		/* lock-out writebacks in flight: 0 or 1 */
	u64 lockout_started;

	enum ssdp_evict_state state;
	bool flushing;		/* flush_dirty requested, not finished */
	bool stopped;		/* suspended: start nothing */
	bool stalled;		/* last action failed: wait for an event */
	/*
	 * The engine found no owed set to start a flush writeback on (all
	 * in use): no flush writeback until an event, but the rest goes on.
	 */
	bool flush_stalled;
	bool io_seen;		/* a bio arrived during writeback */
	bool io_ever;
	u64 last_io;		/* arrival time of the newest bio */
	/* The first bio after the last quiet window (wait_ns with no bio). */
	u64 busy_since;
	u64 wait_start;		/* when WAIT was last entered */
	u32 nr_wb;		/* eviction writebacks in flight */
	u32 nr_flush;		/* flush writebacks in flight */

	/* counters */
	u64 sets_evicted;	/* clean frees + completed evictions */
	u64 wb_started;		/* eviction writebacks started */
	u64 pressure_started;	/* of those, under pressure */
	u64 flush_started;	/* flush writebacks started */
	u64 wb_failed;		/* writebacks that failed */
	u64 state_entries[SSDP_EVICT_NR_STATES];
};

void ssdp_esm_init(struct ssdp_evict_sm *sm, u32 free_floor, u64 wait_ns,
		   u32 inflight_max);
void ssdp_esm_set_knobs(struct ssdp_evict_sm *sm, u32 free_floor,
			u64 wait_ns, u32 inflight_max);
/* Eviction under pressure (see above); after init, never. */
void ssdp_esm_set_max_wait(struct ssdp_evict_sm *sm, u64 max_wait_ns);
/* Cleaning knobs; after init, cleaning is off (target ~0, no age). */
void ssdp_esm_set_cleaning(struct ssdp_evict_sm *sm, u64 dirty_target,
			   u64 max_age_ns);
/* Cleaning of all dirty data after this much quiet; after init, never. */
void ssdp_esm_set_clean_all(struct ssdp_evict_sm *sm, u64 all_wait_ns);
/* Lock-out cleaning; after init, off. */
void ssdp_esm_set_lockout(struct ssdp_evict_sm *sm, bool on);

/*
 * Events. Only io_arrival is on the I/O path; the others clear the "stalled"
 * flag set by action_failed, so the worker may act again.
 */
/* A bio arrived (any bio): restarts the quiet window, interrupts writeback. */
void ssdp_esm_io_arrival(struct ssdp_evict_sm *sm, u64 now);
/* A started writeback finished, its blocks clean. */
void ssdp_esm_wb_done(struct ssdp_evict_sm *sm,
		      enum ssdp_evict_wb_kind kind);
/*
 * A started writeback failed: the set stays mapped and dirty (the engine
 * holds it aside; v->nr_dirty_sets must not count it, or a flush waits
 * for it forever).
 */
void ssdp_esm_wb_failed(struct ssdp_evict_sm *sm,
			enum ssdp_evict_wb_kind kind);
/*
 * A set's dirty block refused another origin set's block.  True if the
 * worker should run (it was not already due to look at lock-out sets).
 */
bool ssdp_esm_lockout(struct ssdp_evict_sm *sm);
/* The timer armed by ARM_TIMER fired. */
void ssdp_esm_timer(struct ssdp_evict_sm *sm);
/* The cache map changed (mapping, unpin, discard): re-evaluate. */
void ssdp_esm_kick(struct ssdp_evict_sm *sm);
/*
 * flush_dirty: write back every set it owes now, ignoring quiet and
 * floor, beside what eviction and cleaning write back.
 */
void ssdp_esm_flush_all(struct ssdp_evict_sm *sm);
/* Suspend: start nothing (in-flight writebacks still report wb_done). */
void ssdp_esm_stop(struct ssdp_evict_sm *sm);
void ssdp_esm_resume(struct ssdp_evict_sm *sm);
/* The engine could not perform the action returned by next_action. */
void ssdp_esm_action_failed(struct ssdp_evict_sm *sm,
			    enum ssdp_evict_act_type type);

/*
 * Cheap test for the I/O path: does the worker have anything to do?
 * @dirty_blocks: the cache's dirty blocks now; @crowded_events: as in the
 * view.
 */
bool ssdp_esm_needs_run(const struct ssdp_evict_sm *sm, u32 nr_free,
			u64 dirty_blocks, u32 crowded_events);

struct ssdp_evict_action ssdp_esm_next_action(struct ssdp_evict_sm *sm,
					      u64 now,
					      const struct ssdp_evict_view *v);

static inline enum ssdp_evict_state
ssdp_esm_state(const struct ssdp_evict_sm *sm)
{
	return sm->state;
}

static inline u32 ssdp_esm_inflight(const struct ssdp_evict_sm *sm)
{
	return sm->nr_wb + sm->nr_flush + sm->nr_clean + sm->nr_lockout;
}

/* Lock-out sets are worth noting (ssdp_esm_lockout()). */
static inline bool ssdp_esm_lockout_on(const struct ssdp_evict_sm *sm)
{
	return sm->lockout_on && sm->max_wait_ns;
}

/*
 * Cleaning's target now, dirty blocks (ssdp_esm_set_cleaning()): 0 while
 * it cleans all dirty data in a long quiet window.
 */
static inline u64 ssdp_esm_dirty_target(const struct ssdp_evict_sm *sm)
{
	return sm->cleaning_all ? 0 : sm->dirty_target;
}

const char *ssdp_esm_state_name(enum ssdp_evict_state state);

/*
 * Why eviction and cleaning are (or are not) writing back now, for the
 * status line: "suspended", "flush" (a flush's writebacks, and none of
 * the others' in flight), "quiet_writeback" (short of space,
 * in a quiet window), "pressure" (short of space, no quiet window within
 * evict_max_wait), "wait_quiet" (short of space, waiting for a quiet
 * window), "cleaning", "lockout_cleaning" (a set whose dirty block kept
 * another's out), "clean_wait_quiet" (over dirty_target or
 * dirty_max_age, waiting for a quiet window), "blocked" (what it would
 * take is in use or held aside: waiting for an event), "not_needed".
 */
const char *ssdp_esm_why(const struct ssdp_evict_sm *sm);

#endif /* SSDP_EVICT_SM_H */
