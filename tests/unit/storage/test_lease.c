/*
 * test_lease.c -- leases, stale values and the meta commands' storage
 * semantics, against memcached 1.6.18.
 *
 * The first half replays transcripts: each line is a request and the exact
 * bytes memcached 1.6.18 answered (observed: each script sent line by line,
 * each line after the previous answer, to a fresh `memcached -U 0` that was
 * first told `lru mode flat`, so CAS numbers start at 1 in both).  A small
 * interpreter below turns mg/ms/md/ma into engine calls and formats the
 * answer; it is the recipe the server follows (engine.h), so these rows
 * check that the engine API can reproduce memcached byte for byte.  A line
 * "+N" advances the engine clock N seconds (the oracle run slept N + 1, so
 * rows after one avoid showing a TTL that was running during the sleep).
 * Flag syntax errors are the codec's and do not appear here.
 *
 * The second half drives the API directly: many threads racing for one
 * lease, the binary protocol's incr with an initial value, the delete
 * hold-off, [HEAD] options and -C.  Nothing sleeps; time is set by hand.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "storage/engine.h"

#ifdef ENGINE_SEG
#define ENGINE_SEG_ON 1
#else
#define ENGINE_SEG_ON 0
#endif
#define T0 1700000000u
#define MiB (1024u * 1024u)

static struct engine *mk_cfg(const struct engine_config *cfg) {
#ifdef ENGINE_SEG   /* test_lease_seg.c: the same tests on the segment back end */
    struct engine_config sc = *cfg;
    sc.seg = true;
    sc.policy = "fifo";
    cfg = &sc;
#endif
    char err[256] = "";
    struct engine *e = engine_create(cfg, err, sizeof(err));
    if (e == NULL) {
        fprintf(stderr, "engine_create: %s\n", err);
        abort();
    }
    engine_clock_set(e, T0);
    return e;
}

static struct engine *mk(void) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    return mk_cfg(&cfg);
}

/* ---- a minimal meta front end over the engine API ---- */

struct out {
    char b[4096];
    size_t n;
};

static void put(struct out *o, const void *p, size_t n) {
    if (o->n + n < sizeof(o->b)) {
        memcpy(o->b + o->n, p, n);
        o->n += n;
    }
}

static void putf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct out *o, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    put(o, tmp, (size_t)n);
}

static void put_value(struct out *o, struct item *it) {
    struct iovec iov[64];
    int k = engine_item_iov(it, iov, 64);
    for (int i = 0; i < k; i++)
        put(o, iov[i].iov_base, iov[i].iov_len);
}

#define MAXTOK 24

/* Splits line (NUL-terminated, modified) on spaces. */
static int split(char *line, char **tok) {
    int n = 0;
    for (char *p = strtok(line, " "); p != NULL && n < MAXTOK; p = strtok(NULL, " "))
        tok[n++] = p;
    return n;
}

static int64_t num(const char *s) { return strtoll(s, NULL, 10); }
static uint64_t unum(const char *s) { return strtoull(s, NULL, 10); }

/* Echoes the k and O flags, in request order (miss and failure answers). */
static void put_k_o(struct out *o, char **tok, int n) {
    for (int i = 2; i < n; i++) {
        if (tok[i][0] == 'k')
            putf(o, " k%s", tok[1]);
        else if (tok[i][0] == 'O')
            putf(o, " %s", tok[i]);
    }
}

static void do_mg(struct engine *e, char **tok, int n, struct out *o) {
    struct engine_mget_opts op = {0};
    bool value = false, quiet = false;
    for (unsigned i = 2; i < (unsigned)n; i++) {
        const char *a = tok[i] + 1;
        switch (tok[i][0]) {
        case 'T': op.touch = true, op.touch_exptime = num(a), op.touch_at = i; break;
        case 'N': op.vivify = true, op.vivify_exptime = num(a), op.vivify_at = i; break;
        case 'R': op.recache = true, op.recache_exptime = num(a), op.recache_at = i; break;
        case 't': op.ttl_at = i; break;
        case 'u': op.no_bump = true; break;
        case 'v': value = true; break;
        case 'q': quiet = true; break;
        }
    }
    struct engine_item_meta m;
    struct item *it = engine_mget(e, tok[1], strlen(tok[1]), &op, &m, NULL);
    if (it == NULL) {
        if (quiet)
            return;
        put(o, "EN", 2);
        put_k_o(o, tok, n);
        put(o, "\r\n", 2);
        return;
    }
    if (value)
        putf(o, "VA %u", item_nbytes(it));
    else
        put(o, "HD", 2);
    for (int i = 2; i < n; i++) {
        switch (tok[i][0]) {
        case 's': putf(o, " s%u", item_nbytes(it)); break;
        case 't': putf(o, " t%lld", (long long)m.ttl); break;
        case 'c': putf(o, " c%llu", (unsigned long long)item_cas(it)); break;
        case 'f': putf(o, " f%u", item_flags(it)); break;
        case 'l': putf(o, " l%u", m.last_access); break;
        case 'h': putf(o, " h%d", m.fetched); break;
        case 'k': putf(o, " k%.*s", (int)item_nkey(it), item_key(it)); break;
        case 'O': putf(o, " %s", tok[i]); break;
        }
    }
    if (m.token_sent)
        put(o, " Z", 2);
    if (m.stale)
        put(o, " X", 2);
    if (m.won)
        put(o, " W", 2);
    put(o, "\r\n", 2);
    if (value) {
        put_value(o, it);
        put(o, "\r\n", 2);
    }
    engine_item_unref(e, it);
}

static void do_ms(struct engine *e, char **tok, int n, const char *data, struct out *o) {
    struct engine_mstore_opts op = {0};
    uint32_t flags = 0, len = (uint32_t)unum(tok[2]);
    int64_t exptime = 0;
    bool quiet = false;
    for (int i = 3; i < n; i++) {
        const char *a = tok[i] + 1;
        switch (tok[i][0]) {
        case 'C': op.compare = true, op.cas = unum(a); break;
        case 'I': op.invalidate = true; break;
        case 'T': exptime = num(a); break;
        case 'F': flags = (uint32_t)unum(a); break;
        case 'q': quiet = true; break;
        case 'M':
            op.mode = a[0] == 'E' ? ENGINE_MSTORE_ADD
                      : a[0] == 'A' ? ENGINE_MSTORE_APPEND
                      : a[0] == 'P' ? ENGINE_MSTORE_PREPEND
                      : a[0] == 'R' ? ENGINE_MSTORE_REPLACE
                                    : ENGINE_MSTORE_SET;
            break;
        }
    }
    struct item *it = engine_item_alloc(e, tok[1], strlen(tok[1]), flags, exptime, len, NULL);
    if (it == NULL) {
        engine_delete(e, tok[1], strlen(tok[1]), 0);
        put(o, "SERVER_ERROR out of memory storing object\r\n", 43);
        return;
    }
    struct iovec iov;
    engine_item_iov(it, &iov, 1);
    memcpy(iov.iov_base, data, len);
    struct engine_mstore_out res;
    enum engine_store_result r = engine_mstore(e, it, &op, &res);
    engine_item_unref(e, it);
    if (r == ENGINE_STORED && quiet)
        return;
    /* ENGINE_STORE_NO_MEMORY (append/prepend) is NS in 1.6.18 too */
    const char *code = r == ENGINE_STORED ? "HD" : r == ENGINE_EXISTS ? "EX"
                       : r == ENGINE_NOT_FOUND ? "NF" : "NS";
    put(o, code, 2);
    for (int i = 3; i < n; i++) {
        if (tok[i][0] == 'c')
            putf(o, " c%llu", (unsigned long long)res.cas);
        else if (tok[i][0] == 'k')
            putf(o, " k%s", tok[1]);
        else if (tok[i][0] == 'O')
            putf(o, " %s", tok[i]);
    }
    put(o, "\r\n", 2);
}

