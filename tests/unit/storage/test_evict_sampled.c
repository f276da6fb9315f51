/*
 * test_evict_sampled.c -- Redis's sampled LRU and LFU (evict_sampled.c):
 * exact LRU where 5 samples cover the class, the LFU counter's rules
 * (start at 5, decay per idle clock minute, logarithmic increment), the
 * pool never handing out an item that has left, the candidate chain the
 * engine walks when it refuses one, and, seeded, miss ratios on a zipf
 * trace between FIFO's and LRU's.
 *
 * The LFU counter is read from the item (pword[1], as the policy's file
 * documents), so that its arithmetic is checked exactly.
 */
#include "evict_test.h"
#include "harness.h"

/* tc_new() for a policy given by pointer, which must be the one of its name. */
static struct tcache *tc_new_p(const struct evict_policy *p, size_t cap) {
    struct tcache *c = tc_new(p->name, cap);
    if (c->p != p)
        abort();
    return c;
}

static unsigned key_of(const struct item *it) { return (unsigned)atoi(it->data + 1); }

static unsigned counter(struct tcache *c, unsigned k) { return (unsigned)c->it[k]->pword[1]; }

/*
 * C = 3, so each round samples every item and the pool sees true idle
 * times: plain LRU.  1 2 3 in, 1 read; 4 evicts 2 (the oldest); 2 evicts
 * 3; 5 evicts 1 (4 and 2 are newer); 1 evicts 4; 3 evicts 2; 4 evicts 5;
 * then 1 and 3 hit.
 */
TEST(sampled_is_lru_when_samples_cover_the_class) {
    struct tcache *c = tc_new_p(&evict_sampled, 3);
    ASSERT_STR(tc_run(c, "1 2 3 1 4 2 5 1 3 4 1 3"), "MMMHMMMMMMHH");
    ASSERT_STR(c->evicted, "2 3 1 4 2 5");
    tc_free(c);
}

/*
 * The pool is rescored each round.  1 2 3 in, 3 read thrice.  4: the round
 * pools 2 and 3 and evicts 1.  2 read.  5: 3 is now the least recent (4
 * came after its last read) and goes.  Redis, which keeps 2's idle time
 * from the first round in its pool, would evict 2 here.
 */
TEST(sampled_pool_is_rescored) {
    struct tcache *c = tc_new_p(&evict_sampled, 3);
    ASSERT_STR(tc_run(c, "1 2 3 3 3 3 4 2 5 3"), "MMMHHHMHMM");
    ASSERT_STR(c->evicted, "1 3 4");
    tc_free(c);
}

/* With C <= 5, request by request the same hits and victims as lru-exact. */
TEST(sampled_matches_lru_exact_up_to_five_items) {
    for (size_t cap = 1; cap <= 5; cap++) {
        struct tcache *s = tc_new_p(&evict_sampled, cap);
        struct tcache *l = tc_new("lru-exact", cap);
        uint64_t seed = 42 + cap;
        for (int i = 0; i < 5000; i++) {
            unsigned k = (unsigned)(test_rand(&seed) % 12);
            ASSERT_EQ(tc_get(s, k), tc_get(l, k));
        }
        ASSERT_STR(s->evicted, l->evicted);
        tc_free(s);
        tc_free(l);
    }
}

/* A new item starts at 5; the first read always adds one (p = 1/(0*10+1)). */
TEST(sampled_lfu_counter_starts_at_five) {
    struct tcache *c = tc_new_p(&evict_sampled_lfu, 3);
    tc_run(c, "1 2");
    ASSERT_EQ(counter(c, 1), 5);
    tc_run(c, "1");
    ASSERT_EQ(counter(c, 1), 6);
    tc_free(c);
}

/*
 * 1000 reads: to climb from 5 to v takes about sum over b < v-5 of
 * (10 b + 1) reads, 1000 at v ~ 19.  Far from 1005 (linear) or 6.
 */
TEST(sampled_lfu_counter_is_logarithmic) {
    struct tcache *c = tc_new_p(&evict_sampled_lfu, 3);
    tc_run(c, "1");
    for (int i = 0; i < 1000; i++)
        tc_get(c, 1);
    unsigned v = counter(c, 1);
    if (v < 15 || v > 24)
        TH_FAIL("counter after 1000 reads: %u, want about 19", v);
    tc_free(c);
}

