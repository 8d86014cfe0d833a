/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ssdpriotab (/etc/ssdprio/ssdpriotab): "name origin_dev cache_dev
 * [features...]" per line, '#' comments.  Read by activate, udev-role,
 * set --persist and the systemd generator.
 */
#ifndef SSDP_TOOL_TAB_H
#define SSDP_TOOL_TAB_H

#include <stdbool.h>

#define DEFAULT_TAB		"/etc/ssdprio/ssdpriotab"
/* How long boot waits for an entry's disks when the line does not say. */
#define TAB_DEVICE_TIMEOUT	90

struct tab_entry {
	char *name, *origin, *cache;
	char **feat;		/* the table's features: the tab's options removed */
	int nfeat, line;
	bool bad;		/* refused (reported): never activated */
	/* Boot options, never passed to the kernel (ssdpriotab(5)). */
	bool nofail;		/* boot goes on without it */
	bool initramfs;		/* activated by the initramfs (root on it) */
	unsigned int device_timeout;	/* seconds to wait for both disks */
};

bool tab_valid_name(const char *s);
int tab_parse(const char *path, char *text, struct tab_entry **out, int *bad);
int tab_check(const char *path, struct tab_entry *e, int n);
void tab_free(struct tab_entry *e, int n);
/* The whole file, NUL-terminated (malloc'ed); NULL with errno set. */
char *read_file(const char *path);

#endif
