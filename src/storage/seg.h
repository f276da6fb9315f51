/*
 * seg.h -- the segment store: items packed back to back in fixed-size
 * segments cut from the memory limit, found through seg_index, evicted and
 * expired a segment at a time (Segcache, NSDI'21), with memcached's exact
 * per-item CAS, exptime and flags (seg_item.h).  It is the engine's second
 * back end (-o storage=seg, through item_seg.c and store.h), which holds
 * memcached's store rules; the store itself only writes, links, finds and
 * unlinks.
 *
 *   set(key) --reserve--> TTL bucket's open segment (a new one from the
 *      |                  free pool when full; the pool evicts when empty)
 *      | write header, key, value into the reserved bytes
 *      v
 *   under the key's stripe: the op's rule (add, replace, cas), cas from the
 *   store's counter, the index entry set or moved; the old copy's bytes die
 *
 *   get(key) -- stripe --> index --> header: expired? --> pin the segment
 *               (the reference keeps the value in place until released)
 *
 *   eviction (FIFO): the sealed segment sealed first and not pinned: each
 *   item the index still points at is unlinked (under its stripe), then
 *   the segment goes back to the pool.  Expiry: a sealed segment whose
 *   latest exptime has passed goes the same way (seg_store_step).  Merge
 *   and S3-FIFO move the items they keep to other segments instead
 *   (seg_evict_merge.c, seg_evict_s3fifo.c, on seg_move.c).  A sealed
 *   segment whose last item dies goes back to the pool at once.
 *
 * Segments are grouped by TTL (Segcache's 1024 buckets: 8 s steps up to
 * 2047 s, then 128 s, 2048 s, 32768 s), so one segment's items expire
 * close together and whole segments go at once.
 *
 * Locks, in this order and never the other way: a key's stripe, then the
 * pool (free list, FIFO), then a TTL bucket.  Eviction picks and detaches
 * its victim under the pool lock, lets go of it, and unlinks the victim's
 * items taking their stripes one at a time; a writer that already holds a
 * stripe (a store written under the key's lock) skips its own and only
 * try-locks the others, giving the victim back when one stays busy, so two
 * such writers cannot wait on each other.  Readers pin segments (an atomic
 * count) under the key's stripe; a segment with pins is never reused:
 * eviction skips it and comes back for it later.
 */
/*
 * How the engine reaches it: item_seg.c, views of segment bytes behind the
 * engine's item primitives (README, "Storage back ends").
 */
#ifndef CELLAR_STORAGE_SEG_H
#define CELLAR_STORAGE_SEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/lock.h"
#include "storage/seg_item.h"

struct seg_store;
struct seg_at;
struct seg_ext;
struct seg_evict;

struct seg_config {
    size_t mem_limit;           /* bytes of segments (-m) */
    uint32_t seg_size;          /* bytes a segment (1 MiB) */
    unsigned lock_power;        /* log2 key stripes (12) */
    unsigned index_power;       /* log2 initial index buckets (12) */
    struct lock_stripes *locks; /* the key stripes to share (the engine's); NULL: its own */
    _Atomic uint64_t *cas;      /* the last cas handed out, to share; NULL: its own */
    /* Told of each item an eviction takes, with its stripe held (NULL: nobody);
       it must not call the store. */
    void (*evicted)(void *arg, const struct seg_at *at);
    void *hook_arg;             /* evicted's and dead's arg */
    /*
     * How the store evicts when no segment is free (seg_evict.h):
     * &seg_evict_fifo (seg_config_defaults()), &seg_evict_merge
     * (Segcache's merge: the oldest SEG_MERGE_N segments become one,
     * keeping the items read since they were written or last merged; a
     * store of fewer than SEG_MERGE_N + 2 segments evicts by FIFO) or
     * &seg_evict_s3fifo (a small and a main FIFO of segments and a ghost
     * of keys; fewer than SEG_S3FIFO_MIN segments: FIFO).
     */
    const struct seg_evict *evict;
    /* Whether an item is dead as the engine sees it (flush_all too), with
       its stripe held (NULL: exptime only); an eviction that moves items
       drops those. */
    bool (*dead)(void *arg, const struct seg_at *at);
};
#define SEG_MERGE_N 4
#define SEG_S3FIFO_MIN 8

