/*
 * router.h -- cellar-router: memcache clients in, libcellar's routes out.
 *
 *   acceptor (main thread)           workers (-t, net/ loops)
 *   listen fds --accept--> fd ---->  client conn: parse (server codecs)
 *   signalfd: TERM/INT stop,           |  one rreq per request, in order
 *             HUP reload               v
 *   config file watched             rreq --cl_req per key--> libcellar handle
 *                                      ^   (this worker's backend connections,
 *                                      |    pipelined, the route tree)
 *                                   done callbacks: answers copied into the
 *                                   rreq; the queue's head is written out
 *                                   in the client's own protocol
 *
 * Every worker has one libcellar handle per configuration, so all of a
 * worker's clients share its few backend connections (coalescing).  A
 * client connection's requests are answered strictly in order: each is an
 * rreq on the connection's queue, and only the head's answer, once whole,
 * is written.  Keys and values are copied out of the read buffer into the
 * rreq, because the handle may send them after that buffer has moved.
 *
 * Threading: a worker's handle, connections and rreqs belong to its
 * thread.  The configuration is swapped by the main thread (reload) under
 * cfg_lock with a generation number each worker compares once per round.
 */
#ifndef CELLAR_ROUTER_ROUTER_H
#define CELLAR_ROUTER_ROUTER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/client_int.h"
#include "net/listener.h"
#include "net/worker.h"

#define ROUTER_VERSION "0.1.0"

/* Per-worker counters (`stats`), written by the worker only. */
#define ROUTER_STATS(X)                                                          \
    X(cmd_get) X(cmd_set) X(cmd_delete) X(cmd_touch) X(cmd_incr) X(cmd_decr)     \
    X(cmd_meta) X(cmd_flush) X(cmd_other) X(get_hits) X(get_misses)              \
    X(keys_sent) X(errors) X(local_errors) X(requests_inflight)

struct router_counters {
    struct net_counters net;
#define X(n) _Atomic uint64_t n;
    ROUTER_STATS(X)
#undef X
};

struct router;

/* A handle over one configuration; the old one finishes what it has in flight after a reload. */
struct rhandle {
    struct cellar *h;
    struct net_handler io;          /* h's descriptor in the worker's loop */
    struct rworker *w;
    unsigned gen;
    unsigned inflight;              /* requests submitted and not yet done */
    uint64_t deadline;              /* h's next timeout or probe (cl_now_ns), 0: none */
    struct rhandle *older;          /* handles of earlier configurations, draining */
};

struct rworker {
    struct net_worker net;
    struct router *rt;
    struct rhandle *cur;            /* the current configuration's handle */
    struct router_counters st;
};

struct router {
    struct net_server net;
    struct rworker *workers;
    int nworkers;
    struct net_listeners listeners;
    const char *config_path;
    pthread_mutex_t cfg_lock;       /* cfg and cfg_gen */
    struct cellar_config *cfg;
    _Atomic unsigned cfg_gen;
    _Atomic uint64_t reloads, reload_errors;
    uint32_t started;               /* unix time */
    int verbose;
};

/* proxy.c: the client connection's table of calls for net/. */
extern const struct net_conn_ops router_conn_ops;
/* proxy.c: sets up and tears down a worker's handles. */
int router_worker_init(struct router *rt, struct rworker *w, int id);
void router_worker_deinit(struct rworker *w);

/* Loads path as the new configuration: 0, or -1 with err (the old one stays). */
int router_config_load(struct router *rt, const char *path, char *err, size_t errlen);

#endif
