// SPDX-License-Identifier: GPL-2.0
#include "harness.h"
#include "seq_detect.h"

TEST(seq_one_stream_grows)
{
	struct ssdp_seq_detect d;

	ssdp_seq_init(&d);
	ASSERT_EQ(ssdp_seq_note(&d, 1000, 8), 8);
	ASSERT_EQ(ssdp_seq_note(&d, 1008, 8), 16);
	ASSERT_EQ(ssdp_seq_note(&d, 1016, 2048), 2064);
}

TEST(seq_sector_zero_is_not_a_continuation)
{
	struct ssdp_seq_detect d;

	ssdp_seq_init(&d);
	ASSERT_EQ(ssdp_seq_note(&d, 0, 8), 8);
	ASSERT_EQ(ssdp_seq_note(&d, 0, 8), 8);
	ASSERT_EQ(ssdp_seq_note(&d, 8, 8), 16);
}

TEST(seq_random_reads_stay_short)
{
	struct ssdp_seq_detect d;
	u64 s = 12345;
	int i;

	ssdp_seq_init(&d);
	for (i = 0; i < 1000; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		ASSERT_EQ(ssdp_seq_note(&d, (s >> 20) & ~7ULL, 8), 8);
	}
}

TEST(seq_interleaved_streams_are_told_apart)
{
	struct ssdp_seq_detect d;
	u64 a = 0, b = 1 << 20, got_a = 0, got_b = 0;
	int i;

	ssdp_seq_init(&d);
	for (i = 0; i < 100; i++) {
		got_a = ssdp_seq_note(&d, a, 16);
		a += 16;
		got_b = ssdp_seq_note(&d, b, 16);
		b += 16;
	}
	ASSERT_EQ(got_a, 1600);
	ASSERT_EQ(got_b, 1600);
}

TEST(seq_random_noise_evicts_the_least_recent_stream_only)
{
	struct ssdp_seq_detect d;
	u64 a = 0;
	int i, j;

	ssdp_seq_init(&d);
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(ssdp_seq_note(&d, a, 8), (u64)(i + 1) * 8);
		a += 8;
		/* fewer random reads than streams between two of the stream's */
		for (j = 0; j < SSDP_SEQ_STREAMS - 1; j++)
			ssdp_seq_note(&d, 1000000 + i * 100 + j * 10, 1);
	}
	/* As many random reads as streams push the stream out. */
	for (j = 0; j < SSDP_SEQ_STREAMS; j++)
		ssdp_seq_note(&d, 5000000 + j * 10, 1);
	ASSERT_EQ(ssdp_seq_note(&d, a, 8), 8);
}

/* A peek tells the stream a bio would continue, and changes nothing. */
TEST(seq_peek_is_read_only)
{
	struct ssdp_seq_detect d;

	ssdp_seq_init(&d);
	ASSERT_EQ(ssdp_seq_peek(&d, 0), 0);
	ASSERT_EQ(ssdp_seq_note(&d, 1000, 8), 8);
	ASSERT_EQ(ssdp_seq_peek(&d, 1008), 8);
	ASSERT_EQ(ssdp_seq_peek(&d, 1008), 8);
	ASSERT_EQ(ssdp_seq_peek(&d, 1016), 0);
	ASSERT_EQ(ssdp_seq_note(&d, 1008, 8), 16);
}
