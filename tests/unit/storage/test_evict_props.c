/*
 * test_evict_props.c -- properties every policy must keep inside a real
 * engine, whatever its order of eviction:
 *   - memory stays within the limit, and an object-count cache holds
 *     exactly its capacity once full;
 *   - the hash table and the policy agree: every linked item is found by
 *     its key, and once every key is deleted the policy tracks nothing;
 *   - deletes, replaces and expiries (on access and by the crawler)
 *     remove the policy's state for the item.
 * Run under ASan, a policy that kept a pointer to a freed item would also
 * be caught here (free chunks are poisoned).
 */
#include "evict_test.h"
#include "harness.h"
#include "storage/engine_int.h"

#define KEYS 3000
#define T0 1700000000u

static void key_of(unsigned k, char *buf, size_t *n) { *n = (size_t)sprintf(buf, "key:%u", k); }

static bool set_key(struct engine *e, unsigned k, uint32_t nbytes, int64_t ttl) {
    char key[32];
    size_t n;
    key_of(k, key, &n);
    enum engine_alloc_err ae;
    struct item *it = engine_item_alloc(e, key, n, 0, ttl, nbytes, &ae);
    if (it == NULL)
        return false;
    engine_store(e, it, ENGINE_SET, 0, NULL);
    engine_item_unref(e, it);
    return true;
}

static bool get_key(struct engine *e, unsigned k) {
    char key[32];
    size_t n;
    key_of(k, key, &n);
    struct item *it = engine_get(e, key, n, NULL);
    if (it != NULL)
        engine_item_unref(e, it);
    return it != NULL;
}

static bool del_key(struct engine *e, unsigned k) {
    char key[32];
    size_t n;
    key_of(k, key, &n);
    return engine_delete(e, key, n, 0) == ENGINE_DELETED;
}

static uint64_t items(struct engine *e) {
    struct engine_stats st;
    engine_stats(e, &st);
    return st.curr_items;
}

/* Every key looked up once: the hits must be all the linked items. */
static bool table_matches_policy(struct engine *e) {
    uint64_t found = 0;
    for (unsigned k = 0; k < KEYS; k++)
        found += get_key(e, k);
    return found == items(e);
}

/* Nothing left for the policy to hand out, in any class. */
static bool policy_empty(struct engine *e) {
    for (unsigned i = 1; i <= e->nclasses; i++)
        if (e->policy->victim(e->cls[i].q, NULL) != NULL ||
            e->policy->oldest(e->cls[i].q) != NULL)
            return false;
    return true;
}

static struct engine *small_engine(const char *policy) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.policy = policy;
    cfg.mem_limit = 1024 * 1024;
    cfg.page_size = 64 * 1024;
    cfg.slab_chunk_max = 32 * 1024;
    cfg.item_size_max = 64 * 1024;
    cfg.hashpower_init = 10;            /* so the table grows during the run */
    char err[256];
    struct engine *e = engine_create(&cfg, err, sizeof(err));
    if (e != NULL)
        engine_clock_set(e, T0);
    return e;
}

/*
 * Random sets (sizes over many classes, some chained, some with TTLs),
 * gets, deletes and touches while the clock moves and the maintenance
 * step runs; the checks above every so often.
 */
