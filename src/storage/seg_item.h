/*
 * seg_item.h -- an item as the segment engine (-o storage=seg) lays it in
 * a segment: a header of 7 to 24 bytes, then the key, then the value, back
 * to back with the next item; no terminator, no padding.
 *
 *   byte 0   hflags: CFLAGS EXP CAS64 FETCHED TOKEN STALE KEYB MORE
 *   [byte 1  present with MORE: HOLD EXT GHOST, five bits that must be 0]
 *   klen     1 byte, 1..250
 *   vlen     LEB128, 1..5 bytes (7 bits a byte, low first; < 2^32)
 *   cas      4 bytes: cas - the segment's cas_base; 8 bytes with CAS64
 *            (a cas below the base, or 2^32 or more above it)
 *   exptime  4 bytes, with EXP (engine seconds; absent: never)
 *   cflags   4 bytes, with CFLAGS (client flags; absent: 0)
 *   key, value
 *
 * Integers are little-endian.  The reference load (16-byte keys, 100-byte
 * values, flags 0, no TTL) takes 1 + 1 + 1 + 4 = 7 bytes of header: 123
 * bytes an item, where a slab item takes 176 (../shared/reference/
 * segcache.md, layout "L2").
 *
 * What may change in place, under the key's lock: the bits of byte 0 other
 * than the field-presence ones (FETCHED, TOKEN, STALE), the exptime when
 * EXP is present, the cas when the new one fits the field already there,
 * and the value bytes.  Anything else is a new copy of the item.
 *
 * Pure functions over buffers: no allocation, no locks, no I/O.
 */
#ifndef CELLAR_STORAGE_SEG_ITEM_H
#define CELLAR_STORAGE_SEG_ITEM_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SEG_KEY_MAX 250
#define SEG_HDR_MAX 24          /* 2 flags + 1 klen + 5 vlen + 8 cas + 4 exptime + 4 cflags */

/* struct seg_hdr.hflags: byte 0 in the low 8 bits, byte 1 in the high 8. */
enum seg_hflag {
    SEG_F_CFLAGS = 1 << 0,      /* client flags stored (they are not 0) */
    SEG_F_EXP = 1 << 1,         /* exptime stored (it is not "never") */
    SEG_F_CAS64 = 1 << 2,       /* cas stored whole, not as a 4-byte delta */
    SEG_F_FETCHED = 1 << 3,     /* read since stored (mg h, stats) */
    SEG_F_TOKEN = 1 << 4,       /* a lease's win token was handed out (W, then Z) */
    SEG_F_STALE = 1 << 5,       /* invalidated by md I / ms I (X) */
    SEG_F_KEYB = 1 << 6,        /* the key came base64 (meta b): k answers in base64 */
    SEG_F_MORE = 1 << 7,        /* byte 1 follows */
    SEG_F_HOLD = 1 << 8,        /* delete hold-off tombstone: invisible, refuses add */
    SEG_F_EXT = 1 << 9,         /* the value lies out of line; the bytes here say where */
    SEG_F_GHOST = 1 << 10,      /* s3fifo: its key was in the ghost when stored (seg.c) */
};
/* The bits byte 1 holds. */
#define SEG_F_BYTE1 (SEG_F_HOLD | SEG_F_EXT | SEG_F_GHOST)
/* The presence bits follow the fields' values; the encoder sets them. */
#define SEG_F_LAYOUT (SEG_F_CFLAGS | SEG_F_EXP | SEG_F_CAS64 | SEG_F_MORE)
/* The state bits a caller may set. */
#define SEG_F_STATE (SEG_F_FETCHED | SEG_F_TOKEN | SEG_F_STALE | SEG_F_KEYB | SEG_F_BYTE1)

struct seg_hdr {
    uint16_t hflags;            /* enum seg_hflag */
    uint8_t klen;
    uint32_t vlen;
    uint64_t cas;               /* whole, whatever the field's width */
    uint32_t exptime;           /* 0: never */
    uint32_t cflags;
};

/*
 * The header's length once encoded against a segment whose cas_base is
 * base.  A field is there when its value needs it (CFLAGS when cflags !=
 * 0, EXP when exptime != 0, CAS64 when cas - base does not fit 32 bits)
 * or when h->hflags has its bit already (a header decoded from an item
 * keeps that item's layout: an exptime touched to "never" in place is a
 * stored 0).
 */
size_t seg_hdr_len(const struct seg_hdr *h, uint64_t base);

/* Writes the header (seg_hdr_len() bytes) at out; returns its length.  klen must be 1..250. */
size_t seg_hdr_encode(uint8_t *out, const struct seg_hdr *h, uint64_t base);

/* seg_hdr_decode() for any layout (the inline one takes the common ones itself). */
size_t seg_hdr_decode_any(const uint8_t *in, size_t avail, uint64_t base, struct seg_hdr *h);

/*
 * Reads a header from in[0, avail) written against base.  Returns its
 * length, or 0 when the bytes are cut short or are no header (klen 0 or
 * over 250, a vlen over 5 bytes or 2^32, reserved bits set).  Inline for
 * a get's common case: one flag byte and a value under 128 bytes.
 */
static inline size_t seg_hdr_decode(const uint8_t *in, size_t avail, uint64_t base,
                                    struct seg_hdr *h) {
    if (avail < SEG_HDR_MAX)
        return seg_hdr_decode_any(in, avail, base, h);
    uint8_t f = __atomic_load_n(in, __ATOMIC_RELAXED), k = in[1], v = in[2];
    if ((f & SEG_F_MORE) || k == 0 || k > SEG_KEY_MAX || (v & 0x80))
        return seg_hdr_decode_any(in, avail, base, h);
    const uint8_t *p = in + 3;
    uint64_t w = 0;
    if (f & SEG_F_CAS64) {
        memcpy(&w, p, 8);
        h->cas = le64toh(w);
        p += 8;
    } else {
        uint32_t d;
        memcpy(&d, p, 4);
        h->cas = base + le32toh(d);
        p += 4;
    }
    uint32_t x = 0;
    if (f & SEG_F_EXP) {
        memcpy(&x, p, 4);
        p += 4;
    }
    h->exptime = le32toh(x);
    x = 0;
    if (f & SEG_F_CFLAGS) {
        memcpy(&x, p, 4);
        p += 4;
    }
    h->cflags = le32toh(x);
    h->hflags = f;
    h->klen = k;
    h->vlen = v;
    return (size_t)(p - in);
}

/* The whole item's bytes: header, key and the value (or its out-of-line reference) as stored. */
static inline size_t seg_item_len(const struct seg_hdr *h, uint64_t base) {
    return seg_hdr_len(h, base) + h->klen + h->vlen;
}

/*
 * In-place changes of an encoded item at it (its header decoded into h
 * against base).  Each returns false, changing nothing, when the change
 * does not fit the layout there: the caller then writes a new copy.
 */
bool seg_hdr_set_cas(uint8_t *it, const struct seg_hdr *h, uint64_t base, uint64_t cas);
bool seg_hdr_set_exptime(uint8_t *it, const struct seg_hdr *h, uint32_t exptime);
/* Sets and clears state bits of byte 0 (FETCHED, TOKEN, STALE only; atomically). */
bool seg_hdr_set_state(uint8_t *it, uint16_t set, uint16_t clear);

/*
 * The header's length and the key and value lengths, reading none of the
 * fields that change in place (cas, exptime): for a walk over a segment
 * that holds no key's lock.  0 as seg_hdr_decode() says 0.
 */
size_t seg_hdr_span(const uint8_t *in, size_t avail, uint8_t *klen, uint32_t *vlen);

#endif
