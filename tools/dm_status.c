// SPDX-License-Identifier: GPL-2.0
/*
 * The ssdprio status line for ssdprio-tool status and flush: see
 * dm_status.h.  Keys are looked up by name, never by position: the
 * kernel only ever adds keys (docs/target.md), so an older tool reads a
 * newer module, and a key an older module lacks is shown as absent.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "dm_status.h"

#define MiB	(1024.0 * 1024.0)
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

int st_parse(struct dm_status *st, const char *params)
{
	char *save = NULL, *w;
	int n = 0;

	st->nr = 0;
	st->buf = strdup(params ? params : "");
	if (!st->buf)
		return -1;
	for (w = strtok_r(st->buf, " \t\n", &save); w;
	     w = strtok_r(NULL, " \t\n", &save), n++) {
		if (n % 2 == 0) {
			if (st->nr == ST_MAX_KEYS)
				return -1;
			st->kv[st->nr].key = w;
			st->kv[st->nr].val = NULL;
		} else {
			st->kv[st->nr++].val = w;
		}
	}
	return n % 2 ? -1 : 0;
}

void st_free(struct dm_status *st)
{
	free(st->buf);
	st->buf = NULL;
	st->nr = 0;
}

const char *st_get(const struct dm_status *st, const char *key)
{
	int i;

	if (!st)
		return NULL;
	for (i = 0; i < st->nr; i++)
		if (!strcmp(st->kv[i].key, key))
			return st->kv[i].val;
	return NULL;
}

static bool is_uint(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

bool st_num(const struct dm_status *st, const char *key,
	    unsigned long long *v)
{
	const char *s = st_get(st, key);

	if (!is_uint(s))
		return false;
	*v = strtoull(s, NULL, 10);
	return true;
}

static unsigned long long num0(const struct dm_status *st, const char *key)
{
	unsigned long long v = 0;

	st_num(st, key, &v);
	return v;
}

unsigned long long st_blocks_bytes(const struct dm_status *st,
				   unsigned long long blocks)
{
	return blocks * num0(st, "block_sectors") * 512;
}

double st_ratio(const struct dm_status *cur, const struct dm_status *prev,
		const char *hits, const char *misses)
{
	unsigned long long h = num0(cur, hits), m = num0(cur, misses);

	/* reset_stats in between: the counters went down; count from 0. */
	if (prev && num0(prev, hits) <= h && num0(prev, misses) <= m) {
		h -= num0(prev, hits);
		m -= num0(prev, misses);
	}
	return h + m ? (double)h / (h + m) : -1;
}

static double dirty_share(const struct dm_status *st)
{
	unsigned long long cap = num0(st, "total_sets") * num0(st, "set_blocks");

	return cap ? (double)num0(st, "dirty_blocks") / cap : 0;
}

static unsigned long long errors(const struct dm_status *st)
{
	static const char * const keys[] = {
		"ssd_read_errors", "ssd_write_errors", "origin_read_errors",
		"origin_write_errors", "writeback_errors",
	};
	unsigned long long n = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(keys); i++)
		n += num0(st, keys[i]);
	return n;
}

static const char *get_or(const struct dm_status *st, const char *key,
			  const char *dflt)
{
	const char *v = st_get(st, key);

	return v ? v : dflt;
}

static void pct(char *out, size_t len, double r)
{
	if (r < 0)
		snprintf(out, len, "-");
	else
		snprintf(out, len, "%.1f%%", 100 * r);
}

