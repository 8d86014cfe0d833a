/* SPDX-License-Identifier: GPL-2.0 */
/* Waiting on a device's device-mapper events (tools/events.c). */
#ifndef SSDP_TOOL_EVENTS_H
#define SSDP_TOOL_EVENTS_H

#include <stdint.h>

#include "dm_status.h"

/*
 * Sleep on @name's events until @u holds (ST_UNTIL_NEXT: the next event)
 * or @timeout seconds pass (0: no bound), then print the state, the line
 * starting with @word when @u holds.  Returns an exit code: 0, EXIT_BAD
 * (the last flush failed), EXIT_TIMEOUT, EXIT_FAIL (no such device).
 */
int wait_until(const char *name, const char *word, enum st_until u,
	       double timeout);

/* @name's event number; -1 when it cannot be read (no such device). */
int event_nr(const char *name, uint32_t *nr);

/*
 * Sleep until @name's event number is no longer @nr (read before the
 * status it goes with, so no change is missed) or @secs pass; a signal
 * without SA_RESTART ends it too.
 */
void event_sleep(const char *name, uint32_t nr, double secs);

#endif
