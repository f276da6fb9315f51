/*
 * test_seg.c -- the segment store: memcached's store rules and exact CAS,
 * touch in place and by copy, items expiring one by one and segments
 * expiring whole, FIFO eviction a segment at a time, segments freed when
 * their last item dies, a property test against a reference map under
 * churn (no dead item ever served; without eviction no live item lost;
 * with it, no more lost than evicted), and threads storing and reading
 * while segments are evicted under them.
 */
#include "harness.h"
#include "storage/ht.h"
#include "storage/seg.h"
#include "storage/seg_evict.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K(s) s, sizeof(s) - 1

static bool merge_on;               /* mk() makes stores that evict by merging */
static bool s3_on;                  /* ... or by S3-FIFO over segments */

static struct seg_store *mk(size_t mem, uint32_t seg_size) {
    struct seg_config c;
    seg_config_defaults(&c);
    c.evict = merge_on ? &seg_evict_merge : s3_on ? &seg_evict_s3fifo : &seg_evict_fifo;
    c.mem_limit = mem;
    c.seg_size = seg_size;
    c.lock_power = 4;
    c.index_power = 4;
    char err[128];
    struct seg_store *s = seg_store_create(&c, err, sizeof(err));
    if (s == NULL)
        fprintf(stderr, "seg_store_create: %s\n", err);
    else
        seg_store_clock_set(s, 1000000);
    return s;
}

/*
 * What the tests store and read with: a set, add, replace or cas, a get,
 * a delete and a touch, each written here on the store's primitives
 * (seg_write, seg_commit_locked, seg_find_locked...) as item_seg.c uses
 * them, with just enough of memcached's rules to drive the store.  The
 * engine's own rules on this back end are test_engine_seg.c's.
 */
/* A pinned item: valid until t_release().  h.vlen is the value's length. */
struct seg_ref {
    struct seg_hdr h;
    const char *key;
    const char *value;
    uint32_t seg;
    struct seg_ext *ext;        /* an out-of-line value held */
};

enum seg_op { SEG_SET, SEG_ADD, SEG_REPLACE, SEG_CAS };

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

static enum seg_result t_set(struct seg_store *s, enum seg_op op, const char *key, size_t nkey,
                              const void *value, size_t nvalue, uint32_t cflags,
                              uint32_t exptime, uint64_t cas_in, uint64_t *cas_out) {
    enum seg_result r = store(s, op, key, nkey, value, nvalue, cflags, exptime, cas_in, cas_out,
                              NULL, false, 0);
    if (r == SEG_AGAIN)
        r = store(s, op, key, nkey, value, nvalue, cflags, exptime, cas_in, cas_out, NULL, true,
                  0);
    return r;
}