/*
 * Decay counts whole clock minutes since the last access, applied before
 * the increment: linked at second 100 (minute 1), read at 130 (minute 2):
 * 5 - 1 + 1 = 5.  Linked at 120 and read at 179, both in minute 2: 6.
 */
TEST(sampled_lfu_decay_counts_clock_minutes) {
    struct tcache *c = tc_new_p(&evict_sampled_lfu, 3);
    c->now = 100;
    tc_run(c, "1");
    c->now = 130;
    tc_run(c, "1");
    ASSERT_EQ(counter(c, 1), 5);
    c->now = 120;
    tc_run(c, "2");
    c->now = 179;
    tc_run(c, "2");
    ASSERT_EQ(counter(c, 2), 6);
    tc_free(c);
}

/*
 * C = 3.  1 is read four times (counter >= 6, score <= 249) and outlives
 * every newcomer (counter 5, score 250), whatever the order of the samples.
 */
TEST(sampled_lfu_keeps_a_hot_item) {
    struct tcache *c = tc_new_p(&evict_sampled_lfu, 3);
    ASSERT_STR(tc_run(c, "1 1 1 1 1 2 3 4 5 6 7 8 9 1"), "MHHHHMMMMMMMMH");
    ASSERT(c->in[1]);
    ASSERT_EQ(strlen(c->evicted), strlen("2 3 4 5 6 7"));
    tc_free(c);
}

/*
 * Ten idle minutes take 1's counter (6 or 7) to 0: score 255.  2 and 3,
 * read after the pause, also decay to 0 first, then climb to 1 (score 254):
 * so 4 evicts 1.
 */
TEST(sampled_lfu_decay_forgets_old_popularity) {
    struct tcache *c = tc_new_p(&evict_sampled_lfu, 3);
    ASSERT_STR(tc_run(c, "1 1 1 2 3"), "MHHMM");
    c->now += 600;
    ASSERT_STR(tc_run(c, "2 3 4"), "HHM");
    ASSERT_STR(c->evicted, "1");
    ASSERT_EQ(counter(c, 2), 1);
    tc_free(c);
}

/*
 * The chain the engine walks when it refuses candidates.  C = 3: every
 * item is pooled, so the chain is LRU order, then NULL.
 */
TEST(sampled_victim_chain_small_class_is_lru_order) {
    struct tcache *c = tc_new_p(&evict_sampled, 3);
    tc_run(c, "1 2 3 1");
    struct item *v = c->p->victim(c->q, NULL);
    ASSERT(v == c->it[2]);
    v = c->p->victim(c->q, v);
    ASSERT(v == c->it[3]);
    v = c->p->victim(c->q, v);
    ASSERT(v == c->it[1]);
    ASSERT(c->p->victim(c->q, v) == NULL);
    tc_free(c);
}

/*
 * C = 10, items linked 1..10 and never read.  The first round pools 5
 * samples: the chain gives those from the largest idle time down (keys
 * ascending), then every other item once, then NULL.  Taking the second
 * candidate (the engine refused the first) leaves the first linked and
 * pooled: the next round offers it again, unless (LRU) it samples an item
 * linked before it; in LFU all tie and the pooled ones stay right of new
 * samples.
 */
TEST(sampled_victim_chain_offers_every_item_once) {
    const struct evict_policy *ps[] = {&evict_sampled, &evict_sampled_lfu};
    for (int p = 0; p < 2; p++) {
        struct tcache *c = tc_new_p(ps[p], 10);
        tc_run(c, "1 2 3 4 5 6 7 8 9 10");
        struct item *chain[11];
        unsigned n = 0, seen[11] = {0};
        for (struct item *v = c->p->victim(c->q, NULL); v != NULL; v = c->p->victim(c->q, v)) {
            ASSERT(n < 10);
            chain[n++] = v;
            seen[key_of(v)]++;
        }
        ASSERT_EQ(n, 10);
        for (unsigned k = 1; k <= 10; k++)
            ASSERT_EQ(seen[k], 1);
        if (p == 0)                     /* LRU: the pooled five, oldest first */
            for (unsigned i = 1; i < 5; i++)
                ASSERT(key_of(chain[i - 1]) < key_of(chain[i]));
        unsigned first = key_of(chain[0]);
        tc_unlink(c, key_of(chain[1]));
        struct item *next = c->p->victim(c->q, NULL);
        if (p == 0)
            ASSERT(key_of(next) <= first && c->in[key_of(next)]);
        else
            ASSERT(next == c->it[first]);
        tc_free(c);
    }
}

