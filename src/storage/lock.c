#include "storage/lock.h"

#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static void futex(_Atomic uint32_t *addr, int op, uint32_t val) {
    syscall(SYS_futex, (uint32_t *)addr, op, val, NULL, NULL, 0);
}

/* The lock was taken: mark it waited for (2) and sleep until it is free. */
void mtx_lock_wait(struct mtx *x) {
    while (atomic_exchange_explicit(&x->v, 2, memory_order_acquire) != 0)
        futex(&x->v, FUTEX_WAIT_PRIVATE, 2);
}

/* Someone may wait (the word was 2): free it and wake one. */
void mtx_unlock_wake(struct mtx *x) {
    atomic_store_explicit(&x->v, 0, memory_order_release);
    futex(&x->v, FUTEX_WAKE_PRIVATE, 1);
}

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
