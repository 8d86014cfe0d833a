// SPDX-License-Identifier: GPL-2.0
/*
 * stampio: write and check generation-stamped 4 KiB blocks, for crash tests.
 *
 *   stampio write DEV --blocks N --gen G [--seed S] [--writes K]
 *                 [--sync fdatasync|dsync|none] [--reads R]
 *   stampio check DEV --blocks N --acked A --written W [--seed S]
 *
 * Generation G writes a deterministic (seed, G) list of K extents of 1-16
 * blocks inside blocks [0, N) of DEV with O_DIRECT, each block stamped with
 * its block number and G, then makes them durable: fdatasync (a flush),
 * O_DSYNC (every write FUA, or write + flush) or not at all.  --reads R then
 * reads R random blocks and checks each holds exactly the newest generation
 * written to it (the device did not crash: anything else is a bug).
 *
 * check reads blocks [0, N) and, knowing that generations 1..W were written
 * and 1..A were acknowledged durable, requires of every block:
 *   - it holds a valid stamp for this block of a generation that wrote it
 *     (1..W), or zeroes (the initial content) if no acknowledged generation
 *     wrote it: never garbage, never another block's data;
 *   - that generation is not older than the newest acknowledged one that
 *     wrote the block: an acknowledged write is never lost nor undone.
 * It prints one line per bad block (up to 20) and a summary; exit 0 if all
 * blocks pass, 1 if not, 2 on usage or I/O errors.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLK		4096U
#define STAMP_MAGIC	0x53534450474e5453ULL	/* "STNGPDSS" */
#define MAX_EXTENT	16U
#define READ_CHUNK	256U			/* blocks per read in check */
#define MAX_REPORT	20

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const char *prog = "stampio";

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The content of block @b at generation @g. */
static void stamp_fill(uint64_t *p, uint64_t seed, uint64_t b, uint64_t g)
{
	uint64_t s = seed ^ (b * 0x100000001b3ULL) ^ (g << 40);
	unsigned int i;

	p[0] = STAMP_MAGIC;
	p[1] = b;
	p[2] = g;
	p[3] = seed;
	for (i = 4; i < BLK / 8; i++)
		p[i] = splitmix(&s);
}

struct extent {
	uint64_t start, len;
};

/* The extents generation @g writes, in order (deterministic). */
static void gen_extents(struct extent *x, unsigned int k, uint64_t seed,
			uint64_t g, uint64_t nblocks)
{
	static const unsigned int lens[] = { 1, 1, 1, 1, 2, 2, 3, 4, 8, 16 };
	uint64_t s = seed * 31 + g * 0x632be59bd9b4e019ULL;
	unsigned int i;

	for (i = 0; i < k; i++) {
		uint64_t r = splitmix(&s);

		x[i].start = r % nblocks;
		x[i].len = lens[(r >> 32) % ARRAY_SIZE(lens)];
		if (x[i].len > nblocks - x[i].start)
			x[i].len = nblocks - x[i].start;
	}
}

struct opts {
	const char *dev;
	uint64_t blocks, gen, acked, written, seed;
	unsigned int writes, reads;
	const char *sync;
};

static uint64_t num(const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-') {
		fprintf(stderr, "%s: %s: bad number '%s'\n", prog, opt, s);
		exit(2);
	}
	return v;
}

static void bad_args(void)
{
	fprintf(stderr,
		"usage: %s write DEV --blocks N --gen G [--seed S] [--writes K]\n"
		"                     [--sync fdatasync|dsync|none] [--reads R]\n"
		"       %s check DEV --blocks N --acked A --written W [--seed S]\n",
		prog, prog);
	exit(2);
}

static void *ablock(size_t n)
{
	void *p;

	if (posix_memalign(&p, BLK, n))
		err(2, "posix_memalign");
	return p;
}

static void pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	if (n < 0)
		err(2, "read");
	if ((size_t)n != len) {
		errno = EIO;
		err(2, "short read");
	}
}

