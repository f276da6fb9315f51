/*
 * mc_text.c -- memcached's text protocol: parse request lines, format replies.
 *
 * One call looks at the bytes from a line start and decides everything the
 * line means, in the order memcached 1.6.18 decides it:
 *
 *   buf --memchr('\n')--> none: NEED_MORE, or CLOSE once more than 2048
 *    |                    bytes wait and the line is not a get/gets
 *    v
 *   line = [buf, '\n'), less one '\r' before the '\n', cut at the first NUL
 *    |     (memcached hands the line to strlen-based code)
 *    v
 *   tokens: split on ' ' only; 23 kept; a get-family line goes on past them
 *    |
 *    v
 *   command name --> token count (ERROR) --> noreply --> key length -->
 *   numbers (CLIENT_ERROR ...) --> OK, with spans into buf
 *
 * Nothing survives between calls: an incomplete line is parsed again from
 * its start once more bytes have arrived, so a split at any byte cannot
 * desynchronise the stream.  No allocation, no I/O, no logging.
 *
 * memcached counts one more token than there are words (an empty terminal
 * token); its checks are written against that count.  Here `n` is the
 * number of words, and the checks below are memcached's with one less.
 */
#include "protocol/mc_text.h"

#include "core/copy.h"
#include "protocol/mc_num.h"

#include <limits.h>
#include <string.h>

/* memcached splits at most this many words before it stops (MAX_TOKENS - 1). */
#define MC_TOK_KEEP (MC_MAX_TOKENS - 1)

/* A line this long with no newline yet closes the connection (not get/gets). */
#define MC_LEADING_SPACES_MAX 100

/* Largest <bytes>: memcached adds 2 for "\r\n" to an int. */
#define MC_VLEN_MAX (INT_MAX - 2)

/* ---------------------------------------------------------------------- */
/* Numbers, as memcached's safe_strto* see them                             */
/* ---------------------------------------------------------------------- */

/* Numbers are read as memcached's safe_strto* read them (protocol/mc_num.h). */
static inline bool parse_u64(struct mc_span t, uint64_t *out) {
    return mc_num_u64(t.p, t.len, out);
}

static inline bool parse_i64(struct mc_span t, int64_t *out) {
    return mc_num_i64(t.p, t.len, out);
}

/* ---------------------------------------------------------------------- */
/* Tokens                                                                   */
/* ---------------------------------------------------------------------- */

static inline bool span_is(struct mc_span t, const char *lit, size_t n) {
    return t.len == n && memcmp(t.p, lit, n) == 0;
}
#define SPAN_IS(t, lit) span_is((t), (lit), sizeof(lit) - 1)

/*
 * Splits [p, end) on runs of ' ' into tok[], keeping at most MC_TOK_KEEP
 * words, as memcached's tokenizer does.  Returns the number kept.  When
 * the limit is reached, *rest is where memcached would resume (one byte
 * past the space that ended the last kept word) if any byte is left there,
 * else NULL; only the get family reads past the limit.
 */
static int tokenize(const char *p, const char *end, struct mc_span *tok, const char **rest) {
    int n = 0;

    *rest = NULL;
    while (n < MC_TOK_KEEP) {
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            return n;
        const char *q = memchr(p, ' ', (size_t)(end - p));
        if (q == NULL)
            q = end;
        tok[n].p = p;
        tok[n].len = (size_t)(q - p);
        n++;
        p = q;
    }
    if (p < end && p + 1 < end)
        *rest = p + 1;
    return n;
}

/* ---------------------------------------------------------------------- */
/* Command names                                                            */
/* ---------------------------------------------------------------------- */

/*
 * Maps a command word to its command, MC_CMD_META for the six meta
 * commands, or MC_CMD_NONE.  Names are case-sensitive, as in memcached.
 * Debug-build commands (misbehave, debugtime) are unknown in a release
 * memcached, and so here.
 */
static enum mc_cmd lookup_cmd(struct mc_span w) {
    const char *s = w.p;

