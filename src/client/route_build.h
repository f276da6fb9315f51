/*
 * route_build.h -- building routes from mcrouter's JSON: what a route
 * kind's builder (in its route_<kind>.c) is given.
 *
 * config_json.c reads the grammar (pools, named handles, strings, lists,
 * "routes"); when it meets an object {"type": T, ...} it finds T's
 * struct route_type (route_types.c, the one table of every kind) and
 * calls its build, which reads its own keys with the rb_* helpers below
 * and makes its route with its constructor.  A builder builds the routes
 * it holds through rb_build_key() and friends, which come back to the
 * grammar through the two calls struct rb carries.
 *
 * Every error names its place: the builders keep rb's path (a JSON path,
 * route.policies."a:".children[1]) up to date with rb_path_key() and
 * rb_path_set(), and rb_fail() writes "path: why".
 */
#ifndef CELLAR_CLIENT_ROUTE_BUILD_H
#define CELLAR_CLIENT_ROUTE_BUILD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "client/config_int.h"

#define RB_PATH_LEN 512         /* longer paths are cut short in messages */
#define RB_DEPTH_MAX 100        /* routes nested deeper than this are refused */

/* A growing list of routes; the constructors copy it. */
struct route_list {
    struct route **v;
    unsigned n, cap;
};

struct route_type;

/* The builder's state; path names the value being looked at. */
struct rb {
    struct cellar_config *cfg;
    const struct cellar_options *opt;
    const struct cellar_routing *routing;   /* never NULL */
    char *err;
    size_t errlen;
    char path[RB_PATH_LEN];
    size_t plen;
    unsigned depth;
    bool nomem;                 /* rb_nomem() was said: not an error to pass over */
    json_t *vars;               /* routing->runtime_vars_file's, parsed (NULL: none) */
    struct rb_members *members; /* the pools with routes among their servers */
    unsigned nmembers;
    /* The grammar's (config_json.c): a route, a string that may stand
     * for several, or a list, appended to l. */
    int (*build_list)(struct rb *b, json_t *v, struct route_list *l);
    /* The grammar's too: kind t over v[0..n), none included (NullRoute, or
     * HashRoute's error, as mcrouter builds them); NULL when out of memory. */
    struct route *(*over)(struct rb *b, const struct route_type *t, struct route *const *v,
                          unsigned n);
};

/*
 * A route type as the JSON names it ("FailoverRoute"); several types may
 * share a kind (AllSyncRoute and AllAsyncRoute are route_all.c's).
 */
struct route_type {
    const char *type;
    const char *keys;           /* its object's keys besides type and name (space-separated) */
    const char *route_keys;     /* ... of them, those holding a route or a list of routes */
    const char *map_keys;       /* ... those holding an object of routes */
    const char *pool_keys;      /* ... those that may hold an inline pool */
    /* Builds *out from obj, whose keys were checked against keys. */
    int (*build)(struct rb *b, const struct route_type *t, json_t *obj, struct route **out);
    /*
     * For kinds over a list of children: the kind over v[0..n) with its
     * defaults, so that "TYPE|routes" builds it; NULL for the rest.
     */
    struct route *(*over)(struct route_set *rs, const struct route_type *t,
                          struct route *const *v, unsigned n);
    /*
     * For kinds not over a list that may be written as a string: s is
     * "TYPE" or "TYPE|arg" (arg NULL or after the bar), appended to l.
     * NULL: written only as an object.
     */
    int (*from_string)(struct rb *b, const char *s, const char *arg, struct route_list *l);
    /*
     * For kinds that make one route per child (mcrouter's ShadowRoute):
     * builds obj's routes, appended to l, where a list may stand
     * (an unnamed object); NULL for the rest.  build still makes one.
     */
    int (*build_many)(struct rb *b, const struct route_type *t, json_t *obj,
                      struct route_list *l);
    int mode;                   /* the type's setting, for kinds with several types */
};

/* The type named type[0..len), or NULL: the table in route_types.c. */
const struct route_type *route_type_find(const char *type, size_t len);

/* Writes "path: why" into b's err; returns -1. */
__attribute__((format(printf, 2, 3))) int rb_fail(struct rb *b, const char *fmt, ...);
int rb_nomem(struct rb *b);
/* "an object", "a list", ...: for messages. */
const char *rb_type_name(const json_t *v);

/* Appends .key (quoted unless bare), [i], or text to the path; the first
 * two return the mark rb_path_set() goes back to. */
size_t rb_path_key(struct rb *b, const char *key);
size_t rb_path_index(struct rb *b, size_t i);
__attribute__((format(printf, 2, 3))) void rb_path_put(struct rb *b, const char *fmt, ...);
void rb_path_set(struct rb *b, size_t mark);

