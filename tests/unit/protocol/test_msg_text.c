/*
 * test_msg_text.c -- the text wire of the request/reply seam (msg_text.c).
 *
 * fmt: every op's exact bytes (fmt_rows), each read back by the server's
 * own parser (mc_text_parse) with the same command, key and numbers; the
 * refusals (bad keys, lease ops, a cap too small by any amount).
 *
 * parse: ok_rows are replies OBSERVED from Debian's memcached 1.6.18 to
 * the requests fmt writes, one row per reply (the request is the comment
 * above it).  They were printed by
 *
 *     python3 tests/unit/protocol/msg_text_observe.py
 *
 * which starts fresh servers on free ports (plain, -F, and -M -m 2), sends
 * each request and prints the rows; rerun it and compare to regenerate.
 * The error lines no fmt request draws from 1.6.18 (ERROR, a get's
 * CLIENT_ERROR) were observed from the request named, and are offered to
 * every op, as any request may meet them.  bad_rows are replies that are
 * not the request's (another op's status, another key's VALUE, a VALUE
 * with the wrong cas shape or not followed by END, garbage): all must be
 * MC_PARSE_ERROR.  Every row is parsed from an exact-size heap copy (so
 * ASan catches a read past the end) and split at every byte; the ok rows
 * also run back to back as one stream cut at every byte.
 */
#include "harness.h"
#include "protocol/mc_text.h"
#include "protocol/msg.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S(x) x, sizeof(x) - 1
#define NROWS(a) (sizeof(a) / sizeof((a)[0]))

#define K10 "kkkkkkkkkk"
#define K50 K10 K10 K10 K10 K10
#define K250 K50 K50 K50 K50 K50

static const struct msg_wire *const W = &msg_wire_text;

/* The ops the text wire can say. */
static const enum msg_op text_ops[] = {
    MSG_GET,     MSG_GETS,    MSG_GAT,    MSG_GATS,   MSG_SET,   MSG_ADD,
    MSG_REPLACE, MSG_APPEND,  MSG_PREPEND, MSG_CAS,   MSG_DELETE, MSG_INCR,
    MSG_DECR,    MSG_TOUCH,   MSG_FLUSH_ALL, MSG_VERSION,
};

static const char *show(const char *s, size_t n) {
    static char out[200];
    size_t o = 0, i;
    for (i = 0; i < n && o + 8 < sizeof(out); i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 32 && c < 127 && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, sizeof(out) - o, "\\x%02x", c);
    }
    if (i < n)
        o += (size_t)snprintf(out + o, sizeof(out) - o, "...");
    out[o] = '\0';
    return out;
}

static int span_eq(struct mc_span s, const char *p, size_t n) {
    return s.len == n && (n == 0 || memcmp(s.p, p, n) == 0);
}

/* ---------------------------------------------------------------------- */
/* fmt                                                                      */
/* ---------------------------------------------------------------------- */

struct fmt_row {
    struct msg m;
    const char *out;
    size_t len;
};

#define KEY(k) .key = {S(k)}
#define VAL(v) .value = {S(v)}

static const struct fmt_row fmt_rows[] = {
    {{.op = MSG_GET, KEY("k")}, S("get k\r\n")},
    {{.op = MSG_GET, KEY(K250)}, S("get " K250 "\r\n")},
    {{.op = MSG_GET, KEY("k\x80\xff")}, S("get k\x80\xff\r\n")},
    {{.op = MSG_GETS, KEY("key:000000000042")}, S("gets key:000000000042\r\n")},
    {{.op = MSG_GAT, KEY("k"), .exptime = 100}, S("gat 100 k\r\n")},
    {{.op = MSG_GAT, KEY("k"), .exptime = -1}, S("gat -1 k\r\n")},
    {{.op = MSG_GATS, KEY("k")}, S("gats 0 k\r\n")},
    {{.op = MSG_GATS, KEY("k"), .exptime = INT64_MIN}, S("gats -9223372036854775808 k\r\n")},
    {{.op = MSG_SET, KEY("k"), VAL("hello"), .flags = 5}, S("set k 5 0 5\r\n")},
    {{.op = MSG_SET, KEY("k"), .flags = UINT32_MAX, .exptime = INT64_MAX},
     S("set k 4294967295 9223372036854775807 0\r\n")},
    {{.op = MSG_SET, KEY(K250), VAL("x")}, S("set " K250 " 0 0 1\r\n")},
    {{.op = MSG_ADD, KEY("k"), VAL("x"), .exptime = -1}, S("add k 0 -1 1\r\n")},
    {{.op = MSG_REPLACE, KEY("k"), VAL("x"), .flags = 1, .exptime = 2592000},
     S("replace k 1 2592000 1\r\n")},
    {{.op = MSG_APPEND, KEY("k"), VAL("!!"), .flags = 7, .exptime = 8}, S("append k 7 8 2\r\n")},
    {{.op = MSG_PREPEND, KEY("k"), VAL(">")}, S("prepend k 0 0 1\r\n")},
    {{.op = MSG_CAS, KEY("k"), VAL("x"), .cas = 8}, S("cas k 0 0 1 8\r\n")},
    {{.op = MSG_CAS, KEY("k"), VAL("x"), .cas = 0}, S("cas k 0 0 1 0\r\n")},
    {{.op = MSG_CAS, KEY("k"), VAL("x"), .cas = UINT64_MAX, .flags = UINT32_MAX,
      .exptime = INT64_MIN},
     S("cas k 4294967295 -9223372036854775808 1 18446744073709551615\r\n")},
    {{.op = MSG_DELETE, KEY("k")}, S("delete k\r\n")},
    {{.op = MSG_INCR, KEY("n"), .delta = 5}, S("incr n 5\r\n")},
    {{.op = MSG_INCR, KEY("n"), .delta = 0}, S("incr n 0\r\n")},
    {{.op = MSG_DECR, KEY("n"), .delta = UINT64_MAX}, S("decr n 18446744073709551615\r\n")},
    {{.op = MSG_TOUCH, KEY("k"), .exptime = 100}, S("touch k 100\r\n")},
    {{.op = MSG_TOUCH, KEY("k"), .exptime = -1}, S("touch k -1\r\n")},
    {{.op = MSG_FLUSH_ALL}, S("flush_all\r\n")},
    {{.op = MSG_FLUSH_ALL, .exptime = 10}, S("flush_all 10\r\n")},
    {{.op = MSG_FLUSH_ALL, .exptime = -1}, S("flush_all -1\r\n")},
    {{.op = MSG_FLUSH_ALL, KEY("ignored"), .exptime = INT64_MAX},
     S("flush_all 9223372036854775807\r\n")},
    {{.op = MSG_VERSION}, S("version\r\n")},
    {{.op = MSG_VERSION, KEY("ignored"), .exptime = 5}, S("version\r\n")},
};

TEST(fmt_rows_exact_bytes) {
    for (size_t i = 0; i < NROWS(fmt_rows); i++) {
        const struct fmt_row *t = &fmt_rows[i];
        char out[MSG_HEAD_MAX];
        size_t n = W->fmt(out, sizeof(out), &t->m, 0);
        if (n != t->len || memcmp(out, t->out, n) != 0)
            TH_FAIL("row %zu (%s): wrote %zu \"%s\", want \"%s\"", i, msg_op_name(t->m.op), n,
                    show(out, n), show(t->out, t->len));
    }
}

TEST(fmt_covers_every_text_op) {
    for (size_t o = 0; o < NROWS(text_ops); o++) {
        int found = 0;
        for (size_t i = 0; i < NROWS(fmt_rows); i++)
            found |= fmt_rows[i].m.op == text_ops[o];
        if (!found)
            TH_FAIL("no fmt row for %s", msg_op_name(text_ops[o]));
    }
    ASSERT_STR(W->name, "text");
    ASSERT_EQ(W->value_end_len, 2);
    ASSERT_MEM(W->value_end, "\r\n", 2);
}

