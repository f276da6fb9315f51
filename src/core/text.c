/*
 * text.c -- the growable text buffer (text.h).
 */
#include "core/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool text_room(struct text *t, size_t need) {
    if (t->oom)
        return false;
    if (t->cap - t->len >= need)
        return true;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap - t->len < need)
        cap *= 2;
    char *p = realloc(t->p, cap);
    if (p == NULL) {
        t->oom = true;
        return false;
    }
    t->p = p;
    t->cap = cap;
    return true;
}

void text_add(struct text *t, const char *p, size_t n) {
    if (text_room(t, n)) {
        memcpy(t->p + t->len, p, n);
        t->len += n;
    }
}

void text_printf(struct text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !text_room(t, (size_t)n + 1))
        return;
    va_start(ap, fmt);
    vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void text_family(struct text *t, const char *name, const char *type, const char *help) {
    text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void text_label_value(struct text *t, const char *s) {
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            text_printf(t, "\\%c", *s);
        else if (*s == '\n')
            text_add(t, "\\n", 2);
        else
            text_add(t, s, 1);
    }
}

void text_metric(struct text *t, const char *name, const char *type, const char *help,
                 uint64_t value) {
    text_family(t, name, type, help);
    text_printf(t, "%s %llu\n", name, (unsigned long long)value);
}
