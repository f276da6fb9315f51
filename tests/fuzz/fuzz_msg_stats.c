/*
 * fuzz_msg_stats.c -- mutation fuzzer for the replies to `stats`, as
 * libcellar reads them: each wire's parse of a MSG_STATS reply and its
 * stat_next(), which cellar_server_stats() walks to hand each statistic
 * to the caller (client.c's call_done).
 *
 *   fuzz_msg_stats N        N mutated inputs from a fixed seed
 *   fuzz_msg_stats N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target.  The run itself
 * (rng, mutations, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h; the
 * corpus is the stats replies of test_msg_text.c and test_msg_bin.c
 * (observed from memcached 1.6.18) and a few more of its groups.
 *
 * Each input is read as the reply to `stats` on the text wire, the meta
 * and ascii wires (which send the text command and read its text reply)
 * and the binary wire (with the input's own opaque, or now and then
 * another), from an exact-size heap copy, and must keep:
 *   - the result is OK, NEED_MORE or ERROR; consumed <= len; NEED_MORE and
 *     ERROR consume nothing; meta and ascii agree with text exactly;
 *   - text: OK is STATS (the lines before an "END" line, which ends what
 *     was consumed), OK (one RESET or OK line) or an error (one ERROR,
 *     CLIENT_ERROR or SERVER_ERROR line, its message inside it); each
 *     line of a STATS value reads as STAT or another line to the reply
 *     codec, and stat_next() gives one statistic a line: a STAT line's
 *     name and value ("STAT <name> <value>"), another line whole;
 *   - binary: the result is the one an independent walk of the packets
 *     gives (magic, opcode 0x10, opaque, keylen + extlen <= bodylen, every
 *     body there; a failure status only in the first packet; the packet
 *     with neither key nor body ends the reply), and stat_next() gives the
 *     key and value of each packet before the last;
 *   - every span lies inside the consumed bytes (a message may instead be
 *     one of the binary wire's fixed texts); every strict prefix of an OK
 *     reply is NEED_MORE (all of a short one, eight and the last few of a
 *     long one); bytes behind an OK or ERROR change nothing.
 */
#include "protocol/mc_text_resp.h"
#include "protocol/msg.h"

#define FUZZ_CAP 10000          /* past MC_RESP_LINE_MAX */
#include "fuzz_driver.h"

static const struct msg stats_msg = {.op = MSG_STATS, .key = {"", 0}};

static long seen_text[4], seen_bin[4], seen_text_stats, seen_bin_stats, seen_walked;

static bool inside(struct mc_span s, const char *lo, size_t n) {
    return s.len == 0 || (s.p >= lo && s.p + s.len <= lo + n);
}

static bool same_span(struct mc_span a, const char *abuf, struct mc_span b, const char *bbuf) {
    return a.len == b.len && (a.len == 0 || a.p - abuf == b.p - bbuf);
}

static bool same(const struct msg_reply *a, const char *abuf, const struct msg_reply *b,
                 const char *bbuf) {
    return a->res == b->res && same_span(a->value, abuf, b->value, bbuf) &&
           (same_span(a->msg, abuf, b->msg, bbuf) ||
            (a->msg.p == b->msg.p && a->msg.len == b->msg.len));
}

static bool starts(const char *p, size_t n, const char *lit) {
    size_t k = strlen(lit);
    return n >= k && memcmp(p, lit, k) == 0;
}

