/*
 * fuzz_squeal.c -- mutation fuzzer for what cellar-squeal decodes from
 * PostgreSQL (src/squeal/pgout.c): the replication stream's CopyData
 * messages, the pgoutput messages inside them, the keys of a logical
 * message's content, and the text of pg_current_snapshot().
 *
 *   fuzz_squeal N        N mutated inputs from a fixed seed
 *   fuzz_squeal N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target.  The run itself
 * (rng, mutations, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h; the
 * corpus is test_pgout.c's messages and snapshots.
 *
 * Each input is read, from an exact-size heap copy, as a CopyData message
 * (and an XLogData's payload as pgoutput), as a pgoutput message itself,
 * and, up to its first NUL, as a snapshot, and must keep:
 *   - CopyData: 'w' of 25 bytes or more and 'k' of 18 or more are read,
 *     their fields where the protocol puts them, the payload the rest;
 *     anything else is refused;
 *   - pgoutput: B of 21 bytes or more, C of 26 or more, and M whose prefix
 *     ends with a NUL and whose length field counts exactly the bytes
 *     after it are read, fields as the layout says, prefix and content
 *     inside the message; a shorter B, C or M is refused, other kinds read
 *     as their letter;
 *   - keys: pgo_next_key() walks the content to its end, each word once,
 *     in order, split at spaces, tabs, CRs and LFs; a word is refused
 *     exactly when it is longer than 250 bytes or holds a control byte;
 *   - snapshots: "xmin:xmax:xip,..." is read as an independent reading
 *     here reads it, and whether an xid is running is answered as that
 *     reading says (ids compared by their low 32 bits, modulo 2^32);
 *     pg_snapshot_xmin() agrees with it;
 *   - an LSN prints as "X/Y" and reads back the same.
 */
#include "squeal/pgout.h"

#include "fuzz_driver.h"

#include <inttypes.h>

static uint64_t be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool inside(const char *p, size_t n, const char *lo, size_t len) {
    return n == 0 || (p >= lo && p + n <= lo + len);
}

