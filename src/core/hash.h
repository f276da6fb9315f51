/*
 * hash.h -- hashing of keys.
 *
 * hash_bytes() is a 64-bit hash that reads eight bytes at a time and mixes
 * with multiply-xorshift steps; good enough to spread memcache keys over a
 * power-of-two table, cheap on short keys.  Pure functions, no state.
 */
#ifndef CELLAR_CORE_HASH_H
#define CELLAR_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);

#endif
