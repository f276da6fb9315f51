/*
 * item.h -- one cached key/value pair, as it lies in a slab chunk.
 *
 * An item is a fixed header followed by the key and then the value.  A
 * value too large for one chunk (larger than slab_chunk_max) is "chained":
 * the header chunk holds the key and the start of the value, and further
 * chunks of the largest class hold the rest (see engine_item_iov()).
 *
 * Invariants: nkey <= 250; refcount counts the hash table's link (1 while
 * ITEM_LINKED) plus one per caller holding the item; the memory is reused
 * only when refcount reaches 0.  Fields other than refcount and atime are
 * written only while the item is unlinked or under its item lock.
 *
 * Callers outside storage/ use only the accessors below.
 */
#ifndef CELLAR_STORAGE_ITEM_H
#define CELLAR_STORAGE_ITEM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum item_flag {
    ITEM_LINKED = 1,        /* in the hash table and the eviction queue */
    ITEM_FETCHED = 2,       /* read at least once since stored */
    ITEM_CHAINED = 4,       /* value continues in further chunks */
    ITEM_TEMP = 8,          /* a transient item: in its class's wheel (wheel.h), not in
                               the eviction policy's queue; set at link, under the
                               class lock too */
    ITEM_TOKEN_SENT = 16,   /* a lease (the right to recache) has been handed out */
    ITEM_STALE = 32,        /* invalidated: readable, but somebody should recache */
    ITEM_HOLD = 64,         /* delete hold-off tombstone: invisible, refuses add */
    ITEM_KEY_BINARY = 128,  /* the client sent the key encoded (meta b); the engine
                               only keeps the bit on the item it was given to */
    ITEM_FLASH = 256,       /* a header item: the value lies on flash, and the item's
                               own value is where (struct flash_loc; item_ext.c) */
};

struct item {
    struct item *hnext;             /* hash bucket chain */
    union {                         /* the eviction policy's while linked (evict.h) */
        struct {
            struct item *prev, *next;   /* eviction queue links */
        };
        uint64_t pword[2];          /* the same space as integers, for a policy
                                       that keeps no links (evict_sampled.c) */
    };
    _Atomic uint64_t cas;           /* atomic: an invalidating md rewrites it in
                                       place while holders may be reading it */
    uint32_t atime;                 /* last access, engine seconds */
    uint32_t exptime;               /* engine seconds; 0 = never */
    uint32_t nbytes;                /* value length */
    uint32_t flags;                 /* client flags */
    _Atomic uint16_t refcount;
    _Atomic uint16_t iflags;        /* enum item_flag; atomic: holders read it unlocked */
    uint8_t clsid;                  /* slab class id */
    uint8_t nkey;
    _Atomic uint8_t pbits;          /* eviction policy's own bits (evict.h) */
    char data[];                    /* key, then value (or value head) */
};

/*
 * For the read-ahead, which reads links of items nobody holds (ht_prefetch(),
 * engine_prefetch()): such an item may be freed meanwhile.  Slab memory
 * stays mapped while the engine lives, so in a normal build the read is
 * harmless (what it gives is only prefetched); under AddressSanitizer a
 * freed chunk is poisoned (slab.c), so those functions go uninstrumented.
 */
#define ITEM_PEEK __attribute__((no_sanitize_address))

static inline const char *item_key(const struct item *it) { return it->data; }
static inline unsigned item_nkey(const struct item *it) { return it->nkey; }
static inline uint32_t item_nbytes(const struct item *it) { return it->nbytes; }
static inline uint32_t item_flags(const struct item *it) { return it->flags; }
static inline uint64_t item_cas(const struct item *it) {
    return atomic_load_explicit(&it->cas, memory_order_relaxed);
}
static inline unsigned item_clsid(const struct item *it) { return it->clsid; }
/*
 * What follows the key of an ITEM_CHAINED item: a slab item's chain of
 * chunks (engine_int.h draws it), or, for a view of the segment back end
 * (item_seg.c), ext: the whole value where it lies.  Read with memcpy (the
 * key length leaves it unaligned).
 */
struct item_chain {
    struct item_chunk *first;
    uint32_t head;                      /* value bytes in the header chunk */
    uint32_t unused;
    char *ext;                          /* the value in one piece elsewhere; NULL: chunks */
};

/* The value when it lies in one piece, else NULL (see engine_item_iov()). */
static inline const char *item_value_flat(const struct item *it) {
    if (!(atomic_load_explicit(&it->iflags, memory_order_relaxed) & ITEM_CHAINED))
        return it->data + it->nkey;
    char *ext;
    memcpy(&ext, it->data + it->nkey + offsetof(struct item_chain, ext), sizeof(ext));
    return ext;
}
static inline bool item_fetched(const struct item *it) {
    return (atomic_load_explicit(&it->iflags, memory_order_relaxed) & ITEM_FETCHED) != 0;
}
static inline bool item_key_binary(const struct item *it) {
    return (atomic_load_explicit(&it->iflags, memory_order_relaxed) & ITEM_KEY_BINARY) != 0;
}

#endif
