// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool show, check, dirty and wipe: a cache device's metadata,
 * read (or zeroed) on the device itself, not through a live table.  The
 * on-SSD format is engine/ssdprio_format.h and the codec the kernel's own
 * engine/meta_codec.c; cache_scan.c reads the records the way the
 * kernel's load does.  Reads use O_DIRECT where the device allows it, so
 * they see what is on the device, not a stale page cache; on a live table
 * that is the last committed state.  See docs/tools.md.
 */
#define _GNU_SOURCE	/* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_scan.h"
#include "cmd.h"
#include "signature.h"
#include "util.h"

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
		printf("  failed:        yes (its metadata writes or SSD flushes failed while in use: its records are out of date, no table loads it; wipe it)\n");
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

int cmd_show(int argc, char **argv)
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

	while ((c = cmd_getopt(argc, argv, "", opts)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 's')
			sets = true;
	}
	if (cmd_args(argc, argv, ARGS("the cache device <cache_dev>"), 1))
		return EXIT_FAIL;
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
 * Options of a command whose only argument is the cache device: after it,
 * argv[1] is that device.  Non-zero when the arguments are wrong (said).
 */
static int one_arg(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };

	while (cmd_getopt(argc, argv, "", opts) != -1)
		;
	if (cmd_args(argc, argv, ARGS("the cache device <cache_dev>"), 1))
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
int cmd_dirty(int argc, char **argv)
{
	u64 i, b, start = 0, len = 0, total = 0, block_sectors, set_blocks;
	struct dirty_line *lines = NULL;
	u64 nr_lines = 0;
	struct ssdp_scan s;
	struct dev d;
	u32 t;

	if (one_arg(argc, argv))
		return EXIT_FAIL;
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

int cmd_check(int argc, char **argv)
{
	struct ssdp_scan s;
	unsigned int errors;
	struct dev d;
	char b[32];
	int k;

	if (one_arg(argc, argv))
		return EXIT_FAIL;
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

int cmd_wipe(int argc, char **argv)
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

	while ((c = cmd_getopt(argc, argv, "", opts)) != -1) {
		if (c == 'f')
			force = true;
		else if (c == 'r')
			records = true;
	}
	if (cmd_args(argc, argv, ARGS("the cache device <cache_dev>"), 1))
		return EXIT_FAIL;
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

