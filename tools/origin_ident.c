// SPDX-License-Identifier: GPL-2.0
/*
 * The identity of an origin that only user space can read, for the
 * origin_id ssdprio-tool derives (engine/ssdprio_format.h): an md array's
 * UUID, or the serial or WWN of a whole disk.  The kernel identifies a
 * device-mapper origin, a partition and a SCSI/SATA disk by itself; this
 * covers what is left, so that an equal-size array or disk is refused
 * without the administrator having to choose an id.
 *
 * The properties come from udev: its database (/run/udev/data), or, when
 * the tool runs under udev for that very device, the event's environment
 * (the database is written after the event's programs ran).  md's UUID
 * falls back to `mdadm --detail --export`, a virtio disk's serial to
 * sysfs, so that the answer does not depend on udev having run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "meta_codec.h"
#include "origin_ident.h"

/* Strip trailing blanks and newlines in place. */
static char *chomp(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = 0;
	return s;
}

/* The first line of a sysfs file under /sys/dev/block/M:m, or false. */
static bool sysfs_read(dev_t dev, const char *attr, char *out, size_t len)
{
	char path[128];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%s", major(dev),
		 minor(dev), attr);
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fgets(out, len, f) != NULL;
	fclose(f);
	if (ok)
		chomp(out);
	return ok && *out;
}

static bool sysfs_has(dev_t dev, const char *attr)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%s", major(dev),
		 minor(dev), attr);
	return !access(path, F_OK);
}

/* Is the tool running as a udev program for @dev's own event? */
static bool event_of(dev_t dev)
{
	const char *ma = getenv("MAJOR"), *mi = getenv("MINOR");
	const char *sub = getenv("SUBSYSTEM");

	return ma && mi && sub && !strcmp(sub, "block") &&
	       (unsigned int)atoi(ma) == major(dev) &&
	       (unsigned int)atoi(mi) == minor(dev);
}

/* A udev property of @dev ("E:KEY=value" in its database record). */
static bool udev_prop(dev_t dev, const char *key, char *out, size_t len)
{
	char path[64], line[512];
	size_t klen = strlen(key);
	bool found = false;
	FILE *f;

	if (event_of(dev)) {
		const char *v = getenv(key);

		if (v && *v) {
			snprintf(out, len, "%s", v);
			return true;
		}
	}
	snprintf(path, sizeof(path), "/run/udev/data/b%u:%u", major(dev),
		 minor(dev));
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "E:", 2) || strncmp(line + 2, key, klen) ||
		    line[2 + klen] != '=')
			continue;
		snprintf(out, len, "%s", chomp(line + 3 + klen));
		found = *out != 0;
		break;
	}
	fclose(f);
	return found;
}

/* MD_UUID from `mdadm --detail --export PATH`. */
static bool mdadm_uuid(const char *path, char *out, size_t len)
{
	char *cmd = NULL, line[256];
	bool found = false;
	FILE *p;

	if (asprintf(&cmd, "mdadm --detail --export '%s' 2>/dev/null", path) < 0)
		return false;
	if (strchr(path, '\'')) {
		free(cmd);
		return false;
	}
	p = popen(cmd, "re");
	free(cmd);
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p))
		if (!strncmp(line, "MD_UUID=", 8)) {
			snprintf(out, len, "%s", chomp(line + 8));
			found = *out != 0;
		}
	pclose(p);
	return found;
}

/* One spelling for one array: mdadm prints hex digits in lower case. */
static void lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s += 'a' - 'A';
}

int origin_ident(const char *path, u8 id[16], char *what, size_t len)
{
	char v[256];
	struct stat st;
	dev_t dev;

	if (stat(path, &st)) {
		snprintf(what, len, "%s", strerror(errno));
		return -errno;
	}
	if (!S_ISBLK(st.st_mode)) {
		snprintf(what, len, "not a block device: no identity");
		return 0;
	}
	dev = st.st_rdev;
	if (sysfs_has(dev, "partition")) {
		snprintf(what, len, "a partition: the kernel checks its partition UUID");
		return 0;
	}
	if (sysfs_read(dev, "dm/uuid", v, sizeof(v))) {
		snprintf(what, len, "a device-mapper device: the kernel checks its DM UUID");
		return 0;
	}
	if (sysfs_has(dev, "md")) {
		if (!udev_prop(dev, "MD_UUID", v, sizeof(v)) &&
		    !mdadm_uuid(path, v, sizeof(v))) {
			snprintf(what, len, "an md array whose UUID neither udev nor mdadm reports");
			return -ENOENT;
		}
		lower(v);
		snprintf(what, len, "md array UUID %s", v);
		return ssdp_derived_id(SSDP_DERIVED_MD, v, id) ? -EINVAL :
								 (int)SSDP_DERIVED_MD;
	}
	if (sysfs_has(dev, "device/vpd_pg83")) {
		snprintf(what, len, "a SCSI/SATA disk: the kernel checks its WWN");
		return 0;
	}
	/*
	 * sysfs before udev: the same attribute must be found at every boot,
	 * and sysfs does not depend on udev having processed the disk.
	 */
	if (sysfs_read(dev, "serial", v, sizeof(v)) ||
	    sysfs_read(dev, "device/wwid", v, sizeof(v)) ||
	    udev_prop(dev, "ID_WWN", v, sizeof(v)) ||
	    udev_prop(dev, "ID_SERIAL", v, sizeof(v))) {
		snprintf(what, len, "disk serial %s", v);
		return ssdp_derived_id(SSDP_DERIVED_SERIAL, v, id) ? -EINVAL :
								     (int)SSDP_DERIVED_SERIAL;
	}
	snprintf(what, len, "no identity the kernel or udev knows (loop, nbd, a virtio disk without a serial)");
	return 0;
}
