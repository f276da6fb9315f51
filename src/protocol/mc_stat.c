#include "protocol/mc_stat.h"

#include <string.h>

size_t mc_stat_fmt(char *out, bool binary, uint32_t opaque, const char *name, size_t nname,
                   const char *val, size_t nval) {
    if (binary)
        return mc_bin_fmt_stat(out, opaque, name, nname, val, nval);
    char *p = out;
    memcpy(p, "STAT ", 5);
    p += 5;
    memcpy(p, name, nname);
    p += nname;
    *p++ = ' ';
    memcpy(p, val, nval);
    p += nval;
    memcpy(p, "\r\n", 2);
    return (size_t)(p + 2 - out);
}