static enum mc_cmd cmd_of(enum msg_op op) {
    static const enum mc_cmd map[MSG_OP_COUNT] = {
        [MSG_GET] = MC_CMD_GET,         [MSG_GETS] = MC_CMD_GETS,
        [MSG_GAT] = MC_CMD_GAT,         [MSG_GATS] = MC_CMD_GATS,
        [MSG_SET] = MC_CMD_SET,         [MSG_ADD] = MC_CMD_ADD,
        [MSG_REPLACE] = MC_CMD_REPLACE, [MSG_APPEND] = MC_CMD_APPEND,
        [MSG_PREPEND] = MC_CMD_PREPEND, [MSG_CAS] = MC_CMD_CAS,
        [MSG_DELETE] = MC_CMD_DELETE,   [MSG_INCR] = MC_CMD_INCR,
        [MSG_DECR] = MC_CMD_DECR,       [MSG_TOUCH] = MC_CMD_TOUCH,
        [MSG_FLUSH_ALL] = MC_CMD_FLUSH_ALL, [MSG_VERSION] = MC_CMD_VERSION,
    };
    return map[op];
}

/*
 * What fmt writes, the server's parser reads back as the same request;
 * a storage op's whole request (line, value, value_end) is exactly the
 * line, vlen bytes and "\r\n".
 */
TEST(fmt_round_trip_through_server_parser) {
    for (size_t i = 0; i < NROWS(fmt_rows); i++) {
        const struct msg *m = &fmt_rows[i].m;
        char out[MSG_HEAD_MAX + 16];
        size_t n = W->fmt(out, MSG_HEAD_MAX, m, 0);
        ASSERT(n > 0);
        struct mc_req req;
        size_t consumed = 0;
        enum mc_parse rc = mc_text_parse(&req, out, n, &consumed);
        if (rc != MC_PARSE_OK || consumed != n)
            TH_FAIL("row %zu \"%s\": rc %d consumed %zu", i, show(out, n), rc, consumed);
        ASSERT_EQ(req.cmd, cmd_of(m->op));
        ASSERT_EQ(req.noreply, 0);
        if (msg_op_keyed(m->op)) {
            ASSERT(span_eq(req.key, m->key.p, m->key.len));
            if (m->op <= MSG_GATS)
                ASSERT_EQ(req.nkeys, 1);
        }
        switch (m->op) {
        case MSG_SET: case MSG_ADD: case MSG_REPLACE:
        case MSG_APPEND: case MSG_PREPEND: case MSG_CAS:
            ASSERT_U64(req.flags, m->flags);
            ASSERT_EQ(req.exptime, m->exptime);
            ASSERT_EQ(req.vlen, m->value.len);
            if (m->op == MSG_CAS)
                ASSERT_U64(req.cas, m->cas);
            break;
        case MSG_INCR: case MSG_DECR:
            ASSERT_U64(req.delta, m->delta);
            break;
        case MSG_GAT: case MSG_GATS: case MSG_TOUCH: case MSG_FLUSH_ALL:
            ASSERT_EQ(req.exptime, m->exptime);
            break;
        default:
            break;
        }
    }
}

/*
 * Too small by one byte or by any more: 0, and nothing written past cap.
 * Exactly enough: the same bytes.  The longest request of each op fits
 * MSG_HEAD_MAX.
 */
TEST(fmt_cap_too_small) {
    for (size_t i = 0; i < NROWS(fmt_rows); i++) {
        const struct fmt_row *t = &fmt_rows[i];
        char out[MSG_HEAD_MAX + 16];
        for (size_t cap = 0; cap < t->len; cap++) {
            memset(out, 0xAA, sizeof(out));
            ASSERT_EQ(W->fmt(out, cap, &t->m, 0), 0);
            for (size_t j = cap; j < sizeof(out); j++)
                if ((unsigned char)out[j] != 0xAA)
                    TH_FAIL("row %zu cap %zu: byte %zu written", i, cap, j);
        }
        memset(out, 0xAA, sizeof(out));
        ASSERT_EQ(W->fmt(out, t->len, &t->m, 0), t->len);
        ASSERT_MEM(out, t->out, t->len);
        ASSERT_EQ((unsigned char)out[t->len], 0xAA);
    }
    for (size_t o = 0; o < NROWS(text_ops); o++) {
        struct msg m = {.op = text_ops[o], KEY(K250), .flags = UINT32_MAX, .exptime = INT64_MIN,
                        .cas = msg_op_compares(text_ops[o]) ? 0 : UINT64_MAX,
                        .delta = UINT64_MAX};
        m.value.p = "";
        m.value.len = INT_MAX - 2;       /* the longest value the text protocol takes */
        char out[MSG_HEAD_MAX];
        size_t n = W->fmt(out, sizeof(out), &m, 0);
        ASSERT(n > 0 && n <= MSG_HEAD_MAX);
    }
}

/* Keys a text line cannot carry (msg_key_line_ok): every keyed op writes nothing. */
TEST(fmt_refuses_bad_keys) {
    static const struct mc_span bad[] = {
        {S("")}, {NULL, 0}, {S(K250 "k")}, {S("a b")}, {S(" ")}, {S("a\r\n")}, {S("a\nb")},
        {S("a\0b")}, {S("a\rb")},
    };
    for (size_t o = 0; o < NROWS(text_ops); o++) {
        if (!msg_op_keyed(text_ops[o]))
            continue;
        for (size_t b = 0; b < NROWS(bad); b++) {
            struct msg m = {.op = text_ops[o], .key = bad[b], VAL("x"), .delta = 1};
            char out[MSG_HEAD_MAX];
            size_t n = W->fmt(out, sizeof(out), &m, 0);
            if (n != 0)
                TH_FAIL("%s with key \"%s\": wrote \"%s\"", msg_op_name(text_ops[o]),
                        show(bad[b].p ? bad[b].p : "", bad[b].len), show(out, n));
            ASSERT(!msg_key_ok(bad[b]) && !msg_key_line_ok(bad[b]));
        }
    }
    /* Other control bytes go as they are, as memcached takes them (not msg_key_ok's). */
    static const struct mc_span ctl[] = {{S("a\x01")}, {S("\x1f")}, {S("a\tb")}, {S("\x7f")}};
    for (size_t b = 0; b < NROWS(ctl); b++) {
        struct msg m = {.op = MSG_GET, .key = ctl[b]};
        char out[MSG_HEAD_MAX];
        ASSERT_EQ(W->fmt(out, sizeof(out), &m, 0), 4 + ctl[b].len + 2);
        ASSERT(!msg_key_ok(ctl[b]) && msg_key_line_ok(ctl[b]));
    }
    /* The same ops with a good key write something. */
    for (size_t o = 0; o < NROWS(text_ops); o++) {
        struct msg m = {.op = text_ops[o], KEY("a"), VAL("x")};
        char out[MSG_HEAD_MAX];
        ASSERT(W->fmt(out, sizeof(out), &m, 0) > 0);
    }
}

/* Leases have no text form, whatever the key or the room. */
TEST(fmt_refuses_lease_ops) {
    char out[MSG_HEAD_MAX];
    struct msg get = {.op = MSG_LEASE_GET, KEY("k"), .exptime = 10};
    struct msg set = {.op = MSG_LEASE_SET, KEY("k"), VAL("v"), .cas = 7};
    struct msg count = {.op = MSG_OP_COUNT, KEY("k")};
    ASSERT_EQ(W->fmt(out, sizeof(out), &get, 0), 0);
    ASSERT_EQ(W->fmt(out, sizeof(out), &set, 0), 0);
    ASSERT_EQ(W->fmt(out, sizeof(out), &count, 0), 0);
}

