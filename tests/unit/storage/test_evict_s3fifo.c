/*
 * test_evict_s3fifo.c -- S3-FIFO on hand-computed traces (SOSP'23 rules
 * with libCacheSim's defaults: S 10%, G 90%, move to M at 2 accesses).
 */
#include "evict_test.h"
#include "harness.h"

/*
 * C = 10: S holds 1, M 9, G 9 keys.
 *   1..10 in; 1 read twice, 3 once.  The first eviction (11) leaves the
 *   oldest, 1, in S and the others in M, as libCacheSim fills them.
 *   11: S's tail 1 has 2 reads -> M; S is empty, so M's tail 2 (unread) goes.
 *   12: S's tail 11 (unread) goes, its key to G.
 *   11: 12 goes (to G); 11 was in G, so it enters M directly.
 *   13: M is over 90%: 3 (read once) gets a second round; 4 goes.
 *   4: a plain miss (M evictions leave no ghost): 13 goes, to G.
 *   12: 4 goes from S; 12 was in G: into M.
 *   2: M over 90% again: 5 goes.   1: still in M.
 */
TEST(s3fifo_small_main_and_ghost) {
    struct tcache *c = tc_new("s3fifo", 10);
    ASSERT_STR(tc_run(c, "1 2 3 4 5 6 7 8 9 10 1 1 3 11 12 11 13 4 12 2 1"),
               "MMMMMMMMMMHHHMMMMMMMH");
    ASSERT_STR(c->evicted, "2 11 12 4 13 4 5");
    tc_free(c);
}

/* A one-hit-wonder stream passes through S and never disturbs M. */
TEST(s3fifo_scan_resistance) {
    struct tcache *c = tc_new("s3fifo", 20);
    for (unsigned k = 0; k < 20; k++)
        tc_get(c, k);
    for (unsigned r = 0; r < 3; r++)
        for (unsigned k = 0; k < 10; k++)
            ASSERT(tc_get(c, k));
    for (unsigned k = 1000; k < 1500; k++)
        ASSERT(!tc_get(c, k));
    for (unsigned k = 0; k < 10; k++)
        ASSERT(tc_get(c, k));
    tc_free(c);
}

/* Deletes (unlink without victim) leave no ghost behind. */
TEST(s3fifo_delete_is_not_an_eviction) {
    struct tcache *c = tc_new("s3fifo", 10);
    tc_run(c, "1 2 3 4 5 6 7 8 9 10 11");   /* first eviction: 1 goes */
    tc_unlink(c, 11);                       /* 11 deleted from S */
    ASSERT_STR(tc_run(c, "12 11"), "MM");
    /* 11 was not a ghost, so it went to S: the next eviction takes it
     * (S's tail), where a ghost hit would have put it in M */
    tc_evict(c);
    ASSERT_STR(c->evicted, "1 12 11");
    tc_free(c);
}

int main(void) { return RUN_TESTS(); }
