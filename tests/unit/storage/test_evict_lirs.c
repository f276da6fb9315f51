/*
 * test_evict_lirs.c -- LIRS on hand-computed traces (Jiang & Zhang's
 * rules, libCacheSim's parameters), then against a brute-force reference
 * on random traces with deletes.
 *
 * Below C = 200 the resident HIR share Lhirs is 1 item, so a cache of 4
 * holds 3 LIR items and a Q of one.  Stacks are written top first:
 * L = LIR, h = resident HIR, n = non-resident HIR entry; Q front first.
 */
#include "evict_test.h"
#include "harness.h"

static struct tcache *tc_lirs(size_t cap) {
    struct tcache *c = tc_new("lirs", cap);
    if (c->p != &evict_lirs)
        abort();
    return c;
}

static unsigned key_of(const struct item *it) { return (unsigned)atoi(it->data + 1); }

/*
 * C = 4.  1..4 fill the cache, all LIR.  5: the first eviction splits: the
 * entry nearest the top beyond the LIR share (4) turns resident HIR and is
 * evicted at once, leaving 4n; so the first C - Lhirs keys (1 2 3) are LIR,
 * as in libCacheSim.  5 enters HIR: S 5h 4n 3L 2L 1L, Q [5].  1 2 3 hit;
 * 3 was the bottom, so pruning pops 4n and 5h (5 stays in Q): S 3L 2L 1L.
 * 6 evicts 5 (out of S: no entry).  5 evicts 6 (6n) and enters HIR; 4
 * evicts 5 (5n) and enters HIR (its entry was pruned).  1 2 3 still hit.
 */
TEST(lirs_cold_start_and_pruning) {
    struct tcache *c = tc_lirs(4);
    ASSERT_STR(tc_run(c, "1 2 3 4 5 1 2 3 6 5 4 1 2 3"), "MMMMMHHHMMMHHH");
    ASSERT_STR(c->evicted, "4 5 6 5");
    tc_free(c);
}

/*
 * C = 4, from S 5h 4n 3L 2L 1L, Q [5] (as above).
 *   5: a resident HIR in S: LIR at the top; four LIR is one too many, so
 *      the bottom LIR 1 leaves S for Q's end: S 5L 4n 3L 2L, Q [1].
 *   6: evicts 1 (out of S, no entry); S 6h 5L 4n 3L 2L, Q [6].
 *   1: evicts 6 (6n); 1 is new to S: S 1h 6n 5L 4n 3L 2L, Q [1].
 *   5 2: LIR hits; 3: the bottom moves up and pruning pops 4n 6n 1h:
 *      S 3L 2L 5L, Q [1].
 *   1: a resident HIR not in S: to the top of S, stays HIR: S 1h 3L 2L 5L.
 */
TEST(lirs_hir_hits_in_and_out_of_stack) {
    struct tcache *c = tc_lirs(4);
    ASSERT_STR(tc_run(c, "1 2 3 4 5 5 6 1 5 2 3 1"), "MMMMMHMMHHHH");
    ASSERT_STR(c->evicted, "4 1 6");
    /* 7 evicts 1, which leaves 1n in S (it was read while in Q) */
    ASSERT_STR(tc_run(c, "7"), "M");
    ASSERT_STR(c->evicted, "4 1 6 1");
    tc_free(c);
}

/*
 * Continuing to S 7h 1n 3L 2L 5L, Q [7]: 1 misses, evicts 7 (7n), and
 * comes back as LIR at the top; the bottom LIR 5 is demoted to Q:
 * S 1L 7n 3L 2L, Q [5].  5 hits (resident HIR, not in S).  The scan 8 9 10
 * only cycles Q (5, 8, 9 go); 1 2 3 stay.  5 is gone.
 */
TEST(lirs_non_resident_miss_becomes_lir) {
    struct tcache *c = tc_lirs(4);
    ASSERT_STR(tc_run(c, "1 2 3 4 5 5 6 1 5 2 3 1 7"), "MMMMMHMMHHHHM");
    ASSERT_STR(tc_run(c, "1 5 8 9 10 1 2 3 5"), "MHMMMHHHM");
    ASSERT_STR(c->evicted, "4 1 6 1 7 5 8 9 10");
    tc_free(c);
}

