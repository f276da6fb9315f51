/*
 * route_api.h -- the route interface: what cellar-router uses of
 * libcellar beyond cellar.h, and nothing of its insides (client_int.h).
 *
 * The router's workers carry their clients' requests down the same route
 * trees as libcellar's own calls, as requests of the protocol layer
 * (struct msg), driven by the worker's loop:
 *
 *   router worker loop --readable--> cl_async_run(h, true) --> done callbacks
 *        |                                  ^
 *        +-- cl_async_submit(h, q) ---------+  (and by the deadline it returns)
 *
 * and its admin thread reads every handle's counters while the handles'
 * threads write them: those come through the accessors below, each a
 * relaxed atomic load, safe from any thread while the handle lives.
 */
#ifndef CELLAR_CLIENT_ROUTE_API_H
#define CELLAR_CLIENT_ROUTE_API_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cellar.h"
#include "protocol/msg.h"

/* ---- requests ---- */

struct cl_req {
    struct msg m;
    /*
     * Called once with the request's status (enum cellar_status) and, when
     * the server answered, its reply (else NULL).  The reply's spans point
     * into the connection's buffer: valid during the call only.
     */
    void (*done)(struct cl_req *q, int status, const struct msg_reply *r);
    void *arg;                  /* the caller's */
    /* The handle's, while the request is in its hands: */
    struct cl_req *next;        /* in a connection's waiting or sent queue */
    uint64_t deadline_ns;       /* sent: when it times out */
    uint32_t opaque;
    bool batched;               /* sent on a batched get line (msg_wire.batches) */
    bool batch_last;            /* and the line's last key: its END is this one's */
    int status;                 /* deferred (async.c): the status to deliver */
};

/* Is op a read (get, gets, gat, gats, lease-get)? */
static inline bool cl_op_reads(enum msg_op op) {
    return op == MSG_GET || op == MSG_GETS || op == MSG_GAT || op == MSG_GATS ||
           op == MSG_LEASE_GET;
}

/* ---- a handle driven by the router's loop (client.c) ---- */

/*
 * The handle driven by somebody else's loop (cellar-router's workers):
 * watch cl_async_fd() for reading; submit requests with done callbacks;
 * call cl_async_run() after submitting (it writes what the window lets
 * out) with io when that descriptor was readable (it reads and answers),
 * and again by the deadline it returns (a clock time of clock_mono_ns(), 0:
 * none) for timeouts and probes.  Callbacks run inside these calls.
 */
int cl_async_fd(const struct cellar *h);
void cl_async_submit(struct cellar *h, struct cl_req *q);          /* down the route tree */
void cl_async_submit_to(struct cellar *h, unsigned server, struct cl_req *q); /* to one server */
uint64_t cl_async_run(struct cellar *h, bool io);
/* Drives the handle's connections through an io_uring of its own (before
   any request): 0, or a negative errno and the handle stays as it was. */
int cl_async_ring(struct cellar *h);

/* ---- counters, read from other threads ---- */

enum cl_conn_state {
    CL_CONN_IDLE = 0,           /* no socket; the next request opens one */
    CL_CONN_CONNECTING,         /* connect() in progress */
    CL_CONN_UP,                 /* connected */
    CL_CONN_DOWN,               /* marked down (TKO): no socket, requests fail at once */
};

/*
 * One server's counters in one handle, for a reader on another thread
 * (cellar-router's `stats servers` and /metrics): each is written by the
 * handle's thread alone, with cl_count() (a relaxed load and store, no
 * locked instruction), and read with relaxed loads.  health is the state
 * as such a reader should see it: CL_CONN_DOWN also while a probe is out.
 */
struct cl_conn_counters {
    _Atomic uint64_t requests;      /* sent (TCP and UDP; probes too) */
    _Atomic uint64_t replies;       /* answered over TCP ... */
    _Atomic uint64_t latency_ns;    /* ... and their time from send to reply, summed */
    _Atomic uint64_t timeouts;      /* failed for want of an answer in time */
    _Atomic uint64_t errors;        /* failed otherwise on the way (connection, protocol) */
    _Atomic uint64_t down_fails;    /* failed at once, the server marked down */
    _Atomic uint64_t tko_events;    /* times marked down */
    _Atomic uint64_t fails_run;     /* failures since the last answer, as mcrouter counts
                                       them: the connection's failing is one, and each
                                       request it failed (timed out, lost) one more */
    _Atomic uint64_t pending;       /* now: requests waiting to be written (TCP and UDP) */
    _Atomic uint64_t inflight;      /* now: written, waiting for their replies (TCP) */
    _Atomic int health;             /* enum cl_conn_state */
};

/* Adds n to a counter only one thread writes. */
static inline void cl_count(_Atomic uint64_t *var, uint64_t n) {
    atomic_store_explicit(var, atomic_load_explicit(var, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Reads a counter another thread writes. */
static inline uint64_t cl_count_get(const _Atomic uint64_t *var) {
    return atomic_load_explicit(var, memory_order_relaxed);
}

struct route_set;

/* Takes a reference on a configuration (cellar_config_release() drops one). */
struct cellar_config *cl_config_ref(struct cellar_config *cfg);
/* Its servers, routes (as numbered by route_set_at()) and route set. */
unsigned cl_config_nroutes(const struct cellar_config *cfg);
const struct route_set *cl_config_routes(const struct cellar_config *cfg);
/*
 * Server i's destination as mcrouter names it in `stats servers`
 * ("host:port:ascii:plain:notcompressed-1000": the address as written, the
 * pool's protocol, no TLS, no compression, its server_timeout), into buf;
 * servers of pools alike share one.
 */
void cl_config_server_dest(const struct cellar_config *cfg, unsigned i, char *buf, size_t cap);
/* Where its requests enter the tree, and the host id LatestRoute reads by. */
const struct route *cl_config_root(const struct cellar_config *cfg);
uint64_t cl_config_host_id(const struct cellar_config *cfg);
/* Its pools: how many, pool i's name, and its servers' indexes [*first, *first + *n). */
unsigned cl_config_npools(const struct cellar_config *cfg);
const char *cl_config_pool_name(const struct cellar_config *cfg, unsigned i);
void cl_config_pool_servers(const struct cellar_config *cfg, unsigned i, unsigned *first,
                            unsigned *n);

/* The configuration a handle was made from. */
const struct cellar_config *cl_handle_config(const struct cellar *h);
/* Requests its failover routes sent on to their next child. */
uint64_t cl_handle_failovers(const struct cellar *h);
/* Requests dispatched to route i of its configuration (0 when i is past its routes). */
uint64_t cl_handle_route_requests(const struct cellar *h, unsigned i);
/* Its servers (the configuration's), and server i's counters. */
unsigned cl_handle_servers(const struct cellar *h);
const struct cl_conn_counters *cl_handle_server_counters(const struct cellar *h, unsigned i);

#endif
