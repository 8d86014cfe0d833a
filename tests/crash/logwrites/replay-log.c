// SPDX-License-Identifier: GPL-2.0
/*
 * replay-log: list and replay a dm-log-writes log.
 *
 * The log format (Documentation/admin-guide/device-mapper/log-writes.rst,
 * drivers/md/dm-log-writes.c) in units of the logged device's logical
 * sector size S (the super records it):
 *
 *   offset 0      super: le64 magic, le64 version, le64 nr_entries,
 *                 le32 sectorsize (padded to S)
 *   offset S      entry 0: le64 sector, le64 nr_sectors, le64 flags,
 *                 le64 data_len, then for a MARK the mark text (data_len
 *                 bytes, not NUL terminated), padded to S
 *                 followed by nr_sectors * S bytes of data, unless the
 *                 entry is a DISCARD (which carries no data)
 *   ...           entry 1, ...
 *
 * sector and nr_sectors count S-sized sectors of the logged device.
 * Entries appear in the order the writes reached stable storage: plain
 * writes are logged just before the FLUSH that made them durable, FUA
 * writes as soon as they complete, marks when the message arrives.
 *
 * Entries are numbered from 0, as --list prints them.  --limit N and
 * --end-mark NAME stop after that entry (inclusive); --start-entry N
 * skips the entries before N, so a replay can continue where the last
 * one stopped.  The replay target is a block device or a regular file.
 *
 * --crash-window writes one of the states a power cut can leave after the
 * start entry, rather than a prefix of the log.  The entries from the
 * start entry up to the next FLUSH entry were completed (or in flight)
 * but not flushed, and a device with a volatile cache may have kept any
 * of them: each plain write is written whole or not at all, chosen by a
 * seeded generator; the FUA writes, durable when they completed and
 * logged in that order, are a prefix; a discard is done or not.  Sectors
 * inside --tear-range are torn: a chosen write covering them keeps only
 * some of its sectors there (a device promises no more than one sector
 * of atomicity), and the first FUA write after the prefix may land in
 * part.  Outside that range writes stay whole, so that data checks that
 * know only whole blocks still apply.  --must-tear draws until a write
 * tears, where one of the window's can.  The entries are applied in log
 * order, so of two writes to one sector the later never loses to the
 * earlier.  The FLUSH entry that ends the window is not written: its data
 * goes out only after its flush, and the power cut came before.  Empty
 * FLUSH entries at the start entry are passed (they change no data): the
 * window is the epoch they open.
 *
 * A FUA write that is not in the prefix was cut before it completed, so no
 * write submitted after it completed can be on the disk.  The log cannot
 * tell those apart (a plain write is logged at the next flush, whenever it
 * was submitted), so without more a window keeps writes that a program
 * issued only once the FUA write was done: a commit's records cut while
 * the frames they freed already hold new data, a state no power cut makes.
 * --order FILE gives the submission order: the logged device's trace,
 * one line per write, "Q SECTOR COUNT" when it was queued and "C SECTOR
 * COUNT" when it completed (512-byte sectors, in time order: blkparse).
 * Each logged write is matched to the trace's writes of its sector and
 * count in turn; then a plain write queued after the cut FUA write
 * completed is dropped.  A trace that does not match the log write for
 * write is not used (said on stderr): every window then is as without it.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_FLUSH_FLAG		((uint64_t)1 << 0)
#define LOG_FUA_FLAG		((uint64_t)1 << 1)
#define LOG_DISCARD_FLAG	((uint64_t)1 << 2)
#define LOG_MARK_FLAG		((uint64_t)1 << 3)
#define LOG_METADATA_FLAG	((uint64_t)1 << 4)
#define LOG_KNOWN_FLAGS		(LOG_FLUSH_FLAG | LOG_FUA_FLAG | \
				 LOG_DISCARD_FLAG | LOG_MARK_FLAG | \
				 LOG_METADATA_FLAG)

#define WRITE_LOG_VERSION	1ULL
#define WRITE_LOG_MAGIC		0x6a736677736872ULL

/* On-disk byte offsets (the kernel's structs are not packed: decode by hand). */
#define SUPER_MAGIC_OFF		0
#define SUPER_VERSION_OFF	8
#define SUPER_NR_ENTRIES_OFF	16
#define SUPER_SECTORSIZE_OFF	24
#define SUPER_MIN_BYTES		28

#define ENTRY_SECTOR_OFF	0
#define ENTRY_NR_SECTORS_OFF	8
#define ENTRY_FLAGS_OFF		16
#define ENTRY_DATA_LEN_OFF	24
#define ENTRY_HDR_BYTES		32

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

