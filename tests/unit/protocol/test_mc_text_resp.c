/*
 * test_mc_text_resp.c -- the client-side text codec.
 *
 * ok_rows are reply elements as memcached 1.6.18 sends them (and a few
 * admin lines the codec only passes through as OTHER); bad_rows are bytes
 * a server never sends, which must be MC_PARSE_ERROR.  Every row is parsed
 * from an exact-size heap copy (so ASan catches a read past the end),
 * split at every byte (NEED_MORE until the element is whole, then the same
 * answer), and all ok rows are parsed again back to back as one stream cut
 * at every byte.  The request formatters are checked by parsing what they
 * write with the server's codec, and the server's VALUE formatter by
 * parsing what it writes with this one.
 */
#include "harness.h"
#include "show.h"
#include "protocol/mc_text.h"
#include "protocol/mc_text_resp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S(x) x, sizeof(x) - 1

#define K10 "kkkkkkkkkk"
#define K50 K10 K10 K10 K10 K10
#define K250 K50 K50 K50 K50 K50

struct row {
    const char *in;
    size_t len;
    enum mc_resp_kind kind;
    const char *key;        /* VALUE key or STAT name; NULL: not checked */
    const char *text;       /* VALUE data or msg; NULL: not checked */
    uint64_t num;           /* VALUE flags, NUMBER number */
    uint32_t vlen;
    int has_cas;
    uint64_t cas;
};

