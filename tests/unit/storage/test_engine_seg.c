/*
 * test_engine_seg.c -- test_engine.c again under storage=seg: every engine
 * created through engine_config_defaults() gets the segment back end
 * (policy fifo).  The tests about the slab layout itself are left out
 * there (ENGINE_SEG).
 */
#define ENGINE_SEG 1
#include "test_engine.c"

/* ---- the segment back end's own: churn against a reference map ---- */

#define PK 3000                     /* keys */
#define POPS 400000                 /* operations */

struct pref {
    uint32_t ver;                   /* version of the value stored; 0: none */
    uint32_t len;
    uint32_t exptime;               /* engine-relative seconds from T0; 0 never */
    bool gone;                      /* deleted */
};

static uint64_t prng(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The bytes of version ver of key k: a value that says whose it is. */
static void pvalue(char *buf, int k, uint32_t ver, uint32_t len) {
    for (uint32_t i = 0; i < len; i++)
        buf[i] = (char)('a' + (k * 31 + ver * 7 + i) % 26);
}

/*
 * Random sets, adds, deletes, appends, touches and gets over 3,000 keys of
 * 0-2,000-byte values with and without TTLs, the clock moving on, in 4 MiB
 * of 64 KiB segments (much less than the keys need: segments are evicted
 * all along) or in 64 MiB (nothing evicted).  Checked after every get: a
 * hit is the latest version stored, never an older, deleted or expired
 * one; a miss of a live key is allowed only when segments were evicted.
 */
static void churn(int *th_failed, size_t mem, bool evicting, const char *policy) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.policy = policy;
    cfg.mem_limit = mem;
    cfg.page_size = cfg.item_size_max = 64 * 1024;
    cfg.slab_chunk_max = 32 * 1024;
    struct engine *e = mk_cfg(&cfg);
    static struct pref ref[PK];
    memset(ref, 0, sizeof(ref));
    static char buf[8192], want[8192];
    uint64_t seed = 42;
    uint32_t now = 0, hits = 0, lost = 0;
    for (int n = 0; n < POPS; n++) {
        if (n % 2000 == 1999) {                     /* time moves on; segments expire */
            now++;
            engine_clock_set(e, T0 + now);
            engine_step(e, 100);
        }
        uint64_t r = prng(&seed);
        int k = (int)(r % PK);
        char key[16];
        snprintf(key, sizeof(key), "k%d", k);
        struct pref *p = &ref[k];
        bool live = p->ver != 0 && !p->gone && (p->exptime == 0 || p->exptime > now);
        unsigned op = (unsigned)(r >> 20) % 100;
        if (op < 40) {                              /* set, sometimes with a TTL */
            uint32_t len = (uint32_t)(r >> 32) % 2001, ttl = (r >> 40) % 4 == 0 ? 1 + (r >> 44) % 30 : 0;
            uint32_t ver = p->ver + 1;
            pvalue(buf, k, ver, len);
            struct item *it = engine_item_alloc(e, key, strlen(key), 0, ttl, len, NULL);
            ASSERT(it != NULL);
            memcpy((char *)item_value_flat(it), buf, len);
            ASSERT_EQ(engine_store(e, it, ENGINE_SET, 0, NULL), ENGINE_STORED);
            engine_item_unref(e, it);
            *p = (struct pref){ver, len, ttl ? now + ttl : 0, false};
        } else if (op < 45) {                       /* add */
            struct item *it = engine_item_alloc(e, key, strlen(key), 0, 0, 3, NULL);
            pvalue(buf, k, p->ver + 1, 3);
            memcpy((char *)item_value_flat(it), buf, 3);
            enum engine_store_result sr = engine_store(e, it, ENGINE_ADD, 0, NULL);
            engine_item_unref(e, it);
            if (live && sr == ENGINE_STORED && !evicting)
                TH_FAIL("add over live %s stored", key);
            if (!live && sr != ENGINE_STORED)
                TH_FAIL("add of dead %s refused", key);
            if (sr == ENGINE_STORED)
                *p = (struct pref){p->ver + 1, 3, 0, false};
        } else if (op < 52) {                       /* delete */
            enum engine_delete_result dr = engine_delete(e, key, strlen(key), 0);
            if (!live && dr == ENGINE_DELETED)
                TH_FAIL("delete found dead %s", key);
            p->gone = true;
        } else if (op < 57 && live && p->len + 5 <= 2000) {     /* append: the value grows */
            struct item *it = engine_item_alloc(e, key, strlen(key), 0, 0, 5, NULL);
            memcpy((char *)item_value_flat(it), "+tail", 5);
            enum engine_store_result sr = engine_store(e, it, ENGINE_APPEND, 0, NULL);
            engine_item_unref(e, it);
            if (sr == ENGINE_STORED) {
                p->len += 5;
                p->ver |= 1u << 31;                 /* its bytes: checked by length only */
            } else if (!evicting) {
                TH_FAIL("append to live %s: %d", key, sr);
            } else {
                *p = (struct pref){0};              /* evicted meanwhile */
            }
        } else if (op < 60) {                       /* touch: a new TTL, the same value */
            uint32_t ttl = 1 + (uint32_t)(r >> 36) % 40;
            unsigned cls = engine_touch(e, key, strlen(key), ttl);
            if (live && cls != 0)
                p->exptime = now + ttl;
            else if (!live && cls != 0)
                TH_FAIL("touch found dead %s", key);
            else if (live && !evicting)
                TH_FAIL("touch lost live %s", key);
            else if (live)
                *p = (struct pref){0};
        } else {                                    /* get, or a copying get (its values of up to 1,000 bytes) */
            bool copied = false;
            struct item *it = NULL;
            if (n & 1) {
                shown.calls = 0;
                it = engine_get_copy(e, key, strlen(key), engine_key_hash(key, strlen(key)), 1000,
                                     show, NULL, &copied, NULL);
                if (copied != (shown.calls == 1) || (copied && shown.h.nbytes > 1000))
                    TH_FAIL("%s: copied %d, shown %d (op %d)", key, copied, shown.calls, n);
            } else {
                it = engine_get(e, key, strlen(key), NULL);
            }
            if (copied) {
                hits++;
                if (!live)
                    TH_FAIL("dead %s shown (op %d)", key, n);
                if (shown.h.nbytes != p->len)
                    TH_FAIL("%s: %u bytes shown, want %u (op %d)", key, shown.h.nbytes, p->len, n);
                pvalue(want, k, p->ver, p->len);
                if (!(p->ver & (1u << 31)) && memcmp(shown.value, want, p->len) != 0)
                    TH_FAIL("%s: shown not version %u (op %d)", key, p->ver, n);
                continue;
            }
            if (it == NULL) {
                if (live && !evicting)
                    TH_FAIL("live %s lost (op %d)", key, n);
                lost += live;
                if (live)
                    *p = (struct pref){0};          /* evicted: forget it */
                continue;
            }
            hits++;
            if (!live) {
                engine_item_unref(e, it);
                TH_FAIL("dead %s served (op %d)", key, n);
            }
            if (item_nbytes(it) != p->len) {
                engine_item_unref(e, it);
                TH_FAIL("%s: %u bytes, want %u (op %d)", key, item_nbytes(it), p->len, n);
            }
            if (!(p->ver & (1u << 31))) {
                pvalue(want, k, p->ver, p->len);
                if (memcmp(item_value_flat(it), want, p->len) != 0) {
                    engine_item_unref(e, it);
                    TH_FAIL("%s: not version %u (op %d)", key, p->ver, n);
                }
            }
            engine_item_unref(e, it);
        }
    }
    struct engine_stats s = stats(e);
    ASSERT(s.total_malloced <= mem);
    ASSERT(hits > POPS / 10);
    if (evicting)
        ASSERT(s.evictions > 0 && lost > 0);
    else
        ASSERT_EQ(s.evictions, 0);
    engine_destroy(&e);
}

