/*
 * worker.h -- cellard's workers on the network core (worker.c).
 *
 * struct worker extends net's (struct net_worker, embedded first) with
 * the context its connections' requests run against (struct mc_ctx,
 * ctx.h), its UDP sockets and the `stats reset` snapshot of its counters.
 * Each worker is one thread with one loop; what it owns is touched only
 * by that thread, except the counters (read by `stats` from any thread)
 * and base (written under the server's stats_lock).
 *
 * worker_init_all() makes them before the TCP listeners listen;
 * worker_start_all() starts their threads; worker_stop_all() stops and
 * frees them (after which no connection exists).
 */
#ifndef CELLAR_SERVER_WORKER_H
#define CELLAR_SERVER_WORKER_H

#include <stdint.h>

#include "net/worker.h"
#include "server/ctx.h"
#include "server/server.h"
#include "server/stats.h"

struct worker {
    struct net_worker net;          /* its loop, connections, buffers */
    struct mc_ctx ctx;              /* engine, settings, counters, read-ahead (ctx.h) */
    int *udp_fds;                   /* this worker's UDP sockets (one per -l address) */
    int nudp;
    uint32_t idle_swept;            /* engine clock of the last idle sweep (-o idle_timeout) */
    struct worker_counters base;    /* snapshot at `stats reset` */
};

/* Workers, loops, UDP sockets: before listen().  -1 on error. */
int worker_init_all(struct server *s);
/* Their threads.  -1 on error. */
int worker_start_all(struct server *s);
/* Stops the threads, then frees the workers and what they hold. */
void worker_stop_all(struct server *s);

#endif