#define MAX_SECTORSIZE		65536U
#define IO_CHUNK		(4U << 20)	/* bytes per read/write call */

struct entry {
	uint64_t off;		/* byte offset of the entry in the log */
	uint64_t sector;	/* in log sectors */
	uint64_t nr_sectors;
	uint64_t flags;
	char *mark;		/* MARK entries only, NUL terminated */
	/* --order: trace positions of its queueing and completion, or NO_POS */
	uint64_t q_pos, c_pos;
};

#define NO_POS			UINT64_MAX

struct log {
	int fd;
	const char *path;
	uint64_t size;		/* bytes */
	uint32_t sectorsize;
	uint64_t nr_entries;
	struct entry *e;
};

static const char *prog = "replay-log";
static int verbose;

static uint64_t rng_state;

/* splitmix64: a reproducible stream from --seed. */
static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t n)
{
	return n ? rng_next() % n : 0;
}

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static uint32_t get_le32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		errx(1, "out of memory (%zu bytes)", n);
	return p;
}

/* pread/pwrite the whole range or die. */
static void read_full(int fd, const char *path, void *buf, size_t len,
		      uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			errx(1, "read %s at byte %" PRIu64 ": %s", path, off,
			    strerror(errno));
		if (n == 0)
			errx(1, "read %s at byte %" PRIu64 ": unexpected end",
			    path, off);
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
}

static void write_full(int fd, const char *path, const void *buf, size_t len,
		       uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			errx(1, "write %s at byte %" PRIu64 ": %s", path, off,
			    n < 0 ? strerror(errno) : "no progress");
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
}

/* Size in bytes of a block device or a regular file. */
static uint64_t fd_size(int fd, const char *path, bool *is_blk)
{
	struct stat st;
	uint64_t sz;

	if (fstat(fd, &st))
		errx(1, "stat %s: %s", path, strerror(errno));
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &sz))
			errx(1, "BLKGETSIZE64 %s: %s", path, strerror(errno));
		if (is_blk)
			*is_blk = true;
		return sz;
	}
	if (!S_ISREG(st.st_mode))
		errx(1, "%s: not a block device or regular file", path);
	if (is_blk)
		*is_blk = false;
	return (uint64_t)st.st_size;
}

static bool mul_overflows(uint64_t a, uint64_t b, uint64_t *res)
{
	return __builtin_mul_overflow(a, b, res);
}

/*
 * Read the super and every entry header (not the data) into an index, so
 * that --end-mark is resolved and the whole log is known to be well formed
 * before anything is written.
 */
