/*
 * fake_mc.h -- a small memcache server, in the test's own process, for the
 * libcellar tests: it speaks what msg_meta.c sends (mg ms md ma in the meta
 * protocol, version, flush_all) and answers as memcached 1.6 answers, or
 * misbehaves on the test's word.
 *
 * It owns a listening socket on 127.0.0.1 (an ephemeral port unless one is
 * asked for; f->addr is "127.0.0.1:<port>" for a configuration), up to
 * FK_CONNS connections, and a tiny key -> item table: flags, CAS, the
 * exptime as last sent (there is no clock here, so nothing expires), and
 * mg N lease placeholders (W to the first asker, Z to the rest).  Its
 * misbehaviours: f->mode (FK_HANG reads and counts requests but never
 * answers, FK_GARBAGE answers "garbage"), fake_close_after() (answer N,
 * then close on reading the next), f->delay_ms (sleep before each reply)
 * and f->gate_closed (hold every reply until opened).
 *
 * Threading: fake_start() starts one thread per fake, which polls a wake
 * pipe, the listener and the connections, and answers every whole request
 * a read brings.  The test thread may change the behaviour fields (all
 * atomic) and read the counters (requests, answered, ops[FK_*], accepted,
 * open_conns) at any time; the table is guarded by f->mu, which the
 * fake_*() accessors take.  fake_stop() opens the gate, wakes the thread,
 * joins it and frees everything, so it returns within a millisecond or so
 * of a delayed reply; it accepts NULL and sets *fp to NULL.  Memory comes
 * from malloc and running out aborts: this is test code.
 *
 * Use: f = fake_start() (NULL when it cannot listen), build a config over
 * f->addr, run the client, check with fake_is()/fake_has()/fake_value()/
 * fake_exptime() or the counters, fake_stop(&f).  now_ms() and sleep_ms(),
 * the clock the fake paces its replies by, are the tests' clock too.
 *
 * Each test file is its own program, so this is a header of static
 * functions, included by the one test file that uses it.
 */
#ifndef CELLAR_TEST_FAKE_MC_H
#define CELLAR_TEST_FAKE_MC_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "protocol/mc_meta.h"

/* Monotonic milliseconds: the fake's pacing clock, and the tests'. */
static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

enum fk_mode {
    FK_NORMAL = 0,              /* answers as memcached 1.6 */
    FK_HANG,                    /* reads (and counts) requests, never answers */
    FK_GARBAGE,                 /* answers every request with "garbage\r\n" */
};

enum fk_op { FK_MG, FK_MS, FK_MD, FK_MA, FK_VERSION, FK_FLUSH, FK_OTHER, FK_NOPS };

struct fk_item {
    char key[MC_KEY_MAX + 1];
    size_t nkey;
    char *val;
    size_t nval;
    uint32_t flags;
    int64_t exptime;            /* as the last ms/touch/gat sent it (no clock here) */
    uint64_t cas;
    bool lease_out;             /* an mg N placeholder whose W was handed out */
};

#define FK_CONNS 64

struct fk_conn {
    int fd;
    char *buf;
    size_t len, cap;
};

struct obuf {
    char *p;
    size_t len, cap;
};

struct fake {
    int lfd;
    int wake[2];
    uint16_t port;
    char addr[32];              /* "127.0.0.1:<port>" */
    pthread_t th;
    atomic_bool stop;
    /* Behaviour, set by the test at any time: */
    atomic_int mode;            /* enum fk_mode */
    atomic_int close_after;     /* > 0: answers that many requests (from when set), then
                                   closes the connection on reading the next */
    atomic_uint served;         /* requests seen since close_after was set */
    atomic_int delay_ms;        /* sleeps this long before each reply */
    atomic_bool gate_closed;    /* holds every reply until opened */
    /* Counters: */
    atomic_uint requests;       /* requests read (whatever the mode) */
    atomic_uint answered;       /* requests answered, or dropped unanswered */
    atomic_uint ops[FK_NOPS];
    atomic_uint accepted;       /* connections */
    atomic_uint open_conns;
    /* The table, guarded by mu (the test reads and writes it too): */
    pthread_mutex_t mu;
    struct fk_item *items;
    unsigned nitems, cap;
    uint64_t next_cas;
};

