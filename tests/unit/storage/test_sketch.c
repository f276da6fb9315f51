/*
 * test_sketch.c -- the 4-bit count-min sketch (sketch.h).
 */
#include "harness.h"
#include "storage/ht.h"
#include "storage/sketch.h"

static uint64_t h_of(unsigned k) {
    char key[16];
    int n = snprintf(key, sizeof(key), "key%u", k);
    return ht_hash(key, (size_t)n);
}

TEST(sketch_counts_and_saturates) {
    struct sketch *s = sketch_create();
    sketch_increment(s, h_of(1));           /* no table yet: ignored */
    ASSERT_EQ(sketch_estimate(s, h_of(1)), 0);
    ASSERT(sketch_ensure(s, 1000));
    ASSERT_EQ(sketch_words(s), 1024);
    for (int i = 0; i < 5; i++)
        sketch_increment(s, h_of(1));
    sketch_increment(s, h_of(2));
    ASSERT_EQ(sketch_estimate(s, h_of(1)), 5);
    ASSERT_EQ(sketch_estimate(s, h_of(2)), 1);
    ASSERT_EQ(sketch_estimate(s, h_of(3)), 0);
    for (int i = 0; i < 40; i++)
        sketch_increment(s, h_of(1));
    ASSERT_EQ(sketch_estimate(s, h_of(1)), SKETCH_COUNTER_MAX);
    ASSERT(sketch_ensure(s, 500));          /* smaller: keeps the table */
    ASSERT_EQ(sketch_estimate(s, h_of(1)), SKETCH_COUNTER_MAX);
    sketch_destroy(&s);
    ASSERT(s == NULL);
}

/*
 * After 10 x n counted increments every counter is halved (the other keys
 * share counters with key 7 in so small a table, so compare with what key 7
 * showed just before the reset).
 */
TEST(sketch_halves_after_the_sample) {
    struct sketch *s = sketch_create();
    ASSERT(sketch_ensure(s, 64));
    for (int i = 0; i < 9; i++)
        sketch_increment(s, h_of(7));
    ASSERT_EQ(sketch_estimate(s, h_of(7)), 9);
    for (unsigned k = 100; k < 100 + 630; k++)
        sketch_increment(s, h_of(k));
    unsigned before = sketch_estimate(s, h_of(7));
    ASSERT(before >= 9);
    sketch_increment(s, h_of(99));          /* the 640th: reset */
    unsigned after = sketch_estimate(s, h_of(7));
    ASSERT(after == before / 2 || after == (before + 1) / 2);
    sketch_destroy(&s);
}

/* Few collisions: on 1000 keys in a table sized for 1000, most are exact. */
TEST(sketch_is_mostly_exact_when_sized) {
    struct sketch *s = sketch_create();
    ASSERT(sketch_ensure(s, 1000));
    for (unsigned k = 0; k < 1000; k++)
        for (unsigned i = 0; i < k % 4; i++)
            sketch_increment(s, h_of(k));
    int exact = 0;
    for (unsigned k = 0; k < 1000; k++) {
        unsigned e = sketch_estimate(s, h_of(k));
        ASSERT(e >= k % 4);                 /* never under */
        exact += e == k % 4;
    }
    ASSERT(exact > 900);
    sketch_destroy(&s);
}

int main(void) { return RUN_TESTS(); }
