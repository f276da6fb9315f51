/* test_num.c -- core/num.h: memcached's safe_strtoull() on a stored value. */
#include <string.h>

#include "core/num.h"
#include "harness.h"

struct row {
    const char *in;
    size_t len;         /* 0: strlen(in) */
    bool ok;
    uint64_t want;
};

/* The rules engine.c's incr/decr had (do_add_delta's safe_strtoull). */
static const struct row rows[] = {
    {"0", 0, true, 0},
    {"42", 0, true, 42},
    {"  \t42", 0, true, 42},
    {"+7", 0, true, 7},
    {"-0", 0, true, 0},
    {"-1", 0, false, 0},
    {"-18446744073709551615", 0, true, 1},
    {"18446744073709551615", 0, true, UINT64_MAX},
    {"18446744073709551616", 0, false, 0},
    {"99999999999999999999999", 0, false, 0},
    {"18446744073709551615 -", 0, true, UINT64_MAX},
    {"5 z", 0, true, 5},
    {"5\r\n", 0, true, 5},
    {"5z", 0, false, 0},
    {"5\0z", 3, true, 5},
    {"", 0, false, 0},
    {"   ", 0, false, 0},
    {"-", 0, false, 0},
    {"12", 1, true, 1},
};

TEST(num_u64_value_follows_safe_strtoull) {
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        uint64_t v = 12345;
        bool ok = num_u64_value(r->in, r->len ? r->len : strlen(r->in), &v);
        ASSERT_EQ(ok, r->ok);
        ASSERT_EQ(v, r->ok ? r->want : 12345);
    }
}

TEST(num_scan_ends_at_nul_only_when_asked) {
    bool minus;
    uint64_t v;
    ASSERT(num_scan("7\0", 2, true, &minus, &v));
    ASSERT_EQ(v, 7);
    ASSERT(!num_scan("7\0", 2, false, &minus, &v));
}

int main(void) { return RUN_TESTS(); }
