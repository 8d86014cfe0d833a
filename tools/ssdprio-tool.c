// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool: inspect, check, activate and wipe dm-ssdprio cache devices.
 *
 *	ssdprio-tool show [--json] [--sets] <cache_dev>
 *	ssdprio-tool check <cache_dev>
 *	ssdprio-tool table <origin_dev> <cache_dev> [features...]
 *	ssdprio-tool wipe [--force] [--records] <cache_dev>
 *	ssdprio-tool gen-origin-id
 *	ssdprio-tool origin-id <origin_dev>
 *	ssdprio-tool create [--dry-run] [--force] name origin_dev cache_dev [features...]
 *	ssdprio-tool activate [--tab FILE] [--udev | --wait SECS] [--initramfs] [--dry-run] [name...]
 *	ssdprio-tool deactivate name...
 *	ssdprio-tool systemd-generator [--tab FILE] dir [early_dir late_dir]
 *	ssdprio-tool status [--json] [--watch [SECS]] [name...]
 *	ssdprio-tool status --prometheus [--output FILE] [name...]
 *	ssdprio-tool flush [--wait] [--timeout SECS] name
 *	ssdprio-tool wait [--until clean|degraded|failed|flushed] [--timeout SECS] name
 *
 * The on-SSD format is engine/ssdprio_format.h and the codec the
 * kernel's own engine/meta_codec.c; cache_scan.c reads the records the
 * way the kernel's load does.  Reads use O_DIRECT where the device allows
 * it, so they see what is on the device, not a stale page cache; on a
 * live table that is the last committed state.  See docs/tools.md.
 */
#define _GNU_SOURCE	/* O_DIRECT, pipe2 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "cache_scan.h"
#include "config.h"
#include "events.h"
#include "live.h"
#include "origin_ident.h"
#include "signature.h"
#include "msg.h"
#include "tab.h"
#include "boot.h"

#define TOOL			"ssdprio-tool"
#ifndef SSDP_TOOL_VERSION
#define SSDP_TOOL_VERSION	"0.1.0"
#endif
/* DM UUID of a device activated from the tab: prefix and the cache's uuid. */
#define DM_UUID_PREFIX		"SSDPRIO-"
#define ACTIVATE_LOCK		"/run/ssdprio-activate.lock"

/* Exit codes (docs/tools.md). */
#define EXIT_OK			0
#define EXIT_FAIL		1	/* usage, I/O, an unusable argument */
#define EXIT_NOSB		2	/* no usable superblock */
#define EXIT_BAD		3	/* inconsistent, refused, not activated */

/* ---- messages ------------------------------------------------------- */

int kmsg_fd = -1;

void __printf(2, 3)
logmsg(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, TOOL ": %s\n", buf);
	if (kmsg_fd >= 0) {
		/* One write() per record; not dprintf: /dev/kmsg has no SEEK_CUR. */
		char rec[1100];
		int n = snprintf(rec, sizeof(rec), "<%d>" TOOL "[%d]: %s\n",
				 LOG_USER | level, (int)getpid(), buf);

		if (n > 0 && write(kmsg_fd, rec, strlen(rec)) < 0)
			kmsg_fd = -1;
	}
}

static void usage_to(FILE *f)
{
	fputs("usage:\n"
	      "  " TOOL " show [--json] [--sets] <cache_dev>\n"
	      "  " TOOL " check <cache_dev>\n"
	      "  " TOOL " dirty <cache_dev>\n"
	      "  " TOOL " table <origin_dev> <cache_dev> [features...]\n"
	      "  " TOOL " wipe [--force] [--records] <cache_dev>\n"
	      "  " TOOL " gen-origin-id\n"
	      "  " TOOL " origin-id <origin_dev>\n"
	      "  " TOOL " create [--dry-run] [--force] <name> <origin_dev> <cache_dev> [features...]\n"
	      "  " TOOL " activate [--tab FILE] [--udev | --wait SECS] [--initramfs] [--dry-run] [name...]\n"
	      "  " TOOL " deactivate name...\n"
	      "  " TOOL " systemd-generator [--tab FILE] <dir> [<early_dir> <late_dir>]\n"
	      "  " TOOL " udev-role [--tab FILE]   (udev IMPORT{program})\n"
	      "  " TOOL " status [--json] [--watch [SECS]] [name...]\n"
	      "  " TOOL " status --prometheus [--output FILE] [name...]\n"
	      "  " TOOL " flush [--drain] [--wait] [--timeout SECS] name\n"
	      "  " TOOL " wait [--until clean|degraded|failed|flushed] [--timeout SECS] name\n"
	      "  " TOOL " detach [--timeout SECS] name\n"
	      "  " TOOL " attach [--force] name <cache_dev> [features...]\n"
	      "  " TOOL " set [--persist] [--tab FILE] name key value [key value...]\n"
	      "  " TOOL " set --list-keys\n"
	      "  " TOOL " --help | --version\n"
	      "See ssdprio-tool(8) and docs/tools.md.\n", f);
}

static int print_usage(void)
{
	usage_to(stderr);
	return EXIT_FAIL;
}

/*
 * getopt_long for a subcommand: argv[0] is its name.  Returns the option,
 * -1 at the end; --help prints the usage and exits 0, an unknown option
 * exits 1 (getopt has said which).
 */
static int sub_getopt(int argc, char **argv, const struct option *opts)
{
	int c;

	c = getopt_long(argc, argv, "h", opts, NULL);
	if (c == 'h') {
		usage_to(stdout);
		exit(EXIT_OK);
	}
	if (c == '?' || c == ':')
		exit(print_usage());
	return c;
}

#define OPT_HELP	{ "help", no_argument, NULL, 'h' }
#define OPT_END		{ NULL, 0, NULL, 0 }

/* ---- a growing string ----------------------------------------------- */

struct sbuf {
	char *s;
	size_t len, cap;
};

static void __printf(2, 3)
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

/* ---- devices -------------------------------------------------------- */

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
static int dev_open(struct dev *d, const char *path, int flags)
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

static void dev_close(struct dev *d)
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
static bool dev_held(const char *path)
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
static int scan_path(const char *path, struct dev *d, struct ssdp_scan *s,
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

/* ---- formatting ----------------------------------------------------- */

static const char *hex(const u8 *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = 0;
	return out;
}

static const char *uuid_str(const u8 u[16], char out[37])
{
	char h[33];

	hex(u, 16, h);
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12,
		 h + 16, h + 20);
	return out;
}

static bool id_set(const u8 id[16])
{
	int i;

	for (i = 0; i < 16; i++)
		if (id[i])
			return true;
	return false;
}

static const char *human(u64 bytes, char out[32])
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

static const char *time_str(u64 t, char out[40])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) ||
	    !strftime(out, 40, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(out, 40, "%llu", (unsigned long long)t);
	return out;
}

static void json_str(const char *s)
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
static const char *old_version_text(u32 version)
{
	return version == 1 ?
	       "format version 1, written by an earlier ssdprio: this module refuses it (its data is not read: flush it with the earlier module, or wipe it and format anew)" :
	       "format version 2 with a set_size whose records this version lays out differently, written by an earlier ssdprio: this module refuses it (its data is not read: flush it with the earlier module, or wipe it and format anew)";
}

/* What a superblock's state means, for messages (@version: its field). */
static const char *sb_res_text(enum ssdp_sb_result r, u32 version)
{
	return r == SSDP_SB_OLD_VERSION ? old_version_text(version) :
	       ssdp_sb_result_name(r);
}

static u64 blocks_bytes(const struct ssdp_scan *s, u64 blocks)
{
	return blocks * s->sb.block_sectors << SSDP_SECTOR_SHIFT;
}

/* ---- show ----------------------------------------------------------- */

/*
 * What a device without a good superblock holds: "blank" only when
 * libblkid finds nothing either (a file system leaves the superblock's
 * sector zero).
 */
static void print_not_a_cache(const char *path, const struct ssdp_scan *s)
{
	char what[128];

	if (s->sb_res == SSDP_SB_BLANK &&
	    dev_signature(path, what, sizeof(what)) == 1)
		printf("%s: no ssdprio superblock, but it holds %s (blkid): create and attach refuse it without --force\n",
		       path, what);
	else
		printf("%s: %s\n", path, s->sb_res == SSDP_SB_BLANK ?
		       "blank (no ssdprio superblock; a table with 'format' initialises it)" :
		       sb_res_text(s->sb_res, s->sb.version));
}

static const char *sb_state_key(enum ssdp_sb_result r)
{
	switch (r) {
	case SSDP_SB_OK:
		return "ok";
	case SSDP_SB_BLANK:
		return "blank";
	case SSDP_SB_FOREIGN:
		return "foreign";
	case SSDP_SB_BAD_CRC:
		return "bad_checksum";
	case SSDP_SB_OLD_VERSION:
		return "old_version";
	case SSDP_SB_BAD_VERSION:
		return "bad_version";
	case SSDP_SB_BAD_FEATURES:
		return "bad_features";
	case SSDP_SB_BAD_LAYOUT:
		return "bad_layout";
	}
	return "?";
}

/*
 * Formatted without an origin_id over an origin the kernel could not
 * identify: only the origin's size ties the cache to it.
 */
static bool size_only(const struct ssdp_sb_info *sb)
{
	return !id_set(sb->origin_id) &&
	       !(sb->compat & SSDP_SB_COMPAT_ORIGIN_UID);
}

/* What a derived origin_id was derived from, for show. */
static const char *derived_name(const u8 id[16])
{
	switch (ssdp_derived_kind(id)) {
	case SSDP_DERIVED_MD:
		return " (derived from the md array UUID)";
	case SSDP_DERIVED_SERIAL:
		return " (derived from the disk serial)";
	}
	return "";
}

