/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ssdprio-tool status --prometheus: the status lines of ssdprio devices
 * as Prometheus' text exposition format (node_exporter's textfile
 * collector reads it).  Pure code, so that make unit tests it.
 */
#ifndef SSDP_METRICS_H
#define SSDP_METRICS_H

#include <stdio.h>

#include "dm_status.h"

/*
 * Write the metrics of @nr devices (parsed status lines, @st[i].name the
 * device name) to @f: per metric one # HELP and # TYPE line, then one
 * sample per device that has its key.  A metric no device has is left
 * out, so an older module's missing keys give no samples.
 */
void metrics_print(FILE *f, const struct dm_status *st, int nr);

/*
 * metrics_print into @path, atomically as the textfile collector needs:
 * written to @path.tmp, synced, renamed over @path, the directory synced.
 * Returns 0, or -1 with errno set (nothing is left at @path.tmp).
 */
int metrics_write_file(const char *path, const struct dm_status *st, int nr);

/* @s as a label value: backslash, double quote and newline escaped. */
void metrics_label_value(FILE *f, const char *s);

#endif
