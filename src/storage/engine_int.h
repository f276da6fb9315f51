/*
 * engine_int.h -- the engine's insides, shared by the engine's files: the
 * API and store semantics (engine.c, engine_arith.c, engine_stats.c,
 * lease.c, store.c), the two store back ends behind store.h (item.c:
 * slab items, linking, eviction, crawler; item_seg.c: segment views) and
 * what lies below both (expire.c: clock and expiry rules; watch.c;
 * sizes.c).  Nothing outside storage/ includes it (a policy test reads
 * the classes).
 *
 * Locks, in the only order they may be taken blocking:
 *
 *     item stripe (lock.h)  ->  class lock (struct eclass)  ->  slab class lock
 *                                                               ->  slab pool lock
 *
 * The page mover's request lock (struct move.lock) is taken with none of
 * these held, and takes only slab class locks inside.
 *
 * The evictor holds a class lock and needs item locks: it uses lock_try()
 * and skips what it cannot get.  The maintenance step holds step_lock while
 * it runs (it is the only place that starts or advances table growth).
 *
 * What guards what:
 *   - an item's hnext, flags, exptime, cas, value: its item stripe (or
 *     nothing while the item is unlinked and private to one thread);
 *   - iflags: changed only under the item stripe, but atomic because
 *     reference holders read ITEM_CHAINED without it (item_has());
 *   - an item's prev/next and the class queue and counters: the class lock;
 *   - atime: written only with both the item stripe and the class lock held
 *     (or while unlinked), so either lock suffices to read it;
 *   - refcount: atomic.  It is raised only under the item stripe while the
 *     item is linked, so once an unlinked item's count reaches 0 nobody can
 *     find it again and its memory may be reused.
 *
 * Layout of a chained item (total size > slab_chunk_max):
 *
 *   header chunk (largest class)              chain chunks
 *   +------+-----+------------+--------+     +-----+---------+     +-----+------+
 *   | item | key | item_chain | value  | --> | hdr | value   | --> | hdr | tail |
 *   |      |     | first,head | head   |     |     |         |     |     |      |
 *   +------+-----+------------+--------+     +-----+---------+     +-----+------+
 *
 * Every chain chunk but the last comes from the largest class; the last
 * one from the smallest class that fits what is left (or the largest if
 * that class cannot give one).  item_chain sits right after the key and is
 * read and written with memcpy since the key length makes it unaligned.
 */
#ifndef CELLAR_STORAGE_ENGINE_INT_H
#define CELLAR_STORAGE_ENGINE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "storage/engine.h"
#include "storage/evict.h"
#include "storage/ht.h"
#include "storage/lock.h"
#include "storage/slab.h"
#include "storage/wheel.h"

#define ENGINE_EVICT_TRIES 5            /* candidates looked at per eviction */
#define ENGINE_ALLOC_TRIES 10           /* evictions tried per chunk */
#define ENGINE_CLOCK_OFFSET 62          /* engine seconds at start, like memcached */
#define ENGINE_CRAWL_REST 60            /* seconds between crawler passes */
#define ENGINE_REAP_MAX 50              /* dead items one step reclaims per class */
#define ENGINE_JUGGLE_MAX 500           /* queue moves one step makes per class (memcached's) */
#define ENGINE_TEMP_BATCH 64            /* transient items one wheel slice takes per class */
#define ENGINE_FLAT_PULL 5              /* dead tails a flat-LRU allocation reclaims first */
#define ENGINE_EXPAND_RETRY 60          /* seconds before retrying a failed growth */


struct item_chunk {
    struct item_chunk *next;
    uint32_t size;                      /* value bytes held in this chunk */
    uint8_t clsid;
    /* value bytes follow at offset sizeof(struct item_chunk) */
};

/* One size class as the engine sees it: its eviction queue and counters. */
struct eclass {
    struct mtx lock;
    struct evict_queue *q;
    uint64_t number, bytes, total_items;
    uint64_t evicted, evicted_nonzero, evicted_time, evicted_unfetched, evicted_active;
    uint64_t outofmemory, reclaimed, expired_unfetched, crawler_reclaimed;
    _Atomic uint64_t crawler_checked;   /* written by the crawler without the lock */
    struct evict_segments lru_base;     /* the policy's moves at the last stats reset */
    struct wheel wheel;                 /* transient items (ITEM_TEMP), not in q */
};

struct seg_store;

/* One sample of the automover's window for one class (memcached's window_data). */
struct move_sample {
    uint64_t age;
    float evicted_ratio;
    uint8_t dirty, evicted_seen;
};

/*
 * The slab page mover (item_move.c): one page at a time, requested by
 * `slabs reassign` or the automover, done by the maintenance step.
 */
