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
 * Two back ends sit under this one API: the slab allocator and hash table
 * (the default, memcached's layout), or, with engine_config.seg
 * (-o storage=seg), items packed in segments (seg.h), which the engine
 * hands out as views of the segment bytes (item_seg.c).  Callers cannot
 * tell them apart.
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

#include "storage/evict.h"
#include "storage/flash.h"
#include "storage/item.h"

#define ENGINE_KEY_MAX 250              /* longest key, bytes */
#define ENGINE_MAX_CLASSES 64           /* slab classes, 1-based ids */
#define ENGINE_REALTIME_MAXDELTA 2592000 /* 30 days: larger exptime is absolute */

struct engine;

/*
 * Values on flash (memcached's extstore; flash.h holds the page store).
 * With store.nfiles > 0 the slab back end moves values of at least
 * item_size bytes from its classes' cold ends to flash, leaving in memory
 * a small header item (the key, flags, TTL, CAS and where the value lies),
 * when they have been idle item_age seconds or when a class runs short of
 * free chunks and the page pool is down to an eighth of memory (kept for
 * headers); reading one reads the value back into
 * a fresh item (engine_get() and its kin do, in the calling thread), and
 * one read in recache_rate puts that item back in memory.  The segment
 * back end takes no flash tier (engine_create() refuses it).
 */
struct engine_ext_config {
    struct flash_config store;          /* ext_path (files), ext_page_size, ext_wbuf_size */
    uint32_t item_size;                 /* ext_item_size: smaller values stay (512) */
    uint32_t item_age;                  /* ext_item_age: idle seconds before a value may
                                           go anyway (UINT32_MAX: only when short) */
    uint32_t low_ttl;                   /* ext_low_ttl: shorter TTLs in their own pages (0) */
    uint32_t recache_rate;              /* ext_recache_rate: one read in so many brings
                                           the value back to memory (2000; 0: never) */
    uint32_t compact_under;             /* ext_compact_under: compact while fewer pages
                                           are free (0 at start: a quarter of them) */
    uint32_t drop_under;                /* ext_drop_under: with drop_unread, drop rather
                                           than rescue while fewer are free (0: a quarter) */
    double max_frag;                    /* ext_max_frag: compact pages less full (0.8) */
    bool drop_unread;                   /* ext_drop_unread: compaction keeps only what
                                           was read since written */
    uint32_t max_sleep_us;              /* ext_max_sleep: the writer's longest rest (1 s) */
    unsigned threads, io_depth;         /* ext_threads, ext_io_depth (1, 1) */
};

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
    const char *policy;        /* eviction policy name ("slru") */
    bool delete_hold;          /* -o delete_hold: engine_delete_hold() leaves a
                                  tombstone that refuses add (default false) */
    bool single_thread;        /* one thread only ever calls this engine (as in
                                  cellar-sim): its locks are left alone */
    struct evict_tune tune;    /* the policy's knobs (memcached's defaults; see evict.h) */
    bool no_expand;            /* the hash table never grows (-o no_hashexpand) */
    bool crawl;                /* engine_step() crawls for expired items (true;
                                  memcached's -o no_lru_crawler: false) */
    bool seg;                  /* -o storage=seg: items in segments (seg.h), page_size
                                  bytes each, evicted a segment at a time (policy
                                  "fifo"); default false: the slab allocator */
    bool reap;                 /* engine_step() reclaims dead items at the policies'
                                  oldest ends, as memcached's LRU maintainer does
                                  (default false; cellard: unless -o no_lru_maintainer) */
    int automove;              /* slab page mover's rule (engine_automove_set()): 0 off
                                  (default), 1 memcached's window, 2 on eviction, 3 age */
    double automove_ratio;     /* memcached's slab_automove_ratio (0.8) */
    unsigned automove_window;  /* memcached's slab_automove_window, seconds (30) */
    int32_t temp_ttl;          /* items with a TTL of at most this many seconds are
                                  transient (engine_lru_temp()); -1 (default): none */
    bool lru_flat;             /* memcached's flat LRU (engine_lru_flat()); default false */
    struct engine_ext_config ext;   /* the flash tier; store.nfiles 0 (default): none */
};

