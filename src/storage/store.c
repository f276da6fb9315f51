/*
 * store.c -- the store operations both back ends share, written once on
 * store.h's primitives: the find every key operation starts with.  It
 * knows nothing of which back end runs.
 */
#include "storage/store.h"

/*
 * The live item under key (stripe held), or NULL.  A dead item found on the
 * way is unlinked and *why (if non-NULL) says whether it had expired or was
 * flushed.  A delete hold-off tombstone is no item to anybody: a live one
 * gives NULL and is handed out through *hold (if non-NULL) to the callers
 * that must refuse an add or link in its place; a dead one is unlinked
 * quietly, as the plain miss the delete left.  Always inlined into
 * store_find_locked(), as it was into item_find_locked() before the seam:
 * left to itself the compiler makes it a call, 7 instructions a get more.
 */
__attribute__((always_inline)) static inline struct item *
find_live(struct engine *e, const char *key, size_t nkey, uint64_t hv, enum engine_miss *why,
          struct item **hold) {
    if (hold != NULL)
        *hold = NULL;
    struct item *it = store_lookup_locked(e, key, nkey, hv);
    if (it == NULL)
        return NULL;
    bool tomb = item_has(it, ITEM_HOLD);
    enum engine_miss dead = expire_dead(e, it, expire_now(e));
    if (dead == ENGINE_MISS_NONE) {
        if (!tomb)
            return it;
        if (hold != NULL)
            *hold = it;
        return NULL;
    }
    store_unlink_locked(e, it, hv, UNLINK_DELETE);
    if (tomb)
        return NULL;
    atomic_fetch_add_explicit(dead == ENGINE_MISS_EXPIRED ? &e->met_expired : &e->met_flushed,
                              1, memory_order_relaxed);
    if (why != NULL)
        *why = dead;
    return NULL;
}

struct item *store_find_locked(struct engine *e, const char *key, size_t nkey, uint64_t hv,
                               enum engine_miss *why, struct item **hold) {
    if (!watching(e, ENGINE_WATCH_FETCH))
        return find_live(e, key, nkey, hv, why, hold);
    enum engine_miss dead = ENGINE_MISS_NONE;
    struct item *it = find_live(e, key, nkey, hv, &dead, hold);
    if (why != NULL)
        *why = dead;
    watch_fetch(e, key, nkey, it, dead);
    return it;
}