/* Is word one of the space-separated words of list? */
bool rb_has_word(const char *list, const char *word);
/* Refuses a key of obj outside allowed (space-separated); what names the object. */
int rb_check_keys(struct rb *b, json_t *obj, const char *allowed, const char *what);
/* obj[key], which must be there; NULL with the error said. */
json_t *rb_need(struct rb *b, json_t *obj, const char *key);
/* obj[key] as an integer in [lo, hi] into *out; dflt when absent. */
int rb_get_int(struct rb *b, json_t *obj, const char *key, long long lo, long long hi,
               long long dflt, long long *out);
/* obj[key] as true or false into *out; false when absent. */
int rb_get_bool(struct rb *b, json_t *obj, const char *key, bool *out);
/* Checks that obj[key], when there, is an object. */
int rb_check_map(struct rb *b, json_t *obj, const char *key);
/* The pool named name, or -1 with the error said. */
int rb_find_pool(struct rb *b, const char *name);

/* Appends r to l (r NULL: out of memory). */
int rb_push(struct rb *b, struct route_list *l, struct route *r);
/* v as exactly one route (mcrouter's create(): a list must hold one). */
int rb_build_one(struct rb *b, json_t *v, struct route **out);
/* obj[key] as one route into *out (left as it is when absent and optional). */
int rb_build_key(struct rb *b, json_t *obj, const char *key, bool required,
                 struct route **out);
/* obj[key] as a list of routes (an empty pool's "Pool|A" is none), appended to l. */
int rb_build_key_list(struct rb *b, json_t *obj, const char *key, struct route_list *l);

/*
 * mcrouter's HashRoute over kids[0..n) (route_hash.c), as spec says: a
 * hash function's name, an object with "hash_func", "salt", "weights",
 * "failover_count", or NULL (Ch3).  One child with no object: that child.
 */
int rb_build_hash(struct rb *b, json_t *spec, struct route *const *kids, unsigned n,
                  struct route **out);
/*
 * ... as a PoolRoute's: WeightedCh3 over the pool's own weights
 * (pool_weights, scaled to 2^32 - 1; NULL: none) unless spec gives
 * others, and with buckets > 0 mcrouter's bucketize (the key's bucket,
 * Ch3 of it over buckets, hashed instead of the key).
 */
int rb_build_pool_hash(struct rb *b, json_t *spec, struct route *const *kids, unsigned n,
                       const uint32_t *pool_weights, uint32_t buckets, struct route **out);

/*
 * A ring of mcrouter's hash function func (Ch3, Crc32, WeightedCh3, whose
 * "weights" spec holds) over n places, as HashRoute picks; -1 with the
 * error said.
 */
struct ring;
int rb_hash_ring(struct rb *b, const char *func, json_t *spec, unsigned n, struct ring **out);

/*
 * mcrouter's "shadows" (route_shadow.c) over kids[0..n), the routes of a
 * pool's servers in order (or a ShadowRoute's one child): each kid in a
 * shadow's index range, or every kid for keys_to_shadow, is replaced by a
 * ShadowRoute over it.
 */
int rb_build_shadows(struct rb *b, json_t *list, struct route **kids, unsigned n);

/*
 * The grammar's pools (config_pool.c): pool name from obj (inline_pool: a
 * PoolRoute's "pool" object, which names itself) added to b's
 * configuration; every pool of the "pools" object.
 */
int cl_json_add_pool(struct rb *b, const char *name, json_t *obj, bool inline_pool);
int cl_json_parse_pools(struct rb *b, json_t *pools);

/*
 * mcrouter's HashRoute (or PoolRoute) over no children: an ErrorRoute
 * "HashRoute with empty children, name: NAME" (route_error.c).
 */
struct route *rb_empty_hash(struct rb *b, const char *name);

/*
 * mcrouter's "slow_warmup" ({"failoverTarget": route, "settings": {...}})
 * over kids[0..n), a pool's servers: each replaced by a SlowWarmUpRoute
 * over it (route_slow_warmup.c).
 */
int rb_slow_warmup(struct rb *b, json_t *v, struct route **kids, unsigned n);

/* mcrouter's ShardSplitRoute over child, with splits (route_shard_split.c), into *out. */
int rb_shard_splits(struct rb *b, json_t *splits, struct route *child, struct route **out);

/*
 * A pool whose "servers" hold routes among the servers, as mcrouter's may
 * ({"type": "ErrorRoute"}): entry i is route[i], or (NULL) the pool's next
 * server.  Recorded by cl_json_add_pool(), built where the pool is used.
 */
struct rb_members {
    unsigned pool;
    unsigned n;
    json_t **route;             /* [n], references held */
};

/* The pool's entries as routes, appended to l: its servers, and routes where it has them
 * (route_pool.c). */
int rb_pool_routes(struct rb *b, unsigned pool, struct route_list *l);
/* Does the pool have routes among its servers? */
bool rb_pool_has_routes(const struct rb *b, unsigned pool);

/* A kind over a list: {"type": T, "children": route}, built with t->over. */
int rb_build_over(struct rb *b, const struct route_type *t, json_t *obj, struct route **out);

#endif
