/*
 * server.h -- the server's shared state: workers, connections, statistics.
 *
 *   acceptor (main thread)          workers (-t, one epoll loop each)
 *   listen fds --accept--> fd --queue+wake--> worker: conn for life
 *   (net/listener.h)                           read -> parse -> dispatch
 *   maintenance thread: clock, engine_step()      -> one writev per batch
 *                                              (net/worker.h: the loop, the
 *                                              buffers; worker.c: the rest)
 *
 * cellard's connection and worker extend the network core's (struct
 * net_conn, struct net_worker, embedded first).  A connection belongs to one worker for its whole life; nothing about it
 * is touched by another thread except the fields `stats conns` reads under
 * the worker's conns_lock.  Statistics are per worker, written only by
 * that worker with relaxed atomics, and summed when somebody asks.
 */
#ifndef CELLAR_SERVER_SERVER_H
#define CELLAR_SERVER_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/evloop.h"
#include "core/text.h"
#include "net/listener.h"
#include "net/out.h"
#include "net/worker.h"
#include "protocol/mc_text.h"
#include "server/settings.h"
#include "storage/engine.h"

/* Per-worker counters, as memcached's per-thread stats name them (and NET_STATS). */
#define WORKER_STATS(X)                                                    \
    X(get_cmds) X(get_misses)                                              \
    X(touch_cmds) X(touch_misses) X(delete_misses) X(incr_misses)          \
    X(decr_misses) X(cas_misses) X(set_cmds) X(flush_cmds) X(meta_cmds)    \
    X(store_too_large) X(store_no_memory) X(auth_cmds) X(auth_errors)

/* Per-worker, per-slab-class counters (`stats slabs`). */
#define SLAB_STATS(X)                                                      \
    X(set_cmds) X(delete_hits) X(incr_hits) X(decr_hits)                   \
    X(cas_hits) X(cas_badval) X(touch_hits)

struct slab_counters {
#define X(n) _Atomic uint64_t n;
    SLAB_STATS(X)
#undef X
    /* get hits by the segment the item was in (memcached's lru_hits,
       enum evict_lru); their sum is get_hits */
    _Atomic uint64_t lru_hits[EVICT_NLRU];
};

struct worker_counters {
    struct net_counters net;        /* the network core's (bytes_read, conn_yields...) */
#define X(n) _Atomic uint64_t n;
    WORKER_STATS(X)
#undef X
    struct slab_counters slab[ENGINE_MAX_CLASSES];
};

/* One writer per counter: a plain load and store, no locked instruction. */
#define STAT_ADD(var, v) \
    atomic_store_explicit(&(var), atomic_load_explicit(&(var), memory_order_relaxed) + (v), \
                          memory_order_relaxed)
#define STAT_INC(var) STAT_ADD(var, 1)
#define STAT_GET(var) atomic_load_explicit(&(var), memory_order_relaxed)

/* A get hit on it, counted by the segment it was found in. */
#define STAT_HIT(st, e, it, cls) STAT_INC((st)->slab[cls].lru_hits[engine_item_lru(e, it)])

struct server;
struct worker;

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
    struct worker *w;
    /* memcached's per-event request budget, as conn_yields counts it (worker.c) */
    bool mc_flush;                  /* the request just run is one memcached flushes after */
    bool mc_pending;                /* memcached would hold replies not yet flushed */
    bool mc_resume;                 /* the next event starts with a step (after a yield) */
    bool proto_known;               /* the first byte has been seen */
    bool is_udp;                    /* a worker's UDP socket, not a stream */
    bool binary;                    /* speaks the binary protocol */
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

#define PREFETCH_KEYS ENGINE_PREFETCH_MAX  /* keys a read-ahead hashes at most (worker.c) */

struct worker {
    struct net_worker net;          /* its loop, connections, buffers */
    struct server *srv;
    int *udp_fds;                   /* this worker's UDP sockets (one per -l address) */
    int nudp;
    uint32_t idle_swept;            /* engine clock of the last idle sweep (-o idle_timeout) */
    struct iovec *iov;              /* room for the pieces of the largest item */
    int iov_max;
    /*
     * The last read-ahead's keys, as pointers into pf_conn's rbuf, and
     * their hashes, for the requests that follow (conn_next_key()); pf_conn
     * is cleared whenever that rbuf's bytes may move or change (pf_forget()).
     */
    struct conn *pf_conn;
    unsigned pf_n, pf_i;
    const char *pf_key[PREFETCH_KEYS];
    uint8_t pf_len[PREFETCH_KEYS];
    uint64_t pf_hv[PREFETCH_KEYS];
    struct worker_counters st;
    struct worker_counters base;    /* snapshot at `stats reset` */
};

