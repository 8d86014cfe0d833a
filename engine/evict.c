// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio deferred eviction: the worker that carries out what the
 * eviction state machine (evict_sm.c) decides, and the writeback jobs.
 *
 * A writeback job owns its cache set exclusively (set_io.excl + a pin):
 * user writes to the set wait in the deferred list, reads go on.  One
 * started in a quiet window (cleaning, quiet eviction) stops at the next
 * run when a write comes to wait (set_io.wb_yield), after at least one
 * run: the write waits for that run, not for a whole set of scattered
 * runs, and what was written is marked clean as ever.  The next quiet
 * window takes up the rest.  It
 * copies each dirty run SSD -> origin at idle priority (the origin write
 * waits for a quiet window in the scheduler), origin set by origin set in
 * disk order, flushes the origin, and only then marks the blocks clean, so
 * a clean block always has a durable origin copy.  Then it commits the
 * metadata before it lets go of the set: a clean frame may be given to
 * another origin set, and a record still calling it dirty would bring the
 * newcomer's data back as this block's after a crash.
 *
 * Written-back blocks stay cached, clean: eviction is writeback, and the
 * clean frames are taken by new blocks when they need them (frame_map.h).
 *
 * A writeback that fails (origin write error, unreadable SSD block, no
 * memory) changes nothing: the blocks stay dirty.  The set is held aside
 * (pinned, set_io.wb_failed) so eviction and flush_dirty move on to other
 * sets instead of retrying it back to back.  The sets held aside are tried
 * again in the background, a few at a time, after a backoff that doubles
 * up to SSDP_WB_BACKOFF_MAX_MS while they keep failing; they return to the
 * normal flow at once when flush_dirty is asked for again or on resume.
 *
 * Cleaning keeps dirty data under dirty_target and younger than
 * dirty_max_age: in quiet windows (as eviction), the oldest dirty set is
 * written back and stays mapped, clean, so that a later eviction can drop
 * it without I/O, and the SSD is not the only copy of old data for long.
 *
 * Lock-out cleaning (evict_sm.h) writes back, at once and one at a time,
 * a dirty block that refused another origin set's block, with the dirty
 * run it starts, oldest refusal first, its origin writes in the pressure
 * share; the blocks stay cached, clean.  Only that run: the set is held
 * exclusively while it is written back, and writes to it wait meanwhile.
 * When all of a set's tags were refused, the whole set goes.
 *
 * A drain (the "drain" message) is a flush that must finish under load:
 * its origin writes go out as normal I/O (bg_io.c), the only background I/O
 * that does.  Eviction writebacks stay idle class even then; one started
 * under pressure (no quiet window within evict_max_wait) goes in the
 * scheduler's pressure share.
 */
#include <linux/blkdev.h>
#include <linux/ktime.h>
#include <linux/slab.h>

#include "ssdprio.h"

#define SSDP_WB_BACKOFF_MIN_MS	1000U
#define SSDP_WB_BACKOFF_MAX_MS	64000U
/* Writeback buffer: dirty runs are copied in pieces of at most this. */
#define SSDP_WB_BUF_BYTES	(256U << 10)

/*
 * Lock-out sets noted at once: enough for the sets one burst of misses
 * meets; a set not noted because it is full is noted by its next refusal.
 */
#define SSDP_LOCKOUT_RING	64

struct ssdp_lockout {
	u32 cset;
	u32 blk;	/* the refusing frame; SSDP_NONE: the set's tags */
};

/* evict.c's state; the fields marked [cache_lock] are under it. */
struct ssdp_evict {
	struct ssdprio *sp;
	struct work_struct work;	/* the eviction worker */
	struct delayed_work timer;	/* end of a quiet-window wait */
	/*
	 * Sets whose writeback failed (set_io.wb_failed) are retried when
	 * @retry fires, backoff_ms later (doubling up to a bound), so a
	 * broken origin or an unreadable SSD block costs no busy loop.
	 */
	struct delayed_work retry;
	u32 backoff_ms;			/* [cache_lock] */
	u32 retry_cursor;		/* [cache_lock] */
	u64 dirty_blocks;		/* [cache_lock] of sets under writeback */
	/*
	 * Lock-out ring: sets whose dirty block refused another origin
	 * set's, oldest first, for lock-out cleaning (evict_sm.h).  May
	 * hold stale entries (set_io.lockout clear).
	 */
	struct ssdp_lockout lockout_ring[SSDP_LOCKOUT_RING]; /* [cache_lock] */
	u32 lockout_head;		/* [cache_lock] */
	u32 nr_lockout;			/* [cache_lock] */
};

