/*
 * fuzz_sim_trace.c -- mutation fuzzer for cellar-sim's trace readers
 * (src/tools/sim/trace.c): trace_load() on every format it reads.
 *
 *   fuzz_sim_trace N        N mutated inputs from a fixed seed
 *   fuzz_sim_trace N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target.  The run itself
 * (rng, mutations, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h; the
 * corpus is the traces tests/integration/test_sim.py writes (txt, csv with
 * a header and ';', oracleGeneral) and the cellar format of trace.h.
 *
 * trace_load() reads a file, so each input is written to a file in a
 * directory of its own (made once in $TMPDIR, /dev/shm or /tmp, removed
 * at exit; a failed check leaves it), which is also named trace.csv and
 * trace.bin (links), and loaded with an unknown format, with the format
 * guessed (from its content, or from one of the names), and two more of
 * these ways: as oracle, txt or cellar (each checked against a model
 * below), as csv with the default columns, test_sim.py's, tab-separated
 * ones with a TTL, or columns drawn from the rng.  Each load must keep:
 *   - 0 with at least one request, each with a known op, the distinct ids
 *     and the bytes of their first sizes as counted here, and a name; or
 *     -1 with a message and the trace
 *     left empty (an unknown format, nothing in the file, a refused line);
 *   - oracle: one request per whole 24-byte record, its fields as the
 *     record holds them (a size of 0 read as 1);
 *   - txt: one request per line with a word on it (fgets' lines of at
 *     most 4095 bytes, '#' lines skipped), its time the line's number and
 *     an id of up to 19 digits the number itself;
 *   - cellar: one request per line with four or more words (a line with
 *     one to three is refused), its op read from its second word;
 *   - csv: at most one request per line.
 */
#include "tools/sim/trace.h"

#include "fuzz_driver.h"

#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* The files                                                                */
/* ---------------------------------------------------------------------- */

static char dir[64], path_plain[96], path_csv[96], path_bin[96];

static void remove_files(void) {
    unlink(path_csv);
    unlink(path_bin);
    unlink(path_plain);
    rmdir(dir);
}

/* The directory and its links, once per process. */
static void make_files(void) {
    if (dir[0])
        return;
    /* $TMPDIR, else memory (five times faster here than a disk's /tmp), else /tmp */
    const char *tmp = getenv("TMPDIR");
    const char *const where[] = {tmp && *tmp && strlen(tmp) < 40 ? tmp : "/dev/shm", "/dev/shm",
                                 "/tmp"};
    size_t i = 0;
    for (; i < 3; i++) {
        snprintf(dir, sizeof(dir), "%s/fuzz-trace-XXXXXX", where[i]);
        if (mkdtemp(dir) != NULL)
            break;
    }
    if (i == 3) {
        perror("fuzz_sim_trace: mkdtemp");
        exit(2);
    }
    snprintf(path_plain, sizeof(path_plain), "%s/trace", dir);
    snprintf(path_csv, sizeof(path_csv), "%s/trace.csv", dir);
    snprintf(path_bin, sizeof(path_bin), "%s/trace.bin", dir);
    FILE *f = fopen(path_plain, "wb");
    if (f == NULL || fclose(f) != 0 || symlink("trace", path_csv) != 0 ||
        symlink("trace", path_bin) != 0) {
        perror("fuzz_sim_trace: the trace files");
        exit(2);
    }
    atexit(remove_files);
}

static void write_input(const char *in, size_t len) {
    FILE *f = fopen(path_plain, "wb");
    CHECK(f != NULL && fwrite(in, 1, len, f) == len && fclose(f) == 0);
}

/* ---------------------------------------------------------------------- */
/* Models                                                                   */
/* ---------------------------------------------------------------------- */

/* The next line as fgets() with 4096 bytes reads it: [at, *end). */
static size_t next_line(const char *in, size_t len, size_t at) {
    size_t end = at;
    while (end < len && end - at < 4095)
        if (in[end++] == '\n')
            break;
    return end;
}