static bool t_get(struct seg_store *s, const char *key, size_t nkey, struct seg_ref *ref) {
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

static void t_release(struct seg_store *s, struct seg_ref *ref) {
    seg_ext_release(s, ref->ext);
    seg_unpin(s, ref->seg);
}

static enum seg_result t_delete(struct seg_store *s, const char *key, size_t nkey) {
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

static enum seg_result t_touch(struct seg_store *s, const char *key, size_t nkey,
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

static bool get_is(struct seg_store *s, const char *key, const char *want) {
    struct seg_ref r;
    if (!t_get(s, key, strlen(key), &r))
        return want == NULL;
    bool ok = want != NULL && r.h.vlen == strlen(want) && memcmp(r.value, want, r.h.vlen) == 0 &&
              r.h.klen == strlen(key) && memcmp(r.key, key, r.h.klen) == 0;
    t_release(s, &r);
    return ok;
}

TEST(store_rules_and_cas) {
    struct seg_store *s = mk(1 << 20, 64 << 10);
    ASSERT(s != NULL);
    uint64_t c1, c2, c3;
    ASSERT_EQ(t_set(s, SEG_SET, K("a"), K("one"), 5, 0, 0, &c1), SEG_STORED);
    ASSERT(get_is(s, "a", "one"));
    ASSERT_EQ(t_set(s, SEG_ADD, K("a"), K("two"), 0, 0, 0, NULL), SEG_NOT_STORED);
    ASSERT_EQ(t_set(s, SEG_REPLACE, K("b"), K("two"), 0, 0, 0, NULL), SEG_NOT_STORED);
    ASSERT(get_is(s, "b", NULL));
    ASSERT_EQ(t_set(s, SEG_REPLACE, K("a"), K("two"), 0, 0, 0, &c2), SEG_STORED);
    ASSERT(c2 > c1);
    ASSERT_EQ(t_set(s, SEG_CAS, K("a"), K("three"), 0, 0, c1, NULL), SEG_EXISTS);
    ASSERT_EQ(t_set(s, SEG_CAS, K("zz"), K("three"), 0, 0, c2, NULL), SEG_NOT_FOUND);
    ASSERT_EQ(t_set(s, SEG_CAS, K("a"), K("three"), 7, 0, c2, &c3), SEG_STORED);
    ASSERT(c3 > c2);
    struct seg_ref r;
    ASSERT(t_get(s, K("a"), &r));
    ASSERT_EQ(r.h.cas, c3);
    ASSERT_EQ(r.h.cflags, 7);
    ASSERT(!(r.h.hflags & SEG_F_FETCHED));      /* not read before this */
    t_release(s, &r);
    ASSERT(t_get(s, K("a"), &r));
    ASSERT(r.h.hflags & SEG_F_FETCHED);
    t_release(s, &r);
    ASSERT_EQ(t_delete(s, K("a")), SEG_DELETED);
    ASSERT_EQ(t_delete(s, K("a")), SEG_NOT_FOUND);
    ASSERT(get_is(s, "a", NULL));
    ASSERT_EQ(t_set(s, SEG_ADD, K("a"), K("four"), 0, 0, 0, NULL), SEG_STORED);
    static char big[600000];        /* over half the memory limit */
    memset(big, 'x', sizeof(big));
    ASSERT_EQ(t_set(s, SEG_SET, K("big"), big, sizeof(big), 0, 0, 0, NULL),
              SEG_TOO_LARGE);
    struct seg_stats st;
    seg_store_stats(s, &st);
    ASSERT_EQ(st.live_items, 1);
    seg_store_destroy(&s);
}

TEST(expiry_per_item_and_per_segment) {
    struct seg_store *s = mk(1 << 20, 64 << 10);
    uint32_t now = 1000000;
    ASSERT_EQ(t_set(s, SEG_SET, K("short"), K("v"), 0, now + 10, 0, NULL), SEG_STORED);
    ASSERT_EQ(t_set(s, SEG_SET, K("long"), K("v"), 0, now + 5000, 0, NULL), SEG_STORED);
    ASSERT_EQ(t_set(s, SEG_SET, K("never"), K("v"), 0, 0, 0, NULL), SEG_STORED);
    /* touch: in place when the item has an exptime, by copy when it has none */
    ASSERT_EQ(t_touch(s, K("long"), now + 6000), SEG_TOUCHED);
    ASSERT_EQ(t_touch(s, K("never"), now + 20), SEG_TOUCHED);
    ASSERT_EQ(t_touch(s, K("nobody"), now + 20), SEG_NOT_FOUND);
    struct seg_ref r;
    ASSERT(t_get(s, K("never"), &r));
    ASSERT_EQ(r.h.exptime, now + 20);
    uint64_t cas_never = r.h.cas;
    t_release(s, &r);
    ASSERT_EQ(t_set(s, SEG_SET, K("other"), K("v"), 0, 0, 0, NULL), SEG_STORED);
    ASSERT(t_get(s, K("never"), &r));   /* the copy kept its cas */
    ASSERT_EQ(r.h.cas, cas_never);
    t_release(s, &r);
    seg_store_clock_set(s, now + 10);
    ASSERT(get_is(s, "short", NULL));           /* exact: gone at its second */
    ASSERT(get_is(s, "never", "v"));
    seg_store_clock_set(s, now + 21);
    ASSERT(get_is(s, "never", NULL));
    ASSERT(get_is(s, "long", "v"));
    /* segments: fill the 10-second bucket past one segment, let it all expire */
    char val[1000];
    memset(val, 'e', sizeof(val));
    now += 21;
    for (int i = 0; i < 200; i++) {
        char k[16];
        snprintf(k, sizeof(k), "e%d", i);
        ASSERT_EQ(t_set(s, SEG_SET, k, strlen(k), val, sizeof(val), 0, now + 10, 0,
                                NULL), SEG_STORED);
    }
    struct seg_stats before, after;
    seg_store_stats(s, &before);
    ASSERT(before.sealed >= 2);
    seg_store_clock_set(s, now + 11);
    ASSERT(seg_store_step(s, 100) >= 2);
    seg_store_stats(s, &after);
    ASSERT(after.expired_segments >= 2);
    ASSERT(after.free > before.free);
    ASSERT(get_is(s, "long", "v"));
    seg_store_destroy(&s);
}

TEST(fifo_eviction_a_segment_at_a_time) {
    struct seg_store *s = mk(8 * (64 << 10), 64 << 10);     /* 8 segments */
    char val[1000];
    memset(val, 'f', sizeof(val));
    for (int i = 0; i < 2000; i++) {
        char k[16];
        snprintf(k, sizeof(k), "f%d", i);
        ASSERT_EQ(t_set(s, SEG_SET, k, strlen(k), val, sizeof(val), 0, 0, 0, NULL),
                  SEG_STORED);
    }
    struct seg_stats st;
    seg_store_stats(s, &st);
    ASSERT(st.evicted_segments > 0);
    ASSERT_EQ(st.live_items + st.evicted_items, 2000);
    struct seg_ref r;
    ASSERT(t_get(s, K("f1999"), &r));   /* the newest are kept, the oldest gone */
    t_release(s, &r);
    ASSERT(!t_get(s, K("f0"), &r));
    /* a pinned segment is skipped, not waited on, and freed once released */
    char k0[16];
    int oldest = (int)st.evicted_items;
    snprintf(k0, sizeof(k0), "f%d", oldest);
    ASSERT(t_get(s, k0, strlen(k0), &r));
    for (int i = 2000; i < 2300; i++) {
        char k[16];
        snprintf(k, sizeof(k), "f%d", i);
        ASSERT_EQ(t_set(s, SEG_SET, k, strlen(k), val, sizeof(val), 0, 0, 0, NULL),
                  SEG_STORED);
    }
    ASSERT(memcmp(r.value, val, sizeof(val)) == 0 && r.h.klen == strlen(k0) &&
           memcmp(r.key, k0, r.h.klen) == 0);   /* still readable while held */
    t_release(s, &r);
    seg_store_step(s, 10);
    seg_store_destroy(&s);
}

/*
 * Overwrites of a few keys: each sealed segment whose last live item dies
 * goes straight back to the pool, so churn never evicts; one a reader
 * still pins stays readable and is freed later.
 */
TEST(emptied_segments_come_free_at_once) {
    struct seg_store *s = mk(8 * (64 << 10), 64 << 10);     /* 8 segments */
    char val[1000];
    memset(val, 'e', sizeof(val));
    struct seg_ref r;
    for (int i = 0; i < 20000; i++) {
        char k[16];
        snprintf(k, sizeof(k), "e%d", i % 50);
        val[0] = (char)('a' + i % 26);
        ASSERT_EQ(t_set(s, SEG_SET, k, strlen(k), val, sizeof(val), 0, 0, 0, NULL),
                  SEG_STORED);
        if (i == 100)
            ASSERT(t_get(s, K("e0"), &r));      /* pinned: overwritten just after */
    }
    struct seg_stats st;
    seg_store_stats(s, &st);
    ASSERT_EQ(st.evicted_segments, 0);
    ASSERT_EQ(st.evicted_items, 0);
    ASSERT(st.emptied >= 250);          /* 20 MB through 512 KB */
    ASSERT_EQ(st.live_items, 50);
    ASSERT(st.free + st.sealed + 1 == 8);
    ASSERT(r.value[0] == 'a' + 100 % 26 && memcmp(r.value + 1, val + 1, sizeof(val) - 1) == 0);
    t_release(s, &r);
    for (int i = 0; i < 50; i++) {
        char k[16];
        snprintf(k, sizeof(k), "e%d", i);
        ASSERT(t_get(s, k, strlen(k), &r));
        ASSERT_EQ(r.value[0], 'a' + (19950 + i) % 26);
        t_release(s, &r);
    }
    seg_store_destroy(&s);
}

/*
 * A read-ahead's slots are only hints: keys deleted, overwritten and moved
 * by the index's growth after the read-ahead are still found right (or
 * not at all) by the lookups that follow it.
 */
TEST(lookups_after_a_read_ahead_see_what_changed_since) {
    struct seg_store *s = mk(64 << 20, 64 << 10);
    char key[32], val[16];
    uint64_t hv[64];
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 64; i++) {
            snprintf(key, sizeof(key), "h%d-%d", round, i);
            snprintf(val, sizeof(val), "v%d", i);
            ASSERT_EQ(t_set(s, SEG_SET, key, strlen(key), val, strlen(val), 0, 0, 0,
                                    NULL), SEG_STORED);
            hv[i] = ht_hash(key, strlen(key));
        }
        seg_store_prefetch(s, hv, 64);
        for (int i = 0; i < 64; i += 3) {
            snprintf(key, sizeof(key), "h%d-%d", round, i);
            ASSERT_EQ(t_delete(s, key, strlen(key)), SEG_DELETED);
        }
        for (int i = 1; i < 64; i += 3) {
            snprintf(key, sizeof(key), "h%d-%d", round, i);
            ASSERT_EQ(t_set(s, SEG_SET, key, strlen(key), K("new"), 0, 0, 0, NULL),
                      SEG_STORED);
        }
        seg_store_grow(s, 1000);                    /* buckets split under the hints */
        for (int i = 0; i < 64; i++) {
            snprintf(key, sizeof(key), "h%d-%d", round, i);
            snprintf(val, sizeof(val), "v%d", i);
            const char *want = i % 3 == 0 ? NULL : i % 3 == 1 ? "new" : val;
            if (get_is(s, key, want) != true)
                TH_FAIL("%s after the read-ahead", key);
        }
    }
    seg_store_destroy(&s);
}

/* A value of the store's pattern for key k, version ver: tells whose it is. */
static void big_fill(char *buf, size_t n, int k, int ver) {
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)('a' + (k * 7 + ver * 3 + i / 997) % 26);
}

