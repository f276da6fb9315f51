/*
 * evict_fifo.c -- FIFO: insert at the head, evict from the tail, and hits
 * change nothing.  The baseline the papers measure against (miss-ratio
 * reductions are quoted "from FIFO"), and the cheapest policy: a hit never
 * takes the class lock and an item carries no policy bits.
 */
#include <stdlib.h>

#include "storage/evict.h"
#include "storage/evict_list.h"

struct evict_queue {
    struct evict_list l;
};

static struct evict_queue *fifo_create(void) { return calloc(1, sizeof(struct evict_queue)); }

static void fifo_destroy(struct evict_queue *q) { free(q); }

static void fifo_link(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    evict_list_push_head(&q->l, it);
}

static void fifo_unlink(struct evict_queue *q, struct item *it) { evict_list_remove(&q->l, it); }

static bool fifo_hit(struct item *it, uint32_t now) {
    (void)it, (void)now;
    return false;
}

static void fifo_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)q, (void)it, (void)now;
}

static struct item *fifo_victim(struct evict_queue *q, struct item *prev) {
    return prev == NULL ? q->l.tail : prev->prev;
}

static struct item *fifo_oldest(struct evict_queue *q) { return q->l.tail; }

const struct evict_policy evict_fifo = {
    .name = "fifo",
    .create = fifo_create,
    .destroy = fifo_destroy,
    .link = fifo_link,
    .unlink = fifo_unlink,
    .hit = fifo_hit,
    .bump = fifo_bump,
    .victim = fifo_victim,
    .oldest = fifo_oldest,
};
