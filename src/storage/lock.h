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
 */
#ifndef CELLAR_STORAGE_LOCK_H
#define CELLAR_STORAGE_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct lock_stripes;

/* Returns NULL when memory is short. */
struct lock_stripes *lock_create(unsigned power);
void lock_destroy(struct lock_stripes **l);

/* The mutex that guards keys hashing to hv. */
pthread_mutex_t *lock_of(struct lock_stripes *l, uint64_t hv);

/* Takes every stripe, in index order, and releases them all. */
void lock_all(struct lock_stripes *l);
void lock_all_release(struct lock_stripes *l);

/* Try-locks the stripe of hv; true when taken. */
bool lock_try(struct lock_stripes *l, uint64_t hv);

#endif
