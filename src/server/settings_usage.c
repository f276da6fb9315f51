/*
 * settings_usage.c -- cellard's -h and -i, as memcached 1.6.18 lays them
 * out: one line (or more) per row of settings.c's option table, -o's
 * suboptions (settings_ext.c) after it, each default printed from a freshly
 * initialised struct settings by settings_show.c's formatter, laid out by
 * core/options.c's -h helpers.
 */
#include <stdio.h>
#include <string.h>

#include "core/options.h"
#include "server/settings_int.h"

#define HELP_COL 26                     /* where -h descriptions start */

/* The line -h adds under an option accepted but not acted on yet. */
static const char *todo_note(unsigned flags) {
    return (flags & OPT_TODO) ? "(accepted; not implemented yet)" : NULL;
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
        options_label_format(label, sizeof(label), o->key, o->name, o->arg);
        options_label_print(out, HELP_COL, label);
        options_help_print(out, HELP_COL, o->help,
                           settings_field_format(&d, o->dfmt, o->off, buf, sizeof(buf)),
                           todo_note(o->flags));
        if (o->key != 'o')             /* -o's suboptions follow it */
            continue;
        for (size_t j = 0; j < settings_nsubs; j++) {
            const struct subopt *so = &settings_subs[j];
            if (so->help == NULL || (so->flags & OPT_HIDDEN))
                continue;
            if (strcmp(so->name, "ext_path") == 0)     /* memcached's heading */
                fprintf(out, "\n   - External storage (ext_*) related options "
                             "(see: https://memcached.org/extstore)\n");
            snprintf(label, sizeof(label), "   - %s:", so->name);
            options_label_print(out, HELP_COL, label);
            options_help_print(out, HELP_COL, so->help,
                               settings_field_format(&d, so->dfmt, so->off, buf, sizeof(buf)),
                               todo_note(so->flags));
        }
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