static void log_open(struct log *lg, const char *path)
{
	unsigned char *buf;
	unsigned char super[SUPER_MIN_BYTES];
	uint64_t magic, version, off, i;
	uint32_t ss;

	lg->path = path;
	lg->fd = open(path, O_RDONLY);
	if (lg->fd < 0)
		errx(1, "open %s: %s", path, strerror(errno));
	/* Drop cached pages: the log may have been written below them. */
	posix_fadvise(lg->fd, 0, 0, POSIX_FADV_DONTNEED);
	lg->size = fd_size(lg->fd, path, NULL);
	if (lg->size < SUPER_MIN_BYTES)
		errx(1, "%s: too small for a log super", path);

	read_full(lg->fd, path, super, sizeof(super), 0);
	magic = get_le64(super + SUPER_MAGIC_OFF);
	version = get_le64(super + SUPER_VERSION_OFF);
	lg->nr_entries = get_le64(super + SUPER_NR_ENTRIES_OFF);
	ss = get_le32(super + SUPER_SECTORSIZE_OFF);
	if (magic != WRITE_LOG_MAGIC)
		errx(1, "%s: bad magic 0x%" PRIx64 " (not a dm-log-writes log)",
		    path, magic);
	if (version != WRITE_LOG_VERSION)
		errx(1, "%s: unsupported log version %" PRIu64, path, version);
	if (ss < 512 || ss > MAX_SECTORSIZE || (ss & (ss - 1)))
		errx(1, "%s: bad sector size %u", path, ss);
	lg->sectorsize = ss;
	if (lg->nr_entries > lg->size / ss)
		errx(1, "%s: super claims %" PRIu64 " entries, the log holds at most %" PRIu64,
		    path, lg->nr_entries, lg->size / ss);

	lg->e = xmalloc(sizeof(*lg->e) * lg->nr_entries);
	buf = xmalloc(ss);
	off = ss;
	for (i = 0; i < lg->nr_entries; i++) {
		struct entry *e = &lg->e[i];
		uint64_t data_len, data_bytes = 0;

		if (off > lg->size || lg->size - off < ss)
			errx(1, "%s: entry %" PRIu64 " at byte %" PRIu64 " is past the end of the log",
			    path, i, off);
		read_full(lg->fd, path, buf, ss, off);
		e->off = off;
		e->sector = get_le64(buf + ENTRY_SECTOR_OFF);
		e->nr_sectors = get_le64(buf + ENTRY_NR_SECTORS_OFF);
		e->flags = get_le64(buf + ENTRY_FLAGS_OFF);
		data_len = get_le64(buf + ENTRY_DATA_LEN_OFF);
		e->mark = NULL;
		e->q_pos = NO_POS;
		e->c_pos = NO_POS;

		if (e->flags & LOG_MARK_FLAG) {
			if (data_len > ss - ENTRY_HDR_BYTES)
				errx(1, "%s: entry %" PRIu64 ": mark of %" PRIu64 " bytes does not fit a sector",
				    path, i, data_len);
			e->mark = xmalloc(data_len + 1);
			memcpy(e->mark, buf + ENTRY_HDR_BYTES, data_len);
			e->mark[data_len] = '\0';
		} else if (!(e->flags & LOG_DISCARD_FLAG) &&
			   mul_overflows(e->nr_sectors, ss, &data_bytes)) {
			errx(1, "%s: entry %" PRIu64 ": absurd length %" PRIu64,
			    path, i, e->nr_sectors);
		}
		/* The sector range must be addressable in bytes. */
		if (e->sector > UINT64_MAX / ss ||
		    e->nr_sectors > UINT64_MAX / ss ||
		    e->sector * ss > UINT64_MAX - e->nr_sectors * ss)
			errx(1, "%s: entry %" PRIu64 ": absurd range %" PRIu64 "+%" PRIu64,
			    path, i, e->sector, e->nr_sectors);

		off += ss;
		if (data_bytes > lg->size - off)
			errx(1, "%s: entry %" PRIu64 ": data runs past the end of the log",
			    path, i);
		off += data_bytes;
	}
	free(buf);
}

/* --order: one traced write event, in a list sorted by sector, count, pos. */
struct tev {
	uint64_t sector, count, pos;
};

static int tev_cmp(const void *a, const void *b)
{
	const struct tev *x = a, *y = b;

	if (x->sector != y->sector)
		return x->sector < y->sector ? -1 : 1;
	if (x->count != y->count)
		return x->count < y->count ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The first event of @sector, @count in @v (sorted), or @n. */
static size_t tev_find(const struct tev *v, size_t n, uint64_t sector,
		       uint64_t count)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].sector < sector ||
		    (v[mid].sector == sector && v[mid].count < count))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].sector == sector && v[lo].count == count ?
	       lo : n;
}

/* The log's data writes, each matched in turn to the next traced one. */
static bool order_match(struct log *lg, struct tev *q, size_t nq,
			struct tev *c, size_t nc, const char **why)
{
	size_t *qtaken = calloc(nq + 1, sizeof(*qtaken));
	size_t *ctaken = calloc(nc + 1, sizeof(*ctaken));
	size_t used = 0, gq, gc;
	uint64_t i, per = lg->sectorsize / 512;
	bool ok = true;

	if (!qtaken || !ctaken)
		errx(1, "out of memory");
	for (i = 0; i < lg->nr_entries && ok; i++) {
		struct entry *e = &lg->e[i];

		if ((e->flags & (LOG_MARK_FLAG | LOG_DISCARD_FLAG)) ||
		    !e->nr_sectors)
			continue;
		gq = tev_find(q, nq, e->sector * per, e->nr_sectors * per);
		gc = tev_find(c, nc, e->sector * per, e->nr_sectors * per);
		if (gq == nq || gc == nc || gq + qtaken[gq] >= nq ||
		    gc + ctaken[gc] >= nc ||
		    q[gq + qtaken[gq]].sector != q[gq].sector ||
		    q[gq + qtaken[gq]].count != q[gq].count ||
		    c[gc + ctaken[gc]].sector != c[gc].sector ||
		    c[gc + ctaken[gc]].count != c[gc].count) {
			*why = "a logged write has no traced one";
			ok = false;
			break;
		}
		e->q_pos = q[gq + qtaken[gq]++].pos;
		e->c_pos = c[gc + ctaken[gc]++].pos;
		if (e->q_pos > e->c_pos) {
			*why = "a write completed before it was queued";
			ok = false;
		}
		used++;
	}
	if (ok && (used != nq || used != nc)) {
		*why = "the trace has writes the log has not";
		ok = false;
	}
	free(qtaken);
	free(ctaken);
	return ok;
}

