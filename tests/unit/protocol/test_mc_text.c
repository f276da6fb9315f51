/*
 * test_mc_text.c -- the text protocol codec against memcached 1.6.18.
 *
 * ok_rows and bad_rows hold one request per line, each with the answer
 * Debian's memcached 1.6.18 gave when the same bytes were sent to it (the
 * bad rows were replayed against it, each followed by "version\r\n" so a
 * silenced error shows as nothing before VERSION).  dev_rows are the few
 * places where cellar answers differently on purpose; each says what
 * memcached does.  Every row is also parsed split at every byte, and with
 * more requests behind it.
 */
#include "harness.h"
#include "show.h"
#include "protocol/mc_text.h"

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
#define X2049 X2048 "x"
#define SP10 "          "
#define SP100 SP10 SP10 SP10 SP10 SP10 SP10 SP10 SP10 SP10 SP10
#define SP101 SP100 " "
#define T21 "t0 t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 t12 t13 t14 t15 t16 t17 t18 t19 t20"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                  */
/* ---------------------------------------------------------------------- */

/* Parses from an exact-size heap copy so that a read past len trips ASan. */
static enum mc_parse parse_copy(struct mc_req *req, const char *in, size_t len, size_t *consumed,
                                char **copy) {
    *copy = malloc(len ? len : 1);
    memcpy(*copy, in, len);
    return mc_text_parse(req, *copy, len, consumed);
}


static size_t line_len(const char *in, size_t len) {
    const char *nl = memchr(in, '\n', len);
    return nl ? (size_t)(nl - in) + 1 : 0;
}

/*
 * Two parses agree when every decided field does; spans are compared as
 * offsets from their buffer, so parses of different copies compare.
 */
static const char *req_diff(const struct mc_req *a, const char *abuf, const struct mc_req *b,
                            const char *bbuf) {
    if (a->cmd != b->cmd) return "cmd";
    if (a->err != b->err) return "err";
    if (a->noreply != b->noreply) return "noreply";
    if (a->nkeys != b->nkeys) return "nkeys";
    if (a->flags != b->flags) return "flags";
    if (a->exptime != b->exptime) return "exptime";
    if (a->vlen != b->vlen) return "vlen";
    if (a->cas != b->cas) return "cas";
    if (a->delta != b->delta) return "delta";
    if (a->ntokens != b->ntokens) return "ntokens";
    if (a->key.len != b->key.len) return "key.len";
    if (a->key.len && a->key.p - abuf != b->key.p - bbuf) return "key.p";
    if (a->keys.len != b->keys.len) return "keys.len";
    if (a->keys.len && a->keys.p - abuf != b->keys.p - bbuf) return "keys.p";
    for (int i = 0; i < a->ntokens; i++) {
        if (a->tok[i].len != b->tok[i].len || a->tok[i].p - abuf != b->tok[i].p - bbuf)
            return "tok";
    }
    return NULL;
}

/*
 * Every prefix of a request line is NEED_MORE (or CLOSE past 2048 bytes
 * for what is not a get), the whole line parses as `full` did, and so does
 * the line with the next request already behind it.
 */
static const char *split_check(const char *in, size_t len, enum mc_parse want,
                               const struct mc_req *full, const char *fullbuf) {
    static char why[96];
    struct mc_req req;
    size_t consumed;
    char *copy;
    size_t ll = line_len(in, len);

    for (size_t i = 0; i < ll; i++) {
        enum mc_parse r = parse_copy(&req, in, i, &consumed, &copy);
        free(copy);
        if (i <= MC_LINE_MAX && (r != MC_PARSE_NEED_MORE || consumed != 0)) {
            snprintf(why, sizeof(why), "prefix %zu: %d, consumed %zu", i, r, consumed);
            return why;
        }
    }
    if (ll == 0)
        return NULL;

    char *more = malloc(ll + 16);
    memcpy(more, in, ll);
    memcpy(more + ll, "get next\r\n", 10);
    enum mc_parse r = mc_text_parse(&req, more, ll + 10, &consumed);
    const char *d = (r == want) ? req_diff(&req, more, full, fullbuf) : "result";
    if (d == NULL && want != MC_PARSE_CLOSE && consumed != ll)
        d = "consumed";
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
    enum mc_cmd cmd;
    bool noreply;
    const char *key;            /* first key, or NULL for none */
    uint32_t nkeys;
    uint32_t flags;
    int64_t exptime;
    uint32_t vlen;
    uint64_t cas;
    uint64_t delta;
    int ntokens;
};

