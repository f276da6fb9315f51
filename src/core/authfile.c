/*
 * authfile.c -- memcached's password file (authfile.h).
 */
#include "core/authfile.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pair {
    const char *user, *pass;
    size_t nuser, npass;
};

struct table {
    char *text;                     /* the file; the pairs point into it */
    struct pair *pairs;
    size_t n;
};

struct authfile {
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

struct authfile *authfile_open(const char *path, char *err, size_t cap) {
    struct authfile *a = calloc(1, sizeof(*a));
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

bool authfile_reload(struct authfile *a, char *err, size_t cap) {
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

void authfile_free(struct authfile **ap) {
    struct authfile *a = *ap;
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

bool authfile_check(struct authfile *a, const char *user, size_t nuser, const char *pass,
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
