/*
 * options.c -- number readers, getopt_long() from a table, -o lists and
 * -h lines (options.h).
 */
#include "core/options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Numbers.                                                            */

bool options_atoll(const char *arg, int base, long long lo, long long hi, long long *out) {
    errno = 0;
    long long v = strtoll(arg, NULL, base);
    if (errno == ERANGE || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

bool options_atoi(const char *arg, int *out) {
    long long v;
    if (!options_atoll(arg, 10, INT_MIN, INT_MAX, &v))
        return false;
    *out = (int)v;
    return true;
}

bool options_atof(const char *arg, double *out) {
    double v = strtod(arg, NULL);
    if (!isfinite(v))
        return false;
    *out = v;
    return true;
}

bool options_atosize(const char *arg, long long lo, long long hi, long long *out) {
    size_t len = strlen(arg);
    long long mult = 1, v;
    if (len > 0 && (arg[len - 1] == 'k' || arg[len - 1] == 'K'))
        mult = 1024;
    else if (len > 0 && (arg[len - 1] == 'm' || arg[len - 1] == 'M'))
        mult = 1024 * 1024;
    if (!options_atoll(arg, 10, lo / mult, hi / mult, &v))
        return false;
    *out = v * mult;
    return true;
}

/*
 * strtoull() accepts a sign and wraps a negative number around, so a '-'
 * is refused before it reads; what follows the digits may only be blanks.
 */
static bool strict_u64(const char *arg, uint64_t max, uint64_t *out) {
    char *end;
    if (strchr(arg, '-') != NULL)
        return false;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (end == arg || errno == ERANGE || v > max)
        return false;
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    if (*end != '\0')
        return false;
    *out = v;
    return true;
}

bool options_strtou32(const char *arg, uint32_t *out) {
    uint64_t v;
    if (!strict_u64(arg, UINT32_MAX, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

bool options_strtou64(const char *arg, uint64_t *out) {
    return strict_u64(arg, UINT64_MAX, out);
}

bool options_strtobool(const char *arg, bool *out) {
    static const char *const yes[] = {"yes", "on", "true", "1"};
    static const char *const no[] = {"no", "off", "false", "0"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcmp(arg, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcmp(arg, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* getopt_long() from a table.                                         */

void options_getopt_init(struct options_getopt *g, const char *prog) {
    memset(g, 0, sizeof(*g));
    g->prog = prog;
    g->shortopts[g->ns++] = ':';    /* a missing argument returns ':', not '?' */
}

bool options_getopt_add(struct options_getopt *g, int key, const char *name, int has_arg,
                        int long_has_arg) {
    if (g->nlo >= OPTIONS_MAX || g->ns + 2 >= sizeof(g->shortopts))
        return false;
    if (key < OPTIONS_LONG_ONLY) {
        g->shortopts[g->ns++] = (char)key;
        if (has_arg == required_argument)
            g->shortopts[g->ns++] = ':';
    }
    if (name != NULL)
        g->lo[g->nlo++] = (struct option){name, long_has_arg, NULL, key};
    return true;
}

bool options_getopt_table(struct options_getopt *g, const struct option *longs) {
    for (; longs->name != NULL; longs++)
        if (!options_getopt_add(g, longs->val, longs->name, longs->has_arg, longs->has_arg))
            return false;
    return true;
}

int options_getopt_next(struct options_getopt *g, int argc, char **argv, char **arg) {
    if (!g->started) {
        g->shortopts[g->ns] = '\0';
        g->lo[g->nlo] = (struct option){NULL, 0, NULL, 0};
        optind = 0;     /* 0, not 1: glibc then forgets any earlier scan */
        opterr = 0;
        g->started = true;
    }
    int c = getopt_long(argc, argv, g->shortopts, g->lo, NULL);
    *arg = optarg;
    return c;
}

/*
 * getopt leaves the failing option's key in optopt (0 for an unknown long
 * option) and the word it read in argv[optind - 1]; the long name, where
 * the key has one, comes from the table.
 */
void options_getopt_complain(const struct options_getopt *g, FILE *err, int c, char **argv) {
    const char *prog = argv[0] ? argv[0] : g->prog;
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    bool is_long = arg != NULL && arg[0] == '-' && arg[1] == '-';
    /* the option's long name: of several with its key, the one the word typed abbreviates */
    const char *name = NULL;
    size_t typed = is_long ? strcspn(arg + 2, "=") : 0;
    bool abbreviates = false;
    for (size_t i = 0; i < g->nlo; i++) {
        const char *n = g->lo[i].name;
        if (optopt == 0 || g->lo[i].val != optopt)
            continue;
        bool prefix = is_long && strncmp(n, arg + 2, typed) == 0;
        if (prefix && n[typed] == '\0') {
            name = n;           /* typed whole */
            break;
        }
        if (name == NULL || (prefix && !abbreviates)) {
            name = n;           /* else the first it abbreviates, as glibc names it */
            abbreviates = prefix;
        }
    }

    if (c == ':' && is_long && name) {
        fprintf(err, "%s: option '--%s' requires an argument\n", prog, name);
    } else if (c == ':') {
        fprintf(err, "%s: option requires an argument -- '%c'\n", prog, optopt);
    } else if (optopt == 0) {
        /* An unknown or ambiguous long option: count the names it abbreviates. */
        const char *word = arg + 2;
        size_t n = strcspn(word, "=");
        size_t hits = 0;
        for (size_t i = 0; i < g->nlo; i++)
            if (strncmp(g->lo[i].name, word, n) == 0)
                hits++;
        if (hits > 1) {
            fprintf(err, "%s: option '%s' is ambiguous; possibilities:", prog, arg);
            for (size_t i = 0; i < g->nlo; i++)
                if (strncmp(g->lo[i].name, word, n) == 0)
                    fprintf(err, " '--%s'", g->lo[i].name);
            fputc('\n', err);
        } else {
            fprintf(err, "%s: unrecognized option '%s'\n", prog, arg);
        }
    } else if (is_long && name) {
        fprintf(err, "%s: option '--%s' doesn't allow an argument\n", prog, name);
    } else {
        fprintf(err, "%s: invalid option -- '%c'\n", prog, optopt);
    }
}

/* ------------------------------------------------------------------ */
/* -o sub-options.                                                     */

bool options_sub_next(char **cursor, char **tok, char **value) {
    char *t = *cursor;
    if (*t == '\0')
        return false;
    char *comma = strchr(t, ',');
    if (comma != NULL) {
        *comma = '\0';
        *cursor = comma + 1;
    } else {
        *cursor = t + strlen(t);
    }
    char *eq = strchr(t, '=');
    *tok = t;
    *value = eq ? eq + 1 : NULL;
    return true;
}

bool options_sub_is(const char *tok, const char *name) {
    size_t n = strlen(name);
    return strncmp(tok, name, n) == 0 && (tok[n] == '\0' || tok[n] == '=');
}

/* ------------------------------------------------------------------ */
/* -h lines.                                                           */

int options_label_format(char *buf, size_t n, int key, const char *name, const char *arg) {
    if (key == 0)
        return snprintf(buf, n, "%s", name);
    if (key >= OPTIONS_LONG_ONLY)
        return snprintf(buf, n, "    --%s=%s", name, arg ? arg : "");
    if (name == NULL)
        return snprintf(buf, n, "-%c %s", key, arg ? arg : "");
    return snprintf(buf, n, "-%c, --%s%s%s", key, name, arg ? "=" : "", arg ? arg : "");
}

void options_label_print(FILE *out, int col, const char *label) {
    int n = (int)strlen(label);
    fprintf(out, "%s%*s", label, n < col ? col - n : 1, "");
}

void options_help_print(FILE *out, int col, const char *help, const char *def,
                        const char *note) {
    const char *mark = def ? strstr(help, "%s") : NULL;
    for (const char *q = help; *q != '\0'; q++) {
        if (q == mark) {
            fputs(def, out);
            q++;
        } else if (*q == '\n') {
            fprintf(out, "\n%*s", col, "");
        } else {
            fputc(*q, out);
        }
    }
    if (note != NULL)
        fprintf(out, "\n%*s%s", col, "", note);
    fputc('\n', out);
}
