/*
 * engine.c -- the engine API: create/destroy, lookups, memcached's store,
 * delete and incr/decr semantics (the classic commands and meta set / meta
 * arithmetic share one path each), the maintenance step and stats.  Meta
 * get, meta delete and the delete hold-off are in lease.c.
 *
 * Every key operation has the same shape: hash the key, take its item
 * stripe, find the live item (unlinking a dead one found on the way), act,
 * release the stripe.  Item memory, linking and eviction live in item.c;
 * time, expiry and flush in expire.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/num.h"
#include "storage/evict_list.h"
#include "storage/store.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

void engine_config_defaults(struct engine_config *cfg) {
    *cfg = (struct engine_config){
        .mem_limit = 64 * (size_t)MiB,
        .growth_factor = 1.25,
        .chunk_min = 48,
        .item_size_max = MiB,
        .page_size = MiB,
        .slab_chunk_max = MiB / 2,
        .evict = true,
        .use_cas = true,
        .hashpower_init = 16,
        .lock_power = 12,
        .policy = "slru",
        .tune = EVICT_TUNE_DEFAULT,
        .crawl = true,
    };
}

/* Checks a config as memcached checks its options (same messages). */
static bool config_check(const struct engine_config *c, char *err, size_t errlen) {
    uint32_t cmax = c->slab_chunk_max, imax = c->item_size_max;
    if (!store_policy_known(c))
        snprintf(err, errlen, "unknown eviction policy \"%s\"", c->policy ? c->policy : "");
    else if (!(c->growth_factor > 1.0))
        snprintf(err, errlen, "Factor must be greater than 1");
    else if (c->chunk_min == 0)
        snprintf(err, errlen, "Chunk size must be greater than 0");
    else if (imax < KiB)
        snprintf(err, errlen, "Item max size cannot be less than 1024 bytes.");
    else if (c->mem_limit != 0 && imax > c->mem_limit / 2)
        snprintf(err, errlen, "Cannot set item size limit higher than 1/2 of memory max.");
    else if (imax > 1024 * MiB)
        snprintf(err, errlen, "Cannot set item size limit higher than a gigabyte.");
    else if (cmax < 512 || cmax % 8 != 0 || c->page_size < cmax)
        snprintf(err, errlen, "slab_chunk_max (bytes: %u) must be a multiple of 8, at least "
                 "512 and at most the page size %u", cmax, c->page_size);
    else if (cmax > imax)
        snprintf(err, errlen, "slab_chunk_max (bytes: %u) cannot be larger than -I "
                 "(item_size_max %u)", cmax, imax);
    else if (imax % cmax != 0)
        snprintf(err, errlen, "-I (item_size_max: %u) must be evenly divisible by "
                 "slab_chunk_max (bytes: %u)", imax, cmax);
    else if (c->page_size % cmax != 0)
        snprintf(err, errlen, "slab_chunk_max (bytes: %u) must divide evenly into %u "
                 "(slab_page_size)", cmax, c->page_size);
    else if (c->hashpower_init > HT_POWER_MAX)
        snprintf(err, errlen, "hashpower %u is too high", c->hashpower_init);
    else
        return store_config_check(c, err, errlen);
    return false;
}

struct engine *engine_create(const struct engine_config *cfg, char *err, size_t errlen) {
    char dummy[8];
    if (err == NULL)
        err = dummy, errlen = sizeof(dummy);
    if (!config_check(cfg, err, errlen))
        return NULL;
    struct engine *e = calloc(1, sizeof(*e));
    if (e == NULL)
        goto oom;
    e->cfg = *cfg;
    if (e->cfg.hashpower_init == 0)
        e->cfg.hashpower_init = 16;
    if (e->cfg.lock_power > e->cfg.hashpower_init)
        e->cfg.lock_power = e->cfg.hashpower_init;
    mtx_init(&e->step_lock, !cfg->single_thread);
    mtx_init(&e->sizes_lock, !cfg->single_thread);
    expire_init(e, (uint32_t)time(NULL));
    atomic_init(&e->cas, 0);
    atomic_init(&e->crawl_on, cfg->crawl);
    atomic_init(&e->met_expired, 0);
    atomic_init(&e->met_flushed, 0);
    atomic_init(&e->crawl_starts, 0);

    if (store_create(e, err, errlen))
        return e;
    engine_destroy(&e);
    return NULL;
oom:
    snprintf(err, errlen, "out of memory creating the engine");
    return NULL;
}

