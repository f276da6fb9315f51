/*
 * item_seg.c -- items of the segment back end (-o storage=seg), as the
 * engine's shared code sees them: views.
 *
 * engine.c, engine_arith.c, lease.c and store.c hold memcached's
 * semantics once, written against struct item and store.h's operations
 * (store_find_locked, store_link_locked, store_unlink_locked,
 * store_alloc, store_unref...).
 * Under storage=seg, store.h sends each operation here (the segv_*
 * primitives of store_seg.h), and an item is a view of the bytes that
 * seg.c keeps in a segment:
 *
 *   scratch   what store_find_locked() returns: this thread's current view,
 *             filled from the segment's header (key copied, value read in
 *             place), valid until the stripe is let go, and reused by the
 *             thread's next lookup unless a caller kept it.  Changes the
 *             shared code makes to its exptime, cas and state bits are
 *             written back by store_sync_locked() -- in place where the
 *             header has the field, else as a new copy of the item.
 *   held      what a caller keeps (store_keep_locked): the scratch view
 *             itself, handed over; the value stays in the segment, which
 *             the view pins until its last unref (ITEM_CHAINED with
 *             item_chain.ext: item_value_flat() gives it in one piece).
 *             Held views and small staging items come from a per-thread
 *             cache of blocks.
 *   staging   what store_alloc() gives: a heap item the caller fills; the
 *             store writes it into a segment before taking the stripe
 *             (segv_prewrite), and links it under the stripe.  After
 *             that it is a view of what it linked, freed on its last
 *             unref (the shared code keeps a reference on an item it made
 *             until it lets go of the stripe).
 *
 * A view's atime is its segment's creation time: segments opened after a
 * flush_all take every item stored after it (seg_store_seal_point), so
 * expire_dead() decides a flush as memcached does.  Eviction and expiry
 * of whole segments happen in seg.c; curr_items, bytes and evictions come
 * from its counts.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "storage/seg.h"
#include "storage/seg_evict.h"
#include "storage/store_seg.h"

#define VIEW_KEY_ROOM (ENGINE_KEY_MAX + sizeof(struct item_chain))
#define VIEW_BLOCK (sizeof(struct segv) + VIEW_KEY_ROOM)
#define VIEW_CACHE 64               /* blocks a thread keeps for reuse */

enum view_kind { VIEW_SCRATCH, VIEW_HELD, VIEW_STAGING };

struct segv {
    struct seg_at at;               /* where the linked copy lies (with ITEM_LINKED) */
    struct seg_resv resv;           /* staging: bytes written, not yet linked */
    uint8_t kind;                   /* enum view_kind */
    bool pinned;                    /* holds a pin on at.seg */
    struct seg_ext *ext;            /* held: its out-of-line value (seg_ext_hold) */
    bool block;                     /* a VIEW_BLOCK from the thread cache */
    struct item it;                 /* last: its data[] follows */
};

static inline struct segv *view_of(const struct item *it) {
    return (struct segv *)((char *)it - offsetof(struct segv, it));
}

static _Thread_local struct {
    struct segv *v[VIEW_CACHE];
    unsigned n;
    struct segv *scratch;           /* the current scratch view, a block */
    bool registered;
} vcache;
static _Thread_local struct {      /* the scratch view when no block could be had */
    struct segv v;
    char room[VIEW_KEY_ROOM];
} spare;
static pthread_key_t vcache_key;
static pthread_once_t vcache_once = PTHREAD_ONCE_INIT;

static void vcache_drain(void *arg) {
    (void)arg;
    while (vcache.n > 0)
        free(vcache.v[--vcache.n]);
    free(vcache.scratch);
    vcache.scratch = NULL;
}

static void vcache_init(void) { pthread_key_create(&vcache_key, vcache_drain); }

/* The thread's blocks go when it ends. */
static void vcache_register(void) {
    if (!vcache.registered) {
        pthread_once(&vcache_once, vcache_init);
        pthread_setspecific(vcache_key, &vcache);
        vcache.registered = true;
    }
}

/* A view with room bytes after its header: a cached block when it fits. */
static struct segv *view_new(size_t room) {
    bool block = room <= VIEW_KEY_ROOM;
    struct segv *v = block && vcache.n > 0 ? vcache.v[--vcache.n]
                                           : malloc(block ? VIEW_BLOCK : sizeof(*v) + room);
    if (v != NULL)
        v->block = block;
    return v;
}

