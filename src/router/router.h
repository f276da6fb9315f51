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

#include "client/route.h"
#include "client/route_api.h"
#include "core/clock.h"
#include "core/httpd.h"
#include "core/authfile.h"
#include "net/listener.h"
#include "net/tls.h"
#include "net/worker.h"

#define ROUTER_VERSION "0.1.0"
#define MC_VERSION "1.6.18"         /* the memcached release whose protocol we speak */

/*
 * Per-worker counters, written by the worker only: X(name in `stats`,
 * metric family in /metrics (cellar_router_<family>[_total]), its label or
 * NULL, help (NULL: the family's, given on its first member), gauge?).
 * A family's members are consecutive.
 */
#define ROUTER_STATS(X)                                                                      \
    X(cmd_get, "commands", "cmd=\"get\"",                                                    \
      "Requests taken from clients, by command (get: per key; meta: every meta command)", 0) \
    X(cmd_set, "commands", "cmd=\"set\"", NULL, 0)                                           \
    X(cmd_delete, "commands", "cmd=\"delete\"", NULL, 0)                                     \
    X(cmd_touch, "commands", "cmd=\"touch\"", NULL, 0)                                       \
    X(cmd_incr, "commands", "cmd=\"incr\"", NULL, 0)                                         \
    X(cmd_decr, "commands", "cmd=\"decr\"", NULL, 0)                                         \
    X(cmd_meta, "commands", "cmd=\"meta\"", NULL, 0)                                         \
    X(cmd_flush, "commands", "cmd=\"flush_all\"", NULL, 0)                                   \
    X(cmd_other, "commands", "cmd=\"other\"", NULL, 0)                                       \
    X(get_hits, "get_hits", NULL, "Keys of get-family requests answered with a value", 0)   \
    X(get_misses, "get_misses", NULL, "Keys of get-family requests answered without one", 0) \
    X(keys_sent, "keys_sent", NULL, "Keys (and flush_all's parts) sent down the route tree", 0) \
    X(errors, "errors", NULL, "Keys answered with an error (backend failed, SERVER_ERROR)", 0) \
    X(client_errors, "client_errors", NULL, "Keys of those answered CLIENT_ERROR", 0)       \
    X(remote_errors, "remote_errors", NULL, "Keys of those answered SERVER_ERROR (a server, an ErrorRoute)", 0) \
    X(local_errors, "local_errors", NULL, "Requests the router refused itself (bad syntax)", 0) \
    X(auth_cmds, "auth_cmds", NULL, "Authentication tokens checked (--auth-file)", 0)       \
    X(auth_errors, "auth_errors", NULL, "Authentication tokens refused (--auth-file)", 0)    \
    X(clients_throttled, "clients_throttled", NULL,                                         \
      "Times a client was not read from: its answers unread, or over --client-max-bytes", 0) \
    X(clients_closed_slow, "clients_closed_slow", NULL,                                     \
      "Clients closed for not reading their answers (hard bound or output timeout)", 0)    \
    X(bytes_held, "bytes_held", NULL,                                                        \
      "Bytes of backends' answers held for clients, not yet written to them", 1)           \
    X(requests_inflight, "requests_inflight", NULL,                                          \
      "Keys sent down the route tree and not yet answered", 1)

/* Adds n (or, wrapping, takes away) to a counter or gauge only its worker writes. */
#define RSTAT_ADD(var, n) cl_count(&(var), (uint64_t)(n))

struct router_counters {
    struct net_counters net;
#define X(n, ...) _Atomic uint64_t n;
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
    uint64_t deadline;              /* h's next timeout or probe (clock_mono_ns), 0: none */
    struct rhandle *older;          /* handles of earlier configurations, draining */
};

struct rreq;

struct rworker {
    struct net_worker net;
    struct router *rt;
    /*
     * lock: cur and every rhandle's older link and lifetime, so that
     * another thread (admin.c) may walk the worker's handles and read
     * their servers' counters (cl_conn_counters); the worker takes it
     * only to link a new handle or unlink an old one.
     */
    pthread_mutex_t lock;
    struct rhandle *cur;            /* the current configuration's handle */
    uint64_t failovers_gone;        /* under lock: the failovers of handles freed */
    double reply_est;               /* what an answer is worth in bytes, as its clients'
                                       estimates reckon it (proxy.c); a new client's first */
    uint32_t slow_check;            /* unix time of the last output-timeout check */
    uint64_t held_peak;             /* the most bytes_held since the heap was last trimmed */
    struct rreq *later;             /* delayed flush_alls, the soonest first (proxy.c) */
    struct router_counters st;
};

