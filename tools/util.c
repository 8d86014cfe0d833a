// SPDX-License-Identifier: GPL-2.0
/*
 * What ssdprio-tool's commands share: devices opened and scanned,
 * values formatted for people and JSON, the kernel's reason for a
 * refused table.  See util.h.
 */
#define _GNU_SOURCE	/* O_DIRECT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "signature.h"
#include "util.h"

void __printf(2, 3)
sbuf_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			abort();
		if ((size_t)n < room)
			break;
		b->cap = (b->cap + n + 1) * 2;
		b->s = realloc(b->s, b->cap);
		if (!b->s) {
			perror(TOOL);
			exit(EXIT_FAIL);
		}
	}
	b->len += n;
}

/*
 * Open @path (O_RDONLY or O_RDWR in @flags), O_DIRECT where it works, and
 * find its size.  Returns 0 or -errno (reported).
 */
int dev_open(struct dev *d, const char *path, int flags)
{
	struct stat st;
	u64 bytes;

	memset(d, 0, sizeof(*d));
	d->path = path;
	d->fd = open(path, flags | O_DIRECT | O_CLOEXEC);
	if (d->fd < 0 && errno == EINVAL)
		d->fd = open(path, flags | O_CLOEXEC);
	if (d->fd < 0) {
		int e = errno;

		err("%s: %s", path, e == EBUSY ?
		    "device is in use (a live table or a mount): remove that first" :
		    strerror(e));
		return -e;
	}
	if (fstat(d->fd, &st)) {
		err("%s: %s", path, strerror(errno));
		goto fail;
	}
	d->blk = S_ISBLK(st.st_mode);
	if (d->blk) {
		if (ioctl(d->fd, BLKGETSIZE64, &bytes)) {
			err("%s: BLKGETSIZE64: %s", path, strerror(errno));
			goto fail;
		}
	} else if (S_ISREG(st.st_mode)) {
		bytes = st.st_size;
	} else {
		err("%s: not a block device or a file", path);
		goto fail;
	}
	d->sectors = bytes >> SSDP_SECTOR_SHIFT;
	return 0;
fail:
	close(d->fd);
	d->fd = -1;
	return -EINVAL;
}

void dev_close(struct dev *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

/*
 * True when a block device has holders (a live dm table, md, bcache):
 * sysfs, so that looking does not disturb anyone (an O_EXCL probe would
 * make a concurrent table load fail).
 */
bool dev_held(const char *path)
{
	char dir[64];
	struct dirent *de;
	struct stat st;
	bool held = false;
	DIR *d;

	if (stat(path, &st) || !S_ISBLK(st.st_mode))
		return false;
	snprintf(dir, sizeof(dir), "/sys/dev/block/%u:%u/holders",
		 major(st.st_rdev), minor(st.st_rdev));
	d = opendir(dir);
	if (!d)
		return false;
	while (!held && (de = readdir(d)))
		held = de->d_name[0] != '.';
	closedir(d);
	return held;
}

/* Open @path and scan it; the scan's negative errno is reported. */
int scan_path(const char *path, struct dev *d, struct ssdp_scan *s,
		     int flags)
{
	int r = dev_open(d, path, flags);

	if (r)
		return r;
	r = scan_cache(d->fd, d->sectors, s);
	if (r) {
		err("%s: reading the metadata: %s", path, strerror(-r));
		dev_close(d);
	}
	return r;
}

const char *hex(const u8 *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = 0;
	return out;
}

const char *uuid_str(const u8 u[16], char out[37])
{
	char h[33];

	hex(u, 16, h);
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12,
		 h + 16, h + 20);
	return out;
}

bool id_set(const u8 id[16])
{
	int i;

	for (i = 0; i < 16; i++)
		if (id[i])
			return true;
	return false;
}

const char *human(u64 bytes, char out[32])
{
	static const char * const units[] = { "B", "KiB", "MiB", "GiB", "TiB",
					      "PiB" };
	double v = bytes;
	unsigned int u = 0;

	while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (!u)
		snprintf(out, 32, "%llu B", (unsigned long long)bytes);
	else
		snprintf(out, 32, "%.1f %s", v, units[u]);
	return out;
}

const char *time_str(u64 t, char out[40])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) ||
	    !strftime(out, 40, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(out, 40, "%llu", (unsigned long long)t);
	return out;
}

void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* An older format this module refuses (SSDP_SB_OLD_VERSION), by version. */
const char *old_version_text(u32 version)
{
	return version == 1 ?
	       "format version 1, written by an earlier ssdprio: this module refuses it (its data is not read: flush it with the earlier module, or wipe it and format anew)" :
	       "format version 2 with a set_size whose records this version lays out differently, written by an earlier ssdprio: this module refuses it (its data is not read: flush it with the earlier module, or wipe it and format anew)";
}

/* What a superblock's state means, for messages (@version: its field). */
const char *sb_res_text(enum ssdp_sb_result r, u32 version)
{
	return r == SSDP_SB_OLD_VERSION ? old_version_text(version) :
	       ssdp_sb_result_name(r);
}

u64 blocks_bytes(const struct ssdp_scan *s, u64 blocks)
{
	return blocks * s->sb.block_sectors << SSDP_SECTOR_SHIFT;
}

bool parse_id(const char *v, u8 id[16])
{
	int i;

	if (strlen(v) != 32)
		return false;
	for (i = 0; i < 16; i++) {
		unsigned int x;

		if (!isxdigit((unsigned char)v[2 * i]) ||
		    !isxdigit((unsigned char)v[2 * i + 1]) ||
		    sscanf(v + 2 * i, "%2x", &x) != 1)
			return false;
		id[i] = (u8)x;
	}
	return id_set(id);
}

/*
 * The kernel's reason for refusing a table: the ioctl only gets -EINVAL, the
 * text is in the kernel log ("device-mapper: table: 254:3: ssdprio:
 * <reason>").  @fd was opened on /dev/kmsg before the load and moved to
 * its end, so only records of this attempt are read; the latest wins.
 */
bool kmsg_reason(int fd, char *out, size_t len)
{
	static const char pfx[] = "ssdprio: ";
	char rec[2048];
	bool found = false;
	ssize_t r;

	if (fd < 0)
		return false;
	for (;;) {
		char *msg, *p;

		r = read(fd, rec, sizeof(rec) - 1);
		if (r < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (r <= 0)
			break;
		rec[r] = 0;
		msg = strchr(rec, ';');
		if (!msg || !strstr(msg, "device-mapper: table: "))
			continue;
		p = strstr(msg, pfx);
		if (!p)
			continue;
		p += strlen(pfx);
		p[strcspn(p, "\n")] = 0;
		/* The errno dm appends, " (-EINVAL)": the caller knows it. */
		msg = strstr(p, " (-E");
		if (msg && msg[strlen(msg) - 1] == ')')
			*msg = 0;
		snprintf(out, len, "%s", p);
		found = true;
	}
	return found;
}

/*
 * A cache with a zero superblock sector that is about to be formatted:
 * true when libblkid finds nothing else on it either (a file system,
 * an LVM label or an md member leaves that sector zero).
 */
bool blank_for_format(const char *cache)
{
	char what[128];
	int r = dev_signature(cache, what, sizeof(what));

	if (r == 0)
		return true;
	if (r > 0)
		err("%s: holds %s (blkid), not an ssdprio cache: --force to overwrite it",
		    cache, what);
	else
		err("%s: %s: --force to format it all the same", cache, what);
	return false;
}
