/*
 * test_engine.c -- the engine API against memcached 1.6.18's semantics.
 *
 * Expected answers marked "observed" were checked by sending the same
 * commands to Debian's memcached 1.6.18 (flat LRU, no background threads:
 * -o no_lru_maintainer,no_lru_crawler).  Time is driven by hand through
 * engine_clock_set(); nothing here sleeps.
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "storage/engine.h"

#define T0 1700000000u
#define MiB (1024u * 1024u)

#ifdef ENGINE_SEG
#define ENGINE_SEG_ON 1
#pragma GCC diagnostic ignored "-Wunused-function"
/* test_engine_seg.c: the same tests on the segment back end */
static void seg_defaults(struct engine_config *cfg) {
    engine_config_defaults(cfg);
    cfg->seg = true;
    cfg->policy = "fifo";
}
#define engine_config_defaults seg_defaults
#else
#define ENGINE_SEG_ON 0
#endif
/* An item's bytes besides its key and value (segments: 7 with no flags, TTL or big cas) */
#define ITEM_HDR (ENGINE_SEG_ON ? 7 : sizeof(struct item))

static struct engine *mk_cfg(const struct engine_config *cfg) {
#ifdef ENGINE_SEG
    struct engine_config sc = *cfg;
    sc.seg = true;
    if (strcmp(sc.policy, "merge") != 0 && strcmp(sc.policy, "s3fifo") != 0)
        sc.policy = "fifo";
    cfg = &sc;
#endif
    char err[256] = "";
    struct engine *e = engine_create(cfg, err, sizeof(err));
    if (e == NULL) {
        fprintf(stderr, "engine_create: %s\n", err);
        abort();
    }
    engine_clock_set(e, T0);
    return e;
}

static struct engine *mk(void) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    return mk_cfg(&cfg);
}

/* Allocates, fills (from a repeating val) and stores; returns the result. */
static enum engine_store_result store_n(struct engine *e, enum engine_store_op op,
                                        const char *key, const char *val, size_t n,
                                        uint32_t flags, int64_t exptime, uint64_t cas,
                                        uint64_t *cas_out) {
    enum engine_alloc_err err;
    struct item *it = engine_item_alloc(e, key, strlen(key), flags, exptime, (uint32_t)n, &err);
    if (it == NULL)
        return err == ENGINE_ALLOC_TOO_LARGE ? 100 : 101;
    struct iovec iov[64];
    int k = engine_item_iov(it, iov, 64);
    size_t at = 0, vlen = strlen(val);
    for (int i = 0; i < k; i++)
        for (size_t j = 0; j < iov[i].iov_len; j++, at++)
            ((char *)iov[i].iov_base)[j] = val[at % vlen];
    enum engine_store_result r = engine_store(e, it, op, cas, cas_out);
    engine_item_unref(e, it);
    return r;
}

static enum engine_store_result store(struct engine *e, enum engine_store_op op,
                                      const char *key, const char *val, uint32_t flags,
                                      int64_t exptime, uint64_t cas, uint64_t *cas_out) {
    return store_n(e, op, key, val, strlen(val), flags, exptime, cas, cas_out);
}

static enum engine_store_result set(struct engine *e, const char *key, const char *val) {
    return store(e, ENGINE_SET, key, val, 0, 0, 0, NULL);
}

/* Copies a value out of an item (NUL-terminated, up to cap - 1 bytes). */
static size_t value_of(struct item *it, char *buf, size_t cap) {
    struct iovec iov[64];
    int k = engine_item_iov(it, iov, 64);
    size_t n = 0;
    for (int i = 0; i < k; i++)
        for (size_t j = 0; j < iov[i].iov_len; j++, n++)
            if (n + 1 < cap)
                buf[n] = ((char *)iov[i].iov_base)[j];
    buf[n + 1 < cap ? n : cap - 1] = 0;
    return n;
}

/* The value under key as a static string, or NULL on a miss. */
static const char *get(struct engine *e, const char *key) {
    static char buf[4096];
    struct item *it = engine_get(e, key, strlen(key), NULL);
    if (it == NULL)
        return NULL;
    value_of(it, buf, sizeof(buf));
    engine_item_unref(e, it);
    return buf;
}

static enum engine_miss why(struct engine *e, const char *key) {
    enum engine_miss w = 42;
    struct item *it = engine_get(e, key, strlen(key), &w);
    if (it != NULL)
        engine_item_unref(e, it);
    return w;
}

static uint64_t cas_of(struct engine *e, const char *key) {
    struct item *it = engine_get(e, key, strlen(key), NULL);
    uint64_t c = it ? item_cas(it) : 0;
    engine_item_unref(e, it);
    return c;
}

static struct engine_stats stats(struct engine *e) {
    struct engine_stats s;
    engine_stats(e, &s);
    return s;
}

/* ---- configuration and layout ---- */

TEST(item_header_is_small) {
    ASSERT_EQ(sizeof(struct item), 56);
}

TEST(create_checks_config_like_memcached) {
    struct engine_config cfg;
    char err[256];
    engine_config_defaults(&cfg);
    cfg.policy = "nope";
    ASSERT(engine_create(&cfg, err, sizeof(err)) == NULL);
    ASSERT(strstr(err, "policy") != NULL);

    engine_config_defaults(&cfg);
    cfg.mem_limit = MiB;                        /* observed: memcached -m 1 */
    ASSERT(engine_create(&cfg, err, sizeof(err)) == NULL);
    ASSERT_STR(err, "Cannot set item size limit higher than 1/2 of memory max.");

    engine_config_defaults(&cfg);
    cfg.item_size_max = 64 * 1024;              /* observed: memcached -I 64k */
    ASSERT(engine_create(&cfg, err, sizeof(err)) == NULL);
    ASSERT_STR(err, "slab_chunk_max (bytes: 524288) cannot be larger than -I (item_size_max 65536)");

    engine_config_defaults(&cfg);
    cfg.item_size_max = 1000 * 1024;            /* observed: memcached -I 1000k */
    ASSERT(engine_create(&cfg, err, sizeof(err)) == NULL);
    ASSERT_STR(err, "-I (item_size_max: 1024000) must be evenly divisible by slab_chunk_max (bytes: 524288)");

    engine_config_defaults(&cfg);
    cfg.growth_factor = 1.0;
    ASSERT(engine_create(&cfg, err, sizeof(err)) == NULL);

    engine_config_defaults(&cfg);
    cfg.mem_limit = MiB;
    cfg.item_size_max = 512 * 1024;             /* observed: -m 1 -I 512k starts */
    struct engine *e = engine_create(&cfg, err, sizeof(err));
    ASSERT(e != NULL);
    engine_destroy(&e);
    ASSERT(e == NULL);
    engine_destroy(&e);                         /* NULL is fine */
}

#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(default_classes) {
    struct engine *e = mk();
    struct engine_class_stats c;
    ASSERT(engine_class_stats(e, 1, &c));
    ASSERT_EQ(c.chunk_size, 96);                /* memcached's class 1: 48-byte header + -n 48 */
    ASSERT_EQ(c.chunks_per_page, MiB / c.chunk_size);
    unsigned n = engine_nclasses(e);
    ASSERT(engine_class_stats(e, n, &c));
    ASSERT_EQ(c.chunk_size, 512 * 1024);
    ASSERT_EQ(c.chunks_per_page, 2);
    ASSERT(!engine_class_stats(e, n + 1, &c));
    ASSERT(!engine_class_stats(e, 0, &c));
    ASSERT_EQ(engine_class_for(e, 1), 1);
    ASSERT_EQ(engine_class_for(e, 600 * 1024), n);      /* chained: largest class */
    ASSERT_EQ(engine_class_for(e, MiB), n);
    ASSERT_EQ(engine_class_for(e, MiB + 1), 0);
    ASSERT_EQ(engine_item_iov_max(e), 3);
    engine_destroy(&e);
}
#endif

