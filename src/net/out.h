/*
 * out.h -- a connection's pending response: iovecs, scratch, references.
 *
 * Responses of a whole batch of pipelined requests are gathered here and
 * sent with as few writev() calls as the kernel allows.  Two kinds of
 * bytes end up in the iovec list:
 *   - formatted lines (VALUE headers, numbers, stats), written into
 *     scratch blocks that never move, so iovecs into them stay valid;
 *     constant replies are copied there too (out_copy());
 *   - values larger than OUT_COPY_MAX, pointed at where they lie (inside
 *     a cache item, a backend's reply buffer), with a hold on what owns
 *     them, released through the pool's release() as soon as every iovec
 *     added before the hold has been written, so a client that reads
 *     slowly pins only what has not left yet (smaller ones are copied
 *     into scratch).
 * Adjacent pieces that touch in memory are merged into one iovec.  Short
 * constant replies go through out_copy(), which copies them into scratch,
 * so that a run of them ("STORED\r\n" x 16) or the "\r\n" after a value
 * and the next VALUE line share one iovec: the kernel's cost of a writev
 * grows with its iovecs.
 *
 *   [VALUE k 0 5\r\nhello\r\nVALUE j 0 900\r\n][<900 bytes>][\r\nEND\r\n]
 *    scratch (small value copied)              item          scratch
 *                                              (1 hold)
 *
 * out knows nothing of what it holds: cellard's holds are item
 * references (released with engine_item_unref), the router's are reply
 * buffers; the pool's release() says how to let one go.
 *
 * Used by one thread (the connection's worker).  Scratch blocks of the
 * usual size come from, and go back to, that worker's out_pool once all is
 * written, so between batches a connection holds none, and at depth 1 every
 * connection writes into the same few blocks, which stay in cache.
 */
#ifndef CELLAR_NET_OUT_H
#define CELLAR_NET_OUT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "core/copy.h"

#define OUT_BLOCK 16384
/*
 * Values up to this size are copied into scratch rather than pointed at:
 * the kernel's cost per iovec of a writev, and a held reference per value,
 * outweigh copying a few hundred bytes that the kernel copies anyway.
 */
#define OUT_COPY_MAX 512

struct out_block {
    struct out_block *next;
    size_t used, size;
    char data[];
};

/*
 * memcached's read_buf_mem_limit, per thread: a thread's read buffers and
 * response objects come from one cache of 16 KB objects, so many at most.
 * cellard keeps no response objects, but counts them as memcached has
 * them, so the limit means what it means there: every request answered,
 * and every further key of a multi-key get, takes one of OUT_RESP_PER_UNIT
 * slots of a unit (memcached's mc_resp, about 1.2 KB with its write
 * buffer, 13 to a 16 KB bundle) until its connection's output has all been
 * written; every read buffer lent to a connection takes a unit.  Idle
 * read buffers and scratch blocks are not counted (memcached's response
 * objects hold its reply lines; cellard's scratch does).  The thread
 * owning the pool is its only user.  units 0: no limit, nothing counted;
 * set before any out is made on the pool (out_init() notes it).
 */
#define OUT_RESP_PER_UNIT 13

struct out_budget {
    unsigned units;                 /* 16 KB units at most; 0: no limit */
    unsigned lent;                  /* read buffers lent to connections */
    uint64_t resp;                  /* response slots taken */
};

/*
 * Free scratch blocks of OUT_BLOCK bytes, shared by one thread's outs, and
 * how the outs of that thread release what they hold (out_hold()).
 */
struct out_pool {
    void (*release)(void *ctx, void *ref);
    void *release_ctx;
    struct out_block *free;
    _Atomic unsigned n;             /* blocks on free (relaxed: `stats` reads it) */
    unsigned max;
    /* For `stats` (memcached's response_obj_*), read by other threads;
       written by the pool's thread only, when a block is made or freed. */
    _Atomic uint64_t blocks;        /* blocks of the usual size, held or free */
    _Atomic uint64_t bytes;         /* bytes of all blocks, held or free */
    _Atomic uint64_t oom;           /* blocks or response slots that could not be had */
    struct out_budget budget;
};

/* A reference out keeps until iov[0 .. end) has been written. */
struct out_held {
    void *ref;
    int end;
};

struct out {
    struct out_pool *pool;
    struct iovec *iov;
    int niov, iov_cap, sent;        /* iov[sent..niov) still to write */
    struct out_held *holds;         /* in the order taken, so in the order of end */
    int nholds, holds_cap, hdone;   /* holds[hdone..nholds) not yet released */
    struct out_block *head, *cur;   /* scratch blocks */
    size_t bytes;                   /* bytes not yet written */
    uint64_t resp;                  /* response slots taken (pool's budget), until reset */
    bool budgeted;                  /* the pool has a budget (copied at out_init()) */
};