static void ob_put(struct obuf *o, const void *p, size_t n) {
    if (o->cap - o->len < n) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap - o->len < n)
            cap *= 2;
        char *b = realloc(o->p, cap);
        if (b == NULL)
            abort();
        o->p = b;
        o->cap = cap;
    }
    memcpy(o->p + o->len, p, n);
    o->len += n;
}

static void ob_str(struct obuf *o, const char *s) {
    ob_put(o, s, strlen(s));
}

static void ob_fmt(struct obuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ob_fmt(struct obuf *o, const char *fmt, ...) {
    char b[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof(b), fmt, ap);
    va_end(ap);
    ob_put(o, b, (size_t)n);
}

static struct fk_item *fk_find_locked(struct fake *f, const char *k, size_t n) {
    for (unsigned i = 0; i < f->nitems; i++)
        if (f->items[i].nkey == n && memcmp(f->items[i].key, k, n) == 0)
            return &f->items[i];
    return NULL;
}

static struct fk_item *fk_new_locked(struct fake *f, const char *k, size_t n) {
    if (f->nitems == f->cap) {
        unsigned cap = f->cap ? f->cap * 2 : 64;
        struct fk_item *it = realloc(f->items, cap * sizeof(*it));
        if (it == NULL)
            abort();
        f->items = it;
        f->cap = cap;
    }
    struct fk_item *it = &f->items[f->nitems++];
    memset(it, 0, sizeof(*it));
    memcpy(it->key, k, n);
    it->nkey = n;
    return it;
}

static void fk_del_locked(struct fake *f, struct fk_item *it) {
    free(it->val);
    *it = f->items[--f->nitems];
}

static void fk_clear_locked(struct fake *f) {
    for (unsigned i = 0; i < f->nitems; i++)
        free(f->items[i].val);
    f->nitems = 0;
}

static void fk_store_locked(struct fake *f, struct fk_item *it, const char *v, size_t n,
                            uint32_t flags, int64_t exptime) {
    char *nv = malloc(n + 1);
    if (nv == NULL)
        abort();
    memcpy(nv, v, n);
    nv[n] = '\0';
    free(it->val);
    it->val = nv;
    it->nval = n;
    it->flags = flags;
    it->exptime = exptime;
    it->cas = ++f->next_cas;
    it->lease_out = false;
}

/* The remaining TTL as mg's t shows it: -1 for none. */
static int64_t fk_ttl(const struct fk_item *it) {
    return it->exptime == 0 ? -1 : it->exptime;
}

/* mg: get, gets, gat, gats, touch, lease-get (N), with t where asked. */
static void fk_mg(struct fake *f, const struct mc_meta_req *rq, struct obuf *o) {
    pthread_mutex_lock(&f->mu);
    struct fk_item *it = fk_find_locked(f, rq->key.p, rq->key.len);
    bool won = false, z = false;
    if (it == NULL && mc_meta_has(rq, 'N')) {
        it = fk_new_locked(f, rq->key.p, rq->key.len);
        fk_store_locked(f, it, "", 0, 0, rq->vivify_ttl);
        it->lease_out = true;
        won = true;
    } else if (it && it->lease_out) {
        z = true;
    }
    if (it == NULL) {
        ob_str(o, "EN\r\n");
        pthread_mutex_unlock(&f->mu);
        return;
    }
    if (mc_meta_has(rq, 'T'))
        it->exptime = rq->ttl;
    if (!mc_meta_has(rq, 'v')) {
        ob_str(o, z ? "HD Z\r\n" : "HD\r\n");
        pthread_mutex_unlock(&f->mu);
        return;
    }
    ob_fmt(o, "VA %zu", it->nval);
    for (int i = 0; i < rq->nflags; i++) {
        switch (rq->flags[i].c) {
        case 'f': ob_fmt(o, " f%u", it->flags); break;
        case 'c': ob_fmt(o, " c%llu", (unsigned long long)it->cas); break;
        case 't': ob_fmt(o, " t%lld", won ? -1LL : (long long)fk_ttl(it)); break;
        default: break;
        }
    }
    if (won)
        ob_str(o, " W");
    if (z)
        ob_str(o, " Z");
    ob_str(o, "\r\n");
    ob_put(o, it->val, it->nval);
    ob_str(o, "\r\n");
    pthread_mutex_unlock(&f->mu);
}

/* ms: set add replace append prepend, and C (cas, lease-set). */
static void fk_ms(struct fake *f, const struct mc_meta_req *rq, const char *val,
                  struct obuf *o) {
    pthread_mutex_lock(&f->mu);
    struct fk_item *it = fk_find_locked(f, rq->key.p, rq->key.len);
    int64_t exptime = mc_meta_has(rq, 'T') ? rq->ttl : 0;
    const char *ans = "HD\r\n";
    if (mc_meta_has(rq, 'C')) {
        if (it == NULL)
            ans = "NF\r\n";
        else if (it->cas != rq->cas)
            ans = "EX\r\n";
        else
            fk_store_locked(f, it, val, rq->vlen, rq->client_flags, exptime);
    } else {
        switch (rq->mode) {
        case MC_META_MODE_ADD:
            if (it)
                ans = "NS\r\n";
            else
                fk_store_locked(f, fk_new_locked(f, rq->key.p, rq->key.len), val, rq->vlen,
                                rq->client_flags, exptime);
            break;
        case MC_META_MODE_REPLACE:
            if (it == NULL)
                ans = "NS\r\n";
            else
                fk_store_locked(f, it, val, rq->vlen, rq->client_flags, exptime);
            break;
        case MC_META_MODE_APPEND:
        case MC_META_MODE_PREPEND:
            if (it == NULL) {
                ans = "NS\r\n";
            } else {
                size_t n = it->nval + rq->vlen;
                char *b = malloc(n + 1);
                if (b == NULL)
                    abort();
                bool app = rq->mode == MC_META_MODE_APPEND;
                memcpy(b + (app ? 0 : rq->vlen), it->val, it->nval);
                memcpy(b + (app ? it->nval : 0), val, rq->vlen);
                fk_store_locked(f, it, b, n, it->flags, it->exptime);
                free(b);
            }
            break;
        default:
            if (it == NULL)
                it = fk_new_locked(f, rq->key.p, rq->key.len);
            fk_store_locked(f, it, val, rq->vlen, rq->client_flags, exptime);
            break;
        }
    }
    ob_str(o, ans);
    pthread_mutex_unlock(&f->mu);
}

static void fk_md(struct fake *f, const struct mc_meta_req *rq, struct obuf *o) {
    pthread_mutex_lock(&f->mu);
    struct fk_item *it = fk_find_locked(f, rq->key.p, rq->key.len);
    if (it)
        fk_del_locked(f, it);
    ob_str(o, it ? "HD\r\n" : "NF\r\n");
    pthread_mutex_unlock(&f->mu);
}

static void fk_ma(struct fake *f, const struct mc_meta_req *rq, struct obuf *o) {
    pthread_mutex_lock(&f->mu);
    struct fk_item *it = fk_find_locked(f, rq->key.p, rq->key.len);
    if (it == NULL) {
        ob_str(o, "NF\r\n");
        goto out;
    }
    uint64_t v = 0;
    bool num = it->nval > 0 && it->nval <= 20;
    for (size_t i = 0; num && i < it->nval; i++) {
        unsigned d = (unsigned)(it->val[i] - '0');
        num = d <= 9;
        v = v * 10 + d;
    }
    if (!num) {
        ob_str(o, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
        goto out;
    }
    if (rq->mode == MC_META_MODE_DECR)
        v = v < rq->delta ? 0 : v - rq->delta;
    else
        v += rq->delta;
    char digits[24];
    int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
    fk_store_locked(f, it, digits, (size_t)n, it->flags, it->exptime);
    ob_fmt(o, "VA %d\r\n%s\r\n", n, digits);
out:
    pthread_mutex_unlock(&f->mu);
}

static bool line_is(const char *p, size_t n, const char *word) {
    size_t w = strlen(word);
    return n >= w && memcmp(p, word, w) == 0 &&
           (n == w || p[w] == ' ' || p[w] == '\r' || p[w] == '\n');
}

static void send_all(int fd, struct obuf *o) {
    size_t off = 0;
    while (off < o->len) {
        ssize_t n = send(fd, o->p + off, o->len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;              /* the client went away (or SO_SNDTIMEO): drop it */
        off += (size_t)n;
    }
    o->len = 0;
}

/* Before a reply: the configured delay, and the gate. Replies so far go out first. */
static void fk_pace(struct fake *f, struct fk_conn *c, struct obuf *o) {
    int d = atomic_load(&f->delay_ms);
    if (d <= 0 && !atomic_load(&f->gate_closed))
        return;
    send_all(c->fd, o);
    int64_t until = now_ms() + d;
    while (!atomic_load(&f->stop) && (now_ms() < until || atomic_load(&f->gate_closed)))
        sleep_ms(1);
}

/*
 * Answers every whole request in c's buffer.  Returns 0 to keep the
 * connection, -1 to close it (close_after, or a line too long).
 */
static int fk_serve(struct fake *f, struct fk_conn *c, struct obuf *o) {
    size_t off = 0;
    int rc = 0;
    while (off < c->len && !atomic_load(&f->stop)) {
        const char *p = c->buf + off;
        size_t len = c->len - off, used;
        const char *nl = memchr(p, '\n', len);
        if (nl == NULL)
            break;
        size_t line = (size_t)(nl - p) + 1;
        struct mc_meta_req rq;
        enum fk_op op;
        bool bad = false;
        if (line_is(p, line, "version")) {
            op = FK_VERSION;
            used = line;
        } else if (line_is(p, line, "flush_all")) {
            op = FK_FLUSH;
            used = line;
        } else {
            size_t u = 0;
            enum mc_parse pr = mc_meta_parse(&rq, p, len, &u);
            if (pr == MC_PARSE_NEED_MORE)
                break;
            if (pr == MC_PARSE_CLOSE) {
                rc = -1;
                break;
            }
            used = u;
            if (pr == MC_PARSE_OK && rq.cmd == MC_META_MS)
                used += rq.vlen + 2;
            else if (pr != MC_PARSE_OK)
                used += rq.swallow, bad = true;
            if (used > len)
                break;          /* the data block is not all here yet */
            op = bad ? FK_OTHER
                 : rq.cmd == MC_META_MG ? FK_MG
                 : rq.cmd == MC_META_MS ? FK_MS
                 : rq.cmd == MC_META_MD ? FK_MD
                 : rq.cmd == MC_META_MA ? FK_MA : FK_OTHER;
        }
        off += used;
        atomic_fetch_add(&f->requests, 1);
        atomic_fetch_add(&f->ops[op], 1);
        int ca = atomic_load(&f->close_after);
        if (ca > 0 && (int)atomic_fetch_add(&f->served, 1) >= ca) {
            atomic_fetch_add(&f->answered, 1);
            rc = -1;
            break;
        }
        int mode = atomic_load(&f->mode);
        if (mode == FK_HANG) {
            atomic_fetch_add(&f->answered, 1);
            continue;
        }
        fk_pace(f, c, o);
        atomic_fetch_add(&f->answered, 1);
        if (mode == FK_GARBAGE) {
            ob_str(o, "garbage\r\n");
            continue;
        }
        switch (op) {
        case FK_VERSION: ob_str(o, "VERSION 1.6.18-fake\r\n"); break;
        case FK_FLUSH:
            pthread_mutex_lock(&f->mu);
            fk_clear_locked(f);
            pthread_mutex_unlock(&f->mu);
            ob_str(o, "OK\r\n");
            break;
        case FK_MG: fk_mg(f, &rq, o); break;
        case FK_MS: fk_ms(f, &rq, p + (used - rq.vlen - 2), o); break;
        case FK_MD: fk_md(f, &rq, o); break;
        case FK_MA: fk_ma(f, &rq, o); break;
        default:
            if (bad)
                ob_str(o, mc_meta_err_str(rq.err));
            else
                ob_str(o, "ERROR\r\n");
            break;
        }
    }
    memmove(c->buf, c->buf + off, c->len - off);
    c->len -= off;
    return rc;
}

static void fk_close(struct fake *f, struct fk_conn *c) {
    close(c->fd);
    free(c->buf);
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    atomic_fetch_sub(&f->open_conns, 1);
}

static void *fk_main(void *arg) {
    struct fake *f = arg;
    struct fk_conn conns[FK_CONNS];
    struct obuf o = {0};
    for (int i = 0; i < FK_CONNS; i++)
        conns[i] = (struct fk_conn){.fd = -1};
    while (!atomic_load(&f->stop)) {
        struct pollfd pf[FK_CONNS + 2];
        int idx[FK_CONNS + 2], n = 0;
        pf[n] = (struct pollfd){.fd = f->wake[0], .events = POLLIN};
        idx[n++] = -2;
        pf[n] = (struct pollfd){.fd = f->lfd, .events = POLLIN};
        idx[n++] = -1;
        for (int i = 0; i < FK_CONNS; i++) {
            if (conns[i].fd >= 0) {
                pf[n] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
                idx[n++] = i;
            }
        }
        if (poll(pf, (nfds_t)n, -1) < 0)
            continue;
        for (int k = 0; k < n && !atomic_load(&f->stop); k++) {
            if (pf[k].revents == 0)
                continue;
            if (idx[k] == -1) {
                int fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                    continue;
                int slot = 0;
                while (slot < FK_CONNS && conns[slot].fd >= 0)
                    slot++;
                if (slot == FK_CONNS) {
                    close(fd);
                    continue;
                }
                struct timeval tv = {2, 0};
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                conns[slot].fd = fd;
                atomic_fetch_add(&f->accepted, 1);
                atomic_fetch_add(&f->open_conns, 1);
                continue;
            }
            if (idx[k] < 0)
                continue;
            struct fk_conn *c = &conns[idx[k]];
            if (c->cap - c->len < 65536) {
                size_t cap = c->cap ? c->cap * 2 : 65536;
                while (cap - c->len < 65536)
                    cap *= 2;
                char *b = realloc(c->buf, cap);
                if (b == NULL)
                    abort();
                c->buf = b;
                c->cap = cap;
            }
            ssize_t got = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
            if (got < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (got <= 0) {
                fk_close(f, c);
                continue;
            }
            c->len += (size_t)got;
            int rc = fk_serve(f, c, &o);
            send_all(c->fd, &o);
            if (rc < 0)
                fk_close(f, c);
        }
    }
    for (int i = 0; i < FK_CONNS; i++)
        if (conns[i].fd >= 0)
            fk_close(f, &conns[i]);
    free(o.p);
    return NULL;
}

/* A fake server on 127.0.0.1:port (0: an ephemeral port); NULL if it cannot listen. */
static struct fake *fake_start_on(uint16_t port) {
    struct fake *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return NULL;
    pthread_mutex_init(&f->mu, NULL);
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(f->lfd, 128) < 0 || getsockname(f->lfd, (struct sockaddr *)&sa, &sl) < 0 ||
        pipe2(f->wake, O_CLOEXEC) < 0) {
        if (f->lfd >= 0)
            close(f->lfd);
        pthread_mutex_destroy(&f->mu);
        free(f);
        return NULL;
    }
    f->port = ntohs(sa.sin_port);
    snprintf(f->addr, sizeof(f->addr), "127.0.0.1:%u", f->port);
    if (pthread_create(&f->th, NULL, fk_main, f) != 0) {
        close(f->lfd);
        close(f->wake[0]);
        close(f->wake[1]);
        pthread_mutex_destroy(&f->mu);
        free(f);
        return NULL;
    }
    return f;
}

static struct fake *fake_start(void) {
    return fake_start_on(0);
}

static void fake_stop(struct fake **fp) {
    struct fake *f = *fp;
    if (f == NULL)
        return;
    atomic_store(&f->stop, true);
    atomic_store(&f->gate_closed, false);
    ssize_t w = write(f->wake[1], "x", 1);
    (void)w;
    pthread_join(f->th, NULL);
    close(f->lfd);
    close(f->wake[0]);
    close(f->wake[1]);
    fk_clear_locked(f);
    free(f->items);
    pthread_mutex_destroy(&f->mu);
    free(f);
    *fp = NULL;
}

static void fake_put(struct fake *f, const char *key, const char *val, uint32_t flags,
                     int64_t exptime) {
    pthread_mutex_lock(&f->mu);
    struct fk_item *it = fk_find_locked(f, key, strlen(key));
    if (it == NULL)
        it = fk_new_locked(f, key, strlen(key));
    fk_store_locked(f, it, val, strlen(val), flags, exptime);
    pthread_mutex_unlock(&f->mu);
}

static bool fake_has(struct fake *f, const char *key) {
    pthread_mutex_lock(&f->mu);
    bool has = fk_find_locked(f, key, strlen(key)) != NULL;
    pthread_mutex_unlock(&f->mu);
    return has;
}

/* The item's exptime as last sent, or INT64_MIN when the key is missing. */
static int64_t fake_exptime(struct fake *f, const char *key) {
    pthread_mutex_lock(&f->mu);
    struct fk_item *it = fk_find_locked(f, key, strlen(key));
    int64_t e = it ? it->exptime : INT64_MIN;
    pthread_mutex_unlock(&f->mu);
    return e;
}

/* A copy of key's value (malloc'd, NUL-terminated) and its length; NULL when missing. */
static char *fake_value(struct fake *f, const char *key, size_t *n, uint32_t *flags) {
    pthread_mutex_lock(&f->mu);
    struct fk_item *it = fk_find_locked(f, key, strlen(key));
    char *v = NULL;
    if (it) {
        v = malloc(it->nval + 1);
        memcpy(v, it->val, it->nval + 1);
        if (n)
            *n = it->nval;
        if (flags)
            *flags = it->flags;
    }
    pthread_mutex_unlock(&f->mu);
    return v;
}

/* Does key hold exactly val? */
static bool fake_is(struct fake *f, const char *key, const char *val) {
    size_t n = 0;
    char *v = fake_value(f, key, &n, NULL);
    bool same = v && n == strlen(val) && memcmp(v, val, n) == 0;
    free(v);
    return same;
}

static unsigned fake_reqs(struct fake *f) {
    return atomic_load(&f->requests);
}

/* Has the fake dealt with every request it read (no reply still being slept on)? */
static bool fake_idle(struct fake *f) {
    return atomic_load(&f->answered) == atomic_load(&f->requests);
}

static void fake_close_after(struct fake *f, int n) {
    atomic_store(&f->served, 0);
    atomic_store(&f->close_after, n);
}

#endif