static const struct row ok_rows[] = {
    {S("VALUE k 0 5\r\nhello\r\n"), MC_RESP_VALUE, "k", "hello", 0, 5, 0, 0},
    {S("VALUE key:000000000001 4294967295 0\r\n\r\n"), MC_RESP_VALUE, "key:000000000001", "",
     4294967295u, 0, 0, 0},
    {S("VALUE k 7 3 18446744073709551615\r\nabc\r\n"), MC_RESP_VALUE, "k", "abc", 7, 3, 1,
     UINT64_MAX},
    {S("VALUE k 1 4 0\r\n\r\n\r\n\r\n"), MC_RESP_VALUE, "k", "\r\n\r\n", 1, 4, 1, 0},
    {S("VALUE " K250 " 0 1\r\nx\r\n"), MC_RESP_VALUE, K250, "x", 0, 1, 0, 0},
    {S("VALUE  k  2  1 \r\nx\r\n"), MC_RESP_VALUE, "k", "x", 2, 1, 0, 0},
    {S("VALUE k 0 2\nab\r\n"), MC_RESP_VALUE, "k", "ab", 0, 2, 0, 0},
    {S("END\r\n"), MC_RESP_END, NULL, NULL, 0, 0, 0, 0},
    {S("END\n"), MC_RESP_END, NULL, NULL, 0, 0, 0, 0},
    {S("STORED\r\n"), MC_RESP_STORED, NULL, NULL, 0, 0, 0, 0},
    {S("NOT_STORED\r\n"), MC_RESP_NOT_STORED, NULL, NULL, 0, 0, 0, 0},
    {S("EXISTS\r\n"), MC_RESP_EXISTS, NULL, NULL, 0, 0, 0, 0},
    {S("NOT_FOUND\r\n"), MC_RESP_NOT_FOUND, NULL, NULL, 0, 0, 0, 0},
    {S("DELETED\r\n"), MC_RESP_DELETED, NULL, NULL, 0, 0, 0, 0},
    {S("TOUCHED\r\n"), MC_RESP_TOUCHED, NULL, NULL, 0, 0, 0, 0},
    {S("OK\r\n"), MC_RESP_OK, NULL, NULL, 0, 0, 0, 0},
    {S("RESET\r\n"), MC_RESP_RESET, NULL, NULL, 0, 0, 0, 0},
    {S("0\r\n"), MC_RESP_NUMBER, NULL, NULL, 0, 0, 0, 0},
    {S("15\r\n"), MC_RESP_NUMBER, NULL, NULL, 15, 0, 0, 0},
    {S("18446744073709551615\r\n"), MC_RESP_NUMBER, NULL, NULL, UINT64_MAX, 0, 0, 0},
    {S("ERROR\r\n"), MC_RESP_ERROR, NULL, "", 0, 0, 0, 0},
    {S("ERROR Too many open connections\r\n"), MC_RESP_ERROR, NULL, "Too many open connections",
     0, 0, 0, 0},
    {S("ERROR: shutdown not enabled\r\n"), MC_RESP_ERROR, NULL, "shutdown not enabled", 0, 0, 0,
     0},
    {S("ERROR hot and warm pcts must not exceed 80\r\n"), MC_RESP_ERROR, NULL,
     "hot and warm pcts must not exceed 80", 0, 0, 0, 0},
    {S("CLIENT_ERROR bad command line format\r\n"), MC_RESP_CLIENT_ERROR, NULL,
     "bad command line format", 0, 0, 0, 0},
    {S("CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"),
     MC_RESP_CLIENT_ERROR, NULL, "bad command line format.  Usage: delete <key> [noreply]", 0, 0,
     0, 0},
    {S("CLIENT_ERROR bad data chunk\r\n"), MC_RESP_CLIENT_ERROR, NULL, "bad data chunk", 0, 0, 0,
     0},
    {S("SERVER_ERROR out of memory storing object\r\n"), MC_RESP_SERVER_ERROR, NULL,
     "out of memory storing object", 0, 0, 0, 0},
    {S("SERVER_ERROR object too large for cache\r\n"), MC_RESP_SERVER_ERROR, NULL,
     "object too large for cache", 0, 0, 0, 0},
    {S("SERVER_ERROR: shutdown not enabled\r\n"), MC_RESP_SERVER_ERROR, NULL,
     "shutdown not enabled", 0, 0, 0, 0},
    {S("VERSION 1.6.18\r\n"), MC_RESP_VERSION, NULL, "1.6.18", 0, 0, 0, 0},
    {S("STAT pid 1234\r\n"), MC_RESP_STAT, "pid", "1234", 0, 0, 0, 0},
    {S("STAT libevent 2.1.12-stable\r\n"), MC_RESP_STAT, "libevent", "2.1.12-stable", 0, 0, 0, 0},
    {S("STAT items:1:number 3\r\n"), MC_RESP_STAT, "items:1:number", "3", 0, 0, 0, 0},
    {S("STAT inter NULL\r\n"), MC_RESP_STAT, "inter", "NULL", 0, 0, 0, 0},
    {S("STAT sizes_status disabled\r\n"), MC_RESP_STAT, "sizes_status", "disabled", 0, 0, 0, 0},
    /* admin answers without a kind of their own */
    {S("BUSY currently processing reassign request\r\n"), MC_RESP_OTHER, NULL,
     "BUSY currently processing reassign request", 0, 0, 0, 0},
    {S("ITEM a [3 b; 0 s]\r\n"), MC_RESP_OTHER, NULL, "ITEM a [3 b; 0 s]", 0, 0, 0, 0},
    {S("MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n"), MC_RESP_OTHER, NULL,
     "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m", 0, 0, 0, 0},
    {S("key=a exp=-1 la=1 cas=2 fetch=no cls=1 size=63\n"), MC_RESP_OTHER, NULL,
     "key=a exp=-1 la=1 cas=2 fetch=no cls=1 size=63", 0, 0, 0, 0},
    {S("END extra\r\n"), MC_RESP_OTHER, NULL, "END extra", 0, 0, 0, 0},
    {S("15 apples\r\n"), MC_RESP_OTHER, NULL, "15 apples", 0, 0, 0, 0},
};

/* Bytes no server sends; the codec must say ERROR (with the kind it was parsing). */
static const struct row bad_rows[] = {
    {S("\r\n"), MC_RESP_NONE, 0, 0, 0, 0, 0, 0},
    {S("\n"), MC_RESP_NONE, 0, 0, 0, 0, 0, 0},
    {S("   \r\n"), MC_RESP_NONE, 0, 0, 0, 0, 0, 0},
    {S(" END\r\n"), MC_RESP_NONE, 0, 0, 0, 0, 0, 0},
    {S("VALUE\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0 5 1 2\r\nhello\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k x 5\r\nhello\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0 -1\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0 5x\r\nhello\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 4294967296 1\r\nx\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0 4294967296\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0 1 18446744073709551616\r\nx\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0 1 -1\r\nx\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE " K250 "k 0 1\r\nx\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0 5\r\nhelloXY"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0 5\r\nhello\n\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0 5\r\nhello\rX"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0 0\r\nEND\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("18446744073709551616\r\n"), MC_RESP_NUMBER, 0, 0, 0, 0, 0, 0},
    {S("99999999999999999999\r\n"), MC_RESP_NUMBER, 0, 0, 0, 0, 0, 0},
    {S("100000000000000000000\r\n"), MC_RESP_NUMBER, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 0 1 99999999999999999999\r\nx\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("VALUE k 99999999999 1\r\nx\r\n"), MC_RESP_VALUE, 0, 0, 0, 0, 0, 0},
    {S("12a\r\n"), MC_RESP_NUMBER, 0, 0, 0, 0, 0, 0},
    {S("STAT\r\n"), MC_RESP_STAT, 0, 0, 0, 0, 0, 0},
    {S("STAT   \r\n"), MC_RESP_STAT, 0, 0, 0, 0, 0, 0},
};

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))