static void do_md(struct engine *e, char **tok, int n, struct out *o) {
    struct engine_mdelete_opts op = {0};
    bool quiet = false;
    for (int i = 2; i < n; i++) {
        const char *a = tok[i] + 1;
        switch (tok[i][0]) {
        case 'C': op.compare = true, op.cas = unum(a); break;
        case 'I': op.invalidate = true; break;
        case 'T': op.touch = true, op.touch_exptime = num(a); break;
        case 'q': quiet = true; break;
        }
    }
    enum engine_mdelete_result r = engine_mdelete(e, tok[1], strlen(tok[1]), &op, NULL);
    bool ok = r == ENGINE_MDELETE_DELETED || r == ENGINE_MDELETE_INVALIDATED;
    if (ok && quiet)
        return;
    put(o, ok ? "HD" : r == ENGINE_MDELETE_EXISTS ? "EX" : "NF", 2);
    put_k_o(o, tok, n);
    put(o, "\r\n", 2);
}

static void do_ma(struct engine *e, char **tok, int n, struct out *o) {
    struct engine_marith_opts op = {.delta = 1};
    bool value = false;
    for (unsigned i = 2; i < (unsigned)n; i++) {
        const char *a = tok[i] + 1;
        switch (tok[i][0]) {
        case 'N': op.vivify = true, op.vivify_exptime = num(a), op.vivify_at = i; break;
        case 'J': op.initial = unum(a); break;
        case 'D': op.delta = unum(a); break;
        case 'T': op.touch = true, op.touch_exptime = num(a), op.touch_at = i; break;
        case 'C': op.compare = true, op.cas = unum(a); break;
        case 'M': op.decr = a[0] == 'D' || a[0] == '-'; break;
        case 't': op.ttl_at = i; break;
        case 'v': value = true; break;
        }
    }
    struct engine_marith_out res;
    enum engine_marith_result r = engine_marith(e, tok[1], strlen(tok[1]), &op, &res);
    if (r == ENGINE_MARITH_NON_NUMERIC) {
        putf(o, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
        return;
    }
    if (r != ENGINE_MARITH_OK) {
        put(o, r == ENGINE_MARITH_EXISTS ? "EX" : r == ENGINE_MARITH_NOT_FOUND ? "NF" : "NS", 2);
        put_k_o(o, tok, n);
        put(o, "\r\n", 2);
        return;
    }
    char digits[24];
    int len = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)res.value);
    if (value)
        putf(o, "VA %d", len);
    else
        put(o, "HD", 2);
    for (int i = 2; i < n; i++) {
        switch (tok[i][0]) {
        case 'c': putf(o, " c%llu", (unsigned long long)res.cas); break;
        case 't': putf(o, " t%lld", (long long)res.ttl); break;
        case 'k': putf(o, " k%s", tok[1]); break;
        case 'O': putf(o, " %s", tok[i]); break;
        }
    }
    put(o, "\r\n", 2);
    if (value) {
        put(o, digits, (size_t)len);
        put(o, "\r\n", 2);
    }
}

