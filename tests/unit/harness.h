/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal user-space unit test harness for the dm-ssdprio pure-logic files.
 *
 *	TEST(name) { ASSERT_EQ(a, b); ... }
 *
 * Tests register themselves through a constructor; runner.c runs them all
 * in link order, prints one line per test and ends with "N passed, N failed".
 * A failed ASSERT_* ends the current test. A WARN_ON_ONCE hit in the code
 * under test fails the test too, unless the test consumes it with
 * EXPECT_WARNS().
 */
#ifndef SSDP_TEST_HARNESS_H
#define SSDP_TEST_HARNESS_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct ssdp_test {
	const char *name;
	void (*fn)(void);
	struct ssdp_test *next;
};

void ssdp_test_register(struct ssdp_test *t);
_Noreturn void ssdp_test_fail(const char *file, int line, const char *fmt,
			      ...);
extern unsigned long ssdp_warn_count;

#define TEST(name)							\
	static void test_##name(void);					\
	static struct ssdp_test test_reg_##name = {			\
		#name, test_##name, NULL				\
	};								\
	__attribute__((constructor)) static void test_ctor_##name(void) \
	{								\
		ssdp_test_register(&test_reg_##name);			\
	}								\
	static void test_##name(void)

#define ASSERT_TRUE(c) do {						\
	if (!(c))							\
		ssdp_test_fail(__FILE__, __LINE__, "expected: %s", #c);	\
} while (0)

#define ASSERT_FALSE(c) do {						\
	if (c)								\
		ssdp_test_fail(__FILE__, __LINE__, "expected false: %s", \
			       #c);					\
} while (0)

#define ASSERT_OP(a, op, b) do {					\
	unsigned long long __a = (unsigned long long)(a);		\
	unsigned long long __b = (unsigned long long)(b);		\
	if (!(__a op __b))						\
		ssdp_test_fail(__FILE__, __LINE__,			\
			       "%s %s %s: %llu vs %llu", #a, #op, #b,	\
			       __a, __b);				\
} while (0)

#define ASSERT_STR_EQ(a, b) do {					\
	const char *__a = (a), *__b = (b);				\
	if (strcmp(__a, __b))						\
		ssdp_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" vs \"%s\"", \
			       #a, #b, __a, __b);			\
} while (0)

#define ASSERT_EQ(a, b)	ASSERT_OP(a, ==, b)
#define ASSERT_NE(a, b)	ASSERT_OP(a, !=, b)
#define ASSERT_LT(a, b)	ASSERT_OP(a, <, b)
#define ASSERT_LE(a, b)	ASSERT_OP(a, <=, b)
#define ASSERT_GT(a, b)	ASSERT_OP(a, >, b)
#define ASSERT_GE(a, b)	ASSERT_OP(a, >=, b)

/* Run stmt; it must hit at least one WARN, which is then forgiven. */
#define EXPECT_WARNS(stmt) do {						\
	unsigned long __w = ssdp_warn_count;				\
	stmt;								\
	if (ssdp_warn_count == __w)					\
		ssdp_test_fail(__FILE__, __LINE__,			\
			       "expected a WARN from: %s", #stmt);	\
	ssdp_warn_count = __w;						\
} while (0)

#endif /* SSDP_TEST_HARNESS_H */