/*
 * Values larger than a segment lie out of line, charged to the limit by
 * segments taken out of use; a reader holding one keeps it through an
 * overwrite; deletes, overwrites, touches (a copy) and evictions give the
 * memory back, and under churn the limit holds.
 */
TEST(values_larger_than_a_segment_lie_out_of_line) {
    struct seg_store *s = mk(16 * (64 << 10), 64 << 10);   /* 1 MiB in 16 segments */
    static char buf[300000], want[300000];
    struct seg_stats st;
    big_fill(buf, 200000, 1, 1);
    ASSERT_EQ(t_set(s, SEG_SET, K("big"), buf, 200000, 7, 0, 0, NULL), SEG_STORED);
    seg_store_stats(s, &st);
    ASSERT_EQ(st.ext_items, 1);
    ASSERT(st.ext_bytes >= 200000 && st.ext_bytes < 200100);
    ASSERT_EQ(st.lent, 4);                          /* 200,000 bytes: four 64 KiB segments */
    ASSERT_EQ(st.free, 16 - 1 - 4);                 /* and the open one */
    struct seg_ref r;
    ASSERT(t_get(s, K("big"), &r));
    ASSERT(r.h.vlen == 200000 && r.h.cflags == 7 && memcmp(r.value, buf, 200000) == 0);
    big_fill(want, 250000, 1, 2);
    ASSERT_EQ(t_set(s, SEG_SET, K("big"), want, 250000, 0, 0, 0, NULL), SEG_STORED);
    seg_store_stats(s, &st);
    ASSERT_EQ(st.ext_items, 2);                     /* the old one: still held */
    ASSERT(memcmp(r.value, buf, 200000) == 0);
    t_release(s, &r);
    seg_store_stats(s, &st);
    ASSERT_EQ(st.ext_items, 1);
    ASSERT_EQ(st.lent, 4);
    ASSERT_EQ(t_touch(s, K("big"), 2000000), SEG_TOUCHED);     /* no exptime: a copy */
    ASSERT(t_get(s, K("big"), &r));
    ASSERT(r.h.vlen == 250000 && r.h.exptime == 2000000 && memcmp(r.value, want, 250000) == 0);
    t_release(s, &r);
    seg_store_stats(s, &st);
    ASSERT_EQ(st.ext_items, 1);
    ASSERT_EQ(t_delete(s, K("big")), SEG_DELETED);
    seg_store_stats(s, &st);
    ASSERT(st.ext_items == 0 && st.ext_bytes == 0 && st.lent == 0);
    /* churn: big and small values over 20 keys in 1 MiB */
    static int ver[20];
    uint64_t rng = 7;
    for (int i = 0; i < 3000; i++) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        int k = (int)((rng >> 33) % 20);
        size_t n = (rng >> 40) % 4 == 0 ? 70000 + (rng >> 20) % 230000 : 1 + (rng >> 20) % 3000;
        char key[16];
        snprintf(key, sizeof(key), "c%d", k);
        big_fill(buf, n, k, ++ver[k]);
        enum seg_result res = t_set(s, SEG_SET, key, strlen(key), buf, n, 0, 0, 0, NULL);
        if (res != SEG_STORED)
            TH_FAIL("set %d of %zu bytes: %d", i, n, (int)res);
        if (t_get(s, key, strlen(key), &r)) {
            if (r.h.vlen != n || memcmp(r.value, buf, n) != 0)
                TH_FAIL("set %d: %s read back wrong", i, key);
            t_release(s, &r);
        } else {
            TH_FAIL("set %d: %s not there just after", i, key);
        }
        seg_store_stats(s, &st);
        if (st.ext_bytes > (uint64_t)st.lent * (64 << 10) || st.lent + 1 > st.segments)
            TH_FAIL("set %d: %llu bytes out of line, %llu segments lent", i,
                    (unsigned long long)st.ext_bytes, (unsigned long long)st.lent);
    }
    seg_store_stats(s, &st);
    ASSERT(st.evicted_items > 0);
    seg_store_destroy(&s);
}

