// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool status, flush, wait, set, detach and attach: live devices,
 * through the kernel's status line, messages and table swaps (live.c,
 * libdevmapper) and its device-mapper events (events.c).  See
 * docs/tools.md, "Live status", "Flushing", "Waiting for a state" and
 * "Detach and attach".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libdevmapper.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_scan.h"
#include "cmd.h"
#include "config.h"
#include "dm_status.h"
#include "events.h"
#include "live.h"
#include "metrics.h"
#include "tab.h"
#include "util.h"

#define MiB		(1024.0 * 1024.0)

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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- status ---------------------------------------------------------- */

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
		OPT_HELP, OPT_END,
	};
	struct dm_status *cur = NULL, *prev = NULL;
	bool json = false, watch = false, prom = false, tty, all;
	double interval = 2, t_prev = 0, t;
	const char *output = NULL;
	char **names = NULL;
	int c, n = 0, i, r = 0, round;
	uint32_t event = 0;
	bool on_event;

	while ((c = cmd_getopt(argc, argv, "jw::po:", opts)) != -1) {
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
			else if (optarg && !parse_secs(optarg, &interval))
				return cmd_usage_error("--watch %s: not a number of seconds",
						       optarg);
			break;
		}
	}
	if (output && !prom)
		return cmd_usage_error("--output goes with --prometheus");
	if (prom && (json || watch))
		return cmd_usage_error("--prometheus takes neither --json nor --watch (a timer runs it: docs/tools.md, \"Metrics\")");
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
		/*
		 * One device: the round ends at its next event (a change of
		 * cache_mode, meta_state or flush_state) or after the interval.
		 * The number is read before the status: nothing is missed.
		 */
		on_event = watch && n == 1 && !event_nr(names[0], &event);
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
			printf("ssdprio status at %s, every %g s%s (Ctrl-C ends)\n",
			       ts, interval,
			       on_event ? " and at a state change" : "");
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
		if (on_event)
			event_sleep(names[0], event, interval);
		else
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
		OPT_HELP, OPT_END,
	};
	const char *name, *msg = "flush_dirty";
	bool wait = false;
	double timeout = 0;
	struct dm_status st;
	int c, r;

	while ((c = cmd_getopt(argc, argv, "wdt:", opts)) != -1) {
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
		}
	}
	if (cmd_args(argc, argv, ARGS("the device <name>"), 1))
		return EXIT_FAIL;
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

/* ---- wait ------------------------------------------------------------ */

int cmd_wait(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "until", required_argument, NULL, 'u' },
		{ "timeout", required_argument, NULL, 't' },
		OPT_HELP, OPT_END,
	};
	enum st_until u = ST_UNTIL_NEXT;
	const char *word = "event";
	double timeout = 0;
	int c;

	while ((c = cmd_getopt(argc, argv, "u:t:", opts)) != -1) {
		switch (c) {
		case 'u':
			if (!st_until_parse(optarg, &u)) {
				fprintf(stderr, TOOL ": --until %s: one of clean, degraded, failed, flushed\n",
					optarg);
				return EXIT_FAIL;
			}
			word = optarg;
			break;
		case 't':
			if (!timeout_arg(optarg, &timeout))
				return EXIT_FAIL;
			break;
		}
	}
	if (cmd_args(argc, argv, ARGS("the device <name>"), 1))
		return EXIT_FAIL;
	return wait_until(argv[optind], word, u, timeout);
}

/* ---- set ------------------------------------------------------------- */

/*
 * Rewrite line @lineno of @text (NUL-separated lines are not used: @text
 * is the file as read) so that the entry's features carry @key @val:
 * replaced where the key is, else appended.  Returns the new text.
 */