/* Fills in memcached's defaults. */
void engine_config_defaults(struct engine_config *cfg);

/*
 * Changes the memory limit at run time (`cache_memlimit`).  Raising it lets
 * classes take more pages; lowering it below what is taken gives back the
 * pages of the global pool above the limit, now and as the page mover
 * brings more there (engine_slabs_reassign(), the automover); stores
 * evict instead of growing meanwhile.  Segments keep theirs.
 */
void engine_set_mem_limit(struct engine *e, uint64_t bytes);

/*
 * `slabs reassign <src> <dst>`: asks the maintenance step to move one slab
 * page from class src (-1: any class with a spare page; 0: the global
 * page pool) to class dst (0: the pool).  Answers at once, as memcached's
 * slabs_reassign(): OK (the move is queued; engine_step() does it),
 * RUNNING (a move is under way), SAME, BADCLASS, NOSPARE (src has fewer
 * than two pages).  Under storage=seg nothing moves: the answer is given
 * for its one class.
 */
enum engine_reassign {
    ENGINE_REASSIGN_OK,
    ENGINE_REASSIGN_RUNNING,
    ENGINE_REASSIGN_BADCLASS,
    ENGINE_REASSIGN_NOSPARE,
    ENGINE_REASSIGN_SAME,
};
enum engine_reassign engine_slabs_reassign(struct engine *e, int32_t src, int32_t dst);

/*
 * The automover's rule (engine_config.automove), ratio and window, as
 * `slabs automove` and `slabs automove ratio` change them at run time.
 */
void engine_automove_set(struct engine *e, int mode, double ratio, unsigned window);

/* New knobs for the eviction policy of every class (`lru tune`). */
void engine_lru_tune(struct engine *e, const struct evict_tune *t);

/*
 * Transient items (memcached's TEMP LRU, -o temporary_ttl and `lru
 * temp_ttl`): an item stored from now on with a TTL of at most ttl seconds
 * is kept apart from the eviction policy, in its class's wheel of
 * per-second lists: never bumped, never evicted, and reclaimed by
 * engine_step() in the second it expires (counted in reclaimed).  ttl < 0
 * turns it off for items stored later.  `stats items` shows them as
 * number_temp, their hits as hits_to_temp.  Slab back end only: segments
 * already free a TTL bucket's segments whole when their TTL has passed.
 */
void engine_lru_temp(struct engine *e, int32_t ttl);

/*
 * memcached's flat LRU (`lru mode flat`, -o no_lru_maintainer): every
 * allocation first reclaims dead items from the class's oldest end, as
 * memcached's do_item_alloc() pulls the COLD tail before each allocation
 * when lru_segmented is off.  The eviction policy itself stays the one the
 * engine was created with.
 */
void engine_lru_flat(struct engine *e, bool flat);

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
    ENGINE_MISS_NOMEM,          /* there, its value on flash, and no memory could be
                                   had to read it into (memcached's get_oom_extstore) */
};

/*
 * Read-ahead for a batch of lookups (a multi-get, pipelined gets): give
 * the keys' hashes (engine_key_hash()) and the engine starts loading their
 * hash buckets and then their items, so that the lookups that follow
 * overlap their cache misses instead of taking them one after another.
 * Bit i of stores (for the first 64 keys) says key i is about to be
 * stored: the item it replaces will leave its eviction queue, so that
 * item's queue neighbours, which the unlink writes, are loaded too.  Only
 * a hint: it changes nothing.
 */
uint64_t engine_key_hash(const char *key, size_t nkey);
#define ENGINE_PREFETCH_MAX 64      /* keys per call; more are ignored */
void engine_prefetch(struct engine *e, const uint64_t *hv, unsigned n, uint64_t stores);
/*
 * For a lone request with work to do before its lookup (a store reads its
 * value first): starts loading the key's lock stripe and bucket and
 * returns at once.
 */
void engine_prefetch_one(struct engine *e, uint64_t hv);

/*
 * Looks a key up.  Returns the item with a reference for the caller, or
 * NULL (and *why, if non-NULL, says why).  An expired or flushed item found
 * on the way is unlinked.  A hit marks the item fetched and tells the
 * eviction policy it was used.
 */
