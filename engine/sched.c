// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio origin-leg scheduler: the bio queues, in-flight accounting,
 * timer and worker around the pure policy in sched_policy.c.
 *
 * Only bios bound for the origin (the HDD) pass through here; SSD bios are
 * never held (the SSD is deep and fast, and holding them would only add
 * latency).  Normal bios take a fast path (counted, sent down at once)
 * while nothing normal is queued and fewer than normal_depth are in flight;
 * otherwise they wait in mq-deadline-like queues (sector-sorted rbtree +
 * FIFO with a deadline, one pair per direction).  Idle bios wait in one
 * sorted + FIFO pair until the policy lets them out.
 *
 * Contexts: .map (process context) decides and submits directly; end_io
 * (maybe hard irq) and internal submissions decide under the lock and put
 * what must go down on @ready for the worker; the hrtimer only queues the
 * worker.  Submission never happens under the lock.
 */
#include <linux/hrtimer.h>
#include <linux/ioprio.h>
#include <linux/ktime.h>
#include <linux/slab.h>

#include "ssdprio.h"

struct ssdp_sched {
	/*
	 * lock protects everything below and the policy state; taken
	 * inside cache_lock, never the other way round.
	 */
	spinlock_t lock;
	struct ssdp_sched_state st;
	/* normal read, normal write, idle, pressure (see sched_policy.h) */
	struct rb_root sorted[SSDP_SCHED_NR_QUEUES];
	struct list_head fifo[SSDP_SCHED_NR_QUEUES];
	u32 queued[SSDP_SCHED_NR_QUEUES];
	sector_t last_pos[SSDP_SCHED_NR_QUEUES]; /* end of the last dispatch */
	u32 normal_inflight;
	u32 idle_inflight;
	u32 budgeted_inflight;		/* of idle_inflight, charged ones */
	bool passthrough;		/* suspending: hold nothing */
	bool throttle;			/* cfg.throttle: hold idle bios */
	bool dead;			/* dtr: no worker any more */
	/*
	 * A normal bio waits behind our background I/O (a write deferred
	 * while its set is written back): that I/O is not held as idle,
	 * or the normal bio would wait for every other normal bio.
	 */
	bool boost;
	u64 idle_unheld;		/* idle sent without being held */
	/* idle bios released because a normal bio waits for them */
	u64 idle_boosted;
	struct list_head ready;		/* decided, for the worker to submit */
	struct hrtimer timer;		/* only queues dispatch_work */
	struct work_struct dispatch_work;
	struct workqueue_struct *wq;
	u64 timer_at;
};

/* struct ssdp_qnode.flags */
#define SSDP_QN_QUEUED		0x01	/* on one of the queues */
#define SSDP_QN_INTERNAL	0x02	/* our own bio: submit_bio_noacct */
#define SSDP_QN_INFLIGHT	0x04	/* counted in flight */
#define SSDP_QN_IDLE		0x08	/* counted as idle in flight */
#define SSDP_QN_HOUSEKEEPING	0x10	/* normal, but not a sign of activity */
#define SSDP_QN_HELD		0x20	/* on the idle queue */
#define SSDP_QN_BUDGETED	0x40	/* idle in flight, sent by the budget */

enum { SSDP_Q_READ, SSDP_Q_WRITE, SSDP_Q_IDLE, SSDP_Q_PRESSURE, SSDP_Q_NR };

static inline bool q_idle(int q)
{
	return q == SSDP_Q_IDLE || q == SSDP_Q_PRESSURE;
}

/* Timer slack: wake-ups need no better than this. */
#define SSDP_TIMER_SLACK_NS	(50 * NSEC_PER_USEC)

static inline sector_t qn_sector(const struct ssdp_qnode *qn)
{
	return qn->bio->bi_iter.bi_sector;
}

static struct ssdp_qnode *qn_of(struct rb_node *n)
{
	return rb_entry(n, struct ssdp_qnode, rb);
}

