/*
 * seg_int.h -- the segment store's insides, shared by its files: seg.c
 * (the pool, reservations, the index and the item API), seg_ext.c (values
 * out of line), seg_move.c (moving items between segments, for the
 * evictions that keep some) and seg_evict_*.c (the evictions, picked by
 * seg_config.evict: seg_evict.h).  Nothing outside those files includes
 * it.  seg.h has the design, the flows and the lock order; the small
 * helpers here are inline because the pool and item paths call them
 * under locks.
 *
 * The files call one way: the evictions call seg_move.c and seg.c, and
 * seg_move.c calls seg.c and seg_ext.c; seg.c and seg_ext.c reach the
 * eviction only through the table's pointer (evict_step()), so no file
 * calls back into one that calls it.
 */
#ifndef CELLAR_STORAGE_SEG_INT_H
#define CELLAR_STORAGE_SEG_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "storage/ht.h"
#include "storage/lock.h"
#include "storage/seg.h"
#include "storage/seg_evict.h"
#include "storage/seg_index.h"

#define TTL_BUCKETS 1024
#define NONE UINT32_MAX
#define NEVER UINT32_MAX            /* max_exptime of a segment holding an item that never expires */
#define OFF_BITS 20
#define SEG_SIZE_MAX ((uint32_t)1 << OFF_BITS)
#define SEG_IDS_MAX ((uint32_t)1 << (SEG_LOC_BITS - OFF_BITS))

enum seg_state { ST_FREE, ST_OPEN, ST_SEALED, ST_CLEARING, ST_DRAINING, ST_LENT };
enum seg_queue { Q_SMALL, Q_MAIN };  /* s3fifo's two FIFOs; fifo and merge use Q_SMALL alone */

#define CLEAR_SPIN 4096            /* try-locks of a stripe by a caller holding another */
#define RESERVE_TRIES 64           /* victims cleared for one reservation at most */

struct seg_meta {
    uint32_t next, prev;            /* the sealed FIFO (pool lock); next: the free list */
    _Atomic uint32_t write_off;     /* bytes reserved: its bucket's lock while open */
    _Atomic uint32_t writers;       /* reservations not yet written and linked */
    _Atomic uint32_t pins;          /* references held by readers */
    _Atomic int64_t live_bytes;     /* bytes of items the index points at */
    _Atomic int64_t live_items;
    _Atomic uint32_t max_exptime;   /* the latest exptime of its items; NEVER */
    uint64_t cas_base;
    uint32_t created;               /* clock when opened */
    uint16_t bucket;
    uint8_t queue;                  /* enum seg_queue: the FIFO it is sealed into */
    _Atomic uint8_t state;          /* enum seg_state (pool lock, or bucket lock for open) */
};

/*
 * A value too large for a segment: the item's stored value is this
 * block's address.  refs: 1 while an item links it, plus each reader
 * holding it; the last one frees it and gives its bytes back to -m.
 */
struct seg_ext {
    _Atomic uint32_t refs;
    uint32_t len;
    struct seg_ext *prev, *next;    /* every block (ext_lock) */
    char data[];
};

struct ttl_bucket {
    struct mtx lock;                /* (inline: every set takes it) */
    uint32_t tail;                  /* the open segment, NONE */
};

struct seg_store {
    struct seg_config cfg;
    uint64_t id;                    /* unique in the process (read-ahead hints) */
    char *arena;
    uint32_t nseg;
    struct seg_meta *segs;
    struct lock_stripes *locks;
    bool own_locks;
    struct seg_index *ix;
    struct ttl_bucket buckets[TTL_BUCKETS];
    pthread_mutex_t pool;           /* free list, FIFO, states of sealed segments */
    uint32_t free_head, nfree;
    struct {
        uint32_t head, tail, n;
    } q[2];                         /* sealed FIFOs by enum seg_queue */
    uint32_t draining;              /* segments unlinked but still pinned */
    uint32_t spare;                 /* merge: the next merge's output segment; NONE */
    uint32_t out[2];                /* s3fifo: the main queue's output segments (NONE:
                                       none, or taken by an eviction under way) */
    uint32_t small_target;          /* s3fifo: segments the small queue keeps */
    pthread_mutex_t ghost_lock;
    struct ghost *ghost;            /* s3fifo: keys the small queue evicted */
    _Atomic uint64_t ghost_n;       /* its entries (read without the lock) */
    _Atomic uint64_t own_cas, *cas;     /* the last cas handed out (the engine's, or own_cas) */
    _Atomic uint32_t now;
    _Atomic uint32_t seal_point;        /* open segments created at or before it take no
                                           item once the clock has passed it (flush_all) */
    _Atomic uint64_t evicted_segments, evicted_items, expired_segments;
    _Atomic uint64_t expired_items, expired_unfetched, evicted_unfetched;
    _Atomic uint64_t merges, promoted, reinserted, ghost_hits;
    uint64_t ext_bytes;             /* out-of-line values' bytes (pool lock) */
    uint32_t lent, lent_head;       /* segments out of use to pay for them (pool lock) */
    pthread_mutex_t ext_lock;
    struct seg_ext *ext_list;
    uint64_t ext_items;             /* (ext_lock) */
    uint64_t emptied;               /* segments freed by their last item's death (pool lock) */
};

