/*
 * sasl.h -- memcached's binary-protocol SASL authentication (-S), on
 * Cyrus SASL: the process's setup, and a connection's way through it.
 *
 * A connection of a server started with -S (which speaks binary alone)
 * may send three requests besides VERSION until it has authenticated:
 *
 *   SASL_LIST_MECHS 0x20   -> 00, the mechanisms, space-separated
 *   SASL_AUTH 0x21 key=mechanism value=the client's first response
 *                          -> 00 "Authenticated"
 *                             21 (auth continue) with the server's challenge
 *                             20 "Auth failure."
 *                             04 "Invalid arguments" (a mechanism name over
 *                                32 bytes; the value is skipped)
 *                             82 "Out of memory" (no item for the value)
 *   SASL_STEP 0x22         -> the same, for the next response of an
 *                             exchange SASL_AUTH began (20 without one)
 *   any other request      -> 20 "Auth failure.", then the connection is closed
 *
 * As in memcached, each of the three first makes the connection
 * unauthenticated again (a listing included), `stats` counts every
 * finished exchange in auth_cmds and every failed one in auth_errors too
 * (a challenge answered counts nowhere), and the value is read into a
 * cache item like a set's (memcached's bounds: too large or chained is
 * out of memory).
 *
 * Cyrus SASL is set up once per process (sasl_open(), from main() before
 * any worker runs) with memcached's application name "memcached" and its
 * callbacks: log lines by -v level, the configuration file's folder from
 * SASL_CONF_PATH or memcached's default places, and -- when the
 * environment names one in MEMCACHED_SASL_PWDB -- a plain
 * `user:password` file checked before SASL's own password store.  A
 * connection's exchange is its own (struct sasl_session, hung off struct
 * conn), touched by its worker's thread only; the library is given
 * pthread mutexes for what its connections share.  Blocking: the checks
 * may read files (sasldb, the password file) on the worker's thread, as
 * memcached's do.
 */
#ifndef CELLAR_SERVER_SASL_H
#define CELLAR_SERVER_SASL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "protocol/mc_bin.h"

struct sasl;
struct conn;

/*
 * Sets up Cyrus SASL for the process.  verbose is read at each log line
 * (the server's, changed by `verbosity`).  Returns NULL with memcached's
 * words for why in err ("Error initializing sasl.": no configuration
 * found, among others).  Call once, before the workers start.
 */
struct sasl *sasl_open(const _Atomic int *verbose, char *err, size_t cap);
/* Ends the library's state; every connection's exchange must be gone.  Accepts NULL. */
void sasl_close(struct sasl **s);

/*
 * -S: runs what SASL decides of a binary request that mc_bin_parse()
 * answered res (OK or ERROR) for: a SASL request, or any request before
 * authentication.  Returns true when it answered (and consumed what it
 * needed); false when dispatch goes on as without -S.
 */
bool sasl_bin(struct conn *c, struct mc_bin_req *r, enum mc_parse res);
/* Is c reading the value of a SASL_AUTH or SASL_STEP (CONN_NREAD)? */
bool sasl_reading(const struct conn *c);
/* The value sasl_bin() began reading is in: runs the exchange's step and answers. */
void sasl_nread_done(struct conn *c);
/* c ends: its exchange goes (a no-op without one). */
void sasl_conn_end(struct conn *c);

#endif
