/*
 * test_msg_serve.c -- the router's side of the msg seam (protocol/msg_serve).
 *
 * Requests: client bytes are parsed by cellard's own codecs, turned into
 * a struct msg, checked field by field, and written again by the client
 * wire of the same protocol, which must give back an equivalent request.
 *
 * Replies: every expected answer is what cellard writes for the same case
 * (server/dispatch*.c, byte-identical to memcached 1.6.18).  Meta is
 * checked end to end against cellard's own formatter: the client's line
 * goes to a "backend" (msg_wire_meta.fmt, read back by mc_meta_parse),
 * the backend answers with mc_meta_fmt for an item view, libcellar's
 * wire parses that, and the router's answer must equal mc_meta_fmt of the
 * client's own line for the same view -- O and q put back by the router.
 * Binary answers are compared with the mc_bin_fmt_* calls dispatch_bin.c
 * makes, plus one row in literal bytes.
 */
#include "harness.h"
#include "show.h"
#include "protocol/mc_bin.h"
#include "protocol/mc_meta.h"
#include "protocol/mc_text.h"
#include "protocol/msg.h"
#include "protocol/msg_serve.h"

#include <stdio.h>
#include <string.h>

#define S(x) x, sizeof(x) - 1
#define SPAN(x) ((struct mc_span){S(x)})
#define NROWS(a) (sizeof(a) / sizeof((a)[0]))
#define O33 "O12345678901234567890123456789012" /* one byte over MC_META_OPAQUE_MAX */

static struct mc_span span_of(const char *s) {
    return (struct mc_span){s, s ? strlen(s) : 0};
}

/* Appends s to dst[0..n) and returns the new length. */
static size_t append(char *dst, size_t n, struct mc_span s) {
    if (s.len)
        memcpy(dst + n, s.p, s.len);
    return n + s.len;
}

/* head + value + tail, as the router's batcher would send them. */
static size_t collect(char *dst, const char *head, size_t n, const struct msg_serve_out *o) {
    return append(dst, append(dst, append(dst, 0, (struct mc_span){head, n}), o->value), o->tail);
}

#define ASSERT_BYTES(got, n, want, wn)                                          \
    do {                                                                        \
        if ((n) != (wn) || ((n) && memcmp((got), (want), (n)) != 0)) {          \
            fprintf(stderr, "  got  %s\n", show((got), (n)));                   \
            TH_FAIL("want %s", show((want), (wn)));                             \
        }                                                                       \
    } while (0)

/* ---------------------------------------------------------------------- */
/* Text                                                                     */
/* ---------------------------------------------------------------------- */

struct text_req_row {
    const char *line;
    bool ok;                    /* msg_from_text's answer */
    struct msg want;            /* key, value: compared as strings below */
    const char *key, *value;
};

static const struct text_req_row text_req_rows[] = {
    {"get foo\r\n", true, {.op = MSG_GET}, "foo", NULL},
    {"gets foo\r\n", true, {.op = MSG_GETS}, "foo", NULL},
    {"gat 30 foo\r\n", true, {.op = MSG_GAT, .exptime = 30}, "foo", NULL},
    {"gats -1 foo\r\n", true, {.op = MSG_GATS, .exptime = -1}, "foo", NULL},
    {"set foo 5 100 3\r\n", true, {.op = MSG_SET, .flags = 5, .exptime = 100}, "foo", "bar"},
    {"add foo 0 0 3\r\n", true, {.op = MSG_ADD}, "foo", "bar"},
    {"replace foo 1 -1 3\r\n", true, {.op = MSG_REPLACE, .flags = 1, .exptime = -1}, "foo", "bar"},
    {"append foo 0 0 3\r\n", true, {.op = MSG_APPEND}, "foo", "bar"},
    {"prepend foo 0 0 3\r\n", true, {.op = MSG_PREPEND}, "foo", "bar"},
    {"cas foo 7 9 3 99\r\n", true, {.op = MSG_CAS, .flags = 7, .exptime = 9, .cas = 99}, "foo", "bar"},
    {"delete foo\r\n", true, {.op = MSG_DELETE}, "foo", NULL},
    {"delete foo 30\r\n", true, {.op = MSG_DELETE, .hold = 30}, "foo", NULL},   /* cellar's hold */
    {"incr n 5\r\n", true, {.op = MSG_INCR, .delta = 5}, "n", NULL},
    {"decr n 18446744073709551615\r\n", true, {.op = MSG_DECR, .delta = UINT64_MAX}, "n", NULL},
    {"touch foo 10\r\n", true, {.op = MSG_TOUCH, .exptime = 10}, "foo", NULL},
    {"flush_all 10\r\n", true, {.op = MSG_FLUSH_ALL, .exptime = 10}, NULL, NULL},
    {"flush_all\r\n", true, {.op = MSG_FLUSH_ALL}, NULL, NULL},
    {"version\r\n", true, {.op = MSG_VERSION}, NULL, NULL},
    {"stats\r\n", false, {0}, NULL, NULL},
    {"verbosity 1\r\n", false, {0}, NULL, NULL},
    {"quit\r\n", false, {0}, NULL, NULL},
    {"mg foo v\r\n", false, {0}, NULL, NULL},
    {"bogus\r\n", false, {0}, NULL, NULL},
    {"delete foo bar\r\n", false, {0}, NULL, NULL},
    {"incr n x\r\n", false, {0}, NULL, NULL},
};

