/*
 * test_msg_bin.c -- the binary wire of the client seam (msg_bin.c).
 *
 * fmt is checked by parsing what it writes with the server's own codec
 * (mc_bin_parse): opcode, extras, key, cas, opaque and value length for
 * every op, and against the very bytes that were sent to memcached.
 *
 * The reply rows are bytes OBSERVED from Debian's memcached 1.6.18
 * (started as `memcached -l 127.0.0.1 -p <port> -U 0 -u root`, plus -F
 * for the flush row and -m 2 -M for the out-of-memory row), answering
 * the requests this fmt wrote, all with opaque 0x0a0b0c0d; the same
 * situations were put to its text protocol, whose words the expected
 * results are.  A few rows memcached cannot be made to send are marked
 * as constructed.  The malformed rows are observed replies with one
 * field broken.  Every row is parsed from an exact-size heap copy, split
 * at every byte, with the next reply behind it, and the ok rows as one
 * stream cut at every byte.
 */
#include "harness.h"
#include "protocol/mc_bin.h"
#include "protocol/msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S(x) x, sizeof(x) - 1
#define OPQ 0x0a0b0c0du
#define NROWS(a) (sizeof(a) / sizeof((a)[0]))

#define K10 "kkkkkkkkkk"
#define K50 K10 K10 K10 K10 K10
#define K250 K50 K50 K50 K50 K50

static const struct msg_wire *const W = &msg_wire_bin;

/* ---------------------------------------------------------------------- */
/* Requests                                                                 */
/* ---------------------------------------------------------------------- */

/* fmt's bytes followed by the value, as a client sends them. */
static size_t fmt_whole(char *out, size_t cap, const struct msg *m, uint32_t opaque) {
    size_t n = W->fmt(out, cap, m, opaque);
    if (n && msg_op_stores(m->op)) {
        memcpy(out + n, m->value.p, m->value.len);
        n += m->value.len;
    }
    return n;
}

/* What each op must become on the wire. */
struct fmt_row {
    enum msg_op op;
    uint8_t opcode;
    uint8_t extlen;
    int has_exptime;            /* the extras carry m's exptime */
};

static const struct fmt_row fmt_rows[] = {
    {MSG_GET, MC_BIN_OP_GET, 0, 0},         {MSG_GETS, MC_BIN_OP_GET, 0, 0},
    {MSG_GAT, MC_BIN_OP_GAT, 4, 1},         {MSG_GATS, MC_BIN_OP_GAT, 4, 1},
    {MSG_SET, MC_BIN_OP_SET, 8, 1},         {MSG_ADD, MC_BIN_OP_ADD, 8, 1},
    {MSG_REPLACE, MC_BIN_OP_REPLACE, 8, 1}, {MSG_APPEND, MC_BIN_OP_APPEND, 0, 0},
    {MSG_PREPEND, MC_BIN_OP_PREPEND, 0, 0}, {MSG_CAS, MC_BIN_OP_SET, 8, 1},
    {MSG_DELETE, MC_BIN_OP_DELETE, 0, 0},   {MSG_INCR, MC_BIN_OP_INCREMENT, 20, 0},
    {MSG_DECR, MC_BIN_OP_DECREMENT, 20, 0}, {MSG_TOUCH, MC_BIN_OP_TOUCH, 4, 1},
    {MSG_FLUSH_ALL, MC_BIN_OP_FLUSH, 4, 1}, {MSG_VERSION, MC_BIN_OP_VERSION, 0, 0},
};

static struct msg sample(enum msg_op op) {
    return (struct msg){.op = op, .key = {S("key:1")}, .value = {S("hello")},
                        .flags = 0xdeadbeef, .exptime = 3600, .cas = 0x1122334455667788ull,
                        .delta = 42};
}

/* Every op, parsed back by the server's codec, says what the row says. */
TEST(fmt_round_trip_every_op) {
    for (size_t i = 0; i < NROWS(fmt_rows); i++) {
        const struct fmt_row *t = &fmt_rows[i];
        struct msg m = sample(t->op);
        char out[MSG_HEAD_MAX + 8];
        size_t n = fmt_whole(out, sizeof(out), &m, 0x01020304);
        if (n == 0)
            TH_FAIL("%s: fmt wrote nothing", msg_op_name(t->op));
        char *copy = malloc(n);
        memcpy(copy, out, n);
        struct mc_bin_req req;
        size_t consumed;
        enum mc_parse rc = mc_bin_parse(&req, copy, n, &consumed);
        int keyed = msg_op_keyed(t->op), stores = msg_op_stores(t->op);
        const char *why =
            rc != MC_PARSE_OK ? "server parse" :
            req.opcode != t->opcode ? "opcode" :
            req.extlen != t->extlen ? "extlen" :
            req.opaque != 0x01020304 ? "opaque" :
            req.cas != (t->op == MSG_CAS || msg_op_compares(t->op) ? m.cas : 0) ? "cas" :
            req.key.len != (keyed ? 5u : 0u) || (keyed && memcmp(req.key.p, "key:1", 5)) ? "key" :
            req.vlen != (stores ? 5u : 0u) ? "vlen" :
            consumed + req.vlen != n ? "length" :
            (stores && t->extlen == 8 && req.flags != m.flags) ? "flags" :
            (t->has_exptime && req.exptime != 3600) ? "exptime" :
            (t->extlen == 20 && (req.delta != 42 || req.initial != 0 ||
                                 req.exptime != MC_BIN_EXPTIME_NO_CREATE)) ? "incr extras" : NULL;
        free(copy);
        if (why)
            TH_FAIL("%s: %s", msg_op_name(t->op), why);
    }
}

