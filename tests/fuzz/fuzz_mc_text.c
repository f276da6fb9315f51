/*
 * fuzz_mc_text.c -- mutation fuzzer for the text protocol codec.
 *
 *   fuzz_mc_text N        N mutated inputs from a fixed seed (make test: 200000)
 *   fuzz_mc_text N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target
 * (LLVMFuzzerTestOneInput) running the same checks on each input.  The
 * run itself (rng, mutations, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h.
 *
 * Each input is parsed from an exact-size heap copy (so a sanitizer build
 * catches any read past the end) and must keep these invariants:
 *   - the result is one of the four; consumed <= len;
 *   - NEED_MORE consumes nothing and happens only without a newline;
 *     CLOSE without a newline only past MC_LINE_MAX bytes;
 *   - OK and ERROR consume exactly the first line;
 *   - the line alone, and the line with other bytes behind it, parse the
 *     same; every strict prefix of the line is NEED_MORE (up to 2048 bytes);
 *   - every span (key, keys, tokens) lies inside the line; keys iterate
 *     to exactly nkeys keys of 1..250 bytes, none holding a space;
 *   - numbers agree with libc's strtoull/strtoll read the way memcached's
 *     safe_strto* read them (an independent model of the number rules).
 */
#include "protocol/mc_text.h"

#include "fuzz_driver.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* An independent model of memcached's number rules, on top of libc         */
/* ---------------------------------------------------------------------- */

/* A NUL-terminated copy of t, as memcached's tokenizer leaves it. */
static char *span_cstr(struct mc_span t) {
    char *s = malloc(t.len + 1);
    memcpy(s, t.p, t.len);
    s[t.len] = '\0';
    return s;
}

static bool model_u64(struct mc_span t, uint64_t *out) {
    char *s = span_cstr(t), *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    bool ok = errno != ERANGE && end != s &&
              (*end == '\0' || *end == ' ' || (*end >= '\t' && *end <= '\r')) &&
              !((long long)v < 0 && strchr(s, '-') != NULL);
    free(s);
    *out = v;
    return ok;
}

static bool model_i64(struct mc_span t, int64_t *out) {
    char *s = span_cstr(t), *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    bool ok = errno != ERANGE && end != s &&
              (*end == '\0' || *end == ' ' || (*end >= '\t' && *end <= '\r'));
    free(s);
    *out = v;
    return ok;
}

/* ---------------------------------------------------------------------- */
/* The invariants                                                           */
/* ---------------------------------------------------------------------- */

static bool inside(struct mc_span s, const char *lo, const char *hi) {
    return s.len == 0 || (s.p >= lo && s.p + s.len <= hi);
}

static bool same(const struct mc_req *a, const char *abuf, const struct mc_req *b, const char *bbuf) {
    if (a->cmd != b->cmd || a->err != b->err || a->noreply != b->noreply || a->nkeys != b->nkeys ||
        a->flags != b->flags || a->exptime != b->exptime || a->vlen != b->vlen || a->cas != b->cas ||
        a->delta != b->delta || a->ntokens != b->ntokens || a->key.len != b->key.len ||
        a->keys.len != b->keys.len)
        return false;
    if (a->key.len && a->key.p - abuf != b->key.p - bbuf)
        return false;
    if (a->keys.len && a->keys.p - abuf != b->keys.p - bbuf)
        return false;
    for (int i = 0; i < a->ntokens; i++)
        if (a->tok[i].len != b->tok[i].len || a->tok[i].p - abuf != b->tok[i].p - bbuf)
            return false;
    return true;
}

static bool is_storage(enum mc_cmd c) {
    return c == MC_CMD_SET || c == MC_CMD_ADD || c == MC_CMD_REPLACE || c == MC_CMD_APPEND ||
           c == MC_CMD_PREPEND || c == MC_CMD_CAS;
}

