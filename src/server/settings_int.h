/*
 * settings_int.h -- what settings.c (parsing), settings_usage.c (-h, -i)
 * and settings_show.c (`stats settings`, printing a field) share: the
 * option tables and how a field is printed.
 */
#ifndef CELLAR_SERVER_SETTINGS_INT_H
#define CELLAR_SERVER_SETTINGS_INT_H

#include <stddef.h>
#include <stdio.h>

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

struct parse;                   /* settings.c's state while it reads argv */

#define OPT_TODO   1u       /* accepted, not acted on yet: warn once */
#define OPT_HIDDEN 2u       /* not listed by -h */
#define OPT_LONGOPTARG 4u   /* the long form takes an optional =value */
#define OPT_EXT    8u       /* -o row that needs a value (ext_*) */
#define OPT_TRUE   16u      /* no set(): sets the bool at off to true */
#define OPT_FALSE  32u      /* no set(): sets the bool at off to false */

/*
 * One row per option, in the order -h lists them (memcached's order).
 * key is the short option and getopt's value; 0 makes a row that only
 * adds text to -h.  off is the field the option is about: help may hold
 * one "%s", where -h puts that field's default printed as dfmt, and a row
 * flagged OPT_TRUE or OPT_FALSE has no set() and stores that bool there.
 */
struct opt {
    int key;
    const char *name;           /* long option, or NULL */
    int has_arg;                /* no_argument or required_argument */
    const char *arg;            /* -h's "<num>", or NULL */
    const char *help;
    enum fmt dfmt;
    size_t off;
    int (*set)(struct parse *p, const char *arg);
    unsigned flags;
};

/* keys from OPT_LONG_ONLY up have no short form (cellar's own long options) */
enum { OPT_HELP = 'h', OPT_LICENSE = 'i', OPT_VERSION = 'V', OPT_LONG_ONLY = 256,
       OPT_METRICS = OPT_LONG_ONLY };

/* One row per -o suboption, as struct opt; -h lists those with help. */
struct subopt {
    const char *name;
    const char *help;
    enum fmt dfmt;
    size_t off;
    int (*set)(struct parse *p, const char *v);
    unsigned flags;
};

/* The tables (settings.c), in the order -h lists them. */
extern const struct opt settings_opts[];
extern const size_t settings_nopts;
extern const struct subopt settings_subs[];
extern const size_t settings_nsubs;

/* -i's text (settings_usage.c). */
void settings_license(FILE *out);

/*
 * Formats the field at offset off of s as fmt says.  Short values are
 * written into buf; strings are returned as they are, so a long path
 * needs no buffer.
 */
const char *settings_field_format(const struct settings *s, enum fmt fmt, size_t off,
                                  char *buf, size_t n);

#endif
