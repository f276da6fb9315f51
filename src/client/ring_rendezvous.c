/*
 * ring_rendezvous.c -- pymemcache's HashClient: rendezvous (highest random
 * weight) hashing.  Each server "host:port" scores murmur3_32 (seed 0) of
 * "host:port-key"; the highest wins, a tie goes to the name that sorts
 * last.  No weights.  Costs one hash per server per key: for the pools
 * pymemcache users have, not for hundreds of servers.
 */
#include "client/ring_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"

#define NAME_MAX_LEN 300

struct rendezvous {
    unsigned n;
    struct {
        char name[NAME_MAX_LEN];
        size_t len;
    } node[];
};

static void *rendezvous_build(const struct ring_server *s, unsigned n) {
    struct rendezvous *r = malloc(sizeof(*r) + n * sizeof(r->node[0]));
    if (r == NULL)
        return NULL;
    r->n = n;
    for (unsigned i = 0; i < n; i++) {
        int len = snprintf(r->node[i].name, NAME_MAX_LEN, "%s:%u", s[i].host, s[i].port);
        r->node[i].len = len < 0 ? 0 : (size_t)len < NAME_MAX_LEN ? (size_t)len : NAME_MAX_LEN - 1;
    }
    return r;
}

static unsigned rendezvous_pick(const void *state, unsigned n, const char *key, size_t len) {
    const struct rendezvous *r = state;
    char stack[NAME_MAX_LEN + 1 + 256];
    char *buf = stack;
    if (len > sizeof(stack) - NAME_MAX_LEN - 1 && (buf = malloc(NAME_MAX_LEN + 1 + len)) == NULL)
        return 0;           /* no memory for an over-long key: the first server */
    int64_t best = -1;
    unsigned win = 0;
    for (unsigned i = 0; i < n && i < r->n; i++) {
        size_t nl = r->node[i].len;
        memcpy(buf, r->node[i].name, nl);
        buf[nl] = '-';
        memcpy(buf + nl + 1, key, len);
        int64_t score = hash_murmur3_32(buf, nl + 1 + len, 0);
        if (score > best ||
            (score == best && strcmp(r->node[i].name, r->node[win].name) > 0)) {
            best = score;
            win = i;
        }
    }
    if (buf != stack)
        free(buf);
    return win;
}

static void rendezvous_free(void *state) { free(state); }

const struct ring_ops ring_rendezvous = {"rendezvous", 0, rendezvous_build, rendezvous_pick,
                                         rendezvous_free, false};