static void view_del(struct segv *v) {
    if (!v->block || vcache.n == VIEW_CACHE) {
        free(v);
        return;
    }
    vcache_register();
    vcache.v[vcache.n++] = v;
}

/* (TOKEN and STALE have the same bits in both) */
_Static_assert((int)ITEM_TOKEN_SENT == (int)SEG_F_TOKEN && (int)ITEM_STALE == (int)SEG_F_STALE,
               "state bits");

static inline uint16_t hflags_of(const struct item *it) {
    uint8_t f = atomic_load_explicit(&it->iflags, memory_order_relaxed);
    return (uint16_t)((f & (ITEM_TOKEN_SENT | ITEM_STALE)) |
                      ((f & ITEM_FETCHED) ? SEG_F_FETCHED : 0) |
                      ((f & ITEM_KEY_BINARY) ? SEG_F_KEYB : 0) | ((f & ITEM_HOLD) ? SEG_F_HOLD : 0));
}

static inline uint8_t iflags_of(uint16_t h) {
    return (uint8_t)((h & (SEG_F_TOKEN | SEG_F_STALE)) | ((h & SEG_F_FETCHED) ? ITEM_FETCHED : 0) |
                     ((h & SEG_F_KEYB) ? ITEM_KEY_BINARY : 0) | ((h & SEG_F_HOLD) ? ITEM_HOLD : 0));
}

static void ext_set(struct item *it, const char *value) {
    struct item_chain ch = {.ext = (char *)value};
    memcpy(it->data + it->nkey, &ch, sizeof(ch));
}

/* The fields of a view of the copy at at (the caller sets data[] and iflags' other bits). */
static void view_fill(struct engine *e, struct segv *v, const struct seg_at *at) {
    struct item *it = &v->it;
    if (at != &v->at)
        v->at = *at;
    it->hnext = NULL;
    it->pword[0] = it->pword[1] = 0;
    atomic_store_explicit(&it->cas, at->h.cas, memory_order_relaxed);
    it->atime = at->created;
    it->exptime = at->h.exptime;
    it->nbytes = at->nbytes;
    it->flags = at->h.cflags;
    it->clsid = 1;
    it->nkey = at->h.klen;
    atomic_init(&it->pbits, 0);
    memcpy(it->data, at->key, at->h.klen);
    (void)e;
}

struct item *segv_lookup_locked(struct engine *e, const char *key, size_t nkey, uint64_t hv) {
    struct seg_at at;
    if (!seg_find_locked(e->seg, hv, key, nkey, &at))
        return NULL;
    struct segv *v = vcache.scratch;
    if (v == NULL) {
        vcache_register();
        v = vcache.scratch = view_new(VIEW_KEY_ROOM);
        if (v == NULL)
            v = &spare.v;
    }
    view_fill(e, v, &at);
    v->kind = VIEW_SCRATCH;
    v->pinned = false;
    v->ext = NULL;
    v->resv = (struct seg_resv){0};
    /* the value is read where it lies; while readers pin its segment they may
       be reading it: the item counts as held then (no in-place arithmetic) */
    ext_set(&v->it, at.value);
    atomic_init(&v->it.refcount, seg_pinned(e->seg, at.seg) ? 2 : 1);
    atomic_init(&v->it.iflags, (uint8_t)(ITEM_LINKED | ITEM_CHAINED | iflags_of(at.h.hflags)));
    return &v->it;
}

/* Neither a tombstone nor expired nor flushed: what the fast paths take on. */
static inline bool plain_live(struct engine *e, const struct seg_at *at) {
    uint32_t now = expire_now(e);
    uint32_t live = atomic_load_explicit(&e->oldest_live, memory_order_acquire);
    return !(at->h.hflags & SEG_F_HOLD) && (at->h.exptime == 0 || at->h.exptime > now) &&
           (live == 0 || live > now);
}

/*
 * A set's common case (stripe held, nothing watched, no cas given): the
 * bytes prewritten are linked in place of a live item or of none, and it
 * becomes their view.  Anything else -- a dead item or a tombstone in the
 * way, bytes not yet written, a cas that needs a wider field -- is left
 * to the shared code (false), with nothing changed.
 */
