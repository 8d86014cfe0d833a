/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio: the per-device context shared by the target glue
 * (dm-ssdprio-target.c) and the engine units in engine/:
 *
 *   cache.c   cache engine: where each bio goes, per-set exclusion
 *   evict.c   deferred eviction worker and writeback jobs
 *   promote.c copies of read misses into the cache
 *   sched.c   the origin leg's deadline + idle queues
 *   bg_io.c   page buffers and synchronous background I/O
 *   meta.c    persistent metadata: format, load, commit
 *
 * Lock order (outermost first): cfg_lock (mutex) -> meta->lock (mutex) ->
 * cache_lock (spinlock, irqsave) -> sched lock (spinlock, irqsave).  No lock is held across I/O
 * submission except where a comment says so.
 */
#ifndef SSDPRIO_H
#define SSDPRIO_H

#include <linux/device-mapper.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/atomic.h>
#include <linux/percpu.h>
#include <linux/bio.h>
#include <linux/workqueue.h>
#include <linux/rbtree.h>
#include <linux/wait.h>

#include "config.h"
#include "frame_map.h"
#include "evict_sm.h"
#include "sched_policy.h"
#include "seq_detect.h"
#include "ssdprio_format.h"
#include "meta_codec.h"

#define DM_MSG_PREFIX "ssdprio"

/*
 * Counters shown by `dmsetup status`.  Monotonic, per CPU, updated without
 * locks; readers accept that two counters may be a few bios apart.
 */
enum ssdp_stat {
	SSDP_ST_BIOS_NORMAL,
	SSDP_ST_BIOS_IDLE,
	SSDP_ST_READS,
	SSDP_ST_WRITES,
	SSDP_ST_FLUSHES,
	SSDP_ST_DISCARDS,
	SSDP_ST_READ_HITS,
	SSDP_ST_READ_MISSES,
	SSDP_ST_WRITE_HITS,
	SSDP_ST_WRITE_MISSES,
	SSDP_ST_BYPASSED,
	SSDP_ST_DEFERRED,
	SSDP_ST_PROMOTIONS,
	SSDP_ST_PROMOTIONS_SKIPPED,
	SSDP_ST_SEQ_SKIPPED,
	SSDP_ST_BLOCKS_WRITTEN_BACK,
	SSDP_ST_SSD_READ_ERRORS,
	SSDP_ST_SSD_WRITE_ERRORS,
	SSDP_ST_ORIGIN_READ_ERRORS,
	SSDP_ST_ORIGIN_WRITE_ERRORS,
	SSDP_ST_READ_FALLBACKS,
	SSDP_ST_WRITEBACK_ERRORS,
	SSDP_ST_LOCKOUTS,
	SSDP_ST_WRITEBACK_YIELDS,
	SSDP_ST_WRITEBACK_WRITES,
	SSDP_ST_WRITEBACK_BRIDGED,
	SSDP_ST_WRITES_BESIDE_WRITEBACK,
	SSDP_ST_WRITES_AROUND_WRITEBACK,
	SSDP_ST_BYTES_NORMAL,
	SSDP_ST_BYTES_IDLE,
	SSDP_ST_NR,
};

/* One CPU's share of the counters (struct ssdprio's stats). */
struct ssdp_stats {
	u64 n[SSDP_ST_NR];
};

/* A buffer of whole pages for internal I/O (bg_io.c). */
struct ssdp_buf {
	struct page **pages;
	unsigned int nr_pages;
};

/* Queue links of a bio held by the scheduler (sched.c owns them). */
struct ssdp_qnode {
	struct rb_node rb;
	struct list_head fifo;
	u64 time;			/* arrival, FIFO deadline; idle: sent */
	struct bio *bio;
	u8 flags;			/* SSDP_QN_* (sched.c) */
	/*
	 * [sched lock] A normal bio waits for this idle one (the write
	 * range lock): never held in the idle queue.
	 */
	bool inherit;
};

/* What end_io must do for a bio (struct ssdp_bio.kind). */
enum ssdp_bio_kind {
	SSDP_BK_NONE,
	SSDP_BK_SSD_READ,		/* hit: drop the reader hold */
	SSDP_BK_ORIGIN_READ,		/* miss; promote if .promote */
	SSDP_BK_SSD_WRITE,		/* writeback-mode cache write */
	SSDP_BK_BOTH_WRITE,		/* writethrough: SSD + chained origin */
	SSDP_BK_ORIGIN_WRITE,		/* bypass, writearound, partial */
	SSDP_BK_DISCARD,
	SSDP_BK_COMMITTED,		/* second end_io after a commit */
};

