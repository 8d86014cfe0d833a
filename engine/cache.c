// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio cache engine: where each bio goes.
 *
 * A bio is first cut (in .map, the only place dm lets us shorten it) to one
 * origin set and to either a run of whole blocks or a single partial block;
 * then routed under cache_lock to the SSD, the origin, both, or deferred.
 *
 * Rules that keep data correct (each one is a race a peer got wrong):
 *  - A block becomes valid only when the write that filled it completes,
 *    so a read never sees SSD space the block has not been written into.
 *  - A block is never half valid: a partial write to an invalid block goes
 *    to the origin; to a valid block it updates the SSD copy in place.
 *  - A partial write to a dirty block stays in the cache whatever the
 *    policy: the rest of that block exists nowhere else.
 *  - Promotion and writeback take a set exclusively (set_io.excl): user
 *    writes and discards to that set are deferred until they finish, reads
 *    go on; beside a writeback, a write that rewrites cached blocks on the
 *    SSD alone goes on too, and the writeback leaves those blocks dirty
 *    (wb_track.h).  Any user I/O on the SSD pins its set (frame_map.h says
 *    what a pin keeps from other origin sets).
 *  - A cache set holds blocks of several origin sets (frame_map.h): a
 *    write or a promotion may take a frame holding another origin set's
 *    clean block, never while a read or an in-place rewrite (a partial
 *    write) of a valid block is in flight in the set (set_io.guards).  A
 *    whole-block write turns the clean blocks it covers into claims for
 *    its flight instead, so the set stays open to other writes.
 *  - A promotion copies the data of a read miss; it is dropped if an
 *    origin write completed or a block was dropped (promo_gen moved), one
 *    is still in flight, or a block of the set was replaced meanwhile
 *    (set_io.replaced), so an older origin copy never wins.
 */
#include <linux/blkdev.h>
#include <linux/hash.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/ioprio.h>

#include "ssdprio.h"

#define SSDP_MIN_CSETS	2

enum ssdp_dest {
	SSDP_TO_SSD,
	SSDP_TO_ORIGIN,
	SSDP_TO_BOTH,
	SSDP_DEFERRED,
	SSDP_DONE,		/* nothing to do: complete it */
};

/*
 * Eviction keeps this much room (frames neither dirty nor in limbo, in
 * sets' worth): it writes back under load once dirty data passes twice
 * the cleaning target (at least 20% of the cache), so cleaning in quiet
 * windows does the work where there are any.
 */
static u32 ssdp_auto_free_floor(u32 nr_csets, u32 dirty_target_pct)
{
	u32 dirty_pct = clamp_t(u32, 2 * dirty_target_pct, 20, 90);
	u32 floor = nr_csets - div_u64((u64)nr_csets * dirty_pct, 100);

	return clamp_t(u32, floor, 1, max_t(u32, nr_csets - 1, 1));
}

/*
 * A set is crowded (cleaning writes it back in a quiet window whatever the
 * cache's dirty share) with more than half its frames dirty: then most
 * blocks of another origin set find both their frames dirty and go to the
 * origin.  Or with more than dirty_target of them, when that is higher: a
 * set may hold the share the cache may (100: never crowded, no cleaning).
 */
static u32 ssdp_crowded_frames(u32 set_blocks, u32 dirty_target_pct)
{
	return div_u64((u64)set_blocks * max_t(u32, 50, dirty_target_pct),
		       100);
}

/* Knobs the eviction machine keeps in its own units; cache_lock held. */
static void ssdp_evict_knobs_locked(struct ssdprio *sp)
{
	u32 floor = READ_ONCE(sp->cfg.free_floor);
	u64 blocks;

	lockdep_assert_held(&sp->cache_lock);
	if (!floor)
		floor = ssdp_auto_free_floor(sp->layout.nr_csets,
					     READ_ONCE(sp->cfg.dirty_target_pct));
	blocks = (u64)sp->layout.nr_csets * sp->cfg.set_blocks;
	ssdp_esm_set_knobs(&sp->evict, min_t(u32, floor,
					     sp->layout.nr_csets),
			     (u64)READ_ONCE(sp->cfg.evict_wait_ms) *
			     NSEC_PER_MSEC,
			     READ_ONCE(sp->cfg.evict_inflight));
	ssdp_esm_set_max_wait(&sp->evict,
			      (u64)READ_ONCE(sp->cfg.evict_max_wait_ms) *
			      NSEC_PER_MSEC);
	ssdp_esm_set_cleaning(&sp->evict,
			      div_u64(blocks *
					READ_ONCE(sp->cfg.dirty_target_pct), 100),
			      (u64)READ_ONCE(sp->cfg.dirty_max_age_s) *
			      NSEC_PER_SEC);
	/* dirty_target 100 turns all cleaning off, this one too. */
	ssdp_esm_set_clean_all(&sp->evict,
			       READ_ONCE(sp->cfg.dirty_target_pct) < 100 ?
			       (u64)READ_ONCE(sp->cfg.clean_all_wait_ms) *
			       NSEC_PER_MSEC : 0);
	ssdp_esm_set_lockout(&sp->evict, READ_ONCE(sp->cfg.lockout_clean));
	ssdp_fmap_set_crowded(&sp->fmap,
			      ssdp_crowded_frames(sp->cfg.set_blocks,
						  READ_ONCE(sp->cfg.dirty_target_pct)));
}

static void ssdp_retry_work_fn(struct work_struct *work);
static void ssdp_deferred_work_fn(struct work_struct *work);
static void ssdp_commit_work_fn(struct work_struct *work);
static void ssdp_set_released_locked(struct ssdprio *sp, u32 cset);
static void ssdp_hurry_writers_locked(struct ssdprio *sp, u32 cset);

/*
 * Knob values that only make sense against this cache's geometry: a free
 * floor of every set would evict all data as soon as it is written back.
 */
int ssdp_cache_check_config(struct ssdprio *sp, const struct ssdp_config *cfg,
			    const char **why)
{
	if (sp->caching && cfg->free_floor >= sp->layout.nr_csets) {
		*why = "free_floor must be below the number of cache sets (total_sets in status)";
		return -EINVAL;
	}
	return 0;
}

