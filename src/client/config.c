/*
 * config.c -- a configuration: servers, pools and their settings.
 *
 * Parsed once, then only read: handles on any thread share it by
 * reference count.  Today a configuration comes from a server list (one
 * pool); mcrouter's JSON format, with many pools and a route tree, parses
 * into the same structure.  Host names are resolved while parsing, so a
 * handle never blocks on DNS; a name that does not resolve is an error.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/config_int.h"
#include "core/hash.h"

#define DEFAULT_PORT 11211

struct cl_defaults {
    const char *protocol, *hash;
    int server_timeout_ms, connect_timeout_ms, tko_timeouts, probe_min_ms, probe_max_ms;
    int window_init, window_min, window_max, window_bytes;
    int lease_retry_ms, lease_wait_ms;
};

static const struct cl_defaults defaults = {
    .protocol = "meta", .hash = "ch3",
    .server_timeout_ms = 1000, .connect_timeout_ms = 0, .tko_timeouts = 3,
    .probe_min_ms = 1000, .probe_max_ms = 60000,
    /*
     * bench/incast (16 servers behind a 1 Gbit/s port with a 64-256 KB
     * queue, 1,000-key multi-gets of 1 KB values): 32 KB of replies in
     * flight stayed within 1.5 ms of the link's floor with no drop in any
     * run; 64 KB dropped in half the runs, 100 KB and more collapsed into
     * 200 ms retransmit timeouts.  The window shrinks only on a timeout,
     * which comes long after an incast's drops, so what guards is the
     * bound on bytes; the count bounds what small replies may pile up.
     */
    .window_init = 256, .window_min = 16, .window_max = 4096, .window_bytes = 32768,
    .lease_retry_ms = 10, .lease_wait_ms = 1000,
};

