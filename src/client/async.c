/*
 * async.c -- libcellar's asynchronous face (cellar.h): cellar_fd(),
 * cellar_submit(), cellar_run().
 *
 *   cellar_submit(rq, cb)                       cellar_run()
 *     copy key, value --> struct areq             cl_async_run(): read, answer,
 *     route_dispatch(root, q) ----------------->    write, time out
 *       answered at once (server down, bad          |
 *       key for its pool...): areq_done()            v
 *       parks q on h->deferred               areq_done(q, status, reply)
 *                                              --> cb(arg, status, &reply)
 *                                              --> free(areq)
 *
 * A request is the same struct cl_req the blocking calls submit, with a
 * copy of its key and value behind it, so the caller's buffers may go as
 * soon as cellar_submit() returns.  The callback never runs inside
 * cellar_submit(): a route may fail a request at once, and the callback
 * of a caller still in the middle of submitting would meet half-built
 * state of its own; such answers wait on the handle's deferred list for
 * the next cellar_run() (or cellar_destroy(), which delivers them).
 */
#include "cellar.h"

#include <stdlib.h>
#include <string.h>

#include "client/handle_int.h"
#include "client/route.h"

struct areq {
    struct cl_req q;                    /* q.arg is the areq */
    struct cellar *h;
    cellar_cb cb;
    void *arg;
    char data[];                        /* the key, then the value */
};

static const enum msg_op op_of[] = {
    [CELLAR_OP_GET] = MSG_GET,         [CELLAR_OP_GETS] = MSG_GETS,
    [CELLAR_OP_GAT] = MSG_GAT,         [CELLAR_OP_GATS] = MSG_GATS,
    [CELLAR_OP_SET] = MSG_SET,         [CELLAR_OP_ADD] = MSG_ADD,
    [CELLAR_OP_REPLACE] = MSG_REPLACE, [CELLAR_OP_APPEND] = MSG_APPEND,
    [CELLAR_OP_PREPEND] = MSG_PREPEND, [CELLAR_OP_CAS] = MSG_CAS,
    [CELLAR_OP_DELETE] = MSG_DELETE,   [CELLAR_OP_TOUCH] = MSG_TOUCH,
    [CELLAR_OP_INCR] = MSG_INCR,       [CELLAR_OP_DECR] = MSG_DECR,
};

/* The request's answer (r NULL: none came), to its callback; then it is freed. */
static void areq_done(struct cl_req *q, int status, const struct msg_reply *r) {
    struct areq *a = q->arg;
    struct cellar *h = a->h;
    if (h->submitting) {
        q->status = status;             /* r is NULL here: no server has answered yet */
        q->next = NULL;
        if (h->deferred_tail != NULL)
            h->deferred_tail->next = q;
        else
            h->deferred = q;
        h->deferred_tail = q;
        return;
    }
    struct cellar_reply rep = {0};
    if (r != NULL) {
        if (r->res == MSG_RES_HIT) {
            rep.value = r->value.p;
            rep.nvalue = r->value.len;
        }
        rep.flags = r->flags;
        rep.cas = r->cas;
        rep.number = r->number;
    }
    h->async_pending--;
    /* and again once written: a get that raced the write may have kept the old value */
    if (h->near != NULL && !cl_op_reads(q->m.op))
        cl_near_forget(h->near, q->m.key.p, q->m.key.len);
    if (a->cb != NULL)
        a->cb(a->arg, status, &rep);
    free(a);
}

/* Hands the answers that came during a submission to their callbacks. */
static void deliver_deferred(struct cellar *h) {
    while (h->deferred != NULL) {
        struct cl_req *q = h->deferred;
        h->deferred = q->next;
        if (h->deferred == NULL)
            h->deferred_tail = NULL;
        q->done(q, q->status, NULL);
    }
}

int cellar_fd(const struct cellar *h) { return cl_async_fd(h); }

size_t cellar_pending(const struct cellar *h) { return h->async_pending; }

int cellar_submit(struct cellar *h, const struct cellar_request *rq, cellar_cb cb, void *arg) {
    if ((unsigned)rq->op >= sizeof(op_of) / sizeof(op_of[0]) ||
        !msg_key_ok((struct mc_span){rq->key, rq->nkey}))
        return CELLAR_EINVAL;
    if (h->closing)
        return CELLAR_ECLOSED;
    enum msg_op op = op_of[rq->op];
    size_t nvalue = msg_op_stores(op) ? rq->nvalue : 0;
    if (nvalue > 0 && rq->value == NULL)
        return CELLAR_EINVAL;
    struct areq *a = malloc(sizeof(*a) + rq->nkey + nvalue);
    if (a == NULL)
        return CELLAR_ENOMEM;
    memcpy(a->data, rq->key, rq->nkey);
    if (nvalue > 0)
        memcpy(a->data + rq->nkey, rq->value, nvalue);
    a->q = (struct cl_req){
        .m = {.op = op, .key = {a->data, rq->nkey}, .value = {a->data + rq->nkey, nvalue},
              .flags = rq->flags, .exptime = rq->exptime, .cas = rq->cas, .delta = rq->delta},
        .done = areq_done,
        .arg = a,
    };
    a->h = h;
    a->cb = cb;
    a->arg = arg;
    /* the handle's own write makes its near-cache copy stale (the blocking calls' rule) */
    if (h->near != NULL && !cl_op_reads(op))
        cl_near_forget(h->near, rq->key, rq->nkey);
    h->async_pending++;
    h->submitting = true;
    route_dispatch(h->cfg->root, h, &a->q);
    h->submitting = false;
    return CELLAR_OK;
}

int cellar_run(struct cellar *h) {
    deliver_deferred(h);
    uint64_t next = cl_async_run(h, true);
    deliver_deferred(h);
    if (next == 0)
        return h->async_pending > 0 ? 1000 : -1;
    uint64_t now = clock_mono_ns();
    if (next <= now)
        return 0;
    uint64_t ms = (next - now + 999999) / 1000000;
    return ms > 1000 ? 1000 : (int)ms;
}
