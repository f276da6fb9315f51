/*
 * server.c -- a server as the handle uses it: the one object (struct
 * cl_conn) behind a pool's server, whose requests go over its TCP
 * connection (conn.c) or, for the gets of a UDP pool, as datagrams
 * (udp.c).  Each call here is the two halves in turn; the halves call
 * neither this file nor each other's callers.
 *
 *            client.c, route_pool.c, spool.c
 *                         |
 *                      server.c
 *                     /        \
 *                udp.c -------> conn.c    (a UDP get sent back to TCP,
 *                                          and every request's completion)
 */
#include "client/handle_int.h"

void cl_conn_submit(struct cl_conn *c, struct cl_req *q) {
    if (c->h->closing) {                /* a route resending while the handle goes */
        cl_conn_complete(c, q, CELLAR_ECLOSED, NULL);
        return;
    }
    if (c->state == CL_CONN_DOWN || c->probing) {
        cl_conn_complete(c, q, CELLAR_EDOWN, NULL);
        return;
    }
    if (cl_udp_wants(c, q))
        cl_udp_submit(c, q);
    else
        cl_conn_submit_tcp(c, q);
}

unsigned cl_conn_send(struct cl_conn *c, unsigned room, uint64_t now) {
    unsigned sent = cl_udp_send(c, room, now);
    return sent + cl_tcp_send(c, room - sent, now);
}

/* The sooner of two deadlines (0: none). */
static uint64_t sooner(uint64_t a, uint64_t b) {
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

uint64_t cl_conn_tick(struct cl_conn *c, uint64_t now) {
    uint64_t udp = c->udp.inflight ? cl_udp_tick(c, now) : 0;
    return sooner(udp, cl_tcp_tick(c, now));
}

void cl_conn_reset(struct cl_conn *c, int status) {
    cl_udp_reset(c, status);
    cl_tcp_reset(c, status);
}

void cl_conn_deinit(struct cl_conn *c) {
    cl_conn_reset(c, CELLAR_ECLOSED);
    cl_udp_deinit(c);
    cl_tcp_deinit(c);
}