static void show_text(const char *path, const struct ssdp_scan *s, bool live,
		      bool sets)
{
	const struct ssdp_sb_info *sb = &s->sb;
	const struct ssdp_layout *l = &s->layout;
	char u[37], h[33], b1[32], b2[32], t[40];
	u64 i;
	int k;

	printf("%s: ssdprio cache, format version %u\n", path, sb->version);
	printf("  uuid:          %s\n", uuid_str(sb->uuid, u));
	printf("  origin_id:     %s%s\n",
	       id_set(sb->origin_id) ? hex(sb->origin_id, 16, h) : "none",
	       derived_name(sb->origin_id));
	printf("  origin:        %llu sectors (%s), %llu origin sets\n",
	       (unsigned long long)sb->origin_sectors,
	       human(sb->origin_sectors << SSDP_SECTOR_SHIFT, b1),
	       (unsigned long long)s->nr_osets);
	printf("  cache device:  %llu sectors (%s) at format, %llu now\n",
	       (unsigned long long)sb->cache_sectors,
	       human(sb->cache_sectors << SSDP_SECTOR_SHIFT, b2),
	       (unsigned long long)s->dev_sectors);
	printf("  geometry:      block_size %u sectors (%s), set_size %u blocks (%s)\n",
	       sb->block_sectors, human((u64)sb->block_sectors << SSDP_SECTOR_SHIFT, b1),
	       sb->set_blocks, human(l->set_sectors << SSDP_SECTOR_SHIFT, b2));
	printf("  layout:        %llu cache sets from sector %llu; %u-byte records, 2 copies of %u sectors\n",
	       (unsigned long long)sb->nr_csets,
	       (unsigned long long)sb->data_start, sb->rec_bytes,
	       sb->rec_sectors);
	if (sb->compat & SSDP_SB_COMPAT_ORIGIN_UID && sb->origin_uid_type == SSDP_UID_DM_UUID)
		printf("  origin id:     DM UUID hash %s\n",
		       hex(sb->origin_uid, sb->origin_uid_len, h));
	else if (sb->compat & SSDP_SB_COMPAT_ORIGIN_UID &&
		 sb->origin_uid_type == SSDP_UID_PART_UUID)
		printf("  origin id:     partition UUID hash %s at sector %llu\n",
		       hex(sb->origin_uid, sb->origin_uid_len, h),
		       (unsigned long long)sb->origin_start);
	else if (sb->compat & SSDP_SB_COMPAT_ORIGIN_UID)
		printf("  origin disk:   id %s (designator type %u) at sector %llu\n",
		       hex(sb->origin_uid, sb->origin_uid_len, h),
		       sb->origin_uid_type,
		       (unsigned long long)sb->origin_start);
	if (size_only(sb))
		printf("  tied by:       origin size only (no origin_id, no origin id the kernel reads): any origin of %llu sectors is taken for it; to tie it, drain it and format it again with an origin_id (create ... origin_id $(%s gen-origin-id), the same in the tab), or with create over an md array or a disk with a serial\n",
		       (unsigned long long)sb->origin_sectors, TOOL);
	printf("  shutdown:      %s\n", !s->clean ?
	       "not clean (live, or not shut down cleanly: the next load keeps only the dirty blocks, clean ones are dropped)" :
	       sb->flags & SSDP_SB_NO_DIRTY ? "clean, no dirty blocks" :
	       "clean");
	if (sb->incompat & SSDP_SB_INCOMPAT_BYPASSED)
		printf("  bypassed:      yes (a 'cache off' table went live over it: the next caching table starts it empty)\n");
	if (sb->incompat & SSDP_SB_INCOMPAT_META_FAILED)
		printf("  failed:        yes (its metadata writes failed while in use: its records are out of date, no table loads it; wipe it)\n");
	printf("  seq:           %llu (newest record %llu)\n",
	       (unsigned long long)sb->seq,
	       (unsigned long long)s->max_rec_seq);
	printf("  formatted:     %s\n", time_str(sb->format_time, t));
	printf("  records:       %llu from copy 0, %llu from copy 1, %llu never written\n",
	       (unsigned long long)s->from_copy[0],
	       (unsigned long long)s->from_copy[1],
	       (unsigned long long)s->unwritten);
	printf("  mapped sets:   %llu of %llu (%llu free); tags used: %llu of %llu\n",
	       (unsigned long long)s->mapped_sets,
	       (unsigned long long)sb->nr_csets,
	       (unsigned long long)s->free_sets,
	       (unsigned long long)s->tags_used,
	       (unsigned long long)sb->nr_csets * SSDP_REC_TAGS);
	printf("  valid blocks:  %llu (%s)",
	       (unsigned long long)s->valid_blocks,
	       human(blocks_bytes(s, s->valid_blocks), b1));
	if (!s->clean)
		printf("; %llu once loaded (unclean: only dirty blocks are kept)",
		       (unsigned long long)s->load_valid_blocks);
	else if (s->load_valid_blocks != s->valid_blocks)
		printf("; %llu once loaded (a set whose other record copy is bad keeps only its dirty blocks)",
		       (unsigned long long)s->load_valid_blocks);
	putchar('\n');
	printf("  dirty blocks:  %llu (%s)\n",
	       (unsigned long long)s->dirty_blocks,
	       human(blocks_bytes(s, s->dirty_blocks), b2));
	printf("  torn records:  %llu\n",
	       (unsigned long long)s->found[SCAN_TORN].count);
	for (k = 0; k < SCAN_NR_KINDS; k++) {
		const struct scan_finding *f = &s->found[k];

		if (!f->count)
			continue;
		printf("  %s: %s: %llu (%s %llu): %s\n",
		       scan_severity_name(scan_severity(s, k)),
		       scan_kind_name(k), (unsigned long long)f->count,
		       k == SCAN_TRUNCATED ? "device sectors" : "first cache set",
		       (unsigned long long)f->first, scan_kind_text(k));
	}
	if (live)
		printf("  note: the device is held (a live table?): this is its last committed state\n");
	if (!sets)
		return;
	printf("  %10s %12s %4s %6s %6s %-12s %s\n", "cset", "seq", "copy",
	       "valid", "dirty", "other copy", "tags (tag:oset valid/dirty)");
	for (i = 0; i < s->nr_sets; i++) {
		const struct scan_set *ss = &s->sets[i];
		unsigned int tg;

		printf("  %10u %12llu %4u %6u %6u %-12s", ss->cset,
		       (unsigned long long)ss->seq, ss->copy, ss->valid,
		       ss->dirty, scan_other_name(ss->other));
		for (tg = 0; tg < SSDP_REC_TAGS; tg++)
			if (ss->tags[tg] != SSDP_REC_TAG_FREE)
				printf(" %u:%u %u/%u%s", tg, ss->tags[tg],
				       ss->tag_valid[tg], ss->tag_dirty[tg],
				       ss->past_origin & (1U << tg) ?
				       " (past the origin)" : "");
		putchar('\n');
	}
}

#define JU(key, v)	printf(",\n  \"%s\": %llu", key, (unsigned long long)(v))

static void show_json(const char *path, const struct ssdp_scan *s, bool live,
		      bool sets)
{
	const struct ssdp_sb_info *sb = &s->sb;
	char u[37], h[33], t[40];
	bool first = true;
	u64 i;
	int k;

	printf("{\n  \"device\": ");
	json_str(path);
	printf(",\n  \"superblock\": \"%s\"", sb_state_key(s->sb_res));
	JU("device_sectors", s->dev_sectors);
	printf(",\n  \"in_use\": %s", live ? "true" : "false");
	if (s->sb_res == SSDP_SB_OLD_VERSION) {
		JU("version", sb->version);
		printf(",\n  \"old_version\": true");
		printf(",\n  \"uuid\": \"%s\"", uuid_str(sb->uuid, u));
		printf(",\n  \"clean\": %s", s->clean ? "true" : "false");
	}
	if (s->sb_res != SSDP_SB_OK) {
		printf(",\n  \"message\": ");
		json_str(sb_res_text(s->sb_res, s->sb.version));
		printf("\n}\n");
		return;
	}
	printf(",\n  \"old_version\": false");
	JU("version", sb->version);
	printf(",\n  \"uuid\": \"%s\"", uuid_str(sb->uuid, u));
	if (id_set(sb->origin_id))
		printf(",\n  \"origin_id\": \"%s\"", hex(sb->origin_id, 16, h));
	else
		printf(",\n  \"origin_id\": null");
	switch (ssdp_derived_kind(sb->origin_id)) {
	case SSDP_DERIVED_MD:
		printf(",\n  \"origin_id_from\": \"md_uuid\"");
		break;
	case SSDP_DERIVED_SERIAL:
		printf(",\n  \"origin_id_from\": \"disk_serial\"");
		break;
	default:
		printf(",\n  \"origin_id_from\": %s",
		       id_set(sb->origin_id) ? "\"table\"" : "null");
	}
	JU("origin_sectors", sb->origin_sectors);
	JU("origin_sets", s->nr_osets);
	JU("cache_sectors", sb->cache_sectors);
	JU("block_sectors", sb->block_sectors);
	JU("set_blocks", sb->set_blocks);
	JU("total_sets", sb->nr_csets);
	JU("rec_bytes", sb->rec_bytes);
	JU("rec_sectors", sb->rec_sectors);
	JU("data_start", sb->data_start);
	printf(",\n  \"clean\": %s", s->clean ? "true" : "false");
	printf(",\n  \"bypassed\": %s",
	       sb->incompat & SSDP_SB_INCOMPAT_BYPASSED ? "true" : "false");
	printf(",\n  \"meta_failed\": %s",
	       sb->incompat & SSDP_SB_INCOMPAT_META_FAILED ? "true" : "false");
	if (sb->compat & SSDP_SB_COMPAT_ORIGIN_UID)
		printf(",\n  \"origin_uid\": \"%s\",\n  \"origin_uid_type\": %u",
		       hex(sb->origin_uid, sb->origin_uid_len, h),
		       sb->origin_uid_type);
	else
		printf(",\n  \"origin_uid\": null");
	printf(",\n  \"tied_by_size_only\": %s", size_only(sb) ? "true" : "false");
	JU("seq", sb->seq);
	JU("max_record_seq", s->max_rec_seq);
	JU("format_time", sb->format_time);
	printf(",\n  \"format_time_utc\": \"%s\"", time_str(sb->format_time, t));
	JU("mapped_sets", s->mapped_sets);
	JU("free_sets", s->free_sets);
	JU("tags_used", s->tags_used);
	JU("valid_blocks", s->valid_blocks);
	JU("dirty_blocks", s->dirty_blocks);
	/* After an unclean shutdown the load keeps only dirty blocks. */
	JU("load_mapped_sets", s->load_mapped_sets);
	JU("load_valid_blocks", s->load_valid_blocks);
	JU("load_dirty_blocks", s->load_dirty_blocks);
	printf(",\n  \"from_copy\": [%llu, %llu]",
	       (unsigned long long)s->from_copy[0],
	       (unsigned long long)s->from_copy[1]);
	JU("never_written", s->unwritten);
	JU("torn_records", s->found[SCAN_TORN].count);
	JU("errors", scan_errors(s));
	printf(",\n  \"findings\": [");
	for (k = 0; k < SCAN_NR_KINDS; k++) {
		const struct scan_finding *f = &s->found[k];

		if (!f->count)
			continue;
		printf("%s\n    {\"kind\": \"%s\", \"severity\": \"%s\", \"count\": %llu, \"first\": %llu, \"text\": ",
		       first ? "" : ",", scan_kind_name(k),
		       scan_severity_name(scan_severity(s, k)),
		       (unsigned long long)f->count,
		       (unsigned long long)f->first);
		json_str(scan_kind_text(k));
		putchar('}');
		first = false;
	}
	printf("%s]", first ? "" : "\n  ");
	if (sets) {
		printf(",\n  \"sets\": [");
		for (i = 0; i < s->nr_sets; i++) {
			const struct scan_set *ss = &s->sets[i];
			bool tfirst = true;
			unsigned int tg;

			printf("%s\n    {\"cset\": %u, \"seq\": %llu, \"copy\": %u, \"other\": \"%s\", \"valid\": %u, \"dirty\": %u, \"tags\": [",
			       i ? "," : "", ss->cset,
			       (unsigned long long)ss->seq, ss->copy,
			       scan_other_name(ss->other), ss->valid,
			       ss->dirty);
			for (tg = 0; tg < SSDP_REC_TAGS; tg++) {
				if (ss->tags[tg] == SSDP_REC_TAG_FREE)
					continue;
				printf("%s{\"tag\": %u, \"oset\": %u, \"valid\": %u, \"dirty\": %u, \"past_origin\": %s}",
				       tfirst ? "" : ", ", tg, ss->tags[tg],
				       ss->tag_valid[tg], ss->tag_dirty[tg],
				       ss->past_origin & (1U << tg) ?
				       "true" : "false");
				tfirst = false;
			}
			printf("]}");
		}
		printf("%s]", s->nr_sets ? "\n  " : "");
	}
	printf("\n}\n");
}

