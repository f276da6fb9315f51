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
 * NULL: none) bound as %NAME%: a new reference, or NULL with err saying
 * where ("route: ...") and why.
 */
json_t *cl_macro_expand(json_t *root, const char *params, char *err, size_t errlen);

#endif