struct ssdp_wb_job {
	struct work_struct work;
	struct ssdprio *sp;
	u32 cset;
	u32 dirty;		/* the set's dirty blocks when it started */
	enum ssdp_evict_wb_kind kind;
	bool pressure;		/* eviction without a quiet window */
	/*
	 * Started in a quiet window (cleaning, quiet eviction): a user write
	 * to the set that ends the quiet stops it after the run in hand
	 * (set_io.wb_yield), so the write waits for one run, not the set.
	 */
	bool yields;
	/*
	 * Lock-out cleaning: only the dirty run from this block (SSDP_NONE:
	 * the whole set).  A short writeback, for the writes to the set
	 * wait for it.
	 */
	u32 only;
};

void ssdp_evict_kick_locked(struct ssdprio *sp)
{
	lockdep_assert_held(&sp->cache_lock);
	if (!sp->suspended)
		queue_work(sp->wq, &sp->ev->work);
}

/*
 * A set was unpinned (a reader, a writer or a promotion let go): a flush,
 * eviction or cleaning that found it pinned stalled until an event, and
 * this is that event.
 */
void ssdp_evict_unpinned_locked(struct ssdprio *sp)
{
	lockdep_assert_held(&sp->cache_lock);
	if (ssdp_esm_needs_run(&sp->evict, ssdp_room_sets(sp),
			       sp->fmap.total_dirty)) {
		ssdp_esm_kick(&sp->evict);
		ssdp_evict_kick_locked(sp);
	}
}

/*
 * @cset's dirty block @blk refused another origin set's block (SSDP_NONE:
 * its tags did, the set's dirty blocks hold them all).  Counted every
 * time; noted once per set until written back.  A full ring drops the
 * note: the next refusal notes it again.
 */
void ssdp_lockout_note_locked(struct ssdprio *sp, u32 cset, u32 blk)
{
	struct ssdp_set_io *sio = &sp->set_io[cset];
	struct ssdp_lockout *lo;

	lockdep_assert_held(&sp->cache_lock);
	ssdp_count(sp, SSDP_ST_LOCKOUTS);
	if (sio->lockout || sp->ev->nr_lockout == SSDP_LOCKOUT_RING ||
	    !ssdp_esm_lockout_on(&sp->evict))
		return;
	sio->lockout = true;
	lo = &sp->ev->lockout_ring[(sp->ev->lockout_head + sp->ev->nr_lockout++) %
			       SSDP_LOCKOUT_RING];
	lo->cset = cset;
	lo->blk = blk;
	if (ssdp_esm_lockout(&sp->evict))
		ssdp_evict_kick_locked(sp);
}

static struct ssdp_lockout ssdp_lockout_pop_locked(struct ssdprio *sp)
{
	struct ssdp_lockout lo = sp->ev->lockout_ring[sp->ev->lockout_head];

	lockdep_assert_held(&sp->cache_lock);
	sp->ev->lockout_head = (sp->ev->lockout_head + 1) % SSDP_LOCKOUT_RING;
	sp->ev->nr_lockout--;
	return lo;
}

/*
 * Is there a lock-out to write back now?  The oldest such is left at the
 * head of the ring; those whose set is in use go to the tail, those with
 * nothing dirty left in the set (written back or dropped since) out.
 */
