/*
 * route_root.c -- RootRoute: mcrouter's routing prefixes, where the
 * paper's regions and clusters meet the route tree.
 *
 * A configuration's "routes" give each route one or more aliases, routing
 * prefixes of the form /region/cluster/; one of them is this host's own,
 * the default route (mcrouter's -R).  A key is read as mcrouter reads it:
 *
 *   /region/cluster/rest   the prefix picks the routes, rest is the key
 *                          they see (and the servers store)
 *   anything else          the whole key, to the default route
 *
 * and the prefix picks:
 *
 *   /r/c/      the route aliased so; else the route aliased /r/fallback/;
 *              else none
 *   /STAR/STAR/   every route, the default first
 *   /r/STAR/   every route of region r (the default first, if it is one)
 *   other stars   every route whose alias the pattern matches, a star
 *              matching within one part (never a '/'), the default first
 *
 * (STAR is '*', which a C comment cannot hold after a '/'.)
 *
 * One route gets the request as it is; several get it as AllInitialRoute
 * sends it (the first one's answer is the answer; the rest finish in the
 * background), each route once however many of its aliases matched, and
 * once for each route the key leads to behind a PrefixSelectorRoute (so a
 * regional pool shared by a region's clusters gets a broadcast once).  None:
 * "SERVER_ERROR RootRoute: No rh found", as mcrouter answers, or the
 * default route's answer with send_invalid_route_to_default.
 *
 * The key without its prefix is a child request's, so that the parent's
 * own (the client's, which the router echoes in VALUE lines) stays whole.
 * A raw meta command's base64 key ('b') is never read for a prefix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_int.h"
#include "protocol/mc_put.h"

#define TARGETS_ON_STACK 32

struct alias {
    char *prefix;               /* "/region/cluster/" */
    size_t len;
    struct route *to;
};

/* children: each distinct route once, the default's first. */
struct root {
    struct route r;
    struct alias *aliases;
    unsigned naliases;
    unsigned dflt;              /* the default route's alias */
    bool invalid_to_default;
};

static const struct root *root_of(const struct route *r) {
    return (const struct root *)r;
}

int route_prefix_norm(const char *in, char *out, size_t cap) {
    size_t n = strlen(in), len = 0;
    if (n == 0 || n + 3 > cap)
        return -1;
    if (in[0] != '/')
        out[len++] = '/';
    memcpy(out + len, in, n);
    len += n;
    if (out[len - 1] != '/')
        out[len++] = '/';
    out[len] = '\0';
    /* exactly "/region/cluster/", both parts non-empty */
    const char *mid = memchr(out + 1, '/', len - 1);
    if (mid == NULL || mid == out + 1 || mid + 1 >= out + len - 1 ||
        memchr(mid + 1, '/', (size_t)(out + len - 1 - (mid + 1))) != NULL)
        return -1;
    return (int)len;
}

/* The routing prefix of key (0 when it has none): "/a/b/" of "/a/b/rest". */
static size_t prefix_len(const char *key, size_t nkey) {
    if (nkey == 0 || key[0] != '/')
        return 0;
    const char *second = memchr(key + 1, '/', nkey - 1);
    if (second == NULL)
        return 0;
    const char *third = memchr(second + 1, '/', (size_t)(key + nkey - second - 1));
    return third ? (size_t)(third - key) + 1 : 0;
}

/*
 * Does pattern p match the alias a?  mcrouter's rule: a star matches
 * within one part, never a '/'; a star before a '/' runs to the next '/'.
 */
static bool glob(const char *p, const char *pend, const char *a, const char *aend) {
    while (p != pend) {
        if (a == aend)
            return false;
        if (*p != '*') {
            if (*p++ != *a++)
                return false;
            continue;
        }
        while (p != pend && *p == '*')
            p++;
        if (p == pend)
            return memchr(a, '/', (size_t)(aend - a)) == NULL;
        if (*p == '/') {
            a = memchr(a, '/', (size_t)(aend - a));
            if (a == NULL)
                return false;
            continue;
        }
        for (; a != aend && *a != '/'; a++)
            if (glob(p, pend, a, aend))
                return true;
        return false;
    }
    return a == aend;
}