    switch (w.len) {
    case 2:
        if (s[0] == 'm' && memchr("gsdnae", s[1], 6) != NULL)
            return MC_CMD_META;
        break;
    case 3:
        if (SPAN_IS(w, "get")) return MC_CMD_GET;
        if (SPAN_IS(w, "set")) return MC_CMD_SET;
        if (SPAN_IS(w, "gat")) return MC_CMD_GAT;
        if (SPAN_IS(w, "add")) return MC_CMD_ADD;
        if (SPAN_IS(w, "cas")) return MC_CMD_CAS;
        if (SPAN_IS(w, "lru")) return MC_CMD_LRU;
        break;
    case 4:
        if (SPAN_IS(w, "gets")) return MC_CMD_GETS;
        if (SPAN_IS(w, "incr")) return MC_CMD_INCR;
        if (SPAN_IS(w, "decr")) return MC_CMD_DECR;
        if (SPAN_IS(w, "gats")) return MC_CMD_GATS;
        if (SPAN_IS(w, "bget")) return MC_CMD_GET;
        if (SPAN_IS(w, "quit")) return MC_CMD_QUIT;
        break;
    case 5:
        if (SPAN_IS(w, "touch")) return MC_CMD_TOUCH;
        if (SPAN_IS(w, "stats")) return MC_CMD_STATS;
        if (SPAN_IS(w, "slabs")) return MC_CMD_SLABS;
        if (SPAN_IS(w, "watch")) return MC_CMD_WATCH;
        break;
    case 6:
        if (SPAN_IS(w, "delete")) return MC_CMD_DELETE;
        if (SPAN_IS(w, "append")) return MC_CMD_APPEND;
        break;
    case 7:
        if (SPAN_IS(w, "replace")) return MC_CMD_REPLACE;
        if (SPAN_IS(w, "prepend")) return MC_CMD_PREPEND;
        if (SPAN_IS(w, "version")) return MC_CMD_VERSION;
        break;
    case 8:
        if (SPAN_IS(w, "shutdown")) return MC_CMD_SHUTDOWN;
        if (SPAN_IS(w, "extstore")) return MC_CMD_EXTSTORE;
        break;
    case 9:
        if (SPAN_IS(w, "flush_all")) return MC_CMD_FLUSH_ALL;
        if (SPAN_IS(w, "verbosity")) return MC_CMD_VERBOSITY;
        break;
    case 11:
        if (SPAN_IS(w, "lru_crawler")) return MC_CMD_LRU_CRAWLER;
        break;
    case 13:
        if (SPAN_IS(w, "refresh_certs")) return MC_CMD_REFRESH_CERTS;
        break;
    case 14:
        if (SPAN_IS(w, "cache_memlimit")) return MC_CMD_CACHE_MEMLIMIT;
        break;
    default:
        break;
    }
    return MC_CMD_NONE;
}

/* ---------------------------------------------------------------------- */
/* Per-command checks                                                       */
/* ---------------------------------------------------------------------- */

static inline enum mc_parse fail(struct mc_req *req, enum mc_err err) {
    req->err = err;
    return MC_PARSE_ERROR;
}

/* memcached's set_noreply_maybe(): the last word is exactly "noreply". */
static inline bool last_is_noreply(const struct mc_req *req, int n) {
    return SPAN_IS(req->tok[n - 1], "noreply");
}

/*
 * get, gets, bget, gat, gats.  memcached wants at least one word after the
 * command (else ERROR), reads gat's exptime first (CLIENT_ERROR invalid
 * exptime argument), then walks the keys; a key over 250 bytes anywhere on
 * the line replaces the whole answer with CLIENT_ERROR bad command line
 * format.  Here every key is checked before anything is answered, so the
 * caller never has to undo a half-built response.  "gat <exptime>" with no
 * key at all is valid and answers just END (nkeys == 0).
 */