static uint32_t be32(const unsigned char *u) {
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

/* parse on a copy of exactly n bytes (freed by the caller). */
static enum mc_parse parse_copy(const struct msg_wire *w, uint32_t opaque, const char *in,
                                size_t n, struct msg_reply *r, size_t *consumed, char **copy) {
    *copy = malloc(n ? n : 1);
    memcpy(*copy, in, n);
    *consumed = 777;
    return w->parse(r, &stats_msg, opaque, *copy, n, consumed);
}

/*
 * The cuts of an n-byte reply tried: every one of a short reply; of a long
 * one, eight spread over it and the last four (each cut parses the whole
 * reply again, and a stats reply runs to many lines).
 */
static size_t next_cut(size_t cut, size_t n) {
    size_t step = n <= 64 ? 1 : n / 8 + 1;
    if (cut + 4 >= n)
        return cut + 1;
    return cut + step < n - 4 ? cut + step : n - 4;
}

/* Strict prefixes wait; the same bytes with more behind read the same. */
static void check_framing(const struct msg_wire *w, uint32_t opaque, const char *b, size_t len,
                          enum mc_parse rc, const struct msg_reply *r, size_t consumed,
                          const char *behind, size_t nbehind) {
    if (rc == MC_PARSE_OK) {
        for (size_t cut = 0; cut < consumed; cut = next_cut(cut, consumed)) {
            struct msg_reply r2;
            size_t c2 = 5;
            CHECK(w->parse(&r2, &stats_msg, opaque, b, cut, &c2) == MC_PARSE_NEED_MORE && c2 == 0);
        }
    }
    if (rc == MC_PARSE_NEED_MORE)
        return;
    char *more = malloc(len + nbehind);
    memcpy(more, b, len);
    memcpy(more + len, behind, nbehind);
    struct msg_reply r2;
    size_t c2 = 5;
    CHECK(w->parse(&r2, &stats_msg, opaque, more, len + nbehind, &c2) == rc && c2 == consumed);
    if (rc == MC_PARSE_OK)
        CHECK(same(r, b, &r2, more));
    free(more);
}

/* ---------------------------------------------------------------------- */
/* Text (and meta, ascii)                                                   */
/* ---------------------------------------------------------------------- */

/* The lines of a STATS value, each checked against the reply codec and stat_next(). */
static void walk_text(struct mc_span value) {
    struct mc_span rest = value, name, val;
    const char *p = value.p, *end = value.p + value.len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        CHECK(nl != NULL);                      /* the value is whole lines */
        size_t ll = (size_t)(nl - p) + 1, body = ll - 1;
        while (body && p[body - 1] == '\r')     /* stat_next drops every CR before the LF */
            body--;
        struct mc_resp e;
        size_t n = 0;
        CHECK(mc_text_parse_resp(&e, p, ll, &n) == MC_PARSE_OK && n == ll);
        CHECK(e.kind == MC_RESP_STAT || e.kind == MC_RESP_OTHER);

        CHECK(msg_text_stat_next(&rest, &name, &val));
        CHECK(inside(name, p, body) && inside(val, p, body));
        CHECK(memchr(name.p, '\n', name.len) == NULL && memchr(val.p, '\n', val.len) == NULL);
        if (body > 5 && memcmp(p, "STAT ", 5) == 0) {
            /* "STAT " name [" " value]: the name holds no space */
            CHECK(name.p == p + 5 && memchr(name.p, ' ', name.len) == NULL);
            if (val.len)
                CHECK(val.p == name.p + name.len + 1 && val.p + val.len == p + body);
            else
                CHECK(name.p + name.len == p + body || name.p + name.len + 1 == p + body);
            /* as the reply codec reads a well-formed line: one space each side of the
               name, no space at either end of the value, one CR LF or LF */
            if (e.kind == MC_RESP_STAT && body + 2 >= ll && name.len > 0 &&
                (val.len == 0 || (val.p[0] != ' ' && val.p[val.len - 1] != ' ')))
                CHECK(same_span(name, p, e.key, p) && same_span(val, p, e.msg, p));
        } else {
            CHECK(name.p == p && name.len == body && val.len == 0);
        }
        seen_walked++;
        p += ll;
    }
    CHECK(!msg_text_stat_next(&rest, &name, &val));
}

