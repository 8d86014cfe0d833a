// SPDX-License-Identifier: GPL-2.0
/*
 * status --prometheus (tools/metrics.c): the exact text for a status
 * line, samples of two devices grouped under one HELP/TYPE, a key an
 * older module lacks leaving its metric out, label values escaped, a
 * state no list knows still shown, and the atomic write of the file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "metrics.h"

static char *render(const struct dm_status *st, int nr)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	metrics_print(f, st, nr);
	fclose(f);
	return buf;
}

TEST(metrics_exact_text)
{
	struct dm_status st = { .name = "fast", .sectors = 2048 };
	char *out;

	ASSERT_EQ(st_parse(&st,
		"status_version 1 bios_normal 10 bios_idle 2 bytes_normal 40960 bytes_idle 8192 "
		"ssd_read_errors 1 writeback_errors 3 blocks_written_back 5 "
		"cache on cache_mode degraded dirty_blocks 7 block_sectors 8 "
		"meta_state recovered meta_load_ms 1234 queued_idle 4 idle_inflight 1"), 0);
	out = render(&st, 1);
	ASSERT_STR_EQ(out,
		"# HELP ssdprio_status_version Version of the kernel's status line (docs/target.md).\n"
		"# TYPE ssdprio_status_version gauge\n"
		"ssdprio_status_version{device=\"fast\"} 1\n"
		"# HELP ssdprio_size_bytes Size of the device.\n"
		"# TYPE ssdprio_size_bytes gauge\n"
		"ssdprio_size_bytes{device=\"fast\"} 1048576\n"
		"# HELP ssdprio_cache_enabled 1 when the table has a cache, 0 with cache off (the scheduler alone).\n"
		"# TYPE ssdprio_cache_enabled gauge\n"
		"ssdprio_cache_enabled{device=\"fast\"} 1\n"
		"# HELP ssdprio_cache_mode Cache mode, 1 for the current one: degraded after SSD failures, until the table is reloaded.\n"
		"# TYPE ssdprio_cache_mode gauge\n"
		"ssdprio_cache_mode{device=\"fast\",mode=\"normal\"} 0\n"
		"ssdprio_cache_mode{device=\"fast\",mode=\"degraded\"} 1\n"
		"# HELP ssdprio_meta_state Metadata state, 1 for the current one: failed means the cache is retired.\n"
		"# TYPE ssdprio_meta_state gauge\n"
		"ssdprio_meta_state{device=\"fast\",state=\"formatted\"} 0\n"
		"ssdprio_meta_state{device=\"fast\",state=\"clean\"} 0\n"
		"ssdprio_meta_state{device=\"fast\",state=\"recovered\"} 1\n"
		"ssdprio_meta_state{device=\"fast\",state=\"failed\"} 0\n"
		"# HELP ssdprio_bios_total Bios mapped, by class (data bios and discards).\n"
		"# TYPE ssdprio_bios_total counter\n"
		"ssdprio_bios_total{device=\"fast\",class=\"normal\"} 10\n"
		"ssdprio_bios_total{device=\"fast\",class=\"idle\"} 2\n"
		"# HELP ssdprio_bytes_total Bytes of data read and written, by class.\n"
		"# TYPE ssdprio_bytes_total counter\n"
		"ssdprio_bytes_total{device=\"fast\",class=\"normal\"} 40960\n"
		"ssdprio_bytes_total{device=\"fast\",class=\"idle\"} 8192\n"
		"# HELP ssdprio_written_back_blocks_total Dirty blocks written back to the origin.\n"
		"# TYPE ssdprio_written_back_blocks_total counter\n"
		"ssdprio_written_back_blocks_total{device=\"fast\"} 5\n"
		"# HELP ssdprio_written_back_bytes_total Bytes of dirty blocks written back to the origin.\n"
		"# TYPE ssdprio_written_back_bytes_total counter\n"
		"ssdprio_written_back_bytes_total{device=\"fast\"} 20480\n"
		"# HELP ssdprio_io_errors_total User I/O that the SSD or the origin failed.\n"
		"# TYPE ssdprio_io_errors_total counter\n"
		"ssdprio_io_errors_total{device=\"fast\",leg=\"ssd\",op=\"read\"} 1\n"
		"# HELP ssdprio_writeback_errors_total Writebacks that failed.\n"
		"# TYPE ssdprio_writeback_errors_total counter\n"
		"ssdprio_writeback_errors_total{device=\"fast\"} 3\n"
		"# HELP ssdprio_dirty_blocks Cache blocks holding data the origin lacks.\n"
		"# TYPE ssdprio_dirty_blocks gauge\n"
		"ssdprio_dirty_blocks{device=\"fast\"} 7\n"
		"# HELP ssdprio_dirty_bytes Bytes of data the origin lacks.\n"
		"# TYPE ssdprio_dirty_bytes gauge\n"
		"ssdprio_dirty_bytes{device=\"fast\"} 28672\n"
		"# HELP ssdprio_block_size_bytes Size of a cache block.\n"
		"# TYPE ssdprio_block_size_bytes gauge\n"
		"ssdprio_block_size_bytes{device=\"fast\"} 4096\n"
		"# HELP ssdprio_meta_load_seconds Time the last metadata load took.\n"
		"# TYPE ssdprio_meta_load_seconds gauge\n"
		"ssdprio_meta_load_seconds{device=\"fast\"} 1.234\n"
		"# HELP ssdprio_queued_bios Bios waiting in the scheduler, by queue.\n"
		"# TYPE ssdprio_queued_bios gauge\n"
		"ssdprio_queued_bios{device=\"fast\",queue=\"idle\"} 4\n"
		"# HELP ssdprio_inflight_bios Bios in flight to the origin, by class.\n"
		"# TYPE ssdprio_inflight_bios gauge\n"
		"ssdprio_inflight_bios{device=\"fast\",class=\"idle\"} 1\n");
	free(out);
	st_free(&st);
}

/* Two devices: one HELP/TYPE per metric, the samples together. */
TEST(metrics_grouped_by_metric)
{
	struct dm_status st[2] = { { .name = "a", .sectors = 8 },
				   { .name = "b", .sectors = 16 } };
	char *out;

	ASSERT_EQ(st_parse(&st[0], "read_hits 1 cache off"), 0);
	ASSERT_EQ(st_parse(&st[1], "read_hits 2 cache on sched_mode batch"), 0);
	out = render(st, 2);
	ASSERT_STR_EQ(out,
		"# HELP ssdprio_size_bytes Size of the device.\n"
		"# TYPE ssdprio_size_bytes gauge\n"
		"ssdprio_size_bytes{device=\"a\"} 4096\n"
		"ssdprio_size_bytes{device=\"b\"} 8192\n"
		"# HELP ssdprio_cache_enabled 1 when the table has a cache, 0 with cache off (the scheduler alone).\n"
		"# TYPE ssdprio_cache_enabled gauge\n"
		"ssdprio_cache_enabled{device=\"a\"} 0\n"
		"ssdprio_cache_enabled{device=\"b\"} 1\n"
		"# HELP ssdprio_sched_mode Scheduler mode, 1 for the current one.\n"
		"# TYPE ssdprio_sched_mode gauge\n"
		"ssdprio_sched_mode{device=\"b\",mode=\"normal\"} 0\n"
		"ssdprio_sched_mode{device=\"b\",mode=\"batch\"} 1\n"
		"# HELP ssdprio_read_hits_total Reads served from the SSD (per piece).\n"
		"# TYPE ssdprio_read_hits_total counter\n"
		"ssdprio_read_hits_total{device=\"a\"} 1\n"
		"ssdprio_read_hits_total{device=\"b\"} 2\n");
	free(out);
	st_free(&st[0]);
	st_free(&st[1]);
	/* No device: nothing at all, an empty file for the collector. */
	out = render(st, 0);
	ASSERT_STR_EQ(out, "");
	free(out);
}

