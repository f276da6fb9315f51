/*
 * evict_lfu.c -- LFU: evict the least frequently used item, the oldest
 * among equals (libCacheSim's LFU.c), in O(1) with frequency buckets.
 *
 *   bucket[1]  [ newest ... oldest ] <- victims come from the lowest
 *   bucket[2]  [ ... ]                  non-empty bucket's oldest end
 *   ...
 *   bucket[255]
 *
 * A new item enters bucket 1; a hit moves it to the newest end of the next
 * bucket, so "oldest in a bucket" is "first to reach that count".  Counts
 * are forgotten on eviction.  The count lives in the item's policy byte and
 * so saturates at 255 (libCacheSim's is unbounded; items that hot are
 * never the victim in either).
 *
 * `lfu-decay` ages the counts the way TinyLFU ages its sketch: after every
 * 10 x C requests (C: the items in the class) every count is halved
 * (rounding down, but never below 1), so a burst of popularity fades and
 * plain LFU's cache pollution by formerly hot items goes away.  Halving
 * re-buckets every item, oldest first within each old bucket, once per
 * 10 x C requests.
 *
 * A hit moves the item between buckets, so every hit takes the class lock.
 *
 * pbits: the count, 1..255.
 */
#include <stdlib.h>

#include "storage/evict.h"
#include "storage/evict_list.h"

#define LFU_MAX 255
#define LFU_DECAY_SAMPLE 10

struct evict_queue {
    struct evict_list b[LFU_MAX + 1];
    unsigned min;               /* lowest non-empty bucket (when any) */
    uint64_t n;
    bool decay;
    uint64_t requests;          /* since the last halving */
};

static struct evict_queue *create(bool decay) {
    struct evict_queue *q = calloc(1, sizeof(*q));
    if (q != NULL) {
        q->decay = decay;
        q->min = 1;
    }
    return q;
}

static struct evict_queue *lfu_create(void) { return create(false); }
static struct evict_queue *lfu_decay_create(void) { return create(true); }

static void lfu_destroy(struct evict_queue *q) { free(q); }

static unsigned count_of(const struct item *it) { return evict_bits(it); }

static void fix_min(struct evict_queue *q) {
    if (q->n == 0) {
        q->min = 1;
        return;
    }
    while (q->min <= LFU_MAX && q->b[q->min].n == 0)
        q->min++;
}

/*
 * Halves every count: buckets are emptied in ascending order onto the
 * oldest... newest order of their new buckets, which keeps each new bucket
 * ordered by old count first, then by age.
 */
static void halve(struct evict_queue *q) {
    struct evict_list old[LFU_MAX + 1];
    for (unsigned f = 1; f <= LFU_MAX; f++) {
        old[f] = q->b[f];
        q->b[f] = (struct evict_list){0};
    }
    for (unsigned f = 1; f <= LFU_MAX; f++) {
        unsigned nf = f / 2 > 0 ? f / 2 : 1;
        while (old[f].tail != NULL) {
            struct item *it = old[f].tail;
            evict_list_remove(&old[f], it);
            evict_bits_update(it, 0xff, (uint8_t)nf);
            evict_list_push_head(&q->b[nf], it);
        }
    }
    q->min = 1;
    fix_min(q);
}

static void request(struct evict_queue *q) {
    if (q->decay && ++q->requests >= LFU_DECAY_SAMPLE * (q->n > 0 ? q->n : 1)) {
        q->requests = 0;
        halve(q);
    }
}

static void lfu_link(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    evict_bits_update(it, 0xff, 1);
    evict_list_push_head(&q->b[1], it);
    q->n++;
    q->min = 1;
    request(q);
}

static void lfu_unlink(struct evict_queue *q, struct item *it) {
    evict_list_remove(&q->b[count_of(it)], it);
    q->n--;
    fix_min(q);
}

static bool lfu_hit(struct item *it, uint32_t now) {
    (void)it, (void)now;
    return true;
}

static void lfu_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    unsigned f = count_of(it);
    if (f < LFU_MAX) {
        evict_list_transfer(&q->b[f], &q->b[f + 1], it);
        evict_bits_update(it, 0xff, (uint8_t)(f + 1));
        if (f == q->min && q->b[f].n == 0)
            q->min = f + 1;
    }
    request(q);
}

/* The oldest of the lowest count; then the next ones up the buckets. */
static struct item *lfu_victim(struct evict_queue *q, struct item *prev) {
    if (prev == NULL)
        return q->n > 0 ? q->b[q->min].tail : NULL;
    if (prev->prev != NULL)
        return prev->prev;
    for (unsigned f = count_of(prev) + 1; f <= LFU_MAX; f++)
        if (q->b[f].tail != NULL)
            return q->b[f].tail;
    return NULL;
}

static struct item *lfu_oldest(struct evict_queue *q) {
    struct item *o = NULL;
    for (unsigned f = 1; f <= LFU_MAX; f++) {
        struct item *t = q->b[f].tail;
        if (t != NULL && (o == NULL || t->atime < o->atime))
            o = t;
    }
    return o;
}

const struct evict_policy evict_lfu = {
    .name = "lfu",
    .create = lfu_create,
    .destroy = lfu_destroy,
    .link = lfu_link,
    .unlink = lfu_unlink,
    .hit = lfu_hit,
    .bump = lfu_bump,
    .victim = lfu_victim,
    .oldest = lfu_oldest,
};

const struct evict_policy evict_lfu_decay = {
    .name = "lfu-decay",
    .create = lfu_decay_create,
    .destroy = lfu_destroy,
    .link = lfu_link,
    .unlink = lfu_unlink,
    .hit = lfu_hit,
    .bump = lfu_bump,
    .victim = lfu_victim,
    .oldest = lfu_oldest,
};
