/*
 * client_int.h -- libcellar's insides: configuration, requests,
 * connections and the handle that drives them.
 *
 *   cellar_get()/cellar_mget()/...  (client.c: the blocking calls)
 *        |  one struct cl_req per key, done() called once each
 *        v
 *   pool: ring_pick(key) -> server i -> the handle's conns[i]   (config.c)
 *        |
 *        v
 *   conn (conn.c): waiting --pump, under the window--> sent --reply--> done
 *        |  one socket per server; replies match requests by order
 *        v
 *   the wire (protocol/msg_*.c): struct msg <-> bytes
 *
 * The configuration (servers, pools, rings) is immutable once parsed and
 * shared between handles; everything else belongs to one handle, and so
 * to one thread.  A request is the caller's memory: the handle points to
 * it from the moment it is submitted until its done() has been called,
 * never after.
 */
#ifndef CELLAR_CLIENT_INT_H
#define CELLAR_CLIENT_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cellar.h"
#include "client/ring.h"
#include "client/route.h"
#include "client/route_api.h"
#include "core/clock.h"
#include "core/evloop.h"
#include "protocol/msg.h"

/* ---------------------------------------------------------------------- */
/* Configuration (config.c): immutable after parsing                        */
/* ---------------------------------------------------------------------- */

struct cl_server {
    char *name;                 /* as configured: "host:port", "[v6]:port" or the path */
    char *host;                 /* host part (the ring hashes host and port) */
    uint16_t port;              /* 0 for a unix socket */
    uint32_t weight;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    unsigned pool;              /* index of its pool */
};

struct cl_pool {
    char *name;
    bool udp;                   /* gets over UDP */
    unsigned first, n;          /* its servers: cfg->servers[first .. first + n) */
    struct ring *ring;
    const struct msg_wire *wire;
    int server_timeout_ms;
    int connect_timeout_ms;
    int tko_timeouts;
    int probe_min_ms, probe_max_ms;
    uint32_t spool_ops;         /* bit (1 << op): failed ones go to the server's spool
                                   (a handle with one): MSG_DELETE unless "spool" says */
};

struct cellar_config {
    atomic_uint refs;
    struct cl_server *servers;
    unsigned nservers;
    struct cl_pool *pools;
    unsigned npools;
    struct route_set *routes;   /* every route of the tree */
    struct route *root;         /* where requests enter */
    uint64_t host_id;           /* LatestRoute's pick */
    int lease_retry_ms;         /* a waiting lease-get's first backoff */
    int lease_wait_ms;          /* and how long it waits in all */
    int window_init, window_min, window_max;
    int window_bytes;           /* 0: no bound on the replies' bytes in flight */
    bool io_uring;              /* handles drive their sockets through io_uring */
};

/*
 * Adds a pool named name over the server entries (server list syntax,
 * one entry each) with opt's settings (zero fields: defaults).  Returns
 * its index, or -1 with err filled.  For config parsers.
 */
int cl_config_add_pool(struct cellar_config *cfg, const char *name,
                       const char *const *entries, unsigned n,
                       const struct cellar_options *opt, char *err, size_t errlen);

/* The index of the pool named name, or -1. */
int cl_config_find_pool(const struct cellar_config *cfg, const char *name);

/*
 * Fills cfg (made empty, with its route set, by the caller) from an
 * mcrouter-format JSON text: pools, then the route tree into cfg->root.
 * opt gives defaults for what the JSON leaves out.  0, or -1 with err
 * saying where and why.  (config_json.c)
 */
int cl_config_json(struct cellar_config *cfg, const char *text,
                   const struct cellar_options *opt, char *err, size_t errlen);


/* config.c: an empty configuration with opt's defaults (NULL and err when
   refused); its end; a server list's pools and routes into it (< 0 and err
   when refused). */
