// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio cache map. See cache_map.h; the caller holds the lock.
 */
#include "ssdp_compat.h"
#include "cache_map.h"

#define SSDP_CF_MAPPED		0x80U
#define SSDP_CF_PINS		0x7fU

/* 2^64 / phi: Fibonacci hashing spreads sequential origin sets evenly. */
#define SSDP_HASH_MULT		0x61c8864680b583ebULL

static inline u32 lru_sentinel(const struct ssdp_cmap *cm)
{
	return cm->nr_csets;
}

static inline u32 free_sentinel(const struct ssdp_cmap *cm)
{
	return cm->nr_csets + 1;
}

static inline u32 limbo_sentinel(const struct ssdp_cmap *cm)
{
	return cm->nr_csets + 2;
}

static inline void mark_changed(struct ssdp_cmap *cm, u32 cset)
{
	__set_bit(cset, cm->changed);
}

static inline unsigned long blk_bit(const struct ssdp_cmap *cm, u32 cset,
				    u32 blk)
{
	return ((unsigned long)cset << cm->set_shift) + blk;
}

static inline bool cset_ok(const struct ssdp_cmap *cm, u32 cset)
{
	return cset < cm->nr_csets;
}

static inline bool mapped(const struct ssdp_cmap *cm, u32 cset)
{
	return cm->flags[cset] & SSDP_CF_MAPPED;
}

static inline bool range_ok(const struct ssdp_cmap *cm, u32 cset, u32 first,
			    u32 nr)
{
	return cset_ok(cm, cset) && first <= cm->set_blocks &&
	       nr <= cm->set_blocks - first;
}

static void list_unlink(struct ssdp_cmap *cm, u32 c)
{
	u32 p = cm->prev[c], n = cm->next[c];

	cm->next[p] = n;
	cm->prev[n] = p;
}

static void list_add_before(struct ssdp_cmap *cm, u32 c, u32 head)
{
	u32 p = cm->prev[head];

	cm->next[p] = c;
	cm->prev[c] = p;
	cm->next[c] = head;
	cm->prev[head] = c;
}

/* The dirty list's sentinel. */
static inline u32 dirty_sentinel(const struct ssdp_cmap *cm)
{
	return cm->nr_csets;
}

static void dirty_list_add(struct ssdp_cmap *cm, u32 c)
{
	u32 head = dirty_sentinel(cm), tail = cm->dprev[head];

	cm->dirty_since[c] = cm->clock;
	cm->dprev[c] = tail;
	cm->dnext[c] = head;
	cm->dnext[tail] = c;
	cm->dprev[head] = c;
}

static void dirty_list_del(struct ssdp_cmap *cm, u32 c)
{
	cm->dnext[cm->dprev[c]] = cm->dnext[c];
	cm->dprev[cm->dnext[c]] = cm->dprev[c];
	cm->dprev[c] = c;
	cm->dnext[c] = c;
}

static void *cmap_alloc(struct ssdp_cmap *cm, size_t n, size_t size)
{
	cm->mem_bytes += n * size;
	return ssdp_zalloc(n * size);
}

u32 ssdp_cmap_bucket_of(const struct ssdp_cmap *cm, u64 oset)
{
	if (!cm->hash_bits)
		return 0;
	return (u32)((oset * SSDP_HASH_MULT) >> (64 - cm->hash_bits));
}

