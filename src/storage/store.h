/*
 * store.h -- the one seam between the engine's shared code and its store
 * back ends: slab items (item.c on slab.c and ht.c) and segments
 * (item_seg.c on seg*.c, -o storage=seg).
 *
 * engine.c, engine_*.c, lease.c and store.c hold memcached's semantics
 * once, written against struct item and the store_* operations below.
 * Each operation is a static inline function that tests which back end
 * runs (e->seg) and calls that back end's primitive: item_* for slab
 * items, segv_* or seg_store_* for segments.  This header is the only
 * place that makes that test; the shared code never asks, and the two
 * back ends never call each other.  The functions are inline, not a table
 * of function pointers, so that under LTO the slab hot path (find, link,
 * unref) inlines into the engine's callers as it did before the seam, and
 * the test costs one load and one predictable branch.
 *
 *                 engine.c  engine_*.c  lease.c  store.c
 *                        \      |          |      /
 *                                store.h
 *                     /                         \
 *          item.c (slab items)             item_seg.c (segment views)
 *          slab.c ht.c evict_*.c           seg.c seg_index.c seg_ext.c
 *                     \                         /   seg_evict_*.c seg_move.c
 *               expire.c  watch.c  sizes.c  lock.c  (below both)
 *
 * The operations follow the engine's locking contract (engine_int.h):
 * those ending in _locked expect the key's item stripe held.  What each
 * returns and who owns the item is as for the slab primitive it calls
 * (item.c), and item_seg.c's opening says how segment views keep those
 * promises.  A few operations exist for one back end only, each guarded by
 * a question the shared code asks first (store_has_get(), store_has_set()):
 * a back end that lacks them answers no and is never called.
 *
 * Short TTLs.  The slab back end keeps items whose TTL is at most
 * temporary_ttl apart from the eviction policy, in a wheel of per-second
 * lists per class (wheel.h, store_lru_temp()), reclaimed in the second
 * they expire.  The segment back end has no such list and needs none: its
 * items are appended to segments of their TTL range (seg.c's TTL buckets),
 * and a segment whose items have all expired is freed whole by its step,
 * which is the wheel's reclaim done a segment at a time; so
 * store_lru_temp() leaves it as it is.  A requested crawl
 * (store_crawl_request_locked()) has no classes to walk there either.
 *
 * Two features to come plug in here, each as one more operation (or
 * step) that both back ends implement, so that the shared code stays as it
 * is:
 *   - Moving an item between segments.  The slab back end's page mover
 *     (item_move.c: store_reassign(), run by store_step_locked()) moves
 *     pages between classes; segments have no classes, and seg_move.c's
 *     seg_relocate() already moves the items the merge and S3-FIFO keep.
 *   - A memory file that survives a restart.  Each back end would allocate
 *     its arena (slab pages, segments) from a file mapping instead of the
 *     heap at store_create(), and a store_save(e) at shutdown and a
 *     store_restore(e) at start would write and check the metadata (class
 *     and segment tables, the clock) that lets the items be found again.
 *
 * Values on flash (memcached's extstore) are the slab back end's alone
 * (item_ext.c on flash.c): a value moved there leaves a header item
 * (ITEM_FLASH) in memory, and the shared lookups hand such an item to
 * ext_read(), which reads the value back into a fresh item.  Segments
 * take no flash tier: a segment is already the unit a flash tier would
 * write, and reading a segment view back would need its own path.
 */
#ifndef CELLAR_STORAGE_STORE_H
#define CELLAR_STORAGE_STORE_H

#include <string.h>

#include "storage/engine_int.h"
#include "storage/ht.h"
#include "storage/seg.h"
#include "storage/store_seg.h"
#include "storage/store_slab.h"

/* ---- configuration, create, destroy ---- */

/* Whether c->policy names an eviction the configured back end can run. */
static inline bool store_policy_known(const struct engine_config *c) {
    return evict_policy_find(c->policy) != NULL ||
           (c->seg && c->policy != NULL && strcmp(c->policy, "merge") == 0);
}

/* The back end's own checks, after the shared ones (memcached's messages). */
static inline bool store_config_check(const struct engine_config *c, char *err, size_t errlen) {
    if (c->seg)
        return segv_config_check(c, err, errlen);
    return true;
}