/*
 * An op that is no enum msg_op value is a malformed request: 0, not a
 * read past the verb table (UBSan: "index 99 out of bounds").
 */
TEST(fmt_refuses_ops_out_of_range) {
    static const int ops[] = {MSG_OP_COUNT, MSG_OP_COUNT + 1, 99, 1 << 20, INT_MAX, -1, INT_MIN};
    char out[MSG_HEAD_MAX];
    for (size_t i = 0; i < NROWS(ops); i++) {
        struct msg m = {.op = (enum msg_op)ops[i], KEY("k"), VAL("x")};
        ASSERT_EQ(W->fmt(out, sizeof(out), &m, 0), 0);
    }
}

/*
 * The longest value the text protocol carries is INT_MAX - 2 bytes:
 * memcached 1.6.18 reads <bytes> as an int and answers a longer one with
 * "CLIENT_ERROR bad command line format" without swallowing the data, so
 * the value's bytes are then read as commands (observed: "set j 0 0
 * 2147483646\r\nx\r\n" gets "CLIENT_ERROR bad command line format\r\n"
 * then "ERROR\r\n" for the "x").  fmt must refuse such a value, as the
 * server's own parser does.  fmt never reads the value, so its pointer is
 * a one-byte string.
 */
TEST(fmt_refuses_values_memcached_refuses) {
    static const enum msg_op stores[] = {MSG_SET, MSG_ADD, MSG_REPLACE,
                                         MSG_APPEND, MSG_PREPEND, MSG_CAS};
    static const size_t too_long[] = {(size_t)INT_MAX - 1, INT_MAX, (size_t)INT_MAX + 1,
                                      UINT32_MAX, (size_t)UINT32_MAX + 1, SIZE_MAX};
    char out[MSG_HEAD_MAX];
    for (size_t o = 0; o < NROWS(stores); o++) {
        struct msg m = {.op = stores[o], KEY("k"), .value = {"", (size_t)INT_MAX - 2}};
        size_t n = W->fmt(out, sizeof(out), &m, 0);
        ASSERT(n > 0);
        struct mc_req req;
        size_t consumed;
        ASSERT_EQ(mc_text_parse(&req, out, n, &consumed), MC_PARSE_OK);
        ASSERT_EQ(req.vlen, INT_MAX - 2);
        for (size_t i = 0; i < NROWS(too_long); i++) {
            m.value.len = too_long[i];
            n = W->fmt(out, sizeof(out), &m, 0);
            if (n != 0)
                TH_FAIL("%s of %zu bytes: wrote \"%s\"", msg_op_name(stores[o]), too_long[i],
                        show(out, n));
        }
    }
    /* The server's parser refuses the line fmt used to write. */
    struct mc_req req;
    size_t consumed;
    ASSERT_EQ(mc_text_parse(&req, S("set j 0 0 2147483646\r\n"), &consumed), MC_PARSE_ERROR);
}

/* ---------------------------------------------------------------------- */
/* parse: what memcached 1.6.18 answered                                    */
/* ---------------------------------------------------------------------- */

struct row {
    enum msg_op op;
    const char *key;
    const char *in;
    size_t len;
    enum msg_res res;
    const char *text;       /* HIT: the value; VERSION and the errors: msg; NULL: empty */
    uint32_t flags;
    uint64_t cas;
    uint64_t number;
};

