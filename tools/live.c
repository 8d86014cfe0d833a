// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool status and flush: the live view of ssdprio devices, read
 * through libdevmapper's ioctls (not by running dmsetup: one process per
 * poll would cost more than the poll, and dmsetup's output is not an
 * interface).  See docs/tools.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <libdevmapper.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dm_status.h"
#include "live.h"
#include "metrics.h"

#define TOOL		"ssdprio-tool"
#define MiB		(1024.0 * 1024.0)

/* Exit codes shared with ssdprio-tool.c (docs/tools.md). */
#define EXIT_FAIL	1
#define EXIT_BAD	3
#define EXIT_TIMEOUT	4
#define EXIT_INTR	130

/* Lock-free, so safe to set from the signal handler. */
static atomic_bool interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = true;
}

/* SIGINT ends our wait, not the process: no SA_RESTART, so sleeps return. */
static void catch_sigint(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - floor(s)) * 1e9) };

	nanosleep(&ts, NULL);	/* EINTR on SIGINT: the caller checks */
}

static bool parse_secs(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 86400 * 365)
		return false;
	*out = v;
	return true;
}

/* --timeout's value; a bad one is reported. */
static bool timeout_arg(const char *s, double *out)
{
	if (parse_secs(s, out))
		return true;
	fprintf(stderr, TOOL ": --timeout %s: not a number of seconds\n", s);
	return false;
}

/*
 * The status of device @name into @st.  Returns 0, 1 when the device
 * has no ssdprio target (@quiet: not reported), -1 on error (reported).
 */
int dm_status_get(const char *name, struct dm_status *st, bool quiet)
{
	uint64_t start, length;
	char *type, *params;
	struct dm_task *dmt;
	struct dm_info info;
	void *next = NULL;
	int r = 1;

	memset(st, 0, sizeof(*st));
	snprintf(st->name, sizeof(st->name), "%s", name);
	dmt = dm_task_create(DM_DEVICE_STATUS);
	if (!dmt)
		return -1;
	if (!dm_task_set_name(dmt, name) || !dm_task_run(dmt) ||
	    !dm_task_get_info(dmt, &info)) {
		fprintf(stderr, TOOL ": %s: cannot read its status\n", name);
		r = -1;
		goto out;
	}
	if (!info.exists) {
		fprintf(stderr, TOOL ": %s: no such device\n", name);
		r = -1;
		goto out;
	}
	do {
		next = dm_get_next_target(dmt, next, &start, &length, &type,
					  &params);
		if (type && !strcmp(type, "ssdprio")) {
			st->sectors = length;
			if (st_parse(st, params)) {
				fprintf(stderr, TOOL ": %s: status is not key value pairs: %s\n",
					name, params);
				st_free(st);
				r = -1;
			} else {
				r = 0;
			}
			break;
		}
	} while (next);
	if (r == 1 && !quiet)
		fprintf(stderr, TOOL ": %s: not an ssdprio device\n", name);
out:
	dm_task_destroy(dmt);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of every ssdprio device, sorted (DM_DEVICE_LIST is not). */
static int dm_list_ssdprio(char ***out)
{
	struct dm_names *names;
	struct dm_task *dmt;
	char **v = NULL;
	int n = 0;
	unsigned int next = 0;

	dmt = dm_task_create(DM_DEVICE_LIST);
	names = dmt && dm_task_run(dmt) ? dm_task_get_names(dmt) : NULL;
	if (!names) {
		fprintf(stderr, TOOL ": cannot list device-mapper devices (root? dm-mod loaded?)\n");
		if (dmt)
			dm_task_destroy(dmt);
		return -1;
	}
	if (names->dev) {
		do {
			struct dm_status st;

			names = (struct dm_names *)((char *)names + next);
			if (!dm_status_get(names->name, &st, true)) {
				v = realloc(v, (n + 1) * sizeof(*v));
				if (!v)
					abort();
				v[n++] = strdup(names->name);
				st_free(&st);
			}
			next = names->next;
		} while (next);
	}
	dm_task_destroy(dmt);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*out = v;
	return n;
}

static int dm_message(const char *name, const char *msg)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_TARGET_MSG);
	int ok;

	if (!dmt)
		return -1;
	ok = dm_task_set_name(dmt, name) && dm_task_set_sector(dmt, 0) &&
	     dm_task_set_message(dmt, msg) && dm_task_run(dmt);
	dm_task_destroy(dmt);
	return ok ? 0 : -1;
}

