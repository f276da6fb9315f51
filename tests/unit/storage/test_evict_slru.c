/*
 * test_evict_slru.c -- memcached's segmented LRU (HOT 20%, WARM 40%, COLD)
 * on a hand-computed trace (items.c: do_item_bump, lru_pull_tail).
 */
#include "evict_test.h"
#include "storage/evict_list.h"
#include "harness.h"

/*
 * C = 5: HOT may keep 1 item, WARM 2.  All in one second, so no age limit
 * applies.
 *   1..5 -> HOT.  1 read twice: fetched, then active.
 *   6: the juggle: HOT's tail 1 is active -> WARM; 2, 3, 4 -> COLD (HOT
 *      over 1); 5 stays.  COLD's tail 2 goes.
 *   3 read twice in COLD: active -> moved to WARM at once.
 *   7: 5 -> COLD; COLD's tail 4 goes.   8: 6 -> COLD, 5 goes.
 *   9: 7 -> COLD, 6 goes.   1, 3: WARM hits, both turn active.
 *   2: 8 -> COLD; WARM's active tail items go back to WARM's head
 *      (bits cleared); COLD's tail 7 goes.
 */
TEST(slru_hot_warm_cold) {
    struct tcache *c = tc_new("slru", 5);
    ASSERT_STR(tc_run(c, "1 2 3 4 5 1 1 6 3 3 7 8 9 1 3 2"), "MMMMMHHMHHMMMHHM");
    ASSERT_STR(c->evicted, "2 4 5 6 7");
    tc_free(c);
}

/*
 * The same trace, counted as memcached's stats items count it:
 *   6: 1 HOT -> WARM (to_warm), 2 3 4 HOT -> COLD (to_cold 3);
 *   3 3: COLD -> WARM (to_warm 2);  7 8 9: 5 6 7 HOT -> COLD (to_cold 6);
 *   2: 8 HOT -> COLD (to_cold 7), WARM's active 1 and 3 back to its head
 *   (within 2).  At the end HOT holds 9 2, WARM 1 3, COLD 8.
 */
TEST(slru_counts_segments_and_moves) {
    struct tcache *c = tc_new("slru", 5);
    tc_run(c, "1 2 3 4 5 1 1 6 3 3 7 8 9 1 3 2");
    struct evict_segments sg = {0};
    c->p->segments(c->q, &sg);
    ASSERT_EQ(sg.moves_to_cold, 7);
    ASSERT_EQ(sg.moves_to_warm, 2);
    ASSERT_EQ(sg.moves_within_lru, 2);
    ASSERT_EQ(sg.number[EVICT_HOT], 2);
    ASSERT_EQ(sg.number[EVICT_WARM], 2);
    ASSERT_EQ(sg.number[EVICT_COLD], 1);
    ASSERT_EQ(c->p->seg_mask & evict_bits(c->it[8]), EVICT_COLD);
    ASSERT_EQ(c->p->seg_mask & evict_bits(c->it[1]), EVICT_WARM);
    ASSERT_EQ(c->p->seg_mask & evict_bits(c->it[9]), EVICT_HOT);
    tc_free(c);
}

/* Read once is not enough: a single fetch leaves an item inactive. */
TEST(slru_one_fetch_does_not_activate) {
    struct tcache *c = tc_new("slru", 5);
    ASSERT_STR(tc_run(c, "1 2 3 4 5 1 6 7"), "MMMMMHMM");
    /* 6: HOT keeps 5; 1 2 3 4 go to COLD (1 was read once only), 1 goes */
    ASSERT_STR(c->evicted, "1 2");
    tc_free(c);
}

/* An inactive HOT tail older than 0.2 x COLD's age goes to COLD. */
TEST(slru_age_limits) {
    struct tcache *c = tc_new("slru", 10);
    tc_run(c, "1 2 3 4 5 6 7 8 9 10");
    tc_run(c, "11");                         /* HOT drains to 2 items: 9 10 */
    ASSERT_STR(c->evicted, "1");
    c->now += 100;                           /* COLD's tail is 100 s old */
    tc_run(c, "12");                         /* 9 10 11 (100 s > 20 s) -> COLD */
    ASSERT_STR(c->evicted, "1 2");
    ASSERT(c->p->victim(c->q, NULL) == c->it[3]);
    tc_free(c);
}

/*
 * The knobs (lru tune): item 1, read twice while in HOT, goes to WARM at the
 * first juggle and stays there while WARM may hold 40% (2 of 5 items), as
 * new items pass through; with WARM's share tuned to 0 it goes on to COLD
 * at the next juggle and out.
 */
TEST(slru_tune_moves_the_limits) {
    const char *trace = "1 2 3 4 5 1 1 6 7 8 9 10 11 12";
    struct tcache *c = tc_new("slru", 5);
    tc_run(c, trace);
    ASSERT_STR(c->evicted, "2 3 4 5 6 7 8");
    tc_free(c);

    c = tc_new("slru", 5);
    ASSERT(c->p->tune != NULL);
    c->p->tune(c->q, &(struct evict_tune){20, 0, 0.2, 2.0});
    tc_run(c, trace);
    /* 6: 1 -> WARM -> COLD (over 0), COLD = 1 4 3 2 from head; then tail first */
    ASSERT_STR(c->evicted, "2 3 4 1 5 6 7");
    tc_free(c);

    /* And HOT's share: at 60% HOT keeps three of five, so 2 is spared one round. */
    c = tc_new("slru", 5);
    c->p->tune(c->q, &(struct evict_tune){60, 20, 0.2, 2.0});
    tc_run(c, "1 2 3 4 5 6");
    ASSERT_STR(c->evicted, "1");
    ASSERT(c->p->victim(c->q, NULL) == c->it[2]);
    tc_free(c);
}

int main(void) { return RUN_TESTS(); }
