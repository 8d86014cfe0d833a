// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio: an SSD write-back cache in front of an HDD, with idle-class
 * I/O held back until the device is quiet.
 *
 * This file is the device-mapper glue: table parsing, map, status,
 * messages and the suspend hooks.  The engine lives in engine/.
 *
 * Table: <origin_dev> <cache_dev> [<#feature_args> <feature_arg>...]
 * where a feature arg is a <key> <value> pair or a flag ("format", "force").
 */
#include <linux/module.h>
#include <linux/init.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/ioprio.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "engine/ssdprio.h"

#define SSDP_MAX_FEATURE_ARGS 64
/* docs/target.md, "Status": bumped when a key changes its meaning. */
#define SSDP_STATUS_VERSION 1

static const char * const ssdp_stat_names[SSDP_ST_NR] = {
	[SSDP_ST_BIOS_NORMAL] = "bios_normal",
	[SSDP_ST_BIOS_IDLE] = "bios_idle",
	[SSDP_ST_READS] = "reads",
	[SSDP_ST_WRITES] = "writes",
	[SSDP_ST_FLUSHES] = "flushes",
	[SSDP_ST_DISCARDS] = "discards",
	[SSDP_ST_READ_HITS] = "read_hits",
	[SSDP_ST_READ_MISSES] = "read_misses",
	[SSDP_ST_WRITE_HITS] = "write_hits",
	[SSDP_ST_WRITE_MISSES] = "write_misses",
	[SSDP_ST_BYPASSED] = "bypassed",
	[SSDP_ST_DEFERRED] = "deferred",
	[SSDP_ST_PROMOTIONS] = "promotions",
	[SSDP_ST_PROMOTIONS_SKIPPED] = "promotions_skipped",
	[SSDP_ST_SEQ_SKIPPED] = "seq_skipped",
	[SSDP_ST_BLOCKS_WRITTEN_BACK] = "blocks_written_back",
	[SSDP_ST_SSD_READ_ERRORS] = "ssd_read_errors",
	[SSDP_ST_SSD_WRITE_ERRORS] = "ssd_write_errors",
	[SSDP_ST_ORIGIN_READ_ERRORS] = "origin_read_errors",
	[SSDP_ST_ORIGIN_WRITE_ERRORS] = "origin_write_errors",
	[SSDP_ST_READ_FALLBACKS] = "read_fallbacks",
	[SSDP_ST_WRITEBACK_ERRORS] = "writeback_errors",
	[SSDP_ST_LOCKOUTS] = "lockouts",
	[SSDP_ST_WRITEBACK_YIELDS] = "writeback_yields",
	[SSDP_ST_WRITEBACK_WRITES] = "writeback_writes",
	[SSDP_ST_WRITEBACK_BRIDGED] = "writeback_bridged_blocks",
	[SSDP_ST_WRITES_BESIDE_WRITEBACK] = "writes_beside_writeback",
	[SSDP_ST_WRITES_AROUND_WRITEBACK] = "writes_around_writeback",
	[SSDP_ST_BYTES_NORMAL] = "bytes_normal",
	[SSDP_ST_BYTES_IDLE] = "bytes_idle",
};

/* origin_id: 32 hex digits, not all zero (zero means "none"). */
static int ssdp_parse_origin_id(struct ssdprio *sp, const char *value,
				const char **why)
{
	u8 id[sizeof(sp->origin_id)];

	if (strlen(value) != 2 * sizeof(id) ||
	    hex2bin(id, value, sizeof(id)) || !memchr_inv(id, 0, sizeof(id))) {
		*why = "origin_id must be 32 hex digits, not all zero";
		return -EINVAL;
	}
	memcpy(sp->origin_id, id, sizeof(id));
	return 0;
}

static int ssdp_parse_features(struct ssdprio *sp, struct dm_arg_set *as,
			       char **error)
{
	static const struct dm_arg feature_count = {
		0, SSDP_MAX_FEATURE_ARGS, "Invalid number of feature arguments"
	};
	unsigned int argc;
	int r;

	if (!as->argc)
		return 0;
	r = dm_read_arg_group(&feature_count, as, &argc, error);
	if (r)
		return r;
	while (argc) {
		const char *key = dm_shift_arg(as);
		const char *value;
		const char *why;

		argc--;
		/* The one flag without a value: initialise a blank cache. */
		if (!strcmp(key, "format")) {
			sp->format = true;
			continue;
		}
		/* cache off over a cache with dirty blocks: discard them. */
		if (!strcmp(key, "force")) {
			sp->force = true;
			continue;
		}
		if (!argc) {
			*error = "Feature arguments must be key value pairs";
			return -EINVAL;
		}
		value = dm_shift_arg(as);
		argc--;
		if (!strcmp(key, "idle_cgroup")) {
			mutex_lock(&sp->cfg_lock);
			r = ssdp_idle_cgroup_add(sp, value, &why);
			mutex_unlock(&sp->cfg_lock);
		} else if (!strcmp(key, "origin_id"))
			r = ssdp_parse_origin_id(sp, value, &why);
		else
			r = ssdp_config_set(&sp->cfg, key, value,
					    SSDP_CFG_CTR, &why);
		if (!r && !strcmp(key, "block_size"))
			sp->block_size_given = true;
		if (!r && !strcmp(key, "set_size"))
			sp->set_size_given = true;
		if (r) {
			DMERR("feature %.64s %.64s: %s", key, value, why);
			*error = (char *)why;
			return r;
		}
	}
	if (as->argc) {
		*error = "Too many arguments";
		return -EINVAL;
	}
	return 0;
}

/*
 * Devices in use by a caching ssdprio, each with the mapped device that
 * uses it.  dm lets any number of tables open one device, but two caches
 * over one SSD (or two caches in front of one origin) would overwrite each
 * other's blocks and metadata.  A table reload builds the new table while
 * the old one is live: a device held by the same mapped device is no
 * conflict, so claims are counted.
 *
 * ssdp_claims_lock protects ssdp_claims and ssdp_tables; in ctr, dtr and
 * preresume, outside every lock of a table (it takes a table's cache_lock
 * inside).
 */
struct ssdp_claim {
	struct list_head list;
	dev_t dev;
	struct mapped_device *md;
	unsigned int refs;
};

static LIST_HEAD(ssdp_claims);
/*
 * Every constructed ssdprio table, until its dtr: the tables of one mapped
 * device during a reload (the old one's dtr runs after the new one has
 * resumed).  ssdp_claims_lock protects it too.
 */
static LIST_HEAD(ssdp_tables);
static DEFINE_MUTEX(ssdp_claims_lock);

static struct ssdp_claim *ssdp_claim_find(dev_t dev)
{
	struct ssdp_claim *c;

	list_for_each_entry(c, &ssdp_claims, list)
		if (c->dev == dev)
			return c;
	return NULL;
}

static void ssdp_unclaim_one(dev_t dev)
{
	struct ssdp_claim *c = ssdp_claim_find(dev);

	if (c && !--c->refs) {
		list_del(&c->list);
		kfree(c);
	}
}

/* Claim the origin and the cache for this table's mapped device. */
static int ssdp_claim(struct ssdprio *sp, char **error)
{
	struct mapped_device *md = dm_table_get_md(sp->ti->table);
	dev_t devs[2] = { sp->origin->bdev->bd_dev, sp->cache->bdev->bd_dev };
	struct ssdp_claim *c, *fresh[2] = { NULL, NULL };
	int i;

	for (i = 0; i < 2; i++) {
		fresh[i] = kzalloc(sizeof(*fresh[i]), GFP_KERNEL);
		if (!fresh[i]) {
			kfree(fresh[0]);
			*error = "Cannot allocate context";
			return -ENOMEM;
		}
	}
	mutex_lock(&ssdp_claims_lock);
	for (i = 0; i < 2; i++) {
		c = ssdp_claim_find(devs[i]);
		if (c && c->md != md) {
			mutex_unlock(&ssdp_claims_lock);
			kfree(fresh[0]);
			kfree(fresh[1]);
			*error = i ? "Cache device is in use by another ssdprio device" :
				     "Origin device is in use by another ssdprio device";
			return -EBUSY;
		}
	}
	for (i = 0; i < 2; i++) {
		c = ssdp_claim_find(devs[i]);
		if (!c) {
			c = fresh[i];
			fresh[i] = NULL;
			c->dev = devs[i];
			c->md = md;
			list_add(&c->list, &ssdp_claims);
		}
		c->refs++;
	}
	mutex_unlock(&ssdp_claims_lock);
	kfree(fresh[0]);
	kfree(fresh[1]);
	sp->claimed = true;
	return 0;
}

/* Is @dev claimed by a table of @md (a live one, when this is a reload)? */
static bool ssdp_claimed_by(dev_t dev, struct mapped_device *md)
{
	struct ssdp_claim *c;
	bool r;

	mutex_lock(&ssdp_claims_lock);
	c = ssdp_claim_find(dev);
	r = c && c->md == md;
	mutex_unlock(&ssdp_claims_lock);
	return r;
}

static void ssdp_unclaim(struct ssdprio *sp)
{
	if (!sp->claimed)
		return;
	mutex_lock(&ssdp_claims_lock);
	ssdp_unclaim_one(sp->origin->bdev->bd_dev);
	ssdp_unclaim_one(sp->cache->bdev->bd_dev);
	mutex_unlock(&ssdp_claims_lock);
	sp->claimed = false;
}

/*
 * First resume of a table replacing a caching table of this device over
 * the same origin but another cache (a reload naming another SSD, or
 * "cache off" naming another device): that table's dirty blocks would be
 * left on a cache nothing reads, and this table would serve the origin's
 * older data in their place, and a later load of that cache would write
 * them back over newer data.  The old table is suspended by now (dm
 * suspends before the swap, and destroys it after this resume): its dirty
 * count is final.  Giving them up is "cache off" naming that cache with
 * force, which marks it bypassed.  And this table's cache was away from
 * the origin meanwhile: its first resume does not trust it
 * (cache_was_away, meta.c).
 */
static int ssdp_swap_check(struct ssdprio *sp)
{
	struct mapped_device *md = dm_table_get_md(sp->ti->table);
	struct ssdprio *old;
	unsigned long flags;
	u64 dirty = 0;
	int r = 0;

	if (sp->swap_checked)
		return 0;
	mutex_lock(&ssdp_claims_lock);
	list_for_each_entry(old, &ssdp_tables, tables_entry) {
		if (old == sp || dm_table_get_md(old->ti->table) != md ||
		    old->origin->bdev != sp->origin->bdev ||
		    old->cache->bdev == sp->cache->bdev ||
		    !READ_ONCE(old->served))
			continue;
		/*
		 * The origin was served without this table's cache: what
		 * that cache holds may be older than the origin now.
		 */
		sp->cache_was_away = true;
		if (!old->caching)
			continue;
		spin_lock_irqsave(&old->cache_lock, flags);
		dirty = old->fmap.total_dirty;
		spin_unlock_irqrestore(&old->cache_lock, flags);
		if (!dirty)
			continue;
		DMERR("%s: the table replaced holds %llu dirty blocks on cache %pg, which this table does not use: refusing to resume (load that table again and drain it first, as ssdprio-tool detach does; to give them up, 'cache off' naming that cache with 'force')",
		      ssdp_name(sp), dirty, old->cache->bdev);
		r = -EBUSY;
		break;
	}
	mutex_unlock(&ssdp_claims_lock);
	if (!r)
		sp->swap_checked = true;
	return r;
}

/*
 * A state in the status line changed (ssdp_state_event).  The table's
 * event callback is set only while it is bound to its device, under dm's
 * event mutex: before the first resume and after the swap that replaces
 * it, this does nothing.
 */
static void ssdp_event_work(struct work_struct *work)
{
	struct ssdprio *sp = container_of(work, struct ssdprio, event_work);

	dm_table_event(sp->ti->table);
}

static int ssdp_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct dm_arg_set as = { .argc = argc, .argv = argv };
	blk_mode_t mode = dm_table_get_mode(ti->table);
	struct ssdprio *sp;
	int r;

	if (argc < 2) {
		ti->error = "Expected <origin_dev> <cache_dev> [<#feature_args> <feature_arg>...]";
		return -EINVAL;
	}

	sp = kzalloc(sizeof(*sp), GFP_KERNEL);
	if (!sp) {
		ti->error = "Cannot allocate context";
		return -ENOMEM;
	}
	sp->ti = ti;
	sp->stats = alloc_percpu(struct ssdp_stats);
	if (!sp->stats) {
		kfree(sp);
		ti->error = "Cannot allocate counters";
		return -ENOMEM;
	}
	INIT_WORK(&sp->event_work, ssdp_event_work);
	mutex_init(&sp->cfg_lock);
	ssdp_config_defaults(&sp->cfg);

	r = dm_get_device(ti, dm_shift_arg(&as), mode, &sp->origin);
	if (r) {
		ti->error = "Error opening origin device";
		goto bad;
	}
	r = dm_get_device(ti, dm_shift_arg(&as), mode, &sp->cache);
	if (r) {
		ti->error = "Error opening cache device";
		goto bad;
	}
	r = -EINVAL;
	if (sp->origin->bdev == sp->cache->bdev) {
		ti->error = "Origin and cache must be different devices";
		goto bad;
	}
	/*
	 * A zone reset or a sequential-write constraint has no meaning
	 * through a cache that rewrites blocks anywhere (6.1 stacks a
	 * host-aware disk's model up; dm refuses only host-managed).
	 */
	if (bdev_is_zoned(sp->origin->bdev) || bdev_is_zoned(sp->cache->bdev)) {
		ti->error = "Zoned devices are not supported (origin or cache)";
		goto bad;
	}
	if (ti->len > bdev_nr_sectors(sp->origin->bdev)) {
		ti->error = "Target length exceeds the origin device";
		goto bad;
	}
	r = ssdp_parse_features(sp, &as, &ti->error);
	if (r)
		goto bad;
	if (sp->cfg.cache) {
		r = ssdp_claim(sp, &ti->error);
		if (r)
			goto bad;
	}
	if (!sp->cfg.cache)
		sp->bypass_live_here =
			ssdp_claimed_by(sp->cache->bdev->bd_dev,
					dm_table_get_md(ti->table));
	r = ssdp_cache_ctr(sp, &ti->error);
	if (r)
		goto bad;
	/*
	 * cache off over a cache of this origin (to be marked bypassed):
	 * no caching device may use it meanwhile, nor rewrite its
	 * superblock without the mark.
	 */
	if (sp->meta_bypass) {
		r = ssdp_claim(sp, &ti->error);
		if (r)
			goto bad;
	}
	r = ssdp_sched_init_dev(sp);
	if (r) {
		ti->error = "Cannot initialise the scheduler";
		goto bad_cache;
	}

	/*
	 * Caching: one empty flush, answered by a metadata commit.  Off:
	 * one per leg; dm_bio_get_target_bio_nr() says which.
	 */
	ti->num_flush_bios = sp->caching ? 1 : 2;
	/*
	 * A flush commits our metadata even when neither device has a
	 * volatile cache, so ask for flushes and FUA whatever they say.
	 */
	ti->flush_supported = sp->caching;
	ti->num_discard_bios = 1;
	/* Whether the cache device has discard does not matter: io_hints. */
	ti->discards_supported = true;
	ti->per_io_data_size = sizeof(struct ssdp_bio);
	ti->accounts_remapped_io = true;
	ti->private = sp;
	mutex_lock(&ssdp_claims_lock);
	list_add(&sp->tables_entry, &ssdp_tables);
	mutex_unlock(&ssdp_claims_lock);
	return 0;

bad_cache:
	ssdp_cache_dtr(sp);
bad:
	mutex_lock(&sp->cfg_lock);
	ssdp_idle_cgroup_clear(sp);
	mutex_unlock(&sp->cfg_lock);
	if (sp->origin && sp->cache)
		ssdp_unclaim(sp);
	if (sp->cache)
		dm_put_device(ti, sp->cache);
	if (sp->origin)
		dm_put_device(ti, sp->origin);
	/* Nothing may run after the free. */
	cancel_work_sync(&sp->event_work);
	free_percpu(sp->stats);
	kfree(sp);
	return r;
}

