/*
 * evict_sieve.c -- SIEVE (Zhang et al., NSDI'24; libCacheSim Sieve.c).
 *
 * One FIFO list (new items at the head, never moved on a hit), one
 * `visited` bit per item, and a hand that persists across evictions.
 *
 *   head [ newest ... hand ... oldest ] tail
 *                       |
 *        scans toward the head; past the head it wraps to the tail
 *
 * Hit: visited = 1 (the item only; no class lock).  Evict: start at the
 * hand (the tail when there is none); while the item is visited, clear the
 * bit and step toward the head, wrapping to the tail; the first unvisited
 * item is the victim and the hand then rests at its neighbour toward the
 * head.  Unlike CLOCK, survivors stay where they are, so new items wait
 * between the hand and the head and are examined before older survivors
 * come round again (quick demotion).
 *
 * The hand is kept pointing at the victim until the engine unlinks it;
 * unlinking the item under the hand moves the hand to its prev (toward the
 * head), as libCacheSim does for any removal, so an eviction leaves the
 * hand where the paper puts it, and a delete keeps it valid.
 *
 * pbits: bit 0 = visited.
 */
#include <stdlib.h>

#include "storage/evict.h"
#include "storage/evict_list.h"

#define SIEVE_VISITED 0x01

struct evict_queue {
    struct evict_list l;
    struct item *hand;
};

static struct evict_queue *sieve_create(void) { return calloc(1, sizeof(struct evict_queue)); }

static void sieve_destroy(struct evict_queue *q) { free(q); }

static void sieve_link(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    evict_bits_update(it, SIEVE_VISITED, 0);
    evict_list_push_head(&q->l, it);
}

static void sieve_unlink(struct evict_queue *q, struct item *it) {
    if (q->hand == it)
        q->hand = it->prev;
    evict_list_remove(&q->l, it);
}

static bool sieve_hit(struct item *it, uint32_t now) {
    (void)now;
    if (!(evict_bits(it) & SIEVE_VISITED))
        evict_bits_update(it, SIEVE_VISITED, SIEVE_VISITED);
    return false;
}

static void sieve_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)q, (void)it, (void)now;
}

/*
 * The sweep clears at most every bit once per lap, so two laps bound it
 * even when hits set bits behind the hand meanwhile.  A candidate the
 * engine could not take is passed over: the next one is the unvisited item
 * after it in sweep order, looked at without clearing bits.
 */
static struct item *sieve_victim(struct evict_queue *q, struct item *prev) {
    if (q->l.tail == NULL)
        return NULL;
    if (prev != NULL) {
        uint64_t left = q->l.n;
        for (struct item *o = prev->prev != NULL ? prev->prev : q->l.tail;
             o != prev && left-- > 0; o = o->prev != NULL ? o->prev : q->l.tail)
            if (!(evict_bits(o) & SIEVE_VISITED))
                return o;
        return NULL;
    }
    struct item *o = q->hand != NULL ? q->hand : q->l.tail;
    uint64_t bound = 2 * q->l.n + 1;
    while ((evict_bits(o) & SIEVE_VISITED) && bound-- > 0) {
        evict_bits_update(o, SIEVE_VISITED, 0);
        o = o->prev != NULL ? o->prev : q->l.tail;
    }
    q->hand = o;
    return o;
}

static struct item *sieve_oldest(struct evict_queue *q) { return q->l.tail; }

const struct evict_policy evict_sieve = {
    .name = "sieve",
    .create = sieve_create,
    .destroy = sieve_destroy,
    .link = sieve_link,
    .unlink = sieve_unlink,
    .hit = sieve_hit,
    .bump = sieve_bump,
    .victim = sieve_victim,
    .oldest = sieve_oldest,
};
