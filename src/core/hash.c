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

static inline uint32_t rotl32(uint32_t x, unsigned r) { return (x << r) | (x >> (32 - r)); }

/* Austin Appleby's MurmurHash3_x86_32: 4-byte little-endian blocks, the tail, fmix32. */
uint32_t hash_murmur3_32(const void *p, size_t n, uint32_t seed) {
    const unsigned char *s = p;
    const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
    uint32_t h = seed;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint32_t k = (uint32_t)s[i] | (uint32_t)s[i + 1] << 8 | (uint32_t)s[i + 2] << 16 |
                     (uint32_t)s[i + 3] << 24;
        k = rotl32(k * c1, 15) * c2;
        h = rotl32(h ^ k, 13) * 5 + 0xe6546b64;
    }
    uint32_t k = 0;
    switch (n & 3) {
    case 3: k |= (uint32_t)s[i + 2] << 16; /* fall through */
    case 2: k |= (uint32_t)s[i + 1] << 8;  /* fall through */
    case 1:
        k |= s[i];
        h ^= rotl32(k * c1, 15) * c2;
    }
    h ^= (uint32_t)n;
    h ^= h >> 16;
    h *= 0x85ebca6b;
    h ^= h >> 13;
    h *= 0xc2b2ae35;
    h ^= h >> 16;
    return h;
}

uint32_t hash_one_at_a_time(const void *p, size_t n) {
    const signed char *s = p;
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++) {
        h += (uint32_t)(int32_t)s[i];
        h += h << 10;
        h ^= h >> 6;
    }
    h += h << 3;
    h ^= h >> 11;
    h += h << 15;
    return h;
}

/* Austin Appleby's MurmurHash64A (MurmurHash2, 64-bit). */
uint64_t hash_murmur64a(const void *p, size_t n, uint64_t seed) {
    const unsigned char *s = p;
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    uint64_t h = seed ^ (n * m);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t k = 0;
        for (int b = 7; b >= 0; b--)
            k = k << 8 | s[i + (size_t)b];
        k *= m;
        k ^= k >> 47;
        k *= m;
        h = (h ^ k) * m;
    }
    if (n & 7) {
        for (size_t b = n & 7; b-- > 0;)
            h ^= (uint64_t)s[i + b] << (8 * b);
        h *= m;
    }
    h ^= h >> 47;
    h *= m;
    h ^= h >> 47;
    return h;
}
