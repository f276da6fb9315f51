/*
 * runner.c -- one load thread: an epoll loop over its connections.
 *
 *   epoll_wait --> now = clock --> for each readable connection:
 *        ^           read() once, parse every whole reply (latency =
 *        |           now - sent), then top the connection up to depth
 *        |           and write() all new requests at once
 *        +---------- fold statistics 5 times a second, check stop and stall
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
#include "tools/bench/bench.h"

#define RBUF_INIT 65536
#define WBUF_INIT 16384
#define WAIT_MS 50
#define FOLD_NS 200000000ull      /* fold the window into the totals five times a second */
#define POOL_BYTES_MAX (32u << 20)

static int pool_build(struct bench_thread *t);

struct bconn {
    int fd;
    bool dead, want_write;
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

static void conn_kill(struct bench_thread *t, struct bconn *c, const char *why) {
    if (c->dead)
        return;
    fail(t, "connection lost: %s", why);
    evloop_del(t->loop, c->fd);
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
        ssize_t n = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
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

static void conn_fill(struct bench_thread *t, struct bconn *c, uint64_t now) {
    uint32_t depth = t->phase == BENCH_PHASE_PRELOAD ? t->cfg->preload_depth : t->cfg->depth;
    if (c->dead || c->want_write || open_loop(t))
        return;
    while (c->count < depth && may_issue(t)) {
        if (!issue_one(t, c, now)) {
            conn_kill(t, c, "request does not fit (out of memory?)");
            return;
        }
    }
    conn_flush(t, c);
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
            if (!x->dead && !x->want_write && x->count < t->cfg->depth)
                c = x;
        }
        if (c == NULL)
            return;
        if (!issue_one(t, c, t->next_ns)) {
            conn_kill(t, c, "request does not fit (out of memory?)");
            return;
        }
        t->next_ns += t->interval_ns;
        conn_flush(t, c);
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

/* Returns the number of replies completed. */
static unsigned conn_read(struct bench_thread *t, struct bconn *c, uint64_t now) {
    if (c->rcap - c->rlen < 4096) {
        size_t cap = c->rcap * 2;
        char *p = realloc(c->rbuf, cap);
        if (p == NULL) {
            conn_kill(t, c, "out of memory");
            return 0;
        }
        c->rbuf = p;
        c->rcap = cap;
    }
    ssize_t n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        conn_kill(t, c, n == 0 ? "closed by the server" : strerror(errno));
        return 0;
    }
    c->rlen += (size_t)n;
    size_t off = 0;
    unsigned done = 0;
    while (c->count > 0) {
        struct bench_reply r;
        size_t used = 0, need = 0;
        enum mc_parse rc = t->cfg->proto->parse_reply(&c->ring[c->head], c->rbuf + off,
                                                      c->rlen - off, &used, &r, &need);
        if (rc == MC_PARSE_NEED_MORE) {
            /* A reply bigger than the buffer: grow it to fit (plus room to read). */
            if (need > c->rcap - 4096) {
                size_t cap = c->rcap;
                while (need > cap - 4096)
                    cap *= 2;
                char *p = realloc(c->rbuf, cap);
                if (p == NULL) {
                    conn_kill(t, c, "out of memory");
                    return done;
                }
                c->rbuf = p;
                c->rcap = cap;
            }
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
    pthread_barrier_wait(&sh->start);
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
        uint64_t before = bench_now_ns();
        int n = evloop_wait(t->loop, ev, 256, wait_ms);
        now = bench_now_ns();
        t->wait_ns += now - before;
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
    atomic_fetch_add(&sh->done, 1);
    return NULL;
}
