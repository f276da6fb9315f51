/*
 * route_selector.c -- the routes that only choose: OperationSelectorRoute
 * (by the request's operation, else default_policy) and
 * PrefixSelectorRoute (by the longest configured prefix the key starts
 * with, else the wildcard).  With nothing chosen, NullRoute's answer.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

struct opsel {
    struct route r;
    struct route *by_op[MSG_OP_COUNT];  /* NULL -> dflt */
    struct route *dflt;         /* default_policy */
};

/* children[i] for keys starting prefixes[i] (the longest wins), else wildcard. */
struct prefix {
    struct route r;
    char **prefixes;
    struct route *wildcard;
};

/* The child for op (NULL: none). */
static const struct route *opsel_pick(const struct route *r, enum msg_op op) {
    const struct opsel *o = (const struct opsel *)r;
    const struct route *to = (unsigned)op < MSG_OP_COUNT ? o->by_op[op] : NULL;
    return to != NULL ? to : o->dflt;
}

/* The child for key: the longest prefix it starts with, else the wildcard (NULL: none). */
static const struct route *prefix_pick(const struct route *r, const char *key, size_t nkey) {
    const struct prefix *p = (const struct prefix *)r;
    const struct route *to = p->wildcard;
    size_t best = 0;
    for (unsigned i = 0; i < r->nchildren; i++) {
        size_t n = strlen(p->prefixes[i]);
        if (n >= best && n <= nkey && memcmp(key, p->prefixes[i], n) == 0) {
            best = n;
            to = r->children[i];
        }
    }
    return to;
}

static void opsel_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    const struct route *to = opsel_pick(r, q->m.op);
    if (to == NULL)
        cl_answer_null(q);
    else
        route_dispatch(to, h, q);
}

static void prefix_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    const struct route *to = prefix_pick(r, q->m.key.p, q->m.key.len);
    if (to == NULL)
        cl_answer_null(q);
    else
        route_dispatch(to, h, q);
}

static int opsel_server_of(const struct route *r, const struct cellar_config *cfg,
                           const char *key, size_t nkey) {
    return route_server_of(opsel_pick(r, MSG_GET), cfg, key, nkey);
}

static int prefix_server_of(const struct route *r, const struct cellar_config *cfg,
                            const char *key, size_t nkey) {
    return route_server_of(prefix_pick(r, key, nkey), cfg, key, nkey);
}

/* {op:route,...,default:route} */
static void opsel_children(const struct route *r, const struct cellar_config *cfg,
                           struct mc_put *w,
                           void (*describe)(struct mc_put *, const struct route *,
                                            const struct cellar_config *)) {
    const struct opsel *o = (const struct opsel *)r;
    MC_PUT_LIT(w, "{");
    for (unsigned op = 0; op < MSG_OP_COUNT; op++) {
        if (o->by_op[op] == NULL)
            continue;
        const char *name = msg_op_name(op);
        mc_put(w, name, strlen(name));
        MC_PUT_LIT(w, ":");
        describe(w, o->by_op[op], cfg);
        MC_PUT_LIT(w, ",");
    }
    MC_PUT_LIT(w, "default:");
    describe(w, o->dflt, cfg);
    MC_PUT_LIT(w, "}");
}

/* {prefix:route,...,wildcard:route} */
static void prefix_children(const struct route *r, const struct cellar_config *cfg,
                            struct mc_put *w,
                           void (*describe)(struct mc_put *, const struct route *,
                                            const struct cellar_config *)) {
    const struct prefix *p = (const struct prefix *)r;
    MC_PUT_LIT(w, "{");
    for (unsigned i = 0; i < r->nchildren; i++) {
        mc_put(w, p->prefixes[i], strlen(p->prefixes[i]));
        MC_PUT_LIT(w, ":");
        describe(w, r->children[i], cfg);
        MC_PUT_LIT(w, ",");
    }
    MC_PUT_LIT(w, "wildcard:");
    describe(w, p->wildcard, cfg);
    MC_PUT_LIT(w, "}");
}

static void prefix_release(struct route *r) {
    struct prefix *p = (struct prefix *)r;
    if (p->prefixes)
        for (unsigned i = 0; i < r->nchildren; i++)
            free(p->prefixes[i]);
    free(p->prefixes);
}

static void opsel_traverse(const struct route *r, const struct cellar_config *cfg,
                           enum msg_op op, const char *key, size_t nkey, struct route_walk *w,
                           unsigned depth) {
    route_traverse(opsel_pick(r, op), cfg, op, key, nkey, w, depth);
}

static void prefix_traverse(const struct route *r, const struct cellar_config *cfg,
                            enum msg_op op, const char *key, size_t nkey, struct route_walk *w,
                            unsigned depth) {
    route_traverse(prefix_pick(r, key, nkey), cfg, op, key, nkey, w, depth);
}

static const struct route_ops opsel_ops = {
    .name = "OperationSelectorRoute",
    .dispatch = opsel_dispatch,
    .server_of = opsel_server_of,
    .traverse = opsel_traverse,
    .children = opsel_children,
};

