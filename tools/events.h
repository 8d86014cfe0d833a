/* SPDX-License-Identifier: GPL-2.0 */
/* Waiting on a device's device-mapper events (tools/events.c). */
#ifndef SSDP_TOOL_EVENTS_H
#define SSDP_TOOL_EVENTS_H

#include "dm_status.h"

/*
 * Sleep on @name's events until @u holds (ST_UNTIL_NEXT: the next event)
 * or @timeout seconds pass (0: no bound), then print the state, the line
 * starting with @word when @u holds.  Returns an exit code: 0, EXIT_BAD
 * (the last flush failed), EXIT_TIMEOUT, EXIT_FAIL (no such device).
 */
int wait_until(const char *name, const char *word, enum st_until u,
	       double timeout);

#endif