/* Items need no walk: they live in slab pages (or segments), which go with them. */
void engine_destroy(struct engine **ep) {
    struct engine *e = *ep;
    if (e == NULL)
        return;
    store_destroy(e);
    for (unsigned i = 1; i <= e->nclasses; i++) {
        if (e->cls[i].q != NULL)
            e->policy->destroy(e->cls[i].q);
        mtx_destroy(&e->cls[i].lock);
    }
    ht_destroy(&e->ht);
    lock_destroy(&e->locks);
    slab_destroy(&e->slab);
    mtx_destroy(&e->step_lock);
    mtx_destroy(&e->sizes_lock);
    free((void *)e->sizes);
    free(e);
    *ep = NULL;
}

/*
 * Sets the clock (the first set re-anchors `started`: see expire_init())
 * and tells the back end, whose segments are stamped with engine seconds.
 */
void engine_clock_set(struct engine *e, uint32_t unix_now) {
    int64_t started;
    if (!atomic_load_explicit(&e->clock_seen, memory_order_acquire) &&
        !atomic_exchange(&e->clock_seen, true)) {
        started = (int64_t)unix_now - atomic_load(&e->now);
        atomic_store(&e->started, started);
    } else {
        started = atomic_load_explicit(&e->started, memory_order_relaxed);
    }
    int64_t now = (int64_t)unix_now - started;
    if (now < 1)
        now = 1;
    if (now > UINT32_MAX)
        now = UINT32_MAX;
    atomic_store_explicit(&e->now, (uint32_t)now, memory_order_relaxed);
    store_clock_set(e, (uint32_t)now);
}

/*
 * memcached's flush_all: with CAS on, the flush point is one second before
 * the requested moment, and items of that very second are caught by CAS
 * instead (everything with a CAS below the next one).  oldest_cas is
 * published before oldest_live so a reader that sees the new point also
 * sees its CAS.
 */
void engine_flush(struct engine *e, int64_t delay) {
    uint32_t now = expire_now(e);
    uint32_t point = delay > 0 ? expire_realtime(e, delay) : now;
    if (e->cfg.use_cas) {
        point -= 1;
        if (point <= now) {
            uint64_t cas = atomic_fetch_add_explicit(&e->cas, 1, memory_order_relaxed) + 1;
            atomic_store_explicit(&e->oldest_cas, cas, memory_order_relaxed);
        }
    }
    store_seal_point(e, point);         /* before anything can be stored past it */
    atomic_store_explicit(&e->oldest_live, point, memory_order_release);
}

struct item *engine_item_alloc(struct engine *e, const char *key, size_t nkey,
                               uint32_t flags, int64_t exptime, uint32_t nbytes,
                               enum engine_alloc_err *err) {
    enum engine_alloc_err dummy;
    return store_alloc(e, key, nkey, flags, expire_realtime(e, exptime), nbytes,
                       err != NULL ? err : &dummy);
}

void engine_item_unref(struct engine *e, struct item *it) {
    if (it != NULL)
        store_unref(e, it);
}

/*
 * get, gat and touch in one: a hit is marked fetched and reported to the
 * policy, optionally gets a new exptime, and optionally a reference -- or,
 * with cp, is copied out under the stripe when it is small and in one piece.
 */
static struct item *lookup(struct engine *e, const char *key, size_t nkey, uint64_t hv,
                           bool touch, int64_t exptime, bool ref, enum engine_miss *why,
                           struct engine_copy *cp) {
    struct mtx *m = lock_of(e->locks, hv);
    if (why != NULL)
        *why = ENGINE_MISS_NONE;
    bool fast = store_has_get(e) && ref && !touch && !watching(e, ENGINE_WATCH_FETCH);
    mtx_lock(m);
    if (fast) {
        bool generic;               /* the back end's fast path; it is the same get */
        struct item *it = store_get_locked(e, key, nkey, hv, cp, &generic);
        if (!generic) {
            mtx_unlock(m);
            return it;
        }
    }
    struct item *it = store_find_locked(e, key, nkey, hv, why, NULL);
    if (it != NULL) {
        if (touch)
            it->exptime = expire_realtime(e, exptime);
        item_flag_set(it, ITEM_FETCHED);
        store_sync_locked(e, it, hv);
        store_hit_locked(e, it);
        const char *v = cp != NULL ? item_value_flat(it) : NULL;
        if (v != NULL && it->nbytes <= cp->max) {
            struct engine_hit h = {
                .key = item_key(it), .value = v, .nkey = it->nkey, .nbytes = it->nbytes,
                .flags = it->flags, .cas = item_cas(it), .clsid = it->clsid,
                .lru = engine_item_lru(e, it)};
            cp->fn(cp->arg, &h);
            cp->done = true;
            it = NULL;
        } else if (ref) {
            it = store_keep_locked(e, it);
        }
    }
    mtx_unlock(m);
    return it;
}

