/*
 * fuzz_msg_text.c -- mutation fuzzer for the text wire's parse (msg_text.c),
 * for every op the text wire can say.
 *
 *   fuzz_msg_text N        N mutated inputs from a fixed seed (make test: 200000)
 *   fuzz_msg_text N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target
 * (LLVMFuzzerTestOneInput) running the same checks on each input.  The
 * run itself (rng, mutations, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h.
 *
 * Each input is read as the reply to each of the 16 text ops (key "k"),
 * parsed from an exact-size heap copy (so a sanitizer build catches any
 * read past the end), and must keep these invariants:
 *   - the result is OK, NEED_MORE or ERROR (a reply parser never says
 *     CLOSE); consumed <= len; NEED_MORE and ERROR consume nothing;
 *   - NEED_MORE only while no "\n" is within the line limit, or after a
 *     VALUE line (its data, or a retrieval's END line, still to come; a
 *     VALUE to another op is ERROR once its data is there);
 *   - the answer is one the op can get (or ERROR, CLIENT_ERROR,
 *     SERVER_ERROR); lease fields keep their defaults;
 *   - OK consumes exactly what an independent reading of the bytes says:
 *     one line, or for a HIT the VALUE line, its data, "\r\n" and an END
 *     line.  A HIT's VALUE line names the key "k", has a cas exactly for
 *     gets/gats, and its length, flags and cas (read with strtoull) are
 *     the reply's; a NUMBER is its line's digits;
 *   - every span (value, msg) lies inside the consumed bytes;
 *   - every strict prefix of the consumed bytes is NEED_MORE (a whole
 *     reply is recognised only once its last byte is there: no shorter
 *     prefix can be OK, since each element ends at its own "\n" or
 *     length, and none can be ERROR, since an error needs a whole line or
 *     the line limit, which no prefix of an accepted reply reaches); the
 *     consumed bytes alone, and with another reply behind them, parse the
 *     same;
 *   - ERROR stays ERROR when more bytes arrive (more bytes never mend a
 *     broken reply).
 */
#include "protocol/mc_text_resp.h"
#include "protocol/msg.h"

#define FUZZ_CAP 10000          /* past MC_RESP_LINE_MAX */
#include "fuzz_driver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const enum msg_op ops[] = {
    MSG_GET,     MSG_GETS,    MSG_GAT,     MSG_GATS,   MSG_SET,    MSG_ADD,
    MSG_REPLACE, MSG_APPEND,  MSG_PREPEND, MSG_CAS,    MSG_DELETE, MSG_INCR,
    MSG_DECR,    MSG_TOUCH,   MSG_FLUSH_ALL, MSG_VERSION,
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static long seen[4], seen_hit, seen_ok_ops;

static bool inside(struct mc_span s, const char *lo, const char *hi) {
    return s.len == 0 || (s.p >= lo && s.p + s.len <= hi);
}

static bool same_span(struct mc_span a, const char *abuf, struct mc_span b, const char *bbuf) {
    return a.len == b.len && (a.len == 0 || a.p - abuf == b.p - bbuf);
}

/* Two parses of the same bytes at different addresses agree. */
static bool same(const struct msg_reply *a, const char *abuf, const struct msg_reply *b,
                 const char *bbuf) {
    return a->res == b->res && a->flags == b->flags && a->cas == b->cas &&
           a->number == b->number && a->ttl == b->ttl && a->won == b->won &&
           a->token_sent == b->token_sent && a->stale == b->stale &&
           same_span(a->value, abuf, b->value, bbuf) && same_span(a->msg, abuf, b->msg, bbuf);
}

static bool is_retrieval(enum msg_op op) {
    return op == MSG_GET || op == MSG_GETS || op == MSG_GAT || op == MSG_GATS;
}

/* The replies each op may get (besides ERROR, CLIENT_ERROR, SERVER_ERROR). */
static bool res_allowed(enum msg_op op, enum msg_res res) {
    if (res == MSG_RES_ERROR || res == MSG_RES_CLIENT_ERROR || res == MSG_RES_SERVER_ERROR)
        return true;
    switch (op) {
    case MSG_GET: case MSG_GETS: case MSG_GAT: case MSG_GATS:
        return res == MSG_RES_HIT || res == MSG_RES_MISS;
    case MSG_SET: case MSG_ADD: case MSG_REPLACE: case MSG_APPEND: case MSG_PREPEND:
        return res == MSG_RES_STORED || res == MSG_RES_NOT_STORED;
    case MSG_CAS:
        return res == MSG_RES_STORED || res == MSG_RES_NOT_STORED || res == MSG_RES_EXISTS ||
               res == MSG_RES_NOT_FOUND;
    case MSG_DELETE:
        return res == MSG_RES_DELETED || res == MSG_RES_NOT_FOUND;
    case MSG_INCR: case MSG_DECR:
        return res == MSG_RES_NUMBER || res == MSG_RES_NOT_FOUND;
    case MSG_TOUCH:
        return res == MSG_RES_TOUCHED || res == MSG_RES_NOT_FOUND;
    case MSG_FLUSH_ALL:
        return res == MSG_RES_OK;
    case MSG_VERSION:
        return res == MSG_RES_VERSION;
    default:
        return false;
    }
}

