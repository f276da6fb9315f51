/*
 * test_seg_index.c -- the segment engine's hash index: every key found
 * where it was put through growth (linear hashing, one bucket at a time)
 * and overflow chains, a property test against a reference set, threads
 * inserting, deleting and finding while another thread grows the table,
 * and its bytes per item at the reference load (1,000,000 keys).
 *
 * Keys are numbers; an entry's location is the key itself, its hash a
 * mix of it, so match and rehash need no store.
 */
#include "harness.h"
#include "storage/seg_index.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t mix(uint64_t x) {          /* splitmix64's finaliser */
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static uint64_t rehash(void *arg, uint64_t loc) {
    (void)arg;
    return mix(loc);
}

static bool match(void *arg, uint64_t loc) { return loc == *(const uint64_t *)arg; }

static uint64_t *find(struct seg_index *ix, uint64_t key) {
    return seg_index_find_locked(ix, mix(key), match, &key);
}

TEST(million_keys_found_through_growth) {
    struct lock_stripes *locks = lock_create(4, false);
    struct seg_index *ix = seg_index_create(4, locks, rehash, NULL);
    ASSERT(ix != NULL);
    const uint64_t n = 1000000;
    for (uint64_t k = 1; k <= n; k++) {
        ASSERT(seg_index_insert_locked(ix, mix(k), k));
        seg_index_step(ix, 4);
    }
    uint64_t hinted = 0;
    for (uint64_t k = 1; k <= n; k++) {
        uint64_t *s = find(ix, k);
        if (s == NULL || seg_index_loc(*s) != k) {
            TH_FAIL("key %llu not found", (unsigned long long)k);
            break;
        }
        /* the read-ahead (tag compare of both head buckets, any slot) */
        uint64_t hv = mix(k), loc, seq, *slot;
        if (seg_index_prefetch(ix, &hv, 1, &loc, &slot, &seq) != 0) {
            TH_FAIL("key %llu looked absent", (unsigned long long)k);
            break;
        }
        hinted += slot == s && loc == k;
    }
    /* all but those behind an equal tag or in a chain: a wrong slot number would miss most */
    printf("  read-ahead: the key's own slot for %.2f%% of them\n", 100.0 * hinted / n);
    ASSERT(hinted > n * 9 / 10);
    ASSERT(find(ix, n + 1) == NULL && find(ix, 0) == NULL);
    struct seg_index_stats st;
    seg_index_stats(ix, &st);
    double per = (double)st.bytes / (double)n;
    printf("  1,000,000 keys: %llu buckets, %llu overflow, %llu splits, %.2f bytes/item\n",
           (unsigned long long)st.buckets, (unsigned long long)st.overflow,
           (unsigned long long)st.splits, per);
    ASSERT_EQ(st.items, n);
    ASSERT(per < 10.5);             /* the 135-byte budget leaves 12 for the index */
    /* every other key removed: those gone, the rest found */
    for (uint64_t k = 2; k <= n; k += 2)
        seg_index_remove_locked(ix, find(ix, k));
    for (uint64_t k = 1; k <= n; k++) {
        if ((find(ix, k) != NULL) != (k % 2 == 1)) {
            TH_FAIL("key %llu after the removals", (unsigned long long)k);
            break;
        }
    }
    seg_index_destroy(&ix);
    lock_destroy(&locks);
}

/*
 * Twenty keys with one tag and one pair of buckets (hashes alike but for
 * bits the index does not read): every slot's tag matches, so each find
 * must try the candidates in turn, into the overflow chain; a key of
 * another tag among them is found by its own; the read-ahead gives a
 * slot of the tag asked for, and none for a tag that is not there.
 */
static const uint64_t tag_a = 0xabcULL << 52, tag_b = 0x123ULL << 52;

/* (a cuckoo move asks for the hash of what it moves) */
static uint64_t rehash_alike(void *arg, uint64_t loc) {
    (void)arg;
    return loc == 99 ? tag_b | 5 : tag_a | loc << 32 | 5;
}