/*
 * A get of a key the segments' read-ahead found absent takes no lock and
 * skips lookup() (whose saved registers were 22 of such a miss's
 * instructions; callgrind).
 */
static inline bool absent_for_sure(struct engine *e, uint64_t hv) {
    return store_absent(e, hv);
}

uint64_t engine_key_hash(const char *key, size_t nkey) { return ht_hash(key, nkey); }

/* The read-ahead is the back end's (store_prefetch()). */
ITEM_PEEK void engine_prefetch(struct engine *e, const uint64_t *hv, unsigned n,
                               uint64_t stores) {
    _Static_assert(ENGINE_PREFETCH_MAX <= HT_PREFETCH_MAX, "one table read-ahead per call");
    if (n > ENGINE_PREFETCH_MAX)
        n = ENGINE_PREFETCH_MAX;
    store_prefetch(e, hv, n, stores);
}

void engine_prefetch_one(struct engine *e, uint64_t hv) { store_prefetch_one(e, hv); }

struct item *engine_get(struct engine *e, const char *key, size_t nkey, enum engine_miss *why) {
    return engine_get_hashed(e, key, nkey, ht_hash(key, nkey), why);
}

struct item *engine_get_hashed(struct engine *e, const char *key, size_t nkey, uint64_t hv,
                               enum engine_miss *why) {
    if (absent_for_sure(e, hv)) {
        if (why != NULL)
            *why = ENGINE_MISS_NONE;
        return NULL;
    }
    return lookup(e, key, nkey, hv, false, 0, true, why, NULL);
}

struct item *engine_get_copy(struct engine *e, const char *key, size_t nkey, uint64_t hv,
                             uint32_t max, engine_copy_fn fn, void *arg, bool *copied) {
    if (absent_for_sure(e, hv)) {
        *copied = false;
        return NULL;
    }
    struct engine_copy cp = {.fn = fn, .arg = arg, .max = max, .done = false};
    struct item *it = lookup(e, key, nkey, hv, false, 0, true, NULL, &cp);
    *copied = cp.done;
    return it;
}

struct item *engine_get_touch(struct engine *e, const char *key, size_t nkey, int64_t exptime,
                              enum engine_miss *why) {
    return lookup(e, key, nkey, ht_hash(key, nkey), true, exptime, true, why, NULL);
}

unsigned engine_touch(struct engine *e, const char *key, size_t nkey, int64_t exptime) {
    struct item *it = lookup(e, key, nkey, ht_hash(key, nkey), true, exptime, true, NULL, NULL);
    if (it == NULL)
        return 0;
    unsigned cls = it->clsid;
    store_unref(e, it);
    return cls;
}

/*
 * append/prepend: a new item of the combined size with old's flags and
 * exptime, old's value and it's in the right order, linked in old's place
 * with CAS cas (stripe held).  Returns the new item, with a reference the
 * caller drops once done with it (after the stripe), or NULL when no
 * memory could be found.
 */
static struct item *concat_locked(struct engine *e, struct item *old, struct item *it,
                                  bool append, uint64_t hv, uint64_t cas) {
    enum engine_alloc_err err;
    uint64_t n = (uint64_t)old->nbytes + it->nbytes;
    if (n > UINT32_MAX)
        return NULL;
    struct item *nit = store_alloc(e, item_key(old), old->nkey, old->flags, old->exptime,
                                  (uint32_t)n, &err);
    if (nit == NULL)
        return NULL;
    item_copy_value(nit, 0, append ? old : it);
    item_copy_value(nit, append ? old->nbytes : it->nbytes, append ? it : old);
    if (!store_replace_locked(e, old, nit, hv, cas)) {
        store_unref(e, nit);
        return NULL;
    }
    return nit;
}

/* How a requested CAS compares with the item's (memcached's cas_result). */
enum cas_cmp {
    CAS_NONE,       /* no CAS requested (0) */
    CAS_MATCH,
    CAS_BADVAL,
    CAS_STALE,      /* lower than the item's, and an invalidating cas store */
};

