/*
 * test_engine_ext.c -- the engine's flash tier (engine_ext_config,
 * item_ext.c): values moved to flash behind header items, read back
 * whole, refused where memcached refuses them, released when their keys
 * go, and counted under memcached's names.  Files live in a fresh
 * directory under /tmp, removed at the end; time is driven by hand.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "storage/engine.h"

#define T0 1700000000u
#define MiB (1024u * 1024u)

static char dir[64];
static char path[128];

/* An engine with one 16 MiB flash file of 1 MiB pages and 256 KiB buffers; items idle 2 s go. */
static struct engine *mk(size_t mem, uint32_t recache_rate) {
    if (dir[0] == 0) {
        snprintf(dir, sizeof(dir), "/tmp/cellar-ext-XXXXXX");
        if (mkdtemp(dir) == NULL)
            abort();
    }
    snprintf(path, sizeof(path), "%s/flash", dir);
    unlink(path);
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.mem_limit = mem;
    cfg.ext.store.files[0] = (struct flash_file){path, 16 * MiB};
    cfg.ext.store.nfiles = 1;
    cfg.ext.store.page_size = MiB;
    cfg.ext.store.wbuf_size = MiB / 4;
    cfg.ext.item_age = 2;
    cfg.ext.recache_rate = recache_rate;
    cfg.reap = true;                    /* the maintainer's juggle (drain() steps it) */
    char err[256] = "";
    struct engine *e = engine_create(&cfg, err, sizeof(err));
    if (e == NULL) {
        fprintf(stderr, "engine_create: %s\n", err);
        abort();
    }
    engine_clock_set(e, T0);
    return e;
}

/* A value of n bytes that differs per key and position. */
static void fill(char *buf, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)('A' + (i * 7 + seed * 13) % 26);
}

static enum engine_store_result put(struct engine *e, enum engine_store_op op, const char *key,
                                    const char *val, size_t n, int64_t exptime) {
    enum engine_alloc_err err;
    struct item *it = engine_item_alloc(e, key, strlen(key), 5, exptime, (uint32_t)n, &err);
    if (it == NULL)
        return 101;
    struct iovec iov[64];
    int k = engine_item_iov(it, iov, 64);
    size_t at = 0;
    for (int i = 0; i < k; i++) {
        memcpy(iov[i].iov_base, val + at, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    enum engine_store_result r = engine_store(e, it, op, 0, NULL);
    engine_item_unref(e, it);
    return r;
}

/* Whether key reads back as exactly val[0..n) with flags 5. */
static bool reads_back(struct engine *e, const char *key, const char *val, size_t n) {
    struct item *it = engine_get(e, key, strlen(key), NULL);
    if (it == NULL)
        return false;
    bool ok = item_nbytes(it) == n && item_flags(it) == 5;
    struct iovec iov[64];
    int k = engine_item_iov(it, iov, 64);
    size_t at = 0;
    for (int i = 0; i < k && ok; i++) {
        ok = at + iov[i].iov_len <= n && memcmp(iov[i].iov_base, val + at, iov[i].iov_len) == 0;
        at += iov[i].iov_len;
    }
    engine_item_unref(e, it);
    return ok && at == n;
}

/* The flash writer and the maintenance step, as cellard's threads run them, till quiet. */
static void drain(struct engine *e) {
    for (int i = 0, quiet = 0; i < 1000 && quiet < 20; i++) {
        engine_step(e, 1000);
        quiet = engine_ext_step(e, 100) == 0 ? quiet + 1 : 0;
    }
}

static struct engine_stats stats(struct engine *e) {
    struct engine_stats st;
    engine_stats(e, &st);
    return st;
}

TEST(idle_values_move_to_flash_and_read_back_whole) {
    struct engine *e = mk(64 * MiB, 0);
    char v[20000], key[32];
    for (unsigned i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "k%u", i);
        fill(v, sizeof(v), i);
        ASSERT_EQ(put(e, ENGINE_SET, key, v, sizeof(v), 0), ENGINE_STORED);
    }
    put(e, ENGINE_SET, "small", "hi", 2, 0);
    drain(e);
    ASSERT_U64(stats(e).flash.objects_written, 0);      /* not idle yet */
    engine_clock_set(e, T0 + 3);
    drain(e);
    struct engine_stats st = stats(e);
    ASSERT_U64(st.flash.objects_written, 200);           /* the small one stays */
    ASSERT(st.ext_on);
    /* only headers are left in the big classes' place: 201 items, all small */
    ASSERT_U64(st.curr_items, 201);
    ASSERT(st.bytes < 201 * 200);
    for (unsigned i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "k%u", i);
        fill(v, sizeof(v), i);
        ASSERT(reads_back(e, key, v, sizeof(v)));
    }
    ASSERT(reads_back(e, "small", "hi", 2));
    st = stats(e);
    ASSERT_U64(st.get_extstore, 200);
    ASSERT_U64(st.flash.objects_read, 200);
    ASSERT_U64(st.miss_from_extstore, 0);
    engine_destroy(&e);
}