/*
 * --order FILE: the trace's positions for each logged write; a trace that
 * does not match is not used (every position stays NO_POS).
 */
static void order_load(struct log *lg, const char *path)
{
	size_t nq = 0, nc = 0, cap = 0, nline = 0;
	struct tev *q = NULL, *c = NULL;
	const char *why = NULL;
	unsigned long long sector, count;
	char act, line[256];
	uint64_t i;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		errx(1, "open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		nline++;
		if (sscanf(line, " %c %llu %llu", &act, &sector, &count) != 3 ||
		    (act != 'Q' && act != 'C'))
			errx(1, "%s: line %zu: not 'Q|C SECTOR COUNT'", path,
			     nline);
		if (nq == cap || nc == cap) {
			cap = cap ? 2 * cap : 1024;
			q = realloc(q, cap * sizeof(*q));
			c = realloc(c, cap * sizeof(*c));
			if (!q || !c)
				errx(1, "out of memory");
		}
		if (act == 'Q')
			q[nq++] = (struct tev){ sector, count, nline };
		else
			c[nc++] = (struct tev){ sector, count, nline };
	}
	if (ferror(f))
		errx(1, "read %s: %s", path, strerror(errno));
	fclose(f);
	qsort(q, nq, sizeof(*q), tev_cmp);
	qsort(c, nc, sizeof(*c), tev_cmp);
	if (!order_match(lg, q, nq, c, nc, &why)) {
		fprintf(stderr, "%s: --order %s not used: %s\n", prog, path, why);
		for (i = 0; i < lg->nr_entries; i++)
			lg->e[i].q_pos = lg->e[i].c_pos = NO_POS;
	}
	free(q);
	free(c);
}

static void log_close(struct log *lg)
{
	uint64_t i;

	for (i = 0; i < lg->nr_entries; i++)
		free(lg->e[i].mark);
	free(lg->e);
	close(lg->fd);
}

static const char *flags_str(uint64_t flags, char *buf, size_t len)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {
		{ LOG_FLUSH_FLAG, "FLUSH" },
		{ LOG_FUA_FLAG, "FUA" },
		{ LOG_DISCARD_FLAG, "DISCARD" },
		{ LOG_MARK_FLAG, "MARK" },
		{ LOG_METADATA_FLAG, "METADATA" },
	};
	size_t i, n = 0;

	if (!flags) {
		snprintf(buf, len, "WRITE");
		return buf;
	}
	buf[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (!(flags & names[i].bit))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "|" : "",
				      names[i].name);
		if (n >= len)
			return buf;
	}
	if (flags & ~LOG_KNOWN_FLAGS)
		snprintf(buf + n, len - n, "%s0x%" PRIx64, n ? "|" : "",
			 flags & ~LOG_KNOWN_FLAGS);
	return buf;
}

/* Print a mark with anything unprintable (and blanks) escaped. */
static void print_mark(FILE *f, const char *m)
{
	for (; *m; m++) {
		unsigned char c = (unsigned char)*m;

		if (c > ' ' && c < 0x7f && c != '\\')
			fputc(c, f);
		else
			fprintf(f, "\\x%02x", c);
	}
}

static void print_entry(FILE *f, const struct log *lg, uint64_t i)
{
	const struct entry *e = &lg->e[i];
	char fl[96];

	fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %s", i, e->sector,
		e->nr_sectors, flags_str(e->flags, fl, sizeof(fl)));
	if (e->mark) {
		fputc(' ', f);
		print_mark(f, e->mark);
	}
	fputc('\n', f);
}

struct target {
	int fd;
	const char *path;
	uint64_t size;
	bool is_blk;
	bool discard_zeroes;
	bool discard_warned;
	unsigned char *buf;	/* IO_CHUNK bytes */
};

static void zero_range(struct target *t, uint64_t off, uint64_t len)
{
	memset(t->buf, 0, IO_CHUNK);
	while (len) {
		size_t n = len < IO_CHUNK ? (size_t)len : IO_CHUNK;

		write_full(t->fd, t->path, t->buf, n, off);
		off += n;
		len -= n;
	}
}

/*
 * A discard leaves the range undefined; by default it is passed on
 * (BLKDISCARD, or a punched hole in a file), else left as it was.
 * --discard-zeroes writes zeroes instead, for a deterministic result.
 */