/*
 * memcached 1.6.18's do_store_item(), shared by engine_store() and
 * engine_mstore().  op says what to do (ENGINE_CAS when the request
 * compares on set/replace), cas is the requested CAS (0 none), o the meta
 * extras.  The CAS is compared once, up front, as memcached does: a zero
 * request never matches, so under -C a cas store always fails.
 *
 *   key present:  add      -> bump the old item, NOT_STORED
 *                 cas      -> MATCH: replace; STALE: replace, keeping the
 *                             old exptime and TOKEN_SENT, marked STALE;
 *                             else EXISTS
 *                 app/prep -> a CAS other than none/match: EXISTS; else
 *                             combine (NO_MEMORY if that fails)
 *                 set/repl -> replace
 *   key missing:  set, add -> link (add refused under a delete hold-off)
 *                 cas      -> NOT_FOUND
 *                 replace  -> NOT_STORED
 *                 app/prep -> NOT_STORED, or link as is when o->vivify
 *
 * A set on a held key links in the tombstone's place: a set ends the hold.
 */
static enum engine_store_result store_core(struct engine *e, struct item *it,
                                           enum engine_store_op op, uint64_t cas,
                                           const struct engine_mstore_opts *o,
                                           struct engine_mstore_out *out) {
    if (out != NULL)
        *out = (struct engine_mstore_out){0};
    if (item_has(it, ITEM_LINKED))
        return ENGINE_NOT_STORED;
    uint64_t hv = ht_hash(item_key(it), it->nkey);
    struct mtx *m = lock_of(e->locks, hv);
    enum engine_store_result r = ENGINE_NOT_STORED;
    struct item *hold, *stored = NULL, *made = NULL;
    store_prewrite(e, it, o->new_cas);  /* the bytes, before the stripe, where it can */
    mtx_lock(m);
    /* (memcached's set also logs the lookup it makes: a fetch) */
    if (store_has_set(e) && op == ENGINE_SET && cas == 0 &&
        !watching(e, ENGINE_WATCH_STORE | ENGINE_WATCH_FETCH) &&
        store_set_locked(e, it, hv, o->new_cas)) {
        if (out != NULL)        /* the back end's fast path; it is the same set */
            *out = (struct engine_mstore_out){.cas = it->cas, .nbytes = it->nbytes};
        mtx_unlock(m);
        return ENGINE_STORED;
    }
    struct item *old = store_find_locked(e, item_key(it), it->nkey, hv, NULL, &hold);
    if (old != NULL) {
        enum cas_cmp cc = cas == 0           ? CAS_NONE
                          : cas == old->cas  ? CAS_MATCH
                          : op == ENGINE_CAS && o->invalidate && cas < old->cas ? CAS_STALE
                                                                                : CAS_BADVAL;
        switch (op) {
        case ENGINE_ADD:
            store_hit_locked(e, old);
            break;
        case ENGINE_CAS:
            if (cc == CAS_STALE) {
                it->exptime = old->exptime;
                item_flag_set(it, ITEM_STALE);
                if (item_has(old, ITEM_TOKEN_SENT))
                    item_flag_set(it, ITEM_TOKEN_SENT);
            } else if (cc != CAS_MATCH) {
                r = ENGINE_EXISTS;
                break;
            }
            stored = it;
            break;
        case ENGINE_APPEND:
        case ENGINE_PREPEND:
            if (cc != CAS_NONE && cc != CAS_MATCH) {
                r = ENGINE_EXISTS;
                break;
            }
            stored = made = concat_locked(e, old, it, op == ENGINE_APPEND, hv, o->new_cas);
            if (stored == NULL)
                r = ENGINE_STORE_NO_MEMORY;
            break;
        case ENGINE_SET:
        case ENGINE_REPLACE:
            stored = it;
            break;
        }
        if (stored == it && !store_replace_locked(e, old, it, hv, o->new_cas)) {
            stored = NULL;
            r = ENGINE_STORE_NO_MEMORY;
        }
    } else {
        switch (op) {
        case ENGINE_ADD:
            if (hold == NULL)
                stored = it;
            break;
        case ENGINE_SET:
            stored = it;
            break;
        case ENGINE_CAS:
            r = ENGINE_NOT_FOUND;
            break;
        case ENGINE_REPLACE:
            break;
        case ENGINE_APPEND:
        case ENGINE_PREPEND:
            if (o->vivify && hold == NULL) {
                it->exptime = expire_realtime(e, o->vivify_exptime);
                stored = it;
            }
            break;
        }
        if (stored == it && !(hold != NULL ? store_replace_locked(e, hold, it, hv, o->new_cas)
                                           : store_link_locked(e, it, hv, o->new_cas))) {
            stored = NULL;
            r = ENGINE_STORE_NO_MEMORY;
        }
    }
    if (stored != NULL) {
        r = ENGINE_STORED;
        if (out != NULL)
            *out = (struct engine_mstore_out){
                .cas = stored->cas,
                .nbytes = stored->nbytes,
                .stale = item_has(stored, ITEM_STALE),
            };
    }
    /* memcached reports the item it made: an append's is the combined one */
    if (watching(e, ENGINE_WATCH_STORE))
        watch_store(e, stored != NULL ? stored : it, r, op);
    mtx_unlock(m);
    store_prewrite_drop(e, it);
    if (made != NULL)
        store_unref(e, made);
    return r;
}

