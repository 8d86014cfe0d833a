// SPDX-License-Identifier: GPL-2.0
/* ssdprio-tool: reading the ssdpriotab (tab.h, ssdpriotab(5)). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "msg.h"
#include "tab.h"

void tab_free(struct tab_entry *e, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(e[i].feat);
	free(e);
}

bool tab_valid_name(const char *s)
{
	if (!*s || strlen(s) > 127)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.+-", *s))
			return false;
	return true;
}

/*
 * Take the boot options out of @e's features: "nofail", "initramfs" and
 * "device_timeout SECS" are for boot, not the kernel.  A key of
 * the kernel's keeps its value, so a value spelt like an option stays a
 * value.  Returns -1 (reported) for a bad device_timeout.
 */
static int tab_take_options(const char *path, struct tab_entry *e)
{
	int i, k = 0;

	e->nofail = false;
	e->initramfs = false;
	e->device_timeout = TAB_DEVICE_TIMEOUT;
	for (i = 0; i < e->nfeat; i++) {
		const char *w = e->feat[i];
		char *end;
		unsigned long v;

		if (ssdp_config_is_key(w) && i + 1 < e->nfeat) {
			e->feat[k++] = e->feat[i++];
			e->feat[k++] = e->feat[i];
		} else if (!strcmp(w, "nofail")) {
			e->nofail = true;
		} else if (!strcmp(w, "initramfs")) {
			e->initramfs = true;
		} else if (!strcmp(w, "device_timeout")) {
			const char *s = i + 1 < e->nfeat ? e->feat[++i] : "";

			errno = 0;
			v = strtoul(s, &end, 10);
			if (!*s || *end || errno || !isdigit((unsigned char)*s) ||
			    v < 1 || v > 86400) {
				err("%s:%d: device_timeout '%s': expected seconds, 1 to 86400",
				    path, e->line, s);
				return -1;
			}
			e->device_timeout = v;
		} else {
			e->feat[k++] = e->feat[i];
		}
	}
	e->nfeat = k;
	return 0;
}

/*
 * Parse an ssdpriotab: "name origin_dev cache_dev [features...]" per line,
 * '#' comments.  Returns the number of entries or -1 (reported); *@bad
 * counts the lines refused (reported, not returned): one bad line must
 * not keep the good ones from activating at boot.  The entries point into
 * @text.
 */
int tab_parse(const char *path, char *text, struct tab_entry **out,
		     int *bad)
{
	struct tab_entry *e = NULL;
	char *line, *next;
	int n = 0, lineno = 0;

	for (line = text; line; line = next) {
		char *w[256], *p, *wsave = NULL;
		int nw = 0;

		lineno++;
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		p = strchr(line, '#');
		if (p)
			*p = 0;
		for (p = strtok_r(line, " \t\r", &wsave); p;
		     p = strtok_r(NULL, " \t\r", &wsave)) {
			if (nw == (int)ARRAY_SIZE(w))
				break;
			w[nw++] = p;
		}
		if (!nw)
			continue;
		if (nw == (int)ARRAY_SIZE(w)) {
			err("%s:%d: too many words", path, lineno);
			(*bad)++;
			continue;
		}
		if (nw < 3 || !tab_valid_name(w[0])) {
			err("%s:%d: expected 'name origin_dev cache_dev [features...]' with a name of letters, digits, _ . + -",
			    path, lineno);
			(*bad)++;
			continue;
		}
		e = realloc(e, (n + 1) * sizeof(*e));
		if (!e)
			goto fail;
		e[n].name = w[0];
		e[n].origin = w[1];
		e[n].cache = w[2];
		e[n].nfeat = nw - 3;
		e[n].line = lineno;
		e[n].bad = false;
		e[n].feat = calloc(nw, sizeof(char *));
		if (!e[n].feat)
			goto fail;
		memcpy(e[n].feat, w + 3, (nw - 3) * sizeof(char *));
		if (tab_take_options(path, &e[n])) {
			free(e[n].feat);
			(*bad)++;
			continue;
		}
		n++;
	}
	*out = e;
	return n;
fail:
	tab_free(e, n);
	return -1;
}

