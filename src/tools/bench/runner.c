/*
 * runner.c -- one load thread: an epoll loop over its connections.
 *
 *   epoll_wait --> now = clock --> for each readable connection:
 *        ^           read() once, parse every whole reply (latency =
 *        |           now - sent), then top the connection up to depth
 *        |           and write() all new requests at once
 *        +---------- fold statistics 5 times a second, check stop and stall
 *
 * With --io uring the same loop runs over io_uring instead (ur_* below):
 * a multishot receive per connection into a ring of provided buffers,
 * every connection's new requests sent with one io_uring_enter per loop
 * turn that also reaps the replies, so the generator spends fewer system
 * calls per request than the server it measures.
 *
 * A connection costs one read() and one write() per round trip and never
 * an epoll_ctl() unless the socket fills (then EPOLLOUT until drained): no
 * more system calls per request than the lightest server makes.  Requests
 * come ready-made from a pool drawn before the run (pool_build), so the
 * work per request is a memcpy out and a parse of the reply in.
 * With --rate (open loop) requests leave on a fixed schedule instead, each
 * on the next connection with fewer than -d in flight, and their latency
 * counts from when they were due, so a server that falls behind is seen
 * to (no coordinated omission).
 * The clock is read once per wake-up: every reply handled in it gets the
 * same receive time and every request sent in it the same send time.  The
 * time spent inside epoll_wait is summed: what is left of the wall time is
 * the thread's busy time, kernel work on its sockets included (which the
 * process's CPU time in /proc leaves out when it runs as softirq), so the
 * report can say how close the generator itself is to its limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/evloop.h"
#include "core/uring.h"
#include "tools/bench/bench.h"

#define RBUF_INIT 65536
#define WBUF_INIT 16384
#define WAIT_MS 50
#define FOLD_NS 200000000ull      /* fold the window into the totals five times a second */
#define POOL_BYTES_MAX (32u << 20)

static int pool_build(struct bench_thread *t);

struct bconn {
    int fd;
    void *tls;                      /* --tls: its session (tls.c) */
    bool dead, want_write;
    bool ur_recv, ur_send, ur_queued;   /* --io uring: receive armed, send in the kernel, queued */
    char *rbuf;
    size_t rlen, rcap;
    char *wbuf;
    size_t wlen, woff, wcap;
    struct bench_req *ring;         /* requests in flight, oldest at head */
    uint32_t head, count, cap;
};

uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fail(struct bench_thread *t, const char *fmt, const char *what) {
    if (!t->failed) {
        snprintf(t->err, sizeof(t->err), fmt, what);
        t->failed = 1;
    }
}

static void ur_cancel(struct bench_thread *t, struct bconn *c);

static void conn_kill(struct bench_thread *t, struct bconn *c, const char *why) {
    if (c->dead)
        return;
    fail(t, "connection lost: %s", why);
    if (t->ur != NULL)
        ur_cancel(t, c);
    evloop_del(t->loop, c->fd);
    bench_tls_close(c->tls);
    c->tls = NULL;
    close(c->fd);
    c->fd = -1;
    c->dead = true;
    t->inflight -= c->count;
    c->count = 0;
    t->live--;
}

