/*
 * mc_auth.h -- memcached's ASCII authentication exchange (-Y), as a codec.
 *
 * Before its first command a client of a server with a password file
 * sends its token as a text set whose key, flags and exptime do not
 * matter and whose value is "user password":
 *
 *   set <any> <any> <any> <n>\r\nuser password\r\n  -> MC_AUTH_TOKEN (the caller checks it
 *                                                    and answers MC_AUTH_OK or _FAILED)
 *   any other line                                -> CLIENT_ERROR unauthenticated
 *   a value that is not two words                 -> CLIENT_ERROR bad authentication token format
 *   a value not ended by \r\n                     -> CLIENT_ERROR bad command line termination
 *   n over 16384                                  -> CLIENT_ERROR auth token too long
 *   2048 bytes and no newline                     -> close
 *
 * Like the other codecs: no allocation, no I/O; the state between calls
 * is struct mc_auth, zeroed for a new connection.
 */
#ifndef CELLAR_PROTOCOL_MC_AUTH_H
#define CELLAR_PROTOCOL_MC_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_text.h"

struct mc_auth {
    uint32_t need;              /* the token's bytes awaited, with its \r\n (0: a line) */
};

enum mc_auth_step {
    MC_AUTH_MORE,               /* more bytes needed (*used may have taken a line) */
    MC_AUTH_ANSWER,             /* answer it with *answer */
    MC_AUTH_TOKEN,              /* check *user and *pass */
    MC_AUTH_CLOSE,              /* junk: close the connection */
};

#define MC_AUTH_OK "STORED\r\n"
#define MC_AUTH_FAILED "CLIENT_ERROR authentication failure\r\n"

/*
 * Reads the next step of the exchange from buf[0..len): *used gets the
 * bytes taken, *answer the line to send (MC_AUTH_ANSWER), *user and *pass
 * spans into buf (MC_AUTH_TOKEN).
 */
enum mc_auth_step mc_auth_parse(struct mc_auth *st, const char *buf, size_t len, size_t *used,
                                struct mc_span *answer, struct mc_span *user,
                                struct mc_span *pass);

struct authfile;

/*
 * mc_auth_parse() with the token checked against table (core/authfile.h):
 * every answer, the token's too (MC_AUTH_OK or _FAILED), comes back as
 * MC_AUTH_ANSWER; *checked says a token was checked, *passed that it was
 * a pair of the table.
 */
enum mc_auth_step mc_auth_step(struct mc_auth *st, const char *buf, size_t len, size_t *used,
                               struct authfile *table, struct mc_span *answer, bool *checked,
                               bool *passed);

#endif