static bool is_sep(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static long seen_copy[2], seen_kind[4], seen_keys, seen_bad_keys, seen_snapshots;

static void check_lsn(uint64_t lsn) {
    char s[20];
    memset(s, 'x', sizeof(s));
    pg_lsn_str(lsn, s);
    CHECK(memchr(s, '\0', sizeof(s)) != NULL);
    unsigned hi, lo;
    CHECK(sscanf(s, "%X/%X", &hi, &lo) == 2 && ((uint64_t)hi << 32 | lo) == lsn);
}

/* The keys of a content: every word once, refused exactly when it is no memcache key. */
static void check_keys(const char *content, size_t n) {
    size_t pos = 0, words = 0, bytes = 0;
    const char *k;
    size_t nk;
    bool bad;
    while (pgo_next_key(content, n, &pos, &k, &nk, &bad) == 1) {
        CHECK(pos <= n && k >= content && k < content + pos);
        size_t start = (size_t)(k - content), len = pos - start;
        CHECK(len >= 1 && (pos == n || is_sep(content[pos])));
        CHECK(start == 0 || is_sep(content[start - 1]));
        bool ctl = false;
        for (size_t i = start; i < pos; i++) {
            unsigned char c = (unsigned char)content[i];
            CHECK(!is_sep((char)c));
            ctl |= c < 0x20 || c == 0x7f;
        }
        CHECK(bad == (ctl || len > 250));
        CHECK(nk == (bad ? 0 : len));
        words++;
        bytes += len;
        seen_keys++;
        seen_bad_keys += bad;
        CHECK(words <= n);
    }
    CHECK(pos == n);
    size_t want = 0;                    /* the bytes that are no separator */
    for (size_t i = 0; i < n; i++)
        want += !is_sep(content[i]);
    CHECK(bytes == want);
}

/* A pgoutput message at p[0..n). */
static void check_pgo(const char *p, size_t n) {
    const unsigned char *u = (const unsigned char *)p;
    struct pgo_msg m;
    int rc = pgo_parse(p, n, &m);
    CHECK(rc == 0 || rc == -1);
    if (n == 0) {
        CHECK(rc == -1);
        return;
    }
    CHECK(m.kind == p[0]);
    switch (p[0]) {
    case 'B':
        CHECK(rc == (n >= 21 ? 0 : -1));
        if (rc == 0) {
            CHECK(m.lsn == be64(u + 1) && m.ts == (int64_t)be64(u + 9) && m.xid == be32(u + 17));
            check_lsn(m.lsn);
            seen_kind[0]++;
        }
        break;
    case 'C':
        CHECK(rc == (n >= 26 ? 0 : -1));
        if (rc == 0) {
            CHECK(m.lsn == be64(u + 2) && m.end_lsn == be64(u + 10) &&
                  m.ts == (int64_t)be64(u + 18));
            check_lsn(m.end_lsn);
            seen_kind[1]++;
        }
        break;
    case 'M': {
        const char *nul = n > 10 ? memchr(p + 10, '\0', n - 10) : NULL;
        size_t after = nul ? n - (size_t)(nul + 1 - p) : 0;
        bool ok = nul != NULL && after >= 4 && be32((const unsigned char *)nul + 1) == after - 4;
        CHECK(rc == (ok ? 0 : -1));
        if (rc == 0) {
            CHECK(m.transactional == ((u[1] & 1) != 0) && m.lsn == be64(u + 2));
            CHECK(m.prefix == p + 10 && m.content == nul + 5 && m.ncontent == after - 4);
            CHECK(inside(m.content, m.ncontent, p, n));
            check_keys(m.content, m.ncontent);
            seen_kind[2]++;
        }
        break;
    }
    default:
        CHECK(rc == 0);
        seen_kind[3]++;
    }
}

/* A CopyData message at buf[0..n). */
static void check_copy(const char *buf, size_t n) {
    const unsigned char *u = (const unsigned char *)buf;
    struct pg_copy cp;
    int rc = pg_copy_parse(buf, n, &cp);
    bool w = n >= 25 && buf[0] == 'w', k = n >= 18 && buf[0] == 'k';
    CHECK(rc == (w || k ? 0 : -1));
    if (rc != 0)
        return;
    CHECK(cp.kind == buf[0]);
    if (w) {
        CHECK(cp.wal_start == be64(u + 1) && cp.wal_end == be64(u + 9));
        CHECK(cp.payload == buf + 25 && cp.npayload == n - 25);
        check_pgo(cp.payload, cp.npayload);
    } else {
        CHECK(cp.wal_end == be64(u + 1) && cp.reply_requested == (buf[17] != 0));
        CHECK(cp.payload == NULL && cp.npayload == 0);
    }
    seen_copy[w ? 0 : 1]++;
}

/* ---------------------------------------------------------------------- */
/* Snapshots, read again here                                               */
/* ---------------------------------------------------------------------- */

/* One id at *p: digits whose value fits in 64 bits. */
static bool model_id(const char **p, uint64_t *out) {
    const char *q = *p;
    uint64_t v = 0;
    if (*q < '0' || *q > '9')
        return false;
    for (; *q >= '0' && *q <= '9'; q++) {
        unsigned d = (unsigned)(*q - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    *p = q;
    return true;
}

#define XIP_MAX 64

struct snap {
    uint32_t xmin, xmax, xip[XIP_MAX];
    size_t nxip;
};

/* "xmin:xmax:" then ids separated by commas; false when text is no such snapshot. */
static bool model_snapshot(const char *text, struct snap *s) {
    const char *p = text;
    uint64_t v;
    s->nxip = 0;
    if (!model_id(&p, &v) || *p++ != ':')
        return false;
    s->xmin = (uint32_t)v;
    if (!model_id(&p, &v) || *p++ != ':')
        return false;
    s->xmax = (uint32_t)v;
    if (*p == '\0')
        return true;
    for (;;) {
        if (!model_id(&p, &v) || s->nxip == XIP_MAX)
            return false;
        s->xip[s->nxip++] = (uint32_t)v;
        if (*p == '\0')
            return true;
        if (*p++ != ',')
            return false;
    }
}

static int model_running(const struct snap *s, uint32_t xid) {
    if ((int32_t)(xid - s->xmin) < 0)
        return 0;
    if ((int32_t)(xid - s->xmax) >= 0)
        return 1;
    for (size_t i = 0; i < s->nxip; i++)
        if (s->xip[i] == xid)
            return 1;
    return 0;
}

/* Does text hold an id of 20 digits or more (where 64 bits may not hold it)? */
static bool has_huge_id(const char *text) {
    size_t run = 0;
    for (const char *p = text; *p; p++) {
        run = *p >= '0' && *p <= '9' ? run + 1 : 0;
        if (run >= 20)
            return true;
    }
    return false;
}

static void check_snapshot(const char *in, size_t len) {
    char *text = malloc(len + 1);
    memcpy(text, in, len);
    text[len] = '\0';
    struct snap s = {0};
    bool valid = model_snapshot(text, &s);
    /* 20-digit ids: the reader's overflow rule is not this one's; only a refusal is compared */
    bool compare = !has_huge_id(text) && (valid || s.nxip < XIP_MAX);
    uint32_t xids[6] = {0, s.xmin, s.xmax, s.xmax - 1, (uint32_t)fuzz_rnd(), 0};
    if (valid && s.nxip)
        xids[5] = s.xip[fuzz_below(s.nxip)];
    for (size_t i = 0; i < 6; i++) {
        int r = pg_snapshot_running(text, xids[i]);
        CHECK(r == -1 || r == 0 || r == 1);
        if (compare)
            CHECK(r == (valid ? model_running(&s, xids[i]) : -1));
    }
    uint32_t xmin = 0xdeadbeef;
    int r = pg_snapshot_xmin(text, &xmin);
    CHECK(r == 0 || r == -1);
    if (compare) {
        CHECK(r == (valid ? 0 : -1));
        if (valid)
            CHECK(xmin == s.xmin);
    }
    seen_snapshots += valid;
    free(text);
}

static void check_one(const char *in, size_t len) {
    char *buf = malloc(len ? len : 1);
    memcpy(buf, in, len);
    check_copy(buf, len);
    check_pgo(buf, len);
    free(buf);
    check_snapshot(in, len);
}

/* ---------------------------------------------------------------------- */
/* Corpus and mutations                                                     */
/* ---------------------------------------------------------------------- */

#define C(x) FUZZ_ENTRY(x)
/* XLogData's header: start 0x10, end 0x20, time 12345. */
#define XLOG "w\0\0\0\0\0\0\0\x10\0\0\0\0\0\0\0\x20\0\0\0\0\0\0\x30\x39"
#define MSG_B "B\0\0\0\0\x01\x50\x53\0\0\0\0\0\0\0\x03\x09\0\0\x02\xd7"
#define MSG_C "C\0\0\0\0\0\x01\x50\x53\0\0\0\0\0\x01\x50\x53\x30\0\0\0\0\0\0\x03\x09"
#define MSG_M "M\x01\0\0\0\0\x01\x50\x52\xc0" "squeal\0\0\0\0\x0d" "user:1 user:2"
#define X50 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

static const struct fuzz_entry corpus[] = {
    /* test_pgout.c: CopyData */
    C(XLOG "B123456789012345678901"),
    C("k\0\0\0\x01\0\0\x0a\xbc\0\0\0\0\0\0\0\x01\x01"),
    C("k\0\0\0\x01\0\0\x0a\xbc\0\0\0\0\0\0\0\x01\0"),
    C("x"),
    /* a transaction as the stream carries it: B, M, C in XLogData */
    C(XLOG MSG_B),
    C(XLOG MSG_M),
    C(XLOG MSG_C),
    /* test_pgout.c: pgoutput B, C, M, an empty M, another kind */
    C(MSG_B),
    C(MSG_C),
    C(MSG_M),
    C("M\0\0\0\0\0\0\0\0\x01\0\0\0\0\0"),
    C("R\0\0"),
    C(MSG_M "x"),
    /* test_pgout.c: the keys of a content, one 251 bytes long, one with a control byte */
    C("M\x01\0\0\0\0\x01\x50\x52\xc0" "squeal\0\0\0\x02\x0e"
      "  a:1\tb:2\n\n" X50 X50 X50 X50 X50 "x bad\001key " X50 X50 X50 X50 X50 " c:3 "),
    /* test_pgout.c: snapshots, and what is no snapshot */
    C("750:760:"),
    C("750:760:750,757"),
    C("4294967296001:4294967296010:4294967296005"),
    C("4294967290:4294967300:4294967297"),
    C("750:760:x"),
    C("750:760:751,"),
    C("750:760:751;752"),
    C(":760:"),
    C("750::"),
    C("99999999999999999999999:1:"),
    C("18446744073709551615:18446744073709551615:18446744073709551615"),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static const char *const words[] = {
    "w", "k", "B", "C", "M", "R", "I", "U", "D", "\0\0\0\0", "\xff\xff\xff\xff", "squeal", " ",
    "\t", "\r\n", "\x01", "\x7f", ":", ",", "0", "4294967295", "4294967296",
    "18446744073709551615", "18446744073709551616", "",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const size_t run_sizes[] = {8, 25, 250, 251, 1000};

/* The length field of an M (wherever its prefix ends) set to its content's, or one off. */
static size_t fix_length(char *b, size_t len) {
    for (size_t at = 0; at + 10 < len; at++) {
        if (b[at] != 'M')
            continue;
        char *nul = memchr(b + at + 10, '\0', len - at - 10);
        if (nul == NULL || (size_t)(b + len - nul) < 5)
            return len;
        uint32_t n = (uint32_t)(b + len - nul - 5) + (uint32_t)(fuzz_rnd() % 8 == 0);
        nul[1] = (char)(n >> 24), nul[2] = (char)(n >> 16), nul[3] = (char)(n >> 8);
        nul[4] = (char)n;
        return len;
    }
    return len;
}

static size_t mutate(char *b, size_t len) {
    len = fuzz_mutate_line(b, len);
    return fuzz_rnd() % 2 ? fix_length(b, len) : len;
}

static void report(long iters) {
    printf("fuzz_squeal: %ld inputs (XLogData %ld, keepalives %ld; B %ld, C %ld, M %ld, other %ld; "
           "%ld keys, %ld refused; %ld snapshots), all invariants held\n",
           iters, seen_copy[0], seen_copy[1], seen_kind[0], seen_kind[1], seen_kind[2],
           seen_kind[3], seen_keys, seen_bad_keys, seen_snapshots);
}

static const struct fuzz_config cfg = {
    .name = "fuzz_squeal",
    .check = check_one,
    .report = report,
    .dump_hex = true,
    .seed = 0x5c0eea15eed0b0e5ULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 4,
    .random_max = 100,
    .mutate = mutate,
    .words = words,
    .nwords = NWORDS,
    .interesting = FUZZ_ENTRY("\0\x01\x7f :,wkBCM"),
    .run_sizes = run_sizes,
    .nrun_sizes = sizeof(run_sizes) / sizeof(run_sizes[0]),
    .run_fill = " xx",
};

FUZZ_DRIVER(&cfg)