/* in, cmd, noreply, key, nkeys, flags, exptime, vlen, cas, delta, ntokens */
static const struct ok_row ok_rows[] = {
    {S("get k\r\n"), MC_CMD_GET, false, "k", 1, 0, 0, 0, 0, 0, 2},
    {S("get k\n"), MC_CMD_GET, false, "k", 1, 0, 0, 0, 0, 0, 2},
    {S("gets a b c\r\n"), MC_CMD_GETS, false, "a", 3, 0, 0, 0, 0, 0, 4},
    {S("bget k\r\n"), MC_CMD_GET, false, "k", 1, 0, 0, 0, 0, 0, 2},
    {S("   get    a   b   \r\n"), MC_CMD_GET, false, "a", 2, 0, 0, 0, 0, 0, 3},
    {S("get k noreply\r\n"), MC_CMD_GET, false, "k", 2, 0, 0, 0, 0, 0, 3},
    {S("get / HTTP/1.1\r\n"), MC_CMD_GET, false, "/", 2, 0, 0, 0, 0, 0, 3},
    {S("get k\r\r\n"), MC_CMD_GET, false, "k\r", 1, 0, 0, 0, 0, 0, 2},
    {S("get k\x00 junk\r\n"), MC_CMD_GET, false, "k", 1, 0, 0, 0, 0, 0, 2},
    {S("get a\tb\r\n"), MC_CMD_GET, false, "a\tb", 1, 0, 0, 0, 0, 0, 2},
    {S("get " K250 "\r\n"), MC_CMD_GET, false, K250, 1, 0, 0, 0, 0, 0, 2},
    {S("get k " K250 "\r\n"), MC_CMD_GET, false, "k", 2, 0, 0, 0, 0, 0, 3},
    {S("get " T21 " t21 t22 t23 t24 t25\r\n"), MC_CMD_GET, false, "t0", 26, 0, 0, 0, 0, 0, 23},
    {S("get " T21 " t21  \r\n"), MC_CMD_GET, false, "t0", 22, 0, 0, 0, 0, 0, 23},
    {S("gat 10 k\r\n"), MC_CMD_GAT, false, "k", 1, 0, 10, 0, 0, 0, 3},
    {S("gats -1 a b\r\n"), MC_CMD_GATS, false, "a", 2, 0, -1, 0, 0, 0, 4},
    {S("gat 10\r\n"), MC_CMD_GAT, false, NULL, 0, 0, 10, 0, 0, 0, 2},
    {S("gats 0 \r\n"), MC_CMD_GATS, false, NULL, 0, 0, 0, 0, 0, 0, 2},
    {S("gat +5 k\r\n"), MC_CMD_GAT, false, "k", 1, 0, 5, 0, 0, 0, 3},
    {S("set k 1 2 3\r\n"), MC_CMD_SET, false, "k", 0, 1, 2, 3, 0, 0, 5},
    {S("set k 0 0 1\n"), MC_CMD_SET, false, "k", 0, 0, 0, 1, 0, 0, 5},
    {S("set k 0 0 1 noreply\r\n"), MC_CMD_SET, true, "k", 0, 0, 0, 1, 0, 0, 6},
    {S("set k 0 0 1 garbage\r\n"), MC_CMD_SET, false, "k", 0, 0, 0, 1, 0, 0, 6},
    {S("set k 0 0 1  noreply  \r\n"), MC_CMD_SET, true, "k", 0, 0, 0, 1, 0, 0, 6},
    {S("add k 7 0 2\r\n"), MC_CMD_ADD, false, "k", 0, 7, 0, 2, 0, 0, 5},
    {S("replace k 0 100 1\r\n"), MC_CMD_REPLACE, false, "k", 0, 0, 100, 1, 0, 0, 5},
    {S("append k 0 0 1 noreply\r\n"), MC_CMD_APPEND, true, "k", 0, 0, 0, 1, 0, 0, 6},
    {S("prepend k 0 0 1\r\n"), MC_CMD_PREPEND, false, "k", 0, 0, 0, 1, 0, 0, 5},
    {S("cas k 1 2 3 99\r\n"), MC_CMD_CAS, false, "k", 0, 1, 2, 3, 99, 0, 6},
    {S("cas k 0 0 1 18446744073709551615 noreply\r\n"), MC_CMD_CAS, true, "k", 0, 0, 0, 1, UINT64_MAX, 0, 7},
    {S("cas k 0 0 1 -18446744073709551615\r\n"), MC_CMD_CAS, false, "k", 0, 0, 0, 1, 1, 0, 6},
    {S("cas k 0 0 1 -9223372036854775809\r\n"), MC_CMD_CAS, false, "k", 0, 0, 0, 1, INT64_MAX, 0, 6},
    {S("cas k 0 0 1 1 garbage\r\n"), MC_CMD_CAS, false, "k", 0, 0, 0, 1, 1, 0, 7},
    {S("set k 4294967295 0 0\r\n"), MC_CMD_SET, false, "k", 0, UINT32_MAX, 0, 0, 0, 0, 5},
    {S("set k -0 0 1\r\n"), MC_CMD_SET, false, "k", 0, 0, 0, 1, 0, 0, 5},
    {S("set k +5 0 1\r\n"), MC_CMD_SET, false, "k", 0, 5, 0, 1, 0, 0, 5},
    {S("set k \t5 0 1\r\n"), MC_CMD_SET, false, "k", 0, 5, 0, 1, 0, 0, 5},
    {S("set k 5\t 0 1\r\n"), MC_CMD_SET, false, "k", 0, 5, 0, 1, 0, 0, 5},
    {S("set k 5\tz 0 1\r\n"), MC_CMD_SET, false, "k", 0, 5, 0, 1, 0, 0, 5},
    {S("set k 007 0 1\r\n"), MC_CMD_SET, false, "k", 0, 7, 0, 1, 0, 0, 5},
    {S("set k -18446744073709551615 0 1\r\n"), MC_CMD_SET, false, "k", 0, 1, 0, 1, 0, 0, 5},
    {S("set k 0 -1 1\r\n"), MC_CMD_SET, false, "k", 0, 0, -1, 1, 0, 0, 5},
    {S("set k 0 9223372036854775807 1\r\n"), MC_CMD_SET, false, "k", 0, 0, INT64_MAX, 1, 0, 0, 5},
    {S("set k 0 -9223372036854775808 1\r\n"), MC_CMD_SET, false, "k", 0, 0, INT64_MIN, 1, 0, 0, 5},
    {S("set k 0 0 2147483645\r\n"), MC_CMD_SET, false, "k", 0, 0, 0, 2147483645, 0, 0, 5},
    {S("set k 0 0 0\r\n"), MC_CMD_SET, false, "k", 0, 0, 0, 0, 0, 0, 5},
    {S("set k 0 0 01\r\n"), MC_CMD_SET, false, "k", 0, 0, 0, 1, 0, 0, 5},
    {S("set k\r 0 0 1\r\n"), MC_CMD_SET, false, "k\r", 0, 0, 0, 1, 0, 0, 5},
    {S("set k 0 0 1\r\r\n"), MC_CMD_SET, false, "k", 0, 0, 0, 1, 0, 0, 5},
    {S("set k 0 0 \v1\r\n"), MC_CMD_SET, false, "k", 0, 0, 0, 1, 0, 0, 5},
    {S("set k 0 0 1\tjunk\r\n"), MC_CMD_SET, false, "k", 0, 0, 0, 1, 0, 0, 5},
    {S("set " K250 " 0 0 1\r\n"), MC_CMD_SET, false, K250, 0, 0, 0, 1, 0, 0, 5},
    {S("delete k\r\n"), MC_CMD_DELETE, false, "k", 0, 0, 0, 0, 0, 0, 2},
    {S("delete k 0\r\n"), MC_CMD_DELETE, false, "k", 0, 0, 0, 0, 0, 0, 3},
    {S("delete k noreply\r\n"), MC_CMD_DELETE, true, "k", 0, 0, 0, 0, 0, 0, 3},
    {S("delete k 0 noreply\r\n"), MC_CMD_DELETE, true, "k", 0, 0, 0, 0, 0, 0, 4},
    {S("delete " K250 "\r\n"), MC_CMD_DELETE, false, K250, 0, 0, 0, 0, 0, 0, 2},
    {S("incr k 1\r\n"), MC_CMD_INCR, false, "k", 0, 0, 0, 0, 0, 1, 3},
    {S("decr k 18446744073709551615\r\n"), MC_CMD_DECR, false, "k", 0, 0, 0, 0, 0, UINT64_MAX, 3},
    {S("incr k 1 noreply\r\n"), MC_CMD_INCR, true, "k", 0, 0, 0, 0, 0, 1, 4},
    {S("incr k 1 2\r\n"), MC_CMD_INCR, false, "k", 0, 0, 0, 0, 0, 1, 4},
    {S("incr k -18446744073709551615\r\n"), MC_CMD_INCR, false, "k", 0, 0, 0, 0, 0, 1, 3},
    {S("decr k -0\r\n"), MC_CMD_DECR, false, "k", 0, 0, 0, 0, 0, 0, 3},
    {S("touch k 10\r\n"), MC_CMD_TOUCH, false, "k", 0, 0, 10, 0, 0, 0, 3},
    {S("touch k -1 noreply\r\n"), MC_CMD_TOUCH, true, "k", 0, 0, -1, 0, 0, 0, 4},
    {S("touch k 1 x\r\n"), MC_CMD_TOUCH, false, "k", 0, 0, 1, 0, 0, 0, 4},
    {S("flush_all\r\n"), MC_CMD_FLUSH_ALL, false, NULL, 0, 0, 0, 0, 0, 0, 1},
    {S("flush_all 0\r\n"), MC_CMD_FLUSH_ALL, false, NULL, 0, 0, 0, 0, 0, 0, 2},
    {S("flush_all noreply\r\n"), MC_CMD_FLUSH_ALL, true, NULL, 0, 0, 0, 0, 0, 0, 2},
    {S("flush_all 0 noreply\r\n"), MC_CMD_FLUSH_ALL, true, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("flush_all -5\r\n"), MC_CMD_FLUSH_ALL, false, NULL, 0, 0, -5, 0, 0, 0, 2},
    {S("flush_all 0 20\r\n"), MC_CMD_FLUSH_ALL, false, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("version\r\n"), MC_CMD_VERSION, false, NULL, 0, 0, 0, 0, 0, 0, 1},
    {S("version foo bar\r\n"), MC_CMD_VERSION, false, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("version noreply\r\n"), MC_CMD_VERSION, false, NULL, 0, 0, 0, 0, 0, 0, 2},
    {S("verbosity 1\r\n"), MC_CMD_VERBOSITY, false, NULL, 0, 0, 0, 0, 0, 1, 2},
    {S("verbosity 1 2\r\n"), MC_CMD_VERBOSITY, false, NULL, 0, 0, 0, 0, 0, 1, 3},
    {S("verbosity 0 noreply\r\n"), MC_CMD_VERBOSITY, true, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("verbosity 1\t\r\n"), MC_CMD_VERBOSITY, false, NULL, 0, 0, 0, 0, 0, 1, 2},
    {S("verbosity 18446744073709551615\r\n"), MC_CMD_VERBOSITY, false, NULL, 0, 0, 0, 0, 0, UINT64_MAX, 2},
    {S("cache_memlimit 100\r\n"), MC_CMD_CACHE_MEMLIMIT, false, NULL, 0, 0, 0, 0, 0, 100, 2},
    {S("cache_memlimit 100 noreply\r\n"), MC_CMD_CACHE_MEMLIMIT, true, NULL, 0, 0, 0, 0, 0, 100, 3},
    {S("cache_memlimit 100 x\r\n"), MC_CMD_CACHE_MEMLIMIT, false, NULL, 0, 0, 0, 0, 0, 100, 3},
    {S("cache_memlimit 1\r\n"), MC_CMD_CACHE_MEMLIMIT, false, NULL, 0, 0, 0, 0, 0, 1, 2},
    {S("stats\r\n"), MC_CMD_STATS, false, NULL, 0, 0, 0, 0, 0, 0, 1},
    {S("stats reset noreply\r\n"), MC_CMD_STATS, false, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("stats cachedump 1 2\r\n"), MC_CMD_STATS, false, NULL, 0, 0, 0, 0, 0, 0, 4},
    {S("stats / HTTP/1.1\r\n"), MC_CMD_STATS, false, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("shutdown\r\n"), MC_CMD_SHUTDOWN, false, NULL, 0, 0, 0, 0, 0, 0, 1},
    {S("shutdown graceful\r\n"), MC_CMD_SHUTDOWN, false, NULL, 0, 0, 0, 0, 0, 0, 2},
    {S("shutdown noreply\r\n"), MC_CMD_SHUTDOWN, false, NULL, 0, 0, 0, 0, 0, 0, 2},
    {S("slabs\r\n"), MC_CMD_SLABS, false, NULL, 0, 0, 0, 0, 0, 0, 1},
    {S("slabs reassign 1 2\r\n"), MC_CMD_SLABS, false, NULL, 0, 0, 0, 0, 0, 0, 4},
    {S("slabs reassign 1 2 noreply\r\n"), MC_CMD_SLABS, false, NULL, 0, 0, 0, 0, 0, 0, 5},
    {S("slabs automove 1 noreply\r\n"), MC_CMD_SLABS, true, NULL, 0, 0, 0, 0, 0, 0, 4},
    {S("slabs automove noreply\r\n"), MC_CMD_SLABS, true, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("lru mode flat\r\n"), MC_CMD_LRU, false, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("lru foo noreply\r\n"), MC_CMD_LRU, true, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("lru / HTTP/1.1\r\n"), MC_CMD_LRU, false, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("lru_crawler\r\n"), MC_CMD_LRU_CRAWLER, false, NULL, 0, 0, 0, 0, 0, 0, 1},
    {S("lru_crawler enable noreply\r\n"), MC_CMD_LRU_CRAWLER, false, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("watch noreply\r\n"), MC_CMD_WATCH, true, NULL, 0, 0, 0, 0, 0, 0, 2},
    {S("watch foo noreply\r\n"), MC_CMD_WATCH, true, NULL, 0, 0, 0, 0, 0, 0, 3},
    {S("quit\r\n"), MC_CMD_QUIT, false, NULL, 0, 0, 0, 0, 0, 0, 1},
    {S("quit now\r\n"), MC_CMD_QUIT, false, NULL, 0, 0, 0, 0, 0, 0, 2},
    {S("mn\r\n"), MC_CMD_META, false, NULL, 0, 0, 0, 0, 0, 0, 1},
    {S("  mn  \r\n"), MC_CMD_META, false, NULL, 0, 0, 0, 0, 0, 0, 1},
    /* a meta line at the start of the buffer: only its verb (the meta codec reads the rest) */
    {S("me k\r\n"), MC_CMD_META, false, NULL, 0, 0, 0, 0, 0, 0, 1},
    {S("mg k v\r\n"), MC_CMD_META, false, NULL, 0, 0, 0, 0, 0, 0, 1},
    {S("  mg k v\r\n"), MC_CMD_META, false, NULL, 0, 0, 0, 0, 0, 0, 3},
};

