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

/* ---------------------------------------------------------------------- */
/* CRC-32C (Castagnoli, reflected): the flash tier's record checksum        */
/* ---------------------------------------------------------------------- */

/* The byte-at-a-time table of the reflected polynomial 0x82f63b78. */
static const uint32_t crc32c_table[256] = {
    0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4, 0xc79a971f, 0x35f1141c,
    0x26a1e7e8, 0xd4ca64eb, 0x8ad958cf, 0x78b2dbcc, 0x6be22838, 0x9989ab3b,
    0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24, 0x105ec76f, 0xe235446c,
    0xf165b798, 0x030e349b, 0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384,
    0x9a879fa0, 0x68ec1ca3, 0x7bbcef57, 0x89d76c54, 0x5d1d08bf, 0xaf768bbc,
    0xbc267848, 0x4e4dfb4b, 0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
    0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35, 0xaa64d611, 0x580f5512,
    0x4b5fa6e6, 0xb93425e5, 0x6dfe410e, 0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa,
    0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45, 0xf779deae, 0x05125dad,
    0x1642ae59, 0xe4292d5a, 0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a,
    0x7da08661, 0x8fcb0562, 0x9c9bf696, 0x6ef07595, 0x417b1dbc, 0xb3109ebf,
    0xa0406d4b, 0x522bee48, 0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
    0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687, 0x0c38d26c, 0xfe53516f,
    0xed03a29b, 0x1f682198, 0x5125dad3, 0xa34e59d0, 0xb01eaa24, 0x42752927,
    0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38, 0xdbfc821c, 0x2997011f,
    0x3ac7f2eb, 0xc8ac71e8, 0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7,
    0x61c69362, 0x93ad1061, 0x80fde395, 0x72966096, 0xa65c047d, 0x5437877e,
    0x4767748a, 0xb50cf789, 0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
    0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46, 0x7198540d, 0x83f3d70e,
    0x90a324fa, 0x62c8a7f9, 0xb602c312, 0x44694011, 0x5739b3e5, 0xa55230e6,
    0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36, 0x3cdb9bdd, 0xceb018de,
    0xdde0eb2a, 0x2f8b6829, 0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c,
    0x456cac67, 0xb7072f64, 0xa457dc90, 0x563c5f93, 0x082f63b7, 0xfa44e0b4,
    0xe9141340, 0x1b7f9043, 0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
    0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3, 0x55326b08, 0xa759e80b,
    0xb4091bff, 0x466298fc, 0x1871a4d8, 0xea1a27db, 0xf94ad42f, 0x0b21572c,
    0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033, 0xa24bb5a6, 0x502036a5,
    0x4370c551, 0xb11b4652, 0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d,
    0x2892ed69, 0xdaf96e6a, 0xc9a99d9e, 0x3bc21e9d, 0xef087a76, 0x1d63f975,
    0x0e330a81, 0xfc588982, 0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
    0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622, 0x38cc2a06, 0xcaa7a905,
    0xd9f75af1, 0x2b9cd9f2, 0xff56bd19, 0x0d3d3e1a, 0x1e6dcdee, 0xec064eed,
    0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530, 0x0417b1db, 0xf67c32d8,
    0xe52cc12c, 0x1747422f, 0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff,
    0x8ecee914, 0x7ca56a17, 0x6ff599e3, 0x9d9e1ae0, 0xd3d3e1ab, 0x21b862a8,
    0x32e8915c, 0xc083125f, 0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
    0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90, 0x9e902e7b, 0x6cfbad78,
    0x7fab5e8c, 0x8dc0dd8f, 0xe330a81a, 0x115b2b19, 0x020bd8ed, 0xf0605bee,
    0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1, 0x69e9f0d5, 0x9b8273d6,
    0x88d28022, 0x7ab90321, 0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e,
    0xf36e6f75, 0x0105ec76, 0x12551f82, 0xe03e9c81, 0x34f4f86a, 0xc69f7b69,
    0xd5cf889d, 0x27a40b9e, 0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
    0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351,
};

static uint32_t crc32c_soft(uint32_t crc, const unsigned char *s, size_t n) {
    while (n--)
        crc = crc32c_table[(crc ^ *s++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
/*
 * SSE4.2's crc32 instruction computes exactly this CRC, eight bytes an
 * instruction where the table takes a lookup a byte.  Unaligned 8-byte
 * loads through memcpy, then the tail a byte at a time.
 */
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const unsigned char *s,
                                                                size_t n) {
    uint64_t c = crc;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        c = __builtin_ia32_crc32di(c, w);
    }
    crc = (uint32_t)c;
    for (; n > 0; s++, n--)
        crc = __builtin_ia32_crc32qi(crc, *s);
    return crc;
}
#endif

/*
 * The state is kept inverted between the calls' own pre- and
 * post-inversion, so that calls chain: the CRC of a then b is
 * hash_crc32c(hash_crc32c(0, a, n), b, m).  Whether the CPU has SSE4.2 is
 * asked of libgcc, which looked once at start-up (__builtin_cpu_supports
 * reads the answer it keeps): no state of ours.
 */
uint32_t hash_crc32c(uint32_t crc, const void *p, size_t n) {
    crc = ~crc;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc32c_sse42(crc, p, n);
#endif
    return ~crc32c_soft(crc, p, n);
}
