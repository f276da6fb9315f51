/*
 * mc_meta.c -- memcached's meta protocol: parse request lines, format replies.
 *
 * A meta line is decided in the order memcached 1.6.18 decides it; the
 * first failing step answers:
 *
 *   line --> words (split on ' ', at most 20 looked at)
 *     |
 *     +-- "mn" ............................. OK (any words)
 *     +-- "me" -> key? key <= 250? b? ....... OK / CLIENT_ERROR bad command line format
 *     +-- "mg" "ms" "md" "ma":
 *           key present ................... else ERROR
 *           key <= 250 bytes .............. else bad command line format
 *           ms: datalen word present ...... else bad command line format
 *           <= 19 words ................... else options flags [are] too long
 *           ms: datalen 0..INT_MAX-2 ...... else bad command line format
 *           -- from here an ms error also swallows datalen + 2 bytes --
 *           flags, left to right .......... invalid / duplicate stop at once;
 *                                           a bad number (or base64 key) is
 *                                           remembered, the last one answers;
 *                                           md and ma say "invalid or
 *                                           duplicate flag" for all of them
 *           ms, ma: M mode ................ invalid mode for ms|ma M token
 *           O token <= 32 bytes ........... ms, md: opaque token too long;
 *                                           mg, ma: OK, reported later by
 *                                           mc_meta_fmt (memcached notices it
 *                                           only while writing the answer)
 *
 * Nothing survives between calls; no allocation, no I/O.
 */
#include "protocol/mc_meta.h"

#include <limits.h>
#include <string.h>

#include "protocol/mc_num.h"
#include "protocol/mc_put.h"

/* Words looked at: one more than a line may have, to tell "too long". */
#define META_WORDS (MC_META_MAX_WORDS + 1)

/* Largest ms datalen: memcached adds 2 for "\r\n" to an int. */
#define META_VLEN_MAX (INT_MAX - 2)

/* ---------------------------------------------------------------------- */
/* Base64                                                                   */
/* ---------------------------------------------------------------------- */

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The 6-bit value of an alphabet byte, 0 for '=', -1 for anything else. */
static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    if (c == '=')
        return 0;
    return -1;
}

/*
 * memcached's decoder is lenient in its own way, and keys decode to what
 * it decodes them to, so this one follows it step by step: count the
 * alphabet bytes first (a non-zero multiple of 4 or fail), then take them
 * four at a time, skipping everything else.  A block holding '=' ends the
 * decoding; one '=' drops the block's last byte, two drop two, more fail.
 * Where the '=' sit does not matter: "Y=Q=" is one byte.
 */
size_t mc_meta_b64_decode(const char *src, size_t len, char *out) {
    const unsigned char *s = (const unsigned char *)src;
    size_t count = 0, o = 0;
    unsigned block[4];
    int n = 0, pad = 0;

    for (size_t i = 0; i < len; i++)
        if (b64_value(s[i]) >= 0)
            count++;
    if (count == 0 || count % 4 != 0)
        return 0;

    for (size_t i = 0; i < len; i++) {
        int v = b64_value(s[i]);
        if (v < 0)
            continue;
        if (s[i] == '=')
            pad++;
        block[n++] = (unsigned)v;
        if (n < 4)
            continue;
        out[o++] = (char)((block[0] << 2) | (block[1] >> 4));
        out[o++] = (char)(((block[1] << 4) | (block[2] >> 2)) & 0xff);
        out[o++] = (char)(((block[2] << 6) | block[3]) & 0xff);
        n = 0;
        if (pad > 0) {
            if (pad > 2)
                return 0;
            o -= (size_t)pad;
            break;
        }
    }
    return o;
}

size_t mc_meta_b64_encode(const char *src, size_t len, char *out) {
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0, i = 0;

    for (; len - i >= 3; i += 3) {
        out[o++] = b64_alphabet[s[i] >> 2];
        out[o++] = b64_alphabet[((s[i] & 0x03) << 4) | (s[i + 1] >> 4)];
        out[o++] = b64_alphabet[((s[i + 1] & 0x0f) << 2) | (s[i + 2] >> 6)];
        out[o++] = b64_alphabet[s[i + 2] & 0x3f];
    }
    if (len - i == 1) {
        out[o++] = b64_alphabet[s[i] >> 2];
        out[o++] = b64_alphabet[(s[i] & 0x03) << 4];
        out[o++] = '=';
        out[o++] = '=';
    } else if (len - i == 2) {
        out[o++] = b64_alphabet[s[i] >> 2];
        out[o++] = b64_alphabet[((s[i] & 0x03) << 4) | (s[i + 1] >> 4)];
        out[o++] = b64_alphabet[(s[i + 1] & 0x0f) << 2];
        out[o++] = '=';
    }
    return o;
}