static void check_text(const char *in, size_t len) {
    struct msg_reply r;
    size_t consumed;
    char *b;
    enum mc_parse rc = parse_copy(&msg_wire_text, 0, in, len, &r, &consumed, &b);

    CHECK(rc == MC_PARSE_OK || rc == MC_PARSE_NEED_MORE || rc == MC_PARSE_ERROR);
    CHECK(consumed <= len);
    seen_text[rc]++;
    if (rc != MC_PARSE_OK)
        CHECK(consumed == 0);

    /* The meta and ascii wires read the same text. */
    const struct msg_wire *const others[] = {&msg_wire_meta, &msg_wire_ascii};
    for (size_t i = 0; i < 2; i++) {
        struct msg_reply r2;
        size_t c2 = 777;
        CHECK(others[i]->parse(&r2, &stats_msg, 0, b, len, &c2) == rc && c2 == consumed);
        if (rc == MC_PARSE_OK)
            CHECK(same(&r, b, &r2, b));
    }

    if (rc == MC_PARSE_OK) {
        CHECK(consumed > 0 && b[consumed - 1] == '\n');
        const char *last = b + consumed - 1;    /* the last line's start */
        while (last > b && last[-1] != '\n')
            last--;
        size_t nlast = (size_t)(b + consumed - last);
        CHECK(inside(r.value, b, consumed) && inside(r.msg, last, nlast));
        switch (r.res) {
        case MSG_RES_STATS:
            CHECK(r.value.len == 0 || r.value.p == b);
            CHECK(r.value.len == (size_t)(last - b));
            CHECK(starts(last, nlast, "END") && (nlast == 4 || (nlast == 5 && last[3] == '\r')));
            walk_text(r.value);
            seen_text_stats++;
            break;
        case MSG_RES_OK:
            CHECK(last == b && (starts(b, consumed, "RESET") || starts(b, consumed, "OK")));
            break;
        case MSG_RES_ERROR:
        case MSG_RES_CLIENT_ERROR:
        case MSG_RES_SERVER_ERROR:
            CHECK(last == b);
            CHECK(starts(b, consumed, r.res == MSG_RES_ERROR          ? "ERROR"
                                      : r.res == MSG_RES_CLIENT_ERROR ? "CLIENT_ERROR"
                                                                      : "SERVER_ERROR"));
            break;
        default:
            CHECK(!"a stats reply read as another answer");
        }
    }
    check_framing(&msg_wire_text, 0, b, len, rc, &r, consumed, "STAT x 1\r\nEND\r\n", 15);
    free(b);
}

/* ---------------------------------------------------------------------- */
/* Binary                                                                   */
/* ---------------------------------------------------------------------- */

/*
 * An independent walk of a binary STAT reply: the result, and for OK what
 * it consumes, where the statistics end and how many packets they are.
 */
struct bin_model {
    enum mc_parse rc;
    size_t consumed, value_len;
    unsigned nstats;
    uint16_t status;
};

static struct bin_model bin_model(const unsigned char *u, size_t len, uint32_t opaque) {
    struct bin_model m = {.rc = MC_PARSE_NEED_MORE};
    for (size_t off = 0;;) {
        if (len - off < 24)
            return m;
        const unsigned char *h = u + off;
        uint32_t body = be32(h + 8), ek = (uint32_t)h[4] + (uint32_t)(h[2] << 8 | h[3]);
        if (h[0] != 0x81 || h[1] != 0x10 || be32(h + 12) != opaque || ek > body) {
            m.rc = MC_PARSE_ERROR;
            return m;
        }
        if (len - off - 24 < body)
            return m;
        uint16_t status = (uint16_t)(h[6] << 8 | h[7]);
        if (status != 0) {
            /* a failure answers alone: first, with no key or extras (an unknown group may) */
            m.rc = off == 0 && (status == 1 || ek == 0) ? MC_PARSE_OK : MC_PARSE_ERROR;
            m.consumed = 24 + (size_t)body;
            m.status = status;
            return m;
        }
        if (body == 0 && (h[2] << 8 | h[3]) == 0) {
            m.rc = MC_PARSE_OK;
            m.value_len = off;
            m.consumed = off + 24;
            return m;
        }
        m.nstats++;
        off += 24 + (size_t)body;
    }
}

