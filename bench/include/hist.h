/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Log-linear histogram of nanosecond values, HDR style: values below 256
 * are exact, above that every power of two is split into 128 sub-buckets,
 * so a bucket is at most 1/128 (< 0.8 %) of its value wide.  Fixed size
 * (~58 KiB), no allocation, one writer: threads keep their own and
 * hist_merge() them afterwards.  Shared by bench/rr/napi_rr.c and
 * bench/memcached/mc_load.c so that their percentiles mean the same.
 */
#ifndef BENCH_HIST_H
#define BENCH_HIST_H

#include <stdint.h>
#include <string.h>

#define HIST_SUB_BITS	7
#define HIST_SUB	(1u << HIST_SUB_BITS)
#define HIST_BUCKETS	(HIST_SUB + (64 - HIST_SUB_BITS) * HIST_SUB)

struct hist {
	uint64_t count;
	uint64_t sum;
	uint64_t min;
	uint64_t max;
	uint64_t bucket[HIST_BUCKETS];
};

static inline unsigned int hist_index(uint64_t v)
{
	unsigned int shift;

	if (v < HIST_SUB)
		return (unsigned int)v;
	shift = 63 - __builtin_clzll(v) - HIST_SUB_BITS;
	return HIST_SUB + shift * HIST_SUB + (unsigned int)((v >> shift) - HIST_SUB);
}

/* Middle of the bucket: the error is then at most half a bucket. */
static inline uint64_t hist_value(unsigned int idx)
{
	unsigned int shift;
	uint64_t low;

	if (idx < HIST_SUB)
		return idx;
	shift = (idx - HIST_SUB) / HIST_SUB;
	low = (uint64_t)((idx - HIST_SUB) % HIST_SUB + HIST_SUB) << shift;
	return low + ((1ull << shift) - 1) / 2;
}

static inline void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

static inline void hist_add(struct hist *h, uint64_t v)
{
	h->bucket[hist_index(v)]++;
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

/* Value at percentile p (0..100), clamped to the exact min and max. */
static inline uint64_t hist_percentile(const struct hist *h, double p)
{
	uint64_t rank, seen = 0, v;
	unsigned int i;

	if (!h->count)
		return 0;
	/* ceil(), but floating noise must not push an exact rank up:
	 * 99.9 % of 1000 samples is the 999th, not the 1000th.
	 */
	rank = (uint64_t)(p / 100.0 * (double)h->count + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank)
			break;
	}
	v = hist_value(i);
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

static inline uint64_t hist_mean(const struct hist *h)
{
	return h->count ? h->sum / h->count : 0;
}

/* Add SRC's samples to DST (both hist_init()ed). */
static inline void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned int i;

	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	for (i = 0; i < HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
}

#endif /* BENCH_HIST_H */
