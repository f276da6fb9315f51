/*
 * route_modify.c -- ModifyExptimeRoute: sends requests on to its target
 * with their exptime changed, as mcrouter does for the requests that set
 * one (storage, touch, gat; not delete):
 *
 *   "set"  every such request gets exptime
 *   "min"  the request's exptime when it is sooner, else exptime (0, never,
 *          is the latest); "min" with exptime 0 changes nothing and builds
 *          as its target alone
 *
 * The child request (a struct cl_child) is the parent's message with the
 * new exptime; its answer is the parent's.
 */
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

struct modify {
    struct route r;             /* children[0]: the target */
    int64_t exptime;
    bool min;
};

static const struct modify *mo(const struct route *r) {
    return (const struct modify *)r;
}

static void modify_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    cl_child_end((struct cl_child *)q, status, rep);
}

static void modify_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    const struct modify *m = mo(r);
    int64_t e = q->m.exptime;
    if (!cl_op_sets_exptime(q->m.op) || (m->min && e != 0 && e <= m->exptime)) {
        route_dispatch(r->children[0], h, q);
        return;
    }
    struct cl_child *c = cl_child_get(h, r, q, modify_done);
    if (c == NULL)
        return;
    c->q.m.exptime = m->exptime;
    route_dispatch(r->children[0], h, &c->q);
}

static void modify_label(const struct route *r, const struct cellar_config *cfg,
                         struct mc_put *w) {
    (void)cfg;
    if (mo(r)->min)
        MC_PUT_LIT(w, "(min,exptime=");
    else
        MC_PUT_LIT(w, "(set,exptime=");
    mc_put_i64(w, mo(r)->exptime);
    MC_PUT_LIT(w, ")");
}

static const struct route_ops modify_ops = {
    .name = "ModifyExptimeRoute",
    .dispatch = modify_dispatch,
    .server_of = route_server_of_first,
    .label = modify_label,
};

struct route *route_modify_exptime(struct route_set *rs, struct route *target, int64_t exptime,
                                   bool min) {
    struct route *r = route_make(rs, &modify_ops, sizeof(struct modify), &target, 1);
    if (r) {
        ((struct modify *)r)->exptime = exptime;
        ((struct modify *)r)->min = min;
    }
    return r;
}

/* {"type": "ModifyExptimeRoute", "target": route, "exptime": INT, "action": "set"|"min"} */
static int build_modify(struct rb *b, const struct route_type *t, json_t *obj,
                        struct route **out) {
    (void)t;
    struct route *target = NULL;
    if (rb_build_key(b, obj, "target", true, &target) < 0)
        return -1;
    if (rb_need(b, obj, "exptime") == NULL)
        return -1;
    long long exptime;
    if (rb_get_int(b, obj, "exptime", INT32_MIN, INT32_MAX, 0, &exptime) < 0)
        return -1;
    bool min = false;
    json_t *v = json_object_get(obj, "action");
    if (v != NULL) {
        size_t mark = rb_path_key(b, "action");
        const char *a = json_is_string(v) ? json_string_value(v) : "";
        if (strcmp(a, "min") != 0 && strcmp(a, "set") != 0)
            return rb_fail(b, "expected \"set\" or \"min\"");
        min = a[1] == 'i';
        rb_path_set(b, mark);
    }
    if (min && exptime == 0) {
        *out = target;          /* the minimum with never is the request's own */
        return 0;
    }
    *out = route_modify_exptime(b->cfg->routes, target, exptime, min);
    return *out ? 0 : rb_nomem(b);
}

const struct route_type route_type_modify_exptime = {
    .type = "ModifyExptimeRoute",
    .keys = "target exptime action",
    .route_keys = "target",
    .map_keys = "",
    .pool_keys = "",
    .build = build_modify,
};