static const struct route_ops prefix_ops = {
    .name = "PrefixSelectorRoute",
    .dispatch = prefix_dispatch,
    .server_of = prefix_server_of,
    .traverse = prefix_traverse,
    .select = prefix_pick,
    .children = prefix_children,
    .release = prefix_release,
};

struct route *route_operation_selector(struct route_set *rs,
                                       struct route *const by_op[MSG_OP_COUNT],
                                       struct route *dflt) {
    struct opsel *o = (struct opsel *)route_make(rs, &opsel_ops, sizeof(*o), NULL, 0);
    if (o == NULL)
        return NULL;
    memcpy(o->by_op, by_op, sizeof(o->by_op));
    o->dflt = dflt;
    return &o->r;
}

struct route *route_prefix_selector(struct route_set *rs, const char *const *prefixes,
                                    struct route *const *routes, unsigned n,
                                    struct route *wildcard) {
    struct prefix *p = (struct prefix *)route_make(rs, &prefix_ops, sizeof(*p), routes, n);
    if (p == NULL)
        return NULL;
    p->wildcard = wildcard;
    p->prefixes = calloc(n ? n : 1, sizeof(*p->prefixes));
    if (p->prefixes == NULL)
        return NULL;            /* p stays in the set and is freed with it */
    for (unsigned i = 0; i < n; i++)
        if ((p->prefixes[i] = strdup(prefixes[i])) == NULL)
            return NULL;
    return &p->r;
}

/* ---------------------------------------------------------------------- */
/* JSON                                                                     */
/* ---------------------------------------------------------------------- */

/* {"operation_policies": {OP: route, ...}, "default_policy": route} */
static int build_opsel(struct rb *b, const struct route_type *t, json_t *obj,
                       struct route **out) {
    (void)t;
    struct route *by_op[MSG_OP_COUNT] = {0}, *dflt = NULL;
    json_t *pol = json_object_get(obj, "operation_policies");
    if (rb_check_map(b, obj, "operation_policies") < 0)
        return -1;
    const char *name;
    json_t *v;
    json_object_foreach(pol, name, v) {
        size_t mark = rb_path_key(b, "operation_policies");
        rb_path_key(b, name);
        int op = msg_op_by_name(name);
        if (op < 0)
            return rb_fail(b, "unknown operation \"%s\" (get gets gat gats set add replace "
                              "append prepend cas delete incr decr touch flush_all version "
                              "lease-get lease-set)", name);
        if (rb_build_one(b, v, &by_op[op]) < 0)
            return -1;
        rb_path_set(b, mark);
    }
    if (rb_build_key(b, obj, "default_policy", false, &dflt) < 0)
        return -1;
    *out = route_operation_selector(b->cfg->routes, by_op, dflt);
    return *out ? 0 : rb_nomem(b);
}

/* {"policies": {PREFIX: route, ...}, "wildcard": route} */
static int build_prefix(struct rb *b, const struct route_type *t, json_t *obj,
                        struct route **out) {
    (void)t;
    json_t *pol = json_object_get(obj, "policies");
    if (rb_check_map(b, obj, "policies") < 0)
        return -1;
    size_t n = json_object_size(pol);
    const char **prefixes = calloc(n ? n : 1, sizeof(*prefixes));
    struct route_list l = {0};
    struct route *wildcard = NULL;
    int rc = prefixes ? 0 : rb_nomem(b);
    const char *prefix;
    json_t *v;
    json_object_foreach(pol, prefix, v) {
        if (rc < 0)
            break;
        size_t mark = rb_path_key(b, "policies");
        rb_path_key(b, prefix);
        struct route *r = NULL;
        prefixes[l.n] = prefix;
        rc = rb_build_one(b, v, &r);
        if (rc == 0)
            rc = rb_push(b, &l, r);
        if (rc == 0)
            rb_path_set(b, mark);
    }
    if (rc == 0)
        rc = rb_build_key(b, obj, "wildcard", false, &wildcard);
    if (rc == 0 && (*out = route_prefix_selector(b->cfg->routes, prefixes, l.v, l.n,
                                                 wildcard)) == NULL)
        rc = rb_nomem(b);
    free(prefixes);
    free(l.v);
    return rc;
}

/* "default" is read and never built, as mcrouter does (its key is default_policy). */
#define OPSEL_TYPE(name)                                                               \
    {.type = name, .keys = "operation_policies default_policy default",                 \
     .route_keys = "default_policy", .map_keys = "operation_policies", .pool_keys = "", \
     .build = build_opsel}

const struct route_type route_type_operation_selector = OPSEL_TYPE("OperationSelectorRoute");
const struct route_type route_type_prefix_policy = OPSEL_TYPE("PrefixPolicyRoute");

const struct route_type route_type_prefix_selector = {
    .type = "PrefixSelectorRoute",
    .keys = "policies wildcard",
    .route_keys = "wildcard",
    .map_keys = "policies",
    .pool_keys = "",
    .build = build_prefix,
};
