/*
 * uring.h -- the network core's io_uring back end; seen by net/ only.
 *
 * worker.c owns connections and their read buffers; uring.c drives the
 * stream connections of a worker whose ring came up (w->ring != NULL):
 * it keeps a receive in the kernel for each connection that may read,
 * queues the connections with output and submits their sends once per
 * loop turn, and reaps completions.  What the kernel still has of a
 * connection (a receive, a send) is in its ring_flags; a connection
 * closed meanwhile is freed when the last of them comes back.
 *
 * Everything here runs on the worker's thread (the ring is created there:
 * IORING_SETUP_SINGLE_ISSUER), except net_uring_usable().
 */
#ifndef CELLAR_NET_URING_H
#define CELLAR_NET_URING_H

#include "net/worker.h"

/* net_conn.ring_flags */
#define NET_RING_RECV 1u        /* a (multishot) receive is in the kernel */
#define NET_RING_SEND 2u        /* a send is in the kernel */
#define NET_RING_QUEUED 4u      /* on the ring's send queue */
#define NET_RING_LENT 8u        /* rbuf is one of the ring's receive buffers */
#define NET_RING_DEAD 16u       /* closed: freed when the kernel has given back all it had */
#define NET_RING_STARVED 32u    /* its receive found no free buffer: tried again next turn */
#define NET_RING_HALT 64u       /* its receive is being cancelled (c may not read now) */

/* Makes w's ring (on w's thread).  0, or -1: w stays on epoll. */
int net_uring_init(struct net_worker *w);
/* w's loop, until its server stops; then takes back what the kernel has. */
void net_uring_run(struct net_worker *w);
void net_uring_deinit(struct net_worker *w);

/* Closes c (net_conn_close() of a ring connection). */
void net_uring_close(struct net_conn *c);
/* net_conn_flush() of a ring connection. */
bool net_uring_flush(struct net_conn *c);
/* c may read again (not paused, not blocked): receives if it has none in the kernel. */
void net_uring_want_input(struct net_conn *c);
/* c is paused: its receive is cancelled (what arrives before that is kept, not run). */
void net_uring_stop_input(struct net_conn *c);

/* What worker.c lends uring.c. */
bool net_rbuf_room(struct net_conn *c, size_t n);  /* room for n more bytes after rend */
void net_rbuf_release(struct net_conn *c);         /* gives an emptied rbuf back */
void net_conn_unlink(struct net_conn *c);          /* off its worker's list */
void net_conn_destroy(struct net_conn *c);         /* frees an unlinked connection */
void net_worker_epoll_round(struct net_worker *w);  /* what epoll has, without waiting */
void net_worker_after_round(struct net_worker *w);  /* tick, then the ready list */

#endif