static bool ssdp_lockout_ready_locked(struct ssdprio *sp)
{
	u32 n = sp->ev->nr_lockout;
	struct ssdp_set_io *sio;
	struct ssdp_lockout lo;

	lockdep_assert_held(&sp->cache_lock);
	while (n--) {
		lo = sp->ev->lockout_ring[sp->ev->lockout_head];
		sio = &sp->set_io[lo.cset];
		if (sio->lockout && ssdp_fmap_nr_dirty(&sp->fmap, lo.cset) &&
		    !sio->writers && !sio->excl && !sio->wb_failed)
			return true;
		ssdp_lockout_pop_locked(sp);
		if (!sio->lockout)
			continue;	/* a stale entry */
		if (!ssdp_fmap_nr_dirty(&sp->fmap, lo.cset)) {
			sio->lockout = false;
			continue;
		}
		sp->ev->lockout_ring[(sp->ev->lockout_head + sp->ev->nr_lockout++) %
				 SSDP_LOCKOUT_RING] = lo;
	}
	return false;
}

static void ssdp_evict_timer_fn(struct work_struct *work)
{
	struct ssdprio *sp = container_of(to_delayed_work(work),
					  struct ssdp_evict, timer)->sp;
	unsigned long flags;

	spin_lock_irqsave(&sp->cache_lock, flags);
	ssdp_esm_timer(&sp->evict);
	ssdp_evict_kick_locked(sp);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
}

/* The origin writes' class, per piece: a drain meanwhile speeds it up. */
static enum ssdp_bg_class ssdp_wb_class(struct ssdprio *sp,
					const struct ssdp_wb_job *job)
{
	if (job->kind != SSDP_WB_EVICT && READ_ONCE(sp->draining))
		return SSDP_BG_NORMAL;
	return job->pressure ? SSDP_BG_PRESSURE : SSDP_BG_IDLE;
}

/*
 * Copy the dirty blocks of @line from block @from on to the origin, one
 * buffer's worth only if @one; *written counts them, *end is past the last.
 * *yielded: stopped before the line's end for a waiting write.
 */
static int ssdp_writeback_line(struct ssdprio *sp,
			       const struct ssdp_wb_job *job, u32 line,
			       u32 from, bool one, struct ssdp_buf *buf,
			       u32 *written, u32 *end, bool *yielded)
{
	u32 block_bytes = sp->cfg.block_sectors << SECTOR_SHIFT;
	u32 buf_blocks = (buf->nr_pages << PAGE_SHIFT) / block_bytes;
	u32 first, nr;
	sector_t origin_sector;
	unsigned long flags;
	bool more;
	u64 oset;
	int r;

	for (;;) {
		spin_lock_irqsave(&sp->cache_lock, flags);
		more = ssdp_fmap_next_dirty_run(&sp->fmap, line, from, &first,
						&nr);
		oset = ssdp_fmap_oset_of(&sp->fmap, line);
		/* At least one run per start, or a busy set never gets clean. */
		if (more && job->yields && *written &&
		    sp->set_io[job->cset].wb_yield) {
			*yielded = true;
			more = false;
		}
		spin_unlock_irqrestore(&sp->cache_lock, flags);
		if (!more)
			return 0;
		nr = min(nr, buf_blocks);

		r = ssdp_io_ssd_sync(sp, buf, ssdp_line_sector(sp, line, first),
				     nr * block_bytes, REQ_OP_READ);
		if (r)
			return r;
		origin_sector = (oset << sp->set_shift) +
				((sector_t)first << sp->block_shift);
		r = ssdp_io_origin_sync(sp, buf, origin_sector,
					nr * block_bytes, REQ_OP_WRITE,
					ssdp_wb_class(sp, job));
		if (r)
			return r;
		*written += nr;
		from = first + nr;
		*end = from;
		if (one)
			return 0;
	}
}

/*
 * Write the dirty blocks of @cset back (or, job->only, one run of them),
 * mark what was written clean and commit.  The caller holds the set
 * exclusively, so its dirty bits change only here.  A job that yields
 * marks clean only the runs it wrote: the lines before the one it stopped
 * in, and that line up to where it stopped.
 */
