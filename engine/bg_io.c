// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio internal I/O: page buffers and the synchronous reads, writes
 * and flushes that promotion and writeback jobs issue from their workers,
 * and the metadata's reads and writes.
 *
 * All of it is background work, so every bio carries the idle class; the
 * origin leg goes through the scheduler, which holds it for a quiet window.
 * The exceptions: a drain's writeback, which an administrator waits for,
 * competes with the user's I/O as normal I/O; an eviction that cannot wait
 * for quiet gets the scheduler's guaranteed share (pressure).
 */
#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/highmem.h>
#include <linux/ioprio.h>
#include <linux/completion.h>

#include "ssdprio.h"

#define SSDP_IDLE_PRIO IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0)

int ssdp_buf_alloc(struct ssdp_buf *buf, unsigned int bytes, gfp_t gfp)
{
	unsigned int i;

	buf->nr_pages = DIV_ROUND_UP(bytes, PAGE_SIZE);
	buf->pages = kcalloc(buf->nr_pages, sizeof(*buf->pages), gfp);
	if (!buf->pages)
		return -ENOMEM;
	for (i = 0; i < buf->nr_pages; i++) {
		buf->pages[i] = alloc_page(gfp);
		if (!buf->pages[i]) {
			ssdp_buf_free(buf);
			return -ENOMEM;
		}
	}
	return 0;
}

void ssdp_buf_free(struct ssdp_buf *buf)
{
	unsigned int i;

	if (!buf->pages)
		return;
	for (i = 0; i < buf->nr_pages; i++)
		if (buf->pages[i])
			__free_page(buf->pages[i]);
	kfree(buf->pages);
	buf->pages = NULL;
}

/*
 * A bio over @bytes of @buf from byte @off (sector aligned, not always page
 * aligned: metadata blocks are packed), spanning at most BIO_MAX_VECS pages.
 */
static struct bio *ssdp_buf_bio_at(struct ssdprio *sp, struct ssdp_buf *buf,
				   size_t off, struct block_device *bdev,
				   sector_t sector, unsigned int bytes,
				   blk_opf_t opf)
{
	unsigned int pages = DIV_ROUND_UP((off & ~PAGE_MASK) + bytes, PAGE_SIZE);
	struct bio *bio;

	bio = bio_alloc_bioset(bdev, pages, opf, GFP_NOIO, &sp->bs);
	bio->bi_iter.bi_sector = sector;
	while (bytes) {
		unsigned int pg_off = off & ~PAGE_MASK;
		unsigned int n = min_t(unsigned int, bytes, PAGE_SIZE - pg_off);

		__bio_add_page(bio, buf->pages[off >> PAGE_SHIFT], n, pg_off);
		off += n;
		bytes -= n;
	}
	return bio;
}

/* @buf's bytes into @bio's pages, from @iter on. */
void ssdp_buf_copy_to_bio(const struct ssdp_buf *buf, struct bio *bio,
			  struct bvec_iter iter)
{
	unsigned int page = 0, off = 0;
	struct bio_vec bv;
	struct bvec_iter it;

	__bio_for_each_segment(bv, bio, it, iter) {
		unsigned int done = 0;

		while (done < bv.bv_len) {
			unsigned int n = min_t(unsigned int, bv.bv_len - done,
					       PAGE_SIZE - off);
			char *src = kmap_local_page(buf->pages[page]);

			memcpy_to_page(bv.bv_page, bv.bv_offset + done,
				       src + off, n);
			kunmap_local(src);
			done += n;
			off += n;
			if (off == PAGE_SIZE) {
				off = 0;
				page++;
			}
		}
	}
}

struct ssdp_burst {
	atomic_t pending;
	struct completion done;
	int error;		/* the first error */
};

struct ssdp_burst_bio {
	struct ssdp_qnode qn;
	struct ssdprio *sp;
	struct ssdp_burst *burst;
};

static void ssdp_burst_endio(struct bio *bio)
{
	struct ssdp_burst_bio *b = bio->bi_private;
	struct ssdp_burst *burst = b->burst;

	if (bio->bi_status)
		cmpxchg(&burst->error, 0, blk_status_to_errno(bio->bi_status));
	ssdp_sched_internal_done(b->sp, &b->qn);
	/* Back to the bio pool now, not when the burst ends: it is GFP_NOIO. */
	bio_put(bio);
	if (atomic_dec_and_test(&burst->pending))
		complete(&burst->done);
}

/* The origin leg goes through the scheduler like a user's bio. */
static void ssdp_burst_add(struct ssdprio *sp, struct ssdp_burst *burst,
			   struct ssdp_burst_bio *b, struct bio *bio,
			   enum ssdp_bg_class class)
{
	bio->bi_private = b;
	bio->bi_end_io = ssdp_burst_endio;
	b->sp = sp;
	b->burst = burst;
	b->qn.bio = bio;
	ssdp_sched_submit_internal(sp, &b->qn, class);
}

