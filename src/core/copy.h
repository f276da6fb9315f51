/*
 * copy.h -- memcpy for short, variable lengths (keys, reply lines).
 *
 * Given a length it knows to be bounded, gcc inlines memcpy as a rep movs,
 * whose start-up costs more than copying a 16-byte key; a call to memcpy
 * costs about as much.  copy_short() moves overlapping words instead: two
 * moves for up to 32 bytes, never a byte outside [0, n) of either side.
 */
#ifndef CELLAR_CORE_COPY_H
#define CELLAR_CORE_COPY_H

#include <stddef.h>
#include <string.h>

static inline void copy_short(void *dst, const void *src, size_t n) {
    char *d = dst;
    const char *s = src;
    if (n >= 16) {
        for (size_t i = 16; i < n - 16; i += 16)
            memcpy(d + i, s + i, 16);
        memcpy(d, s, 16);
        memcpy(d + n - 16, s + n - 16, 16);
    } else if (n >= 8) {
        memcpy(d, s, 8);
        memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        memcpy(d, s, 4);
        memcpy(d + n - 4, s + n - 4, 4);
    } else if (n > 0) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

#endif
