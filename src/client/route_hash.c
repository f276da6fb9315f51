/*
 * route_hash.c -- HashRoute: one child per key, picked by a hash function
 * of mcrouter's over the key (up to a "|#|", as every key of a JSON
 * configuration) and a salt after it:
 *
 *   Ch3          mcrouter's default (ring_ch3.c)
 *   Crc32        (crc32(key) & 0x7fffffff) % n (ring_crc32.c)
 *   WeightedCh3  Ch3 with a weight in [0, 1] per child (ring_wch3.c)
 *   ConstShard   a key "prefix:N:rest" to child N, any other by Ch3
 *                (ring_const_shard.c)
 *   Latest       LatestRoute over the children (failover_count)
 *
 * mcrouter's PoolRoute with a "hash" is this over the pool's servers
 * (route_pool.c); without one, a PoolRoute uses the pool's own ring.
 * The hash functions place by position only, so the ring is made over
 * the children's places.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/ring_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

#define SALT_MAX 128
#define FAILOVER_COUNT 5        /* Latest's default, as LatestRoute's */

struct hash_route {
    struct route r;
    struct ring *ring;
    uint32_t buckets;           /* mcrouter's bucketize: hash the key's bucket, not the key
                                   (0: the key) */
    size_t nsalt;
    char salt[SALT_MAX];
};

static const struct hash_route *hr(const struct route *r) {
    return (const struct hash_route *)r;
}

/* The child key goes to. */
static const struct route *pick(const struct route *r, const struct cellar_config *cfg,
                                const char *key, size_t nkey) {
    const struct hash_route *h = hr(r);
    char buf[MC_KEY_MAX + 3 + SALT_MAX], bucket[12];
    size_t n = cl_hash_key(cfg, key, nkey);
    if (h->buckets) {           /* mcrouter's McBucketRoute: Ch3 of the key over the buckets */
        n = (size_t)snprintf(bucket, sizeof(bucket), "%u", ring_furc(key, n, h->buckets));
        key = bucket;
    }
    if (h->nsalt == 0)
        return r->children[ring_pick(h->ring, key, n)];
    if (n > MC_KEY_MAX + 3)
        n = MC_KEY_MAX + 3;
    memcpy(buf, key, n);
    memcpy(buf + n, h->salt, h->nsalt);
    return r->children[ring_pick(h->ring, buf, n + h->nsalt)];
}

static void hash_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (!msg_op_keyed(q->m.op)) {
        q->done(q, CELLAR_ENOTSUP, NULL);   /* keyless ops go to servers, not by key */
        return;
    }
    route_dispatch(pick(r, h->cfg, q->m.key.p, q->m.key.len), h, q);
}

static int hash_server_of(const struct route *r, const struct cellar_config *cfg,
                          const char *key, size_t nkey) {
    return route_server_of(pick(r, cfg, key, nkey), cfg, key, nkey);
}

static void hash_traverse(const struct route *r, const struct cellar_config *cfg,
                          enum msg_op op, const char *key, size_t nkey, struct route_walk *w,
                          unsigned depth) {
    route_traverse(pick(r, cfg, key, nkey), cfg, op, key, nkey, w, depth);
}

static void hash_label(const struct route *r, const struct cellar_config *cfg,
                       struct mc_put *w) {
    (void)cfg;
    const char *kind = ring_kind(hr(r)->ring);
    MC_PUT_LIT(w, "(");
    mc_put(w, kind, strlen(kind));
    if (hr(r)->nsalt) {
        MC_PUT_LIT(w, ",salt=");
        mc_put(w, hr(r)->salt, hr(r)->nsalt);
    }
    if (hr(r)->buckets) {
        MC_PUT_LIT(w, ",buckets=");
        mc_put_u64(w, hr(r)->buckets);
    }
    MC_PUT_LIT(w, ")");
}

static void hash_release(struct route *r) {
    ring_destroy(&((struct hash_route *)r)->ring);
}

