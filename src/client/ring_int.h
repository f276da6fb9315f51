/*
 * ring_int.h -- what ring.c and the ring_<kind>.c files share: each kind
 * is an ops table that builds its own read-only state from the servers.
 */
#ifndef CELLAR_CLIENT_RING_INT_H
#define CELLAR_CLIENT_RING_INT_H

#include <stdbool.h>

#include "client/ring.h"

struct ring_ops {
    const char *name;
    unsigned max_servers;       /* 0: no limit */
    /* The kind's state for servers[0..n), or NULL when out of memory;
       build and free are NULL for a kind that needs only n. */
    void *(*build)(const struct ring_server *servers, unsigned n);
    unsigned (*pick)(const void *state, unsigned n, const char *key, size_t len);
    void (*free)(void *state);
    bool route_only;            /* weights in [0, 1] a PoolRoute gives, never a pool's own */
};

extern const struct ring_ops ring_ketama;
extern const struct ring_ops ring_modula;
extern const struct ring_ops ring_rendezvous;
extern const struct ring_ops ring_ch3;
extern const struct ring_ops ring_crc32;
extern const struct ring_ops ring_wch3;
extern const struct ring_ops ring_const_shard;

/* mcrouter's furc_hash: key's server among n (ring_ch3.c; n <= 2^23). */
uint32_t ring_furc(const char *key, size_t len, uint32_t n);

#endif
