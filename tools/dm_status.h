/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ssdprio status line (docs/target.md, "Status") as ssdprio-tool's
 * status and flush read it: parsing, the figures derived from it, and
 * its text and JSON renderings.  Pure code, so that make unit tests it.
 */
#ifndef SSDP_DM_STATUS_H
#define SSDP_DM_STATUS_H

#include <stdbool.h>
#include <stdio.h>

/* Version of `status --json` (docs/tools.md, "status --json"). */
#define SSDP_STATUS_JSON_SCHEMA	1

#define ST_MAX_KEYS	128

struct st_kv {
	char *key, *val;
};

struct dm_status {
	char name[128];
	unsigned long long sectors;
	char *buf;		/* owns the strings of kv */
	struct st_kv kv[ST_MAX_KEYS];
	int nr;
};

/*
 * Parse @params (the status after "start length ssdprio") into @st.
 * Returns 0, or -1 when it is not key value pairs (odd word count).
 */
int st_parse(struct dm_status *st, const char *params);
void st_free(struct dm_status *st);
const char *st_get(const struct dm_status *st, const char *key);
/* A numeric key; false when absent or not a number. */
bool st_num(const struct dm_status *st, const char *key,
	    unsigned long long *v);

/* What ssdprio-tool wait --until waits for (docs/tools.md, "wait"). */
enum st_until {
	ST_UNTIL_NEXT,		/* no --until: the next event */
	ST_UNTIL_CLEAN,
	ST_UNTIL_DEGRADED,
	ST_UNTIL_FAILED,
	ST_UNTIL_FLUSHED,
};

/* --until's word into @out; false when it names none. */
bool st_until_parse(const char *word, enum st_until *out);
/*
 * Whether @st meets @u: 1 yes, 0 not yet, -1 not without a new request
 * (flushed, after a flush that failed).
 */
int st_until_met(const struct dm_status *st, enum st_until u);

/* Bytes of @blocks cache blocks, per the status's block_sectors. */
unsigned long long st_blocks_bytes(const struct dm_status *st,
				   unsigned long long blocks);

/*
 * hits / (hits + misses) between @prev and @cur (@prev NULL: since start
 * or reset_stats); negative when there was nothing to count.
 */
double st_ratio(const struct dm_status *cur, const struct dm_status *prev,
		const char *hits, const char *misses);

/* The human block of one device; @prev and @secs for the last interval. */
void st_print_text(FILE *f, const struct dm_status *cur,
		   const struct dm_status *prev, double secs);
/* One device as a JSON object (no newline). */
void st_print_json(FILE *f, const struct dm_status *cur,
		   const struct dm_status *prev, double secs);

#endif