/* Observed from memcached 1.6.18; printed by msg_text_observe.py (see the top). */
static const struct row ok_rows[] = {
    /* set k 5 0 5\r\nhello\r\n */
    {MSG_SET, "k", S("STORED\r\n"), MSG_RES_STORED, NULL, 0u, 0u, 0u},
    /* get k\r\n */
    {MSG_GET, "k", S("VALUE k 5 5\r\nhello\r\nEND\r\n"), MSG_RES_HIT, "hello", 5u, 0u, 0u},
    /* gets k\r\n */
    {MSG_GETS, "k", S("VALUE k 5 5 1\r\nhello\r\nEND\r\n"), MSG_RES_HIT, "hello", 5u, 1u, 0u},
    /* gat 0 k\r\n */
    {MSG_GAT, "k", S("VALUE k 5 5\r\nhello\r\nEND\r\n"), MSG_RES_HIT, "hello", 5u, 0u, 0u},
    /* gats 0 k\r\n */
    {MSG_GATS, "k", S("VALUE k 5 5 1\r\nhello\r\nEND\r\n"), MSG_RES_HIT, "hello", 5u, 1u, 0u},
    /* get miss\r\n */
    {MSG_GET, "miss", S("END\r\n"), MSG_RES_MISS, NULL, 0u, 0u, 0u},
    /* gets miss\r\n */
    {MSG_GETS, "miss", S("END\r\n"), MSG_RES_MISS, NULL, 0u, 0u, 0u},
    /* gat 100 miss\r\n */
    {MSG_GAT, "miss", S("END\r\n"), MSG_RES_MISS, NULL, 0u, 0u, 0u},
    /* gats -1 miss\r\n */
    {MSG_GATS, "miss", S("END\r\n"), MSG_RES_MISS, NULL, 0u, 0u, 0u},
    /* set empty 0 0 0\r\n\r\n */
    {MSG_SET, "empty", S("STORED\r\n"), MSG_RES_STORED, NULL, 0u, 0u, 0u},
    /* get empty\r\n */
    {MSG_GET, "empty", S("VALUE empty 0 0\r\n\r\nEND\r\n"), MSG_RES_HIT, "", 0u, 0u, 0u},
    /* gats 0 empty\r\n */
    {MSG_GATS, "empty", S("VALUE empty 0 0 2\r\n\r\nEND\r\n"), MSG_RES_HIT, "", 0u, 2u, 0u},
    /* set crlf 3 0 9\r\nx\r\nEND\r\ny\r\n */
    {MSG_SET, "crlf", S("STORED\r\n"), MSG_RES_STORED, NULL, 0u, 0u, 0u},
    /* get crlf\r\n */
    {MSG_GET, "crlf", S("VALUE crlf 3 9\r\nx\r\nEND\r\ny\r\nEND\r\n"), MSG_RES_HIT, "x\r\nEND\r\ny",
     3u, 0u, 0u},
    /* gets crlf\r\n */
    {MSG_GETS, "crlf", S("VALUE crlf 3 9 3\r\nx\r\nEND\r\ny\r\nEND\r\n"), MSG_RES_HIT,
     "x\r\nEND\r\ny", 3u, 3u, 0u},
    /* gat 0 crlf\r\n */
    {MSG_GAT, "crlf", S("VALUE crlf 3 9\r\nx\r\nEND\r\ny\r\nEND\r\n"), MSG_RES_HIT, "x\r\nEND\r\ny",
     3u, 0u, 0u},
    /* set f 4294967295 0 1\r\nx\r\n */
    {MSG_SET, "f", S("STORED\r\n"), MSG_RES_STORED, NULL, 0u, 0u, 0u},
    /* gets f\r\n */
    {MSG_GETS, "f", S("VALUE f 4294967295 1 4\r\nx\r\nEND\r\n"), MSG_RES_HIT, "x", 4294967295u, 4u,
     0u},
    /* add k 0 0 1\r\nx\r\n */
    {MSG_ADD, "k", S("NOT_STORED\r\n"), MSG_RES_NOT_STORED, NULL, 0u, 0u, 0u},
    /* add a 0 0 1\r\nx\r\n */
    {MSG_ADD, "a", S("STORED\r\n"), MSG_RES_STORED, NULL, 0u, 0u, 0u},
    /* replace miss 0 0 1\r\nx\r\n */
    {MSG_REPLACE, "miss", S("NOT_STORED\r\n"), MSG_RES_NOT_STORED, NULL, 0u, 0u, 0u},
    /* replace k 0 0 5\r\nhello\r\n */
    {MSG_REPLACE, "k", S("STORED\r\n"), MSG_RES_STORED, NULL, 0u, 0u, 0u},
    /* append k 0 0 1\r\n!\r\n */
    {MSG_APPEND, "k", S("STORED\r\n"), MSG_RES_STORED, NULL, 0u, 0u, 0u},
    /* append miss 0 0 1\r\n!\r\n */
    {MSG_APPEND, "miss", S("NOT_STORED\r\n"), MSG_RES_NOT_STORED, NULL, 0u, 0u, 0u},
    /* prepend k 0 0 1\r\n>\r\n */
    {MSG_PREPEND, "k", S("STORED\r\n"), MSG_RES_STORED, NULL, 0u, 0u, 0u},
    /* prepend miss 0 0 1\r\n>\r\n */
    {MSG_PREPEND, "miss", S("NOT_STORED\r\n"), MSG_RES_NOT_STORED, NULL, 0u, 0u, 0u},
    /* gets k\r\n */
    {MSG_GETS, "k", S("VALUE k 0 7 8\r\n>hello!\r\nEND\r\n"), MSG_RES_HIT, ">hello!", 0u, 8u, 0u},
    /* cas k 0 0 1 8\r\nx\r\n */
    {MSG_CAS, "k", S("STORED\r\n"), MSG_RES_STORED, NULL, 0u, 0u, 0u},
    /* cas k 0 0 1 8\r\nx\r\n */
    {MSG_CAS, "k", S("EXISTS\r\n"), MSG_RES_EXISTS, NULL, 0u, 0u, 0u},
    /* cas miss 0 0 1 1\r\nx\r\n */
    {MSG_CAS, "miss", S("NOT_FOUND\r\n"), MSG_RES_NOT_FOUND, NULL, 0u, 0u, 0u},
    /* set big 0 0 2097152\r\nvvvvvvvvvvvvvvvvvvv... */
    {MSG_SET, "big", S("SERVER_ERROR object too large for cache\r\n"), MSG_RES_SERVER_ERROR,
     "object too large for cache", 0u, 0u, 0u},
    /* add big 0 0 2097152\r\nvvvvvvvvvvvvvvvvvvv... */
    {MSG_ADD, "big", S("SERVER_ERROR object too large for cache\r\n"), MSG_RES_SERVER_ERROR,
     "object too large for cache", 0u, 0u, 0u},
    /* replace big 0 0 2097152\r\nvvvvvvvvvvvvvvv... */
    {MSG_REPLACE, "big", S("SERVER_ERROR object too large for cache\r\n"), MSG_RES_SERVER_ERROR,
     "object too large for cache", 0u, 0u, 0u},
    /* append big 0 0 2097152\r\nvvvvvvvvvvvvvvvv... */
    {MSG_APPEND, "big", S("SERVER_ERROR object too large for cache\r\n"), MSG_RES_SERVER_ERROR,
     "object too large for cache", 0u, 0u, 0u},
    /* prepend big 0 0 2097152\r\nvvvvvvvvvvvvvvv... */
    {MSG_PREPEND, "big", S("SERVER_ERROR object too large for cache\r\n"), MSG_RES_SERVER_ERROR,
     "object too large for cache", 0u, 0u, 0u},
    /* cas big 0 0 2097152 1\r\nvvvvvvvvvvvvvvvvv... */
    {MSG_CAS, "big", S("SERVER_ERROR object too large for cache\r\n"), MSG_RES_SERVER_ERROR,
     "object too large for cache", 0u, 0u, 0u},
    /* delete k\r\n */
    {MSG_DELETE, "k", S("DELETED\r\n"), MSG_RES_DELETED, NULL, 0u, 0u, 0u},
    /* delete k\r\n */
    {MSG_DELETE, "k", S("NOT_FOUND\r\n"), MSG_RES_NOT_FOUND, NULL, 0u, 0u, 0u},
    /* set n 0 0 2\r\n10\r\n */
    {MSG_SET, "n", S("STORED\r\n"), MSG_RES_STORED, NULL, 0u, 0u, 0u},
    /* incr n 5\r\n */
    {MSG_INCR, "n", S("15\r\n"), MSG_RES_NUMBER, NULL, 0u, 0u, 15u},
    /* decr n 20\r\n */
    {MSG_DECR, "n", S("0\r\n"), MSG_RES_NUMBER, NULL, 0u, 0u, 0u},
    /* incr miss 1\r\n */
    {MSG_INCR, "miss", S("NOT_FOUND\r\n"), MSG_RES_NOT_FOUND, NULL, 0u, 0u, 0u},
    /* decr miss 1\r\n */
    {MSG_DECR, "miss", S("NOT_FOUND\r\n"), MSG_RES_NOT_FOUND, NULL, 0u, 0u, 0u},
    /* incr a 1\r\n */
    {MSG_INCR, "a", S("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"),
     MSG_RES_CLIENT_ERROR, "cannot increment or decrement non-numeric value", 0u, 0u, 0u},
    /* decr a 1\r\n */
    {MSG_DECR, "a", S("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"),
     MSG_RES_CLIENT_ERROR, "cannot increment or decrement non-numeric value", 0u, 0u, 0u},
    /* set n 0 0 20\r\n18446744073709551614\r\n */
    {MSG_SET, "n", S("STORED\r\n"), MSG_RES_STORED, NULL, 0u, 0u, 0u},
    /* incr n 1\r\n */
    {MSG_INCR, "n", S("18446744073709551615\r\n"), MSG_RES_NUMBER, NULL, 0u, 0u,
     18446744073709551615u},
    /* incr n 1\r\n */
    {MSG_INCR, "n", S("0\r\n"), MSG_RES_NUMBER, NULL, 0u, 0u, 0u},
    /* decr n 18446744073709551615\r\n */
    {MSG_DECR, "n", S("0\r\n"), MSG_RES_NUMBER, NULL, 0u, 0u, 0u},
    /* touch a 100\r\n */
    {MSG_TOUCH, "a", S("TOUCHED\r\n"), MSG_RES_TOUCHED, NULL, 0u, 0u, 0u},
    /* touch miss -1\r\n */
    {MSG_TOUCH, "miss", S("NOT_FOUND\r\n"), MSG_RES_NOT_FOUND, NULL, 0u, 0u, 0u},
    /* version\r\n */
    {MSG_VERSION, "", S("VERSION 1.6.18\r\n"), MSG_RES_VERSION, "1.6.18", 0u, 0u, 0u},
    /* flush_all\r\n */
    {MSG_FLUSH_ALL, "", S("OK\r\n"), MSG_RES_OK, NULL, 0u, 0u, 0u},
    /* flush_all -1\r\n */
    {MSG_FLUSH_ALL, "", S("OK\r\n"), MSG_RES_OK, NULL, 0u, 0u, 0u},
    /* flush_all 10\r\n */
    {MSG_FLUSH_ALL, "", S("OK\r\n"), MSG_RES_OK, NULL, 0u, 0u, 0u},
    /* flush_all\r\n, to memcached -F */
    {MSG_FLUSH_ALL, "", S("CLIENT_ERROR flush_all not allowed\r\n"), MSG_RES_CLIENT_ERROR,
     "flush_all not allowed", 0u, 0u, 0u},
    /* set key20 0 0 100000\r\nvvvvvvvvvvvvvvvvvv..., to memcached -M -m 2 once full */
    {MSG_SET, "key20", S("SERVER_ERROR out of memory storing object\r\n"), MSG_RES_SERVER_ERROR,
     "out of memory storing object", 0u, 0u, 0u},
    /* --- error lines, from requests fmt does not write --- */
    /* bogus\r\n */
    {MSG_GET, "k", S("ERROR\r\n"), MSG_RES_ERROR, "", 0u, 0u, 0u},
    /* get kkkk...k\r\n (251 bytes) */
    {MSG_GET, "k", S("CLIENT_ERROR bad command line format\r\n"), MSG_RES_CLIENT_ERROR,
     "bad command line format", 0u, 0u, 0u},
};

