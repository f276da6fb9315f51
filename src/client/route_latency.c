/*
 * route_latency.c -- LatencyInjectionRoute: mcrouter's route for testing
 * what a slower backend does, which sends each request to its child late
 * and answers late:
 *
 *   before_latency_ms   the request waits this long before it goes
 *   after_latency_ms    the answer waits this long before it is given
 *   total_latency_ms    and longer, until this long since the request came
 *
 * Nothing blocks: the waits are the handle's timers (cl_timer_add()), so
 * the loop serves everyone else meanwhile.  A held answer is copied (its
 * spans pointed into the connection's buffer).  mcrouter's
 * request_payload_latency (waits carried by a Carbon request) and
 * total_latency_percentile_ms have no meaning here and are refused.
 */
#include <stdatomic.h>
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

enum { LI_BEFORE, LI_AFTER, LI_TOTAL, LI_COUNT };

static const char *const li_names[LI_COUNT] = {
    "before_latency_injected", "after_latency_injected", "total_latency_injected",
};

struct latency {
    struct route r;             /* children[0]: the child */
    uint64_t before_ns, after_ns, total_ns;
    _Atomic uint64_t stat[LI_COUNT];
};

/* One request on its way through the route. */
struct delayed {
    struct cl_req q;            /* the child: the parent's message */
    struct cl_timer t;
    struct cl_req *parent;
    struct cellar *h;
    const struct route *r;
    uint64_t start;
    int status;                 /* the child's answer, held until t fires */
    bool answered;
    struct msg_reply rep;       /* its spans into held */
    bool has_rep;
    char *held;
};

static struct latency *li(const struct route *r) {
    return (struct latency *)r;
}

static void li_count(const struct route *r, int which) {
    atomic_fetch_add_explicit(&li(r)->stat[which], 1, memory_order_relaxed);
}

/* Answers the parent (rep may point into d->held) and frees d. */
static void delayed_end(struct delayed *d, int status, const struct msg_reply *rep) {
    d->parent->done(d->parent, status, rep);
    free(d->held);
    free(d);
}

/* The wait before (the child goes now) or after (the held answer goes now). */
static void delayed_fire(struct cl_timer *t, bool cancelled) {
    struct delayed *d = (struct delayed *)((char *)t - offsetof(struct delayed, t));
    if (d->answered)
        delayed_end(d, d->status, d->has_rep ? &d->rep : NULL);
    else if (cancelled)
        delayed_end(d, CELLAR_ECLOSED, NULL);
    else
        route_dispatch(d->r->children[0], d->h, &d->q);
}

static void delayed_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct delayed *d = (struct delayed *)q;
    const struct latency *l = li(d->r);
    uint64_t now = clock_mono_ns(), due = now + l->after_ns;
    if (l->after_ns)
        li_count(d->r, LI_AFTER);
    if (l->total_ns && d->start + l->total_ns > due) {
        due = d->start + l->total_ns;
        li_count(d->r, LI_TOTAL);
    }
    if (due <= now || d->h->closing) {
        delayed_end(d, status, rep);
        return;
    }
    if (rep != NULL && !(d->has_rep = cl_reply_copy(rep, &d->rep, &d->held))) {
        delayed_end(d, CELLAR_ENOMEM, NULL);
        return;
    }
    d->status = status;
    d->answered = true;
    d->t.due = due;
    cl_timer_add(d->h, &d->t);
}

static void li_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    const struct latency *l = li(r);
    if (h->closing) {               /* cellar_destroy() fired the timers already */
        q->done(q, CELLAR_ECLOSED, NULL);
        return;
    }
    struct delayed *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        q->done(q, CELLAR_ENOMEM, NULL);
        return;
    }
    d->q = (struct cl_req){.m = q->m, .done = delayed_done};
    d->t.fire = delayed_fire;
    d->parent = q;
    d->h = h;
    d->r = r;
    d->start = clock_mono_ns();
    if (l->before_ns == 0) {
        route_dispatch(r->children[0], h, &d->q);
        return;
    }
    li_count(r, LI_BEFORE);
    d->t.due = d->start + l->before_ns;
    cl_timer_add(h, &d->t);
}

static void li_label(const struct route *r, const struct cellar_config *cfg, struct mc_put *w) {
    (void)cfg;
    MC_PUT_LIT(w, "(before=");
    mc_put_u64(w, li(r)->before_ns / 1000000);
    MC_PUT_LIT(w, "ms,after=");
    mc_put_u64(w, li(r)->after_ns / 1000000);
    MC_PUT_LIT(w, "ms,total=");
    mc_put_u64(w, li(r)->total_ns / 1000000);
    MC_PUT_LIT(w, "ms)");
}

static void li_counters(const struct route *r,
                        void (*put)(void *arg, const char *name, uint64_t v), void *arg) {
    for (int i = 0; i < LI_COUNT; i++)
        put(arg, li_names[i], atomic_load_explicit(&li(r)->stat[i], memory_order_relaxed));
}

static const struct route_ops latency_ops = {
    .name = "LatencyInjectionRoute",
    .dispatch = li_dispatch,
    .server_of = route_server_of_first,
    .label = li_label,
    .counters = li_counters,
};

/*
 * {"type": "LatencyInjectionRoute", "child": route, "before_latency_ms": INT,
 *  "after_latency_ms": INT, "total_latency_ms": INT}: one of the three at least
 */
static int build_latency(struct rb *b, const struct route_type *t, json_t *obj,
                         struct route **out) {
    (void)t;
    static const char *const keys[] = {"before_latency_ms", "after_latency_ms",
                                       "total_latency_ms"};
    long long ms[3];
    bool any = false;
    for (int i = 0; i < 3; i++) {
        if (rb_get_int(b, obj, keys[i], 0, 3600 * 1000, 0, &ms[i]) < 0)
            return -1;
        any |= json_object_get(obj, keys[i]) != NULL;
    }
    if (!any)
        return rb_fail(b, "LatencyInjectionRoute needs before_latency_ms, after_latency_ms "
                          "or total_latency_ms");
    struct route *child = NULL;
    if (rb_build_key(b, obj, "child", true, &child) < 0)
        return -1;
    *out = route_make(b->cfg->routes, &latency_ops, sizeof(struct latency), &child, 1);
    if (*out == NULL)
        return rb_nomem(b);
    struct latency *l = li(*out);
    l->before_ns = (uint64_t)ms[0] * 1000000u;
    l->after_ns = (uint64_t)ms[1] * 1000000u;
    l->total_ns = (uint64_t)ms[2] * 1000000u;
    return 0;
}

const struct route_type route_type_latency = {
    .type = "LatencyInjectionRoute",
    .keys = "child before_latency_ms after_latency_ms total_latency_ms",
    .route_keys = "child",
    .map_keys = "",
    .pool_keys = "",
    .build = build_latency,
};
