/*
 * route_selector.c -- the routes that only choose: OperationSelectorRoute
 * (by the request's operation, else default_policy) and
 * PrefixSelectorRoute (by the longest configured prefix the key starts
 * with, else the wildcard).  With nothing chosen, NullRoute's answer.
 */
#include <string.h>

#include "client/client_int.h"

static void opsel_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    const struct route *to = (unsigned)q->m.op < MSG_OP_COUNT ? r->by_op[q->m.op] : NULL;
    if (to == NULL)
        to = r->dflt;
    if (to == NULL)
        cl_answer_null(q);
    else
        route_dispatch(to, h, q);
}

static void prefix_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    const struct route *to = r->dflt;
    size_t best = 0;
    for (unsigned i = 0; i < r->nchildren; i++) {
        size_t n = strlen(r->prefixes[i]);
        if (n >= best && n <= q->m.key.len && memcmp(q->m.key.p, r->prefixes[i], n) == 0) {
            best = n;
            to = r->children[i];
        }
    }
    if (to == NULL)
        cl_answer_null(q);
    else
        route_dispatch(to, h, q);
}

const struct route_ops route_opsel_ops = {opsel_dispatch};
const struct route_ops route_prefix_ops = {prefix_dispatch};
