/*
 * proxy.c -- a client connection of cellar-router: requests in, in-order answers out.
 *
 *   rbuf --parse--> rreq (bytes copied into it, parsed again there) --+
 *                     |  one rsub per key: a cl_req down the route tree
 *                     v                                               |
 *   queue: [rreq]-[rreq]-[rreq] ... <--- done callbacks fill rsubs <--+
 *     head whole? --> answer written in the client's protocol --> out
 *
 * Requests are answered in the order they came, whatever order the
 * backends answer in: only the head of the queue is written, once all its
 * keys are answered.  A request the router answers itself (a parse error,
 * version, mn, noop, stats) is an rreq with its answer already made, so it
 * waits its turn like the others.  `stats` and `stats servers` come from
 * admin.c, which reads every worker's counters.
 *
 * A request's bytes (line, value) are copied into its rreq and parsed
 * again there, so that every span the codecs and libcellar keep points
 * into memory the rreq owns: the connection's read buffer moves and is
 * reused while the backends are still to be asked.  Answers' values are
 * copied out of the backend connection's buffer in the done callback; a
 * large one is then handed to out by reference and freed once written.
 *
 * Back-pressure, in requests and in bytes.  A client's load is what the
 * router holds for it (answers copied from the backends and not yet
 * written to it, its output not yet taken by the socket) plus what it has
 * in flight, each key reckoned at the client's own estimate of an answer:
 * the largest lately seen, decaying by a quarter an answer.  A new
 * client's starts at its worker's (which decays by a 64th), and at least
 * at EST_FIRST, so by the default bound a new client has at most 8 keys
 * out before its first answer, fewer once large answers were seen.  A
 * connection is paused (net stops reading it, and no request is taken
 * from what was read) while it has QUEUE_MAX requests waiting, its client
 * is not reading (output blocked), or its load is at --client-max-bytes;
 * it resumes once half the queue is answered, the output has drained and
 * the load is down to half the bound (or nothing is held).  So a client
 * costs about the bound plus the answers of what it had out when it
 * stopped, whatever it sends and whether or not it reads.  The backends'
 * connections are shared and always read: an answer for a client that
 * does not read is kept here, never left on the backend's connection in
 * front of others' answers.  A client that holds more than
 * --client-hard-max-bytes (estimates fell short, or one huge multi-get),
 * or whose output moved not at all for --client-output-timeout seconds,
 * is closed and counted (clients_closed_slow).
 *
 * A connection that closes with requests in flight leaves them orphaned
 * (rreq->c NULL); each is freed when its last key is answered.
 */
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "protocol/mc_auth.h"
#include "protocol/mc_bin.h"
#include "protocol/mc_meta.h"
#include "protocol/mc_mcr.h"
#include "protocol/msg_serve.h"
#include "router/router.h"

#define QUEUE_MAX 256               /* requests a connection may have waiting */
#define EST_FIRST 131072.0          /* a new client's estimate of an answer, at least */
#define EST_HEAD 48                 /* an answer's bytes besides its value, reckoned */

enum rproto { RP_TEXT, RP_META, RP_BIN };

/* What an rreq's answer is made of. */
enum rkind {
    RK_LOCAL,                       /* the answer is in local[] already */
    RK_KEYED,                       /* one rsub per key, each through the route tree */
    RK_BROADCAST,                   /* one rsub per server (flush_all): OK when all are */
};

struct rreq;

struct rsub {
    struct cl_req q;                /* first: the done callback finds its rsub */
    struct rreq *r;
    int status;
    bool answered, created;         /* created: a binary incr's add has been sent */
    uint8_t retries;                /* incrs sent again after their add found the key */
    struct msg_reply rep;           /* spans into val */
    char *val;                      /* the reply's value and message, copied (val_new) */
    size_t nval;                    /* their bytes, while counted in the rconn's vals */
    char digits[MSG_SERVE_DIGITS];  /* a binary incr's initial value as text */
};

struct rconn {
    struct net_conn net;
    struct rworker *w;
    bool proto_known, binary;
    bool authed;                    /* --auth-file: passed its authentication */
    uint32_t auth_need;             /* --auth-file: the token's bytes awaited (mc_auth.h) */
    bool in_process;                /* conn_process() is on the stack: answer, do not flush */
    bool resume;                    /* a barrier fell: take the requests read meanwhile */
    bool closing;                   /* close once everything before is answered */
    bool barrier;                   /* a two-step request is under way: read nothing
                                       after it until it is done (memcached's order) */
    bool kill;                      /* over the hard bound inside conn_process: close after */
    struct rreq *head, *tail;
    unsigned nq;
    unsigned inflight;              /* keys sent down and not yet answered */
    size_t vals;                    /* bytes of answers copied for it, not yet in out */
    double est;                     /* what one of its answers is reckoned at */
    size_t stuck_bytes;             /* output pending at the last timeout check ... */
    uint32_t stuck_since;           /* ... and since when it has not moved (0: moving) */
};

struct rreq {
    struct rreq *next;
    struct rconn *c;                /* NULL: the client is gone */
    struct rhandle *rh;             /* where the rsubs went */
    enum rproto proto;
    enum rkind kind;
    enum msg_bin_plan plan;
    unsigned nsub, left;
    union {                         /* the request, parsed again from bytes[] */
        struct mc_req text;
        struct mc_meta_req meta;
        struct mc_bin_req bin;
    } u;
    struct mc_span value;           /* a store's value, in bytes[] */
    size_t nlocal;
    char *local;                    /* RK_LOCAL: the answer */
    struct rsub *subs;
    char *meta_flags;               /* msg_from_meta's room for edited flags */
    bool barrier;                   /* what the client sent after r waits for its answer */
    uint64_t due_ns;                /* a delayed flush_all: sent then (router_run_later) */
    struct rreq *later;             /* ... in its worker's list of those */
    char bytes[];                   /* the request as it came; then room for local[] */
};

static void sub_done(struct cl_req *q, int status, const struct msg_reply *r);

/* A text command of keys, answered VALUE lines and END: get, gets, gat, gats, lease-get. */
static inline bool text_retrieval(enum mc_cmd cmd) {
    return (cmd >= MC_CMD_GET && cmd <= MC_CMD_GATS) || cmd == MC_CMD_LEASE_GET;
}

/* ---------------------------------------------------------------------- */
/* Answers' copies                                                          */
/* ---------------------------------------------------------------------- */

