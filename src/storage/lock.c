#include "storage/lock.h"

#include <stdlib.h>

struct lock_stripes *lock_create(unsigned power, bool on) {
    size_t n = (size_t)1 << power;
    struct lock_stripes *l = malloc(sizeof(*l) + n * sizeof(struct mtx));
    if (l == NULL)
        return NULL;
    l->mask = n - 1;
    for (size_t i = 0; i < n; i++)
        mtx_init(&l->m[i], on);
    return l;
}

void lock_destroy(struct lock_stripes **lp) {
    struct lock_stripes *l = *lp;
    if (l == NULL)
        return;
    for (uint64_t i = 0; i <= l->mask; i++)
        mtx_destroy(&l->m[i]);
    free(l);
    *lp = NULL;
}

void lock_all(struct lock_stripes *l) {
    for (uint64_t i = 0; i <= l->mask; i++)
        mtx_lock(&l->m[i]);
}

void lock_all_release(struct lock_stripes *l) {
    for (uint64_t i = 0; i <= l->mask; i++)
        mtx_unlock(&l->m[i]);
}

bool lock_try(struct lock_stripes *l, uint64_t hv) {
    return mtx_trylock(&l->m[hv & l->mask]);
}
