/*
 * ctx.h -- what a request runs against: struct mc_ctx.
 *
 * Each worker owns one (a field of struct worker) and each of its
 * connections points at it (conn.ctx), so the dispatchers reach the
 * engine, the settings and the worker's counters in one hop, without
 * knowing the worker or the server.  The rarer server-wide state (the
 * crawler and detail switches, the watch hub, the tune lock) stays in
 * struct server, reached through srv (server.h).
 *
 * Threading: only the owning worker's thread uses a context, except its
 * counters, which `stats` sums from any thread (stats.h).  engine and
 * cfg are shared by all workers: the engine is thread-safe, and the
 * settings that commands change are changed under the server's tune_lock.
 */
#ifndef CELLAR_SERVER_CTX_H
#define CELLAR_SERVER_CTX_H

#include <sys/uio.h>

#include "server/conn.h"
#include "server/settings.h"
#include "server/stats.h"
#include "storage/engine.h"

struct server;

struct mc_ctx {
    struct engine *engine;
    struct settings *cfg;
    struct server *srv;             /* the server-wide rest (server.h) */
    int cfd;                        /* the fd of the client being served (watch lines' cfd) */
    struct iovec *iov;              /* room for the pieces of the largest item */
    int iov_max;
    struct conn_readahead pf;       /* the worker's read-ahead (conn.c) */
    struct worker_counters st;      /* the worker's counters (stats.h) */
};

#endif
