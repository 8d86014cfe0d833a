/* SPDX-License-Identifier: GPL-2.0 */
/* What else a device holds, by libblkid's signatures (signature.c). */
#ifndef SSDP_TOOL_SIGNATURE_H
#define SSDP_TOOL_SIGNATURE_H

#include <stddef.h>

/*
 * Whether @path holds something libblkid knows (a file system, swap, an
 * LVM, md or bcache member, a partition table, ...): 1 with @what naming
 * it, 0 when it finds nothing, -1 when the device cannot be probed
 * (@what says why).
 */
int dev_signature(const char *path, char *what, size_t len);

#endif