/* Length of the line at p (up to and with its "\n"), 0 if there is none in n bytes. */
static size_t line_len(const char *p, size_t n) {
    const char *nl = memchr(p, '\n', n);
    return nl ? (size_t)(nl - p) + 1 : 0;
}

/* A line's text without "\n" and one "\r" before it. */
static size_t text_len(const char *p, size_t ll) {
    size_t t = ll - 1;
    return t > 0 && p[t - 1] == '\r' ? t - 1 : t;
}

/* A NUL-terminated copy of p[0..n), for libc. */
static char *cstr(const char *p, size_t n) {
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static bool model_u64(const char *p, size_t n, uint64_t *out) {
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    if (n == 0)
        return false;
    char *s = cstr(p, n), *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    bool ok = errno != ERANGE && *end == '\0';
    free(s);
    *out = v;
    return ok;
}

/* Splits a line's text on runs of spaces; up to max words. */
static int split(const char *p, size_t n, struct mc_span *w, int max) {
    int k = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && p[i] == ' ')
            i++;
        if (i == n)
            break;
        size_t s = i;
        while (i < n && p[i] != ' ')
            i++;
        if (k == max)
            return max + 1;
        w[k++] = (struct mc_span){p + s, i - s};
    }
    return k;
}

/*
 * An OK reply checked against an independent reading of its bytes: what
 * it consumed, what its VALUE line or status line said.
 */
static void check_ok(enum msg_op op, const struct msg_reply *r, const char *buf, size_t len,
                     size_t consumed) {
    const char *lo = buf, *hi = buf + consumed;
    CHECK(consumed > 0);
    CHECK(res_allowed(op, r->res));
    CHECK(r->ttl == -1 && !r->won && !r->token_sent && !r->stale);
    CHECK(inside(r->value, lo, hi) && inside(r->msg, lo, hi));
    size_t ll = line_len(buf, len);
    CHECK(ll > 0);
    size_t tl = text_len(buf, ll);
    if (r->res == MSG_RES_HIT) {
        struct mc_span w[6];
        int nw = split(buf, tl, w, 5);
        CHECK(tl > 6 && memcmp(buf, "VALUE ", 6) == 0);
        bool with_cas = op == MSG_GETS || op == MSG_GATS;
        CHECK(nw == (with_cas ? 5 : 4));
        CHECK(w[1].len == 1 && w[1].p[0] == 'k');
        uint64_t flags, vlen, cas;
        CHECK(model_u64(w[2].p, w[2].len, &flags) && flags == r->flags);
        CHECK(model_u64(w[3].p, w[3].len, &vlen) && vlen == r->value.len);
        if (with_cas)
            CHECK(model_u64(w[4].p, w[4].len, &cas) && cas == r->cas);
        else
            CHECK(r->cas == 0);
        CHECK(r->value.p == buf + ll);
        size_t after = ll + r->value.len;
        CHECK(after + 2 <= consumed && buf[after] == '\r' && buf[after + 1] == '\n');
        size_t end = consumed - (after + 2);
        CHECK((end == 5 && memcmp(buf + after + 2, "END\r\n", 5) == 0) ||
              (end == 4 && memcmp(buf + after + 2, "END\n", 4) == 0));
        CHECK(r->msg.len == 0);
        seen_hit++;
        return;
    }
    CHECK(consumed == ll);
    CHECK(r->value.len == 0 && r->flags == 0 && r->cas == 0);
    switch (r->res) {
    case MSG_RES_MISS:
        CHECK(tl == 3 && memcmp(buf, "END", 3) == 0);
        break;
    case MSG_RES_NUMBER: {
        uint64_t v;
        CHECK(model_u64(buf, tl, &v) && v == r->number);
        break;
    }
    case MSG_RES_ERROR: case MSG_RES_CLIENT_ERROR: case MSG_RES_SERVER_ERROR:
    case MSG_RES_VERSION: {
        static const char *const word[] = {
            [MSG_RES_ERROR] = "ERROR", [MSG_RES_CLIENT_ERROR] = "CLIENT_ERROR",
            [MSG_RES_SERVER_ERROR] = "SERVER_ERROR", [MSG_RES_VERSION] = "VERSION",
        };
        size_t n = strlen(word[r->res]);
        CHECK(tl >= n && memcmp(buf, word[r->res], n) == 0);
        CHECK(tl == n || buf[n] == ' ' || (buf[n] == ':' && r->res != MSG_RES_VERSION));
        CHECK(r->msg.len == 0 || (r->msg.p > buf + n && r->msg.p + r->msg.len == buf + tl));
        break;
    }
    default: {
        static const char *const word[] = {
            [MSG_RES_STORED] = "STORED", [MSG_RES_NOT_STORED] = "NOT_STORED",
            [MSG_RES_EXISTS] = "EXISTS", [MSG_RES_NOT_FOUND] = "NOT_FOUND",
            [MSG_RES_DELETED] = "DELETED", [MSG_RES_TOUCHED] = "TOUCHED", [MSG_RES_OK] = "OK",
        };
        CHECK(r->res >= MSG_RES_STORED && r->res <= MSG_RES_OK && r->res != MSG_RES_NUMBER);
        CHECK(tl == strlen(word[r->res]) && memcmp(buf, word[r->res], tl) == 0);
        CHECK(r->msg.len == 0 && r->number == 0);
    }
    }
}

