/*
 * auth.h -- memcached's ASCII authentication (-Y FILE) on a cellard
 * connection: nothing but the exchange (protocol/mc_auth.h) until it has
 * passed, against the password file (core/authfile.h), read at start and
 * again at SIGHUP.
 */
#ifndef CELLAR_SERVER_AUTH_H
#define CELLAR_SERVER_AUTH_H

#include <stdbool.h>

#include "core/authfile.h"

struct conn;

/*
 * Runs c's authentication on its unparsed bytes: answers what it can and
 * consumes what it answered, or sets c closing.  Returns false when it
 * needs more bytes; c->authed is set once it passed.
 */
bool auth_step(struct conn *c, struct authfile *a);

#endif
