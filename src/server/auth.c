/*
 * auth.c -- memcached's ASCII authentication (auth.h): the table of
 * user:password lines and the exchange a connection goes through before
 * its first command.
 *
 * The table is one malloc'd copy of the file with the pairs pointing
 * into it, swapped whole under a mutex at a reload; a check takes the
 * mutex for the length of a comparison (authentication is once a
 * connection, not once a request).
 */
#include "server/auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/conn.h"
#include "server/ctx.h"
#include "server/stats.h"

#define AUTH_LINE_MAX 2048          /* memcached closes a line this long with no newline */
#define AUTH_TOKEN_MAX 16384        /* memcached's MAX_AUTH_REQ_LEN */

struct pair {
    const char *user, *pass;
    size_t nuser, npass;
};

struct table {
    char *text;                     /* the file; the pairs point into it */
    struct pair *pairs;
    size_t n;
};

struct auth {
    char *path;
    pthread_mutex_t lock;
    struct table t;
};

static void table_free(struct table *t) {
    free(t->text);
    free(t->pairs);
    *t = (struct table){0};
}

/* Reads path into t: each line `user:password` (up to \r, \n or the end); empty lines skipped. */
static bool table_read(const char *path, struct table *t, char *err, size_t cap) {
    *t = (struct table){0};
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, cap, "Could not open authfile [%s] for reading, error %s", path,
                 strerror(errno));
        return false;
    }
    size_t len = 0, size = 4096;
    char *text = malloc(size);
    for (size_t got; text != NULL && (got = fread(text + len, 1, size - len - 1, f)) > 0;) {
        len += got;
        if (len + 1 == size) {
            char *more = realloc(text, size *= 2);
            if (more == NULL)
                free(text);
            text = more;
        }
    }
    bool failed = ferror(f) != 0;
    fclose(f);
    t->text = text;
    if (text == NULL || failed) {
        if (failed)
            snprintf(err, cap, "Could not read authfile [%s]", path);
        else
            snprintf(err, cap, "Out of memory reading password file: %s", path);
        table_free(t);
        return false;
    }
    t->text[len] = '\0';
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += t->text[i] == '\n';
    t->pairs = calloc(lines, sizeof(*t->pairs));
    if (t->pairs == NULL) {
        snprintf(err, cap, "Out of memory reading password file: %s", path);
        table_free(t);
        return false;
    }
    for (char *line = t->text, *end; *line != '\0'; line = *end ? end + 1 : end) {
        end = line + strcspn(line, "\n");
        size_t n = (size_t)(end - line);
        if (n > 0 && line[n - 1] == '\r')
            n--;
        if (n == 0)
            continue;
        char *colon = memchr(line, ':', n);
        if (colon == NULL) {
            snprintf(err, cap, "Authfile [%s] has a malformed entry. Should be 'user:password'",
                     path);
            table_free(t);
            return false;
        }
        t->pairs[t->n++] = (struct pair){line, colon + 1, (size_t)(colon - line),
                                         n - (size_t)(colon - line) - 1};
    }
    return true;
}

struct auth *auth_open(const char *path, char *err, size_t cap) {
    struct auth *a = calloc(1, sizeof(*a));
    if (a == NULL || (a->path = strdup(path)) == NULL) {
        free(a);
        snprintf(err, cap, "Out of memory reading password file: %s", path);
        return NULL;
    }
    if (!table_read(path, &a->t, err, cap)) {
        free(a->path);
        free(a);
        return NULL;
    }
    pthread_mutex_init(&a->lock, NULL);
    return a;
}

bool auth_reload(struct auth *a, char *err, size_t cap) {
    struct table t;
    if (!table_read(a->path, &t, err, cap))
        return false;
    pthread_mutex_lock(&a->lock);
    struct table old = a->t;
    a->t = t;
    pthread_mutex_unlock(&a->lock);
    table_free(&old);
    return true;
}

void auth_free(struct auth **ap) {
    struct auth *a = *ap;
    if (a == NULL)
        return;
    table_free(&a->t);
    pthread_mutex_destroy(&a->lock);
    free(a->path);
    free(a);
    *ap = NULL;
}

/* Equal bytes, looked at to the end whatever the first difference. */
static bool same(const char *a, const char *b, size_t n) {
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

bool auth_check(struct auth *a, const char *user, size_t nuser, const char *pass,
                size_t npass) {
    bool ok = false;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->t.n; i++) {
        const struct pair *p = &a->t.pairs[i];
        ok |= p->nuser == nuser && p->npass == npass && same(p->user, user, nuser) &&
              same(p->pass, pass, npass);
    }
    pthread_mutex_unlock(&a->lock);
    return ok;
}

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

/* memcached's safe_strtoul of a set's length: digits, then nothing or white space. */
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

static void answer(struct conn *c, const char *s, size_t n) {
    out_copy(&c->net.out, s, n);
}

bool auth_step(struct conn *c, struct auth *a) {
    const char *buf = c->net.rbuf + c->net.rstart;
    size_t avail = c->net.rend - c->net.rstart;
    if (c->auth_need == 0) {
        const char *nl = memchr(buf, '\n', avail);
        if (nl == NULL) {
            if (avail <= AUTH_LINE_MAX)
                return false;
            conn_set_state(c, CONN_CLOSING);    /* junk: memcached hangs up */
            return true;
        }
        size_t n = (size_t)(nl - buf);
        c->net.rstart += n + 1;
        struct mc_span w[5];
        uint32_t len = 0;
        if (words(buf, n, w, 5) < 5 || w[0].len != 3 || memcmp(w[0].p, "set", 3) != 0 ||
            !length_of(w[4], &len)) {
            answer(c, S("CLIENT_ERROR unauthenticated\r\n"));
            return true;
        }
        if (len > AUTH_TOKEN_MAX) {
            answer(c, S("CLIENT_ERROR auth token too long\r\n"));
            return true;
        }
        c->auth_need = len + 2;
        buf = nl + 1;
        avail -= n + 1;
    }
    if (avail < c->auth_need)
        return false;
    size_t n = c->auth_need - 2;
    c->net.rstart += c->auth_need;
    c->auth_need = 0;
    if (buf[n] != '\r' || buf[n + 1] != '\n') {
        answer(c, S("CLIENT_ERROR bad command line termination\r\n"));
        return true;
    }
    struct mc_span w[2];
    if (words(buf, n, w, 2) < 2) {
        answer(c, S("CLIENT_ERROR bad authentication token format\r\n"));
        return true;
    }
    STAT_INC(c->ctx->st.auth_cmds);
    if (auth_check(a, w[0].p, w[0].len, w[1].p, w[1].len)) {
        answer(c, S("STORED\r\n"));
        c->authed = true;
    } else {
        STAT_INC(c->ctx->st.auth_errors);
        answer(c, S("CLIENT_ERROR authentication failure\r\n"));
    }
    return true;
}
