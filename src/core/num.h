/*
 * num.h -- decimal numbers read as memcached's safe_strtoull() reads them,
 * on (pointer, length) spans: the scanner the protocol codecs
 * (protocol/mc_num.c) and the engine's incr/decr share.
 *
 * num_scan() is the part every reader has in common: leading whitespace
 * (' ', \t \n \v \f \r: isspace() in the C locale), one optional '+' or
 * '-', at least one digit, no overflow of 64 bits, and then the end of
 * the span or a terminator.  What the terminator may be, and what a '-'
 * means for the result, differ between memcached's callers, so each
 * reader adds its own rule (mc_num.h for the protocol's tokens,
 * num_u64_value() below for a stored value).
 *
 * Pure functions: no allocation, no state, safe from any thread.  The
 * scanner is inline because the codecs read a number per request.
 */
#ifndef CELLAR_CORE_NUM_H
#define CELLAR_CORE_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* isspace() in the C locale. */
static inline bool num_space(unsigned char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/*
 * Stores whether a '-' was read and the magnitude of the digits.  Returns
 * false when there is no digit, the magnitude overflows 64 bits, or a
 * byte follows the digits that is neither whitespace nor (with nul_ends)
 * a NUL.
 */
static inline bool num_scan(const char *s, size_t len, bool nul_ends, bool *minus,
                            uint64_t *mag) {
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
    if (!any || (p < end && !num_space(*p) && !(nul_ends && *p == '\0')))
        return false;
    *mag = v;
    return true;
}

/*
 * memcached's safe_strtoull() on a stored value that is not NUL-terminated
 * (incr/decr's do_add_delta()): the number may also end at a NUL byte, and
 * a '-' read as its sign is refused when the result would be negative as a
 * signed number ("-0" is 0, "-1" is refused).  Returns false (and leaves
 * *out alone) when the span is not such a number.
 */
bool num_u64_value(const char *s, size_t len, uint64_t *out);

#endif
