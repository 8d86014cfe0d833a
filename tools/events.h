/* SPDX-License-Identifier: GPL-2.0 */
/* ssdprio-tool wait (tools/events.c): block on device-mapper events. */
#ifndef SSDP_TOOL_EVENTS_H
#define SSDP_TOOL_EVENTS_H

int cmd_wait(int argc, char **argv);

#endif
