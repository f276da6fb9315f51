#include "storage/ht.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"

#define HT_SEED 0x63656c6c6172ULL   /* "cellar" */

struct ht {
    struct lock_stripes *locks;
    struct item **primary;          /* the current (new, while expanding) table */
    struct item **old;              /* the table being emptied, or NULL */
    _Atomic unsigned power;         /* log2 buckets of primary */
    _Atomic bool expanding;
    _Atomic uint64_t cursor;        /* old buckets below this have moved */
    _Atomic unsigned readers;       /* inside ht_prefetch(), which takes no lock */
};

#define HT_VISIT_AHEAD 16           /* buckets ht_visit() loads ahead */

static uint64_t mask(unsigned power) { return ((uint64_t)1 << power) - 1; }

struct ht *ht_create(unsigned hashpower, struct lock_stripes *locks) {
    struct ht *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return NULL;
    h->primary = calloc((size_t)1 << hashpower, sizeof(struct item *));
    if (h->primary == NULL) {
        free(h);
        return NULL;
    }
    h->locks = locks;
    atomic_init(&h->power, hashpower);
    atomic_init(&h->expanding, false);
    atomic_init(&h->cursor, 0);
    atomic_init(&h->readers, 0);
    return h;
}

void ht_destroy(struct ht **hp) {
    struct ht *h = *hp;
    if (h == NULL)
        return;
    free(h->primary);
    free(h->old);
    free(h);
    *hp = NULL;
}

uint64_t ht_hash(const char *key, size_t nkey) { return hash_bytes(key, nkey, HT_SEED); }

/*
 * The bucket a hash lives in right now.  The caller holds the hash's
 * stripe, which is also the stripe of its old bucket, so the cursor cannot
 * cross that bucket while we look.
 */
static struct item **bucket_of(struct ht *h, uint64_t hv) {
    unsigned power = atomic_load_explicit(&h->power, memory_order_relaxed);
    if (atomic_load_explicit(&h->expanding, memory_order_relaxed)) {
        uint64_t ob = hv & mask(power - 1);
        if (ob >= atomic_load_explicit(&h->cursor, memory_order_acquire))
            return &h->old[ob];
    }
    return &h->primary[hv & mask(power)];
}

struct item *ht_find_locked(struct ht *h, uint64_t hv, const char *key, size_t nkey) {
    for (struct item *it = *bucket_of(h, hv); it != NULL; it = it->hnext)
        if (it->nkey == nkey && memcmp(it->data, key, nkey) == 0)
            return it;
    return NULL;
}

/*
 * The header, key and a small value: the first 192 bytes of the item,
 * which start anywhere in a cache line, so they may span four lines.
 */
static inline void prefetch_item(const char *it) {
    __builtin_prefetch(it);
    __builtin_prefetch(it + 64);
    __builtin_prefetch(it + 128);
    __builtin_prefetch(it + 191);
}

/*
 * ht_prefetch() reads the tables without any stripe, so two things must
 * hold.  A table outlives every reader that may have seen it: readers
 * count themselves in h->readers before they look, and expand_finish()
 * frees the emptied table only once that count is 0.  And an index never
 * exceeds its table: expand_start() publishes a table before the power
 * that indexes it, and the reader loads the power first.  Every access to
 * readers, power, primary and old on both sides is sequentially
 * consistent, so in their single order a reader either comes after the
 * finisher's look at readers (and then sees the new primary and no old
 * table) or is seen by it.  The bucket contents it reads may be stale;
 * they are only prefetched.
 */
ITEM_PEEK void ht_prefetch(struct ht *h, const uint64_t *hv, unsigned n, struct item **first) {
    struct item **b[HT_PREFETCH_MAX];
    if (n > HT_PREFETCH_MAX)
        n = HT_PREFETCH_MAX;
    atomic_fetch_add(&h->readers, 1);
    unsigned power = atomic_load(&h->power);
    struct item **primary = __atomic_load_n(&h->primary, __ATOMIC_SEQ_CST);
    struct item **old = __atomic_load_n(&h->old, __ATOMIC_SEQ_CST);
    uint64_t cursor = atomic_load(&h->cursor);
    for (unsigned i = 0; i < n; i++) {
        uint64_t ob = hv[i] & mask(power - 1);
        b[i] = old != NULL && ob >= cursor ? &old[ob] : &primary[hv[i] & mask(power)];
        __builtin_prefetch(b[i]);
    }
    for (unsigned i = 0; i < n; i++) {
        const char *it = (const char *)(first[i] = __atomic_load_n(b[i], __ATOMIC_RELAXED));
        if (it != NULL)
            prefetch_item(it);
    }
    atomic_fetch_sub(&h->readers, 1);
    /*
     * The key may be further down the chain (at the table's usual load, a
     * third of hits are): start on the second item too, once the first
     * has come in.  Item memory stays mapped, so a stale first item only
     * gives a useless prefetch.
     */
    for (unsigned i = 0; i < n; i++) {
        if (first[i] == NULL)
            continue;
        const char *it = (const char *)__atomic_load_n(&first[i]->hnext, __ATOMIC_RELAXED);
        if (it != NULL)
            prefetch_item(it);
    }
}

