/*
 * mc_num.c -- memcached's safe_strto* rules on spans.  See mc_num.h.
 */
#include "protocol/mc_num.h"

#include <string.h>

/* isspace() in the C locale. */
static inline bool num_space(unsigned char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/*
 * The part both helpers share: whitespace, sign, digits, terminator.
 * Stores whether a '-' was read and the magnitude of the digits.  Returns
 * false when there is no digit, the magnitude overflows 64 bits, or a
 * byte other than whitespace follows the digits.
 */
static bool num_scan(const char *s, size_t len, bool *minus, uint64_t *mag) {
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *end = p + len;
    uint64_t v = 0;
    bool any = false;

    while (p < end && num_space(*p))
        p++;
    *minus = false;
    if (p < end && (*p == '-' || *p == '+')) {
        *minus = *p == '-';
        p++;
    }
    /* 19 digits cannot overflow 64 bits; only later ones are checked */
    const unsigned char *fast = end - p > 19 ? p + 19 : end;
    while (p < fast && *p >= '0' && *p <= '9') {
        v = v * 10 + (uint64_t)(*p - '0');
        any = true;
        p++;
    }
    while (p < end && *p >= '0' && *p <= '9') {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > UINT64_MAX / 10 || v * 10 > UINT64_MAX - d)
            return false;
        v = v * 10 + d;
        any = true;
        p++;
    }
    if (!any || (p < end && !num_space(*p)))
        return false;
    *mag = v;
    return true;
}

bool mc_num_u64(const char *p, size_t len, uint64_t *out) {
    bool minus;
    uint64_t v;

    if (!num_scan(p, len, &minus, &v))
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

    if (!num_scan(p, len, &minus, &v))
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
