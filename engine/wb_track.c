// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio writeback tracking (wb_track.h says what and why).
 */
#include "wb_track.h"

/* Longs of one of the tracker's bitmaps. */
static size_t ssdp_wbt_longs(u32 set_blocks)
{
	return BITS_TO_LONGS(SSDP_WB_MAX_LINES * set_blocks);
}

size_t ssdp_wbt_size(u32 set_blocks)
{
	return sizeof(struct ssdp_wb_track) +
	       5 * ssdp_wbt_longs(set_blocks) * sizeof(unsigned long);
}

void ssdp_wbt_init(struct ssdp_wb_track *t, u32 set_blocks, const u32 *lines,
		   u32 nr_lines)
{
	u32 i;

	t->set_blocks = set_blocks;
	t->gathered = t->touched + ssdp_wbt_longs(set_blocks);
	t->kept = t->gathered + ssdp_wbt_longs(set_blocks);
	t->replaced = t->kept + ssdp_wbt_longs(set_blocks);
	t->failed = t->replaced + ssdp_wbt_longs(set_blocks);
	t->nr_lines = min(nr_lines, SSDP_WB_MAX_LINES);
	for (i = 0; i < t->nr_lines; i++)
		t->lines[i] = lines[i];
}

u32 ssdp_wbt_index(const struct ssdp_wb_track *t, u32 line)
{
	u32 i;

	for (i = 0; i < t->nr_lines; i++)
		if (t->lines[i] == line)
			return i;
	return SSDP_NONE;
}

static bool ssdp_wbt_meets_window(const struct ssdp_wb_track *t, u32 idx,
				  u32 first, u32 nr)
{
	const struct ssdp_wbt_piece *p;
	u32 i;

	if (t->win_all)
		return true;
	for (i = 0; i < t->nr_win; i++) {
		p = &t->win[i];
		if (p->idx == idx && first < p->first + p->nr &&
		    p->first < first + nr)
			return true;
	}
	return false;
}

bool ssdp_wbt_write(struct ssdp_wb_track *t, u32 line, u32 first, u32 nr)
{
	u32 idx = ssdp_wbt_index(t, line), b;
	unsigned long bit;

	if (idx == SSDP_NONE)
		return true;
	if (ssdp_wbt_meets_window(t, idx, first, nr)) {
		t->refused = true;
		return false;
	}
	for (b = first; b < first + nr && b < t->set_blocks; b++) {
		bit = (unsigned long)idx * t->set_blocks + b;
		if (!test_bit(bit, t->gathered) && !test_bit(bit, t->replaced))
			__set_bit(bit, t->kept);
		__set_bit(bit, t->touched);
	}
	return true;
}

void ssdp_wbt_overwritten(struct ssdp_wb_track *t, u32 line, u32 first,
			  u32 nr)
{
	u32 idx = ssdp_wbt_index(t, line), b;
	unsigned long bit;

	if (idx == SSDP_NONE)
		return;
	for (b = first; b < first + nr && b < t->set_blocks; b++) {
		bit = (unsigned long)idx * t->set_blocks + b;
		__clear_bit(bit, t->kept);
		__set_bit(bit, t->replaced);
	}
}

bool ssdp_wbt_older_left(const struct ssdp_wb_track *t, u32 idx)
{
	unsigned long base = (unsigned long)idx * t->set_blocks;
	unsigned long end = base + t->set_blocks;

	return find_next_bit(t->kept, end, base) < end;
}

bool ssdp_wbt_untouched_run(const struct ssdp_wb_track *t, u32 idx,
			    u32 *first, u32 *nr)
{
	unsigned long base = (unsigned long)idx * t->set_blocks;
	unsigned long end = base + *first + *nr, from, to;

	from = find_next_zero_bit(t->touched, end, base + *first);
	if (from >= end)
		return false;
	to = find_next_bit(t->touched, end, from);
	*first = from - base;
	*nr = to - from;
	return true;
}

bool ssdp_wbt_any_touched(const struct ssdp_wb_track *t, u32 idx, u32 first,
			  u32 nr)
{
	unsigned long base = (unsigned long)idx * t->set_blocks;

	return find_next_bit(t->touched, base + first + nr, base + first) <
	       base + first + nr;
}

void ssdp_wbt_failed_note(struct ssdp_wb_track *t, u32 idx, u32 blk)
{
	if (idx < t->nr_lines && blk < t->set_blocks)
		__set_bit(idx * t->set_blocks + blk, t->failed);
}

bool ssdp_wbt_failed_take(struct ssdp_wb_track *t, u32 idx, u32 blk)
{
	if (idx >= t->nr_lines || blk >= t->set_blocks)
		return false;
	return __test_and_clear_bit(idx * t->set_blocks + blk,
				    t->failed);
}

void ssdp_wbt_window_add(struct ssdp_wb_track *t, u32 idx, u32 first, u32 nr)
{
	struct ssdp_wbt_piece *p = t->nr_win ? &t->win[t->nr_win - 1] : NULL;
	u32 b;

	for (b = first; b < first + nr && b < t->set_blocks; b++)
		__set_bit((unsigned long)idx * t->set_blocks + b, t->gathered);

	if (p && p->idx == idx && p->first + p->nr == first) {
		p->nr += nr;
		return;
	}
	/*
	 * A gathered write has at most SSDP_WB_MAX_PIECES pieces.  Past
	 * that, the window covers all.
	 */
	if (WARN_ON_ONCE(t->nr_win == SSDP_WB_MAX_PIECES)) {
		t->win_all = true;
		return;
	}
	p = &t->win[t->nr_win++];
	p->idx = idx;
	p->first = first;
	p->nr = nr;
}

bool ssdp_wbt_window_clear(struct ssdp_wb_track *t)
{
	bool refused = t->refused;

	t->nr_win = 0;
	t->win_all = false;
	t->refused = false;
	return refused;
}