/*
 * An answer's value and message are copied out of the backend's buffer
 * into a block that knows its worker and size, so that bytes_held counts
 * it until it is freed, whether by its rreq or, once handed to a client's
 * out, by net's release() after the write (the connection may be gone by
 * then).  A block of VAL_MAP_MIN or more is mapped on its own and unmapped
 * when freed: answers held for clients that do not read go back to the
 * system when they go, rather than stay in the heap (whose own threshold
 * for mapping rises past such sizes after the first is freed).
 */
#define VAL_MAP_MIN (64u << 10)

struct val_head {
    struct rworker *w;
    size_t n;                       /* the value's bytes (the block has the head too) */
};

static char *val_new(struct rworker *w, size_t n) {
    size_t size = sizeof(struct val_head) + n;
    struct val_head *v;
    if (size >= VAL_MAP_MIN) {
        v = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (v == MAP_FAILED)
            return NULL;
    } else if ((v = malloc(size)) == NULL) {
        return NULL;
    }
    v->w = w;
    v->n = n;
    RSTAT_ADD(w->st.bytes_held, n);
    uint64_t held = atomic_load_explicit(&w->st.bytes_held, memory_order_relaxed);
    if (held > w->held_peak)
        w->held_peak = held;
    return (char *)(v + 1);
}

static void val_free(char *p) {
    if (p == NULL)
        return;
    struct val_head *v = (struct val_head *)p - 1;
    size_t size = sizeof(*v) + v->n;
    RSTAT_ADD(v->w->st.bytes_held, -(int64_t)v->n);
    if (size >= VAL_MAP_MIN)
        munmap(v, size);
    else
        free(v);
}

void router_val_release(void *ctx, void *ref) {
    (void)ctx;
    val_free(ref);
}

/* ---------------------------------------------------------------------- */
/* Requests                                                                 */
/* ---------------------------------------------------------------------- */

/*
 * An rreq holding a copy of the request's n bytes, with room for nsub
 * keys and an answer of up to nlocal bytes.
 */
static struct rreq *rreq_new(struct rconn *c, enum rproto proto, const char *p, size_t n,
                             unsigned nsub, size_t nlocal) {
    size_t subs_at = (offsetof(struct rreq, bytes) + n + nlocal + 15) & ~(size_t)15;
    struct rreq *r = malloc(subs_at + (size_t)nsub * sizeof(struct rsub));
    if (r == NULL)
        return NULL;
    memset(r, 0, offsetof(struct rreq, bytes));
    r->c = c;
    r->proto = proto;
    if (n)
        memcpy(r->bytes, p, n);
    r->local = r->bytes + n;
    r->subs = (struct rsub *)((char *)r + subs_at);
    memset(r->subs, 0, (size_t)nsub * sizeof(struct rsub));
    return r;
}

static void rreq_free(struct rreq *r) {
    for (unsigned i = 0; i < r->nsub; i++) {
        if (r->c != NULL)
            r->c->vals -= r->subs[i].nval;
        val_free(r->subs[i].val);
    }
    free(r->meta_flags);
    free(r);
}

static void enqueue(struct rconn *c, struct rreq *r) {
    if (c->tail)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
    c->nq++;
}

/* Queues an answer the router makes itself. */
static bool answer_local(struct rconn *c, enum rproto proto, const void *p, size_t n) {
    struct rreq *r = rreq_new(c, proto, NULL, 0, 0, n);
    if (r == NULL)
        return false;
    r->kind = RK_LOCAL;
    memcpy(r->local, p, n);
    r->nlocal = n;
    enqueue(c, r);
    return true;
}

/* Sends rsub i of r (its msg filled) down the route tree, or to server (>= 0). */
/* A get-like request, the only kind --allow-only-gets sends on. */
static bool get_like(const struct msg *m) {
    switch (m->op) {
    case MSG_GET: case MSG_GETS: case MSG_GAT: case MSG_GATS: case MSG_LEASE_GET:
        return true;
    case MSG_META:
        return m->meta_cmd == 'g';
    default:
        return false;
    }
}

static void submit(struct rreq *r, unsigned i, int server) {
    struct rsub *s = &r->subs[i];
    s->r = r;
    s->q.done = sub_done;
    s->q.arg = s;
    r->rh->inflight++;
    if (r->c != NULL)               /* (a delayed flush_all may outlive its client) */
        r->c->inflight++;
    if (r->rh->w->rt->allow_only_gets && !get_like(&s->q.m) && s->q.m.op != MSG_VERSION &&
        s->q.m.op != MSG_STATS) {
        /* mcrouter's answer to the rest: what NullRoute answers, nothing sent */
        bool stores = msg_op_stores(s->q.m.op) ||
                      (s->q.m.op == MSG_META && s->q.m.meta_cmd == 's');
        struct msg_reply rep = {.res = stores ? MSG_RES_NOT_STORED : MSG_RES_NOT_FOUND,
                                .ttl = -1};
        sub_done(&s->q, stores ? CELLAR_NOT_STORED : CELLAR_NOT_FOUND, &rep);
        return;
    }
    r->rh->w->st.keys_sent++;
    if (server >= 0)
        cl_async_submit_to(r->rh->h, (unsigned)server, &s->q);
    else
        cl_async_submit(r->rh->h, &s->q);
}

static void rreq_answered(struct rreq *r);

/*
 * flush_all with a delay, as mcrouter does it: the answer comes after the
 * delay, once every server has flushed (the servers are sent a plain
 * flush_all then), so that what the client reads next is gone.  r is
 * queued now, in its place among the client's answers, and kept in the
 * worker's list (its handle held) until it is due; what the client sends
 * after it waits behind it.
 */
static void start_later(struct rconn *c, struct rreq *r, int64_t delay) {
    struct rworker *w = c->w;
    r->rh = w->cur;
    r->rh->inflight++;              /* the handle stays until the flush is sent */
    r->left = r->nsub + 1;
    for (unsigned i = 0; i < r->nsub; i++)
        r->subs[i].q.m.exptime = 0;
    r->due_ns = clock_mono_ns() + (uint64_t)delay * 1000000000u;
    r->barrier = c->barrier = true;     /* nothing after it overtakes it */
    enqueue(c, r);
    struct rreq **pp = &w->later;
    while (*pp != NULL && (*pp)->due_ns <= r->due_ns)
        pp = &(*pp)->later;
    r->later = *pp;
    *pp = r;
}

