/*
 * mc_auth.c -- memcached's ASCII authentication exchange (mc_auth.h).
 */
#include "protocol/mc_auth.h"

#include <string.h>

#include "core/authfile.h"

#define AUTH_LINE_MAX 2048          /* memcached closes a line this long with no newline */
#define AUTH_TOKEN_MAX 16384        /* memcached's MAX_AUTH_REQ_LEN */

#define SPAN(lit) ((struct mc_span){lit, sizeof(lit) - 1})

/* Splits s[0..n) at spaces, as memcached's tokenizer: up to max words into w; their count. */
static size_t words(const char *s, size_t n, struct mc_span *w, size_t max) {
    size_t k = 0;
    for (size_t i = 0; i < n && k < max;) {
        while (i < n && s[i] == ' ')
            i++;
        size_t start = i;
        while (i < n && s[i] != ' ')
            i++;
        if (i > start)
            w[k++] = (struct mc_span){s + start, i - start};
    }
    return k;
}

/* memcached's safe_strtoul of a set's length: digits, then nothing or the line's \r. */
static bool length_of(struct mc_span t, uint32_t *out) {
    uint64_t v = 0;
    size_t i = 0;
    for (; i < t.len && t.p[i] >= '0' && t.p[i] <= '9'; i++) {
        v = v * 10 + (uint64_t)(t.p[i] - '0');
        if (v > UINT32_MAX)
            return false;
    }
    if (i == 0 || (i < t.len && t.p[i] != '\r'))
        return false;
    *out = (uint32_t)v;
    return true;
}

enum mc_auth_step mc_auth_parse(struct mc_auth *st, const char *buf, size_t len, size_t *used,
                                struct mc_span *answer, struct mc_span *user,
                                struct mc_span *pass) {
    *used = 0;
    if (st->need == 0) {
        const char *nl = memchr(buf, '\n', len);
        if (nl == NULL)
            return len > AUTH_LINE_MAX ? MC_AUTH_CLOSE : MC_AUTH_MORE;
        size_t n = (size_t)(nl - buf);
        *used = n + 1;
        struct mc_span w[5];
        uint32_t size = 0;
        if (words(buf, n, w, 5) < 5 || w[0].len != 3 || memcmp(w[0].p, "set", 3) != 0 ||
            !length_of(w[4], &size)) {
            *answer = SPAN("CLIENT_ERROR unauthenticated\r\n");
            return MC_AUTH_ANSWER;
        }
        if (size > AUTH_TOKEN_MAX) {
            *answer = SPAN("CLIENT_ERROR auth token too long\r\n");
            return MC_AUTH_ANSWER;
        }
        st->need = size + 2;
        buf = nl + 1;
        len -= n + 1;
    }
    if (len < st->need)
        return MC_AUTH_MORE;
    size_t n = st->need - 2;
    *used += st->need;
    st->need = 0;
    if (buf[n] != '\r' || buf[n + 1] != '\n') {
        *answer = SPAN("CLIENT_ERROR bad command line termination\r\n");
        return MC_AUTH_ANSWER;
    }
    struct mc_span w[2];
    if (words(buf, n, w, 2) < 2) {
        *answer = SPAN("CLIENT_ERROR bad authentication token format\r\n");
        return MC_AUTH_ANSWER;
    }
    *user = w[0];
    *pass = w[1];
    return MC_AUTH_TOKEN;
}

enum mc_auth_step mc_auth_step(struct mc_auth *st, const char *buf, size_t len, size_t *used,
                               struct authfile *table, struct mc_span *answer, bool *checked,
                               bool *passed) {
    struct mc_span user, pass;
    enum mc_auth_step r = mc_auth_parse(st, buf, len, used, answer, &user, &pass);
    *checked = *passed = false;
    if (r != MC_AUTH_TOKEN)
        return r;
    *checked = true;
    *passed = authfile_check(table, user.p, user.len, pass.p, pass.len);
    *answer = *passed ? SPAN(MC_AUTH_OK) : SPAN(MC_AUTH_FAILED);
    return MC_AUTH_ANSWER;
}
