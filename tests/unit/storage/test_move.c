/*
 * test_move.c -- the slab page mover (item_move.c) on the engine: the
 * answers of `slabs reassign`, rescues into free chunks, evictions when
 * there are none, items a reader holds, chained items, the global page
 * pool, a lowered limit, and the automover's age rule (3).  Time is driven
 * by hand and the mover by engine_step(); nothing sleeps.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "storage/engine.h"

#define T0 1700000000u
#define MiB (1024u * 1024u)

static struct engine *mk(size_t mem, uint32_t chunk_max) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.mem_limit = mem;
    if (chunk_max)
        cfg.slab_chunk_max = chunk_max;
    char err[256] = "";
    struct engine *e = engine_create(&cfg, err, sizeof(err));
    if (e == NULL) {
        fprintf(stderr, "engine_create: %s\n", err);
        abort();
    }
    engine_clock_set(e, T0);
    return e;
}

/* The value of key k: its bytes depend on the key, so a mixed-up copy shows. */
static char val_byte(unsigned k, size_t i) { return (char)('a' + (k * 7 + i) % 26); }

static bool put(struct engine *e, unsigned k, size_t n) {
    char key[32];
    snprintf(key, sizeof(key), "key%u", k);
    enum engine_alloc_err err;
    struct item *it = engine_item_alloc(e, key, strlen(key), k, 0, (uint32_t)n, &err);
    if (it == NULL)
        return false;
    struct iovec iov[64];
    int m = engine_item_iov(it, iov, 64);
    size_t at = 0;
    for (int i = 0; i < m; i++)
        for (size_t j = 0; j < iov[i].iov_len; j++)
            ((char *)iov[i].iov_base)[j] = val_byte(k, at++);
    enum engine_store_result r = engine_store(e, it, ENGINE_SET, 0, NULL);
    engine_item_unref(e, it);
    return r == ENGINE_STORED;
}

static struct item *get(struct engine *e, unsigned k) {
    char key[32];
    snprintf(key, sizeof(key), "key%u", k);
    return engine_get(e, key, strlen(key), NULL);
}

/* 1: present and intact, 0: absent, -1: present with wrong bytes. */
static int check(struct engine *e, unsigned k, size_t n) {
    struct item *it = get(e, k);
    if (it == NULL)
        return 0;
    int ok = item_nbytes(it) == n && item_flags(it) == k;
    struct iovec iov[64];
    int m = engine_item_iov(it, iov, 64);
    size_t at = 0;
    for (int i = 0; i < m && ok; i++)
        for (size_t j = 0; j < iov[i].iov_len && ok; j++)
            ok = ((char *)iov[i].iov_base)[j] == val_byte(k, at++);
    ok = ok && at == n;
    engine_item_unref(e, it);
    return ok ? 1 : -1;
}

static uint64_t pages(struct engine *e, unsigned id) {
    struct engine_class_stats cs;
    engine_class_stats(e, id, &cs);
    return cs.total_pages;
}

static struct engine_stats st(struct engine *e) {
    struct engine_stats s;
    engine_stats(e, &s);
    return s;
}

/* Steps until no move is asked or under way (bounded). */
static void settle(struct engine *e) {
    for (int i = 0; i < 10000; i++) {
        engine_step(e, 1000);
        struct engine_stats s = st(e);
        if (!s.slab_reassign_running &&
            engine_slabs_reassign(e, 1, 1) != ENGINE_REASSIGN_RUNNING)
            return;
    }
}

#define VAL 5000

