/*
 * fuzz_msg_meta.c -- mutation fuzzer for the meta replies: the reply codec
 * (mc_meta_parse_resp) and the meta wire's parse for every op.
 *
 *   fuzz_msg_meta N        N mutated inputs from a fixed seed (make test: 200000)
 *   fuzz_msg_meta N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target
 * (LLVMFuzzerTestOneInput) running the same checks on each input.  The
 * run itself (rng, mutations, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h.
 *
 * Each input is parsed from an exact-size heap copy (so a sanitizer build
 * catches any read past the end) and must keep these invariants:
 *   - the result is OK, NEED_MORE or ERROR (a reply parser never says
 *     CLOSE); consumed <= len; NEED_MORE and ERROR consume nothing
 *     (*consumed is 0);
 *   - NEED_MORE only while no "\n" is within the line limit, or a VA line
 *     is whole and its data is not (need then says how much is);
 *   - OK consumes the first line, and for VA its data and "\r\n" too;
 *     every strict prefix of that is NEED_MORE, and it parses the same
 *     alone and with another reply behind it;
 *   - every span (flag tokens, value, msg) lies inside the consumed bytes;
 *     flags are letters, their tokens hold no space, and they are the
 *     line's words after the code, as an independent split finds them;
 *   - the wire, for every op: OK exactly when the codec is OK and the
 *     reply is one the op allows (then the same bytes are consumed),
 *     NEED_MORE exactly when the codec is; the answer is one the op can
 *     get, its spans inside the consumed bytes, a NUMBER the digits of
 *     the value (checked with libc's strtoull), and the reply's return
 *     flags only those the op's request asked for (W Z X on any mg), each
 *     once.
 */
#include "protocol/mc_meta_resp.h"
#include "protocol/msg.h"

#define FUZZ_CAP 10000          /* past MC_META_RESP_LINE_MAX */
#include "fuzz_driver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long seen[4], seen_va, seen_wire_ok;

static bool inside(struct mc_span s, const char *lo, const char *hi) {
    return s.len == 0 || (s.p >= lo && s.p + s.len <= hi);
}

static bool same_span(struct mc_span a, const char *abuf, struct mc_span b, const char *bbuf) {
    return a.len == b.len && (a.len == 0 || a.p - abuf == b.p - bbuf);
}

/* Two parses of the same bytes at different addresses agree. */
static bool same(const struct mc_meta_resp *a, const char *abuf, const struct mc_meta_resp *b,
                 const char *bbuf) {
    if (a->code != b->code || a->nflags != b->nflags || a->vlen != b->vlen)
        return false;
    for (int i = 0; i < a->nflags; i++)
        if (a->flags[i].c != b->flags[i].c ||
            !same_span(a->flags[i].arg, abuf, b->flags[i].arg, bbuf))
            return false;
    return same_span(a->value, abuf, b->value, bbuf) && same_span(a->msg, abuf, b->msg, bbuf);
}

/*
 * The model of a flag line: the words after the code, split on runs of
 * spaces, are the flags in order, each its first byte and the rest.
 */
static void check_flag_words(const struct mc_meta_resp *r, const char *p, const char *end) {
    int i = 0;
    while (p < end) {
        if (*p == ' ') {
            p++;
            continue;
        }
        const char *e = memchr(p, ' ', (size_t)(end - p));
        if (e == NULL)
            e = end;
        CHECK(i < r->nflags && r->flags[i].c == *p);
        CHECK(r->flags[i].arg.p == p + 1 && r->flags[i].arg.len == (size_t)(e - p - 1));
        i++;
        p = e;
    }
    CHECK(i == r->nflags);
}