void router_run_later(struct rworker *w) {
    uint64_t now = clock_mono_ns();
    while (w->later != NULL && w->later->due_ns <= now) {
        struct rreq *r = w->later;
        w->later = r->later;
        for (unsigned i = 0; i < r->nsub; i++)
            submit(r, i, (int)i);
        r->rh->inflight--;
        rreq_answered(r);
    }
}

void router_drop_later(struct rworker *w) {
    while (w->later != NULL) {
        struct rreq *r = w->later;
        w->later = r->later;
        r->rh->inflight--;
        if (r->c == NULL)           /* (a client still here frees it with its queue) */
            rreq_free(r);
    }
}

uint64_t router_later_due(const struct rworker *w) {
    return w->later != NULL ? w->later->due_ns : 0;
}

/* A flush_all's delay in seconds from its exptime (a unix time past 30 days). */
static int64_t flush_delay(int64_t exptime) {
    if (exptime > 2592000)
        exptime -= (int64_t)time(NULL);
    return exptime > 0 ? exptime : 0;
}

/*
 * Queues r and sends its rsubs (their msgs filled).  A done callback may
 * run inside submit (a server marked down answers at once), so r counts
 * one more key than it has until all are sent, and cannot be finished
 * (and freed) under the loop.
 */
static void start(struct rconn *c, struct rreq *r, bool broadcast) {
    r->rh = c->w->cur;
    r->left = r->nsub + 1;
    enqueue(c, r);
    for (unsigned i = 0; i < r->nsub; i++)
        submit(r, i, broadcast ? (int)i : -1);
    rreq_answered(r);
}

/* ---------------------------------------------------------------------- */
/* Answers                                                                  */
/* ---------------------------------------------------------------------- */

/*
 * Adds a formatted head, then its value and tail; a large value goes by
 * reference (its bytes then count in out's, no longer in c->vals).
 */
static void put_answer(struct rconn *c, struct rsub *s, const char *head, size_t n,
                       const struct msg_serve_out *o) {
    struct out *out = &c->net.out;
    if (n)
        out_copy(out, head, n);
    if (o->value.len) {
        if (o->value.len > OUT_COPY_MAX && s != NULL && s->val != NULL &&
            o->value.p >= s->val && out_add_held(out, o->value.p, o->value.len, s->val)) {
            s->val = NULL;          /* out frees it once written */
            c->vals -= s->nval;
            s->nval = 0;
        } else {
            out_copy(out, o->value.p, o->value.len);
        }
    }
    if (o->tail.len)
        out_copy(out, o->tail.p, o->tail.len);
}

/* Writes r's answer (every key answered) into c's out. */
static void write_answer(struct rconn *c, struct rreq *r) {
    char head[MSG_SERVE_HEAD_MAX];
    struct msg_serve_out o;
    size_t n;
    if (r->kind == RK_LOCAL) {
        if (r->nlocal)
            out_copy(&c->net.out, r->local, r->nlocal);
        return;
    }
    if (r->kind == RK_BROADCAST) {
        /* the first server's error, else the first answer */
        struct rsub *pick = &r->subs[0];
        for (unsigned i = 0; i < r->nsub; i++) {
            if (msg_serve_is_error(&r->subs[i].rep)) {
                pick = &r->subs[i];
                break;
            }
        }
        if (r->proto == RP_BIN)
            n = msg_serve_bin(head, sizeof(head), &r->u.bin, &pick->q.m, &pick->rep, &o);
        else
            n = msg_serve_text(head, sizeof(head), &r->u.text, &pick->q.m, &pick->rep, &o);
        put_answer(c, NULL, head, n, &o);
        return;
    }
    switch (r->proto) {
    case RP_TEXT: {
        bool retrieval = text_retrieval(r->u.text.cmd) || r->u.text.cmd == MC_CMD_METAGET;
        if (retrieval) {
            for (unsigned i = 0; i < r->nsub; i++) {
                if (msg_serve_is_error(&r->subs[i].rep)) {
                    /* a key failed: that error alone, as mcrouter answers */
                    n = msg_serve_text(head, sizeof(head), &r->u.text, &r->subs[i].q.m,
                                       &r->subs[i].rep, &o);
                    put_answer(c, NULL, head, n, &o);
                    return;
                }
            }
        }
        for (unsigned i = 0; i < r->nsub; i++) {
            struct rsub *s = &r->subs[i];
            n = msg_serve_text(head, sizeof(head), &r->u.text, &s->q.m, &s->rep, &o);
            put_answer(c, s, head, n, &o);
            if (retrieval) {
                c->w->st.get_hits += s->rep.res == MSG_RES_HIT;
                c->w->st.get_misses += s->rep.res == MSG_RES_MISS;
            }
        }
        if (retrieval)
            out_copy(&c->net.out, MSG_SERVE_END, MSG_SERVE_END_LEN);
        return;
    }
    case RP_META:
        n = msg_serve_meta(head, sizeof(head), &r->u.meta, &r->subs[0].rep, &o);
        put_answer(c, &r->subs[0], head, n, &o);
        return;
    case RP_BIN:
        n = msg_serve_bin(head, sizeof(head), &r->u.bin, &r->subs[0].q.m, &r->subs[0].rep, &o);
        put_answer(c, &r->subs[0], head, n, &o);
        return;
    }
}

static bool conn_process(struct net_conn *nc);

/* What c costs now: answers held for it, and its keys in flight at its estimate. */
static double load(const struct rconn *c) {
    return (double)(c->vals + c->net.out.bytes) + c->inflight * c->est;
}

/* Must c stop taking requests for its bytes?  (With nothing held, one may always go.) */
static bool over_bytes(const struct rconn *c) {
    return load(c) >= (double)c->w->rt->client_max_bytes &&
           (c->inflight || c->vals || c->net.out.bytes);
}

/*
 * May a paused connection take requests again: half its queue answered,
 * its output drained, its load down to half the bound (or nothing held)?
 */
static bool may_take(const struct rconn *c) {
    return c->nq <= QUEUE_MAX / 2 && !c->net.want_write &&
           (load(c) <= (double)c->w->rt->client_max_bytes / 2 ||
            (!c->inflight && !c->vals && !c->net.out.bytes));
}