static struct msg msg_of(enum msg_op op, const char *key) {
    return (struct msg){.op = op, .key = {key, strlen(key)}};
}

/* Parses from an exact-size heap copy so that a read past len trips ASan. */
static enum mc_parse parse_copy(struct msg_reply *r, const struct msg *m, const char *in,
                                size_t len, size_t *consumed, char **copy) {
    *copy = malloc(len ? len : 1);
    memcpy(*copy, in, len);
    return W->parse(r, m, 0, *copy, len, consumed);
}

static const char *check_row(const struct row *t, const struct msg_reply *r, const char *buf) {
    if (r->res != t->res) return "res";
    const char *text = t->text ? t->text : "";
    if (r->ttl != -1 || r->won || r->token_sent || r->stale) return "lease fields";
    if (t->res == MSG_RES_HIT) {
        if (!span_eq(r->value, text, strlen(text))) return "value";
        if (r->flags != t->flags) return "flags";
        if (r->cas != t->cas) return "cas";
        /* the value is the bytes before "\r\nEND\r\n" at the end of the row */
        if (r->value.len && r->value.p != buf + t->len - 7 - r->value.len) return "value position";
        if (r->msg.len) return "msg";
    } else {
        if (r->value.len || r->flags || r->cas) return "value fields";
        if (!span_eq(r->msg, text, strlen(text))) return "msg";
        if (r->msg.len && (r->msg.p < buf || r->msg.p + r->msg.len > buf + t->len))
            return "msg position";
        if (r->number != t->number) return "number";
    }
    return NULL;
}

TEST(ok_rows_parse) {
    for (size_t i = 0; i < NROWS(ok_rows); i++) {
        const struct row *t = &ok_rows[i];
        struct msg m = msg_of(t->op, t->key);
        struct msg_reply r;
        size_t consumed = 12345;
        char *copy;
        enum mc_parse rc = parse_copy(&r, &m, t->in, t->len, &consumed, &copy);
        const char *why = rc != MC_PARSE_OK ? "result" : consumed != t->len ? "consumed"
                                                                             : check_row(t, &r, copy);
        free(copy);
        if (why)
            TH_FAIL("row %zu %s \"%s\": %s (rc %d res %s)", i, msg_op_name(t->op),
                    show(t->in, t->len), why, rc, msg_res_name(r.res));
    }
}

/* Every op and every reply it can get is in ok_rows. */
TEST(ok_rows_cover_each_op) {
    static const struct {
        enum msg_op op;
        enum msg_res res[6];
    } want[] = {
        {MSG_GET, {MSG_RES_HIT, MSG_RES_MISS}},
        {MSG_GETS, {MSG_RES_HIT, MSG_RES_MISS}},
        {MSG_GAT, {MSG_RES_HIT, MSG_RES_MISS}},
        {MSG_GATS, {MSG_RES_HIT, MSG_RES_MISS}},
        {MSG_SET, {MSG_RES_STORED, MSG_RES_SERVER_ERROR}},
        {MSG_ADD, {MSG_RES_STORED, MSG_RES_NOT_STORED, MSG_RES_SERVER_ERROR}},
        {MSG_REPLACE, {MSG_RES_STORED, MSG_RES_NOT_STORED, MSG_RES_SERVER_ERROR}},
        {MSG_APPEND, {MSG_RES_STORED, MSG_RES_NOT_STORED, MSG_RES_SERVER_ERROR}},
        {MSG_PREPEND, {MSG_RES_STORED, MSG_RES_NOT_STORED, MSG_RES_SERVER_ERROR}},
        {MSG_CAS, {MSG_RES_STORED, MSG_RES_EXISTS, MSG_RES_NOT_FOUND, MSG_RES_SERVER_ERROR}},
        {MSG_DELETE, {MSG_RES_DELETED, MSG_RES_NOT_FOUND}},
        {MSG_INCR, {MSG_RES_NUMBER, MSG_RES_NOT_FOUND, MSG_RES_CLIENT_ERROR}},
        {MSG_DECR, {MSG_RES_NUMBER, MSG_RES_NOT_FOUND, MSG_RES_CLIENT_ERROR}},
        {MSG_TOUCH, {MSG_RES_TOUCHED, MSG_RES_NOT_FOUND}},
        {MSG_FLUSH_ALL, {MSG_RES_OK, MSG_RES_CLIENT_ERROR}},
        {MSG_VERSION, {MSG_RES_VERSION}},
    };
    for (size_t w = 0; w < NROWS(want); w++) {
        for (size_t j = 0; j < 6 && want[w].res[j] != MSG_RES_NONE; j++) {
            int found = 0;
            for (size_t i = 0; i < NROWS(ok_rows); i++)
                found |= ok_rows[i].op == want[w].op && ok_rows[i].res == want[w].res[j];
            if (!found)
                TH_FAIL("no row: %s -> %s", msg_op_name(want[w].op), msg_res_name(want[w].res[j]));
        }
    }
}

/* ERROR, CLIENT_ERROR and SERVER_ERROR may answer any request. */
TEST(error_lines_answer_every_op) {
    for (size_t i = 0; i < NROWS(ok_rows); i++) {
        const struct row *t = &ok_rows[i];
        if (t->res != MSG_RES_ERROR && t->res != MSG_RES_CLIENT_ERROR &&
            t->res != MSG_RES_SERVER_ERROR)
            continue;
        for (size_t o = 0; o < NROWS(text_ops); o++) {
            struct msg m = msg_of(text_ops[o], "k");
            struct msg_reply r;
            size_t consumed = 12345;
            char *copy;
            enum mc_parse rc = parse_copy(&r, &m, t->in, t->len, &consumed, &copy);
            const char *why = rc != MC_PARSE_OK ? "result" : consumed != t->len ? "consumed"
                                                                                 : check_row(t, &r, copy);
            free(copy);
            if (why)
                TH_FAIL("row %zu to %s: %s", i, msg_op_name(text_ops[o]), why);
        }
    }
}

/*
 * A 100 KB value as memcached sent it (the observe script checks these
 * bytes: "VALUE big100k 7 102400\r\n", a..z repeated, "\r\nEND\r\n"),
 * split at every byte: NEED_MORE until the END line is whole.
 */
TEST(value_100k) {
    static const char head[] = "VALUE big100k 7 102400\r\n";
    size_t hn = sizeof(head) - 1, vlen = 102400, total = hn + vlen + 7;
    char *buf = malloc(total);
    memcpy(buf, head, hn);
    for (size_t i = 0; i < vlen; i++)
        buf[hn + i] = (char)('a' + i % 26);
    memcpy(buf + hn + vlen, "\r\nEND\r\n", 7);
    struct msg m = msg_of(MSG_GET, "big100k");
    struct msg_reply r;
    size_t consumed = 0;
    ASSERT_EQ(W->parse(&r, &m, 0, buf, total, &consumed), MC_PARSE_OK);
    ASSERT_EQ(consumed, total);
    ASSERT_EQ(r.res, MSG_RES_HIT);
    ASSERT_EQ(r.flags, 7);
    ASSERT_EQ(r.value.len, vlen);
    ASSERT(r.value.p == buf + hn);
    for (size_t cut = 0; cut < total; cut++) {
        enum mc_parse rc = W->parse(&r, &m, 0, buf, cut, &consumed);
        if (rc != MC_PARSE_NEED_MORE)
            TH_FAIL("cut %zu: rc %d", cut, rc);
    }
    /* The same bytes to gets (no cas on the line) and to another key: errors. */
    struct msg gets = msg_of(MSG_GETS, "big100k"), other = msg_of(MSG_GET, "big100");
    ASSERT_EQ(W->parse(&r, &gets, 0, buf, total, &consumed), MC_PARSE_ERROR);
    ASSERT_EQ(W->parse(&r, &other, 0, buf, total, &consumed), MC_PARSE_ERROR);
    /* A terminator that is not "\r\n" after the data block. */
    buf[hn + vlen] = 'X';
    ASSERT_EQ(W->parse(&r, &m, 0, buf, total, &consumed), MC_PARSE_ERROR);
    free(buf);
}