static enum mc_parse parse_retrieval(struct mc_req *req, int n, const char *rest,
                                     const char *end) {
    int first = 1;

    if (n < 2)
        return fail(req, MC_ERR_ERROR);
    if (req->cmd == MC_CMD_GAT || req->cmd == MC_CMD_GATS) {
        if (!parse_i64(req->tok[1], &req->exptime))
            return fail(req, MC_ERR_BAD_EXPTIME);
        first = 2;
    }

    uint32_t nkeys = 0;
    for (int i = first; i < n; i++) {
        if (req->tok[i].len > MC_KEY_MAX)
            return fail(req, MC_ERR_BAD_KEY);
        nkeys++;
    }
    /* Words past the tokenizer's limit: the long multiget. */
    for (const char *p = rest; p != NULL && p < end;) {
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            break;
        const char *q = memchr(p, ' ', (size_t)(end - p));
        if (q == NULL)
            q = end;
        if ((size_t)(q - p) > MC_KEY_MAX)
            return fail(req, MC_ERR_BAD_KEY);
        nkeys++;
        p = q;
    }

    req->nkeys = nkeys;
    if (nkeys > 0) {
        req->key = req->tok[first];
        req->keys.p = req->tok[first].p;
        req->keys.len = (size_t)(end - req->tok[first].p);
    } else {
        req->key.p = end;
        req->keys.p = end;
    }
    return MC_PARSE_OK;
}

/*
 * set/add/replace/append/prepend <key> <flags> <exptime> <bytes> [noreply]
 * and cas <key> <flags> <exptime> <bytes> <cas> [noreply].  A wrong word
 * count is ERROR; any other fault is CLIENT_ERROR bad command line format,
 * silenced by a trailing noreply.  A sixth (cas: seventh) word that is not
 * "noreply" is ignored.  memcached does not swallow the data block after
 * any of these errors: the caller reads the next line as a command.
 *
 * Where 1.6.18 truncates to 32 bits we refuse instead: flags above
 * 2^32-1 and <bytes> above INT_MAX-2 (memcached stores flags 2^32 as 0
 * and takes bytes 2^32+1 as 1).  exptime is accepted over the whole int64
 * range, as memcached accepts it, and passed on untruncated.
 */
static enum mc_parse parse_storage(struct mc_req *req, int n) {
    bool cas = req->cmd == MC_CMD_CAS;
    int want = cas ? 6 : 5;
    uint64_t flags;
    int64_t vlen;

    if (n != want && n != want + 1)
        return fail(req, MC_ERR_ERROR);
    req->noreply = last_is_noreply(req, n);
    if (!parse_u64(req->tok[2], &flags) || flags > UINT32_MAX ||
        !parse_i64(req->tok[3], &req->exptime) ||
        !parse_i64(req->tok[4], &vlen))
        return fail(req, MC_ERR_BAD_FORMAT);
    if (cas && !parse_u64(req->tok[5], &req->cas))
        return fail(req, MC_ERR_BAD_FORMAT);
    if (vlen < 0 || vlen > MC_VLEN_MAX)
        return fail(req, MC_ERR_BAD_FORMAT);
    req->flags = (uint32_t)flags;
    req->vlen = (uint32_t)vlen;
    if (req->tok[1].len > MC_KEY_MAX)
        return fail(req, MC_ERR_BAD_KEY);   /* vlen known: mcrouter reads the block past */
    req->key = req->tok[1];
    return MC_PARSE_OK;
}

/*
 * cellar's delete hold-off extension (-o delete_hold): for a line of the
 * form "delete <key> <seconds> [noreply]" -- which memcached refuses with
 * the Usage error, and so does this codec -- also report the key and the
 * seconds (plain digits, 1 to 2^32-1) in req->key and req->exptime, so a
 * server with the extension enabled can act on the line instead.  Any
 * other refused line leaves req->exptime at 0.
 */
static void delete_hold_seconds(struct mc_req *req, int n, bool nr) {
    struct mc_span w = req->tok[2];
    uint64_t v = 0;
    if ((n == 4 && !nr) || w.len == 0 || w.len > 10 || req->tok[1].len > MC_KEY_MAX)
        return;
    for (size_t i = 0; i < w.len; i++) {
        if (w.p[i] < '0' || w.p[i] > '9')
            return;
        v = v * 10 + (uint64_t)(w.p[i] - '0');
    }
    if (v == 0 || v > UINT32_MAX)
        return;
    req->key = req->tok[1];
    req->exptime = (int64_t)v;
}

