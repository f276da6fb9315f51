/*
 * seg_index.h -- the segment engine's hash index: where each key's item
 * lies, in 8 bytes, 8 to a cache line.
 *
 *   slot (64 bits):  tag 12 | freq 8 | location 44 (segment 24 | offset 20)
 *   bucket:          8 slots, 64 bytes; a slot of 0 is empty
 *
 * The index keeps no keys: a slot's tag (12 bits of the key's hash) rules
 * out most other keys, and the caller's match function reads the item at
 * the location to rule out the rest.
 *
 * Two buckets per key (2-choice): its home, the hash's low bits, and its
 * alternate, the home with bits above the lock stripes' flipped by a mask
 * drawn from the tag; an insert takes the emptier head bucket.  When both
 * are full the home bucket grows a chain of overflow buckets: its last
 * slot becomes a link (tag 0) and the item that was there moves on.
 *
 * Growth is linear hashing, one bucket at a time, never stop-the-world:
 * with 2^level + split buckets, a hash's address is its low `level` bits,
 * or its low `level + 1` bits when those name a bucket already split.
 * seg_index_step() splits the next bucket (bucket split moves its entries
 * between itself and split + 2^level) whenever the items pass 7/8 of the
 * slots; nothing else is ever rehashed.  Buckets live in chunks that are
 * never moved, so growth copies nothing.
 *
 * Threading: every call but create/destroy/step and the read-ahead's two
 * takes the key's stripe of the engine's lock stripes held (lock_of(locks,
 * hv)).  A key's buckets,
 * before and after any split, all lie under that stripe (the lock bits are
 * below every bit that tells them apart), and a split holds its bucket's
 * stripe, so a lookup never sees a half-moved bucket.  The split position
 * is one atomic word: a split elsewhere never changes where this stripe's
 * keys are.  Overflow buckets come from a pool under a mutex of its own.
 * Each stripe also has a sequence that inserts and splits step (a
 * seqlock's): it lets a read-ahead's "absent" be trusted with no lock.
 *
 * Splitting needs each entry's hash again: the index asks the caller's
 * rehash function, which reads the key at the location (the stripe held
 * keeps that item where it is).
 */
#ifndef CELLAR_STORAGE_SEG_INDEX_H
#define CELLAR_STORAGE_SEG_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/lock.h"

#define SEG_LOC_BITS 44
#define SEG_LOC_MASK (((uint64_t)1 << SEG_LOC_BITS) - 1)
#define SEG_FREQ_SHIFT SEG_LOC_BITS
#define SEG_FREQ_MAX 255u

struct seg_index;

/* Does the item at loc have the key being looked for? */
typedef bool (*seg_index_match_fn)(void *arg, uint64_t loc);
/* The hash (engine_key_hash) of the key of the item at loc. */
typedef uint64_t (*seg_index_rehash_fn)(void *arg, uint64_t loc);

/*
 * An index of 2^power buckets to begin with (power >= the stripes' power),
 * under locks; rehash (with arg) for splits.  NULL when out of memory.
 */
struct seg_index *seg_index_create(unsigned power, struct lock_stripes *locks,
                                   seg_index_rehash_fn rehash, void *arg);
void seg_index_destroy(struct seg_index **ix);

/* The slot holding a key (tag match, then match(arg, loc) true), or NULL. */
uint64_t *seg_index_find_locked(struct seg_index *ix, uint64_t hv, seg_index_match_fn match,
                                void *arg);

/*
 * hint, a slot seen holding the entry of loc (key hash hv) before, if it
 * still does; else NULL.  hv's stripe held.  Saves a search where a lookup
 * came just before.
 */
uint64_t *seg_index_still_locked(uint64_t *hint, uint64_t hv, uint64_t loc);

/* Adds an entry for loc under hv (freq 0).  false when no overflow bucket could be had. */
bool seg_index_insert_locked(struct seg_index *ix, uint64_t hv, uint64_t loc);

/* Empties a slot found by seg_index_find_locked(). */
void seg_index_remove_locked(struct seg_index *ix, uint64_t *slot);

/*
 * Slots are written whole, as relaxed atomics (a plain store on x86-64):
 * the read-ahead reads them with no lock.
 */
static inline void seg_index_slot_store(uint64_t *slot, uint64_t v) {
    __atomic_store_n(slot, v, __ATOMIC_RELAXED);
}

static inline uint64_t seg_index_loc(uint64_t slot) { return slot & SEG_LOC_MASK; }
static inline unsigned seg_index_freq(uint64_t slot) {
    return (unsigned)(slot >> SEG_FREQ_SHIFT) & SEG_FREQ_MAX;
}
/* A slot pointing elsewhere (the item moved, merge or compaction), tag and freq kept. */
static inline void seg_index_move_locked(uint64_t *slot, uint64_t loc) {
    seg_index_slot_store(slot, (*slot & ~SEG_LOC_MASK) | (loc & SEG_LOC_MASK));
}
static inline void seg_index_set_freq_locked(uint64_t *slot, unsigned freq) {
    seg_index_slot_store(slot, (*slot & ~((uint64_t)SEG_FREQ_MAX << SEG_FREQ_SHIFT)) |
                                   ((uint64_t)(freq > SEG_FREQ_MAX ? SEG_FREQ_MAX : freq)
                                    << SEG_FREQ_SHIFT));
}

/*
 * Splits up to budget buckets while the index is fuller than its target
 * (takes each bucket's stripe).  Returns the buckets split: 0 when none
 * was needed (or no memory for one).
 */
unsigned seg_index_step(struct seg_index *ix, unsigned budget);

struct seg_index_stats {
    uint64_t items;
    uint64_t buckets;           /* home buckets: 2^level + split */
    uint64_t overflow;          /* overflow buckets in use */
    uint64_t bytes;             /* memory of both, and the directories */
    uint64_t splits;
};
void seg_index_stats(struct seg_index *ix, struct seg_index_stats *out);

/*
 * Read-ahead for n keys (no lock; the first SEG_INDEX_PREFETCH_MAX):
 * buckets loaded, a likely location each and the slot it was read from
 * (NULL: none).  Returns the keys that looked absent (bit i: hv[i]), with
 * their stripes' sequences in seq (seg_index.c).
 */
#define SEG_INDEX_PREFETCH_MAX 64
uint64_t seg_index_prefetch(struct seg_index *ix, const uint64_t *hv, unsigned n, uint64_t *loc,
                            uint64_t **slot, uint64_t *seq);
/*
 * No lock needed: for a key the read-ahead that gave seq saw absent, true
 * when no entry has been put into or moved between its stripe's buckets
 * since, so it is absent now (an insert or split makes it false).
 */
bool seg_index_absent(struct seg_index *ix, uint64_t hv, uint64_t seq);
/*
 * A read-ahead's slot checked under hv's stripe: the slot when it still
 * holds hv's tag and match() says the entry is the key's, else NULL (then
 * look it up).  Home buckets never move and a key has one entry, so a
 * slot that matches is the key's entry wherever growth has moved others.
 */
uint64_t *seg_index_check_locked(uint64_t *hint, uint64_t hv, seg_index_match_fn match,
                                 void *arg);

#endif