TEST(seg_churn_without_eviction_loses_nothing) { churn(th_failed, 64 * MiB, false, "fifo"); }
TEST(seg_churn_with_eviction_serves_nothing_dead) { churn(th_failed, 4 * MiB, true, "fifo"); }
TEST(seg_churn_with_merges_serves_nothing_dead) { churn(th_failed, 4 * MiB, true, "merge"); }
TEST(seg_churn_with_s3fifo_serves_nothing_dead) { churn(th_failed, 4 * MiB, true, "s3fifo"); }

/*
 * A flushed item is dead to a merge or an S3-FIFO move: it is dropped, not
 * carried into a newer segment.
 */
static void moves_drop_flushed_items(int *th_failed, const char *policy) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.policy = policy;
    cfg.mem_limit = 8 * 64 * 1024;
    cfg.page_size = cfg.item_size_max = 64 * 1024;
    cfg.slab_chunk_max = 32 * 1024;
    struct engine *e = mk_cfg(&cfg);
    char key[16];
    static char val[1000];
    memset(val, 'f', sizeof(val));
    val[sizeof(val) - 1] = 0;
    for (int i = 0; i < 200; i++) {                /* about three segments */
        snprintf(key, sizeof(key), "old%d", i);
        ASSERT_EQ(set(e, key, val), ENGINE_STORED);
        ASSERT(get(e, key) != NULL);                /* read: a merge would keep it */
    }
    engine_clock_set(e, T0 + 5);
    engine_flush(e, 0);
    engine_clock_set(e, T0 + 6);
    for (int i = 0; i < 2000; i++) {               /* merges happen */
        snprintf(key, sizeof(key), "new%d", i);
        ASSERT_EQ(set(e, key, val), ENGINE_STORED);
    }
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "old%d", i);
        if (get(e, key) != NULL)
            TH_FAIL("%s came back after flush_all", key);
    }
    ASSERT(stats(e).evictions > 0);
    engine_destroy(&e);
}

