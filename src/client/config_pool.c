/*
 * config_pool.c -- the "pools" of mcrouter's JSON (config_json.c reads
 * the rest of the grammar): each pool's servers (weights, port_override),
 * its settings over the caller's options (protocol, hash, the timeouts,
 * udp, spool, keep_routing_prefix, pool_locality), added to the
 * configuration with cl_config_add_pool(); an inline pool (a PoolRoute's
 * "pool" object) the same way.  Errors name the place, as everywhere in
 * the grammar.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/route_build.h"

#define MSG_LEN 512
#define TIMEOUT_MAX_MS 86400000 /* a day: any setting in ms above it is a mistake */
#define DEFAULT_PORT 11211      /* config.c's, for entries given a weight */


#define POOL_KEYS                                                                    \
    "servers weights protocol server_timeout hash connect_timeout tko_timeouts "     \
    "probe_min_ms probe_max_ms udp spool keep_routing_prefix pool_locality port_override " \
    "failure_domains use_ssl auth"

/* The per-pool settings that override opt's: protocol, hash and the ms. */
static int pool_options(struct rb *b, json_t *obj, struct cellar_options *po) {
    json_t *v;
    if ((v = json_object_get(obj, "protocol")) != NULL) {
        size_t mark = rb_path_key(b, "protocol");
        if (!json_is_string(v) || msg_wire_find(json_string_value(v)) == NULL)
            return rb_fail(b, "expected \"ascii\", \"text\", \"meta\" or \"binary\"");
        po->protocol = json_string_value(v);
        rb_path_set(b, mark);
    }
    if ((v = json_object_get(obj, "hash")) != NULL) {
        size_t mark = rb_path_key(b, "hash");
        bool known = false;
        for (unsigned i = 0; json_is_string(v) && ring_kind_at(i); i++)
            known |= strcmp(ring_kind_at(i), json_string_value(v)) == 0;
        if (!known)
            return rb_fail(b, "expected \"ch3\", \"ketama\", \"modula\", \"rendezvous\" or \"crc32\"");
        po->hash = json_string_value(v);
        rb_path_set(b, mark);
    }
    if ((v = json_object_get(obj, "udp")) != NULL) {
        size_t mark = rb_path_key(b, "udp");
        if (!json_is_boolean(v))
            return rb_fail(b, "expected true or false");
        po->udp = json_is_true(v);
        rb_path_set(b, mark);
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
        if (rb_get_int(b, obj, ints[i].key, 1, TIMEOUT_MAX_MS, *field, &n) < 0)
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
static char *weighted_entry(struct rb *b, const char *entry, json_int_t w) {
    if (entry[0] == '/' || strncmp(entry, "unix:", 5) == 0) {
        rb_fail(b, "a unix socket takes no weight");
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
        rb_fail(b, "has a weight already: give it here or in \"weights\", not both");
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
        rb_nomem(b);
        return NULL;
    }
    return out;
}

/*
 * Checks a pool's weights: ketama's, one whole number from 1 per server;
 * or, with mcrouter's default hash (ch3), mcrouter's: a number in [0, 1]
 * per server, the pool then placing keys by WeightedCh3 (*wch3 set), a
 * missing one 0.5 and one past the servers unread, as mcrouter reads them.
 * Another hash would quietly ignore them: refused.
 */
static int check_weights(struct rb *b, json_t *weights, size_t n, const char *hash,
                         bool *wch3) {
    rb_path_key(b, "weights");
    *wch3 = strcmp(hash, "ch3") == 0;
    if (strcmp(hash, "ketama") != 0 && !*wch3)
        return rb_fail(b, "only ketama and ch3 (mcrouter's WeightedCh3) use weights (this "
                          "pool hashes with %s)", hash);
    if (!*wch3 && json_array_size(weights) != n)
        return rb_fail(b, "%zu weights for %zu servers", json_array_size(weights), n);
    for (size_t i = 0; i < n && i < json_array_size(weights); i++) {
        json_t *w = json_array_get(weights, i);
        size_t mark = rb_path_index(b, i);
        if (*wch3 && (!json_is_number(w) || json_number_value(w) < 0 ||
                      json_number_value(w) > 1))
            return rb_fail(b, "a weight of a ch3 pool is a number in [0, 1] (mcrouter's "
                              "WeightedCh3; ketama's are whole numbers)");
        if (!*wch3 && (!json_is_integer(w) || json_integer_value(w) < 1 ||
                       json_integer_value(w) > UINT32_MAX))
            return rb_fail(b, "a weight of a ketama pool is a whole number from 1");
        rb_path_set(b, mark);
    }
    return 0;
}

/* Server i's weight as its entry carries it: ketama's, or WeightedCh3's times 2^32 - 1. */
static json_int_t entry_weight(json_t *weights, size_t i, bool wch3) {
    json_t *w = json_array_get(weights, i);
    if (!wch3)
        return json_integer_value(w);
    double d = w ? json_number_value(w) : 0.5;
    return (json_int_t)(uint64_t)(d * 4294967295.0);
}

/*
 * The pool's server entries (weights, already checked, folded in) into
 * entries[0..*n); an entry that is a route (an object) into routes[i]
 * instead (routes[] NULL when there is none).
 */
static int pool_entries(struct rb *b, json_t *servers, json_t *weights, bool wch3,
                        char **entries, size_t *n, json_t ***routes) {
    *n = 0;
    *routes = NULL;
    for (size_t i = 0; i < json_array_size(servers); i++) {
        json_t *s = json_array_get(servers, i);
        size_t mark = rb_path_key(b, "servers");
        rb_path_index(b, i);
        if (json_is_object(s)) {            /* a route in a server's place, as mcrouter's */
            if (weights)
                return rb_fail(b, "a route among the servers of a pool with weights");
            if (*routes == NULL &&
                (*routes = calloc(json_array_size(servers), sizeof(**routes))) == NULL)
                return rb_nomem(b);
            (*routes)[i] = json_incref(s);
            rb_path_set(b, mark);
            continue;
        }
        if (!json_is_string(s))
            return rb_fail(b, "expected a string or a route, not %s", rb_type_name(s));
        char **e = &entries[(*n)++];
        if (weights)
            *e = weighted_entry(b, json_string_value(s), entry_weight(weights, i, wch3));
        else if ((*e = strdup(json_string_value(s))) == NULL)
            rb_nomem(b);
        if (*e == NULL)
            return -1;
        rb_path_set(b, mark);
    }
    return 0;
}

/* Records pool's entries that are routes (routes[0..n), owned from here on). */
static int add_members(struct rb *b, unsigned pool, json_t **routes, size_t n) {
    struct rb_members *v = realloc(b->members, (b->nmembers + 1) * sizeof(*v));
    if (v == NULL) {
        for (size_t i = 0; i < n; i++)
            json_decref(routes[i]);
        free(routes);
        return rb_nomem(b);
    }
    b->members = v;
    v[b->nmembers++] = (struct rb_members){pool, (unsigned)n, routes};
    return 0;
}

/*
 * mcrouter's "port_override": every server of the pool on this port,
 * whatever port its entry names (a "[v6]" host kept in its brackets).
 */
static int port_override(struct rb *b, json_t *v, char **entries, size_t n) {
    size_t mark = rb_path_key(b, "port_override");
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 65535)
        return rb_fail(b, "expected a port, 0 to 65535");
    for (size_t i = 0; i < n; i++) {
        const char *e = entries[i], *end;
        if (*e == '/' || strncmp(e, "unix:", 5) == 0)
            return rb_fail(b, "a unix socket has no port to override");
        end = *e == '[' ? strchr(e, ']') : strchr(e, ':');
        size_t host = end == NULL ? strlen(e) : (size_t)(end - e) + (*e == '[');
        /* what follows the port (a ketama weight) stays */
        const char *port = e[host] == ':' ? e + host + 1 : NULL;
        const char *rest = port ? strchr(port, ':') : NULL;
        size_t cap = host + 8 + (rest ? strlen(rest) : 0);
        char *with = malloc(cap);
        if (with == NULL)
            return rb_nomem(b);
        snprintf(with, cap, "%.*s:%d%s", (int)host, e, (int)json_integer_value(v),
                 rest ? rest : "");
        free(entries[i]);
        entries[i] = with;
    }
    rb_path_set(b, mark);
    return 0;
}

/*
 * Says cl_config_add_pool()'s error msg at the pool's path, or at the
 * server entry it names ("server \"entry\": why" becomes
 * "pools.A.servers[i]: why in \"entry\"").
 */
static int pool_error(struct rb *b, const char *msg, char **entries, size_t n) {
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(entries[i]);
        if (strncmp(msg, "server \"", 8) == 0 && strncmp(msg + 8, entries[i], len) == 0 &&
            strncmp(msg + 8 + len, "\": ", 3) == 0) {
            rb_path_key(b, "servers");
            rb_path_index(b, i);
            return rb_fail(b, "%s in \"%s\"", msg + 8 + len + 3, entries[i]);
        }
    }
    return rb_fail(b, "%s", msg);
}