/* Every segment some TTL bucket's open one: stores still find room, and expired ones go. */
TEST(open_segments_do_not_wedge_the_store) {
    struct seg_store *s = mk(4 * (64 << 10), 64 << 10);
    uint32_t now = 1000000;
    static const uint32_t ttls[] = {10, 100, 1000, 10000, 50};
    for (size_t i = 0; i < sizeof(ttls) / sizeof(ttls[0]); i++) {
        char k[16];
        snprintf(k, sizeof(k), "w%zu", i);
        ASSERT_EQ(t_set(s, SEG_SET, k, strlen(k), K("v"), 0, now + ttls[i], 0, NULL),
                  SEG_STORED);
    }
    seg_store_clock_set(s, now + 20000);
    seg_store_step(s, 10);
    struct seg_stats st;
    seg_store_stats(s, &st);
    ASSERT(st.expired_segments >= 3);
    ASSERT_EQ(t_set(s, SEG_SET, K("after"), K("v"), 0, now + 20030, 0, NULL), SEG_STORED);
    ASSERT(get_is(s, "after", "v"));
    seg_store_destroy(&s);
}

/* Random operations against a reference map. */
struct ref_item {
    bool live;
    uint64_t cas;
    uint32_t exptime;
    uint32_t len;
    char fill;
};