/* Newest generation in 1..@upto that wrote each block (0: none). */
static uint64_t *history(const struct opts *o, uint64_t upto)
{
	uint64_t *last = calloc(o->blocks, sizeof(*last));
	struct extent *x = calloc(o->writes, sizeof(*x));
	uint64_t g, b;
	unsigned int i;

	if (!last || !x)
		err(2, "calloc");
	for (g = 1; g <= upto; g++) {
		gen_extents(x, o->writes, o->seed, g, o->blocks);
		for (i = 0; i < o->writes; i++)
			for (b = x[i].start; b < x[i].start + x[i].len; b++)
				last[b] = g;
	}
	free(x);
	return last;
}

static int do_write(const struct opts *o)
{
	struct extent *x = calloc(o->writes, sizeof(*x));
	uint64_t *buf = ablock(MAX_EXTENT * BLK);
	uint64_t *last, s, b;
	int flags = O_WRONLY | O_DIRECT;
	unsigned int i, j, bad = 0;
	int fd;

	if (!x)
		err(2, "calloc");
	if (!strcmp(o->sync, "dsync"))
		flags |= O_DSYNC;
	else if (strcmp(o->sync, "fdatasync") && strcmp(o->sync, "none"))
		bad_args();
	fd = open(o->dev, flags);
	if (fd < 0)
		err(2, "%s", o->dev);
	gen_extents(x, o->writes, o->seed, o->gen, o->blocks);
	for (i = 0; i < o->writes; i++) {
		size_t len = x[i].len * BLK;

		for (j = 0; j < x[i].len; j++)
			stamp_fill(buf + j * (BLK / 8), o->seed,
				   x[i].start + j, o->gen);
		if (pwrite(fd, buf, len, (off_t)(x[i].start * BLK)) !=
		    (ssize_t)len)
			err(2, "write");
	}
	if (!strcmp(o->sync, "fdatasync") && fdatasync(fd))
		err(2, "fdatasync");
	if (close(fd))
		err(2, "close");
	if (!o->reads)
		goto out;

	/* No crash happened: a read must return exactly the newest write. */
	fd = open(o->dev, O_RDONLY | O_DIRECT);
	if (fd < 0)
		err(2, "%s", o->dev);
	last = history(o, o->gen);
	s = o->seed ^ (o->gen << 20) ^ 0x5eed;
	for (i = 0; i < o->reads; i++) {
		uint64_t *want = buf + BLK / 8;

		b = splitmix(&s) % o->blocks;
		pread_full(fd, buf, BLK, b * BLK);
		if (last[b])
			stamp_fill(want, o->seed, b, last[b]);
		else
			memset(want, 0, BLK);
		if (memcmp(buf, want, BLK)) {
			fprintf(stderr, "%s: live read of block %" PRIu64 " after gen %" PRIu64 ": want gen %" PRIu64 ", found magic %" PRIx64 " block %" PRIu64 " gen %" PRIu64 "\n",
				prog, b, o->gen, last[b], buf[0], buf[1],
				buf[2]);
			bad++;
		}
	}
	free(last);
	close(fd);
out:
	free(buf);
	free(x);
	return bad ? 1 : 0;
}

static bool all_zero(const uint64_t *p)
{
	unsigned int i;

	for (i = 0; i < BLK / 8; i++)
		if (p[i])
			return false;
	return true;
}