static inline char *seg_base(struct seg_store *s, uint32_t id) {
    return s->arena + (size_t)id * s->cfg.seg_size;
}

static inline uint64_t loc_of(uint32_t id, uint32_t off) {
    return ((uint64_t)id << OFF_BITS) | off;
}

/* An index match on an item's location. */
static inline bool match_loc(void *arg, uint64_t loc) { return loc == *(const uint64_t *)arg; }


/* ---- the pool's lists (pool lock held) ---- */

static inline void fifo_unlink_locked(struct seg_store *s, uint32_t id) {
    struct seg_meta *m = &s->segs[id];
    if (m->prev != NONE)
        s->segs[m->prev].next = m->next;
    else
        s->q[m->queue].head = m->next;
    if (m->next != NONE)
        s->segs[m->next].prev = m->prev;
    else
        s->q[m->queue].tail = m->prev;
    s->q[m->queue].n--;
}

/* Puts sealed segment id first in its FIFO (a clear that could not finish).  Pool lock held. */
static inline void fifo_push_head_locked(struct seg_store *s, uint32_t id) {
    struct seg_meta *m = &s->segs[id];
    atomic_store(&m->state, ST_SEALED);
    m->prev = NONE;
    m->next = s->q[m->queue].head;
    if (m->next != NONE)
        s->segs[m->next].prev = id;
    else
        s->q[m->queue].tail = id;
    s->q[m->queue].head = id;
    s->q[m->queue].n++;
}

static inline void free_locked(struct seg_store *s, uint32_t id) {
    struct seg_meta *m = &s->segs[id];
    atomic_store(&m->state, ST_FREE);
    m->next = s->free_head;
    s->free_head = id;
    s->nfree++;
}

/* Takes sealed segment id out of the FIFO for clear().  Pool lock held. */
static inline void detach_locked(struct seg_store *s, uint32_t id) {
    fifo_unlink_locked(s, id);
    atomic_store(&s->segs[id].state, ST_CLEARING);
}

