/*
 * null_server.c -- the ceiling: a memcache text server that stores nothing.
 *
 * Every get or gets key is a hit with the same 100-byte value, every
 * storage command (set, add, replace, append, prepend, cas) answers STORED
 * once its data block has arrived, delete DELETED, touch TOUCHED, incr and
 * decr 0, version/flush_all/verbosity/stats what a client expects, and
 * anything else ERROR.  What it measures is the cost of the network and of
 * the protocol alone, with the loop every fast server has:
 *
 *   epoll_wait --> read() once --> answer every whole request into one
 *       ^          buffer --> one write() for all of them
 *       |                              | socket full: wait for EPOLLOUT,
 *       +------------------------------+ read nothing more until drained
 *
 * Self-contained on purpose (bench/compare builds it from this one file),
 * so it shares no code with cellard.  Takes memcached's flags: -p port,
 * -l address, -t threads (1; each thread its own epoll, the listening
 * socket shared with EPOLLEXCLUSIVE); the others are accepted and ignored.
 * Runs until SIGINT or SIGTERM.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define VALUE_LEN 100
#define RBUF_INIT 65536
#define OBUF_INIT 65536
#define LINE_MAX_BYTES (1u << 20)       /* a longer line without "\n" closes the connection */

static char value[VALUE_LEN];

struct conn {
    int fd;
    bool out_wait;                      /* waiting for EPOLLOUT */
    char *rbuf;
    size_t rlen, rcap;
    char *obuf;
    size_t olen, ooff, ocap;
};

static bool reserve(struct conn *c, size_t n) {
    if (c->ocap - c->olen >= n)
        return true;
    size_t cap = c->ocap;
    while (cap - c->olen < n)
        cap *= 2;
    char *p = realloc(c->obuf, cap);
    if (p == NULL)
        return false;
    c->obuf = p;
    c->ocap = cap;
    return true;
}

static bool out(struct conn *c, const void *p, size_t n) {
    if (!reserve(c, n))
        return false;
    memcpy(c->obuf + c->olen, p, n);
    c->olen += n;
    return true;
}
#define OUT(c, lit) out((c), lit, sizeof(lit) - 1)

static bool word_is(const char *w, size_t n, const char *lit) {
    return n == strlen(lit) && memcmp(w, lit, n) == 0;
}

/* The next space-separated word of [*p, end); false when none is left. */
static bool next_word(const char **p, const char *end, const char **w, size_t *n) {
    const char *s = *p;
    while (s < end && *s == ' ')
        s++;
    if (s == end)
        return false;
    const char *e = s;
    while (e < end && *e != ' ')
        e++;
    *w = s;
    *n = (size_t)(e - s);
    *p = e;
    return true;
}

/* "VALUE <key> 0 100[ 1]\r\n<value>\r\n" for every key, then "END\r\n". */
static bool answer_get(struct conn *c, const char *p, const char *end, bool cas) {
    const char *k;
    size_t kn;
    while (next_word(&p, end, &k, &kn)) {
        if (!reserve(c, kn + 32 + VALUE_LEN))
            return false;
        char *o = c->obuf + c->olen;
        memcpy(o, "VALUE ", 6);
        o += 6;
        memcpy(o, k, kn);
        o += kn;
        if (cas) {
            memcpy(o, " 0 100 1\r\n", 10);
            o += 10;
        } else {
            memcpy(o, " 0 100\r\n", 8);
            o += 8;
        }
        memcpy(o, value, VALUE_LEN);
        o += VALUE_LEN;
        memcpy(o, "\r\n", 2);
        o += 2;
        c->olen = (size_t)(o - c->obuf);
    }
    return OUT(c, "END\r\n");
}

/*
 * Answers every whole request in rbuf.  Returns false when the
 * connection must close (quit, a line too long, out of memory).
 */