static int do_check(const struct opts *o)
{
	uint64_t nchunk = READ_CHUNK, b, c, g;
	uint64_t *buf = ablock(READ_CHUNK * BLK), *want = ablock(BLK);
	uint64_t *acked_last = history(o, o->acked);
	/* wrote[g * blocks + b]: generation g wrote block b */
	unsigned char *wrote = calloc((o->written + 1) * o->blocks, 1);
	struct extent *x = calloc(o->writes, sizeof(*x));
	uint64_t zero = 0, stamped = 0, gmin = UINT64_MAX, gmax = 0, newer = 0;
	unsigned int i, bad = 0;
	int fd;

	if (!wrote || !x)
		err(2, "calloc");
	for (g = 1; g <= o->written; g++) {
		gen_extents(x, o->writes, o->seed, g, o->blocks);
		for (i = 0; i < o->writes; i++)
			for (b = x[i].start; b < x[i].start + x[i].len; b++)
				wrote[g * o->blocks + b] = 1;
	}
	fd = open(o->dev, O_RDONLY | O_DIRECT);
	if (fd < 0)
		err(2, "%s", o->dev);

	for (c = 0; c < o->blocks; c += nchunk) {
		uint64_t n = o->blocks - c < nchunk ? o->blocks - c : nchunk;

		pread_full(fd, buf, n * BLK, c * BLK);
		for (b = c; b < c + n; b++) {
			const uint64_t *p = buf + (b - c) * (BLK / 8);
			uint64_t want_gen = acked_last[b];
			char why[160] = "";

			if (all_zero(p)) {
				zero++;
				if (want_gen)
					snprintf(why, sizeof(why),
						 "zeroes (initial content), expected gen >= %" PRIu64,
						 want_gen);
			} else if (p[0] != STAMP_MAGIC || p[3] != o->seed) {
				snprintf(why, sizeof(why),
					 "garbage (no stamp: %016" PRIx64 " %016" PRIx64 " %016" PRIx64 "), expected gen >= %" PRIu64,
					 p[0], p[1], p[2], want_gen);
			} else if (p[1] != b) {
				snprintf(why, sizeof(why),
					 "holds block %" PRIu64 " gen %" PRIu64 " (misplaced), expected gen >= %" PRIu64,
					 p[1], p[2], want_gen);
			} else if (!p[2] || p[2] > o->written ||
				   !wrote[p[2] * o->blocks + b]) {
				snprintf(why, sizeof(why),
					 "gen %" PRIu64 ", which never wrote this block",
					 p[2]);
			} else {
				stamp_fill(want, o->seed, b, p[2]);
				if (memcmp(p, want, BLK))
					snprintf(why, sizeof(why),
						 "gen %" PRIu64 " stamp with corrupt content",
						 p[2]);
				else if (p[2] < want_gen)
					snprintf(why, sizeof(why),
						 "stale: gen %" PRIu64 ", expected gen >= %" PRIu64,
						 p[2], want_gen);
				stamped++;
				if (p[2] < gmin)
					gmin = p[2];
				if (p[2] > gmax)
					gmax = p[2];
				if (p[2] > want_gen)
					newer++;
			}
			if (why[0]) {
				if (bad < MAX_REPORT)
					printf("block %" PRIu64 ": %s\n", b, why);
				bad++;
			}
		}
	}
	close(fd);
	printf("checked %" PRIu64 " blocks (acked gen %" PRIu64 ", written %" PRIu64 "): %" PRIu64 " zero, %" PRIu64 " stamped",
	       o->blocks, o->acked, o->written, zero, stamped);
	if (stamped)
		printf(" (gens %" PRIu64 "..%" PRIu64 ", %" PRIu64 " newer than acked)",
		       gmin, gmax, newer);
	printf(", %u bad\n", bad);
	free(x);
	free(wrote);
	free(acked_last);
	free(want);
	free(buf);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .seed = 1, .writes = 32, .sync = "fdatasync" };
	const char *mode;
	int i;

	if (argc < 3)
		bad_args();
	mode = argv[1];
	o.dev = argv[2];
	for (i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			bad_args();
		i++;
		if (!strcmp(a, "--blocks"))
			o.blocks = num(a, v);
		else if (!strcmp(a, "--gen"))
			o.gen = num(a, v);
		else if (!strcmp(a, "--acked"))
			o.acked = num(a, v);
		else if (!strcmp(a, "--written"))
			o.written = num(a, v);
		else if (!strcmp(a, "--seed"))
			o.seed = num(a, v);
		else if (!strcmp(a, "--writes"))
			o.writes = (unsigned int)num(a, v);
		else if (!strcmp(a, "--reads"))
			o.reads = (unsigned int)num(a, v);
		else if (!strcmp(a, "--sync"))
			o.sync = v;
		else
			bad_args();
	}
	if (!o.blocks || !o.writes || o.writes > 1U << 20 ||
	    o.blocks > (1ULL << 40))
		bad_args();
	if (!strcmp(mode, "write")) {
		if (!o.gen)
			bad_args();
		return do_write(&o);
	}
	if (!strcmp(mode, "check")) {
		if (o.acked > o.written || o.written > (1U << 20))
			bad_args();
		return do_check(&o);
	}
	bad_args();
}
