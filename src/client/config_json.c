/*
 * config_json.c -- mcrouter's JSON configuration: pools, named handles and
 * the route tree, parsed into a struct cellar_config.
 *
 *   text --strip comments and trailing commas (line/column kept)--> JSON
 *        --json_loads (jansson)--> tree
 *        --pools--> cl_config_add_pool() for each pool
 *        --scan--> every named handle and inline pool, wherever it is
 *        --build--> route_*() constructors, the root into cfg->root
 *
 * The grammar accepted (mcrouter's, less what the library cannot do):
 *
 *   config   := { "pools": { NAME: pool, ... },            optional
 *                 "named_handles": [ route-object-with-name, ... ]
 *                                | { NAME: route-object, ... },
 *                 "route": route  |  "routes": [ { "aliases": [STRING...],
 *                                                  "route": route }, ... ] }
 *   pool     := { "servers": [ "host:port" | "[v6]:port" | "/path" ... ],
 *                 "weights": [ INT >= 1, ... ],            ketama pools only
 *                 "protocol": "ascii" | "text" | "meta" | "binary",
 *                 "hash": "ch3" | "ketama" | "modula" | "rendezvous",
 *                 "server_timeout", "connect_timeout", "tko_timeouts",
 *                 "probe_min_ms", "probe_max_ms": INT >= 1,
 *                 "udp": BOOL (ours: gets over UDP),
 *                 "spool": [ OP, ... ] (ours: the ops a handle's spool keeps
 *                                       when they fail; ["delete"]) }
 *   route    := STRING | object | [ route, ... ]  (a list where one route is
 *                                                  expected must hold one)
 *   STRING   := a named handle's name
 *             | "Pool|P"                  P's servers, one route each
 *             | "PoolRoute|P" | "NullRoute"
 *             | "KIND|" STRING            KIND over that STRING's routes, for
 *                                          FailoverRoute, MissFailoverRoute,
 *                                          AllSyncRoute, AllAsyncRoute,
 *                                          AllInitialRoute, LatestRoute
 *   object   := { "type": KIND, "name": NAME (optional: a named handle), ... }
 *     PoolRoute                 "pool": NAME | pool with "name"
 *     FailoverRoute, MissFailoverRoute, AllSyncRoute, AllAsyncRoute,
 *     AllInitialRoute           "children": route
 *     LatestRoute               "children": route, "failover_count": INT (5)
 *     FailoverWithExptimeRoute  "normal": route, "failover": route (optional),
 *                               "failover_exptime": INT (60)
 *     OperationSelectorRoute    "operation_policies": { OP: route, ... },
 *     (or PrefixPolicyRoute)    "default_policy": route     (both optional)
 *     PrefixSelectorRoute       "policies": { PREFIX: route, ... },
 *                               "wildcard": route            (both optional)
 *     WarmUpRoute               "cold": route, "warm": route, "exptime": INT (0),
 *                               "delete_hold": seconds (0; ours: cellard's hold-off)
 *     NullRoute
 *
 * Comments (// and / * * /) and trailing commas are allowed, as mcrouter's
 * folly JSON allows them.  Any other key is refused rather than ignored:
 * mcrouter's keys this library does not implement (shadows, hash on a
 * PoolRoute, failover_errors, keep_routing_prefix, ...) would change what
 * a configuration means, so a configuration that uses them must not
 * quietly load.  Macros are refused for the same reason.
 *
 * Named handles are resolved lazily, as mcrouter's RouteHandleFactory
 * does: a name may be used before or after its definition (a scan over
 * the whole configuration finds every definition first), each is built
 * once and then shared, and a name used inside its own definition is an
 * error.  Every error names its place: line and column for JSON syntax, a
 * JSON path (route.policies."a:".children[1]) for everything else.
 */
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/config_int.h"

#define PATH_LEN 512            /* longer paths are cut short in messages */
#define DEPTH_MAX 100           /* routes nested deeper than this are refused */
#define MSG_LEN 512
#define TIMEOUT_MAX_MS 86400000 /* a day: any setting in ms above it is a mistake */
#define DEFAULT_PORT 11211      /* config.c's, for entries given a weight */

/* A named handle: where it is defined, and its route once built. */
struct named {
    const char *name;           /* points into the JSON tree */
    json_t *def;
    char *path;
    struct route *built;
    bool building;
};

/* The parser's state; path names the value being looked at. */
struct jp {
    struct cellar_config *cfg;
    const struct cellar_options *opt;
    char *err;
    size_t errlen;
    char path[PATH_LEN];
    size_t plen;
    struct named *named;
    unsigned nnamed, capnamed;
    unsigned depth;
};

/* A growing list of routes; the constructors copy it. */
struct rlist {
    struct route **v;
    unsigned n, cap;
};

/* ---------------------------------------------------------------------- */
/* Comments and trailing commas                                             */
/* ---------------------------------------------------------------------- */

/*
 * Past blanks and comments from p (an unterminated block comment runs to
 * the end).  Used to look ahead from a comma.
 */
static const char *skip_blank(const char *p) {
    for (;;) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            p++;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            p = end ? end + 2 : p + strlen(p);
        } else {
            return p;
        }
    }
}

/* A UTF-8 continuation byte: jansson counts a character as one column. */
static bool utf8_cont(char c) {
    return ((unsigned char)c & 0xC0) == 0x80;
}

/*
 * Copies in to out (as long as in, plus one) with comments blanked and
 * trailing commas dropped.  Each comment character becomes one space and
 * its newlines stay, so jansson's line and column still point into the
 * text as written.  A comma followed only by blanks and comments up to a
 * closing ] or } is a trailing comma, unless it follows [ { or another
 * comma (then jansson reports it).  -1 with *line, *col set for an
 * unterminated block comment.
 */
