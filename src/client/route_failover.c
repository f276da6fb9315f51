/*
 * route_failover.c -- the routes that try children one after another:
 *
 *   FailoverRoute             children in order until one answers without
 *                             a failover error (cl_failover_error)
 *   FailoverWithExptimeRoute  the same; from the second child on, writes
 *                             carry an exptime capped at failover_exptime:
 *                             the paper's gutter pool, whose entries must
 *                             expire soon since nothing invalidates them
 *   MissFailoverRoute         reads and deletes: in order until a hit (a miss
 *                             moves on too); anything else goes to the first
 *                             child; with return_best_on_error, a miss met on
 *                             the way is the answer rather than a later error
 *   LatestRoute               a replica picked by the handle's host id,
 *                             then up to failover_count more, in order
 *
 *   dispatch --> child[start] --done--> answered? --yes--> parent->done
 *                     ^                    | no, and children left
 *                     +--- child[next] <---+
 *
 * One struct seq per request in flight, freed before the parent hears.
 * When every child failed, the parent gets the last one's answer.  Each
 * sending on to a later child counts one in the handle's failovers.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "protocol/mc_put.h"

#define THIRTY_DAYS 2592000
#define FAILOVER_COUNT 5        /* LatestRoute's default */
#define FAILOVER_EXPTIME 60     /* FailoverWithExptimeRoute's default */

/*
 * mcrouter's failover_errors: which errors send a request on, by what the
 * request does.  Its names, as libcellar's statuses can tell them apart.
 */
enum fo_class { FO_GETS, FO_UPDATES, FO_DELETES, FO_CLASSES };
enum {
    FO_TKO = 1u << 0,               /* CELLAR_EDOWN */
    FO_CONNECT = 1u << 1,           /* CELLAR_ECONNECT: connect_error, connect_timeout */
    FO_TIMEOUT = 1u << 2,           /* CELLAR_ETIMEDOUT */
    FO_REMOTE = 1u << 3,            /* CELLAR_ESERVER, EPROTO, ECLOSED: remote_error */
    FO_LOCAL = 1u << 4,             /* CELLAR_ENOMEM: local_error */
};

/*
 * mcrouter's failover_limit, {"rate": 0..1, "burst": >= 1}: a token bucket
 * filled by requests, not time.  Each request the route gets adds rate
 * tokens (up to burst; it starts full); each failover on an error other
 * than a server marked down takes one, and with none left the request is
 * answered with the error instead.  Kept in millionths, so that 9.8 - 1 +
 * 0.2 * 11 - 11 is 0 exactly.  Shared by the handles of every thread.
 */
#define MICRO 1000000

struct limiter {
    pthread_mutex_t mu;
    uint64_t rate, burst;       /* in millionths of a token */
    uint64_t tokens;            /* as of request last */
    uint64_t reqs, last;        /* requests seen; at the last failover asked */
};

static void limiter_bump(struct limiter *l) {
    pthread_mutex_lock(&l->mu);
    l->reqs++;
    pthread_mutex_unlock(&l->mu);
}

static bool limiter_allow(struct limiter *l) {
    pthread_mutex_lock(&l->mu);
    uint64_t t = l->tokens + (l->reqs - l->last) * l->rate;
    l->tokens = t < l->burst ? t : l->burst;
    l->last = l->reqs;
    bool ok = l->tokens >= MICRO;
    if (ok)
        l->tokens -= MICRO;
    pthread_mutex_unlock(&l->mu);
    return ok;
}

/* The three kinds share one struct and the walk below. */
struct failover {
    struct route r;
    int exptime;                /* FailoverRoute: cap on the failover children's exptime
                                   (-1: none) */
    unsigned failover_count;    /* LatestRoute: children tried after the first */
    struct limiter *limit;      /* failover_limit, or NULL */
    unsigned max_tries;         /* failover_policy's: children tried, the first included */
    _Atomic unsigned *fails;    /* LeastFailuresPolicy: each child's errors in a row
                                   (a success clears them), or NULL: in order */
    bool tag;                   /* failover_tag: a failed-over key with a "|#|" gets
                                   ":failover=1" after it, as mcrouter tags it */
    bool on_miss;               /* MissFailoverRoute: a read's miss moves on too */
    bool best_on_error;         /* ... and a miss is answered before a later error */
    bool custom;                /* failover_errors given: errors[] decides, else every
                                   failover error (cl_failover_error) moves on */
    unsigned errors[FO_CLASSES];
};

