/*
 * udp.c -- memcached's UDP transport: one socket per worker, 8-byte frames.
 *
 *   datagram in:  [req id][seq 0][total 1][reserved 0] request bytes...
 *   datagrams out: [req id][seq i][total n][0] up to 1392 reply bytes, i = 0..n-1
 *
 * Every worker binds its own socket to the UDP port with SO_REUSEPORT, so
 * the kernel spreads datagrams over workers without a shared lock (the
 * paper serves its gets this way).  A request must fit in one datagram: a
 * frame announcing more than one is dropped silently, as memcached does.
 * The whole reply to one datagram is one message, split into as many
 * datagrams as it needs, all carrying the request id.
 *
 * FIXME: memcached 1.6.18 numbers each internal response object as its own
 * message (so `get a b` over UDP gives one message per hit plus one for
 * END); clients reassemble by request id either way.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/mc_udp.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/server.h"
#include "server/stats.h"
#include "server/udp.h"
#include "server/worker.h"

#define UDP_HDR MC_UDP_HDR

/* Opens one UDP socket bound to host:port with SO_REUSEPORT (-1 on error). */
int udp_open(const char *host, int port) {
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    struct addrinfo hints = {.ai_flags = AI_PASSIVE, .ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_DGRAM};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(strcmp(host, "*") == 0 ? NULL : host, portstr, &hints, &ai) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *p = ai; p != NULL && fd < 0; p = p->ai_next) {
        fd = socket(p->ai_family, p->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
        if (bind(fd, p->ai_addr, p->ai_addrlen) < 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    return fd;
}

/* The port fd is bound to (0 if it cannot be read). */
static int udp_bound_port(int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return 0;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/*
 * Opens this worker's UDP sockets: one per -l address, on -U's port.  A
 * "host:port" entry keeps its host; the port of UDP is always -U's.  With
 * -U -1 (an ephemeral port, as memcached takes it) the first worker lets
 * the kernel pick a port for each address and the others bind the same
 * ones, so all workers still share one port per address.
 */
int udp_open_worker(struct server *s, struct worker *w) {
    const struct settings *cfg = s->cfg;
    if (cfg->udpport == 0 || cfg->socketpath != NULL)
        return 0;
    char list[1024];
    snprintf(list, sizeof(list), "%s", cfg->inter);
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        char *host = tok;
        if (strncmp(host, "notls:", 6) == 0)
            host += 6;              /* TLS or not is the TCP listener's (-Z) */
        if (host[0] == '[') {
            host++;
            char *end = strchr(host, ']');
            if (end != NULL)
                *end = '\0';
        } else {
            char *colon = strchr(host, ':');
            if (colon != NULL && strchr(colon + 1, ':') == NULL)
                *colon = '\0';
        }
        int port = cfg->udpport;
        if (port < 0)
            port = w == &s->workers[0] ? 0 : udp_bound_port(s->workers[0].udp_fds[w->nudp]);
        int fd = udp_open(host, port);
        if (fd < 0) {
            fprintf(stderr, "failed to listen on UDP port %d\n", cfg->udpport);
            return -1;
        }
        int *n = realloc(w->udp_fds, sizeof(int) * (size_t)(w->nudp + 1));
        if (n == NULL) {
            close(fd);
            return -1;
        }
        w->udp_fds = n;
        w->udp_fds[w->nudp++] = fd;
    }
    return 0;
}

/*
 * Reads one frame header.  Returns the request id, or -1 when the
 * datagram must be dropped (too short, or part of a multi-datagram
 * request).
 */
int udp_frame_parse(const unsigned char *d, size_t n) {
    struct mc_udp_frame f;
    if (!mc_udp_frame_parse(d, n, &f) || f.seq != 0 || f.total != 1)
        return -1;
    return f.id;
}

/*
 * Sends the pending reply of c as framed datagrams to the peer of the
 * request being answered, then forgets it.  Replies are small compared
 * with the cost of a system call per datagram, so the bytes are gathered
 * once into a scratch buffer and cut from there.
 */
void udp_send_reply(struct conn *c) {
    struct out *o = &c->net.out;
    size_t len = o->bytes;
    char *buf = len ? malloc(len) : NULL;
    if (len && buf == NULL) {
        out_reset(o);
        return;
    }
    size_t at = 0;
    for (int i = o->sent; i < o->niov; i++) {
        memcpy(buf + at, o->iov[i].iov_base, o->iov[i].iov_len);
        at += o->iov[i].iov_len;
    }
    out_reset(o);
    size_t total = (len + UDP_PAYLOAD - 1) / UDP_PAYLOAD;
    if (total > 0xffff)
        total = 0;      /* cannot be numbered: drop, as a lost reply */
    for (size_t i = 0; i < total; i++) {
        unsigned char hdr[UDP_HDR];
        mc_udp_frame_fmt(hdr, (struct mc_udp_frame){(uint16_t)c->udp_reqid, (uint16_t)i,
                                                    (uint16_t)total});
        size_t off = i * UDP_PAYLOAD;
        size_t n = len - off < UDP_PAYLOAD ? len - off : UDP_PAYLOAD;
        struct iovec iov[2] = {{hdr, UDP_HDR}, {buf + off, n}};
        struct msghdr m = {.msg_name = &c->net.peer, .msg_namelen = c->net.peerlen,
                           .msg_iov = iov, .msg_iovlen = 2};
        ssize_t r;
        do {
            r = sendmsg(c->net.fd, &m, 0);
        } while (r < 0 && errno == EINTR);
        if (r > 0)
            STAT_ADD(c->ctx->st.net.bytes_written, (uint64_t)r);
    }
    free(buf);
}