static void discard_range(struct target *t, uint64_t i, uint64_t off,
			  uint64_t len)
{
	int r;

	if (!len)
		return;
	if (t->discard_zeroes) {
		zero_range(t, off, len);
		return;
	}
	if (t->is_blk) {
		uint64_t range[2] = { off, len };

		r = ioctl(t->fd, BLKDISCARD, range);
	} else {
		r = fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)off, (off_t)len);
	}
	if (r && !t->discard_warned) {
		fprintf(stderr, "%s: entry %" PRIu64 ": discard on %s failed (%s); discards are not replayed (--discard-zeroes writes zeroes)\n",
			prog, i, t->path, strerror(errno));
		t->discard_warned = true;
	}
}

static void replay_entry(struct log *lg, struct target *t, uint64_t i)
{
	const struct entry *e = &lg->e[i];
	uint64_t ss = lg->sectorsize;
	uint64_t dst = e->sector * ss, len = e->nr_sectors * ss;
	uint64_t src = e->off + ss;

	if (verbose)
		print_entry(stderr, lg, i);
	if (e->flags & LOG_MARK_FLAG)
		return;
	if (dst > t->size || len > t->size - dst)
		errx(1, "entry %" PRIu64 ": sectors %" PRIu64 "+%" PRIu64 " lie beyond the end of %s (%" PRIu64 " bytes)",
		    i, e->sector, e->nr_sectors, t->path, t->size);
	if (e->flags & LOG_DISCARD_FLAG) {
		discard_range(t, i, dst, len);
		return;
	}
	while (len) {
		size_t n = len < IO_CHUNK ? (size_t)len : IO_CHUNK;

		read_full(lg->fd, lg->path, t->buf, n, src);
		write_full(t->fd, t->path, t->buf, n, dst);
		src += n;
		dst += n;
		len -= n;
	}
}

/* Torn writes: only the sectors of [tear_lo, tear_hi) (bytes) may tear. */
struct window {
	uint64_t tear_lo, tear_hi;
	bool must_tear;
	uint64_t whole, torn, dropped, discards, fua_prefix, nr_fua;
	uint64_t after_cut;	/* dropped: queued after the cut FUA completed */
	uint64_t first, end;	/* entries [first, end); end is the FLUSH */
};

enum wact { W_SKIP, W_DROP, W_WHOLE, W_TEAR };

/* Sectors of entry i inside the tear range. */
static uint64_t tear_sectors(const struct log *lg, const struct window *w,
			     uint64_t i)
{
	const struct entry *e = &lg->e[i];
	uint64_t ss = lg->sectorsize, lo = e->sector * ss;
	uint64_t hi = lo + e->nr_sectors * ss;

	if (e->flags & (LOG_MARK_FLAG | LOG_DISCARD_FLAG))
		return 0;
	lo = lo > w->tear_lo ? lo : w->tear_lo;
	hi = hi < w->tear_hi ? hi : w->tear_hi;
	return hi > lo ? (hi - lo) / ss : 0;
}

/*
 * Write entry i with some of its sectors inside the tear range left out:
 * each kept or not at random, then one flipped if that kept all or none.
 * Only for an entry with two or more sectors there, so it always tears.
 */
static void write_torn(struct log *lg, struct target *t, struct window *w,
		       uint64_t i)
{
	const struct entry *e = &lg->e[i];
	uint64_t ss = lg->sectorsize, dst = e->sector * ss;
	uint64_t src = e->off + ss, k, nin = 0, keep_in = 0, pick;
	bool *keep;

	keep = xmalloc(sizeof(*keep) * e->nr_sectors);
	for (k = 0; k < e->nr_sectors; k++) {
		uint64_t b = dst + k * ss;

		keep[k] = true;
		if (b + ss <= w->tear_lo || b >= w->tear_hi)
			continue;
		nin++;
		keep[k] = rng_below(2);
		keep_in += keep[k];
	}
	if (keep_in == 0 || keep_in == nin) {
		pick = rng_below(nin);
		for (k = 0; k < e->nr_sectors; k++) {
			uint64_t b = dst + k * ss;

			if (b + ss <= w->tear_lo || b >= w->tear_hi)
				continue;
			if (!pick--) {
				keep[k] = !keep[k];
				break;
			}
		}
	}
	for (k = 0; k < e->nr_sectors; k++) {
		if (!keep[k])
			continue;
		read_full(lg->fd, lg->path, t->buf, ss, src + k * ss);
		write_full(t->fd, t->path, t->buf, ss, dst + k * ss);
	}
	free(keep);
}

