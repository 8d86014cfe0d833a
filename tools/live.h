/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tool's device-mapper calls (tools/live.c), all through
 * libdevmapper.  Names are device-mapper device names.
 */
#ifndef SSDP_TOOL_LIVE_H
#define SSDP_TOOL_LIVE_H

#include <stdbool.h>

#include "dm_status.h"

/*
 * The status of device @name into @st.  Returns 0, 1 when the device
 * has no ssdprio target (@quiet: not reported), -1 on error (reported).
 */
int dm_status_get(const char *name, struct dm_status *st, bool quiet);
/* Names of every ssdprio device, sorted; their number, -1 (reported). */
int dm_list_ssdprio(char ***out);
/* Send @msg to sector 0 of @name's table: 0 or -1. */
int dm_message(const char *name, const char *msg);

/* One target of a live table; nr: how many the table has. */
struct dm_target {
	unsigned long long start, len;
	char *type, *params;
	int nr;
};

int dm_table_get(const char *name, struct dm_target *t);
void dm_target_free(struct dm_target *t);
/*
 * Load "@type @params" over @len sectors as @name's table and resume it.
 * Returns 0, -1 when the load was refused (reported; the device is as it
 * was), -2 when the resume failed (reported; the device is suspended with
 * the new table).
 */
int dm_reload_resume(const char *name, unsigned long long len,
		     const char *type, const char *params);

/*
 * These report nothing: on failure (-1) dm_last_error() says what
 * libdevmapper said, for the caller's own message.  @table is one line,
 * "start length type params".  create, remove, set_uuid and resume wait
 * for udev, as dmsetup does, so /dev/mapper/NAME is there (or gone).
 */
bool dm_exists(const char *name);
int dm_create(const char *name, const char *uuid, const char *table);
int dm_remove(const char *name, bool retry);
int dm_set_uuid(const char *name, const char *uuid);
int dm_load(const char *name, const char *table);
int dm_resume(const char *name);
int dm_message_quiet(const char *name, const char *msg);
const char *dm_last_error(void);

#endif
