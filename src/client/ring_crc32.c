/*
 * ring_crc32.c -- mcrouter's Crc32 hash: the key's CRC-32 (zlib's), its
 * top bit cleared, modulo the number of servers (weights do not count).
 */
#include "client/ring_int.h"

#include "core/hash.h"

static unsigned crc32_pick(const void *state, unsigned n, const char *key, size_t len) {
    (void)state;
    return (hash_crc32(key, len) & 0x7fffffffu) % n;
}

const struct ring_ops ring_crc32 = {"crc32", 0, NULL, crc32_pick, NULL, false};
