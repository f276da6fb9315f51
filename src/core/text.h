/*
 * text.h -- a growable text buffer: the answers that are built a line at
 * a time (a Prometheus exposition, a `stats` reply) before they are sent.
 *
 * A zeroed struct text is empty and ready.  It allocates as it grows
 * (doubling, from 4 KB); when an allocation fails it stops growing, sets
 * oom and ignores what is added after, so a caller checks once at the end
 * instead of after every line.  The caller frees p.  One thread at a time.
 */
#ifndef CELLAR_CORE_TEXT_H
#define CELLAR_CORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct text {
    char *p;                        /* malloc'd; NULL while empty */
    size_t len, cap;
    bool oom;                       /* an allocation failed: nothing more is added */
};

/* Makes room for need more bytes after len: true, or false (oom set). */
bool text_room(struct text *t, size_t need);

/* Appends n bytes of p. */
void text_add(struct text *t, const char *p, size_t n);

/* Appends what printf would print (p stays NUL-terminated when not empty). */
void text_printf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prometheus: "# HELP name help\n# TYPE name type\n", the opening of a family. */
void text_family(struct text *t, const char *name, const char *type, const char *help);

/* Prometheus: a family of one unlabelled sample, its opening and its value. */
void text_metric(struct text *t, const char *name, const char *type, const char *help,
                 uint64_t value);

/* Prometheus: a label value with backslash, double quote and newline escaped. */
void text_label_value(struct text *t, const char *s);

#endif
