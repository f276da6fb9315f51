/*
 * uring.c -- the io_uring back end of the network core.
 *
 * At one request in flight per connection, epoll costs two system calls
 * a request (a read and a write), each dearer than the cache work it
 * frames.  Here a worker hands the kernel its receives and sends and
 * reaps what they did, for all its connections at once:
 *
 *   loop turn:  submit queued sends + receives, wait    (one io_uring_enter)
 *               for each completion:
 *                 receive --> ops->process(c) --> output? queue c's send
 *                             (in place, in the ring's buffer)
 *                 send    --> rest of the output? queue it again;
 *                             blocked application? process(c) again
 *               tick, ready list (as epoll)
 *
 * Receives take their buffer from a ring of provided buffers when data
 * arrives (IOSQE_BUFFER_SELECT), so an idle connection holds no buffer,
 * as on epoll.  A connection's input is parsed where the kernel put it;
 * only a request cut at the buffer's end is copied, into the connection's
 * own rbuf (worker.c's pool), and the buffer goes back at once.
 *
 * Order and back-pressure are epoll's: a connection has at most one send
 * in the kernel, and output made meanwhile waits behind it.  Output that
 * waits behind a send still in the kernel at the next turn (the socket
 * was full), or more than OUT_WAIT bytes of it, blocks the connection
 * (want_write): it is not read from or run until its sends drain, then
 * process() resumes it.  Paused connections get no new receive, nor do
 * those that yielded with requests still to run (their input waits in the
 * socket, not in rbuf, until they have had their turn).
 *
 * Descriptors the application watches (UDP sockets, a library's loop),
 * and the acceptor's wake-ups, stay on the worker's epoll set; the ring
 * polls that set's descriptor and runs its handlers when it is readable.
 *
 * A closed connection's receive and send are cancelled; the struct (and
 * the output a send points into) is freed, and its descriptor closed, when
 * both have come back.
 */
#include "net/uring.h"

#include "core/uring.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RING_ENTRIES 1024
#define RING_CQ_ENTRIES 16384
/*
 * Provided receive buffers per worker (a power of 2), each as large as
 * epoll's read buffer, so a receive takes what one read() would (and
 * -R's budget runs out where it does on epoll and in memcached).  Only
 * the pages data lands in are touched: 128 KB of RSS a worker at small
 * requests, 2 MB at most.
 */
#define BUF_COUNT 128           /* unless the server says (net_server.ring_bufs) */
#define BUF_SIZE NET_RBUF_SIZE
#define BUF_GROUP 0
#define OUT_WAIT (256u << 10)   /* output waiting behind a send that blocks the application */
#define MSGS RING_ENTRIES

/* What a completion is for: the low bits of its user_data (pointers are 8-aligned). */
enum { OP_RECV = 1, OP_SEND = 2, OP_POLL = 3, OP_CANCEL = 4, OP_MASK = 7 };

struct net_uring {
    struct io_uring ring;
    struct bufring bufs;        /* the receives' buffers */
    struct net_conn *sendq;     /* connections whose output goes at the end of the turn */
    struct msghdr msgs[MSGS];   /* for the sendmsg()s not yet submitted */
    int nmsg;
    unsigned inflight;          /* operations the kernel has */
    bool polling;               /* the epoll set's descriptor is being polled */
    bool draining;              /* stopping: nothing new goes to the kernel */
};

/* Makes the ring: 0, or a negative errno (-EOPNOTSUPP: the kernel lacks a feature). */
static int ring_setup(struct io_uring *ring) {
    struct io_uring_params p;
    int rc = -EINVAL;
    /* Completions run when the worker asks for them, not by interrupting it. */
    unsigned flags[] = {
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE,
        IORING_SETUP_COOP_TASKRUN | IORING_SETUP_CQSIZE,
    };
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        memset(&p, 0, sizeof(p));
        p.flags = flags[i];
        p.cq_entries = RING_CQ_ENTRIES;
        rc = io_uring_queue_init_params(RING_ENTRIES, ring, &p);
        if (rc == 0) {
            /* sendmsg()'s header and iovecs must be read at submission
               (they are reused), and completions must never be dropped */
            unsigned need = IORING_FEAT_SUBMIT_STABLE | IORING_FEAT_NODROP | IORING_FEAT_EXT_ARG |
                            IORING_FEAT_FAST_POLL;
            if ((p.features & need) == need)
                return 0;
            io_uring_queue_exit(ring);
            return -EOPNOTSUPP;
        }
    }
    return rc;
}

