/*
 * evict_lru.c -- memcached's flat LRU.
 *
 * One doubly linked list per class: new items at the head, victims from
 * the tail.  A hit moves the item back to the head, but at most once per
 * LRU_UPDATE_INTERVAL seconds per item (memcached's ITEM_UPDATE_INTERVAL),
 * so that a hot key costs a class lock once a minute rather than on every
 * read.
 *
 * `lru-exact` is the same list with every hit moving the item (no
 * interval): the textbook LRU that simulators such as libCacheSim measure,
 * for comparing miss ratios on traces whose requests are seconds apart or
 * closer.  It costs the class lock on every hit.
 */
#include <stdlib.h>

#include "storage/evict.h"

#define LRU_UPDATE_INTERVAL 60

struct evict_queue {
    struct item *head, *tail;
};

static struct evict_queue *lru_create(void) { return calloc(1, sizeof(struct evict_queue)); }

static void lru_destroy(struct evict_queue *q) { free(q); }

static void lru_link(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    it->prev = NULL;
    it->next = q->head;
    if (q->head != NULL)
        q->head->prev = it;
    q->head = it;
    if (q->tail == NULL)
        q->tail = it;
}

static void lru_unlink(struct evict_queue *q, struct item *it) {
    if (q->head == it)
        q->head = it->next;
    if (q->tail == it)
        q->tail = it->prev;
    if (it->next != NULL)
        it->next->prev = it->prev;
    if (it->prev != NULL)
        it->prev->next = it->next;
    it->prev = it->next = NULL;
}

static bool lru_hit(struct item *it, uint32_t now) {
    return it->atime + LRU_UPDATE_INTERVAL < now;
}

static bool lru_exact_hit(struct item *it, uint32_t now) {
    (void)it, (void)now;
    return true;
}

static void lru_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    lru_unlink(q, it);
    lru_link(q, it, now);
}

static struct item *lru_victim(struct evict_queue *q, struct item *prev) {
    return prev == NULL ? q->tail : prev->prev;
}

static struct item *lru_oldest(struct evict_queue *q) { return q->tail; }

const struct evict_policy evict_lru = {
    .name = "lru",
    .create = lru_create,
    .destroy = lru_destroy,
    .link = lru_link,
    .unlink = lru_unlink,
    .hit = lru_hit,
    .bump = lru_bump,
    .victim = lru_victim,
    .oldest = lru_oldest,
};

const struct evict_policy evict_lru_exact = {
    .name = "lru-exact",
    .create = lru_create,
    .destroy = lru_destroy,
    .link = lru_link,
    .unlink = lru_unlink,
    .hit = lru_exact_hit,
    .bump = lru_bump,
    .victim = lru_victim,
    .oldest = lru_oldest,
};