/*
 * The classic commands: set/add/replace ignore cas; cas compares it;
 * append/prepend check a non-zero one.
 */
enum engine_store_result engine_store(struct engine *e, struct item *it,
                                      enum engine_store_op op, uint64_t cas,
                                      uint64_t *cas_out) {
    static const struct engine_mstore_opts plain;
    struct engine_mstore_out out;
    bool uses_cas = op == ENGINE_CAS || op == ENGINE_APPEND || op == ENGINE_PREPEND;
    enum engine_store_result r = store_core(e, it, op, uses_cas ? cas : 0, &plain, &out);
    if (r == ENGINE_STORED && cas_out != NULL)
        *cas_out = out.cas;
    return r;
}

/* ms: a compare turns set and replace into a cas store (process_mset_command). */
enum engine_store_result engine_mstore(struct engine *e, struct item *it,
                                       const struct engine_mstore_opts *o,
                                       struct engine_mstore_out *out) {
    enum engine_store_op op = ENGINE_SET;
    switch (o->mode) {
    case ENGINE_MSTORE_SET:
        op = o->compare ? ENGINE_CAS : ENGINE_SET;
        break;
    case ENGINE_MSTORE_REPLACE:
        op = o->compare ? ENGINE_CAS : ENGINE_REPLACE;
        break;
    case ENGINE_MSTORE_ADD:
        op = ENGINE_ADD;
        break;
    case ENGINE_MSTORE_APPEND:
        op = ENGINE_APPEND;
        break;
    case ENGINE_MSTORE_PREPEND:
        op = ENGINE_PREPEND;
        break;
    }
    /* it is unlinked and ours alone: its bits need no lock yet. */
    if (o->key_binary && !item_has(it, ITEM_LINKED))
        item_flag_set(it, ITEM_KEY_BINARY);
    return store_core(e, it, op, o->compare ? o->cas : 0, o, out);
}

/* delete: engine_mdelete() without its options. */
enum engine_delete_result engine_delete(struct engine *e, const char *key, size_t nkey,
                                        uint64_t cas) {
    struct engine_mdelete_opts o = {.compare = cas != 0, .cas = cas};
    switch (engine_mdelete(e, key, nkey, &o, NULL)) {
    case ENGINE_MDELETE_DELETED:
        return ENGINE_DELETED;
    case ENGINE_MDELETE_EXISTS:
        return ENGINE_DELETE_EXISTS;
    case ENGINE_MDELETE_NOT_FOUND:
    case ENGINE_MDELETE_INVALIDATED:    /* needs invalidate: not here */
    case ENGINE_MDELETE_NO_MEMORY:      /* needs remove_value: not here */
        break;
    }
    return ENGINE_DELETE_NOT_FOUND;
}

/*
 * memcached's do_add_delta() on the live item it (stripe held).  When the
 * new number is no longer than the stored bytes, memcached rewrites the
 * value in place: digits, then spaces up to the old length, and a new CAS.
 * We do the same when only the table holds the item (we hold its stripe,
 * so nobody can take a reference meanwhile).  When someone still holds it
 * -- typically a reply of the same connection not yet written -- rewriting
 * would change bytes already promised to that reader, so a new item with
 * the same padded bytes replaces it: the client sees exactly what memcached
 * shows, and nobody sees a torn value.  That copy stands for the item
 * memcached would have rewritten in place, so it keeps the item's state
 * (fetched, token sent, stale, binary key) and the meta steps act on it.
 * A longer number always gets a new item of exactly its digits, with no
 * state, as in memcached.  Checks run in memcached's order: empty or
 * chained value, then the CAS, then the number.  On success *linked is
 * the item that now stands for the one memcached updated in place (it, or
 * its copy), or NULL when memcached too would have made a new item (it
 * may be gone then).  A new item comes back in *made with a reference the
 * caller drops after the stripe.
 */
