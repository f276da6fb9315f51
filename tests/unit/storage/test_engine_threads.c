/*
 * test_engine_threads.c -- the engine under concurrent use.
 *
 * Four workers do set/get/delete/incr while a fifth thread calls
 * engine_step() in a loop, so the hash table doubles several times under
 * the workers' feet; the workers also prefetch the keys they will use next
 * (engine_prefetch() reads the tables without locks: under ASan a read of
 * a freed table shows here).  Each worker owns its key range, so what it must find
 * is known exactly; a shared counter checks that incr is atomic.  Runs are
 * bounded by operation counts; threads synchronise only through joins and
 * one atomic flag.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "storage/engine.h"

#ifdef ENGINE_SEG
#define ENGINE_SEG_ON 1
#else
#define ENGINE_SEG_ON 0
#endif
#define T0 1700000000u
#define WORKERS 4
#define KEYS 20000
#define INCRS 2000

struct run {
    struct engine *e;
    _Atomic bool done;
    _Atomic unsigned steps;
    bool check;                     /* false under memory pressure: misses allowed */
};

struct worker {
    struct run *run;
    int id;
    int errors;
};

static bool put(struct engine *e, const char *key, const char *val) {
    struct item *it = engine_item_alloc(e, key, strlen(key), 0, 0, (uint32_t)strlen(val), NULL);
    if (it == NULL)
        return false;
    struct iovec iov;
    engine_item_iov(it, &iov, 1);
    memcpy(iov.iov_base, val, strlen(val));
    bool ok = engine_store(e, it, ENGINE_SET, 0, NULL) == ENGINE_STORED;
    engine_item_unref(e, it);
    return ok;
}

struct expect {
    const char *val;
    bool ok;
};

static void compare(void *arg, const struct engine_hit *h) {
    struct expect *x = arg;
    x->ok = h->nbytes == strlen(x->val) && memcmp(h->value, x->val, h->nbytes) == 0;
}

/* True when key holds exactly val (every other time asked with a copying get). */
static bool holds(struct engine *e, const char *key, const char *val) {
    static _Thread_local unsigned turn;
    if (turn++ & 1) {
        struct expect x = {val, false};
        bool copied;
        struct item *it = engine_get_copy(e, key, strlen(key), engine_key_hash(key, strlen(key)),
                                          64, compare, &x, &copied, NULL);
        engine_item_unref(e, it);   /* (values are short: a hit is always copied) */
        return it == NULL && copied && x.ok;
    }
    struct item *it = engine_get(e, key, strlen(key), NULL);
    if (it == NULL)
        return false;
    struct iovec iov;
    engine_item_iov(it, &iov, 1);
    bool ok = iov.iov_len == strlen(val) && memcmp(iov.iov_base, val, iov.iov_len) == 0;
    engine_item_unref(e, it);
    return ok;
}

static bool deleted(int i) { return i % 5 == 3; }

static void *work(void *arg) {
    struct worker *w = arg;
    struct engine *e = w->run->e;
    bool check = w->run->check;
    char key[48], val[48];
    for (int i = 0; i < KEYS; i++) {
        if (i % 8 == 0) {
            uint64_t hv[16];
            for (int k = 0; k < 16; k++) {
                int n = snprintf(key, sizeof(key), "w%d:%d", (w->id + k) % WORKERS, i + k);
                hv[k] = engine_key_hash(key, (size_t)n);
            }
            engine_prefetch(e, hv, 16, 0xaaaa);     /* half of them as stores */
        }
        snprintf(key, sizeof(key), "w%d:%d", w->id, i);
        snprintf(val, sizeof(val), "value-%d-%d", w->id, i);
        if (!put(e, key, val) && check)
            w->errors++;
        if (!holds(e, key, val) && check)
            w->errors++;
        if (deleted(i) && engine_delete(e, key, strlen(key), 0) != ENGINE_DELETED && check)
            w->errors++;
        /* read somebody else's keys too, and the shared counter */
        snprintf(key, sizeof(key), "w%d:%d", (w->id + 1) % WORKERS, i / 2);
        struct item *it = engine_get(e, key, strlen(key), NULL);
        engine_item_unref(e, it);
        struct expect x = {val, false};
        bool copied;
        it = engine_get_copy(e, key, strlen(key), engine_key_hash(key, strlen(key)), 64, compare,
                             &x, &copied, NULL);
        engine_item_unref(e, it);
        if (i < INCRS) {
            uint64_t v;
            if (engine_arith(e, "counter", 7, true, 1, &v, NULL) != ENGINE_ARITH_OK && check)
                w->errors++;
        }
    }
    if (check) {
        for (int i = 0; i < KEYS; i++) {
            if (i % 16 == 0) {      /* read ahead while others still insert: none said absent */
                uint64_t hv[16];
                for (int k = 0; k < 16; k++) {
                    int n = snprintf(key, sizeof(key), "w%d:%d", w->id, i + k);
                    hv[k] = engine_key_hash(key, (size_t)n);
                }
                engine_prefetch(e, hv, 16, 0);
            }
            snprintf(key, sizeof(key), "w%d:%d", w->id, i);
            snprintf(val, sizeof(val), "value-%d-%d", w->id, i);
            if (holds(e, key, val) == deleted(i))
                w->errors++;
        }
    }
    return NULL;
}