static void uring_free(struct net_uring *u, bool ring_up) {
    if (ring_up)
        io_uring_queue_exit(&u->ring);
    bufring_deinit(&u->bufs);
    free(u);
}

int net_uring_init(struct net_worker *w) {
    struct net_uring *u = calloc(1, sizeof(*u));
    if (u == NULL)
        return -1;
    if (ring_setup(&u->ring) != 0) {
        uring_free(u, false);
        return -1;
    }
    unsigned n = w->srv->ring_bufs ? w->srv->ring_bufs : BUF_COUNT;
    if (bufring_init(&u->bufs, &u->ring, n, BUF_SIZE, BUF_GROUP) != 0) {
        uring_free(u, true);
        return -1;
    }
    w->ring = u;
    NET_STAT_ADD(w->rbufs, n);
    NET_STAT_ADD(w->rbufs_ring, n);
    return 0;
}

void net_uring_deinit(struct net_worker *w) {
    if (w->ring == NULL)
        return;
    unsigned n = w->ring->bufs.n;
    uring_free(w->ring, true);
    w->ring = NULL;
    NET_STAT_ADD(w->rbufs, -(int64_t)n);
    NET_STAT_ADD(w->rbufs_ring, -(int64_t)n);
}

bool net_uring_usable(char *why, size_t n) {
    struct net_uring *u = calloc(1, sizeof(*u));
    if (u == NULL) {
        snprintf(why, n, "out of memory");
        return false;
    }
    int rc = ring_setup(&u->ring);
    if (rc != 0) {
        snprintf(why, n, "io_uring_setup: %s",
                 rc == -EOPNOTSUPP ? "the kernel lacks features (6.1 or later needed)"
                                   : strerror(-rc));
        uring_free(u, false);
        return false;
    }
    bool ok = bufring_init(&u->bufs, &u->ring, 1, BUF_SIZE, BUF_GROUP) == 0;
    if (!ok)
        snprintf(why, n, "provided buffer rings are not available");
    uring_free(u, true);
    return ok;
}

int net_io_choose(struct net_server *s, const char *mode, const char *prog, const char *flag) {
    char why[160];
    s->io = NET_IO_EPOLL;
    if (strcmp(mode, "epoll") == 0)
        return 0;
    if (net_uring_usable(why, sizeof(why))) {
        s->io = NET_IO_URING;
        return 0;
    }
    if (strcmp(mode, "uring") == 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, flag, why);
        return -1;
    }
    fprintf(stderr, "%s: io_uring unavailable (%s); using epoll\n", prog, why);
    return 0;
}

/* A submission slot, submitting what is queued if the ring is full. */
static struct io_uring_sqe *sqe_get(struct net_uring *u) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
    if (sqe == NULL) {
        io_uring_submit(&u->ring);
        u->nmsg = 0;
        sqe = io_uring_get_sqe(&u->ring);
    }
    return sqe;
}

/* Cancels the operations whose user_data is data (all of them with IORING_ASYNC_CANCEL_ANY). */
static bool cancel(struct net_uring *u, uint64_t data, unsigned flags) {
    struct io_uring_sqe *sqe = sqe_get(u);
    if (sqe == NULL)
        return false;
    io_uring_prep_cancel64(sqe, data, (int)flags);
    io_uring_sqe_set_data64(sqe, OP_CANCEL);
    u->inflight++;
    return true;
}

/* Cancels c's receive (c is closed, or may not read for now). */
static void cancel_recv(struct net_uring *u, struct net_conn *c) {
    if ((c->ring_flags & NET_RING_RECV) == 0 || (c->ring_flags & NET_RING_HALT))
        return;
    if (cancel(u, (uintptr_t)c | OP_RECV, 0))
        c->ring_flags |= NET_RING_HALT;
}