struct cellar_config *cl_config_new(const struct cellar_options *opt, char *err, size_t errlen);
/* A configuration error's words into err (errlen bytes; none when 0). */
void cl_config_say(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cl_config_free(struct cellar_config *cfg);
int cl_config_list(struct cellar_config *cfg, const char *text, const struct cellar_options *opt,
                   char *err, size_t errlen);

/* The pool's server for key (an index into cfg->servers). */
static inline unsigned cl_pool_pick(const struct cellar_config *cfg, unsigned pool,
                                    const char *key, size_t nkey) {
    const struct cl_pool *pl = &cfg->pools[pool];
    return pl->first + ring_pick(pl->ring, key, nkey);
}

/* ---------------------------------------------------------------------- */
/* Requests                                                                 */
/* ---------------------------------------------------------------------- */


/* The status a reply maps to (CELLAR_OK, CELLAR_NOT_FOUND, ..., CELLAR_E*). */
int cl_status_of(const struct msg_reply *r);

/* Does op carry an exptime that sets an item's (storage, touch, gat, gats)? */
static inline bool cl_op_sets_exptime(enum msg_op op) {
    return msg_op_stores(op) || op == MSG_TOUCH || op == MSG_GAT || op == MSG_GATS;
}

/*
 * Is status a failure another server might not have: timeouts, refused or
 * broken connections, a server marked down, a garbled reply, a
 * SERVER_ERROR?  (A bad argument or a CLIENT_ERROR would fail anywhere.)
 */
static inline bool cl_failover_error(int status) {
    return status == CELLAR_ETIMEDOUT || status == CELLAR_ECONNECT || status == CELLAR_ECLOSED ||
           status == CELLAR_EDOWN || status == CELLAR_EPROTO || status == CELLAR_ESERVER;
}

/*
 * exptime capped at cap seconds from now (mcrouter's ModifyExptimeRoute
 * "min"): 0 (never) and anything later become cap; a negative exptime
 * (already expired) stays.  A unix time is compared as what is left of it.
 */
int64_t cl_cap_exptime(int64_t exptime, int cap);

/* Answers q as NullRoute does: get -> miss, storage -> not stored, else not found. */
void cl_answer_null(struct cl_req *q);

/* ---------------------------------------------------------------------- */
/* Connections (conn.c): one per server per handle                          */
/* ---------------------------------------------------------------------- */

/* A FIFO of requests, linked through cl_req.next. */
struct cl_queue {
    struct cl_req *head, *tail;
    unsigned n;
};

static inline void cl_queue_push(struct cl_queue *qu, struct cl_req *q) {
    q->next = NULL;
    if (qu->tail)
        qu->tail->next = q;
    else
        qu->head = q;
    qu->tail = q;
    qu->n++;
}

static inline struct cl_req *cl_queue_pop(struct cl_queue *qu) {
    struct cl_req *q = qu->head;
    if (q) {
        qu->head = q->next;
        if (qu->head == NULL)
            qu->tail = NULL;
        qu->n--;
        q->next = NULL;
    }
    return q;
}

/* What a socket registered in the handle's loop is: the first field of each. */
enum cl_io { CL_IO_TCP = 0, CL_IO_UDP, CL_IO_RING };

#define CL_UDP_SLOTS 1024       /* UDP gets in flight to one server (more go over TCP) */

/* One UDP get in flight: its request and the reply's datagrams so far. */
struct cl_udp_slot {
    struct cl_req *q;           /* the first request not yet answered (chained by next,
                                   in the datagram's order); NULL: free */
    uint16_t id;                /* the frame's request id */
    uint16_t next_seq, total;   /* datagrams of the current message: next, of total */
    char *buf;                  /* the reply's bytes so far */
    size_t len, cap;
    uint64_t deadline_ns;
};

/* A handle's UDP socket to one server (udp.c). */
struct cl_udp {
    enum cl_io io;              /* CL_IO_UDP */
    int fd;
    uint16_t next_id, oldest_id;/* ids in flight lie in [oldest_id, next_id) */
    struct cl_udp_slot *slots;  /* CL_UDP_SLOTS, made on first use */
    struct cl_queue waiting;    /* submitted, not yet sent (held by the window) */
    unsigned inflight;
};

struct cl_conn {
    enum cl_io io;              /* CL_IO_TCP */
    struct cellar *h;
    const struct cl_server *srv;
    const struct cl_pool *pool;
    int fd;
    enum cl_conn_state state;
    struct cl_queue waiting;    /* submitted, not yet written (held by the window) */
    struct cl_queue sent;       /* written, waiting for their replies, oldest first */
    unsigned windowed;          /* the newest of them that count in the handle's window */
    bool stalled;               /* the oldest has waited past the stall time: its requests
                                   left the window, and new ones do not join it until a
                                   reply comes (conn.c) */
    char *wbuf;                 /* bytes not yet written: wbuf[woff .. wlen) */
    size_t wlen, woff, wcap;
    struct cl_req *batch;       /* the last key of the batched get line that ends wbuf
                                   and is not yet being written (NULL: none) */
    size_t batch_at;            /* where that line starts in wbuf */
    unsigned batch_keys;        /* keys on it */
    char *rbuf;                 /* bytes read, not yet parsed: rbuf[roff .. rlen) */
    size_t rlen, roff, rcap;
    uint64_t connect_deadline_ns;
    unsigned fails;             /* timeouts in a row */
    bool probing;               /* marked down, and a probe (connect + version) is on its
                                   way: the socket carries the probe alone */
    uint64_t probe_at_ns;       /* down: when the next probe starts */
    int probe_backoff_ms;
    struct cl_req probe;        /* the probe's version request */
    uint32_t next_opaque;
    int events;                 /* what the loop watches the socket for (EV_*) */
    bool in_pump;               /* on the handle's pump list */
    struct cl_conn *pump_next;
    bool in_active;             /* on the handle's active list (cl_active_add) */
    struct cl_conn *active_next;
    struct cl_udp udp;          /* the pool's gets, when it sends them over UDP */
    struct cl_spool_dest *spool;/* the server's spool (the handle's spool), or NULL */
    struct cl_replay *replay;   /* replaying it from this connection (made on first use) */
    struct cl_conn_counters ctr;
    /* the handle's io_uring (uring.c), when it has one, once the socket is connected */
    bool ring_recv, ring_send;  /* a receive into rbuf, a send from wbuf + woff out */
    bool wbuf_short;            /* requests waited for a send to end: grow wbuf then */
    size_t rroom;               /* what the receive out may fill: it grows when filled */
    uint32_t ring_gen;          /* changes when a socket is given up with operations out */
};

/* Hands q back to its owner, counting what the handle counts (conn.c). */
void cl_conn_complete(struct cl_conn *c, struct cl_req *q, int status, const struct msg_reply *r);

/*
 * The spool (spool.c): does q's op go to c's spool when it fails; submit
 * it so; replay what c's server has spooled while it is up (the next time
 * to look, 0: none); attach a handle's connections to a spool (NULL:
 * none) and detach one (after cl_conn_reset).
 */
struct cl_spool_dest;
struct cl_replay;
bool cl_spool_wants(const struct cl_conn *c, const struct msg *m);
void cl_spool_submit(struct cl_conn *c, struct cl_req *q);
uint64_t cl_spool_tick(struct cl_conn *c, uint64_t now);
void cl_spool_attach(struct cellar *h, struct cellar_spool *sp);
void cl_spool_detach(struct cl_conn *c);

/* UDP gets (udp.c) */
bool cl_udp_wants(const struct cl_conn *c, const struct cl_req *q);
void cl_udp_submit(struct cl_conn *c, struct cl_req *q);
unsigned cl_udp_send(struct cl_conn *c, unsigned room, uint64_t now);
void cl_udp_io(struct cl_udp *u, uint64_t now);
uint64_t cl_udp_tick(struct cl_conn *c, uint64_t now);
void cl_udp_reset(struct cl_conn *c, int status);
void cl_udp_deinit(struct cl_conn *c);

/*
 * A server as the handle uses it (server.c): its TCP connection (conn.c)
 * and its UDP gets (udp.c), which both stand below it.
 *
 * Takes q (q->m, q->done set): over UDP when the pool sends gets that way,
 * else over TCP.  It completes at once when the server is down or the
 * handle is going.
 */
void cl_conn_submit(struct cl_conn *c, struct cl_req *q);
/* Writes up to `room` waiting requests, UDP first; returns how many went out. */
unsigned cl_conn_send(struct cl_conn *c, unsigned room, uint64_t now);
/* Checks the deadlines and probe time; returns the next deadline (0: none). */
uint64_t cl_conn_tick(struct cl_conn *c, uint64_t now);
/* Fails everything queued with status and closes the socket (destroy, errors). */
void cl_conn_reset(struct cl_conn *c, int status);
/* Resets with CELLAR_ECLOSED and frees; the caller detaches the spool after. */
void cl_conn_deinit(struct cl_conn *c);

/* The TCP connection (conn.c): cl_conn_submit()'s and the others' TCP halves. */
/* Takes q for the TCP connection, whatever the pool's UDP setting. */
void cl_conn_submit_tcp(struct cl_conn *c, struct cl_req *q);
unsigned cl_tcp_send(struct cl_conn *c, unsigned room, uint64_t now);
uint64_t cl_tcp_tick(struct cl_conn *c, uint64_t now);
void cl_tcp_reset(struct cl_conn *c, int status);
void cl_tcp_deinit(struct cl_conn *c);
/* The socket is ready (EV_* events). */
void cl_conn_io(struct cl_conn *c, int events, uint64_t now);

/* ---------------------------------------------------------------------- */
/* The handle (client.c)                                                    */
/* ---------------------------------------------------------------------- */

struct cellar {
    struct cellar_config *cfg;
    struct evloop *loop;
    struct cl_conn *conns;      /* one per server, cfg->servers order */
    unsigned nconns;
    struct cl_conn *pump_head, *pump_tail; /* connections with waiting requests */
    unsigned outstanding;       /* requests sent and not answered, over all connections */
    double window;              /* the count window (cl_window_*) */
    double reply_bytes;         /* the replies' running mean: what one in flight is worth */
    struct cellar_near *near;   /* NULL, or the near-cache gets look in first */
    unsigned char *udp_buf;     /* where UDP datagrams are received (made on first use) */
    bool closing;               /* cellar_destroy() under way: submissions fail at once */
    struct cellar_stats st;
    _Atomic uint64_t failovers; /* requests a failover route sent on to its next child
                                   (cl_count; other threads may read it) */
    _Atomic uint64_t *route_requests; /* requests dispatched to each route of the
                                   configuration, by route id (cl_count; readable so) */
    unsigned nroutes;
    struct cl_ring *ring;       /* NULL: connections read and write with send()/recv() */
    /* a ring's completion, to its connection: cl_conn_ring_done (set by
       cellar_create(), so that uring.c, below conn.c, names nothing above it) */
    void (*ring_done)(struct cl_conn *c, bool send, int res, uint64_t now);
    /*
     * The connections that may have a deadline (connecting, requests out,
     * marked down): the only ones each turn of the loop ticks, so that a
     * handle over a thousand servers that uses four pays for four.  A
     * connection joins when its state changes or requests wait on it, and
     * leaves when its tick finds nothing due.
     */
    struct cl_conn *active;
    bool spooled;               /* a delete spool was ever attached: its servers are
                                   looked at every SPOOL_SCAN_MS (client.c) */
    uint64_t spool_scan_ns;     /* when they are looked at next */
    struct cellar_error last_error; /* the most recent failure at a server (conn.c) */
    /* The asynchronous face (async.c): */
    size_t async_pending;       /* submitted, callback not run yet */
    bool submitting;            /* inside cellar_submit(): answers wait in deferred */
    struct cl_req *deferred, *deferred_tail; /* answered inside cellar_submit(), by q->next */
};

/*
 * A handle's io_uring (uring.c; cl_async_ring()): connected sockets read
 * into rbuf with one receive always armed and write with one send at a
 * time; everything prepared goes to the kernel with one system call when
 * the handle has pumped (cl_ring_submit), and completions are taken when
 * the ring's descriptor, on the handle's loop, is readable.  Connecting,
 * UDP and timers stay on the loop.  A socket given up while the kernel
 * holds operations on it keeps its descriptor and buffers until they
 * return (cl_ring_retire).
 */
struct cl_ring;
int cl_ring_create(struct cellar *h);
void cl_ring_destroy(struct cellar *h);     /* waits for what the kernel holds */
void cl_ring_io(void *ring, uint64_t now);  /* its descriptor was readable: completions */
void cl_ring_wait(struct cellar *h, int ms);    /* for a completion, then takes them */
bool cl_ring_submit(struct cellar *h);      /* false: nothing was prepared (or no ring) */
void cl_ring_recv(struct cl_conn *c);       /* into rbuf[rlen .. rcap) */
void cl_ring_send(struct cl_conn *c);       /* wbuf[woff .. wlen) */
void cl_ring_retire(struct cl_conn *c);     /* hands fd, rbuf and wbuf over until done */
/* A completion of c's (conn.c): recv (or send), with the kernel's result. */
void cl_conn_ring_done(struct cl_conn *c, bool send, int res, uint64_t now);

/* The near-cache (near.c): a copy of key's value into *it, if it has one. */
bool cl_near_get(struct cellar_near *n, const char *key, size_t nkey, struct cellar_item *it);
/* The key's drop generation, read before fetching what cl_near_put() may keep. */
unsigned cl_near_gen(struct cellar_near *n, const char *key, size_t nkey);
/* Keeps a value fetched from the servers, unless the key was dropped since gen was read. */
void cl_near_put(struct cellar_near *n, const char *key, size_t nkey, const char *value,
                 size_t nvalue, uint32_t flags, unsigned gen);
/* Drops key (before a write of the handle's own). */
void cl_near_forget(struct cellar_near *n, const char *key, size_t nkey);
/* Drops everything (the handle's flush_all). */
void cl_near_flush(struct cellar_near *n);

/* What a single request's reply said besides its status and value. */
struct cl_answer {
    uint64_t number;            /* incr/decr */
    bool won, token_sent, stale;/* lease-get (meta W, Z, X) */
    int64_t ttl;                /* lease-get, want_ttl: remaining TTL, -1 none/unknown */
};

/*
 * Runs one keyed request down the route tree and waits for it: its
 * status, its value in *it (may be NULL), the rest in *ans (may be NULL).
 */
int cl_call_one(struct cellar *h, const struct msg *m, struct cellar_item *it,
                struct cl_answer *ans);

/* Waits ms milliseconds, running the handle's background work meanwhile. */
void cl_pause(struct cellar *h, int ms);

/* Connection events the handle keeps count of or adjusts the window by. */
/* The window (window.c): an answer of reply_bytes came; a request timed out; the
   requests it lets be in flight now. */
void cl_window_answered(struct cellar *h, size_t reply_bytes);
void cl_window_timeout(struct cellar *h);
unsigned cl_window_now(const struct cellar *h);

/*
 * Dispatches q (q->m, q->done, q->arg set) down the route tree from r,
 * counting it in the handle's requests per route (route_requests[r->id];
 * routes made after the handle are not counted).
 */
static inline void route_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (r->id < h->nroutes)
        cl_count(&h->route_requests[r->id], 1);
    r->ops->dispatch(r, h, q);
}

/* Puts c on its handle's active list (struct cellar), if not there yet. */
static inline void cl_active_add(struct cellar *h, struct cl_conn *c) {
    if (!c->in_active) {
        c->in_active = true;
        c->active_next = h->active;
        h->active = c;
    }
}

/* Puts c, which has requests waiting, at the end of its handle's pump list. */
static inline void cl_pump_add(struct cellar *h, struct cl_conn *c) {
    cl_active_add(h, c);
    if (c->in_pump)
        return;
    c->in_pump = true;
    c->pump_next = NULL;
    if (h->pump_tail)
        h->pump_tail->pump_next = c;
    else
        h->pump_head = c;
    h->pump_tail = c;
}


#endif
