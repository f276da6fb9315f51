/*
 * route.h -- mcrouter's route handles, in C.
 *
 * A route is a small immutable object with one job -- hash a key over a
 * pool, try children in order until one answers, send to all of them --
 * and routes compose into a tree that a configuration describes.  The
 * same tree runs in libcellar and in cellar-router.  A route never holds
 * per-request state: dispatching a request makes whatever small state the
 * route needs (a struct cl_sub per child request) and frees it when the
 * child is done.
 *
 *   FailoverWithExptimeRoute          (normal, then the gutter pool with
 *     |-- PoolRoute|main               exptime capped at failover_exptime)
 *     `-- PoolRoute|gutter
 *
 * Every route of a configuration lives in its route set, created with the
 * configuration and freed with it; a route may be the child of several
 * (mcrouter's named handles), so routes do not own their children.
 *
 * Threading: the tree is read-only after building and shared by handles
 * on any thread; dispatch runs on the handle's thread.
 */
#ifndef CELLAR_CLIENT_ROUTE_H
#define CELLAR_CLIENT_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/msg.h"

struct cellar;
struct cellar_config;
struct cl_req;

struct route;
struct mc_put;
struct route_walk;

/*
 * A route kind: mcrouter's route handle class.  Each kind is one file,
 * route_<kind>.c, holding its struct (a struct route first, then its own
 * settings), its constructor, these ops, and its JSON builder (a struct
 * route_type, route_build.h), registered in route_types.c.
 */
struct route_ops {
    const char *name;           /* mcrouter's ("PoolRoute", ...) */
    /* Sends q on its way; q->done is called once, now or later. */
    void (*dispatch)(const struct route *r, struct cellar *h, struct cl_req *q);
    /*
     * The server (an index into the configuration's servers) a get of key
     * is sent to first, or -1 when it goes to none (NullRoute, a selector
     * that chooses nothing): cellar_server_of().  Reads nothing but the
     * tree and the configuration.
     */
    int (*server_of)(const struct route *r, const struct cellar_config *cfg, const char *key,
                     size_t nkey);
    /*
     * For a route that only chooses by key (PrefixSelectorRoute): the
     * route a request for key goes on to, or NULL when none; RootRoute
     * reads it to send a request once to each route its prefix reaches.
     * NULL for the other kinds.
     */
    const struct route *(*select)(const struct route *r, const char *key, size_t nkey);
    /*
     * The routes (and servers) below r that a request op for key would
     * reach, each told to w with route_traverse() (mcrouter's traverse):
     * a pool its key's server, a selector its choice; NULL: every child,
     * in order (failover, all, latest).
     */
    void (*traverse)(const struct route *r, const struct cellar_config *cfg, enum msg_op op,
                     const char *key, size_t nkey, struct route_walk *w, unsigned depth);
    /* Writes r's settings after its name, "(main)", "(exptime=10)"; NULL: none. */
    void (*label)(const struct route *r, const struct cellar_config *cfg, struct mc_put *w);
    /*
     * Writes what follows the label when r's children are not a plain
     * "[a,b]" list (the selectors' "{op:route,...}"), calling describe for
     * each child; NULL: the list.
     */
    void (*children)(const struct route *r, const struct cellar_config *cfg, struct mc_put *w,
                     void (*describe)(struct mc_put *w, const struct route *r,
                                      const struct cellar_config *cfg));
    /* Frees what the kind allocated beside the struct; NULL: nothing. */
    void (*release)(struct route *r);
    /*
     * Tells put each of mcrouter's stats the route counts (FailoverRoute's
     * failover_policy_result_error, ...), by mcrouter's name; cellar-router's
     * `stats all` sums them over the routes.  NULL: none.  Any thread.
     */
    void (*counters)(const struct route *r, void (*put)(void *arg, const char *name,
                                                        uint64_t v),
                     void *arg);
};

/* What every route has; a kind's struct starts with it. */
struct route {
    const struct route_ops *ops;
    unsigned id;                /* its place in its route set: 0, 1, ... in the order made */
    struct route **children;    /* in order (each kind says what they mean) */
    unsigned nchildren;
};

/* What route_traverse() tells: each route reached, each server reached. */
struct route_walk {
    void (*route)(struct route_walk *w, const struct route *r, unsigned depth);
    void (*server)(struct route_walk *w, unsigned server, unsigned depth);
};

/*
 * Walks the tree from r as a request op for key would go, telling w of r
 * (at depth) and of what its kind's traverse reaches below it (NULL r:
 * nothing).  Reads nothing but the tree and the configuration.
 */
void route_traverse(const struct route *r, const struct cellar_config *cfg, enum msg_op op,
                    const char *key, size_t nkey, struct route_walk *w, unsigned depth);

/* r's ops->server_of(), or -1 for a NULL route. */
static inline int route_server_of(const struct route *r, const struct cellar_config *cfg,
                                  const char *key, size_t nkey) {
    return r != NULL ? r->ops->server_of(r, cfg, key, nkey) : -1;
}

/* The server_of of a kind whose get goes to its first child (-1: none). */
int route_server_of_first(const struct route *r, const struct cellar_config *cfg,
                          const char *key, size_t nkey);

/* All the routes of one configuration: made together, freed together. */
struct route_set;

struct route_set *route_set_create(void);
void route_set_destroy(struct route_set **rs);

/*
 * A new route of size bytes (the kind's struct; its settings zeroed) with
 * ops and a copy of children, owned by rs; NULL when out of memory.  For
 * the kinds' constructors.
 */
struct route *route_make(struct route_set *rs, const struct route_ops *ops, size_t size,
                         struct route *const *children, unsigned n);