void seg_config_defaults(struct seg_config *cfg);

/* NULL (err filled) when the configuration is invalid or memory short. */
struct seg_store *seg_store_create(const struct seg_config *cfg, char *err, size_t errlen);
void seg_store_destroy(struct seg_store **s);

/* The clock, unix seconds; exptimes below are absolute in the same seconds (0: never). */
void seg_store_clock_set(struct seg_store *s, uint32_t now);

enum seg_result {
    SEG_STORED,
    SEG_NOT_STORED,             /* add: present; replace: missing */
    SEG_EXISTS,                 /* cas: another cas */
    SEG_NOT_FOUND,              /* cas, delete, touch: missing */
    SEG_TOO_LARGE,              /* larger than a segment */
    SEG_NO_MEMORY,              /* every segment pinned or being written */
    SEG_DELETED,
    SEG_TOUCHED,
    SEG_AGAIN,                  /* seg_commit_locked: the cas does not fit the field */
};

/* The store's key stripes, its next cas (taken), its clock. */
struct lock_stripes *seg_store_locks(struct seg_store *s);
uint64_t seg_store_cas_next(struct seg_store *s);
uint32_t seg_store_clock(struct seg_store *s);

/*
 * ---- The interface item_seg.c (the engine's back end) and the tests use ----
 *
 * Each *_locked call needs the key's stripe (lock_of(locks, hv)) held.
 * An item is found where it lies (struct seg_at: valid while the stripe
 * is held, or while its segment is pinned).  A store is two steps: bytes
 * reserved and written, header, key and value (seg_write, holding no
 * stripe, or the key's one: held), then linked under the stripe with its
 * cas (seg_commit_locked: where they now lie in *linked, if asked), in
 * place of the copy found, if any; bytes written and never linked stay
 * dead.  A write may evict; a caller holding a stripe may so lose the
 * item it found (seg_commit_locked then inserts), and pins a source that
 * lies in the store while it writes.
 *
 * A value too large for a segment lies out of line (SEG_F_EXT): a block
 * of its own, charged to the memory limit by taking whole segments out
 * of use (their pages given back), whose address is what the segment
 * stores.  value and nbytes below are the value wherever it lies; a
 * reader that keeps an item past its stripe holds the block too
 * (seg_ext_hold), as it pins the segment.
 */
struct seg_at {
    uint64_t loc;
    struct seg_hdr h;           /* as stored: vlen is the bytes in the segment */
    char *key, *value;
    uint32_t nbytes;            /* the value's length */
    uint32_t seg;
    uint32_t created;           /* the clock when its segment opened */
    uint64_t *slot;             /* the index slot it was found in, NULL if not known: a
                                   hint, checked before use (seg_index_still_locked) */
};
struct seg_resv {
    uint64_t loc;
    uint32_t len;               /* 0: nothing held */
    struct seg_ext *ext;        /* its out-of-line value until linked */
};

/* The copy the index has for key, expired or not. */
bool seg_find_locked(struct seg_store *s, uint64_t hv, const char *key, size_t nkey,
                     struct seg_at *at);
void seg_unlink_locked(struct seg_store *s, uint64_t hv, const struct seg_at *at);
/*
 * Reserves and writes an item (h: klen, vlen, exptime, cflags and state
 * bits; a non-zero h->cas is the cas it will be linked with, which sizes
 * the field).  SEG_STORED, SEG_TOO_LARGE or SEG_NO_MEMORY.
 */
enum seg_result seg_write(struct seg_store *s, const struct seg_hdr *h, const char *key,
                          const void *value, struct mtx *held, struct seg_resv *r);
