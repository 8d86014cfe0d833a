// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio sequential read detection.  See seq_detect.h; the caller
 * holds the lock.
 */
#include "ssdp_compat.h"
#include "seq_detect.h"

void ssdp_seq_init(struct ssdp_seq_detect *d)
{
	int i;

	memset(d, 0, sizeof(*d));
	/* next == 0 would make a read of sector 0 look like a continuation. */
	for (i = 0; i < SSDP_SEQ_STREAMS; i++)
		d->s[i].next = ~0ULL;
}

u64 ssdp_seq_note(struct ssdp_seq_detect *d, u64 start, u64 len)
{
	struct ssdp_seq_stream *st = NULL, *lru = &d->s[0];
	int i;

	for (i = 0; i < SSDP_SEQ_STREAMS; i++) {
		if (d->s[i].next == start) {
			st = &d->s[i];
			break;
		}
		if (d->s[i].used < lru->used)
			lru = &d->s[i];
	}
	if (!st) {
		st = lru;
		st->sectors = 0;
	}
	st->next = start + len;
	st->sectors += len;
	st->used = ++d->tick;
	return st->sectors;
}

u64 ssdp_seq_peek(const struct ssdp_seq_detect *d, u64 start)
{
	int i;

	for (i = 0; i < SSDP_SEQ_STREAMS; i++)
		if (d->s[i].next == start)
			return d->s[i].sectors;
	return 0;
}