/*
 * Cuts c from its requests: those answered are freed, with the answers
 * held for the others; those still in flight become orphans (r->c NULL),
 * freed when their last key is answered.  After it no callback reaches c,
 * whenever net frees it (an io_uring close waits for the kernel).
 */
static void orphan_all(struct rconn *c) {
    struct rreq *r = c->head, *next;
    for (; r != NULL; r = next) {
        next = r->next;
        if (r->left == 0) {
            rreq_free(r);
            continue;
        }
        for (unsigned i = 0; i < r->nsub; i++) {
            val_free(r->subs[i].val);
            r->subs[i].val = NULL;
            r->subs[i].nval = 0;
        }
        r->c = NULL;
    }
    c->head = c->tail = NULL;
    c->nq = 0;
    c->vals = 0;
}

/*
 * c is closed for not reading what it was sent: the rreqs it has in
 * flight become orphans, and their answers are dropped as they come.
 * Inside conn_process() it is marked and closed on the way out.  Returns
 * false if c is gone.
 */
static bool close_slow(struct rconn *c) {
    if (c->in_process) {
        c->kill = true;
        return true;
    }
    RSTAT_ADD(c->w->st.clients_closed_slow, 1);
    if (c->w->rt->verbose)
        fprintf(stderr, "cellar-router: closing a client that does not read its answers "
                        "(%zu bytes held)\n", c->vals + c->net.out.bytes);
    orphan_all(c);
    net_conn_close(&c->net);
    return false;
}

/*
 * Writes the answers at the head of c's queue that are whole.  Outside
 * conn_process() it also sends them and closes a connection that asked to
 * be closed.  Returns false if c is gone.
 */
static bool drain_out(struct rconn *c) {
    while (c->head != NULL && c->head->left == 0) {
        struct rreq *r = c->head;
        c->head = r->next;
        if (c->head == NULL)
            c->tail = NULL;
        c->nq--;
        write_answer(c, r);
        rreq_free(r);
    }
    if (c->in_process)
        return true;
    if (c->closing && c->head == NULL)
        c->net.close_after_write = true;
    if (!out_empty(&c->net.out) || c->net.close_after_write)
        return net_conn_flush(&c->net);
    return true;
}

/* Can c go on taking what it has read (after a pause or a barrier)? */
static bool should_resume(const struct rconn *c) {
    return !c->closing && !c->barrier && (c->resume || (c->net.paused && may_take(c)));
}

/*
 * drain_out(), then, from a done callback, takes what c read before it
 * paused or met a barrier.  Returns false if c is gone.
 */
static bool drain(struct rconn *c) {
    if (!drain_out(c))
        return false;
    if (!c->in_process && should_resume(c))
        return conn_process(&c->net);
    return true;
}

/*
 * The answer to a request that got no reply: status is a negative enum
 * cellar_status from the route tree.  SERVER_ERROR in mcrouter's words
 * where it has them ("Reply timeout", "connection error", "Server
 * unavailable. Reason: ..."), else libcellar's; CLIENT_ERROR "bad command
 * line format" for CELLAR_EINVAL (a key the pools cannot carry, as
 * memcached answers a bad key).
 */
static void status_reply(struct msg_reply *r, int status) {
    static const struct { int status; enum msg_res res; const char *why; } words[] = {
        {CELLAR_EINVAL, MSG_RES_CLIENT_ERROR, "bad command line format"},
        {CELLAR_ENOMEM, MSG_RES_SERVER_ERROR, "out of memory"},
        {CELLAR_ETIMEDOUT, MSG_RES_SERVER_ERROR, "Reply timeout"},
        {CELLAR_ECONNECT, MSG_RES_SERVER_ERROR, "connection error"},
        {CELLAR_ECLOSED, MSG_RES_SERVER_ERROR, "connection closed"},
        {CELLAR_EDOWN, MSG_RES_SERVER_ERROR, "Server unavailable. Reason: marked down"},
        {CELLAR_EPROTO, MSG_RES_SERVER_ERROR, "protocol error in server reply"},
        {CELLAR_ENOTSUP, MSG_RES_SERVER_ERROR, "not supported by the pool's protocol"},
        {CELLAR_ESERVER, MSG_RES_SERVER_ERROR, "server error"},
        {CELLAR_ECLIENT, MSG_RES_CLIENT_ERROR, "client error (refused by server)"},
        {CELLAR_EUNKNOWN, MSG_RES_ERROR, ""},
    };
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (words[i].status == status) {
            msg_serve_error(r, words[i].res, words[i].why);
            return;
        }
    }
    msg_serve_error(r, MSG_RES_SERVER_ERROR, "unknown status");
}

/* A key's answer (or failure) from the route tree. */
static void sub_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct rsub *s = q->arg;
    struct rreq *r = s->r;
    struct msg_reply failed;
    if (rep == NULL) {
        status_reply(&failed, status);
        rep = &failed;
    }
    if (r->plan == MSG_BIN_SEND_CREATE && !s->created && rep->res == MSG_RES_NOT_FOUND) {
        /* memcached's binary incr creates the key: the add, in place of the incr */
        s->created = true;
        msg_bin_create(&s->q.m, &r->u.bin, s->digits);
        cl_async_submit(r->rh->h, &s->q);
        return;
    }
    if (r->plan == MSG_BIN_SEND_CREATE && s->created && rep->res == MSG_RES_NOT_STORED &&
        s->retries < 8) {
        /* created meanwhile by another request: the incr again, now it finds the key */
        s->created = false;
        s->retries++;
        msg_from_bin(&s->q.m, &r->u.bin, r->value);
        cl_async_submit(r->rh->h, &s->q);
        return;
    }
    r->rh->inflight--;
    struct rconn *c = r->c;
    struct rworker *w = r->rh->w;
    s->rep = *rep;
    if (r->proto == RP_TEXT && r->u.text.cmd == MC_CMD_METAGET)
        msg_serve_expiry(&r->u.text, &s->rep, (int64_t)time(NULL));
    s->answered = true;
    size_t nval = rep->value.len + rep->msg.len;
    if (c != NULL) {
        /* the estimates: up at once to a larger answer; a client's down a
           quarter of the way, the worker's (a new client's first) a 64th */
        double n = (double)(nval + EST_HEAD);
        c->inflight--;
        c->est = n > c->est ? n : c->est + (n - c->est) / 4;
        w->reply_est = n > w->reply_est ? n : w->reply_est + (n - w->reply_est) / 64;
    } else {
        /* the client is gone: the answer goes nowhere */
        s->rep.value = s->rep.msg = (struct mc_span){NULL, 0};
        nval = 0;
    }
    if (nval > 0) {
        s->val = val_new(w, nval);
        if (s->val == NULL) {
            status_reply(&s->rep, CELLAR_ENOMEM);
        } else {
            if (rep->value.len)
                memcpy(s->val, rep->value.p, rep->value.len);
            if (rep->msg.len)
                memcpy(s->val + rep->value.len, rep->msg.p, rep->msg.len);
            s->rep.value = (struct mc_span){s->val, rep->value.len};
            s->rep.msg = (struct mc_span){s->val + rep->value.len, rep->msg.len};
            s->nval = nval;
            c->vals += nval;
        }
    }
    if (msg_serve_is_error(&s->rep) && c != NULL) {
        w->st.errors++;
        if (status == CELLAR_ECLIENT || s->rep.res == MSG_RES_CLIENT_ERROR)
            w->st.client_errors++;
        else if (status == CELLAR_ESERVER)
            w->st.remote_errors++;
    }
    if (c != NULL && c->vals + c->net.out.bytes > w->rt->client_hard_bytes)
        (void)close_slow(c);        /* r is an orphan now, or c is marked */
    rreq_answered(r);
}

