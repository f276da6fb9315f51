/*
 * seg.c -- the segment store (seg.h has the design, the flows and the
 * lock order).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "storage/ghost.h"
#include "storage/ht.h"
#include "storage/lock.h"
#include "storage/seg.h"
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

static _Atomic uint64_t store_ids;  /* ids handed out */

/*
 * The last read-ahead's slots, per thread: the lookups that follow, in
 * the same order and on the same thread, try them before searching
 * (seg_index_check_locked).  A stale one only costs the search.  Keys it
 * saw absent (bit i of absent) keep their stripe's sequence for
 * seg_store_absent().
 */
static _Thread_local struct {
    uint64_t store;                 /* the store's id: 0 none */
    unsigned n, i;
    uint64_t absent;
    uint64_t hv[SEG_INDEX_PREFETCH_MAX];
    uint64_t *slot[SEG_INDEX_PREFETCH_MAX];
    uint64_t seq[SEG_INDEX_PREFETCH_MAX];
} hints;

void seg_config_defaults(struct seg_config *cfg) {
    *cfg = (struct seg_config){.mem_limit = (size_t)64 << 20, .seg_size = SEG_SIZE_MAX,
                               .lock_power = 12, .index_power = 12};
}

static inline char *seg_base(struct seg_store *s, uint32_t id) {
    return s->arena + (size_t)id * s->cfg.seg_size;
}

static inline uint64_t loc_of(uint32_t id, uint32_t off) {
    return ((uint64_t)id << OFF_BITS) | off;
}

/* Decodes the header of the item at loc (its bytes were written whole). */
static size_t hdr_at(struct seg_store *s, uint64_t loc, struct seg_hdr *h) {
    uint32_t id = (uint32_t)(loc >> OFF_BITS), off = (uint32_t)(loc & (SEG_SIZE_MAX - 1));
    return seg_hdr_decode((const uint8_t *)seg_base(s, id) + off, s->cfg.seg_size - off,
                          s->segs[id].cas_base, h);
}

static uint64_t rehash(void *arg, uint64_t loc) {
    struct seg_store *s = arg;
    struct seg_hdr h;
    size_t n = hdr_at(s, loc, &h);
    const char *it = seg_base(s, (uint32_t)(loc >> OFF_BITS)) + (loc & (SEG_SIZE_MAX - 1));
    return ht_hash(it + n, h.klen);
}

struct key_match {
    struct seg_store *s;
    const char *key;
    size_t nkey;
};

/* (only the header's span is read: the key is all a match needs) */
static bool match_key(void *arg, uint64_t loc) {
    struct key_match *m = arg;
    uint32_t off = (uint32_t)(loc & (SEG_SIZE_MAX - 1));
    const char *it = seg_base(m->s, (uint32_t)(loc >> OFF_BITS)) + off;
    uint8_t klen;
    uint32_t vlen;
    size_t n = seg_hdr_span((const uint8_t *)it, m->s->cfg.seg_size - off, &klen, &vlen);
    return n != 0 && klen == m->nkey && memcmp(it + n, m->key, m->nkey) == 0;
}

static bool match_loc(void *arg, uint64_t loc) { return loc == *(const uint64_t *)arg; }

