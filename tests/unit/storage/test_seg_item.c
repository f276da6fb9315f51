/*
 * test_seg_item.c -- the segment engine's item header: every field at its
 * boundaries (key and value lengths across the varint's byte steps, CAS
 * deltas across the 4-byte escape, exptime and flags present or absent,
 * the second flag byte), encoded and read back, cut short at every byte,
 * malformed, and changed in place.
 */
#include "harness.h"
#include "storage/seg_item.h"

#include <stdlib.h>
#include <string.h>

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))

static size_t vlen_bytes(uint32_t v) {
    return v < (1u << 7) ? 1 : v < (1u << 14) ? 2 : v < (1u << 21) ? 3 : v < (1u << 28) ? 4 : 5;
}

TEST(reference_load_is_seven_bytes) {
    /* 16-byte key, 100-byte value, flags 0, no TTL: 1 + 1 + 1 + 4, item 123 */
    uint64_t base = 1000;
    struct seg_hdr h = {.klen = 16, .vlen = 100, .cas = 1005};
    uint8_t buf[SEG_HDR_MAX];
    ASSERT_EQ(seg_hdr_len(&h, base), 7);
    ASSERT_EQ(seg_hdr_encode(buf, &h, base), 7);
    ASSERT_EQ(seg_item_len(&h, base), 123);
    ASSERT_MEM(buf, "\x00\x10\x64\x05\x00\x00\x00", 7);
}

TEST(every_field_boundary_round_trips) {
    static const unsigned klens[] = {1, 127, 128, 250};
    static const uint32_t vlens[] = {0, 1, 127, 128, 16383, 16384, 2097151, 2097152,
                                     268435455, 268435456, UINT32_MAX};
    const uint64_t base = 5000000000ULL;
    static const uint64_t cases[] = {5000000000ULL, 5000000001ULL, 5000000000ULL + UINT32_MAX,
                                     5000000000ULL + UINT32_MAX + 1ULL, 4999999999ULL, 0,
                                     UINT64_MAX};
    static const uint32_t u32s[] = {0, 1, UINT32_MAX};
    static const uint16_t states[] = {0, SEG_F_FETCHED | SEG_F_TOKEN | SEG_F_STALE | SEG_F_KEYB,
                                      SEG_F_HOLD, SEG_F_EXT, SEG_F_GHOST,
                                      SEG_F_HOLD | SEG_F_EXT | SEG_F_GHOST | SEG_F_FETCHED};
    size_t n = 0;
    for (size_t a = 0; a < NROWS(klens); a++)
    for (size_t b = 0; b < NROWS(vlens); b++)
    for (size_t c = 0; c < NROWS(cases); c++)
    for (size_t d = 0; d < NROWS(u32s); d++)
    for (size_t e = 0; e < NROWS(u32s); e++)
    for (size_t s = 0; s < NROWS(states); s++) {
        struct seg_hdr h = {.hflags = states[s], .klen = (uint8_t)klens[a], .vlen = vlens[b],
                            .cas = cases[c], .exptime = u32s[d], .cflags = u32s[e]};
        bool cas64 = cases[c] < base || cases[c] - base > UINT32_MAX;
        bool more = states[s] & SEG_F_BYTE1;
        size_t want = 1 + more + 1 + vlen_bytes(vlens[b]) + (cas64 ? 8 : 4) + (u32s[d] ? 4 : 0) +
                      (u32s[e] ? 4 : 0);
        uint8_t buf[SEG_HDR_MAX + 8];
        memset(buf, 0xee, sizeof(buf));
        ASSERT_EQ(seg_hdr_len(&h, base), want);
        ASSERT_EQ(seg_hdr_encode(buf, &h, base), want);
        ASSERT_EQ(buf[want], 0xee);             /* nothing written past it */
        struct seg_hdr got;
        ASSERT_EQ(seg_hdr_decode(buf, want, base, &got), want);
        ASSERT_EQ(got.klen, h.klen);
        ASSERT_EQ(got.vlen, h.vlen);
        ASSERT_EQ(got.cas, h.cas);
        ASSERT_EQ(got.exptime, h.exptime);
        ASSERT_EQ(got.cflags, h.cflags);
        uint16_t layout = (uint16_t)((u32s[e] ? SEG_F_CFLAGS : 0) | (u32s[d] ? SEG_F_EXP : 0) |
                                     (cas64 ? SEG_F_CAS64 : 0) | (more ? SEG_F_MORE : 0));
        ASSERT_EQ(got.hflags, (uint16_t)(states[s] | layout));
        ASSERT_EQ(seg_hdr_len(&got, base), want);   /* a decoded header keeps its layout */
        struct seg_hdr wide;        /* with bytes after it: seg_hdr_decode's inline path */
        ASSERT_EQ(seg_hdr_decode(buf, sizeof(buf), base, &wide), want);
        ASSERT_EQ(wide.hflags, got.hflags);
        ASSERT_EQ(wide.klen, got.klen);
        ASSERT_EQ(wide.vlen, got.vlen);
        ASSERT_EQ(wide.cas, got.cas);
        ASSERT_EQ(wide.exptime, got.exptime);
        ASSERT_EQ(wide.cflags, got.cflags);
        uint8_t kl;
        uint32_t vl;
        ASSERT_EQ(seg_hdr_span(buf, want, &kl, &vl), want);
        ASSERT_EQ(kl, h.klen);
        ASSERT_EQ(vl, h.vlen);
        for (size_t cut = 0; cut < want; cut++)
            if (seg_hdr_decode(buf, cut, base, &got) != 0 || seg_hdr_span(buf, cut, &kl, &vl) != 0)
                TH_FAIL("a header of %zu bytes decoded from %zu", want, cut);
        n++;
    }
    ASSERT_EQ(n, 4 * 11 * 7 * 3 * 3 * 6);
}