void st_print_text(FILE *f, const struct dm_status *cur,
		   const struct dm_status *prev, double secs)
{
	const char *cache = get_or(cur, "cache", "?");
	char rh[16], wh[16], irh[16], iwh[16];

	fprintf(f, "%s: ssdprio, %llu sectors (%.1f MiB), status_version %s\n",
		cur->name, cur->sectors, cur->sectors * 512 / MiB,
		get_or(cur, "status_version", "none (older module)"));
	if (!strcmp(cache, "on")) {
		unsigned long long e = errors(cur);

		fprintf(f, "  health:   cache_mode %s, meta_state %s, %s\n",
			get_or(cur, "cache_mode", "?"),
			get_or(cur, "meta_state", "?"),
			e ? "ERRORS" : "no errors");
		if (e || num0(cur, "read_fallbacks"))
			fprintf(f, "  errors:   ssd read %llu write %llu, origin read %llu write %llu, writeback %llu, read_fallbacks %llu\n",
				num0(cur, "ssd_read_errors"),
				num0(cur, "ssd_write_errors"),
				num0(cur, "origin_read_errors"),
				num0(cur, "origin_write_errors"),
				num0(cur, "writeback_errors"),
				num0(cur, "read_fallbacks"));
		pct(rh, sizeof(rh), st_ratio(cur, NULL, "read_hits", "read_misses"));
		pct(wh, sizeof(wh), st_ratio(cur, NULL, "write_hits", "write_misses"));
		fprintf(f, "  hits:     reads %s, writes %s since start", rh, wh);
		if (prev) {
			pct(irh, sizeof(irh),
			    st_ratio(cur, prev, "read_hits", "read_misses"));
			pct(iwh, sizeof(iwh),
			    st_ratio(cur, prev, "write_hits", "write_misses"));
			fprintf(f, "; reads %s, writes %s over the last %.1f s",
				irh, iwh, secs);
		}
		fputc('\n', f);
		fprintf(f, "  dirty:    %.1f MiB, %.1f%% of the cache (%llu of %llu valid blocks)\n",
			st_blocks_bytes(cur, num0(cur, "dirty_blocks")) / MiB,
			100 * dirty_share(cur), num0(cur, "dirty_blocks"),
			num0(cur, "valid_blocks"));
		fprintf(f, "  sets:     %llu mapped, %llu free, %llu limbo, %llu total",
			num0(cur, "mapped_sets"), num0(cur, "free_sets"),
			num0(cur, "limbo_sets"), num0(cur, "total_sets"));
		/* How much of the SSD holds data (a newer module says). */
		if (num0(cur, "cache_blocks"))
			fprintf(f, "; %.1f%% of the cache's blocks valid",
				100.0 * num0(cur, "valid_blocks") /
				num0(cur, "cache_blocks"));
		fputc('\n', f);
		fprintf(f, "  eviction: %s (%s), %llu sets under writeback, %llu failed, flush_state %s%s\n",
			get_or(cur, "evict_state", "?"),
			get_or(cur, "evict_why", "?"),
			num0(cur, "writeback_sets"), num0(cur, "failed_sets"),
			get_or(cur, "flush_state", "?"),
			num0(cur, "draining") ? " (draining)" : "");
		fprintf(f, "  cleaning: %llu sets cleaned, oldest dirty data %llu s old",
			num0(cur, "sets_cleaned"), num0(cur, "oldest_dirty_s"));
		/* Writebacks that stopped early for a write (a newer module). */
		if (st_get(cur, "writeback_yields"))
			fprintf(f, "; %llu writebacks yielded to writes",
				num0(cur, "writeback_yields"));
		/* Dirty blocks per origin write: coalescing (a newer module). */
		if (st_get(cur, "writeback_writes") &&
		    num0(cur, "writeback_writes"))
			fprintf(f, "; %.1f blocks per origin write",
				(double)num0(cur, "blocks_written_back") /
				(double)num0(cur, "writeback_writes"));
		fputc('\n', f);
	} else {
		fprintf(f, "  cache:    %s (scheduler only)\n", cache);
	}
	fprintf(f, "  bios:     %llu normal, %llu idle; sched_mode %s\n",
		num0(cur, "bios_normal"), num0(cur, "bios_idle"),
		get_or(cur, "sched_mode", "?"));
	fprintf(f, "  queues:   normal %llu reads + %llu writes queued, %llu in flight; idle %llu queued, %llu in flight\n",
		num0(cur, "queued_normal_reads"),
		num0(cur, "queued_normal_writes"),
		num0(cur, "normal_inflight"), num0(cur, "queued_idle"),
		num0(cur, "idle_inflight"));
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_ratio(FILE *f, const char *key, double r)
{
	if (r < 0)
		fprintf(f, ", \"%s\": null", key);
	else
		fprintf(f, ", \"%s\": %.4f", key, r);
}

void st_print_json(FILE *f, const struct dm_status *cur,
		   const struct dm_status *prev, double secs)
{
	unsigned long long v;
	int i;

	fputs("{\"name\": ", f);
	json_str(f, cur->name);
	fprintf(f, ", \"sectors\": %llu, \"status_version\": ", cur->sectors);
	if (st_num(cur, "status_version", &v))
		fprintf(f, "%llu", v);
	else
		fputs("null", f);
	fputs(", \"status\": {", f);
	for (i = 0; i < cur->nr; i++) {
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, cur->kv[i].key);
		fputs(": ", f);
		if (is_uint(cur->kv[i].val))
			fputs(cur->kv[i].val, f);
		else
			json_str(f, cur->kv[i].val);
	}
	fputs("}, \"summary\": {", f);
	fprintf(f, "\"errors\": %llu", errors(cur));
	json_ratio(f, "read_hit_ratio",
		   st_ratio(cur, NULL, "read_hits", "read_misses"));
	json_ratio(f, "write_hit_ratio",
		   st_ratio(cur, NULL, "write_hits", "write_misses"));
	if (prev) {
		fprintf(f, ", \"interval_seconds\": %.3f", secs);
		json_ratio(f, "interval_read_hit_ratio",
			   st_ratio(cur, prev, "read_hits", "read_misses"));
		json_ratio(f, "interval_write_hit_ratio",
			   st_ratio(cur, prev, "write_hits", "write_misses"));
	}
	fprintf(f, ", \"dirty_bytes\": %llu, \"dirty_share\": %.4f}}",
		st_blocks_bytes(cur, num0(cur, "dirty_blocks")),
		dirty_share(cur));
}