/* The words of a line as the reader splits it on blanks (up to a NUL, CR or LF). */
static size_t words_of(const char *p, size_t n, size_t *first, size_t *nfirst, size_t *second,
                       size_t *nsecond) {
    size_t words = 0, i = 0;
    for (;;) {
        while (i < n && (p[i] == ' ' || p[i] == '\t'))
            i++;
        if (i == n || p[i] == '\0' || p[i] == '\n' || p[i] == '\r')
            return words;
        size_t s = i;
        while (i < n && p[i] != '\0' && p[i] != '\n' && p[i] != '\r' && p[i] != ' ' &&
               p[i] != '\t')
            i++;
        if (words == 0)
            *first = s, *nfirst = i - s;
        if (words == 1)
            *second = s, *nsecond = i - s;
        words++;
    }
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* s[0..n) as a decimal number; false when it is not all digits. */
static bool digits(const char *s, size_t n, uint64_t *v) {
    *v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *v = *v * 10 + (uint64_t)(s[i] - '0');
    }
    return n > 0;
}

/* Distinct ids and the sum of each one's first size, with a table of our own. */
static void count_unique(const struct trace *t, uint64_t *unique, uint64_t *bytes) {
    size_t cap = 16;
    while (cap < 2 * t->n)
        cap *= 2;
    uint64_t *slot = calloc(cap, sizeof(*slot));
    bool *used = calloc(cap, sizeof(*used));
    *unique = *bytes = 0;
    for (size_t i = 0; i < t->n; i++) {
        uint64_t id = t->req[i].id;
        size_t h = (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 20) & (cap - 1);
        while (used[h] && slot[h] != id)
            h = (h + 1) & (cap - 1);
        if (!used[h]) {
            used[h] = true;
            slot[h] = id;
            ++*unique;
            *bytes += t->req[i].size;
        }
    }
    free(slot);
    free(used);
}

/* What every load keeps. */
static void check_trace(int rc, const struct trace *t, const char *err) {
    if (rc != 0) {
        CHECK(rc == -1 && err[0] != '\0' && memchr(err, '\0', 256) != NULL);
        CHECK(t->req == NULL && t->n == 0);
        return;
    }
    CHECK(t->n >= 1 && t->n <= t->cap && t->req != NULL);
    CHECK(t->name[0] != '\0' && memchr(t->name, '\0', sizeof(t->name)) != NULL);
    for (size_t i = 0; i < t->n; i++)
        CHECK(t->req[i].op <= TRACE_DELETE);
    uint64_t unique, bytes;
    count_unique(t, &unique, &bytes);
    CHECK(t->unique == unique && t->unique_bytes == bytes);
}

static long seen_ok[5], seen_refused, seen_requests;

static int load(struct trace *t, const char *path, const char *format,
                const struct trace_csv *csv, char *err) {
    memset(err, 'x', 256);
    err[255] = '\0';
    int rc = trace_load(t, path, format, csv, err, 256);
    check_trace(rc, t, err);
    seen_refused += rc != 0;
    seen_requests += rc == 0 ? (long)t->n : 0;
    return rc;
}

static void check_oracle(const char *in, size_t len) {
    struct trace t;
    char err[256];
    int rc = load(&t, path_bin, NULL, NULL, err);
    CHECK(rc == (len >= 24 ? 0 : -1));
    if (rc != 0)
        return;
    seen_ok[0]++;
    CHECK(t.n == len / 24);
    for (size_t i = 0; i < t.n; i++) {
        const unsigned char *r = (const unsigned char *)in + 24 * i;
        uint32_t size = le32(r + 12);
        CHECK(t.req[i].time == le32(r) && t.req[i].op == TRACE_GET && t.req[i].ttl == 0);
        CHECK(t.req[i].id == ((uint64_t)le32(r + 4) | (uint64_t)le32(r + 8) << 32));
        CHECK(t.req[i].size == (size ? size : 1));
    }
    trace_free(&t);
    CHECK(load(&t, path_plain, "oracle", NULL, err) == 0 && t.n == len / 24);
    trace_free(&t);
}

static void check_txt(const char *in, size_t len) {
    struct trace t;
    char err[256];
    int rc = load(&t, path_plain, "txt", NULL, err);
    size_t k = 0;
    uint32_t lineno = 0;
    for (size_t at = 0; at < len; at = next_line(in, len, at)) {
        size_t end = next_line(in, len, at), f0 = 0, n0 = 0, f1, n1;
        lineno++;
        if (in[at] == '#' || words_of(in + at, end - at, &f0, &n0, &f1, &n1) == 0)
            continue;
        CHECK(rc == 0 && k < t.n);
        CHECK(t.req[k].time == lineno && t.req[k].size == 1 && t.req[k].op == TRACE_GET);
        uint64_t v;
        if (n0 < 20 && digits(in + at + f0, n0, &v))
            CHECK(t.req[k].id == v);
        k++;
    }
    CHECK(rc == 0 ? t.n == k : k == 0);
    seen_ok[1] += rc == 0;
    trace_free(&t);
}

