/*
 * metrics.c -- cellar-squeal's --metrics listener (metrics.h).
 *
 *   metrics thread: accept (blocking) -> read the request head (at most
 *   REQ_MAX bytes, READ_BUDGET_MS in all, 1 s per read) -> GET /metrics:
 *   render() into a text, answer in HTTP/1.0 -> close;  one scraper at a
 *   time, scrapes are rare.  Another path: 404; another method: 405.
 *
 * The delivery threads never wait for it: a slow scraper holds only this
 * thread.
 */
#include "squeal/metrics.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define REQ_MAX 8192                /* the request line and headers */
#define READ_BUDGET_MS 3000         /* to read them, in all */

void text_printf(struct text *t, const char *fmt, ...) {
    if (t->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->cap - t->len;
        int n = vsnprintf(t->p ? t->p + t->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = true;
            return;
        }
        if ((size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 4096;
        while (cap - t->len <= (size_t)n)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (p == NULL) {
            t->oom = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
}

void text_family(struct text *t, const char *name, const char *type, const char *help) {
    text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;                 /* gone, or not reading for a second */
        p += k;
        n -= (size_t)k;
    }
}

static void answer(int fd, const char *status, const char *type, const char *body, size_t n,
                   bool head_only) {
    char head[256];
    int hn = snprintf(head, sizeof(head),
                      "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n",
                      status, type, n);
    send_all(fd, head, (size_t)hn);
    if (!head_only)
        send_all(fd, body, n);
}

static void answer_text(int fd, const char *status, const char *body) {
    answer(fd, status, "text/plain; charset=utf-8", body, strlen(body), false);
}

/* The request head into buf: its length once a blank line ends it, or -1. */
static ssize_t read_head(int fd, char *buf, size_t cap) {
    size_t len = 0;
    int64_t until = mono_ms() + READ_BUDGET_MS;
    while (len < cap - 1) {
        ssize_t k = recv(fd, buf + len, cap - 1 - len, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        len += (size_t)k;
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n") != NULL || strstr(buf, "\n\n") != NULL)
            return (ssize_t)len;
        if (mono_ms() > until)
            return -1;
    }
    return -1;
}

/* One scrape: the request line's method and path decide. */
static void serve(struct metrics *m, int fd) {
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    char req[REQ_MAX];
    if (read_head(fd, req, sizeof(req)) < 0)
        return;
    char method[16], target[1024];
    if (sscanf(req, "%15s %1023s HTTP/%*d.%*d", method, target) != 2) {
        answer_text(fd, "400 Bad Request", "bad request\n");
        return;
    }
    bool head = strcmp(method, "HEAD") == 0;
    if (strcmp(method, "GET") != 0 && !head) {
        answer_text(fd, "405 Method Not Allowed", "only GET\n");
        return;
    }
    target[strcspn(target, "?#")] = '\0';       /* a query string is ignored */
    if (strcmp(target, "/metrics") != 0) {
        answer_text(fd, "404 Not Found", "not found; try /metrics\n");
        return;
    }
    struct text t = {0};
    m->render(m->arg, &t);
    if (t.oom)
        answer_text(fd, "500 Internal Server Error", "out of memory\n");
    else
        answer(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", t.p ? t.p : "",
               t.len, head);
    free(t.p);
}

static void *metrics_main(void *arg) {
    struct metrics *m = arg;
    while (!atomic_load(&m->stop)) {
        int fd = accept4(m->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (atomic_load(&m->stop))
                break;
            if (errno != EINTR && errno != ECONNABORTED) {
                struct timespec ts = {0, 50 * 1000000};   /* out of descriptors, say */
                nanosleep(&ts, NULL);
            }
            continue;
        }
        serve(m, fd);
        close(fd);
    }
    return NULL;
}

/* Splits "host:port", "[v6]:port" or ":port" in place: host ("" any), port. */
static bool split_hostport(char *s, char **host, char **port) {
    char *colon = strrchr(s, ':');
    if (colon == NULL || colon[1] == '\0')
        return false;
    *colon = '\0';
    *port = colon + 1;
    if (s[0] == '[') {
        size_t n = strlen(s);
        if (n < 2 || s[n - 1] != ']')
            return false;
        s[n - 1] = '\0';
        s++;
    }
    *host = s;
    return true;
}

int metrics_start(struct metrics *m, const char *hostport, metrics_render_fn render, void *arg,
                  char *err, size_t errlen) {
    m->fd = -1;
    m->render = render;
    m->arg = arg;
    char spec[256];
    char *host, *port;
    if (strlen(hostport) >= sizeof(spec) ||
        !split_hostport(strcpy(spec, hostport), &host, &port)) {
        snprintf(err, errlen, "expected HOST:PORT, got \"%s\"", hostport);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", hostport, gai_strerror(rc));
        return -1;
    }
    int fd = -1, saved = 0;
    for (struct addrinfo *a = ai; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 16) != 0) {
            saved = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", hostport, strerror(saved));
        return -1;
    }
    m->fd = fd;
    atomic_store(&m->stop, false);
    if (pthread_create(&m->thread, NULL, metrics_main, m) != 0) {
        snprintf(err, errlen, "cannot start its thread");
        close(fd);
        m->fd = -1;
        return -1;
    }
    return 0;
}

void metrics_stop(struct metrics *m) {
    if (m->fd < 0)
        return;
    atomic_store(&m->stop, true);
    shutdown(m->fd, SHUT_RDWR);     /* wakes accept() */
    pthread_join(m->thread, NULL);
    close(m->fd);
    m->fd = -1;
}
