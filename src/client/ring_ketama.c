/*
 * ring_ketama.c -- libmemcached's weighted ketama continuum.
 *
 * Each server gets floor(share * 160 / 4 * servers) * 4 points on a
 * 32-bit circle, share being its weight over the total (computed in float,
 * as libmemcached does, so the rounding agrees); point group i of server
 * "host:port" is the MD5 of "host:port-i" ("host-i" on port 11211), whose
 * four little-endian words are four points.  A key goes to the first point
 * at or after the first word of its own MD5, wrapping at the top; points
 * of equal value are ordered by server index.
 */
#include "client/ring_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/md5.h"

#define KETAMA_POINTS 160       /* per server of average weight */
#define KETAMA_DEFAULT_PORT 11211

struct point {
    uint32_t value;
    uint32_t index;
};

struct ketama {
    unsigned npoints;
    struct point points[];
};

static uint32_t word_le(const uint8_t *d) {
    return (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
}

static int point_cmp(const void *a, const void *b) {
    const struct point *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static uint32_t points_of(uint32_t weight, uint64_t total, unsigned n) {
    float share = (float)weight / (float)total;
    float groups = share * KETAMA_POINTS / 4 * (float)n + 0.0000000001F;
    return (uint32_t)(floor(groups) * 4);
}

static void *ketama_build(const struct ring_server *s, unsigned n) {
    uint64_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += s[i].weight ? s[i].weight : 1;
    uint64_t all = 0;
    for (unsigned i = 0; i < n; i++)
        all += points_of(s[i].weight ? s[i].weight : 1, total, n);
    struct ketama *k = malloc(sizeof(*k) + all * sizeof(struct point));
    if (k == NULL)
        return NULL;
    unsigned at = 0;
    for (unsigned i = 0; i < n; i++) {
        uint32_t pts = points_of(s[i].weight ? s[i].weight : 1, total, n);
        for (uint32_t g = 0; g < pts / 4; g++) {
            char name[300];
            int len = s[i].port == KETAMA_DEFAULT_PORT
                          ? snprintf(name, sizeof(name), "%s-%u", s[i].host, g)
                          : snprintf(name, sizeof(name), "%s:%u-%u", s[i].host, s[i].port, g);
            if (len < 0 || (size_t)len >= sizeof(name))
                len = (int)sizeof(name) - 1;    /* a host name of 255 bytes fits */
            uint8_t d[16];
            md5(name, (size_t)len, d);
            for (int w = 0; w < 4; w++)
                k->points[at++] = (struct point){word_le(d + 4 * w), i};
        }
    }
    k->npoints = at;
    qsort(k->points, at, sizeof(struct point), point_cmp);
    return k;
}

static unsigned ketama_pick(const void *state, unsigned n, const char *key, size_t len) {
    const struct ketama *k = state;
    if (k->npoints == 0)
        return 0;
    (void)n;
    uint8_t d[16];
    md5(key, len, d);
    uint32_t h = word_le(d);
    unsigned lo = 0, hi = k->npoints;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (k->points[mid].value < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return k->points[lo == k->npoints ? 0 : lo].index;
}

static void ketama_free(void *state) { free(state); }

const struct ring_ops ring_ketama = {"ketama", 0, ketama_build, ketama_pick, ketama_free, false};