static void ssdp_dtr(struct dm_target *ti)
{
	struct ssdprio *sp = ti->private;

	mutex_lock(&ssdp_claims_lock);
	list_del(&sp->tables_entry);
	mutex_unlock(&ssdp_claims_lock);
	/* The cache may still write back through the scheduler. */
	ssdp_cache_dtr(sp);
	ssdp_sched_exit_dev(sp);
	/*
	 * Nothing queues an event any more (no I/O, no worker).  The table
	 * is unbound: a pending event would do nothing, so it is dropped.
	 */
	cancel_work_sync(&sp->event_work);
	mutex_lock(&sp->cfg_lock);
	ssdp_idle_cgroup_clear(sp);
	mutex_unlock(&sp->cfg_lock);
	ssdp_unclaim(sp);
	dm_put_device(ti, sp->cache);
	dm_put_device(ti, sp->origin);
	free_percpu(sp->stats);
	kfree(sp);
}

static int ssdp_map(struct dm_target *ti, struct bio *bio)
{
	struct ssdprio *sp = ti->private;
	struct ssdp_bio *pb = ssdp_pb(bio);

	memset(pb, 0, sizeof(*pb));
	if (bio->bi_opf & REQ_PREFLUSH) {
		/*
		 * dm core sends data-less flushes only.  They are never held:
		 * journal commits wait on them.
		 */
		if (sp->caching) {
			ssdp_count(sp, SSDP_ST_FLUSHES);
			pb->kind = SSDP_BK_COMMITTED;
			ssdp_cache_commit_bio(sp, bio);
			return DM_MAPIO_SUBMITTED;
		}
		if (dm_bio_get_target_bio_nr(bio) == 1) {
			bio_set_dev(bio, sp->cache->bdev);
			return DM_MAPIO_REMAPPED;
		}
		ssdp_count(sp, SSDP_ST_FLUSHES);
		bio_set_dev(bio, sp->origin->bdev);
		return DM_MAPIO_REMAPPED;
	}

	pb->idle = ssdp_classify_idle(sp, bio, &pb->housekeeping);
	ssdp_count(sp, pb->idle ? SSDP_ST_BIOS_IDLE : SSDP_ST_BIOS_NORMAL);
	/*
	 * Counted at completion: by then a part the cache split off
	 * (ssdp_accept_partial) has come back as a bio of its own, so that
	 * the counter never goes back.  A discard's size is a range, not
	 * data moved.
	 */
	if (bio_has_data(bio))
		pb->bytes = bio->bi_iter.bi_size;
	if (bio_op(bio) == REQ_OP_DISCARD)
		ssdp_count(sp, SSDP_ST_DISCARDS);
	else if (bio_data_dir(bio) == WRITE)
		ssdp_count(sp, SSDP_ST_WRITES);
	else
		ssdp_count(sp, SSDP_ST_READS);

	if (sp->caching)
		return ssdp_cache_map(sp, bio);

	bio_set_dev(bio, sp->origin->bdev);
	bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	return ssdp_sched_map(sp, bio, pb->idle);
}

