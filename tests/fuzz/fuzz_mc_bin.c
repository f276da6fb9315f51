/*
 * fuzz_mc_bin.c -- mutation fuzzer for the binary protocol codec.
 *
 *   fuzz_mc_bin N        N mutated inputs from a fixed seed (make test: 200000)
 *   fuzz_mc_bin N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target
 * (LLVMFuzzerTestOneInput) running the same checks on each input.  The
 * run itself (rng, mutations, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h.
 *
 * Each input is parsed as a request and as a response, from exact-size
 * heap copies (so a sanitizer build catches any read past the end), and
 * must keep these invariants:
 *   - the result is one of the four; consumed <= len; NEED_MORE and
 *     CLOSE consume nothing; OK and ERROR consume 24 + extlen + keylen;
 *   - the header fields agree with the bytes, read independently;
 *   - the outcome (OK, or which status, close and skip) agrees with an
 *     independent table of memcached 1.6.18's rules;
 *   - the key span lies inside the input, right after the extras;
 *   - prefixes: below the request's end NEED_MORE (or, for a CLOSE,
 *     CLOSE from byte 24 on); at its end, the whole input and with other
 *     bytes behind, the very same parse;
 *   - an accepted request, formatted back from its fields, is the same
 *     24 header bytes.
 */
#include "protocol/mc_bin.h"

#define FUZZ_CAP 1200
#include "fuzz_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* An independent model of memcached 1.6.18's rules                          */
/* ---------------------------------------------------------------------- */

enum body_rule { ANY_BODY, BODY_IS_KEY, BODY_IS_EXT, BODY_IS_EXT_KEY, BODY_AT_LEAST_EXT_KEY };

/*
 * What each opcode demands, as a table: the one extras length allowed
 * (or -1 for "0 or 4"), whether the key must be empty (0), present (1)
 * or either (-1), and how the body relates to them.  SASL rows are
 * answered "Unknown command" even when well formed.
 */
struct rule {
    int op;
    int ext;
    int key;
    enum body_rule body;
    bool sasl;
};

static const struct rule rules[] = {
    {0x00, 0, 1, BODY_IS_KEY, false},  {0x09, 0, 1, BODY_IS_KEY, false},
    {0x0c, 0, 1, BODY_IS_KEY, false},  {0x0d, 0, 1, BODY_IS_KEY, false},
    {0x04, 0, 1, BODY_IS_KEY, false},  {0x14, 0, 1, BODY_IS_KEY, false},
    {0x01, 8, 1, BODY_AT_LEAST_EXT_KEY, false}, {0x11, 8, 1, BODY_AT_LEAST_EXT_KEY, false},
    {0x02, 8, 1, BODY_AT_LEAST_EXT_KEY, false}, {0x12, 8, 1, BODY_AT_LEAST_EXT_KEY, false},
    {0x03, 8, 1, BODY_AT_LEAST_EXT_KEY, false}, {0x13, 8, 1, BODY_AT_LEAST_EXT_KEY, false},
    {0x0e, 0, 1, ANY_BODY, false},     {0x19, 0, 1, ANY_BODY, false},
    {0x0f, 0, 1, ANY_BODY, false},     {0x1a, 0, 1, ANY_BODY, false},
    {0x05, 20, 1, BODY_IS_EXT_KEY, false}, {0x15, 20, 1, BODY_IS_EXT_KEY, false},
    {0x06, 20, 1, BODY_IS_EXT_KEY, false}, {0x16, 20, 1, BODY_IS_EXT_KEY, false},
    {0x07, 0, 0, BODY_IS_KEY, false},  {0x17, 0, 0, BODY_IS_KEY, false},
    {0x0a, 0, 0, BODY_IS_KEY, false},  {0x0b, 0, 0, BODY_IS_KEY, false},
    {0x08, -1, 0, BODY_IS_EXT, false}, {0x18, -1, 0, BODY_IS_EXT, false},
    {0x10, 0, -1, ANY_BODY, false},
    {0x1c, 4, 1, ANY_BODY, false},     {0x1d, 4, 1, ANY_BODY, false},
    {0x1e, 4, 1, ANY_BODY, false},     {0x23, 4, 1, ANY_BODY, false},
    {0x24, 4, 1, ANY_BODY, false},
    {0x20, 0, 0, BODY_IS_KEY, true},   {0x21, 0, 1, ANY_BODY, true},
    {0x22, 0, 1, ANY_BODY, true},
};

