/*
 * test_engine_temp.c -- transient items (engine_lru_temp(): memcached's
 * TEMP LRU, kept in a wheel of per-second lists), the crawler's requested
 * passes (engine_crawl_request(): `lru_crawler crawl`), the flat LRU's
 * tail pull on allocation (engine_lru_flat()) and the maintainer's juggle.
 *
 * Time is driven by hand through engine_clock_set(); nothing here sleeps.
 * Background work is engine_step(), called as the maintenance thread
 * would call it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "storage/engine.h"

#define T0 1700000000u
#define MiB (1024u * 1024u)

static struct engine *mk_cfg(const struct engine_config *cfg) {
    char err[256] = "";
    struct engine *e = engine_create(cfg, err, sizeof(err));
    if (e == NULL) {
        fprintf(stderr, "engine_create: %s\n", err);
        abort();
    }
    engine_clock_set(e, T0);
    return e;
}

/* memcached's defaults for cellard with -o temporary_ttl=ttl (ttl < 0: off). */
static struct engine *mk_temp(int32_t ttl) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.temp_ttl = ttl;
    cfg.crawl = false;                  /* the wheel alone reclaims */
    cfg.reap = true;
    return mk_cfg(&cfg);
}

/* Stores key with an n-byte value and TTL ttl; returns the result. */
static enum engine_store_result set_n(struct engine *e, const char *key, size_t n,
                                      int64_t ttl) {
    enum engine_alloc_err err;
    struct item *it = engine_item_alloc(e, key, strlen(key), 0, ttl, (uint32_t)n, &err);
    if (it == NULL)
        return 100 + err;
    struct iovec iov[64];
    int k = engine_item_iov(it, iov, 64);
    for (int i = 0; i < k; i++)
        memset(iov[i].iov_base, 'v', iov[i].iov_len);
    enum engine_store_result r = engine_store(e, it, ENGINE_SET, 0, NULL);
    engine_item_unref(e, it);
    return r;
}

static enum engine_store_result set(struct engine *e, const char *key, int64_t ttl) {
    return set_n(e, key, 1, ttl);
}

static bool has(struct engine *e, const char *key) {
    struct item *it = engine_get(e, key, strlen(key), NULL);
    engine_item_unref(e, it);
    return it != NULL;
}

/* The segment a stored key is in (enum evict_lru), as a hit counts it. */
static unsigned lru_of(struct engine *e, const char *key) {
    struct item *it = engine_get(e, key, strlen(key), NULL);
    unsigned l = it != NULL ? engine_item_lru(e, it) : 99;
    engine_item_unref(e, it);
    return l;
}

static struct engine_class_stats cls(struct engine *e, unsigned id) {
    struct engine_class_stats c;
    engine_class_stats(e, id, &c);
    return c;
}

static struct engine_stats stats(struct engine *e) {
    struct engine_stats s;
    engine_stats(e, &s);
    return s;
}

static void at(struct engine *e, uint32_t sec) { engine_clock_set(e, T0 + sec); }

static void step_all(struct engine *e) {
    for (int i = 0; i < 1000 && engine_step(e, 1000) != 0; i++)
        ;
}

/* 1-byte values with short keys all land in class 1. */
#define C1 1

TEST(short_ttl_items_live_apart_and_go_in_their_second) {
    struct engine *e = mk_temp(61);
    ASSERT_EQ(set(e, "t5", 5), ENGINE_STORED);
    ASSERT_EQ(set(e, "t10", 10), ENGINE_STORED);
    ASSERT_EQ(set(e, "t61", 61), ENGINE_STORED);     /* at most temp_ttl: transient */
    ASSERT_EQ(set(e, "l62", 62), ENGINE_STORED);     /* longer: the policy's */
    ASSERT_EQ(set(e, "n", 0), ENGINE_STORED);        /* never expires: the policy's */
    struct engine_class_stats c = cls(e, C1);
    ASSERT_EQ(c.number, 5);
    ASSERT_EQ(c.seg.number[EVICT_TEMP], 3);
    ASSERT_EQ(c.seg.number[EVICT_HOT], 2);
    ASSERT_EQ(lru_of(e, "t10"), EVICT_TEMP);         /* hits_to_temp */
    ASSERT_EQ(lru_of(e, "n"), EVICT_HOT);
    at(e, 4);
    step_all(e);
    ASSERT_EQ(cls(e, C1).seg.number[EVICT_TEMP], 3);
    at(e, 5);                                        /* t5's second */
    step_all(e);
    c = cls(e, C1);
    ASSERT_EQ(c.seg.number[EVICT_TEMP], 2);
    ASSERT_EQ(c.reclaimed, 1);
    ASSERT_EQ(c.expired_unfetched, 1);
    ASSERT(!has(e, "t5"));
    at(e, 10);
    step_all(e);
    c = cls(e, C1);
    ASSERT_EQ(c.seg.number[EVICT_TEMP], 1);
    ASSERT_EQ(c.reclaimed, 2);
    ASSERT_EQ(c.expired_unfetched, 1);               /* t10 was read */
    at(e, 200);                                      /* seconds skipped: caught up */
    step_all(e);
    c = cls(e, C1);
    ASSERT_EQ(c.seg.number[EVICT_TEMP], 0);
    ASSERT_EQ(c.number, 1);                          /* l62 reaped, n stays */
    ASSERT(has(e, "n"));
    ASSERT_EQ(stats(e).crawler_reclaimed, 0);
    engine_destroy(&e);
}

