/*
 * test_evict_sieve.c -- SIEVE on hand-computed traces (NSDI'24 rules, as
 * libCacheSim's Sieve.c: the hand persists, survivors do not move).
 */
#include "evict_test.h"
#include "harness.h"

TEST(sieve_hand_persists_and_new_items_go_first) {
    struct tcache *c = tc_new("sieve", 3);
    /*
     * 1 2 3 in (head 3 2 1 tail).  Hit 1.  4: the hand starts at the tail,
     * 1 is visited (cleared, stays put), 2 goes; the hand rests at 3.
     * 2: 3 goes (hand at 4).  5: 4 goes (hand at 2).  1 is still in.
     * Then 6..11 each evict what the hand reaches -- 2 5 6 7 8 9 -- never
     * looking at 1 again, which a CLOCK or LRU would have dropped by now.
     */
    ASSERT_STR(tc_run(c, "1 2 3 1 4 2 5 1 6 7 8 9 10 11 1"), "MMMHMMMHMMMMMMH");
    ASSERT_STR(c->evicted, "2 3 4 2 5 6 7 8 9");
    tc_free(c);
}

TEST(sieve_hand_wraps_from_head_to_tail) {
    struct tcache *c = tc_new("sieve", 2);
    /*
     * 1 2 both visited.  3: 1 cleared, 2 cleared, past the head the hand
     * wraps to the tail: 1 goes; hand at 2.  4: 2 goes; 1: 3 goes; 2: 4 goes.
     */
    ASSERT_STR(tc_run(c, "1 2 1 2 3 4 1 2"), "MMHHMMMM");
    ASSERT_STR(c->evicted, "1 2 3 4");
    tc_free(c);
}

TEST(sieve_delete_under_the_hand_moves_it) {
    struct tcache *c = tc_new("sieve", 3);
    tc_run(c, "1 2 3 1 4");         /* 2 evicted, hand on 3 */
    ASSERT_STR(c->evicted, "2");
    tc_unlink(c, 3);                /* a delete of the item under the hand */
    c->cap = 2;                     /* so that the next miss evicts */
    /* hand moved to 4 (3's neighbour toward the head): 5 evicts 4 */
    ASSERT_STR(tc_run(c, "5 1"), "MH");
    ASSERT_STR(c->evicted, "2 4");
    tc_free(c);
}

int main(void) { return RUN_TESTS(); }