static int strip(const char *in, char *out, int *line, int *col) {
    enum { CODE, STR, LINE_COMMENT, BLOCK_COMMENT } st = CODE;
    int ln = 1, cl = 0, start_ln = 0, start_cl = 0;
    char last = 0;              /* the last significant character in code */
    bool escaped = false;       /* in a string, after a backslash */
    for (const char *p = in; *p; p++) {
        char c = *p;
        if (c == '\n') {
            ln++;
            cl = 0;
        } else if (!utf8_cont(c)) {
            cl++;
        }
        switch (st) {
        case STR:
            *out++ = c;
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                st = CODE;
            continue;
        case LINE_COMMENT:
            if (c == '\n') {
                st = CODE;
                *out++ = c;
            } else if (!utf8_cont(c)) {
                *out++ = ' ';
            }
            continue;
        case BLOCK_COMMENT:
            if (c == '*' && p[1] == '/') {
                *out++ = ' ';
                *out++ = ' ';
                p++;
                cl++;
                st = CODE;
            } else if (c == '\n') {
                *out++ = c;
            } else if (!utf8_cont(c)) {
                *out++ = ' ';
            }
            continue;
        case CODE:
            break;
        }
        if (c == '/' && (p[1] == '/' || p[1] == '*')) {
            st = p[1] == '/' ? LINE_COMMENT : BLOCK_COMMENT;
            start_ln = ln;
            start_cl = cl;
            *out++ = ' ';
            *out++ = ' ';
            p++;
            cl++;
            continue;
        }
        if (c == ',' && last != '[' && last != '{' && last != ',') {
            const char *q = skip_blank(p + 1);
            if (*q == ']' || *q == '}')
                c = ' ';
        }
        if (c == '"')
            st = STR;
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            last = c;
        *out++ = c;
    }
    *out = '\0';
    if (st == BLOCK_COMMENT) {
        *line = start_ln;
        *col = start_cl;
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Paths and errors                                                         */
/* ---------------------------------------------------------------------- */

/* Is key written bare in a path (letters, digits, _ and -)? */
static bool bare_key(const char *key) {
    if (*key == '\0')
        return false;
    for (const char *p = key; *p; p++)
        if (!(*p == '_' || *p == '-' || (*p >= '0' && *p <= '9') ||
              ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')))
            return false;
    return true;
}

static void path_put(struct jp *jp, const char *fmt, ...) {
    if (jp->plen >= sizeof(jp->path) - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(jp->path + jp->plen, sizeof(jp->path) - jp->plen, fmt, ap);
    va_end(ap);
    jp->plen = strlen(jp->path);
}

/* Appends .key (quoted unless bare) to the path; returns the mark to restore. */
static size_t path_key(struct jp *jp, const char *key) {
    size_t mark = jp->plen;
    if (jp->plen)
        path_put(jp, ".");
    if (bare_key(key)) {
        path_put(jp, "%s", key);
        return mark;
    }
    path_put(jp, "\"");
    for (const char *p = key; *p; p++)
        path_put(jp, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
    path_put(jp, "\"");
    return mark;
}

static size_t path_index(struct jp *jp, size_t i) {
    size_t mark = jp->plen;
    path_put(jp, "[%zu]", i);
    return mark;
}

static void path_set(struct jp *jp, size_t mark) {
    jp->plen = mark;
    jp->path[mark] = '\0';
}

/* Writes "path: why" into err; returns -1. */
__attribute__((format(printf, 2, 3))) static int fail(struct jp *jp, const char *fmt, ...) {
    char msg[MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (jp->errlen == 0)
        return -1;
    if (jp->plen)
        snprintf(jp->err, jp->errlen, "%s: %s", jp->path, msg);
    else
        snprintf(jp->err, jp->errlen, "%s", msg);
    return -1;
}

static int nomem(struct jp *jp) {
    return fail(jp, "out of memory");
}

static const char *type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Is word one of the space-separated words of list? */
static bool has_word(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ' ');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, word, n) == 0)
            return true;
        p += len + (e != NULL);
    }
    return false;
}

/* Refuses a key of obj outside allowed (space-separated); what names the object. */
static int check_keys(struct jp *jp, json_t *obj, const char *allowed, const char *what) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (!has_word(allowed, key))
            return fail(jp, "unknown key \"%s\" (%s takes: %s)", key, what, allowed);
    }
    return 0;
}

/*
 * obj[key] as an integer in [lo, hi] into *out; dflt when absent.  An
 * error names obj.key.
 */
static int get_int(struct jp *jp, json_t *obj, const char *key, long long lo, long long hi,
                   long long dflt, long long *out) {
    json_t *v = json_object_get(obj, key);
    *out = dflt;
    if (v == NULL)
        return 0;
    size_t mark = path_key(jp, key);
    if (!json_is_integer(v))
        return fail(jp, "expected an integer, not %s", type_name(v));
    long long n = json_integer_value(v);
    if (n < lo || n > hi)
        return fail(jp, "%lld is out of range (%lld..%lld)", n, lo, hi);
    *out = n;
    path_set(jp, mark);
    return 0;
}

/* obj[key], which must be there; NULL with the error said. */
static json_t *need(struct jp *jp, json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        fail(jp, "missing \"%s\"", key);
    return v;
}

static int op_by_name(const char *name);

/* ---------------------------------------------------------------------- */
/* Pools                                                                    */
/* ---------------------------------------------------------------------- */

#define POOL_KEYS                                                                    \
    "servers weights protocol server_timeout hash connect_timeout tko_timeouts "     \
    "probe_min_ms probe_max_ms udp spool"

/* The per-pool settings that override opt's: protocol, hash and the ms. */
static int pool_options(struct jp *jp, json_t *obj, struct cellar_options *po) {
    json_t *v;
    if ((v = json_object_get(obj, "protocol")) != NULL) {
        size_t mark = path_key(jp, "protocol");
        if (!json_is_string(v) || msg_wire_find(json_string_value(v)) == NULL)
            return fail(jp, "expected \"ascii\", \"text\", \"meta\" or \"binary\"");
        po->protocol = json_string_value(v);
        path_set(jp, mark);
    }
    if ((v = json_object_get(obj, "hash")) != NULL) {
        size_t mark = path_key(jp, "hash");
        bool known = false;
        for (unsigned i = 0; json_is_string(v) && ring_kind_at(i); i++)
            known |= strcmp(ring_kind_at(i), json_string_value(v)) == 0;
        if (!known)
            return fail(jp, "expected \"ch3\", \"ketama\", \"modula\" or \"rendezvous\"");
        po->hash = json_string_value(v);
        path_set(jp, mark);
    }
    if ((v = json_object_get(obj, "udp")) != NULL) {
        size_t mark = path_key(jp, "udp");
        if (!json_is_boolean(v))
            return fail(jp, "expected true or false");
        po->udp = json_is_true(v);
        path_set(jp, mark);
    }
    static const struct { const char *key; size_t off; } ints[] = {
        {"server_timeout", offsetof(struct cellar_options, server_timeout_ms)},
        {"connect_timeout", offsetof(struct cellar_options, connect_timeout_ms)},
        {"tko_timeouts", offsetof(struct cellar_options, tko_timeouts)},
        {"probe_min_ms", offsetof(struct cellar_options, probe_min_ms)},
        {"probe_max_ms", offsetof(struct cellar_options, probe_max_ms)},
    };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        int *field = (int *)((char *)po + ints[i].off);
        long long n;
        if (get_int(jp, obj, ints[i].key, 1, TIMEOUT_MAX_MS, *field, &n) < 0)
            return -1;
        *field = (int)n;
    }
    return 0;
}

