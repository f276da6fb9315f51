/*
 * slotindex.h -- the open-addressing index that the policies' side tables
 * share (ghost.c, evict_lirs.c): 2^k slots holding node numbers (or
 * SLOT_NIL), found by the 64-bit hash each node keeps as its first member.
 *
 * Linear probing from h & mask; deletion shifts the rest of the probe run
 * back (no tombstones), so every run stays unbroken.  The owner keeps the
 * load at most 1/2 and passes its node array with the node's size.
 *
 * Header only, no allocation, no locking of its own.
 */
#ifndef CELLAR_STORAGE_SLOTINDEX_H
#define CELLAR_STORAGE_SLOTINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SLOT_NIL UINT32_MAX

/* The hash of node n in an array of nodes of size stride. */
static inline uint64_t slot_node_hash(const void *nodes, size_t stride, uint32_t n) {
    uint64_t h;
    memcpy(&h, (const char *)nodes + (size_t)n * stride, sizeof(h));
    return h;
}

/* The slot holding h, or the empty slot where its probe ends. */
static inline uint32_t slot_find(const uint32_t *slot, uint32_t mask, const void *nodes,
                                 size_t stride, uint64_t h) {
    uint32_t i = (uint32_t)h & mask;
    while (slot[i] != SLOT_NIL && slot_node_hash(nodes, stride, slot[i]) != h)
        i = (i + 1) & mask;
    return i;
}

/*
 * Empties slot i and moves later members of the probe run back into the
 * hole when their home slot does not lie cyclically in (i, j].
 */
static inline void slot_delete(uint32_t *slot, uint32_t mask, const void *nodes, size_t stride,
                               uint32_t i) {
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (slot[j] == SLOT_NIL)
            break;
        uint32_t k = (uint32_t)slot_node_hash(nodes, stride, slot[j]) & mask;
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        slot[i] = slot[j];
        i = j;
    }
    slot[i] = SLOT_NIL;
}

#endif