static void qn_insert(struct ssdp_sched *s, int q, struct ssdp_qnode *qn)
{
	struct rb_node **p = &s->sorted[q].rb_node, *parent = NULL;
	sector_t sec = qn_sector(qn);

	while (*p) {
		parent = *p;
		if (sec < qn_sector(qn_of(parent)))
			p = &parent->rb_left;
		else
			p = &parent->rb_right;
	}
	rb_link_node(&qn->rb, parent, p);
	rb_insert_color(&qn->rb, &s->sorted[q]);
	list_add_tail(&qn->fifo, &s->fifo[q]);
	s->queued[q]++;
	qn->flags |= SSDP_QN_QUEUED;
	if (q == SSDP_Q_IDLE)
		qn->flags |= SSDP_QN_HELD;
}

static void qn_remove(struct ssdp_sched *s, int q, struct ssdp_qnode *qn)
{
	rb_erase(&qn->rb, &s->sorted[q]);
	RB_CLEAR_NODE(&qn->rb);
	list_del_init(&qn->fifo);
	s->queued[q]--;
	qn->flags &= ~(SSDP_QN_QUEUED | SSDP_QN_HELD);
}

/* First queued bio at or after the end of the last dispatch. */
static struct ssdp_qnode *qn_next(struct ssdp_sched *s, int q)
{
	struct rb_node *n = s->sorted[q].rb_node;
	struct ssdp_qnode *best = NULL;

	while (n) {
		struct ssdp_qnode *qn = qn_of(n);

		if (qn_sector(qn) >= s->last_pos[q]) {
			best = qn;
			n = n->rb_left;
		} else {
			n = n->rb_right;
		}
	}
	return best;
}

/* @qn starts a short forward skip on from the end of the last dispatch. */
static bool qn_follows(struct ssdp_sched *s, int q, struct ssdp_qnode *qn)
{
	sector_t at = qn_sector(qn);

	return at >= s->last_pos[q] &&
	       at - s->last_pos[q] <= SSDP_SCHED_NEAR_SECTORS;
}

static struct ssdp_qnode *qn_head(struct ssdp_sched *s, int q)
{
	return list_first_entry_or_null(&s->fifo[q], struct ssdp_qnode, fifo);
}

static void count_inflight(struct ssdp_sched *s, struct ssdp_qnode *qn,
			   bool idle)
{
	qn->flags |= SSDP_QN_INFLIGHT;
	if (idle) {
		qn->flags |= SSDP_QN_IDLE;
		/* Its service time, for the policy (idle_budget). */
		qn->time = ktime_get_ns();
		s->idle_inflight++;
	} else {
		s->normal_inflight++;
	}
}

/* Take @qn off queue @q, count it in flight and add it to @out. */
/*
 * An idle bio sent on so that normal I/O stops waiting for it (inherited,
 * boosted, aged, the pressure share, suspend) competes as normal I/O below
 * us too: the device's own scheduler (mq-deadline, bfq) would otherwise
 * hold an idle-class bio again behind the normal I/O waiting for it.
 */
static void unidle(struct bio *bio)
{
	if (IOPRIO_PRIO_CLASS(bio->bi_ioprio) == IOPRIO_CLASS_IDLE)
		bio->bi_ioprio = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE,
						   IOPRIO_BE_NORM);
}

static void dispatch_locked(struct ssdp_sched *s, int q,
			    struct ssdp_qnode *qn, struct list_head *out)
{
	lockdep_assert_held(&s->lock);
	qn_remove(s, q, qn);
	s->last_pos[q] = bio_end_sector(qn->bio);
	count_inflight(s, qn, q_idle(q));
	list_add_tail(&qn->fifo, out);
}

/* Everything queued goes to @out: normal reads, writes, then idle. */
static void release_all_locked(struct ssdp_sched *s, struct list_head *out)
{
	struct ssdp_qnode *qn;
	int q;

	lockdep_assert_held(&s->lock);
	for (q = 0; q < SSDP_Q_NR; q++) {
		while ((qn = qn_head(s, q))) {
			if (q_idle(q))
				s->idle_unheld++;
			unidle(qn->bio);
			dispatch_locked(s, q, qn, out);
		}
	}
}