int ssdp_cmap_init(struct ssdp_cmap *cm, u32 nr_csets, u32 set_blocks)
{
	size_t nbits;
	u32 i, nr_buckets;

	memset(cm, 0, sizeof(*cm));
	/* Three sentinels and SSDP_NONE must stay out of the index range. */
	if (!nr_csets || nr_csets > (1U << 31) ||
	    !is_power_of_2(set_blocks) || set_blocks > SSDP_MAX_SET_BLOCKS)
		return -EINVAL;

	cm->nr_csets = nr_csets;
	cm->set_blocks = set_blocks;
	cm->set_shift = ilog2(set_blocks);
	/* Load factor 1..2: short chains at 2..4 bytes per set. */
	nr_buckets = rounddown_pow_of_two(nr_csets);
	cm->hash_bits = ilog2(nr_buckets);
	nbits = (size_t)nr_csets << cm->set_shift;

	cm->oset = cmap_alloc(cm, nr_csets, sizeof(*cm->oset));
	cm->map_seq = cmap_alloc(cm, nr_csets, sizeof(*cm->map_seq));
	cm->prev = cmap_alloc(cm, nr_csets + 3, sizeof(*cm->prev));
	cm->next = cmap_alloc(cm, nr_csets + 3, sizeof(*cm->next));
	cm->hnext = cmap_alloc(cm, nr_csets, sizeof(*cm->hnext));
	cm->dprev = cmap_alloc(cm, nr_csets + 1, sizeof(*cm->dprev));
	cm->dnext = cmap_alloc(cm, nr_csets + 1, sizeof(*cm->dnext));
	cm->dirty_since = cmap_alloc(cm, nr_csets, sizeof(*cm->dirty_since));
	cm->nr_valid = cmap_alloc(cm, nr_csets, sizeof(*cm->nr_valid));
	cm->nr_dirty = cmap_alloc(cm, nr_csets, sizeof(*cm->nr_dirty));
	cm->flags = cmap_alloc(cm, nr_csets, sizeof(*cm->flags));
	cm->buckets = cmap_alloc(cm, nr_buckets, sizeof(*cm->buckets));
	cm->valid = cmap_alloc(cm, BITS_TO_LONGS(nbits), sizeof(long));
	cm->dirty = cmap_alloc(cm, BITS_TO_LONGS(nbits), sizeof(long));
	cm->changed = cmap_alloc(cm, BITS_TO_LONGS(nr_csets), sizeof(long));
	if (!cm->changed || !cm->map_seq || !cm->oset || !cm->prev || !cm->next || !cm->hnext ||
	    !cm->nr_valid || !cm->nr_dirty || !cm->flags || !cm->buckets ||
	    !cm->valid || !cm->dirty || !cm->dprev || !cm->dnext ||
	    !cm->dirty_since) {
		ssdp_cmap_destroy(cm);
		return -ENOMEM;
	}

	for (i = 0; i < nr_buckets; i++)
		cm->buckets[i] = SSDP_NONE;
	for (i = 0; i <= nr_csets; i++) {
		cm->dprev[i] = i;
		cm->dnext[i] = i;
	}
	cm->prev[lru_sentinel(cm)] = lru_sentinel(cm);
	cm->next[lru_sentinel(cm)] = lru_sentinel(cm);
	cm->prev[free_sentinel(cm)] = free_sentinel(cm);
	cm->next[free_sentinel(cm)] = free_sentinel(cm);
	cm->prev[limbo_sentinel(cm)] = limbo_sentinel(cm);
	cm->next[limbo_sentinel(cm)] = limbo_sentinel(cm);
	for (i = 0; i < nr_csets; i++) {
		cm->hnext[i] = SSDP_NONE;
		list_add_before(cm, i, free_sentinel(cm));
	}
	cm->nr_free = nr_csets;
	return 0;
}

void ssdp_cmap_destroy(struct ssdp_cmap *cm)
{
	ssdp_free(cm->oset);
	ssdp_free(cm->map_seq);
	ssdp_free(cm->prev);
	ssdp_free(cm->next);
	ssdp_free(cm->hnext);
	ssdp_free(cm->dprev);
	ssdp_free(cm->dnext);
	ssdp_free(cm->dirty_since);
	ssdp_free(cm->nr_valid);
	ssdp_free(cm->nr_dirty);
	ssdp_free(cm->flags);
	ssdp_free(cm->buckets);
	ssdp_free(cm->valid);
	ssdp_free(cm->dirty);
	ssdp_free(cm->changed);
	memset(cm, 0, sizeof(*cm));
}

size_t ssdp_cmap_mem_bytes(const struct ssdp_cmap *cm)
{
	return cm->mem_bytes;
}

u32 ssdp_cmap_lookup(const struct ssdp_cmap *cm, u64 oset)
{
	u32 c = cm->buckets[ssdp_cmap_bucket_of(cm, oset)];

	while (c != SSDP_NONE && cm->oset[c] != oset)
		c = cm->hnext[c];
	return c;
}