/* Adds to to t[0..*n) unless it is there already. */
static void add_target(struct route **t, unsigned *n, struct route *to) {
    for (unsigned i = 0; i < *n; i++)
        if (t[i] == to)
            return;
    t[(*n)++] = to;
}

/* The exact alias p[0..n), or -1. */
static int find_alias(const struct root *rt, const char *p, size_t n) {
    for (unsigned i = 0; i < rt->naliases; i++)
        if (rt->aliases[i].len == n && memcmp(rt->aliases[i].prefix, p, n) == 0)
            return (int)i;
    return -1;
}

/*
 * The routes a key of prefix p[0..n) (n > 0) goes to, into t (room for
 * every distinct route), the default's first; returns how many.  See
 * distinct() for what the key then chooses.
 */
static unsigned targets(const struct root *rt, const char *p, size_t n, struct route **t) {
    unsigned nt = 0;
    const struct alias *d = &rt->aliases[rt->dflt];
    const char *star = memchr(p, '*', n);
    if (star == NULL) {
        int i = find_alias(rt, p, n);
        if (i < 0) {                /* /region/fallback/ */
            const char *mid = memchr(p + 1, '/', n - 1);
            char fb[256];
            size_t rl = (size_t)(mid - p) + 1;
            if (rl + sizeof("fallback/") <= sizeof(fb)) {
                memcpy(fb, p, rl);
                memcpy(fb + rl, "fallback/", sizeof("fallback/") - 1);
                i = find_alias(rt, fb, rl + sizeof("fallback/") - 1);
            }
        }
        if (i >= 0)
            t[nt++] = rt->aliases[i].to;
        return nt;
    }
    if (n == 5 && memcmp(p, "/*/*/", 5) == 0) {
        for (unsigned i = 0; i < rt->r.nchildren; i++)
            t[nt++] = rt->r.children[i];
        return nt;
    }
    if (glob(p, p + n, d->prefix, d->prefix + d->len))
        t[nt++] = d->to;
    for (unsigned i = 0; i < rt->naliases; i++) {
        const struct alias *a = &rt->aliases[i];
        if (glob(p, p + n, a->prefix, a->prefix + a->len))
            add_target(t, &nt, a->to);
    }
    return nt;
}

/* Where t goes for key: the route a selector picks (NULL: none), else t itself. */
static const struct route *resolve(const struct route *t, const char *key, size_t nkey) {
    return t->ops->select ? t->ops->select(t, key, nkey) : t;
}

/*
 * Keeps in t[0..n) the routes that take key (a selector may choose none)
 * and, of those that lead to the same route for it, the first only: a
 * broadcast reaches each route once, as mcrouter's does, even where the
 * aliases' routes share a named handle behind their selectors.
 */
static unsigned distinct(struct route **t, unsigned n, const char *key, size_t nkey) {
    unsigned kept = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct route *to = resolve(t[i], key, nkey);
        bool seen = to == NULL;
        for (unsigned j = 0; !seen && j < kept; j++)
            seen = resolve(t[j], key, nkey) == to;
        if (!seen)
            t[kept++] = t[i];
    }
    return kept;
}

/* The routes a key with the prefix key[0..n) (n > 0) reaches, in t. */
struct reach {
    struct route *stack[TARGETS_ON_STACK];
    struct route **t;           /* stack, or malloc'd past TARGETS_ON_STACK routes */
    unsigned n;
};

/*
 * targets(), then the default when none and the root says so, then each
 * route the key leads to once (distinct()).  false when out of memory;
 * reach_end() in any case.
 */
