/*
 * engine.h -- THE storage engine API.
 *
 * The engine owns every byte of cached data: items, the slab allocator that
 * cuts bounded memory (-m) into size classes, the hash table that finds
 * items by key, the eviction policy that picks victims when memory is full,
 * and expiry (lazy on access, plus a bounded crawler driven by
 * engine_step()).  It knows nothing of sockets or protocols: callers pass
 * keys as (pointer, length) and get back referenced items and result codes.
 *
 * Several engines can live in one process (the simulator runs many side by
 * side; each unit test gets a fresh one); there is no global state.
 *
 * Time is passed in: engine_clock_set() sets the current unix time in
 * seconds, and the engine reads nothing else.  The server calls it from a
 * timer; the simulator from trace time; tests set it by hand.
 *
 * Threading: every function may be called from any thread concurrently,
 * except create/destroy.  Item operations lock one stripe of item locks
 * (chosen by key hash) and the size class they allocate from; nothing
 * blocks on I/O.  engine_step() does one bounded slice of background work
 * and is meant for a single maintenance thread.
 *
 * Items and references: a lookup returns an item with one reference taken
 * for the caller, which must drop it with engine_item_unref() when done
 * (typically after the value has been written to a socket).  An item that
 * is deleted, replaced or evicted while referenced stays readable until its
 * last reference goes; its memory is only then reused.
 */
#ifndef CELLAR_STORAGE_ENGINE_H
#define CELLAR_STORAGE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "storage/item.h"

#define ENGINE_KEY_MAX 250              /* longest key, bytes */
#define ENGINE_MAX_CLASSES 64           /* slab classes, 1-based ids */
#define ENGINE_REALTIME_MAXDELTA 2592000 /* 30 days: larger exptime is absolute */

struct engine;

struct engine_config {
    size_t mem_limit;          /* -m, bytes of slab pages (default 64 MiB) */
    double growth_factor;      /* -f, chunk size growth between classes (1.25) */
    uint32_t chunk_min;        /* -n, minimum space for key+value+flags (48) */
    uint32_t item_size_max;    /* -I, largest item incl. header (1 MiB) */
    uint32_t page_size;        /* slab page (1 MiB) */
    uint32_t slab_chunk_max;   /* largest chunk; bigger items chain chunks (page/2) */
    bool evict;                /* false (-M): fail stores instead of evicting */
    bool use_cas;              /* false (-C): CAS always 0 */
    uint32_t hashpower_init;   /* log2 initial buckets (16) */
    uint32_t lock_power;       /* log2 item lock stripes (12) */
    const char *policy;        /* eviction policy name ("lru") */
};

/* Fills in memcached's defaults. */
void engine_config_defaults(struct engine_config *cfg);

/*
 * Creates an engine.  Returns NULL and writes a message into err when the
 * configuration is invalid (e.g. item_size_max larger than memory allows).
 * Memory for slab pages is taken from the system lazily, a page at a time.
 */
struct engine *engine_create(const struct engine_config *cfg, char *err, size_t errlen);
void engine_destroy(struct engine **e);

/* Sets the current unix time (seconds).  Call at least once a second. */
void engine_clock_set(struct engine *e, uint32_t unix_now);
/* The current unix time as last set. */
uint32_t engine_clock(const struct engine *e);

/* Why a lookup found nothing; callers count these separately in stats. */
enum engine_miss {
    ENGINE_MISS_NONE = 0,       /* not in the table */
    ENGINE_MISS_EXPIRED,        /* was there but its exptime passed */
    ENGINE_MISS_FLUSHED,        /* was there but flush_all made it invisible */
};

/*
 * Looks a key up.  Returns the item with a reference for the caller, or
 * NULL (and *why, if non-NULL, says why).  An expired or flushed item found
 * on the way is unlinked.  A hit marks the item fetched and tells the
 * eviction policy it was used.
 */
struct item *engine_get(struct engine *e, const char *key, size_t nkey,
                        enum engine_miss *why);

/*
 * Like engine_get(), and on a hit also sets the item's exptime from the
 * client's exptime (gat/gats).
 */
struct item *engine_get_touch(struct engine *e, const char *key, size_t nkey,
                              int64_t exptime, enum engine_miss *why);

/* Sets the exptime of an existing item.  Returns true if the key was found. */
bool engine_touch(struct engine *e, const char *key, size_t nkey, int64_t exptime);

/* Why an allocation failed. */
enum engine_alloc_err {
    ENGINE_ALLOC_OK = 0,
    ENGINE_ALLOC_TOO_LARGE,     /* larger than item_size_max */
    ENGINE_ALLOC_NO_MEMORY,     /* memory full and nothing could be evicted (or -M) */
};

/*
 * Allocates an unlinked item for a store, with one reference for the
 * caller.  The caller fills the value through engine_item_iov(), then
 * passes it to engine_store() and finally drops its reference.  exptime is
 * the client's (0 never, <= 30 days relative, else absolute, negative =
 * already expired).  May evict other items to make room.
 */