static const struct failover *fo(const struct route *r) {
    return (const struct failover *)r;
}

struct seq {
    struct cl_req q;            /* the child request: first, so done() finds the seq */
    struct cl_req *parent;
    const struct route *r;
    struct cellar *h;
    unsigned start, tried, limit;   /* limit: children to try, at most */
    unsigned at;                    /* the child now asked */
    bool missed;                    /* MissFailoverRoute: a child said it has none */
    uint64_t used;                  /* LeastFailuresPolicy: the children asked */
    char *tagged;                   /* failover_tag's key, made at the first failover */
};

_Static_assert(sizeof(struct seq) <= CL_BLOCK, "a seq fits a handle's block");

int64_t cl_cap_exptime(int64_t exptime, int cap) {
    if (exptime < 0)
        return exptime;
    int64_t left = exptime;
    if (exptime > THIRTY_DAYS)
        left = exptime - (int64_t)time(NULL);
    return (exptime == 0 || left > cap) ? cap : exptime;
}

/* The failover_errors name of a status (0: not an error it knows). */
static unsigned error_bit(int status) {
    switch (status) {
    case CELLAR_EDOWN: return FO_TKO;
    case CELLAR_ECONNECT: return FO_CONNECT;
    case CELLAR_ETIMEDOUT: return FO_TIMEOUT;
    case CELLAR_ESERVER:
    case CELLAR_EPROTO:
    case CELLAR_ECLOSED: return FO_REMOTE;
    case CELLAR_ENOMEM: return FO_LOCAL;
    default: return 0;
    }
}

/* Which of failover_errors' lists op's request follows. */
static enum fo_class class_of(enum msg_op op) {
    if (cl_op_reads(op))
        return FO_GETS;
    return op == MSG_DELETE ? FO_DELETES : FO_UPDATES;
}

/* Does this answer send the request on to the next child? */
static bool moves_on(const struct seq *s, int status) {
    const struct failover *f = fo(s->r);
    if (f->custom ? (f->errors[class_of(s->parent->m.op)] & error_bit(status)) != 0
                  : cl_failover_error(status))
        return true;
    return f->on_miss && status == CELLAR_NOT_FOUND;
}

static void seq_done(struct cl_req *q, int status, const struct msg_reply *rep);

/* failover_tag: the key, when it has a "|#|" and room, with ":failover=1" after it. */
static void tag_key(struct seq *s) {
    static const char tag[] = ":failover=1";
    struct mc_span k = s->q.m.key;
    if (!msg_op_keyed(s->q.m.op) || s->q.m.op == MSG_META || k.len < 3 ||
        k.len + sizeof(tag) - 1 > MC_KEY_MAX || memmem(k.p, k.len, "|#|", 3) == NULL)
        return;
    if (s->tagged == NULL) {
        if ((s->tagged = malloc(k.len + sizeof(tag) - 1)) == NULL)
            return;             /* it is always safe not to tag, as mcrouter says */
        memcpy(s->tagged, k.p, k.len);
        memcpy(s->tagged + k.len, tag, sizeof(tag) - 1);
    }
    s->q.m.key = (struct mc_span){s->tagged, k.len + sizeof(tag) - 1};
    s->q.m.prefix_len = 0;
}

/* LeastFailuresPolicy's next child: the first always, then the one with the fewest errors. */
static unsigned least_failures(const struct seq *s) {
    const struct failover *f = fo(s->r);
    if (s->tried == 0)
        return 0;
    unsigned best = 0, fewest = UINT_MAX;
    for (unsigned i = 1; i < s->r->nchildren; i++) {
        unsigned n = atomic_load_explicit(&f->fails[i], memory_order_relaxed);
        if (!(s->used & (1ull << i)) && n < fewest) {
            best = i;
            fewest = n;
        }
    }
    return best;
}

