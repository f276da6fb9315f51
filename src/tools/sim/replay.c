/*
 * replay.c -- see replay.h.
 */
#include "tools/sim/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "storage/engine.h"

#define SIM_T0 1000000u            /* unix second of trace time 0 */
#define OBJ_PAGE 4096u             /* object mode: page and largest chunk */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned power_for(uint64_t n) {
    unsigned p = 16;
    while (p < 30 && ((uint64_t)1 << p) < n)
        p++;
    return p;
}

/*
 * An engine that holds exactly cap objects of the trace's shape: pages of
 * OBJ_PAGE bytes, enough of them for cap chunks of class 1, and the
 * surplus chunks taken now and held in *hold.
 */
static struct engine *object_engine(const struct replay_cfg *c, struct item ***hold,
                                    size_t *nhold, char *err, size_t errlen) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.policy = c->policy;
    cfg.single_thread = true;          /* one engine per thread */
    cfg.chunk_min = 8;
    cfg.page_size = OBJ_PAGE;
    cfg.slab_chunk_max = OBJ_PAGE;
    cfg.item_size_max = OBJ_PAGE;
    cfg.hashpower_init = power_for(c->capacity);
    cfg.mem_limit = 2 * OBJ_PAGE;           /* to create it; resized below */
    struct engine *e = engine_create(&cfg, err, errlen);
    if (e == NULL)
        return NULL;
    struct engine_class_stats cs;
    unsigned id = engine_class_for(e, sizeof(struct item) + 8);
    engine_class_stats(e, id, &cs);
    engine_destroy(&e);
    if (id != 1 || cs.chunks_per_page == 0) {
        snprintf(err, errlen, "object items do not land in class 1");
        return NULL;
    }
    uint64_t pages = (c->capacity + cs.chunks_per_page - 1) / cs.chunks_per_page;
    if (pages < 2)
        pages = 2;
    cfg.mem_limit = pages * OBJ_PAGE;
    if ((e = engine_create(&cfg, err, errlen)) == NULL)
        return NULL;
    engine_clock_set(e, SIM_T0);
    size_t extra = pages * cs.chunks_per_page - c->capacity;
    *hold = calloc(extra ? extra : 1, sizeof(**hold));
    if (*hold == NULL) {
        engine_destroy(&e);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (*nhold = 0; *nhold < extra; (*nhold)++) {
        enum engine_alloc_err aerr;
        struct item *it = engine_item_alloc(e, "\0hold", 5, 0, 0, 3, &aerr);
        if (it == NULL) {
            snprintf(err, errlen, "could not reserve the surplus chunks");
            for (size_t i = 0; i < *nhold; i++)
                engine_item_unref(e, (*hold)[i]);
            free(*hold);
            engine_destroy(&e);
            return NULL;
        }
        (*hold)[*nhold] = it;
    }
    return e;
}

/*
 * An engine of cap bytes with memcached's slab classes.  Every class that
 * is used holds at least one page, even past the limit (as in memcached),
 * so pages must be small next to the cache or that overshoot swamps the
 * limit: unless a page size is given, it is the largest power of two up
 * to cap / 128, between 4 KiB and memcached's 1 MiB.  Items up to 1 MiB
 * (or half the cache) still fit, chained over chunks of half a page.
 */