static int ssdp_writeback_set(struct ssdprio *sp,
			      const struct ssdp_wb_job *job,
			      struct ssdp_buf *buf)
{
	u32 lines[SSDP_FMAP_TAGS], nr_lines, i, written = 0;
	u32 cset = job->cset, from = 0, end = 0, stop, to;
	bool one = job->only != SSDP_NONE, yielded = false;
	unsigned long flags;
	int r = 0;

	spin_lock_irqsave(&sp->cache_lock, flags);
	nr_lines = ssdp_fmap_dirty_lines(&sp->fmap, cset, lines);
	if (one) {
		u32 n = 0;

		/* The line whose dirty block holds the frame, if still so. */
		for (i = 0; i < nr_lines; i++)
			if (ssdp_fmap_block(&sp->fmap, lines[i], job->only) ==
			    SSDP_FMAP_DIRTY)
				lines[n++] = lines[i];
		nr_lines = n;
		from = job->only;
	}
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	for (i = 0; i < nr_lines && !r && !yielded; i++) {
		if (!one)
			end = 0;
		r = ssdp_writeback_line(sp, job, lines[i], from, one, buf,
					&written, &end, &yielded);
	}
	/* Lines [0, stop) were written; the last one, if yielded, to @end. */
	stop = i;
	if (!r && written)
		r = ssdp_io_origin_flush(sp);
	if (r) {
		DMERR_LIMIT("writeback of cache set %u failed: %d", cset, r);
		return r;
	}
	if (yielded)
		ssdp_count(sp, SSDP_ST_WRITEBACK_YIELDS);
	if (!written)
		return 0;

	spin_lock_irqsave(&sp->cache_lock, flags);
	for (i = 0; i < stop; i++) {
		to = one || (yielded && i == stop - 1) ? end :
						       sp->cfg.set_blocks;
		ssdp_fmap_clear_dirty(&sp->fmap, lines[i], from, to - from);
	}
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	ssdp_count_n(sp, SSDP_ST_BLOCKS_WRITTEN_BACK, written);
	/*
	 * Durable "clean" before the frames can change hands.  If it fails
	 * the cache is degraded (meta.c), and no frame changes hands then.
	 */
	ssdp_meta_commit(sp);
	return 0;
}

/* Give up exclusive ownership of @cset; cache_lock held. */
static void ssdp_excl_end_locked(struct ssdprio *sp, u32 cset)
{
	lockdep_assert_held(&sp->cache_lock);
	sp->set_io[cset].excl = false;
	sp->set_io[cset].wb_yield = false;
	ssdp_fmap_unpin(&sp->fmap, cset);
	sp->set_released(sp, cset);
}

/* Hold @cset aside after a failed writeback; cache_lock held. */
static void ssdp_wb_fail_locked(struct ssdprio *sp, u32 cset)
{
	lockdep_assert_held(&sp->cache_lock);
	ssdp_count(sp, SSDP_ST_WRITEBACK_ERRORS);
	if (!sp->set_io[cset].wb_failed) {
		sp->set_io[cset].wb_failed = true;
		ssdp_fmap_pin(&sp->fmap, cset);
		sp->nr_wb_failed++;
	}
	if (!sp->ev->backoff_ms)
		sp->ev->backoff_ms = SSDP_WB_BACKOFF_MIN_MS;
	if (!sp->suspended && !delayed_work_pending(&sp->ev->retry))
		queue_delayed_work(sp->wq, &sp->ev->retry,
				   msecs_to_jiffies(sp->ev->backoff_ms));
	sp->ev->backoff_ms = min(sp->ev->backoff_ms * 2, SSDP_WB_BACKOFF_MAX_MS);
}

/* @cset is no longer held aside; cache_lock held. */
void ssdp_wb_unfail_locked(struct ssdprio *sp, u32 cset)
{
	lockdep_assert_held(&sp->cache_lock);
	if (!sp->set_io[cset].wb_failed)
		return;
	sp->set_io[cset].wb_failed = false;
	ssdp_fmap_unpin(&sp->fmap, cset);
	sp->nr_wb_failed--;
}