static void seq_send(struct seq *s) {
    const struct route *r = s->r;
    unsigned i = fo(r)->fails ? least_failures(s) : (s->start + s->tried) % r->nchildren;
    s->at = i;
    s->used |= 1ull << (i & 63);
    s->q = (struct cl_req){.m = s->parent->m, .done = seq_done};
    if (s->tried > 0) {
        cl_count(&s->h->failovers, 1);
        int cap = fo(r)->exptime;
        if (cap >= 0 && cl_op_sets_exptime(s->q.m.op))
            s->q.m.exptime = cl_cap_exptime(s->q.m.exptime, cap);
        if (fo(r)->tag)
            tag_key(s);
    }
    s->tried++;
    route_dispatch(r->children[i], s->h, &s->q);
}

static void seq_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct seq *s = (struct seq *)q;
    struct limiter *l = fo(s->r)->limit;
    s->missed |= status == CELLAR_NOT_FOUND;
    if (fo(s->r)->fails) {
        _Atomic unsigned *n = &fo(s->r)->fails[s->at];
        if (status < 0)
            atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
        else
            atomic_store_explicit(n, 0, memory_order_relaxed);
    }
    if (s->tried < s->limit && moves_on(s, status) &&
        (l == NULL || status == CELLAR_EDOWN || limiter_allow(l))) {
        seq_send(s);
        return;
    }
    struct cl_req *parent = s->parent;
    bool best_miss = s->missed && status < 0 && fo(s->r)->best_on_error;
    free(s->tagged);
    cl_block_put(s->h, s);
    if (best_miss)
        cl_answer_null(parent);     /* the miss met on the way, not this error */
    else
        parent->done(parent, status, rep);
}

static void seq_dispatch(const struct route *r, struct cellar *h, struct cl_req *q,
                         unsigned start, unsigned limit) {
    if (r->nchildren == 0) {
        cl_answer_null(q);
        return;
    }
    struct seq *s = cl_block_get(h);
    if (s == NULL) {
        q->done(q, CELLAR_ENOMEM, NULL);
        return;
    }
    *s = (struct seq){.parent = q, .r = r, .h = h, .start = start, .limit = limit};
    seq_send(s);
}

static void failover_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (fo(r)->limit)
        limiter_bump(fo(r)->limit);
    unsigned tries = fo(r)->max_tries;
    seq_dispatch(r, h, q, 0, tries && tries < r->nchildren ? tries : r->nchildren);
}

static void miss_failover_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    bool walks = cl_op_reads(q->m.op) || q->m.op == MSG_DELETE;
    seq_dispatch(r, h, q, 0, walks ? r->nchildren : 1);
}

static void latest_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    unsigned n = r->nchildren, limit = fo(r)->failover_count + 1;
    seq_dispatch(r, h, q, n ? (unsigned)(h->cfg->host_id % n) : 0, limit < n ? limit : n);
}

/* The child this host reads first (latest_dispatch()'s). */
static int latest_server_of(const struct route *r, const struct cellar_config *cfg,
                            const char *key, size_t nkey) {
    unsigned n = r->nchildren;
    return route_server_of(n ? r->children[cfg->host_id % n] : NULL, cfg, key, nkey);
}

/* Millionths as a decimal: 0.2, 9.8, 1000. */
static void put_micro(struct mc_put *w, uint64_t v) {
    mc_put_u64(w, v / MICRO);
    uint64_t frac = v % MICRO;
    if (frac == 0)
        return;
    char d[7];
    int n = 6;
    for (int i = 5; i >= 0; i--, frac /= 10)
        d[i] = (char)('0' + frac % 10);
    while (d[n - 1] == '0')
        n--;
    MC_PUT_LIT(w, ".");
    mc_put(w, d, (size_t)n);
}