/*
 * The kinds' constructors (each in its route_<kind>.c).  Arrays are
 * copied; children must belong to the same set.  Each returns NULL only
 * when out of memory.
 */
struct route *route_server(struct route_set *rs, unsigned server);
struct route *route_pool(struct route_set *rs, unsigned pool);
/* Children in order until one answers without an error; from the second
 * on, exptime capped at failover_exptime (< 0: no cap, plain FailoverRoute). */
struct route *route_failover(struct route_set *rs, struct route *const *children, unsigned n,
                             int failover_exptime);
struct route *route_miss_failover(struct route_set *rs, struct route *const *children,
                                  unsigned n);
/* Which of the children answers an AllRoute. */
enum route_all_mode {
    ROUTE_ALL_SYNC,             /* AllSyncRoute: the worst answer, after every child */
    ROUTE_ALL_ASYNC,            /* AllAsyncRoute: NullRoute's at once */
    ROUTE_ALL_INITIAL,          /* AllInitialRoute: the first child's */
    ROUTE_ALL_FASTEST,          /* AllFastestRoute: the first that is no error (the
                                   last error when all fail) */
    ROUTE_ALL_MAJORITY,         /* AllMajorityRoute: the status more than half gave,
                                   once they have (else the commonest, the worse among
                                   equals, after all) */
};
struct route *route_all(struct route_set *rs, enum route_all_mode mode,
                        struct route *const *children, unsigned n);
/* One child picked by the handle's host id, then up to failover_count others. */
struct route *route_latest(struct route_set *rs, struct route *const *children, unsigned n,
                           unsigned failover_count);
/* by_op[op] (NULL: dflt; dflt NULL: NullRoute's answer). */
struct route *route_operation_selector(struct route_set *rs,
                                       struct route *const by_op[MSG_OP_COUNT],
                                       struct route *dflt);
/* The longest of prefixes[0..n) that starts the key picks routes[i], else wildcard. */
struct route *route_prefix_selector(struct route_set *rs, const char *const *prefixes,
                                    struct route *const *routes, unsigned n,
                                    struct route *wildcard);
/* Cold filled from warm; adds into cold carry exptime when warm cannot tell
 * the TTL left; deletes reach cold with hold seconds of hold-off (0: none). */
struct route *route_warm_up(struct route_set *rs, struct route *cold, struct route *warm,
                            int exptime, unsigned hold);
struct route *route_null(struct route_set *rs);
/* mcrouter's BigValueRoute (route_big_value.c): values over threshold split into pieces. */
struct route *route_big_value(struct route_set *rs, struct route *target, size_t threshold,
                              unsigned batch, bool hide_flag);
/* mcrouter's MigrateRoute (route_migrate.c): from, then to, from start over interval seconds. */
struct route *route_migrate(struct route_set *rs, struct route *from, struct route *to,
                            int64_t start, int64_t interval);
/* mcrouter's L1L2CacheRoute (route_l1l2.c): gets from l1, then l2, l1 filled from l2. */
struct route *route_l1l2(struct route_set *rs, struct route *l1, struct route *l2,
                         int64_t upgrade_exptime, int64_t ncache_exptime,
                         unsigned ncache_period);
/* Answers every request with status (< 0) and "SERVER_ERROR text" (CLIENT_ERROR for
 * CELLAR_ECLIENT), sending nothing: mcrouter's ErrorRoute. */
struct route *route_error(struct route_set *rs, int status, const char *text, size_t len);
/* target with the exptime of requests that set one made exptime ("set"), or
 * made at most exptime (min; 0 counts as never). */
struct route *route_modify_exptime(struct route_set *rs, struct route *target, int64_t exptime,
                                   bool min);
/*
 * mcrouter's routing prefixes (route_root.c): keys "/region/cluster/rest"
 * go to the routes whose aliases the prefix names (or matches, with
 * stars), as rest; other keys to routes[dflt].  aliases[i] (normalised by
 * route_prefix_norm()) names routes[i]; a route may have several.  With
 * invalid_to_default, a prefix that names no route goes to the default
 * instead of failing.  NULL when out of memory or dflt >= n.
 */
struct route *route_root(struct route_set *rs, const char *const *aliases,
                         struct route *const *routes, unsigned n, unsigned dflt,
                         bool invalid_to_default);
/*
 * A routing prefix as mcrouter writes it, "/region/cluster/" (a missing
 * first or last '/' added), into out; its length, or -1 when it is not of
 * that form or does not fit in cap.
 */
int route_prefix_norm(const char *in, char *out, size_t cap);

/* How many routes the set holds, and route i (ids 0 .. count - 1). */
unsigned route_set_count(const struct route_set *rs);
const struct route *route_set_at(const struct route_set *rs, unsigned i);

/*
 * route_dispatch(r, h, q) (handle_int.h, inline: every kind calls it for
 * its children) dispatches q (q->m, q->done, q->arg set) down the tree
 * from r, counting it in the handle's requests per route.
 */

/*
 * Writes the tree below r as one line into out (for tests and the
 * router's `__mcrouter__.route_handles`-style introspection), e.g.
 * "FailoverRoute(exptime=10)[PoolRoute(main),PoolRoute(gutter)]"; pools
 * and servers are named from the configuration.  Returns its length, or
 * -1 when it did not fit (out then holds the part that did).
 */
int route_describe(const struct route *r, const struct cellar_config *cfg, char *out,
                   size_t cap);
/* r alone, without its children: "PoolRoute(main)", "FailoverRoute(exptime=10)", ...
 * (returns as route_describe()). */
int route_label(const struct route *r, const struct cellar_config *cfg, char *out, size_t cap);

#endif