static void hash_insert(struct ssdp_cmap *cm, u32 c, u64 oset)
{
	u32 b = ssdp_cmap_bucket_of(cm, oset);

	cm->oset[c] = oset;
	cm->hnext[c] = cm->buckets[b];
	cm->buckets[b] = c;
}

static void hash_remove(struct ssdp_cmap *cm, u32 c)
{
	u32 *pp = &cm->buckets[ssdp_cmap_bucket_of(cm, cm->oset[c])];

	while (*pp != SSDP_NONE && *pp != c)
		pp = &cm->hnext[*pp];
	if (WARN_ON_ONCE(*pp != c))
		return;
	*pp = cm->hnext[c];
	cm->hnext[c] = SSDP_NONE;
}

static void do_map(struct ssdp_cmap *cm, u32 c, u64 oset)
{
	list_unlink(cm, c);
	hash_insert(cm, c, oset);
	list_add_before(cm, c, lru_sentinel(cm));
	cm->flags[c] = SSDP_CF_MAPPED;
	cm->map_seq[c] = ++cm->map_gen;
	cm->nr_free--;
	cm->nr_mapped++;
	mark_changed(cm, c);
}

u32 ssdp_cmap_map(struct ssdp_cmap *cm, u64 oset)
{
	u32 c = ssdp_cmap_lookup(cm, oset);

	/* Two csets for one oset would serve stale data: refuse. */
	if (WARN_ON_ONCE(c != SSDP_NONE))
		return c;
	c = cm->next[free_sentinel(cm)];
	if (c == free_sentinel(cm))
		return SSDP_NONE;
	do_map(cm, c, oset);
	return c;
}

int ssdp_cmap_map_restore(struct ssdp_cmap *cm, u32 cset, u64 oset,
			  u64 map_seq)
{
	if (!cset_ok(cm, cset))
		return -EINVAL;
	if (mapped(cm, cset))
		return -EBUSY;
	if (ssdp_cmap_lookup(cm, oset) != SSDP_NONE)
		return -EEXIST;
	do_map(cm, cset, oset);
	cm->map_seq[cset] = map_seq;
	cm->map_gen = max(cm->map_gen, map_seq);
	return 0;
}

static void clear_range(struct ssdp_cmap *cm, u32 cset, u32 first, u32 nr,
			bool valid_too)
{
	u16 was_dirty = cm->nr_dirty[cset];
	u32 i;

	for (i = first; i < first + nr; i++) {
		unsigned long bit = blk_bit(cm, cset, i);

		if (__test_and_clear_bit(bit, cm->dirty)) {
			cm->nr_dirty[cset]--;
			cm->total_dirty--;
			mark_changed(cm, cset);
		}
		if (valid_too && __test_and_clear_bit(bit, cm->valid)) {
			cm->nr_valid[cset]--;
			cm->total_valid--;
			mark_changed(cm, cset);
		}
	}
	if (was_dirty && !cm->nr_dirty[cset]) {
		cm->nr_dirty_sets--;
		dirty_list_del(cm, cset);
	}
}

static int do_unmap(struct ssdp_cmap *cm, u32 cset, u32 to)
{
	if (WARN_ON_ONCE(!cset_ok(cm, cset) || !mapped(cm, cset)))
		return -EINVAL;
	/* Unmapping would lose dirty data or pull a set from under I/O. */
	if (WARN_ON_ONCE(cm->nr_dirty[cset] ||
			 (cm->flags[cset] & SSDP_CF_PINS)))
		return -EBUSY;
	clear_range(cm, cset, 0, cm->set_blocks, true);
	hash_remove(cm, cset);
	list_unlink(cm, cset);
	list_add_before(cm, cset, to);
	cm->flags[cset] = 0;
	cm->nr_mapped--;
	if (to == free_sentinel(cm))
		cm->nr_free++;
	else
		cm->nr_limbo++;
	mark_changed(cm, cset);
	return 0;
}

int ssdp_cmap_unmap(struct ssdp_cmap *cm, u32 cset)
{
	return do_unmap(cm, cset, free_sentinel(cm));
}

int ssdp_cmap_unmap_deferred(struct ssdp_cmap *cm, u32 cset)
{
	return do_unmap(cm, cset, limbo_sentinel(cm));
}

