/*
 * route_warm_up.c -- WarmUpRoute: a cold cluster filled from a warm one
 * (the paper's section 4.3).
 *
 *   get --> cold --hit--> answer
 *             |
 *            miss --> warm (asking for the remaining TTL) --hit--> answer,
 *                       |                 and `add` the value into cold
 *                       +--miss or error--> answer cold's miss
 *
 * A cold that fails (down, timed out) is read around too, from warm, but
 * nothing is added into it then.  Everything else goes to cold only.  The
 * add carries the TTL warm has
 * left on the item where the wire can say it (meta), else the route's
 * exptime; being an add, it never overwrites what a client stored in cold
 * meanwhile.  The add finishes in the background with its own copy of
 * the key and value.
 *
 * Deletes reach cold with the route's delete hold-off (`delete_hold`,
 * seconds; cellard -o delete_hold) when it has one, as the paper's
 * warm-up does: for that long cold refuses adds of the key, so a warm-up
 * add racing the delete (a reader that found the old value in warm just
 * before) cannot bring the deleted value back.  A cold that does not know
 * the hold-off (memcached answers `delete <key> <n>` with CLIENT_ERROR) gets
 * the plain delete instead, so the key is deleted all the same.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

/* children[0] is cold, children[1] warm. */
struct warm_up {
    struct route r;
    int exptime;                /* TTL of an add into cold when warm cannot tell the
                                   remaining one */
    unsigned hold;              /* deletes reach cold with this delete hold-off (seconds;
                                   cellard -o delete_hold), 0: plain deletes */
};

static const struct warm_up *wu(const struct route *r) {
    return (const struct warm_up *)r;
}

struct warm {
    struct cl_req q;            /* first, so done() finds it */
    struct cl_req *parent;
    const struct route *r;
    struct cellar *h;
    int cold_status;            /* cold's answer, given if warm has nothing better */
    bool fill;                  /* cold answered a miss: a warm hit is added into it */
};

struct warm_add {
    struct cl_req q;
    char bytes[];               /* key, then value */
};

static void add_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    (void)status;
    (void)rep;
    free(q);                    /* q is the first member of its struct warm_add */
}

/* Stores warm's hit into cold with add, in the background. */
static void fill_cold(struct warm *w, const struct msg_reply *rep) {
    const struct msg *pm = &w->parent->m;
    size_t nk = pm->key.len, nv = rep->value.len;
    struct warm_add *a = malloc(sizeof(*a) + nk + nv);
    if (a == NULL)
        return;                 /* the read is answered anyway; cold stays cold */
    memcpy(a->bytes, pm->key.p, nk);
    if (nv)
        memcpy(a->bytes + nk, rep->value.p, nv);
    int64_t ttl = rep->ttl > 0 ? rep->ttl : wu(w->r)->exptime > 0 ? wu(w->r)->exptime : 0;
    a->q = (struct cl_req){
        .m = {.op = MSG_ADD, .key = {a->bytes, nk}, .value = {a->bytes + nk, nv},
              .flags = rep->flags, .exptime = ttl},
        .done = add_done,
    };
    route_dispatch(w->r->children[0], w->h, &a->q);
}

static void warm_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct warm *w = (struct warm *)q;
    struct cl_req *parent = w->parent;
    if (status == CELLAR_OK && rep && rep->res == MSG_RES_HIT) {
        if (w->fill)
            fill_cold(w, rep);
        free(w);
        parent->done(parent, status, rep);
        return;
    }
    int cold = w->cold_status;
    free(w);
    struct msg_reply miss = {.res = MSG_RES_MISS, .ttl = -1};
    parent->done(parent, cold, cold == CELLAR_NOT_FOUND ? &miss : NULL);
}

/* A delete to cold with the hold-off, sent again plainly if cold does not know it. */
struct held {
    struct cl_req q;            /* first, so done() finds it */
    struct cl_req *parent;
    const struct route *r;
    struct cellar *h;
};

static void held_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct held *d = (struct held *)q;
    if (status == CELLAR_ECLIENT && d->q.m.hold) {
        d->q = (struct cl_req){.m = d->parent->m, .done = held_done};
        d->q.m.hold = 0;
        route_dispatch(d->r->children[0], d->h, &d->q);
        return;
    }
    struct cl_req *parent = d->parent;
    free(d);
    parent->done(parent, status, rep);
}