/* Requests that were sent to memcached to observe the reply rows below. */
TEST(fmt_bytes_as_sent) {
    static const struct {
        struct msg m;
        const char *bytes;
        size_t len;
    } sent[] = {
        {{.op = MSG_SET, .key = {S("k")}, .value = {S("hello")}, .flags = 5},
         S("\x80\x01\x00\x01\x08\x00\x00\x00\x00\x00\x00\x0e\x0a\x0b\x0c\x0d"
           "\0\0\0\0\0\0\0\0" "\x00\x00\x00\x05\x00\x00\x00\x00" "k")},
        {{.op = MSG_GETS, .key = {S("k")}},
         S("\x80\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x0a\x0b\x0c\x0d"
           "\0\0\0\0\0\0\0\0" "k")},
        {{.op = MSG_INCR, .key = {S("n")}, .delta = 5},
         S("\x80\x05\x00\x01\x14\x00\x00\x00\x00\x00\x00\x15\x0a\x0b\x0c\x0d"
           "\0\0\0\0\0\0\0\0" "\0\0\0\0\0\0\0\x05" "\0\0\0\0\0\0\0\0" "\xff\xff\xff\xff" "n")},
        {{.op = MSG_CAS, .key = {S("k")}, .value = {S("new")}, .cas = 5},
         S("\x80\x01\x00\x01\x08\x00\x00\x00\x00\x00\x00\x0c\x0a\x0b\x0c\x0d"
           "\0\0\0\0\0\0\0\x05" "\0\0\0\0\0\0\0\0" "k")},
        {{.op = MSG_FLUSH_ALL, .exptime = 100},
         S("\x80\x08\x00\x00\x04\x00\x00\x00\x00\x00\x00\x04\x0a\x0b\x0c\x0d"
           "\0\0\0\0\0\0\0\0" "\x00\x00\x00\x64")},
        {{.op = MSG_FLUSH_ALL},
         S("\x80\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d"
           "\0\0\0\0\0\0\0\0")},
        {{.op = MSG_TOUCH, .key = {S("x")}, .exptime = -1},
         S("\x80\x1c\x00\x01\x04\x00\x00\x00\x00\x00\x00\x05\x0a\x0b\x0c\x0d"
           "\0\0\0\0\0\0\0\0" "\x00\x27\x8d\x01" "x")},
        {{.op = MSG_VERSION},
         S("\x80\x0b\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d"
           "\0\0\0\0\0\0\0\0")},
    };
    for (size_t i = 0; i < NROWS(sent); i++) {
        char out[MSG_HEAD_MAX];
        size_t n = W->fmt(out, sizeof(out), &sent[i].m, OPQ);
        if (n != sent[i].len || memcmp(out, sent[i].bytes, n) != 0)
            TH_FAIL("row %zu (%s): %zu bytes, want %zu", i, msg_op_name(sent[i].m.op), n,
                    sent[i].len);
    }
}

/*
 * A negative exptime is sent as 2592001 (observed: memcached reads 1 as
 * one second from now and kept such an item; 2592001 was gone at once);
 * a flush_all delay goes out only when positive; past 2^32-1 is unsayable.
 */
TEST(fmt_exptimes) {
    static const struct {
        enum msg_op op;
        int64_t e;
        int64_t want;           /* the extras' exptime; -1: no extras; -2: fmt refuses */
    } rows[] = {
        {MSG_SET, -1, 2592001},       {MSG_SET, INT64_MIN, 2592001}, {MSG_SET, 0, 0},
        {MSG_SET, 1, 1},              {MSG_SET, 4294967295, 4294967295},
        {MSG_SET, 4294967296, -2},    {MSG_TOUCH, -30, 2592001},     {MSG_GAT, -1, 2592001},
        {MSG_GATS, INT64_MAX, -2},    {MSG_TOUCH, 4294967296, -2},   {MSG_FLUSH_ALL, 0, -1},
        {MSG_FLUSH_ALL, -5, -1},      {MSG_FLUSH_ALL, 10, 10},       {MSG_FLUSH_ALL, 4294967296, -2},
        {MSG_GET, 4294967296, -1},    {MSG_DELETE, -1, -1},          {MSG_APPEND, INT64_MAX, -1},
    };
    for (size_t i = 0; i < NROWS(rows); i++) {
        struct msg m = sample(rows[i].op);
        m.exptime = rows[i].e;
        char out[MSG_HEAD_MAX + 8];
        size_t n = fmt_whole(out, sizeof(out), &m, 0);
        if (rows[i].want == -2) {
            if (n != 0)
                TH_FAIL("row %zu: fmt wrote %zu bytes", i, n);
            continue;
        }
        struct mc_bin_req req;
        size_t consumed;
        if (n == 0 || mc_bin_parse(&req, out, n, &consumed) != MC_PARSE_OK)
            TH_FAIL("row %zu: no request", i);
        if (rows[i].want == -1 ? req.extlen != 0 : req.exptime != (uint64_t)rows[i].want)
            TH_FAIL("row %zu: extlen %u exptime %u", i, req.extlen, req.exptime);
    }
}

