/*
 * md5.h -- MD5 (RFC 1321), for the hashes other memcache clients place
 * keys with (libmemcached's and twemproxy's ketama, the md5 key hash).
 * Not for anything that needs a secure digest.  Pure, no allocation.
 */
#ifndef CELLAR_CORE_MD5_H
#define CELLAR_CORE_MD5_H

#include <stddef.h>
#include <stdint.h>

/* The 16-byte digest of p[0..n). */
void md5(const void *p, size_t n, uint8_t out[16]);

#endif
