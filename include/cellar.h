/*
 * cellar.h -- libcellar, the memcache client of "Scaling Memcache at
 * Facebook": many servers used as one cache.
 *
 * A configuration names the servers, grouped in pools, and how keys are
 * placed on them (consistent hashing); it is parsed once, is immutable
 * and may be shared by any number of threads.  A handle (struct cellar)
 * is one thread's client over a configuration: its connections, one per
 * server, opened on first use; its health view of every server; its
 * multi-get window.  A handle belongs to the thread that uses it: calls on
 * one handle from two threads at once are not allowed.  Create one handle
 * per thread from one shared configuration.
 *
 *   struct cellar_config *cfg;
 *   char err[256];
 *   if (cellar_config_parse(&cfg, "10.0.0.1:11211,10.0.0.2:11211", NULL, err, sizeof err))
 *       die(err);
 *   struct cellar *h;
 *   cellar_create(&h, cfg);                 the handle takes its own reference
 *   cellar_config_release(&cfg);
 *   cellar_set(h, "k", 1, "v", 1, 0, 60);
 *   struct cellar_item it;
 *   if (cellar_get(h, "k", 1, &it) == CELLAR_OK) { use it.value, it.nvalue; }
 *   cellar_item_clear(&it);
 *   cellar_destroy(&h);
 *
 * Every call returns an int: CELLAR_OK (0), one of the memcache answers
 * below (positive), or a negative CELLAR_E* error; cellar_strerror() names
 * each.  The calls block until every server involved has answered or its
 * timeout has passed: a request, once sent, waits at most its pool's
 * server_timeout (plus connect_timeout when a connection must be opened).
 * A call takes longer when the window holds some of its requests back,
 * when a route tries servers one after another (failover, warm-up), or
 * while a lease-get waits (lease_wait_ms).
 *
 * Failures.  A server that misses `tko_timeouts` deadlines in a row (a
 * missed deadline counts once, however many requests were pipelined on
 * the connection), or that refuses a connection, is marked down (TKO):
 * requests for it fail at once with CELLAR_EDOWN and go nowhere else
 * unless a route sends them on (a FailoverRoute's next child: the gutter)
 * -- its keys are never rehashed onto the other servers of its pool, so
 * none of them serves stale copies.  While a server is down the handle probes it (connect
 * and `version`) with a backoff from probe_min_ms to probe_max_ms, each
 * time the handle runs (any call, or cellar_poll()); the first probe that
 * succeeds brings it back.
 *
 * Multi-gets.  cellar_mget() sends every key's get at once, one pipeline
 * per server, under a sliding window that bounds the requests in flight
 * over all servers (the paper's incast control): it grows by about one per
 * window's worth of answers and halves when a request times out, between
 * window_min and window_max, and it lets out no more replies' worth of
 * bytes than window_bytes (what a switch port's queue toward the client
 * can hold: 32 of 1 KB, 250 of 100 bytes).  A server that has answered
 * nothing for a tenth of its timeout (at most 20 ms) leaves the window
 * until it answers, so a hung server delays no other server's keys.  Each
 * key gets its own status: a failed server fails only its own keys.
 */
#ifndef CELLAR_H
#define CELLAR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CELLAR_API __attribute__((visibility("default")))
#else
#define CELLAR_API
#endif

#define CELLAR_VERSION "0.1.0"
#define CELLAR_KEY_MAX 250

/* Answers (>= 0) and errors (< 0). */
enum cellar_status {
    CELLAR_OK = 0,              /* hit, stored, deleted, touched, counted, flushed */
    CELLAR_NOT_FOUND = 1,       /* a miss; delete/incr/decr/touch/cas of a missing key */
    CELLAR_NOT_STORED = 2,      /* add of a present key; replace/append/prepend of a missing one */
    CELLAR_EXISTS = 3,          /* cas: the item changed since it was read */
    CELLAR_DROPPED = 4,         /* a get over UDP whose reply was lost, late or out of
                                   order: a miss, but one not to refill (the value is
                                   likely there; the paper's clients skip the fill) */
    CELLAR_EINVAL = -1,         /* a bad argument: a key that is not 1..250 bytes free of
                                   spaces and control bytes, an unknown name */
    CELLAR_ENOMEM = -2,
    CELLAR_ETIMEDOUT = -3,      /* the server did not answer within server_timeout */
    CELLAR_ECONNECT = -4,       /* the connection could not be made (refused, unreachable) */
    CELLAR_ECLOSED = -5,        /* the connection broke before the answer came */
    CELLAR_EDOWN = -6,          /* the server is marked down (TKO); nothing was sent */
    CELLAR_EPROTO = -7,         /* the server's bytes were not an answer to the request */
    CELLAR_ENOTSUP = -8,        /* the pool's protocol cannot carry this request */
    CELLAR_ESERVER = -9,        /* SERVER_ERROR: out of memory, too large, ... */
    CELLAR_ECLIENT = -10,       /* CLIENT_ERROR: the server refused the request (a
                                   non-numeric value for incr, ...) */
    CELLAR_EUNKNOWN = -11,      /* ERROR: the server does not know the command */
    CELLAR_ECONFIG = -12,       /* an invalid configuration */
};