TEST(reassign_answers) {
    struct engine *e = mk(64 * MiB, 0);
    unsigned id = engine_class_for(e, 56 + 8 + VAL), other = id - 3;
    ASSERT_EQ(engine_slabs_reassign(e, id, id), ENGINE_REASSIGN_SAME);
    ASSERT_EQ(engine_slabs_reassign(e, 1, 99), ENGINE_REASSIGN_BADCLASS);
    ASSERT_EQ(engine_slabs_reassign(e, -2, 1), ENGINE_REASSIGN_BADCLASS);
    ASSERT_EQ(engine_slabs_reassign(e, -1, 1), ENGINE_REASSIGN_BADCLASS); /* none spare */
    ASSERT_EQ(engine_slabs_reassign(e, id, other), ENGINE_REASSIGN_NOSPARE);
    ASSERT_EQ(engine_slabs_reassign(e, 0, other), ENGINE_REASSIGN_NOSPARE);
    for (unsigned k = 0; k < 600; k++)
        ASSERT(put(e, k, VAL));
    ASSERT(pages(e, id) >= 2);
    ASSERT_EQ(engine_slabs_reassign(e, id, other), ENGINE_REASSIGN_OK);
    ASSERT_EQ(engine_slabs_reassign(e, id, other), ENGINE_REASSIGN_RUNNING);
    settle(e);
    ASSERT_EQ(st(e).slabs_moved, 1);
    engine_destroy(&e);
}

/*
 * Half the items deleted: the moved page's live items fit in free chunks
 * of their class, so each is rescued, and every item left is intact.
 */
TEST(rescues_into_free_chunks) {
    struct engine *e = mk(64 * MiB, 0);
    unsigned n = 1000, id = engine_class_for(e, 56 + 8 + VAL), dst = 5;
    for (unsigned k = 0; k < n; k++)
        ASSERT(put(e, k, VAL));
    for (unsigned k = 0; k < n; k += 2) {
        char key[32];
        snprintf(key, sizeof(key), "key%u", k);
        ASSERT_EQ(engine_delete(e, key, strlen(key), 0), ENGINE_DELETED);
    }
    uint64_t src_pages = pages(e, id), dst_pages = pages(e, dst);
    uint64_t malloced = st(e).total_malloced;
    ASSERT_EQ(engine_slabs_reassign(e, id, dst), ENGINE_REASSIGN_OK);
    settle(e);
    struct engine_stats s = st(e);
    ASSERT_EQ(s.slabs_moved, 1);
    ASSERT(s.slab_reassign_rescues > 0);
    ASSERT_EQ(s.slab_reassign_evictions_nomem, 0);
    ASSERT_EQ(pages(e, id), src_pages - 1);
    ASSERT_EQ(pages(e, dst), dst_pages + 1);
    ASSERT_U64(s.total_malloced, malloced);
    ASSERT_EQ(s.curr_items, n / 2);
    for (unsigned k = 1; k < n; k += 2)
        ASSERT_EQ(check(e, k, VAL), 1);
    /* the new page serves its class */
    for (unsigned k = n; k < n + 20; k++)
        ASSERT(put(e, k, 100));
    engine_destroy(&e);
}

/* A full class: nothing fits elsewhere, so the page's items are evicted. */
TEST(evicts_without_free_chunks) {
    struct engine *e = mk(4 * MiB, 0);
    unsigned n = 2000, id = engine_class_for(e, 56 + 8 + VAL);
    for (unsigned k = 0; k < n; k++)
        ASSERT(put(e, k, VAL));
    struct engine_stats before = st(e);
    ASSERT(before.evictions > 0);
    ASSERT_EQ(engine_slabs_reassign(e, id, 0), ENGINE_REASSIGN_OK);
    settle(e);
    struct engine_stats s = st(e);
    ASSERT_EQ(s.slabs_moved, 1);
    ASSERT(s.slab_reassign_evictions_nomem > 0);
    ASSERT_EQ(s.slab_global_page_pool, 1);
    ASSERT_U64(s.curr_items, before.curr_items - s.slab_reassign_evictions_nomem);
    unsigned present = 0;
    for (unsigned k = 0; k < n; k++) {
        int c = check(e, k, VAL);
        ASSERT(c >= 0);
        present += (unsigned)c;
    }
    ASSERT_U64(present, s.curr_items);
    engine_destroy(&e);
}