/* ---- status ---------------------------------------------------------- */

static void status_usage(FILE *f)
{
	fputs("usage: " TOOL " status [--json] [--watch [SECS]] [NAME...]\n"
	      "       " TOOL " status --prometheus [--output FILE] [NAME...]\n", f);
}

/*
 * status --prometheus: one reading of each device, as metrics on stdout
 * or into @output for node_exporter's textfile collector.  A device that
 * cannot be read is left out and makes the exit status 1; the others are
 * still written, so one bad name does not blank the whole file.
 */
static int status_prometheus(char **names, int n, const char *output)
{
	struct dm_status *st = calloc(n ? n : 1, sizeof(*st));
	int i, got = 0, r = 0;

	if (!st)
		return EXIT_FAIL;
	for (i = 0; i < n; i++) {
		if (dm_status_get(names[i], &st[got], false))
			r = EXIT_FAIL;
		else
			got++;
	}
	if (output) {
		if (metrics_write_file(output, st, got)) {
			fprintf(stderr, TOOL ": %s: %s\n", output, strerror(errno));
			r = EXIT_FAIL;
		}
	} else {
		metrics_print(stdout, st, got);
		if (fflush(stdout))
			r = EXIT_FAIL;
	}
	for (i = 0; i < got; i++)
		st_free(&st[i]);
	free(st);
	return r;
}