void net_uring_stop_input(struct net_conn *c) {
    cancel_recv(c->w->ring, c);
}

/*
 * Frees a closed connection once the kernel holds nothing of it.  Its
 * descriptor is closed only then: until its operations are back, the
 * number must not go to a new connection (a receive submitted for the old
 * one would read the new one's bytes).
 */
static void reap(struct net_conn *c) {
    if ((c->ring_flags & (NET_RING_RECV | NET_RING_SEND | NET_RING_QUEUED)) == 0) {
        close(c->fd);
        net_conn_destroy(c);
    }
}

/* c's receive could not be submitted (no slot): it is tried again after the round. */
static void starve(struct net_conn *c) {
    c->ring_flags |= NET_RING_STARVED;
    if (!c->yielded) {
        c->yielded = true;
        c->ready_next = c->w->ready;
        c->w->ready = c;
    }
}

/*
 * Keeps a receive in the kernel for c while it may read.  It is multishot:
 * armed once, it completes each time data arrives, until it fails, runs
 * out of buffers or is cancelled (no IORING_CQE_F_MORE on its last).
 */
void net_uring_want_input(struct net_conn *c) {
    struct net_uring *u = c->w->ring;
    if (c->paused || c->want_write || c->yielded || u->draining ||
        (c->ring_flags & (NET_RING_RECV | NET_RING_DEAD | NET_RING_STARVED)) != 0)
        return;
    struct io_uring_sqe *sqe = sqe_get(u);
    if (sqe == NULL) {
        starve(c);
        return;
    }
    io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BUF_GROUP;
    io_uring_sqe_set_data64(sqe, (uintptr_t)c | OP_RECV);
    c->ring_flags |= NET_RING_RECV;
    u->inflight++;
}

static void queue_send(struct net_conn *c) {
    if (c->ring_flags & NET_RING_QUEUED)
        return;
    struct net_uring *u = c->w->ring;
    c->ring_flags |= NET_RING_QUEUED;
    c->send_next = u->sendq;
    u->sendq = c;
}

bool net_uring_flush(struct net_conn *c) {
    if (out_empty(&c->out)) {
        if (c->close_after_write) {
            net_conn_close(c);
            return false;
        }
        return true;
    }
    /*
     * Output behind a send the kernel still has waits; the application
     * stops making more for c when there is a lot of it, or when that
     * send has outlived a turn (the socket is full).
     */
    if (c->ring_flags & NET_RING_SEND)
        c->want_write = true;
    else if (c->out.bytes > OUT_WAIT && (c->ring_flags & NET_RING_QUEUED))
        c->want_write = true;
    queue_send(c);
    return true;
}

void net_uring_close(struct net_conn *c) {
    struct net_uring *u = c->w->ring;
    if (c->ring_flags & NET_RING_LENT) {
        out_budget_return(&c->w->outpool.budget);
        bufring_put(&u->bufs, c->rbuf);
        c->ring_flags &= ~NET_RING_LENT;
        c->rbuf = NULL;
        c->rsize = c->rstart = c->rend = 0;
    }
    net_conn_unlink(c);
    c->ring_flags |= NET_RING_DEAD;
    cancel_recv(u, c);
    if (c->ring_flags & NET_RING_SEND)
        cancel(u, (uintptr_t)c | OP_SEND, 0);
    reap(c);
}