TEST(reclaim_is_bounded_per_step) {
    struct engine *e = mk_temp(61);
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        ASSERT_EQ(set(e, key, 3), ENGINE_STORED);
    }
    at(e, 3);
    unsigned steps = 0;
    while (engine_step(e, 100) != 0) {
        ASSERT(cls(e, C1).seg.number[EVICT_TEMP] < 1000);
        steps++;
    }
    ASSERT(steps >= 10);
    ASSERT_EQ(cls(e, C1).seg.number[EVICT_TEMP], 0);
    ASSERT_EQ(cls(e, C1).reclaimed, 1000);
    ASSERT_EQ(stats(e).curr_items, 0);
    engine_destroy(&e);
}

/*
 * A step that fills its batch of dead items (64, ENGINE_TEMP_BATCH) with
 * the last items of one second must not pass over the next second unseen:
 * its items go in the next step, not a turn of the wheel (1,024 s) later.
 */
TEST(a_full_batch_does_not_skip_the_next_second) {
    struct engine *e = mk_temp(61);
    char key[32];
    for (int i = 0; i < 64; i++) {
        snprintf(key, sizeof(key), "a%d", i);
        ASSERT_EQ(set(e, key, 1), ENGINE_STORED);
    }
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof(key), "b%d", i);
        ASSERT_EQ(set(e, key, 2), ENGINE_STORED);
    }
    at(e, 3);
    for (int i = 0; i < 10 && engine_step(e, 100000) != 0; i++)
        ;
    ASSERT_EQ(cls(e, C1).seg.number[EVICT_TEMP], 0);
    ASSERT_EQ(cls(e, C1).reclaimed, 69);
    engine_destroy(&e);
}

/*
 * memcached's t/lru-maintainer.t: a transient item is never evicted, even
 * unread while the class churns through items of a longer TTL.
 */
TEST(transient_items_are_never_evicted) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.mem_limit = 2 * MiB;
    cfg.temp_ttl = 61;
    struct engine *e = mk_cfg(&cfg);
    ASSERT_EQ(set_n(e, "canary", 66560, 30), ENGINE_STORED);
    char key[32];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "key%d", i);
        ASSERT_EQ(set_n(e, key, 66560, 3600), ENGINE_STORED);
        if (i % 10 == 0)
            step_all(e);
    }
    ASSERT(stats(e).evictions > 0);
    ASSERT(has(e, "canary"));
    engine_destroy(&e);
}

TEST(temp_ttl_turns_on_and_off_at_run_time) {
    struct engine *e = mk_temp(-1);
    ASSERT_EQ(set(e, "a", 5), ENGINE_STORED);
    ASSERT_EQ(cls(e, C1).seg.number[EVICT_TEMP], 0);
    engine_lru_temp(e, 10);
    ASSERT_EQ(set(e, "b", 5), ENGINE_STORED);
    ASSERT_EQ(set(e, "c", 11), ENGINE_STORED);
    ASSERT_EQ(cls(e, C1).seg.number[EVICT_TEMP], 1);
    engine_lru_temp(e, -1);
    ASSERT_EQ(set(e, "d", 5), ENGINE_STORED);
    ASSERT_EQ(cls(e, C1).seg.number[EVICT_TEMP], 1);
    at(e, 5);
    step_all(e);                                     /* b by its wheel, a reaped */
    ASSERT_EQ(cls(e, C1).seg.number[EVICT_TEMP], 0);
    ASSERT_EQ(stats(e).curr_items, 2);              /* d waits behind the live c */
    engine_destroy(&e);
}

/* A touch moves exptime but not the slot; delete and replace still find it. */
TEST(touched_and_replaced_transient_items_leave_cleanly) {
    struct engine *e = mk_temp(61);
    ASSERT_EQ(set(e, "a", 5), ENGINE_STORED);
    ASSERT_EQ(set(e, "b", 5), ENGINE_STORED);        /* a's slot: b is its head */
    ASSERT_EQ(engine_touch(e, "b", 1, 40), C1);
    ASSERT_EQ(engine_delete(e, "b", 1, 0), ENGINE_DELETED);
    ASSERT_EQ(set(e, "a", 0), ENGINE_STORED);        /* replaced by a lasting one */
    ASSERT_EQ(cls(e, C1).seg.number[EVICT_TEMP], 0);
    ASSERT_EQ(cls(e, C1).seg.number[EVICT_HOT], 1);
    at(e, 5);
    step_all(e);
    ASSERT(has(e, "a"));
    engine_destroy(&e);
}