/* A short description of a status, e.g. "server marked down". */
CELLAR_API const char *cellar_strerror(int status);

/* ---------------------------------------------------------------------- */
/* Configuration                                                            */
/* ---------------------------------------------------------------------- */

/*
 * Settings for the pools a configuration defines.  Zero (or NULL) means
 * the default, given after each field.
 */
struct cellar_options {
    const char *protocol;       /* "meta" (memcached 1.6, cellard), "text" (older servers,
                                   twemproxy) or "binary"; default "meta" */
    const char *hash;           /* "ch3" (mcrouter's furc, default), "ketama" (libmemcached
                                   weighted ketama), "modula" (libmemcached's default),
                                   "rendezvous" (pymemcache's HashClient) */
    int server_timeout_ms;      /* an answer's deadline after the request is sent: 1000 */
    int connect_timeout_ms;     /* a connection's deadline: server_timeout_ms */
    int tko_timeouts;           /* deadlines missed in a row that mark a server down: 3 */
    int probe_min_ms;           /* first probe of a down server after: 1000 */
    int probe_max_ms;           /* probes back off (doubling) up to: 60000 */
    int window_init;            /* the window: requests in flight over all servers: 256 */
    int window_min;             /* it never shrinks below: 16 */
    int window_max;             /* nor grows above: 4096 */
    uint64_t host_id;           /* which replica LatestRoute reads first: a hash of the
                                   host name */
    int udp;                    /* 1: gets go over UDP (memcached's frames), everything
                                   else over TCP; a lost, late or out-of-order reply
                                   answers CELLAR_DROPPED: 0 */
    int lease_retry_ms;         /* a lease-get told to wait retries after: 10 (doubling) */
    int lease_wait_ms;          /* and gives up (CELLAR_LEASE_WAIT) after: 1000 */
    const char *io;             /* how a handle drives its TCP connections: "epoll"
                                   (default: send() and recv() when epoll says so) or
                                   "uring" (an io_uring per handle: a receive always
                                   out per connection, a turn's sends in one system
                                   call; epoll where the kernel refuses io_uring) */
    int window_bytes;           /* and the replies' bytes in flight, as the handle
                                   expects them (a running mean of the replies so far,
                                   1 KB before any), at most: 32768 (-1: no bound).
                                   The window is then window_bytes / that mean when
                                   smaller (at least 1): bench/incast */
};

struct cellar_config;

/*
 * Parses a configuration, in one of two forms:
 *
 *  - a server list, as libmemcached's tools take it: entries separated by
 *    commas or spaces, each "host[:port][:weight]" (port 11211 by
 *    default; a weight for ketama), "[v6 address][:port][:weight]", or a
 *    unix socket path ("/path" or "unix:/path").  The list makes one pool
 *    with opt's settings, and every request goes to it.
 *  - mcrouter's JSON (text starts with '{'; comments allowed): "pools",
 *    "route" or "routes", "named_handles", and the route handles the
 *    README lists, with opt's settings as the pools' defaults.
 *
 * opt may be NULL.  Host names are resolved here.  On error *out is NULL,
 * err holds where and why (if errlen > 0), and CELLAR_ECONFIG is returned.
 */
CELLAR_API int cellar_config_parse(struct cellar_config **out, const char *text,
                                   const struct cellar_options *opt, char *err, size_t errlen);

/* The same, from a file. */
CELLAR_API int cellar_config_load(struct cellar_config **out, const char *path,
                                  const struct cellar_options *opt, char *err, size_t errlen);

/*
 * How a JSON configuration's routing prefixes and macros are read
 * (mcrouter's -R, --send-invalid-route-to-default and --config-params);
 * a separate struct, so that struct cellar_options keeps its size.
 */