/* An item a reader holds is waited for: the move ends after it lets go. */
TEST(waits_for_held_item) {
    struct engine *e = mk(64 * MiB, 0);
    unsigned n = 600, id = engine_class_for(e, 56 + 8 + VAL);
    for (unsigned k = 0; k < n; k++)
        ASSERT(put(e, k, VAL));
    for (unsigned k = 100; k < n; k += 2) {
        char key[32];
        snprintf(key, sizeof(key), "key%u", k);
        ASSERT_EQ(engine_delete(e, key, strlen(key), 0), ENGINE_DELETED);
    }
    struct item *held = get(e, 0);          /* in the oldest page */
    ASSERT(held != NULL);
    ASSERT_EQ(engine_slabs_reassign(e, id, 0), ENGINE_REASSIGN_OK);
    for (int i = 0; i < 200; i++)
        engine_step(e, 1000);
    struct engine_stats s = st(e);
    ASSERT_EQ(s.slabs_moved, 0);
    ASSERT(s.slab_reassign_running);
    ASSERT(s.slab_reassign_busy_items > 0);
    ASSERT_EQ(s.slab_reassign_busy_deletes, 0);
    engine_item_unref(e, held);
    settle(e);
    s = st(e);
    ASSERT_EQ(s.slabs_moved, 1);
    ASSERT_EQ(s.slab_global_page_pool, 1);
    ASSERT_EQ(check(e, 0, VAL), 1);
    engine_destroy(&e);
}

/* A reader that keeps holding past two seconds: the item is unlinked, its bytes stay. */
TEST(busy_delete_after_two_seconds) {
    struct engine *e = mk(64 * MiB, 0);
    unsigned id = engine_class_for(e, 56 + 8 + VAL);
    for (unsigned k = 0; k < 600; k++)
        ASSERT(put(e, k, VAL));
    struct item *held = get(e, 0);
    ASSERT_EQ(engine_slabs_reassign(e, id, 0), ENGINE_REASSIGN_OK);
    engine_step(e, 100000);
    engine_clock_set(e, T0 + 3);
    settle(e);
    struct engine_stats s = st(e);
    ASSERT_EQ(s.slab_reassign_busy_deletes, 1);
    ASSERT_EQ(s.slabs_moved, 0);            /* the held chunk is not free yet */
    ASSERT_EQ(check(e, 0, VAL), 0);
    ASSERT_EQ(item_nbytes(held), VAL);
    engine_item_unref(e, held);
    settle(e);
    ASSERT_EQ(st(e).slabs_moved, 1);
    engine_destroy(&e);
}

/* Chained items (larger than the largest chunk): their chunks are rescued one by one. */
TEST(chained_items) {
    struct engine *e = mk(16 * MiB, 4096);
    unsigned n = 1200, top = engine_nclasses(e);
    size_t big = 11000;
    for (unsigned k = 0; k < n; k++)
        ASSERT(put(e, k, big));
    for (unsigned k = 0; k < n; k += 2) {
        char key[32];
        snprintf(key, sizeof(key), "key%u", k);
        engine_delete(e, key, strlen(key), 0);
    }
    for (int m = 0; m < 3; m++) {
        ASSERT_EQ(engine_slabs_reassign(e, top, 0), ENGINE_REASSIGN_OK);
        settle(e);
    }
    struct engine_stats s = st(e);
    ASSERT_EQ(s.slabs_moved, 3);
    ASSERT(s.slab_reassign_chunk_rescues > 0);
    ASSERT_EQ(s.slab_global_page_pool, 3);
    unsigned present = 0;
    for (unsigned k = 0; k < n; k++) {
        int c = check(e, k, big);
        ASSERT(c >= 0);
        present += (unsigned)c;
    }
    ASSERT_U64(present, s.curr_items);
    engine_destroy(&e);
}

