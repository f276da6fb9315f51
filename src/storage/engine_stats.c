/*
 * engine_stats.c -- what the engine reports and tunes outside the request
 * path: `stats sizes` (enable, disable, report; sizes.c counts), the
 * memory limit and LRU tuning at run time, the dump (lru_crawler
 * metadump), class and engine counters and their reset.  The back end's
 * part of each goes through store.h.
 */
#include <stdlib.h>

#include "storage/evict_list.h"
#include "storage/store.h"

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

enum engine_reassign engine_slabs_reassign(struct engine *e, int32_t src, int32_t dst) {
    return store_reassign(e, src, dst);
}

void engine_automove_set(struct engine *e, int mode, double ratio, unsigned window) {
    store_automove_set(e, mode, ratio, window);
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

void engine_lru_temp(struct engine *e, int32_t ttl) { store_lru_temp(e, ttl); }

void engine_lru_flat(struct engine *e, bool flat) {
    atomic_store_explicit(&e->lru_flat, flat, memory_order_relaxed);
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

void engine_dump_part(struct engine *e, unsigned part, unsigned nparts, engine_dump_fn fn,
                      void *arg) {
    uint64_t cursor, hi;
    store_dump_span(e, part, nparts, &cursor, &hi);
    while (cursor < hi && store_dump_step(e, &cursor, 1, fn, arg))
        ;
}

unsigned engine_nclasses(const struct engine *e) { return e->nclasses; }

unsigned engine_class_for(const struct engine *e, size_t ntotal) {
    return store_class_for(e, ntotal);
}

unsigned engine_item_lru(const struct engine *e, const struct item *it) {
    /* a transient item is in its class's wheel, whatever the policy: its
       pbits are the wheel's (EVICT_TEMP), which a policy without segments
       would read as COLD */
    if (item_has(it, ITEM_TEMP))
        return EVICT_TEMP;
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
    out->crawler_running = atomic_load_explicit(&e->crawl_req, memory_order_relaxed) != 0;
    store_stats(e, out);
    ext_stats(e, out);
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