static int ssdp_end_io(struct dm_target *ti, struct bio *bio,
		       blk_status_t *error)
{
	struct ssdprio *sp = ti->private;
	struct ssdp_bio *pb = ssdp_pb(bio);
	int r = ssdp_cache_end_io(sp, bio, error);

	/* INCOMPLETE: tried again (a read from the origin), it ends later. */
	if (r != DM_ENDIO_INCOMPLETE && pb->bytes) {
		ssdp_count_n(sp, pb->idle ? SSDP_ST_BYTES_IDLE :
			     SSDP_ST_BYTES_NORMAL, pb->bytes);
		pb->bytes = 0;
	}
	return r;
}

static void ssdp_presuspend(struct dm_target *ti)
{
	struct ssdprio *sp = ti->private;

	/* Held bios count as in flight: release them or suspend hangs. */
	ssdp_sched_presuspend(sp);
	ssdp_cache_presuspend(sp);
}

static void ssdp_postsuspend(struct dm_target *ti)
{
	struct ssdprio *sp = ti->private;

	ssdp_cache_postsuspend(sp);
	ssdp_sched_postsuspend(sp);
}

static int ssdp_preresume(struct dm_target *ti)
{
	struct ssdprio *sp = ti->private;
	int r;

	r = ssdp_swap_check(sp);
	if (r)
		return r;
	return ssdp_cache_preresume(sp);
}

