/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ssdprio-tool: read a cache device's superblock and both record copies
 * and work out what the kernel's load (drivers/meta.c) would make of them:
 * the same codec (drivers/meta_codec.c), the same per-record pick
 * (ssdp_rec_pick), the same resolution of an origin set claimed twice.
 * Also counts what a consistency check wants to know.  No writes.
 */
#ifndef SSDP_CACHE_SCAN_H
#define SSDP_CACHE_SCAN_H

#include <stdbool.h>

#include "meta_codec.h"

/* Findings, in the order they are reported. */
enum scan_kind {
	SCAN_TRUNCATED,		/* device smaller than at format */
	SCAN_INCONSISTENT,	/* a copy checks out but contradicts itself */
	SCAN_STRAY,		/* a record of this cache past the last set */
	SCAN_PAST_ORIGIN,	/* maps an origin set past the origin */
	SCAN_DUP_AMBIGUOUS,	/* origin set mapped twice, same seq */
	SCAN_DUP,		/* origin set mapped twice, newer one wins */
	SCAN_NEWER_THAN_SB,	/* record newer than a clean superblock */
	SCAN_UNREADABLE,	/* no good copy, not blank: treated as free */
	SCAN_TORN,		/* one copy fails its checksum, other used */
	SCAN_NR_KINDS
};

enum scan_severity { SCAN_INFO, SCAN_WARN, SCAN_ERROR };

struct scan_finding {
	u64 count;
	u64 first;		/* first cache set concerned (or a size) */
};

/* What the copy not believed holds (scan_set.other). */
enum scan_other {
	SCAN_OTHER_BLANK,	/* all zero: never written */
	SCAN_OTHER_GOOD,	/* a good record, older (or as old) */
	SCAN_OTHER_BAD,		/* fails its checksum: torn or stale */
	SCAN_OTHER_INCONSISTENT,
};

/* A mapped set as the load would restore it. */
struct scan_set {
	u64 oset;
	u64 seq;		/* commit that wrote the record */
	u64 map_seq;		/* mapping generation: decides duplicates */
	u64 other_oset;		/* when other == SCAN_OTHER_GOOD */
	u32 cset;
	u32 valid;		/* blocks */
	u32 dirty;		/* blocks, as recorded */
	u8 copy;		/* record copy it came from */
	u8 other;		/* enum scan_other: the other copy */
	u8 lost;		/* another record of its origin set won */
	/* The record's dirty blocks (a load after a crash takes all valid). */
	u8 *dirty_map;		/* set_blocks bits, bit i = [i / 8] >> i % 8 */
};

struct ssdp_scan {
	u64 dev_sectors;		/* device size now */
	enum ssdp_sb_result sb_res;
	struct ssdp_sb_info sb;		/* valid when sb_res == SSDP_SB_OK */
	struct ssdp_layout layout;
	u64 nr_osets;			/* origin sets of sb.origin_sectors */
	bool clean;			/* superblock carries SSDP_SB_CLEAN */

	/* The rest only when sb_res == SSDP_SB_OK. */
	u64 mapped_sets;		/* what the load maps */
	u64 free_sets;			/* nr_csets - mapped_sets */
	u64 valid_blocks;		/* of the mapped sets */
	u64 dirty_blocks;		/* as recorded */
	u64 load_dirty_blocks;		/* as loaded: valid if not clean */
	u64 from_copy[SSDP_META_COPIES];	/* records believed, per copy */
	u64 unwritten;			/* both copies all zero */
	u64 max_rec_seq;
	struct scan_finding found[SCAN_NR_KINDS];

	struct scan_set *sets;		/* every mapped record, cset order */
	u64 nr_sets;			/* including those that lost */
};

/*
 * Scan the cache device open on @fd (@dev_sectors long).  Returns 0 with
 * @s filled (look at s->sb_res first), or a negative errno when reading
 * failed or memory ran out.
 */
int scan_cache(int fd, u64 dev_sectors, struct ssdp_scan *s);
void scan_free(struct ssdp_scan *s);

enum scan_severity scan_severity(const struct ssdp_scan *s,
				 enum scan_kind k);
const char *scan_kind_name(enum scan_kind k);
const char *scan_kind_text(enum scan_kind k);
const char *scan_severity_name(enum scan_severity sev);
const char *scan_other_name(enum scan_other o);

/* Findings at SCAN_ERROR severity (0: consistent). */
unsigned int scan_errors(const struct ssdp_scan *s);

/*
 * Read @len bytes at byte @off into @buf, whatever the alignment (the fd
 * may be O_DIRECT: reads go through an aligned bounce buffer).  Bytes past
 * the end of the device read as zero.  Returns 0 or a negative errno.
 */
int scan_read(int fd, u64 off, void *buf, size_t len);

#endif