TEST(keys_sharing_a_tag_and_buckets) {
    struct lock_stripes *locks = lock_create(2, false);
    struct seg_index *ix = seg_index_create(4, locks, rehash_alike, NULL);
    ASSERT(ix != NULL);
    const uint64_t tag = tag_a, other = tag_b;
    for (uint64_t k = 1; k <= 20; k++)
        ASSERT(seg_index_insert_locked(ix, tag | k << 32 | 5, k));
    ASSERT(seg_index_insert_locked(ix, other | 5, 99));
    for (uint64_t k = 1; k <= 20; k++) {
        uint64_t *s = seg_index_find_locked(ix, tag | k << 32 | 5, match, &k);
        ASSERT(s != NULL && seg_index_loc(*s) == k);
    }
    uint64_t k = 99, none = 21;
    uint64_t *s = seg_index_find_locked(ix, other | 5, match, &k);
    ASSERT(s != NULL && seg_index_loc(*s) == 99);
    ASSERT(seg_index_find_locked(ix, tag | 5, match, &none) == NULL);
    ASSERT(seg_index_find_locked(ix, other | 5, match, &none) == NULL);
    uint64_t hv[3] = {tag | 7ULL << 32 | 5, other | 5, (0x777ULL << 52) | 5}, loc[3];
    uint64_t *slot[3];
    uint64_t seq[3];
    uint64_t absent = seg_index_prefetch(ix, hv, 3, loc, slot, seq);
    ASSERT(slot[0] != NULL && (*slot[0] >> 52) == 0xabc && loc[0] >= 1 && loc[0] <= 20);
    ASSERT(slot[1] != NULL && loc[1] == 99);
    ASSERT(slot[2] == NULL && loc[2] == SEG_LOC_MASK + 1);
    /* no slot of its tag, but a chain the read-ahead does not follow: not known absent */
    ASSERT_EQ(absent, 0);
    seg_index_destroy(&ix);
    lock_destroy(&locks);
}

TEST(slot_fields) {
    struct lock_stripes *locks = lock_create(2, false);
    struct seg_index *ix = seg_index_create(2, locks, rehash, NULL);
    uint64_t key = SEG_LOC_MASK;    /* the largest location */
    ASSERT(seg_index_insert_locked(ix, mix(key), key));
    uint64_t *s = find(ix, key);
    ASSERT(s != NULL);
    ASSERT_EQ(seg_index_loc(*s), SEG_LOC_MASK);
    ASSERT_EQ(seg_index_freq(*s), 0);
    seg_index_set_freq_locked(s, 300);
    ASSERT_EQ(seg_index_freq(*s), SEG_FREQ_MAX);
    seg_index_set_freq_locked(s, 7);
    seg_index_move_locked(s, 12345);
    ASSERT_EQ(seg_index_freq(*s), 7);
    ASSERT_EQ(seg_index_loc(*s), 12345);
    uint64_t moved = 12345;
    ASSERT(seg_index_find_locked(ix, mix(key), match, &moved) == s);   /* tag kept */
    seg_index_destroy(&ix);
    lock_destroy(&locks);
}

/*
 * A slot found before is used again only while it still holds that
 * location: not once the entry is removed or moved, nor when the slot is
 * a chain's link whose bits look like the location.
 */
