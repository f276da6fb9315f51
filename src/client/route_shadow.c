/*
 * route_shadow.c -- shadowing, as mcrouter's "shadows": a route whose
 * requests are also sent, in the background, to other routes (a new pool
 * being tried with real traffic), for some of the keys.  The client's
 * answer is the normal route's; a shadow's answer is dropped.
 *
 * A shadow is {"target": route, "index_range": [first, end) of the pool's
 * servers it shadows, "key_fraction_range": [a, b] of the keys (by their
 * SpookyHash V2, seed 0, up to a "|#|", scaled to [0, 1]),
 * "requests_fraction": of those, at random (1), "keys_to_shadow": [keys]
 * (instead of the ranges: these keys, on every server)}.  A PoolRoute's
 * "shadows" wrap each of its servers in the index range
 * (rb_build_shadows).  mcrouter's runtime variables: "index_range_rv" and
 * "key_fraction_range_rv" name one of cellar_routing.runtime_vars_file's, whose
 * value, when it is there, is the range used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "client/route_build.h"
#include "core/hash.h"
#include "protocol/mc_put.h"

struct shadow {
    uint32_t key_lo, key_hi;    /* SpookyHash range shadowed, both included */
    uint32_t sample;            /* requests_fraction * 2^32 - 1 (UINT32_MAX: all) */
    unsigned first, end;        /* servers [first, end) of a pool */
    char **keys;                /* keys_to_shadow (NULL: by the ranges) */
    unsigned nkeys;
};

struct shadow_route {
    struct route r;             /* children: normal, then each shadow's target */
    struct shadow s[];          /* one per target */
};

static const struct shadow_route *sr(const struct route *r) {
    return (const struct shadow_route *)r;
}

/* A shadow's copy of a request (cl_req_copy()), freed when answered; its answer dropped. */
static void copy_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    (void)status, (void)rep;
    free(q);
}

static void send_copy(struct cellar *h, const struct route *target, const struct msg *m) {
    struct cl_req *c = cl_req_copy(m, sizeof(struct cl_req));
    if (c == NULL)
        return;                 /* a shadow's request may be lost; the client's is not */
    c->done = copy_done;
    route_dispatch(target, h, c);
}

static bool shadows(const struct shadow *s, const struct cellar_config *cfg, const char *key,
                    size_t nkey) {
    size_t n = cl_hash_key(cfg, key, nkey);
    if (s->keys) {
        for (unsigned i = 0; i < s->nkeys; i++)
            if (strlen(s->keys[i]) == n && memcmp(s->keys[i], key, n) == 0)
                return true;
        return false;
    }
    uint32_t h = hash_spooky32(key, n, 0);
    if (h < s->key_lo || h > s->key_hi)
        return false;
    return s->sample == UINT32_MAX || cl_random32() < s->sample;
}

static void shadow_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    if (msg_op_keyed(q->m.op))
        for (unsigned i = 1; i < r->nchildren; i++)
            if (shadows(&sr(r)->s[i - 1], h->cfg, q->m.key.p, q->m.key.len))
                send_copy(h, r->children[i], &q->m);
    route_dispatch(r->children[0], h, q);
}

static void free_settings_in(struct shadow *s, unsigned n);

static void shadow_release(struct route *r) {
    free_settings_in(((struct shadow_route *)r)->s, r->nchildren - 1);
}

static const struct route_ops shadow_ops = {
    .name = "ShadowRoute",
    .dispatch = shadow_dispatch,
    .server_of = route_server_of_first,
    .release = shadow_release,
};

/*
 * obj[key], or the runtime variable obj[rvkey] names when the caller's
 * runtime variables have it (mcrouter's --runtime-vars-file): its value
 * wins over the one written.
 */
static json_t *runtime(struct rb *b, json_t *obj, const char *key, const char *rvkey) {
    json_t *name = json_object_get(obj, rvkey);
    json_t *var = b->vars && json_is_string(name) ? json_object_get(b->vars, json_string_value(name))
                                                   : NULL;
    return var ? var : json_object_get(obj, key);
}

