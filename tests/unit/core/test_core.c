/* Unit tests for src/core: hashing and the event loop. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/copy.h"
#include "core/evloop.h"
#include "core/hash.h"
#include "harness.h"

TEST(hash_is_deterministic_and_length_sensitive) {
    ASSERT_U64(hash_bytes("key", 3, 0), hash_bytes("key", 3, 0));
    ASSERT(hash_bytes("a", 1, 0) != hash_bytes("a\0", 2, 0));
    ASSERT(hash_bytes("key", 3, 0) != hash_bytes("key", 3, 1));
    ASSERT(hash_bytes("", 0, 0) != hash_bytes("\0", 1, 0));
}

/*
 * The definition, written out plainly: 8-byte words, then the tail as one
 * zero-padded little-endian word (hash.c reads that tail without memcpy).
 */
static uint64_t ref_hash(const unsigned char *s, size_t n, uint64_t seed) {
    const uint64_t k1 = 0x9e3779b97f4a7c15ULL, k2 = 0xd6e8feb86659fd93ULL;
    uint64_t h = seed ^ (n * k1), w;
    for (; n >= 8; s += 8, n -= 8) {
        w = 0;
        for (int i = 0; i < 8; i++)
            w |= (uint64_t)s[i] << (8 * i);
        h = (h ^ w) * k1;
        h ^= h >> 29;
    }
    w = 0;
    for (size_t i = 0; i < n; i++)
        w |= (uint64_t)s[i] << (8 * i);
    h = (h ^ w ^ ((uint64_t)n << 56)) * k2;
    for (int r = 0; r < 2; r++) {
        h ^= h >> 32;
        h *= k2;
    }
    return h ^ (h >> 32);
}

/* Every length and alignment; the key ends the allocation (ASan sees any over-read). */
TEST(hash_matches_definition_and_reads_only_the_key) {
    for (size_t n = 0; n <= 40; n++) {
        for (size_t off = 0; off < 8; off++) {
            unsigned char *buf = malloc(off + n == 0 ? 1 : off + n);
            ASSERT(buf != NULL);
            for (size_t i = 0; i < off + n; i++)
                buf[i] = (unsigned char)(0x80 + 37 * i + n);
            ASSERT_U64(hash_bytes(buf + off, n, 7), ref_hash(buf + off, n, 7));
            free(buf);
        }
    }
}

/* Every length up to 300; the source ends its allocation; no byte outside [0, n) changes. */
TEST(copy_short_copies_exactly_n_bytes) {
    for (size_t n = 0; n <= 300; n++) {
        unsigned char *src = malloc(n == 0 ? 1 : n), *dst = malloc(n + 2);
        ASSERT(src != NULL && dst != NULL);
        for (size_t i = 0; i < n; i++)
            src[i] = (unsigned char)(i * 7 + n);
        memset(dst, 0xee, n + 2);
        copy_short(dst + 1, src, n);
        ASSERT_EQ(dst[0], 0xee);
        ASSERT_EQ(dst[n + 1], 0xee);
        ASSERT(memcmp(dst + 1, src, n) == 0);
        free(src);
        free(dst);
    }
}

/* Sequential keys must spread evenly over the low bits that pick a bucket. */
TEST(hash_spreads_low_bits) {
    enum { BUCKETS = 1024, KEYS = 102400 };
    static unsigned count[BUCKETS];
    memset(count, 0, sizeof(count));
    char key[32];
    for (int i = 0; i < KEYS; i++) {
        int n = snprintf(key, sizeof(key), "key:%d", i);
        count[hash_bytes(key, (size_t)n, 0) & (BUCKETS - 1)]++;
    }
    unsigned lo = KEYS, hi = 0;
    for (int b = 0; b < BUCKETS; b++) {
        lo = count[b] < lo ? count[b] : lo;
        hi = count[b] > hi ? count[b] : hi;
    }
    /* Expect 100 per bucket; a binomial spread stays well within 50..160. */
    ASSERT(lo > 50);
    ASSERT(hi < 160);
}

/* CRC-32C bit by bit, from its definition: the reference for hash_crc32c(). */
static uint32_t ref_crc32c(const unsigned char *s, size_t n) {
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= s[i];
        for (int b = 0; b < 8; b++)
            crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
    }
    return ~crc;
}

/*
 * The standard check values (RFC 3720's iSCSI vectors: 32 zeros, 32 0xff),
 * the definition on every length to 100 at every alignment to 8 (the
 * instruction path's words and tail), and chaining split at every byte.
 */
TEST(crc32c_matches_check_values_and_chains) {
    ASSERT_U64(hash_crc32c(0, "123456789", 9), 0xe3069283u);
    ASSERT_U64(hash_crc32c(0, "", 0), 0);
    unsigned char z[32], ff[32];
    memset(z, 0, sizeof(z));
    memset(ff, 0xff, sizeof(ff));
    ASSERT_U64(hash_crc32c(0, z, 32), 0x8a9136aau);
    ASSERT_U64(hash_crc32c(0, ff, 32), 0x62a8ab43u);
    unsigned char buf[128];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n <= 100; n++)
            ASSERT_U64(hash_crc32c(0, buf + off, n), ref_crc32c(buf + off, n));
    uint32_t whole = hash_crc32c(0, buf, 100);
    for (size_t cut = 0; cut <= 100; cut++)
        ASSERT_U64(hash_crc32c(hash_crc32c(0, buf, cut), buf + cut, 100 - cut), whole);
}

static void *waker(void *arg) {
    evloop_wake(arg);
    return NULL;
}

TEST(evloop_reports_readable_fd_and_wakeups) {
    struct evloop *l = evloop_create();
    ASSERT(l != NULL);
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    int token = 42;
    ASSERT_EQ(evloop_add(l, p[0], EV_READ, &token), 0);
    struct ev_fired ev[4];
    ASSERT_EQ(evloop_wait(l, ev, 4, 0), 0);
    ASSERT_EQ(write(p[1], "x", 1), 1);
    ASSERT_EQ(evloop_wait(l, ev, 4, 1000), 1);
    ASSERT(ev[0].ptr == &token);
    ASSERT(ev[0].events & EV_READ);
    ASSERT_EQ(evloop_del(l, p[0]), 0);

    pthread_t t;
    pthread_create(&t, NULL, waker, l);
    int n = evloop_wait(l, ev, 4, 5000);
    pthread_join(t, NULL);
    ASSERT_EQ(n, 1);
    ASSERT(ev[0].ptr == NULL);
    close(p[0]);
    close(p[1]);
    evloop_destroy(&l);
    ASSERT(l == NULL);
}

int main(void) { return RUN_TESTS(); }