static int cmd_show(int argc, char **argv)
{
	bool json = false, sets = false, live;
	const char *path = NULL;
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "sets", no_argument, NULL, 's' },
		OPT_HELP, OPT_END,
	};
	struct ssdp_scan s;
	struct dev d;
	char u[37];
	int c;

	while ((c = sub_getopt(argc, argv, opts)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 's')
			sets = true;
	}
	if (optind + 1 != argc)
		return print_usage();
	path = argv[optind];
	if (scan_path(path, &d, &s, O_RDONLY))
		return EXIT_FAIL;
	live = dev_held(path);
	dev_close(&d);
	if (json) {
		show_json(path, &s, live, sets);
	} else if (s.sb_res == SSDP_SB_OLD_VERSION) {
		printf("%s: ssdprio cache %s: %s\n", path,
		       uuid_str(s.sb.uuid, u), old_version_text(s.sb.version));
	} else if (s.sb_res != SSDP_SB_OK) {
		print_not_a_cache(path, &s);
	} else {
		show_text(path, &s, live, sets);
	}
	scan_free(&s);
	return s.sb_res == SSDP_SB_OK ? EXIT_OK : EXIT_NOSB;
}

/*
 * Options of a command whose only argument is one device: after it,
 * argv[1] is that device.  Non-zero when the arguments are wrong.
 */
static int one_arg(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };

	while (sub_getopt(argc, argv, opts) != -1)
		;
	if (optind + 1 != argc)
		return -1;
	argv[1] = argv[optind];
	return 0;
}

/* ---- dirty ---------------------------------------------------------- */

/* One tag of a set, for listing dirty blocks in origin order. */
struct dirty_line {
	u32 oset;
	u32 tag;
	const struct scan_set *ss;
};

static int by_oset(const void *a, const void *b)
{
	const struct dirty_line *x = a, *y = b;

	return x->oset < y->oset ? -1 : x->oset > y->oset;
}

/*
 * The origin ranges whose newest data only the cache held at its last
 * commit (every flush and FUA write commits): what is lost from the origin
 * with the cache device.  One line per run, "<start sector> <sectors>",
 * in origin order.  Writes acknowledged since the last flush are not
 * listed, as a power cut may lose them too.
 */
static int cmd_dirty(int argc, char **argv)
{
	u64 i, b, start = 0, len = 0, total = 0, block_sectors, set_blocks;
	struct dirty_line *lines = NULL;
	u64 nr_lines = 0;
	struct ssdp_scan s;
	struct dev d;
	u32 t;

	if (one_arg(argc, argv))
		return print_usage();
	if (scan_path(argv[1], &d, &s, O_RDONLY))
		return EXIT_FAIL;
	dev_close(&d);
	if (s.sb_res != SSDP_SB_OK) {
		err("%s: %s", argv[1], sb_res_text(s.sb_res, s.sb.version));
		scan_free(&s);
		return EXIT_NOSB;
	}
	if (dev_held(argv[1]))
		notice("%s is in use: this is its last durable metadata, not its live state",
		     argv[1]);
	block_sectors = s.sb.block_sectors;
	set_blocks = s.sb.set_blocks;
	/* Tags with dirty blocks, within the origin (the kernel refuses others). */
	if (s.nr_sets) {
		lines = calloc(s.nr_sets * SSDP_REC_TAGS, sizeof(*lines));
		if (!lines) {
			err("out of memory");
			scan_free(&s);
			return EXIT_FAIL;
		}
	}
	for (i = 0; i < s.nr_sets; i++)
		for (t = 0; t < SSDP_REC_TAGS; t++)
			if (s.sets[i].tags[t] != SSDP_REC_TAG_FREE &&
			    s.sets[i].tag_dirty[t] &&
			    !(s.sets[i].past_origin & (1U << t))) {
				lines[nr_lines].oset = s.sets[i].tags[t];
				lines[nr_lines].tag = t;
				lines[nr_lines++].ss = &s.sets[i];
			}
	if (nr_lines)
		qsort(lines, nr_lines, sizeof(*lines), by_oset);
	for (i = 0; i < nr_lines; i++) {
		const struct scan_set *ss = lines[i].ss;

		for (b = 0; b < set_blocks; b++) {
			u64 sec = ((u64)lines[i].oset * set_blocks + b) *
				  block_sectors;
			int f = scan_set_frame(ss, set_blocks, s.sb.version,
					       lines[i].tag, b);

			if (f < 0 || !scan_set_dirty(ss, f))
				continue;
			total += block_sectors;
			if (len && start + len == sec) {
				len += block_sectors;
				continue;
			}
			if (len)
				printf("%llu %llu\n", (unsigned long long)start,
				       (unsigned long long)len);
			start = sec;
			len = block_sectors;
		}
	}
	if (len)
		printf("%llu %llu\n", (unsigned long long)start,
		       (unsigned long long)len);
	fprintf(stderr, "%s: %llu dirty sectors (%s shutdown)\n", argv[1],
		(unsigned long long)total, s.clean ? "clean" : "unclean");
	free(lines);
	scan_free(&s);
	return EXIT_OK;
}

/* ---- check ---------------------------------------------------------- */

static int cmd_check(int argc, char **argv)
{
	struct ssdp_scan s;
	unsigned int errors;
	struct dev d;
	char b[32];
	int k;

	if (one_arg(argc, argv))
		return print_usage();
	if (scan_path(argv[1], &d, &s, O_RDONLY))
		return EXIT_FAIL;
	dev_close(&d);
	if (s.sb_res != SSDP_SB_OK) {
		print_not_a_cache(argv[1], &s);
		scan_free(&s);
		return EXIT_NOSB;
	}
	for (k = 0; k < SCAN_NR_KINDS; k++) {
		const struct scan_finding *f = &s.found[k];

		if (f->count)
			printf("%s: %s: %llu %s (%s %llu)\n", argv[1],
			       scan_severity_name(scan_severity(&s, k)),
			       (unsigned long long)f->count, scan_kind_text(k),
			       k == SCAN_TRUNCATED ? "device sectors" :
			       "first cache set", (unsigned long long)f->first);
	}
	errors = scan_errors(&s);
	if (errors)
		printf("%s: INCONSISTENT: %u kind%s of error\n", argv[1], errors,
		       errors > 1 ? "s" : "");
	else
		printf("%s: consistent: %llu of %llu sets mapped, %llu valid blocks, %llu dirty (%s)%s\n",
		       argv[1], (unsigned long long)s.load_mapped_sets,
		       (unsigned long long)s.sb.nr_csets,
		       (unsigned long long)s.load_valid_blocks,
		       (unsigned long long)s.load_dirty_blocks,
		       human(blocks_bytes(&s, s.load_dirty_blocks), b),
		       s.clean ? "" :
		       ", not shut down cleanly: only the dirty blocks are kept");
	scan_free(&s);
	return errors ? EXIT_BAD : EXIT_OK;
}

/* ---- table ---------------------------------------------------------- */

static bool parse_id(const char *v, u8 id[16])
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
 * The table line that loads the cache on @cache in front of @origin, with
 * the geometry and origin_id of its superblock and the extra features
 * @feat (checked here: a typo fails now, not at boot).  'format' is
 * refused unless @allow_format.  Returns an EXIT_* code; the reason has
 * been reported.  @scan_out, if not NULL, gets the cache's scan.
 */
static int build_table(const char *origin, const char *cache, int nfeat,
		       char **feat, bool allow_format, struct sbuf *out,
		       struct ssdp_scan *scan_out)
{
	struct ssdp_config cfg, def;
	struct sbuf f = { 0 };
	struct ssdp_scan s;
	struct dev od, cd;
	unsigned int n = 0;
	char h[33];
	int i, r = EXIT_FAIL;

	if (scan_path(cache, &cd, &s, O_RDONLY))
		return EXIT_FAIL;
	dev_close(&cd);
	if (s.sb_res != SSDP_SB_OK) {
		if (s.sb_res == SSDP_SB_BLANK)
			notice("%s: cache is blank: format it once with a table carrying 'format'",
			       cache);
		else
			err("%s: %s", cache, sb_res_text(s.sb_res, s.sb.version));
		r = EXIT_NOSB;
		goto out;
	}
	if (s.found[SCAN_TRUNCATED].count) {
		err("%s: has %llu sectors, was formatted with %llu: the kernel will refuse it",
		    cache, (unsigned long long)s.dev_sectors,
		    (unsigned long long)s.sb.cache_sectors);
		r = EXIT_BAD;
		goto out;
	}
	if (dev_open(&od, origin, O_RDONLY))
		goto out;
	dev_close(&od);
	if (od.sectors != s.sb.origin_sectors) {
		/* As the kernel: a size change only where an id says who. */
		if (!(s.sb.compat & SSDP_SB_COMPAT_ORIGIN_UID) &&
		    !id_set(s.sb.origin_id)) {
			err("%s: has %llu sectors, but cache %s belongs to an origin of %llu sectors",
			    origin, (unsigned long long)od.sectors, cache,
			    (unsigned long long)s.sb.origin_sectors);
			r = EXIT_BAD;
			goto out;
		}
		notice("%s: resized from %llu to %llu sectors since the cache last saw it (the kernel checks it is the same origin by its id)",
		       origin, (unsigned long long)s.sb.origin_sectors,
		       (unsigned long long)od.sectors);
	}

	if (ssdp_derived_kind(s.sb.origin_id)) {
		char what[160];
		u8 now[16];
		int k = origin_ident(origin, now, what, sizeof(what));

		if (k <= 0 || memcmp(now, s.sb.origin_id, 16)) {
			err("%s: %s; cache %s belongs to the origin with origin_id %s (derived from its %s): another origin",
			    origin, what, cache, hex(s.sb.origin_id, 16, h),
			    ssdp_derived_kind(s.sb.origin_id) == SSDP_DERIVED_MD ?
			    "md array UUID" : "disk serial");
			r = EXIT_BAD;
			goto out;
		}
	}

