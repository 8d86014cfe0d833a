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
 * copies the dirty runs SSD -> origin at idle priority (the origin write
 * waits for a quiet window in the scheduler), origin set by origin set in
 * disk order, flushes the origin, and only then marks the blocks clean, so
 * a clean block always has a durable origin copy.
 *
 * The origin writes are few and large, for an HDD and for the idle
 * throttle, which lets one out per idle_dispatch_interval: runs that
 * touch go out as one write, and so do runs of an origin set a few clean
 * blocks apart (writeback_gap), the clean blocks rewritten with what the
 * origin already holds.  That is safe only while none of those blocks
 * changes: user writes to the set wait (excl), promotions wait (excl),
 * and from the first gap bridged in a set no clean block of it is given
 * to another origin set (set_io.wb_keep_clean).
 * A cleaning job also holds the cache sets of the origin sets right after
 * its own dirty ones (up to SSDP_WB_NEIGHBOURS), and writes their runs in
 * the same sorted stream.  Then it commits the
 * metadata before it lets go of the set: a clean frame may be given to
 * another origin set, and a record still calling it dirty would bring the
 * newcomer's data back as this block's after a crash.  For the same reason
 * no clean block of its sets changes hands from the moment it marks
 * blocks clean until that commit is durable, not even to a write that
 * goes on beside it or to a new origin set's (set_io.wb_keep_clean).
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
 * normal flow at once when flush_dirty is asked for again or on resume,
 * and when a discard or an origin write drops their last dirty block (a
 * set held aside is always a dirty set: the worker counts on it).
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
#include "wb_track.h"

#define SSDP_WB_BACKOFF_MIN_MS	1000U
#define SSDP_WB_BACKOFF_MAX_MS	64000U
/* Writeback buffer: dirty runs are copied in pieces of at most this. */
#define SSDP_WB_BUF_BYTES	(256U << 10)
/*
 * A burst's pieces start within this much origin of its first sector.
 * The normal bio that comes next waits for the whole burst: over 256 KiB
 * an HDD turns a fifth of a track, and that wait stays within a seek.
 * Bursts that ran over up to 1 MiB skips between pieces (a set's width)
 * took the same origin time per dirty block, and raised a scattered
 * reader's p99 by half (docs/bench.md).
 */
#define SSDP_WB_BURST_SECTORS	512U

/*
 * Lock-out sets noted at once: enough for the sets one burst of misses
 * meets; a set not noted because it is full is noted by its next refusal.
 */
#define SSDP_LOCKOUT_RING	64

struct ssdp_lockout {
	u32 cset;
	u32 frame;	/* the refusing frame; SSDP_NONE: the set's tags */
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
	/*
	 * [cache_lock] A job could not start for want of memory: nothing
	 * else may come to try again (an idle device), so a timer does.
	 * Set and consumed within one cache_lock section (the worker's, the
	 * retry's).
	 */
	bool start_nomem;
};

/* How soon a start that found no memory is tried again. */
#define SSDP_WB_NOMEM_RETRY	(HZ / 20 + 1)

/*
 * What a writeback gathers for the origin: pieces of lines, in origin
 * order, read from the SSD into one buffer.  Pieces that touch are one
 * origin write; a writeback under pressure may leave skips between pieces
 * (all within SSDP_WB_BURST_SECTORS): the pieces go out as separate
 * origin writes, at once, a burst the scheduler keeps together, so the
 * disk passes over them in one turn instead of seeking once per write
 * between the reads of a scattered load.
 */
struct ssdp_wb_write {
	sector_t origin;	/* its first sector */
	sector_t end;		/* past its last sector */
	u32 blocks;		/* in the buffer */
	u32 nr;
	struct {
		u32 idx;	/* in the job's sorted lines */
		u32 first;
		u32 nr;
	} piece[SSDP_WB_MAX_PIECES];
};

/*
 * A writeback holds, besides its own cache set, the cache sets of up to
 * SSDP_WB_NEIGHBOURS neighbouring origin sets (the ones right after a
 * dirty line of its set), so that their dirty runs go out in the same
 * sorted stream: an HDD sees short forward steps, and where two runs
 * touch, one write.
 */
struct ssdp_wb_job {
	struct work_struct work;
	struct ssdprio *sp;
	u32 cset;
	u32 dirty;		/* dirty blocks of its lines when it started */
	enum ssdp_evict_wb_kind kind;
	u32 flush_epoch;	/* sp->flush_epoch when it started */
	bool pressure;		/* eviction without a quiet window */
	/*
	 * Started in a quiet window (cleaning, quiet eviction): a user write
	 * to a set it holds that ends the quiet stops it after the write in
	 * hand (set_io.wb_yield), so the write waits for one, not the set.
	 */
	bool yields;
	/*
	 * Lock-out cleaning: only the dirty run of @only_line from this
	 * block (SSDP_NONE: the whole set), the block whose frame refused a
	 * claim.  A short writeback, for the writes to the set wait for it.
	 */
	u32 only;
	u32 only_line;
	/*
	 * Two dirty runs of a line at most this many clean blocks apart go
	 * out as one origin write, the clean blocks rewritten with the data
	 * the origin already has (writeback_gap).  A set it bridges in gives
	 * no clean block away from then on (set_io.wb_keep_clean).
	 */
	u32 gap;
	/* An SSD read of it failed (not an origin write, nor memory). */
	bool ssd_read_failed;
	/* It stopped for a write (@yields): what it left is not newer. */
	bool yielded;
	/* The neighbours' lines, each in a cache set of its own, held too. */
	u32 nr_nb;
	u32 nb_line[SSDP_WB_NEIGHBOURS];
	/*
	 * [cache_lock] Its lines, fixed at the start, and what user writes
	 * let in beside it did to them (wb_track.h).
	 */
	struct ssdp_wb_track *track;
	/*
	 * May skip between runs: under pressure, not a lock-out's one run.
	 */
	bool skips;
	/*
	 * [cache_lock] The origin sectors of the write being gathered or in
	 * flight, [out_start, out_end) (empty: none), and its pieces: a
	 * user write to the origin under a piece could land before it and
	 * be overwritten with older data.  Between pieces it may go.
	 */
	sector_t out_start;
	sector_t out_end;
	struct ssdp_wb_write out;
	/* Its origin writes, when it goes out. */
	struct ssdp_io_ext ext[SSDP_WB_MAX_PIECES];
};

void ssdp_evict_kick_locked(struct ssdprio *sp)
{
	lockdep_assert_held(&sp->cache_lock);
	if (!sp->suspended)
		queue_work(sp->wq, &sp->ev->work);
}