static char *tab_line_set(const char *text, int lineno, const char *key,
			  const char *val)
{
	struct sbuf out = { 0 };
	const char *line = text, *end;
	int n;

	sbuf_add(&out, "%s", "");
	for (n = 1; *line; n++, line = *end ? end + 1 : end) {
		char *copy, *comment, *w[256], *p, *save = NULL;
		int nw = 0, i;
		bool done = false;

		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		if (n != lineno) {
			sbuf_add(&out, "%.*s%s", (int)(end - line), line,
				 *end ? "\n" : "");
			continue;
		}
		copy = strndup(line, end - line);
		if (!copy)
			abort();
		comment = strchr(copy, '#');
		if (comment)
			*comment++ = 0;
		for (p = strtok_r(copy, " \t\r", &save);
		     p && nw < (int)ARRAY_SIZE(w); p = strtok_r(NULL, " \t\r", &save))
			w[nw++] = p;
		if (nw < 3) {	/* not an entry (the caller found one here) */
			sbuf_add(&out, "%.*s%s", (int)(end - line), line,
				 *end ? "\n" : "");
			free(copy);
			continue;
		}
		sbuf_add(&out, "%s %s %s", w[0], w[1], w[2]);
		for (i = 3; i < nw; i++) {
			/* Words without a value: the kernel's and the boot's. */
			bool flag = !strcmp(w[i], "format") ||
				    !strcmp(w[i], "force") ||
				    !strcmp(w[i], "nofail");

			if (!flag && i + 1 < nw && !strcmp(w[i], key)) {
				sbuf_add(&out, " %s %s", key, val);
				done = true;
				i++;
				continue;
			}
			sbuf_add(&out, " %s", w[i]);
			if (!flag && i + 1 < nw)
				sbuf_add(&out, " %s", w[++i]);
		}
		if (!done)
			sbuf_add(&out, " %s %s", key, val);
		if (comment)
			sbuf_add(&out, " #%s", comment);
		sbuf_add(&out, "%s", *end ? "\n" : "");
		free(copy);
	}
	return out.s;
}

/* Replace @path with @text: a temporary file beside it, synced, renamed. */
static int write_file_atomic(const char *path, const char *text)
{
	struct sbuf tmp = { 0 };
	struct stat st;
	size_t len = strlen(text);
	int fd, r = -1;

	sbuf_add(&tmp, "%s.ssdprio-tool.tmp", path);
	fd = open(tmp.s, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto out;
	if (!stat(path, &st))
		fchmod(fd, st.st_mode & 07777);
	if (write(fd, text, len) != (ssize_t)len || fsync(fd)) {
		close(fd);
		unlink(tmp.s);
		goto out;
	}
	close(fd);
	r = rename(tmp.s, path);
	if (r)
		unlink(tmp.s);
out:
	free(tmp.s);
	return r;
}

/* The tunables a message may change, one a line (bash completion). */
static int list_runtime_keys(void)
{
	unsigned int i, where;
	const char *key;

	for (i = 0; (key = ssdp_config_key_name(i, &where)); i++)
		if (where & SSDP_CFG_MSG)
			printf("%s\n", key);
	return EXIT_OK;
}

/*
 * Change tunables of a live device (target messages) and, with --persist,
 * in its ssdpriotab line too: messages are runtime only, and the table
 * built from the tab at the next activation wins.  The tab is written
 * only after the kernel took every value.
 */
int cmd_set(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "persist", no_argument, NULL, 'p' },
		{ "tab", required_argument, NULL, 't' },
		{ "list-keys", no_argument, NULL, 'l' },
		OPT_HELP, OPT_END,
	};
	const char *tab = getenv("SSDPRIO_TAB"), *name, *why;
	struct tab_entry *e = NULL;
	struct ssdp_config cfg;
	char *text = NULL, *msg;
	bool persist = false;
	int c, i, n = 0, bad = 0, line = 0, r = EXIT_FAIL;

	if (!tab || !*tab)
		tab = DEFAULT_TAB;
	while ((c = cmd_getopt(argc, argv, "", opts)) != -1) {
		if (c == 'p')
			persist = true;
		else if (c == 't')
			tab = optarg;
		else if (c == 'l')
			return list_runtime_keys();
	}
	if (cmd_args(argc, argv, ARGS("the device <name>", "a <key>",
				      "its <value>"), -1))
		return EXIT_FAIL;
	if ((argc - optind - 1) % 2)
		return cmd_usage_error("missing the value of %s", argv[argc - 1]);
	name = argv[optind];
	ssdp_config_defaults(&cfg);
	for (i = optind + 1; i < argc; i += 2) {
		if (!ssdp_config_is_key(argv[i])) {
			err("%s: not a tunable (docs/target.md lists them)",
			    argv[i]);
			return EXIT_FAIL;
		}
		if (ssdp_config_set(&cfg, argv[i], argv[i + 1], SSDP_CFG_MSG,
				    &why)) {
			err("%s %s: %s", argv[i], argv[i + 1], why);
			return EXIT_FAIL;
		}
	}
	if (!dm_exists(name)) {
		err("%s: no such device", name);
		return EXIT_FAIL;
	}
	if (persist) {
		char *copy;

		text = read_file(tab);
		if (!text) {
			err("%s: %s", tab, strerror(errno));
			return EXIT_FAIL;
		}
		copy = strdup(text);
		n = tab_parse(tab, copy, &e, &bad);
		for (i = 0; i < n; i++)
			if (!strcmp(e[i].name, name))
				line = e[i].line;
		tab_free(e, n > 0 ? n : 0);
		free(copy);
		if (!line) {
			err("%s: no entry named %s: nothing to persist in", tab,
			    name);
			free(text);
			return EXIT_BAD;
		}
	}
	for (i = optind + 1; i < argc; i += 2) {
		if (asprintf(&msg, "%s %s", argv[i], argv[i + 1]) < 0)
			abort();
		if (dm_message_quiet(name, msg)) {
			err("%s: the kernel refused '%s' (its reason is in the kernel log): %s",
			    name, msg, dm_last_error());
			free(msg);
			r = EXIT_BAD;
			goto out;
		}
		free(msg);
	}
	if (!persist) {
		printf("%s: set, at run time only: the next activation takes the table from %s ('--persist' writes it there)\n",
		       name, tab);
		r = EXIT_OK;
		goto out;
	}
	for (i = optind + 1; i < argc; i += 2) {
		char *next = tab_line_set(text, line, argv[i], argv[i + 1]);

		free(text);
		text = next;
	}
	if (write_file_atomic(tab, text)) {
		err("%s: cannot write it: %s (the values are set at run time)",
		    tab, strerror(errno));
		r = EXIT_FAIL;
		goto out;
	}
	printf("%s: set, and saved in %s line %d\n", name, tab, line);
	r = EXIT_OK;
