#include "core/hash.h"

#include <string.h>

static inline uint64_t mix(uint64_t h) {
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    return h;
}

/*
 * Reads the key in 8-byte words (memcpy lets the compiler use unaligned
 * loads), folds each into the state with a multiply, and finishes with a
 * full avalanche so that low bits, which pick the bucket, depend on every
 * byte.  The tail is read as one zero-padded word with the length mixed in,
 * so "a" and "a\0" differ.
 */
uint64_t hash_bytes(const void *p, size_t n, uint64_t seed) {
    const unsigned char *s = p;
    uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ mix(w)) * 0x9e3779b97f4a7c15ULL;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ mix(w ^ n)) * 0x9e3779b97f4a7c15ULL;
    return mix(h);
}
