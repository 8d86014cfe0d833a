// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio frame map.  See frame_map.h; the caller holds the lock.
 */
#include "ssdp_compat.h"
#include "frame_map.h"

#define SSDP_FM_NO_REPLACE	0x1U	/* see ssdp_fmap_set_no_replace() */
#define SSDP_FM_CLAIMS		0x2U	/* claims may exist: sweep at unpin */
#define SSDP_FM_LIMBO_NEW	0x4U	/* limbo frames no encode has seen */
#define SSDP_FM_LIMBO_ENC	0x8U	/* limbo frames the last encode saw */
#define SSDP_FM_FLUSH		0x10U	/* see ssdp_fmap_flush_mark_dirty() */

/* Tag recency, position i in nibble i: tag i at position i at first. */
#define SSDP_FM_LRU_INIT	0xfedcba9876543210ULL
#define SSDP_FM_NO_TAG		0xffU

static inline size_t frame_of(const struct ssdp_fmap *fm, u32 cset, u32 blk)
{
	return ((size_t)cset << fm->set_shift) + blk;
}

static inline u32 owner_get(const struct ssdp_fmap *fm, size_t f)
{
	return (fm->owner[f / 2] >> (f % 2 * 4)) & 0xf;
}

static inline void owner_put(struct ssdp_fmap *fm, size_t f, u32 t)
{
	u8 *b = &fm->owner[f / 2];

	*b = (*b & ~(0xf << (f % 2 * 4))) | (t << (f % 2 * 4));
}

/* Free frame @f: nobody's, home. */
static inline void frame_free(struct ssdp_fmap *fm, size_t f)
{
	owner_put(fm, f, SSDP_FMAP_FREE);
	__clear_bit(f, fm->alt);
}

/* Frame @fb of @cset goes to tag @t for its block @blk. */
static inline void frame_own(struct ssdp_fmap *fm, u32 cset, u32 fb, u32 t,
			     u32 blk)
{
	size_t f = frame_of(fm, cset, fb);

	owner_put(fm, f, t);
	if (fb != blk)
		__set_bit(f, fm->alt);
	else
		__clear_bit(f, fm->alt);
}

/* Frame @f of @cset no longer holds a valid block. */
static inline void frame_unvalidate(struct ssdp_fmap *fm, u32 cset, size_t f)
{
	__clear_bit(f, fm->valid);
	fm->nr_valid[cset]--;
	fm->total_valid--;
}

static inline u32 *tag_slot(const struct ssdp_fmap *fm, u32 cset, u32 t)
{
	return &fm->tags[(size_t)cset * SSDP_FMAP_TAGS + t];
}

/*
 * Block b of tag @t of @cset may sit in frame b or b ^ alt_xor() (0: a
 * one-frame set); the same xor gives the block an alt frame holds.
 */
static inline u32 alt_xor(const struct ssdp_fmap *fm, u32 cset, u32 t)
{
	return ssdp_alt_xor(*tag_slot(fm, cset, t), fm->set_blocks,
			    fm->version);
}

/*
 * The frame (index in the set) where tag @t of @cset holds block @blk, in
 * any state, or SSDP_NONE: the home frame blk, else the alt frame
 * blk ^ alt_xor().  A tag holds a block in one frame at most.
 */
static u32 held_at(const struct ssdp_fmap *fm, u32 cset, u32 t, u32 blk)
{
	size_t f = frame_of(fm, cset, blk);
	u32 x;

	if (owner_get(fm, f) == t && !test_bit(f, fm->alt))
		return blk;
	x = alt_xor(fm, cset, t);
	if (!x)
		return SSDP_NONE;
	f = frame_of(fm, cset, blk ^ x);
	if (owner_get(fm, f) == t && test_bit(f, fm->alt))
		return blk ^ x;
	return SSDP_NONE;
}

/* The block that frame @fb of @cset holds for its owner @t. */
static inline u32 frame_block(const struct ssdp_fmap *fm, u32 cset, u32 t,
			      u32 fb)
{
	return test_bit(frame_of(fm, cset, fb), fm->alt) ?
	       fb ^ alt_xor(fm, cset, t) : fb;
}

static inline bool frame_limbo(const struct ssdp_fmap *fm, size_t f)
{
	return !test_bit(f, fm->valid) && test_bit(f, fm->dirty);
}

static inline bool line_ok(const struct ssdp_fmap *fm, u32 line, u32 first,
			   u32 nr)
{
	return ssdp_line_cset(line) < fm->nr_csets &&
	       ssdp_line_tag(line) < SSDP_FMAP_TAGS && first <= fm->set_blocks &&
	       nr <= fm->set_blocks - first;
}

static inline void mark_changed(struct ssdp_fmap *fm, u32 cset)
{
	__set_bit(cset, fm->changed);
}

static inline u32 dirty_sentinel(const struct ssdp_fmap *fm)
{
	return fm->nr_csets;
}

static void dirty_list_add(struct ssdp_fmap *fm, u32 c)
{
	u32 head = dirty_sentinel(fm), tail = fm->dprev[head];

	fm->dirty_since[c] = fm->clock;
	fm->dprev[c] = tail;
	fm->dnext[c] = head;
	fm->dnext[tail] = c;
	fm->dprev[head] = c;
	fm->nr_dirty_sets++;
}

static void dirty_list_del(struct ssdp_fmap *fm, u32 c)
{
	fm->dnext[fm->dprev[c]] = fm->dnext[c];
	fm->dprev[fm->dnext[c]] = fm->dprev[c];
	fm->dprev[c] = c;
	fm->dnext[c] = c;
	fm->nr_dirty_sets--;
	/* Clean: what a flush owed of it is done. */
	ssdp_fmap_flush_unmark(fm, c);
}

/* A valid frame of @cset turned dirty; dirty_dec(): no longer. */
static void dirty_inc(struct ssdp_fmap *fm, u32 cset)
{
	if (!fm->nr_dirty[cset]++)
		dirty_list_add(fm, cset);
	if (fm->nr_dirty[cset] == fm->crowded_at + 1) {
		fm->nr_crowded++;
		fm->crowded_events++;
	}
	fm->total_dirty++;
}

static void dirty_dec(struct ssdp_fmap *fm, u32 cset)
{
	if (fm->nr_dirty[cset] == fm->crowded_at + 1)
		fm->nr_crowded--;
	if (!--fm->nr_dirty[cset])
		dirty_list_del(fm, cset);
	fm->total_dirty--;
}

