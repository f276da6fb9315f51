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

/* ---------------------------------------------------------------------- */
/* SpookyHash V2 (Bob Jenkins, public domain): mcrouter's key hash          */
/* ---------------------------------------------------------------------- */

#define SPOOKY_CONST 0xdeadbeefdeadbeefULL
#define SPOOKY_VARS 12
#define SPOOKY_BLOCK (SPOOKY_VARS * 8)          /* 96 */
#define SPOOKY_SHORT (2 * SPOOKY_BLOCK)         /* shorter messages take the short path */

static inline uint64_t rot64(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

/* Little-endian words of s, whatever its alignment. */
static inline uint64_t le64(const unsigned char *s) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--)
        v = v << 8 | s[b];
    return v;
}

static inline uint32_t le32(const unsigned char *s) {
    return (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
}

static void short_mix(uint64_t h[4]) {
    static const int r[12] = {50, 52, 30, 41, 54, 48, 38, 37, 62, 34, 5, 36};
    for (int i = 0; i < 12; i++) {
        int a = (i + 2) & 3, b = (i + 3) & 3, c = i & 3;
        /* h[a] = rot(h[a]); h[a] += h[b]; h[c] ^= h[a], turning through the four */
        h[a] = rot64(h[a], r[i]);
        h[a] += h[b];
        h[c] ^= h[a];
    }
}

static void short_end(uint64_t h[4]) {
    static const int r[11] = {15, 52, 26, 51, 28, 9, 47, 54, 32, 25, 63};
    for (int i = 0; i < 11; i++) {
        int a = (i + 3) & 3, b = (i + 2) & 3;
        /* h[a] ^= h[b]; h[b] = rot(h[b]); h[a] += h[b] */
        h[a] ^= h[b];
        h[b] = rot64(h[b], r[i]);
        h[a] += h[b];
    }
}

static void spooky_short(const unsigned char *s, size_t n, uint64_t *h1, uint64_t *h2) {
    uint64_t h[4] = {*h1, *h2, SPOOKY_CONST, SPOOKY_CONST};
    size_t left = n % 32;
    if (n > 15) {
        const unsigned char *end = s + (n / 32) * 32;
        for (; s < end; s += 32) {
            h[2] += le64(s);
            h[3] += le64(s + 8);
            short_mix(h);
            h[0] += le64(s + 16);
            h[1] += le64(s + 24);
        }
        if (left >= 16) {
            h[2] += le64(s);
            h[3] += le64(s + 8);
            short_mix(h);
            s += 16;
            left -= 16;
        }
    }
    h[3] += (uint64_t)n << 56;
    switch (left) {
    case 15: h[3] += (uint64_t)s[14] << 48; /* fall through */
    case 14: h[3] += (uint64_t)s[13] << 40; /* fall through */
    case 13: h[3] += (uint64_t)s[12] << 32; /* fall through */
    case 12: h[3] += le32(s + 8); h[2] += le64(s); break;
    case 11: h[3] += (uint64_t)s[10] << 16; /* fall through */
    case 10: h[3] += (uint64_t)s[9] << 8;   /* fall through */
    case 9: h[3] += s[8];                    /* fall through */
    case 8: h[2] += le64(s); break;
    case 7: h[2] += (uint64_t)s[6] << 48;   /* fall through */
    case 6: h[2] += (uint64_t)s[5] << 40;   /* fall through */
    case 5: h[2] += (uint64_t)s[4] << 32;   /* fall through */
    case 4: h[2] += le32(s); break;
    case 3: h[2] += (uint64_t)s[2] << 16;   /* fall through */
    case 2: h[2] += (uint64_t)s[1] << 8;    /* fall through */
    case 1: h[2] += s[0]; break;
    case 0: h[2] += SPOOKY_CONST; h[3] += SPOOKY_CONST; break;
    }
    short_end(h);
    *h1 = h[0];
    *h2 = h[1];
}

/* One block of twelve words into the state. */
static void spooky_mix(const unsigned char *d, uint64_t s[SPOOKY_VARS]) {
    static const int r[SPOOKY_VARS] = {11, 32, 43, 31, 17, 28, 39, 57, 55, 54, 22, 46};
    for (int i = 0; i < SPOOKY_VARS; i++) {
        s[i] += le64(d + 8 * i);
        s[(i + 2) % SPOOKY_VARS] ^= s[(i + 10) % SPOOKY_VARS];
        s[(i + 11) % SPOOKY_VARS] ^= s[i];
        s[i] = rot64(s[i], r[i]);
        s[(i + 11) % SPOOKY_VARS] += s[(i + 1) % SPOOKY_VARS];
    }
}

static void spooky_end_partial(uint64_t h[SPOOKY_VARS]) {
    static const int r[SPOOKY_VARS] = {44, 15, 34, 21, 38, 33, 10, 13, 38, 53, 42, 54};
    for (int i = 0; i < SPOOKY_VARS; i++) {
        h[(i + 11) % SPOOKY_VARS] += h[(i + 1) % SPOOKY_VARS];
        h[(i + 2) % SPOOKY_VARS] ^= h[(i + 11) % SPOOKY_VARS];
        h[(i + 1) % SPOOKY_VARS] = rot64(h[(i + 1) % SPOOKY_VARS], r[i]);
    }
}

void hash_spooky128(const void *p, size_t n, uint64_t *h1, uint64_t *h2) {
    const unsigned char *s = p;
    if (n < SPOOKY_SHORT) {
        spooky_short(s, n, h1, h2);
        return;
    }
    uint64_t h[SPOOKY_VARS];
    for (int i = 0; i < SPOOKY_VARS; i += 3) {
        h[i] = *h1;
        h[i + 1] = *h2;
        h[i + 2] = SPOOKY_CONST;
    }
    size_t whole = n / SPOOKY_BLOCK * SPOOKY_BLOCK;
    for (size_t off = 0; off < whole; off += SPOOKY_BLOCK)
        spooky_mix(s + off, h);
    unsigned char last[SPOOKY_BLOCK] = {0};
    size_t left = n - whole;
    memcpy(last, s + whole, left);
    last[SPOOKY_BLOCK - 1] = (unsigned char)left;
    for (int i = 0; i < SPOOKY_VARS; i++)
        h[i] += le64(last + 8 * i);
    for (int k = 0; k < 3; k++)
        spooky_end_partial(h);
    *h1 = h[0];
    *h2 = h[1];
}

uint32_t hash_spooky32(const void *p, size_t n, uint32_t seed) {
    uint64_t h1 = seed, h2 = seed;
    hash_spooky128(p, n, &h1, &h2);
    return (uint32_t)h1;
}

/* ---------------------------------------------------------------------- */
/* CRC-32 (IEEE 802.3, reflected, as zlib's): mcrouter's Crc32 hash          */
/* ---------------------------------------------------------------------- */

uint32_t hash_crc32(const void *p, size_t n) {
    const unsigned char *s = p;
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= s[i];
        for (int b = 0; b < 8; b++)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
    }
    return ~crc;
}
