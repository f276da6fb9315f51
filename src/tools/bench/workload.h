/*
 * workload.h -- what cellar-bench asks for: keys, operations, value sizes.
 *
 * A workload is read-only once built and shared by all load threads; each
 * thread draws from it with its own random generator (struct rng), so a
 * run with the same seed and thread count asks for the same keys.
 *
 * Keys are numbered.  Key i is the prefix followed by i in decimal,
 * zero-padded so that every key is exactly key_size bytes:
 *
 *   prefix "key:", key_size 16:   key 42 = "key:000000000042"
 *
 *   [0, keys)         the key space: preloaded, and where sets go
 *   [keys, 2 * keys)  the miss range: never written, so a get there
 *                     misses; a get goes there with probability miss_ratio
 *
 * Popularity is uniform or zipf(alpha) over the key space (key 0 the most
 * popular), the same shape in the miss range.  Nothing here allocates
 * after workload_init() or blocks.
 */
#ifndef CELLAR_TOOLS_BENCH_WORKLOAD_H
#define CELLAR_TOOLS_BENCH_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WORKLOAD_KEY_MAX 250
#define WORKLOAD_PREFIX_MAX 64
#define WORKLOAD_MULTIGET_MAX 1000

/* splitmix64: small, fast, good enough to pick keys. */
struct rng {
    uint64_t s;
};

static inline uint64_t rng_next(struct rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), by multiply-shift (no modulo bias worth the name). */
static inline uint64_t rng_below(struct rng *r, uint64_t n) {
    return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

/* Uniform in [0, 1). */
static inline double rng_double(struct rng *r) {
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/*
 * Zipf over ranks [0, n) with exponent s > 0, P(rank k) ~ 1/(k+1)^s:
 * Hoermann and Derflinger's rejection-inversion, constant time per draw
 * and constant setup, for any n and s (also s = 1).
 */
struct zipf {
    uint64_t n;
    double s;
    double h_x1, h_n, sval;
};

void zipf_init(struct zipf *z, uint64_t n, double s);
uint64_t zipf_next(const struct zipf *z, struct rng *r);

enum key_dist { KEY_UNIFORM, KEY_ZIPF };

struct workload {
    uint64_t keys;                  /* key space size */
    unsigned key_size;              /* bytes of every key */
    char prefix[WORKLOAD_PREFIX_MAX + 1];
    unsigned prefix_len;
    double set_ratio;               /* fraction of requests that are sets */
    unsigned multiget;              /* keys per get */
    enum key_dist dist;
    double alpha;                   /* zipf exponent */
    struct zipf zipf;
    uint32_t vmin, vmax;            /* value bytes, uniform in [vmin, vmax] */
    double miss_ratio;              /* fraction of get keys drawn from the miss range */
};

/*
 * Checks the fields set by the caller and prepares the rest (the zipf
 * tables).  Returns NULL, or a message saying what is wrong.
 */
const char *workload_init(struct workload *w);

/* Writes key idx (key_size bytes, no terminator) into out. */
void workload_key(const struct workload *w, uint64_t idx, char *out);

/* The next request: a set (true) or a get. */
static inline bool workload_is_set(const struct workload *w, struct rng *r) {
    return w->set_ratio > 0 && (w->set_ratio >= 1 || rng_double(r) < w->set_ratio);
}

/* A key for a set (always in the key space) or a get (maybe a miss). */
uint64_t workload_pick(const struct workload *w, struct rng *r, bool for_get);

static inline uint32_t workload_vlen(const struct workload *w, struct rng *r) {
    if (w->vmin == w->vmax)
        return w->vmin;
    return w->vmin + (uint32_t)rng_below(r, (uint64_t)(w->vmax - w->vmin) + 1);
}

#endif