static void *fmap_alloc(struct ssdp_fmap *fm, size_t n, size_t size)
{
	fm->mem_bytes += n * size;
	return ssdp_zalloc(n * size);
}

int ssdp_fmap_init(struct ssdp_fmap *fm, u32 nr_csets, u32 set_blocks)
{
	size_t frames;
	u32 i;

	memset(fm, 0, sizeof(*fm));
	if (!nr_csets || nr_csets > SSDP_FMAP_MAX_CSETS ||
	    !is_power_of_2(set_blocks) || set_blocks > SSDP_REC_MAX_BLOCKS)
		return -EINVAL;
	fm->nr_csets = nr_csets;
	fm->set_blocks = set_blocks;
	fm->set_shift = ilog2(set_blocks);
	fm->version = SSDP_FORMAT_VERSION;
	fm->crowded_at = set_blocks;
	frames = (size_t)nr_csets << fm->set_shift;

	fm->tags = fmap_alloc(fm, (size_t)nr_csets * SSDP_FMAP_TAGS,
			      sizeof(*fm->tags));
	fm->tag_lru = fmap_alloc(fm, nr_csets, sizeof(*fm->tag_lru));
	fm->dprev = fmap_alloc(fm, nr_csets + 1, sizeof(*fm->dprev));
	fm->dnext = fmap_alloc(fm, nr_csets + 1, sizeof(*fm->dnext));
	fm->dirty_since = fmap_alloc(fm, nr_csets, sizeof(*fm->dirty_since));
	fm->nr_valid = fmap_alloc(fm, nr_csets, sizeof(*fm->nr_valid));
	fm->nr_dirty = fmap_alloc(fm, nr_csets, sizeof(*fm->nr_dirty));
	fm->nr_limbo = fmap_alloc(fm, nr_csets, sizeof(*fm->nr_limbo));
	fm->nr_tags = fmap_alloc(fm, nr_csets, sizeof(*fm->nr_tags));
	fm->pins = fmap_alloc(fm, nr_csets, sizeof(*fm->pins));
	fm->flags = fmap_alloc(fm, nr_csets, sizeof(*fm->flags));
	fm->changed = fmap_alloc(fm, BITS_TO_LONGS(nr_csets), sizeof(long));
	fm->owner = fmap_alloc(fm, (frames + 1) / 2, 1);
	fm->valid = fmap_alloc(fm, BITS_TO_LONGS(frames), sizeof(long));
	fm->dirty = fmap_alloc(fm, BITS_TO_LONGS(frames), sizeof(long));
	fm->alt = fmap_alloc(fm, BITS_TO_LONGS(frames), sizeof(long));
	if (!fm->tags || !fm->tag_lru || !fm->dprev || !fm->dnext ||
	    !fm->dirty_since || !fm->nr_valid || !fm->nr_dirty ||
	    !fm->nr_limbo || !fm->nr_tags || !fm->pins || !fm->flags ||
	    !fm->changed || !fm->owner || !fm->valid || !fm->dirty ||
	    !fm->alt) {
		ssdp_fmap_destroy(fm);
		return -ENOMEM;
	}
	memset(fm->tags, 0xff,
	       (size_t)nr_csets * SSDP_FMAP_TAGS * sizeof(*fm->tags));
	memset(fm->owner, 0xff, (frames + 1) / 2);
	for (i = 0; i < nr_csets; i++)
		fm->tag_lru[i] = SSDP_FM_LRU_INIT;
	for (i = 0; i <= nr_csets; i++) {
		fm->dprev[i] = i;
		fm->dnext[i] = i;
	}
	return 0;
}

int ssdp_fmap_set_version(struct ssdp_fmap *fm, u32 version)
{
	if (WARN_ON_ONCE(fm->nr_tags_used || fm->total_valid ||
			 fm->total_limbo) ||
	    (version != SSDP_FORMAT_VERSION && version != SSDP_FORMAT_V3))
		return -EINVAL;
	fm->version = version;
	return 0;
}

void ssdp_fmap_destroy(struct ssdp_fmap *fm)
{
	ssdp_free(fm->tags);
	ssdp_free(fm->tag_lru);
	ssdp_free(fm->dprev);
	ssdp_free(fm->dnext);
	ssdp_free(fm->dirty_since);
	ssdp_free(fm->nr_valid);
	ssdp_free(fm->nr_dirty);
	ssdp_free(fm->nr_limbo);
	ssdp_free(fm->nr_tags);
	ssdp_free(fm->pins);
	ssdp_free(fm->flags);
	ssdp_free(fm->changed);
	ssdp_free(fm->owner);
	ssdp_free(fm->valid);
	ssdp_free(fm->dirty);
	ssdp_free(fm->alt);
	memset(fm, 0, sizeof(*fm));
}

u32 ssdp_fmap_lookup(const struct ssdp_fmap *fm, u64 oset)
{
	u32 cset, t;

	if (oset >= SSDP_REC_TAG_FREE)
		return SSDP_NONE;
	cset = ssdp_fmap_set_of(fm, oset);
	for (t = 0; t < SSDP_FMAP_TAGS; t++)
		if (*tag_slot(fm, cset, t) == oset)
			return ssdp_line(cset, t);
	return SSDP_NONE;
}

u64 ssdp_fmap_oset_of(const struct ssdp_fmap *fm, u32 line)
{
	return *tag_slot(fm, ssdp_line_cset(line), ssdp_line_tag(line));
}

bool ssdp_fmap_tag_used(const struct ssdp_fmap *fm, u32 line)
{
	return ssdp_fmap_oset_of(fm, line) != SSDP_REC_TAG_FREE;
}

void ssdp_fmap_touch(struct ssdp_fmap *fm, u32 line)
{
	u32 cset = ssdp_line_cset(line), t = ssdp_line_tag(line), pos;
	u64 lru = fm->tag_lru[cset], below;

	for (pos = 0; pos < 16; pos++)
		if (((lru >> (pos * 4)) & 0xf) == t)
			break;
	if (WARN_ON_ONCE(pos == 16) || !pos)
		return;
	/* Shift positions 0..pos-1 up by one, put t at 0. */
	below = lru & ((1ULL << (pos * 4)) - 1);
	lru &= ~((1ULL << ((pos + 1) * 4)) - 1);
	fm->tag_lru[cset] = lru | below << 4 | t;
}

