/*
 * worker.c -- worker threads and the life of a connection.
 *
 * Each worker runs one event loop.  A stream connection is driven like this:
 *
 *   readable --> read() once into rbuf --> ops->process(): the application
 *   runs every complete request it may, and sends all their replies with
 *        ^                              one writev() (net_conn_flush)
 *        |   socket full: stop reading, wait         |
 *        +---- for EV_WRITE, then process again <----+ partial write
 *
 * The loop is level-triggered, so one read per wake-up is enough and no
 * read is wasted on EAGAIN.  A connection that still has requests to run
 * after its turn goes on the worker's ready list (net_conn_yield()) and is
 * resumed after the other connections had theirs.
 */
#include "net/worker.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sys.h"
#include "net/tls.h"
#include "net/uring.h"

#define RBUF_INIT NET_RBUF_SIZE
#define RBUF_MAX (64u << 20)    /* a get line with very many keys may grow this far */
#define RBUF_POOL 64            /* free read buffers a worker keeps */
#define OUT_POOL 64             /* free reply scratch blocks a worker keeps */

struct net_pending {
    struct net_pending *next;
    int fd, listen_fd;
    bool tls;
    struct sockaddr_storage peer;
    socklen_t peerlen;
};

static void conn_event(struct net_handler *h, int events);
static struct net_handler stream_handler = {conn_event};

/*
 * Read buffers are lent to a connection only while it has unparsed bytes:
 * between requests it holds none, so an idle connection costs its struct
 * alone.  The worker keeps a few free buffers of the usual size so that
 * lending one is a pointer move, not a malloc.  Under a server's limit
 * (net_worker_set_budget(), memcached's read_buf_mem_limit) it keeps none,
 * so that the budget is asked only where a buffer is malloc()ed, off the
 * path of a worker without one; a lend past it fails as a malloc would:
 * read_buf_oom, and the connection is closed.
 */
static char *rbuf_pool_get(struct net_worker *w) {
    if (w->nrbuf_free > 0) {        /* never under a budget: rbuf_keep is 0 there */
        char *b = w->rbuf_free[--w->nrbuf_free];
        atomic_store_explicit(&w->rbufs_idle, (uint64_t)w->nrbuf_free, memory_order_relaxed);
        return b;
    }
    if (!out_budget_lend(&w->outpool.budget)) {
        NET_STAT_INC(w->st->read_buf_oom);      /* the server's limit: memcached's words */
        return NULL;
    }
    char *b = malloc(RBUF_INIT);
    if (b == NULL) {
        NET_STAT_INC(w->st->read_buf_oom);
        out_budget_return(&w->outpool.budget);
    } else {
        NET_STAT_INC(w->rbufs);
    }
    return b;
}

/* Frees a connection's read buffer (of any size: grown ones too). */
static void rbuf_drop(struct net_worker *w, char *b) {
    free(b);
    NET_STAT_ADD(w->rbufs, -1);
    out_budget_return(&w->outpool.budget);
}

static void rbuf_pool_put(struct net_worker *w, char *b) {
    if (w->nrbuf_free < w->rbuf_keep) {
        w->rbuf_free[w->nrbuf_free++] = b;
        atomic_store_explicit(&w->rbufs_idle, (uint64_t)w->nrbuf_free, memory_order_relaxed);
    } else {
        rbuf_drop(w, b);
    }
}

/* Gives an empty read buffer back (a grown one is freed). */
void net_rbuf_release(struct net_conn *c) {
    if (c->rbuf == NULL || c->rstart != c->rend)
        return;
    if (c->rsize == RBUF_INIT)
        rbuf_pool_put(c->w, c->rbuf);
    else
        rbuf_drop(c->w, c->rbuf);
    c->rbuf = NULL;
    c->rsize = c->rstart = c->rend = 0;
    c->rbuf_moved = true;
}

/* Doubles rbuf until n more bytes fit after rend (RBUF_MAX at most). */
static bool rbuf_grow(struct net_conn *c, size_t n) {
    while (c->rsize - c->rend < n) {
        if (c->rsize >= RBUF_MAX)
            return false;
        char *b = realloc(c->rbuf, c->rsize * 2);
        if (b == NULL)
            return false;
        c->rbuf = b;
        c->rsize *= 2;
    }
    return true;
}

