/*
 * echo_app.h -- a tiny application on net_conn_ops, served by one real
 * net worker thread, for the tests of src/net/worker and net/listener.
 *
 *   test thread (client, acceptor)          worker thread
 *   socketpair / connect --hand_fd--------> conn: read into rbuf
 *   write "abc\n" ------------------------> app_process(): "ok abc\n" per line
 *   read, poll <--------------------------- net_conn_flush()
 *
 * The application answers each "\n"-terminated line with "ok <line>\n",
 * at most `budget` lines per call (then it yields); after a line "pause"
 * it pauses the connection until the test asks the tick hook to resume
 * it.  It records what it
 * saw in atomics the test thread reads.  Nothing is synchronised by
 * sleeping: the test polls its socket with a timeout, or waits for the
 * worker to finish two more rounds (settle()), after which all the work
 * of the round it was looking at is done.
 *
 * Every test runs twice (app_run_both()): on the epoll back end and on the
 * io_uring one, where what they check can be the same.
 *
 * The tick hook, on the worker's thread, runs net_worker_close_idle() on
 * a clock the test sets, and can park the worker so that the test can
 * hand it several descriptors that it will then take in one round.
 */
#ifndef CELLAR_TEST_ECHO_APP_H
#define CELLAR_TEST_ECHO_APP_H

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "net/listener.h"
#include "net/worker.h"

struct app {
    struct net_worker w;            /* first: the worker's hooks find the app from it */
    struct net_worker *ws[1];
    struct net_server srv;
    struct net_counters st;
    int budget;                     /* lines per process() call; 0: all */
    size_t hiwat;                   /* output sent mid-batch past this; 0: at the end only */
    _Atomic uint32_t now, idle_limit;       /* the test's clock; tick closes idle past limit */
    _Atomic uint64_t ticks;                 /* rounds the worker finished */
    _Atomic int opened, closing, released;  /* ops calls */
    _Atomic int blocked;                    /* connections left with output blocked */
    _Atomic int moved_seen, moved_missed, lost;     /* the rbuf_moved checks */
    _Atomic int listen_fd, peer_family;     /* of the last connection opened */
    _Atomic size_t max_pending;             /* most output bytes held at once */
    _Atomic bool park, parked;              /* the test asks the worker to wait in tick */
    struct net_conn *paused_conn;           /* paused by a "pause" line (worker's) */
    _Atomic bool resume;                    /* the test asks tick to resume it */
    char log[8192];                 /* first byte of each line, in the order answered */
    _Atomic int nlog;
};

struct tconn {
    struct net_conn c;              /* first, as net requires */
    int id;
    const char *left;               /* where the unparsed bytes were when process() returned */
    char left_copy[64];
    size_t left_len;
    bool blocked;                   /* counted in app.blocked */
};

static struct app *app_of(struct net_worker *w) { return (struct app *)w; }

/*
 * The application: answers every complete line (at most budget of them,
 * then it yields; past hiwat bytes of output it sends them, and stops
 * while they are blocked, as cellard does), and checks the rbuf_moved
 * contract: bytes it left in rbuf are where it left them unless
 * rbuf_moved says otherwise, and they are the same bytes either way.
 */
