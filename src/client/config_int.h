/*
 * config_int.h -- libcellar's configuration inside (config.c, config_text.c,
 * config_json.c): servers, pools and their rings, the route tree's set.
 * Immutable once parsed and shared by every handle made from it.  Part of
 * client_int.h, which includes the parts in order.
 */
#ifndef CELLAR_CLIENT_CONFIG_INT_H
#define CELLAR_CLIENT_CONFIG_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "cellar.h"
#include "client/ring.h"
#include "client/route.h"

/* ---------------------------------------------------------------------- */
/* Configuration (config.c): immutable after parsing                        */
/* ---------------------------------------------------------------------- */

struct cl_server {
    char *name;                 /* as configured: "host:port", "[v6]:port" or the path */
    char *host;                 /* host part (the ring hashes host and port) */
    uint16_t port;              /* 0 for a unix socket (addr's family says which) */
    uint32_t weight;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    unsigned pool;              /* index of its pool */
    uint32_t failure_domain;    /* mcrouter's pool "failure_domains": 0 when not given */
};

struct cl_pool {
    char *name;
    bool udp;                   /* gets over UDP */
    unsigned first, n;          /* its servers: cfg->servers[first .. first + n) */
    struct ring *ring;
    const struct msg_wire *wire;
    int server_timeout_ms;
    int connect_timeout_ms;
    int tko_timeouts;
    int probe_min_ms, probe_max_ms;
    bool keep_prefix;           /* mcrouter's keep_routing_prefix: its servers get a key
                                   with the routing prefix the client wrote (struct msg's
                                   prefix_len), placed by the key without it */
    uint32_t spool_ops;         /* bit (1 << op): failed ones go to the server's spool
                                   (a handle with one): MSG_DELETE unless "spool" says */
    bool tls;                   /* mcrouter's "use_ssl": its connections speak TLS */
    char *auth;                 /* our "auth": "user password", the token a server with
                                   memcached's -Y wants first; NULL: none */
};

/* The client context of a configuration's TLS pools (tls.c); opt NULL: the defaults. */
struct cl_tls;
struct cl_tls *cl_tls_create(const struct cellar_tls *opt, char *err, size_t cap);
void cl_tls_free(struct cl_tls **t);

struct cellar_config {
    atomic_uint refs;
    struct cl_server *servers;
    unsigned nservers;
    struct cl_pool *pools;
    unsigned npools;
    struct route_set *routes;   /* every route of the tree */
    struct route *root;         /* where requests enter */
    uint64_t host_id;           /* LatestRoute's pick */
    int lease_retry_ms;         /* a waiting lease-get's first backoff */
    int lease_wait_ms;          /* and how long it waits in all */
    int window_init, window_min, window_max;
    int window_bytes;           /* 0: no bound on the replies' bytes in flight */
    bool io_uring;              /* handles drive their sockets through io_uring */
    struct cl_tls *tls;         /* TLS pools' client context (tls.c); NULL: none */
    bool mcrouter;              /* mcrouter's JSON: a server may name port 0 (it fails to
                                   connect; else "bad port", as libmemcached's lists),
                                   and a key hashes only up to "|#|" (cl_hash_key) */
};

/*
 * Adds a pool named name over the server entries (server list syntax,
 * one entry each) with opt's settings (zero fields: defaults).  Returns
 * its index, or -1 with err filled.  For config parsers.
 */
int cl_config_add_pool(struct cellar_config *cfg, const char *name,
                       const char *const *entries, unsigned n,
                       const struct cellar_options *opt, char *err, size_t errlen);

/* The index of the pool named name, or -1. */
static inline int cl_config_find_pool(const struct cellar_config *cfg, const char *name) {
    for (unsigned i = 0; i < cfg->npools; i++)
        if (strcmp(cfg->pools[i].name, name) == 0)
            return (int)i;
    return -1;
}

/*
 * Fills cfg (made empty, with its route set, by the caller) from an
 * mcrouter-format JSON text: pools, then the route tree into cfg->root.
 * opt gives defaults for what the JSON leaves out, routing (NULL: none)
 * the routing prefixes and macro parameters, dir (NULL: the current one)
 * where an @import's relative paths start.  0, or -1 with err saying
 * where and why.  (config_json.c)
 */
int cl_config_json(struct cellar_config *cfg, const char *text,
                   const struct cellar_options *opt, const struct cellar_routing *routing,
                   const char *dir, char *err, size_t errlen);


/* config.c: an empty configuration with opt's defaults (NULL and err when
   refused); its end; a server list's pools and routes into it (< 0 and err
   when refused). */
struct cellar_config *cl_config_new(const struct cellar_options *opt, char *err, size_t errlen);
/* A configuration error's words into err (errlen bytes; none when 0). */
void cl_config_say(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cl_config_free(struct cellar_config *cfg);
int cl_config_list(struct cellar_config *cfg, const char *text, const struct cellar_options *opt,
                   char *err, size_t errlen);

/*
 * How much of a key its server is picked by: mcrouter's configurations
 * stop at "|#|" (so "user:7|#|feed" and "user:7|#|likes" share a server);
 * the others hash it all.
 */
static inline size_t cl_hash_key(const struct cellar_config *cfg, const char *key, size_t nkey) {
    const char *p;
    if (!cfg->mcrouter || (p = memchr(key, '|', nkey)) == NULL)
        return nkey;
    return ring_hash_stop(key, nkey, p);
}

/* The pool's server for key (an index into cfg->servers). */
static inline unsigned cl_pool_pick(const struct cellar_config *cfg, unsigned pool,
                                    const char *key, size_t nkey) {
    const struct cl_pool *pl = &cfg->pools[pool];
    if (pl->n == 1)
        return pl->first;       /* no hash to ask (ring_pick's own shortcut, sooner) */
    return pl->first + ring_pick(pl->ring, key, cl_hash_key(cfg, key, nkey));
}

#endif