/* One shadow's settings from obj (its target built into *target). */
static int parse_shadow(struct rb *b, json_t *obj, struct shadow *s, struct route **target) {
    *s = (struct shadow){.sample = UINT32_MAX};
    if (!json_is_object(obj))
        return rb_fail(b, "a shadow is an object, not %s", rb_type_name(obj));
    if (rb_check_keys(b, obj, "target index_range index_range_rv key_fraction_range "
                              "key_fraction_range_rv requests_fraction keys_to_shadow",
                      "a shadow") < 0 ||
        rb_build_key(b, obj, "target", true, target) < 0)
        return -1;
    json_t *v;
    const char *rv[2] = {"index_range_rv", "key_fraction_range_rv"};
    for (int i = 0; i < 2; i++) {
        if ((v = json_object_get(obj, rv[i])) != NULL && !json_is_string(v)) {
            rb_path_key(b, rv[i]);
            return rb_fail(b, "expected a runtime variable's name");
        }
    }
    if ((v = runtime(b, obj, "index_range", "index_range_rv")) != NULL) {
        size_t mark = rb_path_key(b, "index_range");
        json_t *a = json_array_get(v, 0), *z = json_array_get(v, 1);
        if (json_array_size(v) != 2 || !json_is_integer(a) || !json_is_integer(z) ||
            json_integer_value(a) < 0 || json_integer_value(a) > json_integer_value(z) ||
            json_integer_value(z) > UINT32_MAX)
            return rb_fail(b, "expected [first, end], 0 <= first <= end");
        s->first = (unsigned)json_integer_value(a);
        s->end = (unsigned)json_integer_value(z);
        rb_path_set(b, mark);
    }
    if ((v = runtime(b, obj, "key_fraction_range", "key_fraction_range_rv")) != NULL) {
        size_t mark = rb_path_key(b, "key_fraction_range");
        json_t *a = json_array_get(v, 0), *z = json_array_get(v, 1);
        double lo = json_number_value(a), hi = json_number_value(z);
        if (json_array_size(v) != 2 || !json_is_number(a) || !json_is_number(z) || lo < 0 ||
            lo > hi || hi > 1)
            return rb_fail(b, "expected [a, b], 0 <= a <= b <= 1");
        s->key_lo = (uint32_t)(uint64_t)(lo * 4294967295.0);
        s->key_hi = (uint32_t)(uint64_t)(hi * 4294967295.0);
        rb_path_set(b, mark);
    }
    if ((v = json_object_get(obj, "requests_fraction")) != NULL) {
        size_t mark = rb_path_key(b, "requests_fraction");
        if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
            return rb_fail(b, "expected a number in [0, 1]");
        double f = json_number_value(v);
        s->sample = f >= 1 ? UINT32_MAX : (uint32_t)(f * 4294967295.0);
        rb_path_set(b, mark);
    }
    if ((v = json_object_get(obj, "keys_to_shadow")) != NULL) {
        size_t mark = rb_path_key(b, "keys_to_shadow");
        if (!json_is_array(v))
            return rb_fail(b, "expected a list of keys");
        if (json_array_size(v) && (json_object_get(obj, "index_range") ||
                                   json_object_get(obj, "key_fraction_range") ||
                                   json_object_get(obj, "key_fraction_range_rv")))
            return rb_fail(b, "keys_to_shadow cannot be mixed with index_range or "
                              "key_fraction_range, as mcrouter says");
        size_t n = json_array_size(v);
        s->keys = calloc(n ? n : 1, sizeof(*s->keys));
        if (s->keys == NULL)
            return rb_nomem(b);
        for (size_t i = 0; i < n; i++) {
            json_t *k = json_array_get(v, i);
            if (!json_is_string(k)) {
                rb_path_index(b, i);
                return rb_fail(b, "expected a key, not %s", rb_type_name(k));
            }
            if ((s->keys[s->nkeys] = strdup(json_string_value(k))) == NULL)
                return rb_nomem(b);
            s->nkeys++;
        }
        rb_path_set(b, mark);
    }
    return 0;
}

/* Frees the keys of s[0..n), not s. */
static void free_settings_in(struct shadow *s, unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        for (unsigned k = 0; k < s[i].nkeys; k++)
            free(s[i].keys[k]);
        free(s[i].keys);
    }
}

/* A copy of src's keys into dst (dst->keys NULL when src has none); false: out of memory. */
static bool copy_keys(struct shadow *dst, const struct shadow *src) {
    *dst = *src;
    dst->keys = NULL;
    dst->nkeys = 0;
    if (src->keys == NULL)
        return true;
    dst->keys = calloc(src->nkeys ? src->nkeys : 1, sizeof(char *));
    for (unsigned j = 0; dst->keys && j < src->nkeys; j++) {
        if ((dst->keys[j] = strdup(src->keys[j])) == NULL)
            return false;
        dst->nkeys++;
    }
    return dst->keys != NULL;
}