bool segv_set_locked(struct engine *e, struct item *it, uint64_t hv, uint64_t cas) {
    struct segv *v = view_of(it);
    if (v->kind != VIEW_STAGING || v->resv.len == 0)
        return false;
    struct seg_at old;
    bool found = seg_find_locked(e->seg, hv, item_key(it), it->nkey, &old);
    if (found && !plain_live(e, &old))
        return false;
    cas = !e->cfg.use_cas ? 0 : cas != 0 ? cas : item_next_cas(e);
    if (seg_commit_locked(e->seg, hv, found ? &old : NULL, &v->resv, cas, &v->at) != SEG_STORED)
        return false;
    atomic_store_explicit(&it->cas, cas, memory_order_relaxed);
    it->atime = v->at.created;
    item_flag_set(it, ITEM_LINKED);
    item_count_stored(e);
    return true;
}

/*
 * A get's common case (stripe held, nothing watched): a live item found
 * and marked fetched in place, then shown to cp when it asks and the value
 * fits, else handed out as a held view made from the segment.  Anything
 * else -- a dead item, a tombstone, no block for the view -- sets *generic
 * and leaves the decision to the shared code; a plain miss is NULL.
 */
struct item *segv_get_locked(struct engine *e, const char *key, size_t nkey, uint64_t hv,
                             struct engine_copy *cp, bool *generic) {
    struct seg_at at;
    *generic = false;
    if (!seg_find_locked(e->seg, hv, key, nkey, &at))
        return NULL;
    if (!plain_live(e, &at)) {
        *generic = true;
        return NULL;
    }
    if (!(at.h.hflags & SEG_F_FETCHED)) {
        seg_set_state_locked(e->seg, &at, SEG_F_FETCHED, 0);
        at.h.hflags |= SEG_F_FETCHED;
    }
    if (cp != NULL && at.nbytes <= cp->max) {
        struct engine_hit h = {     /* (a view's policy bits are 0) */
            .key = at.key, .value = at.value, .nkey = at.h.klen, .nbytes = at.nbytes,
            .flags = at.h.cflags, .cas = at.h.cas, .clsid = 1, .lru = lru_of_bits(e, 0)};
        cp->fn(cp->arg, &h);
        cp->done = true;
        return NULL;
    }
    struct segv *v = view_new(VIEW_KEY_ROOM);
    if (v == NULL) {
        *generic = true;
        return NULL;
    }
    view_fill(e, v, &at);
    v->kind = VIEW_HELD;
    v->pinned = true;
    v->resv = (struct seg_resv){0};
    seg_pin(e->seg, at.seg);
    v->ext = seg_ext_hold(&at);
    ext_set(&v->it, at.value);
    atomic_init(&v->it.refcount, 1);
    atomic_init(&v->it.iflags, (uint8_t)(ITEM_LINKED | ITEM_CHAINED | iflags_of(at.h.hflags)));
    return &v->it;
}

struct item *segv_keep_locked(struct engine *e, struct item *it) {
    struct segv *v = view_of(it);
    if (v->kind != VIEW_SCRATCH) {
        item_ref(e, it);
        return it;
    }
    struct segv *h = v;
    if (v == vcache.scratch) {
        vcache.scratch = NULL;      /* the caller's now: the next lookup takes another */
    } else {                        /* the spare: a copy */
        h = view_new(it->nkey + sizeof(struct item_chain));
        if (h == NULL)
            return NULL;
        bool block = h->block;
        memcpy(h, v, offsetof(struct segv, it) + offsetof(struct item, data) + it->nkey +
                         sizeof(struct item_chain));
        h->block = block;
    }
    h->kind = VIEW_HELD;
    h->pinned = true;
    seg_pin(e->seg, v->at.seg);
    h->ext = seg_ext_hold(&v->at);
    atomic_init(&h->it.refcount, 1);
    return &h->it;
}

struct item *segv_alloc(struct engine *e, const char *key, size_t nkey, uint32_t flags,
                        uint32_t exptime, uint32_t nbytes, enum engine_alloc_err *err) {
    *err = ENGINE_ALLOC_OK;
    /* (a value too large for a segment goes out of line when written) */
    if (nkey == 0 || nkey > ENGINE_KEY_MAX ||
        sizeof(struct item) + nkey + (size_t)nbytes > e->cfg.item_size_max) {
        *err = ENGINE_ALLOC_TOO_LARGE;
        return NULL;
    }
    struct segv *v = view_new(nkey + (size_t)nbytes);
    if (v == NULL) {
        *err = ENGINE_ALLOC_NO_MEMORY;
        return NULL;
    }
    v->kind = VIEW_STAGING;
    v->pinned = false;
    v->ext = NULL;
    v->resv = (struct seg_resv){0};
    struct item *it = &v->it;
    it->hnext = NULL;
    it->pword[0] = it->pword[1] = 0;
    atomic_init(&it->cas, 0);
    it->atime = expire_now(e);
    it->exptime = exptime;
    it->nbytes = nbytes;
    it->flags = flags;
    atomic_init(&it->refcount, 1);
    atomic_init(&it->iflags, 0);
    it->clsid = 1;
    it->nkey = (uint8_t)nkey;
    atomic_init(&it->pbits, 0);
    memcpy(it->data, key, nkey);
    return it;
}

