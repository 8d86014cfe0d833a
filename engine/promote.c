// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio promotion: a read miss's data, copied into the cache.
 *
 * A read miss to promote reads into pages of our own (a bounce), and its
 * end_io copies them into the user's: the cache takes what the origin
 * returned, whatever the user does to its own pages meanwhile (an
 * O_DIRECT buffer another thread rewrites, or one page that several reads
 * share, as a guest's "dummy page" for data it discards), and there is no
 * second origin read.  A small read (the scattered misses a cache is for)
 * is copied out by end_io itself, in whatever context it runs.  A larger
 * one is held (DM_ENDIO_INCOMPLETE) and copied out by a worker, then
 * completed: no copy of up to a whole set in interrupt context, for a
 * context switch that costs little against a long read (but a millisecond
 * per 4 KiB miss under an emulated CPU, 10% of the miss).  Another worker
 * writes the copy into the set's SSD blocks (SSD I/O carries no idle
 * class: the priority scheme protects the origin).  The copy is
 * committed only if nothing could have made it older than the origin: no
 * origin write completed and no block was dropped since the miss was
 * issued (promo_gen: a block written since could have been written back,
 * then dropped after a failed SSD read), none is in flight, no block of
 * the set changed hands meanwhile (a block written
 * since could have been written back and replaced: set_io.replaced), the
 * blocks are still invalid and no user write holds the set.
 */
#include <linux/slab.h>

#include "ssdprio.h"

/* Pages held by bounces and copies waiting for the worker, at most. */
#define SSDP_PROMOTE_MAX_BYTES (8U << 20)
/* A read miss this small is copied out by end_io, not held for a worker. */
#define SSDP_PROMOTE_INLINE_BYTES (16U << 10)

/* promote.c's state. */
struct ssdp_promote {
	struct ssdprio *sp;
	struct list_head list;		/* [cache_lock] copies for the worker */
	struct work_struct work;
	/* [cache_lock] read misses held until their data is copied */
	struct bio_list captures;
	struct work_struct capture_work;
	atomic_t bytes;			/* memory held (or reserved) by copies */
};

struct ssdp_promo {
	struct list_head list;
	struct ssdp_buf buf;
	/* The read's own vector while it reads into @buf (@bvec). */
	struct bio_vec *user_vec;
	struct bio_vec *bvec;
	u64 oset;
	u64 gen;
	u32 replaced;
	u32 line;
	u16 frame;		/* of block @first, once claimed */
	u16 first;
	u16 nr;
	unsigned int bytes;
};

static void ssdp_promo_free(struct ssdprio *sp, struct ssdp_promo *p)
{
	kfree(p->bvec);
	ssdp_buf_free(&p->buf);
	atomic_sub(p->bytes, &sp->pr->bytes);
	kfree(p);
	if (atomic_dec_and_test(&sp->bg_jobs))
		wake_up(&sp->bg_wait);
}

static unsigned int ssdp_promo_bytes(struct ssdprio *sp, struct ssdp_bio *pb)
{
	return pb->nr << (sp->block_shift + SECTOR_SHIFT);
}

/*
 * A read miss to promote, about to go to the origin: it reads into pages of
 * ours instead of the user's (restored by ssdp_promote_read_done()).  No
 * room in the budget or no memory: it reads as it is, and is not promoted.
 * Process context, no lock held; the clone's vector is the user's, shared:
 * it is replaced, never written.
 */
void ssdp_promote_bounce(struct ssdprio *sp, struct bio *bio,
			 struct ssdp_bio *pb)
{
	unsigned int bytes = ssdp_promo_bytes(sp, pb), left, i;
	/*
	 * Not even GFP_NOIO: this is the I/O path, and reclaim is no place
	 * for a read to wait; a copy is only an optimisation and may be
	 * skipped.
	 */
	gfp_t gfp = GFP_NOWAIT | __GFP_NOWARN;
	struct ssdp_promo *p;

