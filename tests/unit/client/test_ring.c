/*
 * test_ring.c -- the rings' contracts on their own (placement against the
 * real libraries is tests/integration/test_ring.py): a key always goes to
 * the same server, every server gets keys, ketama's shares follow the
 * weights and move few keys when a server joins, rendezvous moves only the
 * keys the new server wins, and bad arguments are refused.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "client/ring.h"
#include "client/ring_int.h"
#include "core/hash.h"
#include "harness.h"

#define NKEYS 20000

static const struct ring_server five[] = {
    {"127.0.0.1", 11211, 1}, {"127.0.0.1", 11212, 2}, {"127.0.0.1", 11213, 3},
    {"10.0.0.7", 22122, 1}, {"cache-5.example", 11211, 5},
};

/* Keys per server; false if a pick is out of range or not the same twice. */
static bool counts(const struct ring *r, unsigned *c, unsigned n) {
    memset(c, 0, n * sizeof(*c));
    char key[32];
    for (int i = 0; i < NKEYS; i++) {
        int len = snprintf(key, sizeof(key), "key:%d", i);
        unsigned s = ring_pick(r, key, (size_t)len);
        if (s >= n || ring_pick(r, key, (size_t)len) != s)
            return false;
        c[s]++;
    }
    return true;
}

TEST(every_kind_reaches_every_server) {
    for (unsigned k = 0; ring_kind_at(k) != NULL; k++) {
        struct ring *r = ring_create(ring_kind_at(k), five, 5, NULL);
        ASSERT(r != NULL);
        ASSERT_STR(ring_kind(r), ring_kind_at(k));
        ASSERT_EQ(ring_size(r), 5);
        unsigned c[5];
        ASSERT(counts(r, c, 5));
        for (int i = 0; i < 5; i++)
            ASSERT(c[i] > NKEYS / 50);
        ring_destroy(&r);
        ASSERT(r == NULL);
    }
}

/* Shares within 20% of weight / 12 (160 points per average server). */
TEST(ketama_follows_the_weights) {
    struct ring *r = ring_create("ketama", five, 5, NULL);
    unsigned c[5];
    ASSERT(counts(r, c, 5));
    for (int i = 0; i < 5; i++) {
        double want = NKEYS * five[i].weight / 12.0;
        ASSERT(c[i] > want * 0.8 && c[i] < want * 1.2);
    }
    ring_destroy(&r);
}

/*
 * A sixth server: rendezvous and ch3 move only keys that now go to it.  Weighted
 * ketama moves some keys between the old servers too: each server's point
 * count is its share of the total weight times the number of servers, so
 * all counts change and a shrinking server gives up its last points (7 %
 * of the keys here, as libmemcached's continuum does; the rest go to the
 * new server).
 */
TEST(a_new_server_takes_keys_only_for_itself) {
    struct ring_server six[6];
    memcpy(six, five, sizeof(five));
    six[5] = (struct ring_server){"127.0.0.1", 11299, 1};
    const char *kinds[] = {"ketama", "rendezvous", "ch3"};
    for (int k = 0; k < 3; k++) {
        struct ring *a = ring_create(kinds[k], five, 5, NULL), *b = ring_create(kinds[k], six, 6, NULL);
        char key[32];
        int moved = 0, elsewhere = 0;
        for (int i = 0; i < NKEYS; i++) {
            int len = snprintf(key, sizeof(key), "key:%d", i);
            unsigned x = ring_pick(a, key, (size_t)len), y = ring_pick(b, key, (size_t)len);
            moved += x != y;
            elsewhere += x != y && y != 5;
        }
        ASSERT(moved > NKEYS / 20 && moved < NKEYS / 4);
        ASSERT(k == 0 ? elsewhere < NKEYS / 10 : elsewhere == 0);
        ring_destroy(&a);
        ring_destroy(&b);
    }
}

TEST(one_server_and_bad_arguments) {
    const char *err = NULL;
    struct ring *r = ring_create("modula", five, 1, &err);
    ASSERT(r != NULL && err == NULL);
    ASSERT_EQ(ring_pick(r, "anything", 8), 0);
    ring_destroy(&r);
    ASSERT(ring_create("crc16", five, 5, &err) == NULL);
    ASSERT(err != NULL && strstr(err, "unknown hash") != NULL);
    ASSERT(ring_create("ketama", five, 0, &err) == NULL);
    ASSERT(strstr(err, "at least one server") != NULL);
    ring_destroy(NULL);
    ring_destroy(&r);                   /* NULL already */
}