struct cellar_routing {
    const char *route_prefix;   /* the default route, "/region/cluster/": keys
                                   "/region/cluster/rest" go to the "routes" entry of
                                   that alias (stars match any one part), as rest, and
                                   other keys to this one's.  NULL: a "route" takes keys
                                   as they are, and a "routes" list's first alias is
                                   the default */
    int send_invalid_route_to_default; /* 1: a prefix no alias names goes to the default
                                   route, not answered "SERVER_ERROR RootRoute: No rh
                                   found" */
    const char *config_params;  /* "NAME:VALUE,...": strings the macros see as %NAME% */
    const char *builtin_params; /* a JSON object of the values the macros see as %NAME%
                                   besides, typed (mcrouter's own: router-info-name,
                                   num-proxies); config_params win; NULL: none */
    long big_value_split_threshold; /* > 0: values larger go as pieces under keys of
                                   their own, as mcrouter's BigValueRoute over the
                                   whole tree (mcrouter's --big-value-split-threshold) */
    long big_value_batch_size;  /* of them, the pieces of a request in flight at once
                                   (0: all; mcrouter's --big-value-batch-size) */
    const char *runtime_vars_file; /* mcrouter's runtime variables, a file of a JSON
                                   object ({"name": value}): a shadow's "index_range_rv"
                                   or "key_fraction_range_rv" that names one takes its
                                   value (mcrouter's --runtime-vars-file); NULL: none */
    /* Told what mcrouter's JSON has that is passed over, as mcrouter logs and
       passes it over (a broken shadow), "path: why"; NULL: not told. */
    void (*warn)(void *arg, const char *msg);
    void *warn_arg;
};

/* cellar_config_parse() and _load() with routing settings (NULL: none). */
CELLAR_API int cellar_config_parse_routing(struct cellar_config **out, const char *text,
                                           const struct cellar_options *opt,
                                           const struct cellar_routing *routing, char *err,
                                           size_t errlen);
CELLAR_API int cellar_config_load_routing(struct cellar_config **out, const char *path,
                                          const struct cellar_options *opt,
                                          const struct cellar_routing *routing, char *err,
                                          size_t errlen);

/*
 * TLS toward the servers of the pools that say "use_ssl": true (mcrouter's
 * pool key).  By default a server's certificate must come from one of the
 * system's CAs and name the server as the configuration does (host name
 * or IP address); no client certificate is given.
 */
struct cellar_tls {
    const char *ca_file;        /* PEM file of the CAs a server's certificate may come
                                   from; NULL: the system's */
    const char *cert_file;      /* PEM certificate chain to present; NULL: none */
    const char *key_file;       /* its private key; NULL: in cert_file */
    int no_verify;              /* 1: any certificate, any name (tests only) */
};

/*
 * Sets cfg's TLS settings, before handles are made over it.  CELLAR_OK,
 * or CELLAR_ECONFIG with why in err (a file that cannot be read).
 */
CELLAR_API int cellar_config_tls(struct cellar_config *cfg, const struct cellar_tls *tls,
                                 char *err, size_t errlen);

/* Drops the caller's reference (handles keep their own); NULL is fine. */
CELLAR_API void cellar_config_release(struct cellar_config **cfg);

/* The number of servers, and the name ("host:port" as configured) of each. */
CELLAR_API unsigned cellar_config_servers(const struct cellar_config *cfg);
CELLAR_API const char *cellar_config_server_name(const struct cellar_config *cfg, unsigned i);

/* ---------------------------------------------------------------------- */
/* Handles                                                                  */
/* ---------------------------------------------------------------------- */

struct cellar;

/* A handle over cfg (which it references).  CELLAR_OK or CELLAR_ENOMEM. */
CELLAR_API int cellar_create(struct cellar **out, struct cellar_config *cfg);

/* Closes the handle's connections and frees it; NULL is fine. */
CELLAR_API void cellar_destroy(struct cellar **h);

/*
 * Runs the handle's background work (probes of down servers, answers
 * still on their way) for up to timeout_ms; returns early once nothing is
 * left to do; timeout_ms <= 0: one pass over what is ready and due,
 * without waiting.  A program that calls the handle often needs not call it.
 */
CELLAR_API void cellar_poll(struct cellar *h, int timeout_ms);

/*
 * The handle's most recent failure at a server: its status (0: none yet),
 * the server (an index into the configuration), and words for it: the
 * server's name, then the server's own words for SERVER_ERROR and
 * CLIENT_ERROR, else cellar_strerror()'s.  A failure of the routes
 * themselves (a routing prefix no alias names) has server -1 and the
 * route's words.  Every call's result, and each key's status of a
 * multi-get, says whether a failure happened; this says where and what.
 */
struct cellar_error {
    int status;
    int server;
    char text[192];
};
CELLAR_API void cellar_last_error(const struct cellar *h, struct cellar_error *out);

/*
 * Which server (index into the configuration) a get of key goes to first,
 * following the configuration's routes (the key's server of a pool, the
 * first child of a failover, the child a selector picks for a get, ...).
 * CELLAR_EINVAL for a key memcache cannot carry, CELLAR_ENOTSUP when the
 * routes send it nowhere (NullRoute, a routing prefix no alias names).
 */
