/*
 * test_evict_fifo.c -- FIFO and lru-exact on hand-computed traces.
 */
#include "evict_test.h"
#include "harness.h"

TEST(fifo_hits_change_nothing) {
    struct tcache *c = tc_new("fifo", 3);
    /* 1 2 3 in; the hit on 1 does not save it: 4 evicts 1, 1 evicts 2, 2 evicts 3 */
    ASSERT_STR(tc_run(c, "1 2 3 1 4 1 2"), "MMMHMMM");
    ASSERT_STR(c->evicted, "1 2 3");
    tc_free(c);
}

TEST(lru_exact_moves_on_every_hit) {
    struct tcache *c = tc_new("lru-exact", 3);
    /* after the hit, 1 is newest: 4 evicts 2, 2 evicts 3, 1 is still in */
    ASSERT_STR(tc_run(c, "1 2 3 1 4 2 1"), "MMMHMMH");
    ASSERT_STR(c->evicted, "2 3");
    tc_free(c);
}

TEST(lru_exact_differs_from_clock) {
    struct tcache *c = tc_new("lru-exact", 4);
    /* LRU: 7 evicts 4 (least recently used), so the last 4 misses */
    ASSERT_STR(tc_run(c, "1 2 3 4 4 1 5 6 7 4"), "MMMMHHMMMM");
    ASSERT_STR(c->evicted, "2 3 4 1");
    tc_free(c);
}

TEST(flat_lru_moves_at_most_once_a_minute) {
    struct tcache *c = tc_new("lru", 3);
    /* same second: the hit on 1 does not move it, so lru acts as FIFO */
    ASSERT_STR(tc_run(c, "1 2 3 1 4 1"), "MMMHMM");
    ASSERT_STR(c->evicted, "1 2");
    c->now += 61;
    /* 61 s later a hit moves: 4 survives 5 and 6 */
    ASSERT_STR(tc_run(c, "4 5 6 4"), "HMMH");
    tc_free(c);
}

TEST(names_are_found) {
    for (unsigned i = 0; i < evict_policy_count(); i++)
        ASSERT(evict_policy_find(evict_policy_at(i)->name) == evict_policy_at(i));
    ASSERT(evict_policy_at(evict_policy_count()) == NULL);
    ASSERT(evict_policy_find("fifo") == &evict_fifo);
    ASSERT(evict_policy_find("lru-exact") == &evict_lru_exact);
}

int main(void) { return RUN_TESTS(); }
