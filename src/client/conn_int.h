/*
 * conn_int.h -- a handle's connections inside: one struct cl_conn per
 * server, its TCP half (conn.c), its UDP gets (udp.c), the whole of it
 * (server.c), its delete spool (spool.c).  Part of client_int.h, after
 * config_int.h and the requests.
 */
#ifndef CELLAR_CLIENT_CONN_INT_H
#define CELLAR_CLIENT_CONN_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/config_int.h"
#include "client/route_api.h"
#include "protocol/msg.h"

struct cellar;

/* ---------------------------------------------------------------------- */
/* Connections (conn.c): one per server per handle                          */
/* ---------------------------------------------------------------------- */

/*
 * A FIFO of requests, linked through cl_req.next; gauge, when set, follows
 * n for other threads to read (a connection's pending and inflight, which
 * two queues may share).
 */
struct cl_queue {
    struct cl_req *head, *tail;
    unsigned n;
    _Atomic uint64_t *gauge;
};

static inline void cl_gauge_add(_Atomic uint64_t *g, int64_t d) {
    if (g)      /* one writer: the handle's thread */
        atomic_store_explicit(g, atomic_load_explicit(g, memory_order_relaxed) + (uint64_t)d,
                              memory_order_relaxed);
}

static inline void cl_queue_push(struct cl_queue *qu, struct cl_req *q) {
    q->next = NULL;
    if (qu->tail)
        qu->tail->next = q;
    else
        qu->head = q;
    qu->tail = q;
    qu->n++;
    cl_gauge_add(qu->gauge, 1);
}

static inline void cl_queue_push_front(struct cl_queue *qu, struct cl_req *q) {
    q->next = qu->head;
    qu->head = q;
    if (qu->tail == NULL)
        qu->tail = q;
    qu->n++;
    cl_gauge_add(qu->gauge, 1);
}

static inline struct cl_req *cl_queue_pop(struct cl_queue *qu) {
    struct cl_req *q = qu->head;
    if (q) {
        qu->head = q->next;
        if (qu->head == NULL)
            qu->tail = NULL;
        qu->n--;
        q->next = NULL;
        cl_gauge_add(qu->gauge, -1);
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
    void *tls;                  /* a TLS pool's session on fd (OpenSSL's SSL, tls.c) */
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
    struct cl_req auth;         /* a pool's "auth": the token, first on each connection */
    bool auth_queued;           /* ... waiting or sent, not yet answered */
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

/*
 * TLS on a connection of a pool with "use_ssl" (tls.c).  The handshake
 * after the TCP connect: 1 done, 0 not yet (*events: what to wait for), -1
 * failed (said in the handle's last error).  Then recv() and send() as
 * the socket calls say it (-1 with errno EAGAIN: wait); the end frees the
 * session (the socket is the caller's).
 */
int cl_tls_handshake(struct cl_conn *c, int *events);
ssize_t cl_tls_recv(struct cl_conn *c, char *buf, size_t n);
ssize_t cl_tls_send(struct cl_conn *c, const char *buf, size_t n);
void cl_tls_end(struct cl_conn *c);

#endif