/* Pool pages serve any class before it evicts; a lower limit frees them. */
TEST(pool_then_lower_limit) {
    struct engine *e = mk(8 * MiB, 0);
    unsigned id = engine_class_for(e, 56 + 8 + VAL), small = engine_class_for(e, 56 + 8 + 100);
    for (unsigned k = 0; k < 3000; k++)
        ASSERT(put(e, k, VAL));
    uint64_t full = st(e).total_malloced;
    for (unsigned k = 0; k < 3000; k++) {
        char key[32];
        snprintf(key, sizeof(key), "key%u", k);
        engine_delete(e, key, strlen(key), 0);
    }
    for (int m = 0; m < 3; m++) {
        ASSERT_EQ(engine_slabs_reassign(e, id, 0), ENGINE_REASSIGN_OK);
        settle(e);
    }
    ASSERT_EQ(st(e).slab_global_page_pool, 3);
    uint64_t evictions = st(e).evictions;
    ASSERT(put(e, 5000, 100));              /* a new class takes a pool page */
    struct engine_stats s = st(e);
    ASSERT_EQ(s.slab_global_page_pool, 2);
    ASSERT_EQ(pages(e, small), 1);
    ASSERT_U64(s.total_malloced, full);
    ASSERT_U64(s.evictions, evictions);
    engine_set_mem_limit(e, full - 2 * MiB);
    s = st(e);
    ASSERT_EQ(s.slab_global_page_pool, 0);
    ASSERT_U64(s.total_malloced, full - 2 * MiB);
    engine_destroy(&e);
}

/*
 * automove 3: a class that evicts with items much younger than the
 * others' gets pages from the class whose oldest item is oldest.
 */
TEST(automove_age_rule) {
    struct engine *e = mk(8 * MiB, 0);
    unsigned old_cls = engine_class_for(e, 56 + 8 + VAL);
    unsigned young_cls = engine_class_for(e, 56 + 8 + 300);
    for (unsigned k = 0; k < 1400; k++)
        ASSERT(put(e, k, VAL));             /* fills memory with old items */
    engine_clock_set(e, T0 + 100);
    for (unsigned k = 10000; k < 30000; k++)
        ASSERT(put(e, k, 300));             /* a page, then evictions in it */
    ASSERT(st(e).evictions > 0);
    uint64_t young_pages = pages(e, young_cls), old_pages = pages(e, old_cls);
    engine_automove_set(e, 3, 0.8, 30);
    for (unsigned t = 1; t <= 5; t++) {
        for (unsigned k = 30000 + t * 1000; k < 31000 + t * 1000; k++)
            ASSERT(put(e, k, 300));
        engine_clock_set(e, T0 + 100 + t);
        settle(e);
    }
    ASSERT(st(e).slabs_moved > 0);
    ASSERT(pages(e, young_cls) > young_pages);
    ASSERT(pages(e, old_cls) < old_pages);
    engine_destroy(&e);
}

/*
 * Workers set and get items whose sizes shift between classes while the
 * main thread moves pages (reassign from any class, automove 2) and steps:
 * every hit must be intact, whatever was moved or evicted under it.
 */
#define MT_WORKERS 3
#define MT_OPS 60000

struct mt {
    struct engine *e;
    int id;
    _Atomic int *bad, *done;
};

static void *mt_worker(void *arg) {
    struct mt *w = arg;
    unsigned seed = (unsigned)w->id * 7919u + 1;
    for (unsigned i = 0; i < MT_OPS; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned k = (unsigned)w->id * 100000u + (seed >> 8) % 6000;
        size_t n = i < MT_OPS / 2 ? 200 + (seed >> 20) % 200 : 3000 + (seed >> 20) % 3000;
        if ((seed >> 4) % 3 == 0) {
            put(w->e, k, n);
        } else {
            struct item *it = get(w->e, k);
            if (it == NULL)
                continue;
            struct iovec iov[64];
            int m = engine_item_iov(it, iov, 64);
            size_t at = 0;
            bool ok = item_flags(it) == k;
            for (int j = 0; j < m; j++)
                for (size_t b = 0; b < iov[j].iov_len; b++)
                    ok = ok && ((char *)iov[j].iov_base)[b] == val_byte(k, at++);
            if (!ok || at != item_nbytes(it))
                atomic_fetch_add(w->bad, 1);
            engine_item_unref(w->e, it);
        }
    }
    atomic_fetch_add(w->done, 1);
    return NULL;
}

