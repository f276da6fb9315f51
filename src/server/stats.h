/*
 * stats.h -- cellard's statistics: the per-worker counters and the
 * `stats` command (stats.c).
 *
 * Counters are per worker (struct worker_counters, in the worker's
 * struct mc_ctx), written only by that worker with relaxed atomics (one
 * writer: a plain load and store, no locked instruction) and summed by
 * whoever asks (stats_sum(), any thread).  `stats reset` never writes into
 * another worker's counters: it snapshots them into the worker's base
 * under the server's stats_lock, and readers subtract it.  The counters'
 * names are memcached's, declared once in the X-macro tables below.
 *
 * stats_run() and stats_text() run on the asking connection's worker and
 * write to its output; stats_collect() may run on any thread (the
 * --metrics page).  Nothing here blocks except on stats_lock.
 */
#ifndef CELLAR_SERVER_STATS_H
#define CELLAR_SERVER_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/worker.h"
#include "protocol/mc_text.h"
#include "storage/engine.h"

struct conn;
struct server;

/*
 * Per-worker counters, as memcached's per-thread stats name them (and
 * NET_STATS).  get_aborted_extstore: a multi-get given up after some of
 * its values were read from flash.  FIXME: nothing counts it yet (the
 * engine reads a value from flash inside engine_get(), so a get that
 * fails afterwards does not know it read any); it stays 0.
 */
#define WORKER_STATS(X)                                                    \
    X(get_cmds) X(get_misses)                                              \
    X(touch_cmds) X(touch_misses) X(delete_misses) X(incr_misses)          \
    X(decr_misses) X(cas_misses) X(set_cmds) X(flush_cmds) X(meta_cmds)    \
    X(store_too_large) X(store_no_memory) X(auth_cmds) X(auth_errors)      \
    X(get_aborted_extstore)

/* Per-worker, per-slab-class counters (`stats slabs`). */
#define SLAB_STATS(X)                                                      \
    X(set_cmds) X(delete_hits) X(incr_hits) X(decr_hits)                   \
    X(cas_hits) X(cas_badval) X(touch_hits)

struct slab_counters {
#define X(n) _Atomic uint64_t n;
    SLAB_STATS(X)
#undef X
    /* get hits by the segment the item was in (memcached's lru_hits,
       enum evict_lru); their sum is get_hits */
    _Atomic uint64_t lru_hits[EVICT_NLRU];
};

struct worker_counters {
    struct net_counters net;        /* the network core's (bytes_read, conn_yields...) */
#define X(n) _Atomic uint64_t n;
    WORKER_STATS(X)
#undef X
    struct slab_counters slab[ENGINE_MAX_CLASSES];
};

/* One writer per counter: a plain load and store, no locked instruction. */
#define STAT_ADD(var, v) \
    atomic_store_explicit(&(var), atomic_load_explicit(&(var), memory_order_relaxed) + (v), \
                          memory_order_relaxed)
#define STAT_INC(var) STAT_ADD(var, 1)
#define STAT_GET(var) atomic_load_explicit(&(var), memory_order_relaxed)

/* A get hit on it, counted by the segment it was found in. */
#define STAT_HIT(st, e, it, cls) STAT_INC((st)->slab[cls].lru_hits[engine_item_lru(e, it)])

/*
 * Where stats lines go: emit() gets each (name, value).  The text and
 * binary writers of stats.c and metrics.c's collector are sinks.
 */
struct stat_sink {
    void (*emit)(struct stat_sink *k, const char *name, const char *val);
    struct conn *c;                 /* the asking connection; NULL for stats_collect() */
    void *ctx;                      /* the emitter's own (metrics.c) */
    bool binary;
    uint32_t opaque;
};

/* STATS_NOEND: lines without the closing END (memcached's sizes_enable/_disable) */
enum stats_group { STATS_LINES, STATS_RESET, STATS_NOEND, STATS_UNKNOWN };

/* -o track_sizes: starts counting item sizes; false if the engine cannot. */
bool stats_sizes_start(struct server *s);
/* The lines of `stats <sub>` (len bytes) into k; says what kind of answer it was. */
enum stats_group stats_run(struct conn *c, struct stat_sink *k, const char *sub, size_t len);
/* The emit of a sink that answers on its connection, text or binary (k->binary, k->opaque). */
void stats_emit(struct stat_sink *k, const char *name, const char *val);
/* The text protocol's `stats ...` request, answered on c's output. */
void stats_text(struct conn *c, struct mc_req *req);
/* Every worker's counters added into out (zeroed by the caller). */
void stats_sum(struct server *s, struct worker_counters *out);
/*
 * The general (group ""), "items" or "slabs" lines into k, for any
 * thread (the sums and the engine's figures are read as `stats` reads
 * them).  false for another group.
 */
bool stats_collect(struct server *s, struct stat_sink *k, const char *group);

#endif