struct server {
    struct net_server net;          /* workers' shared counts (curr_conns...), stop */
    struct settings *cfg;
    struct engine *engine;
    struct worker *workers;
    int nworkers;
    struct net_listeners listeners;
    _Atomic int verbose;
    _Atomic bool crawler_on;        /* lru_crawler enable / disable (dispatch.c) */
    _Atomic uint32_t crawler_sleep, crawler_tocrawl;  /* lru_crawler sleep / tocrawl */
    _Atomic bool detail_on;         /* stats detail on / off, -D (detail.c) */
    pthread_mutex_t tune_lock;      /* cfg fields that slabs / lru change (tune.c) */
    struct detail *detail;
    struct watch_hub *watch;        /* watch.c */
    uint32_t started;               /* unix time */
    _Atomic uint64_t maint_loops;   /* maintenance rounds (memcached's lru_maintainer_juggles) */
    uint64_t fixed_conns;           /* listeners and UDP sockets: memcached counts each
                                       as a connection (set once at start) */
    atomic_bool accepting;
    _Atomic uint64_t reset_time;
    pthread_mutex_t stats_lock;     /* stats reset vs. readers */
};

/* worker.c */
int worker_init_all(struct server *s);   /* workers, loops, UDP sockets: before listen() */
int worker_start_all(struct server *s);  /* their threads */
void conn_nread_begin(struct conn *c, struct item *it, uint32_t vlen, bool terminated);
void conn_swallow(struct conn *c, uint64_t n);
/*
 * mc_text_next_key() over a text request in c's rbuf, with the key's hash:
 * the read-ahead's key and hash where it has them, else split and hashed.
 */
bool conn_next_key(struct conn *c, struct mc_span *rest, struct mc_span *key, uint64_t *hv);
/*
 * Whether the engine's expiry crawl runs: it stands in for both memcached's
 * LRU crawler (crawler_on: -o no_lru_crawler, lru_crawler enable/disable)
 * and its LRU maintainer, which also reaps expired items (dispatch.c).
 */
static inline bool server_crawl_runs(const struct settings *cfg, bool crawler_on) {
    return crawler_on || cfg->lru_maintainer_thread;
}
/* The eviction policy's knobs as -o hot_lru_pct... and `lru tune` set them. */
static inline struct evict_tune server_lru_tune(const struct settings *cfg) {
    return (struct evict_tune){(unsigned)cfg->hot_lru_pct, (unsigned)cfg->warm_lru_pct,
                               cfg->hot_max_factor, cfg->warm_max_factor};
}
void worker_stop_all(struct server *s);

/* udp.c */
#define UDP_PAYLOAD 1392            /* reply bytes per datagram (1400 with the frame) */
int udp_open(const char *host, int port);
int udp_open_worker(struct server *s, struct worker *w);
int udp_frame_parse(const unsigned char *d, size_t n);
void udp_send_reply(struct conn *c);

/*
 * dump.c: `lru_crawler metadump <classes>`.  dump_start() returns the
 * error reply for a bad class list; else NULL, the connection is in
 * CONN_DUMP and the worker calls dump_fill() for slices of output, which
 * ends with "END" and returns it to CONN_PARSE.  dump_free() ends a dump
 * early (the connection closes).
 */
const char *dump_start(struct conn *c, const char *arg, size_t len);
/* cold: kept out of conn_process(), whose registers the hot path needs */
__attribute__((cold)) void dump_fill(struct conn *c);
void dump_free(struct conn *c);
/* dump.c: `stats cachedump <class> <limit>`, answered at once. */
void dump_cachedump(struct conn *c, const struct mc_req *req);

/*
 * detail.c: `stats detail` counts by key prefix.  Callers check detail_on
 * (one relaxed load) before detail_count().
 */
enum detail_op { DETAIL_GET, DETAIL_SET, DETAIL_DEL };
int detail_init(struct server *s);
void detail_free(struct server *s);
__attribute__((cold)) void detail_count(struct server *s, const char *key, size_t nkey,
                                        enum detail_op op, bool hit);
void detail_command(struct conn *c, const struct mc_req *req);
static inline bool detail_on(const struct server *s) {
    return atomic_load_explicit(&s->detail_on, memory_order_relaxed);
}

/*
 * watch.c: memcached's `watch`.  watch_command() answers a bad request or
 * puts c in CONN_WATCH; once c has sent all it owed, the worker calls
 * watch_attach() (false: close it), and watch_detach() before closing the
 * fd.  Workers call watch_bind_thread() once; watch_cfd is the client fd
 * the thread is serving, for the lines it makes.
 */