TEST(memcached_refuses_incr_and_append_on_flash_values) {
    struct engine *e = mk(64 * MiB, 0);
    char v[4000];
    fill(v, sizeof(v), 1);
    memcpy(v, "12", 2);
    put(e, ENGINE_SET, "n", v, sizeof(v), 0);
    engine_clock_set(e, T0 + 3);
    drain(e);
    ASSERT_U64(stats(e).flash.objects_written, 1);
    uint64_t out;
    ASSERT_EQ(engine_arith(e, "n", 1, true, 1, &out, NULL), ENGINE_ARITH_NON_NUMERIC);
    ASSERT_EQ(put(e, ENGINE_APPEND, "n", "hi", 2, 0), ENGINE_NOT_STORED);
    ASSERT_EQ(put(e, ENGINE_PREPEND, "n", "hi", 2, 0), ENGINE_NOT_STORED);
    ASSERT(reads_back(e, "n", v, sizeof(v)));
    engine_destroy(&e);
}

TEST(deletes_and_overwrites_release_their_records) {
    struct engine *e = mk(64 * MiB, 0);
    char v[8000], key[32];
    for (unsigned i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "d%u", i);
        fill(v, sizeof(v), i);
        put(e, ENGINE_SET, key, v, sizeof(v), 0);
    }
    engine_clock_set(e, T0 + 3);
    drain(e);
    struct engine_stats before = stats(e);
    ASSERT_U64(before.flash.objects_used, 100);
    for (unsigned i = 0; i < 100; i += 2) {
        snprintf(key, sizeof(key), "d%u", i);
        ASSERT_EQ(engine_delete(e, key, strlen(key), 0), ENGINE_DELETED);
    }
    fill(v, sizeof(v), 999);
    put(e, ENGINE_SET, "d1", v, sizeof(v), 0);              /* replaced in memory */
    struct engine_stats after = stats(e);
    ASSERT_U64(after.flash.objects_used, 49);
    ASSERT(after.flash.bytes_used < before.flash.bytes_used);
    ASSERT(reads_back(e, "d1", v, sizeof(v)));
    ASSERT(engine_get(e, "d0", 2, NULL) == NULL);
    engine_destroy(&e);
}

TEST(recache_brings_a_value_read_twice_back_to_memory) {
    struct engine *e = mk(64 * MiB, 1);                      /* every read recaches */
    char v[6000];
    fill(v, sizeof(v), 3);
    put(e, ENGINE_SET, "r", v, sizeof(v), 0);
    engine_clock_set(e, T0 + 3);
    drain(e);
    ASSERT(reads_back(e, "r", v, sizeof(v)));               /* a first hit: not yet */
    ASSERT_U64(stats(e).recache_from_extstore, 0);
    ASSERT(reads_back(e, "r", v, sizeof(v)));               /* hit twice: back in memory */
    ASSERT(reads_back(e, "r", v, sizeof(v)));
    struct engine_stats st = stats(e);
    ASSERT_U64(st.recache_from_extstore, 1);
    ASSERT_U64(st.get_extstore, 2);                          /* the third read was in memory */
    ASSERT_U64(st.flash.objects_used, 0);
    engine_destroy(&e);
}