#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(custom_growth_factor_and_min) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.growth_factor = 2;
    cfg.chunk_min = 100;
    struct engine *e = mk_cfg(&cfg);
    struct engine_class_stats c;
    uint32_t want = (48 + 100 + 7) / 8 * 8;     /* memcached's header + -n */
    for (unsigned i = 1; i < engine_nclasses(e); i++) {
        ASSERT(engine_class_stats(e, i, &c));
        ASSERT_EQ(c.chunk_size, want);
        want *= 2;
    }
    ASSERT(engine_class_stats(e, engine_nclasses(e), &c));
    ASSERT_EQ(c.chunk_size, 512 * 1024);
    engine_destroy(&e);
}
#endif

TEST(clock_round_trips) {
    struct engine *e = mk();
    ASSERT_EQ(engine_clock(e), T0);
    engine_clock_set(e, T0 + 5);
    ASSERT_EQ(engine_clock(e), T0 + 5);
    engine_destroy(&e);
}

/* ---- basic operations ---- */

TEST(set_get_delete) {
    struct engine *e = mk();
    uint64_t cas = 0;
    ASSERT(get(e, "k") == NULL);
    ASSERT_EQ(why(e, "k"), ENGINE_MISS_NONE);
    ASSERT_EQ(store(e, ENGINE_SET, "k", "hello", 77, 0, 0, &cas), ENGINE_STORED);
    ASSERT(cas != 0);
    struct item *it = engine_get(e, "k", 1, NULL);
    ASSERT(it != NULL);
    ASSERT_EQ(item_flags(it), 77);
    ASSERT_EQ(item_nbytes(it), 5);
    ASSERT_EQ(item_nkey(it), 1);
    ASSERT_MEM(item_key(it), "k", 1);
    ASSERT_U64(item_cas(it), cas);
    engine_item_unref(e, it);
    ASSERT_STR(get(e, "k"), "hello");
    ASSERT_EQ(engine_delete(e, "k", 1, cas + 1), ENGINE_DELETE_EXISTS);
    ASSERT_EQ(engine_delete(e, "k", 1, cas), ENGINE_DELETED);
    ASSERT_EQ(engine_delete(e, "k", 1, 0), ENGINE_DELETE_NOT_FOUND);
    ASSERT(get(e, "k") == NULL);
    ASSERT_EQ(set(e, "e", ""), ENGINE_STORED);  /* empty values are fine */
    ASSERT_STR(get(e, "e"), "");
    struct engine_stats s = stats(e);
    ASSERT_EQ(s.curr_items, 1);
    ASSERT_EQ(s.total_items, 2);
    ASSERT_EQ(s.bytes, ITEM_HDR + 1);
    engine_destroy(&e);
}

/* What engine_get_copy() showed last: a copy made during the call. */
static struct {
    int calls;
    char key[ENGINE_KEY_MAX], value[4096];
    struct engine_hit h;
} shown;

static void show(void *arg, const struct engine_hit *h) {
    (void)arg;
    shown.calls++;
    shown.h = *h;
    memcpy(shown.key, h->key, h->nkey);
    memcpy(shown.value, h->value, h->nbytes);
}

/*
 * engine_get_copy(): a small hit is shown (no reference), a larger one
 * returned with a reference as engine_get() returns it, a miss, an expired
 * or a deleted item neither; either kind of hit counts as fetched.
 */
TEST(get_copy_shows_small_hits_and_returns_others) {
    struct engine *e = mk();
    uint64_t cas = 0;
    bool copied = true;
    shown.calls = 0;
    ASSERT(engine_get_copy(e, "k", 1, engine_key_hash("k", 1), 512, show, NULL, &copied, NULL) == NULL);
    ASSERT(!copied && shown.calls == 0);
    ASSERT_EQ(store(e, ENGINE_SET, "k", "hello", 77, 0, 0, &cas), ENGINE_STORED);
    ASSERT(engine_get_copy(e, "k", 1, engine_key_hash("k", 1), 512, show, NULL, &copied, NULL) == NULL);
    ASSERT(copied);
    ASSERT_EQ(shown.calls, 1);
    ASSERT_EQ(shown.h.nkey, 1);
    ASSERT_MEM(shown.key, "k", 1);
    ASSERT_EQ(shown.h.nbytes, 5);
    ASSERT_MEM(shown.value, "hello", 5);
    ASSERT_EQ(shown.h.flags, 77);
    ASSERT_U64(shown.h.cas, cas);
    ASSERT(shown.h.clsid >= 1);
    struct item *it = engine_get(e, "k", 1, NULL);
    ASSERT(it != NULL && item_fetched(it));     /* the copy marked it */
    engine_item_unref(e, it);
    /* larger than max: the item itself, with a reference */
    ASSERT_EQ(store_n(e, ENGINE_SET, "big", "0123456789", 600, 3, 0, 0, &cas), ENGINE_STORED);
    it = engine_get_copy(e, "big", 3, engine_key_hash("big", 3), 512, show, NULL, &copied, NULL);
    ASSERT(it != NULL && !copied);
    ASSERT_EQ(shown.calls, 1);
    ASSERT_EQ(item_nbytes(it), 600);
    ASSERT_U64(item_cas(it), cas);
    ASSERT(item_fetched(it));
    engine_item_unref(e, it);
    ASSERT(engine_get_copy(e, "big", 3, engine_key_hash("big", 3), 600, show, NULL, &copied, NULL) == NULL);
    ASSERT(copied && shown.calls == 2 && shown.h.nbytes == 600);
    ASSERT_MEM(shown.value, "0123456789012", 13);
    /* an expired item and a deleted one: misses */
    ASSERT_EQ(store(e, ENGINE_SET, "t", "soon", 0, 10, 0, NULL), ENGINE_STORED);
    engine_clock_set(e, T0 + 11);
    ASSERT(engine_get_copy(e, "t", 1, engine_key_hash("t", 1), 512, show, NULL, &copied, NULL) == NULL);
    ASSERT(!copied && shown.calls == 2);
    ASSERT_EQ(engine_delete(e, "k", 1, 0), ENGINE_DELETED);
    ASSERT(engine_get_copy(e, "k", 1, engine_key_hash("k", 1), 512, show, NULL, &copied, NULL) == NULL);
    ASSERT(!copied && shown.calls == 2);
    struct engine_stats s = stats(e);
    ASSERT_EQ(s.curr_items, 1);
    engine_destroy(&e);
}

/*
 * A pipeline's read-ahead (get p, set q, get q, set r, get r), then the
 * requests: each get sees the set before it (a segment store trusts a
 * read-ahead's "absent" only while nothing was inserted near the key).
 */
TEST(read_ahead_then_store_then_get) {
    struct engine *e = mk();
    uint64_t p = engine_key_hash("p", 1), q = engine_key_hash("q", 1), r = engine_key_hash("r", 1);
    uint64_t hv[5] = {p, q, q, r, r};
    engine_prefetch(e, hv, 5, 0x0a);
    ASSERT(engine_get(e, "p", 1, NULL) == NULL);
    set(e, "q", "after");
    struct item *it = engine_get(e, "q", 1, NULL);
    ASSERT(it != NULL);
    engine_item_unref(e, it);
    set(e, "r", "after");
    bool copied = false;
    shown.calls = 0;
    ASSERT(engine_get_copy(e, "r", 1, r, 512, show, NULL, &copied, NULL) == NULL);
    ASSERT(copied && shown.calls == 1);
    engine_destroy(&e);
}

TEST(stats_count_items_and_bytes) {
    struct engine *e = mk();
    set(e, "a", "12345");
    set(e, "bb", "x");
    set(e, "a", "123");                         /* replaces */
    struct engine_stats s = stats(e);
    ASSERT_EQ(s.curr_items, 2);
    ASSERT_EQ(s.total_items, 3);
    ASSERT_EQ(s.bytes, 2 * ITEM_HDR + 1 + 3 + 2 + 1);
    ASSERT_EQ(s.limit_maxbytes, 64 * MiB);
#ifndef ENGINE_SEG  /* pages, chunks and the hash table: the slab layout */
    ASSERT_EQ(s.active_slabs, 1);
    ASSERT_EQ(s.total_malloced, MiB);
    ASSERT_EQ(s.hash_power_level, 16);
    ASSERT_EQ(s.hash_bytes, 65536 * sizeof(void *));
    ASSERT(!s.hash_is_expanding);
    struct engine_class_stats c;
    engine_class_stats(e, 1, &c);
    ASSERT_EQ(c.number, 2);
    ASSERT_EQ(c.used_chunks, 2);
    ASSERT_EQ(c.mem_requested, s.bytes);
    ASSERT_EQ(c.total_pages, 1);
    engine_clock_set(e, T0 + 30);
    engine_class_stats(e, 1, &c);
    ASSERT_EQ(c.age, 30);
#endif
    engine_destroy(&e);
}

