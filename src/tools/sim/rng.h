/*
 * rng.h -- the simulator's random numbers: xoshiro256** seeded through
 * splitmix64 (Blackman & Vigna).  State is a struct the caller owns, so
 * a seed fixes a synthetic trace exactly and nothing is global.
 */
#ifndef CELLAR_SIM_RNG_H
#define CELLAR_SIM_RNG_H

#include <stdint.h>

struct rng {
    uint64_t s[4];
};

static inline uint64_t rng_splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void rng_seed(struct rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++)
        r->s[i] = rng_splitmix(&seed);
}

static inline uint64_t rng_next(struct rng *r) {
    uint64_t *s = r->s;
    uint64_t x = s[1] * 5;
    uint64_t out = ((x << 7) | (x >> 57)) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return out;
}

/* Uniform in [0, 1), 53 bits. */
static inline double rng_unit(struct rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform in [0, n). */
static inline uint64_t rng_below(struct rng *r, uint64_t n) {
    return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

#endif
