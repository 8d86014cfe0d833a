// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio persistent metadata: format, load, commit, clean shutdown.
 * The on-SSD format is engine/ssdprio_format.h; meta_codec.c encodes it.
 *
 * Commit protocol (one commit serves every flush and FUA write that
 * arrived before it started):
 *   1. take the sets whose persistent state changed (frame map "changed"
 *      bits);
 *   2. per chunk of metadata blocks: encode them from the frame map, THEN
 *      flush the origin (if user writes reached it) and the SSD, so every
 *      block a record calls valid has its data durable before the record
 *      is written;
 *   3. write each metadata block to its other copy with FUA, and only then
 *      call that copy the newest;
 *   4. tell the frame map those sets' records are durable: frames of
 *      dropped dirty blocks (limbo) that the records call free may now
 *      hold another origin set's blocks.
 * Cost per flush in steady state: one SSD flush (plus one origin flush
 * when writes went to the origin) and one FUA write per run of changed
 * metadata blocks; no metadata I/O per data write.
 *
 * Blocks become clean only after an origin flush (evict.c), and a write
 * to a dirty block never invalidates it (cache.c), so a durable record
 * never calls a block clean or invalid while the origin lacks its data.
 *
 * After an unclean shutdown only dirty blocks are loaded: a frame a record
 * calls clean may have been given to another origin set since the last
 * commit (frame_map.h).  A frame a record calls dirty has not: a dirty
 * block's frame changes hands only after a commit said it is clean or
 * free (writeback and limbo).
 *
 * The same holds for a record whose other copy fails its checksum (a torn
 * write, or the newest copy lost to the media): the copy left may be the
 * commit before the newest, and frames it calls clean may have changed
 * hands in the newest; frames it calls dirty have not (they change hands
 * only after a commit called them clean, and a clean shutdown commits
 * every change after that).  So such a record loads only its dirty blocks.
 * For this to mean damage, never "not written yet", a metadata block's
 * first write after format, and the first after a load that found a copy
 * bad, goes to both copies (meta_both).
 *
 * Metadata I/O happens only between preresume and postsuspend, never in
 * ctr or dtr: on a table reload the new table's ctr runs while the old
 * table is live, and the old table's dtr runs after the new one resumed.
 *
 * Locking: meta->lock (mutex) serialises all metadata I/O and protects
 * struct ssdp_meta; it is taken outside cache_lock, never inside it.
 */
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/dm-ioctl.h>
#include <linux/bio.h>
#include <linux/random.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>

#include "ssdprio.h"
#include "meta_codec.h"

/*
 * Failed flushes a commit tries again, in all (ssdp_meta_flush_locked):
 * one flush is tried three times over about a second.
 */
#define SSDP_FLUSH_RETRIES	2

/* Metadata blocks encoded and written per round of a commit. */
#define SSDP_META_CHUNK_BLOCKS	32U	/* 128 KiB */
/* Metadata blocks read per round of a load (per copy). */
#define SSDP_LOAD_CHUNK_BLOCKS	256U	/* 1 MiB */
#define SSDP_MB_SHIFT		12	/* log2(SSDP_META_BLOCK_BYTES) */

/*
 * meta.c's state.  @lock serialises metadata I/O and protects the fields
 * below it; it is taken outside cache_lock, never inside.
 */
struct ssdp_meta {
	struct mutex lock;
	struct ssdp_sb_info sb;
	u32 rec_seed;
	u64 seq;			/* last commit's sequence number */
	unsigned long *copy;		/* per metadata block: newest copy */
	unsigned long *both;		/* per block: next write to both copies */
	unsigned long *todo;		/* metadata blocks of this commit */
	u32 *list;
	struct ssdp_rec_view *view;	/* two, see ssdp_meta_ctr() */
	struct ssdp_buf buf;
	bool must_format;		/* blank cache + format, or bypassed */
	bool loaded;			/* format or load done: the map is real */
	bool served;			/* a resume let I/O in: records may lag */
	bool origin_failed;		/* failed for an origin flush alone */
	u32 fixups;			/* load: records left stale on the SSD */
	enum ssdp_meta_state state;
	u64 commits;
	u64 block_writes;
	u32 load_ms;
};

static int ssdp_meta_commit_locked(struct ssdprio *sp);

static const char * const ssdp_meta_state_names[] = {
	[SSDP_META_NONE] = "none",
	[SSDP_META_FORMATTED] = "formatted",
	[SSDP_META_CLEAN] = "clean",
	[SSDP_META_RECOVERED] = "recovered",
	[SSDP_META_FAILED] = "failed",
};

const char *ssdp_meta_state_name(enum ssdp_meta_state st)
{
	return st < ARRAY_SIZE(ssdp_meta_state_names) ?
	       ssdp_meta_state_names[st] : "?";
}

static int ssdp_meta_write_sb(struct ssdprio *sp, bool clean);

/* Status reads the state without the lock; a change is a dm event. */
static void ssdp_meta_set_state_locked(struct ssdprio *sp,
				       enum ssdp_meta_state st)
{
	lockdep_assert_held(&sp->meta->lock);
	if (sp->meta->state == st)
		return;
	WRITE_ONCE(sp->meta->state, st);
	ssdp_state_event(sp);
}

/*
 * Caches (by uuid) whose metadata failed since the module was loaded: the
 * superblock's META_FAILED may never have reached the SSD (its write may
 * be what failed), and a table created or reloaded over such a cache once
 * the SSD answers again must refuse it all the same.  A ring: the oldest
 * is forgotten first.
 */
#define SSDP_FAILED_CACHES	32
/* The ring; taken alone or under meta->lock, nothing under it. */
static DEFINE_MUTEX(ssdp_failed_lock);
static u8 ssdp_failed_uuids[SSDP_FAILED_CACHES][16];
static unsigned int ssdp_failed_next;

static void ssdp_failed_note(const u8 uuid[16])
{
	mutex_lock(&ssdp_failed_lock);
	memcpy(ssdp_failed_uuids[ssdp_failed_next], uuid, 16);
	ssdp_failed_next = (ssdp_failed_next + 1) % SSDP_FAILED_CACHES;
	mutex_unlock(&ssdp_failed_lock);
}

static bool ssdp_failed_before(const u8 uuid[16])
{
	static const u8 zero[16];
	bool found = false;
	unsigned int i;

	if (!memcmp(uuid, zero, 16))
		return false;
	mutex_lock(&ssdp_failed_lock);
	for (i = 0; i < SSDP_FAILED_CACHES && !found; i++)
		found = !memcmp(ssdp_failed_uuids[i], uuid, 16);
	mutex_unlock(&ssdp_failed_lock);
	return found;
}

/*
 * A failed cache that serves: its records fall behind the device, so it is
 * marked never to be loaded again (META_FAILED, best effort, and in memory).
 */
static void ssdp_meta_mark_failed_locked(struct ssdprio *sp)
{
	lockdep_assert_held(&sp->meta->lock);
	if (!sp->meta->loaded || sp->meta->origin_failed ||
	    (sp->meta->sb.incompat & SSDP_SB_INCOMPAT_META_FAILED))
		return;
	sp->meta->sb.incompat |= SSDP_SB_INCOMPAT_META_FAILED;
	ssdp_failed_note(sp->meta->sb.uuid);
	if (!ssdp_meta_write_sb(sp, false))
		DMERR("%s: cache marked as failed on the SSD: it will not be loaded again (drain it now, then retire it: runbook.md)",
		      ssdp_name(sp));
}

/*
 * A metadata write failed: nothing can be made durable from now on, so
 * the records on the SSD keep naming every frame's owner as of the last
 * commit.  No frame may change hands after that (a frame they call dirty
 * or clean, given to another block, would be read back as that block after
 * a restart): a degraded cache takes no free or foreign frame.  A cache
 * that never served (its first resume refuses) is not marked: its records
 * are as current as the device, and a later table may load it.
 */
static void ssdp_meta_fail_locked(struct ssdprio *sp, const char *why)
{
	unsigned long flags;

	lockdep_assert_held(&sp->meta->lock);
	ssdp_meta_set_state_locked(sp, SSDP_META_FAILED);
	spin_lock_irqsave(&sp->cache_lock, flags);
	ssdp_degrade_locked(sp, why);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	if (sp->meta->served)
		ssdp_meta_mark_failed_locked(sp);
}