/* ---------------------------------------------------------------------- */
/* Parsing                                                                  */
/* ---------------------------------------------------------------------- */

static inline enum mc_parse meta_fail(struct mc_meta_req *req, enum mc_meta_err err) {
    req->err = err;
    return MC_PARSE_ERROR;
}

/*
 * Splits [p, end) on runs of ' ' into w[], at most META_WORDS words (the
 * rest of a longer line is never looked at: it is an error either way).
 * Returns the number of words stored.
 */
static int meta_words(const char *p, const char *end, struct mc_span *w) {
    int n = 0;

    while (n < META_WORDS) {
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            break;
        const char *q = memchr(p, ' ', (size_t)(end - p));
        if (q == NULL)
            q = end;
        w[n].p = p;
        w[n].len = (size_t)(q - p);
        n++;
        p = q;
    }
    return n;
}

/*
 * memcached's _meta_flag_preparse(): one pass over the flag words, in
 * order.  An unknown flag, a repeated flag (by first byte) or a first byte
 * >= 127 ends the pass at once with its own error.  A bad number, a bad M
 * length or an undecodable key only marks the request bad and the pass
 * goes on, so a later such fault replaces the message of an earlier one
 * (a bad F leaves the message as it was: "bad command line format" unless
 * something else set it).  Returns MC_META_ERR_NONE or the error.
 */
static enum mc_meta_err meta_flags(struct mc_meta_req *req, const struct mc_span *w, int n) {
    enum mc_meta_err pending = MC_META_ERR_NONE;
    bool bad = false;
    uint64_t seen[2] = {0, 0};      /* first bytes 0-127, a bit each */

    for (int i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i].p[0];
        const char *num = w[i].p + 1;
        size_t nlen = w[i].len - 1;
        uint64_t u;

        uint64_t bit = (uint64_t)1 << (c & 63);
        if (c >= 127 || (seen[c >> 6] & bit))
            return MC_META_ERR_DUPLICATE_FLAG;
        seen[c >> 6] |= bit;

        switch (c) {
        case 'b': {
            size_t k = mc_meta_b64_decode(req->key.p, req->key.len, req->keybuf);
            req->key_binary = true;
            if (k == 0) {
                pending = MC_META_ERR_DECODING_KEY;
                bad = true;
            }
            req->key.p = req->keybuf;
            req->key.len = k;
            break;
        }
        case 'N':
        case 'T':
        case 'R': {
            int64_t v;
            if (!mc_num_i64(num, nlen, &v)) {
                pending = MC_META_ERR_BAD_TOKEN;
                bad = true;
            } else if (c == 'N') {
                req->vivify_ttl = v;
            } else if (c == 'T') {
                req->ttl = v;
            } else {
                req->recache = v;
            }
            break;
        }
        case 'F':
            /* memcached keeps the low 32 bits of a larger value; refused here. */
            if (!mc_num_u64(num, nlen, &u) || u > UINT32_MAX)
                bad = true;
            else
                req->client_flags = (uint32_t)u;
            break;
        case 'C':
            if (!mc_num_u64(num, nlen, &req->cas)) {
                pending = MC_META_ERR_BAD_TOKEN;
                bad = true;
            }
            break;
        case 'J':
            if (!mc_num_u64(num, nlen, &req->initial)) {
                pending = MC_META_ERR_BAD_INITIAL;
                bad = true;
            }
            break;
        case 'D':
            if (!mc_num_u64(num, nlen, &req->delta)) {
                pending = MC_META_ERR_BAD_DELTA;
                bad = true;
            }
            break;
        case 'M':
            if (w[i].len != 2) {
                pending = MC_META_ERR_M_LENGTH;
                bad = true;
            }
            break;
        case 'O': case 'P': case 'L': case 'k': case 's': case 't': case 'c':
        case 'f': case 'v': case 'h': case 'l': case 'u': case 'q': case 'I':
            break;
        default:
            return MC_META_ERR_INVALID_FLAG;
        }
        req->present |= (uint64_t)1 << (c - 'A');
        req->flags[req->nflags].c = (char)c;
        req->flags[req->nflags].tok = w[i];
        req->nflags++;
    }
    if (bad)
        return pending != MC_META_ERR_NONE ? pending : MC_META_ERR_BAD_FORMAT;
    return MC_META_ERR_NONE;
}

