/*
 * status.c -- libcellar's statuses: the text of each (cellar_strerror())
 * and the status a server's reply stands for (cl_status_of()); NullRoute's
 * answer (cl_answer_null(): also an AllAsyncRoute's before its children
 * are done, and a selector's with no route for a request).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellar.h"
#include "client/client_int.h"

const char *cellar_strerror(int status) {
    switch (status) {
    case CELLAR_OK:          return "ok";
    case CELLAR_NOT_FOUND:   return "not found";
    case CELLAR_NOT_STORED:  return "not stored";
    case CELLAR_EXISTS:      return "exists (cas mismatch)";
    case CELLAR_DROPPED:     return "UDP reply lost, late or out of order";
    case CELLAR_EINVAL:      return "invalid argument";
    case CELLAR_ENOMEM:      return "out of memory";
    case CELLAR_ETIMEDOUT:   return "server timed out";
    case CELLAR_ECONNECT:    return "cannot connect to server";
    case CELLAR_ECLOSED:     return "connection closed";
    case CELLAR_EDOWN:       return "server marked down";
    case CELLAR_EPROTO:      return "protocol error in server reply";
    case CELLAR_ENOTSUP:     return "not supported by the pool's protocol";
    case CELLAR_ESERVER:     return "server error";
    case CELLAR_ECLIENT:     return "client error (refused by server)";
    case CELLAR_EUNKNOWN:    return "command unknown to server";
    case CELLAR_ECONFIG:     return "invalid configuration";
    default:                 return "unknown status";
    }
}

int cl_status_of(const struct msg_reply *r) {
    switch (r->res) {
    case MSG_RES_HIT: case MSG_RES_STORED: case MSG_RES_DELETED: case MSG_RES_TOUCHED:
    case MSG_RES_NUMBER: case MSG_RES_OK: case MSG_RES_VERSION: case MSG_RES_STATS:
    case MSG_RES_META:
        return CELLAR_OK;
    case MSG_RES_MISS: case MSG_RES_NOT_FOUND:
        return CELLAR_NOT_FOUND;
    case MSG_RES_NOT_STORED:
        return CELLAR_NOT_STORED;
    case MSG_RES_EXISTS:
        return CELLAR_EXISTS;
    case MSG_RES_CLIENT_ERROR:
        return CELLAR_ECLIENT;
    case MSG_RES_SERVER_ERROR:
        return CELLAR_ESERVER;
    case MSG_RES_ERROR:
        return CELLAR_EUNKNOWN;
    default:
        return CELLAR_EPROTO;
    }
}

/* A miss, NOT_STORED or NOT_FOUND, as q->m.op would get from an empty cache. */
void cl_answer_error(struct cellar *h, struct cl_req *q, int status, const char *why,
                     size_t nwhy) {
    struct msg_reply rep = {.res = status == CELLAR_ECLIENT ? MSG_RES_CLIENT_ERROR
                                                            : MSG_RES_SERVER_ERROR,
                            .msg = {why, nwhy}, .ttl = -1};
    h->last_error.status = status;
    h->last_error.server = -1;
    snprintf(h->last_error.text, sizeof(h->last_error.text), "%.*s", (int)nwhy, why);
    q->done(q, status, &rep);
}

void cl_answer_null(struct cl_req *q) {
    struct msg_reply r = {.ttl = -1};
    bool meta = q->m.op == MSG_META;
    if (cl_op_reads(q->m.op) || (meta && q->m.meta_cmd == 'g'))
        r.res = MSG_RES_MISS;
    else if (msg_op_stores(q->m.op) || (meta && q->m.meta_cmd == 's'))
        r.res = MSG_RES_NOT_STORED;
    else
        r.res = MSG_RES_NOT_FOUND;
    q->done(q, cl_status_of(&r), &r);
}

bool cl_reply_copy(const struct msg_reply *rep, struct msg_reply *out, char **buf) {
    size_t nv = rep->value.len, nm = rep->msg.len;
    *buf = malloc(nv + nm + 1);
    if (*buf == NULL)
        return false;
    if (nv)
        memcpy(*buf, rep->value.p, nv);
    if (nm)
        memcpy(*buf + nv, rep->msg.p, nm);
    *out = *rep;
    out->value = (struct mc_span){*buf, nv};
    out->msg = (struct mc_span){*buf + nv, nm};
    return true;
}