/*
 * The first FUA write not kept whole was cut before it completed: a plain
 * write queued after that (--order) was not submitted yet.
 */
static void drop_after_cut(const struct log *lg, struct window *w,
			   enum wact *act)
{
	uint64_t i, cut = NO_POS;

	w->after_cut = 0;
	for (i = w->first; i < w->end && cut == NO_POS; i++)
		if ((lg->e[i].flags & LOG_FUA_FLAG) &&
		    act[i - w->first] != W_WHOLE)
			cut = lg->e[i].c_pos;
	if (cut == NO_POS)
		return;
	for (i = w->first; i < w->end; i++) {
		const struct entry *e = &lg->e[i];
		enum wact *a = &act[i - w->first];

		if (e->flags & (LOG_FUA_FLAG | LOG_MARK_FLAG | LOG_DISCARD_FLAG))
			continue;
		if ((*a == W_WHOLE || *a == W_TEAR) && e->q_pos != NO_POS &&
		    e->q_pos > cut) {
			*a = W_DROP;
			w->after_cut++;
		}
	}
}

/* One draw of the state: an action per entry of the window. */
static bool plan_window(const struct log *lg, struct window *w,
			enum wact *act)
{
	uint64_t i, fua_seen = 0;
	bool tore = false;

	w->fua_prefix = rng_below(w->nr_fua + 1);
	for (i = w->first; i < w->end; i++) {
		const struct entry *e = &lg->e[i];
		bool tearable = tear_sectors(lg, w, i) >= 2;
		enum wact *a = &act[i - w->first];
		uint64_t r;

		if (e->flags & LOG_MARK_FLAG) {
			*a = W_SKIP;
		} else if (e->flags & LOG_DISCARD_FLAG) {
			*a = rng_below(2) ? W_WHOLE : W_DROP;
		} else if (e->flags & LOG_FUA_FLAG) {
			fua_seen++;
			if (fua_seen <= w->fua_prefix)
				*a = W_WHOLE;
			else if (fua_seen == w->fua_prefix + 1 && tearable &&
				 rng_below(4))
				*a = W_TEAR;
			else
				*a = W_DROP;
		} else {
			r = rng_below(8);
			if (r < 3)
				*a = W_DROP;
			else if (r >= 6 && tearable)
				*a = W_TEAR;
			else
				*a = W_WHOLE;
		}
	}
	drop_after_cut(lg, w, act);
	for (i = w->first; i < w->end; i++)
		tore |= act[i - w->first] == W_TEAR;
	return tore;
}

static void crash_window(struct log *lg, struct target *t, struct window *w)
{
	uint64_t i, tries, n;
	bool can_tear = false;
	enum wact *act;

	/*
	 * Empty flushes right at the start change no data: the power cut may
	 * as well come after them, in the epoch they open.
	 */
	while (w->first < lg->nr_entries &&
	       (lg->e[w->first].flags & LOG_FLUSH_FLAG) &&
	       !lg->e[w->first].nr_sectors)
		w->first++;
	for (i = w->first; i < lg->nr_entries; i++)
		if (lg->e[i].flags & LOG_FLUSH_FLAG)
			break;
	w->end = i;
	n = w->end - w->first;
	for (i = w->first; i < w->end; i++) {
		if (lg->e[i].flags & LOG_FUA_FLAG)
			w->nr_fua++;
		if (!(lg->e[i].flags & LOG_MARK_FLAG) &&
		    tear_sectors(lg, w, i) >= 2)
			can_tear = true;
	}
	act = xmalloc(sizeof(*act) * (n ? n : 1));
	/* --must-tear: draw again until a write tears, where one can. */
	for (tries = 0; !plan_window(lg, w, act) && w->must_tear && can_tear &&
	     tries < 10000; tries++)
		;
	for (i = w->first; i < w->end; i++) {
		switch (act[i - w->first]) {
		case W_SKIP:
			break;
		case W_DROP:
			w->dropped++;
			break;
		case W_WHOLE:
			replay_entry(lg, t, i);
			if (lg->e[i].flags & LOG_DISCARD_FLAG)
				w->discards++;
			else
				w->whole++;
			break;
		case W_TEAR:
			write_torn(lg, t, w, i);
			w->torn++;
			break;
		}
	}
	free(act);
}