/* The M token's mode for ms (set, add, append, prepend, replace); false if none fits. */
static bool ms_mode(char m, enum mc_meta_mode *mode) {
    switch (m) {
    case 'S': *mode = MC_META_MODE_SET; return true;
    case 'E': *mode = MC_META_MODE_ADD; return true;
    case 'A': *mode = MC_META_MODE_APPEND; return true;
    case 'P': *mode = MC_META_MODE_PREPEND; return true;
    case 'R': *mode = MC_META_MODE_REPLACE; return true;
    default: return false;
    }
}

/* The M token's mode for ma (incr, decr); false if none fits. */
static bool ma_mode(char m, enum mc_meta_mode *mode) {
    switch (m) {
    case 'I': case '+': *mode = MC_META_MODE_INCR; return true;
    case 'D': case '-': *mode = MC_META_MODE_DECR; return true;
    default: return false;
    }
}

/* Index in req->flags of the (only) M or O flag, or -1. */
static int flag_index(const struct mc_meta_req *req, char c) {
    for (int i = 0; i < req->nflags; i++)
        if (req->flags[i].c == c)
            return i;
    return -1;
}

/*
 * mg, ms, md and ma: the steps of the diagram at the top of the file.
 * Only an ms whose datalen was read sets req->swallow: memcached then
 * discards the data block after answering the error.
 */
static enum mc_parse parse_keyed(struct mc_meta_req *req, const struct mc_span *w, int n) {
    bool ms = req->cmd == MC_META_MS;
    int first = ms ? 3 : 2;

    if (n < 2)
        return meta_fail(req, MC_META_ERR_ERROR);
    if (w[1].len > MC_KEY_MAX)
        return meta_fail(req, MC_META_ERR_BAD_FORMAT);
    req->key = w[1];
    if (ms && n == 2)
        return meta_fail(req, MC_META_ERR_BAD_FORMAT);
    if (n > MC_META_MAX_WORDS)
        return meta_fail(req, req->cmd == MC_META_MG ? MC_META_ERR_TOO_LONG_MG : MC_META_ERR_TOO_LONG);
    if (ms) {
        int64_t vlen;
        if (!mc_num_i64(w[2].p, w[2].len, &vlen) || vlen < 0 || vlen > META_VLEN_MAX)
            return meta_fail(req, MC_META_ERR_BAD_FORMAT);
        req->vlen = (uint32_t)vlen;
    }

    enum mc_meta_err err = meta_flags(req, w + first, n - first);
    if (err != MC_META_ERR_NONE) {
        if (req->cmd == MC_META_MD || req->cmd == MC_META_MA)
            err = MC_META_ERR_INVALID_OR_DUP;
        goto fail;
    }

    int m = flag_index(req, 'M');
    char mode = m >= 0 ? req->flags[m].tok.p[1] : 0;
    int o = flag_index(req, 'O');
    bool long_opaque = o >= 0 && req->flags[o].tok.len > MC_META_OPAQUE_MAX;

    switch (req->cmd) {
    case MC_META_MS:
        if (mode != 0 && !ms_mode(mode, &req->mode)) {
            err = MC_META_ERR_MS_MODE;
            goto fail;
        }
        if (long_opaque) {
            err = MC_META_ERR_OPAQUE_TOO_LONG;
            goto fail;
        }
        break;
    case MC_META_MD:
        if (long_opaque)
            return meta_fail(req, MC_META_ERR_OPAQUE_TOO_LONG);
        break;
    case MC_META_MA:
        if (mode != 0 && !ma_mode(mode, &req->mode))
            return meta_fail(req, MC_META_ERR_MA_MODE);
        req->opaque_late = long_opaque ? o : -1;
        break;
    default: /* mg */
        req->opaque_late = long_opaque ? o : -1;
        break;
    }
    return MC_PARSE_OK;

fail:
    if (ms)
        req->swallow = (size_t)req->vlen + 2;
    return meta_fail(req, err);
}

