/*
 * test_evict_doubleclock.c -- DoubleClock (Linux's active/inactive lists)
 * on hand-computed traces, with and without refault distance.
 */
#include "evict_test.h"
#include "harness.h"

/*
 * C = 4.  1 read twice: referenced, then active.  5: the inactive tail 2
 * is unreferenced: evicted.  3 read once (referenced).  6: 3 is promoted,
 * 4 goes.  7, 8: 5, 6 go.  1, 3: active hits.  9, 10, 2: 7, 8, 9 go.
 */
TEST(doubleclock_reference_steps) {
    struct tcache *c = tc_new("doubleclock", 4);
    ASSERT_STR(tc_run(c, "1 2 3 4 1 1 5 3 6 7 8 1 3 9 10 2"), "MMMMHHMHMMMHHMMM");
    ASSERT_STR(c->evicted, "2 4 5 6 7 8 9");
    tc_free(c);
}

/*
 * Three of four items active: before reclaiming, the active tail (1)
 * moves back to the inactive list, unreferenced, so it can be evicted.
 */
TEST(doubleclock_active_list_shrinks) {
    struct tcache *c = tc_new("doubleclock", 4);
    ASSERT_STR(tc_run(c, "1 2 3 4 1 1 2 2 3 3 5 6 1"), "MMMMHHHHHHMMM");
    ASSERT_STR(c->evicted, "4 1 5");
    tc_free(c);
}

/*
 * 1 is evicted, and comes back after one more eviction, with two items
 * active: refault distance 1 <= 2, so it enters the active list and
 * outlives 5 and 3; without refault distance it re-enters inactive and
 * goes again at 7.
 */
TEST(doubleclock_refault_distance) {
    struct tcache *c = tc_new("doubleclock-rd", 4);
    ASSERT_STR(tc_run(c, "1 2 3 4 3 3 4 4 5 1 6 7 1"), "MMMMHHHHMMMMH");
    ASSERT_STR(c->evicted, "1 2 5 3");
    tc_free(c);
    c = tc_new("doubleclock", 4);
    ASSERT_STR(tc_run(c, "1 2 3 4 3 3 4 4 5 1 6 7 1"), "MMMMHHHHMMMMM");
    ASSERT_STR(c->evicted, "1 2 5 1 6");
    tc_free(c);
}

int main(void) { return RUN_TESTS(); }