static void failover_label(const struct route *r, const struct cellar_config *cfg,
                           struct mc_put *w) {
    (void)cfg;
    const struct failover *f = fo(r);
    bool limited = f->limit != NULL;
    bool any = f->exptime >= 0 || limited || f->custom || f->tag || f->max_tries;
    if (!any)
        return;
    const char *sep = "(";
    if (f->exptime >= 0) {
        MC_PUT_LIT(w, "(exptime=");
        mc_put_i64(w, f->exptime);
        sep = ",";
    }
    if (limited) {
        mc_put(w, sep, 1);
        MC_PUT_LIT(w, "failover_limit=");
        put_micro(w, f->limit->rate);
        MC_PUT_LIT(w, "/");
        put_micro(w, f->limit->burst);
        sep = ",";
    }
    if (f->tag) {
        mc_put(w, sep, 1);
        MC_PUT_LIT(w, "failover_tag");
        sep = ",";
    }
    if (f->max_tries) {
        mc_put(w, sep, 1);
        if (f->fails)
            MC_PUT_LIT(w, "least_failures,");
        MC_PUT_LIT(w, "max_tries=");
        mc_put_u64(w, f->max_tries);
        sep = ",";
    }
    if (f->custom) {
        mc_put(w, sep, 1);
        MC_PUT_LIT(w, "failover_errors=");
        for (int c = 0; c < FO_CLASSES; c++) {
            if (c)
                MC_PUT_LIT(w, "/");
            mc_put_u64(w, f->errors[c]);
        }
    }
    MC_PUT_LIT(w, ")");
}

static void latest_label(const struct route *r, const struct cellar_config *cfg,
                         struct mc_put *w) {
    (void)cfg;
    MC_PUT_LIT(w, "(failover_count=");
    mc_put_u64(w, fo(r)->failover_count);
    MC_PUT_LIT(w, ")");
}

static void failover_release(struct route *r) {
    struct failover *f = (struct failover *)r;
    free((void *)f->fails);
    f->fails = NULL;
    if (f->limit) {
        pthread_mutex_destroy(&f->limit->mu);
        free(f->limit);
        f->limit = NULL;
    }
}

static const struct route_ops failover_ops = {
    .name = "FailoverRoute",
    .dispatch = failover_dispatch,
    .server_of = route_server_of_first,
    .label = failover_label,
    .release = failover_release,
};

static const struct route_ops miss_failover_ops = {
    .name = "MissFailoverRoute",
    .dispatch = miss_failover_dispatch,
    .server_of = route_server_of_first,
};

static const struct route_ops latest_ops = {
    .name = "LatestRoute",
    .dispatch = latest_dispatch,
    .server_of = latest_server_of,
    .label = latest_label,
};

static struct failover *make(struct route_set *rs, const struct route_ops *ops,
                             struct route *const *children, unsigned n) {
    struct failover *f = (struct failover *)route_make(rs, ops, sizeof(*f), children, n);
    if (f)
        f->exptime = -1;
    return f;
}

struct route *route_failover(struct route_set *rs, struct route *const *children, unsigned n,
                             int failover_exptime) {
    struct failover *f = make(rs, &failover_ops, children, n);
    if (f)
        f->exptime = failover_exptime < 0 ? -1 : failover_exptime;
    return f ? &f->r : NULL;
}

struct route *route_miss_failover(struct route_set *rs, struct route *const *children,
                                  unsigned n) {
    struct failover *f = make(rs, &miss_failover_ops, children, n);
    if (f)
        f->on_miss = true;
    return f ? &f->r : NULL;
}

struct route *route_latest(struct route_set *rs, struct route *const *children, unsigned n,
                           unsigned failover_count) {
    struct failover *f = make(rs, &latest_ops, children, n);
    if (f)
        f->failover_count = failover_count;
    return f ? &f->r : NULL;
}

/* ---------------------------------------------------------------------- */
/* JSON                                                                     */
/* ---------------------------------------------------------------------- */

static struct route *failover_over(struct route_set *rs, const struct route_type *t,
                                   struct route *const *v, unsigned n) {
    (void)t;
    return route_failover(rs, v, n, -1);
}

