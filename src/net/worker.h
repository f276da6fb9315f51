/*
 * worker.h -- the network core: worker threads, their loops, connections.
 *
 *   acceptor (net/listener.c)       workers (one event loop each)
 *   listen fds --accept--> fd --queue+wake--> worker: conn for life
 *                                              read once into rbuf
 *                                              ops->process(conn)   (the application)
 *                                              one writev per batch (net/out.h)
 *
 * cellard and cellar-router are both built on it.  net owns what every
 * memcache-speaking server does the same way: the accepted descriptor's
 * hand-off to a worker, the read buffer lent from a per-worker pool only
 * while a connection has unparsed bytes (an idle connection holds its
 * struct alone), batched output with back-pressure (a connection whose
 * replies are not being read is not read from), the ready list on which a
 * connection that used its turn waits while the others have theirs, idle
 * timeouts, and the close.  What the bytes mean is the application's: it
 * gives a table of calls (struct net_conn_ops), called once per read, not
 * once per request, so the requests' own loop stays in the application
 * and the indirect call stays off the per-request path.
 *
 * An application's connection is a struct of its own that begins with a
 * struct net_conn (ops->conn_size says how large; net allocates it zeroed).
 * Its worker likewise embeds a struct net_worker.
 *
 * Threading: a connection and everything in its net_conn belong to its
 * worker's thread.  Other threads may read the fields marked atomic and
 * walk a worker's list under conns_lock (`stats conns`).  The counters are
 * written by the worker only and read by anyone (relaxed).
 *
 * Everything an event loop reports is a struct net_handler: a connection
 * (net's stream handling, or the application's own for a datagram socket)
 * or any descriptor the application watches (net_worker_watch()).
 *
 * Two back ends drive stream connections (net_server.io): epoll, where a
 * readable socket is read() and replies are writev()n at once, and
 * io_uring (net/uring.c), where receives and sends are submitted to the
 * kernel and their completions reaped, for all connections of a worker
 * with one system call per loop turn.  The application sees the same
 * calls either way; descriptors it watches stay on epoll.
 */
#ifndef CELLAR_NET_WORKER_H
#define CELLAR_NET_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "core/evloop.h"
#include "net/out.h"

/* A connection's read buffer, as memcached's READ_BUFFER_SIZE (grown for long lines). */
#define NET_RBUF_SIZE 16384

struct net_conn;
struct net_worker;
struct net_server;

/* Something a worker's loop watches: called with the events (EV_*) that fired. */
struct net_handler {
    void (*on_event)(struct net_handler *h, int events);
};

/* A connection waiting for its next request: the state net may close for idleness. */
#define NET_CONN_IDLE 0

struct net_conn {
    struct net_handler h;           /* first: what the loop reports */
    int fd;
    struct net_worker *w;
    struct net_conn *prev, *next;   /* worker's list (under conns_lock) */
    _Atomic int state;              /* the application's; NET_CONN_IDLE (0): waiting for a
                                       request.  Read by `stats conns` */
    _Atomic uint32_t last_active;   /* the application's clock at its last command */
    bool want_write;                /* registered for EV_WRITE: output is blocked */
    bool close_after_write;
    bool close_normal;              /* the peer quit or hung up (not an error) */
    bool yielded;                   /* on the worker's ready list */
    bool rbuf_moved;                /* rbuf's bytes moved or were given back since the
                                       application last looked (it keeps pointers into them) */
    bool read_direct;               /* ask ops->read_direct before reading into rbuf */
    bool paused;                    /* not read from (net_conn_pause()) */
    /* TLS (net/tls.c): its SSL object, NULL on a plain connection */
    void *tls;
    bool tls_rwant_write;           /* a read (the handshake) waits for the socket to take
                                       what it must write first */
    bool tls_more;                  /* a record read but not all taken: read again without
                                       waiting for the socket */
    bool tls_raw;                   /* another thread writes the session now (a watcher):
                                       what comes is read raw and dropped, for the end */
    /* io_uring back end (net/uring.c): what the kernel has of this connection */
    bool ring;                      /* driven by the worker's ring, not epoll */
    uint8_t ring_flags;             /* NET_RING_* */
    struct net_conn *ready_next;
    struct net_conn *send_next;     /* the ring's queue of connections with output */
    int listen_fd;
    struct sockaddr_storage peer;
    socklen_t peerlen;

