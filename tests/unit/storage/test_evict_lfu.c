/*
 * test_evict_lfu.c -- LFU (libCacheSim's LFU.c rules) on hand-computed
 * traces, and LFU with decay.
 */
#include "evict_test.h"
#include "harness.h"

/*
 * C = 3.  1 reaches count 3, 2 count 2, 3 stays at 1: 4 evicts 3, then
 * each newcomer evicts the previous one (count 1, the lowest), never 1 or 2.
 */
TEST(lfu_evicts_the_lowest_count) {
    struct tcache *c = tc_new("lfu", 3);
    ASSERT_STR(tc_run(c, "1 2 3 1 1 2 4 5 3 1 2"), "MMMHHHMMMHH");
    ASSERT_STR(c->evicted, "3 4 5");
    tc_free(c);
}

/* Among equal counts, the first to reach the count goes first. */
TEST(lfu_ties_go_fifo) {
    struct tcache *c = tc_new("lfu", 2);
    /* 2 reaches count 2 before 1 does: with both at 2, 3 evicts 2 */
    ASSERT_STR(tc_run(c, "1 2 2 1 3 4"), "MMHHMM");
    ASSERT_STR(c->evicted, "2 3");
    tc_free(c);
}

/*
 * Key 0 read 50 times, then a stream of new keys.  Plain LFU keeps 0
 * forever; with decay its count halves every 10 x C requests until it is
 * down to 1, and then it is the oldest count-1 item.
 */
TEST(lfu_decay_forgets_old_popularity) {
    const char *names[] = {"lfu", "lfu-decay"};
    for (int i = 0; i < 2; i++) {
        struct tcache *c = tc_new(names[i], 10);
        for (int r = 0; r < 50; r++)
            tc_get(c, 0);
        for (unsigned k = 1; k < 2000; k++)
            tc_get(c, k);
        ASSERT_EQ(c->in[0], i == 0);
        tc_free(c);
    }
}

int main(void) { return RUN_TESTS(); }
