/*
 * md5.c -- MD5 as RFC 1321 specifies it: 64-byte blocks, four rounds of
 * sixteen steps, little-endian words, the length in bits appended.
 */
#include "core/md5.h"

#include <string.h>

static uint32_t rotl(uint32_t x, unsigned c) { return (x << c) | (x >> (32 - c)); }

static uint32_t load_le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Per step: the shift, and the constant floor(abs(sin(i + 1)) * 2^32). */
static const uint8_t shift[64] = {
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
    5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};
static const uint32_t sine[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613,
    0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193,
    0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d,
    0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
    0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
    0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
    0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244,
    0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
    0xeb86d391,
};

/*
 * One step: a gets b + ((a + f + sine[i] + m[g]) <<< shift[i]), and the
 * four words turn (d, a, b, c).  Each round is a loop of 16 that gcc
 * unrolls, so the shifts, constants and word indices are immediates (the
 * rolled loop took ~2x the time: the ketama client hashes every key).
 */
#define MD5_STEP(fexpr, g)                                              \
    do {                                                                \
        uint32_t f_ = (fexpr), t_ = d;                                  \
        d = c;                                                          \
        c = b;                                                          \
        b = b + rotl(a + f_ + sine[i] + m[(g)], shift[i]);              \
        a = t_;                                                         \
    } while (0)

static void block(uint32_t h[4], const uint8_t *p) {
    uint32_t m[16];
    for (int i = 0; i < 16; i++)
        m[i] = load_le(p + 4 * i);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        MD5_STEP(d ^ (b & (c ^ d)), i);                 /* (b & c) | (~b & d) */
#pragma GCC unroll 16
    for (int i = 16; i < 32; i++)
        MD5_STEP(c ^ (d & (b ^ c)), (5 * i + 1) % 16);  /* (d & b) | (~d & c) */
#pragma GCC unroll 16
    for (int i = 32; i < 48; i++)
        MD5_STEP(b ^ c ^ d, (3 * i + 5) % 16);
#pragma GCC unroll 16
    for (int i = 48; i < 64; i++)
        MD5_STEP(c ^ (b | ~d), (7 * i) % 16);
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
}

void md5(const void *data, size_t n, uint8_t out[16]) {
    uint32_t h[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    const uint8_t *p = data;
    size_t left = n;
    for (; left >= 64; left -= 64, p += 64)
        block(h, p);
    /* The tail, a 1 bit, zeros, and the length in bits: one or two blocks. */
    uint8_t tail[128] = {0};
    memcpy(tail, p, left);
    tail[left] = 0x80;
    size_t len = left < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        tail[len - 8 + i] = (uint8_t)(bits >> (8 * i));
    block(h, tail);
    if (len == 128)
        block(h, tail + 64);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(h[i] >> (8 * j));
}