static enum engine_marith_result add_delta_locked(struct engine *e, struct item *it,
                                                  uint64_t hv, const struct engine_marith_opts *o,
                                                  struct engine_marith_out *res,
                                                  struct item **linked, struct item **made) {
    uint64_t v;
    if (it->nbytes == 0 || item_ntotal(it) > e->cfg.slab_chunk_max)    /* chained in slab */
        return ENGINE_MARITH_NON_NUMERIC;
    if (o->compare && o->cas != 0 && it->cas != o->cas)
        return ENGINE_MARITH_EXISTS;
    if (!num_u64_value(item_value(it), it->nbytes, &v))
        return ENGINE_MARITH_NON_NUMERIC;
    if (!o->decr)
        v += o->delta;
    else
        v = o->delta > v ? 0 : v - o->delta;
    char buf[24];
    int len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
    bool fits = (uint32_t)len <= it->nbytes;
    *linked = NULL;
    if (fits && atomic_load_explicit(&it->refcount, memory_order_acquire) == 1) {
        char *p = item_value(it);
        memcpy(p, buf, (size_t)len);
        memset(p + len, ' ', it->nbytes - (size_t)len);
        it->cas = !e->cfg.use_cas ? 0 : o->new_cas != 0 ? o->new_cas : item_next_cas(e);
        store_sync_locked(e, it, hv);
        store_hit_locked(e, it);
        res->cas = it->cas;
        *linked = it;
    } else {
        enum engine_alloc_err err;
        uint32_t nlen = fits ? it->nbytes : (uint32_t)len;
        struct item *nit = store_alloc(e, item_key(it), it->nkey, it->flags, it->exptime, nlen,
                                      &err);
        if (nit == NULL)
            return ENGINE_MARITH_NO_MEMORY;
        memcpy(item_value(nit), buf, (size_t)len);
        memset(item_value(nit) + len, ' ', nlen - (size_t)len);
        if (fits) {
            static const uint8_t kept[] = {ITEM_FETCHED, ITEM_TOKEN_SENT, ITEM_STALE,
                                           ITEM_KEY_BINARY};
            for (size_t i = 0; i < sizeof(kept); i++)
                if (item_has(it, kept[i]))
                    item_flag_set(nit, kept[i]);
            *linked = nit;
        }
        if (!store_replace_locked(e, it, nit, hv, o->new_cas)) {
            *linked = NULL;
            store_unref(e, nit);
            return ENGINE_MARITH_NO_MEMORY;
        }
        if (fits) {
            /* the copy is the in-place rewrite: no new item to memcached's total_items */
            struct eclass *c = &e->cls[nit->clsid];
            mtx_lock(&c->lock);
            c->total_items--;
            mtx_unlock(&c->lock);
        }
        res->cas = nit->cas;
        *made = nit;
    }
    res->value = v;
    return ENGINE_MARITH_OK;
}

/*
 * A number for a missing key (ma with vivify, binary incr with an initial
 * value): its decimal digits in a new item with flags 0 and no exptime
 * (the vivify step sets that), linked with CAS cas.  Returns the item,
 * with a reference the caller drops after the stripe, or NULL when no
 * memory could be found.
 */
static struct item *arith_create_locked(struct engine *e, const char *key, size_t nkey,
                                        uint64_t hv, uint64_t value, uint64_t cas) {
    enum engine_alloc_err err;
    char buf[24];
    int len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)value);
    struct item *it = store_alloc(e, key, nkey, 0, 0, (uint32_t)len, &err);
    if (it == NULL)
        return NULL;
    memcpy(item_value(it), buf, (size_t)len);
    if (!store_link_locked(e, it, hv, cas)) {
        store_unref(e, it);
        return NULL;
    }
    /* memcached stores it as an add, whose own lookup and store it reports */
    if (watching(e, ENGINE_WATCH_FETCH))
        watch_fetch(e, key, nkey, NULL, ENGINE_MISS_NONE);
    if (watching(e, ENGINE_WATCH_STORE))
        watch_store(e, it, ENGINE_STORED, ENGINE_ADD);
    return it;
}

/*
 * memcached's process_marithmetic_command(): add_delta_locked(), or create
 * on a miss, then the request-ordered touch/vivify/ttl steps on the item
 * memcached has in hand -- the created or rewritten item, or, when a new
 * item replaced it, the old one, so that a touch then changes only what
 * the reply shows (see engine.h).
 */
