/*
 * watch.c -- memcached's `watch`: live log lines for connections that ask.
 *
 *   worker thread                       watch thread
 *   engine lookup/store/evict --hook-->  (wakes every 1..100 ms while
 *   conn accepted/closed -------------+  anybody watches)
 *       | line formatted at once      |
 *       v                             |  each ring: take its bytes
 *   its own ring (worker_logbuf_size) +--> each line to the watchers of
 *   (full: the line is dropped)            its kind, in their buffers
 *                                          (watcher_logbuf_size; full:
 *                                          skipped, then "skipped=N")
 *                                          --> send() to the watcher's fd
 *
 * A line is made only while some watcher wants its kind (one relaxed load
 * per event otherwise), with memcached's fields: ts (unix seconds and
 * microseconds, the latter unpadded as memcached prints them), gid (one
 * counter for every line made, so lines of several workers can be put back
 * in order; a new watcher takes one too and sees only later lines), then
 * the event.  Kinds memcached accepts but cellard has nothing to report for
 * (rawcmds, sysevents, proxy*) are accepted and stay silent.
 *
 * The watching connection stays its worker's: the worker reads and drops
 * whatever the client sends and notices when it goes; only the watch
 * thread writes to it, and only under the hub lock, which the worker takes
 * to detach before it closes the fd.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>

#include "protocol/mc_uri.h"
#include "net/tls.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/server.h"
#include "server/watch.h"

#define WATCHER_MAX 20          /* memcached's WATCHER_LIMIT */
#define WATCH_LINE_MAX 1024           /* a line: ~130 bytes and a key URI-encoded (<= 750) */
#define BUF_MIN 4096            /* the least a ring or a watcher buffer gets */
#define SLEEP_MIN_MS 1
#define SLEEP_MAX_MS 100

struct ring {
    pthread_mutex_t mu;
    char *buf;                  /* entries: kind (1 byte), gid (8), length (2), line */
    size_t len, cap;
    uint64_t written, dropped;
    const int *cfd;             /* its worker's client fd in hand (NULL: not a worker's) */
};

struct watcher {
    struct conn *c;
    int fd;
    void *tls;                  /* its TLS session (the worker reads no more): NULL, plain */
    unsigned kinds;
    uint64_t min_gid;
    char *buf;
    size_t len, cap;
    uint64_t skipped;
};

struct watch_hub {
    pthread_mutex_t mu;         /* watchers, their buffers and the counters below */
    pthread_cond_t cv;
    pthread_t thread;
    bool stop, running;
    struct watcher *w[WATCHER_MAX];
    int n;
    _Atomic unsigned kinds;     /* what somebody watches (enum watch_kind) */
    _Atomic uint64_t gid;
    struct ring *rings;         /* one per worker, and one for every other thread */
    int nrings;
    char *scratch;              /* the watch thread's copy of a ring */
    uint64_t worker_written, worker_dropped, watcher_skipped, watcher_sent;
    struct engine *engine;
};

/* Which ring the current thread writes to (the last one: not a worker). */
static _Thread_local struct ring *tl_ring;

static const struct {
    const char *word;
    unsigned kind;
} words[] = {
    {"rawcmds", WATCH_SILENT},      {"evictions", WATCH_EVICTIONS}, {"fetchers", WATCH_FETCHERS},
    {"mutations", WATCH_MUTATIONS}, {"sysevents", WATCH_SILENT},    {"connevents", WATCH_CONNEVENTS},
    {"proxyreqs", WATCH_SILENT},    {"proxyevents", WATCH_SILENT},  {"proxyuser", WATCH_SILENT},
};

/* memcached's words for a store's command */
static const char *const store_cmd[] = {
    [ENGINE_SET] = "set",         [ENGINE_ADD] = "add",         [ENGINE_REPLACE] = "replace",
    [ENGINE_APPEND] = "append",   [ENGINE_PREPEND] = "prepend", [ENGINE_CAS] = "cas",
};

static struct ring *ring_here(struct watch_hub *h) {
    return tl_ring != NULL ? tl_ring : &h->rings[h->nrings - 1];
}