struct item *engine_get(struct engine *e, const char *key, size_t nkey,
                        enum engine_miss *why);

/* engine_get() for a caller that already has the key's engine_key_hash(). */
struct item *engine_get_hashed(struct engine *e, const char *key, size_t nkey, uint64_t hv,
                               enum engine_miss *why);

/* What engine_get_copy() shows of a hit: valid only during the call. */
struct engine_hit {
    const char *key, *value;
    uint32_t nkey, nbytes, flags;
    uint64_t cas;
    unsigned clsid, lru;        /* for stats: its slab class and engine_item_lru() */
};
typedef void (*engine_copy_fn)(void *arg, const struct engine_hit *h);

/*
 * engine_get_hashed() for a reader that copies small values: a hit whose
 * value lies in one piece of at most max bytes is shown to fn under the
 * key's lock, no reference taken, and *copied is set (fn keeps no pointer
 * and calls nothing of the engine).  Any other hit is returned with a
 * reference, as engine_get_hashed() returns it.  NULL: a miss (*why, if
 * non-NULL, as for engine_get()), or copied.
 */
struct item *engine_get_copy(struct engine *e, const char *key, size_t nkey, uint64_t hv,
                             uint32_t max, engine_copy_fn fn, void *arg, bool *copied,
                             enum engine_miss *why);

/*
 * Like engine_get(), and on a hit also sets the item's exptime from the
 * client's exptime (gat/gats).
 */
struct item *engine_get_touch(struct engine *e, const char *key, size_t nkey,
                              int64_t exptime, enum engine_miss *why);

/* Sets the exptime of an existing item.  Returns its slab class, 0 if the key was not found. */
unsigned engine_touch(struct engine *e, const char *key, size_t nkey, int64_t exptime);

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
 * according to op.  cas is the client's CAS for ENGINE_CAS (where 0, as in
 * memcached 1.6.18, never matches: under -C every cas store fails), checked
 * by append/prepend when non-zero, and ignored otherwise.  On
 * ENGINE_STORED, *cas_out (if non-NULL) is the new item's CAS.
 * Append/prepend build a new item with the old flags and exptime.  The
 * caller keeps its reference and must still unref it.  An add that finds
 * the key present bumps the existing item in the eviction order.
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
/*
 * Switches the expiry crawl of engine_step() on or off; engine_crawl_now()
 * ends its rest between passes, so that the next step starts a pass.
 */
void engine_set_crawl(struct engine *e, bool on);
bool engine_crawl(struct engine *e);
void engine_crawl_now(struct engine *e);

/*
 * `lru_crawler crawl <classes>`: one crawl of the slab classes in classes
 * (bit i: class i) for dead items, run by the following engine_step()s
 * whether or not the background crawl is on, reclaiming them into each
 * class's crawler_reclaimed and counting crawler_items_checked, as
 * memcached's crawler does.  BUSY while an earlier request is under way
 * (engine_stats' crawler_running), NOTSTARTED for no class.  Under
 * storage=seg, which has no classes to walk, it ends the crawl's rest.
 */
enum engine_crawl_result { ENGINE_CRAWL_OK, ENGINE_CRAWL_BUSY, ENGINE_CRAWL_NOTSTARTED };
enum engine_crawl_result engine_crawl_request(struct engine *e, uint64_t classes);

/*
 * Dumps (`lru_crawler metadump`): a walk over every live item that the
 * caller advances a slice at a time, between its other work, so that
 * dumping millions of items holds no lock for long and needs no buffer for
 * all of them.  Each slice walks hash buckets under their stripe locks.
 * From engine_dump_begin() to engine_dump_end() the table starts no
 * doubling (engine_step() waits; a doubling already under way is finished
 * by the dump's own first steps), so an item linked for the whole walk is
 * seen exactly once; one stored or deleted meanwhile may or may not be.
 * Expired, flushed and held-off (delete_hold) items are left out.
 */