/* What binary cannot say, or what is malformed, is 0 bytes. */
TEST(fmt_refuses) {
    char out[MSG_HEAD_MAX];
    struct msg m = sample(MSG_LEASE_GET);
    ASSERT_EQ(W->fmt(out, sizeof(out), &m, 0), 0);
    m.op = MSG_LEASE_SET;
    ASSERT_EQ(W->fmt(out, sizeof(out), &m, 0), 0);
    m.op = MSG_OP_COUNT;
    ASSERT_EQ(W->fmt(out, sizeof(out), &m, 0), 0);
    m = sample(MSG_CAS);
    m.cas = 0;                  /* a binary SET with cas 0 would be a plain set */
    ASSERT_EQ(W->fmt(out, sizeof(out), &m, 0), 0);

    /* Binary keys are any bytes (a space, a CR, a NUL...); only the length is refused. */
    static const struct mc_span bad_keys[] = {{S("")}, {S(K250 "k")}};
    for (size_t k = 0; k < NROWS(bad_keys); k++) {
        for (size_t i = 0; i < NROWS(fmt_rows); i++) {
            m = sample(fmt_rows[i].op);
            m.key = bad_keys[k];
            size_t n = W->fmt(out, sizeof(out), &m, 0);
            if (msg_op_keyed(m.op) ? n != 0 : n == 0)
                TH_FAIL("key %zu op %s: %zu bytes", k, msg_op_name(m.op), n);
        }
    }
    static const struct mc_span any_keys[] = {{S("a b")}, {S("a\rb")}, {S("\x7f")}, {S("\0")}};
    for (size_t k = 0; k < NROWS(any_keys); k++) {
        m = sample(MSG_GET);
        m.key = any_keys[k];
        size_t n = W->fmt(out, sizeof(out), &m, 0);
        ASSERT_EQ(n, 24 + any_keys[k].len);
        ASSERT_MEM(out + 24, any_keys[k].p, any_keys[k].len);
    }
    /* A 250-byte key is fine; a body past 2^32-1 is not. */
    m = sample(MSG_SET);
    m.key = (struct mc_span){S(K250)};
    ASSERT_EQ(W->fmt(out, sizeof(out), &m, 0), 24 + 8 + 250);
    m.value = (struct mc_span){NULL, (size_t)UINT32_MAX - 8 - 250};
    ASSERT_EQ(W->fmt(out, sizeof(out), &m, 0), 24 + 8 + 250);
    m.value.len++;
    ASSERT_EQ(W->fmt(out, sizeof(out), &m, 0), 0);
}

/* Too little room writes nothing; exactly enough writes it all. */
TEST(fmt_needs_room) {
    for (size_t i = 0; i < NROWS(fmt_rows); i++) {
        struct msg m = sample(fmt_rows[i].op);
        m.key = (struct mc_span){S(K250)};
        char out[MSG_HEAD_MAX], small[MSG_HEAD_MAX];
        size_t n = W->fmt(out, sizeof(out), &m, 7);
        ASSERT(n > 0 && n <= MSG_HEAD_MAX);
        ASSERT_EQ(W->fmt(small, n - 1, &m, 7), 0);
        ASSERT_EQ(W->fmt(small, n, &m, 7), n);
        ASSERT_MEM(small, out, n);
    }
}

/* ---------------------------------------------------------------------- */
/* Replies                                                                  */
/* ---------------------------------------------------------------------- */

struct row {
    const char *name;
    enum msg_op op;
    const char *hex;            /* the reply */
    enum mc_parse rc;
    enum msg_res res;
    const char *text;           /* HIT: the value; else msg; NULL: both empty */
    uint32_t flags;
    uint64_t cas;               /* HIT */
    uint64_t number;            /* NUMBER */
};

/* Opaque 0a0b0c0d throughout. */
#define HDR(op_kl_el_st, body) "81" op_kl_el_st body "0a0b0c0d"
#define NOT_FOUND HDR("00000000000001", "00000009") "0000000000000000" "4e6f7420666f756e64"

