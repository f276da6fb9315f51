/*
 * test_evict_mrc.c -- on a zipf trace, the policies the papers say beat LRU
 * do beat it here, in the real engine: a deterministic small run of what
 * cellar-sim measures (zipf 0.9 over 20,000 objects, 200,000 requests,
 * seed fixed, a cache of 1% of the objects).
 */
#include "evict_test.h"
#include "harness.h"

static double miss_ratio(const char *policy, const uint64_t *trace, int n, uint64_t cap) {
    struct obj_engine o;
    if (!obj_engine_open(&o, policy, cap))
        return 2.0;
    int misses = 0;
    for (int i = 0; i < n; i++)
        misses += !obj_engine_get(&o, trace[i]);
    obj_engine_close(&o);
    return (double)misses / n;
}

TEST(zipf_small_cache_beats_lru) {
    enum { N = 200000 };
    struct zipf z;
    zipf_init(&z, 20000, 0.9);
    uint64_t *trace = malloc(N * sizeof(uint64_t));
    uint64_t seed = 20240601;
    for (int i = 0; i < N; i++)
        trace[i] = zipf_next(&z, &seed);
    double lru = miss_ratio("lru-exact", trace, N, 200);
    double fifo = miss_ratio("fifo", trace, N, 200);
    printf("  zipf 0.9, cache 1%%: lru %.4f fifo %.4f", lru, fifo);
    ASSERT(lru < fifo);
    static const char *better[] = {"s3fifo", "sieve", "arc", "2q", "wtinylfu"};
    for (size_t i = 0; i < sizeof(better) / sizeof(better[0]); i++) {
        double m = miss_ratio(better[i], trace, N, 200);
        printf(" %s %.4f", better[i], m);
        if (!(m < lru - 0.02))
            TH_FAIL("%s: miss ratio %.4f, not below lru's %.4f", better[i], m, lru);
    }
    printf("\n");
    free(trace);
    free(z.cdf);
}

int main(void) { return RUN_TESTS(); }
