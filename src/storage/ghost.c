/*
 * ghost.c -- a FIFO set of key hashes (see ghost.h).
 *
 *   index (open addressing, 2^k slots)        nodes (array, linked by index)
 *   +----+----+----+----+----+----+            newest                 oldest
 *   | -  | 3  | -  | 0  | 1  | -  |   ---->    [3] <-> [0] <-> [1] <-> ...
 *   +----+----+----+----+----+----+            free nodes: singly linked by `older`
 *
 * A slot holds a node index or NIL.  The slot of hash h is found by
 * probing from h & mask; nodes keep their hash, so a probe compares
 * hashes and deletion can re-home the slots that follow (backward shift),
 * which keeps every probe run unbroken without tombstones (slotindex.h,
 * shared with evict_lirs.c).
 */
#include "storage/ghost.h"

#include <stddef.h>
#include <stdlib.h>

#include "storage/slotindex.h"

#define NIL SLOT_NIL
#define GHOST_MIN 64

struct ghost_node {
    uint64_t h;                 /* first: slotindex.h reads it there */
    uint64_t val;
    uint32_t newer, older;
};
_Static_assert(offsetof(struct ghost_node, h) == 0, "slotindex.h finds the hash first");

struct ghost {
    struct ghost_node *node;
    uint32_t cap;               /* nodes allocated */
    uint32_t count;
    uint32_t free;              /* first free node, NIL if none */
    uint32_t newest, oldest;
    uint32_t *slot;
    uint32_t mask;              /* slots - 1 */
};

struct ghost *ghost_create(void) {
    struct ghost *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return NULL;
    g->free = g->newest = g->oldest = NIL;
    return g;
}

void ghost_destroy(struct ghost **gp) {
    struct ghost *g = *gp;
    if (g == NULL)
        return;
    free(g->node);
    free(g->slot);
    free(g);
    *gp = NULL;
}

size_t ghost_count(const struct ghost *g) { return g->count; }

size_t ghost_bytes(const struct ghost *g) {
    size_t slots = g->slot != NULL ? (size_t)g->mask + 1 : 0;
    return sizeof(*g) + (size_t)g->cap * sizeof(struct ghost_node) + slots * sizeof(uint32_t);
}

/* The slot holding h, or the empty slot where its probe ends (slotindex.h). */
static uint32_t find(const struct ghost *g, uint64_t h) {
    return slot_find(g->slot, g->mask, g->node, sizeof(struct ghost_node), h);
}

static void unslot(struct ghost *g, uint32_t i) {
    slot_delete(g->slot, g->mask, g->node, sizeof(struct ghost_node), i);
}

/*
 * Doubles the nodes and rebuilds the index at twice the node count.  On
 * failure nothing changes.
 */
static bool grow(struct ghost *g) {
    if (g->cap >= (NIL >> 2))
        return false;
    uint32_t ncap = g->cap ? g->cap * 2 : GHOST_MIN;
    uint32_t nslots = ncap * 2;
    struct ghost_node *node = realloc(g->node, (size_t)ncap * sizeof(*node));
    if (node == NULL)
        return false;
    g->node = node;
    uint32_t *slot = malloc((size_t)nslots * sizeof(*slot));
    if (slot == NULL)
        return false;           /* the larger node array is kept; harmless */
    for (uint32_t i = 0; i < nslots; i++)
        slot[i] = NIL;
    free(g->slot);
    g->slot = slot;
    g->mask = nslots - 1;
    for (uint32_t n = g->newest; n != NIL; n = g->node[n].older)
        g->slot[find(g, g->node[n].h)] = n;
    for (uint32_t n = ncap; n-- > g->cap;) {
        g->node[n].older = g->free;
        g->free = n;
    }
    g->cap = ncap;
    return true;
}

bool ghost_contains(const struct ghost *g, uint64_t h) {
    return g->count > 0 && g->slot[find(g, h)] != NIL;
}

bool ghost_add(struct ghost *g, uint64_t h) { return ghost_add_value(g, h, 0); }

bool ghost_add_value(struct ghost *g, uint64_t h, uint64_t val) {
    if (g->count > 0) {
        uint32_t i = find(g, h);
        if (g->slot[i] != NIL) {
            g->node[g->slot[i]].val = val;
            return true;
        }
    }
    if (g->free == NIL && !grow(g))
        return false;
    uint32_t n = g->free;
    g->free = g->node[n].older;
    g->node[n] = (struct ghost_node){.h = h, .val = val, .newer = NIL, .older = g->newest};
    if (g->newest != NIL)
        g->node[g->newest].newer = n;
    else
        g->oldest = n;
    g->newest = n;
    g->slot[find(g, h)] = n;
    g->count++;
    return true;
}

/* Unlinks node n found at slot i and puts it on the free list. */
static void node_drop(struct ghost *g, uint32_t i, uint32_t n) {
    struct ghost_node *x = &g->node[n];
    if (x->newer != NIL)
        g->node[x->newer].older = x->older;
    else
        g->newest = x->older;
    if (x->older != NIL)
        g->node[x->older].newer = x->newer;
    else
        g->oldest = x->newer;
    unslot(g, i);
    x->older = g->free;
    g->free = n;
    g->count--;
}

bool ghost_remove(struct ghost *g, uint64_t h) {
    if (g->count == 0)
        return false;
    uint32_t i = find(g, h);
    if (g->slot[i] == NIL)
        return false;
    node_drop(g, i, g->slot[i]);
    return true;
}

bool ghost_take(struct ghost *g, uint64_t h, uint64_t *val) {
    if (g->count == 0)
        return false;
    uint32_t i = find(g, h);
    if (g->slot[i] == NIL)
        return false;
    *val = g->node[g->slot[i]].val;
    node_drop(g, i, g->slot[i]);
    return true;
}

bool ghost_drop_oldest(struct ghost *g) {
    if (g->count == 0)
        return false;
    uint32_t n = g->oldest;
    node_drop(g, find(g, g->node[n].h), n);
    return true;
}

void ghost_trim(struct ghost *g, size_t max) {
    while (g->count > max)
        ghost_drop_oldest(g);
}