/* The client fd this thread is serving, for an engine event's line (-1: none). */
static int cfd_here(struct watch_hub *h) {
    const struct ring *r = ring_here(h);
    return r->cfd != NULL ? *r->cfd : -1;
}

/* Adds a finished line (after its "ts=... gid=... " head) to this thread's ring. */
static void ring_put(struct watch_hub *h, unsigned kind, uint64_t gid, const char *line,
                     size_t n) {
    struct ring *r = ring_here(h);
    pthread_mutex_lock(&r->mu);
    if (r->len + 11 + n > r->cap) {
        r->dropped++;
    } else {
        char *p = r->buf + r->len;
        uint16_t len = (uint16_t)n;
        p[0] = (char)kind;
        memcpy(p + 1, &gid, 8);
        memcpy(p + 9, &len, 2);
        memcpy(p + 11, line, n);
        r->len += 11 + n;
        r->written++;
    }
    pthread_mutex_unlock(&r->mu);
}

/* Starts a line: "ts=<s>.<us> gid=<n> ", and takes its gid. */
static int line_head(struct watch_hub *h, char *line, uint64_t *gid) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    *gid = atomic_fetch_add_explicit(&h->gid, 1, memory_order_relaxed) + 1;
    return snprintf(line, WATCH_LINE_MAX, "ts=%lld.%d gid=%" PRIu64 " ", (long long)tv.tv_sec,
                    (int)tv.tv_usec, *gid);
}

static bool wants(const struct watch_hub *h, unsigned kind) {
    return (atomic_load_explicit(&h->kinds, memory_order_relaxed) & kind) != 0;
}

/* A line: its head, then fmt; put in this thread's ring. */
__attribute__((format(printf, 3, 4))) static void emit(struct watch_hub *h, unsigned kind,
                                                       const char *fmt, ...) {
    char line[WATCH_LINE_MAX];
    uint64_t gid;
    int n = line_head(h, line, &gid);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)(n + m) >= sizeof(line))
        return;
    ring_put(h, kind, gid, line, (size_t)(n + m));
}

/* The engine's hook: lookups, stores and evictions as memcached words them. */
static void on_engine(void *arg, const struct engine_watch_event *ev) {
    static const char *const store_status[] = {
        [ENGINE_STORED] = "stored",       [ENGINE_NOT_STORED] = "not_stored",
        [ENGINE_EXISTS] = "exists",       [ENGINE_NOT_FOUND] = "not_found",
        [ENGINE_STORE_NO_MEMORY] = "no_memory",
    };
    struct watch_hub *h = arg;
    char key[ENGINE_KEY_MAX * 3 + 1];
    const struct item *it = ev->it;
    switch (ev->kind) {
    case ENGINE_WATCH_FETCH:
        if (!wants(h, WATCH_FETCHERS))
            return;
        *mc_uri_encode(key, ev->key, (unsigned)ev->nkey) = '\0';
        emit(h, WATCH_FETCHERS,
             "type=item_get key=%s status=%s clsid=%u cfd=%d size=%" PRIu32 "\n", key,
             it != NULL                            ? "found"
             : ev->miss == ENGINE_MISS_EXPIRED ? "expired"
             : ev->miss == ENGINE_MISS_FLUSHED ? "flushed"
                                               : "not_found",
             it != NULL ? item_clsid(it) : 0, cfd_here(h),
             it != NULL ? item_nbytes(it) : 0);
        return;
    case ENGINE_WATCH_STORE:
        if (!wants(h, WATCH_MUTATIONS))
            return;
        *mc_uri_encode(key, item_key(it), item_nkey(it)) = '\0';
        /* memcached prints the seconds left as unsigned, 0 for never */
        emit(h, WATCH_MUTATIONS,
             "type=item_store key=%s status=%s cmd=%s ttl=%" PRIu32 " clsid=%u cfd=%d size=%" PRIu32
             "\n",
             key, store_status[ev->status], store_cmd[ev->op],
             ev->ttl < 0 ? 0 : (uint32_t)ev->ttl, item_clsid(it), cfd_here(h), item_nbytes(it));
        return;
    case ENGINE_WATCH_EVICT:
        if (!wants(h, WATCH_EVICTIONS))
            return;
        *mc_uri_encode(key, item_key(it), item_nkey(it)) = '\0';
        emit(h, WATCH_EVICTIONS,
             "type=eviction key=%s fetch=%s ttl=%lld la=%" PRIu32 " clsid=%u size=%" PRIu32 "\n",
             key, item_fetched(it) ? "yes" : "no", (long long)ev->ttl, ev->idle, item_clsid(it),
             item_nbytes(it));
        return;
    }
}

