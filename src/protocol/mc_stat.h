/*
 * mc_stat.h -- one statistic as memcached sends it: the text protocol's
 * "STAT <name> <value>\r\n" line, or the binary protocol's STAT packet
 * (key = name, value = value, the request's opaque).  The one writer of
 * both cellard's `stats` (server/stats.c) and cellar-router's
 * (router/admin.c); each program says only where the bytes go.
 *
 * Pure function: no allocation, no state.
 */
#ifndef CELLAR_PROTOCOL_MC_STAT_H
#define CELLAR_PROTOCOL_MC_STAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_bin.h"

/* The most bytes one statistic takes, in either protocol. */
#define MC_STAT_MAX(nname, nval) (MC_BIN_HDR_LEN + (nname) + (nval) + 8)

/*
 * Writes one statistic into out (MC_STAT_MAX(nname, nval) bytes of room);
 * returns its length.  In binary, an empty name and value make the
 * packet that ends the list.
 */
size_t mc_stat_fmt(char *out, bool binary, uint32_t opaque, const char *name, size_t nname,
                   const char *val, size_t nval);

#endif