/*
 * delete <key> [0] [noreply].  memcached takes 1 to 3 words after the
 * command (else ERROR).  With more than the key, the line is valid only as
 * "delete k 0", "delete k noreply" or "delete k 0 noreply"; anything else
 * gets the Usage error (silenced when the last word is noreply, as in
 * "delete k 5 noreply").  The word checks come before the key length.
 */
static enum mc_parse parse_delete(struct mc_req *req, int n) {
    if (n < 2 || n > 4)
        return fail(req, MC_ERR_ERROR);
    if (n > 2) {
        bool zero = SPAN_IS(req->tok[2], "0");
        bool nr = last_is_noreply(req, n);
        req->noreply = nr;
        if (!((n == 3 && (zero || nr)) || (n == 4 && zero && nr))) {
            delete_hold_seconds(req, n, nr);
            return fail(req, MC_ERR_DELETE_USAGE);
        }
    }
    if (req->tok[1].len > MC_KEY_MAX)
        return fail(req, MC_ERR_BAD_KEY);
    req->key = req->tok[1];
    return MC_PARSE_OK;
}

/*
 * incr/decr <key> <delta> [noreply] and touch <key> <exptime> [noreply]:
 * 2 or 3 words after the command (else ERROR); a third word that is not
 * noreply is ignored.  Errors: key > 250 (bad command line format), then
 * the number (invalid numeric delta / invalid exptime argument).
 */
static enum mc_parse parse_key_num(struct mc_req *req, int n) {
    if (n != 3 && n != 4)
        return fail(req, MC_ERR_ERROR);
    req->noreply = last_is_noreply(req, n);
    if (req->tok[1].len > MC_KEY_MAX)
        return fail(req, MC_ERR_BAD_KEY);
    req->key = req->tok[1];
    if (req->cmd == MC_CMD_TOUCH) {
        if (!parse_i64(req->tok[2], &req->exptime))
            return fail(req, MC_ERR_BAD_EXPTIME);
    } else {
        if (!parse_u64(req->tok[2], &req->delta))
            return fail(req, MC_ERR_BAD_DELTA);
    }
    return MC_PARSE_OK;
}

/*
 * The commands that are neither storage nor retrieval.  Those whose answer
 * depends on server settings (stats, shutdown, slabs, lru, lru_crawler,
 * watch, extstore) are checked here only as far as memcached checks them
 * before looking at any setting; the rest of their words are in tok[] for
 * the caller.
 */
static enum mc_parse parse_admin(struct mc_req *req, int n) {
    switch (req->cmd) {
    case MC_CMD_FLUSH_ALL:
        /*
         * flush_all [delay] [noreply]: up to 2 words after it.  The delay
         * is read only when the words are not just "noreply", so
         * "flush_all 10 20" flushes after 10 s and "flush_all noreply 10"
         * fails on "noreply".
         */
        if (n > 3)
            return fail(req, MC_ERR_ERROR);
        req->noreply = last_is_noreply(req, n);
        if (n != (req->noreply ? 2 : 1) && !parse_i64(req->tok[1], &req->exptime))
            return fail(req, MC_ERR_BAD_EXPTIME);
        return MC_PARSE_OK;

    case MC_CMD_VERBOSITY:
        /* verbosity <level> [x]: "verbosity noreply" is a silent error. */
        if (n != 2 && n != 3)
            return fail(req, MC_ERR_ERROR);
        req->noreply = last_is_noreply(req, n);
        if (!parse_u64(req->tok[1], &req->delta))
            return fail(req, MC_ERR_BAD_FORMAT);
        return MC_PARSE_OK;

    case MC_CMD_CACHE_MEMLIMIT:
        /* A bad number here is plain ERROR, unlike everywhere else. */
        if (n != 2 && n != 3)
            return fail(req, MC_ERR_ERROR);
        req->noreply = last_is_noreply(req, n);
        if (!parse_u64(req->tok[1], &req->delta))
            return fail(req, MC_ERR_ERROR);
        return MC_PARSE_OK;

    case MC_CMD_LRU:
    case MC_CMD_EXTSTORE:
        if (n < 2)
            return fail(req, MC_ERR_ERROR);
        req->noreply = last_is_noreply(req, n);
        return MC_PARSE_OK;

    case MC_CMD_SLABS:
        /* Only the automove branch looks for noreply. */
        req->noreply = n >= 3 && SPAN_IS(req->tok[1], "automove") && last_is_noreply(req, n);
        return MC_PARSE_OK;

    case MC_CMD_WATCH:
    case MC_CMD_REFRESH_CERTS:
        req->noreply = last_is_noreply(req, n);
        return MC_PARSE_OK;

    default:
        /* version, quit, stats, shutdown, lru_crawler, meta: any words. */
        return MC_PARSE_OK;
    }
}

