/*
 * mc_meta_resp.c -- parsing the replies of a meta server.
 *
 * One call parses one reply:
 *
 *   find "\n" within MC_META_RESP_LINE_MAX --> none: NEED_MORE (or ERROR if full)
 *        |
 *   first word --> "VA": <length>, flags; then the data block and its
 *        |               "\r\n" must be there too, else NEED_MORE
 *        +-----> HD EN NF NS EX MN: return flags, each a letter + token
 *        +-----> ME: the rest of the line as text
 *        +-----> ERROR / CLIENT_ERROR / SERVER_ERROR: the rest as text
 *        +-----> anything else: OTHER, the whole line
 *
 * Nothing is remembered between calls, so a reply split anywhere parses
 * the same once it is whole.
 */
#include "protocol/mc_meta_resp.h"

#include "protocol/mc_block.h"

#include <string.h>

/* The two-letter codes whose line holds return flags, and the text words. */
static const struct {
    const char *word;
    size_t len;
    enum mc_meta_code code;
} words[] = {
#define W(s, c) {s, sizeof(s) - 1, c}
    W("VA", MC_META_CODE_VA),
    W("HD", MC_META_CODE_HD),
    W("EN", MC_META_CODE_EN),
    W("NF", MC_META_CODE_NF),
    W("NS", MC_META_CODE_NS),
    W("EX", MC_META_CODE_EX),
    W("MN", MC_META_CODE_MN),
    W("ME", MC_META_CODE_ME),
    W("ERROR", MC_META_CODE_ERROR),
    W("CLIENT_ERROR", MC_META_CODE_CLIENT_ERROR),
    W("SERVER_ERROR", MC_META_CODE_SERVER_ERROR),
#undef W
};

static enum mc_meta_code code_of(const char *w, size_t n) {
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (words[i].len == n && memcmp(words[i].word, w, n) == 0)
            return words[i].code;
    return MC_META_CODE_OTHER;
}

static inline const char *skip_spaces(const char *p, const char *end) {
    while (p < end && *p == ' ')
        p++;
    return p;
}

static inline bool is_letter(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/*
 * The return flags on [p, end): words split on runs of spaces, each a
 * letter and the token after it.  memcached writes single spaces and no
 * trailing one, but nothing is lost by accepting more.
 */
static bool parse_flags(struct mc_meta_resp *r, const char *p, const char *end) {
    for (p = skip_spaces(p, end); p < end; p = skip_spaces(p, end)) {
        if (!is_letter((unsigned char)*p) || r->nflags == MC_META_RESP_MAX_FLAGS)
            return false;
        const char *e = p + 1;
        while (e < end && *e != ' ')
            e++;
        struct mc_meta_rflag *f = &r->flags[r->nflags++];
        f->c = *p;
        f->arg = (struct mc_span){p + 1, (size_t)(e - p - 1)};
        p = e;
    }
    return true;
}

/*
 * VA's data length: 1..10 digits ending at a space or the line's end, not
 * above UINT32_MAX.  Moves *pp past it.
 */
static bool take_vlen(const char **pp, const char *end, uint32_t *out) {
    const char *p = skip_spaces(*pp, end), *s = p;
    uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9' && p - s < 10)
        v = v * 10 + (uint64_t)(*p++ - '0');
    if (p == s || (p < end && *p != ' ') || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    *pp = p;
    return true;
}

/*
 * "VA <length> <flags>*" then <length> bytes of data and "\r\n".  The line
 * is [p, end) after "VA"; next is the offset of the data.
 */
static enum mc_parse parse_va(struct mc_meta_resp *r, const char *buf, size_t len, const char *p,
                              const char *end, size_t next, size_t *consumed) {
    if (!take_vlen(&p, end, &r->vlen) || !parse_flags(r, p, end))
        return MC_PARSE_ERROR;
    return mc_block_take(buf, len, next, r->vlen, &r->value, &r->need, consumed);
}

static void resp_clear(struct mc_meta_resp *r) {
    r->code = MC_META_CODE_NONE;
    r->nflags = 0;
    r->vlen = 0;
    r->value = (struct mc_span){NULL, 0};
    r->msg = (struct mc_span){NULL, 0};
    r->need = 0;
}

enum mc_parse mc_meta_parse_resp(struct mc_meta_resp *r, const char *buf, size_t len,
                                 size_t *consumed) {
    *consumed = 0;                  /* NEED_MORE and ERROR consume nothing */
    resp_clear(r);
    size_t scan = len < MC_META_RESP_LINE_MAX ? len : MC_META_RESP_LINE_MAX;
    const char *nl = memchr(buf, '\n', scan);
    if (nl == NULL)
        return len >= MC_META_RESP_LINE_MAX ? MC_PARSE_ERROR : MC_PARSE_NEED_MORE;
    size_t next = (size_t)(nl - buf) + 1;
    const char *end = nl;
    if (end > buf && end[-1] == '\r')
        end--;
    if (end == buf || *buf == ' ')
        return MC_PARSE_ERROR;      /* memcached never sends an empty or indented line */

    const char *p = buf;
    while (p < end && *p != ' ')
        p++;
    r->code = code_of(buf, (size_t)(p - buf));
    switch (r->code) {
    case MC_META_CODE_VA:
        return parse_va(r, buf, len, p, end, next, consumed);
    case MC_META_CODE_ME:
    case MC_META_CODE_ERROR:
    case MC_META_CODE_CLIENT_ERROR:
    case MC_META_CODE_SERVER_ERROR:
        p = skip_spaces(p, end);
        r->msg = (struct mc_span){p, (size_t)(end - p)};
        break;
    case MC_META_CODE_OTHER:
        r->msg = (struct mc_span){buf, (size_t)(end - buf)};
        break;
    default:
        if (!parse_flags(r, p, end))
            return MC_PARSE_ERROR;
        break;
    }
    *consumed = next;
    return MC_PARSE_OK;
}

const struct mc_meta_rflag *mc_meta_resp_flag(const struct mc_meta_resp *r, char c) {
    for (int i = 0; i < r->nflags; i++)
        if (r->flags[i].c == c)
            return &r->flags[i];
    return NULL;
}

const char *mc_meta_code_name(enum mc_meta_code code) {
    static const char *const names[MC_META_CODE_COUNT] = {
        [MC_META_CODE_NONE] = "NONE",
        [MC_META_CODE_VA] = "VA",
        [MC_META_CODE_HD] = "HD",
        [MC_META_CODE_EN] = "EN",
        [MC_META_CODE_NF] = "NF",
        [MC_META_CODE_NS] = "NS",
        [MC_META_CODE_EX] = "EX",
        [MC_META_CODE_MN] = "MN",
        [MC_META_CODE_ME] = "ME",
        [MC_META_CODE_ERROR] = "ERROR",
        [MC_META_CODE_CLIENT_ERROR] = "CLIENT_ERROR",
        [MC_META_CODE_SERVER_ERROR] = "SERVER_ERROR",
        [MC_META_CODE_OTHER] = "OTHER",
    };
    return (unsigned)code < MC_META_CODE_COUNT ? names[code] : "?";
}
