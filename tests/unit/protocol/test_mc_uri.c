/*
 * test_mc_uri.c -- memcached's uriencode: each row is a key and what
 * memcached 1.6.18's metadump prints for it.
 */
#include "harness.h"
#include "protocol/mc_uri.h"

#include <string.h>

static const struct {
    const char *in;
    unsigned n;
    const char *out;
} rows[] = {
    {"", 0, ""},
    {"foo", 3, "foo"},
    {"AZaz09-._~", 10, "AZaz09-._~"},
    {"a b", 3, "a%20b"},
    {"k/1?x=y&z", 9, "k%2F1%3Fx%3Dy%26z"},
    {"%", 1, "%25"},
    {"\x00\x01\x7f", 3, "%00%01%7F"},
    {"\xff\x80", 2, "%FF%80"},
    {"+:@!", 4, "%2B%3A%40%21"},
};

TEST(uri_encode_rows) {
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char buf[64];
        memset(buf, '#', sizeof(buf));
        char *end = mc_uri_encode(buf, rows[i].in, rows[i].n);
        ASSERT_EQ(end - buf, (long long)strlen(rows[i].out));
        ASSERT_MEM(buf, rows[i].out, strlen(rows[i].out));
        ASSERT_EQ(buf[end - buf], '#');     /* nothing written past the end */
    }
}

/* Every byte value: 3 bytes unless it is one of the 66 that stay. */
TEST(uri_encode_every_byte) {
    unsigned kept = 0;
    for (unsigned b = 0; b < 256; b++) {
        char in = (char)b, buf[4];
        long long n = mc_uri_encode(buf, &in, 1) - buf;
        ASSERT(n == 1 || n == 3);
        if (n == 1) {
            kept++;
            ASSERT_EQ((unsigned char)buf[0], b);
        } else {
            ASSERT_EQ(buf[0], '%');
        }
    }
    ASSERT_EQ(kept, 66);
}

int main(void) { return RUN_TESTS(); }