void ssdp_cmap_release_limbo(struct ssdp_cmap *cm, u32 n)
{
	while (n-- && cm->nr_limbo) {
		u32 c = cm->next[limbo_sentinel(cm)];

		list_unlink(cm, c);
		list_add_before(cm, c, free_sentinel(cm));
		cm->nr_limbo--;
		cm->nr_free++;
	}
}

u32 ssdp_cmap_next_changed(const struct ssdp_cmap *cm, u32 from)
{
	unsigned long c = find_next_bit(cm->changed, cm->nr_csets, from);

	return c < cm->nr_csets ? (u32)c : SSDP_NONE;
}

void ssdp_cmap_clear_changed(struct ssdp_cmap *cm, u32 cset)
{
	if (!WARN_ON_ONCE(!cset_ok(cm, cset)))
		__clear_bit(cset, cm->changed);
}

void ssdp_cmap_mark_changed(struct ssdp_cmap *cm, u32 cset)
{
	if (!WARN_ON_ONCE(!cset_ok(cm, cset)))
		mark_changed(cm, cset);
}

bool ssdp_cmap_is_mapped(const struct ssdp_cmap *cm, u32 cset)
{
	return cset_ok(cm, cset) && mapped(cm, cset);
}

u64 ssdp_cmap_oset_of(const struct ssdp_cmap *cm, u32 cset)
{
	return cm->oset[cset];
}

void ssdp_cmap_touch(struct ssdp_cmap *cm, u32 cset)
{
	if (WARN_ON_ONCE(!cset_ok(cm, cset) || !mapped(cm, cset)))
		return;
	list_unlink(cm, cset);
	list_add_before(cm, cset, lru_sentinel(cm));
}

u32 ssdp_cmap_lru_head(const struct ssdp_cmap *cm)
{
	return ssdp_cmap_lru_next(cm, lru_sentinel(cm));
}

u32 ssdp_cmap_lru_next(const struct ssdp_cmap *cm, u32 cset)
{
	u32 n = cm->next[cset];

	return n == lru_sentinel(cm) ? SSDP_NONE : n;
}

u32 ssdp_cmap_lru_next_unpinned(const struct ssdp_cmap *cm, u32 cset)
{
	u32 c = cm->next[cset];

	while (c != lru_sentinel(cm) && (cm->flags[c] & SSDP_CF_PINS))
		c = cm->next[c];
	return c == lru_sentinel(cm) ? SSDP_NONE : c;
}

u32 ssdp_cmap_lru_first_unpinned(const struct ssdp_cmap *cm)
{
	return ssdp_cmap_lru_next_unpinned(cm, lru_sentinel(cm));
}

u32 ssdp_cmap_next_dirty_set(const struct ssdp_cmap *cm, u32 from)
{
	u32 i, c;

	if (!cm->nr_dirty_sets)
		return SSDP_NONE;
	if (from >= cm->nr_csets)
		from = 0;
	for (i = 0; i < cm->nr_csets; i++) {
		c = from + i;
		if (c >= cm->nr_csets)
			c -= cm->nr_csets;
		if (cm->nr_dirty[c] && !(cm->flags[c] & SSDP_CF_PINS))
			return c;
	}
	return SSDP_NONE;
}

u32 ssdp_cmap_clean_victim(const struct ssdp_cmap *cm, u32 max_scan)
{
	u32 c = ssdp_cmap_lru_first_unpinned(cm);

	/*
	 * Never the warmer half: when every cold set is dirty, the only clean
	 * ones may be those just filled by promotion, the hottest of all.
	 */
	max_scan = min(max_scan, (cm->nr_mapped + 1) / 2);
	while (c != SSDP_NONE && max_scan--) {
		if (!cm->nr_dirty[c])
			return c;
		c = ssdp_cmap_lru_next_unpinned(cm, c);
	}
	return SSDP_NONE;
}

u32 ssdp_cmap_oldest_dirty(const struct ssdp_cmap *cm)
{
	u32 c = cm->dnext[dirty_sentinel(cm)];

	return c == dirty_sentinel(cm) ? SSDP_NONE : c;
}