/* Observed from memcached 1.6.18 unless the name says "constructed". */
static const struct row ok_rows[] = {
    {"get hit", MSG_GET, HDR("00000004000000", "00000009") "0000000000000001" "00000005"
     "68656c6c6f", MC_PARSE_OK, MSG_RES_HIT, "hello", 5, 1, 0},
    {"gets hit", MSG_GETS, HDR("00000004000000", "0000000b") "0000000000000005" "00000005"
     "3e68656c6c6f21", MC_PARSE_OK, MSG_RES_HIT, ">hello!", 5, 5, 0},
    {"get miss", MSG_GET, NOT_FOUND, MC_PARSE_OK, MSG_RES_MISS, NULL, 0, 0, 0},
    {"gets miss", MSG_GETS, NOT_FOUND, MC_PARSE_OK, MSG_RES_MISS, NULL, 0, 0, 0},
    {"gat hit", MSG_GAT, HDR("1d000004000000", "00000009") "0000000000000001" "00000005"
     "68656c6c6f", MC_PARSE_OK, MSG_RES_HIT, "hello", 5, 1, 0},
    {"gats hit, exptime -1", MSG_GATS, HDR("1d000004000000", "00000005") "0000000000000006"
     "00000000" "76", MC_PARSE_OK, MSG_RES_HIT, "v", 0, 6, 0},
    {"gats miss", MSG_GATS, HDR("1d000000000001", "00000009") "0000000000000000"
     "4e6f7420666f756e64", MC_PARSE_OK, MSG_RES_MISS, NULL, 0, 0, 0},
    {"touch hit", MSG_TOUCH, HDR("1c000004000000", "00000004") "0000000000000001" "00000005",
     MC_PARSE_OK, MSG_RES_TOUCHED, NULL, 0, 0, 0},
    {"touch miss", MSG_TOUCH, HDR("1c000000000001", "00000009") "0000000000000000"
     "4e6f7420666f756e64", MC_PARSE_OK, MSG_RES_NOT_FOUND, NULL, 0, 0, 0},
    {"touch, constructed: no extras", MSG_TOUCH, HDR("1c000000000000", "00000000")
     "0000000000000001", MC_PARSE_OK, MSG_RES_TOUCHED, NULL, 0, 0, 0},
    {"set", MSG_SET, HDR("01000000000000", "00000000") "0000000000000001", MC_PARSE_OK,
     MSG_RES_STORED, NULL, 0, 0, 0},
    {"set too large", MSG_SET, HDR("01000000000003", "0000000a") "0000000000000000"
     "546f6f206c617267652e", MC_PARSE_OK, MSG_RES_SERVER_ERROR, "object too large for cache",
     0, 0, 0},
    {"set out of memory (-m 2 -M)", MSG_SET, HDR("01000000000082", "0000001d")
     "0000000000000000" "4f7574206f66206d656d6f727920616c6c6f636174696e67206974656d",
     MC_PARSE_OK, MSG_RES_SERVER_ERROR, "out of memory storing object", 0, 0, 0},
    {"add", MSG_ADD, HDR("02000000000000", "00000000") "0000000000000002", MC_PARSE_OK,
     MSG_RES_STORED, NULL, 0, 0, 0},
    {"add exists", MSG_ADD, HDR("02000000000002", "00000014") "0000000000000000"
     "446174612065786973747320666f72206b65792e", MC_PARSE_OK, MSG_RES_NOT_STORED, NULL, 0, 0,
     0},
    {"add, constructed: 05", MSG_ADD, HDR("02000000000005", "0000000b") "0000000000000000"
     "4e6f742073746f7265642e", MC_PARSE_OK, MSG_RES_NOT_STORED, NULL, 0, 0, 0},
    {"replace", MSG_REPLACE, HDR("03000000000000", "00000000") "0000000000000003", MC_PARSE_OK,
     MSG_RES_STORED, NULL, 0, 0, 0},
    {"replace miss", MSG_REPLACE, HDR("03000000000001", "00000009") "0000000000000000"
     "4e6f7420666f756e64", MC_PARSE_OK, MSG_RES_NOT_STORED, NULL, 0, 0, 0},
    {"append", MSG_APPEND, HDR("0e000000000000", "00000000") "0000000000000004", MC_PARSE_OK,
     MSG_RES_STORED, NULL, 0, 0, 0},
    {"append miss", MSG_APPEND, HDR("0e000000000005", "0000000b") "0000000000000000"
     "4e6f742073746f7265642e", MC_PARSE_OK, MSG_RES_NOT_STORED, NULL, 0, 0, 0},
    {"prepend", MSG_PREPEND, HDR("0f000000000000", "00000000") "0000000000000005", MC_PARSE_OK,
     MSG_RES_STORED, NULL, 0, 0, 0},
    {"prepend miss", MSG_PREPEND, HDR("0f000000000005", "0000000b") "0000000000000000"
     "4e6f742073746f7265642e", MC_PARSE_OK, MSG_RES_NOT_STORED, NULL, 0, 0, 0},
    {"cas", MSG_CAS, HDR("01000000000000", "00000000") "0000000000000006", MC_PARSE_OK,
     MSG_RES_STORED, NULL, 0, 0, 0},
    {"cas mismatch", MSG_CAS, HDR("01000000000002", "00000014") "0000000000000000"
     "446174612065786973747320666f72206b65792e", MC_PARSE_OK, MSG_RES_EXISTS, NULL, 0, 0, 0},
    {"cas miss", MSG_CAS, HDR("01000000000001", "00000009") "0000000000000000"
     "4e6f7420666f756e64", MC_PARSE_OK, MSG_RES_NOT_FOUND, NULL, 0, 0, 0},
    {"delete", MSG_DELETE, HDR("04000000000000", "00000000") "0000000000000000", MC_PARSE_OK,
     MSG_RES_DELETED, NULL, 0, 0, 0},
    {"delete miss", MSG_DELETE, HDR("04000000000001", "00000009") "0000000000000000"
     "4e6f7420666f756e64", MC_PARSE_OK, MSG_RES_NOT_FOUND, NULL, 0, 0, 0},
    {"incr 10 by 5", MSG_INCR, HDR("05000000000000", "00000008") "0000000000000008"
     "000000000000000f", MC_PARSE_OK, MSG_RES_NUMBER, NULL, 0, 0, 15},
    {"decr 15 by 100", MSG_DECR, HDR("06000000000000", "00000008") "0000000000000009"
     "0000000000000000", MC_PARSE_OK, MSG_RES_NUMBER, NULL, 0, 0, 0},
    {"incr miss (no item made)", MSG_INCR, HDR("05000000000001", "00000009")
     "0000000000000000" "4e6f7420666f756e64", MC_PARSE_OK, MSG_RES_NOT_FOUND, NULL, 0, 0, 0},
    {"decr miss", MSG_DECR, HDR("06000000000001", "00000009") "0000000000000000"
     "4e6f7420666f756e64", MC_PARSE_OK, MSG_RES_NOT_FOUND, NULL, 0, 0, 0},
    {"incr non-numeric", MSG_INCR, HDR("05000000000006", "0000002e") "0000000000000000"
     "4e6f6e2d6e756d65726963207365727665722d736964652076616c756520666f7220696e6372206f722064656372",
     MC_PARSE_OK, MSG_RES_CLIENT_ERROR, "cannot increment or decrement non-numeric value", 0, 0,
     0},
    {"incr, constructed: out of memory", MSG_INCR, HDR("05000000000082", "00000020")
     "0000000000000000" "4f7574206f66206d656d6f727920696e6372656d656e74696e672076616c7565",
     MC_PARSE_OK, MSG_RES_SERVER_ERROR, "out of memory", 0, 0, 0},
    {"flush_all", MSG_FLUSH_ALL, HDR("08000000000000", "00000000") "0000000000000000",
     MC_PARSE_OK, MSG_RES_OK, NULL, 0, 0, 0},
    {"flush_all under -F", MSG_FLUSH_ALL, HDR("08000000000020", "0000000d") "0000000000000000"
     "41757468206661696c7572652e", MC_PARSE_OK, MSG_RES_CLIENT_ERROR, "flush_all not allowed",
     0, 0, 0},
    {"version", MSG_VERSION, HDR("0b000000000000", "00000006") "0000000000000000"
     "312e362e3138", MC_PARSE_OK, MSG_RES_VERSION, "1.6.18", 0, 0, 0},
    {"get, keylen > bodylen sent", MSG_GET, HDR("00000000000081", "0000000f")
     "0000000000000000" "556e6b6e6f776e20636f6d6d616e64", MC_PARSE_OK, MSG_RES_ERROR,
     "Unknown command", 0, 0, 0},
    {"get, extras sent", MSG_GET, HDR("00000000000004", "00000011") "0000000000000000"
     "496e76616c696420617267756d656e7473", MC_PARSE_OK, MSG_RES_CLIENT_ERROR,
     "Invalid arguments", 0, 0, 0},
    {"delete, constructed: status 86", MSG_DELETE, HDR("04000000000086", "00000004")
     "0000000000000000" "6f6f7073", MC_PARSE_OK, MSG_RES_SERVER_ERROR, "oops", 0, 0, 0},
    {"get, constructed: status 02", MSG_GET, HDR("00000000000002", "00000000")
     "0000000000000000", MC_PARSE_OK, MSG_RES_SERVER_ERROR, "", 0, 0, 0},
    {"get hit, constructed: empty value", MSG_GET, HDR("00000004000000", "00000004")
     "ffffffffffffffff" "ffffffff", MC_PARSE_OK, MSG_RES_HIT, "", 0xffffffffu, UINT64_MAX, 0},
};

