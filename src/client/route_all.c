/*
 * route_all.c -- the routes that send to every child at once:
 *
 *   AllSyncRoute     waits for all; answers with the worst reply (an error
 *                    before a miss or refusal, before success; the first
 *                    to arrive among equals): the replicated pool's writes
 *   AllInitialRoute  answers with the first child's reply as soon as it
 *                    comes; the others finish in the background
 *   AllAsyncRoute    answers at once as NullRoute would; all children
 *                    finish in the background
 *   AllFastestRoute  answers with the first reply that is not a failure
 *                    another server might not have (cl_failover_error), or
 *                    the last one when every child fails
 *   AllMajorityRoute answers once more than half the children gave the
 *                    same status, with the first of them; else, after all,
 *                    the commonest (the worse of equally common ones)
 *
 * Children may outlive their parent's answer, so a fan carries its own
 * copy of the key and value (and a raw meta command's flags), and is freed when its last child is done.
 * The reply AllSync and AllMajority keep (the worst, the commonest so far)
 * is copied too: a reply's spans live only as long as the callback that
 * hands it over.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"

struct all {
    struct route r;
    enum route_all_mode mode;
};

static enum route_all_mode mode_of(const struct route *r) {
    return ((const struct all *)r)->mode;
}

struct fan_child {
    struct cl_req q;            /* first, so done() finds the child */
    struct fan *f;
};

/* Statuses as counters' indexes (AllMajority): every enum cellar_status fits. */
#define STATUS_LOW (-16)
#define STATUS_SLOTS 24

struct fan {
    struct cl_req *parent;      /* NULL once answered */
    enum route_all_mode mode;
    unsigned n;                 /* children */
    unsigned left;              /* children not done */
    int worst;                  /* the status kept (AllSync: the worst so far;
                                   AllMajority: the commonest), and its reply */
    bool have_worst;
    struct msg_reply worst_r;
    char *worst_buf;
    unsigned kept_count;        /* AllMajority: how many gave the status kept */
    unsigned short counts[STATUS_SLOTS];    /* AllMajority: replies by status */
    struct fan_child kids[];    /* then the key and value bytes */
};

/* How bad a status is: errors, then misses and refusals, then success. */
static int badness(int status) {
    return status < 0 ? 2 : status > 0 ? 1 : 0;
}

/* Keeps status and a copy of rep as the answer-to-be. */
static void keep(struct fan *f, int status, const struct msg_reply *rep) {
    f->have_worst = true;
    f->worst = status;
    free(f->worst_buf);
    f->worst_buf = NULL;
    if (rep == NULL) {
        f->worst_r = (struct msg_reply){.res = MSG_RES_NONE, .ttl = -1};
        return;
    }
    if (!cl_reply_copy(rep, &f->worst_r, &f->worst_buf)) {
        f->worst = CELLAR_ENOMEM;   /* answered without a reply, not as the reply's kind */
        f->worst_r = (struct msg_reply){.res = MSG_RES_NONE, .ttl = -1};
    }
}

static void keep_worst(struct fan *f, int status, const struct msg_reply *rep) {
    if (!f->have_worst || badness(status) > badness(f->worst))
        keep(f, status, rep);
}

static unsigned slot(int status) {
    int i = status - STATUS_LOW;
    return i >= 0 && i < STATUS_SLOTS ? (unsigned)i : 0;
}

/* AllMajority: counts the reply; true once more than half the children agree. */
static bool keep_majority(struct fan *f, int status, const struct msg_reply *rep) {
    unsigned c = ++f->counts[slot(status)];
    if (c > f->kept_count || (c == f->kept_count && badness(status) > badness(f->worst))) {
        keep(f, status, rep);
        f->kept_count = c;
    }
    return f->kept_count >= f->n / 2 + 1;
}

static void answer(struct fan *f, int status, const struct msg_reply *rep) {
    struct cl_req *p = f->parent;
    f->parent = NULL;
    p->done(p, status, rep);
}

static void fan_free(struct fan *f) {
    free(f->worst_buf);
    free(f);
}

static void child_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct fan_child *k = (struct fan_child *)q;
    struct fan *f = k->f;
    if (f->parent) {
        switch (f->mode) {
        case ROUTE_ALL_SYNC:
            keep_worst(f, status, rep);
            break;
        case ROUTE_ALL_INITIAL:
            if (k == &f->kids[0])
                answer(f, status, rep);
            break;
        case ROUTE_ALL_FASTEST:
            if (!cl_failover_error(status) || f->left == 1)
                answer(f, status, rep);
            break;
        case ROUTE_ALL_MAJORITY:
            if (keep_majority(f, status, rep))
                answer(f, f->worst, f->worst_r.res == MSG_RES_NONE ? NULL : &f->worst_r);
            break;
        case ROUTE_ALL_ASYNC:
            break;
        }
    }
    if (--f->left > 0)
        return;
    if (f->parent)
        answer(f, f->worst, f->worst_r.res == MSG_RES_NONE ? NULL : &f->worst_r);
    fan_free(f);
}

