// SPDX-License-Identifier: GPL-2.0
/*
 * The status line as Prometheus metrics: see metrics.h and docs/tools.md,
 * "Metrics".  Every metric comes from a key of the kernel's status line
 * (docs/target.md): counters stay counters (rates are the scraper's job),
 * words become one 0/1 sample per state, so an alert can match a state
 * without knowing the others.  All samples of a metric are written
 * together, as the format requires, one per device.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#define PREFIX		"ssdprio_"
#define MAX_SERIES	4
#define MAX_STATES	6

enum m_type { M_COUNTER, M_GAUGE, M_STATES };

/* How a key's value becomes the sample's value. */
enum m_conv {
	C_NUM,		/* the number as it is */
	C_BLOCKS,	/* cache blocks to bytes (block_sectors) */
	C_SECTORS,	/* 512-byte sectors to bytes */
	C_MS,		/* milliseconds to seconds */
	C_ON,		/* "on" 1, anything else 0 */
	C_DEV_SIZE,	/* no key: the device's length, in bytes */
};

struct m_series {
	const char *labels;	/* extra labels, as written: a="b",c="d" */
	const char *key;
};

struct m_family {
	const char *name;	/* after PREFIX */
	enum m_type type;
	enum m_conv conv;
	const char *help;
	struct m_series s[MAX_SERIES];
	/* M_STATES: the label's name and the states always written. */
	const char *label;
	const char *states[MAX_STATES];
};

#define FAMILY(n, t, c, h, ...) \
	{ .name = n, .type = t, .conv = c, .help = h, .s = { __VA_ARGS__ } }
#define COUNTER(n, k, h)	FAMILY(n, M_COUNTER, C_NUM, h, { NULL, k })
#define GAUGE(n, k, h)		FAMILY(n, M_GAUGE, C_NUM, h, { NULL, k })
#define STATES(n, k, h, l, ...) \
	{ .name = n, .type = M_STATES, .conv = C_NUM, .help = h, \
	  .s = { { NULL, k } }, .label = l, .states = { __VA_ARGS__ } }

