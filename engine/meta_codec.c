// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio metadata codec (see meta_codec.h and ssdprio_format.h).
 */
#include "meta_codec.h"

#ifdef __KERNEL__
#include <linux/crc32c.h>
#include <asm/byteorder.h>

u32 ssdp_crc32c(u32 seed, const void *p, size_t len)
{
	return crc32c(seed, p, len);
}

#else
#include <endian.h>

#define cpu_to_le32(x)	htole32(x)
#define cpu_to_le64(x)	htole64(x)
#define le32_to_cpu(x)	le32toh(x)
#define le64_to_cpu(x)	le64toh(x)

/* Reflected Castagnoli polynomial, no pre/post inversion (as the kernel). */
u32 ssdp_crc32c(u32 seed, const void *p, size_t len)
{
	static u32 table[256];
	const u8 *b = p;
	u32 crc = seed;
	size_t i;
	int k;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			u32 c = i;

			for (k = 0; k < 8; k++)
				c = (c >> 1) ^ (c & 1 ? 0x82f63b78U : 0);
			table[i] = c;
		}
	}
	for (i = 0; i < len; i++)
		crc = table[(crc ^ b[i]) & 0xff] ^ (crc >> 8);
	return crc;
}
#endif

#define SB_CRC_BYTES	offsetof(struct ssdp_disk_sb, crc)

void ssdp_sb_encode(const struct ssdp_sb_info *in, void *sector)
{
	struct ssdp_disk_sb *d = sector;

	memset(d, 0, sizeof(*d));
	d->magic = cpu_to_le64(SSDP_SB_MAGIC);
	d->version = cpu_to_le32(in->version);
	d->flags = cpu_to_le32(in->flags);
	d->compat = cpu_to_le32(in->compat);
	d->incompat = cpu_to_le32(in->incompat);
	memcpy(d->uuid, in->uuid, sizeof(d->uuid));
	memcpy(d->origin_id, in->origin_id, sizeof(d->origin_id));
	d->origin_sectors = cpu_to_le64(in->origin_sectors);
	d->cache_sectors = cpu_to_le64(in->cache_sectors);
	d->block_sectors = cpu_to_le32(in->block_sectors);
	d->set_blocks = cpu_to_le32(in->set_blocks);
	d->nr_csets = cpu_to_le64(in->nr_csets);
	d->rec_bytes = cpu_to_le32(in->rec_bytes);
	d->rec_sectors = cpu_to_le32(in->rec_sectors);
	d->data_start = cpu_to_le64(in->data_start);
	d->seq = cpu_to_le64(in->seq);
	d->format_time = cpu_to_le64(in->format_time);
	memcpy(d->origin_uid, in->origin_uid, sizeof(d->origin_uid));
	d->origin_uid_len = cpu_to_le32(in->origin_uid_len);
	d->origin_uid_type = cpu_to_le32(in->origin_uid_type);
	d->origin_start = cpu_to_le64(in->origin_start);
	d->crc = cpu_to_le32(ssdp_crc32c(~0U, d, SB_CRC_BYTES));
}

bool ssdp_all_zero(const void *p, size_t len)
{
	const u8 *b = p;

	while (len--)
		if (*b++)
			return false;
	return true;
}

void ssdp_sb_layout(const struct ssdp_sb_info *sb, struct ssdp_layout *l)
{
	l->nr_csets = sb->nr_csets;
	l->rec_bytes = sb->rec_bytes;
	l->rec_sectors = sb->rec_sectors;
	l->meta_sectors = SSDP_SB_SECTORS + SSDP_META_COPIES * sb->rec_sectors;
	l->data_start = sb->data_start;
	l->set_sectors = (u64)sb->block_sectors * sb->set_blocks;
}

/* An upper bound on the sets first, then fewer until metadata + data fit. */
int ssdp_layout_compute(struct ssdp_layout *l, u64 cache_sectors,
			u32 block_sectors, u32 set_blocks)
{
	u64 align, n;

	l->set_sectors = (u64)block_sectors * set_blocks;
	l->rec_bytes = ssdp_rec_bytes(set_blocks);
	align = l->set_sectors > SSDP_DATA_ALIGN ? l->set_sectors :
						   SSDP_DATA_ALIGN;
	n = cache_sectors / l->set_sectors;
	for (;;) {
		l->rec_sectors = (n * l->rec_bytes + SSDP_META_BLOCK_BYTES - 1) /
				 SSDP_META_BLOCK_BYTES * SSDP_META_BLOCK_SECTORS;
		l->meta_sectors = SSDP_SB_SECTORS +
				  SSDP_META_COPIES * l->rec_sectors;
		l->data_start = (l->meta_sectors + align - 1) / align * align;
		if (!n)
			return -1;
		if (l->data_start + n * l->set_sectors <= cache_sectors)
			break;
		n = l->data_start >= cache_sectors ? n - 1 :
			(cache_sectors - l->data_start) / l->set_sectors;
	}
	l->nr_csets = n;
	return 0;
}


