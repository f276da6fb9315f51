/*
 * fuzz_mc_meta.c -- mutation fuzzer for the meta protocol codec.
 *
 *   fuzz_mc_meta N        N mutated inputs from a fixed seed (make test: 200000)
 *   fuzz_mc_meta N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target
 * (LLVMFuzzerTestOneInput) running the same checks on each input.  The
 * run itself (rng, mutations, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h.
 *
 * Each input is parsed from an exact-size heap copy (so a sanitizer build
 * catches any read past the end) and must keep these invariants:
 *   - the result is one of the four; consumed <= len; NEED_MORE consumes
 *     nothing and happens only without a newline; without a newline the
 *     answer is NEED_MORE up to MC_LINE_MAX bytes and CLOSE past it;
 *   - OK and ERROR consume exactly the first line; an error is one the
 *     parser can give (not a server-side one), swallow is set only by ms
 *     and is then its datalen + 2;
 *   - the line alone, and the line with other bytes behind it, parse the
 *     same; every strict prefix of the line is NEED_MORE;
 *   - on OK: flags lie inside the line in request order, start with their
 *     character, are distinct and match the presence bits; the key is
 *     1..250 bytes inside the line (or decoded into keybuf); numbers agree
 *     with libc's strtoll/strtoull read the way memcached reads them;
 *   - format -> parse: the request written back in canonical form (single
 *     spaces, a base64 key re-encoded) parses to the same request;
 *   - the formatters, given random views, write a line that fits, ends in
 *     "\r\n", starts with the right code and echoes the return flags in
 *     request order; q hides exactly what memcached hides.
 */
#include "protocol/mc_meta.h"
#include "protocol/mc_num.h"
#include "fuzz_driver.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* An independent model of memcached's number rules, on top of libc         */
/* ---------------------------------------------------------------------- */

