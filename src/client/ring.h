/*
 * ring.h -- which server of a pool a key goes to.
 *
 * A ring is built once from a pool's server list and then only read, so
 * any number of threads may pick from it at once; a new server list gets
 * a new ring.  Each kind places keys exactly as the library it is named
 * after, so that a pool shared with other clients agrees on every key:
 *
 *   ketama      libmemcached's weighted ketama (pylibmc's ketama_weighted,
 *               twemproxy's md5 + ketama): 160 points per server times its
 *               share of the weight, MD5 of "host:port-i" (or "host-i" on
 *               port 11211), the key's MD5 found on the circle
 *   modula      libmemcached's default: one-at-a-time hash mod the count
 *   rendezvous  pymemcache's HashClient: the highest murmur3_32 of
 *               "host:port-key" wins
 *   ch3         mcrouter's default (furc_hash): a decision tree over bits
 *               of MurmurHash64A; by position in the list, no weights
 *
 * One file per kind (ring_<kind>.c).  ring_create() allocates; picks do not.
 */
#ifndef CELLAR_CLIENT_RING_H
#define CELLAR_CLIENT_RING_H

#include <stddef.h>
#include <stdint.h>

struct ring_server {
    const char *host;           /* as the pool names it (a host name is not resolved) */
    uint16_t port;
    uint32_t weight;            /* ketama only; 0 counts as 1 */
};

struct ring;

/*
 * A ring of kind (see above) over servers[0..n), n >= 1 (ch3: at most
 * 2^23); what a kind needs of the list is copied.  NULL, *err saying why,
 * for an unknown kind, a bad count, or no memory.
 */
struct ring *ring_create(const char *kind, const struct ring_server *servers, unsigned n,
                         const char **err);
void ring_destroy(struct ring **r);

/* The index (into the list given to ring_create) of key's server. */
unsigned ring_pick(const struct ring *r, const char *key, size_t len);

unsigned ring_size(const struct ring *r);
const char *ring_kind(const struct ring *r);

/*
 * mcrouter's hash stop: how much of key[0..nkey) is hashed, given p, its
 * first '|': up to a "|#|", else all of it (config_int.h's cl_hash_key()).
 */
size_t ring_hash_stop(const char *key, size_t nkey, const char *p);

/* The kinds, for listing and for config checks: NULL past the last. */
const char *ring_kind_at(unsigned i);

#endif