/* Each line becomes the msg in its row, and libcellar's text wire writes it back. */
TEST(text_requests) {
    for (size_t i = 0; i < NROWS(text_req_rows); i++) {
        const struct text_req_row *t = &text_req_rows[i];
        struct mc_req req;
        size_t used;
        enum mc_parse rc = mc_text_parse(&req, t->line, strlen(t->line), &used);
        ASSERT(rc == MC_PARSE_OK || rc == MC_PARSE_ERROR);
        struct msg m;
        if (msg_from_text(&m, &req, (struct mc_span){0}, span_of(t->value)) != t->ok)
            TH_FAIL("row %zu (%s): msg_from_text", i, show(t->line, strlen(t->line)));
        if (!t->ok)
            continue;
        ASSERT_EQ(m.op, t->want.op);
        ASSERT_EQ(m.flags, t->want.flags);
        ASSERT_EQ(m.exptime, t->want.exptime);
        ASSERT_U64(m.cas, t->want.cas);
        ASSERT_U64(m.delta, t->want.delta);
        ASSERT_EQ(m.hold, t->want.hold);
        ASSERT_BYTES(m.key.p, m.key.len, t->key ? t->key : "", span_of(t->key).len);
        ASSERT_BYTES(m.value.p, m.value.len, t->value ? t->value : "", span_of(t->value).len);
        /* libcellar's text wire writes the same line again (the value follows it) */
        char out[MSG_HEAD_MAX];
        size_t n = msg_wire_text.fmt(out, sizeof(out), &m, 0);
        ASSERT_BYTES(out, n, t->line, strlen(t->line));
    }
}

struct text_reply_row {
    const char *line;           /* the client's request */
    struct msg_reply r;
    const char *want;
};

#define R(res_, ...) {.res = res_, .ttl = -1, __VA_ARGS__}