/* Makes room in rbuf for more input: compacts, and grows a buffer holding one long line. */
static bool rbuf_make_room(struct net_conn *c) {
    c->rbuf_moved = true;
    if (c->rbuf == NULL) {
        c->rbuf = rbuf_pool_get(c->w);
        if (c->rbuf == NULL)
            return false;
        c->rsize = RBUF_INIT;
        c->rstart = c->rend = 0;
        return true;
    }
    if (c->rstart == c->rend) {
        c->rstart = c->rend = 0;
    } else if (c->rstart > 0) {
        memmove(c->rbuf, c->rbuf + c->rstart, c->rend - c->rstart);
        c->rend -= c->rstart;
        c->rstart = 0;
    }
    return rbuf_grow(c, 1);
}

bool net_rbuf_room(struct net_conn *c, size_t n) {
    if (c->rbuf != NULL && c->rsize - c->rend >= n)
        return true;
    return rbuf_make_room(c) && rbuf_grow(c, n);
}

struct net_conn *net_conn_open(struct net_worker *w, int fd, int listen_fd,
                               const struct sockaddr_storage *peer, socklen_t peerlen,
                               struct net_handler *h, bool tls) {
    struct net_conn *c = calloc(1, w->srv->ops->conn_size);
    if (c == NULL)
        return NULL;
    if (tls) {
        c->fd = fd;
        c->w = w;
        if (net_tls_conn_start(c) < 0) {
            free(c);
            return NULL;
        }
    }
    c->h = h != NULL ? *h : stream_handler;
    c->fd = fd;
    c->w = w;
    c->listen_fd = listen_fd;
    if (peer != NULL && peerlen <= sizeof(c->peer)) {
        memcpy(&c->peer, peer, peerlen);
        c->peerlen = peerlen;
    }
    out_init(&c->out, &w->outpool);
    c->ring = w->ring != NULL && h == NULL && !tls;     /* TLS: on epoll (tls.h) */
    if (!c->ring && evloop_add(w->loop, c->fd, EV_READ, &c->h) < 0) {
        net_tls_conn_end(c, false);
        free(c);
        return NULL;
    }
    pthread_mutex_lock(&w->conns_lock);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    pthread_mutex_unlock(&w->conns_lock);
    atomic_fetch_add(&w->srv->conn_structs, 1);
    if (c->ring)
        net_uring_want_input(c);        /* its first receive */
    return c;
}

