/*
 * test_mc_meta.c -- the meta protocol codec against memcached 1.6.18.
 *
 * Every row of ok_rows, bad_rows and fmt_rows was replayed against Debian's
 * memcached 1.6.18 (`-m 1024`, `lru mode flat`):
 *   - an ok row's line (for ms with its data block) got a normal answer
 *     from memcached (HD VA EN NF NS EX MN ME), or, for an mg/ma row whose
 *     opaque is over-long (late >= 0), the late "opaque token too long";
 *   - a bad row got exactly the error line named, and for ms the data
 *     block was swallowed exactly when the row says so (the row's bytes
 *     were followed by that many bytes, then by a line that must answer
 *     ERROR when nothing was swallowed);
 *   - a formatter row's request, sent to a fresh memcached after the row's
 *     setup commands, got exactly the row's answer (and value).
 * dev_bad_rows are the few places where cellar answers differently on
 * purpose; each says what memcached does (also checked against it).  Every parsed row is also parsed split at
 * every byte, and with another request behind it.
 */
#include "harness.h"
#include "protocol/mc_meta.h"
#include "protocol/mc_num.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S(x) x, sizeof(x) - 1

#define K10 "kkkkkkkkkk"
#define K50 K10 K10 K10 K10 K10
#define K250 K50 K50 K50 K50 K50
#define K251 K250 "k"
#define X16 "xxxxxxxxxxxxxxxx"
#define X256 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16
#define X2048 X256 X256 X256 X256 X256 X256 X256 X256
#define O31 "O" X16 "xxxxxxxxxxxxxxx"     /* 32 bytes with the O */
#define O32 "O" X16 X16                    /* 33 bytes: too long */
/* 17 distinct flags: the most mg, md and ma take (ms: the first 16) */
#define F16 "c k O1 v s f t h l u q P1 L1 T1 N1 R1"
#define F17 F16 " I"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                  */
/* ---------------------------------------------------------------------- */

/* Parses from an exact-size heap copy so that a read past len trips ASan. */
static enum mc_parse parse_copy(struct mc_meta_req *req, const char *in, size_t len,
                                size_t *consumed, char **copy) {
    *copy = malloc(len ? len : 1);
    memcpy(*copy, in, len);
    return mc_meta_parse(req, *copy, len, consumed);
}

static size_t show_into(char *out, size_t cap, const char *s, size_t n) {
    size_t o = 0, i;
    for (i = 0; i < n && o + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 32 && c < 127 && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
    }
    if (i < n)
        o += (size_t)snprintf(out + o, cap - o, "...");
    out[o] = '\0';
    return o;
}

static const char *show(const char *s, size_t n) {
    static char out[200];
    show_into(out, sizeof(out), s, n);
    return out;
}

static size_t line_len(const char *in, size_t len) {
    const char *nl = memchr(in, '\n', len);
    return nl ? (size_t)(nl - in) + 1 : 0;
}

static const char *const cmd_names[] = {
    [MC_META_NONE] = "none", [MC_META_MG] = "mg", [MC_META_MS] = "ms", [MC_META_MD] = "md",
    [MC_META_MA] = "ma", [MC_META_MN] = "mn", [MC_META_ME] = "me",
};

static const char *const mode_names[] = {
    [MC_META_MODE_SET] = "set", [MC_META_MODE_ADD] = "add", [MC_META_MODE_APPEND] = "append",
    [MC_META_MODE_PREPEND] = "prepend", [MC_META_MODE_REPLACE] = "replace",
    [MC_META_MODE_INCR] = "incr", [MC_META_MODE_DECR] = "decr",
};

/*
 * A one-line summary of a parsed request: the command, then only what is
 * there: k=<key> (escaped), b, vlen=, f=<flag chars in order>, the numbers
 * of the flags present (T= N= R= F= C= J= D=), mode= for ms and ma,
 * late=<index of an over-long O>.  Valid rows state what they expect as
 * such a line.
 */
static const char *describe(const struct mc_meta_req *req) {
    static char out[1024];
    size_t o = 0;

#define OUT(...) (o += (size_t)snprintf(out + o, sizeof(out) - o, __VA_ARGS__))
    OUT("%s", cmd_names[req->cmd]);
    if (req->cmd != MC_META_MN) {
        OUT(" k=");
        o += show_into(out + o, sizeof(out) - o, req->key.p, req->key.len);
    }
    if (req->key_binary)
        OUT(" b");
    if (req->cmd == MC_META_MS)
        OUT(" vlen=%" PRIu32, req->vlen);
    if (req->nflags) {
        OUT(" f=");
        for (int i = 0; i < req->nflags; i++)
            OUT("%c", req->flags[i].c);
    }
    if (mc_meta_has(req, 'T')) OUT(" T=%" PRId64, req->ttl);
    if (mc_meta_has(req, 'N')) OUT(" N=%" PRId64, req->vivify_ttl);
    if (mc_meta_has(req, 'R')) OUT(" R=%" PRId64, req->recache);
    if (mc_meta_has(req, 'F')) OUT(" F=%" PRIu32, req->client_flags);
    if (mc_meta_has(req, 'C')) OUT(" C=%" PRIu64, req->cas);
    if (mc_meta_has(req, 'J')) OUT(" J=%" PRIu64, req->initial);
    if (mc_meta_has(req, 'D')) OUT(" D=%" PRIu64, req->delta);
    if (req->cmd == MC_META_MS || req->cmd == MC_META_MA)
        OUT(" mode=%s", mode_names[req->mode]);
    if (req->opaque_late >= 0)
        OUT(" late=%d", req->opaque_late);
#undef OUT
    return out;
}

/*
 * What every OK parse must satisfy beyond its summary: flags lie inside
 * the line, start with their character, are distinct and match the
 * presence bits; absent numbers keep their defaults; the key is inside the
 * line or in keybuf.
 */
static const char *check_invariants(const struct mc_meta_req *req, const char *buf, size_t ll) {
    uint64_t bits = 0;

    if (req->nflags < 0 || req->nflags > MC_META_MAX_FLAGS) return "nflags";
    for (int i = 0; i < req->nflags; i++) {
        const struct mc_meta_flag *f = &req->flags[i];
        if (f->tok.len == 0 || f->tok.p < buf || f->tok.p + f->tok.len > buf + ll) return "flag span";
        if (f->tok.p[0] != f->c) return "flag char";
        if (memchr(f->tok.p, ' ', f->tok.len) != NULL) return "flag space";
        uint64_t bit = (uint64_t)1 << (f->c - 'A');
        if (bits & bit) return "flag twice";
        bits |= bit;
    }
    if (bits != req->present) return "present bits";
    if (!mc_meta_has(req, 'D') && req->delta != 1) return "delta default";
    if (!mc_meta_has(req, 'J') && req->initial != 0) return "initial default";
    if (!mc_meta_has(req, 'F') && req->client_flags != 0) return "flags default";
    if (req->key_binary) {
        if (req->key.p != req->keybuf || req->key.len == 0 || req->key.len > MC_KEY_MAX) return "binary key";
    } else if (req->cmd != MC_META_MN) {
        if (req->key.len == 0 || req->key.len > MC_KEY_MAX) return "key length";
        if (req->key.p < buf || req->key.p + req->key.len > buf + ll) return "key span";
    }
    if (req->opaque_late >= 0 &&
        (req->opaque_late >= req->nflags || req->flags[req->opaque_late].c != 'O' ||
         req->flags[req->opaque_late].tok.len <= MC_META_OPAQUE_MAX))
        return "late opaque";
    return NULL;
}

/*
 * Every strict prefix of the line is NEED_MORE (CLOSE past MC_LINE_MAX
 * bytes), and the line with another request behind it parses as the line
 * alone did (same result, error, summary and consumed).
 */