/*
 * entry with a weight, as the server list writes it: "host:port:weight"
 * (the default port filled in when missing, since "host:w" would read w as
 * the port).  NULL with the error said when entry cannot take one.
 */
static char *weighted_entry(struct jp *jp, const char *entry, json_int_t w) {
    if (entry[0] == '/' || strncmp(entry, "unix:", 5) == 0) {
        fail(jp, "a unix socket takes no weight");
        return NULL;
    }
    const char *rest = entry;
    if (entry[0] == '[') {
        rest = strchr(entry, ']');
        rest = rest ? rest + 1 : entry + strlen(entry);
    }
    unsigned colons = 0;
    for (const char *p = rest; *p; p++)
        colons += *p == ':';
    if (colons == 2 || (colons > 2 && entry[0] == '[')) {
        fail(jp, "has a weight already: give it here or in \"weights\", not both");
        return NULL;
    }
    char *out = NULL;
    int rc;
    if (colons == 0)
        rc = asprintf(&out, "%s:%d:%lld", entry, DEFAULT_PORT, (long long)w);
    else if (colons == 1)
        rc = asprintf(&out, "%s:%lld", entry, (long long)w);
    else
        rc = asprintf(&out, "%s", entry);   /* unbracketed IPv6: add_pool says so */
    if (rc < 0) {
        nomem(jp);
        return NULL;
    }
    return out;
}

/*
 * Checks a pool's weights: only ketama reads them (another hash would
 * quietly ignore them), one whole number from 1 per server.
 */
static int check_weights(struct jp *jp, json_t *weights, size_t n, const char *hash) {
    path_key(jp, "weights");
    if (strcmp(hash, "ketama") != 0)
        return fail(jp, "only the ketama hash uses weights (this pool hashes with %s)", hash);
    if (json_array_size(weights) != n)
        return fail(jp, "%zu weights for %zu servers", json_array_size(weights), n);
    for (size_t i = 0; i < n; i++) {
        json_t *w = json_array_get(weights, i);
        size_t mark = path_index(jp, i);
        if (!json_is_integer(w) || json_integer_value(w) < 1 ||
            json_integer_value(w) > UINT32_MAX)
            return fail(jp, "a weight is a whole number from 1 (ketama's; mcrouter's "
                            "fractional WeightedCh3 weights are not supported)");
        path_set(jp, mark);
    }
    return 0;
}

/* The pool's server entries (weights, already checked, folded in) into entries[0..n). */
static int pool_entries(struct jp *jp, json_t *servers, json_t *weights, char **entries) {
    for (size_t i = 0; i < json_array_size(servers); i++) {
        json_t *s = json_array_get(servers, i);
        size_t mark = path_key(jp, "servers");
        path_index(jp, i);
        if (!json_is_string(s))
            return fail(jp, "expected a string, not %s", type_name(s));
        if (weights)
            entries[i] = weighted_entry(jp, json_string_value(s),
                                        json_integer_value(json_array_get(weights, i)));
        else if ((entries[i] = strdup(json_string_value(s))) == NULL)
            nomem(jp);
        if (entries[i] == NULL)
            return -1;
        path_set(jp, mark);
    }
    return 0;
}

/*
 * Says cl_config_add_pool()'s error msg at the pool's path, or at the
 * server entry it names ("server \"entry\": why" becomes
 * "pools.A.servers[i]: why in \"entry\"").
 */
static int pool_error(struct jp *jp, const char *msg, char **entries, size_t n) {
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(entries[i]);
        if (strncmp(msg, "server \"", 8) == 0 && strncmp(msg + 8, entries[i], len) == 0 &&
            strncmp(msg + 8 + len, "\": ", 3) == 0) {
            path_key(jp, "servers");
            path_index(jp, i);
            return fail(jp, "%s in \"%s\"", msg + 8 + len + 3, entries[i]);
        }
    }
    return fail(jp, "%s", msg);
}

/* The pool's "spool": a list of operation names, into a mask of 1 << op. */
static int spool_list(struct jp *jp, json_t *obj, uint32_t *ops) {
    json_t *v = json_object_get(obj, "spool"), *e;
    if (v == NULL)
        return 0;
    size_t mark = path_key(jp, "spool"), i;
    if (!json_is_array(v))
        return fail(jp, "expected a list of operations, not %s", type_name(v));
    *ops = 0;
    json_array_foreach(v, i, e) {
        int op = json_is_string(e) ? op_by_name(json_string_value(e)) : -1;
        if (op != MSG_SET && op != MSG_ADD && op != MSG_REPLACE && op != MSG_APPEND &&
            op != MSG_PREPEND && op != MSG_DELETE && op != MSG_INCR && op != MSG_DECR &&
            op != MSG_TOUCH) {
            path_index(jp, i);
            return fail(jp, "expected a write to spool (set add replace append prepend "
                            "delete incr decr touch)");
        }
        *ops |= 1u << op;
    }
    path_set(jp, mark);
    return 0;
}

/*
 * Adds pool name from obj (at the current path): servers, weights, and
 * settings over a copy of the caller's options.
 */