static const struct route_ops hash_ops = {
    .name = "HashRoute",
    .dispatch = hash_dispatch,
    .server_of = hash_server_of,
    .traverse = hash_traverse,
    .label = hash_label,
    .release = hash_release,
};

/*
 * A HashRoute over kids[0..n) with a ring of kind over s (the children's
 * places; weights for wch3) and salt; NULL with *why when the ring cannot
 * be made, or out of memory.
 */
static struct route *make(struct route_set *rs, const char *kind, const struct ring_server *s,
                          struct route *const *kids, unsigned n, const char *salt,
                          const char **why) {
    *why = "out of memory";
    struct ring *ring = ring_create(kind, s, n, why);
    if (ring == NULL)
        return NULL;
    struct hash_route *h =
        (struct hash_route *)route_make(rs, &hash_ops, sizeof(struct hash_route), kids, n);
    if (h == NULL) {
        ring_destroy(&ring);
        return NULL;
    }
    h->ring = ring;
    h->nsalt = strlen(salt);
    memcpy(h->salt, salt, h->nsalt);
    return &h->r;
}

/* The children's places for a ring: position is all the hash functions read. */
static struct ring_server *places(unsigned n) {
    struct ring_server *s = calloc(n, sizeof(*s));
    for (unsigned i = 0; s != NULL && i < n; i++)
        s[i] = (struct ring_server){"", (uint16_t)i, 1};
    return s;
}

/* mcrouter's hash functions, as our rings (NULL: Latest, a LatestRoute). */
static const struct {
    const char *name, *ring;
} funcs[] = {
    {"Ch3", "ch3"}, {"Crc32", "crc32"}, {"WeightedCh3", "wch3"}, {"ConstShard", "constshard"},
    {"Latest", NULL},
};

/*
 * spec's "weights" (WeightedCh3): one in [0, 1] per child, into s[].weight
 * as mcrouter scales them; a missing one is 0.5, as mcrouter's.  Without
 * any, a pool's own (given, scaled so already) are taken.
 */