/* Where the persistent metadata stands (struct ssdprio.meta_state). */
enum ssdp_meta_state {
	SSDP_META_NONE,			/* not resumed yet: nothing loaded */
	SSDP_META_FORMATTED,		/* initialised by this table */
	SSDP_META_CLEAN,		/* loaded after a clean shutdown */
	SSDP_META_RECOVERED,		/* loaded after a crash */
	SSDP_META_FAILED,		/* a metadata I/O failed */
};

#define SSDP_WLOCK_SHIFT	6
#define SSDP_WLOCK_BUCKETS	(1U << SSDP_WLOCK_SHIFT)

/* Per-bio data (ti->per_io_data_size). */
struct ssdp_bio {
	struct ssdp_qnode qn;
	struct bvec_iter saved_iter;	/* for the promotion copy */
	struct ssdp_promo *bounce;	/* a promoted miss's own pages */
	u64 oset;
	u64 gen;			/* promo_gen when the miss was issued */
	u32 replaced;			/* set_io.replaced when issued */
	u32 redirtied;			/* a hit: set_io.redirtied when issued */
	u32 line;			/* frame map line (cset << 4 | tag) */
	u32 bytes;			/* data to count at completion (bytes_*) */
	u16 frame;			/* SSD I/O: the frame of block @first */
	u16 first;			/* first block in the set */
	u16 nr;				/* whole blocks covered */
	u8 kind;			/* enum ssdp_bio_kind */
	bool idle;
	/*
	 * [cache_lock] idle, but a normal write waits for it (range lock),
	 * or a drain for its set (drain_wants): never held in the idle queue
	 */
	bool urgent;
	bool housekeeping;		/* normal, no activity (classify.c) */
	bool partial;			/* one block, partly covered */
	bool promote;
	bool origin;			/* counted in the scheduler's leg */
	bool commit;			/* FUA: complete after a commit */
	bool ssd_failed;		/* writethrough: the SSD copy failed */
	/* A read hit: all its blocks clean, so the origin has them too. */
	bool clean;
	/*
	 * An origin write over blocks the cache holds (it could not take
	 * them): it holds the set like a cache write, and its completion
	 * drops the cache's copies, which are older then.
	 */
	bool drop;
	bool guard;			/* counted in set_io.guards */
	bool idle_writer;		/* counted in set_io.idle_writers */
	bool under_writeback;		/* routed while write_policy was writeback */
	/*
	 * A deferred write whose frames are not consecutive: its SSD leg
	 * goes as one write per run of consecutive frames.
	 */
	bool stretches;
	/*
	 * A write or discard: in sp->wlocks from its first routing to its
	 * completion, so that a later one of the same blocks waits for it.
	 */
	bool wlocked;
	bool waited;			/* deferred once: counted */
	struct list_head wlock;
};

struct ssdp_wb_job;		/* evict.c */

/* Per cache set I/O holds, beside the pure map (cache_lock). */
struct ssdp_set_io {
	/* The pointer and the u32s first, then u16s and bools: 32 bytes. */
	struct ssdp_wb_job *wb;		/* the writeback holding it, or NULL */
	/*
	 * Bumped whenever a clean block of the set was taken by another
	 * origin set (or its tag evicted): a promotion prepared since then
	 * is dropped (a block written since could have been written back
	 * and replaced).  No read of the set is in flight then.
	 */
	u32 replaced;
	/*
	 * Bumped whenever a writeback's failed origin write makes clean
	 * blocks of the set dirty again (its own set or a neighbour's): the
	 * origin may hold anything there, so a read mapped before, when they
	 * were clean, is not read from the origin if its SSD read fails.
	 */
	u32 redirtied;
	u16 readers;			/* user reads in flight on the SSD */
	u16 writers;			/* user writes in flight (cache or drop) */
	/*
	 * Those of them of the idle class: the idle queue may hold one as
	 * long as normal I/O is pending, so a drain that waits for the set
	 * lets them out first (ssdprio.hurry_writers).
	 */
	u16 idle_writers;
	/*
	 * Those of them that read or rewrite valid blocks in place: no
	 * clean block of the set changes hands while any is in flight
	 * (no_replace, with wb_keep_clean).
	 */
	u16 guards;
	/*
	 * A write went to blocks the set held while other writes were in
	 * flight: one of them may be writing the same frames, and the first
	 * to complete makes them valid under the other, so no_replace holds
	 * until no write is in flight.
	 */
	bool overlap;
	/*
	 * Promotion or writeback: no writes, but for rewrites of cached
	 * blocks beside a writeback (@wb, wb_track.h).
	 */
	bool excl;
	bool wb_failed;			/* writeback failed: pinned until retry */
	bool wb_failed_ssd;		/* ... reading the SSD: retry unbridged */
	bool lockout;			/* in the lock-out ring (evict.c) */
	/* A write waits on excl: a quiet-window writeback stops early. */
	bool wb_yield;
	/*
	 * No clean block may change hands until the writeback holding the
	 * set ends (no_replace held, as under a read): it rewrites clean
	 * blocks to bridge the gaps between dirty runs, or it has marked
	 * blocks clean whose records on the SSD still say dirty until its
	 * commit.
	 */
	bool wb_keep_clean;
};

