/*
 * ring_wch3.c -- mcrouter's WeightedCh3: ch3 (furc) with a weight in
 * [0, 1] per server.  A try takes the key's ch3 server and keeps it when
 * SpookyHash V2 of the key (32 bits, seed 0xface2014) is below the
 * server's weight times 2^32 - 1; else the key gets a salt (0, 1, ...,
 * written as reversed decimal digits after it) and tries again, 32 times
 * at most, the last try's server being the answer.  All weights 1: ch3.
 *
 * A ring_server's weight is the weight times 2^32 - 1, as mcrouter
 * computes it (route_pool.c makes them from a PoolRoute's "weights").
 */
#include <stdlib.h>
#include <string.h>

#include "client/ring_int.h"

#include "core/hash.h"

#define WCH3_SEED 0xface2014u
#define WCH3_TRIES 32
#define SALT_MAX 20

static void *wch3_build(const struct ring_server *servers, unsigned n) {
    uint32_t *w = malloc(n * sizeof(*w));
    if (w != NULL)
        for (unsigned i = 0; i < n; i++)
            w[i] = servers[i].weight;
    return w;
}

static unsigned wch3_pick(const void *state, unsigned n, const char *key, size_t len) {
    const uint32_t *w = state;
    char buf[1024 + SALT_MAX];
    const char *k = key;
    size_t klen = len;
    size_t salt = 0;
    unsigned index = 0;
    for (int i = 0; i < WCH3_TRIES; i++) {
        index = ring_furc(k, klen, n);
        if ((uint64_t)hash_spooky32(k, klen, WCH3_SEED) < (uint64_t)w[index])
            return index;
        if (len > sizeof(buf) - SALT_MAX)
            return index;       /* no room to salt a key that long: this try's server */
        if (k == key) {
            memcpy(buf, key, len);
            k = buf;
        }
        size_t s = salt++, n_salt = 0;
        do {
            buf[len + n_salt++] = (char)('0' + s % 10);
            s /= 10;
        } while (s > 0);
        klen = len + n_salt;
    }
    return index;
}

const struct ring_ops ring_wch3 = {"wch3", 1u << 23, wch3_build, wch3_pick, free, true};
