/*
 * evict_sampled.c -- Redis's approximated LRU and LFU (redis src/evict.c,
 * server.h, config.c): no order is kept among the items at all; to evict,
 * look at a few items picked at random and take the worst one seen.
 *
 *   victim(NULL):  rescore the pool --> sample 5 --> each sample enters the
 *                  pool if it has room or beats its smallest --> evict the
 *                  pool's largest score
 *
 *   pool (16, ascending score)  [ s0 <= s1 <= ... <= s15 ]  victim = right end
 *   side table (every item)     [ it0 it1 it2 ... it(n-1) ]  sampled at random
 *
 * Rules (Redis 7, defaults in brackets):
 *   - Each eviction round samples maxmemory-samples [5] distinct items
 *     (dictGetSomeKeys returns distinct keys; with 5 or fewer items in the
 *     class every one is taken, in random order).
 *   - The eviction pool holds EVPOOL_SIZE [16] candidates sorted by
 *     ascending score.  A sample goes in if the pool has room, shifting
 *     the larger ones right; or, when full, if its score beats the
 *     smallest, which then drops out.  A sample equal to the smallest of a
 *     full pool stays out, and among equal scores the later one sits to
 *     the left (Redis's `pool[k].idle < idle` scan).  The victim is the
 *     right end.  The pool lives on across rounds.
 *   - `sampled`: score = idle time.  `sampled-lfu`: score = 255 - the
 *     decayed counter (LFUDecrAndReturn).
 *   - LFU counter (8 bits): a new item starts at LFU_INIT_VAL [5].  An
 *     access first decays it, then LFULogIncr: below 255, add one with
 *     probability 1 / ((counter - 5, at least 0) x lfu-log-factor [10] + 1).
 *     Decay: counter -= (minutes since the last access) / lfu-decay-time
 *     [1 minute], not below 0.  As in Redis the "last decrement time" is
 *     rewritten on every access, so it is the last access, and minutes are
 *     whole clock minutes (now / 60 - then / 60).
 *
 * Time base.  LRU idle time is counted in accesses, not seconds: the queue
 * has a logical clock that ticks at every link and bump, the item keeps
 * the tick of its last access, and idle = clock - tick.  Redis's LRU clock
 * has a resolution of one second, and so would the engine's atime; every
 * item read within the same second would then tie, which in cellar-sim
 * (where a generated trace packs 10,000 requests into a trace second)
 * turns the policy into random eviction among a second's worth of items.
 * With the logical clock ties never happen, the policy is the algorithm
 * Redis approximates (with as fine a clock as one likes), and in a class
 * of at most 5 items, where every round samples them all, it is exact
 * LRU.  The LFU decay keeps wall time, as Redis does (it is a rate per
 * minute): the item's last access is the engine's atime (set by the
 * engine at link and after every bump), and since victim() is given no
 * time, the decay there uses the latest time the queue saw (link or
 * bump).  In cellar-sim a one-id-per-line trace advances one second per
 * request, so there an item decays by one for each 60 requests without a
 * hit (and sampled-lfu forgets fast); a generated trace replayed directly
 * packs 10,000 requests into a second, and counts barely decay.
 *
 * Where we differ from Redis, on purpose:
 *   - The pool holds item pointers and is rescored at the start of each
 *     round (16 score computations and an insertion sort).  Redis freezes
 *     a key's score when it is sampled, so a key read since then is still
 *     evicted on its old idle time, and old entries compete with fresh
 *     samples on understated idle times.  Rescoring keeps the pool's
 *     order true; a sample already in the pool is not added twice.
 *   - A pooled item that is unlinked (delete, replace, expiry, eviction)
 *     leaves the pool at once; Redis leaves the key and skips it at
 *     eviction when the lookup fails.  So no entry ever points at freed
 *     memory.
 *   - When the engine refuses a candidate (busy or referenced) the next
 *     one is the pool's next-largest score, and past the pool's left end
 *     the items of the side table in order (skipping pooled ones), so the
 *     chain offers every item once and then ends with NULL.
 *
 * Fit to the seam.  link() appends the item to the class's side table, a
 * dense array of item pointers growing by doubling (the only allocation,
 * amortised, under the class lock as evict.h allows), and stores the
 * item's index in it; unlink() moves the table's last item into the hole.
 * The side table never shrinks (it is at most the class's peak count).
 * A failed growth is no error: the item goes on an overflow list instead
 * (FIFO, through its own links), and the overflow items are the first
 * victims, oldest first, whatever their score -- a degraded order while
 * memory is short, never a lost item.  hit() touches nothing and asks for
 * bump() every time: the logical clock and the LFU draw live in the queue
 * (the PRNG is per queue, seeded with a constant, so runs reproduce), so
 * every hit takes the class lock, as for lru-exact and lfu.  FIXME: for
 * cellard an LRU keyed on atime that bumps at most once per second would
 * spare the lock, at the price of the ties described above.  oldest() (the
 * `age` stat) is approximate, as Redis never knows its oldest key either:
 * the least recently accessed (by atime) of the pooled items, the table's
 * first item and the oldest overflow item.
 *
 * Per-item metadata: the 16 bytes of the item's link space (item.h's
 * union, pword[]): pword[0] the index in the side table, pword[1] the
 * access tick (`sampled`) or the 8-bit counter (`sampled-lfu`); bit 0 of
 * pbits marks an overflow item (whose link space then holds its links).
 * No item grows.  Outside the item: the side table, 8 bytes per item (up
 * to 16 while half empty after a doubling), and per class the pool (256
 * bytes) and a few counters.
 */