/* One more of r's keys is answered: when it was the last, r's answer can go out. */
static void rreq_answered(struct rreq *r) {
    if (--r->left > 0)
        return;
    struct rconn *c = r->c;
    if (c == NULL) {
        rreq_free(r);
        return;
    }
    if (r->barrier && c->barrier) {
        /* the two-step or delayed request is done: what came after it may go on */
        c->barrier = false;
        c->resume = true;
    }
    if (c->head == r || c->resume)
        (void)drain(c);
}

/* ---------------------------------------------------------------------- */
/* Parsing                                                                  */
/* ---------------------------------------------------------------------- */

/* Returns from take_*: a request was taken, more bytes are needed, or c must stop. */
enum take { TAKEN, NEED_MORE, STOP };

/*
 * The router's `stats` (group empty: its own counters) or `stats servers`
 * (each backend's state and counters), made by admin.c; a group it does
 * not keep is ERROR (binary: not found).
 */
static void stats_answer(struct rconn *c, enum rproto proto, const char *group, size_t ngroup,
                         uint32_t opaque, uint8_t opcode) {
    char *a = NULL;
    size_t n = 0;
    int rc = admin_stats(c->w->rt, group, ngroup, proto == RP_BIN, opaque, &a, &n);
    if (rc == 0) {
        answer_local(c, proto, a, n);
    } else if (proto == RP_BIN) {
        char e[MC_BIN_ERROR_MAX];
        answer_local(c, proto, e,
                     mc_bin_fmt_error(e, opcode, rc > 0 ? MC_BIN_ST_KEY_ENOENT : MC_BIN_ST_ENOMEM,
                                      opaque));
    } else if (rc > 0 && c->w->rt->mcrouter_errors) {
        answer_local(c, proto, "CLIENT_ERROR bad stats command\r\n", 32);
    } else if (rc > 0) {
        answer_local(c, proto, "ERROR\r\n", 7);
    } else {
        answer_local(c, proto, "SERVER_ERROR out of memory\r\n", 28);
    }
    free(a);
}

static enum take take_meta(struct rconn *c, size_t used);

/* `get __mcrouter__.NAME`: mcrouter's admin gets (admin.c), a miss for a name not known. */
static void admin_get(struct rconn *c, struct mc_span key) {
    char *v = NULL;
    size_t n = 0;
    c->w->st.cmd_other++;
    int rc = admin_mcrouter_get(c->w->rt, cl_handle_config(c->w->cur->h), key.p, key.len, &v, &n);
    if (rc < 0) {
        answer_local(c, RP_TEXT, "SERVER_ERROR out of memory\r\n", 28);
    } else if (rc > 0) {
        answer_local(c, RP_TEXT, MSG_SERVE_END, MSG_SERVE_END_LEN);
    } else {
        char head[MC_KEY_MAX + 64];
        int k = snprintf(head, sizeof(head), "VALUE %.*s 0 %zu\r\n", (int)key.len, key.p, n);
        char *a = malloc((size_t)k + n + 7);
        if (a == NULL) {
            answer_local(c, RP_TEXT, "SERVER_ERROR out of memory\r\n", 28);
        } else {
            memcpy(a, head, (size_t)k);
            if (n)
                memcpy(a + k, v, n);
            memcpy(a + k + n, "\r\nEND\r\n", 7);
            answer_local(c, RP_TEXT, a, (size_t)k + n + 7);
            free(a);
        }
    }
    free(v);
}

/* A text line: memcached's (mc_text.h), or one of mcrouter's own (mc_mcr.h). */
static enum mc_parse parse_line(struct mc_req *req, const char *p, size_t len, size_t *used) {
    if (len > 0 && (p[0] == 'l' || p[0] == 'm') && mc_mcr_line(p, len))
        return mc_mcr_parse(req, p, len, used);
    return mc_text_parse(req, p, len, used);
}