static const char *split_check(const char *in, size_t len, enum mc_parse want,
                               const struct mc_meta_req *full) {
    static char why[160];
    struct mc_meta_req req;
    size_t consumed;
    char *copy;
    size_t ll = line_len(in, len);
    char fulldesc[1024];

    snprintf(fulldesc, sizeof(fulldesc), "%s", describe(full));
    for (size_t i = 0; i < ll; i++) {
        enum mc_parse r = parse_copy(&req, in, i, &consumed, &copy);
        free(copy);
        enum mc_parse w = i > MC_LINE_MAX ? MC_PARSE_CLOSE : MC_PARSE_NEED_MORE;
        if (r != w || consumed != 0) {
            snprintf(why, sizeof(why), "prefix %zu: %d, consumed %zu", i, r, consumed);
            return why;
        }
    }
    if (ll == 0)
        return NULL;

    char *more = malloc(ll + 16);
    memcpy(more, in, ll);
    memcpy(more + ll, "mg next v\r\n", 11);
    enum mc_parse r = mc_meta_parse(&req, more, ll + 11, &consumed);
    const char *d = NULL;
    if (r != want) d = "result";
    else if (consumed != ll) d = "consumed";
    else if (req.err != full->err) d = "err";
    else if (req.swallow != full->swallow) d = "swallow";
    else if (r == MC_PARSE_OK && strcmp(describe(&req), fulldesc) != 0) d = "summary";
    free(more);
    if (d != NULL) {
        snprintf(why, sizeof(why), "with a request behind it: %s", d);
        return why;
    }
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* Valid requests                                                           */
/* ---------------------------------------------------------------------- */

struct ok_row {
    const char *in;
    size_t len;
    const char *want;           /* describe() of the parse */
};

static const struct ok_row ok_rows[] = {
    /* mg */
    {S("mg k\r\n"), "mg k=k"},
    {S("mg k v\r\n"), "mg k=k f=v"},
    {S("mg k v\n"), "mg k=k f=v"},
    {S("  mg   k   v  \r\n"), "mg k=k f=v"},
    {S("mg k v\r\r\n"), "mg k=k f=v"},
    {S("mg k v\tx\r\n"), "mg k=k f=v"},
    {S("mg k\tv\r\n"), "mg k=k\\x09v"},
    {S("mg k s\x00v\r\n"), "mg k=k f=s"},
    {S("mg k\r v\r\n"), "mg k=k\\x0d f=v"},
    {S("mg k s v f t c k O9 h l u q\r\n"), "mg k=k f=svftckOhluq"},
    {S("mg k vxyz sfoo kk\r\n"), "mg k=k f=vsk"},
    {S("mg k O\r\n"), "mg k=k f=O"},
    {S("mg k " O31 " k\r\n"), "mg k=k f=Ok"},
    {S("mg k v " O32 "\r\n"), "mg k=k f=vO late=1"},
    {S("mg k T30 N0 R-5\r\n"), "mg k=k f=TNR T=30 N=0 R=-5"},
    {S("mg k T+30 N\t7 R007\r\n"), "mg k=k f=TNR T=30 N=7 R=7"},
    {S("mg k T-0\r\n"), "mg k=k f=T T=0"},
    {S("mg k T-1\r\n"), "mg k=k f=T T=-1"},
    {S("mg k T4294967396\r\n"), "mg k=k f=T T=4294967396"},
    {S("mg k T9223372036854775807\r\n"), "mg k=k f=T T=9223372036854775807"},
    {S("mg k T-9223372036854775808\r\n"), "mg k=k f=T T=-9223372036854775808"},
    {S("mg k T5\r\r\n"), "mg k=k f=T T=5"},
    {S("mg k C18446744073709551615 F4294967295 J0 D-0 MX I Pfoo Lbar\r\n"),
     "mg k=k f=CFJDMIPL F=4294967295 C=18446744073709551615 J=0 D=0"},
    {S("mg k C-18446744073709551615\r\n"), "mg k=k f=C C=1"},
    {S("mg k MS\r\n"), "mg k=k f=M"},
    {S("mg " K250 " v\r\n"), "mg k=" K250 " f=v"},
    {S("mg k " F17 "\r\n"), "mg k=k f=ckOvsfthluqPLTNRI T=1 N=1 R=1"},
    /* base64 keys, decoded as memcached decodes them */
    {S("mg YWJj b k\r\n"), "mg k=abc b f=bk"},
    {S("mg YQ== b v k\r\n"), "mg k=a b f=bvk"},
    {S("mg Y*Q== b\r\n"), "mg k=a b f=b"},
    {S("mg YQ==junk b\r\n"), "mg k=a b f=b"},
    {S("mg YQ=x b k\r\n"), "mg k=a\\x00 b f=bk"},
    {S("mg =YQ= b k\r\n"), "mg k=\\x01 b f=bk"},
    {S("mg Y=Q= b k\r\n"), "mg k=` b f=bk"},
    /* ms */
    {S("ms k 2\r\n"), "ms k=k vlen=2 mode=set"},
    {S("ms k 0\r\n"), "ms k=k vlen=0 mode=set"},
    {S("ms k -0\r\n"), "ms k=k vlen=0 mode=set"},
    {S("ms k +1\r\n"), "ms k=k vlen=1 mode=set"},
    {S("ms k  1\r\n"), "ms k=k vlen=1 mode=set"},
    {S("ms k 01 c\r\n"), "ms k=k vlen=1 f=c mode=set"},
    {S("ms k 1\tx\r\n"), "ms k=k vlen=1 mode=set"},
    {S("ms k 1 c k O5 s f t v q\r\n"), "ms k=k vlen=1 f=ckOsftvq mode=set"},
    {S("ms k 1 MS\r\n"), "ms k=k vlen=1 f=M mode=set"},
    {S("ms k 1 ME\r\n"), "ms k=k vlen=1 f=M mode=add"},
    {S("ms k 1 MA\r\n"), "ms k=k vlen=1 f=M mode=append"},
    {S("ms k 1 MP\r\n"), "ms k=k vlen=1 f=M mode=prepend"},
    {S("ms k 1 MR\r\n"), "ms k=k vlen=1 f=M mode=replace"},
    {S("ms k 1 T30 F7 C9 I\r\n"), "ms k=k vlen=1 f=TFCI T=30 F=7 C=9 mode=set"},
    {S("ms k 1 F4294967295\r\n"), "ms k=k vlen=1 f=F F=4294967295 mode=set"},
    {S("ms k 1 F-0 T-1\r\n"), "ms k=k vlen=1 f=FT T=-1 F=0 mode=set"},
    {S("ms k 1 T0 N5 R5 u l h J5 D5 P1 L1\r\n"),
     "ms k=k vlen=1 f=TNRulhJDPL T=0 N=5 R=5 J=5 D=5 mode=set"},
    {S("ms YWJj 1 b k c\r\n"), "ms k=abc b vlen=1 f=bkc mode=set"},
    {S("ms az== 1 k b c\r\n"), "ms k=k b vlen=1 f=kbc mode=set"},
    {S("ms " K250 " 1\r\n"), "ms k=" K250 " vlen=1 mode=set"},
    {S("ms k 1 " F16 "\r\n"), "ms k=k vlen=1 f=ckOvsfthluqPLTNR T=1 N=1 R=1 mode=set"},
    /* md */
    {S("md k\r\n"), "md k=k"},
    {S("md k q\r\n"), "md k=k f=q"},
    {S("md k I T30\r\n"), "md k=k f=IT T=30"},
    {S("md k C5 q O2 k\r\n"), "md k=k f=CqOk C=5"},
    {S("md YWJj b k\r\n"), "md k=abc b f=bk"},
    {S("md k MX c v s f t h l u\r\n"), "md k=k f=Mcvsfthlu"},
    {S("md k N5 R5 F5 J5 D5 M+\r\n"), "md k=k f=NRFJDM N=5 R=5 F=5 J=5 D=5"},
    {S("md k " F17 "\r\n"), "md k=k f=ckOvsfthluqPLTNRI T=1 N=1 R=1"},
    /* ma */
    {S("ma k\r\n"), "ma k=k mode=incr"},
    {S("ma k q\r\n"), "ma k=k f=q mode=incr"},
    {S("ma k N0 J10 v\r\n"), "ma k=k f=NJv N=0 J=10 mode=incr"},
    {S("ma k MD D20 v t c\r\n"), "ma k=k f=MDvtc D=20 mode=decr"},
    {S("ma k M+\r\n"), "ma k=k f=M mode=incr"},
    {S("ma k M-\r\n"), "ma k=k f=M mode=decr"},
    {S("ma k MI\r\n"), "ma k=k f=M mode=incr"},
    {S("ma k D18446744073709551615\r\n"), "ma k=k f=D D=18446744073709551615 mode=incr"},
    {S("ma k J-0 D+2\r\n"), "ma k=k f=JD J=0 D=2 mode=incr"},
    {S("ma k C5 T100\r\n"), "ma k=k f=CT T=100 C=5 mode=incr"},
    {S("ma YWJj b v k O1 N0 J7\r\n"), "ma k=abc b f=bvkONJ N=0 J=7 mode=incr"},
    {S("ma k s f h l u I R5 Pz Lz\r\n"), "ma k=k f=sfhluIRPL R=5 mode=incr"},
    {S("ma k v " O32 "\r\n"), "ma k=k f=vO mode=incr late=1"},
    {S("ma k " F17 "\r\n"), "ma k=k f=ckOvsfthluqPLTNRI T=1 N=1 R=1 mode=incr"},
    /* mn, me */
    {S("mn\r\n"), "mn"},
    {S("mn\n"), "mn"},
    {S("mn x y q\r\n"), "mn"},
    {S("me k\r\n"), "me k=k"},
    {S("me k x\r\n"), "me k=k"},
    {S("me k  \r\n"), "me k=k"},
    {S("me bWVr b\r\n"), "me k=mek b"},
    {S("me bWVr b x\r\n"), "me k=mek b"},
    {S("me bWVr x b\r\n"), "me k=bWVr"},
    {S("me bWVr bb\r\n"), "me k=bWVr"},
    {S("me " K250 "\r\n"), "me k=" K250},
};

/*
 * No valid parse differs from memcached on purpose.  memcached keeps only
 * the low 32 bits of T, N and R ("T4294967396" is T100); the codec hands on
 * the whole number (see the ok rows) and the server may do the same cut.
 */

static void run_ok_rows(int *th_failed, const struct ok_row *rows, size_t nrows) {
    for (size_t i = 0; i < nrows; i++) {
        const struct ok_row *row = &rows[i];
        struct mc_meta_req req;
        size_t consumed;
        char *buf;
        enum mc_parse r = parse_copy(&req, row->in, row->len, &consumed, &buf);
        const char *why = NULL;
        if (r != MC_PARSE_OK)
            why = mc_meta_err_str(req.err);
        else if (consumed != line_len(row->in, row->len))
            why = "consumed";
        else if (req.err != MC_META_ERR_NONE || req.swallow != 0)
            why = "err";
        else if (strcmp(describe(&req), row->want) != 0)
            why = describe(&req);
        else
            why = check_invariants(&req, buf, consumed);
        if (why == NULL)
            why = split_check(row->in, row->len, MC_PARSE_OK, &req);
        free(buf);
        if (why != NULL)
            TH_FAIL("ok row %zu \"%s\": %s", i, show(row->in, row->len), why);
    }
}

TEST(valid_requests) {
    run_ok_rows(th_failed, ok_rows, sizeof(ok_rows) / sizeof(ok_rows[0]));
}

/* ---------------------------------------------------------------------- */
/* Malformed requests                                                       */
/* ---------------------------------------------------------------------- */

struct bad_row {
    const char *in;
    size_t len;
    enum mc_parse want;
    enum mc_meta_err err;
    size_t swallow;             /* ms: data bytes memcached discarded after the error */
};

#define E(x) MC_PARSE_ERROR, MC_META_ERR_##x

static const struct bad_row bad_rows[] = {
    /* no key, not a meta command */
    {S("mg\r\n"), E(ERROR), 0},
    {S("mg \r\n"), E(ERROR), 0},
    {S("  mg  \r\n"), E(ERROR), 0},
    {S("ms\r\n"), E(ERROR), 0},
    {S("md\r\n"), E(ERROR), 0},
    {S("ma\r\n"), E(ERROR), 0},
    {S("me\r\n"), E(BAD_FORMAT), 0},
    {S("mx k\r\n"), E(ERROR), 0},
    {S("MG k v\r\n"), E(ERROR), 0},
    {S("mgg k v\r\n"), E(ERROR), 0},
    {S("m\r\n"), E(ERROR), 0},
    {S("\r\n"), E(ERROR), 0},
    {S("mg\tk\r\n"), E(ERROR), 0},
    {S("\x00mg k\r\n"), E(ERROR), 0},
    /* key length, word counts, datalen */
    {S("mg " K251 " v\r\n"), E(BAD_FORMAT), 0},
    {S("ms " K251 " 1\r\n"), E(BAD_FORMAT), 0},
    {S("md " K251 "\r\n"), E(BAD_FORMAT), 0},
    {S("md " K251 " zz zz\r\n"), E(BAD_FORMAT), 0},
    {S("ma " K251 "\r\n"), E(BAD_FORMAT), 0},
    {S("me " K251 "\r\n"), E(BAD_FORMAT), 0},
    {S("mg " K251 " " F17 " C1 F1\r\n"), E(BAD_FORMAT), 0},
    {S("ms k\r\n"), E(BAD_FORMAT), 0},
    {S("ms k abc\r\n"), E(BAD_FORMAT), 0},
    {S("ms k abc Tx\r\n"), E(BAD_FORMAT), 0},
    {S("ms k -1\r\n"), E(BAD_FORMAT), 0},
    {S("ms k 1x\r\n"), E(BAD_FORMAT), 0},
    {S("ms k 2147483646\r\n"), E(BAD_FORMAT), 0},
    {S("ms k 9223372036854775808\r\n"), E(BAD_FORMAT), 0},
    {S("mg k " F17 " C1\r\n"), E(TOO_LONG_MG), 0},
    {S("mg k a b c d e f g h i j k l m n o p q r s t u v w x y z\r\n"), E(TOO_LONG_MG), 0},
    {S("md k " F17 " C1\r\n"), E(TOO_LONG), 0},
    {S("ma k " F17 " C1\r\n"), E(TOO_LONG), 0},
    {S("ms k 1 " F17 "\r\n"), E(TOO_LONG), 0},
    {S("ms k x " F17 "\r\n"), E(TOO_LONG), 0},
    /* flags */
    {S("mg k x\r\n"), E(INVALID_FLAG), 0},
    {S("mg k 5\r\n"), E(INVALID_FLAG), 0},
    {S("mg k ~\r\n"), E(INVALID_FLAG), 0},
    {S("mg k E5\r\n"), E(INVALID_FLAG), 0},
    {S("mg k S5\r\n"), E(INVALID_FLAG), 0},
    {S("mg k \tv\r\n"), E(INVALID_FLAG), 0},
    {S("mg k T 100\r\n"), E(INVALID_FLAG), 0},
    {S("mg k \x80\r\n"), E(DUPLICATE_FLAG), 0},
    {S("mg k \x7f\r\n"), E(DUPLICATE_FLAG), 0},
    {S("mg k v v\r\n"), E(DUPLICATE_FLAG), 0},
    {S("mg k v vv\r\n"), E(DUPLICATE_FLAG), 0},
    {S("mg k P1 P2\r\n"), E(DUPLICATE_FLAG), 0},
    {S("mg k T\r\n"), E(BAD_TOKEN), 0},
    {S("mg k Tabc\r\n"), E(BAD_TOKEN), 0},
    {S("mg k T100x\r\n"), E(BAD_TOKEN), 0},
    {S("mg k T9223372036854775808\r\n"), E(BAD_TOKEN), 0},
    {S("mg k T-9223372036854775809\r\n"), E(BAD_TOKEN), 0},
    {S("mg k N\r\n"), E(BAD_TOKEN), 0},
    {S("mg k R\r\n"), E(BAD_TOKEN), 0},
    {S("mg k Rx\r\n"), E(BAD_TOKEN), 0},
    {S("mg k C\r\n"), E(BAD_TOKEN), 0},
    {S("mg k C-1\r\n"), E(BAD_TOKEN), 0},
    {S("mg k C18446744073709551616\r\n"), E(BAD_TOKEN), 0},
    {S("mg k C18446744073709551615\t-\r\n"), E(BAD_TOKEN), 0},
    {S("ma k D9223372036854775808\t-\r\n"), E(INVALID_OR_DUP), 0},
    {S("mg k Fx\r\n"), E(BAD_FORMAT), 0},
    {S("mg k F-1\r\n"), E(BAD_FORMAT), 0},
    {S("mg k M\r\n"), E(M_LENGTH), 0},
    {S("mg k MSS\r\n"), E(M_LENGTH), 0},
    {S("mg k J\r\n"), E(BAD_INITIAL), 0},
    {S("mg k D\r\n"), E(BAD_DELTA), 0},
    /* which error answers when several flags are bad */
    {S("mg k Jx Dx\r\n"), E(BAD_DELTA), 0},
    {S("mg k Tx v v\r\n"), E(DUPLICATE_FLAG), 0},
    {S("mg k Tx z\r\n"), E(INVALID_FLAG), 0},
    {S("mg k Tx Fx\r\n"), E(BAD_TOKEN), 0},
    {S("mg k Fx Tx\r\n"), E(BAD_TOKEN), 0},
    {S("mg k Fx Jx\r\n"), E(BAD_INITIAL), 0},
    {S("mg k Jx Fx\r\n"), E(BAD_INITIAL), 0},
    {S("mg k Jx Dx Tx\r\n"), E(BAD_TOKEN), 0},
    {S("mg k Mxx Tx\r\n"), E(BAD_TOKEN), 0},
    {S("mg k Tx Mxx\r\n"), E(M_LENGTH), 0},
    {S("mg k x v v\r\n"), E(INVALID_FLAG), 0},
    {S("mg k v v x\r\n"), E(DUPLICATE_FLAG), 0},
    {S("mg k " O32 " x\r\n"), E(INVALID_FLAG), 0},
    {S("mg k " O32 " Tx\r\n"), E(BAD_TOKEN), 0},
    /* base64 keys */
    {S("mg k b\r\n"), E(DECODING_KEY), 0},
    {S("mg k v b\r\n"), E(DECODING_KEY), 0},
    {S("mg ab= b\r\n"), E(DECODING_KEY), 0},
    {S("mg Y=== b k\r\n"), E(DECODING_KEY), 0},
    {S("mg ==== b k\r\n"), E(DECODING_KEY), 0},
    {S("mg YQ b k\r\n"), E(DECODING_KEY), 0},
    {S("mg !!!! b k\r\n"), E(DECODING_KEY), 0},
    {S("mg ab= b Tx\r\n"), E(BAD_TOKEN), 0},
    {S("mg k Tx b\r\n"), E(DECODING_KEY), 0},
    {S("mg k b b\r\n"), E(DUPLICATE_FLAG), 0},
    /* ms: errors after the datalen swallow the data block */
    {S("ms k 1 x\r\n"), E(INVALID_FLAG), 3},
    {S("ms k 1 E5\r\n"), E(INVALID_FLAG), 3},
    {S("ms k 1 S5\r\n"), E(INVALID_FLAG), 3},
    {S("ms k 2 v v\r\n"), E(DUPLICATE_FLAG), 4},
    {S("ms k 1 Fx\r\n"), E(BAD_FORMAT), 3},
    {S("ms k 1 F-1\r\n"), E(BAD_FORMAT), 3},
    {S("ms k 1 Tx\r\n"), E(BAD_TOKEN), 3},
    {S("ms k 1 C\r\n"), E(BAD_TOKEN), 3},
    {S("ms k 1 MX\r\n"), E(MS_MODE), 3},
    {S("ms k 1 Ms\r\n"), E(MS_MODE), 3},
    {S("ms k 1 M+\r\n"), E(MS_MODE), 3},
    {S("ms k 1 M\r\n"), E(M_LENGTH), 3},
    {S("ms k 1 MSS\r\n"), E(M_LENGTH), 3},
    {S("ms k 1 " O32 "\r\n"), E(OPAQUE_TOO_LONG), 3},
    {S("ms k 1 " O32 " MX\r\n"), E(MS_MODE), 3},
    {S("ms k 1 MX " O32 "\r\n"), E(MS_MODE), 3},
    {S("ms k 1 Mx " O32 " Fx\r\n"), E(BAD_FORMAT), 3},
    {S("ms k 1 " O32 " x\r\n"), E(INVALID_FLAG), 3},
    {S("ms k 1 b\r\n"), E(DECODING_KEY), 3},
    {S("ms ab= 1 b\r\n"), E(DECODING_KEY), 3},
    {S("ms k 1 b Fx\r\n"), E(DECODING_KEY), 3},
    {S("ms k 1 k b\r\n"), E(DECODING_KEY), 3},
    {S("ms k 0 x\r\n"), E(INVALID_FLAG), 2},
    {S("ms k 10 Tx\r\n"), E(BAD_TOKEN), 12},
    /* md and ma: every flag error is "invalid or duplicate flag" */
    {S("md k x\r\n"), E(INVALID_OR_DUP), 0},
    {S("md k Tx\r\n"), E(INVALID_OR_DUP), 0},
    {S("md k v v\r\n"), E(INVALID_OR_DUP), 0},
    {S("md k E1\r\n"), E(INVALID_OR_DUP), 0},
    {S("md k M\r\n"), E(INVALID_OR_DUP), 0},
    {S("md ab= b\r\n"), E(INVALID_OR_DUP), 0},
    {S("md nok O2 k b\r\n"), E(INVALID_OR_DUP), 0},
    {S("md k " O32 "\r\n"), E(OPAQUE_TOO_LONG), 0},
    {S("md k " O32 " x\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma k x\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma k D-1\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma k Dx\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma k Jx\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma k J-1\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma k M\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma k MII\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma k E1\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma k t T50 t\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma k s f h l u I E1\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma ab= b\r\n"), E(INVALID_OR_DUP), 0},
    {S("ma k Mi\r\n"), E(MA_MODE), 0},
    {S("ma k MS\r\n"), E(MA_MODE), 0},
    {S("ma k Mx " O32 "\r\n"), E(MA_MODE), 0},
    /* me */
    {S("me bWV b\r\n"), E(BAD_FORMAT), 0},
    {S("me mek b\r\n"), E(BAD_FORMAT), 0},
    /* lines without a newline */
    {S(""), MC_PARSE_NEED_MORE, MC_META_ERR_NONE, 0},
    {S("mg k v"), MC_PARSE_NEED_MORE, MC_META_ERR_NONE, 0},
    {S("mg k v\r"), MC_PARSE_NEED_MORE, MC_META_ERR_NONE, 0},
    {S(X2048), MC_PARSE_NEED_MORE, MC_META_ERR_NONE, 0},
    {S(X2048 "x"), MC_PARSE_CLOSE, MC_META_ERR_NONE, 0},
    {S("mg " X2048), MC_PARSE_CLOSE, MC_META_ERR_NONE, 0},
};

/*
 * Where cellar refuses what memcached 1.6.18 takes after cutting it to 32
 * bits; each row says what memcached does.
 */
static const struct bad_row dev_bad_rows[] = {
    /* memcached: client flags 0 (the low 32 bits); HD */
    {S("ms k 1 F4294967296\r\n"), E(BAD_FORMAT), 3},
    /* memcached: accepted and ignored (only F18446744073709551616 and up is refused) */
    {S("mg k F4294967296\r\n"), E(BAD_FORMAT), 0},
    /* memcached: datalen 1 (the low 32 bits) */
    {S("ms k 4294967297\r\n"), E(BAD_FORMAT), 0},
};

static void run_bad_rows(int *th_failed, const struct bad_row *rows, size_t nrows) {
    for (size_t i = 0; i < nrows; i++) {
        const struct bad_row *row = &rows[i];
        struct mc_meta_req req;
        size_t consumed = 99;
        char *buf;
        enum mc_parse r = parse_copy(&req, row->in, row->len, &consumed, &buf);
        size_t ll = line_len(row->in, row->len);
        const char *why = NULL;
        if (r != row->want)
            why = r == MC_PARSE_OK ? describe(&req) : "result";
        else if (req.err != row->err)
            why = mc_meta_err_str(req.err);
        else if (req.swallow != row->swallow)
            why = "swallow";
        else if (consumed != (r == MC_PARSE_ERROR ? ll : 0))
            why = "consumed";
        if (why == NULL && r == MC_PARSE_ERROR)
            why = split_check(row->in, row->len, r, &req);
        free(buf);
        if (why != NULL)
            TH_FAIL("bad row %zu \"%s\": %s", i, show(row->in, row->len), why);
    }
}

TEST(malformed_requests) {
    run_bad_rows(th_failed, bad_rows, sizeof(bad_rows) / sizeof(bad_rows[0]));
}

TEST(deliberate_differences) {
    run_bad_rows(th_failed, dev_bad_rows, sizeof(dev_bad_rows) / sizeof(dev_bad_rows[0]));
}

/* A line far past MC_LINE_MAX with its newline still parses: the limit is for lines without one. */
TEST(long_line_with_newline) {
    static char line[4096];
    size_t n = (size_t)snprintf(line, sizeof(line), "mg k v P%s\r\n", X2048);
    struct mc_meta_req req;
    size_t consumed;
    ASSERT_EQ(mc_meta_parse(&req, line, n, &consumed), MC_PARSE_OK);
    ASSERT_EQ(consumed, n);
    ASSERT_EQ(req.nflags, 2);
    ASSERT_EQ(req.flags[1].tok.len, 2049);
}

/* The swallowed data length is datalen + 2, up to the largest datalen. */
TEST(swallow_largest) {
    struct mc_meta_req req;
    size_t consumed;
    ASSERT_EQ(mc_meta_parse(&req, S("ms k 2147483645 x\r\n"), &consumed), MC_PARSE_ERROR);
    ASSERT_EQ(req.err, MC_META_ERR_INVALID_FLAG);
    ASSERT_U64(req.swallow, 2147483647ULL);
    ASSERT_EQ(mc_meta_parse(&req, S("ms k 2147483645\r\n"), &consumed), MC_PARSE_OK);
    ASSERT_U64(req.vlen, 2147483645ULL);
}

TEST(err_strings) {
    for (int e = 0; e < MC_META_ERR_COUNT; e++) {
        const char *s = mc_meta_err_str((enum mc_meta_err)e);
        size_t n = mc_meta_err_len((enum mc_meta_err)e);
        ASSERT_EQ(n, strlen(s));
        if (e == MC_META_ERR_NONE) {
            ASSERT_EQ(n, 0);
            continue;
        }
        ASSERT(n >= 7 && memcmp(s + n - 2, "\r\n", 2) == 0);
        ASSERT(memcmp(s, "ERROR", 5) == 0 || memcmp(s, "CLIENT_ERROR ", 13) == 0 ||
               memcmp(s, "SERVER_ERROR ", 13) == 0);
    }
    ASSERT_STR(mc_meta_err_str(MC_META_ERR_TOO_LONG_MG), "CLIENT_ERROR options flags are too long\r\n");
    ASSERT_STR(mc_meta_err_str(MC_META_ERR_TOO_LONG), "CLIENT_ERROR options flags too long\r\n");
    ASSERT_EQ(mc_meta_err_len(MC_META_ERR_COUNT), 0);
}

/* ---------------------------------------------------------------------- */
/* Numbers and base64                                                       */
/* ---------------------------------------------------------------------- */

TEST(numbers) {
    static const struct {
        const char *s;
        bool ok_u;
        uint64_t u;
        bool ok_i;
        int64_t i;
    } rows[] = {
        {"0", true, 0, true, 0},
        {"007", true, 7, true, 7},
        {"+5", true, 5, true, 5},
        {"-0", true, 0, true, 0},
        {"-1", false, 0, true, -1},
        {" \t\v5", true, 5, true, 5},
        {"5\t", true, 5, true, 5},
        {"5\tz", true, 5, true, 5},
        {"5\r", true, 5, true, 5},
        {"5z", false, 0, false, 0},
        {"", false, 0, false, 0},
        {" ", false, 0, false, 0},
        {"+", false, 0, false, 0},
        {"-", false, 0, false, 0},
        {"+-5", false, 0, false, 0},
        {"0x10", false, 0, false, 0},
        {"18446744073709551615", true, UINT64_MAX, false, 0},
        {"18446744073709551616", false, 0, false, 0},
        {"99999999999999999999", false, 0, false, 0},
        {"9999999999999999999", true, 9999999999999999999u, false, 0},
        {"000000000000000000000018446744073709551615", true, UINT64_MAX, false, 0},
        {"000000000000000000000018446744073709551616", false, 0, false, 0},
        {"-18446744073709551615", true, 1, false, 0},
        {"-9223372036854775808", false, 0, true, INT64_MIN},
        {"-9223372036854775809", true, ((uint64_t)1 << 63) - 1, false, 0},
        {"9223372036854775807", true, INT64_MAX, true, INT64_MAX},
        {"9223372036854775808", true, (uint64_t)1 << 63, false, 0},
        {"9223372036854775808\t-", false, 0, false, 0},
        {"5\t-", true, 5, true, 5},
    };
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        uint64_t u = 12345;
        int64_t i = 12345;
        bool ok = mc_num_u64(rows[r].s, strlen(rows[r].s), &u);
        if (ok != rows[r].ok_u || (ok && u != rows[r].u))
            TH_FAIL("u64 \"%s\": %d %" PRIu64, show(rows[r].s, strlen(rows[r].s)), ok, u);
        if (!ok && u != 12345)
            TH_FAIL("u64 \"%s\" wrote on failure", rows[r].s);
        ok = mc_num_i64(rows[r].s, strlen(rows[r].s), &i);
        if (ok != rows[r].ok_i || (ok && i != rows[r].i))
            TH_FAIL("i64 \"%s\": %d %" PRId64, show(rows[r].s, strlen(rows[r].s)), ok, i);
    }
    /* A span stops where it says, not at a NUL. */
    uint64_t u;
    ASSERT(mc_num_u64("12345", 2, &u) && u == 12);
}