struct ssdp_idle_cgroups;	/* classify.c */

/* The origin leg's scheduler (sched.c). */
#define SSDP_SCHED_NR_QUEUES	4

/*
 * The class of our own background I/O on the origin: idle (waits for
 * quiet), pressure (idle with a guaranteed share: eviction that cannot
 * wait for quiet), normal (a drain, which the administrator waits for).
 */
enum ssdp_bg_class {
	SSDP_BG_IDLE,
	SSDP_BG_PRESSURE,
	SSDP_BG_NORMAL,
};

struct ssdp_sched;		/* sched.c */

struct ssdp_meta;
struct ssdp_evict;
struct ssdp_promote;
struct ssdp_promo;

struct ssdprio {
	struct dm_target *ti;
	struct dm_dev *origin;
	struct dm_dev *cache;

	/*
	 * cfg_lock serialises writers of @cfg (ctr, messages).  Readers on
	 * the I/O path take no lock: each field is a u32 written with
	 * WRITE_ONCE() and read with READ_ONCE().
	 */
	struct mutex cfg_lock;
	struct ssdp_config cfg;

	/* Geometry, fixed after ctr. */
	struct ssdp_layout layout;
	u32 block_shift;		/* log2(block sectors) */
	u32 set_shift;			/* log2(set sectors) */
	bool caching;			/* cfg.cache on and a cache exists */
	bool format;			/* table says: initialise a blank cache */
	bool force;			/* table says: cache off over dirty data */
	/*
	 * The table named block_size / set_size.  What it leaves out is
	 * taken from the cache's superblock, so that a table written
	 * before a change of default still loads the cache it named.
	 */
	bool block_size_given;
	bool set_size_given;
	u8 origin_id[16];		/* table's origin_id, zero if none */
	/*
	 * Cache off over a cache of ours for this origin: mark it bypassed
	 * at the first resume.  ctr and preresume only (dm serialises them).
	 */
	bool meta_bypass;
	/*
	 * Cache off, loaded over this device's own live table (a detach):
	 * that table writes its final superblock when it is suspended, so
	 * the check that it left no dirty block waits for the resume
	 * (check_at_resume; not with force).  ctr and preresume only.
	 */
	bool bypass_live_here;
	bool bypass_check_at_resume;
	/*
	 * No table of this device it replaces strands dirty blocks on a
	 * cache this one does not use (checked at the first resume).  ctr
	 * and preresume only.
	 */
	bool swap_checked;
	/*
	 * A table of this device it replaces served the origin through
	 * another cache device: this one's contents may be older than the
	 * origin (meta.c, first resume).  ctr and preresume only.
	 */
	bool cache_was_away;
	/*
	 * It has resumed once: it served the origin (a table whose first
	 * resume was refused never did).  Set by resume, read by a
	 * replacing table's preresume (dm orders the two).
	 */
	bool served;
	/* In the module's list of tables; ssdp_claims_lock (glue). */
	struct list_head tables_entry;

