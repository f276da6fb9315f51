/*
 * route_pool.c -- the leaves of the tree: PoolRoute (the key's server in
 * a pool, by the pool's hash) and a single server ("Pool|A" expands into
 * one per server of A).  Both hand the request to that server's
 * connection in the dispatching handle.
 */
#include "client/client_int.h"

static void pool_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (!msg_op_keyed(q->m.op)) {
        q->done(q, CELLAR_ENOTSUP, NULL);   /* keyless ops go to servers, not pools */
        return;
    }
    unsigned s = cl_pool_pick(h->cfg, r->target, q->m.key.p, q->m.key.len);
    cl_conn_submit(&h->conns[s], q);
}

static void server_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    cl_conn_submit(&h->conns[r->target], q);
}

const struct route_ops route_pool_ops = {pool_dispatch};
const struct route_ops route_server_ops = {server_dispatch};