static void property(size_t mem, int ops, bool evicting, int *th_failed) {
    enum { KEYS = 3000 };
    struct seg_store *s = mk(mem, 64 << 10);
    static struct ref_item ref[KEYS];
    memset(ref, 0, sizeof(ref));
    static char val[4096], got[4096];
    uint32_t now = 1000000;
    uint64_t rng = 7, lost = 0;
    for (int op = 0; op < ops; op++) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned k = (unsigned)(rng >> 33) % KEYS, what = (unsigned)(rng >> 20) % 100;
        char key[16];
        int nk = snprintf(key, sizeof(key), "k%u", k);
        struct ref_item *ri = &ref[k];
        if (ri->live && ri->exptime && ri->exptime <= now)
            ri->live = false;
        if (what < 40) {                        /* set / add / replace / cas */
            uint32_t len = (uint32_t)(rng >> 40) % 3000;
            char fill = (char)('a' + op % 26);
            memset(val, fill, len);
            uint32_t exp = (rng >> 50) % 4 == 0 ? now + 1 + (uint32_t)(rng >> 55) % 30 : 0;
            enum seg_op o = what < 25 ? SEG_SET : what < 30 ? SEG_ADD : what < 35 ? SEG_REPLACE
                                                                                : SEG_CAS;
            uint64_t cas_in = ri->live && (rng & 1) ? ri->cas : ri->cas + 1, cas = 0;
            enum seg_result r = t_set(s, o, key, (size_t)nk, val, len, 0, exp, cas_in,
                                              &cas);
            if (r == SEG_STORED) {
                if (ri->live && cas <= ri->cas)
                    TH_FAIL("op %d: cas %llu after %llu", op, (unsigned long long)cas,
                            (unsigned long long)ri->cas);
                *ri = (struct ref_item){true, cas, exp, len, fill};
            } else if (r == SEG_NO_MEMORY || r == SEG_TOO_LARGE) {
                TH_FAIL("op %d: result %d", op, r);
            }
        } else if (what < 50) {
            if (t_delete(s, key, (size_t)nk) == SEG_DELETED && !ri->live)
                TH_FAIL("op %d: deleted a dead key", op);
            ri->live = false;
        } else if (what < 55) {
            uint32_t exp = now + 1 + (uint32_t)(rng >> 45) % 40;
            enum seg_result r = t_touch(s, key, (size_t)nk, exp);
            if (r == SEG_TOUCHED) {
                if (!ri->live)
                    TH_FAIL("op %d: touched a dead key", op);
                ri->exptime = exp;
            }
        } else if (what < 98) {
            struct seg_ref r;
            if (t_get(s, key, (size_t)nk, &r)) {
                memcpy(got, r.value, r.h.vlen);
                bool ok = ri->live && r.h.cas == ri->cas && r.h.vlen == ri->len &&
                          (ri->len == 0 || (got[0] == ri->fill && got[ri->len - 1] == ri->fill));
                t_release(s, &r);
                if (!ok) {
                    TH_FAIL("op %d: key %u served a dead or wrong item", op, k);
                    break;
                }
            } else if (ri->live) {
                if (!evicting) {
                    TH_FAIL("op %d: live key %u lost", op, k);
                    break;
                }
                ri->live = false;
                lost++;
            }
        } else {
            now += 1 + (uint32_t)(rng >> 40) % 3;
            seg_store_clock_set(s, now);
            seg_store_step(s, 4);
        }
    }
    struct seg_stats st;
    seg_store_stats(s, &st);
    if (lost > st.evicted_items)
        TH_FAIL("%llu live keys lost, %llu evicted", (unsigned long long)lost,
                (unsigned long long)st.evicted_items);
    if (evicting && st.evicted_segments == 0)
        TH_FAIL("no eviction under churn");
    if (st.written_bytes > st.segments * (64 << 10))
        TH_FAIL("memory bound");
    seg_store_destroy(&s);
}