void net_conn_unlink(struct net_conn *c) {
    struct net_worker *w = c->w;
    pthread_mutex_lock(&w->conns_lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    pthread_mutex_unlock(&w->conns_lock);
}

void net_conn_free(struct net_conn *c) {
    net_conn_unlink(c);
    net_conn_destroy(c);
}

void net_conn_destroy(struct net_conn *c) {
    struct net_worker *w = c->w;
    net_tls_conn_end(c, false);
    w->srv->ops->release(c);
    out_deinit(&c->out);
    if (c->rbuf != NULL)
        rbuf_drop(w, c->rbuf);
    free(c);
    atomic_fetch_sub(&w->srv->conn_structs, 1);
}

void net_conn_close(struct net_conn *c) {
    struct net_worker *w = c->w;
    if (w->srv->ops->closing != NULL)
        w->srv->ops->closing(c);
    atomic_fetch_sub(&w->srv->curr_conns, 1);
    /* Unlink from the ready list if it is there. */
    if (c->yielded) {
        struct net_conn **pp = &w->ready;
        while (*pp && *pp != c)
            pp = &(*pp)->ready_next;
        if (*pp)
            *pp = c->ready_next;
        c->yielded = false;
    }
    if (c->ring) {
        net_uring_close(c);
        return;
    }
    evloop_del(w->loop, c->fd);
    net_tls_conn_end(c, true);
    close(c->fd);
    net_conn_free(c);
}

/* What c waits for: its output to drain, or input unless it is paused. */
static void conn_interest(struct net_conn *c) {
    evloop_mod(c->w->loop, c->fd, c->want_write ? EV_WRITE : c->paused ? 0 : EV_READ, &c->h);
}

static void conn_want(struct net_conn *c, bool write) {
    if (c->want_write == write)
        return;
    c->want_write = write;
    conn_interest(c);
}

/*
 * A TLS connection whose session holds a record not yet taken (tls_more)
 * goes on the ready list once it may read again: the socket will not say
 * so.  (Where it could not read, after_round passed it over.)
 */
static void tls_kick(struct net_conn *c) {
    if (c->tls_more && !c->yielded && !c->paused && !c->want_write) {
        c->yielded = true;
        c->ready_next = c->w->ready;
        c->w->ready = c;
    }
}

void net_conn_pause(struct net_conn *c, bool pause) {
    if (c->paused == pause)
        return;
    c->paused = pause;
    if (!pause)
        tls_kick(c);
    if (c->ring) {
        if (pause)
            net_uring_stop_input(c);
        else
            net_uring_want_input(c);
    } else if (!c->want_write) {
        conn_interest(c);
    }
}

/*
 * A flush on a plain connection (tls false, the function inlined as it
 * was before TLS) or on a TLS one (tls true: flush_tls(), out of line),
 * so that the plain path pays one predictable branch for TLS.
 */
static inline __attribute__((always_inline)) bool flush_as(struct net_conn *c, bool tls) {
    size_t n = 0;
    int r = tls ? net_tls_flush(c, &n) : out_flush(&c->out, c->fd, &n);
    NET_STAT_ADD(c->w->st->bytes_written, n);
    if (r < 0) {
        net_conn_close(c);
        return false;
    }
    if (r == 0) {
        conn_want(c, true);
        return true;
    }
    if (c->close_after_write) {
        net_conn_close(c);
        return false;
    }
    conn_want(c, false);
    return true;
}

__attribute__((noinline)) static bool flush_tls(struct net_conn *c) {
    return flush_as(c, true);
}

bool net_conn_flush(struct net_conn *c) {
    if (c->ring)
        return net_uring_flush(c);
    if (__builtin_expect(c->tls != NULL, 0))
        return flush_tls(c);
    return flush_as(c, false);
}

bool net_conn_flush_wait(struct net_conn *c) {
    if (!net_conn_flush(c))
        return false;
    if (!out_empty(&c->out))
        c->want_write = true;
    return true;
}

void net_conn_yield(struct net_conn *c) {
    NET_STAT_INC(c->w->st->conn_yields);
    if (!c->yielded) {
        c->yielded = true;
        c->ready_next = c->w->ready;
        c->w->ready = c;
    }
}

/*
 * Reads once into rbuf (or straight to where it belongs) and runs what
 * came: on a plain connection (tls false, inlined into conn_event() as it
 * was before TLS) or a TLS one (tls_on_readable(), out of line).
 */
static inline __attribute__((always_inline)) void on_readable(struct net_conn *c, bool tls) {
    const struct net_conn_ops *ops = c->w->srv->ops;
    ssize_t r = NET_READ_RBUF;
    if (!tls && c->read_direct && c->rstart == c->rend)
        r = ops->read_direct(c);
    if (r == NET_READ_RBUF) {
        if (!rbuf_make_room(c)) {
            net_conn_close(c);
            return;
        }
        r = tls && !c->tls_raw ? net_tls_read(c, c->rbuf + c->rend, c->rsize - c->rend)
                               : sys_read(c->fd, c->rbuf + c->rend, c->rsize - c->rend);
        if (r > 0)
            c->rend += (size_t)r;
    }
    if (r == 0) {
        c->close_normal = true;
        net_conn_close(c);
        return;
    }
    if (r < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            net_conn_close(c);
            return;
        }
        if (tls && c->tls_rwant_write)
            conn_want(c, true);     /* the handshake writes first: read again once it can */
        if (tls)
            net_rbuf_release(c);    /* a record's part is OpenSSL's to keep, not rbuf's */
        return;
    }
    NET_STAT_ADD(c->w->st->bytes_read, (uint64_t)r);
    if (!ops->process(c))
        return;
    net_rbuf_release(c);
    if (tls && c->tls_more && !c->yielded) {   /* a record's rest is in hand, not in the socket */
        c->yielded = true;
        c->ready_next = c->w->ready;
        c->w->ready = c;
    }
}

