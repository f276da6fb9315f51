/*
 * route_null.c -- NullRoute: answers at once with the reply a request gets
 * when nothing has it (mcrouter's default reply), sending nothing.  Also
 * the answer an AllAsyncRoute gives before its children are done, and
 * that of a selector with no route for a request.
 */
#include "client/client_int.h"

void cl_answer_null(struct cl_req *q) {
    struct msg_reply r = {.ttl = -1};
    if (cl_op_reads(q->m.op))
        r.res = MSG_RES_MISS;
    else if (msg_op_stores(q->m.op))
        r.res = MSG_RES_NOT_STORED;
    else
        r.res = MSG_RES_NOT_FOUND;
    q->done(q, cl_status_of(&r), &r);
}

static void null_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    (void)r;
    (void)h;
    cl_answer_null(q);
}

static int null_server_of(const struct route *r, const struct cellar_config *cfg,
                          const char *key, size_t nkey) {
    (void)r, (void)cfg, (void)key, (void)nkey;
    return -1;
}

const struct route_ops route_null_ops = {null_dispatch, null_server_of};
