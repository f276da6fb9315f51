/*
 * mc_text_resp.c -- parsing server replies, formatting client requests.
 *
 * One call parses one element:
 *
 *   find "\n" within MC_RESP_LINE_MAX --> none: NEED_MORE (or ERROR if full)
 *        |
 *   first word --> "VALUE": key flags bytes [cas], then the data block and
 *        |                  "\r\n" must be there too, else NEED_MORE
 *        +-----> a status word (END, STORED, ...): nothing may follow it
 *        +-----> ERROR / CLIENT_ERROR / SERVER_ERROR / VERSION / STAT: text
 *        +-----> all digits: an incr/decr number
 *        +-----> anything else: OTHER
 *
 * Nothing is remembered between calls, so a reply split anywhere parses
 * the same once it is whole.
 */
#include "protocol/mc_text_resp.h"

#include "protocol/mc_block.h"
#include "protocol/mc_put.h"
#include "protocol/msg.h"

#include <string.h>

static inline bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/*
 * All digits, at least one, no overflow of u64.  Up to 19 digits cannot
 * overflow; 20 digits fit when they are not above UINT64_MAX's spelling.
 */
static bool parse_u64(const char *p, size_t n, uint64_t *out) {
    if (n == 0 || n > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)((unsigned char)p[i] - '0');
        if (d > 9)
            return false;
        v = v * 10 + d;
    }
    if (n == 20 && memcmp(p, "18446744073709551615", 20) > 0)
        return false;
    *out = v;
    return true;
}

/* Takes the next space-separated word off [*p, end); false when none is left. */
static bool next_word(const char **p, const char *end, struct mc_span *w) {
    const char *s = *p;
    while (s < end && *s == ' ')
        s++;
    if (s == end)
        return false;
    const char *e = s;
    while (e < end && *e != ' ')
        e++;
    w->p = s;
    w->len = (size_t)(e - s);
    *p = e;
    return true;
}

static inline struct mc_span rest_after_spaces(const char *p, const char *end) {
    while (p < end && *p == ' ')
        p++;
    return (struct mc_span){p, (size_t)(end - p)};
}

static inline bool word_is(struct mc_span w, const char *lit, size_t n) {
    return w.len == n && memcmp(w.p, lit, n) == 0;
}
#define WORD_IS(w, lit) word_is((w), lit, sizeof(lit) - 1)

/*
 * Takes the next number off [*p, end): spaces, then 1..maxdig digits that
 * end the line or a word.  Returns 1 with *out, 0 when only spaces were
 * left, -1 when the word is not such a number.  One pass over the bytes.
 */
static int take_num(const char **pp, const char *end, uint64_t *out, size_t maxdig) {
    const char *p = *pp;
    while (p < end && *p == ' ')
        p++;
    if (p == end) {
        *pp = p;
        return 0;
    }
    const char *s = p;
    uint64_t v = 0;
    unsigned d;
    while (p < end && (d = (unsigned)((unsigned char)*p - '0')) <= 9) {
        v = v * 10 + d;
        p++;
    }
    size_t n = (size_t)(p - s);
    if (n == 0 || n > maxdig || (p < end && *p != ' '))
        return -1;
    if (n == 20 && memcmp(s, "18446744073709551615", 20) > 0)
        return -1;
    *out = v;
    *pp = p;
    return 1;
}

/*
 * "VALUE <key> <flags> <bytes>[ <cas>]" then <bytes> of data and "\r\n".
 * The line is [p, end) after "VALUE"; next is the offset of the data.
 * This is the line a load generator reads most, so it is read in one
 * pass: the key up to its space, then each number as it is scanned.
 */
static enum mc_parse parse_value(struct mc_resp *r, const char *buf, size_t len, const char *p,
                                 const char *end, size_t next, size_t *consumed) {
    while (p < end && *p == ' ')
        p++;
    const char *ke = p < end ? memchr(p, ' ', (size_t)(end - p)) : NULL;
    if (ke == NULL || ke == p || (size_t)(ke - p) > MC_KEY_MAX)
        return MC_PARSE_ERROR;
    r->key = (struct mc_span){p, (size_t)(ke - p)};
    p = ke;
    uint64_t flags, vlen, cas;
    if (take_num(&p, end, &flags, 10) != 1 || flags > UINT32_MAX ||
        take_num(&p, end, &vlen, 10) != 1 || vlen > UINT32_MAX)
        return MC_PARSE_ERROR;
    r->flags = (uint32_t)flags;
    r->vlen = (uint32_t)vlen;
    int rc = take_num(&p, end, &cas, 20);
    if (rc < 0)
        return MC_PARSE_ERROR;
    if (rc == 1) {
        r->cas = cas;
        r->has_cas = true;
        if (take_num(&p, end, &cas, 20) != 0)
            return MC_PARSE_ERROR;          /* a fifth word */
    }
    return mc_block_take(buf, len, next, r->vlen, &r->value, &r->need, consumed);
}