/* `lru_crawler crawl 1`: only class 1, counted there, running until done. */
TEST(requested_crawl_reclaims_the_classes_asked_for) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.crawl = false;                  /* memcached -o no_modern: crawler off */
    struct engine *e = mk_cfg(&cfg);
    char key[32];
    for (int i = 0; i < 90; i++) {
        snprintf(key, sizeof(key), "foo%d", i);
        ASSERT_EQ(set(e, key, i < 30 ? 1 : i < 60 ? 3600 : 0), ENGINE_STORED);
    }
    ASSERT_EQ(set_n(e, "big", 500, 1), ENGINE_STORED);   /* another class */
    at(e, 3);
    ASSERT_EQ(engine_crawl_request(e, 0), ENGINE_CRAWL_NOTSTARTED);
    ASSERT_EQ(engine_crawl_request(e, (uint64_t)1 << C1), ENGINE_CRAWL_OK);
    ASSERT(stats(e).crawler_running);
    ASSERT_EQ(engine_crawl_request(e, (uint64_t)1 << C1), ENGINE_CRAWL_BUSY);
    unsigned steps = 0;
    while (stats(e).crawler_running && steps < 1000000) {
        engine_step(e, 10);
        steps++;
    }
    ASSERT(!stats(e).crawler_running);
    struct engine_class_stats c = cls(e, C1);
    ASSERT_EQ(c.crawler_reclaimed, 30);
    ASSERT_EQ(c.crawler_items_checked, 90);
    ASSERT_EQ(c.used_chunks, 60);
    ASSERT_EQ(stats(e).curr_items, 61);             /* big's class was not crawled */
    ASSERT_EQ(stats(e).crawler_starts, 1);
    ASSERT_EQ(engine_crawl_request(e, ~(uint64_t)1), ENGINE_CRAWL_OK);   /* all */
    while (stats(e).crawler_running)
        engine_step(e, 1000);
    ASSERT_EQ(stats(e).curr_items, 60);
    ASSERT_EQ(stats(e).crawler_reclaimed, 31);
    engine_destroy(&e);
}

/* memcached's t/issue_183.t: a flat LRU reclaims a flushed tail when it allocates. */
TEST(flat_lru_allocation_reclaims_dead_tails) {
    for (int flat = 0; flat < 2; flat++) {
        struct engine_config cfg;
        engine_config_defaults(&cfg);
        cfg.crawl = false;
        cfg.reap = false;                           /* no maintainer */
        cfg.policy = "lru";
        cfg.lru_flat = flat;
        struct engine *e = mk_cfg(&cfg);
        ASSERT_EQ(set(e, "key", 0), ENGINE_STORED);
        at(e, 2);
        engine_flush(e, 0);
        at(e, 3);
        ASSERT_EQ(set(e, "key", 0), ENGINE_STORED);
        ASSERT_EQ(stats(e).reclaimed, flat ? 1 : 0);
        engine_lru_flat(e, !flat);                  /* `lru mode` */
        ASSERT_EQ(engine_delete(e, "key", 3, 0), ENGINE_DELETED);
        ASSERT_EQ(set(e, "x", 1), ENGINE_STORED);   /* now the oldest */
        at(e, 5);
        ASSERT_EQ(set(e, "y", 0), ENGINE_STORED);
        ASSERT_EQ(stats(e).reclaimed, 1);           /* x, by the other mode */
        engine_destroy(&e);
    }
}

/*
 * The maintainer's juggle (slru's maintain()): HOT is held at 20% of the
 * class by moves to COLD without any eviction, and a COLD item read twice
 * goes to WARM.
 */
TEST(maintainer_moves_hot_tails_to_cold_before_any_eviction) {
    struct engine *e = mk_temp(-1);
    char key[32];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        ASSERT_EQ(set(e, key, 0), ENGINE_STORED);
    }
    ASSERT_EQ(cls(e, C1).seg.moves_to_cold, 0);
    engine_step(e, 1000);
    struct engine_class_stats c = cls(e, C1);
    ASSERT_EQ(c.seg.number[EVICT_HOT], 20);
    ASSERT_EQ(c.seg.moves_to_cold, 80);
    ASSERT_EQ(c.evicted, 0);
    ASSERT(has(e, "k0"));
    ASSERT(has(e, "k0"));                           /* second read: active, to WARM */
    ASSERT_EQ(cls(e, C1).seg.moves_to_warm, 1);
    engine_destroy(&e);
}

int main(void) { return RUN_TESTS(); }