/* Return every set held aside to the normal flow; cache_lock held. */
void ssdp_wb_retry_now_locked(struct ssdprio *sp)
{
	u32 cset;

	lockdep_assert_held(&sp->cache_lock);
	for (cset = 0; sp->nr_wb_failed && cset < sp->layout.nr_csets; cset++)
		ssdp_wb_unfail_locked(sp, cset);
	ssdp_esm_kick(&sp->evict);
	ssdp_evict_kick_locked(sp);
}

static bool ssdp_wb_start_locked(struct ssdprio *sp, u32 cset, u32 only,
				 enum ssdp_evict_wb_kind kind, bool pressure);

/* Backoff over: write back a few sets held aside, where they are. */
static void ssdp_wb_retry_fn(struct work_struct *work)
{
	struct ssdprio *sp = container_of(to_delayed_work(work),
					  struct ssdp_evict, retry)->sp;
	u32 budget = max_t(u32, READ_ONCE(sp->cfg.evict_inflight), 1);
	u32 n = sp->layout.nr_csets, i, cset;
	unsigned long flags;

	spin_lock_irqsave(&sp->cache_lock, flags);
	for (i = 0; i < n && budget && !sp->suspended; i++) {
		cset = (sp->ev->retry_cursor + i) % n;
		if (sp->set_io[cset].wb_failed && !sp->set_io[cset].excl &&
		    ssdp_wb_start_locked(sp, cset, SSDP_NONE, SSDP_WB_RETRY,
					 false))
			budget--;
	}
	sp->ev->retry_cursor = (sp->ev->retry_cursor + i) % n;
	spin_unlock_irqrestore(&sp->cache_lock, flags);
}

static void ssdp_wb_job_fn(struct work_struct *work)
{
	struct ssdp_wb_job *job = container_of(work, struct ssdp_wb_job, work);
	struct ssdprio *sp = job->sp;
	struct ssdp_buf buf;
	unsigned long flags;
	int r;

	r = ssdp_buf_alloc(&buf, min_t(u32, SSDP_WB_BUF_BYTES,
				       sp->layout.set_sectors << SECTOR_SHIFT),
			   GFP_NOIO | __GFP_NOWARN);
	if (!r) {
		r = ssdp_writeback_set(sp, job, &buf);
		ssdp_buf_free(&buf);
	} else {
		DMERR_LIMIT("%s: no memory for the writeback of cache set %u",
			    ssdp_name(sp), job->cset);
	}

	spin_lock_irqsave(&sp->cache_lock, flags);
	ssdp_excl_end_locked(sp, job->cset);
	sp->ev->dirty_blocks -= job->dirty;
	if (r) {
		ssdp_wb_fail_locked(sp, job->cset);
		ssdp_esm_wb_failed(&sp->evict, job->kind);
	} else {
		sp->ev->backoff_ms = SSDP_WB_BACKOFF_MIN_MS;
		ssdp_wb_unfail_locked(sp, job->cset);
		/* Others held aside may work now too. */
		if (sp->nr_wb_failed && !sp->suspended)
			mod_delayed_work(sp->wq, &sp->ev->retry, 0);
		ssdp_esm_wb_done(&sp->evict, job->kind);
	}
	ssdp_evict_kick_locked(sp);
	spin_unlock_irqrestore(&sp->cache_lock, flags);

	kfree(job);
	if (atomic_dec_and_test(&sp->bg_jobs))
		wake_up(&sp->bg_wait);
}

/*
 * Start a writeback job on @cset (@only: one run of it, see the job);
 * cache_lock held.
 */
static bool ssdp_wb_start_locked(struct ssdprio *sp, u32 cset, u32 only,
				 enum ssdp_evict_wb_kind kind, bool pressure)
{
	struct ssdp_wb_job *job;