/* Which tags hold frames that pin them (claims, dirty, limbo). */
static u32 busy_tags(const struct ssdp_fmap *fm, u32 cset)
{
	size_t f = frame_of(fm, cset, 0), end = f + fm->set_blocks;
	u32 busy = 0, t;

	for (; f < end; f++) {
		t = owner_get(fm, f);
		if (t != SSDP_FMAP_FREE &&
		    (!test_bit(f, fm->valid) || test_bit(f, fm->dirty)))
			busy |= 1U << t;
	}
	return busy;
}

/* Drop every (clean) block of tag @t and free the tag. */
static void tag_evict(struct ssdp_fmap *fm, u32 cset, u32 t, bool *replaced)
{
	size_t f = frame_of(fm, cset, 0), end = f + fm->set_blocks;

	for (; f < end; f++) {
		if (owner_get(fm, f) != t)
			continue;
		frame_free(fm, f);
		if (__test_and_clear_bit(f, fm->valid)) {
			fm->nr_valid[cset]--;
			fm->total_valid--;
			fm->replaced++;
			*replaced = true;
		}
	}
	*tag_slot(fm, cset, t) = SSDP_REC_TAG_FREE;
	fm->nr_tags[cset]--;
	fm->nr_tags_used--;
	if (!fm->nr_tags[cset])
		fm->nr_mapped_sets--;
	mark_changed(fm, cset);
}

/* The least recently used tag not in @busy, or SSDP_FM_NO_TAG. */
static u32 lru_victim(const struct ssdp_fmap *fm, u32 cset, u32 busy)
{
	u64 lru = fm->tag_lru[cset];
	int pos;

	for (pos = SSDP_FMAP_TAGS - 1; pos >= 0; pos--) {
		u32 t = (lru >> (pos * 4)) & 0xf;

		if (t < SSDP_FMAP_TAGS && !(busy & (1U << t)) &&
		    *tag_slot(fm, cset, t) != SSDP_REC_TAG_FREE)
			return t;
	}
	return SSDP_FM_NO_TAG;
}

/* Tag @t's position in the set's recency, 0 the most recent. */
static u32 lru_pos(const struct ssdp_fmap *fm, u32 cset, u32 t)
{
	u64 lru = fm->tag_lru[cset];
	u32 pos;

	for (pos = 0; pos < 16; pos++)
		if (((lru >> (pos * 4)) & 0xf) == t)
			return pos;
	return 16;
}

u32 ssdp_fmap_tag_alloc(struct ssdp_fmap *fm, u64 oset, bool *replaced)
{
	u32 cset, t;

	*replaced = false;
	if (oset >= SSDP_REC_TAG_FREE)
		return SSDP_NONE;
	cset = ssdp_fmap_set_of(fm, oset);
	for (t = 0; t < SSDP_FMAP_TAGS; t++)
		if (*tag_slot(fm, cset, t) == SSDP_REC_TAG_FREE)
			break;
	if (t == SSDP_FMAP_TAGS) {
		if (fm->flags[cset] & SSDP_FM_NO_REPLACE)
			return SSDP_NONE;
		t = lru_victim(fm, cset, busy_tags(fm, cset));
		if (t == SSDP_FM_NO_TAG)
			return SSDP_NONE;
		tag_evict(fm, cset, t, replaced);
	}
	*tag_slot(fm, cset, t) = (u32)oset;
	if (!fm->nr_tags[cset]++)
		fm->nr_mapped_sets++;
	fm->nr_tags_used++;
	mark_changed(fm, cset);
	ssdp_fmap_touch(fm, ssdp_line(cset, t));
	return ssdp_line(cset, t);
}

/*
 * Blocks of one tag a claim must leave where they are: the whole range of
 * the write that claims them, run by run (ssdp_fmap_claim_runs()).  A
 * block an earlier run holds clean is counted as claimed there; a later
 * run replacing it (as the alt frame of another block) would leave the write
 * a block with no frame.
 */
struct claim_keep {
	u32 t;
	u32 first;
	u32 end;
};

/*
 * May a block that no frame holds for its tag go into frame @fb of
 * @cset?  *take: a clean block (another tag's, or another block of the
 * same tag outside @keep) would be replaced.
 */
static bool frame_takable(const struct ssdp_fmap *fm, u32 cset, u32 fb,
			  bool own_only, const struct claim_keep *keep,
			  bool *take)
{
	size_t f = frame_of(fm, cset, fb);
	u32 blk;

	*take = false;
	if (own_only)
		return false;
	if (owner_get(fm, f) == SSDP_FMAP_FREE)
		return true;
	if (keep && owner_get(fm, f) == keep->t) {
		blk = frame_block(fm, cset, keep->t, fb);
		if (blk >= keep->first && blk < keep->end)
			return false;
	}
	*take = test_bit(f, fm->valid) && !test_bit(f, fm->dirty) &&
		!(fm->flags[cset] & SSDP_FM_NO_REPLACE);
	return *take;
}

/*
 * The frame for block @blk, which its tag holds nowhere: a free one of
 * its two candidates (home first), else the one whose clean block
 * belongs to the tag used longer ago; SSDP_NONE if neither may be taken.
 */
static u32 choose_frame(const struct ssdp_fmap *fm, u32 cset, u32 t,
			u32 blk, bool own_only, const struct claim_keep *keep,
			bool *take)
{
	u32 x = alt_xor(fm, cset, t), alt = blk ^ x;
	bool ch, ca, th, ta;

	ch = frame_takable(fm, cset, blk, own_only, keep, &th);
	if (ch && !th) {
		*take = false;
		return blk;
	}
	ca = x && frame_takable(fm, cset, alt, own_only, keep, &ta);
	if (ca && !ta) {
		*take = false;
		return alt;
	}
	*take = true;
	if (ch && ca)
		return lru_pos(fm, cset, owner_get(fm, frame_of(fm, cset, alt))) >
		       lru_pos(fm, cset, owner_get(fm, frame_of(fm, cset, blk))) ?
		       alt : blk;
	if (ch)
		return blk;
	return ca ? alt : SSDP_NONE;
}

/* Frame @fb of @cset goes to block @blk of tag @t, replacing if @take. */
static void claim_frame(struct ssdp_fmap *fm, u32 cset, u32 t, u32 fb,
			u32 blk, bool take, bool *replaced)
{
	size_t f = frame_of(fm, cset, fb);

	if (take) {
		frame_unvalidate(fm, cset, f);
		fm->replaced++;
		*replaced = true;
		mark_changed(fm, cset);
	}
	frame_own(fm, cset, fb, t, blk);
	fm->flags[cset] |= SSDP_FM_CLAIMS;
}

