/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssdprio: the few kernel facilities used by the pure-logic files
 * (cache_map.c, evict_sm.c, sched_policy.c), so that the same sources build
 * as kernel code and as user-space unit tests (tests/unit).
 *
 * Only what those files use is provided; keep it that way so that the user
 * space side cannot drift from kernel semantics unnoticed.
 *
 * It is also the one place that knows kernel versions: every shim for an
 * API that changed between the supported kernels lives in the kernel half
 * below, under the upstream (newer) name, emulated on the older kernel, so
 * that call sites read like current mainline code.
 */
#ifndef SSDP_COMPAT_H
#define SSDP_COMPAT_H

#ifdef __KERNEL__

#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/build_bug.h>
#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/hrtimer.h>
#include <linux/log2.h>
#include <linux/math.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/version.h>
#include <linux/workqueue.h>
/*
 * hex2bin() and friends have their own header, which 7.x's kernel.h no
 * longer includes; older kernels have them through kernel.h (6.12 has
 * both).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/hex.h>
#endif

/*
 * Supported: Linux 6.1 (Debian 12) to 7.3 (Debian 13's backports); 6.1,
 * 6.12 and 7.3 run the guest tests.  Kernels in between build with the
 * same shims but are not tested, and anything outside the range is
 * refused here rather than half-working: block-layer APIs this target
 * depends on (queue limits, bio ioprio, blkcg) change from one release to
 * the next.  Keep dkms.conf's BUILD_EXCLUSIVE_KERNEL in step.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
#error "dm-ssdprio needs Linux 6.1 or later"
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(7, 4, 0)
#error "dm-ssdprio supports Linux 6.1 to 7.3; newer kernels are untested"
#endif

/*
 * Most APIs that changed inside the range need no shim, because the newer
 * form already works on 6.1:
 * - queue limits (6.9 validates them as a whole, 6.11 removed
 *   blk_limits_io_min()): .io_hints assigns limits->io_min.  The clamp to
 *   the physical block size that the helper did on 6.1 cannot matter,
 *   since io_min is only ever raised there.
 * - page_memcg() (gone in 6.12): folio_memcg(page_folio()), in 6.1 too,
 *   where page_memcg() was exactly that.
 * - discard limits: 6.12 derives max_discard_sectors from
 *   max_hw_discard_sectors and the user's cap when it validates the
 *   limits; 6.1 takes both as set.  .io_hints sets both, and 6.12
 *   recomputes the first.  discard_misaligned (not in 6.12) is left to
 *   dm's stacking.
 * A shim that is needed goes here, under the upstream name, emulated for
 * the older kernel.
 */

/*
 * 6.5 gave the block device open mode its own type, blk_mode_t (what
 * dm_table_get_mode() returns and dm_get_device() takes); before, both
 * used fmode_t.  Only sparse tells them apart.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
#define blk_mode_t fmode_t
#endif

/*
 * 6.13 added hrtimer_setup(), which sets the callback with the rest, and 7.x
 * removed hrtimer_init() and the separate assignment of ->function.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*function)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/*
 * 6.17 added WQ_PERCPU so that a per-CPU workqueue says so: workqueues
 * are to become unbound by default, and one with neither WQ_PERCPU nor
 * WQ_UNBOUND is what is being converted.  Before, per-CPU was the default.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 17, 0)
#define WQ_PERCPU 0
#endif

/* A cache map too big for RAM fails the table, with no allocation splat. */
static inline void *ssdp_zalloc(size_t size)
{
	return kvzalloc(size, GFP_KERNEL | __GFP_NOWARN);
}

static inline void ssdp_free(void *p)
{
	kvfree(p);
}

#else /* !__KERNEL__ */

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long s64;

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define BUILD_BUG_ON(cond)	((void)sizeof(char[1 - 2 * !!(cond)]))

/*
 * User space: every WARN counts, so that a test whose code path warns
 * fails even if it never asserts on it (the harness checks the counter).
 */
extern unsigned long ssdp_warn_count;
void ssdp_warn_report(const char *file, int line, const char *cond);