static void check_bin(const char *in, size_t len) {
    const unsigned char *u = (const unsigned char *)in;
    uint32_t opaque = len >= 16 && fuzz_rnd() % 8 ? be32(u + 12) : (uint32_t)fuzz_rnd();
    struct msg_reply r;
    size_t consumed;
    char *b;
    enum mc_parse rc = parse_copy(&msg_wire_bin, opaque, in, len, &r, &consumed, &b);
    struct bin_model want = bin_model(u, len, opaque);

    CHECK(rc == want.rc);
    CHECK(consumed <= len);
    seen_bin[rc]++;
    if (rc != MC_PARSE_OK) {
        CHECK(consumed == 0);
    } else if (want.status != 0) {
        CHECK(consumed == want.consumed);
        if (want.status == 1)                   /* no such group */
            CHECK(r.res == MSG_RES_ERROR);
        CHECK(r.res == MSG_RES_ERROR || r.res == MSG_RES_CLIENT_ERROR ||
              r.res == MSG_RES_SERVER_ERROR);
        CHECK(r.value.len == 0);
        CHECK(inside(r.msg, b + 24, consumed - 24) || r.msg.p < b || r.msg.p >= b + len);
    } else {
        CHECK(consumed == want.consumed && r.res == MSG_RES_STATS);
        CHECK(r.value.len == want.value_len && (r.value.len == 0 || r.value.p == b));
        /* stat_next: each packet's key and value, in order, then nothing. */
        struct mc_span rest = r.value, name, val;
        const char *p = b;
        for (unsigned i = 0; i < want.nstats; i++) {
            const unsigned char *h = (const unsigned char *)p;
            size_t kl = (size_t)(h[2] << 8 | h[3]), el = h[4], body = be32(h + 8);
            CHECK(msg_wire_bin.stat_next(&rest, &name, &val));
            CHECK(name.len == kl && (kl == 0 || name.p == p + 24 + el));
            CHECK(val.len == body - kl - el && (val.len == 0 || val.p == p + 24 + el + kl));
            p += 24 + body;
            seen_walked++;
        }
        CHECK(!msg_wire_bin.stat_next(&rest, &name, &val));
        seen_bin_stats++;
    }
    static const char behind[24] = {(char)0x81, 0x10};
    check_framing(&msg_wire_bin, opaque, b, len, rc, &r, consumed, behind, sizeof(behind));
    free(b);
}

static void check_one(const char *in, size_t len) {
    check_text(in, len);
    check_bin(in, len);
}

/* ---------------------------------------------------------------------- */
/* Corpus and mutations                                                     */
/* ---------------------------------------------------------------------- */

#define C(x) FUZZ_ENTRY(x)

/* A binary STAT packet's header: keylen kl, bodylen bl, opaque 9, status st. */
#define BIN_HDR(kl, bl, st) \
    "\x81\x10\x00" kl "\x00\x00\x00" st "\x00\x00\x00" bl "\x00\x00\x00\x09" \
    "\x00\x00\x00\x00\x00\x00\x00\x00"
#define BIN_END BIN_HDR("\x00", "\x00", "\x00")