/*
 * Pooled items deleted (not evicted) leave the pool: no later candidate,
 * anywhere in a chain, is an item that is not linked.  Then a churn of
 * reads, misses and deletes, checking every candidate offered.
 */
TEST(sampled_pool_never_returns_deleted_items) {
    const struct evict_policy *ps[] = {&evict_sampled, &evict_sampled_lfu};
    for (int p = 0; p < 2; p++) {
        struct tcache *c = tc_new_p(ps[p], 20);
        for (unsigned k = 1; k <= 20; k++)
            tc_get(c, k);
        struct item *a = c->p->victim(c->q, NULL);
        struct item *b = c->p->victim(c->q, a);
        tc_unlink(c, key_of(a));
        tc_unlink(c, key_of(b));
        unsigned n = 0;
        for (struct item *v = c->p->victim(c->q, NULL); v != NULL; v = c->p->victim(c->q, v)) {
            ASSERT(v != a && v != b);
            ASSERT(c->in[key_of(v)]);
            n++;
        }
        ASSERT_EQ(n, 18);

        uint64_t seed = 7;
        for (int i = 0; i < 50000; i++) {
            uint64_t r = test_rand(&seed);
            unsigned k = (unsigned)(r % 300);
            if ((r >> 20) % 4 == 0) {
                if (c->in[k])
                    tc_unlink(c, k);
                continue;
            }
            if ((r >> 24) % 8 == 0)
                c->now++;
            if (!c->in[k] && c->n >= c->cap) {
                struct item *v = c->p->victim(c->q, NULL);
                ASSERT(v != NULL && c->in[key_of(v)]);
                struct item *w = c->p->victim(c->q, v);
                ASSERT(w != NULL && w != v && c->in[key_of(w)]);
            }
            tc_get(c, k);
            ASSERT(c->n <= c->cap);
        }
        tc_free(c);
    }
}

/* Emptied by deletes, the policy offers nothing. */
TEST(sampled_empty_class_has_no_victim) {
    struct tcache *c = tc_new_p(&evict_sampled, 4);
    ASSERT(c->p->victim(c->q, NULL) == NULL);
    ASSERT(c->p->oldest(c->q) == NULL);
    tc_run(c, "1 2 3 4 5 6");
    ASSERT(c->p->oldest(c->q) != NULL);
    for (unsigned k = 1; k <= 6; k++)
        if (c->in[k])
            tc_unlink(c, k);
    ASSERT(c->p->victim(c->q, NULL) == NULL);
    ASSERT(c->p->oldest(c->q) == NULL);
    tc_free(c);
}

/* The miss ratio of policy on a zipf trace through a cap-item tcache. */
static double zipf_mr(const struct evict_policy *p, size_t cap, double alpha) {
    struct zipf z;
    zipf_init(&z, 4000, alpha);
    struct tcache *c = tc_new_p(p, cap);
    uint64_t seed = 12345;
    unsigned miss = 0, n = 200000;
    for (unsigned i = 0; i < n; i++) {
        uint64_t k = zipf_next(&z, &seed);
        if (i % 1000 == 0)
            c->now++;
        miss += !tc_get(c, (unsigned)k);
        if (c->n > cap)
            miss = n;                   /* capacity broken: fail loudly */
    }
    tc_free(c);
    free(z.cdf);
    return (double)miss / n;
}

/*
 * Seeded: on zipf 0.9 the sampled LRU lands between FIFO and LRU, close
 * to LRU (Redis's point: 5 samples and a pool approximate LRU well), and
 * the LFU variant, with counts that barely decay here, beats LRU.
 */
TEST(sampled_approaches_lru_on_zipf) {
    for (size_t cap = 100; cap <= 1000; cap *= 10) {
        double fifo = zipf_mr(evict_policy_find("fifo"), cap, 0.9);
        double lru = zipf_mr(evict_policy_find("lru-exact"), cap, 0.9);
        double s = zipf_mr(&evict_sampled, cap, 0.9);
        double sl = zipf_mr(&evict_sampled_lfu, cap, 0.9);
        if (!(s < fifo && fabs(s - lru) < 0.005 && sl < lru))
            TH_FAIL("C=%zu fifo %.4f lru %.4f sampled %.4f sampled-lfu %.4f", cap, fifo, lru,
                    s, sl);
    }
}

int main(void) { return RUN_TESTS(); }
