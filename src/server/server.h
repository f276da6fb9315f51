/*
 * server.h -- cellard's process-wide state: struct server.
 *
 *   acceptor (main thread)          workers (-t, one epoll loop each)
 *   listen fds --accept--> fd --queue+wake--> worker: conn for life
 *   (net/listener.h)                           read -> parse -> dispatch
 *   maintenance thread: clock, engine_step()      -> one writev per batch
 *   flash writer (-o ext_path): engine_ext_step()
 *                                              (net/worker.h: the loop, the
 *                                              buffers; worker.c: the rest)
 *
 * main.c fills it and starts the threads; the workers (worker.h) reach it
 * through their struct mc_ctx (ctx.h) for what is not per worker: the
 * engine and settings they share, the switches commands flip (atomics),
 * the watch hub, `stats detail` and the lock that serializes the commands
 * that change settings.  It is freed only after every thread has stopped.
 */
#ifndef CELLAR_SERVER_SERVER_H
#define CELLAR_SERVER_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/listener.h"
#include "net/worker.h"
#include "server/settings.h"
#include "storage/engine.h"

struct worker;
struct detail;
struct authfile;
struct sasl;
struct watch_hub;
struct extstore_writer;

struct server {
    struct net_server net;          /* workers' shared counts (curr_conns...), stop */
    struct settings *cfg;
    struct engine *engine;
    struct worker *workers;
    int nworkers;
    struct net_listeners listeners;
    _Atomic int verbose;
    _Atomic bool crawler_on;        /* lru_crawler enable / disable (dispatch.c) */
    _Atomic uint32_t crawler_sleep, crawler_tocrawl;  /* lru_crawler sleep / tocrawl */
    _Atomic bool detail_on;         /* stats detail on / off, -D (detail.c) */
    pthread_mutex_t tune_lock;      /* cfg fields that commands change (tune.c, dispatch.c) */
    struct detail *detail;
    struct watch_hub *watch;        /* watch.c */
    uint32_t started;               /* unix time */
    _Atomic uint64_t maint_loops;   /* maintenance rounds (memcached's lru_maintainer_juggles) */
    uint64_t fixed_conns;           /* listeners and UDP sockets: memcached counts each
                                       as a connection (set once at start) */
    atomic_bool accepting;
    _Atomic uint64_t reset_time;
    pthread_mutex_t stats_lock;     /* stats reset vs. readers */
    struct authfile *auth;          /* -Y: the user:password table; NULL: none */
    struct sasl *sasl;              /* -S: Cyrus SASL's setup (sasl.c); NULL: none */
    struct extstore_writer *extw;   /* the flash writer thread (extstore.c); NULL: none */
};

/*
 * Whether the engine's expiry crawl runs: it stands in for both memcached's
 * LRU crawler (crawler_on: -o no_lru_crawler, lru_crawler enable/disable)
 * and its LRU maintainer, which also reaps expired items (dispatch.c).
 */
static inline bool server_crawl_runs(const struct settings *cfg, bool crawler_on) {
    return crawler_on || cfg->lru_maintainer_thread;
}
/* The eviction policy's knobs as -o hot_lru_pct... and `lru tune` set them. */
static inline struct evict_tune server_lru_tune(const struct settings *cfg) {
    return (struct evict_tune){(unsigned)cfg->hot_lru_pct, (unsigned)cfg->warm_lru_pct,
                               cfg->hot_max_factor, cfg->warm_max_factor};
}

#endif
