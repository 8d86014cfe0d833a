/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio writeback tracking: what user writes did to a writeback's
 * blocks while it ran, so that writes need not wait for it.
 *
 * A writeback copies a set's dirty runs SSD -> origin, flushes the origin,
 * then marks what it copied clean.  A user write that rewrites one of those
 * blocks meanwhile makes that "clean" a lie (the origin got the older
 * data), and one that lands while the writeback reads the block from the
 * SSD gives the origin a torn mix.  So, while a writeback runs:
 *  - the blocks it is reading from the SSD right now (the origin write
 *    being gathered, the "window") refuse writes: those wait for the read;
 *  - every block a write is let into is "touched": the writeback never
 *    gathers it from then on and never marks it clean (it stays dirty, for
 *    the next writeback), whether the write went in before or after the
 *    writeback read it, or is still in flight;
 *  - a clean block the writeback would bridge a gap with must be untouched
 *    too (an in-place rewrite keeps it valid, and clean, until it is done);
 *  - a clean block in the origin write in flight (bridged) whose rewrite
 *    fails is "failed": its SSD frame may hold part of the failed write,
 *    and only the outcome of that origin write says which copy counts
 *    (failed: the frame, made dirty; done: the origin, the frame dropped).
 * And for a flush, which owes the data dirty when it was asked, not the
 * blocks: a block a write went into before the writeback gathered it was
 * not copied, and its older data is left there ("kept"), until a write of
 * the whole block completes ("replaced"); a partial write replaces only
 * part of it.
 * The engine lets a write in beside a writeback only where the write goes
 * to the SSD alone and into blocks the cache holds (no frame changes
 * hands, no origin write of the user's races the writeback's).
 *
 * Lines are the writeback's lines (frame_map.h), fixed when it starts;
 * a line not among them is not the writeback's business.  Blocks are
 * numbered within their line, 0..set_blocks - 1.
 *
 * Pure logic, NO LOCKING: the caller serialises every call.
 */
#ifndef SSDP_WB_TRACK_H
#define SSDP_WB_TRACK_H

#include "ssdp_compat.h"
#include "frame_map.h"

/*
 * A writeback holds, besides its own cache set, the cache sets of up to
 * this many neighbouring origin sets (evict.c).
 */
#define SSDP_WB_NEIGHBOURS	4U
#define SSDP_WB_MAX_LINES	(SSDP_FMAP_TAGS + SSDP_WB_NEIGHBOURS)
/*
 * Pieces of one gathered write: runs of its lines, one per line where
 * runs touch or are bridged, several per line where a writeback under
 * pressure skips between runs (evict.c).
 */
#define SSDP_WB_MAX_PIECES	32U

struct ssdp_wbt_piece {
	u32 idx;		/* in lines[] */
	u32 first;
	u32 nr;
};

struct ssdp_wb_track {
	u32 set_blocks;
	u32 nr_lines;
	u32 lines[SSDP_WB_MAX_LINES];
	/* The window: blocks being read from the SSD. */
	u32 nr_win;
	struct ssdp_wbt_piece win[SSDP_WB_MAX_PIECES];
	bool win_all;		/* never: more than SSDP_WB_MAX_PIECES */
	bool refused;		/* a write waited on the window */
	/*
	 * Bitmaps of nr_lines * set_blocks bits, the first touched, the
	 * others after it: gathered, blocks that joined the window; kept,
	 * touched before that and not replaced since; replaced, by a
	 * whole-block write that completed; failed, see
	 * ssdp_wbt_failed_note().
	 */
	unsigned long *gathered;
	unsigned long *kept;
	unsigned long *replaced;
	unsigned long *failed;
	unsigned long touched[];
};

/* Bytes to allocate for a tracker of SSDP_WB_MAX_LINES lines. */
size_t ssdp_wbt_size(u32 set_blocks);
/* @t zeroed, ssdp_wbt_size() bytes; @lines in the order used for idx. */
void ssdp_wbt_init(struct ssdp_wb_track *t, u32 set_blocks, const u32 *lines,
		   u32 nr_lines);
/* idx of @line, or SSDP_NONE. */
u32 ssdp_wbt_index(const struct ssdp_wb_track *t, u32 line);

/*
 * A user write of blocks [first, first + nr) of @line: false if it must
 * wait (it meets the window; noted for ssdp_wbt_window_clear()), else
 * its blocks are touched (on a line of the writeback's) and it may go.
 */
bool ssdp_wbt_write(struct ssdp_wb_track *t, u32 line, u32 first, u32 nr);
/* A write let in of whole blocks [first, first + nr) of @line completed. */
void ssdp_wbt_overwritten(struct ssdp_wb_track *t, u32 line, u32 first,
			  u32 nr);

/*
 * Within [*first, *first + *nr) of line @idx, the first stretch of
 * untouched blocks: true and *first, *nr narrowed to it, or false (all
 * touched) and both left alone.
 */
bool ssdp_wbt_untouched_run(const struct ssdp_wb_track *t, u32 idx,
			    u32 *first, u32 *nr);
bool ssdp_wbt_any_touched(const struct ssdp_wb_track *t, u32 idx, u32 first,
			  u32 nr);

/*
 * May line @idx hold data from before the writeback started that the
 * writeback did not copy?  Where a write went in before it gathered the
 * block, unless a whole-block write completed since: a partial write
 * leaves the rest of the older data, one in flight or failed may leave
 * it all.  (A block that was clean counts too: the tracker cannot tell.)
 */
bool ssdp_wbt_older_left(const struct ssdp_wb_track *t, u32 idx);

/*
 * A rewrite of block @blk of line @idx failed while the block was in the
 * origin write in flight: noted until ssdp_wbt_failed_take() of it.
 */
void ssdp_wbt_failed_note(struct ssdp_wb_track *t, u32 idx, u32 blk);
/* Was block @blk of line @idx noted failed?  Clears the note. */
bool ssdp_wbt_failed_take(struct ssdp_wb_track *t, u32 idx, u32 blk);

/* Blocks [first, first + nr) of line @idx join the window. */
void ssdp_wbt_window_add(struct ssdp_wb_track *t, u32 idx, u32 first, u32 nr);
/* The window's reads are done: returns whether a write waited on it. */
bool ssdp_wbt_window_clear(struct ssdp_wb_track *t);

#endif /* SSDP_WB_TRACK_H */
