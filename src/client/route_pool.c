/*
 * route_pool.c -- the leaves of the tree: PoolRoute (the key's server in
 * a pool, by the pool's hash; with mcrouter's "hash" of its own, a
 * HashRoute over the pool's servers, route_hash.c) and a single server
 * ("Pool|A" expands into one per server of A).  Both hand the request to
 * that server's connection in the dispatching handle (through its spool,
 * spool.c, for the ops the pool spools when the handle has one).
 */
#include <stdlib.h>
#include <string.h>

#include "client/handle_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

/* PoolRoute and a single server: which pool or server. */
struct leaf {
    struct route r;
    unsigned target;            /* pool: index in the configuration's pools; server: in servers */
};

static unsigned target_of(const struct route *r) {
    return ((const struct leaf *)r)->target;
}

static void keep_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    cl_child_end((struct cl_child *)q, status, rep);
}

/* q again with the routing prefix its key lost (keep_routing_prefix), or NULL (answered). */
__attribute__((noinline)) static struct cl_req *with_prefix(struct cellar *h, struct cl_req *q) {
    struct cl_child *c = cl_child_get(h, NULL, q, keep_done);
    if (c == NULL)
        return NULL;
    c->q.m.key.p -= q->m.prefix_len;
    c->q.m.key.len += q->m.prefix_len;
    c->q.m.prefix_len = 0;
    return &c->q;
}

/*
 * To server s: through its spool when the op is one to keep if it fails;
 * with the routing prefix put back when its pool keeps it.
 */
static void leaf_submit(struct cellar *h, unsigned s, struct cl_req *q) {
    if (__builtin_expect(q->m.prefix_len != 0, 0) &&
        h->cfg->pools[h->cfg->servers[s].pool].keep_prefix && (q = with_prefix(h, q)) == NULL)
        return;
    struct cl_conn *c = &h->conns[s];
    if (cl_spool_wants(c, &q->m))
        cl_spool_submit(c, q);
    else
        cl_conn_submit(c, q);
}

/*
 * A PoolRoute with children (one per server, some shadowed) sends to the
 * key's server's child; without, to the server itself.
 */
static void pool_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (!msg_op_keyed(q->m.op)) {
        q->done(q, CELLAR_ENOTSUP, NULL);   /* keyless ops go to servers, not pools */
        return;
    }
    unsigned s = cl_pool_pick(h->cfg, target_of(r), q->m.key.p, q->m.key.len);
    if (r->nchildren)
        route_dispatch(r->children[s - h->cfg->pools[target_of(r)].first], h, q);
    else
        leaf_submit(h, s, q);
}

static void server_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    leaf_submit(h, target_of(r), q);
}

static int pool_server_of(const struct route *r, const struct cellar_config *cfg,
                          const char *key, size_t nkey) {
    return (int)cl_pool_pick(cfg, target_of(r), key, nkey);
}

static int server_server_of(const struct route *r, const struct cellar_config *cfg,
                            const char *key, size_t nkey) {
    (void)cfg, (void)key, (void)nkey;
    return (int)target_of(r);
}

static void pool_traverse(const struct route *r, const struct cellar_config *cfg,
                          enum msg_op op, const char *key, size_t nkey, struct route_walk *w,
                          unsigned depth) {
    unsigned s = cl_pool_pick(cfg, target_of(r), key, nkey);
    if (r->nchildren)
        route_traverse(r->children[s - cfg->pools[target_of(r)].first], cfg, op, key, nkey, w,
                       depth);
    else if (w->server)
        w->server(w, s, depth);
}

static void server_traverse(const struct route *r, const struct cellar_config *cfg,
                            enum msg_op op, const char *key, size_t nkey, struct route_walk *w,
                            unsigned depth) {
    (void)cfg, (void)op, (void)key, (void)nkey;
    if (w->server)
        w->server(w, target_of(r), depth);
}

static void put_name(struct mc_put *w, const char *name) {
    MC_PUT_LIT(w, "(");
    mc_put(w, name, strlen(name));
    MC_PUT_LIT(w, ")");
}

static void pool_label(const struct route *r, const struct cellar_config *cfg,
                       struct mc_put *w) {
    put_name(w, cfg->pools[target_of(r)].name);
}

static void server_label(const struct route *r, const struct cellar_config *cfg,
                         struct mc_put *w) {
    put_name(w, cfg->servers[target_of(r)].name);
}

static const struct route_ops pool_ops = {
    .name = "PoolRoute",
    .dispatch = pool_dispatch,
    .server_of = pool_server_of,
    .traverse = pool_traverse,
    .label = pool_label,
};

static const struct route_ops server_ops = {
    .name = "Server",
    .dispatch = server_dispatch,
    .server_of = server_server_of,
    .traverse = server_traverse,
    .label = server_label,
};