/*
 * A prefetch never faults, so the table may be swapped under it: the worst
 * it does is load a line of the wrong table.
 */
void ht_prefetch_bucket(struct ht *h, uint64_t hv) {
    unsigned power = atomic_load_explicit(&h->power, memory_order_relaxed);
    struct item **primary = __atomic_load_n(&h->primary, __ATOMIC_RELAXED);
    __builtin_prefetch(&primary[hv & mask(power)]);
}

void ht_insert_locked(struct ht *h, struct item *it, uint64_t hv) {
    struct item **b = bucket_of(h, hv);
    it->hnext = *b;
    *b = it;
}

void ht_delete_locked(struct ht *h, struct item *it, uint64_t hv) {
    for (struct item **p = bucket_of(h, hv); *p != NULL; p = &(*p)->hnext) {
        if (*p == it) {
            *p = it->hnext;
            it->hnext = NULL;
            return;
        }
    }
}

bool ht_expand_start(struct ht *h) {
    unsigned power = atomic_load_explicit(&h->power, memory_order_relaxed);
    if (atomic_load_explicit(&h->expanding, memory_order_relaxed) || power >= HT_POWER_MAX)
        return false;
    struct item **bigger = calloc((size_t)1 << (power + 1), sizeof(struct item *));
    if (bigger == NULL)
        return false;
    lock_all(h->locks);
    __atomic_store_n(&h->old, h->primary, __ATOMIC_SEQ_CST);     /* see ht_prefetch() */
    __atomic_store_n(&h->primary, bigger, __ATOMIC_SEQ_CST);
    atomic_store(&h->cursor, 0);
    atomic_store(&h->power, power + 1);
    atomic_store_explicit(&h->expanding, true, memory_order_relaxed);
    lock_all_release(h->locks);
    return true;
}

/* Switches back to one table once every old bucket is empty. */
static void expand_finish(struct ht *h) {
    lock_all(h->locks);
    struct item **old = h->old;
    __atomic_store_n(&h->old, NULL, __ATOMIC_SEQ_CST);
    atomic_store_explicit(&h->expanding, false, memory_order_relaxed);
    lock_all_release(h->locks);
    while (atomic_load(&h->readers) != 0)       /* see ht_prefetch() */
        sched_yield();
    free(old);
}

unsigned ht_expand_step(struct ht *h, unsigned nbuckets) {
    if (!atomic_load_explicit(&h->expanding, memory_order_relaxed))
        return 0;
    unsigned power = atomic_load_explicit(&h->power, memory_order_relaxed);
    uint64_t nold = (uint64_t)1 << (power - 1);
    unsigned done = 0;
    uint64_t b = atomic_load_explicit(&h->cursor, memory_order_relaxed);
    while (done < nbuckets && b < nold) {
        struct mtx *m = lock_of(h->locks, b);
        mtx_lock(m);
        struct item *it = h->old[b];
        while (it != NULL) {
            struct item *next = it->hnext;
            struct item **nb = &h->primary[ht_hash(it->data, it->nkey) & mask(power)];
            it->hnext = *nb;
            *nb = it;
            it = next;
        }
        h->old[b] = NULL;
        atomic_store_explicit(&h->cursor, ++b, memory_order_release);
        mtx_unlock(m);
        done++;
    }
    if (b == nold)
        expand_finish(h);
    return done;
}

bool ht_expanding(const struct ht *h) {
    return atomic_load_explicit(&h->expanding, memory_order_relaxed);
}

unsigned ht_power(const struct ht *h) {
    return atomic_load_explicit(&h->power, memory_order_relaxed);
}

uint64_t ht_bytes(const struct ht *h) {
    unsigned power = ht_power(h);
    uint64_t n = (uint64_t)1 << power;
    if (ht_expanding(h))
        n += n / 2;
    return n * sizeof(struct item *);
}

unsigned ht_visit(struct ht *h, uint64_t *cursor, unsigned budget, bool *wrapped,
                  ht_visit_fn fn, void *arg) {
    *wrapped = false;
    if (atomic_load_explicit(&h->expanding, memory_order_relaxed))
        return 0;
    uint64_t n = (uint64_t)1 << ht_power(h);
    unsigned work = 0;
    uint64_t b = *cursor < n ? *cursor : 0;
    while (work < budget) {
        /* the walk goes where the hash put the items, all over memory: start
           loading the first item of a bucket a little ahead (its slot read
           without its stripe: what it holds is only prefetched) */
        if (b + HT_VISIT_AHEAD < n)
            __builtin_prefetch(__atomic_load_n(&h->primary[b + HT_VISIT_AHEAD], __ATOMIC_RELAXED));
        struct mtx *m = lock_of(h->locks, b);
        mtx_lock(m);
        for (struct item *it = h->primary[b], *next; it != NULL; it = next) {
            next = it->hnext;
            fn(it, ht_hash(it->data, it->nkey), arg);
            work++;
        }
        mtx_unlock(m);
        work++;
        if (++b == n) {
            b = 0;
            *wrapped = true;
            break;
        }
    }
    *cursor = b;
    return work;
}
