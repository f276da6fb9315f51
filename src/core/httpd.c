/*
 * httpd.c -- the --metrics listener every cellar daemon shares (httpd.h).
 *
 *   httpd thread: accept (blocking) -> read the request head (at most
 *   HTTPD_REQ_MAX bytes, HTTPD_READ_MS in all, 1 s per read) -> GET path:
 *   render() into a text, answer in HTTP/1.0 (1 s per write, the whole
 *   connection HTTPD_CONN_MS) -> close;  one client at a time.  Another path: 404; another method: 405; no request line: 400.
 *
 * httpd_destroy() sets stop and shuts the listening socket down, which
 * makes the blocking accept() return at once.
 */
#include "core/httpd.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

struct httpd {
    int fd;                         /* listening */
    atomic_bool stop;
    pthread_t thread;
    char path[128];
    httpd_render_fn render;
    void *arg;
    int64_t until;                  /* the connection being served ends by then */
};

/* Sends until done, the peer goes, or the connection's time or the listener is up. */
static void send_all(struct httpd *h, int fd, const char *p, size_t n) {
    while (n > 0) {
        if (atomic_load(&h->stop) || (int64_t)clock_mono_ms() > h->until)
            return;
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;                 /* gone, or not reading for a second */
        p += k;
        n -= (size_t)k;
    }
}

static void answer(struct httpd *h, int fd, const char *status, const char *type,
                   const char *body, size_t n, bool head_only) {
    char head[256];
    int hn = snprintf(head, sizeof(head),
                      "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n",
                      status, type, n);
    send_all(h, fd, head, (size_t)hn);
    if (!head_only)
        send_all(h, fd, body, n);
}

static void answer_text(struct httpd *h, int fd, const char *status, const char *body) {
    answer(h, fd, status, "text/plain; charset=utf-8", body, strlen(body), false);
}

/*
 * Reads the request head into buf: its length once a blank line ends it
 * (only the request line is used), or -1 (closed, too long, too slow).
 */
static ssize_t read_head(int fd, char *buf, size_t cap) {
    size_t len = 0;
    int64_t until = (int64_t)clock_mono_ms() + HTTPD_READ_MS;
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
        if ((int64_t)clock_mono_ms() > until)
            return -1;
    }
    return -1;
}

/* One request: the request line's method and path decide. */
static void serve(struct httpd *h, int fd) {
    h->until = (int64_t)clock_mono_ms() + HTTPD_CONN_MS;
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    char req[HTTPD_REQ_MAX];
    if (read_head(fd, req, sizeof(req)) < 0)
        return;
    char method[16], target[1024];
    if (sscanf(req, "%15s %1023s HTTP/%*d.%*d", method, target) != 2) {
        answer_text(h, fd, "400 Bad Request", "bad request\n");
        return;
    }
    bool head = strcmp(method, "HEAD") == 0;
    if (strcmp(method, "GET") != 0 && !head) {
        answer_text(h, fd, "405 Method Not Allowed", "only GET\n");
        return;
    }
    target[strcspn(target, "?#")] = '\0';       /* a query string is ignored */
    if (strcmp(target, h->path) != 0) {
        char msg[200];
        snprintf(msg, sizeof(msg), "not found; try %s\n", h->path);
        answer_text(h, fd, "404 Not Found", msg);
        return;
    }
    struct text t = {0};
    h->render(h->arg, &t);
    if (t.oom)
        answer_text(h, fd, "500 Internal Server Error", "out of memory\n");
    else
        answer(h, fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", t.p ? t.p : "",
               t.len, head);
    free(t.p);
}

static void *httpd_main(void *arg) {
    struct httpd *h = arg;
    while (!atomic_load(&h->stop)) {
        int fd = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (atomic_load(&h->stop))
                break;
            if (errno != EINTR && errno != ECONNABORTED) {
                /* out of descriptors, say: wait a moment rather than spin */
                struct timespec ts = {0, 50 * 1000000};
                nanosleep(&ts, NULL);
            }
            continue;
        }
        serve(h, fd);
        close(fd);
    }
    return NULL;
}

bool httpd_split_hostport(char *s, char **host, char **port) {
    char *colon = strrchr(s, ':');
    if (colon == NULL || colon[1] == '\0')
        return false;
    unsigned long n = 0;
    for (const char *d = colon + 1; *d != '\0'; d++) {
        if (*d < '0' || *d > '9' || (n = n * 10 + (unsigned long)(*d - '0')) > 65535)
            return false;
    }
    if (n == 0)
        return false;
    *colon = '\0';
    *port = colon + 1;
    if (s[0] == '[') {
        size_t len = strlen(s);
        if (len < 3 || s[len - 1] != ']')
            return false;
        s[len - 1] = '\0';
        s++;
    } else if (strchr(s, ':') != NULL) {
        return false;               /* a bare IPv6 address: its port is ambiguous */
    }
    *host = s;
    return true;
}

struct httpd *httpd_create(const char *hostport, const char *path, httpd_render_fn render,
                           void *arg, char *err, size_t errlen) {
    char spec[256];
    char *host, *port;
    if (strlen(hostport) >= sizeof(spec) ||
        !httpd_split_hostport(strcpy(spec, hostport), &host, &port)) {
        snprintf(err, errlen, "expected HOST:PORT, [IPv6]:PORT or :PORT (port 1-65535), "
                              "got \"%s\"", hostport);
        return NULL;
    }
    struct httpd *h = calloc(1, sizeof(*h));
    if (h == NULL || strlen(path) >= sizeof(h->path)) {
        snprintf(err, errlen, "out of memory");
        free(h);
        return NULL;
    }
    strcpy(h->path, path);
    h->render = render;
    h->arg = arg;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", hostport, gai_strerror(rc));
        free(h);
        return NULL;
    }
    /* ":PORT" should take IPv6 and IPv4 alike: prefer the v6 wildcard (dual stack) */
    int fd = -1, saved = 0;
    for (int pass = 0; pass < 2 && fd < 0; pass++) {
        for (struct addrinfo *a = ai; a != NULL && fd < 0; a = a->ai_next) {
            if (host[0] == '\0' && (pass == 0) != (a->ai_family == AF_INET6))
                continue;
            if (host[0] != '\0' && pass == 1)
                break;
            fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
            if (fd < 0) {
                saved = errno;
                continue;
            }
            int one = 1, zero = 0;
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            if (a->ai_family == AF_INET6 && host[0] == '\0')
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
            if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 16) != 0) {
                saved = errno;
                close(fd);
                fd = -1;
            }
        }
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", hostport, strerror(saved));
        free(h);
        return NULL;
    }
    h->fd = fd;
    atomic_store(&h->stop, false);
    if (pthread_create(&h->thread, NULL, httpd_main, h) != 0) {
        snprintf(err, errlen, "%s: cannot start its thread", hostport);
        close(fd);
        free(h);
        return NULL;
    }
    return h;
}

void httpd_destroy(struct httpd **hp) {
    struct httpd *h = *hp;
    if (h == NULL)
        return;
    atomic_store(&h->stop, true);
    shutdown(h->fd, SHUT_RDWR);     /* wakes accept() */
    pthread_join(h->thread, NULL);
    close(h->fd);
    free(h);
    *hp = NULL;
}
