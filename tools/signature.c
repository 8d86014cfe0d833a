// SPDX-License-Identifier: GPL-2.0
/*
 * A device whose ssdprio superblock sector is zero is not necessarily
 * empty: ext4 starts at byte 1024, an LVM label in sector 1, md 1.2 and
 * bcache at 4 KiB, btrfs at 64 KiB.  Before a cache is formatted over it,
 * libblkid (what wipefs and mkfs ask) says whether anything is there.
 */
#include <stdio.h>
#include <string.h>

#include <blkid/blkid.h>

#include "signature.h"

int dev_signature(const char *path, char *what, size_t len)
{
	const char *type = NULL, *usage = NULL;
	blkid_probe pr;
	int r;

	pr = blkid_new_probe_from_filename(path);
	if (!pr) {
		snprintf(what, len, "cannot probe %s for signatures", path);
		return -1;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE |
					  BLKID_SUBLKS_USAGE);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	r = blkid_do_safeprobe(pr);
	if (r == 0) {
		if (!blkid_probe_lookup_value(pr, "TYPE", &type, NULL)) {
			blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
			snprintf(what, len, "%s%s%s%s", type,
				 usage ? " (" : "", usage ? usage : "",
				 usage ? ")" : "");
		} else if (!blkid_probe_lookup_value(pr, "PTTYPE", &type,
						     NULL)) {
			snprintf(what, len, "a %s partition table", type);
		} else {
			snprintf(what, len, "a signature");
		}
		r = 1;
	} else if (r == -2) {
		snprintf(what, len, "several signatures");
		r = 1;
	} else if (r == 1) {
		snprintf(what, len, "nothing");
		r = 0;
	} else {
		snprintf(what, len, "probing %s for signatures failed", path);
		r = -1;
	}
	blkid_free_probe(pr);
	return r;
}