void cl_config_say(char *err, size_t errlen, const char *fmt, ...) {
    if (errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* A stable id for this host (a hash of its name), for LatestRoute. */
static uint64_t host_hash(void) {
    char name[256] = "";
    gethostname(name, sizeof(name) - 1);
    return hash_murmur64a(name, strlen(name), 0);
}

static int pick(int v, int dflt) {
    return v > 0 ? v : dflt;
}

/* ---------------------------------------------------------------------- */
/* One server entry                                                         */
/* ---------------------------------------------------------------------- */

/* A decimal number in [lo, hi] filling [p, end) exactly. */
static bool read_num(const char *p, const char *end, unsigned long lo, unsigned long hi,
                     unsigned long *out) {
    if (p == end || end - p > 10)
        return false;
    unsigned long v = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int resolve_unix(struct cl_server *s, char *err, size_t errlen) {
    struct sockaddr_un *un = (struct sockaddr_un *)&s->addr;
    if (strlen(s->host) >= sizeof(un->sun_path)) {
        cl_config_say(err, errlen, "server \"%s\": socket path too long", s->name);
        return -1;
    }
    un->sun_family = AF_UNIX;
    strcpy(un->sun_path, s->host);
    s->addrlen = sizeof(*un);
    return 0;
}

/* Port 0 is kept: nothing listens there, so the server fails to connect, as in mcrouter. */
static int resolve(struct cl_server *s, char *err, size_t errlen) {
    char port[8];
    snprintf(port, sizeof(port), "%u", s->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(s->host, port, &hints, &ai);
    if (rc != 0 || ai == NULL) {
        cl_config_say(err, errlen, "server \"%s\": cannot resolve \"%s\": %s", s->name, s->host,
            gai_strerror(rc));
        return -1;
    }
    memcpy(&s->addr, ai->ai_addr, ai->ai_addrlen);
    s->addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

/*
 * One entry of a server list, [p, end): "host[:port][:weight]",
 * "[v6][:port][:weight]", "/path" or "unix:/path".
 */
static int parse_server(struct cl_server *s, const char *p, const char *end, bool port0_ok,
                        char *err, size_t errlen) {
    s->name = strndup(p, (size_t)(end - p));
    if (s->name == NULL) {
        cl_config_say(err, errlen, "out of memory");
        return -1;
    }
    s->weight = 1;
    if (end - p > 5 && memcmp(p, "unix:", 5) == 0)
        p += 5;
    if (*p == '/') {
        s->host = strndup(p, (size_t)(end - p));
        s->port = 0;
        return s->host ? resolve_unix(s, err, errlen) : -1;
    }
    const char *host = p, *host_end, *rest;
    if (*p == '[') {
        host = p + 1;
        host_end = memchr(host, ']', (size_t)(end - host));
        if (host_end == NULL || host_end == host) {
            cl_config_say(err, errlen, "server \"%s\": unterminated [address]", s->name);
            return -1;
        }
        rest = host_end + 1;
    } else {
        unsigned colons = 0;
        host_end = end;
        for (const char *q = end; q > p; q--) {
            if (q[-1] == ':') {
                colons++;
                host_end = q - 1;
            }
        }
        if (colons > 2) {
            cl_config_say(err, errlen, "server \"%s\": IPv6 addresses go in brackets: [addr]:port",
                s->name);
            return -1;
        }
        rest = host_end;
        if (host_end == host) {
            cl_config_say(err, errlen, "server \"%s\": no host", s->name);
            return -1;
        }
    }
    unsigned long port = DEFAULT_PORT, weight = 1;
    if (rest < end) {
        if (*rest != ':') {
            cl_config_say(err, errlen, "server \"%s\": expected ':' after the host", s->name);
            return -1;
        }
        const char *q = rest + 1, *colon = memchr(q, ':', (size_t)(end - q));
        const char *port_end = colon ? colon : end;
        if (!read_num(q, port_end, port0_ok ? 0 : 1, 65535, &port)) {
            cl_config_say(err, errlen, "server \"%s\": bad port (IPv6 addresses go in brackets)", s->name);
            return -1;
        }
        if (colon && !read_num(colon + 1, end, 0, UINT32_MAX, &weight)) {
            cl_config_say(err, errlen, "server \"%s\": bad weight", s->name);
            return -1;
        }
    }
    s->host = strndup(host, (size_t)(host_end - host));
    s->port = (uint16_t)port;
    s->weight = (uint32_t)weight;
    return s->host ? resolve(s, err, errlen) : -1;
}

/* ---------------------------------------------------------------------- */
/* The configuration                                                        */
/* ---------------------------------------------------------------------- */

void cl_config_free(struct cellar_config *cfg) {
    for (unsigned i = 0; i < cfg->nservers; i++) {
        free(cfg->servers[i].name);
        free(cfg->servers[i].host);
    }
    for (unsigned i = 0; i < cfg->npools; i++) {
        free(cfg->pools[i].name);
        free(cfg->pools[i].auth);
        ring_destroy(&cfg->pools[i].ring);
    }
    route_set_destroy(&cfg->routes);
    cl_tls_free(&cfg->tls);
    free(cfg->servers);
    free(cfg->pools);
    free(cfg);
}

static bool is_sep(char c) {
    return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The pool's settings from opt, with the defaults for what opt leaves at zero. */
static int pool_settings(struct cl_pool *pl, const struct cellar_options *opt, char *err,
                         size_t errlen) {
    const char *proto = opt->protocol ? opt->protocol : defaults.protocol;
    pl->wire = msg_wire_find(proto);
    if (pl->wire == NULL) {
        cl_config_say(err, errlen, "pool \"%s\": unknown protocol \"%s\" (meta, text, binary)", pl->name,
            proto);
        return -1;
    }
    pl->udp = opt->udp != 0;
    pl->server_timeout_ms = pick(opt->server_timeout_ms, defaults.server_timeout_ms);
    pl->connect_timeout_ms = pick(opt->connect_timeout_ms, pl->server_timeout_ms);
    pl->tko_timeouts = pick(opt->tko_timeouts, defaults.tko_timeouts);
    pl->probe_min_ms = pick(opt->probe_min_ms, defaults.probe_min_ms);
    pl->probe_max_ms = pick(opt->probe_max_ms, defaults.probe_max_ms);
    if (pl->probe_max_ms < pl->probe_min_ms)
        pl->probe_max_ms = pl->probe_min_ms;
    pl->spool_ops = 1u << MSG_DELETE;
    return 0;
}

static int window_settings(struct cellar_config *cfg, const struct cellar_options *opt,
                           char *err, size_t errlen) {
    cfg->window_min = pick(opt->window_min, defaults.window_min);
    cfg->window_max = pick(opt->window_max, defaults.window_max);
    cfg->window_init = pick(opt->window_init, defaults.window_init);
    if (cfg->window_min > cfg->window_max) {
        cl_config_say(err, errlen, "window_min %d is above window_max %d", cfg->window_min,
            cfg->window_max);
        return -1;
    }
    if (cfg->window_init < cfg->window_min)
        cfg->window_init = cfg->window_min;
    if (cfg->window_init > cfg->window_max)
        cfg->window_init = cfg->window_max;
    if (opt->window_bytes < -1) {
        cl_config_say(err, errlen, "window_bytes %d: a size, 0 for the default or -1 for none",
            opt->window_bytes);
        return -1;
    }
    cfg->window_bytes =
        opt->window_bytes == -1 ? 0 : pick(opt->window_bytes, defaults.window_bytes);
    return 0;
}

static int build_ring(struct cellar_config *cfg, struct cl_pool *pl, const char *kind,
                      char *err, size_t errlen) {
    struct ring_server *rs = calloc(pl->n, sizeof(*rs));
    if (rs == NULL) {
        cl_config_say(err, errlen, "out of memory");
        return -1;
    }
    for (unsigned i = 0; i < pl->n; i++) {
        const struct cl_server *s = &cfg->servers[pl->first + i];
        rs[i] = (struct ring_server){s->host, s->port, s->weight};
    }
    const char *why = NULL;
    pl->ring = ring_create(kind, rs, pl->n, &why);
    free(rs);
    if (pl->ring == NULL) {
        cl_config_say(err, errlen, "pool \"%s\": hash \"%s\": %s", pl->name, kind, why ? why : "failed");
        return -1;
    }
    return 0;
}

int cl_config_add_pool(struct cellar_config *cfg, const char *name,
                       const char *const *entries, unsigned n,
                       const struct cellar_options *opt, char *err, size_t errlen) {
    if (n == 0 && !cfg->mcrouter) {     /* mcrouter's JSON may have one: see route_pool.c */
        cl_config_say(err, errlen, "pool \"%s\": no servers", name);
        return -1;
    }
    if (cl_config_find_pool(cfg, name) >= 0) {
        cl_config_say(err, errlen, "pool \"%s\" defined twice", name);
        return -1;
    }
    /* Not for a pool without servers: realloc(p, 0) may free p and answer NULL. */
    if (n > 0) {
        struct cl_server *sv = realloc(cfg->servers, (cfg->nservers + n) * sizeof(*sv));
        if (sv == NULL)
            goto nomem;
        cfg->servers = sv;
    }
    struct cl_pool *pools = realloc(cfg->pools, (cfg->npools + 1) * sizeof(*pools));
    if (pools == NULL)
        goto nomem;
    cfg->pools = pools;
    unsigned idx = cfg->npools++;
    struct cl_pool *pl = &cfg->pools[idx];
    *pl = (struct cl_pool){.name = strdup(name), .first = cfg->nservers, .n = n};
    if (pl->name == NULL)
        goto nomem;
    for (unsigned i = 0; i < n; i++) {
        struct cl_server *s = &cfg->servers[cfg->nservers++];
        memset(s, 0, sizeof(*s));
        s->pool = idx;
        const char *e = entries[i];
        if (parse_server(s, e, e + strlen(e), cfg->mcrouter, err, errlen) < 0)
            return -1;
    }
    const char *hash = opt->hash ? opt->hash : defaults.hash;
    if (pool_settings(pl, opt, err, errlen) < 0 ||
        (n > 0 && build_ring(cfg, pl, hash, err, errlen) < 0))
        return -1;
    return (int)idx;
nomem:
    cl_config_say(err, errlen, "out of memory");
    return -1;
}

/* An empty configuration with a route set and opt's window settings. */
struct cellar_config *cl_config_new(const struct cellar_options *opt, char *err,
                                        size_t errlen) {
    struct cellar_config *cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL || (cfg->routes = route_set_create()) == NULL) {
        free(cfg);
        cl_config_say(err, errlen, "out of memory");
        return NULL;
    }
    atomic_init(&cfg->refs, 1);
    if (window_settings(cfg, opt, err, errlen) < 0) {
        cl_config_free(cfg);
        return NULL;
    }
    if (opt->io != NULL && strcmp(opt->io, "uring") != 0 && strcmp(opt->io, "epoll") != 0) {
        cl_config_say(err, errlen, "io \"%s\": epoll or uring", opt->io);
        cl_config_free(cfg);
        return NULL;
    }
    cfg->io_uring = opt->io != NULL && strcmp(opt->io, "uring") == 0;
    cfg->host_id = opt->host_id ? opt->host_id : host_hash();
    cfg->lease_retry_ms = pick(opt->lease_retry_ms, defaults.lease_retry_ms);
    cfg->lease_wait_ms = pick(opt->lease_wait_ms, defaults.lease_wait_ms);
    return cfg;
}

/* A server list: one pool, and every request goes to it. */
int cl_config_list(struct cellar_config *cfg, const char *text,
                      const struct cellar_options *opt, char *err, size_t errlen) {
    unsigned n = 0, cap = 0;
    char **entries = NULL;
    int rc = -1;
    for (const char *p = text; *p;) {
        while (*p && is_sep(*p))
            p++;
        if (!*p)
            break;
        const char *e = p;
        while (*e && !is_sep(*e))
            e++;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            char **more = realloc(entries, cap * sizeof(*more));
            if (more == NULL)
                goto out;
            entries = more;
        }
        if ((entries[n] = strndup(p, (size_t)(e - p))) == NULL)
            goto out;
        n++;
        p = e;
    }
    if (n == 0) {
        cl_config_say(err, errlen, "no servers");
        goto out;
    }
    if (cl_config_add_pool(cfg, "default", (const char *const *)entries, n, opt, err, errlen) < 0)
        goto out;
    cfg->root = route_pool(cfg->routes, 0);
    rc = cfg->root ? 0 : -1;
out:
    for (unsigned i = 0; i < n; i++)
        free(entries[i]);
    free(entries);
    return rc;
}

/* Does text start (after blanks) like a JSON object or a comment? */
struct cellar_config *cl_config_ref(struct cellar_config *cfg) {
    atomic_fetch_add_explicit(&cfg->refs, 1, memory_order_relaxed);
    return cfg;
}

void cellar_config_release(struct cellar_config **cfgp) {
    struct cellar_config *cfg = *cfgp;
    if (cfg == NULL)
        return;
    *cfgp = NULL;
    if (atomic_fetch_sub_explicit(&cfg->refs, 1, memory_order_acq_rel) == 1)
        cl_config_free(cfg);
}

int cellar_config_tls(struct cellar_config *cfg, const struct cellar_tls *tls, char *err,
                      size_t errlen) {
    char why[400];
    struct cl_tls *t = cl_tls_create(tls, why, sizeof(why));
    if (t == NULL) {
        cl_config_say(err, errlen, "TLS: %s", why);
        return CELLAR_ECONFIG;
    }
    cl_tls_free(&cfg->tls);
    cfg->tls = t;
    return CELLAR_OK;
}

unsigned cellar_config_servers(const struct cellar_config *cfg) {
    return cfg->nservers;
}

const char *cellar_config_server_name(const struct cellar_config *cfg, unsigned i) {
    return i < cfg->nservers ? cfg->servers[i].name : NULL;
}

void cl_config_server_dest(const struct cellar_config *cfg, unsigned i, char *buf, size_t cap) {
    const struct cl_server *s = &cfg->servers[i];
    const struct cl_pool *pl = &cfg->pools[s->pool];
    snprintf(buf, cap, "%s:%s:plain:notcompressed-%d", s->name, pl->wire->name,
             pl->server_timeout_ms);
}

unsigned cl_config_nroutes(const struct cellar_config *cfg) { return route_set_count(cfg->routes); }

const struct route_set *cl_config_routes(const struct cellar_config *cfg) { return cfg->routes; }

const struct route *cl_config_root(const struct cellar_config *cfg) { return cfg->root; }

uint64_t cl_config_host_id(const struct cellar_config *cfg) { return cfg->host_id; }

unsigned cl_config_npools(const struct cellar_config *cfg) { return cfg->npools; }

const char *cl_config_pool_name(const struct cellar_config *cfg, unsigned i) {
    return i < cfg->npools ? cfg->pools[i].name : NULL;
}

void cl_config_pool_servers(const struct cellar_config *cfg, unsigned i, unsigned *first,
                            unsigned *n) {
    *first = i < cfg->npools ? cfg->pools[i].first : 0;
    *n = i < cfg->npools ? cfg->pools[i].n : 0;
}