/*
 * An origin flush failed every try: writes the origin took since its last
 * good flush may be gone (a remote target that restarted lost its write
 * cache), and "clean" may not be written for any of them.  The commit
 * stops here and so do all later ones of this table, as for a failed
 * metadata write, but the SSD is sound: its records stay those of the
 * last good commit (chunk by chunk), which is what a power cut at this
 * moment would leave.  From here on the cache runs degraded and never
 * commits, and a degraded cache takes no free or foreign frame, so every
 * frame a record calls dirty keeps that block's data (a write to a dirty
 * block stays in its frame), and a frame a record calls clean is not
 * trusted by a load after an unclean shutdown (the superblock stays
 * unclean).  So the cache is not marked failed: a later table, once the
 * origin answers again, loads it as after a crash and writes back again
 * every block the records call dirty, including those whose earlier
 * writeback the origin may have lost.  What was written after the last
 * good commit is not vouched for: every flush since failed.
 */
static void ssdp_meta_fail_origin_locked(struct ssdprio *sp)
{
	lockdep_assert_held(&sp->meta->lock);
	if (sp->meta->state != SSDP_META_FAILED)
		sp->meta->origin_failed = true;
	ssdp_meta_fail_locked(sp, "origin flush failed");
}

static inline u32 ssdp_recs_per_block(struct ssdprio *sp)
{
	return SSDP_META_BLOCK_BYTES / sp->layout.rec_bytes;
}

static void *ssdp_buf_addr(struct ssdp_buf *buf, size_t off)
{
	return page_address(buf->pages[off >> PAGE_SHIFT]) +
	       (off & ~PAGE_MASK);
}

static int ssdp_meta_write_sb(struct ssdprio *sp, bool clean)
{
	void *block = ssdp_buf_addr(&sp->meta->buf, 0);
	unsigned long flags;
	u64 dirty;
	int r;

	sp->meta->sb.flags = clean ? SSDP_SB_CLEAN : 0;
	/*
	 * A version 2 cache becomes version 3 here, before any record with
	 * an alt bit is written: a module that knows only version 2 then
	 * refuses it instead of misreading alt frames as home ones.  Version
	 * 3 (with the version 2 records it kept, same seed) stays version 3:
	 * its alt bits mean b ^ S/2.
	 */
	if (sp->meta->sb.version == SSDP_FORMAT_V2)
		sp->meta->sb.version = SSDP_FORMAT_V3;
	if (clean) {
		spin_lock_irqsave(&sp->cache_lock, flags);
		dirty = sp->fmap.total_dirty;
		spin_unlock_irqrestore(&sp->cache_lock, flags);
		/* What a later "cache off" table checks (ssdp_meta_ctr_bypass). */
		if (!dirty)
			sp->meta->sb.flags |= SSDP_SB_NO_DIRTY;
	}
	sp->meta->sb.seq = sp->meta->seq;
	memset(block, 0, SSDP_META_BLOCK_BYTES);
	ssdp_sb_encode(&sp->meta->sb, block);
	/* PREFLUSH: what the superblock vouches for is durable first. */
	r = ssdp_io_meta_sync(sp, &sp->meta->buf, 0, 0, SSDP_META_BLOCK_BYTES,
			      REQ_OP_WRITE | REQ_SYNC | REQ_PREFLUSH | REQ_FUA);
	if (r)
		DMERR("%s: superblock write failed: %d", ssdp_name(sp), r);
	return r;
}

/*
 * How much of a DM UUID survives a reactivation: dm-crypt's is
 * "CRYPT-<type>-<uuid>-<mapping name>", and the name is the admin's choice
 * at each open; a plain dm-crypt mapping ("CRYPT-PLAIN-<name>") has nothing
 * stable.  0: no identity.
 */
static size_t ssdp_dm_uuid_stable_len(const char *uuid)
{
	const char *p;
	int dashes = 0;

	if (strncmp(uuid, "CRYPT-", 6))
		return strlen(uuid);
	for (p = uuid; *p; p++)
		if (*p == '-' && ++dashes == 3)
			return p - uuid;
	return 0;
}

/* A device-mapper origin (LVM, multipath, dm-crypt): its DM UUID. */
static bool ssdp_origin_dm_uid(struct ssdprio *sp, u8 id[16])
{
	struct mapped_device *md = dm_get_md(sp->origin->bdev->bd_dev);
	bool found = false;
	char *uuid;
	size_t len;

	if (!md)
		return false;
	uuid = kzalloc(DM_UUID_LEN, GFP_KERNEL);
	if (uuid && !dm_copy_name_and_uuid(md, NULL, uuid)) {
		len = ssdp_dm_uuid_stable_len(uuid);
		if (len) {
			ssdp_uid_hash(uuid, len, id);
			found = true;
		}
	}
	kfree(uuid);
	dm_put(md);
	return found;
}

/* A partition origin: the partition table's UUID for it. */
static bool ssdp_origin_part_uid(struct ssdprio *sp, u8 id[16])
{
	struct block_device *bdev = sp->origin->bdev;
	const char *uuid;

	if (!bdev_is_partition(bdev) || !bdev->bd_meta_info)
		return false;
	uuid = bdev->bd_meta_info->uuid;
	if (!uuid[0])
		return false;
	ssdp_uid_hash(uuid, strnlen(uuid, PARTITION_META_INFO_UUIDLTH), id);
	return true;
}

/*
 * The origin's identity of type @want, or (@want 0) the best it has: a DM
 * UUID; else the disk's own unique id (SCSI/SATA VPD page 0x83 through sd;
 * later kernels add NVMe), the best designator it reports; else its
 * partition's UUID.  A check asks for the type that was recorded, so that a
 * kernel which learns a new kind of id (NVMe's, dm's own) still matches.
 * Returns false when there is none (a whole virtio, md, loop or null_blk
 * disk, or NVMe on 6.1).
 */
static bool ssdp_origin_uid(struct ssdprio *sp, u32 want, u8 id[16],
			    u32 *len, u32 *type)
{
	static const enum blk_unique_id types[] = {
		BLK_UID_NAA, BLK_UID_EUI64, BLK_UID_T10,
	};
	struct gendisk *disk = sp->origin->bdev->bd_disk;
	unsigned int i;
	int r;

	memset(id, 0, 16);
	*len = 16;
	if ((!want || want == SSDP_UID_DM_UUID) && ssdp_origin_dm_uid(sp, id)) {
		*type = SSDP_UID_DM_UUID;
		return true;
	}
	for (i = 0; disk->fops->get_unique_id && i < ARRAY_SIZE(types); i++) {
		if (want && want != types[i])
			continue;
		memset(id, 0, 16);
		r = disk->fops->get_unique_id(disk, id, types[i]);
		if (r > 0 && r <= 16) {
			*len = r;
			*type = types[i];
			return true;
		}
	}
	memset(id, 0, 16);
	*len = 16;
	if ((!want || want == SSDP_UID_PART_UUID) &&
	    ssdp_origin_part_uid(sp, id)) {
		*type = SSDP_UID_PART_UUID;
		return true;
	}
	return false;
}

/* Record the origin's identity in @sb (format, or first load without). */
static void ssdp_sb_set_origin_uid(struct ssdprio *sp, struct ssdp_sb_info *sb)
{
	if (!ssdp_origin_uid(sp, 0, sb->origin_uid, &sb->origin_uid_len,
			     &sb->origin_uid_type))
		return;
	sb->origin_start = get_start_sect(sp->origin->bdev);
	sb->compat |= SSDP_SB_COMPAT_ORIGIN_UID;
}

/*
 * ssdp_sb_origin_mismatch() where the origin reports no disk id of the
 * recorded type.  Drivers learn get_unique_id over kernel versions (NVMe's
 * came in 6.11): a cache recorded under a newer kernel must still load after
 * a downgrade, dirty blocks and all.  A disk that reports an id of that type
 * and another value is refused by the caller; here, as for a disk that never
 * had an id, the table's origin_id (checked already) or else the size and
 * the start on the disk tell this origin from another.  DM and partition
 * UUIDs are not a driver's: a missing one means another device.
 */