out:
	free(text);
	return r;
}

/* ---- detach and attach ------------------------------------------------ */

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
		OPT_HELP, OPT_END,
	};
	char origin[64], cache[64], off[256], lin[128], *type, *params;
	char *id, idv[33];
	struct dm_target tg = { 0 };
	unsigned long long len;
	double timeout = 0;
	const char *name;
	bool cache_on;
	int c, r = EXIT_FAIL;

	while ((c = cmd_getopt(argc, argv, "t:", opts)) != -1)
		if (c == 't' && !timeout_arg(optarg, &timeout))
			return EXIT_FAIL;
	if (cmd_args(argc, argv, ARGS("the device <name>"), 1))
		return EXIT_FAIL;
	name = argv[optind];
	if (dm_table_get(name, &tg))
		goto out;
	if (tg.nr != 1 || tg.start) {
		fprintf(stderr, TOOL ": %s: not a device of one target\n", name);
		goto out;
	}
	len = tg.len;
	type = tg.type;
	params = tg.params;
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
	dm_target_free(&tg);
	dm_lib_release();
	return r;
}

/*
 * The reverse of detach: a device that is a linear table over an origin
 * gets a cache again, live.  The cache starts empty: blank (formatted
 * now) or marked out of date by a detach or a "cache off" table.  A cache
 * of ours not so marked is refused: the origin may have been written
 * around it, so its blocks may be older than the origin's.
 */
int cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		OPT_HELP, OPT_END,
	};
	char why[512], odev[64], origin[96], lin[128];
	struct dm_target tg;
	unsigned long long len, off;
	const char *name, *cache;
	enum ssdp_sb_result res;
	struct sbuf t = { 0 };
	bool force = false, bypassed;
	struct ssdp_scan s;
	struct dev cd, od;
	int c, r, kfd = -1;

	while ((c = cmd_getopt(argc, argv, "", opts)) != -1)
		if (c == 'f')
			force = true;
	if (cmd_args(argc, argv, ARGS("the device <name>",
				      "the cache device <cache_dev>"), -1))
		return EXIT_FAIL;
	name = argv[optind];
	cache = argv[optind + 1];
	if (!dm_exists(name)) {
		err("%s: no such device", name);
		return EXIT_FAIL;
	}
	if (dm_table_get(name, &tg))
		return EXIT_FAIL;
	if (!strcmp(tg.type, "ssdprio")) {
		printf("%s: already has a cache\n", name);
		dm_target_free(&tg);
		return EXIT_OK;
	}
	len = tg.len;
	off = 1;
	if (strcmp(tg.type, "linear") || tg.start || tg.nr != 1 ||
	    sscanf(tg.params, "%63s %llu", odev, &off) != 2 || off) {
		err("%s: not one linear table over a whole origin: %llu %llu %s %s%s",
		    name, tg.start, tg.len, tg.type, tg.params,
		    tg.nr > 1 ? " ..." : "");
		dm_target_free(&tg);
		return EXIT_BAD;
	}
	dm_target_free(&tg);
	snprintf(origin, sizeof(origin), "/dev/block/%s", odev);
	if (dev_open(&od, origin, O_RDONLY))
		return EXIT_FAIL;
	dev_close(&od);
	if (od.sectors != len) {
		err("%s: %llu sectors, its origin %s has %llu: a cache covers the whole origin",
		    name, len, origin, (unsigned long long)od.sectors);
		return EXIT_BAD;
	}
	if (scan_path(cache, &cd, &s, O_RDONLY))
		return EXIT_FAIL;
	dev_close(&cd);
	res = s.sb_res;
	bypassed = s.sb.incompat & SSDP_SB_INCOMPAT_BYPASSED;
	scan_free(&s);
	if (dev_held(cache)) {
		err("%s: held by another device: not attaching", cache);
		return EXIT_BAD;
	}
	if (res == SSDP_SB_OK && !bypassed) {
		err("%s: a cache that was not detached (not marked out of date): the origin may have been written around it, so its blocks may be older; 'ssdprio-tool wipe' it first",
		    cache);
		return EXIT_BAD;
	}
	if (res == SSDP_SB_BLANK && !force && !blank_for_format(cache))
		return EXIT_BAD;
	if (res == SSDP_SB_FOREIGN && !force) {
		err("%s: holds data that is not an ssdprio cache: --force to overwrite it",
		    cache);
		return EXIT_BAD;
	}
	if (res != SSDP_SB_OK && res != SSDP_SB_BLANK &&
	    res != SSDP_SB_FOREIGN) {
		err("%s: %s: see 'ssdprio-tool show'; wipe it to start afresh",
		    cache, sb_res_text(res, s.sb.version));
		return EXIT_NOSB;
	}
	if (res == SSDP_SB_OK)
		r = build_table(origin, cache, argc - optind - 2,
				argv + optind + 2, false, &t, NULL);
	else
		r = format_table(origin, cache, argc - optind - 2,
				 argv + optind + 2, &t);
	if (r)
		goto out;
	kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kfd >= 0)
		lseek(kfd, 0, SEEK_END);
	if (dm_load(name, t.s)) {
		if (kmsg_reason(kfd, why, sizeof(why)))
			err("%s: the kernel refused the table: %s; table: %s",
			    name, why, t.s);
		else
			err("%s: loading the table failed: %s; table: %s",
			    name, dm_last_error(), t.s);
		r = EXIT_BAD;
		goto out;
	}
	if (dm_resume(name)) {
		err("%s: resuming with the cache failed: %s; going back to linear",
		    name, dm_last_error());
		snprintf(lin, sizeof(lin), "0 %llu linear %s 0", len, odev);
		if (dm_load(name, lin) || dm_resume(name))
			err("%s: could not go back either (%s): dmsetup reload %s --table '%s'; dmsetup resume %s",
			    name, dm_last_error(), name, lin, name);
		r = EXIT_BAD;
		goto out;
	}
	notice("%s: attached: %s caches %s, starting empty", name, cache,
	       origin);
	r = EXIT_OK;
out:
	if (kfd >= 0)
		close(kfd);
	free(t.s);
	return r;
}