TEST(seg_merge_drops_flushed_items) { moves_drop_flushed_items(th_failed, "merge"); }
TEST(seg_s3fifo_drops_flushed_items) { moves_drop_flushed_items(th_failed, "s3fifo"); }

/*
 * Values larger than a segment (1 MiB) up to -I (4 MiB) lie out of line:
 * one piece, read back whole; append grows one; a touch keeps it; the
 * largest item fits and one byte more is refused; the memory comes back.
 */
TEST(seg_values_larger_than_a_segment) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.item_size_max = 4 * MiB;
    struct engine *e = mk_cfg(&cfg);
    size_t n = 3 * MiB + 12345;
    ASSERT_EQ(store_n(e, ENGINE_SET, "huge", "abcdefg", n, 5, 0, 0, NULL), ENGINE_STORED);
    ASSERT_EQ(store(e, ENGINE_APPEND, "huge", "XYZ", 0, 0, 0, NULL), ENGINE_STORED);
    ASSERT(engine_touch(e, "huge", 4, 100) != 0);
    struct item *it = engine_get(e, "huge", 4, NULL);
    ASSERT(it != NULL);
    ASSERT_EQ(it->nbytes, n + 3);
    ASSERT_EQ(it->flags, 5);
    struct iovec iov[16];
    ASSERT_EQ(engine_item_iov(it, iov, 16), 1);
    ASSERT_EQ(iov[0].iov_len, n + 3);
    const char *v = iov[0].iov_base;
    for (size_t j = 0; j < n; j++)
        if (v[j] != "abcdefg"[j % 7]) {
            TH_FAIL("byte %zu differs", j);
            break;
        }
    ASSERT(memcmp(v + n, "XYZ", 3) == 0);
    ASSERT(stats(e).bytes > n);
    /* the old copies went when the new ones were linked; this one is held */
    ASSERT_EQ(engine_delete(e, "huge", 4, 0), ENGINE_DELETED);
    ASSERT(memcmp(v + n, "XYZ", 3) == 0);
    engine_item_unref(e, it);
    ASSERT_EQ(stats(e).curr_items, 0);
    ASSERT_EQ(stats(e).bytes, 0);
    char key[ENGINE_KEY_MAX + 1];
    memset(key, 'k', ENGINE_KEY_MAX);
    key[ENGINE_KEY_MAX] = 0;
    n = 4 * MiB - sizeof(struct item) - ENGINE_KEY_MAX;
    ASSERT_EQ(store_n(e, ENGINE_SET, key, "q", n, 0, 0, 0, NULL), ENGINE_STORED);
    ASSERT_EQ(store_n(e, ENGINE_SET, key, "q", n + 1, 0, 0, 0, NULL), 100);
    it = engine_get(e, key, ENGINE_KEY_MAX, NULL);
    ASSERT(it != NULL && it->nbytes == n);
    engine_item_unref(e, it);
    engine_destroy(&e);
}
