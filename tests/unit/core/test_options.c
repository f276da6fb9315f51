/*
 * test_options.c -- core/options on tables: the strict readers against
 * memcached's safe_strtoul() cases (overflow, negatives, trailing junk,
 * blanks), the atoi()-like readers on what atoi() reads and where it would
 * wrap, sizes with k/m, -o lists, getopt_long() from a table with glibc's
 * complaints, and the -h layout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"
#include "harness.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define SENTINEL 12345u

struct u_case {
    const char *arg;
    bool ok;
    unsigned long long v;
};

static const struct u_case u32_cases[] = {
    {"0", true, 0},
    {"1", true, 1},
    {"007", true, 7},
    {"4294967295", true, 4294967295ull},        /* UINT32_MAX */
    {"4294967296", false, 0},                   /* one past: safe_strtoul wraps it, we refuse */
    {"18446744073709551615", false, 0},
    {"99999999999999999999", false, 0},         /* ERANGE */
    {"-1", false, 0},                           /* strtoul would give UINT_MAX */
    {"-0", false, 0},
    {"5-", false, 0},
    {"+5", true, 5},
    {" 5", true, 5},                            /* strtoul skips leading blanks */
    {"5 ", true, 5},                            /* trailing blanks are allowed */
    {"5\t\r\n", true, 5},
    {"5x", false, 0},                           /* trailing junk */
    {"5 x", false, 0},                          /* safe_strtoul passes this one */
    {"1e3", false, 0},
    {"0x10", false, 0},                         /* decimal only */
    {"1.5", false, 0},
    {"", false, 0},
    {" ", false, 0},
    {"x", false, 0},
};

TEST(strtou32_table) {
    for (size_t i = 0; i < N(u32_cases); i++) {
        const struct u_case *t = &u32_cases[i];
        uint32_t v = SENTINEL;
        bool ok = options_strtou32(t->arg, &v);
        if (ok != t->ok)
            TH_FAIL("options_strtou32(\"%s\"): %d, want %d", t->arg, ok, t->ok);
        ASSERT_U64(v, t->ok ? t->v : SENTINEL);  /* a refusal leaves *out alone */
    }
}

static const struct u_case u64_cases[] = {
    {"0", true, 0},
    {"4294967296", true, 4294967296ull},
    {"18446744073709551615", true, 18446744073709551615ull},  /* UINT64_MAX */
    {"18446744073709551616", false, 0},                        /* ERANGE */
    {"-1", false, 0},
    {"-18446744073709551615", false, 0},       /* strtoull would give 1 */
    {"12 ", true, 12},
    {"12 junk", false, 0},
    {"", false, 0},
};

TEST(strtou64_table) {
    for (size_t i = 0; i < N(u64_cases); i++) {
        const struct u_case *t = &u64_cases[i];
        uint64_t v = SENTINEL;
        bool ok = options_strtou64(t->arg, &v);
        if (ok != t->ok)
            TH_FAIL("options_strtou64(\"%s\"): %d, want %d", t->arg, ok, t->ok);
        ASSERT_U64(v, t->ok ? t->v : SENTINEL);
    }
}

struct i_case {
    const char *arg;
    bool ok;
    long long v;
};

/* What atoi() reads, refused where it would not fit an int. */
static const struct i_case atoi_cases[] = {
    {"4", true, 4},
    {"4x", true, 4},                            /* trailing junk ignored, as atoi */
    {"abc", true, 0},                           /* no digits: 0 */
    {"", true, 0},
    {" -3", true, -3},
    {"+7", true, 7},
    {"1.5", true, 1},
    {"0x10", true, 0},
    {"2147483647", true, 2147483647},
    {"2147483648", false, 0},                   /* atoi wraps to INT_MIN */
    {"-2147483648", true, -2147483648ll},
    {"-2147483649", false, 0},
    {"99999999999999999999", false, 0},         /* past long long: ERANGE */
    {"-99999999999999999999", false, 0},
};

TEST(atoi_table) {
    for (size_t i = 0; i < N(atoi_cases); i++) {
        const struct i_case *t = &atoi_cases[i];
        int v = (int)SENTINEL;
        bool ok = options_atoi(t->arg, &v);
        if (ok != t->ok)
            TH_FAIL("options_atoi(\"%s\"): %d, want %d", t->arg, ok, t->ok);
        ASSERT_EQ(v, t->ok ? t->v : (long long)SENTINEL);
    }
}