/*
 * me <key> [b]: a key is needed (else bad command line format, not ERROR),
 * and it is base64 only when the word right after it is exactly "b";
 * other words are ignored.  No flag checks, no word limit.
 */
static enum mc_parse parse_me(struct mc_meta_req *req, const struct mc_span *w, int n) {
    if (n < 2 || w[1].len > MC_KEY_MAX)
        return meta_fail(req, MC_META_ERR_BAD_FORMAT);
    req->key = w[1];
    if (n >= 3 && w[2].len == 1 && w[2].p[0] == 'b') {
        size_t k = mc_meta_b64_decode(w[1].p, w[1].len, req->keybuf);
        if (k == 0)
            return meta_fail(req, MC_META_ERR_BAD_FORMAT);
        req->key.p = req->keybuf;
        req->key.len = k;
        req->key_binary = true;
    }
    return MC_PARSE_OK;
}

/*
 * The line is found as mc_text finds it (a line of more than MC_LINE_MAX
 * bytes without a newline closes the connection; one '\r' before the '\n'
 * is dropped; the line ends at its first NUL, where memcached's strlen
 * stops), then handed to the command's checks.
 */
enum mc_parse mc_meta_parse(struct mc_meta_req *req, const char *buf, size_t len, size_t *consumed) {
    struct mc_span w[META_WORDS];

    req->cmd = MC_META_NONE;
    req->err = MC_META_ERR_NONE;
    req->swallow = 0;
    req->key.p = NULL;
    req->key.len = 0;
    req->key_binary = false;
    req->vlen = 0;
    req->present = 0;
    req->nflags = 0;
    req->opaque_late = -1;
    req->mode = MC_META_MODE_SET;
    req->ttl = 0;
    req->vivify_ttl = 0;
    req->recache = 0;
    req->client_flags = 0;
    req->cas = 0;
    req->delta = 1;
    req->initial = 0;
    *consumed = 0;

    if (len == 0)
        return MC_PARSE_NEED_MORE;
    const char *nl = memchr(buf, '\n', len);
    if (nl == NULL)
        return len > MC_LINE_MAX ? MC_PARSE_CLOSE : MC_PARSE_NEED_MORE;
    const char *end = nl;
    if (end - buf > 1 && end[-1] == '\r')
        end--;
    const char *nul = memchr(buf, '\0', (size_t)(end - buf));
    if (nul != NULL)
        end = nul;
    *consumed = (size_t)(nl - buf) + 1;

    int n = meta_words(buf, end, w);
    if (n == 0 || w[0].len != 2 || w[0].p[0] != 'm')
        return meta_fail(req, MC_META_ERR_ERROR);
    switch (w[0].p[1]) {
    case 'g': req->cmd = MC_META_MG; break;
    case 's': req->cmd = MC_META_MS; break;
    case 'd': req->cmd = MC_META_MD; break;
    case 'a': req->cmd = MC_META_MA; req->mode = MC_META_MODE_INCR; break;
    case 'n': req->cmd = MC_META_MN; return MC_PARSE_OK;
    case 'e': req->cmd = MC_META_ME; return parse_me(req, w, n);
    default: return meta_fail(req, MC_META_ERR_ERROR);
    }
    return parse_keyed(req, w, n);
}

/* ---------------------------------------------------------------------- */
/* Error lines                                                              */
/* ---------------------------------------------------------------------- */

#define ERR_LINE(s) { s "\r\n", sizeof(s "\r\n") - 1 }