	pb->promote = false;
	if (WARN_ON_ONCE(bio->bi_iter.bi_size != bytes))
		return;
	if (atomic_add_return(bytes, &sp->pr->bytes) > SSDP_PROMOTE_MAX_BYTES)
		goto unreserve;
	p = kzalloc(sizeof(*p), gfp);
	if (!p)
		goto unreserve;
	/* A background job from now on: ssdp_promo_free() ends it. */
	atomic_inc(&sp->bg_jobs);
	p->bytes = bytes;
	if (ssdp_buf_alloc(&p->buf, bytes, gfp))
		goto free;
	p->bvec = kcalloc(p->buf.nr_pages, sizeof(*p->bvec), gfp);
	if (!p->bvec)
		goto free;
	for (i = 0, left = bytes; i < p->buf.nr_pages; i++) {
		p->bvec[i].bv_page = p->buf.pages[i];
		p->bvec[i].bv_len = min_t(unsigned int, left, PAGE_SIZE);
		p->bvec[i].bv_offset = 0;
		left -= p->bvec[i].bv_len;
	}
	p->oset = pb->oset;
	p->gen = pb->gen;
	p->replaced = pb->replaced;
	p->line = pb->line;
	p->first = pb->first;
	p->nr = pb->nr;
	p->user_vec = bio->bi_io_vec;
	pb->saved_iter = bio->bi_iter;
	bio->bi_io_vec = p->bvec;
	/*
	 * At the bounce vector's start.  A new iterator rather than its
	 * fields: the offset into the current entry, bi_bvec_done, is
	 * bi_offset in 7.x.
	 */
	bio->bi_iter = (struct bvec_iter) {
		.bi_sector = bio->bi_iter.bi_sector,
		.bi_size = bio->bi_iter.bi_size,
	};
	pb->bounce = p;
	pb->promote = true;
	return;

free:
	ssdp_promo_free(sp, p);	/* gives the bytes back */
	ssdp_count(sp, SSDP_ST_PROMOTIONS_SKIPPED);
	return;
unreserve:
	atomic_sub(bytes, &sp->pr->bytes);
	ssdp_count(sp, SSDP_ST_PROMOTIONS_SKIPPED);
}

/*
 * The read's data into the user's pages, and the copy to the worker that
 * writes it into the cache.  From end_io or the capture worker: no
 * sleeping.
 */
static void ssdp_promote_land(struct ssdprio *sp, struct bio *bio,
			      struct ssdp_bio *pb)
{
	struct ssdp_promo *p = pb->bounce;
	unsigned long flags;

	pb->bounce = NULL;
	ssdp_buf_copy_to_bio(&p->buf, bio, pb->saved_iter);
	spin_lock_irqsave(&sp->cache_lock, flags);
	list_add_tail(&p->list, &sp->pr->list);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	queue_work(sp->wq, &sp->pr->work);
}

/*
 * From end_io (any context), for a read miss that read into its bounce
 * pages: the user's vector back; on success, copy the data out now if it
 * is small, or hold the read for the capture worker.  A held read's
 * second end_io (kind COMMITTED, no longer an origin bio for the
 * scheduler) completes it.  True if held.
 */
bool ssdp_promote_read_done(struct ssdprio *sp, struct bio *bio,
			    struct ssdp_bio *pb, bool ok)
{
	struct ssdp_promo *p = pb->bounce;
	unsigned long flags;

	bio->bi_io_vec = p->user_vec;
	if (!ok) {
		/* What the user's pages hold is undefined anyway. */
		pb->bounce = NULL;
		ssdp_promo_free(sp, p);
		ssdp_count(sp, SSDP_ST_PROMOTIONS_SKIPPED);
		return false;
	}
	if (p->bytes <= SSDP_PROMOTE_INLINE_BYTES) {
		ssdp_promote_land(sp, bio, pb);
		return false;
	}
	pb->kind = SSDP_BK_COMMITTED;
	pb->origin = false;
	spin_lock_irqsave(&sp->cache_lock, flags);
	bio_list_add(&sp->pr->captures, bio);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	queue_work(sp->wq, &sp->pr->capture_work);
	return true;
}

/* Copy the held reads' data out, then let them complete. */
static void ssdp_capture_work_fn(struct work_struct *work)
{
	struct ssdprio *sp = container_of(work, struct ssdp_promote,
					  capture_work)->sp;
	struct bio_list list;
	struct bio *bio;

	ssdp_bios_take(sp, &sp->pr->captures, &list);
	while ((bio = bio_list_pop(&list))) {
		ssdp_promote_land(sp, bio, ssdp_pb(bio));
		/* The lower queue's accounting already ran once. */
		bio_clear_flag(bio, BIO_QOS_THROTTLED);
		bio_clear_flag(bio, BIO_QOS_MERGED);
		bio_endio(bio);
	}
}

/*
 * May the copy go in?  Takes the set exclusively and claims the frames
 * if so; cache_lock held.
 */
static bool ssdp_promote_begin_locked(struct ssdprio *sp,
				      struct ssdp_promo *p)
{
	u32 cset = ssdp_line_cset(p->line);
	struct ssdp_set_io *sio = &sp->set_io[cset];
	enum ssdp_fmap_hit hit;
	bool replaced;
	u32 n;

