/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio: the per-device context shared by the target glue
 * (dm-ssdprio.c) and the engine units in drivers/.
 */
#ifndef SSDPRIO_H
#define SSDPRIO_H

#include <linux/device-mapper.h>
#include <linux/mutex.h>
#include <linux/atomic.h>

#include "config.h"

#define DM_MSG_PREFIX "ssdprio"

/*
 * Counters shown by `dmsetup status`.  Monotonic, updated without locks;
 * readers accept that two counters may be a few bios apart.
 */
enum ssdp_stat {
	SSDP_ST_BIOS_NORMAL,
	SSDP_ST_BIOS_IDLE,
	SSDP_ST_READS,
	SSDP_ST_WRITES,
	SSDP_ST_FLUSHES,
	SSDP_ST_DISCARDS,
	SSDP_ST_NR,
};

struct ssdprio {
	struct dm_target *ti;
	struct dm_dev *origin;
	struct dm_dev *cache;

	/*
	 * cfg_lock serialises writers of @cfg (ctr, messages).  Readers on
	 * the I/O path take no lock: each field is a u32 written with
	 * WRITE_ONCE() and read with READ_ONCE().  Lock order: cfg_lock is
	 * taken before any engine lock, never inside one.
	 */
	struct mutex cfg_lock;
	struct ssdp_config cfg;

	atomic64_t stats[SSDP_ST_NR];
};

static inline void ssdp_count(struct ssdprio *sp, enum ssdp_stat st)
{
	atomic64_inc(&sp->stats[st]);
}

#endif