static enum mc_parse parse_at(struct msg_reply *r, const struct msg *m, const char *in, size_t n,
                              size_t *consumed) {
    char *copy = malloc(n ? n : 1);
    memcpy(copy, in, n);
    *consumed = 12345;
    enum mc_parse rc = msg_wire_text.parse(r, m, 0, copy, n, consumed);
    free(copy);
    return rc;
}

static void check_op(enum msg_op op, const char *buf, size_t len) {
    struct msg m = {.op = op, .key = {"k", 1}};
    struct msg_reply r;
    size_t consumed = 12345;
    enum mc_parse rc = msg_wire_text.parse(&r, &m, 0, buf, len, &consumed);

    CHECK(rc == MC_PARSE_OK || rc == MC_PARSE_NEED_MORE || rc == MC_PARSE_ERROR);
    CHECK(consumed <= len);
    seen[rc]++;
    if (rc != MC_PARSE_OK)
        CHECK(consumed == 0);

    size_t scan = len < MC_RESP_LINE_MAX ? len : MC_RESP_LINE_MAX;
    if (rc == MC_PARSE_NEED_MORE)
        CHECK((line_len(buf, scan) == 0 && len < MC_RESP_LINE_MAX) ||
              (len >= 5 && memcmp(buf, "VALUE", 5) == 0));

    /* The codec's first element agrees: its NEED_MORE and ERROR are the wire's. */
    struct mc_resp e;
    size_t en = 0;
    enum mc_parse erc = mc_text_parse_resp(&e, buf, len, &en);
    if (erc != MC_PARSE_OK)
        CHECK(rc == erc);
    else if (e.kind != MC_RESP_VALUE)
        CHECK(rc != MC_PARSE_NEED_MORE && (rc == MC_PARSE_ERROR || consumed == en));
    else if (!is_retrieval(op))
        CHECK(rc == MC_PARSE_ERROR);        /* a whole VALUE to a request without one */

    if (rc == MC_PARSE_ERROR) {
        /* More bytes never mend it. */
        static char more[FUZZ_CAP + 16];
        memcpy(more, buf, len);
        memcpy(more + len, "END\r\n", 5);
        struct msg_reply r2;
        size_t c2;
        CHECK(parse_at(&r2, &m, more, len + 5, &c2) == MC_PARSE_ERROR && c2 == 0);
        return;
    }
    if (rc != MC_PARSE_OK)
        return;
    seen_ok_ops++;
    check_ok(op, &r, buf, len, consumed);

    /* The consumed bytes alone, and with a reply behind them, parse the same. */
    static char more[FUZZ_CAP + 16];
    memcpy(more, buf, consumed);
    memcpy(more + consumed, "STORED\r\n", 8);
    for (int behind = 0; behind < 2; behind++) {
        size_t n = consumed + (behind ? 8 : 0);
        char *copy = malloc(n);
        memcpy(copy, more, n);
        struct msg_reply r2;
        size_t c2 = 12345;
        enum mc_parse rc2 = msg_wire_text.parse(&r2, &m, 0, copy, n, &c2);
        CHECK(rc2 == MC_PARSE_OK && c2 == consumed && same(&r, buf, &r2, copy));
        free(copy);
    }
    /* Every strict prefix is NEED_MORE: all of a short reply, samples and the end of a long one. */
    size_t step = consumed <= 64 ? 1 : consumed / 32 + 1;
    for (size_t cut = 0; cut < consumed; cut = cut + step < consumed - 8 ? cut + step : cut + 1) {
        struct msg_reply r2;
        size_t c2;
        CHECK(parse_at(&r2, &m, buf, cut, &c2) == MC_PARSE_NEED_MORE && c2 == 0);
    }
}