static const struct fuzz_entry corpus[] = {
    /* test_msg_text.c: stats settings (cut), detail dump, reset, detail on, unknown group */
    C("STAT maxbytes 67108864\r\nSTAT maxconns 1024\r\nEND\r\n"),
    C("END\r\n"),
    C("RESET\r\n"),
    C("OK\r\n"),
    C("ERROR\r\n"),
    C("STAT a 1\r\nSTORED\r\n"),
    /* more of memcached 1.6.18's groups */
    C("STAT pid 4242\r\nSTAT uptime 10\r\nSTAT time 1700000000\r\nSTAT version 1.6.18\r\n"
      "STAT libevent 2.1.12-stable\r\nSTAT rusage_user 0.010000\r\nSTAT curr_items 0\r\n"
      "STAT hash_is_expanding 0\r\nEND\r\n"),
    C("STAT items:1:number 3\r\nSTAT items:1:age 12\r\nSTAT items:1:evicted 0\r\nEND\r\n"),
    C("STAT 1:chunk_size 96\r\nSTAT 1:chunks_per_page 10922\r\nSTAT active_slabs 1\r\n"
      "STAT total_malloced 1048576\r\nEND\r\n"),
    C("STAT 96 3\r\nEND\r\n"),
    C("STAT evictions on\r\nSTAT growth_factor 1.25\r\nSTAT item_size_max 1048576\r\n"
      "STAT ext_path \r\nEND\r\n"),
    C("ITEM k [5 b; 0 s]\r\nITEM other [1 b; 1700000000 s]\r\nEND\r\n"),
    C("PREFIX user get 2 hit 1 set 1 del 0\r\nEND\r\n"),
    C("STAT conn_yields 0\nSTAT x\nEND\n"),
    C("CLIENT_ERROR bad command line format\r\n"),
    C("SERVER_ERROR out of memory\r\n"),
    C("STAT a 1\r\nEND\r\nSTAT b 2\r\nEND\r\n"),
    C("STAT a 1\r\nVALUE k 0 1\r\nx\r\nEND\r\n"),
    C("STAT  a  1 \r\nSTAT\r\nSTAT \r\nEND\r\n"),
    /* test_msg_bin.c: reset (the terminator alone), unknown group, detail dump */
    C(BIN_END),
    C("\x81\x10\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x00\x00\x00\x09"
      "\x00\x00\x00\x00\x00\x00\x00\x00Not found"),
    C(BIN_HDR("\x08", "\x0d", "\x00") "detailedEND\r\n" BIN_END),
    /* a general reply, and failures of other kinds */
    C(BIN_HDR("\x03", "\x07", "\x00") "pid4242" BIN_HDR("\x06", "\x08", "\x00") "uptime10"
      BIN_HDR("\x07", "\x0c", "\x00") "version1.6.1" BIN_END),
    C(BIN_HDR("\x00", "\x05", "\x00") "empty" BIN_END),
    C("\x81\x10\x00\x00\x00\x00\x00\x82\x00\x00\x00\x0d\x00\x00\x00\x09"
      "\x00\x00\x00\x00\x00\x00\x00\x00Out of memory"),
    C("\x81\x10\x00\x00\x00\x00\x00\x04\x00\x00\x00\x11\x00\x00\x00\x09"
      "\x00\x00\x00\x00\x00\x00\x00\x00Invalid arguments"),
    C("\x81\x10\x00\x01\x04\x00\x00\x00\x00\x00\x00\x06\x00\x00\x00\x09"
      "\x00\x00\x00\x00\x00\x00\x00\x00xxxxkv" BIN_END),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static const char *const words[] = {
    "STAT ", "STAT x 1\r\n", "END", "END\r\n", "RESET", "OK", "ERROR", "CLIENT_ERROR",
    "SERVER_ERROR", "ITEM", "VALUE k 0 1\r\n", "items:1:number", "0", "1", "-1",
    "18446744073709551615", "\r\n", "\n", "\r", " ", "  ", "",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const size_t run_sizes[] = {100, 250, 1000, 8190, 8191, 8192, 9000};

static void put32(char *b, uint32_t v) {
    b[0] = (char)(v >> 24), b[1] = (char)(v >> 16), b[2] = (char)(v >> 8), b[3] = (char)v;
}

/* The offsets of the whole packets at the start of b (at most 64 of them). */
static size_t packets(const char *b, size_t len, size_t *at) {
    size_t n = 0;
    for (size_t off = 0; n < 64 && len - off >= 24;) {
        size_t next = off + 24 + be32((const unsigned char *)b + off + 8);
        if (next > len || next <= off)
            break;
        at[n++] = off;
        off = next;
    }
    return n;
}

/*
 * The binary mutations: a header field of one packet set to a value a
 * reply may plausibly hold (the input resized to what the bodylen now
 * says, or one off), a stat packet inserted, a packet dropped.
 */
static size_t mutate_bin(char *b, size_t len) {
    static const unsigned statuses[] = {0x00, 0x01, 0x04, 0x81, 0x82, 0xffff};
    size_t at[64], n = packets(b, len, at);
    if (n == 0)
        return fuzz_flip_bit(b, len);
    size_t k = fuzz_below(n), p = at[k];
    unsigned char *h = (unsigned char *)b + p;
    uint32_t kl = (uint32_t)(h[2] << 8 | h[3]), el = h[4], body = be32(h + 8);
    switch (fuzz_rnd() % 8) {
    case 0:
        h[1] = fuzz_rnd() % 4 ? 0x10 : (unsigned char)fuzz_rnd();
        return len;
    case 1: {
        unsigned st = statuses[fuzz_below(sizeof(statuses) / sizeof(statuses[0]))];
        h[6] = (unsigned char)(st >> 8), h[7] = (unsigned char)st;
        return len;
    }
    case 2:
        h[2] = 0, h[3] = (unsigned char)fuzz_below(body + 2 < 40 ? body + 2 : 40);
        return len;
    case 3:
        h[4] = (unsigned char)(fuzz_rnd() % 3 ? 0 : fuzz_below(9));
        return len;
    case 4: { /* bodylen: the rest of the packet grows or shrinks to it */
        uint32_t nb = fuzz_rnd() % 8 ? kl + el + (uint32_t)fuzz_below(20)
                                     : (uint32_t)fuzz_rnd();
        size_t end = p + 24 + body, nend = p + 24 + (size_t)nb;
        if (nend > FUZZ_CAP || len - end > FUZZ_CAP - nend)
            return len;
        memmove(b + nend, b + end, len - end);
        if (nend > end)
            memset(b + end, 'v', nend - end);
        put32(b + p + 8, nb);
        return len - end + nend;
    }
    case 5: { /* a stat packet before this one */
        char pkt[24 + 12];
        memcpy(pkt, b + p, 24);
        pkt[2] = 0, pkt[3] = 4, pkt[4] = 0, pkt[6] = 0, pkt[7] = 0;
        put32(pkt + 8, 12);
        memcpy(pkt + 24, "nameval:1234", 12);
        return fuzz_insert(b, len, p, pkt, sizeof(pkt));
    }
    case 6: { /* drop this packet */
        size_t end = p + 24 + body;
        memmove(b + p, b + end, len - end);
        return len - (end - p);
    }
    default:
        h[12 + fuzz_below(4)] = (unsigned char)fuzz_rnd();
        return len;
    }
}

static size_t mutate(char *b, size_t len) {
    if (len && (unsigned char)b[0] == 0x81 && fuzz_rnd() % 4)
        return mutate_bin(b, len);
    return fuzz_mutate_line(b, len);
}

static void report(long iters) {
    printf("fuzz_msg_stats: %ld inputs; text: ok %ld (stats %ld), need_more %ld, error %ld; "
           "binary: ok %ld (stats %ld), need_more %ld, error %ld; %ld statistics walked; "
           "all invariants held\n",
           iters, seen_text[MC_PARSE_OK], seen_text_stats, seen_text[MC_PARSE_NEED_MORE],
           seen_text[MC_PARSE_ERROR], seen_bin[MC_PARSE_OK], seen_bin_stats,
           seen_bin[MC_PARSE_NEED_MORE], seen_bin[MC_PARSE_ERROR], seen_walked);
}

static const struct fuzz_config cfg = {
    .name = "fuzz_msg_stats",
    .check = check_one,
    .report = report,
    .seed = 0x57a75eed0b1e55edULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 4,
    .random_max = 200,
    .mutate = mutate,
    .words = words,
    .nwords = NWORDS,
    .interesting = FUZZ_ENTRY(" \r\n\x81\x10\x01:ESTA"),
    .run_sizes = run_sizes,
    .nrun_sizes = sizeof(run_sizes) / sizeof(run_sizes[0]),
    .run_fill = " ss",
};

FUZZ_DRIVER(&cfg)