struct engine_dump_item {
    const char *key;
    unsigned nkey;
    int64_t exptime;            /* unix time; 0 = never */
    int64_t atime;              /* unix time of the last access */
    uint64_t cas;
    uint32_t nbytes;            /* value length */
    uint64_t ntotal;            /* header, key and value bytes */
    unsigned clsid;
    bool fetched;
    uint32_t flags;             /* client flags */
    const struct item *it;      /* the item itself: its value through
                                   engine_item_iov() and its state bits
                                   (item.h), readable in the call only */
};
/* Called with the item's stripe held: copy what is needed, call nothing in the engine. */
typedef void (*engine_dump_fn)(const struct engine_dump_item *d, void *arg);
/* Starts a walk; *cursor is its position, for the steps. */
void engine_dump_begin(struct engine *e, uint64_t *cursor);
/* Walks about budget buckets and items on.  Returns false once the walk is complete. */
bool engine_dump_step(struct engine *e, uint64_t *cursor, unsigned budget, engine_dump_fn fn,
                      void *arg);
/* Ends a walk, complete or not. */
void engine_dump_end(struct engine *e);
/*
 * The part-th of nparts slices of a walk, whole (between engine_dump_begin()
 * and engine_dump_end()): the slices of one walk see every item exactly
 * once between them, so that threads can share a dump (persist.c).  The
 * step's budget is one bucket or item, so a slice never reads into the
 * next.
 */
void engine_dump_part(struct engine *e, unsigned part, unsigned nparts, engine_dump_fn fn,
                      void *arg);

/*
 * ---- Meta commands: leases and stale values ----
 *
 * memcached 1.6's meta protocol (mg/ms/md/ma) carries the leases of
 * "Scaling Memcache at Facebook" (section 3.2) in their modern form.  Two
 * item states drive them: TOKEN_SENT (somebody holds the right to recache
 * the key) and STALE (the value was invalidated but may still be served).
 *
 *                 mget vivify, miss                 mstore, CAS matches
 *   (no item) ---------------------> PLACEHOLDER ----------------------> FRESH
 *       ^         caller: won        empty value,    (new item, no state)
 *       |         later: token_sent  TOKEN_SENT         |
 *       +-- placeholder's TTL passes ----+              | mdelete invalidate
 *           (the next miss wins again)                  v  (new CAS, token
 *                                                     STALE    cleared)
 *   FRESH --mget recache, TTL below its token--> TOKEN_SENT  |
 *                                                            | first mget:
 *   STALE + TOKEN_SENT <-------------------------------------+ won, later
 *     | mstore, CAS matches            -> FRESH                token_sent
 *     | mstore invalidate, older CAS   -> value replaced, still STALE,
 *     |                                   TTL and TOKEN_SENT kept
 *     | mstore, older CAS              -> ENGINE_EXISTS ("no stale sets")
 *
 * A lease is the item's CAS: the winner reads it (meta.won) together with
 * the CAS and stores with a compare, so an invalidation in between (which
 * gives the item a new CAS) makes the winner's store fail.  Placeholders
 * are ordinary items of 0 bytes: they count against the memory limit, are
 * evicted like others and answer plain get with an empty value.
 *
 * The options are plain values; the server maps the request's flags onto
 * them.  Three meta flags interact through the item's exptime and are
 * evaluated in request order (memcached: `mg k t T5` shows the old TTL,
 * `mg k T5 t` the new one); the *_at fields give each its position in the
 * request (any increasing numbering, such as the token index; equal
 * positions apply touch, then vivify, then recache).  ttl_at 0 reads the
 * TTL after all of them.
 *
 * Every function here takes one item stripe and no other item lock, like
 * the calls above.  Options marked [HEAD] exist in later memcached (1.6.18
 * answers "invalid flag" to them); zero turns them off.
 */

/* How a meta command found an item, for its return flags. */
struct engine_item_meta {
    int64_t ttl;                /* remaining seconds at ttl_at, -1 = never;
                                   memcached's unsigned difference for an
                                   exptime already past (a negative touch) */
    uint32_t last_access;       /* seconds since last access, before this call */
    bool fetched;               /* read before this call */
    bool won;                   /* the caller won the right to recache */
    bool token_sent;            /* somebody else won it earlier */
    bool stale;                 /* the value is marked stale */
    bool created;               /* this call created the item (vivify) */
};