static void arm_timer_locked(struct ssdp_sched *s, u64 when)
{
	lockdep_assert_held(&s->lock);
	if (s->passthrough || s->dead)
		return;
	/*
	 * An earlier wake-up decides again and re-arms if it is too soon:
	 * moving the timer on every normal completion (the grace period
	 * follows each of them) would cost a clock reprogram per bio.
	 */
	if (hrtimer_is_queued(&s->timer) && s->timer_at <= when)
		return;
	s->timer_at = when;
	hrtimer_start_range_ns(&s->timer, ns_to_ktime(when),
			       SSDP_TIMER_SLACK_NS, HRTIMER_MODE_ABS);
}

/*
 * Ask the policy until it says wait; what it picks goes to @out (the
 * caller submits after unlocking).
 */
static void run_locked(struct ssdp_sched *s, u64 now, struct list_head *out)
{
	struct ssdp_sched_decision d;
	struct ssdp_sched_view v;
	struct ssdp_qnode *next[SSDP_Q_NR], *head[SSDP_Q_NR], *qn;
	int q;

	lockdep_assert_held(&s->lock);
	if (s->passthrough) {
		release_all_locked(s, out);
		return;
	}
	if (!s->throttle) {
		for (q = SSDP_Q_IDLE; q <= SSDP_Q_PRESSURE; q++) {
			while ((qn = qn_head(s, q))) {
				s->idle_unheld++;
				dispatch_locked(s, q, qn, out);
			}
		}
	}

	for (;;) {
		for (q = 0; q < SSDP_Q_NR; q++) {
			head[q] = qn_head(s, q);
			next[q] = head[q] ? qn_next(s, q) : NULL;
		}
		memset(&v, 0, sizeof(v));
		v.nr_read = s->queued[SSDP_Q_READ];
		v.nr_write = s->queued[SSDP_Q_WRITE];
		v.read_expired = head[SSDP_Q_READ] &&
				 head[SSDP_Q_READ]->time <= now;
		v.write_expired = head[SSDP_Q_WRITE] &&
				  head[SSDP_Q_WRITE]->time <= now;
		v.read_has_next = !!next[SSDP_Q_READ];
		v.write_has_next = !!next[SSDP_Q_WRITE];
		v.nr_idle = s->queued[SSDP_Q_IDLE];
		v.idle_has_next = !!next[SSDP_Q_IDLE];
		v.idle_oldest = head[SSDP_Q_IDLE] ? head[SSDP_Q_IDLE]->time : 0;
		v.nr_pressure = s->queued[SSDP_Q_PRESSURE];
		v.pressure_follows = head[SSDP_Q_PRESSURE] &&
			qn_follows(s, SSDP_Q_PRESSURE, head[SSDP_Q_PRESSURE]);
		v.normal_inflight = s->normal_inflight;
		v.idle_inflight = s->idle_inflight;

		d = ssdp_sched_decide(&s->st, now, &v);
		switch (d.act) {
		case SSDP_SCHED_NOTHING:
			return;
		case SSDP_SCHED_WAIT_UNTIL:
			arm_timer_locked(s, d.when);
			return;
		case SSDP_SCHED_NORMAL_READ_SORTED:
			q = SSDP_Q_READ;
			qn = next[q];
			break;
		case SSDP_SCHED_NORMAL_READ_FIFO:
			q = SSDP_Q_READ;
			qn = head[q];
			break;
		case SSDP_SCHED_NORMAL_WRITE_SORTED:
			q = SSDP_Q_WRITE;
			qn = next[q];
			break;
		case SSDP_SCHED_NORMAL_WRITE_FIFO:
			q = SSDP_Q_WRITE;
			qn = head[q];
			break;
		case SSDP_SCHED_IDLE_SORTED:
			q = SSDP_Q_IDLE;
			qn = next[q];
			break;
		case SSDP_SCHED_PRESSURE:
			q = SSDP_Q_PRESSURE;
			qn = head[q];
			break;
		default:	/* IDLE_FIFO, IDLE_AS_NORMAL */
			q = SSDP_Q_IDLE;
			qn = head[q];
			break;
		}
		if (WARN_ON_ONCE(!qn))
			return;
		if (d.act == SSDP_SCHED_IDLE_AS_NORMAL ||
		    d.act == SSDP_SCHED_PRESSURE)
			unidle(qn->bio);
		dispatch_locked(s, q, qn, out);
		if (d.budgeted) {
			qn->flags |= SSDP_QN_BUDGETED;
			s->budgeted_inflight++;
		}
	}
}