/* The same disk, by name or (both present) by device number. */
static bool same_disk(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, b))
		return true;
	return !stat(a, &sa) && !stat(b, &sb) && S_ISBLK(sa.st_mode) &&
	       S_ISBLK(sb.st_mode) && sa.st_rdev == sb.st_rdev;
}

/* 32 hex digits, not all zero: the kernel's origin_id. */
static bool valid_origin_id(const char *v)
{
	bool nonzero = false;
	int i;

	if (strlen(v) != 32)
		return false;
	for (i = 0; i < 32; i++) {
		if (!isxdigit((unsigned char)v[i]))
			return false;
		nonzero |= v[i] != '0';
	}
	return nonzero;
}

/*
 * What the kernel would refuse of one entry's features, by the key table
 * it uses itself, and what activation refuses: 'format' (a boot never
 * formats).  Disks are not opened: the generator runs before they exist.
 * NULL when the features are good.
 */
static const char *tab_feature_error(const struct tab_entry *e,
				     const char **key)
{
	struct ssdp_config cfg;
	const char *why;
	int i;

	ssdp_config_defaults(&cfg);
	for (i = 0; i < e->nfeat; i++) {
		*key = e->feat[i];
		if (!strcmp(*key, "format"))
			return "activation never formats: run 'ssdprio-tool create' once";
		if (!strcmp(*key, "force"))
			continue;
		if (i + 1 == e->nfeat)
			return "needs a value";
		i++;
		if (!strcmp(*key, "idle_cgroup"))
			continue;
		if (!strcmp(*key, "origin_id")) {
			if (!valid_origin_id(e->feat[i]))
				return "must be 32 hex digits, not all zero";
			continue;
		}
		if (ssdp_config_set(&cfg, *key, e->feat[i], SSDP_CFG_CTR, &why))
			return why;
	}
	return NULL;
}

/*
 * Entries that can never activate, refused with the reason: features the
 * kernel or activation would refuse, or one disk as both origin and cache.
 */
static int tab_check_entry(const char *path, struct tab_entry *e)
{
	const char *why, *key;

	why = tab_feature_error(e, &key);
	if (why)
		err("%s:%d: '%s' refused: feature '%s': %s", path, e->line,
		    e->name, key, why);
	else if (same_disk(e->origin, e->cache))
		err("%s:%d: '%s' refused: the origin and the cache are one disk",
		    path, e->line, e->name);
	else
		return 0;
	e->bad = true;
	return 1;
}

/*
 * Entries that cannot all be right: each one tab_check_entry() refuses,
 * a name given twice, or one disk in two entries (the kernel would refuse
 * the second table anyway, but which one loses would depend on the order
 * the disks appear in: the later entry is refused, naming both lines).
 * Returns the number refused.
 */
int tab_check(const char *path, struct tab_entry *e, int n)
{
	int i, j, bad = 0;

	for (i = 0; i < n; i++) {
		bad += tab_check_entry(path, &e[i]);
		for (j = 0; j < i && !e[i].bad; j++) {
			const char *what = NULL;

			if (e[j].bad)
				continue;
			if (!strcmp(e[i].name, e[j].name))
				what = "the name";
			else if (same_disk(e[i].cache, e[j].cache) ||
				 same_disk(e[i].cache, e[j].origin))
				what = "its cache device";
			else if (same_disk(e[i].origin, e[j].origin) ||
				 same_disk(e[i].origin, e[j].cache))
				what = "its origin device";
			if (!what)
				continue;
			err("%s:%d: '%s' refused: %s is already used by '%s' on line %d",
			    path, e[i].line, e[i].name, what, e[j].name,
			    e[j].line);
			e[i].bad = true;
			bad++;
		}
	}
	return bad;
}

char *read_file(const char *path)
{
	size_t len = 0, cap = 4096;
	char *s = malloc(cap), *n;
	FILE *f = fopen(path, "re");
	size_t got;

	if (!f || !s) {
		free(s);
		if (f)
			fclose(f);
		return NULL;
	}
	while ((got = fread(s + len, 1, cap - len - 1, f)) > 0) {
		len += got;
		if (cap - len - 1 == 0) {
			cap *= 2;
			n = realloc(s, cap);
			if (!n) {
				free(s);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			s = n;
		}
	}
	fclose(f);
	s[len] = 0;
	return s;
}
