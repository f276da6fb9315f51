/*
 * item_ext.c -- the slab back end's flash tier (memcached's extstore):
 * moving values to flash, reading them back, and letting them go.
 *
 * A value on flash is represented in memory by a header item: the same
 * key, client flags, TTL, CAS and state bits, marked ITEM_FLASH, whose own
 * value is a struct flash_loc saying where the value lies (flash.h).  It
 * is an ordinary item of a small class, linked, evicted and expired as any
 * other; only the paths that read a value know it.
 *
 *   writer (engine_ext_step)          reader (engine_get and kin: ext_read)
 *   --------------------------        ---------------------------------------
 *   pick a cold item of a big         find the header (stripe), keep a ref
 *   class; ref it (stripe)            allocate a full item of the value's size
 *   flash_write(key, value) -> loc    flash_read(loc) into it, CRC checked
 *   allocate a header, loc in it      one read in recache_rate: link it in the
 *   stripe: still the same item?      header's place (stripe), else hand it
 *     yes: header in its place        out unlinked: freed after the reply
 *     no:  forget loc                 gone, torn or unreadable: a miss, the
 *                                     header unlinked
 *
 * The writer is one thread (cellard's flash writer) under ext->lock.  What
 * it moves: items of at least item_size bytes (by class, as memcached's
 * slabs_clsid(ext_item_size)), unreferenced, live, at the class's cold end
 * as the eviction policy orders it (victim(), what the class would give up
 * next), idle item_age seconds -- or any age while the class is short of
 * free chunks and the page pool is down to an eighth of memory, so that
 * what memory would evict goes to flash instead (memcached's
 * storage_write_thread rule, which waits for an empty pool: the eighth
 * kept is for headers, which otherwise find memory full of values and
 * evict each other).
 *
 * A header's record on flash is released when the header's memory is
 * freed (item_free() calls flash_release()): after a delete, a replace, an
 * expiry, an eviction, or its value brought back to memory, once the last
 * reader lets it go.  The page mover's copy of a header clears the flag on
 * the old chunk first (item_move.c), so a move releases nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/evict_list.h"
#include "storage/store.h"

#define EXT_MIN_PAGES_FREE 3            /* chunks a class keeps free, in pages (memcached's) */
#define EXT_RESERVE 8                   /* pool pages kept for headers: an eighth of memory */
#define EXT_TRIES 5                     /* candidates looked at per item moved */
#define EXT_IOV_STACK 64
#define EXT_CALM 2                      /* seconds without evictions before a class gives pages */

struct ext {
    struct flash *fl;
    struct mtx lock;                    /* the writer: one step at a time */
    struct mtx tune_lock;               /* cfg */
    struct engine_ext_config cfg;
    _Atomic uint32_t recache_count;
    _Atomic uint64_t gets, oom, recaches, misses, badcrc;
    _Atomic uint64_t compact_lost, compact_rescues, compact_skipped;
    uint64_t pressure[ENGINE_MAX_CLASSES];  /* each class's evictions and failed
                                               allocations at the writer's last look */
    uint32_t calm_since[ENGINE_MAX_CLASSES];    /* engine second they last changed */
};

/* ---- create, destroy, settings ---- */

bool ext_create(struct engine *e, char *err, size_t errlen) {
    const struct engine_ext_config *c = &e->cfg.ext;
    if (c->store.nfiles == 0)
        return true;
    if (e->seg != NULL) {
        snprintf(err, errlen, "the segment store (storage=seg) takes no flash tier (ext_path)");
        return false;
    }
    struct ext *x = calloc(1, sizeof(*x));
    if (x == NULL) {
        snprintf(err, errlen, "out of memory creating the flash tier");
        return false;
    }
    x->fl = flash_create(&c->store, err, errlen);
    if (x->fl == NULL) {
        free(x);
        return false;
    }
    mtx_init(&x->lock, true);
    mtx_init(&x->tune_lock, true);
    x->cfg = *c;
    for (unsigned i = 0; i < ENGINE_MAX_CLASSES; i++)
        x->calm_since[i] = expire_now(e);       /* nobody is calm before it is seen */
    unsigned quarter = flash_pages(x->fl) / 4;
    if (x->cfg.compact_under == 0)
        x->cfg.compact_under = quarter;
    if (x->cfg.drop_under == 0)
        x->cfg.drop_under = quarter;
    e->ext = x;
    e->flash = x->fl;
    slab_prefill(e->slab);              /* as memcached does with extstore */
    return true;
}