struct move {
    struct mtx lock;                    /* signal, src, dst, pick, the settings */
    int signal;                         /* 0 idle, 1 asked, 2 moving (memcached's) */
    unsigned src, dst, pick;
    int mode;                           /* automove rule; ratio and window with it */
    double ratio;
    unsigned window;
    /* under step_lock */
    char *lo, *hi;                      /* the page being emptied */
    uint64_t cursor;                    /* its walk over the hash table */
    uint32_t began;                     /* engine second the move began */
    uint32_t am_last;                   /* engine second the automover last ran */
    bool am_again;                      /* it chose the pool: run again at once */
    struct move_sample *win;            /* window x ENGINE_MAX_CLASSES samples */
    unsigned win_size, win_cur;
    double win_ratio;
    uint64_t am_evicted[ENGINE_MAX_CLASSES], am_oom[ENGINE_MAX_CLASSES];
    uint64_t am_pages[ENGINE_MAX_CLASSES];
    /* counters, read by stats without the step lock */
    _Atomic uint64_t rescues, chunk_rescues, evictions_nomem, inline_reclaim;
    _Atomic uint64_t busy_items, busy_deletes, moved;
};

struct engine {
    struct engine_config cfg;
    struct seg_store *seg;              /* storage=seg: the segment back end (item_seg.c);
                                           NULL: slab.  Only store.h tests it */
    const struct evict_policy *policy;
    uint8_t lru_mask;                   /* policy->seg_mask, one load nearer (engine_item_lru) */
    struct slab *slab;
    struct lock_stripes *locks;
    struct ht *ht;
    unsigned nclasses;
    struct eclass cls[ENGINE_MAX_CLASSES];

    /* Time (memcached's current_time and process_started). */
    _Atomic uint32_t now;               /* engine seconds, >= 1 */
    _Atomic int64_t started;            /* unix time of engine second 0 */
    _Atomic bool clock_seen;

    _Atomic uint64_t cas;               /* last CAS handed out */
    _Atomic uint32_t oldest_live;       /* flush_all point, engine seconds; 0 none */
    _Atomic uint64_t oldest_cas;        /* items with a lower CAS are flushed */

    _Atomic bool crawl_on;              /* engine_step() crawls for expired items */
    _Atomic uint32_t temp_lim;          /* TTLs below it are transient (temp_ttl + 1); 0: off */
    _Atomic bool lru_flat;              /* an allocation first reclaims dead tails */
    _Atomic bool wheels;                /* transient items were ever on: the step
                                           visits the classes' wheels */
    /* Lookups of any kind that met a dead item (memcached's get_expired and
       get_flushed: a set, delete or incr counts too); rare, so shared. */
    _Atomic uint64_t met_expired, met_flushed;
    _Atomic unsigned watch;             /* engine_watch_kind mask (engine_watch_set) */
    /* `stats sizes` (engine_sizes_enable); the counters live until the engine goes */
    _Atomic bool sizes_on;
    _Atomic uint32_t *sizes;
    unsigned sizes_n, sizes_base;
    uint64_t sizes_cas_min;
    struct mtx sizes_lock;              /* enable, disable, report */
    engine_watch_fn watch_fn;
    void *watch_arg;
    unsigned dumpers;                   /* dumps under way (engine_dump_begin()); no
                                           table doubling starts while nonzero; under
                                           step_lock */

    /* Maintenance (engine_step), under step_lock. */
    struct mtx step_lock;
    uint64_t crawl_cursor;
    bool crawl_resting;
    bool crawl_in_pass;                 /* a pass has begun and not wrapped */
    _Atomic uint64_t crawl_starts;      /* passes begun (memcached's lru_crawler_starts) */
    uint32_t crawl_next;                /* engine second the next pass may start */
    _Atomic uint64_t crawl_req;         /* classes of an engine_crawl_request() under
                                           way (bit i: class i); 0: none */
    uint32_t expand_next;               /* engine second growth may be retried */

    struct move mv;                     /* the slab page mover (slab back end) */
    struct ext *ext;                    /* the flash tier (item_ext.c); NULL: none */
    struct flash *flash;                /* its page store, for item_free(); NULL: none */
};

/* Why an item leaves the table; decides which counter it lands in. */
enum unlink_why {
    UNLINK_DELETE,      /* delete, replace, or found dead on access */
    UNLINK_RECLAIM,     /* dead item taken from a queue tail for memory */
    UNLINK_CRAWL,       /* dead item found by the crawler */
    UNLINK_EVICT,       /* live item evicted for memory */
};

static inline bool item_has(const struct item *it, uint16_t flag) {
    return (atomic_load_explicit(&it->iflags, memory_order_relaxed) & flag) != 0;
}
/* Writers hold the item stripe, so a plain load and store cannot lose bits. */
static inline void item_flag_set(struct item *it, uint16_t flag) {
    uint16_t f = atomic_load_explicit(&it->iflags, memory_order_relaxed);
    if (!(f & flag))
        atomic_store_explicit(&it->iflags, f | flag, memory_order_relaxed);
}
static inline void item_flag_clear(struct item *it, uint16_t flag) {
    uint16_t f = atomic_load_explicit(&it->iflags, memory_order_relaxed);
    atomic_store_explicit(&it->iflags, f & ~flag, memory_order_relaxed);
}

/*
 * Reference counts.  A single-threaded engine (engine_config.single_thread)
 * needs no locked instruction: a plain load and store does.
 */
