/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio frame map: a decoupled sectored cache (Seznec, ISCA 1994).
 *
 * The origin is cut into sets of set_blocks blocks ("osets"), the SSD into
 * cache sets ("csets") of as many block frames.  Origin set o may only live
 * in cache set ssdp_oset_cset(o) (a fixed hash, part of the on-disk
 * meaning), and there block b of o may only live in frame b.  A cache set
 * holds blocks of up to SSDP_FMAP_TAGS origin sets at once: per set a small
 * tag array says which, per frame a 4-bit owner says whose block it holds.
 * Tags cost per set and allocation is per block, so a scattered hot set
 * fills the SSD block by block at under 1 byte of RAM per block.
 *
 * A "line" names one tag of one set: cset << 4 | tag.  Block b of a line
 * sits in frame b of the set (home) or, in a set of S >= 2 frames, in
 * frame b ^ x (alt), x = ssdp_alt_xor() of the tag's origin set (format 4:
 * a hash, so the tags of a set pair their frames differently; format 3:
 * S/2 for all), a bit per frame says which.  A new block takes a free
 * candidate (home first), else the one whose clean block belongs to the
 * tag used longer ago.  The SSD sector of a block is its frame's
 * (ssdp_fmap_frame()); a run of blocks the engine sends as one SSD I/O
 * must have consecutive frames, so the run functions below stop where the
 * frames stop being consecutive (an alt run stops at the edge of an
 * aligned piece of x's lowest set bit's size).
 *
 * Frame states (owner, valid, dirty):
 *   free      (F, 0, 0)   nobody's
 *   claimed   (t, 0, 0)   taken for I/O of tag t in flight (a write or a
 *                         promotion), or a block dropped while the set was
 *                         pinned; never on disk
 *   clean     (t, 1, 0)   the origin holds the same data
 *   dirty     (t, 1, 1)   the only up-to-date copy
 *   limbo     (t, 0, 1)   a dirty block thrown away (discard) whose "gone"
 *                         is not durable yet: the SSD record still says
 *                         dirty, so the frame must keep its data until a
 *                         commit has written it free
 *
 * Rules that keep data right (the engine supplies the pins):
 *  - A tag holds a block in one frame at most, in any state (claimed,
 *    valid, limbo): a claim of a block the tag holds takes that frame or
 *    none (limbo: none until the commit), so no crash can find two copies
 *    of one block.
 *  - A frame is claimed before any data is written into it, and another
 *    tag may claim it only while it is free or holds a clean block; a
 *    clean block is never replaced while I/O in flight reads or rewrites
 *    it in place (ssdp_fmap_set_no_replace(); a whole-block write makes
 *    its frames claims instead, ssdp_fmap_overwrite()), and each
 *    replacement is reported (a promotion prepared before it is dropped).
 *  - In a pinned set a dropped block stays claimed, so no other tag's data
 *    lands under a reader or writer of it; the claims are swept when the
 *    last pin goes.  Pins (and so claims) exist only with I/O in flight.
 *  - Dirty and limbo frames are never taken by another tag, and a tag
 *    with dirty, limbo or claimed frames is never evicted.
 *  - Limbo frames turn free only after a commit that encoded them
 *    (ssdp_fmap_encode_set()) is durable (ssdp_fmap_commit_done()).
 *    Commits must not overlap: encode, write, done, one at a time.
 *
 * Pure logic, no I/O and NO LOCKING: the caller serialises every call.
 */
#ifndef SSDP_FRAME_MAP_H
#define SSDP_FRAME_MAP_H

#include "ssdp_compat.h"
#include "ssdprio_format.h"
#include "meta_codec.h"

#ifndef SSDP_NONE
#define SSDP_NONE		((u32)~0U)
#endif
#define SSDP_FMAP_TAGS		SSDP_REC_TAGS	/* tags per cache set */
#define SSDP_FMAP_FREE		0xfU		/* owner of a free frame */
#define SSDP_FMAP_MAX_CSETS	SSDP_MAX_CSETS