static const struct m_family families[] = {
	GAUGE("status_version", "status_version",
	      "Version of the kernel's status line (docs/target.md)."),
	FAMILY("size_bytes", M_GAUGE, C_DEV_SIZE,
	       "Size of the device.",
	       { NULL, NULL }),
	FAMILY("cache_enabled", M_GAUGE, C_ON,
	       "1 when the table has a cache, 0 with cache off (the scheduler alone).",
	       { NULL, "cache" }),
	STATES("cache_mode", "cache_mode",
	       "Cache mode, 1 for the current one: degraded after SSD failures, until the table is reloaded.",
	       "mode", "normal", "degraded"),
	STATES("meta_state", "meta_state",
	       "Metadata state, 1 for the current one: failed means the cache is retired.",
	       "state", "formatted", "clean", "recovered", "failed"),
	STATES("flush_state", "flush_state",
	       "State of flush_dirty and drain, 1 for the current one.",
	       "state", "idle", "running", "failed"),
	GAUGE("draining", "draining", "1 while a drain runs."),
	STATES("evict_state", "evict_state",
	       "Eviction state, 1 for the current one.",
	       "state", "normal", "wait", "writeback"),
	STATES("sched_mode", "sched_mode",
	       "Scheduler mode, 1 for the current one.",
	       "mode", "normal", "batch"),

	FAMILY("bios_total", M_COUNTER, C_NUM,
	       "Bios mapped, by class (data bios and discards).",
	       { "class=\"normal\"", "bios_normal" },
	       { "class=\"idle\"", "bios_idle" }),
	FAMILY("bytes_total", M_COUNTER, C_NUM,
	       "Bytes of data read and written, by class.",
	       { "class=\"normal\"", "bytes_normal" },
	       { "class=\"idle\"", "bytes_idle" }),
	COUNTER("reads_total", "reads", "Read bios."),
	COUNTER("writes_total", "writes", "Write bios."),
	COUNTER("flushes_total", "flushes", "Flush bios."),
	COUNTER("discards_total", "discards", "Discard bios."),
	COUNTER("read_hits_total", "read_hits", "Reads served from the SSD (per piece)."),
	COUNTER("read_misses_total", "read_misses", "Reads served from the origin (per piece)."),
	COUNTER("write_hits_total", "write_hits", "Writes to a mapped set."),
	COUNTER("write_misses_total", "write_misses", "Writes to an unmapped set."),
	COUNTER("bypassed_total", "bypassed", "I/O sent to the origin for want of room in the cache."),
	COUNTER("deferred_total", "deferred", "Writes and discards that waited for a writeback, promotion or earlier write."),
	COUNTER("promotions_total", "promotions", "Read-miss copies written into the cache."),
	COUNTER("promotions_skipped_total", "promotions_skipped", "Read-miss copies dropped."),
	COUNTER("seq_skipped_total", "seq_skipped", "Read misses not promoted: their stream was past seq_cutoff."),
	COUNTER("lockouts_total", "lockouts", "Read misses and writes kept out of the cache by other origin sets' dirty blocks."),
	COUNTER("written_back_blocks_total", "blocks_written_back", "Dirty blocks written back to the origin."),
	FAMILY("written_back_bytes_total", M_COUNTER, C_BLOCKS,
	       "Bytes of dirty blocks written back to the origin.",
	       { NULL, "blocks_written_back" }),
	COUNTER("writeback_writes_total", "writeback_writes", "Origin writes issued by writebacks."),
	COUNTER("writeback_bridged_blocks_total", "writeback_bridged_blocks", "Clean blocks rewritten to join two dirty runs into one origin write."),
	COUNTER("writeback_yields_total", "writeback_yields", "Quiet-window writebacks that stopped early for a write."),
	COUNTER("writes_beside_writeback_total", "writes_beside_writeback", "Writes that went on, on the SSD, while a writeback held their set."),
	COUNTER("writes_around_writeback_total", "writes_around_writeback", "Writes sent to the origin around a writeback of their set."),
	FAMILY("io_errors_total", M_COUNTER, C_NUM,
	       "User I/O that the SSD or the origin failed.",
	       { "leg=\"ssd\",op=\"read\"", "ssd_read_errors" },
	       { "leg=\"ssd\",op=\"write\"", "ssd_write_errors" },
	       { "leg=\"origin\",op=\"read\"", "origin_read_errors" },
	       { "leg=\"origin\",op=\"write\"", "origin_write_errors" }),
	COUNTER("writeback_errors_total", "writeback_errors", "Writebacks that failed."),
	COUNTER("read_fallbacks_total", "read_fallbacks", "Clean read hits that failed on the SSD and were read from the origin."),

	GAUGE("valid_blocks", "valid_blocks", "Cache blocks holding data."),
	GAUGE("dirty_blocks", "dirty_blocks", "Cache blocks holding data the origin lacks."),
	FAMILY("dirty_bytes", M_GAUGE, C_BLOCKS,
	       "Bytes of data the origin lacks.",
	       { NULL, "dirty_blocks" }),
	GAUGE("cache_blocks", "cache_blocks", "Capacity of the cache in blocks."),
	FAMILY("cache_bytes", M_GAUGE, C_BLOCKS,
	       "Capacity of the cache in bytes.",
	       { NULL, "cache_blocks" }),
	FAMILY("block_size_bytes", M_GAUGE, C_SECTORS,
	       "Size of a cache block.",
	       { NULL, "block_sectors" }),
	FAMILY("sets", M_GAUGE, C_NUM,
	       "Cache sets: mapped (holding a tag), free, limbo (frames reusable after the next commit).",
	       { "state=\"mapped\"", "mapped_sets" },
	       { "state=\"free\"", "free_sets" },
	       { "state=\"limbo\"", "limbo_sets" }),
	GAUGE("cache_sets", "total_sets", "Cache sets in all."),
	GAUGE("tags_used", "tags_used", "Origin-set tags in use."),
	GAUGE("tags_capacity", "tags_total", "Origin-set tags in all (15 per cache set)."),
	COUNTER("blocks_replaced_total", "blocks_replaced", "Clean blocks whose frames went to another origin set's block."),
	GAUGE("writeback_sets", "writeback_sets", "Writebacks under way."),
	GAUGE("deferred_bios", "deferred_now", "Writes waiting now."),
	GAUGE("failed_sets", "failed_sets", "Sets whose last writeback failed."),
	COUNTER("sets_evicted_total", "sets_evicted", "Eviction writebacks done."),
	COUNTER("sets_cleaned_total", "sets_cleaned", "Cleaning writebacks started."),
	COUNTER("pressure_writebacks_total", "pressure_writebacks", "Eviction writebacks started without a quiet window."),
	COUNTER("lockout_writebacks_total", "lockout_writebacks", "Lock-out cleaning writebacks started."),
	GAUGE("oldest_dirty_seconds", "oldest_dirty_s", "Age of the oldest dirty data (0 when none)."),
	GAUGE("metadata_memory_bytes", "metadata_bytes", "RAM used by the frame map and the per-set holds."),
	COUNTER("meta_commits_total", "meta_commits", "Metadata commits."),
	COUNTER("meta_block_writes_total", "meta_block_writes", "4 KiB metadata blocks written."),
	FAMILY("meta_load_seconds", M_GAUGE, C_MS,
	       "Time the last metadata load took.",
	       { NULL, "meta_load_ms" }),

	FAMILY("queued_bios", M_GAUGE, C_NUM,
	       "Bios waiting in the scheduler, by queue.",
	       { "queue=\"normal_read\"", "queued_normal_reads" },
	       { "queue=\"normal_write\"", "queued_normal_writes" },
	       { "queue=\"idle\"", "queued_idle" }),
	FAMILY("inflight_bios", M_GAUGE, C_NUM,
	       "Bios in flight to the origin, by class.",
	       { "class=\"normal\"", "normal_inflight" },
	       { "class=\"idle\"", "idle_inflight" }),
	COUNTER("idle_dispatched_total", "idle_dispatched", "Idle bios sent to the origin."),
	COUNTER("batch_entries_total", "batch_entries", "Times batch mode was entered."),
	COUNTER("idle_promoted_total", "idle_promoted", "Idle bios dispatched by the starvation bound."),
	COUNTER("idle_boosted_total", "idle_boosted", "Idle bios released at once because normal I/O or a drain waited for them."),
	COUNTER("pressure_dispatched_total", "pressure_dispatched", "Eviction writes sent by the pressure share."),
	COUNTER("normal_housekeeping_total", "normal_housekeeping", "Normal bios that were housekeeping."),
	COUNTER("pressure_gaps_total", "pressure_gaps", "Eviction writes sent while the origin had no normal bio."),
	COUNTER("pressure_burst_total", "pressure_burst", "Eviction writes sent in a burst."),
	COUNTER("idle_injected_total", "idle_injected", "Idle bios sent into the learnt gaps of the normal load."),
	COUNTER("normal_met_idle_total", "normal_met_idle", "Normal bios that arrived with an idle bio in flight."),
	COUNTER("normal_met_charged_total", "normal_met_charged", "Of those, the ones charged to idle_budget."),
};