#define BAD(name, op, hex) {name, op, hex, MC_PARSE_ERROR, MSG_RES_NONE, NULL, 0, 0, 0}

/* Observed replies with one thing broken: no reply to this request. */
static const struct row bad_rows[] = {
    BAD("request magic", MSG_SET, "80" "01000000000000" "00000000" "0a0b0c0d" "0000000000000001"),
    BAD("magic 00", MSG_SET, "00" "01000000000000" "00000000" "0a0b0c0d" "0000000000000001"),
    BAD("other opaque", MSG_SET, "81" "01000000000000" "00000000" "0a0b0c0e" "0000000000000001"),
    BAD("other opcode", MSG_GET, HDR("01000000000000", "00000000") "0000000000000001"),
    BAD("quiet opcode", MSG_GET, HDR("09000004000000", "00000009") "0000000000000001" "00000005"
        "68656c6c6f"),
    BAD("getk opcode", MSG_GET, HDR("0c000004000000", "00000009") "0000000000000001" "00000005"
        "68656c6c6f"),
    BAD("keylen + extlen > bodylen", MSG_GET, HDR("00000104000000", "00000004")
        "0000000000000001" "00000005"),
    BAD("extlen > bodylen", MSG_SET, HDR("01000008000000", "00000004") "0000000000000001"
        "00000000"),
    BAD("get hit, extlen 0", MSG_GET, HDR("00000000000000", "00000005") "0000000000000001"
        "68656c6c6f"),
    BAD("get hit, extlen 8", MSG_GETS, HDR("00000008000000", "0000000d") "0000000000000001"
        "0000000000000005" "68656c6c6f"),
    BAD("gat hit, a key", MSG_GAT, HDR("1d000104000000", "0000000a") "0000000000000001"
        "00000005" "6b" "68656c6c6f"),
    BAD("incr, 7 bytes", MSG_INCR, HDR("05000000000000", "00000007") "0000000000000008"
        "0000000000000f"),
    BAD("incr, 9 bytes", MSG_DECR, HDR("06000000000000", "00000009") "0000000000000008"
        "000000000000000f00"),
    BAD("incr, extras", MSG_INCR, HDR("05000004000000", "0000000c") "0000000000000008"
        "00000000" "000000000000000f"),
    BAD("set, a body", MSG_SET, HDR("01000000000000", "00000002") "0000000000000001" "4f4b"),
    BAD("delete, extras", MSG_DELETE, HDR("04000004000000", "00000004") "0000000000000000"
        "00000000"),
    BAD("flush, a body", MSG_FLUSH_ALL, HDR("08000000000000", "00000001") "0000000000000000"
        "00"),
    BAD("touch, a value", MSG_TOUCH, HDR("1c000004000000", "00000005") "0000000000000001"
        "00000005" "76"),
    BAD("touch, extlen 8", MSG_TOUCH, HDR("1c000008000000", "00000008") "0000000000000001"
        "0000000000000005"),
    BAD("version, extras", MSG_VERSION, HDR("0b000004000000", "0000000a") "0000000000000000"
        "00000000" "312e362e3138"),
    BAD("miss with extras", MSG_GET, HDR("00000004000001", "0000000d") "0000000000000000"
        "00000000" "4e6f7420666f756e64"),
    BAD("miss with a key (getk's)", MSG_GET, HDR("00000100000001", "00000001")
        "0000000000000000" "6b"),
    BAD("lease-get: binary has none", MSG_LEASE_GET, HDR("00000004000000", "00000009")
        "0000000000000001" "00000005" "68656c6c6f"),
};

