/*
 * seg_evict.c -- the segment evictions by name (seg_evict.h), and the
 * store's config defaults, which pick FIFO.
 */
#include <string.h>

#include "storage/seg_int.h"

static const struct seg_evict *const all[] = {&seg_evict_fifo, &seg_evict_merge,
                                              &seg_evict_s3fifo};

const struct seg_evict *seg_evict_find(const char *name) {
    for (size_t i = 0; name != NULL && i < sizeof(all) / sizeof(all[0]); i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

void seg_config_defaults(struct seg_config *cfg) {
    *cfg = (struct seg_config){.mem_limit = (size_t)64 << 20, .seg_size = SEG_SIZE_MAX,
                               .lock_power = 12, .index_power = 12,
                               .evict = &seg_evict_fifo};
}
