// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio promotion: a read miss's data, copied into the cache.
 *
 * The user's read completes first; end_io only copies the data it just
 * read into pages of our own (no second origin read, and no window in
 * which the user could change the pages under the copy).  A worker then
 * writes the copy into the set's SSD blocks at idle priority.  The copy is
 * committed only if nothing could have made it older than the origin: no
 * origin write completed since the miss was issued (promo_gen), none is in
 * flight, the blocks are still invalid and no user write holds the set.
 */
#include <linux/slab.h>

#include "ssdprio.h"

/* Pages held by copies waiting for the worker, at most. */
#define SSDP_PROMOTE_MAX_BYTES (8U << 20)

struct ssdp_promo {
	struct list_head list;
	struct ssdp_buf buf;
	u64 oset;
	u64 gen;
	u32 incarnation;
	u32 cset;
	u16 first;
	u16 nr;
	unsigned int bytes;
};

static void ssdp_promo_free(struct ssdprio *sp, struct ssdp_promo *p)
{
	ssdp_buf_free(&p->buf);
	atomic_sub(p->bytes, &sp->promote_bytes);
	kfree(p);
	if (atomic_dec_and_test(&sp->bg_jobs))
		wake_up(&sp->bg_wait);
}

/* From end_io: any context, so nothing here may sleep. */
void ssdp_promote_capture(struct ssdprio *sp, struct bio *bio,
			  struct ssdp_bio *pb)
{
	unsigned int bytes = pb->nr << (sp->block_shift + SECTOR_SHIFT);
	/*
	 * Not GFP_ATOMIC: a copy is only an optimisation and may be skipped;
	 * the atomic reserves are for those that cannot.  The total held is
	 * bounded by SSDP_PROMOTE_MAX_BYTES.
	 */
	gfp_t gfp = GFP_NOWAIT | __GFP_NOWARN;
	struct ssdp_promo *p;
	unsigned long flags;

	if (atomic_add_return(bytes, &sp->promote_bytes) >
	    SSDP_PROMOTE_MAX_BYTES)
		goto skip;
	p = kzalloc(sizeof(*p), gfp);
	if (!p)
		goto skip;
	if (ssdp_buf_alloc(&p->buf, bytes, gfp)) {
		kfree(p);
		goto skip;
	}
	ssdp_buf_copy_from_bio(&p->buf, bio, pb->saved_iter);
	p->oset = pb->oset;
	p->gen = pb->gen;
	p->incarnation = pb->incarnation;
	p->cset = pb->cset;
	p->first = pb->first;
	p->nr = pb->nr;
	p->bytes = bytes;
	atomic_inc(&sp->bg_jobs);

	spin_lock_irqsave(&sp->cache_lock, flags);
	list_add_tail(&p->list, &sp->promotions);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	queue_work(sp->wq, &sp->promote_work);
	return;

skip:
	atomic_sub(bytes, &sp->promote_bytes);
	ssdp_count(sp, SSDP_ST_PROMOTIONS_SKIPPED);
}

/* May the copy go in?  Takes the set exclusively if so; cache_lock held. */
static bool ssdp_promote_begin_locked(struct ssdprio *sp,
				      struct ssdp_promo *p)
{
	struct ssdp_set_io *sio = &sp->set_io[p->cset];

	if (sp->suspended || sp->degraded || p->gen != sp->promo_gen ||
	    sp->origin_writes ||
	    ssdp_cmap_lookup(&sp->cmap, p->oset) != p->cset ||
	    sio->incarnation != p->incarnation ||
	    sio->excl || sio->writers ||
	    ssdp_cmap_any_valid(&sp->cmap, p->cset, p->first, p->nr))
		return false;
	sio->excl = true;
	ssdp_cmap_pin(&sp->cmap, p->cset);
	return true;
}

static void ssdp_promote_one(struct ssdprio *sp, struct ssdp_promo *p)
{
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

	r = ssdp_io_ssd_sync(sp, &p->buf, ssdp_cset_sector(sp, p->cset,
							   p->first),
			     p->bytes, REQ_OP_WRITE);

	spin_lock_irqsave(&sp->cache_lock, flags);
	if (!r)
		ssdp_cmap_set_valid(&sp->cmap, p->cset, p->first, p->nr);
	sp->set_io[p->cset].excl = false;
	ssdp_cmap_unpin(&sp->cmap, p->cset);
	ssdp_cache_kick_deferred(sp);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	ssdp_count(sp, r ? SSDP_ST_PROMOTIONS_SKIPPED : SSDP_ST_PROMOTIONS);
}

void ssdp_promote_work_fn(struct work_struct *work)
{
	struct ssdprio *sp = container_of(work, struct ssdprio, promote_work);
	struct ssdp_promo *p;
	unsigned long flags;

	for (;;) {
		spin_lock_irqsave(&sp->cache_lock, flags);
		p = list_first_entry_or_null(&sp->promotions,
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

/* Suspend: pending copies are dropped (they are only an optimisation). */
void ssdp_promote_drain(struct ssdprio *sp)
{
	flush_work(&sp->promote_work);
	/* Copies queued after the flush find sp->suspended and are skipped. */
	flush_work(&sp->promote_work);
}
