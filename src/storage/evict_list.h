/*
 * evict_list.h -- what the policy files share: an intrusive list of items
 * and access to the policy's byte in each item (item->pbits).
 *
 * A list runs from head (newest, most recently inserted or moved) to tail
 * (oldest); it->next points toward the tail and it->prev toward the head,
 * so "prev" of an item is the one that will reach the tail after it.  A
 * list counts its items.  The links are the item's prev/next, which evict.h
 * gives to the policy while the item is linked; an item is on at most one
 * list at a time.
 *
 * pbits is atomic because hit() runs under the item lock only, while
 * link/unlink/bump/victim run under the class lock: both sides may change
 * bits of the same item at once, so every write is a read-modify-write
 * that keeps the other side's bits (evict_bits_update()).
 *
 * Header only, no allocation, no locking of its own: the caller holds the
 * class lock for every list operation.
 */
#ifndef CELLAR_STORAGE_EVICT_LIST_H
#define CELLAR_STORAGE_EVICT_LIST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "storage/item.h"

struct evict_list {
    struct item *head, *tail;
    uint64_t n;
};

static inline void evict_list_push_head(struct evict_list *l, struct item *it) {
    it->prev = NULL;
    it->next = l->head;
    if (l->head != NULL)
        l->head->prev = it;
    else
        l->tail = it;
    l->head = it;
    l->n++;
}

static inline void evict_list_push_tail(struct evict_list *l, struct item *it) {
    it->next = NULL;
    it->prev = l->tail;
    if (l->tail != NULL)
        l->tail->next = it;
    else
        l->head = it;
    l->tail = it;
    l->n++;
}

static inline void evict_list_remove(struct evict_list *l, struct item *it) {
    if (it->prev != NULL)
        it->prev->next = it->next;
    else
        l->head = it->next;
    if (it->next != NULL)
        it->next->prev = it->prev;
    else
        l->tail = it->prev;
    it->prev = it->next = NULL;
    l->n--;
}

static inline void evict_list_move_head(struct evict_list *l, struct item *it) {
    if (l->head == it)
        return;
    evict_list_remove(l, it);
    evict_list_push_head(l, it);
}

/* Moves it from list a to the head of list b. */
static inline void evict_list_transfer(struct evict_list *a, struct evict_list *b,
                                       struct item *it) {
    evict_list_remove(a, it);
    evict_list_push_head(b, it);
}

static inline uint8_t evict_bits(const struct item *it) {
    return atomic_load_explicit(&it->pbits, memory_order_relaxed);
}

/* Sets the bits under mask to val, keeping the others. */
static inline void evict_bits_update(struct item *it, uint8_t mask, uint8_t val) {
    uint8_t old = atomic_load_explicit(&it->pbits, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&it->pbits, &old,
                                                  (uint8_t)((old & ~mask) | (val & mask)),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

/*
 * Adds one to the counter held in the bits under mask (shifted by shift),
 * saturating at max.  Returns the new value.
 */
static inline unsigned evict_bits_incr(struct item *it, uint8_t mask, unsigned shift,
                                       unsigned max) {
    uint8_t old = atomic_load_explicit(&it->pbits, memory_order_relaxed);
    for (;;) {
        unsigned v = (old & mask) >> shift;
        if (v >= max)
            return v;
        uint8_t nv = (uint8_t)((old & ~mask) | (((v + 1) << shift) & mask));
        if (atomic_compare_exchange_weak_explicit(&it->pbits, &old, nv, memory_order_relaxed,
                                                  memory_order_relaxed))
            return v + 1;
    }
}

/* Subtracts one from such a counter unless it is 0.  Returns the old value. */
static inline unsigned evict_bits_decr(struct item *it, uint8_t mask, unsigned shift) {
    uint8_t old = atomic_load_explicit(&it->pbits, memory_order_relaxed);
    for (;;) {
        unsigned v = (old & mask) >> shift;
        if (v == 0)
            return 0;
        uint8_t nv = (uint8_t)((old & ~mask) | (((v - 1) << shift) & mask));
        if (atomic_compare_exchange_weak_explicit(&it->pbits, &old, nv, memory_order_relaxed,
                                                  memory_order_relaxed))
            return v;
    }
}

#endif