/*
 * The line guard for a buffer with no newline.  memcached waits for more
 * unless more than MC_LINE_MAX bytes are buffered; then it keeps waiting
 * only for what looks like a long multiget: at most 100 spaces, then
 * "get " or "gets ".  Anything else closes the connection.
 */
static enum mc_parse no_newline(const char *buf, size_t len) {
    size_t i = 0;

    if (len <= MC_LINE_MAX)
        return MC_PARSE_NEED_MORE;
    while (i < len && buf[i] == ' ')
        i++;
    if (i > MC_LEADING_SPACES_MAX)
        return MC_PARSE_CLOSE;
    if ((len - i >= 4 && memcmp(buf + i, "get ", 4) == 0) ||
        (len - i >= 5 && memcmp(buf + i, "gets ", 5) == 0))
        return MC_PARSE_NEED_MORE;
    return MC_PARSE_CLOSE;
}

/*
 * The parser proper; see the diagram at the top of the file.  Unknown
 * commands answer ERROR, except that memcached closes the connection on
 * an unknown command whose last word starts with "HTTP/" -- but only when
 * the command's first letter is not one it dispatches on (g s a c i d t,
 * and two-letter m words), since those branches answer ERROR themselves.
 */
enum mc_parse mc_text_parse(struct mc_req *req, const char *buf, size_t len, size_t *consumed) {
    req->cmd = MC_CMD_NONE;
    req->err = MC_ERR_NONE;
    req->noreply = false;
    req->key.p = NULL;
    req->key.len = 0;
    req->keys.p = NULL;
    req->keys.len = 0;
    req->nkeys = 0;
    req->flags = 0;
    req->exptime = 0;
    req->vlen = 0;
    req->cas = 0;
    req->delta = 0;
    req->ntokens = 0;
    *consumed = 0;

    if (len == 0)
        return MC_PARSE_NEED_MORE;
    const char *nl = memchr(buf, '\n', len);
    if (nl == NULL)
        return no_newline(buf, len);

    const char *end = nl;
    if (end - buf > 1 && end[-1] == '\r')
        end--;
    const char *nul = memchr(buf, '\0', (size_t)(end - buf));
    if (nul != NULL)
        end = nul;
    *consumed = (size_t)(nl - buf) + 1;

    /* The commonest line, "get <key>", needs no general tokenizer. */
    if (end - buf > 4 && memcmp(buf, "get ", 4) == 0) {
        const char *k = buf + 4;
        size_t klen = (size_t)(end - k);
        if (klen <= MC_KEY_MAX && memchr(k, ' ', klen) == NULL) {
            req->cmd = MC_CMD_GET;
            req->ntokens = 2;
            req->tok[0] = (struct mc_span){buf, 3};
            req->tok[1] = (struct mc_span){k, klen};
            req->key = req->keys = req->tok[1];
            req->nkeys = 1;
            return MC_PARSE_OK;
        }
    }

    /* A meta line goes whole to the meta codec, which splits it itself. */
    if (mc_text_meta_line(buf, len)) {
        req->cmd = MC_CMD_META;
        req->ntokens = 1;
        req->tok[0] = (struct mc_span){buf, 2};
        return MC_PARSE_OK;
    }

