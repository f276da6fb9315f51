/*
 * hash.h -- hashing of keys.
 *
 * hash_bytes() is a 64-bit hash that reads eight bytes at a time and mixes
 * with multiply-xorshift steps; good enough to spread memcache keys over a
 * power-of-two table, cheap on short keys.  Pure functions, no state.
 *
 * The other two are the hashes other memcache clients place keys with, bit
 * for bit: MurmurHash3's 32-bit variant (pymemcache's rendezvous hashing)
 * Jenkins' one-at-a-time (libmemcached's default key hash), and
 * MurmurHash2's 64-bit variant (mcrouter's furc/ch3 hash).
 */
#ifndef CELLAR_CORE_HASH_H
#define CELLAR_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);

/* MurmurHash3_x86_32 of p[0..n). */
uint32_t hash_murmur3_32(const void *p, size_t n, uint32_t seed);

/* MurmurHash64A of p[0..n), its 8-byte words read little-endian. */
uint64_t hash_murmur64a(const void *p, size_t n, uint64_t seed);

/* One-at-a-time as libmemcached computes it: each byte widened as a signed
   char, so bytes of 0x80 and above differ from the textbook version. */
uint32_t hash_one_at_a_time(const void *p, size_t n);

#endif