/*
 * Picks the eviction policy and builds the back end's memory, classes and
 * index into e, whose shared fields (clock, locks' sizes, counters) are
 * set.  On failure says why in err; the caller destroys e.
 */
static inline bool store_create(struct engine *e, char *err, size_t errlen) {
    if (e->cfg.seg)
        return segv_create(e, err, errlen);
    if (!item_create(e, err, errlen))
        return false;
    item_move_set(e, e->cfg.automove, e->cfg.automove_ratio, e->cfg.automove_window);
    return true;
}

/* The back end's part of engine_destroy() (NULL-safe, as that is). */
static inline void store_destroy(struct engine *e) {
    if (e->seg != NULL)
        seg_store_destroy(&e->seg);
}

/* ---- the item primitives ---- */

/* The item linked under key, dead or alive, or NULL (stripe held). */
static inline struct item *store_lookup_locked(struct engine *e, const char *key, size_t nkey,
                                               uint64_t hv) {
    if (e->seg != NULL)
        return segv_lookup_locked(e, key, nkey, hv);
    return ht_find_locked(e->ht, hv, key, nkey);
}

/*
 * A new unlinked item with one reference for the caller, exptime in engine
 * seconds; NULL with *err set when too large or out of memory.
 */
static inline struct item *store_alloc(struct engine *e, const char *key, size_t nkey,
                                       uint32_t flags, uint32_t exptime, uint32_t nbytes,
                                       enum engine_alloc_err *err) {
    if (e->seg != NULL)
        return segv_alloc(e, key, nkey, flags, exptime, nbytes, err);
    return item_alloc(e, key, nkey, flags, exptime, nbytes, err);
}

/* Frees an item whose last reference went (item_free() stays out of line). */
static inline void store_free(struct engine *e, struct item *it) {
    if (e->seg != NULL)
        segv_free(e, it);
    else
        item_free(e, it);
}

/* Drops one reference, freeing the item on the last. */
static inline void store_unref(struct engine *e, struct item *it) {
    if (item_deref(e, it) == 1)
        store_free(e, it);
}

/*
 * A reference for the caller on a found item (stripe held): the item
 * itself, or under storage=seg a held view (NULL when out of memory).
 */
static inline struct item *store_keep_locked(struct engine *e, struct item *it) {
    if (e->seg != NULL)
        return segv_keep_locked(e, it);
    item_ref(e, it);
    return it;
}

/*
 * Writes back what the shared code changed in a found item (exptime, cas,
 * state bits).  Slab items are the memory itself: nothing to do.
 */
static inline void store_sync_locked(struct engine *e, struct item *it, uint64_t hv) {
    if (e->seg != NULL)
        segv_sync_locked(e, it, hv);
}

/*
 * Links it under its key (stripe held, key not present) with CAS cas (0:
 * the next one; always 0 under -C), plus the table's reference, and counts
 * the store.  Fails only under storage=seg, when no segment could be had.
 */
static inline bool store_link_locked(struct engine *e, struct item *it, uint64_t hv,
                                     uint64_t cas) {
    if (e->seg != NULL)
        return segv_link_locked(e, it, hv, cas);
    return item_link_locked(e, it, hv, cas);
}

/* Unlinks it (stripe held) and drops the table's reference; why picks the counter. */
static inline void store_unlink_locked(struct engine *e, struct item *it, uint64_t hv,
                                       enum unlink_why why) {
    if (e->seg != NULL) {
        if (item_has(it, ITEM_LINKED))
            segv_unlink_locked(e, it, hv);
        return;
    }
    item_unlink_locked(e, it, hv, why);
}

/* Puts it in old's place (stripe held); cas and failure as for store_link_locked(). */
static inline bool store_replace_locked(struct engine *e, struct item *old, struct item *it,
                                        uint64_t hv, uint64_t cas) {
    if (e->seg != NULL)
        return segv_replace_locked(e, old, it, hv, cas);
    return item_replace_locked(e, old, it, hv, cas);
}

/* A hit on a linked item, for the eviction policy (segments keep no per-item order). */
static inline void store_hit_locked(struct engine *e, struct item *it) {
    if (e->seg == NULL)
        item_hit_locked(e, it);
}

/* ---- fast paths, prewrite, read-ahead ---- */

/* Whether the back end has its own get (store_get_locked()); asked before the stripe. */
static inline bool store_has_get(const struct engine *e) { return e->seg != NULL; }