/* ---- sizes and chained items ---- */

TEST(item_size_max_bound) {
    struct engine *e = mk();
    size_t nearly = MiB - 100;
    ASSERT_EQ(store_n(e, ENGINE_SET, "big", "0123456789abcdef", nearly, 0, 0, 0, NULL),
              ENGINE_STORED);
    struct item *it = engine_get(e, "big", 3, NULL);
    ASSERT(it != NULL);
    ASSERT_EQ(item_nbytes(it), nearly);
    struct iovec iov[8];
    int k = engine_item_iov(it, iov, 8);
    ASSERT(ENGINE_SEG_ON ? k == 1 : k >= 2 && k <= engine_item_iov_max(e));
    size_t at = 0;
    for (int i = 0; i < k; i++)
        for (size_t j = 0; j < iov[i].iov_len; j++, at++)
            if (((char *)iov[i].iov_base)[j] != "0123456789abcdef"[at % 16])
                TH_FAIL("byte %zu differs", at);
    ASSERT_EQ(at, nearly);
    engine_item_unref(e, it);
    /* The whole item, header and key included, may be item_size_max... */
    size_t exact = MiB - sizeof(struct item) - 1;
    ASSERT_EQ(store_n(e, ENGINE_SET, "x", "z", exact, 0, 0, 0, NULL), ENGINE_STORED);
    /* ...and not a byte more. */
    ASSERT_EQ(store_n(e, ENGINE_SET, "x", "z", exact + 1, 0, 0, 0, NULL), 100);
    ASSERT_EQ(store_n(e, ENGINE_SET, "y", "z", MiB + 1, 0, 0, 0, NULL), 100);
    char key[300];
    memset(key, 'k', 251);
    key[251] = 0;
    ASSERT_EQ(store(e, ENGINE_SET, key, "v", 0, 0, 0, NULL), 100);
    engine_destroy(&e);
}

#ifndef ENGINE_SEG /* values larger than a segment are not stored out of line yet */
TEST(chained_items_round_trip_and_free) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.item_size_max = 4 * MiB;
    struct engine *e = mk_cfg(&cfg);
    unsigned top = engine_nclasses(e);
    size_t n = 3 * MiB + 12345;
    ASSERT_EQ(store_n(e, ENGINE_SET, "huge", "abcdefg", n, 5, 0, 0, NULL), ENGINE_STORED);
    struct item *it = engine_get(e, "huge", 4, NULL);
    ASSERT(it != NULL);
    ASSERT_EQ(item_clsid(it), top);
    struct iovec iov[16];
    int k = engine_item_iov(it, iov, 16);
    ASSERT_EQ(k, 7);                            /* head + 5 full chunks + a tail */
    ASSERT(k <= engine_item_iov_max(e));
    size_t at = 0;
    for (int i = 0; i < k; i++)
        for (size_t j = 0; j < iov[i].iov_len; j++, at++)
            if (((char *)iov[i].iov_base)[j] != "abcdefg"[at % 7])
                TH_FAIL("byte %zu differs", at);
    ASSERT_EQ(at, n);
    /* engine_item_iov fills no more than asked */
    ASSERT_EQ(engine_item_iov(it, iov, 2), 2);
    engine_item_unref(e, it);
    /* The tail went to a smaller class, not a whole 512 KiB chunk. */
    struct engine_class_stats c;
    engine_class_stats(e, top, &c);
    ASSERT_EQ(c.used_chunks, 6);
    ASSERT_EQ(c.number, 1);
    ASSERT_EQ(c.mem_requested, sizeof(struct item) + 4 + n);
    ASSERT_EQ(engine_delete(e, "huge", 4, 0), ENGINE_DELETED);
    engine_class_stats(e, top, &c);
    ASSERT_EQ(c.used_chunks, 0);
    struct engine_stats s = stats(e);
    ASSERT_EQ(s.curr_items, 0);
    uint64_t used = 0;
    for (unsigned i = 1; i <= top; i++) {
        engine_class_stats(e, i, &c);
        used += c.used_chunks;
    }
    ASSERT_EQ(used, 0);
    /* The largest item with the longest key needs at most iov_max pieces. */
    char key[ENGINE_KEY_MAX + 1];
    memset(key, 'k', ENGINE_KEY_MAX);
    key[ENGINE_KEY_MAX] = 0;
    n = 4 * MiB - sizeof(struct item) - ENGINE_KEY_MAX;
    ASSERT_EQ(store_n(e, ENGINE_SET, key, "q", n, 0, 0, 0, NULL), ENGINE_STORED);
    ASSERT_EQ(store_n(e, ENGINE_SET, key, "q", n + 1, 0, 0, 0, NULL), 100);
    it = engine_get(e, key, ENGINE_KEY_MAX, NULL);
    ASSERT(it != NULL);
    k = engine_item_iov(it, iov, 16);
    ASSERT(k <= engine_item_iov_max(e));
    at = 0;
    for (int i = 0; i < k; i++)
        at += iov[i].iov_len;
    ASSERT_EQ(at, n);
    engine_item_unref(e, it);
    engine_destroy(&e);
}
#endif

#ifndef ENGINE_SEG /* values larger than a segment are not stored out of line yet */
TEST(append_prepend_across_chains) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.item_size_max = 2 * MiB;
    struct engine *e = mk_cfg(&cfg);
    size_t n = 700 * 1024;
    ASSERT_EQ(store_n(e, ENGINE_SET, "k", "0123456789", n, 9, 0, 0, NULL), ENGINE_STORED);
    ASSERT_EQ(store_n(e, ENGINE_APPEND, "k", "AB", 600 * 1024, 0, 0, 0, NULL), ENGINE_STORED);
    ASSERT_EQ(store(e, ENGINE_PREPEND, "k", "<<", 0, 0, 0, NULL), ENGINE_STORED);
    struct item *it = engine_get(e, "k", 1, NULL);
    ASSERT(it != NULL);
    ASSERT_EQ(item_nbytes(it), 2 + n + 600 * 1024);
    ASSERT_EQ(item_flags(it), 9);
    struct iovec iov[8];
    int k = engine_item_iov(it, iov, 8);
    size_t at = 0;
    for (int i = 0; i < k; i++) {
        for (size_t j = 0; j < iov[i].iov_len; j++, at++) {
            char want = at < 2 ? '<' : at < 2 + n ? "0123456789"[(at - 2) % 10]
                                                  : "AB"[(at - 2 - n) % 2];
            if (((char *)iov[i].iov_base)[j] != want)
                TH_FAIL("byte %zu differs", at);
        }
    }
    ASSERT_EQ(at, item_nbytes(it));
    engine_item_unref(e, it);
    /* Too large combined: no memory for the combined item. */
    ASSERT_EQ(store_n(e, ENGINE_APPEND, "k", "Z", 1500 * 1024, 0, 0, 0, NULL),
              ENGINE_STORE_NO_MEMORY);
    engine_destroy(&e);
}
#endif

/* ---- memory limit and eviction ---- */

/* Eviction order here is the flat LRU's (the default, slru, has its own tests). */
static struct engine *small(size_t limit, bool evict) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.policy = "lru";
    cfg.mem_limit = limit;
    cfg.evict = evict;
    return mk_cfg(&cfg);
}

#define V900 "0123456789012345678901234567890123456789012345678901234567890123456789" \
             "0123456789012345678901234567890123456789012345678901234567890123456789"

static enum engine_store_result set900(struct engine *e, int i, int64_t exptime) {
    char key[32];
    snprintf(key, sizeof(key), "k%06d", i);
    return store_n(e, ENGINE_SET, key, V900, 900, 0, exptime, 0, NULL);
}