/* A row's bytes, in a heap buffer of exactly that size (ASan sees overruns). */
static char *unhex(const char *hex, size_t *n) {
    size_t len = strlen(hex) / 2;
    char *b = malloc(len ? len : 1);
    for (size_t i = 0; i < len; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        b[i] = (char)v;
    }
    *n = len;
    return b;
}

static struct msg row_msg(const struct row *t) {
    return (struct msg){.op = t->op, .key = {S("k")}};
}

static int span_is(struct mc_span s, const char *lit) {
    return s.len == strlen(lit) && (s.len == 0 || memcmp(s.p, lit, s.len) == 0);
}

static int inside(struct mc_span s, const char *lo, size_t n) {
    return s.len == 0 || (s.p >= lo && s.p + s.len <= lo + n);
}

/* What is wrong with reply r of row t parsed from buf, or NULL. */
static const char *check_reply(const struct row *t, const struct msg_reply *r, const char *buf,
                               size_t consumed) {
    if (r->res != t->res) return "res";
    if (!inside(r->value, buf, consumed)) return "value outside the reply";
    if (t->res == MSG_RES_HIT) {
        if (!span_is(r->value, t->text)) return "value";
        if (r->flags != t->flags) return "flags";
        if (r->cas != t->cas) return "cas";
        if (r->msg.len) return "msg";
        return NULL;
    }
    if (r->value.len) return "value";
    if (t->res == MSG_RES_NUMBER && r->number != t->number) return "number";
    if (!span_is(r->msg, t->text ? t->text : "")) return "msg";
    if (r->ttl != -1 || r->won || r->token_sent || r->stale) return "lease fields";
    return NULL;
}

