/*
 * seg_api.c -- the segment store's own small API (seg.h: seg_store_set,
 * _get, _delete, _touch), for its tests and bench/segmem: memcached's
 * store rules written once on the engine's interface (seg_find_locked,
 * seg_write, seg_commit_locked), as the engine itself uses it.
 */
#include <string.h>

#include "storage/ht.h"
#include "storage/lock.h"
#include "storage/seg.h"

static bool expired(struct seg_store *s, const struct seg_hdr *h) {
    return h->exptime != 0 && h->exptime <= seg_store_clock(s);
}

/* The live copy of a key (an expired one found on the way is unlinked).  Stripe held. */
static bool find_live(struct seg_store *s, uint64_t hv, const char *key, size_t nkey,
                      struct seg_at *at) {
    if (!seg_find_locked(s, hv, key, nkey, at))
        return false;
    if (expired(s, &at->h)) {
        seg_unlink_locked(s, hv, at);
        return false;
    }
    return true;
}

/*
 * Writes and links one copy of key.  keep (non-NULL) is a touch's copy:
 * stored only while the key still has that cas, with it (in 8 bytes: it
 * may be older than the segment's base).  A cas that does not fit the
 * 4-byte field reserved for it (2^31 stores while one segment was open)
 * leaves those bytes dead and goes again with 8 (SEG_AGAIN).
 */
static enum seg_result store(struct seg_store *s, enum seg_op op, const char *key, size_t nkey,
                             const void *value, size_t nvalue, uint32_t cflags, uint32_t exptime,
                             uint64_t cas_in, uint64_t *cas_out, const uint64_t *keep, bool wide,
                             uint16_t state) {
    if (nkey == 0 || nkey > SEG_KEY_MAX || nvalue > UINT32_MAX)
        return SEG_TOO_LARGE;
    struct seg_hdr h = {.hflags = (uint16_t)((wide || keep != NULL ? SEG_F_CAS64 : 0) |
                                             (state & (SEG_F_FETCHED | SEG_F_TOKEN | SEG_F_STALE |
                                                       SEG_F_KEYB))),
                        .klen = (uint8_t)nkey,
                        .vlen = (uint32_t)nvalue, .exptime = exptime, .cflags = cflags};
    struct seg_resv rv;
    enum seg_result r = seg_write(s, &h, key, value, NULL, &rv);
    if (r != SEG_STORED)
        return r;
    uint64_t hv = ht_hash(key, nkey);
    struct mtx *x = lock_of(seg_store_locks(s), hv);
    mtx_lock(x);
    struct seg_at old;
    bool found = find_live(s, hv, key, nkey, &old);
    if (keep != NULL)
        r = !found || old.h.cas != *keep ? SEG_NOT_FOUND : SEG_STORED;
    else if (op == SEG_ADD && found)
        r = SEG_NOT_STORED;
    else if (op == SEG_REPLACE && !found)
        r = SEG_NOT_STORED;
    else if (op == SEG_CAS)
        r = !found ? SEG_NOT_FOUND : old.h.cas != cas_in ? SEG_EXISTS : SEG_STORED;
    if (r == SEG_STORED) {
        uint64_t cas = keep != NULL ? *keep : seg_store_cas_next(s);
        r = seg_commit_locked(s, hv, found ? &old : NULL, &rv, cas, NULL);
        if (r == SEG_STORED && cas_out != NULL)
            *cas_out = cas;
    }
    mtx_unlock(x);
    seg_resv_drop(s, &rv);
    return r;
}

enum seg_result seg_store_set(struct seg_store *s, enum seg_op op, const char *key, size_t nkey,
                              const void *value, size_t nvalue, uint32_t cflags,
                              uint32_t exptime, uint64_t cas_in, uint64_t *cas_out) {
    enum seg_result r = store(s, op, key, nkey, value, nvalue, cflags, exptime, cas_in, cas_out,
                              NULL, false, 0);
    if (r == SEG_AGAIN)
        r = store(s, op, key, nkey, value, nvalue, cflags, exptime, cas_in, cas_out, NULL, true,
                  0);
    return r;
}

bool seg_store_get(struct seg_store *s, const char *key, size_t nkey, struct seg_ref *ref) {
    uint64_t hv = ht_hash(key, nkey);
    struct mtx *x = lock_of(seg_store_locks(s), hv);
    mtx_lock(x);
    struct seg_at at;
    bool hit = find_live(s, hv, key, nkey, &at);
    if (hit) {
        seg_pin(s, at.seg);
        seg_set_state_locked(s, &at, SEG_F_FETCHED, 0);
        *ref = (struct seg_ref){.h = at.h, .key = at.key, .value = at.value, .seg = at.seg,
                                .ext = seg_ext_hold(&at)};
        ref->h.vlen = at.nbytes;
    }
    mtx_unlock(x);
    return hit;
}

void seg_store_release(struct seg_store *s, struct seg_ref *ref) {
    seg_ext_release(s, ref->ext);
    seg_unpin(s, ref->seg);
}

enum seg_result seg_store_delete(struct seg_store *s, const char *key, size_t nkey) {
    uint64_t hv = ht_hash(key, nkey);
    struct mtx *x = lock_of(seg_store_locks(s), hv);
    mtx_lock(x);
    struct seg_at at;
    bool hit = find_live(s, hv, key, nkey, &at);
    if (hit)
        seg_unlink_locked(s, hv, &at);
    mtx_unlock(x);
    return hit ? SEG_DELETED : SEG_NOT_FOUND;
}

enum seg_result seg_store_touch(struct seg_store *s, const char *key, size_t nkey,
                                uint32_t exptime) {
    uint64_t hv = ht_hash(key, nkey);
    struct mtx *x = lock_of(seg_store_locks(s), hv);
    mtx_lock(x);
    struct seg_at at;
    if (!find_live(s, hv, key, nkey, &at)) {
        mtx_unlock(x);
        return SEG_NOT_FOUND;
    }
    if (seg_set_exptime_locked(s, &at, exptime)) {
        mtx_unlock(x);
        return SEG_TOUCHED;
    }
    /* no exptime field to write: a copy with it and the item's state, written
       holding the stripe (the store's interface allows it) */
    struct seg_hdr h = at.h;
    h.exptime = exptime;
    h.hflags |= SEG_F_CAS64;
    h.vlen = at.nbytes;             /* (an out-of-line value is copied out of line) */
    struct seg_resv rv;
    seg_pin(s, at.seg);             /* the source stays while the write may evict */
    enum seg_result r = seg_write(s, &h, at.key, at.value, x, &rv);
    seg_unpin(s, at.seg);
    if (r == SEG_STORED) {
        /* the write may have evicted the item's own segment (this stripe was skipped,
           the item not): look again */
        struct seg_at now;
        if (find_live(s, hv, key, nkey, &now) && now.loc == at.loc)
            r = seg_commit_locked(s, hv, &at, &rv, at.h.cas, NULL);
        else
            r = SEG_NOT_FOUND;
        seg_resv_drop(s, &rv);
    }
    mtx_unlock(x);
    return r == SEG_STORED ? SEG_TOUCHED : r;
}

