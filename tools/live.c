// SPDX-License-Identifier: GPL-2.0
/*
 * The tool's one way to device-mapper: libdevmapper's ioctls, never a
 * dmsetup process (one process per poll would cost more than the poll,
 * and dmsetup's output is not an interface).  Creating, renaming and
 * removing a device are synchronised with udev as dmsetup does it: the
 * /dev/mapper node is there, or gone, when the call returns.  Where the
 * caller reports the failure itself (dm_create, dm_remove, dm_set_uuid,
 * dm_load_table), libdevmapper's own messages are kept for it
 * (dm_last_error) instead of being printed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libdevmapper.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_status.h"
#include "live.h"
#include "msg.h"

/* ---- libdevmapper's messages, kept for the caller's own ---------------- */

static char last_error[512];

static void __printf(5, 6) keep_log(int level, const char *file, int line,
				    int dm_errno, const char *f, ...)
{
	size_t len = strlen(last_error);
	va_list ap;

	(void)file;
	(void)line;
	(void)dm_errno;
	/* Errors and warnings only: the rest is libdevmapper's chatter. */
	if ((level & 7) > 4 || len + 3 >= sizeof(last_error))
		return;
	if (len)
		len += snprintf(last_error + len, sizeof(last_error) - len,
				"; ");
	va_start(ap, f);
	vsnprintf(last_error + len, sizeof(last_error) - len, f, ap);
	va_end(ap);
}

static void keep_start(void)
{
	last_error[0] = 0;
	dm_log_with_errno_init(keep_log);
}

static void keep_end(void)
{
	dm_log_with_errno_init(NULL);
	if (!last_error[0])
		snprintf(last_error, sizeof(last_error), "%s",
			 strerror(errno ? errno : EIO));
}

const char *dm_last_error(void)
{
	return last_error;
}

/* ---- reading ------------------------------------------------------------ */

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
int dm_list_ssdprio(char ***out)
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

int dm_message(const char *name, const char *msg)
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

/*
 * The first target of @name's live table into @t (malloc'd strings:
 * dm_target_free), and how many targets it has.  Returns 0, or -1 with
 * the reason reported.
 */
int dm_table_get(const char *name, struct dm_target *t)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_TABLE);
	uint64_t start, length;
	char *type = NULL, *params = NULL;
	struct dm_info info;
	void *next;
	int r = -1;

	memset(t, 0, sizeof(*t));
	if (!dmt)
		return -1;
	if (!dm_task_set_name(dmt, name) || !dm_task_run(dmt) ||
	    !dm_task_get_info(dmt, &info) || !info.exists) {
		fprintf(stderr, TOOL ": %s: no such device\n", name);
		goto out;
	}
	next = dm_get_next_target(dmt, NULL, &start, &length, &type, &params);
	if (!type) {
		fprintf(stderr, TOOL ": %s: no table\n", name);
		goto out;
	}
	t->start = start;
	t->len = length;
	t->type = strdup(type);
	t->params = strdup(params ? params : "");
	for (t->nr = 1; next; t->nr++)
		next = dm_get_next_target(dmt, next, &start, &length, &type,
					  &params);
	r = 0;
out:
	dm_task_destroy(dmt);
	return r;
}

void dm_target_free(struct dm_target *t)
{
	free(t->type);
	free(t->params);
	t->type = NULL;
	t->params = NULL;
}

/*
 * Load @type @params as @name's table and resume it (udev synced).
 * Returns 0, -1 when the load was refused (the device is as it was), -2
 * when the resume failed (the device is suspended with the new table).
 */
