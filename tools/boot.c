// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool systemd-generator: one ssdprio@NAME.service per ssdpriotab
 * entry (systemd.generator(7)).  The template unit (tools/systemd/) does
 * the work: `activate --wait` and, at shutdown, `deactivate`.  What the
 * generator adds per entry is what only the tab knows:
 *  - an entry without nofail is required by local-fs-pre.target and
 *    ordered before it, so file systems on it mount after it exists and
 *    are unmounted before it is removed;
 *  - a nofail entry is only wanted by local-fs.target, unordered: a disk
 *    that never comes delays nothing, and its mount (nofail in fstab too)
 *    waits for /dev/mapper/NAME on its own;
 *  - how long to wait for the disks (device_timeout), and so how long a
 *    mount waits for /dev/mapper/NAME.
 * A generator must not fail the boot: bad lines are reported and skipped.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "msg.h"
#include "tab.h"

#ifndef SSDP_UNITDIR
#define SSDP_UNITDIR	"/usr/lib/systemd/system"
#endif
#define UNIT_TEMPLATE	"ssdprio@.service"

/*
 * The unit's instance for a tab name, escaped as systemd-escape does
 * (systemd.unit(5), "String Escaping"): the template's %I gives the
 * name back.  Without it a '-' would come back as '/' and a '+' is not
 * allowed in a unit name at all.
 */
static void unit_instance(const char *name, char *out, size_t len)
{
	size_t o = 0;
	const char *p;

	for (p = name; *p && o + 5 < len; p++) {
		unsigned char c = *p;

		if (isalnum(c) || c == '_' || (c == '.' && p != name))
			out[o++] = c;
		else
			o += snprintf(out + o, len - o, "\\x%02x", c);
	}
	out[o] = 0;
}

static int mkdir_p(const char *dir)
{
	if (mkdir(dir, 0755) && errno != EEXIST) {
		err("generator: %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* DIR/TARGET.{wants,requires}/ssdprio@NAME.service -> the template. */
static int link_unit(const char *dir, const char *target, const char *kind,
		     const char *inst)
{
	char d[4096], l[4096 + 160];

	if ((size_t)snprintf(d, sizeof(d), "%s/%s.%s", dir, target, kind) >=
	    sizeof(d)) {
		err("generator: %s: path too long", dir);
		return -1;
	}
	snprintf(l, sizeof(l), "%s/ssdprio@%s.service", d, inst);
	if (mkdir_p(d))
		return -1;
	if (symlink(SSDP_UNITDIR "/" UNIT_TEMPLATE, l) && errno != EEXIST) {
		err("generator: %s: %s", l, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Opens @dir/@unit.d/50-ssdpriotab.conf for writing (@unit, e.g.
 * "dev-mapper-NAME.device"), its path in @f; NULL after saying why.
 */
static FILE *open_dropin(const char *dir, const char *unit, char *f,
			 size_t f_size)
{
	char d[4096];
	FILE *out;

	if ((size_t)snprintf(d, sizeof(d), "%s/%s.d", dir, unit) >= sizeof(d) ||
	    (size_t)snprintf(f, f_size, "%s/50-ssdpriotab.conf", d) >= f_size) {
		err("generator: %s: path too long", dir);
		return NULL;
	}
	if (mkdir_p(d))
		return NULL;
	out = fopen(f, "we");
	if (!out)
		err("generator: %s: %s", f, strerror(errno));
	return out;
}

static int close_dropin(FILE *out, const char *f)
{
	if (fclose(out)) {
		err("generator: %s: %s", f, strerror(errno));
		return -1;
	}
	return 0;
}

static int write_dropin(const char *dir, const char *tab,
			const struct tab_entry *e, const char *inst)
{
	char unit[4096], f[4096 + 32];
	FILE *out;

	snprintf(unit, sizeof(unit), "ssdprio@%s.service", inst);
	out = open_dropin(dir, unit, f, sizeof(f));
	if (!out)
		return -1;
	fprintf(out, "# Written by " TOOL " systemd-generator from %s line %d\n"
		"[Unit]\nSourcePath=%s\n", tab, e->line, tab);
	if (!e->nofail)
		fprintf(out, "Before=local-fs-pre.target\n");
	/* The tool gives up first and says why; systemd's limit is a backstop. */
	fprintf(out, "\n[Service]\nEnvironment=SSDPRIO_DEVICE_TIMEOUT=%u\n"
		"TimeoutStartSec=%u\n", e->device_timeout,
		e->device_timeout + 60);
	return close_dropin(out, f);
}

/*
 * A mount of /dev/mapper/NAME waits for its device unit, by default for
 * systemd's 90 s: as long as the service may take instead, or a
 * device_timeout above that would not help an fstab line (fstab's
 * x-systemd.device-timeout writes the same drop-in).
 */
static int write_device_dropin(const char *dir, const struct tab_entry *e,
			       const char *inst)
{
	char unit[4096], f[4096 + 32];
	FILE *out;

	snprintf(unit, sizeof(unit), "dev-mapper-%s.device", inst);
	out = open_dropin(dir, unit, f, sizeof(f));
	if (!out)
		return -1;
	fprintf(out, "# Written by " TOOL " systemd-generator\n"
		"[Unit]\nJobRunningTimeoutSec=%u\n", e->device_timeout + 60);
	return close_dropin(out, f);
}

int cmd_systemd_generator(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tab", required_argument, NULL, 't' },
		OPT_HELP, OPT_END,
	};
	const char *tab = getenv("SSDPRIO_TAB");
	struct tab_entry *e = NULL;
	int n, i, c, bad = 0;
	char *text;

	if (!tab || !*tab)
		tab = DEFAULT_TAB;
	while ((c = cmd_getopt(argc, argv, "", opts)) != -1)
		if (c == 't')
			tab = optarg;
	if (cmd_args(argc, argv, ARGS("the output directory <dir>"), 3))
		return EXIT_FAIL;
	text = read_file(tab);
	if (!text) {
		if (errno != ENOENT)
			err("generator: %s: %s", tab, strerror(errno));
		return 0;	/* nothing configured */
	}
	n = tab_parse(tab, text, &e, &bad);
	if (n > 0)
		tab_check(tab, e, n);
	for (i = 0; i < n; i++) {
		char inst[4 * 128 + 1];

		if (e[i].bad)
			continue;
		unit_instance(e[i].name, inst, sizeof(inst));
		if (write_dropin(argv[optind], tab, &e[i], inst) ||
		    write_device_dropin(argv[optind], &e[i], inst))
			continue;
		if (e[i].nofail)
			link_unit(argv[optind], "local-fs.target", "wants",
				  inst);
		else
			link_unit(argv[optind], "local-fs-pre.target",
				  "requires", inst);
	}
	tab_free(e, n > 0 ? n : 0);
	free(text);
	return 0;
}
