// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio origin-leg scheduler.  Placeholder: passes every bio straight
 * down; the deadline + idle queues replace it.
 */
#include "ssdprio.h"

int ssdp_sched_init_dev(struct ssdprio *sp)
{
	spin_lock_init(&sp->sched.lock);
	return 0;
}

void ssdp_sched_exit_dev(struct ssdprio *sp)
{
}

int ssdp_sched_map(struct ssdprio *sp, struct bio *bio, bool idle)
{
	ssdp_pb(bio)->origin = true;
	return DM_MAPIO_REMAPPED;
}

void ssdp_sched_end_io(struct ssdprio *sp, struct bio *bio)
{
}

void ssdp_sched_submit_internal(struct ssdprio *sp, struct ssdp_qnode *qn)
{
	submit_bio_noacct(qn->bio);
}

void ssdp_sched_internal_done(struct ssdprio *sp, struct ssdp_qnode *qn)
{
}

void ssdp_sched_presuspend(struct ssdprio *sp)
{
}

void ssdp_sched_postsuspend(struct ssdprio *sp)
{
}

void ssdp_sched_resume(struct ssdprio *sp)
{
}

void ssdp_sched_apply_config(struct ssdprio *sp)
{
}

unsigned int ssdp_sched_status(struct ssdprio *sp, char *result,
			       unsigned int maxlen, unsigned int sz)
{
	return sz;
}