void ext_destroy(struct engine *e) {
    struct ext *x = e->ext;
    if (x == NULL)
        return;
    e->flash = NULL;
    flash_destroy(&x->fl);
    mtx_destroy(&x->lock);
    mtx_destroy(&x->tune_lock);
    free(x);
    e->ext = NULL;
}

void engine_ext_get(struct engine *e, struct engine_ext_config *out) {
    if (e->ext == NULL) {
        *out = e->cfg.ext;
        return;
    }
    mtx_lock(&e->ext->tune_lock);
    *out = e->ext->cfg;
    mtx_unlock(&e->ext->tune_lock);
}

void engine_ext_tune(struct engine *e, const struct engine_ext_config *c) {
    struct ext *x = e->ext;
    if (x == NULL)
        return;
    mtx_lock(&x->tune_lock);
    struct flash_config store = x->cfg.store;
    unsigned threads = x->cfg.threads, depth = x->cfg.io_depth;
    x->cfg = *c;
    x->cfg.store = store;
    x->cfg.threads = threads;
    x->cfg.io_depth = depth;
    mtx_unlock(&x->tune_lock);
}

static struct engine_ext_config settings_now(struct ext *x) {
    mtx_lock(&x->tune_lock);
    struct engine_ext_config c = x->cfg;
    mtx_unlock(&x->tune_lock);
    return c;
}

struct flash *engine_flash(struct engine *e) { return e->ext != NULL ? e->ext->fl : NULL; }

/* Gives dst the bits of mask that src has (dst private to the caller, or its stripe held). */
static void flags_take(struct item *dst, const struct item *src, uint16_t mask) {
    uint16_t f = atomic_load_explicit(&dst->iflags, memory_order_relaxed) |
                 (atomic_load_explicit(&src->iflags, memory_order_relaxed) & mask);
    atomic_store_explicit(&dst->iflags, f, memory_order_relaxed);
}

/* ---- reads ---- */

/* The value's pieces in it, on the stack when few, else malloc'd (*heap). */
static int value_iov(struct engine *e, struct item *it, struct iovec *stack, struct iovec **iov) {
    int max = engine_item_iov_max(e);
    *iov = stack;
    if (max > EXT_IOV_STACK) {
        *iov = malloc((size_t)max * sizeof(**iov));
        if (*iov == NULL)
            return -1;
    }
    return engine_item_iov(it, *iov, max);
}

/* Drops the header it met, unless somebody replaced it meanwhile (no locks held). */
static void drop_header(struct engine *e, struct item *hdr, uint64_t hv) {
    struct mtx *m = lock_of(e->locks, hv);
    mtx_lock(m);
    if (item_has(hdr, ITEM_LINKED))
        store_unlink_locked(e, hdr, hv, UNLINK_DELETE);
    mtx_unlock(m);
}

/*
 * The value of header hdr (a reference held, no locks) read back into a
 * fresh item with hdr's key, flags, TTL, CAS and state, which the caller
 * gets with one reference; hdr's reference is dropped.  NULL when the
 * value cannot be had: no memory for it (*why ENGINE_MISS_NOMEM), or the
 * record gone, torn or unreadable (a miss; the header is unlinked).  A
 * header read before (again: it was marked fetched before this read; a
 * new header is not, as memcached's) is hit at least twice, and one such
 * read in recache_rate links the item in hdr's place (memcached's rule,
 * less its "within the last minute", which a second hit mostly is).
 */
struct item *ext_read(struct engine *e, struct item *hdr, uint64_t hv, bool again,
                      enum engine_miss *why) {
    struct ext *x = e->ext;
    struct flash_loc loc = item_flash_loc(hdr);
    enum engine_alloc_err err;
    struct item *it = store_alloc(e, item_key(hdr), hdr->nkey, hdr->flags, hdr->exptime,
                                  loc.len, &err);
    if (it == NULL) {
        atomic_fetch_add_explicit(&x->oom, 1, memory_order_relaxed);
        store_unref(e, hdr);
        if (why != NULL)
            *why = ENGINE_MISS_NOMEM;
        return NULL;
    }
    atomic_fetch_add_explicit(&x->gets, 1, memory_order_relaxed);      /* as memcached: read asked */
    struct iovec stack[EXT_IOV_STACK], *iov;
    int n = value_iov(e, it, stack, &iov);
    enum flash_read_result r = n < 0 ? FLASH_IOERR : flash_read(x->fl, &loc, iov, n);
    if (iov != stack)
        free(iov);
    if (r != FLASH_OK) {
        atomic_fetch_add_explicit(&x->misses, 1, memory_order_relaxed);
        if (r == FLASH_BADCRC)
            atomic_fetch_add_explicit(&x->badcrc, 1, memory_order_relaxed);
        store_unref(e, it);
        drop_header(e, hdr, hv);
        store_unref(e, hdr);
        return NULL;
    }
    atomic_store_explicit(&it->cas, item_cas(hdr), memory_order_relaxed);
    flags_take(it, hdr, ITEM_FETCHED | ITEM_TOKEN_SENT | ITEM_STALE | ITEM_KEY_BINARY);
    uint32_t rate = settings_now(x).recache_rate;
    if (rate != 0 && again &&
        atomic_fetch_add_explicit(&x->recache_count, 1, memory_order_relaxed) % rate == 0) {
        struct mtx *m = lock_of(e->locks, hv);
        mtx_lock(m);
        if (item_has(hdr, ITEM_LINKED)) {
            it->exptime = hdr->exptime;
            store_replace_locked(e, hdr, it, hv, item_cas(hdr));
            atomic_fetch_add_explicit(&x->recaches, 1, memory_order_relaxed);
        }
        mtx_unlock(m);
    }
    store_unref(e, hdr);
    return it;
}