/* mc_num_fmt_u64 against printf at each digit count's edges and 32 bits' */
TEST(num_fmt) {
    uint64_t vals[64 + 8];
    size_t n = 0;
    uint64_t p = 1;
    for (int d = 0; d < 20; d++, p *= 10) {
        vals[n++] = p;
        vals[n++] = p - 1;
        vals[n++] = p + 1;
    }
    vals[n++] = UINT32_MAX;
    vals[n++] = (uint64_t)UINT32_MAX + 1;
    vals[n++] = UINT64_MAX;
    vals[n++] = UINT64_MAX - 1;
    vals[n++] = 4294967296000ull + 99;
    for (size_t i = 0; i < n; i++) {
        char want[32], got[MC_NUM_U64_DIGITS + 2];
        int len = snprintf(want, sizeof(want), "%" PRIu64, vals[i]);
        memset(got, '#', sizeof(got));
        char *end = mc_num_fmt_u64(got, vals[i]);
        if (end - got != len || memcmp(got, want, (size_t)len) != 0 || *end != '#')
            TH_FAIL("fmt %s: \"%.*s\"", want, (int)(end - got), got);
        uint64_t back;
        ASSERT(mc_num_u64(got, (size_t)(end - got), &back) && back == vals[i]);
    }
}

TEST(base64) {
    static const struct {
        const char *in;
        const char *out;        /* NULL: error */
        size_t nout;
    } rows[] = {
        {"YWJj", "abc", 3},
        {"YQ==", "a", 1},
        {"YWI=", "ab", 2},
        {"Y*Q==", "a", 1},
        {"YQ==junk", "a", 1},
        {"YQ=x", "a\0", 2},
        {"=YQ=", "\x01", 1},
        {"Y=Q=", "`", 1},
        {"YW Jj", "abc", 3},
        {"YWJjZGVm", "abcdef", 6},
        {"YQ==YWJj", "a", 1},
        {"ab=", NULL, 0},
        {"Y===", NULL, 0},
        {"====", NULL, 0},
        {"YQ", NULL, 0},
        {"!!!!", NULL, 0},
        {"", NULL, 0},
        {"k", NULL, 0},
    };
    char out[64];
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        size_t n = mc_meta_b64_decode(rows[r].in, strlen(rows[r].in), out);
        if (rows[r].out == NULL) {
            if (n != 0)
                TH_FAIL("decode \"%s\": %zu, want error", rows[r].in, n);
        } else if (n != rows[r].nout || memcmp(out, rows[r].out, n) != 0) {
            TH_FAIL("decode \"%s\": \"%s\"", rows[r].in, show(out, n));
        }
    }
    /* Round trips of every length up to a whole decoded key. */
    char src[MC_KEY_MAX], enc[4 * ((MC_KEY_MAX + 2) / 3)], dec[MC_KEY_MAX];
    uint32_t x = 12345;
    for (size_t len = 1; len <= 186; len++) {
        for (size_t i = 0; i < len; i++) {
            x = x * 1103515245u + 12345u;
            src[i] = (char)(x >> 16);
        }
        size_t ne = mc_meta_b64_encode(src, len, enc);
        ASSERT_EQ(ne, 4 * ((len + 2) / 3));
        ASSERT(ne <= MC_KEY_MAX);
        size_t nd = mc_meta_b64_decode(enc, ne, dec);
        ASSERT_EQ(nd, len);
        ASSERT_MEM(dec, src, len);
    }
    ASSERT_EQ(mc_meta_b64_encode("k", 1, enc), 4);
    ASSERT_MEM(enc, "aw==", 4);
}