	/*
	 * cache_lock protects every field below tagged [cache_lock], the
	 * frame map, the eviction machine and the per-set holds among them.
	 * Taken with irqsave: end_io may run in hard irq.  Inside meta->lock
	 * and cfg_lock, outside sched.lock.
	 */
	spinlock_t cache_lock;
	struct ssdp_fmap fmap;			/* [cache_lock] */
	struct ssdp_evict_sm evict;		/* [cache_lock] */
	struct ssdp_set_io *set_io;		/* [cache_lock], per cset */
	/*
	 * Background work (evict.c, promote.c) gave back a set it held
	 * exclusively: the cache resumes what waited for it (deferred
	 * writes, eviction stalled on the pin).  Set by the cache, so that
	 * the units below it need not call up into it.  cache_lock held.
	 */
	void (*set_released)(struct ssdprio *sp, u32 cset);
	/*
	 * A drain waits for the writes in flight on @cset to end: the cache
	 * lets its idle-class ones out of the idle queue now (priority
	 * inheritance).  Set by the cache, as set_released.  cache_lock held.
	 */
	void (*hurry_writers)(struct ssdprio *sp, u32 cset);
	/*
	 * [cache_lock] Writes and discards waiting: for excl, or for an
	 * older write of the same blocks (wlocks).
	 */
	struct bio_list deferred;
	u32 deferred_normal;		/* [cache_lock] normal ones in @deferred */
	/*
	 * [cache_lock] Writes and discards in flight or waiting, hashed by
	 * origin set, oldest first: a range lock, so that two writes of one
	 * block are never in flight together (ssdp_bio.wlock).
	 */
	struct list_head wlocks[SSDP_WLOCK_BUCKETS];
	/*
	 * [cache_lock] Clean SSD reads that failed, to be read again from
	 * the origin.
	 */
	struct bio_list retry;
	struct work_struct retry_work;
	/*
	 * Degraded: the SSD failed a write (or too many reads, or a metadata
	 * write).  No new allocation, clean blocks are read from the origin,
	 * writes to blocks that are not dirty go around the cache; dirty
	 * blocks are still served and written back.  Set once, cleared only
	 * by a new table.
	 */
	bool degraded;			/* [cache_lock] */
	/*
	 * Sets whose writeback failed sit pinned (set_io.wb_failed) until
	 * evict.c retries them.  flush_failed: a flush_dirty ended with only
	 * failed sets left.
	 */
	u32 nr_wb_failed;		/* [cache_lock] */
	bool flush_failed;		/* [cache_lock] */
	/*
	 * Counts the flush requests.  A flush_dirty owes the sets dirty when
	 * it was asked (flush marks, frame_map.h): a writeback of the flush
	 * that started after the latest request pays a set's debt.
	 */
	u32 flush_epoch;		/* [cache_lock] */
	/*
	 * A "drain" is running: the flush's origin writes compete as normal
	 * I/O instead of waiting in the idle queue, so that it finishes
	 * under any load.  Cleared when the flush ends.
	 */
	bool draining;			/* [cache_lock] */
	/*
	 * The cache set a drain waits to write back while writes are in
	 * flight on it (a writeback cannot start beside a write it does not
	 * know of): new writes to it wait (deferred) until its writeback
	 * starts, or a set written without pause would never be drained.
	 * Its idle-class writes in flight leave the idle queue at once
	 * (hurry_writers), or they could keep the drain waiting for as long
	 * as normal I/O is pending.
	 * SSDP_NONE: none.  Let go when the job starts or cannot, when the
	 * flush ends and at suspend (ssdp_drain_unwant_locked).
	 */
	u32 drain_wants;		/* [cache_lock] */
	struct ssdp_seq_detect seq;	/* [cache_lock] recent read streams */
	struct ssdp_seq_detect wseq;	/* [cache_lock] recent write streams */
	/*
	 * promo_gen moves whenever a user write or discard to the origin
	 * completes and whenever a block is dropped; origin_writes counts
	 * those writes in flight.  Together with
	 * the set's set_io.replaced they tell a promotion whether its data
	 * may be older than the origin's or the cache's.
	 */
	u64 promo_gen;			/* [cache_lock] */
	u32 origin_writes;		/* [cache_lock] */
	/*
	 * [cache_lock] SSD read errors of this table, for the degrade
	 * threshold: reset_stats zeroes only what status shows.
	 */
	u32 ssd_read_errors;
	/* [cache_lock] User writes completed since each device's flush. */
	u32 origin_unflushed;
	u32 ssd_unflushed;
	struct bio_list commit_bios;	/* [cache_lock] waiting for a commit */