/* ---- the writer ---- */

/* Whether class id is short of chunks with no page to be had (memcached's push-out rule). */
static bool class_short(struct engine *e, unsigned id) {
    struct slab_class_stats st;
    slab_class_stats(e->slab, id, &st);
    uint64_t per_page = st.total_pages > 0 ? st.total_chunks / st.total_pages : 0;
    if (st.free_chunks + st.free_chunks_end >= per_page * EXT_MIN_PAGES_FREE)
        return false;
    uint64_t limit = slab_limit(e->slab);
    if (limit == 0)
        return false;
    return slab_pool_pages(e->slab) <= limit / e->cfg.page_size / EXT_RESERVE;
}

/*
 * A candidate of class id to move to flash, with a reference taken, or
 * NULL: the policy's next victims, skipping headers, tombstones, dead,
 * held, busy and (unless age is 0) recently used items.
 */
static struct item *pick(struct engine *e, unsigned id, uint32_t now, uint32_t age) {
    struct eclass *c = &e->cls[id];
    struct item *it = NULL, *got = NULL;
    mtx_lock(&c->lock);
    for (int n = 0; n < EXT_TRIES && c->number > 0; n++) {
        it = e->policy->victim(c->q, it);
        if (it == NULL)
            break;
        if (item_has(it, ITEM_FLASH | ITEM_HOLD) ||
            (age != 0 && (now < it->atime || now - it->atime < age)))
            continue;
        uint64_t hv = ht_hash(it->data, it->nkey);
        if (!lock_try(e->locks, hv))
            continue;
        if (atomic_load_explicit(&it->refcount, memory_order_acquire) == 1 &&
            expire_dead(e, it, now) == ENGINE_MISS_NONE) {
            item_ref(e, it);
            got = it;
        }
        mtx_unlock(lock_of(e->locks, hv));
        if (got != NULL)
            break;
    }
    mtx_unlock(&c->lock);
    return got;
}

/* The page bucket a value goes to (flash.h). */
static enum flash_bucket bucket_of(struct engine *e, const struct item *it,
                                   const struct engine_ext_config *c, uint32_t now) {
    if (c->low_ttl != 0 && it->exptime != 0 && it->exptime > now &&
        it->exptime - now < c->low_ttl)
        return FLASH_B_LOWTTL;
    return item_ntotal(it) > e->cfg.slab_chunk_max ? FLASH_B_CHUNKED : FLASH_B_DEFAULT;
}

/*
 * Moves one item of class id to flash: its value written, a header linked
 * in its place if nobody changed it meanwhile.  false when there was
 * nothing to move or flash took no more.
 */
static bool move_one(struct engine *e, unsigned id, uint32_t now, uint32_t age,
                     const struct engine_ext_config *c) {
    struct ext *x = e->ext;
    struct item *it = pick(e, id, now, age);
    if (it == NULL)
        return false;
    uint64_t hv = ht_hash(it->data, it->nkey);
    uint64_t cas = item_cas(it);
    struct iovec stack[EXT_IOV_STACK], *iov;
    int n = value_iov(e, it, stack, &iov);
    struct flash_loc loc;
    bool ok = n >= 0 && flash_write(x->fl, bucket_of(e, it, c, now), item_key(it), it->nkey,
                                    iov, n, it->nbytes, &loc);
    if (iov != stack)
        free(iov);
    if (!ok) {
        store_unref(e, it);
        return false;
    }
    enum engine_alloc_err err;
    struct item *hdr = store_alloc(e, item_key(it), it->nkey, it->flags, it->exptime,
                                   sizeof(loc), &err);
    if (hdr == NULL) {
        flash_release(x->fl, &loc);
        store_unref(e, it);
        return false;
    }
    memcpy(hdr->data + hdr->nkey, &loc, sizeof(loc));
    item_flag_set(hdr, ITEM_FLASH);     /* from here, freeing hdr releases loc */
    struct mtx *m = lock_of(e->locks, hv);
    mtx_lock(m);
    if (item_has(it, ITEM_LINKED) && item_cas(it) == cas) {
        flags_take(hdr, it, ITEM_TOKEN_SENT | ITEM_STALE | ITEM_KEY_BINARY);  /* not read yet */
        hdr->exptime = it->exptime;     /* a touch may have come meanwhile */
        store_replace_locked(e, it, hdr, hv, cas);
    }
    mtx_unlock(m);
    store_unref(e, hdr);                /* an unlinked one goes, and its record with it */
    store_unref(e, it);
    return true;
}

