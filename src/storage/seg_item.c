/*
 * seg_item.c -- the segment engine's item header (seg_item.h has the
 * layout).
 */
#include <endian.h>
#include <string.h>

#include "storage/seg_item.h"

static bool cas_fits(uint64_t cas, uint64_t base) {
    return cas >= base && cas - base <= UINT32_MAX;
}

/* The layout bits h encodes to: what its values need, plus what it has. */
static uint16_t layout_of(const struct seg_hdr *h, uint64_t base) {
    uint16_t f = (uint16_t)(h->hflags & (SEG_F_STATE | SEG_F_CFLAGS | SEG_F_EXP | SEG_F_CAS64));
    if (h->cflags != 0)
        f |= SEG_F_CFLAGS;
    if (h->exptime != 0)
        f |= SEG_F_EXP;
    if (!cas_fits(h->cas, base))
        f |= SEG_F_CAS64;
    if (f & SEG_F_BYTE1)
        f |= SEG_F_MORE;
    else
        f &= (uint16_t)~SEG_F_MORE;
    return f;
}

static size_t varint_len(uint32_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static size_t fields_len(uint16_t f, uint32_t vlen) {
    return 1 + ((f & SEG_F_MORE) ? 1 : 0) + 1 + varint_len(vlen) + ((f & SEG_F_CAS64) ? 8 : 4) +
           ((f & SEG_F_EXP) ? 4 : 0) + ((f & SEG_F_CFLAGS) ? 4 : 0);
}

size_t seg_hdr_len(const struct seg_hdr *h, uint64_t base) {
    return fields_len(layout_of(h, base), h->vlen);
}

static void put_le(uint8_t *p, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t get_le(const uint8_t *p, size_t n) {
    if (n == 4) {
        uint32_t x;
        memcpy(&x, p, 4);
        return le32toh(x);
    }
    uint64_t x;
    memcpy(&x, p, 8);
    return le64toh(x);
}

size_t seg_hdr_encode(uint8_t *out, const struct seg_hdr *h, uint64_t base) {
    uint16_t f = layout_of(h, base);
    uint8_t *p = out;
    *p++ = (uint8_t)f;
    if (f & SEG_F_MORE)
        *p++ = (uint8_t)(f >> 8);
    *p++ = h->klen;
    uint32_t v = h->vlen;
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    if (f & SEG_F_CAS64) {
        put_le(p, h->cas, 8);
        p += 8;
    } else {
        put_le(p, h->cas - base, 4);
        p += 4;
    }
    if (f & SEG_F_EXP) {
        put_le(p, h->exptime, 4);
        p += 4;
    }
    if (f & SEG_F_CFLAGS) {
        put_le(p, h->cflags, 4);
        p += 4;
    }
    return (size_t)(p - out);
}

/* Byte 0, whose state bits change in place while others may read it: one atomic byte. */
static inline uint8_t byte0(const uint8_t *in) { return __atomic_load_n(in, __ATOMIC_RELAXED); }

/*
 * The fixed part of a header: flag bytes, klen and vlen, checked.  Returns
 * where the cas field starts (bytes from in), or 0 when cut short or malformed.
 */
static size_t hdr_prefix(const uint8_t *in, size_t avail, uint16_t *flags, uint8_t *klen,
                         uint32_t *vlen) {
    const uint8_t *p = in, *end = in + avail;
    if (p == end)
        return 0;
    if (avail >= 3) {               /* the common case: one flag byte, vlen under 128 */
        uint8_t f0 = byte0(p), k = p[1], v0 = p[2];
        if (!(f0 & SEG_F_MORE) && k != 0 && k <= SEG_KEY_MAX && !(v0 & 0x80)) {
            *flags = f0;
            *klen = k;
            *vlen = v0;
            return 3;
        }
    }
    uint16_t f = byte0(p++);
    if (f & SEG_F_MORE) {
        if (p == end || (*p & ~(SEG_F_BYTE1 >> 8)) || *p == 0)
            return 0;               /* reserved bits, or a MORE with nothing in it */
        f |= (uint16_t)(*p++ << 8);
    }
    if (p == end || *p == 0 || *p > SEG_KEY_MAX)
        return 0;
    *klen = *p++;
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
        if (p == end || shift > 28)
            return 0;
        uint8_t b = *p++;
        if (b == 0 && shift > 0)
            return 0;               /* not the shortest form: the offsets assume it */
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    if (v > UINT32_MAX)
        return 0;
    *vlen = (uint32_t)v;
    *flags = f;
    return (size_t)(p - in);
}

static size_t rest_len(uint16_t f) {
    return ((f & SEG_F_CAS64) ? 8 : 4) + ((f & SEG_F_EXP) ? 4 : 0) + ((f & SEG_F_CFLAGS) ? 4 : 0);
}

size_t seg_hdr_decode_any(const uint8_t *in, size_t avail, uint64_t base, struct seg_hdr *h) {
    uint16_t f;
    size_t at = hdr_prefix(in, avail, &f, &h->klen, &h->vlen);
    if (at == 0)
        return 0;
    const uint8_t *p = in + at, *end = in + avail;
    if ((size_t)(end - p) < rest_len(f))
        return 0;
    if (f & SEG_F_CAS64) {
        h->cas = get_le(p, 8);
        p += 8;
    } else {
        h->cas = base + get_le(p, 4);
        p += 4;
    }
    h->exptime = 0;
    if (f & SEG_F_EXP) {
        h->exptime = (uint32_t)get_le(p, 4);
        p += 4;
    }
    h->cflags = 0;
    if (f & SEG_F_CFLAGS) {
        h->cflags = (uint32_t)get_le(p, 4);
        p += 4;
    }
    h->hflags = f;
    return (size_t)(p - in);
}

/* Where the cas field starts in an item whose header is h. */
static size_t cas_at(const struct seg_hdr *h) {
    return 1 + ((h->hflags & SEG_F_MORE) ? 1 : 0) + 1 + varint_len(h->vlen);
}

bool seg_hdr_set_cas(uint8_t *it, const struct seg_hdr *h, uint64_t base, uint64_t cas) {
    size_t at = cas_at(h);
    if (h->hflags & SEG_F_CAS64) {
        put_le(it + at, cas, 8);
        return true;
    }
    if (!cas_fits(cas, base))
        return false;
    put_le(it + at, cas - base, 4);
    return true;
}

bool seg_hdr_set_exptime(uint8_t *it, const struct seg_hdr *h, uint32_t exptime) {
    if (!(h->hflags & SEG_F_EXP))
        return exptime == 0;        /* "never" is what an absent field says */
    put_le(it + cas_at(h) + ((h->hflags & SEG_F_CAS64) ? 8 : 4), exptime, 4);
    return true;
}

bool seg_hdr_set_state(uint8_t *it, uint16_t set, uint16_t clear) {
    const uint16_t ok = SEG_F_FETCHED | SEG_F_TOKEN | SEG_F_STALE;
    if ((set | clear) & ~ok)
        return false;
    if (clear)
        __atomic_fetch_and(it, (uint8_t)~clear, __ATOMIC_RELAXED);
    if (set)
        __atomic_fetch_or(it, (uint8_t)set, __ATOMIC_RELAXED);
    return true;
}

size_t seg_hdr_span(const uint8_t *in, size_t avail, uint8_t *klen, uint32_t *vlen) {
    uint16_t f;
    size_t at = hdr_prefix(in, avail, &f, klen, vlen);
    return at != 0 && at + rest_len(f) <= avail ? at + rest_len(f) : 0;
}
