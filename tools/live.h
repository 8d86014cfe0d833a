/* SPDX-License-Identifier: GPL-2.0 */
/* ssdprio-tool's live subcommands (tools/live.c), on the kernel's devices. */
#ifndef SSDP_TOOL_LIVE_H
#define SSDP_TOOL_LIVE_H

int cmd_status(int argc, char **argv);
int cmd_flush(int argc, char **argv);
int cmd_detach(int argc, char **argv);

#endif
