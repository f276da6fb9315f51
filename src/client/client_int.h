/*
 * client_int.h -- libcellar's insides: configuration, requests,
 * connections and the handle that drives them.
 *
 *   cellar_get()/cellar_mget()/...  (client.c: the blocking calls)
 *        |  one struct cl_req per key, done() called once each
 *        v
 *   pool: ring_pick(key) -> server i -> the handle's conns[i]   (config.c)
 *        |
 *        v
 *   conn (conn.c): waiting --pump, under the window--> sent --reply--> done
 *        |  one socket per server; replies match requests by order
 *        v
 *   the wire (protocol/msg_*.c): struct msg <-> bytes
 *
 * The configuration (servers, pools, rings) is immutable once parsed and
 * shared between handles; everything else belongs to one handle, and so
 * to one thread.  A request is the caller's memory: the handle points to
 * it from the moment it is submitted until its done() has been called,
 * never after.
 *
 * The parts have their own headers, each including the one before:
 * config_int.h (the configuration), conn_int.h (a server's connection:
 * conn.c, udp.c, server.c, spool.c), handle_int.h (the handle: client.c,
 * async.c, window.c, uring.c, near.c).  A file includes the part it needs;
 * this header adds the requests' helpers below and includes all three.
 * What cellar-router may use is route_api.h, never these.
 */
#ifndef CELLAR_CLIENT_INT_H
#define CELLAR_CLIENT_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cellar.h"
#include "client/config_int.h"
#include "client/route.h"
#include "client/route_api.h"
#include "core/clock.h"
#include "protocol/msg.h"

/* ---------------------------------------------------------------------- */
/* Requests                                                                 */
/* ---------------------------------------------------------------------- */


/* The status a reply maps to (CELLAR_OK, CELLAR_NOT_FOUND, ..., CELLAR_E*). */
int cl_status_of(const struct msg_reply *r);

/* Does op carry an exptime that sets an item's (storage, touch, gat, gats)? */
static inline bool cl_op_sets_exptime(enum msg_op op) {
    return msg_op_stores(op) || op == MSG_TOUCH || op == MSG_GAT || op == MSG_GATS;
}

/*
 * Is status a failure another server might not have: timeouts, refused or
 * broken connections, a server marked down, a garbled reply, a
 * SERVER_ERROR?  (A bad argument or a CLIENT_ERROR would fail anywhere.)
 */
static inline bool cl_failover_error(int status) {
    return status == CELLAR_ETIMEDOUT || status == CELLAR_ECONNECT || status == CELLAR_ECLOSED ||
           status == CELLAR_EDOWN || status == CELLAR_EPROTO || status == CELLAR_ESERVER;
}

/*
 * exptime capped at cap seconds from now (mcrouter's ModifyExptimeRoute
 * "min"): 0 (never) and anything later become cap; a negative exptime
 * (already expired) stays.  A unix time is compared as what is left of it.
 */
int64_t cl_cap_exptime(int64_t exptime, int cap);

/*
 * Sends q to each of children[0..n) at once, answering as an AllRoute of
 * mode does (route_all.c); children may be a caller's array, read only
 * during the call.
 */
void cl_all_dispatch(struct cellar *h, struct cl_req *q, struct route *const *children,
                     unsigned n, enum route_all_mode mode);

/* A pseudo-random 32 bits from the calling thread's own xorshift (routes' picks, not secrets). */
static inline uint32_t cl_random32(void) {
    static _Thread_local uint64_t x;
    if (x == 0)
        x = (uint64_t)(uintptr_t)&x ^ 0x9e3779b97f4a7c15ULL;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return (uint32_t)(x >> 32);
}

/* Answers q as NullRoute does: get -> miss, storage -> not stored, else not found. */
void cl_answer_null(struct cl_req *q);
/*
 * A copy of rep into *out whose value and message point into one malloc'd
 * block, *buf (the caller's to free): for a route that answers with a
 * reply after the connection's buffer has moved on.  False when out of
 * memory (*buf NULL, *out untouched).
 */
bool cl_reply_copy(const struct msg_reply *rep, struct msg_reply *out, char **buf);
/* Answers q with status (< 0) and the reply "SERVER_ERROR why" ("CLIENT_ERROR why"
 * for CELLAR_ECLIENT): a route's own error, which cellar_last_error() tells too,
 * with no server. */
void cl_answer_error(struct cellar *h, struct cl_req *q, int status, const char *why,
                     size_t nwhy);

#include "client/conn_int.h"       /* the parts that need the requests' helpers */
#include "client/handle_int.h"

#endif
