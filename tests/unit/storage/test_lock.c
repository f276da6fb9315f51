/*
 * test_lock.c -- the futex mutex (struct mtx) and the stripes.
 *
 * Eight threads on two cores increment one plain counter under one mutex:
 * with preemption inside the critical section the sleeping path is taken
 * too, and a lost update or a missed wake-up shows as a wrong total or a
 * hang (the harness's time limit).
 */
#include <pthread.h>

#include "harness.h"
#include "storage/lock.h"

#define THREADS 8
#define ROUNDS 200000

static struct mtx mu;
static uint64_t counter;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        mtx_lock(&mu);
        uint64_t v = counter;
        if ((i & 1023) == 0)
            sched_yield();          /* hold it across a reschedule now and then */
        counter = v + 1;
        mtx_unlock(&mu);
    }
    return NULL;
}

TEST(mutex_excludes_under_contention) {
    mtx_init(&mu, true);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        ASSERT(pthread_create(&th[i], NULL, worker, NULL) == 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    ASSERT_U64(counter, (uint64_t)THREADS * ROUNDS);
    ASSERT_EQ(atomic_load(&mu.v), 0);
    mtx_destroy(&mu);
}

TEST(trylock_and_off_mutexes) {
    struct mtx m;
    mtx_init(&m, true);
    ASSERT(mtx_trylock(&m));
    ASSERT(!mtx_trylock(&m));
    mtx_unlock(&m);
    ASSERT(mtx_trylock(&m));
    mtx_unlock(&m);
    struct mtx off;
    mtx_init(&off, false);          /* a single-threaded owner's: never blocks */
    mtx_lock(&off);
    ASSERT(mtx_trylock(&off));
    mtx_unlock(&off);
    ASSERT_EQ(atomic_load(&off.v), 0);
}

TEST(stripes_follow_the_hash) {
    struct lock_stripes *l = lock_create(4, true);
    ASSERT(lock_of(l, 3) == lock_of(l, 3 + 16));
    ASSERT(lock_of(l, 3) != lock_of(l, 4));
    ASSERT(lock_try(l, 5));
    ASSERT(!lock_try(l, 5 + 16));
    mtx_unlock(lock_of(l, 5));
    lock_all(l);
    ASSERT(!lock_try(l, 9));
    lock_all_release(l);
    ASSERT(lock_try(l, 9));
    mtx_unlock(lock_of(l, 9));
    lock_destroy(&l);
}

int main(void) { return RUN_TESTS(); }
