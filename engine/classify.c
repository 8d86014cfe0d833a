// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio bio classification: normal or idle.
 *
 * Idle = the bio's I/O priority class is IDLE (or the submitting task's,
 * when the bio has none), or the bio's blkcg is one of the idle_cgroup
 * directories or below one.  Bios flagged REQ_PREFLUSH, REQ_FUA or REQ_META
 * are always normal: other tasks wait on them (journal commits, log
 * writes), so holding them would invert priority.
 */
#include <linux/ioprio.h>
#include <linux/cgroup.h>
#include <linux/blk-cgroup.h>
#include <linux/namei.h>
#include <linux/magic.h>
#include <linux/rcupdate.h>
#include <linux/memcontrol.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/ctype.h>
#include <linux/string.h>

#include "ssdprio.h"

#define SSDP_MAX_IDLE_CGROUPS	16
/* Bytes of " idle_cgroup <path>" pairs in the table line, all of them. */
#define SSDP_IDLE_CGROUPS_BYTES	2048

/*
 * sp->idle_cgroups.  Writers (under cfg_lock) fill an entry, then publish
 * it by raising @nr with release semantics, and a new set with
 * rcu_assign_pointer() once its first entry is in; readers (.map) load @nr
 * with acquire under rcu_read_lock().  Clearing unpublishes the whole set
 * and waits for an RCU grace period before dropping references.
 */
struct ssdp_idle_cgroups {
	unsigned int nr;
	struct cgroup *cgrp[SSDP_MAX_IDLE_CGROUPS];
	char *path[SSDP_MAX_IDLE_CGROUPS];
};

/*
 * The cgroup a bio belongs to (under rcu_read_lock).  Its blkcg when it has
 * one; but the clones dm core hands to .map carry no blkg yet (dm
 * associates it with the original bio's only at submission), so then: the
 * submitting task's cgroup, or, for kernel threads (flusher kworkers doing
 * writeback), the memory cgroup the pages are charged to: the dirtying
 * cgroup, the one cgroup writeback itself attributes the I/O to.
 */
static struct cgroup *ssdp_bio_cgroup(struct bio *bio)
{
	struct cgroup_subsys_state *css = bio_blkcg_css(bio);
#ifdef CONFIG_MEMCG
	struct mem_cgroup *memcg;
#endif

	if (css)
		return css->cgroup;
	if (!(current->flags & PF_KTHREAD))
		return task_dfl_cgroup(current);
#ifdef CONFIG_MEMCG
	if (bio_has_data(bio) && bio->bi_iter.bi_size) {
		/*
		 * Not folio_memcg(): a slab page (a file system's small
		 * metadata buffer) carries an object vector, not a memcg.
		 */
		memcg = page_memcg_check(bio_page(bio));
		if (memcg)
			return memcg->css.cgroup;
	}
#endif
	return NULL;
}

static struct ssdp_idle_cgroups *ssdp_idle_cgroups_w(struct ssdprio *sp)
{
	return rcu_dereference_protected(sp->idle_cgroups,
					 lockdep_is_held(&sp->cfg_lock));
}

static bool ssdp_idle_cgroup_match(struct ssdprio *sp, struct bio *bio)
{
	struct ssdp_idle_cgroups *ic;
	struct cgroup *cgrp;
	unsigned int i, nr;
	bool hit = false;

	if (!rcu_access_pointer(sp->idle_cgroups))
		return false;
	rcu_read_lock();
	cgrp = ssdp_bio_cgroup(bio);
	if (!cgrp) {
		rcu_read_unlock();
		return false;
	}
	ic = rcu_dereference(sp->idle_cgroups);
	if (ic) {
		/* Entries below @nr are filled in (release in _add()). */
		nr = smp_load_acquire(&ic->nr);
		for (i = 0; i < nr && !hit; i++)
			hit = cgroup_is_descendant(cgrp, ic->cgrp[i]);
	}
	rcu_read_unlock();
	return hit;
}

/*
 * The class decides everything downstream, so it is fixed once, here, in
 * the submitter's context: a bio with no class of its own takes the
 * submitting task's (ionice -c3 buffered reads arrive that way), and the
 * answer is written back so a bio deferred to a worker keeps it.
 *
 * *@housekeeping is set for a normal bio that is only normal because of
 * its flags (REQ_PREFLUSH, REQ_FUA, REQ_META) and was submitted by a
 * kernel thread (jbd2's commits, the flusher's metadata write-back, XFS's
 * log worker) or belongs to the idle class (an idle task's inode table
 * reads).  It is normal: never held, since others may wait on it.  But it
 * is no sign that a normal workload is running: an idle job that reads
 * and writes files makes the journal commit, the flusher write metadata
 * back and itself read metadata every few seconds.  The scheduler does
 * not let such bios end batch mode or restart its quiet time.  A normal
 * task's own bios, whatever their flags, count as usual.
 */
bool ssdp_classify_idle(struct ssdprio *sp, struct bio *bio,
			bool *housekeeping)
{
	int prio = bio->bi_ioprio;
	bool idle;

	if (IOPRIO_PRIO_CLASS(prio) == IOPRIO_CLASS_NONE) {
		prio = get_current_ioprio();
		bio->bi_ioprio = prio;
	}
	idle = IOPRIO_PRIO_CLASS(prio) == IOPRIO_CLASS_IDLE ||
	       ssdp_idle_cgroup_match(sp, bio);
	if (bio->bi_opf & SSDP_NEVER_IDLE) {
		*housekeeping = idle || (current->flags & PF_KTHREAD);
		return false;
	}
	*housekeeping = false;
	return idle;
}

