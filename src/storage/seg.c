/*
 * seg.c -- the segment store (seg.h has the design, the flows and the
 * lock order): the pool and its reservations, clearing a segment, the
 * index and the item API.  Out-of-line values are in seg_ext.c, the
 * evictions in seg_evict_*.c (a table: seg_evict.h), moving kept items in
 * seg_move.c; seg_int.h has what they share.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "storage/ghost.h"
#include "storage/seg_int.h"

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

struct seg_store *seg_store_create(const struct seg_config *cfg, char *err, size_t errlen) {
    if (cfg->evict == NULL) {
        snprintf(err, errlen, "no segment eviction (seg_config.evict)");
        return NULL;
    }
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
    /* what the eviction sets aside: the merge's spare, S3-FIFO's outputs and ghost */
    if (s->cfg.evict->init != NULL && !s->cfg.evict->init(s))
        goto nomem;
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
bool seg_clear(struct seg_store *s, uint32_t id, bool expired, struct mtx *held) {
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
                seg_ext_put(s, ext_stored(seg_base(s, id) + off + n + klen));
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
unsigned seg_seal_idle_locked(struct seg_store *s, bool all, uint32_t now) {
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

/* ---------------------------------------------------------------------- */
/* Items, under the key's stripe (the engine's interface)                  */
/* ---------------------------------------------------------------------- */

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
        seg_ext_put(s, ext_stored((const char *)item_at(s, loc) + seg_hdr_len(h, m->cas_base) +
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
        if ((x = seg_ext_new(s, value, w.vlen, held)) == NULL)
            return SEG_NO_MEMORY;
        w.hflags |= SEG_F_EXT;
        w.vlen = sizeof(x);
        value = &x;
        len = seg_item_len(&w, 0);
    }
    uint32_t id, off;
    if (!reserve(s, ttl_bucket_of(s, w.exptime), (uint32_t)len, held, &id, &off)) {
        if (x != NULL)
            seg_ext_put(s, x);
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
        seg_ext_put(s, r->ext);
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

/* The store's stripes, cas counter and clock, for a caller of the primitives (the tests). */
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
    seg_seal_idle_locked(s, false, now);
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
        done += seg_clear(s, ids[i], true, NULL);
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
/*
 * The slices share out the segments that hold items, not the ids: a cache
 * that fills a quarter of its memory has its items in the lowest quarter.
 */
void seg_store_walk_span(struct seg_store *s, unsigned part, unsigned nparts, uint64_t *lo,
                         uint64_t *hi) {
    uint64_t used = 0, rank = 0;
    for (uint32_t id = 0; id < s->nseg; id++) {
        uint8_t st = atomic_load(&s->segs[id].state);
        used += st == ST_OPEN || st == ST_SEALED;
    }
    uint64_t from = used * part / nparts, to = used * (part + 1) / nparts;
    uint32_t first = s->nseg, end = s->nseg;
    for (uint32_t id = 0; id < s->nseg; id++) {
        uint8_t st = atomic_load(&s->segs[id].state);
        if (st != ST_OPEN && st != ST_SEALED)
            continue;
        if (rank == from && first == s->nseg)
            first = id;
        if (rank == to && part + 1 < nparts) {
            end = id;
            break;
        }
        rank++;
    }
    if (part == 0)
        first = 0;
    if (first > end)
        first = end;
    *lo = loc_of(first, 0);
    *hi = loc_of(end, 0);
}

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