static const struct {
    const char *s;
    size_t len;
} meta_err_lines[MC_META_ERR_COUNT] = {
    [MC_META_ERR_NONE] = { "", 0 },
    [MC_META_ERR_ERROR] = ERR_LINE("ERROR"),
    [MC_META_ERR_BAD_FORMAT] = ERR_LINE("CLIENT_ERROR bad command line format"),
    [MC_META_ERR_TOO_LONG_MG] = ERR_LINE("CLIENT_ERROR options flags are too long"),
    [MC_META_ERR_TOO_LONG] = ERR_LINE("CLIENT_ERROR options flags too long"),
    [MC_META_ERR_INVALID_FLAG] = ERR_LINE("CLIENT_ERROR invalid flag"),
    [MC_META_ERR_DUPLICATE_FLAG] = ERR_LINE("CLIENT_ERROR duplicate flag"),
    [MC_META_ERR_BAD_TOKEN] = ERR_LINE("CLIENT_ERROR bad token in command line format"),
    [MC_META_ERR_DECODING_KEY] = ERR_LINE("CLIENT_ERROR error decoding key"),
    [MC_META_ERR_M_LENGTH] = ERR_LINE("CLIENT_ERROR incorrect length for M token"),
    [MC_META_ERR_BAD_INITIAL] = ERR_LINE("CLIENT_ERROR invalid numeric initial value"),
    [MC_META_ERR_BAD_DELTA] = ERR_LINE("CLIENT_ERROR invalid numeric delta value"),
    [MC_META_ERR_INVALID_OR_DUP] = ERR_LINE("CLIENT_ERROR invalid or duplicate flag"),
    [MC_META_ERR_OPAQUE_TOO_LONG] = ERR_LINE("CLIENT_ERROR opaque token too long"),
    [MC_META_ERR_MS_MODE] = ERR_LINE("CLIENT_ERROR invalid mode for ms M token"),
    [MC_META_ERR_MA_MODE] = ERR_LINE("CLIENT_ERROR invalid mode for ma M token"),
    [MC_META_ERR_BAD_CHUNK] = ERR_LINE("CLIENT_ERROR bad data chunk"),
    [MC_META_ERR_NON_NUMERIC] = ERR_LINE("CLIENT_ERROR cannot increment or decrement non-numeric value"),
    [MC_META_ERR_TOO_LARGE] = ERR_LINE("SERVER_ERROR object too large for cache"),
    [MC_META_ERR_NO_MEMORY] = ERR_LINE("SERVER_ERROR out of memory storing object"),
    [MC_META_ERR_DELTA_NO_MEMORY] = ERR_LINE("SERVER_ERROR out of memory"),
    [MC_META_ERR_VIVIFY_NO_MEMORY] = ERR_LINE("SERVER_ERROR Out of memory allocating new item"),
    [MC_META_ERR_REFCOUNT] = ERR_LINE("SERVER_ERROR refcount overflow during fetch"),
};

const char *mc_meta_err_str(enum mc_meta_err err) {
    if ((unsigned)err >= MC_META_ERR_COUNT)
        return "";
    return meta_err_lines[err].s;
}

size_t mc_meta_err_len(enum mc_meta_err err) {
    if ((unsigned)err >= MC_META_ERR_COUNT)
        return 0;
    return meta_err_lines[err].len;
}

/* ---------------------------------------------------------------------- */
/* Formatting                                                               */
/* ---------------------------------------------------------------------- */

/* Replies are written with mc_put.h's bounded writer. */
static void put_c(struct mc_put *o, char c) {
    mc_put(o, &c, 1);
}

/* " <c><v>": a return flag and its number. */
static void put_flag_u64(struct mc_put *o, char c, uint64_t v) {
    char h[2] = {' ', c};
    mc_put(o, h, 2);
    mc_put_u64(o, v);
}

/*
 * A remaining TTL as memcached prints it for t: "-1" when the item never
 * expires, otherwise the difference of two 32-bit clock values as an
 * unsigned 32-bit number (so one second in the past is 4294967295).
 */
static void put_ttl(struct mc_put *o, int64_t ttl) {
    mc_put(o, " t", 2);
    if (ttl == MC_META_TTL_NEVER)
        mc_put(o, "-1", 2);
    else
        mc_put_u64(o, (uint32_t)(uint64_t)ttl);
}

/*
 * " k<key>", or " k<base64 of key> b" when the key is binary.  memcached
 * re-encodes the decoded bytes, so "az==" comes back as "aw==".
 */
static void put_key(struct mc_put *o, const struct mc_meta_req *req, bool binary) {
    mc_put(o, " k", 2);
    if (!binary) {
        mc_put(o, req->key.p, req->key.len);
        return;
    }
    char enc[4 * ((MC_KEY_MAX + 2) / 3)];
    mc_put(o, enc, mc_meta_b64_encode(req->key.p, req->key.len, enc));
    mc_put(o, " b", 2);
}

