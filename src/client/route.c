/*
 * route.c -- the route set (who owns the routes), the constructors, and
 * describing a tree.  What each kind does with a request is in its own
 * file, route_<kind>.c.
 */
#include "client/route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/config_int.h"

extern const struct route_ops route_server_ops, route_pool_ops, route_failover_ops,
    route_miss_failover_ops, route_all_ops, route_latest_ops, route_opsel_ops,
    route_prefix_ops, route_warm_up_ops, route_null_ops;

struct route_set {
    struct route **all;
    unsigned n, cap;
};

struct route_set *route_set_create(void) {
    return calloc(1, sizeof(struct route_set));
}

static void route_free(struct route *r) {
    if (r->prefixes)
        for (unsigned i = 0; i < r->nchildren; i++)
            free(r->prefixes[i]);
    free(r->prefixes);
    free(r->children);
    free(r);
}

void route_set_destroy(struct route_set **rsp) {
    struct route_set *rs = *rsp;
    if (rs == NULL)
        return;
    for (unsigned i = 0; i < rs->n; i++)
        route_free(rs->all[i]);
    free(rs->all);
    free(rs);
    *rsp = NULL;
}

/* A new route of kind, with a copy of children, owned by rs. */
static struct route *make(struct route_set *rs, enum route_kind kind,
                          const struct route_ops *ops, struct route *const *children,
                          unsigned n) {
    if (rs->n == rs->cap) {
        unsigned cap = rs->cap ? rs->cap * 2 : 16;
        struct route **all = realloc(rs->all, cap * sizeof(*all));
        if (all == NULL)
            return NULL;
        rs->all = all;
        rs->cap = cap;
    }
    struct route *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    if (n) {
        r->children = malloc(n * sizeof(*r->children));
        if (r->children == NULL) {
            free(r);
            return NULL;
        }
        memcpy(r->children, children, n * sizeof(*r->children));
    }
    r->kind = kind;
    r->ops = ops;
    r->nchildren = n;
    r->exptime = -1;
    r->id = rs->n;
    rs->all[rs->n++] = r;
    return r;
}

unsigned route_set_count(const struct route_set *rs) {
    return rs ? rs->n : 0;
}

const struct route *route_set_at(const struct route_set *rs, unsigned i) {
    return rs && i < rs->n ? rs->all[i] : NULL;
}

struct route *route_server(struct route_set *rs, unsigned server) {
    struct route *r = make(rs, ROUTE_SERVER, &route_server_ops, NULL, 0);
    if (r)
        r->target = server;
    return r;
}

struct route *route_pool(struct route_set *rs, unsigned pool) {
    struct route *r = make(rs, ROUTE_POOL, &route_pool_ops, NULL, 0);
    if (r)
        r->target = pool;
    return r;
}

struct route *route_failover(struct route_set *rs, struct route *const *children, unsigned n,
                             int failover_exptime) {
    struct route *r = make(rs, ROUTE_FAILOVER, &route_failover_ops, children, n);
    if (r)
        r->exptime = failover_exptime < 0 ? -1 : failover_exptime;
    return r;
}

struct route *route_miss_failover(struct route_set *rs, struct route *const *children,
                                  unsigned n) {
    return make(rs, ROUTE_MISS_FAILOVER, &route_miss_failover_ops, children, n);
}

struct route *route_all(struct route_set *rs, enum route_kind kind,
                        struct route *const *children, unsigned n) {
    if (kind != ROUTE_ALL_SYNC && kind != ROUTE_ALL_ASYNC && kind != ROUTE_ALL_INITIAL)
        return NULL;
    return make(rs, kind, &route_all_ops, children, n);
}

struct route *route_latest(struct route_set *rs, struct route *const *children, unsigned n,
                           unsigned failover_count) {
    struct route *r = make(rs, ROUTE_LATEST, &route_latest_ops, children, n);
    if (r)
        r->failover_count = failover_count;
    return r;
}

struct route *route_operation_selector(struct route_set *rs,
                                       struct route *const by_op[MSG_OP_COUNT],
                                       struct route *dflt) {
    struct route *r = make(rs, ROUTE_OPERATION_SELECTOR, &route_opsel_ops, NULL, 0);
    if (r) {
        memcpy(r->by_op, by_op, sizeof(r->by_op));
        r->dflt = dflt;
    }
    return r;
}

struct route *route_prefix_selector(struct route_set *rs, const char *const *prefixes,
                                    struct route *const *routes, unsigned n,
                                    struct route *wildcard) {
    struct route *r = make(rs, ROUTE_PREFIX_SELECTOR, &route_prefix_ops, routes, n);
    if (r == NULL)
        return NULL;
    r->dflt = wildcard;
    r->prefixes = calloc(n ? n : 1, sizeof(*r->prefixes));
    if (r->prefixes == NULL)
        return NULL;            /* r stays in the set and is freed with it */
    for (unsigned i = 0; i < n; i++)
        if ((r->prefixes[i] = strdup(prefixes[i])) == NULL)
            return NULL;
    return r;
}

struct route *route_warm_up(struct route_set *rs, struct route *cold, struct route *warm,
                            int exptime) {
    struct route *const pair[2] = {cold, warm};
    struct route *r = make(rs, ROUTE_WARM_UP, &route_warm_up_ops, pair, 2);
    if (r)
        r->exptime = exptime;
    return r;
}