/* The pool's "spool": a list of operation names, into a mask of 1 << op. */
static int spool_list(struct rb *b, json_t *obj, uint32_t *ops) {
    json_t *v = json_object_get(obj, "spool"), *e;
    if (v == NULL)
        return 0;
    size_t mark = rb_path_key(b, "spool"), i;
    if (!json_is_array(v))
        return rb_fail(b, "expected a list of operations, not %s", rb_type_name(v));
    *ops = 0;
    json_array_foreach(v, i, e) {
        int op = json_is_string(e) ? msg_op_by_name(json_string_value(e)) : -1;
        if (op != MSG_SET && op != MSG_ADD && op != MSG_REPLACE && op != MSG_APPEND &&
            op != MSG_PREPEND && op != MSG_DELETE && op != MSG_INCR && op != MSG_DECR &&
            op != MSG_TOUCH) {
            rb_path_index(b, i);
            return rb_fail(b, "expected a write to spool (set add replace append prepend "
                            "delete incr decr touch)");
        }
        *ops |= 1u << op;
    }
    rb_path_set(b, mark);
    return 0;
}

/*
 * mcrouter's "failure_domains": a whole number from 0 per server (the
 * rack or power domain it shares with others; 0: none), read by
 * FailoverRoute's DeterministicOrderPolicy.
 */
