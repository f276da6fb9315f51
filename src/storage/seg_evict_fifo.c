/*
 * seg_evict_fifo.c -- Segcache's FIFO eviction, and the fallback of the
 * others: the sealed segment sealed first that nobody reads or writes
 * (the small queue's before the main one's) has its items unlinked and
 * goes back to the pool (seg_clear()).  When every segment is some TTL
 * bucket's open one, the idle ones are sealed first.
 */
#include "storage/seg_int.h"

/* Pool lock held on entry, released on return (evict_step()). */
static bool fifo_evict(struct seg_store *s, struct mtx *held) {
    uint32_t v = victim_locked(s);
    if (v == NONE && seg_seal_idle_locked(s, true, 0) != 0)
        v = victim_locked(s);
    pthread_mutex_unlock(&s->pool);
    if (v == NONE)
        return false;
    seg_clear(s, v, false, held);
    return true;
}

const struct seg_evict seg_evict_fifo = {.name = "fifo", .init = NULL, .evict = fifo_evict};