static int add_pool(struct jp *jp, const char *name, json_t *obj, bool inline_pool) {
    if (!json_is_object(obj))
        return fail(jp, "a pool is an object, not %s", type_name(obj));
    if (check_keys(jp, obj, inline_pool ? "name " POOL_KEYS : POOL_KEYS, "a pool") < 0)
        return -1;
    if (cl_config_find_pool(jp->cfg, name) >= 0)
        return fail(jp, "pool \"%s\" is defined twice", name);
    struct cellar_options po = *jp->opt;
    if (pool_options(jp, obj, &po) < 0)
        return -1;
    json_t *servers = need(jp, obj, "servers"), *weights = json_object_get(obj, "weights");
    if (servers == NULL)
        return -1;
    if (!json_is_array(servers) || json_array_size(servers) == 0) {
        path_key(jp, "servers");
        return fail(jp, "expected a list of servers, not %s",
                    json_is_array(servers) ? "an empty list" : type_name(servers));
    }
    if (weights && !json_is_array(weights)) {
        path_key(jp, "weights");
        return fail(jp, "expected a list of weights, not %s", type_name(weights));
    }
    size_t n = json_array_size(servers);
    char **entries = calloc(n, sizeof(*entries));
    if (entries == NULL)
        return nomem(jp);
    /* "ch3" is config.c's default hash. */
    size_t mark = jp->plen;
    int rc = weights ? check_weights(jp, weights, n, po.hash ? po.hash : "ch3") : 0;
    if (rc == 0) {
        path_set(jp, mark);
        rc = pool_entries(jp, servers, weights, entries);
    }
    uint32_t spool_ops = 1u << MSG_DELETE;
    if (rc == 0) {
        path_set(jp, mark);
        rc = spool_list(jp, obj, &spool_ops);
    }
    if (rc == 0) {
        char msg[MSG_LEN] = "";
        int i = cl_config_add_pool(jp->cfg, name, (const char *const *)entries, (unsigned)n,
                                   &po, msg, sizeof(msg));
        if (i < 0)
            rc = pool_error(jp, msg[0] ? msg : "out of memory", entries, n);
        else
            jp->cfg->pools[i].spool_ops = spool_ops;
    }
    for (size_t i = 0; i < n; i++)
        free(entries[i]);
    free(entries);
    return rc;
}

static int parse_pools(struct jp *jp, json_t *pools) {
    size_t mark = path_key(jp, "pools");
    if (!json_is_object(pools))
        return fail(jp, "expected an object of pools, not %s", type_name(pools));
    const char *name;
    json_t *v;
    json_object_foreach(pools, name, v) {
        size_t m = path_key(jp, name);
        if (add_pool(jp, name, v, false) < 0)
            return -1;
        path_set(jp, m);
    }
    path_set(jp, mark);
    return 0;
}

/* The index of pool name; -1 with the error said. */
static int find_pool(struct jp *jp, const char *name) {
    int i = cl_config_find_pool(jp->cfg, name);
    if (i < 0)
        fail(jp, "unknown pool \"%s\"", name);
    return i;
}

/* ---------------------------------------------------------------------- */
/* Route kinds                                                              */
/* ---------------------------------------------------------------------- */

struct kind;
typedef int (*build_fn)(struct jp *jp, const struct kind *k, json_t *obj, struct route **out);

/*
 * A route type as the JSON names it: the keys its object takes (besides
 * type and name), which of them hold routes (a route or a list) and which
 * hold objects of routes, for the scan; how to build it from an object;
 * and whether "TYPE|routes" builds it over a list.
 */
struct kind {
    const char *type;
    enum route_kind kind;
    const char *keys;
    const char *route_keys;
    const char *map_keys;
    build_fn build;
    bool list_form;
};

static int build_one(struct jp *jp, json_t *v, struct route **out);
static int build_list(struct jp *jp, json_t *v, struct rlist *l);
static int build_string(struct jp *jp, const char *s, struct rlist *l);

static int rlist_push(struct jp *jp, struct rlist *l, struct route *r) {
    if (r == NULL)
        return nomem(jp);
    if (l->n == l->cap) {
        unsigned cap = l->cap ? l->cap * 2 : 8;
        struct route **v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL)
            return nomem(jp);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = r;
    return 0;
}

/* obj[key] as a list of at least one route, appended to l. */
static int build_key_list(struct jp *jp, json_t *obj, const char *key, struct rlist *l) {
    json_t *v = need(jp, obj, key);
    if (v == NULL)
        return -1;
    size_t mark = path_key(jp, key);
    unsigned before = l->n;
    if (build_list(jp, v, l) < 0)
        return -1;
    if (l->n == before)
        return fail(jp, "no routes in the list");
    path_set(jp, mark);
    return 0;
}

/* obj[key] as one route into *out (left as it is when absent and optional). */
static int build_key(struct jp *jp, json_t *obj, const char *key, bool required,
                     struct route **out) {
    json_t *v = required ? need(jp, obj, key) : json_object_get(obj, key);
    if (v == NULL)
        return required ? -1 : 0;
    size_t mark = path_key(jp, key);
    if (build_one(jp, v, out) < 0)
        return -1;
    path_set(jp, mark);
    return 0;
}

/* A kind over a list of children, with its defaults. */
static struct route *make_listed(struct route_set *rs, enum route_kind kind, struct rlist *l,
                                 long long failover_count) {
    switch (kind) {
    case ROUTE_FAILOVER: return route_failover(rs, l->v, l->n, -1);
    case ROUTE_MISS_FAILOVER: return route_miss_failover(rs, l->v, l->n);
    case ROUTE_LATEST: return route_latest(rs, l->v, l->n, (unsigned)failover_count);
    default: return route_all(rs, kind, l->v, l->n);
    }
}

static int build_children(struct jp *jp, const struct kind *k, json_t *obj,
                          struct route **out) {
    struct rlist l = {0};
    long long count = 5;
    int rc = build_key_list(jp, obj, "children", &l);
    if (rc == 0 && k->kind == ROUTE_LATEST)
        rc = get_int(jp, obj, "failover_count", 0, UINT_MAX, 5, &count);
    if (rc == 0 && (*out = make_listed(jp->cfg->routes, k->kind, &l, count)) == NULL)
        rc = nomem(jp);
    free(l.v);
    return rc;
}