	ssdp_config_defaults(&def);
	cfg = def;
	if (s.sb.block_sectors != def.block_sectors) {
		sbuf_add(&f, " block_size %u", s.sb.block_sectors);
		n += 2;
	}
	if (s.sb.set_blocks != def.set_blocks) {
		sbuf_add(&f, " set_size %u", s.sb.set_blocks);
		n += 2;
	}
	if (id_set(s.sb.origin_id)) {
		sbuf_add(&f, " origin_id %s", hex(s.sb.origin_id, 16, h));
		n += 2;
	}
	for (i = 0; i < nfeat; i++) {
		const char *key = feat[i], *val, *why;
		u8 id[16];

		if (!strcmp(key, "format")) {
			if (!allow_format) {
				err("'format' is not allowed here: activation never formats (format a cache once by hand)");
				r = EXIT_BAD;
				goto out;
			}
			sbuf_add(&f, " format");
			n++;
			continue;
		}
		if (i + 1 == nfeat) {
			err("feature '%s' needs a value", key);
			goto out;
		}
		val = feat[++i];
		if (!strcmp(key, "block_size") || !strcmp(key, "set_size")) {
			u32 have = key[0] == 'b' ? s.sb.block_sectors :
						   s.sb.set_blocks;
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(val, &end, 10);
			if (!isdigit((unsigned char)val[0]) || *end || errno) {
				err("%s %s: not a number", key, val);
				goto out;
			}
			if (v != have) {
				err("%s %s: the cache was formatted with %s %u", key,
				    val, key, have);
				r = EXIT_BAD;
				goto out;
			}
			continue;	/* already there when not the default */
		}
		if (!strcmp(key, "origin_id")) {
			if (!parse_id(val, id)) {
				err("origin_id must be 32 hex digits, not all zero");
				goto out;
			}
			if (memcmp(id, s.sb.origin_id, 16)) {
				err("origin_id %s: cache %s was formatted with origin_id %s: it belongs to another origin",
				    val, cache, id_set(s.sb.origin_id) ?
				    hex(s.sb.origin_id, 16, h) : "none");
				r = EXIT_BAD;
				goto out;
			}
			continue;
		}
		if (strcmp(key, "idle_cgroup") &&
		    ssdp_config_set(&cfg, key, val, SSDP_CFG_CTR, &why)) {
			err("feature %s %s: %s", key, val, why);
			goto out;
		}
		sbuf_add(&f, " %s %s", key, val);
		n += 2;
	}
	sbuf_add(out, "0 %llu ssdprio %s %s", (unsigned long long)od.sectors,
		 origin, cache);
	if (n)
		sbuf_add(out, " %u%s", n, f.s);
	r = EXIT_OK;
out:
	free(f.s);
	if (scan_out && r == EXIT_OK)
		*scan_out = s;
	else
		scan_free(&s);
	return r;
}

static int cmd_table(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };
	struct sbuf t = { 0 };
	int r;

	while (sub_getopt(argc, argv, opts) != -1)
		;
	if (argc - optind < 2)
		return print_usage();
	r = build_table(argv[optind], argv[optind + 1], argc - optind - 2,
			argv + optind + 2, true, &t, NULL);
	if (!r)
		printf("%s\n", t.s);
	free(t.s);
	return r;
}

/* ---- wipe ----------------------------------------------------------- */

static int zero_range(int fd, u64 sector, u64 nr)
{
	const size_t chunk = 1U << 20;
	void *z;
	int r = 0;

	if (posix_memalign(&z, 4096, chunk))
		return -ENOMEM;
	memset(z, 0, chunk);
	while (nr && !r) {
		size_t len = nr << SSDP_SECTOR_SHIFT > chunk ? chunk :
			     nr << SSDP_SECTOR_SHIFT;
		ssize_t w = pwrite(fd, z, len, sector << SSDP_SECTOR_SHIFT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EINVAL) {
			int fl = fcntl(fd, F_GETFL);

			if (fl >= 0 && (fl & O_DIRECT) &&
			    !fcntl(fd, F_SETFL, fl & ~O_DIRECT))
				continue;
		}
		if (w <= 0) {
			r = w < 0 ? -errno : -EIO;
			break;
		}
		sector += w >> SSDP_SECTOR_SHIFT;
		nr -= w >> SSDP_SECTOR_SHIFT;
	}
	free(z);
	return r;
}

static int cmd_wipe(int argc, char **argv)
{
	bool force = false, records = false;
	const char *path = NULL;
	struct ssdp_scan s;
	struct dev d;
	u64 at_risk;
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "records", no_argument, NULL, 'r' },
		OPT_HELP, OPT_END,
	};
	char b[32], u[37];
	int c, r;

	while ((c = sub_getopt(argc, argv, opts)) != -1) {
		if (c == 'f')
			force = true;
		else if (c == 'r')
			records = true;
	}
	if (optind + 1 != argc)
		return print_usage();
	path = argv[optind];
	/* O_EXCL: a live table or a mount has the device: EBUSY. */
	if (scan_path(path, &d, &s, O_RDWR | O_EXCL))
		return EXIT_FAIL;

	switch (s.sb_res) {
	case SSDP_SB_BLANK:
		printf("%s: already blank\n", path);
		r = EXIT_OK;
		goto out;
	case SSDP_SB_FOREIGN:
		if (!force) {
			err("%s: not an ssdprio cache: refusing to overwrite its first sectors (--force to do it anyway)",
			    path);
			r = EXIT_NOSB;
			goto out;
		}
		break;
	case SSDP_SB_OK:
		break;
	case SSDP_SB_OLD_VERSION:
		if (!force) {
			err("%s: %s; whatever dirty data it holds is lost with it: refusing to wipe (--force to wipe anyway)",
			    path, old_version_text(s.sb.version));
			r = EXIT_NOSB;
			goto out;
		}
		break;
	default:
		if (!force) {
			err("%s: %s: refusing to wipe a damaged superblock: whatever dirty data the cache holds is lost with it (--force to wipe anyway)",
			    path, sb_res_text(s.sb_res, s.sb.version));
			r = EXIT_NOSB;
			goto out;
		}
		break;
	}
	if (s.sb_res == SSDP_SB_OK) {
		at_risk = s.dirty_blocks;
		if (at_risk && !force) {
			err("%s: the cache holds %llu dirty blocks (%s) that the origin lacks%s: wiping would lose them",
			    path, (unsigned long long)at_risk,
			    human(blocks_bytes(&s, at_risk), b),
			    s.clean ? "" : " (not shut down cleanly)");
			err("load it, 'dmsetup message <dev> 0 flush_dirty', remove it, then wipe; or wipe --force");
			r = EXIT_BAD;
			goto out;
		}
		if (at_risk)
			notice("%s: --force: discarding %llu dirty blocks (%s)", path,
			       (unsigned long long)at_risk,
			       human(blocks_bytes(&s, at_risk), b));
	}
	r = zero_range(d.fd, 0, SSDP_SB_SECTORS);
	if (!r && records) {
		if (s.sb_res == SSDP_SB_OK)
			r = zero_range(d.fd, SSDP_SB_SECTORS,
				       SSDP_META_COPIES * (u64)s.sb.rec_sectors);
		else
			notice("%s: record area left alone (layout unknown); a new format never trusts old records",
			       path);
	}
	if (!r && fsync(d.fd))
		r = -errno;
	if (r) {
		err("%s: writing zeroes: %s", path, strerror(-r));
		r = EXIT_FAIL;
		goto out;
	}
	if (s.sb_res == SSDP_SB_OK)
		printf("%s: wiped the superblock%s of cache %s\n", path,
		       records ? " and the records" : "",
		       uuid_str(s.sb.uuid, u));
	else
		printf("%s: wiped the superblock\n", path);
	r = EXIT_OK;
out:
	dev_close(&d);
	scan_free(&s);
	return r;
}

/* ---- gen-origin-id -------------------------------------------------- */

static int cmd_gen_origin_id(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };
	u8 id[16];
	char h[33];

	while (sub_getopt(argc, argv, opts) != -1)
		;
	if (optind != argc)
		return print_usage();
	do {
		if (getrandom(id, sizeof(id), 0) != sizeof(id)) {
			err("getrandom: %s", strerror(errno));
			return EXIT_FAIL;
		}
	} while (!id_set(id) || ssdp_derived_kind(id));
	printf("%s\n", hex(id, 16, h));
	return EXIT_OK;
}

/* ---- activate ------------------------------------------------------- */

/*
 * Run a program: the NULL-terminated arguments after @outlen, at most 15.
 * Its output (stdout and stderr) goes into @out.  Returns its status.
 */
static int run_cmd(char *out, size_t outlen, ...)
{
	const char *argv[16];
	unsigned int argc = 0;
	va_list ap;
	int p[2], st;
	size_t got = 0;
	pid_t pid;

	va_start(ap, outlen);
	do {
		argv[argc] = va_arg(ap, const char *);
	} while (argv[argc] && ++argc < ARRAY_SIZE(argv) - 1);
	argv[argc] = NULL;
	va_end(ap);
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int nul = open("/dev/null", O_RDONLY);

		dup2(nul, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "%s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		char sink[256];
		bool room = got + 1 < outlen;
		ssize_t r = read(p[0], room ? out + got : sink,
				 room ? outlen - 1 - got : sizeof(sink));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (room)
			got += r;
	}
	close(p[0]);
	out[got] = 0;
	while (got && out[got - 1] == '\n')
		out[--got] = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static bool dm_exists(const char *name)
{
	char out[256];

	return run_cmd(out, sizeof(out), "dmsetup", "info", name, NULL) == 0;
}

struct activate_opts {
	bool udev, dry_run;
	bool initramfs;			/* the entries marked for it, and the named */
	unsigned int wait;		/* seconds to wait for the disks */
	dev_t udev_dev;			/* the device of the event */
};

static bool same_dev(const char *path, dev_t dev)
{
	struct stat st;

	return !stat(path, &st) && S_ISBLK(st.st_mode) && st.st_rdev == dev;
}

/* activate_one(): a device is missing (udev: wait for its event). */
#define ACT_WAIT	(-1)

/*
 * A disk that is there to be used: present and not empty.  An md array
 * or a LUN can be 0 sectors at "add" and get its size at "change".
 */
static bool disk_ready(const char *path)
{
	u64 bytes = 0;
	struct stat st;
	bool ok;
	int fd;

	if (stat(path, &st))
		return false;
	if (!S_ISBLK(st.st_mode))
		return S_ISREG(st.st_mode) && st.st_size > 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	ok = !ioctl(fd, BLKGETSIZE64, &bytes) && bytes;
	close(fd);
	return ok;
}

/*
 * The kernel's reason for refusing a table: dmsetup only gets -EINVAL, the
 * text is in the kernel log ("device-mapper: table: 254:3: ssdprio:
 * <reason>").  @fd was opened on /dev/kmsg before the load and moved to
 * its end, so only records of this attempt are read; the latest wins.
 */
static bool kmsg_reason(int fd, char *out, size_t len)
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
 * activate --wait: boot starts the entry's unit before udev may have seen
 * its disks.  Says once what it waits for; false when @secs ran out.
 */
static bool wait_disks(const struct tab_entry *e, unsigned int secs)
{
	struct timespec t0, now;
	bool said = false;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		const char *missing = !disk_ready(e->origin) ? e->origin :
				      !disk_ready(e->cache) ? e->cache : NULL;
		const char *role = missing == e->origin ? "origin" : "cache";
		struct stat st;

		if (!missing)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= (time_t)secs) {
			err("%s: %s %s did not appear within %u s (%s): not activated",
			    e->name, role, missing, secs,
			    stat(missing, &st) ? "not there" : "empty");
			return false;
		}
		if (!said)
			notice("%s: waiting up to %u s for %s %s", e->name,
			       secs, role, missing);
		said = true;
		usleep(250 * 1000);
	}
}