static struct route *miss_failover_over(struct route_set *rs, const struct route_type *t,
                                        struct route *const *v, unsigned n) {
    (void)t;
    return route_miss_failover(rs, v, n);
}

static struct route *latest_over(struct route_set *rs, const struct route_type *t,
                                 struct route *const *v, unsigned n) {
    (void)t;
    return route_latest(rs, v, n, FAILOVER_COUNT);
}

/* One failover_errors list (names) into *bits. */
static int error_list(struct rb *b, json_t *v, unsigned *bits) {
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {
        {"tko", FO_TKO},
        {"connect_error", FO_CONNECT},
        {"connect_timeout", FO_CONNECT},
        {"timeout", FO_TIMEOUT},
        {"remote_error", FO_REMOTE},
        {"local_error", FO_LOCAL},
        /* mcrouter's others, which a memcache backend never gives */
        {"busy", 0}, {"try_again", 0}, {"shutdown", 0}, {"aborted", 0}, {"deadline_exceeded", 0},
        {"client_error", 0}, {"bad_command", 0}, {"bad_key", 0}, {"bad_flags", 0},
        {"bad_exptime", 0}, {"bad_lease_id", 0}, {"bad_cas_id", 0}, {"bad_value", 0},
        {"ooo", 0}, {"permission_denied", 0}, {"exception", 0}, {"resource_exhausted", 0},
    };
    size_t i;
    json_t *e;
    if (!json_is_array(v))
        return rb_fail(b, "expected a list of error names, not %s", rb_type_name(v));
    *bits = 0;
    json_array_foreach(v, i, e) {
        size_t k = 0, n = sizeof(names) / sizeof(names[0]);
        while (k < n && !(json_is_string(e) && strcmp(names[k].name, json_string_value(e)) == 0))
            k++;
        if (k == n) {
            rb_path_index(b, i);
            return json_is_string(e)
                       ? rb_fail(b, "\"%s\" is not a failover error (tko connect_error "
                                    "connect_timeout timeout remote_error local_error ...)",
                                 json_string_value(e))
                       : rb_fail(b, "expected an error name, not %s", rb_type_name(e));
        }
        *bits |= names[k].bit;
    }
    return 0;
}

/* A number of obj[key] into *out, clamped to [lo, hi]; dflt when absent. */
static int get_number(struct rb *b, json_t *obj, const char *key, double lo, double hi,
                      double dflt, double *out) {
    json_t *v = json_object_get(obj, key);
    *out = dflt;
    if (v == NULL)
        return 0;
    size_t mark = rb_path_key(b, key);
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return rb_fail(b, "expected a number, not %s", rb_type_name(v));
    double d = json_number_value(v);
    *out = d < lo ? lo : d > hi ? hi : d;
    rb_path_set(b, mark);
    return 0;
}

/* "failover_limit": {"rate": 0..1 (clamped), "burst": >= 1 (1000)}, as mcrouter's. */
static int failover_limit(struct rb *b, json_t *obj, struct failover *f) {
    json_t *v = json_object_get(obj, "failover_limit");
    if (v == NULL)
        return 0;
    size_t mark = rb_path_key(b, "failover_limit");
    if (!json_is_object(v))
        return rb_fail(b, "expected {\"rate\": 0..1, \"burst\": >= 1}, not %s",
                       rb_type_name(v));
    if (rb_check_keys(b, v, "rate burst", "failover_limit") < 0 ||
        rb_need(b, v, "rate") == NULL)
        return -1;
    double rate, burst;
    if (get_number(b, v, "rate", 0, 1, 0, &rate) < 0 ||
        get_number(b, v, "burst", 1, 1e12, 1000, &burst) < 0)
        return -1;
    struct limiter *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return rb_nomem(b);
    pthread_mutex_init(&l->mu, NULL);
    l->rate = (uint64_t)(rate * MICRO + 0.5);
    l->burst = l->tokens = (uint64_t)(burst * MICRO + 0.5);
    f->limit = l;
    rb_path_set(b, mark);
    return 0;
}