/*
 * Parses where cellar differs from 1.6.18 on purpose: memcached keeps only
 * the low 32 bits of flags, <bytes> and exptime.  We refuse flags and
 * <bytes> that do not fit, and pass exptime on whole.
 */
static const struct ok_row dev_ok_rows[] = {
    /* memcached: exptime 0, never expires */
    {S("set k 0 4294967296 1\r\n"), MC_CMD_SET, false, "k", 0, 0, 4294967296LL, 1, 0, 0, 5},
    /* memcached: exptime 0 */
    {S("gat 4294967296 k\r\n"), MC_CMD_GAT, false, "k", 1, 0, 4294967296LL, 0, 0, 0, 3},
    /* memcached: 8 (MB) */
    {S("cache_memlimit 4294967304\r\n"), MC_CMD_CACHE_MEMLIMIT, false, NULL, 0, 0, 0, 0, 0, 4294967304ULL, 2},
};

static const char *check_ok_row(const struct ok_row *row, char *buf, const struct mc_req *req,
                                enum mc_parse r, size_t consumed) {
    if (r != MC_PARSE_OK) return "result";
    if (consumed != line_len(row->in, row->len)) return "consumed";
    if (req->cmd != row->cmd) return "cmd";
    if (req->err != MC_ERR_NONE) return "err";
    if (req->noreply != row->noreply) return "noreply";
    if (row->key) {
        if (req->key.len != strlen(row->key) || memcmp(req->key.p, row->key, req->key.len) != 0)
            return "key";
        if (req->key.p < buf || req->key.p + req->key.len > buf + row->len) return "key outside";
    } else if (req->key.len != 0) {
        return "key present";
    }
    if (req->nkeys != row->nkeys) return "nkeys";
    if (req->flags != row->flags) return "flags";
    if (req->exptime != row->exptime) return "exptime";
    if (req->vlen != row->vlen) return "vlen";
    if (req->cas != row->cas) return "cas";
    if (req->delta != row->delta) return "delta";
    if (req->ntokens != row->ntokens) return "ntokens";
    return NULL;
}