static struct engine *byte_engine(const struct replay_cfg *c, char *err, size_t errlen) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.policy = c->policy;
    cfg.single_thread = true;          /* one engine per thread */
    uint32_t page = c->page_size;
    if (page == 0) {
        page = 4096;
        while (page < 1024 * 1024 && (uint64_t)page * 2 <= c->capacity / 128)
            page *= 2;
    }
    cfg.page_size = page;
    cfg.slab_chunk_max = page / 2;
    uint64_t imax = c->capacity / 2 < 1024 * 1024 ? c->capacity / 2 : 1024 * 1024;
    imax -= imax % cfg.slab_chunk_max;
    cfg.item_size_max = imax >= cfg.slab_chunk_max ? (uint32_t)imax : cfg.slab_chunk_max;
    cfg.mem_limit = c->capacity;
    cfg.hashpower_init = power_for(c->capacity / 64);
    bool seg = strncmp(c->policy, "seg-", 4) == 0;
    if (seg) {                          /* the segment back end: segments of a page, */
        cfg.seg = true;                 /* larger values out of line */
        cfg.policy = c->policy + 4;
    }
    if (c->mean_size != 0) {
        /*
         * Equal total memory: the table or index comes out of the capacity
         * too.  Slab: a table of about as many buckets as items (memcached
         * grows it past 1.5 items a bucket), 8 bytes each; segments: the
         * index, about 10 bytes an item (9.5 measured at the reference
         * load).  Items are estimated from the mean object size and each
         * layout's header and key (8-byte keys here).
         */
        uint64_t meta;
        if (seg) {
            meta = 10 * (c->capacity / (c->mean_size + 7 + 8));
        } else {
            uint64_t items = c->capacity / (c->mean_size + 56 + 8);
            unsigned p = 10;
            while (p < 30 && ((uint64_t)1 << p) * 3 / 2 < items)
                p++;
            cfg.hashpower_init = p;
            meta = (uint64_t)8 << p;
        }
        if (meta >= c->capacity / 2) {
            snprintf(err, errlen, "%llu bytes leave too little room beside the table or index",
                     (unsigned long long)c->capacity);
            return NULL;
        }
        cfg.mem_limit = c->capacity - meta;
        /* -I at most half of what is left */
        uint64_t im = cfg.mem_limit / 2 < cfg.item_size_max ? cfg.mem_limit / 2
                                                             : cfg.item_size_max;
        im -= im % cfg.slab_chunk_max;
        cfg.item_size_max = im >= cfg.slab_chunk_max ? (uint32_t)im : cfg.slab_chunk_max;
    }
    struct engine *e = engine_create(&cfg, err, errlen);
    if (e != NULL)
        engine_clock_set(e, SIM_T0);
    return e;
}

static void key_of(uint64_t id, char key[8]) { memcpy(key, &id, 8); }

/* Stores a fresh object; false when the engine cannot take it. */
static bool store(struct engine *e, const struct trace_req *q, bool bytes) {
    char key[8];
    key_of(q->id, key);
    enum engine_alloc_err aerr;
    struct item *it = engine_item_alloc(e, key, 8, 0, q->ttl, bytes ? q->size : 0, &aerr);
    if (it == NULL)
        return false;
    engine_store(e, it, ENGINE_SET, 0, NULL);
    engine_item_unref(e, it);
    return true;
}

/*
 * The loop: move the clock when the trace second changes, run the
 * maintenance step every step_every requests, then the request itself.
 * Only this loop is timed (not creating the engine).
 */
int replay_run(const struct trace *t, const struct replay_cfg *c, struct replay_result *r,
               char *err, size_t errlen) {
    *r = (struct replay_result){0};
    struct item **hold = NULL;
    size_t nhold = 0;
    struct engine *e = c->bytes ? byte_engine(c, err, errlen)
                                : object_engine(c, &hold, &nhold, err, errlen);
    if (e == NULL)
        return -1;
    uint32_t last = UINT32_MAX;
    unsigned since = 0;
    double t0 = now_s();
    for (size_t i = 0; i < t->n; i++) {
        const struct trace_req *q = &t->req[i];
        if (q->time != last) {
            last = q->time;
            engine_clock_set(e, SIM_T0 + q->time);
        }
        if (c->step_every != 0 && ++since >= c->step_every) {
            since = 0;
            engine_step(e, c->step_budget);
        }
        char key[8];
        key_of(q->id, key);
        switch (q->op) {
        case TRACE_GET: {
            r->gets++;
            r->get_bytes += q->size;
            struct item *it = engine_get(e, key, 8, NULL);
            if (it != NULL) {
                engine_item_unref(e, it);
                break;
            }
            r->misses++;
            r->miss_bytes += q->size;
            if (!store(e, q, c->bytes))
                r->uncacheable++;
            break;
        }
        case TRACE_SET:
            store(e, q, c->bytes);
            break;
        case TRACE_DELETE:
            engine_delete(e, key, 8, 0);
            break;
        }
    }
    r->seconds = now_s() - t0;
    struct engine_stats st;
    engine_stats(e, &st);
    r->evictions = st.evictions;
    r->items = st.curr_items;
    for (size_t i = 0; i < nhold; i++)
        engine_item_unref(e, hold[i]);
    free(hold);
    engine_destroy(&e);
    return 0;
}