#include <stdlib.h>
#include <string.h>

#include "storage/evict.h"
#include "storage/evict_list.h"

#define SM_SAMPLES 5                /* maxmemory-samples */
#define SM_POOL 16                  /* EVPOOL_SIZE */
#define SM_LFU_INIT 5               /* LFU_INIT_VAL */
#define SM_LFU_LOG_FACTOR 10        /* lfu-log-factor */
#define SM_LFU_DECAY_MIN 1          /* lfu-decay-time, minutes */
#define SM_LFU_MAX 255
#define SM_TAB_MIN 64               /* first side table, items */
#define SM_SEED 0x5eed5a3b1ed5eedULL

#define SM_OVERFLOW 0x01            /* pbits: on the overflow list, not in the table */

enum sm_kind { SM_LRU, SM_LFU };

struct sm_entry {
    struct item *it;
    uint64_t score;
};

struct evict_queue {
    enum sm_kind kind;
    struct item **tab;          /* every tracked item; it->pword[0] is its index */
    size_t n, cap;
    struct sm_entry pool[SM_POOL];  /* ascending score, entries 0..npool-1 */
    unsigned npool;
    struct evict_list over;     /* items the table could not take */
    uint64_t tick;              /* logical clock: links and bumps */
    uint32_t now;               /* latest engine second seen */
    uint64_t rng;               /* splitmix64 state */
};

static struct evict_queue *create(enum sm_kind kind) {
    struct evict_queue *q = calloc(1, sizeof(*q));
    if (q != NULL) {
        q->kind = kind;
        q->rng = SM_SEED;
    }
    return q;
}

static struct evict_queue *sampled_create(void) { return create(SM_LRU); }
static struct evict_queue *sampled_lfu_create(void) { return create(SM_LFU); }

static void sampled_destroy(struct evict_queue *q) {
    if (q != NULL)
        free(q->tab);
    free(q);
}

