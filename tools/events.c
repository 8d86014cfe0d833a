// SPDX-License-Identifier: GPL-2.0
/*
 * What ssdprio-tool wait does: sleep on the device's device-mapper events
 * (the kernel raises one when cache_mode, meta_state or flush_state
 * changes, docs/target.md "Events") and read the status again after
 * each, until a condition holds.  No polling of the status line: DM_DEV_WAIT, as
 * `dmsetup wait` does.  See docs/tools.md, "wait".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libdevmapper.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "cmd.h"
#include "dm_status.h"
#include "events.h"
#include "live.h"
#include "msg.h"


/*
 * dirty_blocks raises no event (only the end of a flush does): --until
 * clean reads the status again this often, for a cache that cleaning or
 * a discard emptied.
 */
#define EV_CLEAN_RECHECK_S	5.0
/*
 * After the timer's first expiry it fires again this often, so that an
 * expiry just before the wait's ioctl began still ends that wait.
 */
#define EV_REARM_US		50000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Only interrupts the wait's ioctl (no SA_RESTART). */
static void on_alarm(int sig)
{
	(void)sig;
}

/* Arm SIGALRM in @secs, then every EV_REARM_US; 0 disarms it. */
static void arm_timer(double secs)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	if (secs > 0) {
		if (secs < 0.001)
			secs = 0.001;
		it.it_value.tv_sec = (time_t)secs;
		it.it_value.tv_usec = (suseconds_t)((secs - floor(secs)) * 1e6);
		it.it_interval.tv_usec = EV_REARM_US;
	}
	setitimer(ITIMER_REAL, &it, NULL);
}

/* libdevmapper's messages, dropped: an interrupted wait is no error. */
static void __printf(5, 6) quiet_log(int level, const char *file, int line, int dm_errno,
		      const char *f, ...)
{
	(void)level;
	(void)file;
	(void)line;
	(void)dm_errno;
	(void)f;
}

/* The device's event number; -1 when it cannot be read or is gone. */
static int event_nr_get(const char *name, uint32_t *nr)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_INFO);
	struct dm_info info;
	int r = -1;

	if (!dmt)
		return -1;
	if (dm_task_set_name(dmt, name) && dm_task_run(dmt) &&
	    dm_task_get_info(dmt, &info) && info.exists) {
		*nr = info.event_nr;
		r = 0;
	}
	dm_task_destroy(dmt);
	return r;
}

/*
 * Sleep until the device's event number is no longer @nr, at most @secs
 * (0: no bound).  Whatever ends it, the caller reads the state again.
 */
static void event_wait(const char *name, uint32_t nr, double secs)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_WAITEVENT);

	if (!dmt)
		return;
	dm_log_with_errno_init(quiet_log);
	arm_timer(secs);
	if (dm_task_set_name(dmt, name) && dm_task_set_event_nr(dmt, nr) &&
	    !dm_task_run(dmt) && dm_task_get_errno(dmt) != EINTR) {
		/* Gone (it is reported next), or broken: do not spin. */
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	arm_timer(0);
	dm_log_with_errno_init(NULL);
	dm_task_destroy(dmt);
}

static void state_line(const struct dm_status *st, const char *what,
		       uint32_t nr)
{
	if (!st_get(st, "cache") || strcmp(st_get(st, "cache"), "on")) {
		printf("%s: %s: cache off (event %u)\n", st->name, what, nr);
		return;
	}
	printf("%s: %s: cache_mode %s, meta_state %s, flush_state %s, dirty_blocks %s (event %u)\n",
	       st->name, what, st_get(st, "cache_mode") ?: "?",
	       st_get(st, "meta_state") ?: "?",
	       st_get(st, "flush_state") ?: "?",
	       st_get(st, "dirty_blocks") ?: "?", nr);
}

/*
 * The event number is read before the status, and the wait is from that
 * number: a change made after the read ends the wait at once, so none is
 * missed between the read and the wait.
 */
static int wait_loop(const char *name, const char *word, enum st_until u,
		     double timeout)
{
	double deadline = timeout ? now() + timeout : 0, left, slice;
	uint32_t nr, first = 0;
	struct dm_status st;
	bool started = false;
	int met;

	for (;;) {
		if (event_nr_get(name, &nr)) {
			/* It says why: no such device, or no status. */
			if (!dm_status_get(name, &st, false)) {
				st_free(&st);
				fprintf(stderr, TOOL ": %s: cannot read its event number\n",
					name);
			}
			return EXIT_FAIL;
		}
		if (dm_status_get(name, &st, false))
			return EXIT_FAIL;
		if (!started) {
			first = nr;
			started = true;
		}
		if (u == ST_UNTIL_NEXT && nr != first) {
			state_line(&st, "event", nr);
			st_free(&st);
			return 0;
		}
		met = st_until_met(&st, u);
		if (met > 0) {
			state_line(&st, word, nr);
			st_free(&st);
			return 0;
		}
		if (met < 0) {
			state_line(&st, "the last flush failed (flush again)",
				   nr);
			st_free(&st);
			return EXIT_BAD;
		}
		left = deadline ? deadline - now() : 0;
		if (deadline && left <= 0) {
			char what[64];

			snprintf(what, sizeof(what), "timed out after %g s",
				 timeout);
			state_line(&st, what, nr);
			st_free(&st);
			return EXIT_TIMEOUT;
		}
		st_free(&st);
		slice = left;
		if (u == ST_UNTIL_CLEAN && (!slice || slice > EV_CLEAN_RECHECK_S))
			slice = EV_CLEAN_RECHECK_S;
		event_wait(name, nr, slice);
	}
}

static void catch_alarm(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
}

int event_nr(const char *name, uint32_t *nr)
{
	return event_nr_get(name, nr);
}

void event_sleep(const char *name, uint32_t nr, double secs)
{
	catch_alarm();
	event_wait(name, nr, secs);
}

int wait_until(const char *name, const char *word, enum st_until u,
	       double timeout)
{
	int r;

	catch_alarm();
	r = wait_loop(name, word, u, timeout);
	fflush(stdout);
	dm_lib_release();
	return r;
}
