/*
 * ht.h -- the hash table that finds items by key.
 *
 * A chained table of 2^hashpower buckets, linked through item->hnext.  It
 * grows by doubling, incrementally: ht_expand_start() allocates the new
 * table and switches to it, then each ht_expand_step() moves a few old
 * buckets across; until the last one has moved, a lookup whose old bucket
 * lies below the migration cursor uses the new table and the others the
 * old one.  There is never a stop-the-world rehash.
 *
 *     old table   [ moved | moved | b = cursor | ... ]   lookups here ->
 *                     |       |                           old table
 *                     v       v
 *     new table   [ . . . . . . . . . . . . . . . ]      lookups here
 *
 * Locking: the table borrows the engine's striped item locks (lock.h),
 * whose count never exceeds the number of old buckets, so one stripe covers
 * whole buckets in both tables.  find/insert/delete/visit need the stripe
 * of the hash held (the _locked suffix).  The cursor moves one bucket at a
 * time under that bucket's stripe, so its comparison with a bucket cannot
 * change under a holder of the bucket's stripe.  Switching tables (start,
 * finish) takes every stripe briefly.  ht_expand_*() are for one
 * maintenance thread at a time; so is ht_visit(), except that several
 * threads may visit while no doubling can start (engine dumps).
 *
 * The table holds no references: the engine links and unlinks items.
 */
#ifndef CELLAR_STORAGE_HT_H
#define CELLAR_STORAGE_HT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/item.h"
#include "storage/lock.h"

#define HT_POWER_MAX 32

struct ht;

/* Returns NULL when memory is short.  locks must outlive the table. */
struct ht *ht_create(unsigned hashpower, struct lock_stripes *locks);
void ht_destroy(struct ht **h);

/* The hash of a key; its low bits pick the bucket and the lock. */
uint64_t ht_hash(const char *key, size_t nkey);

/* The item with this key, or NULL. */
struct item *ht_find_locked(struct ht *h, uint64_t hv, const char *key, size_t nkey);
/* Puts it at the head of its bucket (the key must not be present). */
void ht_insert_locked(struct ht *h, struct item *it, uint64_t hv);

/*
 * Starts loading the buckets of the n hashes and then the first two items
 * of each chain, without taking their stripes (n at most HT_PREFETCH_MAX;
 * more are ignored), and leaves those items in first[] (NULL for an empty
 * bucket).  Only a hint, safe against a concurrent expansion: an item in
 * first[] may already be unlinked, even reused.
 */
#define HT_PREFETCH_MAX 64
void ht_prefetch(struct ht *h, const uint64_t *hv, unsigned n, struct item **first);
/* Starts loading the bucket of hv, and waits for nothing (a hint, lock-free). */
void ht_prefetch_bucket(struct ht *h, uint64_t hv);
/* Takes exactly it out of its bucket. */
void ht_delete_locked(struct ht *h, struct item *it, uint64_t hv);

/*
 * Starts doubling the table.  Returns false (and changes nothing) when
 * already expanding, at HT_POWER_MAX, or when the new table cannot be
 * allocated.
 */
bool ht_expand_start(struct ht *h);
/*
 * Moves up to nbuckets old buckets into the new table; when the last one
 * has moved, frees the old table.  Returns the buckets moved.
 */
unsigned ht_expand_step(struct ht *h, unsigned nbuckets);
bool ht_expanding(const struct ht *h);
unsigned ht_power(const struct ht *h);
/* Bytes of bucket arrays (both tables while expanding). */
uint64_t ht_bytes(const struct ht *h);

/*
 * Visits buckets from *cursor on, each under its stripe lock, calling fn
 * for every item in it (fn may ht_delete_locked() that item) until about
 * budget units of work are done (one per bucket plus one per item).  Moves
 * *cursor on; sets *wrapped when it came back to bucket 0.  Does nothing
 * while expanding.  Returns the units of work done.
 */
typedef void (*ht_visit_fn)(struct item *it, uint64_t hv, void *arg);
unsigned ht_visit(struct ht *h, uint64_t *cursor, unsigned budget, bool *wrapped,
                  ht_visit_fn fn, void *arg);

#endif