/* Sends what each queued connection has, one send in the kernel per connection. */
static void submit_sends(struct net_uring *u) {
    struct net_conn *c = u->sendq;
    u->sendq = NULL;
    while (c != NULL) {
        struct net_conn *next = c->send_next;
        c->ring_flags &= ~NET_RING_QUEUED;
        if (c->ring_flags & NET_RING_DEAD) {
            reap(c);
        } else if ((c->ring_flags & NET_RING_SEND) == 0 && !out_empty(&c->out) && !u->draining) {
            struct io_uring_sqe *sqe = sqe_get(u);
            if (sqe == NULL) {
                queue_send(c);      /* cannot happen after a submit; keep it for next turn */
                c = next;
                continue;
            }
            struct out *o = &c->out;
            int cnt = o->niov - o->sent;
            if (cnt > IOV_MAX)
                cnt = IOV_MAX;
            struct iovec *first = &o->iov[o->sent];
            if (cnt == 1) {
                io_uring_prep_send(sqe, c->fd, first->iov_base, first->iov_len, MSG_NOSIGNAL);
            } else {
                struct msghdr *m = &u->msgs[u->nmsg++];
                memset(m, 0, sizeof(*m));
                m->msg_iov = first;
                m->msg_iovlen = (size_t)cnt;
                io_uring_prep_sendmsg(sqe, c->fd, m, MSG_NOSIGNAL);
            }
            io_uring_sqe_set_data64(sqe, (uintptr_t)c | OP_SEND);
            c->ring_flags |= NET_RING_SEND;
            u->inflight++;
        }
        c = next;
    }
}

/*
 * A receive came back.  The bytes are run where they lie when c has none
 * waiting; else they join c's rbuf.  Either way the buffer goes back.
 */
static void on_recv(struct net_worker *w, struct net_conn *c, int res, unsigned flags) {
    struct net_uring *u = w->ring;
    bool more = (flags & IORING_CQE_F_MORE) != 0;
    if (!more)
        c->ring_flags &= ~(NET_RING_RECV | NET_RING_HALT);
    char *b = (flags & IORING_CQE_F_BUFFER) ? bufring_at(&u->bufs, flags) : NULL;
    if (c->ring_flags & NET_RING_DEAD) {
        if (b != NULL)
            bufring_put(&u->bufs, b);
        reap(c);
        return;
    }
    if (res <= 0 || b == NULL) {
        if (b != NULL)
            bufring_put(&u->bufs, b);
        if (res == -ENOBUFS) {
            starve(c);      /* every buffer is out: try once this turn's have come back */
        } else if (res == -EAGAIN || res == -EINTR || res == -ECANCELED) {
            net_uring_want_input(c);        /* if it may read again */
        } else {
            c->close_normal = res == 0;
            net_conn_close(c);
        }
        return;
    }
    NET_STAT_ADD(w->st->bytes_read, (uint64_t)res);
    const struct net_conn_ops *ops = w->srv->ops;
    bool run = !c->paused && !c->want_write;
    if (c->rbuf == NULL && run) {
        c->rbuf = b;
        c->rsize = BUF_SIZE;
        c->rstart = 0;
        c->rend = (size_t)res;
        c->rbuf_moved = true;
        c->ring_flags |= NET_RING_LENT;
        /* the budget (out.h) counts it as a read buffer while it is parsed,
           as memcached's read buffer would be: the bytes are in, so no refusal */
        out_budget_hold(&w->outpool.budget);
        if (!ops->process(c))
            return;                 /* closed: the buffer went back */
        if (c->yielded)
            cancel_recv(u, c);      /* enough to do: read again after its turn */
        /* Keep what is left of a request, and give the buffer back. */
        c->ring_flags &= ~NET_RING_LENT;
        out_budget_return(&w->outpool.budget);
        size_t from = c->rstart, left = c->rend - c->rstart;
        c->rbuf = NULL;
        c->rsize = c->rstart = c->rend = 0;
        c->rbuf_moved = true;
        if (left > 0) {
            if (!net_rbuf_room(c, left)) {
                bufring_put(&u->bufs, b);
                net_conn_close(c);
                return;
            }
            memcpy(c->rbuf, b + from, left);
            c->rend = left;
        }
        bufring_put(&u->bufs, b);
    } else {
        if (!net_rbuf_room(c, (size_t)res)) {
            bufring_put(&u->bufs, b);
            net_conn_close(c);
            return;
        }
        memcpy(c->rbuf + c->rend, b, (size_t)res);
        c->rend += (size_t)res;
        bufring_put(&u->bufs, b);
        if (run) {
            if (!ops->process(c))
                return;
            net_rbuf_release(c);
            if (c->yielded)
                cancel_recv(u, c);
        } else {
            /* paused or blocked: take no more until it may run again */
            cancel_recv(u, c);
        }
    }
    net_uring_want_input(c);
}