/* An op as the cellar format names it, or -1. */
static int op_named(const char *s, size_t n) {
    static const char *const names[] = {"get", "gets", "set", "add", "replace", "cas", "delete",
                                        "GET", "SET", "DELETE"};
    static const int ops[] = {TRACE_GET, TRACE_GET, TRACE_SET, TRACE_SET, TRACE_SET,
                              TRACE_SET, TRACE_DELETE, TRACE_GET, TRACE_SET, TRACE_DELETE};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
            return ops[i];
    return -1;
}

static void check_cellar(const char *in, size_t len) {
    struct trace t;
    char err[256];
    int rc = load(&t, path_plain, "cellar", NULL, err);
    size_t k = 0;
    bool refused = false;
    for (size_t at = 0; at < len && !refused; at = next_line(in, len, at)) {
        size_t end = next_line(in, len, at), f0, n0, f1 = 0, n1 = 0;
        size_t w = in[at] == '#' ? 0 : words_of(in + at, end - at, &f0, &n0, &f1, &n1);
        int op = w >= 4 ? op_named(in + at + f1, n1) : -1;
        if (w > 0 && op < 0)
            refused = true;             /* the whole trace is refused */
        else if (w > 0 && rc == 0 && k < t.n)
            CHECK(t.req[k++].op == op);
        else if (w > 0)
            k++;
    }
    CHECK(rc == 0 ? !refused && t.n == k : refused || k == 0);
    seen_ok[2] += rc == 0;
    trace_free(&t);
}

static void check_csv(const char *in, size_t len, const struct trace_csv *csv) {
    struct trace t;
    char err[256];
    size_t lines = 0;
    for (size_t at = 0; at < len; at = next_line(in, len, at))
        lines++;
    if (load(&t, path_plain, "csv", csv, err) == 0) {
        CHECK(t.n <= lines);
        seen_ok[3]++;
    }
    trace_free(&t);
}

/*
 * Every load allocates the reader's first 1.5 MB of requests, which a
 * sanitizer build pays dearly for, so an input is loaded a few of the
 * ways, drawn from the rng: guessed one way, with an unknown format (which
 * reads nothing), and two of the models and csv layouts.
 */