static void ssdp_resume(struct dm_target *ti)
{
	struct ssdprio *sp = ti->private;

	WRITE_ONCE(sp->served, true);
	ssdp_sched_resume(sp);
	ssdp_cache_resume(sp);
}

/* Every CPU's count of ST, since the device was made. */
static u64 ssdp_stat_sum(struct ssdprio *sp, unsigned int st)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(sp->stats, cpu)->n[st]);
	return sum;
}

/*
 * ST since the last reset_stats.  A reset that runs beside this read may
 * set a base above the sum it read: 0 then, not a wrapped count.
 */
static u64 ssdp_stat_shown(struct ssdprio *sp, unsigned int st)
{
	u64 sum = ssdp_stat_sum(sp, st), base = READ_ONCE(sp->stats_base[st]);

	return sum > base ? sum - base : 0;
}

static void ssdp_status(struct dm_target *ti, status_type_t type,
			unsigned int status_flags, char *result,
			unsigned int maxlen)
{
	struct ssdprio *sp = ti->private;
	unsigned int sz = 0, pairs, i;
	char *features;
	size_t len;

	switch (type) {
	case STATUSTYPE_INFO:
		/*
		 * A stable interface for tools: keys are only ever added, and
		 * the version goes up when one changes its meaning.
		 */
		DMEMIT("status_version %u", SSDP_STATUS_VERSION);
		for (i = 0; i < SSDP_ST_NR; i++)
			DMEMIT(" %s %llu", ssdp_stat_names[i],
			       ssdp_stat_shown(sp, i));
		sz = ssdp_cache_status(sp, result, maxlen, sz);
		sz = ssdp_sched_status(sp, result, maxlen, sz);
		break;
	case STATUSTYPE_TABLE:
		DMEMIT("%s %s", sp->origin->name, sp->cache->name);
		features = kmalloc(PAGE_SIZE, GFP_NOIO);
		if (!features)
			break;
		mutex_lock(&sp->cfg_lock);
		pairs = ssdp_config_emit(&sp->cfg, features, PAGE_SIZE);
		len = strlen(features);
		pairs += ssdp_idle_cgroup_emit(sp, features + len,
					       PAGE_SIZE - len);
		len = strlen(features);
		/* Only ever whole pairs (idle_cgroup paths have a budget). */
		if (memchr_inv(sp->origin_id, 0, sizeof(sp->origin_id)) &&
		    snprintf(features + len, PAGE_SIZE - len,
			     " origin_id %*phN", (int)sizeof(sp->origin_id),
			     sp->origin_id) < PAGE_SIZE - len)
			pairs++;
		else
			features[len] = '\0';
		mutex_unlock(&sp->cfg_lock);
		if (pairs)
			DMEMIT(" %u %s", pairs * 2, skip_spaces(features));
		kfree(features);
		break;
	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",origin=%s,cache=%s;", sp->origin->name,
		       sp->cache->name);
		break;
	}
}

