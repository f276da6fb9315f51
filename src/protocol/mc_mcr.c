/*
 * mc_mcr.c -- mcrouter's lease-get, lease-set and metaget (mc_mcr.h).
 */
#include "protocol/mc_mcr.h"

#include "protocol/mc_num.h"
#include "protocol/mc_put.h"

static const struct {
    const char *word;
    size_t len;
    enum mc_cmd cmd;
} words[] = {
    {"lease-get", 9, MC_CMD_LEASE_GET},
    {"lease-set", 9, MC_CMD_LEASE_SET},
    {"metaget", 7, MC_CMD_METAGET},
};

static enum mc_cmd word_of(const char *buf, size_t len) {
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t n = words[i].len;
        if (len > n && memcmp(buf, words[i].word, n) == 0 &&
            (buf[n] == ' ' || buf[n] == '\r' || buf[n] == '\n'))
            return words[i].cmd;
    }
    return MC_CMD_NONE;
}

__attribute__((noinline)) bool mc_mcr_line(const char *buf, size_t len) {
    return word_of(buf, len) != MC_CMD_NONE;
}

/* The words of [p, end) into tok[] (at most max); how many, or max + 1 when more. */
static int split(const char *p, const char *end, struct mc_span *tok, int max) {
    int n = 0;
    for (;;) {
        while (p < end && *p == ' ')
            p++;
        if (p == end)
            return n;
        if (n == max)
            return max + 1;
        const char *q = memchr(p, ' ', (size_t)(end - p));
        if (q == NULL)
            q = end;
        tok[n++] = (struct mc_span){p, (size_t)(q - p)};
        p = q;
    }
}

static enum mc_parse bad(struct mc_req *req, size_t line, size_t *consumed) {
    req->err = MC_ERR_BAD_FORMAT;
    *consumed = line;
    return MC_PARSE_ERROR;
}

__attribute__((noinline, cold)) enum mc_parse mc_mcr_parse(struct mc_req *req, const char *buf,
                                                          size_t len, size_t *consumed) {
    *req = (struct mc_req){0};
    *consumed = 0;
    const char *nl = memchr(buf, '\n', len < MC_LINE_MAX ? len : MC_LINE_MAX);
    if (nl == NULL)
        return len < MC_LINE_MAX ? MC_PARSE_NEED_MORE : MC_PARSE_CLOSE;
    size_t line = (size_t)(nl - buf) + 1;
    const char *end = nl > buf && nl[-1] == '\r' ? nl - 1 : nl;
    req->cmd = word_of(buf, len);
    if (req->cmd == MC_CMD_NONE)
        return bad(req, line, consumed);
    struct mc_span tok[MC_MAX_TOKENS];
    int n = split(buf, end, tok, MC_MAX_TOKENS - 1);
    for (int i = 0; i < n && i < MC_MAX_TOKENS - 1; i++)
        req->tok[i] = tok[i];
    req->ntokens = n < MC_MAX_TOKENS ? n : MC_MAX_TOKENS - 1;
    for (int i = 1; i < n && i < MC_MAX_TOKENS; i++)
        if (tok[i].len > MC_KEY_MAX && (req->cmd == MC_CMD_LEASE_GET || i == 1))
            return bad(req, line, consumed);
    switch (req->cmd) {
    case MC_CMD_LEASE_GET:
        if (n < 2)
            return bad(req, line, consumed);
        req->key = tok[1];
        req->keys = (struct mc_span){tok[1].p, (size_t)(end - tok[1].p)};
        /* counted here, not by mc_text_next_key(): a second caller would keep the
           compiler from inlining it into the router's hot loop */
        req->nkeys = (uint32_t)(n - 1);
        if (n > MC_MAX_TOKENS - 1) {
            req->nkeys = 0;
            for (const char *p = tok[1].p; p < end;) {
                while (p < end && *p == ' ')
                    p++;
                if (p == end)
                    break;
                req->nkeys++;
                while (p < end && *p != ' ')
                    p++;
            }
        }
        break;
    case MC_CMD_METAGET:
        if (n != 2)
            return bad(req, line, consumed);
        req->key = tok[1];
        break;
    default: {                  /* lease-set <key> <token> <flags> <exptime> <bytes> */
        uint64_t token, flags, vlen;
        int64_t exptime;
        if (n != 6 || !mc_num_u64(tok[2].p, tok[2].len, &token) ||
            !mc_num_u64(tok[3].p, tok[3].len, &flags) || flags > UINT32_MAX ||
            !mc_num_i64(tok[4].p, tok[4].len, &exptime) ||
            !mc_num_u64(tok[5].p, tok[5].len, &vlen) || vlen > INT32_MAX - 2)
            return bad(req, line, consumed);
        req->key = tok[1];
        req->cas = token;
        req->flags = (uint32_t)flags;
        req->exptime = exptime;
        req->vlen = (uint32_t)vlen;
        break;
    }
    }
    *consumed = line;
    return MC_PARSE_OK;
}

size_t mc_mcr_fmt_lvalue(char *out, const char *key, size_t nkey, uint64_t token,
                         uint32_t flags, uint32_t bytes) {
    struct mc_put w = MC_PUT_INIT(out, MC_VALUE_LINE_MAX + 24);
    MC_PUT_LIT(&w, "LVALUE ");
    mc_put(&w, key, nkey);
    MC_PUT_LIT(&w, " ");
    mc_put_u64(&w, token);
    MC_PUT_LIT(&w, " ");
    mc_put_u64(&w, flags);
    MC_PUT_LIT(&w, " ");
    mc_put_u64(&w, bytes);
    MC_PUT_LIT(&w, "\r\n");
    return mc_put_len(&w, out);
}

size_t mc_mcr_fmt_meta(char *out, const char *key, size_t nkey, int64_t age, int64_t exptime) {
    struct mc_put w = MC_PUT_INIT(out, MC_VALUE_LINE_MAX + 96);
    MC_PUT_LIT(&w, "META ");
    mc_put(&w, key, nkey);
    MC_PUT_LIT(&w, " age: ");
    if (age < 0)
        MC_PUT_LIT(&w, "unknown");
    else
        mc_put_i64(&w, age);
    MC_PUT_LIT(&w, "; exptime: ");
    mc_put_i64(&w, exptime);
    MC_PUT_LIT(&w, "; from: unknown; is_transient: 0;\r\n");
    return mc_put_len(&w, out);
}