static inline u32 ssdp_line(u32 cset, u32 tag)
{
	return cset << 4 | tag;
}

static inline u32 ssdp_line_cset(u32 line)
{
	return line >> 4;
}

static inline u32 ssdp_line_tag(u32 line)
{
	return line & 0xf;
}

/* What a read finds in one block of a line. */
enum ssdp_fmap_hit {
	SSDP_FMAP_MISS,
	SSDP_FMAP_CLEAN,
	SSDP_FMAP_DIRTY,
};

struct ssdp_fmap {
	u32 nr_csets;
	u32 set_blocks;
	u32 set_shift;		/* log2(set_blocks) */
	u32 version;		/* format: what an alt bit means (ssdp_alt_xor) */

	/* Per cset. */
	u32 *tags;		/* [cset * TAGS + t]: oset, SSDP_REC_TAG_FREE */
	/*
	 * Tag recency: nibble i (from the low end) is the tag at position
	 * i, 0 the most recently used; only used tags are meaningful.
	 */
	u64 *tag_lru;
	u32 *dprev;		/* dirty list (sentinel nr_csets): sets with */
	u32 *dnext;		/* dirty blocks, oldest first */
	u32 *dirty_since;	/* @clock when the set got its first one */
	u16 *nr_valid;
	u16 *nr_dirty;		/* valid dirty frames: on the dirty list */
	u16 *nr_limbo;
	u8 *nr_tags;
	u8 *pins;
	u8 *flags;		/* SSDP_FM_* (frame_map.c) */
	unsigned long *changed;	/* persistent view changed since encoded */

	/* Per frame (cset * set_blocks + frame). */
	u8 *owner;		/* two 4-bit owners per byte, low nibble first */
	unsigned long *valid;
	unsigned long *dirty;	/* valid: dirty; not valid: limbo */
	unsigned long *alt;	/* holds its owner's block frame ^ alt xor */

	u32 clock;		/* caller's coarse clock, see dirty_since */
	u32 nr_dirty_sets;	/* sets on the dirty list */
	u32 nr_tags_used;
	u32 nr_mapped_sets;	/* sets with at least one tag */
	u32 nr_limbo_sets;
	u32 nr_flush_marked;	/* sets a flush still owes (flush marks) */
	/*
	 * Crowded sets: more than @crowded_at of their frames dirty, so that
	 * most blocks of another origin set find both candidates dirty
	 * (lock-outs).  @crowded_events counts sets turning crowded.
	 */
	u32 crowded_at;
	u32 nr_crowded;
	u32 crowded_events;
	u64 total_valid;
	u64 total_dirty;
	u64 total_limbo;
	u64 replaced;		/* clean blocks of one tag taken by another */
	size_t mem_bytes;
};

/* Geometry and lifetime. set_blocks: power of two, 1..1024. */
int ssdp_fmap_init(struct ssdp_fmap *fm, u32 nr_csets, u32 set_blocks);
void ssdp_fmap_destroy(struct ssdp_fmap *fm);

/*
 * The format whose alt frames the map uses (SSDP_FORMAT_VERSION after
 * init; SSDP_FORMAT_V3 for a cache of that version).  Only while nothing
 * is mapped: before the records are loaded.
 */
int ssdp_fmap_set_version(struct ssdp_fmap *fm, u32 version);

static inline size_t ssdp_fmap_mem_bytes(const struct ssdp_fmap *fm)
{
	return fm->mem_bytes;
}

static inline u32 ssdp_fmap_set_of(const struct ssdp_fmap *fm, u64 oset)
{
	return ssdp_oset_cset(oset, fm->nr_csets);
}