/* ---------------------------------------------------------------------- */
/* parse: replies that are not the request's                                */
/* ---------------------------------------------------------------------- */

struct bad {
    enum msg_op op;
    const char *key;
    const char *in;
    size_t len;
};

static const struct bad bad_rows[] = {
    /* another op's status to a get */
    {MSG_GET, "k", S("STORED\r\n")},
    {MSG_GET, "k", S("NOT_FOUND\r\n")},
    {MSG_GET, "k", S("DELETED\r\n")},
    {MSG_GET, "k", S("OK\r\n")},
    {MSG_GET, "k", S("15\r\n")},
    {MSG_GET, "k", S("VERSION 1.6.18\r\n")},
    {MSG_GETS, "k", S("EXISTS\r\n")},
    {MSG_GAT, "k", S("TOUCHED\r\n")},
    {MSG_GATS, "k", S("NOT_STORED\r\n")},
    /* VALUE of another key */
    {MSG_GET, "k", S("VALUE j 0 1\r\nx\r\nEND\r\n")},
    {MSG_GET, "k", S("VALUE kk 0 1\r\nx\r\nEND\r\n")},
    {MSG_GET, "kk", S("VALUE k 0 1\r\nx\r\nEND\r\n")},
    {MSG_GET, "k", S("VALUE K 0 1\r\nx\r\nEND\r\n")},
    {MSG_GETS, "k", S("VALUE j 0 1 1\r\nx\r\nEND\r\n")},
    /* VALUE without cas to gets/gats, with cas to get/gat */
    {MSG_GETS, "k", S("VALUE k 5 5\r\nhello\r\nEND\r\n")},
    {MSG_GATS, "k", S("VALUE k 5 5\r\nhello\r\nEND\r\n")},
    {MSG_GET, "k", S("VALUE k 5 5 1\r\nhello\r\nEND\r\n")},
    {MSG_GAT, "k", S("VALUE k 5 5 1\r\nhello\r\nEND\r\n")},
    /* VALUE then something other than END */
    {MSG_GET, "k", S("VALUE k 0 1\r\nx\r\nSTORED\r\n")},
    {MSG_GET, "k", S("VALUE k 0 1\r\nx\r\nVALUE k 0 1\r\nx\r\nEND\r\n")},
    {MSG_GET, "k", S("VALUE k 0 1\r\nx\r\nEND junk\r\n")},
    {MSG_GET, "k", S("VALUE k 0 1\r\nx\r\nENDX\r\n")},
    {MSG_GET, "k", S("VALUE k 0 1\r\nx\r\n\r\n")},
    {MSG_GET, "k", S("VALUE k 0 1\r\nx\r\nERROR\r\n")},
    {MSG_GETS, "k", S("VALUE k 0 1 1\r\nx\r\nSERVER_ERROR out of memory\r\n")},
    {MSG_GAT, "k", S("VALUE k 0 1\r\nx\r\nOK\r\n")},
    /* a data block not ended by "\r\n" */
    {MSG_GET, "k", S("VALUE k 0 1\r\nxy\r\nEND\r\n")},
    {MSG_GET, "k", S("VALUE k 0 2\r\nx\r\nEND\r\n")},
    {MSG_GET, "k", S("VALUE k 0 1\r\nx\n\rEND\r\n")},
    {MSG_GETS, "k", S("VALUE k 0 0 1\r\nEND\r\n")},
    /* malformed VALUE lines */
    {MSG_GET, "k", S("VALUE k 0\r\nx\r\nEND\r\n")},
    {MSG_GET, "k", S("VALUE k x 1\r\nx\r\nEND\r\n")},
    {MSG_GET, "k", S("VALUE k 0 -1\r\nx\r\nEND\r\n")},
    {MSG_GETS, "k", S("VALUE k 0 1 1 1\r\nx\r\nEND\r\n")},
    {MSG_GET, "k", S("VALUE\r\nEND\r\n")},
    /* a storage op's reply that is another op's */
    {MSG_SET, "k", S("DELETED\r\n")},
    {MSG_SET, "k", S("EXISTS\r\n")},
    {MSG_SET, "k", S("NOT_FOUND\r\n")},
    {MSG_SET, "k", S("TOUCHED\r\n")},
    {MSG_SET, "k", S("END\r\n")},
    {MSG_SET, "k", S("OK\r\n")},
    {MSG_SET, "k", S("0\r\n")},
    {MSG_SET, "k", S("VALUE k 0 1\r\nx\r\nEND\r\n")},
    {MSG_ADD, "k", S("EXISTS\r\n")},
    {MSG_REPLACE, "k", S("DELETED\r\n")},
    {MSG_APPEND, "k", S("NOT_FOUND\r\n")},
    {MSG_PREPEND, "k", S("END\r\n")},
    {MSG_CAS, "k", S("DELETED\r\n")},
    {MSG_CAS, "k", S("END\r\n")},
    {MSG_CAS, "k", S("TOUCHED\r\n")},
    /* delete, incr/decr, touch, flush_all, version */
    {MSG_DELETE, "k", S("STORED\r\n")},
    {MSG_DELETE, "k", S("TOUCHED\r\n")},
    {MSG_DELETE, "k", S("END\r\n")},
    {MSG_DELETE, "k", S("1\r\n")},
    {MSG_INCR, "k", S("STORED\r\n")},
    {MSG_INCR, "k", S("DELETED\r\n")},
    {MSG_INCR, "k", S("END\r\n")},
    {MSG_INCR, "k", S("VALUE k 0 1\r\n1\r\nEND\r\n")},
    {MSG_INCR, "k", S("-1\r\n")},
    {MSG_INCR, "k", S("18446744073709551616\r\n")},
    {MSG_INCR, "k", S("1 2\r\n")},
    {MSG_DECR, "k", S("12a\r\n")},
    {MSG_DECR, "k", S("EXISTS\r\n")},
    {MSG_TOUCH, "k", S("DELETED\r\n")},
    {MSG_TOUCH, "k", S("STORED\r\n")},
    {MSG_TOUCH, "k", S("END\r\n")},
    {MSG_FLUSH_ALL, "", S("STORED\r\n")},
    {MSG_FLUSH_ALL, "", S("END\r\n")},
    {MSG_FLUSH_ALL, "", S("OK extra\r\n")},
    {MSG_FLUSH_ALL, "", S("VERSION 1.6.18\r\n")},
    {MSG_VERSION, "", S("OK\r\n")},
    {MSG_VERSION, "", S("END\r\n")},
    {MSG_VERSION, "", S("STAT version 1.6.18\r\n")},
    /* garbage to anything */
    {MSG_GET, "k", S("garbage\r\n")},
    {MSG_SET, "k", S("garbage\r\n")},
    {MSG_DELETE, "k", S("HTTP/1.1 400 Bad Request\r\n")},
    {MSG_INCR, "k", S("\r\n")},
    {MSG_TOUCH, "k", S(" TOUCHED\r\n")},
    {MSG_VERSION, "", S("\n")},
    {MSG_GET, "k", S("END extra\r\n")},
    {MSG_GET, "k", S("RESET\r\n")},
    {MSG_GET, "k", S("STAT pid 1\r\n")},
    {MSG_SET, "k", S("STORED \r\n")},
    {MSG_SET, "k", S("stored\r\n")},
};