TEST(property_without_eviction) { property((size_t)64 << 20, 300000, false, th_failed); }
TEST(property_with_eviction) { property((size_t)16 * (64 << 10), 300000, true, th_failed); }
TEST(property_with_merges) {
    merge_on = true;
    property((size_t)16 * (64 << 10), 300000, true, th_failed);
    merge_on = false;
}

/*
 * Seven 4 KiB segments (an eighth set aside for merges), 36 items of 111
 * bytes each; every fourth item of the first four segments read.  The next
 * store finds no segment: the four oldest merge into one, which keeps
 * exactly the 36 read items (3,996 bytes: they fit) and evicts the 108
 * others; the copies are unread again (a second chance, not a pass).
 */
/*
 * Stores k000... (111-byte items, 36 to a 4 KiB segment) until no
 * segment is free, then reads every fourth of the first nread.
 */
static void fill_then_read(int *th_failed, struct seg_store *s, int nitems, int nread) {
    static char val[100];
    memset(val, 'v', sizeof(val));
    char key[16];
    for (int i = 0; i < nitems; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        ASSERT_EQ(t_set(s, SEG_SET, key, 4, val, 100, 0, 0, 0, NULL), SEG_STORED);
    }
    struct seg_stats st;
    seg_store_stats(s, &st);
    ASSERT_EQ(st.free, 0);
    ASSERT_EQ(st.evicted_items, 0);
    for (int i = 0; i < nread; i += 4) {
        snprintf(key, sizeof(key), "k%03d", i);
        ASSERT(get_is(s, key, NULL) == false);      /* a hit: now read */
    }
}