int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "watch", optional_argument, NULL, 'w' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dm_status *cur = NULL, *prev = NULL;
	bool json = false, watch = false, prom = false, tty, all;
	double interval = 2, t_prev = 0, t;
	const char *output = NULL;
	char **names = NULL;
	int c, n = 0, i, r = 0, round;

	while ((c = getopt_long(argc, argv, "jw::po:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'p':
			prom = true;
			break;
		case 'o':
			output = optarg;
			break;
		case 'w':
			watch = true;
			/* "--watch 5" as well as "--watch=5" */
			if (!optarg && optind < argc &&
			    parse_secs(argv[optind], &interval))
				optind++;
			else if (optarg && !parse_secs(optarg, &interval)) {
				fprintf(stderr, TOOL ": --watch %s: not a number of seconds\n",
					optarg);
				return EXIT_FAIL;
			}
			break;
		case 'h':
			status_usage(stdout);
			return 0;
		default:
			status_usage(stderr);
			return EXIT_FAIL;
		}
	}
	if (output && !prom) {
		fprintf(stderr, TOOL ": --output goes with --prometheus\n");
		return EXIT_FAIL;
	}
	if (prom && (json || watch)) {
		fprintf(stderr, TOOL ": --prometheus takes neither --json nor --watch (a timer runs it: docs/tools.md, \"Metrics\")\n");
		return EXIT_FAIL;
	}
	all = optind == argc;
	if (!all) {
		n = argc - optind;
		names = calloc(n, sizeof(*names));
		for (i = 0; i < n; i++)
			names[i] = strdup(argv[optind + i]);
		qsort(names, n, sizeof(*names), cmp_str);
	} else if (prom) {
		n = dm_list_ssdprio(&names);
		if (n < 0) {
			dm_lib_release();
			return EXIT_FAIL;
		}
	}
	if (prom) {
		r = status_prometheus(names, n, output);
		for (i = 0; i < n; i++)
			free(names[i]);
		free(names);
		dm_lib_release();
		return r;
	}
	tty = isatty(STDOUT_FILENO);
	if (watch)
		catch_sigint();
	for (round = 0; !interrupted; round++) {
		if (all) {
			for (i = 0; i < n; i++)
				free(names[i]);
			free(names);
			names = NULL;
			n = dm_list_ssdprio(&names);
			if (n < 0) {
				r = EXIT_FAIL;
				break;
			}
		}
		t = now();
		cur = calloc(n ? n : 1, sizeof(*cur));
		r = 0;
		for (i = 0; i < n; i++)
			if (dm_status_get(names[i], &cur[i], false))
				r = EXIT_FAIL;
		if (watch && tty && !json)
			fputs("\033[H\033[J", stdout);	/* home, clear */
		else if (watch && !json && round)
			putchar('\n');
		if (json) {
			printf("{\"schema\": %d, \"time\": %ld, \"devices\": [",
			       SSDP_STATUS_JSON_SCHEMA, (long)time(NULL));
		} else if (watch) {
			char ts[32];
			time_t wall = time(NULL);
			struct tm tm;

			strftime(ts, sizeof(ts), "%H:%M:%S",
				 localtime_r(&wall, &tm));
			printf("ssdprio status at %s, every %g s (Ctrl-C ends)\n",
			       ts, interval);
		}
		if (!n && !json)
			printf("no ssdprio devices\n");
		for (i = 0, c = 0; i < n; i++) {
			const struct dm_status *p = NULL;
			int k;

			if (!cur[i].buf)
				continue;
			/* The same device in the last round (names may change). */
			for (k = 0; prev && prev[k].name[0]; k++)
				if (!strcmp(prev[k].name, cur[i].name) &&
				    prev[k].buf)
					p = &prev[k];
			if (json) {
				fputs(c ? ", " : "", stdout);
				st_print_json(stdout, &cur[i], p, t - t_prev);
			} else {
				st_print_text(stdout, &cur[i], p, t - t_prev);
			}
			c++;
		}
		if (json)
			printf("]}\n");
		fflush(stdout);
		if (prev) {
			for (i = 0; prev[i].name[0]; i++)
				st_free(&prev[i]);
			free(prev);
		}
		/* prev is terminated by an empty name: one slot more. */
		prev = realloc(cur, (n + 1) * sizeof(*cur));
		prev[n].name[0] = 0;
		prev[n].buf = NULL;
		cur = NULL;
		t_prev = t;
		/* A name that is wrong at the start will not come right. */
		if (!watch || (!all && !round && r))
			break;
		sleep_s(interval);
	}
	if (prev) {
		for (i = 0; prev[i].name[0]; i++)
			st_free(&prev[i]);
		free(prev);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	dm_lib_release();
	return r;
}

/* ---- flush ----------------------------------------------------------- */

static void flush_usage(FILE *f)
{
	fputs("usage: " TOOL " flush [--drain] [--wait] [--timeout SECS] NAME\n", f);
}

static void fmt_eta(char *out, size_t len, double s)
{
	if (s < 0 || s > 1e7)
		snprintf(out, len, "?");
	else if (s < 120)
		snprintf(out, len, "%.0f s", s);
	else if (s < 7200)
		snprintf(out, len, "%.0f min", s / 60);
	else
		snprintf(out, len, "%.1f h", s / 3600);
}

/* What is left, for the end of a wait that did not finish. */
static void flush_left(const struct dm_status *st)
{
	unsigned long long dirty = 0, failed = 0;

	st_num(st, "dirty_blocks", &dirty);
	st_num(st, "failed_sets", &failed);
	printf("%s: cache_mode %s, flush_state %s, %.1f MiB dirty (%llu blocks), failed_sets %llu\n",
	       st->name, st_get(st, "cache_mode") ?: "?",
	       st_get(st, "flush_state") ?: "?",
	       st_blocks_bytes(st, dirty) / MiB, dirty, failed);
}

/*
 * Follow a flush or drain of @name to its end: progress on a terminal,
 * a line every 5 s otherwise.  Returns 0 when it ended (a flush_dirty may
 * end with blocks written since still dirty: nothing writes them back but
 * cleaning, so waiting for zero could last for ever), or
 * EXIT_BAD (failed; a drain that ended with dirty blocks left, which only
 * a write_policy set back to writeback does), EXIT_TIMEOUT, EXIT_INTR,
 * EXIT_FAIL.
 */
static int flush_follow(const char *name, double timeout, bool drain)
{
	double t0, t_rate = 0, last_line = -1, rate = -1;
	unsigned long long dirty, dirty_rate = 0, wberr = 0, failed = 0;
	bool tty, printed = false;
	struct dm_status st;
	const char *fs;
	int r;

	tty = isatty(STDOUT_FILENO);
	t0 = now();
	for (;;) {
		double t = now();
		char eta[32];

		if (dm_status_get(name, &st, false))
			return EXIT_FAIL;
		dirty = 0;
		st_num(&st, "dirty_blocks", &dirty);
		fs = st_get(&st, "flush_state") ?: "?";
		if (!strcmp(fs, "idle") && !dirty) {
			if (printed && tty)
				putchar('\n');
			printf("%s: flushed: no dirty blocks left (%.1f s)\n",
			       name, t - t0);
			r = 0;
			break;
		}
		if (!strcmp(fs, "idle")) {
			if (printed && tty)
				putchar('\n');
			if (drain) {
				printf("%s: the drain ended with %.1f MiB dirty (%llu blocks): write_policy is writeback again?\n",
				       name, st_blocks_bytes(&st, dirty) / MiB,
				       dirty);
				r = EXIT_BAD;
			} else {
				printf("%s: flushed: the flush ended (%.1f s); %.1f MiB (%llu blocks) written since are dirty\n",
				       name, t - t0,
				       st_blocks_bytes(&st, dirty) / MiB, dirty);
				r = 0;
			}
			break;
		}
		if (!strcmp(fs, "failed")) {
			st_num(&st, "writeback_errors", &wberr);
			st_num(&st, "failed_sets", &failed);
			if (printed && tty)
				putchar('\n');
			printf("%s: flush failed: failed_sets %llu, writeback_errors %llu, %.1f MiB still dirty (the kernel log names the error; mend the device and flush again)\n",
			       name, failed, wberr,
			       st_blocks_bytes(&st, dirty) / MiB);
			r = EXIT_BAD;
			break;
		}
		if (interrupted) {
			if (printed && tty)
				putchar('\n');
			printf("%s: interrupted: the flush goes on in the kernel\n",
			       name);
			flush_left(&st);
			r = EXIT_INTR;
			break;
		}
		if (timeout && t - t0 >= timeout) {
			if (printed && tty)
				putchar('\n');
			printf("%s: timed out after %g s: the flush goes on in the kernel\n",
			       name, timeout);
			flush_left(&st);
			r = EXIT_TIMEOUT;
			break;
		}
		/* Rate over at least a second, so that one poll's noise does not swing the ETA. */
		if (!t_rate) {
			t_rate = t;
			dirty_rate = dirty;
		} else if (t - t_rate >= 1) {
			double bytes = dirty_rate > dirty ?
				       (double)st_blocks_bytes(&st, dirty_rate - dirty) : 0;
			rate = bytes / (t - t_rate);
			t_rate = t;
			dirty_rate = dirty;
		}
		fmt_eta(eta, sizeof(eta), rate > 0 ?
			st_blocks_bytes(&st, dirty) / rate : -1);
		if (tty) {
			printf("\r%s: %.1f MiB left, %.1f MiB/s, ETA %s, flush_state %s\033[K",
			       name, st_blocks_bytes(&st, dirty) / MiB,
			       rate > 0 ? rate / MiB : 0, eta, fs);
			printed = true;
		} else if (last_line < 0 || t - last_line >= 5) {
			char rs[32] = "?";

			if (rate >= 0)
				snprintf(rs, sizeof(rs), "%.1f", rate / MiB);
			printf("%s: %.1f MiB left, %s MiB/s, ETA %s, flush_state %s\n",
			       name, st_blocks_bytes(&st, dirty) / MiB, rs, eta,
			       fs);
			last_line = t;
		}
		fflush(stdout);
		st_free(&st);
		sleep_s(0.5);
	}
	st_free(&st);
	return r;
}

int cmd_flush(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "wait", no_argument, NULL, 'w' },
		{ "drain", no_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name, *msg = "flush_dirty";
	bool wait = false;
	double timeout = 0;
	struct dm_status st;
	int c, r;

	while ((c = getopt_long(argc, argv, "wdt:h", opts, NULL)) != -1) {
		switch (c) {
		case 'w':
			wait = true;
			break;
		case 'd':
			msg = "drain";
			break;
		case 't':
			if (!timeout_arg(optarg, &timeout))
				return EXIT_FAIL;
			break;
		case 'h':
			flush_usage(stdout);
			return 0;
		default:
			flush_usage(stderr);
			return EXIT_FAIL;
		}
	}
	if (optind + 1 != argc) {
		flush_usage(stderr);
		return EXIT_FAIL;
	}
	name = argv[optind];
	if (dm_status_get(name, &st, false))
		return EXIT_FAIL;
	if (!st_get(&st, "cache") || strcmp(st_get(&st, "cache"), "on")) {
		printf("%s: the cache is off: nothing to flush\n", name);
		st_free(&st);
		return 0;
	}
	st_free(&st);
	if (wait)
		catch_sigint();
	if (dm_message(name, msg)) {
		fprintf(stderr, TOOL ": %s: the %s message failed\n", name, msg);
		return EXIT_FAIL;
	}
	if (!wait) {
		printf("%s: %s sent; it runs in the kernel ('%s status %s' shows dirty_blocks and flush_state)\n",
		       name, msg, TOOL, name);
		return 0;
	}
	r = flush_follow(name, timeout, !strcmp(msg, "drain"));
	dm_lib_release();
	return r;
}

/* ---- detach ---------------------------------------------------------- */

static void detach_usage(FILE *f)
{
	fputs("usage: " TOOL " detach [--timeout SECS] NAME\n", f);
}

/*
 * The one target of @name's live table: its length, type and parameters
 * (malloc'd).  Returns 0, or -1 with the reason reported.
 */
static int dm_table_one(const char *name, unsigned long long *len,
			char **type, char **params)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_TABLE);
	uint64_t start, length;
	char *t = NULL, *p = NULL;
	struct dm_info info;
	void *next;
	int r = -1;

	if (!dmt)
		return -1;
	if (!dm_task_set_name(dmt, name) || !dm_task_run(dmt) ||
	    !dm_task_get_info(dmt, &info) || !info.exists) {
		fprintf(stderr, TOOL ": %s: no such device\n", name);
		goto out;
	}
	next = dm_get_next_target(dmt, NULL, &start, &length, &t, &p);
	if (!t || next || start) {
		fprintf(stderr, TOOL ": %s: not a device of one target\n", name);
		goto out;
	}
	*len = length;
	*type = strdup(t);
	*params = strdup(p ? p : "");
	r = 0;
