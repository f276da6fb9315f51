/*
 * route_failover_json.c -- the JSON of route_failover.c's kinds:
 * FailoverRoute (and FailoverWithExptimeRoute, SaltedFailoverRoute) with
 * mcrouter's failover_errors, failover_limit, failover_tag,
 * failover_policy (InOrderPolicy, LeastFailuresPolicy,
 * DeterministicOrderPolicy) and enable_lease_pairing; MissFailoverRoute,
 * LatestRoute, HostIdRoute.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "client/route_failover.h"

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
 * DeterministicOrderPolicy's settings (struct det): "max_tries" and
 * "max_error_tries" (both required, as mcrouter; more than the children,
 * or than max_tries, are cut to them), "hash" ({"hash_func": "Ch3" |
 * "WeightedCh3", "weights": [...]}, or the route's own "hash"; Ch3 and
 * the policy's own "weights" without either), "exclude_errors", "enable_failure_domains",
 * "ignore_normal_reply_index".
 */
static int deterministic(struct rb *b, json_t *v, json_t *route_hash, struct failover *f) {
    unsigned n = f->r.nchildren;
    if (rb_check_keys(b, v, "type max_tries max_error_tries hash exclude_errors "
                            "enable_failure_domains ignore_normal_reply_index",
                      "DeterministicOrderPolicy") < 0 ||
        rb_need(b, v, "max_tries") == NULL || rb_need(b, v, "max_error_tries") == NULL)
        return -1;
    if (n == 0)
        return rb_fail(b, "DeterministicOrderPolicy over no children");
    struct det *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return rb_nomem(b);
    f->det = d;                 /* failover_release() frees it, whatever happens next */
    long long tries, errs;
    bool domains = false, ignore = false;
    if (rb_get_int(b, v, "max_tries", 1, UINT32_MAX, 0, &tries) < 0 ||
        rb_get_int(b, v, "max_error_tries", 1, UINT32_MAX, 0, &errs) < 0 ||
        rb_get_bool(b, v, "enable_failure_domains", &domains) < 0 ||
        rb_get_bool(b, v, "ignore_normal_reply_index", &ignore) < 0)
        return -1;
    f->max_tries = tries > n ? n : (unsigned)tries;
    d->max_error_tries = errs > f->max_tries ? f->max_tries : (unsigned)errs;
    d->domains = domains;
    d->ignore_normal = ignore;
    json_t *ex = json_object_get(v, "exclude_errors");
    if (ex) {
        size_t m = rb_path_key(b, "exclude_errors");
        if (error_list(b, ex, &d->exclude) < 0)
            return -1;
        rb_path_set(b, m);
    }
    /* the route's own "hash" (SaltedFailoverRoute's) is the policy's, as mcrouter */
    json_t *hash = route_hash ? route_hash : json_object_get(v, "hash"), *spec = v;
    const char *func = "Ch3";
    size_t m = b->plen;
    if (hash) {
        rb_path_key(b, "hash");
        json_t *hf = json_is_object(hash) ? json_object_get(hash, "hash_func") : NULL;
        if (!json_is_object(hash) || (hf && !json_is_string(hf)))
            return rb_fail(b, "expected {\"hash_func\": \"Ch3\" or \"WeightedCh3\", ...}");
        func = hf ? json_string_value(hf) : func;
        spec = hash;
    }
    if (strcmp(func, "Ch3") != 0 && strcmp(func, "WeightedCh3") != 0)
        return rb_fail(b, "DeterministicOrderPolicy hashes with Ch3 or WeightedCh3, not \"%s\"",
                       func);
    if (rb_hash_ring(b, func, spec, n, &d->ring) < 0)
        return -1;
    rb_path_set(b, m);
    d->domain_of = calloc(n, sizeof(*d->domain_of));
    return d->domain_of ? 0 : rb_nomem(b);
}

/*
 * "failover_policy": {"type": "InOrderPolicy" | "LeastFailuresPolicy" |
 * "DeterministicOrderPolicy", "max_tries": INT, ...}.  LeastFailures asks
 * the first child, then the others by fewest errors in a row; max_tries
 * is required, as in mcrouter.  mcrouter's RendezvousPolicy is refused by
 * name.
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
    if (strcmp(t, "DeterministicOrderPolicy") == 0) {
        if (deterministic(b, v, json_object_get(obj, "hash"), f) < 0)
            return -1;
        rb_path_set(b, mark);
        return 0;
    }
    bool least = strcmp(t, "LeastFailuresPolicy") == 0;
    if (!least && strcmp(t, "InOrderPolicy") != 0)
        return rb_fail(b, "policy \"%s\" is not one cellar implements (InOrderPolicy, "
                          "LeastFailuresPolicy, DeterministicOrderPolicy)", t);
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

/*
 * mcrouter's failover options of obj into f: "failover_errors" (a list of
 * error names, or {"gets", "updates", "deletes"}: lists, each absent one
 * every error), "failover_limit", "failover_policy", "failover_tag".
 */
