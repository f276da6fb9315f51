/*
 * route_null.c -- NullRoute: answers at once with the reply a request gets
 * when nothing has it (mcrouter's default reply, cl_answer_null() in
 * status.c), sending nothing.  DevNullRoute is the same under its own name,
 * so that what it swallowed is counted apart (the router's
 * dev_null_requests: the requests of its routes named so).
 */
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"

static void null_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    (void)r;
    (void)h;
    cl_answer_null(q);
}

static int null_server_of(const struct route *r, const struct cellar_config *cfg,
                          const char *key, size_t nkey) {
    (void)r, (void)cfg, (void)key, (void)nkey;
    return -1;
}

static void null_traverse(const struct route *r, const struct cellar_config *cfg,
                          enum msg_op op, const char *key, size_t nkey, struct route_walk *w,
                          unsigned depth) {
    (void)r, (void)cfg, (void)op, (void)key, (void)nkey, (void)w, (void)depth;
}

static const struct route_ops null_ops = {
    .name = "NullRoute",
    .dispatch = null_dispatch,
    .server_of = null_server_of,
    .traverse = null_traverse,
};

static const struct route_ops dev_null_ops = {
    .name = "DevNullRoute",
    .dispatch = null_dispatch,
    .server_of = null_server_of,
    .traverse = null_traverse,
};

struct route *route_null(struct route_set *rs) {
    return route_make(rs, &null_ops, sizeof(struct route), NULL, 0);
}

static struct route *make(struct rb *b, const struct route_type *t) {
    return route_make(b->cfg->routes, t->mode ? &dev_null_ops : &null_ops,
                      sizeof(struct route), NULL, 0);
}

static int build_null(struct rb *b, const struct route_type *t, json_t *obj,
                      struct route **out) {
    (void)obj;
    *out = make(b, t);
    return *out ? 0 : rb_nomem(b);
}

extern const struct route_type route_type_null, route_type_dev_null;

/* "NullRoute", "DevNullRoute": nothing after a bar */
static int null_from_string(struct rb *b, const char *s, const char *arg,
                            struct route_list *l) {
    const struct route_type *t =
        strncmp(s, "DevNullRoute", 12) == 0 ? &route_type_dev_null : &route_type_null;
    if (arg != NULL)
        return rb_fail(b, "%s takes nothing after '|', not \"%s\"", t->type, s);
    return rb_push(b, l, make(b, t));
}

const struct route_type route_type_null = {
    .type = "NullRoute",
    .keys = "",
    .route_keys = "",
    .map_keys = "",
    .pool_keys = "",
    .build = build_null,
    .from_string = null_from_string,
};

const struct route_type route_type_dev_null = {
    .type = "DevNullRoute",
    .keys = "",
    .route_keys = "",
    .map_keys = "",
    .pool_keys = "",
    .build = build_null,
    .from_string = null_from_string,
    .mode = 1,
};
