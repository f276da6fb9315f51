/*
 * route_pool.c -- the leaves of the tree: PoolRoute (the key's server in
 * a pool, by the pool's hash, or by its own: mcrouter's "hash", a
 * function and a salt) and a single server ("Pool|A" expands into one per
 * server of A).  Both hand the request to that server's connection in the
 * dispatching handle (through its spool, spool.c, for the ops the pool
 * spools when the handle has one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/handle_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

#define SALT_MAX 128

/* PoolRoute and a single server: which pool or server. */
struct leaf {
    struct route r;
    unsigned target;            /* pool: index in the configuration's pools; server: in servers */
    struct ring *ring;          /* PoolRoute with its own hash function; NULL: the pool's */
    size_t nsalt;
    char salt[SALT_MAX];        /* hashed after the key (mcrouter's "salt") */
};

static unsigned target_of(const struct route *r) {
    return ((const struct leaf *)r)->target;
}

/* The server of key in a PoolRoute's pool: the pool's ring, or the route's own with its salt. */
static unsigned pool_pick(const struct route *r, const struct cellar_config *cfg,
                          const char *key, size_t nkey) {
    const struct leaf *l = (const struct leaf *)r;
    if (l->ring == NULL && l->nsalt == 0)
        return cl_pool_pick(cfg, l->target, key, nkey);
    const struct cl_pool *pl = &cfg->pools[l->target];
    char buf[MC_KEY_MAX + 3 + SALT_MAX];
    size_t n = cl_hash_key(cfg, key, nkey);
    if (n > MC_KEY_MAX + 3)
        n = MC_KEY_MAX + 3;
    memcpy(buf, key, n);
    memcpy(buf + n, l->salt, l->nsalt);
    return pl->first + ring_pick(l->ring ? l->ring : pl->ring, buf, n + l->nsalt);
}

/* To server s: through its spool when the op is one to keep if it fails. */
static void leaf_submit(struct cellar *h, unsigned s, struct cl_req *q) {
    struct cl_conn *c = &h->conns[s];
    if (cl_spool_wants(c, &q->m))
        cl_spool_submit(c, q);
    else
        cl_conn_submit(c, q);
}

static void pool_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (!msg_op_keyed(q->m.op)) {
        q->done(q, CELLAR_ENOTSUP, NULL);   /* keyless ops go to servers, not pools */
        return;
    }
    unsigned s = pool_pick(r, h->cfg, q->m.key.p, q->m.key.len);
    leaf_submit(h, s, q);
}

static void server_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    leaf_submit(h, target_of(r), q);
}

static int pool_server_of(const struct route *r, const struct cellar_config *cfg,
                          const char *key, size_t nkey) {
    return (int)pool_pick(r, cfg, key, nkey);
}

static int server_server_of(const struct route *r, const struct cellar_config *cfg,
                            const char *key, size_t nkey) {
    (void)cfg, (void)key, (void)nkey;
    return (int)target_of(r);
}

static void pool_traverse(const struct route *r, const struct cellar_config *cfg,
                          enum msg_op op, const char *key, size_t nkey, struct route_walk *w,
                          unsigned depth) {
    (void)op;
    if (w->server)
        w->server(w, pool_pick(r, cfg, key, nkey), depth);
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
    const struct leaf *l = (const struct leaf *)r;
    if (l->ring == NULL && l->nsalt == 0) {
        put_name(w, cfg->pools[l->target].name);
        return;
    }
    MC_PUT_LIT(w, "(");
    const char *name = cfg->pools[l->target].name;
    mc_put(w, name, strlen(name));
    MC_PUT_LIT(w, ",hash=");
    const char *kind = ring_kind(l->ring ? l->ring : cfg->pools[l->target].ring);
    mc_put(w, kind, strlen(kind));
    if (l->nsalt) {
        MC_PUT_LIT(w, ",salt=");
        mc_put(w, l->salt, l->nsalt);
    }
    MC_PUT_LIT(w, ")");
}