/* Parses from an exact-size heap copy so that a read past len trips ASan. */
static enum mc_parse parse_copy(struct mc_resp *r, const char *in, size_t len, size_t *consumed,
                                char **copy) {
    *copy = malloc(len ? len : 1);
    memcpy(*copy, in, len);
    return mc_text_parse_resp(r, *copy, len, consumed);
}

static int span_eq(struct mc_span s, const char *lit) {
    return s.len == strlen(lit) && memcmp(s.p, lit, s.len) == 0;
}

/*
 * Two parses agree when every field does; spans are compared as offsets
 * from their buffers, so parses of different copies compare.
 */
static const char *resp_diff(const struct mc_resp *a, const char *abuf, const struct mc_resp *b,
                             const char *bbuf) {
    if (a->kind != b->kind) return "kind";
    if (a->flags != b->flags) return "flags";
    if (a->vlen != b->vlen) return "vlen";
    if (a->has_cas != b->has_cas || a->cas != b->cas) return "cas";
    if (a->number != b->number) return "number";
    const struct mc_span *sa[] = {&a->key, &a->value, &a->msg};
    const struct mc_span *sb[] = {&b->key, &b->value, &b->msg};
    for (int i = 0; i < 3; i++) {
        if (sa[i]->len != sb[i]->len) return "span length";
        if (sa[i]->len && (sa[i]->p - abuf) != (sb[i]->p - bbuf)) return "span offset";
    }
    return NULL;
}

static const char *check_row(const struct row *t, const struct mc_resp *r, const char *buf) {
    if (r->kind != t->kind) return "kind";
    if (t->key && !span_eq(r->key, t->key)) return "key";
    if (t->kind == MC_RESP_VALUE) {
        if (t->text && !span_eq(r->value, t->text)) return "value";
        if (r->flags != t->num) return "flags";
        if (r->vlen != t->vlen) return "vlen";
        if (r->has_cas != (t->has_cas != 0) || r->cas != t->cas) return "cas";
        if (r->value.p != buf + (t->len - t->vlen - 2)) return "value position";
    } else {
        if (t->text && !span_eq(r->msg, t->text)) return "msg";
        if (t->kind == MC_RESP_NUMBER && r->number != t->num) return "number";
    }
    return NULL;
}

TEST(ok_rows_parse) {
    for (size_t i = 0; i < NROWS(ok_rows); i++) {
        const struct row *t = &ok_rows[i];
        struct mc_resp r;
        size_t consumed = 12345;
        char *copy;
        enum mc_parse rc = parse_copy(&r, t->in, t->len, &consumed, &copy);
        const char *why = rc != MC_PARSE_OK ? "result" : consumed != t->len ? "consumed"
                                                                             : check_row(t, &r, copy);
        free(copy);
        if (why)
            TH_FAIL("row %zu \"%s\": %s (rc %d kind %s)", i, show(t->in, t->len), why, rc,
                    mc_text_resp_kind_name(r.kind));
    }
}

TEST(bad_rows_are_errors) {
    for (size_t i = 0; i < NROWS(bad_rows); i++) {
        const struct row *t = &bad_rows[i];
        struct mc_resp r;
        size_t consumed = 12345;
        char *copy;
        enum mc_parse rc = parse_copy(&r, t->in, t->len, &consumed, &copy);
        free(copy);
        if (rc != MC_PARSE_ERROR || r.kind != t->kind || consumed != 12345)
            TH_FAIL("row %zu \"%s\": rc %d kind %s consumed %zu", i, show(t->in, t->len), rc,
                    mc_text_resp_kind_name(r.kind), consumed);
    }
}

/*
 * Every proper prefix of an ok row is NEED_MORE with nothing consumed; a
 * VALUE whose line is complete also tells how long it will be.
 */
