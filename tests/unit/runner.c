// SPDX-License-Identifier: GPL-2.0
/*
 * Test runner: runs every registered TEST, or those whose name contains
 * argv[1]. Exit status is non-zero if any test failed.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

unsigned long ssdp_warn_count;

static struct ssdp_test *tests, **tail = &tests;
static jmp_buf fail_jmp;

void ssdp_test_register(struct ssdp_test *t)
{
	*tail = t;
	tail = &t->next;
}

void ssdp_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "  %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	longjmp(fail_jmp, 1);
}

void ssdp_warn_report(const char *file, int line, const char *cond)
{
	fprintf(stderr, "  WARN %s:%d: %s\n", file, line, cond);
	ssdp_warn_count++;
}

static int run_one(struct ssdp_test *t)
{
	if (setjmp(fail_jmp))
		return 0;
	t->fn();
	return 1;
}

int main(int argc, char **argv)
{
	unsigned int passed = 0, failed = 0;
	struct ssdp_test *t;

	setvbuf(stdout, NULL, _IONBF, 0);
	for (t = tests; t; t = t->next) {
		int ok;

		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		ssdp_warn_count = 0;
		printf("%-50s ", t->name);
		ok = run_one(t);
		if (ok && ssdp_warn_count) {
			fprintf(stderr, "  %lu unexpected WARN(s)\n",
				ssdp_warn_count);
			ok = 0;
		}
		printf("%s\n", ok ? "ok" : "FAIL");
		if (ok)
			passed++;
		else
			failed++;
	}
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
