// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool's reading of the kernel's status line (tools/dm_status.c):
 * keys by name whatever their order, a line that is not pairs refused,
 * ratios since start and over an interval (a reset_stats in between
 * counts from zero), the JSON keeping every key.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "dm_status.h"

static const char line[] =
	"status_version 1 bios_normal 10 bios_idle 2 read_hits 30 read_misses 10 "
	"write_hits 0 write_misses 0 cache on cache_mode normal valid_blocks 100 "
	"dirty_blocks 64 total_sets 4 set_blocks 256 block_sectors 8 flush_state idle";

TEST(dm_status_parse_by_key)
{
	struct dm_status st = { .name = "sp" };
	unsigned long long v;

	ASSERT_EQ(st_parse(&st, line), 0);
	ASSERT_TRUE(st_num(&st, "status_version", &v));
	ASSERT_EQ(v, 1ULL);
	ASSERT_TRUE(st_num(&st, "dirty_blocks", &v));
	ASSERT_EQ(v, 64ULL);
	ASSERT_EQ(strcmp(st_get(&st, "cache_mode"), "normal"), 0);
	ASSERT_FALSE(st_num(&st, "cache_mode", &v));	/* a word */
	ASSERT_TRUE(st_get(&st, "no_such_key") == NULL);
	ASSERT_EQ(st_blocks_bytes(&st, 64), 64ULL * 4096);
	st_free(&st);
}

TEST(dm_status_odd_words_refused)
{
	struct dm_status st = { .name = "sp" };

	ASSERT_EQ(st_parse(&st, "status_version 1 bios_normal"), -1);
	st_free(&st);
	ASSERT_EQ(st_parse(&st, ""), 0);
	ASSERT_EQ(st.nr, 0);
	st_free(&st);
}

TEST(dm_status_ratios)
{
	struct dm_status a = { .name = "sp" }, b = { .name = "sp" };

	ASSERT_EQ(st_parse(&a, "read_hits 30 read_misses 10"), 0);
	ASSERT_EQ(st_parse(&b, "read_hits 39 read_misses 11"), 0);
	ASSERT_TRUE(st_ratio(&a, NULL, "read_hits", "read_misses") == 0.75);
	ASSERT_TRUE(st_ratio(&b, &a, "read_hits", "read_misses") == 0.9);
	/* Nothing counted: no ratio, not 0. */
	ASSERT_TRUE(st_ratio(&a, NULL, "write_hits", "write_misses") < 0);
	/* reset_stats between the two: the later counters alone. */
	ASSERT_TRUE(st_ratio(&a, &b, "read_hits", "read_misses") == 0.75);
	st_free(&a);
	st_free(&b);
}

TEST(dm_status_json_keeps_every_key)
{
	struct dm_status st = { .name = "sp", .sectors = 2048 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ASSERT_EQ(st_parse(&st, line), 0);
	st_print_json(f, &st, NULL, 0);
	fclose(f);
	ASSERT_TRUE(strstr(buf, "\"name\": \"sp\", \"sectors\": 2048, \"status_version\": 1") != NULL);
	ASSERT_TRUE(strstr(buf, "\"dirty_blocks\": 64") != NULL);
	ASSERT_TRUE(strstr(buf, "\"cache_mode\": \"normal\"") != NULL);
	ASSERT_TRUE(strstr(buf, "\"read_hit_ratio\": 0.7500") != NULL);
	ASSERT_TRUE(strstr(buf, "\"write_hit_ratio\": null") != NULL);
	ASSERT_TRUE(strstr(buf, "\"dirty_bytes\": 262144, \"dirty_share\": 0.0625") != NULL);
	ASSERT_TRUE(strstr(buf, "interval") == NULL);
	free(buf);
	st_free(&st);
}

/* The text shows why eviction runs and how much of the SSD holds data. */
TEST(dm_status_text_eviction_reason_and_fill)
{
	struct dm_status st = { .name = "sp" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ASSERT_EQ(st_parse(&st, "status_version 1 cache on valid_blocks 512 "
			   "dirty_blocks 0 total_sets 4 set_blocks 256 "
			   "block_sectors 8 cache_blocks 1024 evict_state wait "
			   "evict_why pressure flush_state idle"), 0);
	st_print_text(f, &st, NULL, 0);
	fclose(f);
	ASSERT_TRUE(strstr(buf, "eviction: wait (pressure)") != NULL);
	ASSERT_TRUE(strstr(buf, "50.0% of the cache's blocks valid") != NULL);
	free(buf);
	st_free(&st);
}

/* wait --until's words against the status keys (docs/tools.md, "wait"). */
static int until(const char *params, const char *word)
{
	struct dm_status st = { .name = "sp" };
	enum st_until u;
	int r;

	if (!st_until_parse(word, &u) || st_parse(&st, params))
		return -9;
	r = st_until_met(&st, u);
	st_free(&st);
	return r;
}

TEST(dm_status_until)
{
	static const char ok[] = "cache on cache_mode normal dirty_blocks 3 flush_state running meta_state clean";
	static const char deg[] = "cache on cache_mode degraded dirty_blocks 0 flush_state idle meta_state clean";
	static const char mfail[] = "cache on cache_mode degraded dirty_blocks 5 flush_state idle meta_state failed";
	static const char ffail[] = "cache on cache_mode normal dirty_blocks 5 flush_state failed meta_state clean";
	static const char off[] = "cache off";
	enum st_until u;

	ASSERT_FALSE(st_until_parse("dirty", &u));
	ASSERT_EQ(until(ok, "clean"), 0);
	ASSERT_EQ(until(ok, "degraded"), 0);
	ASSERT_EQ(until(ok, "failed"), 0);
	ASSERT_EQ(until(ok, "flushed"), 0);
	ASSERT_EQ(until(deg, "clean"), 1);
	ASSERT_EQ(until(deg, "degraded"), 1);
	ASSERT_EQ(until(deg, "failed"), 0);
	ASSERT_EQ(until(deg, "flushed"), 1);
	ASSERT_EQ(until(mfail, "degraded"), 1);
	ASSERT_EQ(until(mfail, "failed"), 1);
	ASSERT_EQ(until(mfail, "clean"), 0);
	ASSERT_EQ(until(ffail, "failed"), 1);
	ASSERT_EQ(until(ffail, "degraded"), 0);
	ASSERT_EQ(until(ffail, "flushed"), -1);
	/* No cache: nothing dirty, no flush, nothing to degrade. */
	ASSERT_EQ(until(off, "clean"), 1);
	ASSERT_EQ(until(off, "flushed"), 1);
	ASSERT_EQ(until(off, "degraded"), 0);
	ASSERT_EQ(until(off, "failed"), 0);
}