u32 ssdp_cmap_oldest_dirty_unpinned(const struct ssdp_cmap *cm, u32 max_scan)
{
	u32 c;

	for (c = cm->dnext[dirty_sentinel(cm)];
	     c != dirty_sentinel(cm) && max_scan--; c = cm->dnext[c])
		if (!(cm->flags[c] & SSDP_CF_PINS))
			return c;
	return SSDP_NONE;
}

void ssdp_cmap_pin(struct ssdp_cmap *cm, u32 cset)
{
	if (WARN_ON_ONCE(!cset_ok(cm, cset) || !mapped(cm, cset)))
		return;
	if (WARN_ON_ONCE((cm->flags[cset] & SSDP_CF_PINS) == SSDP_MAX_PINS))
		return;
	cm->flags[cset]++;
}

void ssdp_cmap_unpin(struct ssdp_cmap *cm, u32 cset)
{
	if (WARN_ON_ONCE(!cset_ok(cm, cset) ||
			 !(cm->flags[cset] & SSDP_CF_PINS)))
		return;
	cm->flags[cset]--;
}

bool ssdp_cmap_pinned(const struct ssdp_cmap *cm, u32 cset)
{
	return cset_ok(cm, cset) && (cm->flags[cset] & SSDP_CF_PINS);
}

void ssdp_cmap_set_valid(struct ssdp_cmap *cm, u32 cset, u32 first, u32 nr)
{
	u32 i;

	if (WARN_ON_ONCE(!range_ok(cm, cset, first, nr) || !mapped(cm, cset)))
		return;
	for (i = first; i < first + nr; i++) {
		if (!__test_and_set_bit(blk_bit(cm, cset, i), cm->valid)) {
			cm->nr_valid[cset]++;
			cm->total_valid++;
			mark_changed(cm, cset);
		}
	}
}

void ssdp_cmap_set_dirty(struct ssdp_cmap *cm, u32 cset, u32 first, u32 nr)
{
	u16 was_dirty;
	u32 i;

	if (WARN_ON_ONCE(!range_ok(cm, cset, first, nr) || !mapped(cm, cset)))
		return;
	was_dirty = cm->nr_dirty[cset];
	ssdp_cmap_set_valid(cm, cset, first, nr);
	for (i = first; i < first + nr; i++) {
		if (!__test_and_set_bit(blk_bit(cm, cset, i), cm->dirty)) {
			cm->nr_dirty[cset]++;
			cm->total_dirty++;
			mark_changed(cm, cset);
		}
	}
	if (!was_dirty && cm->nr_dirty[cset]) {
		cm->nr_dirty_sets++;
		dirty_list_add(cm, cset);
	}
}

void ssdp_cmap_clear_valid(struct ssdp_cmap *cm, u32 cset, u32 first, u32 nr)
{
	if (WARN_ON_ONCE(!range_ok(cm, cset, first, nr)))
		return;
	clear_range(cm, cset, first, nr, true);
}

void ssdp_cmap_clear_dirty(struct ssdp_cmap *cm, u32 cset, u32 first, u32 nr)
{
	if (WARN_ON_ONCE(!range_ok(cm, cset, first, nr)))
		return;
	clear_range(cm, cset, first, nr, false);
}

bool ssdp_cmap_all_valid(const struct ssdp_cmap *cm, u32 cset, u32 first,
			 u32 nr)
{
	unsigned long end = blk_bit(cm, cset, first + nr);

	if (WARN_ON_ONCE(!range_ok(cm, cset, first, nr)))
		return false;
	return find_next_zero_bit(cm->valid, end,
				  blk_bit(cm, cset, first)) >= end;
}

bool ssdp_cmap_any_valid(const struct ssdp_cmap *cm, u32 cset, u32 first,
			 u32 nr)
{
	unsigned long end = blk_bit(cm, cset, first + nr);

	if (WARN_ON_ONCE(!range_ok(cm, cset, first, nr)))
		return false;
	return find_next_bit(cm->valid, end, blk_bit(cm, cset, first)) < end;
}

