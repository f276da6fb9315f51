/*
 * evict_2q.c -- 2Q, "full version" (Johnson & Shasha, VLDB'94), with
 * libCacheSim's defaults (TwoQ.c: Ain-size-ratio=0.25, Aout-size-ratio=0.5).
 *
 *   miss ---------------> A1in (FIFO, 25%) --tail, when over 25%--> evicted,
 *                                                                 key -> A1out
 *   miss, key in A1out --> Am (LRU, the rest) --tail--> evicted
 *
 *   A1out: ghost FIFO of keys, 50% of the cache.
 *
 * Hit in A1in: nothing moves (correlated references are not evidence of
 * popularity).  Hit in Am: to Am's head.  A miss whose key is in A1out
 * leaves A1out and enters Am; any other miss enters A1in.  Eviction: when
 * A1in holds more than its 25%, its tail goes (key to A1out); otherwise
 * Am's tail goes.
 *
 * Fitting the engine's seam (as for S3-FIFO): the cache size C is the
 * number of items linked when the class has to evict; A1out is trimmed to
 * its 50% when an item is linked, after the lookup, so that a key evicted
 * from A1out by this very eviction still counts, as in libCacheSim where
 * the lookup comes first; unlink() tells an eviction (which feeds A1out)
 * from a delete (which does not) by the candidate victim() handed out.
 * libCacheSim also caps Am at 75% on its own (an Am insert may evict
 * from Am); here the engine evicts one item per insert, so Am can hold
 * more when A1in has shrunk below 25%, e.g. after deletes.
 *
 * pbits: bit 0 = in Am.
 */
#include <stdlib.h>

#include "storage/evict.h"
#include "storage/evict_list.h"
#include "storage/ghost.h"
#include "storage/ht.h"

#define TQ_AM 0x01
#define TQ_IN_RATIO 0.25
#define TQ_OUT_RATIO 0.50

struct evict_queue {
    struct evict_list in, am;
    struct ghost *out;
    uint64_t cap;               /* items at the last eviction; 0 before the first */
    struct item *cand;
    bool cand_ghost;
};

static struct evict_queue *tq_create(void) {
    struct evict_queue *q = calloc(1, sizeof(*q));
    if (q != NULL && (q->out = ghost_create()) == NULL) {
        free(q);
        q = NULL;
    }
    return q;
}

static void tq_destroy(struct evict_queue *q) {
    ghost_destroy(&q->out);
    free(q);
}

static uint64_t key_hash(const struct item *it) { return ht_hash(it->data, it->nkey); }

static uint64_t out_size(const struct evict_queue *q) {
    return (uint64_t)((double)q->cap * TQ_OUT_RATIO);
}

static void tq_link(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    if (q->cand == it)
        q->cand = NULL;
    if (q->cap != 0 && ghost_remove(q->out, key_hash(it))) {
        evict_bits_update(it, TQ_AM, TQ_AM);
        evict_list_push_head(&q->am, it);
    } else {
        evict_bits_update(it, TQ_AM, 0);
        evict_list_push_head(&q->in, it);
    }
    ghost_trim(q->out, out_size(q));
}

static void tq_unlink(struct evict_queue *q, struct item *it) {
    if (it == q->cand) {
        if (q->cand_ghost && out_size(q) > 0)
            ghost_add(q->out, key_hash(it));
        q->cand = NULL;
    }
    evict_list_remove(evict_bits(it) & TQ_AM ? &q->am : &q->in, it);
}

/* Only an Am hit moves anything; A1in hits are ignored outright. */
static bool tq_hit(struct item *it, uint32_t now) {
    (void)now;
    return (evict_bits(it) & TQ_AM) != 0;
}

static void tq_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    if (evict_bits(it) & TQ_AM)
        evict_list_move_head(&q->am, it);
}

static struct item *tq_victim(struct evict_queue *q, struct item *prev) {
    if (prev != NULL) {
        q->cand = prev->prev;
        return q->cand;
    }
    q->cap = q->in.n + q->am.n;
    uint64_t in_size = (uint64_t)((double)q->cap * TQ_IN_RATIO);
    if (q->in.n > in_size || q->am.tail == NULL) {
        q->cand = q->in.tail;
        q->cand_ghost = true;
    } else {
        q->cand = q->am.tail;
        q->cand_ghost = false;
    }
    return q->cand;
}

static struct item *tq_oldest(struct evict_queue *q) {
    struct item *a = q->in.tail, *b = q->am.tail;
    if (a == NULL)
        return b;
    if (b == NULL)
        return a;
    return a->atime <= b->atime ? a : b;
}

const struct evict_policy evict_2q = {
    .name = "2q",
    .create = tq_create,
    .destroy = tq_destroy,
    .link = tq_link,
    .unlink = tq_unlink,
    .hit = tq_hit,
    .bump = tq_bump,
    .victim = tq_victim,
    .oldest = tq_oldest,
};
