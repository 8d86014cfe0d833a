// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio bio classification: normal or idle.
 */
#include <linux/ioprio.h>

#include "ssdprio.h"

/*
 * The class decides everything downstream, so it is fixed once, here, in
 * the submitter's context: a bio with no class of its own takes the
 * submitting task's (ionice -c3 buffered reads arrive that way), and the
 * answer is written back so a bio deferred to a worker keeps it.
 */
bool ssdp_classify_idle(struct ssdprio *sp, struct bio *bio)
{
	int prio = bio->bi_ioprio;

	if (IOPRIO_PRIO_CLASS(prio) == IOPRIO_CLASS_NONE) {
		prio = get_current_ioprio();
		bio->bi_ioprio = prio;
	}
	return IOPRIO_PRIO_CLASS(prio) == IOPRIO_CLASS_IDLE;
}

int ssdp_idle_cgroup_add(struct ssdprio *sp, const char *path,
			 const char **why)
{
	*why = "idle_cgroup is not supported yet";
	return -EINVAL;
}

unsigned int ssdp_idle_cgroup_emit(struct ssdprio *sp, char *buf, size_t len)
{
	return 0;
}

void ssdp_idle_cgroup_clear(struct ssdprio *sp)
{
}