bool ssdp_cmap_any_dirty(const struct ssdp_cmap *cm, u32 cset, u32 first,
			 u32 nr)
{
	unsigned long end = blk_bit(cm, cset, first + nr);

	if (WARN_ON_ONCE(!range_ok(cm, cset, first, nr)))
		return false;
	return find_next_bit(cm->dirty, end, blk_bit(cm, cset, first)) < end;
}

bool ssdp_cmap_block_valid(const struct ssdp_cmap *cm, u32 cset, u32 blk)
{
	if (WARN_ON_ONCE(!range_ok(cm, cset, blk, 1)))
		return false;
	return test_bit(blk_bit(cm, cset, blk), cm->valid);
}

bool ssdp_cmap_block_dirty(const struct ssdp_cmap *cm, u32 cset, u32 blk)
{
	if (WARN_ON_ONCE(!range_ok(cm, cset, blk, 1)))
		return false;
	return test_bit(blk_bit(cm, cset, blk), cm->dirty);
}

u32 ssdp_cmap_next_dirty(const struct ssdp_cmap *cm, u32 cset, u32 from)
{
	unsigned long base, end;

	if (WARN_ON_ONCE(!cset_ok(cm, cset)))
		return cm->set_blocks;
	if (from >= cm->set_blocks || !cm->nr_dirty[cset])
		return cm->set_blocks;
	base = blk_bit(cm, cset, 0);
	end = base + cm->set_blocks;
	return (u32)(find_next_bit(cm->dirty, end, base + from) - base);
}

bool ssdp_cmap_next_dirty_run(const struct ssdp_cmap *cm, u32 cset, u32 from,
			      u32 *first, u32 *nr)
{
	unsigned long base, end, zero;
	u32 f = ssdp_cmap_next_dirty(cm, cset, from);

	if (f >= cm->set_blocks)
		return false;
	base = blk_bit(cm, cset, 0);
	end = base + cm->set_blocks;
	zero = find_next_zero_bit(cm->dirty, end, base + f);
	*first = f;
	*nr = (u32)(zero - base) - f;
	return true;
}

u32 ssdp_cmap_nr_valid(const struct ssdp_cmap *cm, u32 cset)
{
	return cm->nr_valid[cset];
}

u32 ssdp_cmap_nr_dirty(const struct ssdp_cmap *cm, u32 cset)
{
	return cm->nr_dirty[cset];
}

size_t ssdp_cmap_set_bytes(const struct ssdp_cmap *cm)
{
	return DIV_ROUND_UP(cm->set_blocks, 8);
}

void ssdp_cmap_get_bits(const struct ssdp_cmap *cm, u32 cset, u8 *valid,
			u8 *dirty)
{
	size_t n = ssdp_cmap_set_bytes(cm);
	u32 i;

	if (WARN_ON_ONCE(!cset_ok(cm, cset)))
		return;
	if (valid)
		memset(valid, 0, n);
	if (dirty)
		memset(dirty, 0, n);
	for (i = 0; i < cm->set_blocks; i++) {
		unsigned long bit = blk_bit(cm, cset, i);

		if (valid && test_bit(bit, cm->valid))
			valid[i / 8] |= 1U << (i % 8);
		if (dirty && test_bit(bit, cm->dirty))
			dirty[i / 8] |= 1U << (i % 8);
	}
}

static inline bool buf_bit(const u8 *buf, u32 i)
{
	return buf && (buf[i / 8] >> (i % 8)) & 1;
}

int ssdp_cmap_put_bits(struct ssdp_cmap *cm, u32 cset, const u8 *valid,
		       const u8 *dirty)
{
	u32 i;

	if (!cset_ok(cm, cset) || !mapped(cm, cset))
		return -EINVAL;
	/* Reject a buffer with dirty-but-invalid blocks before changing. */
	for (i = 0; i < cm->set_blocks; i++)
		if (buf_bit(dirty, i) && !buf_bit(valid, i))
			return -EINVAL;
	clear_range(cm, cset, 0, cm->set_blocks, true);
	for (i = 0; i < cm->set_blocks; i++) {
		if (buf_bit(dirty, i))
			ssdp_cmap_set_dirty(cm, cset, i, 1);
		else if (buf_bit(valid, i))
			ssdp_cmap_set_valid(cm, cset, i, 1);
	}
	return 0;
}