static inline void item_ref(const struct engine *e, struct item *it) {
    if (e->cfg.single_thread)
        atomic_store_explicit(&it->refcount,
                              atomic_load_explicit(&it->refcount, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&it->refcount, 1, memory_order_relaxed);
}
/* Drops one reference; returns the count before. */
static inline uint16_t item_deref(const struct engine *e, struct item *it) {
    if (e->cfg.single_thread) {
        uint16_t r = atomic_load_explicit(&it->refcount, memory_order_relaxed);
        atomic_store_explicit(&it->refcount, r - 1, memory_order_relaxed);
        return r;
    }
    return atomic_fetch_sub_explicit(&it->refcount, 1, memory_order_acq_rel);
}

/* engine_get_copy()'s request: done once fn has been called */
struct engine_copy {
    engine_copy_fn fn;
    void *arg;
    uint32_t max;
    bool done;
};

/* The next CAS from the engine's counter (0 under -C). */
static inline uint64_t item_next_cas(struct engine *e) {
    if (!e->cfg.use_cas)
        return 0;
    return atomic_fetch_add_explicit(&e->cas, 1, memory_order_relaxed) + 1;
}

/* A store counted in total_items by the segments, whose one class is 1. */
static inline void item_count_stored(struct engine *e) {
    struct eclass *c = &e->cls[1];
    mtx_lock(&c->lock);
    c->total_items++;
    mtx_unlock(&c->lock);
}

/*
 * item.c: helpers on any item's memory (the slab back end's primitives are
 * declared in store.h).
 */
size_t item_ntotal(const struct item *it);
void item_copy_value(struct item *dst, size_t off, const struct item *src);
char *item_value(const struct item *it);

/*
 * Remaining seconds of an engine-seconds exptime at now, as memcached's
 * meta `t` shows it: -1 for never, else the unsigned 32-bit difference
 * (huge when a negative touch already put exptime in the past).
 */
static inline int64_t item_ttl(uint32_t exptime, uint32_t now) {
    return exptime == 0 ? -1 : (int64_t)(uint32_t)(exptime - now);
}

/*
 * Request-ordered steps of a meta command (lease.c): the *_at positions of
 * engine.h sorted, ties in kind order, a step at 0 for STEP_TTL meaning
 * "after the others".
 */
enum step_kind { STEP_TOUCH, STEP_VIVIFY, STEP_RECACHE, STEP_TTL };
struct step {
    unsigned at;
    enum step_kind kind;
};
unsigned steps_sort(struct step *s, unsigned n);

/*
 * watch.c: reports ev if its kind is watched.  The test is one load; the report
 * itself stays out of line.
 */
__attribute__((cold)) void watch_report(struct engine *e, struct engine_watch_event *ev);
/* A lookup's report: it is the item found, NULL for a miss (dead: why). */
__attribute__((cold)) void watch_fetch(struct engine *e, const char *key, size_t nkey,
                                       const struct item *it, enum engine_miss dead);
/* A store's report: the item stored (or refused), the result, the command. */
__attribute__((cold)) void watch_store(struct engine *e, const struct item *it,
                                       enum engine_store_result r, enum engine_store_op op);
/* engine_item_lru() of an item whose policy bits are bits. */
static inline unsigned lru_of_bits(const struct engine *e, uint8_t bits) {
    return e->lru_mask != 0 ? (unsigned)(bits & e->lru_mask) : EVICT_COLD;
}

static inline bool watching(const struct engine *e, enum engine_watch_kind k) {
    return (atomic_load_explicit(&e->watch, memory_order_relaxed) & k) != 0;
}

/* sizes.c: an item linked (+1) or unlinked (-1) while `stats sizes` counts. */
__attribute__((cold)) void sizes_count(struct engine *e, const struct item *it, int d);
static inline void sizes_note(struct engine *e, const struct item *it, int d) {
    if (atomic_load_explicit(&e->sizes_on, memory_order_acquire))
        sizes_count(e, it, d);
}

/*
 * item_ext.c: the flash tier of the slab back end (engine_ext_config).
 * ext_read() turns a header item (ITEM_FLASH; a reference held, no locks)
 * into an item holding its value, or NULL (see there).  A header's value
 * is where its record lies (item_flash_loc()); item_free() lets the record
 * go as the header's memory is freed.
 */
struct ext;
bool ext_create(struct engine *e, char *err, size_t errlen);
void ext_destroy(struct engine *e);
struct item *ext_read(struct engine *e, struct item *hdr, uint64_t hv, bool again,
                      enum engine_miss *why);
void ext_stats(struct engine *e, struct engine_stats *out);
static inline struct flash_loc item_flash_loc(const struct item *hdr) {
    struct flash_loc loc;
    memcpy(&loc, hdr->data + hdr->nkey, sizeof(loc));
    return loc;
}

/* expire.c */
uint32_t expire_now(const struct engine *e);
uint32_t expire_realtime(const struct engine *e, int64_t exptime);
enum engine_miss expire_dead(const struct engine *e, const struct item *it, uint32_t now);
void expire_init(struct engine *e, uint32_t unix_now);

#endif