/* Parses the first n bytes of the row's reply from their own heap copy. */
static enum mc_parse parse_prefix(const struct row *t, const char *bytes, size_t n,
                                  struct msg_reply *r, size_t *consumed, const char **why) {
    char *copy = malloc(n ? n : 1);
    memcpy(copy, bytes, n);
    struct msg m = row_msg(t);
    *consumed = 12345;
    enum mc_parse rc = W->parse(r, &m, OPQ, copy, n, consumed);
    *why = rc == MC_PARSE_OK ? check_reply(t, r, copy, *consumed) : NULL;
    free(copy);
    return rc;
}

static void run_rows(int *th_failed, const struct row *rows, size_t nrows) {
    for (size_t i = 0; i < nrows; i++) {
        const struct row *t = &rows[i];
        size_t n, consumed;
        char *bytes = unhex(t->hex, &n);
        struct msg_reply r;
        const char *why;
        enum mc_parse rc = parse_prefix(t, bytes, n, &r, &consumed, &why);
        free(bytes);
        if (rc != t->rc)
            TH_FAIL("%s: rc %d, want %d", t->name, rc, t->rc);
        if (consumed != (rc == MC_PARSE_OK ? n : 0))
            TH_FAIL("%s: consumed %zu of %zu", t->name, consumed, n);
        if (why)
            TH_FAIL("%s: %s (res %s)", t->name, why, msg_res_name(r.res));
    }
}

TEST(replies_observed) {
    run_rows(th_failed, ok_rows, NROWS(ok_rows));
}

TEST(replies_malformed) {
    run_rows(th_failed, bad_rows, NROWS(bad_rows));
}

/*
 * Every row cut at every byte: NEED_MORE with nothing consumed, until the
 * reply is whole (an ok row) or the header has said enough (a bad one),
 * then the row's own result; and the same with the next reply behind it.
 */
static void split_rows(int *th_failed, const struct row *rows, size_t nrows) {
    for (size_t i = 0; i < nrows; i++) {
        const struct row *t = &rows[i];
        size_t n, more_n;
        char *bytes = unhex(t->hex, &n);
        char *more = unhex(ok_rows[0].hex, &more_n);
        char *both = malloc(n + more_n);
        memcpy(both, bytes, n);
        memcpy(both + n, more, more_n);
        int decided = 0;
        for (size_t cut = 0; cut <= n + more_n; cut++) {
            struct msg_reply r;
            size_t consumed;
            const char *why;
            enum mc_parse rc = parse_prefix(t, both, cut, &r, &consumed, &why);
            if (rc == MC_PARSE_NEED_MORE && !decided && consumed == 0 && cut < n)
                continue;
            if (t->rc == MC_PARSE_OK && cut < n)
                TH_FAIL("%s cut %zu: rc %d before the end", t->name, cut, rc);
            decided = 1;
            if (rc != t->rc || why || consumed != (rc == MC_PARSE_OK ? n : 0))
                TH_FAIL("%s cut %zu: rc %d consumed %zu %s", t->name, cut, rc, consumed,
                        why ? why : "");
        }
        free(bytes);
        free(more);
        free(both);
    }
}

TEST(replies_split_at_every_byte) {
    split_rows(th_failed, ok_rows, NROWS(ok_rows));
    split_rows(th_failed, bad_rows, NROWS(bad_rows));
}

/*
 * All ok rows back to back, each the reply to its own request, make one
 * stream.  Cut it at every byte: whatever is whole before the cut parses
 * as on its own, the reply the cut falls in is NEED_MORE, and once the
 * rest arrives the stream parses to its end with the same answers.
 */