int ssdp_cache_ctr(struct ssdprio *sp, char **error)
{
	u32 block_bytes, i;
	int r;

	spin_lock_init(&sp->cache_lock);
	bio_list_init(&sp->deferred);
	for (i = 0; i < SSDP_WLOCK_BUCKETS; i++)
		INIT_LIST_HEAD(&sp->wlocks[i]);
	ssdp_seq_init(&sp->seq);
	ssdp_seq_init(&sp->wseq);
	init_waitqueue_head(&sp->bg_wait);
	INIT_WORK(&sp->deferred_work, ssdp_deferred_work_fn);
	bio_list_init(&sp->retry);
	INIT_WORK(&sp->retry_work, ssdp_retry_work_fn);
	bio_list_init(&sp->commit_bios);
	INIT_WORK(&sp->commit_work, ssdp_commit_work_fn);
	sp->set_released = ssdp_set_released_locked;
	sp->hurry_writers = ssdp_hurry_writers_locked;

	if (sp->cfg.cache)
		ssdp_meta_take_geometry(sp);
	block_bytes = sp->cfg.block_sectors << SECTOR_SHIFT;
	if (block_bytes < bdev_logical_block_size(sp->origin->bdev) ||
	    block_bytes < bdev_logical_block_size(sp->cache->bdev)) {
		*error = "block_size is smaller than a device's logical block size";
		return -EINVAL;
	}
	sp->caching = sp->cfg.cache;
	if (!sp->caching)
		return ssdp_meta_ctr_bypass(sp, error);

	if (ssdp_layout_compute(&sp->layout,
				bdev_nr_sectors(sp->cache->bdev),
				sp->cfg.block_sectors, sp->cfg.set_blocks) ||
	    sp->layout.nr_csets < SSDP_MIN_CSETS) {
		DMERR("cache device of %llu sectors: room for %llu cache sets of %u sectors and their metadata, %u needed",
		      (unsigned long long)bdev_nr_sectors(sp->cache->bdev),
		      (unsigned long long)sp->layout.nr_csets,
		      sp->cfg.block_sectors * sp->cfg.set_blocks,
		      SSDP_MIN_CSETS);
		*error = "Cache device too small for block_size and set_size";
		return -EINVAL;
	}
	if (sp->layout.nr_csets > SSDP_FMAP_MAX_CSETS) {
		*error = "Too many cache sets: raise set_size";
		return -EINVAL;
	}
	sp->block_shift = ilog2(sp->cfg.block_sectors);
	sp->set_shift = ilog2(sp->layout.set_sectors);
	/* A record names an origin set in 32 bits. */
	if (ssdp_nr_osets(sp) >= SSDP_REC_TAG_FREE) {
		*error = "Origin too large for set_size: raise set_size";
		return -EINVAL;
	}

	r = bioset_init(&sp->bs, 64, 0, BIOSET_NEED_BVECS);
	if (r) {
		*error = "Cannot allocate the bio set";
		goto bad;
	}
	/* Unbound: writeback jobs block on I/O and run side by side. */
	sp->wq = alloc_workqueue("ssdprio", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	if (!sp->wq) {
		*error = "Cannot allocate the workqueue";
		r = -ENOMEM;
		goto bad_bs;
	}
	r = ssdp_evict_init(sp);
	if (!r)
		r = ssdp_promote_init(sp);
	if (r) {
		*error = "Cannot allocate the background work";
		goto bad_meta;
	}
	/* May replace the layout by the one the superblock records. */
	r = ssdp_meta_ctr(sp, error);
	if (r)
		goto bad_meta;
	r = ssdp_cache_check_config(sp, &sp->cfg, (const char **)error);
	if (r)
		goto bad_meta;

	r = ssdp_fmap_init(&sp->fmap, sp->layout.nr_csets, sp->cfg.set_blocks);
	if (r) {
		DMERR("cannot allocate the map of %llu cache sets of %u blocks (the more and smaller the blocks, the more RAM)",
		      (unsigned long long)sp->layout.nr_csets,
		      sp->cfg.set_blocks);
		*error = "Cannot allocate the cache map";
		goto bad_meta;
	}
	/* Dirty blocks loaded at resume count as dirty since then. */
	sp->fmap.clock = ktime_get_seconds();
	/* Its share of the RAM budget (docs/design.md, "Memory"). */
	BUILD_BUG_ON(sizeof(*sp->set_io) > 32);
	sp->set_io = kvcalloc(sp->layout.nr_csets, sizeof(*sp->set_io),
			      GFP_KERNEL | __GFP_NOWARN);
	if (!sp->set_io) {
		*error = "Cannot allocate the cache map";
		r = -ENOMEM;
		goto bad_map;
	}
	ssdp_esm_init(&sp->evict, 1, 0, 1);
	/* Nothing else runs yet; the lock is for the assertion's sake. */
	spin_lock_irq(&sp->cache_lock);
	ssdp_evict_knobs_locked(sp);
	/*
	 * Nothing starts before the first resume, which loads the metadata:
	 * a table whose first resume failed stays live (suspended) until the
	 * next one replaces it, and a flush_dirty sent to it meanwhile would
	 * write back from a map never loaded, beside its successor.
	 */
	sp->suspended = true;
	ssdp_esm_stop(&sp->evict);
	sp->drain_wants = SSDP_NONE;
	spin_unlock_irq(&sp->cache_lock);

	r = dm_set_target_max_io_len(sp->ti, sp->layout.set_sectors);
	if (r) {
		*error = "Cannot set the maximum I/O length";
		goto bad_setio;
	}
	return 0;

bad_setio:
	kvfree(sp->set_io);
	sp->set_io = NULL;
bad_map:
	ssdp_fmap_destroy(&sp->fmap);
bad_meta:
	ssdp_meta_dtr(sp);
	ssdp_promote_exit(sp);
	ssdp_evict_exit(sp);
	destroy_workqueue(sp->wq);
	sp->wq = NULL;
bad_bs:
	bioset_exit(&sp->bs);
bad:
	sp->caching = false;
	return r;
}

/* Wait for every background job; nothing new starts (suspended). */
static void ssdp_cache_drain(struct ssdprio *sp)
{
	ssdp_evict_drain(sp);
	ssdp_promote_drain(sp);
	wait_event(sp->bg_wait, !atomic_read(&sp->bg_jobs));
	flush_work(&sp->deferred_work);
	flush_work(&sp->retry_work);
	/* Last: the writes above may have queued FUA bios for a commit. */
	flush_work(&sp->commit_work);
}

void ssdp_cache_dtr(struct ssdprio *sp)
{
	if (!sp->caching)
		return;
	/*
	 * No metadata I/O here: a live table got its clean shutdown in
	 * postsuspend, and after a reload the new table owns the SSD.
	 */
	ssdp_cache_presuspend(sp);
	ssdp_cache_drain(sp);
	ssdp_meta_dtr(sp);
	ssdp_promote_exit(sp);
	ssdp_evict_exit(sp);
	destroy_workqueue(sp->wq);
	bioset_exit(&sp->bs);
	kvfree(sp->set_io);
	ssdp_fmap_destroy(&sp->fmap);
}

/*
 * Take a user I/O hold on @cset for @pb; cache_lock held.  @guard: it reads
 * or rewrites valid blocks in place, so no clean block of the set may go
 * to another origin set until it completes.
 */
static void ssdp_hold(struct ssdprio *sp, struct ssdp_bio *pb, u32 cset,
		      bool writer, bool guard)
{
	struct ssdp_set_io *sio = &sp->set_io[cset];

	lockdep_assert_held(&sp->cache_lock);
	if (!sio->readers && !sio->writers)
		ssdp_fmap_pin(&sp->fmap, cset);
	pb->guard = guard;
	sio->guards += guard;
	pb->idle_writer = writer && pb->idle;
	sio->idle_writers += pb->idle_writer;
	if (writer)
		sio->writers++;
	else
		sio->readers++;
	ssdp_no_replace_update(sp, cset);
}

static void ssdp_release_locked(struct ssdprio *sp, struct ssdp_bio *pb,
				u32 cset, bool writer)
{
	struct ssdp_set_io *sio = &sp->set_io[cset];

	lockdep_assert_held(&sp->cache_lock);
	if (writer)
		sio->writers--;
	else
		sio->readers--;
	sio->guards -= pb->guard;
	sio->idle_writers -= pb->idle_writer;
	pb->idle_writer = false;
	if (!sio->writers)
		sio->overlap = false;
	ssdp_no_replace_update(sp, cset);
	if (!sio->readers && !sio->writers) {
		ssdp_fmap_unpin(&sp->fmap, cset);
		ssdp_evict_unpinned_locked(sp);
	} else if (writer && !sio->writers && sp->evict.flushing) {
		/* A flush's job may start beside readers: now it can. */
		ssdp_evict_unpinned_locked(sp);
	}
}

static void ssdp_cache_kick_deferred(struct ssdprio *sp)
{
	if (!bio_list_empty(&sp->deferred))
		queue_work(sp->wq, &sp->deferred_work);
}

/* sp->set_released: see there. */
static void ssdp_set_released_locked(struct ssdprio *sp, u32 cset)
{
	lockdep_assert_held(&sp->cache_lock);
	ssdp_evict_unpinned_locked(sp);
	ssdp_cache_kick_deferred(sp);
}

/* A clean block of @cset went to another origin set; cache_lock held. */
static void ssdp_note_replaced_locked(struct ssdprio *sp, u32 cset,
				      bool replaced)
{
	lockdep_assert_held(&sp->cache_lock);
	if (replaced)
		sp->set_io[cset].replaced++;
}

/*
 * Drop blocks [first, first + nr) of @line from the cache; cache_lock held.
 * Every drop goes through here: a set held aside after a failed writeback
 * is a dirty set (the eviction worker counts on it), so one whose last
 * dirty block goes is let go, with nothing left to write back.  A dropped
 * block may have been written since a pending promotion read the origin,
 * and written back since (no origin write of the user's to move promo_gen):
 * the promotion would bring the older data back, so it is stopped.
 */
static void ssdp_drop_locked(struct ssdprio *sp, u32 line, u32 first, u32 nr)
{
	u32 cset = ssdp_line_cset(line);

	lockdep_assert_held(&sp->cache_lock);
	ssdp_fmap_drop(&sp->fmap, line, first, nr);
	sp->promo_gen++;
	if (!ssdp_fmap_nr_dirty(&sp->fmap, cset))
		ssdp_wb_unfail_locked(sp, cset);
}

/*
 * A line for @oset, for a write or a read miss; cache_lock held.  None
 * while every tag of the set holds blocks in use or dirty ones, which
 * writing the set back would release.
 */
static u32 ssdp_alloc_line(struct ssdprio *sp, u64 oset, bool note_lockout)
{
	bool replaced;
	u32 line = ssdp_fmap_tag_alloc(&sp->fmap, oset, &replaced);
	u32 cset = ssdp_fmap_set_of(&sp->fmap, oset);

	if (line != SSDP_NONE)
		ssdp_note_replaced_locked(sp, cset, replaced);
	else if (note_lockout && ssdp_fmap_nr_dirty(&sp->fmap, cset))
		ssdp_lockout_note_locked(sp, cset, SSDP_NONE);
	return line;
}

/*
 * What a read finds in blocks [first, first + nr) of @line, as a run of
 * one kind; degraded, a clean block is read from the origin instead.
 */
static u32 ssdp_hit_run(struct ssdprio *sp, u32 line, u32 first, u32 nr,
			enum ssdp_fmap_hit *hit)
{
	u32 n = ssdp_fmap_hit_run(&sp->fmap, line, first, nr, hit);

	if (sp->degraded && *hit == SSDP_FMAP_CLEAN)
		*hit = SSDP_FMAP_MISS;
	return n;
}

static enum ssdp_dest ssdp_route_read(struct ssdprio *sp, struct bio *bio,
				      struct ssdp_bio *pb, bool may_split)
{
	u32 line = ssdp_fmap_lookup(&sp->fmap, pb->oset);
	u32 cutoff = READ_ONCE(sp->cfg.seq_cutoff_kib);
	enum ssdp_fmap_hit hit = SSDP_FMAP_MISS;
	u64 stream;
	u32 cset, blk;

	if (line != SSDP_NONE) {
		u32 run = ssdp_hit_run(sp, line, pb->first, pb->nr, &hit);

		if (run < pb->nr) {
			/* Reads are never deferred, so this is .map. */
			if (WARN_ON_ONCE(!may_split))
				hit = SSDP_FMAP_MISS, run = pb->nr;
			else
				ssdp_accept_partial(bio, run << sp->block_shift);
			pb->nr = run;
		}
		ssdp_fmap_touch(&sp->fmap, line);
	}
	/* After the split: the rest comes back as the stream's next bio. */
	stream = ssdp_seq_note(&sp->seq, bio->bi_iter.bi_sector,
			       bio_sectors(bio));
	if (hit != SSDP_FMAP_MISS) {
		cset = ssdp_line_cset(line);
		pb->line = line;
		pb->frame = ssdp_fmap_frame(&sp->fmap, line, pb->first);
		pb->clean = hit == SSDP_FMAP_CLEAN;
		pb->replaced = sp->set_io[cset].replaced;
		pb->redirtied = sp->set_io[cset].redirtied;
		ssdp_hold(sp, pb, cset, false, true);
		pb->kind = SSDP_BK_SSD_READ;
		/* Kept to read a clean block again from the origin. */
		pb->saved_iter = bio->bi_iter;
		ssdp_count(sp, SSDP_ST_READ_HITS);
		return SSDP_TO_SSD;
	}

	ssdp_count(sp, SSDP_ST_READ_MISSES);
	pb->kind = SSDP_BK_ORIGIN_READ;
	if (pb->partial || !READ_ONCE(sp->cfg.read_alloc) ||
	    (pb->idle && !READ_ONCE(sp->cfg.idle_alloc)) || sp->suspended ||
	    sp->degraded)
		return SSDP_TO_ORIGIN;
	/* A long scan is read at the HDD's pace; copying it only costs. */
	if (cutoff && stream > (u64)cutoff << 1) {
		ssdp_count(sp, SSDP_ST_SEQ_SKIPPED);
		return SSDP_TO_ORIGIN;
	}
	if (line == SSDP_NONE) {
		line = ssdp_alloc_line(sp, pb->oset, true);
		if (line == SSDP_NONE) {
			ssdp_count(sp, SSDP_ST_BYPASSED);
			return SSDP_TO_ORIGIN;
		}
	}
	/* The copy could not go in before that block is written back. */
	blk = ssdp_fmap_foreign_dirty(&sp->fmap, line, pb->first, pb->nr);
	if (blk != SSDP_NONE) {
		ssdp_lockout_note_locked(sp, ssdp_line_cset(line), blk);
		ssdp_count(sp, SSDP_ST_PROMOTIONS_SKIPPED);
		return SSDP_TO_ORIGIN;
	}
	pb->promote = true;
	pb->line = line;
	pb->gen = sp->promo_gen;
	pb->replaced = sp->set_io[ssdp_line_cset(line)].replaced;
	return SSDP_TO_ORIGIN;
}

static enum ssdp_dest ssdp_origin_write(struct ssdprio *sp,
					struct ssdp_bio *pb)
{
	sp->origin_writes++;
	pb->kind = SSDP_BK_ORIGIN_WRITE;
	return SSDP_TO_ORIGIN;
}

/*
 * The cache's copy of the written blocks goes when the origin write
 * completes: it holds the set as a writer meanwhile (no frame of it
 * changes hands under it).
 */
static enum ssdp_dest ssdp_origin_write_drop(struct ssdprio *sp,
					     struct ssdp_bio *pb, u32 line)
{
	pb->line = line;
	pb->drop = true;
	ssdp_hold(sp, pb, ssdp_line_cset(line), true, true);
	return ssdp_origin_write(sp, pb);
}

/* A partial write: one block, to its SSD copy if it has one. */
static enum ssdp_dest ssdp_route_write_partial(struct ssdprio *sp,
					       struct ssdp_bio *pb, u32 line,
					       u32 policy)
{
	enum ssdp_fmap_hit hit = SSDP_FMAP_MISS;

	if (line != SSDP_NONE)
		hit = ssdp_fmap_block(&sp->fmap, line, pb->first);
	if (hit == SSDP_FMAP_MISS) {
		ssdp_count(sp, SSDP_ST_WRITE_MISSES);
		return ssdp_origin_write(sp, pb);
	}
	ssdp_count(sp, SSDP_ST_WRITE_HITS);
	if (hit == SSDP_FMAP_CLEAN && policy == SSDP_WP_WRITEAROUND) {
		ssdp_drop_locked(sp, line, pb->first, 1);
		return ssdp_origin_write(sp, pb);
	}
	pb->line = line;
	pb->frame = ssdp_fmap_frame(&sp->fmap, line, pb->first);
	/* It rewrites a valid block in place. */
	ssdp_hold(sp, pb, ssdp_line_cset(line), true, true);
	ssdp_fmap_touch(&sp->fmap, line);
	if (hit == SSDP_FMAP_DIRTY || policy == SSDP_WP_WRITEBACK) {
		pb->kind = SSDP_BK_SSD_WRITE;
		return SSDP_TO_SSD;
	}
	sp->origin_writes++;
	pb->kind = SSDP_BK_BOTH_WRITE;
	return SSDP_TO_BOTH;
}

/*
 * Another write in flight may be writing these blocks: a claim of the
 * line's is one (or a block dropped under a pin: it cannot tell), an
 * in-place rewrite of a valid block is another.  The first to complete
 * makes the frame valid under the other, where another origin set could
 * take it if the set were open.  A block that is only valid is written by
 * nobody: this write makes it a claim (ssdp_fmap_overwrite()), and the
 * set stays open.
 */
static bool ssdp_write_overlaps(struct ssdprio *sp, u32 line, u32 first,
				u32 nr)
{
	struct ssdp_set_io *sio = &sp->set_io[ssdp_line_cset(line)];

	lockdep_assert_held(&sp->cache_lock);
	if (!sio->writers)
		return false;
	return ssdp_fmap_any_claimed(&sp->fmap, line, first, nr) ||
	       (sio->guards && ssdp_fmap_any_held(&sp->fmap, line, first, nr));
}

/*
 * Whole blocks the cache cannot take all of (frames holding another
 * origin set's dirty blocks, or in use).  In .map the bio is cut to what
 * can be done one way: false, the claimed head goes on to the cache.  A
 * deferred bio, which cannot be cut, goes to the origin whole and drops
 * the cache's copies when it is done.  True: *dest is decided.
 */
static bool ssdp_route_write_conflict(struct ssdprio *sp, struct bio *bio,
				      struct ssdp_bio *pb, u32 line,
				      u32 claimed, bool may_split,
				      bool note_lockout, enum ssdp_dest *dest)
{
	u32 run, blk;

	blk = ssdp_fmap_foreign_dirty(&sp->fmap, line, pb->first + claimed,
				      pb->nr - claimed);
	if (note_lockout && !sp->degraded && blk != SSDP_NONE)
		ssdp_lockout_note_locked(sp, ssdp_line_cset(line), blk);
	if (!may_split) {
		ssdp_count(sp, SSDP_ST_BYPASSED);
		*dest = ssdp_origin_write_drop(sp, pb, line);
		return true;
	}
	if (claimed) {
		ssdp_accept_partial(bio, claimed << sp->block_shift);
		pb->nr = claimed;
		return false;
	}
	run = ssdp_fmap_unclaimable_run(&sp->fmap, line, pb->first, pb->nr,
					sp->degraded);
	if (run < pb->nr) {
		ssdp_accept_partial(bio, run << sp->block_shift);
		pb->nr = run;
	}
	/* None of them is a valid block of this origin set. */
	ssdp_count(sp, SSDP_ST_BYPASSED);
	*dest = ssdp_origin_write(sp, pb);
	return true;
}

/*
 * A write to a set a writeback holds goes on beside it only where it goes
 * to the SSD alone (writeback policy, the cache not degraded) and the
 * claim below takes every one of its blocks: then no origin write of its
 * races the writeback's (a write that cannot be claimed whole may go to
 * the origin, dropping what the cache holds of it).  The frames it takes
 * are its own blocks', free ones, or clean ones the writeback is not
 * reading: a clean block the writeback reads is one it bridges, and from
 * then on the set gives no clean block away (set_io.wb_keep_clean).  The
 * writeback leaves what the write touches dirty (wb_track.h).  Anything
 * else waits for the writeback.
 */
static bool ssdp_write_beside_writeback(struct ssdprio *sp,
					struct ssdp_bio *pb, u32 line,
					u32 policy)
{
	u32 blk;

	lockdep_assert_held(&sp->cache_lock);
	if (sp->degraded || policy != SSDP_WP_WRITEBACK)
		return false;
	/*
	 * Every block valid: claimed in place, the bio cut (or, deferred,
	 * sent in stretches) where its frames stop following each other.
	 * Else one claim must take it all: a stretch that one claim takes
	 * may leave the next one less than the dry run saw.  A partial write
	 * of a block not held valid goes to the origin: the block may be one
	 * the writeback bridged and a failed read dropped since (a claim
	 * under the pin), whose older data its origin write carries.
	 */
	for (blk = pb->first; blk < pb->first + pb->nr; blk++)
		if (ssdp_fmap_block(&sp->fmap, line, blk) == SSDP_FMAP_MISS)
			break;
	if (blk < pb->first + pb->nr &&
	    (pb->partial || ssdp_fmap_claimable(&sp->fmap, line, pb->first,
						pb->nr, false) < pb->nr))
		return false;
	return ssdp_wb_write_beside_locked(sp, line, pb->first, pb->nr);
}

/*
 * A write the cache cannot let in beside a writeback, of blocks its
 * origin set's tag holds in no state (not valid, not claimed, not in
 * limbo), goes to the origin rather than wait for the whole writeback:
 * the writeback copies only blocks the cache holds, and while it pins the
 * set a block it took stays held (dropped: claimed), so the two origin
 * writes do not meet; ssdp_wb_write_around_locked() checks the sectors
 * of the writeback's write anyway.  No other write of these blocks is in
 * flight (the write range lock) and no promotion (the set is held), so
 * none turns them valid under this one.  Whatever the policy: the cache
 * has no copy of them to keep in step.
 */
static bool ssdp_write_around_writeback(struct ssdprio *sp,
					struct ssdp_bio *pb, u32 line)
{
	lockdep_assert_held(&sp->cache_lock);
	if (ssdp_fmap_any_held(&sp->fmap, line, pb->first, pb->nr))
		return false;
	return ssdp_wb_write_around_locked(sp, line, pb->first, pb->nr);
}

static enum ssdp_dest ssdp_route_write(struct ssdprio *sp, struct bio *bio,
				       struct ssdp_bio *pb, bool may_split)
{
	u32 policy = READ_ONCE(sp->cfg.write_policy);
	u32 line = ssdp_fmap_lookup(&sp->fmap, pb->oset);
	u32 cutoff = READ_ONCE(sp->cfg.seq_cutoff_kib);
	enum ssdp_dest dest;
	bool replaced, note_lockout, overlap = false, dirty;
	u32 cset, n, runs;

	if (unlikely(sp->drain_wants != SSDP_NONE) &&
	    ssdp_fmap_set_of(&sp->fmap, pb->oset) == sp->drain_wants)
		return SSDP_DEFERRED;
	pb->under_writeback = policy == SSDP_WP_WRITEBACK;
	if (line != SSDP_NONE && sp->set_io[ssdp_line_cset(line)].excl) {
		/* A writeback started in a quiet window stops for it. */
		sp->set_io[ssdp_line_cset(line)].wb_yield = true;
		if (!ssdp_write_beside_writeback(sp, pb, line, policy)) {
			if (!ssdp_write_around_writeback(sp, pb, line))
				return SSDP_DEFERRED;
			ssdp_count(sp, SSDP_ST_WRITE_HITS);
			ssdp_count(sp, SSDP_ST_BYPASSED);
			return ssdp_origin_write(sp, pb);
		}
	}
	/* Around a failing SSD, except where it holds the only copy. */
	if (sp->degraded)
		policy = SSDP_WP_WRITEAROUND;
	if (pb->partial)
		return ssdp_route_write_partial(sp, pb, line, policy);
	/*
	 * A write in a long sequential stream that finds its frames taken
	 * goes to the origin at the stream's rate; writing back what holds
	 * them would only add origin writes (seq_cutoff, as for reads).
	 */
	note_lockout = !cutoff || ssdp_seq_peek(&sp->wseq,
						bio->bi_iter.bi_sector) <=
				  (u64)cutoff << 1;

	/*
	 * A dirty block's data exists only in the cache: a write to it stays
	 * there whatever the policy, or a crash could leave a durable
	 * "invalid" before the origin has the new data.  Only those blocks:
	 * the bio is cut where that changes, so that the new data of the
	 * others goes around, as the policy (or a failing SSD) asks.  A
	 * deferred bio cannot be cut: it stays on the SSD whole.
	 */
	if (policy == SSDP_WP_WRITEAROUND && line != SSDP_NONE) {
		if (may_split) {
			n = ssdp_fmap_dirty_run(&sp->fmap, line, pb->first,
						pb->nr, &dirty);
			if (n < pb->nr) {
				ssdp_accept_partial(bio, n << sp->block_shift);
				pb->nr = n;
			}
		} else {
			dirty = ssdp_fmap_any_dirty(&sp->fmap, line, pb->first,
						    pb->nr);
		}
		if (dirty)
			policy = SSDP_WP_WRITEBACK;
	}
	if (policy == SSDP_WP_WRITEAROUND) {
		if (line != SSDP_NONE) {
			ssdp_count(sp, SSDP_ST_WRITE_HITS);
			ssdp_drop_locked(sp, line, pb->first, pb->nr);
		} else {
			ssdp_count(sp, SSDP_ST_WRITE_MISSES);
		}
		return ssdp_origin_write(sp, pb);
	}
	if (line == SSDP_NONE) {
		ssdp_count(sp, SSDP_ST_WRITE_MISSES);
		line = ssdp_alloc_line(sp, pb->oset, note_lockout);
		if (line == SSDP_NONE) {
			ssdp_count(sp, SSDP_ST_BYPASSED);
			return ssdp_origin_write(sp, pb);
		}
	} else {
		ssdp_count(sp, SSDP_ST_WRITE_HITS);
		overlap = ssdp_write_overlaps(sp, line, pb->first, pb->nr);
	}
	cset = ssdp_line_cset(line);
	if (may_split) {
		n = ssdp_fmap_claim(&sp->fmap, line, pb->first, pb->nr,
				    sp->degraded, &replaced);
	} else {
		/*
		 * A deferred bio cannot be cut: claimed run by run, its SSD
		 * leg goes as one write per run (ssdp_submit_stretches()),
		 * or it goes to the origin whole.
		 */
		n = ssdp_fmap_claim_runs(&sp->fmap, line, pb->first, pb->nr,
					 sp->degraded, &replaced, &runs);
		pb->stretches = n == pb->nr && runs > 1;
	}
	ssdp_note_replaced_locked(sp, cset, replaced);
	if (n < pb->nr && ssdp_route_write_conflict(sp, bio, pb, line, n,
						    may_split, note_lockout,
						    &dest))
		return dest;
	pb->line = line;
	pb->frame = ssdp_fmap_frame(&sp->fmap, line, pb->first);
	/*
	 * Its frames are all claims now, out of other tags' reach: the set
	 * stays open to them (a sequential stream's next bio, or the rest
	 * of this one, may need a clean frame of another tag).
	 */
	if (overlap)
		sp->set_io[cset].overlap = true;
	ssdp_hold(sp, pb, cset, true, false);
	ssdp_fmap_overwrite(&sp->fmap, line, pb->first, pb->nr);
	ssdp_fmap_touch(&sp->fmap, line);
	if (policy == SSDP_WP_WRITEBACK) {
		pb->kind = SSDP_BK_SSD_WRITE;
		return SSDP_TO_SSD;
	}
	sp->origin_writes++;
	pb->kind = SSDP_BK_BOTH_WRITE;
	return SSDP_TO_BOTH;
}

static enum ssdp_dest ssdp_route_discard(struct ssdprio *sp,
					 struct ssdp_bio *pb)
{
	u32 line = ssdp_fmap_lookup(&sp->fmap, pb->oset);
	enum ssdp_fmap_hit hit;
	u32 cset;

	if (line == SSDP_NONE)
		goto origin;
	cset = ssdp_line_cset(line);
	if (sp->set_io[cset].excl) {
		sp->set_io[cset].wb_yield = true;
		return SSDP_DEFERRED;
	}
	/*
	 * A discard must not leave two answers for its sectors: the
	 * origin's (maybe zeroes) and an SSD copy.  A write in flight to the
	 * set may be about to fill (or dirty) its blocks, and with
	 * writethrough its origin half may land before or after the
	 * discard; the rest of a partly discarded dirty block exists only
	 * here, and its writeback rewrites the whole block.  There the
	 * discard is dropped, which it allows: its sectors keep their data
	 * everywhere.
	 */
	if (sp->set_io[cset].writers)
		goto done;
	if (pb->partial) {
		hit = ssdp_fmap_block(&sp->fmap, line, pb->first);
		if (hit == SSDP_FMAP_DIRTY)
			goto done;
		/* Clean: the origin has the rest of it, the SSD copy goes. */
		if (hit == SSDP_FMAP_MISS)
			goto origin;
	}
	/* Dirty too: the data is being thrown away. */
	ssdp_drop_locked(sp, line, pb->first, pb->nr);
origin:
	sp->origin_writes++;
	pb->kind = SSDP_BK_DISCARD;
	return SSDP_TO_ORIGIN;
done:
	pb->kind = SSDP_BK_NONE;
	return SSDP_DONE;
}

static void ssdp_both_ssd_endio(struct bio *clone)
{
	struct bio *parent = clone->bi_private;

	if (clone->bi_status) {
		ssdp_pb(parent)->ssd_failed = true;
		if (!parent->bi_status)
			parent->bi_status = clone->bi_status;
	}
	bio_put(clone);
	bio_endio(parent);
}

/*
 * Write @sectors of @bio from @offset to the SSD at @ssd, on a clone
 * chained to it: the bio completes only when every leg has.  As
 * bio_chain(), but end_io learns that an SSD leg failed.
 */
static void ssdp_submit_ssd_leg(struct ssdprio *sp, struct bio *bio,
				sector_t offset, sector_t sectors,
				sector_t ssd)
{
	struct bio *clone = bio_alloc_clone(sp->cache->bdev, bio, GFP_NOIO,
					    &sp->bs);

	/*
	 * dm polls only the clone it made; a polled leg of ours would wait
	 * on a poll queue no one polls, till the driver's timeout.
	 */
	bio_clear_polled(clone);
	bio_trim(clone, offset, sectors);
	clone->bi_iter.bi_sector = ssd;
	clone->bi_private = bio;
	clone->bi_end_io = ssdp_both_ssd_endio;
	bio_inc_remaining(bio);
	submit_bio_noacct(clone);
}

/*
 * A deferred write's SSD leg, one write per run of consecutive frames.
 * Its frames are its claims, in a set it pins, until it completes: none
 * moves under it, so each run is read under cache_lock as it goes.  From
 * a worker only (never under dm's bio list), so each clone is submitted
 * before the next one is taken from the pool.
 */
static void ssdp_submit_stretches(struct ssdprio *sp, struct bio *bio,
				  struct ssdp_bio *pb)
{
	u32 cset = ssdp_line_cset(pb->line), done = 0, n, frame;
	unsigned long flags;

	while (done < pb->nr) {
		spin_lock_irqsave(&sp->cache_lock, flags);
		n = ssdp_fmap_frame_run(&sp->fmap, pb->line, pb->first + done,
					pb->nr - done, &frame);
		spin_unlock_irqrestore(&sp->cache_lock, flags);
		if (WARN_ON_ONCE(!n)) {
			/* Unreachable: end_io drops its blocks as failed. */
			bio->bi_status = BLK_STS_IOERR;
			return;
		}
		ssdp_submit_ssd_leg(sp, bio, (sector_t)done << sp->block_shift,
				    (sector_t)n << sp->block_shift,
				    ssdp_frame_sector(sp, cset, frame));
		done += n;
	}
}

/* Send a routed bio on its way; returns a DM_MAPIO_* code. */
static int ssdp_dispatch(struct ssdprio *sp, struct bio *bio,
			 struct ssdp_bio *pb, enum ssdp_dest dest)
{
	sector_t in_block = bio->bi_iter.bi_sector &
			    (((sector_t)1 << sp->block_shift) - 1);

	switch (dest) {
	case SSDP_DEFERRED:
		return DM_MAPIO_SUBMITTED;
	case SSDP_DONE:
		bio_endio(bio);
		return DM_MAPIO_SUBMITTED;
	case SSDP_TO_SSD:
		if (pb->stretches) {
			/* The legs hold it; this drops the bio's own count. */
			ssdp_submit_stretches(sp, bio, pb);
			bio_endio(bio);
			return DM_MAPIO_SUBMITTED;
		}
		bio_set_dev(bio, sp->cache->bdev);
		bio->bi_iter.bi_sector = ssdp_frame_sector(sp,
						ssdp_line_cset(pb->line),
						pb->frame) + in_block;
		return DM_MAPIO_REMAPPED;
	case SSDP_TO_BOTH:
		/*
		 * The SSD copy rides on chained clones; the bio itself takes
		 * the origin leg and its scheduler class.
		 */
		if (pb->stretches)
			ssdp_submit_stretches(sp, bio, pb);
		else
			ssdp_submit_ssd_leg(sp, bio, 0, bio_sectors(bio),
					    ssdp_frame_sector(sp,
						ssdp_line_cset(pb->line),
						pb->frame) + in_block);
		fallthrough;
	case SSDP_TO_ORIGIN:
	default:
		if (pb->promote)
			ssdp_promote_bounce(sp, bio, pb);
		bio_set_dev(bio, sp->origin->bdev);
		return ssdp_sched_map(sp, bio, pb->idle);
	}
}

/*
 * The write range lock.  Two writes (or discards) of one block in flight
 * together could land in opposite orders on the SSD and on the origin
 * where each has a leg there (writethrough, or a write the origin takes
 * alone), and the cache would then keep as clean a block the origin holds
 * otherwise.  So one waits for the other, as on a disk that serialises
 * them: a write or discard waits on the deferred list while an older one
 * of any of its blocks is in flight or waiting itself (first come, first
 * served, so none waits without end).  Filesystems never have two in
 * flight for one block; some applications do.
 */
static struct list_head *ssdp_wlock_bucket(struct ssdprio *sp, u64 oset)
{
	return &sp->wlocks[hash_64(oset, SSDP_WLOCK_SHIFT)];
}

static bool ssdp_wlock_overlap(const struct ssdp_bio *a,
			       const struct ssdp_bio *b)
{
	return a->oset == b->oset && a->first < b->first + b->nr &&
	       b->first < a->first + a->nr;
}

/*
 * Priority inheritance: idle write @pb holds up a normal write or a
 * drain, so it is not held in the idle queue, and goes now if it is.
 * cache_lock held: @pb is in the write range lock, so not completed.
 */
static void ssdp_wlock_urge_locked(struct ssdprio *sp, struct ssdp_bio *pb)
{
	lockdep_assert_held(&sp->cache_lock);
	pb->urgent = true;
	ssdp_sched_inherit(sp, &pb->qn);
}

/*
 * Priority inheritance: a normal write must not wait for the idle queue.
 * Every idle write it waits for, directly or through others that wait
 * themselves, goes out now.  Newest first, so one pass covers the chain.
 */
static void ssdp_wlock_inherit(struct ssdprio *sp, struct ssdp_bio *pb)
{
	struct list_head *bucket = ssdp_wlock_bucket(sp, pb->oset);
	struct ssdp_bio *w, *o;

	lockdep_assert_held(&sp->cache_lock);
	for (w = pb; &w->wlock != bucket; w = list_prev_entry(w, wlock)) {
		if (w->idle && !w->urgent)
			continue;
		for (o = list_prev_entry(w, wlock); &o->wlock != bucket;
		     o = list_prev_entry(o, wlock)) {
			if (o->idle && !o->urgent && ssdp_wlock_overlap(o, w))
				ssdp_wlock_urge_locked(sp, o);
		}
	}
}

/*
 * sp->hurry_writers: a drain waits for @cset's writes in flight, and its
 * own writeback (normal I/O) would keep the idle queue holding the
 * idle-class ones: they inherit its priority, as a normal write's
 * (ssdp_wlock_inherit).  Every write holding a set is in the range lock
 * until it has let go; the drain comes here only when every dirty set is
 * held, so a walk of them all is cheap enough.
 */
static void ssdp_hurry_writers_locked(struct ssdprio *sp, u32 cset)
{
	struct ssdp_bio *pb;
	u32 i;

	lockdep_assert_held(&sp->cache_lock);
	for (i = 0; i < SSDP_WLOCK_BUCKETS; i++)
		list_for_each_entry(pb, &sp->wlocks[i], wlock)
			if (pb->idle_writer && !pb->urgent &&
			    ssdp_line_cset(pb->line) == cset)
				ssdp_wlock_urge_locked(sp, pb);
}

/* Is an older write of @pb's blocks in flight or waiting?  cache_lock held. */
static bool ssdp_wlock_blocked(struct ssdprio *sp, struct ssdp_bio *pb)
{
	struct ssdp_bio *o;

	lockdep_assert_held(&sp->cache_lock);
	if (!pb->wlocked) {
		list_add_tail(&pb->wlock, ssdp_wlock_bucket(sp, pb->oset));
		pb->wlocked = true;
	}
	list_for_each_entry(o, ssdp_wlock_bucket(sp, pb->oset), wlock) {
		if (o == pb)
			return false;
		if (ssdp_wlock_overlap(o, pb)) {
			if (!pb->idle || pb->urgent)
				ssdp_wlock_inherit(sp, pb);
			return true;
		}
	}
	WARN_ON_ONCE(1);
	return false;
}

/*
 * After its end_io has changed the map: a write of the same blocks that
 * waited goes now, and finds what this one left.  cache_lock held.
 */
static void ssdp_wlock_release_locked(struct ssdprio *sp, struct ssdp_bio *pb)
{
	lockdep_assert_held(&sp->cache_lock);
	if (!pb->wlocked)
		return;
	list_del(&pb->wlock);
	pb->wlocked = false;
	ssdp_cache_kick_deferred(sp);
}

static void ssdp_wlock_release(struct ssdprio *sp, struct ssdp_bio *pb)
{
	unsigned long flags;

	if (!pb->wlocked)
		return;
	spin_lock_irqsave(&sp->cache_lock, flags);
	ssdp_wlock_release_locked(sp, pb);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
}

static int ssdp_route(struct ssdprio *sp, struct bio *bio, bool may_split)
{
	struct ssdp_bio *pb = ssdp_pb(bio);
	enum ssdp_dest dest;
	unsigned long flags;

	spin_lock_irqsave(&sp->cache_lock, flags);
	ssdp_esm_io_arrival(&sp->evict, ktime_get_ns());
	if (op_is_write(bio_op(bio)) && ssdp_wlock_blocked(sp, pb))
		dest = SSDP_DEFERRED;
	else if (bio_op(bio) == REQ_OP_DISCARD)
		dest = ssdp_route_discard(sp, pb);
	else if (bio_data_dir(bio) == WRITE)
		dest = ssdp_route_write(sp, bio, pb, may_split);
	else
		dest = ssdp_route_read(sp, bio, pb, may_split);
	/* After any split: the rest comes back as the stream's next bio. */
	if (dest != SSDP_DEFERRED && bio_op(bio) != REQ_OP_DISCARD &&
	    bio_data_dir(bio) == WRITE)
		ssdp_seq_note(&sp->wseq, bio->bi_iter.bi_sector,
			      bio_sectors(bio));
	if (dest == SSDP_DEFERRED) {
		bio_list_add(&sp->deferred, bio);
		/* Routed again at every kick: counted once. */
		if (!pb->waited)
			ssdp_count(sp, SSDP_ST_DEFERRED);
		pb->waited = true;
		/*
		 * It waits for a writeback or promotion, or for a write that
		 * may wait in the idle queue: hurry that up.
		 */
		if ((!pb->idle || pb->urgent) && !sp->deferred_normal++)
			ssdp_sched_boost(sp, true);
	}
	spin_unlock_irqrestore(&sp->cache_lock, flags);

	return ssdp_dispatch(sp, bio, pb, dest);
}

int ssdp_cache_map(struct ssdprio *sp, struct bio *bio)
{
	struct ssdp_bio *pb = ssdp_pb(bio);
	u32 bs = sp->cfg.block_sectors;
	sector_t sector = dm_target_offset(sp->ti, bio->bi_iter.bi_sector);
	sector_t in_set = sector & (sp->layout.set_sectors - 1);
	sector_t len = bio_sectors(bio);
	u32 off = in_set & (bs - 1);

	/*
	 * One set at a time (max_io_len already splits reads and writes;
	 * discards are not), and either whole blocks or one partial block.
	 */
	len = min_t(sector_t, len, sp->layout.set_sectors - in_set);
	if (off) {
		len = min_t(sector_t, len, bs - off);
		pb->partial = true;
	} else if (len < bs) {
		pb->partial = true;
	} else {
		len &= ~(sector_t)(bs - 1);
	}
	if (len < bio_sectors(bio))
		ssdp_accept_partial(bio, len);

	/*
	 * FUA is met by the commit that follows the write (end_io), which
	 * flushes the device holding the data and writes its metadata.
	 */
	if (bio->bi_opf & REQ_FUA) {
		bio->bi_opf &= ~REQ_FUA;
		pb->commit = true;
	}
	bio->bi_iter.bi_sector = sector;
	pb->oset = sector >> sp->set_shift;
	pb->first = in_set >> sp->block_shift;
	pb->nr = pb->partial ? 1 : len >> sp->block_shift;
	return ssdp_route(sp, bio, true);
}

static void ssdp_deferred_work_fn(struct work_struct *work)
{
	struct ssdprio *sp = container_of(work, struct ssdprio, deferred_work);
	struct bio_list list;
	struct bio *bio;
	unsigned long flags;

	spin_lock_irqsave(&sp->cache_lock, flags);
	list = sp->deferred;
	bio_list_init(&sp->deferred);
	/* Whatever still has to wait boosts again when routed. */
	if (sp->deferred_normal) {
		sp->deferred_normal = 0;
		ssdp_sched_boost(sp, false);
	}
	spin_unlock_irqrestore(&sp->cache_lock, flags);

	while ((bio = bio_list_pop(&list))) {
		if (ssdp_route(sp, bio, false) == DM_MAPIO_REMAPPED)
			dm_submit_bio_remap(bio, NULL);
	}
}

/*
 * A block made dirty by a write routed under writeback that completes
 * under writethrough: a drain switched the policy meanwhile, and its flush
 * may have found nothing dirty and ended.  The drain goes on, or it would
 * leave dirty data behind with nothing under load to write it back.  (A
 * partial write to a dirty block stays on the SSD whatever the policy: not
 * a reason to start a drain nobody asked for.)
 */
static void ssdp_drain_again_locked(struct ssdprio *sp, struct ssdp_bio *pb)
{
	lockdep_assert_held(&sp->cache_lock);
	if (!pb->under_writeback ||
	    READ_ONCE(sp->cfg.write_policy) != SSDP_WP_WRITETHROUGH ||
	    sp->evict.flushing)
		return;
	sp->draining = true;
	ssdp_esm_flush_all(&sp->evict);
	ssdp_state_event(sp);	/* flush_state running again */
	ssdp_evict_kick_locked(sp);
}

/* SSD read errors before the cache stops trusting the SSD for clean data. */
#define SSDP_SSD_READ_ERRORS_DEGRADE	8

/*
 * A read hit failed on the SSD; cache_lock held.  Where every block of it
 * is clean the origin has the same data: read it from there and stop
 * using these SSD copies.  A dirty block's only copy is gone: the error
 * stands.  Returns true if the bio is to be read again.
 */
static bool ssdp_ssd_read_failed_locked(struct ssdprio *sp, struct bio *bio,
					struct ssdp_bio *pb)
{
	struct ssdp_set_io *sio = &sp->set_io[ssdp_line_cset(pb->line)];
	u32 blk;

	lockdep_assert_held(&sp->cache_lock);
	/*
	 * A readahead may be refused with nothing wrong (the SSD a dm device
	 * being suspended, a fail-fast transport): its reader ignores the
	 * error, and the SSD is not to blame for it.
	 */
	if (bio->bi_opf & REQ_RAHEAD)
		return false;
	ssdp_count(sp, SSDP_ST_SSD_READ_ERRORS);
	if (++sp->ssd_read_errors >= SSDP_SSD_READ_ERRORS_DEGRADE)
		ssdp_degrade_locked(sp, "SSD read errors");
	if (!pb->clean)
		return false;
	/*
	 * A writeback whose origin write failed since the read was mapped
	 * made the clean blocks it carried dirty again, in its own set or a
	 * neighbour's, at once (set_io.redirtied), and there the origin may
	 * hold anything: a block of the read dirty now is not read from it.
	 * (A block dirty now with no such failure was written since: the
	 * origin has what it held when the read was mapped, an answer of
	 * its own for a read that overlapped the write.)
	 */
	if (sio->redirtied != pb->redirtied)
		for (blk = pb->first; blk < pb->first + pb->nr; blk++)
			if (ssdp_fmap_block(&sp->fmap, pb->line, blk) ==
			    SSDP_FMAP_DIRTY)
				return false;
	/*
	 * These copies are not used again (those still clean: a block may
	 * have been dropped since the read was mapped).  But a writer in
	 * flight may be about to make them dirty, and a writeback holding
	 * the set may fail and need its bridged clean blocks back as dirty
	 * (its origin write leaves the origin undefined there): then leave
	 * them all.
	 */
	if (!sio->writers && !sio->wb)
		for (blk = pb->first; blk < pb->first + pb->nr; blk++)
			if (ssdp_fmap_block(&sp->fmap, pb->line, blk) ==
			    SSDP_FMAP_CLEAN)
				ssdp_drop_locked(sp, pb->line, blk, 1);
	ssdp_count(sp, SSDP_ST_READ_FALLBACKS);
	return true;
}

/*
 * A write to the SSD (or, writethrough, either leg) failed; cache_lock
 * held.  Its blocks hold undefined data now.  A block that was clean (or invalid) has its latest
 * acknowledged data on the origin: drop the SSD copy.  A dirty block has
 * it nowhere else, so it stays dirty: falling back to the origin would
 * silently revert acknowledged writes.  Pending promotions of these blocks
 * are dropped (promo_gen), as they could refill them with origin data.
 */
static void ssdp_write_failed_locked(struct ssdprio *sp,
				     struct ssdp_bio *pb, bool ssd_failed)
{
	u32 blk;

	lockdep_assert_held(&sp->cache_lock);
	for (blk = pb->first; blk < pb->first + pb->nr; blk++) {
		enum ssdp_fmap_hit state =
			ssdp_fmap_block(&sp->fmap, pb->line, blk);

		if (state == SSDP_FMAP_DIRTY)
			continue;
		/*
		 * A clean block written beside a writeback of its set that
		 * the writeback's origin write carries (bridged): that write
		 * may yet fail and leave the origin undefined there, and then
		 * only this frame has the rest of the block.  Kept until the
		 * write ends, which decides (evict.c).
		 */
		if (state == SSDP_FMAP_CLEAN &&
		    ssdp_wb_failed_beside_locked(sp, pb->line, blk))
			continue;
		ssdp_drop_locked(sp, pb->line, blk, 1);
	}
	sp->promo_gen++;
	if (ssd_failed) {
		ssdp_count(sp, SSDP_ST_SSD_WRITE_ERRORS);
		ssdp_degrade_locked(sp, "SSD write error");
	}
}

static void ssdp_count_origin_error(struct ssdprio *sp, struct bio *bio)
{
	ssdp_count(sp, op_is_write(bio_op(bio)) ? SSDP_ST_ORIGIN_WRITE_ERRORS :
						   SSDP_ST_ORIGIN_READ_ERRORS);
}

/*
 * Read clean hits again from the origin, in process context: those that
 * failed on the SSD, and those whose frames changed hands under them.
 */
static void ssdp_retry_work_fn(struct work_struct *work)
{
	struct ssdprio *sp = container_of(work, struct ssdprio, retry_work);
	struct bio_list list;
	struct bio *bio;

	ssdp_bios_take(sp, &sp->retry, &list);
	while ((bio = bio_list_pop(&list))) {
		struct ssdp_bio *pb = ssdp_pb(bio);

		pb->kind = SSDP_BK_ORIGIN_READ;
		bio->bi_iter = pb->saved_iter;
		bio->bi_status = BLK_STS_OK;
		/*
		 * As dm_bio_restore() does: a bio that was split below us in
		 * its first life was chained, and its remaining count ended
		 * at 0; left so, a split on the origin would complete it at
		 * its first part.
		 */
		atomic_set(&bio->__bi_remaining, 1);
		/* The SSD's queue accounted this bio; the origin's will. */
		bio_clear_flag(bio, BIO_QOS_THROTTLED);
		bio_clear_flag(bio, BIO_QOS_MERGED);
		bio_set_dev(bio, sp->origin->bdev);
		if (ssdp_sched_map(sp, bio, pb->idle) == DM_MAPIO_REMAPPED)
			dm_submit_bio_remap(bio, NULL);
	}
}

int ssdp_cache_end_io(struct ssdprio *sp, struct bio *bio,
		      blk_status_t *error)
{
	struct ssdp_bio *pb = ssdp_pb(bio);
	bool ok = !*error, retry = false;
	unsigned long flags;
	u32 cset;

	if (pb->origin) {
		ssdp_sched_end_io(sp, bio);
		if (!ok && pb->kind != SSDP_BK_COMMITTED &&
		    !(pb->kind == SSDP_BK_BOTH_WRITE && pb->ssd_failed))
			ssdp_count_origin_error(sp, bio);
	}

	switch (pb->kind) {
	case SSDP_BK_NONE:
		/* A discard with nothing to do, or a write never routed. */
		ssdp_wlock_release(sp, pb);
		return DM_ENDIO_DONE;
	case SSDP_BK_COMMITTED:
		return DM_ENDIO_DONE;
	case SSDP_BK_ORIGIN_READ:
		if (pb->promote && ssdp_promote_read_done(sp, bio, pb, ok))
			return DM_ENDIO_INCOMPLETE;
		return DM_ENDIO_DONE;
	default:
		break;
	}

	spin_lock_irqsave(&sp->cache_lock, flags);
	cset = ssdp_line_cset(pb->line);
	switch (pb->kind) {
	case SSDP_BK_SSD_READ:
		if (!ok) {
			retry = ssdp_ssd_read_failed_locked(sp, bio, pb);
		} else if (WARN_ON_ONCE(sp->set_io[cset].replaced !=
					pb->replaced)) {
			/* A frame changed hands under a reader (a bug). */
			retry = pb->clean;
		}
		ssdp_release_locked(sp, pb, cset, false);
		if (retry) {
			bio_list_add(&sp->retry, bio);
			queue_work(sp->wq, &sp->retry_work);
		}
		break;
	case SSDP_BK_SSD_WRITE:
		if (ok) {
			/* Stamps a set's first dirty block, for its age. */
			sp->fmap.clock = ktime_get_seconds();
			ssdp_fmap_set_valid(&sp->fmap, pb->line, pb->first,
					    pb->nr);
			ssdp_fmap_set_dirty(&sp->fmap, pb->line, pb->first,
					    pb->nr);
			/* What a flush owed of these blocks is gone. */
			if (!pb->partial)
				ssdp_wb_overwritten_locked(sp, pb->line,
							   pb->first, pb->nr);
			sp->ssd_unflushed++;
			ssdp_evict_unpinned_locked(sp);
			ssdp_drain_again_locked(sp, pb);
		} else {
			ssdp_write_failed_locked(sp, pb, true);
		}
		ssdp_release_locked(sp, pb, cset, true);
		break;
	case SSDP_BK_BOTH_WRITE:
		if (ok) {
			/*
			 * A block dirty before stays dirty: clean needs an
			 * origin flush first (writeback does one).
			 */
			ssdp_fmap_set_valid(&sp->fmap, pb->line, pb->first,
					    pb->nr);
			sp->ssd_unflushed++;
			sp->origin_unflushed++;
		} else {
			ssdp_write_failed_locked(sp, pb, pb->ssd_failed);
		}
		ssdp_release_locked(sp, pb, cset, true);
		sp->origin_writes--;
		sp->promo_gen++;
		break;
	case SSDP_BK_ORIGIN_WRITE:
	case SSDP_BK_DISCARD:
		if (pb->drop) {
			/*
			 * The origin has newer data than the cache's copy; or,
			 * failed, anything: the clean copies go either way,
			 * or a read would answer differently once they went.
			 * A dirty block keeps its only copy on an error.
			 */
			if (ok)
				ssdp_drop_locked(sp, pb->line, pb->first,
						 pb->nr);
			else
				ssdp_write_failed_locked(sp, pb, false);
			ssdp_release_locked(sp, pb, cset, true);
		}
		sp->origin_writes--;
		sp->promo_gen++;
		sp->origin_unflushed++;
		break;
	}
	ssdp_wlock_release_locked(sp, pb);
	spin_unlock_irqrestore(&sp->cache_lock, flags);

	if (retry) {
		*error = BLK_STS_OK;
		return DM_ENDIO_INCOMPLETE;
	}
	if (pb->commit && ok) {
		/* FUA: durable only once the metadata that finds it is. */
		pb->kind = SSDP_BK_COMMITTED;
		pb->origin = false;
		ssdp_cache_commit_bio(sp, bio);
		return DM_ENDIO_INCOMPLETE;
	}
	return DM_ENDIO_DONE;
}

/*
 * Flush and FUA: what a user's flush or FUA write promises is the
 * durability of every write completed before it, and the cache's answer
 * is a metadata commit (meta.c), which flushes the origin if writes
 * reached it, then the SSD (the data the records vouch for), writes the
 * changed records and flushes again.  A flush (dm sends them empty) is
 * queued here from .map; a FUA write has its flag stripped in .map, goes
 * on as an ordinary write, and is queued here from its end_io, once its
 * data is written.  The commit worker takes every bio waiting when it
 * starts, commits once for all of them and completes them with its
 * result: a failed commit fails them (and degrades the cache), so no
 * flush is acknowledged that the metadata does not back.  Any context.
 */
void ssdp_cache_commit_bio(struct ssdprio *sp, struct bio *bio)
{
	unsigned long flags;

	spin_lock_irqsave(&sp->cache_lock, flags);
	bio_list_add(&sp->commit_bios, bio);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	queue_work(sp->wq, &sp->commit_work);
}

static void ssdp_commit_work_fn(struct work_struct *work)
{
	struct ssdprio *sp = container_of(work, struct ssdprio, commit_work);
	struct bio_list list;
	unsigned long flags;
	struct bio *bio;
	int r;

	for (;;) {
		ssdp_bios_take(sp, &sp->commit_bios, &list);
		if (bio_list_empty(&list))
			break;

		r = ssdp_meta_commit(sp);
		while ((bio = bio_list_pop(&list))) {
			if (r)
				bio->bi_status = BLK_STS_IOERR;
			/*
			 * A FUA write is completed a second time here (its
			 * end_io returned DM_ENDIO_INCOMPLETE); the lower
			 * queue's accounting already ran once.
			 */
			bio_clear_flag(bio, BIO_QOS_THROTTLED);
			bio_clear_flag(bio, BIO_QOS_MERGED);
			bio_endio(bio);
		}
		/* Sets released from limbo: eviction may be waiting on them. */
		spin_lock_irqsave(&sp->cache_lock, flags);
		ssdp_evict_kick_locked(sp);
		spin_unlock_irqrestore(&sp->cache_lock, flags);
	}
}

void ssdp_cache_presuspend(struct ssdprio *sp)
{
	unsigned long flags;

	if (!sp->caching)
		return;
	spin_lock_irqsave(&sp->cache_lock, flags);
	sp->suspended = true;
	ssdp_esm_stop(&sp->evict);
	/* No writeback starts now: what waited for one goes on. */
	ssdp_drain_unwant_locked(sp);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
}

void ssdp_cache_postsuspend(struct ssdprio *sp)
{
	if (!sp->caching)
		return;
	ssdp_cache_drain(sp);
	/* Clean shutdown: dirty data stays in the cache, all of it durable. */
	ssdp_meta_postsuspend(sp);
}

int ssdp_cache_preresume(struct ssdprio *sp)
{
	unsigned long flags;

	if (!sp->caching)
		return ssdp_meta_preresume_bypass(sp);
	/*
	 * The table this one replaces (linear, "cache off", another
	 * program's) may have left writes it acknowledged in either
	 * device's volatile cache; dm flushes nothing at a swap.  The first
	 * flush after the resume must cover them too.
	 */
	spin_lock_irqsave(&sp->cache_lock, flags);
	sp->origin_unflushed++;
	sp->ssd_unflushed++;
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	return ssdp_meta_preresume(sp);
}

void ssdp_cache_resume(struct ssdprio *sp)
{
	unsigned long flags;

	if (!sp->caching)
		return;
	spin_lock_irqsave(&sp->cache_lock, flags);
	sp->suspended = false;
	ssdp_esm_resume(&sp->evict);
	/* Also gives sets whose writeback failed another try. */
	ssdp_wb_retry_now_locked(sp);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
}

void ssdp_cache_apply_config(struct ssdprio *sp)
{
	unsigned long flags;

	lockdep_assert_held(&sp->cfg_lock);
	if (!sp->caching)
		return;
	spin_lock_irqsave(&sp->cache_lock, flags);
	ssdp_evict_knobs_locked(sp);
	/*
	 * write_policy writeback again: the drain is called off.  Its flush
	 * goes on as a flush_dirty (idle class); left draining, it would keep
	 * writing back at normal class and holding writes back for as long
	 * as the new writeback writes kept sets dirty.
	 */
	if (sp->draining && sp->cfg.write_policy == SSDP_WP_WRITEBACK) {
		sp->draining = false;
		ssdp_drain_unwant_locked(sp);
	}
	ssdp_esm_kick(&sp->evict);
	ssdp_evict_kick_locked(sp);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
}

int ssdp_cache_flush_dirty(struct ssdprio *sp, bool drain)
{
	enum ssdp_flush_state was;
	unsigned long flags;

	if (!sp->caching)
		return 0;
	spin_lock_irqsave(&sp->cache_lock, flags);
	was = ssdp_flush_state_locked(sp);
	sp->flush_failed = false;
	/* A drain stays one until its flush ends; a flush_dirty joins it. */
	if (drain)
		sp->draining = true;
	ssdp_esm_flush_all(&sp->evict);
	/* Asked again: the sets that failed before are tried at once. */
	ssdp_wb_retry_now_locked(sp);
	/* What it owes: what is dirty now (a drain, everything). */
	sp->flush_epoch++;
	ssdp_fmap_flush_mark_dirty(&sp->fmap);
	if (ssdp_flush_state_locked(sp) != was)
		ssdp_state_event(sp);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	return 0;
}

static const char * const ssdp_flush_state_names[] = {
	[SSDP_FLUSH_IDLE] = "idle",
	[SSDP_FLUSH_RUNNING] = "running",
	[SSDP_FLUSH_FAILED] = "failed",
};

unsigned int ssdp_cache_status(struct ssdprio *sp, char *result,
			       unsigned int maxlen, unsigned int sz)
{
	struct ssdp_fmap *fm = &sp->fmap;
	unsigned long flags;
	u64 valid, dirty, evicted, mem, cleaned, pressed, lockout, replaced, age = 0;
	u32 mapped, limbo, total, tags, state, deferred, wb, failed, old;
	const char *flush, *why;
	bool degraded, draining;

	if (!sp->caching) {
		DMEMIT(" cache off");
		return sz;
	}
	spin_lock_irqsave(&sp->cache_lock, flags);
	valid = fm->total_valid;
	dirty = fm->total_dirty;
	mapped = fm->nr_mapped_sets;
	limbo = fm->nr_limbo_sets;
	tags = fm->nr_tags_used;
	replaced = fm->replaced;
	total = fm->nr_csets;
	state = ssdp_esm_state(&sp->evict);
	wb = ssdp_esm_inflight(&sp->evict);
	evicted = sp->evict.sets_evicted;
	deferred = bio_list_size(&sp->deferred);
	failed = sp->nr_wb_failed;
	degraded = sp->degraded;
	flush = ssdp_flush_state_names[ssdp_flush_state_locked(sp)];
	draining = sp->draining;
	cleaned = sp->evict.clean_started;
	pressed = sp->evict.pressure_started;
	lockout = sp->evict.lockout_started;
	why = ssdp_esm_why(&sp->evict);
	old = ssdp_fmap_oldest_dirty(fm);
	if (old != SSDP_NONE)
		age = (u32)ktime_get_seconds() - ssdp_fmap_dirty_since(fm, old);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	mem = ssdp_fmap_mem_bytes(fm) + total * sizeof(*sp->set_io) +
	      2 * BITS_TO_LONGS(ssdp_meta_blocks(&sp->layout)) * sizeof(long);

	DMEMIT(" cache on cache_mode %s valid_blocks %llu dirty_blocks %llu",
	       degraded ? "degraded" : "normal", valid, dirty);
	DMEMIT(" mapped_sets %u free_sets %u limbo_sets %u total_sets %u",
	       mapped, total - mapped, limbo, total);
	DMEMIT(" tags_used %u tags_total %u blocks_replaced %llu", tags,
	       total * SSDP_FMAP_TAGS, replaced);
	DMEMIT(" evict_state %s writeback_sets %u sets_evicted %llu deferred_now %u",
	       ssdp_esm_state_name(state), wb, evicted, deferred);
	DMEMIT(" failed_sets %u flush_state %s draining %u", failed, flush,
	       draining);
	DMEMIT(" sets_cleaned %llu oldest_dirty_s %llu pressure_writebacks %llu",
	       cleaned, age, pressed);
	DMEMIT(" lockout_writebacks %llu", lockout);
	DMEMIT(" evict_why %s cache_blocks %llu", why,
	       (u64)total * sp->cfg.set_blocks);
	DMEMIT(" metadata_bytes %llu block_sectors %u set_blocks %u", mem,
	       sp->cfg.block_sectors, sp->cfg.set_blocks);
	return ssdp_meta_status(sp, result, maxlen, sz);
}