TEST(malformed_headers_refused) {
    struct seg_hdr h;
    static const struct {
        const char *in;
        size_t len;
    } bad[] = {
        {"\x00\x00\x05\x00\x00\x00\x00", 7},                    /* klen 0 */
        {"\x00\xfb\x05\x00\x00\x00\x00", 7},                    /* klen 251 */
        {"\x00\x10\x80\x80\x80\x80\x80\x01\x00\x00\x00\x00", 12},   /* a 6-byte varint */
        {"\x00\x10\xff\xff\xff\xff\x1f\x00\x00\x00\x00", 11},   /* vlen 2^33 - 1 */
        {"\x00\x10\x81\x00\x05\x00\x00\x00", 8},        /* vlen 1 not in its shortest form */
        {"\x80\x08\x10\x05\x00\x00\x00\x00", 8},                /* a reserved bit in byte 1 */
        {"\x80\x00\x10\x05\x00\x00\x00\x00", 8},                /* MORE with nothing in it */
    };
    for (size_t i = 0; i < NROWS(bad); i++)
        if (seg_hdr_decode((const uint8_t *)bad[i].in, bad[i].len, 0, &h) != 0)
            TH_FAIL("row %zu decoded", i);
    /* the largest: every optional field, a 5-byte vlen, CAS64 */
    struct seg_hdr big = {.hflags = SEG_F_HOLD, .klen = 250, .vlen = UINT32_MAX,
                          .cas = UINT64_MAX, .exptime = 7, .cflags = 9};
    uint8_t buf[SEG_HDR_MAX];
    ASSERT_EQ(seg_hdr_encode(buf, &big, 0), SEG_HDR_MAX);
}

TEST(changes_in_place) {
    const uint64_t base = 100;
    uint8_t buf[64];
    struct seg_hdr h = {.klen = 3, .vlen = 200, .cas = 150, .exptime = 1234};
    size_t n = seg_hdr_encode(buf, &h, base);
    memcpy(buf + n, "keyvalue", 8);
    struct seg_hdr d;
    ASSERT_EQ(seg_hdr_decode(buf, sizeof(buf), base, &d), n);

    /* cas: a new one within the delta fits; one past it or below the base does not */
    ASSERT(seg_hdr_set_cas(buf, &d, base, base + UINT32_MAX));
    ASSERT(!seg_hdr_set_cas(buf, &d, base, base + UINT32_MAX + 1ULL));
    ASSERT(!seg_hdr_set_cas(buf, &d, base, base - 1));
    ASSERT_EQ(seg_hdr_decode(buf, sizeof(buf), base, &d), n);
    ASSERT_EQ(d.cas, base + UINT32_MAX);

    /* exptime: present, so any value (0 included: "never", stored) */
    ASSERT(seg_hdr_set_exptime(buf, &d, 99));
    ASSERT_EQ(seg_hdr_decode(buf, sizeof(buf), base, &d), n);
    ASSERT_EQ(d.exptime, 99);
    ASSERT(seg_hdr_set_exptime(buf, &d, 0));
    ASSERT_EQ(seg_hdr_decode(buf, sizeof(buf), base, &d), n);
    ASSERT_EQ(d.exptime, 0);
    ASSERT(d.hflags & SEG_F_EXP);
    ASSERT_EQ(seg_hdr_len(&d, base), n);
    ASSERT_MEM(buf + n, "keyvalue", 8);         /* key and value untouched */

    /* state bits: FETCHED, TOKEN and STALE only */
    ASSERT(seg_hdr_set_state(buf, SEG_F_FETCHED | SEG_F_TOKEN, 0));
    ASSERT(seg_hdr_set_state(buf, SEG_F_STALE, SEG_F_TOKEN));
    ASSERT(!seg_hdr_set_state(buf, SEG_F_HOLD, 0));
    ASSERT(!seg_hdr_set_state(buf, 0, SEG_F_EXP));
    ASSERT_EQ(seg_hdr_decode(buf, sizeof(buf), base, &d), n);
    ASSERT_EQ(d.hflags & (SEG_F_FETCHED | SEG_F_TOKEN | SEG_F_STALE), SEG_F_FETCHED | SEG_F_STALE);

    /* an item without an exptime field: only "never" fits */
    struct seg_hdr h2 = {.klen = 1, .vlen = 1, .cas = base};
    n = seg_hdr_encode(buf, &h2, base);
    ASSERT_EQ(seg_hdr_decode(buf, n, base, &d), n);
    ASSERT(seg_hdr_set_exptime(buf, &d, 0));
    ASSERT(!seg_hdr_set_exptime(buf, &d, 5));

    /* CAS64: any cas fits in place */
    struct seg_hdr h3 = {.klen = 1, .vlen = 1, .cas = 1};
    n = seg_hdr_encode(buf, &h3, base);
    ASSERT_EQ(seg_hdr_decode(buf, n, base, &d), n);
    ASSERT(d.hflags & SEG_F_CAS64);
    ASSERT(seg_hdr_set_cas(buf, &d, base, UINT64_MAX));
    ASSERT_EQ(seg_hdr_decode(buf, n, base, &d), n);
    ASSERT_EQ(d.cas, UINT64_MAX);
}

int main(void) { return RUN_TESTS(); }