void metrics_label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static const char *type_name(enum m_type t)
{
	return t == M_COUNTER ? "counter" : "gauge";
}

/* Does device @st give this series a value? */
static bool has(const struct m_family *m, const struct m_series *s,
		const struct dm_status *st)
{
	unsigned long long v;

	switch (m->conv) {
	case C_DEV_SIZE:
		return true;
	case C_ON:
	case C_NUM:
		if (m->type == M_STATES || m->conv == C_ON)
			return st_get(st, s->key);
		return st_num(st, s->key, &v);
	case C_BLOCKS:
		return st_num(st, s->key, &v) &&
		       st_num(st, "block_sectors", &v);
	default:
		return st_num(st, s->key, &v);
	}
}

static void sample_start(FILE *f, const struct m_family *m,
			 const struct dm_status *st, const char *labels)
{
	fprintf(f, PREFIX "%s{device=\"", m->name);
	metrics_label_value(f, st->name);
	fputc('"', f);
	if (labels)
		fprintf(f, ",%s", labels);
}

static void print_states(FILE *f, const struct m_family *m,
			 const struct dm_status *st)
{
	const char *cur = st_get(st, m->s[0].key);
	bool known = false;
	int i;

	for (i = 0; i < MAX_STATES && m->states[i]; i++) {
		bool on = !strcmp(cur, m->states[i]);

		known |= on;
		sample_start(f, m, st, NULL);
		fprintf(f, ",%s=\"%s\"} %d\n", m->label, m->states[i], on);
	}
	/* A state a newer module added: shown, as the current one. */
	if (!known) {
		sample_start(f, m, st, NULL);
		fprintf(f, ",%s=\"", m->label);
		metrics_label_value(f, cur);
		fputs("\"} 1\n", f);
	}
}