void segv_free(struct engine *e, struct item *it) {
    struct segv *v = view_of(it);
    switch (v->kind) {
    case VIEW_SCRATCH:
        return;
    case VIEW_HELD:
        seg_ext_release(e->seg, v->ext);
        if (v->pinned)
            seg_unpin(e->seg, v->at.seg);
        view_del(v);
        return;
    case VIEW_STAGING:
        seg_resv_drop(e->seg, &v->resv);
        view_del(v);
        return;
    }
}

/* The header a staging item is written with (cas: the one it will get, 0 unknown). */
static struct seg_hdr staging_hdr(const struct item *it, uint64_t cas) {
    return (struct seg_hdr){.hflags = hflags_of(it), .klen = it->nkey, .vlen = it->nbytes,
                            .cas = cas, .exptime = it->exptime, .cflags = it->flags};
}

void segv_prewrite(struct engine *e, struct item *it, uint64_t cas) {
    struct segv *v = view_of(it);
    if (v->kind != VIEW_STAGING || v->resv.len != 0)
        return;
    struct seg_hdr h = staging_hdr(it, cas);
    if (seg_write(e->seg, &h, item_key(it), it->data + it->nkey, NULL, &v->resv) != SEG_STORED)
        v->resv = (struct seg_resv){0};     /* written under the stripe instead, or refused */
}

void segv_prewrite_drop(struct engine *e, struct item *it) {
    struct segv *v = view_of(it);
    if (v->kind == VIEW_STAGING)
        seg_resv_drop(e->seg, &v->resv);
}

/*
 * Links staging item it (stripe held) with cas, in old's place if old (a
 * view of the key's linked copy) is given.  Uses the bytes written before
 * the stripe was taken if there are any (what changed since goes in by
 * segv_sync_locked), else writes them here.
 */
static bool view_link_locked(struct engine *e, struct item *old, struct item *it, uint64_t hv,
                             uint64_t cas) {
    struct segv *v = view_of(it);
    struct mtx *held = lock_of(e->locks, hv);
    const struct seg_at *oat = old != NULL && item_has(old, ITEM_LINKED) ? &view_of(old)->at : NULL;
    if (v->kind != VIEW_STAGING)
        abort();                    /* only a fresh item is linked: a bug */
    enum seg_result r = SEG_AGAIN;
    for (int wide = 0; wide < 2 && r == SEG_AGAIN; wide++) {
        if (v->resv.len == 0) {
            struct seg_hdr h = staging_hdr(it, cas);
            if (wide)
                h.hflags |= SEG_F_CAS64;
            /* written holding the stripe: old's segment stays where it is meanwhile */
            if (oat != NULL)
                seg_pin(e->seg, oat->seg);
            enum seg_result w = seg_write(e->seg, &h, item_key(it), it->data + it->nkey, held,
                                          &v->resv);
            if (oat != NULL)
                seg_unpin(e->seg, oat->seg);
            if (w != SEG_STORED)
                return false;
        }
        r = seg_commit_locked(e->seg, hv, oat, &v->resv, cas, &v->at);
        if (r == SEG_AGAIN)
            seg_resv_drop(e->seg, &v->resv);
    }
    if (r != SEG_STORED) {
        seg_resv_drop(e->seg, &v->resv);
        return false;
    }
    if (old != NULL)
        item_flag_clear(old, ITEM_LINKED);
    atomic_store_explicit(&it->cas, cas, memory_order_relaxed);
    it->atime = v->at.created;
    item_flag_set(it, ITEM_LINKED);
    /* what the shared code changed after the bytes were written (an invalidating
       cas store's exptime and state) goes in now */
    segv_sync_locked(e, it, hv);
    return true;
}