static void delete_held(const struct route *r, struct cellar *h, struct cl_req *q) {
    struct held *d = malloc(sizeof(*d));
    if (d == NULL) {
        q->done(q, CELLAR_ENOMEM, NULL);
        return;
    }
    *d = (struct held){.q = {.m = q->m, .done = held_done}, .parent = q, .r = r, .h = h};
    d->q.m.hold = wu(r)->hold;
    route_dispatch(r->children[0], h, &d->q);
}

static void cold_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct warm *w = (struct warm *)q;
    if (status != CELLAR_NOT_FOUND && !cl_failover_error(status)) {
        struct cl_req *parent = w->parent;
        free(w);
        parent->done(parent, status, rep);
        return;
    }
    w->cold_status = status;
    w->fill = status == CELLAR_NOT_FOUND;
    w->q = (struct cl_req){.m = w->parent->m, .done = warm_done};
    w->q.m.want_ttl = true;
    if (w->q.m.op == MSG_GAT || w->q.m.op == MSG_GATS)
        w->q.m.op = w->q.m.op == MSG_GAT ? MSG_GET : MSG_GETS;   /* read warm, don't touch it */
    route_dispatch(w->r->children[1], w->h, &w->q);
}

static void warm_up_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (q->m.op != MSG_GET && q->m.op != MSG_GETS && q->m.op != MSG_GAT &&
        q->m.op != MSG_GATS) {
        if (q->m.op == MSG_DELETE && wu(r)->hold)
            delete_held(r, h, q);
        else
            route_dispatch(r->children[0], h, q);
        return;
    }
    struct warm *w = malloc(sizeof(*w));
    if (w == NULL) {
        q->done(q, CELLAR_ENOMEM, NULL);
        return;
    }
    *w = (struct warm){.q = {.m = q->m, .done = cold_done}, .parent = q, .r = r, .h = h};
    route_dispatch(r->children[0], h, &w->q);
}

static void warm_up_label(const struct route *r, const struct cellar_config *cfg,
                          struct mc_put *w) {
    (void)cfg;
    MC_PUT_LIT(w, "(exptime=");
    mc_put_i64(w, wu(r)->exptime);
    if (wu(r)->hold) {
        MC_PUT_LIT(w, ",delete_hold=");
        mc_put_u64(w, wu(r)->hold);
    }
    MC_PUT_LIT(w, ")");
}

/* A get reaches cold, then warm; anything else cold alone. */
static void warm_up_traverse(const struct route *r, const struct cellar_config *cfg,
                             enum msg_op op, const char *key, size_t nkey,
                             struct route_walk *w, unsigned depth) {
    bool get = op == MSG_GET || op == MSG_GETS || op == MSG_GAT || op == MSG_GATS;
    for (unsigned i = 0; i < (get ? 2u : 1u) && i < r->nchildren; i++)
        route_traverse(r->children[i], cfg, op, key, nkey, w, depth);
}

static const struct route_ops warm_up_ops = {
    .name = "WarmUpRoute",
    .dispatch = warm_up_dispatch,
    .server_of = route_server_of_first,
    .traverse = warm_up_traverse,
    .label = warm_up_label,
};

struct route *route_warm_up(struct route_set *rs, struct route *cold, struct route *warm,
                            int exptime, unsigned hold) {
    struct route *const pair[2] = {cold, warm};
    struct warm_up *w = (struct warm_up *)route_make(rs, &warm_up_ops, sizeof(*w), pair, 2);
    if (w == NULL)
        return NULL;
    w->exptime = exptime;
    w->hold = hold;
    return &w->r;
}

/* {"cold": route, "warm": route, "exptime": INT, "delete_hold": seconds} */
static int build_warm_up(struct rb *b, const struct route_type *t, json_t *obj,
                         struct route **out) {
    (void)t;
    struct route *cold = NULL, *warm = NULL;
    long long exptime, hold;
    if (rb_build_key(b, obj, "cold", true, &cold) < 0 ||
        rb_build_key(b, obj, "warm", true, &warm) < 0 ||
        rb_get_int(b, obj, "exptime", 0, INT_MAX, 0, &exptime) < 0 ||
        rb_get_int(b, obj, "delete_hold", 0, 86400, 0, &hold) < 0)
        return -1;
    *out = route_warm_up(b->cfg->routes, cold, warm, (int)exptime, (unsigned)hold);
    return *out ? 0 : rb_nomem(b);
}

const struct route_type route_type_warm_up = {
    .type = "WarmUpRoute",
    .keys = "cold warm exptime delete_hold",
    .route_keys = "cold warm",
    .map_keys = "",
    .pool_keys = "",
    .build = build_warm_up,
};