enum engine_marith_result engine_marith(struct engine *e, const char *key, size_t nkey,
                                        const struct engine_marith_opts *o,
                                        struct engine_marith_out *out) {
    uint64_t hv = ht_hash(key, nkey);
    struct mtx *m = lock_of(e->locks, hv);
    enum engine_marith_result r;
    struct engine_marith_out res = {0};
    struct item *hold, *linked = NULL;  /* the item whose exptime the steps set */
    struct item *made = NULL;           /* a new item, ours to drop */
    uint32_t exp = 0;
    mtx_lock(m);
    struct item *it = store_find_locked(e, key, nkey, hv, NULL, &hold);
    if (it == NULL) {
        r = !o->vivify ? ENGINE_MARITH_NOT_FOUND
            : hold != NULL ? ENGINE_MARITH_NOT_STORED
                           : ENGINE_MARITH_OK;
        if (r == ENGINE_MARITH_OK) {
            res.created = true;
            linked = made = arith_create_locked(e, key, nkey, hv, o->initial, o->new_cas);
            if (linked == NULL)
                r = ENGINE_MARITH_NO_MEMORY;
            else
                res.value = o->initial, res.cas = linked->cas;
        }
    } else {
        exp = it->exptime;              /* read first: a replaced item may be freed */
        res.clsid = it->clsid;
        r = add_delta_locked(e, it, hv, o, &res, &linked, &made);
    }
    if (r == ENGINE_MARITH_OK) {
        uint32_t now = expire_now(e);
        struct step st[3];
        unsigned n = 0;
        if (o->touch)
            st[n++] = (struct step){o->touch_at, STEP_TOUCH};
        if (o->vivify)
            st[n++] = (struct step){o->vivify_at, STEP_VIVIFY};
        st[n++] = (struct step){o->ttl_at, STEP_TTL};
        n = steps_sort(st, n);
        for (unsigned i = 0; i < n; i++) {
            if (st[i].kind == STEP_TOUCH)
                exp = expire_realtime(e, o->touch_exptime);
            else if (st[i].kind == STEP_VIVIFY && res.created)
                exp = expire_realtime(e, o->vivify_exptime);
            else if (st[i].kind == STEP_TTL)
                res.ttl = item_ttl(exp, now);
        }
        if (linked != NULL) {
            linked->exptime = exp;
            store_sync_locked(e, linked, hv);
        }
    }
    mtx_unlock(m);
    if (made != NULL)
        store_unref(e, made);
    if (out != NULL)
        *out = res;
    return r;
}

/* incr/decr: engine_marith() without its options. */
enum engine_arith_result engine_arith(struct engine *e, const char *key, size_t nkey,
                                      bool incr, uint64_t delta, uint64_t *value,
                                      uint64_t *cas_out) {
    struct engine_marith_opts o = {.decr = !incr, .delta = delta};
    struct engine_marith_out out;
    switch (engine_marith(e, key, nkey, &o, &out)) {
    case ENGINE_MARITH_OK:
        if (value != NULL)
            *value = out.value;
        if (cas_out != NULL)
            *cas_out = out.cas;
        return ENGINE_ARITH_OK;
    case ENGINE_MARITH_NON_NUMERIC:
        return ENGINE_ARITH_NON_NUMERIC;
    case ENGINE_MARITH_NO_MEMORY:
        return ENGINE_ARITH_NO_MEMORY;
    case ENGINE_MARITH_NOT_FOUND:
    case ENGINE_MARITH_EXISTS:          /* needs compare: not here */
    case ENGINE_MARITH_NOT_STORED:      /* needs vivify: not here */
        break;
    }
    return ENGINE_ARITH_NOT_FOUND;
}

/* The maintenance slice: the back end's (store_step_locked()), under step_lock. */
unsigned engine_step(struct engine *e, unsigned budget) {
    if (budget == 0)
        return 0;
    mtx_lock(&e->step_lock);
    unsigned work = store_step_locked(e, budget);
    mtx_unlock(&e->step_lock);
    return work;
}

bool engine_sizes_enable(struct engine *e, unsigned base) {
    if (!e->cfg.use_cas || !store_counts_sizes(e))
        return false;
    mtx_lock(&e->sizes_lock);
    if (e->sizes == NULL) {
        e->sizes_n = e->cfg.item_size_max / 32 + 1;
        e->sizes = calloc(e->sizes_n, sizeof(*e->sizes));
    }
    bool ok = e->sizes != NULL;
    if (ok && !atomic_load_explicit(&e->sizes_on, memory_order_relaxed)) {
        for (unsigned i = 0; i < e->sizes_n; i++)
            atomic_store_explicit(&e->sizes[i], 0, memory_order_relaxed);
        e->sizes_base = base;
        e->sizes_cas_min = item_next_cas(e);
        atomic_store_explicit(&e->sizes_on, true, memory_order_release);
    }
    mtx_unlock(&e->sizes_lock);
    return ok;
}

void engine_sizes_disable(struct engine *e) {
    mtx_lock(&e->sizes_lock);
    atomic_store_explicit(&e->sizes_on, false, memory_order_relaxed);
    mtx_unlock(&e->sizes_lock);
}

