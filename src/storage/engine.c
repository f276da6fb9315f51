/*
 * engine.c -- the engine API: config check, create/destroy, the clock and
 * flush_all, lookups and read-ahead, memcached's store and delete
 * semantics (the classic commands and meta set share one path), and the
 * maintenance step.  incr/decr and meta arithmetic are in engine_arith.c;
 * meta get, meta delete and the delete hold-off in lease.c; sizes, dump
 * and stats in engine_stats.c.
 *
 * Every key operation has the same shape: hash the key, take its item
 * stripe, find the live item (unlinking a dead one found on the way), act,
 * release the stripe.  What is done to items goes through store.h to the
 * back end that runs (item.c: slab items; item_seg.c: segments); time and
 * expiry rules are in expire.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
        .automove_ratio = 0.8,
        .automove_window = 30,
        .temp_ttl = -1,
        .ext = {.store = {.page_size = 64 * MiB, .wbuf_size = 4 * MiB},
                .item_size = 512, .item_age = UINT32_MAX, .recache_rate = 2000,
                .max_frag = 0.8, .max_sleep_us = 1000000, .threads = 1, .io_depth = 1},
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
    mtx_init(&e->mv.lock, !cfg->single_thread);
    expire_init(e, (uint32_t)time(NULL));
    atomic_init(&e->cas, 0);
    atomic_init(&e->crawl_on, cfg->crawl);
    atomic_init(&e->met_expired, 0);
    atomic_init(&e->met_flushed, 0);
    atomic_init(&e->crawl_starts, 0);
    atomic_init(&e->lru_flat, cfg->lru_flat);
    atomic_init(&e->temp_lim, 0);
    atomic_init(&e->wheels, false);

    if (store_create(e, err, errlen) && ext_create(e, err, errlen))
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
    ext_destroy(e);
    store_destroy(e);
    for (unsigned i = 1; i <= e->nclasses; i++) {
        if (e->cls[i].q != NULL)
            e->policy->destroy(e->cls[i].q);
        wheel_deinit(&e->cls[i].wheel);
        mtx_destroy(&e->cls[i].lock);
    }
    ht_destroy(&e->ht);
    lock_destroy(&e->locks);
    slab_destroy(&e->slab);
    mtx_destroy(&e->step_lock);
    mtx_destroy(&e->sizes_lock);
    free((void *)e->sizes);
    free(e->mv.win);
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
        bool again = item_has(it, ITEM_FETCHED);
        item_flag_set(it, ITEM_FETCHED);
        store_sync_locked(e, it, hv);
        store_hit_locked(e, it);
        if (__builtin_expect(item_has(it, ITEM_FLASH), 0)) {
            it = store_keep_locked(e, it);      /* the value is read without the stripe */
            mtx_unlock(m);
            return ext_read(e, it, hv, again, why);
        }
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
                             uint32_t max, engine_copy_fn fn, void *arg, bool *copied,
                             enum engine_miss *why) {
    if (absent_for_sure(e, hv)) {
        *copied = false;
        if (why != NULL)
            *why = ENGINE_MISS_NONE;
        return NULL;
    }
    struct engine_copy cp = {.fn = fn, .arg = arg, .max = max, .done = false};
    struct item *it = lookup(e, key, nkey, hv, false, 0, true, why, &cp);
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
            if (item_has(old, ITEM_FLASH))      /* value on flash: NOT_STORED, as memcached */
                break;
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

/* The maintenance slice: the back end's (store_step_locked()), under step_lock. */
enum engine_crawl_result engine_crawl_request(struct engine *e, uint64_t classes) {
    if (classes == 0)
        return ENGINE_CRAWL_NOTSTARTED;
    mtx_lock(&e->step_lock);
    enum engine_crawl_result r = store_crawl_request_locked(e, classes);
    mtx_unlock(&e->step_lock);
    return r;
}

unsigned engine_step(struct engine *e, unsigned budget) {
    if (budget == 0)
        return 0;
    mtx_lock(&e->step_lock);
    unsigned work = store_step_locked(e, budget);
    mtx_unlock(&e->step_lock);
    return work;
}