	struct workqueue_struct *wq;	/* eviction, promotion, deferred */
	struct work_struct deferred_work;
	/* The background units' own state, opaque elsewhere. */
	struct ssdp_evict *ev;		/* evict.c */
	struct ssdp_promote *pr;	/* promote.c */
	atomic_t bg_jobs;		/* writeback + promotion in flight */
	wait_queue_head_t bg_wait;
	bool suspended;			/* [cache_lock] */
	bool claimed;			/* origin and cache in ssdp_claims */
	struct bio_set bs;		/* writethrough clones, internal bios */

	/* Persistent metadata: meta.c's own state, opaque elsewhere. */
	struct ssdp_meta *meta;
	/* Flushes and FUA writes waiting for a commit (cache.c). */
	struct work_struct commit_work;
	/*
	 * Raises a dm event when cache_mode, meta_state or flush_state
	 * changes (ssdp_state_event), so that dmsetup wait and event daemons
	 * wake.  Those change under spinlocks and in bio completion, and
	 * dm_table_event takes a mutex: a work item calls it.  Queued from
	 * any context with no lock; cancelled in dtr (and on ctr's error
	 * path) once nothing can queue it any more.
	 */
	struct work_struct event_work;

	struct ssdp_sched *sched;	/* sched.c's own state */
	/* classify.c: written under cfg_lock, read under RCU. */
	struct ssdp_idle_cgroups __rcu *idle_cgroups;

	/*
	 * Per CPU: every bio counts, and one shared line would bounce
	 * between the CPUs that submit and complete them.  Status shows the
	 * sums less stats_base, what reset_stats last saw (a remote CPU's
	 * counters cannot be zeroed without racing its increments).
	 */
	struct ssdp_stats __percpu *stats;
	u64 stats_base[SSDP_ST_NR];
};

static inline void ssdp_count(struct ssdprio *sp, enum ssdp_stat st)
{
	this_cpu_inc(sp->stats->n[st]);
}

static inline void ssdp_count_n(struct ssdprio *sp, enum ssdp_stat st, u64 n)
{
	this_cpu_add(sp->stats->n[st], n);
}

static inline struct ssdp_bio *ssdp_pb(struct bio *bio)
{
	return dm_per_bio_data(bio, sizeof(struct ssdp_bio));
}

/*
 * dm_accept_partial_bio: the rest comes back through .map as a bio of its
 * own, which counts its own bytes.
 */
static inline void ssdp_accept_partial(struct bio *bio, unsigned int sectors)
{
	struct ssdp_bio *pb = ssdp_pb(bio);

	if (pb->bytes)
		pb->bytes = sectors << SECTOR_SHIFT;
	dm_accept_partial_bio(bio, sectors);
}

/* SSD sector of frame @frame of cache set @cset. */
static inline sector_t ssdp_frame_sector(struct ssdprio *sp, u32 cset,
					 u32 frame)
{
	return sp->layout.data_start + ((sector_t)cset << sp->set_shift) +
	       ((sector_t)frame << sp->block_shift);
}

static inline const char *ssdp_name(struct ssdprio *sp)
{
	return dm_device_name(dm_table_get_md(sp->ti->table));
}

/* Origin sets the target covers. */
static inline u64 ssdp_nr_osets(struct ssdprio *sp)
{
	return (sp->ti->len + sp->layout.set_sectors - 1) >> sp->set_shift;
}

/*
 * cache_mode, meta_state or flush_state (status) changed: wake dm's event
 * waiters.  Any context, any lock: the event itself is raised by a work
 * item (struct ssdprio.event_work).
 */
static inline void ssdp_state_event(struct ssdprio *sp)
{
	schedule_work(&sp->event_work);
}

/* status's flush_state. */
enum ssdp_flush_state {
	SSDP_FLUSH_IDLE,
	SSDP_FLUSH_RUNNING,
	SSDP_FLUSH_FAILED,
};

static inline enum ssdp_flush_state ssdp_flush_state_locked(struct ssdprio *sp)
{
	lockdep_assert_held(&sp->cache_lock);
	if (sp->evict.flushing)
		return SSDP_FLUSH_RUNNING;
	return sp->flush_failed ? SSDP_FLUSH_FAILED : SSDP_FLUSH_IDLE;
}