/*
 * mcrouter's failover options of obj into f: "failover_errors" (a list of
 * error names, or {"gets", "updates", "deletes"}: lists, each absent one
 * every error) and "failover_limit".
 */
/*
 * "failover_policy": {"type": "InOrderPolicy" | "LeastFailuresPolicy",
 * "max_tries": INT} (for LeastFailures, which asks the first child, then
 * the others by fewest errors in a row, max_tries is required, as in
 * mcrouter).  mcrouter's DeterministicOrderPolicy and RendezvousPolicy
 * are refused by name.
 */
static int failover_policy(struct rb *b, json_t *obj, struct failover *f) {
    json_t *v = json_object_get(obj, "failover_policy");
    if (v == NULL)
        return 0;
    size_t mark = rb_path_key(b, "failover_policy");
    if (!json_is_object(v))
        return rb_fail(b, "expected an object, not %s", rb_type_name(v));
    json_t *type = rb_need(b, v, "type");
    if (type == NULL)
        return -1;
    const char *t = json_is_string(type) ? json_string_value(type) : "";
    bool least = strcmp(t, "LeastFailuresPolicy") == 0;
    if (!least && strcmp(t, "InOrderPolicy") != 0)
        return rb_fail(b, "policy \"%s\" is not one cellar implements (InOrderPolicy, "
                          "LeastFailuresPolicy)", t);
    if (rb_check_keys(b, v, "type max_tries", "failover_policy") < 0 ||
        (least && rb_need(b, v, "max_tries") == NULL))
        return -1;
    long long tries;
    if (rb_get_int(b, v, "max_tries", 1, UINT32_MAX, 0, &tries) < 0)
        return -1;
    unsigned n = f->r.nchildren;
    f->max_tries = tries > n ? n : (unsigned)tries;     /* more than the children: all */
    if (least) {
        if (n > 64)
            return rb_fail(b, "LeastFailuresPolicy over more than 64 children");
        f->fails = calloc(n ? n : 1, sizeof(*f->fails));
        if (f->fails == NULL)
            return rb_nomem(b);
    }
    rb_path_set(b, mark);
    return 0;
}

static int failover_options(struct rb *b, json_t *obj, struct failover *f) {
    if (failover_limit(b, obj, f) < 0 || failover_policy(b, obj, f) < 0)
        return -1;
    json_t *tag = json_object_get(obj, "failover_tag");
    if (tag && !json_is_boolean(tag)) {
        rb_path_key(b, "failover_tag");
        return rb_fail(b, "expected true or false");
    }
    f->tag = json_is_true(tag);
    json_t *v = json_object_get(obj, "failover_errors");
    if (v == NULL)
        return 0;
    size_t mark = rb_path_key(b, "failover_errors");
    static const char *const classes[FO_CLASSES] = {"gets", "updates", "deletes"};
    f->custom = true;
    if (json_is_array(v)) {
        if (error_list(b, v, &f->errors[FO_GETS]) < 0)
            return -1;
        f->errors[FO_UPDATES] = f->errors[FO_DELETES] = f->errors[FO_GETS];
    } else if (json_is_object(v)) {
        if (rb_check_keys(b, v, "gets updates deletes", "failover_errors") < 0)
            return -1;
        for (int c = 0; c < FO_CLASSES; c++) {
            json_t *l = json_object_get(v, classes[c]);
            f->errors[c] = FO_TKO | FO_CONNECT | FO_TIMEOUT | FO_REMOTE;
            size_t m = rb_path_key(b, classes[c]);
            if (l && error_list(b, l, &f->errors[c]) < 0)
                return -1;
            rb_path_set(b, m);
        }
    } else {
        return rb_fail(b, "expected a list of error names or {\"gets\", \"updates\", "
                          "\"deletes\"}, not %s", rb_type_name(v));
    }
    rb_path_set(b, mark);
    return 0;
}