static void print_help_text(FILE *f)
{
	fprintf(f,
		"usage: %s --log LOG [--replay DEV] [options]\n"
		"Replay (or list) a dm-log-writes log; entries are numbered from 0.\n"
		"\n"
		"  --log LOG          the log device or file (required)\n"
		"  --replay DEV       write the entries to DEV (device or file)\n"
		"  --start-entry N    begin at entry N (continue an earlier replay)\n"
		"  --limit N          stop after entry N\n"
		"  --end-mark NAME    stop after the mark NAME (its first occurrence\n"
		"                     at or after the start entry)\n"
		"  --discard-zeroes   replay discards as writes of zeroes\n"
		"  --crash-window     write a power cut's state of the entries from\n"
		"                     the start entry up to the next FLUSH entry\n"
		"                     instead of replaying them: each write whole or\n"
		"                     not at all, the FUA writes a prefix (needs\n"
		"                     --replay; --limit and --end-mark do not apply)\n"
		"  --seed N           the choices of --crash-window (default 1)\n"
		"  --tear-range S+N   512-byte sectors S..S+N-1 of the target may\n"
		"                     hold part of a write (--crash-window)\n"
		"  --must-tear        a state with a torn write, if the window has\n"
		"                     a write that can tear (--crash-window)\n"
		"  --order FILE       the logged device's trace of its writes, in\n"
		"                     time order: lines Q|C SECTOR COUNT (queued,\n"
		"                     completed); a plain write queued after the\n"
		"                     cut FUA write completed is not written\n"
		"                     (--crash-window)\n"
		"  --list             print each entry in range: number, sector,\n"
		"                     nr_sectors (in log sectors), flags, mark text\n"
		"  --find-flushes     print the number of each FLUSH or FUA entry\n"
		"                     in range\n"
		"  -v, --verbose      print each replayed entry on stderr\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0 ok, 1 error (bad log, I/O, mark not found), 2 usage.\n",
		prog);
}

static uint64_t parse_u64(const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-') {
		fprintf(stderr, "%s: %s: not a number: '%s'\n", prog, opt, s);
		exit(2);
	}
	return v;
}