/* The classic commands the scripts use to set things up. */
static void do_classic(struct engine *e, char **tok, int n, const char *data, struct out *o) {
    if (strcmp(tok[0], "set") == 0 && n == 5) {
        uint32_t len = (uint32_t)unum(tok[4]);
        struct item *it = engine_item_alloc(e, tok[1], strlen(tok[1]), (uint32_t)unum(tok[2]),
                                            num(tok[3]), len, NULL);
        struct iovec iov;
        engine_item_iov(it, &iov, 1);
        memcpy(iov.iov_base, data, len);
        enum engine_store_result r = engine_store(e, it, ENGINE_SET, 0, NULL);
        engine_item_unref(e, it);
        putf(o, "%s\r\n", r == ENGINE_STORED ? "STORED" : "NOT_STORED");
    } else if ((strcmp(tok[0], "get") == 0 || strcmp(tok[0], "gets") == 0) && n == 2) {
        struct item *it = engine_get(e, tok[1], strlen(tok[1]), NULL);
        if (it != NULL) {
            putf(o, "VALUE %s %u %u", tok[1], item_flags(it), item_nbytes(it));
            if (tok[0][3] == 's')
                putf(o, " %llu", (unsigned long long)item_cas(it));
            put(o, "\r\n", 2);
            put_value(o, it);
            put(o, "\r\n", 2);
            engine_item_unref(e, it);
        }
        put(o, "END\r\n", 5);
    } else if (strcmp(tok[0], "incr") == 0 && n == 3) {
        uint64_t v;
        enum engine_arith_result r = engine_arith(e, tok[1], strlen(tok[1]), true, unum(tok[2]),
                                                  &v, NULL);
        if (r == ENGINE_ARITH_OK)
            putf(o, "%llu\r\n", (unsigned long long)v);
        else if (r == ENGINE_ARITH_NOT_FOUND)
            putf(o, "NOT_FOUND\r\n");
        else
            putf(o, "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
    } else {
        putf(o, "ERROR\r\n");
    }
}

/* Runs one request (command line, then for ms/set the data) into o. */
static void request(struct engine *e, const char *req, struct out *o) {
    char line[512];
    const char *eol = strstr(req, "\r\n");
    size_t ll = eol != NULL ? (size_t)(eol - req) : strlen(req);
    if (ll >= sizeof(line))
        ll = sizeof(line) - 1;
    memcpy(line, req, ll);
    line[ll] = 0;
    const char *data = eol != NULL ? eol + 2 : "";
    char *tok[MAXTOK];
    int n = split(line, tok);
    o->n = 0;
    if (n >= 2 && strcmp(tok[0], "mg") == 0)
        do_mg(e, tok, n, o);
    else if (n >= 3 && strcmp(tok[0], "ms") == 0)
        do_ms(e, tok, n, data, o);
    else if (n >= 2 && strcmp(tok[0], "md") == 0)
        do_md(e, tok, n, o);
    else if (n >= 2 && strcmp(tok[0], "ma") == 0)
        do_ma(e, tok, n, o);
    else if (n >= 1)
        do_classic(e, tok, n, data, o);
}

struct line {
    const char *req, *resp;
};

/*
 * Replays a script on a fresh engine; on the first difference reports the
 * line and both answers.  Returns the number of the failing line, or 0.
 */
static int replay(const struct line *s, size_t n, char *why, size_t whylen) {
    struct engine *e = mk();
    uint32_t now = T0;
    struct out o;
    int bad = 0;
    for (size_t i = 0; i < n && bad == 0; i++) {
        if (s[i].req[0] == '+') {
            now += (uint32_t)atoi(s[i].req + 1);
            engine_clock_set(e, now);
            continue;
        }
        request(e, s[i].req, &o);
        if (o.n != strlen(s[i].resp) || memcmp(o.b, s[i].resp, o.n) != 0) {
            snprintf(why, whylen, "line %zu: %s\n    want: %s\n    got:  %.*s", i + 1, s[i].req,
                     s[i].resp, (int)o.n, o.b);
            bad = (int)i + 1;
        }
    }
    engine_destroy(&e);
    return bad;
}

#define REPLAY(script)                                                      \
    do {                                                                    \
        char th_why[2048];                                                  \
        if (replay(script, sizeof(script) / sizeof(script[0]), th_why,      \
                   sizeof(th_why)) != 0)                                    \
            TH_FAIL("%s %s", #script, th_why);                              \
    } while (0)

/* ---- transcripts (observed on memcached 1.6.18) ---- */

/*
 * The lease life cycle: a miss with vivify wins an empty placeholder, the
 * winner fills it with a CAS-guarded set; an invalidation keeps the value,
 * the first reader after it wins, the others see the stale value; a late
 * set with the old CAS fails unless it is itself an invalidating set, which
 * is stored but stays stale.
 */
static const struct line lease_cycle[] = {
    {"mg k v c N30 t\r\n", "VA 0 c1 t30 W\r\n\r\n"},
    {"mg k v c N30 t\r\n", "VA 0 c1 t30 Z\r\n\r\n"},
    {"mg k c\r\n", "HD c1 Z\r\n"},
    {"get k\r\n", "VALUE k 0 0\r\n\r\nEND\r\n"},
    {"incr k 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
    {"ms k 3 C1 T60 c\r\nabc\r\n", "HD c2\r\n"},
    {"mg k v c t\r\n", "VA 3 c2 t60\r\nabc\r\n"},
    {"md k I T30\r\n", "HD\r\n"},
    {"mg k v c t\r\n", "VA 3 c3 t30 X W\r\nabc\r\n"},
    {"mg k v c t\r\n", "VA 3 c3 t30 Z X\r\nabc\r\n"},
    {"mg k v c t N30 R100\r\n", "VA 3 c3 t30 Z X\r\nabc\r\n"},
    {"ms k 3 C2 c\r\nxyz\r\n", "EX c0\r\n"},
    {"ms k 3 C2 I c\r\nold\r\n", "HD c4\r\n"},
    {"mg k v c t\r\n", "VA 3 c4 t30 Z X\r\nold\r\n"},
    {"ms k 3 C9 I c\r\nxyz\r\n", "EX c0\r\n"},
    {"ms k 3 C4 c\r\nnew\r\n", "HD c5\r\n"},
    {"mg k v c t\r\n", "VA 3 c5 t-1\r\nnew\r\n"},
    {"md k I\r\n", "HD\r\n"},
    {"mg k c t\r\n", "HD c6 t-1 X W\r\n"},
    {"md k I\r\n", "HD\r\n"},
    {"mg k c t\r\n", "HD c7 t-1 X W\r\n"},
    {"ms k 3 I c\r\nfin\r\n", "HD c8\r\n"},
    {"mg k c t v\r\n", "VA 3 c8 t-1\r\nfin\r\n"},
};

/*
 * The paper's race: the winner is still computing when the key is
 * invalidated.  Its set with the CAS it won must fail; the reader that won
 * the stale placeholder fills it.
 */
static const struct line no_stale_sets[] = {
    {"mg lk c N30\r\n", "HD c1 W\r\n"},
    {"md lk I\r\n", "HD\r\n"},
    {"mg lk v c\r\n", "VA 0 c2 X W\r\n\r\n"},
    {"mg lk v c\r\n", "VA 0 c2 Z X\r\n\r\n"},
    {"ms lk 3 C1 c\r\nold\r\n", "EX c0\r\n"},
    {"ms lk 3 C2 c\r\nnew\r\n", "HD c3\r\n"},
    {"mg lk v c\r\n", "VA 3 c3\r\nnew\r\n"},
    /* a plain set also ends a lease */
    {"mg lk2 c N30\r\n", "HD c4 W\r\n"},
    {"ms lk2 1\r\nx\r\n", "HD\r\n"},
    {"mg lk2 c v\r\n", "VA 1 c5\r\nx\r\n"},
};

/* A winner that never fills: the placeholder's TTL ends the lease. */
static const struct line lease_expires[] = {
    {"mg p N2 c\r\n", "HD c1 W\r\n"},
    {"mg p N2 c\r\n", "HD c1 Z\r\n"},
    {"+3", ""},
    {"mg p N2 c t\r\n", "HD c2 t2 W\r\n"},
    {"mg p N2 c t\r\n", "HD c2 t2 Z\r\n"},
    /* a delete ends it too */
    {"md p\r\n", "HD\r\n"},
    {"mg p N2 c\r\n", "HD c3 W\r\n"},
};

/*
 * Flags are evaluated in request order: where t sits against T and N, and
 * whether R sees the touched exptime.  h and l show the state before this
 * fetch; u leaves it alone.
 */
static const struct line mg_order[] = {
    {"mg a N30 T100 t\r\n", "HD t100 W\r\n"},
    {"mg b T100 N30 t\r\n", "HD t30 W\r\n"},
    {"mg b t\r\n", "HD t30 Z\r\n"},
    {"mg c T100 t N30\r\n", "HD t100 W\r\n"},
    {"mg c t\r\n", "HD t30 Z\r\n"},
    {"mg c2 t N30 T100\r\n", "HD t-1 W\r\n"},
    {"mg c2 t\r\n", "HD t100 Z\r\n"},
    {"set d 0 0 1\r\n1\r\n", "STORED\r\n"},
    {"mg d T10 R30 t\r\n", "HD t10 W\r\n"},
    {"mg d t\r\n", "HD t10 Z\r\n"},
    {"set e 0 0 1\r\n1\r\n", "STORED\r\n"},
    {"mg e R30 T10 t\r\n", "HD t10\r\n"},
    {"mg e R30 t\r\n", "HD t10 W\r\n"},
    {"mg e R30 t\r\n", "HD t10 Z\r\n"},
    {"set f 0 0 1\r\n1\r\n", "STORED\r\n"},
    {"mg f T30 u\r\n", "HD\r\n"},
    {"mg f h t\r\n", "HD h0 t30\r\n"},
    {"mg f T40 h\r\n", "HD h1\r\n"},
    {"set g 0 0 1\r\n1\r\n", "STORED\r\n"},
    {"mg g u\r\n", "HD\r\n"},
    {"mg g h\r\n", "HD h0\r\n"},
    {"mg g\r\n", "HD\r\n"},
    {"mg g h l\r\n", "HD h1 l0\r\n"},
    {"mg lk3 t N30 h l\r\n", "HD t-1 h0 l0 W\r\n"},
    {"mg lk3 t h l\r\n", "HD t30 h1 l0 Z\r\n"},
    {"mg lk3 k O1 v q\r\n", "VA 0 klk3 O1 Z\r\n\r\n"},
    {"mg nokey v k O55\r\n", "EN knokey O55\r\n"},
    {"mg nokey v k O55 q\r\n", ""},
    {"set w 0 0 1\r\n1\r\n", "STORED\r\n"},
    {"mg w R-1 t\r\n", "HD t-1\r\n"},
    {"mg w R0 t\r\n", "HD t-1\r\n"},
    {"mg w R30 t\r\n", "HD t-1\r\n"},
    {"set foo 5 0 3\r\nbar\r\n", "STORED\r\n"},
    {"mg foo s v f t c k O9\r\n", "VA 3 s3 f5 t-1 c11 kfoo O9\r\nbar\r\n"},
    {"mg foo N30 v\r\n", "VA 3\r\nbar\r\n"},
    {"set x 0 100 1\r\n1\r\n", "STORED\r\n"},
    {"mg x t\r\n", "HD t100\r\n"},
    {"+3", ""},
    {"mg x R50\r\n", "HD\r\n"},
    {"mg x R98\r\n", "HD W\r\n"},
    {"mg x R98\r\n", "HD Z\r\n"},
};

/* ms modes with and without compare and invalidate. */
static const struct line ms_modes[] = {
    {"ms a 1 MA\r\nx\r\n", "NS\r\n"},
    {"ms a 1 MP\r\nx\r\n", "NS\r\n"},
    {"ms a 1 MR\r\nx\r\n", "NS\r\n"},
    {"ms a 1 MR C5\r\nx\r\n", "NF\r\n"},
    {"ms a 1 C5\r\nx\r\n", "NF\r\n"},
    {"ms a 1 ME c\r\nx\r\n", "HD c1\r\n"},
    {"ms a 1 ME c\r\ny\r\n", "NS c0\r\n"},
    {"ms a 1 ME C99\r\ny\r\n", "NS\r\n"},
    {"ms b 1 ME C99 c\r\ny\r\n", "HD c2\r\n"},
    {"ms a 2 MA C99\r\nzz\r\n", "EX\r\n"},
    {"ms a 2 MA C1 c\r\nzz\r\n", "HD c3\r\n"},
    {"mg a v c f t\r\n", "VA 3 c3 f0 t-1\r\nxzz\r\n"},
    {"ms a 2 MA C1 I\r\nzz\r\n", "EX\r\n"},
    {"ms a 2 MP F7 T100\r\npp\r\n", "HD\r\n"},
    {"mg a v c f t\r\n", "VA 5 c4 f0 t-1\r\nppxzz\r\n"},
    {"ms a 2 MR F7 T100 c\r\nrr\r\n", "HD c5\r\n"},
    {"mg a v c f t\r\n", "VA 2 c5 f7 t100\r\nrr\r\n"},
    {"ms a 2 MR C4 I c\r\nrr\r\n", "HD c6\r\n"},
    {"mg a v c f t\r\n", "VA 2 c6 f0 t100 X W\r\nrr\r\n"},
    {"ms a 2 MS C1 I c\r\nss\r\n", "HD c7\r\n"},
    {"mg a v c f t\r\n", "VA 2 c7 f0 t100 Z X\r\nss\r\n"},
    {"ms a 2 ME I c\r\nss\r\n", "NS c0\r\n"},
    {"ms nope 2 C1 I c\r\nss\r\n", "NF c0\r\n"},
    {"ms a 2 T-1\r\nss\r\n", "HD\r\n"},
    {"mg a v\r\n", "EN\r\n"},
    {"ms a 2 T0 F4294967295 c\r\nss\r\n", "HD c9\r\n"},
    {"mg a v f\r\n", "VA 2 f4294967295\r\nss\r\n"},
    {"set k 0 0 1\r\n1\r\n", "STORED\r\n"},
    {"ms k 1 C0\r\nx\r\n", "EX\r\n"},
    {"ms k 1 C0 I c\r\nx\r\n", "EX c0\r\n"},
    {"ms k 1 MA C0 c\r\ny\r\n", "HD c11\r\n"},
    {"mg k v c\r\n", "VA 2 c11\r\n1y\r\n"},
    {"ms k 1 MR C0 I c\r\nz\r\n", "EX c0\r\n"},
    {"ms k 1 c k O1 q\r\na\r\n", ""},
    {"ms k 1 O1 k c C99\r\na\r\n", "EX O1 kk c0\r\n"},
    {"ms k2 1 MR O1 k c\r\na\r\n", "NS O1 kk2 c0\r\n"},
    /* an add on a placeholder fails; a stale item is replaced by a set */
    {"mg ph N30\r\n", "HD W\r\n"},
    {"ms ph 1 ME\r\nx\r\n", "NS\r\n"},
    {"ms ph 1 MA\r\nx\r\n", "HD\r\n"},
    {"mg ph v\r\n", "VA 1\r\nx\r\n"},
};

/* md: compare, invalidate with a new TTL, quiet. */
static const struct line md_cases[] = {
    {"set q 0 0 1\r\n1\r\n", "STORED\r\n"},
    {"md q T30\r\n", "HD\r\n"},
    {"mg q\r\n", "EN\r\n"},
    {"set r 0 0 1\r\n1\r\n", "STORED\r\n"},
    {"md r C1\r\n", "EX\r\n"},
    {"md r q\r\n", ""},
    {"md r q\r\n", "NF\r\n"},
    {"md nope I\r\n", "NF\r\n"},
    {"set s 0 100 1\r\n1\r\n", "STORED\r\n"},
    {"mg s c\r\n", "HD c3\r\n"},
    {"md s I T30 C999\r\n", "EX\r\n"},
    {"mg s t c\r\n", "HD t100 c3\r\n"},
    {"md s I T0 C3\r\n", "HD\r\n"},
    {"mg s t c\r\n", "HD t-1 c4 X W\r\n"},
    {"md s I T-1\r\n", "HD\r\n"},
    {"mg s t c\r\n", "EN\r\n"},
    {"set k 0 0 1\r\n1\r\n", "STORED\r\n"},
    {"md k O2 k C6\r\n", "HD O2 kk\r\n"},
    {"md k k O2\r\n", "NF kk O2\r\n"},
};

/* ma: vivify with an initial value, delta, modes, compare, TTL order. */
static const struct line ma_cases[] = {
    {"ma cnt\r\n", "NF\r\n"},
    {"ma cnt N0 J10 v\r\n", "VA 2\r\n10\r\n"},
    {"ma cnt MD D20 v t c\r\n", "VA 1 t-1 c2\r\n0\r\n"},
    {"ma c2 N30 J5 v t c\r\n", "VA 1 t30 c3\r\n5\r\n"},
    {"ma c3 t N30 J5 v\r\n", "VA 1 t-1\r\n5\r\n"},
    {"mg c3 t\r\n", "HD t30\r\n"},
    {"set c4 0 0 1\r\n5\r\n", "STORED\r\n"},
    {"ma c4 t T100 v c\r\n", "VA 1 t-1 c6\r\n6\r\n"},
    {"mg c4 t v c\r\n", "VA 1 t100 c6\r\n6\r\n"},
    {"ma c4 T200 t v c\r\n", "VA 1 t200 c7\r\n7\r\n"},
    {"set n 0 0 1\r\n9\r\n", "STORED\r\n"},
    /* the number grew: a new item, and the touch went to the old one */
    {"ma n T100 t v c\r\n", "VA 2 t100 c9\r\n10\r\n"},
    {"mg n t v c\r\n", "VA 2 t-1 c9\r\n10\r\n"},
    {"ma n v C99\r\n", "EX\r\n"},
    {"ma n v C0 c\r\n", "VA 2 c10\r\n11\r\n"},
    {"ma n MD D3 v\r\n", "VA 1\r\n8\r\n"},
    {"mg n v\r\n", "VA 2\r\n8 \r\n"},
    {"ma n M- D30 v\r\n", "VA 1\r\n0\r\n"},
    {"ma n M+ D18446744073709551615 v\r\n", "VA 20\r\n18446744073709551615\r\n"},
    {"ma n v\r\n", "VA 1\r\n0\r\n"},
    {"ma nope C10 N30 J3 v c\r\n", "VA 1 c15\r\n3\r\n"},
    {"set s 0 0 1\r\nx\r\n", "STORED\r\n"},
    {"ma s v\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
    {"ma s N30 v\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
    {"mg ph N30 c\r\n", "HD c17 W\r\n"},
    {"ma ph v\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
    /* in place keeps the stale state and the token; a new item drops them */
    {"set z 0 0 2\r\n10\r\n", "STORED\r\n"},
    {"md z I\r\n", "HD\r\n"},
    {"mg z v\r\n", "VA 2 X W\r\n10\r\n"},
    {"ma z v\r\n", "VA 2\r\n11\r\n"},
    {"mg z v c\r\n", "VA 2 c20 Z X\r\n11\r\n"},
    {"set y 0 0 1\r\n9\r\n", "STORED\r\n"},
    {"md y I\r\n", "HD\r\n"},
    {"mg y v c\r\n", "VA 1 c22 X W\r\n9\r\n"},
    {"ma y v c\r\n", "VA 2 c23\r\n10\r\n"},
    {"mg y v c\r\n", "VA 2 c23\r\n10\r\n"},
    {"ma w N30 J18446744073709551615 D5 v\r\n", "VA 20\r\n18446744073709551615\r\n"},
    {"ma n O3 k c t v\r\n", "VA 1 O3 kn c25 t-1\r\n1\r\n"},
    {"ma n2 O3 k c t v\r\n", "NF O3 kn2\r\n"},
    {"ma n O3 k C1 v\r\n", "EX O3 kn\r\n"},
};

TEST(transcript_lease_cycle) { REPLAY(lease_cycle); }
TEST(transcript_no_stale_sets) { REPLAY(no_stale_sets); }
TEST(transcript_lease_expires) { REPLAY(lease_expires); }
TEST(transcript_mg_order) { REPLAY(mg_order); }
TEST(transcript_ms_modes) { REPLAY(ms_modes); }
TEST(transcript_md) { REPLAY(md_cases); }
TEST(transcript_ma) { REPLAY(ma_cases); }

/* ---- the API directly ---- */

static bool put_val(struct engine *e, const char *key, const char *val, int64_t exptime) {
    struct item *it = engine_item_alloc(e, key, strlen(key), 0, exptime, (uint32_t)strlen(val),
                                        NULL);
    if (it == NULL)
        return false;
    struct iovec iov;
    engine_item_iov(it, &iov, 1);
    memcpy(iov.iov_base, val, strlen(val));
    bool ok = engine_store(e, it, ENGINE_SET, 0, NULL) == ENGINE_STORED;
    engine_item_unref(e, it);
    return ok;
}

static enum engine_store_result mstore(struct engine *e, const char *key, const char *val,
                                       const struct engine_mstore_opts *o,
                                       struct engine_mstore_out *out) {
    struct item *it = engine_item_alloc(e, key, strlen(key), 0, 0, (uint32_t)strlen(val), NULL);
    struct iovec iov;
    engine_item_iov(it, &iov, 1);
    memcpy(iov.iov_base, val, strlen(val));
    enum engine_store_result r = engine_mstore(e, it, o, out);
    engine_item_unref(e, it);
    return r;
}

/* The value under key as a static string, or NULL on a miss. */
static const char *get(struct engine *e, const char *key) {
    static char buf[256];
    struct item *it = engine_get(e, key, strlen(key), NULL);
    if (it == NULL)
        return NULL;
    struct iovec iov;
    engine_item_iov(it, &iov, 1);
    size_t n = iov.iov_len < sizeof(buf) - 1 ? iov.iov_len : sizeof(buf) - 1;
    memcpy(buf, iov.iov_base, n);
    buf[n] = 0;
    engine_item_unref(e, it);
    return buf;
}

/* mg with vivify (and any other options), item dropped; returns meta. */
static struct engine_item_meta mg(struct engine *e, const char *key,
                                  const struct engine_mget_opts *o, bool *hit) {
    struct engine_item_meta m = {0};
    struct item *it = engine_mget(e, key, strlen(key), o, &m, NULL);
    *hit = it != NULL;
    engine_item_unref(e, it);
    return m;
}

#define RACERS 50

struct race {
    struct engine *e;
    const struct engine_mget_opts *o;
    _Atomic int ready;
    _Atomic int go;
    _Atomic int won, token_sent, created, stale, hits;
};

static void *racer(void *arg) {
    struct race *r = arg;
    atomic_fetch_add(&r->ready, 1);
    while (!atomic_load(&r->go))
        ;
    struct engine_item_meta m;
    struct item *it = engine_mget(r->e, "hot", 3, r->o, &m, NULL);
    if (it != NULL) {
        atomic_fetch_add(&r->hits, 1);
        atomic_fetch_add(&r->won, m.won);
        atomic_fetch_add(&r->token_sent, m.token_sent);
        atomic_fetch_add(&r->created, m.created);
        atomic_fetch_add(&r->stale, m.stale);
        engine_item_unref(r->e, it);
    }
    return NULL;
}

/* Starts RACERS threads at once on key "hot" with options o. */
static void race(struct race *r) {
    pthread_t th[RACERS];
    for (int i = 0; i < RACERS; i++)
        pthread_create(&th[i], NULL, racer, r);
    while (atomic_load(&r->ready) < RACERS)
        ;
    atomic_store(&r->go, 1);
    for (int i = 0; i < RACERS; i++)
        pthread_join(th[i], NULL);
}

TEST(fifty_missing_readers_one_winner) {
    struct engine *e = mk();
    struct engine_mget_opts o = {.vivify = true, .vivify_exptime = 30};
    struct race r = {.e = e, .o = &o};
    race(&r);
    ASSERT_EQ(r.hits, RACERS);
    ASSERT_EQ(r.won, 1);
    ASSERT_EQ(r.created, 1);
    ASSERT_EQ(r.token_sent, RACERS - 1);
    struct engine_stats s;
    engine_stats(e, &s);
    ASSERT_EQ(s.curr_items, 1);
    engine_destroy(&e);
}

TEST(fifty_readers_of_an_invalidated_item_one_winner) {
    struct engine *e = mk();
    ASSERT(put_val(e, "hot", "v1", 0));
    struct engine_mdelete_opts inv = {.invalidate = true, .touch = true, .touch_exptime = 30};
    ASSERT_EQ(engine_mdelete(e, "hot", 3, &inv, NULL), ENGINE_MDELETE_INVALIDATED);
    struct engine_mget_opts o = {0};
    struct race r = {.e = e, .o = &o};
    race(&r);
    ASSERT_EQ(r.hits, RACERS);
    ASSERT_EQ(r.stale, RACERS);
    ASSERT_EQ(r.won, 1);
    ASSERT_EQ(r.token_sent, RACERS - 1);
    ASSERT_STR(get(e, "hot"), "v1");
    engine_destroy(&e);
}

/*
 * Readers hold items and read their CAS and value (as a reply being
 * written does) while other threads invalidate, fill with the lease CAS
 * and mark wins.  Every successful fill must have used the CAS current at
 * that moment, so at the end the value is one of the fills and, if the
 * last operation was a fill, it is not stale.
 */
struct churn {
    struct engine *e;
    _Atomic int stop;
    _Atomic int fills;
};

static void *churn_reader(void *arg) {
    struct churn *c = arg;
    uint64_t sum = 0;
    for (int i = 0; i < 3000; i++) {
        struct engine_item_meta m;
        struct engine_mget_opts o = {.vivify = true, .vivify_exptime = 30};
        struct item *it = engine_mget(c->e, "c", 1, &o, &m, NULL);
        if (it == NULL)
            continue;
        sum += item_cas(it) + item_nbytes(it);
        struct iovec iov;
        engine_item_iov(it, &iov, 1);
        if (iov.iov_len > 0)
            sum += (unsigned char)((char *)iov.iov_base)[0];
        if (m.won) {
            struct engine_mstore_opts f = {.compare = true, .cas = item_cas(it)};
            if (mstore(c->e, "c", "filled", &f, NULL) == ENGINE_STORED)
                atomic_fetch_add(&c->fills, 1);
        }
        engine_item_unref(c->e, it);
    }
    return (void *)(uintptr_t)(sum == 42);
}

static void *churn_invalidator(void *arg) {
    struct churn *c = arg;
    struct engine_mdelete_opts inv = {.invalidate = true};
    for (int i = 0; i < 3000; i++)
        engine_mdelete(c->e, "c", 1, &inv, NULL);
    return NULL;
}

TEST(invalidate_while_readers_hold_items) {
    struct engine *e = mk();
    struct churn c = {.e = e};
    pthread_t th[5];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, churn_reader, &c);
    pthread_create(&th[4], NULL, churn_invalidator, &c);
    for (int i = 0; i < 5; i++)
        pthread_join(th[i], NULL);
    ASSERT(atomic_load(&c.fills) > 0);
    const char *v = get(e, "c");
    ASSERT(v != NULL && (strcmp(v, "filled") == 0 || strcmp(v, "") == 0));
    engine_destroy(&e);
}

/*
 * The whole cycle by hand: win, invalidation during the fill, the
 * winner's guarded store fails, the re-winner's succeeds; an unfilled
 * placeholder expires and the next miss wins a new one.
 */
TEST(lease_state_machine) {
    struct engine *e = mk();
    bool hit;
    struct engine_mget_opts viv = {.vivify = true, .vivify_exptime = 10};
    struct item *it = engine_mget(e, "k", 1, &viv, &(struct engine_item_meta){0}, NULL);
    ASSERT(it != NULL);
    uint64_t lease = item_cas(it);
    ASSERT_EQ(item_nbytes(it), 0);
    engine_item_unref(e, it);
    struct engine_item_meta m = mg(e, "k", &viv, &hit);
    ASSERT(hit && !m.won && m.token_sent && !m.created && !m.stale);

    struct engine_mdelete_opts inv = {.invalidate = true};
    ASSERT_EQ(engine_mdelete(e, "k", 1, &inv, NULL), ENGINE_MDELETE_INVALIDATED);
    struct engine_mstore_opts fill = {.compare = true, .cas = lease};
    struct engine_mstore_out out;
    ASSERT_EQ(mstore(e, "k", "late", &fill, &out), ENGINE_EXISTS);
    ASSERT_U64(out.cas, 0);
    m = mg(e, "k", &(struct engine_mget_opts){0}, &hit);
    ASSERT(hit && m.won && m.stale && !m.token_sent);
    it = engine_mget(e, "k", 1, &(struct engine_mget_opts){0}, &m, NULL);
    ASSERT(m.token_sent && m.stale && !m.won);
    fill.cas = item_cas(it);
    engine_item_unref(e, it);
    ASSERT_EQ(mstore(e, "k", "fresh", &fill, &out), ENGINE_STORED);
    ASSERT(!out.stale && out.nbytes == 5);
    m = mg(e, "k", &(struct engine_mget_opts){0}, &hit);
    ASSERT(hit && !m.won && !m.stale && !m.token_sent && m.ttl == -1);

    /* a placeholder nobody fills */
    m = mg(e, "p", &viv, &hit);
    ASSERT(m.won && m.created && m.ttl == 10);
    engine_clock_set(e, T0 + 9);
    m = mg(e, "p", &viv, &hit);
    ASSERT(!m.won && m.token_sent && m.ttl == 1);
    engine_clock_set(e, T0 + 10);
    m = mg(e, "p", &viv, &hit);
    ASSERT(m.won && m.created && !m.token_sent && m.ttl == 10);
    /* without vivify the placeholder's absence is a plain miss */
    engine_clock_set(e, T0 + 20);
    enum engine_miss why;
    ASSERT(engine_mget(e, "p", 1, &(struct engine_mget_opts){0}, &m, &why) == NULL);
    ASSERT_EQ(why, ENGINE_MISS_EXPIRED);
    engine_destroy(&e);
}

TEST(recache_wins_once_below_its_token) {
    struct engine *e = mk();
    bool hit;
    ASSERT(put_val(e, "r", "v", 100));
    struct engine_mget_opts rc = {.recache = true, .recache_exptime = 30};
    struct engine_item_meta m = mg(e, "r", &rc, &hit);
    ASSERT(!m.won && m.ttl == 100);
    engine_clock_set(e, T0 + 70);           /* 30 left: not below 30 */
    m = mg(e, "r", &rc, &hit);
    ASSERT(!m.won && m.ttl == 30);
    engine_clock_set(e, T0 + 71);
    m = mg(e, "r", &rc, &hit);
    ASSERT(m.won && !m.token_sent && m.ttl == 29);
    m = mg(e, "r", &rc, &hit);
    ASSERT(!m.won && m.token_sent);
    /* a fill clears the token; a key with no exptime never wins */
    ASSERT(put_val(e, "r", "v2", 0));
    m = mg(e, "r", &rc, &hit);
    ASSERT(!m.won && !m.token_sent && m.ttl == -1);
    engine_destroy(&e);
}

/* Under the flat LRU (slru moves atime only when an item turns active). */
TEST(mget_fetched_last_access_and_no_bump) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.policy = "lru";
    struct engine *e = mk_cfg(&cfg);
    bool hit;
    ASSERT(put_val(e, "k", "v", 0));
    engine_clock_set(e, T0 + 5);
    struct engine_mget_opts nb = {.no_bump = true};
    struct engine_item_meta m = mg(e, "k", &nb, &hit);
    ASSERT(!m.fetched && m.last_access == 5);
    m = mg(e, "k", &(struct engine_mget_opts){0}, &hit);
    ASSERT(!m.fetched && m.last_access == 5);
    m = mg(e, "k", &(struct engine_mget_opts){0}, &hit);
    ASSERT(m.fetched);
    /* the flat LRU moves atime at most once a minute */
    ASSERT_EQ(m.last_access, 5);
    engine_clock_set(e, T0 + 70);
    mg(e, "k", &(struct engine_mget_opts){0}, &hit);
    m = mg(e, "k", &(struct engine_mget_opts){0}, &hit);
    /* segments keep no per-item access time: their last access is the store */
    int64_t la = ENGINE_SEG_ON ? 70 : 0;
    ASSERT_EQ(m.last_access, la);
    struct item *it = engine_get(e, "k", 1, NULL);
    engine_item_meta(e, it, &m);
    ASSERT(m.fetched && !m.won && !m.created && m.ttl == -1 && m.last_access == la);
    engine_item_unref(e, it);
    /* a negative touch reads as memcached's unsigned difference */
    m = mg(e, "k", &(struct engine_mget_opts){.touch = true, .touch_exptime = -1, .ttl_at = 9},
           &hit);
    ASSERT(hit);
    ASSERT_EQ(m.ttl, (int64_t)(uint32_t)(1 - (62 + 70)));
    ASSERT(get(e, "k") == NULL);
    engine_destroy(&e);
}

/*
 * The binary protocol's incr/decr with an initial value, as observed on
 * 1.6.18: (opcode, key, delta, initial, expiration[, cas]) -> (status,
 * cas, value): (incr b 1 10 0xffffffff) -> Not found; (incr b 1 10 0) ->
 * (0, 1, 10); again -> (0, 2, 11); (decr b 5 10 0) -> (0, 3, 6); (decr b
 * 50 10 0) -> (0, 4, 0); (incr c 1 7 100) -> (0, 5, 7) and `mg c t` t100;
 * (incr b 1 0 0 cas 99) -> exists; (incr d 1 7 100 cas 99) -> (0, 6, 7).
 */
static enum engine_marith_result bin_arith(struct engine *e, const char *key, bool incr,
                                           uint64_t delta, uint64_t initial, uint32_t exptime,
                                           uint64_t cas, struct engine_marith_out *out) {
    struct engine_marith_opts o = {
        .decr = !incr,
        .delta = delta,
        .compare = cas != 0,
        .cas = cas,
        .vivify = exptime != 0xffffffffu,
        .vivify_exptime = exptime,
        .initial = initial,
    };
    return engine_marith(e, key, strlen(key), &o, out);
}

TEST(binary_incr_with_initial_value) {
    struct engine *e = mk();
    struct engine_marith_out o;
    ASSERT_EQ(bin_arith(e, "b", true, 1, 10, 0xffffffffu, 0, &o), ENGINE_MARITH_NOT_FOUND);
    ASSERT_EQ(bin_arith(e, "b", true, 1, 10, 0, 0, &o), ENGINE_MARITH_OK);
    ASSERT(o.created && o.value == 10 && o.cas == 1 && o.ttl == -1);
    ASSERT_EQ(bin_arith(e, "b", true, 1, 10, 0, 0, &o), ENGINE_MARITH_OK);
    ASSERT(!o.created && o.value == 11 && o.cas == 2);
    ASSERT_EQ(bin_arith(e, "b", false, 5, 10, 0, 0, &o), ENGINE_MARITH_OK);
    ASSERT(o.value == 6 && o.cas == 3);
    ASSERT_EQ(bin_arith(e, "b", false, 50, 10, 0, 0, &o), ENGINE_MARITH_OK);
    ASSERT(o.value == 0 && o.cas == 4);
    ASSERT_STR(get(e, "b"), "0 ");
    ASSERT_EQ(bin_arith(e, "c", true, 1, 7, 100, 0, &o), ENGINE_MARITH_OK);
    ASSERT(o.created && o.value == 7 && o.cas == 5 && o.ttl == 100);
    engine_clock_set(e, T0 + 100);
    ASSERT(get(e, "c") == NULL);
    ASSERT_EQ(bin_arith(e, "b", true, 1, 0, 0, 99, &o), ENGINE_MARITH_EXISTS);
    ASSERT_EQ(bin_arith(e, "b", true, 1, 0, 0, 3, &o), ENGINE_MARITH_EXISTS);
    ASSERT_EQ(bin_arith(e, "d", true, 1, 7, 100, 99, &o), ENGINE_MARITH_OK);
    ASSERT(o.created && o.value == 7 && o.cas == 6);
    /* an absolute expiration, as binary clients send for long TTLs */
    ASSERT_EQ(bin_arith(e, "abs", true, 1, 1, T0 + 1000, 0, &o), ENGINE_MARITH_OK);
    ASSERT_EQ(o.ttl, 900);
    engine_destroy(&e);
}

TEST(delete_hold_refuses_add_for_its_window) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.delete_hold = true;
    struct engine *e = mk_cfg(&cfg);
    struct engine_stats s;
    ASSERT(put_val(e, "k", "v", 0));
    ASSERT_EQ(engine_delete_hold(e, "k", 1, 2, NULL), ENGINE_DELETED);
    ASSERT(get(e, "k") == NULL);
    ASSERT_EQ(engine_delete(e, "k", 1, 0), ENGINE_DELETE_NOT_FOUND);
    ASSERT(!engine_touch(e, "k", 1, 100));
    struct item *it = engine_item_alloc(e, "k", 1, 0, 0, 1, NULL);
    ASSERT_EQ(engine_store(e, it, ENGINE_ADD, 0, NULL), ENGINE_NOT_STORED);
    ASSERT_EQ(engine_store(e, it, ENGINE_REPLACE, 0, NULL), ENGINE_NOT_STORED);
    ASSERT_EQ(engine_store(e, it, ENGINE_APPEND, 0, NULL), ENGINE_NOT_STORED);
    ASSERT_EQ(engine_store(e, it, ENGINE_CAS, 5, NULL), ENGINE_NOT_FOUND);
    engine_item_unref(e, it);
    struct engine_mstore_opts add = {.mode = ENGINE_MSTORE_ADD};
    ASSERT_EQ(mstore(e, "k", "a", &add, NULL), ENGINE_NOT_STORED);
    struct engine_mstore_opts app = {.mode = ENGINE_MSTORE_APPEND, .vivify = true};
    ASSERT_EQ(mstore(e, "k", "a", &app, NULL), ENGINE_NOT_STORED);
    struct engine_mget_opts viv = {.vivify = true, .vivify_exptime = 30};
    bool hit;
    mg(e, "k", &viv, &hit);
    ASSERT(!hit);
    struct engine_marith_opts ma = {.delta = 1, .vivify = true};
    ASSERT_EQ(engine_marith(e, "k", 1, &ma, NULL), ENGINE_MARITH_NOT_STORED);
    ASSERT_EQ(engine_arith(e, "k", 1, true, 1, NULL, NULL), ENGINE_ARITH_NOT_FOUND);
    struct engine_mdelete_opts md = {0};
    ASSERT_EQ(engine_mdelete(e, "k", 1, &md, NULL), ENGINE_MDELETE_NOT_FOUND);
    /* the tombstone is an item: it holds memory and counts */
    engine_stats(e, &s);
    ASSERT_EQ(s.curr_items, 1);
    /* the window ends */
    engine_clock_set(e, T0 + 2);
    ASSERT_EQ(mstore(e, "k", "a", &add, NULL), ENGINE_STORED);
    ASSERT_STR(get(e, "k"), "a");

    /* a set ends a hold; a hold also applies to a key that was missing */
    ASSERT_EQ(engine_delete_hold(e, "n", 1, 60, NULL), ENGINE_DELETE_NOT_FOUND);
    ASSERT_EQ(mstore(e, "n", "a", &add, NULL), ENGINE_NOT_STORED);
    ASSERT(put_val(e, "n", "set", 0));
    ASSERT_STR(get(e, "n"), "set");
    ASSERT_EQ(mstore(e, "n", "b", &add, NULL), ENGINE_NOT_STORED);
    ASSERT_EQ(engine_delete(e, "n", 1, 0), ENGINE_DELETED);
    ASSERT_EQ(mstore(e, "n", "b", &add, NULL), ENGINE_STORED);
    /* a second hold extends the first */
    ASSERT_EQ(engine_delete_hold(e, "h", 1, 5, NULL), ENGINE_DELETE_NOT_FOUND);
    engine_clock_set(e, T0 + 4);
    ASSERT_EQ(engine_delete_hold(e, "h", 1, 5, NULL), ENGINE_DELETE_NOT_FOUND);
    engine_clock_set(e, T0 + 8);
    ASSERT_EQ(mstore(e, "h", "a", &add, NULL), ENGINE_NOT_STORED);
    engine_clock_set(e, T0 + 9);
    ASSERT_EQ(mstore(e, "h", "a", &add, NULL), ENGINE_STORED);
    /* tombstones leave no trace in the reclaim counters; the crawler drops them */
    ASSERT_EQ(engine_delete_hold(e, "gone", 4, 1, NULL), ENGINE_DELETE_NOT_FOUND);
    engine_clock_set(e, T0 + 100);
    while (engine_step(e, 1000) > 0)
        ;
    engine_stats(e, &s);
    ASSERT_EQ(s.curr_items, 3);
    ASSERT_EQ(s.crawler_reclaimed, 0);
    ASSERT_EQ(s.expired_unfetched, 0);
    engine_destroy(&e);
}

TEST(delete_hold_off_by_default) {
    struct engine *e = mk();
    ASSERT(put_val(e, "k", "v", 0));
    ASSERT_EQ(engine_delete_hold(e, "k", 1, 60, NULL), ENGINE_DELETED);
    struct engine_mstore_opts add = {.mode = ENGINE_MSTORE_ADD};
    ASSERT_EQ(mstore(e, "k", "a", &add, NULL), ENGINE_STORED);
    struct engine_stats s;
    engine_stats(e, &s);
    ASSERT_EQ(s.curr_items, 1);
    engine_destroy(&e);
}

#ifndef ENGINE_SEG /* -M: segments always evict */
/* Placeholders and tombstones live in slab memory like any item. */
TEST(placeholders_are_bounded_by_memory) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.mem_limit = 2 * MiB;
    cfg.evict = false;
    struct engine *e = mk_cfg(&cfg);
    struct engine_mget_opts viv = {.vivify = true, .vivify_exptime = 30};
    char key[32];
    int made = 0;
    for (int i = 0; i < 100000; i++) {
        snprintf(key, sizeof(key), "ph%d", i);
        struct engine_item_meta m;
        struct item *it = engine_mget(e, key, strlen(key), &viv, &m, NULL);
        if (it == NULL)
            break;
        made++;
        engine_item_unref(e, it);
    }
    ASSERT(made > 1000 && made < 100000);
    struct engine_stats s;
    engine_stats(e, &s);
    ASSERT_EQ(s.curr_items, (uint64_t)made);
    ASSERT(s.total_malloced <= 2 * MiB);
    engine_destroy(&e);
}
#endif

/* [HEAD] options: explicit CAS, an emptied value, autovivified append. */
TEST(head_options) {
    struct engine *e = mk();
    struct engine_mstore_out out;
    struct engine_mstore_opts set = {.new_cas = 1000};
    ASSERT_EQ(mstore(e, "k", "abc", &set, &out), ENGINE_STORED);
    ASSERT_U64(out.cas, 1000);
    struct engine_mstore_opts app = {.mode = ENGINE_MSTORE_APPEND, .new_cas = 1001};
    ASSERT_EQ(mstore(e, "k", "d", &app, &out), ENGINE_STORED);
    ASSERT(out.cas == 1001 && out.nbytes == 4);
    struct engine_mdelete_opts x = {.remove_value = true, .flags = 9};
    ASSERT_EQ(engine_mdelete(e, "k", 1, &x, NULL), ENGINE_MDELETE_DELETED);
    struct item *it = engine_get(e, "k", 1, NULL);
    ASSERT(it != NULL && item_nbytes(it) == 0 && item_cas(it) == 1001 && item_flags(it) == 9);
    engine_item_unref(e, it);
    struct engine_mdelete_opts xi = {.remove_value = true, .invalidate = true, .new_cas = 7};
    ASSERT(put_val(e, "s", "value", 0));
    ASSERT_EQ(engine_mdelete(e, "s", 1, &xi, NULL), ENGINE_MDELETE_INVALIDATED);
    bool hit;
    struct engine_item_meta m = mg(e, "s", &(struct engine_mget_opts){0}, &hit);
    ASSERT(hit && m.stale && m.won);
    ASSERT_STR(get(e, "s"), "");
    struct engine_mstore_opts viv = {.mode = ENGINE_MSTORE_PREPEND, .vivify = true,
                                     .vivify_exptime = 50};
    ASSERT_EQ(mstore(e, "v", "new", &viv, &out), ENGINE_STORED);
    m = mg(e, "v", &(struct engine_mget_opts){0}, &hit);
    ASSERT(hit && m.ttl == 50);
    ASSERT_EQ(mstore(e, "v", "x", &viv, &out), ENGINE_STORED);
    ASSERT_STR(get(e, "v"), "xnew");
    struct engine_mget_opts mv = {.vivify = true, .vivify_cas = 77};
    it = engine_mget(e, "p", 1, &mv, &m, NULL);
    ASSERT(it != NULL && item_cas(it) == 77 && m.won);
    engine_item_unref(e, it);
    struct engine_marith_opts ma = {.delta = 1, .vivify = true, .initial = 5, .new_cas = 88};
    struct engine_marith_out mo;
    ASSERT_EQ(engine_marith(e, "n", 1, &ma, &mo), ENGINE_MARITH_OK);
    ASSERT(mo.cas == 88 && mo.value == 5);
    ma.new_cas = 89;
    ASSERT_EQ(engine_marith(e, "n", 1, &ma, &mo), ENGINE_MARITH_OK);
    ASSERT(mo.cas == 89 && mo.value == 6);
    engine_destroy(&e);
}

TEST(meta_without_cas) {
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.use_cas = false;
    struct engine *e = mk_cfg(&cfg);
    bool hit;
    struct engine_mget_opts viv = {.vivify = true, .vivify_exptime = 30, .vivify_cas = 5};
    struct item *it = engine_mget(e, "k", 1, &viv, &(struct engine_item_meta){0}, NULL);
    ASSERT(it != NULL && item_cas(it) == 0);
    engine_item_unref(e, it);
    /* observed with -C: `ms k 1 C0` -> EX; `md k I` then `mg k c` -> c0 X W */
    struct engine_mstore_opts c0 = {.compare = true, .cas = 0};
    ASSERT_EQ(mstore(e, "k", "v", &c0, NULL), ENGINE_EXISTS);
    struct engine_mdelete_opts inv = {.invalidate = true, .compare = true, .cas = 0};
    ASSERT_EQ(engine_mdelete(e, "k", 1, &inv, NULL), ENGINE_MDELETE_INVALIDATED);
    struct engine_item_meta m = mg(e, "k", &(struct engine_mget_opts){0}, &hit);
    ASSERT(hit && m.stale && m.won);
    struct engine_marith_opts ma = {.delta = 1, .vivify = true, .initial = 1};
    struct engine_marith_out mo;
    ASSERT_EQ(engine_marith(e, "n", 1, &ma, &mo), ENGINE_MARITH_OK);
    ASSERT_U64(mo.cas, 0);
    ASSERT_EQ(engine_marith(e, "n", 1, &ma, &mo), ENGINE_MARITH_OK);
    ASSERT(mo.cas == 0 && mo.value == 2);
    engine_destroy(&e);
}

/* A stale item that is appended to becomes a new, fresh item (memcached). */
TEST(append_to_stale_item_clears_state) {
    struct engine *e = mk();
    bool hit;
    ASSERT(put_val(e, "k", "a", 0));
    struct engine_mdelete_opts inv = {.invalidate = true};
    engine_mdelete(e, "k", 1, &inv, NULL);
    struct engine_mstore_opts app = {.mode = ENGINE_MSTORE_APPEND};
    ASSERT_EQ(mstore(e, "k", "b", &app, NULL), ENGINE_STORED);
    struct engine_item_meta m = mg(e, "k", &(struct engine_mget_opts){0}, &hit);
    ASSERT(hit && !m.stale && !m.won);
    ASSERT_STR(get(e, "k"), "ab");
    engine_destroy(&e);
}

/*
 * no_claim: the engine decides the win but does not record it (a request
 * memcached fails after its steps); with no_bump it is a pure look (me).
 */
TEST(no_claim_leaves_the_token_free) {
    struct engine *e = mk();
    bool hit;
    ASSERT(put_val(e, "k", "a", 0));
    struct engine_mdelete_opts inv = {.invalidate = true};
    ASSERT_EQ(engine_mdelete(e, "k", 1, &inv, NULL), ENGINE_MDELETE_INVALIDATED);
    struct engine_mget_opts look = {.no_claim = true, .no_bump = true};
    struct engine_item_meta m = mg(e, "k", &look, &hit);
    ASSERT(hit && m.stale && m.won && !m.token_sent && !m.fetched);
    m = mg(e, "k", &look, &hit);
    ASSERT(hit && m.won && !m.token_sent && !m.fetched);
    m = mg(e, "k", &(struct engine_mget_opts){0}, &hit);
    ASSERT(hit && m.won && !m.token_sent);
    m = mg(e, "k", &(struct engine_mget_opts){0}, &hit);
    ASSERT(hit && !m.won && m.token_sent && m.fetched);
    /* a vivify that claims nothing: the next reader neither wins nor waits */
    struct engine_mget_opts viv = {.vivify = true, .vivify_exptime = 30, .vivify_at = 1,
                                   .no_claim = true};
    m = mg(e, "ph", &viv, &hit);
    ASSERT(hit && m.created && m.won);
    m = mg(e, "ph", &(struct engine_mget_opts){0}, &hit);
    ASSERT(hit && !m.won && !m.token_sent);
    engine_destroy(&e);
}

/* The binary-key bit stays on the item it was stored with, as in memcached. */
TEST(key_binary_bit) {
    struct engine *e = mk();
    struct engine_mstore_opts b = {.key_binary = true};
    ASSERT_EQ(mstore(e, "k", "12", &b, NULL), ENGINE_STORED);
    struct item *it = engine_get(e, "k", 1, NULL);
    ASSERT(it != NULL && item_key_binary(it));
    engine_item_unref(e, it);
    uint64_t v;
    ASSERT_EQ(engine_arith(e, "k", 1, true, 1, &v, NULL), ENGINE_ARITH_OK);   /* in place */
    it = engine_get(e, "k", 1, NULL);
    ASSERT(it != NULL && item_key_binary(it));
    engine_item_unref(e, it);
    struct engine_mstore_opts app = {.mode = ENGINE_MSTORE_APPEND, .key_binary = true};
    ASSERT_EQ(mstore(e, "k", "x", &app, NULL), ENGINE_STORED);              /* a new item */
    it = engine_get(e, "k", 1, NULL);
    ASSERT(it != NULL && !item_key_binary(it));
    engine_item_unref(e, it);
    ASSERT_EQ(mstore(e, "k", "12", &(struct engine_mstore_opts){0}, NULL), ENGINE_STORED);
    it = engine_get(e, "k", 1, NULL);
    ASSERT(it != NULL && !item_key_binary(it));
    engine_item_unref(e, it);
    engine_destroy(&e);
}

/*
 * ma on an item a reader still holds, when the number fits: cellard
 * stores a copy (the reader keeps its bytes) that stands for memcached's
 * in-place update -- state bits kept, the touch taken.  A number that
 * grows gets a new item as in memcached: state dropped, the touch only
 * shown.
 */
TEST(held_arith_copy_acts_in_place) {
    struct engine *e = mk();
    bool hit;
    ASSERT(put_val(e, "n", "20", 0));
    struct engine_mdelete_opts inv = {.invalidate = true};
    engine_mdelete(e, "n", 1, &inv, NULL);
    struct item *held = engine_get(e, "n", 1, NULL);
    ASSERT(held != NULL);
    struct engine_marith_opts o = {.delta = 5, .touch = true, .touch_exptime = 100,
                                   .touch_at = 1, .ttl_at = 2};
    struct engine_marith_out out;
    ASSERT_EQ(engine_marith(e, "n", 1, &o, &out), ENGINE_MARITH_OK);
    ASSERT_EQ(out.value, 25);
    ASSERT_EQ(out.ttl, 100);
    ASSERT_STR(get(e, "n"), "25");
    struct engine_item_meta m = mg(e, "n", &(struct engine_mget_opts){0}, &hit);
    ASSERT(hit && m.stale && m.fetched && m.ttl == 100);
    engine_item_unref(e, held);
    /* grows: 99 + 1 = 100 needs a new item */
    ASSERT(put_val(e, "g", "99", 0));
    engine_mdelete(e, "g", 1, &inv, NULL);
    o.delta = 1;
    ASSERT_EQ(engine_marith(e, "g", 1, &o, &out), ENGINE_MARITH_OK);
    ASSERT_EQ(out.ttl, 100);
    m = mg(e, "g", &(struct engine_mget_opts){0}, &hit);
    ASSERT(hit && !m.stale && m.ttl == -1);
    ASSERT_STR(get(e, "g"), "100");
    engine_destroy(&e);
}

TEST(item_header_is_still_small) {
    ASSERT_EQ(sizeof(struct item), 56);
}

int main(void) { return RUN_TESTS(); }
