/*
 * expire.c -- the engine's clock, exptime conversion, flush_all and the
 * expiry crawler, all following memcached's rules.
 *
 * Time inside the engine is "engine seconds": unix time minus `started`,
 * which is fixed so that the engine begins at second 62 (memcached starts
 * its process clock 62 s back so relative times are never 0).  Items keep
 * exptime and atime in engine seconds; 0 means "never".
 */
#include "storage/engine_int.h"
#include "storage/seg.h"

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
    if (e->seg != NULL)
        seg_store_clock_set(e->seg, (uint32_t)now);
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
    if (e->seg != NULL)
        seg_store_seal_point(e->seg, point);    /* before anything can be stored past it */
    atomic_store_explicit(&e->oldest_live, point, memory_order_release);
}

struct crawl {
    struct engine *e;
    uint32_t now;
};

static void crawl_visit(struct item *it, uint64_t hv, void *arg) {
    struct crawl *cr = arg;
    atomic_fetch_add_explicit(&cr->e->cls[it->clsid].crawler_checked, 1, memory_order_relaxed);
    if (expire_dead(cr->e, it, cr->now) != ENGINE_MISS_NONE)
        item_unlink_locked(cr->e, it, hv, UNLINK_CRAWL);
}

/*
 * One slice of the expiry crawler: walks hash buckets from where the last
 * slice stopped, one stripe lock at a time, unlinking dead items.  After a
 * full pass it rests ENGINE_CRAWL_REST seconds (returning 0, so the caller
 * may sleep).  Called under step_lock.
 *
 * FIXME: memcached schedules crawls per class from a histogram of coming
 * expiries; a fixed rest is simpler and bounds the cost the same way.
 */
unsigned expire_crawl_step(struct engine *e, unsigned budget) {
    struct crawl cr = {e, expire_now(e)};
    if (e->crawl_resting) {
        if (cr.now < e->crawl_next)
            return 0;
        e->crawl_resting = false;
    }
    if (!e->crawl_in_pass) {
        e->crawl_in_pass = true;
        atomic_fetch_add_explicit(&e->crawl_starts, 1, memory_order_relaxed);
    }
    bool wrapped;
    unsigned work = ht_visit(e->ht, &e->crawl_cursor, budget, &wrapped, crawl_visit, &cr);
    if (wrapped) {
        e->crawl_in_pass = false;
        e->crawl_resting = true;
        e->crawl_next = cr.now + ENGINE_CRAWL_REST;
    }
    return work;
}