static int weights_or(struct rb *b, json_t *spec, struct ring_server *s, unsigned n,
                      const uint32_t *pool_weights) {
    json_t *w = json_is_object(spec) ? json_object_get(spec, "weights") : NULL;
    if (w == NULL && pool_weights) {
        for (unsigned i = 0; i < n; i++)
            s[i].weight = pool_weights[i];
        return 0;
    }
    if (!json_is_array(w))
        return rb_fail(b, "WeightedCh3 needs \"weights\": a list of numbers in [0, 1]");
    size_t mark = rb_path_key(b, "weights");
    for (unsigned i = 0; i < n; i++) {
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

static int weights(struct rb *b, json_t *spec, struct ring_server *s, unsigned n) {
    return weights_or(b, spec, s, n, NULL);
}

int rb_hash_ring(struct rb *b, const char *func, json_t *spec, unsigned n,
                 struct ring **out) {
    *out = NULL;
    size_t k = 0, nf = sizeof(funcs) / sizeof(funcs[0]);
    while (k < nf && !(funcs[k].ring && strcmp(funcs[k].name, func) == 0))
        k++;
    if (k == nf)
        return rb_fail(b, "hash function \"%s\" is not one cellar knows here (Ch3, Crc32, "
                          "WeightedCh3)", func);
    struct ring_server *s = places(n);
    if (s == NULL)
        return rb_nomem(b);
    const char *why = NULL;
    if (strcmp(funcs[k].ring, "wch3") != 0 || weights(b, spec, s, n) == 0)
        *out = ring_create(funcs[k].ring, s, n, &why);
    free(s);
    if (why != NULL && *out == NULL)
        return rb_fail(b, "%s", why);
    return *out ? 0 : -1;
}

int rb_build_hash(struct rb *b, json_t *spec, struct route *const *kids, unsigned n,
                  struct route **out) {
    return rb_build_pool_hash(b, spec, kids, n, NULL, 0, out);
}

int rb_build_pool_hash(struct rb *b, json_t *spec, struct route *const *kids, unsigned n,
                       const uint32_t *pool_weights, uint32_t buckets, struct route **out) {
    const char *func = pool_weights ? "WeightedCh3" : "Ch3", *salt = "";
    if (json_is_object(spec)) {
        json_t *f = json_object_get(spec, "hash_func"), *sv = json_object_get(spec, "salt");
        if ((f && !json_is_string(f)) || (sv && !json_is_string(sv))) {
            rb_path_key(b, f && !json_is_string(f) ? "hash_func" : "salt");
            return rb_fail(b, "expected a string");
        }
        func = f ? json_string_value(f) : func;
        salt = sv ? json_string_value(sv) : salt;
    } else if (json_is_string(spec)) {
        func = json_string_value(spec);
    } else if (spec != NULL) {
        return rb_fail(b, "expected a hash function's name or an object, not %s",
                       rb_type_name(spec));
    }
    size_t k = 0, nf = sizeof(funcs) / sizeof(funcs[0]);
    while (k < nf && strcmp(funcs[k].name, func) != 0)
        k++;
    if (k == nf)
        return rb_fail(b, "hash function \"%s\" is not one cellar knows (Ch3, Crc32, "
                          "WeightedCh3, ConstShard, Latest)", func);
    if (strlen(salt) > SALT_MAX)
        return rb_fail(b, "a salt of more than %d bytes", SALT_MAX);
    struct route_set *rs = b->cfg->routes;
    if (n == 0) {
        *out = rb_empty_hash(b, "");
        return *out ? 0 : rb_nomem(b);
    }
    if (funcs[k].ring == NULL) {
        long long count;
        if (*salt)
            return rb_fail(b, "Latest takes no salt");
        if (rb_get_int(b, json_is_object(spec) ? spec : NULL, "failover_count", 0, UINT32_MAX,
                       FAILOVER_COUNT, &count) < 0)
            return -1;
        *out = route_latest(rs, kids, n, (unsigned)count);
        return *out ? 0 : rb_nomem(b);
    }
    if (n == 1 && !json_is_object(spec)) {
        *out = kids[0];         /* one child: no hash to ask, as mcrouter builds it */
        return 0;
    }
    struct ring_server *s = places(n);
    if (s == NULL)
        return rb_nomem(b);
    if (strcmp(funcs[k].ring, "wch3") == 0 && weights_or(b, spec, s, n, pool_weights) < 0) {
        free(s);
        return -1;
    }
    const char *why;
    *out = make(rs, funcs[k].ring, s, kids, n, salt, &why);
    free(s);
    if (*out && buckets)
        ((struct hash_route *)*out)->buckets = buckets;
    return *out ? 0 : rb_fail(b, "%s", why);
}

/* {"type": "HashRoute", "children": route, "hash_func", "salt", "weights", "failover_count"} */
static int build_hash(struct rb *b, const struct route_type *t, json_t *obj,
                      struct route **out) {
    (void)t;
    struct route_list l = {0};
    int rc = rb_build_key_list(b, obj, "children", &l);
    if (rc == 0)
        rc = rb_build_hash(b, obj, l.v, l.n, out);
    free(l.v);
    return rc;
}

static struct route *hash_over(struct route_set *rs, const struct route_type *t,
                               struct route *const *v, unsigned n) {
    (void)t;
    if (n == 1)
        return v[0];
    struct ring_server *s = places(n);
    const char *why;
    struct route *r = s ? make(rs, "ch3", s, v, n, "", &why) : NULL;
    free(s);
    return r;
}

const struct route_type route_type_hash = {
    .type = "HashRoute",
    .keys = "children hash_func salt weights failover_count",
    .route_keys = "children",
    .map_keys = "",
    .pool_keys = "",
    .build = build_hash,
    .over = hash_over,
};