static bool app_process(struct net_conn *c) {
    struct tconn *t = (struct tconn *)c;
    struct app *a = app_of(c->w);
    if (t->left_len > 0) {
        if (c->rbuf_moved)
            a->moved_seen++;
        else if (c->rbuf + c->rstart != t->left)
            a->moved_missed++;
        if (c->rend - c->rstart < t->left_len ||
            memcmp(c->rbuf + c->rstart, t->left_copy, t->left_len) != 0)
            a->lost++;
    }
    c->rbuf_moved = false;
    int done = 0;
    while (c->rstart < c->rend && !c->want_write && !c->paused) {
        char *s = c->rbuf + c->rstart;
        char *nl = memchr(s, '\n', c->rend - c->rstart);
        if (nl == NULL)
            break;
        if (a->budget > 0 && done == a->budget) {
            net_conn_yield(c);
            break;
        }
        size_t len = (size_t)(nl - s);
        int i = atomic_load(&a->nlog);
        if (i < (int)sizeof(a->log)) {
            a->log[i] = len > 0 ? s[0] : '-';
            atomic_store(&a->nlog, i + 1);
        }
        if (!out_copy(&c->out, "ok ", 3) || !out_copy(&c->out, s, len + 1))
            return net_conn_close(c), false;
        c->rstart += len + 1;
        done++;
        if (len == 5 && memcmp(s, "pause", 5) == 0) {  /* until the test says resume */
            net_conn_pause(c, true);
            a->paused_conn = c;
        }
        atomic_store(&c->last_active, atomic_load(&a->now));
        if (c->out.bytes > atomic_load(&a->max_pending))
            atomic_store(&a->max_pending, c->out.bytes);
        if (a->hiwat > 0 && c->out.bytes > a->hiwat && !net_conn_flush(c))
            return false;
    }
    atomic_store(&c->state, c->rstart != c->rend);      /* mid-request: not idle */
    t->left = c->rbuf + c->rstart;
    t->left_len = c->rend - c->rstart < sizeof(t->left_copy) ? c->rend - c->rstart : 0;
    if (t->left_len > 0)
        memcpy(t->left_copy, t->left, t->left_len);
    if (!c->want_write && !net_conn_flush(c))
        return false;
    if (t->blocked != c->want_write) {
        t->blocked = c->want_write;
        atomic_fetch_add(&a->blocked, t->blocked ? 1 : -1);
    }
    return true;
}

static void app_opened(struct net_conn *c) {
    struct app *a = app_of(c->w);
    ((struct tconn *)c)->id = atomic_fetch_add(&a->opened, 1);
    atomic_store(&a->listen_fd, c->listen_fd);
    atomic_store(&a->peer_family, c->peerlen > 0 ? c->peer.ss_family : -1);
    atomic_store(&c->last_active, atomic_load(&a->now));
}

static void app_closing(struct net_conn *c) {
    struct app *a = app_of(c->w);
    a->closing++;
    if (a->paused_conn == c)
        a->paused_conn = NULL;
    if (((struct tconn *)c)->blocked)
        a->blocked--;
}
static void app_release(struct net_conn *c) { app_of(c->w)->released++; }

static const struct net_conn_ops app_ops = {
    .conn_size = sizeof(struct tconn),
    .process = app_process,
    .opened = app_opened,
    .closing = app_closing,
    .release = app_release,
};

/*
 * After each round: close idle connections by the test's clock, resume
 * a paused connection (and run what waited in its rbuf), wait while parked.
 */
static void app_tick(struct net_worker *w) {
    struct app *a = app_of(w);
    uint32_t limit = atomic_load(&a->idle_limit);
    if (limit > 0)
        net_worker_close_idle(w, atomic_load(&a->now), limit);
    if (atomic_load(&a->resume) && a->paused_conn != NULL) {
        struct net_conn *c = a->paused_conn;
        a->paused_conn = NULL;
        atomic_store(&a->resume, false);
        net_conn_pause(c, false);
        app_process(c);
    }
    while (atomic_load(&a->park)) {
        atomic_store(&a->parked, true);
        sched_yield();
    }
    atomic_store(&a->parked, false);
    atomic_fetch_add(&a->ticks, 1);
}

static void no_release(void *ctx, void *ref) { (void)ctx, (void)ref; }

/*
 * A server of one worker running the application.  The app is on the
 * heap: a test that fails returns early and leaves its worker running,
 * which must not then share memory with the next test's.
 */
static inline struct app *app_start_io(int budget, size_t hiwat, enum net_io io,
                                       unsigned ring_bufs) {
    struct app *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return NULL;
    signal(SIGPIPE, SIG_IGN);
    a->budget = budget;
    a->hiwat = hiwat;
    a->srv.ops = &app_ops;
    a->srv.io = io;
    a->srv.ring_bufs = ring_bufs;
    a->ws[0] = &a->w;
    a->srv.workers = a->ws;
    a->srv.nworkers = 1;
    if (net_worker_init(&a->w, &a->srv, 0, &a->st, no_release, NULL) < 0)
        return NULL;
    a->w.tick = app_tick;
    return net_workers_start(&a->srv) == 0 ? a : NULL;
}

/* The back end app_start() gives the worker: the tests run once on each (main()). */
static enum net_io app_io = NET_IO_EPOLL;

static inline struct app *app_start(int budget, size_t hiwat) {
    return app_start_io(budget, hiwat, app_io, 0);
}

