/*
 * bench.h -- cellar-bench's load threads and what they share with main.
 *
 * main.c reads the options into a struct bench_config, then drives the
 * phases: connect, preload (optional), run.  Each load thread owns one
 * epoll loop and its connections for the whole life of the program, and
 * runs one phase per bench_thread_run() started on a fresh pthread:
 *
 *   main: setup threads --> [preload: every key set once] --> run --> report
 *                               |                              |
 *   thread:              fill each conn to depth; on every reply record
 *                        latency, send the next request; stop when told
 *                        (or out of quota), wait for what is in flight
 *
 * Latencies go into a per-thread window histogram that the thread folds
 * into its total five times a second (and, for the progress line, into a
 * published copy under its mutex).  The only shared writes are that fold,
 * the stop flag and the count of finished threads.
 */
#ifndef CELLAR_TOOLS_BENCH_BENCH_H
#define CELLAR_TOOLS_BENCH_BENCH_H

#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/histogram.h"
#include "tools/bench/proto.h"
#include "tools/bench/workload.h"

struct bench_config {
    const char *host, *port;
    unsigned threads;
    unsigned conns;             /* per thread */
    unsigned depth;             /* requests in flight per connection */
    double duration;            /* seconds of measurement (0: none) */
    double warmup;              /* seconds before measuring (duration runs only) */
    uint64_t requests;          /* total requests (0: none) */
    double stall;               /* seconds without a reply while waiting = failure */
    double rate;                /* open loop: requests a second in all (0: closed loop) */
    const struct bench_proto *proto;
    struct workload wl;
    bool preload;               /* set every key of the key space first */
    bool preload_only;
    unsigned preload_depth;
    uint64_t pool;              /* requests drawn ahead per thread (0: draw each when sent) */
    uint64_t seed;
    bool spin;                  /* poll without sleeping (a dedicated core) */
    bool uring;                 /* drive the sockets through io_uring (--io uring) */
    bool tls;                   /* --tls: the connections speak TLS (epoll only) */
    bool json;
    int progress;               /* -1: when stdout is a terminal */
};

struct bench_stats {
    uint64_t reqs, gets, sets, keys, hits, errors;
};

enum bench_phase { BENCH_PHASE_PRELOAD, BENCH_PHASE_RUN };

/* What main and every thread share for one phase. */
struct bench_shared {
    atomic_int stop;            /* main says: issue nothing more, drain, return */
    atomic_int done;            /* threads that have returned */
    pthread_barrier_t start;    /* threads + main: all connected, go */
    uint64_t warm_end_ns;       /* run phase: discard what completes before this */
    const char *value;          /* wl.vmax bytes of value data */
    struct addrinfo *addr;
    void *tls;                  /* --tls: the client context (tls.c); NULL: plain */
    bool progress;
};

struct bconn;
struct bench_uring;

/* A request drawn ahead of time: its head at pool_buf + off; a set's value is added when sent. */
struct pool_req {
    uint32_t off, len;
    uint32_t nkeys;
    uint32_t vlen;
    uint8_t op;             /* enum bench_op */
};

struct bench_thread {
    unsigned id;
    const struct bench_config *cfg;
    struct bench_shared *sh;
    enum bench_phase phase;
    pthread_t tid;
    struct rng rng;
    struct evloop *loop;
    struct bench_uring *ur;         /* --io uring: the phase's ring (its thread's) */
    struct bconn *conns;
    unsigned nconns, live;
    uint64_t inflight;
    uint64_t quota, issued;         /* run phase: requests this thread may send */
    uint64_t next_ns, interval_ns;  /* open loop: when the next request is due, and the step */
    unsigned rr;                    /* open loop: the connection to try first */
    uint64_t next_key, end_key;     /* preload phase: keys left to set */
    char *keybuf;                   /* multiget * key_size */
    struct mc_span *keys;
    char *pool_buf;                 /* heads of the pool's requests */
    struct pool_req *pool;
    uint32_t npool, pool_pos;
    /* statistics: window (recording), total (folded), pub (for progress) */
    struct bench_stats win, total, pub;
    struct histogram *hwin, *htotal, *hpub;
    pthread_mutex_t mu;             /* guards pub, hpub */
    uint64_t t_start, t_end;        /* monotonic ns: first request, last reply */
    uint64_t wait_ns;               /* time inside epoll_wait since t_start */
    int failed;
    char err[256];
};

uint64_t bench_now_ns(void);

/* --tls (tls.c): the client context, a connection's handshake on its blocking socket
   (NULL with err), and reads and writes as read() and write() say them. */
void *bench_tls_ctx(void);
void bench_tls_ctx_free(void *ctx);
void *bench_tls_connect(void *ctx, int fd, char *err, size_t cap);
void bench_tls_close(void *ssl);
ssize_t bench_tls_read(void *ssl, char *buf, size_t n);
ssize_t bench_tls_write(void *ssl, const char *buf, size_t n);

/* Allocates the thread's buffers and connects its connections; -1 with t->err. */
int bench_thread_setup(struct bench_thread *t, const struct bench_config *cfg,
                       struct bench_shared *sh, unsigned id);
/* Runs t->phase (a pthread start routine). */
void *bench_thread_run(void *arg);
/* Main's side of the progress line: moves the published window into s, h. */
void bench_thread_take(struct bench_thread *t, struct bench_stats *s, struct histogram *h);
void bench_thread_teardown(struct bench_thread *t);

static inline void bench_stats_add(struct bench_stats *a, const struct bench_stats *b) {
    a->reqs += b->reqs;
    a->gets += b->gets;
    a->sets += b->sets;
    a->keys += b->keys;
    a->hits += b->hits;
    a->errors += b->errors;
}

#endif
