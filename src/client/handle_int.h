/*
 * handle_int.h -- the handle inside (client.c, async.c, window.c, uring.c,
 * near.c): struct cellar, its pump and active lists, the window, the
 * near-cache's calls and the inline route dispatch.  Part of
 * client_int.h, after the connections.
 */
#ifndef CELLAR_CLIENT_HANDLE_INT_H
#define CELLAR_CLIENT_HANDLE_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "client/conn_int.h"
#include "core/clock.h"
#include "core/evloop.h"

/* ---------------------------------------------------------------------- */
/* The handle (client.c)                                                    */
/* ---------------------------------------------------------------------- */

/*
 * A wait a route asks of the handle's loop (cl_timer_add()): fire runs
 * once, from the loop when due is past, or from cellar_destroy() with
 * cancelled set.  The route owns t; the handle links it until it fires.
 */
struct cl_timer {
    uint64_t due;               /* clock_mono_ns() */
    void (*fire)(struct cl_timer *t, bool cancelled);
    struct cl_timer *next;
};

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
    struct cl_timer *timers, *timers_tail; /* waiting, soonest first (cl_timer_add) */
    bool spooled;               /* a delete spool was ever attached: its servers are
                                   looked at every SPOOL_SCAN_MS (client.c) */
    uint64_t spool_scan_ns;     /* when they are looked at next */
    struct cellar_error last_error; /* the most recent failure at a server (conn.c) */
    /* The asynchronous face (async.c): */
    size_t async_pending;       /* submitted, callback not run yet */
    bool submitting;            /* inside cellar_submit(): answers wait in deferred */
    struct cl_req *deferred, *deferred_tail; /* answered inside cellar_submit(), by q->next */
    /* Blocks of CL_BLOCK bytes the route kinds' per-request state takes
       (cl_block_get/put): a request's pays no malloc once the handle runs */
    void *blocks;
    unsigned nblocks;
};

#define CL_BLOCK 256                /* a child request and a little more */
#define CL_BLOCKS_KEPT 4096         /* kept for reuse at most (1 MiB) */

/* A block of CL_BLOCK bytes for a request's route state, or NULL. */
static inline void *cl_block_get(struct cellar *h) {
    void *b = h->blocks;
    if (b == NULL)
        return malloc(CL_BLOCK);
    h->blocks = *(void **)b;
    h->nblocks--;
    return b;
}

/* Gives b back for reuse (or to free() past CL_BLOCKS_KEPT). */
static inline void cl_block_put(struct cellar *h, void *b) {
    if (h->nblocks >= CL_BLOCKS_KEPT) {
        free(b);
        return;
    }
    *(void **)b = h->blocks;
    h->blocks = b;
    h->nblocks++;
}

/*
 * A request a route sends on in its parent's place (the parent's message,
 * changed as the route needs), in one of the handle's blocks: its answer
 * is the parent's (cl_child_end()), or the route reads it first.
 */
struct cl_child {
    struct cl_req q;            /* first, so done() finds the child */
    struct cl_req *parent;
    struct cellar *h;
    const struct route *r;      /* the route that made it */
};

_Static_assert(sizeof(struct cl_child) <= CL_BLOCK, "a child fits a handle's block");

/* A child of parent for route r with done, or NULL (the parent answered CELLAR_ENOMEM). */
static inline struct cl_child *cl_child_get(struct cellar *h, const struct route *r,
                                            struct cl_req *parent,
                                            void (*done)(struct cl_req *, int,
                                                         const struct msg_reply *)) {
    struct cl_child *c = cl_block_get(h);
    if (c == NULL) {
        parent->done(parent, CELLAR_ENOMEM, NULL);
        return NULL;
    }
    *c = (struct cl_child){.q = {.m = parent->m, .done = done}, .parent = parent, .h = h,
                           .r = r};
    return c;
}

/* Gives the child's block back and answers its parent with status and rep. */
static inline void cl_child_end(struct cl_child *c, int status, const struct msg_reply *rep) {
    struct cl_req *parent = c->parent;
    cl_block_put(c->h, c);
    parent->done(parent, status, rep);
}

/*
 * A request of head bytes (a struct whose first member is its struct
 * cl_req) holding its own copy of m's key (and the routing prefix before
 * it, prefix_len then 0), value and raw meta flags after it, malloc'd: for
 * the requests a route sends in the background, which outlive their
 * parent.  done set by the caller; NULL when out of memory.  free() it.
 */
static inline struct cl_req *cl_req_copy(const struct msg *m, size_t head) {
    size_t nk = m->key.len, nv = msg_carries_value(m) ? m->value.len : 0;
    size_t nf = m->op == MSG_META ? m->meta_flags.len : 0;
    char *b = malloc(head + nk + nv + nf);
    if (b == NULL)
        return NULL;
    memset(b, 0, head);
    struct cl_req *q = (struct cl_req *)b;
    char *bytes = b + head;
    q->m = *m;
    q->m.prefix_len = 0;
    if (nk)
        memcpy(bytes, m->key.p, nk);
    if (nv)
        memcpy(bytes + nk, m->value.p, nv);
    if (nf)
        memcpy(bytes + nk + nv, m->meta_flags.p, nf);
    q->m.key = (struct mc_span){nk ? bytes : NULL, nk};
    q->m.value = (struct mc_span){nv ? bytes + nk : NULL, nv};
    if (m->op == MSG_META)
        q->m.meta_flags = (struct mc_span){nf ? bytes + nk + nv : NULL, nf};
    return q;
}

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
/* Has t->fire called once t->due is past (client.c). */
void cl_timer_add(struct cellar *h, struct cl_timer *t);

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