TEST(moves_under_concurrent_load) {
    struct engine *e = mk(12 * MiB, 0);
    engine_automove_set(e, 2, 0.8, 30);
    _Atomic int bad = 0, done = 0;
    pthread_t t[MT_WORKERS];
    struct mt w[MT_WORKERS];
    for (int i = 0; i < MT_WORKERS; i++) {
        w[i] = (struct mt){e, i, &bad, &done};
        pthread_create(&t[i], NULL, mt_worker, &w[i]);
    }
    for (unsigned i = 0; atomic_load(&done) < MT_WORKERS; i++) {
        if (i % 50 == 0)
            engine_slabs_reassign(e, -1, (int32_t)(1 + i / 50 % engine_nclasses(e)));
        if (i % 300 == 0)
            engine_clock_set(e, T0 + i / 300);
        engine_step(e, 1000);
    }
    for (int i = 0; i < MT_WORKERS; i++)
        pthread_join(t[i], NULL);
    settle(e);
    ASSERT_EQ(atomic_load(&bad), 0);
    ASSERT(st(e).slabs_moved > 0);
    engine_destroy(&e);
}


/*
 * Transient items (in their class's wheel) rescued after `lru temp_ttl`
 * was turned off: the copy is linked where its TTL now puts it (the
 * policy's queue) and is not marked transient, so deleting it later takes
 * it off the queue it is in, and the wheel's count comes back to 0.
 */
TEST(rescued_transient_items_leave_the_wheel) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.mem_limit = 64 * MiB;
    cfg.temp_ttl = 61;
    char err[256] = "";
    struct engine *e = engine_create(&cfg, err, sizeof(err));
    ASSERT(e != NULL);
    engine_clock_set(e, T0);
    unsigned n = 1000, id = engine_class_for(e, 56 + 8 + VAL), dst = 5;
    for (unsigned k = 0; k < n; k++) {
        char key[32];
        snprintf(key, sizeof(key), "key%u", k);
        enum engine_alloc_err ae;
        struct item *it = engine_item_alloc(e, key, strlen(key), k, 30, VAL, &ae);
        ASSERT(it != NULL);
        ASSERT_EQ(engine_store(e, it, ENGINE_SET, 0, NULL), ENGINE_STORED);
        engine_item_unref(e, it);
    }
    struct engine_class_stats cs;
    engine_class_stats(e, id, &cs);
    ASSERT_U64(cs.seg.number[EVICT_TEMP], n);
    for (unsigned k = 0; k < n; k += 2) {
        char key[32];
        snprintf(key, sizeof(key), "key%u", k);
        ASSERT_EQ(engine_delete(e, key, strlen(key), 0), ENGINE_DELETED);
    }
    engine_lru_temp(e, -1);
    ASSERT_EQ(engine_slabs_reassign(e, id, dst), ENGINE_REASSIGN_OK);
    settle(e);
    ASSERT(st(e).slab_reassign_rescues > 0);
    for (unsigned k = 1; k < n; k += 2) {
        char key[32];
        snprintf(key, sizeof(key), "key%u", k);
        ASSERT_EQ(engine_delete(e, key, strlen(key), 0), ENGINE_DELETED);
    }
    engine_class_stats(e, id, &cs);
    ASSERT_U64(cs.seg.number[EVICT_TEMP], 0);
    ASSERT_U64(st(e).curr_items, 0);
    for (unsigned k = 0; k < 100; k++)      /* the class still works */
        ASSERT(put(e, k, VAL));
    engine_destroy(&e);
}

int main(void) { return RUN_TESTS(); }