	if (cset == SSDP_NONE || !ssdp_fmap_nr_dirty(&sp->fmap, cset))
		return false;
	job = kzalloc(sizeof(*job), GFP_NOWAIT | __GFP_NOWARN);
	if (!job)
		return false;
	job->sp = sp;
	job->cset = cset;
	/* One run: at least its first block. */
	job->dirty = only == SSDP_NONE ? ssdp_fmap_nr_dirty(&sp->fmap, cset) :
					 1;
	sp->ev->dirty_blocks += job->dirty;
	job->kind = kind;
	job->pressure = pressure;
	job->only = only;
	job->yields = only == SSDP_NONE &&
		      (kind == SSDP_WB_CLEAN ||
		       (kind == SSDP_WB_EVICT && !pressure));
	sp->set_io[cset].wb_yield = false;
	/* Its ring entry is stale now; a lock-out left is noted again. */
	sp->set_io[cset].lockout = false;
	INIT_WORK(&job->work, ssdp_wb_job_fn);
	sp->set_io[cset].excl = true;
	ssdp_fmap_pin(&sp->fmap, cset);
	atomic_inc(&sp->bg_jobs);
	queue_work(sp->wq, &job->work);
	return true;
}

/*
 * Eviction and cleaning take the oldest dirty set that no write holds,
 * among this many (sets held aside after failed writebacks are skipped:
 * with a dead origin they could be all of them, and this runs on every
 * event).  Reads may go on under a writeback: a hot set always has some.
 */
#define SSDP_DIRTY_SCAN		64U

static u32 ssdp_wb_victim_locked(struct ssdprio *sp, u32 max_scan)
{
	u32 c = ssdp_fmap_oldest_dirty(&sp->fmap);

	lockdep_assert_held(&sp->cache_lock);
	for (; c != SSDP_NONE && max_scan; max_scan--,
	     c = ssdp_fmap_next_dirty_set(&sp->fmap, c)) {
		const struct ssdp_set_io *sio = &sp->set_io[c];

		if (!sio->writers && !sio->excl && !sio->wb_failed)
			return c;
	}
	return SSDP_NONE;
}

static u32 ssdp_oldest_dirty_locked(struct ssdprio *sp)
{
	lockdep_assert_held(&sp->cache_lock);
	return ssdp_wb_victim_locked(sp, SSDP_DIRTY_SCAN);
}

/*
 * Clean blocks are taken in place by new ones, so what eviction can do
 * is write a dirty set back: there is one to take, or there is not.
 */
static enum ssdp_evict_head ssdp_head_locked(struct ssdprio *sp)
{
	lockdep_assert_held(&sp->cache_lock);
	return ssdp_oldest_dirty_locked(sp) != SSDP_NONE ? SSDP_HEAD_DIRTY :
							   SSDP_HEAD_NONE;
}

static void ssdp_clean_view_locked(struct ssdprio *sp, u64 now_s,
				   struct ssdp_evict_view *v)
{
	u32 old = ssdp_oldest_dirty_locked(sp);
	u32 since;

	lockdep_assert_held(&sp->cache_lock);
	v->dirty_blocks = sp->fmap.total_dirty;
	v->dirty_in_writeback = sp->ev->dirty_blocks;
	v->cleanable = old != SSDP_NONE;
	v->oldest_age = 0;
	if (v->cleanable) {
		since = ssdp_fmap_dirty_since(&sp->fmap, old);
		if ((u32)now_s > since)
			v->oldest_age = (u64)((u32)now_s - since) *
					NSEC_PER_SEC;
	}
}

