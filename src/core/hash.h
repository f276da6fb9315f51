/*
 * hash.h -- hashing of keys.
 *
 * hash_bytes() is a 64-bit hash that reads eight bytes at a time and mixes
 * with multiply-xorshift steps; good enough to spread memcache keys over a
 * power-of-two table, cheap on short keys.  Pure functions, no state.
 *
 * The other two are the hashes other memcache clients place keys with, bit
 * for bit: MurmurHash3's 32-bit variant (pymemcache's rendezvous hashing)
 * Jenkins' one-at-a-time (libmemcached's default key hash), and
 * MurmurHash2's 64-bit variant (mcrouter's furc/ch3 hash); and mcrouter's
 * others: SpookyHash V2 and CRC-32.  hash_crc32c() checksums the flash
 * tier's records (SSE4.2's crc32 instruction where the CPU has it).
 */
#ifndef CELLAR_CORE_HASH_H
#define CELLAR_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);

/* MurmurHash3_x86_32 of p[0..n). */
uint32_t hash_murmur3_32(const void *p, size_t n, uint32_t seed);

/* MurmurHash64A of p[0..n), its 8-byte words read little-endian. */
uint64_t hash_murmur64a(const void *p, size_t n, uint64_t seed);

/* One-at-a-time as libmemcached computes it: each byte widened as a signed
   char, so bytes of 0x80 and above differ from the textbook version. */
uint32_t hash_one_at_a_time(const void *p, size_t n);

/* SpookyHash V2 (Bob Jenkins'), as folly's SpookyHashV2: the 128-bit hash
   of p[0..n) seeded and returned through *h1, *h2; and Hash32, the low 32
   bits of h1 with both seeds seed (mcrouter's key hash). */
void hash_spooky128(const void *p, size_t n, uint64_t *h1, uint64_t *h2);
uint32_t hash_spooky32(const void *p, size_t n, uint32_t seed);

/* CRC-32 of p[0..n) (IEEE, reflected; zlib's crc32 from 0). */
uint32_t hash_crc32(const void *p, size_t n);

/* CRC-32C (Castagnoli, reflected; as iSCSI, ext4 and SSE4.2's crc32) of
   p[0..n), continuing from crc (0 to start): calls chain, so
   hash_crc32c(hash_crc32c(0, a, n), b, m) is the CRC of a then b.
   hash_crc32c(0, "123456789", 9) is 0xe3069283. */
uint32_t hash_crc32c(uint32_t crc, const void *p, size_t n);

#endif
