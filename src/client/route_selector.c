/*
 * route_selector.c -- the routes that only choose: OperationSelectorRoute
 * (by the request's operation, else default_policy) and
 * PrefixSelectorRoute (by the longest configured prefix the key starts
 * with, else the wildcard).  With nothing chosen, NullRoute's answer.
 */
#include <string.h>

#include "client/client_int.h"

/* The child for op (NULL: none). */
static const struct route *opsel_pick(const struct route *r, enum msg_op op) {
    const struct route *to = (unsigned)op < MSG_OP_COUNT ? r->by_op[op] : NULL;
    return to != NULL ? to : r->dflt;
}

/* The child for key: the longest prefix it starts with, else the wildcard (NULL: none). */
static const struct route *prefix_pick(const struct route *r, const char *key, size_t nkey) {
    const struct route *to = r->dflt;
    size_t best = 0;
    for (unsigned i = 0; i < r->nchildren; i++) {
        size_t n = strlen(r->prefixes[i]);
        if (n >= best && n <= nkey && memcmp(key, r->prefixes[i], n) == 0) {
            best = n;
            to = r->children[i];
        }
    }
    return to;
}

static void opsel_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    const struct route *to = opsel_pick(r, q->m.op);
    if (to == NULL)
        cl_answer_null(q);
    else
        route_dispatch(to, h, q);
}

static void prefix_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    const struct route *to = prefix_pick(r, q->m.key.p, q->m.key.len);
    if (to == NULL)
        cl_answer_null(q);
    else
        route_dispatch(to, h, q);
}

static int opsel_server_of(const struct route *r, const struct cellar_config *cfg,
                           const char *key, size_t nkey) {
    return route_server_of(opsel_pick(r, MSG_GET), cfg, key, nkey);
}

static int prefix_server_of(const struct route *r, const struct cellar_config *cfg,
                            const char *key, size_t nkey) {
    return route_server_of(prefix_pick(r, key, nkey), cfg, key, nkey);
}

const struct route_ops route_opsel_ops = {opsel_dispatch, opsel_server_of};
const struct route_ops route_prefix_ops = {prefix_dispatch, prefix_server_of};
