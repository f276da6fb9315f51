/*
 * harness.h -- the smallest test harness that does the job.
 *
 *   TEST(name) { ASSERT_EQ(a, b); ASSERT(cond); ASSERT_MEM(p, q, n); }
 *   int main(void) { return RUN_TESTS(); }
 *
 * Tests register themselves through a constructor, run in file order, and
 * a failed assertion prints both sides and ends that test only.  The last
 * line is "N passed, N failed"; the exit code is non-zero on any failure.
 */
#ifndef CELLAR_TEST_HARNESS_H
#define CELLAR_TEST_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct th_test {
    const char *name;
    void (*fn)(int *failed);
};

#define TH_MAX 512
static struct th_test th_tests[TH_MAX];
static int th_ntests;

#define TEST(name)                                                         \
    static void test_##name(int *th_failed);                               \
    __attribute__((constructor)) static void th_reg_##name(void) {         \
        if (th_ntests < TH_MAX)                                            \
            th_tests[th_ntests++] = (struct th_test){#name, test_##name};  \
    }                                                                      \
    static void test_##name(int *th_failed)

#define TH_FAIL(...)                                                       \
    do {                                                                   \
        fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                  \
        fprintf(stderr, __VA_ARGS__);                                      \
        fputc('\n', stderr);                                               \
        *th_failed = 1;                                                    \
        return;                                                            \
    } while (0)

#define ASSERT(c)                                                          \
    do { if (!(c)) TH_FAIL("assertion failed: %s", #c); } while (0)

#define ASSERT_EQ(a, b)                                                    \
    do {                                                                   \
        long long th_a = (long long)(a), th_b = (long long)(b);            \
        if (th_a != th_b)                                                  \
            TH_FAIL("%s == %s: %lld != %lld", #a, #b, th_a, th_b);         \
    } while (0)

#define ASSERT_U64(a, b)                                                   \
    do {                                                                   \
        unsigned long long th_a = (a), th_b = (b);                         \
        if (th_a != th_b)                                                  \
            TH_FAIL("%s == %s: %llu != %llu", #a, #b, th_a, th_b);         \
    } while (0)

#define ASSERT_MEM(a, b, n)                                                \
    do {                                                                   \
        size_t th_n = (n);                                                 \
        if (memcmp((a), (b), th_n) != 0)                                   \
            TH_FAIL("%s == %s: '%.*s' != '%.*s'", #a, #b, (int)th_n,       \
                    (const char *)(a), (int)th_n, (const char *)(b));      \
    } while (0)

#define ASSERT_STR(a, b)                                                   \
    do {                                                                   \
        const char *th_a = (a), *th_b = (b);                               \
        if (strcmp(th_a, th_b) != 0)                                       \
            TH_FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b, th_a, th_b);     \
    } while (0)

static inline int th_run(const char *file) {
    int passed = 0, failed = 0;
    for (int i = 0; i < th_ntests; i++) {
        int f = 0;
        th_tests[i].fn(&f);
        if (f) {
            fprintf(stderr, "FAIL %s\n", th_tests[i].name);
            failed++;
        } else {
            passed++;
        }
    }
    printf("%s: %d passed, %d failed\n", file, passed, failed);
    return failed != 0;
}
#define RUN_TESTS() th_run(__FILE__)

#endif