/*
 * The back end's get of a live, plain item (stripe held, nothing watched);
 * only where store_has_get() said yes.  *generic: leave it to the shared
 * lookup.
 */
static inline struct item *store_get_locked(struct engine *e, const char *key, size_t nkey,
                                            uint64_t hv, struct engine_copy *cp,
                                            bool *generic) {
    return segv_get_locked(e, key, nkey, hv, cp, generic);
}

/* Whether the back end has its own set (store_set_locked()). */
static inline bool store_has_set(const struct engine *e) { return e->seg != NULL; }

/*
 * The back end's set of it in place of a live item or none (stripe held,
 * nothing watched, no cas compared); only where store_has_set() said yes.
 * false: nothing changed, the shared store goes on.
 */
static inline bool store_set_locked(struct engine *e, struct item *it, uint64_t hv,
                                    uint64_t cas) {
    return segv_set_locked(e, it, hv, cas);
}

/* Writes a new item's bytes before the stripe is taken, where the back end can. */
static inline void store_prewrite(struct engine *e, struct item *it, uint64_t cas) {
    if (e->seg != NULL)
        segv_prewrite(e, it, cas);
}

/* Gives back what store_prewrite() took and the store did not use. */
static inline void store_prewrite_drop(struct engine *e, struct item *it) {
    if (e->seg != NULL)
        segv_prewrite_drop(e, it);
}

/*
 * Whether a get of hv may skip the lookup: the segments' read-ahead found
 * the key absent, and no fetch watcher needs to be told of the miss.
 */
static inline bool store_absent(struct engine *e, uint64_t hv) {
    return e->seg != NULL && !watching(e, ENGINE_WATCH_FETCH) && seg_store_absent(e->seg, hv);
}

/*
 * Read-ahead of n keys' buckets and stripes (engine_prefetch()).  The
 * neighbours of a slab item are read from an item nobody holds, which may
 * be unlinked and reused meanwhile (slab memory stays mapped while the
 * engine lives): the links read may be anything, and are only prefetched.
 * For a policy that keeps no links in prev/next they are not addresses at
 * all, which a prefetch also ignores.
 */
ITEM_PEEK static inline void store_prefetch(struct engine *e, const uint64_t *hv, unsigned n,
                                            uint64_t stores) {
    struct item *first[ENGINE_PREFETCH_MAX];
    if (e->seg != NULL) {
        /* a key the read-ahead found absent is looked up with no lock */
        uint64_t absent = seg_store_prefetch(e->seg, hv, n);
        for (unsigned i = 0; i < n; i++)
            if (!((absent >> i) & 1))
                __builtin_prefetch(lock_of(e->locks, hv[i]), 1);
        return;
    }
    for (unsigned i = 0; i < n; i++)
        __builtin_prefetch(lock_of(e->locks, hv[i]), 1);
    ht_prefetch(e->ht, hv, n, first);
    for (unsigned i = 0; i < n && (stores >> i) != 0; i++) {
        if (((stores >> i) & 1) && first[i] != NULL) {
            __builtin_prefetch(__atomic_load_n(&first[i]->prev, __ATOMIC_RELAXED), 1);
            __builtin_prefetch(__atomic_load_n(&first[i]->next, __ATOMIC_RELAXED), 1);
        }
    }
}

static inline void store_prefetch_one(struct engine *e, uint64_t hv) {
    if (e->seg != NULL) {
        if (seg_store_prefetch(e->seg, &hv, 1) == 0)
            __builtin_prefetch(lock_of(e->locks, hv), 1);
        return;
    }
    __builtin_prefetch(lock_of(e->locks, hv), 1);
    ht_prefetch_bucket(e->ht, hv);
}

/* ---- time, maintenance, dump ---- */

/* The engine's clock moved to engine second now. */
static inline void store_clock_set(struct engine *e, uint32_t now) {
    if (e->seg != NULL)
        seg_store_clock_set(e->seg, now);
}

/* Transient items from now on (engine_lru_temp()); segments have their TTL buckets. */
static inline void store_lru_temp(struct engine *e, int32_t ttl) {
    if (e->seg == NULL)
        item_lru_temp(e, ttl);
}

/* A flush_all point, told before anything can be stored past it. */
static inline void store_seal_point(struct engine *e, uint32_t point) {
    if (e->seg != NULL)
        seg_store_seal_point(e->seg, point);
}

