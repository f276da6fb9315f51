/*
 * evict_doubleclock.c -- DoubleClock: the Linux page cache's active and
 * inactive lists (mm/vmscan.c, mm/swap.c's mark_page_accessed(); Johannes
 * Weiner's workingset.c for refault distance).
 *
 *   new --> inactive (FIFO) --tail: referenced--> active head (promoted)
 *              ^         \--tail: unreferenced--> evicted
 *              |
 *              +-- active tail, referenced cleared, while inactive < active
 *
 * Two bits per item, `active` (which list) and `referenced`, and an access
 * moves an item one step: inactive+unreferenced -> inactive+referenced ->
 * active+unreferenced (to the active head) -> active+referenced.  Only the
 * middle step moves the item, so most hits take no class lock.  Reclaim
 * takes the inactive tail: unreferenced, it is evicted; referenced, it is
 * promoted to the active head and the next tail is looked at.  Before
 * reclaiming, the active list is shrunk while it is larger than the
 * inactive one (the kernel's inactive_is_low() with inactive_ratio 1, its
 * value below 1 GB): its tail moves to the inactive head, unreferenced.
 *
 * `doubleclock-rd` adds refault distance (Linux 3.15+): an eviction leaves
 * a shadow entry holding the count of evictions so far; when the key comes
 * back within (evictions now - evictions then) <= |active|, it would have
 * stayed had the inactive list been that much longer, so it enters the
 * active list directly.  Shadows are kept for as many keys as the class
 * holds, oldest dropped first.
 *
 * pbits: bit 0 active, bit 1 referenced.
 */
#include <stdlib.h>

#include "storage/evict.h"
#include "storage/evict_list.h"
#include "storage/ghost.h"
#include "storage/ht.h"

#define DC_ACTIVE 0x01
#define DC_REF 0x02

struct evict_queue {
    struct evict_list inactive, active;
    bool refault;
    struct ghost *shadow;       /* refault: evicted keys, with the eviction count */
    uint64_t evictions;
    uint64_t cap;
    struct item *cand;
};

static struct evict_queue *create(bool refault) {
    struct evict_queue *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return NULL;
    q->refault = refault;
    if (refault && (q->shadow = ghost_create()) == NULL) {
        free(q);
        return NULL;
    }
    return q;
}

static struct evict_queue *dc_create(void) { return create(false); }
static struct evict_queue *dc_rd_create(void) { return create(true); }

static void dc_destroy(struct evict_queue *q) {
    ghost_destroy(&q->shadow);
    free(q);
}

static struct evict_list *list_of(struct evict_queue *q, const struct item *it) {
    return evict_bits(it) & DC_ACTIVE ? &q->active : &q->inactive;
}

static void dc_link(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    if (q->cand == it)
        q->cand = NULL;
    uint64_t then;
    if (q->refault && q->cap != 0 && ghost_take(q->shadow, ht_hash(it->data, it->nkey), &then) &&
        q->evictions - then <= q->active.n) {
        evict_bits_update(it, DC_ACTIVE | DC_REF, DC_ACTIVE);
        evict_list_push_head(&q->active, it);
        return;
    }
    evict_bits_update(it, DC_ACTIVE | DC_REF, 0);
    evict_list_push_head(&q->inactive, it);
}

static void dc_unlink(struct evict_queue *q, struct item *it) {
    if (it == q->cand) {
        q->evictions++;
        if (q->refault) {
            ghost_add_value(q->shadow, ht_hash(it->data, it->nkey), q->evictions);
            ghost_trim(q->shadow, q->cap);
        }
        q->cand = NULL;
    }
    evict_list_remove(list_of(q, it), it);
}

/* mark_page_accessed(): one step; only inactive+referenced needs a move. */
static bool dc_hit(struct item *it, uint32_t now) {
    (void)now;
    uint8_t b = evict_bits(it);
    if (!(b & DC_REF)) {
        evict_bits_update(it, DC_REF, DC_REF);
        return false;
    }
    return !(b & DC_ACTIVE);
}

static void dc_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    uint8_t b = evict_bits(it);
    if (!(b & DC_ACTIVE) && (b & DC_REF)) {
        evict_list_transfer(&q->inactive, &q->active, it);
        evict_bits_update(it, DC_ACTIVE | DC_REF, DC_ACTIVE);
    }
}

/*
 * Shrink the active list while it outweighs the inactive one, then scan
 * the inactive tail, promoting referenced items, until an unreferenced one
 * turns up.  Each promotion clears a bit, so the scan ends; when every
 * inactive item gets promoted, the active list is shrunk again.
 */
static struct item *dc_victim(struct evict_queue *q, struct item *prev) {
    if (prev != NULL) {
        q->cand = prev->prev != NULL ? prev->prev
                  : list_of(q, prev) == &q->inactive ? q->active.tail : NULL;
        return q->cand;
    }
    q->cap = q->inactive.n + q->active.n;
    for (uint64_t bound = 4 * q->cap + 4; bound > 0; bound--) {
        while (q->inactive.n < q->active.n) {
            struct item *t = q->active.tail;
            evict_list_transfer(&q->active, &q->inactive, t);
            evict_bits_update(t, DC_ACTIVE | DC_REF, 0);
        }
        struct item *t = q->inactive.tail;
        if (t == NULL)
            break;
        if (!(evict_bits(t) & DC_REF))
            return q->cand = t;
        evict_list_transfer(&q->inactive, &q->active, t);
        evict_bits_update(t, DC_ACTIVE | DC_REF, DC_ACTIVE);
    }
    q->cand = q->inactive.tail != NULL ? q->inactive.tail : q->active.tail;
    return q->cand;
}

static struct item *dc_oldest(struct evict_queue *q) {
    return q->inactive.tail != NULL ? q->inactive.tail : q->active.tail;
}

const struct evict_policy evict_doubleclock = {
    .name = "doubleclock",
    .create = dc_create,
    .destroy = dc_destroy,
    .link = dc_link,
    .unlink = dc_unlink,
    .hit = dc_hit,
    .bump = dc_bump,
    .victim = dc_victim,
    .oldest = dc_oldest,
};

const struct evict_policy evict_doubleclock_rd = {
    .name = "doubleclock-rd",
    .create = dc_rd_create,
    .destroy = dc_destroy,
    .link = dc_link,
    .unlink = dc_unlink,
    .hit = dc_hit,
    .bump = dc_bump,
    .victim = dc_victim,
    .oldest = dc_oldest,
};
