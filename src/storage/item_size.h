/*
 * item_size.h -- memcached 1.6.18's size model of an item, beside the
 * engine's own.
 *
 * cellard lays its items out differently from memcached, but two answers
 * must carry memcached's numbers: the meta command `me` (an item's size
 * and slab class, as a client comparing the two servers sees them) and
 * `stats sizes`, whose 32-byte buckets start at the size of an empty
 * item.  This header holds that model as plain arithmetic on plain
 * values: it reads no settings and no engine, so storage knows nothing
 * of the server's options.  No state, no allocation; any thread.
 */
#ifndef CELLAR_STORAGE_ITEM_SIZE_H
#define CELLAR_STORAGE_ITEM_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_ITEM_HDR 48          /* memcached 1.6.18's sizeof(item), 64-bit */
#define MC_CHUNK_HDR 48         /* its sizeof(item_chunk) */
#define MC_CHUNK_ALIGN 8        /* its slab chunk alignment */

/*
 * memcached's ITEM_ntotal(): header, key and its NUL, 4 bytes of client
 * flags unless they are 0, the value with its "\r\n", and 8 bytes of CAS
 * unless CAS is off (-C).
 */
static inline uint64_t mc_item_size(size_t nkey, uint32_t flags, uint64_t nbytes, bool use_cas) {
    return MC_ITEM_HDR + nkey + 1 + (flags != 0 ? 4 : 0) + nbytes + 2 + (use_cas ? 8 : 0);
}

#endif
