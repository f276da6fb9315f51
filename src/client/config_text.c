/*
 * config_text.c -- a configuration from its text (cellar_config_parse())
 * or its file (cellar_config_load()): mcrouter's JSON (config_json.c) or
 * a server list (config.c), told apart by the first character.  Above
 * both, so that neither calls the other to be chosen.
 */
#include "cellar.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/config_int.h"

static bool looks_json(const char *text) {
    while (*text == ' ' || *text == '\t' || *text == '\n' || *text == '\r')
        text++;
    return *text == '{' || (text[0] == '/' && (text[1] == '/' || text[1] == '*'));
}

int cellar_config_parse(struct cellar_config **out, const char *text,
                        const struct cellar_options *opt, char *err, size_t errlen) {
    return cellar_config_parse_routing(out, text, opt, NULL, err, errlen);
}

/* cellar_config_parse_routing(), an @import's relative paths read from dir (NULL: .). */
static int parse_in(struct cellar_config **out, const char *text,
                    const struct cellar_options *opt, const struct cellar_routing *routing,
                    const char *dir, char *err, size_t errlen) {
    const struct cellar_options none = {0};
    *out = NULL;
    if (errlen)
        err[0] = '\0';
    if (opt == NULL)
        opt = &none;
    if (text == NULL) {
        cl_config_say(err, errlen, "no configuration");
        return CELLAR_ECONFIG;
    }
    struct cellar_config *cfg = cl_config_new(opt, err, errlen);
    if (cfg == NULL)
        return CELLAR_ECONFIG;
    int rc = looks_json(text) ? cl_config_json(cfg, text, opt, routing, dir, err, errlen)
                              : cl_config_list(cfg, text, opt, err, errlen);
    long big = routing ? routing->big_value_split_threshold : 0;
    if (rc == 0 && cfg->root != NULL && big > 0)    /* the whole tree, as mcrouter's */
        cfg->root = route_big_value(cfg->routes, cfg->root, (size_t)big,
                                    (unsigned)routing->big_value_batch_size, false);
    bool tls = false;
    for (unsigned i = 0; rc == 0 && i < cfg->npools; i++)
        tls |= cfg->pools[i].tls;
    if (rc == 0 && cfg->root != NULL && tls) {     /* the system's CAs, until told others */
        char why[400];
        if ((cfg->tls = cl_tls_create(NULL, why, sizeof(why))) == NULL) {
            cl_config_say(err, errlen, "TLS: %s", why);
            rc = -1;
        }
    }
    if (rc < 0 || cfg->root == NULL) {
        if (errlen && err[0] == '\0')
            cl_config_say(err, errlen, "out of memory");
        cl_config_free(cfg);
        return CELLAR_ECONFIG;
    }
    *out = cfg;
    return CELLAR_OK;
}

int cellar_config_parse_routing(struct cellar_config **out, const char *text,
                                const struct cellar_options *opt,
                                const struct cellar_routing *routing, char *err,
                                size_t errlen) {
    return parse_in(out, text, opt, routing, NULL, err, errlen);
}

int cellar_config_load(struct cellar_config **out, const char *path,
                       const struct cellar_options *opt, char *err, size_t errlen) {
    return cellar_config_load_routing(out, path, opt, NULL, err, errlen);
}

int cellar_config_load_routing(struct cellar_config **out, const char *path,
                               const struct cellar_options *opt,
                               const struct cellar_routing *routing, char *err,
                               size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        cl_config_say(err, errlen, "%s: %s", path, strerror(errno));
        return CELLAR_ECONFIG;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    char buf[8192];
    size_t n;
    while (m && (n = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, n, m);
    bool bad = ferror(f) || m == NULL;
    fclose(f);
    if (m)
        fclose(m);
    if (bad) {
        free(text);
        cl_config_say(err, errlen, "%s: cannot read", path);
        return CELLAR_ECONFIG;
    }
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash)
        *slash = '\0';             /* an @import beside the file: its directory */
    int rc = parse_in(out, text, opt, routing, slash ? dir : NULL, err, errlen);
    free(dir);
    free(text);
    return rc;
}