/* A bad row: ERROR once whole, and never OK on any prefix. */
TEST(bad_rows_are_errors) {
    for (size_t i = 0; i < NROWS(bad_rows); i++) {
        const struct bad *t = &bad_rows[i];
        struct msg m = msg_of(t->op, t->key);
        struct msg_reply r;
        size_t consumed = 12345;
        char *copy;
        enum mc_parse rc = parse_copy(&r, &m, t->in, t->len, &consumed, &copy);
        free(copy);
        if (rc != MC_PARSE_ERROR)
            TH_FAIL("row %zu %s \"%s\": rc %d res %s", i, msg_op_name(t->op), show(t->in, t->len),
                    rc, msg_res_name(r.res));
    }
}

/*
 * A bad row's prefixes are NEED_MORE and then ERROR, never OK; once ERROR,
 * every longer prefix is ERROR too (more bytes never mend a broken reply).
 */
TEST(bad_rows_split_at_every_byte) {
    for (size_t i = 0; i < NROWS(bad_rows); i++) {
        const struct bad *t = &bad_rows[i];
        struct msg m = msg_of(t->op, t->key);
        int erred = 0;
        for (size_t cut = 0; cut <= t->len; cut++) {
            struct msg_reply r;
            size_t consumed;
            char *copy;
            enum mc_parse rc = parse_copy(&r, &m, t->in, cut, &consumed, &copy);
            free(copy);
            if (rc == MC_PARSE_OK || (erred && rc != MC_PARSE_ERROR))
                TH_FAIL("row %zu \"%s\" cut %zu: rc %d", i, show(t->in, t->len), cut, rc);
            erred |= rc == MC_PARSE_ERROR;
        }
    }
}

/*
 * "NEED_MORE (nothing consumed)": *consumed is 0 after NEED_MORE and after
 * ERROR, whatever it held, as the request codecs (mc_text_parse,
 * mc_meta_parse, mc_bin_parse) leave it, so a caller that adds it to its
 * read position unconditionally stays put.
 */
