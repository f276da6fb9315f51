/*
 * fuzz_msg_bin.c -- mutation fuzzer for the binary wire's reply parser.
 *
 *   fuzz_msg_bin N        N mutated inputs from a fixed seed (make test: 200000)
 *   fuzz_msg_bin N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target.  The run itself
 * (rng, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h; the corpus is
 * replies memcached 1.6.18 sent to msg_wire_bin's requests.
 *
 * Each input is read as the reply to a request of some op (usually one
 * whose opcode the input's header names) with the input's own opaque, or
 * now and then another, from an exact-size heap copy, and must keep:
 *   - the result is OK, NEED_MORE or ERROR (never CLOSE); consumed <= len;
 *     NEED_MORE and ERROR consume nothing;
 *   - the header alone refuses what cannot be this reply (magic, opcode,
 *     opaque, keylen + extlen > bodylen), as read independently here, and
 *     a lease op is refused outright; a header that passes waits for its body;
 *   - OK consumes exactly 24 + bodylen bytes, every strict prefix of them
 *     is NEED_MORE (sampled on long replies), and bytes behind change
 *     nothing; the answer is one this op may get; HIT and NUMBER read
 *     their flags, value, cas and number where the header puts them;
 *   - every span lies inside the consumed bytes (a message may instead
 *     be one of the wire's fixed texts).
 */
#include "protocol/mc_bin.h"
#include "protocol/msg.h"

#define FUZZ_CAP 1200
#include "fuzz_driver.h"

static const struct msg_wire *const W = &msg_wire_bin;