/*
 * memcached's extstore automover, in its simplest form.  A value leaving
 * for flash frees a chunk of its class but no page, while its header needs
 * a chunk of a small class: left alone, the value classes keep the memory
 * and the headers evict each other.  So while the global pool is empty, a
 * value class whose free chunks come to more than two pages, and which
 * has neither evicted nor failed an allocation for EXT_CALM seconds (a
 * class under a burst of stores needs its chunks: while the mover empties
 * a page, that page's chunks serve nobody, and a burst would find none
 * free and nothing to evict outside it), gives one
 * page back to the pool (the page mover, run by engine_step(), moves what
 * is left on its oldest page into the free chunks), and the next class
 * that needs a page takes it from there.  One page at a time, as the
 * mover goes.
 */
static void pages_back(struct engine *e, unsigned first, uint32_t now) {
    struct ext *x = e->ext;
    bool pool_empty = slab_pool_pages(e->slab) == 0;
    bool asked = false;
    for (unsigned id = first; id <= e->nclasses; id++) {
        struct eclass *ec = &e->cls[id];
        mtx_lock(&ec->lock);
        uint64_t p = ec->evicted + ec->outofmemory;
        mtx_unlock(&ec->lock);
        if (p != x->pressure[id]) {
            x->pressure[id] = p;
            x->calm_since[id] = now;
        }
        bool calm = now - x->calm_since[id] >= EXT_CALM;
        if (!pool_empty || asked || !calm)
            continue;
        struct slab_class_stats st;
        slab_class_stats(e->slab, id, &st);
        uint64_t per_page = st.total_pages > 0 ? st.total_chunks / st.total_pages : 0;
        if (per_page > 0 && st.total_pages >= 2 &&
            st.free_chunks + st.free_chunks_end > 2 * per_page)
            asked = store_reassign(e, (int32_t)id, 0) == ENGINE_REASSIGN_OK;
    }
}

/* ---- compaction ---- */

struct compact {
    struct engine *e;
    bool drop;                          /* keep only what was read lately */
    unsigned rescues, lost, skipped;
};

/* Whether two locations name the same record. */
static bool loc_same(const struct flash_loc *a, const struct flash_loc *b) {
    return a->page == b->page && a->version == b->version && a->offset == b->offset;
}

/*
 * One record of the page being compacted (flash_compact_scan()): if the
 * key's header still points at it, the value is written anew to the
 * compaction bucket and a header for the new place put in the old one's
 * (a new item, since readers read a header's location without the
 * stripe), so that the old record is let go as the old header is freed;
 * in drop mode, a header in the policy's cold segment (unread lately, as
 * memcached's COLD LRU test) is unlinked instead.  Records whose headers
 * are gone or elsewhere were let go already.
 */