static const char * const st_until_words[] = {
	[ST_UNTIL_CLEAN] = "clean",
	[ST_UNTIL_DEGRADED] = "degraded",
	[ST_UNTIL_FAILED] = "failed",
	[ST_UNTIL_FLUSHED] = "flushed",
};

bool st_until_parse(const char *word, enum st_until *out)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(st_until_words); i++)
		if (st_until_words[i] && !strcmp(word, st_until_words[i])) {
			*out = i;
			return true;
		}
	return false;
}

static bool st_is(const struct dm_status *st, const char *key,
		  const char *val)
{
	const char *v = st_get(st, key);

	return v && !strcmp(v, val);
}

/*
 * docs/tools.md, "wait", says what each word means.  A device with the
 * cache off holds no dirty data and runs no flush: clean and flushed; it
 * has no cache to degrade or fail.
 */
int st_until_met(const struct dm_status *st, enum st_until u)
{
	bool on = st_is(st, "cache", "on");
	unsigned long long dirty;

	switch (u) {
	case ST_UNTIL_CLEAN:
		return !on || (st_num(st, "dirty_blocks", &dirty) && !dirty);
	case ST_UNTIL_DEGRADED:
		return on && ((st_get(st, "cache_mode") &&
			       !st_is(st, "cache_mode", "normal")) ||
			      st_is(st, "meta_state", "failed"));
	case ST_UNTIL_FAILED:
		return on && (st_is(st, "meta_state", "failed") ||
			      st_is(st, "flush_state", "failed"));
	case ST_UNTIL_FLUSHED:
		if (!on || st_is(st, "flush_state", "idle"))
			return 1;
		return st_is(st, "flush_state", "failed") ? -1 : 0;
	case ST_UNTIL_NEXT:
	default:
		return 0;
	}
}
