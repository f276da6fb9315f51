/*
 * expire.c -- the engine's clock, exptime conversion and the test of
 * whether an item is dead (expired or flushed), following memcached's
 * rules, and the crawler's switch.  It lies below both store back ends,
 * which use it; setting the clock and flush_all, which tell the back end,
 * are in engine.c, and the slab's crawler in item.c.
 *
 * Time inside the engine is "engine seconds": unix time minus `started`,
 * which is fixed so that the engine begins at second 62 (memcached starts
 * its process clock 62 s back so relative times are never 0).  Items keep
 * exptime and atime in engine seconds; 0 means "never".
 */
#include "storage/engine_int.h"

/*
 * Before the first engine_clock_set() the engine runs on time(NULL) read
 * at create; the first set re-anchors `started` so that engine seconds stay
 * continuous (nothing stored so far changes meaning) and afterwards follow
 * the caller's clock, whatever its epoch (the simulator's starts at 0).
 */
void expire_init(struct engine *e, uint32_t unix_now) {
    atomic_init(&e->now, ENGINE_CLOCK_OFFSET);
    atomic_init(&e->started, (int64_t)unix_now - ENGINE_CLOCK_OFFSET);
    atomic_init(&e->clock_seen, false);
    atomic_init(&e->oldest_live, 0);
    atomic_init(&e->oldest_cas, 0);
}

uint32_t engine_clock(const struct engine *e) {
    return (uint32_t)(atomic_load_explicit(&e->started, memory_order_relaxed) + expire_now(e));
}

uint32_t expire_now(const struct engine *e) {
    return atomic_load_explicit(&e->now, memory_order_relaxed);
}

/*
 * memcached's realtime(): 0 stays 0 (never); negative is already expired
 * (engine second 1 has always passed); above 30 days it is a unix time,
 * expired if not after the engine's start; otherwise seconds from now.
 */
uint32_t expire_realtime(const struct engine *e, int64_t exptime) {
    if (exptime == 0)
        return 0;
    if (exptime < 0)
        return 1;
    int64_t t;
    if (exptime > ENGINE_REALTIME_MAXDELTA) {
        int64_t started = atomic_load_explicit(&e->started, memory_order_relaxed);
        if (exptime <= started)
            return 1;
        t = exptime - started;
    } else {
        t = exptime + expire_now(e);
    }
    return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/*
 * Whether an item is dead at engine second now, and why (flush wins, as in
 * memcached's do_item_get).  The caller holds the item's stripe.
 */
enum engine_miss expire_dead(const struct engine *e, const struct item *it, uint32_t now) {
    uint32_t live = atomic_load_explicit(&e->oldest_live, memory_order_acquire);
    if (live != 0 && live <= now) {
        uint64_t ocas = atomic_load_explicit(&e->oldest_cas, memory_order_relaxed);
        if (it->atime <= live || (ocas != 0 && it->cas != 0 && it->cas < ocas))
            return ENGINE_MISS_FLUSHED;
    }
    if (it->exptime != 0 && it->exptime <= now)
        return ENGINE_MISS_EXPIRED;
    return ENGINE_MISS_NONE;
}

/*
 * The expiry crawler's switch (engine_step() runs the crawl of the back
 * end: the slab's walk of the table, or the segments' expiry of whole
 * segments).
 */
bool engine_crawl(struct engine *e) {
    return atomic_load_explicit(&e->crawl_on, memory_order_relaxed);
}

void engine_set_crawl(struct engine *e, bool on) {
    atomic_store_explicit(&e->crawl_on, on, memory_order_relaxed);
}

void engine_crawl_now(struct engine *e) {
    mtx_lock(&e->step_lock);
    e->crawl_resting = false;
    e->crawl_in_pass = false;           /* a pass under way starts over, as a new one */
    mtx_unlock(&e->step_lock);
}