static const char *ssdp_sb_origin_unreadable(struct ssdprio *sp,
					     const struct ssdp_sb_info *sb,
					     const u8 *origin_id, bool verbose)
{
	sector_t origin_sectors = bdev_nr_sectors(sp->origin->bdev);
	sector_t start = get_start_sect(sp->origin->bdev);
	bool by_origin_id = memchr_inv(origin_id, 0, sizeof(sb->origin_id));

	if (!by_origin_id &&
	    (origin_sectors != sb->origin_sectors || start != sb->origin_start)) {
		if (verbose)
			DMERR("cache was formatted over a disk with id %*phN (type %#x), which this kernel cannot read from %pg: its %llu sectors at sector %llu differ from the recorded %llu at %llu",
			      (int)sb->origin_uid_len, sb->origin_uid,
			      sb->origin_uid_type, sp->origin->bdev,
			      (unsigned long long)origin_sectors,
			      (unsigned long long)start, sb->origin_sectors,
			      sb->origin_start);
		return "Cache belongs to another origin (origin disk id unreadable here, and size or start differs)";
	}
	if (verbose)
		DMWARN("%pg: this kernel cannot read the origin disk id recorded at format (%*phN, type %#x): taken as the origin by its %s",
		       sp->origin->bdev, (int)sb->origin_uid_len, sb->origin_uid,
		       sb->origin_uid_type,
		       by_origin_id ? "origin_id" : "size and start");
	return NULL;
}

/*
 * Does superblock @sb belong to this table's origin?  NULL if so, else
 * why not (a ti->error; the details in dmesg if @verbose).  Size and
 * origin_id as the table gives them, and the disk's own id when one was
 * recorded at format.
 */
static const char *ssdp_sb_origin_mismatch(struct ssdprio *sp,
					   const struct ssdp_sb_info *sb,
					   const u8 *origin_id, bool verbose)
{
	sector_t origin_sectors = bdev_nr_sectors(sp->origin->bdev);
	u32 len = 0, type = 0;
	u8 id[16];

	/*
	 * Where the origin has an identity of its own (checked below), its
	 * size may change (lvextend, a grown LUN): sets past a new end are
	 * the shorter table's case at load.  Without one, the size is all
	 * that tells this origin from another.
	 */
	if (origin_sectors != sb->origin_sectors &&
	    !(sb->compat & SSDP_SB_COMPAT_ORIGIN_UID) &&
	    !memchr_inv(sb->origin_id, 0, sizeof(sb->origin_id))) {
		if (verbose)
			DMERR("cache belongs to an origin of %llu sectors; this one has %llu",
			      sb->origin_sectors,
			      (unsigned long long)origin_sectors);
		return "Cache belongs to another origin (origin size differs)";
	}
	if (memcmp(sb->origin_id, origin_id, sizeof(sb->origin_id)))
		return "Cache belongs to another origin (origin_id differs)";
	if (!(sb->compat & SSDP_SB_COMPAT_ORIGIN_UID))
		return NULL;
	if (!ssdp_origin_uid(sp, sb->origin_uid_type, id, &len, &type) &&
	    sb->origin_uid_type != SSDP_UID_DM_UUID &&
	    sb->origin_uid_type != SSDP_UID_PART_UUID)
		return ssdp_sb_origin_unreadable(sp, sb, origin_id, verbose);
	if (len != sb->origin_uid_len || type != sb->origin_uid_type ||
	    memcmp(id, sb->origin_uid, len) ||
	    get_start_sect(sp->origin->bdev) != sb->origin_start) {
		if (!verbose)
			return "Cache belongs to another origin (origin disk id differs)";
		DMERR("cache was formatted over origin id %*phN (type %#x) at sector %llu; origin %pg has %*phN (type %#x) at sector %llu",
		      (int)sb->origin_uid_len, sb->origin_uid,
		      sb->origin_uid_type, sb->origin_start,
		      sp->origin->bdev, (int)len, id, type,
		      (unsigned long long)get_start_sect(sp->origin->bdev));
		return "Cache belongs to another origin (origin disk id differs)";
	}
	return NULL;
}

/*
 * Read the superblock and check it against the table: decides between
 * format and load, and takes the superblock's layout.  No writes.
 */
static int ssdp_meta_check(struct ssdprio *sp, char **error)
{
	struct ssdp_sb_info *sb = &sp->meta->sb;
	sector_t cache_sectors = bdev_nr_sectors(sp->cache->bdev);
	bool again = sp->meta->must_format;
	enum ssdp_sb_result res;
	int r;

	sp->meta->must_format = false;
	r = ssdp_io_meta_sync(sp, &sp->meta->buf, 0, 0, SSDP_META_BLOCK_BYTES,
			      REQ_OP_READ);
	if (r) {
		*error = "Cannot read the cache superblock";
		return r;
	}
	res = ssdp_sb_decode(ssdp_buf_addr(&sp->meta->buf, 0), sb);
	r = -EINVAL;
	switch (res) {
	case SSDP_SB_OK:
		break;
	case SSDP_SB_BLANK:
	case SSDP_SB_FOREIGN:
		if (sp->format) {
			sp->meta->must_format = true;
			return 0;
		}
		*error = res == SSDP_SB_BLANK ?
			"Cache device is blank: add the feature flag 'format' to initialise it" :
			"Cache device holds no ssdprio superblock: add the feature flag 'format' to overwrite it";
		return r;
	case SSDP_SB_BAD_CRC:
		*error = "Cache superblock checksum mismatch: refusing the cache device (ssdprio-tool wipe to start over)";
		return r;
	case SSDP_SB_OLD_VERSION:
		/*
		 * Nothing of value in it: start it afresh in this format if
		 * the table says so.  Dirty blocks are data the origin lacks.
		 */
		if (sp->format &&
		    ((sb->flags & (SSDP_SB_CLEAN | SSDP_SB_NO_DIRTY)) ==
		     (SSDP_SB_CLEAN | SSDP_SB_NO_DIRTY) ||
		     (sb->incompat & SSDP_SB_INCOMPAT_BYPASSED))) {
			if (!again)
				DMWARN("cache has format version %u and no dirty blocks: formatting it afresh in version %u",
				       sb->version, SSDP_FORMAT_VERSION);
			sp->meta->must_format = true;
			return 0;
		}
		/* Version 2 with records that version 3 makes larger. */
		if (sb->version == SSDP_FORMAT_V2) {
			DMERR("cache has format version 2 with set_size %u: format version %u records are larger",
			      sb->set_blocks, SSDP_FORMAT_VERSION);
			*error = sb->flags & SSDP_SB_NO_DIRTY ?
				"Cache has format version 2 with a set_size this version lays out differently, and no dirty blocks: add the feature flag 'format' to start it afresh" :
				"Cache has format version 2 with a set_size this version lays out differently, and may hold dirty blocks: write them back with the earlier module (message flush_dirty, then remove the device cleanly) before loading this one";
			return r;
		}
		*error = sb->flags & SSDP_SB_NO_DIRTY ?
			"Cache has format version 1 (an earlier ssdprio) and no dirty blocks: add the feature flag 'format' to start it afresh in this version" :
			"Cache has format version 1 (an earlier ssdprio) and may hold dirty blocks this module cannot read: write them back with the earlier module (message flush_dirty, then remove the device cleanly) before loading this one";
		return r;
	case SSDP_SB_BAD_VERSION:
		*error = "Cache superblock has an unknown format version";
		return r;
	case SSDP_SB_BAD_FEATURES:
		*error = "Cache superblock needs features this module lacks";
		return r;
	case SSDP_SB_BAD_LAYOUT:
	default:
		*error = "Cache superblock geometry is inconsistent";
		return r;
	}

	if (sb->block_sectors != sp->cfg.block_sectors ||
	    sb->set_blocks != sp->cfg.set_blocks) {
		DMERR("cache formatted with block_size %u set_size %u; table has %u %u",
		      sb->block_sectors, sb->set_blocks, sp->cfg.block_sectors,
		      sp->cfg.set_blocks);
		*error = "Cache was formatted with another block_size or set_size";
		return r;
	}
	if (cache_sectors < sb->cache_sectors) {
		DMERR("cache device has %llu sectors, formatted with %llu",
		      (unsigned long long)cache_sectors, sb->cache_sectors);
		*error = "Cache device is smaller than when it was formatted (truncated?)";
		return r;
	}
	*error = (char *)ssdp_sb_origin_mismatch(sp, sb, sp->origin_id, true);
	if (*error)
		return r;
	if (bdev_nr_sectors(sp->origin->bdev) != sb->origin_sectors) {
		/* Recorded with the next superblock write (the first resume). */
		DMINFO("origin resized from %llu to %llu sectors (the same origin by its id)",
		       sb->origin_sectors,
		       (unsigned long long)bdev_nr_sectors(sp->origin->bdev));
		sb->origin_sectors = bdev_nr_sectors(sp->origin->bdev);
	}
	if (sb->incompat & SSDP_SB_INCOMPAT_BYPASSED) {
		/*
		 * A "cache off" table served this origin without the cache:
		 * any block here may be older than the origin's.  Nothing in
		 * it is used; the first resume formats it afresh.
		 */
		/* Once per table: the first resume checks again. */
		if (!again)
			DMWARN("cache was bypassed by a 'cache off' table: its contents are out of date and are discarded; starting empty");
		sp->meta->must_format = true;
		return 0;
	}
	if ((sb->incompat & SSDP_SB_INCOMPAT_META_FAILED) ||
	    ssdp_failed_before(sb->uuid)) {
		DMERR("cache's metadata writes failed while it was in use%s: its records are older than the device",
		      sb->incompat & SSDP_SB_INCOMPAT_META_FAILED ? "" :
		      " (noted in memory: the superblock could not say so)");
		*error = "Cache metadata failed while in use: its records are out of date (ssdprio-tool dirty lists what it held; wipe it: runbook.md)";
		return r;
	}
	/* The superblock's layout rules, even if the device has grown. */
	ssdp_sb_layout(sb, &sp->layout);
	return 0;
}

