/*
 * conn.h -- a cellard connection: its state, and reading values and
 * keys out of its input (conn.c).
 *
 * struct conn extends the network core's connection (struct net_conn,
 * embedded first: net allocates and frees it) with what memcached's
 * protocols keep between reads.  A connection belongs to one worker for
 * its whole life and is touched only by that worker's thread, except the
 * fields `stats conns` reads under the worker's conns_lock (net's).
 *
 * The state (net_conn.state, enum conn_state) changes only through
 * conn_set_state(): the parse loop (worker.c) reads it, and the code that
 * starts or ends a value, a dump or a watch sets it.  conn.c owns the
 * CONN_NREAD and CONN_SWALLOW machinery (starting a value's read or its
 * discarding; worker.c's loop feeds them input and returns the connection
 * to CONN_PARSE when a swallow is done) and the read-ahead of pipelined
 * keys; it calls the engine and the codecs, never a dispatcher, so the
 * dispatchers and worker.c both call down into it.  Nothing here blocks
 * or allocates.
 */
#ifndef CELLAR_SERVER_CONN_H
#define CELLAR_SERVER_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "net/worker.h"
#include "protocol/mc_text.h"
#include "storage/engine.h"

struct mc_ctx;
struct sasl_session;

/* A string literal as (pointer, length), for out_copy() and friends. */
#define S(lit) lit, sizeof(lit) - 1

/* A connection's state (net_conn.state); CONN_PARSE is net's NET_CONN_IDLE. */
enum conn_state {
    CONN_PARSE = NET_CONN_IDLE, /* parsing requests from rbuf */
    CONN_NREAD,         /* reading a value into an item */
    CONN_SWALLOW,       /* discarding a value we will not store */
    CONN_DUMP,          /* sending a metadump (dump.c); this and WATCH stay together */
    CONN_WATCH,         /* a log watcher (watch.c): input is dropped */
    CONN_CLOSING,
};

/*
 * A cellard connection: the network core's (fd, read buffer, output,
 * state) and what memcached's protocols keep between reads.
 */
struct conn {
    struct net_conn net;            /* first: net allocates and frees it */
    struct mc_ctx *ctx;             /* its worker's engine, settings and counters (ctx.h) */
    /* memcached's per-event request budget, as conn_yields counts it (worker.c) */
    bool mc_flush;                  /* the request just run is one memcached flushes after */
    bool mc_pending;                /* memcached would hold replies not yet flushed */
    bool mc_resume;                 /* the next event starts with a step (after a yield) */
    bool proto_known;               /* the first byte has been seen */
    bool is_udp;                    /* a worker's UDP socket, not a stream */
    bool binary;                    /* speaks the binary protocol */
    bool authed;                    /* -Y or -S: passed its authentication (auth.c, sasl.c) */
    uint32_t auth_need;             /* -Y: the token's bytes awaited, with its \r\n (0: a line) */
    struct sasl_session *sasl;      /* -S: its SASL exchange (sasl.c); NULL before the first */
    uint16_t udp_reqid;             /* UDP: request id of the datagram in hand */
    size_t pf_end;                  /* rbuf[..pf_end) scanned for keys to prefetch */

    /* CONN_NREAD: the value being read */
    struct item *nitem;
    enum engine_store_op nop;
    uint64_t ncas;
    bool nnoreply;
    size_t ndone, nlen;             /* value bytes read so far / total */
    char ncrlf[2];
    bool nmeta;                     /* the value is an ms's: dispatch_meta answers it */
    struct meta_pending *mpend;     /* dispatch_meta.c: what an ms answer needs (allocated
                                       on the first ms, kept for the connection's life) */
    uint8_t bop, bcmd;              /* binary: opcode as sent, and its loud twin */
    uint32_t bopaque;
    size_t ncrlf_done;
    /* CONN_SWALLOW */
    uint64_t swallow;
    struct dump *dump;              /* CONN_DUMP: the metadump under way (dump.c) */
    struct watcher *watcher;        /* CONN_WATCH: attached to the watch thread (watch.c) */
    unsigned watch_kinds;           /* CONN_WATCH: what it asked for */
};

/* The one writer of a connection's state. */
static inline void conn_set_state(struct conn *c, enum conn_state s) {
    atomic_store_explicit(&c->net.state, s, memory_order_relaxed);
}

static inline int conn_state(const struct conn *c) {
    return atomic_load_explicit(&c->net.state, memory_order_relaxed);
}

#define PREFETCH_KEYS ENGINE_PREFETCH_MAX  /* keys a read-ahead hashes at most */

/*
 * A worker's read-ahead (a field of its struct mc_ctx): the last
 * read-ahead's keys, as pointers into pf_conn's rbuf, and their hashes,
 * for the requests that follow (conn_next_key()).  pf_conn is cleared
 * whenever that rbuf's bytes may move or change (conn_pf_forget()).
 */
struct conn_readahead {
    struct conn *pf_conn;
    unsigned pf_n, pf_i;
    const char *pf_key[PREFETCH_KEYS];
    uint8_t pf_len[PREFETCH_KEYS];
    uint64_t pf_hv[PREFETCH_KEYS];
};

/*
 * Starts reading a value of vlen bytes straight into it (CONN_NREAD).  A
 * text or meta value must be followed by "\r\n"; a binary one is not, so
 * its terminator counts as already read.  c takes over the caller's
 * reference to it (released when the value is done or c closes).
 */
void conn_nread_begin(struct conn *c, struct item *it, uint32_t vlen, bool terminated);
/* Copies value bytes from rbuf into the item being read; true once it is complete. */
bool conn_nread_rbuf(struct conn *c);
/* Reads the rest of a large value straight from the socket: bytes, 0 on EOF, -1 error/EAGAIN. */
ssize_t conn_nread_direct(struct conn *c);
/* Skips the next n bytes of input (CONN_SWALLOW: a value that will not be stored). */
void conn_swallow(struct conn *c, uint64_t n);
/* Drops what rbuf holds of the value being swallowed; true once all of it is gone. */
bool conn_swallow_rbuf(struct conn *c);
/*
 * mc_text_next_key() over a text request in c's rbuf, with the key's hash:
 * the read-ahead's key and hash where it has them, else split and hashed.
 */
bool conn_next_key(struct conn *c, struct mc_span *rest, struct mc_span *key, uint64_t *hv);
/* Read-ahead of the keys of the pipelined text requests in c's rbuf (conn.c). */
void conn_prefetch(struct conn *c);
/* c's rbuf is about to move or change: forget the read-ahead's keys in it. */
void conn_pf_forget(struct conn *c);

#endif
