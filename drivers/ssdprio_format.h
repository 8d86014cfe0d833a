/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio on-SSD layout.  The one definition of the format, shared by
 * the kernel module and tools/ (it compiles in both).
 *
 *   sector 0                      SSDP_SB_SECTORS        data_start
 *   | superblock (4 KiB) | set records ...   (padding) | cache set 0 | ...
 *
 * One record per cache set, records of a power-of-two size of at most one
 * 512-byte sector, so a record never straddles a sector and a torn write
 * of the metadata area leaves every record either old or new.  The data
 * area starts on a 1 MiB boundary (or a set boundary, if sets are larger)
 * so SSD erase blocks and set I/O line up.
 */
#ifndef SSDPRIO_FORMAT_H
#define SSDPRIO_FORMAT_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

#define SSDP_SECTOR_SHIFT	9
#define SSDP_SB_SECTORS		8ULL	/* 4 KiB superblock */
#define SSDP_REC_HDR_BYTES	32U	/* oset, seq, crc, flags */
#define SSDP_DATA_ALIGN		2048ULL	/* 1 MiB in sectors */

struct ssdp_layout {
	uint64_t nr_csets;
	uint64_t rec_bytes;
	uint64_t meta_sectors;		/* superblock + records */
	uint64_t data_start;		/* sector of cache set 0 */
	uint64_t set_sectors;
};

static inline uint64_t ssdp_rec_bytes(uint32_t set_blocks)
{
	uint64_t need = SSDP_REC_HDR_BYTES + 2 * ((set_blocks + 7) / 8);
	uint64_t r = 64;

	while (r < need)
		r <<= 1;
	return r;
}

/*
 * Lay out a cache device of @cache_sectors: as many sets as fit after the
 * metadata they need.  Returns 0, or -1 when not even one set fits.
 */
static inline int ssdp_layout_compute(struct ssdp_layout *l,
				      uint64_t cache_sectors,
				      uint32_t block_sectors,
				      uint32_t set_blocks)
{
	uint64_t align, n;

	l->set_sectors = (uint64_t)block_sectors * set_blocks;
	l->rec_bytes = ssdp_rec_bytes(set_blocks);
	align = l->set_sectors > SSDP_DATA_ALIGN ? l->set_sectors :
						   SSDP_DATA_ALIGN;
	/* An upper bound first, then shrink until metadata + data fit. */
	n = cache_sectors / l->set_sectors;
	for (;;) {
		uint64_t rec_sectors = (n * l->rec_bytes + 511) >> 9;

		l->meta_sectors = SSDP_SB_SECTORS + rec_sectors;
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

#endif