enum {
	OPT_LOG = 256, OPT_REPLAY, OPT_LIMIT, OPT_END_MARK, OPT_START,
	OPT_LIST, OPT_FIND_FLUSHES, OPT_DISCARD_ZEROES, OPT_CRASH_WINDOW,
	OPT_SEED, OPT_TEAR_RANGE, OPT_MUST_TEAR, OPT_ORDER,
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "log", required_argument, NULL, OPT_LOG },
		{ "replay", required_argument, NULL, OPT_REPLAY },
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ "end-mark", required_argument, NULL, OPT_END_MARK },
		{ "start-entry", required_argument, NULL, OPT_START },
		{ "list", no_argument, NULL, OPT_LIST },
		{ "find-flushes", no_argument, NULL, OPT_FIND_FLUSHES },
		{ "discard-zeroes", no_argument, NULL, OPT_DISCARD_ZEROES },
		{ "crash-window", no_argument, NULL, OPT_CRASH_WINDOW },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "tear-range", required_argument, NULL, OPT_TEAR_RANGE },
		{ "must-tear", no_argument, NULL, OPT_MUST_TEAR },
		{ "order", required_argument, NULL, OPT_ORDER },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *log_path = NULL, *replay_path = NULL, *end_mark = NULL;
	const char *order_path = NULL;
	uint64_t start = 0, limit = UINT64_MAX, stop, i;
	bool list = false, find_flushes = false, discard_zeroes = false;
	bool window = false, seed_given = false, must_tear = false;
	uint64_t seed = 1, tear_lo = 0, tear_n = 0;
	char *plus;
	struct log lg;
	int c;

	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_LOG:
			log_path = optarg;
			break;
		case OPT_REPLAY:
			replay_path = optarg;
			break;
		case OPT_LIMIT:
			limit = parse_u64("--limit", optarg);
			break;
		case OPT_END_MARK:
			end_mark = optarg;
			break;
		case OPT_START:
			start = parse_u64("--start-entry", optarg);
			break;
		case OPT_LIST:
			list = true;
			break;
		case OPT_FIND_FLUSHES:
			find_flushes = true;
			break;
		case OPT_DISCARD_ZEROES:
			discard_zeroes = true;
			break;
		case OPT_CRASH_WINDOW:
			window = true;
			break;
		case OPT_SEED:
			seed = parse_u64("--seed", optarg);
			seed_given = true;
			break;
		case OPT_MUST_TEAR:
			must_tear = true;
			break;
		case OPT_ORDER:
			order_path = optarg;
			break;
		case OPT_TEAR_RANGE:
			plus = strchr(optarg, '+');
			if (!plus) {
				fprintf(stderr, "%s: --tear-range: not START+COUNT: '%s'\n",
					prog, optarg);
				return 2;
			}
			*plus = '\0';
			tear_lo = parse_u64("--tear-range", optarg);
			tear_n = parse_u64("--tear-range", plus + 1);
			if (tear_lo > UINT64_MAX / 512 - tear_n) {
				fprintf(stderr, "%s: --tear-range: too large\n", prog);
				return 2;
			}
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			print_help_text(stdout);
			return 0;
		default:
			print_help_text(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog,
			argv[optind]);
		print_help_text(stderr);
		return 2;
	}
	if (!log_path || (!replay_path && !list && !find_flushes)) {
		fprintf(stderr, "%s: need --log, and --replay, --list or --find-flushes\n",
			prog);
		print_help_text(stderr);
		return 2;
	}
	if (window && (!replay_path || list || find_flushes ||
		       limit != UINT64_MAX || end_mark)) {
		fprintf(stderr, "%s: --crash-window needs --replay and excludes --list, --find-flushes, --limit and --end-mark\n",
			prog);
		return 2;
	}
	if ((tear_n || seed_given || must_tear || order_path) && !window) {
		fprintf(stderr, "%s: --seed, --tear-range, --must-tear and --order go with --crash-window\n",
			prog);
		return 2;
	}
	if (list && find_flushes) {
		fprintf(stderr, "%s: --list and --find-flushes exclude each other\n",
			prog);
		return 2;
	}

	log_open(&lg, log_path);
	if (order_path)
		order_load(&lg, order_path);

	/* Entries [start, stop) are processed. */
	stop = lg.nr_entries;
	if (limit != UINT64_MAX && limit < stop)
		stop = limit + 1;
	if (end_mark) {
		for (i = start; i < stop; i++)
			if (lg.e[i].mark && !strcmp(lg.e[i].mark, end_mark))
				break;
		if (i == stop)
			errx(1, "mark '%s' not found in entries %" PRIu64 "..%" PRIu64,
			    end_mark, start, stop ? stop - 1 : 0);
		stop = i + 1;
	}

	if (list) {
		printf("# log %s: sectorsize %u, %" PRIu64 " entries; entry sector nr_sectors flags [mark]\n",
		       log_path, lg.sectorsize, lg.nr_entries);
		for (i = start; i < stop; i++)
			print_entry(stdout, &lg, i);
	} else if (find_flushes) {
		for (i = start; i < stop; i++)
			if (lg.e[i].flags & (LOG_FLUSH_FLAG | LOG_FUA_FLAG))
				printf("%" PRIu64 "\n", i);
	}
	if (fflush(stdout))
		errx(1, "write to stdout: %s", strerror(errno));

	if (replay_path) {
		struct target t = {
			.path = replay_path,
			.discard_zeroes = discard_zeroes,
		};

		t.fd = open(replay_path, O_WRONLY);
		if (t.fd < 0)
			errx(1, "open %s: %s", replay_path, strerror(errno));
		t.size = fd_size(t.fd, replay_path, &t.is_blk);
		t.buf = xmalloc(IO_CHUNK);
		if (window) {
			struct window w = {
				.tear_lo = tear_lo * 512,
				.tear_hi = (tear_lo + tear_n) * 512,
				.must_tear = must_tear,
				.first = start,
			};

			rng_state = seed;
			crash_window(&lg, &t, &w);
			printf("crash window: entries [%" PRIu64 ", %" PRIu64 ") (%s): %" PRIu64 " whole, %" PRIu64 " torn, %" PRIu64 " dropped, %" PRIu64 " of %" PRIu64 " FUA, %" PRIu64 " discards, %" PRIu64 " queued after the cut FUA\n",
			       w.first, w.end, w.end < lg.nr_entries ?
			       "up to the next FLUSH" : "up to the log's end",
			       w.whole, w.torn, w.dropped,
			       w.fua_prefix, w.nr_fua, w.discards,
			       w.after_cut);
			if (fflush(stdout))
				errx(1, "write to stdout: %s", strerror(errno));
			stop = start;
		}
		for (i = start; i < stop; i++)
			replay_entry(&lg, &t, i);
		if (fsync(t.fd))
			errx(1, "fsync %s: %s", replay_path, strerror(errno));
		if (close(t.fd))
			errx(1, "close %s: %s", replay_path, strerror(errno));
		free(t.buf);
		if (verbose)
			fprintf(stderr, "%s: replayed entries %" PRIu64 "..%" PRIu64 " onto %s\n",
				prog, start, stop ? stop - 1 : 0, replay_path);
	}
	log_close(&lg);
	return 0;
}