static void compact_one(void *arg, const char *key, unsigned nkey, const struct flash_loc *loc,
                        const char *value) {
    struct compact *c = arg;
    struct engine *e = c->e;
    uint64_t hv = ht_hash(key, nkey);
    struct mtx *m = lock_of(e->locks, hv);
    /* any file write the rewrite needs, before the stripe: workers wait on it */
    bool room = flash_reserve(e->flash, FLASH_B_COMPACT, nkey, loc->len);
    mtx_lock(m);
    struct item *hdr = store_find_locked(e, key, nkey, hv, NULL, NULL);
    struct flash_loc at;
    if (hdr == NULL || !item_has(hdr, ITEM_FLASH) || (at = item_flash_loc(hdr), !loc_same(&at, loc))) {
        mtx_unlock(m);
        return;
    }
    if (c->drop && !item_has(hdr, ITEM_TEMP) && lru_of_bits(e, evict_bits(hdr)) == EVICT_COLD) {
        store_unlink_locked(e, hdr, hv, UNLINK_DELETE);
        c->skipped++;
        mtx_unlock(m);
        return;
    }
    struct iovec iov = {(void *)value, loc->len};
    struct flash_loc nloc;
    enum engine_alloc_err err;
    struct item *nh = NULL;
    if (room && flash_write(e->flash, FLASH_B_COMPACT, key, nkey, &iov, 1, loc->len, &nloc)) {
        nh = store_alloc(e, key, nkey, hdr->flags, hdr->exptime, sizeof(nloc), &err);
        if (nh == NULL)
            flash_release(e->flash, &nloc);
    }
    if (nh == NULL) {
        c->lost++;                      /* the header stays where it was, as memcached's */
        mtx_unlock(m);
        return;
    }
    memcpy(nh->data + nh->nkey, &nloc, sizeof(nloc));
    flags_take(nh, hdr, ITEM_FLASH | ITEM_FETCHED | ITEM_TOKEN_SENT | ITEM_STALE | ITEM_KEY_BINARY);
    store_replace_locked(e, hdr, nh, hv, item_cas(hdr));
    c->rescues++;
    mtx_unlock(m);
    store_unref(e, nh);
}

/* One page compacted, when memcached's rule picks one; 1 if one was. */
static unsigned compact_step(struct engine *e, const struct engine_ext_config *cfg) {
    struct ext *x = e->ext;
    bool drop;
    int page = flash_compact_pick(x->fl, cfg->compact_under, cfg->max_frag, cfg->drop_unread,
                                  cfg->drop_under, &drop);
    if (page < 0)
        return 0;
    char *buf = malloc(cfg->store.page_size);   /* a page's worth, while it lasts */
    if (buf == NULL)
        return 0;
    struct compact c = {.e = e, .drop = drop};
    bool ok = flash_compact_scan(x->fl, (unsigned)page, buf, compact_one, &c);
    free(buf);
    atomic_fetch_add_explicit(&x->compact_rescues, c.rescues, memory_order_relaxed);
    atomic_fetch_add_explicit(&x->compact_lost, c.lost, memory_order_relaxed);
    atomic_fetch_add_explicit(&x->compact_skipped, c.skipped, memory_order_relaxed);
    /* what is left on the page is held by readers now, or unreadable: it goes
       when they let go (reclaim), or at once if nothing could be read.
       FIXME: a record that failed its CRC or could not be rewritten keeps
       the page, which is then picked again at every step. */
    if (!ok)
        flash_page_free(x->fl, (unsigned)page);
    return 1;
}

unsigned engine_ext_step(struct engine *e, unsigned budget) {
    struct ext *x = e->ext;
    if (x == NULL)
        return 0;
    struct engine_ext_config c = settings_now(x);
    uint32_t now = expire_now(e);
    unsigned first = store_class_for(e, sizeof(struct item) + c.item_size), done = 0;
    if (first == 0)
        first = e->nclasses + 1;        /* item_size beyond the largest: nothing moves */
    mtx_lock(&x->lock);
    for (unsigned id = first; id <= e->nclasses && done < budget; id++) {
        uint32_t age = class_short(e, id) ? 0 : c.item_age;
        if (age == UINT32_MAX)
            continue;
        while (done < budget && move_one(e, id, now, age, &c))
            done++;
    }
    done += flash_reclaim(x->fl);
    pages_back(e, first, now);
    done += compact_step(e, &c);
    done += flash_reclaim(x->fl);
    mtx_unlock(&x->lock);
    return done;
}

void ext_stats(struct engine *e, struct engine_stats *out) {
    struct ext *x = e->ext;
    if (x == NULL)
        return;
    out->ext_on = true;
    out->get_extstore = atomic_load_explicit(&x->gets, memory_order_relaxed);
    out->get_oom_extstore = atomic_load_explicit(&x->oom, memory_order_relaxed);
    out->recache_from_extstore = atomic_load_explicit(&x->recaches, memory_order_relaxed);
    out->miss_from_extstore = atomic_load_explicit(&x->misses, memory_order_relaxed);
    out->badcrc_from_extstore = atomic_load_explicit(&x->badcrc, memory_order_relaxed);
    out->extstore_compact_lost = atomic_load_explicit(&x->compact_lost, memory_order_relaxed);
    out->extstore_compact_rescues =
        atomic_load_explicit(&x->compact_rescues, memory_order_relaxed);
    out->extstore_compact_skipped =
        atomic_load_explicit(&x->compact_skipped, memory_order_relaxed);
    flash_stats(x->fl, &out->flash);
}