/* A send came back: the rest goes next turn; a blocked application resumes once all is out. */
static void on_send(struct net_worker *w, struct net_conn *c, int res) {
    c->ring_flags &= ~NET_RING_SEND;
    if (c->ring_flags & NET_RING_DEAD) {
        reap(c);
        return;
    }
    if (res < 0) {
        if (res == -EAGAIN || res == -EINTR) {
            queue_send(c);
            return;
        }
        net_conn_close(c);
        return;
    }
    NET_STAT_ADD(w->st->bytes_written, (uint64_t)res);
    out_consume(&c->out, (size_t)res);
    if (!out_empty(&c->out)) {
        queue_send(c);
        if (c->want_write)
            return;
    } else if (c->close_after_write) {
        net_conn_close(c);
        return;
    }
    /* A blocked application goes on; a paused one (a proxy's) looks whether it may. */
    if (c->want_write || c->paused) {
        c->want_write = false;
        if (!w->srv->ops->process(c))
            return;
        net_rbuf_release(c);
    }
    net_uring_want_input(c);
}

static void arm_poll(struct net_worker *w) {
    struct net_uring *u = w->ring;
    struct io_uring_sqe *sqe = sqe_get(u);
    if (sqe == NULL)
        return;
    io_uring_prep_poll_add(sqe, evloop_fd(w->loop), POLLIN);
    io_uring_sqe_set_data64(sqe, OP_POLL);
    u->polling = true;
    u->inflight++;
}

static void on_cqe(struct net_worker *w, uint64_t data, int res, unsigned flags) {
    struct net_uring *u = w->ring;
    struct net_conn *c = (struct net_conn *)(uintptr_t)(data & ~(uint64_t)OP_MASK);
    if ((flags & IORING_CQE_F_MORE) == 0)
        u->inflight--;
    switch (data & OP_MASK) {
    case OP_RECV:
        on_recv(w, c, res, flags);
        break;
    case OP_SEND:
        on_send(w, c, res);
        break;
    case OP_POLL:
        u->polling = false;
        if (!u->draining)           /* stopping: what epoll has (a new fd) is left to stop */
            net_worker_epoll_round(w);
        break;
    default:
        break;
    }
}

/* Runs every completion there is. */
static void reap_all(struct net_worker *w) {
    struct uring_done got[256];
    unsigned n;
    while ((n = uring_take(&w->ring->ring, got, 256)) > 0)
        for (unsigned i = 0; i < n; i++)
            on_cqe(w, got[i].data, got[i].res, got[i].flags);
}

/* At the end: cancels what the kernel has and waits for it (a second at most). */
static void drain(struct net_worker *w) {
    struct net_uring *u = w->ring;
    u->draining = true;
    cancel(u, 0, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL);
    submit_sends(u);        /* frees the dead still queued; the live get no new sends */
    for (int tries = 0; u->inflight > 0 && tries < 100; tries++) {
        struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
        struct io_uring_cqe *cqe;
        io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
        reap_all(w);
        submit_sends(u);
    }
}

void net_uring_run(struct net_worker *w) {
    struct net_uring *u = w->ring;
    while (!atomic_load(&w->srv->stop)) {
        submit_sends(u);
        if (!u->polling)
            arm_poll(w);
        if (w->ready != NULL) {
            io_uring_submit(&u->ring);
        } else {
            int ms = w->wait_ms != NULL ? w->wait_ms(w) : 1000;
            struct __kernel_timespec ts = {.tv_sec = ms / 1000,
                                           .tv_nsec = (long long)(ms % 1000) * 1000000};
            struct io_uring_cqe *cqe;
            io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
        }
        u->nmsg = 0;
        reap_all(w);
        net_worker_after_round(w);
    }
    drain(w);
}
