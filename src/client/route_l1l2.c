/*
 * route_l1l2.c -- L1L2CacheRoute: a small near cache (l1) in front of the
 * real one (l2), as mcrouter's:
 *
 *   get-like   l1 first; a hit is the answer.  On a miss, l2; its hit is
 *              the answer and is added to l1 in the background (exptime
 *              upgradingL1Exptime, 0: never).  With ncacheUpdatePeriod, an
 *              l2 miss is remembered in l1 as a negative entry ("ncache",
 *              flag 0x10000, ncacheExptime) that answers later gets as a
 *              miss without asking l2; every ncacheUpdatePeriod-th such
 *              answer asks l2 again in the background and refreshes l1
 *              (the value if l2 has one now, else the negative entry)
 *   the rest   l1 only (writes and deletes reach l2 by other routes)
 *
 * The client waits only for l1 and, on a miss, l2: the updates of l1 are
 * background requests that carry their own copies and free themselves.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

#define NCACHE_FLAG 0x10000u    /* mcrouter's MC_MSG_FLAG_NEGATIVE_CACHE */
#define NCACHE_VALUE "ncache"

struct l1l2 {
    struct route r;             /* children: l1, l2 */
    int64_t upgrade_exptime;    /* an l1 fill's exptime */
    int64_t ncache_exptime;
    unsigned ncache_period;     /* 0: no negative entries */
    atomic_uint ncache_left;    /* negative answers until the next refresh */
};

static struct l1l2 *ll(const struct route *r) {
    return (struct l1l2 *)r;    /* ncache_left changes; the rest is read only */
}

/* A background request to l1 (or, for a refresh, l2 then l1), with its own bytes. */
struct bg {
    struct cl_req q;            /* first: cl_req_copy()'s head, done() finds it */
    struct cellar *h;
    const struct route *r;
    bool refresh;               /* asking l2 for a negative entry's key */
};

static void bg_done(struct cl_req *q, int status, const struct msg_reply *rep);

/* Sends m (its own copy) to route i of r in the background; refresh as bg says. */
static void bg_send(struct cellar *h, const struct route *r, unsigned i, const struct msg *m,
                    bool refresh) {
    struct bg *b = (struct bg *)cl_req_copy(m, sizeof(struct bg));
    if (b == NULL)
        return;                 /* a fill of a cache: losing it loses nothing */
    b->q.done = bg_done;
    b->h = h;
    b->r = r;
    b->refresh = refresh;
    route_dispatch(r->children[i], h, &b->q);
}

/* Sends op of key (value, flags, exptime) to l1 in the background. */
static void bg_store(struct cellar *h, const struct route *r, enum msg_op op,
                     struct mc_span key, struct mc_span value, uint32_t flags,
                     int64_t exptime) {
    struct msg m = {.op = op, .key = key, .value = value, .flags = flags, .exptime = exptime};
    bg_send(h, r, 0, &m, false);
}

static void bg_ncache(struct cellar *h, const struct route *r, enum msg_op op,
                      struct mc_span key) {
    bg_store(h, r, op, key, (struct mc_span){NCACHE_VALUE, sizeof(NCACHE_VALUE) - 1},
             NCACHE_FLAG, ll(r)->ncache_exptime);
}

static void bg_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct bg *b = (struct bg *)q;
    if (b->refresh) {           /* l2's answer for a negative entry: l1 set to match */
        struct mc_span key = b->q.m.key;
        if (status == CELLAR_OK && rep && rep->res == MSG_RES_HIT)
            bg_store(b->h, b->r, MSG_SET, key, rep->value, rep->flags,
                     ll(b->r)->upgrade_exptime);
        else
            bg_ncache(b->h, b->r, MSG_SET, key);
    }
    free(b);
}

/* Every ncache_period-th negative answer asks l2 again, in the background. */
static void maybe_refresh(struct cellar *h, const struct route *r, struct mc_span key) {
    struct l1l2 *l = ll(r);
    if (l->ncache_period == 0)
        return;
    unsigned left = atomic_fetch_sub(&l->ncache_left, 1);
    if (left > 1 && left <= l->ncache_period)
        return;
    atomic_store(&l->ncache_left, l->ncache_period);
    struct msg m = {.op = MSG_GET, .key = key};
    bg_send(h, r, 1, &m, true);
}