static void run_ok_rows(int *th_failed, const struct ok_row *rows, size_t nrows) {
    for (size_t i = 0; i < nrows; i++) {
        const struct ok_row *row = &rows[i];
        struct mc_req req;
        size_t consumed;
        char *buf;
        enum mc_parse r = parse_copy(&req, row->in, row->len, &consumed, &buf);
        const char *why = check_ok_row(row, buf, &req, r, consumed);
        if (why == NULL)
            why = split_check(row->in, row->len, MC_PARSE_OK, &req, buf);
        free(buf);
        if (why != NULL)
            TH_FAIL("ok row %zu \"%s\": %s", i, show(row->in, row->len), why);
    }
}

TEST(valid_requests) {
    run_ok_rows(th_failed, ok_rows, sizeof(ok_rows) / sizeof(ok_rows[0]));
}

TEST(deliberate_differences_valid) {
    run_ok_rows(th_failed, dev_ok_rows, sizeof(dev_ok_rows) / sizeof(dev_ok_rows[0]));
}

/* ---------------------------------------------------------------------- */
/* Malformed requests                                                       */
/* ---------------------------------------------------------------------- */

struct bad_row {
    const char *in;
    size_t len;
    enum mc_parse want;
    enum mc_err err;
    bool noreply;               /* memcached answered nothing */
};

