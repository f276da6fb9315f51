/*
 * options.h -- the command-line machinery every cellar program shares:
 * reading numbers the way memcached reads them, a getopt_long() driven by
 * the caller's own option table, -o's "name=value,name" sub-options, and
 * the -h layout (a label column, then help text whose continuation lines
 * line up under it).
 *
 * It knows nothing of any program's options: callers keep their own table
 * (flag, long name, argument, help, handler) and hand this module one row
 * at a time.  Two families of number readers, because memcached has both:
 * options_ato*() read like atoi()/atof() (leading blanks and sign, then
 * the leading digits; the rest ignored; no digits is 0), but refuse a value
 * that does not fit [lo, hi] where atoi() would wrap; options_strto*()
 * read like memcached's safe_strtoul() and refuse anything but a whole
 * unsigned number (trailing blanks allowed; no sign, no junk, no overflow).
 *
 * Errors: every reader returns false and leaves *out alone when it refuses,
 * and prints nothing; the caller picks the words, since each program's
 * messages are part of its interface.  Only options_getopt_complain() and
 * the -h printers write, to the stream they are given.
 *
 * Nothing here allocates: struct options_getopt holds its tables inline
 * (OPTIONS_MAX options), and -o lists are cut up in the caller's buffer.
 * getopt_long()'s state is global to libc, so one thread at a time may run
 * options_getopt_next(); the rest is reentrant.
 */
#ifndef CELLAR_CORE_OPTIONS_H
#define CELLAR_CORE_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OPTIONS_MAX 128             /* options one struct options_getopt holds */
#define OPTIONS_LONG_ONLY 256       /* keys from here up have no short form */

/* ------------------------------------------------------------------ */
/* Numbers.                                                            */

/*
 * atoi() in base base, refusing what does not fit [lo, hi]: "4x" is 4,
 * "abc" is 0, " -3" is -3, "99999999999999999999" is refused.
 */
bool options_atoll(const char *arg, int base, long long lo, long long hi, long long *out);

/* options_atoll() in base 10 over int's range. */
bool options_atoi(const char *arg, int *out);

/* atof(), refusing infinities and NaN ("1e999", "inf", "nan"). */
bool options_atof(const char *arg, double *out);

/*
 * A size: options_atoll() in base 10, times 1024 when arg ends in k or K,
 * times 1024 * 1024 when it ends in m or M (memcached's -I: "64k", "2m";
 * "1.5m" is 1m, "2g" is 2).  The product must fit [lo, hi]; lo and hi are
 * divided by the multiplier first, so nothing overflows.
 */
bool options_atosize(const char *arg, long long lo, long long hi, long long *out);

/*
 * The whole of arg is an unsigned decimal number, optionally after blanks
 * and a '+', optionally followed by blanks (space, tab, CR, LF), that fits
 * 32 (64) bits.  A '-' anywhere is refused, so is an empty string.  This
 * is memcached's safe_strtoul(), made stricter where that one is loose: it
 * passes "5 junk" and wraps values over 32 bits on 64-bit hosts.
 */
bool options_strtou32(const char *arg, uint32_t *out);
bool options_strtou64(const char *arg, uint64_t *out);

/* "yes", "on", "true", "1" are true; "no", "off", "false", "0" false; else refused. */
bool options_strtobool(const char *arg, bool *out);

/* ------------------------------------------------------------------ */
/* getopt_long() from a table.                                         */

struct options_getopt {
    const char *prog;               /* complaints name argv[0], or this when it is NULL */
    char shortopts[2 + 2 * OPTIONS_MAX];
    struct option lo[OPTIONS_MAX + 1];
    size_t ns, nlo;
    bool started;
};

/* An empty table.  Allocates nothing. */
void options_getopt_init(struct options_getopt *g, const char *prog);

/*
 * Adds one option: a short form when key < OPTIONS_LONG_ONLY (with a
 * required argument when has_arg is required_argument), a long form
 * --name when name is not NULL, taking long_has_arg.  getopt returns key
 * for either.  Returns false when the table is full.
 */
bool options_getopt_add(struct options_getopt *g, int key, const char *name, int has_arg,
                        int long_has_arg);

/*
 * Adds every row of a getopt_long() table (up to its all-zero row): a long
 * form each, and a short one for a val below OPTIONS_LONG_ONLY.  Returns
 * false when the table is full.
 */
bool options_getopt_table(struct options_getopt *g, const struct option *longs);

/*
 * The next option, as getopt_long() returns it: its key, -1 at the end,
 * '?' for an unknown option or one given an argument it does not take,
 * ':' for a missing argument.  *arg is its argument, or NULL.  The first
 * call restarts libc's scan and silences getopt's own messages; argv may
 * be permuted.
 */
int options_getopt_next(struct options_getopt *g, int argc, char **argv, char **arg);

/*
 * After '?' or ':' from options_getopt_next(): writes to err, as one
 * line, the words glibc's getopt_long() would have printed ("invalid
 * option", "requires an argument", "unrecognized option", "is ambiguous;
 * possibilities: ...", "doesn't allow an argument").
 */
void options_getopt_complain(const struct options_getopt *g, FILE *err, int c, char **argv);

/* ------------------------------------------------------------------ */
/* -o sub-options.                                                     */

/*
 * Cuts the next token off a comma-separated list, in place, the way
 * getsubopt() reads it: *tok is the whole token ("name" or "name=value",
 * the value running to the next comma and itself free to hold '='),
 * *value what follows its first '=' or NULL.  Returns false at the end of
 * the list; a comma at its end adds no token ("a," is one), while one
 * between two ("a,,b") or at its start makes an empty token, which no name
 * matches.
 */
bool options_sub_next(char **cursor, char **tok, char **value);

/* Whether tok ("name" or "name=value") names name. */
bool options_sub_is(const char *tok, const char *name);

/* ------------------------------------------------------------------ */
/* -h lines.                                                           */

/*
 * The label of an option in -h: "-p, --port=<num>"; "-D <char>" without a
 * long name; "    --metrics=<host:port>" for a long-only key; name alone
 * for key 0 (a row that only adds text).  arg may be NULL.  Returns what
 * snprintf() returns.
 */
int options_label_format(char *buf, size_t n, int key, const char *name, const char *arg);

/* Writes label padded to column col (or one space past it when longer). */
void options_label_print(FILE *out, int col, const char *label);

/*
 * Writes help, its first "%s" replaced by def when def is not NULL, every
 * line after the first indented to column col; then note on a line of its
 * own, indented alike, when note is not NULL; then a newline.
 */
void options_help_print(FILE *out, int col, const char *help, const char *def,
                        const char *note);

#endif