/*
 * drain: write every dirty block back, finishing under any load, and make
 * no new dirty data meanwhile or after: write_policy writeback becomes
 * writethrough (as dm-cache's cleaner policy), first, so that the flush
 * cannot be outrun.  The message "write_policy writeback" turns it back.
 */
static int ssdp_drain(struct ssdprio *sp)
{
	mutex_lock(&sp->cfg_lock);
	if (sp->cfg.write_policy == SSDP_WP_WRITEBACK)
		WRITE_ONCE(sp->cfg.write_policy, SSDP_WP_WRITETHROUGH);
	mutex_unlock(&sp->cfg_lock);
	return ssdp_cache_flush_dirty(sp, true);
}

static int ssdp_message(struct dm_target *ti, unsigned int argc, char **argv,
			char *result, unsigned int maxlen)
{
	struct ssdprio *sp = ti->private;
	struct ssdp_config probe;
	const char *why;
	int r, i;

	if (argc == 1 && !strcmp(argv[0], "reset_stats")) {
		for (i = 0; i < SSDP_ST_NR; i++)
			WRITE_ONCE(sp->stats_base[i], ssdp_stat_sum(sp, i));
		return 0;
	}
	if (argc == 1 && !strcmp(argv[0], "flush_dirty"))
		return ssdp_cache_flush_dirty(sp, false);
	if (argc == 1 && !strcmp(argv[0], "drain"))
		return ssdp_drain(sp);
	if (argc == 1 && !strcmp(argv[0], "idle_cgroup_clear")) {
		mutex_lock(&sp->cfg_lock);
		ssdp_idle_cgroup_clear(sp);
		mutex_unlock(&sp->cfg_lock);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[0], "idle_cgroup")) {
		mutex_lock(&sp->cfg_lock);
		r = ssdp_idle_cgroup_add(sp, argv[1], &why);
		mutex_unlock(&sp->cfg_lock);
		goto out;
	}
	if (argc != 2 || !ssdp_config_is_key(argv[0])) {
		/* Bounded: printk holds back a line cut at its limit. */
		DMERR("%s: unknown message \"%.64s\" (%u words)",
		      dm_device_name(dm_table_get_md(ti->table)),
		      argc ? argv[0] : "", argc);
		return -EINVAL;
	}

	mutex_lock(&sp->cfg_lock);
	probe = sp->cfg;
	r = ssdp_config_set(&probe, argv[0], argv[1], SSDP_CFG_MSG, &why);
	if (!r)
		r = ssdp_cache_check_config(sp, &probe, &why);
	if (!r)
		r = ssdp_config_set(&sp->cfg, argv[0], argv[1], SSDP_CFG_MSG,
				    &why);
	if (!r) {
		ssdp_cache_apply_config(sp);
		ssdp_sched_apply_config(sp);
	}
	mutex_unlock(&sp->cfg_lock);