/*
 * Superblock I/O before the bio set and metadata buffer exist (and for a
 * "cache off" table, which has neither): one page at sector 0 of the
 * cache device.
 */
static int ssdp_sb_page_rw(struct ssdprio *sp, struct page *page,
			  blk_opf_t opf)
{
	struct bio *bio = bio_alloc(sp->cache->bdev, 1, opf, GFP_KERNEL);
	int r;

	bio->bi_iter.bi_sector = 0;
	__bio_add_page(bio, page, SSDP_META_BLOCK_BYTES, 0);
	r = submit_bio_wait(bio);
	bio_put(bio);
	return r;
}

/* Could the cache device hold a superblock of ours at all? */
static bool ssdp_sb_fits(struct ssdprio *sp)
{
	return bdev_logical_block_size(sp->cache->bdev) <= SSDP_META_BLOCK_BYTES &&
	       bdev_nr_sectors(sp->cache->bdev) >= SSDP_META_BLOCK_SECTORS;
}

/*
 * ctr, before the layout: block_size and set_size the table leaves out
 * are the superblock's when the cache device holds one of this format.
 * Anything else (blank, foreign, damaged, unreadable) keeps the defaults;
 * ssdp_meta_check reports it.
 */
void ssdp_meta_take_geometry(struct ssdprio *sp)
{
	struct ssdp_sb_info sb;
	struct page *page;

	if ((sp->block_size_given && sp->set_size_given) || !ssdp_sb_fits(sp))
		return;
	page = alloc_page(GFP_KERNEL);
	if (!page)
		return;
	if (!ssdp_sb_page_rw(sp, page, REQ_OP_READ) &&
	    ssdp_sb_decode(page_address(page), &sb) == SSDP_SB_OK) {
		if (!sp->block_size_given)
			sp->cfg.block_sectors = sb.block_sectors;
		if (!sp->set_size_given)
			sp->cfg.set_blocks = sb.set_blocks;
	}
	__free_page(page);
}

/* ctr: check what the cache device holds against the table; no writes. */
int ssdp_meta_ctr(struct ssdprio *sp, char **error)
{
	int r;

	sp->meta = kzalloc(sizeof(*sp->meta), GFP_KERNEL);
	if (!sp->meta) {
		*error = "Cannot allocate the metadata state";
		return -ENOMEM;
	}
	mutex_init(&sp->meta->lock);
	if (bdev_logical_block_size(sp->cache->bdev) > SSDP_META_BLOCK_BYTES) {
		*error = "Cache device logical block size is above 4096";
		return -EINVAL;
	}
	r = ssdp_buf_alloc(&sp->meta->buf,
			   SSDP_META_CHUNK_BLOCKS * SSDP_META_BLOCK_BYTES,
			   GFP_KERNEL);
	sp->meta->list = kcalloc(SSDP_META_CHUNK_BLOCKS,
				sizeof(*sp->meta->list), GFP_KERNEL);
	/* Two: a load compares both copies of a record. */
	sp->meta->view = kmalloc_array(2, sizeof(*sp->meta->view), GFP_KERNEL);
	if (r || !sp->meta->list || !sp->meta->view) {
		*error = "Cannot allocate the metadata buffer";
		return -ENOMEM;
	}
	return ssdp_meta_check(sp, error);
}

/*
 * Read the cache device's superblock for a "cache off" table.  Returns
 * 1 with @sb filled when it is a cache of ours for this origin (which the
 * table would bypass), 0 when it is anything else, -EUCLEAN when it could
 * be this origin's but the table lacks its origin_id, or a negative errno.
 */
static int ssdp_bypass_read_sb(struct ssdprio *sp, struct page *page,
			       struct ssdp_sb_info *sb)
{
	int r;

	/* Never a cache of ours: ssdp_meta_ctr refuses such devices. */
	if (!ssdp_sb_fits(sp))
		return 0;
	r = ssdp_sb_page_rw(sp, page, REQ_OP_READ);
	if (r)
		return r;
	if (ssdp_sb_decode(page_address(page), sb) != SSDP_SB_OK)
		return 0;
	/*
	 * The cache has an origin_id and the table none.  Unless the
	 * origin's own identity shows it is another's, this may be its
	 * origin, and leaving it alone would let a caching table trust it
	 * (and write its dirty blocks back) after this one wrote the origin.
	 */
	if (memchr_inv(sb->origin_id, 0, sizeof(sb->origin_id)) &&
	    !memchr_inv(sp->origin_id, 0, sizeof(sp->origin_id)))
		return ssdp_sb_origin_mismatch(sp, sb, sb->origin_id, false) ?
		       0 : -EUCLEAN;
	/*
	 * A cache of another origin is not affected by what this table
	 * writes to its origin: leave it alone.
	 */
	return ssdp_sb_origin_mismatch(sp, sb, sp->origin_id, false) ? 0 : 1;
}

/*
 * ctr of a "cache off" table.  Every bio of such a table goes to the
 * origin, so a cache of ours for the same origin is bypassed: its dirty
 * blocks would not be read (stale data served) and, were a caching table
 * loaded later, would be written back over whatever was written
 * meanwhile.  Refused while the cache holds dirty blocks (an unclean
 * superblock counts: it may), unless the table says "force"; otherwise
 * the cache is marked bypassed at the first resume (never trusted again).
 * Over this device's own live table (a detach), all of that is decided at
 * the resume, on the superblock that table's suspend wrote.
 */
int ssdp_meta_ctr_bypass(struct ssdprio *sp, char **error)
{
	struct page *page = alloc_page(GFP_KERNEL);
	struct ssdp_sb_info *sb = kzalloc(sizeof(*sb), GFP_KERNEL);
	int r = -ENOMEM;

	sp->meta_bypass = false;
	if (!page || !sb) {
		*error = "Cannot allocate the metadata buffer";
		goto out;
	}
	if (sp->bypass_live_here) {
		/*
		 * Over this device's live table, which writes the final
		 * superblock when it is suspended: read it then, not now.
		 */
		if (!sp->force)
			DMINFO("cache off over this device's live table: resumes only if that table leaves no dirty block");
		sp->bypass_check_at_resume = !sp->force;
		sp->meta_bypass = true;
		r = 0;
		goto out;
	}
	r = ssdp_bypass_read_sb(sp, page, sb);
	if (r == -EUCLEAN) {
		*error = "Cache may belong to this origin: it has an origin_id this table lacks, so whose it is cannot be told: add 'origin_id <id>' ('ssdprio-tool show' prints it), or name another cache device";
		r = -EBUSY;
		goto out;
	}
	if (r < 0) {
		*error = "Cannot read the cache superblock";
		goto out;
	}
	if (!r || (sb->incompat & SSDP_SB_INCOMPAT_BYPASSED)) {
		r = 0;		/* nothing of value to protect */
		goto out;
	}
	if ((sb->flags & (SSDP_SB_CLEAN | SSDP_SB_NO_DIRTY)) !=
	    (SSDP_SB_CLEAN | SSDP_SB_NO_DIRTY) && !sp->force) {
		*error = sb->flags & SSDP_SB_CLEAN ?
			"Cache holds dirty blocks of this origin: 'cache off' would serve stale data (write them back first: load it with the cache on and 'flush_dirty'; or add the flag 'force' to discard them)" :
			"Cache of this origin is live or was not shut down cleanly, so it may hold dirty blocks: 'cache off' would serve stale data (remove the caching device first, or load it and 'flush_dirty'; or add the flag 'force' to discard them)";
		r = -EBUSY;
		goto out;
	}
	if (sb->flags & SSDP_SB_NO_DIRTY)
		DMINFO("cache has no dirty blocks; a 'cache off' table over it marks it out of date at resume");
	else
		DMWARN("force: cache's dirty blocks will be discarded at resume (the origin lacks them)");
	sp->meta_bypass = true;
	r = 0;
out:
	kfree(sb);
	if (page)
		__free_page(page);
	return r;
}