/* One entry: EXIT_OK when active (now or already), else why not. */
static int activate_one(const struct tab_entry *e, const char *tab,
			const struct activate_opts *o)
{
	char uuid[sizeof(DM_UUID_PREFIX) + 2 * 16];
	struct sbuf t = { 0 };
	struct ssdp_scan s;
	struct stat st;
	char out[1024];
	int r, kfd = -1;

	if (dm_exists(e->name)) {
		if (!o->udev)
			printf("%s: already active\n", e->name);
		return EXIT_OK;
	}
	if (!disk_ready(e->origin) || !disk_ready(e->cache)) {
		const char *missing = disk_ready(e->origin) ? e->cache : e->origin;

		/* udev: the other device's add or change event comes later. */
		if (o->udev) {
			notice("%s: waiting for %s %s (%s)", e->name,
			       missing == e->cache ? "cache" : "origin",
			       missing, stat(missing, &st) ?
			       "not there yet" : "empty so far");
			return ACT_WAIT;
		}
		err("%s: %s is %s", e->name, missing, stat(missing, &st) ?
		    "not there" : "empty (0 sectors)");
		return EXIT_BAD;
	}
	if (dev_held(e->cache)) {
		notice("%s: cache %s is held by another device (another table?): not activating",
		       e->name, e->cache);
		return EXIT_BAD;
	}
	/*
	 * An origin already in use on its own (LVM or md activated from the
	 * raw disk, a dm-linear): its users write around the cache, whose
	 * dirty blocks would later be written back over their data.
	 */
	if (dev_held(e->origin)) {
		notice("%s: origin %s is held by another device (LVM or md found its contents on it?): not activating; see the runbook",
		       e->name, e->origin);
		return EXIT_BAD;
	}
	r = build_table(e->origin, e->cache, e->nfeat, e->feat, false, &t, &s);
	if (r) {
		if (tab)
			notice("%s: not activated (%s line %d)", e->name, tab,
			       e->line);
		else
			notice("%s: not activated", e->name);
		return r;
	}
	/* A DM UUID: udev's rules and blkid tell our device by it. */
	strcpy(uuid, DM_UUID_PREFIX);
	hex(s.sb.uuid, sizeof(s.sb.uuid), uuid + strlen(uuid));
	if (o->dry_run) {
		printf("dmsetup create %s --uuid %s --table '%s'\n", e->name,
		       uuid, t.s);
		r = EXIT_OK;
		goto out;
	}
	kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kfd >= 0)
		lseek(kfd, 0, SEEK_END);
	r = run_cmd(out, sizeof(out), "dmsetup", "create", e->name, "--uuid",
		    uuid, "--table", t.s, NULL);
	if (r) {
		char why[512];

		if (kmsg_reason(kfd, why, sizeof(why)))
			err("%s: the kernel refused the table: %s; table: %s",
			    e->name, why, t.s);
		else
			err("%s: dmsetup create failed (%d): %s; table: %s",
			    e->name, r, out, t.s);
		r = EXIT_BAD;
		goto out;
	}
	notice("%s: activated: %s over %s, %llu sets mapped, %llu dirty blocks%s",
	       e->name, e->cache, e->origin,
	       (unsigned long long)s.load_mapped_sets,
	       (unsigned long long)s.load_dirty_blocks,
	       s.clean ? "" : " (after an unclean shutdown)");
	r = EXIT_OK;
out:
	if (kfd >= 0)
		close(kfd);
	scan_free(&s);
	free(t.s);
	return r;
}

/* Does @path name the event's device (its node, a link udev is making)? */
static bool event_names(const char *path, dev_t dev, const char *devname,
			const char *devlinks)
{
	size_t len = strlen(path);
	const char *p;

	if (same_dev(path, dev) || (devname && !strcmp(path, devname)))
		return true;
	/* At "add", the links of this very event do not exist yet. */
	for (p = devlinks; p && *p; p += strcspn(p, " ")) {
		p += strspn(p, " ");
		if (!strncmp(p, path, len) && (p[len] == ' ' || !p[len]))
			return true;
	}
	return false;
}

/*
 * udev IMPORT{program}: SSDPRIO_ROLE=origin|cache and SSDPRIO_NAME=<name>
 * when the event's device belongs to an ssdpriotab entry, nothing
 * otherwise.  The rules then hide it: the origin carries the same file
 * system as /dev/mapper/<name>, with older data.  Always exits 0: a udev
 * program that fails logs on every event.
 */
static int cmd_udev_role(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tab", required_argument, NULL, 't' },
		OPT_HELP, OPT_END,
	};
	const char *tab = getenv("SSDPRIO_TAB");
	const char *maj = getenv("MAJOR"), *min = getenv("MINOR");
	const char *devname = getenv("DEVNAME");
	const char *devlinks = getenv("DEVLINKS");
	struct tab_entry *e = NULL;
	int n, i, c, bad = 0;
	char *text;
	dev_t dev;

	if (!tab || !*tab)
		tab = DEFAULT_TAB;
	while ((c = sub_getopt(argc, argv, opts)) != -1)
		if (c == 't')
			tab = optarg;
	if (!maj || !min)
		return EXIT_OK;
	dev = makedev(atoi(maj), atoi(min));
	text = read_file(tab);
	if (!text)
		return EXIT_OK;
	/* Bad lines are activate's to report, once. */
	if (!freopen("/dev/null", "w", stderr))
		return EXIT_OK;
	n = tab_parse(tab, text, &e, &bad);
	for (i = 0; i < n; i++) {
		const char *role =
			event_names(e[i].origin, dev, devname, devlinks) ? "origin" :
			event_names(e[i].cache, dev, devname, devlinks) ? "cache" : NULL;

		if (role) {
			printf("SSDPRIO_ROLE=%s\nSSDPRIO_NAME=%s\n", role,
			       e[i].name);
			break;
		}
	}
	tab_free(e, n > 0 ? n : 0);
	free(text);
	return EXIT_OK;
}

/*
 * The entries to activate: those named, or all.  In the initramfs
 * (--initramfs) the entries marked "initramfs" and those named: the
 * local-top script names the root's entry, which needs no mark.
 */
static bool activate_selected(const struct tab_entry *e, char **names,
			      int nnames, bool initramfs)
{
	int j;

	for (j = 0; j < nnames && strcmp(e->name, names[j]); j++)
		;
	if (initramfs)
		return e->initramfs || j < nnames;
	return !nnames || j < nnames;
}

/* "--wait 90": whole seconds, 1 to a day. */
static int parse_secs(const char *s, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!isdigit((unsigned char)*s) || *end || errno || !v || v > 86400) {
		err("--wait %s: expected seconds, 1 to 86400", s);
		return -1;
	}
	*out = v;
	return 0;
}

static int cmd_activate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "udev", no_argument, NULL, 'u' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "tab", required_argument, NULL, 't' },
		{ "wait", required_argument, NULL, 'w' },
		{ "initramfs", no_argument, NULL, 'i' },
		OPT_HELP, OPT_END,
	};
	struct activate_opts o = { 0 };
	const char *tab = getenv("SSDPRIO_TAB");
	struct tab_entry *e = NULL;
	char **names = NULL, *text;
	int nnames = 0, n, i, j, c, lock = -1, r = EXIT_OK, bad = 0;
	int saved_kmsg;

	if (!tab || !*tab)
		tab = DEFAULT_TAB;
	names = calloc(argc, sizeof(*names));
	if (!names)
		return EXIT_FAIL;
	while ((c = sub_getopt(argc, argv, opts)) != -1) {
		if (c == 'u')
			o.udev = true;
		else if (c == 'n')
			o.dry_run = true;
		else if (c == 'i')
			o.initramfs = true;
		else if (c == 't')
			tab = optarg;
		else if (c == 'w' && parse_secs(optarg, &o.wait)) {
			free(names);
			return EXIT_FAIL;
		}
	}
	if (o.wait && o.udev) {
		err("activate: --wait is for boot units, not for udev");
		free(names);
		return EXIT_FAIL;
	}
	for (i = optind; i < argc; i++)
		names[nnames++] = argv[i];
	if (o.udev) {
		const char *maj = getenv("MAJOR"), *min = getenv("MINOR");
		const char *dn = getenv("DEVNAME");
		struct stat st;

		/* udev runs us with the event's properties only: no PATH. */
		setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 0);
		kmsg_fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
		if (maj && min)
			o.udev_dev = makedev(atoi(maj), atoi(min));
		else if (dn && !stat(dn, &st) && S_ISBLK(st.st_mode))
			o.udev_dev = st.st_rdev;
		else {
			err("activate --udev: no MAJOR/MINOR or DEVNAME in the environment");
			free(names);
			return EXIT_FAIL;
		}
	}
	text = read_file(tab);
	if (!text) {
		free(names);
		if (o.udev && errno == ENOENT)
			return EXIT_OK;	/* nothing configured */
		err("%s: %s", tab, strerror(errno));
		return EXIT_FAIL;
	}
	/*
	 * Under udev every block device's event reads the tab: a bad line
	 * goes to udev's log (stderr), not to the kernel log each time.
	 */
	saved_kmsg = kmsg_fd;
	kmsg_fd = -1;
	n = tab_parse(tab, text, &e, &bad);
	if (n > 0)
		bad += tab_check(tab, e, n);
	kmsg_fd = saved_kmsg;
	if (n < 0) {
		r = EXIT_FAIL;
		goto out;
	}
	if (bad) {
		err("%s: %d line%s refused", tab, bad, bad > 1 ? "s" : "");
		r = EXIT_BAD;
	}
	/*
	 * The initramfs names the root's device whatever it is (another dm
	 * device, LVM): a name not in the tab is none of ours there.
	 */
	for (j = 0; j < nnames && !o.initramfs; j++) {
		for (i = 0; i < n && strcmp(e[i].name, names[j]); i++)
			;
		if (i == n) {
			err("%s: no entry '%s'", tab, names[j]);
			r = EXIT_FAIL;
		}
	}
	/* Before the lock: udev activates other entries meanwhile. */
	for (i = 0; o.wait && i < n; i++) {
		if (e[i].bad ||
		    !activate_selected(&e[i], names, nnames, o.initramfs) ||
		    wait_disks(&e[i], o.wait))
			continue;
		e[i].bad = true;
		r = EXIT_BAD;
	}
	for (i = 0; i < n; i++) {
		int rr;

		if (!activate_selected(&e[i], names, nnames, o.initramfs) ||
		    e[i].bad)
			continue;
		if (o.udev && !same_dev(e[i].origin, o.udev_dev) &&
		    !same_dev(e[i].cache, o.udev_dev))
			continue;
		/*
		 * The events of an origin and its cache may race: one
		 * activation at a time.  Only for an entry of ours: the
		 * events of the dm devices we create run this tool too, and
		 * dmsetup waits for them (udev sync) while we hold the lock.
		 */
		if (lock < 0 && !o.dry_run) {
			lock = open(ACTIVATE_LOCK, O_RDWR | O_CREAT | O_CLOEXEC,
				    0600);
			if (lock >= 0)
				flock(lock, LOCK_EX);
		}
		rr = activate_one(&e[i], tab, &o);
		if (rr != ACT_WAIT && rr > r)
			r = rr;
	}
	if (lock >= 0)
		close(lock);
