/*
 * wheel.c -- the transient-item wheel's lists (wheel.h).  The slab back end
 * (item.c) decides which items enter and reclaims the slots second by
 * second; this file only keeps the lists.
 */
#include <stdlib.h>

#include "storage/wheel.h"

bool wheel_init(struct wheel *w, uint32_t now) {
    w->slot = calloc(WHEEL_SLOTS, sizeof(*w->slot));
    w->next = now;
    w->n = 0;
    return w->slot != NULL;
}

void wheel_deinit(struct wheel *w) {
    free(w->slot);
    w->slot = NULL;
}

void wheel_add(struct wheel *w, struct item *it) {
    struct item **head = &w->slot[it->exptime & (WHEEL_SLOTS - 1)];
    it->prev = NULL;
    it->next = *head;
    if (*head != NULL)
        (*head)->prev = it;
    *head = it;
    w->n++;
}

/*
 * The head of a slot has no prev, so its slot is found from its exptime;
 * a touch may have changed that since it was added, and then the slots
 * are searched (rare: a touched transient item that is first in its slot).
 */
void wheel_remove(struct wheel *w, struct item *it) {
    if (it->prev != NULL) {
        it->prev->next = it->next;
    } else {
        struct item **head = &w->slot[it->exptime & (WHEEL_SLOTS - 1)];
        for (unsigned i = 0; *head != it && i < WHEEL_SLOTS; i++)
            head = &w->slot[i];
        *head = it->next;
    }
    if (it->next != NULL)
        it->next->prev = it->prev;
    it->prev = it->next = NULL;
    w->n--;
}