    char *rbuf;
    size_t rsize, rstart, rend;     /* unparsed bytes are rbuf[rstart..rend) */

    struct out out;
};

/* ops->read_direct: not now, read into rbuf. */
#define NET_READ_RBUF (-2)

struct net_conn_ops {
    size_t conn_size;               /* the application's connection, a net_conn first */
    /*
     * Runs what it can of rbuf[rstart..rend): called after each read, and
     * when a connection resumes (its turn came back after a yield, or
     * blocked output drained).  It consumes bytes by advancing rstart,
     * adds replies to out and sends them with net_conn_flush(), and may
     * yield (net_conn_yield()) or close.  Returns false if it closed c.
     */
    bool (*process)(struct net_conn *c);
    /*
     * Optional, asked before a read when c->read_direct is set and rbuf is
     * empty: reads input straight to where it belongs (a large value into
     * its item).  Returns bytes read, 0 at end of stream, -1 with errno,
     * or NET_READ_RBUF to read into rbuf after all.
     */
    ssize_t (*read_direct)(struct net_conn *c);
    void (*opened)(struct net_conn *c);     /* accepted, in the worker's list (optional) */
    void (*closing)(struct net_conn *c);    /* about to close; fd still open (optional) */
    void (*release)(struct net_conn *c);    /* free what the application hangs off c */
};

/* Counters of one worker, with memcached's names. */
#define NET_STATS(X) \
    X(bytes_read) X(bytes_written) X(conn_yields) X(idle_kicks) X(read_buf_oom)

struct net_counters {
#define X(n) _Atomic uint64_t n;
    NET_STATS(X)
#undef X
};

/* One writer per counter: a plain load and store, no locked instruction. */
#define NET_STAT_ADD(var, v) \
    atomic_store_explicit(&(var), atomic_load_explicit(&(var), memory_order_relaxed) + (v), \
                          memory_order_relaxed)
#define NET_STAT_INC(var) NET_STAT_ADD(var, 1)
#define NET_STAT_GET(var) atomic_load_explicit(&(var), memory_order_relaxed)

struct net_pending;
struct net_uring;

/* How a server's workers drive their stream connections. */
enum net_io { NET_IO_EPOLL, NET_IO_URING };

struct net_worker {
    struct net_server *srv;
    int id;
    pthread_t thread;
    struct evloop *loop;
    struct net_uring *ring;         /* the io_uring back end's, on its thread; NULL: epoll */
    struct net_handler wake;        /* the loop's wake-ups: new descriptors to take */
    pthread_mutex_t queue_lock;     /* new fds handed over by the acceptor */
    struct net_pending *queue;
    pthread_mutex_t conns_lock;     /* the list below, for `stats conns` */
    struct net_conn *conns;
    struct net_conn *ready;         /* connections that yielded with work left */
    char *rbuf_free[64];            /* idle read buffers (RBUF_POOL) */
    int nrbuf_free;
    int rbuf_keep;                  /* idle read buffers kept at most (0 under a budget) */
    _Atomic uint64_t rbufs;         /* read buffers it has, lent or idle */
    _Atomic uint64_t rbufs_idle;    /* nrbuf_free, as `stats` may read it */
    _Atomic uint64_t rbufs_ring;    /* the ring's receive buffers (in rbufs too; idle but
                                       for the moment each is being parsed) */
    struct out_pool outpool;        /* idle reply scratch blocks */
    char *tls_wbuf;                 /* TLS: where output is gathered for SSL_write() */
    struct net_counters *st;        /* where its counters are kept (the application's) */
    /* On the worker's thread: before its loop, and after each round of events. */
    void (*started)(struct net_worker *w);
    void (*tick)(struct net_worker *w);
    /* How long the loop may sleep when nothing happens (optional; else 1000 ms). */
    int (*wait_ms)(struct net_worker *w);
};

/* What the workers of one server share: their connection counts, the stop flag. */
struct net_server {
    const struct net_conn_ops *ops;
    struct net_worker **workers;
    int nworkers;
    int next_worker;                /* the acceptor's round robin */
    enum net_io io;                 /* set before net_workers_start() */
    struct net_tls *tls;            /* TLS listeners' context (net/tls.h); NULL: none */
    unsigned ring_bufs;             /* io_uring: receive buffers a worker hands the kernel
                                       (a power of 2; 0: 128) */
    atomic_bool stop;
    _Atomic uint64_t curr_conns, total_conns, rejected_conns, conn_structs;
    atomic_int started;             /* workers past their started callback */
};