/* SEG_STORED (r released), SEG_AGAIN (write it again with SEG_F_CAS64), SEG_NO_MEMORY. */
enum seg_result seg_commit_locked(struct seg_store *s, uint64_t hv, const struct seg_at *old,
                                  struct seg_resv *r, uint64_t cas, struct seg_at *linked);
/* Lets go of a reservation not linked (its bytes stay dead). */
void seg_resv_drop(struct seg_store *s, struct seg_resv *r);
/* In place, where the layout allows (false: write a copy). */
void seg_set_state_locked(struct seg_store *s, const struct seg_at *at, uint16_t set,
                          uint16_t clear);
bool seg_set_exptime_locked(struct seg_store *s, const struct seg_at *at, uint32_t exptime);
bool seg_set_cas_locked(struct seg_store *s, const struct seg_at *at, uint64_t cas);
/* A pinned segment is not reused: its bytes stay readable. */
void seg_pin(struct seg_store *s, uint32_t seg);
void seg_unpin(struct seg_store *s, uint32_t seg);
bool seg_pinned(struct seg_store *s, uint32_t seg);
/* Holds an out-of-line value past the stripe (NULL when at's is in line); released once. */
struct seg_ext *seg_ext_hold(const struct seg_at *at);
void seg_ext_release(struct seg_store *s, struct seg_ext *x);
/*
 * flush_all: once the clock passes point, open segments created at or
 * before it take no more items, so that an item's segment's creation
 * time says on which side of the flush it was stored.
 */
void seg_store_seal_point(struct seg_store *s, uint32_t point);
/*
 * Read-ahead for up to 64 keys' buckets and likely items (no lock; only a
 * hint).  Returns the keys it found absent (bit i: hv[i]), whose lookups
 * will take no lock (seg_store_absent()).
 */
uint64_t seg_store_prefetch(struct seg_store *s, const uint64_t *hv, unsigned n);
/*
 * With no lock: true when this thread's last read-ahead found hv absent
 * and nothing has been inserted near it since, so it is absent now (a
 * get's miss, certain); false: look it up under the stripe.
 */
bool seg_store_absent(struct seg_store *s, uint64_t hv);
/*
 * The cursors of seg_store_walk() that bound the part-th of nparts slices
 * of a walk (by segment): [*lo, *hi).  A walk from *lo is in its slice
 * while its cursor is below *hi.
 */
void seg_store_walk_span(struct seg_store *s, unsigned part, unsigned nparts, uint64_t *lo,
                         uint64_t *hi);
/* A walk over every linked item, budget items a call; false when done (seg.c). */
bool seg_store_walk(struct seg_store *s, uint64_t *cursor, unsigned budget,
                    void (*fn)(void *arg, const struct seg_at *at), void *arg);

/*
 * Up to budget segments expired whole, then some index growth; returns
 * the work done (0: nothing to do).  seg_store_grow() is the growth alone.
 */
unsigned seg_store_step(struct seg_store *s, unsigned budget);
unsigned seg_store_grow(struct seg_store *s, unsigned budget);

struct seg_stats {
    uint64_t segments, free, sealed;
    uint64_t live_items, live_bytes;    /* what the index points at */
    uint64_t written_bytes;             /* reserved in segments not free */
    uint64_t evicted_segments, evicted_items, expired_segments;
    uint64_t expired_items, expired_unfetched, evicted_unfetched;   /* items in those */
    uint64_t merges;
    uint64_t small;                     /* s3fifo: sealed segments in the small queue */
    uint64_t promoted, reinserted;      /* s3fifo: items moved to the main queue, kept there */
    uint64_t ghost_hits;                /* s3fifo: stores of a key the ghost held */
    uint64_t emptied;                   /* freed when their last live item died */
    uint64_t ext_items, ext_bytes;      /* values out of line (blocks, their bytes) */
    uint64_t lent;                      /* segments out of use to pay for them */
    uint64_t index_bytes;
};
void seg_store_stats(struct seg_store *s, struct seg_stats *out);
/* Zeroes the eviction and expiry counts (`stats reset`). */
void seg_store_stats_reset(struct seg_store *s);

#endif