/* The numbers of an accepted request, read again through the libc model. */
static void check_numbers(const struct mc_req *req) {
    uint64_t u;
    int64_t i;

    if (is_storage(req->cmd)) {
        CHECK(model_u64(req->tok[2], &u) && u == req->flags);
        CHECK(model_i64(req->tok[3], &i) && i == req->exptime);
        CHECK(model_i64(req->tok[4], &i) && i == (int64_t)req->vlen);
        CHECK(req->vlen <= INT_MAX - 2);
        if (req->cmd == MC_CMD_CAS)
            CHECK(model_u64(req->tok[5], &u) && u == req->cas);
    } else if (req->cmd == MC_CMD_INCR || req->cmd == MC_CMD_DECR) {
        CHECK(model_u64(req->tok[2], &u) && u == req->delta);
    } else if (req->cmd == MC_CMD_TOUCH) {
        CHECK(model_i64(req->tok[2], &i) && i == req->exptime);
    } else if (req->cmd == MC_CMD_GAT || req->cmd == MC_CMD_GATS) {
        CHECK(model_i64(req->tok[1], &i) && i == req->exptime);
    }
}

/* A refused storage line must have a number the model refuses too. */
static void check_bad_storage(const struct mc_req *req) {
    uint64_t u, c = 0;
    int64_t e, v;

    if (!is_storage(req->cmd) || req->err != MC_ERR_BAD_FORMAT || req->tok[1].len > MC_KEY_MAX)
        return;
    bool ok = model_u64(req->tok[2], &u) && u <= UINT32_MAX && model_i64(req->tok[3], &e) &&
              model_i64(req->tok[4], &v) && v >= 0 && v <= INT_MAX - 2 &&
              (req->cmd != MC_CMD_CAS || model_u64(req->tok[5], &c));
    CHECK(!ok);
}

/* How often each result came up, reported at the end of a plain run. */
static long seen[4], seen_ok_numbers;