static const struct bad_row bad_rows[] = {
    /* framing and unknown commands */
    {S("\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S(" \n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("x\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("xy\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("\x00get k\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("GET k\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("Set k 0 0 1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("get\tk\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("get\r k\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("misbehave\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("debugtime 1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("m\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("mx\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("x HTTP/1.1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("foo HTTP\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("gxx / HTTP/1.1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("sxx / HTTP/1.1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("addx / HTTP/1.1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("cxx HTTP/1.1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("ixx HTTP/1.1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("dxx HTTP/1.1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("touchx / HTTP/1.1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("mx / HTTP/1.1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("foo " T21 " t21 HTTP/1.1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S(X2048 "x\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("GET / HTTP/1.1\r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("POST / HTTP/1.1\r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("HTTP/1.1\r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("foo HTTP/\r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("  foo   HTTP/1.0  \r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("mxy / HTTP/1.1\r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("bxx HTTP/1.1\r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("zz HTTP/1.1\r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("replacex / HTTP/1.1\r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("quitx / HTTP/1.1\r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("foo " T21 " HTTP/1.1\r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("foo " T21 " HTTP/1.1 x\r\n"), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    /* lines without a newline */
    {S(""), MC_PARSE_NEED_MORE, MC_ERR_NONE, false},
    {S("get k"), MC_PARSE_NEED_MORE, MC_ERR_NONE, false},
    {S("get k\r"), MC_PARSE_NEED_MORE, MC_ERR_NONE, false},
    {S("set k 0 0 1"), MC_PARSE_NEED_MORE, MC_ERR_NONE, false},
    {S(X2048), MC_PARSE_NEED_MORE, MC_ERR_NONE, false},
    {S(X2049), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("get " X2048), MC_PARSE_NEED_MORE, MC_ERR_NONE, false},
    {S("gets " X2048), MC_PARSE_NEED_MORE, MC_ERR_NONE, false},
    {S(SP100 "get " X2048), MC_PARSE_NEED_MORE, MC_ERR_NONE, false},
    {S(SP100 "gets " X2048), MC_PARSE_NEED_MORE, MC_ERR_NONE, false},
    {S(SP101 "get " X2048), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("gat 1 " X2048), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("bget " X2048), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("get" X2048), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("get\t" X2048), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("\rget " X2048), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S("set k 0 0 1 " X2048), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    {S(SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100 SP100), MC_PARSE_CLOSE, MC_ERR_NONE, false},
    /* retrieval */
    {S("get\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("get \r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("gets\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("gat\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("bget\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("gat abc k\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_EXPTIME, false},
    {S("gats x\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_EXPTIME, false},
    {S("gat 99999999999999999999 k\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_EXPTIME, false},
    {S("gat abc " K251 "\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_EXPTIME, false},
    {S("gat 1 " K251 "\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, false},
    {S("get " K251 "\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, false},
    {S("get k " K251 "\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, false},
    {S("gets " T21 " t21 t22 " K251 " t23\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, false},
    /* storage */
    {S("set k\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("set k 0 0\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("set k 0 0 1 2 3\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("set k 0 0 1 noreply extra\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("set " K251 " 0 0 1 noreply extra\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("cas k 0 0 1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("cas k 0 0 1 1 noreply x\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("set k -1 0 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 5z 0 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 0x5 0 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 1-1 0 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 18446744073709551616 0 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 0 0 -1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 0 0 +\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 0 0 \t\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 0 0 2147483646\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 0 0 2147483647\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 0 abc 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 0 99999999999999999999 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set k 0 -9223372036854775809 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("set " K251 " 0 0 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, false},
    {S("set " K251 " 0 0 1 noreply\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, true},
    {S("set k 0 0 noreply\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, true},
    {S("add k 0 0 x noreply\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, true},
    {S("cas k 0 0 1 abc\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("cas k 0 0 1 -1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("cas k 0 0 1 18446744073709551616\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("cas k 0 0 1 -9223372036854775808\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("cas k 0 0 1 noreply\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, true},
    /* delete */
    {S("delete\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("delete k 0 0 0\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("delete k 5\r\n"), MC_PARSE_ERROR, MC_ERR_DELETE_USAGE, false},
    {S("delete k 5 noreply\r\n"), MC_PARSE_ERROR, MC_ERR_DELETE_USAGE, true},
    {S("delete k noreply 0\r\n"), MC_PARSE_ERROR, MC_ERR_DELETE_USAGE, false},
    {S("delete k 0 0\r\n"), MC_PARSE_ERROR, MC_ERR_DELETE_USAGE, false},
    {S("delete k 00\r\n"), MC_PARSE_ERROR, MC_ERR_DELETE_USAGE, false},
    {S("delete k -0\r\n"), MC_PARSE_ERROR, MC_ERR_DELETE_USAGE, false},
    {S("delete " K251 " 5\r\n"), MC_PARSE_ERROR, MC_ERR_DELETE_USAGE, false},
    {S("delete " K251 "\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, false},
    {S("delete " K251 " 0\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, false},
    {S("delete " K251 " noreply\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, true},
    /* incr, decr, touch */
    {S("incr k\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("incr k 1 2 3\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("decr k 1 2 noreply\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("incr k -1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_DELTA, false},
    {S("incr k abc\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_DELTA, false},
    {S("decr k 1.5\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_DELTA, false},
    {S("incr k 18446744073709551616\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_DELTA, false},
    {S("incr k abc noreply\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_DELTA, true},
    {S("decr k noreply\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_DELTA, true},
    {S("incr " K251 " 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, false},
    {S("incr " K251 " x\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, false},
    {S("touch k\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("touch k 1 2 3\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("touch k abc\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_EXPTIME, false},
    {S("touch k 99999999999999999999\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_EXPTIME, false},
    {S("touch k abc noreply\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_EXPTIME, true},
    {S("touch " K251 " 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_KEY, false},
    /* admin */
    {S("flush_all 1 2 3\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("flush_all abc\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_EXPTIME, false},
    {S("flush_all 99999999999999999999\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_EXPTIME, false},
    {S("flush_all noreply 10\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_EXPTIME, false},
    {S("flush_all abc noreply\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_EXPTIME, true},
    {S("verbosity\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("verbosity 1 2 3\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("verbosity 1 2 noreply\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("verbosity abc\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("verbosity -1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("verbosity 18446744073709551616\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    {S("verbosity noreply\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, true},
    {S("cache_memlimit\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("cache_memlimit abc\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("cache_memlimit -1\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("cache_memlimit 1 2 3\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
    {S("cache_memlimit abc noreply\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, true},
    {S("lru\r\n"), MC_PARSE_ERROR, MC_ERR_ERROR, false},
};

/*
 * Malformed input where cellar answers differently from 1.6.18 on
 * purpose (see dev_ok_rows).
 */
static const struct bad_row dev_bad_rows[] = {
    /* memcached: STORED with flags 0 */
    {S("set k 4294967296 0 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    /* memcached: STORED with flags 4294967295 */
    {S("set k -9223372036854775809 0 1\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
    /* memcached: reads a 1-byte value */
    {S("set k 0 0 4294967297\r\n"), MC_PARSE_ERROR, MC_ERR_BAD_FORMAT, false},
};

static void run_bad_rows(int *th_failed, const struct bad_row *rows, size_t nrows) {
    for (size_t i = 0; i < nrows; i++) {
        const struct bad_row *row = &rows[i];
        struct mc_req req;
        size_t consumed;
        char *buf;
        enum mc_parse r = parse_copy(&req, row->in, row->len, &consumed, &buf);
        const char *why = NULL;
        size_t ll = line_len(row->in, row->len);

        if (r != row->want)
            why = "result";
        else if (r == MC_PARSE_ERROR && (req.err != row->err || consumed != ll))
            why = "err/consumed";
        else if (r == MC_PARSE_ERROR && req.noreply != row->noreply)
            why = "noreply";
        else if (r == MC_PARSE_NEED_MORE && consumed != 0)
            why = "consumed on NEED_MORE";
        else if (ll > 0)
            why = split_check(row->in, row->len, row->want, &req, buf);
        free(buf);
        if (why != NULL)
            TH_FAIL("bad row %zu \"%s\": %s (got %d err %d noreply %d)", i,
                    show(row->in, row->len), why, r, req.err, req.noreply);
    }
}

TEST(malformed_requests) {
    run_bad_rows(th_failed, bad_rows, sizeof(bad_rows) / sizeof(bad_rows[0]));
}

TEST(deliberate_differences_malformed) {
    run_bad_rows(th_failed, dev_bad_rows, sizeof(dev_bad_rows) / sizeof(dev_bad_rows[0]));
}

/* On an error the command is still named, so the caller can count it. */
TEST(error_names_the_command) {
    struct mc_req req;
    size_t consumed;

    ASSERT_EQ(mc_text_parse(&req, S("flush_all abc\r\n"), &consumed), MC_PARSE_ERROR);
    ASSERT_EQ(req.cmd, MC_CMD_FLUSH_ALL);
    ASSERT_EQ(mc_text_parse(&req, S("touch k x\r\n"), &consumed), MC_PARSE_ERROR);
    ASSERT_EQ(req.cmd, MC_CMD_TOUCH);
    ASSERT_EQ(mc_text_parse(&req, S("frob k\r\n"), &consumed), MC_PARSE_ERROR);
    ASSERT_EQ(req.cmd, MC_CMD_NONE);
}

/* A pipeline parses line after line, each from where the last one ended. */
TEST(pipeline) {
    static const char in[] = "set a 0 0 1\r\nget a b\nflush_all noreply\r\nbogus\r\nget";
    const char *p = in;
    size_t left = sizeof(in) - 1, consumed;
    struct mc_req req;

    ASSERT_EQ(mc_text_parse(&req, p, left, &consumed), MC_PARSE_OK);
    ASSERT_EQ(req.cmd, MC_CMD_SET);
    ASSERT_EQ(consumed, 13);
    p += consumed, left -= consumed;
    ASSERT_EQ(mc_text_parse(&req, p, left, &consumed), MC_PARSE_OK);
    ASSERT_EQ(req.cmd, MC_CMD_GET);
    ASSERT_EQ(req.nkeys, 2);
    ASSERT_EQ(req.keys.len, 3);
    ASSERT_EQ(consumed, 8);
    p += consumed, left -= consumed;
    ASSERT_EQ(mc_text_parse(&req, p, left, &consumed), MC_PARSE_OK);
    ASSERT(req.noreply);
    p += consumed, left -= consumed;
    ASSERT_EQ(mc_text_parse(&req, p, left, &consumed), MC_PARSE_ERROR);
    ASSERT_EQ(consumed, 7);
    p += consumed, left -= consumed;
    ASSERT_EQ(mc_text_parse(&req, p, left, &consumed), MC_PARSE_NEED_MORE);
    ASSERT_EQ(consumed, 0);
}

/* ---------------------------------------------------------------------- */
/* Many keys                                                                */
/* ---------------------------------------------------------------------- */

TEST(two_thousand_keys) {
    size_t cap = 2000 * 12 + 16, len = 0;
    char *line = malloc(cap);
    len += (size_t)snprintf(line + len, cap - len, "gets");
    for (int i = 0; i < 2000; i++)
        len += (size_t)snprintf(line + len, cap - len, (i % 7) ? " key%d" : "   key%d", i);
    len += (size_t)snprintf(line + len, cap - len, "  \r\n");

    struct mc_req req;
    size_t consumed;
    char *buf;
    ASSERT_EQ(parse_copy(&req, line, len, &consumed, &buf), MC_PARSE_OK);
    ASSERT_EQ(consumed, len);
    ASSERT_EQ(req.cmd, MC_CMD_GETS);
    ASSERT_EQ(req.nkeys, 2000);
    ASSERT_EQ(req.ntokens, MC_MAX_TOKENS - 1);

    struct mc_span rest = req.keys, key;
    char want[16];
    int n = 0;
    while (mc_text_next_key(&rest, &key)) {
        snprintf(want, sizeof(want), "key%d", n);
        if (key.len != strlen(want) || memcmp(key.p, want, key.len) != 0) {
            free(buf), free(line);
            TH_FAIL("key %d is '%.*s'", n, (int)key.len, key.p);
        }
        if (key.p < buf || key.p + key.len > buf + len) {
            free(buf), free(line);
            TH_FAIL("key %d outside the buffer", n);
        }
        n++;
    }
    free(buf);
    ASSERT_EQ(n, 2000);
    ASSERT(!mc_text_next_key(&rest, &key));

    /* One key too long anywhere refuses the whole line. */
    char *at = strstr(line, " key1500 ");
    size_t blen = len + 300;
    char *bad = malloc(blen);
    size_t head = (size_t)(at - line) + 1;
    memcpy(bad, line, head);
    memset(bad + head, 'z', 251);
    memcpy(bad + head + 251, line + head, len - head);
    blen = len + 251;
    ASSERT_EQ(mc_text_parse(&req, bad, blen, &consumed), MC_PARSE_ERROR);
    ASSERT_EQ(req.err, MC_ERR_BAD_KEY);
    ASSERT_EQ(consumed, blen);
    free(bad);
    free(line);
}

TEST(long_multiget_of_long_keys) {
    /* 2000 keys of 250 bytes: half a megabyte on one line. */
    size_t len = 4 + 2000 * 251 + 2;
    char *line = malloc(len);
    memcpy(line, "get", 3);
    for (int i = 0; i < 2000; i++) {
        line[3 + i * 251] = ' ';
        memset(line + 4 + i * 251, 'a' + i % 26, 250);
    }
    memcpy(line + len - 3, "\r\n", 2);
    len -= 1;

    struct mc_req req;
    size_t consumed;
    for (size_t cut = 2040; cut < 2060; cut++)
        ASSERT_EQ(mc_text_parse(&req, line, cut, &consumed), MC_PARSE_NEED_MORE);
    ASSERT_EQ(mc_text_parse(&req, line, len, &consumed), MC_PARSE_OK);
    ASSERT_EQ(req.nkeys, 2000);
    struct mc_span rest = req.keys, key;
    int n = 0;
    while (mc_text_next_key(&rest, &key)) {
        ASSERT_EQ(key.len, 250);
        ASSERT_EQ(key.p[0], 'a' + n % 26);
        n++;
    }
    ASSERT_EQ(n, 2000);
    free(line);
}

/*
 * mc_text_next_key() against a plain byte-by-byte split, on random lines of
 * spaces and every other kind of byte (high bytes, 0x21, 0x1f around the
 * space), at every length and alignment; each line ends its allocation.
 */
TEST(next_key_matches_plain_split) {
    static const unsigned char bytes[] = {' ', ' ', ' ', 'a', '!', 0x1f, 0x80, 0xa0, 0xff, 0x00};
    unsigned seed = 12345;
    for (int round = 0; round < 20000; round++) {
        seed = seed * 1103515245u + 12345u;
        size_t len = (seed >> 16) % 41, off = (seed >> 8) % 8;
        unsigned char *buf = malloc(off + len + 1);
        ASSERT(buf != NULL);
        unsigned char *line = buf + off + 1;    /* the line ends the allocation */
        for (size_t i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            line[i] = bytes[(seed >> 16) % sizeof(bytes)];
        }
        struct mc_span rest = {(const char *)line, len}, key;
        size_t i = 0;
        for (;;) {
            while (i < len && line[i] == ' ')
                i++;
            if (i == len)
                break;
            size_t j = i;
            while (j < len && line[j] != ' ')
                j++;
            ASSERT(mc_text_next_key(&rest, &key));
            ASSERT_EQ(key.p, (const char *)line + i);
            ASSERT_EQ(key.len, j - i);
            i = j;
        }
        ASSERT(!mc_text_next_key(&rest, &key));
        free(buf);
    }
}

TEST(next_key_edges) {
    struct mc_span rest = {NULL, 0}, key;
    ASSERT(!mc_text_next_key(&rest, &key));
    static const char s[] = "  a  bb ";
    rest.p = s;
    rest.len = sizeof(s) - 1;
    ASSERT(mc_text_next_key(&rest, &key));
    ASSERT_EQ(key.len, 1);
    ASSERT_MEM(key.p, "a", 1);
    ASSERT(mc_text_next_key(&rest, &key));
    ASSERT_EQ(key.len, 2);
    ASSERT_MEM(key.p, "bb", 2);
    ASSERT(!mc_text_next_key(&rest, &key));
    ASSERT_EQ(rest.len, 0);
}

/*
 * "get <key>" has a fast path; a leading space sends the same line through
 * the general tokenizer (memcached skips leading spaces), and the two must
 * agree on every field, shifted by that one byte, for keys of every length
 * up to one past the limit and of every awkward byte.
 */
TEST(get_fast_path_matches_tokenizer) {
    static const char bytes[] = "aZ9_\t\r\x01\x7f\xff ";
    char line[300], key[260];
    for (size_t n = 1; n <= MC_KEY_MAX + 1; n++) {
        for (size_t v = 0; v < 4; v++) {
            for (size_t i = 0; i < n; i++)
                key[i] = bytes[(i * 7 + v * 3 + n) % (sizeof(bytes) - 1)];
            if (v == 0)
                memset(key, 'k', n);
            int len = snprintf(line, sizeof(line), " get %.*s\r\n", (int)n, key);
            struct mc_req fast, slow;
            size_t cf = 0, cs = 0;
            enum mc_parse rf = mc_text_parse(&fast, line + 1, (size_t)len - 1, &cf);
            enum mc_parse rs = mc_text_parse(&slow, line, (size_t)len, &cs);
            ASSERT_EQ(rf, rs);
            ASSERT_EQ(cf + 1, cs);
            const char *d = req_diff(&fast, line + 1, &slow, line + 1);
            if (d != NULL)
                TH_FAIL("key length %zu variant %zu: %s differs", n, v, d);
        }
    }
}

/* Read-ahead: keys of get/gets/set lines, value blocks stepped over. */
TEST(scan_keys_for_read_ahead) {
    static const char in[] = "get a bb\r\ngets c\r\nset d 0 0 5 noreply\r\nget x\r\n"
                             "set e 1 2 3\r\nabc\r\ndelete f\r\nget g\r\n";
    struct mc_span k[8];
    size_t used = 0;
    uint64_t stores = 0;
    unsigned n = mc_text_scan_keys(in, sizeof(in) - 1, k, 8, &stores, &used);
    ASSERT_EQ(n, 5);
    ASSERT_EQ(stores, 0x18);                /* d and e */
    ASSERT_MEM(k[0].p, "a", 1);
    ASSERT_MEM(k[1].p, "bb", 2);
    ASSERT_MEM(k[2].p, "c", 1);
    ASSERT_MEM(k[3].p, "d", 1);             /* its value "get x" is not a line */
    ASSERT_MEM(k[4].p, "e", 1);
    ASSERT_EQ(used, strstr(in, "delete") - in);
    ASSERT_EQ(mc_text_scan_keys(in, sizeof(in) - 1, k, 2, &stores, &used), 2);
    ASSERT_EQ(stores, 0);
    ASSERT_EQ(used, strstr(in, "gets") - in);
    /* a set whose value has not all arrived ends the scan before it */
    ASSERT_EQ(mc_text_scan_keys("get a\r\nset b 0 0 9\r\nxy", 22, k, 8, &stores, &used), 1);
    ASSERT_EQ(stores, 0);
    ASSERT_EQ(used, 7);
}

/* Meta lines too: mg keys, ms keys with their values stepped over, no base64 key. */
TEST(scan_keys_meta_for_read_ahead) {
    static const char in[] = "mg a v f\r\nms b 4 T0\r\nmg x\r\nmg YmFzZQ== b v\r\n"
                             "ms Yw== 2 b\r\nzz\r\nmg c\r\nget d\r\nmn\r\nmg e\r\n";
    struct mc_span k[8];
    size_t used = 0;
    uint64_t stores = 0;
    unsigned n = mc_text_scan_keys(in, sizeof(in) - 1, k, 8, &stores, &used);
    ASSERT_EQ(n, 4);
    ASSERT_MEM(k[0].p, "a", 1);
    ASSERT_EQ(k[0].len, 1);
    ASSERT_MEM(k[1].p, "b", 1);             /* its value "mg x" is not a line */
    ASSERT_MEM(k[2].p, "c", 1);             /* the base64 keys left out */
    ASSERT_MEM(k[3].p, "d", 1);
    ASSERT_EQ(stores, 0x2);
    ASSERT_EQ(used, strstr(in, "mn") - in);
    /* an ms whose value has not all arrived, or whose length is not one, ends the scan */
    ASSERT_EQ(mc_text_scan_keys("mg a\r\nms b 9\r\nxy", 17, k, 8, &stores, &used), 1);
    ASSERT_EQ(used, 6);
    ASSERT_EQ(mc_text_scan_keys("mg a\r\nms b S9\r\nxy", 18, k, 8, &stores, &used), 1);
    ASSERT_EQ(used, 6);
}

/* ---------------------------------------------------------------------- */
/* Round trips                                                              */
/* ---------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void) {
    uint64_t x = rng_state;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dULL;
}

/* A number of random size, so that short and long decimals both come up. */
static uint64_t rnd_num(void) {
    return rnd() >> (rnd() % 64);
}

static void rnd_key(char *key, size_t *nkey) {
    static const char alpha[] = "abcXYZ019_-:/.\t\r\x01\x7f\xff";
    size_t n = 1 + rnd() % (rnd() % 8 ? 20 : MC_KEY_MAX);
    for (size_t i = 0; i < n; i++)
        key[i] = alpha[rnd() % (sizeof(alpha) - 1)];
    if (key[0] == '\t' || key[0] == '\r')
        key[0] = 'k';
    key[n] = '\0';
    *nkey = n;
}

TEST(storage_round_trip) {
    static const char *const names[] = {"set", "add", "replace", "append", "prepend", "cas"};
    static const enum mc_cmd cmds[] = {MC_CMD_SET, MC_CMD_ADD, MC_CMD_REPLACE, MC_CMD_APPEND,
                                       MC_CMD_PREPEND, MC_CMD_CAS};
    char key[MC_KEY_MAX + 1], line[512];
    size_t nkey;

    for (int i = 0; i < 20000; i++) {
        int c = (int)(rnd() % 6);
        rnd_key(key, &nkey);
        uint32_t flags = (uint32_t)rnd_num();
        int64_t exptime = (int64_t)rnd_num() * (rnd() % 2 ? 1 : -1);
        uint32_t vlen = (uint32_t)(rnd_num() % ((uint64_t)INT_MAX - 1));
        uint64_t cas = rnd_num();
        bool noreply = rnd() % 2;
        int len;
        if (cmds[c] == MC_CMD_CAS)
            len = snprintf(line, sizeof(line), "%s %s %" PRIu32 " %" PRId64 " %" PRIu32 " %" PRIu64 "%s\r\n",
                           names[c], key, flags, exptime, vlen, cas, noreply ? " noreply" : "");
        else
            len = snprintf(line, sizeof(line), "%s %s %" PRIu32 " %" PRId64 " %" PRIu32 "%s\r\n",
                           names[c], key, flags, exptime, vlen, noreply ? " noreply" : "");

        struct mc_req req;
        size_t consumed;
        ASSERT_EQ(mc_text_parse(&req, line, (size_t)len, &consumed), MC_PARSE_OK);
        ASSERT_EQ(consumed, len);
        ASSERT_EQ(req.cmd, cmds[c]);
        ASSERT_EQ(req.key.len, nkey);
        ASSERT_MEM(req.key.p, key, nkey);
        ASSERT_U64(req.flags, flags);
        ASSERT_EQ(req.exptime, exptime);
        ASSERT_U64(req.vlen, vlen);
        ASSERT_U64(req.cas, cmds[c] == MC_CMD_CAS ? cas : 0);
        ASSERT_EQ(req.noreply, noreply);
    }
}

TEST(key_number_round_trip) {
    char key[MC_KEY_MAX + 1], line[512];
    size_t nkey;

    for (int i = 0; i < 20000; i++) {
        rnd_key(key, &nkey);
        uint64_t v = rnd_num();
        int64_t t = (int64_t)rnd_num() * (rnd() % 2 ? 1 : -1);
        bool noreply = rnd() % 2;
        struct mc_req req;
        size_t consumed;
        int len;

        switch (rnd() % 4) {
        case 0:
            len = snprintf(line, sizeof(line), "incr %s %" PRIu64 "%s\r\n", key, v, noreply ? " noreply" : "");
            ASSERT_EQ(mc_text_parse(&req, line, (size_t)len, &consumed), MC_PARSE_OK);
            ASSERT_EQ(req.cmd, MC_CMD_INCR);
            ASSERT_U64(req.delta, v);
            break;
        case 1:
            len = snprintf(line, sizeof(line), "decr %s %" PRIu64 "%s\r\n", key, v, noreply ? " noreply" : "");
            ASSERT_EQ(mc_text_parse(&req, line, (size_t)len, &consumed), MC_PARSE_OK);
            ASSERT_EQ(req.cmd, MC_CMD_DECR);
            ASSERT_U64(req.delta, v);
            break;
        case 2:
            len = snprintf(line, sizeof(line), "touch %s %" PRId64 "%s\r\n", key, t, noreply ? " noreply" : "");
            ASSERT_EQ(mc_text_parse(&req, line, (size_t)len, &consumed), MC_PARSE_OK);
            ASSERT_EQ(req.cmd, MC_CMD_TOUCH);
            ASSERT_EQ(req.exptime, t);
            break;
        default:
            noreply = false;
            len = snprintf(line, sizeof(line), "gat %" PRId64 " %s\r\n", t, key);
            ASSERT_EQ(mc_text_parse(&req, line, (size_t)len, &consumed), MC_PARSE_OK);
            ASSERT_EQ(req.cmd, MC_CMD_GAT);
            ASSERT_EQ(req.exptime, t);
            ASSERT_EQ(req.nkeys, 1);
            break;
        }
        ASSERT_EQ(consumed, len);
        ASSERT_EQ(req.key.len, nkey);
        ASSERT_MEM(req.key.p, key, nkey);
        ASSERT_EQ(req.noreply, noreply);
    }
}

TEST(fmt_u64_line) {
    char out[32], want[32];
    uint64_t edges[64];
    size_t n = 0;
    uint64_t p = 1;
    edges[n++] = 0;
    edges[n++] = UINT64_MAX;
    edges[n++] = UINT32_MAX;
    edges[n++] = (uint64_t)UINT32_MAX + 1;
    for (int i = 0; i < 19; i++, p *= 10) {
        edges[n++] = p;
        edges[n++] = p - 1 + (p == 1);
        edges[n++] = p + 1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t len = mc_text_fmt_u64_line(out, edges[i]);
        int wl = snprintf(want, sizeof(want), "%" PRIu64 "\r\n", edges[i]);
        ASSERT_EQ(len, wl);
        ASSERT_MEM(out, want, len);
    }
    for (int i = 0; i < 100000; i++) {
        uint64_t v = rnd_num();
        size_t len = mc_text_fmt_u64_line(out, v);
        int wl = snprintf(want, sizeof(want), "%" PRIu64 "\r\n", v);
        ASSERT_EQ(len, wl);
        ASSERT_MEM(out, want, len);
        /* and the number reads back as incr's delta */
        char line[64];
        struct mc_req req;
        size_t consumed;
        memcpy(line, "incr k ", 7);
        memcpy(line + 7, out, len);
        ASSERT_EQ(mc_text_parse(&req, line, 7 + len, &consumed), MC_PARSE_OK);
        ASSERT_U64(req.delta, v);
    }
}

TEST(fmt_value) {
    char out[MC_VALUE_LINE_MAX], want[MC_VALUE_LINE_MAX + 64], key[MC_KEY_MAX + 1];
    size_t nkey;

    for (int i = 0; i < 50000; i++) {
        rnd_key(key, &nkey);
        if (i == 0) {
            memset(key, 'k', MC_KEY_MAX);
            key[MC_KEY_MAX] = '\0';
            nkey = MC_KEY_MAX;
        }
        uint32_t flags = i == 0 ? UINT32_MAX : (uint32_t)rnd_num();
        uint32_t nbytes = i == 0 ? UINT32_MAX : (uint32_t)rnd_num();
        uint64_t cas = i == 0 ? UINT64_MAX : rnd_num();
        bool with_cas = i == 0 || rnd() % 2;
        size_t len = mc_text_fmt_value(out, key, nkey, flags, nbytes, with_cas, cas);
        int wl = with_cas
            ? snprintf(want, sizeof(want), "VALUE %s %" PRIu32 " %" PRIu32 " %" PRIu64 "\r\n", key, flags, nbytes, cas)
            : snprintf(want, sizeof(want), "VALUE %s %" PRIu32 " %" PRIu32 "\r\n", key, flags, nbytes);
        ASSERT(len <= MC_VALUE_LINE_MAX);
        ASSERT_EQ(len, wl);
        ASSERT_MEM(out, want, len);
    }
}

TEST(err_strings) {
    static const char *const want[] = {
        [MC_ERR_ERROR] = "ERROR\r\n",
        [MC_ERR_BAD_FORMAT] = "CLIENT_ERROR bad command line format\r\n",
        [MC_ERR_BAD_DELTA] = "CLIENT_ERROR invalid numeric delta argument\r\n",
        [MC_ERR_BAD_EXPTIME] = "CLIENT_ERROR invalid exptime argument\r\n",
        [MC_ERR_DELETE_USAGE] = "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n",
    };
    for (int e = MC_ERR_ERROR; e <= MC_ERR_DELETE_USAGE; e++) {
        ASSERT_STR(mc_text_err_str((enum mc_err)e), want[e]);
        ASSERT_EQ(mc_text_err_len((enum mc_err)e), strlen(want[e]));
    }
    for (int e = 0; e < MC_ERR_COUNT; e++) {
        const char *s = mc_text_err_str((enum mc_err)e);
        size_t n = mc_text_err_len((enum mc_err)e);
        ASSERT_EQ(n, strlen(s));
        ASSERT(e == MC_ERR_NONE || (n >= 2 && memcmp(s + n - 2, "\r\n", 2) == 0));
    }
    ASSERT_EQ(mc_text_err_len(MC_ERR_COUNT), 0);
}

int main(void) {
    return RUN_TESTS();
}
