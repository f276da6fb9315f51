/*
 * fuzz_mc_text_resp.c -- mutation fuzzer for the text reply parser
 * (mc_text_parse_resp, the client's half of the text protocol).
 *
 *   fuzz_mc_text_resp N        N mutated inputs from a fixed seed (make test: 200000)
 *   fuzz_mc_text_resp N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target.  The run itself
 * (rng, mutations, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h.
 *
 * Each input is parsed from an exact-size heap copy and must keep:
 *   - the result is OK, NEED_MORE or ERROR; NEED_MORE and ERROR consume
 *     nothing; OK consumes at most len bytes, and only after a "\n";
 *   - without a "\n" in the first MC_RESP_LINE_MAX bytes: NEED_MORE below
 *     that many bytes, ERROR from there on;
 *   - OK: every strict prefix of the consumed bytes is NEED_MORE (sampled
 *     on long elements), and bytes behind change nothing;
 *   - every span (key, value, msg) lies inside the consumed bytes;
 *   - a VALUE's value span is exactly vlen bytes, right before the final
 *     "\r\n", and its key is 1..250 bytes without a space;
 *   - NEED_MORE with `need` set: need > len, and once that many bytes
 *     are there the element is OK and that long (or ERROR, when the data's
 *     "\r\n" is wrong).
 */
#include "protocol/mc_text_resp.h"

#include "fuzz_driver.h"

static bool inside(struct mc_span s, const char *lo, size_t n) {
    return s.len == 0 || (s.p >= lo && s.p + s.len <= lo + n);
}

static long seen[4], seen_kind[MC_RESP_KIND_COUNT];

#define UNSET ((size_t)-1)

static enum mc_parse parse(struct mc_resp *r, const char *b, size_t n, size_t *consumed) {
    *consumed = UNSET;
    enum mc_parse rc = mc_text_parse_resp(r, b, n, consumed);
    if (rc != MC_PARSE_OK) {
        CHECK(*consumed == UNSET || *consumed == 0);
        *consumed = 0;
    }
    return rc;
}

/* What an OK element must look like. */
static void check_ok(const struct mc_resp *r, const char *b, size_t len, size_t consumed) {
    CHECK(consumed >= 1 && consumed <= len);
    CHECK(r->kind > MC_RESP_NONE && r->kind < MC_RESP_KIND_COUNT);
    CHECK(inside(r->key, b, consumed) && inside(r->value, b, consumed) &&
          inside(r->msg, b, consumed));
    const char *nl = memchr(b, '\n', consumed);
    CHECK(nl != NULL);
    size_t line = (size_t)(nl - b) + 1;
    if (r->kind == MC_RESP_VALUE) {
        CHECK(r->value.len == r->vlen);
        CHECK(consumed == line + (size_t)r->vlen + 2);
        CHECK(r->value.p == b + line && memcmp(b + consumed - 2, "\r\n", 2) == 0);
        CHECK(r->key.len >= 1 && r->key.len <= MC_KEY_MAX);
        CHECK(memchr(r->key.p, ' ', r->key.len) == NULL);
        CHECK(r->key.p + r->key.len <= nl);
    } else {
        CHECK(consumed == line);
        CHECK(r->value.len == 0);
    }
}

static void check_one(const char *in, size_t len) {
    char *b = malloc(len ? len : 1);
    memcpy(b, in, len);
    struct mc_resp r;
    size_t consumed;
    enum mc_parse rc = parse(&r, b, len, &consumed);

    CHECK(rc == MC_PARSE_OK || rc == MC_PARSE_NEED_MORE || rc == MC_PARSE_ERROR);
    seen[rc]++;
    size_t scan = len < MC_RESP_LINE_MAX ? len : MC_RESP_LINE_MAX;
    if (memchr(b, '\n', scan) == NULL)
        CHECK(rc == (len >= MC_RESP_LINE_MAX ? MC_PARSE_ERROR : MC_PARSE_NEED_MORE));
    if (rc == MC_PARSE_NEED_MORE && r.need)
        CHECK(r.kind == MC_RESP_VALUE && r.need > len);
    if (rc == MC_PARSE_OK) {
        seen_kind[r.kind]++;
        check_ok(&r, b, len, consumed);
        for (size_t i = 0; i < consumed; i++) {
            if (i >= 64 && i + 3 < consumed && i % 16 != 0)
                continue;
            struct mc_resp r2;
            size_t c2;
            CHECK(parse(&r2, b, i, &c2) == MC_PARSE_NEED_MORE);
        }
    }
    /* Bytes behind a decided element change nothing; an announced length holds. */
    if (rc != MC_PARSE_NEED_MORE || r.need) {
        size_t extra = rc == MC_PARSE_NEED_MORE ? r.need - len + 5 : 5;
        if (extra < 4096) {
            char *more = malloc(len + extra);
            memcpy(more, b, len);
            memset(more + len, '\n', extra);
            if (rc == MC_PARSE_NEED_MORE && r.need >= 2 && r.need - 2 >= len)
                memcpy(more + r.need - 2, "\r\n", 2);
            struct mc_resp r2;
            size_t c2;
            enum mc_parse rc2 = parse(&r2, more, len + extra, &c2);
            if (rc != MC_PARSE_NEED_MORE)
                CHECK(rc2 == rc && c2 == consumed && r2.kind == r.kind);
            else if (more[r.need - 2] == '\r' && more[r.need - 1] == '\n')
                CHECK(rc2 == MC_PARSE_OK && c2 == r.need && r2.kind == MC_RESP_VALUE);
            else    /* the data's terminator was already there, and wrong */
                CHECK(rc2 == MC_PARSE_ERROR && r2.kind == MC_RESP_VALUE);
            free(more);
        }
    }
    free(b);
}