/*
 * Fills m for an item the caller holds a reference on (ttl as of now,
 * won and created false).  Takes the item's stripe briefly.
 */
void engine_item_meta(struct engine *e, const struct item *it, struct engine_item_meta *m);

struct engine_mget_opts {
    bool no_bump;               /* leave LRU order, fetched and last access alone */
    bool touch;                 /* set exptime to touch_exptime (client rules) */
    int64_t touch_exptime;
    unsigned touch_at;
    bool vivify;                /* on a miss create an empty placeholder, win */
    int64_t vivify_exptime;     /* its exptime, applied at vivify_at */
    unsigned vivify_at;
    bool recache;               /* win if no token is out, the item has an */
    int64_t recache_exptime;    /*   exptime and it comes before this one */
    unsigned recache_at;
    unsigned ttl_at;            /* where meta->ttl is read; 0 = at the end */
    uint64_t vivify_cas;        /* [HEAD] CAS of a vivified item; 0 = next */
    bool no_claim;              /* decide meta->won but do not mark the item
                                   TOKEN_SENT: for a request that fails after its
                                   steps (memcached's late "opaque token too
                                   long"), and with no_bump for a pure look (me) */
};

/*
 * memcached 1.6.18's mg.  Returns the item with a reference for the caller
 * (fill meta) or NULL on a miss (*why says why, as for engine_get; it is
 * also set when a dead item was replaced by a vivified one).  A stale item
 * whose token is not out yet is won by this caller; a win marks the item
 * TOKEN_SENT.  meta->token_sent and meta->won are never both true.  Unless
 * no_bump, the hit is marked fetched and reported to the eviction policy
 * after fetched/last_access were read.  A vivify that finds no memory, or a
 * key under a delete hold-off, answers a plain miss.
 */
struct item *engine_mget(struct engine *e, const char *key, size_t nkey,
                         const struct engine_mget_opts *o, struct engine_item_meta *meta,
                         enum engine_miss *why);

enum engine_mstore_mode {
    ENGINE_MSTORE_SET,
    ENGINE_MSTORE_ADD,
    ENGINE_MSTORE_REPLACE,
    ENGINE_MSTORE_APPEND,
    ENGINE_MSTORE_PREPEND,
};

struct engine_mstore_opts {
    enum engine_mstore_mode mode;
    bool compare;               /* compare cas: set/replace become cas semantics, */
    uint64_t cas;               /*   append/prepend check a non-zero cas */
    bool invalidate;            /* with compare on set/replace: a cas lower than
                                   the item's stores anyway, as a stale value */
    uint64_t new_cas;           /* [HEAD] CAS for the stored item; 0 = next */
    bool vivify;                /* [HEAD] append/prepend on a miss store it as */
    int64_t vivify_exptime;     /*   is, with this exptime */
    bool key_binary;            /* mark the stored item ITEM_KEY_BINARY (meta b);
                                   the combined item of append/prepend does not
                                   get it, as in memcached */
};

struct engine_mstore_out {
    uint64_t cas;               /* CAS of the stored item (0 unless stored) */
    uint32_t nbytes;            /* its value length (append/prepend: combined) */
    bool stale;                 /* it was stored stale (invalidate) */
};

/*
 * memcached 1.6.18's ms, second phase: links it (from engine_item_alloc,
 * value filled, exptime and client flags from the request) like
 * engine_store().  Returns ENGINE_STORED, ENGINE_NOT_STORED (add: present;
 * replace/append/prepend: missing), ENGINE_EXISTS (cas differs: also a
 * compare with cas 0, which 1.6.18 never matches on set/replace),
 * ENGINE_NOT_FOUND (compare on set/replace, missing) or
 * ENGINE_STORE_NO_MEMORY (append/prepend could not allocate the combined
 * item; 1.6.18 answers NS).  Storing replaces a placeholder or a stale item
 * and clears their state, except for an invalidate store with an older
 * cas, which keeps the old exptime, stays STALE and keeps TOKEN_SENT.  An
 * add of a key under a delete hold-off is refused.  The caller keeps its
 * reference.  out may be NULL.
 */
