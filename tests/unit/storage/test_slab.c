/*
 * test_slab.c -- size classes and page accounting.
 *
 * Class tables are checked against memcached 1.6.18's own (`memcached -vv`
 * prints them): with memcached's 48-byte header as min_chunk - chunk_min
 * the tables must match exactly.
 */
#include <stdlib.h>

#include "harness.h"
#include "storage/slab.h"

#define MiB (1024u * 1024u)

static struct slab *mk(double f, uint32_t min_chunk, size_t limit) {
    struct slab_config c = {
        .mem_limit = limit, .growth_factor = f, .min_chunk = min_chunk,
        .page_size = MiB, .chunk_max = MiB / 2,
    };
    return slab_create(&c);
}

static int same_table(struct slab *s, const uint32_t *want, unsigned n) {
    if (slab_nclasses(s) != n)
        return 0;
    for (unsigned i = 0; i < n; i++)
        if (slab_chunk_size(s, i + 1) != want[i])
            return 0;
    return 1;
}

TEST(classes_match_memcached_default) {
    static const uint32_t want[] = {
        96, 120, 152, 192, 240, 304, 384, 480, 600, 752, 944, 1184, 1480, 1856,
        2320, 2904, 3632, 4544, 5680, 7104, 8880, 11104, 13880, 17352, 21696,
        27120, 33904, 42384, 52984, 66232, 82792, 103496, 129376, 161720, 202152,
        252696, 315872, 394840, 524288};
    struct slab *s = mk(1.25, 48 + 48, 0);
    ASSERT(same_table(s, want, sizeof(want) / sizeof(want[0])));
    slab_destroy(&s);
    ASSERT(s == NULL);
}

TEST(classes_match_memcached_f2_n100) {
    static const uint32_t want[] = {152, 304, 608, 1216, 2432, 4864, 9728, 19456,
                                    38912, 77824, 155648, 524288};
    struct slab *s = mk(2, 48 + 100, 0);
    ASSERT(same_table(s, want, sizeof(want) / sizeof(want[0])));
    slab_destroy(&s);
}

TEST(classes_match_memcached_n5_f3) {
    static const uint32_t want[] = {56, 168, 504, 1512, 4536, 13608, 40824, 122472, 524288};
    struct slab *s = mk(3, 48 + 5, 0);
    ASSERT(same_table(s, want, sizeof(want) / sizeof(want[0])));
    slab_destroy(&s);
}

TEST(classes_capped_at_63_like_memcached) {
    struct slab *s = mk(1.05, 48 + 48, 0);
    ASSERT_EQ(slab_nclasses(s), 63);
    ASSERT_EQ(slab_chunk_size(s, 1), 96);
    ASSERT_EQ(slab_chunk_size(s, 62), 2824);
    ASSERT_EQ(slab_chunk_size(s, 63), 524288);
    slab_destroy(&s);
}

TEST(class_for_picks_smallest_fit) {
    struct slab *s = mk(1.25, 96, 0);
    ASSERT_EQ(slab_class_for(s, 1), 1);
    ASSERT_EQ(slab_class_for(s, 96), 1);
    ASSERT_EQ(slab_class_for(s, 97), 2);
    ASSERT_EQ(slab_class_for(s, 120), 2);
    ASSERT_EQ(slab_class_for(s, 394841), 39);
    ASSERT_EQ(slab_class_for(s, 524288), 39);
    ASSERT_EQ(slab_class_for(s, 524289), 0);
    slab_destroy(&s);
}

/* The small-size table and the search agree with a scan of every class. */
TEST(class_for_every_size_matches_a_scan) {
    static const double f[] = {1.01, 1.07, 1.25, 2.0, 3.0};
    static const uint32_t min[] = {8, 53, 104, 150};
    for (unsigned a = 0; a < sizeof(f) / sizeof(f[0]); a++)
        for (unsigned b = 0; b < sizeof(min) / sizeof(min[0]); b++) {
            struct slab *s = mk(f[a], min[b], 0);
            unsigned n = slab_nclasses(s);
            for (size_t size = 0; size <= 20000; size++) {
                unsigned want = 0;
                for (unsigned i = 1; i <= n && want == 0; i++)
                    if (slab_chunk_size(s, i) >= size)
                        want = i;
                if (slab_class_for(s, size) != want)
                    TH_FAIL("f %.2f min %u size %zu: %u, want %u", f[a], min[b], size,
                            slab_class_for(s, size), want);
            }
            ASSERT_EQ(slab_class_for(s, MiB / 2 + 1), 0);
            slab_destroy(&s);
        }
}

TEST(chunks_are_aligned_and_distinct) {
    struct slab *s = mk(1.25, 96, 0);
    char *a = slab_alloc(s, 1), *b = slab_alloc(s, 1);
    ASSERT(a != NULL && b != NULL);
    ASSERT_EQ((uintptr_t)a % 8, 0);
    ASSERT_EQ(b - a, 96);
    slab_free(s, 1, a);
    ASSERT(slab_alloc(s, 1) == a);          /* the free list is used first */
    struct slab_class_stats st;
    slab_class_stats(s, 1, &st);
    ASSERT_EQ(st.chunks_per_page, MiB / 96);
    ASSERT_EQ(st.total_pages, 1);
    ASSERT_EQ(st.used_chunks, 2);
    ASSERT_EQ(st.free_chunks, 0);
    ASSERT_EQ(st.free_chunks_end, MiB / 96 - 2);
    slab_destroy(&s);
}

TEST(pages_stop_at_the_limit) {
    struct slab *s = mk(1.25, 96, 4 * MiB);
    unsigned top = slab_nclasses(s);        /* 2 chunks of 512 KiB a page */
    int n = 0;
    while (slab_alloc(s, top) != NULL)
        n++;
    ASSERT_EQ(n, 8);
    ASSERT_EQ(slab_total_malloced(s), 4 * MiB);
    /* A class without pages may take its first one past the limit... */
    ASSERT(slab_alloc(s, 1) != NULL);
    ASSERT_EQ(slab_total_malloced(s), 5 * MiB);
    /* ...but only one. */
    for (unsigned i = 1; i < MiB / 96; i++)
        ASSERT(slab_alloc(s, 1) != NULL);
    ASSERT(slab_alloc(s, 1) == NULL);
    ASSERT_EQ(slab_total_malloced(s), 5 * MiB);
    slab_destroy(&s);
}

TEST(unlimited_when_limit_is_zero) {
    struct slab *s = mk(1.25, 96, 0);
    for (int i = 0; i < 6; i++)
        ASSERT(slab_alloc(s, slab_nclasses(s)) != NULL);
    ASSERT_EQ(slab_total_malloced(s), 3 * MiB);
    slab_destroy(&s);
}

int main(void) { return RUN_TESTS(); }
