/* SPDX-License-Identifier: GPL-2.0 */
/* ssdprio-tool's boot integration (tools/boot.c). */
#ifndef SSDP_TOOL_BOOT_H
#define SSDP_TOOL_BOOT_H

int cmd_systemd_generator(int argc, char **argv);

#endif
