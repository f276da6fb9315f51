/*
 * seg_evict.h -- how the segment store evicts when no segment is free:
 * one const table of operations per eviction, one file each
 * (seg_evict_fifo.c, seg_evict_merge.c, seg_evict_s3fifo.c), picked by
 * name into seg_config.evict.  As evict.h does for the slab's per-item
 * policies, the store calls the table and never asks which eviction runs.
 *
 * init runs once at seg_store_create(), before the store is shared: it
 * sets aside what the eviction needs (the merge's spare segment,
 * S3-FIFO's outputs and ghost), and returns false when memory is short.
 * evict is one eviction, for a caller that found no free segment: the
 * pool lock is held on entry and released on return, held is the key
 * stripe the caller holds (NULL: none; seg.h's lock order), and it
 * returns false when nothing could be evicted.  The merge and S3-FIFO
 * fall back to FIFO's evict when they cannot run (a store too small for
 * them, or no victim of their own).
 */
#ifndef CELLAR_STORAGE_SEG_EVICT_H
#define CELLAR_STORAGE_SEG_EVICT_H

#include <stdbool.h>

struct seg_store;
struct mtx;

struct seg_evict {
    const char *name;                   /* -o storage=seg,evict=NAME */
    bool (*init)(struct seg_store *s);  /* NULL: nothing to set aside */
    bool (*evict)(struct seg_store *s, struct mtx *held);
};

extern const struct seg_evict seg_evict_fifo, seg_evict_merge, seg_evict_s3fifo;

/* The eviction called name (fifo, merge, s3fifo), or NULL. */
const struct seg_evict *seg_evict_find(const char *name);

#endif
