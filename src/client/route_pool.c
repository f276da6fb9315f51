/*
 * route_pool.c -- the leaves of the tree: PoolRoute (the key's server in
 * a pool, by the pool's hash) and a single server ("Pool|A" expands into
 * one per server of A).  Both hand the request to that server's
 * connection in the dispatching handle (through its spool, spool.c, for
 * the ops the pool spools when the handle has one).
 */
#include "client/handle_int.h"

/* To server s: through its spool when the op is one to keep if it fails. */
static void leaf_submit(struct cellar *h, unsigned s, struct cl_req *q) {
    struct cl_conn *c = &h->conns[s];
    if (cl_spool_wants(c, &q->m))
        cl_spool_submit(c, q);
    else
        cl_conn_submit(c, q);
}

static void pool_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (!msg_op_keyed(q->m.op)) {
        q->done(q, CELLAR_ENOTSUP, NULL);   /* keyless ops go to servers, not pools */
        return;
    }
    unsigned s = cl_pool_pick(h->cfg, r->target, q->m.key.p, q->m.key.len);
    leaf_submit(h, s, q);
}

static void server_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    leaf_submit(h, r->target, q);
}

static int pool_server_of(const struct route *r, const struct cellar_config *cfg,
                          const char *key, size_t nkey) {
    return (int)cl_pool_pick(cfg, r->target, key, nkey);
}

static int server_server_of(const struct route *r, const struct cellar_config *cfg,
                            const char *key, size_t nkey) {
    (void)cfg, (void)key, (void)nkey;
    return (int)r->target;
}

const struct route_ops route_pool_ops = {pool_dispatch, pool_server_of};
const struct route_ops route_server_ops = {server_dispatch, server_server_of};
