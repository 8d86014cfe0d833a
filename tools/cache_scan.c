// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool: scan a cache device's metadata (see cache_scan.h).
 */
#define _GNU_SOURCE	/* O_DIRECT, pipe2 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "cache_scan.h"

#define SCAN_ALIGN		4096U
/* Record sectors read per round, per copy: as the kernel's load. */
#define SCAN_CHUNK_SECTORS	2048U

static const struct {
	const char *name;
	const char *text;
} scan_kinds[SCAN_NR_KINDS] = {
	[SCAN_TRUNCATED] = { "truncated",
		"device is smaller than when it was formatted (the kernel refuses it)" },
	[SCAN_INCONSISTENT] = { "inconsistent",
		"record copies with a good checksum that contradict themselves (wrong set index, a tag not placed in this set or twice, an owner without a tag, dirty without an owner, bits past the set; treated as a bad copy)" },
	[SCAN_STRAY] = { "stray",
		"records of this cache past its last cache set" },
	[SCAN_PAST_ORIGIN] = { "past_origin",
		"tags naming an origin set past the end of the origin (clean ones are dropped at load; with dirty blocks the kernel refuses the cache)" },
	[SCAN_NEWER_THAN_SB] = { "newer_than_superblock",
		"records newer than the clean superblock" },
	[SCAN_SEQ_PAST_LIMIT] = { "seq_past_limit",
		"a sequence number past any a cache reaches (forged or corrupt; the kernel refuses the cache)" },
	[SCAN_UNREADABLE] = { "unreadable",
		"records with no good copy that are not blank (treated as free: stale records of an earlier format, or damage)" },
	[SCAN_TORN] = { "torn",
		"records with a bad checksum in one copy (a torn or stale write; the other copy was used)" },
	[SCAN_READ_ERROR] = { "read_error",
		"records in metadata blocks of one copy that could not be read (the other copy was used, as the kernel's load does)" },
};

const char *scan_kind_name(enum scan_kind k)
{
	return k < SCAN_NR_KINDS ? scan_kinds[k].name : "?";
}

const char *scan_kind_text(enum scan_kind k)
{
	return k < SCAN_NR_KINDS ? scan_kinds[k].text : "?";
}

const char *scan_severity_name(enum scan_severity sev)
{
	switch (sev) {
	case SCAN_INFO:
		return "info";
	case SCAN_WARN:
		return "warning";
	case SCAN_ERROR:
		return "error";
	}
	return "?";
}

const char *scan_other_name(enum scan_other o)
{
	switch (o) {
	case SCAN_OTHER_BLANK:
		return "blank";
	case SCAN_OTHER_GOOD:
		return "good";
	case SCAN_OTHER_BAD:
		return "bad";
	case SCAN_OTHER_INCONSISTENT:
		return "inconsistent";
	}
	return "?";
}

enum scan_severity scan_severity(const struct ssdp_scan *s, enum scan_kind k)
{
	switch (k) {
	case SCAN_TORN:
		return SCAN_INFO;
	case SCAN_UNREADABLE:
	case SCAN_READ_ERROR:
		return SCAN_WARN;
	case SCAN_PAST_ORIGIN:
		/* Clean blocks past the origin are dropped, dirty refuse. */
		return s->past_origin_dirty ? SCAN_ERROR : SCAN_WARN;
	default:
		return SCAN_ERROR;
	}
}

unsigned int scan_errors(const struct ssdp_scan *s)
{
	unsigned int n = 0;
	int k;

	for (k = 0; k < SCAN_NR_KINDS; k++)
		if (s->found[k].count && scan_severity(s, k) == SCAN_ERROR)
			n++;
	return n;
}

static void note(struct ssdp_scan *s, enum scan_kind k, u64 where)
{
	struct scan_finding *f = &s->found[k];

	if (!f->count || where < f->first)
		f->first = where;
	f->count++;
}