/*
 * ssdp_fmap_claim(), or with @fm NULL what it would take of @cfm.  Each
 * block of the run gets a frame of its own (f0 + n), and claiming one
 * never makes a later block less claimable: no frame of a block in @keep
 * (which holds the run) changes hands.  So the real claim takes at least
 * what the dry walk says, and all of the run when it says all.
 */
static u32 claim_walk(struct ssdp_fmap *fm, const struct ssdp_fmap *cfm,
		      u32 line, u32 first, u32 nr,
		      const struct claim_keep *keep, bool own_only,
		      bool *replaced)
{
	u32 cset = ssdp_line_cset(line), t = ssdp_line_tag(line);
	u32 n, b, fb, f0 = SSDP_NONE;
	bool take;

	*replaced = false;
	if (WARN_ON_ONCE(!line_ok(cfm, line, first, nr)))
		return 0;
	for (n = 0; n < nr; n++) {
		b = first + n;
		fb = held_at(cfm, cset, t, b);
		if (fb != SSDP_NONE) {
			/* Held: claimed or valid it stays, limbo it waits. */
			if (frame_limbo(cfm, frame_of(cfm, cset, fb)) ||
			    (n && fb != f0 + n))
				break;
		} else if (!n) {
			fb = choose_frame(cfm, cset, t, b, own_only, keep,
					  &take);
			if (fb == SSDP_NONE)
				break;
			if (fm)
				claim_frame(fm, cset, t, fb, b, take, replaced);
		} else {
			/* The run stays contiguous on the SSD. */
			fb = f0 + n;
			if ((fb != b && fb != (b ^ alt_xor(cfm, cset, t))) ||
			    !frame_takable(cfm, cset, fb, own_only, keep,
					   &take))
				break;
			if (fm)
				claim_frame(fm, cset, t, fb, b, take, replaced);
		}
		if (!n)
			f0 = fb;
	}
	return n;
}

u32 ssdp_fmap_claim(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr,
		    bool own_only, bool *replaced)
{
	struct claim_keep keep = { ssdp_line_tag(line), first, first + nr };

	return claim_walk(fm, fm, line, first, nr, &keep, own_only, replaced);
}

u32 ssdp_fmap_claimable(const struct ssdp_fmap *fm, u32 line, u32 first,
			u32 nr, bool own_only)
{
	struct claim_keep keep = { ssdp_line_tag(line), first, first + nr };
	bool replaced;

	return claim_walk(NULL, fm, line, first, nr, &keep, own_only,
			  &replaced);
}

u32 ssdp_fmap_claim_runs(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr,
			 bool own_only, bool *replaced, u32 *runs)
{
	struct claim_keep keep = { ssdp_line_tag(line), first, first + nr };
	u32 n = 0, m;
	bool r;

	*replaced = false;
	*runs = 0;
	while (n < nr) {
		m = claim_walk(fm, fm, line, first + n, nr - n, &keep,
			       own_only, &r);
		*replaced |= r;
		if (!m)
			break;
		n += m;
		(*runs)++;
	}
	return n;
}

/* Could ssdp_fmap_claim() take block @blk of tag @t (on its own)? */
static bool block_claimable(const struct ssdp_fmap *fm, u32 cset, u32 t,
			    u32 blk, bool own_only,
			    const struct claim_keep *keep)
{
	u32 fb = held_at(fm, cset, t, blk);
	bool take;

	if (fb != SSDP_NONE)
		return !frame_limbo(fm, frame_of(fm, cset, fb));
	return choose_frame(fm, cset, t, blk, own_only, keep, &take) !=
	       SSDP_NONE;
}

u32 ssdp_fmap_unclaimable_run(const struct ssdp_fmap *fm, u32 line,
			      u32 first, u32 nr, bool own_only)
{
	struct claim_keep keep = { ssdp_line_tag(line), first, first + nr };
	u32 cset = ssdp_line_cset(line), n;

	if (WARN_ON_ONCE(!line_ok(fm, line, first, nr)))
		return nr;
	for (n = 0; n < nr; n++)
		if (block_claimable(fm, cset, keep.t, first + n, own_only,
				    &keep))
			break;
	return n;
}

static inline bool frame_dirty(const struct ssdp_fmap *fm, u32 cset, u32 fb)
{
	size_t f = frame_of(fm, cset, fb);

	return test_bit(f, fm->valid) && test_bit(f, fm->dirty);
}

u32 ssdp_fmap_foreign_dirty(const struct ssdp_fmap *fm, u32 line, u32 first,
			    u32 nr)
{
	u32 cset = ssdp_line_cset(line), t = ssdp_line_tag(line), n, b, x;
	struct claim_keep keep = { t, first, first + nr };
	bool take;

	if (WARN_ON_ONCE(!line_ok(fm, line, first, nr)))
		return SSDP_NONE;
	x = alt_xor(fm, cset, t);
	for (n = 0; n < nr; n++) {
		b = first + n;
		if (held_at(fm, cset, t, b) != SSDP_NONE ||
		    choose_frame(fm, cset, t, b, false, &keep, &take) !=
		    SSDP_NONE)
			continue;
		/* Neither candidate may be taken: is a dirty block in one? */
		if (frame_dirty(fm, cset, b))
			return b;
		if (x && frame_dirty(fm, cset, b ^ x))
			return b ^ x;
	}
	return SSDP_NONE;
}

bool ssdp_fmap_frame_dirty(const struct ssdp_fmap *fm, u32 cset, u32 frame,
			   u32 *line, u32 *blk)
{
	size_t f;

	if (WARN_ON_ONCE(cset >= fm->nr_csets || frame >= fm->set_blocks) ||
	    !frame_dirty(fm, cset, frame))
		return false;
	f = frame_of(fm, cset, frame);
	*line = ssdp_line(cset, owner_get(fm, f));
	*blk = frame_block(fm, cset, owner_get(fm, f), frame);
	return true;
}

u32 ssdp_fmap_frame(const struct ssdp_fmap *fm, u32 line, u32 blk)
{
	if (WARN_ON_ONCE(!line_ok(fm, line, blk, 1)))
		return SSDP_NONE;
	return held_at(fm, ssdp_line_cset(line), ssdp_line_tag(line), blk);
}

u32 ssdp_fmap_frame_run(const struct ssdp_fmap *fm, u32 line, u32 first,
			u32 nr, u32 *frame)
{
	u32 cset = ssdp_line_cset(line), t = ssdp_line_tag(line), n;

	*frame = SSDP_NONE;
	if (WARN_ON_ONCE(!nr || !line_ok(fm, line, first, nr)))
		return 0;
	*frame = held_at(fm, cset, t, first);
	if (*frame == SSDP_NONE)
		return 0;
	for (n = 1; n < nr; n++)
		if (held_at(fm, cset, t, first + n) != *frame + n)
			break;
	return n;
}

