/*
 * ring_const_shard.c -- mcrouter's ConstShard hash: a key that names its
 * shard, "prefix:N:rest" with N all digits and below the number of
 * servers, goes to server N; any other key by Ch3.
 */
#include "client/ring_int.h"

#include <string.h>

/* The shard a key names, or -1: the digits between its first two colons. */
static long shard_of(const char *key, size_t len, unsigned n) {
    const char *a = memchr(key, ':', len);
    if (a == NULL)
        return -1;
    const char *start = a + 1, *end = key + len;
    const char *b = memchr(start, ':', (size_t)(end - start));
    if (b == NULL || b == start)
        return -1;
    unsigned long v = 0;
    for (const char *p = start; p < b; p++) {
        if (*p < '0' || *p > '9' || v > (unsigned long)n)
            return -1;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    return v < n ? (long)v : -1;
}

static unsigned const_shard_pick(const void *state, unsigned n, const char *key, size_t len) {
    (void)state;
    long s = shard_of(key, len, n);
    return s >= 0 ? (unsigned)s : ring_furc(key, len, n);
}

const struct ring_ops ring_const_shard = {"constshard", 1u << 23, NULL, const_shard_pick, NULL,
                                          true};