/*
 * Sets w up (its loop, its queue) as worker id of s, counting into *st;
 * release(ctx, ref) lets go what its connections' outs hold.  0, or -1 when out of resources.
 */
int net_worker_init(struct net_worker *w, struct net_server *s, int id, struct net_counters *st,
                    void (*release)(void *ctx, void *ref), void *release_ctx);
/*
 * Bounds w's read buffers and response slots to units of 16 KB (struct
 * out_budget, memcached's read_buf_mem_limit share; 0: no bound, the
 * default).  Before w's threads start.
 */
void net_worker_set_budget(struct net_worker *w, unsigned units);
/* Starts the threads of s's workers; returns once each has run its started callback (-1: one failed). */
int net_workers_start(struct net_server *s);
/* Wakes and joins the workers (after s->stop is set), closes their connections. */
void net_workers_stop(struct net_server *s);
/* Frees what net_worker_init() made (the worker's thread has ended). */
void net_worker_deinit(struct net_worker *w);

/* Hands an accepted descriptor to w (any thread); s->curr_conns already counts it.
   tls: it came to a TLS listener (w's server has a net_tls). */
void net_worker_hand_fd(struct net_worker *w, int fd, int listen_fd,
                        const struct sockaddr_storage *peer, socklen_t peerlen, bool tls);

/*
 * Makes a connection on w for fd (on w's thread), in w's list and loop,
 * reported to h (NULL: net's stream handling, over TLS when tls).  NULL
 * when out of memory or when its TLS could not be set up.
 */
struct net_conn *net_conn_open(struct net_worker *w, int fd, int listen_fd,
                               const struct sockaddr_storage *peer, socklen_t peerlen,
                               struct net_handler *h, bool tls);
/* Closes c: ops->closing, the descriptor, ops->release; c is gone. */
void net_conn_close(struct net_conn *c);
/* Frees c without the close's bookkeeping (a datagram socket at shutdown). */
void net_conn_free(struct net_conn *c);

/*
 * Sends pending output: at once (epoll), or with the worker's other sends
 * at the end of its loop turn (io_uring).  Returns false if the
 * connection was closed.
 */
bool net_conn_flush(struct net_conn *c);
/*
 * net_conn_flush(), and while any of c's output has not left, c is
 * blocked (want_write): process() is called again once it all has.  For
 * an application that must not go on until its words are out (a watcher
 * that writes to the socket itself next).
 */
bool net_conn_flush_wait(struct net_conn *c);
/* Puts c on its worker's ready list, to go on after the others have had a turn. */
void net_conn_yield(struct net_conn *c);
/*
 * Stops (pause) or resumes reading from c: an application whose answers
 * to c's requests are still being made (a proxy's) pauses it rather than
 * buffer requests without bound, and resumes when they are answered.
 */
void net_conn_pause(struct net_conn *c, bool pause);

/* Watches fd for events on w's loop (w's thread).  0 or -1. */
int net_worker_watch(struct net_worker *w, int fd, int events, struct net_handler *h);

/*
 * Can this process use io_uring as the network core needs it (the kernel
 * and its sandbox allow the ring, provided buffers and the operations)?
 * If not, why gets one line saying why.
 */
bool net_uring_usable(char *why, size_t n);

/*
 * Sets s->io for mode "auto", "uring" or "epoll" (anything else is taken
 * as auto): io_uring where it is usable, unless epoll is asked for.  When
 * auto falls back it says why on stderr, as prog, in one line; when uring
 * was asked for (by the option flag) and cannot be had it says why and
 * returns -1: the program should not start.  Else 0.
 */
int net_io_choose(struct net_server *s, const char *mode, const char *prog, const char *flag);

/*
 * Closes the connections of w that have waited longer than limit seconds
 * for a request (state NET_CONN_IDLE, output not blocked, not on the
 * ready list, last_active older than now - limit), counting idle_kicks.
 */
void net_worker_close_idle(struct net_worker *w, uint32_t now, uint32_t limit);

#endif
