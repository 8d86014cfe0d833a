/* SPDX-License-Identifier: GPL-2.0 */
/* The identity of an origin only user space can read (origin_ident.c). */
#ifndef SSDP_TOOL_ORIGIN_IDENT_H
#define SSDP_TOOL_ORIGIN_IDENT_H

#include <stddef.h>

#include "ssdp_compat.h"

/*
 * The origin_id derived from @path's identity: returns its SSDP_DERIVED_*
 * kind with @id filled; 0 when there is none to derive (the kernel checks
 * the device by itself, or nothing identifies it); -errno when the device
 * should have one and it cannot be read.  @what always says which, for
 * a message.
 */
int origin_ident(const char *path, u8 id[16], char *what, size_t len);

#endif
