// SPDX-License-Identifier: GPL-2.0
/*
 * dmstatus NAME: what `dmsetup status NAME` prints ("start length target
 * status" per target), with one ioctl and no library.  The guest tests poll
 * status many times a second while they wait; under QEMU TCG a dynamically
 * linked dmsetup costs ~140 ms of emulated CPU per run (ld.so, libdevmapper,
 * page faults), taken from the module under test.  Built static.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/dm-ioctl.h>

int main(int argc, char **argv)
{
	size_t size = 16384;
	struct dm_ioctl *io;
	struct dm_target_spec *spec;
	unsigned int i, next;
	char *p;
	int fd;

	if (argc != 2 || strlen(argv[1]) >= DM_NAME_LEN) {
		fprintf(stderr, "usage: dmstatus NAME\n");
		return 2;
	}
	fd = open("/dev/mapper/control", O_RDWR);
	if (fd < 0) {
		perror("dmstatus: /dev/mapper/control");
		return 1;
	}
	for (;;) {
		io = calloc(1, size);
		if (!io) {
			perror("dmstatus");
			return 1;
		}
		io->version[0] = DM_VERSION_MAJOR;
		io->data_size = size;
		io->data_start = sizeof(*io);
		strcpy(io->name, argv[1]);
		if (ioctl(fd, DM_TABLE_STATUS, io) < 0) {
			fprintf(stderr, "dmstatus: %s: %s\n", argv[1],
				strerror(errno));
			return 1;
		}
		if (!(io->flags & DM_BUFFER_FULL_FLAG))
			break;
		free(io);
		size *= 2;
	}
	p = (char *)io + io->data_start;
	for (i = 0; i < io->target_count; i++) {
		spec = (struct dm_target_spec *)p;
		printf("%llu %llu %s %s\n", (unsigned long long)spec->sector_start,
		       (unsigned long long)spec->length, spec->target_type,
		       (char *)(spec + 1));
		next = spec->next;
		p = (char *)io + io->data_start + next;
		if (!next)
			break;
	}
	return 0;
}
