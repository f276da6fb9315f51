/*
 * report.h -- cellar-sim's output: a miss-ratio table for the terminal,
 * CSV for tools, and a self-contained SVG chart of the miss-ratio curves.
 *
 * Results come as a grid: one row per cache size, one column per policy
 * (Belady's OPT appears as a policy named "OPT").
 */
#ifndef CELLAR_SIM_REPORT_H
#define CELLAR_SIM_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "tools/sim/replay.h"
#include "tools/sim/trace.h"

struct sim_job {
    const char *policy;
    uint64_t capacity;          /* objects, or bytes */
    double frac;                /* capacity / working set */
    struct replay_result res;
    int rc;                     /* 0 when it ran */
    char err[160];
};

struct sim_grid {
    const struct trace *trace;
    bool bytes;
    const char **policies;
    size_t npol;
    size_t nsizes;
    struct sim_job *jobs;       /* [size * npol + policy] */
};

static inline struct sim_job *grid_at(const struct sim_grid *g, size_t s, size_t p) {
    return &g->jobs[s * g->npol + p];
}

static inline double miss_ratio(const struct replay_result *r) {
    return r->gets ? (double)r->misses / (double)r->gets : 0.0;
}

void report_table(FILE *f, const struct sim_grid *g);
void report_csv(FILE *f, const struct sim_grid *g);
/* Writes the chart; returns 0 or -1 (errno set). */
int report_svg(const char *path, const struct sim_grid *g);

#endif
