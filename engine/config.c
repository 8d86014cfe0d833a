// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssdprio tunables: parsing, validation and printing from one table.
 */
#include "config.h"

enum ssdp_key_type {
	SSDP_KEY_U32,		/* decimal in [min, max] */
	SSDP_KEY_POW2,		/* power of two in [min, max] */
	SSDP_KEY_BOOL,		/* on | off */
	SSDP_KEY_ENUM,		/* one of names[] */
};

struct ssdp_key {
	const char *name;
	size_t offset;
	enum ssdp_key_type type;
	unsigned int where;
	u32 min;
	u32 max;
	u32 def;
	const char * const *names;	/* SSDP_KEY_ENUM, indexed by value */
};

static const char * const ssdp_write_policy_names[] = {
	[SSDP_WP_WRITEBACK] = "writeback",
	[SSDP_WP_WRITETHROUGH] = "writethrough",
	[SSDP_WP_WRITEAROUND] = "writearound",
	NULL,
};

#define CFG_OFF(field) offsetof(struct ssdp_config, field)
#define BOTH (SSDP_CFG_CTR | SSDP_CFG_MSG)
#define HOUR_MS (3600U * 1000U)

/* Order here is the order of `dmsetup table` and of the docs. */
static const struct ssdp_key ssdp_keys[] = {
	{ "block_size", CFG_OFF(block_sectors), SSDP_KEY_POW2, SSDP_CFG_CTR,
	  1, 2048, 8, NULL },
	{ "set_size", CFG_OFF(set_blocks), SSDP_KEY_POW2, SSDP_CFG_CTR,
	  1, 1024, 1024, NULL },
	{ "cache", CFG_OFF(cache), SSDP_KEY_BOOL, SSDP_CFG_CTR,
	  0, 1, 1, NULL },
	{ "write_policy", CFG_OFF(write_policy), SSDP_KEY_ENUM, BOTH,
	  0, SSDP_WP_WRITEAROUND, SSDP_WP_WRITEBACK, ssdp_write_policy_names },
	{ "read_alloc", CFG_OFF(read_alloc), SSDP_KEY_BOOL, BOTH,
	  0, 1, 1, NULL },
	{ "free_floor", CFG_OFF(free_floor), SSDP_KEY_U32, BOTH,
	  0, 1U << 30, 0, NULL },
	{ "evict_wait", CFG_OFF(evict_wait_ms), SSDP_KEY_U32, BOTH,
	  0, HOUR_MS, 1000, NULL },
	{ "evict_inflight", CFG_OFF(evict_inflight), SSDP_KEY_U32, BOTH,
	  1, 64, 4, NULL },
	/* ms short of space with no quiet window; 0 = wait for quiet. */
	{ "evict_max_wait", CFG_OFF(evict_max_wait_ms), SSDP_KEY_U32, BOTH,
	  0, HOUR_MS, 10000, NULL },
	/* Percent of the cache's blocks; bcache's writeback_percent. */
	{ "dirty_target", CFG_OFF(dirty_target_pct), SSDP_KEY_U32, BOTH,
	  0, 100, 10, NULL },
	/* Seconds; 0 = no bound. */
	{ "dirty_max_age", CFG_OFF(dirty_max_age_s), SSDP_KEY_U32, BOTH,
	  0, 7 * 24 * 3600, 300, NULL },
	/* ms of quiet after which cleaning takes all dirty data; 0 = never. */
	{ "clean_all_wait", CFG_OFF(clean_all_wait_ms), SSDP_KEY_U32, BOTH,
	  0, HOUR_MS, 0, NULL },
	{ "lockout_clean", CFG_OFF(lockout_clean), SSDP_KEY_BOOL, BOTH,
	  0, 1, 1, NULL },
	/*
	 * Blocks; a gap of 64 KiB costs less HDD time than the half turn
	 * a second write waits, and one idle dispatch less.
	 */
	{ "writeback_gap", CFG_OFF(writeback_gap), SSDP_KEY_U32, BOTH,
	  0, 1024, 16, NULL },
	/* KiB; bcache's sequential_cutoff default. 0 = promote every miss. */
	{ "seq_cutoff", CFG_OFF(seq_cutoff_kib), SSDP_KEY_U32, BOTH,
	  0, 1U << 30, 4096, NULL },
	{ "throttle", CFG_OFF(throttle), SSDP_KEY_BOOL, BOTH,
	  0, 1, 1, NULL },
	{ "idle_dispatch_interval", CFG_OFF(idle_dispatch_interval_ms),
	  SSDP_KEY_U32, BOTH, 0, HOUR_MS, 200, NULL },
	{ "batch_mode_delay", CFG_OFF(batch_mode_delay_ms), SSDP_KEY_U32, BOTH,
	  0, HOUR_MS, 5000, NULL },
	{ "idle_max_wait", CFG_OFF(idle_max_wait_ms), SSDP_KEY_U32, BOTH,
	  0, HOUR_MS, 10000, NULL },
	{ "idle_batch_depth", CFG_OFF(idle_batch_depth), SSDP_KEY_U32, BOTH,
	  1, 1024, 16, NULL },
	{ "idle_alloc", CFG_OFF(idle_alloc), SSDP_KEY_BOOL, BOTH,
	  0, 1, 0, NULL },
	{ "read_expire", CFG_OFF(read_expire_ms), SSDP_KEY_U32, BOTH,
	  1, HOUR_MS, 500, NULL },
	{ "write_expire", CFG_OFF(write_expire_ms), SSDP_KEY_U32, BOTH,
	  1, HOUR_MS, 5000, NULL },
	{ "fifo_batch", CFG_OFF(fifo_batch), SSDP_KEY_U32, BOTH,
	  1, 1024, 16, NULL },
	{ "writes_starved", CFG_OFF(writes_starved), SSDP_KEY_U32, BOTH,
	  1, 1024, 2, NULL },
	/*
	 * 32 = a SATA disk's NCQ depth: the disk can still reorder, while
	 * bios beyond it wait in our deadline queues, not the device's.
	 */
	{ "normal_depth", CFG_OFF(normal_depth), SSDP_KEY_U32, BOTH,
	  1, 4096, 32, NULL },
	{ "idle_grace", CFG_OFF(idle_grace_ms), SSDP_KEY_U32, BOTH,
	  0, HOUR_MS, 10, NULL },
	/*
	 * Per mille of normal bios that may meet idle I/O sent into learnt
	 * gaps; 0 = the interval alone (the paper's strict throttle).
	 */
	{ "idle_budget", CFG_OFF(idle_budget), SSDP_KEY_U32, BOTH,
	  0, 1000, 10, NULL },
};

