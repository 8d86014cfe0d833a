// SPDX-License-Identifier: GPL-2.0
/*
 * dm-hddsim: a TEST-ONLY device-mapper target that makes a fast (memory
 * backed) device behave like a single-head hard disk.  It is used by the
 * dm-ssdprio guest tests and benchmarks; it is never part of the shipped
 * module.
 *
 * Table:
 *   <start> <len> hddsim <backing_dev> [<key> <value>]...
 *
 * Keys (defaults model a 7200 rpm desktop disk):
 *   rpm          7200   spindle speed; a full rotation is 60e6/rpm us
 *   seq_mbps     150    media transfer rate in MB/s (10^6 bytes)
 *   avg_seek_us  4000   mean seek time between two random positions
 *                       (average access = avg_seek_us + half a rotation)
 *   t2t_us       500    track-to-track (shortest) seek
 *   stroke_mb    0      size of the modelled disk in MiB: the target's
 *                       length maps onto the first stroke_mb of a full
 *                       stroke (0: the target covers the whole stroke)
 *
 * Requests are served one at a time, in arrival order (a disk without
 * NCQ; put an I/O scheduler above it with a loop device if needed).  Each
 * read or write costs
 *   - nothing but transfer if it starts exactly where the previous one
 *     ended (sequential),
 *   - a rotational wait of (skip / track) rotations if it starts a little
 *     ahead of the head on the same track (short forward skip),
 *   - otherwise seek(d) + half a rotation, with
 *     seek(d) = t2t + (full - t2t) * sqrt(d / stroke) and "full" chosen
 *     so that the mean over uniformly random pairs equals avg_seek_us,
 * plus the transfer time size / seq_mbps.  A track holds one rotation's
 * worth of data at seq_mbps.  The modelled time runs on an hrtimer;
 * the bio is then passed to the backing device and the next request is
 * started when it completes.  Flushes, discards and other non read/write
 * bios pass through at once.
 *
 * Status: reads, writes, seq (sequential hits), skips (short forward
 * skips), seeks, busy_us (modelled service time), queued (now),
 * max_queued, passthrough (bios not modelled), flushes_failed (flushes
 * failed on purpose) and fail_flushes (how many more will be) as
 * "key value" pairs.
 *
 * Message "fail_flushes <n>": fail the next n flushes with an I/O error
 * (0 stops), as a path that fails over does, for the tests of what a
 * stacked target does when its origin's flush fails once or for good.
 */

#include <linux/module.h>
#include <linux/init.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/hrtimer.h>
#include <linux/math64.h>
#include <linux/math.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/device-mapper.h>

/* The kernel-version shims, as for dm-ssdprio: hrtimer_setup(), WQ_PERCPU. */
#include "ssdp_compat.h"

#define DM_MSG_PREFIX "hddsim"

struct hddsim_params {
	unsigned int rpm;
	unsigned int seq_mbps;
	unsigned int avg_seek_us;
	unsigned int t2t_us;
	unsigned int stroke_mb;
};

struct hddsim_c {
	struct dm_dev *dev;
	struct hddsim_params p;

	/* Derived model constants. */
	u64 rot_ns;		/* one rotation */
	u64 seek_k_ns;		/* full-stroke seek minus t2t */
	u64 stroke_sectors;
	u64 track_sectors;

	spinlock_t lock;	/* protects everything below */
	struct bio_list queue;	/* waiting for the head */
	struct bio *cur;	/* being served (timer) or in flight below */
	bool cur_in_flight;
	bool may_delay;		/* false between presuspend and resume */
	sector_t head;		/* sector after the previous request */
	unsigned int queued;

	u64 reads, writes, seq, skips, seeks, busy_ns, passthrough;
	unsigned int max_queued;
	unsigned int fail_flushes;	/* flushes still to fail */
	u64 flushes_failed;

	struct hrtimer timer;
	struct work_struct submit_work;
	struct workqueue_struct *wq;
};

struct hddsim_pb {
	bool held;
};

/* Service time of @bio given the head position; updates head and counters. */
static u64 hddsim_service_ns(struct hddsim_c *hc, struct bio *bio)
{
	sector_t start = bio->bi_iter.bi_sector;
	u64 bytes = bio->bi_iter.bi_size;
	u64 ns, d, frac;

	/* bytes / (MB/s) in ns: bytes * 1000 / mbps */
	ns = div_u64(bytes * 1000, hc->p.seq_mbps);

	if (start == hc->head) {
		hc->seq++;
	} else if (start > hc->head && start - hc->head < hc->track_sectors) {
		hc->skips++;
		ns += div64_u64(hc->rot_ns * (start - hc->head),
				hc->track_sectors);
	} else {
		hc->seeks++;
		d = start > hc->head ? start - hc->head : hc->head - start;
		d = min_t(u64, d, hc->stroke_sectors);
		frac = div64_u64(d << 20, hc->stroke_sectors);
		ns += (u64)hc->p.t2t_us * NSEC_PER_USEC +
			div_u64(hc->seek_k_ns * int_sqrt64(frac), 1024) +
			hc->rot_ns / 2;
	}

	if (bio_data_dir(bio) == WRITE)
		hc->writes++;
	else
		hc->reads++;
	hc->head = bio_end_sector(bio);
	hc->busy_ns += ns;
	return ns;
}