TEST(ok_rows_split_at_every_byte) {
    for (size_t i = 0; i < NROWS(ok_rows); i++) {
        const struct row *t = &ok_rows[i];
        const char *nl = memchr(t->in, '\n', t->len);
        size_t line = (size_t)(nl - t->in) + 1;
        for (size_t cut = 0; cut < t->len; cut++) {
            struct mc_resp r;
            size_t consumed = 12345;
            char *copy;
            enum mc_parse rc = parse_copy(&r, t->in, cut, &consumed, &copy);
            free(copy);
            if (rc != MC_PARSE_NEED_MORE || consumed != 12345)
                TH_FAIL("row %zu cut %zu: rc %d", i, cut, rc);
            size_t want_need = (t->kind == MC_RESP_VALUE && cut >= line) ? t->len : 0;
            if (r.need != want_need)
                TH_FAIL("row %zu cut %zu: need %zu, want %zu", i, cut, r.need, want_need);
        }
    }
}

/* A bad row's prefixes are NEED_MORE or the same ERROR, never OK. */
TEST(bad_rows_split_at_every_byte) {
    for (size_t i = 0; i < NROWS(bad_rows); i++) {
        const struct row *t = &bad_rows[i];
        for (size_t cut = 0; cut < t->len; cut++) {
            struct mc_resp r;
            size_t consumed;
            char *copy;
            enum mc_parse rc = parse_copy(&r, t->in, cut, &consumed, &copy);
            free(copy);
            if (rc == MC_PARSE_OK)
                TH_FAIL("row %zu cut %zu: OK", i, cut);
        }
    }
}

/*
 * All ok rows back to back make one reply stream.  Cut it at every byte:
 * everything before the cut that is whole parses as on its own, the first
 * element the cut falls into is NEED_MORE; the rest, appended, parses to
 * the end with the same answers.
 */
TEST(stream_split_at_every_byte) {
    size_t total = 0;
    for (size_t i = 0; i < NROWS(ok_rows); i++)
        total += ok_rows[i].len;
    char *stream = malloc(total);
    size_t *ends = malloc(NROWS(ok_rows) * sizeof(*ends));
    size_t o = 0;
    for (size_t i = 0; i < NROWS(ok_rows); i++) {
        memcpy(stream + o, ok_rows[i].in, ok_rows[i].len);
        o += ok_rows[i].len;
        ends[i] = o;
    }
    const char *fail = NULL;
    size_t fail_cut = 0, fail_el = 0;
    for (size_t cut = 0; cut <= total && !fail; cut++) {
        char *buf = malloc(total);
        memcpy(buf, stream, cut);
        size_t off = 0, el = 0, have = cut;
        while (off < total && !fail) {
            struct mc_resp r;
            size_t consumed = 0;
            enum mc_parse rc = mc_text_parse_resp(&r, buf + off, have - off, &consumed);
            if (rc == MC_PARSE_NEED_MORE) {
                if (ends[el] <= have) {
                    fail = "NEED_MORE on a whole element";
                    break;
                }
                if (have == total) {
                    fail = "NEED_MORE at the end";
                    break;
                }
                memcpy(buf + have, stream + have, total - have);   /* the rest arrives */
                have = total;
                continue;
            }
            if (rc != MC_PARSE_OK) {
                fail = "not OK";
                break;
            }
            if (off + consumed != ends[el]) {
                fail = "consumed";
                break;
            }
            /* The same answer as the row parsed alone, at the same offsets. */
            struct mc_resp alone;
            size_t c2;
            mc_text_parse_resp(&alone, ok_rows[el].in, ok_rows[el].len, &c2);
            const char *d = resp_diff(&r, buf + off, &alone, ok_rows[el].in);
            if (d) {
                fail = d;
                break;
            }
            off += consumed;
            el++;
        }
        if (!fail && el != NROWS(ok_rows))
            fail = "element count";
        fail_cut = cut;
        fail_el = el;
        free(buf);
    }
    free(stream);
    free(ends);
    if (fail)
        TH_FAIL("cut %zu element %zu: %s", fail_cut, fail_el, fail);
}