/* Submit what run_locked() chose; true if @self was among them. */
static bool submit_list(struct list_head *list, struct bio *self)
{
	struct ssdp_qnode *qn, *tmp;
	bool found = false;

	list_for_each_entry_safe(qn, tmp, list, fifo) {
		struct bio *bio = qn->bio;

		/* The bio may complete at once: touch no qn after this. */
		list_del_init(&qn->fifo);
		if (bio == self)
			found = true;
		else if (qn->flags & SSDP_QN_INTERNAL)
			submit_bio_noacct(bio);
		else
			dm_submit_bio_remap(bio, NULL);
	}
	return found;
}

static void kick(struct ssdp_sched *s)
{
	if (!s->dead)
		queue_work(s->wq, &s->dispatch_work);
}

static void dispatch_work_fn(struct work_struct *work)
{
	struct ssdp_sched *s = container_of(work, struct ssdp_sched,
					    dispatch_work);
	unsigned long flags;
	LIST_HEAD(out);

	spin_lock_irqsave(&s->lock, flags);
	list_splice_init(&s->ready, &out);
	run_locked(s, ktime_get_ns(), &out);
	spin_unlock_irqrestore(&s->lock, flags);
	submit_list(&out, NULL);
}

static enum hrtimer_restart timer_fn(struct hrtimer *timer)
{
	struct ssdp_sched *s = container_of(timer, struct ssdp_sched, timer);
	unsigned long flags;
	bool busy;

	/*
	 * The grace timer is armed when normal I/O drains and is often
	 * overtaken by the next normal bio: with one in flight nothing idle
	 * may go, and its completion decides again.  Waking the worker for
	 * nothing would cost the normal stream CPU on every long request.
	 */
	spin_lock_irqsave(&s->lock, flags);
	busy = s->normal_inflight && !s->passthrough &&
	       !s->st.k.idle_max_wait_ns;
	spin_unlock_irqrestore(&s->lock, flags);
	if (!busy)
		kick(s);
	return HRTIMER_NORESTART;
}

/* Knobs from the config table (ms there, ns in the policy). */
static void read_knobs(struct ssdprio *sp, struct ssdp_sched_knobs *k)
{
	const struct ssdp_config *c = &sp->cfg;

	ssdp_sched_default_knobs(k);
	k->read_expire_ns = (u64)READ_ONCE(c->read_expire_ms) * SSDP_NS_PER_MS;
	k->write_expire_ns = (u64)READ_ONCE(c->write_expire_ms) *
			     SSDP_NS_PER_MS;
	k->fifo_batch = READ_ONCE(c->fifo_batch);
	k->writes_starved = READ_ONCE(c->writes_starved);
	k->normal_depth = READ_ONCE(c->normal_depth);
	k->idle_interval_ns = (u64)READ_ONCE(c->idle_dispatch_interval_ms) *
			      SSDP_NS_PER_MS;
	k->idle_grace_ns = (u64)READ_ONCE(c->idle_grace_ms) * SSDP_NS_PER_MS;
	k->batch_delay_ns = (u64)READ_ONCE(c->batch_mode_delay_ms) *
			    SSDP_NS_PER_MS;
	k->idle_batch_depth = READ_ONCE(c->idle_batch_depth);
	k->idle_max_wait_ns = (u64)READ_ONCE(c->idle_max_wait_ms) *
			      SSDP_NS_PER_MS;
	k->idle_budget = READ_ONCE(c->idle_budget);
}