__attribute__((noinline)) static void tls_on_readable(struct net_conn *c) {
    on_readable(c, true);
}

static void conn_on_readable(struct net_conn *c) {
    if (__builtin_expect(c->tls != NULL, 0))
        tls_on_readable(c);
    else
        on_readable(c, false);
}

/* A stream connection's event: output drained, or input to read. */
static void conn_event(struct net_handler *h, int events) {
    struct net_conn *c = (struct net_conn *)h;
    if (c->paused && !c->want_write) {
        /* interest in nothing: only an error or hang-up gets here, and would again */
        if (events & EV_ERROR)
            net_conn_close(c);
        return;
    }
    if (__builtin_expect(c->tls_rwant_write, 0)) {  /* the handshake could write: read on */
        c->tls_rwant_write = false;
        conn_want(c, false);
        tls_on_readable(c);
        return;
    }
    if (c->want_write) {
        if (!net_conn_flush(c))
            return;
        if (c->want_write)
            return;
        /* Drained: go on with what was parsed while we waited. */
        if (c->w->srv->ops->process(c)) {
            net_rbuf_release(c);
            tls_kick(c);
        }
        return;
    }
    conn_on_readable(c);
}

/* Takes the descriptors the acceptor handed over. */
static void take_pending(struct net_handler *h, int events) {
    (void)events;
    struct net_worker *w = (struct net_worker *)((char *)h - offsetof(struct net_worker, wake));
    pthread_mutex_lock(&w->queue_lock);
    struct net_pending *p = w->queue;
    w->queue = NULL;
    pthread_mutex_unlock(&w->queue_lock);
    while (p != NULL) {
        struct net_pending *next = p->next;
        struct net_conn *c = net_conn_open(w, p->fd, p->listen_fd, &p->peer, p->peerlen, NULL,
                                           p->tls);
        if (c == NULL) {
            close(p->fd);
            atomic_fetch_sub(&w->srv->curr_conns, 1);
        } else if (w->srv->ops->opened != NULL) {
            w->srv->ops->opened(c);
        }
        free(p);
        p = next;
    }
}

void net_worker_close_idle(struct net_worker *w, uint32_t now, uint32_t limit) {
    struct net_conn *c = w->conns, *next;
    for (; c != NULL; c = next) {
        next = c->next;
        uint32_t last = atomic_load_explicit(&c->last_active, memory_order_relaxed);
        if (c->h.on_event != conn_event || c->want_write || c->yielded || !out_empty(&c->out) ||
            atomic_load_explicit(&c->state, memory_order_relaxed) != NET_CONN_IDLE ||
            now - last <= limit)
            continue;
        NET_STAT_INC(w->st->idle_kicks);
        c->close_normal = true;
        net_conn_close(c);
    }
}

int net_worker_watch(struct net_worker *w, int fd, int events, struct net_handler *h) {
    return evloop_add(w->loop, fd, events, h);
}

/* Runs the handlers of what epoll reports within timeout_ms. */
static void epoll_round(struct net_worker *w, int timeout_ms) {
    struct ev_fired ev[256];
    int n = evloop_wait(w->loop, ev, 256, timeout_ms);
    for (int i = 0; i < n; i++) {
        struct net_handler *h = ev[i].ptr != NULL ? ev[i].ptr : &w->wake;
        h->on_event(h, ev[i].events);
    }
}

void net_worker_epoll_round(struct net_worker *w) {
    epoll_round(w, 0);
}

void net_worker_after_round(struct net_worker *w) {
    const struct net_conn_ops *ops = w->srv->ops;
    if (w->tick != NULL)
        w->tick(w);
    /* Resume connections that yielded; they go to the back of the line. */
    struct net_conn *r = w->ready;
    w->ready = NULL;
    while (r != NULL) {
        struct net_conn *next = r->ready_next;
        r->yielded = false;
        if (r->tls_more && !r->want_write && !r->paused) {
            tls_on_readable(r);     /* reads the record's rest, then runs what came */
            r = next;
            continue;
        }
        if (!r->want_write) {
            if (!ops->process(r)) {
                r = next;
                continue;
            }
            net_rbuf_release(r);
        }
        if (r->ring) {
            r->ring_flags &= ~NET_RING_STARVED;     /* buffers came back meanwhile */
            net_uring_want_input(r);
        }
        r = next;
    }
}

