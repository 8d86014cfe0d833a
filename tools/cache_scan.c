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
		"record copies with a good checksum that contradict themselves (wrong set index, bits past the set, dirty without valid, unknown flags)" },
	[SCAN_STRAY] = { "stray",
		"records of this cache past its last cache set" },
	[SCAN_PAST_ORIGIN] = { "past_origin",
		"records mapping an origin set past the end of the origin (dropped at load)" },
	[SCAN_DUP_AMBIGUOUS] = { "duplicate_same_seq",
		"origin sets mapped by two cache sets with the same map_seq (corruption: load keeps the lower cache set)" },
	[SCAN_DUP] = { "duplicate",
		"origin sets mapped by two cache sets (a torn commit: load keeps the newer record)" },
	[SCAN_NEWER_THAN_SB] = { "newer_than_superblock",
		"records newer than the clean superblock" },
	[SCAN_UNREADABLE] = { "unreadable",
		"records with no good copy that are not blank (treated as free: stale records of an earlier format, or damage)" },
	[SCAN_TORN] = { "torn",
		"records with a bad checksum in one copy (a torn or stale write; the other copy was used)" },
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
		return SCAN_WARN;
	case SCAN_DUP:
	case SCAN_DUP_AMBIGUOUS:
		/*
		 * Only a commit cut short leaves two records of one origin
		 * set (the later mapping, higher map_seq, wins); after a
		 * clean shutdown every commit completed.
		 */
		return s->clean ? SCAN_ERROR : SCAN_WARN;
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

static bool all_zero(const void *p, size_t len)
{
	const u8 *b = p;

	while (len--)
		if (*b++)
			return false;
	return true;
}