/* Names and words are escaped; a value that is not a number is no sample. */
TEST(metrics_escaping)
{
	struct dm_status st = { .name = "we\"ird\\na\nme", .sectors = 1 };
	char *out, *buf = NULL;
	size_t len = 0;
	FILE *f;

	ASSERT_EQ(st_parse(&st, "flush_state new\\\"one dirty_blocks x status_version 1"), 0);
	out = render(&st, 1);
	ASSERT_TRUE(strstr(out, "ssdprio_size_bytes{device=\"we\\\"ird\\\\na\\nme\"} 512\n") != NULL);
	/* A state a newer module added: 1, the known ones 0. */
	ASSERT_TRUE(strstr(out, "ssdprio_flush_state{device=\"we\\\"ird\\\\na\\nme\",state=\"idle\"} 0\n") != NULL);
	ASSERT_TRUE(strstr(out, ",state=\"new\\\\\\\"one\"} 1\n") != NULL);
	ASSERT_TRUE(strstr(out, "ssdprio_dirty") == NULL);
	free(out);
	st_free(&st);

	f = open_memstream(&buf, &len);
	metrics_label_value(f, "a\\b\"c\nd");
	fclose(f);
	ASSERT_STR_EQ(buf, "a\\\\b\\\"c\\nd");
	free(buf);
}

TEST(metrics_write_file_atomic)
{
	struct dm_status st = { .name = "fast", .sectors = 8 };
	char dir[] = "/tmp/ssdp-metrics-XXXXXX", path[64], tmp[72];
	char text[1024] = "";
	struct stat sb;
	FILE *f;
	size_t n;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/ssdprio.prom", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	ASSERT_EQ(st_parse(&st, "status_version 1"), 0);
	/* An old version is replaced whole; a stale .tmp is overwritten. */
	f = fopen(path, "w");
	fputs("old\n", f);
	fclose(f);
	f = fopen(tmp, "w");
	fputs("stale stale stale stale stale stale stale stale stale stale\n", f);
	fclose(f);
	umask(077);
	ASSERT_EQ(metrics_write_file(path, &st, 1), 0);
	umask(022);
	ASSERT_TRUE(access(tmp, F_OK) && errno == ENOENT);
	ASSERT_EQ(stat(path, &sb), 0);
	ASSERT_EQ(sb.st_mode & 0777, 0644);
	f = fopen(path, "r");
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	ASSERT_STR_EQ(text,
		"# HELP ssdprio_status_version Version of the kernel's status line (docs/target.md).\n"
		"# TYPE ssdprio_status_version gauge\n"
		"ssdprio_status_version{device=\"fast\"} 1\n"
		"# HELP ssdprio_size_bytes Size of the device.\n"
		"# TYPE ssdprio_size_bytes gauge\n"
		"ssdprio_size_bytes{device=\"fast\"} 4096\n");
	/* A directory that is not there: an error, nothing written. */
	snprintf(path, sizeof(path), "%s/no/such.prom", dir);
	ASSERT_EQ(metrics_write_file(path, &st, 1), -1);
	ASSERT_EQ(errno, ENOENT);
	snprintf(path, sizeof(path), "%s/ssdprio.prom", dir);
	unlink(path);
	rmdir(dir);
	st_free(&st);
}
