/*
 * route_build.c -- the helpers a route kind's JSON builder reads its
 * object with (route_build.h): the path kept for messages, keys, integers,
 * and the routes an object holds.
 */
#include "client/route_build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_LEN 512

/* Is key written bare in a path (letters, digits, _ and -)? */
static bool bare_key(const char *key) {
    if (*key == '\0')
        return false;
    for (const char *p = key; *p; p++)
        if (!(*p == '_' || *p == '-' || (*p >= '0' && *p <= '9') ||
              ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')))
            return false;
    return true;
}

void rb_path_put(struct rb *b, const char *fmt, ...) {
    if (b->plen >= sizeof(b->path) - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->path + b->plen, sizeof(b->path) - b->plen, fmt, ap);
    va_end(ap);
    b->plen = strlen(b->path);
}

size_t rb_path_key(struct rb *b, const char *key) {
    size_t mark = b->plen;
    if (b->plen)
        rb_path_put(b, ".");
    if (bare_key(key)) {
        rb_path_put(b, "%s", key);
        return mark;
    }
    rb_path_put(b, "\"");
    for (const char *p = key; *p; p++)
        rb_path_put(b, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
    rb_path_put(b, "\"");
    return mark;
}

size_t rb_path_index(struct rb *b, size_t i) {
    size_t mark = b->plen;
    rb_path_put(b, "[%zu]", i);
    return mark;
}

void rb_path_set(struct rb *b, size_t mark) {
    b->plen = mark;
    b->path[mark] = '\0';
}

int rb_fail(struct rb *b, const char *fmt, ...) {
    char msg[MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (b->errlen == 0)
        return -1;
    if (b->plen)
        snprintf(b->err, b->errlen, "%s: %s", b->path, msg);
    else
        snprintf(b->err, b->errlen, "%s", msg);
    return -1;
}

int rb_get_bool(struct rb *b, json_t *obj, const char *key, bool *out) {
    json_t *v = json_object_get(obj, key);
    *out = json_is_true(v);
    if (v && !json_is_boolean(v)) {
        rb_path_key(b, key);
        return rb_fail(b, "expected true or false");
    }
    return 0;
}

int rb_nomem(struct rb *b) {
    b->nomem = true;
    return rb_fail(b, "out of memory");
}

const char *rb_type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

bool rb_has_word(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ' ');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, word, n) == 0)
            return true;
        p += len + (e != NULL);
    }
    return false;
}

int rb_check_keys(struct rb *b, json_t *obj, const char *allowed, const char *what) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (!rb_has_word(allowed, key))
            return rb_fail(b, "unknown key \"%s\" (%s takes: %s)", key, what, allowed);
    }
    return 0;
}

json_t *rb_need(struct rb *b, json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        rb_fail(b, "missing \"%s\"", key);
    return v;
}

int rb_get_int(struct rb *b, json_t *obj, const char *key, long long lo, long long hi,
               long long dflt, long long *out) {
    json_t *v = json_object_get(obj, key);
    *out = dflt;
    if (v == NULL)
        return 0;
    size_t mark = rb_path_key(b, key);
    if (!json_is_integer(v))
        return rb_fail(b, "expected an integer, not %s", rb_type_name(v));
    long long n = json_integer_value(v);
    if (n < lo || n > hi)
        return rb_fail(b, "%lld is out of range (%lld..%lld)", n, lo, hi);
    *out = n;
    rb_path_set(b, mark);
    return 0;
}

int rb_check_map(struct rb *b, json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_object(v))
        return 0;
    rb_path_key(b, key);
    return rb_fail(b, "expected an object, not %s", rb_type_name(v));
}

int rb_find_pool(struct rb *b, const char *name) {
    int i = cl_config_find_pool(b->cfg, name);
    if (i < 0)
        rb_fail(b, "unknown pool \"%s\"", name);
    return i;
}

int rb_push(struct rb *b, struct route_list *l, struct route *r) {
    if (r == NULL)
        return rb_nomem(b);
    if (l->n == l->cap) {
        unsigned cap = l->cap ? l->cap * 2 : 8;
        struct route **v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL)
            return rb_nomem(b);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = r;
    return 0;
}

int rb_build_one(struct rb *b, json_t *v, struct route **out) {
    struct route_list l = {0};
    int rc = b->build_list(b, v, &l);
    if (rc == 0 && l.n != 1)
        rc = rb_fail(b, "%u routes where one is expected", l.n);
    if (rc == 0)
        *out = l.v[0];
    free(l.v);
    return rc;
}

int rb_build_key(struct rb *b, json_t *obj, const char *key, bool required,
                 struct route **out) {
    json_t *v = required ? rb_need(b, obj, key) : json_object_get(obj, key);
    if (v == NULL)
        return required ? -1 : 0;
    size_t mark = rb_path_key(b, key);
    if (rb_build_one(b, v, out) < 0)
        return -1;
    rb_path_set(b, mark);
    return 0;
}

int rb_build_key_list(struct rb *b, json_t *obj, const char *key, struct route_list *l) {
    json_t *v = rb_need(b, obj, key);
    if (v == NULL)
        return -1;
    size_t mark = rb_path_key(b, key);
    if (b->build_list(b, v, l) < 0)
        return -1;
    rb_path_set(b, mark);
    return 0;
}

int rb_build_over(struct rb *b, const struct route_type *t, json_t *obj, struct route **out) {
    struct route_list l = {0};
    int rc = rb_build_key_list(b, obj, "children", &l);
    if (rc == 0 && (*out = b->over(b, t, l.v, l.n)) == NULL)
        rc = rb_nomem(b);
    free(l.v);
    return rc;
}