static bool process(struct conn *c) {
    char *p = c->rbuf, *end = c->rbuf + c->rlen;
    bool ok = true;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) {
            if ((size_t)(end - p) > LINE_MAX_BYTES)
                ok = false;
            break;
        }
        const char *le = nl > p && nl[-1] == '\r' ? nl - 1 : nl;
        const char *q = p, *w;
        size_t wn;
        char *next = nl + 1;
        if (!next_word(&q, le, &w, &wn)) {
            ok = OUT(c, "ERROR\r\n");
        } else if (word_is(w, wn, "get")) {
            ok = answer_get(c, q, le, false);
        } else if (word_is(w, wn, "gets")) {
            ok = answer_get(c, q, le, true);
        } else if (word_is(w, wn, "set") || word_is(w, wn, "add") || word_is(w, wn, "replace") ||
                   word_is(w, wn, "append") || word_is(w, wn, "prepend") ||
                   word_is(w, wn, "cas")) {
            /* <cmd> <key> <flags> <exptime> <bytes> [cas] [noreply] */
            const char *t[6];
            size_t tn[6];
            int n = 0;
            while (n < 6 && next_word(&q, le, &t[n], &tn[n]))
                n++;
            if (n < 4) {
                ok = OUT(c, "ERROR\r\n");
            } else {
                size_t bytes = (size_t)strtoull(t[3], NULL, 10);
                if ((size_t)(end - next) < bytes + 2)
                    break;                          /* data not all here yet */
                next += bytes + 2;
                if (!word_is(t[n - 1], tn[n - 1], "noreply"))
                    ok = OUT(c, "STORED\r\n");
            }
        } else if (word_is(w, wn, "delete")) {
            ok = OUT(c, "DELETED\r\n");
        } else if (word_is(w, wn, "touch")) {
            ok = OUT(c, "TOUCHED\r\n");
        } else if (word_is(w, wn, "incr") || word_is(w, wn, "decr")) {
            ok = OUT(c, "0\r\n");
        } else if (word_is(w, wn, "version")) {
            ok = OUT(c, "VERSION 1.6.18-null\r\n");
        } else if (word_is(w, wn, "flush_all") || word_is(w, wn, "verbosity")) {
            ok = OUT(c, "OK\r\n");
        } else if (word_is(w, wn, "stats")) {
            ok = OUT(c, "END\r\n");
        } else if (word_is(w, wn, "quit")) {
            ok = false;
        } else {
            ok = OUT(c, "ERROR\r\n");
        }
        if (!ok)
            break;
        p = next;
    }
    size_t used = (size_t)(p - c->rbuf);
    memmove(c->rbuf, p, c->rlen - used);
    c->rlen -= used;
    return ok;
}

static void conn_close(int ep, struct conn *c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->rbuf);
    free(c->obuf);
    free(c);
}

/* One write of everything pending.  Returns false on error. */
static bool flush_out(int ep, struct conn *c) {
    while (c->ooff < c->olen) {
        ssize_t n = write(c->fd, c->obuf + c->ooff, c->olen - c->ooff);
        if (n > 0) {
            c->ooff += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->out_wait) {
                struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                c->out_wait = true;
            }
            return true;
        }
        return false;
    }
    c->ooff = c->olen = 0;
    if (c->out_wait) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->out_wait = false;
    }
    return true;
}

static void on_readable(int ep, struct conn *c) {
    if (c->rcap - c->rlen < 4096) {
        char *p = realloc(c->rbuf, c->rcap * 2);
        if (p == NULL) {
            conn_close(ep, c);
            return;
        }
        c->rbuf = p;
        c->rcap *= 2;
    }
    ssize_t n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        conn_close(ep, c);
        return;
    }
    c->rlen += (size_t)n;
    bool keep = process(c);
    if (!flush_out(ep, c) || !keep)
        conn_close(ep, c);
}

static void on_accept(int ep, int lfd) {
    for (int i = 0; i < 64; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;                 /* EAGAIN: another thread took it, or none left */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = calloc(1, sizeof(*c));
        if (c) {
            c->fd = fd;
            c->rcap = RBUF_INIT;
            c->ocap = OBUF_INIT;
            c->rbuf = malloc(c->rcap);
            c->obuf = malloc(c->ocap);
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (!c || !c->rbuf || !c->obuf || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            if (c) {
                free(c->rbuf);
                free(c->obuf);
                free(c);
            }
            close(fd);
        }
    }
}

static int listen_fd;

static void *worker(void *arg) {
    (void)arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = NULL};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &lev) < 0) {
        perror("null_server: epoll");
        exit(1);
    }
    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c == NULL)
                on_accept(ep, listen_fd);
            else if (c->out_wait) {
                if (!flush_out(ep, c))
                    conn_close(ep, c);
            } else
                on_readable(ep, c);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *host = "0.0.0.0", *port = "11211";
    int threads = 1, o;
    /* memcached's flags: the ones that matter here, and the others swallowed. */
    while ((o = getopt(argc, argv, "p:l:t:m:c:U:u:R:b:I:f:n:o:B:s:a:D:e:P:vMCLAhkrdFXW")) != -1) {
        switch (o) {
        case 'p': port = optarg; break;
        case 'l': host = optarg; break;
        case 't': threads = atoi(optarg); break;
        case 'h':
            printf("null_server [-p port] [-l addr] [-t threads] (other memcached flags ignored)\n");
            return 0;
        case '?': return 1;
        default: break;
        }
    }
    if (threads < 1 || threads > 256) {
        fprintf(stderr, "null_server: -t must be 1..256\n");
        return 1;
    }
    for (int i = 0; i < VALUE_LEN; i++)
        value[i] = (char)('a' + i % 26);
    signal(SIGPIPE, SIG_IGN);

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE}, *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "null_server: %s:%s: %s\n", host, port, gai_strerror(rc));
        return 1;
    }
    listen_fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (listen_fd < 0 || bind(listen_fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
        listen(listen_fd, 1024) < 0) {
        fprintf(stderr, "null_server: %s:%s: %s\n", host, port, strerror(errno));
        return 1;
    }
    freeaddrinfo(ai);
    pthread_t tid;
    for (int i = 1; i < threads; i++)
        pthread_create(&tid, NULL, worker, NULL);
    worker(NULL);
    return 0;
}