void watch_refused_store(struct server *s, int cfd, const char *k, size_t nk,
                         enum engine_store_op op, bool too_large) {
    struct watch_hub *h = s->watch;
    if (!wants(h, WATCH_MUTATIONS))
        return;
    char key[ENGINE_KEY_MAX * 3 + 1];
    *mc_uri_encode(key, k, (unsigned)(nk > ENGINE_KEY_MAX ? ENGINE_KEY_MAX : nk)) = '\0';
    emit(h, WATCH_MUTATIONS, "type=item_store key=%s status=%s cmd=%s ttl=0 clsid=0 cfd=%d size=0\n",
         key, too_large ? "too_large" : "no_memory", store_cmd[op], cfd);
}

/* Writes the peer of c as memcached does: address and port, or "unix" and 0. */
static void peer_name(const struct conn *c, char *ip, size_t n, unsigned *port, const char **tr) {
    const struct sockaddr_storage *a = &c->net.peer;
    *port = 0;
    *tr = c->is_udp ? "udp" : "tcp";
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)a;
        inet_ntop(AF_INET, &in->sin_addr, ip, (socklen_t)n);
        *port = ntohs(in->sin_port);
    } else if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in = (const struct sockaddr_in6 *)a;
        inet_ntop(AF_INET6, &in->sin6_addr, ip, (socklen_t)n);
        *port = ntohs(in->sin6_port);
    } else {
        snprintf(ip, n, "unix");
        *tr = "local";
    }
}

void watch_conn_event(struct conn *c, bool open, const char *reason) {
    struct watch_hub *h = c->ctx->srv->watch;
    if (!wants(h, WATCH_CONNEVENTS))
        return;
    char ip[INET6_ADDRSTRLEN + 1];
    unsigned port;
    const char *tr;
    peer_name(c, ip, sizeof(ip), &port, &tr);
    if (open)
        emit(h, WATCH_CONNEVENTS, "type=conn_new rip=%s rport=%u transport=%s cfd=%d\n", ip,
             port, tr, c->net.fd);
    else
        emit(h, WATCH_CONNEVENTS,
             "type=conn_close rip=%s rport=%u transport=%s reason=%s cfd=%d\n", ip, port, tr,
             reason, c->net.fd);
}

/* Under h->mu: what the watchers want, told to the engine too. */
static void kinds_update(struct watch_hub *h) {
    unsigned k = 0;
    for (int i = 0; i < WATCHER_MAX; i++)
        if (h->w[i] != NULL)
            k |= h->w[i]->kinds;
    atomic_store_explicit(&h->kinds, k, memory_order_relaxed);
    engine_watch_set(h->engine, ((k & WATCH_FETCHERS) ? ENGINE_WATCH_FETCH : 0) |
                                    ((k & WATCH_MUTATIONS) ? ENGINE_WATCH_STORE : 0) |
                                    ((k & WATCH_EVICTIONS) ? ENGINE_WATCH_EVICT : 0));
}

/* Under h->mu: sends what w holds.  A watcher that cannot take more stays; one
   whose socket failed is left for its worker, which sees the failure too. */
static void watcher_send(struct watcher *w) {
    size_t off = 0;
    while (off < w->len) {
        ssize_t r = w->tls ? net_tls_send(w->tls, w->buf + off, w->len - off)
                           : send(w->fd, w->buf + off, w->len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
                off = w->len;       /* gone: drop what it would have had */
            break;
        }
        off += (size_t)r;
    }
    memmove(w->buf, w->buf + off, w->len - off);
    w->len -= off;
}