/* " O<opaque>": the O token as sent. */
static void put_opaque(struct mc_put *o, const struct mc_meta_flag *f) {
    put_c(o, ' ');
    mc_put(o, f->tok.p, f->tok.len);
}

static size_t finish(struct mc_put *o, char *start) {
    mc_put(o, "\r\n", 2);
    return o->full ? 0 : (size_t)(o->p - start);
}

/* The late "opaque token too long" of mg and ma, in place of the line. */
static size_t late_opaque(char *out, size_t cap) {
    size_t n = mc_meta_err_len(MC_META_ERR_OPAQUE_TOO_LONG);
    if (cap < n)
        return 0;
    memcpy(out, mc_meta_err_str(MC_META_ERR_OPAQUE_TOO_LONG), n);
    return n;
}

/*
 * mg.  A miss is "EN" with only O and k echoed, hidden by q.  A hit is
 * "VA <len>" (with v) or "HD", then the return flags in request order (t
 * shows the TTL the engine read at t's place in the line), then Z (a
 * token is out), X (stale) and W (this request won it).  q never hides a
 * hit.
 */
static size_t fmt_mg(char *out, size_t cap, const struct mc_meta_req *req,
                     const struct mc_meta_item_view *v, bool *send_value) {
    struct mc_put o = MC_PUT_INIT(out, cap);
    bool hit = v->rc == MC_META_RC_OK;

    if (!hit) {
        mc_put(&o, "EN", 2);
    } else if (mc_meta_has(req, 'v')) {
        mc_put(&o, "VA ", 3);
        mc_put_u64(&o, v->vlen);
        *send_value = true;
    } else {
        mc_put(&o, "HD", 2);
    }
    for (int i = 0; i < req->nflags; i++) {
        const struct mc_meta_flag *f = &req->flags[i];
        if (f->c == 'O') {
            if (i == req->opaque_late) {
                *send_value = false;
                return late_opaque(out, cap);
            }
            put_opaque(&o, f);
            continue;
        }
        if (f->c == 'k') {
            put_key(&o, req, hit ? v->key_binary : req->key_binary);
            continue;
        }
        if (!hit)
            continue;
        switch (f->c) {
        case 's':
            put_flag_u64(&o, 's', v->vlen);
            break;
        case 't':
            put_ttl(&o, v->ttl);
            break;
        case 'c':
            put_flag_u64(&o, 'c', v->cas);
            break;
        case 'f':
            put_flag_u64(&o, 'f', v->client_flags);
            break;
        case 'l':
            put_flag_u64(&o, 'l', v->la);
            break;
        case 'h':
            mc_put(&o, v->fetched ? " h1" : " h0", 3);
            break;
        default:
            break;
        }
    }
    if (!hit)
        return mc_meta_has(req, 'q') ? 0 : finish(&o, out);
    if (v->token_sent)
        mc_put(&o, " Z", 2);
    if (v->stale)
        mc_put(&o, " X", 2);
    if (v->won)
        mc_put(&o, " W", 2);
    return finish(&o, out);
}

/* Two letters for a result that is not a success. */
static const char *rc_code(enum mc_meta_rc rc) {
    switch (rc) {
    case MC_META_RC_EN: return "EN";
    case MC_META_RC_NF: return "NF";
    case MC_META_RC_NS: return "NS";
    case MC_META_RC_EX: return "EX";
    default: return "HD";
    }
}

/*
 * ms and md: the code (HD, hidden by q; NS, EX and NF always shown), then
 * O and k in request order; ms also answers c, the CAS of the item it
 * stored (0 when it stored nothing).  Both commands ignore every other
 * return flag.
 */
static size_t fmt_ms_md(char *out, size_t cap, const struct mc_meta_req *req,
                        const struct mc_meta_item_view *v) {
    struct mc_put o = MC_PUT_INIT(out, cap);

    mc_put(&o, rc_code(v->rc), 2);
    for (int i = 0; i < req->nflags; i++) {
        const struct mc_meta_flag *f = &req->flags[i];
        if (f->c == 'O')
            put_opaque(&o, f);
        else if (f->c == 'k')
            put_key(&o, req, req->key_binary);
        else if (f->c == 'c' && req->cmd == MC_META_MS)
            put_flag_u64(&o, 'c', v->cas);
    }
    if (v->rc == MC_META_RC_OK && mc_meta_has(req, 'q'))
        return 0;
    return finish(&o, out);
}

