/*
 * mc_num.c -- memcached's safe_strto* rules on spans, on core/num.h's
 * scanner (a token ends at whitespace or the span's end).  See mc_num.h.
 */
#include "protocol/mc_num.h"

#include <string.h>

#include "core/num.h"

/*
 * The scanner for a token (it ends at whitespace or the span's end), kept
 * out of line as it was before it moved to core/num.h: one copy for both
 * readers, so the codecs' cost per request stays what it was (inlined, it
 * measured 28 instructions fewer per set, a change this move should not
 * make on its own).
 */
__attribute__((noinline)) static bool num_scan_token(const char *s, size_t len, bool *minus,
                                                     uint64_t *mag) {
    return num_scan(s, len, false, minus, mag);
}

bool mc_num_u64(const char *p, size_t len, uint64_t *out) {
    bool minus;
    uint64_t v;

    if (!num_scan_token(p, len, &minus, &v))
        return false;
    if (minus)
        v = (uint64_t)0 - v;
    /*
     * memcached then looks for a '-' anywhere in the token (strchr on the
     * NUL-terminated word), not just in what strtoull read: so
     * "18446744073709551615\t-" is refused although its number has no sign.
     */
    if ((int64_t)v < 0 && memchr(p, '-', len) != NULL)
        return false;
    *out = v;
    return true;
}

bool mc_num_i64(const char *p, size_t len, int64_t *out) {
    bool minus;
    uint64_t v;

    if (!num_scan_token(p, len, &minus, &v))
        return false;
    if (minus) {
        if (v > (uint64_t)INT64_MAX + 1)
            return false;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)v;
    }
    return true;
}

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline unsigned ndigits_u64(uint64_t v) {
    unsigned n = 1;
    for (;;) {
        if (v < 10) return n;
        if (v < 100) return n + 1;
        if (v < 1000) return n + 2;
        if (v < 10000) return n + 3;
        v /= 10000;
        n += 4;
    }
}

/*
 * The length is known first, then the digits are laid down from the right
 * two at a time, in 32-bit arithmetic once the value fits.
 */
char *mc_num_fmt_u64(char *p, uint64_t v) {
    if (v < 10) {               /* client flags are mostly 0 */
        *p = (char)('0' + v);
        return p + 1;
    }
    char *end = p + ndigits_u64(v);
    char *q = end;

    while (v > UINT32_MAX) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        q -= 2;
        memcpy(q, digit_pairs + 2 * r, 2);
    }
    uint32_t w = (uint32_t)v;
    while (w >= 100) {
        unsigned r = w % 100;
        w /= 100;
        q -= 2;
        memcpy(q, digit_pairs + 2 * r, 2);
    }
    if (w >= 10) {
        q -= 2;
        memcpy(q, digit_pairs + 2 * w, 2);
    } else {
        *--q = (char)('0' + w);
    }
    return end;
}