static bool has900(struct engine *e, int i) {
    char key[32];
    snprintf(key, sizeof(key), "k%06d", i);
    struct item *it = engine_get(e, key, strlen(key), NULL);
    engine_item_unref(e, it);
    return it != NULL;
}

#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(memory_limit_holds) {
    struct engine *e = small(8 * MiB, true);
    for (int i = 0; i < 20000; i++) {
        char key[32];
        snprintf(key, sizeof(key), "key%d", i);
        size_t n = 10 + (size_t)(i * 7919) % 3000;
        ASSERT_EQ(store_n(e, ENGINE_SET, key, "v", n, 0, 0, 0, NULL), ENGINE_STORED);
    }
    struct engine_stats s = stats(e);
    ASSERT(s.evictions > 0);
    ASSERT(s.total_malloced <= 8 * MiB + (uint64_t)s.active_slabs * MiB);
    ASSERT(s.bytes <= s.total_malloced);
    ASSERT(get(e, "key19999") != NULL);         /* the newest survive */
    engine_destroy(&e);
}
#endif

/* 900-byte values land in one class; 2 MiB gives it exactly two pages. */
static int capacity(struct engine *e) {
    struct engine_class_stats c;
    engine_class_stats(e, engine_class_for(e, sizeof(struct item) + 7 + 900), &c);
    return (int)(2 * c.chunks_per_page);
}

#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(lru_keeps_recently_read_items) {
    struct engine *e = small(2 * MiB, true);
    int cap = capacity(e);
    for (int i = 0; i < cap; i++)
        ASSERT_EQ(set900(e, i, 0), ENGINE_STORED);
    ASSERT_EQ(stats(e).evictions, 0);
    ASSERT_EQ(stats(e).total_malloced, 2 * MiB);
    /* A minute later (bumps are rate-limited to one per 60 s), read 0..99. */
    engine_clock_set(e, T0 + 61);
    for (int i = 0; i < 100; i++)
        ASSERT(has900(e, i));
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(set900(e, cap + i, 0), ENGINE_STORED);
    for (int i = 0; i < 100; i++) {
        ASSERT(has900(e, i));                   /* read: survived */
        ASSERT(!has900(e, 100 + i));            /* oldest unread: evicted */
        ASSERT(has900(e, 200 + i));
        ASSERT(has900(e, cap + i));
    }
    struct engine_stats s = stats(e);
    ASSERT_EQ(s.evictions, 100);
    ASSERT_EQ(s.evicted_unfetched, 100);
    ASSERT_EQ(s.total_malloced, 2 * MiB);
    struct engine_class_stats c;
    engine_class_stats(e, engine_class_for(e, sizeof(struct item) + 7 + 900), &c);
    ASSERT_EQ(c.evicted, 100);
    ASSERT_EQ(c.evicted_time, 61);
    ASSERT_EQ(c.evicted_nonzero, 0);
    engine_destroy(&e);
}
#endif

#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(lru_bumps_at_most_once_a_minute) {
    struct engine *e = small(2 * MiB, true);
    int cap = capacity(e);
    for (int i = 0; i < cap; i++)
        set900(e, i, 0);
    engine_clock_set(e, T0 + 60);               /* not yet more than 60 s */
    ASSERT(has900(e, 0));
    ASSERT_EQ(set900(e, cap, 0), ENGINE_STORED);
    ASSERT(!has900(e, 0));                      /* the read did not save it */
    ASSERT(has900(e, 1));
    engine_destroy(&e);
}
#endif

#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(referenced_tail_items_are_skipped) {
    struct engine *e = small(2 * MiB, true);
    int cap = capacity(e);
    for (int i = 0; i < cap; i++)
        set900(e, i, 0);
    struct item *held = engine_get(e, "k000000", 7, NULL);
    ASSERT(held != NULL);
    ASSERT_EQ(set900(e, cap, 0), ENGINE_STORED);
    ASSERT(has900(e, 0));                       /* held: not evicted */
    ASSERT(!has900(e, 1));
    engine_item_unref(e, held);
    engine_destroy(&e);
}
#endif

#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(no_evict_gives_no_memory) {
    struct engine *e = small(2 * MiB, false);
    int cap = capacity(e);
    for (int i = 0; i < cap - 10; i++)
        ASSERT_EQ(set900(e, i, 0), ENGINE_STORED);
    for (int i = cap - 10; i < cap; i++)
        ASSERT_EQ(set900(e, i, 5), ENGINE_STORED);
    ASSERT_EQ(set900(e, cap, 0), 101);          /* NO_MEMORY */
    struct engine_class_stats c;
    engine_class_stats(e, engine_class_for(e, sizeof(struct item) + 7 + 900), &c);
    ASSERT_EQ(c.outofmemory, 1);
    ASSERT_EQ(stats(e).evictions, 0);
    ASSERT(has900(e, 0));
    /* Expired items are still reclaimed under -M, but they are not at the
     * tail: move the ones at the tail out of the way first. */
    engine_clock_set(e, T0 + 10);
    for (int i = 0; i < 10; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%06d", i);
        ASSERT(engine_touch(e, key, strlen(key), 1));
    }
    engine_clock_set(e, T0 + 12);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(set900(e, cap + i, 0), ENGINE_STORED);
    struct engine_stats s = stats(e);
    ASSERT_EQ(s.reclaimed, 5);
    ASSERT_EQ(s.expired_unfetched, 0);          /* touch counts as a fetch */
    ASSERT_EQ(s.evictions, 0);
    engine_destroy(&e);
}
#endif

/* ---- expiry ---- */

TEST(relative_expiry) {
    struct engine *e = mk();
    store(e, ENGINE_SET, "a", "1", 0, 10, 0, NULL);
    engine_clock_set(e, T0 + 9);
    ASSERT(get(e, "a") != NULL);
    engine_clock_set(e, T0 + 10);
    ASSERT_EQ(why(e, "a"), ENGINE_MISS_EXPIRED);
    ASSERT_EQ(why(e, "a"), ENGINE_MISS_NONE);   /* unlinked on the way */
    ASSERT_EQ(stats(e).curr_items, 0);
    ASSERT_EQ(stats(e).reclaimed, 0);           /* observed: lazy expiry is not "reclaimed" */
    engine_destroy(&e);
}

/*
 * The maintainer's reap (cfg.reap): dead items at the policy's oldest end
 * leave at the next engine_step(), counted as reclaimed (and unfetched),
 * up to the first live one; without it they wait for a lookup.  Any lookup
 * that meets a dead item counts it (memcached's get_expired, get_flushed),
 * a store too; stats reset zeroes those and the reclaims.
 */
#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(reap_reclaims_dead_items_at_the_oldest_end) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.crawl = false;
    for (int reap = 0; reap < 2; reap++) {
        cfg.reap = reap;
        struct engine *e = mk_cfg(&cfg);
        store(e, ENGINE_SET, "a", "1", 0, 5, 0, NULL);
        store(e, ENGINE_SET, "b", "1", 0, -1, 0, NULL);
        store(e, ENGINE_SET, "c", "1", 0, 0, 0, NULL);
        store(e, ENGINE_SET, "d", "1", 0, 5, 0, NULL);   /* behind the live c */
        engine_clock_set(e, T0 + 5);
        engine_step(e, 1000);
        struct engine_stats st = stats(e);
        ASSERT_EQ(st.curr_items, reap ? 2 : 4);
        ASSERT_EQ(st.reclaimed, reap ? 2 : 0);
        ASSERT_EQ(st.expired_unfetched, reap ? 2 : 0);
        ASSERT_EQ(st.get_expired, 0);
        ASSERT_EQ(set(e, "d", "2"), ENGINE_STORED);      /* meets the dead d */
        ASSERT_EQ(stats(e).get_expired, 1);
        engine_flush(e, 0);
        ASSERT(get(e, "c") == NULL);
        ASSERT_EQ(stats(e).get_flushed, 1);
        engine_stats_reset(e);
        st = stats(e);
        ASSERT_EQ(st.get_expired + st.get_flushed + st.reclaimed + st.total_items, 0);
        engine_destroy(&e);
    }
}
#endif

