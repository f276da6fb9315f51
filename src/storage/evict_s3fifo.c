/*
 * evict_s3fifo.c -- S3-FIFO (Yang et al., SOSP'23), following libCacheSim's
 * S3FIFO.c with its defaults: small queue 10% of the cache, ghost 90%,
 * move-to-main threshold 2.
 *
 *            miss, key in G ------------------------------+
 *                                                         v
 *   miss --> S (small FIFO, 10%) --tail: freq >= 2--> M (main FIFO, 90%)
 *                 | tail: freq < 2                        | tail: freq >= 1:
 *                 v                                       |   freq - 1, to M head
 *             evicted, key --> G (ghost FIFO, 90%)        v tail: freq 0: evicted
 *
 * Per item a 2-bit access count (capped at 3); a hit adds one and touches
 * only the item.  Eviction takes from M when M is over its share (90% of
 * the cache) or S is empty, else from S.  From S: the tail moves to M's
 * head (count reset to 0) while its count reaches the threshold; the first
 * one below it is the victim and its key goes to G.  From M: the tail goes
 * back to the head with its count less one while the count is at least 1;
 * the first with 0 is the victim.  A miss whose key is in G enters M
 * directly (and leaves G); any other miss enters S.
 *
 * Fitting the engine's seam:
 *   - The cache size C is what the class holds when it first has to
 *     evict (the number of linked items then), re-read at every eviction,
 *     since the engine, not the policy, decides when memory is full.
 *   - libCacheSim fills S up to its 10% and then sends new items to M
 *     until the first eviction.  C is unknown before that, so items all
 *     queue in S and the first eviction splits them: the oldest 10% of C
 *     stay in S, the newer ones move to M in order, which is the same
 *     state.
 *   - The engine evicts before it links the new item, while libCacheSim
 *     looks the key up in G first.  So G is trimmed to its size when an
 *     item is linked, after the lookup, and the result is the same as
 *     libCacheSim's "remove from G, then evict (adding to G)".
 *   - Only evictions feed G: unlink() tells an eviction from a delete by
 *     the candidate victim() last handed out.
 *
 * pbits: bits 0..1 access count, bit 2 = in M.
 */
#include <stdlib.h>

#include "storage/evict.h"
#include "storage/evict_list.h"
#include "storage/ghost.h"
#include "storage/ht.h"

#define S3_FREQ 0x03
#define S3_MAIN 0x04
#define S3_SMALL_RATIO 0.10
#define S3_GHOST_RATIO 0.90
#define S3_MOVE_THRESHOLD 2

struct evict_queue {
    struct evict_list s, m;
    struct ghost *g;
    uint64_t cap;               /* items at the last eviction; 0 before the first */
    struct item *cand;          /* last victim handed out */
    bool cand_ghost;            /* whether evicting cand records its key in G */
};

static struct evict_queue *s3_create(void) {
    struct evict_queue *q = calloc(1, sizeof(*q));
    if (q != NULL && (q->g = ghost_create()) == NULL) {
        free(q);
        q = NULL;
    }
    return q;
}

static void s3_destroy(struct evict_queue *q) {
    ghost_destroy(&q->g);
    free(q);
}

static uint64_t key_hash(const struct item *it) { return ht_hash(it->data, it->nkey); }

static uint64_t ghost_size(const struct evict_queue *q) {
    return (uint64_t)((double)q->cap * S3_GHOST_RATIO);
}

static void s3_link(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    if (q->cand == it)
        q->cand = NULL;
    if (q->cap != 0 && ghost_remove(q->g, key_hash(it))) {
        evict_bits_update(it, S3_FREQ | S3_MAIN, S3_MAIN);
        evict_list_push_head(&q->m, it);
    } else {
        evict_bits_update(it, S3_FREQ | S3_MAIN, 0);
        evict_list_push_head(&q->s, it);
    }
    ghost_trim(q->g, ghost_size(q));
}

static void s3_unlink(struct evict_queue *q, struct item *it) {
    if (it == q->cand) {
        if (q->cand_ghost && ghost_size(q) > 0)
            ghost_add(q->g, key_hash(it));
        q->cand = NULL;
    }
    evict_list_remove(evict_bits(it) & S3_MAIN ? &q->m : &q->s, it);
}

static bool s3_hit(struct item *it, uint32_t now) {
    (void)now;
    evict_bits_incr(it, S3_FREQ, 0, 3);
    return false;
}

static void s3_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)q, (void)it, (void)now;
}

/*
 * The first eviction: everything so far waits in S in insertion order.
 * Keep the oldest 10% of C there and move the rest, oldest first, to M.
 */
static void s3_split(struct evict_queue *q) {
    uint64_t keep = (uint64_t)((double)q->cap * S3_SMALL_RATIO);
    while (q->s.n > keep) {
        /* the newest leaves first and each next one goes behind it, so M
         * keeps S's order */
        struct item *it = q->s.head;
        evict_list_remove(&q->s, it);
        evict_bits_update(it, S3_MAIN, S3_MAIN);
        evict_list_push_tail(&q->m, it);
    }
}

/* S's tail moves to M while accessed; returns the first that is not. */
static struct item *evict_small(struct evict_queue *q) {
    while (q->s.tail != NULL) {
        struct item *t = q->s.tail;
        if ((evict_bits(t) & S3_FREQ) >= S3_MOVE_THRESHOLD) {
            evict_bits_update(t, S3_FREQ | S3_MAIN, S3_MAIN);
            evict_list_transfer(&q->s, &q->m, t);
            continue;
        }
        q->cand_ghost = true;
        return t;
    }
    return NULL;
}

/*
 * M's tail goes back to the head, one count less, while it has a count.
 * Counts only fall here, so three laps bound the loop; past that the
 * tail is taken as it is (hits may race with the sweep).
 */
static struct item *evict_main(struct evict_queue *q) {
    uint64_t bound = 4 * q->m.n + 1;
    while (q->m.tail != NULL && bound-- > 0) {
        struct item *t = q->m.tail;
        if (evict_bits_decr(t, S3_FREQ, 0) == 0)
            break;
        evict_list_move_head(&q->m, t);
    }
    q->cand_ghost = false;
    return q->m.tail;
}

static struct item *s3_victim(struct evict_queue *q, struct item *prev) {
    if (prev != NULL) {
        q->cand = prev->prev;
        return q->cand;
    }
    bool first = q->cap == 0;
    q->cap = q->s.n + q->m.n;
    if (first)
        s3_split(q);
    uint64_t main_size = q->cap - (uint64_t)((double)q->cap * S3_SMALL_RATIO);
    struct item *v = NULL;
    if (q->m.n <= main_size && q->s.n > 0)
        v = evict_small(q);
    if (v == NULL)
        v = evict_main(q);
    q->cand = v;
    return v;
}

static struct item *s3_oldest(struct evict_queue *q) {
    struct item *a = q->s.tail, *b = q->m.tail;
    if (a == NULL)
        return b;
    if (b == NULL)
        return a;
    return a->atime <= b->atime ? a : b;
}

const struct evict_policy evict_s3fifo = {
    .name = "s3fifo",
    .create = s3_create,
    .destroy = s3_destroy,
    .link = s3_link,
    .unlink = s3_unlink,
    .hit = s3_hit,
    .bump = s3_bump,
    .victim = s3_victim,
    .oldest = s3_oldest,
};