TEST(merge_keeps_exactly_the_items_read) {
    merge_on = true;
    struct seg_store *s = mk(8 * 4096, 4096);
    merge_on = false;
    ASSERT(s != NULL);
    fill_then_read(th_failed, s, 7 * 36, 4 * 36);
    static char val[100];
    memset(val, 'v', sizeof(val));
    char key[16];
    struct seg_stats st;
    ASSERT_EQ(t_set(s, SEG_SET, K("new"), val, 100, 0, 0, 0, NULL), SEG_STORED);
    seg_store_stats(s, &st);
    ASSERT_EQ(st.merges, 1);
    ASSERT_EQ(st.evicted_items, 3 * 36);
    ASSERT_EQ(st.evicted_unfetched, 3 * 36);
    for (int i = 0; i < 7 * 36; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        struct seg_ref r;
        bool hit = t_get(s, key, 4, &r);
        bool want = i >= 4 * 36 || i % 4 == 0;
        if (hit != want)
            TH_FAIL("%s: %s after the merge", key, hit ? "kept" : "gone");
        if (hit && i < 4 * 36 && (r.h.hflags & SEG_F_FETCHED))
            TH_FAIL("%s: the copy is still marked read", key);
        if (hit) {
            ASSERT(r.h.vlen == 100 && memcmp(r.value, val, 100) == 0);
            t_release(s, &r);
        }
    }
    ASSERT(get_is(s, "new", NULL) == false);
    seg_store_destroy(&s);
}

TEST(property_with_s3fifo) {
    s3_on = true;
    property((size_t)16 * (64 << 10), 300000, true, th_failed);
    s3_on = false;
}

/*
 * S3-FIFO over ten 4 KiB segments (two set aside as the main queue's
 * outputs), 36 items of 111 bytes a segment.  With the eight others full,
 * a store evicts the small queue's oldest segment: the 9 items read there
 * move to the main queue, the 27 others are evicted and their keys kept
 * in the ghost.  One of them stored again is marked so, and moves to the
 * main queue unread when its own segment is evicted; an unread item
 * beside it goes.
 */
