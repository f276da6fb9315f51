/*
 * mc_uri.h -- memcached's URI encoding of a key, as its metadump and
 * watch lines print keys.
 *
 * Letters, digits and "-._~" stay as they are; every other byte becomes
 * %XX in upper-case hex.  A pure function: no allocation, no state, any
 * thread.
 */
#ifndef CELLAR_PROTOCOL_MC_URI_H
#define CELLAR_PROTOCOL_MC_URI_H

/*
 * Writes n bytes at s, encoded, to q, which has room for 3n bytes (no NUL
 * is added).  Returns the end of what it wrote.
 */
char *mc_uri_encode(char *q, const char *s, unsigned n);

#endif