TEST(a_stale_hint_is_refused) {
    struct lock_stripes *locks = lock_create(2, false);
    struct seg_index *ix = seg_index_create(2, locks, rehash_alike, NULL);
    ASSERT(ix != NULL);
    ASSERT(seg_index_still_locked(NULL, tag_a | 1ULL << 32 | 5, 1) == NULL);
    /* twenty keys of one tag and one home: two full heads, the rest down a chain */
    uint64_t *slot[21];
    for (uint64_t k = 1; k <= 20; k++)
        ASSERT(seg_index_insert_locked(ix, tag_a | k << 32 | 5, k));
    for (uint64_t k = 1; k <= 20; k++) {
        slot[k] = seg_index_find_locked(ix, tag_a | k << 32 | 5, match, &k);
        uint64_t hv = tag_a | k << 32 | 5;
        ASSERT(slot[k] != NULL && seg_index_still_locked(slot[k], hv, k) == slot[k]);
        ASSERT(seg_index_still_locked(slot[k], hv, k + 100) == NULL);
        ASSERT(seg_index_still_locked(slot[k], tag_b | k << 32 | 5, k) == NULL);   /* tag */
    }
    /* a link's value is an overflow index + 1 with no tag: never a location's entry */
    uint64_t *link = NULL;
    for (uint64_t k = 1; k <= 20 && link == NULL; k++) {
        uint64_t *last = (uint64_t *)((uintptr_t)slot[k] & ~(uintptr_t)63) + 7;
        if (*last != 0 && (*last >> 52) == 0)
            link = last;
    }
    ASSERT(link != NULL);
    ASSERT(seg_index_still_locked(link, tag_a | 5, seg_index_loc(*link)) == NULL);
    /* moved: the new location is there, the old one is not */
    seg_index_move_locked(slot[3], 300);
    ASSERT(seg_index_still_locked(slot[3], tag_a | 3ULL << 32 | 5, 3) == NULL);
    ASSERT(seg_index_still_locked(slot[3], tag_a | 3ULL << 32 | 5, 300) == slot[3]);
    /* removed, then the slot taken by another entry */
    seg_index_remove_locked(ix, slot[4]);
    ASSERT(seg_index_still_locked(slot[4], tag_a | 4ULL << 32 | 5, 4) == NULL);
    ASSERT(seg_index_insert_locked(ix, tag_a | 21ULL << 32 | 5, 21));
    uint64_t k21 = 21;
    uint64_t *s21 = seg_index_find_locked(ix, tag_a | 21ULL << 32 | 5, match, &k21);
    ASSERT(s21 != NULL && seg_index_still_locked(s21, tag_a | 21ULL << 32 | 5, 21) == s21);
    ASSERT(seg_index_still_locked(slot[4], tag_a | 4ULL << 32 | 5, 4) == NULL);
    seg_index_destroy(&ix);
    lock_destroy(&locks);
}

/* A key's read-ahead says "absent" until an entry enters or moves in its stripe's buckets. */
static bool absent_now(struct seg_index *ix, uint64_t key, uint64_t *seq) {
    uint64_t hv = mix(key), loc, *slot;
    return seg_index_prefetch(ix, &hv, 1, &loc, &slot, seq) == 1 && seg_index_absent(ix, hv, *seq);
}

TEST(absent_until_an_insert_or_split_in_its_stripe) {
    struct lock_stripes *locks = lock_create(2, false);
    struct seg_index *ix = seg_index_create(4, locks, rehash, NULL);   /* 16 buckets */
    /* keys in stripes 0 and 1 */
    uint64_t a = 1, b = 1;
    while ((mix(a) & 3) != 0)
        a++;
    while ((mix(b) & 3) != 1)
        b++;
    uint64_t qa, qb;
    ASSERT(absent_now(ix, a, &qa) && absent_now(ix, b, &qb));
    ASSERT(seg_index_insert_locked(ix, mix(a), a));
    ASSERT(!seg_index_absent(ix, mix(a), qa));  /* a itself came in */
    ASSERT(seg_index_absent(ix, mix(b), qb));   /* another stripe's insert */
    ASSERT(!absent_now(ix, a, &qa));            /* present */
    /* an insert of another key of a's stripe ends it too; removals and moves do not */
    uint64_t c = a + 1;
    while ((mix(c) & 3) != 0)
        c++;
    ASSERT(absent_now(ix, c, &qa));
    ASSERT(seg_index_insert_locked(ix, mix(c + 1000003), c + 1000003));
    if ((mix(c + 1000003) & 3) == 0)
        ASSERT(!seg_index_absent(ix, mix(c), qa));
    ASSERT(absent_now(ix, c, &qa));
    seg_index_move_locked(find(ix, a), a);
    seg_index_remove_locked(ix, find(ix, a));
    ASSERT(seg_index_absent(ix, mix(c), qa));
    /* a split: of four stripes' absent keys, the split bucket's alone stops being known */
    for (uint64_t k = 10000000; k < 10000000 + 116; k++)  /* past 7/8 of 16 buckets */
        ASSERT(seg_index_insert_locked(ix, mix(k), k));
    uint64_t key[4];
    uint64_t q[4];
    for (uint64_t s = 0, k = 20000000; s < 4; s++) {
        while (((mix(k) & 3) != s || !absent_now(ix, k, &q[s])) && k < 20100000)
            k++;
        ASSERT(k < 20100000);
        key[s] = k++;
    }
    ASSERT_EQ(seg_index_step(ix, 1), 1);
    int known = 0;
    for (int s = 0; s < 4; s++)
        known += seg_index_absent(ix, mix(key[s]), q[s]);
    ASSERT_EQ(known, 3);
    seg_index_destroy(&ix);
    lock_destroy(&locks);
}