#define WARN_ON_ONCE(cond) ({						\
	bool __ssdp_c = !!(cond);					\
	if (unlikely(__ssdp_c))						\
		ssdp_warn_report(__FILE__, __LINE__, #cond);		\
	__ssdp_c;							\
})
#define WARN_ON(cond)	WARN_ON_ONCE(cond)

#define BITS_PER_LONG		(CHAR_BIT * (int)sizeof(long))
#define BIT_WORD(nr)		((nr) / BITS_PER_LONG)
#define BIT_MASK(nr)		(1UL << ((nr) % BITS_PER_LONG))
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define BITS_TO_LONGS(nr)	DIV_ROUND_UP(nr, BITS_PER_LONG)

#define min(a, b) ({							\
	__typeof__(a) __ssdp_a = (a);					\
	__typeof__(b) __ssdp_b = (b);					\
	__ssdp_a < __ssdp_b ? __ssdp_a : __ssdp_b;			\
})
#define max(a, b) ({							\
	__typeof__(a) __ssdp_a = (a);					\
	__typeof__(b) __ssdp_b = (b);					\
	__ssdp_a > __ssdp_b ? __ssdp_a : __ssdp_b;			\
})

static inline u64 div64_u64(u64 dividend, u64 divisor)
{
	return dividend / divisor;
}

static inline bool is_power_of_2(unsigned long n)
{
	return n != 0 && (n & (n - 1)) == 0;
}

static inline int ilog2(unsigned long n)
{
	return BITS_PER_LONG - 1 - __builtin_clzl(n);
}

static inline unsigned long rounddown_pow_of_two(unsigned long n)
{
	return 1UL << ilog2(n);
}

static inline void *ssdp_zalloc(size_t size)
{
	return calloc(1, size);
}

static inline void ssdp_free(void *p)
{
	free(p);
}

static inline void __set_bit(unsigned long nr, unsigned long *addr)
{
	addr[BIT_WORD(nr)] |= BIT_MASK(nr);
}

static inline void __clear_bit(unsigned long nr, unsigned long *addr)
{
	addr[BIT_WORD(nr)] &= ~BIT_MASK(nr);
}

static inline bool test_bit(unsigned long nr, const unsigned long *addr)
{
	return (addr[BIT_WORD(nr)] & BIT_MASK(nr)) != 0;
}

static inline bool __test_and_set_bit(unsigned long nr, unsigned long *addr)
{
	bool old = test_bit(nr, addr);

	__set_bit(nr, addr);
	return old;
}

static inline bool __test_and_clear_bit(unsigned long nr, unsigned long *addr)
{
	bool old = test_bit(nr, addr);

	__clear_bit(nr, addr);
	return old;
}

static inline unsigned int bitmap_weight(const unsigned long *src,
					 unsigned int nbits)
{
	unsigned int i, w = 0;

	for (i = 0; i < nbits / BITS_PER_LONG; i++)
		w += __builtin_popcountl(src[i]);
	if (nbits % BITS_PER_LONG)
		w += __builtin_popcountl(src[i] &
					 (~0UL >> (BITS_PER_LONG -
						   nbits % BITS_PER_LONG)));
	return w;
}

static inline unsigned long __ssdp_find_next(const unsigned long *addr,
					     unsigned long size,
					     unsigned long offset,
					     unsigned long invert)
{
	unsigned long w;

	if (offset >= size)
		return size;
	w = (addr[BIT_WORD(offset)] ^ invert) &
	    (~0UL << (offset % BITS_PER_LONG));
	offset -= offset % BITS_PER_LONG;
	while (!w) {
		offset += BITS_PER_LONG;
		if (offset >= size)
			return size;
		w = addr[BIT_WORD(offset)] ^ invert;
	}
	offset += __builtin_ctzl(w);
	return offset < size ? offset : size;
}

static inline unsigned long find_next_bit(const unsigned long *addr,
					  unsigned long size,
					  unsigned long offset)
{
	return __ssdp_find_next(addr, size, offset, 0);
}

static inline unsigned long find_next_zero_bit(const unsigned long *addr,
					       unsigned long size,
					       unsigned long offset)
{
	return __ssdp_find_next(addr, size, offset, ~0UL);
}

#endif /* __KERNEL__ */

#endif /* SSDP_COMPAT_H */