enum ssdp_fmap_hit ssdp_fmap_block(const struct ssdp_fmap *fm, u32 line,
				   u32 blk)
{
	u32 cset = ssdp_line_cset(line);
	u32 fb = held_at(fm, cset, ssdp_line_tag(line), blk);
	size_t f;

	if (fb == SSDP_NONE)
		return SSDP_FMAP_MISS;
	f = frame_of(fm, cset, fb);
	if (!test_bit(f, fm->valid))
		return SSDP_FMAP_MISS;
	return test_bit(f, fm->dirty) ? SSDP_FMAP_DIRTY : SSDP_FMAP_CLEAN;
}

u32 ssdp_fmap_hit_run(const struct ssdp_fmap *fm, u32 line, u32 first,
		      u32 nr, enum ssdp_fmap_hit *hit)
{
	u32 n, f0;

	if (WARN_ON_ONCE(!nr || !line_ok(fm, line, first, nr))) {
		*hit = SSDP_FMAP_MISS;
		return nr;
	}
	*hit = ssdp_fmap_block(fm, line, first);
	if (*hit != SSDP_FMAP_MISS)
		nr = ssdp_fmap_frame_run(fm, line, first, nr, &f0);
	for (n = 1; n < nr; n++)
		if (ssdp_fmap_block(fm, line, first + n) != *hit)
			break;
	return n;
}

bool ssdp_fmap_any_dirty(const struct ssdp_fmap *fm, u32 line, u32 first,
			 u32 nr)
{
	u32 n;

	for (n = 0; n < nr; n++)
		if (ssdp_fmap_block(fm, line, first + n) == SSDP_FMAP_DIRTY)
			return true;
	return false;
}

u32 ssdp_fmap_dirty_run(const struct ssdp_fmap *fm, u32 line, u32 first,
			u32 nr, bool *dirty)
{
	u32 n;

	*dirty = ssdp_fmap_block(fm, line, first) == SSDP_FMAP_DIRTY;
	for (n = 1; n < nr; n++)
		if ((ssdp_fmap_block(fm, line, first + n) == SSDP_FMAP_DIRTY) !=
		    *dirty)
			break;
	return n;
}

bool ssdp_fmap_all_claimed(const struct ssdp_fmap *fm, u32 line, u32 first,
			   u32 nr)
{
	u32 cset = ssdp_line_cset(line), n;

	for (n = 0; n < nr; n++)
		if (held_at(fm, cset, ssdp_line_tag(line), first + n) ==
		    SSDP_NONE)
			return false;
	return true;
}

void ssdp_fmap_set_valid(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr)
{
	u32 cset = ssdp_line_cset(line), n;

	if (WARN_ON_ONCE(!line_ok(fm, line, first, nr)))
		return;
	for (n = 0; n < nr; n++) {
		u32 fb = held_at(fm, cset, ssdp_line_tag(line), first + n);
		size_t f = frame_of(fm, cset, fb);

		if (WARN_ON_ONCE(fb == SSDP_NONE))
			continue;
		/* Dropped while the I/O was in flight: it lost that race. */
		if (!test_bit(f, fm->valid) && test_bit(f, fm->dirty))
			continue;
		if (__test_and_set_bit(f, fm->valid))
			continue;
		fm->nr_valid[cset]++;
		fm->total_valid++;
		mark_changed(fm, cset);
	}
}

void ssdp_fmap_set_dirty(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr)
{
	u32 cset = ssdp_line_cset(line), n;

	if (WARN_ON_ONCE(!line_ok(fm, line, first, nr)))
		return;
	for (n = 0; n < nr; n++) {
		u32 fb = held_at(fm, cset, ssdp_line_tag(line), first + n);
		size_t f = frame_of(fm, cset, fb);

		if (WARN_ON_ONCE(fb == SSDP_NONE))
			continue;
		if (!test_bit(f, fm->valid))
			continue;
		if (__test_and_set_bit(f, fm->dirty))
			continue;
		dirty_inc(fm, cset);
		mark_changed(fm, cset);
	}
}

void ssdp_fmap_clear_dirty(struct ssdp_fmap *fm, u32 line, u32 first,
			   u32 nr)
{
	u32 cset = ssdp_line_cset(line), n;

	if (WARN_ON_ONCE(!line_ok(fm, line, first, nr)))
		return;
	for (n = 0; n < nr; n++) {
		u32 fb = held_at(fm, cset, ssdp_line_tag(line), first + n);
		size_t f = frame_of(fm, cset, fb);

		if (fb == SSDP_NONE || !test_bit(f, fm->valid) ||
		    !__test_and_clear_bit(f, fm->dirty))
			continue;
		dirty_dec(fm, cset);
		mark_changed(fm, cset);
	}
}

static void to_limbo(struct ssdp_fmap *fm, u32 cset, size_t f)
{
	frame_unvalidate(fm, cset, f);
	dirty_dec(fm, cset);
	if (!fm->nr_limbo[cset]++)
		fm->nr_limbo_sets++;
	fm->total_limbo++;
	fm->flags[cset] |= SSDP_FM_LIMBO_NEW;
}

void ssdp_fmap_drop(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr)
{
	u32 cset = ssdp_line_cset(line), n;
	bool pinned;

	if (WARN_ON_ONCE(!line_ok(fm, line, first, nr)))
		return;
	pinned = fm->pins[cset];
	for (n = 0; n < nr; n++) {
		u32 fb = held_at(fm, cset, ssdp_line_tag(line), first + n);
		size_t f = frame_of(fm, cset, fb);

		if (fb == SSDP_NONE)
			continue;
		if (!test_bit(f, fm->valid)) {
			if (!test_bit(f, fm->dirty) && !pinned)
				frame_free(fm, f);
			continue;
		}
		mark_changed(fm, cset);
		if (test_bit(f, fm->dirty)) {
			to_limbo(fm, cset, f);
			continue;
		}
		frame_unvalidate(fm, cset, f);
		/* Under I/O in flight the frame stays out of others' reach. */
		if (pinned)
			fm->flags[cset] |= SSDP_FM_CLAIMS;
		else
			frame_free(fm, f);
	}
}