/* A line that fills MC_RESP_LINE_MAX without "\n" is an error, one byte less waits. */
TEST(line_length_limit) {
    char *buf = malloc(MC_RESP_LINE_MAX + 2);
    memset(buf, 'x', MC_RESP_LINE_MAX + 2);
    struct mc_resp r;
    size_t consumed;
    ASSERT_EQ(mc_text_parse_resp(&r, buf, MC_RESP_LINE_MAX - 1, &consumed), MC_PARSE_NEED_MORE);
    ASSERT_EQ(mc_text_parse_resp(&r, buf, MC_RESP_LINE_MAX, &consumed), MC_PARSE_ERROR);
    buf[MC_RESP_LINE_MAX - 1] = '\n';
    ASSERT_EQ(mc_text_parse_resp(&r, buf, MC_RESP_LINE_MAX, &consumed), MC_PARSE_OK);
    ASSERT_EQ(r.kind, MC_RESP_OTHER);
    ASSERT_EQ(consumed, MC_RESP_LINE_MAX);
    free(buf);
}

/* A large value: the header line is short, the element is long. */
TEST(large_value_needs_its_length) {
    size_t vlen = 1 << 20;
    char head[64];
    int hn = snprintf(head, sizeof(head), "VALUE big 3 %zu\r\n", vlen);
    size_t total = (size_t)hn + vlen + 2;
    char *buf = malloc(total);
    memcpy(buf, head, (size_t)hn);
    memset(buf + hn, 'v', vlen);
    memcpy(buf + hn + vlen, "\r\n", 2);
    struct mc_resp r;
    size_t consumed = 0;
    ASSERT_EQ(mc_text_parse_resp(&r, buf, total - 1, &consumed), MC_PARSE_NEED_MORE);
    ASSERT_EQ(r.need, total);
    ASSERT_EQ(mc_text_parse_resp(&r, buf, total, &consumed), MC_PARSE_OK);
    ASSERT_EQ(consumed, total);
    ASSERT_EQ(r.vlen, vlen);
    ASSERT(r.value.p == buf + hn);
    free(buf);
}

/* What the server's formatter writes, this codec reads back. */
TEST(server_value_line_round_trip) {
    char line[MC_VALUE_LINE_MAX];
    const uint32_t flags[] = {0, 1, 4294967295u};
    const uint64_t cas[] = {0, 1, 999, UINT64_MAX};
    for (size_t f = 0; f < 3; f++) {
        for (size_t c = 0; c < 4; c++) {
            for (int with_cas = 0; with_cas < 2; with_cas++) {
                size_t n = mc_text_fmt_value(line, S("some:key"), flags[f], 3, with_cas, cas[c]);
                char buf[MC_VALUE_LINE_MAX + 8];
                memcpy(buf, line, n);
                memcpy(buf + n, "abc\r\n", 5);
                struct mc_resp r;
                size_t consumed;
                ASSERT_EQ(mc_text_parse_resp(&r, buf, n + 5, &consumed), MC_PARSE_OK);
                ASSERT_EQ(consumed, n + 5);
                ASSERT_EQ(r.kind, MC_RESP_VALUE);
                ASSERT(span_eq(r.key, "some:key"));
                ASSERT(span_eq(r.value, "abc"));
                ASSERT_U64(r.flags, flags[f]);
                ASSERT_EQ(r.has_cas, with_cas);
                if (with_cas)
                    ASSERT_U64(r.cas, cas[c]);
            }
        }
    }
    char num[24];
    size_t n = mc_text_fmt_u64_line(num, 18446744073709551615u);
    struct mc_resp r;
    size_t consumed;
    ASSERT_EQ(mc_text_parse_resp(&r, num, n, &consumed), MC_PARSE_OK);
    ASSERT_EQ(r.kind, MC_RESP_NUMBER);
    ASSERT_U64(r.number, UINT64_MAX);
}

/* What the request formatters write, the server's codec reads back. */
TEST(fmt_get_round_trip) {
    struct mc_span keys[] = {{S("a")}, {S("key:000000000042")}, {S(K250)}};
    char out[1024];
    for (size_t nk = 1; nk <= 3; nk++) {
        for (int gets = 0; gets < 2; gets++) {
            size_t n = mc_text_fmt_get(out, sizeof(out), gets ? MC_CMD_GETS : MC_CMD_GET, keys, nk);
            ASSERT(n > 0);
            struct mc_req req;
            size_t consumed;
            ASSERT_EQ(mc_text_parse(&req, out, n, &consumed), MC_PARSE_OK);
            ASSERT_EQ(consumed, n);
            ASSERT_EQ(req.cmd, gets ? MC_CMD_GETS : MC_CMD_GET);
            ASSERT_EQ(req.nkeys, nk);
            struct mc_span rest = req.keys, k;
            for (size_t i = 0; i < nk; i++) {
                ASSERT(mc_text_next_key(&rest, &k));
                ASSERT_EQ(k.len, keys[i].len);
                ASSERT_MEM(k.p, keys[i].p, k.len);
            }
            ASSERT(!mc_text_next_key(&rest, &k));
            /* Too small by one byte, or any less: 0.  Exactly enough: fits. */
            for (size_t cap = 0; cap < n; cap++)
                ASSERT_EQ(mc_text_fmt_get(out, cap, gets ? MC_CMD_GETS : MC_CMD_GET, keys, nk), 0);
            ASSERT_EQ(mc_text_fmt_get(out, n, gets ? MC_CMD_GETS : MC_CMD_GET, keys, nk), n);
        }
    }
}

