/*
 * dump.h -- `lru_crawler metadump` and `stats cachedump` (dump.c).
 *
 * dump_start() returns the error reply for a bad class list; else NULL,
 * the connection is in CONN_DUMP and its worker calls dump_fill() for
 * slices of output, which ends with "END" and returns it to CONN_PARSE.
 * dump_free() ends a dump early (the connection closes).  Everything runs
 * on the connection's worker; a dump holds the engine's dump walk
 * (engine_dump_begin/end) and allocates its small state on start.
 */
#ifndef CELLAR_SERVER_DUMP_H
#define CELLAR_SERVER_DUMP_H

#include <stddef.h>

#include "protocol/mc_text.h"

struct conn;

const char *dump_start(struct conn *c, const char *arg, size_t len);
/*
 * memcached's class list ("all", "hash" or ids 1..63 joined by commas):
 * false for a bad id, else *set (bit i: class i).
 */
bool dump_classes(const char *p, size_t len, uint64_t *set);
/* cold: kept out of conn_process(), whose registers the hot path needs */
__attribute__((cold)) void dump_fill(struct conn *c);
void dump_free(struct conn *c);
/* `stats cachedump <class> <limit>`, answered at once. */
void dump_cachedump(struct conn *c, const struct mc_req *req);

#endif