/*
 * ma.  Success is "VA <digits>" (with v; the number follows as the value)
 * or "HD", then c, t, O and k in request order (t as the engine read it
 * at its place).  q hides a success, but not one that created the item.
 * NF, EX and NS echo only O and k and are never hidden.
 */
static size_t fmt_ma(char *out, size_t cap, const struct mc_meta_req *req,
                     const struct mc_meta_item_view *v, bool *send_value) {
    struct mc_put o = MC_PUT_INIT(out, cap);
    bool ok = v->rc == MC_META_RC_OK;

    if (!ok) {
        mc_put(&o, rc_code(v->rc), 2);
    } else if (mc_meta_has(req, 'v')) {
        mc_put(&o, "VA ", 3);
        mc_put_u64(&o, v->vlen);
        *send_value = true;
    } else {
        mc_put(&o, "HD", 2);
    }
    for (int i = 0; i < req->nflags; i++) {
        const struct mc_meta_flag *f = &req->flags[i];
        if (f->c == 'O') {
            if (i == req->opaque_late) {
                *send_value = false;
                return late_opaque(out, cap);
            }
            put_opaque(&o, f);
        } else if (f->c == 'k') {
            put_key(&o, req, req->key_binary);
        } else if (ok && f->c == 'c') {
            put_flag_u64(&o, 'c', v->cas);
        } else if (ok && f->c == 't') {
            put_ttl(&o, v->ttl);
        }
    }
    if (ok && !v->created && mc_meta_has(req, 'q')) {
        *send_value = false;
        return 0;
    }
    return finish(&o, out);
}

size_t mc_meta_fmt(char *out, size_t cap, const struct mc_meta_req *req,
                   const struct mc_meta_item_view *v, bool *send_value) {
    bool sv = false;
    size_t n;

    switch (req->cmd) {
    case MC_META_MN:
        n = 0;
        if (cap >= 4) {
            memcpy(out, "MN\r\n", 4);
            n = 4;
        }
        break;
    case MC_META_MG:
        n = fmt_mg(out, cap, req, v, &sv);
        break;
    case MC_META_MS:
    case MC_META_MD:
        n = fmt_ms_md(out, cap, req, v);
        break;
    case MC_META_MA:
        n = fmt_ma(out, cap, req, v, &sv);
        break;
    default:
        n = 0;
        break;
    }
    if (send_value != NULL)
        *send_value = sv && n > 0;
    return n;
}

/*
 * me's line.  memcached prints exp as (now - exptime) through "%d", which
 * is the remaining TTL negated (its low 32 bits, signed), or -1 for no
 * expiry; a binary key is printed in base64 without the " b" of k.
 */
size_t mc_meta_fmt_me(char *out, size_t cap, const struct mc_meta_req *req,
                      const struct mc_meta_me_view *v) {
    struct mc_put o = MC_PUT_INIT(out, cap);

    if (!v->hit) {
        mc_put(&o, "EN", 2);
        return finish(&o, out);
    }
    mc_put(&o, "ME ", 3);
    if (v->key_binary) {
        char enc[4 * ((MC_KEY_MAX + 2) / 3)];
        mc_put(&o, enc, mc_meta_b64_encode(req->key.p, req->key.len, enc));
    } else {
        mc_put(&o, req->key.p, req->key.len);
    }
    mc_put(&o, " exp=", 5);
    if (v->ttl == MC_META_TTL_NEVER) {
        mc_put(&o, "-1", 2);
    } else {
        uint32_t e = (uint32_t)(0 - (uint64_t)v->ttl);
        if (e > INT32_MAX) {
            put_c(&o, '-');
            mc_put_u64(&o, (uint64_t)UINT32_MAX - e + 1);
        } else {
            mc_put_u64(&o, e);
        }
    }
    mc_put(&o, " la=", 4);
    mc_put_u64(&o, v->la);
    mc_put(&o, " cas=", 5);
    mc_put_u64(&o, v->cas);
    mc_put(&o, v->fetched ? " fetch=yes" : " fetch=no", v->fetched ? 10 : 9);
    mc_put(&o, " cls=", 5);
    mc_put_u64(&o, v->cls);
    mc_put(&o, " size=", 6);
    mc_put_u64(&o, v->size);
    return finish(&o, out);
}