enum engine_store_result engine_mstore(struct engine *e, struct item *it,
                                       const struct engine_mstore_opts *o,
                                       struct engine_mstore_out *out);

struct engine_mdelete_opts {
    bool compare;               /* act only when the item's CAS equals cas */
    uint64_t cas;
    bool invalidate;            /* keep the item: mark it stale, clear its token,
                                   give it a new CAS */
    bool touch;                 /* with invalidate (or remove_value): new exptime */
    int64_t touch_exptime;
    uint64_t new_cas;           /* [HEAD] CAS for the invalidated or emptied item */
    bool remove_value;          /* [HEAD] replace the value with an empty one,
                                   keeping the key (and its CAS unless new_cas) */
    uint32_t flags;             /* [HEAD] client flags of the emptied item */
};

enum engine_mdelete_result {
    ENGINE_MDELETE_DELETED,     /* unlinked (or emptied, remove_value) */
    ENGINE_MDELETE_INVALIDATED, /* marked stale and kept */
    ENGINE_MDELETE_NOT_FOUND,
    ENGINE_MDELETE_EXISTS,      /* compare and the CAS differs */
    ENGINE_MDELETE_NO_MEMORY,   /* remove_value found no memory for the empty item */
};

/* memcached 1.6.18's md.  *clsid (if non-NULL): the slab class of the item found, else 0. */
enum engine_mdelete_result engine_mdelete(struct engine *e, const char *key, size_t nkey,
                                          const struct engine_mdelete_opts *o, unsigned *clsid);

struct engine_marith_opts {
    bool decr;                  /* false: incr (wraps at 2^64); true: decr (stops at 0) */
    uint64_t delta;             /* memcached's default is 1: set it */
    bool compare;               /* a non-zero cas must equal the item's */
    uint64_t cas;
    bool vivify;                /* on a miss store initial as decimal, flags 0 */
    int64_t vivify_exptime;     /* its exptime, applied at vivify_at */
    uint64_t initial;
    unsigned vivify_at;
    bool touch;                 /* set exptime, applied at touch_at */
    int64_t touch_exptime;
    unsigned touch_at;
    unsigned ttl_at;            /* where out->ttl is read; 0 = at the end */
    uint64_t new_cas;           /* [HEAD] CAS for the changed or created item */
};

struct engine_marith_out {
    uint64_t value;             /* the new number (created: initial) */
    uint64_t cas;               /* the item's new CAS */
    int64_t ttl;                /* remaining seconds at ttl_at, -1 = never */
    unsigned clsid;             /* slab class of the item computed on (0: none) */
    bool created;               /* vivified; with ENGINE_MARITH_NO_MEMORY: the
                                   allocation that failed was the vivify */
};

enum engine_marith_result {
    ENGINE_MARITH_OK,
    ENGINE_MARITH_NOT_FOUND,    /* missing and no vivify */
    ENGINE_MARITH_EXISTS,       /* compare and the CAS differs */
    ENGINE_MARITH_NON_NUMERIC,  /* empty, chained or not a decimal u64 */
    ENGINE_MARITH_NO_MEMORY,
    ENGINE_MARITH_NOT_STORED,   /* vivify refused: key under a delete hold-off */
};

/*
 * memcached 1.6.18's ma, and the binary protocol's incr/decr, on the same
 * path as engine_arith() (in place and space-padded when only the table
 * holds the item, else a new item).  Checks run in memcached's order:
 * empty or chained value, then the CAS, then the number.  A vivified
 * item is created under the same stripe, so exactly one caller creates it.
 *
 * memcached applies the touch to the item it computed on: when the number
 * needed a new item, that is the old one, so out->ttl shows the touch but
 * the stored item keeps its exptime (observed on 1.6.18: `set n 0 0 1` 9,
 * `ma n T100 t` -> t100, `mg n t` -> t-1).  We do the same.  When only
 * cellard needs a new item (the number fits but a reader still holds the
 * old one, see engine_arith()), the copy stands for the item memcached
 * rewrote in place: it keeps its state bits and takes the touch.
 *
 * Binary incr/decr (delta, initial, expiration; header cas) maps to:
 * decr = opcode is decrement, delta, compare = cas != 0, cas,
 * vivify = expiration != 0xffffffff, vivify_exptime = expiration,
 * initial; out->value is the 8-byte answer and out->cas the header CAS.
 */
