/* SPDX-License-Identifier: GPL-2.0 */
/* What ssdprio-tool's commands share (tools/util.c, tools/cmd_table.c). */
#ifndef SSDP_TOOL_UTIL_H
#define SSDP_TOOL_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "cache_scan.h"
#include "msg.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/* A device activated from the tab is named by its cache's uuid. */
#define DM_UUID_PREFIX		"SSDPRIO-"

/* A growing string; exits on a failed allocation. */
struct sbuf {
	char *s;
	size_t len, cap;
};

void __printf(2, 3) sbuf_add(struct sbuf *b, const char *fmt, ...);

struct dev {
	const char *path;
	int fd;
	u64 sectors;
	bool blk;
};

/*
 * Open @path (O_RDONLY or O_RDWR in @flags), O_DIRECT where it works, and
 * find its size.  Returns 0 or -errno (reported).
 */
int dev_open(struct dev *d, const char *path, int flags);
void dev_close(struct dev *d);
/* True when a block device has holders (a live dm table, md, bcache). */
bool dev_held(const char *path);
/* Open @path and scan it; the scan's negative errno is reported. */
int scan_path(const char *path, struct dev *d, struct ssdp_scan *s, int flags);

const char *hex(const u8 *p, size_t n, char *out);
const char *uuid_str(const u8 u[16], char out[37]);
bool id_set(const u8 id[16]);
const char *human(u64 bytes, char out[32]);
const char *time_str(u64 t, char out[40]);
void json_str(const char *s);
/* A version this module refuses (SSDP_SB_OLD_VERSION), and why. */
const char *old_version_text(u32 version);
/* What a superblock's state means, for messages. */
const char *sb_res_text(enum ssdp_sb_result r, u32 version);
u64 blocks_bytes(const struct ssdp_scan *s, u64 blocks);
/* An origin_id: 32 hex digits, not all zero. */
bool parse_id(const char *v, u8 id[16]);
/*
 * The kernel's reason for a refused table, from /dev/kmsg opened (and
 * moved to its end) as @fd before the load.
 */
bool kmsg_reason(int fd, char *out, size_t len);
/* A zero superblock sector about to be formatted: nothing else on it? */
bool blank_for_format(const char *cache);

/* cmd_table.c: the table lines of a cache. */
int build_table(const char *origin, const char *cache, int nfeat,
		char **feat, bool allow_format, struct sbuf *out,
		struct ssdp_scan *scan_out);
int format_table(const char *origin, const char *cache, int nfeat,
		 char **feat, struct sbuf *out);

#endif