/* Under h->mu: a line to every watcher of its kind that was there before it. */
static void deliver(struct watch_hub *h, unsigned kind, uint64_t gid, const char *line,
                    size_t n) {
    for (int i = 0; i < WATCHER_MAX; i++) {
        struct watcher *w = h->w[i];
        if (w == NULL || !(w->kinds & kind) || gid < w->min_gid)
            continue;
        char note[32];
        int nn = w->skipped > 0 ? snprintf(note, sizeof(note), "skipped=%" PRIu64 "\n", w->skipped)
                                : 0;
        if (w->len + (size_t)nn + n > w->cap) {
            w->skipped++;
            h->watcher_skipped++;
            continue;
        }
        memcpy(w->buf + w->len, note, (size_t)nn);
        memcpy(w->buf + w->len + nn, line, n);
        w->len += (size_t)nn + n;
        w->skipped = 0;
        h->watcher_sent++;
    }
}

/* Takes every ring's lines to the watchers.  Returns whether there were any. */
static bool collect(struct watch_hub *h) {
    bool any = false;
    for (int i = 0; i < h->nrings; i++) {
        struct ring *r = &h->rings[i];
        pthread_mutex_lock(&r->mu);
        size_t len = r->len;
        memcpy(h->scratch, r->buf, len);
        r->len = 0;
        h->worker_written += r->written;
        h->worker_dropped += r->dropped;
        r->written = r->dropped = 0;
        pthread_mutex_unlock(&r->mu);
        for (size_t off = 0; off < len;) {
            uint64_t gid;
            uint16_t n;
            memcpy(&gid, h->scratch + off + 1, 8);
            memcpy(&n, h->scratch + off + 9, 2);
            deliver(h, (unsigned char)h->scratch[off], gid, h->scratch + off + 11, n);
            off += 11 + (size_t)n;
        }
        any |= len > 0;
    }
    return any;
}

static void *watch_main(void *arg) {
    struct watch_hub *h = arg;
    unsigned sleep_ms = SLEEP_MIN_MS;
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        if (h->n == 0) {
            pthread_cond_wait(&h->cv, &h->mu);
            continue;
        }
        bool any = collect(h);
        bool pending = false;
        for (int i = 0; i < WATCHER_MAX; i++) {
            if (h->w[i] != NULL) {
                watcher_send(h->w[i]);
                pending |= h->w[i]->len > 0;
            }
        }
        /* memcached's rhythm: quicker while lines come, slower while none do */
        sleep_ms = any || pending ? SLEEP_MIN_MS : sleep_ms * 2 > SLEEP_MAX_MS ? SLEEP_MAX_MS
                                                                              : sleep_ms * 2;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)sleep_ms * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->cv, &h->mu, &until);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

int watch_init(struct server *s) {
    struct watch_hub *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return -1;
    s->watch = h;
    h->engine = s->engine;
    h->nrings = s->nworkers + 1;
    h->rings = calloc((size_t)h->nrings, sizeof(struct ring));
    size_t ring = s->cfg->worker_logbuf_size > BUF_MIN ? s->cfg->worker_logbuf_size : BUF_MIN;
    h->scratch = malloc(ring);
    if (h->rings == NULL || h->scratch == NULL)
        return -1;
    for (int i = 0; i < h->nrings; i++) {
        pthread_mutex_init(&h->rings[i].mu, NULL);
        h->rings[i].cap = ring;
        h->rings[i].buf = malloc(h->rings[i].cap);
        if (h->rings[i].buf == NULL)
            return -1;
    }
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    engine_watch_hook(s->engine, on_engine, h);
    if (pthread_create(&h->thread, NULL, watch_main, h) != 0)
        return -1;
    h->running = true;
    return 0;
}

void watch_bind_thread(struct server *s, int worker, const int *cfd) {
    tl_ring = &s->watch->rings[worker];
    tl_ring->cfd = cfd;
}