static void print_value(FILE *f, const struct m_family *m,
			const struct m_series *s, const struct dm_status *st)
{
	unsigned long long v = 0;

	switch (m->conv) {
	case C_DEV_SIZE:
		fprintf(f, "%llu\n", st->sectors * 512);
		return;
	case C_ON:
		fprintf(f, "%d\n", !strcmp(st_get(st, s->key), "on"));
		return;
	default:
		break;
	}
	st_num(st, s->key, &v);
	if (m->conv == C_BLOCKS)
		fprintf(f, "%llu\n", st_blocks_bytes(st, v));
	else if (m->conv == C_SECTORS)
		fprintf(f, "%llu\n", v * 512);
	else if (m->conv == C_MS)
		fprintf(f, "%llu.%03llu\n", v / 1000, v % 1000);
	else
		fprintf(f, "%llu\n", v);
}

static void print_family(FILE *f, const struct m_family *m,
			 const struct dm_status *st, int nr)
{
	bool any = false;
	int d, i;

	for (d = 0; d < nr && !any; d++)
		for (i = 0; i < MAX_SERIES && (m->s[i].key || !i); i++)
			any |= has(m, &m->s[i], &st[d]);
	if (!any)
		return;
	fprintf(f, "# HELP " PREFIX "%s %s\n", m->name, m->help);
	fprintf(f, "# TYPE " PREFIX "%s %s\n", m->name, type_name(m->type));
	for (d = 0; d < nr; d++) {
		for (i = 0; i < MAX_SERIES && (m->s[i].key || !i); i++) {
			const struct m_series *s = &m->s[i];

			if (!has(m, s, &st[d]))
				continue;
			if (m->type == M_STATES) {
				print_states(f, m, &st[d]);
				continue;
			}
			sample_start(f, m, &st[d], s->labels);
			fputs("} ", f);
			print_value(f, m, s, &st[d]);
		}
	}
}

void metrics_print(FILE *f, const struct dm_status *st, int nr)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(families); i++)
		print_family(f, &families[i], st, nr);
}

/* The directory's entry reaches the disk too: a crash keeps one version. */
static int sync_dir_of(const char *path)
{
	char *copy = strdup(path);
	int fd, r = -1;

	if (!copy)
		return -1;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		r = fsync(fd);
		close(fd);
	}
	free(copy);
	return r;
}

int metrics_write_file(const char *path, const struct dm_status *st, int nr)
{
	size_t len = strlen(path) + sizeof(".tmp");
	char *tmp = malloc(len);
	FILE *f;
	int fd, err, bad;

	if (!tmp)
		return -1;
	snprintf(tmp, len, "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		free(tmp);
		return -1;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		goto fail;
	}
	/* node_exporter reads it as another user, whatever our umask. */
	bad = fchmod(fd, 0644);
	if (!bad) {
		metrics_print(f, st, nr);
		bad = fflush(f) || ferror(f) || fsync(fd);
	}
	err = errno;
	if (fclose(f) && !bad) {
		bad = 1;
		err = errno;
	}
	errno = err;
	if (bad || rename(tmp, path))
		goto fail;
	free(tmp);
	return sync_dir_of(path);
fail:
	err = errno;
	unlink(tmp);
	free(tmp);
	errno = err;
	return -1;
}