CELLAR_API int cellar_server_of(struct cellar *h, const char *key, size_t nkey);

/* Is server i marked down (TKO) in this handle's view? */
CELLAR_API int cellar_server_down(const struct cellar *h, unsigned i);

/* ---------------------------------------------------------------------- */
/* Operations                                                               */
/* ---------------------------------------------------------------------- */

/*
 * A fetched item.  value is the caller's: a copy of the server's bytes
 * (NUL-terminated, from malloc()), which outlives the call and the handle
 * until cellar_item_clear() frees it (and zeroes the item).  Every call
 * that fills an item overwrites it whole: clear an item before giving it
 * to another call, or its old value is lost to the caller (a leak).
 */
struct cellar_item {
    int status;                 /* CELLAR_OK (a hit), CELLAR_NOT_FOUND, or an error */
    char *value;
    size_t nvalue;
    uint32_t flags;
    uint64_t cas;               /* gets, gats: the item's cas */
};

CELLAR_API void cellar_item_clear(struct cellar_item *it);

/* Reads key: CELLAR_OK with *it filled, CELLAR_NOT_FOUND, or an error (it->status says the same). */
CELLAR_API int cellar_get(struct cellar *h, const char *key, size_t nkey, struct cellar_item *it);
CELLAR_API int cellar_gets(struct cellar *h, const char *key, size_t nkey, struct cellar_item *it);
/* Reads key and sets its expiry time. */
CELLAR_API int cellar_gat(struct cellar *h, const char *key, size_t nkey, int64_t exptime,
                          struct cellar_item *it);
CELLAR_API int cellar_gats(struct cellar *h, const char *key, size_t nkey, int64_t exptime,
                           struct cellar_item *it);

/*
 * Reads n keys at once: items[i] answers keys[i]/nkeys[i] (status
 * CELLAR_OK for a hit, CELLAR_NOT_FOUND, or that key's error).  Returns
 * CELLAR_OK, or CELLAR_ENOMEM when it could not start.
 */
CELLAR_API int cellar_mget(struct cellar *h, const char *const *keys, const size_t *nkeys,
                           size_t n, struct cellar_item *items);
/*
 * cellar_mget(), and *nfailed = how many keys failed: answered neither a
 * hit nor a miss (0: every key's server answered).  cellar_last_error()
 * then tells the last of those failures.
 */
CELLAR_API int cellar_mget_failures(struct cellar *h, const char *const *keys,
                                    const size_t *nkeys, size_t n, struct cellar_item *items,
                                    size_t *nfailed);

/*
 * Stores.  exptime as memcached reads it: 0 never, up to 30 days a
 * relative time in seconds, else a unix time; negative: expired at once.
 * Returns CELLAR_OK, CELLAR_NOT_STORED, CELLAR_EXISTS / CELLAR_NOT_FOUND
 * (cas), or an error.  append/prepend keep the item's flags and expiry.
 */
CELLAR_API int cellar_set(struct cellar *h, const char *key, size_t nkey, const void *value,
                          size_t nvalue, uint32_t flags, int64_t exptime);
CELLAR_API int cellar_add(struct cellar *h, const char *key, size_t nkey, const void *value,
                          size_t nvalue, uint32_t flags, int64_t exptime);
CELLAR_API int cellar_replace(struct cellar *h, const char *key, size_t nkey, const void *value,
                              size_t nvalue, uint32_t flags, int64_t exptime);
CELLAR_API int cellar_append(struct cellar *h, const char *key, size_t nkey, const void *value,
                             size_t nvalue);
CELLAR_API int cellar_prepend(struct cellar *h, const char *key, size_t nkey, const void *value,
                              size_t nvalue);
CELLAR_API int cellar_cas(struct cellar *h, const char *key, size_t nkey, const void *value,
                          size_t nvalue, uint32_t flags, int64_t exptime, uint64_t cas);

/* CELLAR_OK or CELLAR_NOT_FOUND (or an error). */
CELLAR_API int cellar_delete(struct cellar *h, const char *key, size_t nkey);
/*
 * Deletes n keys at once, pipelined per server under the window:
 * statuses[i] answers keys[i]/nkeys[i] (CELLAR_OK, CELLAR_NOT_FOUND, or
 * that key's error).  Returns CELLAR_OK, or CELLAR_ENOMEM when it could
 * not start.
 */
CELLAR_API int cellar_mdelete(struct cellar *h, const char *const *keys, const size_t *nkeys,
                              size_t n, int *statuses);