/* {"type": "FailoverRoute", "children": route, "failover_errors", "failover_limit"} */
static int build_failover(struct rb *b, const struct route_type *t, json_t *obj,
                          struct route **out) {
    (void)t;
    struct route_list l = {0};
    int rc = rb_build_key_list(b, obj, "children", &l);
    if (rc == 0 && (*out = route_failover(b->cfg->routes, l.v, l.n, -1)) == NULL)
        rc = rb_nomem(b);
    if (rc == 0)
        rc = failover_options(b, obj, (struct failover *)*out);
    free(l.v);
    return rc;
}

/* {"type": "LatestRoute", "children": route, "failover_count": INT} */
static int build_latest(struct rb *b, const struct route_type *t, json_t *obj,
                        struct route **out) {
    (void)t;
    struct route_list l = {0};
    long long count = FAILOVER_COUNT;
    int rc = rb_build_key_list(b, obj, "children", &l);
    if (rc == 0)
        rc = rb_get_int(b, obj, "failover_count", 0, UINT_MAX, FAILOVER_COUNT, &count);
    if (rc == 0 && (*out = route_latest(b->cfg->routes, l.v, l.n, (unsigned)count)) == NULL)
        rc = rb_nomem(b);
    free(l.v);
    return rc;
}

/*
 * {"type": "FailoverWithExptimeRoute", "normal": route, "failover": route,
 *  "failover_exptime": INT}: FailoverRoute over normal + failover, capped.
 */
static int build_failover_exptime(struct rb *b, const struct route_type *t, json_t *obj,
                                  struct route **out) {
    (void)t;
    struct route_list l = {0};
    struct route *normal = NULL;
    long long exptime;
    int rc = rb_build_key(b, obj, "normal", true, &normal);
    if (rc == 0)
        rc = rb_push(b, &l, normal);
    if (rc == 0 && json_object_get(obj, "failover"))
        rc = rb_build_key_list(b, obj, "failover", &l);
    if (rc == 0)
        rc = rb_get_int(b, obj, "failover_exptime", 0, INT_MAX, FAILOVER_EXPTIME, &exptime);
    if (rc == 0 && (*out = route_failover(b->cfg->routes, l.v, l.n, (int)exptime)) == NULL)
        rc = rb_nomem(b);
    if (rc == 0)
        rc = failover_options(b, obj, (struct failover *)*out);
    free(l.v);
    return rc;
}

const struct route_type route_type_failover = {
    .type = "FailoverRoute",
    .keys = "children failover_errors failover_limit failover_tag failover_policy",
    .route_keys = "children",
    .map_keys = "",
    .pool_keys = "",
    .build = build_failover,
    .over = failover_over,
};

const struct route_type route_type_failover_exptime = {
    .type = "FailoverWithExptimeRoute",
    .keys = "normal failover failover_exptime failover_errors failover_limit failover_tag "
            "failover_policy",
    .route_keys = "normal failover",
    .map_keys = "",
    .pool_keys = "",
    .build = build_failover_exptime,
};

/* {"type": "MissFailoverRoute", "children": route, "return_best_on_error": BOOL} */
static int build_miss_failover(struct rb *b, const struct route_type *t, json_t *obj,
                               struct route **out) {
    json_t *best = json_object_get(obj, "return_best_on_error");
    if (best && !json_is_boolean(best)) {
        rb_path_key(b, "return_best_on_error");
        return rb_fail(b, "expected true or false");
    }
    if (rb_build_over(b, t, obj, out) < 0)
        return -1;
    ((struct failover *)*out)->best_on_error = json_is_true(best);
    return 0;
}

const struct route_type route_type_miss_failover = {
    .type = "MissFailoverRoute",
    .keys = "children return_best_on_error",
    .route_keys = "children",
    .map_keys = "",
    .pool_keys = "",
    .build = build_miss_failover,
    .over = miss_failover_over,
};

const struct route_type route_type_latest = {
    .type = "LatestRoute",
    .keys = "children failover_count",
    .route_keys = "children",
    .map_keys = "",
    .pool_keys = "",
    .build = build_latest,
    .over = latest_over,
};