static const struct text_reply_row text_reply_rows[] = {
    {"get foo\r\n", R(MSG_RES_HIT, .value = SPAN("bar"), .flags = 5, .cas = 42),
     "VALUE foo 5 3\r\nbar\r\n"},
    {"gets foo\r\n", R(MSG_RES_HIT, .value = SPAN("bar"), .flags = 5, .cas = 42),
     "VALUE foo 5 3 42\r\nbar\r\n"},
    {"gat 1 foo\r\n", R(MSG_RES_HIT, .value = SPAN(""), .cas = 42), "VALUE foo 0 0\r\n\r\n"},
    {"gats 1 foo\r\n", R(MSG_RES_HIT, .value = SPAN("x"), .flags = 4294967295u, .cas = 1),
     "VALUE foo 4294967295 1 1\r\nx\r\n"},
    {"get foo\r\n", R(MSG_RES_MISS), ""},
    {"set foo 0 0 3\r\n", R(MSG_RES_STORED), "STORED\r\n"},
    {"add foo 0 0 3\r\n", R(MSG_RES_NOT_STORED), "NOT_STORED\r\n"},
    {"cas foo 0 0 3 1\r\n", R(MSG_RES_EXISTS), "EXISTS\r\n"},
    {"cas foo 0 0 3 1\r\n", R(MSG_RES_NOT_FOUND), "NOT_FOUND\r\n"},
    {"set foo 0 0 3 noreply\r\n", R(MSG_RES_STORED), ""},
    {"set foo 0 0 3 noreply\r\n", R(MSG_RES_SERVER_ERROR, .msg = SPAN("server marked down")), ""},
    {"delete foo\r\n", R(MSG_RES_DELETED), "DELETED\r\n"},
    {"delete foo 30\r\n", R(MSG_RES_NOT_FOUND), "NOT_FOUND\r\n"},
    {"incr n 5\r\n", R(MSG_RES_NUMBER, .number = 15), "15\r\n"},
    {"decr n 5\r\n", R(MSG_RES_NUMBER, .number = UINT64_MAX), "18446744073709551615\r\n"},
    {"incr n 5\r\n", R(MSG_RES_CLIENT_ERROR,
                       .msg = SPAN("cannot increment or decrement non-numeric value")),
     "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
    {"touch foo 1\r\n", R(MSG_RES_TOUCHED), "TOUCHED\r\n"},
    {"flush_all\r\n", R(MSG_RES_OK), "OK\r\n"},
    {"flush_all noreply\r\n", R(MSG_RES_OK), ""},
    {"version\r\n", R(MSG_RES_VERSION, .msg = SPAN("1.6.18")), "VERSION 1.6.18\r\n"},
    {"set foo 0 0 3\r\n", R(MSG_RES_SERVER_ERROR, .msg = SPAN("object too large for cache")),
     "SERVER_ERROR object too large for cache\r\n"},
    {"get foo\r\n", R(MSG_RES_ERROR), "ERROR\r\n"},
    /* the router's own failures */
    {"get foo\r\n", R(MSG_RES_SERVER_ERROR, .msg = SPAN("server timed out")), "SERVER_ERROR server timed out\r\n"},
    {"set foo 0 0 3\r\n", R(MSG_RES_SERVER_ERROR, .msg = SPAN("server marked down")), "SERVER_ERROR server marked down\r\n"},
    {"delete foo\r\n", R(MSG_RES_SERVER_ERROR, .msg = SPAN("cannot connect to server")), "SERVER_ERROR cannot connect to server\r\n"},
    {"get foo\r\n", R(MSG_RES_CLIENT_ERROR, .msg = SPAN("bad command line format")), "CLIENT_ERROR bad command line format\r\n"},
    /* a reply that cannot be this request's */
    {"set foo 0 0 3\r\n", R(MSG_RES_HIT), "SERVER_ERROR protocol error in server reply\r\n"},
    {"get foo\r\n", R(MSG_RES_STORED), "SERVER_ERROR protocol error in server reply\r\n"},
};

TEST(text_replies) {
    for (size_t i = 0; i < NROWS(text_reply_rows); i++) {
        const struct text_reply_row *t = &text_reply_rows[i];
        struct mc_req req;
        size_t used;
        mc_text_parse(&req, t->line, strlen(t->line), &used);
        struct msg m;
        ASSERT(msg_from_text(&m, &req, (struct mc_span){0}, SPAN("bar")));
        struct msg_reply r = t->r;
        char head[MSG_SERVE_HEAD_MAX], got[MSG_SERVE_HEAD_MAX + 64];
        struct msg_serve_out o;
        size_t n = msg_serve_text(head, sizeof(head), &req, &m, &r, &o);
        n = collect(got, head, n, &o);
        ASSERT_BYTES(got, n, t->want, strlen(t->want));
    }
}

/*
 * The multi-get rule: values then END, unless a key failed; then that
 * error's line alone (mcrouter's MultiOpParent).  Written here as the
 * router would use the module.
 */
static size_t serve_get(char *dst, const char *line, const struct msg_reply *r, size_t nr) {
    struct mc_req req;
    size_t used, n = 0, i = 0;
    mc_text_parse(&req, line, strlen(line), &used);
    char head[MSG_SERVE_HEAD_MAX];
    struct msg_serve_out o;
    struct msg m;
    for (size_t k = 0; k < nr; k++) {
        if (msg_serve_is_error(&r[k])) {
            msg_from_text(&m, &req, (struct mc_span){0}, (struct mc_span){0});
            return collect(dst, head, msg_serve_text(head, sizeof(head), &req, &m, &r[k], &o), &o);
        }
    }
    struct mc_span rest = req.keys, key;
    while (mc_text_next_key(&rest, &key) && i < nr) {
        msg_from_text(&m, &req, key, (struct mc_span){0});
        n += collect(dst + n, head, msg_serve_text(head, sizeof(head), &req, &m, &r[i++], &o), &o);
    }
    memcpy(dst + n, MSG_SERVE_END, MSG_SERVE_END_LEN);
    return n + MSG_SERVE_END_LEN;
}

TEST(text_multi_get_rule) {
    struct msg_reply r[3] = {R(MSG_RES_HIT, .value = SPAN("1")), R(MSG_RES_MISS),
                             R(MSG_RES_HIT, .value = SPAN("333"), .flags = 2)};
    char got[512];
    size_t n = serve_get(got, "get a bb ccc\r\n", r, 3);
    static const char all[] = "VALUE a 0 1\r\n1\r\nVALUE ccc 2 3\r\n333\r\nEND\r\n";
    ASSERT_BYTES(got, n, all, sizeof(all) - 1);
    msg_serve_error(&r[1], MSG_RES_SERVER_ERROR, "connection closed");
    n = serve_get(got, "get a bb ccc\r\n", r, 3);
    static const char fail[] = "SERVER_ERROR connection closed\r\n";
    ASSERT_BYTES(got, n, fail, sizeof(fail) - 1);
    ASSERT(!msg_serve_is_error(&r[0]));
}

/* ---------------------------------------------------------------------- */
/* Meta                                                                     */
/* ---------------------------------------------------------------------- */

struct meta_req_row {
    const char *line;
    bool ok;
    char cmd;
    const char *key, *flags;    /* what the backend is sent */
};

static const struct meta_req_row meta_req_rows[] = {
    {"mg foo v f\r\n", true, 'g', "foo", "v f"},
    {"mg foo v O123 q t\r\n", true, 'g', "foo", "v t"},
    {"mg foo q\r\n", true, 'g', "foo", ""},
    {"mg foo\r\n", true, 'g', "foo", ""},
    {"ms foo 3 T10 F5\r\n", true, 's', "foo", "T10 F5"},
    {"ms foo 3 q O9 MA\r\n", true, 's', "foo", "MA"},
    {"md foo q C5\r\n", true, 'd', "foo", "C5"},
    {"ma n D5 v O1\r\n", true, 'a', "n", "D5 v"},
    {"mg Zm9v b k v\r\n", true, 'g', "Zm9v", "b k v"},       /* base64 key as sent */
    /* the backend stops at the long O itself (memcached's side effects end there) */
    {"mg foo v " O33 " t\r\n", true, 'g', "foo", "v " O33 " t"},
    {"mg foo q v " O33 " t\r\n", true, 'g', "foo", "v " O33 " t"},
    {"ma n q " O33 " D5\r\n", true, 'a', "n", O33 " D5"},
    {"ms foo 1 " O33 " T1\r\n", false, 0, NULL, NULL},         /* the codec refuses it */
    {"mn\r\n", false, 0, NULL, NULL},
    {"me foo\r\n", true, 'e', "foo", ""},                      /* routed by its key */
    {"me Zm9v b\r\n", true, 'e', "Zm9v", "b"},
};

TEST(meta_requests) {
    for (size_t i = 0; i < NROWS(meta_req_rows); i++) {
        const struct meta_req_row *t = &meta_req_rows[i];
        struct mc_meta_req req;
        size_t used;
        struct msg m;
        char buf[MC_LINE_MAX];
        size_t len = strlen(t->line);
        bool ok = mc_meta_parse(&req, t->line, len, &used) == MC_PARSE_OK &&
                  msg_from_meta(&m, &req, (struct mc_span){t->line, used}, SPAN("bar"), buf,
                                sizeof(buf));
        if (ok != t->ok)
            TH_FAIL("row %zu (%s): %d", i, show(t->line, len), ok);
        if (!ok)
            continue;
        ASSERT_EQ(m.op, MSG_META);
        ASSERT_EQ(m.meta_cmd, t->cmd);
        ASSERT_BYTES(m.key.p, m.key.len, t->key, strlen(t->key));
        ASSERT_BYTES(m.meta_flags.p, m.meta_flags.len, t->flags, strlen(t->flags));
        ASSERT_EQ(m.value.len, t->cmd == 's' ? 3 : 0);
        ASSERT(msg_meta_ok(m.meta_cmd, m.meta_flags));
    }
}

/*
 * Client line -> msg -> backend line (libcellar's meta wire, read back by
 * the server codec) -> the backend's answer for view (mc_meta_fmt) ->
 * libcellar's parse -> msg_serve_meta.  The result must be exactly what
 * cellard answers the client's own line for the same view.
 */
struct meta_reply_row {
    const char *line;
    struct mc_meta_item_view v;
    const char *value;          /* mg/ma hit: the value (v.vlen is set from it) */
    const char *want;
};

#define V(rc_, ...) {.rc = rc_, __VA_ARGS__}   /* t is asked for only where ttl is set */

static const struct meta_reply_row meta_reply_rows[] = {
    {"mg foo O123 v f\r\n", V(MC_META_RC_OK, .client_flags = 5), "bar", "VA 3 O123 f5\r\nbar\r\n"},
    {"mg foo v f O123\r\n", V(MC_META_RC_OK, .client_flags = 5), "bar", "VA 3 f5 O123\r\nbar\r\n"},
    {"mg foo v O123\r\n", V(MC_META_RC_EN), NULL, "EN O123\r\n"},
    {"mg foo v f O123 q\r\n", V(MC_META_RC_EN), NULL, ""},
    {"mg foo v q\r\n", V(MC_META_RC_OK), "x", "VA 1\r\nx\r\n"},
    {"mg foo k v O1 c t\r\n", V(MC_META_RC_OK, .cas = 9, .ttl = 30), "bar",
     "VA 3 kfoo O1 c9 t30\r\nbar\r\n"},
    {"mg foo O1 k\r\n", V(MC_META_RC_EN), NULL, "EN O1 kfoo\r\n"},
    {"mg Zm9v b k O1 v\r\n", V(MC_META_RC_OK, .key_binary = true), "bar",
     "VA 3 kZm9v b O1\r\nbar\r\n"},
    {"mg foo v c O1 N30\r\n", V(MC_META_RC_OK, .won = true, .cas = 4), "", "VA 0 c4 O1 W\r\n\r\n"},
    {"mg foo s O1 v\r\n", V(MC_META_RC_OK, .token_sent = true, .stale = true), "ab",
     "VA 2 s2 O1 Z X\r\nab\r\n"},
    {"mg foo v " O33 "\r\n", V(MC_META_RC_OK), "bar", "CLIENT_ERROR opaque token too long\r\n"},
    {"mg foo v " O33 " q\r\n", V(MC_META_RC_EN), NULL, "CLIENT_ERROR opaque token too long\r\n"},
    {"ms foo 3 O5\r\n", V(MC_META_RC_OK), NULL, "HD O5\r\n"},
    {"ms foo 3 O5 q\r\n", V(MC_META_RC_OK), NULL, ""},
    {"ms foo 3 q O5 ME\r\n", V(MC_META_RC_NS), NULL, "NS O5\r\n"},
    {"ms foo 3 c O5 k\r\n", V(MC_META_RC_OK, .cas = 77), NULL, "HD c77 O5 kfoo\r\n"},
    {"ms foo 3 C3 O5 q\r\n", V(MC_META_RC_EX), NULL, "EX O5\r\n"},
    {"md foo O5 q\r\n", V(MC_META_RC_NF), NULL, "NF O5\r\n"},
    {"md foo O5 q\r\n", V(MC_META_RC_OK), NULL, ""},
    {"md foo\r\n", V(MC_META_RC_OK), NULL, "HD\r\n"},
    {"ma n v O7\r\n", V(MC_META_RC_OK), "15", "VA 2 O7\r\n15\r\n"},
    {"ma n v O7 q\r\n", V(MC_META_RC_OK), "15", ""},
    {"ma n O7 q\r\n", V(MC_META_RC_NF), NULL, "NF O7\r\n"},
    {"ma n O7 c v\r\n", V(MC_META_RC_OK, .cas = 3), "16", "VA 2 O7 c3\r\n16\r\n"},
};

TEST(meta_replies_match_cellard) {
    for (size_t i = 0; i < NROWS(meta_reply_rows); i++) {
        const struct meta_reply_row *t = &meta_reply_rows[i];
        struct mc_meta_item_view v = t->v;
        struct mc_span value = span_of(t->value);
        v.vlen = (uint32_t)value.len;
        struct mc_meta_req creq, breq;
        size_t used;
        ASSERT_EQ(mc_meta_parse(&creq, t->line, strlen(t->line), &used), MC_PARSE_OK);
        struct msg m;
        char fbuf[MC_LINE_MAX], bline[MSG_HEAD_MAX];
        ASSERT(msg_from_meta(&m, &creq, (struct mc_span){t->line, used}, SPAN("bar"), fbuf,
                             sizeof(fbuf)));
        size_t bn = msg_wire_meta.fmt(bline, sizeof(bline), &m, 0);
        ASSERT(bn > 0);
        ASSERT_EQ(mc_meta_parse(&breq, bline, bn, &used), MC_PARSE_OK);
        /* O stays with the router; q goes on (with an mn after it), but an ms's; a
           late error's O goes too, without q */
        bool late = creq.opaque_late >= 0;
        ASSERT_EQ(mc_meta_has(&breq, 'O'), late);
        ASSERT_EQ(mc_meta_has(&breq, 'q'), m.meta_quiet);
        ASSERT_EQ(m.meta_quiet, mc_meta_has(&creq, 'q') && creq.cmd != MC_META_MS && !late);
        if (m.meta_quiet)
            ASSERT_BYTES(bline + used, bn - used, "mn\r\n", 4);

        /* The backend's answer (what its q let through, then MN), as the wire reads it. */
        char rbuf[MC_META_RESP_MAX + 64];
        bool sv = false;
        size_t rn = mc_meta_fmt(rbuf, sizeof(rbuf), &breq, &v, &sv);
        ASSERT(rn > 0 || m.meta_quiet);
        if (sv)
            rn = append(rbuf, append(rbuf, rn, value), SPAN("\r\n"));
        if (m.meta_quiet)
            rn = append(rbuf, rn, SPAN("MN\r\n"));
        struct msg_reply r;
        ASSERT_EQ(msg_wire_meta.parse(&r, &m, 0, rbuf, rn, &used), MC_PARSE_OK);

        /* The router's answer, and cellard's for the client's own line. */
        char head[MSG_SERVE_HEAD_MAX], got[MSG_SERVE_HEAD_MAX + 64], want[MC_META_RESP_MAX + 64];
        struct msg_serve_out o;
        size_t n = collect(got, head, msg_serve_meta(head, sizeof(head), &creq, &r, &o), &o);
        size_t wn = mc_meta_fmt(want, sizeof(want), &creq, &v, &sv);
        if (sv)
            wn = append(want, append(want, wn, value), SPAN("\r\n"));
        if (n != wn || memcmp(got, want, n) != 0)
            fprintf(stderr, "  row %zu\n", i);
        ASSERT_BYTES(got, n, want, wn);
        ASSERT_BYTES(got, n, t->want, strlen(t->want));
    }
}

/* Errors and the router's failures are sent whatever q says; a non-meta answer is refused. */
TEST(meta_errors) {
    static const char line[] = "mg foo v O1 q\r\n";
    static const struct { struct msg_reply r; const char *want; } rows[] = {
        {R(MSG_RES_SERVER_ERROR, .msg = SPAN("server timed out")), "SERVER_ERROR server timed out\r\n"},
        {R(MSG_RES_CLIENT_ERROR, .msg = SPAN("bad data chunk")), "CLIENT_ERROR bad data chunk\r\n"},
        {R(MSG_RES_STORED), "SERVER_ERROR protocol error in server reply\r\n"},
    };
    struct mc_meta_req req;
    size_t used;
    ASSERT_EQ(mc_meta_parse(&req, S(line), &used), MC_PARSE_OK);
    for (size_t i = 0; i < NROWS(rows); i++) {
        char head[MSG_SERVE_HEAD_MAX];
        struct msg_serve_out o;
        struct msg_reply r = rows[i].r;
        size_t n = msg_serve_meta(head, sizeof(head), &req, &r, &o);
        ASSERT_BYTES(head, n, rows[i].want, strlen(rows[i].want));
        ASSERT_EQ(o.value.len + o.tail.len, 0);
    }
}

/* ---------------------------------------------------------------------- */
/* Binary                                                                   */
/* ---------------------------------------------------------------------- */

struct bin_row {
    uint8_t op;
    const char *key, *value;
    uint32_t flags, exptime;
    uint64_t delta, initial, cas;
};

/* A request as a client writes it: header, the extras its opcode takes, key, value. */
static size_t bin_build(char *buf, const struct bin_row *t, uint32_t opaque) {
    char ext[20], *e = ext;
    uint8_t op = mc_bin_loud(t->op);
    if (op == MC_BIN_OP_SET || op == MC_BIN_OP_ADD || op == MC_BIN_OP_REPLACE)
        e = mc_bin_store32(mc_bin_store32(e, t->flags), t->exptime);
    else if (op == MC_BIN_OP_INCREMENT || op == MC_BIN_OP_DECREMENT)
        e = mc_bin_store32(mc_bin_store64(mc_bin_store64(e, t->delta), t->initial), t->exptime);
    else if (op == MC_BIN_OP_GAT || op == MC_BIN_OP_GATK || op == MC_BIN_OP_TOUCH ||
             (op == MC_BIN_OP_FLUSH && t->exptime))
        e = mc_bin_store32(e, t->exptime);
    size_t extlen = (size_t)(e - ext), kl = span_of(t->key).len, vl = span_of(t->value).len;
    size_t n = mc_bin_fmt_req_header(buf, t->op, (uint16_t)kl, (uint8_t)extlen,
                                     (uint32_t)(extlen + kl + vl), opaque, t->cas);
    memcpy(buf + n, ext, extlen);
    memcpy(buf + n + extlen, t->key ? t->key : "", kl);
    memcpy(buf + n + extlen + kl, t->value ? t->value : "", vl);
    return n + extlen + kl + vl;
}

/* Parses t's bytes with cellard's codec; the value is what follows the head. */
static bool bin_parse(struct mc_bin_req *req, char *buf, const struct bin_row *t,
                      struct mc_span *value) {
    size_t n = bin_build(buf, t, 0x01020304), used;
    if (mc_bin_parse(req, buf, n, &used) != MC_PARSE_OK)
        return false;
    *value = (struct mc_span){buf + used, n - used};
    return true;
}

struct bin_req_row {
    struct bin_row in;
    enum msg_bin_plan plan;
    struct msg want;
};

#define BIN(op_, ...) {.op = MC_BIN_OP_##op_, .key = "foo", __VA_ARGS__}

static const struct bin_req_row bin_req_rows[] = {
    {BIN(GET), MSG_BIN_SEND, {.op = MSG_GETS}},
    {BIN(GETKQ), MSG_BIN_SEND, {.op = MSG_GETS}},
    {BIN(GAT, .exptime = 30), MSG_BIN_SEND, {.op = MSG_GATS, .exptime = 30}},
    {BIN(GATKQ, .exptime = 30), MSG_BIN_SEND, {.op = MSG_GATS, .exptime = 30}},
    {BIN(TOUCH, .exptime = 30), MSG_BIN_SEND, {.op = MSG_TOUCH, .exptime = 30}},
    {BIN(SET, .value = "bar", .flags = 5, .exptime = 9), MSG_BIN_SEND,
     {.op = MSG_SET, .flags = 5, .exptime = 9}},
    {BIN(SET, .value = "bar", .cas = 77), MSG_BIN_SEND, {.op = MSG_CAS, .cas = 77}},
    {BIN(ADDQ, .value = "bar", .cas = 77), MSG_BIN_SEND, {.op = MSG_CAS, .cas = 77}},
    {BIN(ADD, .value = "bar"), MSG_BIN_SEND, {.op = MSG_ADD}},
    {BIN(REPLACEQ, .value = "bar"), MSG_BIN_SEND, {.op = MSG_REPLACE}},
    {BIN(APPEND, .value = "bar"), MSG_BIN_SEND, {.op = MSG_APPEND}},
    {BIN(PREPEND, .value = "bar", .cas = 3), MSG_BIN_SEND, {.op = MSG_PREPEND, .cas = 3}},
    {BIN(DELETE), MSG_BIN_SEND, {.op = MSG_DELETE}},
    {BIN(DELETEQ, .cas = 3), MSG_BIN_SEND, {.op = MSG_DELETE, .cas = 3}},
    {BIN(INCREMENT, .delta = 5, .exptime = MC_BIN_EXPTIME_NO_CREATE), MSG_BIN_SEND,
     {.op = MSG_INCR, .delta = 5}},
    {BIN(DECREMENTQ, .delta = 5, .initial = 10), MSG_BIN_SEND_CREATE,
     {.op = MSG_DECR, .delta = 5}},
    {BIN(INCREMENT, .delta = 5, .cas = 1), MSG_BIN_SEND_CREATE,
     {.op = MSG_INCR, .delta = 5, .cas = 1}},
    {{.op = MC_BIN_OP_FLUSH, .exptime = 10}, MSG_BIN_SEND, {.op = MSG_FLUSH_ALL, .exptime = 10}},
    {{.op = MC_BIN_OP_VERSION}, MSG_BIN_SEND, {.op = MSG_VERSION}},
    {{.op = MC_BIN_OP_NOOP}, MSG_BIN_LOCAL, {0}},
    {{.op = MC_BIN_OP_QUIT}, MSG_BIN_LOCAL, {0}},
    {{.op = MC_BIN_OP_STAT}, MSG_BIN_LOCAL, {0}},
};

TEST(bin_requests) {
    for (size_t i = 0; i < NROWS(bin_req_rows); i++) {
        const struct bin_req_row *t = &bin_req_rows[i];
        char buf[512];
        struct mc_bin_req req;
        struct mc_span value;
        ASSERT(bin_parse(&req, buf, &t->in, &value));
        struct msg m;
        if (msg_from_bin(&m, &req, value) != t->plan)
            TH_FAIL("row %zu (opcode %02x): plan", i, t->in.op);
        if (t->plan == MSG_BIN_LOCAL)
            continue;
        ASSERT_EQ(m.op, t->want.op);
        ASSERT_EQ(m.flags, t->want.flags);
        ASSERT_EQ(m.exptime, t->want.exptime);
        ASSERT_U64(m.cas, t->want.cas);
        ASSERT_U64(m.delta, t->want.delta);
        size_t kl = msg_op_keyed(m.op) ? 3 : 0;
        ASSERT_BYTES(m.key.p, m.key.len, "foo", kl);
        ASSERT_BYTES(m.value.p, m.value.len, "bar", t->in.value ? 3 : 0);
    }
}

/* Client packet -> msg -> libcellar's binary wire: the same packet again. */
TEST(bin_round_trip) {
    static const struct bin_row rows[] = {
        BIN(GET), BIN(GAT, .exptime = 30), BIN(TOUCH, .exptime = 1),
        BIN(SET, .value = "bar", .flags = 5, .exptime = 9), BIN(SET, .value = "bar", .cas = 8),
        BIN(ADD, .value = "bar"), BIN(REPLACE, .value = "bar", .flags = 1),
        BIN(APPEND, .value = "bar"), BIN(PREPEND, .value = "bar"), BIN(DELETE),
        BIN(INCREMENT, .delta = 5, .exptime = MC_BIN_EXPTIME_NO_CREATE),
        BIN(DECREMENT, .delta = 5, .exptime = MC_BIN_EXPTIME_NO_CREATE),
        {.op = MC_BIN_OP_FLUSH, .exptime = 10}, {.op = MC_BIN_OP_FLUSH}, {.op = MC_BIN_OP_VERSION},
    };
    for (size_t i = 0; i < NROWS(rows); i++) {
        char buf[512], out[MSG_HEAD_MAX];
        struct mc_bin_req req;
        struct mc_span value;
        struct msg m;
        ASSERT(bin_parse(&req, buf, &rows[i], &value));
        ASSERT_EQ(msg_from_bin(&m, &req, value), MSG_BIN_SEND);
        size_t n = msg_wire_bin.fmt(out, sizeof(out), &m, req.opaque);
        ASSERT_BYTES(out, n, buf, (size_t)(value.p - buf));
    }
}

/* What dispatch_bin.c writes, built with the same helpers. */
enum bin_want { W_NONE, W_GET, W_GETK, W_GETK_MISS, W_TOUCH, W_OK, W_INCR, W_ERR, W_TEXT, W_VERSION };

struct bin_reply_row {
    struct bin_row in;
    struct msg_reply r;
    enum bin_want kind;
    uint16_t status;            /* W_ERR, W_TEXT */
    const char *text;           /* W_TEXT */
    uint64_t number;            /* W_INCR */
    bool create;                /* r answers msg_bin_create's add (a creating incr/decr) */
};

#define ERR(st) .kind = W_ERR, .status = (st)
#define TEXT(st, t) .kind = W_TEXT, .status = (st), .text = (t)
#define CREATE(...) BIN(INCREMENT, .delta = 5, .initial = 1000, .exptime = 60, __VA_ARGS__)

#define HIT R(MSG_RES_HIT, .value = SPAN("bar"), .flags = 5, .cas = 9)

static const struct bin_reply_row bin_reply_rows[] = {
    {BIN(GET), HIT, .kind = W_GET},
    {BIN(GETQ), HIT, .kind = W_GET},
    {BIN(GETK), HIT, .kind = W_GETK},
    {BIN(GATKQ, .exptime = 1), HIT, .kind = W_GETK},
    {BIN(GET), R(MSG_RES_MISS), ERR(MC_BIN_ST_KEY_ENOENT)},
    {BIN(GETQ), R(MSG_RES_MISS), .kind = W_NONE},
    {BIN(GETK), R(MSG_RES_MISS), .kind = W_GETK_MISS},
    {BIN(GATK, .exptime = 1), R(MSG_RES_MISS), .kind = W_GETK_MISS},
    {BIN(GETKQ), R(MSG_RES_MISS), .kind = W_NONE},
    {BIN(TOUCH, .exptime = 1), R(MSG_RES_TOUCHED), .kind = W_TOUCH},
    {BIN(TOUCH, .exptime = 1), R(MSG_RES_NOT_FOUND), ERR(MC_BIN_ST_KEY_ENOENT)},
    {BIN(SET, .value = "bar"), R(MSG_RES_STORED), .kind = W_OK},
    {BIN(SETQ, .value = "bar"), R(MSG_RES_STORED), .kind = W_NONE},
    {BIN(SETQ, .value = "bar"), R(MSG_RES_NOT_STORED), ERR(MC_BIN_ST_NOT_STORED)},
    {BIN(ADD, .value = "bar"), R(MSG_RES_NOT_STORED), ERR(MC_BIN_ST_KEY_EEXISTS)},
    {BIN(REPLACE, .value = "bar"), R(MSG_RES_NOT_STORED), ERR(MC_BIN_ST_KEY_ENOENT)},
    {BIN(APPENDQ, .value = "bar"), R(MSG_RES_NOT_STORED), ERR(MC_BIN_ST_NOT_STORED)},
    {BIN(SET, .value = "bar", .cas = 2), R(MSG_RES_EXISTS), ERR(MC_BIN_ST_KEY_EEXISTS)},
    {BIN(SET, .value = "bar", .cas = 2), R(MSG_RES_NOT_FOUND), ERR(MC_BIN_ST_KEY_ENOENT)},
    {BIN(DELETE), R(MSG_RES_DELETED), .kind = W_OK},
    {BIN(DELETEQ), R(MSG_RES_DELETED), .kind = W_NONE},
    {BIN(DELETEQ), R(MSG_RES_NOT_FOUND), ERR(MC_BIN_ST_KEY_ENOENT)},
    {BIN(INCREMENT, .delta = 1), R(MSG_RES_NUMBER, .number = 15), .kind = W_INCR, .number = 15},
    {BIN(INCREMENTQ, .delta = 1), R(MSG_RES_NUMBER, .number = 15), .kind = W_NONE},
    {BIN(DECREMENT, .delta = 1), R(MSG_RES_NOT_FOUND), ERR(MC_BIN_ST_KEY_ENOENT)},
    {BIN(INCREMENT), R(MSG_RES_CLIENT_ERROR, .msg = SPAN("cannot increment or decrement non-numeric value")),
     ERR(MC_BIN_ST_DELTA_BADVAL)},
    {BIN(INCREMENT), R(MSG_RES_SERVER_ERROR, .msg = SPAN("out of memory")),
     TEXT(MC_BIN_ST_ENOMEM, MC_BIN_OOM_INCR)},
    {BIN(SET, .value = "bar"), R(MSG_RES_SERVER_ERROR, .msg = SPAN("object too large for cache")),
     ERR(MC_BIN_ST_E2BIG)},
    {BIN(SETQ, .value = "bar"), R(MSG_RES_SERVER_ERROR, .msg = SPAN("out of memory storing object")),
     TEXT(MC_BIN_ST_ENOMEM, MC_BIN_OOM_ITEM)},
    {{.op = MC_BIN_OP_FLUSH}, R(MSG_RES_OK), .kind = W_OK},
    {{.op = MC_BIN_OP_FLUSHQ}, R(MSG_RES_OK), .kind = W_NONE},
    {{.op = MC_BIN_OP_FLUSH}, R(MSG_RES_CLIENT_ERROR, .msg = SPAN("flush_all not allowed")),
     ERR(MC_BIN_ST_AUTH_ERROR)},
    {{.op = MC_BIN_OP_VERSION}, R(MSG_RES_VERSION, .msg = SPAN("1.6.18")), .kind = W_VERSION},
    {BIN(GET), R(MSG_RES_ERROR), ERR(MC_BIN_ST_UNKNOWN_COMMAND)},
    {BIN(GET), R(MSG_RES_CLIENT_ERROR, .msg = SPAN("bad command line format")),
     ERR(MC_BIN_ST_EINVAL)},
    /* the router's own failures: 84 with libcellar's words, quiet or not */
    {BIN(GETQ), R(MSG_RES_SERVER_ERROR, .msg = SPAN("server timed out")), TEXT(0x84, "server timed out")},
    {BIN(SETQ, .value = "bar"), R(MSG_RES_SERVER_ERROR, .msg = SPAN("server marked down")), TEXT(0x84, "server marked down")},
    {BIN(GET), R(MSG_RES_STORED), TEXT(0x84, "protocol error in server reply")},
    /* the creating incr's add: `initial` itself, 05 if the add lost a race, 82 on no memory */
    {CREATE(), R(MSG_RES_STORED), .kind = W_INCR, .number = 1000, .create = true},
    {CREATE(), R(MSG_RES_NOT_STORED), ERR(MC_BIN_ST_NOT_STORED), .create = true},
    {CREATE(), R(MSG_RES_SERVER_ERROR, .msg = SPAN("out of memory storing object")),
     TEXT(MC_BIN_ST_ENOMEM, MC_BIN_OOM_NEW_ITEM), .create = true},
    /* a compare that failed */
    {BIN(DELETE, .cas = 1), R(MSG_RES_EXISTS), ERR(MC_BIN_ST_KEY_EEXISTS)},
};

static size_t bin_expected(char *w, const struct bin_reply_row *t, const struct mc_bin_req *q) {
    uint16_t kl = (uint16_t)q->key.len;
    switch (t->kind) {
    case W_NONE: return 0;
    case W_GET: return mc_bin_fmt_get(w, q->opcode, q->opaque, 9, 5, NULL, kl, 3);
    case W_GETK: return mc_bin_fmt_get(w, q->opcode, q->opaque, 9, 5, q->key.p, kl, 3);
    case W_GETK_MISS: return mc_bin_fmt_getk_miss(w, q->opcode, q->opaque, q->key.p, kl);
    case W_TOUCH: return mc_bin_fmt_get(w, q->opcode, q->opaque, 0, 0, NULL, kl, 0);
    case W_OK: return mc_bin_fmt_header(w, q->opcode, 0, 0, 0, 0, q->opaque, 0);
    case W_INCR: return mc_bin_fmt_incr(w, q->opcode, q->opaque, 0, t->number);
    case W_ERR: return mc_bin_fmt_error(w, q->opcode, t->status, q->opaque);
    case W_TEXT:
        return mc_bin_fmt_error_text(w, q->opcode, t->status, q->opaque, t->text, strlen(t->text));
    case W_VERSION: return mc_bin_fmt_header(w, q->opcode, 0, 0, 0, 6, q->opaque, 0);
    }
    return 0;
}

TEST(bin_replies) {
    for (size_t i = 0; i < NROWS(bin_reply_rows); i++) {
        const struct bin_reply_row *t = &bin_reply_rows[i];
        char buf[512], head[MSG_SERVE_HEAD_MAX], got[1024], want[1024];
        struct mc_bin_req req;
        struct mc_span value;
        struct msg m;
        char digits[MSG_SERVE_DIGITS];
        ASSERT(bin_parse(&req, buf, &t->in, &value));
        enum msg_bin_plan plan = msg_from_bin(&m, &req, value);
        ASSERT(plan != MSG_BIN_LOCAL);
        if (t->create) {         /* the second step: an add of `initial` as memcached stores it */
            msg_bin_create(&m, &req, digits);
            ASSERT(m.op == MSG_ADD && m.exptime == 60 && m.flags == 0);
            ASSERT_BYTES(m.value.p, m.value.len, "1000", 4);
        }
        struct msg_reply r = t->r;
        struct msg_serve_out o = {{0}, {0}};
        size_t n = msg_serve_bin(head, sizeof(head), &req, &m, &r, &o);
        n = collect(got, head, n, &o);
        size_t wn = bin_expected(want, t, &req);
        if (t->kind == W_GET || t->kind == W_GETK)
            wn = append(want, wn, SPAN("bar"));
        if (t->kind == W_VERSION)
            wn = append(want, wn, SPAN("1.6.18"));
        if (n != wn || memcmp(got, want, n) != 0)
            fprintf(stderr, "  row %zu\n", i);
        ASSERT_BYTES(got, n, want, wn);
    }
}

/* Two answers in literal bytes, so the helpers above are not their own oracle. */
TEST(bin_literal_bytes) {
    static const struct { struct msg_reply r; struct mc_span want; } rows[] = {
        {HIT, SPAN("\x81\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x07\x01\x02\x03\x04"
                   "\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x00\x05" "bar")},
        {R(MSG_RES_MISS), SPAN("\x81\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x01\x02\x03\x04"
                               "\x00\x00\x00\x00\x00\x00\x00\x00" "Not found")},
    };
    char buf[512], head[MSG_SERVE_HEAD_MAX], got[256];
    struct mc_bin_req req;
    struct mc_span value;
    struct msg m;
    struct msg_serve_out o;
    const struct bin_row get = BIN(GET);
    ASSERT(bin_parse(&req, buf, &get, &value));
    msg_from_bin(&m, &req, value);
    for (size_t i = 0; i < NROWS(rows); i++) {
        size_t n = collect(got, head, msg_serve_bin(head, sizeof(head), &req, &m, &rows[i].r, &o), &o);
        ASSERT_BYTES(got, n, rows[i].want.p, rows[i].want.len);
    }
}

int main(void) { return RUN_TESTS(); }
