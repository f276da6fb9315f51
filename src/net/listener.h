/*
 * listener.h -- listening sockets and the acceptor.
 *
 * The listeners of one server (TCP on each address of a -l list, or one
 * unix socket), and accept_all(), which the acceptor thread runs when one
 * is readable: every pending connection is accepted and handed to a worker
 * in turn (net_worker_hand_fd()), or, past the connection limit, answered
 * with the server's refusal and closed.  The limit and the refusal are the
 * application's (cellard's are memcached's), not net's.
 *
 * Used by the acceptor thread only, except the listener array, which is
 * read-only once the server runs (`stats conns` names them).
 */
#ifndef CELLAR_NET_LISTENER_H
#define CELLAR_NET_LISTENER_H

#include <stdbool.h>
#include <stdint.h>

struct net_server;

struct net_listener {
    int fd;
    bool is_unix;
    bool tls;                       /* its connections speak TLS (net/tls.h) */
    char name[128];                 /* for `stats conns`: tcp:127.0.0.1:11211 */
};

struct net_listeners {
    struct net_listener *l;
    int n;
    bool tls;                       /* set before listening: TCP listeners speak TLS,
                                       but for a -l entry written "notls:host:port" */
};

/*
 * Listens on each "host[:port]" of list (comma or space separated; "[v6]:port",
 * "*" for every address; port when an entry has none; "notls:" before an
 * entry: plain even when ls->tls, memcached's words), with backlog.
 * Messages as memcached prints them go to stderr.  0, or -1 (what was
 * opened stays in ls, for net_listeners_close()).
 */
int net_listen_tcp(struct net_listeners *ls, const char *list, int port, int backlog);
/*
 * Takes fd, a listening TCP socket the process was given (mcrouter's
 * --listen-sock-fd), as a listener: 0, or -1 when it is not one.
 */
int net_listen_fd(struct net_listeners *ls, int fd);
/*
 * systemd's socket activation: when LISTEN_PID is this process, takes the
 * LISTEN_FDS listening sockets from fd 3 on (and clears the variables).
 * How many it took (0: none were passed), or -1 when one is not a
 * listening TCP socket.
 */
int net_listen_inherited(struct net_listeners *ls);
/* Listens on the unix socket path, made with permissions mask (as -a). 0 or -1. */
int net_listen_unix(struct net_listeners *ls, const char *path, int mask, int backlog);
/* Closes them (and removes a unix socket's file). */
void net_listeners_close(struct net_listeners *ls);

struct net_accept_rules {
    uint64_t max_conns;             /* connections at most; beyond: refuse */
    const char *refusal;            /* written to a refused connection before it closes */
};

/* Accepts every pending connection of l and hands each to a worker of s. */
void net_accept_all(struct net_server *s, const struct net_listener *l,
                    const struct net_accept_rules *rules);

#endif
