/*
 * auth.h -- memcached's ASCII authentication (-Y FILE): the file of
 * `user:password` lines, and a connection's way through it.
 *
 * A connection of a server started with -Y answers nothing but its
 * authentication until it has passed it.  As memcached, the token comes
 * as a text set whose key, flags and exptime do not matter and whose
 * value is "user password":
 *
 *   set <any> <any> <any> <n>\r\nuser password\r\n   -> STORED
 *                                                  or CLIENT_ERROR authentication failure
 *   any other line                                 -> CLIENT_ERROR unauthenticated
 *   a value that is not two words                  -> CLIENT_ERROR bad authentication token format
 *   a value not ended by \r\n                      -> CLIENT_ERROR bad command line termination
 *   n over 16384                                   -> CLIENT_ERROR auth token too long
 *   2048 bytes and no newline                      -> closed
 *
 * The file is read at start (a bad one stops the server, as memcached's)
 * and again at SIGHUP (a bad one then keeps the old table, said on
 * stderr).  Storage-free: this knows no engine and no socket.
 */
#ifndef CELLAR_SERVER_AUTH_H
#define CELLAR_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>

struct auth;
struct conn;

/* The table read from path, or NULL with memcached's words for why in err. */
struct auth *auth_open(const char *path, char *err, size_t cap);
/* Reads the file again; on failure keeps the table and says why in err (false). */
bool auth_reload(struct auth *a, char *err, size_t cap);
void auth_free(struct auth **a);
/* Is user/pass a pair of the table?  Compares in time that does not depend on where
   they differ.  Any thread. */
bool auth_check(struct auth *a, const char *user, size_t nuser, const char *pass,
                size_t npass);

/*
 * Runs c's authentication on its unparsed bytes: answers what it can and
 * consumes what it answered, or sets c closing.  Returns false when it
 * needs more bytes; c->authed is set once it passed.
 */
bool auth_step(struct conn *c, struct auth *a);

#endif