struct router {
    struct net_server net;
    struct rworker *workers;
    int nworkers;
    struct net_listeners listeners;
    const char *config_path;
    const char *route_prefix;       /* -R: the default routing prefix */
    const char *config_params;      /* --config-params: the config's %NAME%s */
    const char *runtime_vars_path;  /* --runtime-vars-file: shadows' runtime variables */
    struct authfile *auth;          /* --auth-file: clients authenticate first; NULL: none */
    struct cellar_tls backend_tls;  /* --pem-ca-path, --pem-cert-path, --pem-key-path: TLS
                                       toward the pools with "use_ssl" */
    bool enable_flush;              /* --enable-flush-cmd: flush_all is sent on, not refused */
    bool enable_shutdown;           /* -A: a client's shutdown stops the router */
    bool mcrouter_errors;           /* --mcrouter-errors: mcrouter's words for bad lines,
                                       keys too long and unknown stats groups, where
                                       memcached's are the default */
    bool allow_only_gets;           /* --allow-only-gets: other requests get NullRoute's answer */
    long big_value_split;           /* --big-value-split-threshold (0: off) */
    long big_value_batch;           /* --big-value-batch-size (0: all) */
    int server_timeout_ms;          /* --server-timeout: the pools' default (0: libcellar's) */
    int probe_min_ms;               /* -r: the pools' first probe (0: libcellar's) */
    int tko_timeouts;               /* --timeouts-until-tko: the same */
    bool send_invalid_route_to_default;
    pthread_mutex_t cfg_lock;       /* cfg and cfg_gen */
    struct cellar_config *cfg;
    _Atomic int64_t config_loaded;  /* when cfg was loaded (unix time): config_age */
    _Atomic unsigned cfg_gen;
    _Atomic uint64_t reloads, reload_errors;
    uint32_t started;               /* unix time */
    int verbose;
    struct httpd *metrics;          /* --metrics (core/httpd.h); NULL: off */
    struct cellar_spool *spool;     /* --async-dir: failed deletes kept and replayed; NULL: off */
    /* What one client may hold (proxy.c): past max_bytes it is not read from;
       past hard_bytes, or output stuck for output_timeout s (0: never), closed */
    size_t client_max_bytes, client_hard_bytes;
    unsigned client_output_timeout;
};

#define ROUTER_CLIENT_MAX_BYTES (1u << 20)
#define ROUTER_CLIENT_HARD_BYTES (64u << 20)

/* proxy.c: the client connection's table of calls for net/. */
extern const struct net_conn_ops router_conn_ops;
/*
 * proxy.c: closes the worker's clients whose output has made no progress
 * for rt->client_output_timeout seconds (worker's thread, once a second).
 */
void router_close_stuck(struct rworker *w, uint32_t now);
/* proxy.c: gives the heap's free pages back once a burst of held answers has gone. */
void router_trim_heap(struct rworker *w);
/* Sends the delayed flush_alls that are due; when the next is due (0: none). */
void router_run_later(struct rworker *w);
uint64_t router_later_due(const struct rworker *w);
/* Forgets them, unsent, when the worker stops. */
void router_drop_later(struct rworker *w);
/* proxy.c: lets go of an answer's copy that a client's out held (net's release()). */
void router_val_release(void *ctx, void *ref);
/* worker.c: sets up and tears down a worker's handles. */
int router_worker_init(struct router *rt, struct rworker *w, int id);
void router_worker_deinit(struct rworker *w);

/* Loads path as the new configuration: 0, or -1 with err (the old one stays). */
int router_config_load(struct router *rt, const char *path, char *err, size_t errlen);

/*
 * admin.c: the router's answers about itself, gathered from every worker
 * (any thread may call them; they take each worker's lock in turn, never
 * two at once).
 *
 * admin_stats: `stats` (group empty) or `stats servers`, as text lines
 * ending in END, or binary STAT packets (binary, with opaque) ending in
 * the empty one.  *out (malloc'd, *nout bytes) is the caller's to free.
 * 0; 1 for a group the router does not keep (*out NULL); -1 out of memory.
 */
int admin_stats(struct router *rt, const char *group, size_t ngroup, bool binary,
                uint32_t opaque, char **out, size_t *nout);

/*
 * mcrouter's admin gets, `get __mcrouter__.NAME` (key, n bytes) over cfg:
 * version, hostid, config_file, config, route(OP,KEY) (the servers a
 * request reaches, one a line) and route_handles(OP,KEY) (the routes and
 * servers it goes through, indented by depth, under "root").  *out
 * (malloc'd, *nout bytes) is the value; 1 for a name not known, -1 out of
 * memory.
 */
int admin_mcrouter_get(struct router *rt, const struct cellar_config *cfg, const char *key,
                       size_t n, char **out, size_t *nout);

/*
 * The Prometheus text exposition (format 0.0.4) into t: the render
 * callback of the --metrics listener (core/httpd.h), arg the router.
 */
void admin_metrics(void *arg, struct text *t);

#endif
