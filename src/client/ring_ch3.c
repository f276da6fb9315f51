/*
 * ring_ch3.c -- mcrouter's default hash, ch3: the furc consistent hash
 * (a binary decision tree after Mark Rabkin, as mcrouter's fbi/hash.c
 * describes it), no weights.
 *
 * The key yields a stream of pseudo-random bits: 64 from MurmurHash64A of
 * the key (seed 4193360111), 64 more from each rehash of the previous
 * word.  With d the bits needed for n servers, a try reads bit a = d and
 * steps d down while that bit is 0 (0 servers left: server 0); then it
 * reads d - 1 more bits 23 apart after a leading 1, and the number they
 * spell is the server if below n.  After 32 tries it gives 0.  Adding a
 * server only ever moves keys to the new one.  Pools up to 2^23 servers.
 */
#include "client/ring_int.h"

#include "core/hash.h"

#define FURC_SEED 4193360111ULL
#define FURC_TRIES 32
#define FURC_SHIFT 23
#define FURC_WORDS 1024         /* > FURC_TRIES * (FURC_SHIFT + 1) / 64 words in use */

/* The bit stream of one key: word i is the i-th rehash, made as needed. */
struct bits {
    const char *key;
    size_t len;
    int have;                   /* words made so far, minus one */
    uint64_t word[FURC_WORDS];
};

static uint64_t rehash(uint64_t k) {
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    uint64_t h = FURC_SEED ^ (8 * m);
    k *= m;
    k ^= k >> 47;
    k *= m;
    h = (h ^ k) * m;
    h ^= h >> 47;
    h *= m;
    h ^= h >> 47;
    return h;
}

static unsigned bit(struct bits *b, uint32_t idx) {
    int w = (int)(idx >> 6);
    for (; b->have < w; b->have++)
        b->word[b->have + 1] = b->have < 0 ? hash_murmur64a(b->key, b->len, FURC_SEED)
                                           : rehash(b->word[b->have]);
    return (unsigned)(b->word[w] >> (idx & 63)) & 1;
}

uint32_t ring_furc(const char *key, size_t len, uint32_t n) {
    if (n <= 1)
        return 0;
    struct bits b = {.key = key, .len = len, .have = -1};
    uint32_t d = 0;
    while (n > (1u << d))
        d++;
    uint32_t a = d;
    for (int t = 0; t < FURC_TRIES; t++) {
        while (!bit(&b, a)) {
            if (--d == 0)
                return 0;
            a = d;
        }
        a += FURC_SHIFT;
        uint32_t num = 1;
        for (uint32_t i = 0; i + 1 < d; i++) {
            num = num << 1 | bit(&b, a);
            a += FURC_SHIFT;
        }
        if (num < n)
            return num;
    }
    return 0;
}

static unsigned ch3_pick(const void *state, unsigned n, const char *key, size_t len) {
    (void)state;
    return ring_furc(key, len, n);
}

const struct ring_ops ring_ch3 = {"ch3", 1u << FURC_SHIFT, NULL, ch3_pick, NULL, false};