/* Locks stripe x for a walk; a caller holding another stripe only tries (false: busy). */
static inline bool stripe_take(struct mtx *x, struct mtx *held) {
    if (x == held)
        return true;
    if (held == NULL) {
        mtx_lock(x);
        return true;
    }
    for (int i = 0; i < CLEAR_SPIN; i++) {
        if (mtx_trylock(x))
            return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    return false;
}

static inline void stripe_give(struct mtx *x, struct mtx *held) {
    if (x != held)
        mtx_unlock(x);
}

/* Frees draining segments nobody holds any more.  Pool lock held. */
static inline void reap_locked(struct seg_store *s) {
    uint32_t *p = &s->draining;
    while (*p != NONE) {
        uint32_t id = *p;
        if (atomic_load(&s->segs[id].pins) == 0) {
            *p = s->segs[id].next;
            free_locked(s, id);
        } else {
            p = &s->segs[id].next;
        }
    }
}

/* The first segment of FIFO q (in sealing order) nobody reads or writes, detached; NONE.
   Pool lock held. */
static inline uint32_t victim_in_locked(struct seg_store *s, enum seg_queue q) {
    for (uint32_t id = s->q[q].head; id != NONE; id = s->segs[id].next) {
        struct seg_meta *m = &s->segs[id];
        if (atomic_load(&m->pins) == 0 && atomic_load(&m->writers) == 0) {
            detach_locked(s, id);
            return id;
        }
    }
    return NONE;
}

static inline uint32_t victim_locked(struct seg_store *s) {
    uint32_t v = victim_in_locked(s, Q_SMALL);
    return v != NONE ? v : victim_in_locked(s, Q_MAIN);
}

/* Puts sealed segment id last in its FIFO (sealed, or an eviction's output).  Pool lock held. */
static inline void fifo_push_tail_locked(struct seg_store *s, uint32_t id) {
    struct seg_meta *m = &s->segs[id];
    atomic_store(&m->state, ST_SEALED);
    m->next = NONE;
    m->prev = s->q[m->queue].tail;
    if (m->prev != NONE)
        s->segs[m->prev].next = id;
    else
        s->q[m->queue].head = id;
    s->q[m->queue].tail = id;
    s->q[m->queue].n++;
}

/* Whether open segment t may take no more items: a flush_all point passed since it opened. */
static inline bool closed_by_flush(struct seg_store *s, uint32_t t) {
    uint32_t sp = atomic_load_explicit(&s->seal_point, memory_order_relaxed);
    return sp != 0 && s->segs[t].created <= sp && atomic_load(&s->now) > sp;
}

static inline void raise_max_exptime(struct seg_meta *m, uint32_t exptime) {
    uint32_t want = exptime == 0 ? NEVER : exptime;
    uint32_t cur = atomic_load(&m->max_exptime);
    while (cur < want && !atomic_compare_exchange_weak(&m->max_exptime, &cur, want))
        ;
}

/* ---- items as they lie in a segment ---- */

/* Out-of-line values (seg_ext.c): the block a stored value names. */
static inline size_t ext_size(uint32_t len) { return sizeof(struct seg_ext) + len; }

/* The block whose address a stored value holds, and the one a found item's value lies in. */
static inline struct seg_ext *ext_stored(const char *value) {
    struct seg_ext *x;
    memcpy(&x, value, sizeof(x));
    return x;
}

static inline struct seg_ext *ext_at(const struct seg_at *at) {
    return (struct seg_ext *)(at->value - offsetof(struct seg_ext, data));
}

/*
 * The item at off in a segment being walked: its header's length, its key
 * and value lengths as stored, and its key's hash.
 */
static inline size_t walk_item(struct seg_store *s, uint32_t id, uint32_t off, uint8_t *klen,
                        uint32_t *vlen, uint64_t *hv) {
    size_t n = seg_hdr_span((const uint8_t *)seg_base(s, id) + off, s->cfg.seg_size - off,
                            klen, vlen);
    if (n == 0)
        abort();                    /* every reserved byte holds an item: a bug */
    *hv = ht_hash(seg_base(s, id) + off + n, *klen);
    return n;
}

static inline uint8_t *item_at(struct seg_store *s, uint64_t loc) {
    return (uint8_t *)seg_base(s, (uint32_t)(loc >> OFF_BITS)) + (loc & (SEG_SIZE_MAX - 1));
}

/* The value of a found item, at the stored bytes v: in line, or the block they name. */
static inline void at_value(struct seg_at *at, char *v) {
    if (at->h.hflags & SEG_F_EXT) {
        struct seg_ext *x = ext_stored(v);
        at->value = x->data;
        at->nbytes = x->len;
    } else {
        at->value = v;
        at->nbytes = at->h.vlen;
    }
}

static inline void at_fill(struct seg_store *s, uint64_t loc, struct seg_at *at) {
    uint32_t id = (uint32_t)(loc >> OFF_BITS);
    char *it = seg_base(s, id) + (loc & (SEG_SIZE_MAX - 1));
    size_t n = seg_hdr_decode((const uint8_t *)it, s->cfg.seg_size - (loc & (SEG_SIZE_MAX - 1)),
                              s->segs[id].cas_base, &at->h);
    at->loc = loc;
    at->seg = id;
    at->created = s->segs[id].created;
    at->slot = NULL;
    at->key = it + n;
    at_value(at, it + n + at->h.klen);
}

/*
 * Where an eviction puts the items it keeps: out[0] while it has room,
 * then out[1] (NONE: no such segment); an output that fills up is sealed
 * into FIFO q and the next one used.  At most budget bytes are kept.
 */
struct mover {
    uint32_t out[2];
    enum seg_queue q;
    uint32_t budget;
    bool small;                     /* s3fifo's small queue: GHOST keeps too, drops are ghosted */
    uint64_t kept, evicted, unfetched, expired;
};

/*
 * One eviction by the store's policy (seg_evict.h: FIFO, merge or
 * S3-FIFO), for a caller that found no free segment.  Pool lock held on
 * entry, released on return.  false: nothing could be evicted (every
 * segment read or written).  held: the stripe the caller holds (see
 * seg_clear()).
 */
static inline bool evict_step(struct seg_store *s, struct mtx *held) {
    return s->cfg.evict->evict(s, held);
}

/* seg.c */
bool seg_clear(struct seg_store *s, uint32_t id, bool expired, struct mtx *held);
unsigned seg_seal_idle_locked(struct seg_store *s, bool all, uint32_t now);

/* seg_ext.c: a new block holding value, charged (NULL: memory short); a reference dropped */
struct seg_ext *seg_ext_new(struct seg_store *s, const void *value, uint32_t len,
                            struct mtx *held);
void seg_ext_put(struct seg_store *s, struct seg_ext *x);

/* seg_move.c */
bool seg_relocate(struct seg_store *s, uint32_t id, struct mover *mv, struct mtx *held);
void seg_mover_count(struct seg_store *s, const struct mover *mv);
void seg_emptied_locked(struct seg_store *s, uint32_t id);

#endif
