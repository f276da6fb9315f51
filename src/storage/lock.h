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

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct mtx {
    pthread_mutex_t m;
    bool on;                    /* false: single-threaded owner, no locking */
};

static inline void mtx_init(struct mtx *x, bool on) {
    x->on = on;
    pthread_mutex_init(&x->m, NULL);
}
static inline void mtx_destroy(struct mtx *x) { pthread_mutex_destroy(&x->m); }
static inline void mtx_lock(struct mtx *x) {
    if (x->on)
        pthread_mutex_lock(&x->m);
}
static inline void mtx_unlock(struct mtx *x) {
    if (x->on)
        pthread_mutex_unlock(&x->m);
}
static inline bool mtx_trylock(struct mtx *x) {
    return !x->on || pthread_mutex_trylock(&x->m) == 0;
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
