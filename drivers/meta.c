// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio persistent metadata: format, load, commit, clean shutdown.
 * The on-SSD format is drivers/ssdprio_format.h; meta_codec.c encodes it.
 *
 * Commit protocol (one commit serves every flush and FUA write that
 * arrived before it started):
 *   1. take the sets whose persistent state changed (cmap "changed"
 *      bits) and note how many sets wait in limbo;
 *   2. per chunk of metadata blocks: encode them from the cache map, THEN
 *      flush the origin (if user writes reached it) and the SSD, so every
 *      block a record calls valid has its data durable before the record
 *      is written;
 *   3. write each metadata block to its other copy with FUA, and only then
 *      call that copy the newest;
 *   4. release the limbo sets counted in 1: their "free" records are now
 *      durable, so their blocks may be reused for another origin set.
 * Cost per flush in steady state: one SSD flush (plus one origin flush
 * when writes went to the origin) and one FUA write per run of changed
 * metadata blocks; no metadata I/O per data write.
 *
 * Blocks become clean only after an origin flush (evict.c), and a write
 * to a dirty block never invalidates it (cache.c), so a durable record
 * never calls a block clean or invalid while the origin lacks its data.
 *
 * After an unclean shutdown every valid block is loaded as dirty: a clean
 * block may have been overwritten in place after its last commit, and
 * writing it back keeps the origin from later serving the older copy.
 *
 * Metadata I/O happens only between preresume and postsuspend, never in
 * ctr or dtr: on a table reload the new table's ctr runs while the old
 * table is live, and the old table's dtr runs after the new one resumed.
 *
 * Locking: meta_lock (mutex) serialises all metadata I/O and protects the
 * fields marked "meta_lock" in struct ssdprio; it is taken outside
 * cache_lock and never inside it.
 */
#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/random.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>

#include "ssdprio.h"
#include "meta_codec.h"

/* Metadata blocks encoded and written per round of a commit. */
#define SSDP_META_CHUNK_BLOCKS	32U	/* 128 KiB */
/* Metadata blocks read per round of a load (per copy). */
#define SSDP_LOAD_CHUNK_BLOCKS	256U	/* 1 MiB */
#define SSDP_MB_SHIFT		12	/* log2(SSDP_META_BLOCK_BYTES) */

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

static inline u32 ssdp_recs_per_block(struct ssdprio *sp)
{
	return SSDP_META_BLOCK_BYTES / sp->layout.rec_bytes;
}

static void *ssdp_buf_addr(struct ssdp_buf *buf, size_t off)
{
	return page_address(buf->pages[off >> PAGE_SHIFT]) +
	       (off & ~PAGE_MASK);
}

/*
 * Synchronous I/O of @nr sectors at @sector on the cache device, to or
 * from @buf at byte @off.  Metadata is on the user's flush path: it keeps
 * the default priority.
 */
static int ssdp_meta_rw(struct ssdprio *sp, struct ssdp_buf *buf, size_t off,
			sector_t sector, unsigned int nr, blk_opf_t opf)
{
	unsigned int bytes = nr << SECTOR_SHIFT;
	int r = 0;

	/* A bio holds at most BIO_MAX_VECS pages: one bio per such run. */
	while (bytes && !r) {
		unsigned int in_page = off & ~PAGE_MASK;
		unsigned int len = min_t(unsigned int, bytes,
					 BIO_MAX_VECS * PAGE_SIZE - in_page);
		unsigned int left = len;
		struct bio *bio;

		bio = bio_alloc_bioset(sp->cache->bdev,
				       DIV_ROUND_UP(in_page + len, PAGE_SIZE),
				       opf, GFP_NOIO, &sp->bs);
		bio->bi_iter.bi_sector = sector;
		while (left) {
			unsigned int pg_off = off & ~PAGE_MASK;
			unsigned int n = min_t(unsigned int, left,
					       PAGE_SIZE - pg_off);

			__bio_add_page(bio, buf->pages[off >> PAGE_SHIFT], n,
				       pg_off);
			off += n;
			left -= n;
		}
		r = submit_bio_wait(bio);
		bio_put(bio);
		sector += len >> SECTOR_SHIFT;
		bytes -= len;
	}
	return r;
}