void out_init(struct out *o, struct out_pool *pool);
/* Releases what it holds and frees everything. */
void out_deinit(struct out *o);
/* Frees the pool's blocks (once no out uses it). */
void out_pool_drain(struct out_pool *pool);

bool out_add_slow(struct out *o, const void *p, size_t len);

/* Appends bytes that stay valid until out_reset() (item values). */
static inline bool out_add(struct out *o, const void *p, size_t len) {
    if (o->niov > o->sent) {
        struct iovec *last = &o->iov[o->niov - 1];
        if ((const char *)last->iov_base + last->iov_len == (const char *)p) {
            last->iov_len += len;
            o->bytes += len;
            return true;
        }
    }
    if (len == 0 || o->niov == o->iov_cap)
        return out_add_slow(o, p, len);
    o->iov[o->niov++] = (struct iovec){(void *)p, len};
    o->bytes += len;
    return true;
}
char *out_reserve_slow(struct out *o, size_t n);

/* Reserves n contiguous scratch bytes; commit what was used with out_commit(). */
static inline char *out_reserve(struct out *o, size_t n) {
    struct out_block *b = o->cur;
    if (b != NULL && b->size - b->used >= n)
        return b->data + b->used;
    return out_reserve_slow(o, n);
}
/* Takes the first used bytes of what out_reserve() gave and appends them. */
static inline bool out_commit(struct out *o, char *p, size_t used) {
    o->cur->used = (size_t)(p - o->cur->data) + used;
    return out_add(o, p, used);
}

/* Copies bytes (a constant reply, short text) into scratch, joining what precedes them. */
static inline bool out_copy(struct out *o, const void *p, size_t len) {
    char *d = out_reserve(o, len);
    if (d == NULL)
        return false;
    if (len <= 64)
        copy_short(d, p, len);      /* replies: no call, no rep movs (core/copy.h) */
    else
        memcpy(d, p, len);
    return out_commit(o, d, len);
}
/* Formats into scratch (for stats). */
bool out_printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * Keeps ref held until the bytes added before this call are written (or
 * out_reset()), then releases it: call it after adding what ref owns.
 */
bool out_hold(struct out *o, void *ref);
/*
 * Adds len bytes at p that ref owns, held until written.  false (nothing
 * added, ref not taken) when out has no room for the hold.
 */
bool out_add_held(struct out *o, const void *p, size_t len, void *ref);

/*
 * Writes as much as the socket takes.  Returns 1 when everything has been
 * written (and resets), 0 when the socket is full, -1 on error.
 * *written gets the bytes written.
 */
int out_flush(struct out *o, int fd, size_t *written);

/*
 * Takes the first n pending bytes as written (a send that completed
 * elsewhere: io_uring); once nothing is pending, resets.
 */
void out_consume(struct out *o, size_t n);

bool out_resp_take_slow(struct out *o, uint64_t n);

/* Does out's pool have a budget (so that counting slots to take is worth it)? */
static inline bool out_budget_on(const struct out *o) {
    return __builtin_expect(o->budgeted, 0);
}

/*
 * Takes n response slots of the pool's budget (struct out_budget) for
 * replies about to be added, held until out's output is all written.
 * false, counted as oom, when the budget has not that many left; always
 * true when the pool has no limit.
 */
static inline bool out_resp_take(struct out *o, uint64_t n) {
    if (!out_budget_on(o))
        return true;
    return out_resp_take_slow(o, n);
}

void out_resp_return_slow(struct out *o);
/*
 * Gives back the response slots of replies that turned out to be none
 * (noreply, quiet commands): call it when out is empty after a batch of
 * requests, which out_reset() would otherwise do only at the next write.
 */
static inline void out_resp_return(struct out *o) {
    if (__builtin_expect(o->resp != 0, 0))
        out_resp_return_slow(o);
}

bool out_budget_lend_slow(struct out_budget *b);
/* Lends a read buffer against the budget: false when it is spent (no limit: true). */
static inline bool out_budget_lend(struct out_budget *b) {
    return __builtin_expect(b->units == 0, 1) || out_budget_lend_slow(b);
}
/* Counts a read buffer lent without asking (its bytes are already in it). */
static inline void out_budget_hold(struct out_budget *b) {
    if (__builtin_expect(b->units != 0, 0))
        b->lent++;
}
/* A read buffer lent by out_budget_lend() or out_budget_hold() came back. */
static inline void out_budget_return(struct out_budget *b) {
    if (__builtin_expect(b->units != 0, 0) && b->lent > 0)
        b->lent--;
}

/* Forgets all pending bytes and releases what it holds. */
void out_reset(struct out *o);

static inline bool out_empty(const struct out *o) { return o->bytes == 0; }

#endif
