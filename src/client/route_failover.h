/*
 * route_failover.h -- what route_failover.c (the routes that try children
 * one after another, and their requests' walk) and route_failover_json.c
 * (their JSON: failover_errors, failover_limit, failover_policy,
 * enable_lease_pairing, the kinds' builders) share: the routes' struct.
 */
#ifndef CELLAR_CLIENT_ROUTE_FAILOVER_H
#define CELLAR_CLIENT_ROUTE_FAILOVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/route.h"

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

/*
 * mcrouter's failover stats, as FailoverRoute counts them: errors met on
 * the way (the last child's answer is not looked at), by whether the
 * server was marked down; DeterministicOrderPolicy's picks of a child
 * already asked (or of a failed domain); walks that ended on an error;
 * failovers the limit refused.  Summed over routes by `stats all`.
 */
enum { FS_RESULT_ERROR, FS_TKO_ERROR, FS_COLLISIONS, FS_DOMAIN_COLLISIONS, FS_ALL_FAILED,
       FS_RATE_LIMITED, FS_COUNT };

/*
 * mcrouter's DeterministicOrderPolicy: the first child, then children
 * picked by a hash of the key and a salt counting up ("2", "3", ...),
 * each picked child asked once (a pick of one already asked, or of the
 * child the first one's pool chose, is a collision and is picked again),
 * up to max_tries children in all, and no more than max_error_tries that
 * answered with an error other than a server marked down.  With
 * enable_failure_domains, a pick in the failure domain of a server found
 * marked down is picked again too.
 */
struct det {
    unsigned max_error_tries;
    unsigned exclude;           /* error bits (error_bit()) that do not count as tries */
    bool domains;               /* enable_failure_domains */
    bool ignore_normal;         /* ignore_normal_reply_index */
    struct ring *ring;          /* Ch3 or WeightedCh3 over the children's places */
    _Atomic uint32_t *domain_of; /* each child's failure domain as learnt (0: not yet) */
};

/*
 * mcrouter's enable_lease_pairing: a lease won through a later child (or a
 * token that looks like one of these) is handed out as a token of the
 * route's own, PAIR_MAGIC in its top half, so that the lease-set goes back
 * to that child with the token it gave; any other lease-set goes to the
 * first child only.  The last PAIR_SLOTS such leases are kept, each for
 * PAIR_TTL_S seconds (a lease of mcrouter's lasts 10).  Shared by the
 * handles of every thread; a reload starts a new table.
 */
#define PAIR_MAGIC 0x7aceb00cull
#define PAIR_SLOTS 4096
#define PAIR_TTL_S 10

struct pairs {
    pthread_mutex_t mu;
    uint32_t next;              /* the low half of the next token handed out */
    struct pair {
        uint64_t ours, token;   /* handed out; the child's */
        unsigned child;
        int64_t until;          /* unix seconds */
    } slot[PAIR_SLOTS];
};

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
    bool counts;                /* FailoverRoute's kinds: mcrouter's failover stats */
    unsigned errors[FO_CLASSES];
    struct det *det;            /* DeterministicOrderPolicy, or NULL */
    struct pairs *pairs;        /* enable_lease_pairing, or NULL */
    _Atomic uint64_t stat[FS_COUNT];
};

#endif
