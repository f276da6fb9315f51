/*
 * test_evict_2q.c -- 2Q on hand-computed traces (Johnson & Shasha's full
 * 2Q with libCacheSim's sizes: A1in 25%, A1out 50%, Am the rest).
 */
#include "evict_test.h"
#include "harness.h"

/*
 * C = 4: A1in 1, A1out 2 keys.
 *   1..4 into A1in.  5: A1in over 1: 1 goes, to A1out.  1: 2 goes (A1out
 *   1 2); 1 was in A1out: into Am.  6: 3 goes.  2: 4 goes; 2 was in A1out
 *   (A1out keeps the newest two: 3 4) -> Am.  2: Am hit.  7: 5 goes.
 *   1: Am hit.  6: A1in hit (nothing moves).  5: in A1out: 6 goes, 5 -> Am.
 *   9: A1in holds only 7 now (not over 25%): Am's LRU, 2, goes.
 *   2: a plain miss; A1in holds 9 and 7: 7 goes.
 */
TEST(twoq_in_out_and_am) {
    struct tcache *c = tc_new("2q", 4);
    ASSERT_STR(tc_run(c, "1 2 3 4 5 1 6 2 2 7 1 6 5 9 2"), "MMMMMMMMHMHHMMM");
    ASSERT_STR(c->evicted, "1 2 3 4 5 6 2 7");
    tc_free(c);
}

/* Correlated re-reads while in A1in do not promote. */
TEST(twoq_a1in_hits_do_not_promote) {
    struct tcache *c = tc_new("2q", 4);
    ASSERT_STR(tc_run(c, "1 1 1 2 3 4 5"), "MHHMMMM");
    ASSERT_STR(c->evicted, "1");
    tc_free(c);
}

int main(void) { return RUN_TESTS(); }