TEST(absolute_and_negative_expiry) {
    struct engine *e = mk();
    store(e, ENGINE_SET, "abs", "1", 0, T0 + 100, 0, NULL);
    store(e, ENGINE_SET, "past", "1", 0, T0 - 100, 0, NULL);
    store(e, ENGINE_SET, "neg", "1", 0, -1, 0, NULL);
    store(e, ENGINE_SET, "d30", "1", 0, 2592000, 0, NULL);
    store(e, ENGINE_SET, "d30+1", "1", 0, 2592001, 0, NULL);   /* 1970: observed gone */
    ASSERT_EQ(why(e, "past"), ENGINE_MISS_EXPIRED);
    ASSERT_EQ(why(e, "neg"), ENGINE_MISS_EXPIRED);
    ASSERT_EQ(why(e, "d30+1"), ENGINE_MISS_EXPIRED);
    ASSERT(get(e, "abs") != NULL);
    ASSERT(get(e, "d30") != NULL);
    engine_clock_set(e, T0 + 99);
    ASSERT(get(e, "abs") != NULL);
    engine_clock_set(e, T0 + 100);
    ASSERT(get(e, "abs") == NULL);
    engine_clock_set(e, T0 + 2592000 - 1);
    ASSERT(get(e, "d30") != NULL);
    engine_clock_set(e, T0 + 2592000);
    ASSERT(get(e, "d30") == NULL);
    engine_destroy(&e);
}

TEST(touch_and_get_touch) {
    struct engine *e = mk();
    store(e, ENGINE_SET, "a", "1", 0, 10, 0, NULL);
    uint64_t cas = cas_of(e, "a");
    ASSERT(engine_touch(e, "a", 1, 100));
    ASSERT(!engine_touch(e, "zz", 2, 100));
    ASSERT_U64(cas_of(e, "a"), cas);            /* touch keeps the CAS */
    engine_clock_set(e, T0 + 50);
    struct item *it = engine_get_touch(e, "a", 1, 5, NULL);
    ASSERT(it != NULL);
    engine_item_unref(e, it);
    engine_clock_set(e, T0 + 55);
    ASSERT_EQ(why(e, "a"), ENGINE_MISS_EXPIRED);
    store(e, ENGINE_SET, "b", "1", 0, 0, 0, NULL);
    ASSERT(engine_touch(e, "b", 1, -1));        /* negative: expire now */
    ASSERT_EQ(why(e, "b"), ENGINE_MISS_EXPIRED);
    enum engine_miss w;
    ASSERT(engine_get_touch(e, "b", 1, 10, &w) == NULL);
    ASSERT_EQ(w, ENGINE_MISS_NONE);
    engine_destroy(&e);
}

TEST(first_clock_set_keeps_engine_time_continuous) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    struct engine *e = engine_create(&cfg, NULL, 0);
    store(e, ENGINE_SET, "a", "1", 0, 10, 0, NULL);
    engine_clock_set(e, 1000);                  /* a simulator's epoch */
    ASSERT_EQ(engine_clock(e), 1000);
    engine_clock_set(e, 1009);
    ASSERT(get(e, "a") != NULL);
    engine_clock_set(e, 1010);
    ASSERT(get(e, "a") == NULL);
    engine_destroy(&e);
}

/* ---- flush_all ---- */

TEST(flush_now_with_cas) {
    struct engine *e = mk();
    set(e, "a", "1");
    engine_flush(e, 0);
    set(e, "b", "2");                           /* same second: observed visible */
    ASSERT_EQ(why(e, "a"), ENGINE_MISS_FLUSHED);
    ASSERT_STR(get(e, "b"), "2");
    engine_clock_set(e, T0 + 1);
    ASSERT_STR(get(e, "b"), "2");
    set(e, "c", "3");
    ASSERT_STR(get(e, "c"), "3");
    engine_destroy(&e);
}

TEST(flush_now_without_cas) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.use_cas = false;
    struct engine *e = mk_cfg(&cfg);
    set(e, "a", "1");
    engine_flush(e, 0);
    set(e, "b", "2");                           /* same second: observed flushed too */
    ASSERT_EQ(why(e, "a"), ENGINE_MISS_FLUSHED);
    ASSERT_EQ(why(e, "b"), ENGINE_MISS_FLUSHED);
    engine_clock_set(e, T0 + 1);
    set(e, "d", "4");
    ASSERT_STR(get(e, "d"), "4");               /* observed visible */
    engine_destroy(&e);
}

/*
 * With CAS on, memcached puts the flush point one second before the delay
 * runs out (observed: flush_all 4 hides items after about 3 s with CAS and
 * about 4 s with -C); everything stored up to that point goes.
 */
static void delayed_flush(int *th_failed, bool use_cas) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.use_cas = use_cas;
    struct engine *e = mk_cfg(&cfg);
    uint32_t at = use_cas ? 9 : 10;
    set(e, "a", "1");
    engine_flush(e, 10);
    engine_clock_set(e, T0 + 5);
    set(e, "b", "2");
    ASSERT_STR(get(e, "a"), "1");
    engine_clock_set(e, T0 + at - 1);
    ASSERT_STR(get(e, "b"), "2");
    set(e, "c", "3");
    engine_clock_set(e, T0 + at);
    set(e, "d", "4");                           /* at the point itself: gone too */
    ASSERT_EQ(why(e, "a"), ENGINE_MISS_FLUSHED);
    ASSERT_EQ(why(e, "b"), ENGINE_MISS_FLUSHED);
    ASSERT_EQ(why(e, "c"), ENGINE_MISS_FLUSHED);
    ASSERT_EQ(why(e, "d"), ENGINE_MISS_FLUSHED);
    engine_clock_set(e, T0 + at + 1);
    set(e, "e", "5");
    ASSERT_STR(get(e, "e"), "5");
    engine_destroy(&e);
}

TEST(flush_with_delay) {
    delayed_flush(th_failed, true);
    if (*th_failed)
        return;
    delayed_flush(th_failed, false);
}

TEST(flush_to_a_past_unix_time_does_nothing_with_cas) {
    struct engine *e = mk();                    /* memcached: oldest_live becomes 0 */
    set(e, "a", "1");
    engine_flush(e, T0 - 1000);
    ASSERT_STR(get(e, "a"), "1");
    engine_destroy(&e);
}

/* ---- CAS and store semantics ---- */

TEST(store_ops_and_cas) {
    struct engine *e = mk();
    uint64_t c1 = 0, c2 = 0, c3 = 0;
    ASSERT_EQ(store(e, ENGINE_REPLACE, "k", "r", 0, 0, 0, NULL), ENGINE_NOT_STORED);
    ASSERT_EQ(store(e, ENGINE_APPEND, "k", "r", 0, 0, 0, NULL), ENGINE_NOT_STORED);
    ASSERT_EQ(store(e, ENGINE_PREPEND, "k", "r", 0, 0, 0, NULL), ENGINE_NOT_STORED);
    ASSERT_EQ(store(e, ENGINE_CAS, "k", "r", 0, 0, 1, NULL), ENGINE_NOT_FOUND);
    ASSERT(get(e, "k") == NULL);
    ASSERT_EQ(store(e, ENGINE_ADD, "k", "a", 0, 0, 0, &c1), ENGINE_STORED);
    ASSERT_EQ(store(e, ENGINE_ADD, "k", "b", 0, 0, 0, NULL), ENGINE_NOT_STORED);
    ASSERT_STR(get(e, "k"), "a");
    ASSERT_U64(cas_of(e, "k"), c1);
    ASSERT_EQ(store(e, ENGINE_REPLACE, "k", "c", 0, 0, 0, &c2), ENGINE_STORED);
    ASSERT(c2 > c1);
    ASSERT_EQ(store(e, ENGINE_CAS, "k", "d", 0, 0, c1, NULL), ENGINE_EXISTS);
    ASSERT_STR(get(e, "k"), "c");
    ASSERT_EQ(store(e, ENGINE_CAS, "k", "d", 0, 0, c2, &c3), ENGINE_STORED);
    ASSERT(c3 > c2);
    ASSERT_STR(get(e, "k"), "d");
    ASSERT_EQ(store(e, ENGINE_SET, "k", "e", 0, 0, 12345, &c1), ENGINE_STORED); /* cas ignored */
    ASSERT(c1 > c3);
    /* append/prepend check a non-zero CAS too */
    ASSERT_EQ(store(e, ENGINE_APPEND, "k", "x", 0, 0, c3, NULL), ENGINE_EXISTS);
    ASSERT_EQ(store(e, ENGINE_APPEND, "k", "x", 0, 0, c1, &c2), ENGINE_STORED);
    ASSERT(c2 > c1);
    ASSERT_U64(cas_of(e, "k"), c2);
    ASSERT_EQ(store(e, ENGINE_PREPEND, "k", "y", 0, 0, 0, NULL), ENGINE_STORED);
    ASSERT_STR(get(e, "k"), "yex");
    /* An expired key is missing for every op. */
    store(e, ENGINE_SET, "t", "1", 0, 5, 0, NULL);
    engine_clock_set(e, T0 + 5);
    ASSERT_EQ(store(e, ENGINE_REPLACE, "t", "2", 0, 0, 0, NULL), ENGINE_NOT_STORED);
    ASSERT_EQ(store(e, ENGINE_ADD, "t", "3", 0, 0, 0, NULL), ENGINE_STORED);
    ASSERT_STR(get(e, "t"), "3");
    engine_destroy(&e);
}