enum ssdp_sb_result ssdp_sb_decode(const void *sector,
				   struct ssdp_sb_info *out)
{
	const struct ssdp_disk_sb *d = sector;
	struct ssdp_layout want;

	if (ssdp_all_zero(d, sizeof(*d)))
		return SSDP_SB_BLANK;
	if (le64_to_cpu(d->magic) != SSDP_SB_MAGIC)
		return SSDP_SB_FOREIGN;
	if (le32_to_cpu(d->crc) != ssdp_crc32c(~0U, d, SB_CRC_BYTES))
		return SSDP_SB_BAD_CRC;

	out->version = le32_to_cpu(d->version);
	out->flags = le32_to_cpu(d->flags);
	out->compat = le32_to_cpu(d->compat);
	out->incompat = le32_to_cpu(d->incompat);
	memcpy(out->uuid, d->uuid, sizeof(out->uuid));
	memcpy(out->origin_id, d->origin_id, sizeof(out->origin_id));
	out->origin_sectors = le64_to_cpu(d->origin_sectors);
	out->cache_sectors = le64_to_cpu(d->cache_sectors);
	out->block_sectors = le32_to_cpu(d->block_sectors);
	out->set_blocks = le32_to_cpu(d->set_blocks);
	out->nr_csets = le64_to_cpu(d->nr_csets);
	out->rec_bytes = le32_to_cpu(d->rec_bytes);
	out->rec_sectors = le32_to_cpu(d->rec_sectors);
	out->data_start = le64_to_cpu(d->data_start);
	out->seq = le64_to_cpu(d->seq);
	out->format_time = le64_to_cpu(d->format_time);
	memcpy(out->origin_uid, d->origin_uid, sizeof(out->origin_uid));
	out->origin_uid_len = le32_to_cpu(d->origin_uid_len);
	out->origin_uid_type = le32_to_cpu(d->origin_uid_type);
	out->origin_start = le64_to_cpu(d->origin_start);

	if (out->version == 1)
		return SSDP_SB_OLD_VERSION;
	/* Version 2 is taken over where its records keep their size. */
	if (out->version == SSDP_FORMAT_V2 &&
	    (!is_power_of_2(out->set_blocks) ||
	     out->set_blocks > SSDP_REC_MAX_BLOCKS ||
	     ssdp_rec_bytes_v2(out->set_blocks) !=
	     ssdp_rec_bytes(out->set_blocks)))
		return SSDP_SB_OLD_VERSION;
	if (out->version != SSDP_FORMAT_VERSION &&
	    out->version != SSDP_FORMAT_V3 &&
	    out->version != SSDP_FORMAT_V2)
		return SSDP_SB_BAD_VERSION;
	if (out->incompat & ~SSDP_SB_INCOMPAT_KNOWN)
		return SSDP_SB_BAD_FEATURES;
	if ((out->compat & SSDP_SB_COMPAT_ORIGIN_UID) &&
	    (out->origin_uid_len > sizeof(out->origin_uid) ||
	     !out->origin_uid_len))
		return SSDP_SB_BAD_LAYOUT;
	/* The geometry must be one that ssdp_layout_compute() gives. */
	if (!is_power_of_2(out->block_sectors) ||
	    !is_power_of_2(out->set_blocks) ||
	    out->set_blocks > SSDP_REC_MAX_BLOCKS ||
	    out->nr_csets > SSDP_MAX_CSETS ||
	    out->block_sectors > 2048 ||
	    ssdp_layout_compute(&want, out->cache_sectors, out->block_sectors,
				out->set_blocks) ||
	    want.nr_csets != out->nr_csets ||
	    want.rec_bytes != out->rec_bytes ||
	    want.rec_sectors != out->rec_sectors ||
	    want.data_start != out->data_start)
		return SSDP_SB_BAD_LAYOUT;
	return SSDP_SB_OK;
}

const char *ssdp_sb_result_name(enum ssdp_sb_result r)
{
	switch (r) {
	case SSDP_SB_OK:
		return "ok";
	case SSDP_SB_BLANK:
		return "blank";
	case SSDP_SB_FOREIGN:
		return "not an ssdprio cache";
	case SSDP_SB_BAD_CRC:
		return "superblock checksum mismatch";
	case SSDP_SB_OLD_VERSION:
		return "an older format version (an earlier ssdprio)";
	case SSDP_SB_BAD_VERSION:
		return "unknown format version";
	case SSDP_SB_BAD_FEATURES:
		return "unknown incompatible features";
	case SSDP_SB_BAD_LAYOUT:
		return "superblock geometry is inconsistent";
	}
	return "?";
}

