/*
 * authfile.h -- memcached's password file (-Y): `user:password` lines,
 * read at start and again when asked, checked from any thread.
 *
 * The table is one malloc'd copy of the file with the pairs pointing
 * into it, swapped whole under a mutex when read again; a check takes
 * the mutex for the length of a comparison (authentication is once a
 * connection, not once a request) and compares in time that does not
 * depend on where the bytes differ.
 */
#ifndef CELLAR_CORE_AUTHFILE_H
#define CELLAR_CORE_AUTHFILE_H

#include <stdbool.h>
#include <stddef.h>

struct authfile;

/*
 * The table read from path (each line `user:password`, up to \r, \n or
 * the end; empty lines skipped), or NULL with memcached's words for why in
 * err (a line without ':' is malformed).
 */
struct authfile *authfile_open(const char *path, char *err, size_t cap);
/* Reads the file again; on failure keeps the table and says why in err (false). */
bool authfile_reload(struct authfile *a, char *err, size_t cap);
void authfile_free(struct authfile **a);
/* Is user/pass a pair of the table?  Any thread. */
bool authfile_check(struct authfile *a, const char *user, size_t nuser, const char *pass,
                    size_t npass);

#endif