static uint32_t be32(const unsigned char *u) {
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

/* The opcode each op goes out as (an independent copy of msg_bin.c's table). */
static const int opcode_of[MSG_OP_COUNT] = {
    [MSG_GET] = 0x00,     [MSG_GETS] = 0x00,    [MSG_GAT] = 0x1d,  [MSG_GATS] = 0x1d,
    [MSG_SET] = 0x01,     [MSG_ADD] = 0x02,     [MSG_REPLACE] = 0x03, [MSG_APPEND] = 0x0e,
    [MSG_PREPEND] = 0x0f, [MSG_CAS] = 0x01,     [MSG_DELETE] = 0x04, [MSG_INCR] = 0x05,
    [MSG_DECR] = 0x06,    [MSG_TOUCH] = 0x1c,   [MSG_FLUSH_ALL] = 0x08, [MSG_VERSION] = 0x0b,
    [MSG_LEASE_GET] = -1, [MSG_LEASE_SET] = -1, [MSG_STATS] = 0x10, [MSG_META] = -1,
};

/* May op be answered res?  Errors may answer anything. */
static bool allowed(enum msg_op op, enum msg_res res) {
    if (res == MSG_RES_ERROR || res == MSG_RES_CLIENT_ERROR || res == MSG_RES_SERVER_ERROR)
        return true;
    switch (op) {
    case MSG_GET: case MSG_GETS: case MSG_GAT: case MSG_GATS:
        return res == MSG_RES_HIT || res == MSG_RES_MISS;
    case MSG_CAS:
        return res == MSG_RES_STORED || res == MSG_RES_NOT_STORED || res == MSG_RES_EXISTS ||
               res == MSG_RES_NOT_FOUND;
    case MSG_SET: case MSG_ADD: case MSG_REPLACE: case MSG_APPEND: case MSG_PREPEND:
        return res == MSG_RES_STORED || res == MSG_RES_NOT_STORED;
    case MSG_DELETE: return res == MSG_RES_DELETED || res == MSG_RES_NOT_FOUND;
    case MSG_INCR: case MSG_DECR: return res == MSG_RES_NUMBER || res == MSG_RES_NOT_FOUND;
    case MSG_TOUCH: return res == MSG_RES_TOUCHED || res == MSG_RES_NOT_FOUND;
    case MSG_FLUSH_ALL: return res == MSG_RES_OK;
    case MSG_VERSION: return res == MSG_RES_VERSION;
    default: return false;
    }
}

static bool inside(struct mc_span s, const char *lo, size_t n) {
    return s.len == 0 || (s.p >= lo && s.p + s.len <= lo + n);
}

static long seen[4], seen_res[MSG_RES_COUNT];

/* An OK reply, checked field by field against the bytes. */
static void check_ok(enum msg_op op, const struct msg_reply *r, const char *b, size_t len,
                     size_t consumed) {
    const unsigned char *u = (const unsigned char *)b;
    CHECK(len >= 24 && consumed == 24 + (size_t)be32(u + 8));
    CHECK(allowed(op, r->res));
    CHECK(inside(r->value, b, consumed));
    CHECK(inside(r->msg, b, consumed) || (r->msg.p != NULL && r->msg.len > 0 &&
                                          (r->msg.p < b || r->msg.p >= b + len)));
    uint16_t status = (uint16_t)(u[6] << 8 | u[7]);
    if (r->res == MSG_RES_HIT) {
        CHECK(status == 0 && u[4] == 4 && u[2] == 0 && u[3] == 0);
        CHECK(r->flags == be32(u + 24) && r->value.p == b + 28 && r->value.len == consumed - 28);
        CHECK(r->cas == ((uint64_t)be32(u + 16) << 32 | be32(u + 20)));
    } else {
        CHECK(r->value.len == 0);
    }
    if (r->res == MSG_RES_NUMBER)
        CHECK(consumed == 32 && r->number == ((uint64_t)be32(u + 24) << 32 | be32(u + 28)));
    if (status != 0)
        CHECK(r->res != MSG_RES_HIT && r->res != MSG_RES_STORED && r->res != MSG_RES_NUMBER &&
              r->res != MSG_RES_OK && r->res != MSG_RES_VERSION && r->res != MSG_RES_DELETED &&
              r->res != MSG_RES_TOUCHED);
}

/* Parses in[0..n) from its own heap copy; the copy is left in *copy. */
static enum mc_parse parse_copy(const struct msg *m, uint32_t opaque, const char *in, size_t n,
                                struct msg_reply *r, size_t *consumed, char **copy) {
    *copy = malloc(n ? n : 1);
    memcpy(*copy, in, n);
    *consumed = 777;
    return W->parse(r, m, opaque, *copy, n, consumed);
}

/* Usually an op whose opcode the header names, so replies get past the header. */
static enum msg_op pick_op(const unsigned char *u, size_t len) {
    if (len >= 2 && fuzz_rnd() % 4 != 0) {
        enum msg_op fits[4];
        size_t nf = 0;
        for (int op = 0; op < MSG_OP_COUNT; op++)
            if (opcode_of[op] == u[1] && nf < 4 && op != MSG_STATS)
                fits[nf++] = (enum msg_op)op;
        if (nf)
            return fits[fuzz_below(nf)];
    }
    /* Not stats, whose reply is many packets (the model below reads one): test_msg_bin. */
    enum msg_op op;
    do
        op = (enum msg_op)fuzz_below(MSG_OP_COUNT);
    while (op == MSG_STATS);
    return op;
}

static void check_one(const char *in, size_t len) {
    const unsigned char *u = (const unsigned char *)in;
    struct msg m = {.op = pick_op(u, len), .key = {"k", 1}};
    uint32_t opaque = len >= 16 && fuzz_rnd() % 8 ? be32(u + 12) : (uint32_t)fuzz_rnd();
    struct msg_reply r;
    size_t consumed;
    char *b;
    enum mc_parse rc = parse_copy(&m, opaque, in, len, &r, &consumed, &b);

    CHECK(rc == MC_PARSE_OK || rc == MC_PARSE_NEED_MORE || rc == MC_PARSE_ERROR);
    seen[rc]++;
    CHECK(consumed <= len);
    if (rc != MC_PARSE_OK)
        CHECK(consumed == 0);
    if (opcode_of[m.op] < 0) {
        CHECK(rc == MC_PARSE_ERROR);            /* binary has no lease ops, no raw meta */
    } else if (len >= 24) {
        bool refuse = u[0] != 0x81 || opcode_of[m.op] != u[1] || be32(u + 12) != opaque ||
                      (uint32_t)u[4] + (uint32_t)(u[2] << 8 | u[3]) > be32(u + 8);
        if (refuse)
            CHECK(rc == MC_PARSE_ERROR);
        else if (24 + (uint64_t)be32(u + 8) > len)
            CHECK(rc == MC_PARSE_NEED_MORE);
        else
            CHECK(rc != MC_PARSE_NEED_MORE);
    } else {
        CHECK(rc == MC_PARSE_NEED_MORE);
    }
    if (rc == MC_PARSE_OK) {
        seen_res[r.res]++;
        check_ok(m.op, &r, b, len, consumed);
        /* Every strict prefix waits: all of the first 40, then one in 16, then the last 3. */
        for (size_t i = 0; i < consumed; i++) {
            if (i >= 40 && i + 3 < consumed && i % 16 != 0)
                continue;
            struct msg_reply r2;
            size_t c2 = 5;
            CHECK(W->parse(&r2, &m, opaque, b, i, &c2) == MC_PARSE_NEED_MORE && c2 == 0);
        }
    }
    /* Bytes behind a decided reply change nothing. */
    if (rc != MC_PARSE_NEED_MORE) {
        char *more = malloc(len + 30);
        memcpy(more, in, len);
        memset(more + len, 0x81, 30);
        struct msg_reply r2;
        size_t c2;
        CHECK(W->parse(&r2, &m, opaque, more, len + 30, &c2) == rc && c2 == consumed);
        CHECK(r2.res == r.res && r2.value.len == r.value.len && r2.msg.len == r.msg.len);
        free(more);
    }
    free(b);
}

/* ---------------------------------------------------------------------- */
/* Corpus and mutations                                                     */
/* ---------------------------------------------------------------------- */

#define C(x) FUZZ_ENTRY(x)

/* Replies memcached 1.6.18 sent (tests/unit/protocol/test_msg_bin.c has them by name). */
static const struct fuzz_entry corpus[] = {
    C("\x81\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x01"),
    C("\x81\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x09\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x05\x68\x65\x6c\x6c\x6f"),
    C("\x81\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4e\x6f\x74\x20\x66\x6f\x75\x6e\x64"),
    C("\x81\x1d\x00\x00\x04\x00\x00\x00\x00\x00\x00\x09\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x05\x68\x65\x6c\x6c\x6f"),
    C("\x81\x1d\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4e\x6f\x74\x20\x66\x6f\x75\x6e\x64"),
    C("\x81\x1c\x00\x00\x04\x00\x00\x00\x00\x00\x00\x04\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x05"),
    C("\x81\x1c\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4e\x6f\x74\x20\x66\x6f\x75\x6e\x64"),
    C("\x81\x02\x00\x00\x00\x00\x00\x02\x00\x00\x00\x14\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x44\x61\x74\x61\x20\x65\x78\x69\x73\x74\x73\x20\x66\x6f\x72\x20\x6b\x65\x79\x2e"),
    C("\x81\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x02"),
    C("\x81\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x03"),
    C("\x81\x03\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4e\x6f\x74\x20\x66\x6f\x75\x6e\x64"),
    C("\x81\x0e\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x04"),
    C("\x81\x0e\x00\x00\x00\x00\x00\x05\x00\x00\x00\x0b\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4e\x6f\x74\x20\x73\x74\x6f\x72\x65\x64\x2e"),
    C("\x81\x0f\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x05"),
    C("\x81\x0f\x00\x00\x00\x00\x00\x05\x00\x00\x00\x0b\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4e\x6f\x74\x20\x73\x74\x6f\x72\x65\x64\x2e"),
    C("\x81\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x0b\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x05\x3e\x68\x65\x6c\x6c\x6f\x21"),
    C("\x81\x01\x00\x00\x00\x00\x00\x02\x00\x00\x00\x14\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x44\x61\x74\x61\x20\x65\x78\x69\x73\x74\x73\x20\x66\x6f\x72\x20\x6b\x65\x79\x2e"),
    C("\x81\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x06"),
    C("\x81\x01\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4e\x6f\x74\x20\x66\x6f\x75\x6e\x64"),
    C("\x81\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00"),
    C("\x81\x04\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4e\x6f\x74\x20\x66\x6f\x75\x6e\x64"),
    C("\x81\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x07"),
    C("\x81\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x08\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x0f"),
    C("\x81\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x08\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x00\x00\x00\x00\x00\x00"),
    C("\x81\x05\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4e\x6f\x74\x20\x66\x6f\x75\x6e\x64"),
    C("\x81\x06\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4e\x6f\x74\x20\x66\x6f\x75\x6e\x64"),
    C("\x81\x05\x00\x00\x00\x00\x00\x06\x00\x00\x00\x2e\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4e\x6f\x6e\x2d\x6e\x75\x6d\x65\x72\x69\x63\x20\x73\x65\x72\x76\x65\x72\x2d\x73\x69\x64\x65\x20\x76\x61\x6c\x75\x65\x20\x66\x6f\x72\x20\x69\x6e\x63\x72\x20\x6f\x72\x20\x64\x65\x63\x72"),
    C("\x81\x01\x00\x00\x00\x00\x00\x03\x00\x00\x00\x0a\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x54\x6f\x6f\x20\x6c\x61\x72\x67\x65\x2e"),
    C("\x81\x0b\x00\x00\x00\x00\x00\x00\x00\x00\x00\x06\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x31\x2e\x36\x2e\x31\x38"),
    C("\x81\x08\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00"),
    C("\x81\x00\x00\x00\x00\x00\x00\x81\x00\x00\x00\x0f\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x55\x6e\x6b\x6e\x6f\x77\x6e\x20\x63\x6f\x6d\x6d\x61\x6e\x64"),
    C("\x81\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x11\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x49\x6e\x76\x61\x6c\x69\x64\x20\x61\x72\x67\x75\x6d\x65\x6e\x74\x73"),
    C("\x81\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x05\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x76"),
    C("\x81\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x02"),
    C("\x81\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x04"),
    C("\x81\x1c\x00\x00\x04\x00\x00\x00\x00\x00\x00\x04\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00"),
    C("\x81\x1d\x00\x00\x04\x00\x00\x00\x00\x00\x00\x05\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x06\x00\x00\x00\x00\x76"),
    C("\x81\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x08"),
    C("\x81\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x05\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x08\x00\x00\x00\x00\x76"),
    C("\x81\x08\x00\x00\x00\x00\x00\x20\x00\x00\x00\x0d\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x41\x75\x74\x68\x20\x66\x61\x69\x6c\x75\x72\x65\x2e"),
    C("\x81\x01\x00\x00\x00\x00\x00\x82\x00\x00\x00\x1d\x0a\x0b\x0c\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x4f\x75\x74\x20\x6f\x66\x20\x6d\x65\x6d\x6f\x72\x79\x20\x61\x6c\x6c\x6f\x63\x61\x74\x69\x6e\x67\x20\x69\x74\x65\x6d"),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static void put32(char *b, uint32_t v) {
    b[0] = (char)(v >> 24), b[1] = (char)(v >> 16), b[2] = (char)(v >> 8), b[3] = (char)v;
}

/*
 * Rewrites one header field with a value a reply may plausibly hold, and
 * usually resizes the input to what the header announces (or one off).
 */
static size_t set_field(char *b, size_t len) {
    static const int ops[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x08, 0x09,
                              0x0b, 0x0c, 0x0e, 0x0f, 0x1c, 0x1d, 0x23, 0xff};
    static const int statuses[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x20, 0x81, 0x82,
                                   0x86, 0xffff};
    static const unsigned exts[] = {0, 4, 8, 20, 255};
    if (len < 24)
        return len;
    unsigned kl = ((unsigned char)b[2] << 8) | (unsigned char)b[3], el = (unsigned char)b[4];
    uint32_t body = be32((const unsigned char *)b + 8);
    switch (fuzz_rnd() % 7) {
    case 0:
        b[1] = (char)ops[fuzz_below(sizeof(ops) / sizeof(ops[0]))];
        return len;
    case 1: {
        int st = statuses[fuzz_below(sizeof(statuses) / sizeof(statuses[0]))];
        b[6] = (char)(st >> 8), b[7] = (char)st;
        return len;
    }
    case 2:
        el = exts[fuzz_below(sizeof(exts) / sizeof(exts[0]))];
        b[4] = (char)el;
        break;
    case 3:
        kl = (unsigned)fuzz_below(3);
        b[2] = 0, b[3] = (char)kl;
        break;
    case 4: {
        uint32_t choices[] = {0, kl + el, kl + el + 1, kl + el + 4, kl + el + 8, kl + el - 1,
                              body + 1, body - 1, UINT32_MAX};
        body = choices[fuzz_below(sizeof(choices) / sizeof(choices[0]))];
        put32(b + 8, body);
        break;
    }
    case 5:
        b[0] = (char)(fuzz_rnd() % 8 ? 0x81 : fuzz_rnd());
        return len;
    default:
        b[12 + fuzz_below(4)] = (char)fuzz_rnd();
        return len;
    }
    body = be32((const unsigned char *)b + 8);
    size_t want = 24 + (size_t)body;
    if (want <= FUZZ_CAP && fuzz_rnd() % 4) {
        size_t target = want - (fuzz_rnd() % 5 == 0);
        if (target > len)
            memset(b + len, 'v', target - len);
        return target;
    }
    return len;
}

static size_t mutate(char *b, size_t len) {
    switch (fuzz_rnd() % 8) {
    case 0:
        return fuzz_flip_bit(b, len);
    case 1:
        return fuzz_random_byte(b, len);
    case 2: /* truncate */
        return fuzz_below(len + 1);
    case 3:
        return fuzz_insert_random(b, len);
    case 4: { /* another reply behind, or inside */
        size_t i = fuzz_below(NCORPUS);
        return fuzz_splice_at(b, len, i, fuzz_rnd() % 2 ? len : fuzz_below(len + 1));
    }
    default:
        return set_field(b, len);
    }
}

static void report(long iters) {
    printf("fuzz_msg_bin: %ld inputs (ok %ld: hit %ld miss %ld stored %ld number %ld "
           "server_error %ld; need_more %ld; error %ld), all invariants held\n",
           iters, seen[MC_PARSE_OK], seen_res[MSG_RES_HIT], seen_res[MSG_RES_MISS],
           seen_res[MSG_RES_STORED], seen_res[MSG_RES_NUMBER], seen_res[MSG_RES_SERVER_ERROR],
           seen[MC_PARSE_NEED_MORE], seen[MC_PARSE_ERROR]);
}

/* Random inputs start with the response magic, or nearly all would be refused at once. */
static const struct fuzz_config cfg = {
    .name = "fuzz_msg_bin",
    .check = check_one,
    .report = report,
    .dump_hex = true,
    .seed = 0x6d736762696e31ULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 3,
    .random_max = 80,
    .random_first = 0x81,
    .mutate = mutate,
};

FUZZ_DRIVER(&cfg)