static void check_one(const char *in, size_t len) {
    char *buf = malloc(len ? len : 1);
    memcpy(buf, in, len);
    struct mc_req req;
    size_t consumed = 12345;
    enum mc_parse r = mc_text_parse(&req, buf, len, &consumed);
    const char *nl = len ? memchr(buf, '\n', len) : NULL;
    size_t ll = nl ? (size_t)(nl - buf) + 1 : 0;

    CHECK(r == MC_PARSE_OK || r == MC_PARSE_NEED_MORE || r == MC_PARSE_ERROR || r == MC_PARSE_CLOSE);
    CHECK(consumed <= len);
    seen[r]++;
    if (r == MC_PARSE_NEED_MORE) {
        CHECK(consumed == 0);
        CHECK(nl == NULL);
    }
    if (nl == NULL) {
        CHECK(r == MC_PARSE_NEED_MORE || r == MC_PARSE_CLOSE);
        CHECK(r == MC_PARSE_NEED_MORE || len > MC_LINE_MAX);
        if (len > MC_LINE_MAX) {
            size_t sp = 0;
            while (sp < len && buf[sp] == ' ')
                sp++;
            bool multiget = sp <= 100 && ((len - sp >= 4 && memcmp(buf + sp, "get ", 4) == 0) ||
                                          (len - sp >= 5 && memcmp(buf + sp, "gets ", 5) == 0));
            CHECK(multiget == (r == MC_PARSE_NEED_MORE));
        }
        free(buf);
        return;
    }
    if (r == MC_PARSE_OK || r == MC_PARSE_ERROR)
        CHECK(consumed == ll);
    if (r == MC_PARSE_ERROR)
        CHECK(req.err > MC_ERR_NONE && req.err < MC_ERR_COUNT && mc_text_err_len(req.err) > 2);
    if (r == MC_PARSE_OK)
        CHECK(req.err == MC_ERR_NONE && req.cmd != MC_CMD_NONE);
    if (r == MC_PARSE_CLOSE)
        CHECK(req.cmd == MC_CMD_NONE);

    /* Spans stay inside the line. */
    const char *lo = buf, *hi = buf + ll;
    CHECK(req.ntokens >= 0 && req.ntokens < MC_MAX_TOKENS);
    for (int i = 0; i < req.ntokens; i++) {
        CHECK(req.tok[i].len > 0 && inside(req.tok[i], lo, hi));
        CHECK(memchr(req.tok[i].p, ' ', req.tok[i].len) == NULL);
        CHECK(memchr(req.tok[i].p, '\n', req.tok[i].len) == NULL);
    }
    CHECK(inside(req.key, lo, hi) && inside(req.keys, lo, hi));

    if (r == MC_PARSE_OK) {
        if (req.cmd == MC_CMD_GET || req.cmd == MC_CMD_GETS || req.cmd == MC_CMD_GAT ||
            req.cmd == MC_CMD_GATS) {
            struct mc_span rest = req.keys, key;
            uint32_t n = 0;
            while (mc_text_next_key(&rest, &key)) {
                CHECK(key.len >= 1 && key.len <= MC_KEY_MAX && inside(key, lo, hi));
                CHECK(memchr(key.p, ' ', key.len) == NULL);
                if (n == 0)
                    CHECK(key.p == req.key.p && key.len == req.key.len);
                n++;
            }
            CHECK(n == req.nkeys);
        } else if (req.key.len) {
            CHECK(req.key.len <= MC_KEY_MAX);
        }
        check_numbers(&req);
        seen_ok_numbers += is_storage(req.cmd) || req.cmd == MC_CMD_INCR || req.cmd == MC_CMD_DECR ||
                           req.cmd == MC_CMD_TOUCH || req.cmd == MC_CMD_GAT || req.cmd == MC_CMD_GATS;
    }
    if (r == MC_PARSE_ERROR)
        check_bad_storage(&req);

    /* The line alone parses the same. */
    if (ll < len) {
        char *line = malloc(ll);
        memcpy(line, buf, ll);
        struct mc_req req2;
        size_t c2;
        enum mc_parse r2 = mc_text_parse(&req2, line, ll, &c2);
        CHECK(r2 == r && same(&req, buf, &req2, line));
        CHECK(r == MC_PARSE_CLOSE || c2 == consumed);
        free(line);
    }
    /* So does the line with something else behind it. */
    {
        char *more = malloc(ll + 7);
        memcpy(more, buf, ll);
        memcpy(more + ll, "get x\r\n", 7);
        struct mc_req req2;
        size_t c2;
        enum mc_parse r2 = mc_text_parse(&req2, more, ll + 7, &c2);
        CHECK(r2 == r && same(&req, buf, &req2, more));
        CHECK(r == MC_PARSE_CLOSE || c2 == consumed);
        free(more);
    }
    /* Every strict prefix is NEED_MORE; checked in full on short lines. */
    size_t step = ll < 300 ? 1 : ll / 50 + 1;
    for (size_t i = 0; i < ll && i <= MC_LINE_MAX; i += step) {
        struct mc_req req2;
        size_t c2 = 1;
        CHECK(mc_text_parse(&req2, buf, i, &c2) == MC_PARSE_NEED_MORE && c2 == 0);
    }
    free(buf);
}

/* ---------------------------------------------------------------------- */
/* Corpus and mutations                                                     */
/* ---------------------------------------------------------------------- */