static void churn(const char *policy, int *th_failed) {
    struct engine *e = small_engine(policy);
    ASSERT(e != NULL);
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    uint32_t now = T0;
    for (int i = 1; i <= 60000; i++) {
        uint64_t r = test_rand(&s);
        unsigned k = (unsigned)(r % KEYS);
        if (k > KEYS / 2)                   /* a skew, so policies have hot keys */
            k = (unsigned)(test_rand(&s) % (KEYS / 8));
        switch ((r >> 20) % 16) {
        case 0: case 1: case 2: case 3: {
            uint32_t size = (uint32_t)((r >> 32) % 3000);
            if ((r >> 40) % 50 == 0)
                size = 40000;               /* a chained item */
            int64_t ttl = (r >> 48) % 4 == 0 ? (int64_t)((r >> 50) % 30) + 1 : 0;
            set_key(e, k, size, ttl);
            break;
        }
        case 4:
            del_key(e, k);
            break;
        case 5: {
            char key[32];
            size_t n;
            key_of(k, key, &n);
            engine_touch(e, key, n, (int64_t)((r >> 44) % 20));
            break;
        }
        default:
            get_key(e, k);
            break;
        }
        if (i % 100 == 0)
            engine_clock_set(e, ++now);
        if (i % 50 == 0)
            engine_step(e, 64);
        if (i % 20000 == 0) {
            struct engine_stats st;
            engine_stats(e, &st);
            ASSERT(st.total_malloced <= st.limit_maxbytes + e->nclasses * 64 * 1024);
            ASSERT(st.evictions > 0);
            if (!table_matches_policy(e))
                TH_FAIL("%s: table and policy disagree at %d", policy, i);
        }
    }
    /* everything with a TTL expires; the crawler takes it */
    engine_clock_set(e, now += 100);
    for (int i = 0; i < 2000; i++)
        engine_step(e, 1000);
    uint64_t left = items(e);
    ASSERT(table_matches_policy(e));
    ASSERT_EQ(items(e), left);              /* nothing dead was left for gets */
    for (unsigned k = 0; k < KEYS; k++)
        del_key(e, k);
    ASSERT_EQ(items(e), 0);
    if (!policy_empty(e))
        TH_FAIL("%s: policy still tracks items after every key was deleted", policy);
    /* and the empty engine fills again */
    for (unsigned k = 0; k < 200; k++)
        ASSERT(set_key(e, k, 100, 0));
    ASSERT_EQ(items(e), 200);
    engine_destroy(&e);
}

TEST(every_policy_keeps_table_and_queue_in_step) {
    for (unsigned i = 0; i < evict_policy_count(); i++) {
        int failed = 0;
        churn(evict_policy_at(i)->name, &failed);
        if (failed)
            TH_FAIL("policy %s", evict_policy_at(i)->name);
    }
}

/* Full means exactly the capacity, and every miss past it evicts one. */
TEST(every_policy_holds_exactly_its_capacity) {
    struct zipf z;
    zipf_init(&z, 5000, 0.8);
    for (unsigned i = 0; i < evict_policy_count(); i++) {
        const char *name = evict_policy_at(i)->name;
        for (uint64_t cap = 37; cap <= 370; cap *= 10) {
            struct obj_engine o;
            ASSERT(obj_engine_open(&o, name, cap));
            uint64_t seed = 42, misses = 0;
            for (int r = 0; r < 20000; r++)
                misses += !obj_engine_get(&o, zipf_next(&z, &seed));
            struct engine_stats st;
            engine_stats(o.e, &st);
            if (st.curr_items != cap || st.evictions != misses - cap)
                TH_FAIL("%s cap %llu: %llu items, %llu evictions for %llu misses", name,
                        (unsigned long long)cap, (unsigned long long)st.curr_items,
                        (unsigned long long)st.evictions, (unsigned long long)misses);
            obj_engine_close(&o);
        }
    }
    free(z.cdf);
}

/* Deleting and replacing items mid-queue, then refilling, keeps counts. */
TEST(every_policy_survives_delete_and_replace_at_capacity) {
    for (unsigned i = 0; i < evict_policy_count(); i++) {
        const char *name = evict_policy_at(i)->name;
        struct obj_engine o;
        ASSERT(obj_engine_open(&o, name, 50));
        uint64_t seed = 7;
        for (int r = 0; r < 20000; r++) {
            uint64_t id = test_rand(&seed) % 120;
            char key[8];
            memcpy(key, &id, 8);
            switch (r % 7) {
            case 0:
                engine_delete(o.e, key, 8, 0);
                break;
            case 1: {
                enum engine_alloc_err ae;
                struct item *it = engine_item_alloc(o.e, key, 8, 0, 0, 0, &ae);
                ASSERT(it != NULL);
                engine_store(o.e, it, ENGINE_SET, 0, NULL);     /* replace if present */
                engine_item_unref(o.e, it);
                break;
            }
            default:
                obj_engine_get(&o, id);
            }
        }
        struct engine_stats st;
        engine_stats(o.e, &st);
        ASSERT(st.curr_items <= 50);
        for (uint64_t id = 0; id < 120; id++) {
            char key[8];
            memcpy(key, &id, 8);
            engine_delete(o.e, key, 8, 0);
        }
        engine_stats(o.e, &st);
        ASSERT_EQ(st.curr_items, 0);
        if (!policy_empty(o.e))
            TH_FAIL("%s: policy not empty", name);
        obj_engine_close(&o);
    }
}

int main(void) { return RUN_TESTS(); }