TEST(need_more_and_error_consume_nothing) {
    for (size_t i = 0; i < NROWS(ok_rows) + NROWS(bad_rows); i++) {
        int ok = i < NROWS(ok_rows);
        const struct bad *b = ok ? NULL : &bad_rows[i - NROWS(ok_rows)];
        struct msg m = ok ? msg_of(ok_rows[i].op, ok_rows[i].key) : msg_of(b->op, b->key);
        const char *in = ok ? ok_rows[i].in : b->in;
        size_t len = ok ? ok_rows[i].len : b->len;
        for (size_t cut = 0; cut <= len; cut++) {
            struct msg_reply r;
            size_t consumed = 12345;
            char *copy;
            enum mc_parse rc = parse_copy(&r, &m, in, cut, &consumed, &copy);
            free(copy);
            if (rc != MC_PARSE_OK && consumed != 0)
                TH_FAIL("\"%s\" cut %zu: rc %d consumed %zu", show(in, len), cut, rc, consumed);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* parse: split at every byte, and as one stream                            */
/* ---------------------------------------------------------------------- */

/*
 * Two parses agree when every field does; spans are compared as offsets
 * from their buffers, so parses of different copies compare.
 */
static const char *reply_diff(const struct msg_reply *a, const char *abuf,
                              const struct msg_reply *b, const char *bbuf) {
    if (a->res != b->res) return "res";
    if (a->flags != b->flags) return "flags";
    if (a->cas != b->cas) return "cas";
    if (a->number != b->number) return "number";
    if (a->ttl != b->ttl || a->won != b->won || a->token_sent != b->token_sent ||
        a->stale != b->stale)
        return "lease fields";
    const struct mc_span *sa[] = {&a->value, &a->msg};
    const struct mc_span *sb[] = {&b->value, &b->msg};
    for (int i = 0; i < 2; i++) {
        if (sa[i]->len != sb[i]->len) return "span length";
        if (sa[i]->len && (sa[i]->p - abuf) != (sb[i]->p - bbuf)) return "span offset";
    }
    return NULL;
}

/* Every proper prefix of an ok row is NEED_MORE; then the whole row is OK. */
TEST(ok_rows_split_at_every_byte) {
    for (size_t i = 0; i < NROWS(ok_rows); i++) {
        const struct row *t = &ok_rows[i];
        struct msg m = msg_of(t->op, t->key);
        for (size_t cut = 0; cut < t->len; cut++) {
            struct msg_reply r;
            size_t consumed;
            char *copy;
            enum mc_parse rc = parse_copy(&r, &m, t->in, cut, &consumed, &copy);
            free(copy);
            if (rc != MC_PARSE_NEED_MORE)
                TH_FAIL("row %zu \"%s\" cut %zu: rc %d", i, show(t->in, t->len), cut, rc);
        }
    }
}

/*
 * All ok rows back to back, each read as the reply to its own request: a
 * pipeline.  Cut it at every byte: every reply before the cut that is
 * whole parses as on its own, the one the cut falls into is NEED_MORE;
 * the rest, appended, parses to the end with the same answers.
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
            struct msg m = msg_of(ok_rows[el].op, ok_rows[el].key);
            struct msg_reply r;
            size_t consumed = 0;
            enum mc_parse rc = W->parse(&r, &m, 0, buf + off, have - off, &consumed);
            if (rc == MC_PARSE_NEED_MORE) {
                if (ends[el] <= have) {
                    fail = "NEED_MORE on a whole reply";
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
            struct msg_reply alone;
            size_t c2;
            W->parse(&alone, &m, 0, ok_rows[el].in, ok_rows[el].len, &c2);
            const char *d = reply_diff(&r, buf + off, &alone, ok_rows[el].in);
            if (d) {
                fail = d;
                break;
            }
            off += consumed;
            el++;
        }
        if (!fail && el != NROWS(ok_rows))
            fail = "reply count";
        fail_cut = cut;
        fail_el = el;
        free(buf);
    }
    free(stream);
    free(ends);
    if (fail)
        TH_FAIL("cut %zu reply %zu: %s", fail_cut, fail_el, fail);
}

/*
 * A delete with cellard's hold-off goes out as the text `delete <key>
 * <seconds>` (observed on cellard -o delete_hold: DELETED, then an add of
 * the key answers NOT_STORED until the hold passes; NOT_FOUND for a
 * missing key); hold 0 is a plain delete.  The meta wire sends the same
 * text command (meta has no hold-off), so both wires are checked here.
 */
static void delete_with_hold_on(int *th_failed, const struct msg_wire *w) {
    char out[MSG_HEAD_MAX];
    struct msg m = {.op = MSG_DELETE, .key = {"k", 1}, .hold = 2};
    size_t n = w->fmt(out, sizeof(out), &m, 0);
    ASSERT_EQ(n, 12);
    ASSERT_MEM(out, "delete k 2\r\n", 12);
    struct msg_reply r;
    size_t used = 99;
    ASSERT_EQ(w->parse(&r, &m, 0, "DELETED\r\n", 9, &used), MC_PARSE_OK);
    ASSERT_EQ(used, 9);
    ASSERT_EQ(r.res, MSG_RES_DELETED);
    ASSERT_EQ(w->parse(&r, &m, 0, "NOT_FOUND\r\n", 11, &used), MC_PARSE_OK);
    ASSERT_EQ(r.res, MSG_RES_NOT_FOUND);
    ASSERT_EQ(w->parse(&r, &m, 0, "DELETED", 7, &used), MC_PARSE_NEED_MORE);
    ASSERT_EQ(w->parse(&r, &m, 0, "STORED\r\n", 8, &used), MC_PARSE_ERROR);
    ASSERT_EQ(w->parse(&r, &m, 0, "CLIENT_ERROR bad command line format\r\n", 38, &used),
              MC_PARSE_OK);
    ASSERT_EQ(r.res, MSG_RES_CLIENT_ERROR);
}

/*
 * stats [group]: STAT lines up to END are the value, walked with
 * stat_next; RESET and OK (stats reset, stats detail on) are OK; an
 * unknown group is ERROR.  Observed from memcached 1.6.18 (`stats
 * settings` cut to its first two lines; `stats detail dump` with nothing
 * recorded is END alone).  The meta wire sends and reads the same text,
 * so both wires are checked here.
 */
static void stats_on(int *th_failed, const struct msg_wire *w) {
    static const char settings[] = "STAT maxbytes 67108864\r\nSTAT maxconns 1024\r\nEND\r\n";
    char out[MSG_HEAD_MAX];
    struct msg m = {.op = MSG_STATS, .key = {"settings", 8}};
    size_t n = w->fmt(out, sizeof(out), &m, 0);
    ASSERT_EQ(n, 16);
    ASSERT_MEM(out, "stats settings\r\n", 16);
    m.key = (struct mc_span){"", 0};
    ASSERT_EQ(w->fmt(out, sizeof(out), &m, 0), 7);
    m.key = (struct mc_span){"a\r\n", 3};
    ASSERT_EQ(w->fmt(out, sizeof(out), &m, 0), 0);
    m.key = (struct mc_span){"settings", 8};

    struct msg_reply r;
    size_t used = 99, len = sizeof(settings) - 1;
    for (size_t cut = 0; cut < len; cut++)
        ASSERT_EQ(w->parse(&r, &m, 0, settings, cut, &used), MC_PARSE_NEED_MORE);
    ASSERT_EQ(w->parse(&r, &m, 0, settings, len, &used), MC_PARSE_OK);
    ASSERT_EQ(used, len);
    ASSERT_EQ(r.res, MSG_RES_STATS);
    struct mc_span rest = r.value, name, value;
    ASSERT(w->stat_next(&rest, &name, &value));
    ASSERT_MEM(name.p, "maxbytes", 8);
    ASSERT_EQ(name.len, 8);
    ASSERT_MEM(value.p, "67108864", 8);
    ASSERT_EQ(value.len, 8);
    ASSERT(w->stat_next(&rest, &name, &value));
    ASSERT_EQ(name.len, 8);
    ASSERT_MEM(value.p, "1024", 4);
    ASSERT(!w->stat_next(&rest, &name, &value));

    ASSERT_EQ(w->parse(&r, &m, 0, "END\r\n", 5, &used), MC_PARSE_OK);
    ASSERT_EQ(r.res, MSG_RES_STATS);
    ASSERT_EQ(r.value.len, 0);
    ASSERT_EQ(w->parse(&r, &m, 0, "RESET\r\n", 7, &used), MC_PARSE_OK);
    ASSERT_EQ(r.res, MSG_RES_OK);
    ASSERT_EQ(w->parse(&r, &m, 0, "OK\r\n", 4, &used), MC_PARSE_OK);
    ASSERT_EQ(r.res, MSG_RES_OK);
    ASSERT_EQ(w->parse(&r, &m, 0, "ERROR\r\n", 7, &used), MC_PARSE_OK);
    ASSERT_EQ(r.res, MSG_RES_ERROR);
    ASSERT_EQ(w->parse(&r, &m, 0, "STAT a 1\r\nSTORED\r\n", 18, &used), MC_PARSE_ERROR);
    ASSERT_EQ(used, 0);
}

TEST(delete_with_hold) {
    delete_with_hold_on(th_failed, &msg_wire_text);
    if (!*th_failed)
        delete_with_hold_on(th_failed, &msg_wire_meta);
}

TEST(stats) {
    stats_on(th_failed, &msg_wire_text);
    if (!*th_failed)
        stats_on(th_failed, &msg_wire_meta);
}

/*
 * Batched gets: "get a b c a" is answered VALUE a, VALUE c, VALUE a, END
 * (b missed).  Walking the requests in order, each takes its VALUE or
 * misses without consuming; the last takes the END too.  Every prefix of
 * the reply is NEED_MORE for the request it stops in, nothing consumed.
 */
TEST(batched_gets) {
    const struct msg_wire *w = &msg_wire_text;
    struct msg ms[4] = {{.op = MSG_GET, KEY("a")}, {.op = MSG_GET, KEY("b")},
                        {.op = MSG_GET, KEY("c")}, {.op = MSG_GET, KEY("a")}};
    for (int i = 0; i < 4; i++)
        ASSERT(w->batches(&ms[i]));
    static const char reply[] = "VALUE a 1 1\r\nx\r\nVALUE c 3 2\r\nyz\r\n"
                                "VALUE a 1 1\r\nx\r\nEND\r\n";
    static const enum msg_res want[4] = {MSG_RES_HIT, MSG_RES_MISS, MSG_RES_HIT, MSG_RES_HIT};
    for (size_t cut = 0; cut <= sizeof(reply) - 1; cut++) {
        size_t off = 0;
        int i = 0;
        for (; i < 4; i++) {
            struct msg_reply r;
            size_t used = 99;
            enum mc_parse rc = w->parse_batched(&r, &ms[i], i == 3, reply + off, cut - off, &used);
            if (rc == MC_PARSE_NEED_MORE) {
                ASSERT_EQ(used, 0);
                break;
            }
            ASSERT_EQ(rc, MC_PARSE_OK);
            ASSERT_EQ(r.res, want[i]);
            if (want[i] == MSG_RES_HIT)
                ASSERT_EQ(r.flags, i == 2 ? 3u : 1u);
            off += used;
        }
        ASSERT_EQ(i == 4, cut == sizeof(reply) - 1);
        if (i == 4)
            ASSERT_EQ(off, sizeof(reply) - 1);
    }
    /* An error line answers every key still waiting; the last consumes it. */
    struct msg_reply r;
    size_t used;
    static const char err[] = "CLIENT_ERROR bad command line format\r\n";
    ASSERT_EQ(w->parse_batched(&r, &ms[1], false, err, sizeof(err) - 1, &used), MC_PARSE_OK);
    ASSERT(r.res == MSG_RES_CLIENT_ERROR && used == 0);
    ASSERT_EQ(w->parse_batched(&r, &ms[2], true, err, sizeof(err) - 1, &used), MC_PARSE_OK);
    ASSERT(r.res == MSG_RES_CLIENT_ERROR && used == sizeof(err) - 1);
    /* A VALUE no key on the line asked for, a gets VALUE without its cas: lost framing. */
    static const char other[] = "VALUE zz 0 1\r\nx\r\nEND\r\n";
    ASSERT_EQ(w->parse_batched(&r, &ms[0], true, other, sizeof(other) - 1, &used), MC_PARSE_ERROR);
    struct msg gets = {.op = MSG_GETS, KEY("a")};
    ASSERT_EQ(w->parse_batched(&r, &gets, true, reply, sizeof(reply) - 1, &used), MC_PARSE_ERROR);
    /* What batches: text gets and gets, not gat, not what asks for a TTL, not every key. */
    struct msg no[] = {{.op = MSG_GAT, KEY("a")}, {.op = MSG_GET, KEY("a"), .want_ttl = true},
                       {.op = MSG_GET, KEY("a b")}, {.op = MSG_SET, KEY("a")}};
    for (size_t i = 0; i < NROWS(no); i++)
        ASSERT(!w->batches(&no[i]));
    /* The meta wire batches only the text form (a router's text client's gets). */
    struct msg tf = {.op = MSG_GET, KEY("a"), .text_form = true};
    ASSERT(msg_wire_meta.batches(&tf) && !msg_wire_meta.batches(&ms[0]));
    ASSERT(msg_wire_bin.batches == NULL);
}

int main(void) { return RUN_TESTS(); }