out:
	tab_free(e, n > 0 ? n : 0);
	free(text);
	free(names);
	return r;
}

/*
 * The file system @name holds that systemd cannot unmount ("/", "/usr"),
 * or NULL: removing it now would only fail.  The initramfs's shutdown
 * root removes it at the very end (/run/initramfs/shutdown).
 */
static const char *holds_system_fs(const char *name)
{
	static const char *const mnts[] = { "/", "/usr" };
	struct stat dev, st;
	char path[160];
	unsigned int i;

	snprintf(path, sizeof(path), "/dev/mapper/%s", name);
	if (stat(path, &dev) || !S_ISBLK(dev.st_mode))
		return NULL;
	for (i = 0; i < ARRAY_SIZE(mnts); i++)
		if (!stat(mnts[i], &st) && st.st_dev == dev.st_rdev)
			return mnts[i];
	return NULL;
}

/*
 * deactivate NAME...: the boot unit's stop.  A clean remove is what makes
 * the next load start warm and "clean"; a device that is not there is
 * fine (removed by hand, never activated).  Busy (still mounted, held):
 * dmsetup's --retry rides out udev's brief opens; past that it stays for
 * the shutdown's final detach, which removes it once nothing holds it.
 */
static int cmd_deactivate(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };
	char out[1024];
	int i, r = EXIT_OK;

	while (sub_getopt(argc, argv, opts) != -1)
		;
	if (optind >= argc)
		return print_usage();
	/* At shutdown the journal may be gone already: the kernel log stays. */
	kmsg_fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	for (i = optind; i < argc; i++) {
		const char *mnt;

		if (!dm_exists(argv[i])) {
			printf("%s: not active\n", argv[i]);
			continue;
		}
		mnt = holds_system_fs(argv[i]);
		if (mnt) {
			notice("%s: holds %s: left to the shutdown's last step, which removes it once %s is unmounted",
			       argv[i], mnt, mnt);
			continue;
		}
		if (run_cmd(out, sizeof(out), "dmsetup", "remove", "--retry",
			    argv[i], NULL)) {
			err("%s: not removed (%s): still in use?", argv[i], out);
			r = EXIT_BAD;
			continue;
		}
		notice("%s: removed cleanly", argv[i]);
	}
	return r;
}

/* ---- debug-record (tests only, not in the usage) --------------------- */

/* Write the 4 KiB block at byte @off from @buf (4 KiB aligned). */
static int write_block(int fd, u64 off, const void *buf)
{
	ssize_t w = pwrite(fd, buf, SSDP_META_BLOCK_BYTES, off);

	if (w != SSDP_META_BLOCK_BYTES)
		return w < 0 ? -errno : -EIO;
	return 0;
}

/*
 * debug-record [--allow-misplaced] <cache_dev> <cset> <tag> <oset|free>
 *		<first> <nr_valid> <nr_dirty>
 *
 * Crafts a metadata state the kernel must cope with, for tests: a
 * read-modify-write of cache set <cset>'s believed record (an empty one if
 * neither copy decodes).  Tag <tag> (0..14) becomes origin set <oset>,
 * which must be placed in <cset> (ssdp_oset_cset()) unless
 * --allow-misplaced, or free, and then its frames are freed too; else
 * frames [first, first + nr_valid) become the tag's and valid (whatever
 * owned them before), the first <nr_dirty> of them dirty.  The record is
 * written into both copies with the real codec and a seq newer than
 * anything on the device, and the superblock marked unclean, as a crash in
 * the middle of a commit leaves it.  Never on a live cache.
 */
static int cmd_debug_record(int argc, char **argv)
{
	unsigned long long cset, tag, oset, first, nvalid, ndirty;
	static const struct option opts[] = {
		{ "allow-misplaced", no_argument, NULL, 'm' },
		OPT_HELP, OPT_END,
	};
	struct ssdp_rec_view *v = NULL;
	u8 *recs[SSDP_META_COPIES] = { NULL, NULL };
	bool misplaced = false;
	struct ssdp_scan s;
	const char *path;
	u32 rpb, seed, blk_nr;
	unsigned int c, i;
	void *blk = NULL;
	struct dev d;
	int r = EXIT_FAIL;
	u64 off, seq;
	int o;

	while ((o = sub_getopt(argc, argv, opts)) != -1)
		if (o == 'm')
			misplaced = true;
	if (optind + 7 != argc)
		return print_usage();
	argv += optind;
	path = argv[0];
	cset = strtoull(argv[1], NULL, 0);
	tag = strtoull(argv[2], NULL, 0);
	oset = strcmp(argv[3], "free") ? strtoull(argv[3], NULL, 0) :
					  SSDP_REC_TAG_FREE;
	first = strtoull(argv[4], NULL, 0);
	nvalid = strtoull(argv[5], NULL, 0);
	ndirty = strtoull(argv[6], NULL, 0);
	if (scan_path(path, &d, &s, O_RDWR | O_EXCL))
		return EXIT_FAIL;
	if (s.sb_res != SSDP_SB_OK) {
		err("%s: %s", path, sb_res_text(s.sb_res, s.sb.version));
		goto out;
	}
	if (cset >= s.sb.nr_csets || tag >= SSDP_REC_TAGS ||
	    oset > SSDP_REC_TAG_FREE || first > s.sb.set_blocks ||
	    nvalid > s.sb.set_blocks - first || ndirty > nvalid ||
	    (oset == SSDP_REC_TAG_FREE && nvalid)) {
		err("debug-record: cset, tag, block range or oset out of range");
		goto out;
	}
	if (oset != SSDP_REC_TAG_FREE && !misplaced &&
	    ssdp_oset_cset(oset, s.sb.nr_csets) != cset) {
		err("debug-record: origin set %llu lives in cache set %u, not %llu (--allow-misplaced to write it anyway)",
		    oset, ssdp_oset_cset(oset, s.sb.nr_csets), cset);
		goto out;
	}
	v = calloc(SSDP_META_COPIES, sizeof(*v));
	recs[0] = malloc(SSDP_META_COPIES * SSDP_META_BLOCK_BYTES);
	recs[1] = recs[0] + SSDP_META_BLOCK_BYTES;
	if (!v || !recs[0] ||
	    posix_memalign(&blk, 4096, SSDP_META_BLOCK_BYTES)) {
		err("out of memory");
		goto out;
	}
	seed = ssdp_rec_seed(s.sb.uuid, s.sb.version);
	rpb = SSDP_META_BLOCK_BYTES / s.sb.rec_bytes;
	blk_nr = cset / rpb;
	/* The believed record, as the kernel would load it. */
	for (c = 0; c < SSDP_META_COPIES; c++) {
		off = ((SSDP_SB_SECTORS + (u64)c * s.sb.rec_sectors) <<
		       SSDP_SECTOR_SHIFT) + (u64)blk_nr * SSDP_META_BLOCK_BYTES;
		if (scan_read(d.fd, off, recs[c], SSDP_META_BLOCK_BYTES))
			goto io;
	}
	if (ssdp_rec_pick(recs[0] + (cset % rpb) * s.sb.rec_bytes,
			  recs[1] + (cset % rpb) * s.sb.rec_bytes,
			  s.sb.rec_bytes, seed, cset, s.sb.set_blocks,
			  s.sb.nr_csets, s.sb.version, &v[0], &v[1],
			  NULL) < 0) {
		/* Neither copy decodes: start from an empty record. */
		memset(&v[0], 0, sizeof(v[0]));
		memset(v[0].tags, 0xff, sizeof(v[0].tags));
		memset(v[0].owners, 0xff, sizeof(v[0].owners));
	}
	/* Free the tag's frames, then give it the range. */
	for (i = 0; i < s.sb.set_blocks; i++) {
		if (ssdp_rec_owner(&v[0], i) != tag)
			continue;
		v[0].owners[i / 2] |= 0xf << (i % 2 * 4);
		v[0].dirty[i / 8] &= ~(1U << (i % 8));
		v[0].alt[i / 8] &= ~(1U << (i % 8));
	}
	v[0].tags[tag] = oset;
	for (i = first; i < first + nvalid; i++) {
		v[0].owners[i / 2] &= ~(0xf << (i % 2 * 4));
		v[0].owners[i / 2] |= tag << (i % 2 * 4);
		v[0].alt[i / 8] &= ~(1U << (i % 8));
		if (i < first + ndirty)
			v[0].dirty[i / 8] |= 1U << (i % 8);
		else
			v[0].dirty[i / 8] &= ~(1U << (i % 8));
	}
	seq = (s.max_rec_seq > s.sb.seq ? s.max_rec_seq : s.sb.seq) + 1;
	v[0].seq = seq;
	for (c = 0; c < SSDP_META_COPIES; c++) {
		off = ((SSDP_SB_SECTORS + (u64)c * s.sb.rec_sectors) <<
		       SSDP_SECTOR_SHIFT) + (u64)blk_nr * SSDP_META_BLOCK_BYTES;
		if (scan_read(d.fd, off, blk, SSDP_META_BLOCK_BYTES))
			goto io;
		ssdp_rec_encode((u8 *)blk + (cset % rpb) * s.sb.rec_bytes,
				s.sb.rec_bytes, seed, cset, s.sb.set_blocks,
				&v[0]);
		if (write_block(d.fd, off, blk))
			goto io;
	}
	/* Unclean, as after a crash: the load keeps only dirty blocks. */
	s.sb.flags &= ~(SSDP_SB_CLEAN | SSDP_SB_NO_DIRTY);
	memset(blk, 0, SSDP_META_BLOCK_BYTES);
	if (scan_read(d.fd, 0, blk, SSDP_META_BLOCK_BYTES))
		goto io;
	ssdp_sb_encode(&s.sb, blk);
	if (write_block(d.fd, 0, blk) || fsync(d.fd))
		goto io;
	printf("%s: cset %llu tag %llu: oset %s blocks %llu+%llu dirty %llu seq %llu; superblock unclean\n",
	       path, cset, tag, argv[3], first, nvalid, ndirty,
	       (unsigned long long)seq);
	r = EXIT_OK;
	goto out;
io:
	err("%s: %s", path, strerror(errno ? errno : EIO));
out:
	free(blk);
	free(v);
	free(recs[0]);
	dev_close(&d);
	scan_free(&s);
	return r;
}