/*
 * First resume of a "cache off" table: mark the cache bypassed before
 * any bio reaches the origin.  Read again: on a reload, the old caching
 * table's postsuspend wrote its final superblock after our ctr.  A
 * failure refuses the resume: serving I/O with the cache still trusted
 * is what this prevents.
 */
int ssdp_meta_preresume_bypass(struct ssdprio *sp)
{
	struct page *page;
	struct ssdp_sb_info *sb;
	int r = -ENOMEM;

	if (!sp->meta_bypass)
		return 0;
	page = alloc_page(GFP_KERNEL);
	sb = kzalloc(sizeof(*sb), GFP_KERNEL);
	if (!page || !sb)
		goto out;
	r = ssdp_bypass_read_sb(sp, page, sb);
	if (r <= 0 || (sb->incompat & SSDP_SB_INCOMPAT_BYPASSED))
		goto done;
	if (sp->bypass_check_at_resume &&
	    (sb->flags & (SSDP_SB_CLEAN | SSDP_SB_NO_DIRTY)) !=
	    (SSDP_SB_CLEAN | SSDP_SB_NO_DIRTY)) {
		DMERR("%s: the caching table left dirty blocks (or no clean superblock): refusing to resume 'cache off' over them; load the caching table again and drain it first",
		      ssdp_name(sp));
		r = -EBUSY;
		goto out;
	}
	if (!(sb->flags & SSDP_SB_NO_DIRTY))
		DMWARN("%s: force: the cache's dirty blocks are discarded (the origin lacks them)",
		       ssdp_name(sp));
	sb->incompat |= SSDP_SB_INCOMPAT_BYPASSED;
	sb->flags &= ~SSDP_SB_NO_DIRTY;
	memset(page_address(page), 0, SSDP_META_BLOCK_BYTES);
	ssdp_sb_encode(sb, page_address(page));
	r = ssdp_sb_page_rw(sp, page, REQ_OP_WRITE | REQ_SYNC |
			      REQ_PREFLUSH | REQ_FUA);
	if (!r)
		DMINFO("%s: cache marked bypassed: a caching table will start it empty",
		       ssdp_name(sp));
done:
	if (r == -EUCLEAN)
		DMERR("%s: the cache has an origin_id this 'cache off' table lacks, so whose it is cannot be told: refusing to resume (add 'origin_id <id>')",
		      ssdp_name(sp));
	else if (r < 0)
		DMERR("%s: cannot mark the bypassed cache out of date: %d; refusing to resume",
		      ssdp_name(sp), r);
	else
		sp->meta_bypass = false;
out:
	kfree(sb);
	if (page)
		__free_page(page);
	return r < 0 ? r : 0;
}

/*
 * First resume: check again.  On a reload the new table's ctr read the
 * superblock while the old table was live; the old table's postsuspend
 * has written its final state (and clean flag) since.
 */
static int ssdp_meta_recheck(struct ssdprio *sp)
{
	struct ssdp_layout was = sp->layout;
	char *error = NULL;
	int r;

	r = ssdp_meta_check(sp, &error);
	if (!r && memcmp(&was, &sp->layout, sizeof(was))) {
		error = "Cache superblock changed since the table was loaded";
		r = -EINVAL;
	}
	if (r)
		DMERR("%s: %s", ssdp_name(sp), error ? error : "cannot check the cache");
	return r;
}

static int ssdp_meta_alloc_bitmaps(struct ssdprio *sp)
{
	size_t longs = BITS_TO_LONGS(ssdp_meta_blocks(&sp->layout));

	sp->meta->copy = kvcalloc(longs, sizeof(long), GFP_KERNEL);
	sp->meta->todo = kvcalloc(longs, sizeof(long), GFP_KERNEL);
	sp->meta->both = kvcalloc(longs, sizeof(long), GFP_KERNEL);
	if (!sp->meta->copy || !sp->meta->todo || !sp->meta->both)
		return -ENOMEM;
	return 0;
}

void ssdp_meta_dtr(struct ssdprio *sp)
{
	if (!sp->meta)
		return;
	kvfree(sp->meta->copy);
	kvfree(sp->meta->todo);
	kvfree(sp->meta->both);
	kfree(sp->meta->list);
	kfree(sp->meta->view);
	ssdp_buf_free(&sp->meta->buf);
	kfree(sp->meta);
	sp->meta = NULL;
}

static int ssdp_meta_format(struct ssdprio *sp)
{
	struct ssdp_sb_info *sb = &sp->meta->sb;
	struct ssdp_layout *l = &sp->layout;
	int r;

	memset(sb, 0, sizeof(*sb));
	sb->version = SSDP_FORMAT_VERSION;
	r = ssdp_fmap_set_version(&sp->fmap, SSDP_FORMAT_VERSION);
	if (r)
		return r;
	get_random_bytes(sb->uuid, sizeof(sb->uuid));
	memcpy(sb->origin_id, sp->origin_id, sizeof(sb->origin_id));
	sb->origin_sectors = bdev_nr_sectors(sp->origin->bdev);
	sb->cache_sectors = bdev_nr_sectors(sp->cache->bdev);
	sb->block_sectors = sp->cfg.block_sectors;
	sb->set_blocks = sp->cfg.set_blocks;
	sb->nr_csets = l->nr_csets;
	sb->rec_bytes = l->rec_bytes;
	sb->rec_sectors = l->rec_sectors;
	sb->data_start = l->data_start;
	sb->format_time = ktime_get_real_seconds();
	ssdp_sb_set_origin_uid(sp, sb);
	/*
	 * Another origin of the same size would be taken for this one by
	 * every later table (and its dirty blocks written over it): say so
	 * once, where the one who formats reads it.
	 */
	if (!(sb->compat & SSDP_SB_COMPAT_ORIGIN_UID) &&
	    !memchr_inv(sb->origin_id, 0, sizeof(sb->origin_id)))
		DMWARN("%s: origin %pg has no identity the kernel can read: the cache is tied to it by its size only; give the table 'origin_id <id>' (ssdprio-tool gen-origin-id) in every table, or format with ssdprio-tool create (it derives one from an md array UUID or a disk serial)",
		       ssdp_name(sp), sp->origin->bdev);
	sp->meta->seq = 1;
	/* No record is written yet: each block's first write fills both. */
	bitmap_fill(sp->meta->both, ssdp_meta_blocks(l));
	/* Records of an older format fail the new UUID's checksum: free. */
	sp->meta->rec_seed = ssdp_rec_seed(sb->uuid, sb->version);
	DMINFO("%s: formatted the cache: %llu sets of %u blocks",
	       ssdp_name(sp), l->nr_csets, sb->set_blocks);
	return ssdp_meta_write_sb(sp, false);
}

/*
 * One record read back at load: restore it into the frame map.  Clean
 * blocks past the end of the table are dropped (a tag left without blocks
 * freed), the record marked changed and counted in meta_fixups: it must be
 * rewritten before the device serves I/O (ssdp_meta_preresume), or a later
 * shorter or longer table could find them again.  Dirty blocks past the
 * end: refused.  The last origin set may be cut by the end: its blocks are
 * judged one by one.
 */
static int ssdp_meta_restore(struct ssdprio *sp, u32 cset,
			     struct ssdp_rec_view *v, bool keep_clean)
{
	u32 set_blocks = sp->cfg.set_blocks, t, b, blk, nr_past;
	u64 nr_osets = ssdp_nr_osets(sp);
	bool fixed = false;
	int r;