/* Start serving the next queued bio, if any and if idle. */
static void hddsim_start_next_locked(struct hddsim_c *hc)
{
	struct bio *bio;

	if (hc->cur || !hc->may_delay)
		return;
	bio = bio_list_pop(&hc->queue);
	if (!bio)
		return;
	hc->queued--;
	hc->cur = bio;
	hc->cur_in_flight = false;
	hrtimer_start(&hc->timer, ns_to_ktime(hddsim_service_ns(hc, bio)),
		      HRTIMER_MODE_REL);
}

static enum hrtimer_restart hddsim_timer_fn(struct hrtimer *t)
{
	struct hddsim_c *hc = container_of(t, struct hddsim_c, timer);

	queue_work(hc->wq, &hc->submit_work);
	return HRTIMER_NORESTART;
}

static void hddsim_submit_work(struct work_struct *w)
{
	struct hddsim_c *hc = container_of(w, struct hddsim_c, submit_work);
	struct bio *bio = NULL;
	unsigned long flags;

	spin_lock_irqsave(&hc->lock, flags);
	if (hc->cur && !hc->cur_in_flight) {
		bio = hc->cur;
		hc->cur_in_flight = true;
	}
	spin_unlock_irqrestore(&hc->lock, flags);

	if (bio)
		dm_submit_bio_remap(bio, NULL);
}

static int hddsim_map(struct dm_target *ti, struct bio *bio)
{
	struct hddsim_c *hc = ti->private;
	struct hddsim_pb *pb = dm_per_bio_data(bio, sizeof(*pb));
	unsigned long flags;

	pb->held = false;
	bio_set_dev(bio, hc->dev->bdev);
	if (bio_sectors(bio))
		bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);

	if ((bio_op(bio) != REQ_OP_READ && bio_op(bio) != REQ_OP_WRITE) ||
	    !bio_sectors(bio)) {
		bool fail = false;

		spin_lock_irqsave(&hc->lock, flags);
		/* dm sends a flush to its targets as an empty bio. */
		if ((bio->bi_opf & REQ_PREFLUSH) && hc->fail_flushes) {
			hc->fail_flushes--;
			hc->flushes_failed++;
			fail = true;
		} else {
			hc->passthrough++;
		}
		spin_unlock_irqrestore(&hc->lock, flags);
		return fail ? DM_MAPIO_KILL : DM_MAPIO_REMAPPED;
	}

	spin_lock_irqsave(&hc->lock, flags);
	if (!hc->may_delay) {
		hc->passthrough++;
		spin_unlock_irqrestore(&hc->lock, flags);
		return DM_MAPIO_REMAPPED;
	}
	pb->held = true;
	bio_list_add(&hc->queue, bio);
	hc->queued++;
	hc->max_queued = max(hc->max_queued, hc->queued);
	hddsim_start_next_locked(hc);
	spin_unlock_irqrestore(&hc->lock, flags);

	return DM_MAPIO_SUBMITTED;
}

static int hddsim_end_io(struct dm_target *ti, struct bio *bio,
			 blk_status_t *error)
{
	struct hddsim_c *hc = ti->private;
	struct hddsim_pb *pb = dm_per_bio_data(bio, sizeof(*pb));
	unsigned long flags;

	if (!pb->held)
		return DM_ENDIO_DONE;

	spin_lock_irqsave(&hc->lock, flags);
	if (hc->cur == bio) {
		hc->cur = NULL;
		hc->cur_in_flight = false;
		hddsim_start_next_locked(hc);
	}
	spin_unlock_irqrestore(&hc->lock, flags);
	return DM_ENDIO_DONE;
}