static void pool_release(struct route *r) {
    ring_destroy(&((struct leaf *)r)->ring);
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
    .release = pool_release,
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

/* mcrouter's hash functions a PoolRoute may name, as our rings (NULL: not a ring). */
static const struct {
    const char *name, *ring;
} hash_funcs[] = {
    {"Ch3", "ch3"}, {"Crc32", "crc32"}, {"WeightedCh3", "wch3"}, {"Latest", NULL},
};

/*
 * "weights" of a WeightedCh3 hash: one in [0, 1] per server of pool, into
 * s[].weight as mcrouter scales them (a missing one is 0.5, as mcrouter's).
 */
static int wch3_weights(struct rb *b, json_t *hash, const struct cl_pool *pl,
                        struct ring_server *s) {
    json_t *w = json_is_object(hash) ? json_object_get(hash, "weights") : NULL;
    if (!json_is_array(w))
        return rb_fail(b, "WeightedCh3 needs \"weights\": a list of numbers in [0, 1]");
    size_t mark = rb_path_key(b, "weights");
    for (unsigned i = 0; i < pl->n; i++) {
        json_t *e = json_array_get(w, i);
        double d = 0.5;
        if (e != NULL) {
            if (!json_is_number(e) || json_number_value(e) < 0 || json_number_value(e) > 1) {
                rb_path_index(b, i);
                return rb_fail(b, "a weight is a number in [0, 1]");
            }
            d = json_number_value(e);
        }
        s[i].weight = (uint32_t)(uint64_t)(d * 4294967295.0);
    }
    rb_path_set(b, mark);
    return 0;
}

/*
 * A PoolRoute's "hash": a function's name, or {"hash_func": NAME, "salt":
 * STRING, "weights": [...] (WeightedCh3), "failover_count": INT (Latest)}.
 * Builds *out over pool.
 */
static int build_hashed(struct rb *b, json_t *hash, unsigned pool, struct route **out) {
    size_t mark = rb_path_key(b, "hash");
    const char *func = "Ch3", *salt = "";
    if (json_is_object(hash)) {
        if (rb_check_keys(b, hash, "hash_func salt weights failover_count", "a hash") < 0)
            return -1;
        json_t *f = json_object_get(hash, "hash_func"), *sv = json_object_get(hash, "salt");
        if ((f && !json_is_string(f)) || (sv && !json_is_string(sv)))
            return rb_fail(b, "hash_func and salt are strings");
        func = f ? json_string_value(f) : func;
        salt = sv ? json_string_value(sv) : salt;
    } else if (json_is_string(hash)) {
        func = json_string_value(hash);
    } else {
        return rb_fail(b, "expected a hash function's name or an object, not %s",
                       rb_type_name(hash));
    }
    size_t k = 0, nf = sizeof(hash_funcs) / sizeof(hash_funcs[0]);
    while (k < nf && strcmp(hash_funcs[k].name, func) != 0)
        k++;
    if (k == nf)
        return rb_fail(b, "hash function \"%s\" is not one cellar knows (Ch3, Crc32, "
                          "WeightedCh3, Latest)", func);
    if (strlen(salt) > SALT_MAX)
        return rb_fail(b, "a salt of more than %d bytes", SALT_MAX);
    struct cellar_config *cfg = b->cfg;
    const struct cl_pool *pl = &cfg->pools[pool];
    if (hash_funcs[k].ring == NULL) {       /* Latest: LatestRoute over the pool's servers */
        long long count;
        if (*salt)
            return rb_fail(b, "Latest takes no salt");
        if (rb_get_int(b, hash, "failover_count", 0, UINT32_MAX, 5, &count) < 0)
            return -1;
        struct route_list l = {0};
        for (unsigned i = 0; i < pl->n; i++)
            if (rb_push(b, &l, route_server(cfg->routes, pl->first + i)) < 0) {
                free(l.v);
                return -1;
            }
        *out = route_latest(cfg->routes, l.v, l.n, (unsigned)count);
        free(l.v);
        rb_path_set(b, mark);
        return *out ? 0 : rb_nomem(b);
    }
    struct ring_server *s = calloc(pl->n, sizeof(*s));
    if (s == NULL)
        return rb_nomem(b);
    for (unsigned i = 0; i < pl->n; i++)
        s[i] = (struct ring_server){cfg->servers[pl->first + i].host,
                                    cfg->servers[pl->first + i].port, 1};
    const char *why = NULL;
    struct ring *ring = NULL;
    if (strcmp(hash_funcs[k].ring, "wch3") == 0 && wch3_weights(b, hash, pl, s) < 0) {
        free(s);
        return -1;
    }
    ring = ring_create(hash_funcs[k].ring, s, pl->n, &why);
    free(s);
    if (ring == NULL)
        return rb_fail(b, "%s", why);
    struct leaf *l = (struct leaf *)route_pool(cfg->routes, pool);
    if (l == NULL) {
        ring_destroy(&ring);
        return rb_nomem(b);
    }
    l->ring = ring;
    l->nsalt = strlen(salt);
    memcpy(l->salt, salt, l->nsalt);
    *out = &l->r;
    rb_path_set(b, mark);
    return 0;
}

/* {"type": "PoolRoute", "pool": NAME | pool with "name", "hash": ...} */
static int build_pool(struct rb *b, const struct route_type *t, json_t *obj,
                      struct route **out) {
    (void)t;
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
    json_t *hash = json_object_get(obj, "hash");
    if (hash != NULL)
        return build_hashed(b, hash, (unsigned)pool, out);
    *out = route_pool(b->cfg->routes, (unsigned)pool);
    return *out ? 0 : rb_nomem(b);
}

/* "PoolRoute|P" */
static int pool_from_string(struct rb *b, const char *s, const char *arg,
                            struct route_list *l) {
    if (arg == NULL)
        return rb_fail(b, "\"%s\" needs a pool, as \"PoolRoute|A\"", s);
    int pool = rb_find_pool(b, arg);
    return pool < 0 ? -1 : rb_push(b, l, route_pool(b->cfg->routes, (unsigned)pool));
}

const struct route_type route_type_pool = {
    .type = "PoolRoute",
    .keys = "pool hash",
    .route_keys = "",
    .map_keys = "",
    .pool_keys = "pool",
    .build = build_pool,
    .from_string = pool_from_string,
};