static void check_one(const char *in, size_t len) {
    make_files();
    write_input(in, len);

    struct trace t;
    char err[256];
    const char *guessed[] = {path_plain, path_csv, path_bin};
    if (load(&t, guessed[fuzz_below(3)], NULL, NULL, err) == 0)
        seen_ok[4]++;
    trace_free(&t);
    CHECK(load(&t, path_plain, "no-such-format", NULL, err) == -1);

    static const struct trace_csv fixed[] = {
        {.time_col = 1, .id_col = 2, .size_col = 3, .delim = ','},
        {.time_col = 4, .id_col = 3, .size_col = 1, .delim = ';', .header = true},
        {.time_col = 1, .id_col = 2, .size_col = 3, .ttl_col = 4, .delim = '\t'},
    };
    static const char delims[] = ",; \t|\n";
    size_t first = fuzz_below(7), second = (first + 1 + fuzz_below(6)) % 7;
    for (size_t i = 0; i < 7; i++) {
        if (i != first && i != second)
            continue;
        if (i == 0) {
            check_oracle(in, len);
        } else if (i == 1) {
            check_txt(in, len);
        } else if (i == 2) {
            check_cellar(in, len);
        } else if (i < 6) {
            check_csv(in, len, &fixed[i - 3]);
        } else {
            struct trace_csv drawn = {
                .time_col = (unsigned)fuzz_below(6), .id_col = (unsigned)fuzz_below(40),
                .size_col = (unsigned)fuzz_below(40), .ttl_col = (unsigned)fuzz_below(6),
                .delim = delims[fuzz_below(sizeof(delims) - 1)], .header = fuzz_rnd() % 2,
            };
            check_csv(in, len, &drawn);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Corpus and mutations                                                     */
/* ---------------------------------------------------------------------- */

#define C(x) FUZZ_ENTRY(x)
/* An oracleGeneral record: u32 time, u64 id, u32 size, i64 next access (-1), little-endian. */
#define REC(t, id, size) t "\0\0\0" id "\0\0\0\0\0\0\0" size "\0\0\0" \
                         "\xff\xff\xff\xff\xff\xff\xff\xff"

static const struct fuzz_entry corpus[] = {
    /* test_sim.py: FIFO and LRU worked out by hand, as txt, csv and oracleGeneral */
    C("1\n2\n1\n3\n1\n2\n"),
    C("size;junk;id;time\n1;x;1;0\n1;x;2;1\n1;x;1;2\n1;x;3;3\n1;x;1;4\n1;x;2;5\n"),
    C(REC("\x00", "\x01", "\x01") REC("\x01", "\x02", "\x01") REC("\x02", "\x01", "\x01")
      REC("\x03", "\x03", "\x01") REC("\x04", "\x01", "\x01") REC("\x05", "\x02", "\x01")),
    /* ids above 2^32 and sizes above 2^16, as test_sim.py's second trace */
    C("size;junk;id;time\n70000;x;4294967297;0\n70000;x;4294967298;0\n65536;x;4294967297;1\n"),
    C("\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x70\x11\x01\x00"
      "\xff\xff\xff\xff\xff\xff\xff\xff"
      "\x01\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"
      "\xff\xff\xff\xff\xff\xff\xff\xff"),
    /* the cellar format (trace.h): <time> <op> <key> <size> [<ttl>], '#' comments */
    C("# time op key size ttl\n0 get user:1 100\n0 set user:1 100 60\n1 gets user:2 5\n"
      "2 delete user:1 0\n3 add k 7\n3 replace k 8\n4 cas k 9\n5 GET k 1\n5 SET k 1\n"
      "6 DELETE k 1\n"),
    C("0 get a 10\n\n1 get b 20\t\r\n  2\tget\ta\t10\n"),
    C("0 get a\n"),
    C("0 fetch a 10\n"),
    C("1.5 get a 4294967296 99999999999\n"),
    /* txt and csv at their edges */
    C("# ids\n18446744073709551615\n99999999999999999999\nkey-a\n\n  7  \n"),
    C("1,2,3\n4,5\n,,\n7,x,\n"),
    C("\t1\t2\t3\t4\n5\t6\t7\t8\n"),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static const char *const words[] = {
    "get", "gets", "set", "add", "replace", "cas", "delete", "GET", "SET", "DELETE", "#", "0",
    "1", "4294967295", "4294967296", "18446744073709551615", "99999999999999999999", "1.5",
    ",", ";", "|", " ", "\t", "\r", "\n", "", "\r\n",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const size_t run_sizes[] = {24, 100, 4094, 4095, 4096, 5000};

/* Whole records now and then: one repeated, or a field set to an edge. */
static size_t mutate(char *b, size_t len) {
    if (len >= 24 && len % 24 == 0 && fuzz_rnd() % 2) {
        size_t r = 24 * fuzz_below(len / 24);
        if (fuzz_rnd() % 2)
            return fuzz_insert(b, len, r, b + r, 24);
        static const unsigned offs[] = {0, 4, 8, 12, 16, 20};
        memset(b + r + offs[fuzz_below(6)], fuzz_rnd() % 2 ? 0 : 0xff, 4);
        return len;
    }
    return fuzz_mutate_line(b, len);
}

static void report(long iters) {
    printf("fuzz_sim_trace: %ld inputs (loaded: oracle %ld, txt %ld, cellar %ld, csv %ld, "
           "guessed %ld; %ld requests read; %ld loads refused), all invariants held\n",
           iters, seen_ok[0], seen_ok[1], seen_ok[2], seen_ok[3], seen_ok[4], seen_requests,
           seen_refused);
}

static const struct fuzz_config cfg = {
    .name = "fuzz_sim_trace",
    .check = check_one,
    .report = report,
    .seed = 0x7ace5eed5111a7e5ULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 4,
    .random_max = 300,
    .mutate = mutate,
    .words = words,
    .nwords = NWORDS,
    .interesting = FUZZ_ENTRY(" \t\r\n\0#,;0"),
    .run_sizes = run_sizes,
    .nrun_sizes = sizeof(run_sizes) / sizeof(run_sizes[0]),
    .run_fill = " 1a",
};

FUZZ_DRIVER(&cfg)
