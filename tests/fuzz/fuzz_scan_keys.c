/*
 * fuzz_scan_keys.c -- mutation fuzzer for the server's read-ahead key
 * scanner, mc_text_scan_keys() (mc_text.c), which looks at the pipelined
 * request lines waiting in a connection's buffer before they are parsed.
 *
 *   fuzz_scan_keys N        N mutated inputs from a fixed seed
 *   fuzz_scan_keys N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target.  The run itself
 * (rng, mutations, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h; the
 * corpus is test_mc_text.c's read-ahead rows and pipelines made of its
 * request lines.
 *
 * Each input is a buffer of pipelined requests, scanned from an exact-size
 * heap copy (so a sanitizer build catches any read past the end) with at
 * most 64 keys and again with at most 1..8, and must keep:
 *   - at most max keys; *used <= len, at a line's end (or a value's);
 *     only bits of the keys found are set in *stores;
 *   - every key lies inside the bytes used, is 1..250 bytes (the server
 *     keeps its length in a byte) and holds no space and no line end;
 *   - a smaller max gives the first keys of the larger one; the bytes used
 *     alone scan to the same keys; more bytes behind never take a key away;
 *   - walking the same lines with the text codec (and the meta codec for
 *     mg and ms), every line the codecs accept and the scanner took gives
 *     the same keys, in order, and a set's or ms's value is stepped over by
 *     the same length.  A line the codecs refuse may give a wrong key: the
 *     scanner's result is a hint, and the walk stops comparing there (and
 *     at the two accepted lines it reads loosely: walk_with_codec()).
 *
 * Keys are compared with the codec's, not held to "no control byte": the
 * text codec, as memcached, takes a key with a tab or a CR in it.
 */
#include "protocol/mc_meta.h"
#include "protocol/mc_text.h"

#include "fuzz_driver.h"

#define MAX_KEYS 64

struct scan {
    struct mc_span key[MAX_KEYS];
    unsigned n;
    uint64_t stores;
    size_t used;
};

static void scan(struct scan *s, const char *buf, size_t len, unsigned max) {
    s->stores = 0xdeadbeef;
    s->used = 12345678;
    s->n = mc_text_scan_keys(buf, len, s->key, max, &s->stores, &s->used);
}

static bool same_key(struct mc_span a, const char *abuf, struct mc_span b, const char *bbuf) {
    return a.len == b.len && a.p - abuf == b.p - bbuf;
}

/* How often the walk could compare a line, reported at the end of a plain run. */
static long seen_keys, seen_lines, seen_stores, seen_meta, seen_walk_stopped, seen_set_extra;

/*
 * The codec's reading of the lines the scanner took: keys in order, values
 * stepped over by the codec's length.  Stops (and compares nothing further)
 * at the first line the codecs refuse, and at the two lines the scanner
 * reads loosely by design: one holding a NUL (the codec reads up to it, as
 * memcached's C string does; the scanner the whole line), and a set with a
 * word after its length other than noreply (the codec takes the fifth
 * word as the length; the scanner the last one, reading backwards).
 */