/* FailoverWithExptimeRoute: FailoverRoute over normal + failover, capped. */
static int build_failover_exptime(struct jp *jp, const struct kind *k, json_t *obj,
                                  struct route **out) {
    (void)k;
    struct rlist l = {0};
    struct route *normal = NULL;
    long long exptime;
    int rc = build_key(jp, obj, "normal", true, &normal);
    if (rc == 0)
        rc = rlist_push(jp, &l, normal);
    if (rc == 0 && json_object_get(obj, "failover"))
        rc = build_key_list(jp, obj, "failover", &l);
    if (rc == 0)
        rc = get_int(jp, obj, "failover_exptime", 0, INT_MAX, 60, &exptime);
    if (rc == 0 && (*out = route_failover(jp->cfg->routes, l.v, l.n, (int)exptime)) == NULL)
        rc = nomem(jp);
    free(l.v);
    return rc;
}

static int build_pool_route(struct jp *jp, const struct kind *k, json_t *obj,
                            struct route **out) {
    (void)k;
    json_t *v = need(jp, obj, "pool");
    if (v == NULL)
        return -1;
    size_t mark = path_key(jp, "pool");
    /* An inline pool was added by the scan; here it is only looked up. */
    json_t *name = json_is_object(v) ? json_object_get(v, "name") : v;
    if (!json_is_string(name))
        return fail(jp, json_is_object(v) ? "an inline pool needs a \"name\""
                                          : "expected a pool's name or a pool object");
    int pool = find_pool(jp, json_string_value(name));
    if (pool < 0)
        return -1;
    path_set(jp, mark);
    *out = route_pool(jp->cfg->routes, (unsigned)pool);
    return *out ? 0 : nomem(jp);
}

/* The operation msg_op_name() calls name, or -1. */
static int op_by_name(const char *name) {
    for (int op = 0; op < MSG_OP_COUNT; op++)
        if (strcmp(msg_op_name((enum msg_op)op), name) == 0)
            return op;
    return -1;
}

/* Checks that obj[key], when there, is an object (of routes). */
static int check_map(struct jp *jp, json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_object(v))
        return 0;
    path_key(jp, key);
    return fail(jp, "expected an object, not %s", type_name(v));
}

static int build_opsel(struct jp *jp, const struct kind *k, json_t *obj, struct route **out) {
    (void)k;
    struct route *by_op[MSG_OP_COUNT] = {0}, *dflt = NULL;
    json_t *pol = json_object_get(obj, "operation_policies");
    if (check_map(jp, obj, "operation_policies") < 0)
        return -1;
    const char *name;
    json_t *v;
    json_object_foreach(pol, name, v) {
        size_t mark = path_key(jp, "operation_policies");
        path_key(jp, name);
        int op = op_by_name(name);
        if (op < 0)
            return fail(jp, "unknown operation \"%s\" (get gets gat gats set add replace "
                            "append prepend cas delete incr decr touch flush_all version "
                            "lease-get lease-set)", name);
        if (build_one(jp, v, &by_op[op]) < 0)
            return -1;
        path_set(jp, mark);
    }
    if (build_key(jp, obj, "default_policy", false, &dflt) < 0)
        return -1;
    *out = route_operation_selector(jp->cfg->routes, by_op, dflt);
    return *out ? 0 : nomem(jp);
}

static int build_prefix(struct jp *jp, const struct kind *k, json_t *obj, struct route **out) {
    (void)k;
    json_t *pol = json_object_get(obj, "policies");
    if (check_map(jp, obj, "policies") < 0)
        return -1;
    size_t n = json_object_size(pol);
    const char **prefixes = calloc(n ? n : 1, sizeof(*prefixes));
    struct rlist l = {0};
    struct route *wildcard = NULL;
    int rc = prefixes ? 0 : nomem(jp);
    const char *prefix;
    json_t *v;
    json_object_foreach(pol, prefix, v) {
        if (rc < 0)
            break;
        size_t mark = path_key(jp, "policies");
        path_key(jp, prefix);
        struct route *r = NULL;
        prefixes[l.n] = prefix;
        rc = build_one(jp, v, &r);
        if (rc == 0)
            rc = rlist_push(jp, &l, r);
        if (rc == 0)
            path_set(jp, mark);
    }
    if (rc == 0)
        rc = build_key(jp, obj, "wildcard", false, &wildcard);
    if (rc == 0 && (*out = route_prefix_selector(jp->cfg->routes, prefixes, l.v, l.n,
                                                 wildcard)) == NULL)
        rc = nomem(jp);
    free(prefixes);
    free(l.v);
    return rc;
}

static int build_warm_up(struct jp *jp, const struct kind *k, json_t *obj,
                         struct route **out) {
    (void)k;
    struct route *cold = NULL, *warm = NULL;
    long long exptime, hold;
    if (build_key(jp, obj, "cold", true, &cold) < 0 ||
        build_key(jp, obj, "warm", true, &warm) < 0 ||
        get_int(jp, obj, "exptime", 0, INT_MAX, 0, &exptime) < 0 ||
        get_int(jp, obj, "delete_hold", 0, 86400, 0, &hold) < 0)
        return -1;
    *out = route_warm_up(jp->cfg->routes, cold, warm, (int)exptime);
    if (*out)
        (*out)->hold = (unsigned)hold;
    return *out ? 0 : nomem(jp);
}

static int build_null(struct jp *jp, const struct kind *k, json_t *obj, struct route **out) {
    (void)k;
    (void)obj;
    *out = route_null(jp->cfg->routes);
    return *out ? 0 : nomem(jp);
}