TEST(fmt_get_rejects_bad_keys) {
    char out[1024];
    struct mc_span bad[] = {{S("")}, {S("a b")}, {S("a\r\n")}, {S("a\tb")}, {S(K250 "k")}};
    for (size_t i = 0; i < NROWS(bad); i++)
        ASSERT_EQ(mc_text_fmt_get(out, sizeof(out), MC_CMD_GET, &bad[i], 1), 0);
    struct mc_span good = {S("a")};
    ASSERT_EQ(mc_text_fmt_get(out, sizeof(out), MC_CMD_GET, &good, 0), 0);
    ASSERT_EQ(mc_text_fmt_get(out, sizeof(out), MC_CMD_SET, &good, 1), 0);
    ASSERT_EQ(mc_text_fmt_store(out, sizeof(out), MC_CMD_SET, bad[1], 0, 0, 1, 0, false), 0);
    ASSERT_EQ(mc_text_fmt_store(out, sizeof(out), MC_CMD_GET, good, 0, 0, 1, 0, false), 0);
}

TEST(fmt_store_round_trip) {
    static const enum mc_cmd cmds[] = {MC_CMD_SET, MC_CMD_ADD, MC_CMD_REPLACE, MC_CMD_APPEND,
                                       MC_CMD_PREPEND, MC_CMD_CAS};
    static const int64_t exps[] = {0, 60, -1, 2592001, INT32_MAX};
    char out[512];
    for (size_t c = 0; c < NROWS(cmds); c++) {
        for (size_t e = 0; e < NROWS(exps); e++) {
            for (int noreply = 0; noreply < 2; noreply++) {
                struct mc_span key = {S("key:000000000042")};
                size_t n = mc_text_fmt_store(out, sizeof(out), cmds[c], key, 4294967295u, exps[e],
                                             100, UINT64_MAX, noreply);
                ASSERT(n > 0);
                struct mc_req req;
                size_t consumed;
                ASSERT_EQ(mc_text_parse(&req, out, n, &consumed), MC_PARSE_OK);
                ASSERT_EQ(consumed, n);
                ASSERT_EQ(req.cmd, cmds[c]);
                ASSERT_EQ(req.key.len, key.len);
                ASSERT_MEM(req.key.p, key.p, key.len);
                ASSERT_U64(req.flags, 4294967295u);
                ASSERT_EQ(req.exptime, exps[e]);
                ASSERT_EQ(req.vlen, 100);
                ASSERT_EQ(req.noreply, noreply);
                if (cmds[c] == MC_CMD_CAS)
                    ASSERT_U64(req.cas, UINT64_MAX);
                for (size_t cap = 0; cap < n; cap++)
                    ASSERT_EQ(mc_text_fmt_store(out, cap, cmds[c], key, 4294967295u, exps[e], 100,
                                                UINT64_MAX, noreply), 0);
            }
        }
    }
    size_t n = mc_text_fmt_store(out, sizeof(out), MC_CMD_SET, (struct mc_span){S("k")}, 0, 0, 5,
                                 0, false);
    ASSERT_EQ(n, 13);
    ASSERT_MEM(out, "set k 0 0 5\r\n", 13);
}

TEST(kind_names) {
    ASSERT_STR(mc_text_resp_kind_name(MC_RESP_VALUE), "VALUE");
    ASSERT_STR(mc_text_resp_kind_name(MC_RESP_SERVER_ERROR), "SERVER_ERROR");
    ASSERT_STR(mc_text_resp_kind_name(MC_RESP_KIND_COUNT), "?");
    for (int k = 0; k < MC_RESP_KIND_COUNT; k++)
        ASSERT(mc_text_resp_kind_name((enum mc_resp_kind)k) != NULL);
}

int main(void) { return RUN_TESTS(); }
