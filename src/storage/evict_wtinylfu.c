/*
 * evict_wtinylfu.c -- W-TinyLFU as Caffeine does it (BoundedLocalCache,
 * FrequencySketch; Einziger, Friedman & Manes, "TinyLFU", ToS 2017).
 *
 *   new --> window (LRU, 1%) --overflow--> probation (LRU) --hit--> protected
 *                                            ^                   (LRU, 80% of main)
 *                                            +---- overflow (demoted) ---+
 *
 *   eviction: candidate = the window's LRU (moved to probation's MRU end
 *             when the window overflows), victim = probation's LRU;
 *             admit(candidate, victim) by the frequency sketch:
 *               freq(c) > freq(v)        -> evict the victim
 *               else freq(c) >= 6        -> evict the victim with
 *                                           probability 1/128 (anti hash-flood)
 *               else                     -> evict the candidate
 *
 * Regions: window = C - floor(0.99 C) items (PERCENT_MAIN 0.99), main =
 * the rest, protected at most floor(0.8 main) (PERCENT_MAIN_PROTECTED).  A
 * hit counts in the sketch and moves the item to the MRU end of its
 * region, except that a probation hit moves it to protected, whose
 * overflow is demoted from protected's LRU to probation's MRU.  Every
 * insert counts in the sketch too.  The sketch (sketch.h) is Caffeine's
 * 4-bit count-min with halving every 10 x C increments, sized to the
 * class as it grows, as Caffeine sizes it lazily.
 *
 * `wtinylfu` adapts the window as Caffeine's hill climber does
 * (climb(), determineAdjustment(), increase/decreaseWindow()): after each
 * sample of 10 x C requests it compares the hit rate with the previous
 * sample's and keeps moving the window size in the direction that helped,
 * by steps starting at 6.25% of C that shrink by 2% a sample, restarting
 * at full size when the hit rate moves by 5 points or more; the first step
 * shrinks the window.  Growing the window takes items from probation's
 * (else protected's) LRU end; shrinking sends the window's LRU items to
 * probation.  `wtinylfu-fixed` keeps the window at 1% (the configuration
 * the S3-FIFO paper measures as "WTinyLFU w1%").
 *
 * Fitting the engine's seam:
 *   - C is the number of items linked at the last eviction.  Before the
 *     first eviction every item waits in the window; the first eviction
 *     moves all but the window's share to probation, oldest at the LRU end,
 *     as Caffeine's window overflow would have.  The climber starts then.
 *   - Caffeine inserts and then evicts; the engine evicts first.  So at
 *     eviction the window counts as if the new item were already in it:
 *     with |window| + 1 over its share, the window's LRU becomes the
 *     candidate (moved to probation), else the window's LRU competes from
 *     where it is, as in Caffeine's evictFromMain().
 *   - The admission's random choice comes from a xorshift generator in the
 *     queue, seeded with a constant, so runs repeat exactly.
 *
 * pbits: bits 0..1 region.
 */
#include <math.h>
#include <stdlib.h>

#include "storage/evict.h"
#include "storage/evict_list.h"
#include "storage/ht.h"
#include "storage/sketch.h"

#define TL_REGION 0x03
#define TL_PERCENT_MAIN 0.99
#define TL_PERCENT_PROTECTED 0.80
#define TL_HASHDOS_THRESHOLD 6
#define TL_RESTART_THRESHOLD 0.05
#define TL_STEP_PERCENT 0.0625
#define TL_STEP_DECAY_RATE 0.98

enum { WINDOW, PROBATION, PROTECTED, NREGION };

struct evict_queue {
    struct evict_list r[NREGION];
    struct sketch *sk;
    uint64_t cap;               /* items at the last eviction; 0 before the first */
    uint64_t wmax, pmax;        /* window and protected maxima, set from cap */
    uint64_t rng;               /* xorshift64 state */
    bool adaptive;
    /* the hill climber */
    uint64_t hits, misses;      /* in the current sample */
    double prev_rate, step;
    int64_t adjustment;
};

static struct evict_queue *create(bool adaptive) {
    struct evict_queue *q = calloc(1, sizeof(*q));
    if (q != NULL && (q->sk = sketch_create()) == NULL) {
        free(q);
        return NULL;
    }
    if (q != NULL) {
        q->rng = 0x9e3779b97f4a7c15ULL;
        q->adaptive = adaptive;
    }
    return q;
}