/*
 * debug-placement <cache_dev> <oset>...
 *
 * Prints "<oset> <cset>" for each origin set: the cache set it may live
 * in (ssdp_oset_cset() over the cache's nr_csets), for tests that need
 * origin sets sharing a cache set, or not.
 */
static int cmd_debug_placement(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };
	unsigned long long oset;
	struct ssdp_scan s;
	struct dev d;
	int i, r = EXIT_OK;
	char *end;

	while (sub_getopt(argc, argv, opts) != -1)
		;
	if (optind + 2 > argc)
		return print_usage();
	if (scan_path(argv[optind], &d, &s, O_RDONLY))
		return EXIT_FAIL;
	dev_close(&d);
	if (s.sb_res != SSDP_SB_OK) {
		err("%s: %s", argv[optind], sb_res_text(s.sb_res, s.sb.version));
		scan_free(&s);
		return EXIT_NOSB;
	}
	for (i = optind + 1; i < argc; i++) {
		errno = 0;
		oset = strtoull(argv[i], &end, 0);
		if (errno || *end || end == argv[i] ||
		    oset >= SSDP_REC_TAG_FREE) {
			err("debug-placement: bad origin set '%s'", argv[i]);
			r = EXIT_FAIL;
			continue;
		}
		printf("%llu %u\n", oset, ssdp_oset_cset(oset, s.sb.nr_csets));
	}
	scan_free(&s);
	return r;
}

/* ---- origin-id, create ---------------------------------------------- */

static int cmd_origin_id(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };
	char what[160], h[33];
	u8 id[16];
	int k;

	while (sub_getopt(argc, argv, opts) != -1)
		;
	if (argc - optind != 1)
		return print_usage();
	k = origin_ident(argv[optind], id, what, sizeof(what));
	if (k < 0) {
		err("%s: %s", argv[optind], what);
		return EXIT_BAD;
	}
	if (k > 0)
		printf("%s\n", hex(id, 16, h));
	fprintf(stderr, "%s: %s\n", argv[optind], what);
	return EXIT_OK;
}

/*
 * The table that formats @cache for @origin: the features checked, and
 * the origin_id derived from the origin's identity unless one is given.
 */
static int format_table(const char *origin, const char *cache, int nfeat,
			char **feat, struct sbuf *out)
{
	struct sbuf f = { 0 };
	struct ssdp_config cfg;
	bool have_id = false;
	char what[160], h[33];
	unsigned int n = 1;
	struct dev od;
	const char *why;
	int i, k, r = EXIT_FAIL;
	u8 id[16];

	if (dev_open(&od, origin, O_RDONLY))
		return EXIT_FAIL;
	dev_close(&od);
	ssdp_config_defaults(&cfg);
	sbuf_add(&f, " format");
	for (i = 0; i < nfeat; i++) {
		const char *key = feat[i], *val;

		if (!strcmp(key, "format") || !strcmp(key, "force")) {
			err("feature '%s': not here (create formats a blank cache itself)",
			    key);
			goto out;
		}
		if (i + 1 == nfeat) {
			err("feature '%s' needs a value", key);
			goto out;
		}
		val = feat[++i];
		if (!strcmp(key, "origin_id")) {
			if (!parse_id(val, id)) {
				err("origin_id must be 32 hex digits, not all zero");
				goto out;
			}
			have_id = true;
		} else if (strcmp(key, "idle_cgroup") &&
			   ssdp_config_set(&cfg, key, val, SSDP_CFG_CTR, &why)) {
			err("feature %s %s: %s", key, val, why);
			goto out;
		}
		sbuf_add(&f, " %s %s", key, val);
		n += 2;
	}
	if (!have_id) {
		k = origin_ident(origin, id, what, sizeof(what));
		if (k < 0) {
			err("%s: %s: give an origin_id (ssdprio-tool gen-origin-id) and keep it in the tab",
			    origin, what);
			r = EXIT_BAD;
			goto out;
		}
		if (k > 0) {
			sbuf_add(&f, " origin_id %s", hex(id, 16, h));
			n += 2;
		}
		notice("%s: %s%s", origin, what, k > 0 ?
		       ": recorded as the cache's origin_id" : "");
	}
	sbuf_add(out, "0 %llu ssdprio %s %s %u%s", (unsigned long long)od.sectors,
		 origin, cache, n, f.s);
	r = EXIT_OK;
out:
	free(f.s);
	return r;
}

/*
 * A cache with a zero superblock sector that is about to be formatted:
 * true when libblkid finds nothing else on it either (a file system,
 * an LVM label or an md member leaves that sector zero).
 */
static bool blank_for_format(const char *cache)
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

static int cmd_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "force", no_argument, NULL, 'f' },
		OPT_HELP, OPT_END,
	};
	struct activate_opts o = { 0 };
	char uuid[sizeof(DM_UUID_PREFIX) + 2 * 16], out[1024], why[512];
	struct tab_entry e = { 0 };
	enum ssdp_sb_result res;
	struct sbuf t = { 0 };
	bool force = false;
	struct ssdp_scan s;
	struct dev cd;
	int c, r, kfd = -1;

	while ((c = sub_getopt(argc, argv, opts)) != -1) {
		if (c == 'n')
			o.dry_run = true;
		else if (c == 'f')
			force = true;
	}
	if (argc - optind < 3)
		return print_usage();
	e.name = argv[optind];
	e.origin = argv[optind + 1];
	e.cache = argv[optind + 2];
	e.feat = argv + optind + 3;
	e.nfeat = argc - optind - 3;
	if (!tab_valid_name(e.name)) {
		err("%s: not a device name (letters, digits, _.+- only)", e.name);
		return EXIT_FAIL;
	}
	if (dm_exists(e.name)) {
		err("%s: a device of that name exists", e.name);
		return EXIT_BAD;
	}
	if (scan_path(e.cache, &cd, &s, O_RDONLY))
		return EXIT_FAIL;
	dev_close(&cd);
	res = s.sb_res;
	scan_free(&s);
	if (res == SSDP_SB_OK)	/* ours already: load it, as the tab would */
		return activate_one(&e, NULL, &o);
	if (res == SSDP_SB_BLANK && !force && !blank_for_format(e.cache))
		return EXIT_BAD;
	if (res == SSDP_SB_FOREIGN && !force) {
		err("%s: holds data that is not an ssdprio cache: --force to overwrite it",
		    e.cache);
		return EXIT_BAD;
	}
	if (res != SSDP_SB_BLANK && res != SSDP_SB_FOREIGN) {
		err("%s: %s: see 'ssdprio-tool show'; wipe it to start afresh",
		    e.cache, sb_res_text(res, s.sb.version));
		return EXIT_NOSB;
	}
	if (dev_held(e.cache) || dev_held(e.origin)) {
		err("%s or %s is held by another device: not creating", e.origin,
		    e.cache);
		return EXIT_BAD;
	}
	r = format_table(e.origin, e.cache, e.nfeat, e.feat, &t);
	if (r)
		goto out;
	if (o.dry_run) {
		printf("dmsetup create %s --table '%s'\n", e.name, t.s);
		goto out;
	}
	kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kfd >= 0)
		lseek(kfd, 0, SEEK_END);
	r = run_cmd(out, sizeof(out), "dmsetup", "create", e.name, "--table",
		    t.s, NULL);
	if (r) {
		if (kmsg_reason(kfd, why, sizeof(why)))
			err("%s: the kernel refused the table: %s; table: %s",
			    e.name, why, t.s);
		else
			err("%s: dmsetup create failed (%d): %s; table: %s",
			    e.name, r, out, t.s);
		r = EXIT_BAD;
		goto out;
	}
	/* The superblock is written at the first resume: name the device by it. */
	if (scan_path(e.cache, &cd, &s, O_RDONLY)) {
		r = EXIT_FAIL;
		goto out;
	}
	dev_close(&cd);
	strcpy(uuid, DM_UUID_PREFIX);
	hex(s.sb.uuid, sizeof(s.sb.uuid), uuid + strlen(uuid));
	r = s.sb_res == SSDP_SB_OK ? EXIT_OK : EXIT_NOSB;
	scan_free(&s);
	if (r) {
		err("%s: created, but %s shows no superblock", e.name, e.cache);
		goto out;
	}
	r = run_cmd(out, sizeof(out), "dmsetup", "rename", e.name, "--setuuid",
		    uuid, NULL);
	if (r) {
		err("%s: dmsetup rename --setuuid %s: %s", e.name, uuid, out);
		r = EXIT_BAD;
		goto out;
	}
	notice("%s: created: %s formatted as the cache of %s; for boot, add to the ssdpriotab: %s %s %s",
	       e.name, e.cache, e.origin, e.name, e.origin, e.cache);
out:
	if (kfd >= 0)
		close(kfd);
	free(t.s);
	return r;
}

/*
 * Rewrite line @lineno of @text (NUL-separated lines are not used: @text
 * is the file as read) so that the entry's features carry @key @val:
 * replaced where the key is, else appended.  Returns the new text.
 */
static char *tab_line_set(const char *text, int lineno, const char *key,
			  const char *val)
{
	struct sbuf out = { 0 };
	const char *line = text, *end;
	int n;

	sbuf_add(&out, "%s", "");
	for (n = 1; *line; n++, line = *end ? end + 1 : end) {
		char *copy, *comment, *w[256], *p, *save = NULL;
		int nw = 0, i;
		bool done = false;

		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		if (n != lineno) {
			sbuf_add(&out, "%.*s%s", (int)(end - line), line,
				 *end ? "\n" : "");
			continue;
		}
		copy = strndup(line, end - line);
		if (!copy)
			abort();
		comment = strchr(copy, '#');
		if (comment)
			*comment++ = 0;
		for (p = strtok_r(copy, " \t\r", &save);
		     p && nw < (int)ARRAY_SIZE(w); p = strtok_r(NULL, " \t\r", &save))
			w[nw++] = p;
		if (nw < 3) {	/* not an entry (the caller found one here) */
			sbuf_add(&out, "%.*s%s", (int)(end - line), line,
				 *end ? "\n" : "");
			free(copy);
			continue;
		}
		sbuf_add(&out, "%s %s %s", w[0], w[1], w[2]);
		for (i = 3; i < nw; i++) {
			/* Words without a value: the kernel's and the boot's. */
			bool flag = !strcmp(w[i], "format") ||
				    !strcmp(w[i], "force") ||
				    !strcmp(w[i], "nofail");

			if (!flag && i + 1 < nw && !strcmp(w[i], key)) {
				sbuf_add(&out, " %s %s", key, val);
				done = true;
				i++;
				continue;
			}
			sbuf_add(&out, " %s", w[i]);
			if (!flag && i + 1 < nw)
				sbuf_add(&out, " %s", w[++i]);
		}
		if (!done)
			sbuf_add(&out, " %s %s", key, val);
		if (comment)
			sbuf_add(&out, " #%s", comment);
		sbuf_add(&out, "%s", *end ? "\n" : "");
		free(copy);
	}
	return out.s;
}

