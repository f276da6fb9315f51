/*
 * settings_parse.c -- settings_parse(), the top of the settings module:
 * reads argv through core/options' getopt with the letters of settings.c,
 * answers -h, -V and -i at once (settings_usage.c), applies each row,
 * then runs memcached's cross-checks (settings_finish.c) and prints the
 * warnings for options accepted but not acted on.  Nothing in the module
 * calls back up to it.
 */
#include "server/settings_int.h"

#include "core/options.h"

#include <stdio.h>
#include <stdlib.h>

/*
 * One warning line per such option, printed only once the command line
 * has been accepted, so a refused one shows memcached's message alone.
 */
static void todo_print(const struct parse *p) {
    for (int i = 0; i < p->ntodo; i++) {
        int row = p->todo[i];
        if (row < MAX_OPTS)
            fprintf(p->err, "cellard: option -%c accepted but not implemented yet\n",
                    settings_opts[row].key);
        else
            fprintf(p->err, "cellard: option -o %s accepted but not implemented yet\n",
                    settings_subs[row - MAX_OPTS].name);
    }
}

/*
 * Reads argv into s.  Options take effect in order, as in memcached: -h,
 * -V and -i answer at once (so "-h -x" prints help and "-x -h" refuses),
 * and the first refusal stops the reading.
 */
int settings_parse(struct settings *s, int argc, char **argv, FILE *err) {
    settings_init(s);
    struct parse p = {.s = s, .err = err};

    struct options_getopt g;
    options_getopt_init(&g, "cellard");
    for (size_t i = 0; i < settings_nopts; i++) {
        const struct opt *o = &settings_opts[i];
        if (o->key != 0)
            options_getopt_add(&g, o->key, o->name, o->has_arg,
                               (o->flags & OPT_LONGOPTARG) ? optional_argument : o->has_arg);
    }

    int rc = 0, c;
    char *arg;
    while (rc == 0 && (c = options_getopt_next(&g, argc, argv, &arg)) != -1) {
        if (c == '?' || c == ':') {
            /* glibc's words for a bad option, then memcached's own line. */
            options_getopt_complain(&g, err, c, argv);
            fprintf(err, "Illegal argument \"?\"\n");
            rc = 1;
            break;
        }
        if (c == OPT_HELP) {
            settings_usage(stdout);
            rc = SETTINGS_EXIT_OK;
            break;
        }
        if (c == OPT_VERSION) {
            printf("cellard %s\n", CELLAR_MC_VERSION);
            rc = SETTINGS_EXIT_OK;
            break;
        }
        if (c == OPT_LICENSE) {
            settings_license(stdout);
            rc = SETTINGS_EXIT_OK;
            break;
        }
        for (size_t i = 0; i < settings_nopts; i++) {
            const struct opt *o = &settings_opts[i];
            if (o->key != c)
                continue;
            rc = settings_row_apply(&p, o->set, o->off, o->flags, arg);
            if (rc == 0 && (o->flags & OPT_TODO))
                settings_todo_note(&p, (int)i);
            break;
        }
    }
    if (rc == 0)
        rc = settings_finish(&p);
    if (rc == 0)
        todo_print(&p);
    free(p.slab_sizes);
    return rc;
}