static int ssdp_meta_write_sb(struct ssdprio *sp, bool clean)
{
	void *block = ssdp_buf_addr(&sp->meta_buf, 0);
	int r;

	sp->sb.flags = clean ? SSDP_SB_CLEAN : 0;
	sp->sb.seq = sp->meta_seq;
	memset(block, 0, SSDP_META_BLOCK_BYTES);
	ssdp_sb_encode(&sp->sb, block);
	/* PREFLUSH: what the superblock vouches for is durable first. */
	r = ssdp_meta_rw(sp, &sp->meta_buf, 0, 0, SSDP_META_BLOCK_SECTORS,
			 REQ_OP_WRITE | REQ_SYNC | REQ_PREFLUSH | REQ_FUA);
	if (r)
		DMERR("%s: superblock write failed: %d", ssdp_name(sp), r);
	return r;
}

/*
 * Read the superblock and check it against the table: decides between
 * format and load, and takes the superblock's layout.  No writes.
 */
static int ssdp_meta_check(struct ssdprio *sp, char **error)
{
	struct ssdp_sb_info *sb = &sp->sb;
	sector_t cache_sectors = bdev_nr_sectors(sp->cache->bdev);
	sector_t origin_sectors = bdev_nr_sectors(sp->origin->bdev);
	enum ssdp_sb_result res;
	int r;

	sp->meta_must_format = false;
	r = ssdp_meta_rw(sp, &sp->meta_buf, 0, 0, SSDP_META_BLOCK_SECTORS,
			 REQ_OP_READ);
	if (r) {
		*error = "Cannot read the cache superblock";
		return r;
	}
	res = ssdp_sb_decode(ssdp_buf_addr(&sp->meta_buf, 0), sb);
	r = -EINVAL;
	switch (res) {
	case SSDP_SB_OK:
		break;
	case SSDP_SB_BLANK:
	case SSDP_SB_FOREIGN:
		if (sp->format) {
			sp->meta_must_format = true;
			return 0;
		}
		*error = res == SSDP_SB_BLANK ?
			"Cache device is blank: add the feature flag 'format' to initialise it" :
			"Cache device holds no ssdprio superblock: add the feature flag 'format' to overwrite it";
		return r;
	case SSDP_SB_BAD_CRC:
		*error = "Cache superblock checksum mismatch: refusing the cache device (ssdprio-tool wipe to start over)";
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
	if (origin_sectors != sb->origin_sectors) {
		DMERR("cache belongs to an origin of %llu sectors; this one has %llu",
		      sb->origin_sectors, (unsigned long long)origin_sectors);
		*error = "Cache belongs to another origin (origin size differs)";
		return r;
	}
	if (memcmp(sb->origin_id, sp->origin_id, sizeof(sb->origin_id))) {
		*error = "Cache belongs to another origin (origin_id differs)";
		return r;
	}
	/* The superblock's layout rules, even if the device has grown. */
	ssdp_sb_layout(sb, &sp->layout);
	return 0;
}

/* ctr: check what the cache device holds against the table; no writes. */
int ssdp_meta_ctr(struct ssdprio *sp, char **error)
{
	int r;

	mutex_init(&sp->meta_lock);
	INIT_WORK(&sp->commit_work, ssdp_commit_work_fn);
	bio_list_init(&sp->commit_bios);
	if (bdev_logical_block_size(sp->cache->bdev) > SSDP_META_BLOCK_BYTES) {
		*error = "Cache device logical block size is above 4096";
		return -EINVAL;
	}
	r = ssdp_buf_alloc(&sp->meta_buf,
			   SSDP_META_CHUNK_BLOCKS * SSDP_META_BLOCK_BYTES,
			   GFP_KERNEL);
	sp->meta_list = kcalloc(SSDP_META_CHUNK_BLOCKS,
				sizeof(*sp->meta_list), GFP_KERNEL);
	if (r || !sp->meta_list) {
		*error = "Cannot allocate the metadata buffer";
		return -ENOMEM;
	}
	return ssdp_meta_check(sp, error);
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

	sp->meta_copy = kvcalloc(longs, sizeof(long), GFP_KERNEL);
	sp->meta_todo = kvcalloc(longs, sizeof(long), GFP_KERNEL);
	if (!sp->meta_copy || !sp->meta_todo)
		return -ENOMEM;
	return 0;
}

void ssdp_meta_dtr(struct ssdprio *sp)
{
	flush_work(&sp->commit_work);
	kvfree(sp->meta_copy);
	kvfree(sp->meta_todo);
	kfree(sp->meta_list);
	ssdp_buf_free(&sp->meta_buf);
}

static int ssdp_meta_format(struct ssdprio *sp)
{
	struct ssdp_sb_info *sb = &sp->sb;
	struct ssdp_layout *l = &sp->layout;

	memset(sb, 0, sizeof(*sb));
	sb->version = SSDP_FORMAT_VERSION;
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
	sp->meta_seq = 1;
	/* Records of an older format fail the new UUID's checksum: free. */
	sp->rec_seed = ssdp_rec_seed(sb->uuid);
	DMINFO("%s: formatted the cache: %llu sets of %u blocks",
	       ssdp_name(sp), l->nr_csets, sb->set_blocks);
	return ssdp_meta_write_sb(sp, false);
}

/* One record read back at load: restore it into the cache map. */
static int ssdp_meta_restore(struct ssdprio *sp, u32 cset,
			     const struct ssdp_rec_info *ri, u64 *seqs,
			     bool recovering)
{
	struct ssdp_cmap *cm = &sp->cmap;
	u32 other;
	int r;

	if (ri->oset >= ssdp_nr_osets(sp)) {
		DMWARN("%s: cache set %u maps origin set %llu past the end; dropped",
		       ssdp_name(sp), cset, ri->oset);
		return 0;
	}
	other = ssdp_cmap_lookup(cm, ri->oset);
	if (other != SSDP_NONE) {
		/*
		 * Two records for one origin set: a torn commit left the
		 * old one.  The later mapping wins; the older set was clean
		 * when it was unmapped (only clean sets are unmapped).
		 */
		if (seqs[other] >= ri->map_seq)
			return 0;
		ssdp_cmap_clear_dirty(cm, other, 0, cm->set_blocks);
		ssdp_cmap_unmap(cm, other);
		ssdp_cmap_mark_changed(cm, other);
	}
	r = ssdp_cmap_map_restore(cm, cset, ri->oset, ri->map_seq);
	if (r)
		return r;
	seqs[cset] = ri->map_seq;
	/* Unclean: every valid block is treated as dirty (see the top). */
	return ssdp_cmap_put_bits(cm, cset, ri->valid,
				  recovering ? ri->valid : ri->dirty);
}

static int ssdp_meta_load(struct ssdprio *sp)
{
	struct ssdp_layout *l = &sp->layout;
	u32 rpb = ssdp_recs_per_block(sp), rb = l->rec_bytes;
	u64 nr_blocks = ssdp_meta_blocks(l);
	u32 set_blocks = sp->cfg.set_blocks;
	bool recovering = !(sp->sb.flags & SSDP_SB_CLEAN);
	struct ssdp_buf bufs[SSDP_META_COPIES] = {};
	unsigned long flags;
	u64 k, max_seq = sp->sb.seq, loaded = 0;
	u64 *seqs;
	u64 t0 = ktime_get_ns();
	int r = -ENOMEM, c;

	sp->rec_seed = ssdp_rec_seed(sp->sb.uuid);
	seqs = kvcalloc(l->nr_csets, sizeof(*seqs), GFP_KERNEL);
	if (!seqs)
		return r;
	for (c = 0; c < SSDP_META_COPIES; c++)
		if (ssdp_buf_alloc(&bufs[c], SSDP_LOAD_CHUNK_BLOCKS *
				   SSDP_META_BLOCK_BYTES, GFP_KERNEL))
			goto out;

	for (k = 0; k < nr_blocks; k += SSDP_LOAD_CHUNK_BLOCKS) {
		u32 n = min_t(u64, SSDP_LOAD_CHUNK_BLOCKS, nr_blocks - k);
		u32 s;

		for (c = 0; c < SSDP_META_COPIES; c++) {
			r = ssdp_meta_rw(sp, &bufs[c], 0,
					 ssdp_rec_sector(l, c, k),
					 n * SSDP_META_BLOCK_SECTORS,
					 REQ_OP_READ);
			if (r) {
				DMERR("%s: reading the metadata failed: %d",
				      ssdp_name(sp), r);
				goto out;
			}
		}
		for (s = 0; s < n && !r; s++) {
			u64 first = (k + s) * rpb;
			int block_pick = -1;
			u32 j;

			spin_lock_irqsave(&sp->cache_lock, flags);
			for (j = 0; j < rpb && first + j < l->nr_csets; j++) {
				size_t off = ((size_t)s << SSDP_MB_SHIFT) + j * rb;
				struct ssdp_rec_info ri;
				int pick;

				pick = ssdp_rec_pick(ssdp_buf_addr(&bufs[0], off),
						     ssdp_buf_addr(&bufs[1], off),
						     rb, sp->rec_seed,
						     first + j, set_blocks,
						     &ri);
				if (j == 0)
					block_pick = pick;
				if (pick < 0)
					continue;
				max_seq = max(max_seq, ri.seq);
				if (ri.oset == SSDP_OSET_FREE)
					continue;
				r = ssdp_meta_restore(sp, first + j, &ri, seqs,
						      recovering);
				loaded++;
			}
			spin_unlock_irqrestore(&sp->cache_lock, flags);
			/* The next write of this block goes to the other copy. */
			if (block_pick == 1)
				__set_bit(k + s, sp->meta_copy);
		}
		if (r) {
			DMERR("%s: metadata record does not fit the map: %d",
			      ssdp_name(sp), r);
			goto out;
		}
	}
	sp->meta_seq = max_seq;
	if (!recovering) {
		/* What was loaded is what is on the SSD. */
		spin_lock_irqsave(&sp->cache_lock, flags);
		for (k = 0; k < l->nr_csets; k++)
			ssdp_cmap_clear_changed(&sp->cmap, k);
		spin_unlock_irqrestore(&sp->cache_lock, flags);
	}
	sp->load_ms = div_u64(ktime_get_ns() - t0, NSEC_PER_MSEC);
	DMINFO("%s: loaded %llu mapped sets (%llu valid, %llu dirty blocks) after a%s shutdown in %u ms",
	       ssdp_name(sp), loaded, ssdp_cmap_total_valid(&sp->cmap),
	       ssdp_cmap_total_dirty(&sp->cmap),
	       recovering ? "n unclean" : " clean", sp->load_ms);
	r = 0;
out:
	for (c = 0; c < SSDP_META_COPIES; c++)
		ssdp_buf_free(&bufs[c]);
	kvfree(seqs);
	return r;
}

/*
 * preresume: the first resume formats or loads; every resume marks the
 * superblock unclean before any I/O can change the cache.
 */
int ssdp_meta_preresume(struct ssdprio *sp)
{
	int r = 0;

	mutex_lock(&sp->meta_lock);
	if (sp->meta_state == SSDP_META_FAILED) {
		r = -EIO;
		goto out;
	}
	if (sp->meta_state == SSDP_META_NONE) {
		r = ssdp_meta_recheck(sp);
		if (!r)
			r = ssdp_meta_alloc_bitmaps(sp);
		if (!r && sp->meta_must_format) {
			r = ssdp_meta_format(sp);
			sp->meta_state = SSDP_META_FORMATTED;
		} else if (!r) {
			sp->meta_state = sp->sb.flags & SSDP_SB_CLEAN ?
					 SSDP_META_CLEAN : SSDP_META_RECOVERED;
			r = ssdp_meta_load(sp);
		}
		if (r) {
			sp->meta_state = SSDP_META_FAILED;
			goto out;
		}
	}
	sp->meta_seq++;
	r = ssdp_meta_write_sb(sp, false);
	if (r)
		sp->meta_state = SSDP_META_FAILED;
out:
	mutex_unlock(&sp->meta_lock);
	return r;
}

/* Gather up to @max metadata blocks to write from meta_todo, from @k on. */
static u32 ssdp_meta_gather(struct ssdprio *sp, u64 *k, u32 *list, u32 max)
{
	u64 nr_blocks = ssdp_meta_blocks(&sp->layout);
	u32 n = 0;

	while (n < max) {
		*k = find_next_bit(sp->meta_todo, nr_blocks, *k);
		if (*k >= nr_blocks)
			break;
		__clear_bit(*k, sp->meta_todo);
		list[n++] = *k;
		(*k)++;
	}
	return n;
}

/* Encode metadata block @s into @dst from the cache map; cache_lock held. */
static void ssdp_meta_encode_block(struct ssdprio *sp, u64 s, u8 *dst)
{
	struct ssdp_cmap *cm = &sp->cmap;
	u32 rpb = ssdp_recs_per_block(sp), rb = sp->layout.rec_bytes;
	u8 valid[SSDP_MAX_SET_BLOCKS / 8], dirty[SSDP_MAX_SET_BLOCKS / 8];
	u32 j;

	memset(dst, 0, SSDP_META_BLOCK_BYTES);
	for (j = 0; j < rpb; j++) {
		u64 cset = s * rpb + j;

		if (cset >= sp->layout.nr_csets)
			break;
		if (ssdp_cmap_is_mapped(cm, cset)) {
			ssdp_cmap_get_bits(cm, cset, valid, dirty);
			ssdp_rec_encode(dst + j * rb, rb, sp->rec_seed, cset,
					sp->cfg.set_blocks,
					ssdp_cmap_oset_of(cm, cset),
					sp->meta_seq,
					ssdp_cmap_map_seq(cm, cset), valid,
					dirty);
		} else {
			ssdp_rec_encode(dst + j * rb, rb, sp->rec_seed, cset,
					sp->cfg.set_blocks, SSDP_OSET_FREE,
					sp->meta_seq, 0, NULL, NULL);
		}
	}
}

/* Write the gathered blocks, runs of neighbours in one bio each. */
static int ssdp_meta_write_list(struct ssdprio *sp, const u32 *list, u32 n)
{
	u32 i = 0;
	int r = 0;

	while (i < n && !r) {
		unsigned int copy = !test_bit(list[i], sp->meta_copy);
		u32 run = 1;

		while (i + run < n && list[i + run] == list[i] + run &&
		       (unsigned int)!test_bit(list[i + run], sp->meta_copy) ==
		       copy)
			run++;
		r = ssdp_meta_rw(sp, &sp->meta_buf,
				 (size_t)i << SSDP_MB_SHIFT,
				 ssdp_rec_sector(&sp->layout, copy, list[i]),
				 run * SSDP_META_BLOCK_SECTORS,
				 REQ_OP_WRITE | REQ_SYNC | REQ_FUA);
		if (!r) {
			u32 j;

			for (j = i; j < i + run; j++) {
				if (copy)
					__set_bit(list[j], sp->meta_copy);
				else
					__clear_bit(list[j], sp->meta_copy);
			}
			sp->meta_block_writes += run;
		}
		i += run;
	}
	return r;
}

/* See the protocol at the top.  Process context; takes meta_lock. */
int ssdp_meta_commit(struct ssdprio *sp)
{
	u32 *list = sp->meta_list;
	u32 rpb, limbo, origin_dirty, ssd_dirty, n, i;
	unsigned long flags;
	u64 k = 0;
	u32 cset;
	int r = 0;

	mutex_lock(&sp->meta_lock);
	if (sp->meta_state == SSDP_META_FAILED) {
		r = -EIO;
		goto out;
	}
	if (sp->meta_state == SSDP_META_NONE)
		goto out;	/* never resumed: nothing to make durable */
	rpb = ssdp_recs_per_block(sp);

	spin_lock_irqsave(&sp->cache_lock, flags);
	for (cset = ssdp_cmap_next_changed(&sp->cmap, 0); cset != SSDP_NONE;
	     cset = ssdp_cmap_next_changed(&sp->cmap, cset + 1)) {
		ssdp_cmap_clear_changed(&sp->cmap, cset);
		__set_bit(cset / rpb, sp->meta_todo);
	}
	limbo = ssdp_cmap_nr_limbo(&sp->cmap);
	origin_dirty = sp->origin_unflushed;
	ssd_dirty = sp->ssd_unflushed;
	sp->origin_unflushed = 0;
	sp->ssd_unflushed = 0;
	spin_unlock_irqrestore(&sp->cache_lock, flags);

	sp->meta_seq++;
	for (;;) {
		n = ssdp_meta_gather(sp, &k, list, SSDP_META_CHUNK_BLOCKS);
		if (!n)
			break;
		spin_lock_irqsave(&sp->cache_lock, flags);
		for (i = 0; i < n; i++)
			ssdp_meta_encode_block(sp, list[i],
				ssdp_buf_addr(&sp->meta_buf,
					      (size_t)i << SSDP_MB_SHIFT));
		spin_unlock_irqrestore(&sp->cache_lock, flags);
		/* Data first: the records just encoded may vouch for it. */
		if (origin_dirty) {
			r = blkdev_issue_flush(sp->origin->bdev);
			if (r)
				break;
			origin_dirty = 0;
		}
		r = blkdev_issue_flush(sp->cache->bdev);
		if (r)
			break;
		ssd_dirty = 0;
		r = ssdp_meta_write_list(sp, list, n);
		if (r)
			break;
	}
	if (!r && origin_dirty)
		r = blkdev_issue_flush(sp->origin->bdev);
	if (!r && ssd_dirty)
		r = blkdev_issue_flush(sp->cache->bdev);
	if (r) {
		DMERR("%s: metadata commit failed: %d; flushes will fail from now on",
		      ssdp_name(sp), r);
		sp->meta_state = SSDP_META_FAILED;
		ssdp_cache_note_meta_failed(sp);
		goto out;
	}
	sp->meta_commits++;
	spin_lock_irqsave(&sp->cache_lock, flags);
	ssdp_cmap_release_limbo(&sp->cmap, limbo);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
out:
	mutex_unlock(&sp->meta_lock);
	return r;
}

/* postsuspend: everything durable, then the clean flag. */
void ssdp_meta_postsuspend(struct ssdprio *sp)
{
	flush_work(&sp->commit_work);
	if (ssdp_meta_commit(sp))
		return;
	mutex_lock(&sp->meta_lock);
	if (sp->meta_state != SSDP_META_NONE &&
	    sp->meta_state != SSDP_META_FAILED && ssdp_meta_write_sb(sp, true))
		sp->meta_state = SSDP_META_FAILED;
	mutex_unlock(&sp->meta_lock);
}

/*
 * Complete @bio after the next commit (a flush, or a FUA write whose data
 * is written).  Any context.
 */
void ssdp_meta_commit_bio(struct ssdprio *sp, struct bio *bio)
{
	unsigned long flags;

	spin_lock_irqsave(&sp->cache_lock, flags);
	bio_list_add(&sp->commit_bios, bio);
	spin_unlock_irqrestore(&sp->cache_lock, flags);
	queue_work(sp->wq, &sp->commit_work);
}

/* Ask for a commit with no bio waiting (limbo sets to release). */
void ssdp_meta_commit_async(struct ssdprio *sp)
{
	atomic_set(&sp->commit_wanted, 1);
	queue_work(sp->wq, &sp->commit_work);
}

void ssdp_commit_work_fn(struct work_struct *work)
{
	struct ssdprio *sp = container_of(work, struct ssdprio, commit_work);
	struct bio_list list;
	unsigned long flags;
	struct bio *bio;
	int r;

	for (;;) {
		spin_lock_irqsave(&sp->cache_lock, flags);
		list = sp->commit_bios;
		bio_list_init(&sp->commit_bios);
		spin_unlock_irqrestore(&sp->cache_lock, flags);
		if (!atomic_xchg(&sp->commit_wanted, 0) &&
		    bio_list_empty(&list))
			break;

		r = ssdp_meta_commit(sp);
		while ((bio = bio_list_pop(&list))) {
			if (r)
				bio->bi_status = BLK_STS_IOERR;
			/*
			 * A FUA write is completed a second time here (its
			 * end_io returned DM_ENDIO_INCOMPLETE); the lower
			 * queue's accounting already ran once.
			 */
			bio_clear_flag(bio, BIO_QOS_THROTTLED);
			bio_clear_flag(bio, BIO_QOS_MERGED);
			bio_endio(bio);
		}
		/* Sets released from limbo: eviction may be waiting on them. */
		spin_lock_irqsave(&sp->cache_lock, flags);
		ssdp_evict_kick_locked(sp);
		spin_unlock_irqrestore(&sp->cache_lock, flags);
	}
}

unsigned int ssdp_meta_status(struct ssdprio *sp, char *result,
			      unsigned int maxlen, unsigned int sz)
{
	DMEMIT(" meta_state %s meta_commits %llu meta_block_writes %llu meta_load_ms %u",
	       ssdp_meta_state_name(READ_ONCE(sp->meta_state)),
	       READ_ONCE(sp->meta_commits), READ_ONCE(sp->meta_block_writes),
	       sp->load_ms);
	return sz;
}
