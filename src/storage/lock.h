/*
 * lock.h -- striped item locks.
 *
 * An array of 2^power mutexes; the lock of a key is chosen by the low bits
 * of its hash.  The engine keeps power <= the hash table's hashpower, so
 * every hash bucket (also chosen by low bits) belongs to exactly one lock,
 * and holding a key's lock gives its whole bucket chain.
 *
 * Lock order in the engine: item lock -> class lock -> slab lock.  Code that
 * holds a class lock and needs an item lock must use lock_try().  Nobody
 * holds two item locks by blocking, so lock_all() (which takes them in index
 * order) cannot deadlock against a thread that holds one and try-locks
 * another.
 *
 * Allocates once at create; never blocks except on its own mutexes.
 *
 * A single-threaded owner (cellar-sim runs one engine per thread) creates
 * its mutexes "off": struct mtx then costs one predictable branch per lock
 * and unlock, and try-lock always succeeds.  Every storage lock is a
 * struct mtx so that one switch at engine_create() covers them all.
 */
#ifndef CELLAR_STORAGE_LOCK_H
#define CELLAR_STORAGE_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * struct mtx is a futex mutex (Drepper, "Futexes Are Tricky", mutex 3):
 * 0 free, 1 locked, 2 locked and maybe waited for.  An uncontended lock
 * or unlock is one atomic instruction, inline (a pthread mutex pair costs
 * about 60 instructions through the PLT), and a stripe is 8 bytes instead
 * of 48, so the stripe array stays in cache.  A waiter sleeps in the
 * kernel; unlock wakes one when the word says someone may wait.
 */
struct mtx {
    _Atomic uint32_t v;
    bool on;                    /* false: single-threaded owner, no locking */
};

void mtx_lock_wait(struct mtx *x);
void mtx_unlock_wake(struct mtx *x);

static inline void mtx_init(struct mtx *x, bool on) {
    atomic_init(&x->v, 0);
    x->on = on;
}
static inline void mtx_destroy(struct mtx *x) { (void)x; }
static inline bool mtx_trylock(struct mtx *x) {
    uint32_t free = 0;
    return !x->on || atomic_compare_exchange_strong_explicit(&x->v, &free, 1, memory_order_acquire,
                                                             memory_order_relaxed);
}
static inline void mtx_lock(struct mtx *x) {
    if (!mtx_trylock(x))
        mtx_lock_wait(x);
}
static inline void mtx_unlock(struct mtx *x) {
    if (x->on && atomic_fetch_sub_explicit(&x->v, 1, memory_order_release) != 1)
        mtx_unlock_wake(x);
}

struct lock_stripes {
    uint64_t mask;
    struct mtx m[];
};

/* Returns NULL when memory is short; on = false for a single-threaded owner. */
struct lock_stripes *lock_create(unsigned power, bool on);
void lock_destroy(struct lock_stripes **l);

/* The mutex that guards keys hashing to hv. */
static inline struct mtx *lock_of(struct lock_stripes *l, uint64_t hv) {
    return &l->m[hv & l->mask];
}

/* Takes every stripe, in index order, and releases them all. */
void lock_all(struct lock_stripes *l);
void lock_all_release(struct lock_stripes *l);

/* Try-locks the stripe of hv; true when taken. */
bool lock_try(struct lock_stripes *l, uint64_t hv);

#endif
