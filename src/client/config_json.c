/*
 * config_json.c -- mcrouter's JSON configuration (being written).
 */
#include <stdio.h>

#include "client/client_int.h"

int cl_config_json(struct cellar_config *cfg, const char *text,
                   const struct cellar_options *opt, char *err, size_t errlen) {
    (void)cfg;
    (void)text;
    (void)opt;
    snprintf(err, errlen, "JSON configurations are not supported yet");
    return -1;
}
