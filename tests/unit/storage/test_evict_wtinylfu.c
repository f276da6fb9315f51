/*
 * test_evict_wtinylfu.c -- W-TinyLFU as Caffeine runs it: an LRU window
 * (1%, or sized by the hill climber), admission into the SLRU main space by
 * the frequency sketch.
 */
#include "evict_test.h"
#include "harness.h"

/*
 * C = 100: the window holds 1 item, protected at most 79.
 * 0..99 inserted (the sketch, sized lazily as the class grows like
 * Caffeine's, last resized at the 65th insert: keys 0..63 count 0 and
 * 64..99 count 1); 0..9 read three times (count 3).
 *   100: first eviction: all but the window's share go to probation (0..9
 *        newest).  Candidate 9 (count 3) beats victim 10 (0): 10 goes.
 *   101: candidate 100 (1) beats 11 (0).   100: probation hit -> protected.
 *   102: 101 beats 12.   11: 102 beats 13.
 *   200..249: each candidate (1) beats 14..63 (0) in turn.
 *   250: candidate 249 (1) ties with victim 64 (1): ties keep the victim.
 */
TEST(wtinylfu_admission_by_frequency) {
    struct tcache *c = tc_new("wtinylfu-fixed", 100);
    for (unsigned k = 0; k < 100; k++)
        ASSERT(!tc_get(c, k));
    for (unsigned r = 0; r < 3; r++)
        for (unsigned k = 0; k < 10; k++)
            ASSERT(tc_get(c, k));
    ASSERT_STR(tc_run(c, "100 101 100 102 11"), "MMHMM");
    ASSERT_STR(c->evicted, "10 11 12 13");
    for (unsigned k = 200; k < 250; k++)
        ASSERT(!tc_get(c, k));
    ASSERT(!c->in[63] && c->in[64]);
    ASSERT(!tc_get(c, 250));
    ASSERT(!c->in[249] && c->in[64] && c->in[250]);
    tc_free(c);
}

/* A stream of one-time keys cannot push out what is read often. */
TEST(wtinylfu_frequent_items_survive_a_scan) {
    struct tcache *c = tc_new("wtinylfu", 100);
    for (unsigned k = 0; k < 100; k++)
        tc_get(c, k);
    for (unsigned r = 0; r < 4; r++)
        for (unsigned k = 0; k < 50; k++)
            ASSERT(tc_get(c, k));
    for (unsigned k = 1000; k < 1500; k++)
        ASSERT(!tc_get(c, k));
    for (unsigned k = 0; k < 50; k++)
        ASSERT(tc_get(c, k));
    tc_free(c);
}

/*
 * Every new key comes back once, 60 requests later; random hot keys fill
 * the gaps.  With a 1% window a returning key has long been refused
 * admission (its one count ties with probation's victims), so most
 * requests miss.  The climber is a random walk while nothing changes, but
 * once the window happens to grow past the return distance the hit rate
 * jumps and the climber keeps that direction: over a long enough run it
 * settles on a large window.  (How soon depends on sketch collisions, i.e.
 * on the key hash; the margin below held for every salt tried.)
 */
static double recency_miss_ratio(const char *policy) {
    struct tcache *c = tc_new(policy, 400);
    int misses = 0, n = 0;
    uint64_t s = 12345;
    for (unsigned i = 0; i < 200000; i++) {
        misses += !tc_get(c, 100 + i % 3000), n++;
        if (i >= 60)
            misses += !tc_get(c, 100 + (i - 60) % 3000), n++;
        if (test_rand(&s) % 3 == 0)
            misses += !tc_get(c, (unsigned)(test_rand(&s) % 50)), n++;
    }
    tc_free(c);
    return (double)misses / n;
}

TEST(wtinylfu_climber_grows_the_window_for_recency) {
    double fixed = recency_miss_ratio("wtinylfu-fixed");
    double adaptive = recency_miss_ratio("wtinylfu");
    printf("  recency trace: fixed window %.3f, climbing %.3f\n", fixed, adaptive);
    ASSERT(fixed > 0.7);
    ASSERT(adaptive < fixed - 0.05);
}

int main(void) { return RUN_TESTS(); }
