/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio cache map: which origin set each SSD cache set holds, the LRU
 * and free lists, and the per-block valid/dirty bitmaps.
 *
 * The origin (HDD) is cut into sets of set_blocks blocks; a cache set
 * ("cset", a u32 index) is either free (on the free list) or mapped to one
 * origin set ("oset", u64) and on the LRU list (head = least recently used).
 *
 * Pure logic, no I/O and NO LOCKING: the caller serialises every call (the
 * engine's cache lock). All per-cset state lives in flat arrays indexed by
 * cset (links are u32 indices, not pointers) to keep the memory at about
 * 90 bytes per set at 256 blocks per set; see ssdp_cmap_mem_bytes().
 *
 * Pinning: a pinned cset (promotion, writeback, eviction in progress) is
 * never unmapped and is skipped by the eviction helpers; pins nest.
 */
#ifndef SSDP_CACHE_MAP_H
#define SSDP_CACHE_MAP_H

#include "ssdp_compat.h"

#define SSDP_NONE		((u32)~0U)
#define SSDP_MAX_SET_BLOCKS	1024U
#define SSDP_MAX_PINS		0x7fU

struct ssdp_cmap {
	u32 nr_csets;
	u32 set_blocks;
	u32 set_shift;		/* log2(set_blocks) */
	u32 hash_bits;		/* log2(number of hash buckets) */

	/*
	 * Per-cset arrays. prev/next hold nr_csets + 3 entries: the last
	 * three are the sentinels of the circular LRU, free and limbo lists,
	 * so list code has no head/tail special cases.
	 */
	u64 *oset;		/* origin set of a mapped cset */
	u64 *map_seq;		/* map_gen when it was mapped */
	u32 *prev;
	u32 *next;
	u32 *hnext;		/* hash chain, SSDP_NONE terminated */
	/*
	 * The dirty list: every cset with a dirty block, in the order they
	 * got their first one (oldest first; the sentinel is nr_csets), and
	 * when, in the caller's clock units (@clock).
	 */
	u32 *dprev;
	u32 *dnext;
	u32 *dirty_since;
	u16 *nr_valid;
	u16 *nr_dirty;
	u8 *flags;		/* SSDP_CF_* and the pin count */
	u32 *buckets;		/* oset hash -> first cset, SSDP_NONE if empty */
	unsigned long *valid;	/* nr_csets * set_blocks bits */
	unsigned long *dirty;	/* dirty implies valid */
	/*
	 * One bit per cset: its persistent state (mapping, valid, dirty)
	 * changed since the metadata writer last took it.
	 */
	unsigned long *changed;

	u32 clock;		/* the caller's coarse clock, see dirty_since */
	u32 nr_mapped;
	u32 nr_free;
	u32 nr_limbo;		/* unmapped, not yet reusable */
	u64 map_gen;		/* counts mappings, persisted in records */
	u32 nr_dirty_sets;	/* csets with at least one dirty block */
	u64 total_valid;
	u64 total_dirty;
	size_t mem_bytes;
};

/* Geometry and lifetime. set_blocks: power of two, 1..1024. */
int ssdp_cmap_init(struct ssdp_cmap *cm, u32 nr_csets, u32 set_blocks);
void ssdp_cmap_destroy(struct ssdp_cmap *cm);
size_t ssdp_cmap_mem_bytes(const struct ssdp_cmap *cm);

/* Hash bucket of an origin set (exposed for tests and statistics). */
u32 ssdp_cmap_bucket_of(const struct ssdp_cmap *cm, u64 oset);

/* Mapping. */
u32 ssdp_cmap_lookup(const struct ssdp_cmap *cm, u64 oset);
u32 ssdp_cmap_map(struct ssdp_cmap *cm, u64 oset);
int ssdp_cmap_map_restore(struct ssdp_cmap *cm, u32 cset, u64 oset,
			  u64 map_seq);

/* Mapping generation of a mapped cset (later mappings: higher). */
static inline u64 ssdp_cmap_map_seq(const struct ssdp_cmap *cm, u32 cset)
{
	return cm->map_seq[cset];
}
int ssdp_cmap_unmap(struct ssdp_cmap *cm, u32 cset);

/*
 * Limbo: a set unmapped with ssdp_cmap_unmap_deferred() is neither mapped
 * nor free until ssdp_cmap_release_limbo() moves it to the free list, so
 * the persistent layer can make "free" durable before the set's blocks
 * are reused for another origin set.  Limbo is FIFO: release(n) frees the
 * n sets that entered it first.
 */
int ssdp_cmap_unmap_deferred(struct ssdp_cmap *cm, u32 cset);
void ssdp_cmap_release_limbo(struct ssdp_cmap *cm, u32 n);

/* Persistent-state change tracking (see struct ssdp_cmap.changed). */
u32 ssdp_cmap_next_changed(const struct ssdp_cmap *cm, u32 from);
void ssdp_cmap_clear_changed(struct ssdp_cmap *cm, u32 cset);
void ssdp_cmap_mark_changed(struct ssdp_cmap *cm, u32 cset);
bool ssdp_cmap_is_mapped(const struct ssdp_cmap *cm, u32 cset);
u64 ssdp_cmap_oset_of(const struct ssdp_cmap *cm, u32 cset);

/* LRU. */
void ssdp_cmap_touch(struct ssdp_cmap *cm, u32 cset);
u32 ssdp_cmap_lru_head(const struct ssdp_cmap *cm);
u32 ssdp_cmap_lru_next(const struct ssdp_cmap *cm, u32 cset);
u32 ssdp_cmap_lru_first_unpinned(const struct ssdp_cmap *cm);
u32 ssdp_cmap_lru_next_unpinned(const struct ssdp_cmap *cm, u32 cset);
u32 ssdp_cmap_next_dirty_set(const struct ssdp_cmap *cm, u32 from);
/*
 * Victims that cost no I/O: the least recently used unpinned set without
 * dirty blocks among the first @max_scan unpinned sets of the LRU and in
 * its colder half, or SSDP_NONE.
 */
u32 ssdp_cmap_clean_victim(const struct ssdp_cmap *cm, u32 max_scan);

/*
 * Dirty age.  The caller sets cm->clock (any unit, e.g. seconds) before
 * it dirties blocks; a set's first dirty block stamps it.
 */
u32 ssdp_cmap_oldest_dirty(const struct ssdp_cmap *cm);	/* any, pinned too */
/* The oldest unpinned one among the @max_scan oldest, or SSDP_NONE. */
u32 ssdp_cmap_oldest_dirty_unpinned(const struct ssdp_cmap *cm, u32 max_scan);
static inline u32 ssdp_cmap_dirty_since(const struct ssdp_cmap *cm, u32 cset)
{
	return cm->dirty_since[cset];
}

/* Pins. */
void ssdp_cmap_pin(struct ssdp_cmap *cm, u32 cset);
void ssdp_cmap_unpin(struct ssdp_cmap *cm, u32 cset);
bool ssdp_cmap_pinned(const struct ssdp_cmap *cm, u32 cset);

/* Block ranges inside one set: blocks [first, first + nr). */
void ssdp_cmap_set_valid(struct ssdp_cmap *cm, u32 cset, u32 first, u32 nr);
void ssdp_cmap_clear_valid(struct ssdp_cmap *cm, u32 cset, u32 first, u32 nr);
void ssdp_cmap_set_dirty(struct ssdp_cmap *cm, u32 cset, u32 first, u32 nr);
void ssdp_cmap_clear_dirty(struct ssdp_cmap *cm, u32 cset, u32 first, u32 nr);
bool ssdp_cmap_all_valid(const struct ssdp_cmap *cm, u32 cset, u32 first,
			 u32 nr);
bool ssdp_cmap_any_valid(const struct ssdp_cmap *cm, u32 cset, u32 first,
			 u32 nr);
bool ssdp_cmap_any_dirty(const struct ssdp_cmap *cm, u32 cset, u32 first,
			 u32 nr);
bool ssdp_cmap_block_valid(const struct ssdp_cmap *cm, u32 cset, u32 blk);
bool ssdp_cmap_block_dirty(const struct ssdp_cmap *cm, u32 cset, u32 blk);
u32 ssdp_cmap_next_dirty(const struct ssdp_cmap *cm, u32 cset, u32 from);
bool ssdp_cmap_next_dirty_run(const struct ssdp_cmap *cm, u32 cset, u32 from,
			      u32 *first, u32 *nr);
u32 ssdp_cmap_nr_valid(const struct ssdp_cmap *cm, u32 cset);
u32 ssdp_cmap_nr_dirty(const struct ssdp_cmap *cm, u32 cset);

/* Whole-set bitmap copies for metadata: bit i = buf[i / 8] >> (i % 8). */
size_t ssdp_cmap_set_bytes(const struct ssdp_cmap *cm);
void ssdp_cmap_get_bits(const struct ssdp_cmap *cm, u32 cset, u8 *valid,
			u8 *dirty);
int ssdp_cmap_put_bits(struct ssdp_cmap *cm, u32 cset, const u8 *valid,
		       const u8 *dirty);

/* Counters. */
static inline u32 ssdp_cmap_nr_csets(const struct ssdp_cmap *cm)
{
	return cm->nr_csets;
}

static inline u32 ssdp_cmap_nr_mapped(const struct ssdp_cmap *cm)
{
	return cm->nr_mapped;
}

static inline u32 ssdp_cmap_nr_free(const struct ssdp_cmap *cm)
{
	return cm->nr_free;
}

static inline u32 ssdp_cmap_nr_limbo(const struct ssdp_cmap *cm)
{
	return cm->nr_limbo;
}

static inline u32 ssdp_cmap_nr_dirty_sets(const struct ssdp_cmap *cm)
{
	return cm->nr_dirty_sets;
}

static inline u64 ssdp_cmap_total_valid(const struct ssdp_cmap *cm)
{
	return cm->total_valid;
}

static inline u64 ssdp_cmap_total_dirty(const struct ssdp_cmap *cm)
{
	return cm->total_dirty;
}

/*
 * Full invariant check, O(nr_csets * set_blocks): for tests and a debug
 * knob. Returns 0 or -EUCLEAN; *why (if non-NULL) names the broken rule.
 */
int ssdp_cmap_check(const struct ssdp_cmap *cm, const char **why);

#endif /* SSDP_CACHE_MAP_H */
