/*
 * settings_int.h -- what settings.c (parsing, -h) and settings_show.c
 * (`stats settings`, printing a field) share: how a field is printed.
 */
#ifndef CELLAR_SERVER_SETTINGS_INT_H
#define CELLAR_SERVER_SETTINGS_INT_H

#include <stddef.h>

#include "server/settings.h"

#define MB (1024 * 1024)
#define KB 1024

/* How a field of struct settings is printed (-h defaults, `stats settings`). */
enum fmt {
    F_NONE,
    F_INT,          /* int, %d */
    F_UINT,         /* unsigned, %u */
    F_ULONG,        /* unsigned long, %lu */
    F_SIZE,         /* size_t, %zu */
    F_SIZE_MB,      /* size_t bytes, shown in megabytes */
    F_UINT_KB,      /* unsigned bytes, shown in kilobytes */
    F_ISIZE,        /* int bytes, shown as -I takes it: 1m, 512k, 1000 */
    F_OCT,          /* int, %o */
    F_F2,           /* double, %.2f */
    F_YESNO,        /* bool: yes / no */
    F_ONOFF,        /* bool: on / off */
    F_ENABLED,      /* bool: enabled / disabled */
    F_STR,          /* const char *, "NULL" when NULL */
    F_STR_PNULL,    /* const char *, "(null)" when NULL (as glibc prints) */
    F_CHAR,         /* char, %c */
    F_PROTO,        /* enum settings_protocol */
    F_HASH,         /* enum settings_hash */
    F_NAPI,         /* int, "(null)" when 0 */
    F_SET,          /* const char *: yes when set, no when NULL */
    F_LIT,          /* no field: the row's fixed text (a feature cellard lacks) */
};

#define FIELD(f) offsetof(struct settings, f)

/*
 * Formats the field at offset off of s as fmt says.  Short values are
 * written into buf; strings are returned as they are, so a long path
 * needs no buffer.
 */
const char *settings_field_format(const struct settings *s, enum fmt fmt, size_t off,
                                  char *buf, size_t n);

#endif
