/*
 * show.h -- bytes as a printable line for test failure messages: printable
 * ASCII as it is, anything else as \xNN, cut short with "..." past ~150
 * characters.  One static buffer: one call per message.
 */
#ifndef CELLAR_TEST_PROTOCOL_SHOW_H
#define CELLAR_TEST_PROTOCOL_SHOW_H

#include <stdio.h>
#include <stddef.h>

static const char *show(const char *s, size_t n) {
    static char out[160];
    size_t o = 0, i;
    for (i = 0; i < n && o + 8 < sizeof(out); i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 32 && c < 127 && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, sizeof(out) - o, "\\x%02x", c);
    }
    if (i < n)
        o += (size_t)snprintf(out + o, sizeof(out) - o, "...");
    out[o] = '\0';
    return out;
}

#endif
