#include "core/hash.h"

#include <string.h>

#define K1 0x9e3779b97f4a7c15ULL
#define K2 0xd6e8feb86659fd93ULL

/* Full avalanche: every input bit reaches every output bit. */
static inline uint64_t finish(uint64_t h) {
    h ^= h >> 32;
    h *= K2;
    h ^= h >> 32;
    h *= K2;
    h ^= h >> 32;
    return h;
}

/*
 * The last n < 8 bytes at s as one little-endian word, zero-padded, read
 * without a call to memcpy and without touching a byte past s + n: two
 * overlapping 4-byte loads for 4..7 bytes, three single bytes for 1..3
 * (the overlaps put the same byte in the same place twice).
 */
static inline uint64_t tail_word(const unsigned char *s, size_t n) {
    if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, s, 4);
        memcpy(&hi, s + n - 4, 4);
        return (uint64_t)lo | (uint64_t)hi << (8 * (n - 4));
    }
    if (n == 0)
        return 0;
    return (uint64_t)s[0] | (uint64_t)s[n / 2] << (8 * (n / 2)) | (uint64_t)s[n - 1] << (8 * (n - 1));
}

/*
 * Reads the key in 8-byte words (memcpy lets the compiler use unaligned
 * loads) and folds each into the state with one multiply and a shift;
 * the words are mixed cheaply because the finish step avalanches the
 * state fully, so that the low bits, which pick the bucket, depend on
 * every byte.  The tail is read as one zero-padded word and the length is
 * mixed in, so "a" and "a\0" differ.  A memcache key of 16 to 40 bytes
 * costs two to five rounds plus the finish.
 */
uint64_t hash_bytes(const void *p, size_t n, uint64_t seed) {
    const unsigned char *s = p;
    uint64_t h = seed ^ (n * K1);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * K1;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    h = (h ^ tail_word(s, n) ^ ((uint64_t)n << 56)) * K2;
    return finish(h);
}
