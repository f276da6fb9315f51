/*
 * test_md5.c -- MD5 on RFC 1321's test suite and on lengths around the
 * padding boundary (checked with Python's hashlib), murmur3_32 on values
 * of pymemcache's implementation, one-at-a-time with bytes >= 0x80
 * widened as libmemcached does.
 */
#include <stdio.h>
#include <string.h>

#include "core/hash.h"
#include "core/md5.h"
#include "harness.h"

static const char *hex(const void *p, size_t n) {
    static char buf[64];
    uint8_t d[16];
    md5(p, n, d);
    for (int i = 0; i < 16; i++)
        snprintf(buf + 2 * i, 3, "%02x", d[i]);
    return buf;
}

TEST(md5_rfc1321_suite) {
    ASSERT_STR(hex("", 0), "d41d8cd98f00b204e9800998ecf8427e");
    ASSERT_STR(hex("a", 1), "0cc175b9c0f1b6a831c399e269772661");
    ASSERT_STR(hex("abc", 3), "900150983cd24fb0d6963f7d28e17f72");
    ASSERT_STR(hex("message digest", 14), "f96b697d7cb7938d525a2f31aaf161d0");
    ASSERT_STR(hex("abcdefghijklmnopqrstuvwxyz", 26), "c3fcd3d76192e4007dfb496cca67e13b");
    const char *digits = "12345678901234567890123456789012345678901234567890123456789012345678901234567890";
    ASSERT_STR(hex(digits, 80), "57edf4a22be3c955ac49da2e2107b67a");
}

TEST(md5_padding_boundaries) {
    char x[1000];
    memset(x, 'x', sizeof(x));
    ASSERT_STR(hex(x, 55), "04364420e25c512fd958a70738aa8f72");   /* one tail block */
    ASSERT_STR(hex(x, 56), "668a72d5ba17f08e62dabcafad6db14b");   /* two */
    ASSERT_STR(hex(x, 64), "c1bb4f81d892b2d57947682aeb252456");
    ASSERT_STR(hex(x, 1000), "398533d48111e9f664b1f64cb10c4b63");
}

TEST(murmur3_32_as_pymemcache) {
    struct { const char *s; uint32_t seed0, seed9747; } v[] = {
        {"", 0x0, 0xebb6c228}, {"a", 0x3c2569b2, 0x7fa09ea6}, {"ab", 0x9bbfd75f, 0x74875592},
        {"abc", 0xb3dd93fa, 0xc84a62dd}, {"abcd", 0x43ed676a, 0xf0478627},
        {"hello world", 0x5e928f0f, 0xbf34f5e0},
        {"127.0.0.1:11211-user:42", 0x16d8bf69, 0xb16b32d8},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        ASSERT_EQ(hash_murmur3_32(v[i].s, strlen(v[i].s), 0), v[i].seed0);
        ASSERT_EQ(hash_murmur3_32(v[i].s, strlen(v[i].s), 0x9747b28c), v[i].seed9747);
    }
}

TEST(one_at_a_time_as_libmemcached) {
    ASSERT_EQ(hash_one_at_a_time("", 0), 0);
    ASSERT_EQ(hash_one_at_a_time("a", 1), 0xca2e9442);
    ASSERT_EQ(hash_one_at_a_time("hello", 5), 0xc8fd181b);
    ASSERT_EQ(hash_one_at_a_time("\xc3\xa9\xff", 3), 0x76c4a2d1);   /* signed chars */
}

int main(void) { return RUN_TESTS(); }