int dm_reload_resume(const char *name, unsigned long long len,
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

/* ---- what dmsetup did for the tool, quietly ---------------------------- */

/*
 * Does @name exist?  Without device-mapper (not root, no dm-mod) nothing
 * does: no message, as `dmsetup info` run quietly said nothing either.
 */
bool dm_exists(const char *name)
{
	struct dm_task *dmt;
	struct dm_info info;
	bool r;

	keep_start();
	dmt = dm_task_create(DM_DEVICE_INFO);
	r = dmt && dm_task_set_name(dmt, name) && dm_task_run(dmt) &&
	    dm_task_get_info(dmt, &info) && info.exists;
	if (dmt)
		dm_task_destroy(dmt);
	keep_end();
	return r;
}

/* "start length type params", one target, into @dmt. */
static int add_line(struct dm_task *dmt, const char *line)
{
	unsigned long long start, len;
	char type[64];
	int n = 0;

	if (sscanf(line, "%llu %llu %63s %n", &start, &len, type, &n) < 3 ||
	    !n) {
		snprintf(last_error, sizeof(last_error),
			 "not a table line: %s", line);
		return 0;
	}
	return dm_task_add_target(dmt, start, len, type, line + n);
}

/*
 * Run @dmt with a udev cookie and wait for udev to finish with the
 * device, as dmsetup does: the wait is also where libdevmapper makes or
 * removes the /dev/mapper node itself when udev is not running.
 */
static bool run_synced(struct dm_task *dmt)
{
	uint32_t cookie = 0;
	bool ok;

	ok = dm_task_set_cookie(dmt, &cookie, 0) && dm_task_run(dmt);
	dm_udev_wait(cookie);
	dm_task_destroy(dmt);
	return ok;
}

int dm_create(const char *name, const char *uuid, const char *table)
{
	struct dm_task *dmt;
	bool ok = false;

	keep_start();
	dmt = dm_task_create(DM_DEVICE_CREATE);
	if (dmt) {
		if (dm_task_set_name(dmt, name) &&
		    (!uuid || dm_task_set_uuid(dmt, uuid)) &&
		    add_line(dmt, table))
			ok = run_synced(dmt);
		else
			dm_task_destroy(dmt);
	}
	keep_end();
	return ok ? 0 : -1;
}

int dm_remove(const char *name, bool retry)
{
	struct dm_task *dmt;
	bool ok = false;

	keep_start();
	dmt = dm_task_create(DM_DEVICE_REMOVE);
	if (dmt) {
		if (dm_task_set_name(dmt, name) &&
		    (!retry || dm_task_retry_remove(dmt)))
			ok = run_synced(dmt);
		else
			dm_task_destroy(dmt);
	}
	keep_end();
	return ok ? 0 : -1;
}

int dm_set_uuid(const char *name, const char *uuid)
{
	struct dm_task *dmt;
	bool ok = false;

	keep_start();
	dmt = dm_task_create(DM_DEVICE_RENAME);
	if (dmt) {
		if (dm_task_set_name(dmt, name) &&
		    dm_task_set_newuuid(dmt, uuid))
			ok = run_synced(dmt);
		else
			dm_task_destroy(dmt);
	}
	keep_end();
	return ok ? 0 : -1;
}

int dm_load(const char *name, const char *table)
{
	struct dm_task *dmt;
	bool ok = false;

	keep_start();
	dmt = dm_task_create(DM_DEVICE_RELOAD);
	if (dmt) {
		ok = dm_task_set_name(dmt, name) && add_line(dmt, table) &&
		     dm_task_run(dmt);
		dm_task_destroy(dmt);
	}
	keep_end();
	return ok ? 0 : -1;
}

int dm_resume(const char *name)
{
	struct dm_task *dmt;
	bool ok = false;

	keep_start();
	dmt = dm_task_create(DM_DEVICE_RESUME);
	if (dmt) {
		if (dm_task_set_name(dmt, name))
			ok = run_synced(dmt);
		else
			dm_task_destroy(dmt);
	}
	keep_end();
	return ok ? 0 : -1;
}

/* As dm_message, the failure kept for the caller (dm_last_error). */
int dm_message_quiet(const char *name, const char *msg)
{
	int r;

	keep_start();
	r = dm_message(name, msg);
	keep_end();
	return r;
}