enum engine_marith_result engine_marith(struct engine *e, const char *key, size_t nkey,
                                        const struct engine_marith_opts *o,
                                        struct engine_marith_out *out);

/*
 * The paper's delete hold-off (section 4.3, cold cluster warm-up): deletes
 * key and, for the next `seconds`, refuses to create it by add (engine_store
 * ENGINE_ADD, engine_mstore ENGINE_MSTORE_ADD -> ENGINE_NOT_STORED), by
 * vivify (engine_mget: a miss; engine_marith: ENGINE_MARITH_NOT_STORED;
 * mstore vivify: ENGINE_NOT_STORED).  Meanwhile every lookup misses and a
 * set (or cas, replace... which see no item) behaves as on a missing key;
 * a set ends the hold.  The hold is a tombstone item of 0 bytes: it counts
 * against the memory limit and in curr_items, and is evicted like any item
 * (best effort: with no memory for it, the key is only deleted).  A hold
 * is placed whether or not the key existed.  Without cfg.delete_hold, or
 * with seconds 0, this is engine_delete(e, key, nkey, 0).  Returns
 * ENGINE_DELETED when a live item was deleted (*clsid, if non-NULL: its
 * slab class), else ENGINE_DELETE_NOT_FOUND (*clsid 0).
 */
enum engine_delete_result engine_delete_hold(struct engine *e, const char *key, size_t nkey,
                                             uint32_t seconds, unsigned *clsid);

/* Totals, as `stats` names them. */
struct engine_stats {
    uint64_t curr_items, total_items, bytes;
    uint64_t evictions, reclaimed, expired_unfetched, evicted_unfetched, evicted_active;
    uint64_t crawler_reclaimed, crawler_items_checked;
    uint64_t get_expired, get_flushed;      /* lookups of any kind that met a dead item */
    uint64_t crawler_starts;                /* expiry crawler passes begun */
    bool crawler_running;                   /* an engine_crawl_request() under way */
    uint64_t moves_to_cold, moves_to_warm, moves_within_lru;   /* a segmented policy's */
    uint64_t total_malloced, limit_maxbytes;
    uint32_t hash_power_level;
    uint64_t hash_bytes;
    bool hash_is_expanding;
    uint32_t active_slabs;
    /* the slab page mover's, memcached's names (all 0 under storage=seg) */
    uint64_t slab_reassign_rescues, slab_reassign_chunk_rescues;
    uint64_t slab_reassign_evictions_nomem, slab_reassign_inline_reclaim;
    uint64_t slab_reassign_busy_items, slab_reassign_busy_deletes, slabs_moved;
    bool slab_reassign_running;
    uint64_t slab_global_page_pool;
    /* the flash tier's (memcached's names; all 0 without one) */
    bool ext_on;
    uint64_t get_extstore, get_oom_extstore, recache_from_extstore;
    uint64_t miss_from_extstore, badcrc_from_extstore;
    uint64_t extstore_compact_lost, extstore_compact_rescues, extstore_compact_skipped;
    struct flash_stats flash;
};
void engine_stats(struct engine *e, struct engine_stats *out);

/*
 * The flash tier's background work (engine_ext_config): one bounded slice
 * of moving values to flash, compacting and reclaiming pages.  Meant for
 * one thread (cellard's flash writer), which rests between slices that
 * did nothing (returns 0), up to max_sleep_us.  Does nothing without a
 * flash tier.
 */
unsigned engine_ext_step(struct engine *e, unsigned budget);
/* The flash tier's settings now, and new ones taken at run time (memcached's
   `extstore` command: every field but store, threads and io_depth). */
void engine_ext_get(struct engine *e, struct engine_ext_config *out);
void engine_ext_tune(struct engine *e, const struct engine_ext_config *c);
/* The page store, for `stats extstore` (flash_page_infos()); NULL without one. */
struct flash *engine_flash(struct engine *e);