/* Release every held bio (dm waits for them before suspending). */
static void hddsim_presuspend(struct dm_target *ti)
{
	struct hddsim_c *hc = ti->private;
	struct bio_list list;
	struct bio *bio;
	unsigned long flags;

	spin_lock_irqsave(&hc->lock, flags);
	hc->may_delay = false;
	spin_unlock_irqrestore(&hc->lock, flags);

	/* A fired timer leaves cur in flight via the work; wait for that. */
	hrtimer_cancel(&hc->timer);
	flush_work(&hc->submit_work);

	spin_lock_irqsave(&hc->lock, flags);
	list = hc->queue;
	bio_list_init(&hc->queue);
	hc->queued = 0;
	if (hc->cur && !hc->cur_in_flight) {
		bio_list_add_head(&list, hc->cur);
		hc->cur_in_flight = true;
	}
	/* Released unmodelled, as those mapped until the resume. */
	hc->passthrough += bio_list_size(&list);
	spin_unlock_irqrestore(&hc->lock, flags);

	while ((bio = bio_list_pop(&list)))
		dm_submit_bio_remap(bio, NULL);
}

static void hddsim_resume(struct dm_target *ti)
{
	struct hddsim_c *hc = ti->private;
	unsigned long flags;

	spin_lock_irqsave(&hc->lock, flags);
	hc->may_delay = true;
	spin_unlock_irqrestore(&hc->lock, flags);
}

static void hddsim_presuspend_undo(struct dm_target *ti)
{
	hddsim_resume(ti);
}

static void hddsim_dtr(struct dm_target *ti)
{
	struct hddsim_c *hc = ti->private;

	hrtimer_cancel(&hc->timer);
	if (hc->wq)
		destroy_workqueue(hc->wq);
	if (hc->dev)
		dm_put_device(ti, hc->dev);
	kfree(hc);
}

static int hddsim_parse(struct dm_target *ti, struct hddsim_c *hc,
			unsigned int argc, char **argv)
{
	static const struct {
		const char *key;
		size_t off;
		unsigned int min, max;
	} keys[] = {
		{ "rpm", offsetof(struct hddsim_params, rpm), 1, 100000 },
		{ "seq_mbps", offsetof(struct hddsim_params, seq_mbps), 1, 100000 },
		{ "avg_seek_us", offsetof(struct hddsim_params, avg_seek_us), 0, 1000000 },
		{ "t2t_us", offsetof(struct hddsim_params, t2t_us), 0, 1000000 },
		{ "stroke_mb", offsetof(struct hddsim_params, stroke_mb), 0, 1U << 30 },
	};
	unsigned int i, k, val;

	if (argc % 2) {
		ti->error = "Optional arguments must be key value pairs";
		return -EINVAL;
	}
	for (i = 0; i < argc; i += 2) {
		for (k = 0; k < ARRAY_SIZE(keys); k++)
			if (!strcmp(argv[i], keys[k].key))
				break;
		if (k == ARRAY_SIZE(keys)) {
			ti->error = "Unknown key";
			return -EINVAL;
		}
		if (kstrtouint(argv[i + 1], 10, &val) ||
		    val < keys[k].min || val > keys[k].max) {
			ti->error = "Invalid value";
			return -EINVAL;
		}
		*(unsigned int *)((char *)&hc->p + keys[k].off) = val;
	}
	if (hc->p.t2t_us > hc->p.avg_seek_us) {
		ti->error = "t2t_us must not exceed avg_seek_us";
		return -EINVAL;
	}
	return 0;
}

static int hddsim_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct hddsim_c *hc;
	int ret;

	if (argc < 1) {
		ti->error = "Requires a backing device";
		return -EINVAL;
	}

	hc = kzalloc(sizeof(*hc), GFP_KERNEL);
	if (!hc) {
		ti->error = "Cannot allocate context";
		return -ENOMEM;
	}
	ti->private = hc;
	spin_lock_init(&hc->lock);
	bio_list_init(&hc->queue);
	hrtimer_setup(&hc->timer, hddsim_timer_fn, CLOCK_MONOTONIC,
		      HRTIMER_MODE_REL);
	INIT_WORK(&hc->submit_work, hddsim_submit_work);
	hc->may_delay = true;
	hc->p.rpm = 7200;
	hc->p.seq_mbps = 150;
	hc->p.avg_seek_us = 4000;
	hc->p.t2t_us = 500;

	ret = hddsim_parse(ti, hc, argc - 1, argv + 1);
	if (ret)
		goto bad;

	ret = dm_get_device(ti, argv[0], dm_table_get_mode(ti->table), &hc->dev);
	if (ret) {
		ti->error = "Device lookup failed";
		goto bad;
	}

	hc->rot_ns = div_u64(60ULL * NSEC_PER_SEC, hc->p.rpm);
	/* mean of sqrt(|x - y|) over uniform x, y in [0, 1] is 8/15 */
	hc->seek_k_ns = div_u64((u64)(hc->p.avg_seek_us - hc->p.t2t_us) *
				NSEC_PER_USEC * 15, 8);
	hc->stroke_sectors = hc->p.stroke_mb ?
		(u64)hc->p.stroke_mb << (20 - SECTOR_SHIFT) : ti->len;
	hc->stroke_sectors = max_t(u64, hc->stroke_sectors, 1);
	/* one rotation at seq_mbps: mbps * 1e6 B/s * rot_ns / 1e9 / 512 */
	hc->track_sectors = max_t(u64, div_u64((u64)hc->p.seq_mbps * hc->rot_ns,
					       1000 * SECTOR_SIZE), 1);

	hc->wq = alloc_workqueue("khddsim",
				 WQ_MEM_RECLAIM | WQ_HIGHPRI | WQ_PERCPU, 1);
	if (!hc->wq) {
		ti->error = "Cannot allocate workqueue";
		ret = -ENOMEM;
		goto bad;
	}

	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;
	ti->accounts_remapped_io = true;
	ti->per_io_data_size = sizeof(struct hddsim_pb);
	return 0;