/* What an OK parse must look like; ll is the first line's length with its "\n". */
static void check_ok(const struct mc_meta_resp *r, const char *buf, size_t ll, size_t consumed) {
    const char *lo = buf, *hi = buf + consumed;
    const char *end = buf + ll - 1;
    if (end > buf && end[-1] == '\r')
        end--;
    CHECK(r->code > MC_META_CODE_NONE && r->code < MC_META_CODE_COUNT);
    CHECK(r->nflags >= 0 && r->nflags <= MC_META_RESP_MAX_FLAGS);
    for (int i = 0; i < r->nflags; i++) {
        unsigned char c = (unsigned char)r->flags[i].c;
        CHECK((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'));
        CHECK(inside(r->flags[i].arg, lo, end));
        CHECK(memchr(r->flags[i].arg.p, ' ', r->flags[i].arg.len) == NULL);
    }
    CHECK(inside(r->value, lo, hi) && inside(r->msg, lo, end));
    if (r->code == MC_META_CODE_VA) {
        seen_va++;
        CHECK(consumed == ll + r->vlen + 2 && r->value.len == r->vlen);
        CHECK(r->value.p == buf + ll || r->vlen == 0);
        CHECK(buf[consumed - 2] == '\r' && buf[consumed - 1] == '\n');
    } else {
        CHECK(consumed == ll);
    }
    if (r->code >= MC_META_CODE_HD && r->code <= MC_META_CODE_MN)
        check_flag_words(r, buf + 2, end);
    if (r->code == MC_META_CODE_OTHER)
        CHECK(r->msg.p == buf && r->msg.p + r->msg.len == end);
}

/* The replies each op may get (besides ERROR, CLIENT_ERROR, SERVER_ERROR). */
static bool res_allowed(enum msg_op op, enum msg_res res) {
    if (res == MSG_RES_ERROR || res == MSG_RES_CLIENT_ERROR || res == MSG_RES_SERVER_ERROR)
        return true;
    switch (op) {
    case MSG_GET: case MSG_GETS: case MSG_GAT: case MSG_GATS: case MSG_LEASE_GET:
        return res == MSG_RES_HIT || res == MSG_RES_MISS;
    case MSG_TOUCH:
        return res == MSG_RES_TOUCHED || res == MSG_RES_NOT_FOUND;
    case MSG_CAS: case MSG_LEASE_SET:
        if (res == MSG_RES_EXISTS || res == MSG_RES_NOT_FOUND)
            return true;
        /* fall through */
    case MSG_SET: case MSG_ADD: case MSG_REPLACE: case MSG_APPEND: case MSG_PREPEND:
        return res == MSG_RES_STORED || res == MSG_RES_NOT_STORED;
    case MSG_DELETE:
        return res == MSG_RES_DELETED || res == MSG_RES_NOT_FOUND;
    case MSG_INCR: case MSG_DECR:
        return res == MSG_RES_NUMBER || res == MSG_RES_NOT_FOUND;
    case MSG_FLUSH_ALL:
        return res == MSG_RES_OK;
    case MSG_VERSION:
        return res == MSG_RES_VERSION;
    default:
        return false;
    }
}

/*
 * The return flags a reply the wire accepts may carry: those the op's
 * request asks for, and W Z X on an mg's VA or HD; an EN none.
 */
static const char *flags_allowed(enum msg_op op, enum mc_meta_code code) {
    if (code != MC_META_CODE_VA && code != MC_META_CODE_HD)
        return "";
    switch (op) {
    case MSG_GET: case MSG_GAT:   return "fWZX";
    case MSG_GETS: case MSG_GATS: return "fcWZX";
    case MSG_LEASE_GET:           return "fctWZX";
    case MSG_TOUCH:               return "WZX";
    default:                      return "";
    }
}

/* NUMBER: the value's digits, as libc reads them. */
static void check_number(const struct msg_reply *w, const struct mc_meta_resp *r) {
    char digits[32];
    CHECK(r->value.len >= 1 && r->value.len <= 20);
    memcpy(digits, r->value.p, r->value.len);
    digits[r->value.len] = '\0';
    CHECK(strspn(digits, "0123456789") == r->value.len);
    errno = 0;
    unsigned long long v = strtoull(digits, NULL, 10);
    CHECK(errno == 0 && v == w->number);
}

/*
 * A raw meta command takes any reply the codec reads as HD VA MN EN NF NS
 * EX or an error, consuming the same bytes, with its code and flags text
 * inside them.
 */
static void check_raw(const char *buf, size_t len, enum mc_parse rc,
                      const struct mc_meta_resp *r, size_t consumed) {
    struct msg m = {.op = MSG_META, .key = {"k", 1}, .meta_cmd = 'g'};
    struct msg_reply w;
    size_t wc = 12345;
    enum mc_parse wrc = msg_wire_meta.parse(&w, &m, 0, buf, len, &wc);
    CHECK((wrc == MC_PARSE_NEED_MORE) == (rc == MC_PARSE_NEED_MORE));
    if (wrc != MC_PARSE_OK) {
        CHECK(wc == 0);
        return;
    }
    CHECK(rc == MC_PARSE_OK && wc == consumed);
    CHECK(inside(w.value, buf, buf + wc) && inside(w.msg, buf, buf + wc));
    bool answer = w.res == MSG_RES_META || w.res == MSG_RES_MISS ||
                  w.res == MSG_RES_NOT_FOUND || w.res == MSG_RES_NOT_STORED ||
                  w.res == MSG_RES_EXISTS;
    CHECK(answer ? w.code[0] != 0 : (w.res == MSG_RES_ERROR || w.res == MSG_RES_CLIENT_ERROR ||
                                      w.res == MSG_RES_SERVER_ERROR));
    if (answer)
        CHECK(r->code != MC_META_CODE_ME && r->code != MC_META_CODE_OTHER);
}

/* The wire's parse of the same bytes, for op, against the codec's answer. */
static void check_wire(enum msg_op op, const char *buf, size_t len, enum mc_parse rc,
                       const struct mc_meta_resp *r, size_t consumed) {
    struct msg m = {.op = op, .key = {"k", 1}};
    struct msg_reply w;
    size_t wc = 12345;
    enum mc_parse wrc = msg_wire_meta.parse(&w, &m, 0, buf, len, &wc);
    CHECK(wrc == MC_PARSE_OK || wrc == MC_PARSE_NEED_MORE || wrc == MC_PARSE_ERROR);
    CHECK((wrc == MC_PARSE_NEED_MORE) == (rc == MC_PARSE_NEED_MORE));
    if (wrc != MC_PARSE_OK) {
        CHECK(wc == 0);
        return;
    }
    seen_wire_ok++;
    CHECK(rc == MC_PARSE_OK && wc == consumed);
    CHECK(res_allowed(op, w.res));
    CHECK(inside(w.value, buf, buf + wc) && inside(w.msg, buf, buf + wc));
    if (w.res == MSG_RES_HIT)
        CHECK(r->code == MC_META_CODE_VA && w.value.p == r->value.p && w.value.len == r->vlen);
    if (w.res == MSG_RES_NUMBER)
        check_number(&w, r);
    for (int i = 0; i < r->nflags; i++) {
        CHECK(strchr(flags_allowed(op, r->code), r->flags[i].c) != NULL);
        for (int j = 0; j < i; j++)
            CHECK(r->flags[j].c != r->flags[i].c);
    }
    if (w.won || w.token_sent || w.stale)
        CHECK(w.res == MSG_RES_HIT || w.res == MSG_RES_TOUCHED);
}

/* The reply alone, and with another reply behind it, parses the same. */
static void check_alone_and_followed(const struct mc_meta_resp *r, const char *buf,
                                     size_t consumed) {
    char *more = malloc(consumed + 4);
    memcpy(more, buf, consumed);
    memcpy(more + consumed, "HD\r\n", 4);
    struct mc_meta_resp r2;
    size_t c2 = 0;
    CHECK(mc_meta_parse_resp(&r2, more, consumed, &c2) == MC_PARSE_OK && c2 == consumed);
    CHECK(same(r, buf, &r2, more));
    CHECK(mc_meta_parse_resp(&r2, more, consumed + 4, &c2) == MC_PARSE_OK && c2 == consumed);
    CHECK(same(r, buf, &r2, more));
    free(more);
}

/* Every strict prefix is NEED_MORE with nothing consumed; in full on short replies. */
static void check_prefixes(const char *buf, size_t consumed) {
    size_t step = consumed < 300 ? 1 : consumed / 50 + 1;
    for (size_t i = 0; i < consumed; i += step) {
        struct mc_meta_resp r2;
        size_t c2 = 12345;
        CHECK(mc_meta_parse_resp(&r2, buf, i, &c2) == MC_PARSE_NEED_MORE && c2 == 0);
    }
    struct mc_meta_resp r2;
    size_t c2 = 12345;
    CHECK(mc_meta_parse_resp(&r2, buf, consumed - 1, &c2) == MC_PARSE_NEED_MORE && c2 == 0);
}

static void check_one(const char *in, size_t len) {
    char *buf = malloc(len ? len : 1);
    memcpy(buf, in, len);
    struct mc_meta_resp r;
    size_t consumed = 12345;
    enum mc_parse rc = mc_meta_parse_resp(&r, buf, len, &consumed);
    size_t scan = len < MC_META_RESP_LINE_MAX ? len : MC_META_RESP_LINE_MAX;
    const char *nl = scan ? memchr(buf, '\n', scan) : NULL;
    size_t ll = nl ? (size_t)(nl - buf) + 1 : 0;

    CHECK(rc == MC_PARSE_OK || rc == MC_PARSE_NEED_MORE || rc == MC_PARSE_ERROR);
    seen[rc]++;
    if (rc != MC_PARSE_OK)
        CHECK(consumed == 0);
    if (nl == NULL)
        CHECK(rc == (len >= MC_META_RESP_LINE_MAX ? MC_PARSE_ERROR : MC_PARSE_NEED_MORE));
    if (rc == MC_PARSE_NEED_MORE && nl != NULL)
        CHECK(r.code == MC_META_CODE_VA && r.need > len && r.need == ll + r.vlen + 2);
    if (rc == MC_PARSE_OK) {
        CHECK(consumed <= len && nl != NULL);
        check_ok(&r, buf, ll, consumed);
        check_alone_and_followed(&r, buf, consumed);
        check_prefixes(buf, consumed);
    }
    /* Not stats (its reply is the text protocol's, read by msg_text_parse_stats)
     * nor raw meta (any reply goes: check_raw). */
    for (int op = 0; op < MSG_OP_COUNT; op++)
        if (op != MSG_STATS && op != MSG_META)
            check_wire((enum msg_op)op, buf, len, rc, &r, consumed);
    check_raw(buf, len, rc, &r, consumed);
    free(buf);
}

#define C(x) FUZZ_ENTRY(x)
/* Replies memcached 1.6.18 sent to the meta wire's requests (see test_msg_meta.c), and others. */
static const struct fuzz_entry corpus[] = {
    C("VA 5 f7\r\nhello\r\n"), C("VA 5 f7 c1\r\nhello\r\n"), C("VA 0 f4294967295 c3\r\n\r\n"),
    C("VA 0 f0 c11 t-1 W\r\n\r\n"), C("VA 0 f0 c11 t30 Z\r\n\r\n"),
    C("VA 4 f3 c13 t60 X W\r\nfill\r\n"), C("VA 4 f3 c14 t59 Z X\r\nnew!\r\n"),
    C("VA 2 f1 X W\r\nhi\r\n"), C("VA 2\r\n15\r\n"), C("VA 20\r\n18446744073709551615\r\n"),
    C("VA 1 kZ O123 t-1 s1 h0 l1 f0 c38\r\nx\r\n"), C("HD O9 kZ c40\r\n"), C("HD\r\n"),
    C("HD Z X\r\n"), C("EN\r\n"), C("NF\r\n"), C("NS\r\n"), C("EX\r\n"), C("MN\r\n"),
    C("ME Z exp=-1 la=3 cas=38 fetch=yes cls=1 size=63\r\n"), C("ERROR\r\n"),
    C("CLIENT_ERROR bad data chunk\r\n"), C("SERVER_ERROR object too large for cache\r\n"),
    C("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"), C("OK\r\n"),
    C("VERSION 1.6.18\r\n"), C("VA 4 f0\r\n\r\n\r\n\r\n"), C("HD\r\nEN\r\n"),
    C("VA 5 f7\r\nhelloXY"), C("VA 5 f7 f7\r\nhello\r\n"), C("HD  c5  \r\n"), C("HD\n"),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static const char *const words[] = {
    "VA ", "HD", "EN", "NF", "NS", "EX", "MN", "ME ", " f7", " f4294967296", " c1",
    " c18446744073709551616", " t-1", " t30", " W", " Z", " X", " k", " O1", "ERROR",
    "CLIENT_ERROR ", "SERVER_ERROR ", "OK", "VERSION ", "\r\n", "\n", " ", "0", "5",
    "4294967295", "4294967296", "18446744073709551615", "-", "",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const size_t run_sizes[] = {10, 100, 250, 1000, 8190, 8192, 9000};

static void report(long iters) {
    printf("fuzz_msg_meta: %ld inputs (ok %ld, of which VA %ld; need_more %ld; error %ld; "
           "wire ok %ld over %d ops), all invariants held\n",
           iters, seen[MC_PARSE_OK], seen_va, seen[MC_PARSE_NEED_MORE], seen[MC_PARSE_ERROR],
           seen_wire_ok, MSG_OP_COUNT);
}

static const struct fuzz_config cfg = {
    .name = "fuzz_msg_meta",
    .check = check_one,
    .report = report,
    .seed = 0x6d73676d657461ULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 4,
    .random_max = 200,
    .words = words,
    .nwords = NWORDS,
    .interesting = FUZZ_ENTRY(" \r\n\0-09VAHDfctWZX"),
    .run_sizes = run_sizes,
    .nrun_sizes = sizeof(run_sizes) / sizeof(run_sizes[0]),
    .run_fill = " xx",
};

FUZZ_DRIVER(&cfg)