out:
	if (r)
		DMERR("%s: message %.64s %.64s: %s",
		      dm_device_name(dm_table_get_md(ti->table)),
		      argv[0], argv[1], why);
	return r;
}

static int ssdp_iterate_devices(struct dm_target *ti,
				iterate_devices_callout_fn fn, void *data)
{
	struct ssdprio *sp = ti->private;
	int r;

	r = fn(ti, sp->origin, 0, ti->len, data);
	if (r)
		return r;
	return fn(ti, sp->cache, 0, bdev_nr_sectors(sp->cache->bdev), data);
}

/*
 * Discards go to the origin alone (cached blocks are dropped, the SSD is
 * never discarded), so they follow the origin's limits, whatever the cache
 * device supports; dm's stacking over both legs would offer discard only
 * when both have it.  An origin without discard gets none: the limits
 * stay 0 and the block layer refuses discards before they reach us.
 */
static void ssdp_discard_limits(struct ssdprio *sp, struct queue_limits *limits)
{
	struct queue_limits *olim = &bdev_get_queue(sp->origin->bdev)->limits;

	limits->max_hw_discard_sectors = olim->max_hw_discard_sectors;
	limits->max_discard_sectors = olim->max_discard_sectors;
	limits->discard_granularity = olim->discard_granularity;
	limits->discard_alignment = olim->discard_alignment;
}