/* Status words after which nothing may follow on the line. */
static const struct {
    const char *word;
    size_t len;
    enum mc_resp_kind kind;
} bare_words[] = {
#define W(s, k) {s, sizeof(s) - 1, k}
    W("END", MC_RESP_END),
    W("STORED", MC_RESP_STORED),
    W("NOT_STORED", MC_RESP_NOT_STORED),
    W("EXISTS", MC_RESP_EXISTS),
    W("NOT_FOUND", MC_RESP_NOT_FOUND),
    W("DELETED", MC_RESP_DELETED),
    W("TOUCHED", MC_RESP_TOUCHED),
    W("OK", MC_RESP_OK),
    W("RESET", MC_RESP_RESET),
#undef W
};

/* Words followed by free text; "ERROR:" and "SERVER_ERROR:" are the same words. */
static enum mc_resp_kind text_word(struct mc_span w) {
    if (w.len > 0 && w.p[w.len - 1] == ':')
        w.len--;
    if (WORD_IS(w, "ERROR"))
        return MC_RESP_ERROR;
    if (WORD_IS(w, "CLIENT_ERROR"))
        return MC_RESP_CLIENT_ERROR;
    if (WORD_IS(w, "SERVER_ERROR"))
        return MC_RESP_SERVER_ERROR;
    return MC_RESP_NONE;
}

enum mc_parse mc_text_parse_resp(struct mc_resp *r, const char *buf, size_t len, size_t *consumed) {
    /* Field by field: a memset of the struct costs more than the whole VALUE parse. */
    r->kind = MC_RESP_NONE;
    r->key.p = NULL;
    r->key.len = 0;
    r->flags = 0;
    r->vlen = 0;
    r->has_cas = false;
    r->cas = 0;
    r->value.p = NULL;
    r->value.len = 0;
    r->number = 0;
    r->msg.p = NULL;
    r->msg.len = 0;
    r->need = 0;
    size_t scan = len < MC_RESP_LINE_MAX ? len : MC_RESP_LINE_MAX;
    const char *nl = memchr(buf, '\n', scan);
    if (nl == NULL)
        return len >= MC_RESP_LINE_MAX ? MC_PARSE_ERROR : MC_PARSE_NEED_MORE;
    size_t next = (size_t)(nl - buf) + 1;
    const char *end = nl;
    if (end > buf && end[-1] == '\r')
        end--;
    if (end == buf)
        return MC_PARSE_ERROR;              /* memcached never sends an empty line */

    /* The hot lines first: a get's reply is VALUE ... END. */
    size_t linelen = (size_t)(end - buf);
    if (linelen > 6 && memcmp(buf, "VALUE ", 6) == 0) {
        r->kind = MC_RESP_VALUE;
        return parse_value(r, buf, len, buf + 6, end, next, consumed);
    }
    if (linelen == 3 && memcmp(buf, "END", 3) == 0) {
        r->kind = MC_RESP_END;
        *consumed = next;
        return MC_PARSE_OK;
    }

    const char *p = buf;
    struct mc_span w;
    if (!next_word(&p, end, &w) || w.p != buf)
        return MC_PARSE_ERROR;              /* a line of spaces, or leading spaces */
    if (WORD_IS(w, "VALUE")) {
        r->kind = MC_RESP_VALUE;            /* "VALUE" alone, or followed by spaces only */
        return parse_value(r, buf, len, p, end, next, consumed);
    }
    for (size_t i = 0; i < sizeof(bare_words) / sizeof(bare_words[0]); i++) {
        if (word_is(w, bare_words[i].word, bare_words[i].len)) {
            if (p != end) {
                r->kind = MC_RESP_OTHER;
                r->msg = (struct mc_span){buf, (size_t)(end - buf)};
            } else {
                r->kind = bare_words[i].kind;
            }
            *consumed = next;
            return MC_PARSE_OK;
        }
    }
    enum mc_resp_kind k = text_word(w);
    if (k != MC_RESP_NONE) {
        r->kind = k;
        r->msg = rest_after_spaces(p, end);
    } else if (WORD_IS(w, "VERSION")) {
        r->kind = MC_RESP_VERSION;
        r->msg = rest_after_spaces(p, end);
    } else if (WORD_IS(w, "STAT")) {
        r->kind = MC_RESP_STAT;
        if (!next_word(&p, end, &r->key))
            return MC_PARSE_ERROR;
        r->msg = rest_after_spaces(p, end);
    } else if (is_digit((unsigned char)w.p[0]) && p == end) {
        r->kind = MC_RESP_NUMBER;
        if (!parse_u64(w.p, w.len, &r->number))
            return MC_PARSE_ERROR;
    } else {
        r->kind = MC_RESP_OTHER;
        r->msg = (struct mc_span){buf, (size_t)(end - buf)};
    }
    *consumed = next;
    return MC_PARSE_OK;
}

