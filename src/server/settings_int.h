/*
 * settings_int.h -- what the files of the settings module share:
 * settings_parse.c (reading argv), settings.c (the option letters),
 * settings_ext.c (-o's suboptions), settings_finish.c (the checks once all
 * are read), settings_usage.c (-h, -i), settings_show.c (`stats settings`,
 * printing a field) and settings_base.c (defaults and the value readers,
 * below all the others): the option tables, the state while argv is read,
 * and how a field is printed.  Calls go one way: settings_parse.c calls
 * the others, settings.c calls settings_ext.c (-o), and every file calls
 * settings_base.c, which calls none of them.
 */
#ifndef CELLAR_SERVER_SETTINGS_INT_H
#define CELLAR_SERVER_SETTINGS_INT_H

#include <stddef.h>
#include <stdio.h>

#include "core/options.h"
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
    F_UINT_MB,      /* unsigned bytes, shown in megabytes */
    F_ISIZE,        /* int bytes, shown as -I takes it: 1m, 512k, 1000 */
    F_OCT,          /* int, %o */
    F_F2,           /* double, %.2f */
    F_F3,           /* double, %.3f */
    F_YESNO,        /* bool: yes / no */
    F_ONOFF,        /* bool: on / off */
    F_ENABLED,      /* bool: enabled / disabled */
    F_STR,          /* const char *, "NULL" when NULL */
    F_STR_PNULL,    /* const char *, "(null)" when NULL (as glibc prints) */
    F_CHAR,         /* char, %c */
    F_PROTO,        /* enum settings_protocol */
    F_HASH,         /* enum settings_hash */
    F_NAPI,         /* int, "(null)" when 0 */
    F_STR_NO,       /* const char *: itself, or no when NULL */
    F_TLSVER,       /* int 0..3: tlsv1.0 .. tlsv1.3 */
};

#define FIELD(f) offsetof(struct settings, f)


#define MAX_OPTS 64             /* rows settings_opts may hold */
#define MAX_SUBS 96             /* rows settings_subs may hold */

/* The state while settings_parse() reads argv. */
struct parse {
    struct settings *s;
    FILE *err;
    bool tcp_specified;         /* -p given: -U alone also sets the TCP port */
    bool udp_specified;
    bool protocol_specified;    /* -B given: -S refuses anything but binary, -Y but ascii */
    bool chunk_changed;         /* slab_chunk_max given: -I > 1m keeps it */
    char *slab_sizes;           /* -o slab_sizes, checked once -n is known */
    int todo[MAX_OPTS + MAX_SUBS]; /* options given that we do not act on */
    int ntodo;                  /* (rows of settings_opts, then MAX_OPTS + settings_subs) */
};

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
enum { OPT_HELP = 'h', OPT_LICENSE = 'i', OPT_VERSION = 'V', OPT_LONG_ONLY = OPTIONS_LONG_ONLY,
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

/* The tables, in the order -h lists them: settings.c's, settings_ext.c's. */
extern const struct opt settings_opts[];
extern const size_t settings_nopts;
extern const struct subopt settings_subs[];
extern const size_t settings_nsubs;

/* The string defaults settings_init() puts in; every other string is an owned copy. */
extern const char settings_default_inter[], settings_default_policy[],
                  settings_flat_policy[], settings_seg_policy[];

/* Frees a string field unless it holds one of the static defaults (settings_base.c). */
void settings_str_free(const char *p);

/* Replaces a string field with a copy of v.  0, or 1 after printing why. */
int settings_str_set(struct parse *p, const char **field, const char *v);

/*
 * Numbers read as memcached reads them (atoi(), atof(): core/options.h),
 * refusing one that does not fit with "cellard: <what> <arg>: number out of
 * range" where memcached would wrap it.  0, or 1 after printing that.
 * settings_out_of_range() prints that line and returns 1.  All in
 * settings_base.c, as are the functions below.
 */
int settings_out_of_range(struct parse *p, const char *what, const char *arg);
int settings_num_read(struct parse *p, const char *what, const char *arg, long long lo,
                      long long hi, long long *out);
int settings_int_read(struct parse *p, const char *what, const char *arg, int *out);
int settings_double_read(struct parse *p, const char *what, const char *arg, double *out);

/* Runs one option's row: its set(), or the bool it stores. */
int settings_row_apply(struct parse *p, int (*set)(struct parse *, const char *), size_t off,
                       unsigned flags, const char *arg);

/* Notes an accepted option we do not act on yet (row: as struct parse's todo). */
void settings_todo_note(struct parse *p, int row);

/* --metrics=HOST:PORT, which -o metrics= also reaches. */
int settings_opt_metrics(struct parse *p, const char *v);

/* -o's list (settings_ext.c). */
int settings_opt_extended(struct parse *p, const char *a);

/*
 * memcached's checks once every option is read, in its order, and the
 * values several options decide together (settings_finish.c).  0, or
 * SETTINGS_EX_USAGE after printing memcached's words; or 1 when the flash
 * tier's files, taken together, cannot make one (memcached finds that
 * when it opens them, after every other check, and exits 1).
 */
int settings_finish(struct parse *p);

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