void ssdp_fmap_overwrite(struct ssdp_fmap *fm, u32 line, u32 first, u32 nr)
{
	u32 cset = ssdp_line_cset(line), n, fb;
	size_t f;

	if (WARN_ON_ONCE(!line_ok(fm, line, first, nr) || !fm->pins[cset]))
		return;
	for (n = 0; n < nr; n++) {
		fb = held_at(fm, cset, ssdp_line_tag(line), first + n);
		if (fb == SSDP_NONE)
			continue;
		f = frame_of(fm, cset, fb);
		if (!test_bit(f, fm->valid) || test_bit(f, fm->dirty))
			continue;
		frame_unvalidate(fm, cset, f);
		fm->flags[cset] |= SSDP_FM_CLAIMS;
		mark_changed(fm, cset);
	}
}

bool ssdp_fmap_any_held(const struct ssdp_fmap *fm, u32 line, u32 first,
			u32 nr)
{
	u32 n;

	if (WARN_ON_ONCE(!line_ok(fm, line, first, nr)))
		return true;
	for (n = 0; n < nr; n++)
		if (held_at(fm, ssdp_line_cset(line), ssdp_line_tag(line),
			    first + n) != SSDP_NONE)
			return true;
	return false;
}

bool ssdp_fmap_any_claimed(const struct ssdp_fmap *fm, u32 line, u32 first,
			   u32 nr)
{
	u32 cset = ssdp_line_cset(line), n, fb;
	size_t f;

	if (WARN_ON_ONCE(!line_ok(fm, line, first, nr)))
		return true;
	for (n = 0; n < nr; n++) {
		fb = held_at(fm, cset, ssdp_line_tag(line), first + n);
		if (fb == SSDP_NONE)
			continue;
		f = frame_of(fm, cset, fb);
		if (!test_bit(f, fm->valid) && !test_bit(f, fm->dirty))
			return true;
	}
	return false;
}

void ssdp_fmap_pin(struct ssdp_fmap *fm, u32 cset)
{
	WARN_ON_ONCE(fm->pins[cset] == 0xff);
	fm->pins[cset]++;
}

/* No I/O in flight on the set: every claim is stale. */
static void sweep_claims(struct ssdp_fmap *fm, u32 cset)
{
	size_t f = frame_of(fm, cset, 0), end = f + fm->set_blocks;

	for (; f < end; f++)
		if (owner_get(fm, f) != SSDP_FMAP_FREE &&
		    !test_bit(f, fm->valid) && !test_bit(f, fm->dirty))
			frame_free(fm, f);
	fm->flags[cset] &= ~SSDP_FM_CLAIMS;
}

void ssdp_fmap_unpin(struct ssdp_fmap *fm, u32 cset)
{
	if (WARN_ON_ONCE(!fm->pins[cset]))
		return;
	if (!--fm->pins[cset] && (fm->flags[cset] & SSDP_FM_CLAIMS))
		sweep_claims(fm, cset);
}

bool ssdp_fmap_pinned(const struct ssdp_fmap *fm, u32 cset)
{
	return fm->pins[cset];
}

void ssdp_fmap_set_no_replace(struct ssdp_fmap *fm, u32 cset, bool on)
{
	if (on)
		fm->flags[cset] |= SSDP_FM_NO_REPLACE;
	else
		fm->flags[cset] &= ~SSDP_FM_NO_REPLACE;
}

u32 ssdp_fmap_dirty_lines(const struct ssdp_fmap *fm, u32 cset, u32 *lines)
{
	size_t f = frame_of(fm, cset, 0), end = f + fm->set_blocks;
	u32 mask = 0, n = 0, t, i;

	if (!fm->nr_dirty[cset])
		return 0;
	for (; f < end; f++)
		if (test_bit(f, fm->valid) && test_bit(f, fm->dirty))
			mask |= 1U << owner_get(fm, f);
	for (t = 0; t < SSDP_FMAP_TAGS; t++) {
		u32 oset = *tag_slot(fm, cset, t);

		if (!(mask & (1U << t)))
			continue;
		/* Insertion sort by origin set: writeback in disk order. */
		for (i = n; i && ssdp_fmap_oset_of(fm, lines[i - 1]) > oset; i--)
			lines[i] = lines[i - 1];
		lines[i] = ssdp_line(cset, t);
		n++;
	}
	return n;
}

bool ssdp_fmap_next_dirty_run(const struct ssdp_fmap *fm, u32 line, u32 from,
			      u32 *first, u32 *nr)
{
	u32 b;

	for (b = from; b < fm->set_blocks; b++)
		if (ssdp_fmap_block(fm, line, b) == SSDP_FMAP_DIRTY)
			break;
	if (b >= fm->set_blocks)
		return false;
	*first = b;
	while (b < fm->set_blocks &&
	       ssdp_fmap_block(fm, line, b) == SSDP_FMAP_DIRTY)
		b++;
	*nr = b - *first;
	return true;
}

/* A set of the dirty list, or SSDP_NONE at its sentinel. */
static inline u32 dirty_set_or_none(const struct ssdp_fmap *fm, u32 c)
{
	return c == dirty_sentinel(fm) ? SSDP_NONE : c;
}

u32 ssdp_fmap_oldest_dirty(const struct ssdp_fmap *fm)
{
	return dirty_set_or_none(fm, fm->dnext[dirty_sentinel(fm)]);
}

u32 ssdp_fmap_next_dirty_set(const struct ssdp_fmap *fm, u32 cset)
{
	return dirty_set_or_none(fm, fm->dnext[cset]);
}

u32 ssdp_fmap_newest_dirty(const struct ssdp_fmap *fm)
{
	return dirty_set_or_none(fm, fm->dprev[dirty_sentinel(fm)]);
}

u32 ssdp_fmap_prev_dirty_set(const struct ssdp_fmap *fm, u32 cset)
{
	return dirty_set_or_none(fm, fm->dprev[cset]);
}

void ssdp_fmap_set_crowded(struct ssdp_fmap *fm, u32 frames)
{
	u32 c, n = 0;

	frames = min(frames, fm->set_blocks);
	if (frames == fm->crowded_at)
		return;
	fm->crowded_at = frames;
	for (c = ssdp_fmap_oldest_dirty(fm); c != SSDP_NONE;
	     c = ssdp_fmap_next_dirty_set(fm, c))
		n += ssdp_fmap_crowded(fm, c);
	if (n)
		fm->crowded_events++;
	fm->nr_crowded = n;
}