static struct evict_queue *tl_create(void) { return create(true); }
static struct evict_queue *tl_fixed_create(void) { return create(false); }

static void tl_destroy(struct evict_queue *q) {
    sketch_destroy(&q->sk);
    free(q);
}

static uint64_t key_hash(const struct item *it) { return ht_hash(it->data, it->nkey); }

static unsigned region(const struct item *it) { return evict_bits(it) & TL_REGION; }

static uint64_t count(const struct evict_queue *q) {
    return q->r[WINDOW].n + q->r[PROBATION].n + q->r[PROTECTED].n;
}

static void move_to(struct evict_queue *q, struct item *it, unsigned to) {
    evict_list_transfer(&q->r[region(it)], &q->r[to], it);
    evict_bits_update(it, TL_REGION, (uint8_t)to);
}

/* The window's LRU items go to probation's MRU end while it overflows. */
static void window_overflow(struct evict_queue *q, uint64_t max) {
    while (q->r[WINDOW].n > max)
        move_to(q, q->r[WINDOW].tail, PROBATION);
}

/* Protected's LRU items go to probation's MRU end while it overflows. */
static void demote_protected(struct evict_queue *q) {
    while (q->r[PROTECTED].n > q->pmax)
        move_to(q, q->r[PROTECTED].tail, PROBATION);
}

/*
 * The cache size became known, or changed: regions as Caffeine's
 * setMaximumSize() lays them out, and the climber's first step.
 */
static void set_cap(struct evict_queue *q, uint64_t cap) {
    q->cap = cap;
    q->wmax = cap - (uint64_t)((double)cap * TL_PERCENT_MAIN);
    q->pmax = (uint64_t)((double)(cap - q->wmax) * TL_PERCENT_PROTECTED);
    q->step = -TL_STEP_PERCENT * (double)cap;
    q->hits = q->misses = 0;
    q->prev_rate = 0;
    q->adjustment = 0;
}

/* Caffeine's increaseWindow(): up to adjustment items from main to window. */
static void increase_window(struct evict_queue *q) {
    if (q->pmax == 0)
        return;
    uint64_t quota = (uint64_t)q->adjustment < q->pmax ? (uint64_t)q->adjustment : q->pmax;
    q->pmax -= quota;
    q->wmax += quota;
    demote_protected(q);
    while (quota > 0) {
        struct item *c = q->r[PROBATION].tail;
        if (c == NULL)
            c = q->r[PROTECTED].tail;
        if (c == NULL)
            break;
        quota--;
        move_to(q, c, WINDOW);
    }
    q->pmax += quota;
    q->wmax -= quota;
}

/* Caffeine's decreaseWindow(): up to -adjustment items from window to probation. */
static void decrease_window(struct evict_queue *q) {
    if (q->wmax <= 1)
        return;
    uint64_t want = (uint64_t)-q->adjustment;
    uint64_t quota = want < q->wmax - 1 ? want : q->wmax - 1;
    q->pmax += quota;
    q->wmax -= quota;
    while (quota > 0 && q->r[WINDOW].tail != NULL) {
        quota--;
        move_to(q, q->r[WINDOW].tail, PROBATION);
    }
    q->pmax -= quota;
    q->wmax += quota;
}

/*
 * Caffeine's climb(): once a sample of requests (the sketch's sample size)
 * has been seen, step the window toward a better hit rate.
 */
static void climb(struct evict_queue *q) {
    uint64_t n = q->hits + q->misses, sample = sketch_sample(q->sk);
    if (sample == 0 || n < sample)
        return;
    double rate = (double)q->hits / (double)n;
    double change = rate - q->prev_rate;
    double amount = change >= 0 ? q->step : -q->step;
    double next = fabs(change) >= TL_RESTART_THRESHOLD
                      ? TL_STEP_PERCENT * (double)q->cap * (amount >= 0 ? 1 : -1)
                      : TL_STEP_DECAY_RATE * amount;
    q->prev_rate = rate;
    q->adjustment = (int64_t)amount;
    q->step = next;
    q->hits = q->misses = 0;
    demote_protected(q);
    if (q->adjustment > 0)
        increase_window(q);
    else if (q->adjustment < 0)
        decrease_window(q);
}

