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

/* A get may go to any child: the first is named. */
static int random_server_of(const struct route *r, const struct cellar_config *cfg,
                            const char *key, size_t nkey) {
    return route_server_of(r->nchildren ? r->children[0] : NULL, cfg, key, nkey);
}

static const struct route_ops random_ops = {
    .name = "RandomRoute",
    .dispatch = random_dispatch,
    .server_of = random_server_of,
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
