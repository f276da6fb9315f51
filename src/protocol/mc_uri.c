/*
 * mc_uri.c -- memcached's uriencode (mc_uri.h).
 */
#include "protocol/mc_uri.h"

char *mc_uri_encode(char *q, const char *s, unsigned n) {
    static const char hex[] = "0123456789ABCDEF";
    for (unsigned i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            *q++ = (char)ch;
        } else {
            *q++ = '%';
            *q++ = hex[ch >> 4];
            *q++ = hex[ch & 15];
        }
    }
    return q;
}
