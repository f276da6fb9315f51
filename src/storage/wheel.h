/*
 * wheel.h -- the transient-item wheel of one slab class: "Scaling Memcache
 * at Facebook" section 6.3 keeps short-lived items in a circular buffer of
 * lists indexed by the second they expire and frees each list in its
 * second; memcached 1.6 keeps them in a TEMP LRU that is never bumped and
 * never evicted from, only reaped (-o temporary_ttl, `lru temp_ttl`).
 *
 *   slot[exptime % WHEEL_SLOTS]:  head -> it -> it -> NULL   (prev/next)
 *                                   ^
 *          wheel.next: the next second whose slot the step reclaims
 *
 * What it owns: the list heads; the items are linked through their
 * prev/next, which are free for it because an item in the wheel is never
 * in the eviction policy's queue (ITEM_TEMP, evict.h).  A slot holds the
 * items of every second that maps to it, so the reclaim of a slot checks
 * each item's exptime and leaves the later ones (and one whose exptime a
 * touch moved) for a later turn.  Threading: the class lock guards
 * everything (item.c takes it); no function blocks, only wheel_init()
 * allocates.
 *
 * Why here and not behind evict.h: a TEMP list is no eviction order (its
 * items are never evicted), so every policy would carry the same code;
 * the slab back end keeps the wheel beside the policy's queue instead and
 * decides at one place, item_link_locked(), which of the two an item
 * enters.  The segment back end needs none of this: its items are
 * appended to segments of a TTL bucket, and a whole segment is freed at
 * once when its bucket's TTL has passed (seg.c), which is already the
 * wheel's reclaim in bulk.
 */
#ifndef CELLAR_STORAGE_WHEEL_H
#define CELLAR_STORAGE_WHEEL_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/item.h"

#define WHEEL_SLOTS 1024u               /* seconds per turn; a power of two */

struct wheel {
    struct item **slot;                 /* WHEEL_SLOTS heads; NULL until wheel_init() */
    uint32_t next;                      /* the next second to reclaim */
    uint64_t n;                         /* items in the wheel */
};

/* Allocates the slots, the first second to reclaim being now; false when out of memory. */
bool wheel_init(struct wheel *w, uint32_t now);
/* Frees the slots (the items are the caller's); NULL-safe, idempotent. */
void wheel_deinit(struct wheel *w);

/* Puts it at the head of its exptime's slot. */
void wheel_add(struct wheel *w, struct item *it);
/* Takes it out of the wheel (it is in it). */
void wheel_remove(struct wheel *w, struct item *it);

/* The first item of second sec's slot, or NULL; walk on with it->next. */
static inline struct item *wheel_first(const struct wheel *w, uint32_t sec) {
    return w->slot[sec & (WHEEL_SLOTS - 1)];
}

#endif