/* Tags. */
u32 ssdp_fmap_lookup(const struct ssdp_fmap *fm, u64 oset);
/*
 * A line for @oset in its set: a free tag, or the least recently used
 * one without dirty, limbo or claimed frames, whose clean blocks are
 * dropped (*replaced is set if there were any, as for a claim).  None
 * under ssdp_fmap_set_no_replace() when no tag is free.
 */
u32 ssdp_fmap_tag_alloc(struct ssdp_fmap *fm, u64 oset, bool *replaced);
void ssdp_fmap_touch(struct ssdp_fmap *fm, u32 line);
u64 ssdp_fmap_oset_of(const struct ssdp_fmap *fm, u32 line);
bool ssdp_fmap_tag_used(const struct ssdp_fmap *fm, u32 line);

/*
 * Claim frames for blocks [first, first + nr) of @line's tag, in order, up
 * to the first block that cannot be claimed or whose frame would not
 * follow the previous block's; returns how many were.  Blocks the tag
 * already holds count as claimed and keep their state and frame (none
 * of the range is replaced to make room for another of it).  @own_only:
 * take no free or foreign frame (a degraded cache).  *replaced is set if
 * a clean block was taken.
 */
u32 ssdp_fmap_claim(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr,
		    bool own_only, bool *replaced);
/*
 * As ssdp_fmap_claim(), then again from where each run stopped (its
 * frames stopped following each other), until a claim takes nothing:
 * returns how many of the blocks are claimed, *runs in how many runs of
 * consecutive frames.  No run takes the frame of a block of the range
 * that an earlier one holds.  For a write that cannot be cut: it goes as
 * one SSD write per run.
 */
u32 ssdp_fmap_claim_runs(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr,
			 bool own_only, bool *replaced, u32 *runs);
/*
 * Nothing changes: ssdp_fmap_claim() now would take at least this many,
 * and all @nr when this says @nr.
 */
u32 ssdp_fmap_claimable(const struct ssdp_fmap *fm, u32 line, u32 first,
			u32 nr, bool own_only);

/*
 * How many blocks from @first (at most @nr) ssdp_fmap_claim() would not
 * take: none of them is a valid block of @line.
 */
u32 ssdp_fmap_unclaimable_run(const struct ssdp_fmap *fm, u32 line,
			      u32 first, u32 nr, bool own_only);

/*
 * For the first block in [first, first + nr) that @line's tag holds
 * nowhere and that neither candidate frame may take, a candidate frame
 * holding a dirty block (only writing it back lets the block in: a
 * lock-out); SSDP_NONE if there is none.
 */
u32 ssdp_fmap_foreign_dirty(const struct ssdp_fmap *fm, u32 line, u32 first,
			     u32 nr);
/* Frame @frame of @cset holds a dirty block: *line's block *blk. */
bool ssdp_fmap_frame_dirty(const struct ssdp_fmap *fm, u32 cset, u32 frame,
			   u32 *line, u32 *blk);

/* The frame of block @blk of @line (any state), or SSDP_NONE. */
u32 ssdp_fmap_frame(const struct ssdp_fmap *fm, u32 line, u32 blk);
/*
 * How many blocks from @first (at most @nr) @line holds in consecutive
 * frames, *frame the first's; 0 (and SSDP_NONE) if it does not hold
 * @first.
 */
u32 ssdp_fmap_frame_run(const struct ssdp_fmap *fm, u32 line, u32 first,
			u32 nr, u32 *frame);

/* Block state, as a read sees it. */
enum ssdp_fmap_hit ssdp_fmap_block(const struct ssdp_fmap *fm, u32 line,
				   u32 blk);
/*
 * Blocks from @first (at most @nr) in the state of @first, *hit: it; a
 * run of cached blocks also in consecutive frames.
 */
u32 ssdp_fmap_hit_run(const struct ssdp_fmap *fm, u32 line, u32 first,
		      u32 nr, enum ssdp_fmap_hit *hit);