static struct route *leaf(struct route_set *rs, const struct route_ops *ops, unsigned target) {
    struct route *r = route_make(rs, ops, sizeof(struct leaf), NULL, 0);
    if (r)
        ((struct leaf *)r)->target = target;
    return r;
}

struct route *route_server(struct route_set *rs, unsigned server) {
    return leaf(rs, &server_ops, server);
}

struct route *route_pool(struct route_set *rs, unsigned pool) {
    return leaf(rs, &pool_ops, pool);
}

static const struct rb_members *members_of(const struct rb *b, unsigned pool) {
    for (unsigned i = 0; i < b->nmembers; i++)
        if (b->members[i].pool == pool)
            return &b->members[i];
    return NULL;
}

bool rb_pool_has_routes(const struct rb *b, unsigned pool) {
    return members_of(b, pool) != NULL;
}

int rb_pool_routes(struct rb *b, unsigned pool, struct route_list *l) {
    const struct cl_pool *pl = &b->cfg->pools[pool];
    const struct rb_members *m = members_of(b, pool);
    unsigned next = pl->first;
    for (unsigned i = 0; i < (m ? m->n : pl->n); i++) {
        struct route *r;
        if (m && m->route[i]) {
            char saved[RB_PATH_LEN];        /* errors name the entry's own place */
            size_t saved_len = b->plen;
            memcpy(saved, b->path, saved_len + 1);
            rb_path_set(b, 0);
            rb_path_put(b, "pools.%s.servers[%u]", pl->name, i);
            if (rb_build_one(b, m->route[i], &r) < 0)
                return -1;
            memcpy(b->path, saved, saved_len + 1);
            b->plen = saved_len;
        } else {
            r = route_server(b->cfg->routes, next++);
        }
        if (rb_push(b, l, r) < 0)
            return -1;
    }
    return 0;
}

/*
 * A PoolRoute with a "hash" (a function's name, or {"hash_func", "salt",
 * "weights", "failover_count"}: mcrouter's HashRoute over the pool's
 * servers, route_hash.c) or "shadows" (some servers wrapped in
 * ShadowRoutes, route_shadow.c): a route per server, then the hash's
 * route over them, or the pool's own ring over them.
 */
static int build_children(struct rb *b, json_t *obj, unsigned pool, uint32_t buckets,
                          struct route **out) {
    json_t *hash = json_object_get(obj, "hash"), *shadows = json_object_get(obj, "shadows");
    const struct cl_pool *pl = &b->cfg->pools[pool];
    struct route_list l = {0};
    int rc = 0;
    for (unsigned i = 0; rc == 0 && i < pl->n; i++)
        rc = rb_push(b, &l, route_server(b->cfg->routes, pl->first + i));
    if (rc == 0 && json_object_get(obj, "slow_warmup"))
        rc = rb_slow_warmup(b, json_object_get(obj, "slow_warmup"), l.v, l.n);
    if (rc == 0 && shadows)
        rc = rb_build_shadows(b, shadows, l.v, l.n);
    /* a pool's own weights (mcrouter's WeightedCh3) go with its PoolRoute's hash */
    const char *kind = ring_kind(pl->ring);
    bool wch3 = strcmp(kind, "wch3") == 0;
    uint32_t *weights = rc == 0 && (hash || buckets) && wch3 ? calloc(pl->n, sizeof(*weights))
                                                            : NULL;
    for (unsigned i = 0; weights && i < pl->n; i++)
        weights[i] = b->cfg->servers[pl->first + i].weight;
    if (rc == 0 && (hash || buckets) && wch3 && weights == NULL)
        rc = rb_nomem(b);
    if (rc == 0 && buckets && !hash && strcmp(kind, "ch3") != 0 && !wch3)
        rc = rb_fail(b, "bucketize hashes as mcrouter's Ch3 or WeightedCh3, not a %s pool", kind);
    if (rc == 0 && (hash || buckets)) {
        size_t mark = rb_path_key(b, "hash");
        if (json_is_object(hash))
            rc = rb_check_keys(b, hash, "hash_func salt weights failover_count", "a hash");
        if (rc == 0)
            rc = rb_build_pool_hash(b, hash, l.v, l.n, weights, buckets, out);
        if (rc == 0)
            rb_path_set(b, mark);
    } else if (rc == 0) {
        *out = route_make(b->cfg->routes, &pool_ops, sizeof(struct leaf), l.v, l.n);
        if (*out)
            ((struct leaf *)*out)->target = pool;
        else
            rc = rb_nomem(b);
    }
    free(weights);
    free(l.v);
    return rc;
}

/*
 * A PoolRoute over a pool with routes among its servers: mcrouter's
 * HashRoute over the entries (obj's "hash", Ch3 by default), the pool's
 * own hash having only its servers.
 */