void ssdp_fmap_dirty_renew(struct ssdp_fmap *fm, u32 cset)
{
	bool owed;

	if (WARN_ON_ONCE(cset >= fm->nr_csets) || !fm->nr_dirty[cset])
		return;
	/* Renewed by a writeback that may be older than the flush. */
	owed = ssdp_fmap_flush_marked(fm, cset);
	dirty_list_del(fm, cset);
	dirty_list_add(fm, cset);
	if (owed)
		ssdp_fmap_flush_mark(fm, cset);
}

u32 ssdp_fmap_flush_mark_dirty(struct ssdp_fmap *fm)
{
	u32 c;

	for (c = ssdp_fmap_oldest_dirty(fm); c != SSDP_NONE;
	     c = ssdp_fmap_next_dirty_set(fm, c))
		ssdp_fmap_flush_mark(fm, c);
	return fm->nr_flush_marked;
}

void ssdp_fmap_flush_mark(struct ssdp_fmap *fm, u32 cset)
{
	if (!fm->nr_dirty[cset] || (fm->flags[cset] & SSDP_FM_FLUSH))
		return;
	fm->flags[cset] |= SSDP_FM_FLUSH;
	fm->nr_flush_marked++;
}

bool ssdp_fmap_flush_marked(const struct ssdp_fmap *fm, u32 cset)
{
	return fm->flags[cset] & SSDP_FM_FLUSH;
}

void ssdp_fmap_flush_unmark(struct ssdp_fmap *fm, u32 cset)
{
	if (!(fm->flags[cset] & SSDP_FM_FLUSH))
		return;
	fm->flags[cset] &= ~SSDP_FM_FLUSH;
	fm->nr_flush_marked--;
}

void ssdp_fmap_flush_unmark_all(struct ssdp_fmap *fm)
{
	u32 c;

	for (c = 0; fm->nr_flush_marked && c < fm->nr_csets; c++)
		ssdp_fmap_flush_unmark(fm, c);
}

u32 ssdp_fmap_oldest_dirty_unpinned(const struct ssdp_fmap *fm,
				    u32 max_scan)
{
	u32 c = ssdp_fmap_oldest_dirty(fm);

	for (; c != SSDP_NONE && max_scan; max_scan--,
	     c = ssdp_fmap_next_dirty_set(fm, c))
		if (!fm->pins[c])
			return c;
	return SSDP_NONE;
}

u32 ssdp_fmap_next_changed(const struct ssdp_fmap *fm, u32 from)
{
	unsigned long c = find_next_bit(fm->changed, fm->nr_csets, from);

	return c >= fm->nr_csets ? SSDP_NONE : (u32)c;
}

void ssdp_fmap_mark_changed(struct ssdp_fmap *fm, u32 cset)
{
	mark_changed(fm, cset);
}

void ssdp_fmap_encode_set(struct ssdp_fmap *fm, u32 cset,
			  struct ssdp_rec_view *v)
{
	size_t f = frame_of(fm, cset, 0);
	u32 b, t;

	memset(v->owners, 0xff, sizeof(v->owners));
	memset(v->dirty, 0, sizeof(v->dirty));
	memset(v->alt, 0, sizeof(v->alt));
	for (t = 0; t < SSDP_FMAP_TAGS; t++)
		v->tags[t] = *tag_slot(fm, cset, t);
	for (b = 0; b < fm->set_blocks; b++, f++) {
		if (!test_bit(f, fm->valid))
			continue;
		v->owners[b / 2] &= ~(0xf << (b % 2 * 4));
		v->owners[b / 2] |= owner_get(fm, f) << (b % 2 * 4);
		if (test_bit(f, fm->dirty))
			v->dirty[b / 8] |= 1 << (b % 8);
		if (test_bit(f, fm->alt))
			v->alt[b / 8] |= 1 << (b % 8);
	}
	__clear_bit(cset, fm->changed);
	/* Both may be set (an encode before the last one's end): not a flip. */
	if (fm->flags[cset] & SSDP_FM_LIMBO_NEW) {
		fm->flags[cset] &= ~SSDP_FM_LIMBO_NEW;
		fm->flags[cset] |= SSDP_FM_LIMBO_ENC;
	}
}

void ssdp_fmap_commit_done(struct ssdp_fmap *fm, u32 cset)
{
	size_t f = frame_of(fm, cset, 0), end = f + fm->set_blocks;
	u8 fl = fm->flags[cset];

	if (!(fl & SSDP_FM_LIMBO_ENC))
		return;
	fm->flags[cset] &= ~SSDP_FM_LIMBO_ENC;
	/* Limbo frames made since the encode wait for the next commit. */
	if (fl & SSDP_FM_LIMBO_NEW)
		return;
	/* A reader of the block may still be in flight: claimed till unpin. */
	for (; f < end; f++) {
		if (test_bit(f, fm->valid) || !test_bit(f, fm->dirty))
			continue;
		__clear_bit(f, fm->dirty);
		if (fm->pins[cset])
			fm->flags[cset] |= SSDP_FM_CLAIMS;
		else
			frame_free(fm, f);
	}
	fm->total_limbo -= fm->nr_limbo[cset];
	if (fm->nr_limbo[cset])
		fm->nr_limbo_sets--;
	fm->nr_limbo[cset] = 0;
}

void ssdp_fmap_commit_failed(struct ssdp_fmap *fm, u32 cset)
{
	mark_changed(fm, cset);
	/* Limbo made since the encode (NEW too) stays waiting with the rest. */
	if (fm->flags[cset] & SSDP_FM_LIMBO_ENC) {
		fm->flags[cset] &= ~SSDP_FM_LIMBO_ENC;
		fm->flags[cset] |= SSDP_FM_LIMBO_NEW;
	}
}

static bool set_empty(const struct ssdp_fmap *fm, u32 cset)
{
	return !fm->nr_tags[cset] && !fm->nr_valid[cset] &&
	       !fm->nr_limbo[cset] && !fm->pins[cset];
}