/* -a's reading: octal, within [0, 07777]. */
static const struct i_case octal_cases[] = {
    {"0700", true, 0700},
    {"777", true, 0777},
    {"7777", true, 07777},
    {"10000", false, 0},
    {"8", true, 0},                             /* no octal digit: 0 */
    {"78", true, 7},
    {"-1", false, 0},
};

TEST(atoll_octal_table) {
    for (size_t i = 0; i < N(octal_cases); i++) {
        const struct i_case *t = &octal_cases[i];
        long long v = SENTINEL;
        bool ok = options_atoll(t->arg, 8, 0, 07777, &v);
        if (ok != t->ok)
            TH_FAIL("options_atoll(\"%s\", 8): %d, want %d", t->arg, ok, t->ok);
        ASSERT_EQ(v, t->ok ? t->v : (long long)SENTINEL);
    }
}

/* -I's reading: k and m multiply, the product fits an int. */
static const struct i_case size_cases[] = {
    {"1000", true, 1000},
    {"64k", true, 65536},
    {"64K", true, 65536},
    {"2m", true, 2097152},
    {"2M", true, 2097152},
    {"1.5m", true, 1048576},                    /* atoi reads 1 */
    {"2g", true, 2},                            /* g is no suffix: atoi reads 2 */
    {"k", true, 0},
    {"", true, 0},
    {"-5k", true, -5120},
    {"2047m", true, 2047ll << 20},
    {"2048m", false, 0},                        /* 2^31 */
    {"2097151k", true, 2097151ll << 10},
    {"2097152k", false, 0},
    {"2147483647", true, 2147483647},
    {"2147483648", false, 0},
    {"-2048m", true, -2147483648ll},
    {"-2049m", false, 0},
    {"99999999999999999999m", false, 0},
};

TEST(atosize_table) {
    for (size_t i = 0; i < N(size_cases); i++) {
        const struct i_case *t = &size_cases[i];
        long long v = SENTINEL;
        bool ok = options_atosize(t->arg, -2147483648ll, 2147483647, &v);
        if (ok != t->ok)
            TH_FAIL("options_atosize(\"%s\"): %d, want %d", t->arg, ok, t->ok);
        ASSERT_EQ(v, t->ok ? t->v : (long long)SENTINEL);
    }
}

struct f_case {
    const char *arg;
    bool ok;
    double v;
};

static const struct f_case atof_cases[] = {
    {"1.25", true, 1.25},
    {"2", true, 2.0},
    {"0.8x", true, 0.8},                        /* junk ignored, as atof */
    {"abc", true, 0.0},
    {"-1", true, -1.0},
    {"1e-999", true, 0.0},                      /* underflow is 0, finite */
    {"inf", false, 0},
    {"-infinity", false, 0},
    {"nan", false, 0},
    {"1e999", false, 0},                        /* overflow: HUGE_VAL */
    {"-1e999", false, 0},
};

TEST(atof_table) {
    for (size_t i = 0; i < N(atof_cases); i++) {
        const struct f_case *t = &atof_cases[i];
        double v = 42.0;
        bool ok = options_atof(t->arg, &v);
        if (ok != t->ok)
            TH_FAIL("options_atof(\"%s\"): %d, want %d", t->arg, ok, t->ok);
        if (v != (t->ok ? t->v : 42.0))
            TH_FAIL("options_atof(\"%s\") = %g", t->arg, v);
    }
}

TEST(strtobool_table) {
    static const struct {
        const char *arg;
        int want;                               /* 1 true, 0 false, -1 refused */
    } cases[] = {
        {"yes", 1}, {"on", 1}, {"true", 1}, {"1", 1},
        {"no", 0}, {"off", 0}, {"false", 0}, {"0", 0},
        {"", -1}, {"YES", -1}, {"2", -1}, {"yes ", -1}, {"y", -1},
    };
    for (size_t i = 0; i < N(cases); i++) {
        bool v = true;
        bool ok = options_strtobool(cases[i].arg, &v);
        if (ok != (cases[i].want >= 0) || (ok && v != (cases[i].want == 1)))
            TH_FAIL("options_strtobool(\"%s\"): ok %d value %d", cases[i].arg, ok, v);
    }
}

/* Cuts list up and joins what comes back as "tok|value;" for each token. */
static const char *subs_of(const char *list) {
    static char out[256];
    char buf[128], *cursor = buf, *tok, *v;
    snprintf(buf, sizeof(buf), "%s", list);
    out[0] = '\0';
    while (options_sub_next(&cursor, &tok, &v)) {
        size_t n = strlen(out);
        snprintf(out + n, sizeof(out) - n, "%s|%s;", tok, v ? v : "(none)");
    }
    return out;
}