out:
	dm_task_destroy(dmt);
	return r;
}

/*
 * Load @type @params as @name's table and resume it (udev synced).
 * Returns 0, -1 when the load was refused (the device is as it was), -2
 * when the resume failed (the device is suspended with the new table).
 */
static int dm_reload_resume(const char *name, unsigned long long len,
			    const char *type, const char *params)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_RELOAD);
	uint32_t cookie = 0;
	int ok;

	if (!dmt)
		return -1;
	ok = dm_task_set_name(dmt, name) &&
	     dm_task_add_target(dmt, 0, len, type, params) && dm_task_run(dmt);
	dm_task_destroy(dmt);
	if (!ok) {
		fprintf(stderr, TOOL ": %s: the kernel refused the table '%s %s' (its reason is in the kernel log)\n",
			name, type, params);
		return -1;
	}
	dmt = dm_task_create(DM_DEVICE_RESUME);
	if (!dmt)
		return -2;
	ok = dm_task_set_name(dmt, name) && dm_task_set_cookie(dmt, &cookie, 0) &&
	     dm_task_run(dmt);
	dm_task_destroy(dmt);
	if (cookie)
		dm_udev_wait(cookie);
	if (!ok) {
		fprintf(stderr, TOOL ": %s: resuming the table '%s %s' failed (its reason is in the kernel log)\n",
			name, type, params);
		return -2;
	}
	return 0;
}