/*
 * @path: an absolute path to a cgroup v2 directory (wherever cgroup2 is
 * mounted, e.g. /sys/fs/cgroup/maint), or a path relative to the cgroup2
 * root (maint, /maint).
 */
static struct cgroup *ssdp_cgroup_lookup(const char *path, const char **why)
{
	struct cgroup *cgrp;
	struct path p;

	if (path[0] == '/' && !kern_path(path, LOOKUP_FOLLOW, &p)) {
		struct super_block *sb = p.dentry->d_sb;
		struct inode *inode = d_inode(p.dentry);
		u64 id = inode->i_ino;
		bool dir = S_ISDIR(inode->i_mode);

		if (sb->s_magic != CGROUP2_SUPER_MAGIC || !dir) {
			path_put(&p);
			*why = "idle_cgroup: path is not a cgroup v2 directory";
			return ERR_PTR(-EINVAL);
		}
		path_put(&p);
		/* A kernfs directory's inode number is its cgroup id. */
		cgrp = cgroup_get_from_id(id);
		if (IS_ERR(cgrp))
			*why = "idle_cgroup: cgroup not found (or outside this cgroup namespace)";
		return cgrp;
	}
	cgrp = cgroup_get_from_path(path);
	if (IS_ERR(cgrp))
		*why = "idle_cgroup: no such cgroup v2 directory (absolute path, or relative to the cgroup2 root)";
	return cgrp;
}

int ssdp_idle_cgroup_add(struct ssdprio *sp, const char *path,
			 const char **why)
{
	struct ssdp_idle_cgroups *old = ssdp_idle_cgroups_w(sp), *ic = old;
	struct cgroup *cgrp;
	unsigned int i;
	char *copy;

	size_t bytes = strlen(" idle_cgroup ") + (path ? strlen(path) : 0);

	if (!path || !*path) {
		*why = "idle_cgroup: empty path";
		return -EINVAL;
	}
	/*
	 * The table line (dmsetup table, what tools reload from) must give
	 * back every path as one argument, and all of them must fit in it.
	 */
	for (i = 0; path[i]; i++) {
		if (isspace(path[i]) || path[i] == '\\') {
			*why = "idle_cgroup: a path with white space or a backslash cannot be shown in the table line";
			return -EINVAL;
		}
	}
	if (ic) {
		for (i = 0; i < ic->nr; i++) {
			if (!strcmp(ic->path[i], path))
				return 0;	/* already there */
			bytes += strlen(" idle_cgroup ") + strlen(ic->path[i]);
		}
		if (ic->nr >= SSDP_MAX_IDLE_CGROUPS) {
			*why = "idle_cgroup: too many (at most 16)";
			return -EINVAL;
		}
	}
	if (bytes > SSDP_IDLE_CGROUPS_BYTES) {
		*why = "idle_cgroup: the paths would not fit in the table line (2048 bytes for all of them)";
		return -EINVAL;
	}
	cgrp = ssdp_cgroup_lookup(path, why);
	if (IS_ERR(cgrp))
		return -EINVAL;
	copy = kstrdup(path, GFP_KERNEL);
	if (!ic)
		ic = kzalloc(sizeof(*ic), GFP_KERNEL);
	if (!copy || !ic) {
		kfree(copy);
		if (ic != old)
			kfree(ic);
		cgroup_put(cgrp);
		*why = "idle_cgroup: out of memory";
		return -ENOMEM;
	}
	ic->cgrp[ic->nr] = cgrp;
	ic->path[ic->nr] = copy;
	/* Publish the filled entry to lockless readers (acquire in _match). */
	smp_store_release(&ic->nr, ic->nr + 1);
	if (ic != old)
		/* And a new set only once it is filled in. */
		rcu_assign_pointer(sp->idle_cgroups, ic);
	return 0;
}

unsigned int ssdp_idle_cgroup_emit(struct ssdprio *sp, char *buf, size_t len)
{
	struct ssdp_idle_cgroups *ic = ssdp_idle_cgroups_w(sp);
	unsigned int i, pairs = 0;
	size_t pos = 0;
	int n;

	if (!len)
		return 0;
	buf[0] = '\0';
	if (!ic)
		return 0;
	/* Each pair starts with a space: @buf follows the config pairs. */
	for (i = 0; i < ic->nr && pos < len; i++) {
		n = snprintf(buf + pos, len - pos, " idle_cgroup %s",
			     ic->path[i]);
		if (n < 0 || pos + n >= len) {
			buf[pos] = '\0';
			break;
		}
		pos += n;
		pairs++;
	}
	return pairs;
}

/* ctr's error path, dtr, and the idle_cgroup_clear message. */
void ssdp_idle_cgroup_clear(struct ssdprio *sp)
{
	struct ssdp_idle_cgroups *ic = ssdp_idle_cgroups_w(sp);
	unsigned int i;

	if (!ic)
		return;
	RCU_INIT_POINTER(sp->idle_cgroups, NULL);
	synchronize_rcu();
	for (i = 0; i < ic->nr; i++) {
		cgroup_put(ic->cgrp[i]);
		kfree(ic->path[i]);
	}
	kfree(ic);
}