void watch_stop(struct server *s) {
    struct watch_hub *h = s->watch;
    if (h == NULL || !h->running)
        return;
    pthread_mutex_lock(&h->mu);
    h->stop = true;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    h->running = false;
}

void watch_free(struct server *s) {
    struct watch_hub *h = s->watch;
    if (h == NULL)
        return;
    watch_stop(s);
    for (int i = 0; i < WATCHER_MAX; i++) {
        if (h->w[i] != NULL) {
            free(h->w[i]->buf);
            free(h->w[i]);
        }
    }
    if (h->rings != NULL) {
        for (int i = 0; i < h->nrings; i++) {
            free(h->rings[i].buf);
            pthread_mutex_destroy(&h->rings[i].mu);
        }
    }
    free(h->rings);
    free(h->scratch);
    free(h);
    s->watch = NULL;
}

void watch_command(struct conn *c, const struct mc_req *req) {
    unsigned kinds = 0;
    for (int i = 1; i < req->ntokens; i++) {
        unsigned k = 0;
        for (size_t j = 0; j < sizeof(words) / sizeof(words[0]) && k == 0; j++)
            if (mc_req_word_is(req, i, words[j].word))
                k = words[j].kind;
        if (k == 0) {
            if (!req->noreply)
                out_copy(&c->net.out, S("ERROR\r\n"));
            return;
        }
        kinds |= k;
    }
    c->watch_kinds = kinds != 0 ? kinds : WATCH_FETCHERS;
    struct watch_hub *h = c->ctx->srv->watch;
    pthread_mutex_lock(&h->mu);
    bool full = h->n >= WATCHER_MAX;
    pthread_mutex_unlock(&h->mu);
    if (full) {
        out_copy(&c->net.out, S("WATCHER_TOO_MANY log watcher limit reached\r\n"));
        return;
    }
    /* What the client sent after the watch line is never run (as in memcached). */
    c->net.rstart = c->net.rend;
    conn_set_state(c, CONN_WATCH);
}

bool watch_attach(struct conn *c) {
    struct watch_hub *h = c->ctx->srv->watch;
    struct watcher *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return false;
    w->c = c;
    w->fd = c->net.fd;
    w->tls = c->net.tls;
    w->kinds = c->watch_kinds;
    w->cap = c->ctx->cfg->watcher_logbuf_size > BUF_MIN ? c->ctx->cfg->watcher_logbuf_size
                                                            : BUF_MIN;
    w->buf = malloc(w->cap);
    if (w->buf == NULL) {
        free(w);
        return false;
    }
    memcpy(w->buf, "OK\r\n", 4);
    w->len = 4;
    pthread_mutex_lock(&h->mu);
    int slot = -1;
    for (int i = 0; i < WATCHER_MAX && slot < 0; i++)
        if (h->w[i] == NULL)
            slot = i;
    if (slot >= 0) {
        w->min_gid = atomic_fetch_add_explicit(&h->gid, 1, memory_order_relaxed) + 1;
        h->w[slot] = w;
        h->n++;
        kinds_update(h);
        pthread_cond_signal(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
    if (slot < 0) {
        free(w->buf);
        free(w);
        return false;
    }
    c->watcher = w;
    return true;
}

void watch_detach(struct conn *c) {
    struct watch_hub *h = c->ctx->srv->watch;
    struct watcher *w = c->watcher;
    if (w == NULL)
        return;
    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < WATCHER_MAX; i++) {
        if (h->w[i] == w) {
            h->w[i] = NULL;
            h->n--;
        }
    }
    kinds_update(h);
    pthread_mutex_unlock(&h->mu);
    free(w->buf);
    free(w);
    c->watcher = NULL;
}

void watch_stats(struct server *s, struct watch_counts *out) {
    struct watch_hub *h = s->watch;
    pthread_mutex_lock(&h->mu);
    *out = (struct watch_counts){
        .worker_written = h->worker_written,
        .worker_dropped = h->worker_dropped,
        .watcher_skipped = h->watcher_skipped,
        .watcher_sent = h->watcher_sent,
        .watchers = (uint64_t)h->n,
    };
    pthread_mutex_unlock(&h->mu);
}