/*
 * Take the cache away from a live device without stopping it: drain
 * (writethrough, then every dirty block written back, under load), then
 * a "cache off" table, whose resume refuses if the caching table's
 * suspend left a dirty block and otherwise marks the cache out of date,
 * and last a plain linear table over the origin.  Every step keeps the
 * device's data: a failed one leaves the device as it was or, after the
 * cache-off step failed, back on the caching table.
 */
int cmd_detach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char origin[64], cache[64], off[256], lin[128], *type = NULL;
	char *params = NULL, *id, idv[33];
	unsigned long long len;
	double timeout = 0;
	const char *name;
	bool cache_on;
	int c, r = EXIT_FAIL;

	while ((c = getopt_long(argc, argv, "t:h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (!timeout_arg(optarg, &timeout))
				return EXIT_FAIL;
			break;
		case 'h':
			detach_usage(stdout);
			return 0;
		default:
			detach_usage(stderr);
			return EXIT_FAIL;
		}
	}
	if (optind + 1 != argc) {
		detach_usage(stderr);
		return EXIT_FAIL;
	}
	name = argv[optind];
	if (dm_table_one(name, &len, &type, &params))
		goto out;
	if (!strcmp(type, "linear")) {
		printf("%s: already detached (a linear table)\n", name);
		r = 0;
		goto out;
	}
	if (strcmp(type, "ssdprio") ||
	    sscanf(params, "%63s %63s", origin, cache) != 2) {
		fprintf(stderr, TOOL ": %s: not an ssdprio device\n", name);
		goto out;
	}
	cache_on = !strstr(params, " cache off");
	if (cache_on) {
		catch_sigint();
		if (dm_message(name, "drain")) {
			fprintf(stderr, TOOL ": %s: the drain message failed\n",
				name);
			goto out;
		}
		printf("%s: draining (writethrough; dirty blocks written back)\n",
		       name);
		fflush(stdout);
		r = flush_follow(name, timeout, true);
		if (r) {
			printf("%s: not detached: the cache stays, in drain mode (writethrough)\n",
			       name);
			goto out;
		}
		r = EXIT_FAIL;
		/* The cache's own origin_id, or cache off would not know it. */
		id = strstr(params, " origin_id ");
		if (id && sscanf(id, " origin_id %32s", idv) == 1)
			snprintf(off, sizeof(off), "%s %s 4 cache off origin_id %s",
				 origin, cache, idv);
		else
			snprintf(off, sizeof(off), "%s %s 2 cache off", origin,
				 cache);
		c = dm_reload_resume(name, len, "ssdprio", off);
		if (c == -1) {
			printf("%s: not detached: the cache stays, in drain mode (writethrough)\n",
			       name);
			r = EXIT_BAD;
			goto out;
		}
		if (c) {
			/* Suspended, the cache-off table in: go back. */
			if (dm_reload_resume(name, len, "ssdprio", params))
				fprintf(stderr, TOOL ": %s: could not go back to the caching table either: load it by hand: dmsetup reload %s --table '0 %llu ssdprio %s'; dmsetup resume %s\n",
					name, name, len, params, name);
			else
				printf("%s: not detached: back on the caching table\n",
				       name);
			r = EXIT_BAD;
			goto out;
		}
	}
	snprintf(lin, sizeof(lin), "%s 0", origin);
	c = dm_reload_resume(name, len, "linear", lin);
	if (c) {
		printf(c == -1 ?
		       "%s: the device stays on a 'cache off' table (its cache is marked out of date): run detach again\n" :
		       "%s: suspended with the linear table loaded: 'dmsetup resume %s'\n",
		       name, name);
		r = EXIT_BAD;
		goto out;
	}
	printf("%s: detached: a linear table over %s; %s is free, marked out of date (a caching table starts it empty: '%s attach %s CACHE_DEV'); take %s's line out of the ssdpriotab, or the next boot attaches it again\n",
	       name, origin, cache, TOOL, name, name);
	r = 0;
out:
	free(type);
	free(params);
	dm_lib_release();
	return r;
}