/* Flags come back in request order, and a random permutation parses to that order. */
TEST(flag_order_round_trip) {
    static const char *const toks[] = {"b", "c", "f", "h", "k", "l", "O7", "q", "s", "t", "u", "v",
                                       "N30", "R5", "T60", "P1", "L2"};
    uint32_t x = 7;
    for (int iter = 0; iter < 2000; iter++) {
        int idx[17];
        int n = 0;
        for (int i = 0; i < 17; i++) {
            x = x * 1103515245u + 12345u;
            if ((x >> 16) % 3 != 0)
                idx[n++] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            x = x * 1103515245u + 12345u;
            int j = (int)((x >> 16) % (uint32_t)(i + 1));
            int t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        char line[256];
        size_t o = (size_t)snprintf(line, sizeof(line), "mg YWJj");
        for (int i = 0; i < n; i++)
            o += (size_t)snprintf(line + o, sizeof(line) - o, " %s", toks[idx[i]]);
        o += (size_t)snprintf(line + o, sizeof(line) - o, "\r\n");
        struct mc_meta_req req;
        size_t consumed;
        ASSERT_EQ(mc_meta_parse(&req, line, o, &consumed), MC_PARSE_OK);
        ASSERT_EQ(req.nflags, n);
        for (int i = 0; i < n; i++) {
            ASSERT_EQ(req.flags[i].c, toks[idx[i]][0]);
            ASSERT_EQ(req.flags[i].tok.len, strlen(toks[idx[i]]));
        }
        if (mc_meta_has(&req, 'b')) {
            ASSERT_EQ(req.key.len, 3);
            ASSERT_MEM(req.key.p, "abc", 3);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Responses                                                                */
/* ---------------------------------------------------------------------- */

#define NEVER MC_META_TTL_NEVER
#define OK_ MC_META_RC_OK

/*
 * setup: commands sent to a fresh memcached first; line: the request (an
 * ms line with its data); v: what the command came to, as the engine
 * decided it (W, Z, X, and the TTL read where t stands in the line); want:
 * the answer line ("" = hidden by q); value: the value memcached sent
 * after it (send_value).  The answers are memcached's; the CAS numbers
 * are a fresh memcached's: 1 for the first item stored.
 */
struct fmt_row {
    const char *setup;
    const char *line;
    struct mc_meta_item_view v;
    const char *want;
    const char *value;          /* NULL: no value follows */
};

#define SET_FK "ms fk 5 F7 T0\r\nhello\r\n"
#define OPQ O32

static const struct fmt_row fmt_rows[] = {
    /* mg hits: every return flag, in request order */
    {SET_FK, "mg fk s v f t c k O9 h l\r\n",
     {.rc = OK_, .vlen = 5, .client_flags = 7, .cas = 1, .ttl = NEVER},
     "VA 5 s5 f7 t-1 c1 kfk O9 h0 l0\r\n", "hello"},
    {SET_FK "mg fk\r\n", "mg fk k O9 c f s t h l\r\n",
     {.rc = OK_, .vlen = 5, .client_flags = 7, .cas = 1, .ttl = NEVER, .fetched = true},
     "HD kfk O9 c1 f7 s5 t-1 h1 l0\r\n", NULL},
    {SET_FK "mg fk u\r\n", "mg fk h\r\n",
     {.rc = OK_, .vlen = 5, .client_flags = 7, .cas = 1, .ttl = NEVER},
     "HD h0\r\n", NULL},
    {SET_FK, "mg fk\r\n", {.rc = OK_, .vlen = 5, .cas = 1, .ttl = NEVER}, "HD\r\n", NULL},
    {SET_FK, "mg fk q v\r\n", {.rc = OK_, .vlen = 5, .cas = 1, .ttl = NEVER}, "VA 5\r\n", "hello"},
    /* T acts where it stands: t shows the TTL the engine read at t */
    {SET_FK, "mg fk t T1000 c\r\n", {.rc = OK_, .vlen = 5, .cas = 1, .ttl = NEVER},
     "HD t-1 c1\r\n", NULL},
    {SET_FK, "mg fk T1000 t\r\n", {.rc = OK_, .vlen = 5, .cas = 1, .ttl = 1000},
     "HD t1000\r\n", NULL},
    {"ms fk 5 T1000\r\nhello\r\n", "mg fk T0 t\r\n", {.rc = OK_, .vlen = 5, .cas = 1, .ttl = NEVER},
     "HD t-1\r\n", NULL},
    /* misses: only O and k are echoed, q hides them */
    {"", "mg miss v k O1 s t c f h l\r\n", {.rc = MC_META_RC_EN}, "EN kmiss O1\r\n", NULL},
    {"", "mg miss O1 q k\r\n", {.rc = MC_META_RC_EN}, "", NULL},
    {"", "mg YWJj b k v\r\n", {.rc = MC_META_RC_EN}, "EN kYWJj b\r\n", NULL},
    {"", "mg az== b k\r\n", {.rc = MC_META_RC_EN}, "EN kaw== b\r\n", NULL},
    /* k uses the item's key flag on a hit */
    {"ms YWJj 1 b\r\nA\r\n", "mg abc k v\r\n", {.rc = OK_, .vlen = 1, .cas = 1, .ttl = NEVER, .key_binary = true},
     "VA 1 kYWJj b\r\n", "A"},
    {"ms abc 1\r\nA\r\n", "mg YWJj b k\r\n", {.rc = OK_, .vlen = 1, .cas = 1, .ttl = NEVER},
     "HD kabc\r\n", NULL},
    /* N: a created placeholder has no TTL until N is reached, and wins */
    {"", "mg lk t N1000 c s\r\n", {.rc = OK_, .won = true, .vlen = 0, .cas = 1, .ttl = NEVER},
     "HD t-1 c1 s0 W\r\n", NULL},
    {"", "mg lk N1000 t\r\n", {.rc = OK_, .won = true, .vlen = 0, .cas = 1, .ttl = 1000},
     "HD t1000 W\r\n", NULL},
    {"", "mg lk v c N0 t\r\n", {.rc = OK_, .won = true, .vlen = 0, .cas = 1, .ttl = NEVER},
     "VA 0 c1 t-1 W\r\n", ""},
    {"", "mg lk N1000 T0 t\r\n", {.rc = OK_, .won = true, .cas = 1, .ttl = NEVER},
     "HD t-1 W\r\n", NULL},
    {"mg lk N0\r\n", "mg lk v c N0 t k\r\n", {.rc = OK_, .vlen = 0, .cas = 1, .ttl = NEVER, .token_sent = true},
     "VA 0 c1 t-1 klk Z\r\n", ""},
    {"mg lk N0\r\n", "mg lk q\r\n", {.rc = OK_, .cas = 1, .ttl = NEVER, .token_sent = true},
     "HD Z\r\n", NULL},
    /* R: wins when no token is out and the TTL at R is below R's */
    {"ms lk 1 T10\r\nA\r\n", "mg lk R30 T1000 t\r\n", {.rc = OK_, .won = true, .vlen = 1, .cas = 1, .ttl = 1000},
     "HD t1000 W\r\n", NULL},
    {"ms lk 1 T10\r\nA\r\n", "mg lk T1000 R30 t\r\n", {.rc = OK_, .vlen = 1, .cas = 1, .ttl = 1000},
     "HD t1000\r\n", NULL},
    {"ms lk 1 T1000\r\nA\r\n", "mg lk T10 R30 t\r\n", {.rc = OK_, .won = true, .vlen = 1, .cas = 1, .ttl = 10},
     "HD t10 W\r\n", NULL},
    {"ms lk 1 T10\r\nA\r\nmg lk R30\r\n", "mg lk R30 T1000 t\r\n",
     {.rc = OK_, .vlen = 1, .cas = 1, .ttl = 1000, .token_sent = true},
     "HD t1000 Z\r\n", NULL},
    {"ms lk 1 T0\r\nA\r\n", "mg lk R30 t\r\n", {.rc = OK_, .vlen = 1, .cas = 1, .ttl = NEVER},
     "HD t-1\r\n", NULL},
    {"ms lk 1 T10\r\nA\r\n", "mg lk R0 T1000 t\r\n", {.rc = OK_, .vlen = 1, .cas = 1, .ttl = 1000},
     "HD t1000\r\n", NULL},
    {"ms lk 1 T10\r\nA\r\n", "mg lk R2000000000 T1000 t\r\n",
     {.rc = OK_, .won = true, .vlen = 1, .cas = 1, .ttl = 1000},
     "HD t1000 W\r\n", NULL},
    /* stale items: X, and W for the first reader */
    {"ms iv 3 T0\r\nold\r\nmd iv I\r\n", "mg iv c v\r\n",
     {.rc = OK_, .won = true, .vlen = 3, .cas = 2, .ttl = NEVER, .stale = true},
     "VA 3 c2 X W\r\n", "old"},
    {"ms iv 3 T0\r\nold\r\nmd iv I\r\nmg iv\r\n", "mg iv c v\r\n",
     {.rc = OK_, .vlen = 3, .cas = 2, .ttl = NEVER, .stale = true, .token_sent = true},
     "VA 3 c2 Z X\r\n", "old"},
    {"ms iv 3 T0\r\nold\r\nmd iv I\r\n", "mg iv N30 R30 k\r\n",
     {.rc = OK_, .won = true, .vlen = 3, .cas = 2, .ttl = NEVER, .stale = true},
     "HD kiv X W\r\n", NULL},
    /* mg's over-long opaque: noticed where it stands, after T and N took effect */
    {"ms fk 1 T0\r\nA\r\n", "mg fk t T1000 " OPQ " v\r\n", {.rc = OK_, .vlen = 1, .cas = 1, .ttl = NEVER},
     "CLIENT_ERROR opaque token too long\r\n", NULL},
    {"", "mg new N0 " OPQ " v\r\n", {.rc = OK_, .won = true, .cas = 1, .ttl = NEVER},
     "CLIENT_ERROR opaque token too long\r\n", NULL},
    {"", "mg new " OPQ " N0\r\n", {.rc = OK_, .won = true, .cas = 1, .ttl = NEVER},
     "CLIENT_ERROR opaque token too long\r\n", NULL},
    {"", "mg miss " OPQ " q\r\n", {.rc = MC_META_RC_EN}, "CLIENT_ERROR opaque token too long\r\n", NULL},
    /* ms: O, k and c only; q hides HD only */
    {"", "ms k 1 c k O5 s f t v\r\nA\r\n", {.rc = OK_, .cas = 1}, "HD c1 kk O5\r\n", NULL},
    {"", "ms k 1 q c\r\nA\r\n", {.rc = OK_, .cas = 1}, "", NULL},
    {"ms k 1\r\nA\r\n", "ms k 1 ME q k c O1\r\nA\r\n", {.rc = MC_META_RC_NS}, "NS kk c0 O1\r\n", NULL},
    {"ms k 1\r\nA\r\n", "ms k 1 C99 c k\r\nB\r\n", {.rc = MC_META_RC_EX}, "EX c0 kk\r\n", NULL},
    {"", "ms k 1 C1 I q O3\r\nB\r\n", {.rc = MC_META_RC_NF}, "NF O3\r\n", NULL},
    {"", "ms k 1 MA O3\r\nB\r\n", {.rc = MC_META_RC_NS}, "NS O3\r\n", NULL},
    {"", "ms YWJj 1 b k c\r\nA\r\n", {.rc = OK_, .cas = 1}, "HD kYWJj b c1\r\n", NULL},
    {"", "ms az== 1 k b c\r\nA\r\n", {.rc = OK_, .cas = 1}, "HD kaw== b c1\r\n", NULL},
    {"ms iv 3 T0 c\r\nold\r\nmd iv I\r\n", "ms iv 3 C1 I c\r\nnew\r\n", {.rc = OK_, .cas = 3}, "HD c3\r\n", NULL},
    /* md: O and k only; q hides HD only */
    {"ms k 1\r\nA\r\n", "md k q\r\n", {.rc = OK_}, "", NULL},
    {"ms k 1\r\nA\r\n", "md k C99 q O2 k c\r\n", {.rc = MC_META_RC_EX}, "EX O2 kk\r\n", NULL},
    {"", "md nok q O2 k\r\n", {.rc = MC_META_RC_NF}, "NF O2 knok\r\n", NULL},
    {"ms YWJj 1 b\r\nA\r\n", "md YWJj b k O1\r\n", {.rc = OK_}, "HD kYWJj b O1\r\n", NULL},
    {"ms k 1\r\nA\r\n", "md k c k O1 v s f t h l u\r\n", {.rc = OK_}, "HD kk O1\r\n", NULL},
    /* ma: t shows the TTL the engine read at t */
    {"", "ma c\r\n", {.rc = MC_META_RC_NF}, "NF\r\n", NULL},
    {"", "ma c q k\r\n", {.rc = MC_META_RC_NF}, "NF kc\r\n", NULL},
    {"", "ma c N0 J10 v t c\r\n", {.rc = OK_, .created = true, .vlen = 2, .cas = 1, .ttl = NEVER},
     "VA 2 t-1 c1\r\n", "10"},
    {"", "ma c t N1000 v\r\n", {.rc = OK_, .created = true, .vlen = 1, .cas = 1, .ttl = NEVER},
     "VA 1 t-1\r\n", "0"},
    {"", "ma c N1000 t v\r\n", {.rc = OK_, .created = true, .vlen = 1, .cas = 1, .ttl = 1000},
     "VA 1 t1000\r\n", "0"},
    {"ma c N0 J10\r\n", "ma c MD D20 v t c\r\n", {.rc = OK_, .vlen = 1, .cas = 2, .ttl = NEVER},
     "VA 1 t-1 c2\r\n", "0"},
    {"ma c N0\r\n", "ma c q v\r\n", {.rc = OK_, .vlen = 1, .cas = 2, .ttl = NEVER}, "", NULL},
    {"", "ma c N0 q\r\n", {.rc = OK_, .created = true, .vlen = 1, .cas = 1, .ttl = NEVER}, "HD\r\n", NULL},
    {"", "ma c N0 q v k\r\n", {.rc = OK_, .created = true, .vlen = 1, .cas = 1, .ttl = NEVER},
     "VA 1 kc\r\n", "0"},
    {"ma c N0\r\n", "ma c C99 q k O1 v t c\r\n", {.rc = MC_META_RC_EX}, "EX kc O1\r\n", NULL},
    {"", "ma YWJj b v k O1\r\n", {.rc = MC_META_RC_NF}, "NF kYWJj b O1\r\n", NULL},
    {"ma c N0\r\n", "ma c t T1000\r\n", {.rc = OK_, .vlen = 1, .cas = 2, .ttl = NEVER}, "HD t-1\r\n", NULL},
    {"ma c N0\r\n", "ma c T1000 t\r\n", {.rc = OK_, .vlen = 1, .cas = 2, .ttl = 1000}, "HD t1000\r\n", NULL},
    {"ma c N0\r\n", "ma c N1000 t\r\n", {.rc = OK_, .vlen = 1, .cas = 2, .ttl = NEVER}, "HD t-1\r\n", NULL},
    {"ma c N0\r\n", "ma c " OPQ " v\r\n", {.rc = OK_, .vlen = 1, .cas = 2, .ttl = NEVER},
     "CLIENT_ERROR opaque token too long\r\n", NULL},
    {"ma c N0\r\n", "ma c T1000 " OPQ " q\r\n", {.rc = OK_, .vlen = 1, .cas = 2, .ttl = 1000},
     "CLIENT_ERROR opaque token too long\r\n", NULL},
    {"", "ma c " OPQ "\r\n", {.rc = MC_META_RC_NF}, "CLIENT_ERROR opaque token too long\r\n", NULL},
    /* mn */
    {"", "mn\r\n", {.rc = OK_}, "MN\r\n", NULL},
};

TEST(formatter) {
    char out[MC_META_RESP_MAX];
    for (size_t i = 0; i < sizeof(fmt_rows) / sizeof(fmt_rows[0]); i++) {
        const struct fmt_row *row = &fmt_rows[i];
        struct mc_meta_req req;
        bool value;
        size_t consumed;
        if (mc_meta_parse(&req, row->line, strlen(row->line), &consumed) != MC_PARSE_OK)
            TH_FAIL("fmt row %zu \"%s\": %s", i, show(row->line, strlen(row->line)), mc_meta_err_str(req.err));
        memset(out, '#', sizeof(out));
        size_t n = mc_meta_fmt(out, sizeof(out), &req, &row->v, &value);
        if (n != strlen(row->want) || memcmp(out, row->want, n) != 0)
            TH_FAIL("fmt row %zu \"%s\": got \"%s\"", i, show(row->line, strlen(row->line)), show(out, n));
        if (value != (row->value != NULL))
            TH_FAIL("fmt row %zu \"%s\": send_value %d", i, show(row->line, strlen(row->line)), value);
        /* The late opaque error is the line exactly when mc_meta_late_error() says so. */
        bool late = strncmp(row->want, "CLIENT_ERROR", 12) == 0;
        if (late != (mc_meta_late_error(&req) >= 0))
            TH_FAIL("fmt row %zu: mc_meta_late_error %d", i, mc_meta_late_error(&req));
        /* A buffer one byte short writes nothing usable. */
        if (n > 0 && mc_meta_fmt(out, n - 1, &req, &row->v, &value) != 0)
            TH_FAIL("fmt row %zu: fits in %zu bytes", i, n - 1);
    }
}

/* The t of a TTL in the past: the low 32 bits, unsigned, as memcached prints it. */
TEST(formatter_past_ttl) {
    char out[MC_META_RESP_MAX];
    struct mc_meta_req req;
    size_t consumed;
    struct mc_meta_item_view v = {.rc = OK_, .vlen = 1, .ttl = -241};
    ASSERT_EQ(mc_meta_parse(&req, S("mg k T-1 t\r\n"), &consumed), MC_PARSE_OK);
    size_t n = mc_meta_fmt(out, sizeof(out), &req, &v, NULL);
    ASSERT_EQ(n, strlen("HD t4294967055\r\n"));
    ASSERT_MEM(out, "HD t4294967055\r\n", n);
}

/* The longest answers fit in MC_META_RESP_MAX. */
TEST(formatter_longest) {
    static char line[1024];
    char out[MC_META_RESP_MAX];
    size_t o = 0;
    /* 248 bytes that decode to 186, every value at its widest. */
    o += (size_t)snprintf(line, sizeof(line), "mg ");
    for (int i = 0; i < 248; i++)
        line[o++] = "/+"[i % 2];
    o += (size_t)snprintf(line + o, sizeof(line) - o, " b v s t c f l h k " O31 " N1 R1 T1 u q\r\n");
    struct mc_meta_req req;
    size_t consumed;
    ASSERT_EQ(mc_meta_parse(&req, line, o, &consumed), MC_PARSE_OK);
    ASSERT_EQ(req.key.len, 186);
    struct mc_meta_item_view v = {.rc = OK_, .vlen = UINT32_MAX, .client_flags = UINT32_MAX,
                                  .la = UINT32_MAX, .cas = UINT64_MAX, .ttl = -1,
                                  .token_sent = true, .stale = true, .key_binary = true};
    size_t n = mc_meta_fmt(out, sizeof(out), &req, &v, NULL);
    ASSERT(n > 350 && n < MC_META_RESP_MAX);
    ASSERT_MEM(out + n - 6, " Z X\r\n", 6);
}

struct me_row {
    const char *setup;
    const char *line;
    struct mc_meta_me_view v;
    const char *want;
};

static const struct me_row me_rows[] = {
    {"ms mek 2 T0\r\nab\r\n", "me mek\r\n",
     {.hit = true, .ttl = NEVER, .cas = 1, .cls = 1, .size = 64},
     "ME mek exp=-1 la=0 cas=1 fetch=no cls=1 size=64\r\n"},
    {"ms mek 2 T0\r\nab\r\nmg mek\r\n", "me bWVr b\r\n",
     {.hit = true, .ttl = NEVER, .cas = 1, .cls = 1, .size = 64, .fetched = true},
     "ME mek exp=-1 la=0 cas=1 fetch=yes cls=1 size=64\r\n"},
    {"ms YWJj 1 b\r\nA\r\n", "me abc\r\n",
     {.hit = true, .key_binary = true, .ttl = NEVER, .cas = 1, .cls = 1, .size = 63},
     "ME YWJj exp=-1 la=0 cas=1 fetch=no cls=1 size=63\r\n"},
    {"ms mek 2 T100\r\nab\r\n", "me mek\r\n",
     {.hit = true, .ttl = 100, .cas = 1, .cls = 1, .size = 64},
     "ME mek exp=-100 la=0 cas=1 fetch=no cls=1 size=64\r\n"},
    {"", "me nope\r\n", {.hit = false}, "EN\r\n"},
};

TEST(formatter_me) {
    char out[MC_META_RESP_MAX];
    for (size_t i = 0; i < sizeof(me_rows) / sizeof(me_rows[0]); i++) {
        struct mc_meta_req req;
        size_t consumed;
        ASSERT_EQ(mc_meta_parse(&req, me_rows[i].line, strlen(me_rows[i].line), &consumed), MC_PARSE_OK);
        size_t n = mc_meta_fmt_me(out, sizeof(out), &req, &me_rows[i].v);
        if (n != strlen(me_rows[i].want) || memcmp(out, me_rows[i].want, n) != 0)
            TH_FAIL("me row %zu: got \"%s\"", i, show(out, n));
    }
    /* exp of an item past its time, and of one a whole 32-bit wrap away. */
    struct mc_meta_req req;
    size_t consumed;
    ASSERT_EQ(mc_meta_parse(&req, S("me k\r\n"), &consumed), MC_PARSE_OK);
    struct mc_meta_me_view v = {.hit = true, .ttl = -5, .la = UINT32_MAX, .cas = UINT64_MAX,
                                .cls = 63, .size = UINT64_MAX};
    size_t n = mc_meta_fmt_me(out, sizeof(out), &req, &v);
    const char *want = "ME k exp=5 la=4294967295 cas=18446744073709551615 fetch=no cls=63 "
                       "size=18446744073709551615\r\n";
    ASSERT_EQ(n, strlen(want));
    ASSERT_MEM(out, want, n);
    v.ttl = (int64_t)1 << 31;
    n = mc_meta_fmt_me(out, sizeof(out), &req, &v);
    ASSERT_MEM(out, "ME k exp=-2147483648 ", 21);
}

int main(void) {
    return RUN_TESTS();
}