TEST(a_torn_record_is_a_miss_never_a_value) {
    struct engine *e = mk(64 * MiB, 0);
    char v[300000];                                          /* past a buffer: on the file */
    fill(v, sizeof(v), 4);
    put(e, ENGINE_SET, "a", v, 200000, 0);
    put(e, ENGINE_SET, "b", v, 200000, 0);
    engine_clock_set(e, T0 + 3);
    drain(e);
    ASSERT_U64(stats(e).flash.objects_written, 2);
    /* Scribble over the whole first page on the file: whichever record was written out reads torn */
    int fd = open(path, O_WRONLY);
    ASSERT(fd >= 0);
    static char junk[MiB];
    memset(junk, 'x', sizeof(junk));
    ASSERT_EQ(pwrite(fd, junk, sizeof(junk), 0), (long)sizeof(junk));
    close(fd);
    bool a = reads_back(e, "a", v, 200000), b = reads_back(e, "b", v, 200000);
    struct engine_stats st = stats(e);
    ASSERT(!a || !b);
    ASSERT_U64(st.badcrc_from_extstore, (uint64_t)(!a + !b));
    ASSERT_U64(st.miss_from_extstore, (uint64_t)(!a + !b));
    if (!a)
        ASSERT(engine_get(e, "a", 1, NULL) == NULL);        /* the header went with it */
    engine_destroy(&e);
}

TEST(a_full_tier_evicts_its_oldest_page) {
    struct engine *e = mk(64 * MiB, 0);
    char v[100000], key[32];
    for (unsigned round = 0; round < 3; round++) {
        for (unsigned i = 0; i < 100; i++) {                 /* ~10 MiB a round into 16 */
            snprintf(key, sizeof(key), "f%u_%u", round, i);
            fill(v, sizeof(v), round * 100 + i);
            put(e, ENGINE_SET, key, v, sizeof(v), 0);
        }
        engine_clock_set(e, T0 + 3 + 3 * round);
        drain(e);
    }
    struct engine_stats st = stats(e);
    ASSERT(st.flash.page_evictions > 0);
    ASSERT(st.flash.objects_evicted > 0);
    /* the newest round reads back whole; the first's lost keys are misses */
    for (unsigned i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "f2_%u", i);
        fill(v, sizeof(v), 200 + i);
        ASSERT(reads_back(e, key, v, sizeof(v)));
    }
    snprintf(key, sizeof(key), "f0_0");
    ASSERT(engine_get(e, key, strlen(key), NULL) == NULL);
    ASSERT(stats(e).miss_from_extstore >= 1);
    engine_destroy(&e);
}

TEST(short_memory_pushes_values_out_instead_of_evicting) {
    struct engine *e = mk(8 * MiB, 0);
    char v[4000], key[32];
    engine_ext_tune(e, &(struct engine_ext_config){.item_size = 512, .item_age = UINT32_MAX,
                                                   .recache_rate = 0, .max_frag = 0.8});
    for (unsigned i = 0; i < 3000; i++) {                    /* ~12 MiB into 8 */
        snprintf(key, sizeof(key), "m%u", i);
        fill(v, sizeof(v), i);
        put(e, ENGINE_SET, key, v, sizeof(v), 0);
        if (i % 100 == 99)
            drain(e);
    }
    drain(e);
    struct engine_stats st = stats(e);
    ASSERT(st.flash.objects_written > 500);
    unsigned back = 0;
    for (unsigned i = 0; i < 3000; i++) {
        snprintf(key, sizeof(key), "m%u", i);
        fill(v, sizeof(v), i);
        back += reads_back(e, key, v, sizeof(v));
    }
    ASSERT(back > 2500);                                     /* flash kept most of what memory could not */
    engine_destroy(&e);
}