/*
 * C = 2: one LIR (1), a Q of one, and S capped at 4 entries.  1 2 fill;
 * 3: split, 2 evicted (2n); S 3h 2n 1L.  4: 3n; S 4h 3n 2n 1L, full.
 * 5: 4n, and S would hold 5: the non-resident entry evicted earliest, 2,
 * is dropped.  6: 5n, drops 3: S 6h 5n 4n 1L.  2: 6n, drops 4; 2 has no
 * entry left, so it enters HIR (with 2n still there it would be LIR):
 * S 2h 6n 5n 1L.  5: evicts 2 (2n); 5n is still in S, so 5 becomes LIR
 * and demotes 1 to Q; pruning pops 6n 2n: S 5L, Q [1].  1 hits (not in S:
 * S 1h 5L).  3 evicts 1 (1n) and enters HIR.
 */
TEST(lirs_stack_capped_at_twice_the_cache) {
    struct tcache *c = tc_lirs(2);
    ASSERT_STR(tc_run(c, "1 2 3 4 5 6 2 5 1 3"), "MMMMMMMMHM");
    ASSERT_STR(c->evicted, "2 3 4 5 6 2 1");
    /*
     * 7 evicts 3 (3n); 8 evicts 7 (7n) and the cap drops 1n, the earliest
     * evicted; 5, the LIR item, hits (and pruning empties S above it); so
     * 1 returns as HIR and evicts 8.
     */
    ASSERT_STR(tc_run(c, "7 8 5 1"), "MMHM");
    ASSERT_STR(c->evicted, "2 3 4 5 6 2 1 3 7 8");
    /*
     * 1 entered at the top of S (S 1h 5L), so reading it promotes it to
     * LIR and demotes 5 to Q: S 1L.  3 evicts 5, 4 evicts 3 (3n), 1 hits,
     * 5 evicts 4 and 6 evicts 5; 1, the LIR item, still hits.
     */
    ASSERT_STR(tc_run(c, "1 3 4 1 5 6 1"), "HMMHMMH");
    ASSERT_STR(c->evicted, "2 3 4 5 6 2 1 3 7 8 5 3 4 5");
    tc_free(c);
}

/*
 * Deletes leave no entry.  C = 4, S 5h 4n 3L 2L 1L, Q [5]; 5 deleted.
 * 4: no eviction (3 items); 4n becomes LIR and demotes 1: S 4L 3L 2L,
 * Q [1].  5: evicts 1; 5 has no entry, so it is HIR: S 5h 4L 3L 2L.  6:
 * evicts 5 (5n), HIR.  3 2: S 2L 3L 6h 5n 4L.  Deleting the bottom LIR 4
 * prunes 5n and 6h (6 stays in Q): S 2L 3L, two LIR for a share of three.
 * 5: no eviction, and with room in the LIR set it enters LIR.  7 evicts
 * 6 (no entry: pruned), 6 evicts 7 (7n) and is HIR, 8 evicts 6.
 */
TEST(lirs_delete_of_hir_and_lir) {
    struct tcache *c = tc_lirs(4);
    ASSERT_STR(tc_run(c, "1 2 3 4 5"), "MMMMM");
    tc_unlink(c, 5);
    ASSERT_STR(tc_run(c, "4 5 6"), "MMM");
    ASSERT_STR(c->evicted, "4 1 5");
    ASSERT_STR(tc_run(c, "3 2"), "HH");
    tc_unlink(c, 4);
    ASSERT_STR(tc_run(c, "5 7 6 8 2 3 5"), "MMMMHHH");
    ASSERT_STR(c->evicted, "4 1 5 6 7 6");
    /* everything deleted: nothing is left to hand out */
    for (unsigned k = 0; k < TC_KEYS; k++)
        if (c->in[k])
            tc_unlink(c, k);
    ASSERT(c->p->victim(c->q, NULL) == NULL);
    ASSERT(c->p->oldest(c->q) == NULL);
    /* and it fills again (C stays 4 from the last eviction) */
    ASSERT_STR(tc_run(c, "11 12 13 14 15 11"), "MMMMMH");
    tc_free(c);
}

/*
 * C = 200: Lhirs = 2, LIR share 198.  201: the split makes 199 and 200
 * HIR, 199 goes (199n), 201 enters: S 201h 199n 200h 198L .. 1L,
 * Q [200 201].  Reading 1..198 walks the bottom up past them all, so
 * pruning pops 200h, 199n and 201h: both HIR stay in Q, outside S.
 * 200 hits: to the top of S and Q's end, Q [201 200], so 202 evicts 201
 * (left in Q's front place, 200 would have gone); 200 hits again, now in
 * S: it becomes LIR and demotes the bottom LIR 1.  201 (no entry) evicts
 * 202 and enters HIR; 1 hits in Q.
 */