	for (t = 0; t < SSDP_REC_TAGS; t++) {
		if (v->tags[t] == SSDP_REC_TAG_FREE ||
		    v->tags[t] < nr_osets - 1)
			continue;
		nr_past = 0;
		for (b = 0; b < set_blocks; b++) {
			if (ssdp_rec_owner(v, b) != t)
				continue;
			blk = ssdp_rec_block(v, set_blocks, sp->fmap.version, b);
			if (((sector_t)v->tags[t] << sp->set_shift) +
			    ((sector_t)blk << sp->block_shift) < sp->ti->len)
				continue;
			if (ssdp_rec_dirty(v, b)) {
				DMERR("%s: cache set %u holds dirty blocks of origin set %u, past the end of the table",
				      ssdp_name(sp), cset, v->tags[t]);
				return -ERANGE;
			}
			v->owners[b / 2] |= 0xf << (b % 2 * 4);
			v->alt[b / 8] &= ~(1U << (b % 8));
			nr_past++;
		}
		if (v->tags[t] >= nr_osets) {
			DMWARN("%s: cache set %u holds origin set %u past the end; dropped (clean)",
			       ssdp_name(sp), cset, v->tags[t]);
			v->tags[t] = SSDP_REC_TAG_FREE;
			fixed = true;
		} else if (nr_past) {
			DMWARN("%s: cache set %u holds %u blocks of origin set %u past the end; dropped (clean)",
			       ssdp_name(sp), cset, nr_past, v->tags[t]);
			fixed = true;
		}
	}
	r = ssdp_fmap_load_set(&sp->fmap, cset, v, keep_clean);
	if (!r && fixed) {
		ssdp_fmap_mark_changed(&sp->fmap, cset);
		sp->meta->fixups++;
	}
	return r;
}

/*
 * Read @n metadata blocks from @k of copy @c into @buf.  A read error
 * is retried block by block; a block that cannot be read is left zeroed
 * (its records fail their checksum, so the other copy's are used) and
 * set in @bad.  Returns 0, or the error when no block could be read.
 */
static int ssdp_meta_read_copy(struct ssdprio *sp, struct ssdp_buf *buf,
			       unsigned int c, u64 k, u32 n,
			       unsigned long *bad)
{
	struct ssdp_layout *l = &sp->layout;
	u32 s, nbad = 0;
	int r;

	bitmap_zero(bad, SSDP_LOAD_CHUNK_BLOCKS);
	r = ssdp_io_meta_sync(sp, buf, 0, ssdp_rec_sector(l, c, k),
			      n * SSDP_META_BLOCK_BYTES, REQ_OP_READ);
	if (!r)
		return 0;
	for (s = 0; s < n; s++) {
		size_t off = (size_t)s << SSDP_MB_SHIFT;

		if (!ssdp_io_meta_sync(sp, buf, off,
				       ssdp_rec_sector(l, c, k + s),
				       SSDP_META_BLOCK_BYTES, REQ_OP_READ))
			continue;
		memset(ssdp_buf_addr(buf, off), 0, SSDP_META_BLOCK_BYTES);
		__set_bit(s, bad);
		nbad++;
	}
	DMWARN("%s: %u metadata blocks of copy %u from block %llu unreadable (%d): using the other copy's",
	       ssdp_name(sp), nbad, c, k, r);
	return 0;
}

static int ssdp_meta_load(struct ssdprio *sp)
{
	struct ssdp_layout *l = &sp->layout;
	u32 rpb = ssdp_recs_per_block(sp), rb = l->rec_bytes;
	u64 nr_blocks = ssdp_meta_blocks(l);
	u32 set_blocks = sp->cfg.set_blocks;
	bool recovering = !(sp->meta->sb.flags & SSDP_SB_CLEAN);
	struct ssdp_buf bufs[SSDP_META_COPIES] = {};
	DECLARE_BITMAP(bad[SSDP_META_COPIES], SSDP_LOAD_CHUNK_BLOCKS);
	unsigned long flags;
	u64 k, max_seq = sp->meta->sb.seq, loaded = 0, lone_recs = 0;
	u64 mixed_blocks = 0;
	u64 t0 = ktime_get_ns();
	int r = -ENOMEM, c;

	/*
	 * A version 2 cache becomes version 3 (no alt frame yet; its records
	 * keep their seed); the seed of the first commit after the take-over
	 * must be version 3's too, which the version 2 seed is.
	 */
	sp->meta->rec_seed = ssdp_rec_seed(sp->meta->sb.uuid,
					   sp->meta->sb.version);
	r = ssdp_fmap_set_version(&sp->fmap,
				  sp->meta->sb.version == SSDP_FORMAT_VERSION ?
				  SSDP_FORMAT_VERSION : SSDP_FORMAT_V3);
	if (r)
		goto out;
	r = -ENOMEM;
	for (c = 0; c < SSDP_META_COPIES; c++)
		if (ssdp_buf_alloc(&bufs[c], SSDP_LOAD_CHUNK_BLOCKS *
				   SSDP_META_BLOCK_BYTES, GFP_KERNEL))
			goto out;
	r = 0;

	for (k = 0; k < nr_blocks; k += SSDP_LOAD_CHUNK_BLOCKS) {
		u32 n = min_t(u64, SSDP_LOAD_CHUNK_BLOCKS, nr_blocks - k);
		u32 s;

		for (c = 0; c < SSDP_META_COPIES; c++)
			ssdp_meta_read_copy(sp, &bufs[c], c, k, n, bad[c]);
		for (s = 0; s < n; s++) {
			if (test_bit(s, bad[0]) && test_bit(s, bad[1])) {
				DMERR("%s: metadata block %llu unreadable in both copies",
				      ssdp_name(sp), k + s);
				r = -EIO;
				goto out;
			}
		}
		for (s = 0; s < n && !r; s++) {
			u64 first = (k + s) * rpb;
			struct ssdp_blk_copies bc;
			bool both_good = true, mixed;
			u32 j;

			ssdp_blk_copies_init(&bc);

			spin_lock_irqsave(&sp->cache_lock, flags);
			for (j = 0; j < rpb && first + j < l->nr_csets && !r;
			     j++) {
				size_t off = ((size_t)s << SSDP_MB_SHIFT) + j * rb;
				struct ssdp_rec_view *v = sp->meta->view;
				bool lone;
				int pick;

				pick = ssdp_rec_pick(ssdp_buf_addr(&bufs[0], off),
						     ssdp_buf_addr(&bufs[1], off),
						     rb, sp->meta->rec_seed,
						     first + j, set_blocks,
						     l->nr_csets,
						     sp->meta->sb.version, v,
						     v + 1, &lone);
				ssdp_blk_copies_add(&bc, pick, lone, v->seq,
						    v[1].seq);
				if (pick < 0 || lone)
					both_good = false;
				if (pick < 0)
					continue;
				max_seq = max(max_seq, v->seq);
				/* The top of this file: why lone keeps dirty only. */
				r = ssdp_meta_restore(sp, first + j, v,
						      !recovering && !lone);
				if (lone) {
					lone_recs++;
					ssdp_fmap_mark_changed(&sp->fmap,
							       first + j);
				}
				loaded += !!sp->fmap.nr_tags[first + j];
			}
			/*
			 * A block with an unreadable copy is rewritten at the
			 * next commit, so that the unreadable copy (which may
			 * have been the newer) is replaced by what we serve.
			 */
			/*
			 * So is a block whose records are newest in different
			 * copies (a torn write): both copies, the torn one
			 * first (ssdp_blk_copies_next()).
			 */
			if (ssdp_blk_copies_next(&bc, &mixed) == 0)
				__set_bit(k + s, sp->meta->copy);
			if (mixed) {
				/*
				 * Before any I/O: the frames the torn write's
				 * records call clean or free must not change
				 * hands while a tear of this rewrite could
				 * bring back the copy that calls them dirty.
				 */
				both_good = false;
				mixed_blocks++;
				sp->meta->fixups += min_t(u64, rpb,
							  l->nr_csets - first);
			}
			for (j = 0; j < rpb && first + j < l->nr_csets; j++)
				if (test_bit(s, bad[0]) || test_bit(s, bad[1]) ||
				    mixed)
					ssdp_fmap_mark_changed(&sp->fmap,
							       first + j);
			spin_unlock_irqrestore(&sp->cache_lock, flags);
			/* The next write of this block: ssdp_blk_copies_next(). */
			if (!both_good)
				__set_bit(k + s, sp->meta->both);
		}
		if (r) {
			if (r == -ERANGE)
				DMERR("%s: the table is shorter than the origin the cache was formatted for, and dirty blocks lie past its end: refused (load the full length and flush_dirty first)",
				      ssdp_name(sp));
			else
				DMERR("%s: metadata record does not fit the map: %d",
				      ssdp_name(sp), r);
			goto out;
		}
	}
	if (max_seq >= SSDP_SEQ_LIMIT) {
		DMERR("%s: metadata sequence number %llu is past any a cache reaches (forged or corrupt, with a good checksum): refused, as the next commits would wrap it and later loads believe stale copies ('ssdprio-tool check'; wipe the cache to start it anew)",
		      ssdp_name(sp), max_seq);
		r = -EUCLEAN;
		goto out;
	}
	sp->meta->seq = max_seq;
	if (mixed_blocks)
		DMWARN("%s: %llu metadata blocks torn (records newest in different copies): both copies rewritten at the next commit, the torn one first",
		       ssdp_name(sp), mixed_blocks);
	if (lone_recs && !recovering)
		DMWARN("%s: %llu cache sets' records good in one copy only: their clean blocks dropped",
		       ssdp_name(sp), lone_recs);
	sp->meta->load_ms = div_u64(ktime_get_ns() - t0, NSEC_PER_MSEC);
	DMINFO("%s: loaded %llu mapped sets (%llu valid, %llu dirty blocks) after a%s shutdown in %u ms",
	       ssdp_name(sp), loaded, sp->fmap.total_valid,
	       sp->fmap.total_dirty,
	       recovering ? "n unclean (clean blocks dropped)" : " clean",
	       sp->meta->load_ms);
	r = 0;
out:
	for (c = 0; c < SSDP_META_COPIES; c++)
		ssdp_buf_free(&bufs[c]);
	return r;
}

