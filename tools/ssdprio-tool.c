// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool: inspect, check, activate, watch and administer dm-ssdprio
 * caches.  This file is the command table, the usage printed from it
 * (its one source: ssdprio-tool(8) and the bash completion follow it,
 * tests/unit/test-tool-args.sh and test-completion.sh check that) and
 * the parsing every command shares.  The commands are in cmd_*.c and
 * boot.c; the code under them in util.c, live.c (device-mapper, through
 * libdevmapper only), events.c, cache_scan.c, tab.c and the rest.  See
 * docs/tools.md and docs/hacking.md.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "cmd.h"
#include "msg.h"

#ifndef SSDP_TOOL_VERSION
#define SSDP_TOOL_VERSION	"0.1.0"
#endif

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

static const struct tool_cmd cmds[] = {
	{ "show", cmd_show, "[--json] [--sets] <cache_dev>",
	  "Decode a cache device's superblock and records", false },
	{ "check", cmd_check, "<cache_dev>",
	  "Check a cache device's metadata: exit 0 consistent, 3 not", false },
	{ "dirty", cmd_dirty, "<cache_dev>",
	  "List the origin ranges whose newest data only the cache holds", false },
	{ "table", cmd_table, "<origin_dev> <cache_dev> [features...]",
	  "Print the table line that loads a cache", false },
	{ "wipe", cmd_wipe, "[--force] [--records] <cache_dev>",
	  "Zero a cache's superblock, so that it can be formatted again", false },
	{ "gen-origin-id", cmd_gen_origin_id, "",
	  "Print a random origin_id", false },
	{ "origin-id", cmd_origin_id, "<origin_dev>",
	  "Print the origin_id derived for an origin", false },
	{ "create", cmd_create,
	  "[--dry-run] [--force] <name> <origin_dev> <cache_dev> [features...]",
	  "Format a blank cache and start the device (once)", false },
	{ "activate", cmd_activate,
	  "[--tab FILE] [--udev | --wait SECS] [--initramfs] [--dry-run] [name...]",
	  "Start the devices of the ssdpriotab", false },
	{ "deactivate", cmd_deactivate, "<name>...",
	  "Remove devices cleanly (the boot unit's stop)", false },
	{ "systemd-generator", cmd_systemd_generator,
	  "[--tab FILE] <dir> [<early_dir> <late_dir>]",
	  "One unit per ssdpriotab entry (run by systemd)", false },
	{ "udev-role", cmd_udev_role, "[--tab FILE]",
	  "SSDPRIO_ROLE of the event's device (udev's IMPORT{program})", false },
	{ "status", cmd_status,
	  "[--json] [--watch [SECS]] [name...]\n"
	  "--prometheus [--output FILE] [name...]",
	  "The live state of ssdprio devices, or their metrics", false },
	{ "flush", cmd_flush, "[--drain] [--wait] [--timeout SECS] <name>",
	  "Write every dirty block back now", false },
	{ "wait", cmd_wait,
	  "[--until clean|degraded|failed|flushed] [--timeout SECS] <name>",
	  "Sleep until the device's next event, or a state", false },
	{ "detach", cmd_detach, "[--timeout SECS] <name>",
	  "Take the cache away from a live device", false },
	{ "attach", cmd_attach, "[--force] <name> <cache_dev> [features...]",
	  "Give a linear device a cache again, live", false },
	{ "set", cmd_set,
	  "[--persist] [--tab FILE] <name> <key> <value> [<key> <value>...]\n"
	  "--list-keys",
	  "Change tunables of a live device", false },
	{ "debug-record", cmd_debug_record,
	  "[--allow-misplaced] <cache_dev> <cset> <tag> <oset|free> <first> <nr_valid> <nr_dirty>",
	  "Craft a cache set's record (tests only)", true },
	{ "debug-placement", cmd_debug_placement, "<cache_dev> <oset>...",
	  "The cache set of each origin set (tests only)", true },
};

/* The command running, for its usage. */
static const struct tool_cmd *current;

/* ---- messages ------------------------------------------------------- */

int kmsg_fd = -1;

void __printf(2, 3)
logmsg(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, TOOL ": %s\n", buf);
	if (kmsg_fd >= 0) {
		/* One write() per record; not dprintf: /dev/kmsg has no SEEK_CUR. */
		char rec[1100];
		int n = snprintf(rec, sizeof(rec), "<%d>" TOOL "[%d]: %s\n",
				 LOG_USER | level, (int)getpid(), buf);

		if (n > 0 && write(kmsg_fd, rec, strlen(rec)) < 0)
			kmsg_fd = -1;
	}
}

/* ---- usage ---------------------------------------------------------- */

/* Each form of @c's usage, the first after @first, the others after @more. */
static void cmd_forms(FILE *f, const struct tool_cmd *c, const char *first,
		      const char *more)
{
	const char *u = c->usage, *end;
	const char *lead = first;

	do {
		end = strchr(u, '\n');
		if (!end)
			end = u + strlen(u);
		fprintf(f, "%s" TOOL " %s%s%.*s\n", lead, c->name,
			end > u ? " " : "", (int)(end - u), u);
		lead = more;
		u = *end ? end + 1 : end;
	} while (*u);
}

static void usage_all(FILE *f)
{
	size_t i;

	fputs("usage:\n", f);
	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!cmds[i].hidden)
			cmd_forms(f, &cmds[i], "  ", "  ");
	fputs("  " TOOL " --help | --version\n"
	      "'" TOOL " COMMAND --help' describes one command. See ssdprio-tool(8) and docs/tools.md.\n",
	      f);
}

static void usage_cmd(FILE *f, const struct tool_cmd *c)
{
	cmd_forms(f, c, "usage: ", "       ");
	fprintf(f, "%s.\n", c->summary);
}

int cmd_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, TOOL " %s: ", current->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage_cmd(stderr, current);
	return EXIT_FAIL;
}

int cmd_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *opts)
{
	char optstring[32];
	int c;

	/* ':' first: a missing value is told from an unknown option. */
	snprintf(optstring, sizeof(optstring), ":%sh", shortopts);
	opterr = 0;
	c = getopt_long(argc, argv, optstring, opts, NULL);
	if (c == 'h') {
		usage_cmd(stdout, current);
		exit(EXIT_OK);
	}
	if (c == ':')
		exit(cmd_usage_error("option %s needs a value",
				     argv[optind - 1]));
	if (c == '?') {
		const char *o = argv[optind - 1];
		int len = strcspn(o, "=");

		if (strncmp(o, "--", 2))
			exit(cmd_usage_error("unknown option -%c", optopt));
		/* A known option's val in optopt: "--json=1". */
		if (optopt && o[len])
			exit(cmd_usage_error("option %.*s takes no value", len,
					     o));
		exit(cmd_usage_error("unknown option %.*s", len, o));
	}
	return c;
}

int cmd_args(int argc, char **argv, const char *const *need, int max)
{
	int have = argc - optind, i;

	for (i = 0; need[i]; i++)
		if (i >= have)
			return cmd_usage_error("missing %s", need[i]);
	if (max >= 0 && have > max)
		return cmd_usage_error("unexpected argument '%s'",
				       argv[optind + max]);
	return 0;
}

/* ---- main ----------------------------------------------------------- */

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage_all(stderr);
		return EXIT_FAIL;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage_all(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf(TOOL " " SSDP_TOOL_VERSION "\n");
		return EXIT_OK;
	}
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		current = &cmds[i];
		return cmds[i].fn(argc - 1, argv + 1);
	}
	err("unknown command '%s'", argv[1]);
	usage_all(stderr);
	return EXIT_FAIL;
}
