/*
 * config_json.c -- mcrouter's JSON configuration: pools, named handles and
 * the route tree, parsed into a struct cellar_config.
 *
 *   text --strip comments and trailing commas (line/column kept)--> JSON
 *        --json_loads (jansson)--> tree
 *        --macros (config_macro.c: mcrouter's JSONM)--> plain tree
 *        --pools--> cl_config_add_pool() for each pool (config_pool.c)
 *        --scan--> every named handle and inline pool, wherever it is
 *        --build--> each object's type (route_types.c) builds its route
 *                   (route_<kind>.c, through route_build.h), the root
 *                   into cfg->root
 *
 * The grammar accepted (mcrouter's, less what the library cannot do):
 *
 *   config   := { "pools": { NAME: pool, ... },            optional
 *                 "named_handles": [ route-object-with-name, ... ]
 *                                | { NAME: route-object, ... },
 *                 "route": route  |  "routes": [ { "aliases": [PREFIX...],
 *                                                  "route": route }, ... ]
 *                                  |  "routes": { PREFIX: route, ... } }
 *   PREFIX   := "/region/cluster/": a RootRoute (route_root.c) over them
 *   pool     := { "servers": [ "host:port" | "[v6]:port" | "/path" ... ],
 *                 "weights": [ INT >= 1, ... ],            ketama pools only
 *                 "protocol": "ascii" (the default: text, meta where text
 *                              cannot say it) | "text" | "meta" | "binary",
 *                 "hash": "ch3" | "ketama" | "modula" | "rendezvous",
 *                 "server_timeout", "connect_timeout", "tko_timeouts",
 *                 "probe_min_ms", "probe_max_ms": INT >= 1,
 *                 "udp": BOOL (ours: gets over UDP),
 *                 "spool": [ OP, ... ] (ours: the ops a handle's spool keeps
 *                                       when they fail; ["delete"]),
 *                 "keep_routing_prefix": BOOL,
 *                 "pool_locality": STRING (read; mcrouter's stats use it),
 *                 "port_override": PORT (every server on it) }
 *   route    := STRING | object | [ route, ... ]  (a list where one route is
 *                                                  expected must hold one)
 *   STRING   := a named handle's name
 *             | "Pool|P"                  P's servers, one route each (also written
 *                                          {"type": "Pool", "name": P, pool's keys})
 *             | "PoolRoute|P" | "NullRoute"
 *             | "KIND|" STRING            KIND over that STRING's routes, for the
 *                                          kinds over a list (route_type.over)
 *   object   := { "type": KIND, "name": NAME (optional: a named handle), ... }
 *
 * Each KIND and its keys: route_types.c's table, one route_<kind>.c each;
 * doc/libcellar.md lists them for users.  Comments (// and / * * /) and
 * trailing commas are allowed, as mcrouter's folly JSON allows them;
 * macros are expanded first (config_macro.c).  Any other key is refused
 * rather than ignored: a key of mcrouter's this library does not
 * implement would change what a configuration means, so a configuration
 * that uses it must not quietly load.  What mcrouter itself logs and
 * passes over (a broken shadow) is passed over too, and said to
 * cellar_routing.warn.
 *
 * Named handles are resolved lazily, as mcrouter's RouteHandleFactory
 * does: a name may be used before or after its definition (a scan over
 * the whole configuration finds every definition first), each is built
 * once and then shared, and a name used inside its own definition is an
 * error.  Every error names its place: line and column for JSON syntax, a
 * JSON path (route.policies."a:".children[1]) for everything else.
 */
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/config_macro.h"
#include "client/route_build.h"


/* A named handle: where it is defined, and its route once built. */
struct named {
    const char *name;           /* points into the JSON tree */
    json_t *def;
    char *path;
    struct route *built;
    bool building;
};

/* The parser's state: the builders' (route_build.h), and the named handles. */
struct jp {
    struct rb b;
    struct named *named;
    unsigned nnamed, capnamed;
    char **aliases;             /* the routing prefixes, normalised, */
    struct route **alias_to;    /* and the route each names */
    unsigned naliases, capaliases;
};

static struct jp *jp_of(struct rb *b) {
    return (struct jp *)b;
}

/* ---------------------------------------------------------------------- */
/* Paths and errors                                                         */
/* ---------------------------------------------------------------------- */



