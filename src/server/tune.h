/*
 * tune.h -- `slabs reassign|automove` and `lru tune|mode|temp_ttl`
 * (tune.c).
 *
 * Run on the asking connection's worker; the settings they change are
 * written under the server's tune_lock, which `stats settings` also
 * takes.
 */
#ifndef CELLAR_SERVER_TUNE_H
#define CELLAR_SERVER_TUNE_H

#include "protocol/mc_text.h"

struct conn;

void tune_slabs(struct conn *c, const struct mc_req *req);
/* Token i as memcached's safe_strtod() reads it: the whole token a double in range. */
bool tune_tok_f64(const struct mc_req *req, int i, double *out);
void tune_lru(struct conn *c, const struct mc_req *req);

#endif