/*
 * Sets n keys at once, pipelined per server under the window, as
 * cellar_mdelete() deletes: values[i]/nvalues[i] with the same flags and
 * exptime for all; statuses[i] answers keys[i] (CELLAR_OK or that key's
 * error).  Returns CELLAR_OK, or CELLAR_ENOMEM when it could not start.
 */
CELLAR_API int cellar_mset(struct cellar *h, const char *const *keys, const size_t *nkeys,
                           const void *const *values, const size_t *nvalues, size_t n,
                           uint32_t flags, int64_t exptime, int *statuses);
CELLAR_API int cellar_touch(struct cellar *h, const char *key, size_t nkey, int64_t exptime);

/* Adds (subtracts, stopping at 0) delta; *value (may be NULL) gets the result. */
CELLAR_API int cellar_incr(struct cellar *h, const char *key, size_t nkey, uint64_t delta,
                           uint64_t *value);
CELLAR_API int cellar_decr(struct cellar *h, const char *key, size_t nkey, uint64_t delta,
                           uint64_t *value);

/*
 * Sends flush_all (with a delay, 0 for now) to every server.  Returns
 * CELLAR_OK when all of them answered OK, else the first error.
 */
CELLAR_API int cellar_flush_all(struct cellar *h, int64_t delay);

/*
 * Asks server i for its version: CELLAR_OK and the text in buf (always
 * NUL-terminated when cap > 0), or an error.
 */
CELLAR_API int cellar_version(struct cellar *h, unsigned i, char *buf, size_t cap);

/* ---------------------------------------------------------------------- */
/* Leases (the paper's section 3.2.1; meta protocol pools only)             */
/* ---------------------------------------------------------------------- */

/*
 * A read that, on a miss, hands out the right to fill the key: one client
 * fills while the others wait a moment and then read what it stored, so a
 * hot key that goes missing costs the database one query, not hundreds;
 * and a fill computed before a delete of the key cannot be stored after
 * it (the delete voids the lease).  Built on meta's mg N (vivify), W, Z,
 * X and ms C.
 */
enum cellar_lease_state {
    CELLAR_LEASE_HIT = 0,       /* a fresh value */
    CELLAR_LEASE_WIN,           /* a miss, or a stale value (it->value holds it): this
                                   caller fills the key, with cellar_lease_set(token) */
    CELLAR_LEASE_STALE,         /* a value invalidated since it was stored, another
                                   client is refilling it: use it or wait */
    CELLAR_LEASE_WAIT,          /* another client holds the lease and nothing was stored
                                   within lease_wait_ms */
};

struct cellar_lease {
    int state;                  /* enum cellar_lease_state */
    uint64_t token;             /* WIN: pass to cellar_lease_set() */
    int stale;                  /* the value in the item was invalidated */
};

/*
 * Reads key or leases it for lease_ttl seconds (how long the winner has
 * to fill it; > 0).  While another client holds the lease it retries,
 * backing off from lease_retry_ms, up to lease_wait_ms.  Returns CELLAR_OK
 * with *lease (and *it for HIT, STALE and a stale WIN), or an error
 * (CELLAR_ENOTSUP for a pool that does not speak meta).
 */
CELLAR_API int cellar_lease_get(struct cellar *h, const char *key, size_t nkey, int lease_ttl,
                                struct cellar_item *it, struct cellar_lease *lease);

/*
 * Fills a leased key: stored (CELLAR_OK) only while token is still the
 * key's lease; CELLAR_EXISTS or CELLAR_NOT_FOUND when a delete, an
 * invalidation or another store came in between.
 */
CELLAR_API int cellar_lease_set(struct cellar *h, const char *key, size_t nkey,
                                const void *value, size_t nvalue, uint32_t flags,
                                int64_t exptime, uint64_t token);

/* ---------------------------------------------------------------------- */
/* Remote markers (the paper's section 5: writes from a replica region)     */
/* ---------------------------------------------------------------------- */

/*
 * A web server in a region whose database is a replica writes through the
 * master region, and its own region's replica lags.  Before such a write
 * it marks the key (cellar_remote_mark: sets CELLAR_REMOTE_MARKER + key in
 * its regional pool, for ttl seconds); the write's invalidation
 * (cellar-squeal with --markers) deletes both the key and its marker once
 * the replica has the change.  A reader that misses the key asks
 * cellar_get_marked(): when the marker is there, the replica may be stale
 * for this key and the reader should go to the master database.  Keys
 * longer than CELLAR_KEY_MAX - 2 cannot be marked (CELLAR_EINVAL).
 */
#define CELLAR_REMOTE_MARKER "r:"

