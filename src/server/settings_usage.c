/*
 * settings_usage.c -- cellard's -h and -i, as memcached 1.6.18 lays them
 * out: one line (or more) per row of settings.c's option table, -o's
 * suboptions after it, each default printed from a freshly initialised
 * struct settings by settings_show.c's formatter.
 */
#include <stdio.h>
#include <string.h>

#include "server/settings_int.h"

#define HELP_COL 26                     /* where -h descriptions start */

/*
 * Writes help with its "%s" (if any) replaced by def, and every line after
 * the first indented to the description column, as memcached lays it out.
 */
static void help_print(FILE *out, const char *help, const char *def, unsigned flags) {
    const char *mark = def ? strstr(help, "%s") : NULL;
    for (const char *q = help; *q != '\0'; q++) {
        if (q == mark) {
            fputs(def, out);
            q++;
        } else if (*q == '\n') {
            fprintf(out, "\n%*s", HELP_COL, "");
        } else {
            fputc(*q, out);
        }
    }
    if (flags & OPT_TODO)
        fprintf(out, "\n%*s(accepted; not implemented yet)", HELP_COL, "");
    fputc('\n', out);
}

/* The left column, padded to HELP_COL (or one space past it). */
static void label_print(FILE *out, const char *label) {
    int n = (int)strlen(label);
    fprintf(out, "%s%*s", label, n < HELP_COL ? HELP_COL - n : 1, "");
}

/*
 * The -h text.  Defaults come from a freshly initialised struct through
 * the same formatting `stats settings` uses, so they cannot drift from
 * settings_init().
 */
void settings_usage(FILE *out) {
    struct settings d;
    settings_init(&d);
    char buf[64], label[80];
    fprintf(out, "cellard %s (cellar %s)\n", CELLAR_MC_VERSION, CELLAR_VERSION);
    for (size_t i = 0; i < settings_nopts; i++) {
        const struct opt *o = &settings_opts[i];
        if (o->flags & OPT_HIDDEN)
            continue;
        if (o->key == 0)
            snprintf(label, sizeof(label), "%s", o->name);
        else if (o->key >= OPT_LONG_ONLY)
            snprintf(label, sizeof(label), "    --%s=%s", o->name, o->arg ? o->arg : "");
        else if (o->name == NULL)
            snprintf(label, sizeof(label), "-%c %s", o->key, o->arg ? o->arg : "");
        else
            snprintf(label, sizeof(label), "-%c, --%s%s%s", o->key, o->name,
                     o->arg ? "=" : "", o->arg ? o->arg : "");
        label_print(out, label);
        help_print(out, o->help,
                   settings_field_format(&d, o->dfmt, o->off, buf, sizeof(buf)),
                   o->flags);
        if (o->key != 'o')             /* -o's suboptions follow it */
            continue;
        for (size_t j = 0; j < settings_nsubs; j++) {
            const struct subopt *so = &settings_subs[j];
            if (so->help == NULL || (so->flags & OPT_HIDDEN))
                continue;
            snprintf(label, sizeof(label), "   - %s:", so->name);
            label_print(out, label);
            help_print(out, so->help,
                       settings_field_format(&d, so->dfmt, so->off, buf, sizeof(buf)), so->flags);
        }
        fprintf(out, "   - ext_* (extstore) options are accepted and ignored;\n"
                     "     ssl_* options are refused (no TLS).\n");
    }
}

void settings_license(FILE *out) {
    fprintf(out,
            "cellard %s (cellar %s)\n"
            "\n"
            "cellard is part of cellar, a memcache server written from scratch to\n"
            "be used in place of memcached 1.6: it reads memcached's options and\n"
            "speaks its protocols, but contains none of memcached's code.\n"
            "memcached is Copyright (c) 2003, Danga Interactive, Inc., and is\n"
            "distributed under the BSD license.\n"
            "\n"
            "See the files shipped with cellar's source for its own license terms.\n",
            CELLAR_MC_VERSION, CELLAR_VERSION);
}