/* A text or meta line: a keyed request through the route tree, or answered here. */
static enum take take_text(struct rconn *c) {
    const char *p = c->net.rbuf + c->net.rstart;
    size_t len = c->net.rend - c->net.rstart;
    struct mc_req req;
    size_t used = 0;
    enum mc_parse pr = parse_line(&req, p, len, &used);
    if (pr == MC_PARSE_NEED_MORE)
        return NEED_MORE;
    if (pr == MC_PARSE_CLOSE) {
        c->closing = true;
        return STOP;
    }
    if (pr == MC_PARSE_OK && req.cmd == MC_CMD_META)
        return take_meta(c, used);  /* the text codec only named the verb */
    size_t total = used;
    bool stores = pr == MC_PARSE_OK && ((req.cmd >= MC_CMD_SET && req.cmd <= MC_CMD_CAS) ||
                                        req.cmd == MC_CMD_LEASE_SET);
    if (stores) {
        total = used + (size_t)req.vlen + 2;
        if (len < total)
            return NEED_MORE;
        if (p[used + req.vlen] != '\r' || p[used + req.vlen + 1] != '\n') {
            c->net.rstart += total;
            if (!req.noreply)
                answer_local(c, RP_TEXT, "CLIENT_ERROR bad data chunk\r\n", 29);
            return TAKEN;
        }
    }
    /* cellard's `delete <key> <hold>` goes on (a backend without -o delete_hold
       refuses it as memcached does); a key the text form cannot carry cannot */
    bool hold = pr == MC_PARSE_ERROR && req.cmd == MC_CMD_DELETE &&
                req.err == MC_ERR_DELETE_USAGE && req.exptime > 0 && msg_key_ok(req.key);
    if (pr == MC_PARSE_ERROR && req.err == MC_ERR_BAD_KEY && c->w->rt->mcrouter_errors) {
        /* mcrouter's words for a key over 250 bytes, its data block read past */
        if (req.cmd >= MC_CMD_SET && req.cmd <= MC_CMD_CAS) {
            total = used + (size_t)req.vlen + 2;
            if (len < total)
                return NEED_MORE;
        }
        c->net.rstart += total;
        c->w->st.local_errors++;
        if (!req.noreply)
            answer_local(c, RP_TEXT, "CLIENT_ERROR bad key\r\n", 22);
        return TAKEN;
    }
    if (pr == MC_PARSE_ERROR && req.err == MC_ERR_ERROR && c->w->rt->mcrouter_errors) {
        /* mcrouter's answer to a line it cannot parse (an unknown command, a
           wrong word count): the connection stops once the answers before it
           are out */
        c->net.rstart += used;
        c->w->st.local_errors++;
        answer_local(c, RP_TEXT, "CLIENT_ERROR malformed request\r\n", 32);
        c->closing = true;
        return STOP;
    }
    if (pr == MC_PARSE_ERROR && !hold) {
        c->net.rstart += used;
        c->w->st.local_errors++;
        if (!req.noreply)
            answer_local(c, RP_TEXT, mc_text_err_str(req.err), mc_text_err_len(req.err));
        return TAKEN;
    }
    c->net.rstart += total;
    switch (req.cmd) {
    case MC_CMD_VERSION:
        answer_local(c, RP_TEXT, "VERSION " MC_VERSION "\r\n", sizeof("VERSION " MC_VERSION "\r\n") - 1);
        return TAKEN;
    case MC_CMD_VERBOSITY:
        if (!req.noreply)
            answer_local(c, RP_TEXT, "OK\r\n", 4);
        return TAKEN;
    case MC_CMD_QUIT:
        c->closing = true;
        c->net.close_normal = true;
        return STOP;
    case MC_CMD_SHUTDOWN:
        c->w->st.cmd_other++;
        if (!c->w->rt->enable_shutdown) {   /* memcached's answer without -A */
            answer_local(c, RP_TEXT, "ERROR: shutdown not enabled\r\n", 29);
            return TAKEN;
        }
        atomic_store(&c->w->rt->net.stop, true);    /* the main loop sees it within 1 s */
        c->closing = true;
        c->net.close_normal = true;
        return STOP;
    case MC_CMD_STATS:
        c->w->st.cmd_other++;
        if (req.ntokens > 2 && c->w->rt->mcrouter_errors)    /* a group the router does not keep */
            answer_local(c, RP_TEXT, "CLIENT_ERROR bad stats command\r\n", 32);
        else if (req.ntokens > 2)
            answer_local(c, RP_TEXT, "ERROR\r\n", 7);
        else
            stats_answer(c, RP_TEXT, req.ntokens > 1 ? req.tok[1].p : "",
                         req.ntokens > 1 ? req.tok[1].len : 0, 0, 0);
        return TAKEN;
    case MC_CMD_FLUSH_ALL:
        if (c->w->rt->enable_flush)
            break;
        c->w->st.cmd_flush++;
        if (!req.noreply)           /* mcrouter's words */
            answer_local(c, RP_TEXT, "SERVER_ERROR Command disabled\r\n", 31);
        return TAKEN;
    default:
        break;
    }
    if ((req.cmd == MC_CMD_GET || req.cmd == MC_CMD_GETS) && req.nkeys == 1 &&
        req.key.len > 13 && memcmp(req.key.p, "__mcrouter__.", 13) == 0) {
        admin_get(c, req.key);
        return TAKEN;
    }
    /* keyed requests and flush_all: made again from the rreq's own copy */
    unsigned nsub = text_retrieval(req.cmd) ? req.nkeys
                  : req.cmd == MC_CMD_FLUSH_ALL ? cl_handle_servers(c->w->cur->h) : 1;
    if (nsub == 0 && text_retrieval(req.cmd)) {
        answer_local(c, RP_TEXT, MSG_SERVE_END, MSG_SERVE_END_LEN);    /* "gat 10" */
        return TAKEN;
    }
    struct mc_req probe;
    if (nsub == 0 || !msg_from_text(&(struct msg){0}, &req, req.key,
                                    (struct mc_span){p + used, stores ? req.vlen : 0})) {
        c->w->st.cmd_other++;
        answer_local(c, RP_TEXT, "ERROR\r\n", 7);
        return TAKEN;
    }
    struct rreq *r = rreq_new(c, RP_TEXT, p, total, nsub, 0);
    if (r == NULL) {
        answer_local(c, RP_TEXT, "SERVER_ERROR out of memory\r\n", 28);
        return TAKEN;
    }
    size_t u2 = 0;
    parse_line(&probe, r->bytes, total, &u2);
    r->u.text = probe;
    r->nsub = nsub;
    struct mc_span value = {r->bytes + used, stores ? req.vlen : 0};
    if (text_retrieval(req.cmd)) {
        struct mc_span rest = r->u.text.keys, key;
        unsigned i = 0;
        while (i < nsub && mc_text_next_key(&rest, &key))
            msg_from_text(&r->subs[i++].q.m, &r->u.text, key, value);
        r->nsub = i;
        c->w->st.cmd_get += i;
    } else if (req.cmd == MC_CMD_FLUSH_ALL) {
        for (unsigned i = 0; i < nsub; i++)
            msg_from_text(&r->subs[i].q.m, &r->u.text, r->u.text.key, value);
        c->w->st.cmd_flush++;
        int64_t delay = flush_delay(r->subs[0].q.m.exptime);
        if (delay > 0) {
            r->kind = RK_BROADCAST;
            start_later(c, r, delay);
            return TAKEN;
        }
    } else {
        msg_from_text(&r->subs[0].q.m, &r->u.text, r->u.text.key, value);
        if (stores)
            c->w->st.cmd_set++;
        else if (req.cmd == MC_CMD_DELETE)
            c->w->st.cmd_delete++;
        else if (req.cmd == MC_CMD_TOUCH)
            c->w->st.cmd_touch++;
        else if (req.cmd == MC_CMD_INCR)
            c->w->st.cmd_incr++;
        else if (req.cmd == MC_CMD_DECR)
            c->w->st.cmd_decr++;
    }
    r->kind = req.cmd == MC_CMD_FLUSH_ALL ? RK_BROADCAST : RK_KEYED;
    start(c, r, r->kind == RK_BROADCAST);
    return TAKEN;
}