static char *cstr(const char *p, size_t n) {
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static bool ends_ok(const char *end) {
    return *end == '\0' || *end == ' ' || (*end >= '\t' && *end <= '\r');
}

static bool model_u64(const char *p, size_t n, uint64_t *out) {
    char *s = cstr(p, n), *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    bool ok = errno != ERANGE && end != s && ends_ok(end) &&
              !((long long)v < 0 && strchr(s, '-') != NULL);
    free(s);
    *out = v;
    return ok;
}

static bool model_i64(const char *p, size_t n, int64_t *out) {
    char *s = cstr(p, n), *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    bool ok = errno != ERANGE && end != s && ends_ok(end);
    free(s);
    *out = v;
    return ok;
}

/* ---------------------------------------------------------------------- */
/* Comparing requests                                                       */
/* ---------------------------------------------------------------------- */

/* Two parses agree on everything decided; spans compare by content. */
static bool same(const struct mc_meta_req *a, const struct mc_meta_req *b) {
    if (a->cmd != b->cmd || a->err != b->err || a->swallow != b->swallow ||
        a->key_binary != b->key_binary || a->vlen != b->vlen || a->present != b->present ||
        a->nflags != b->nflags || a->opaque_late != b->opaque_late || a->mode != b->mode ||
        a->ttl != b->ttl || a->vivify_ttl != b->vivify_ttl || a->recache != b->recache ||
        a->client_flags != b->client_flags || a->cas != b->cas || a->delta != b->delta ||
        a->initial != b->initial || a->key.len != b->key.len)
        return false;
    if (a->key.len && memcmp(a->key.p, b->key.p, a->key.len) != 0)
        return false;
    for (int i = 0; i < a->nflags; i++)
        if (a->flags[i].c != b->flags[i].c || a->flags[i].tok.len != b->flags[i].tok.len ||
            memcmp(a->flags[i].tok.p, b->flags[i].tok.p, a->flags[i].tok.len) != 0)
            return false;
    return true;
}

/* ---------------------------------------------------------------------- */
/* Formatter checks                                                         */
/* ---------------------------------------------------------------------- */

static int64_t rnd_ttl(void) {
    switch (fuzz_rnd() % 4) {
    case 0: return MC_META_TTL_NEVER;
    case 1: return (int64_t)(fuzz_rnd() % 3000) - 100;
    case 2: return (int64_t)fuzz_rnd();
    default: return 1;
    }
}

/*
 * Every return flag the command echoes must appear in the line, in
 * request order: walk the line's words after the code and match each
 * against the next flag that should print something.
 */
static void check_echo(const struct mc_meta_req *req, const char *out, size_t n, bool ok_line,
                       const struct mc_meta_item_view *v) {
    const char *p = out, *end = out + n - 2;
    /* skip the code and VA's length */
    p = memchr(p, ' ', (size_t)(end - p));
    if (p == NULL)
        p = end;
    if (n >= 3 && out[0] == 'V' && out[1] == 'A') {
        p++;
        p = memchr(p, ' ', (size_t)(end - p));
        if (p == NULL)
            p = end;
    }
    for (int i = 0; i < req->nflags; i++) {
        char c = req->flags[i].c;
        bool prints;
        switch (req->cmd) {
        case MC_META_MG:
            prints = c == 'O' || c == 'k' || (ok_line && strchr("stcflh", c) != NULL);
            break;
        case MC_META_MS:
            prints = c == 'O' || c == 'k' || c == 'c';
            break;
        case MC_META_MD:
            prints = c == 'O' || c == 'k';
            break;
        default: /* ma */
            prints = c == 'O' || c == 'k' || (ok_line && (c == 'c' || c == 't'));
            break;
        }
        if (!prints)
            continue;
        CHECK(p < end && *p == ' ');
        p++;
        if (c == 'O') {
            CHECK((size_t)(end - p) >= req->flags[i].tok.len &&
                  memcmp(p, req->flags[i].tok.p, req->flags[i].tok.len) == 0);
            p += req->flags[i].tok.len;
            continue;
        }
        CHECK(*p == c);
        if (c == 'k') {
            bool binary = (req->cmd == MC_META_MG && ok_line) ? v->key_binary : req->key_binary;
            if (!binary) {
                /* a raw key may hold spaces: compare its bytes */
                CHECK((size_t)(end - p - 1) >= req->key.len && memcmp(p + 1, req->key.p, req->key.len) == 0);
                p += 1 + req->key.len;
            } else {
                char enc[4 * ((MC_KEY_MAX + 2) / 3)];
                size_t ne = mc_meta_b64_encode(req->key.p, req->key.len, enc);
                CHECK((size_t)(end - p - 1) >= ne + 2 && memcmp(p + 1, enc, ne) == 0 &&
                      memcmp(p + 1 + ne, " b", 2) == 0);
                p += 1 + ne + 2;
            }
            continue;
        }
        p = memchr(p, ' ', (size_t)(end - p));
        if (p == NULL)
            p = end;
    }
    /* What is left: Z, X, W for mg hits; nothing else. */
    while (p < end) {
        CHECK(req->cmd == MC_META_MG && ok_line && end - p >= 2 && p[0] == ' ' &&
              (p[1] == 'Z' || p[1] == 'X' || p[1] == 'W'));
        p += 2;
    }
}

static void check_fmt(const struct mc_meta_req *req) {
    char out[MC_META_RESP_MAX];
    bool value;

    if (req->cmd == MC_META_ME) {
        struct mc_meta_me_view mv = {.hit = fuzz_rnd() % 2, .key_binary = fuzz_rnd() % 2, .fetched = fuzz_rnd() % 2,
                                     .ttl = rnd_ttl(), .la = (uint32_t)fuzz_rnd(), .cas = fuzz_rnd(),
                                     .cls = (unsigned)(fuzz_rnd() % 64), .size = fuzz_rnd()};
        size_t n = mc_meta_fmt_me(out, sizeof(out), req, &mv);
        CHECK(n >= 4 && n <= sizeof(out) && memcmp(out + n - 2, "\r\n", 2) == 0);
        CHECK(mv.hit ? memcmp(out, "ME ", 3) == 0 : (n == 4 && memcmp(out, "EN", 2) == 0));
        return;
    }
    for (int round = 0; round < 3; round++) {
        struct mc_meta_item_view v = {
            .rc = (enum mc_meta_rc)(fuzz_rnd() % 5), .created = fuzz_rnd() % 4 == 0, .key_binary = fuzz_rnd() % 2,
            .fetched = fuzz_rnd() % 2, .token_sent = fuzz_rnd() % 3 == 0, .stale = fuzz_rnd() % 3 == 0,
            .vlen = (uint32_t)fuzz_rnd(), .client_flags = (uint32_t)fuzz_rnd(), .la = (uint32_t)fuzz_rnd(),
            .cas = fuzz_rnd(), .ttl = rnd_ttl(),
        };
        v.won = !v.token_sent && fuzz_rnd() % 2 == 0;   /* the engine never says both */
        if (req->cmd == MC_META_MG && v.rc != MC_META_RC_OK)
            v.rc = MC_META_RC_EN;
        if (req->cmd != MC_META_MG && v.rc == MC_META_RC_EN)
            v.rc = MC_META_RC_NF;
        if (v.rc != MC_META_RC_OK)
            v.created = false;
        memset(out, '#', sizeof(out));
        size_t n = mc_meta_fmt(out, sizeof(out), req, &v, &value);
        CHECK(n <= sizeof(out));
        if (req->cmd == MC_META_MN) {
            CHECK(n == 4 && memcmp(out, "MN\r\n", 4) == 0);
            return;
        }
        bool ok = v.rc == MC_META_RC_OK;
        bool q = mc_meta_has(req, 'q');
        bool late = req->opaque_late >= 0 && (req->cmd == MC_META_MG || req->cmd == MC_META_MA);
        CHECK(late == (mc_meta_late_error(req) >= 0));
        if (late) {
            CHECK(n == mc_meta_err_len(MC_META_ERR_OPAQUE_TOO_LONG) &&
                  memcmp(out, mc_meta_err_str(MC_META_ERR_OPAQUE_TOO_LONG), n) == 0);
            CHECK(!value);
            continue;
        }
        bool hidden;
        switch (req->cmd) {
        case MC_META_MG: hidden = !ok && q; break;
        case MC_META_MA: hidden = ok && !v.created && q; break;
        default: hidden = ok && q; break;
        }
        if (hidden) {
            CHECK(n == 0 && !value);
            continue;
        }
        CHECK(n >= 4 && memcmp(out + n - 2, "\r\n", 2) == 0);
        bool va = ok && mc_meta_has(req, 'v') && (req->cmd == MC_META_MG || req->cmd == MC_META_MA);
        CHECK(value == va);
        if (va) {
            CHECK(memcmp(out, "VA ", 3) == 0);
        } else {
            static const char *const codes[] = {"HD", "EN", "NF", "NS", "EX"};
            CHECK(memcmp(out, codes[v.rc], 2) == 0);
        }
        check_echo(req, out, n, ok, &v);
        /* One byte short writes nothing. */
        CHECK(mc_meta_fmt(out, n - 1, req, &v, &value) == 0);
    }
}

/* ---------------------------------------------------------------------- */
/* The invariants                                                           */
/* ---------------------------------------------------------------------- */

static long seen[4], seen_fmt, seen_binary;

/* The request written back in canonical form, parsed again. */
static void check_round_trip(const struct mc_meta_req *req) {
    static const char *const names[] = {"", "mg", "ms", "md", "ma", "mn", "me"};
    char line[8192];
    size_t o = 0;

    o += (size_t)snprintf(line, sizeof(line), "%s", names[req->cmd]);
    if (req->cmd != MC_META_MN) {
        line[o++] = ' ';
        if (req->key_binary)
            o += mc_meta_b64_encode(req->key.p, req->key.len, line + o);
        else {
            memcpy(line + o, req->key.p, req->key.len);
            o += req->key.len;
        }
    }
    if (req->cmd == MC_META_MS)
        o += (size_t)snprintf(line + o, sizeof(line) - o, " %u", (unsigned)req->vlen);
    if (req->cmd == MC_META_ME && req->key_binary)
        o += (size_t)snprintf(line + o, sizeof(line) - o, " b");
    for (int i = 0; i < req->nflags; i++) {
        line[o++] = ' ';
        memcpy(line + o, req->flags[i].tok.p, req->flags[i].tok.len);
        o += req->flags[i].tok.len;
    }
    memcpy(line + o, "\r\n", 2);
    o += 2;
    char *copy = malloc(o);
    memcpy(copy, line, o);
    struct mc_meta_req again;
    size_t consumed;
    CHECK(mc_meta_parse(&again, copy, o, &consumed) == MC_PARSE_OK && consumed == o);
    CHECK(same(req, &again));
    free(copy);
}

static void check_ok(const struct mc_meta_req *req, const char *lo, const char *hi) {
    uint64_t bits = 0;

    CHECK(req->err == MC_META_ERR_NONE && req->swallow == 0);
    CHECK(req->cmd >= MC_META_MG && req->cmd <= MC_META_ME);
    CHECK(req->nflags >= 0 && req->nflags <= MC_META_MAX_FLAGS);
    if (req->cmd == MC_META_MS)
        CHECK(req->nflags <= MC_META_MAX_FLAGS - 1 && req->vlen <= INT_MAX - 2);
    for (int i = 0; i < req->nflags; i++) {
        const struct mc_meta_flag *f = &req->flags[i];
        CHECK(f->tok.len >= 1 && f->tok.p >= lo && f->tok.p + f->tok.len <= hi);
        CHECK(f->tok.p[0] == f->c && memchr(f->tok.p, ' ', f->tok.len) == NULL);
        CHECK(i == 0 || f->tok.p > req->flags[i - 1].tok.p);
        CHECK(strchr("bcfhklOqstuvNRTPLFCMJDI", f->c) != NULL);
        uint64_t bit = (uint64_t)1 << (f->c - 'A');
        CHECK((bits & bit) == 0);
        bits |= bit;
        int64_t i64;
        uint64_t u64;
        const char *num = f->tok.p + 1;
        size_t nn = f->tok.len - 1;
        switch (f->c) {
        case 'T': CHECK(model_i64(num, nn, &i64) && i64 == req->ttl); break;
        case 'N': CHECK(model_i64(num, nn, &i64) && i64 == req->vivify_ttl); break;
        case 'R': CHECK(model_i64(num, nn, &i64) && i64 == req->recache); break;
        case 'C': CHECK(model_u64(num, nn, &u64) && u64 == req->cas); break;
        case 'J': CHECK(model_u64(num, nn, &u64) && u64 == req->initial); break;
        case 'D': CHECK(model_u64(num, nn, &u64) && u64 == req->delta); break;
        case 'F': CHECK(model_u64(num, nn, &u64) && u64 == req->client_flags); break;
        case 'M': CHECK(f->tok.len == 2); break;
        default: break;
        }
    }
    CHECK(bits == req->present);
    if (!mc_meta_has(req, 'D'))
        CHECK(req->delta == 1);
    if (!mc_meta_has(req, 'J'))
        CHECK(req->initial == 0);
    if (req->cmd == MC_META_MN)
        return;
    CHECK(req->key.len >= 1 && req->key.len <= MC_KEY_MAX);
    if (req->key_binary) {
        seen_binary++;
        CHECK(req->key.p == req->keybuf && req->key.len <= 186);
    } else {
        CHECK(req->key.p >= lo && req->key.p + req->key.len <= hi);
        CHECK(memchr(req->key.p, ' ', req->key.len) == NULL);
    }
    if (req->opaque_late >= 0)
        CHECK((req->cmd == MC_META_MG || req->cmd == MC_META_MA) &&
              req->flags[req->opaque_late].c == 'O' &&
              req->flags[req->opaque_late].tok.len > MC_META_OPAQUE_MAX);
    else if (mc_meta_has(req, 'O') && req->cmd != MC_META_ME)
        for (int i = 0; i < req->nflags; i++)
            if (req->flags[i].c == 'O')
                CHECK(req->flags[i].tok.len <= MC_META_OPAQUE_MAX);
}

static void check_one(const char *in, size_t len) {
    char *buf = malloc(len ? len : 1);
    memcpy(buf, in, len);
    struct mc_meta_req req;
    size_t consumed = 12345;
    enum mc_parse r = mc_meta_parse(&req, buf, len, &consumed);
    const char *nl = len ? memchr(buf, '\n', len) : NULL;
    size_t ll = nl ? (size_t)(nl - buf) + 1 : 0;

    CHECK(r == MC_PARSE_OK || r == MC_PARSE_NEED_MORE || r == MC_PARSE_ERROR || r == MC_PARSE_CLOSE);
    CHECK(consumed <= len);
    seen[r]++;
    if (nl == NULL) {
        CHECK(consumed == 0);
        CHECK(r == (len > MC_LINE_MAX ? MC_PARSE_CLOSE : MC_PARSE_NEED_MORE));
        free(buf);
        return;
    }
    CHECK(r == MC_PARSE_OK || r == MC_PARSE_ERROR);
    CHECK(consumed == ll);
    if (r == MC_PARSE_ERROR) {
        CHECK(req.err > MC_META_ERR_NONE && req.err <= MC_META_ERR_MA_MODE);
        CHECK(req.swallow == 0 || (req.cmd == MC_META_MS && req.swallow == (size_t)req.vlen + 2));
    } else {
        check_ok(&req, buf, buf + ll);
        check_round_trip(&req);
        check_fmt(&req);
        seen_fmt++;
    }

    /* The line alone parses the same. */
    if (ll < len) {
        char *line = malloc(ll);
        memcpy(line, buf, ll);
        struct mc_meta_req req2;
        size_t c2;
        CHECK(mc_meta_parse(&req2, line, ll, &c2) == r && c2 == consumed);
        CHECK(same(&req, &req2));
        free(line);
    }
    /* So does the line with something else behind it. */
    {
        char *more = malloc(ll + 7);
        memcpy(more, buf, ll);
        memcpy(more + ll, "mn\r\nmg", 6);
        struct mc_meta_req req2;
        size_t c2;
        CHECK(mc_meta_parse(&req2, more, ll + 6, &c2) == r && c2 == consumed);
        CHECK(same(&req, &req2));
        free(more);
    }
    /* Every strict prefix is NEED_MORE; checked in full on short lines. */
    size_t step = ll < 300 ? 1 : ll / 50 + 1;
    for (size_t i = 0; i < ll && i <= MC_LINE_MAX; i += step) {
        struct mc_meta_req req2;
        size_t c2 = 1;
        CHECK(mc_meta_parse(&req2, buf, i, &c2) == MC_PARSE_NEED_MORE && c2 == 0);
    }
    free(buf);
}

/* ---------------------------------------------------------------------- */
/* Corpus and mutations                                                     */
/* ---------------------------------------------------------------------- */

#define C(x) FUZZ_ENTRY(x)
static const struct fuzz_entry corpus[] = {
    C("mg k\r\n"), C("mg k v\r\n"), C("mg k s v f t c k O9 h l u q\r\n"), C("  mg   k   v  \r\n"),
    C("mg k T30 N0 R-5\r\n"), C("mg k C18446744073709551615 F4294967295 J0 D-0 MX I Pfoo Lbar\r\n"),
    C("mg YWJj b k\r\n"), C("mg YQ=x b k\r\n"), C("mg =YQ= b k\r\n"), C("mg ab= b\r\n"),
    C("mg k Oxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx v\r\n"), C("mg k O\r\n"), C("mg k T\r\n"),
    C("mg k Tx Fx Jx Dx M\r\n"), C("mg k \x80\r\n"), C("mg k v v\r\n"), C("mg k x\r\n"),
    C("mg k c k O1 v s f t h l u q P1 L1 T1 N1 R1 I\r\n"),
    C("mg k c k O1 v s f t h l u q P1 L1 T1 N1 R1 I C1\r\n"),
    C("ms k 2\r\n"), C("ms k 1 c k O5 s f t v q\r\n"), C("ms k 1 MA\r\n"), C("ms k 1 ME q k c O1\r\n"),
    C("ms k 1 T30 F7 C9 I\r\n"), C("ms YWJj 1 b k c\r\n"), C("ms k abc\r\n"), C("ms k 1 MX\r\n"),
    C("ms k 1 Oxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx MX\r\n"), C("ms k 2147483645 x\r\n"), C("ms k\r\n"),
    C("md k\r\n"), C("md k I T30 q\r\n"), C("md k C5 q O2 k\r\n"), C("md k x\r\n"), C("md YWJj b k\r\n"),
    C("ma k\r\n"), C("ma k N0 J10 v t c\r\n"), C("ma k MD D20 v\r\n"), C("ma k M-\r\n"), C("ma k Mi\r\n"),
    C("ma k D-1\r\n"), C("ma YWJj b v k O1 N0 J7\r\n"), C("ma k q T100 C5\r\n"),
    C("mn\r\n"), C("mn x\n"), C("me k\r\n"), C("me bWVr b\r\n"), C("me bWV b\r\n"), C("me\r\n"),
    C("mg\r\n"), C("mx k\r\n"), C("\r\n"), C("mg k v\r\r\n"), C("mg k\tv\r\n"), C("mg k s\x00v\r\n"),
    C("ms k 1 F4294967296\r\n"), C("ms k 1\r\nA\r\nmg k v\r\n"),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static const char *const words[] = {
    "mg", "ms", "md", "ma", "mn", "me", " b", " v", " q", " k", " O", " Oabc", " T", " T-1", " N0",
    " R30", " C", " C0", " F", " F4294967295", " M", " MA", " MD", " M+", " J", " D", " I", " P", " L",
    " c", " s", " t", " f", " h", " l", " u", " x", " E1", " S1", "YWJj", "=", "==", "18446744073709551615",
    "18446744073709551616", "9223372036854775807", "-9223372036854775808", "2147483645", "-0", "+7",
    " ", "  ", "\r", "\t", "\0", "\r\n", "\n", "\x80", "\x7f",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

/* Opaques at and past 32 bytes, keys at 186 (a 248-byte base64) and 250. */
static const size_t run_sizes[] = {31, 32, 33, 186, 248, 250, 251, 2048, 2100};

static void report(long iters) {
    printf("fuzz_mc_meta: %ld inputs (ok %ld, formatted %ld, binary keys %ld; need_more %ld; "
           "error %ld; close %ld), all invariants held\n",
           iters, seen[MC_PARSE_OK], seen_fmt, seen_binary, seen[MC_PARSE_NEED_MORE],
           seen[MC_PARSE_ERROR], seen[MC_PARSE_CLOSE]);
}

static const struct fuzz_config cfg = {
    .name = "fuzz_mc_meta",
    .check = check_one,
    .report = report,
    .seed = 0x6d65746131383ULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 4,
    .random_max = 200,
    .words = words,
    .nwords = NWORDS,
    .interesting = FUZZ_ENTRY(" \r\n\t\0-+09kbvqOTNRCFMJDI=/"),
    .run_sizes = run_sizes,
    .nrun_sizes = sizeof(run_sizes) / sizeof(run_sizes[0]),
    .run_fill = "aA/ ",
};

FUZZ_DRIVER(&cfg)