#define C(x) FUZZ_ENTRY(x)
static const struct fuzz_entry corpus[] = {
    C("get k\r\n"), C("gets a b c\r\n"), C("bget k\r\n"), C("   get    a   b   \r\n"),
    C("get k noreply\n"), C("gat 10 k\r\n"), C("gats -1 a b\r\n"), C("gat 10\r\n"),
    C("get / HTTP/1.1\r\n"), C("get k\r\r\n"), C("set k 1 2 3\r\n"), C("set k 0 0 1 noreply\r\n"),
    C("set k 0 0 1 garbage\r\n"), C("add k 7 0 2\r\n"), C("replace k 0 100 1\r\n"),
    C("append k 0 0 1 noreply\r\n"), C("prepend k 0 0 1\r\n"), C("cas k 1 2 3 99\r\n"),
    C("cas k 0 0 1 18446744073709551615 noreply\r\n"), C("set k -0 0 1\r\n"), C("set k +5 0 1\r\n"),
    C("set k \t5 0 1\r\n"), C("set k 5\tz 0 1\r\n"), C("set k 0 -9223372036854775808 1\r\n"),
    C("set k 0 0 2147483645\r\n"), C("set k 0 0 -1\r\n"), C("set k 4294967296 0 1\r\n"),
    C("set k 18446744073709551616 0 1\r\n"), C("set k 0 0 noreply\r\n"), C("delete k\r\n"),
    C("delete k 0\r\n"), C("delete k noreply\r\n"), C("delete k 0 noreply\r\n"),
    C("delete k 5\r\n"), C("delete k 0 0 0\r\n"), C("incr k 1\r\n"),
    C("decr k 18446744073709551615\r\n"), C("incr k -1\r\n"), C("incr k abc noreply\r\n"),
    C("touch k 10\r\n"), C("touch k abc\r\n"), C("flush_all\r\n"), C("flush_all 0 noreply\r\n"),
    C("flush_all noreply 10\r\n"), C("flush_all abc\r\n"), C("version\r\n"), C("verbosity 1\r\n"),
    C("verbosity noreply\r\n"), C("verbosity 1 2 3\r\n"), C("cache_memlimit 100\r\n"),
    C("cache_memlimit abc noreply\r\n"), C("stats\r\n"), C("stats detail on\r\n"),
    C("shutdown graceful\r\n"), C("slabs automove 1 noreply\r\n"), C("slabs reassign 1 2\r\n"),
    C("lru mode flat\r\n"), C("lru_crawler crawl all\r\n"), C("watch fetchers\r\n"),
    C("watch noreply\r\n"), C("quit\r\n"), C("mn\r\n"), C("mg k v\r\n"), C("me k\r\n"), C("mx\r\n"),
    C("\r\n"), C("\n"), C("x\r\n"), C("GET / HTTP/1.1\r\n"), C("POST /x HTTP/1.0\r\n"),
    C("gxx / HTTP/1.1\r\n"), C("foo bar HTTP/2\r\n"), C("get a\0b\r\n"), C("\0get k\r\n"),
    C("get t0 t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 t12 t13 t14 t15 t16 t17 t18 t19 t20 t21 t22 t23\r\n"),
    C("foo t0 t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 t12 t13 t14 t15 t16 t17 t18 t19 t20 HTTP/1.1\r\n"),
    C("set k 0 0 1\r\nx\r\nget k\r\n"),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static const char *const words[] = {
    "get", "gets", "gat", "gats", "set", "cas", "delete", "incr", "touch", "flush_all",
    "verbosity", "cache_memlimit", "slabs", "automove", "noreply", "0", "-0", "-1", "+7",
    "4294967295", "4294967296", "18446744073709551615", "18446744073709551616",
    "9223372036854775807", "-9223372036854775808", "-9223372036854775809", "2147483645",
    "2147483646", "HTTP/1.1", " ", "  ", "\r", "\t", "\0", "\r\n", "\n", "mg",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const size_t run_sizes[] = {100, 250, 251, 1000, 2048, 2100, 3000};

static void report(long iters) {
    printf("fuzz_mc_text: %ld inputs (ok %ld, of which with numbers %ld; need_more %ld; error %ld; "
           "close %ld), all invariants held\n",
           iters, seen[MC_PARSE_OK], seen_ok_numbers, seen[MC_PARSE_NEED_MORE], seen[MC_PARSE_ERROR],
           seen[MC_PARSE_CLOSE]);
}

static const struct fuzz_config cfg = {
    .name = "fuzz_mc_text",
    .check = check_one,
    .report = report,
    .seed = 0x5eed5eed12345678ULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 4,
    .random_max = 200,
    .words = words,
    .nwords = NWORDS,
    .interesting = FUZZ_ENTRY(" \r\n\t\0-+09kH/"),
    .run_sizes = run_sizes,
    .nrun_sizes = sizeof(run_sizes) / sizeof(run_sizes[0]),
    .run_fill = " aa", /* one in three runs is spaces */
};

FUZZ_DRIVER(&cfg)
