#include "net/out.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sys.h"

/* A gauge of the pool's one writer thread: a plain load and store. */
static void gauge_add(_Atomic uint64_t *g, int64_t d) {
    atomic_store_explicit(g, atomic_load_explicit(g, memory_order_relaxed) + (uint64_t)d,
                          memory_order_relaxed);
}

void out_init(struct out *o, struct out_pool *pool) {
    memset(o, 0, sizeof(*o));
    o->pool = pool;
    o->budgeted = pool != NULL && pool->budget.units != 0;
}

void out_deinit(struct out *o) {
    out_reset(o);
    free(o->iov);
    free(o->holds);
    memset(o, 0, sizeof(*o));
}

void out_pool_drain(struct out_pool *pool) {
    while (pool->free != NULL) {
        struct out_block *b = pool->free;
        pool->free = b->next;
        gauge_add(&pool->bytes, -(int64_t)b->size);
        gauge_add(&pool->blocks, -1);
        free(b);
    }
    atomic_store_explicit(&pool->n, 0, memory_order_relaxed);
}

static bool grow(void **arr, int *cap, size_t elem) {
    int ncap = *cap ? *cap * 2 : 16;
    void *n = realloc(*arr, (size_t)ncap * elem);
    if (n == NULL)
        return false;
    *arr = n;
    *cap = ncap;
    return true;
}

/* out_add() when a new iovec is needed and the array is full, or len is 0. */
bool out_add_slow(struct out *o, const void *p, size_t len) {
    if (len == 0)
        return true;
    if (o->niov == o->iov_cap && !grow((void **)&o->iov, &o->iov_cap, sizeof(struct iovec)))
        return false;
    o->iov[o->niov++] = (struct iovec){(void *)p, len};
    o->bytes += len;
    return true;
}

/*
 * Scratch space comes from blocks that are never moved or freed before
 * out_reset(), so an iovec may point into them.  They are chained from
 * head in the order used; cur is the last.  A request larger than a block
 * gets a block of its own size.
 */
/* out_reserve() when the current block lacks room. */
char *out_reserve_slow(struct out *o, size_t n) {
    struct out_block *nb;
    struct out_pool *pool = o->pool;
    if (n <= OUT_BLOCK && pool != NULL && pool->free != NULL) {
        nb = pool->free;
        pool->free = nb->next;
        atomic_store_explicit(&pool->n, atomic_load_explicit(&pool->n, memory_order_relaxed) - 1,
                              memory_order_relaxed);
    } else {
        size_t size = n > OUT_BLOCK ? n : OUT_BLOCK;
        nb = malloc(sizeof(*nb) + size);
        if (nb == NULL) {
            if (pool != NULL)
                gauge_add(&pool->oom, 1);
            return NULL;
        }
        nb->size = size;
        if (pool != NULL) {
            gauge_add(&pool->bytes, (int64_t)size);
            gauge_add(&pool->blocks, size == OUT_BLOCK);
        }
    }
    nb->used = 0;
    nb->next = NULL;
    if (o->cur == NULL)
        o->head = nb;
    else
        o->cur->next = nb;
    o->cur = nb;
    return nb->data;
}

bool out_printf(struct out *o, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        return false;
    if ((size_t)n >= sizeof(buf))
        n = sizeof(buf) - 1;
    return out_copy(o, buf, (size_t)n);
}

bool out_hold(struct out *o, void *ref) {
    if (o->nholds == o->holds_cap && !grow((void **)&o->holds, &o->holds_cap, sizeof(*o->holds)))
        return false;
    o->holds[o->nholds++] = (struct out_held){ref, o->niov};
    return true;
}

bool out_add_held(struct out *o, const void *p, size_t len, void *ref) {
    if (o->nholds == o->holds_cap && !grow((void **)&o->holds, &o->holds_cap, sizeof(*o->holds)))
        return false;
    if (!out_add(o, p, len))
        return false;
    o->holds[o->nholds++] = (struct out_held){ref, o->niov};
    return true;
}

/* Releases the holds whose bytes have all been written. */
static void release_written(struct out *o) {
    while (o->hdone < o->nholds && o->holds[o->hdone].end <= o->sent) {
        o->pool->release(o->pool->release_ctx, o->holds[o->hdone].ref);
        o->hdone++;
    }
}

/* Units a budget's lent read buffers and resp response slots take. */
static uint64_t budget_units(const struct out_budget *b, uint64_t resp) {
    return b->lent + (resp + OUT_RESP_PER_UNIT - 1) / OUT_RESP_PER_UNIT;
}

bool out_resp_take_slow(struct out *o, uint64_t n) {
    struct out_budget *b = &o->pool->budget;
    if (budget_units(b, b->resp + n) > b->units) {
        gauge_add(&o->pool->oom, 1);
        return false;
    }
    b->resp += n;
    o->resp += n;
    return true;
}

bool out_budget_lend_slow(struct out_budget *b) {
    if (budget_units(b, b->resp) + 1 > b->units)
        return false;
    b->lent++;
    return true;
}

void out_resp_return_slow(struct out *o) {
    o->pool->budget.resp -= o->resp;
    o->resp = 0;
}

void out_reset(struct out *o) {
    if (o->resp != 0)
        out_resp_return_slow(o);
    for (int i = o->hdone; i < o->nholds; i++)
        o->pool->release(o->pool->release_ctx, o->holds[i].ref);
    o->nholds = o->hdone = 0;
    o->niov = o->sent = 0;
    o->bytes = 0;
    /* Blocks of the usual size go back to the pool (the last used first
       out, still warm); the rest are freed, so a burst pins no memory. */
    struct out_block *b = o->head;
    while (b != NULL) {
        struct out_block *n = b->next;
        struct out_pool *pool = o->pool;
        unsigned pn = pool != NULL ? atomic_load_explicit(&pool->n, memory_order_relaxed) : 0;
        if (b->size == OUT_BLOCK && pool != NULL && pn < pool->max) {
            b->next = pool->free;
            pool->free = b;
            atomic_store_explicit(&pool->n, pn + 1, memory_order_relaxed);
        } else {
            if (pool != NULL) {
                gauge_add(&pool->bytes, -(int64_t)b->size);
                gauge_add(&pool->blocks, -(int64_t)(b->size == OUT_BLOCK));
            }
            free(b);
        }
        b = n;
    }
    o->head = o->cur = NULL;
}

int out_flush(struct out *o, int fd, size_t *written) {
    *written = 0;
    while (o->sent < o->niov) {
        int cnt = o->niov - o->sent;
        if (cnt > IOV_MAX)
            cnt = IOV_MAX;
        /* one piece (the usual reply to one request) by write(), which the kernel does for less */
        const struct iovec *first = &o->iov[o->sent];
        ssize_t n = cnt == 1 ? sys_write(fd, first->iov_base, first->iov_len)
                             : sys_writev(fd, first, cnt);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -1;
        }
        *written += (size_t)n;
        out_consume(o, (size_t)n);
        if (o->bytes == 0)
            return 1;
    }
    out_reset(o);
    return 1;
}

void out_consume(struct out *o, size_t n) {
    o->bytes -= n;
    while (n > 0) {
        struct iovec *v = &o->iov[o->sent];
        if (n >= v->iov_len) {
            n -= v->iov_len;
            o->sent++;
        } else {
            v->iov_base = (char *)v->iov_base + n;
            v->iov_len -= n;
            n = 0;
        }
    }
    if (o->bytes == 0)
        out_reset(o);
    else if (o->hdone < o->nholds)
        release_written(o);
}