static void walk_with_codec(const struct scan *s, const char *buf, size_t len) {
    size_t p = 0;
    unsigned i = 0;
    bool stopped = false;
    while (p < s->used && !stopped) {
        struct mc_req req;
        size_t consumed = 0;
        const char *line = buf + p, *nl = memchr(line, '\n', len - p);
        if (nl == NULL || memchr(line, '\0', (size_t)(nl - line)) != NULL ||
            mc_text_parse(&req, line, len - p, &consumed) != MC_PARSE_OK) {
            stopped = true;
        } else if (req.cmd == MC_CMD_GET || req.cmd == MC_CMD_GETS) {
            struct mc_span rest = req.keys, k;
            while (i < s->n && mc_text_next_key(&rest, &k)) {
                CHECK(same_key(s->key[i], buf, k, buf));
                CHECK(((s->stores >> i) & 1) == 0);
                i++;
            }
            p += consumed;
        } else if (req.cmd == MC_CMD_SET && req.ntokens > 5 && !req.noreply) {
            stopped = true;     /* a word after the length: the scanner reads the last one */
            seen_set_extra++;
        } else if (req.cmd == MC_CMD_SET) {
            CHECK(i < s->n && same_key(s->key[i], buf, req.key, buf));
            CHECK(((s->stores >> i) & 1) == 1);
            i++;
            seen_stores++;
            p += consumed + req.vlen + 2;
        } else if (req.cmd == MC_CMD_META && (line[1] == 'g' || line[1] == 's')) {
            struct mc_meta_req mreq;
            size_t mc = 0;
            if (mc_meta_parse(&mreq, line, len - p, &mc) != MC_PARSE_OK) {
                stopped = true;
                break;
            }
            if (!mreq.key_binary) {
                CHECK(i < s->n && same_key(s->key[i], buf, mreq.key, buf));
                CHECK(((s->stores >> i) & 1) == (line[1] == 's'));
                i++;
            }
            seen_meta++;
            p += mc + (line[1] == 's' ? mreq.vlen + 2 : 0);
        } else {
            CHECK(!"the scanner took a line the codec reads as another command");
        }
        seen_lines += !stopped;
    }
    if (stopped)
        seen_walk_stopped++;
    else
        CHECK(p == s->used && i == s->n);
}

static void check_scan(const struct scan *s, const char *buf, size_t len, unsigned max) {
    CHECK(s->n <= max);
    CHECK(s->used <= len);
    CHECK(s->n == MAX_KEYS || (s->stores >> s->n) == 0);
    for (unsigned i = 0; i < s->n; i++) {
        struct mc_span k = s->key[i];
        CHECK(k.len >= 1 && k.len <= MC_KEY_MAX);
        CHECK(k.p >= buf && k.p + k.len <= buf + s->used);
        CHECK(memchr(k.p, ' ', k.len) == NULL && memchr(k.p, '\n', k.len) == NULL);
    }
}

static void check_one(const char *in, size_t len) {
    char *buf = malloc(len ? len : 1);
    memcpy(buf, in, len);

    struct scan all, few, again;
    scan(&all, buf, len, MAX_KEYS);
    check_scan(&all, buf, len, MAX_KEYS);
    seen_keys += all.n;
    walk_with_codec(&all, buf, len);

    /* A smaller max: the first keys of the larger one. */
    unsigned max = 1 + (unsigned)fuzz_below(8);
    scan(&few, buf, len, max);
    check_scan(&few, buf, len, max);
    CHECK(few.n == (all.n < max ? all.n : max));
    for (unsigned i = 0; i < few.n; i++)
        CHECK(same_key(few.key[i], buf, all.key[i], buf));
    CHECK(few.stores == (all.stores & ((1ULL << few.n) - 1)));
    if (all.n < max)
        CHECK(few.used == all.used);

    /* The bytes used alone scan the same. */
    char *used = malloc(all.used ? all.used : 1);
    memcpy(used, buf, all.used);
    scan(&again, used, all.used, MAX_KEYS);
    CHECK(again.n == all.n && again.used == all.used && again.stores == all.stores);
    for (unsigned i = 0; i < all.n; i++)
        CHECK(same_key(again.key[i], used, all.key[i], buf));
    free(used);

    /* Bytes behind take nothing away. */
    char *more = malloc(len + 10);
    memcpy(more, buf, len);
    memcpy(more + len, "get k1 k2\n", 10);
    scan(&again, more, len + 10, MAX_KEYS);
    CHECK(again.n >= all.n && again.used >= all.used);
    for (unsigned i = 0; i < all.n; i++)
        CHECK(same_key(again.key[i], more, all.key[i], buf));
    CHECK((again.stores & (all.n >= 64 ? ~0ULL : (1ULL << all.n) - 1)) == all.stores);
    free(more);
    free(buf);
}

