/*
 * uring.c -- a handle's io_uring (client_int.h says what it does).
 *
 * Each operation's user_data names its connection and what the socket
 * was when it went out:
 *
 *   gen << 32 | connection index << 1 | send
 *
 * A connection that gives its socket up while the kernel still has a
 * receive or a send of it moves the descriptor and buffers into a retired
 * record under its current gen and takes the next gen: completions of the
 * old gen go to the record, which closes and frees once the last is back,
 * so the kernel never writes into a buffer in use again, nor does a
 * cancellation reach a new socket that took the old descriptor's number.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <unistd.h>

#include "client/handle_int.h"
#include "core/uring.h"

#define CANCEL_DATA UINT64_MAX      /* a cancellation's own completion: nothing to do */
#define TAKE_MAX 64

struct retired {
    struct retired *next;
    unsigned idx;
    uint32_t gen;
    unsigned ops;                   /* still with the kernel */
    int fd;
    char *rbuf, *wbuf;
};

struct cl_ring {
    enum cl_io io;                  /* CL_IO_RING: what the handle's loop reports */
    struct cellar *h;
    struct io_uring ring;
    unsigned prepared;              /* not yet submitted */
    unsigned ops;                   /* with the kernel, retired ones too */
    struct retired *retired;
};

int cl_async_ring(struct cellar *h) {
    if (h->cfg->tls != NULL)
        return 0;                   /* TLS pools: epoll (tls.c) */
    return h->ring != NULL ? 0 : cl_ring_create(h);
}

int cl_ring_create(struct cellar *h) {
    struct cl_ring *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return -ENOMEM;
    unsigned entries = 64;
    while (entries < 4 * h->nconns && entries < 4096)
        entries *= 2;
    struct io_uring_params p = {.flags = IORING_SETUP_SUBMIT_ALL};
    int rc = io_uring_queue_init_params(entries, &r->ring, &p);
    if (rc < 0) {
        p.flags = 0;
        rc = io_uring_queue_init_params(entries, &r->ring, &p);
    }
    if (rc < 0) {
        free(r);
        return rc;
    }
    r->io = CL_IO_RING;
    r->h = h;
    if (evloop_add(h->loop, r->ring.ring_fd, EV_READ, r) < 0) {
        io_uring_queue_exit(&r->ring);
        free(r);
        return -ENOMEM;
    }
    h->ring = r;
    return 0;
}

static struct io_uring_sqe *sqe_get(struct cl_ring *r) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    if (sqe == NULL) {              /* full: what is there goes now */
        io_uring_submit(&r->ring);
        r->prepared = 0;
        sqe = io_uring_get_sqe(&r->ring);
    }
    if (sqe != NULL)
        r->prepared++;
    return sqe;
}

static uint64_t data_of(const struct cl_conn *c, bool send) {
    return (uint64_t)c->ring_gen << 32 | (uint64_t)(c - c->h->conns) << 1 | send;
}

/* An SQE for c's receive or send, counted as out (the caller preps it, then
   names it with data_of()); NULL, and c told of the failure, when there is none. */
static struct io_uring_sqe *op_sqe(struct cl_conn *c, bool send) {
    struct io_uring_sqe *sqe = sqe_get(c->h->ring);
    if (sqe == NULL) {
        c->h->ring_done(c, send, -EBUSY, clock_mono_ns());
        return NULL;
    }
    if (send)
        c->ring_send = true;
    else
        c->ring_recv = true;
    c->h->ring->ops++;
    return sqe;
}

void cl_ring_recv(struct cl_conn *c) {
    struct io_uring_sqe *sqe = op_sqe(c, false);
    if (sqe != NULL) {
        c->rroom = c->rcap - c->rlen;
        io_uring_prep_recv(sqe, c->fd, c->rbuf + c->rlen, c->rroom, 0);
        io_uring_sqe_set_data64(sqe, data_of(c, false));
    }
}

void cl_ring_send(struct cl_conn *c) {
    struct io_uring_sqe *sqe = op_sqe(c, true);
    if (sqe != NULL) {              /* MSG_WAITALL: the kernel sends it all (or fails) */
        io_uring_prep_send(sqe, c->fd, c->wbuf + c->woff, c->wlen - c->woff,
                           MSG_NOSIGNAL | MSG_WAITALL);
        io_uring_sqe_set_data64(sqe, data_of(c, true));
    }
}