static uint64_t rnd(struct evict_queue *q) {
    uint64_t z = (q->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static bool is_overflow(const struct item *it) { return (evict_bits(it) & SM_OVERFLOW) != 0; }

static void see_time(struct evict_queue *q, uint32_t now) {
    if (now > q->now)
        q->now = now;
}

/* LFUDecrAndReturn: the counter less one per idle minute, as of now. */
static unsigned lfu_decayed(const struct item *it, uint32_t now) {
    unsigned c = (unsigned)it->pword[1];
    uint32_t mins = now > it->atime ? now / 60 - it->atime / 60 : 0;
    uint32_t periods = mins / SM_LFU_DECAY_MIN;
    return periods > c ? 0 : c - periods;
}

/* Larger is a better victim. */
static uint64_t score(const struct evict_queue *q, const struct item *it) {
    if (q->kind == SM_LRU)
        return q->tick - it->pword[1];
    return SM_LFU_MAX - lfu_decayed(it, q->now);
}

/*
 * Doubles the side table.  False when memory is short: then the caller
 * puts the item on the overflow list rather than fail.
 */
static bool grow(struct evict_queue *q) {
    size_t cap = q->cap != 0 ? 2 * q->cap : SM_TAB_MIN;
    if (cap > SIZE_MAX / sizeof(*q->tab))
        return false;
    struct item **tab = realloc(q->tab, cap * sizeof(*tab));
    if (tab == NULL)
        return false;
    q->tab = tab;
    q->cap = cap;
    return true;
}

static void sampled_link(struct evict_queue *q, struct item *it, uint32_t now) {
    see_time(q, now);
    if (q->n == q->cap && !grow(q)) {
        evict_bits_update(it, SM_OVERFLOW, SM_OVERFLOW);
        evict_list_push_head(&q->over, it);
        return;
    }
    evict_bits_update(it, SM_OVERFLOW, 0);
    it->pword[0] = q->n;
    it->pword[1] = q->kind == SM_LRU ? ++q->tick : SM_LFU_INIT;
    q->tab[q->n++] = it;
}

/* The pool index of it, or -1. */
static int pool_find(const struct evict_queue *q, const struct item *it) {
    for (unsigned i = 0; i < q->npool; i++)
        if (q->pool[i].it == it)
            return (int)i;
    return -1;
}

static void sampled_unlink(struct evict_queue *q, struct item *it) {
    if (is_overflow(it)) {
        evict_list_remove(&q->over, it);
        evict_bits_update(it, SM_OVERFLOW, 0);
        return;
    }
    int j = pool_find(q, it);
    if (j >= 0) {
        memmove(&q->pool[j], &q->pool[j + 1], (q->npool - (unsigned)j - 1) * sizeof(q->pool[0]));
        q->npool--;
    }
    size_t i = (size_t)it->pword[0];
    struct item *last = q->tab[--q->n];
    q->tab[i] = last;
    last->pword[0] = i;
    it->pword[0] = it->pword[1] = 0;
}

static bool sampled_hit(struct item *it, uint32_t now) {
    (void)it, (void)now;
    return true;
}

/*
 * An access.  `sampled`: the item takes the next tick.  `sampled-lfu`:
 * updateLFU(): decay as of now (the engine has not yet moved atime), then
 * the logarithmic increment; the engine then sets atime to now, which is
 * Redis's new last-decrement time.
 */
static void sampled_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    see_time(q, now);
    if (is_overflow(it))
        return;
    if (q->kind == SM_LRU) {
        it->pword[1] = ++q->tick;
        return;
    }
    unsigned c = lfu_decayed(it, now);
    if (c < SM_LFU_MAX) {
        double r = (double)(rnd(q) >> 11) * 0x1.0p-53;
        double base = c > SM_LFU_INIT ? (double)(c - SM_LFU_INIT) : 0.0;
        if (r < 1.0 / (base * SM_LFU_LOG_FACTOR + 1.0))
            c++;
    }
    it->pword[1] = c;
}

/*
 * evictionPoolPopulate()'s insertion of one sample with its score: find
 * the first entry not below it; a full pool refuses a sample that would
 * go first; with room, the larger entries shift right; when full, the
 * smaller ones shift left over the smallest, which drops out.
 */
static void pool_insert(struct evict_queue *q, struct item *it, uint64_t s) {
    if (pool_find(q, it) >= 0)
        return;
    unsigned k = 0;
    while (k < q->npool && q->pool[k].score < s)
        k++;
    if (q->npool < SM_POOL) {
        memmove(&q->pool[k + 1], &q->pool[k], (q->npool - k) * sizeof(q->pool[0]));
        q->npool++;
    } else {
        if (k == 0)
            return;
        k--;
        memmove(&q->pool[0], &q->pool[1], k * sizeof(q->pool[0]));
    }
    q->pool[k] = (struct sm_entry){it, s};
}

/* New scores for the pooled items, re-sorted stably (ties keep their order). */
static void pool_rescore(struct evict_queue *q) {
    for (unsigned i = 0; i < q->npool; i++) {
        struct sm_entry e = {q->pool[i].it, score(q, q->pool[i].it)};
        unsigned j = i;
        while (j > 0 && q->pool[j - 1].score > e.score) {
            q->pool[j] = q->pool[j - 1];
            j--;
        }
        q->pool[j] = e;
    }
}

/*
 * One round: rescore, then up to SM_SAMPLES distinct items at random into
 * the pool -- all of them, shuffled, when the table holds no more than
 * that; else by drawing again on a repeat.
 */
static void populate(struct evict_queue *q) {
    pool_rescore(q);
    size_t pick[SM_SAMPLES];
    unsigned ns = 0;
    if (q->n <= SM_SAMPLES) {
        for (size_t i = 0; i < q->n; i++) {
            size_t j = (size_t)(rnd(q) % (i + 1));
            if (j != i)
                pick[i] = pick[j];
            pick[j] = i;
        }
        ns = (unsigned)q->n;
    } else {
        while (ns < SM_SAMPLES) {
            size_t r = (size_t)(rnd(q) % q->n);
            unsigned d = 0;
            while (d < ns && pick[d] != r)
                d++;
            if (d == ns)
                pick[ns++] = r;
        }
    }
    for (unsigned i = 0; i < ns; i++) {
        struct item *it = q->tab[pick[i]];
        pool_insert(q, it, score(q, it));
    }
}

static struct item *pool_victim(struct evict_queue *q) {
    if (q->n == 0)
        return NULL;
    populate(q);
    return q->npool > 0 ? q->pool[q->npool - 1].it : NULL;
}

/* The first table item from index i on that is not in the pool. */
static struct item *table_walk(const struct evict_queue *q, size_t i) {
    for (; i < q->n; i++)
        if (pool_find(q, q->tab[i]) < 0)
            return q->tab[i];
    return NULL;
}

/*
 * The candidate chain: the overflow list, oldest first; then a round and
 * the pool from its largest score down; then the rest of the table.  One
 * round per chain, so the pool does not change while the engine walks it,
 * and a refused candidate is not offered twice.
 */
static struct item *sampled_victim(struct evict_queue *q, struct item *prev) {
    if (prev == NULL)
        return q->over.tail != NULL ? q->over.tail : pool_victim(q);
    if (is_overflow(prev))
        return prev->prev != NULL ? prev->prev : pool_victim(q);
    int j = pool_find(q, prev);
    if (j > 0)
        return q->pool[j - 1].it;
    if (j == 0)
        return table_walk(q, 0);
    return table_walk(q, (size_t)prev->pword[0] + 1);
}

static struct item *older(struct item *a, struct item *b) {
    if (a == NULL)
        return b;
    if (b == NULL)
        return a;
    return b->atime < a->atime ? b : a;
}

static struct item *sampled_oldest(struct evict_queue *q) {
    struct item *o = q->over.tail;
    if (q->n > 0)
        o = older(o, q->tab[0]);
    for (unsigned i = 0; i < q->npool; i++)
        o = older(o, q->pool[i].it);
    return o;
}

const struct evict_policy evict_sampled = {
    .name = "sampled",
    .create = sampled_create,
    .destroy = sampled_destroy,
    .link = sampled_link,
    .unlink = sampled_unlink,
    .hit = sampled_hit,
    .bump = sampled_bump,
    .victim = sampled_victim,
    .oldest = sampled_oldest,
};

const struct evict_policy evict_sampled_lfu = {
    .name = "sampled-lfu",
    .create = sampled_lfu_create,
    .destroy = sampled_destroy,
    .link = sampled_link,
    .unlink = sampled_unlink,
    .hit = sampled_hit,
    .bump = sampled_bump,
    .victim = sampled_victim,
    .oldest = sampled_oldest,
};