TEST(sub_next_table) {
    ASSERT_STR(subs_of("a=1,b,c=x=y"), "a=1|1;b|(none);c=x=y|x=y;");
    ASSERT_STR(subs_of("a="), "a=|;");
    ASSERT_STR(subs_of(""), "");
    ASSERT_STR(subs_of("a,"), "a|(none);");
    ASSERT_STR(subs_of("a,,b"), "a|(none);|(none);b|(none);"); /* "Illegal suboption """ */
    ASSERT_STR(subs_of(",a"), "|(none);a|(none);");
}

TEST(sub_is_table) {
    ASSERT(options_sub_is("hashpower", "hashpower"));
    ASSERT(options_sub_is("hashpower=5", "hashpower"));
    ASSERT(options_sub_is("hashpower=", "hashpower"));
    ASSERT(!options_sub_is("hashpowerx", "hashpower"));
    ASSERT(!options_sub_is("hash", "hashpower"));
    ASSERT(!options_sub_is("evict_policy=lru", "evict"));
    ASSERT(!options_sub_is("evict=lru", "evict_policy"));
    ASSERT(!options_sub_is("", "evict"));
}

/* Everything one of the -h printers writes, as a string. */
#define CAPTURE(buf, stmt)                                                 \
    do {                                                                   \
        char *th_p = NULL;                                                 \
        size_t th_n = 0;                                                   \
        FILE *out = open_memstream(&th_p, &th_n);                          \
        stmt;                                                              \
        fclose(out);                                                       \
        snprintf(buf, sizeof(buf), "%s", th_p);                            \
        free(th_p);                                                        \
    } while (0)

TEST(label_and_help_layout) {
    char label[80], got[512];
    options_label_format(label, sizeof(label), 'p', "port", "<num>");
    ASSERT_STR(label, "-p, --port=<num>");
    options_label_format(label, sizeof(label), 'd', "daemon", NULL);
    ASSERT_STR(label, "-d, --daemon");
    options_label_format(label, sizeof(label), 'D', NULL, "<char>");
    ASSERT_STR(label, "-D <char>");
    options_label_format(label, sizeof(label), OPTIONS_LONG_ONLY, "metrics", "<host:port>");
    ASSERT_STR(label, "    --metrics=<host:port>");
    options_label_format(label, sizeof(label), 0, "-vv", NULL);
    ASSERT_STR(label, "-vv");

    CAPTURE(got, options_label_print(out, 8, "-p"));
    ASSERT_STR(got, "-p      ");
    CAPTURE(got, options_label_print(out, 4, "-p, --port"));
    ASSERT_STR(got, "-p, --port ");                  /* past the column: one space */

    CAPTURE(got, options_help_print(out, 4, "port (default: %s)\nsecond line", "11211", NULL));
    ASSERT_STR(got, "port (default: 11211)\n    second line\n");
    CAPTURE(got, options_help_print(out, 2, "no default %s here", NULL, "(note)"));
    ASSERT_STR(got, "no default %s here\n  (note)\n");
    CAPTURE(got, options_help_print(out, 2, "only %s once %s", "X", NULL));
    ASSERT_STR(got, "only X once %s\n");
}

/* A small table run through getopt: its keys, its arguments, its complaints. */
static bool table(struct options_getopt *g) {
    options_getopt_init(g, "prog");
    return options_getopt_add(g, 'p', "port", required_argument, required_argument) &&
           options_getopt_add(g, 'P', "pool", required_argument, required_argument) &&
           options_getopt_add(g, 'v', "verbose", no_argument, optional_argument) &&
           options_getopt_add(g, 'd', "daemon", no_argument, no_argument) &&
           options_getopt_add(g, 'D', NULL, required_argument, required_argument) &&
           options_getopt_add(g, OPTIONS_LONG_ONLY, "metrics", required_argument,
                              required_argument);
}

/* The keys and arguments read from argv, as "key=arg " each, then the complaint. */
static const char *run(int argc, char **argv) {
    static char out[512];
    struct options_getopt g;
    if (!table(&g))
        return "table full";
    out[0] = '\0';
    int c;
    char *arg;
    while ((c = options_getopt_next(&g, argc, argv, &arg)) != -1) {
        size_t n = strlen(out);
        if (c == '?' || c == ':') {
            char *p = NULL;
            size_t len = 0;
            FILE *err = open_memstream(&p, &len);
            options_getopt_complain(&g, err, c, argv);
            fclose(err);
            snprintf(out + n, sizeof(out) - n, "[%c] %s", c, p);
            free(p);
            break;
        }
        snprintf(out + n, sizeof(out) - n, "%d=%s ", c, arg ? arg : "-");
    }
    return out;
}