/* store_link_locked(): the CAS settled, the view linked, the store counted. */
bool segv_link_locked(struct engine *e, struct item *it, uint64_t hv, uint64_t cas) {
    cas = !e->cfg.use_cas ? 0 : cas != 0 ? cas : item_next_cas(e);
    if (!view_link_locked(e, NULL, it, hv, cas))
        return false;
    item_count_stored(e);
    return true;
}

/* store_replace_locked(): as segv_link_locked(), in old's place. */
bool segv_replace_locked(struct engine *e, struct item *old, struct item *it, uint64_t hv,
                         uint64_t cas) {
    cas = !e->cfg.use_cas ? 0 : cas != 0 ? cas : item_next_cas(e);
    if (!view_link_locked(e, old, it, hv, cas))
        return false;
    item_count_stored(e);
    return true;
}

void segv_unlink_locked(struct engine *e, struct item *it, uint64_t hv) {
    seg_unlink_locked(e->seg, hv, &view_of(it)->at);
    item_flag_clear(it, ITEM_LINKED);
}

/*
 * Writes back what the shared code changed in a linked view: state bits
 * and the exptime and cas in place where the header has room, else a new
 * copy in the old one's place (which keeps the key's cas and state).
 */
bool segv_sync_locked(struct engine *e, struct item *it, uint64_t hv) {
    struct segv *v = view_of(it);
    if (!item_has(it, ITEM_LINKED))
        return false;
    struct seg_at *at = &v->at;
    uint16_t want = hflags_of(it);
    uint16_t have = at->h.hflags & (SEG_F_FETCHED | SEG_F_TOKEN | SEG_F_STALE);
    if ((want & (SEG_F_FETCHED | SEG_F_TOKEN | SEG_F_STALE)) == have &&
        it->exptime == at->h.exptime && item_cas(it) == at->h.cas)
        return true;                /* nothing changed (a get of a fetched item) */
    uint16_t set = want & (SEG_F_FETCHED | SEG_F_TOKEN | SEG_F_STALE) & ~have;
    uint16_t clr = have & ~want;
    if (set | clr) {
        seg_set_state_locked(e->seg, at, set, clr);
        at->h.hflags = (uint16_t)((at->h.hflags | set) & ~clr);
    }
    uint64_t cas = item_cas(it);
    bool ok = true;
    if (it->exptime != at->h.exptime) {
        if (seg_set_exptime_locked(e->seg, at, it->exptime))
            at->h.exptime = it->exptime;
        else
            ok = false;
    }
    if (ok && cas != at->h.cas) {
        if (seg_set_cas_locked(e->seg, at, cas))
            at->h.cas = cas;
        else
            ok = false;
    }
    if (ok)
        return true;
    /* a copy, written holding this stripe; its source pinned meanwhile */
    struct seg_hdr h = at->h;
    h.hflags = (uint16_t)((h.hflags & ~SEG_F_LAYOUT) | SEG_F_CAS64);
    h.vlen = at->nbytes;            /* (an out-of-line value is copied out of line) */
    h.exptime = it->exptime;
    h.cas = cas;
    struct seg_resv rv;
    seg_pin(e->seg, at->seg);
    enum seg_result r = seg_write(e->seg, &h, at->key, at->value, lock_of(e->locks, hv), &rv);
    seg_unpin(e->seg, at->seg);
    if (r != SEG_STORED)
        return false;
    r = seg_commit_locked(e->seg, hv, at, &rv, cas, at);
    seg_resv_drop(e->seg, &rv);
    if (r != SEG_STORED)
        return false;
    it->atime = at->created;
    if (v->kind == VIEW_SCRATCH)
        ext_set(it, at->value);
    return true;
}

/* An eviction, for watch (seg_config.evicted): reported with the item's stripe held. */
static void segv_evicted(void *arg, const struct seg_at *at) {
    struct engine *e = arg;
    if (!watching(e, ENGINE_WATCH_EVICT))
        return;
    struct {
        struct segv v;
        char room[VIEW_KEY_ROOM];
    } tmp;
    view_fill(e, &tmp.v, at);
    atomic_init(&tmp.v.it.iflags, iflags_of(at->h.hflags));
    uint32_t now = expire_now(e);
    struct engine_watch_event ev = {
        .kind = ENGINE_WATCH_EVICT,
        .it = &tmp.v.it,
        .ttl = item_ttl(at->h.exptime, now),
        .idle = now > at->created ? now - at->created : 0,
    };
    watch_report(e, &ev);
}