static void *worker_main(void *arg) {
    struct net_worker *w = arg;
    bool ring = w->srv->io == NET_IO_URING && net_uring_init(w) == 0;
    if (w->started != NULL)
        w->started(w);
    atomic_fetch_add(&w->srv->started, 1);
    if (ring) {
        net_uring_run(w);
        return NULL;
    }
    while (!atomic_load(&w->srv->stop)) {
        epoll_round(w, w->ready ? 0 : w->wait_ms != NULL ? w->wait_ms(w) : 1000);
        net_worker_after_round(w);
    }
    return NULL;
}

void net_worker_hand_fd(struct net_worker *w, int fd, int listen_fd,
                        const struct sockaddr_storage *peer, socklen_t peerlen, bool tls) {
    struct net_pending *p = malloc(sizeof(*p));
    if (p == NULL) {
        close(fd);
        atomic_fetch_sub(&w->srv->curr_conns, 1);
        return;
    }
    p->fd = fd;
    p->listen_fd = listen_fd;
    p->tls = tls;
    p->peer = *peer;
    p->peerlen = peerlen;
    pthread_mutex_lock(&w->queue_lock);
    p->next = w->queue;
    w->queue = p;
    pthread_mutex_unlock(&w->queue_lock);
    evloop_wake(w->loop);
}

int net_worker_init(struct net_worker *w, struct net_server *s, int id, struct net_counters *st,
                    void (*release)(void *ctx, void *ref), void *release_ctx) {
    w->srv = s;
    w->st = st;
    w->id = id;
    w->wake.on_event = take_pending;
    w->loop = evloop_create();
    w->outpool.max = OUT_POOL;
    w->rbuf_keep = RBUF_POOL;
    w->outpool.release = release;
    w->outpool.release_ctx = release_ctx;
    pthread_mutex_init(&w->queue_lock, NULL);
    pthread_mutex_init(&w->conns_lock, NULL);
    return w->loop != NULL ? 0 : -1;
}

void net_worker_set_budget(struct net_worker *w, unsigned units) {
    w->outpool.budget.units = units;
    w->rbuf_keep = units != 0 ? 0 : RBUF_POOL;
}

int net_workers_start(struct net_server *s) {
    for (int i = 0; i < s->nworkers; i++) {
        if (pthread_create(&s->workers[i]->thread, NULL, worker_main, s->workers[i]) != 0)
            return -1;
    }
    /* every worker's started callback done (its UDP sockets in its loop) before the
       server goes on to accept: what it reports from the first client on has them all */
    while (atomic_load(&s->started) < s->nworkers)
        sched_yield();
    return 0;
}

void net_workers_stop(struct net_server *s) {
    for (int i = 0; i < s->nworkers; i++)
        evloop_wake(s->workers[i]->loop);
    for (int i = 0; i < s->nworkers; i++) {
        struct net_worker *w = s->workers[i];
        pthread_join(w->thread, NULL);
        while (w->conns != NULL) {
            struct net_conn *c = w->conns;
            close(c->fd);
            net_conn_free(c);
        }
        struct net_pending *p = w->queue;
        while (p != NULL) {
            struct net_pending *n = p->next;
            close(p->fd);
            free(p);
            p = n;
        }
        w->queue = NULL;
    }
}

void net_worker_deinit(struct net_worker *w) {
    net_uring_deinit(w);
    net_tls_worker_free(w);
    evloop_destroy(&w->loop);
    while (w->nrbuf_free > 0)
        free(w->rbuf_free[--w->nrbuf_free]);
    out_pool_drain(&w->outpool);
    pthread_mutex_destroy(&w->queue_lock);
    pthread_mutex_destroy(&w->conns_lock);
}
