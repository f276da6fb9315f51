/*
 * evict_test.h -- helpers shared by the eviction policy tests.
 *
 * tcache: a cache of `cap` objects driven through the policy seam alone,
 * making exactly the calls the engine makes (hit, then bump when asked;
 * on a miss at capacity victim(NULL), unlink, then link), so that a hand
 * computed trace can be checked request by request.  Keys are small
 * integers; tc_run() takes a trace as "1 2 3 1" and returns "MMMH", and
 * tc->evicted lists the keys evicted, in order, as "3 5".
 *
 * obj_engine: a real engine holding exactly `cap` objects (as cellar-sim
 * builds them: 8-byte keys, no value, surplus chunks held), for tests that
 * run policies through struct engine.
 *
 * zipf: a seeded zipf trace generator (inverse CDF).
 */
#ifndef CELLAR_TEST_EVICT_TEST_H
#define CELLAR_TEST_EVICT_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/engine.h"
#include "storage/evict.h"

#define TC_KEYS 4096

struct tcache {
    const struct evict_policy *p;
    struct evict_queue *q;
    size_t cap, n;
    uint32_t now;
    struct item *it[TC_KEYS];
    bool in[TC_KEYS];
    char evicted[8192];
};

static inline struct item *tc_item(struct tcache *c, unsigned k) {
    if (c->it[k] == NULL) {
        c->it[k] = calloc(1, sizeof(struct item) + 16);
        c->it[k]->nkey = (uint8_t)snprintf(c->it[k]->data, 16, "k%u", k);
    }
    return c->it[k];
}

static inline struct tcache *tc_new(const char *policy, size_t cap) {
    struct tcache *c = calloc(1, sizeof(*c));
    c->p = evict_policy_find(policy);
    if (c->p == NULL) {
        fprintf(stderr, "no policy %s\n", policy);
        abort();
    }
    c->q = c->p->create();
    c->cap = cap;
    c->now = 100;
    return c;
}

static inline void tc_free(struct tcache *c) {
    for (unsigned k = 0; k < TC_KEYS; k++) {
        if (c->in[k])
            c->p->unlink(c->q, c->it[k]);
        free(c->it[k]);
    }
    c->p->destroy(c->q);
    free(c);
}

/* Links key k (not resident), as item_link_locked() does. */
static inline void tc_link(struct tcache *c, unsigned k) {
    struct item *it = tc_item(c, k);
    it->prev = it->next = NULL;
    it->atime = c->now;
    atomic_store(&it->pbits, 0);
    c->p->link(c->q, it, c->now);
    c->in[k] = true;
    c->n++;
}

static inline void tc_unlink(struct tcache *c, unsigned k) {
    c->p->unlink(c->q, c->it[k]);
    c->in[k] = false;
    c->n--;
}

/* Evicts one item as evict_pull() does; returns its key, or -1. */
static inline int tc_evict(struct tcache *c) {
    struct item *v = c->p->victim(c->q, NULL);
    if (v == NULL)
        return -1;
    unsigned k = (unsigned)atoi(v->data + 1);
    tc_unlink(c, k);
    size_t len = strlen(c->evicted);
    snprintf(c->evicted + len, sizeof(c->evicted) - len, "%s%u", len ? " " : "", k);
    return (int)k;
}

/* One request: true on a hit; a miss stores the key, evicting at capacity. */
static inline bool tc_get(struct tcache *c, unsigned k) {
    if (c->in[k]) {
        struct item *it = c->it[k];
        if (c->p->hit(it, c->now)) {
            c->p->bump(c->q, it, c->now);
            it->atime = c->now;
        }
        return true;
    }
    while (c->n >= c->cap)
        if (tc_evict(c) < 0)
            break;
    tc_link(c, k);
    return false;
}