struct route *route_null(struct route_set *rs) {
    return make(rs, ROUTE_NULL, &route_null_ops, NULL, 0);
}

const char *route_kind_name(enum route_kind kind) {
    static const char *const names[ROUTE_KIND_COUNT] = {
        [ROUTE_SERVER] = "Server",
        [ROUTE_POOL] = "PoolRoute",
        [ROUTE_FAILOVER] = "FailoverRoute",
        [ROUTE_MISS_FAILOVER] = "MissFailoverRoute",
        [ROUTE_ALL_SYNC] = "AllSyncRoute",
        [ROUTE_ALL_ASYNC] = "AllAsyncRoute",
        [ROUTE_ALL_INITIAL] = "AllInitialRoute",
        [ROUTE_LATEST] = "LatestRoute",
        [ROUTE_OPERATION_SELECTOR] = "OperationSelectorRoute",
        [ROUTE_PREFIX_SELECTOR] = "PrefixSelectorRoute",
        [ROUTE_WARM_UP] = "WarmUpRoute",
        [ROUTE_NULL] = "NullRoute",
    };
    return (unsigned)kind < ROUTE_KIND_COUNT ? names[kind] : "?";
}

/* ---------------------------------------------------------------------- */
/* Describing a tree                                                        */
/* ---------------------------------------------------------------------- */

struct out {
    char *p;
    size_t cap, len;
};

static void put(struct out *o, const char *s) {
    size_t n = strlen(s);
    if (o->len < o->cap) {
        size_t room = o->cap - o->len - 1, k = n < room ? n : room;
        memcpy(o->p + o->len, s, k);
        o->p[o->len + k] = '\0';
    }
    o->len += n;
}

static void put_num(struct out *o, long v) {
    char b[24];
    snprintf(b, sizeof(b), "%ld", v);
    put(o, b);
}

static void describe(struct out *o, const struct route *r, const struct cellar_config *cfg);

static void describe_list(struct out *o, struct route *const *rs, unsigned n,
                          const struct cellar_config *cfg) {
    put(o, "[");
    for (unsigned i = 0; i < n; i++) {
        if (i)
            put(o, ",");
        describe(o, rs[i], cfg);
    }
    put(o, "]");
}

/* r's kind and settings, without children; false for kinds whose children follow in {} */
static bool label(struct out *o, const struct route *r, const struct cellar_config *cfg) {
    put(o, route_kind_name(r->kind));
    switch (r->kind) {
    case ROUTE_SERVER:
        put(o, "(");
        put(o, cfg->servers[r->target].name);
        put(o, ")");
        break;
    case ROUTE_POOL:
        put(o, "(");
        put(o, cfg->pools[r->target].name);
        put(o, ")");
        break;
    case ROUTE_FAILOVER:
        if (r->exptime >= 0) {
            put(o, "(exptime=");
            put_num(o, r->exptime);
            put(o, ")");
        }
        break;
    case ROUTE_LATEST:
        put(o, "(failover_count=");
        put_num(o, r->failover_count);
        put(o, ")");
        break;
    case ROUTE_WARM_UP:
        put(o, "(exptime=");
        put_num(o, r->exptime);
        if (r->hold) {
            put(o, ",delete_hold=");
            put_num(o, r->hold);
        }
        put(o, ")");
        break;
    default:
        break;
    }
    return r->kind != ROUTE_OPERATION_SELECTOR && r->kind != ROUTE_PREFIX_SELECTOR;
}

int route_label(const struct route *r, const struct cellar_config *cfg, char *out, size_t cap) {
    struct out o = {out, cap, 0};
    if (cap)
        out[0] = '\0';
    label(&o, r, cfg);
    return (int)o.len;
}

static void describe(struct out *o, const struct route *r, const struct cellar_config *cfg) {
    if (r == NULL) {
        put(o, "-");
        return;
    }
    if (label(o, r, cfg)) {         /* servers and pools have no children */
        if (r->nchildren)
            describe_list(o, r->children, r->nchildren, cfg);
        return;
    }
    switch (r->kind) {
    case ROUTE_OPERATION_SELECTOR:
        put(o, "{");
        for (unsigned op = 0; op < MSG_OP_COUNT; op++) {
            if (r->by_op[op] == NULL)
                continue;
            put(o, msg_op_name(op));
            put(o, ":");
            describe(o, r->by_op[op], cfg);
            put(o, ",");
        }
        put(o, "default:");
        describe(o, r->dflt, cfg);
        put(o, "}");
        return;
    case ROUTE_PREFIX_SELECTOR:
        put(o, "{");
        for (unsigned i = 0; i < r->nchildren; i++) {
            put(o, r->prefixes[i]);
            put(o, ":");
            describe(o, r->children[i], cfg);
            put(o, ",");
        }
        put(o, "wildcard:");
        describe(o, r->dflt, cfg);
        put(o, "}");
        return;
    default:                        /* label() said its children follow in [] */
        return;
    }
}

int route_describe(const struct route *r, const struct cellar_config *cfg, char *out,
                   size_t cap) {
    struct out o = {out, cap, 0};
    if (cap)
        out[0] = '\0';
    describe(&o, r, cfg);
    return (int)o.len;
}