/*
 * `stats reset`: zeroes what memcached's resets of the engine's counters
 * (evictions, reclaims, the crawler's counts and passes, total_items, the
 * dead-item lookups); what is stored now (curr_items, bytes) stays.
 */
void engine_stats_reset(struct engine *e);

/* One slab class, as `stats slabs` and `stats items` name the fields. */
struct engine_class_stats {
    uint32_t chunk_size, chunks_per_page;
    uint64_t total_pages, total_chunks, used_chunks, free_chunks, free_chunks_end;
    uint64_t number, age, mem_requested;
    uint64_t evicted, evicted_nonzero, evicted_time, outofmemory, reclaimed;
    uint64_t expired_unfetched, evicted_unfetched, evicted_active;
    uint64_t crawler_reclaimed, crawler_items_checked;
    struct evict_segments seg;          /* by segment (all COLD for a flat policy) */
};
/*
 * The segment a found item is in (enum evict_lru), for memcached's
 * hits_to_hot|warm|cold|temp: EVICT_COLD under a policy without segments.
 * The caller holds a reference; cheap enough for every hit.
 */
unsigned engine_item_lru(const struct engine *e, const struct item *it);

/* Number of slab classes (ids 1..n). */
unsigned engine_nclasses(const struct engine *e);
/* Fills out for class id (1-based); returns false for an unknown id. */
bool engine_class_stats(struct engine *e, unsigned id, struct engine_class_stats *out);
/* The class an item of this total size would go to (0 if too large). */
unsigned engine_class_for(const struct engine *e, size_t ntotal);

/*
 * Watching, for memcached's `watch` command: while a kind is switched on,
 * the engine reports each event of that kind to the hook, in the thread
 * that caused it.  A lookup (every get, and the lookup inside each store,
 * delete, touch and arithmetic, as memcached's item fetches are) is
 * reported with the item's stripe held; a store and an eviction after the
 * locks are let go (under storage=seg an eviction with the item's stripe
 * held: a segment's items go one by one).  The hook must not call the engine.
 */
enum engine_watch_kind {
    ENGINE_WATCH_FETCH = 1,
    ENGINE_WATCH_STORE = 2,
    ENGINE_WATCH_EVICT = 4,
};
struct engine_watch_event {
    enum engine_watch_kind kind;
    const char *key;            /* FETCH: the key asked for */
    size_t nkey;
    const struct item *it;      /* FETCH: the item found (NULL on a miss); STORE: the
                                   item stored or refused; EVICT: the victim */
    enum engine_miss miss;      /* FETCH: why it missed (expired and flushed items
                                   found in the table, until they are reaped) */
    enum engine_store_result status;    /* STORE */
    enum engine_store_op op;    /* STORE */
    int64_t ttl;                /* STORE, EVICT: item_ttl() as of now (-1: never) */
    uint32_t idle;              /* EVICT: seconds since its last access */
};
typedef void (*engine_watch_fn)(void *arg, const struct engine_watch_event *ev);
/* Sets the hook, once, before the engine is shared between threads. */
void engine_watch_hook(struct engine *e, engine_watch_fn fn, void *arg);
/* Which kinds are reported (a mask of engine_watch_kind; 0: none). */
void engine_watch_set(struct engine *e, unsigned kinds);

/*
 * `stats sizes`: how many linked items there are of each size, in 32-byte
 * steps of base + nkey + nbytes + (flags != 0 ? 4 : 0), for items stored
 * after the histogram was enabled (those stored before are neither added
 * nor taken away), up to item_size_max.  With base = memcached's item
 * header and terminators, the sizes are the ones memcached counts.
 * Enabling needs CAS (engine_config.use_cas) and takes a CAS value, as
 * memcached's does; the first enable allocates the counters.
 */
bool engine_sizes_enable(struct engine *e, unsigned base);
void engine_sizes_disable(struct engine *e);
/* Calls fn for each nonzero step (bytes: its upper end); false when disabled. */
bool engine_sizes(struct engine *e, void (*fn)(void *arg, uint64_t bytes, uint64_t count),
                  void *arg);

#endif
