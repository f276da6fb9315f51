/*
 * test_evict_ref.c -- LRU, FIFO and CLOCK against brute-force references
 * on random traces, request by request, both through the policy seam
 * (tcache) and through a real engine of the same capacity.
 *
 * The references keep the cache in a plain array, oldest first, and do
 * what the textbook says with linear scans: nothing shared with the
 * policies' code.
 */
#include "evict_test.h"
#include "harness.h"

struct ref {
    int kind;                   /* 0 LRU, 1 FIFO, 2 CLOCK (max counter) */
    unsigned max;
    size_t cap, n;
    unsigned key[512], cnt[512];
};

static bool ref_get(struct ref *r, unsigned k) {
    for (size_t i = 0; i < r->n; i++) {
        if (r->key[i] != k)
            continue;
        if (r->kind == 0) {             /* LRU: to the newest end */
            memmove(&r->key[i], &r->key[i + 1], (r->n - i - 1) * sizeof(unsigned));
            r->key[r->n - 1] = k;
        } else if (r->kind == 2 && r->cnt[i] < r->max) {
            r->cnt[i]++;
        }
        return true;
    }
    if (r->n == r->cap) {
        if (r->kind == 2) {             /* CLOCK: counted oldest go round again */
            while (r->cnt[0] > 0) {
                unsigned kk = r->key[0], c = r->cnt[0] - 1;
                memmove(&r->key[0], &r->key[1], (r->n - 1) * sizeof(unsigned));
                memmove(&r->cnt[0], &r->cnt[1], (r->n - 1) * sizeof(unsigned));
                r->key[r->n - 1] = kk;
                r->cnt[r->n - 1] = c;
            }
        }
        memmove(&r->key[0], &r->key[1], (r->n - 1) * sizeof(unsigned));
        memmove(&r->cnt[0], &r->cnt[1], (r->n - 1) * sizeof(unsigned));
        r->n--;
    }
    r->key[r->n] = k;
    r->cnt[r->n] = 0;
    r->n++;
    return false;
}

static const struct {
    const char *policy;
    int kind;
    unsigned max;
} cases[] = {
    {"lru-exact", 0, 0}, {"fifo", 1, 0}, {"clock", 2, 1}, {"clock2", 2, 3},
};

/* Keys from [0, keys), uniform or skewed toward small keys. */
static unsigned draw(uint64_t *s, unsigned keys, bool skew) {
    uint64_t x = test_rand(s) % keys;
    return skew ? (unsigned)(x * x / keys) : (unsigned)x;
}

TEST(policies_match_references_through_the_seam) {
    static const size_t caps[] = {1, 2, 3, 5, 8, 16, 50};
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
        for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++)
            for (int skew = 0; skew < 2; skew++) {
                uint64_t seed = 0x1234567 + k * 7 + (uint64_t)skew;
                struct tcache *c = tc_new(cases[ci].policy, caps[k]);
                struct ref r = {.kind = cases[ci].kind, .max = cases[ci].max, .cap = caps[k]};
                unsigned keys = (unsigned)caps[k] * 3 + 2;
                for (int i = 0; i < 3000; i++) {
                    unsigned key = draw(&seed, keys, skew);
                    bool want = ref_get(&r, key), got = tc_get(c, key);
                    if (want != got)
                        TH_FAIL("%s cap %zu skew %d request %d key %u: ref %s, policy %s",
                                cases[ci].policy, caps[k], skew, i, key, want ? "hit" : "miss",
                                got ? "hit" : "miss");
                }
                tc_free(c);
            }
}

/* Odd sizes run the engine single-threaded (its locks off, as in cellar-sim). */
TEST(policies_match_references_through_the_engine) {
    static const size_t caps[] = {1, 4, 31, 200, 7, 64};
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
        for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
            uint64_t seed = 0xabcdef + k;
            struct obj_engine o;
            ASSERT(obj_engine_open_mode(&o, cases[ci].policy, caps[k], caps[k] % 2 == 1));
            struct ref r = {.kind = cases[ci].kind, .max = cases[ci].max, .cap = caps[k]};
            unsigned keys = (unsigned)caps[k] * 2 + 3;
            for (int i = 0; i < 5000; i++) {
                unsigned key = draw(&seed, keys, true);
                bool want = ref_get(&r, key), got = obj_engine_get(&o, key);
                if (want != got)
                    TH_FAIL("%s cap %zu request %d key %u: ref %s, engine %s",
                            cases[ci].policy, caps[k], i, key, want ? "hit" : "miss",
                            got ? "hit" : "miss");
            }
            struct engine_stats st;
            engine_stats(o.e, &st);
            ASSERT_EQ(st.curr_items, caps[k]);
            obj_engine_close(&o);
        }
}

int main(void) { return RUN_TESTS(); }