TEST(compaction_frees_pages_and_keeps_what_lives) {
    struct engine *e = mk(64 * MiB, 0);
    char v[100000], key[32];
    for (unsigned i = 0; i < 140; i++) {                     /* ~14 of 16 pages */
        snprintf(key, sizeof(key), "c%u", i);
        fill(v, sizeof(v), i);
        put(e, ENGINE_SET, key, v, sizeof(v), 0);
    }
    engine_clock_set(e, T0 + 3);
    drain(e);
    struct engine_stats before = stats(e);
    ASSERT_U64(before.flash.objects_written, 140);
    ASSERT_U64(before.extstore_compact_rescues, 0);         /* a quarter free: 4 pages, 2 left */
    for (unsigned i = 0; i < 140; i++) {
        if (i % 3 == 0)
            continue;
        snprintf(key, sizeof(key), "c%u", i);
        engine_delete(e, key, strlen(key), 0);
    }
    struct engine_ext_config c;
    engine_ext_get(e, &c);
    ASSERT_U64(c.compact_under, 4);                          /* memcached's default: a quarter */
    c.compact_under = 16;
    c.max_frag = 0.9;
    engine_ext_tune(e, &c);
    drain(e);
    struct engine_stats after = stats(e);
    ASSERT(after.extstore_compact_rescues > 0);
    ASSERT_U64(after.extstore_compact_lost, 0);
    ASSERT(after.flash.pages_free > before.flash.pages_free + 4);
    for (unsigned i = 0; i < 140; i += 3) {
        snprintf(key, sizeof(key), "c%u", i);
        fill(v, sizeof(v), i);
        ASSERT(reads_back(e, key, v, sizeof(v)));
    }
    ASSERT_U64(stats(e).miss_from_extstore, 0);
    engine_destroy(&e);
}

TEST(drop_unread_compaction_lets_cold_values_go) {
    struct engine *e = mk(64 * MiB, 0);
    char v[100000], key[32];
    for (unsigned i = 0; i < 150; i++) {
        snprintf(key, sizeof(key), "u%u", i);
        fill(v, sizeof(v), i);
        put(e, ENGINE_SET, key, v, sizeof(v), 0);
    }
    engine_clock_set(e, T0 + 3);
    drain(e);
    struct engine_ext_config c;
    engine_ext_get(e, &c);
    c.drop_unread = true;
    c.max_frag = 0;                                          /* no page by fragmentation */
    c.compact_under = 4;
    c.drop_under = 3;
    engine_ext_tune(e, &c);
    drain(e);
    struct engine_stats st = stats(e);
    ASSERT(st.extstore_compact_skipped > 0);
    ASSERT(st.flash.pages_free > 0);
    engine_destroy(&e);
}

TEST(value_classes_give_pages_back_for_headers_once_calm) {
    struct engine *e = mk(16 * MiB, 0);
    char v[4000], key[32];
    /* a burst with no writer: memory fills with values and evicts */
    for (unsigned i = 0; i < 6000; i++) {
        snprintf(key, sizeof(key), "p%u", i);
        fill(v, sizeof(v), i);
        put(e, ENGINE_SET, key, v, sizeof(v), 0);
    }
    engine_clock_set(e, T0 + 3);                             /* the writer moves them all */
    drain(e);
    struct engine_stats before = stats(e);
    ASSERT(before.evictions > 0);
    ASSERT(before.flash.objects_used > 1000);
    ASSERT_U64(before.slabs_moved, 0);                       /* evicting lately: keeps its pages */
    /* two seconds without evictions: the value class gives pages back, one a step */
    engine_clock_set(e, T0 + 6);
    drain(e);
    struct engine_stats after = stats(e);
    ASSERT(after.slabs_moved > 0);
    ASSERT_U64(after.evictions, before.evictions);
    /* what was on flash still reads back, and nothing went */
    unsigned back = 0;
    for (unsigned i = 0; i < 6000; i++) {
        snprintf(key, sizeof(key), "p%u", i);
        fill(v, sizeof(v), i);
        back += reads_back(e, key, v, sizeof(v));
    }
    ASSERT_U64(back, before.flash.objects_used);
    engine_destroy(&e);
}

TEST(the_segment_store_takes_no_flash_tier) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.seg = true;
    cfg.policy = "fifo";
    snprintf(path, sizeof(path), "/tmp/cellar-ext-seg-%d", (int)getpid());
    cfg.ext.store.files[0] = (struct flash_file){path, 16 * MiB};
    cfg.ext.store.nfiles = 1;
    char err[256] = "";
    struct engine *e = engine_create(&cfg, err, sizeof(err));
    ASSERT(e == NULL);
    ASSERT(strstr(err, "ext_path") != NULL);
    unlink(path);
}

int main(void) {
    int r = RUN_TESTS();
    if (dir[0] != 0) {
        snprintf(path, sizeof(path), "%s/flash", dir);
        unlink(path);
        rmdir(dir);
    }
    return r;
}
