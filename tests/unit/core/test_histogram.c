/* Unit tests for src/core/histogram: bucket layout, percentiles, merging. */
#include <stdlib.h>

#include "core/histogram.h"
#include "harness.h"

static struct histogram ha, hb;

/* Buckets tile the u64 range: each starts one past the previous end. */
TEST(buckets_tile_the_range) {
    ASSERT_U64(histogram_bucket_low(0), 0);
    for (size_t i = 1; i < HISTOGRAM_NBUCKETS; i++) {
        ASSERT_U64(histogram_bucket_low(i), histogram_bucket_high(i - 1) + 1);
        ASSERT(histogram_bucket_high(i) >= histogram_bucket_low(i));
    }
    ASSERT_U64(histogram_bucket_high(HISTOGRAM_NBUCKETS - 1), UINT64_MAX);
}

/* Every value lands in the bucket whose bounds hold it; width <= low / 64. */
TEST(bucket_of_agrees_with_bounds) {
    uint64_t probes[] = {0, 1, 63, 64, 65, 127, 128, 129, 255, 256, 1000, 4095, 4096,
                         123456789, UINT64_C(1) << 40, (UINT64_C(1) << 40) - 1,
                         UINT64_MAX - 1, UINT64_MAX};
    for (size_t k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
        uint64_t v = probes[k];
        size_t i = histogram_bucket_of(v);
        ASSERT(i < HISTOGRAM_NBUCKETS);
        ASSERT(histogram_bucket_low(i) <= v);
        ASSERT(v <= histogram_bucket_high(i));
    }
    srand(7);
    for (int k = 0; k < 100000; k++) {
        uint64_t v = ((uint64_t)rand() << 33) ^ ((uint64_t)rand() << 11) ^ (uint64_t)rand();
        v >>= rand() % 64;
        size_t i = histogram_bucket_of(v);
        uint64_t lo = histogram_bucket_low(i), hi = histogram_bucket_high(i);
        ASSERT(lo <= v && v <= hi);
        ASSERT(hi - lo <= lo / 64);
    }
    for (uint64_t v = 0; v < 64; v++)
        ASSERT_U64(histogram_bucket_of(v), v);
}

TEST(empty_histogram) {
    histogram_init(&ha);
    ASSERT_U64(ha.count, 0);
    ASSERT_U64(histogram_percentile(&ha, 50), 0);
    ASSERT_U64(histogram_percentile(&ha, 100), 0);
    ASSERT(histogram_mean(&ha) == 0.0);
}

TEST(small_values_are_exact) {
    histogram_init(&ha);
    for (uint64_t v = 1; v <= 50; v++)
        histogram_record(&ha, v);
    ASSERT_U64(ha.count, 50);
    ASSERT_U64(ha.min, 1);
    ASSERT_U64(ha.max, 50);
    ASSERT_U64(histogram_percentile(&ha, 0), 1);
    ASSERT_U64(histogram_percentile(&ha, 50), 25);
    ASSERT_U64(histogram_percentile(&ha, 90), 45);
    ASSERT_U64(histogram_percentile(&ha, 99), 50);
    ASSERT_U64(histogram_percentile(&ha, 100), 50);
    ASSERT(histogram_mean(&ha) == 25.5);
}

/* 1..100000 once each: percentiles within 1/64 above the exact rank. */
TEST(percentiles_within_bucket_error) {
    histogram_init(&ha);
    for (uint64_t v = 1; v <= 100000; v++)
        histogram_record(&ha, v);
    double pcts[] = {1, 10, 50, 90, 99, 99.9, 99.99};
    for (size_t k = 0; k < sizeof(pcts) / sizeof(pcts[0]); k++) {
        uint64_t exact = (uint64_t)(pcts[k] * 1000 + 0.5);
        uint64_t got = histogram_percentile(&ha, pcts[k]);
        ASSERT(got >= exact);
        ASSERT(got <= exact + exact / 64);
    }
    ASSERT_U64(histogram_percentile(&ha, 100), 100000);
}

/* One outlier: the top percentile is clamped to the largest value seen. */
TEST(percentile_clamped_to_max) {
    histogram_init(&ha);
    histogram_record_n(&ha, 1000, 999);
    histogram_record(&ha, 1000003);
    ASSERT_U64(histogram_percentile(&ha, 50), histogram_bucket_high(histogram_bucket_of(1000)));
    ASSERT_U64(histogram_percentile(&ha, 99.95), 1000003);
    ASSERT_U64(ha.max, 1000003);
    ASSERT_U64(ha.count, 1000);
}

TEST(merge_adds_counts) {
    histogram_init(&ha);
    histogram_init(&hb);
    histogram_record(&ha, 5);
    histogram_record(&ha, 500);
    histogram_record(&hb, 3);
    histogram_record(&hb, 7000);
    histogram_merge(&ha, &hb);
    ASSERT_U64(ha.count, 4);
    ASSERT_U64(ha.min, 3);
    ASSERT_U64(ha.max, 7000);
    ASSERT_U64(ha.sum, 5 + 500 + 3 + 7000);
    ASSERT_U64(ha.bucket[histogram_bucket_of(7000)], 1);
    histogram_init(&hb);
    histogram_merge(&ha, &hb);    /* an empty source changes nothing */
    ASSERT_U64(ha.min, 3);
    ASSERT_U64(ha.count, 4);
}

TEST(extreme_values) {
    histogram_init(&ha);
    histogram_record(&ha, UINT64_MAX);
    histogram_record(&ha, 0);
    ASSERT_U64(histogram_percentile(&ha, 50), 0);
    ASSERT_U64(histogram_percentile(&ha, 100), UINT64_MAX);
    ASSERT_U64(ha.bucket[HISTOGRAM_NBUCKETS - 1], 1);
}

int main(void) { return RUN_TESTS(); }
