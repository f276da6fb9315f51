/*
 * test_ghost.c -- the ghost list (ghost.h) against a plain array model.
 */
#include <stdlib.h>

#include "harness.h"
#include "storage/ghost.h"

TEST(ghost_fifo_order_and_membership) {
    struct ghost *g = ghost_create();
    ASSERT(!ghost_contains(g, 1));
    ASSERT(!ghost_remove(g, 1));
    ASSERT(!ghost_drop_oldest(g));
    for (uint64_t h = 1; h <= 5; h++)
        ASSERT(ghost_add(g, h));
    ASSERT(ghost_add(g, 1));            /* present: keeps its place */
    ASSERT_EQ(ghost_count(g), 5);
    ghost_trim(g, 3);                   /* drops 1 and 2, the oldest */
    ASSERT(!ghost_contains(g, 1) && !ghost_contains(g, 2));
    ASSERT(ghost_contains(g, 3) && ghost_contains(g, 5));
    ASSERT(ghost_remove(g, 4));
    ASSERT(ghost_drop_oldest(g));       /* 3 */
    ASSERT(!ghost_contains(g, 3) && ghost_contains(g, 5));
    ASSERT_EQ(ghost_count(g), 1);
    ghost_destroy(&g);
    ASSERT(g == NULL);
    ghost_destroy(&g);
}

/*
 * Random adds, removes and trims against an array kept in insertion
 * order; hashes share low bits on purpose so probe runs collide and
 * backward-shift deletion is exercised.
 */
TEST(ghost_matches_a_model) {
    struct ghost *g = ghost_create();
    enum { N = 3000 };
    uint64_t *model = malloc(sizeof(uint64_t) * 200000);
    size_t n = 0;
    uint64_t s = 88172645463325252ULL;
    for (int i = 0; i < 200000; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        uint64_t h = ((s >> 20) % N) << 8 | (s & 3);
        int op = (int)(s % 10);
        size_t at = n;
        for (size_t j = 0; j < n; j++)
            if (model[j] == h)
                at = j;
        if (op < 6) {
            ASSERT(ghost_add(g, h));
            if (at == n)
                model[n++] = h;
        } else if (op < 9) {
            ASSERT_EQ(ghost_remove(g, h), at < n);
            if (at < n) {
                for (size_t j = at + 1; j < n; j++)
                    model[j - 1] = model[j];
                n--;
            }
        } else {
            size_t max = n / 2;
            ghost_trim(g, max);
            size_t drop = n - max;
            for (size_t j = drop; j < n; j++)
                model[j - drop] = model[j];
            n = max;
        }
        ASSERT_EQ(ghost_count(g), n);
        if (i % 1000 == 0)
            for (size_t j = 0; j < n; j++)
                ASSERT(ghost_contains(g, model[j]));
    }
    free(model);
    ghost_destroy(&g);
}

int main(void) { return RUN_TESTS(); }
