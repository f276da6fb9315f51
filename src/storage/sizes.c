/*
 * sizes.c -- the counting half of `stats sizes`: a histogram of linked
 * items by size in 32-byte buckets, as memcached keeps it, counted while
 * enabled (the back end reports each link and unlink through
 * sizes_note()).  It lies below both store back ends and calls neither.
 * The counters are atomic; enabling, disabling and the report
 * (engine_sizes*(), with the stats) take sizes_lock.
 */
#include "storage/engine_int.h"

void sizes_count(struct engine *e, const struct item *it, int d) {
    /* a delete hold-off tombstone is no item memcached would have */
    if (item_has(it, ITEM_HOLD) || it->cas < e->sizes_cas_min)
        return;
    uint64_t n = e->sizes_base + it->nkey + (uint64_t)it->nbytes + (it->flags != 0 ? 4 : 0);
    uint64_t b = (n + 31) / 32;
    if (b >= e->sizes_n)
        return;
    if (d > 0)
        atomic_fetch_add_explicit(&e->sizes[b], 1, memory_order_relaxed);
    else if (atomic_load_explicit(&e->sizes[b], memory_order_relaxed) > 0)
        atomic_fetch_sub_explicit(&e->sizes[b], 1, memory_order_relaxed);
}