CELLAR_API int cellar_remote_mark(struct cellar *h, const char *key, size_t nkey, int ttl);
/*
 * Reads key and its marker in one multi-get: the key's status and item as
 * cellar_get() gives them, *marked 1 when the marker is set, else 0.
 */
CELLAR_API int cellar_get_marked(struct cellar *h, const char *key, size_t nkey,
                                 struct cellar_item *it, int *marked);

/* ---------------------------------------------------------------------- */
/* Single-flight (the cache-algorithm paper's "flying")                     */
/* ---------------------------------------------------------------------- */

/*
 * A group shared by threads (thread-safe): concurrent reads of one key
 * through cellar_get_flight() on any of the group's threads make one
 * request to the servers; the others wait for its answer and get a copy.
 */
struct cellar_flight;

CELLAR_API int cellar_flight_create(struct cellar_flight **out);
/* Call once no thread uses the group any more; NULL is fine. */
CELLAR_API void cellar_flight_destroy(struct cellar_flight **g);

/* cellar_get(), joining a read of the same key already under way in g. */
CELLAR_API int cellar_get_flight(struct cellar *h, struct cellar_flight *g, const char *key,
                                 size_t nkey, struct cellar_item *it);

/* ---------------------------------------------------------------------- */
/* Near-cache                                                               */
/* ---------------------------------------------------------------------- */

/*
 * An in-process cache in front of the servers, shared by any handles on
 * any threads: at most `bytes` of items (the project's storage engine, an
 * eviction policy: "s3fifo" when policy is NULL), each kept at most ttl_s
 * seconds.  A value read through it may be up to ttl_s (+1) seconds older
 * than the servers' copy; a handle's own writes drop the key from it
 * first, so a handle always reads its own writes.  Only cellar_get() and
 * cellar_mget() read it.  CELLAR_EINVAL for bytes < 128 KiB, ttl_s <= 0 or
 * an unknown policy.
 */
struct cellar_near;

CELLAR_API int cellar_near_create(struct cellar_near **out, size_t bytes, int ttl_s,
                                  const char *policy);
/* Call once no handle uses it any more; NULL is fine. */
CELLAR_API void cellar_near_destroy(struct cellar_near **n);
/* Puts n in front of h's servers (NULL: none). */
CELLAR_API void cellar_use_near(struct cellar *h, struct cellar_near *n);

/*
 * Reliable deletes (mcrouter's asynclog, with a replayer): a delete that
 * a server cannot take -- a timeout, a refused or broken connection, the
 * server marked down, a SERVER_ERROR -- is appended to that server's file
 * in dir (written before the caller hears, fdatasync'd within 50 ms,
 * at most max_bytes per server, 0: CELLAR_SPOOL_MAX_BYTES) and the caller
 * is answered as mcrouter answers a logged delete: CELLAR_NOT_FOUND.  A
 * pool's "spool" list (JSON) names the operations spooled so instead of
 * deletes alone (a spooled write is answered CELLAR_NOT_STORED); "spool":
 * [] spools nothing.  Whichever handle using the spool finds the server
 * answering again replays its records in order, pipelined, while it
 * runs (any call, cellar_poll(), or the async loop); files left by an
 * earlier process are replayed too.  A record is dropped (counted) when
 * the server's file is full.  A replayed delete may land after a newer
 * set of its key: a later miss, never a stale value.
 *
 * Shared by any number of handles on any threads; give it to a handle
 * before its first request, and close it once no handle uses it.
 * CELLAR_EINVAL when dir is not a writable directory.
 */
#define CELLAR_SPOOL_MAX_BYTES (64u * 1024 * 1024)

struct cellar_spool;

struct cellar_spool_stats {
    uint64_t depth;             /* records waiting to be replayed */
    uint64_t bytes;             /* and their bytes */
    uint64_t servers;           /* servers with records waiting */
    uint64_t appended;          /* records written since open */
    uint64_t replayed;          /* records the server answered on replay */
    uint64_t dropped;           /* requests not spooled: a full file, a failed write */
    uint64_t replay_errors;     /* replayed records answered with an error (passed) */
};

CELLAR_API int cellar_spool_open(struct cellar_spool **out, const char *dir,
                                 uint64_t max_bytes);
CELLAR_API void cellar_spool_close(struct cellar_spool **sp);
CELLAR_API void cellar_use_spool(struct cellar *h, struct cellar_spool *sp);
/* Makes every record written so far durable now (fdatasync): 0, or -1 when one could not be. */
CELLAR_API int cellar_spool_sync(struct cellar_spool *sp);
/* Its counters, for one server (its name as configured) or, server NULL, all. */
CELLAR_API void cellar_spool_stats(struct cellar_spool *sp, const char *server,
                                   struct cellar_spool_stats *out);