    const char *rest;
    int n = tokenize(buf, end, req->tok, &rest);
    req->ntokens = n;
    if (n == 0 || req->tok[0].len < 2)
        return fail(req, MC_ERR_ERROR);

    req->cmd = lookup_cmd(req->tok[0]);
    switch (req->cmd) {
    case MC_CMD_NONE: {
        char c = req->tok[0].p[0];
        if (memchr("gsacidt", c, 7) != NULL || (c == 'm' && req->tok[0].len == 2))
            return fail(req, MC_ERR_ERROR);
        if (req->tok[n - 1].len >= 5 && memcmp(req->tok[n - 1].p, "HTTP/", 5) == 0)
            return MC_PARSE_CLOSE;
        return fail(req, MC_ERR_ERROR);
    }
    case MC_CMD_GET:
    case MC_CMD_GETS:
    case MC_CMD_GAT:
    case MC_CMD_GATS:
        return parse_retrieval(req, n, rest, end);
    case MC_CMD_SET:
    case MC_CMD_ADD:
    case MC_CMD_REPLACE:
    case MC_CMD_APPEND:
    case MC_CMD_PREPEND:
    case MC_CMD_CAS:
        return parse_storage(req, n);
    case MC_CMD_DELETE:
        return parse_delete(req, n);
    case MC_CMD_INCR:
    case MC_CMD_DECR:
    case MC_CMD_TOUCH:
        return parse_key_num(req, n);
    default:
        return parse_admin(req, n);
    }
}

bool mc_text_next_key(struct mc_span *rest, struct mc_span *key) {
    if (rest->len == 0)
        return false;
    const char *p = rest->p;
    const char *e = p + rest->len;
    while (p < e && *p == ' ')
        p++;
    if (p == e) {
        rest->p = e;
        rest->len = 0;
        return false;
    }
    const char *q = memchr(p, ' ', (size_t)(e - p));
    if (q == NULL)
        q = e;
    key->p = p;
    key->len = (size_t)(q - p);
    rest->p = q;
    rest->len = (size_t)(e - q);
    return true;
}

/* The value length at the end of "set <key> <flags> <exptime> <bytes>
   [noreply]" in [p, end), read backwards; false when there is none. */
static bool set_length(const char *p, const char *end, uint64_t *vlen) {
    if (end - p > 8 && memcmp(end - 8, " noreply", 8) == 0)
        end -= 8;
    uint64_t v = 0, scale = 1;
    const char *d = end;
    while (d > p && d[-1] >= '0' && d[-1] <= '9' && end - d < 9) {
        d--;
        v += (uint64_t)(*d - '0') * scale;
        scale *= 10;
    }
    *vlen = v;
    return d != end && d > p && d[-1] == ' ';
}

/* Does a meta line's rest (its flags) hold b, the key in base64? */
static bool meta_b64(struct mc_span rest) {
    struct mc_span w;
    if (rest.len == 0 || memchr(rest.p, 'b', rest.len) == NULL)
        return false;               /* the common case: no b anywhere */
    while (mc_text_next_key(&rest, &w))
        if (w.p[0] == 'b')
            return true;
    return false;
}

/* The number at the front of s, as a meta ms's datalen; false: none. */
static bool scan_len(struct mc_span *s, uint64_t *v) {
    struct mc_span w;
    return mc_text_next_key(s, &w) && parse_u64(w, v);
}