enum watch_kind {
    WATCH_FETCHERS = 1,
    WATCH_MUTATIONS = 2,
    WATCH_EVICTIONS = 4,
    WATCH_CONNEVENTS = 8,
    WATCH_SILENT = 16,          /* accepted words cellard has no lines for */
};
struct watch_counts {
    uint64_t worker_written, worker_dropped, watcher_skipped, watcher_sent, watchers;
};
extern _Thread_local int watch_cfd;
int watch_init(struct server *s);
void watch_bind_thread(struct server *s, int worker);
void watch_stop(struct server *s);
void watch_free(struct server *s);
void watch_command(struct conn *c, const struct mc_req *req);
bool watch_attach(struct conn *c);
void watch_detach(struct conn *c);
/* connevents: a connection accepted (open) or closing for reason ("normal", "error") */
__attribute__((cold)) void watch_conn_event(struct conn *c, bool open, const char *reason);
/* mutations: a store refused before it reached the engine (no item could be made) */
__attribute__((cold)) void watch_refused_store(struct server *s, const char *key, size_t nkey,
                                               enum engine_store_op op, bool too_large);
void watch_stats(struct server *s, struct watch_counts *out);

/* tune.c: `slabs reassign|automove` and `lru tune|mode|temp_ttl`. */
void tune_slabs(struct conn *c, const struct mc_req *req);
void tune_lru(struct conn *c, const struct mc_req *req);

/* dispatch.c: runs one parsed text request; may change c->state. */
void dispatch_text(struct conn *c, struct mc_req *req);
/*
 * dispatch.c: bookkeeping every protocol shares when a store gets no item:
 * counts it, removes the old value when asked (a failed set must not leave
 * stale data behind) and skips the value.  The caller writes its answer.
 */
void dispatch_alloc_failed(struct conn *c, enum engine_alloc_err err, const char *key,
                           size_t nkey, enum engine_store_op op, bool drop_old, uint64_t skip);
/* dispatch.c: counts an incr/decr as a hit in class hit_cls, or a miss (hit_cls 0). */
void dispatch_count_arith(struct conn *c, bool decr, unsigned hit_cls);
/* dispatch.c: answers a request line the codec refused. */
void dispatch_text_error(struct conn *c, struct mc_req *req);
/* dispatch.c: a value has been read completely (CONN_NREAD done). */
void dispatch_nread_done(struct conn *c);

/* dispatch_meta.c: runs one meta request (r: what mc_meta_parse answered for it,
   OK or ERROR); may change c->state. */
struct mc_meta_req;
void dispatch_meta(struct conn *c, struct mc_meta_req *req, enum mc_parse r);
/* dispatch_meta.c: an ms value has been read completely (CONN_NREAD with nmeta). */
void dispatch_meta_nread_done(struct conn *c);

/* dispatch_bin.c */
struct mc_bin_req;
void dispatch_bin(struct conn *c, struct mc_bin_req *r);
void dispatch_bin_error(struct conn *c, struct mc_bin_req *r);
void dispatch_bin_nread_done(struct conn *c);

/* stats.c */
struct stat_sink {
    void (*emit)(struct stat_sink *k, const char *name, const char *val);
    struct conn *c;                 /* the asking connection; NULL for stats_collect() */
    void *ctx;                      /* the emitter's own (metrics.c) */
    bool binary;
    uint32_t opaque;
};
/* STATS_NOEND: lines without the closing END (memcached's sizes_enable/_disable) */
enum stats_group { STATS_LINES, STATS_RESET, STATS_NOEND, STATS_UNKNOWN };
/* stats.c: -o track_sizes */
bool stats_sizes_start(struct server *s);
enum stats_group stats_run(struct conn *c, struct stat_sink *k, const char *sub, size_t len);
void stats_text(struct conn *c, struct mc_req *req);
void stats_sum(struct server *s, struct worker_counters *out);
/*
 * stats.c: the general (group ""), "items" or "slabs" lines into k, for
 * any thread (the sums and the engine's figures are read as `stats` reads
 * them).  false for another group.
 */
bool stats_collect(struct server *s, struct stat_sink *k, const char *group);
/*
 * metrics.c: cellard's Prometheus exposition (--metrics), made from the
 * lines of stats_collect() and the per-worker counters: the render
 * callback of core/httpd.h, arg the server.
 */
void metrics_render(void *arg, struct text *t);

#endif