/* A meta line (mg ms md ma mn me) of used bytes, as the text codec found it. */
static enum take take_meta(struct rconn *c, size_t used) {
    const char *p = c->net.rbuf + c->net.rstart;
    size_t len = c->net.rend - c->net.rstart;
    struct mc_meta_req req;
    size_t mused = 0;
    enum mc_parse pr = mc_meta_parse(&req, p, used, &mused);
    size_t total = used;
    if (pr == MC_PARSE_OK && req.cmd == MC_META_MS) {
        total = used + (size_t)req.vlen + 2;
        if (len < total)
            return NEED_MORE;
    } else if (pr == MC_PARSE_ERROR && req.swallow > 0) {
        total = used + req.swallow;
        if (len < total)
            return NEED_MORE;
    }
    c->w->st.cmd_meta++;
    if (pr != MC_PARSE_OK) {
        /* memcached's words for a bad meta line, as cellard writes them */
        c->net.rstart += total;
        c->w->st.local_errors++;
        answer_local(c, RP_META, mc_meta_err_str(req.err), mc_meta_err_len(req.err));
        return TAKEN;
    }
    if (req.cmd == MC_META_MS &&
        (p[used + req.vlen] != '\r' || p[used + req.vlen + 1] != '\n')) {
        c->net.rstart += total;
        answer_local(c, RP_META, "CLIENT_ERROR bad data chunk\r\n", 29);
        return TAKEN;
    }
    c->net.rstart += total;
    if (req.cmd == MC_META_MN) {
        answer_local(c, RP_META, "MN\r\n", 4);
        return TAKEN;
    }
    struct rreq *r = rreq_new(c, RP_META, p, total, 1, 0);
    if (r == NULL) {
        answer_local(c, RP_META, "SERVER_ERROR out of memory\r\n", 28);
        return TAKEN;
    }
    size_t u2 = 0;
    mc_meta_parse(&r->u.meta, r->bytes, used, &u2);
    r->meta_flags = malloc(used);
    struct mc_span value = {r->bytes + used, req.cmd == MC_META_MS ? req.vlen : 0};
    if (r->meta_flags == NULL ||
        !msg_from_meta(&r->subs[0].q.m, &r->u.meta, (struct mc_span){r->bytes, used}, value,
                       r->meta_flags, used)) {
        rreq_free(r);
        answer_local(c, RP_META, "SERVER_ERROR out of memory\r\n", 28);
        return TAKEN;
    }
    r->nsub = 1;
    r->kind = RK_KEYED;
    start(c, r, false);
    return TAKEN;
}

/* A binary request. */
static enum take take_bin(struct rconn *c) {
    const char *p = c->net.rbuf + c->net.rstart;
    size_t len = c->net.rend - c->net.rstart;
    struct mc_bin_req req;
    size_t used = 0;
    enum mc_parse pr = mc_bin_parse(&req, p, len, &used);
    if (pr == MC_PARSE_NEED_MORE)
        return NEED_MORE;
    if (pr == MC_PARSE_CLOSE) {
        c->closing = true;
        return STOP;
    }
    if (pr == MC_PARSE_ERROR) {
        if (len < used + req.swallow)
            return NEED_MORE;
        char e[MC_BIN_ERROR_MAX];
        size_t n = mc_bin_fmt_error(e, req.opcode, req.status, req.opaque);
        c->net.rstart += used + req.swallow;
        c->w->st.local_errors++;
        answer_local(c, RP_BIN, e, n);
        if (req.close) {
            c->closing = true;
            return STOP;
        }
        return TAKEN;
    }
    size_t total = used + (req.reads_value ? req.vlen : 0);
    if (len < total)
        return NEED_MORE;
    c->net.rstart += total;
    struct mc_span value = {p + used, req.reads_value ? req.vlen : 0};
    struct msg probe;
    enum msg_bin_plan plan = msg_from_bin(&probe, &req, value);
    if (plan == MSG_BIN_LOCAL || probe.op == MSG_VERSION) {
        char a[MC_BIN_ERROR_MAX + 64];
        size_t n = 0;
        switch (req.cmd) {
        case MC_BIN_OP_NOOP:
            n = mc_bin_fmt_header(a, req.opcode, 0, 0, 0, 0, req.opaque, 0);
            break;
        case MC_BIN_OP_QUIT:
            if (!req.quiet)
                answer_local(c, RP_BIN, a,
                             mc_bin_fmt_header(a, req.opcode, 0, 0, 0, 0, req.opaque, 0));
            c->closing = true;
            c->net.close_normal = true;
            return STOP;
        case MC_BIN_OP_VERSION:
            n = mc_bin_fmt_header(a, req.opcode, 0, 0, 0, sizeof(MC_VERSION) - 1, req.opaque, 0);
            memcpy(a + n, MC_VERSION, sizeof(MC_VERSION) - 1);
            n += sizeof(MC_VERSION) - 1;
            break;
        case MC_BIN_OP_STAT:            /* "" or "servers"; another group: not found */
            stats_answer(c, RP_BIN, req.key.p, req.key.len, req.opaque, req.opcode);
            return TAKEN;
        default:
            n = mc_bin_fmt_error(a, req.opcode, MC_BIN_ST_UNKNOWN_COMMAND, req.opaque);
            break;
        }
        answer_local(c, RP_BIN, a, n);
        return TAKEN;
    }
    bool flush = probe.op == MSG_FLUSH_ALL;
    if (flush && !c->w->rt->enable_flush) {
        char e[MC_BIN_ERROR_MAX];
        c->w->st.cmd_flush++;
        answer_local(c, RP_BIN, e, mc_bin_fmt_error(e, req.opcode, MC_BIN_ST_EINVAL, req.opaque));
        return TAKEN;
    }
    unsigned nsub = flush ? cl_handle_servers(c->w->cur->h) : 1;
    struct rreq *r = rreq_new(c, RP_BIN, p, total, nsub, 0);
    if (r == NULL) {
        char e[MC_BIN_ERROR_MAX];
        answer_local(c, RP_BIN, e, mc_bin_fmt_error(e, req.opcode, MC_BIN_ST_ENOMEM, req.opaque));
        return TAKEN;
    }
    size_t u2 = 0;
    mc_bin_parse(&r->u.bin, r->bytes, total, &u2);
    r->plan = plan;
    r->nsub = nsub;
    value.p = r->bytes + used;
    r->value = value;
    for (unsigned i = 0; i < nsub; i++)
        msg_from_bin(&r->subs[i].q.m, &r->u.bin, value);
    r->kind = flush ? RK_BROADCAST : RK_KEYED;
    /* The incr's add goes out after the incr's answer: what the client sent
       after it must not overtake it. */
    r->barrier = c->barrier = plan == MSG_BIN_SEND_CREATE;
    if (cl_op_reads(probe.op))
        c->w->st.cmd_get++;
    else if (msg_op_stores(probe.op))
        c->w->st.cmd_set++;
    int64_t delay = flush ? flush_delay(r->subs[0].q.m.exptime) : 0;
    if (delay > 0)
        start_later(c, r, delay);
    else
        start(c, r, flush);
    return TAKEN;
}