static u32 popcount_bits(const u8 *bits, u32 nbits)
{
	u32 i, n = 0;

	for (i = 0; i < nbits / 8; i++)
		n += __builtin_popcount(bits[i]);
	if (nbits % 8)
		n += __builtin_popcount(bits[nbits / 8] &
					((1U << (nbits % 8)) - 1));
	return n;
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

/* One cache set's two record copies. */
static int scan_record(struct ssdp_scan *s, u64 *cap, u32 seed, u32 cset,
		       const u8 *rec0, const u8 *rec1)
{
	u32 rb = s->layout.rec_bytes, set_blocks = s->sb.set_blocks;
	const u8 *recs[SSDP_META_COPIES] = { rec0, rec1 };
	struct ssdp_rec_info ri, dec[SSDP_META_COPIES];
	int err[SSDP_META_COPIES], pick, c;
	bool zero[SSDP_META_COPIES];
	struct scan_set ss;

	for (c = 0; c < (int)SSDP_META_COPIES; c++) {
		err[c] = ssdp_rec_decode(recs[c], rb, seed, cset, set_blocks,
					 &dec[c]);
		zero[c] = all_zero(recs[c], rb);
		if (err[c] == -EUCLEAN)
			note(s, SCAN_INCONSISTENT, cset);
	}
	/* Exactly the kernel's choice. */
	pick = ssdp_rec_pick(rec0, rec1, rb, seed, cset, set_blocks, &ri);
	if (pick < 0) {
		if (zero[0] && zero[1])
			s->unwritten++;
		else if (err[0] != -EUCLEAN && err[1] != -EUCLEAN)
			note(s, SCAN_UNREADABLE, cset);
		return 0;
	}
	s->from_copy[pick]++;
	if (err[!pick] == -EBADMSG && !zero[!pick])
		note(s, SCAN_TORN, cset);
	if (ri.seq > s->max_rec_seq)
		s->max_rec_seq = ri.seq;
	if (s->clean && ri.seq > s->sb.seq)
		note(s, SCAN_NEWER_THAN_SB, cset);
	if (ri.oset == SSDP_OSET_FREE)
		return 0;
	if (ri.oset >= s->nr_osets) {
		note(s, SCAN_PAST_ORIGIN, cset);
		return 0;
	}
	memset(&ss, 0, sizeof(ss));
	ss.oset = ri.oset;
	ss.seq = ri.seq;
	ss.map_seq = ri.map_seq;
	ss.cset = cset;
	ss.valid = popcount_bits(ri.valid, set_blocks);
	ss.dirty = popcount_bits(ri.dirty, set_blocks);
	ss.copy = (u8)pick;
	ss.dirty_map = malloc(DIV_ROUND_UP(set_blocks, 8));
	if (!ss.dirty_map)
		return -ENOMEM;
	memcpy(ss.dirty_map, ri.dirty, DIV_ROUND_UP(set_blocks, 8));
	ss.other = zero[!pick] ? SCAN_OTHER_BLANK :
		   !err[!pick] ? SCAN_OTHER_GOOD :
		   err[!pick] == -EBADMSG ? SCAN_OTHER_BAD :
		   SCAN_OTHER_INCONSISTENT;
	ss.other_oset = ss.other == SCAN_OTHER_GOOD ? dec[!pick].oset :
			SSDP_OSET_FREE;
	if (add_set(s, cap, &ss)) {
		free(ss.dirty_map);
		return -ENOMEM;
	}
	return 0;
}

static int by_oset_cset(const void *a, const void *b)
{
	const struct scan_set *x = *(const struct scan_set * const *)a;
	const struct scan_set *y = *(const struct scan_set * const *)b;

	if (x->oset != y->oset)
		return x->oset < y->oset ? -1 : 1;
	return x->cset < y->cset ? -1 : x->cset > y->cset;
}

/*
 * Two records for one origin set: as ssdp_meta_restore(), walking the
 * cache sets in order, a later record replaces the one in place only when
 * its map_seq is higher; so the first record with the highest map_seq
 * (the latest mapping) wins.
 */
static int scan_resolve(struct ssdp_scan *s)
{
	struct scan_set **idx;
	u64 i, j;

	if (!s->nr_sets)
		return 0;
	idx = malloc(s->nr_sets * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < s->nr_sets; i++)
		idx[i] = &s->sets[i];
	qsort(idx, s->nr_sets, sizeof(*idx), by_oset_cset);
	for (i = 0; i < s->nr_sets; i = j) {
		struct scan_set *win = idx[i];

		for (j = i + 1; j < s->nr_sets && idx[j]->oset == win->oset;
		     j++)
			if (idx[j]->map_seq > win->map_seq)
				win = idx[j];
		for (; i < j; i++) {
			if (idx[i] == win)
				continue;
			idx[i]->lost = 1;
			note(s, idx[i]->map_seq == win->map_seq ?
			     SCAN_DUP_AMBIGUOUS :
			     SCAN_DUP, idx[i]->cset);
		}
	}
	free(idx);
	return 0;
}

static int scan_records(int fd, struct ssdp_scan *s)
{
	const struct ssdp_layout *l = &s->layout;
	u32 rb = l->rec_bytes, rps = SSDP_SECTOR_BYTES / rb;
	u32 seed = ssdp_rec_seed(s->sb.uuid);
	u8 *bufs[SSDP_META_COPIES] = { NULL, NULL };
	u64 k, i, cap = 0;
	int r = -ENOMEM, c;

	for (c = 0; c < (int)SSDP_META_COPIES; c++) {
		bufs[c] = malloc((size_t)SCAN_CHUNK_SECTORS << SSDP_SECTOR_SHIFT);
		if (!bufs[c])
			goto out;
	}
	r = 0;
	for (k = 0; k < l->rec_sectors && !r; k += SCAN_CHUNK_SECTORS) {
		u64 n = l->rec_sectors - k;
		u64 sct;

		if (n > SCAN_CHUNK_SECTORS)
			n = SCAN_CHUNK_SECTORS;
		for (c = 0; c < (int)SSDP_META_COPIES && !r; c++)
			r = scan_read(fd, (SSDP_SB_SECTORS + c * l->rec_sectors +
				       k) << SSDP_SECTOR_SHIFT, bufs[c],
				      n << SSDP_SECTOR_SHIFT);
		for (sct = 0; sct < n && !r; sct++) {
			u64 first = (k + sct) * rps;
			u32 j;

			for (j = 0; j < rps && !r; j++) {
				size_t off = (sct << SSDP_SECTOR_SHIFT) + j * rb;
				struct ssdp_rec_info tmp;
				u64 cset = first + j;

				if (cset < l->nr_csets) {
					r = scan_record(s, &cap, seed, cset,
							bufs[0] + off,
							bufs[1] + off);
					continue;
				}
				/* Past the last set: the kernel writes zeroes. */
				for (c = 0; c < (int)SSDP_META_COPIES; c++)
					if (ssdp_rec_decode(bufs[c] + off, rb, seed,
							    cset, s->sb.set_blocks,
							    &tmp) != -EBADMSG) {
						note(s, SCAN_STRAY, cset);
						break;
					}
			}
		}
	}
	if (!r)
		r = scan_resolve(s);
	if (r)
		goto out;
	for (i = 0; i < s->nr_sets; i++) {
		const struct scan_set *ss = &s->sets[i];

		if (ss->lost)
			continue;
		s->mapped_sets++;
		s->valid_blocks += ss->valid;
		s->dirty_blocks += ss->dirty;
	}
	s->free_sets = l->nr_csets - s->mapped_sets;
	/* After an unclean shutdown the load treats every valid block as dirty. */
	s->load_dirty_blocks = s->clean ? s->dirty_blocks : s->valid_blocks;
out:
	for (c = 0; c < (int)SSDP_META_COPIES; c++)
		free(bufs[c]);
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
		free(s->sets[i].dirty_map);
	free(s->sets);
	s->sets = NULL;
	s->nr_sets = 0;
}
