/*
 * replay.h -- one cache, one trace: drives a real struct engine (the code
 * cellard runs) through a trace and counts hits and misses.
 *
 * Each run creates its own engine, so any number of runs may go on at
 * once in different threads over the same (read-only) trace.  The engine's
 * clock follows trace time (engine_clock_set() whenever the trace second
 * changes) and its background work (engine_step()) runs every step_every
 * requests, as the server's maintenance thread would.
 *
 * A GET that misses stores the object (demand fill, as a look-aside
 * client does and as libCacheSim counts); SET stores, DELETE deletes;
 * only GETs count toward the miss ratio.
 *
 * Capacity:
 *   objects  every object is one chunk of the smallest class (an 8-byte
 *            key, no value), and the engine gets exactly `capacity`
 *            chunks: memory is rounded up to whole pages and the chunks
 *            beyond capacity are allocated at start and held, so the
 *            eviction policy sees precisely a cache of that many objects.
 *   bytes    memory is `capacity` bytes of slab pages; each object is an
 *            item whose value has the trace's size, so item headers, slab
 *            classes and their fragmentation count as they do in cellard
 *            (with pages scaled to the cache, see byte_engine()).
 */
#ifndef CELLAR_SIM_REPLAY_H
#define CELLAR_SIM_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/sim/trace.h"

struct replay_cfg {
    const char *policy;
    uint64_t capacity;          /* objects, or bytes when bytes is set */
    bool bytes;
    uint32_t page_size;         /* byte mode: slab page (0 = chosen from capacity) */
    unsigned step_every;        /* requests between engine_step() calls (0 = never) */
    unsigned step_budget;
    uint64_t mean_size;         /* byte mode: the trace's mean object size, to size the
                                   hash table or index within the capacity */
};

struct replay_result {
    uint64_t gets, misses;
    uint64_t get_bytes, miss_bytes;
    uint64_t uncacheable;       /* misses that could not be stored */
    uint64_t evictions, items;  /* engine stats at the end */
    double seconds;
};

/* Returns 0, or -1 with a message in err. */
int replay_run(const struct trace *t, const struct replay_cfg *c, struct replay_result *r,
               char *err, size_t errlen);

#endif