/*
 * net's process(): takes every whole request from rbuf while the queue
 * has room, then writes what is answered.
 */
/*
 * --auth-file: memcached's ASCII authentication before anything else, as
 * cellard's -Y (protocol/mc_auth.h): every line answered in order.
 */
static enum take take_auth(struct rconn *c) {
    struct mc_auth st = {c->auth_need};
    struct mc_span answer;
    size_t used = 0;
    bool checked, passed;
    enum mc_auth_step r = mc_auth_step(&st, c->net.rbuf + c->net.rstart,
                                       c->net.rend - c->net.rstart, &used, c->w->rt->auth,
                                       &answer, &checked, &passed);
    c->auth_need = st.need;
    c->net.rstart += used;
    if (r == MC_AUTH_MORE)
        return NEED_MORE;
    if (r == MC_AUTH_CLOSE) {
        c->closing = true;          /* junk: hung up once what came before is answered */
        return STOP;
    }
    RSTAT_ADD(c->w->st.auth_cmds, checked);
    RSTAT_ADD(c->w->st.auth_errors, checked && !passed);
    c->authed = passed;
    return answer_local(c, RP_TEXT, answer.p, answer.len) ? TAKEN : STOP;
}

static bool conn_process(struct net_conn *nc) {
    struct rconn *c = (struct rconn *)nc;
    if (c->net.paused && !may_take(c))
        return true;                /* output drained, but not enough: wait on */
again:
    c->resume = false;
    net_conn_pause(&c->net, false);
    c->in_process = true;
    while (c->net.rstart < c->net.rend && !c->closing && !c->barrier && !c->kill) {
        bool unread = c->net.want_write || over_bytes(c);
        if (c->nq >= QUEUE_MAX || unread) {
            if (unread)
                RSTAT_ADD(c->w->st.clients_throttled, 1);
            net_conn_pause(&c->net, true);
            break;
        }
        enum take t;
        if (c->w->rt->auth != NULL && !c->authed) {
            t = take_auth(c);       /* lines, whatever the first byte */
        } else {
            if (!c->proto_known) {
                c->binary = (unsigned char)c->net.rbuf[c->net.rstart] == MC_BIN_REQ_MAGIC;
                c->proto_known = true;
            }
            t = c->binary ? take_bin(c) : take_text(c);
        }
        if (t != TAKEN)
            break;
        atomic_store_explicit(&c->net.last_active, (uint32_t)time(NULL), memory_order_relaxed);
    }
    if (c->closing)
        c->net.rstart = c->net.rend;        /* what follows a quit is not read */
    c->in_process = false;
    if (c->kill)
        return close_slow(c);
    if (!drain_out(c))
        return false;
    /* the answers held went out: take the rest of what was read */
    if (c->net.rstart < c->net.rend && should_resume(c))
        goto again;
    return true;
}

static void conn_opened(struct net_conn *nc) {
    struct rconn *c = (struct rconn *)nc;
    c->w = (struct rworker *)nc->w;
    c->est = c->w->reply_est > EST_FIRST ? c->w->reply_est : EST_FIRST;
    atomic_store(&c->net.last_active, (uint32_t)time(NULL));
}

/* The client is gone (or going): it is cut from its requests, as orphan_all() says. */
static void conn_release(struct net_conn *nc) {
    orphan_all((struct rconn *)nc);
}

/*
 * Once what was held for clients (a megabyte or more) has all gone, the
 * heap gives its free pages back: the answers' own blocks are mapped
 * apart, but the backends' read buffers grew and shrank with them in the
 * heap.  (Worker's thread, once a second.)
 */
void router_trim_heap(struct rworker *w) {
    if (w->held_peak >= (1u << 20) &&
        atomic_load_explicit(&w->st.bytes_held, memory_order_relaxed) == 0) {
        w->held_peak = 0;
        malloc_trim(0);
    }
}

/*
 * Once a second: a client whose output has waited on the socket, without
 * a byte of it taken, for the output timeout is closed.
 */
void router_close_stuck(struct rworker *w, uint32_t now) {
    unsigned limit = w->rt->client_output_timeout;
    struct net_conn *nc = w->net.conns, *next;
    for (; nc != NULL; nc = next) {
        next = nc->next;
        struct rconn *c = (struct rconn *)nc;
        if (!nc->want_write || nc->out.bytes != c->stuck_bytes) {
            c->stuck_bytes = nc->out.bytes;
            c->stuck_since = nc->want_write ? now : 0;
            continue;
        }
        if (c->stuck_since == 0)
            c->stuck_since = now;
        if (limit && now - c->stuck_since >= limit)
            (void)close_slow(c);
    }
}

const struct net_conn_ops router_conn_ops = {
    .conn_size = sizeof(struct rconn),
    .process = conn_process,
    .opened = conn_opened,
    .release = conn_release,
};