static void check_one(const char *in, size_t len) {
    char *buf = malloc(len ? len : 1);
    memcpy(buf, in, len);
    for (size_t o = 0; o < NOPS; o++)
        check_op(ops[o], buf, len);
    free(buf);
}

/* ---------------------------------------------------------------------- */
/* Corpus: replies memcached 1.6.18 sent (test_msg_text.c's rows, key "k")  */
/* ---------------------------------------------------------------------- */

static const struct fuzz_entry corpus[] = {
    FUZZ_ENTRY("VALUE k 5 5\r\nhello\r\nEND\r\n"),
    FUZZ_ENTRY("VALUE k 5 5 1\r\nhello\r\nEND\r\n"),
    FUZZ_ENTRY("VALUE k 0 0\r\n\r\nEND\r\n"),
    FUZZ_ENTRY("VALUE k 0 0 2\r\n\r\nEND\r\n"),
    FUZZ_ENTRY("VALUE k 3 9\r\nx\r\nEND\r\ny\r\nEND\r\n"),
    FUZZ_ENTRY("VALUE k 3 9 3\r\nx\r\nEND\r\ny\r\nEND\r\n"),
    FUZZ_ENTRY("VALUE k 4294967295 1 18446744073709551615\r\nx\r\nEND\r\n"),
    FUZZ_ENTRY("END\r\n"),
    FUZZ_ENTRY("STORED\r\n"),
    FUZZ_ENTRY("NOT_STORED\r\n"),
    FUZZ_ENTRY("EXISTS\r\n"),
    FUZZ_ENTRY("NOT_FOUND\r\n"),
    FUZZ_ENTRY("DELETED\r\n"),
    FUZZ_ENTRY("TOUCHED\r\n"),
    FUZZ_ENTRY("15\r\n"),
    FUZZ_ENTRY("18446744073709551615\r\n"),
    FUZZ_ENTRY("OK\r\n"),
    FUZZ_ENTRY("VERSION 1.6.18\r\n"),
    FUZZ_ENTRY("ERROR\r\n"),
    FUZZ_ENTRY("CLIENT_ERROR bad command line format\r\n"),
    FUZZ_ENTRY("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"),
    FUZZ_ENTRY("SERVER_ERROR object too large for cache\r\n"),
    FUZZ_ENTRY("SERVER_ERROR out of memory storing object\r\n"),
    /* pipelines and near misses */
    FUZZ_ENTRY("VALUE k 0 1\r\nx\r\nEND\r\nSTORED\r\n"),
    FUZZ_ENTRY("VALUE k 0 1\r\nx\r\nVALUE k 0 1\r\nx\r\nEND\r\n"),
    FUZZ_ENTRY("VALUE j 0 1\r\nx\r\nEND\r\n"),
    FUZZ_ENTRY("VALUE k 0 1\r\nxy\r\nEND\r\n"),
    FUZZ_ENTRY("END\r\nEND\r\n"),
    FUZZ_ENTRY("STORED\r\nDELETED\r\n15\r\n"),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static const char *const words[] = {
    "VALUE", "VALUE k 0 1\r\n", "END", "END\r\n", "STORED", "NOT_STORED", "EXISTS", "NOT_FOUND",
    "DELETED", "TOUCHED", "OK", "VERSION", "ERROR", "ERROR:", "CLIENT_ERROR", "SERVER_ERROR",
    "k", " k ", "0", "1", "5", "-1", "4294967295", "4294967296", "18446744073709551615",
    "18446744073709551616", "\r\n", "\n", "\r", " ", "  ", "",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const size_t run_sizes[] = {100, 250, 251, 1000, 8190, 8191, 8192, 9000};

static void report(long iters) {
    printf("fuzz_msg_text: %ld inputs x %zu ops (ok %ld, of which hit %ld; need_more %ld; "
           "error %ld), all invariants held\n",
           iters, NOPS, seen[MC_PARSE_OK], seen_hit, seen[MC_PARSE_NEED_MORE],
           seen[MC_PARSE_ERROR]);
}

static const struct fuzz_config cfg = {
    .name = "fuzz_msg_text",
    .check = check_one,
    .report = report,
    .seed = 0x7e57a11f0e5eed01ULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 4,
    .random_max = 200,
    .words = words,
    .nwords = NWORDS,
    .interesting = FUZZ_ENTRY(" \r\n0189kVE:"),
    .run_sizes = run_sizes,
    .nrun_sizes = sizeof(run_sizes) / sizeof(run_sizes[0]),
    .run_fill = " vvk",
};

FUZZ_DRIVER(&cfg)