bool engine_sizes(struct engine *e, void (*fn)(void *arg, uint64_t bytes, uint64_t count),
                  void *arg) {
    mtx_lock(&e->sizes_lock);
    bool on = atomic_load_explicit(&e->sizes_on, memory_order_relaxed);
    for (unsigned i = 0; on && i < e->sizes_n; i++) {
        uint32_t n = atomic_load_explicit(&e->sizes[i], memory_order_relaxed);
        if (n != 0)
            fn(arg, (uint64_t)i * 32, n);
    }
    mtx_unlock(&e->sizes_lock);
    return on;
}

/* -m at run time (store_set_mem_limit(): segments keep theirs). */
void engine_set_mem_limit(struct engine *e, uint64_t bytes) {
    store_set_mem_limit(e, bytes);
}

void engine_lru_tune(struct engine *e, const struct evict_tune *t) {
    if (e->policy->tune == NULL)
        return;
    for (unsigned i = 1; i <= e->nclasses; i++) {
        mtx_lock(&e->cls[i].lock);
        e->policy->tune(e->cls[i].q, t);
        mtx_unlock(&e->cls[i].lock);
    }
}

void engine_dump_begin(struct engine *e, uint64_t *cursor) {
    mtx_lock(&e->step_lock);
    e->dumpers++;
    mtx_unlock(&e->step_lock);
    *cursor = 0;
}

void engine_dump_end(struct engine *e) {
    mtx_lock(&e->step_lock);
    e->dumpers--;
    mtx_unlock(&e->step_lock);
}

bool engine_dump_step(struct engine *e, uint64_t *cursor, unsigned budget, engine_dump_fn fn,
                      void *arg) {
    return store_dump_step(e, cursor, budget, fn, arg);
}

unsigned engine_nclasses(const struct engine *e) { return e->nclasses; }

unsigned engine_class_for(const struct engine *e, size_t ntotal) {
    return store_class_for(e, ntotal);
}

unsigned engine_item_lru(const struct engine *e, const struct item *it) {
    return lru_of_bits(e, evict_bits(it));
}

bool engine_class_stats(struct engine *e, unsigned id, struct engine_class_stats *out) {
    if (id < 1 || id > e->nclasses) {
        *out = (struct engine_class_stats){0};
        return false;
    }
    return store_class_stats(e, id, out);
}

void engine_stats(struct engine *e, struct engine_stats *out) {
    *out = (struct engine_stats){0};
    for (unsigned i = 1; i <= e->nclasses; i++) {
        struct engine_class_stats c;
        engine_class_stats(e, i, &c);
        out->curr_items += c.number;
        out->bytes += c.mem_requested;
        out->evictions += c.evicted;
        out->reclaimed += c.reclaimed;
        out->expired_unfetched += c.expired_unfetched;
        out->evicted_unfetched += c.evicted_unfetched;
        out->evicted_active += c.evicted_active;
        out->crawler_reclaimed += c.crawler_reclaimed;
        out->crawler_items_checked += c.crawler_items_checked;
        out->moves_to_cold += c.seg.moves_to_cold;
        out->moves_to_warm += c.seg.moves_to_warm;
        out->moves_within_lru += c.seg.moves_within_lru;
        out->active_slabs += c.total_pages > 0;
        mtx_lock(&e->cls[i].lock);
        out->total_items += e->cls[i].total_items;
        mtx_unlock(&e->cls[i].lock);
    }
    out->get_expired = atomic_load_explicit(&e->met_expired, memory_order_relaxed);
    out->get_flushed = atomic_load_explicit(&e->met_flushed, memory_order_relaxed);
    out->crawler_starts = atomic_load_explicit(&e->crawl_starts, memory_order_relaxed);
    store_stats(e, out);
}

void engine_stats_reset(struct engine *e) {
    for (unsigned i = 1; i <= e->nclasses; i++) {
        struct eclass *c = &e->cls[i];
        mtx_lock(&c->lock);
        c->total_items = 0;
        c->evicted = c->evicted_nonzero = c->evicted_time = 0;
        c->evicted_unfetched = c->evicted_active = 0;
        c->outofmemory = c->reclaimed = c->expired_unfetched = c->crawler_reclaimed = 0;
        atomic_store_explicit(&c->crawler_checked, 0, memory_order_relaxed);
        if (e->policy->segments != NULL)
            e->policy->segments(c->q, &c->lru_base);
        mtx_unlock(&c->lock);
    }
    atomic_store_explicit(&e->met_expired, 0, memory_order_relaxed);
    atomic_store_explicit(&e->met_flushed, 0, memory_order_relaxed);
    atomic_store_explicit(&e->crawl_starts, 0, memory_order_relaxed);
    store_stats_reset(e);
}
