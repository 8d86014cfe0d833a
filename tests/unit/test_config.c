// SPDX-License-Identifier: GPL-2.0
/* The knob table: table-line parsing, messages, printing; the SSD layout. */
#include "harness.h"
#include "config.h"
#include "ssdprio_format.h"
#include "meta_codec.h"

TEST(config_defaults_print_nothing)
{
	struct ssdp_config c;
	char buf[512];

	ssdp_config_defaults(&c);
	ASSERT_EQ(c.block_sectors, 8);
	ASSERT_EQ(c.set_blocks, 1024);
	ASSERT_EQ(c.write_policy, SSDP_WP_WRITEBACK);
	ASSERT_EQ(c.idle_dispatch_interval_ms, 200);
	ASSERT_EQ(c.batch_mode_delay_ms, 5000);
	ASSERT_EQ(ssdp_config_emit(&c, buf, sizeof(buf)), 0);
	ASSERT_EQ(buf[0], '\0');
}

TEST(config_set_and_round_trip)
{
	struct ssdp_config c, d;
	const char *why = NULL;
	char buf[512], *p, *key, *val;
	unsigned int n;

	ssdp_config_defaults(&c);
	ASSERT_EQ(ssdp_config_set(&c, "write_policy", "writearound",
				  SSDP_CFG_CTR, &why), 0);
	ASSERT_EQ(ssdp_config_set(&c, "block_size", "16", SSDP_CFG_CTR,
				  &why), 0);
	ASSERT_EQ(ssdp_config_set(&c, "read_alloc", "off", SSDP_CFG_MSG,
				  &why), 0);
	ASSERT_EQ(ssdp_config_set(&c, "evict_wait", "0", SSDP_CFG_MSG,
				  &why), 0);
	n = ssdp_config_emit(&c, buf, sizeof(buf));
	ASSERT_EQ(n, 4);
	ASSERT_TRUE(strstr(buf, "write_policy writearound") != NULL);

	/* Feeding the printed pairs back gives the same configuration. */
	ssdp_config_defaults(&d);
	for (p = buf; (key = strsep(&p, " ")) && (val = strsep(&p, " "));)
		ASSERT_EQ(ssdp_config_set(&d, key, val, SSDP_CFG_CTR, &why), 0);
	ASSERT_EQ(memcmp(&c, &d, sizeof(c)), 0);
}

TEST(config_rejects_bad_input_unchanged)
{
	static const char * const bad[][2] = {
		{ "no_such", "1" }, { "block_size", "7" }, { "block_size", "0" },
		{ "block_size", "4096" }, { "set_size", "2048" },
		{ "read_alloc", "yes" }, { "write_policy", "wb" },
		{ "evict_inflight", "0" }, { "fifo_batch", "-1" },
		{ "batch_mode_delay", "4294967296" }, { "evict_wait", "12x" },
		{ "evict_wait", "" }, { "evict_wait", NULL },
	};
	struct ssdp_config c, ref;
	const char *why;
	size_t i;

	ssdp_config_defaults(&c);
	ref = c;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		why = NULL;
		ASSERT_EQ(ssdp_config_set(&c, bad[i][0], bad[i][1],
					  SSDP_CFG_CTR, &why), -EINVAL);
		ASSERT_TRUE(why != NULL);
		ASSERT_EQ(memcmp(&c, &ref, sizeof(c)), 0);
	}
	/* Geometry cannot change under a live table. */
	ASSERT_EQ(ssdp_config_set(&c, "block_size", "16", SSDP_CFG_MSG, &why),
		  -EINVAL);
	ASSERT_EQ(ssdp_config_set(&c, "set_size", "128", SSDP_CFG_MSG, &why),
		  -EINVAL);
}

TEST(layout_fits_and_aligns)
{
	struct ssdp_layout l;
	uint64_t sizes[] = { 4096, 65536, 131072, 2097152, 1ULL << 31 };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		ASSERT_EQ(ssdp_layout_compute(&l, sizes[i], 8, 256), 0);
		ASSERT_TRUE(l.nr_csets > 0);
		ASSERT_EQ(l.data_start % 2048, 0);
		ASSERT_TRUE(l.data_start >= l.meta_sectors);
		ASSERT_EQ(l.rec_sectors,
			  (l.nr_csets * l.rec_bytes + 4095) / 4096 * 8);
		ASSERT_EQ(l.meta_sectors, SSDP_SB_SECTORS + 2 * l.rec_sectors);
		ASSERT_EQ(ssdp_rec_sector(&l, 1, 0),
			  SSDP_SB_SECTORS + l.rec_sectors);
		ASSERT_EQ(ssdp_rec_sector(&l, 0, 2), SSDP_SB_SECTORS + 16);
		ASSERT_EQ(ssdp_meta_blocks(&l) * 8, l.rec_sectors);
		ASSERT_TRUE(l.data_start + l.nr_csets * l.set_sectors <=
			    sizes[i]);
		/* Metadata is small: at least 95% of a large device is data. */
		if (sizes[i] >= 2097152)
			ASSERT_TRUE(l.nr_csets * l.set_sectors * 100 >=
				    sizes[i] * 95);
	}
	/* 80-byte header, 4 bits and 2 bits per block, a power of two. */
	ASSERT_EQ(ssdp_rec_bytes(1), 128);
	ASSERT_EQ(ssdp_rec_bytes(64), 128);
	ASSERT_EQ(ssdp_rec_bytes(128), 256);
	ASSERT_EQ(ssdp_rec_bytes(256), 512);
	ASSERT_EQ(ssdp_rec_bytes_v2(256), 256);
	ASSERT_EQ(ssdp_rec_bytes(512), 512);
	ASSERT_EQ(ssdp_rec_bytes(1024), 1024);
	ASSERT_EQ(ssdp_layout_compute(&l, 2048, 8, 256), -1);
}