static int conn_open(struct bench_thread *t, struct bconn *c) {
    struct addrinfo *ai = t->sh->addr;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        fail(t, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        fail(t, "connect: %s", strerror(errno));
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (t->sh->tls != NULL) {
        char why[200];
        if ((c->tls = bench_tls_connect(t->sh->tls, fd, why, sizeof(why))) == NULL) {
            fail(t, "%s", why);
            close(fd);
            return -1;
        }
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    c->fd = fd;
    if (evloop_add(t->loop, fd, EV_READ, c) < 0) {
        fail(t, "epoll: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return 0;
}

int bench_thread_setup(struct bench_thread *t, const struct bench_config *cfg,
                       struct bench_shared *sh, unsigned id) {
    memset(t, 0, sizeof(*t));
    t->id = id;
    t->cfg = cfg;
    t->sh = sh;
    t->rng.s = cfg->seed * 0x100000001b3ull + id + 1;
    pthread_mutex_init(&t->mu, NULL);
    t->hwin = malloc(sizeof(*t->hwin));
    t->htotal = malloc(sizeof(*t->htotal));
    t->hpub = malloc(sizeof(*t->hpub));
    t->keybuf = malloc((size_t)cfg->wl.multiget * cfg->wl.key_size);
    t->keys = malloc(cfg->wl.multiget * sizeof(*t->keys));
    t->loop = evloop_create();
    t->conns = calloc(cfg->conns, sizeof(*t->conns));
    if (!t->hwin || !t->htotal || !t->hpub || !t->keybuf || !t->keys || !t->loop || !t->conns) {
        fail(t, "%s", "out of memory");
        return -1;
    }
    if (!cfg->preload_only && pool_build(t) < 0) {
        fail(t, "%s", "out of memory (request pool)");
        return -1;
    }
    uint32_t cap = cfg->depth > cfg->preload_depth ? cfg->depth : cfg->preload_depth;
    for (unsigned i = 0; i < cfg->conns; i++) {
        struct bconn *c = &t->conns[i];
        c->fd = -1;
        c->dead = true;
        c->rcap = RBUF_INIT;
        c->wcap = WBUF_INIT;
        c->cap = cap;
        c->rbuf = malloc(c->rcap);
        c->wbuf = malloc(c->wcap);
        c->ring = malloc(cap * sizeof(*c->ring));
        if (!c->rbuf || !c->wbuf || !c->ring) {
            fail(t, "%s", "out of memory");
            return -1;
        }
        if (conn_open(t, c) < 0)
            return -1;
        c->dead = false;
        t->nconns++;
        t->live++;
    }
    return 0;
}

void bench_thread_teardown(struct bench_thread *t) {
    if (t->conns) {
        for (unsigned i = 0; i < t->cfg->conns; i++) {
            struct bconn *c = &t->conns[i];
            bench_tls_close(c->tls);
            if (c->fd >= 0)
                close(c->fd);
            free(c->rbuf);
            free(c->wbuf);
            free(c->ring);
        }
    }
    free(t->conns);
    evloop_destroy(&t->loop);
    free(t->hwin);
    free(t->htotal);
    free(t->hpub);
    free(t->keybuf);
    free(t->keys);
    free(t->pool_buf);
    free(t->pool);
    pthread_mutex_destroy(&t->mu);
    t->conns = NULL;
}

/* ---------------------------------------------------------------------- */
/* Statistics                                                               */
/* ---------------------------------------------------------------------- */

static void stats_reset(struct bench_thread *t) {
    memset(&t->win, 0, sizeof(t->win));
    memset(&t->total, 0, sizeof(t->total));
    histogram_init(t->hwin);
    histogram_init(t->htotal);
}

/* Moves the window into the total (and the published copy). */
static void fold(struct bench_thread *t) {
    if (t->sh->progress) {
        pthread_mutex_lock(&t->mu);
        histogram_merge(t->hpub, t->hwin);
        bench_stats_add(&t->pub, &t->win);
        pthread_mutex_unlock(&t->mu);
    }
    histogram_merge(t->htotal, t->hwin);
    bench_stats_add(&t->total, &t->win);
    histogram_init(t->hwin);
    memset(&t->win, 0, sizeof(t->win));
}

void bench_thread_take(struct bench_thread *t, struct bench_stats *s, struct histogram *h) {
    pthread_mutex_lock(&t->mu);
    bench_stats_add(s, &t->pub);
    histogram_merge(h, t->hpub);
    memset(&t->pub, 0, sizeof(t->pub));
    histogram_init(t->hpub);
    pthread_mutex_unlock(&t->mu);
}

/* ---------------------------------------------------------------------- */
/* Requests out                                                             */
/* ---------------------------------------------------------------------- */

static bool may_issue(const struct bench_thread *t) {
    if (t->phase == BENCH_PHASE_PRELOAD)
        return t->next_key < t->end_key;
    return !atomic_load_explicit(&t->sh->stop, memory_order_relaxed) && t->issued < t->quota;
}

/* Makes room for n more bytes at the end of wbuf. */
static bool wbuf_room(struct bconn *c, size_t n) {
    if (c->woff == c->wlen)
        c->woff = c->wlen = 0;
    if (c->wcap - c->wlen >= n)
        return true;
    if (c->woff > 0) {
        memmove(c->wbuf, c->wbuf + c->woff, c->wlen - c->woff);
        c->wlen -= c->woff;
        c->woff = 0;
        if (c->wcap - c->wlen >= n)
            return true;
    }
    size_t cap = c->wcap;
    while (cap - c->wlen < n)
        cap *= 2;
    char *p = realloc(c->wbuf, cap);
    if (p == NULL)
        return false;
    c->wbuf = p;
    c->wcap = cap;
    return true;
}

/* The most bytes a request's head (all of it but a set's value) can take. */
static size_t head_max(const struct bench_config *cfg) {
    const struct workload *wl = &cfg->wl;
    return (size_t)wl->multiget * (wl->key_size + 1) + wl->key_size + 64;
}

/*
 * Draws one request of the workload and writes its head into out (which
 * holds head_max() bytes): a whole get, or a set up to its value.  With
 * key >= 0 it is a set of that key instead (the preload).
 */
static size_t gen_request(struct bench_thread *t, char *out, int64_t key, struct pool_req *pr) {
    const struct bench_config *cfg = t->cfg;
    const struct workload *wl = &cfg->wl;
    size_t cap = head_max(cfg), n;
    if (key >= 0 || workload_is_set(wl, &t->rng)) {
        uint64_t k = key >= 0 ? (uint64_t)key : workload_pick(wl, &t->rng, false);
        pr->vlen = workload_vlen(wl, &t->rng);
        workload_key(wl, k, t->keybuf);
        n = cfg->proto->fmt_set(out, cap, (struct mc_span){t->keybuf, wl->key_size}, pr->vlen);
        pr->op = BENCH_SET;
        pr->nkeys = 1;
    } else {
        for (unsigned i = 0; i < wl->multiget; i++) {
            char *k = t->keybuf + (size_t)i * wl->key_size;
            workload_key(wl, workload_pick(wl, &t->rng, true), k);
            t->keys[i] = (struct mc_span){k, wl->key_size};
        }
        n = cfg->proto->fmt_get(out, cap, t->keys, wl->multiget);
        pr->op = BENCH_GET;
        pr->nkeys = wl->multiget;
        pr->vlen = 0;
    }
    pr->len = (uint32_t)n;
    return n;
}

/*
 * Draws the thread's pool: cfg->pool requests (fewer if their heads pass
 * POOL_BYTES_MAX), sent round and round during the run.  Drawing a zipf
 * key and formatting a request cost as much as the null server spends on
 * answering it; reading them from the pool costs a memcpy.
 */
static int pool_build(struct bench_thread *t) {
    const struct bench_config *cfg = t->cfg;
    size_t hmax = head_max(cfg);
    size_t bytes_cap = POOL_BYTES_MAX < cfg->pool * hmax ? POOL_BYTES_MAX : cfg->pool * hmax;
    if (cfg->pool == 0)
        return 0;
    if (bytes_cap < hmax)
        bytes_cap = hmax;
    t->pool_buf = malloc(bytes_cap);
    t->pool = malloc(cfg->pool * sizeof(*t->pool));
    if (!t->pool_buf || !t->pool)
        return -1;
    size_t off = 0;
    while (t->npool < cfg->pool && bytes_cap - off >= hmax) {
        struct pool_req *pr = &t->pool[t->npool];
        size_t n = gen_request(t, t->pool_buf + off, -1, pr);
        if (n == 0)
            return -1;
        pr->off = (uint32_t)off;
        off += n;
        t->npool++;
    }
    return 0;
}

/* Takes the next request (from the pool or drawn now), appends it to wbuf, queues it. */
static bool issue_one(struct bench_thread *t, struct bconn *c, uint64_t now) {
    const struct bench_config *cfg = t->cfg;
    const struct bench_proto *pp = cfg->proto;
    struct pool_req pr;
    if (t->phase == BENCH_PHASE_RUN && t->npool > 0) {
        pr = t->pool[t->pool_pos];
        if (++t->pool_pos == t->npool)
            t->pool_pos = 0;
        if (!wbuf_room(c, pr.len + (size_t)pr.vlen + pp->set_trailer_len))
            return false;
        memcpy(c->wbuf + c->wlen, t->pool_buf + pr.off, pr.len);
    } else {
        int64_t key = t->phase == BENCH_PHASE_PRELOAD ? (int64_t)t->next_key++ : -1;
        if (!wbuf_room(c, head_max(cfg) + (size_t)cfg->wl.vmax + pp->set_trailer_len))
            return false;
        if (gen_request(t, c->wbuf + c->wlen, key, &pr) == 0)
            return false;
    }
    c->wlen += pr.len;
    if (pr.op == BENCH_SET) {
        memcpy(c->wbuf + c->wlen, t->sh->value, pr.vlen);
        memcpy(c->wbuf + c->wlen + pr.vlen, pp->set_trailer, pp->set_trailer_len);
        c->wlen += pr.vlen + pp->set_trailer_len;
    }
    if (t->phase == BENCH_PHASE_RUN)
        t->issued++;
    uint32_t slot = c->head + c->count;
    if (slot >= c->cap)
        slot -= c->cap;
    struct bench_req *rq = &c->ring[slot];
    rq->op = pr.op;
    rq->nkeys = pr.nkeys;
    rq->sent_ns = now;
    c->count++;
    t->inflight++;
    return true;
}

/* Writes what wbuf holds; waits for EPOLLOUT only when the socket is full. */
static void conn_flush(struct bench_thread *t, struct bconn *c) {
    while (c->woff < c->wlen) {
        ssize_t n = c->tls ? bench_tls_write(c->tls, c->wbuf + c->woff, c->wlen - c->woff)
                           : write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
        if (n > 0) {
            c->woff += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->want_write) {
                c->want_write = true;
                evloop_mod(t->loop, c->fd, EV_READ | EV_WRITE, c);
            }
            return;
        }
        conn_kill(t, c, n < 0 ? strerror(errno) : "write returned 0");
        return;
    }
    c->woff = c->wlen = 0;
    if (c->want_write) {
        c->want_write = false;
        evloop_mod(t->loop, c->fd, EV_READ, c);
    }
}

static bool open_loop(const struct bench_thread *t) {
    return t->phase == BENCH_PHASE_RUN && t->interval_ns > 0;
}

static void ur_queue(struct bench_thread *t, struct bconn *c);

/* Sends what wbuf holds: now (epoll), or with the turn's other sends (io_uring). */
static void conn_send(struct bench_thread *t, struct bconn *c) {
    if (t->ur != NULL)
        ur_queue(t, c);
    else
        conn_flush(t, c);
}

/* May c take new requests (nothing of wbuf in the kernel's hands, socket not full)? */
static bool conn_open_for_more(const struct bconn *c) {
    return !c->dead && !c->want_write && !c->ur_send;
}

static void conn_fill(struct bench_thread *t, struct bconn *c, uint64_t now) {
    uint32_t depth = t->phase == BENCH_PHASE_PRELOAD ? t->cfg->preload_depth : t->cfg->depth;
    if (!conn_open_for_more(c) || open_loop(t))
        return;
    while (c->count < depth && may_issue(t)) {
        if (!issue_one(t, c, now)) {
            conn_kill(t, c, "request does not fit (out of memory?)");
            return;
        }
    }
    conn_send(t, c);
}

/*
 * Open loop: sends every request that is due, each on the next connection
 * with room.  When every connection is full the schedule waits, and what
 * is sent late still counts its latency from when it was due.
 */
static void rate_issue(struct bench_thread *t, uint64_t now) {
    while (t->next_ns <= now && may_issue(t)) {
        struct bconn *c = NULL;
        for (unsigned tries = 0; tries < t->nconns && c == NULL; tries++) {
            struct bconn *x = &t->conns[t->rr];
            if (++t->rr == t->nconns)
                t->rr = 0;
            if (conn_open_for_more(x) && x->count < t->cfg->depth)
                c = x;
        }
        if (c == NULL)
            return;
        if (!issue_one(t, c, t->next_ns)) {
            conn_kill(t, c, "request does not fit (out of memory?)");
            return;
        }
        t->next_ns += t->interval_ns;
        conn_send(t, c);
    }
}

/* ---------------------------------------------------------------------- */
/* Replies in                                                               */
/* ---------------------------------------------------------------------- */

static void complete(struct bench_thread *t, struct bconn *c, const struct bench_reply *r,
                     uint64_t now) {
    const struct bench_req *rq = &c->ring[c->head];
    histogram_record(t->hwin, now - rq->sent_ns);
    t->win.reqs++;
    if (rq->op == BENCH_GET) {
        t->win.gets++;
        t->win.keys += rq->nkeys;
        t->win.hits += r->hits;
    } else {
        t->win.sets++;
    }
    if (r->error)
        t->win.errors++;
    if (++c->head == c->cap)
        c->head = 0;
    c->count--;
    t->inflight--;
}

/* Room for at least n more bytes in rbuf. */
static bool rbuf_room(struct bench_thread *t, struct bconn *c, size_t n) {
    if (c->rcap - c->rlen >= n)
        return true;
    size_t cap = c->rcap * 2;
    while (cap - c->rlen < n)
        cap *= 2;
    char *p = realloc(c->rbuf, cap);
    if (p == NULL) {
        conn_kill(t, c, "out of memory");
        return false;
    }
    c->rbuf = p;
    c->rcap = cap;
    return true;
}

static unsigned conn_parse(struct bench_thread *t, struct bconn *c, uint64_t now);

/* Returns the number of replies completed. */
static unsigned conn_read(struct bench_thread *t, struct bconn *c, uint64_t now) {
    if (!rbuf_room(t, c, 4096))
        return 0;
    ssize_t n;
    if (c->tls != NULL) {           /* every record in hand: the socket will not say so again */
        size_t got = 0;
        while ((n = bench_tls_read(c->tls, c->rbuf + c->rlen, c->rcap - c->rlen)) > 0) {
            c->rlen += (size_t)n;
            got += (size_t)n;
            if (!rbuf_room(t, c, 4096))
                return 0;
        }
        if (got > 0)
            return conn_parse(t, c, now);
    } else {
        n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
    }
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        conn_kill(t, c, n == 0 ? "closed by the server" : strerror(errno));
        return 0;
    }
    c->rlen += (size_t)n;
    return conn_parse(t, c, now);
}

/* Completes every whole reply in rbuf; returns how many. */
static unsigned conn_parse(struct bench_thread *t, struct bconn *c, uint64_t now) {
    size_t off = 0;
    unsigned done = 0;
    while (c->count > 0) {
        struct bench_reply r;
        size_t used = 0, need = 0;
        enum mc_parse rc = t->cfg->proto->parse_reply(&c->ring[c->head], c->rbuf + off,
                                                      c->rlen - off, &used, &r, &need);
        if (rc == MC_PARSE_NEED_MORE) {
            /* A reply bigger than the buffer: grow it to fit (plus room to read). */
            if (need + 4096 > c->rcap && !rbuf_room(t, c, need + 4096 - c->rlen))
                return done;
            break;
        }
        if (rc != MC_PARSE_OK) {
            conn_kill(t, c, "unparsable reply");
            return done;
        }
        complete(t, c, &r, now);
        off += used;
        done++;
    }
    if (c->count == 0 && off < c->rlen) {
        conn_kill(t, c, "bytes with no request to answer");
        return done;
    }
    if (off > 0) {
        memmove(c->rbuf, c->rbuf + off, c->rlen - off);
        c->rlen -= off;
    }
    return done;
}

/* ---------------------------------------------------------------------- */
/* io_uring (--io uring)                                                    */
/* ---------------------------------------------------------------------- */

/*
 * A phase's ring, made on the phase's thread (the ring has one submitter)
 * and taken down at its end, when nothing is in flight; the connections
 * stay.  Receives are multishot into UR_BUFS provided buffers; a reply is
 * copied from its buffer into the connection's rbuf and parsed there as on
 * epoll, and the buffer goes back at once.
 */
#define UR_ENTRIES 1024
#define UR_BUFS 256
#define UR_BUF 16384

enum { UR_RECV = 1, UR_SEND = 2, UR_CANCEL = 3 };

struct bench_uring {
    struct io_uring ring;
    struct bufring bufs;
    struct bconn **sendq;           /* connections with requests to send this turn */
    unsigned nsendq;
    unsigned inflight;              /* operations the kernel has */
    bool stopping;                  /* the phase is over: nothing new */
};

static struct io_uring_sqe *ur_sqe(struct bench_uring *u) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
    if (sqe == NULL) {
        io_uring_submit(&u->ring);
        sqe = io_uring_get_sqe(&u->ring);
    }
    return sqe;
}

static void ur_arm(struct bench_thread *t, struct bconn *c) {
    if (t->ur->stopping)
        return;
    struct io_uring_sqe *sqe = ur_sqe(t->ur);
    if (sqe == NULL) {
        conn_kill(t, c, "io_uring: no submission slot");
        return;
    }
    io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = 0;
    io_uring_sqe_set_data64(sqe, (uintptr_t)c | UR_RECV);
    c->ur_recv = true;
    t->ur->inflight++;
}

static void ur_cancel(struct bench_thread *t, struct bconn *c) {
    struct io_uring_sqe *sqe = c->ur_recv ? ur_sqe(t->ur) : NULL;
    if (sqe == NULL)
        return;
    io_uring_prep_cancel64(sqe, (uintptr_t)c | UR_RECV, 0);
    io_uring_sqe_set_data64(sqe, UR_CANCEL);
    t->ur->inflight++;
}

static void ur_queue(struct bench_thread *t, struct bconn *c) {
    if (c->ur_queued || c->ur_send || c->woff == c->wlen || c->dead)
        return;
    c->ur_queued = true;
    t->ur->sendq[t->ur->nsendq++] = c;
}

static void ur_send_queued(struct bench_thread *t) {
    struct bench_uring *u = t->ur;
    for (unsigned i = 0; i < u->nsendq; i++) {
        struct bconn *c = u->sendq[i];
        c->ur_queued = false;
        if (c->dead)
            continue;
        struct io_uring_sqe *sqe = ur_sqe(u);
        if (sqe == NULL) {
            conn_kill(t, c, "io_uring: no submission slot");
            continue;
        }
        io_uring_prep_send(sqe, c->fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
        io_uring_sqe_set_data64(sqe, (uintptr_t)c | UR_SEND);
        c->ur_send = true;
        u->inflight++;
    }
    u->nsendq = 0;
}

/* One completion; returns the replies it completed. */
static unsigned ur_complete(struct bench_thread *t, uint64_t data, int res, unsigned flags,
                            uint64_t now) {
    struct bench_uring *u = t->ur;
    struct bconn *c = (struct bconn *)(uintptr_t)(data & ~(uint64_t)3);
    bool more = (flags & IORING_CQE_F_MORE) != 0;
    if (!more)
        u->inflight--;
    unsigned done = 0;
    switch (data & 3) {
    case UR_RECV: {
        if (!more)
            c->ur_recv = false;
        if (flags & IORING_CQE_F_BUFFER) {
            char *b = bufring_at(&u->bufs, flags);
            if (res > 0 && !c->dead && rbuf_room(t, c, (size_t)res)) {
                memcpy(c->rbuf + c->rlen, b, (size_t)res);
                c->rlen += (size_t)res;
                done = conn_parse(t, c, now);
            }
            bufring_put(&u->bufs, b);
        }
        if (!c->dead && res == 0)
            conn_kill(t, c, "closed by the server");
        else if (!c->dead && res < 0 && res != -ENOBUFS && res != -ECANCELED)
            conn_kill(t, c, strerror(-res));
        if (!c->dead && !c->ur_recv)
            ur_arm(t, c);
        if (!c->dead && !u->stopping)
            conn_fill(t, c, now);
        break;
    }
    case UR_SEND:
        c->ur_send = false;
        if (c->dead)
            break;
        if (res < 0) {
            conn_kill(t, c, strerror(-res));
            break;
        }
        c->woff += (size_t)res;
        if (c->woff < c->wlen)
            ur_queue(t, c);
        else
            c->woff = c->wlen = 0;
        if (!u->stopping)
            conn_fill(t, c, now);
        break;
    default:
        break;
    }
    return done;
}

/* Reaps what has completed; returns the replies. */
static unsigned ur_reap(struct bench_thread *t, uint64_t now) {
    struct uring_done got[64];
    unsigned n, done = 0;
    while ((n = uring_take(&t->ur->ring, got, 64)) > 0)
        for (unsigned i = 0; i < n; i++)
            done += ur_complete(t, got[i].data, got[i].res, got[i].flags, now);
    return done;
}

static void ur_teardown(struct bench_thread *t) {
    struct bench_uring *u = t->ur;
    if (u == NULL)
        return;
    u->stopping = true;
    if (u->ring.ring_fd >= 0) {
        struct io_uring_sqe *sqe = ur_sqe(u);
        if (sqe != NULL) {
            io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL);
            io_uring_sqe_set_data64(sqe, UR_CANCEL);
            u->inflight++;
        }
        for (int tries = 0; u->inflight > 0 && tries < 100; tries++) {
            struct __kernel_timespec ts = {0, 10 * 1000 * 1000};
            struct io_uring_cqe *cqe;
            io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
            ur_reap(t, bench_now_ns());
        }
        io_uring_queue_exit(&u->ring);
    }
    for (unsigned i = 0; i < t->nconns; i++)
        t->conns[i].ur_recv = t->conns[i].ur_send = t->conns[i].ur_queued = false;
    bufring_deinit(&u->bufs);
    free(u->sendq);
    free(u);
    t->ur = NULL;
}

/* The phase's ring, and a receive for every live connection; -1 with t->err. */
static int ur_setup(struct bench_thread *t) {
    struct bench_uring *u = calloc(1, sizeof(*u));
    if (u == NULL) {
        fail(t, "%s", "out of memory");
        return -1;
    }
    t->ur = u;
    u->ring.ring_fd = -1;
    struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
    int rc = io_uring_queue_init_params(UR_ENTRIES, &u->ring, &p);
    if (rc < 0) {
        u->ring.ring_fd = -1;
        fail(t, "io_uring_setup: %s", strerror(-rc));
        return -1;
    }
    u->sendq = calloc(t->nconns ? t->nconns : 1, sizeof(*u->sendq));
    if (u->sendq == NULL) {
        fail(t, "%s", "out of memory");
        return -1;
    }
    rc = bufring_init(&u->bufs, &u->ring, UR_BUFS, UR_BUF, 0);
    if (rc < 0) {
        fail(t, "io_uring provided buffers: %s", strerror(-rc));
        return -1;
    }
    for (unsigned i = 0; i < t->nconns; i++)
        if (!t->conns[i].dead)
            ur_arm(t, &t->conns[i]);
    return 0;
}

/* One turn: sends out, replies in.  Returns the replies completed; *waited the ns in the kernel. */
static unsigned ur_turn(struct bench_thread *t, int wait_ms, uint64_t *now, uint64_t *waited) {
    ur_send_queued(t);
    uint64_t before = bench_now_ns();
    if (wait_ms == 0) {
        io_uring_submit_and_get_events(&t->ur->ring);
    } else {
        struct __kernel_timespec ts = {wait_ms / 1000, (long long)(wait_ms % 1000) * 1000000};
        struct io_uring_cqe *cqe;
        io_uring_submit_and_wait_timeout(&t->ur->ring, &cqe, 1, &ts, NULL);
    }
    *now = bench_now_ns();
    *waited = *now - before;
    return ur_reap(t, *now);
}

/* ---------------------------------------------------------------------- */
/* The loop                                                                 */
/* ---------------------------------------------------------------------- */

void *bench_thread_run(void *arg) {
    struct bench_thread *t = arg;
    const struct bench_config *cfg = t->cfg;
    struct bench_shared *sh = t->sh;
    uint64_t stall_ns = (uint64_t)(cfg->stall * 1e9);
    struct ev_fired ev[256];

    stats_reset(t);
    histogram_init(t->hwin);
    bool ready = !cfg->uring || ur_setup(t) == 0;
    pthread_barrier_wait(&sh->start);
    if (!ready) {
        ur_teardown(t);
        atomic_fetch_add(&sh->done, 1);
        return NULL;
    }
    uint64_t now = bench_now_ns();
    bool warm = t->phase == BENCH_PHASE_RUN && sh->warm_end_ns > now;
    uint64_t next_fold = now + FOLD_NS, last_reply = now;
    t->t_start = t->t_end = now;
    t->wait_ns = 0;
    t->interval_ns = cfg->rate > 0 ? (uint64_t)(1e9 * cfg->threads / cfg->rate) : 0;
    if (t->interval_ns == 0 && cfg->rate > 0)
        t->interval_ns = 1;
    t->next_ns = now;
    for (unsigned i = 0; i < t->nconns; i++)
        conn_fill(t, &t->conns[i], now);

    while (t->live > 0) {
        if (t->inflight == 0 && !may_issue(t))
            break;
        if (open_loop(t))
            rate_issue(t, bench_now_ns());
        int wait_ms = cfg->spin ? 0 : WAIT_MS;
        if (!cfg->spin && open_loop(t)) {
            uint64_t t0 = bench_now_ns();
            wait_ms = t->next_ns <= t0 ? 0 : (int)((t->next_ns - t0) / 1000000);
            if (wait_ms > WAIT_MS)
                wait_ms = WAIT_MS;
        }
        if (t->ur != NULL) {
            uint64_t waited = 0;
            if (ur_turn(t, wait_ms, &now, &waited) > 0) {
                last_reply = now;
                t->t_end = now;
            }
            t->wait_ns += waited;
        }
        uint64_t before = bench_now_ns();
        int n = t->ur != NULL ? 0 : evloop_wait(t->loop, ev, 256, wait_ms);
        if (t->ur == NULL) {
            now = bench_now_ns();
            t->wait_ns += now - before;
        }
        for (int i = 0; i < n; i++) {
            struct bconn *c = ev[i].ptr;
            if (c == NULL || c->dead)
                continue;
            if (ev[i].events & (EV_READ | EV_ERROR)) {
                if (conn_read(t, c, now) > 0) {
                    last_reply = now;
                    t->t_end = now;
                }
            }
            if (!c->dead && c->want_write && (ev[i].events & EV_WRITE))
                conn_flush(t, c);
            conn_fill(t, c, now);
        }
        if (warm && now >= sh->warm_end_ns) {
            warm = false;
            stats_reset(t);
            t->t_start = t->t_end = now;
            t->wait_ns = 0;
        }
        if (now >= next_fold) {
            fold(t);
            next_fold = now + FOLD_NS;
        }
        if (t->inflight > 0 && now - last_reply > stall_ns) {
            fail(t, "%s", "no reply within the stall timeout");
            break;
        }
    }
    fold(t);
    ur_teardown(t);
    atomic_fetch_add(&sh->done, 1);
    return NULL;
}