void cl_all_dispatch(struct cellar *h, struct cl_req *q, struct route *const *children,
                     unsigned n, enum route_all_mode mode) {
    if (n == 0) {
        cl_answer_null(q);
        return;
    }
    /* the key with the routing prefix before it (keep_routing_prefix pools send it) */
    size_t np = q->m.prefix_len, nk = np + q->m.key.len;
    size_t nv = msg_carries_value(&q->m) ? q->m.value.len : 0;
    size_t nf = q->m.op == MSG_META ? q->m.meta_flags.len : 0;
    struct fan *f = malloc(sizeof(*f) + n * sizeof(f->kids[0]) + nk + nv + nf);
    if (f == NULL) {
        q->done(q, CELLAR_ENOMEM, NULL);
        return;
    }
    *f = (struct fan){.parent = q, .mode = mode, .n = n, .left = n};
    struct msg m = q->m;
    char *copy = (char *)&f->kids[n];
    if (nk)
        memcpy(copy, q->m.key.p - np, nk);
    if (nv)
        memcpy(copy + nk, q->m.value.p, nv);
    if (nf)
        memcpy(copy + nk + nv, q->m.meta_flags.p, nf);
    m.key.p = copy + np;
    m.value = (struct mc_span){nv ? copy + nk : NULL, nv};
    if (q->m.op == MSG_META)
        m.meta_flags = (struct mc_span){nf ? copy + nk + nv : NULL, nf};
    for (unsigned i = 0; i < n; i++)
        f->kids[i] = (struct fan_child){.q = {.m = m, .done = child_done}, .f = f};
    if (mode == ROUTE_ALL_ASYNC) {
        f->parent = NULL;
        cl_answer_null(q);
    }
    /* The fan may be freed by the last child: nothing of it is read after the loop. */
    for (unsigned i = 0; i < n; i++)
        route_dispatch(children[i], h, &f->kids[i].q);
}

static void all_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    cl_all_dispatch(h, q, r->children, r->nchildren, mode_of(r));
}

static const struct route_ops ops[] = {
    [ROUTE_ALL_SYNC] = {.name = "AllSyncRoute", .dispatch = all_dispatch,
                        .server_of = route_server_of_first},
    [ROUTE_ALL_ASYNC] = {.name = "AllAsyncRoute", .dispatch = all_dispatch,
                         .server_of = route_server_of_first},
    [ROUTE_ALL_INITIAL] = {.name = "AllInitialRoute", .dispatch = all_dispatch,
                           .server_of = route_server_of_first},
    [ROUTE_ALL_FASTEST] = {.name = "AllFastestRoute", .dispatch = all_dispatch,
                           .server_of = route_server_of_first},
    [ROUTE_ALL_MAJORITY] = {.name = "AllMajorityRoute", .dispatch = all_dispatch,
                            .server_of = route_server_of_first},
};

struct route *route_all(struct route_set *rs, enum route_all_mode mode,
                        struct route *const *children, unsigned n) {
    if ((unsigned)mode > ROUTE_ALL_MAJORITY)
        return NULL;
    struct route *r = route_make(rs, &ops[mode], sizeof(struct all), children, n);
    if (r)
        ((struct all *)r)->mode = mode;
    return r;
}

static struct route *all_over(struct route_set *rs, const struct route_type *t,
                              struct route *const *v, unsigned n) {
    return route_all(rs, (enum route_all_mode)t->mode, v, n);
}

#define ALL_TYPE(name, m)                                                              \
    {.type = name, .keys = "children", .route_keys = "children", .map_keys = "",       \
     .pool_keys = "", .build = rb_build_over, .over = all_over, .mode = m}

const struct route_type route_type_all_sync = ALL_TYPE("AllSyncRoute", ROUTE_ALL_SYNC);
const struct route_type route_type_all_async = ALL_TYPE("AllAsyncRoute", ROUTE_ALL_ASYNC);
const struct route_type route_type_all_initial =
    ALL_TYPE("AllInitialRoute", ROUTE_ALL_INITIAL);
const struct route_type route_type_all_fastest =
    ALL_TYPE("AllFastestRoute", ROUTE_ALL_FASTEST);
const struct route_type route_type_all_majority =
    ALL_TYPE("AllMajorityRoute", ROUTE_ALL_MAJORITY);