/* ---------------------------------------------------------------------- */
/* Corpus and mutations                                                     */
/* ---------------------------------------------------------------------- */

#define C(x) FUZZ_ENTRY(x)
static const struct fuzz_entry corpus[] = {
    C("VALUE k 0 5\r\nhello\r\n"), C("VALUE k 5 5 18446744073709551615\r\nhello\r\nEND\r\n"),
    C("VALUE k 1 4 0\r\n\r\n\r\n\r\n"), C("VALUE  k  2  1 \r\nx\r\n"), C("VALUE k 0 2\nab\r\n"),
    C("VALUE k 0 0\r\n\r\n"), C("END\r\n"), C("END\n"), C("STORED\r\n"), C("NOT_STORED\r\n"),
    C("EXISTS\r\n"), C("NOT_FOUND\r\n"), C("DELETED\r\n"), C("TOUCHED\r\n"), C("OK\r\n"),
    C("RESET\r\n"), C("0\r\n"), C("18446744073709551615\r\n"), C("18446744073709551616\r\n"),
    C("ERROR\r\n"), C("ERROR Too many open connections\r\n"), C("ERROR: shutdown not enabled\r\n"),
    C("CLIENT_ERROR bad command line format\r\n"),
    C("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"),
    C("SERVER_ERROR out of memory storing object\r\n"), C("SERVER_ERROR: x\r\n"),
    C("VERSION 1.6.18\r\n"), C("STAT pid 1234\r\n"), C("STAT items:1:number 3\r\nEND\r\n"),
    C("BUSY currently processing reassign request\r\n"), C("END extra\r\n"), C("15 apples\r\n"),
    C("key=a exp=-1 la=1 cas=2 fetch=no cls=1 size=63\n"), C("\r\n"), C(" END\r\n"),
    C("VALUE k 0 5\r\nhelloXY"), C("VALUE k 0 -1\r\n"), C("VALUE k 4294967296 1\r\nx\r\n"),
    C("STAT\r\n"),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static const char *const words[] = {
    "VALUE", "VALUE ", "END", "STORED", "NOT_STORED", "EXISTS", "NOT_FOUND", "DELETED",
    "TOUCHED", "OK", "RESET", "ERROR", "ERROR:", "CLIENT_ERROR", "SERVER_ERROR", "VERSION",
    "STAT", " ", "  ", "\r", "\n", "\r\n", "\t", "", "0", "1", "5", "-1", "4294967295",
    "4294967296", "18446744073709551615", "18446744073709551616", "99999999999999999999",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const size_t run_sizes[] = {5, 249, 250, 251, 1000, 8190, 8191, 8192};

static void report(long iters) {
    printf("fuzz_mc_text_resp: %ld inputs (ok %ld: value %ld, number %ld, other %ld; need_more "
           "%ld; error %ld), all invariants held\n",
           iters, seen[MC_PARSE_OK], seen_kind[MC_RESP_VALUE], seen_kind[MC_RESP_NUMBER],
           seen_kind[MC_RESP_OTHER], seen[MC_PARSE_NEED_MORE], seen[MC_PARSE_ERROR]);
}

static const struct fuzz_config cfg = {
    .name = "fuzz_mc_text_resp",
    .check = check_one,
    .report = report,
    .seed = 0x7465787472657370ULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 4,
    .random_max = 200,
    .words = words,
    .nwords = NWORDS,
    .interesting = FUZZ_ENTRY(" \r\n\t\0-+09:VE"),
    .run_sizes = run_sizes,
    .nrun_sizes = sizeof(run_sizes) / sizeof(run_sizes[0]),
    .run_fill = "k 0",
};

FUZZ_DRIVER(&cfg)
