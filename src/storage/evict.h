/*
 * evict.h -- the eviction policy seam.
 *
 * A policy decides the order in which a size class gives up its items when
 * memory is full.  Each class has one queue (struct evict_queue, owned by
 * the policy); the engine tells the policy when an item enters or leaves
 * the class and when it is read, and asks it for eviction candidates.  The
 * engine keeps everything else: hashing, locking, refcounts, expiry, stats,
 * and the decision whether a candidate can actually be taken (it may be
 * referenced or its lock busy, and then the engine asks for the next one).
 * The same policy code runs in cellard and in cellar-sim.
 *
 * What a policy may use in struct item: prev/next (its queue links, free
 * for it while the item is linked; pword[] is the same 16 bytes as
 * integers), atime (read only: the engine sets it at link and after each
 * bump), pbits (its own bits; relaxed atomics, because
 * hit() runs without the class lock) and the ITEM_FETCHED flag (read
 * only).  An item with ITEM_TEMP (a transient item, kept by the slab back
 * end in its wheel, wheel.h) is never linked into the policy's queue: the
 * policy sees neither its link, unlink, bump nor eviction, only hit(),
 * which may write its pbits (the wheel keeps nothing there).
 *
 * Threading contract, per call:
 *   create/destroy     once per class, single-threaded
 *   link/unlink/bump/
 *   victim/oldest/
 *   maintain           class lock held (and for link/unlink/bump the item
 *                      lock too); must not block or allocate, except that
 *                      a policy's side tables (ghost.h, sketch.h) grow by
 *                      doubling there, amortised, and a failed growth only
 *                      makes the policy forget (never an error)
 *   hit                item lock held, class lock NOT held: must be cheap
 *                      and touch only the item
 *
 * Things a policy learns without being told:
 *   - The class's capacity C is decided by memory, not by the policy.  A
 *     policy that sizes regions as shares of C (S3-FIFO's 10%, ARC's p,
 *     W-TinyLFU's window) takes C as the number of items linked when
 *     victim(NULL) is called: the class is full then.
 *   - unlink() is called for every departure.  A policy that treats
 *     evictions apart (ghost lists) recognises one as the item its last
 *     victim() returned; an item must be linked before it is unlinked, so
 *     link() forgets a remembered candidate whose memory came back.
 *   - The engine evicts before it links the item that needed the room, and
 *     victim() does not see that item's key.  Policies whose eviction
 *     depends on it (ARC) decide as for a plain miss; see their files.
 *
 * Adding a policy: write evict_<name>.c defining a const struct
 * evict_policy (evict_list.h has the shared list and pbits helpers), list
 * it in evict.c, and give it tests/unit/storage/test_evict_<name>.c on
 * hand-computed traces (evict_test.h drives a policy as the engine does).
 */
#ifndef CELLAR_STORAGE_EVICT_H
#define CELLAR_STORAGE_EVICT_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/item.h"

struct evict_queue;

/*
 * Knobs a policy may take (memcached's -o hot_lru_pct, warm_lru_pct,
 * hot_max_factor, warm_max_factor and `lru tune`); only slru reads them.
 */
struct evict_tune {
    unsigned hot_pct, warm_pct;         /* shares of a class for HOT and WARM */
    double hot_max_factor, warm_max_factor;  /* their tails' age limits, x COLD's age */
};
#define EVICT_TUNE_DEFAULT {20, 40, 0.2, 2.0}

/*
 * A segmented policy's view for `stats items` (memcached's HOT, WARM, COLD
 * and TEMP queues).  A policy without segments has all items in COLD, as
 * memcached's flat LRU has.
 */
enum evict_lru { EVICT_HOT, EVICT_WARM, EVICT_COLD, EVICT_TEMP, EVICT_NLRU };
struct evict_segments {
    uint64_t number[EVICT_NLRU];
    uint32_t age_hot, age_warm;         /* seconds since their tails were used */
    uint64_t moves_to_cold, moves_to_warm, moves_within_lru;
};

struct evict_policy {
    const char *name;

    /* A queue for one class, or NULL when memory is short. */
    struct evict_queue *(*create)(void);
    void (*destroy)(struct evict_queue *q);

    /* it enters the class (a store); now is engine seconds. */
    void (*link)(struct evict_queue *q, struct item *it, uint32_t now);
    /* it leaves the class (delete, replace, expiry or eviction). */
    void (*unlink)(struct evict_queue *q, struct item *it);

    /*
     * it was read (or re-added).  Record the hit in the item and return true
     * when the queue itself must change, in which case the engine takes the
     * class lock and calls bump().  Keep hits cheap: most should return false.
     */
    bool (*hit)(struct item *it, uint32_t now);
    void (*bump)(struct evict_queue *q, struct item *it, uint32_t now);

    /*
     * The next eviction candidate: the policy's first choice when prev is
     * NULL, else the one after prev (which the engine could not take and
     * which is still linked).  NULL when there are no more.  May update
     * policy state on the way (a clock hand, cleared reference bits).
     */
    struct item *(*victim)(struct evict_queue *q, struct item *prev);

    /* The item the policy regards as oldest, without changing anything
     * (for the `age` stat); NULL when empty. */
    struct item *(*oldest)(struct evict_queue *q);

    /*
     * Optional (NULL: nothing to do): background upkeep of the queue, as
     * memcached's LRU maintainer juggles its tails between requests.  Called
     * from the engine's maintenance step (class lock held) when the
     * maintainer is on; must move at most `budget` items and return how many
     * it moved.  It may only reorder: every item stays linked.
     */
    unsigned (*maintain)(struct evict_queue *q, uint32_t now, unsigned budget);

    /* Optional (NULL: no knobs): takes new tunables (class lock held). */
    void (*tune)(struct evict_queue *q, const struct evict_tune *t);

    /*
     * Optional, for segmented policies: fills in the segments' sizes, ages
     * and moves (class lock held).  seg_mask, when nonzero, says that
     * evict_bits(it) & seg_mask is the item's enum evict_lru, so a hit can
     * be counted by segment without a call (engine_item_lru()).
     */
    void (*segments)(const struct evict_queue *q, struct evict_segments *out);
    uint8_t seg_mask;
};

/* The policy of that name, or NULL. */
const struct evict_policy *evict_policy_find(const char *name);

/* The policies, one per evict_<name>.c (see evict.c for the list). */
extern const struct evict_policy evict_lru;
extern const struct evict_policy evict_lru_exact;
extern const struct evict_policy evict_fifo;
extern const struct evict_policy evict_clock;
extern const struct evict_policy evict_clock2;
extern const struct evict_policy evict_sieve;
extern const struct evict_policy evict_s3fifo;
extern const struct evict_policy evict_lfu;
extern const struct evict_policy evict_lfu_decay;
extern const struct evict_policy evict_2q;
extern const struct evict_policy evict_arc;
extern const struct evict_policy evict_slru;
extern const struct evict_policy evict_doubleclock;
extern const struct evict_policy evict_doubleclock_rd;
extern const struct evict_policy evict_wtinylfu;
extern const struct evict_policy evict_wtinylfu_fixed;
extern const struct evict_policy evict_lirs;
extern const struct evict_policy evict_sampled;
extern const struct evict_policy evict_sampled_lfu;

/* The number of policies, and the i-th (for listing them in -h and tools). */
unsigned evict_policy_count(void);
const struct evict_policy *evict_policy_at(unsigned i);

#endif