TEST(stream_cut_at_every_byte) {
    size_t total = 0, nr = NROWS(ok_rows);
    size_t *ends = malloc(nr * sizeof(*ends));
    for (size_t i = 0; i < nr; i++)
        total += strlen(ok_rows[i].hex) / 2;
    char *stream = malloc(total);
    total = 0;
    for (size_t i = 0; i < nr; i++) {
        size_t n;
        char *b = unhex(ok_rows[i].hex, &n);
        memcpy(stream + total, b, n);
        free(b);
        total += n;
        ends[i] = total;
    }
    const char *fail = NULL;
    size_t fail_cut = 0, fail_el = 0;
    for (size_t cut = 0; cut <= total && !fail; cut++) {
        char *buf = malloc(total);
        memcpy(buf, stream, cut);
        size_t off = 0, el = 0, have = cut;
        while (off < total && !fail) {
            const struct row *t = &ok_rows[el];
            struct msg m = row_msg(t);
            struct msg_reply r;
            size_t consumed = 0;
            enum mc_parse rc = W->parse(&r, &m, OPQ, buf + off, have - off, &consumed);
            if (rc == MC_PARSE_NEED_MORE) {
                if (ends[el] <= have || have == total) {
                    fail = "NEED_MORE on a whole reply";
                    break;
                }
                memcpy(buf + have, stream + have, total - have);   /* the rest arrives */
                have = total;
                continue;
            }
            if (rc != MC_PARSE_OK || off + consumed != ends[el]) {
                fail = "not OK, or consumed";
                break;
            }
            fail = check_reply(t, &r, buf + off, consumed);
            off += consumed;
            el++;
        }
        if (!fail && el != nr)
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

/* A big value: the header is enough to know, the whole body to answer. */
TEST(large_value_waits_for_its_body) {
    size_t vlen = 1 << 20, total = 24 + 4 + vlen;
    char *buf = malloc(total);
    mc_bin_fmt_get(buf, MC_BIN_OP_GET, OPQ, 99, 7, NULL, 0, (uint32_t)vlen);
    memset(buf + 28, 'v', vlen);
    struct msg m = {.op = MSG_GETS, .key = {S("k")}};
    struct msg_reply r;
    size_t consumed = 5;
    ASSERT_EQ(W->parse(&r, &m, OPQ, buf, total - 1, &consumed), MC_PARSE_NEED_MORE);
    ASSERT_EQ(consumed, 0);
    ASSERT_EQ(W->parse(&r, &m, OPQ, buf, total, &consumed), MC_PARSE_OK);
    ASSERT_EQ(consumed, total);
    ASSERT_EQ(r.res, MSG_RES_HIT);
    ASSERT_EQ(r.value.len, vlen);
    ASSERT(r.value.p == buf + 28);
    ASSERT_EQ(r.flags, 7);
    ASSERT_U64(r.cas, 99);
    /* With another opaque, the header alone is enough to refuse it. */
    ASSERT_EQ(W->parse(&r, &m, OPQ + 1, buf, 24, &consumed), MC_PARSE_ERROR);
    free(buf);
}

/* The table in msg.h's sense: the wire is named and sends nothing after a value. */
TEST(wire_identity) {
    ASSERT_STR(W->name, "binary");
    ASSERT_EQ(W->value_end_len, 0);
    ASSERT_STR(W->value_end, "");
}

/*
 * STAT: the group as the key; a packet per statistic, then an empty one.
 * Observed from memcached 1.6.18: "reset" answers the terminator alone,
 * an unknown group 01 "Not found" (ERROR, as text answers), "detail dump"
 * one packet ("detailed" = "END\r\n") and the terminator.
 */
TEST(stats) {
    static const unsigned char reset[] = {
        0x81, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0};
    static const unsigned char unknown[] = {
        0x81, 0x10, 0, 0, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0,
        'N', 'o', 't', ' ', 'f', 'o', 'u', 'n', 'd'};
    static const unsigned char dump[] = {
        0x81, 0x10, 0, 8, 0, 0, 0, 0, 0, 0, 0, 13, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0,
        'd', 'e', 't', 'a', 'i', 'l', 'e', 'd', 'E', 'N', 'D', '\r', '\n',
        0x81, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0};
    char out[MSG_HEAD_MAX];
    struct msg m = {.op = MSG_STATS, .key = {"detail dump", 11}};
    ASSERT_EQ(W->fmt(out, sizeof(out), &m, 9), 24 + 11);
    ASSERT_EQ((unsigned char)out[1], 0x10);
    ASSERT_EQ(out[3], 11);
    ASSERT_MEM(out + 24, "detail dump", 11);

    struct msg_reply r;
    size_t used = 99;
    for (size_t cut = 0; cut < sizeof(dump); cut++)
        ASSERT_EQ(W->parse(&r, &m, 9, (const char *)dump, cut, &used), MC_PARSE_NEED_MORE);
    ASSERT_EQ(W->parse(&r, &m, 9, (const char *)dump, sizeof(dump), &used), MC_PARSE_OK);
    ASSERT_EQ(used, sizeof(dump));
    ASSERT_EQ(r.res, MSG_RES_STATS);
    struct mc_span rest = r.value, name, value;
    ASSERT(W->stat_next(&rest, &name, &value));
    ASSERT_EQ(name.len, 8);
    ASSERT_MEM(name.p, "detailed", 8);
    ASSERT_EQ(value.len, 5);
    ASSERT_MEM(value.p, "END\r\n", 5);
    ASSERT(!W->stat_next(&rest, &name, &value));
    ASSERT_EQ(W->parse(&r, &m, 8, (const char *)dump, sizeof(dump), &used), MC_PARSE_ERROR);

    ASSERT_EQ(W->parse(&r, &m, 7, (const char *)reset, sizeof(reset), &used), MC_PARSE_OK);
    ASSERT_EQ(r.res, MSG_RES_STATS);
    ASSERT_EQ(r.value.len, 0);
    ASSERT_EQ(W->parse(&r, &m, 8, (const char *)unknown, sizeof(unknown), &used), MC_PARSE_OK);
    ASSERT_EQ(used, sizeof(unknown));
    ASSERT_EQ(r.res, MSG_RES_ERROR);
}

int main(void) {
    return RUN_TESTS();
}
