/*
 * config_macro.h -- mcrouter's JSON with macros (JSONM), expanded into
 * plain JSON (config_macro.c says what is understood).
 */
#ifndef CELLAR_CLIENT_CONFIG_MACRO_H
#define CELLAR_CLIENT_CONFIG_MACRO_H

#include <jansson.h>
#include <stddef.h>

/*
 * root (a configuration object) with its "macros" applied everywhere and
 * taken out, and params ("NAME:VALUE,...", mcrouter's --config-params;
 * NULL: none) and builtins (a JSON object, its values typed; NULL: none)
 * bound as %NAME%, params winning: a new reference, or NULL with err
 * saying where ("route: ...") and why.  An @import's relative path is
 * read from dir (the configuration file's directory; NULL: the current
 * one).
 */
json_t *cl_macro_expand(json_t *root, const char *params, const char *builtins, const char *dir,
                        char *err, size_t errlen);

/*
 * Copies in to out (as long as in, plus one) with comments blanked and
 * trailing commas dropped, so that jansson reads mcrouter's JSON and its
 * lines and columns still point into the text as written.  -1 with
 * *line, *col set for an unterminated block comment.
 */
int cl_json_strip(const char *in, char *out, int *line, int *col);

#endif
