// SPDX-License-Identifier: GPL-2.0
/*
 * ssdprio-tool create, activate, deactivate and udev-role: devices made
 * and removed, by hand (create: format a blank cache once), from the
 * ssdpriotab at boot (activate --wait, deactivate: the systemd unit) and
 * on udev events (activate --udev, udev-role: the udev rule).  A device
 * activated from the tab gets the DM UUID SSDPRIO-<cache uuid>, by which
 * udev's rules and blkid tell it.  See docs/tools.md, "Boot with systemd"
 * and "The raw disks are hidden".
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cache_scan.h"
#include "cmd.h"
#include "live.h"
#include "tab.h"
#include "util.h"

#define ACTIVATE_LOCK		"/run/ssdprio-activate.lock"

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
		/* What it would do, as the dmsetup command that does it. */
		printf("dmsetup create %s --uuid %s --table '%s'\n", e->name,
		       uuid, t.s);
		r = EXIT_OK;
		goto out;
	}
	kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kfd >= 0)
		lseek(kfd, 0, SEEK_END);
	if (dm_create(e->name, uuid, t.s)) {
		char why[512];

		if (kmsg_reason(kfd, why, sizeof(why)))
			err("%s: the kernel refused the table: %s; table: %s",
			    e->name, why, t.s);
		else
			err("%s: creating the device failed: %s; table: %s",
			    e->name, dm_last_error(), t.s);
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
int cmd_udev_role(int argc, char **argv)
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
	while ((c = cmd_getopt(argc, argv, "", opts)) != -1)
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

int cmd_activate(int argc, char **argv)
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
	while ((c = cmd_getopt(argc, argv, "", opts)) != -1) {
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
		 * the create waits for them (udev sync) while we hold the
		 * lock.
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
 * the remove's retries (dmsetup's --retry) ride out udev's brief opens;
 * past that it stays for the shutdown's final detach, which removes it once nothing holds it.
 */
int cmd_deactivate(int argc, char **argv)
{
	static const struct option opts[] = { OPT_HELP, OPT_END };
	int i, r = EXIT_OK;

	while (cmd_getopt(argc, argv, "", opts) != -1)
		;
	if (cmd_args(argc, argv, ARGS("a device <name>"), -1))
		return EXIT_FAIL;
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
		if (dm_remove(argv[i], true)) {
			err("%s: not removed (%s): still in use?", argv[i],
			    dm_last_error());
			r = EXIT_BAD;
			continue;
		}
		notice("%s: removed cleanly", argv[i]);
	}
	return r;
}

/*
 * create: the way to start a cache.  A blank cache device is formatted
 * (a 'format' table, the origin_id derived unless given), then named by
 * its new superblock's uuid; a cache that is ours already is loaded, as
 * the tab would load it.
 */
int cmd_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "force", no_argument, NULL, 'f' },
		OPT_HELP, OPT_END,
	};
	struct activate_opts o = { 0 };
	char uuid[sizeof(DM_UUID_PREFIX) + 2 * 16], why[512];
	struct tab_entry e = { 0 };
	enum ssdp_sb_result res;
	struct sbuf t = { 0 };
	bool force = false;
	struct ssdp_scan s;
	struct dev cd;
	int c, r, kfd = -1;

	while ((c = cmd_getopt(argc, argv, "", opts)) != -1) {
		if (c == 'n')
			o.dry_run = true;
		else if (c == 'f')
			force = true;
	}
	if (cmd_args(argc, argv, ARGS("the device <name>",
				      "the origin device <origin_dev>",
				      "the cache device <cache_dev>"), -1))
		return EXIT_FAIL;
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
	if (dm_create(e.name, NULL, t.s)) {
		if (kmsg_reason(kfd, why, sizeof(why)))
			err("%s: the kernel refused the table: %s; table: %s",
			    e.name, why, t.s);
		else
			err("%s: creating the device failed: %s; table: %s",
			    e.name, dm_last_error(), t.s);
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
	if (dm_set_uuid(e.name, uuid)) {
		err("%s: setting its DM UUID %s: %s", e.name, uuid,
		    dm_last_error());
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
