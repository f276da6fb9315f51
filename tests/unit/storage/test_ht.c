/*
 * test_ht.c -- the hash table on its own: find/insert/delete, and
 * incremental doubling with every key found after every single step.
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "storage/ht.h"

#define N 200

static struct item *mkitem(int i) {
    char key[32];
    int n = snprintf(key, sizeof(key), "key:%d", i);
    struct item *it = calloc(1, sizeof(struct item) + (size_t)n);
    memcpy(it->data, key, (size_t)n);
    it->nkey = (uint8_t)n;
    return it;
}

static struct item *find(struct ht *h, struct lock_stripes *l, struct item *it) {
    uint64_t hv = ht_hash(it->data, it->nkey);
    mtx_lock(lock_of(l, hv));
    struct item *r = ht_find_locked(h, hv, it->data, it->nkey);
    mtx_unlock(lock_of(l, hv));
    return r;
}

static void insert(struct ht *h, struct lock_stripes *l, struct item *it) {
    uint64_t hv = ht_hash(it->data, it->nkey);
    mtx_lock(lock_of(l, hv));
    ht_insert_locked(h, it, hv);
    mtx_unlock(lock_of(l, hv));
}

static void delete(struct ht *h, struct lock_stripes *l, struct item *it) {
    uint64_t hv = ht_hash(it->data, it->nkey);
    mtx_lock(lock_of(l, hv));
    ht_delete_locked(h, it, hv);
    mtx_unlock(lock_of(l, hv));
}

TEST(find_insert_delete) {
    struct lock_stripes *l = lock_create(2, true);
    struct ht *h = ht_create(4, l);
    struct item *a = mkitem(1), *b = mkitem(2);
    ASSERT(find(h, l, a) == NULL);
    insert(h, l, a);
    insert(h, l, b);
    ASSERT(find(h, l, a) == a);
    ASSERT(find(h, l, b) == b);
    delete(h, l, a);
    ASSERT(find(h, l, a) == NULL);
    ASSERT(find(h, l, b) == b);
    ASSERT_EQ(ht_bytes(h), 16 * sizeof(void *));
    ht_destroy(&h);
    lock_destroy(&l);
    free(a);
    free(b);
}

TEST(doubling_moves_bucket_by_bucket) {
    struct lock_stripes *l = lock_create(2, true);
    struct ht *h = ht_create(4, l);
    struct item *its[N + 1];
    for (int i = 0; i < N; i++)
        insert(h, l, its[i] = mkitem(i));
    ASSERT(ht_expand_start(h));
    ASSERT(ht_expanding(h));
    ASSERT(!ht_expand_start(h));
    ASSERT_EQ(ht_power(h), 5);
    ASSERT_EQ(ht_bytes(h), (32 + 16) * sizeof(void *));
    int steps = 0;
    while (ht_expanding(h)) {
        for (int i = 0; i < N; i++)
            if (its[i] != NULL && find(h, l, its[i]) != its[i])
                TH_FAIL("key %d lost after %d steps", i, steps);
        /* change the table between steps too */
        if (steps == 3) {
            delete(h, l, its[7]);
            free(its[7]);
            its[7] = NULL;
        }
        if (steps == 5)
            insert(h, l, its[N] = mkitem(N));
        ASSERT_EQ(ht_expand_step(h, 1), 1);
        steps++;
    }
    ASSERT_EQ(steps, 16);
    ASSERT_EQ(ht_bytes(h), 32 * sizeof(void *));
    for (int i = 0; i <= N; i++)
        if (its[i] != NULL && find(h, l, its[i]) != its[i])
            TH_FAIL("key %d lost at the end", i);
    ASSERT_EQ(ht_expand_step(h, 1), 0);
    ht_destroy(&h);
    lock_destroy(&l);
    for (int i = 0; i <= N; i++)
        free(its[i]);
}

static void count(struct item *it, uint64_t hv, void *arg) {
    (void)it, (void)hv;
    (*(int *)arg)++;
}

TEST(visit_walks_every_item_once_per_pass) {
    struct lock_stripes *l = lock_create(2, true);
    struct ht *h = ht_create(4, l);
    struct item *its[N];
    for (int i = 0; i < N; i++)
        insert(h, l, its[i] = mkitem(i));
    uint64_t cursor = 0;
    bool wrapped = false;
    int seen = 0, calls = 0;
    while (!wrapped) {
        ht_visit(h, &cursor, 10, &wrapped, count, &seen);
        calls++;
    }
    ASSERT_EQ(seen, N);
    ASSERT(calls > 1);
    ASSERT_EQ(cursor, 0);
    ht_destroy(&h);
    lock_destroy(&l);
    for (int i = 0; i < N; i++)
        free(its[i]);
}

int main(void) { return RUN_TESTS(); }