static void *step(void *arg) {
    struct run *r = arg;
    while (!atomic_load(&r->done)) {
        engine_step(r->e, 1 + atomic_load(&r->steps) % 8);
        atomic_fetch_add(&r->steps, 1);
    }
    return NULL;
}

static int run_workers(struct run *r) {
    pthread_t t[WORKERS], s;
    struct worker w[WORKERS];
    pthread_create(&s, NULL, step, r);
    for (int i = 0; i < WORKERS; i++) {
        w[i] = (struct worker){r, i, 0};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    int errors = 0;
    for (int i = 0; i < WORKERS; i++) {
        pthread_join(t[i], NULL);
        errors += w[i].errors;
    }
    atomic_store(&r->done, true);
    pthread_join(s, NULL);
    return errors;
}

static struct engine *mk(size_t limit, unsigned hashpower) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.mem_limit = limit;
    cfg.hashpower_init = hashpower;
    cfg.lock_power = 4;
#ifdef ENGINE_SEG   /* test_engine_threads_seg.c: 64 KiB segments, a quarter of the memory */
    cfg.seg = true;
#if defined(ENGINE_SEG_MERGE)
    cfg.policy = "merge";
#elif defined(ENGINE_SEG_S3FIFO)
    cfg.policy = "s3fifo";
#else
    cfg.policy = "fifo";
#endif
    cfg.page_size = cfg.item_size_max = 64 * 1024;
    cfg.slab_chunk_max = 32 * 1024;
    if (limit < (64u << 20))
        cfg.mem_limit = limit / 4;
#endif
    struct engine *e = engine_create(&cfg, NULL, 0);
    engine_clock_set(e, T0);
    return e;
}

TEST(growth_under_concurrent_access) {
    struct run r = {.e = mk(64u << 20, 6), .check = true};
    ASSERT(put(r.e, "counter", "0"));
    ASSERT_EQ(run_workers(&r), 0);
    uint64_t v = 0;
    ASSERT_EQ(engine_arith(r.e, "counter", 7, true, 0, &v, NULL), ENGINE_ARITH_OK);
    ASSERT_U64(v, WORKERS * INCRS);
    /* finish any growth still under way, then every key must be there */
    while (engine_step(r.e, 1000) != 0)
        ;
    struct engine_stats s;
    engine_stats(r.e, &s);
#ifndef ENGINE_SEG
    ASSERT(s.hash_power_level > 6);
#endif
    ASSERT_EQ(s.evictions, 0);
    ASSERT_EQ(s.curr_items, 1 + WORKERS * (KEYS - KEYS / 5));
    engine_destroy(&r.e);
}

/* With little memory, evictions race with everything else. */
TEST(evictions_under_concurrent_access) {
    struct run r = {.e = mk(4u << 20, 6), .check = false};
    ASSERT(put(r.e, "counter", "0"));
    ASSERT_EQ(run_workers(&r), 0);
    struct engine_stats s;
    engine_stats(r.e, &s);
    ASSERT(s.evictions > 0);
    ASSERT(s.total_malloced <= (4u << 20) + (uint64_t)s.active_slabs * (1u << 20));
    uint64_t number = 0, bytes = 0;
    for (unsigned i = 1; i <= engine_nclasses(r.e); i++) {
        struct engine_class_stats c;
        engine_class_stats(r.e, i, &c);
        number += c.number;
        bytes += c.mem_requested;
        if (!ENGINE_SEG_ON && c.used_chunks != c.number)  /* no chunk leaked or double freed */
            TH_FAIL("class %u: %llu chunks used for %llu items", i,
                    (unsigned long long)c.used_chunks, (unsigned long long)c.number);
    }
    ASSERT_EQ(number, s.curr_items);
    ASSERT_EQ(bytes, s.bytes);
    engine_destroy(&r.e);
}

int main(void) { return RUN_TESTS(); }