/*
 * A raw meta command (meta pools): cmd 'g', 's', 'd' or 'a' for mg, ms,
 * md, ma, with flags as the protocol writes them ("v t f", "T30 F5 I",
 * ...; no q: every command is answered), value for ms.  *out gets the
 * two-letter code, the return flags as text and the value (VA), the
 * caller's to free with cellar_meta_reply_clear().  Returns CELLAR_OK
 * (HD, VA, MN), CELLAR_NOT_FOUND (EN, NF), CELLAR_NOT_STORED (NS),
 * CELLAR_EXISTS (EX), or an error (CELLAR_ENOTSUP on text and binary
 * pools; CELLAR_EINVAL for a q flag or another command).
 */
struct cellar_meta_reply {
    int status;
    char code[3];               /* "HD", "VA", "EN", ... ("" on errors) */
    char *flags;                /* the return flags, e.g. "t-1 f0" */
    char *value;                /* VA's data, NUL-terminated */
    size_t nvalue;
};

CELLAR_API int cellar_meta(struct cellar *h, char cmd, const char *key, size_t nkey,
                           const char *flags, const void *value, size_t nvalue,
                           struct cellar_meta_reply *out);
CELLAR_API void cellar_meta_reply_clear(struct cellar_meta_reply *r);

/*
 * Asks server i for `stats [group]` (group NULL or "": the general ones;
 * "settings", "items", "slabs", "sizes", "conns", "reset", "detail dump",
 * ...) over its pool's protocol and calls each(arg, name, value) for every
 * statistic, during the call (the spans are the reply's: copy what you
 * keep).  CELLAR_OK (also for the groups that only act: reset, detail on),
 * CELLAR_EUNKNOWN for a group the server does not know, or an error.
 */
CELLAR_API int cellar_server_stats(struct cellar *h, unsigned i, const char *group,
                                   void (*each)(void *arg, const char *name, size_t nname,
                                                const char *value, size_t nvalue),
                                   void *arg);

/* ---------------------------------------------------------------------- */
/* Handles for threads that come and go                                     */
/* ---------------------------------------------------------------------- */

/*
 * A set of handles over one configuration that threads borrow and give
 * back (libmemcachedutil's memcached_pool), for programs whose threads do
 * not live long enough to own a handle each: a handle keeps its
 * connections open between borrowers.  At most max handles are made, on
 * demand.  A borrowed handle is the borrower's alone until it is given
 * back (the rule of every handle: one thread at a time); give it back with
 * nothing in flight (cellar_pending() == 0).  The set's calls may come
 * from any thread.
 */
struct cellar_handles;

/* CELLAR_OK, CELLAR_EINVAL (max 0), CELLAR_ENOMEM.  The set takes its own reference on cfg. */
CELLAR_API int cellar_handles_create(struct cellar_handles **out, struct cellar_config *cfg,
                                     unsigned max);
/*
 * Lends a handle: an idle one, or a new one while fewer than max exist;
 * else waits up to wait_ms (0: not at all, -1: for ever) for one to be
 * given back.  CELLAR_OK with *h, CELLAR_ETIMEDOUT when none came in
 * time, CELLAR_ENOMEM.
 */
CELLAR_API int cellar_handles_take(struct cellar_handles *p, int wait_ms, struct cellar **h);
/* Gives a handle back (and sets *h to NULL); CELLAR_EINVAL if it is not the set's. */
CELLAR_API int cellar_handles_give(struct cellar_handles *p, struct cellar **h);
/* Destroys the set and its handles; every handle must have been given back.  NULL-safe. */
CELLAR_API void cellar_handles_destroy(struct cellar_handles **p);

/* ---------------------------------------------------------------------- */
/* The asynchronous face                                                    */
/* ---------------------------------------------------------------------- */

/*
 * For a program with an event loop of its own (libuv's caller-driven
 * style).  The handle has one descriptor to watch for reading,
 * cellar_fd().  cellar_submit() takes a request and a callback and
 * returns at once; requests go out, and answers come in, only inside
 * cellar_run(), which the program calls after submitting, whenever the
 * descriptor is readable, and again within the milliseconds cellar_run()
 * returned (timeouts, the window, probes of down servers).  A callback is
 * called exactly once per request accepted, from inside cellar_run() (or
 * cellar_poll(), a blocking call, or cellar_destroy() on the same handle,
 * which run the handle too): never from inside cellar_submit().  The
 * requests share the handle's connections, window and routes with the
 * blocking calls, which are the same requests run until answered.
 *
 *   static void got(void *arg, int status, const struct cellar_reply *r) {
 *       if (status == CELLAR_OK) use(r->value, r->nvalue);
 *   }
 *   struct cellar_request rq = {.op = CELLAR_OP_GET, .key = "k", .nkey = 1};
 *   cellar_submit(h, &rq, got, NULL);
 *   for (int ms; (ms = cellar_run(h)) >= 0;) {   or in the program's own loop
 *       struct pollfd p = {cellar_fd(h), POLLIN, 0};
 *       poll(&p, 1, ms);
 *   }
 */