bad:
	hddsim_dtr(ti);
	return ret;
}

static void hddsim_status(struct dm_target *ti, status_type_t type,
			  unsigned int status_flags, char *result,
			  unsigned int maxlen)
{
	struct hddsim_c *hc = ti->private;
	unsigned long flags;
	unsigned int sz = 0;
	u64 r, w, s, k, sk, busy, pt, ff;
	unsigned int q, mq, fl;

	switch (type) {
	case STATUSTYPE_INFO:
		spin_lock_irqsave(&hc->lock, flags);
		r = hc->reads;
		w = hc->writes;
		s = hc->seq;
		k = hc->skips;
		sk = hc->seeks;
		busy = hc->busy_ns;
		pt = hc->passthrough;
		q = hc->queued;
		mq = hc->max_queued;
		ff = hc->flushes_failed;
		fl = hc->fail_flushes;
		spin_unlock_irqrestore(&hc->lock, flags);
		DMEMIT("reads %llu writes %llu seq %llu skips %llu seeks %llu busy_us %llu queued %u max_queued %u passthrough %llu flushes_failed %llu fail_flushes %u",
		       r, w, s, k, sk, div_u64(busy, NSEC_PER_USEC), q, mq, pt,
		       ff, fl);
		break;
	case STATUSTYPE_TABLE:
		DMEMIT("%s rpm %u seq_mbps %u avg_seek_us %u t2t_us %u stroke_mb %u",
		       hc->dev->name, hc->p.rpm, hc->p.seq_mbps,
		       hc->p.avg_seek_us, hc->p.t2t_us, hc->p.stroke_mb);
		break;
	case STATUSTYPE_IMA:
		*result = '\0';
		break;
	}
}

static int hddsim_message(struct dm_target *ti, unsigned int argc,
			  char **argv, char *result, unsigned int maxlen)
{
	struct hddsim_c *hc = ti->private;
	unsigned long flags;
	unsigned int n;

	if (argc != 2 || strcmp(argv[0], "fail_flushes") ||
	    kstrtouint(argv[1], 10, &n)) {
		DMERR("message: fail_flushes <n>");
		return -EINVAL;
	}
	spin_lock_irqsave(&hc->lock, flags);
	hc->fail_flushes = n;
	spin_unlock_irqrestore(&hc->lock, flags);
	return 0;
}

static int hddsim_iterate_devices(struct dm_target *ti,
				  iterate_devices_callout_fn fn, void *data)
{
	struct hddsim_c *hc = ti->private;

	return fn(ti, hc->dev, 0, ti->len, data);
}

static struct target_type hddsim_target = {
	.name		 = "hddsim",
	.version	 = {1, 1, 0},
	.module		 = THIS_MODULE,
	.ctr		 = hddsim_ctr,
	.dtr		 = hddsim_dtr,
	.map		 = hddsim_map,
	.end_io		 = hddsim_end_io,
	.presuspend	 = hddsim_presuspend,
	.presuspend_undo = hddsim_presuspend_undo,
	.resume		 = hddsim_resume,
	.status		 = hddsim_status,
	.message	 = hddsim_message,
	.iterate_devices = hddsim_iterate_devices,
};

static int __init dm_hddsim_init(void)
{
	int r = dm_register_target(&hddsim_target);

	if (r < 0)
		DMERR("register failed %d", r);
	return r;
}

static void __exit dm_hddsim_exit(void)
{
	dm_unregister_target(&hddsim_target);
}

module_init(dm_hddsim_init);
module_exit(dm_hddsim_exit);

MODULE_DESCRIPTION(DM_NAME " single-head hard disk model (test only)");
MODULE_LICENSE("GPL");