static const struct kind kinds[] = {
    {"PoolRoute", ROUTE_POOL, "pool", "", "", build_pool_route, false},
    {"FailoverRoute", ROUTE_FAILOVER, "children", "children", "", build_children, true},
    {"FailoverWithExptimeRoute", ROUTE_FAILOVER, "normal failover failover_exptime",
     "normal failover", "", build_failover_exptime, false},
    {"MissFailoverRoute", ROUTE_MISS_FAILOVER, "children", "children", "", build_children,
     true},
    {"AllSyncRoute", ROUTE_ALL_SYNC, "children", "children", "", build_children, true},
    {"AllAsyncRoute", ROUTE_ALL_ASYNC, "children", "children", "", build_children, true},
    {"AllInitialRoute", ROUTE_ALL_INITIAL, "children", "children", "", build_children, true},
    {"LatestRoute", ROUTE_LATEST, "children failover_count", "children", "", build_children,
     true},
    {"OperationSelectorRoute", ROUTE_OPERATION_SELECTOR, "operation_policies default_policy",
     "default_policy", "operation_policies", build_opsel, false},
    {"PrefixPolicyRoute", ROUTE_OPERATION_SELECTOR, "operation_policies default_policy",
     "default_policy", "operation_policies", build_opsel, false},
    {"PrefixSelectorRoute", ROUTE_PREFIX_SELECTOR, "policies wildcard", "wildcard",
     "policies", build_prefix, false},
    {"WarmUpRoute", ROUTE_WARM_UP, "cold warm exptime delete_hold", "cold warm", "",
     build_warm_up, false},
    {"NullRoute", ROUTE_NULL, "", "", "", build_null, false},
};

static const struct kind *kind_find(const char *type, size_t len) {
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strlen(kinds[i].type) == len && memcmp(kinds[i].type, type, len) == 0)
            return &kinds[i];
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* Named handles and the scan                                               */
/* ---------------------------------------------------------------------- */

static struct named *named_find(struct jp *jp, const char *name) {
    for (unsigned i = 0; i < jp->nnamed; i++)
        if (strcmp(jp->named[i].name, name) == 0)
            return &jp->named[i];
    return NULL;
}

/* Records def as the named handle name, defined at the current path. */
static int named_add(struct jp *jp, const char *name, json_t *def) {
    if (*name == '\0')
        return fail(jp, "a named handle's name is empty");
    struct named *old = named_find(jp, name);
    if (old)
        return fail(jp, "named handle \"%s\" is defined twice (also at %s)", name, old->path);
    if (jp->nnamed == jp->capnamed) {
        unsigned cap = jp->capnamed ? jp->capnamed * 2 : 8;
        struct named *v = realloc(jp->named, cap * sizeof(*v));
        if (v == NULL)
            return nomem(jp);
        jp->named = v;
        jp->capnamed = cap;
    }
    char *path = strdup(jp->path);
    if (path == NULL)
        return nomem(jp);
    jp->named[jp->nnamed++] = (struct named){name, def, path, NULL, false};
    return 0;
}

static int scan_route(struct jp *jp, json_t *v);

/*
 * Scans what an object route holds: the values of its route keys and of
 * its objects of routes; adds an inline pool.  Unknown types and keys are
 * passed over: building reports them.
 */
static int scan_object(struct jp *jp, json_t *obj) {
    json_t *type = json_object_get(obj, "type");
    const struct kind *k =
        json_is_string(type) ? kind_find(json_string_value(type), strlen(json_string_value(type)))
                             : NULL;
    if (k == NULL)
        return 0;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        size_t mark = path_key(jp, key);
        if (k->kind == ROUTE_POOL && strcmp(key, "pool") == 0 && json_is_object(v)) {
            json_t *name = json_object_get(v, "name");
            if (!json_is_string(name))
                return fail(jp, "an inline pool needs a \"name\"");
            if (add_pool(jp, json_string_value(name), v, true) < 0)
                return -1;
        } else if (has_word(k->route_keys, key)) {
            if (scan_route(jp, v) < 0)
                return -1;
        } else if (has_word(k->map_keys, key) && json_is_object(v)) {
            const char *sub;
            json_t *r;
            json_object_foreach(v, sub, r) {
                size_t m = path_key(jp, sub);
                if (scan_route(jp, r) < 0)
                    return -1;
                path_set(jp, m);
            }
        }
        path_set(jp, mark);
    }
    return 0;
}

/* Finds the named handles and inline pools in a route (or list of routes). */
static int scan_route(struct jp *jp, json_t *v) {
    if (++jp->depth > DEPTH_MAX)
        return fail(jp, "routes nested more than %d deep", DEPTH_MAX);
    int rc = 0;
    if (json_is_array(v)) {
        for (size_t i = 0; rc == 0 && i < json_array_size(v); i++) {
            size_t mark = path_index(jp, i);
            rc = scan_route(jp, json_array_get(v, i));
            path_set(jp, mark);
        }
    } else if (json_is_object(v)) {
        json_t *name = json_object_get(v, "name");
        if (name && !json_is_string(name)) {
            path_key(jp, "name");
            rc = fail(jp, "expected a string, not %s", type_name(name));
        } else if (name) {
            rc = named_add(jp, json_string_value(name), v);
        }
        if (rc == 0)
            rc = scan_object(jp, v);
    }
    jp->depth--;
    return rc;
}

/*
 * The top-level named handles: a list of objects with a "name", or (as
 * mcrouter also reads them) an object of name -> route object.
 */
