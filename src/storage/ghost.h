/*
 * ghost.h -- a ghost list: the keys of recently evicted items, without
 * their values, in the order they were added.
 *
 * ARC (B1, B2), 2Q (A1out) and S3-FIFO (G) remember what they evicted so
 * that a key coming back soon is recognised: a ghost hit is still a miss,
 * but it tells the policy where to put the returning item.  A ghost holds
 * 64-bit key hashes (ht_hash()), not keys: two keys that share a hash are
 * one ghost, which at 2^-64 per pair changes nothing measurable and keeps
 * an entry at 24 bytes plus about 8 of index.
 *
 * Operations are O(1): add as newest, remove by hash, test membership,
 * drop the oldest.  Entries live in one array linked newest to oldest,
 * found through an open-addressing index (linear probing, deletion by
 * backward shift, load at most 1/2).
 *
 * Memory: the ghost grows by doubling when an add finds it full, so it
 * allocates, amortised, on the add path; its owner bounds it with
 * ghost_trim().  When an allocation fails the add is refused (returns
 * false) and the ghost stays as it was: a policy then merely forgets one
 * key.  It is not counted in the engine's -m limit (ghost_bytes() says how
 * much it holds).
 *
 * Threading: none of its own; the owner's lock (the class lock) covers it.
 */
#ifndef CELLAR_STORAGE_GHOST_H
#define CELLAR_STORAGE_GHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ghost;

/* An empty ghost, or NULL when memory is short. */
struct ghost *ghost_create(void);
/* Frees it; accepts NULL and sets *g to NULL. */
void ghost_destroy(struct ghost **g);

/*
 * Adds h as the newest entry.  A hash already present keeps its place
 * (a ghost is a FIFO: seeing a key again does not refresh it).  Returns
 * false only when h was absent and could not be added for lack of memory.
 */
bool ghost_add(struct ghost *g, uint64_t h);
/* Removes h; returns whether it was there. */
bool ghost_remove(struct ghost *g, uint64_t h);
/*
 * Entries may carry a 64-bit value (Linux-style shadow entries keep an
 * eviction counter): ghost_add_value() adds h with val (a present h keeps
 * its place and gets val), ghost_take() removes h and gives its value.
 */
bool ghost_add_value(struct ghost *g, uint64_t h, uint64_t val);
bool ghost_take(struct ghost *g, uint64_t h, uint64_t *val);
bool ghost_contains(const struct ghost *g, uint64_t h);
/* Drops the oldest entries until at most max remain. */
void ghost_trim(struct ghost *g, size_t max);
/* Drops the oldest entry; returns false when empty. */
bool ghost_drop_oldest(struct ghost *g);

size_t ghost_count(const struct ghost *g);
/* Bytes allocated for entries and index. */
size_t ghost_bytes(const struct ghost *g);

#endif