int scan_read(int fd, u64 off, void *buf, size_t len)
{
	u64 start = off & ~(u64)(SCAN_ALIGN - 1);
	u64 end = (off + len + SCAN_ALIGN - 1) & ~(u64)(SCAN_ALIGN - 1);
	size_t blen = end - start, done = 0;
	void *bounce;
	int r = 0;

	if (posix_memalign(&bounce, SCAN_ALIGN, blen))
		return -ENOMEM;
	while (done < blen) {
		ssize_t got = pread(fd, (u8 *)bounce + done, blen - done,
				    start + done);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EINVAL) {
			/* No O_DIRECT here (a file on tmpfs): read buffered. */
			int fl = fcntl(fd, F_GETFL);

			if (fl >= 0 && (fl & O_DIRECT) &&
			    !fcntl(fd, F_SETFL, fl & ~O_DIRECT))
				continue;
		}
		if (got < 0) {
			r = -errno;
			break;
		}
		if (!got) {
			/* End of the device: the rest reads as zeroes. */
			memset((u8 *)bounce + done, 0, blen - done);
			break;
		}
		done += got;
	}
	if (!r)
		memcpy(buf, (u8 *)bounce + (off - start), len);
	free(bounce);
	return r;
}

static int add_set(struct ssdp_scan *s, u64 *cap, const struct scan_set *ss)
{
	if (s->nr_sets == *cap) {
		u64 ncap = *cap ? *cap * 2 : 1024;
		struct scan_set *n = realloc(s->sets, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->sets = n;
		*cap = ncap;
	}
	s->sets[s->nr_sets++] = *ss;
	return 0;
}

/* Fill @ss's counts from @v; false if no tag is in use. */
static bool scan_tags(struct ssdp_scan *s, struct scan_set *ss,
		      const struct ssdp_rec_view *v)
{
	u32 set_blocks = s->sb.set_blocks, t, blk;

	for (t = 0; t < SSDP_REC_TAGS; t++) {
		ss->tags[t] = v->tags[t];
		if (v->tags[t] == SSDP_REC_TAG_FREE)
			continue;
		ss->nr_tags++;
		if (v->tags[t] >= s->nr_osets)
			ss->past_origin |= 1U << t;
	}
	for (blk = 0; blk < set_blocks; blk++) {
		u32 own = ssdp_rec_owner(v, blk);
		bool dirty = ssdp_rec_dirty(v, blk);

		if (own == 0xf)
			continue;
		ss->tag_valid[own]++;
		ss->tag_dirty[own] += dirty;
		if (ss->past_origin & (1U << own))
			continue;
		ss->valid++;
		ss->dirty += dirty;
	}
	return ss->nr_tags;
}

/* Add @ss (a set with tags) to the counts of the scan. */
static void scan_count(struct ssdp_scan *s, const struct scan_set *ss)
{
	u32 t, in = 0, kept = 0;

	for (t = 0; t < SSDP_REC_TAGS; t++) {
		if (ss->tags[t] == SSDP_REC_TAG_FREE)
			continue;
		if (ss->past_origin & (1U << t)) {
			note(s, SCAN_PAST_ORIGIN, ss->cset);
			if (ss->tag_dirty[t])
				s->past_origin_dirty++;
			continue;
		}
		in++;
		if (ss->tag_dirty[t])
			kept++;
	}
	if (!in)
		return;
	s->mapped_sets++;
	s->tags_used += in;
	s->valid_blocks += ss->valid;
	s->dirty_blocks += ss->dirty;
	/*
	 * After an unclean shutdown the load keeps only dirty blocks, and so
	 * it does of a record whose other copy is bad (it may be a commit old).
	 */
	if (s->clean && ss->other == SCAN_OTHER_GOOD) {
		s->load_mapped_sets++;
		s->load_valid_blocks += ss->valid;
	} else {
		s->load_mapped_sets += !!kept;
		s->load_valid_blocks += ss->dirty;
	}
	s->load_dirty_blocks += ss->dirty;
}

/*
 * One cache set's two record copies; @unread: the copies that could not
 * be read (zeroes in their place, which fail the checksum).
 */
static int scan_record(struct ssdp_scan *s, u64 *cap, u32 seed, u32 cset,
		       const u8 *rec0, const u8 *rec1, const bool *unread,
		       struct ssdp_rec_view *views)
{
	u32 rb = s->layout.rec_bytes, set_blocks = s->sb.set_blocks;
	u32 ob = (set_blocks + 1) / 2, db = ssdp_bitmap_bytes(set_blocks);
	const u8 *recs[SSDP_META_COPIES] = { rec0, rec1 };
	u64 nc = s->sb.nr_csets;
	int err[SSDP_META_COPIES], pick, c;
	bool zero[SSDP_META_COPIES];
	struct ssdp_rec_view *v = &views[0];
	struct scan_set ss;

	for (c = 0; c < (int)SSDP_META_COPIES; c++) {
		err[c] = ssdp_rec_decode(recs[c], rb, seed, cset, set_blocks,
					 nc, s->sb.version, &views[c]);
		zero[c] = !unread[c] && ssdp_all_zero(recs[c], rb);
		if (err[c] == -EUCLEAN)
			note(s, SCAN_INCONSISTENT, cset);
		if (unread[c])
			note(s, SCAN_READ_ERROR, cset);
	}
	/* Exactly the kernel's choice. */
	pick = ssdp_rec_pick(rec0, rec1, rb, seed, cset, set_blocks, nc,
			     s->sb.version, v, &views[1], NULL);
	if (pick < 0) {
		if (zero[0] && zero[1])
			s->unwritten++;
		else if (err[0] != -EUCLEAN && err[1] != -EUCLEAN)
			note(s, SCAN_UNREADABLE, cset);
		return 0;
	}
	s->from_copy[pick]++;
	if (err[!pick] == -EBADMSG && !zero[!pick] && !unread[!pick])
		note(s, SCAN_TORN, cset);
	if (v->seq > s->max_rec_seq)
		s->max_rec_seq = v->seq;
	if (s->clean && v->seq > s->sb.seq)
		note(s, SCAN_NEWER_THAN_SB, cset);
	if (v->seq >= SSDP_SEQ_LIMIT)
		note(s, SCAN_SEQ_PAST_LIMIT, cset);
	memset(&ss, 0, sizeof(ss));
	ss.seq = v->seq;
	ss.cset = cset;
	ss.copy = (u8)pick;
	if (!scan_tags(s, &ss, v))
		return 0;
	ss.other = zero[!pick] ? SCAN_OTHER_BLANK :
		   !err[!pick] ? SCAN_OTHER_GOOD :
		   err[!pick] == -EBADMSG ? SCAN_OTHER_BAD :
		   SCAN_OTHER_INCONSISTENT;
	ss.owners = malloc(ob + 2 * db);
	if (!ss.owners)
		return -ENOMEM;
	memcpy(ss.owners, v->owners, ob);
	ss.dirty_map = ss.owners + ob;
	memcpy(ss.dirty_map, v->dirty, db);
	ss.alt_map = ss.dirty_map + db;
	memcpy(ss.alt_map, v->alt, db);
	if (add_set(s, cap, &ss)) {
		free(ss.owners);
		return -ENOMEM;
	}
	scan_count(s, &ss);
	return 0;
}

/*
 * Read @n record sectors from @k of copy @c into @buf as the kernel's load
 * does: after an error, metadata block by metadata block, a block that
 * cannot be read left zeroed and set in @bad (the other copy's records are
 * used).  0, or -ENOMEM.
 */
static int scan_read_copy(int fd, const struct ssdp_layout *l, int c, u64 k,
			  u64 n, u8 *buf, bool *bad)
{
	u64 at = (SSDP_SB_SECTORS + c * l->rec_sectors + k) << SSDP_SECTOR_SHIFT;
	u64 b, nb = (n << SSDP_SECTOR_SHIFT) / SSDP_META_BLOCK_BYTES;
	size_t bb = SSDP_META_BLOCK_BYTES;
	int r;

	memset(bad, 0, nb * sizeof(*bad));
	r = scan_read(fd, at, buf, n << SSDP_SECTOR_SHIFT);
	if (!r || r == -ENOMEM)
		return r;
	for (b = 0; b < nb; b++) {
		r = scan_read(fd, at + b * bb, buf + b * bb, bb);
		if (r == -ENOMEM)
			return r;
		if (r) {
			memset(buf + b * bb, 0, bb);
			bad[b] = true;
		}
	}
	return 0;
}

static int scan_records(int fd, struct ssdp_scan *s)
{
	const struct ssdp_layout *l = &s->layout;
	u32 rb = l->rec_bytes, set_blocks = s->sb.set_blocks;
	u32 seed = ssdp_rec_seed(s->sb.uuid, s->sb.version);
	u8 *bufs[SSDP_META_COPIES] = { NULL, NULL };
	bool bad[SSDP_META_COPIES][(SCAN_CHUNK_SECTORS << SSDP_SECTOR_SHIFT) /
				   SSDP_META_BLOCK_BYTES];
	struct ssdp_rec_view *views;
	u64 k, cap = 0;
	int r = -ENOMEM, c;

	views = malloc(SSDP_META_COPIES * sizeof(*views));
	if (!views)
		return -ENOMEM;
	for (c = 0; c < (int)SSDP_META_COPIES; c++) {
		bufs[c] = malloc((size_t)SCAN_CHUNK_SECTORS << SSDP_SECTOR_SHIFT);
		if (!bufs[c])
			goto out;
	}
	r = 0;
	for (k = 0; k < l->rec_sectors && !r; k += SCAN_CHUNK_SECTORS) {
		u64 n = l->rec_sectors - k;
		u64 first = (k << SSDP_SECTOR_SHIFT) / rb;
		u64 j, nrec;

		if (n > SCAN_CHUNK_SECTORS)
			n = SCAN_CHUNK_SECTORS;
		nrec = (n << SSDP_SECTOR_SHIFT) / rb;
		for (c = 0; c < (int)SSDP_META_COPIES && !r; c++)
			r = scan_read_copy(fd, l, c, k, n, bufs[c], bad[c]);
		for (j = 0; j < nrec && !r; j++) {
			size_t off = j * rb;
			u64 cset = first + j;
			bool unread[SSDP_META_COPIES];

			for (c = 0; c < (int)SSDP_META_COPIES; c++)
				unread[c] = bad[c][off / SSDP_META_BLOCK_BYTES] ||
					bad[c][(off + rb - 1) /
					       SSDP_META_BLOCK_BYTES];
			/* The kernel refuses such a cache: so does the scan. */
			if (unread[0] && unread[1]) {
				r = -EIO;
				break;
			}
			if (cset < l->nr_csets) {
				r = scan_record(s, &cap, seed, cset,
						bufs[0] + off, bufs[1] + off,
						unread, views);
				continue;
			}
			/* Past the last set: the kernel writes zeroes. */
			for (c = 0; c < (int)SSDP_META_COPIES; c++)
				if (ssdp_rec_decode(bufs[c] + off, rb, seed,
						    cset, set_blocks,
						    l->nr_csets,
						    s->sb.version,
						    &views[0]) != -EBADMSG) {
					note(s, SCAN_STRAY, cset);
					break;
				}
		}
	}
	s->free_sets = l->nr_csets - s->mapped_sets;
out:
	for (c = 0; c < (int)SSDP_META_COPIES; c++)
		free(bufs[c]);
	free(views);
	return r;
}

int scan_cache(int fd, u64 dev_sectors, struct ssdp_scan *s)
{
	u8 *sector;
	int r;

	memset(s, 0, sizeof(*s));
	s->dev_sectors = dev_sectors;
	sector = malloc(SSDP_SECTOR_BYTES);
	if (!sector)
		return -ENOMEM;
	r = scan_read(fd, 0, sector, SSDP_SECTOR_BYTES);
	if (!r)
		s->sb_res = ssdp_sb_decode(sector, &s->sb);
	free(sector);
	if (!r && s->sb_res == SSDP_SB_OLD_VERSION)
		s->clean = s->sb.flags & SSDP_SB_CLEAN;
	if (r || s->sb_res != SSDP_SB_OK)
		return r;

	ssdp_sb_layout(&s->sb, &s->layout);
	s->clean = s->sb.flags & SSDP_SB_CLEAN;
	s->nr_osets = (s->sb.origin_sectors + s->layout.set_sectors - 1) /
		      s->layout.set_sectors;
	if (dev_sectors < s->sb.cache_sectors)
		note(s, SCAN_TRUNCATED, dev_sectors);
	return scan_records(fd, s);
}

void scan_free(struct ssdp_scan *s)
{
	u64 i;

	for (i = 0; i < s->nr_sets; i++)
		free(s->sets[i].owners);
	free(s->sets);
	s->sets = NULL;
	s->nr_sets = 0;
}