unsigned mc_text_scan_keys(const char *buf, size_t len, struct mc_span *key, unsigned max,
                           uint64_t *stores, size_t *used) {
    const char *p = buf, *end = buf + len;
    unsigned n = 0;
    *stores = 0;
    while (n < max && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL || nl - p < 5)
            break;
        const char *le = nl[-1] == '\r' ? nl - 1 : nl;
        bool gets = memcmp(p, "gets ", 5) == 0;
        struct mc_span rest = {p + 4 + gets, (size_t)(le - (p + 4 + gets))}, w;
        if (gets || memcmp(p, "get ", 4) == 0) {
            while (n < max && mc_text_next_key(&rest, &w))
                if (w.len <= MC_KEY_MAX)
                    key[n++] = w;
            p = nl + 1;
        } else if (memcmp(p, "set ", 4) == 0) {
            uint64_t vlen;
            if (!mc_text_next_key(&rest, &w) || w.len > MC_KEY_MAX ||
                !set_length(rest.p, le, &vlen) || vlen + 2 > (uint64_t)(end - nl - 1))
                break;
            *stores |= 1ULL << n;
            key[n++] = w;
            p = nl + 1 + vlen + 2;
        } else if (p[0] == 'm' && (p[1] == 'g' || p[1] == 's') && p[2] == ' ') {
            /* mg <key> <flags>*, ms <key> <datalen> <flags>* and its value;
               a base64 key (b) is other bytes than these: no hint for it */
            rest = (struct mc_span){p + 3, (size_t)(le - (p + 3))};
            uint64_t vlen = 0;
            if (!mc_text_next_key(&rest, &w) || w.len > MC_KEY_MAX ||
                (p[1] == 's' && (!scan_len(&rest, &vlen) || end - nl - 1 < 2 ||
                                 vlen > (uint64_t)(end - nl - 1) - 2)))
                break;
            if (!meta_b64(rest)) {
                *stores |= (uint64_t)(p[1] == 's') << n;
                key[n++] = w;
            }
            p = nl + 1 + (p[1] == 's' ? vlen + 2 : 0);
        } else {
            break;
        }
    }
    *used = (size_t)(p - buf);
    return n;
}

/* ---------------------------------------------------------------------- */
/* Formatting                                                               */
/* ---------------------------------------------------------------------- */

#define ERR_LINE(s) { s "\r\n", sizeof(s "\r\n") - 1 }

static const struct {
    const char *s;
    size_t len;
} err_lines[MC_ERR_COUNT] = {
    [MC_ERR_NONE] = { "", 0 },
    [MC_ERR_ERROR] = ERR_LINE("ERROR"),
    [MC_ERR_BAD_FORMAT] = ERR_LINE("CLIENT_ERROR bad command line format"),
    [MC_ERR_BAD_KEY] = ERR_LINE("CLIENT_ERROR bad command line format"),
    [MC_ERR_BAD_DELTA] = ERR_LINE("CLIENT_ERROR invalid numeric delta argument"),
    [MC_ERR_BAD_EXPTIME] = ERR_LINE("CLIENT_ERROR invalid exptime argument"),
    [MC_ERR_DELETE_USAGE] = ERR_LINE("CLIENT_ERROR bad command line format.  "
                                     "Usage: delete <key> [noreply]"),
    /* Never produced: memcached closes instead of answering. */
    [MC_ERR_LINE_TOO_LONG] = ERR_LINE("CLIENT_ERROR line too long"),
};

const char *mc_text_err_str(enum mc_err err) {
    if ((unsigned)err >= MC_ERR_COUNT)
        return "";
    return err_lines[err].s;
}

size_t mc_text_err_len(enum mc_err err) {
    if ((unsigned)err >= MC_ERR_COUNT)
        return 0;
    return err_lines[err].len;
}

size_t mc_text_fmt_value(char *out, const char *key, size_t nkey, uint32_t flags,
                         uint32_t nbytes, bool with_cas, uint64_t cas) {
    char *p = out;

    memcpy(p, "VALUE ", 6);
    p += 6;
    copy_short(p, key, nkey);
    p += nkey;
    *p++ = ' ';
    p = mc_num_fmt_u64(p, flags);
    *p++ = ' ';
    p = mc_num_fmt_u64(p, nbytes);
    if (with_cas) {
        *p++ = ' ';
        p = mc_num_fmt_u64(p, cas);
    }
    *p++ = '\r';
    *p++ = '\n';
    return (size_t)(p - out);
}

size_t mc_text_fmt_u64_line(char *out, uint64_t v) {
    char *p = mc_num_fmt_u64(out, v);
    *p++ = '\r';
    *p++ = '\n';
    return (size_t)(p - out);
}