TEST(s3fifo_moves_the_items_read_and_remembers_the_rest) {
    s3_on = true;
    struct seg_store *s = mk(10 * 4096, 4096);
    s3_on = false;
    ASSERT(s != NULL);
    fill_then_read(th_failed, s, 8 * 36, 36);
    static char val[100];
    memset(val, 'v', sizeof(val));
    char key[16];
    struct seg_stats st;
    ASSERT_EQ(t_set(s, SEG_SET, K("new"), val, 100, 0, 0, 0, NULL), SEG_STORED);
    seg_store_stats(s, &st);
    ASSERT_EQ(st.promoted, 9);
    ASSERT_EQ(st.evicted_items, 27);
    ASSERT_EQ(st.evicted_segments, 1);
    for (int i = 0; i < 36; i++) {                  /* (the others stay unread) */
        snprintf(key, sizeof(key), "k%03d", i);
        bool want = i % 4 == 0;
        if (get_is(s, key, NULL) == want)           /* get_is(.., NULL): true on a miss */
            TH_FAIL("%s: %s after the eviction", key, want ? "gone" : "kept");
    }
    ASSERT_EQ(t_set(s, SEG_SET, K("k001"), val, 100, 0, 0, 0, NULL), SEG_STORED);
    seg_store_stats(s, &st);
    ASSERT_EQ(st.ghost_hits, 1);
    for (int i = 0; i < 300; i++) {                 /* the small queue goes round once */
        snprintf(key, sizeof(key), "n%03d", i);
        ASSERT_EQ(t_set(s, SEG_SET, key, 4, val, 100, 0, 0, 0, NULL), SEG_STORED);
    }
    seg_store_stats(s, &st);
    ASSERT_EQ(st.promoted, 10);
    ASSERT(get_is(s, "k001", NULL) == false);
    ASSERT(get_is(s, "new", NULL) == true);
    for (int i = 0; i < 36; i += 4) {
        snprintf(key, sizeof(key), "k%03d", i);
        ASSERT(get_is(s, key, NULL) == false);
    }
    seg_store_destroy(&s);
}

/*
 * Threads: values name their keys, so a wrong or torn item is seen; one
 * set in 40 is larger than a segment (out of line).
 */
struct worker {
    struct seg_store *s;
    int id, errors;
};

static void *work(void *arg) {
    struct worker *w = arg;
    char key[24], *val = malloc(100000);
    uint64_t rng = (uint64_t)w->id * 77 + 1;
    for (int op = 0; op < 100000; op++) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        int nk = snprintf(key, sizeof(key), "t%d-%u", w->id, (unsigned)(rng >> 40) % 500);
        unsigned what = (unsigned)(rng >> 20) % 10;
        if (what < 3) {
            size_t len = (rng >> 44) % 40 == 0 ? 70000 + (rng >> 50) % 30000
                                               : 20 + (rng >> 50) % 500;
            for (size_t i = 0; i < len; i++)
                val[i] = key[i % (size_t)nk];
            t_set(w->s, SEG_SET, key, (size_t)nk, val, len, 0, 0, 0, NULL);
        } else if (what < 4) {
            t_delete(w->s, key, (size_t)nk);
        } else {
            struct seg_ref r;
            if (t_get(w->s, key, (size_t)nk, &r)) {
                for (uint32_t i = 0; i < r.h.vlen; i++)
                    if (r.value[i] != key[i % (size_t)nk]) {
                        w->errors++;
                        break;
                    }
                if (r.h.klen != (unsigned)nk || memcmp(r.key, key, (size_t)nk) != 0)
                    w->errors++;
                t_release(w->s, &r);
            }
        }
    }
    free(val);
    return NULL;
}

static _Atomic int stepping;

static void *stepper(void *arg) {
    while (atomic_load(&stepping))
        seg_store_step(arg, 4);
    return NULL;
}

TEST(threads_with_eviction) {
    struct seg_store *s = mk(12 * (64 << 10), 64 << 10);
    struct worker w[4];
    pthread_t t[4], st;
    atomic_store(&stepping, 1);
    pthread_create(&st, NULL, stepper, s);
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.s = s, .id = i};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    atomic_store(&stepping, 0);
    pthread_join(st, NULL);
    struct seg_stats ss;
    seg_store_stats(s, &ss);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(w[i].errors, 0);
    ASSERT(ss.evicted_segments > 0);
    seg_store_destroy(&s);
}

int main(void) { return RUN_TESTS(); }
