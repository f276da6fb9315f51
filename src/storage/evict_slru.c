/*
 * evict_slru.c -- memcached's segmented LRU (doc/new_lru.txt, items.c;
 * the default since 1.5 with lru_segmented), per slab class.
 *
 *   new --> HOT --tail--> active? ---------> WARM head (active cleared)
 *            |            over 20% or old --> COLD head
 *   WARM --tail--> active? --> WARM head (active cleared)
 *                  over 40% or old --> COLD head
 *   COLD --tail--> evicted;  a hit that makes a COLD item active moves it
 *                  to WARM at once (memcached: an asynchronous bump)
 *
 * Hits follow do_item_bump(): the first fetch only marks the item fetched;
 * a later fetch of a fetched, inactive item makes it active.  Nothing
 * moves on a hit except an item turning active in COLD, so a hit takes
 * the class lock at most once per activation.  memcached also refreshes
 * the item's time on activation; the engine does that when bump() is
 * called, so activation in HOT and WARM asks for a (queue-neutral) bump.
 *
 * Limits (memcached 1.6 defaults): HOT at most 20% of the class
 * (hot_lru_pct), WARM 40% (warm_lru_pct), counted in items here where
 * memcached counts bytes (items of one class differ by less than the
 * class's growth factor).  Age limits: an inactive HOT tail older than
 * 0.2 x COLD's age (hot_max_factor), or a WARM tail older than 2.0 x
 * COLD's age (warm_max_factor), goes to COLD even under the size limit.
 * All four are tunables (slru_tune(): -o hot_lru_pct... and `lru tune`).
 *
 * memcached's LRU maintainer thread does this tail shuffling in the
 * background; so does slru_maintain() when the engine's maintenance step
 * calls it (the maintainer is on), a bounded number of moves at a time.
 * victim() also does it at the moment it is needed, for an engine that
 * runs no maintenance (cellar-sim): it brings HOT and WARM within their
 * limits, then takes COLD's tail (pulling from HOT, then WARM, when COLD
 * is empty, as do_item_alloc_pull() does).  The policy
 * keeps the last time it was given (link/hit/bump) for the age limits.
 *
 * pbits: bits 0..1 segment (enum evict_lru: seg_mask), bit 2 fetched,
 * bit 3 active.  Moves are counted as memcached counts them (stats items:
 * moves_to_cold, moves_to_warm, moves_within_lru).
 */
#include <stdlib.h>

#include "storage/evict.h"
#include "storage/evict_list.h"

#define SL_SEG 0x03
#define SL_FETCHED 0x04
#define SL_ACTIVE 0x08

enum { HOT = EVICT_HOT, WARM = EVICT_WARM, COLD = EVICT_COLD, NSEG };

struct evict_queue {
    struct evict_list seg[NSEG];
    uint32_t now;               /* latest time seen */
    struct evict_tune t;        /* limits (slru_tune; memcached's defaults) */
    uint64_t to_cold, to_warm, within;  /* moves, as memcached counts them */
};

static struct evict_queue *slru_create(void) {
    struct evict_queue *q = calloc(1, sizeof(struct evict_queue));
    if (q != NULL)
        q->t = (struct evict_tune)EVICT_TUNE_DEFAULT;
    return q;
}

static void slru_tune(struct evict_queue *q, const struct evict_tune *t) { q->t = *t; }

static void slru_destroy(struct evict_queue *q) { free(q); }

static unsigned seg_of(const struct item *it) { return evict_bits(it) & SL_SEG; }

static void seek_time(struct evict_queue *q, uint32_t now) {
    if (now > q->now)
        q->now = now;
}

static void slru_link(struct evict_queue *q, struct item *it, uint32_t now) {
    seek_time(q, now);
    evict_bits_update(it, SL_SEG | SL_FETCHED | SL_ACTIVE, HOT);
    evict_list_push_head(&q->seg[HOT], it);
}

static void slru_unlink(struct evict_queue *q, struct item *it) {
    evict_list_remove(&q->seg[seg_of(it)], it);
}

/* Moves it to the head of segment to, with new flag bits. */
static void move_to(struct evict_queue *q, struct item *it, unsigned to, uint8_t flags) {
    unsigned from = seg_of(it);
    if (to == COLD)
        q->to_cold++;
    else if (from == to)
        q->within++;
    else
        q->to_warm++;
    evict_list_transfer(&q->seg[from], &q->seg[to], it);
    evict_bits_update(it, SL_SEG | SL_ACTIVE, (uint8_t)(to | flags));
}

static bool slru_hit(struct item *it, uint32_t now) {
    (void)now;
    uint8_t b = evict_bits(it);
    if (b & SL_ACTIVE)
        return false;
    if (!(b & SL_FETCHED)) {
        evict_bits_update(it, SL_FETCHED, SL_FETCHED);
        return false;
    }
    evict_bits_update(it, SL_ACTIVE, SL_ACTIVE);
    return true;
}

static void slru_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    seek_time(q, now);
    if (seg_of(it) == COLD && (evict_bits(it) & SL_ACTIVE))
        move_to(q, it, WARM, 0);
}

static uint32_t age(const struct evict_queue *q, const struct item *it) {
    return q->now > it->atime ? q->now - it->atime : 0;
}

/*
 * One step of lru_pull_tail() on HOT or WARM: the tail is rescued if
 * active (HOT -> WARM, WARM -> WARM head), sent to COLD if the segment is
 * over limit or the item over max_age, else left.  Returns whether
 * anything moved.
 */
static bool pull_tail(struct evict_queue *q, unsigned seg, uint64_t limit, uint32_t max_age) {
    struct item *t = q->seg[seg].tail;
    if (t == NULL)
        return false;
    if (evict_bits(t) & SL_ACTIVE) {
        move_to(q, t, WARM, 0);
        return true;
    }
    if (q->seg[seg].n > limit || age(q, t) > max_age) {
        move_to(q, t, COLD, 0);
        return true;
    }
    return false;
}

