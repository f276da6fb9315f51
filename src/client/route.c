/*
 * route.c -- the route set (who owns the routes) and describing a tree.
 * Each kind -- its struct, constructor, dispatch and JSON builder -- is in
 * its own file, route_<kind>.c.
 */
#include "client/route.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/mc_put.h"

struct route_set {
    struct route **all;
    unsigned n, cap;
};

struct route_set *route_set_create(void) {
    return calloc(1, sizeof(struct route_set));
}

void route_set_destroy(struct route_set **rsp) {
    struct route_set *rs = *rsp;
    if (rs == NULL)
        return;
    for (unsigned i = 0; i < rs->n; i++) {
        struct route *r = rs->all[i];
        if (r->ops->release)
            r->ops->release(r);
        free(r->children);
        free(r);
    }
    free(rs->all);
    free(rs);
    *rsp = NULL;
}

struct route *route_make(struct route_set *rs, const struct route_ops *ops, size_t size,
                         struct route *const *children, unsigned n) {
    if (rs->n == rs->cap) {
        unsigned cap = rs->cap ? rs->cap * 2 : 16;
        struct route **all = realloc(rs->all, cap * sizeof(*all));
        if (all == NULL)
            return NULL;
        rs->all = all;
        rs->cap = cap;
    }
    struct route *r = calloc(1, size);
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
    r->ops = ops;
    r->nchildren = n;
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

void route_traverse(const struct route *r, const struct cellar_config *cfg, enum msg_op op,
                    const char *key, size_t nkey, struct route_walk *w, unsigned depth) {
    if (r == NULL || depth > 200)   /* (a configuration's tree is at most 100 deep) */
        return;
    if (w->route)
        w->route(w, r, depth);
    if (r->ops->traverse) {
        r->ops->traverse(r, cfg, op, key, nkey, w, depth + 1);
        return;
    }
    for (unsigned i = 0; i < r->nchildren; i++)
        route_traverse(r->children[i], cfg, op, key, nkey, w, depth + 1);
}

/* ---------------------------------------------------------------------- */
/* Describing a tree                                                        */
/* ---------------------------------------------------------------------- */

static void label(struct mc_put *w, const struct route *r, const struct cellar_config *cfg) {
    mc_put(w, r->ops->name, strlen(r->ops->name));
    if (r->ops->label)
        r->ops->label(r, cfg, w);
}

static void describe(struct mc_put *w, const struct route *r, const struct cellar_config *cfg) {
    if (r == NULL) {
        MC_PUT_LIT(w, "-");
        return;
    }
    label(w, r, cfg);
    if (r->ops->children) {
        r->ops->children(r, cfg, w, describe);
    } else if (r->nchildren) {
        MC_PUT_LIT(w, "[");
        for (unsigned i = 0; i < r->nchildren; i++) {
            if (i)
                MC_PUT_LIT(w, ",");
            describe(w, r->children[i], cfg);
        }
        MC_PUT_LIT(w, "]");
    }
}

/* Ends what w wrote into out (cap > 0, one byte kept for the NUL). */
static int finish(struct mc_put *w, char *out) {
    *w->p = '\0';
    return w->full ? -1 : (int)(w->p - out);
}

int route_server_of_first(const struct route *r, const struct cellar_config *cfg,
                          const char *key, size_t nkey) {
    return route_server_of(r->nchildren ? r->children[0] : NULL, cfg, key, nkey);
}

int route_label(const struct route *r, const struct cellar_config *cfg, char *out, size_t cap) {
    if (cap == 0)
        return -1;
    struct mc_put w = MC_PUT_INIT(out, cap - 1);
    label(&w, r, cfg);
    return finish(&w, out);
}

int route_describe(const struct route *r, const struct cellar_config *cfg, char *out,
                   size_t cap) {
    if (cap == 0)
        return -1;
    struct mc_put w = MC_PUT_INIT(out, cap - 1);
    describe(&w, r, cfg);
    return finish(&w, out);
}