static int scan_named_handles(struct jp *jp, json_t *nh) {
    size_t mark = path_key(jp, "named_handles");
    if (json_is_array(nh)) {
        for (size_t i = 0; i < json_array_size(nh); i++) {
            size_t m = path_index(jp, i);
            json_t *v = json_array_get(nh, i);
            if (!json_is_object(v))
                return fail(jp, "a named handle is an object, not %s", type_name(v));
            if (!json_is_string(json_object_get(v, "name")))
                return fail(jp, "a named handle needs a \"name\" (a string)");
            if (scan_route(jp, v) < 0)
                return -1;
            path_set(jp, m);
        }
    } else if (json_is_object(nh)) {
        const char *name;
        json_t *v;
        json_object_foreach(nh, name, v) {
            size_t m = path_key(jp, name);
            json_t *own = json_is_object(v) ? json_object_get(v, "name") : NULL;
            if (!json_is_object(v))
                return fail(jp, "a named handle is an object, not %s", type_name(v));
            if (own && !(json_is_string(own) && strcmp(json_string_value(own), name) == 0))
                return fail(jp, "its \"name\" is not \"%s\"", name);
            if (named_add(jp, name, v) < 0 || scan_object(jp, v) < 0)
                return -1;
            path_set(jp, m);
        }
    } else {
        return fail(jp, "expected a list of named handles, not %s", type_name(nh));
    }
    path_set(jp, mark);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Building                                                                 */
/* ---------------------------------------------------------------------- */

static int build_typed(struct jp *jp, json_t *obj, struct route **out) {
    json_t *type = need(jp, obj, "type");
    if (type == NULL)
        return -1;
    if (!json_is_string(type)) {
        path_key(jp, "type");
        return fail(jp, "expected a string, not %s", type_name(type));
    }
    const char *t = json_string_value(type);
    const struct kind *k = kind_find(t, strlen(t));
    if (k == NULL)
        return fail(jp, "unknown route type \"%s\"", t);
    char allowed[128];
    snprintf(allowed, sizeof(allowed), "type name%s%s", *k->keys ? " " : "", k->keys);
    if (check_keys(jp, obj, allowed, t) < 0)
        return -1;
    return k->build(jp, k, obj, out);
}

/*
 * A named handle's route: built at its definition's path the first time,
 * then shared.  Meeting it again while it is being built is a cycle.
 */
static int build_named(struct jp *jp, struct named *nh, struct route **out) {
    if (nh->built) {
        *out = nh->built;
        return 0;
    }
    if (nh->building)
        return fail(jp, "named handle \"%s\" is used inside its own definition", nh->name);
    char saved[PATH_LEN];
    size_t saved_len = jp->plen;
    memcpy(saved, jp->path, saved_len + 1);
    path_set(jp, 0);
    path_put(jp, "%s", nh->path);
    nh->building = true;
    int rc = build_typed(jp, nh->def, &nh->built);
    nh->building = false;
    if (rc < 0)
        return -1;
    memcpy(jp->path, saved, saved_len + 1);
    jp->plen = saved_len;
    *out = nh->built;
    return 0;
}

static int build_object(struct jp *jp, json_t *obj, struct route **out) {
    json_t *name = json_object_get(obj, "name");
    if (name == NULL)
        return build_typed(jp, obj, out);
    if (!json_is_string(name)) {
        path_key(jp, "name");
        return fail(jp, "expected a string, not %s", type_name(name));
    }
    struct named *nh = named_find(jp, json_string_value(name));
    if (nh == NULL || nh->def != obj)   /* the scan sees every object built */
        return fail(jp, "named handle \"%s\" was not found by the scan", json_string_value(name));
    return build_named(jp, nh, out);
}

/* "Pool|P": one route per server of P, in order. */
static int build_pool_servers(struct jp *jp, const char *pool_name, struct rlist *l) {
    int pool = find_pool(jp, pool_name);
    if (pool < 0)
        return -1;
    const struct cl_pool *pl = &jp->cfg->pools[pool];
    for (unsigned i = 0; i < pl->n; i++)
        if (rlist_push(jp, l, route_server(jp->cfg->routes, pl->first + i)) < 0)
            return -1;
    return 0;
}

/* "TYPE|arg" for a kind over a list: that kind over arg's routes. */
static int build_listed_string(struct jp *jp, const struct kind *k, const char *arg,
                               struct rlist *l) {
    if (++jp->depth > DEPTH_MAX)
        return fail(jp, "routes nested more than %d deep", DEPTH_MAX);
    struct rlist sub = {0};
    int rc = build_string(jp, arg, &sub);
    jp->depth--;
    if (rc == 0 && sub.n == 0)
        rc = fail(jp, "\"%s|%s\": no routes", k->type, arg);
    if (rc == 0)
        rc = rlist_push(jp, l, make_listed(jp->cfg->routes, k->kind, &sub, 5));
    free(sub.v);
    return rc;
}

/* A route written as a string, appended to l (see the grammar atop). */
static int build_string(struct jp *jp, const char *s, struct rlist *l) {
    struct named *nh = named_find(jp, s);
    if (nh) {
        struct route *r;
        return build_named(jp, nh, &r) < 0 ? -1 : rlist_push(jp, l, r);
    }
    const char *bar = strchr(s, '|'), *arg = bar ? bar + 1 : NULL;
    size_t tlen = bar ? (size_t)(bar - s) : strlen(s);
    if (tlen == 4 && memcmp(s, "Pool", 4) == 0 && arg)
        return build_pool_servers(jp, arg, l);
    const struct kind *k = kind_find(s, tlen);
    if (k == NULL)
        return arg ? fail(jp, "unknown route type \"%.*s\" in \"%s\"", (int)tlen, s, s)
                   : fail(jp, "unknown named handle or route \"%s\"", s);
    if (k->kind == ROUTE_POOL && arg) {
        int pool = find_pool(jp, arg);
        return pool < 0 ? -1 : rlist_push(jp, l, route_pool(jp->cfg->routes, (unsigned)pool));
    }
    if (k->kind == ROUTE_NULL && arg == NULL)
        return rlist_push(jp, l, route_null(jp->cfg->routes));
    if (k->list_form && arg)
        return build_listed_string(jp, k, arg, l);
    if (k->kind == ROUTE_NULL)
        return fail(jp, "NullRoute takes nothing after '|', not \"%s\"", s);
    if (k->list_form || k->kind == ROUTE_POOL)
        return fail(jp, "\"%s\" needs %s, as \"%s|%s\"", s,
                    k->kind == ROUTE_POOL ? "a pool" : "children", k->type,
                    k->kind == ROUTE_POOL ? "A" : "Pool|A");
    return fail(jp, "%s is written as an object, not as \"%s\"", k->type, s);
}

/* A route, a string that may stand for several, or a list: appended to l. */
static int build_list(struct jp *jp, json_t *v, struct rlist *l) {
    if (++jp->depth > DEPTH_MAX)
        return fail(jp, "routes nested more than %d deep", DEPTH_MAX);
    int rc = 0;
    struct route *r = NULL;
    if (json_is_array(v)) {
        for (size_t i = 0; rc == 0 && i < json_array_size(v); i++) {
            size_t mark = path_index(jp, i);
            rc = build_list(jp, json_array_get(v, i), l);
            if (rc == 0)
                path_set(jp, mark);
        }
    } else if (json_is_object(v)) {
        rc = build_object(jp, v, &r);
        if (rc == 0)
            rc = rlist_push(jp, l, r);
    } else if (json_is_string(v)) {
        rc = build_string(jp, json_string_value(v), l);
    } else {
        rc = fail(jp, "a route is an object or a string, not %s", type_name(v));
    }
    jp->depth--;
    return rc;
}

/* Exactly one route (mcrouter's create(): a list must hold one). */
static int build_one(struct jp *jp, json_t *v, struct route **out) {
    struct rlist l = {0};
    int rc = build_list(jp, v, &l);
    if (rc == 0 && l.n != 1)
        rc = fail(jp, "%u routes where one is expected", l.n);
    if (rc == 0)
        *out = l.v[0];
    free(l.v);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The configuration                                                        */
/* ---------------------------------------------------------------------- */

/* Every top-level named handle is built, so that its errors show. */
static int build_named_handles(struct jp *jp, json_t *nh) {
    const char *name;
    json_t *v;
    size_t i;
    struct route *r;
    if (json_is_array(nh)) {
        json_array_foreach(nh, i, v) {
            if (build_named(jp, named_find(jp, json_string_value(json_object_get(v, "name"))),
                            &r) < 0)
                return -1;
        }
    } else if (json_is_object(nh)) {
        json_object_foreach(nh, name, v) {
            if (build_named(jp, named_find(jp, name), &r) < 0)
                return -1;
        }
    }
    return 0;
}

/* Checks one "routes" entry: {"aliases": [STRING, ...], "route": route}. */
static int check_routes_entry(struct jp *jp, json_t *e) {
    if (!json_is_object(e))
        return fail(jp, "expected an object with \"aliases\" and \"route\", not %s",
                    type_name(e));
    if (check_keys(jp, e, "aliases route", "a routes entry") < 0)
        return -1;
    json_t *aliases = need(jp, e, "aliases");
    if (aliases == NULL || need(jp, e, "route") == NULL)
        return -1;
    path_key(jp, "aliases");
    if (!json_is_array(aliases))
        return fail(jp, "expected a list of strings, not %s", type_name(aliases));
    for (size_t i = 0; i < json_array_size(aliases); i++) {
        path_index(jp, i);
        if (!json_is_string(json_array_get(aliases, i)))
            return fail(jp, "expected a string, not %s",
                        type_name(json_array_get(aliases, i)));
    }
    return 0;
}

/*
 * "routes": the entry's route is checked and built as the root.  FIXME:
 * the library has no routing prefixes yet, so the aliases
 * ("/region/cluster/") choose nothing: one entry takes every key, and a
 * list of several, which mcrouter would route between by prefix, is
 * refused rather than reduced to its first entry.
 */
static int scan_routes(struct jp *jp, json_t *routes, bool build) {
    size_t mark = path_key(jp, "routes");
    if (!json_is_array(routes) || json_array_size(routes) == 0)
        return fail(jp, "expected a list of {\"aliases\", \"route\"} entries, not %s",
                    json_is_array(routes) ? "an empty list" : type_name(routes));
    for (size_t i = 0; i < json_array_size(routes); i++) {
        size_t m = path_index(jp, i), entry = jp->plen;
        json_t *e = json_array_get(routes, i);
        if (check_routes_entry(jp, e) < 0)
            return -1;
        path_set(jp, entry);
        path_key(jp, "route");
        struct route *r = NULL;
        if (build ? build_one(jp, json_object_get(e, "route"), &r) < 0
                  : scan_route(jp, json_object_get(e, "route")) < 0)
            return -1;
        if (i == 0)
            jp->cfg->root = r;
        path_set(jp, m);
    }
    if (build && json_array_size(routes) > 1) {  /* every entry was well formed: say why not */
        path_index(jp, 1);
        return fail(jp, "routing prefixes are not supported yet: a second routes entry "
                        "would choose nothing");
    }
    path_set(jp, mark);
    return 0;
}

static int check_top(struct jp *jp, json_t *root) {
    if (!json_is_object(root))
        return fail(jp, "the configuration is not a JSON object");
    if (json_object_get(root, "macros"))
        return fail(jp, "macros: macros are not supported yet");
    if (check_keys(jp, root, "pools route routes named_handles", "the configuration") < 0)
        return -1;
    bool one = json_object_get(root, "route") != NULL, many = json_object_get(root, "routes");
    if (one && many)
        return fail(jp, "give \"route\" or \"routes\", not both");
    if (!one && !many)
        return fail(jp, "no route: give \"route\" or \"routes\"");
    return 0;
}

/* Pools, the scan for named handles and inline pools, then the tree. */
static int parse_config(struct jp *jp, json_t *root) {
    json_t *pools = json_object_get(root, "pools"), *nh = json_object_get(root, "named_handles");
    json_t *route = json_object_get(root, "route"), *routes = json_object_get(root, "routes");
    if (check_top(jp, root) < 0 || (pools && parse_pools(jp, pools) < 0))
        return -1;
    if (nh && scan_named_handles(jp, nh) < 0)
        return -1;
    if (route) {
        size_t mark = path_key(jp, "route");
        if (scan_route(jp, route) < 0)
            return -1;
        path_set(jp, mark);
    }
    if (routes && scan_routes(jp, routes, false) < 0)
        return -1;
    if (nh && build_named_handles(jp, nh) < 0)
        return -1;
    if (routes)
        return scan_routes(jp, routes, true);
    path_key(jp, "route");
    return build_one(jp, route, &jp->cfg->root);
}

int cl_config_json(struct cellar_config *cfg, const char *text,
                   const struct cellar_options *opt, char *err, size_t errlen) {
    struct jp jp = {.cfg = cfg, .opt = opt, .err = err, .errlen = errlen};
    char *clean = malloc(strlen(text) + 1);
    if (clean == NULL)
        return nomem(&jp);
    int line, col, rc = -1;
    json_t *root = NULL;
    json_error_t je;
    if (strip(text, clean, &line, &col) < 0) {
        fail(&jp, "line %d, column %d: unterminated /* comment", line, col);
    } else if ((root = json_loads(clean, JSON_REJECT_DUPLICATES, &je)) == NULL) {
        fail(&jp, "line %d, column %d: %s", je.line, je.column, je.text);
    } else {
        rc = parse_config(&jp, root);
    }
    json_decref(root);
    free(clean);
    for (unsigned i = 0; i < jp.nnamed; i++)
        free(jp.named[i].path);
    free(jp.named);
    return rc;
}
