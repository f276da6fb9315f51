/*
 * ring_modula.c -- libmemcached's default distribution: the key's
 * one-at-a-time hash modulo the number of servers (weights do not count).
 */
#include "client/ring_int.h"

#include "core/hash.h"

static unsigned modula_pick(const void *state, unsigned n, const char *key, size_t len) {
    (void)state;
    return hash_one_at_a_time(key, len) % n;
}

const struct ring_ops ring_modula = {"modula", 0, NULL, modula_pick, NULL, false};
