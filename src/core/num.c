/*
 * num.c -- memcached's number rules on spans.  See num.h.
 */
#include "core/num.h"

bool num_u64_value(const char *s, size_t len, uint64_t *out) {
    bool minus;
    uint64_t v;
    if (!num_scan(s, len, true, &minus, &v))
        return false;
    if (minus)
        v = (uint64_t)0 - v;
    if (minus && (int64_t)v < 0)
        return false;
    *out = v;
    return true;
}
