#include "storage/lock.h"

#include <stdlib.h>

struct lock_stripes {
    uint64_t mask;
    pthread_mutex_t m[];
};

struct lock_stripes *lock_create(unsigned power) {
    size_t n = (size_t)1 << power;
    struct lock_stripes *l = malloc(sizeof(*l) + n * sizeof(pthread_mutex_t));
    if (l == NULL)
        return NULL;
    l->mask = n - 1;
    for (size_t i = 0; i < n; i++)
        pthread_mutex_init(&l->m[i], NULL);
    return l;
}

void lock_destroy(struct lock_stripes **lp) {
    struct lock_stripes *l = *lp;
    if (l == NULL)
        return;
    for (uint64_t i = 0; i <= l->mask; i++)
        pthread_mutex_destroy(&l->m[i]);
    free(l);
    *lp = NULL;
}

pthread_mutex_t *lock_of(struct lock_stripes *l, uint64_t hv) {
    return &l->m[hv & l->mask];
}

void lock_all(struct lock_stripes *l) {
    for (uint64_t i = 0; i <= l->mask; i++)
        pthread_mutex_lock(&l->m[i]);
}

void lock_all_release(struct lock_stripes *l) {
    for (uint64_t i = 0; i <= l->mask; i++)
        pthread_mutex_unlock(&l->m[i]);
}

bool lock_try(struct lock_stripes *l, uint64_t hv) {
    return pthread_mutex_trylock(&l->m[hv & l->mask]) == 0;
}