#define SSDP_NR_KEYS ARRAY_SIZE(ssdp_keys)

static u32 *ssdp_field(struct ssdp_config *cfg, const struct ssdp_key *k)
{
	return (u32 *)((char *)cfg + k->offset);
}

static u32 ssdp_field_get(const struct ssdp_config *cfg,
			  const struct ssdp_key *k)
{
	return *(const u32 *)((const char *)cfg + k->offset);
}

static const struct ssdp_key *ssdp_key_find(const char *name)
{
	size_t i;

	for (i = 0; i < SSDP_NR_KEYS; i++)
		if (!strcmp(ssdp_keys[i].name, name))
			return &ssdp_keys[i];
	return NULL;
}

int ssdp_parse_u32(const char *s, u32 *out)
{
	u64 v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (u64)(*s - '0');
		if (v > 0xffffffffULL)
			return -EINVAL;
	}
	*out = (u32)v;
	return 0;
}

void ssdp_config_defaults(struct ssdp_config *cfg)
{
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < SSDP_NR_KEYS; i++)
		*ssdp_field(cfg, &ssdp_keys[i]) = ssdp_keys[i].def;
}

bool ssdp_config_is_key(const char *key)
{
	return !!ssdp_key_find(key);
}

const char *ssdp_config_key_name(unsigned int i, unsigned int *where)
{
	if (i >= SSDP_NR_KEYS)
		return NULL;
	*where = ssdp_keys[i].where;
	return ssdp_keys[i].name;
}

static int ssdp_value_parse(const struct ssdp_key *k, const char *value,
			    u32 *out)
{
	u32 v;

	switch (k->type) {
	case SSDP_KEY_BOOL:
		if (!strcmp(value, "on"))
			v = 1;
		else if (!strcmp(value, "off"))
			v = 0;
		else
			return -EINVAL;
		break;
	case SSDP_KEY_ENUM:
		for (v = 0; k->names[v]; v++)
			if (!strcmp(k->names[v], value))
				break;
		if (!k->names[v])
			return -EINVAL;
		break;
	default:
		if (ssdp_parse_u32(value, &v))
			return -EINVAL;
		if (v < k->min || v > k->max)
			return -EINVAL;
		if (k->type == SSDP_KEY_POW2 && (v & (v - 1)))
			return -EINVAL;
		break;
	}
	*out = v;
	return 0;
}

int ssdp_config_set(struct ssdp_config *cfg, const char *key,
		    const char *value, unsigned int where, const char **why)
{
	const struct ssdp_key *k = ssdp_key_find(key);
	u32 v;

	if (!k) {
		*why = "Unknown key";
		return -EINVAL;
	}
	if (!(k->where & where)) {
		*why = "Key can only be set in the table line";
		return -EINVAL;
	}
	if (!value || ssdp_value_parse(k, value, &v)) {
		switch (k->type) {
		case SSDP_KEY_BOOL:
			*why = "Value must be on or off";
			break;
		case SSDP_KEY_ENUM:
			*why = "Value is not one of the allowed names";
			break;
		case SSDP_KEY_POW2:
			*why = "Value must be a power of two within range";
			break;
		default:
			*why = "Value is not a number within range";
			break;
		}
		return -EINVAL;
	}
	*ssdp_field(cfg, k) = v;
	return 0;
}

static size_t ssdp_emit_pair(const struct ssdp_key *k, u32 v, char *buf,
			     size_t len, size_t pos)
{
	const char *sep = pos ? " " : "";
	int n;

	if (pos >= len)
		return pos;
	if (k->type == SSDP_KEY_BOOL)
		n = snprintf(buf + pos, len - pos, "%s%s %s", sep, k->name,
			     v ? "on" : "off");
	else if (k->type == SSDP_KEY_ENUM)
		n = snprintf(buf + pos, len - pos, "%s%s %s", sep, k->name,
			     k->names[v]);
	else
		n = snprintf(buf + pos, len - pos, "%s%s %u", sep, k->name, v);
	if (n < 0)
		return pos;
	return pos + (size_t)n;
}

unsigned int ssdp_config_emit(const struct ssdp_config *cfg, char *buf,
			      size_t len)
{
	unsigned int pairs = 0;
	size_t pos = 0, i;

	if (!len)
		return 0;
	buf[0] = '\0';
	for (i = 0; i < SSDP_NR_KEYS; i++) {
		const struct ssdp_key *k = &ssdp_keys[i];
		u32 v = ssdp_field_get(cfg, k);

		if (v == k->def)
			continue;
		pos = ssdp_emit_pair(k, v, buf, len, pos);
		pairs++;
	}
	if (pos >= len)
		buf[len - 1] = '\0';
	return pairs;
}