static void ssdp_io_hints(struct dm_target *ti, struct queue_limits *limits)
{
	struct ssdprio *sp = ti->private;
	unsigned int block_bytes = sp->cfg.block_sectors << SECTOR_SHIFT;
	unsigned int phys;

	ssdp_discard_limits(sp, limits);
	if (!sp->caching)
		return;
	/*
	 * Writes of whole blocks stay in the cache; tell file systems.  An
	 * io_opt that is not whole blocks goes too: mkfs.xfs reads io_min
	 * and io_opt as stripe unit and width, and warns about (then
	 * ignores) a unit without a width.
	 */
	if (limits->io_min < block_bytes)
		limits->io_min = block_bytes;
	if (limits->io_opt < block_bytes || limits->io_opt % block_bytes)
		limits->io_opt = block_bytes;
	/*
	 * A write of less than a block is a partial block here, as on a disk
	 * with that physical sector.  mkfs.xfs then sees a stripe unit equal
	 * to the sector and ignores it without a note (it notes one it drops
	 * on a small volume).  Not above 4 KiB: mkfs tools take larger
	 * physical sectors for their default 4 KiB blocks only with a note.
	 */
	phys = min_t(unsigned int, block_bytes, SZ_4K);
	if (limits->physical_block_size < phys)
		limits->physical_block_size = phys;
	/*
	 * dm splits our bios at max_sectors too (max_io_len is set): a limit
	 * that is not a whole number of blocks (255 sectors, the kernel's
	 * safe default) would cut every large bio off a block boundary, and
	 * each cut costs a partial-block bio of its own.
	 */
	if (limits->max_sectors > sp->cfg.block_sectors)
		limits->max_sectors = rounddown(limits->max_sectors,
						sp->cfg.block_sectors);
}