#define RUN(...)                                                           \
    ({                                                                     \
        char *th_argv[] = {"prog", __VA_ARGS__, NULL};                     \
        run((int)N(th_argv) - 1, th_argv);                                 \
    })

TEST(getopt_from_table) {
    ASSERT_STR(RUN("-p", "5", "--pool=x", "-v", "--verbose=3", "-dD:"),
               "112=5 80=x 118=- 118=3 100=- 68=: ");
    ASSERT_STR(RUN("--metrics", ":9"), "256=:9 ");
    ASSERT_STR(RUN("--po=1"), "[?] prog: option '--po=1' is ambiguous; possibilities: "
                              "'--port' '--pool'\n");
    ASSERT_STR(RUN("--por", "1"), "112=1 ");    /* an unambiguous abbreviation */
    ASSERT_STR(RUN("-x"), "[?] prog: invalid option -- 'x'\n");
    ASSERT_STR(RUN("--nosuch"), "[?] prog: unrecognized option '--nosuch'\n");
    ASSERT_STR(RUN("-p"), "[:] prog: option requires an argument -- 'p'\n");
    ASSERT_STR(RUN("--port"), "[:] prog: option '--port' requires an argument\n");
    ASSERT_STR(RUN("-D"), "[:] prog: option requires an argument -- 'D'\n");
    ASSERT_STR(RUN("--daemon=1"), "[?] prog: option '--daemon' doesn't allow an argument\n");
}

/* A getopt_long() table taken whole: long forms, and short ones below OPTIONS_LONG_ONLY. */
TEST(getopt_from_a_getopt_long_table) {
    static const struct option longs[] = {
        {"port", required_argument, 0, 'p'},
        {"quiet", no_argument, 0, 'q'},
        {"stall", required_argument, 0, OPTIONS_LONG_ONLY + 1},
        {0, 0, 0, 0},
    };
    struct options_getopt g;
    options_getopt_init(&g, "prog");
    ASSERT(options_getopt_table(&g, longs));
    char *argv[] = {"prog", "-p", "7", "--quiet", "--stall=3", "-q", NULL};
    int c, n = 0, keys[8];
    char *arg, *args[8];
    while ((c = options_getopt_next(&g, 6, argv, &arg)) != -1 && n < 8) {
        keys[n] = c;
        args[n++] = arg;
    }
    ASSERT_EQ(n, 4);
    ASSERT_EQ(keys[0], 'p');
    ASSERT_STR(args[0], "7");
    ASSERT_EQ(keys[1], 'q');
    ASSERT_EQ(keys[2], OPTIONS_LONG_ONLY + 1);
    ASSERT_STR(args[2], "3");
    ASSERT_EQ(keys[3], 'q');
    /* two names for one key: a complaint names the one typed */
    static const struct option twins[] = {
        {"config", required_argument, 0, OPTIONS_LONG_ONLY + 2},
        {"config-file", required_argument, 0, OPTIONS_LONG_ONLY + 2},
        {0, 0, 0, 0},
    };
    for (int t = 0; t < 2; t++) {
        char *targv[] = {"prog", t ? "--config-file" : "--config", NULL};
        options_getopt_init(&g, "prog");
        options_getopt_table(&g, twins);
        ASSERT_EQ(options_getopt_next(&g, 2, targv, &arg), ':');
        char *p = NULL;
        size_t len = 0;
        FILE *err = open_memstream(&p, &len);
        options_getopt_complain(&g, err, ':', targv);
        fclose(err);
        ASSERT_STR(p, t ? "prog: option '--config-file' requires an argument\n"
                        : "prog: option '--config' requires an argument\n");
        free(p);
    }
    char *bad[] = {"prog", "-s", NULL};         /* a long-only key has no short form */
    options_getopt_init(&g, "prog");
    options_getopt_table(&g, longs);
    ASSERT_EQ(options_getopt_next(&g, 2, bad, &arg), '?');
}

TEST(getopt_table_full) {
    struct options_getopt g;
    options_getopt_init(&g, NULL);
    static char names[OPTIONS_MAX + 1][16];
    size_t added = 0;
    for (int i = 0; i <= OPTIONS_MAX; i++) {
        snprintf(names[i], sizeof(names[i]), "o%d", i);
        if (options_getopt_add(&g, OPTIONS_LONG_ONLY + i, names[i], no_argument, no_argument))
            added++;
    }
    ASSERT_EQ(added, OPTIONS_MAX);
}

int main(void) {
    return RUN_TESTS();
}