/*
 * Many pull_tail()s at once, for the common case of the maintainer's
 * juggle: the inactive items at seg's tail that pull_tail() would send to
 * COLD one by one (the segment over limit, or the item over max_age), at
 * most max of them, go to COLD's head as one run, in the order the single
 * moves would leave them (the run keeps its order, the oldest next to
 * COLD's old head).  Each item still gets its segment bits; only the list
 * work is done once.  Stops at the first active item, which pull_tail()
 * rescues.  Returns how many moved.
 */
static unsigned pull_run(struct evict_queue *q, unsigned seg, uint64_t limit, uint32_t max_age,
                         uint64_t max) {
    struct evict_list *from = &q->seg[seg], *cold = &q->seg[COLD];
    struct item *last = from->tail, *first = NULL;
    uint64_t k = 0;
    for (struct item *t = last; t != NULL && k < max; t = t->prev) {
        if ((evict_bits(t) & SL_ACTIVE) || !(from->n - k > limit || age(q, t) > max_age))
            break;
        evict_bits_update(t, SL_SEG | SL_ACTIVE, COLD);
        first = t;
        k++;
    }
    if (k == 0)
        return 0;
    from->tail = first->prev;               /* cut [first..last] out of seg */
    if (from->tail != NULL)
        from->tail->next = NULL;
    else
        from->head = NULL;
    from->n -= k;
    first->prev = NULL;                     /* and put it at COLD's head */
    last->next = cold->head;
    if (cold->head != NULL)
        cold->head->prev = last;
    else
        cold->tail = last;
    cold->head = first;
    cold->n += k;
    q->to_cold += k;
    return (unsigned)k;
}

/*
 * The maintainer's juggle: HOT's tail, then WARM's, pulled while they are
 * over their limits, at most budget pulls in each: runs of inactive tails
 * to COLD at once (pull_run()), an active tail rescued by pull_tail().
 * Each pull either clears an active bit or moves an item to COLD, so the
 * loops end; the bound only guards against hits re-activating items
 * meanwhile.  Returns the pulls made.
 */
static unsigned juggle(struct evict_queue *q, uint64_t budget) {
    uint64_t total = q->seg[HOT].n + q->seg[WARM].n + q->seg[COLD].n;
    uint64_t hot_limit = total * q->t.hot_pct / 100, warm_limit = total * q->t.warm_pct / 100;
    uint32_t cold_age = q->seg[COLD].tail != NULL ? age(q, q->seg[COLD].tail) : 0;
    uint32_t hot_age = (uint32_t)(cold_age * q->t.hot_max_factor);
    uint32_t warm_age = (uint32_t)(cold_age * q->t.warm_max_factor);
    unsigned moved = 0;
    const unsigned segs[2] = {HOT, WARM};
    const uint64_t limits[2] = {hot_limit, warm_limit};
    const uint32_t ages[2] = {hot_age, warm_age};
    for (unsigned i = 0; i < 2; i++) {
        uint64_t bound = budget;
        while (bound > 0) {
            unsigned k = pull_run(q, segs[i], limits[i], ages[i], bound);
            if (k == 0 && !pull_tail(q, segs[i], limits[i], ages[i]))
                break;
            k = k > 0 ? k : 1;
            bound -= k;
            moved += k;
        }
    }
    return moved;
}

static unsigned slru_maintain(struct evict_queue *q, uint32_t now, unsigned budget) {
    seek_time(q, now);
    return juggle(q, budget);
}

/* The maintainer's juggle, run to completion, then COLD's tail. */
static struct item *slru_victim(struct evict_queue *q, struct item *prev) {
    if (prev != NULL) {
        if (prev->prev != NULL)
            return prev->prev;
        unsigned s = seg_of(prev);
        return s == COLD ? q->seg[HOT].tail : s == HOT ? q->seg[WARM].tail : NULL;
    }
    uint64_t total = q->seg[HOT].n + q->seg[WARM].n + q->seg[COLD].n;
    juggle(q, 2 * total + 2);
    uint64_t bound = 2 * total + 2;
    while (q->seg[COLD].tail == NULL && bound-- > 0) {
        if (!pull_tail(q, HOT, 0, 0) && !pull_tail(q, WARM, 0, 0))
            break;
    }
    return q->seg[COLD].tail;
}

static struct item *slru_oldest(struct evict_queue *q) {
    struct item *o = NULL;
    for (unsigned s = 0; s < NSEG; s++) {
        struct item *t = q->seg[s].tail;
        if (t != NULL && (o == NULL || t->atime < o->atime))
            o = t;
    }
    return o;
}

static void slru_segments(const struct evict_queue *q, struct evict_segments *out) {
    for (unsigned s = 0; s < NSEG; s++)
        out->number[s] = q->seg[s].n;
    out->age_hot = q->seg[HOT].tail != NULL ? age(q, q->seg[HOT].tail) : 0;
    out->age_warm = q->seg[WARM].tail != NULL ? age(q, q->seg[WARM].tail) : 0;
    out->moves_to_cold = q->to_cold;
    out->moves_to_warm = q->to_warm;
    out->moves_within_lru = q->within;
}

const struct evict_policy evict_slru = {
    .name = "slru",
    .create = slru_create,
    .destroy = slru_destroy,
    .link = slru_link,
    .unlink = slru_unlink,
    .hit = slru_hit,
    .bump = slru_bump,
    .tune = slru_tune,
    .maintain = slru_maintain,
    .victim = slru_victim,
    .oldest = slru_oldest,
    .segments = slru_segments,
    .seg_mask = SL_SEG,
};
