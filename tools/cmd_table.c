// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool table, gen-origin-id and origin-id, and the table lines
 * that create, activate and attach load: the geometry and origin_id from
 * the cache's superblock (build_table), or a 'format' line with the
 * origin_id derived from the origin (format_table).  Every feature is
 * checked with the module's own key table, so that a typo fails now, not
 * at boot.  See docs/tools.md.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cache_scan.h"
#include "cmd.h"
#include "config.h"
#include "origin_ident.h"
#include "util.h"

/*
 * The table line that loads the cache on @cache in front of @origin, with
 * the geometry and origin_id of its superblock and the extra features
 * @feat (checked here: a typo fails now, not at boot).  'format' is
 * refused unless @allow_format.  Returns an EXIT_* code; the reason has
 * been reported.  @scan_out, if not NULL, gets the cache's scan.
 */
int build_table(const char *origin, const char *cache, int nfeat,
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

int cmd_table(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };
	struct sbuf t = { 0 };
	int r;

	while (cmd_getopt(argc, argv, "", opts) != -1)
		;
	if (cmd_args(argc, argv, ARGS("the origin device <origin_dev>",
				      "the cache device <cache_dev>"), -1))
		return EXIT_FAIL;
	r = build_table(argv[optind], argv[optind + 1], argc - optind - 2,
			argv + optind + 2, true, &t, NULL);
	if (!r)
		printf("%s\n", t.s);
	free(t.s);
	return r;
}

/*
 * The table that formats @cache for @origin: the features checked, and
 * the origin_id derived from the origin's identity unless one is given.
 */
int format_table(const char *origin, const char *cache, int nfeat,
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

int cmd_gen_origin_id(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };
	u8 id[16];
	char h[33];

	while (cmd_getopt(argc, argv, "", opts) != -1)
		;
	if (cmd_args(argc, argv, NO_ARGS, 0))
		return EXIT_FAIL;
	do {
		if (getrandom(id, sizeof(id), 0) != sizeof(id)) {
			err("getrandom: %s", strerror(errno));
			return EXIT_FAIL;
		}
	} while (!id_set(id) || ssdp_derived_kind(id));
	printf("%s\n", hex(id, 16, h));
	return EXIT_OK;
}

int cmd_origin_id(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };
	char what[160], h[33];
	u8 id[16];
	int k;

	while (cmd_getopt(argc, argv, "", opts) != -1)
		;
	if (cmd_args(argc, argv, ARGS("the origin device <origin_dev>"), 1))
		return EXIT_FAIL;
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
