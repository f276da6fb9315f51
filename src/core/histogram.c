#include "core/histogram.h"

#include <math.h>
#include <string.h>

void histogram_init(struct histogram *h) {
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

/*
 * Bucket i >= 64 is sub-bucket m = i % 64 of the octave whose values are
 * shifted right by s = i / 64 - 1 to land in [64, 128): its values are
 * (64 + m) << s up to the next one, minus one.  The last bucket ends at
 * exactly UINT64_MAX.
 */
uint64_t histogram_bucket_low(size_t i) {
    if (i < HISTOGRAM_SUB)
        return i;
    unsigned shift = (unsigned)(i >> HISTOGRAM_SUB_BITS) - 1;
    uint64_t m = i & (HISTOGRAM_SUB - 1);
    return (HISTOGRAM_SUB + m) << shift;
}

uint64_t histogram_bucket_high(size_t i) {
    if (i < HISTOGRAM_SUB)
        return i;
    unsigned shift = (unsigned)(i >> HISTOGRAM_SUB_BITS) - 1;
    return histogram_bucket_low(i) + ((UINT64_C(1) << shift) - 1);
}

void histogram_merge(struct histogram *dst, const struct histogram *src) {
    if (src->count == 0)
        return;
    for (size_t i = 0; i < HISTOGRAM_NBUCKETS; i++)
        dst->bucket[i] += src->bucket[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t histogram_percentile(const struct histogram *h, double pct) {
    if (h->count == 0)
        return 0;
    if (!(pct > 0))
        return h->min;
    if (pct >= 100)
        return h->max;
    uint64_t rank = (uint64_t)ceil(pct / 100.0 * (double)h->count);
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;
    uint64_t seen = 0;
    for (size_t i = 0; i < HISTOGRAM_NBUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= rank) {
            uint64_t v = histogram_bucket_high(i);
            if (v > h->max)
                v = h->max;
            if (v < h->min)
                v = h->min;
            return v;
        }
    }
    return h->max;
}

double histogram_mean(const struct histogram *h) {
    return h->count ? (double)h->sum / (double)h->count : 0.0;
}