struct outcome {
    enum mc_parse r;
    uint16_t status;
    bool close;
    uint32_t swallow;
};

static uint32_t be32(const unsigned char *u) {
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static struct outcome model(const unsigned char *u, size_t len) {
    struct outcome o = {MC_PARSE_NEED_MORE, 0, false, 0};
    if (len < 24)
        return o;
    unsigned key = (unsigned)u[2] << 8 | u[3], ext = u[4];
    uint64_t body = be32(u + 8);
    if (u[0] != 0x80 || 24 + ext + key > 16384) {
        o.r = MC_PARSE_CLOSE;
        return o;
    }
    if (len < 24 + ext + key)
        return o;
    o.r = MC_PARSE_ERROR;
    if (key + ext > body) {
        o.status = 0x81, o.close = true;
        return o;
    }
    if (key > 250) {
        o.status = 0x04, o.close = true;
        return o;
    }
    const struct rule *w = NULL;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        if (rules[i].op == u[1])
            w = &rules[i];
    if (w == NULL) {
        o.status = 0x81, o.swallow = (uint32_t)body;
        return o;
    }
    bool good = (w->ext < 0 ? (ext == 0 || ext == 4) : ext == (unsigned)w->ext) &&
                (w->key < 0 || (w->key == 0 ? key == 0 : key != 0));
    switch (w->body) {
    case ANY_BODY: break;
    case BODY_IS_KEY: good = good && body == key; break;
    case BODY_IS_EXT: good = good && body == ext; break;
    case BODY_IS_EXT_KEY: good = good && body == ext + key; break;
    case BODY_AT_LEAST_EXT_KEY: good = good && body >= ext + key; break;
    }
    if (!good) {
        o.status = 0x04, o.close = true;
        return o;
    }
    if (w->sasl) {
        o.status = 0x81, o.swallow = (uint32_t)(body - key);
        return o;
    }
    o.r = MC_PARSE_OK;
    return o;
}

/* ---------------------------------------------------------------------- */
/* The invariants                                                           */
/* ---------------------------------------------------------------------- */

static bool same(const struct mc_bin_req *a, const char *abuf, const struct mc_bin_req *b,
                 const char *bbuf) {
    if (a->opcode != b->opcode || a->cmd != b->cmd || a->quiet != b->quiet ||
        a->reads_value != b->reads_value || a->extlen != b->extlen || a->datatype != b->datatype ||
        a->vbucket != b->vbucket || a->keylen != b->keylen || a->bodylen != b->bodylen ||
        a->opaque != b->opaque || a->cas != b->cas || a->vlen != b->vlen || a->flags != b->flags ||
        a->exptime != b->exptime || a->delta != b->delta || a->initial != b->initial ||
        a->status != b->status || a->swallow != b->swallow || a->close != b->close ||
        a->key.len != b->key.len)
        return false;
    return a->key.len == 0 || a->key.p - abuf == b->key.p - bbuf;
}

static long seen[4], seen_status[3];

static enum mc_parse parse_exact(struct mc_bin_req *req, const char *in, size_t len,
                                 size_t *consumed, char **copy) {
    *copy = malloc(len ? len : 1);
    memcpy(*copy, in, len);
    return mc_bin_parse(req, *copy, len, consumed);
}

static void check_response_parse(const char *in, size_t len) {
    struct mc_bin_res res;
    size_t consumed;
    char *copy = malloc(len ? len : 1);
    memcpy(copy, in, len);
    enum mc_parse r = mc_bin_parse_res(&res, copy, len, &consumed);
    CHECK(r == MC_PARSE_OK || r == MC_PARSE_NEED_MORE || r == MC_PARSE_CLOSE);
    CHECK(consumed <= len);
    if (r == MC_PARSE_OK) {
        CHECK(consumed == 24u + res.extlen + res.keylen);
        CHECK(res.ext.p == copy + 24 && res.key.p == copy + 24 + res.extlen);
        CHECK((uint64_t)res.extlen + res.keylen + res.vlen == res.bodylen);
        char again[24];
        mc_bin_fmt_header(again, res.opcode, res.keylen, res.extlen, res.status, res.bodylen,
                          res.opaque, res.cas);
        again[5] = (char)res.datatype;
        CHECK(memcmp(again, copy, 24) == 0);
    } else {
        CHECK(consumed == 0);
    }
    free(copy);
}

static void check_one(const char *in, size_t len) {
    struct mc_bin_req req, again;
    size_t consumed, c2;
    char *copy, *copy2;
    const unsigned char *u = (const unsigned char *)in;

    enum mc_parse r = parse_exact(&req, in, len, &consumed, &copy);
    CHECK(r >= MC_PARSE_OK && r <= MC_PARSE_CLOSE);
    CHECK(consumed <= len);
    seen[r]++;

    struct outcome want = model(u, len);
    CHECK(r == want.r);
    if (len >= 24) {
        CHECK(req.opcode == u[1]);
        CHECK(req.keylen == ((unsigned)u[2] << 8 | u[3]));
        CHECK(req.extlen == u[4] && req.datatype == u[5]);
        CHECK(req.vbucket == ((unsigned)u[6] << 8 | u[7]));
        CHECK(req.bodylen == be32(u + 8) && req.opaque == be32(u + 12));
        CHECK(req.cas == ((uint64_t)be32(u + 16) << 32 | be32(u + 20)));
        CHECK(req.cmd == mc_bin_loud(req.opcode) && req.quiet == (req.cmd != req.opcode));
    }
    size_t head = len >= 24 ? 24u + req.extlen + req.keylen : 24;
    switch (r) {
    case MC_PARSE_NEED_MORE:
    case MC_PARSE_CLOSE:
        CHECK(consumed == 0);
        break;
    case MC_PARSE_ERROR:
        CHECK(req.status == want.status && req.close == want.close && req.swallow == want.swallow);
        seen_status[req.status == 0x04 ? 0 : req.close ? 1 : 2]++;
        /* fall through */
    case MC_PARSE_OK:
        CHECK(consumed == head && head <= len && head <= MC_BIN_HEAD_MAX);
        CHECK(req.key.len == req.keylen && req.key.p == copy + 24 + req.extlen);
        break;
    }
    if (r == MC_PARSE_OK) {
        CHECK(req.keylen <= MC_BIN_KEY_MAX);
        CHECK(req.status == 0 && !req.close && req.swallow == 0);
        CHECK((uint64_t)req.vlen + req.extlen + req.keylen == req.bodylen);
        bool storage = req.cmd == MC_BIN_OP_SET || req.cmd == MC_BIN_OP_ADD ||
                       req.cmd == MC_BIN_OP_REPLACE || req.cmd == MC_BIN_OP_APPEND ||
                       req.cmd == MC_BIN_OP_PREPEND;
        CHECK(req.reads_value == storage);
        if (req.extlen == 8 && storage)
            CHECK(req.flags == be32(u + 24) && req.exptime == be32(u + 28));
        if (req.extlen == 20)
            CHECK(req.exptime == be32(u + 40) &&
                  req.delta == ((uint64_t)be32(u + 24) << 32 | be32(u + 28)) &&
                  req.initial == ((uint64_t)be32(u + 32) << 32 | be32(u + 36)));
        if (req.extlen == 4)
            CHECK(req.exptime == be32(u + 24));
        char hdr[24];
        mc_bin_fmt_req_header(hdr, req.opcode, req.keylen, req.extlen, req.bodylen, req.opaque,
                              req.cas);
        hdr[5] = (char)req.datatype;
        hdr[6] = (char)(req.vbucket >> 8);
        hdr[7] = (char)req.vbucket;
        CHECK(memcmp(hdr, in, 24) == 0);
    }

    /* Prefixes: those around the header's end and the request's end, one
     * in eight between them (where the answer cannot change), then the
     * longest (the value adds nothing). */
    size_t lim = r == MC_PARSE_CLOSE ? 24 : (r == MC_PARSE_NEED_MORE ? len : head);
    for (size_t i = 0; i < len; i = (i == lim && len - 1 > lim) ? len - 1 : i + 1) {
        if (i > 26 && i + 2 < lim && i % 8 != 0)
            continue;
        enum mc_parse pr = parse_exact(&again, in, i, &c2, &copy2);
        if (i < lim) {
            CHECK(pr == MC_PARSE_NEED_MORE && c2 == 0);
        } else {
            CHECK(pr == r && c2 == consumed && same(&again, copy2, &req, copy));
        }
        free(copy2);
    }
    /* Other bytes behind it change nothing once the request is decided. */
    if (r != MC_PARSE_NEED_MORE) {
        char *more = malloc(len + 40);
        memcpy(more, in, len);
        memset(more + len, 0x80, 40);
        enum mc_parse pr = mc_bin_parse(&again, more, len + 40, &c2);
        CHECK(pr == r && c2 == consumed && same(&again, more, &req, copy));
        free(more);
    }
    free(copy);

    check_response_parse(in, len);
    if (len)
        check_response_parse(in + 1, len - 1);
}

/* ---------------------------------------------------------------------- */
/* Corpus and mutations                                                     */
/* ---------------------------------------------------------------------- */

#define HDR(op, kl, el, bl) "\x80" op "\0" kl el "\0\0\0" "\0\0\0" bl "\xaa\xbb\xcc\xdd" \
                            "\0\0\0\0\0\0\0\0"
#define C(x) FUZZ_ENTRY(x)

static const struct fuzz_entry corpus[] = {
    C(HDR("\x00", "\x03", "\x00", "\x03") "foo"),
    C(HDR("\x09", "\x03", "\x00", "\x03") "foo"),
    C(HDR("\x0c", "\x01", "\x00", "\x01") "a"),
    C(HDR("\x0d", "\x01", "\x00", "\x01") "a"),
    C(HDR("\x01", "\x01", "\x08", "\x0e") "\0\0\0\x05\0\0\0\0" "a" "hello"),
    C(HDR("\x11", "\x01", "\x08", "\x09") "\xff\xff\xff\xff\xff\xff\xff\xff" "a"),
    C(HDR("\x02", "\x02", "\x08", "\x0b") "\0\0\0\0\0\0\x03\xe8" "ab" "x"),
    C(HDR("\x13", "\x02", "\x08", "\x0b") "\0\0\0\0\0\0\x03\xe8" "ab" "x"),
    C(HDR("\x0e", "\x01", "\x00", "\x04") "a" "xyz"),
    C(HDR("\x1a", "\x01", "\x00", "\x01") "a"),
    C(HDR("\x04", "\x01", "\x00", "\x01") "a"),
    C(HDR("\x14", "\x01", "\x00", "\x01") "a"),
    C(HDR("\x05", "\x01", "\x14", "\x15") "\0\0\0\0\0\0\0\x01" "\0\0\0\0\0\0\0\x02" "\xff\xff\xff\xff" "n"),
    C(HDR("\x16", "\x01", "\x14", "\x15") "\0\0\0\0\0\0\0\x01" "\0\0\0\0\0\0\0\x02" "\0\0\0\0" "n"),
    C(HDR("\x07", "\x00", "\x00", "\x00")),
    C(HDR("\x17", "\x00", "\x00", "\x00")),
    C(HDR("\x08", "\x00", "\x04", "\x04") "\0\0\0\x0a"),
    C(HDR("\x18", "\x00", "\x00", "\x00")),
    C(HDR("\x0a", "\x00", "\x00", "\x00")),
    C(HDR("\x0b", "\x00", "\x00", "\x00")),
    C(HDR("\x10", "\x05", "\x00", "\x05") "items"),
    C(HDR("\x10", "\x00", "\x00", "\x00")),
    C(HDR("\x1c", "\x01", "\x04", "\x05") "\0\0\0\x10" "a"),
    C(HDR("\x1d", "\x01", "\x04", "\x05") "\0\0\0\x10" "a"),
    C(HDR("\x1e", "\x01", "\x04", "\x05") "\0\0\0\x10" "a"),
    C(HDR("\x23", "\x01", "\x04", "\x05") "\0\0\0\x10" "a"),
    C(HDR("\x24", "\x01", "\x04", "\x05") "\0\0\0\x10" "a"),
    C(HDR("\x20", "\x00", "\x00", "\x00")),
    C(HDR("\x21", "\x05", "\x00", "\x08") "PLAIN" "abc"),
    C(HDR("\x1b", "\x00", "\x04", "\x04") "\0\0\0\x01"),
    C(HDR("\x50", "\x03", "\x00", "\x0a") "abc"),
    C(HDR("\x01", "\x01", "\x00", "\x02") "ab"),
    C(HDR("\x00", "\x03", "\x00", "\x02") "abc"),
    C(HDR("\x0a", "\x00", "\x00", "\x00") HDR("\x0c", "\x01", "\x00", "\x01") "a"),
    C("\x81\x00\0\0\x04\0\0\0\0\0\0\x09\x01\x02\x03\x04\0\0\0\0\0\0\0\x01\0\0\0\x05" "hello"),
    C("\x81\x0c\0\x02\0\0\0\x01\0\0\0\x02\0\0\0\x09\0\0\0\0\0\0\0\0" "zz"),
    C("get foo\r\n"),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

/*
 * Rewrites one header field with a value near a boundary, and usually
 * grows or shrinks the input so that extras and key are all there.
 */
static size_t set_field(char *b, size_t len) {
    static const unsigned keys[] = {0, 1, 2, 249, 250, 251, 300, 1000, 16360, 16361, 65535};
    static const unsigned exts[] = {0, 1, 2, 4, 8, 12, 20, 24, 255};
    static const int ops[] = {0x00, 0x01, 0x04, 0x05, 0x07, 0x08, 0x0a, 0x0b, 0x0e, 0x10, 0x11,
                              0x17, 0x18, 0x1b, 0x1c, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25,
                              0x80, 0xff};
    if (len < 24)
        return len;
    unsigned kl = ((unsigned char)b[2] << 8) | (unsigned char)b[3], el = (unsigned char)b[4];
    uint32_t body;
    switch (fuzz_rnd() % 6) {
    case 0:
        kl = keys[fuzz_below(sizeof(keys) / sizeof(keys[0]))];
        b[2] = (char)(kl >> 8), b[3] = (char)kl;
        break;
    case 1:
        el = exts[fuzz_below(sizeof(exts) / sizeof(exts[0]))];
        b[4] = (char)el;
        break;
    case 2:
        b[1] = (char)ops[fuzz_below(sizeof(ops) / sizeof(ops[0]))];
        return len;
    case 3: {
        uint32_t choices[] = {0, kl, el, kl + el, kl + el + 1, kl + el - 1, kl + el + 5,
                              UINT32_MAX, (uint32_t)fuzz_rnd()};
        body = choices[fuzz_below(sizeof(choices) / sizeof(choices[0]))];
        b[8] = (char)(body >> 24), b[9] = (char)(body >> 16), b[10] = (char)(body >> 8),
        b[11] = (char)body;
        return len;
    }
    case 4:
        b[0] = (char)(fuzz_rnd() % 8 ? 0x80 : fuzz_rnd());
        return len;
    default:
        b[5 + fuzz_below(19)] = (char)fuzz_rnd();
        return len;
    }
    /* Make the extras and key present (or one byte short), when they fit. */
    size_t need = 24 + el + kl;
    if (need <= FUZZ_CAP && fuzz_rnd() % 4) {
        size_t target = need - (fuzz_rnd() % 5 == 0) + fuzz_below(4);
        if (target > FUZZ_CAP)
            target = FUZZ_CAP;
        if (target > len)
            memset(b + len, 'k', target - len);
        len = target;
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
    case 4: { /* splice in another entry, half the time behind: pipelines */
        size_t i = fuzz_below(NCORPUS);
        return fuzz_splice_at(b, len, i, fuzz_rnd() % 2 ? len : fuzz_below(len + 1));
    }
    default: /* a header field at a boundary */
        return set_field(b, len);
    }
}

static void report(long iters) {
    printf("fuzz_mc_bin: %ld inputs (ok %ld; need_more %ld; error %ld: einval+close %ld, "
           "unknown+close %ld, unknown+skip %ld; close %ld), all invariants held\n",
           iters, seen[MC_PARSE_OK], seen[MC_PARSE_NEED_MORE], seen[MC_PARSE_ERROR],
           seen_status[0], seen_status[1], seen_status[2], seen[MC_PARSE_CLOSE]);
}

/* Random inputs start with the request magic, or they would all be CLOSE. */
static const struct fuzz_config cfg = {
    .name = "fuzz_mc_bin",
    .check = check_one,
    .report = report,
    .dump_hex = true,
    .seed = 0xb1a2c3d4e5f60718ULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 3,
    .random_max = 80,
    .random_first = 0x80,
    .mutate = mutate,
};

FUZZ_DRIVER(&cfg)