/* Whether the item at at is dead to the engine (expired or flushed), for a merge. */
static bool segv_dead(void *arg, const struct seg_at *at) {
    struct engine *e = arg;
    struct item it = {.atime = at->created, .exptime = at->h.exptime};
    atomic_init(&it.cas, at->h.cas);
    return expire_dead(e, &it, expire_now(e)) != ENGINE_MISS_NONE;
}

/* ---- dump: a walk over the segments, an item at a time ---- */

struct dump_walk {
    struct engine *e;
    engine_dump_fn fn;
    void *arg;
};

static void dump_one(void *arg, const struct seg_at *at) {
    struct dump_walk *w = arg;
    struct engine *e = w->e;
    struct segv *v = &spare.v;     /* (nobody keeps what a dump sees) */
    view_fill(e, v, at);
    ext_set(&v->it, at->value);     /* its value where it lies, for the caller's reads */
    atomic_init(&v->it.iflags, (uint8_t)(ITEM_LINKED | ITEM_CHAINED | iflags_of(at->h.hflags)));
    /* as the slab dump: an item of the expiring second is still listed */
    uint32_t now = expire_now(e);
    enum engine_miss dead = expire_dead(e, &v->it, now);
    if (item_has(&v->it, ITEM_HOLD) || dead == ENGINE_MISS_FLUSHED ||
        (dead == ENGINE_MISS_EXPIRED && v->it.exptime < now))
        return;
    int64_t started = atomic_load_explicit(&e->started, memory_order_relaxed);
    struct engine_dump_item d = {
        .key = at->key,
        .nkey = at->h.klen,
        .exptime = at->h.exptime != 0 ? started + at->h.exptime : 0,
        .atime = started + at->created,
        .cas = at->h.cas,
        .nbytes = at->nbytes,
        .ntotal = seg_item_len(&at->h, 0) + ((at->h.hflags & SEG_F_EXT) ? at->nbytes : 0),
        .clsid = 1,
        .fetched = (at->h.hflags & SEG_F_FETCHED) != 0,
        .flags = at->h.cflags,
        .it = &v->it,
    };
    w->fn(&d, w->arg);
}

void segv_dump_span(struct engine *e, unsigned part, unsigned nparts, uint64_t *lo,
                    uint64_t *hi) {
    seg_store_walk_span(e->seg, part, nparts, lo, hi);
}

bool segv_dump_step(struct engine *e, uint64_t *cursor, unsigned budget, engine_dump_fn fn,
                    void *arg) {
    struct dump_walk w = {e, fn, arg};
    return seg_store_walk(e->seg, cursor, budget, dump_one, &w);
}

/* ---- config, create, step and stats of the segment back end ---- */

/* The checks storage=seg adds to the shared ones (memcached's style of message). */
bool segv_config_check(const struct engine_config *c, char *err, size_t errlen) {
    if (strcmp(c->policy, "fifo") != 0 && strcmp(c->policy, "merge") != 0 &&
        strcmp(c->policy, "s3fifo") != 0)
        snprintf(err, errlen, "eviction policy \"%s\" keeps items in order one by one; "
                 "storage=seg evicts whole segments: fifo, merge or s3fifo", c->policy);
    else if (!c->evict)
        snprintf(err, errlen, "storage=seg always evicts (no -M)");
    else
        return true;
    return false;
}

/*
 * The segment back end of engine_create(): one class (the segments) for
 * the counters the shared code keeps, the key stripes and the cas counter shared with the segment
 * store; no slab, no hash table.  The index starts small and grows from
 * engine_step().  On failure says why in err; the caller destroys e.
 */