/* Blocks from @first (@nr > 0, at most @nr) dirty as @first is, *dirty. */
u32 ssdp_fmap_dirty_run(const struct ssdp_fmap *fm, u32 line, u32 first,
			u32 nr, bool *dirty);
bool ssdp_fmap_any_dirty(const struct ssdp_fmap *fm, u32 line, u32 first,
			 u32 nr);
/* Blocks [first, first + nr) all claimed or held by @line's tag. */
bool ssdp_fmap_all_claimed(const struct ssdp_fmap *fm, u32 line, u32 first,
			   u32 nr);

/*
 * I/O done: claimed (or held) frames of @line become valid / dirty.  A
 * frame dropped to limbo meanwhile (an overlapping origin write that
 * completed first) stays dropped.
 */
void ssdp_fmap_set_valid(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr);
void ssdp_fmap_set_dirty(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr);
/* Written back: dirty blocks of @line become clean. */
void ssdp_fmap_clear_dirty(struct ssdp_fmap *fm, u32 line, u32 first,
			   u32 nr);
/*
 * Drop @line's blocks in [first, first + nr): dirty ones go to limbo,
 * clean ones free (claimed while the set is pinned).
 */
void ssdp_fmap_drop(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr);

/* Pins: I/O in flight on the set (any kind). */
void ssdp_fmap_pin(struct ssdp_fmap *fm, u32 cset);
void ssdp_fmap_unpin(struct ssdp_fmap *fm, u32 cset);
bool ssdp_fmap_pinned(const struct ssdp_fmap *fm, u32 cset);
/*
 * I/O in flight that reads or rewrites valid blocks of the set in place
 * (a read hit, a partial write, a writeback bridging clean blocks): no
 * clean block is replaced and no tag evicted until it is off.
 */
void ssdp_fmap_set_no_replace(struct ssdp_fmap *fm, u32 cset, bool on);
/*
 * A write of whole blocks [first, first + nr) of @line, which it has
 * claimed, in a pinned set: the clean ones among them become claims
 * again (not valid until the write completes), so no other tag takes
 * their frames under it without the set being kept from replacing
 * altogether.  A read meanwhile goes to the origin, which has them.
 */
void ssdp_fmap_overwrite(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr);
/* Does @line hold any of blocks [first, first + nr), in any state? */
bool ssdp_fmap_any_held(const struct ssdp_fmap *fm, u32 line, u32 first,
			u32 nr);
/*
 * Does @line hold any of them as a claim (I/O in flight may be writing
 * its frame, or a block dropped under a pin)?
 */
bool ssdp_fmap_any_claimed(const struct ssdp_fmap *fm, u32 line, u32 first,
			   u32 nr);

/*
 * Writeback.  The lines of @cset with dirty blocks, in origin order;
 * returns how many (at most SSDP_FMAP_TAGS).
 */
u32 ssdp_fmap_dirty_lines(const struct ssdp_fmap *fm, u32 cset, u32 *lines);
bool ssdp_fmap_next_dirty_run(const struct ssdp_fmap *fm, u32 line, u32 from,
			      u32 *first, u32 *nr);

/* The dirty list (sets with dirty blocks), oldest first. */
u32 ssdp_fmap_oldest_dirty(const struct ssdp_fmap *fm);	/* pinned too */
u32 ssdp_fmap_next_dirty_set(const struct ssdp_fmap *fm, u32 cset);
/*
 * All of @cset's dirty blocks are newer than its place on the list says
 * (written while a writeback held it): it goes to the end, dirty since
 * the clock.  Nothing if it has none.
 */
void ssdp_fmap_dirty_renew(struct ssdp_fmap *fm, u32 cset);
/*
 * Flush marks: what a flush owes.  Marking puts one on every dirty set
 * (returns how many sets are marked); a set loses its mark when it has no
 * dirty block left, or when the caller unmarks it (written back by a
 * writeback that started after the marking), never by a renewal.  So
 * dirty sets that came later do not hold a flush up.
 */
