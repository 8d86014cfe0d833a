// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool debug-record and debug-placement, for tests only (not in
 * the usage): metadata states the kernel must cope with, crafted with the
 * kernel's own codec, and where an origin set may live.  Never on a cache
 * you care about.  See docs/tools.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_scan.h"
#include "cmd.h"
#include "util.h"

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
int cmd_debug_record(int argc, char **argv)
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

	while ((o = cmd_getopt(argc, argv, "", opts)) != -1)
		if (o == 'm')
			misplaced = true;
	if (cmd_args(argc, argv, ARGS("<cache_dev>", "<cset>", "<tag>",
				      "<oset|free>", "<first>", "<nr_valid>",
				      "<nr_dirty>"), 7))
		return EXIT_FAIL;
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
int cmd_debug_placement(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };
	unsigned long long oset;
	struct ssdp_scan s;
	struct dev d;
	int i, r = EXIT_OK;
	char *end;

	while (cmd_getopt(argc, argv, "", opts) != -1)
		;
	if (cmd_args(argc, argv, ARGS("<cache_dev>", "an origin set <oset>"),
		     -1))
		return EXIT_FAIL;
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