/* Runs every test on epoll, then on io_uring; nonzero if any failed. */
static inline int app_run_both(const char *file) {
    app_io = NET_IO_EPOLL;
    printf("== epoll\n");
    int failed = th_run(file);
    app_io = NET_IO_URING;
    printf("== io_uring\n");
    return th_run(file) | failed;
}

/* Stops the worker (closing what is open) and frees its resources; free(a) after. */
static inline void app_stop(struct app *a) {
    atomic_store(&a->srv.stop, true);           /* first: a parked worker takes nothing more */
    atomic_store(&a->park, false);
    net_workers_stop(&a->srv);
    net_worker_deinit(&a->w);
}

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits (at most 5 s) until cond holds, spinning. */
#define WAIT_FOR(cond) \
    do { double th_d = now_s() + 5; while (!(cond) && now_s() < th_d) sched_yield(); } while (0)

/* Waits until the worker has run two more rounds: whatever it was doing is done. */
static inline void settle(struct app *a) {
    uint64_t t0 = atomic_load(&a->ticks);
    double deadline = now_s() + 5;
    while (atomic_load(&a->ticks) < t0 + 2 && now_s() < deadline) {
        evloop_wake(a->w.loop);
        sched_yield();
    }
}

/*
 * A connected socketpair; the server's end goes to the worker (with a
 * send buffer of sndbuf bytes if not 0, and len bytes of data already
 * waiting in it, so that its first read takes them all); the client's end
 * is returned.
 */
static inline int app_connect_with(struct app *a, int sndbuf, const void *data, size_t len) {
    int fd[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) < 0)
        return -1;
    if (sndbuf > 0)
        setsockopt(fd[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    if (len > 0 && write(fd[0], data, len) != (ssize_t)len)
        return -1;
    struct sockaddr_storage peer = {.ss_family = AF_UNIX};
    atomic_fetch_add(&a->srv.curr_conns, 1);    /* as net_accept_all() does */
    atomic_fetch_add(&a->srv.total_conns, 1);
    net_worker_hand_fd(&a->w, fd[1], -1, &peer, sizeof(sa_family_t), false);
    return fd[0];
}

static inline int app_connect(struct app *a) { return app_connect_with(a, 0, NULL, 0); }

/* Writes all of buf, waiting (bounded) while the socket is full.  Bytes written. */
static inline size_t send_all(int fd, const void *buf, size_t len, int timeout_ms) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, (const char *)buf + done, len - done);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN)
            break;
        struct pollfd p = {fd, POLLOUT, 0};
        if (poll(&p, 1, timeout_ms) <= 0)
            break;
    }
    return done;
}

/* Reads exactly len bytes (bounded wait).  Bytes read; a short count on EOF or timeout. */
static inline size_t recv_n(int fd, char *buf, size_t len) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        if (n == 0 || errno != EAGAIN)
            break;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 5000) <= 0)
            break;
    }
    return got;
}

/* True when the server closed fd's other end (EOF within 5 s). */
static inline bool recv_eof(int fd) {
    char c;
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 5000) == 1 && read(fd, &c, 1) == 0;
}

static inline uint64_t rbufs(struct app *a) { return atomic_load(&a->w.rbufs); }
static inline uint64_t rbufs_idle(struct app *a) { return atomic_load(&a->w.rbufs_idle); }
/* Read buffers lent to connections now (the io_uring ring's are never lent for long). */
static inline uint64_t rbufs_lent(struct app *a) {
    return rbufs(a) - rbufs_idle(a) - atomic_load(&a->w.rbufs_ring);
}

/* Reads n answers to the lines "%09d\n" from first on, and checks them. */
static inline bool recv_answers(int fd, int first, int n) {
    char want[32], got[32];
    for (int i = first; i < first + n; i++) {
        sprintf(want, "ok %09d\n", i);
        if (recv_n(fd, got, 13) != 13 || memcmp(got, want, 13) != 0)
            return false;
    }
    return true;
}

/*
 * Parks the worker in its tick and hands it n descriptors;
 * whatever it is handed meanwhile, it takes in one round once unparked.
 */
static inline void park(struct app *a) {
    atomic_store(&a->park, true);
    evloop_wake(a->w.loop);
    WAIT_FOR(atomic_load(&a->parked));
}


#endif