/* The SSD is failing: stop relying on it where the origin can serve. */
static inline void ssdp_degrade_locked(struct ssdprio *sp, const char *why)
{
	lockdep_assert_held(&sp->cache_lock);
	if (sp->degraded)
		return;
	sp->degraded = true;
	ssdp_state_event(sp);
	DMERR("%s: cache degraded (%s): no new caching, clean blocks read from the origin, dirty blocks still written back",
	      ssdp_name(sp), why);
}

/*
 * Room for new blocks in sets' worth: frames neither dirty nor in limbo
 * (free or clean ones, which a new block may take); cache_lock held.
 * What eviction keeps above its free floor.
 */
/*
 * Clean frames of the set stay where they are while I/O reads or
 * rewrites valid blocks in place (set_io.guards, wb_keep_clean), and while
 * writes overlap (set_io.overlap); cache_lock held.
 */
static inline void ssdp_no_replace_update(struct ssdprio *sp, u32 cset)
{
	struct ssdp_set_io *sio = &sp->set_io[cset];

	lockdep_assert_held(&sp->cache_lock);
	ssdp_fmap_set_no_replace(&sp->fmap, cset, sio->guards ||
				 sio->wb_keep_clean || sio->overlap);
}

static inline u32 ssdp_room_sets(struct ssdprio *sp)
{
	return div_u64(ssdp_fmap_room(&sp->fmap), sp->fmap.set_blocks);
}

/* meta.c */
void ssdp_meta_take_geometry(struct ssdprio *sp);
int ssdp_meta_ctr(struct ssdprio *sp, char **error);
void ssdp_meta_dtr(struct ssdprio *sp);
int ssdp_meta_preresume(struct ssdprio *sp);
void ssdp_meta_postsuspend(struct ssdprio *sp);
int ssdp_meta_commit(struct ssdprio *sp);
int ssdp_meta_ctr_bypass(struct ssdprio *sp, char **error);
int ssdp_meta_preresume_bypass(struct ssdprio *sp);
unsigned int ssdp_meta_status(struct ssdprio *sp, char *result,
			      unsigned int maxlen, unsigned int sz);
const char *ssdp_meta_state_name(enum ssdp_meta_state st);

/* cache.c */
int ssdp_cache_ctr(struct ssdprio *sp, char **error);
void ssdp_cache_dtr(struct ssdprio *sp);
int ssdp_cache_map(struct ssdprio *sp, struct bio *bio);
int ssdp_cache_end_io(struct ssdprio *sp, struct bio *bio,
		      blk_status_t *error);
void ssdp_cache_presuspend(struct ssdprio *sp);
void ssdp_cache_postsuspend(struct ssdprio *sp);
int ssdp_cache_preresume(struct ssdprio *sp);
void ssdp_cache_resume(struct ssdprio *sp);
void ssdp_cache_apply_config(struct ssdprio *sp);
int ssdp_cache_check_config(struct ssdprio *sp, const struct ssdp_config *cfg,
			    const char **why);
int ssdp_cache_flush_dirty(struct ssdprio *sp, bool drain);
unsigned int ssdp_cache_status(struct ssdprio *sp, char *result,
			       unsigned int maxlen, unsigned int sz);
void ssdp_cache_commit_bio(struct ssdprio *sp, struct bio *bio);

/* evict.c */
int ssdp_evict_init(struct ssdprio *sp);
void ssdp_evict_exit(struct ssdprio *sp);
void ssdp_evict_drain(struct ssdprio *sp);
void ssdp_evict_kick_locked(struct ssdprio *sp);
void ssdp_evict_unpinned_locked(struct ssdprio *sp);
void ssdp_drain_unwant_locked(struct ssdprio *sp);
void ssdp_lockout_note_locked(struct ssdprio *sp, u32 cset, u32 frame);
void ssdp_wb_retry_now_locked(struct ssdprio *sp);
void ssdp_wb_unfail_locked(struct ssdprio *sp, u32 cset);
bool ssdp_wb_write_beside_locked(struct ssdprio *sp, u32 line, u32 first,
				 u32 nr);
bool ssdp_wb_failed_beside_locked(struct ssdprio *sp, u32 line, u32 blk);
bool ssdp_wb_write_around_locked(struct ssdprio *sp, u32 line, u32 first,
				 u32 nr);
