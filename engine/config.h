/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio tunables: one table describes every key, so the table-line
 * parser, `dmsetup message`, `dmsetup table` and the docs cannot drift
 * apart.  Pure logic: compiles in the kernel and in user space.
 *
 * Locking: none inside.  The target serialises writers with its config
 * mutex and publishes each u32 with WRITE_ONCE(); hot-path readers use
 * READ_ONCE() on single fields and never need a consistent snapshot.
 */
#ifndef SSDP_CONFIG_H
#define SSDP_CONFIG_H

#include "ssdp_compat.h"

enum ssdp_write_policy {
	SSDP_WP_WRITEBACK,
	SSDP_WP_WRITETHROUGH,
	SSDP_WP_WRITEAROUND,
};

struct ssdp_config {
	/* Geometry: fixed for the life of the table. */
	u32 block_sectors;		/* block_size, sectors */
	u32 set_blocks;			/* set_size, blocks */
	u32 cache;			/* 0: scheduler only, no caching */

	/* Cache policy. */
	u32 write_policy;		/* enum ssdp_write_policy */
	u32 read_alloc;			/* allocate on read miss */
	u32 free_floor;			/* sets; 0 = automatic */
	u32 evict_wait_ms;		/* quiet time before writeback */
	u32 evict_inflight;		/* sets under writeback at once */
	u32 evict_max_wait_ms;		/* then evict under pressure; 0 never */
	u32 dirty_target_pct;		/* cleaning: dirty share above this */
	u32 dirty_max_age_s;		/* cleaning: dirty older than this */
	u32 clean_all_wait_ms;		/* quiet this long: clean it all; 0 off */
	u32 lockout_clean;		/* write back what locks blocks out */
	u32 writeback_gap;		/* clean blocks bridged, see evict.c */
	u32 seq_cutoff_kib;		/* no promotion past this in a stream */

	/* Scheduler. */
	u32 throttle;			/* 0: idle bios are not held */
	u32 idle_dispatch_interval_ms;
	u32 batch_mode_delay_ms;
	u32 idle_max_wait_ms;		/* 0 = idle may wait forever */
	u32 idle_batch_depth;		/* idle in flight in batch mode */
	u32 idle_alloc;			/* idle read misses allocate */
	u32 read_expire_ms;
	u32 write_expire_ms;
	u32 fifo_batch;
	u32 writes_starved;
	u32 normal_depth;		/* normal in flight before queueing */
	u32 idle_grace_ms;		/* normal quiet time before an idle */
	u32 idle_budget;		/* per mille; 0: no learnt gaps */
};

/* Where a key may be set. */
#define SSDP_CFG_CTR		0x1	/* table line */
#define SSDP_CFG_MSG		0x2	/* dmsetup message, at run time */

/* Reasons a set fails, for ti->error and log lines. */
#define SSDP_CFG_EUNKNOWN	1
#define SSDP_CFG_ERANGE		2
#define SSDP_CFG_ENOTRUNTIME	3

void ssdp_config_defaults(struct ssdp_config *cfg);

/*
 * Set @key to @value.  @where is SSDP_CFG_CTR or SSDP_CFG_MSG.
 * Returns 0, or -EINVAL with *@why set to a static message naming the
 * problem; @cfg is unchanged on failure.
 */
int ssdp_config_set(struct ssdp_config *cfg, const char *key,
		    const char *value, unsigned int where, const char **why);

/* True when @key names a tunable (so callers can tell keys from commands). */
bool ssdp_config_is_key(const char *key);

/*
 * The @i-th key of the table, in `dmsetup table` order, and where it may be
 * set (SSDP_CFG_*); NULL past the last (for listings such as completion).
 */
const char *ssdp_config_key_name(unsigned int i, unsigned int *where);

/*
 * Write "key value" pairs for every key that differs from its default,
 * separated by single spaces, into @buf (at most @len bytes, always
 * NUL-terminated).  Returns the number of pairs; the table line prefixes
 * 2 * that count as #feature_args.
 */
unsigned int ssdp_config_emit(const struct ssdp_config *cfg, char *buf,
			      size_t len);

/* Pure helper shared with other parsers: decimal u32, no sign, no junk. */
int ssdp_parse_u32(const char *s, u32 *out);

#endif