/* Random inserts, removals and lookups against a reference set, growth between them. */
TEST(property_against_a_reference_set) {
    struct lock_stripes *locks = lock_create(3, false);
    struct seg_index *ix = seg_index_create(3, locks, rehash, NULL);
    enum { KEYS = 20000 };
    static bool in[KEYS];
    uint64_t rng = 42;
    for (int op = 0; op < 400000; op++) {
        rng = mix(rng);
        uint64_t k = 1 + rng % (KEYS - 1);
        uint64_t *s = find(ix, k);
        if ((s != NULL) != in[k]) {
            TH_FAIL("op %d: key %llu found %d, wanted %d", op, (unsigned long long)k, s != NULL,
                    in[k]);
            break;
        }
        if (in[k] && (rng >> 40) % 3 == 0) {
            seg_index_remove_locked(ix, s);
            in[k] = false;
        } else if (!in[k]) {
            ASSERT(seg_index_insert_locked(ix, mix(k), k));
            in[k] = true;
        }
        if (op % 7 == 0)
            seg_index_step(ix, 1);
    }
    seg_index_destroy(&ix);
    lock_destroy(&locks);
}

/*
 * Threads on their own keys (under their stripes) while another grows the
 * index.  Before each step a worker also reads its key ahead with no lock:
 * others' inserts (cuckoo moves) and splits move its entries meanwhile,
 * and a key it holds must never be said absent.
 */
struct worker {
    struct seg_index *ix;
    struct lock_stripes *locks;
    uint64_t first;
    int errors;
    int absent;                     /* keys it does not hold, known absent with no lock */
};

static void *work(void *arg) {
    struct worker *w = arg;
    enum { N = 30000 };
    bool *in = calloc(N, sizeof(*in));
    uint64_t rng = w->first;
    for (int op = 0; op < 300000; op++) {
        rng = mix(rng);
        uint64_t k = w->first + rng % N;
        uint64_t hv = mix(k), loc, *hint;
        uint64_t seq;
        if (seg_index_prefetch(w->ix, &hv, 1, &loc, &hint, &seq) == 1 &&
            seg_index_absent(w->ix, hv, seq)) {
            if (in[k - w->first])
                w->errors++;
            w->absent++;
        }
        struct mtx *m = lock_of(w->locks, hv);
        mtx_lock(m);
        uint64_t *s = seg_index_find_locked(w->ix, hv, match, &k);
        if ((s != NULL) != in[k - w->first])
            w->errors++;
        else if (s != NULL && (rng >> 50) % 2 == 0) {
            seg_index_remove_locked(w->ix, s);
            in[k - w->first] = false;
        } else if (s == NULL) {
            if (seg_index_insert_locked(w->ix, hv, k))
                in[k - w->first] = true;
        }
        mtx_unlock(m);
    }
    for (uint64_t k = w->first; k < w->first + N; k++) {
        uint64_t hv = mix(k);
        struct mtx *m = lock_of(w->locks, hv);
        mtx_lock(m);
        if ((seg_index_find_locked(w->ix, hv, match, &k) != NULL) != in[k - w->first])
            w->errors++;
        mtx_unlock(m);
    }
    free(in);
    return NULL;
}

static _Atomic int growing;

static void *grow(void *arg) {
    struct seg_index *ix = arg;
    while (atomic_load(&growing))
        seg_index_step(ix, 8);
    return NULL;
}

TEST(threads_while_growing) {
    struct lock_stripes *locks = lock_create(4, true);
    struct seg_index *ix = seg_index_create(4, locks, rehash, NULL);
    struct worker w[4];
    pthread_t t[4], g;
    atomic_store(&growing, 1);
    pthread_create(&g, NULL, grow, ix);
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.ix = ix, .locks = locks, .first = 1 + (uint64_t)i * 1000000};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    atomic_store(&growing, 0);
    pthread_join(g, NULL);
    struct seg_index_stats st;
    seg_index_stats(ix, &st);
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(w[i].errors, 0);
        ASSERT(w[i].absent > 1000);
    }
    ASSERT(st.splits > 0);
    seg_index_destroy(&ix);
    lock_destroy(&locks);
}

int main(void) { return RUN_TESTS(); }