/* Replace @path with @text: a temporary file beside it, synced, renamed. */
static int write_file_atomic(const char *path, const char *text)
{
	struct sbuf tmp = { 0 };
	struct stat st;
	size_t len = strlen(text);
	int fd, r = -1;

	sbuf_add(&tmp, "%s.ssdprio-tool.tmp", path);
	fd = open(tmp.s, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto out;
	if (!stat(path, &st))
		fchmod(fd, st.st_mode & 07777);
	if (write(fd, text, len) != (ssize_t)len || fsync(fd)) {
		close(fd);
		unlink(tmp.s);
		goto out;
	}
	close(fd);
	r = rename(tmp.s, path);
	if (r)
		unlink(tmp.s);
out:
	free(tmp.s);
	return r;
}

/* The tunables a message may change, one a line (bash completion). */
static int list_runtime_keys(void)
{
	unsigned int i, where;
	const char *key;

	for (i = 0; (key = ssdp_config_key_name(i, &where)); i++)
		if (where & SSDP_CFG_MSG)
			printf("%s\n", key);
	return EXIT_OK;
}

/*
 * Change tunables of a live device (dmsetup message) and, with --persist,
 * in its ssdpriotab line too: messages are runtime only, and the table
 * built from the tab at the next activation wins.  The tab is written
 * only after the kernel took every value.
 */
static int cmd_set(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "persist", no_argument, NULL, 'p' },
		{ "tab", required_argument, NULL, 't' },
		{ "list-keys", no_argument, NULL, 'l' },
		OPT_HELP, OPT_END,
	};
	const char *tab = getenv("SSDPRIO_TAB"), *name, *why;
	struct tab_entry *e = NULL;
	struct ssdp_config cfg;
	char out[1024], *text = NULL, *msg;
	bool persist = false;
	int c, i, n = 0, bad = 0, line = 0, r = EXIT_FAIL;

	if (!tab || !*tab)
		tab = DEFAULT_TAB;
	while ((c = sub_getopt(argc, argv, opts)) != -1) {
		if (c == 'p')
			persist = true;
		else if (c == 't')
			tab = optarg;
		else if (c == 'l')
			return list_runtime_keys();
	}
	if (argc - optind < 3 || (argc - optind - 1) % 2)
		return print_usage();
	name = argv[optind];
	ssdp_config_defaults(&cfg);
	for (i = optind + 1; i < argc; i += 2) {
		if (!ssdp_config_is_key(argv[i])) {
			err("%s: not a tunable (docs/target.md lists them)",
			    argv[i]);
			return EXIT_FAIL;
		}
		if (ssdp_config_set(&cfg, argv[i], argv[i + 1], SSDP_CFG_MSG,
				    &why)) {
			err("%s %s: %s", argv[i], argv[i + 1], why);
			return EXIT_FAIL;
		}
	}
	if (!dm_exists(name)) {
		err("%s: no such device", name);
		return EXIT_FAIL;
	}
	if (persist) {
		char *copy;

		text = read_file(tab);
		if (!text) {
			err("%s: %s", tab, strerror(errno));
			return EXIT_FAIL;
		}
		copy = strdup(text);
		n = tab_parse(tab, copy, &e, &bad);
		for (i = 0; i < n; i++)
			if (!strcmp(e[i].name, name))
				line = e[i].line;
		tab_free(e, n > 0 ? n : 0);
		free(copy);
		if (!line) {
			err("%s: no entry named %s: nothing to persist in", tab,
			    name);
			free(text);
			return EXIT_BAD;
		}
	}
	for (i = optind + 1; i < argc; i += 2) {
		if (asprintf(&msg, "%s %s", argv[i], argv[i + 1]) < 0)
			abort();
		c = run_cmd(out, sizeof(out), "dmsetup", "message", name, "0",
			    msg, NULL);
		if (c) {
			err("%s: the kernel refused '%s' (its reason is in the kernel log): %s",
			    name, msg, out);
			free(msg);
			r = EXIT_BAD;
			goto out;
		}
		free(msg);
	}
	if (!persist) {
		printf("%s: set, at run time only: the next activation takes the table from %s ('--persist' writes it there)\n",
		       name, tab);
		r = EXIT_OK;
		goto out;
	}
	for (i = optind + 1; i < argc; i += 2) {
		char *next = tab_line_set(text, line, argv[i], argv[i + 1]);

		free(text);
		text = next;
	}
	if (write_file_atomic(tab, text)) {
		err("%s: cannot write it: %s (the values are set at run time)",
		    tab, strerror(errno));
		r = EXIT_FAIL;
		goto out;
	}
	printf("%s: set, and saved in %s line %d\n", name, tab, line);
	r = EXIT_OK;
out:
	free(text);
	return r;
}

/*
 * The reverse of detach: a device that is a linear table over an origin
 * gets a cache again, live.  The cache starts empty: blank (formatted
 * now) or marked out of date by a detach or a "cache off" table.  A cache
 * of ours not so marked is refused: the origin may have been written
 * around it, so its blocks may be older than the origin's.
 */
static int cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		OPT_HELP, OPT_END,
	};
	char out[1024], why[512], type[16], odev[64], origin[96], lin[128];
	unsigned long long start, len, off;
	const char *name, *cache;
	enum ssdp_sb_result res;
	struct sbuf t = { 0 };
	bool force = false, bypassed;
	struct ssdp_scan s;
	struct dev cd, od;
	int c, r, kfd = -1;

	while ((c = sub_getopt(argc, argv, opts)) != -1)
		if (c == 'f')
			force = true;
	if (argc - optind < 2)
		return print_usage();
	name = argv[optind];
	cache = argv[optind + 1];
	if (!dm_exists(name)) {
		err("%s: no such device", name);
		return EXIT_FAIL;
	}
	r = run_cmd(out, sizeof(out), "dmsetup", "table", name, NULL);
	if (r || sscanf(out, "%llu %llu %15s %63s %llu", &start, &len, type,
			odev, &off) < 3) {
		err("%s: cannot read its table: %s", name, out);
		return EXIT_FAIL;
	}
	if (!strcmp(type, "ssdprio")) {
		printf("%s: already has a cache\n", name);
		return EXIT_OK;
	}
	if (strcmp(type, "linear") || start || off || strchr(out, '\n')) {
		err("%s: not one linear table over a whole origin: %s", name,
		    out);
		return EXIT_BAD;
	}
	snprintf(origin, sizeof(origin), "/dev/block/%s", odev);
	if (dev_open(&od, origin, O_RDONLY))
		return EXIT_FAIL;
	dev_close(&od);
	if (od.sectors != len) {
		err("%s: %llu sectors, its origin %s has %llu: a cache covers the whole origin",
		    name, len, origin, (unsigned long long)od.sectors);
		return EXIT_BAD;
	}
	if (scan_path(cache, &cd, &s, O_RDONLY))
		return EXIT_FAIL;
	dev_close(&cd);
	res = s.sb_res;
	bypassed = s.sb.incompat & SSDP_SB_INCOMPAT_BYPASSED;
	scan_free(&s);
	if (dev_held(cache)) {
		err("%s: held by another device: not attaching", cache);
		return EXIT_BAD;
	}
	if (res == SSDP_SB_OK && !bypassed) {
		err("%s: a cache that was not detached (not marked out of date): the origin may have been written around it, so its blocks may be older; 'ssdprio-tool wipe' it first",
		    cache);
		return EXIT_BAD;
	}
	if (res == SSDP_SB_BLANK && !force && !blank_for_format(cache))
		return EXIT_BAD;
	if (res == SSDP_SB_FOREIGN && !force) {
		err("%s: holds data that is not an ssdprio cache: --force to overwrite it",
		    cache);
		return EXIT_BAD;
	}
	if (res != SSDP_SB_OK && res != SSDP_SB_BLANK &&
	    res != SSDP_SB_FOREIGN) {
		err("%s: %s: see 'ssdprio-tool show'; wipe it to start afresh",
		    cache, sb_res_text(res, s.sb.version));
		return EXIT_NOSB;
	}
	if (res == SSDP_SB_OK)
		r = build_table(origin, cache, argc - optind - 2,
				argv + optind + 2, false, &t, NULL);
	else
		r = format_table(origin, cache, argc - optind - 2,
				 argv + optind + 2, &t);
	if (r)
		goto out;
	kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kfd >= 0)
		lseek(kfd, 0, SEEK_END);
	r = run_cmd(out, sizeof(out), "dmsetup", "reload", name, "--table",
		    t.s, NULL);
	if (r) {
		if (kmsg_reason(kfd, why, sizeof(why)))
			err("%s: the kernel refused the table: %s; table: %s",
			    name, why, t.s);
		else
			err("%s: dmsetup reload failed (%d): %s; table: %s",
			    name, r, out, t.s);
		r = EXIT_BAD;
		goto out;
	}
	r = run_cmd(out, sizeof(out), "dmsetup", "resume", name, NULL);
	if (r) {
		err("%s: resuming with the cache failed (%d): %s; going back to linear",
		    name, r, out);
		snprintf(lin, sizeof(lin), "0 %llu linear %s 0", len, odev);
		if (run_cmd(out, sizeof(out), "dmsetup", "reload", name,
			    "--table", lin, NULL) ||
		    run_cmd(out, sizeof(out), "dmsetup", "resume", name, NULL))
			err("%s: could not go back either (%s): dmsetup reload %s --table '%s'; dmsetup resume %s",
			    name, out, name, lin, name);
		r = EXIT_BAD;
		goto out;
	}
	notice("%s: attached: %s caches %s, starting empty", name, cache,
	       origin);
	r = EXIT_OK;
out:
	if (kfd >= 0)
		close(kfd);
	free(t.s);
	return r;
}

/* ---- main ----------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{ "show", cmd_show },
		{ "check", cmd_check },
		{ "dirty", cmd_dirty },
		{ "table", cmd_table },
		{ "wipe", cmd_wipe },
		{ "gen-origin-id", cmd_gen_origin_id },
		{ "origin-id", cmd_origin_id },
		{ "create", cmd_create },
		{ "activate", cmd_activate },
		{ "deactivate", cmd_deactivate },
		{ "systemd-generator", cmd_systemd_generator },
		{ "udev-role", cmd_udev_role },
		{ "status", cmd_status },
		{ "flush", cmd_flush },
		{ "wait", cmd_wait },
		{ "detach", cmd_detach },
		{ "attach", cmd_attach },
		{ "set", cmd_set },
		{ "debug-record", cmd_debug_record },
		{ "debug-placement", cmd_debug_placement },
	};
	size_t i;

	if (argc < 2)
		return print_usage();
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage_to(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf(TOOL " " SSDP_TOOL_VERSION "\n");
		return EXIT_OK;
	}
	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	err("unknown command '%s'", argv[1]);
	return print_usage();
}