/*
 * Four crc32c with different seeds: no adversary chooses these strings, and
 * the module and the tool already share crc32c.
 */
void ssdp_uid_hash(const char *s, size_t len, u8 out[16])
{
	u32 i, h;

	for (i = 0; i < 4; i++) {
		h = ssdp_crc32c(0x55534944U + i, s, len);
		out[4 * i] = h;
		out[4 * i + 1] = h >> 8;
		out[4 * i + 2] = h >> 16;
		out[4 * i + 3] = h >> 24;
	}
}

int ssdp_derived_id(unsigned int kind, const char *ident, u8 out[16])
{
	static const char *const kinds[] = {
		[SSDP_DERIVED_MD] = "md",
		[SSDP_DERIVED_SERIAL] = "serial",
	};
	char buf[256];
	u8 h[16];
	int n;

	if (kind >= ARRAY_SIZE(kinds) || !kinds[kind] || !*ident)
		return -EINVAL;
	n = snprintf(buf, sizeof(buf), "%s:%s", kinds[kind], ident);
	if (n < 0 || n >= (int)sizeof(buf))
		return -EINVAL;
	ssdp_uid_hash(buf, n, h);
	memcpy(out, SSDP_DERIVED_ID_MAGIC, SSDP_DERIVED_ID_MAGIC_LEN);
	out[SSDP_DERIVED_ID_MAGIC_LEN] = kind;
	memcpy(out + SSDP_DERIVED_ID_MAGIC_LEN + 1, h,
	       16 - SSDP_DERIVED_ID_MAGIC_LEN - 1);
	return 0;
}

unsigned int ssdp_derived_kind(const u8 id[16])
{
	if (memcmp(id, SSDP_DERIVED_ID_MAGIC, SSDP_DERIVED_ID_MAGIC_LEN))
		return 0;
	return id[SSDP_DERIVED_ID_MAGIC_LEN];
}

u32 ssdp_rec_seed(const u8 uuid[16], u32 version)
{
	u32 seed = ssdp_crc32c(~0U, uuid, 16);
	__le32 v = cpu_to_le32(version);

	return version < 4 ? seed : ssdp_crc32c(seed, &v, sizeof(v));
}

void ssdp_rec_encode(void *rec, u32 rec_bytes, u32 seed, u32 cset,
		     u32 set_blocks, const struct ssdp_rec_view *v)
{
	struct ssdp_disk_rec *d = rec;
	u32 ob = (set_blocks + 1) / 2;
	u8 *p = (u8 *)rec + SSDP_REC_HDR_BYTES;
	u32 t;

	memset(rec, 0, rec_bytes);
	d->cset = cpu_to_le32(cset);
	d->seq = cpu_to_le64(v->seq);
	for (t = 0; t < SSDP_REC_TAGS; t++)
		d->tags[t] = cpu_to_le32(v->tags[t]);
	memcpy(p, v->owners, ob);
	memcpy(p + ob, v->dirty, ssdp_bitmap_bytes(set_blocks));
	memcpy(p + ob + ssdp_bitmap_bytes(set_blocks), v->alt,
	       ssdp_bitmap_bytes(set_blocks));
	d->crc = cpu_to_le32(ssdp_crc32c(seed, (u8 *)rec + 4, rec_bytes - 4));
}

static int rec_check_tags(const struct ssdp_rec_view *v, u32 cset,
			   u64 nr_csets)
{
	u32 t, u;

	for (t = 0; t < SSDP_REC_TAGS; t++) {
		if (v->tags[t] == SSDP_REC_TAG_FREE)
			continue;
		if (ssdp_oset_cset(v->tags[t], nr_csets) != cset)
			return -EUCLEAN;
		for (u = 0; u < t; u++)
			if (v->tags[u] == v->tags[t])
				return -EUCLEAN;
	}
	return 0;
}