void ssdp_wb_overwritten_locked(struct ssdprio *sp, u32 line, u32 first,
				u32 nr);

/* Take every bio of @from (a list under cache_lock) into @to. */
static inline void ssdp_bios_take(struct ssdprio *sp, struct bio_list *from,
				  struct bio_list *to)
{
	unsigned long flags;

	spin_lock_irqsave(&sp->cache_lock, flags);
	*to = *from;
	bio_list_init(from);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
}

/* promote.c */
void ssdp_promote_bounce(struct ssdprio *sp, struct bio *bio,
			 struct ssdp_bio *pb);
bool ssdp_promote_read_done(struct ssdprio *sp, struct bio *bio,
			    struct ssdp_bio *pb, bool ok);
int ssdp_promote_init(struct ssdprio *sp);
void ssdp_promote_exit(struct ssdprio *sp);
void ssdp_promote_drain(struct ssdprio *sp);

/* sched.c: the origin leg.  User bios arrive remapped to the origin. */
int ssdp_sched_init_dev(struct ssdprio *sp);
void ssdp_sched_exit_dev(struct ssdprio *sp);
int ssdp_sched_map(struct ssdprio *sp, struct bio *bio, bool idle);
void ssdp_sched_end_io(struct ssdprio *sp, struct bio *bio);
void ssdp_sched_submit_internal(struct ssdprio *sp, struct ssdp_qnode *qn,
				enum ssdp_bg_class class);
void ssdp_sched_internal_done(struct ssdprio *sp, struct ssdp_qnode *qn);
void ssdp_sched_boost(struct ssdprio *sp, bool on);
void ssdp_sched_inherit(struct ssdprio *sp, struct ssdp_qnode *qn);
void ssdp_sched_presuspend(struct ssdprio *sp);
void ssdp_sched_postsuspend(struct ssdprio *sp);
void ssdp_sched_resume(struct ssdprio *sp);
void ssdp_sched_apply_config(struct ssdprio *sp);
unsigned int ssdp_sched_status(struct ssdprio *sp, char *result,
			       unsigned int maxlen, unsigned int sz);

/*
 * Never held as idle, whatever their class: others wait on them (journal
 * commits, log writes).  Read by the classifier and again by the scheduler
 * for bios it is handed directly.
 */
#define SSDP_NEVER_IDLE		(REQ_PREFLUSH | REQ_FUA | REQ_META)

/* classify.c: normal or idle, fixed once per bio in .map. */
bool ssdp_classify_idle(struct ssdprio *sp, struct bio *bio,
			bool *housekeeping);
int ssdp_idle_cgroup_add(struct ssdprio *sp, const char *path,
			 const char **why);
unsigned int ssdp_idle_cgroup_emit(struct ssdprio *sp, char *buf,
				   size_t len);
void ssdp_idle_cgroup_clear(struct ssdprio *sp);

/* bg_io.c */

int ssdp_buf_alloc(struct ssdp_buf *buf, unsigned int bytes, gfp_t gfp);
void ssdp_buf_free(struct ssdp_buf *buf);
void ssdp_buf_copy_to_bio(const struct ssdp_buf *buf, struct bio *bio,
			  struct bvec_iter iter);
/* An extent of a buffer and where it goes. */
struct ssdp_io_ext {
	sector_t sector;
	size_t off;		/* bytes into the buffer */
	unsigned int bytes;	/* at most BIO_MAX_VECS pages' worth */
};

/* The cache device, from byte @off of @buf. */
int ssdp_io_ssd_sync(struct ssdprio *sp, struct ssdp_buf *buf, size_t off,
		     sector_t sector, unsigned int bytes, blk_opf_t opf);
/* Extents of @buf to the origin, all in flight at once; the first error. */
int ssdp_io_origin_burst(struct ssdprio *sp, struct ssdp_buf *buf,
			 const struct ssdp_io_ext *ext, u32 nr, blk_opf_t opf,
			 enum ssdp_bg_class class);
/* Metadata: the cache device, from byte @off of @buf, normal priority. */
int ssdp_io_meta_sync(struct ssdprio *sp, struct ssdp_buf *buf, size_t off,
		      sector_t sector, unsigned int bytes, blk_opf_t opf);
int ssdp_io_origin_flush(struct ssdprio *sp);

#endif
