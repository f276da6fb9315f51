/*
 * evict_clock.c -- CLOCK, also called FIFO-Reinsertion or second chance,
 * with an n-bit access counter (libCacheSim's Clock.c).
 *
 * One FIFO list.  A new item enters at the head with counter 0; a hit
 * raises the counter by one up to 2^bits - 1, touching only the item (no
 * class lock).  To find a victim, look at the tail: while its counter is
 * at least 1, take one off and move it to the head; the first tail item
 * whose counter is 0 is the victim.  A ring with a hand does the same
 * work; the list form needs no array and no hand.
 *
 *   head [new ... ] tail --> counter 0? victim
 *          ^                  counter >= 1: counter - 1, to the head
 *          +------------------+
 *
 * `clock` uses 1 bit (libCacheSim's default, classic second chance),
 * `clock2` 2 bits (an item survives up to three passes).
 *
 * pbits: the counter, in bits 0..1.
 */
#include <stdlib.h>

#include "storage/evict.h"
#include "storage/evict_list.h"

#define CLOCK_MASK 0x03

struct evict_queue {
    struct evict_list l;
};

static struct evict_queue *clock_create(void) { return calloc(1, sizeof(struct evict_queue)); }

static void clock_destroy(struct evict_queue *q) { free(q); }

static void clock_link(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    evict_bits_update(it, CLOCK_MASK, 0);
    evict_list_push_head(&q->l, it);
}

static void clock_unlink(struct evict_queue *q, struct item *it) {
    evict_list_remove(&q->l, it);
}

static bool clock1_hit(struct item *it, uint32_t now) {
    (void)now;
    evict_bits_incr(it, CLOCK_MASK, 0, 1);
    return false;
}

static bool clock2_hit(struct item *it, uint32_t now) {
    (void)now;
    evict_bits_incr(it, CLOCK_MASK, 0, 3);
    return false;
}

static void clock_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)q, (void)it, (void)now;
}

/*
 * Reinserts counted tail items until the tail has counter 0.  Each pass
 * takes one off a counter, so the loop ends within (max + 1) x n steps
 * even if hits keep raising counters meanwhile; past that bound the tail
 * is taken as it is.  When the engine cannot take the victim it asks for
 * the next one: the item before it, without further reinsertion.
 */
static struct item *clock_victim(struct evict_queue *q, struct item *prev) {
    if (prev != NULL)
        return prev->prev;
    uint64_t bound = 4 * q->l.n + 1;
    while (q->l.tail != NULL && bound-- > 0) {
        struct item *t = q->l.tail;
        if (evict_bits_decr(t, CLOCK_MASK, 0) == 0)
            return t;
        evict_list_move_head(&q->l, t);
    }
    return q->l.tail;
}

static struct item *clock_oldest(struct evict_queue *q) { return q->l.tail; }

const struct evict_policy evict_clock = {
    .name = "clock",
    .create = clock_create,
    .destroy = clock_destroy,
    .link = clock_link,
    .unlink = clock_unlink,
    .hit = clock1_hit,
    .bump = clock_bump,
    .victim = clock_victim,
    .oldest = clock_oldest,
};

const struct evict_policy evict_clock2 = {
    .name = "clock2",
    .create = clock_create,
    .destroy = clock_destroy,
    .link = clock_link,
    .unlink = clock_unlink,
    .hit = clock2_hit,
    .bump = clock_bump,
    .victim = clock_victim,
    .oldest = clock_oldest,
};