static void tl_link(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    uint64_t h = key_hash(it);
    sketch_ensure(q->sk, count(q) + 1);
    sketch_increment(q->sk, h);
    evict_bits_update(it, TL_REGION, WINDOW);
    evict_list_push_head(&q->r[WINDOW], it);
    if (q->cap != 0) {
        window_overflow(q, q->wmax);
        q->misses++;
        if (q->adaptive)
            climb(q);
    }
}

static void tl_unlink(struct evict_queue *q, struct item *it) {
    evict_list_remove(&q->r[region(it)], it);
}

static bool tl_hit(struct item *it, uint32_t now) {
    (void)it, (void)now;
    return true;
}

static void tl_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    sketch_increment(q->sk, key_hash(it));
    switch (region(it)) {
    case WINDOW:
        evict_list_move_head(&q->r[WINDOW], it);
        break;
    case PROBATION:
        move_to(q, it, PROTECTED);
        if (q->cap != 0)
            demote_protected(q);
        break;
    default:
        evict_list_move_head(&q->r[PROTECTED], it);
        break;
    }
    if (q->cap != 0) {
        q->hits++;
        if (q->adaptive)
            climb(q);
    }
}

static uint64_t tl_random(struct evict_queue *q) {
    uint64_t x = q->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return q->rng = x;
}

/* Caffeine's admit(): whether the candidate may replace the victim. */
static bool admit(struct evict_queue *q, const struct item *cand, const struct item *victim) {
    unsigned vf = sketch_estimate(q->sk, key_hash(victim));
    unsigned cf = sketch_estimate(q->sk, key_hash(cand));
    if (cf > vf)
        return true;
    if (cf >= TL_HASHDOS_THRESHOLD)
        return (tl_random(q) & 127) == 0;
    return false;
}

/*
 * One eviction (see the top of the file).  A candidate the engine could
 * not take is followed by the next item toward the MRU end of its region,
 * then by the LRU ends of the other regions.
 */
static struct item *tl_victim(struct evict_queue *q, struct item *prev) {
    if (prev != NULL) {
        if (prev->prev != NULL)
            return prev->prev;
        unsigned r = region(prev);
        return r == PROBATION ? q->r[WINDOW].tail : r == WINDOW ? q->r[PROTECTED].tail : NULL;
    }
    uint64_t n = count(q);
    if (n == 0)
        return NULL;
    if (n != q->cap)
        set_cap(q, n);
    struct item *cand = NULL;
    if (q->r[WINDOW].n + 1 > q->wmax && q->r[WINDOW].n > 0) {
        /* the new item will push the window over: its LRU moves on (and
         * at the first eviction, all the window holds beyond its share) */
        window_overflow(q, q->wmax > 0 ? q->wmax - 1 : 0);
        cand = q->r[PROBATION].head;
    }
    struct item *victim = q->r[PROBATION].tail;
    if (cand == NULL)
        cand = q->r[WINDOW].tail;
    if (cand == NULL && victim == NULL)
        victim = q->r[PROTECTED].tail;
    if (victim == NULL || victim == cand)
        return cand != NULL ? cand : victim;
    if (cand == NULL)
        return victim;
    return admit(q, cand, victim) ? victim : cand;
}

static struct item *tl_oldest(struct evict_queue *q) {
    struct item *o = NULL;
    for (unsigned r = 0; r < NREGION; r++) {
        struct item *t = q->r[r].tail;
        if (t != NULL && (o == NULL || t->atime < o->atime))
            o = t;
    }
    return o;
}

const struct evict_policy evict_wtinylfu = {
    .name = "wtinylfu",
    .create = tl_create,
    .destroy = tl_destroy,
    .link = tl_link,
    .unlink = tl_unlink,
    .hit = tl_hit,
    .bump = tl_bump,
    .victim = tl_victim,
    .oldest = tl_oldest,
};

const struct evict_policy evict_wtinylfu_fixed = {
    .name = "wtinylfu-fixed",
    .create = tl_fixed_create,
    .destroy = tl_destroy,
    .link = tl_link,
    .unlink = tl_unlink,
    .hit = tl_hit,
    .bump = tl_bump,
    .victim = tl_victim,
    .oldest = tl_oldest,
};