/* normal with the shadows of set[] that apply (use[]): a ShadowRoute owning copies. */
static struct route *wrap(struct rb *b, struct route *normal, const struct shadow *set,
                          struct route **targets, const bool *use, unsigned n) {
    struct route *kids[1 + 64];
    struct shadow mine[64];
    unsigned k = 0;
    kids[0] = normal;
    for (unsigned i = 0; i < n; i++) {
        if (!use[i])
            continue;
        bool ok = copy_keys(&mine[k], &set[i]);
        kids[++k] = targets[i];
        if (!ok) {
            free_settings_in(mine, k);
            rb_nomem(b);
            return NULL;
        }
    }
    if (k == 0)
        return normal;
    struct route *r = route_make(b->cfg->routes, &shadow_ops,
                                 sizeof(struct shadow_route) + k * sizeof(struct shadow), kids,
                                 k + 1);
    if (r == NULL) {
        free_settings_in(mine, k);
        rb_nomem(b);
        return NULL;
    }
    memcpy(((struct shadow_route *)r)->s, mine, k * sizeof(struct shadow));
    return r;
}

int rb_build_shadows(struct rb *b, json_t *list, struct route **kids, unsigned n) {
    size_t mark = rb_path_key(b, "shadows");
    if (!json_is_array(list))
        return rb_fail(b, "expected a list of shadows, not %s", rb_type_name(list));
    unsigned ns = (unsigned)json_array_size(list);
    if (ns > 64)
        return rb_fail(b, "more than 64 shadows");
    struct shadow *set = calloc(ns ? ns : 1, sizeof(*set));
    struct route **targets = calloc(ns ? ns : 1, sizeof(*targets));
    bool use[64];
    int rc = set && targets ? 0 : rb_nomem(b);
    unsigned parsed = 0;
    for (unsigned i = 0; rc == 0 && i < ns; i++) {
        size_t m = rb_path_index(b, i);
        rc = parse_shadow(b, json_array_get(list, i), &set[i], &targets[i]);
        parsed = i + 1;
        if (rc < 0 && !b->nomem) {
            /* mcrouter logs a broken shadow and goes on without it */
            char why[RB_PATH_LEN + 600];
            snprintf(why, sizeof(why), "%s (this shadow is passed over, as mcrouter does)",
                     b->err);
            if (b->routing->warn)
                b->routing->warn(b->routing->warn_arg, why);
            free_settings_in(&set[i], 1);
            set[i] = (struct shadow){0};
            rc = 0;
        }
        rb_path_set(b, m);
    }
    for (unsigned c = 0; rc == 0 && c < n; c++) {
        for (unsigned i = 0; i < ns; i++)
            use[i] = set[i].keys != NULL || (set[i].first <= c && c < set[i].end);
        struct route *w = wrap(b, kids[c], set, targets, use, ns);
        if (w == NULL)
            rc = -1;
        else
            kids[c] = w;
    }
    if (set)
        free_settings_in(set, parsed);
    free(set);
    free(targets);
    if (rc == 0)
        rb_path_set(b, mark);
    return rc;
}

/*
 * {"type": "ShadowRoute", "children": routes, "shadows": [...]}: each child,
 * those in a shadow's index range wrapped; as many routes as children
 * (where one route is expected, the children must be one).
 */
static int build_shadow_many(struct rb *b, const struct route_type *t, json_t *obj,
                             struct route_list *out) {
    (void)t;
    struct route_list l = {0};
    int rc = rb_build_key_list(b, obj, "children", &l);
    if (rc == 0 && json_object_get(obj, "shadows"))
        rc = rb_build_shadows(b, json_object_get(obj, "shadows"), l.v, l.n);
    for (unsigned i = 0; rc == 0 && i < l.n; i++)
        rc = rb_push(b, out, l.v[i]);
    free(l.v);
    return rc;
}

static int build_shadow(struct rb *b, const struct route_type *t, json_t *obj,
                        struct route **out) {
    struct route_list l = {0};
    int rc = build_shadow_many(b, t, obj, &l);
    if (rc == 0 && l.n != 1)
        rc = rb_fail(b, "ShadowRoute over %u children where one route is expected", l.n);
    if (rc == 0)
        *out = l.v[0];
    free(l.v);
    return rc;
}

const struct route_type route_type_shadow = {
    .type = "ShadowRoute",
    .keys = "children shadows",
    .route_keys = "children",
    .map_keys = "",
    .pool_keys = "",
    .build = build_shadow,
    .build_many = build_shadow_many,
};
