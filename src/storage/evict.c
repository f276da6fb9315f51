/*
 * evict.c -- the list of eviction policies, found by name.
 *
 * Each policy lives in its own evict_<name>.c and is listed here once.
 * Names are what `-o evict_policy=NAME` and cellar-sim's --policy take.
 */
#include "storage/evict.h"

#include <stddef.h>
#include <string.h>

static const struct evict_policy *const policies[] = {
    &evict_lru,         &evict_lru_exact,      &evict_fifo,     &evict_clock,
    &evict_clock2,      &evict_sieve,          &evict_slru,     &evict_doubleclock,
    &evict_doubleclock_rd, &evict_lfu,         &evict_lfu_decay, &evict_2q,
    &evict_arc,         &evict_s3fifo,         &evict_wtinylfu, &evict_wtinylfu_fixed,
    &evict_lirs,        &evict_sampled,        &evict_sampled_lfu,
};

#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

const struct evict_policy *evict_policy_find(const char *name) {
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < NPOLICIES; i++)
        if (strcmp(policies[i]->name, name) == 0)
            return policies[i];
    return NULL;
}

unsigned evict_policy_count(void) { return (unsigned)NPOLICIES; }

const struct evict_policy *evict_policy_at(unsigned i) {
    return i < NPOLICIES ? policies[i] : NULL;
}
