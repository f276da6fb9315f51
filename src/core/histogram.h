/*
 * histogram.h -- a log-bucketed histogram of unsigned 64-bit values.
 *
 * Made for latencies in nanoseconds, but unit-free.  Values below 64 have
 * a bucket each; above, every power of two [2^e, 2^(e+1)) is cut into 64
 * equal sub-buckets, so a bucket's width is at most 1/64 of its lower
 * bound and any percentile read back is within 1.6 % of the true value
 * (it answers the bucket's highest value, clamped to the largest value
 * recorded, as HdrHistogram does).  The whole u64 range is covered; there
 * is no overflow bucket.  count, sum, min and max are kept exactly.
 *
 *   value:   0 1 .. 63 | 64 65 .. 127 | 128 130 .. 254 | 256 260 .. | ...
 *   bucket:  0 1 .. 63 | 64 65 .. 127 | 128 129 .. 191 | 192 193 .. | ...
 *            exact       width 1        width 2          width 4
 *
 * The struct is public and fixed-size (about 30 KiB) so that it can live
 * inside another struct or on a thread's stack; recording is one shift,
 * one count-leading-zeros and one add.  No locking: one writer at a time,
 * and histograms of several threads are combined with histogram_merge().
 * Nothing here allocates.
 */
#ifndef CELLAR_CORE_HISTOGRAM_H
#define CELLAR_CORE_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define HISTOGRAM_SUB_BITS 6
#define HISTOGRAM_SUB (1u << HISTOGRAM_SUB_BITS)
#define HISTOGRAM_NBUCKETS ((65u - HISTOGRAM_SUB_BITS) << HISTOGRAM_SUB_BITS)

struct histogram {
    uint64_t count;
    uint64_t sum;       /* wraps after 2^64; 584 years of nanoseconds */
    uint64_t min;       /* UINT64_MAX while empty */
    uint64_t max;
    uint64_t bucket[HISTOGRAM_NBUCKETS];
};

/* Empties h (also the way to reset it). */
void histogram_init(struct histogram *h);

/* The bucket that holds v, and the lowest and highest value of bucket i. */
static inline size_t histogram_bucket_of(uint64_t v) {
    if (v < HISTOGRAM_SUB)
        return (size_t)v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - HISTOGRAM_SUB_BITS;
    return ((size_t)(shift + 1) << HISTOGRAM_SUB_BITS) + (size_t)((v >> shift) - HISTOGRAM_SUB);
}
uint64_t histogram_bucket_low(size_t i);
uint64_t histogram_bucket_high(size_t i);

/* Records n occurrences of v. */
static inline void histogram_record_n(struct histogram *h, uint64_t v, uint64_t n) {
    h->bucket[histogram_bucket_of(v)] += n;
    h->count += n;
    h->sum += v * n;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

static inline void histogram_record(struct histogram *h, uint64_t v) {
    histogram_record_n(h, v, 1);
}

/* Adds every count of src to dst. */
void histogram_merge(struct histogram *dst, const struct histogram *src);

/*
 * The value below or at which pct percent of the recorded values lie
 * (0 <= pct <= 100): the highest value of the bucket that holds the
 * ceil(pct/100 * count)-th smallest value, clamped to [min, max].  0 gives
 * min, 100 gives max.  Returns 0 for an empty histogram.
 */
uint64_t histogram_percentile(const struct histogram *h, double pct);

/* The mean of the recorded values; 0 when empty. */
double histogram_mean(const struct histogram *h);

#endif
