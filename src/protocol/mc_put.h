/*
 * mc_put.h -- a bounded writer for the request and reply formatters.
 *
 * Formatters write a line piece by piece into a caller's buffer; every put
 * checks the room left, and once a piece does not fit the writer stays
 * full, so a formatter writes without checking and asks once at the end:
 *
 *   struct mc_put w = MC_PUT_INIT(out, cap);
 *   mc_put(&w, "get ", 4); mc_put(&w, key.p, key.len); mc_put(&w, "\r\n", 2);
 *   return mc_put_len(&w, out);        0 when anything did not fit
 *
 * Header-only and internal to protocol/; no allocation, no state.
 */
#ifndef CELLAR_PROTOCOL_MC_PUT_H
#define CELLAR_PROTOCOL_MC_PUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "protocol/mc_num.h"

struct mc_put {
    char *p, *end;
    bool full;
};

#define MC_PUT_INIT(out, cap) ((struct mc_put){(out), (out) + (cap), false})

static inline void mc_put(struct mc_put *w, const void *s, size_t n) {
    if (w->full || (size_t)(w->end - w->p) < n) {
        w->full = true;
        return;
    }
    memcpy(w->p, s, n);
    w->p += n;
}

#define MC_PUT_LIT(w, lit) mc_put((w), (lit), sizeof(lit) - 1)

static inline void mc_put_u64(struct mc_put *w, uint64_t v) {
    if (!w->full && w->end - w->p >= MC_NUM_U64_DIGITS) {
        w->p = mc_num_fmt_u64(w->p, v);
        return;
    }
    char d[MC_NUM_U64_DIGITS];
    mc_put(w, d, (size_t)(mc_num_fmt_u64(d, v) - d));
}

static inline void mc_put_i64(struct mc_put *w, int64_t v) {
    if (v < 0) {
        mc_put(w, "-", 1);
        mc_put_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        mc_put_u64(w, (uint64_t)v);
    }
}

/* The bytes written since out, or 0 when something did not fit. */
static inline size_t mc_put_len(const struct mc_put *w, const char *out) {
    return w->full ? 0 : (size_t)(w->p - out);
}

#endif
