/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio sequential stream detection: which read misses are part of a
 * long sequential stream (a scan, a backup, a big file copy) and so are
 * not worth promoting (and which writes, not worth cleaning for).  Copying such a stream into the SSD costs the
 * reader a copy per bio and pushes the hot sets out, while a rescan would
 * be served at the HDD's sequential rate anyway (bcache's
 * sequential_cutoff, dm-cache mq's sequential_threshold).
 *
 * A few recent streams are remembered by where the next bio would start;
 * a read continuing one extends it, any other read replaces the least
 * recently used stream.  Interleaved streams (up to SSDP_SEQ_STREAMS) are
 * told apart.
 *
 * Pure logic, NO LOCKING: the caller serialises calls (the cache lock).
 */
#ifndef SSDP_SEQ_DETECT_H
#define SSDP_SEQ_DETECT_H

#include "ssdp_compat.h"

#define SSDP_SEQ_STREAMS	8

struct ssdp_seq_stream {
	u64 next;			/* sector right after the stream */
	u64 sectors;			/* length so far */
	u64 used;			/* tick of the last extension */
};

struct ssdp_seq_detect {
	struct ssdp_seq_stream s[SSDP_SEQ_STREAMS];
	u64 tick;
};

void ssdp_seq_init(struct ssdp_seq_detect *d);

/*
 * Note a read of @len sectors at @start; returns the length in sectors of
 * the sequential stream it belongs to, itself included.
 */
u64 ssdp_seq_note(struct ssdp_seq_detect *d, u64 start, u64 len);

/* The length of the stream a bio at @start would continue (0: none). */
u64 ssdp_seq_peek(const struct ssdp_seq_detect *d, u64 start);

#endif /* SSDP_SEQ_DETECT_H */
