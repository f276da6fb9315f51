/*
 * route_slow_warmup.c -- mcrouter's SlowWarmUpRoute (a PoolRoute's
 * "slow_warmup": {"failoverTarget": route, "settings": {...}}, one over
 * each of the pool's servers): a server whose hit rate fell (a cold one,
 * new or restarted) gets only some of the gets, the more the warmer it
 * is, and the rest go to the failover target (NullRoute: a miss at once),
 * so that the clients fill it slowly rather than all hitting the database
 * behind it at once.
 *
 * Each answer the server gives counts a hit (a read found) or a miss (any
 * NOT_FOUND); the hit rate is hits over both, 1 until there are
 * min_requests.  Warming up starts when the rate falls below
 * enable_threshold and stops when it reaches disable_threshold; while it
 * lasts, a get goes to the server with the chance start + rate * step.
 * Counted over every thread's handles, relaxed.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

struct warmup_settings {
    double enable, disable;     /* hit rates that start and stop warming up */
    double start, step;         /* a get's chance: start + rate * step */
    uint64_t min_requests;      /* answers before the rate counts */
};

struct slow_warmup {
    struct route r;             /* children: the server, the failover target */
    struct warmup_settings s;
    _Atomic uint64_t hits, misses;
    _Atomic bool warming;
};

static struct slow_warmup *sw(const struct route *r) {
    return (struct slow_warmup *)r;
}

static double hit_rate(const struct slow_warmup *w) {
    uint64_t hits = atomic_load_explicit(&w->hits, memory_order_relaxed);
    uint64_t total = hits + atomic_load_explicit(&w->misses, memory_order_relaxed);
    return total < w->s.min_requests ? 1.0 : (double)hits / (double)total;
}

/* Is the server warming up (the state moved on by the rate, as mcrouter's)? */
static bool warming_up(struct slow_warmup *w, double rate) {
    bool on = atomic_load_explicit(&w->warming, memory_order_relaxed);
    on = rate < (on ? w->s.disable : w->s.enable);
    atomic_store_explicit(&w->warming, on, memory_order_relaxed);
    return on;
}

static void counted(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct cl_child *c = (struct cl_child *)q;
    struct slow_warmup *w = sw(c->r);
    if (status == CELLAR_OK && cl_op_reads(c->q.m.op))
        atomic_fetch_add_explicit(&w->hits, 1, memory_order_relaxed);
    else if (status == CELLAR_NOT_FOUND)
        atomic_fetch_add_explicit(&w->misses, 1, memory_order_relaxed);
    cl_child_end(c, status, rep);
}

static void slow_warmup_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    struct slow_warmup *w = sw(r);
    if (cl_op_reads(q->m.op)) {
        double rate = hit_rate(w);
        if (warming_up(w, rate) &&
            (double)cl_random32() / 4294967296.0 > w->s.start + rate * w->s.step) {
            route_dispatch(r->children[1], h, q);
            return;
        }
    }
    struct cl_child *c = cl_child_get(h, r, q, counted);
    if (c != NULL)
        route_dispatch(r->children[0], h, &c->q);
}

static void slow_warmup_label(const struct route *r, const struct cellar_config *cfg,
                              struct mc_put *w) {
    (void)cfg;
    const struct warmup_settings *s = &sw(r)->s;
    MC_PUT_LIT(w, "(enable=");
    mc_put_u64(w, (uint64_t)(s->enable * 100 + 0.5));
    MC_PUT_LIT(w, "%,disable=");
    mc_put_u64(w, (uint64_t)(s->disable * 100 + 0.5));
    MC_PUT_LIT(w, "%)");
}

static const struct route_ops slow_warmup_ops = {
    .name = "SlowWarmUpRoute",
    .dispatch = slow_warmup_dispatch,
    .server_of = route_server_of_first,
    .label = slow_warmup_label,
};

/* obj[key] as a number in [lo, hi] (each end included or not) into *out; dflt when absent. */
static int number(struct rb *b, json_t *obj, const char *key, double lo, double hi, bool open,
                  double dflt, double *out) {
    json_t *v = json_object_get(obj, key);
    *out = dflt;
    if (v == NULL)
        return 0;
    double d = json_number_value(v);
    if (!json_is_number(v) || (open ? d <= lo || d >= hi : d < lo || d > hi)) {
        rb_path_key(b, key);
        return rb_fail(b, "expected a number in %s%g, %g%s", open ? "(" : "[", lo, hi,
                       open ? ")" : "]");
    }
    *out = d;
    return 0;
}

/* mcrouter's settings, with its defaults (0.7, 0.9, 0.1, 1, 100). */
static int settings(struct rb *b, json_t *v, struct warmup_settings *s) {
    *s = (struct warmup_settings){0.7, 0.9, 0.1, 1.0, 100};
    if (v == NULL)
        return 0;
    size_t mark = rb_path_key(b, "settings");
    long long min;
    if (!json_is_object(v))
        return rb_fail(b, "expected an object, not %s", rb_type_name(v));
    if (rb_check_keys(b, v, "enable_threshold disable_threshold start step min_requests",
                      "slow_warmup settings") < 0 ||
        rb_need(b, v, "enable_threshold") == NULL || rb_need(b, v, "disable_threshold") == NULL ||
        number(b, v, "enable_threshold", 0, 1, false, 0, &s->enable) < 0 ||
        number(b, v, "disable_threshold", 0, 1, false, 0, &s->disable) < 0 ||
        number(b, v, "start", 0, 1, true, 0.1, &s->start) < 0 ||
        number(b, v, "step", 0, 100, true, 1.0, &s->step) < 0 ||
        rb_get_int(b, v, "min_requests", 1, INT64_MAX, 100, &min) < 0)
        return -1;
    if (s->enable >= s->disable)
        return rb_fail(b, "enable_threshold must be below disable_threshold");
    s->min_requests = (uint64_t)min;
    rb_path_set(b, mark);
    return 0;
}

int rb_slow_warmup(struct rb *b, json_t *v, struct route **kids, unsigned n) {
    size_t mark = rb_path_key(b, "slow_warmup");
    if (!json_is_object(v))
        return rb_fail(b, "expected an object, not %s", rb_type_name(v));
    struct warmup_settings s;
    struct route *failover = NULL;
    if (rb_check_keys(b, v, "failoverTarget settings", "slow_warmup") < 0 ||
        settings(b, json_object_get(v, "settings"), &s) < 0 ||
        rb_build_key(b, v, "failoverTarget", true, &failover) < 0)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        struct route *pair[2] = {kids[i], failover};
        struct slow_warmup *w = (struct slow_warmup *)route_make(
            b->cfg->routes, &slow_warmup_ops, sizeof(*w), pair, 2);
        if (w == NULL)
            return rb_nomem(b);
        w->s = s;
        kids[i] = &w->r;
    }
    rb_path_set(b, mark);
    return 0;
}