TEST(lirs_hir_hit_outside_stack_goes_to_q_end) {
    struct tcache *c = tc_lirs(200);
    for (unsigned k = 1; k <= 201; k++)
        ASSERT(!tc_get(c, k));
    for (unsigned k = 1; k <= 198; k++)
        ASSERT(tc_get(c, k));
    ASSERT_STR(c->evicted, "199");
    ASSERT_STR(tc_run(c, "200 202 200 201 1 200"), "HMHMHH");
    ASSERT_STR(c->evicted, "199 201 202");
    tc_free(c);
}

/* C = 1: no LIR share at all; every item is a resident HIR, FIFO. */
TEST(lirs_cache_of_one) {
    struct tcache *c = tc_lirs(1);
    ASSERT_STR(tc_run(c, "1 2 1 1 2"), "MMMHM");
    ASSERT_STR(c->evicted, "1 2 1");
    tc_free(c);
}

/*
 * C = 200: Lhirs = 2.  After 1..200 the split makes 199 and 200 resident
 * HIR, 199 at Q's front.  The engine cannot take 199, asks for the next:
 * 200, and takes it: 200 leaves 200n.  201 enters HIR: Q [199 201].
 * 200 misses: 199 goes, 200 becomes LIR and demotes the bottom LIR 1:
 * Q [201 1].  Past Q's end the candidates are LIR items from the bottom
 * of S up: 2, then 3; an LIR item evicted so leaves an entry (pruned at
 * once when it was the bottom) and the LIR set has room for a new key.
 */
TEST(lirs_victim_after_a_busy_candidate) {
    struct tcache *c = tc_lirs(200);
    for (unsigned k = 1; k <= 200; k++)
        ASSERT(!tc_get(c, k));
    struct item *v = c->p->victim(c->q, NULL);
    ASSERT_EQ(key_of(v), 199);
    v = c->p->victim(c->q, v);
    ASSERT_EQ(key_of(v), 200);
    tc_unlink(c, 200);
    tc_link(c, 201);
    ASSERT(!tc_get(c, 200));
    ASSERT_STR(c->evicted, "199");
    ASSERT(tc_get(c, 1));               /* a resident HIR now */
    v = c->p->victim(c->q, NULL);
    ASSERT_EQ(key_of(v), 201);
    v = c->p->victim(c->q, v);
    ASSERT_EQ(key_of(v), 1);
    v = c->p->victim(c->q, v);
    ASSERT_EQ(key_of(v), 2);
    v = c->p->victim(c->q, v);
    ASSERT_EQ(key_of(v), 3);
    tc_unlink(c, 3);                    /* taken: 3n stays above 2L */
    tc_link(c, 202);                    /* 197 LIR for 198: enters LIR */
    ASSERT(!tc_get(c, 3));              /* 3n: back as LIR, 2 demoted */
    ASSERT_STR(c->evicted, "199 201");
    ASSERT_STR(tc_run(c, "203 204 3 202 2"), "MMHHM");
    ASSERT_STR(c->evicted, "199 201 1 2 203");
    tc_free(c);
}

/* ---- a brute-force LIRS: arrays and linear scans, from the rules ---- */

#define REF_MAX 2048

struct lref {
    size_t C, L;
    bool full;
    unsigned s[REF_MAX], q[REF_MAX], nr[REF_MAX];   /* S bottom first; Q, NR oldest first */
    size_t ns, nq, nnr, nlir;
    bool lir[TC_KEYS];
};

static long ref_find(const unsigned *a, size_t n, unsigned k) {
    for (size_t i = 0; i < n; i++)
        if (a[i] == k)
            return (long)i;
    return -1;
}

static void ref_del(unsigned *a, size_t *n, unsigned k) {
    long i = ref_find(a, *n, k);
    if (i < 0)
        return;
    memmove(&a[i], &a[i + 1], (*n - (size_t)i - 1) * sizeof(*a));
    (*n)--;
}

static void ref_top(struct lref *r, unsigned k) {
    ref_del(r->s, &r->ns, k);
    r->s[r->ns++] = k;
}

static void ref_prune(struct lref *r) {
    while (r->ns > 0 && !r->lir[r->s[0]]) {
        ref_del(r->nr, &r->nnr, r->s[0]);
        ref_del(r->s, &r->ns, r->s[0]);
    }
}

static void ref_make_lir(struct lref *r, unsigned k) {
    ref_top(r, k);
    r->lir[k] = true;
    r->nlir++;
    while (r->full && r->nlir > r->L) {
        ref_prune(r);
        unsigned b = r->s[0];
        ref_del(r->s, &r->ns, b);
        r->lir[b] = false;
        r->nlir--;
        r->q[r->nq++] = b;
        ref_prune(r);
    }
}

