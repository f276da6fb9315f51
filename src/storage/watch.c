/*
 * watch.c -- the engine's side of `watch` (memcached's logger): the hook
 * the server installs, the mask of kinds reported, and the out-of-line
 * reports the engine's files make when a kind is watched (watching() is
 * the one-load test, in engine_int.h).  It lies below both store back ends
 * and calls neither; the hook is called with whatever lock the reporter
 * holds and must not call the engine.
 */
#include "storage/engine_int.h"

void engine_watch_hook(struct engine *e, engine_watch_fn fn, void *arg) {
    e->watch_fn = fn;
    e->watch_arg = arg;
}

void engine_watch_set(struct engine *e, unsigned kinds) {
    atomic_store_explicit(&e->watch, e->watch_fn != NULL ? kinds : 0, memory_order_relaxed);
}

void watch_report(struct engine *e, struct engine_watch_event *ev) { e->watch_fn(e->watch_arg, ev); }

void watch_store(struct engine *e, const struct item *it, enum engine_store_result r,
                 enum engine_store_op op) {
    struct engine_watch_event ev = {
        .kind = ENGINE_WATCH_STORE,
        .it = it,
        .status = r,
        .op = op,
        .ttl = item_ttl(it->exptime, expire_now(e)),
    };
    watch_report(e, &ev);
}

void watch_fetch(struct engine *e, const char *key, size_t nkey, const struct item *it,
                 enum engine_miss dead) {
    struct engine_watch_event ev = {
        .kind = ENGINE_WATCH_FETCH, .key = key, .nkey = nkey, .it = it, .miss = dead};
    watch_report(e, &ev);
}