/*
 * The table this one replaced served the origin through another cache
 * device, so whatever this cache holds dates from before, and the origin
 * may have changed since (written through that other cache).  Clean
 * blocks would be stale: it starts empty.  Dirty ones may be older than
 * the origin now, and written back they could overwrite newer data: the
 * resume is refused ("cache off" naming this cache with force gives them
 * up).
 */
static int ssdp_meta_away(struct ssdprio *sp)
{
	const struct ssdp_sb_info *sb = &sp->meta->sb;

	lockdep_assert_held(&sp->meta->lock);
	if ((sb->flags & (SSDP_SB_CLEAN | SSDP_SB_NO_DIRTY)) !=
	    (SSDP_SB_CLEAN | SSDP_SB_NO_DIRTY)) {
		DMERR("%s: %pg was away while the table replaced served the origin through another cache, and may hold dirty blocks older than the origin now: refusing to resume (to give them up, 'cache off' naming it with 'force')",
		      ssdp_name(sp), sp->cache->bdev);
		return -EBUSY;
	}
	DMWARN("%s: %pg was away while the table replaced served the origin through another cache: its contents are out of date and are discarded; starting empty",
	       ssdp_name(sp), sp->cache->bdev);
	sp->meta->must_format = true;
	return 0;
}

/*
 * preresume: the first resume formats or loads; every resume marks the
 * superblock unclean before any I/O can change the cache.
 *
 * Once the map is loaded, a failed metadata write does not stop the
 * device: flushes and FUA writes fail (nothing can be made durable), the
 * cache is degraded (no frame changes hands), but reads and writes go on
 * and suspend, resume and remove work; a resume
 * that refused would leave the device suspended with its I/O queued.
 * The superblock stays unclean on the SSD (postsuspend never marks a
 * failed cache clean), so the next load treats every valid block as
 * dirty.
 */
int ssdp_meta_preresume(struct ssdprio *sp)
{
	int r = 0;

	mutex_lock(&sp->meta->lock);
	if (sp->meta->state == SSDP_META_FAILED) {
		if (!sp->meta->loaded) {
			r = -EIO;	/* nothing to serve */
			goto out;
		}
		/* Best effort: the superblock may still say clean. */
		sp->meta->seq++;
		ssdp_meta_write_sb(sp, false);
		goto out;
	}
	if (sp->meta->state == SSDP_META_NONE) {
		r = ssdp_meta_recheck(sp);
		if (!r && sp->cache_was_away && !sp->meta->must_format)
			r = ssdp_meta_away(sp);
		if (!r)
			r = ssdp_meta_alloc_bitmaps(sp);
		if (!r && sp->meta->must_format) {
			r = ssdp_meta_format(sp);
			ssdp_meta_set_state_locked(sp, SSDP_META_FORMATTED);
		} else if (!r) {
			ssdp_meta_set_state_locked(sp,
				sp->meta->sb.flags & SSDP_SB_CLEAN ?
				SSDP_META_CLEAN : SSDP_META_RECOVERED);
			r = ssdp_meta_load(sp);
		}
		if (r) {
			/* serves nothing */
			ssdp_meta_set_state_locked(sp, SSDP_META_FAILED);
			goto out;
		}
		sp->meta->loaded = true;
		if (sp->meta->sb.version == SSDP_FORMAT_V2)
			DMINFO("%s: cache of format version 2 taken over in place as version %u",
			       ssdp_name(sp), SSDP_FORMAT_V3);
		else if (sp->meta->sb.version == SSDP_FORMAT_V3)
			DMINFO("%s: cache of format version 3 used as it is (format it afresh for version %u's frame placement)",
			       ssdp_name(sp), SSDP_FORMAT_VERSION);
		if (!(sp->meta->sb.compat & SSDP_SB_COMPAT_ORIGIN_UID))
			ssdp_sb_set_origin_uid(sp, &sp->meta->sb);
	}
	sp->meta->seq++;
	r = ssdp_meta_write_sb(sp, false);
	if (!r && sp->meta->fixups) {
		/*
		 * Records of clean blocks past the end of the table: write
		 * them without those now, before a table of another length
		 * could find them again.  Blocks a torn write left mixed:
		 * both copies, before any frame changes hands.
		 */
		DMINFO("%s: %u metadata records rewritten before serving (clean blocks past the end, or torn)",
		       ssdp_name(sp), sp->meta->fixups);
		r = ssdp_meta_commit_locked(sp);
		if (!r)
			sp->meta->fixups = 0;
	}
	if (r) {
		ssdp_meta_fail_locked(sp, "superblock write failed");
		/*
		 * The first resume must not serve a cache whose resolution
		 * is not durable; later ones serve on (see above).
		 */
		if (sp->meta->fixups)
			sp->meta->loaded = false;
		else
			r = 0;
	}
out:
	if (!r) {
		/* It serves from here on, failed or not. */
		sp->meta->served = true;
		if (sp->meta->state == SSDP_META_FAILED)
			ssdp_meta_mark_failed_locked(sp);
	}
	mutex_unlock(&sp->meta->lock);
	return r;
}

/* Gather up to @max metadata blocks to write from meta_todo, from @k on. */
static u32 ssdp_meta_gather(struct ssdprio *sp, u64 *k, u32 *list, u32 max)
{
	u64 nr_blocks = ssdp_meta_blocks(&sp->layout);
	u32 n = 0;

	while (n < max) {
		*k = find_next_bit(sp->meta->todo, nr_blocks, *k);
		if (*k >= nr_blocks)
			break;
		__clear_bit(*k, sp->meta->todo);
		list[n++] = *k;
		(*k)++;
	}
	return n;
}

/*
 * Encode metadata block @s into @dst from the frame map; cache_lock held.
 * Its sets' changed bits are cleared (frame_map.h: encode, then done).
 */
static void ssdp_meta_encode_block(struct ssdprio *sp, u64 s, u8 *dst)
{
	u32 rpb = ssdp_recs_per_block(sp), rb = sp->layout.rec_bytes;
	struct ssdp_rec_view *v = sp->meta->view;
	u32 j;

	lockdep_assert_held(&sp->cache_lock);
	memset(dst, 0, SSDP_META_BLOCK_BYTES);
	for (j = 0; j < rpb; j++) {
		u64 cset = s * rpb + j;

		if (cset >= sp->layout.nr_csets)
			break;
		ssdp_fmap_encode_set(&sp->fmap, cset, v);
		v->seq = sp->meta->seq;
		ssdp_rec_encode(dst + j * rb, rb, sp->meta->rec_seed, cset,
				sp->cfg.set_blocks, v);
	}
}

/* The records of metadata block @s are durable (@ok) or not. */
static void ssdp_meta_block_done(struct ssdprio *sp, u64 s, bool ok)
{
	u32 rpb = ssdp_recs_per_block(sp), j;
	unsigned long flags;

	spin_lock_irqsave(&sp->cache_lock, flags);
	for (j = 0; j < rpb && s * rpb + j < sp->layout.nr_csets; j++) {
		if (ok)
			ssdp_fmap_commit_done(&sp->fmap, s * rpb + j);
		else
			ssdp_fmap_commit_failed(&sp->fmap, s * rpb + j);
	}
	spin_unlock_irqrestore(&sp->cache_lock, flags);
}

/*
 * After list[i..i+run) went durably to copy !@copy: write those in
 * meta_both to @copy too, so that neither copy is left blank or bad
 * (see the top of this file).  The copy that may hold the only good
 * record is overwritten only now, after its replacement is durable.
 */