int ssdp_sched_init_dev(struct ssdprio *sp)
{
	struct ssdp_sched *s;
	struct ssdp_sched_knobs k;
	int q;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	sp->sched = s;
	spin_lock_init(&s->lock);
	for (q = 0; q < SSDP_Q_NR; q++) {
		s->sorted[q] = RB_ROOT;
		INIT_LIST_HEAD(&s->fifo[q]);
	}
	INIT_LIST_HEAD(&s->ready);
	INIT_WORK(&s->dispatch_work, dispatch_work_fn);
	hrtimer_setup(&s->timer, timer_fn, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	/* The worker submits I/O: it must make progress under reclaim. */
	s->wq = alloc_workqueue("kssdp_sched",
				WQ_MEM_RECLAIM | WQ_HIGHPRI | WQ_PERCPU, 1);
	if (!s->wq) {
		kfree(s);
		sp->sched = NULL;
		return -ENOMEM;
	}
	read_knobs(sp, &k);
	ssdp_sched_init(&s->st, &k, ktime_get_ns());
	s->throttle = READ_ONCE(sp->cfg.throttle);
	return 0;
}

/*
 * dtr: dm core ran presuspend/postsuspend already, so nothing is queued.
 * Stop the timer and the worker for good; a late internal bio goes
 * straight down.
 */
void ssdp_sched_exit_dev(struct ssdprio *sp)
{
	struct ssdp_sched *s = sp->sched;
	unsigned long flags;
	LIST_HEAD(out);

	spin_lock_irqsave(&s->lock, flags);
	s->passthrough = true;
	s->dead = true;
	spin_unlock_irqrestore(&s->lock, flags);
	hrtimer_cancel(&s->timer);
	/* Runs a pending dispatch (it releases everything) before dying. */
	destroy_workqueue(s->wq);
	s->wq = NULL;
	/* Whatever came in between (nothing, normally) goes down now. */
	spin_lock_irqsave(&s->lock, flags);
	list_splice_init(&s->ready, &out);
	release_all_locked(s, &out);
	spin_unlock_irqrestore(&s->lock, flags);
	WARN_ON_ONCE(!list_empty(&out));
	submit_list(&out, NULL);
	kfree(s);
	sp->sched = NULL;
}

/*
 * A normal bio arrives: true when it may go down at once (then counted in
 * flight): nothing normal queued ahead of it and room on the device.
 */
static bool normal_arrival_locked(struct ssdp_sched *s, struct ssdp_qnode *qn,
				  u64 now)
{
	lockdep_assert_held(&s->lock);
	if (qn->flags & SSDP_QN_HOUSEKEEPING) {
		ssdp_sched_housekeeping_arrival(&s->st);
	} else {
		ssdp_sched_normal_arrival(&s->st, now);
		ssdp_sched_normal_seen(&s->st, now, s->idle_inflight != 0,
				       s->budgeted_inflight != 0);
		ssdp_sched_normal_position(&s->st, qn->bio->bi_iter.bi_sector,
					   bio_sectors(qn->bio));
	}
	if (!s->passthrough &&
	    !ssdp_sched_fast_path(&s->st, s->queued[SSDP_Q_READ] +
				  s->queued[SSDP_Q_WRITE], s->normal_inflight))
		return false;
	count_inflight(s, qn, false);
	return true;
}

int ssdp_sched_map(struct ssdprio *sp, struct bio *bio, bool idle)
{
	struct ssdp_sched *s = sp->sched;
	struct ssdp_qnode *qn = &ssdp_pb(bio)->qn;
	u64 now = ktime_get_ns();
	unsigned long flags;
	LIST_HEAD(out);
	int q;

	ssdp_pb(bio)->origin = true;
	qn->bio = bio;
	qn->flags = 0;
	if (bio->bi_opf & SSDP_NEVER_IDLE)
		idle = false;
	if (!idle && ssdp_pb(bio)->housekeeping)
		qn->flags |= SSDP_QN_HOUSEKEEPING;

	spin_lock_irqsave(&s->lock, flags);
	if (!idle) {
		if (normal_arrival_locked(s, qn, now)) {
			spin_unlock_irqrestore(&s->lock, flags);
			return DM_MAPIO_REMAPPED;
		}
		if (op_is_write(bio_op(bio))) {
			q = SSDP_Q_WRITE;
			qn->time = ssdp_sched_deadline(&s->st, SSDP_DIR_WRITE,
						       now);
		} else {
			q = SSDP_Q_READ;
			qn->time = ssdp_sched_deadline(&s->st, SSDP_DIR_READ,
						       now);
		}
	} else {
		if (s->passthrough || !s->throttle || qn->inherit) {
			if (s->passthrough || qn->inherit)
				unidle(bio);
			count_inflight(s, qn, true);
			if (qn->inherit)
				s->idle_boosted++;
			else
				s->idle_unheld++;
			spin_unlock_irqrestore(&s->lock, flags);
			return DM_MAPIO_REMAPPED;
		}
		q = SSDP_Q_IDLE;
		qn->time = now;
	}
	qn_insert(s, q, qn);
	run_locked(s, now, &out);
	spin_unlock_irqrestore(&s->lock, flags);

	/* .map runs in process context: submit here, no worker hop. */
	return submit_list(&out, bio) ? DM_MAPIO_REMAPPED :
					DM_MAPIO_SUBMITTED;
}

/* A bio counted in flight completed (any context). */
static void complete_qn(struct ssdprio *sp, struct ssdp_qnode *qn)
{
	struct ssdp_sched *s = sp->sched;
	u64 now = ktime_get_ns();
	unsigned long flags;
	bool work;

	spin_lock_irqsave(&s->lock, flags);
	if (WARN_ON_ONCE(!(qn->flags & SSDP_QN_INFLIGHT))) {
		spin_unlock_irqrestore(&s->lock, flags);
		return;
	}
	if (qn->flags & SSDP_QN_IDLE) {
		/* Alone on the device, its time is a service time. */
		if (s->idle_inflight == 1 && !s->normal_inflight)
			ssdp_sched_idle_complete(&s->st, now, qn->time);
		s->idle_inflight--;
		if (qn->flags & SSDP_QN_BUDGETED)
			s->budgeted_inflight--;
	} else {
		s->normal_inflight--;
		if (!(qn->flags & SSDP_QN_HOUSEKEEPING))
			ssdp_sched_normal_complete(&s->st, now);
		if (!s->normal_inflight && !s->queued[SSDP_Q_READ] &&
		    !s->queued[SSDP_Q_WRITE])
			ssdp_sched_normal_drained(&s->st, now);
	}
	qn->flags &= ~(SSDP_QN_INFLIGHT | SSDP_QN_IDLE | SSDP_QN_BUDGETED |
			SSDP_QN_HOUSEKEEPING);
	if (s->queued[SSDP_Q_READ] || s->queued[SSDP_Q_WRITE] ||
	    s->queued[SSDP_Q_IDLE] || s->queued[SSDP_Q_PRESSURE])
		run_locked(s, now, &s->ready);
	work = !list_empty(&s->ready);
	if (work)
		kick(s);
	spin_unlock_irqrestore(&s->lock, flags);
}

void ssdp_sched_end_io(struct ssdprio *sp, struct bio *bio)
{
	complete_qn(sp, &ssdp_pb(bio)->qn);
}

/*
 * Background I/O of our own (writeback): idle class; SSDP_BG_PRESSURE in
 * the pressure queue (the policy's guaranteed share); SSDP_BG_NORMAL (a
 * drain) queued as a normal write, so that it competes with the user's
 * I/O under the deadline policy instead of waiting for quiet.  Any
 * context; the worker submits it, so the caller may hold locks.
 */
void ssdp_sched_submit_internal(struct ssdprio *sp, struct ssdp_qnode *qn,
				enum ssdp_bg_class class)
{
	bool normal = class == SSDP_BG_NORMAL;
	struct ssdp_sched *s = sp->sched;
	u64 now = ktime_get_ns();
	unsigned long flags;
	bool direct = false;

	qn->flags = SSDP_QN_INTERNAL;
	qn->inherit = false;
	RB_CLEAR_NODE(&qn->rb);
	INIT_LIST_HEAD(&qn->fifo);

	spin_lock_irqsave(&s->lock, flags);
	if (s->dead) {
		/* After dtr's exit: no worker left, nothing held. */
		count_inflight(s, qn, !normal);
		if (!normal)
			s->idle_unheld++;
		direct = true;
	} else if (normal) {
		if (normal_arrival_locked(s, qn, now)) {
			list_add_tail(&qn->fifo, &s->ready);
		} else {
			qn->time = ssdp_sched_deadline(&s->st, SSDP_DIR_WRITE,
						       now);
			qn_insert(s, SSDP_Q_WRITE, qn);
			run_locked(s, now, &s->ready);
		}
	} else if (s->passthrough || !s->throttle || s->boost) {
		if (s->passthrough || s->boost)
			unidle(qn->bio);
		count_inflight(s, qn, true);
		if (s->boost)
			s->idle_boosted++;
		else
			s->idle_unheld++;
		list_add_tail(&qn->fifo, &s->ready);
	} else {
		qn->time = now;
		qn_insert(s, class == SSDP_BG_PRESSURE ? SSDP_Q_PRESSURE :
			  SSDP_Q_IDLE, qn);
		run_locked(s, now, &s->ready);
	}
	if (!list_empty(&s->ready))
		kick(s);
	spin_unlock_irqrestore(&s->lock, flags);
	if (direct)
		submit_bio_noacct(qn->bio);
}

void ssdp_sched_internal_done(struct ssdprio *sp, struct ssdp_qnode *qn)
{
	complete_qn(sp, qn);
}

/*
 * Priority inheritance for our background I/O: while @on, a normal bio
 * waits for it, so what is queued goes down now and nothing new is held.
 * Any context (cache_lock may be held: it is taken outside ours).
 */
void ssdp_sched_boost(struct ssdprio *sp, bool on)
{
	struct ssdp_sched *s = sp->sched;
	struct ssdp_qnode *qn, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&s->lock, flags);
	s->boost = on;
	if (on) {
		list_for_each_entry_safe(qn, tmp, &s->fifo[SSDP_Q_IDLE], fifo) {
			if (!(qn->flags & SSDP_QN_INTERNAL))
				continue;
			s->idle_boosted++;
			unidle(qn->bio);
			dispatch_locked(s, SSDP_Q_IDLE, qn, &s->ready);
		}
		while ((qn = qn_head(s, SSDP_Q_PRESSURE))) {
			s->idle_boosted++;
			unidle(qn->bio);
			dispatch_locked(s, SSDP_Q_PRESSURE, qn, &s->ready);
		}
	}
	if (!list_empty(&s->ready))
		kick(s);
	spin_unlock_irqrestore(&s->lock, flags);
}