static int with_routes(struct rb *b, json_t *obj, unsigned pool, struct route **out) {
    json_t *hash = obj ? json_object_get(obj, "hash") : NULL;
    if (obj && (json_object_get(obj, "shadows") || json_object_get(obj, "bucketize") ||
                json_object_get(obj, "slow_warmup")))
        return rb_fail(b, "shadows, bucketize or slow_warmup over a pool with routes among its "
                          "servers");
    struct route_list l = {0};
    int rc = rb_pool_routes(b, pool, &l);
    if (rc == 0)
        rc = rb_build_hash(b, hash, l.v, l.n, out);
    free(l.v);
    return rc;
}

/*
 * mcrouter's "bucketize": true, "total_buckets": 1 .. 2^23, and
 * "bucketization_keyspace" (a name, required as mcrouter requires it):
 * into *buckets (0: not bucketized).
 */
static int bucketize(struct rb *b, json_t *obj, uint32_t *buckets) {
    bool on;
    *buckets = 0;
    if (rb_get_bool(b, obj, "bucketize", &on) < 0)
        return -1;
    if (!on)
        return 0;
    json_t *ks = rb_need(b, obj, "bucketization_keyspace");
    if (ks == NULL || rb_need(b, obj, "total_buckets") == NULL)
        return -1;
    if (!json_is_string(ks)) {
        rb_path_key(b, "bucketization_keyspace");
        return rb_fail(b, "expected a string");
    }
    long long n;
    if (rb_get_int(b, obj, "total_buckets", 1, 1 << 23, 0, &n) < 0)
        return -1;
    *buckets = (uint32_t)n;
    return 0;
}

static int build_pool_route(struct rb *b, json_t *obj, struct route **out);

/* {"type": "PoolRoute", "pool": NAME | pool with "name", "hash": ..., "shard_splits": ...} */
static int build_pool(struct rb *b, const struct route_type *t, json_t *obj,
                      struct route **out) {
    (void)t;
    json_t *splits = json_object_get(obj, "shard_splits");
    struct route *r;
    if (build_pool_route(b, obj, &r) < 0)
        return -1;
    if (splits == NULL) {
        *out = r;
        return 0;
    }
    return rb_shard_splits(b, splits, r, out);
}

static int build_pool_route(struct rb *b, json_t *obj, struct route **out) {
    json_t *v = rb_need(b, obj, "pool");
    if (v == NULL)
        return -1;
    size_t mark = rb_path_key(b, "pool");
    /* An inline pool was added by the scan; here it is only looked up. */
    json_t *name = json_is_object(v) ? json_object_get(v, "name") : v;
    if (!json_is_string(name))
        return rb_fail(b, json_is_object(v) ? "an inline pool needs a \"name\""
                                            : "expected a pool's name or a pool object");
    int pool = rb_find_pool(b, json_string_value(name));
    if (pool < 0)
        return -1;
    rb_path_set(b, mark);
    if (rb_pool_has_routes(b, (unsigned)pool))
        return with_routes(b, obj, (unsigned)pool, out);
    if (b->cfg->pools[pool].n == 0) {
        *out = rb_empty_hash(b, json_string_value(name));
        return *out ? 0 : rb_nomem(b);
    }
    uint32_t buckets;
    if (bucketize(b, obj, &buckets) < 0)
        return -1;
    if (json_object_get(obj, "hash") || json_object_get(obj, "shadows") || buckets ||
        json_object_get(obj, "slow_warmup"))
        return build_children(b, obj, (unsigned)pool, buckets, out);
    *out = route_pool(b->cfg->routes, (unsigned)pool);
    return *out ? 0 : rb_nomem(b);
}

/* "PoolRoute|P" */
static int pool_from_string(struct rb *b, const char *s, const char *arg,
                            struct route_list *l) {
    if (arg == NULL)
        return rb_fail(b, "\"%s\" needs a pool, as \"PoolRoute|A\"", s);
    int pool = rb_find_pool(b, arg);
    if (pool < 0)
        return -1;
    if (rb_pool_has_routes(b, (unsigned)pool)) {
        struct route *r;
        return with_routes(b, NULL, (unsigned)pool, &r) < 0 ? -1 : rb_push(b, l, r);
    }
    return rb_push(b, l, b->cfg->pools[pool].n == 0 ? rb_empty_hash(b, arg)
                                                    : route_pool(b->cfg->routes, (unsigned)pool));
}

const struct route_type route_type_pool = {
    .type = "PoolRoute",
    .keys = "pool hash shadows bucketize total_buckets bucketization_keyspace shard_splits "
            "slow_warmup",
    .route_keys = "",
    .map_keys = "",
    .pool_keys = "pool",
    .build = build_pool,
    .from_string = pool_from_string,
};