static void ssdp_burst_init(struct ssdp_burst *burst, u32 nr)
{
	burst->error = 0;
	init_completion(&burst->done);
	atomic_set(&burst->pending, nr);
}

/* A burst of one; the bio is put when it completes. */
static int ssdp_submit_origin_wait(struct ssdprio *sp, struct bio *bio,
				   enum ssdp_bg_class class)
{
	struct ssdp_burst burst;
	struct ssdp_burst_bio b;

	ssdp_burst_init(&burst, 1);
	ssdp_burst_add(sp, &burst, &b, bio, class);
	wait_for_completion_io(&burst.done);
	return burst.error;
}

/*
 * @bytes of @buf from byte @off, to or from @bdev at @sector, one bio of at
 * most BIO_MAX_VECS pages at a time.  Background classes carry the idle
 * I/O priority for the origin's own scheduler too (until our scheduler
 * sends one on for normal I/O's sake: it is then best-effort); normal is a
 * drain's writeback or the metadata, which a user's flush waits for.
 */
static int ssdp_io_sync(struct ssdprio *sp, struct ssdp_buf *buf, size_t off,
			struct block_device *bdev, sector_t sector,
			unsigned int bytes, blk_opf_t opf,
			enum ssdp_bg_class class)
{
	bool origin = bdev == sp->origin->bdev;
	int r = 0;

	while (bytes && !r) {
		unsigned int n = min_t(unsigned int, bytes,
				       BIO_MAX_VECS * PAGE_SIZE -
				       (off & ~PAGE_MASK));
		struct bio *bio = ssdp_buf_bio_at(sp, buf, off, bdev, sector,
						  n, opf);

		/*
		 * Idle below us too on the origin only: on the SSD, a set is
		 * held exclusively while its writeback reads or its promotion
		 * writes, and the SSD's own scheduler would hold an idle-class
		 * bio behind the very hits of the writes waiting for that set.
		 */
		if (class != SSDP_BG_NORMAL && origin)
			bio->bi_ioprio = SSDP_IDLE_PRIO;
		if (origin) {
			r = ssdp_submit_origin_wait(sp, bio, class);
		} else {
			r = submit_bio_wait(bio);
			bio_put(bio);
		}
		off += n;
		sector += n >> SECTOR_SHIFT;
		bytes -= n;
	}
	return r;
}

int ssdp_io_ssd_sync(struct ssdprio *sp, struct ssdp_buf *buf, size_t off,
		     sector_t sector, unsigned int bytes, blk_opf_t opf)
{
	return ssdp_io_sync(sp, buf, off, sp->cache->bdev, sector, bytes, opf,
			    SSDP_BG_IDLE);
}

/*
 * All of them queued before any is waited for: the scheduler sees the
 * burst whole (sched_policy.h).  Without memory for that, one at a time.
 */
int ssdp_io_origin_burst(struct ssdprio *sp, struct ssdp_buf *buf,
			 const struct ssdp_io_ext *ext, u32 nr, blk_opf_t opf,
			 enum ssdp_bg_class class)
{
	struct ssdp_burst burst;
	struct ssdp_burst_bio *b;
	struct bio *bio;
	int r = 0;
	u32 i;

	b = nr > 1 ? kcalloc(nr, sizeof(*b), GFP_NOIO | __GFP_NOWARN) : NULL;
	if (!b) {
		for (i = 0; i < nr && !r; i++)
			r = ssdp_io_sync(sp, buf, ext[i].off, sp->origin->bdev,
					 ext[i].sector, ext[i].bytes, opf, class);
		return r;
	}
	ssdp_burst_init(&burst, nr);
	for (i = 0; i < nr; i++) {
		/* A writeback buffer's extent fits one bio. */
		bio = ssdp_buf_bio_at(sp, buf, ext[i].off, sp->origin->bdev,
				      ext[i].sector, ext[i].bytes, opf);
		if (class != SSDP_BG_NORMAL)
			bio->bi_ioprio = SSDP_IDLE_PRIO;
		ssdp_burst_add(sp, &burst, &b[i], bio, class);
	}
	wait_for_completion_io(&burst.done);
	kfree(b);
	return burst.error;
}

int ssdp_io_meta_sync(struct ssdprio *sp, struct ssdp_buf *buf, size_t off,
		      sector_t sector, unsigned int bytes, blk_opf_t opf)
{
	return ssdp_io_sync(sp, buf, off, sp->cache->bdev, sector, bytes, opf,
			    SSDP_BG_NORMAL);
}

int ssdp_io_origin_flush(struct ssdprio *sp)
{
	return blkdev_issue_flush(sp->origin->bdev);
}