/*
 * Priority inheritance for a user's idle bio: a normal write of the same
 * blocks waits for it (the write range lock), so it is not held, and if
 * it is held already it goes now.  It may not have reached the scheduler
 * yet: @inherit, under our lock, tells ssdp_sched_map then.  The caller
 * holds cache_lock, which keeps the waited-for bio from completing.
 */
void ssdp_sched_inherit(struct ssdprio *sp, struct ssdp_qnode *qn)
{
	struct ssdp_sched *s = sp->sched;
	unsigned long flags;

	spin_lock_irqsave(&s->lock, flags);
	qn->inherit = true;
	if (qn->flags & SSDP_QN_HELD) {
		s->idle_boosted++;
		unidle(qn->bio);
		dispatch_locked(s, SSDP_Q_IDLE, qn, &s->ready);
		kick(s);
	}
	spin_unlock_irqrestore(&s->lock, flags);
}

/*
 * Held bios count as in flight for dm's suspend: release them all and hold
 * nothing until resume, or `dmsetup suspend` would wait forever.
 */
void ssdp_sched_presuspend(struct ssdprio *sp)
{
	struct ssdp_sched *s = sp->sched;
	unsigned long flags;
	LIST_HEAD(out);

	spin_lock_irqsave(&s->lock, flags);
	s->passthrough = true;
	list_splice_init(&s->ready, &out);
	release_all_locked(s, &out);
	spin_unlock_irqrestore(&s->lock, flags);
	hrtimer_cancel(&s->timer);
	submit_list(&out, NULL);
}