const char *mc_text_resp_kind_name(enum mc_resp_kind kind) {
    static const char *const names[MC_RESP_KIND_COUNT] = {
        [MC_RESP_NONE] = "NONE",
        [MC_RESP_VALUE] = "VALUE",
        [MC_RESP_END] = "END",
        [MC_RESP_STORED] = "STORED",
        [MC_RESP_NOT_STORED] = "NOT_STORED",
        [MC_RESP_EXISTS] = "EXISTS",
        [MC_RESP_NOT_FOUND] = "NOT_FOUND",
        [MC_RESP_DELETED] = "DELETED",
        [MC_RESP_TOUCHED] = "TOUCHED",
        [MC_RESP_OK] = "OK",
        [MC_RESP_RESET] = "RESET",
        [MC_RESP_NUMBER] = "NUMBER",
        [MC_RESP_VERSION] = "VERSION",
        [MC_RESP_STAT] = "STAT",
        [MC_RESP_ERROR] = "ERROR",
        [MC_RESP_CLIENT_ERROR] = "CLIENT_ERROR",
        [MC_RESP_SERVER_ERROR] = "SERVER_ERROR",
        [MC_RESP_OTHER] = "OTHER",
    };
    return (unsigned)kind < MC_RESP_KIND_COUNT ? names[kind] : "?";
}

/* ---------------------------------------------------------------------- */
/* Requests                                                                 */
/* ---------------------------------------------------------------------- */

size_t mc_text_fmt_get(char *out, size_t cap, enum mc_cmd cmd, const struct mc_span *keys,
                       size_t nkeys) {
    if (nkeys == 0 || (cmd != MC_CMD_GET && cmd != MC_CMD_GETS))
        return 0;
    struct mc_put w = MC_PUT_INIT(out, cap);
    if (cmd == MC_CMD_GET)
        mc_put(&w, "get", 3);
    else
        mc_put(&w, "gets", 4);
    for (size_t i = 0; i < nkeys; i++) {
        if (!msg_key_ok(keys[i]))
            return 0;
        mc_put(&w, " ", 1);
        mc_put(&w, keys[i].p, keys[i].len);
    }
    mc_put(&w, "\r\n", 2);
    return mc_put_len(&w, out);
}

size_t mc_text_fmt_store(char *out, size_t cap, enum mc_cmd cmd, struct mc_span key,
                         uint32_t flags, int64_t exptime, uint32_t vlen, uint64_t cas,
                         bool noreply) {
    static const char *const names[] = {
        [MC_CMD_SET] = "set ", [MC_CMD_ADD] = "add ", [MC_CMD_REPLACE] = "replace ",
        [MC_CMD_APPEND] = "append ", [MC_CMD_PREPEND] = "prepend ", [MC_CMD_CAS] = "cas ",
    };
    if (cmd < MC_CMD_SET || cmd > MC_CMD_CAS || !msg_key_ok(key))
        return 0;
    struct mc_put w = MC_PUT_INIT(out, cap);
    mc_put(&w, names[cmd], strlen(names[cmd]));
    mc_put(&w, key.p, key.len);
    mc_put(&w, " ", 1);
    mc_put_u64(&w, flags);
    mc_put(&w, " ", 1);
    mc_put_i64(&w, exptime);
    mc_put(&w, " ", 1);
    mc_put_u64(&w, vlen);
    if (cmd == MC_CMD_CAS) {
        mc_put(&w, " ", 1);
        mc_put_u64(&w, cas);
    }
    if (noreply)
        mc_put(&w, " noreply", 8);
    mc_put(&w, "\r\n", 2);
    return mc_put_len(&w, out);
}