/* ---------------------------------------------------------------------- */
/* Corpus: test_mc_text.c's read-ahead rows, and pipelines of its lines      */
/* ---------------------------------------------------------------------- */

#define C(x) FUZZ_ENTRY(x)
static const struct fuzz_entry corpus[] = {
    C("get a bb\r\ngets c\r\nset d 0 0 5 noreply\r\nget x\r\nset e 1 2 3\r\nabc\r\n"
      "delete f\r\nget g\r\n"),
    C("get a\r\nset b 0 0 9\r\nxy"),
    C("mg a v f\r\nms b 4 T0\r\nmg x\r\nmg YmFzZQ== b v\r\nms Yw== 2 b\r\nzz\r\nmg c\r\n"
      "get d\r\nmn\r\nmg e\r\n"),
    C("mg a\r\nms b 9\r\nxy"),
    C("mg a\r\nms b S9\r\nxy"),
    C("get k\r\nget k\r\n"),
    C("get t0 t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 t12 t13 t14 t15 t16 t17 t18 t19 t20 t21 t22 "
      "t23\r\nget u\r\n"),
    C("gets a b c\r\nget    a   b   \r\nget k noreply\n"),
    C("set k 0 0 1\r\nx\r\nget k\r\n"),
    C("set k 1 2 3\r\nabc\r\nset k 0 0 1 noreply\r\nx\r\nget k\r\n"),
    C("set k 0 0 2147483645\r\nget k\r\n"),
    C("set k 0 0 -1\r\nget k\r\n"),
    C("set k 0 0 1 garbage\r\nx\r\nget k\r\n"),
    C("set k\r\nget k\r\n"),
    C("set  k 0 0 1\r\nx\r\nget k\r\n"),
    C("get k\r\r\nget a\0b\r\nget c\r\n"),
    C("get a\tb\r\nget c\n"),
    C("ms k 2 T0 F5\r\nhi\r\nmg k v\r\nmg k\n"),
    C("ms k S2 T0\r\nhi\r\nmg k\r\n"),
    C("ms k 2\r\nhi\r\nms k 0\r\n\r\nmg k s v\r\n"),
    C("mg k b\r\nmg bGs= b v\r\nmg k\r\n"),
    C("md k\r\nmg k\r\n"),
    C("get\r\nget k\r\n"),
    C("get \r\nget k\r\n"),
    C("gets \r\nget k\r\n"),
    C("\r\nget k\r\n"),
    C("get k\n"),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static const char *const words[] = {
    "get ", "gets ", "set ", "mg ", "ms ", "md ", "gat ", " b", " v", " noreply", "0", "1", "2",
    "9", "00", "999999999", "4294967296", "-1", "S2", "T0", " ", "  ", "\r", "\t", "", "\r\n",
    "\n", "get k\r\n", "set k 0 0 1\r\nx\r\n", "ms k 1\r\nx\r\n",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static const size_t run_sizes[] = {100, 249, 250, 251, 1000, 2048};

static void report(long iters) {
    printf("fuzz_scan_keys: %ld inputs (%ld keys; %ld lines compared with the codecs, of which "
           "%ld sets and %ld meta; %ld walks stopped early, %ld of them at a set with a word "
           "after its length), all invariants held\n",
           iters, seen_keys, seen_lines, seen_stores, seen_meta, seen_walk_stopped,
           seen_set_extra);
}

static const struct fuzz_config cfg = {
    .name = "fuzz_scan_keys",
    .check = check_one,
    .report = report,
    .seed = 0x5ca7ee5a11c0ffeeULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 4,
    .random_max = 200,
    .words = words,
    .nwords = NWORDS,
    .interesting = FUZZ_ENTRY(" \r\n\t\0bgms019"),
    .run_sizes = run_sizes,
    .nrun_sizes = sizeof(run_sizes) / sizeof(run_sizes[0]),
    .run_fill = " kk",
};

FUZZ_DRIVER(&cfg)