TEST(append_keeps_flags_and_exptime) {
    struct engine *e = mk();
    store(e, ENGINE_SET, "k", "ab", 42, 100, 0, NULL);
    ASSERT_EQ(store(e, ENGINE_APPEND, "k", "cd", 7, 0, 0, NULL), ENGINE_STORED);
    ASSERT_EQ(store(e, ENGINE_PREPEND, "k", "__", 8, 0, 0, NULL), ENGINE_STORED);
    struct item *it = engine_get(e, "k", 1, NULL);
    ASSERT_EQ(item_flags(it), 42);
    engine_item_unref(e, it);
    ASSERT_STR(get(e, "k"), "__abcd");
    engine_clock_set(e, T0 + 100);
    ASSERT_EQ(why(e, "k"), ENGINE_MISS_EXPIRED);
    engine_destroy(&e);
}

#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(add_bumps_existing_item) {
    struct engine *e = small(2 * MiB, true);
    int cap = capacity(e);
    for (int i = 0; i < cap; i++)
        set900(e, i, 0);
    engine_clock_set(e, T0 + 61);
    /* a short value, so that allocating it evicts nothing from the class */
    ASSERT_EQ(store(e, ENGINE_ADD, "k000000", "x", 0, 0, 0, NULL), ENGINE_NOT_STORED);
    set900(e, cap, 0);
    ASSERT(has900(e, 0));
    ASSERT(!has900(e, 1));
    engine_destroy(&e);
}
#endif

TEST(cas_disabled) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.use_cas = false;
    struct engine *e = mk_cfg(&cfg);
    uint64_t c = 99;
    ASSERT_EQ(store(e, ENGINE_SET, "k", "a", 0, 0, 0, &c), ENGINE_STORED);
    ASSERT_U64(c, 0);
    ASSERT_U64(cas_of(e, "k"), 0);
    /*
     * observed with -C (also with -o no_lru_maintainer,no_lru_crawler):
     * cas 999 -> EXISTS, and cas 0 -> EXISTS too: 1.6.18 compares a
     * requested CAS of 0 as "none", which never matches a cas store.
     */
    ASSERT_EQ(store(e, ENGINE_CAS, "k", "b", 0, 0, 999, NULL), ENGINE_EXISTS);
    ASSERT_EQ(store(e, ENGINE_CAS, "k", "b", 0, 0, 0, NULL), ENGINE_EXISTS);
    ASSERT_EQ(store(e, ENGINE_CAS, "nope", "b", 0, 0, 0, NULL), ENGINE_NOT_FOUND);
    ASSERT_STR(get(e, "k"), "a");
    uint64_t v;
    set(e, "n", "5");
    ASSERT_EQ(engine_arith(e, "n", 1, true, 1, &v, &c), ENGINE_ARITH_OK);
    ASSERT_U64(c, 0);
    engine_destroy(&e);
}

/* ---- references ---- */

TEST(referenced_items_survive_delete_and_replace) {
    struct engine *e = mk();
    char buf[64];
    set(e, "k", "first");
    struct item *a = engine_get(e, "k", 1, NULL);
    set(e, "k", "second");
    struct item *b = engine_get(e, "k", 1, NULL);
    ASSERT_EQ(engine_delete(e, "k", 1, 0), ENGINE_DELETED);
    set(e, "k", "third");
    value_of(a, buf, sizeof(buf));
    ASSERT_STR(buf, "first");
    value_of(b, buf, sizeof(buf));
    ASSERT_STR(buf, "second");
    ASSERT_STR(get(e, "k"), "third");
    struct engine_class_stats c;
    engine_class_stats(e, 1, &c);
    ASSERT_EQ(c.number, 1);
#ifndef ENGINE_SEG  /* chunks: the slab layout */
    ASSERT_EQ(c.used_chunks, 3);
    engine_item_unref(e, a);
    engine_item_unref(e, b);
    engine_class_stats(e, 1, &c);
    ASSERT_EQ(c.used_chunks, 1);
    /* An allocated item that is never stored just goes back. */
    struct item *it = engine_item_alloc(e, "z", 1, 0, 0, 3, NULL);
    engine_class_stats(e, 1, &c);
    ASSERT_EQ(c.used_chunks, 2);
    engine_item_unref(e, it);
    engine_class_stats(e, 1, &c);
    ASSERT_EQ(c.used_chunks, 1);
#else
    engine_item_unref(e, a);
    engine_item_unref(e, b);
    struct item *it;
#endif
    /* Storing an item twice is refused. */
    it = engine_item_alloc(e, "z", 1, 0, 0, 0, NULL);
    ASSERT_EQ(engine_store(e, it, ENGINE_SET, 0, NULL), ENGINE_STORED);
    ASSERT_EQ(engine_store(e, it, ENGINE_SET, 0, NULL), ENGINE_NOT_STORED);
    engine_item_unref(e, it);
    engine_destroy(&e);
}

/* ---- incr/decr ---- */

static enum engine_arith_result arith(struct engine *e, const char *key, bool incr,
                                      uint64_t delta, uint64_t *v) {
    return engine_arith(e, key, strlen(key), incr, delta, v, NULL);
}

TEST(incr_decr_in_place_and_padding) {
    struct engine *e = mk();
    uint64_t v = 0, c0, c1;
    set(e, "n", "100");
    c0 = cas_of(e, "n");
    ASSERT_EQ(engine_arith(e, "n", 1, false, 1, &v, &c1), ENGINE_ARITH_OK);
    ASSERT_U64(v, 99);
    ASSERT(c1 > c0);
    ASSERT_U64(cas_of(e, "n"), c1);
    ASSERT_STR(get(e, "n"), "99 ");             /* observed */
    ASSERT_EQ(arith(e, "n", true, 1, &v), ENGINE_ARITH_OK);
    ASSERT_STR(get(e, "n"), "100");
    ASSERT_EQ(arith(e, "n", true, 900, &v), ENGINE_ARITH_OK);
    ASSERT_U64(v, 1000);
    ASSERT_STR(get(e, "n"), "1000");            /* longer: a new item, exact */
    ASSERT_EQ(arith(e, "n", false, 5000, &v), ENGINE_ARITH_OK);
    ASSERT_U64(v, 0);                           /* decr stops at 0 */
    ASSERT_STR(get(e, "n"), "0   ");
    set(e, "m", "18446744073709551615");
    ASSERT_EQ(arith(e, "m", true, 2, &v), ENGINE_ARITH_OK);
    ASSERT_U64(v, 1);                           /* observed: wraps */
    ASSERT_STR(get(e, "m"), "1                   ");
    ASSERT_EQ(arith(e, "nope", true, 1, &v), ENGINE_ARITH_NOT_FOUND);
    store(e, ENGINE_SET, "f", "7", 33, 50, 0, NULL);
    ASSERT_EQ(arith(e, "f", true, 3, &v), ENGINE_ARITH_OK);
    struct item *it = engine_get(e, "f", 1, NULL);
    ASSERT_EQ(item_flags(it), 33);
    ASSERT_EQ(item_nbytes(it), 2);
    engine_item_unref(e, it);
    engine_clock_set(e, T0 + 50);
    ASSERT_EQ(arith(e, "f", true, 3, &v), ENGINE_ARITH_NOT_FOUND);     /* kept exptime */
    engine_destroy(&e);
}