int ssdp_fmap_load_set(struct ssdp_fmap *fm, u32 cset,
		       const struct ssdp_rec_view *v, bool keep_clean)
{
	size_t f = frame_of(fm, cset, 0);
	u32 used = 0, kept = 0, t, u, b, x;
	bool dropped = false;

	if (WARN_ON_ONCE(cset >= fm->nr_csets || !set_empty(fm, cset)))
		return -EINVAL;
	for (t = 0; t < SSDP_FMAP_TAGS; t++) {
		if (v->tags[t] == SSDP_REC_TAG_FREE)
			continue;
		if (ssdp_fmap_set_of(fm, v->tags[t]) != cset)
			return -EUCLEAN;
		for (u = 0; u < t; u++)
			if (v->tags[u] == v->tags[t])
				return -EUCLEAN;
		used |= 1U << t;
	}
	for (b = 0; b < fm->set_blocks; b++) {
		u32 o = ssdp_rec_owner(v, b);

		if (o == SSDP_FMAP_FREE ?
		    ssdp_rec_dirty(v, b) || ssdp_rec_alt(v, b) :
		    !(used & (1U << o)))
			return -EUCLEAN;
		if (o == SSDP_FMAP_FREE)
			continue;
		x = ssdp_alt_xor(v->tags[o], fm->set_blocks, fm->version);
		if (ssdp_rec_alt(v, b) && !x)
			return -EUCLEAN;
		/* One block in two frames (see ssdp_rec_decode()). */
		if (x && o == ssdp_rec_owner(v, b ^ x) &&
		    ssdp_rec_alt(v, b) != ssdp_rec_alt(v, b ^ x))
			return -EUCLEAN;
	}
	for (b = 0; b < fm->set_blocks; b++, f++) {
		u32 o = ssdp_rec_owner(v, b);
		bool dirty = ssdp_rec_dirty(v, b);

		if (o == SSDP_FMAP_FREE)
			continue;
		if (!dirty && !keep_clean) {
			dropped = true;
			continue;
		}
		owner_put(fm, f, o);
		if (ssdp_rec_alt(v, b))
			__set_bit(f, fm->alt);
		__set_bit(f, fm->valid);
		fm->nr_valid[cset]++;
		fm->total_valid++;
		kept |= 1U << o;
		if (dirty) {
			__set_bit(f, fm->dirty);
			dirty_inc(fm, cset);
		}
	}
	/* After a crash a tag whose blocks all went is not worth its slot. */
	if (!keep_clean && used != kept) {
		used = kept;
		dropped = true;
	}
	for (t = 0; t < SSDP_FMAP_TAGS; t++) {
		if (!(used & (1U << t)))
			continue;
		*tag_slot(fm, cset, t) = v->tags[t];
		fm->nr_tags[cset]++;
		fm->nr_tags_used++;
	}
	if (fm->nr_tags[cset])
		fm->nr_mapped_sets++;
	/*
	 * The record on the SSD still names what was dropped; it must be
	 * rewritten before a clean shutdown could make it believed again.
	 */
	if (dropped)
		mark_changed(fm, cset);
	return 0;
}

static int check_set(const struct ssdp_fmap *fm, u32 cset, u64 *valid,
		     u64 *dirty, u64 *limbo, const char **why)
{
	size_t f = frame_of(fm, cset, 0);
	u32 nv = 0, nd = 0, nl = 0, used = 0, nt = 0, t, u, b, x;

	for (t = 0; t < SSDP_FMAP_TAGS; t++) {
		u32 oset = *tag_slot(fm, cset, t);

		if (oset == SSDP_REC_TAG_FREE)
			continue;
		used |= 1U << t;
		nt++;
		if (ssdp_fmap_set_of(fm, oset) != cset)
			return *why = "tag in the wrong set", -EUCLEAN;
		for (u = 0; u < t; u++)
			if (*tag_slot(fm, cset, u) == oset)
				return *why = "tag twice in a set", -EUCLEAN;
	}
	for (b = 0; b < fm->set_blocks; b++, f++) {
		u32 o = owner_get(fm, f);
		bool v = test_bit(f, fm->valid), d = test_bit(f, fm->dirty);

		if (o == SSDP_FMAP_FREE) {
			if (v || d || test_bit(f, fm->alt))
				return *why = "state on a free frame", -EUCLEAN;
			continue;
		}
		if (!(used & (1U << o)))
			return *why = "frame owned by a free tag", -EUCLEAN;
		x = alt_xor(fm, cset, o);
		if (test_bit(f, fm->alt) && !x)
			return *why = "alt frame in a one-frame set", -EUCLEAN;
		if (x && o == owner_get(fm, frame_of(fm, cset, b ^ x)) &&
		    test_bit(f, fm->alt) !=
		    test_bit(frame_of(fm, cset, b ^ x), fm->alt))
			return *why = "block in two frames", -EUCLEAN;
		nv += v;
		nd += v && d;
		nl += !v && d;
		if (!v && !d && !fm->pins[cset])
			return *why = "claim in an unpinned set", -EUCLEAN;
	}
	if (nv != fm->nr_valid[cset] || nd != fm->nr_dirty[cset] ||
	    nl != fm->nr_limbo[cset] || nt != fm->nr_tags[cset])
		return *why = "set counters", -EUCLEAN;
	if ((fm->dnext[cset] != cset) != !!nd)
		return *why = "dirty list membership", -EUCLEAN;
	if ((fm->flags[cset] & SSDP_FM_FLUSH) && !nd)
		return *why = "a clean set owed to a flush", -EUCLEAN;
	*valid += nv;
	*dirty += nd;
	*limbo += nl;
	return 0;
}

int ssdp_fmap_check(const struct ssdp_fmap *fm, const char **why)
{
	u64 valid = 0, dirty = 0, limbo = 0;
	u32 c, n = 0, tags = 0, mapped = 0, lsets = 0, owed = 0, crowded = 0;
	const char *dummy;
	int r;

	if (!why)
		why = &dummy;
	for (c = 0; c < fm->nr_csets; c++) {
		r = check_set(fm, c, &valid, &dirty, &limbo, why);
		if (r)
			return r;
		tags += fm->nr_tags[c];
		mapped += !!fm->nr_tags[c];
		lsets += !!fm->nr_limbo[c];
		owed += !!(fm->flags[c] & SSDP_FM_FLUSH);
		crowded += ssdp_fmap_crowded(fm, c);
	}
	for (c = ssdp_fmap_oldest_dirty(fm); c != SSDP_NONE;
	     c = ssdp_fmap_next_dirty_set(fm, c))
		if (++n > fm->nr_csets)
			return *why = "dirty list loops", -EUCLEAN;
	if (valid != fm->total_valid || dirty != fm->total_dirty ||
	    limbo != fm->total_limbo || n != fm->nr_dirty_sets ||
	    tags != fm->nr_tags_used || mapped != fm->nr_mapped_sets ||
	    lsets != fm->nr_limbo_sets || owed != fm->nr_flush_marked ||
	    crowded != fm->nr_crowded)
		return *why = "totals", -EUCLEAN;
	return 0;
}
