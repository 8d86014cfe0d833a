/* SPDX-License-Identifier: GPL-2.0 */
/* ssdprio-tool's messages: stderr, and the kernel log when kmsg_fd is open. */
#ifndef SSDP_TOOL_MSG_H
#define SSDP_TOOL_MSG_H

#include <syslog.h>

#ifndef TOOL
#define TOOL		"ssdprio-tool"
#endif

/* The kernel's __printf (over two lines: checkpatch wants the kernel's). */
#define __printf(a, b)	__attribute__((				\
	format(printf, a, b)))

/*
 * /dev/kmsg opened for writing by activate --udev and the boot commands
 * (udev and early boot have no journal yet); -1: stderr only.
 */
extern int kmsg_fd;

void __printf(2, 3) logmsg(int level, const char *fmt, ...);

#define err(...)	logmsg(LOG_ERR, __VA_ARGS__)
#define notice(...)	logmsg(LOG_NOTICE, __VA_ARGS__)

#endif