struct item *engine_item_alloc(struct engine *e, const char *key, size_t nkey,
                               uint32_t flags, int64_t exptime, uint32_t nbytes,
                               enum engine_alloc_err *err);

/*
 * Describes the value bytes of an item as up to max iovecs (one for a
 * plain item, one per chunk for a chained large item).  Returns the number
 * of iovecs filled.  The memory is writable until the item is stored, and
 * readable while a reference is held.
 */
int engine_item_iov(const struct item *it, struct iovec *iov, int max);

/* The most iovecs engine_item_iov() can need for an item of this engine. */
int engine_item_iov_max(const struct engine *e);

/* Drops a reference taken by get/alloc. */
void engine_item_unref(struct engine *e, struct item *it);

enum engine_store_op {
    ENGINE_SET,
    ENGINE_ADD,
    ENGINE_REPLACE,
    ENGINE_APPEND,
    ENGINE_PREPEND,
    ENGINE_CAS,
};

enum engine_store_result {
    ENGINE_STORED,
    ENGINE_NOT_STORED,          /* add: exists; replace/append/prepend: missing */
    ENGINE_EXISTS,              /* cas: cas differs */
    ENGINE_NOT_FOUND,           /* cas: missing */
    ENGINE_STORE_NO_MEMORY,     /* append/prepend could not allocate the combined item */
};

/*
 * Links item it (from engine_item_alloc, value filled) under its key
 * according to op.  cas is the client's CAS for ENGINE_CAS and ignored
 * otherwise.  On ENGINE_STORED, *cas_out (if non-NULL) is the new item's
 * CAS.  Append/prepend build a new item with the old flags and exptime.
 * The caller keeps its reference and must still unref it.  An add that
 * finds the key present bumps the existing item in the eviction order.
 */
enum engine_store_result engine_store(struct engine *e, struct item *it,
                                      enum engine_store_op op, uint64_t cas,
                                      uint64_t *cas_out);

enum engine_delete_result {
    ENGINE_DELETED,
    ENGINE_DELETE_NOT_FOUND,
    ENGINE_DELETE_EXISTS,       /* cas given and different */
};

/* Deletes a key; cas 0 means any. */
enum engine_delete_result engine_delete(struct engine *e, const char *key, size_t nkey,
                                        uint64_t cas);

enum engine_arith_result {
    ENGINE_ARITH_OK,
    ENGINE_ARITH_NOT_FOUND,
    ENGINE_ARITH_NON_NUMERIC,   /* stored value is not a decimal u64 */
    ENGINE_ARITH_NO_MEMORY,
};

/*
 * incr/decr as memcached does them: incr wraps at 2^64, decr stops at 0.
 * When the new decimal is no longer than the stored value and nobody else
 * holds the item, it is rewritten in place and right-padded with spaces;
 * otherwise a new item of the exact length replaces it.  On success *value
 * is the new number and *cas_out (if non-NULL) the new CAS.
 */
enum engine_arith_result engine_arith(struct engine *e, const char *key, size_t nkey,
                                      bool incr, uint64_t delta, uint64_t *value,
                                      uint64_t *cas_out);

/*
 * flush_all: items stored at or before now + delay become invisible once
 * that moment has come (delay <= 0 means now).  delay follows exptime rules.
 */
void engine_flush(struct engine *e, int64_t delay);

/*
 * One bounded slice of background work: a few buckets of hash-table
 * migration, a few items of expiry crawling.  Returns the units of work
 * done (0 when there is nothing to do, so the caller may sleep longer).
 */
unsigned engine_step(struct engine *e, unsigned budget);

/* Totals, as `stats` names them. */
struct engine_stats {
    uint64_t curr_items, total_items, bytes;
    uint64_t evictions, reclaimed, expired_unfetched, evicted_unfetched, evicted_active;
    uint64_t crawler_reclaimed, crawler_items_checked;
    uint64_t total_malloced, limit_maxbytes;
    uint32_t hash_power_level;
    uint64_t hash_bytes;
    bool hash_is_expanding;
    uint32_t active_slabs;
};
void engine_stats(struct engine *e, struct engine_stats *out);

/* One slab class, as `stats slabs` and `stats items` name the fields. */
struct engine_class_stats {
    uint32_t chunk_size, chunks_per_page;
    uint64_t total_pages, total_chunks, used_chunks, free_chunks, free_chunks_end;
    uint64_t number, age, mem_requested;
    uint64_t evicted, evicted_nonzero, evicted_time, outofmemory, reclaimed;
    uint64_t expired_unfetched, evicted_unfetched, evicted_active;
    uint64_t crawler_reclaimed, crawler_items_checked;
};
/* Number of slab classes (ids 1..n). */
unsigned engine_nclasses(const struct engine *e);
/* Fills out for class id (1-based); returns false for an unknown id. */
bool engine_class_stats(struct engine *e, unsigned id, struct engine_class_stats *out);
/* The class an item of this total size would go to (0 if too large). */
unsigned engine_class_for(const struct engine *e, size_t ntotal);

#endif