/* The index of pool name; -1 with the error said. */
/* ---------------------------------------------------------------------- */
/* Named handles and the scan                                               */
/* ---------------------------------------------------------------------- */

static struct named *named_find(struct rb *b, const char *name) {
    for (unsigned i = 0; i < jp_of(b)->nnamed; i++)
        if (strcmp(jp_of(b)->named[i].name, name) == 0)
            return &jp_of(b)->named[i];
    return NULL;
}

/* Records def as the named handle name, defined at the current path. */
static int named_add(struct rb *b, const char *name, json_t *def) {
    if (*name == '\0')
        return rb_fail(b, "a named handle's name is empty");
    struct named *old = named_find(b, name);
    if (old && json_equal(old->def, def))
        return 0;               /* the same again (a macro's, used twice): one route, as mcrouter */
    if (old)
        return rb_fail(b, "named handle \"%s\" is defined twice (also at %s)", name, old->path);
    if (jp_of(b)->nnamed == jp_of(b)->capnamed) {
        unsigned cap = jp_of(b)->capnamed ? jp_of(b)->capnamed * 2 : 8;
        struct named *v = realloc(jp_of(b)->named, cap * sizeof(*v));
        if (v == NULL)
            return rb_nomem(b);
        jp_of(b)->named = v;
        jp_of(b)->capnamed = cap;
    }
    char *path = strdup(b->path);
    if (path == NULL)
        return rb_nomem(b);
    jp_of(b)->named[jp_of(b)->nnamed++] = (struct named){name, def, path, NULL, false};
    return 0;
}

static int scan_route(struct rb *b, json_t *v);

/* mcrouter's {"type": "Pool", "name": P, "servers": [...], ...}: "Pool|P" inline. */
static bool is_pool_object(json_t *v) {
    json_t *type = json_object_get(v, "type");
    return json_is_object(v) && json_is_string(type) &&
           strcmp(json_string_value(type), "Pool") == 0;
}

/*
 * Scans what an object route holds: the values of its route keys and of
 * its objects of routes; adds an inline pool.  Unknown types and keys are
 * passed over: building reports them.
 */
static int scan_object(struct rb *b, json_t *obj) {
    json_t *type = json_object_get(obj, "type");
    const struct route_type *k =
        json_is_string(type)
            ? route_type_find(json_string_value(type), strlen(json_string_value(type)))
            : NULL;
    if (k == NULL)
        return 0;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        size_t mark = rb_path_key(b, key);
        if (rb_has_word(k->pool_keys, key) && json_is_object(v)) {
            json_t *name = json_object_get(v, "name");
            if (!json_is_string(name))
                return rb_fail(b, "an inline pool needs a \"name\"");
            if (cl_json_add_pool(b, json_string_value(name), v, true) < 0)
                return -1;
        } else if (rb_has_word(k->route_keys, key)) {
            if (scan_route(b, v) < 0)
                return -1;
        } else if (strcmp(key, "shadows") == 0 && json_is_array(v)) {
            size_t i;           /* each shadow's "target" (route_shadow.c) */
            json_t *sh;
            json_array_foreach(v, i, sh) {
                size_t m = rb_path_index(b, i);
                json_t *target = json_is_object(sh) ? json_object_get(sh, "target") : NULL;
                rb_path_key(b, "target");
                if (target && scan_route(b, target) < 0)
                    return -1;
                rb_path_set(b, m);
            }
        } else if (rb_has_word(k->map_keys, key) && json_is_object(v)) {
            const char *sub;
            json_t *r;
            json_object_foreach(v, sub, r) {
                size_t m = rb_path_key(b, sub);
                if (scan_route(b, r) < 0)
                    return -1;
                rb_path_set(b, m);
            }
        }
        rb_path_set(b, mark);
    }
    return 0;
}