/* mcrouter's own Ch3HashFunc test vectors (mcrouter/lib/test/Ch3HashFuncTest.cpp). */
TEST(ch3_matches_mcrouters_vectors) {
    ASSERT_EQ(ring_furc("sample", 6, 100), 97);
    ASSERT_EQ(ring_furc("sample", 6, 1), 0);
    ASSERT_EQ(ring_furc("", 0, 100), 72);
    ASSERT_EQ(ring_furc("", 0, 1), 0);
    ASSERT_EQ(ring_furc("", 0, 1u << 23), 6173600);
    ASSERT_EQ(ring_furc("sample", 6, 1u << 23), 5167780);
    char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (char)(i - 128);           /* -128 .. 127 */
    ASSERT_EQ(ring_furc(all, 256, 99999), 31015);
    for (int i = 0; i < 128; i++) {
        char t = all[i];
        all[i] = all[255 - i];
        all[255 - i] = t;
    }
    ASSERT_EQ(ring_furc(all, 256, 99999), 67101);
    unsigned c3[3] = {0}, c10[10] = {0};
    char key[16];
    for (int i = 0; i < 10000; i++) {
        int len = snprintf(key, sizeof(key), "%d", i);
        if (i < 1000)
            c3[ring_furc(key, (size_t)len, 3)]++;
        c10[ring_furc(key, (size_t)len, 10)]++;
    }
    const unsigned w3[3] = {307, 342, 351};
    const unsigned w10[10] = {995, 955, 1046, 968, 1032, 972, 1016, 1038, 1010, 968};
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(c3[i], w3[i]);
    for (int i = 0; i < 10; i++)
        ASSERT_EQ(c10[i], w10[i]);
    const char *err;
    ASSERT(ring_create("ch3", five, (1u << 23) + 1, &err) == NULL);
    ASSERT(strstr(err, "too many servers") != NULL);
}

int main(void) { return RUN_TESTS(); }

/* A wch3 ring over n servers with mcrouter's weights in [0, 1]. */
static struct ring *wch3(const double *weights, unsigned n) {
    struct ring_server s[16];
    for (unsigned i = 0; i < n; i++)
        s[i] = (struct ring_server){"h", 1, (uint32_t)(uint64_t)(weights[i] * 4294967295.0)};
    return ring_create("wch3", s, n, NULL);
}

/*
 * mcrouter's WeightedCh3HashFunc tests: keys "0".."999" over weights
 * {1, 1, 0.7}, and "0".."9999" over ten weights, land as mcrouter's test
 * counts them (which checks SpookyHash V2 and the salting too); the
 * servers of weight 1 keep every key ch3 gives them.
 */
TEST(wch3_matches_mcrouters_vectors) {
    static const double w3[3] = {1.0, 1.0, 0.7};
    static const double w10[10] = {0.429, 0.541, 0.117, 0.998, 0.283,
                                   0.065, 0.109, 0.042, 0.676, 0.943};
    struct ring *r3 = wch3(w3, 3), *r10 = wch3(w10, 10);
    ASSERT(r3 != NULL && r10 != NULL);
    unsigned c3[3] = {0}, c10[10] = {0};
    char key[16];
    for (int i = 0; i < 10000; i++) {
        int len = snprintf(key, sizeof(key), "%d", i);
        if (i < 1000) {
            unsigned s = ring_pick(r3, key, (size_t)len), ch3 = ring_furc(key, (size_t)len, 3);
            c3[s]++;
            if (ch3 != 2)
                ASSERT_EQ(s, ch3);
        }
        c10[ring_pick(r10, key, (size_t)len)]++;
    }
    const unsigned want3[3] = {341, 371, 288};
    const unsigned want10[10] = {1016, 1252, 288, 2354, 661, 195, 247, 122, 1668, 2197};
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(c3[i], want3[i]);
    for (int i = 0; i < 10; i++)
        ASSERT_EQ(c10[i], want10[i]);
    ring_destroy(&r3);
    ring_destroy(&r10);
    /* zero weights: it gives up and answers the last try's server */
    static const double zero[1] = {0.0};
    struct ring *r0 = wch3(zero, 1);
    ASSERT_EQ(ring_pick(r0, "sample", 6), 0);
    ring_destroy(&r0);
    /* a pool cannot name it: its weights are a PoolRoute's */
    for (unsigned i = 0; ring_kind_at(i); i++)
        ASSERT(strcmp(ring_kind_at(i), "wch3") != 0);
}

/* mcrouter's Crc32: (crc32(key) & 0x7fffffff) % n; crc32("123456789") is the standard check. */
TEST(crc32_ring) {
    ASSERT_EQ(hash_crc32("123456789", 9), 0xcbf43926u);
    struct ring_server s[7];
    for (int i = 0; i < 7; i++)
        s[i] = (struct ring_server){"h", (uint16_t)(1 + i), 1};
    struct ring *r = ring_create("crc32", s, 7, NULL);
    ASSERT(r != NULL);
    ASSERT_EQ(ring_pick(r, "123456789", 9), (0xcbf43926u & 0x7fffffffu) % 7);
    ring_destroy(&r);
}

/* mcrouter's ConstShard: "prefix:N:rest" to server N when N < n, else Ch3. */
TEST(const_shard_ring) {
    struct ring_server s[5];
    for (int i = 0; i < 5; i++)
        s[i] = (struct ring_server){"h", (uint16_t)(1 + i), 1};
    struct ring *r = ring_create("constshard", s, 5, NULL);
    ASSERT(r != NULL);
    ASSERT_EQ(ring_pick(r, "a:3:b", 5), 3u);
    ASSERT_EQ(ring_pick(r, "xyz:0:", 6), 0u);
    ASSERT_EQ(ring_pick(r, "a:04:b", 6), 4u);
    static const char *const ch3[] = {"a:5:b", "a:x3:b", "a:3", "a::b", "nocolon", "a:99999999999999999999:b"};
    for (size_t i = 0; i < sizeof(ch3) / sizeof(ch3[0]); i++)
        ASSERT_EQ(ring_pick(r, ch3[i], strlen(ch3[i])), ring_furc(ch3[i], strlen(ch3[i]), 5));
    ring_destroy(&r);
}
