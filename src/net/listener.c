#include "net/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "net/worker.h"

static int set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int add_listener(struct net_listeners *ls, int fd, bool is_unix, bool tls,
                        const char *name) {
    struct net_listener *n = realloc(ls->l, sizeof(*n) * (size_t)(ls->n + 1));
    if (n == NULL) {
        close(fd);
        return -1;
    }
    ls->l = n;
    n[ls->n].fd = fd;
    n[ls->n].is_unix = is_unix;
    n[ls->n].tls = tls;
    snprintf(n[ls->n].name, sizeof(n[0].name), "%s", name);
    ls->n++;
    return 0;
}

/* Opens TCP listeners for one "host[:port]" entry. */
/* "tcp:127.0.0.1:11211" or "tcp6:[::1]:11211": the address fd listens on. */
static void tcp_name(int fd, char *name, size_t cap) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char ip[INET6_ADDRSTRLEN] = "?";
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        ss.ss_family = AF_UNSPEC;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *a = (void *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
        snprintf(name, cap, "tcp:%s:%u", ip, ntohs(a->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (void *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
        snprintf(name, cap, "tcp6:[%s]:%u", ip, ntohs(a->sin6_port));
    } else {
        snprintf(name, cap, "fd:%d", fd);
    }
}

static int listen_one(struct net_listeners *ls, const char *entry, int port, int backlog,
                      bool tls) {
    char host[256];
    snprintf(host, sizeof(host), "%s", entry);
    char *colon = strrchr(host, ':');
    char *h = host;
    if (host[0] == '[') {                       /* [v6]:port */
        char *end = strchr(host, ']');
        if (end == NULL)
            return -1;
        *end = '\0';
        h = host + 1;
        if (end[1] == ':')
            port = atoi(end + 2);
    } else if (colon != NULL && strchr(host, ':') == colon) {   /* v4:port */
        *colon = '\0';
        port = atoi(colon + 1);
    }
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port < 0 ? 0 : port);
    struct addrinfo hints = {.ai_flags = AI_PASSIVE, .ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(strcmp(h, "*") == 0 || h[0] == '\0' ? NULL : h, portstr, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "getaddrinfo(): %s\n", gai_strerror(rc));
        return -1;
    }
    int opened = 0;
    for (struct addrinfo *p = ai; p != NULL; p = p->ai_next) {
        int fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (p->ai_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        if (bind(fd, p->ai_addr, p->ai_addrlen) < 0 || listen(fd, backlog) < 0) {
            if (errno == EADDRINUSE)
                fprintf(stderr, "failed to listen on TCP port %d: Address already in use\n", port);
            else
                perror("bind()");
            close(fd);
            freeaddrinfo(ai);
            return -1;
        }
        set_nonblock(fd);
        char name[128];
        tcp_name(fd, name, sizeof(name));
        if (add_listener(ls, fd, false, tls, name) < 0) {
            freeaddrinfo(ai);
            return -1;
        }
        opened++;
    }
    freeaddrinfo(ai);
    return opened > 0 ? 0 : -1;
}

int net_listen_tcp(struct net_listeners *ls, const char *list, int port, int backlog) {
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
        bool tls = ls->tls;
        if (strncmp(tok, "notls:", 6) == 0) {
            if (!ls->tls) {
                fprintf(stderr, "'notls' option is valid only when SSL is enabled\n");
                return -1;
            }
            tls = false;
            tok += 6;
        }
        if (listen_one(ls, tok, port, backlog, tls) < 0)
            return -1;
    }
    return 0;
}

int net_listen_fd(struct net_listeners *ls, int fd) {
    int listening = 0, type = 0;
    socklen_t n = sizeof(listening), m = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &n) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &m) < 0 || !listening ||
        type != SOCK_STREAM)
        return -1;
    if (set_nonblock(fd) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        return -1;
    char name[128];
    tcp_name(fd, name, sizeof(name));
    return add_listener(ls, fd, false, ls->tls, name);
}

int net_listen_inherited(struct net_listeners *ls) {
    const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
    if (pid == NULL || fds == NULL)
        return 0;
    char *end;
    long p = strtol(pid, &end, 10), n = *end == '\0' ? strtol(fds, &end, 10) : -1;
    unsetenv("LISTEN_PID");         /* not for children */
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    if (p != (long)getpid())
        return 0;
    if (*end != '\0' || n < 1 || n > 64)
        return -1;
    for (int fd = 3; fd < 3 + n; fd++)
        if (net_listen_fd(ls, fd) < 0)
            return -1;
    return (int)n;
}

int net_listen_unix(struct net_listeners *ls, const char *path, int mask, int backlog) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(a.sun_path)) {
        close(fd);
        return -1;
    }
    strcpy(a.sun_path, path);
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(path);
    mode_t old = umask((mode_t)(~mask & 0777));
    int rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
    umask(old);
    if (rc < 0 || listen(fd, backlog) < 0) {
        perror("bind()");
        close(fd);
        return -1;
    }
    set_nonblock(fd);
    char name[128];
    snprintf(name, sizeof(name), "unix:%s", path);
    return add_listener(ls, fd, true, false, name);
}

void net_listeners_close(struct net_listeners *ls) {
    for (int i = 0; i < ls->n; i++) {
        close(ls->l[i].fd);
        if (ls->l[i].is_unix)
            unlink(ls->l[i].name + strlen("unix:"));
    }
    free(ls->l);
    ls->l = NULL;
    ls->n = 0;
}

static void refuse(struct net_server *s, int fd, const char *refusal) {
    ssize_t r = write(fd, refusal, strlen(refusal));
    (void)r;
    close(fd);
    atomic_fetch_add(&s->rejected_conns, 1);
}

void net_accept_all(struct net_server *s, const struct net_listener *l,
                    const struct net_accept_rules *rules) {
    for (;;) {
        struct sockaddr_storage peer;
        socklen_t plen = sizeof(peer);
        int fd = accept4(l->fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE) {
                /* Out of descriptors: nothing to do but wait for some to close. */
                struct timespec ts = {0, 10 * 1000000L};
                nanosleep(&ts, NULL);
            }
            return;
        }
        if (atomic_load(&s->curr_conns) >= rules->max_conns) {
            refuse(s, fd, rules->refusal);
            continue;
        }
        if (!l->is_unix) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
        atomic_fetch_add(&s->curr_conns, 1);
        atomic_fetch_add(&s->total_conns, 1);
        struct net_worker *w = s->workers[s->next_worker];
        s->next_worker = (s->next_worker + 1) % s->nworkers;
        net_worker_hand_fd(w, fd, l->fd, &peer, plen, l->tls);
    }
}