static void ssdp_evict_work_fn(struct work_struct *work)
{
	struct ssdprio *sp = container_of(work, struct ssdp_evict, work)->sp;
	struct ssdp_evict_action act;
	struct ssdp_evict_view view;
	struct ssdp_lockout lo;
	unsigned long flags;
	bool flushing;
	u64 now;
	u32 cset;

	spin_lock_irqsave(&sp->cache_lock, flags);
	flushing = sp->evict.flushing;
	for (;;) {
		now = ktime_get_ns();
		view.nr_free = ssdp_room_sets(sp);
		/* Every set held aside is dirty (see ssdp_wb_unfail_locked). */
		view.nr_dirty_sets = sp->fmap.nr_dirty_sets;
		if (!WARN_ON_ONCE(view.nr_dirty_sets < sp->nr_wb_failed))
			view.nr_dirty_sets -= sp->nr_wb_failed;
		view.head = ssdp_head_locked(sp);
		ssdp_clean_view_locked(sp, ktime_get_seconds(), &view);
		view.lockout_ready = ssdp_esm_lockout_on(&sp->evict) &&
				     ssdp_lockout_ready_locked(sp);
		view.lockout_sets = sp->ev->nr_lockout;
		act = ssdp_esm_next_action(&sp->evict, now, &view);

		switch (act.type) {
		case SSDP_EVICT_ACT_FREE_CLEAN_HEAD:
			/* Never asked for: the head is never clean. */
			ssdp_esm_action_failed(&sp->evict, act.type);
			continue;
		case SSDP_EVICT_ACT_START_WRITEBACK:
			cset = ssdp_oldest_dirty_locked(sp);
			if (!ssdp_wb_start_locked(sp, cset, SSDP_NONE,
						  SSDP_WB_EVICT,
						  act.pressure))
				ssdp_esm_action_failed(&sp->evict, act.type);
			continue;
		case SSDP_EVICT_ACT_START_FLUSH:
			cset = ssdp_wb_victim_locked(sp, U32_MAX);
			if (!ssdp_wb_start_locked(sp, cset, SSDP_NONE,
						  SSDP_WB_FLUSH,
						  false))
				ssdp_esm_action_failed(&sp->evict, act.type);
			continue;
		case SSDP_EVICT_ACT_START_CLEAN:
			cset = ssdp_oldest_dirty_locked(sp);
			if (!ssdp_wb_start_locked(sp, cset, SSDP_NONE,
						  SSDP_WB_CLEAN,
						  false))
				ssdp_esm_action_failed(&sp->evict, act.type);
			continue;
		case SSDP_EVICT_ACT_START_LOCKOUT:
			lo = ssdp_lockout_pop_locked(sp);
			/* Not started: the next refusal notes it again. */
			sp->set_io[lo.cset].lockout = false;
			if (!ssdp_wb_start_locked(sp, lo.cset, lo.blk,
						  SSDP_WB_LOCKOUT, true))
				ssdp_esm_action_failed(&sp->evict, act.type);
			continue;
		case SSDP_EVICT_ACT_ARM_TIMER:
			if (!sp->suspended)
				mod_delayed_work(sp->wq, &sp->ev->timer,
						 nsecs_to_jiffies(act.deadline -
								  now) + 1);
			break;
		case SSDP_EVICT_ACT_NONE:
		default:
			break;
		}
		break;
	}
	if (flushing && !sp->evict.flushing) {
		if (sp->nr_wb_failed) {
			sp->flush_failed = true;
			DMERR("%s: %s ended with %u cache sets not written back (see writeback_errors)",
			      ssdp_name(sp), sp->draining ? "drain" :
			      "flush_dirty", sp->nr_wb_failed);
		}
		sp->draining = false;
	}
	spin_unlock_irqrestore(&sp->cache_lock, flags);
}

/* The eviction worker, its quiet-window timer and the writeback retry. */
int ssdp_evict_init(struct ssdprio *sp)
{
	sp->ev = kzalloc(sizeof(*sp->ev), GFP_KERNEL);
	if (!sp->ev)
		return -ENOMEM;
	sp->ev->sp = sp;
	INIT_WORK(&sp->ev->work, ssdp_evict_work_fn);
	INIT_DELAYED_WORK(&sp->ev->timer, ssdp_evict_timer_fn);
	INIT_DELAYED_WORK(&sp->ev->retry, ssdp_wb_retry_fn);
	return 0;
}

/* After ssdp_evict_drain(), or when nothing ever ran. */
void ssdp_evict_exit(struct ssdprio *sp)
{
	kfree(sp->ev);
	sp->ev = NULL;
}

/* Suspend: nothing new starts (sp->suspended); wait for what runs. */
void ssdp_evict_drain(struct ssdprio *sp)
{
	cancel_delayed_work_sync(&sp->ev->timer);
	cancel_delayed_work_sync(&sp->ev->retry);
	flush_work(&sp->ev->work);
}
