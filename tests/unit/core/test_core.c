/* Unit tests for src/core: hashing and the event loop. */
#include <pthread.h>
#include <unistd.h>

#include "core/evloop.h"
#include "core/hash.h"
#include "harness.h"

TEST(hash_is_deterministic_and_length_sensitive) {
    ASSERT_U64(hash_bytes("key", 3, 0), hash_bytes("key", 3, 0));
    ASSERT(hash_bytes("a", 1, 0) != hash_bytes("a\0", 2, 0));
    ASSERT(hash_bytes("key", 3, 0) != hash_bytes("key", 3, 1));
    ASSERT(hash_bytes("", 0, 0) != hash_bytes("\0", 1, 0));
}

/* Sequential keys must spread evenly over the low bits that pick a bucket. */
TEST(hash_spreads_low_bits) {
    enum { BUCKETS = 1024, KEYS = 102400 };
    static unsigned count[BUCKETS];
    memset(count, 0, sizeof(count));
    char key[32];
    for (int i = 0; i < KEYS; i++) {
        int n = snprintf(key, sizeof(key), "key:%d", i);
        count[hash_bytes(key, (size_t)n, 0) & (BUCKETS - 1)]++;
    }
    unsigned lo = KEYS, hi = 0;
    for (int b = 0; b < BUCKETS; b++) {
        lo = count[b] < lo ? count[b] : lo;
        hi = count[b] > hi ? count[b] : hi;
    }
    /* Expect 100 per bucket; a binomial spread stays well within 50..160. */
    ASSERT(lo > 50);
    ASSERT(hi < 160);
}

static void *waker(void *arg) {
    evloop_wake(arg);
    return NULL;
}

TEST(evloop_reports_readable_fd_and_wakeups) {
    struct evloop *l = evloop_create();
    ASSERT(l != NULL);
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    int token = 42;
    ASSERT_EQ(evloop_add(l, p[0], EV_READ, &token), 0);
    struct ev_fired ev[4];
    ASSERT_EQ(evloop_wait(l, ev, 4, 0), 0);
    ASSERT_EQ(write(p[1], "x", 1), 1);
    ASSERT_EQ(evloop_wait(l, ev, 4, 1000), 1);
    ASSERT(ev[0].ptr == &token);
    ASSERT(ev[0].events & EV_READ);
    ASSERT_EQ(evloop_del(l, p[0]), 0);

    pthread_t t;
    pthread_create(&t, NULL, waker, l);
    int n = evloop_wait(l, ev, 4, 5000);
    pthread_join(t, NULL);
    ASSERT_EQ(n, 1);
    ASSERT(ev[0].ptr == NULL);
    close(p[0]);
    close(p[1]);
    evloop_destroy(&l);
    ASSERT(l == NULL);
}

int main(void) { return RUN_TESTS(); }