/* Finds the named handles and inline pools in a route (or list of routes). */
static int scan_route(struct rb *b, json_t *v) {
    if (++b->depth > RB_DEPTH_MAX)
        return rb_fail(b, "routes nested more than %d deep", RB_DEPTH_MAX);
    int rc = 0;
    if (json_is_array(v)) {
        for (size_t i = 0; rc == 0 && i < json_array_size(v); i++) {
            size_t mark = rb_path_index(b, i);
            rc = scan_route(b, json_array_get(v, i));
            rb_path_set(b, mark);
        }
    } else if (is_pool_object(v)) {
        json_t *name = json_object_get(v, "name");
        rc = json_is_string(name) ? cl_json_add_pool(b, json_string_value(name), v, true)
                                  : rb_fail(b, "an inline pool needs a \"name\"");
    } else if (json_is_object(v)) {
        json_t *name = json_object_get(v, "name");
        if (name && !json_is_string(name)) {
            rb_path_key(b, "name");
            rc = rb_fail(b, "expected a string, not %s", rb_type_name(name));
        } else if (name) {
            rc = named_add(b, json_string_value(name), v);
        }
        if (rc == 0)
            rc = scan_object(b, v);
    }
    b->depth--;
    return rc;
}

/*
 * The top-level named handles: a list of objects with a "name", or (as
 * mcrouter also reads them) an object of name -> route object.
 */
