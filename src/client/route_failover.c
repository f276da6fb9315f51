/*
 * route_failover.c -- the routes that try children one after another:
 *
 *   FailoverRoute             children in order until one answers without
 *                             a failover error (cl_failover_error)
 *   FailoverWithExptimeRoute  the same; from the second child on, writes
 *                             carry an exptime capped at failover_exptime:
 *                             the paper's gutter pool, whose entries must
 *                             expire soon since nothing invalidates them
 *   MissFailoverRoute         reads: in order until a hit (a miss moves on
 *                             too); anything else goes to the first child
 *   LatestRoute               a replica picked by the handle's host id,
 *                             then up to failover_count more, in order
 *
 *   dispatch --> child[start] --done--> answered? --yes--> parent->done
 *                     ^                    | no, and children left
 *                     +--- child[next] <---+
 *
 * One struct seq per request in flight, freed before the parent hears.
 * When every child failed, the parent gets the last one's answer.  Each
 * sending on to a later child counts one in the handle's failovers.
 */
#include <stdlib.h>
#include <time.h>

#include "client/client_int.h"

#define THIRTY_DAYS 2592000

struct seq {
    struct cl_req q;            /* the child request: first, so done() finds the seq */
    struct cl_req *parent;
    const struct route *r;
    struct cellar *h;
    unsigned start, tried, limit;
};

int64_t cl_cap_exptime(int64_t exptime, int cap) {
    if (exptime < 0)
        return exptime;
    int64_t left = exptime;
    if (exptime > THIRTY_DAYS)
        left = exptime - (int64_t)time(NULL);
    return (exptime == 0 || left > cap) ? cap : exptime;
}

/* Does this answer send the request on to the next child? */
static bool moves_on(const struct seq *s, int status) {
    if (cl_failover_error(status))
        return true;
    return s->r->kind == ROUTE_MISS_FAILOVER && status == CELLAR_NOT_FOUND;
}

static void seq_done(struct cl_req *q, int status, const struct msg_reply *rep);

static void seq_send(struct seq *s) {
    const struct route *r = s->r;
    unsigned i = (s->start + s->tried) % r->nchildren;
    s->q = (struct cl_req){.m = s->parent->m, .done = seq_done};
    if (s->tried > 0) {
        cl_count(&s->h->failovers, 1);
        if (r->exptime >= 0 && cl_op_sets_exptime(s->q.m.op))
            s->q.m.exptime = cl_cap_exptime(s->q.m.exptime, r->exptime);
    }
    s->tried++;
    route_dispatch(r->children[i], s->h, &s->q);
}

static void seq_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct seq *s = (struct seq *)q;
    if (s->tried < s->limit && moves_on(s, status)) {
        seq_send(s);
        return;
    }
    struct cl_req *parent = s->parent;
    free(s);
    parent->done(parent, status, rep);
}

static void seq_dispatch(const struct route *r, struct cellar *h, struct cl_req *q,
                         unsigned start, unsigned limit) {
    if (r->nchildren == 0) {
        cl_answer_null(q);
        return;
    }
    struct seq *s = malloc(sizeof(*s));
    if (s == NULL) {
        q->done(q, CELLAR_ENOMEM, NULL);
        return;
    }
    *s = (struct seq){.parent = q, .r = r, .h = h, .start = start, .limit = limit};
    seq_send(s);
}

static void failover_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    seq_dispatch(r, h, q, 0, r->nchildren);
}

static void miss_failover_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    seq_dispatch(r, h, q, 0, cl_op_reads(q->m.op) ? r->nchildren : 1);
}

static void latest_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    unsigned n = r->nchildren, limit = r->failover_count + 1;
    seq_dispatch(r, h, q, n ? (unsigned)(h->cfg->host_id % n) : 0, limit < n ? limit : n);
}

/* A get tries the first child first. */
static int first_server_of(const struct route *r, const struct cellar_config *cfg,
                           const char *key, size_t nkey) {
    return route_server_of(r->nchildren ? r->children[0] : NULL, cfg, key, nkey);
}

/* The child this host reads first (latest_dispatch()'s). */
static int latest_server_of(const struct route *r, const struct cellar_config *cfg,
                            const char *key, size_t nkey) {
    unsigned n = r->nchildren;
    return route_server_of(n ? r->children[cfg->host_id % n] : NULL, cfg, key, nkey);
}

const struct route_ops route_failover_ops = {failover_dispatch, first_server_of};
const struct route_ops route_miss_failover_ops = {miss_failover_dispatch, first_server_of};
const struct route_ops route_latest_ops = {latest_dispatch, latest_server_of};