static int failure_domains(struct rb *b, json_t *v, size_t n, uint32_t *out) {
    size_t mark = rb_path_key(b, "failure_domains");
    if (!json_is_array(v) || json_array_size(v) != n)
        return rb_fail(b, "expected a list of %zu failure domains, one per server", n);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 ||
            json_integer_value(e) > UINT32_MAX) {
            rb_path_index(b, i);
            return rb_fail(b, "a failure domain is a whole number from 0");
        }
        out[i] = (uint32_t)json_integer_value(e);
    }
    rb_path_set(b, mark);
    return 0;
}

/*
 * Adds pool name from obj (at the current path): servers, weights, and
 * settings over a copy of the caller's options.
 */
int cl_json_add_pool(struct rb *b, const char *name, json_t *obj, bool inline_pool) {
    if (!json_is_object(obj))
        return rb_fail(b, "a pool is an object, not %s", rb_type_name(obj));
    /* inline: a PoolRoute's "pool" object, or mcrouter's {"type": "Pool", ...} */
    if (rb_check_keys(b, obj, inline_pool ? "name type " POOL_KEYS : POOL_KEYS, "a pool") < 0)
        return -1;
    json_t *type = json_object_get(obj, "type");
    if (type && !(json_is_string(type) && strcmp(json_string_value(type), "Pool") == 0)) {
        rb_path_key(b, "type");
        return rb_fail(b, "a pool's type is \"Pool\"");
    }
    if (cl_config_find_pool(b->cfg, name) >= 0)
        return rb_fail(b, "pool \"%s\" is defined twice", name);
    struct cellar_options po = *b->opt;
    if (po.protocol == NULL)
        po.protocol = "ascii";      /* mcrouter's default (msg_wire_ascii) */
    if (pool_options(b, obj, &po) < 0)
        return -1;
    json_t *servers = rb_need(b, obj, "servers"), *weights = json_object_get(obj, "weights");
    if (servers == NULL)
        return -1;
    if (!json_is_array(servers)) {     /* an empty one, as mcrouter: see route_pool.c */
        rb_path_key(b, "servers");
        return rb_fail(b, "expected a list of servers, not %s", rb_type_name(servers));
    }
    if (weights && !json_is_array(weights)) {
        rb_path_key(b, "weights");
        return rb_fail(b, "expected a list of weights, not %s", rb_type_name(weights));
    }
    size_t total = json_array_size(servers), n = 0;
    char **entries = calloc(total ? total : 1, sizeof(*entries));
    json_t **routes = NULL;
    if (entries == NULL)
        return rb_nomem(b);
    /* "ch3" is config.c's default hash. */
    size_t mark = b->plen;
    bool wch3 = false;
    int rc = weights ? check_weights(b, weights, total, po.hash ? po.hash : "ch3", &wch3) : 0;
    if (rc == 0) {
        rb_path_set(b, mark);
        rc = pool_entries(b, servers, weights, wch3, entries, &n, &routes);
    }
    if (rc == 0 && routes && json_object_get(obj, "failure_domains")) {
        rb_path_key(b, "failure_domains");
        rc = rb_fail(b, "failure domains of a pool with routes among its servers");
    }
    if (wch3)
        po.hash = "wch3";           /* as mcrouter's PoolRoute over a pool with weights */
    if (rc == 0 && json_object_get(obj, "port_override"))
        rc = port_override(b, json_object_get(obj, "port_override"), entries, n);
    uint32_t spool_ops = 1u << MSG_DELETE;
    if (rc == 0) {
        rb_path_set(b, mark);
        rc = spool_list(b, obj, &spool_ops);
    }
    json_t *keep = json_object_get(obj, "keep_routing_prefix");
    if (rc == 0 && keep && !json_is_boolean(keep)) {
        rb_path_key(b, "keep_routing_prefix");
        rc = rb_fail(b, "expected true or false");
    }
    json_t *use_ssl = json_object_get(obj, "use_ssl");
    if (rc == 0 && use_ssl && !json_is_boolean(use_ssl)) {
        rb_path_key(b, "use_ssl");
        rc = rb_fail(b, "expected true or false");
    }
    if (rc == 0 && json_is_true(use_ssl) && po.udp) {
        rb_path_key(b, "use_ssl");
        rc = rb_fail(b, "TLS and UDP gets together: a datagram has no TLS");
    }
    json_t *auth = json_object_get(obj, "auth");
    char *token = NULL;
    if (rc == 0 && auth) {
        rb_path_key(b, "auth");
        json_t *u = json_object_get(auth, "user"), *pw = json_object_get(auth, "password");
        const char *proto = po.protocol ? po.protocol : "ascii";
        if (!json_is_object(auth) || json_object_size(auth) != 2 || !json_is_string(u) ||
            !json_is_string(pw))
            rc = rb_fail(b, "expected {\"user\": STRING, \"password\": STRING}");
        else if (strcmp(proto, "ascii") != 0 && strcmp(proto, "text") != 0)
            rc = rb_fail(b, "memcached's authentication is a text set: protocol ascii or text");
        else if (strpbrk(json_string_value(u), " \r\n") || strpbrk(json_string_value(pw), " \r\n"))
            rc = rb_fail(b, "a user or password holds a space or a line break");
        else if (asprintf(&token, "%s %s", json_string_value(u), json_string_value(pw)) < 0)
            rc = rb_nomem(b), token = NULL;
    }
    json_t *locality = json_object_get(obj, "pool_locality");   /* mcrouter's stats only */
    if (rc == 0 && locality && !json_is_string(locality)) {
        rb_path_key(b, "pool_locality");
        rc = rb_fail(b, "expected a string");
    }
    json_t *domains_v = json_object_get(obj, "failure_domains");
    uint32_t *domains = domains_v ? calloc(n, sizeof(*domains)) : NULL;
    if (rc == 0 && domains_v) {
        rb_path_set(b, mark);
        rc = domains ? failure_domains(b, domains_v, n, domains) : rb_nomem(b);
    }
    if (rc == 0) {
        char msg[MSG_LEN] = "";
        int i = cl_config_add_pool(b->cfg, name, (const char *const *)entries, (unsigned)n,
                                   &po, msg, sizeof(msg));
        if (i < 0)
            rc = pool_error(b, msg[0] ? msg : "out of memory", entries, n);
        else {
            b->cfg->pools[i].spool_ops = spool_ops;
            b->cfg->pools[i].keep_prefix = json_is_true(keep);
            b->cfg->pools[i].tls = json_is_true(use_ssl);
            b->cfg->pools[i].auth = token;
            token = NULL;
            for (size_t k = 0; domains && k < n; k++)
                b->cfg->servers[b->cfg->pools[i].first + k].failure_domain = domains[k];
            if (routes) {
                rc = add_members(b, (unsigned)i, routes, total);
                routes = NULL;
            }
        }
    }
    for (size_t k = 0; routes && k < total; k++)
        json_decref(routes[k]);
    free(routes);
    free(domains);
    free(token);
    for (size_t i = 0; i < n; i++)
        free(entries[i]);
    free(entries);
    return rc;
}

int cl_json_parse_pools(struct rb *b, json_t *pools) {
    size_t mark = rb_path_key(b, "pools");
    if (!json_is_object(pools))
        return rb_fail(b, "expected an object of pools, not %s", rb_type_name(pools));
    const char *name;
    json_t *v;
    json_object_foreach(pools, name, v) {
        size_t m = rb_path_key(b, name);
        if (cl_json_add_pool(b, name, v, false) < 0)
            return -1;
        rb_path_set(b, m);
    }
    rb_path_set(b, mark);
    return 0;
}