/* `slabs reassign` (engine_slabs_reassign()): segments answer for their one class. */
static inline enum engine_reassign store_reassign(struct engine *e, int32_t src, int32_t dst) {
    if (e->seg != NULL)
        return segv_reassign(e, src, dst);
    return item_move_request(e, src, dst);
}

/* The automover's settings (segments have no pages to move). */
static inline void store_automove_set(struct engine *e, int mode, double ratio,
                                      unsigned window) {
    if (e->seg == NULL)
        item_move_set(e, mode, ratio, window);
}

/* One slice of the back end's background work (step_lock held); returns the work done. */
static inline unsigned store_step_locked(struct engine *e, unsigned budget) {
    if (e->seg != NULL)
        return segv_step_locked(e, budget);
    /* the page mover takes up to half, the table, reaper and crawler the rest */
    unsigned work = item_move_step_locked(e, budget / 2 > 0 ? budget / 2 : 1);
    return work + item_step_locked(e, budget > work ? budget - work : 1);
}

/*
 * A crawl of the classes asked for (step_lock held; engine_crawl_request()).
 * Segments have no classes to walk: their expiry pass starts now instead.
 */
static inline enum engine_crawl_result store_crawl_request_locked(struct engine *e,
                                                                  uint64_t classes) {
    if (e->seg != NULL) {
        e->crawl_resting = false;
        e->crawl_in_pass = false;
        return ENGINE_CRAWL_OK;
    }
    return item_crawl_request_locked(e, classes);
}

/* One slice of a dump (engine_dump_step()). */
static inline bool store_dump_step(struct engine *e, uint64_t *cursor, unsigned budget,
                                   engine_dump_fn fn, void *arg) {
    if (e->seg != NULL)
        return segv_dump_step(e, cursor, budget, fn, arg);
    return item_dump_step(e, cursor, budget, fn, arg);
}

/* The cursors that bound the part-th of nparts slices of a dump: [*lo, *hi). */
static inline void store_dump_span(struct engine *e, unsigned part, unsigned nparts,
                                   uint64_t *lo, uint64_t *hi) {
    if (e->seg != NULL)
        segv_dump_span(e, part, nparts, lo, hi);
    else
        item_dump_span(e, part, nparts, lo, hi);
}

/* ---- sizes and stats ---- */

/* The class an item of ntotal bytes would take (1 <= id <= nclasses; 0: too large). */
static inline unsigned store_class_for(const struct engine *e, size_t ntotal) {
    if (ntotal > e->cfg.item_size_max)
        return 0;
    if (e->seg != NULL)
        return 1;
    if (ntotal > e->cfg.slab_chunk_max)
        return e->nclasses;
    return slab_class_for(e->slab, ntotal);
}

/* Whether `stats sizes` can count this back end's items (segments count none yet). */
static inline bool store_counts_sizes(const struct engine *e) { return e->seg == NULL; }

/* -m changed at run time: segments are cut at start, and the limit stays. */
static inline void store_set_mem_limit(struct engine *e, uint64_t bytes) {
    if (e->seg == NULL)
        slab_set_limit(e->slab, bytes);
}

/* One class's counters (id checked by the caller). */
static inline bool store_class_stats(struct engine *e, unsigned id,
                                     struct engine_class_stats *out) {
    if (e->seg != NULL)
        return segv_class_stats(e, out);
    return item_class_stats(e, id, out);
}

/* The memory and index figures of engine_stats(). */
static inline void store_stats(struct engine *e, struct engine_stats *out) {
    if (e->seg != NULL) {
        segv_stats(e, out);
    } else {
        item_stats(e, out);
        item_move_stats(e, out);
    }
}

/* The back end's own counters back to zero (engine_stats_reset()). */
static inline void store_stats_reset(struct engine *e) {
    if (e->seg != NULL)
        seg_store_stats_reset(e->seg);
}

/* ---- store.c: shared operations built on the primitives ---- */

/*
 * The live item under key (stripe held), or NULL.  A dead item found on the
 * way is unlinked and *why (if non-NULL) says whether it had expired or was
 * flushed; a watched fetch is reported.  A live delete hold-off tombstone
 * gives NULL and is handed out through *hold (if non-NULL).
 */
struct item *store_find_locked(struct engine *e, const char *key, size_t nkey, uint64_t hv,
                               enum engine_miss *why, struct item **hold);

#endif