static int ssdp_meta_write_second(struct ssdprio *sp, const u32 *list,
				  u32 i, u32 run, unsigned int copy)
{
	u32 j;
	int r;

	for (j = i; j < i + run; j++) {
		if (!test_bit(list[j], sp->meta->both))
			continue;
		r = ssdp_io_meta_sync(sp, &sp->meta->buf,
				      (size_t)j << SSDP_MB_SHIFT,
				      ssdp_rec_sector(&sp->layout, copy, list[j]),
				      SSDP_META_BLOCK_BYTES,
				      REQ_OP_WRITE | REQ_SYNC | REQ_FUA);
		if (r)
			return r;
		__clear_bit(list[j], sp->meta->both);
		sp->meta->block_writes++;
	}
	return 0;
}

/* Write the gathered blocks, runs of neighbours in one bio each. */
static int ssdp_meta_write_list(struct ssdprio *sp, const u32 *list, u32 n)
{
	u32 i = 0;
	int r = 0;

	while (i < n && !r) {
		unsigned int copy = !test_bit(list[i], sp->meta->copy);
		u32 run = 1;

		while (i + run < n && list[i + run] == list[i] + run &&
		       (unsigned int)!test_bit(list[i + run], sp->meta->copy) ==
		       copy)
			run++;
		r = ssdp_io_meta_sync(sp, &sp->meta->buf,
				      (size_t)i << SSDP_MB_SHIFT,
				      ssdp_rec_sector(&sp->layout, copy, list[i]),
				      run * SSDP_META_BLOCK_BYTES,
				      REQ_OP_WRITE | REQ_SYNC | REQ_FUA);
		if (!r) {
			u32 j;

			for (j = i; j < i + run; j++) {
				if (copy)
					__set_bit(list[j], sp->meta->copy);
				else
					__clear_bit(list[j], sp->meta->copy);
			}
			sp->meta->block_writes += run;
			r = ssdp_meta_write_second(sp, list, i, run, !copy);
		}
		i += run;
	}
	return r;
}

/*
 * A commit's flush of @bdev (the origin or the SSD), tried again after a
 * failure: a path that fails over (multipath, a SAN switch, a reseated
 * cable) fails a flush or two and then carries on, and one failure must
 * not retire a healthy cache.  The writes the flush is to make durable
 * had all completed, and a later flush that succeeds covers them as well;
 * the records that vouch for them are written only after a success, never
 * after a failure.  *@retries is what the commit has left, so that a
 * commit of many chunks over a flapping path stays bounded too: meta->lock
 * is held (never cache_lock) and the user's flushes and FUA writes wait for
 * the commit, and so does a suspend (postsuspend commits), for at most
 * SSDP_FLUSH_RETRIES backoffs.
 */
static int ssdp_meta_flush_locked(struct ssdprio *sp, struct block_device *bdev,
				  unsigned int *retries)
{
	static const unsigned int backoff_ms[SSDP_FLUSH_RETRIES] = { 250, 750 };
	int r;

	lockdep_assert_held(&sp->meta->lock);
	for (;;) {
		r = blkdev_issue_flush(bdev);
		if (!r || !*retries)
			return r;
		DMWARN_LIMIT("%s: %s flush failed (%d) during a metadata commit: trying again",
			     ssdp_name(sp),
			     bdev == sp->origin->bdev ? "origin" : "SSD", r);
		msleep(backoff_ms[SSDP_FLUSH_RETRIES - *retries]);
		(*retries)--;
	}
}

/* See the protocol at the top.  Process context. */
static int ssdp_meta_commit_locked(struct ssdprio *sp)
{
	u32 *list = sp->meta->list;
	unsigned int retries = SSDP_FLUSH_RETRIES;
	u32 rpb, origin_dirty, ssd_dirty, n, i;
	unsigned long flags;
	u64 k = 0;
	bool origin_failed = false;
	u32 cset;
	int r = 0;

	lockdep_assert_held(&sp->meta->lock);
	if (sp->meta->state == SSDP_META_FAILED)
		return -EIO;
	if (sp->meta->state == SSDP_META_NONE)
		return 0;	/* never resumed: nothing to make durable */
	rpb = ssdp_recs_per_block(sp);

	spin_lock_irqsave(&sp->cache_lock, flags);
	for (cset = ssdp_fmap_next_changed(&sp->fmap, 0); cset != SSDP_NONE;
	     cset = ssdp_fmap_next_changed(&sp->fmap, cset + 1))
		__set_bit(cset / rpb, sp->meta->todo);
	origin_dirty = sp->origin_unflushed;
	ssd_dirty = sp->ssd_unflushed;
	sp->origin_unflushed = 0;
	sp->ssd_unflushed = 0;
	spin_unlock_irqrestore(&sp->cache_lock, flags);

	sp->meta->seq++;
	for (;;) {
		n = ssdp_meta_gather(sp, &k, list, SSDP_META_CHUNK_BLOCKS);
		if (!n)
			break;
		spin_lock_irqsave(&sp->cache_lock, flags);
		for (i = 0; i < n; i++)
			ssdp_meta_encode_block(sp, list[i],
				ssdp_buf_addr(&sp->meta->buf,
					      (size_t)i << SSDP_MB_SHIFT));
		/*
		 * What this chunk encodes may be newer than the counts taken
		 * above: a block dropped because a write went to the origin
		 * since is encoded free, and that write is flushed first.
		 */
		origin_dirty += sp->origin_unflushed;
		ssd_dirty += sp->ssd_unflushed;
		sp->origin_unflushed = 0;
		sp->ssd_unflushed = 0;
		spin_unlock_irqrestore(&sp->cache_lock, flags);
		/* Data first: the records just encoded may vouch for it. */
		if (origin_dirty) {
			r = ssdp_meta_flush_locked(sp, sp->origin->bdev,
						   &retries);
			if (r) {
				origin_failed = true;
				break;
			}
			origin_dirty = 0;
		}
		r = ssdp_meta_flush_locked(sp, sp->cache->bdev, &retries);
		if (r)
			break;
		ssd_dirty = 0;
		r = ssdp_meta_write_list(sp, list, n);
		for (i = 0; i < n; i++)
			ssdp_meta_block_done(sp, list[i], !r);
		if (r)
			break;
	}
	if (!r && origin_dirty) {
		r = ssdp_meta_flush_locked(sp, sp->origin->bdev, &retries);
		origin_failed = r != 0;
	}
	if (!r && ssd_dirty)
		r = ssdp_meta_flush_locked(sp, sp->cache->bdev, &retries);
	if (r && origin_failed) {
		DMERR("%s: origin flush failed: %d; flushes will fail from now on (meta_state failed), I/O goes on; the SSD keeps the last commit's records: once the origin answers, a new table loads them as after a crash",
		      ssdp_name(sp), r);
		ssdp_meta_fail_origin_locked(sp);
		return r;
	}
	if (r) {
		DMERR("%s: metadata commit failed: %d; flushes will fail from now on (meta_state failed), I/O goes on",
		      ssdp_name(sp), r);
		ssdp_meta_fail_locked(sp, "metadata write failed");
		return r;
	}
	sp->meta->commits++;
	return 0;
}

/* Process context; takes meta->lock. */
int ssdp_meta_commit(struct ssdprio *sp)
{
	int r;

	mutex_lock(&sp->meta->lock);
	r = ssdp_meta_commit_locked(sp);
	mutex_unlock(&sp->meta->lock);
	return r;
}

/*
 * postsuspend, with no commit running or to come (the caller has flushed
 * the commit worker): everything durable, then the clean flag.
 */
void ssdp_meta_postsuspend(struct ssdprio *sp)
{
	if (ssdp_meta_commit(sp))
		return;
	mutex_lock(&sp->meta->lock);
	if (sp->meta->state != SSDP_META_NONE &&
	    sp->meta->state != SSDP_META_FAILED && ssdp_meta_write_sb(sp, true))
		ssdp_meta_fail_locked(sp, "superblock write failed");
	mutex_unlock(&sp->meta->lock);
}

unsigned int ssdp_meta_status(struct ssdprio *sp, char *result,
			      unsigned int maxlen, unsigned int sz)
{
	DMEMIT(" meta_state %s meta_commits %llu meta_block_writes %llu meta_load_ms %u",
	       ssdp_meta_state_name(READ_ONCE(sp->meta->state)),
	       READ_ONCE(sp->meta->commits), READ_ONCE(sp->meta->block_writes),
	       sp->meta->load_ms);
	return sz;
}