enum cellar_op {
    CELLAR_OP_GET, CELLAR_OP_GETS, CELLAR_OP_GAT, CELLAR_OP_GATS,
    CELLAR_OP_SET, CELLAR_OP_ADD, CELLAR_OP_REPLACE, CELLAR_OP_APPEND, CELLAR_OP_PREPEND,
    CELLAR_OP_CAS, CELLAR_OP_DELETE, CELLAR_OP_TOUCH, CELLAR_OP_INCR, CELLAR_OP_DECR,
};

/* What to send; read during cellar_submit() only (the key and value are copied). */
struct cellar_request {
    enum cellar_op op;
    const char *key;
    size_t nkey;
    const void *value;          /* the stores */
    size_t nvalue;
    uint32_t flags;             /* the stores */
    int64_t exptime;            /* the stores, touch, gat, gats */
    uint64_t cas;               /* CELLAR_OP_CAS */
    uint64_t delta;             /* incr, decr */
};

/*
 * An answer, readable during the callback only (value points into the
 * connection's buffer: copy what you keep).  value, flags and cas for a
 * get-family hit (cas for gets and gats), number for incr and decr.
 */
struct cellar_reply {
    const char *value;
    size_t nvalue;
    uint32_t flags;
    uint64_t cas;
    uint64_t number;
};

/*
 * status is what the blocking call would return: CELLAR_OK, an answer
 * (CELLAR_NOT_FOUND, ...) or an error.  r is never NULL (all zero when no
 * server answered).
 */
typedef void (*cellar_cb)(void *arg, int status, const struct cellar_reply *r);

/* The descriptor to watch for reading; the same for the handle's life. */
CELLAR_API int cellar_fd(const struct cellar *h);

/*
 * Takes a request down the handle's routes.  CELLAR_OK: cb (if not NULL;
 * NULL: nobody is told, fire and forget) will be called once.
 * CELLAR_EINVAL (a key memcache cannot carry, an op out of range) or
 * CELLAR_ENOMEM, and CELLAR_ECLOSED during cellar_destroy(): not taken,
 * cb is never called.  A write drops the key from the handle's near-cache.
 */
CELLAR_API int cellar_submit(struct cellar *h, const struct cellar_request *rq, cellar_cb cb,
                             void *arg);

/*
 * Reads what has come, answers (the callbacks), writes what the window
 * lets out, and times out what is late; never waits.  Returns the
 * milliseconds within which to call it again even if the descriptor stays
 * quiet, or -1 when nothing is in flight and nothing is due.
 */
CELLAR_API int cellar_run(struct cellar *h);

/* Requests submitted whose callback has not run yet. */
CELLAR_API size_t cellar_pending(const struct cellar *h);

/* ---------------------------------------------------------------------- */
/* Counters                                                                 */
/* ---------------------------------------------------------------------- */

/* What this handle has done since it was created. */
struct cellar_stats {
    uint64_t requests;          /* requests sent to servers */
    uint64_t hits;              /* get-family answers with a value */
    uint64_t misses;            /* get-family answers without one */
    uint64_t timeouts;          /* requests that got no answer in time */
    uint64_t errors;            /* requests that failed otherwise (connection, protocol) */
    uint64_t down_fast_fails;   /* requests failed at once, their server marked down */
    uint64_t tko_events;        /* servers marked down */
    uint64_t revivals;          /* servers brought back by a probe */
    uint64_t probes;            /* probes sent */
    uint64_t connects;          /* connections opened */
    uint64_t near_hits;         /* gets answered by the near-cache */
    uint64_t udp_gets;          /* gets sent over UDP */
    uint64_t udp_drops;         /* of which lost, late or out of order (CELLAR_DROPPED) */
    uint32_t window;            /* the window now (the smaller of the two bounds) */
    uint32_t window_peak;       /* the most requests ever in flight at once */
    uint64_t writes;            /* TCP sends (requests per write = requests / writes) */
    uint64_t udp_sends;         /* UDP request datagrams (gets per datagram =
                                   udp_gets / udp_sends) */
};

CELLAR_API void cellar_stats(const struct cellar *h, struct cellar_stats *out);

#ifdef __cplusplus
}
#endif

#endif