/* A holder keeps its bytes; the new value still looks as memcached's in-place result. */
TEST(incr_not_in_place_when_referenced) {
    struct engine *e = mk();
    char buf[32];
    uint64_t v;
    set(e, "n", "100");
    struct item *held = engine_get(e, "n", 1, NULL);
    ASSERT_EQ(arith(e, "n", false, 1, &v), ENGINE_ARITH_OK);
    value_of(held, buf, sizeof(buf));
    ASSERT_STR(buf, "100");                     /* the holder's bytes did not move */
    ASSERT_STR(get(e, "n"), "99 ");             /* a new item, padded like memcached's */
    engine_item_unref(e, held);
    engine_destroy(&e);
}

TEST(incr_parses_like_safe_strtoull) {
    static const struct {
        const char *val;
        int ok;
        uint64_t after_incr_1;
    } rows[] = {
        /* all observed on memcached 1.6.18 except where noted */
        {"12abc", 0, 0},
        {"", 0, 0},
        {" 12", 1, 13},
        {"1\t23", 1, 2},
        {"+7", 1, 8},
        {"+5x", 0, 0},
        {"-0", 1, 1},
        {"-1", 0, 0},
        {"-9223372036854775809", 1, 9223372036854775808ULL},
        {"18446744073709551616", 0, 0},         /* ERANGE */
        {"abc", 0, 0},
        {" ", 0, 0},
        {"-", 0, 0},
        {"12 34", 1, 13},
        {"0", 1, 1},
    };
    struct engine *e = mk();
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        uint64_t v = 0;
        set(e, "x", rows[i].val);
        enum engine_arith_result r = arith(e, "x", true, 1, &v);
        if (r != (rows[i].ok ? ENGINE_ARITH_OK : ENGINE_ARITH_NON_NUMERIC))
            TH_FAIL("\"%s\": result %d", rows[i].val, r);
        if (rows[i].ok && v != rows[i].after_incr_1)
            TH_FAIL("\"%s\": value %llu", rows[i].val, (unsigned long long)v);
    }
    /* A NUL inside the value ends the number, as in C strings. */
    struct item *it = engine_item_alloc(e, "z", 1, 0, 0, 3, NULL);
    struct iovec iov;
    engine_item_iov(it, &iov, 1);
    memcpy(iov.iov_base, "5\0x", 3);
    ASSERT_EQ(engine_store(e, it, ENGINE_SET, 0, NULL), ENGINE_STORED);
    engine_item_unref(e, it);
    uint64_t v;
    ASSERT_EQ(arith(e, "z", true, 1, &v), ENGINE_ARITH_OK);
    ASSERT_U64(v, 6);
    engine_destroy(&e);
}

TEST(incr_on_chained_value_is_non_numeric) {
    struct engine *e = mk();
    uint64_t v;
    store_n(e, ENGINE_SET, "big", "1", 600 * 1024, 0, 0, 0, NULL);
    ASSERT_EQ(arith(e, "big", true, 1, &v), ENGINE_ARITH_NON_NUMERIC);
    engine_destroy(&e);
}

/* ---- hash table growth and the crawler ---- */

static void key_of(char *buf, size_t cap, int i) { snprintf(buf, cap, "grow:%d", i); }

#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(table_grows_incrementally_and_keeps_every_key) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.hashpower_init = 8;
    cfg.lock_power = 12;                        /* clamped to 8 */
    struct engine *e = mk_cfg(&cfg);
    int n = 0, steps = 0, growths = 0;
    char key[32];
    for (int round = 0; round < 3; round++) {
        int upto = 400 << round * 2;            /* pass 1.5 items a bucket */
        for (; n < upto; n++) {
            key_of(key, sizeof(key), n);
            ASSERT_EQ(set(e, key, "v"), ENGINE_STORED);
        }
        ASSERT_EQ(engine_step(e, 1), 1);         /* starts growing */
        ASSERT(stats(e).hash_is_expanding);
        growths++;
        while (stats(e).hash_is_expanding) {
            for (int i = 0; i < n; i++) {
                key_of(key, sizeof(key), i);
                if (get(e, key) == NULL)
                    TH_FAIL("key %d lost after %d steps", i, steps);
            }
            /* keep changing the table while it moves */
            key_of(key, sizeof(key), n);
            set(e, key, "v");
            n++;
            engine_step(e, 1 + steps % 3);
            steps++;
        }
        ASSERT_EQ(stats(e).hash_power_level, 8 + growths);
    }
    for (int i = 0; i < n; i++) {
        key_of(key, sizeof(key), i);
        if (get(e, key) == NULL)
            TH_FAIL("key %d lost at the end", i);
    }
    ASSERT_EQ(stats(e).hash_bytes, (1u << 11) * sizeof(void *));
    engine_destroy(&e);
}
#endif

#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(crawler_reclaims_dead_items) {
    struct engine *e = mk();
    char key[32];
    for (int i = 0; i < 1000; i++) {
        key_of(key, sizeof(key), i);
        store(e, ENGINE_SET, key, "v", 0, i % 2 ? 10 : 0, 0, NULL);
    }
    engine_clock_set(e, T0 + 10);
    unsigned calls = 0;
    while (engine_step(e, 1000) != 0)
        calls++;
    ASSERT(calls > 10);                         /* bounded slices */
    struct engine_stats s = stats(e);
    ASSERT_EQ(s.crawler_reclaimed, 500);
    ASSERT_EQ(s.expired_unfetched, 500);
    ASSERT_EQ(s.crawler_items_checked, 1000);
    ASSERT_EQ(s.curr_items, 500);
    /* It rests, then a later pass catches flushed items too. */
    engine_flush(e, 0);
    ASSERT_EQ(engine_step(e, 1000), 0);
    engine_clock_set(e, T0 + 70);
    while (engine_step(e, 1000) != 0)
        ;
    s = stats(e);
    ASSERT_EQ(s.curr_items, 0);
    ASSERT_EQ(s.crawler_reclaimed, 1000);
    ASSERT_EQ(s.crawler_items_checked, 1500);
    engine_destroy(&e);
}
#endif

/* ---- dumps ---- */

struct seen {
    unsigned char count[2000];
    int other;
    bool bad_fields;
};

static void count_item(const struct engine_dump_item *d, void *arg) {
    struct seen *sn = arg;
    char k[32] = "";
    int i;
    if (d->nkey < sizeof(k))
        memcpy(k, d->key, d->nkey);
    if (sscanf(k, "grow:%d", &i) != 1 || i < 0 || i >= 2000) {
        sn->other++;
        return;
    }
    sn->count[i]++;
    if (i < 1000 && (d->nbytes != 1 || d->clsid == 0 || d->atime != T0 || d->cas == 0 ||
                     d->exptime != (i % 2 ? T0 + 100 : 0) || d->fetched != (i == 7)))
        sn->bad_fields = true;
}