static bool reach(const struct root *rt, const char *key, size_t nkey, size_t n,
                  struct reach *out) {
    out->t = out->stack;
    out->n = 0;
    if (rt->r.nchildren > TARGETS_ON_STACK &&
        (out->t = malloc(rt->r.nchildren * sizeof(*out->t))) == NULL) {
        out->t = out->stack;
        return false;
    }
    unsigned nt = targets(rt, key, n, out->t);
    if (nt == 0 && rt->invalid_to_default)
        out->t[nt++] = rt->aliases[rt->dflt].to;
    out->n = distinct(out->t, nt, key + n, nkey - n);
    return true;
}

static void reach_end(struct reach *out) {
    if (out->t != out->stack)
        free(out->t);
}

/* A request with the prefix taken off its key, answering its parent. */
struct strip {
    struct cl_req q;            /* first, so done() finds the strip */
    struct cl_req *parent;
    struct cellar *h;           /* whose block it is */
};

_Static_assert(sizeof(struct strip) <= CL_BLOCK, "a strip fits a handle's block");

static void strip_done(struct cl_req *q, int status, const struct msg_reply *rep) {
    struct strip *s = (struct strip *)q;
    struct cl_req *parent = s->parent;
    cl_block_put(s->h, s);
    parent->done(parent, status, rep);
}

/* mcrouter's answer when no route has the prefix; cellar_last_error() says it too. */
static void no_route(struct cellar *h, struct cl_req *q) {
    static const char why[] = "RootRoute: No rh found";
    cl_answer_error(h, q, CELLAR_ESERVER, why, sizeof(why) - 1);
}

/* Does a raw meta command carry its key in base64 (a 'b' flag)?  Its '/'s are no prefix. */
static bool base64_key(const struct msg *m) {
    const char *p = m->meta_flags.p, *end = p + m->meta_flags.len;
    while (m->op == MSG_META && p < end) {
        while (p < end && *p == ' ')
            p++;
        if (p < end && *p == 'b' && (p + 1 == end || p[1] == ' '))
            return true;
        while (p < end && *p != ' ')
            p++;
    }
    return false;
}

static void root_dispatch(const struct route *r, struct cellar *h, struct cl_req *q) {
    const struct root *rt = root_of(r);
    struct route *dflt = rt->aliases[rt->dflt].to;
    size_t n = msg_op_keyed(q->m.op) && !base64_key(&q->m)
                   ? prefix_len(q->m.key.p, q->m.key.len) : 0;
    if (n == 0) {
        route_dispatch(dflt, h, q);
        return;
    }
    if (n == q->m.key.len) {            /* a prefix and no key */
        q->done(q, CELLAR_EINVAL, NULL);
        return;
    }
    struct reach to;
    if (!reach(rt, q->m.key.p, q->m.key.len, n, &to)) {
        q->done(q, CELLAR_ENOMEM, NULL);
        return;
    }
    struct strip *s = to.n ? cl_block_get(h) : NULL;
    if (to.n == 0) {
        no_route(h, q);
    } else if (s == NULL) {
        q->done(q, CELLAR_ENOMEM, NULL);
    } else {
        *s = (struct strip){.q = {.m = q->m, .done = strip_done}, .parent = q, .h = h};
        s->q.m.key.p += n;
        s->q.m.key.len -= n;
        s->q.m.prefix_len = (uint16_t)(q->m.prefix_len + n);
        if (to.n == 1)
            route_dispatch(to.t[0], h, &s->q);
        else
            cl_all_dispatch(h, &s->q, to.t, to.n, ROUTE_ALL_INITIAL);
    }
    reach_end(&to);
}

/* Where a get goes first: the first target's server for the key without its prefix. */
static int root_server_of(const struct route *r, const struct cellar_config *cfg,
                          const char *key, size_t nkey) {
    const struct root *rt = root_of(r);
    struct route *dflt = rt->aliases[rt->dflt].to;
    size_t n = prefix_len(key, nkey);
    if (n == 0)
        return route_server_of(dflt, cfg, key, nkey);
    struct reach to;
    bool ok = reach(rt, key, nkey, n, &to);
    const struct route *first = ok && to.n ? to.t[0] : NULL;
    reach_end(&to);
    return route_server_of(first, cfg, key + n, nkey - n);
}