void cl_ring_retire(struct cl_conn *c) {
    struct cl_ring *r = c->h->ring;
    unsigned ops = (unsigned)c->ring_recv + (unsigned)c->ring_send;
    if (ops == 0) {
        close(c->fd);
        return;
    }
    struct retired *t = malloc(sizeof(*t));
    struct io_uring_sqe *sqe = sqe_get(r);
    if (sqe != NULL) {
        io_uring_prep_cancel_fd(sqe, c->fd, IORING_ASYNC_CANCEL_ALL);
        io_uring_sqe_set_data64(sqe, CANCEL_DATA);
    } else {
        shutdown(c->fd, SHUT_RDWR); /* ends a receive as well */
    }
    if (t != NULL) {
        *t = (struct retired){.next = r->retired, .idx = (unsigned)(c - c->h->conns),
                              .gen = c->ring_gen, .ops = ops, .fd = c->fd, .rbuf = c->rbuf,
                              .wbuf = c->wbuf};
        r->retired = t;
    }   /* else no memory even for the record: descriptor and buffers are left to the
           kernel (leaked), never used again */
    c->ring_gen++;
    c->ring_recv = c->ring_send = false;
    c->rbuf = c->wbuf = NULL;
    c->rcap = c->wcap = 0;
}

/* A completion of a retired socket's: the record goes with its last. */
static void retired_done(struct cl_ring *r, unsigned idx, uint32_t gen) {
    for (struct retired **pp = &r->retired; *pp != NULL; pp = &(*pp)->next) {
        struct retired *t = *pp;
        if (t->idx == idx && t->gen == gen) {
            if (--t->ops == 0) {
                *pp = t->next;
                close(t->fd);
                free(t->rbuf);
                free(t->wbuf);
                free(t);
            }
            return;
        }
    }
}

static void dispatch(struct cellar *h, const struct uring_done *d, uint64_t now) {
    struct cl_ring *r = h->ring;
    if (d->data == CANCEL_DATA)
        return;
    r->ops--;
    unsigned idx = (unsigned)(d->data >> 1) & 0x7fffffff;
    uint32_t gen = (uint32_t)(d->data >> 32);
    bool send = d->data & 1;
    struct cl_conn *c = &h->conns[idx];
    if (gen != c->ring_gen) {
        retired_done(r, idx, gen);
        return;
    }
    if (send)
        c->ring_send = false;
    else
        c->ring_recv = false;
    c->h->ring_done(c, send, d->res, now);
}

void cl_ring_io(void *ring, uint64_t now) {
    struct cellar *h = ((struct cl_ring *)ring)->h;
    struct uring_done done[TAKE_MAX];
    unsigned n;
    do {
        n = uring_take(&h->ring->ring, done, TAKE_MAX);
        for (unsigned i = 0; i < n; i++)
            dispatch(h, &done[i], now);
    } while (n == TAKE_MAX);
}

void cl_ring_wait(struct cellar *h, int ms) {
    struct cl_ring *r = h->ring;
    struct __kernel_timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long long)(ms % 1000) * 1000000};
    struct io_uring_cqe *cqe;
    io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);    /* (a timeout or a signal: no matter) */
    cl_ring_io(r, clock_mono_ns());
}

bool cl_ring_submit(struct cellar *h) {
    struct cl_ring *r = h->ring;
    if (r == NULL || r->prepared == 0)
        return false;
    io_uring_submit(&r->ring);
    r->prepared = 0;
    return true;
}

void cl_ring_destroy(struct cellar *h) {
    struct cl_ring *r = h->ring;
    if (r == NULL)
        return;
    /* the connections are reset (their sockets retired, cancelled): wait for the kernel */
    cl_ring_submit(h);
    struct __kernel_timespec ts = {.tv_sec = 1};
    while (r->ops > 0) {
        struct io_uring_cqe *cqe;
        if (io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts) < 0)
            break;              /* the kernel keeps it: the buffers below are leaked, not reused */
        cl_ring_io(r, clock_mono_ns());
    }
    evloop_del(h->loop, r->ring.ring_fd);
    io_uring_queue_exit(&r->ring);
    if (r->ops == 0) {
        while (r->retired != NULL) {
            struct retired *t = r->retired;
            r->retired = t->next;
            close(t->fd);
            free(t->rbuf);
            free(t->wbuf);
            free(t);
        }
    }
    free(r);
    h->ring = NULL;
}
