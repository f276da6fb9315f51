/*
 * idmap.h -- a hash map from 64-bit object ids to 64-bit values, for the
 * simulator's bookkeeping (unique objects, next-access positions for OPT).
 * Open addressing with linear probing; grows by doubling; no deletion.
 * Not thread-safe; allocates.
 */
#ifndef CELLAR_SIM_IDMAP_H
#define CELLAR_SIM_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct idmap;

struct idmap *idmap_create(size_t expect);
void idmap_destroy(struct idmap **m);

/*
 * The value slot of id, inserted with value dflt when absent (*fresh then
 * true).  NULL when memory is short.  The pointer is valid until the next
 * insertion.
 */
uint64_t *idmap_put(struct idmap *m, uint64_t id, uint64_t dflt, bool *fresh);
/* The value slot of id, or NULL when absent. */
uint64_t *idmap_get(const struct idmap *m, uint64_t id);
size_t idmap_count(const struct idmap *m);

#endif
