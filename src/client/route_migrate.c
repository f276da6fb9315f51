/*
 * route_migrate.c -- MigrateRoute: moves a key space from one route to
 * another over time, as mcrouter's does.  With start_time S and interval I
 * (seconds, 3600 by default):
 *
 *   deletes     before S: from; until S + 2I: both (the worse answer, as
 *               AllSyncRoute); after: to
 *   the rest    from until the key's own moment, S + I + h % I, then to,
 *               where h is the key's SpookyHash V2 (32 bits, seed 0, up to
 *               a "|#|"): keys move one by one through the second interval
 *
 * so that by the time any key reads from the new route, deletes have gone
 * to both for an interval.
 */
#include <time.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "core/hash.h"
#include "protocol/mc_put.h"

struct migrate {
    struct route r;             /* children: from, to */
    int64_t start, interval;
};

static const struct migrate *mig(const struct route *r) {
    return (const struct migrate *)r;
}

enum { FROM = 1, TO = 2 };

/* Where a request op of key goes at now: FROM, TO or both. */
static int mask(const struct route *r, const struct cellar_config *cfg, enum msg_op op,
                const char *key, size_t nkey, int64_t now) {
    const struct migrate *m = mig(r);
    if (op == MSG_DELETE)
        return now < m->start ? FROM : now < m->start + 2 * m->interval ? FROM | TO : TO;
    uint32_t h = hash_spooky32(key, cl_hash_key(cfg, key, nkey), 0);
    return now < m->start + m->interval + (int64_t)(h % (uint64_t)m->interval) ? FROM : TO;
}

static void migrate_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    int to = mask(r, h->cfg, q->m.op, q->m.key.p, q->m.key.len, (int64_t)time(NULL));
    if (to == (FROM | TO))
        cl_all_dispatch(h, q, r->children, 2, ROUTE_ALL_SYNC);
    else
        route_dispatch(r->children[to == FROM ? 0 : 1], h, q);
}

static int migrate_server_of(const struct route *r, const struct cellar_config *cfg,
                             const char *key, size_t nkey) {
    int to = mask(r, cfg, MSG_GET, key, nkey, (int64_t)time(NULL));
    return route_server_of(r->children[to == FROM ? 0 : 1], cfg, key, nkey);
}

static void migrate_traverse(const struct route *r, const struct cellar_config *cfg,
                             enum msg_op op, const char *key, size_t nkey,
                             struct route_walk *w, unsigned depth) {
    int to = mask(r, cfg, op, key, nkey, (int64_t)time(NULL));
    if (to & FROM)
        route_traverse(r->children[0], cfg, op, key, nkey, w, depth);
    if (to & TO)
        route_traverse(r->children[1], cfg, op, key, nkey, w, depth);
}

static void migrate_label(const struct route *r, const struct cellar_config *cfg,
                          struct mc_put *w) {
    (void)cfg;
    MC_PUT_LIT(w, "(start_time=");
    mc_put_i64(w, mig(r)->start);
    MC_PUT_LIT(w, ",interval=");
    mc_put_i64(w, mig(r)->interval);
    MC_PUT_LIT(w, ")");
}

static const struct route_ops migrate_ops = {
    .name = "MigrateRoute",
    .dispatch = migrate_dispatch,
    .server_of = migrate_server_of,
    .traverse = migrate_traverse,
    .label = migrate_label,
};

struct route *route_migrate(struct route_set *rs, struct route *from, struct route *to,
                            int64_t start, int64_t interval) {
    struct route *kids[2] = {from, to};
    struct route *r = route_make(rs, &migrate_ops, sizeof(struct migrate), kids, 2);
    if (r) {
        ((struct migrate *)r)->start = start;
        ((struct migrate *)r)->interval = interval > 0 ? interval : 1;
    }
    return r;
}

/* {"type": "MigrateRoute", "from": route, "to": route, "start_time": INT, "interval": INT} */
static int build_migrate(struct rb *b, const struct route_type *t, json_t *obj,
                         struct route **out) {
    (void)t;
    struct route *from = NULL, *to = NULL;
    long long start, interval;
    if (rb_build_key(b, obj, "from", true, &from) < 0 ||
        rb_build_key(b, obj, "to", true, &to) < 0 || rb_need(b, obj, "start_time") == NULL ||
        rb_get_int(b, obj, "start_time", 0, INT64_MAX / 4, 0, &start) < 0 ||
        rb_get_int(b, obj, "interval", 1, INT32_MAX, 3600, &interval) < 0)
        return -1;
    *out = route_migrate(b->cfg->routes, from, to, start, interval);
    return *out ? 0 : rb_nomem(b);
}

const struct route_type route_type_migrate = {
    .type = "MigrateRoute",
    .keys = "from to start_time interval",
    .route_keys = "from to",
    .map_keys = "",
    .pool_keys = "",
    .build = build_migrate,
};