bool segv_create(struct engine *e, char *err, size_t errlen) {
    /* (segments keep no per-item order: their class's queue is fifo's, unused) */
    e->policy = evict_policy_find("fifo");
    e->lru_mask = e->policy->seg_mask;
    const char *name = e->cfg.policy;
    e->cfg.policy = strcmp(name, "merge") == 0    ? "merge"
                    : strcmp(name, "s3fifo") == 0 ? "s3fifo"
                                                  : e->policy->name;
    struct seg_config sc;
    seg_config_defaults(&sc);
    sc.mem_limit = e->cfg.mem_limit;
    sc.seg_size = e->cfg.page_size;
    /* two segments at least, where the largest item allows */
    while (sc.mem_limit / sc.seg_size < 2 && sc.seg_size / 2 >= e->cfg.item_size_max)
        sc.seg_size /= 2;
    e->cfg.page_size = sc.seg_size;     /* a segment is the page here */
    sc.lock_power = e->cfg.lock_power;
    /* eight slots a bucket: -o hashpower (or a restart's table size) counts items */
    sc.index_power = e->cfg.lock_power + 2;
    if (e->cfg.hashpower_init > sc.index_power + 2)
        sc.index_power = e->cfg.hashpower_init - 2;
    e->locks = lock_create(e->cfg.lock_power, !e->cfg.single_thread);
    sc.locks = e->locks;
    sc.cas = &e->cas;
    sc.evicted = segv_evicted;
    sc.dead = segv_dead;
    sc.hook_arg = e;
    sc.evict = seg_evict_find(e->cfg.policy);
    e->nclasses = 1;
    mtx_init(&e->cls[1].lock, !e->cfg.single_thread);
    atomic_init(&e->cls[1].crawler_checked, 0);
    e->cls[1].q = e->policy->create();
    if (e->locks == NULL || e->cls[1].q == NULL) {
        snprintf(err, errlen, "out of memory creating the engine");
    } else {
        e->seg = seg_store_create(&sc, err, errlen);
        if (e->seg != NULL) {
            seg_store_clock_set(e->seg, expire_now(e));
            return true;
        }
    }
    return false;
}

/*
 * The maintenance slice (step_lock held): whole segments expire (the
 * crawler's and the LRU maintainer's work: not when both are off), the
 * index grows; items of a segment that is not yet all expired go when met
 * or evicted.
 */
unsigned segv_step_locked(struct engine *e, unsigned budget) {
    return e->cfg.reap || engine_crawl(e) ? seg_store_step(e->seg, budget)
                                          : seg_store_grow(e->seg, budget);
}

/*
 * storage=seg's one class: its chunks are the segments (chunk_size the
 * segment size, used_chunks those holding items), number and
 * mem_requested the items the index points at and their bytes, evicted
 * the items that left with evicted segments.
 */
/*
 * Segments have no classes to move pages between: `slabs reassign` gets
 * the answer memcached would give for one class (1) of one page per
 * segment in use, and OK moves nothing.
 */
enum engine_reassign segv_reassign(struct engine *e, int32_t src, int32_t dst) {
    struct engine_class_stats cs;
    if (src == dst)
        return ENGINE_REASSIGN_SAME;
    if (src == -1 && dst != 1 && segv_class_stats(e, &cs) && cs.total_pages >= 2)
        src = 1;
    if (src < 0 || src > 1 || dst < 0 || dst > 1)
        return ENGINE_REASSIGN_BADCLASS;
    if (src == 0 || !segv_class_stats(e, &cs) || cs.total_pages < 2)
        return ENGINE_REASSIGN_NOSPARE;
    return ENGINE_REASSIGN_OK;
}

bool segv_class_stats(struct engine *e, struct engine_class_stats *out) {
    struct seg_stats st;
    seg_store_stats(e->seg, &st);
    struct eclass *c = &e->cls[1];
    *out = (struct engine_class_stats){
        .chunk_size = e->cfg.page_size,
        .chunks_per_page = 1,
        .total_pages = st.segments - st.free,
        .total_chunks = st.segments - st.free,
        .used_chunks = st.segments - st.free,
        .free_chunks = st.free,
        .number = st.live_items,
        .mem_requested = st.live_bytes + st.ext_bytes,  /* (out-of-line values too) */
        .evicted = st.evicted_items,
        .expired_unfetched = st.expired_unfetched,
        .evicted_unfetched = st.evicted_unfetched,
    };
    /* whole expired segments: the LRU maintainer's reclaims, or the crawler's without it */
    if (e->cfg.reap)
        out->reclaimed = st.expired_items;
    else
        out->crawler_reclaimed = st.expired_items;
    out->seg.number[EVICT_COLD] = st.live_items;
    mtx_lock(&c->lock);
    out->outofmemory = c->outofmemory;
    mtx_unlock(&c->lock);
    return true;
}

/* The segments' memory and the index's bytes for engine_stats(). */
void segv_stats(struct engine *e, struct engine_stats *out) {
    struct seg_stats st;
    seg_store_stats(e->seg, &st);
    out->total_malloced = (st.segments - st.free) * e->cfg.page_size;
    out->limit_maxbytes = e->cfg.mem_limit;
    out->hash_bytes = st.index_bytes;
}