static int scan_named_handles(struct rb *b, json_t *nh) {
    size_t mark = rb_path_key(b, "named_handles");
    if (json_is_array(nh)) {
        for (size_t i = 0; i < json_array_size(nh); i++) {
            size_t m = rb_path_index(b, i);
            json_t *v = json_array_get(nh, i);
            if (!json_is_object(v))
                return rb_fail(b, "a named handle is an object, not %s", rb_type_name(v));
            if (!json_is_string(json_object_get(v, "name")))
                return rb_fail(b, "a named handle needs a \"name\" (a string)");
            if (scan_route(b, v) < 0)
                return -1;
            rb_path_set(b, m);
        }
    } else if (json_is_object(nh)) {
        const char *name;
        json_t *v;
        json_object_foreach(nh, name, v) {
            size_t m = rb_path_key(b, name);
            json_t *own = json_is_object(v) ? json_object_get(v, "name") : NULL;
            if (!json_is_object(v) && !json_is_string(v) && !json_is_array(v))
                return rb_fail(b, "a named handle is a route (an object, a string or a "
                                  "list), not %s", rb_type_name(v));
            if (own && !(json_is_string(own) && strcmp(json_string_value(own), name) == 0))
                return rb_fail(b, "its \"name\" is not \"%s\"", name);
            if (named_add(b, name, v) < 0 ||
                (json_is_object(v) ? scan_object(b, v) : scan_route(b, v)) < 0)
                return -1;
            rb_path_set(b, m);
        }
    } else {
        return rb_fail(b, "expected a list of named handles, not %s", rb_type_name(nh));
    }
    rb_path_set(b, mark);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Building                                                                 */
/* ---------------------------------------------------------------------- */

static int build_typed(struct rb *b, json_t *obj, struct route **out) {
    json_t *type = rb_need(b, obj, "type");
    if (type == NULL)
        return -1;
    if (!json_is_string(type)) {
        rb_path_key(b, "type");
        return rb_fail(b, "expected a string, not %s", rb_type_name(type));
    }
    const char *t = json_string_value(type);
    const struct route_type *k = route_type_find(t, strlen(t));
    if (k == NULL)
        return rb_fail(b, "unknown route type \"%s\"", t);
    char allowed[128];
    snprintf(allowed, sizeof(allowed), "type name%s%s", *k->keys ? " " : "", k->keys);
    if (rb_check_keys(b, obj, allowed, t) < 0)
        return -1;
    return k->build(b, k, obj, out);
}

/*
 * A named handle's route: built at its definition's path the first time,
 * then shared.  Meeting it again while it is being built is a cycle.
 */
static int build_named(struct rb *b, struct named *nh, struct route **out) {
    if (nh->built) {
        *out = nh->built;
        return 0;
    }
    if (nh->building)
        return rb_fail(b, "named handle \"%s\" is used inside its own definition", nh->name);
    char saved[RB_PATH_LEN];
    size_t saved_len = b->plen;
    memcpy(saved, b->path, saved_len + 1);
    rb_path_set(b, 0);
    rb_path_put(b, "%s", nh->path);
    nh->building = true;
    /* an object form's value may be a string or a list, as mcrouter reads it */
    int rc = json_is_object(nh->def) ? build_typed(b, nh->def, &nh->built)
                                     : rb_build_one(b, nh->def, &nh->built);
    nh->building = false;
    if (rc < 0)
        return -1;
    memcpy(b->path, saved, saved_len + 1);
    b->plen = saved_len;
    *out = nh->built;
    return 0;
}

static int build_object(struct rb *b, json_t *obj, struct route **out) {
    json_t *name = json_object_get(obj, "name");
    if (name == NULL)
        return build_typed(b, obj, out);
    if (!json_is_string(name)) {
        rb_path_key(b, "name");
        return rb_fail(b, "expected a string, not %s", rb_type_name(name));
    }
    struct named *nh = named_find(b, json_string_value(name));
    /* the scan sees every object built; an equal one again is the first's */
    if (nh == NULL || (nh->def != obj && !json_equal(nh->def, obj)))
        return rb_fail(b, "named handle \"%s\" was not found by the scan", json_string_value(name));
    return build_named(b, nh, out);
}

/* "Pool|P": one route per server of P (or route in a server's place), in order. */
static int build_pool_servers(struct rb *b, const char *pool_name, struct route_list *l) {
    int pool = rb_find_pool(b, pool_name);
    return pool < 0 ? -1 : rb_pool_routes(b, (unsigned)pool, l);
}

static int build_string(struct rb *b, const char *s, struct route_list *l);

/*
 * t->over(v[0..n)); over none, as mcrouter builds it: NullRoute, or for
 * HashRoute rb_empty_hash(); NULL when out of memory.  (struct rb's over.)
 */
static struct route *over_list(struct rb *b, const struct route_type *t, struct route *const *v,
                             unsigned n) {
    if (n > 0)
        return t->over(b->cfg->routes, t, v, n);
    if (strcmp(t->type, "HashRoute") == 0)
        return rb_empty_hash(b, "");
    return route_null(b->cfg->routes);
}

/* "TYPE|arg" for a kind over a list: that kind over arg's routes. */
static int build_listed_string(struct rb *b, const struct route_type *k, const char *arg,
                               struct route_list *l) {
    if (++b->depth > RB_DEPTH_MAX)
        return rb_fail(b, "routes nested more than %d deep", RB_DEPTH_MAX);
    struct route_list sub = {0};
    int rc = build_string(b, arg, &sub);
    b->depth--;
    if (rc == 0)
        rc = rb_push(b, l, over_list(b, k, sub.v, sub.n));
    free(sub.v);
    return rc;
}

/* A route written as a string, appended to l (see the grammar atop). */
static int build_string(struct rb *b, const char *s, struct route_list *l) {
    struct named *nh = named_find(b, s);
    if (nh) {
        struct route *r;
        return build_named(b, nh, &r) < 0 ? -1 : rb_push(b, l, r);
    }
    const char *bar = strchr(s, '|'), *arg = bar ? bar + 1 : NULL;
    size_t tlen = bar ? (size_t)(bar - s) : strlen(s);
    if (tlen == 4 && memcmp(s, "Pool", 4) == 0 && arg)
        return build_pool_servers(b, arg, l);
    const struct route_type *k = route_type_find(s, tlen);
    if (k == NULL)
        return arg ? rb_fail(b, "unknown route type \"%.*s\" in \"%s\"", (int)tlen, s, s)
                   : rb_fail(b, "unknown named handle or route \"%s\"", s);
    if (k->over && arg)
        return build_listed_string(b, k, arg, l);
    if (k->over)
        return rb_fail(b, "\"%s\" needs children, as \"%s|Pool|A\"", s, k->type);
    if (k->from_string)
        return k->from_string(b, s, arg, l);
    return rb_fail(b, "%s is written as an object, not as \"%s\"", k->type, s);
}

/* The type of an unnamed object whose kind makes several routes (ShadowRoute), or NULL. */
static const struct route_type *many_type(json_t *obj) {
    json_t *type = json_object_get(obj, "type");
    if (!json_is_string(type) || json_object_get(obj, "name") != NULL)
        return NULL;
    const struct route_type *k = route_type_find(json_string_value(type),
                                                 strlen(json_string_value(type)));
    return k && k->build_many ? k : NULL;
}

static int build_many(struct rb *b, const struct route_type *k, json_t *obj,
                      struct route_list *l) {
    char allowed[128];
    snprintf(allowed, sizeof(allowed), "type name%s%s", *k->keys ? " " : "", k->keys);
    if (rb_check_keys(b, obj, allowed, k->type) < 0)
        return -1;
    return k->build_many(b, k, obj, l);
}

/* A route, a string that may stand for several, or a list: appended to l. */
static int build_list(struct rb *b, json_t *v, struct route_list *l) {
    if (++b->depth > RB_DEPTH_MAX)
        return rb_fail(b, "routes nested more than %d deep", RB_DEPTH_MAX);
    int rc = 0;
    struct route *r = NULL;
    if (json_is_array(v)) {
        for (size_t i = 0; rc == 0 && i < json_array_size(v); i++) {
            size_t mark = rb_path_index(b, i);
            rc = build_list(b, json_array_get(v, i), l);
            if (rc == 0)
                rb_path_set(b, mark);
        }
    } else if (is_pool_object(v)) {
        /* the scan checked the name of an inline pool in a route, not in a pool's servers */
        json_t *name = json_object_get(v, "name");
        rc = json_is_string(name) ? build_pool_servers(b, json_string_value(name), l)
                                  : rb_fail(b, "an inline pool needs a \"name\"");
    } else if (json_is_object(v) && many_type(v) != NULL) {
        rc = build_many(b, many_type(v), v, l);
    } else if (json_is_object(v)) {
        rc = build_object(b, v, &r);
        if (rc == 0)
            rc = rb_push(b, l, r);
    } else if (json_is_string(v)) {
        rc = build_string(b, json_string_value(v), l);
    } else {
        rc = rb_fail(b, "a route is an object or a string, not %s", rb_type_name(v));
    }
    b->depth--;
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The configuration                                                        */
/* ---------------------------------------------------------------------- */

/* Every top-level named handle is built, so that its errors show. */
static int build_named_handles(struct rb *b, json_t *nh) {
    const char *name;
    json_t *v;
    size_t i;
    struct route *r;
    if (json_is_array(nh)) {
        json_array_foreach(nh, i, v) {
            if (build_named(b, named_find(b, json_string_value(json_object_get(v, "name"))),
                            &r) < 0)
                return -1;
        }
    } else if (json_is_object(nh)) {
        json_object_foreach(nh, name, v) {
            if (build_named(b, named_find(b, name), &r) < 0)
                return -1;
        }
    }
    return 0;
}

/* Checks one "routes" entry: {"aliases": [STRING, ...], "route": route}. */
static int check_routes_entry(struct rb *b, json_t *e) {
    if (!json_is_object(e))
        return rb_fail(b, "expected an object with \"aliases\" and \"route\", not %s",
                    rb_type_name(e));
    if (rb_check_keys(b, e, "aliases route", "a routes entry") < 0)
        return -1;
    json_t *aliases = rb_need(b, e, "aliases");
    if (aliases == NULL || rb_need(b, e, "route") == NULL)
        return -1;
    rb_path_key(b, "aliases");
    if (!json_is_array(aliases))
        return rb_fail(b, "expected a list of strings, not %s", rb_type_name(aliases));
    for (size_t i = 0; i < json_array_size(aliases); i++) {
        rb_path_index(b, i);
        if (!json_is_string(json_array_get(aliases, i)))
            return rb_fail(b, "expected a string, not %s",
                        rb_type_name(json_array_get(aliases, i)));
    }
    return 0;
}

/* Adds alias (as written; normalised here) for r to the routing prefixes. */
static int alias_add(struct rb *b, const char *alias, struct route *r) {
    struct jp *jp = jp_of(b);
    char norm[RB_PATH_LEN];
    if (route_prefix_norm(alias, norm, sizeof(norm)) < 0)
        return rb_fail(b, "\"%s\" is not a routing prefix (/region/cluster/)", alias);
    for (unsigned i = 0; i < jp->naliases; i++)
        if (strcmp(jp->aliases[i], norm) == 0)
            return rb_fail(b, "routing prefix \"%s\" is given twice", norm);
    if (jp->naliases == jp->capaliases) {
        unsigned cap = jp->capaliases ? jp->capaliases * 2 : 8;
        char **v = realloc(jp->aliases, cap * sizeof(*v));
        struct route **to = v ? realloc(jp->alias_to, cap * sizeof(*to)) : NULL;
        if (v)
            jp->aliases = v;
        if (to == NULL)
            return rb_nomem(b);
        jp->alias_to = to;
        jp->capaliases = cap;
    }
    if ((jp->aliases[jp->naliases] = strdup(norm)) == NULL)
        return rb_nomem(b);
    jp->alias_to[jp->naliases++] = r;
    return 0;
}

/*
 * "routes": a list of {"aliases": [PREFIX, ...], "route": route} or an
 * object of PREFIX: route, each route scanned (build false) or built and
 * its aliases kept for the root.
 */
static int scan_routes(struct rb *b, json_t *routes, bool build) {
    size_t mark = rb_path_key(b, "routes");
    if (json_is_object(routes) && json_object_size(routes) > 0) {
        const char *alias;
        json_t *v;
        json_object_foreach(routes, alias, v) {
            size_t m = rb_path_key(b, alias);
            struct route *r = NULL;
            if (build ? rb_build_one(b, v, &r) < 0 || alias_add(b, alias, r) < 0
                      : scan_route(b, v) < 0)
                return -1;
            rb_path_set(b, m);
        }
        rb_path_set(b, mark);
        return 0;
    }
    if (!json_is_array(routes) || json_array_size(routes) == 0)
        return rb_fail(b, "expected a list of {\"aliases\", \"route\"} entries, not %s",
                       json_is_array(routes)    ? "an empty list"
                       : json_is_object(routes) ? "an empty object"
                                                : rb_type_name(routes));
    for (size_t i = 0; i < json_array_size(routes); i++) {
        size_t m = rb_path_index(b, i), entry = b->plen;
        json_t *e = json_array_get(routes, i);
        if (check_routes_entry(b, e) < 0)
            return -1;
        rb_path_set(b, entry);
        rb_path_key(b, "route");
        struct route *r = NULL;
        if (build ? rb_build_one(b, json_object_get(e, "route"), &r) < 0
                  : scan_route(b, json_object_get(e, "route")) < 0)
            return -1;
        json_t *aliases = json_object_get(e, "aliases");
        for (size_t k = 0; build && k < json_array_size(aliases); k++) {
            rb_path_set(b, entry);
            rb_path_key(b, "aliases");
            rb_path_index(b, k);
            if (alias_add(b, json_string_value(json_array_get(aliases, k)), r) < 0)
                return -1;
        }
        rb_path_set(b, m);
    }
    rb_path_set(b, mark);
    return 0;
}

/*
 * The root: with routing prefixes (a "routes", or a route prefix in the
 * options), a RootRoute over them whose default is the options' prefix
 * (else the first alias); else the one route itself.
 */
static int build_root(struct rb *b, struct route *route) {
    struct jp *jp = jp_of(b);
    const char *want = b->routing->route_prefix;
    char norm[RB_PATH_LEN];
    if (want && route_prefix_norm(want, norm, sizeof(norm)) < 0)
        return rb_fail(b, "route prefix \"%s\" is not of the form /region/cluster/", want);
    if (route && want == NULL) {
        b->cfg->root = route;
        return 0;
    }
    if (route && alias_add(b, norm, route) < 0)
        return -1;
    unsigned dflt = 0;
    if (want) {
        while (dflt < jp->naliases && strcmp(jp->aliases[dflt], norm) != 0)
            dflt++;
        if (dflt == jp->naliases)
            return rb_fail(b, "invalid default route: no routes entry has the alias \"%s\"",
                           norm);
    }
    b->cfg->root = route_root(b->cfg->routes, (const char *const *)jp->aliases, jp->alias_to,
                              jp->naliases, dflt, b->routing->send_invalid_route_to_default);
    return b->cfg->root ? 0 : rb_nomem(b);
}

static int check_top(struct rb *b, json_t *root) {
    if (!json_is_object(root))
        return rb_fail(b, "the configuration is not a JSON object");
    if (rb_check_keys(b, root, "pools route routes named_handles", "the configuration") < 0)
        return -1;
    bool one = json_object_get(root, "route") != NULL, many = json_object_get(root, "routes");
    if (one && many)
        return rb_fail(b, "give \"route\" or \"routes\", not both");
    if (!one && !many)
        return rb_fail(b, "no route: give \"route\" or \"routes\"");
    return 0;
}

/* Pools, the scan for named handles and inline pools, then the tree. */
static int parse_config(struct rb *b, json_t *root) {
    json_t *pools = json_object_get(root, "pools"), *nh = json_object_get(root, "named_handles");
    json_t *route = json_object_get(root, "route"), *routes = json_object_get(root, "routes");
    if (check_top(b, root) < 0 || (pools && cl_json_parse_pools(b, pools) < 0))
        return -1;
    if (nh && scan_named_handles(b, nh) < 0)
        return -1;
    if (route) {
        size_t mark = rb_path_key(b, "route");
        if (scan_route(b, route) < 0)
            return -1;
        rb_path_set(b, mark);
    }
    if (routes && scan_routes(b, routes, false) < 0)
        return -1;
    if (nh && build_named_handles(b, nh) < 0)
        return -1;
    struct route *one = NULL;
    if (routes && scan_routes(b, routes, true) < 0)
        return -1;
    if (route) {
        size_t mark = rb_path_key(b, "route");
        if (rb_build_one(b, route, &one) < 0)
            return -1;
        rb_path_set(b, mark);
    }
    return build_root(b, one);
}

/* routing->runtime_vars_file into b->vars: true when it is a JSON object (json_is_object()
   reads its argument twice, so the load is not written inside it). */
static bool vars_loaded(struct rb *b, json_error_t *je) {
    b->vars = json_load_file(b->routing->runtime_vars_file, 0, je);
    return json_is_object(b->vars);
}

int cl_config_json(struct cellar_config *cfg, const char *text,
                   const struct cellar_options *opt, const struct cellar_routing *routing,
                   const char *dir, char *err, size_t errlen) {
    static const struct cellar_routing none = {0};
    cfg->mcrouter = true;
    struct jp jp = {.b = {.cfg = cfg, .opt = opt, .routing = routing ? routing : &none,
                          .err = err, .errlen = errlen,
                          .build_list = build_list, .over = over_list}};
    char *clean = malloc(strlen(text) + 1);
    if (clean == NULL)
        return rb_nomem(&jp.b);
    int line, col, rc = -1;
    json_t *root = NULL;
    json_error_t je;
    if (cl_json_strip(text, clean, &line, &col) < 0) {
        rb_fail(&jp.b, "line %d, column %d: unterminated /* comment", line, col);
    } else if ((root = json_loads(clean, JSON_REJECT_DUPLICATES, &je)) == NULL) {
        rb_fail(&jp.b, "line %d, column %d: %s", je.line, je.column, je.text);
    } else if (!json_is_object(root)) {
        rc = parse_config(&jp.b, root);         /* which refuses it */
    } else if (jp.b.routing->runtime_vars_file && !vars_loaded(&jp.b, &je)) {
        const char *vf = jp.b.routing->runtime_vars_file;
        if (jp.b.vars)
            rb_fail(&jp.b, "runtime variables %s: expected an object of variables", vf);
        else if (je.line > 0)
            rb_fail(&jp.b, "runtime variables %s: line %d, column %d: %s", vf, je.line,
                    je.column, je.text);
        else
            rb_fail(&jp.b, "runtime variables %s: %s", vf, je.text);
    } else {
        char why[512] = "";
        json_t *plain = cl_macro_expand(root, jp.b.routing->config_params,
                                        jp.b.routing->builtin_params, dir, why, sizeof(why));
        if (plain == NULL)
            rb_fail(&jp.b, "%s", why[0] ? why : "out of memory");
        else
            rc = parse_config(&jp.b, plain);
        json_decref(plain);
    }
    json_decref(root);
    json_decref(jp.b.vars);
    for (unsigned i = 0; i < jp.b.nmembers; i++) {
        for (unsigned k = 0; k < jp.b.members[i].n; k++)
            json_decref(jp.b.members[i].route[k]);
        free(jp.b.members[i].route);
    }
    free(jp.b.members);
    free(clean);
    for (unsigned i = 0; i < jp.nnamed; i++)
        free(jp.named[i].path);
    free(jp.named);
    for (unsigned i = 0; i < jp.naliases; i++)
        free(jp.aliases[i]);
    free(jp.aliases);
    free(jp.alias_to);
    return rc;
}