static struct target_type ssdp_target = {
	.name = "ssdprio",
	.version = {0, 1, 0},
	/*
	 * Two ssdprio targets of one table would pass the device claims (they
	 * are one mapped device's) and could share a cache device or an
	 * origin: each formats and writes the other's frames.
	 */
	.features = DM_TARGET_SINGLETON,
	.module = THIS_MODULE,
	.ctr = ssdp_ctr,
	.dtr = ssdp_dtr,
	.map = ssdp_map,
	.end_io = ssdp_end_io,
	.presuspend = ssdp_presuspend,
	.presuspend_undo = ssdp_resume,
	.postsuspend = ssdp_postsuspend,
	.preresume = ssdp_preresume,
	.resume = ssdp_resume,
	.status = ssdp_status,
	.message = ssdp_message,
	.iterate_devices = ssdp_iterate_devices,
	.io_hints = ssdp_io_hints,
};

static int __init dm_ssdprio_init(void)
{
	return dm_register_target(&ssdp_target);
}

static void __exit dm_ssdprio_exit(void)
{
	dm_unregister_target(&ssdp_target);
}

module_init(dm_ssdprio_init);
module_exit(dm_ssdprio_exit);

MODULE_DESCRIPTION(DM_NAME " SSD write-back cache with idle-class throttling");
MODULE_AUTHOR("dm-ssdprio developers");
MODULE_LICENSE("GPL");