static int failover_options(struct rb *b, json_t *obj, struct failover *f) {
    bool pairing = false;
    if (failover_limit(b, obj, f) < 0 || failover_policy(b, obj, f) < 0 ||
        rb_get_bool(b, obj, "enable_lease_pairing", &pairing) < 0)
        return -1;
    if (pairing && !json_is_string(json_object_get(obj, "name")))
        return rb_fail(b, "enable_lease_pairing needs the route's \"name\", as mcrouter's");
    if (pairing) {
        if ((f->pairs = calloc(1, sizeof(*f->pairs))) == NULL)
            return rb_nomem(b);
        pthread_mutex_init(&f->pairs->mu, NULL);
    }
    if (rb_get_bool(b, obj, "failover_tag", &f->tag) < 0)
        return -1;
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
    .keys = "children failover_errors failover_limit failover_tag failover_policy "
            "enable_lease_pairing",
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

/*
 * mcrouter's {"type": "SaltedFailoverRoute", "pool": NAME | pool, "hash",
 * "shadows", and FailoverRoute's options}: a FailoverRoute over the
 * pool's PoolRoute (with that hash and those shadows) and then each of
 * the pool's servers, for a failover_policy to pick among.
 */
static int build_salted(struct rb *b, const struct route_type *t, json_t *obj,
                        struct route **out) {
    (void)t;
    json_t *pool = rb_need(b, obj, "pool");
    if (pool == NULL)
        return -1;
    json_t *name = json_is_object(pool) ? json_object_get(pool, "name") : pool;
    if (!json_is_string(name)) {
        rb_path_key(b, "pool");
        return rb_fail(b, json_is_object(pool) ? "an inline pool needs a \"name\""
                                               : "expected a pool's name or a pool object");
    }
    json_t *normal = json_pack("{s:s, s:O}", "type", "PoolRoute", "pool", pool);
    int rc = normal ? 0 : rb_nomem(b);
    static const char *const shared[] = {"hash", "shadows"};
    for (size_t i = 0; rc == 0 && i < sizeof(shared) / sizeof(shared[0]); i++)
        if (json_object_get(obj, shared[i]) &&
            json_object_set(normal, shared[i], json_object_get(obj, shared[i])) < 0)
            rc = rb_nomem(b);
    struct route_list l = {0};
    struct route *first = NULL;
    if (rc == 0)
        rc = rb_build_one(b, normal, &first);
    if (rc == 0)
        rc = rb_push(b, &l, first);
    int p = rc == 0 ? rb_find_pool(b, json_string_value(name)) : -1;   /* then "Pool|P" */
    if (rc == 0)
        rc = p < 0 ? -1 : rb_pool_routes(b, (unsigned)p, &l);
    if (rc == 0 && (*out = route_failover(b->cfg->routes, l.v, l.n, -1)) == NULL)
        rc = rb_nomem(b);
    if (rc == 0)
        rc = failover_options(b, obj, (struct failover *)*out);
    free(l.v);
    json_decref(normal);
    return rc;
}

const struct route_type route_type_salted_failover = {
    .type = "SaltedFailoverRoute",
    .keys = "pool hash shadows failover_errors failover_limit failover_tag failover_policy "
            "enable_lease_pairing",
    .route_keys = "",
    .map_keys = "",
    .pool_keys = "pool",
    .build = build_salted,
};

/*
 * {"type": "MissFailoverRoute", "children": route, "return_best_on_error": BOOL}.  Over no
 * children it is a NullRoute (as mcrouter builds it), which has no such option to set.
 */
static int build_miss_failover(struct rb *b, const struct route_type *t, json_t *obj,
                               struct route **out) {
    bool best;
    if (rb_get_bool(b, obj, "return_best_on_error", &best) < 0 || rb_build_over(b, t, obj, out) < 0)
        return -1;
    if (strcmp((*out)->ops->name, t->type) == 0)
        ((struct failover *)*out)->best_on_error = best;
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

/* mcrouter's HostIdRoute: the child this host reads, and no other (LatestRoute without failover). */
static struct route *host_id_over(struct route_set *rs, const struct route_type *t,
                                  struct route *const *v, unsigned n) {
    (void)t;
    return route_latest(rs, v, n, 0);
}

const struct route_type route_type_host_id = {
    .type = "HostIdRoute",
    .keys = "children",
    .route_keys = "children",
    .map_keys = "",
    .pool_keys = "",
    .build = rb_build_over,
    .over = host_id_over,
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
