/*
 * test_evict_clock.c -- CLOCK (second chance) with 1- and 2-bit counters,
 * on hand-computed traces (libCacheSim Clock.c's rules).
 */
#include "evict_test.h"
#include "harness.h"

TEST(clock_gives_a_second_chance) {
    struct tcache *c = tc_new("clock", 4);
    /*
     * 1 2 3 4 in (list 4 3 2 1, tail 1); hits set 4 and 1.  5: tail 1 has
     * its bit: cleared and moved to the head; 2 goes.  6: 3 goes.  7: tail
     * 4 has its bit, moves; 1 (bit now clear) goes -- where LRU would evict
     * 4.  So the final 4 hits.
     */
    ASSERT_STR(tc_run(c, "1 2 3 4 4 1 5 6 7 4"), "MMMMHHMMMH");
    ASSERT_STR(c->evicted, "2 3 1");
    tc_free(c);
}

TEST(clock_one_bit_saturates) {
    struct tcache *c = tc_new("clock", 2);
    /* three reads of 1 count once: 3 evicts 2 (1 spent its chance), 4 evicts 1 */
    ASSERT_STR(tc_run(c, "1 1 1 2 3 4 1"), "MHHMMMM");
    ASSERT_STR(c->evicted, "2 1 3");
    tc_free(c);
}

TEST(clock2_counts_to_three) {
    struct tcache *c = tc_new("clock2", 2);
    /* 1 has count 2: it survives two sweeps, so it is still in at the end */
    ASSERT_STR(tc_run(c, "1 1 1 2 3 4 1"), "MHHMMMH");
    ASSERT_STR(c->evicted, "2 3");
    tc_free(c);
}

TEST(clock_victim_after_a_busy_candidate) {
    struct tcache *c = tc_new("clock", 3);
    tc_run(c, "1 2 3");
    struct item *v = c->p->victim(c->q, NULL);
    ASSERT(v == c->it[1]);
    /* the engine could not take 1: the next candidate is the one before it */
    ASSERT(c->p->victim(c->q, v) == c->it[2]);
    tc_free(c);
}

int main(void) { return RUN_TESTS(); }
