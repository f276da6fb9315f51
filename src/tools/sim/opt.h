/*
 * opt.h -- Belady's optimal policy (MIN), the lower bound of a miss-ratio
 * curve: on a miss, keep whichever of the resident objects and the new one
 * are needed soonest, dropping the one whose next request is furthest away
 * (possibly the new one: the bound allows not caching an object).
 *
 * Object-count capacity only, GET requests only (SET and DELETE are
 * skipped).  Allocates O(requests) for next-access positions.
 */
#ifndef CELLAR_SIM_OPT_H
#define CELLAR_SIM_OPT_H

#include "tools/sim/replay.h"
#include "tools/sim/trace.h"

int opt_run(const struct trace *t, uint64_t capacity, struct replay_result *r, char *err,
            size_t errlen);

#endif