struct seg_store *seg_store_create(const struct seg_config *cfg, char *err, size_t errlen) {
    if (cfg->seg_size < 4096 || cfg->seg_size > SEG_SIZE_MAX ||
        cfg->mem_limit / cfg->seg_size < 2 || cfg->mem_limit / cfg->seg_size >= SEG_IDS_MAX) {
        snprintf(err, errlen, "segments of %u bytes (4 KiB to 1 MiB), at least two in %zu bytes",
                 cfg->seg_size, cfg->mem_limit);
        return NULL;
    }
    struct seg_store *s = calloc(1, sizeof(*s));
    if (s == NULL)
        goto nomem;
    s->cfg = *cfg;
    s->id = atomic_fetch_add(&store_ids, 1) + 1;
    s->nseg = (uint32_t)(cfg->mem_limit / cfg->seg_size);
    s->segs = calloc(s->nseg, sizeof(*s->segs));
    void *a = mmap(NULL, (size_t)s->nseg * cfg->seg_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    s->arena = a == MAP_FAILED ? NULL : a;
    s->own_locks = cfg->locks == NULL;
    s->locks = s->own_locks ? lock_create(cfg->lock_power, true) : cfg->locks;
    s->cas = cfg->cas != NULL ? cfg->cas : &s->own_cas;
    if (s->segs == NULL || s->arena == NULL || s->locks == NULL)
        goto nomem;
    s->ix = seg_index_create(cfg->index_power, s->locks, rehash, s);
    if (s->ix == NULL)
        goto nomem;
    pthread_mutex_init(&s->pool, NULL);
    for (int b = 0; b < TTL_BUCKETS; b++) {
        mtx_init(&s->buckets[b].lock, true);
        s->buckets[b].tail = NONE;
    }
    s->free_head = NONE;
    for (uint32_t i = s->nseg; i-- > 0;) {
        s->segs[i].next = s->free_head;
        s->free_head = i;
    }
    s->nfree = s->nseg;
    s->q[Q_SMALL].head = s->q[Q_SMALL].tail = s->q[Q_MAIN].head = s->q[Q_MAIN].tail = NONE;
    s->draining = s->spare = s->out[0] = s->out[1] = s->lent_head = NONE;
    pthread_mutex_init(&s->ghost_lock, NULL);
    pthread_mutex_init(&s->ext_lock, NULL);
    /* one segment set aside for merges; a store too small to merge evicts by FIFO */
    if (cfg->merge && s->nseg >= SEG_MERGE_N + 2) {
        s->spare = s->free_head;
        s->free_head = s->segs[s->spare].next;
        s->nfree--;
    }
    /* two outputs for s3fifo (what one eviction keeps may spill into the second);
       a store too small for the queues evicts by FIFO */
    if (cfg->s3fifo && !cfg->merge && s->nseg >= SEG_S3FIFO_MIN) {
        if ((s->ghost = ghost_create()) == NULL)
            goto nomem;
        s->small_target = s->nseg / 10 > 0 ? s->nseg / 10 : 1;
        for (int i = 0; i < 2; i++) {
            uint32_t id = s->out[i] = s->free_head;
            s->free_head = s->segs[id].next;
            s->nfree--;
            s->segs[id].queue = Q_MAIN;
            atomic_store(&s->segs[id].state, ST_OPEN);
        }
    }
    return s;
nomem:
    snprintf(err, errlen, "out of memory");
    seg_store_destroy(&s);
    return NULL;
}

void seg_store_destroy(struct seg_store **sp) {
    struct seg_store *s = *sp;
    if (s == NULL)
        return;
    if (s->ix != NULL) {
        seg_index_destroy(&s->ix);
        ghost_destroy(&s->ghost);
        pthread_mutex_destroy(&s->ghost_lock);
        while (s->ext_list != NULL) {
            struct seg_ext *x = s->ext_list;
            s->ext_list = x->next;
            free(x);
        }
        pthread_mutex_destroy(&s->ext_lock);
        pthread_mutex_destroy(&s->pool);
        for (int b = 0; b < TTL_BUCKETS; b++)
            mtx_destroy(&s->buckets[b].lock);
    }
    if (s->own_locks)
        lock_destroy(&s->locks);
    if (s->arena != NULL)
        munmap(s->arena, (size_t)s->nseg * s->cfg.seg_size);
    free(s->segs);
    free(s);
    *sp = NULL;
}

void seg_store_clock_set(struct seg_store *s, uint32_t now) { atomic_store(&s->now, now); }

/* Segcache's TTL buckets: 8 s wide up to 2047 s, then 128, 2048 and 32768 s wide. */
static unsigned ttl_bucket_of(struct seg_store *s, uint32_t exptime) {
    if (exptime == 0)
        return TTL_BUCKETS - 1;
    uint32_t now = atomic_load(&s->now);
    uint32_t ttl = exptime > now ? exptime - now : 1;
    if (ttl < 2048)
        return ttl >> 3;
    if (ttl < 32768)
        return 256 + ((ttl - 2048) >> 7);
    if (ttl < 524288)
        return 512 + ((ttl - 32768) >> 11);
    unsigned b = 768 + ((ttl - 524288) >> 15);
    return b < TTL_BUCKETS - 1 ? b : TTL_BUCKETS - 2;
}

/* ---------------------------------------------------------------------- */
/* The pool: free list, sealed FIFO, eviction                              */
/* ---------------------------------------------------------------------- */

static void fifo_unlink_locked(struct seg_store *s, uint32_t id) {
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
static void fifo_push_head_locked(struct seg_store *s, uint32_t id) {
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

static void free_locked(struct seg_store *s, uint32_t id) {
    struct seg_meta *m = &s->segs[id];
    atomic_store(&m->state, ST_FREE);
    m->next = s->free_head;
    s->free_head = id;
    s->nfree++;
}

/* ---------------------------------------------------------------------- */
/* Values out of line                                                      */
/* ---------------------------------------------------------------------- */

static bool evict_step(struct seg_store *s, struct mtx *held);
static void reap_locked(struct seg_store *s);

static size_t ext_size(uint32_t len) { return sizeof(struct seg_ext) + len; }

/* The block whose address a stored value holds, and the one a found item's value lies in. */
static struct seg_ext *ext_stored(const char *value) {
    struct seg_ext *x;
    memcpy(&x, value, sizeof(x));
    return x;
}

static struct seg_ext *ext_at(const struct seg_at *at) {
    return (struct seg_ext *)(at->value - offsetof(struct seg_ext, data));
}

/* Gives lent segments back while the others pay for what is left.  Pool lock held. */
static void ext_trim_locked(struct seg_store *s) {
    while (s->lent > 0 && (uint64_t)(s->lent - 1) * s->cfg.seg_size >= s->ext_bytes) {
        uint32_t id = s->lent_head;
        s->lent_head = s->segs[id].next;
        s->lent--;
        free_locked(s, id);
    }
}

/*
 * Charges bytes of an out-of-line value to the memory limit: whole
 * segments leave the pool (evicting as a store would) until the lent ones
 * cover every such byte; their pages go back to the kernel meanwhile.
 * false: not enough could be had.
 */
static bool ext_charge(struct seg_store *s, size_t bytes, struct mtx *held) {
    size_t tries_max = RESERVE_TRIES + 2 * (bytes / s->cfg.seg_size + 1);
    for (size_t tries = 0;;) {
        pthread_mutex_lock(&s->pool);
        reap_locked(s);
        if ((uint64_t)s->lent * s->cfg.seg_size >= s->ext_bytes + bytes) {
            s->ext_bytes += bytes;
            pthread_mutex_unlock(&s->pool);
            return true;
        }
        if (s->free_head != NONE) {
            uint32_t id = s->free_head;
            s->free_head = s->segs[id].next;
            s->nfree--;
            atomic_store(&s->segs[id].state, ST_LENT);
            atomic_store(&s->segs[id].write_off, 0);
            s->segs[id].next = s->lent_head;
            s->lent_head = id;
            s->lent++;
            /* (under the lock: a segment given back is not written before this) */
            madvise(seg_base(s, id), s->cfg.seg_size, MADV_DONTNEED);
            pthread_mutex_unlock(&s->pool);
            continue;
        }
        if (!evict_step(s, held) || ++tries > tries_max) {
            pthread_mutex_lock(&s->pool);
            ext_trim_locked(s);
            pthread_mutex_unlock(&s->pool);
            return false;
        }
    }
}

/* A new block holding value, charged; NULL when memory is short. */
static struct seg_ext *ext_new(struct seg_store *s, const void *value, uint32_t len,
                               struct mtx *held) {
    if (!ext_charge(s, ext_size(len), held))
        return NULL;
    struct seg_ext *x = malloc(ext_size(len));
    if (x == NULL) {
        pthread_mutex_lock(&s->pool);
        s->ext_bytes -= ext_size(len);
        ext_trim_locked(s);
        pthread_mutex_unlock(&s->pool);
        return NULL;
    }
    atomic_init(&x->refs, 1);
    x->len = len;
    memcpy(x->data, value, len);
    pthread_mutex_lock(&s->ext_lock);
    x->prev = NULL;
    x->next = s->ext_list;
    if (x->next != NULL)
        x->next->prev = x;
    s->ext_list = x;
    s->ext_items++;
    pthread_mutex_unlock(&s->ext_lock);
    return x;
}

/* Drops a reference to block x: the last one frees it and its charge. */
static void ext_put(struct seg_store *s, struct seg_ext *x) {
    if (atomic_fetch_sub(&x->refs, 1) != 1)
        return;
    pthread_mutex_lock(&s->ext_lock);
    if (x->prev != NULL)
        x->prev->next = x->next;
    else
        s->ext_list = x->next;
    if (x->next != NULL)
        x->next->prev = x->prev;
    s->ext_items--;
    pthread_mutex_unlock(&s->ext_lock);
    size_t bytes = ext_size(x->len);
    free(x);
    pthread_mutex_lock(&s->pool);
    s->ext_bytes -= bytes;
    ext_trim_locked(s);
    pthread_mutex_unlock(&s->pool);
}

struct seg_ext *seg_ext_hold(const struct seg_at *at) {
    if (!(at->h.hflags & SEG_F_EXT))
        return NULL;
    struct seg_ext *x = ext_at(at);
    atomic_fetch_add(&x->refs, 1);
    return x;
}

void seg_ext_release(struct seg_store *s, struct seg_ext *x) {
    if (x != NULL)
        ext_put(s, x);
}

/* Takes sealed segment id out of the FIFO for clear().  Pool lock held. */
static void detach_locked(struct seg_store *s, uint32_t id) {
    fifo_unlink_locked(s, id);
    atomic_store(&s->segs[id].state, ST_CLEARING);
}

/* Locks stripe x for a walk; a caller holding another stripe only tries (false: busy). */
static bool stripe_take(struct mtx *x, struct mtx *held) {
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

static void stripe_give(struct mtx *x, struct mtx *held) {
    if (x != held)
        mtx_unlock(x);
}

/*
 * Unlinks every item of detached segment id that the index still points
 * at, each under its stripe, holding no pool lock (lock order: stripe,
 * then pool), then frees the segment, or leaves it draining while readers
 * pin it.  held is the stripe the caller holds, if any: that one is not
 * taken again, and the others only tried, so two callers each holding a
 * stripe the other needs cannot wait on each other.  For expiry, an item
 * found unexpired (a touch raced the decision) stays.  When something
 * stays, or a stripe could not be had, the segment goes back to the
 * FIFO's head: false.
 */
static void at_fill(struct seg_store *s, uint64_t loc, struct seg_at *at);
static void raise_max_exptime(struct seg_meta *m, uint32_t exptime);

/*
 * The item at off in a segment being walked: its header's length, its key
 * and value lengths as stored, and its key's hash.
 */
static size_t walk_item(struct seg_store *s, uint32_t id, uint32_t off, uint8_t *klen,
                        uint32_t *vlen, uint64_t *hv) {
    size_t n = seg_hdr_span((const uint8_t *)seg_base(s, id) + off, s->cfg.seg_size - off,
                            klen, vlen);
    if (n == 0)
        abort();                    /* every reserved byte holds an item: a bug */
    *hv = ht_hash(seg_base(s, id) + off + n, *klen);
    return n;
}

static bool clear(struct seg_store *s, uint32_t id, bool expired, struct mtx *held) {
    struct seg_meta *m = &s->segs[id];
    uint32_t now = atomic_load(&s->now);
    bool kept = false;
    uint64_t items = 0, unfetched = 0;
    for (uint32_t off = 0; off < m->write_off;) {
        uint8_t klen;
        uint32_t vlen;
        uint64_t loc = loc_of(id, off), hv;
        size_t n = walk_item(s, id, off, &klen, &vlen, &hv);
        struct mtx *x = lock_of(s->locks, hv);
        if (!stripe_take(x, held)) {
            kept = true;
            break;
        }
        uint64_t *slot = seg_index_find_locked(s->ix, hv, match_loc, &loc);
        struct seg_hdr h = {0};
        if (slot != NULL && hdr_at(s, loc, &h) && expired &&
            (h.exptime == 0 || h.exptime > now)) {
            kept = true;            /* touched since the segment's latest exptime was read */
        } else if (slot != NULL) {
            if (!expired && s->cfg.evicted != NULL && !(h.hflags & SEG_F_HOLD)) {
                struct seg_at at;
                at_fill(s, loc, &at);
                s->cfg.evicted(s->cfg.hook_arg, &at);
            }
            seg_index_remove_locked(s->ix, slot);
            if (h.hflags & SEG_F_EXT)
                ext_put(s, ext_stored(seg_base(s, id) + off + n + klen));
            atomic_fetch_sub(&m->live_items, 1);
            atomic_fetch_sub(&m->live_bytes, (int64_t)(n + klen + vlen));
            /* a delete hold-off's tombstone leaving is the end of a delete: uncounted */
            items += !(h.hflags & SEG_F_HOLD);
            unfetched += !(h.hflags & SEG_F_FETCHED) && !(h.hflags & SEG_F_HOLD);
        }
        stripe_give(x, held);
        off += (uint32_t)(n + klen + vlen);
    }
    pthread_mutex_lock(&s->pool);
    if (kept) {
        fifo_push_head_locked(s, id);
    } else {
        atomic_store(&m->state, ST_DRAINING);
        if (atomic_load(&m->pins) == 0) {
            free_locked(s, id);
        } else {
            m->next = s->draining;  /* freed once released (reap_locked) */
            s->draining = id;
        }
    }
    pthread_mutex_unlock(&s->pool);
    atomic_fetch_add(expired ? &s->expired_items : &s->evicted_items, items);
    atomic_fetch_add(expired ? &s->expired_unfetched : &s->evicted_unfetched, unfetched);
    if (!kept)
        atomic_fetch_add(expired ? &s->expired_segments : &s->evicted_segments, 1);
    return !kept;
}

/* Frees draining segments nobody holds any more.  Pool lock held. */
static void reap_locked(struct seg_store *s) {
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
static uint32_t victim_in_locked(struct seg_store *s, enum seg_queue q) {
    for (uint32_t id = s->q[q].head; id != NONE; id = s->segs[id].next) {
        struct seg_meta *m = &s->segs[id];
        if (atomic_load(&m->pins) == 0 && atomic_load(&m->writers) == 0) {
            detach_locked(s, id);
            return id;
        }
    }
    return NONE;
}

static uint32_t victim_locked(struct seg_store *s) {
    uint32_t v = victim_in_locked(s, Q_SMALL);
    return v != NONE ? v : victim_in_locked(s, Q_MAIN);
}

/* Puts sealed segment id last in its FIFO (sealed, or an eviction's output).  Pool lock held. */
static void fifo_push_tail_locked(struct seg_store *s, uint32_t id) {
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

/* Seals bucket tb's open segment: to the FIFO's end.  Pool and tb's lock held. */
static void seal_locked(struct seg_store *s, struct ttl_bucket *tb) {
    if (tb->tail == NONE)
        return;
    fifo_push_tail_locked(s, tb->tail);
    tb->tail = NONE;
}

/*
 * Seals the open segments nobody is writing: every one when all is true,
 * else those whose items have all expired by now.  Open segments are never
 * evicted, so with every segment some bucket's tail the store would refuse
 * all stores for good.  Returns how many.  Pool lock held.
 */
static unsigned seal_idle_locked(struct seg_store *s, bool all, uint32_t now) {
    unsigned n = 0;
    for (int b = 0; b < TTL_BUCKETS; b++) {
        struct ttl_bucket *tb = &s->buckets[b];
        mtx_lock(&tb->lock);
        uint32_t t = tb->tail;
        if (t != NONE && atomic_load(&s->segs[t].writers) == 0) {
            uint32_t mx = atomic_load(&s->segs[t].max_exptime);
            if (all || (mx != NEVER && mx != 0 && mx <= now)) {
                seal_locked(s, tb);
                n++;
            }
        }
        mtx_unlock(&tb->lock);
    }
    return n;
}

/*
 * Up to SEG_MERGE_N sealed segments nobody reads or writes, oldest first,
 * detached for a merge; fewer than two: none (the caller evicts instead).
 * Pool lock held.
 */
static unsigned merge_pick_locked(struct seg_store *s, uint32_t *ids) {
    unsigned n = 0;
    for (uint32_t id = s->q[Q_SMALL].head; id != NONE && n < SEG_MERGE_N;
         id = s->segs[id].next) {
        struct seg_meta *m = &s->segs[id];
        if (atomic_load(&m->pins) == 0 && atomic_load(&m->writers) == 0)
            ids[n++] = id;
    }
    if (n < 2)
        return 0;
    for (unsigned i = 0; i < n; i++)
        detach_locked(s, ids[i]);
    return n;
}

static bool dead_at(struct seg_store *s, const struct seg_at *at, uint32_t now) {
    if (s->cfg.dead != NULL)
        return s->cfg.dead(s->cfg.hook_arg, at);
    return at->h.exptime != 0 && at->h.exptime <= now;
}

/* Whether open segment t may take no more items: a flush_all point passed since it opened. */
static bool closed_by_flush(struct seg_store *s, uint32_t t) {
    uint32_t sp = atomic_load_explicit(&s->seal_point, memory_order_relaxed);
    return sp != 0 && s->segs[t].created <= sp && atomic_load(&s->now) > sp;
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

/* Starts segment t as an output for items coming from segment from.  Nobody else writes it. */
static void out_start(struct seg_store *s, uint32_t t, uint32_t from, enum seg_queue q) {
    struct seg_meta *tm = &s->segs[t];
    atomic_store(&tm->write_off, 0);
    tm->cas_base = s->segs[from].cas_base;
    tm->created = s->segs[from].created;
    tm->bucket = s->segs[from].bucket;
    tm->queue = (uint8_t)q;
    atomic_store(&tm->max_exptime, 0);
    atomic_store(&tm->live_items, 0);
    atomic_store(&tm->live_bytes, 0);
    atomic_store(&tm->state, ST_OPEN);
}

/*
 * Room in the current output for item h from segment from: its length
 * there, or 0 when no output is left.  An output that cannot take it
 * (full, or closed by a flush_all while items from before it lie there)
 * is sealed into its FIFO and the next one started.  An output takes the
 * latest creation time of its sources: every item kept was live, so none
 * goes to the wrong side of a flush.
 */
static size_t out_room(struct seg_store *s, struct mover *mv, uint32_t from,
                       const struct seg_hdr *h) {
    for (;;) {
        uint32_t t = mv->out[0];
        if (t == NONE)
            return 0;
        struct seg_meta *tm = &s->segs[t];
        uint32_t off = atomic_load(&tm->write_off);
        if (off == 0)
            out_start(s, t, from, mv->q);
        size_t len = seg_item_len(h, tm->cas_base);
        if (off == 0 || (!closed_by_flush(s, t) && off + len <= s->cfg.seg_size)) {
            if (len > s->cfg.seg_size)
                return 0;
            if (s->segs[from].created > tm->created)
                tm->created = s->segs[from].created;
            return len;
        }
        pthread_mutex_lock(&s->pool);
        fifo_push_tail_locked(s, t);
        pthread_mutex_unlock(&s->pool);
        mv->out[0] = mv->out[1];
        mv->out[1] = NONE;
    }
}

/*
 * Moves or drops the items of detached segment id, oldest first, each
 * under its stripe (held: as clear()): an item is kept -- copied to the
 * mover's output with FETCHED and GHOST cleared (a second chance, as
 * CLOCK gives) -- if it was read since written or last moved (FETCHED),
 * stored while its key was a ghost (GHOST, small queue only) or is a
 * delete hold-off's tombstone, and there is room and budget; dead items
 * are dropped, the others evicted.  false when a stripe stayed busy: the
 * segment is left as it is from there.
 */
static bool relocate(struct seg_store *s, uint32_t id, struct mover *mv, struct mtx *held) {
    struct seg_meta *m = &s->segs[id];
    uint32_t now = atomic_load(&s->now);
    for (uint32_t off = 0; off < m->write_off;) {
        uint8_t klen;
        uint32_t vlen;
        uint64_t loc = loc_of(id, off), hv;
        size_t hl = walk_item(s, id, off, &klen, &vlen, &hv);
        struct mtx *x = lock_of(s->locks, hv);
        if (!stripe_take(x, held))
            return false;
        uint64_t *slot = seg_index_find_locked(s->ix, hv, match_loc, &loc);
        if (slot != NULL) {
            struct seg_at at;
            at_fill(s, loc, &at);
            bool dead = dead_at(s, &at, now), hold = (at.h.hflags & SEG_F_HOLD) != 0;
            bool read = (at.h.hflags & SEG_F_FETCHED) ||
                        (mv->small && (at.h.hflags & SEG_F_GHOST));
            struct seg_hdr h = at.h;
            h.hflags &= (uint16_t)~(SEG_F_FETCHED | SEG_F_GHOST | SEG_F_LAYOUT);
            size_t len = !dead && (hold || read) ? out_room(s, mv, id, &h) : 0;
            if (len != 0 && len <= mv->budget) {
                uint32_t t = mv->out[0];
                struct seg_meta *tm = &s->segs[t];
                uint8_t *p = (uint8_t *)seg_base(s, t) + tm->write_off;
                size_t w = seg_hdr_encode(p, &h, tm->cas_base);
                memcpy(p + w, at.key, (size_t)klen + vlen);    /* (as stored: a block's
                                                                   address moves with it) */
                seg_index_move_locked(slot, loc_of(t, tm->write_off));
                atomic_fetch_add(&tm->write_off, (uint32_t)len);
                atomic_fetch_add(&tm->live_items, 1);
                atomic_fetch_add(&tm->live_bytes, (int64_t)len);
                raise_max_exptime(tm, h.exptime);
                mv->budget -= (uint32_t)len;
                mv->kept += !hold;
            } else {
                if (!dead && !hold && s->cfg.evicted != NULL)
                    s->cfg.evicted(s->cfg.hook_arg, &at);
                seg_index_remove_locked(s->ix, slot);
                if (at.h.hflags & SEG_F_EXT)
                    ext_put(s, ext_at(&at));
                if (!dead && !hold && mv->small) {
                    pthread_mutex_lock(&s->ghost_lock);
                    ghost_add(s->ghost, hv);
                    atomic_store(&s->ghost_n, ghost_count(s->ghost));
                    pthread_mutex_unlock(&s->ghost_lock);
                }
                mv->evicted += !dead && !hold;
                mv->expired += dead && !hold;
                mv->unfetched += !dead && !hold && !(at.h.hflags & SEG_F_FETCHED);
            }
            atomic_fetch_sub(&m->live_items, 1);
            atomic_fetch_sub(&m->live_bytes, (int64_t)(hl + klen + vlen));
        }
        stripe_give(x, held);
        off += (uint32_t)(hl + klen + vlen);
    }
    return true;
}

static void mover_count(struct seg_store *s, const struct mover *mv) {
    atomic_fetch_add(&s->evicted_items, mv->evicted);
    atomic_fetch_add(&s->evicted_unfetched, mv->unfetched);
    atomic_fetch_add(&s->expired_items, mv->expired);
}

/* A segment emptied by relocate(): free, or draining while pinned.  Pool lock held. */
static void emptied_locked(struct seg_store *s, uint32_t id) {
    atomic_store(&s->segs[id].state, ST_DRAINING);
    if (atomic_load(&s->segs[id].pins) != 0) {
        s->segs[id].next = s->draining;
        s->draining = id;
    } else {
        free_locked(s, id);
    }
}

/*
 * Segcache's merge: the items of detached segments ids[0..n) go, oldest
 * first, into segment t (relocate(): the ones read since they were
 * written or last merged, and tombstones, while it has room).  A stripe
 * that stays busy ends the merge there, and what was not reached goes
 * back to the FIFO's head.  Then t joins the FIFO's end, the emptied
 * segments come free, and one of them is the next merge's t.  No pool
 * lock is held while items move.
 */
static void merge(struct seg_store *s, const uint32_t *ids, unsigned n, uint32_t t,
                  struct mtx *held) {
    struct mover mv = {.out = {t, NONE}, .q = Q_SMALL, .budget = s->cfg.seg_size};
    atomic_store(&s->segs[t].write_off, 0);
    atomic_store(&s->segs[t].state, ST_CLEARING);   /* not to be walked half written */
    unsigned done = 0;
    while (done < n && relocate(s, ids[done], &mv, held))
        done++;
    pthread_mutex_lock(&s->pool);
    for (unsigned i = n; i-- > done;)
        fifo_push_head_locked(s, ids[i]);
    if (mv.out[0] == NONE) {
        /* t filled up and went to the FIFO (out_room) */
    } else if (atomic_load(&s->segs[t].write_off) > 0) {
        fifo_push_tail_locked(s, t);
    } else {
        s->spare = t;
        atomic_store(&s->segs[t].state, ST_FREE);
    }
    for (unsigned i = 0; i < done; i++) {
        if (s->spare == NONE && atomic_load(&s->segs[ids[i]].pins) == 0) {
            s->spare = ids[i];
            atomic_store(&s->segs[ids[i]].state, ST_FREE);
        } else {
            emptied_locked(s, ids[i]);
        }
    }
    pthread_mutex_unlock(&s->pool);
    mover_count(s, &mv);
    atomic_fetch_add(&s->evicted_segments, done);
    atomic_fetch_add(&s->merges, 1);
}

/*
 * S3-FIFO (Yang et al., SOSP'23) a segment at a time.  New items go to the
 * small queue (the TTL buckets' segments, sealed into Q_SMALL); while it
 * holds small_target segments or more its oldest is evicted: the items
 * read there (or stored while their key was a ghost) move to the main
 * queue's output, the others are evicted and their keys kept in the
 * ghost.  Otherwise the main queue's oldest goes: its items read since
 * they were last moved go back to its end, the others are evicted.  A
 * move keeps at most 7/8 of a segment from the small queue and 1/2 from
 * the main one, so each eviction frees memory whatever was read.  Pool
 * lock held on entry, released.
 */
static bool s3_evict(struct seg_store *s, struct mtx *held) {
    bool small = s->q[Q_SMALL].n >= s->small_target || s->q[Q_MAIN].n == 0;
    uint32_t v = victim_in_locked(s, small ? Q_SMALL : Q_MAIN);
    if (v == NONE) {
        small = !small;
        v = victim_in_locked(s, small ? Q_SMALL : Q_MAIN);
    }
    if (v == NONE) {
        pthread_mutex_unlock(&s->pool);
        return false;
    }
    struct mover mv = {.out = {s->out[0], s->out[1]}, .q = Q_MAIN, .small = small,
                       .budget = small ? s->cfg.seg_size / 8 * 7 : s->cfg.seg_size / 2};
    s->out[0] = s->out[1] = NONE;
    pthread_mutex_unlock(&s->pool);
    uint64_t seen = (uint64_t)atomic_load(&s->segs[v].live_items);
    bool done = relocate(s, v, &mv, held);
    pthread_mutex_lock(&s->pool);
    s->out[0] = mv.out[0];
    s->out[1] = mv.out[1];
    if (!done) {
        fifo_push_head_locked(s, v);
    } else if (s->out[1] == NONE && atomic_load(&s->segs[v].pins) == 0) {
        s->out[1] = v;              /* the next output; started on its first item */
        atomic_store(&s->segs[v].write_off, 0);
        atomic_store(&s->segs[v].state, ST_OPEN);
        if (s->out[0] == NONE) {
            s->out[0] = v;
            s->out[1] = NONE;
        }
    } else {
        emptied_locked(s, v);
    }
    pthread_mutex_unlock(&s->pool);
    if (small) {                    /* the ghost holds about as many keys as the main queue */
        pthread_mutex_lock(&s->ghost_lock);
        ghost_trim(s->ghost, (size_t)(seen + 1) * (s->q[Q_MAIN].n + 1));
        atomic_store(&s->ghost_n, ghost_count(s->ghost));
        pthread_mutex_unlock(&s->ghost_lock);
    }
    mover_count(s, &mv);
    atomic_fetch_add(small ? &s->promoted : &s->reinserted, mv.kept);
    if (done)
        atomic_fetch_add(&s->evicted_segments, 1);
    return true;
}

/*
 * One eviction by the store's policy (S3-FIFO, merge or FIFO), for a
 * caller that found no free segment.  Pool lock held on entry, released
 * on return.  false: nothing could be evicted (every segment read or
 * written).  held: the stripe the caller holds (see clear()).
 */
static bool evict_step(struct seg_store *s, struct mtx *held) {
    if (s->out[0] != NONE) {
        if (s3_evict(s, held))
            return true;
        pthread_mutex_lock(&s->pool);
    }
    if (s->spare != NONE) {
        uint32_t ids[SEG_MERGE_N];
        unsigned n = merge_pick_locked(s, ids);
        if (n != 0) {
            uint32_t t = s->spare;
            s->spare = NONE;
            pthread_mutex_unlock(&s->pool);
            merge(s, ids, n, t, held);
            return true;
        }
    }
    uint32_t v = victim_locked(s);
    if (v == NONE && seal_idle_locked(s, true, 0) != 0)
        v = victim_locked(s);
    pthread_mutex_unlock(&s->pool);
    if (v == NONE)
        return false;
    clear(s, v, false, held);
    return true;
}

/*
 * Reserves len bytes in the open segment of TTL bucket b, opening a new
 * one when the tail is full (the old tail is sealed), evicting when no
 * segment is free.  Holds the segment's writer count for the caller.
 * held: the stripe the caller holds (see clear()).  false when no segment
 * could be had.
 */
static bool reserve(struct seg_store *s, unsigned b, uint32_t len, struct mtx *held,
                    uint32_t *id, uint32_t *off) {
    struct ttl_bucket *tb = &s->buckets[b];
    for (int tries = 0;;) {
        mtx_lock(&tb->lock);
        uint32_t t = tb->tail;
        if (t != NONE && s->segs[t].write_off + len <= s->cfg.seg_size &&
            !closed_by_flush(s, t)) {
            *id = t;
            *off = s->segs[t].write_off;
            s->segs[t].write_off += len;
            atomic_fetch_add(&s->segs[t].writers, 1);
            mtx_unlock(&tb->lock);
            return true;
        }
        mtx_unlock(&tb->lock);
        /* tails change only under the pool lock: look again there, so that a thread
           that lost the race to open one evicts nothing */
        pthread_mutex_lock(&s->pool);
        mtx_lock(&tb->lock);
        bool moved = tb->tail != t;
        mtx_unlock(&tb->lock);
        if (moved) {
            pthread_mutex_unlock(&s->pool);
            continue;
        }
        reap_locked(s);
        if (s->free_head == NONE) {
            if (!evict_step(s, held) || ++tries > RESERVE_TRIES)
                return false;
            continue;
        }
        uint32_t n = s->free_head;
        s->free_head = s->segs[n].next;
        s->nfree--;
        mtx_lock(&tb->lock);
        struct seg_meta *m = &s->segs[n];
        m->write_off = 0;
        m->cas_base = atomic_load(s->cas);
        m->created = atomic_load(&s->now);
        m->bucket = (uint16_t)b;
        m->queue = Q_SMALL;
        atomic_store(&m->max_exptime, 0);
        atomic_store(&m->live_items, 0);
        atomic_store(&m->live_bytes, 0);
        atomic_store(&m->state, ST_OPEN);
        seal_locked(s, tb);
        tb->tail = n;
        mtx_unlock(&tb->lock);
        pthread_mutex_unlock(&s->pool);
    }
}

static void raise_max_exptime(struct seg_meta *m, uint32_t exptime) {
    uint32_t want = exptime == 0 ? NEVER : exptime;
    uint32_t cur = atomic_load(&m->max_exptime);
    while (cur < want && !atomic_compare_exchange_weak(&m->max_exptime, &cur, want))
        ;
}

/* ---------------------------------------------------------------------- */
/* Items, under the key's stripe (the engine's interface)                  */
/* ---------------------------------------------------------------------- */

static uint8_t *item_at(struct seg_store *s, uint64_t loc) {
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

static void at_fill(struct seg_store *s, uint64_t loc, struct seg_at *at) {
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

/* memcmp(a, b, n) == 0, inline for the common keys of 8 to 16 bytes */
static inline bool key_eq(const char *a, const char *b, size_t n) {
    if (n < 8 || n > 16)
        return memcmp(a, b, n) == 0;
    uint64_t a0, a1, b0, b1;        /* the first and last 8 bytes (they overlap under 16) */
    memcpy(&a0, a, 8);
    memcpy(&b0, b, 8);
    memcpy(&a1, a + n - 8, 8);
    memcpy(&b1, b + n - 8, 8);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

/* match_key() that decodes the whole header of the item it matches, once, into at */
struct key_find {
    struct seg_store *s;
    const char *key;
    size_t nkey;
    struct seg_at *at;
};

static bool match_key_at(void *arg, uint64_t loc) {
    struct key_find *f = arg;
    uint32_t id = (uint32_t)(loc >> OFF_BITS), off = (uint32_t)(loc & (SEG_SIZE_MAX - 1));
    char *it = seg_base(f->s, id) + off;
    size_t n = seg_hdr_decode((const uint8_t *)it, f->s->cfg.seg_size - off,
                              f->s->segs[id].cas_base, &f->at->h);
    if (n == 0 || f->at->h.klen != f->nkey || !key_eq(it + n, f->key, f->nkey))
        return false;
    f->at->loc = loc;
    f->at->seg = id;
    f->at->created = f->s->segs[id].created;
    f->at->key = it + n;
    at_value(f->at, it + n + f->nkey);
    return true;
}

/* Where hv is among the read-ahead's keys not yet looked up (-1: not there). */
static inline int hint_of(const struct seg_store *s, uint64_t hv) {
    if (hints.store == s->id)
        for (unsigned i = hints.i; i < hints.n; i++)
            if (hints.hv[i] == hv)
                return (int)i;
    return -1;
}

/*
 * Flattened: the index's scan and match_key_at() inlined here, with no
 * call through the match pointer (63 of 253 instructions a lookup at
 * depth 1 were those calls' prologues and epilogues; callgrind).
 */
__attribute__((flatten)) bool seg_find_locked(struct seg_store *s, uint64_t hv, const char *key,
                                              size_t nkey, struct seg_at *at) {
    struct key_find f = {s, key, nkey, at};
    int i = hint_of(s, hv);
    if (i >= 0) {
        hints.i = (unsigned)i + 1;
        if (hints.slot[i] != NULL &&
            (at->slot = seg_index_check_locked(hints.slot[i], hv, match_key_at, &f)) != NULL)
            return true;
    }
    return (at->slot = seg_index_find_locked(s->ix, hv, match_key_at, &f)) != NULL;
}

bool seg_store_absent(struct seg_store *s, uint64_t hv) {
    if (hints.absent == 0)
        return false;
    int i = hint_of(s, hv);
    if (i < 0 || !((hints.absent >> i) & 1) || !seg_index_absent(s->ix, hv, hints.seq[i]))
        return false;
    hints.i = (unsigned)i + 1;
    return true;
}

/*
 * An item's bytes die: its segment's live count drops.  A sealed segment
 * left with no live item, no writer and no reader goes back to the pool
 * at once: overwrites and deletes then reuse memory already touched
 * instead of growing into fresh pages up to -m (nothing in it to evict).
 */
static void kill(struct seg_store *s, uint64_t loc, const struct seg_hdr *h) {
    uint32_t id = (uint32_t)(loc >> OFF_BITS);
    struct seg_meta *m = &s->segs[id];
    if (h->hflags & SEG_F_EXT)
        ext_put(s, ext_stored((const char *)item_at(s, loc) + seg_hdr_len(h, m->cas_base) +
                              h->klen));
    atomic_fetch_sub(&m->live_bytes, (int64_t)seg_item_len(h, m->cas_base));
    if (atomic_fetch_sub(&m->live_items, 1) != 1 || atomic_load(&m->state) != ST_SEALED)
        return;
    pthread_mutex_lock(&s->pool);
    if (atomic_load(&m->state) == ST_SEALED && atomic_load(&m->live_items) == 0 &&
        atomic_load(&m->writers) == 0 && atomic_load(&m->pins) == 0) {
        fifo_unlink_locked(s, id);
        free_locked(s, id);
        s->emptied++;
    }
    pthread_mutex_unlock(&s->pool);
}

/* The slot of the entry at loc (key hash hv): the hint a lookup left, else a search. */
static uint64_t *slot_of_locked(struct seg_store *s, uint64_t hv, uint64_t *hint,
                                uint64_t *loc) {
    uint64_t *slot = seg_index_still_locked(hint, hv, *loc);
    return slot != NULL ? slot : seg_index_find_locked(s->ix, hv, match_loc, loc);
}

void seg_unlink_locked(struct seg_store *s, uint64_t hv, const struct seg_at *at) {
    uint64_t loc = at->loc;
    uint64_t *slot = slot_of_locked(s, hv, at->slot, &loc);
    if (slot == NULL)
        return;
    kill(s, loc, &at->h);
    seg_index_remove_locked(s->ix, slot);
}

enum seg_result seg_write(struct seg_store *s, const struct seg_hdr *h, const char *key,
                          const void *value, struct mtx *held, struct seg_resv *r) {
    if (h->klen == 0 || h->klen > SEG_KEY_MAX)
        return SEG_TOO_LARGE;
    struct seg_hdr w = *h;
    w.hflags &= (SEG_F_STATE | SEG_F_CAS64) & ~SEG_F_EXT;    /* (h->vlen: the whole value) */
    /* s3fifo: a key the small queue evicted lately is marked to go to the main one */
    if (s->ghost != NULL && atomic_load_explicit(&s->ghost_n, memory_order_relaxed) != 0 &&
        !(w.hflags & SEG_F_GHOST)) {
        uint64_t hv = ht_hash(key, w.klen);
        pthread_mutex_lock(&s->ghost_lock);
        bool hit = ghost_remove(s->ghost, hv);
        atomic_store(&s->ghost_n, ghost_count(s->ghost));
        pthread_mutex_unlock(&s->ghost_lock);
        if (hit) {
            w.hflags |= SEG_F_GHOST;
            atomic_fetch_add(&s->ghost_hits, 1);
        }
    }
    /* the cas field's width: a 4-byte delta unless the cas asked for cannot be one */
    uint64_t base = atomic_load(s->cas);
    if (w.cas != 0 && (w.cas < base || w.cas - base > UINT32_MAX / 2))
        w.hflags |= SEG_F_CAS64;
    w.cas = 0;
    size_t len = seg_item_len(&w, 0);
    struct seg_ext *x = NULL;
    if (len > s->cfg.seg_size) {    /* out of line; the segment keeps the block's address */
        if (ext_size(w.vlen) > s->cfg.mem_limit / 2)
            return SEG_TOO_LARGE;
        if ((x = ext_new(s, value, w.vlen, held)) == NULL)
            return SEG_NO_MEMORY;
        w.hflags |= SEG_F_EXT;
        w.vlen = sizeof(x);
        value = &x;
        len = seg_item_len(&w, 0);
    }
    uint32_t id, off;
    if (!reserve(s, ttl_bucket_of(s, w.exptime), (uint32_t)len, held, &id, &off)) {
        if (x != NULL)
            ext_put(s, x);
        return SEG_NO_MEMORY;
    }
    struct seg_meta *m = &s->segs[id];
    uint8_t *p = (uint8_t *)seg_base(s, id) + off;
    w.cas = m->cas_base;            /* the field's placeholder until seg_commit_locked() */
    size_t n = seg_hdr_encode(p, &w, m->cas_base);
    memcpy(p + n, key, w.klen);
    if (w.vlen != 0)
        memcpy(p + n + w.klen, value, w.vlen);
    *r = (struct seg_resv){.loc = loc_of(id, off), .len = (uint32_t)len, .ext = x};
    return SEG_STORED;
}

enum seg_result seg_commit_locked(struct seg_store *s, uint64_t hv, const struct seg_at *old,
                                  struct seg_resv *r, uint64_t cas, struct seg_at *linked) {
    struct seg_at at;
    at_fill(s, r->loc, &at);
    struct seg_meta *m = &s->segs[at.seg];
    if (!seg_hdr_set_cas((uint8_t *)seg_base(s, at.seg) + (r->loc & (SEG_SIZE_MAX - 1)), &at.h,
                         m->cas_base, cas))
        return SEG_AGAIN;
    if (old != NULL) {
        uint64_t oloc = old->loc;
        uint64_t *slot = slot_of_locked(s, hv, old->slot, &oloc);
        struct seg_hdr oh = old->h;
        if (slot == NULL) {
            /* this write's own eviction took old's segment: evicted, or moved by a
               merge (then it is found by its key, wherever it went) */
            struct key_match km = {s, at.key, at.h.klen};
            slot = seg_index_find_locked(s->ix, hv, match_key, &km);
            if (slot != NULL)
                hdr_at(s, oloc = seg_index_loc(*slot), &oh);
        }
        if (slot != NULL) {
            kill(s, oloc, &oh);
            seg_index_move_locked(slot, r->loc);
        } else if (!seg_index_insert_locked(s->ix, hv, r->loc)) {
            return SEG_NO_MEMORY;
        }
    } else if (!seg_index_insert_locked(s->ix, hv, r->loc)) {
        return SEG_NO_MEMORY;
    }
    atomic_fetch_add(&m->live_items, 1);
    atomic_fetch_add(&m->live_bytes, (int64_t)r->len);
    raise_max_exptime(m, at.h.exptime);
    r->ext = NULL;                  /* the item's now */
    seg_resv_drop(s, r);
    if (linked != NULL) {           /* (old may be the same: read above) */
        at.h.cas = cas;
        *linked = at;
    }
    return SEG_STORED;
}

void seg_resv_drop(struct seg_store *s, struct seg_resv *r) {
    if (r->len != 0)
        atomic_fetch_sub(&s->segs[r->loc >> OFF_BITS].writers, 1);
    r->len = 0;
    if (r->ext != NULL)
        ext_put(s, r->ext);
    r->ext = NULL;
}

void seg_set_state_locked(struct seg_store *s, const struct seg_at *at, uint16_t set,
                          uint16_t clear) {
    seg_hdr_set_state(item_at(s, at->loc), set, clear);
}

bool seg_set_exptime_locked(struct seg_store *s, const struct seg_at *at, uint32_t exptime) {
    struct seg_meta *m = &s->segs[at->seg];
    if (!(at->h.hflags & SEG_F_EXP) && exptime != 0)
        return false;
    raise_max_exptime(m, exptime);  /* before the item says so: expiry reads this first */
    return seg_hdr_set_exptime(item_at(s, at->loc), &at->h, exptime);
}

bool seg_set_cas_locked(struct seg_store *s, const struct seg_at *at, uint64_t cas) {
    return seg_hdr_set_cas(item_at(s, at->loc), &at->h, s->segs[at->seg].cas_base, cas);
}

void seg_pin(struct seg_store *s, uint32_t seg) { atomic_fetch_add(&s->segs[seg].pins, 1); }
bool seg_pinned(struct seg_store *s, uint32_t seg) { return atomic_load(&s->segs[seg].pins) != 0; }
void seg_unpin(struct seg_store *s, uint32_t seg) { atomic_fetch_sub(&s->segs[seg].pins, 1); }


uint64_t seg_store_prefetch(struct seg_store *s, const uint64_t *hv, unsigned n) {
    uint64_t loc[SEG_INDEX_PREFETCH_MAX];
    if (n > SEG_INDEX_PREFETCH_MAX)
        n = SEG_INDEX_PREFETCH_MAX;
    hints.absent = seg_index_prefetch(s->ix, hv, n, loc, hints.slot, hints.seq);
    memcpy(hints.hv, hv, n * sizeof(*hv));
    hints.store = s->id;
    hints.n = n;
    hints.i = 0;
    /* the header, key and a small value: the lines of 192 bytes from it */
    uint64_t all = n == 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1;
    for (uint64_t m = all & ~hints.absent; m != 0; m &= m - 1) {
        unsigned i = (unsigned)__builtin_ctzll(m);
        uint32_t id = (uint32_t)(loc[i] >> OFF_BITS);
        if (loc[i] <= SEG_LOC_MASK && id < s->nseg) {
            const char *it = seg_base(s, id) + (loc[i] & (SEG_SIZE_MAX - 1));
            __builtin_prefetch(it);
            __builtin_prefetch(it + 64);
            __builtin_prefetch(it + 128);
            __builtin_prefetch(it + 191);
        }
    }
    return hints.absent;
}

void seg_store_seal_point(struct seg_store *s, uint32_t point) {
    atomic_store(&s->seal_point, point);
}

/* The store's own small API (seg_api.c) reaches these three. */
struct lock_stripes *seg_store_locks(struct seg_store *s) { return s->locks; }
uint64_t seg_store_cas_next(struct seg_store *s) { return atomic_fetch_add(s->cas, 1) + 1; }
uint32_t seg_store_clock(struct seg_store *s) { return atomic_load(&s->now); }

unsigned seg_store_step(struct seg_store *s, unsigned budget) {
    uint32_t ids[64];
    unsigned n = 0, done = 0;
    uint32_t now = atomic_load(&s->now);
    if (budget > 64)
        budget = 64;
    pthread_mutex_lock(&s->pool);
    reap_locked(s);
    seal_idle_locked(s, false, now);
    for (uint32_t id = s->q[Q_SMALL].head, q = Q_SMALL; n < budget;) {
        if (id == NONE) {
            if (q == Q_MAIN)
                break;
            id = s->q[q = Q_MAIN].head;
            continue;
        }
        struct seg_meta *m = &s->segs[id];
        uint32_t next = m->next;
        uint32_t mx = atomic_load(&m->max_exptime);
        if (mx != NEVER && mx <= now && atomic_load(&m->writers) == 0 &&
            atomic_load(&m->pins) == 0) {
            detach_locked(s, id);
            ids[n++] = id;
        }
        id = next;
    }
    pthread_mutex_unlock(&s->pool);
    for (unsigned i = 0; i < n; i++)
        done += clear(s, ids[i], true, NULL);
    return done + seg_store_grow(s, 256);
}

unsigned seg_store_grow(struct seg_store *s, unsigned budget) {
    return seg_index_step(s->ix, budget);
}

void seg_store_stats(struct seg_store *s, struct seg_stats *out) {
    *out = (struct seg_stats){.segments = s->nseg};
    pthread_mutex_lock(&s->pool);
    out->free = s->nfree;
    out->sealed = s->q[Q_SMALL].n + s->q[Q_MAIN].n;
    out->small = s->q[Q_SMALL].n;
    for (uint32_t i = 0; i < s->nseg; i++) {
        struct seg_meta *m = &s->segs[i];
        if (atomic_load(&m->state) == ST_FREE)
            continue;
        out->live_items += (uint64_t)atomic_load(&m->live_items);
        out->live_bytes += (uint64_t)atomic_load(&m->live_bytes);
        out->written_bytes += m->write_off;
    }
    out->emptied = s->emptied;
    out->ext_bytes = s->ext_bytes;
    out->lent = s->lent;
    pthread_mutex_unlock(&s->pool);
    out->evicted_segments = atomic_load(&s->evicted_segments);
    out->evicted_items = atomic_load(&s->evicted_items);
    out->expired_segments = atomic_load(&s->expired_segments);
    out->expired_items = atomic_load(&s->expired_items);
    out->expired_unfetched = atomic_load(&s->expired_unfetched);
    out->evicted_unfetched = atomic_load(&s->evicted_unfetched);
    out->merges = atomic_load(&s->merges);
    out->promoted = atomic_load(&s->promoted);
    out->reinserted = atomic_load(&s->reinserted);
    out->ghost_hits = atomic_load(&s->ghost_hits);
    pthread_mutex_lock(&s->ext_lock);
    out->ext_items = s->ext_items;
    pthread_mutex_unlock(&s->ext_lock);
    struct seg_index_stats is;
    seg_index_stats(s->ix, &is);
    out->index_bytes = is.bytes;
}


/*
 * A walk over every item the index points at, segment by segment in id
 * order: *cursor is (segment << 20 | offset).  Each item's header span is
 * read holding no lock; its stripe is then taken and the index asked
 * whether it still points there.  Segments not sealed or open are
 * skipped.  Returns false once past the last segment.
 */
bool seg_store_walk(struct seg_store *s, uint64_t *cursor, unsigned budget,
                    void (*fn)(void *arg, const struct seg_at *at), void *arg) {
    uint32_t id = (uint32_t)(*cursor >> OFF_BITS), off = (uint32_t)(*cursor & (SEG_SIZE_MAX - 1));
    for (unsigned n = 0; id < s->nseg && n < budget; n++) {
        struct seg_meta *m = &s->segs[id];
        uint8_t st = atomic_load(&m->state);
        /* write_off only grows while the segment is open or sealed */
        uint32_t end = st == ST_OPEN || st == ST_SEALED ? atomic_load(&m->write_off) : 0;
        if (off >= end || atomic_load(&m->writers) != 0) {
            if (off < end)
                break;              /* being written: come back on the next step */
            id++, off = 0;
            continue;
        }
        uint8_t klen;
        uint32_t vlen;
        uint32_t pinned = id;
        seg_pin(s, pinned);
        size_t h = seg_hdr_span((const uint8_t *)seg_base(s, id) + off, s->cfg.seg_size - off,
                                &klen, &vlen);
        if (h != 0 && atomic_load(&m->state) == st) {
            uint64_t loc = loc_of(id, off);
            uint64_t hv = ht_hash(seg_base(s, id) + off + h, klen);
            struct mtx *x = lock_of(s->locks, hv);
            mtx_lock(x);
            if (seg_index_find_locked(s->ix, hv, match_loc, &loc) != NULL) {
                struct seg_at at;
                at_fill(s, loc, &at);
                fn(arg, &at);
            }
            mtx_unlock(x);
            off += (uint32_t)(h + klen + vlen);
        } else {
            id++, off = 0;          /* it changed under us: on to the next */
        }
        seg_unpin(s, pinned);
    }
    *cursor = loc_of(id, off);
    return id < s->nseg;
}

void seg_store_stats_reset(struct seg_store *s) {
    _Atomic uint64_t *c[] = {&s->evicted_segments, &s->evicted_items, &s->expired_segments,
                             &s->expired_items, &s->expired_unfetched, &s->evicted_unfetched};
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
        atomic_store(c[i], 0);
}