	lockdep_assert_held(&sp->cache_lock);
	if (sp->suspended || sp->degraded || p->gen != sp->promo_gen ||
	    sp->origin_writes ||
	    ssdp_fmap_lookup(&sp->fmap, p->oset) != p->line ||
	    sio->replaced != p->replaced || sio->excl || sio->writers ||
	    ssdp_fmap_hit_run(&sp->fmap, p->line, p->first, p->nr, &hit) !=
	    p->nr || hit != SSDP_FMAP_MISS)
		return false;
	/* Pinned first: claims exist only under a pin. */
	ssdp_fmap_pin(&sp->fmap, cset);
	/*
	 * The frames it gets are consecutive: one SSD write.  A claim that
	 * stops short (a frame not free to take, or the next block's frame
	 * not following) copies the blocks it got.
	 */
	n = ssdp_fmap_claim(&sp->fmap, p->line, p->first, p->nr, false,
			    &replaced);
	if (replaced)
		sio->replaced++;
	if (!n) {
		ssdp_fmap_unpin(&sp->fmap, cset);
		return false;
	}
	p->nr = n;
	p->frame = ssdp_fmap_frame(&sp->fmap, p->line, p->first);
	sio->excl = true;
	return true;
}

static void ssdp_promote_one(struct ssdprio *sp, struct ssdp_promo *p)
{
	u32 cset = ssdp_line_cset(p->line);
	unsigned long flags;
	bool go;
	int r;

	spin_lock_irqsave(&sp->cache_lock, flags);
	go = ssdp_promote_begin_locked(sp, p);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	if (!go) {
		ssdp_count(sp, SSDP_ST_PROMOTIONS_SKIPPED);
		return;
	}

	r = ssdp_io_ssd_sync(sp, &p->buf, 0,
			     ssdp_frame_sector(sp, cset, p->frame),
			     p->nr << (sp->block_shift + SECTOR_SHIFT),
			     REQ_OP_WRITE);

	spin_lock_irqsave(&sp->cache_lock, flags);
	if (!r) {
		ssdp_fmap_set_valid(&sp->fmap, p->line, p->first, p->nr);
	} else {
		/* As a user write's: an SSD that fails writes gets no more. */
		ssdp_count(sp, SSDP_ST_SSD_WRITE_ERRORS);
		ssdp_degrade_locked(sp, "SSD write error");
	}
	sp->set_io[cset].excl = false;
	ssdp_fmap_unpin(&sp->fmap, cset);
	sp->set_released(sp, cset);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	ssdp_count(sp, r ? SSDP_ST_PROMOTIONS_SKIPPED : SSDP_ST_PROMOTIONS);
}

static void ssdp_promote_work_fn(struct work_struct *work)
{
	struct ssdprio *sp = container_of(work, struct ssdp_promote, work)->sp;
	struct ssdp_promo *p;
	unsigned long flags;

	for (;;) {
		spin_lock_irqsave(&sp->cache_lock, flags);
		p = list_first_entry_or_null(&sp->pr->list,
					     struct ssdp_promo, list);
		if (p)
			list_del(&p->list);
		spin_unlock_irqrestore(&sp->cache_lock, flags);
		if (!p)
			return;
		ssdp_promote_one(sp, p);
		ssdp_promo_free(sp, p);
	}
}

int ssdp_promote_init(struct ssdprio *sp)
{
	sp->pr = kzalloc(sizeof(*sp->pr), GFP_KERNEL);
	if (!sp->pr)
		return -ENOMEM;
	sp->pr->sp = sp;
	INIT_LIST_HEAD(&sp->pr->list);
	INIT_WORK(&sp->pr->work, ssdp_promote_work_fn);
	bio_list_init(&sp->pr->captures);
	INIT_WORK(&sp->pr->capture_work, ssdp_capture_work_fn);
	return 0;
}

/* After ssdp_promote_drain(), or when nothing ever ran. */
void ssdp_promote_exit(struct ssdprio *sp)
{
	kfree(sp->pr);
	sp->pr = NULL;
}

/* Suspend: pending copies are dropped (they are only an optimisation). */
void ssdp_promote_drain(struct ssdprio *sp)
{
	/* Held reads complete (dm's suspend waits for them anyway). */
	flush_work(&sp->pr->capture_work);
	flush_work(&sp->pr->work);
	/* Copies queued after the flush find sp->suspended and are skipped. */
	flush_work(&sp->pr->work);
}