/* The client's request goes as a struct cl_child: l1's, then maybe l2's. */
static void l2_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct cl_child *f = (struct cl_child *)q;
    const struct route *r = f->r;
    struct mc_span key = f->parent->m.key;
    if (status == CELLAR_OK && rep && rep->res == MSG_RES_HIT)
        bg_store(f->h, r, MSG_ADD, key, rep->value, rep->flags, ll(r)->upgrade_exptime);
    else if (status == CELLAR_NOT_FOUND && ll(r)->ncache_period)
        bg_ncache(f->h, r, MSG_ADD, key);
    cl_child_end(f, status, rep);
}

static void l1_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct cl_child *f = (struct cl_child *)q;
    if (status == CELLAR_OK && rep && rep->res == MSG_RES_HIT) {
        if (rep->flags & NCACHE_FLAG) {     /* a negative entry: a miss */
            maybe_refresh(f->h, f->r, f->parent->m.key);
            struct cl_req *parent = f->parent;
            cl_block_put(f->h, f);
            cl_answer_null(parent);
            return;
        }
        cl_child_end(f, status, rep);
        return;
    }
    f->q = (struct cl_req){.m = f->parent->m, .done = l2_done};
    route_dispatch(f->r->children[1], f->h, &f->q);
}

static bool get_like(enum msg_op op) {
    return op == MSG_GET || op == MSG_GETS || op == MSG_GAT || op == MSG_GATS;
}

static void l1l2_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (!get_like(q->m.op)) {
        route_dispatch(r->children[0], h, q);
        return;
    }
    struct cl_child *f = cl_child_get(h, r, q, l1_done);
    if (f != NULL)
        route_dispatch(r->children[0], h, &f->q);
}

static void l1l2_label(const struct route *r, const struct cellar_config *cfg,
                       struct mc_put *w) {
    (void)cfg;
    MC_PUT_LIT(w, "(upgradingL1Exptime=");
    mc_put_i64(w, ll(r)->upgrade_exptime);
    if (ll(r)->ncache_period) {
        MC_PUT_LIT(w, ",ncacheExptime=");
        mc_put_i64(w, ll(r)->ncache_exptime);
        MC_PUT_LIT(w, ",ncacheUpdatePeriod=");
        mc_put_u64(w, ll(r)->ncache_period);
    }
    MC_PUT_LIT(w, ")");
}

static const struct route_ops l1l2_ops = {
    .name = "L1L2CacheRoute",
    .dispatch = l1l2_dispatch,
    .server_of = route_server_of_first,
    .label = l1l2_label,
};

struct route *route_l1l2(struct route_set *rs, struct route *l1, struct route *l2,
                         int64_t upgrade_exptime, int64_t ncache_exptime,
                         unsigned ncache_period) {
    struct route *kids[2] = {l1, l2};
    struct route *r = route_make(rs, &l1l2_ops, sizeof(struct l1l2), kids, 2);
    if (r) {
        struct l1l2 *l = ll(r);
        l->upgrade_exptime = upgrade_exptime;
        l->ncache_exptime = ncache_exptime;
        l->ncache_period = ncache_period;
        atomic_init(&l->ncache_left, ncache_period);
    }
    return r;
}

/*
 * {"type": "L1L2CacheRoute", "l1": route, "l2": route, "upgradingL1Exptime": INT,
 *  "ncacheExptime": INT, "ncacheUpdatePeriod": INT}
 */
static int build_l1l2(struct rb *b, const struct route_type *t, json_t *obj,
                      struct route **out) {
    (void)t;
    struct route *l1 = NULL, *l2 = NULL;
    long long up, nexp, period;
    if (rb_build_key(b, obj, "l1", true, &l1) < 0 || rb_build_key(b, obj, "l2", true, &l2) < 0 ||
        rb_need(b, obj, "upgradingL1Exptime") == NULL ||
        rb_get_int(b, obj, "upgradingL1Exptime", 0, UINT32_MAX, 0, &up) < 0 ||
        rb_get_int(b, obj, "ncacheExptime", 0, UINT32_MAX, 0, &nexp) < 0 ||
        rb_get_int(b, obj, "ncacheUpdatePeriod", 0, UINT32_MAX, 0, &period) < 0)
        return -1;
    *out = route_l1l2(b->cfg->routes, l1, l2, up, nexp, (unsigned)period);
    return *out ? 0 : rb_nomem(b);
}

const struct route_type route_type_l1l2 = {
    .type = "L1L2CacheRoute",
    .keys = "l1 l2 upgradingL1Exptime ncacheExptime ncacheUpdatePeriod",
    .route_keys = "l1 l2",
    .map_keys = "",
    .pool_keys = "",
    .build = build_l1l2,
};
