/*
 * test_evict_lru.c -- the LRU policy through the evict.h interface alone,
 * the way the simulator will drive it.
 */
#include "harness.h"
#include "storage/evict.h"

TEST(lru_is_found_by_name) {
    ASSERT(evict_policy_find("lru") == &evict_lru);
    ASSERT(evict_policy_find("LRU") == NULL);
    ASSERT(evict_policy_find(NULL) == NULL);
}

TEST(lru_order_bump_and_unlink) {
    const struct evict_policy *p = &evict_lru;
    struct evict_queue *q = p->create();
    struct item a = {0}, b = {0}, c = {0};
    ASSERT(p->victim(q, NULL) == NULL);
    ASSERT(p->oldest(q) == NULL);
    p->link(q, &a, 100);
    p->link(q, &b, 100);
    p->link(q, &c, 100);
    /* victims from the tail: oldest first, then onwards */
    ASSERT(p->victim(q, NULL) == &a);
    ASSERT(p->victim(q, &a) == &b);
    ASSERT(p->victim(q, &b) == &c);
    ASSERT(p->victim(q, &c) == NULL);
    ASSERT(p->oldest(q) == &a);
    /* a hit moves an item only when its last move is over 60 s old */
    a.atime = 100;
    ASSERT(!p->hit(&a, 160));
    ASSERT(p->hit(&a, 161));
    p->bump(q, &a, 161);
    ASSERT(p->victim(q, NULL) == &b);
    ASSERT(p->victim(q, &c) == &a);
    p->unlink(q, &c);
    ASSERT(p->victim(q, &b) == &a);
    p->unlink(q, &b);
    p->unlink(q, &a);
    ASSERT(p->oldest(q) == NULL);
    p->destroy(q);
}

int main(void) { return RUN_TESTS(); }
