/*
 * route_random.c -- RandomRoute: each request to a child picked at random
 * (mcrouter's; cl_random32(), a thread's own xorshift, no lock).
 */
#include "client/client_int.h"
#include "client/route_build.h"

static void random_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (r->nchildren == 0) {
        cl_answer_null(q);
        return;
    }
    route_dispatch(r->children[cl_random32() % r->nchildren], h, q);
}

static const struct route_ops random_ops = {
    .name = "RandomRoute",
    .dispatch = random_dispatch,
    .server_of = route_server_of_first,
};

static struct route *random_over(struct route_set *rs, const struct route_type *t,
                                 struct route *const *v, unsigned n) {
    (void)t;
    return route_make(rs, &random_ops, sizeof(struct route), v, n);
}

const struct route_type route_type_random = {
    .type = "RandomRoute",
    .keys = "children",
    .route_keys = "children",
    .map_keys = "",
    .pool_keys = "",
    .build = rb_build_over,
    .over = random_over,
};