static bool ref_get(struct lref *r, unsigned k) {
    bool hit = true;
    if (r->lir[k]) {
        ref_top(r, k);
    } else if (ref_find(r->q, r->nq, k) >= 0) {
        if (ref_find(r->s, r->ns, k) >= 0) {
            ref_del(r->q, &r->nq, k);
            ref_make_lir(r, k);
        } else {
            ref_del(r->q, &r->nq, k);
            r->q[r->nq++] = k;
            r->s[r->ns++] = k;
        }
    } else {
        hit = false;
        if (r->nlir + r->nq >= r->C) {
            if (!r->full) {             /* split: the top LIR beyond L turn HIR */
                r->full = true;
                size_t over = r->nlir - r->L, first = r->nq;
                for (size_t i = r->ns; i-- > 0 && over > 0;)
                    if (r->lir[r->s[i]]) {
                        r->lir[r->s[i]] = false;
                        r->nlir--;
                        over--;
                        r->q[r->nq++] = r->s[i];
                    }
                for (size_t i = first, j = r->nq - 1; i < j; i++, j--) {
                    unsigned t = r->q[i];   /* oldest first */
                    r->q[i] = r->q[j];
                    r->q[j] = t;
                }
                ref_prune(r);
            }
            unsigned v = r->q[0];
            ref_del(r->q, &r->nq, v);
            if (ref_find(r->s, r->ns, v) >= 0)
                r->nr[r->nnr++] = v;
        }
        if (ref_find(r->nr, r->nnr, k) >= 0) {
            ref_del(r->nr, &r->nnr, k);
            ref_make_lir(r, k);
        } else if (!r->full || r->nlir < r->L) {
            r->s[r->ns++] = k;
            r->lir[k] = true;
            r->nlir++;
        } else {
            r->s[r->ns++] = k;
            r->q[r->nq++] = k;
        }
    }
    ref_prune(r);
    while (r->ns > 2 * r->C && r->nnr > 0) {
        unsigned v = r->nr[0];
        ref_del(r->nr, &r->nnr, v);
        ref_del(r->s, &r->ns, v);
    }
    return hit;
}

/* A delete of resident k: out of S and Q, no entry left. */
static void ref_delete(struct lref *r, unsigned k) {
    ref_del(r->s, &r->ns, k);
    ref_del(r->q, &r->nq, k);
    if (r->lir[k]) {
        r->lir[k] = false;
        r->nlir--;
        ref_prune(r);
    }
}

static bool ref_resident(const struct lref *r, unsigned k) {
    return r->lir[k] || ref_find(r->q, r->nq, k) >= 0;
}

/* Random traces, skewed, with deletes: the same hits, the same residents. */
TEST(lirs_matches_brute_force_reference) {
    static const size_t caps[] = {1, 2, 3, 4, 5, 8, 13, 40, 120, 230, 450};
    uint64_t seed = 0x2545f4914f6cdd1dULL;
    for (size_t ci = 0; ci < sizeof(caps) / sizeof(caps[0]); ci++) {
        size_t C = caps[ci];
        for (int round = 0; round < 3; round++) {
            unsigned keys = (unsigned)(C * (round + 2) + 1);
            struct lref *r = calloc(1, sizeof(*r));
            size_t h = (size_t)((double)C * 0.01);
            r->C = C;
            r->L = C - (h < 1 ? 1 : h);
            struct tcache *c = tc_lirs(C);
            for (int i = 0; i < 6000; i++) {
                uint64_t x = test_rand(&seed);
                unsigned k = (unsigned)(x % keys);
                if ((x >> 32) % 3 != 0)         /* skew toward small keys */
                    k = (unsigned)((x >> 20) % (keys / 3 + 1));
                if ((x >> 40) % 20 == 0) {
                    if (c->in[k]) {
                        tc_unlink(c, k);
                        ref_delete(r, k);
                    }
                    continue;
                }
                bool want = ref_get(r, k), got = tc_get(c, k);
                if (want != got)
                    TH_FAIL("C %zu round %d request %d key %u: %s, reference %s", C, round,
                            i, k, got ? "hit" : "miss", want ? "hit" : "miss");
            }
            for (unsigned k = 0; k < keys; k++)
                if (c->in[k] != ref_resident(r, k))
                    TH_FAIL("C %zu round %d: key %u resident %d, reference %d", C, round, k,
                            c->in[k], ref_resident(r, k));
            tc_free(c);
            free(r);
        }
    }
}

int main(void) { return RUN_TESTS(); }