/* The set a drain waited for is let go: the writes deferred on it go on. */
void ssdp_drain_unwant_locked(struct ssdprio *sp)
{
	u32 cset = sp->drain_wants;

	lockdep_assert_held(&sp->cache_lock);
	if (cset == SSDP_NONE)
		return;
	sp->drain_wants = SSDP_NONE;
	sp->set_released(sp, cset);
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
			       sp->fmap.total_dirty,
			       sp->fmap.crowded_events)) {
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
void ssdp_lockout_note_locked(struct ssdprio *sp, u32 cset, u32 frame)
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
	lo->frame = frame;
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

static sector_t ssdp_wb_origin_sector(struct ssdprio *sp, u64 oset, u32 blk)
{
	return (oset << sp->set_shift) + ((sector_t)blk << sp->block_shift);
}

/* Should the job stop before its next origin write?  cache_lock held. */
static bool ssdp_wb_yield_locked(struct ssdprio *sp,
				 const struct ssdp_wb_job *job)
{
	u32 i;

	lockdep_assert_held(&sp->cache_lock);
	if (!job->yields)
		return false;
	if (sp->set_io[job->cset].wb_yield)
		return true;
	for (i = 0; i < job->nr_nb; i++)
		if (sp->set_io[ssdp_line_cset(job->nb_line[i])].wb_yield)
			return true;
	return false;
}

/*
 * The origin write of @w is over (@failed: with an error); cache_lock
 * held.  Failed, what it covered on the origin is undefined now, the clean
 * blocks it bridged too: they become dirty (durably: the caller commits),
 * so that the cache's copy stays the one that counts and is written back
 * again.  Done, a bridged block whose rewrite beside it failed meanwhile
 * (ssdp_wb_failed_beside_locked) has its latest data on the origin again,
 * and an SSD frame that may hold part of the failed write: dropped.  In
 * the same section as the write stops being carried (job->out), so that
 * no failed read or write of these blocks finds them clean and carried by
 * nothing in between.  Returns the blocks made dirty.
 */
static u32 ssdp_wb_write_over_locked(struct ssdprio *sp,
				     struct ssdp_wb_job *job, const u32 *lines,
				     const struct ssdp_wb_write *w, bool failed)
{
	u32 i, blk, idx, line, n = 0;
	bool noted;

	lockdep_assert_held(&sp->cache_lock);
	for (i = 0; i < w->nr; i++) {
		idx = w->piece[i].idx;
		line = lines[idx];
		for (blk = w->piece[i].first;
		     blk < w->piece[i].first + w->piece[i].nr; blk++) {
			noted = ssdp_wbt_failed_take(job->track, idx, blk);
			if (ssdp_fmap_block(&sp->fmap, line, blk) !=
			    SSDP_FMAP_CLEAN)
				continue;
			if (!failed) {
				if (noted) {
					ssdp_fmap_drop(&sp->fmap, line, blk, 1);
					sp->promo_gen++;
				}
				continue;
			}
			ssdp_fmap_set_dirty(&sp->fmap, line, blk, 1);
			sp->set_io[ssdp_line_cset(line)].redirtied++;
			/*
			 * Data from before a flush's request, dirty again:
			 * the flush owes it (a neighbour's set is not held
			 * aside with the job's).
			 */
			if (sp->evict.flushing)
				ssdp_fmap_flush_mark(&sp->fmap,
						     ssdp_line_cset(line));
			n++;
		}
	}
	job->out_end = job->out_start;
	return n;
}

/*
 * Does the writeback holding @line's set carry block @blk of it in the
 * write it gathers or has in flight?  cache_lock held.
 */
static bool ssdp_wb_carries_locked(struct ssdprio *sp, u32 line, u32 blk,
				   u32 *idx)
{
	struct ssdp_wb_job *job = sp->set_io[ssdp_line_cset(line)].wb;
	const struct ssdp_wb_write *w;
	u32 i;

	lockdep_assert_held(&sp->cache_lock);
	if (!job || job->out_end <= job->out_start)
		return false;
	w = &job->out;
	for (i = 0; i < w->nr; i++)
		if (job->track->lines[w->piece[i].idx] == line &&
		    blk >= w->piece[i].first &&
		    blk < w->piece[i].first + w->piece[i].nr) {
			*idx = w->piece[i].idx;
			return true;
		}
	return false;
}

/*
 * A rewrite of clean block @blk of @line failed on the SSD while a
 * writeback held its set: the frame may hold part of it.  Is the block to
 * stay?  Only if the writeback's origin write carries it (bridged): that
 * write may yet fail and leave the origin undefined there, and then the
 * frame has what is left of the block; its end decides (dirty again, or
 * dropped: ssdp_wb_write_over_locked()).  Any other clean block has its
 * data on the origin: the caller drops it, or it would read from the
 * origin while the cache is degraded and from the frame after a reload.
 * cache_lock held.
 */
bool ssdp_wb_failed_beside_locked(struct ssdprio *sp, u32 line, u32 blk)
{
	u32 idx;

	lockdep_assert_held(&sp->cache_lock);
	if (!ssdp_wb_carries_locked(sp, line, blk, &idx))
		return false;
	ssdp_wbt_failed_note(sp->set_io[ssdp_line_cset(line)].wb->track, idx,
			     blk);
	return true;
}

/*
 * The gathered write goes out: its pieces from the SSD into @buf (a read
 * per stretch of consecutive frames), one origin write per stretch of
 * pieces that touch, all at once.  done[idx]: past the last block of that
 * line written.  The job holds its sets, so no block of a piece changes
 * frames meanwhile, and user writes wait for the pieces' reads (the
 * window).
 */
static int ssdp_wb_write_out(struct ssdprio *sp,
			     struct ssdp_wb_job *job, const u32 *lines,
			     struct ssdp_wb_write *w, struct ssdp_buf *buf,
			     u32 *done)
{
	u32 block_bytes = sp->cfg.block_sectors << SECTOR_SHIFT;
	struct ssdp_io_ext *ext = job->ext;
	u32 i, off = 0, line, blk, end, frame, n, nr_ext = 0;
	unsigned long flags;
	sector_t at;
	int r;

	for (i = 0; i < w->nr; i++) {
		line = lines[w->piece[i].idx];
		blk = w->piece[i].first;
		end = blk + w->piece[i].nr;
		spin_lock_irqsave(&sp->cache_lock, flags);
		at = ssdp_wb_origin_sector(sp, ssdp_fmap_oset_of(&sp->fmap,
								 line), blk);
		spin_unlock_irqrestore(&sp->cache_lock, flags);
		if (nr_ext && ext[nr_ext - 1].sector +
			      (ext[nr_ext - 1].bytes >> SECTOR_SHIFT) == at) {
			ext[nr_ext - 1].bytes += w->piece[i].nr * block_bytes;
		} else {
			ext[nr_ext].sector = at;
			ext[nr_ext].off = (size_t)off * block_bytes;
			ext[nr_ext].bytes = w->piece[i].nr * block_bytes;
			nr_ext++;
		}
		while (blk < end) {
			spin_lock_irqsave(&sp->cache_lock, flags);
			n = ssdp_fmap_frame_run(&sp->fmap, line, blk, end - blk,
						&frame);
			spin_unlock_irqrestore(&sp->cache_lock, flags);
			if (WARN_ON_ONCE(!n))
				return -EIO;
			r = ssdp_io_ssd_sync(sp, buf, (size_t)off * block_bytes,
					     ssdp_frame_sector(sp,
							ssdp_line_cset(line),
							frame),
					     n * block_bytes, REQ_OP_READ);
			if (r) {
				job->ssd_read_failed = true;
				return r;
			}
			off += n;
			blk += n;
		}
	}
	spin_lock_irqsave(&sp->cache_lock, flags);
	if (ssdp_wbt_window_clear(job->track))
		sp->set_released(sp, job->cset);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	r = ssdp_io_origin_burst(sp, buf, ext, nr_ext, REQ_OP_WRITE,
				 ssdp_wb_class(sp, job));
	spin_lock_irqsave(&sp->cache_lock, flags);
	n = ssdp_wb_write_over_locked(sp, job, lines, w, r != 0);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	if (r) {
		if (n)
			ssdp_meta_commit(sp);
		return r;
	}
	for (i = 0; i < w->nr; i++)
		done[w->piece[i].idx] = w->piece[i].first + w->piece[i].nr;
	ssdp_count_n(sp, SSDP_ST_WRITEBACK_WRITES, nr_ext);
	/* Its pieces are read under cache_lock (write-around). */
	spin_lock_irqsave(&sp->cache_lock, flags);
	w->nr = 0;
	w->blocks = 0;
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	return 0;
}

enum ssdp_wb_join {
	SSDP_WB_APART,		/* a write of its own */
	SSDP_WB_JOINS,		/* the same origin write (bridging *gap) */
	SSDP_WB_SKIPS,		/* a piece after a skip: the same burst */
};

/* May a run from origin sector @at join @w as a piece after a skip? */
static bool ssdp_wb_skip_ok(const struct ssdp_wb_job *job,
			    const struct ssdp_wb_write *w, u32 buf_blocks,
			    sector_t at)
{
	return job->skips && at > w->end &&
	       at - w->origin < SSDP_WB_BURST_SECTORS &&
	       w->nr < SSDP_WB_MAX_PIECES && w->blocks < buf_blocks;
}

/*
 * From now until the job ends no clean block of @line's set changes hands
 * (set_io.wb_keep_clean): the job rewrites clean blocks it bridges with
 * what the origin holds, or it has marked blocks clean whose "clean" is
 * not durable before its commit.  Until then, writes of other origin
 * sets (and new blocks of its own) may take clean frames of its sets.
 * cache_lock held.
 */
static void ssdp_wb_keep_clean_locked(struct ssdprio *sp, u32 line)
{
	u32 cset = ssdp_line_cset(line);
	struct ssdp_set_io *sio = &sp->set_io[cset];

	lockdep_assert_held(&sp->cache_lock);
	if (!sio->wb_keep_clean) {
		sio->wb_keep_clean = true;
		ssdp_fmap_set_no_replace(&sp->fmap, cset, true);
	}
}

/*
 * May the run [first, first + nr) of line @idx join the write being
 * gathered?  *gap: clean blocks it bridges.  cache_lock held.
 */
static enum ssdp_wb_join
ssdp_wb_joins_locked(struct ssdprio *sp, const struct ssdp_wb_job *job,
		     const struct ssdp_wb_write *w, u32 buf_blocks, u32 idx,
		     u32 line, u32 first, u32 *gap)
{
	sector_t at = ssdp_wb_origin_sector(sp, ssdp_fmap_oset_of(&sp->fmap,
								  line), first);
	u32 last_end = w->piece[w->nr - 1].first + w->piece[w->nr - 1].nr;
	bool skip = ssdp_wb_skip_ok(job, w, buf_blocks, at);
	enum ssdp_fmap_hit hit;

	lockdep_assert_held(&sp->cache_lock);
	*gap = 0;
	if (at == w->end) {	/* the same line, or the next origin set */
		if (w->blocks >= buf_blocks)
			return SSDP_WB_APART;
		/* Another line's run: a piece of its own. */
		if (w->piece[w->nr - 1].idx != idx &&
		    w->nr == SSDP_WB_MAX_PIECES)
			return SSDP_WB_APART;
		return SSDP_WB_JOINS;
	}
	if (w->piece[w->nr - 1].idx != idx || first - last_end > job->gap)
		return skip ? SSDP_WB_SKIPS : SSDP_WB_APART;
	*gap = first - last_end;
	if (w->blocks + *gap >= buf_blocks ||
	    ssdp_fmap_hit_run(&sp->fmap, line, last_end, *gap, &hit) != *gap ||
	    hit != SSDP_FMAP_CLEAN ||
	    ssdp_wbt_any_touched(job->track, idx, last_end, *gap)) {
		*gap = 0;
		return skip ? SSDP_WB_SKIPS : SSDP_WB_APART;
	}
	/* These must stay what the origin holds until the job ends. */
	ssdp_wb_keep_clean_locked(sp, line);
	return SSDP_WB_JOINS;
}

/* The dirty blocks of @line.  cache_lock held. */
static u32 ssdp_wb_count_dirty_locked(struct ssdprio *sp, u32 line)
{
	u32 from = 0, first, nr, n = 0;

	lockdep_assert_held(&sp->cache_lock);
	while (ssdp_fmap_next_dirty_run(&sp->fmap, line, from, &first, &nr)) {
		n += nr;
		from = first + nr;
	}
	return n;
}

/*
 * The job's lines, sorted by origin set: @cset's dirty lines (with
 * job->only, the one whose dirty block holds the refusing frame) and the
 * neighbours'.  cache_lock held.
 */
static u32 ssdp_wb_lines_locked(struct ssdprio *sp,
				const struct ssdp_wb_job *job, u32 *lines)
{
	u32 n, i, j, l;

	lockdep_assert_held(&sp->cache_lock);
	if (job->only != SSDP_NONE) {
		lines[0] = job->only_line;
		return job->only_line != SSDP_NONE;
	}
	n = ssdp_fmap_dirty_lines(&sp->fmap, job->cset, lines);
	for (i = 0; i < job->nr_nb; i++)
		lines[n++] = job->nb_line[i];
	for (i = 1; i < n; i++) {
		l = lines[i];
		for (j = i; j && ssdp_fmap_oset_of(&sp->fmap, lines[j - 1]) >
				 ssdp_fmap_oset_of(&sp->fmap, l); j--)
			lines[j] = lines[j - 1];
		lines[j] = l;
	}
	return n;
}

/*
 * The next dirty run of line @idx from @pos that no user write touched
 * since the job started (wb_track.h); cache_lock held.
 */
static bool ssdp_wb_next_run_locked(struct ssdprio *sp,
				    const struct ssdp_wb_track *t, u32 idx,
				    u32 pos, u32 *first, u32 *nr)
{
	lockdep_assert_held(&sp->cache_lock);
	while (ssdp_fmap_next_dirty_run(&sp->fmap, t->lines[idx], pos, first,
					nr)) {
		if (ssdp_wbt_untouched_run(t, idx, first, nr))
			return true;
		pos = *first + *nr;
	}
	return false;
}

/*
 * Write the dirty blocks of the job's lines back (or, job->only, one run
 * of them), in origin order, runs that touch or lie within job->gap clean
 * blocks of each other as one origin write; mark what was written clean
 * and commit.  The job holds its sets exclusively but for user writes
 * that rewrite cached blocks on the SSD: those wait only for the blocks
 * being read, and what they touch is neither written nor marked clean
 * (it stays dirty).  A job that yields marks clean only what it wrote:
 * each line up to the end of its last write.
 */
static int ssdp_writeback_set(struct ssdprio *sp,
			      struct ssdp_wb_job *job,
			      struct ssdp_buf *buf)
{
	u32 block_bytes = sp->cfg.block_sectors << SECTOR_SHIFT;
	u32 buf_blocks = (buf->nr_pages << PAGE_SHIFT) / block_bytes;
	struct ssdp_wb_track *t = job->track;
	const u32 *lines = t->lines;
	u32 done[SSDP_WB_MAX_LINES];
	u32 i, pos, first, nr, gap = 0, take, written = 0, bridged = 0;
	u32 from = job->only != SSDP_NONE ? job->only : 0;
	bool one = job->only != SSDP_NONE, yielded = false, stop = false;
	bool more, gather;
	enum ssdp_wb_join join;
	struct ssdp_wb_write *w = &job->out;
	unsigned long flags;
	sector_t at;
	int r = 0;

	for (i = 0; i < t->nr_lines; i++)
		done[i] = from;

	for (i = 0; i < t->nr_lines && !r && !stop; i++) {
		pos = from;
		for (;;) {
			spin_lock_irqsave(&sp->cache_lock, flags);
			more = ssdp_wb_next_run_locked(sp, t, i, pos, &first,
						       &nr);
			join = more && w->blocks ?
			       ssdp_wb_joins_locked(sp, job, w, buf_blocks, i,
						    lines[i], first, &gap) :
			       SSDP_WB_APART;
			/*
			 * Before a new write, after at least one, or a busy
			 * set never gets clean.
			 */
			if (more && !w->blocks && written &&
			    ssdp_wb_yield_locked(sp, job)) {
				yielded = true;
				stop = true;
				more = false;
			}
			/*
			 * Into the write under cache_lock: from here until
			 * its reads are done, writes to it wait.
			 */
			gather = more && (!w->blocks || join != SSDP_WB_APART);
			if (gather) {
				at = ssdp_wb_origin_sector(sp,
					ssdp_fmap_oset_of(&sp->fmap, lines[i]),
					first);
				if (!w->blocks) {
					gap = 0;
					w->origin = at;
				}
				take = min(nr, buf_blocks - w->blocks - gap);
				if (w->nr && w->piece[w->nr - 1].idx == i &&
				    join == SSDP_WB_JOINS) {
					w->piece[w->nr - 1].nr += gap + take;
				} else {
					w->piece[w->nr].idx = i;
					w->piece[w->nr].first = first;
					w->piece[w->nr].nr = take;
					w->nr++;
				}
				ssdp_wbt_window_add(t, i, first - gap,
						    gap + take);
				w->blocks += gap + take;
				w->end = at + ((sector_t)take << sp->block_shift);
				job->out_start = w->origin;
				job->out_end = w->end;
				written += take;
				bridged += gap;
				pos = first + take;
			}
			spin_unlock_irqrestore(&sp->cache_lock, flags);
			if (!more)
				break;
			if (!gather) {
				r = ssdp_wb_write_out(sp, job, lines, w, buf,
						      done);
				if (r || one) {
					stop = true;
					break;
				}
				/* The run again, a new write. */
			}
		}
	}
	if (!r && w->blocks)
		r = ssdp_wb_write_out(sp, job, lines, w, buf, done);
	if (!r && written)
		r = ssdp_io_origin_flush(sp);
	if (r) {
		DMERR_LIMIT("writeback of cache set %u failed (%s): %d",
			    job->cset, job->ssd_read_failed ? "SSD read" :
			    "origin", r);
		return r;
	}
	if (yielded) {
		job->yielded = true;
		ssdp_count(sp, SSDP_ST_WRITEBACK_YIELDS);
	}
	if (!written)
		return 0;

	spin_lock_irqsave(&sp->cache_lock, flags);
	/*
	 * Counted before the blocks turn clean: whoever sees dirty_blocks
	 * drop (under cache_lock) sees them counted as written back.
	 */
	ssdp_count_n(sp, SSDP_ST_BLOCKS_WRITTEN_BACK, written);
	ssdp_count_n(sp, SSDP_ST_WRITEBACK_BRIDGED, bridged);
	for (i = 0; i < t->nr_lines; i++) {
		/* A block a write touched may be newer than what went out. */
		for (pos = from; pos < done[i]; pos = first + nr) {
			first = pos;
			nr = done[i] - pos;
			if (!ssdp_wbt_untouched_run(t, i, &first, &nr))
				break;
			/*
			 * Clean here, dirty in the records until the commit
			 * below: a frame given away meanwhile would, after a
			 * crash, bring the newcomer's data back as this block.
			 */
			ssdp_wb_keep_clean_locked(sp, lines[i]);
			ssdp_fmap_clear_dirty(&sp->fmap, lines[i], first, nr);
		}
		/*
		 * What a whole set's writeback leaves dirty was written
		 * while it ran: the set is not the oldest any more, or the
		 * next writeback would take it again at once, for a few
		 * blocks still being rewritten.
		 */
		if (!one && !yielded && ssdp_line_cset(lines[i]) == job->cset &&
		    ssdp_wbt_any_touched(t, i, 0, t->set_blocks)) {
			sp->fmap.clock = ktime_get_seconds();
			ssdp_fmap_dirty_renew(&sp->fmap, job->cset);
		}
	}
	/*
	 * A retry that left nothing dirty: the set is held aside no longer
	 * from here on, not from the job's end (the worker may look in
	 * between, while the commit below is out).
	 */
	if (!ssdp_fmap_nr_dirty(&sp->fmap, job->cset))
		ssdp_wb_unfail_locked(sp, job->cset);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	/*
	 * Durable "clean" before the frames can change hands.  If it fails
	 * the cache is degraded (meta.c), and no frame changes hands then.
	 */
	ssdp_meta_commit(sp);
	return 0;
}

/* Take @cset exclusively for @job; cache_lock held. */
static void ssdp_excl_begin_locked(struct ssdprio *sp, u32 cset,
				   struct ssdp_wb_job *job)
{
	struct ssdp_set_io *sio = &sp->set_io[cset];

	lockdep_assert_held(&sp->cache_lock);
	sio->excl = true;
	sio->wb = job;
	sio->wb_yield = false;
	ssdp_fmap_pin(&sp->fmap, cset);
}

/* Give up exclusive ownership of @cset; cache_lock held. */
static void ssdp_excl_end_locked(struct ssdprio *sp, u32 cset)
{
	struct ssdp_set_io *sio = &sp->set_io[cset];

	lockdep_assert_held(&sp->cache_lock);
	sio->excl = false;
	sio->wb = NULL;
	sio->wb_yield = false;
	if (sio->wb_keep_clean) {
		sio->wb_keep_clean = false;
		ssdp_no_replace_update(sp, cset);
	}
	ssdp_fmap_unpin(&sp->fmap, cset);
	sp->set_released(sp, cset);
}

/*
 * May a user write of blocks [first, first + nr) of @line go on while a
 * writeback holds its set?  Only one the caller knows rewrites cached
 * blocks on the SSD alone (wb_track.h); it then counts as touching them.
 * cache_lock held.
 */
bool ssdp_wb_write_beside_locked(struct ssdprio *sp, u32 line, u32 first,
				 u32 nr)
{
	struct ssdp_wb_job *job = sp->set_io[ssdp_line_cset(line)].wb;

	lockdep_assert_held(&sp->cache_lock);
	if (!job || !ssdp_wbt_write(job->track, line, first, nr))
		return false;
	ssdp_count(sp, SSDP_ST_WRITES_BESIDE_WRITEBACK);
	return true;
}

/*
 * A write of whole blocks [first, first + nr) of @line completed on the
 * SSD while a writeback holds its set: it went in beside the writeback (no
 * writeback starts beside a write in flight), and nothing from before it
 * is left in those blocks.  cache_lock held.
 */
void ssdp_wb_overwritten_locked(struct ssdprio *sp, u32 line, u32 first,
				u32 nr)
{
	struct ssdp_wb_job *job = sp->set_io[ssdp_line_cset(line)].wb;

	lockdep_assert_held(&sp->cache_lock);
	if (job)
		ssdp_wbt_overwritten(job->track, line, first, nr);
}

/*
 * May a user write of blocks [first, first + nr) of @line go to the
 * origin while a writeback holds its set?  Only one the caller knows
 * to be of blocks the cache does not hold, so no run of the job takes
 * them; and, whatever the caller checked, not inside the write the job
 * gathers or has in flight: that write carries what the job read, and
 * would overwrite the user's if it landed after it.  cache_lock held.
 */
bool ssdp_wb_write_around_locked(struct ssdprio *sp, u32 line, u32 first,
				 u32 nr)
{
	struct ssdp_wb_job *job = sp->set_io[ssdp_line_cset(line)].wb;
	sector_t at = ssdp_wb_origin_sector(sp, ssdp_fmap_oset_of(&sp->fmap,
								  line), first);

	sector_t end = at + ((sector_t)nr << sp->block_shift), p;
	const struct ssdp_wb_write *w;
	u32 i;

	lockdep_assert_held(&sp->cache_lock);
	if (!job)
		return false;
	w = &job->out;
	if (at < job->out_end && job->out_start < end) {
		for (i = 0; i < w->nr; i++) {
			p = ssdp_wb_origin_sector(sp, ssdp_fmap_oset_of(&sp->fmap,
					job->track->lines[w->piece[i].idx]),
					w->piece[i].first);
			if (at < p + ((sector_t)w->piece[i].nr <<
				      sp->block_shift) && p < end)
				return false;
		}
	}
	ssdp_count(sp, SSDP_ST_WRITES_AROUND_WRITEBACK);
	return true;
}

/*
 * Hold @cset aside after a failed writeback (@ssd_read: it failed reading
 * the SSD); cache_lock held.
 */
static void ssdp_wb_fail_locked(struct ssdprio *sp, u32 cset, bool ssd_read)
{
	lockdep_assert_held(&sp->cache_lock);
	ssdp_count(sp, SSDP_ST_WRITEBACK_ERRORS);
	/* A flush ends failed with it instead (nr_wb_failed). */
	ssdp_fmap_flush_unmark(&sp->fmap, cset);
	/*
	 * Held aside is for what is left to write back (the worker counts
	 * every such set as dirty): a set whose last dirty block went while
	 * the job held it (a discard, a write around it) leaves nothing to
	 * retry.
	 */
	if (!ssdp_fmap_nr_dirty(&sp->fmap, cset))
		return;
	sp->set_io[cset].wb_failed_ssd = ssd_read;
	if (!sp->set_io[cset].wb_failed) {
		sp->set_io[cset].wb_failed = true;
		ssdp_fmap_pin(&sp->fmap, cset);
		sp->nr_wb_failed++;
	}
	/*
	 * To the young end of the dirty list: eviction and cleaning look at
	 * its oldest SSDP_DIRTY_SCAN sets only, and sets held aside there
	 * (a dead region of the origin) would hide every healthy one behind
	 * them for good.  The retry finds it wherever it is.
	 */
	sp->fmap.clock = ktime_get_seconds();
	ssdp_fmap_dirty_renew(&sp->fmap, cset);
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
	sp->set_io[cset].wb_failed_ssd = false;
	ssdp_fmap_unpin(&sp->fmap, cset);
	sp->nr_wb_failed--;
}

/*
 * Return every set held aside to the normal flow; cache_lock held.  A
 * flush that runs owes them again (it let them go when they failed).
 */
void ssdp_wb_retry_now_locked(struct ssdprio *sp)
{
	u32 cset;

	lockdep_assert_held(&sp->cache_lock);
	for (cset = 0; sp->nr_wb_failed && cset < sp->layout.nr_csets; cset++) {
		if (sp->set_io[cset].wb_failed && sp->evict.flushing)
			ssdp_fmap_flush_mark(&sp->fmap, cset);
		ssdp_wb_unfail_locked(sp, cset);
	}
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
	const struct ssdp_set_io *sio;
	bool busy = false;
	unsigned long flags;

	spin_lock_irqsave(&sp->cache_lock, flags);
	sp->ev->start_nomem = false;
	for (i = 0; i < n && budget && !sp->suspended; i++) {
		cset = (sp->ev->retry_cursor + i) % n;
		sio = &sp->set_io[cset];
		if (!sio->wb_failed)
			continue;
		/* Written to right now: try it again after the backoff. */
		if (sio->excl || sio->writers)
			busy = true;
		else if (ssdp_wb_start_locked(sp, cset, SSDP_NONE,
					      SSDP_WB_RETRY, false))
			budget--;
	}
	sp->ev->retry_cursor = (sp->ev->retry_cursor + i) % n;
	if (busy && !sp->suspended)
		queue_delayed_work(sp->wq, &sp->ev->retry,
				   msecs_to_jiffies(sp->ev->backoff_ms));
	else if (sp->ev->start_nomem && !sp->suspended)
		queue_delayed_work(sp->wq, &sp->ev->retry,
				   SSDP_WB_NOMEM_RETRY);
	sp->ev->start_nomem = false;
	spin_unlock_irqrestore(&sp->cache_lock, flags);
}

/*
 * May the job's own set still hold data, dirty when the job started, that
 * the job did not write back?  Only where a user write went in beside it
 * before it read the block, and no whole-block write beside it has
 * replaced the block since (wb_track.h).  cache_lock held.
 */
static bool ssdp_wb_older_left_locked(struct ssdprio *sp,
				      const struct ssdp_wb_job *job)
{
	const struct ssdp_wb_track *t = job->track;
	u32 i;

	lockdep_assert_held(&sp->cache_lock);
	for (i = 0; i < t->nr_lines; i++)
		if (ssdp_line_cset(t->lines[i]) == job->cset &&
		    ssdp_wbt_older_left(t, i))
			return true;
	return false;
}

static void ssdp_wb_job_fn(struct work_struct *work)
{
	struct ssdp_wb_job *job = container_of(work, struct ssdp_wb_job, work);
	struct ssdprio *sp = job->sp;
	struct ssdp_buf buf;
	unsigned long flags;
	u32 i;
	int r;

	/* At least one block: a write of none would never advance. */
	r = ssdp_buf_alloc(&buf, min_t(u32, max_t(u32, SSDP_WB_BUF_BYTES,
			   sp->cfg.block_sectors << SECTOR_SHIFT),
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
	for (i = 0; i < job->nr_nb; i++)
		ssdp_excl_end_locked(sp, ssdp_line_cset(job->nb_line[i]));
	sp->ev->dirty_blocks -= job->dirty;
	if (r) {
		ssdp_wb_fail_locked(sp, job->cset, job->ssd_read_failed);
		ssdp_esm_wb_failed(&sp->evict, job->kind);
	} else {
		sp->ev->backoff_ms = SSDP_WB_BACKOFF_MIN_MS;
		ssdp_wb_unfail_locked(sp, job->cset);
		/*
		 * A flush owes data, not sets.  A writeback of a whole set
		 * that started after the flush was asked (of any kind, if it
		 * did not yield) wrote back every block dirty in its set then,
		 * but those a write beside it went into first: what is dirty
		 * there now is newer than the request, unless such a write
		 * left older data in its block.  So a rewrite of an owed
		 * block does not keep the set owed, or a writer as light as
		 * one rewrite per writeback would keep the flush going.
		 */
		if (job->flush_epoch == sp->flush_epoch &&
		    job->only == SSDP_NONE && !job->yielded &&
		    !ssdp_wb_older_left_locked(sp, job))
			ssdp_fmap_flush_unmark(&sp->fmap, job->cset);
		/* Others held aside may work now too. */
		if (sp->nr_wb_failed && !sp->suspended)
			mod_delayed_work(sp->wq, &sp->ev->retry, 0);
		ssdp_esm_wb_done(&sp->evict, job->kind);
	}
	ssdp_evict_kick_locked(sp);
	spin_unlock_irqrestore(&sp->cache_lock, flags);

	kfree(job->track);
	kfree(job);
	if (atomic_dec_and_test(&sp->bg_jobs))
		wake_up(&sp->bg_wait);
}

/* May a writeback take @cset (as a neighbour)?  cache_lock held. */
static bool ssdp_wb_holdable_locked(struct ssdprio *sp, u32 cset)
{
	const struct ssdp_set_io *sio = &sp->set_io[cset];

	lockdep_assert_held(&sp->cache_lock);
	return !sio->writers && !sio->excl && !sio->wb_failed;
}

/*
 * Take the neighbours of the job's lines: for each dirty line of its set,
 * the origin sets right after it with dirty blocks, as long as their
 * cache sets are free to hold.  Cleaning and eviction take only what keeps
 * the dirty data outside writebacks above dirty_target: they would write
 * back data that may stay dirty otherwise (a flush takes all).
 * cache_lock held.
 */
static void ssdp_wb_take_neighbours_locked(struct ssdprio *sp,
					   struct ssdp_wb_job *job)
{
	u32 lines[SSDP_FMAP_TAGS], n, i, line, c, first, nr, d;
	u64 left, target, budget = U64_MAX;
	u64 oset;

	lockdep_assert_held(&sp->cache_lock);
	if (job->kind != SSDP_WB_FLUSH) {
		left = sp->fmap.total_dirty -
		       min(sp->fmap.total_dirty,
			   sp->ev->dirty_blocks + job->dirty);
		target = ssdp_esm_dirty_target(&sp->evict);
		budget = left > target ? left - target : 0;
	}
	n = ssdp_fmap_dirty_lines(&sp->fmap, job->cset, lines);
	for (i = 0; i < n && job->nr_nb < SSDP_WB_NEIGHBOURS; i++) {
		oset = ssdp_fmap_oset_of(&sp->fmap, lines[i]);
		while (job->nr_nb < SSDP_WB_NEIGHBOURS &&
		       ++oset < ssdp_nr_osets(sp)) {
			line = ssdp_fmap_lookup(&sp->fmap, oset);
			if (line == SSDP_NONE ||
			    !ssdp_fmap_next_dirty_run(&sp->fmap, line, 0,
						      &first, &nr))
				break;
			c = ssdp_line_cset(line);
			if (c == job->cset)	/* in the job already */
				continue;
			if (!ssdp_wb_holdable_locked(sp, c))
				break;
			d = ssdp_wb_count_dirty_locked(sp, line);
			if (d >= budget)
				return;
			budget -= d;
			job->nb_line[job->nr_nb++] = line;
			job->dirty += d;
			ssdp_excl_begin_locked(sp, c, job);
		}
	}
}

/*
 * Start a writeback job on @cset (@only: one run of it, see the job);
 * cache_lock held.
 */
static bool ssdp_wb_start_locked(struct ssdprio *sp, u32 cset, u32 only,
				 enum ssdp_evict_wb_kind kind, bool pressure)
{
	u32 lines[SSDP_WB_MAX_LINES], n;
	struct ssdp_wb_job *job;

	lockdep_assert_held(&sp->cache_lock);
	/*
	 * A write in flight when it starts would be one it does not know of
	 * (wb_track.h): what it reads could be older than what the write
	 * leaves, and then called clean.
	 */
	if (cset == SSDP_NONE || !ssdp_fmap_nr_dirty(&sp->fmap, cset) ||
	    sp->set_io[cset].writers)
		return false;
	job = kzalloc(sizeof(*job), GFP_NOWAIT | __GFP_NOWARN);
	if (!job) {
		sp->ev->start_nomem = true;
		return false;
	}
	job->track = kzalloc(ssdp_wbt_size(sp->cfg.set_blocks),
			     GFP_NOWAIT | __GFP_NOWARN);
	if (!job->track) {
		kfree(job);
		sp->ev->start_nomem = true;
		return false;
	}
	job->sp = sp;
	job->cset = cset;
	/* One run: at least its first block. */
	job->dirty = only == SSDP_NONE ? ssdp_fmap_nr_dirty(&sp->fmap, cset) :
					 1;
	job->kind = kind;
	job->flush_epoch = sp->flush_epoch;
	job->pressure = pressure;
	/*
	 * @only names the frame; the set is held from here on, so the
	 * block in it stays what it is now.  None dirty there: no run.
	 */
	job->only = SSDP_NONE;
	job->only_line = SSDP_NONE;
	if (only != SSDP_NONE) {
		job->only = 0;
		ssdp_fmap_frame_dirty(&sp->fmap, cset, only, &job->only_line,
				      &job->only);
	}
	job->skips = pressure && job->only == SSDP_NONE;
	job->yields = job->only == SSDP_NONE &&
		      (kind == SSDP_WB_CLEAN ||
		       (kind == SSDP_WB_EVICT && !pressure));
	/*
	 * A lock-out's run stays short.  A retry bridges no gap once an SSD
	 * read failed: a clean block the SSD cannot read must not keep the
	 * set's dirty data from the origin.
	 */
	if (job->only == SSDP_NONE &&
	    (kind != SSDP_WB_RETRY || !sp->set_io[cset].wb_failed_ssd))
		job->gap = READ_ONCE(sp->cfg.writeback_gap);
	/* Its ring entry is stale now; a lock-out left is noted again. */
	sp->set_io[cset].lockout = false;
	ssdp_excl_begin_locked(sp, cset, job);
	/*
	 * Not under pressure: a job that does not yield would keep the
	 * writes to more sets waiting.
	 */
	if (job->yields || kind == SSDP_WB_FLUSH)
		ssdp_wb_take_neighbours_locked(sp, job);
	n = ssdp_wb_lines_locked(sp, job, lines);
	ssdp_wbt_init(job->track, sp->cfg.set_blocks, lines, n);
	sp->ev->dirty_blocks += job->dirty;
	INIT_WORK(&job->work, ssdp_wb_job_fn);
	atomic_inc(&sp->bg_jobs);
	queue_work(sp->wq, &job->work);
	/*
	 * The writes a drain held for a set this job holds now (its own or a
	 * neighbour) meet a writeback: they go beside or around it.
	 */
	if (sp->drain_wants != SSDP_NONE &&
	    sp->set_io[sp->drain_wants].excl)
		ssdp_drain_unwant_locked(sp);
	return true;
}

/* The oldest dirty set no write holds (@owed_only: that a flush owes). */
static u32 ssdp_wb_victim_locked(struct ssdprio *sp, bool owed_only)
{
	u32 c = ssdp_fmap_oldest_dirty(&sp->fmap);

	lockdep_assert_held(&sp->cache_lock);
	for (; c != SSDP_NONE; c = ssdp_fmap_next_dirty_set(&sp->fmap, c)) {
		const struct ssdp_set_io *sio = &sp->set_io[c];

		if (owed_only && !ssdp_fmap_flush_marked(&sp->fmap, c))
			continue;
		if (!sio->writers && !sio->excl && !sio->wb_failed)
			return c;
	}
	return SSDP_NONE;
}

/*
 * A flush's next set: the one a drain waits for once its writes are done,
 * else the oldest no write holds (a flush_dirty's: of those it owes).
 */
static u32 ssdp_flush_victim_locked(struct ssdprio *sp)
{
	u32 c = sp->drain_wants;
	const struct ssdp_set_io *sio;

	lockdep_assert_held(&sp->cache_lock);
	if (c != SSDP_NONE) {
		sio = &sp->set_io[c];
		if (!ssdp_fmap_nr_dirty(&sp->fmap, c) || sio->excl ||
		    sio->wb_failed)
			ssdp_drain_unwant_locked(sp);
		else if (!sio->writers)
			return c;
	}
	return ssdp_wb_victim_locked(sp, !sp->draining);
}

/*
 * A drain found every dirty set held by writes in flight: it waits for
 * the oldest of them, and new writes to it wait meanwhile (drain_wants).
 * Its idle-class writes in flight leave the idle queue now: held there as
 * long as normal I/O is pending (the drain's own writeback is), they
 * would keep the set, and the normal writes that wait for it, for ever.
 */
static void ssdp_drain_want_locked(struct ssdprio *sp)
{
	u32 c;
	const struct ssdp_set_io *sio;

	lockdep_assert_held(&sp->cache_lock);
	if (!sp->draining || sp->drain_wants != SSDP_NONE)
		return;
	for (c = ssdp_fmap_oldest_dirty(&sp->fmap); c != SSDP_NONE;
	     c = ssdp_fmap_next_dirty_set(&sp->fmap, c)) {
		sio = &sp->set_io[c];
		if (sio->writers && !sio->excl && !sio->wb_failed) {
			sp->drain_wants = c;
			if (sio->idle_writers)
				sp->hurry_writers(sp, c);
			return;
		}
	}
}

/*
 * Eviction and cleaning take the oldest dirty set that no write holds,
 * among this many (sets held aside after failed writebacks are skipped:
 * with a dead origin they could be all of them, and this runs on every
 * event).  Reads may go on under a writeback: a hot set always has some.
 */
#define SSDP_DIRTY_SCAN		64U

/*
 * Eviction's and cleaning's set: the oldest of the SSDP_DIRTY_SCAN oldest
 * that nothing holds.  A set held aside that the look passes goes to the
 * young end of the list: a dead region of the origin, more sets than the
 * look covers, must not hide the healthy sets behind it for good (the
 * retry finds held sets wherever they are).
 */
static u32 ssdp_oldest_dirty_locked(struct ssdprio *sp)
{
	u32 c = ssdp_fmap_oldest_dirty(&sp->fmap), next, n;
	const struct ssdp_set_io *sio;

	lockdep_assert_held(&sp->cache_lock);
	for (n = 0; c != SSDP_NONE && n < SSDP_DIRTY_SCAN; n++, c = next) {
		next = ssdp_fmap_next_dirty_set(&sp->fmap, c);
		sio = &sp->set_io[c];
		if (sio->wb_failed) {
			sp->fmap.clock = ktime_get_seconds();
			ssdp_fmap_dirty_renew(&sp->fmap, c);
			continue;
		}
		if (!sio->writers && !sio->excl)
			return c;
	}
	return SSDP_NONE;
}

/*
 * Cleaning's crowded set: the newest that nothing holds, among the
 * SSDP_DIRTY_SCAN newest dirty ones.  Crowded sets are the young ones once
 * cleaning has written the old ones back to the target.
 */
static u32 ssdp_crowded_set_locked(struct ssdprio *sp)
{
	u32 c = ssdp_fmap_newest_dirty(&sp->fmap), n;
	const struct ssdp_set_io *sio;

	lockdep_assert_held(&sp->cache_lock);
	if (!sp->fmap.nr_crowded)
		return SSDP_NONE;
	for (n = 0; c != SSDP_NONE && n < SSDP_DIRTY_SCAN;
	     n++, c = ssdp_fmap_prev_dirty_set(&sp->fmap, c)) {
		sio = &sp->set_io[c];
		if (ssdp_fmap_crowded(&sp->fmap, c) && !sio->wb_failed &&
		    !sio->writers && !sio->excl)
			return c;
	}
	return SSDP_NONE;
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
	v->crowded = ssdp_crowded_set_locked(sp) != SSDP_NONE;
	v->crowded_events = sp->fmap.crowded_events;
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
		/*
		 * A drain leaves nothing dirty; a flush_dirty ends with what
		 * was dirty when it was asked, or a light steady writer would
		 * keep it going for ever.
		 */
		if (!sp->draining)
			view.nr_dirty_sets = sp->fmap.nr_flush_marked;
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
			cset = ssdp_flush_victim_locked(sp);
			if (ssdp_wb_start_locked(sp, cset, SSDP_NONE,
						 SSDP_WB_FLUSH, false))
				continue;
			ssdp_esm_action_failed(&sp->evict, act.type);
			/*
			 * Not started for want of memory: no write may wait
			 * on a start that is not coming.
			 */
			if (cset != SSDP_NONE)
				ssdp_drain_unwant_locked(sp);
			else
				ssdp_drain_want_locked(sp);
			continue;
		case SSDP_EVICT_ACT_START_CLEAN:
			cset = act.crowded ? ssdp_crowded_set_locked(sp) :
					     ssdp_oldest_dirty_locked(sp);
			if (!ssdp_wb_start_locked(sp, cset, SSDP_NONE,
						  SSDP_WB_CLEAN,
						  false))
				ssdp_esm_action_failed(&sp->evict, act.type);
			continue;
		case SSDP_EVICT_ACT_START_LOCKOUT:
			lo = ssdp_lockout_pop_locked(sp);
			/* Not started: the next refusal notes it again. */
			sp->set_io[lo.cset].lockout = false;
			if (!ssdp_wb_start_locked(sp, lo.cset, lo.frame,
						  SSDP_WB_LOCKOUT, true))
				ssdp_esm_action_failed(&sp->evict, act.type);
			continue;
		case SSDP_EVICT_ACT_ARM_TIMER:
			if (!sp->suspended)
				mod_delayed_work(sp->wq, &sp->ev->timer,
						 nsecs_to_jiffies(act.deadline >
								  now ?
								  act.deadline -
								  now : 0) + 1);
			break;
		case SSDP_EVICT_ACT_NONE:
		default:
			break;
		}
		break;
	}
	if (sp->ev->start_nomem) {
		sp->ev->start_nomem = false;
		if (!sp->suspended)
			mod_delayed_work(sp->wq, &sp->ev->timer,
					 SSDP_WB_NOMEM_RETRY);
	}
	if (flushing && !sp->evict.flushing) {
		/*
		 * Each flush's own outcome: a drain restarted after a failed
		 * one that writes everything back is no longer "failed".
		 */
		sp->flush_failed = sp->nr_wb_failed != 0;
		if (sp->flush_failed) {
			DMERR("%s: %s ended with %u cache sets not written back (see writeback_errors)",
			      ssdp_name(sp), sp->draining ? "drain" :
			      "flush_dirty", sp->nr_wb_failed);
		}
		sp->draining = false;
		ssdp_drain_unwant_locked(sp);
		ssdp_fmap_flush_unmark_all(&sp->fmap);
		/* flush_state: running to idle or failed. */
		ssdp_state_event(sp);
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