#ifndef ENGINE_SEG /* slab layout, per-item eviction order or the hash table */
TEST(dump_sees_every_item_once_even_begun_mid_growth) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.hashpower_init = 8;
    struct engine *e = mk_cfg(&cfg);
    char key[32];
    for (int i = 0; i < 1000; i++) {           /* 1000 > 1.5 x 256: growth is due */
        key_of(key, sizeof(key), i);
        ASSERT_EQ(store(e, ENGINE_SET, key, "v", 0, i % 2 ? 100 : 0, 0, NULL), ENGINE_STORED);
    }
    ASSERT(get(e, "grow:7") != NULL);
    ASSERT_EQ(set(e, "gone", "x"), ENGINE_STORED);
    ASSERT_EQ(engine_delete(e, "gone", 4, 0), ENGINE_DELETED);
    ASSERT_EQ(set(e, "short", "x"), ENGINE_STORED);
    ASSERT_EQ(store(e, ENGINE_SET, "dead", "x", 0, 5, 0, NULL), ENGINE_STORED);
    engine_clock_set(e, T0 + 6);               /* "dead" expired, the rest alive */
    ASSERT_EQ(engine_step(e, 1), 1);            /* a doubling starts... */
    ASSERT(stats(e).hash_is_expanding);
    uint64_t cursor;
    struct seen sn = {0};
    engine_dump_begin(e, &cursor);
    int steps = 0;
    while (engine_dump_step(e, &cursor, 7, count_item, &sn)) {
        /* ...the dump finishes it, and none starts while it runs */
        for (int i = 1000 + steps * 2; i < 1000 + steps * 2 + 2 && i < 2000; i++) {
            key_of(key, sizeof(key), i);
            set(e, key, "v");
        }
        engine_step(e, 100);
        ASSERT(steps < 100000);
        steps++;
    }
    ASSERT(!stats(e).hash_is_expanding);
    ASSERT_EQ(stats(e).hash_power_level, 9);
    for (int i = 0; i < 1000; i++)
        if (sn.count[i] != 1)
            TH_FAIL("key %d dumped %d times", i, sn.count[i]);
    for (int i = 1000; i < 2000; i++)
        ASSERT(sn.count[i] <= 1);
    ASSERT_EQ(sn.other, 1);                     /* "short"; not "gone" nor "dead" */
    ASSERT(!sn.bad_fields);
    engine_dump_end(e);
    while (engine_step(e, 1000) != 0 && !stats(e).hash_is_expanding)
        ;
    ASSERT(stats(e).hash_is_expanding || stats(e).hash_power_level > 9);  /* growth resumes */
    engine_destroy(&e);
}
#endif

/* engine_dump_part(): what a parallel save (persist.c) walks, a thread a slice. */
struct part_seen {
    unsigned char count[3000];
    int bad;
};

static void count_part(const struct engine_dump_item *d, void *arg) {
    struct part_seen *ps = arg;
    char k[32] = "";
    int i;
    memcpy(k, d->key, d->nkey < sizeof(k) - 1 ? d->nkey : sizeof(k) - 1);
    struct iovec iov[4];
    int n = engine_item_iov(d->it, iov, 4);
    size_t len = 0;
    for (int j = 0; j < n; j++)
        len += iov[j].iov_len;
    if (sscanf(k, "part:%d", &i) != 1 || i < 0 || i >= 3000 || len != 2000 ||
        ((const char *)iov[0].iov_base)[0] != (char)('a' + i % 26) || d->flags != (uint32_t)i)
        ps->bad++;
    else
        ps->count[i]++;
}

TEST(dump_parts_see_every_item_once) {
    struct engine *e = mk();
    char key[32];
    for (int i = 0; i < 3000; i++) {            /* 6 MB: several pages or segments */
        snprintf(key, sizeof(key), "part:%d", i);
        char val[2] = {(char)('a' + i % 26), '\0'};
        ASSERT_EQ(store_n(e, ENGINE_SET, key, val, 2000, (uint32_t)i, 0, 0, NULL),
                  ENGINE_STORED);
    }
    for (unsigned nparts = 1; nparts <= 9; nparts += 2) {
        struct part_seen ps = {{0}, 0};
        uint64_t cursor;
        engine_dump_begin(e, &cursor);
        for (unsigned p = 0; p < nparts; p++)
            engine_dump_part(e, p, nparts, count_part, &ps);
        engine_dump_end(e);
        ASSERT_EQ(ps.bad, 0);
        for (int i = 0; i < 3000; i++)
            if (ps.count[i] != 1)
                TH_FAIL("%u parts: item %d seen %d times", nparts, i, ps.count[i]);
    }
    engine_destroy(&e);
}

/* ---- watch hook (memcached's `watch`) ---- */

struct watched {
    int n;
    char line[64][96];
};

static void record(void *arg, const struct engine_watch_event *ev) {
    struct watched *s = arg;
    char *l = s->line[s->n++ % 64];
    switch (ev->kind) {
    case ENGINE_WATCH_FETCH:
        snprintf(l, 96, "get %.*s %s miss=%d", (int)ev->nkey, ev->key,
                 ev->it != NULL ? "found" : "nf", (int)ev->miss);
        break;
    case ENGINE_WATCH_STORE:
        snprintf(l, 96, "store %.*s op=%d st=%d ttl=%lld n=%u", (int)item_nkey(ev->it),
                 item_key(ev->it), (int)ev->op, (int)ev->status, (long long)ev->ttl,
                 item_nbytes(ev->it));
        break;
    case ENGINE_WATCH_EVICT:
        snprintf(l, 96, "evict %.*s ttl=%lld idle=%u", (int)item_nkey(ev->it), item_key(ev->it),
                 (long long)ev->ttl, ev->idle);
        break;
    }
}

TEST(watch_reports_lookups_stores_and_evictions) {
    struct watched s = {0};
    /* (segments are 1 MiB: three TTL ranges need three) */
    struct engine *e = small((ENGINE_SEG_ON ? 8 : 2) * MiB, true);
    engine_watch_hook(e, record, &s);
    ASSERT_EQ(set(e, "quiet", "x"), ENGINE_STORED);         /* nothing watched yet */
    ASSERT_EQ(s.n, 0);
    engine_watch_set(e, ENGINE_WATCH_FETCH | ENGINE_WATCH_STORE);
    ASSERT_EQ(store(e, ENGINE_SET, "a", "abc", 0, 100, 0, NULL), ENGINE_STORED);
    ASSERT_EQ(store(e, ENGINE_ADD, "a", "z", 0, 0, 0, NULL), ENGINE_NOT_STORED);
    ASSERT_EQ(store(e, ENGINE_APPEND, "a", "de", 0, 0, 0, NULL), ENGINE_STORED);
    ASSERT(get(e, "nope") == NULL);
    ASSERT_EQ(store(e, ENGINE_SET, "old", "v", 0, -1, 0, NULL), ENGINE_STORED);
    ASSERT(get(e, "old") == NULL);                          /* expired, still in the table */
    ASSERT_EQ(s.n, 10);
    ASSERT_STR(s.line[0], "get a nf miss=0");               /* every store looks first */
    ASSERT_STR(s.line[1], "store a op=0 st=0 ttl=100 n=3");
    ASSERT_STR(s.line[2], "get a found miss=0");
    ASSERT_STR(s.line[3], "store a op=1 st=1 ttl=-1 n=1");  /* the item refused */
    ASSERT_STR(s.line[4], "get a found miss=0");
    ASSERT_STR(s.line[5], "store a op=3 st=0 ttl=100 n=5"); /* the combined item */
    ASSERT_STR(s.line[6], "get nope nf miss=0");
    ASSERT(strncmp(s.line[8], "store old op=0 st=0 ttl=42949", 29) == 0);   /* in the past */
    ASSERT_STR(s.line[9], "get old nf miss=1");
    engine_watch_set(e, 0);
    ASSERT(get(e, "a") != NULL);
    ASSERT_EQ(s.n, 10);
    engine_destroy(&e);
#ifndef ENGINE_SEG  /* segments are evicted whole, unwatched (yet) */
    e = small(2 * MiB, true);
    engine_watch_hook(e, record, &s);
    engine_watch_set(e, ENGINE_WATCH_EVICT);
    s.n = 0;
    int cap = capacity(e);
    for (int i = 0; i < cap + 2; i++)
        ASSERT_EQ(set900(e, i, i == 0 ? 50 : 0), ENGINE_STORED);
    ASSERT_EQ(s.n, 2);                                      /* only evictions now */
    ASSERT_STR(s.line[0], "evict k000000 ttl=50 idle=0");
    ASSERT_STR(s.line[1], "evict k000001 ttl=-1 idle=0");
    ASSERT_EQ(stats(e).evictions, 2);
    engine_destroy(&e);
#endif
}

int main(void) { return RUN_TESTS(); }