u32 ssdp_fmap_flush_mark_dirty(struct ssdp_fmap *fm);
void ssdp_fmap_flush_mark(struct ssdp_fmap *fm, u32 cset);	/* if dirty */
bool ssdp_fmap_flush_marked(const struct ssdp_fmap *fm, u32 cset);
void ssdp_fmap_flush_unmark(struct ssdp_fmap *fm, u32 cset);
void ssdp_fmap_flush_unmark_all(struct ssdp_fmap *fm);
/*
 * Crowded sets (see the fields): a set is crowded with more than @frames
 * dirty frames; set_blocks (the default after init): never.
 */
void ssdp_fmap_set_crowded(struct ssdp_fmap *fm, u32 frames);
static inline bool ssdp_fmap_crowded(const struct ssdp_fmap *fm, u32 cset)
{
	return fm->nr_dirty[cset] > fm->crowded_at;
}

/* The dirty list from its young end: the newest, then the one before. */
u32 ssdp_fmap_newest_dirty(const struct ssdp_fmap *fm);	/* pinned too */
u32 ssdp_fmap_prev_dirty_set(const struct ssdp_fmap *fm, u32 cset);
/* The oldest unpinned set with dirty blocks among the @max_scan oldest. */
u32 ssdp_fmap_oldest_dirty_unpinned(const struct ssdp_fmap *fm,
				    u32 max_scan);

static inline u32 ssdp_fmap_dirty_since(const struct ssdp_fmap *fm, u32 cset)
{
	return fm->dirty_since[cset];
}

static inline u32 ssdp_fmap_nr_dirty(const struct ssdp_fmap *fm, u32 cset)
{
	return fm->nr_dirty[cset];
}

static inline u32 ssdp_fmap_nr_valid(const struct ssdp_fmap *fm, u32 cset)
{
	return fm->nr_valid[cset];
}

/*
 * Persistence.  The changed bit says the set's persistent view (tags,
 * which frames hold valid blocks, which are dirty) moved since the last
 * encode.  Claims and limbo frames encode as free.
 */
u32 ssdp_fmap_next_changed(const struct ssdp_fmap *fm, u32 from);
/* Its record must be written again (an unreadable copy, a fixup). */
void ssdp_fmap_mark_changed(struct ssdp_fmap *fm, u32 cset);
void ssdp_fmap_encode_set(struct ssdp_fmap *fm, u32 cset,
			  struct ssdp_rec_view *v);
/* The commit that encoded the set is durable: its limbo frames go free. */
void ssdp_fmap_commit_done(struct ssdp_fmap *fm, u32 cset);
/* It failed: encode the set again next time. */
void ssdp_fmap_commit_failed(struct ssdp_fmap *fm, u32 cset);
/*
 * Load one set's record into an empty set.  @keep_clean false (after a
 * crash): clean blocks are dropped, only dirty ones kept.  Returns 0, or
 * -EUCLEAN (a tag not placed in this set, a tag twice, an owner without a
 * tag, dirty without owner), leaving the set empty.
 */
int ssdp_fmap_load_set(struct ssdp_fmap *fm, u32 cset,
		       const struct ssdp_rec_view *v, bool keep_clean);

/* Counters. */
static inline u64 ssdp_fmap_nr_frames(const struct ssdp_fmap *fm)
{
	return (u64)fm->nr_csets * fm->set_blocks;
}

/* Frames a new block may use: all but dirty and limbo ones. */
static inline u64 ssdp_fmap_room(const struct ssdp_fmap *fm)
{
	return ssdp_fmap_nr_frames(fm) - fm->total_dirty - fm->total_limbo;
}

/*
 * Full invariant check, O(frames): tests and a debug knob.  Returns 0 or
 * -EUCLEAN; *why (if non-NULL) names the broken rule.
 */
int ssdp_fmap_check(const struct ssdp_fmap *fm, const char **why);

#endif /* SSDP_FRAME_MAP_H */