/*
 * The cache engine's postsuspend ran before this (its writeback passed
 * straight through).  Leave no timer or worker running while suspended.
 */
void ssdp_sched_postsuspend(struct ssdprio *sp)
{
	struct ssdp_sched *s = sp->sched;

	hrtimer_cancel(&s->timer);
	flush_work(&s->dispatch_work);
}

/* resume and presuspend_undo: throttle again. */
void ssdp_sched_resume(struct ssdprio *sp)
{
	struct ssdp_sched *s = sp->sched;
	unsigned long flags;

	spin_lock_irqsave(&s->lock, flags);
	s->passthrough = false;
	spin_unlock_irqrestore(&s->lock, flags);
	kick(s);
}

/* Called under cfg_lock after a message changed a knob. */
void ssdp_sched_apply_config(struct ssdprio *sp)
{
	struct ssdp_sched *s = sp->sched;
	struct ssdp_sched_knobs k;
	unsigned long flags;

	read_knobs(sp, &k);
	spin_lock_irqsave(&s->lock, flags);
	s->st.k = k;
	s->throttle = READ_ONCE(sp->cfg.throttle);
	spin_unlock_irqrestore(&s->lock, flags);
	/* New intervals or throttle off: decide again now. */
	kick(s);
}

unsigned int ssdp_sched_status(struct ssdprio *sp, char *result,
			       unsigned int maxlen, unsigned int sz)
{
	struct ssdp_sched *s = sp->sched;
	struct ssdp_sched_view v = { 0 };
	u32 qr, qw, qi, ni, ii;
	u64 disp, entries, promoted, boosted, pressure, gaps, hk, burst;
	u64 injected, met, charged;
	enum ssdp_sched_mode mode;
	unsigned long flags;

	spin_lock_irqsave(&s->lock, flags);
	/*
	 * Batch mode is entered when the policy next looks; with nothing
	 * queued let it look now, so the mode shown is current.  (With
	 * nothing queued decide() can only change the mode.)
	 */
	if (!s->passthrough && !s->queued[SSDP_Q_READ] &&
	    !s->queued[SSDP_Q_WRITE] && !s->queued[SSDP_Q_IDLE] &&
	    !s->queued[SSDP_Q_PRESSURE]) {
		v.normal_inflight = s->normal_inflight;
		v.idle_inflight = s->idle_inflight;
		ssdp_sched_decide(&s->st, ktime_get_ns(), &v);
	}
	qr = s->queued[SSDP_Q_READ];
	qw = s->queued[SSDP_Q_WRITE];
	qi = s->queued[SSDP_Q_IDLE] + s->queued[SSDP_Q_PRESSURE];
	ni = s->normal_inflight;
	ii = s->idle_inflight;
	disp = s->st.idle_dispatched + s->idle_unheld;
	entries = s->st.batch_entries;
	promoted = s->st.idle_promoted;
	boosted = s->idle_boosted;
	pressure = s->st.pressure_dispatched;
	gaps = s->st.pressure_gaps;
	burst = s->st.pressure_burst;
	hk = s->st.housekeeping;
	injected = s->st.idle_injected;
	met = s->st.normal_met_idle;
	charged = s->st.normal_met_charged;
	mode = ssdp_sched_mode(&s->st);
	spin_unlock_irqrestore(&s->lock, flags);

	DMEMIT(" sched_mode %s queued_normal_reads %u queued_normal_writes %u",
	       ssdp_sched_mode_name(mode), qr, qw);
	DMEMIT(" queued_idle %u idle_inflight %u normal_inflight %u",
	       qi, ii, ni);
	DMEMIT(" idle_dispatched %llu batch_entries %llu idle_promoted %llu",
	       (unsigned long long)disp, (unsigned long long)entries,
	       (unsigned long long)promoted);
	DMEMIT(" idle_boosted %llu pressure_dispatched %llu",
	       (unsigned long long)boosted, (unsigned long long)pressure);
	DMEMIT(" normal_housekeeping %llu pressure_gaps %llu",
	       (unsigned long long)hk, (unsigned long long)gaps);
	DMEMIT(" pressure_burst %llu idle_injected %llu normal_met_idle %llu",
	       (unsigned long long)burst, (unsigned long long)injected,
	       (unsigned long long)met);
	DMEMIT(" normal_met_charged %llu", (unsigned long long)charged);
	return sz;
}