/* Runs a trace of space-separated keys; returns "H"/"M" per request. */
static inline const char *tc_run(struct tcache *c, const char *trace) {
    static char out[4096];
    size_t n = 0;
    const char *p = trace;
    while (*p != '\0' && n + 1 < sizeof(out)) {
        char *end;
        unsigned long k = strtoul(p, &end, 10);
        if (end == p)
            break;
        out[n++] = tc_get(c, (unsigned)k) ? 'H' : 'M';
        p = end;
        while (*p == ' ')
            p++;
    }
    out[n] = '\0';
    return out;
}

/* ---- a real engine of exactly cap objects ---- */

struct obj_engine {
    struct engine *e;
    struct item **hold;
    size_t nhold;
};

static inline bool obj_engine_open_mode(struct obj_engine *o, const char *policy, uint64_t cap,
                                        bool single_thread) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.policy = policy;
    cfg.single_thread = single_thread;
    cfg.chunk_min = 8;
    cfg.page_size = cfg.slab_chunk_max = cfg.item_size_max = 4096;
    cfg.mem_limit = 8192;
    char err[256];
    struct engine *e = engine_create(&cfg, err, sizeof(err));
    if (e == NULL)
        return false;
    struct engine_class_stats cs;
    engine_class_stats(e, 1, &cs);
    engine_destroy(&e);
    uint64_t pages = (cap + cs.chunks_per_page - 1) / cs.chunks_per_page;
    cfg.mem_limit = (pages < 2 ? 2 : pages) * 4096;
    o->e = engine_create(&cfg, err, sizeof(err));
    if (o->e == NULL)
        return false;
    engine_clock_set(o->e, 1000000);
    size_t extra = cfg.mem_limit / 4096 * cs.chunks_per_page - cap;
    o->hold = calloc(extra + 1, sizeof(*o->hold));
    for (o->nhold = 0; o->nhold < extra; o->nhold++) {
        enum engine_alloc_err ae;
        o->hold[o->nhold] = engine_item_alloc(o->e, "\0hold", 5, 0, 0, 3, &ae);
        if (o->hold[o->nhold] == NULL)
            return false;
    }
    return true;
}

static inline bool obj_engine_open(struct obj_engine *o, const char *policy, uint64_t cap) {
    return obj_engine_open_mode(o, policy, cap, false);
}

static inline void obj_engine_close(struct obj_engine *o) {
    for (size_t i = 0; i < o->nhold; i++)
        engine_item_unref(o->e, o->hold[i]);
    free(o->hold);
    engine_destroy(&o->e);
}

/* A GET with demand fill; true on a hit. */
static inline bool obj_engine_get(struct obj_engine *o, uint64_t id) {
    char key[8];
    memcpy(key, &id, 8);
    struct item *it = engine_get(o->e, key, 8, NULL);
    if (it != NULL) {
        engine_item_unref(o->e, it);
        return true;
    }
    enum engine_alloc_err ae;
    it = engine_item_alloc(o->e, key, 8, 0, 0, 0, &ae);
    if (it != NULL) {
        engine_store(o->e, it, ENGINE_SET, 0, NULL);
        engine_item_unref(o->e, it);
    }
    return false;
}

/* ---- seeded randomness and zipf ---- */

static inline uint64_t test_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

struct zipf {
    double *cdf;
    uint64_t m;
};

static inline void zipf_init(struct zipf *z, uint64_t m, double alpha) {
    z->m = m;
    z->cdf = malloc(m * sizeof(double));
    double sum = 0;
    for (uint64_t k = 0; k < m; k++)
        z->cdf[k] = sum += pow((double)(k + 1), -alpha);
    for (uint64_t k = 0; k < m; k++)
        z->cdf[k] /= sum;
}

static inline uint64_t zipf_next(const struct zipf *z, uint64_t *seed) {
    double u = (double)(test_rand(seed) >> 11) * 0x1.0p-53;
    uint64_t lo = 0, hi = z->m - 1;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (z->cdf[mid] >= u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

#endif
