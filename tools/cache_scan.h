/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ssdprio-tool: read a cache device's superblock and both record copies
 * and work out what the kernel's load (engine/meta.c) would make of them:
 * the same codec (engine/meta_codec.c), the same per-record pick
 * (ssdp_rec_pick).  Also counts what a consistency check wants to know.
 * No writes.
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
	SCAN_PAST_ORIGIN,	/* a tag names an origin set past the origin */
	SCAN_NEWER_THAN_SB,	/* record newer than a clean superblock */
	SCAN_SEQ_PAST_LIMIT,	/* a seq at SSDP_SEQ_LIMIT or past it */
	SCAN_UNREADABLE,	/* no good copy, not blank: treated as free */
	SCAN_TORN,		/* one copy fails its checksum, other used */
	SCAN_READ_ERROR,	/* one copy could not be read, other used */
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

/*
 * A cache set whose believed record has at least one tag.  Tags past
 * the origin are listed (past_origin) but not counted in valid/dirty.
 */
struct scan_set {
	u64 seq;		/* commit that wrote the record */
	u32 cset;
	u32 valid;		/* blocks of its tags within the origin */
	u32 dirty;		/* of those, dirty */
	u32 tags[SSDP_REC_TAGS];	/* origin sets, SSDP_REC_TAG_FREE */
	u16 tag_valid[SSDP_REC_TAGS];	/* frames each tag owns */
	u16 tag_dirty[SSDP_REC_TAGS];	/* of them, dirty */
	u16 past_origin;	/* bit t: tags[t] is past the origin */
	u8 nr_tags;		/* tags in use (past the origin too) */
	u8 copy;		/* record copy it came from */
	u8 other;		/* enum scan_other: the other copy */
	/*
	 * The record's frames: owners (4 bits per frame, frame 2k in the
	 * low nibble of byte k, 0xf free), then dirty (a bit per frame,
	 * bit i = [i / 8] >> i % 8) at owners + (set_blocks + 1) / 2, then
	 * alt (as dirty: the frame holds its owner's block i ^
	 * ssdp_alt_xor()).
	 */
	u8 *owners;
	u8 *dirty_map;
	u8 *alt_map;
};

static inline u32 scan_set_owner(const struct scan_set *ss, u32 blk)
{
	return (ss->owners[blk / 2] >> (blk % 2 * 4)) & 0xf;
}

static inline bool scan_set_dirty(const struct scan_set *ss, u32 frame)
{
	return (ss->dirty_map[frame / 8] >> (frame % 8)) & 1;
}

static inline bool scan_set_alt(const struct scan_set *ss, u32 frame)
{
	return (ss->alt_map[frame / 8] >> (frame % 8)) & 1;
}

/*
 * The frame of tag @tag's block @blk in a set of @set_blocks frames of a
 * cache of format @version (home blk, or alt blk ^ ssdp_alt_xor()), or -1
 * if the record holds it nowhere.
 */
static inline int scan_set_frame(const struct scan_set *ss, u32 set_blocks,
				 u32 version, u32 tag, u32 blk)
{
	u32 x = ssdp_alt_xor(ss->tags[tag], set_blocks, version);

	if (scan_set_owner(ss, blk) == tag && !scan_set_alt(ss, blk))
		return (int)blk;
	if (x && scan_set_owner(ss, blk ^ x) == tag &&
	    scan_set_alt(ss, blk ^ x))
		return (int)(blk ^ x);
	return -1;
}

struct ssdp_scan {
	u64 dev_sectors;		/* device size now */
	enum ssdp_sb_result sb_res;
	/*
	 * Valid when sb_res is SSDP_SB_OK (and, as far as a version-1
	 * superblock goes, SSDP_SB_OLD_VERSION: version, uuid, sizes).
	 */
	struct ssdp_sb_info sb;
	struct ssdp_layout layout;
	u64 nr_osets;			/* origin sets of sb.origin_sectors */
	bool clean;			/* superblock carries SSDP_SB_CLEAN */

	/*
	 * The rest only when sb_res == SSDP_SB_OK.  Counts leave out tags
	 * past the origin (the load drops them, or refuses the cache when
	 * they have dirty blocks).
	 */
	u64 mapped_sets;		/* sets with a tag within the origin */
	u64 free_sets;			/* nr_csets - mapped_sets */
	u64 tags_used;			/* tags within the origin */
	u64 valid_blocks;		/* frames with an owner */
	u64 dirty_blocks;		/* of them, dirty */
	/*
	 * What a load would keep: after a clean shutdown every valid block
	 * (and every tag); after an unclean one only the dirty blocks (and
	 * the tags and sets that have some): clean ones are dropped.
	 */
	u64 load_mapped_sets;
	u64 load_valid_blocks;
	u64 load_dirty_blocks;
	u64 past_origin_dirty;		/* such tags with dirty blocks */
	u64 from_copy[SSDP_META_COPIES];	/* records believed, per copy */
	u64 unwritten;			/* both copies all zero */
	u64 max_rec_seq;
	struct scan_finding found[SCAN_NR_KINDS];

	struct scan_set *sets;		/* every set with a tag, cset order */
	u64 nr_sets;
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
