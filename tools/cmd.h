/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ssdprio-tool's commands.  The table in ssdprio-tool.c gives each its
 * handler, usage and summary: the one place the usage is written.  The
 * handlers are in cmd_*.c (and boot.c); what several of them share is in
 * util.h.
 */
#ifndef SSDP_TOOL_CMD_H
#define SSDP_TOOL_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "msg.h"

/* Exit codes (docs/tools.md, ssdprio-tool(8)). */
#define EXIT_OK		0
#define EXIT_FAIL	1	/* usage, I/O, an unusable argument */
#define EXIT_NOSB	2	/* no usable superblock */
#define EXIT_BAD	3	/* inconsistent, refused, not activated */
#define EXIT_TIMEOUT	4	/* --timeout passed */
#define EXIT_INTR	130	/* SIGINT or SIGTERM */

struct tool_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	/* What follows "ssdprio-tool NAME"; a second form after a '\n'. */
	const char *usage;
	const char *summary;
	bool hidden;		/* for tests: not in the overall usage */
};

/*
 * getopt_long for the running command (argv[0] is its name).  Returns the
 * option, -1 at the end.  --help prints the command's usage and exits 0;
 * an unknown option, or one without its value, is named, with the usage,
 * and exits EXIT_FAIL.
 */
int cmd_getopt(int argc, char **argv, const char *shortopts,
	       const struct option *opts);
/* "ssdprio-tool CMD: <what>" and the command's usage on stderr: EXIT_FAIL. */
int __printf(1, 2) cmd_usage_error(const char *fmt, ...);
/*
 * The arguments after the options: @need names the required ones (NULL
 * ends the list), @max how many there may be (-1: any number).  Returns
 * 0, or EXIT_FAIL after naming the first one missing or the first extra.
 */
int cmd_args(int argc, char **argv, const char *const *need, int max);
#define ARGS(...)	((const char *const []){ __VA_ARGS__, NULL })
#define NO_ARGS		((const char *const []){ NULL })

#define OPT_HELP	{ "help", no_argument, NULL, 'h' }
#define OPT_END		{ NULL, 0, NULL, 0 }

/* cmd_inspect.c: a cache device's metadata, not in use. */
int cmd_show(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_dirty(int argc, char **argv);
int cmd_wipe(int argc, char **argv);
/* cmd_table.c: table lines and origin ids. */
int cmd_table(int argc, char **argv);
int cmd_gen_origin_id(int argc, char **argv);
int cmd_origin_id(int argc, char **argv);
/* cmd_activate.c: devices made and removed, by hand, at boot, by udev. */
int cmd_create(int argc, char **argv);
int cmd_activate(int argc, char **argv);
int cmd_deactivate(int argc, char **argv);
int cmd_udev_role(int argc, char **argv);
/* boot.c */
int cmd_systemd_generator(int argc, char **argv);
/* cmd_admin.c: live devices. */
int cmd_status(int argc, char **argv);
int cmd_flush(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_set(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_detach(int argc, char **argv);
/* cmd_debug.c: crafted metadata, for tests. */
int cmd_debug_record(int argc, char **argv);
int cmd_debug_placement(int argc, char **argv);

#endif