static int rec_check_frames(const struct ssdp_rec_view *v, u32 set_blocks,
			    u32 version)
{
	u32 blk, own, x;

	/* A half-used owner byte ends free, part-used bitmap bytes zero. */
	if (set_blocks % 2 && (v->owners[set_blocks / 2] >> 4) != 0xf)
		return -EUCLEAN;
	if (set_blocks % 8 && (v->dirty[set_blocks / 8] >> (set_blocks % 8) ||
			       v->alt[set_blocks / 8] >> (set_blocks % 8)))
		return -EUCLEAN;
	for (blk = 0; blk < set_blocks; blk++) {
		own = ssdp_rec_owner(v, blk);
		if (own == 0xf ? ssdp_rec_dirty(v, blk) || ssdp_rec_alt(v, blk) :
		    v->tags[own] == SSDP_REC_TAG_FREE)
			return -EUCLEAN;
		if (own == 0xf)
			continue;
		x = ssdp_alt_xor(v->tags[own], set_blocks, version);
		/* An alt frame needs a second frame to be one. */
		if (ssdp_rec_alt(v, blk) && !x)
			return -EUCLEAN;
		/*
		 * One block in two frames: frames f and f ^ x, one home and
		 * one alt, of one owner, hold the same block.
		 */
		if (x && own == ssdp_rec_owner(v, blk ^ x) &&
		    ssdp_rec_alt(v, blk) != ssdp_rec_alt(v, blk ^ x))
			return -EUCLEAN;
	}
	return 0;
}

int ssdp_rec_decode(const void *rec, u32 rec_bytes, u32 seed, u32 cset,
		    u32 set_blocks, u64 nr_csets, u32 version,
		    struct ssdp_rec_view *out)
{
	const struct ssdp_disk_rec *d = rec;
	const u8 *p = (const u8 *)rec + SSDP_REC_HDR_BYTES;
	u32 ob = (set_blocks + 1) / 2, db = ssdp_bitmap_bytes(set_blocks);
	u32 t;

	if (le32_to_cpu(d->crc) !=
	    ssdp_crc32c(seed, (const u8 *)rec + 4, rec_bytes - 4))
		return -EBADMSG;
	if (le32_to_cpu(d->cset) != cset || d->zero ||
	    set_blocks > SSDP_REC_MAX_BLOCKS ||
	    SSDP_REC_HDR_BYTES + ob + 2 * db > rec_bytes ||
	    !ssdp_all_zero(p + ob + 2 * db,
			   rec_bytes - SSDP_REC_HDR_BYTES - ob - 2 * db))
		return -EUCLEAN;
	out->seq = le64_to_cpu(d->seq);
	for (t = 0; t < SSDP_REC_TAGS; t++)
		out->tags[t] = le32_to_cpu(d->tags[t]);
	memset(out->owners, 0xff, sizeof(out->owners));
	memset(out->dirty, 0, sizeof(out->dirty));
	memcpy(out->owners, p, ob);
	memcpy(out->dirty, p + ob, db);
	memset(out->alt, 0, sizeof(out->alt));
	memcpy(out->alt, p + ob + db, db);
	if (rec_check_tags(out, cset, nr_csets) ||
	    rec_check_frames(out, set_blocks, version))
		return -EUCLEAN;
	return 0;
}

int ssdp_rec_pick(const void *rec0, const void *rec1, u32 rec_bytes,
		  u32 seed, u32 cset, u32 set_blocks, u64 nr_csets,
		  u32 version, struct ssdp_rec_view *out,
		  struct ssdp_rec_view *b, bool *lone)
{
	bool ok0, ok1;

	ok0 = !ssdp_rec_decode(rec0, rec_bytes, seed, cset, set_blocks,
				nr_csets, version, out);
	ok1 = !ssdp_rec_decode(rec1, rec_bytes, seed, cset, set_blocks,
				nr_csets, version, b);
	if (lone)
		*lone = ok0 != ok1;
	if (ok0 && (!ok1 || out->seq >= b->seq))
		return 0;
	if (ok1) {
		*out = *b;
		return 1;
	}
	return -1;
}

void ssdp_blk_copies_init(struct ssdp_blk_copies *b)
{
	memset(b, 0, sizeof(*b));
	b->hi_copy = -1;
}

void ssdp_blk_copies_add(struct ssdp_blk_copies *b, int pick, bool lone,
			 u64 seq, u64 seq1)
{
	if (pick < 0)
		return;
	/* Equal seqs pick copy 0: copy 1 picked is strictly newer. */
	if (lone || pick == 1 || seq > seq1)
		b->only[pick] = true;
	if (b->hi_copy < 0 || seq > b->hi_seq) {
		b->hi_seq = seq;
		b->hi_copy = pick;
	}
}

unsigned int ssdp_blk_copies_next(const struct ssdp_blk_copies *b,
				  bool *mixed)
{
	*mixed = b->only[0] && b->only[1];
	if (*mixed)
		return b->hi_copy;
	if (b->only[0])
		return 1;
	if (b->only[1])
		return 0;
	return 1;	/* the same everywhere: either */
}