static int check_list(const struct ssdp_cmap *cm, u32 head, bool want_mapped,
		      u32 *count)
{
	u32 c = cm->next[head], prev = head, n = 0;

	while (c != head) {
		if (c >= cm->nr_csets || n++ >= cm->nr_csets)
			return -1;
		if (cm->prev[c] != prev || mapped(cm, c) != want_mapped)
			return -1;
		prev = c;
		c = cm->next[c];
	}
	if (cm->prev[head] != prev)
		return -1;
	*count = n;
	return 0;
}

static u32 weight_range(const unsigned long *map, unsigned long base, u32 nr)
{
	u32 i, w = 0;

	for (i = 0; i < nr; i++)
		w += test_bit(base + i, map);
	return w;
}

static int broken(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -EUCLEAN;
}

int ssdp_cmap_check(const struct ssdp_cmap *cm, const char **why)
{
	u32 n_lru, n_free, n_limbo, n_hashed = 0, n_dirty_sets = 0, c, b, i;
	u64 tv = 0, td = 0;

	if (check_list(cm, lru_sentinel(cm), true, &n_lru))
		return broken(why, "lru list");
	if (check_list(cm, free_sentinel(cm), false, &n_free))
		return broken(why, "free list");
	if (check_list(cm, limbo_sentinel(cm), false, &n_limbo))
		return broken(why, "limbo list");
	if (n_limbo != cm->nr_limbo)
		return broken(why, "nr_limbo vs limbo list length");
	if (n_lru != cm->nr_mapped)
		return broken(why, "nr_mapped vs lru length");
	if (n_free != cm->nr_free)
		return broken(why, "nr_free vs free list length");
	if (cm->nr_mapped + cm->nr_free + cm->nr_limbo != cm->nr_csets)
		return broken(why, "free + limbo + mapped");

	for (b = 0; b < (1U << cm->hash_bits); b++) {
		for (c = cm->buckets[b]; c != SSDP_NONE; c = cm->hnext[c]) {
			if (c >= cm->nr_csets || n_hashed++ >= cm->nr_csets)
				return broken(why, "hash chain");
			if (!mapped(cm, c))
				return broken(why, "free cset hashed");
			if (ssdp_cmap_bucket_of(cm, cm->oset[c]) != b)
				return broken(why, "cset in wrong bucket");
		}
	}
	if (n_hashed != cm->nr_mapped)
		return broken(why, "hashed vs mapped");

	for (c = 0; c < cm->nr_csets; c++) {
		unsigned long base = blk_bit(cm, c, 0);
		u32 v = weight_range(cm->valid, base, cm->set_blocks);
		u32 d = weight_range(cm->dirty, base, cm->set_blocks);

		if (v != cm->nr_valid[c] || d != cm->nr_dirty[c])
			return broken(why, "per-set counter vs bitmap");
		for (i = 0; i < cm->set_blocks; i++)
			if (test_bit(base + i, cm->dirty) &&
			    !test_bit(base + i, cm->valid))
				return broken(why, "dirty block not valid");
		if (mapped(cm, c) && ssdp_cmap_lookup(cm, cm->oset[c]) != c)
			return broken(why, "oset mapped twice or unreachable");
		if (!mapped(cm, c) && (v || (cm->flags[c] & SSDP_CF_PINS)))
			return broken(why, "free cset with blocks or pins");
		tv += v;
		td += d;
		n_dirty_sets += d != 0;
	}
	if (tv != cm->total_valid || td != cm->total_dirty)
		return broken(why, "total valid/dirty");
	if (n_dirty_sets != cm->nr_dirty_sets)
		return broken(why, "nr_dirty_sets");
	/* The dirty list: exactly the dirty sets, linked both ways. */
	i = 0;
	for (c = cm->dnext[dirty_sentinel(cm)]; c != dirty_sentinel(cm);
	     c = cm->dnext[c]) {
		if (c >= cm->nr_csets || i++ >= cm->nr_csets ||
		    !cm->nr_dirty[c] ||
		    cm->dnext[cm->dprev[c]] != c)
			return broken(why, "dirty list");
	}
	if (i != cm->nr_dirty_sets)
		return broken(why, "dirty list vs nr_dirty_sets");
	return 0;
}
