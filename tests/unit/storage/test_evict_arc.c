/*
 * test_evict_arc.c -- ARC on hand-computed traces (Megiddo & Modha's
 * rules as libCacheSim's ARC.c applies them).
 */
#include "evict_test.h"
#include "harness.h"

/*
 * C = 4, p = 0.
 *   1..4 -> T1.  1: hit, to T2.  5: |T1|+|B1| < C: REPLACE, |T1| = 3 > p:
 *   T1's LRU 2 -> B1.  6: |T1|+|B1| = C: drop B1's LRU (2), REPLACE: 3 ->
 *   B1.  3: in B1: p = 1; REPLACE: 4 -> B1; 3 -> T2.  7: REPLACE: |T1| =
 *   2 > 1: 5 -> B1.  1: T2 hit.  2: dropped from B1 earlier: a plain miss.
 */
TEST(arc_b1_hit_grows_p) {
    struct tcache *c = tc_new("arc", 4);
    ASSERT_STR(tc_run(c, "1 2 3 4 1 5 6 3 7 1 2"), "MMMMHMMMMHM");
    ASSERT_STR(c->evicted, "2 3 4 5 6");
    tc_free(c);
}

/*
 * C = 2.  1, 2 each read twice: T2 = 2 1.  3: REPLACE with T1 empty: T2's
 * LRU 1 -> B2.  1: in B2 (p stays 0); REPLACE: |T1| = 1 > 0: 3 -> B1;
 * 1 -> T2.  3: in B1: p = 1; REPLACE: T1 empty: T2's LRU 2 -> B2.
 * 2: in B2: p = 0; REPLACE: 1 -> B2.  4: REPLACE: 3 -> B2 (T1 empty).
 * 1: in B2; REPLACE: |T1| = 1 > 0: 4 -> B1.
 */
TEST(arc_b2_hits_and_t2_evictions) {
    struct tcache *c = tc_new("arc", 2);
    ASSERT_STR(tc_run(c, "1 1 2 2 3 1 3 2 4 1"), "MHMHMMMMMM");
    ASSERT_STR(c->evicted, "1 3 2 1 3 4");
    /* T2 = 1 2: both hit */
    ASSERT_STR(tc_run(c, "1 2"), "HH");
    tc_free(c);
}

/* A scan of new keys only cycles T1: the twice-read keys in T2 stay. */
TEST(arc_scan_resistance) {
    struct tcache *c = tc_new("arc", 8);
    ASSERT_STR(tc_run(c, "1 2 3 4 1 2 3 4"), "MMMMHHHH");
    for (unsigned k = 100; k < 200; k++)
        ASSERT(!tc_get(c, k));
    ASSERT_STR(tc_run(c, "1 2 3 4"), "HHHH");
    tc_free(c);
}

int main(void) { return RUN_TESTS(); }
