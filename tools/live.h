/* SPDX-License-Identifier: GPL-2.0 */
/* ssdprio-tool's live subcommands (tools/live.c), on the kernel's devices. */
#ifndef SSDP_TOOL_LIVE_H
#define SSDP_TOOL_LIVE_H

#include <stdbool.h>

#include "dm_status.h"

int cmd_status(int argc, char **argv);
int cmd_flush(int argc, char **argv);
int cmd_detach(int argc, char **argv);
/*
 * The status of device @name into @st.  Returns 0, 1 when the device
 * has no ssdprio target (@quiet: not reported), -1 on error (reported).
 */
int dm_status_get(const char *name, struct dm_status *st, bool quiet);

#endif
