/*
 * mc_block.h -- a reply's data block, as the client codecs read it.
 *
 * A VALUE line (text) or a VA line (meta) announces vlen data bytes that
 * follow it, then "\r\n".  Both client codecs take the block the same
 * way: wait until all of it is there (telling the caller the element's
 * whole size), then insist on its terminator.  Header-only, internal to
 * protocol/; pure.
 */
#ifndef CELLAR_PROTOCOL_MC_BLOCK_H
#define CELLAR_PROTOCOL_MC_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_text.h"   /* struct mc_span, enum mc_parse */

/*
 * The block of vlen bytes at buf[next..) within buf[0..len): MC_PARSE_OK
 * with *value and *consumed (the element's bytes, line and block and
 * "\r\n"); MC_PARSE_NEED_MORE with *need the element's size once whole;
 * MC_PARSE_ERROR when the block is not ended by "\r\n".
 */
static inline enum mc_parse mc_block_take(const char *buf, size_t len, size_t next,
                                          uint32_t vlen, struct mc_span *value, size_t *need,
                                          size_t *consumed) {
    size_t total = next + (size_t)vlen + 2;
    if (len < total) {
        *need = total;
        return MC_PARSE_NEED_MORE;
    }
    if (buf[total - 2] != '\r' || buf[total - 1] != '\n')
        return MC_PARSE_ERROR;
    *value = (struct mc_span){buf + next, vlen};
    *consumed = total;
    return MC_PARSE_OK;
}

#endif