/* The routes the key's prefix reaches, each as the key without it. */
static void root_traverse(const struct route *r, const struct cellar_config *cfg,
                          enum msg_op op, const char *key, size_t nkey, struct route_walk *w,
                          unsigned depth) {
    const struct root *rt = root_of(r);
    struct route *dflt = rt->aliases[rt->dflt].to;
    size_t n = prefix_len(key, nkey);
    if (n == 0) {
        route_traverse(dflt, cfg, op, key, nkey, w, depth);
        return;
    }
    struct reach to;
    if (reach(rt, key, nkey, n, &to))
        for (unsigned i = 0; i < to.n; i++)
            route_traverse(to.t[i], cfg, op, key + n, nkey - n, w, depth);
    reach_end(&to);
}

static void root_label(const struct route *r, const struct cellar_config *cfg,
                       struct mc_put *w) {
    (void)cfg;
    const struct alias *d = &root_of(r)->aliases[root_of(r)->dflt];
    MC_PUT_LIT(w, "(default=");
    mc_put(w, d->prefix, d->len);
    if (root_of(r)->invalid_to_default)
        MC_PUT_LIT(w, ",send_invalid_route_to_default");
    MC_PUT_LIT(w, ")");
}

/* {alias:route,...} in the configuration's order */
static void root_children(const struct route *r, const struct cellar_config *cfg,
                          struct mc_put *w,
                          void (*describe)(struct mc_put *, const struct route *,
                                           const struct cellar_config *)) {
    const struct root *rt = root_of(r);
    MC_PUT_LIT(w, "{");
    for (unsigned i = 0; i < rt->naliases; i++) {
        if (i)
            MC_PUT_LIT(w, ",");
        mc_put(w, rt->aliases[i].prefix, rt->aliases[i].len);
        MC_PUT_LIT(w, ":");
        describe(w, rt->aliases[i].to, cfg);
    }
    MC_PUT_LIT(w, "}");
}

static void root_release(struct route *r) {
    struct root *rt = (struct root *)r;
    for (unsigned i = 0; rt->aliases && i < rt->naliases; i++)
        free(rt->aliases[i].prefix);
    free(rt->aliases);
}

static const struct route_ops root_ops = {
    .name = "RootRoute",
    .dispatch = root_dispatch,
    .server_of = root_server_of,
    .traverse = root_traverse,
    .label = root_label,
    .children = root_children,
    .release = root_release,
};

struct route *route_root(struct route_set *rs, const char *const *aliases,
                         struct route *const *routes, unsigned n, unsigned dflt,
                         bool invalid_to_default) {
    if (n == 0 || dflt >= n)
        return NULL;
    /* the distinct routes, the default's first */
    struct route **kids = malloc(n * sizeof(*kids));
    unsigned nk = 0;
    if (kids == NULL)
        return NULL;
    kids[nk++] = routes[dflt];
    for (unsigned i = 0; i < n; i++)
        add_target(kids, &nk, routes[i]);
    struct root *rt = (struct root *)route_make(rs, &root_ops, sizeof(*rt), kids, nk);
    free(kids);
    if (rt == NULL || (rt->aliases = calloc(n, sizeof(*rt->aliases))) == NULL)
        return NULL;                /* rt stays in the set and is freed with it */
    rt->naliases = n;
    rt->dflt = dflt;
    rt->invalid_to_default = invalid_to_default;
    for (unsigned i = 0; i < n; i++) {
        struct alias *a = &rt->aliases[i];
        if ((a->prefix = strdup(aliases[i])) == NULL)
            return NULL;
        a->len = strlen(a->prefix);
        a->to = routes[i];
    }
    return &rt->r;
}
