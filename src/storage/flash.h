/*
 * flash.h -- values on flash: memcached's extstore, the page store below
 * the engine.
 *
 * One or more files (memcached's ext_path=FILE:SIZE, several: JBOD) are
 * cut into pages of page_size bytes.  Records (a value, with its key for
 * compaction) are appended to a page through a write buffer of wbuf_size
 * bytes held in memory; a full buffer is written to the file at its place
 * in the page with one pwrite() by the thread that filled it (the engine's
 * flash writer, never a worker), and a full page is closed.  When no page
 * is free, the oldest closed page (lowest version) is taken back whole:
 * every record in it is lost, which readers learn from the version in
 * their location (memcached's page eviction).
 *
 *   file 0: [ page 0 | page 1 | page 2 | ... ]   file 1: [ page n | ... ]
 *              ^ open page of bucket 0: wbuf in memory until full
 *
 * Page ids run through the files in order (file 0's pages, then file
 * 1's), where memcached interleaves them.  A file's old contents are not
 * read back: a new flash_create() starts with every page free.
 *
 * Buckets (memcached's page buckets): each open page takes records of one
 * kind only, so that what dies together lies together: FLASH_B_DEFAULT,
 * FLASH_B_LOWTTL (items whose TTL is under ext_low_ttl), FLASH_B_COMPACT
 * (records rewritten by compaction) and FLASH_B_CHUNKED (values larger
 * than a slab chunk).  Each bucket has its own open page and write buffer.
 *
 * A location (struct flash_loc) names a record by page, page version,
 * offset and length, with a CRC-32C of the value.  The engine keeps it in
 * the item that stands for the value in memory (the header item).  A
 * version is never reused: a page taken back and written again gets a new
 * one, so a location into an older life of the page reads as gone.
 *
 * Record on a page (8-byte aligned):
 *
 *   +-----------+-----------+------+-----+-------+-----+
 *   | len (u32) | crc (u32) | nkey | key | value | pad |
 *   +-----------+-----------+------+-----+-------+-----+
 *                             (u8)       ^ loc.offset
 *
 * len counts all of the record's bytes except its pad (9 + nkey + the
 * value's), so it is never 0; the CRC-32C is the value's (hash_crc32c());
 * both in the host's byte order, since no other machine reads the file.
 *
 * Threading: one writer at a time calls flash_write(), flash_flush() and
 * the compaction calls (the engine's flash step holds its own lock for
 * that); flash_read() and flash_release() may be called by any thread at
 * any time.  A mutex guards the page table and the buffers' states; a
 * read copies out of a write buffer not yet on the file under it, and
 * otherwise reads the file with no lock held.  flash_create() allocates
 * the buffers; nothing else allocates.  Reads and writes block on the
 * file (the page cache absorbs most); asynchronous reads are the engine's
 * business (a later step).
 */
#ifndef CELLAR_STORAGE_FLASH_H
#define CELLAR_STORAGE_FLASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define FLASH_MAX_FILES 16
#define FLASH_MAX_PAGES 65535           /* a page id fits 16 bits, as memcached's */

enum flash_bucket {
    FLASH_B_DEFAULT,
    FLASH_B_COMPACT,
    FLASH_B_CHUNKED,
    FLASH_B_LOWTTL,
    FLASH_NBUCKETS
};

struct flash_file {
    const char *path;
    uint64_t size;                      /* bytes; pages are size / page_size of it */
};

struct flash_config {
    struct flash_file files[FLASH_MAX_FILES];
    unsigned nfiles;
    uint32_t page_size;                 /* bytes (memcached's ext_page_size, in MB there) */
    uint32_t wbuf_size;                 /* bytes; divides page_size */
};

/* Where a record lies.  24 bytes; kept in the engine's header item. */
struct flash_loc {
    uint64_t version;                   /* the page's life when written */
    uint32_t offset;                    /* of the value, from the start of the page */
    uint16_t page;
    uint16_t unused;
    uint32_t len;                       /* value bytes */
    uint32_t crc;                       /* CRC-32C of the value */
};

/* memcached's extstore_* counters, and what `stats extstore` shows. */
struct flash_stats {
    uint64_t page_allocs, page_evictions, page_reclaims;
    uint64_t pages_free, pages_used;
    uint64_t objects_evicted, bytes_evicted;
    uint64_t objects_written, bytes_written;
    uint64_t objects_read, bytes_read;
    uint64_t objects_used, bytes_used, bytes_fragmented;
    /* bytes_written and bytes_used charge each record its value bytes plus
       its 9-byte head (not the key: a location does not carry nkey);
       bytes_read counts the same charge of each record read (memcached
       counts the whole object read); bytes_fragmented is what closed pages
       hold beyond their live records' charge (open pages not counted). */
    uint64_t io_errors;                 /* reads or writes the file refused or cut short */
    uint64_t limit_maxbytes;            /* every page's bytes */
    uint64_t page_size;
};

/* One page, as `stats extstore` lists it (memcached's page lines). */
struct flash_page_info {
    uint64_t version;
    uint64_t bytes_used, objects;
    unsigned bucket;
    unsigned free_bucket;               /* memcached's; always 0 here */
    bool free, open;
};

struct flash;

/*
 * Opens (creating as needed) every file, takes an exclusive lock on each
 * (a second process on the same file is refused: flock), sizes them, and
 * allocates one write buffer per bucket.  NULL with err filled in (the
 * path and the reason) when a file cannot be had or the sizes are wrong.
 */
struct flash *flash_create(const struct flash_config *cfg, char *err, size_t errlen);
/* Writes nothing more; closes the files.  Accepts NULL; sets *f to NULL. */
void flash_destroy(struct flash **f);

/* Number of pages in all. */
unsigned flash_pages(const struct flash *f);

/*
 * Appends a record of key and the value gathered from iov[0..iovcnt)
 * (len bytes in all) to bucket b's buffer, writing the buffer out first
 * when the record does not fit, and opening a page (taking back the
 * oldest when none is free) as needed.  Fills *loc.  Returns false when
 * the record cannot be written: larger than a write buffer, or the file
 * refused a write (counted in io_errors; the tier then stops taking
 * records until a write succeeds again).  Writer only.
 */
bool flash_write(struct flash *f, enum flash_bucket b, const char *key, unsigned nkey,
                 const struct iovec *iov, int iovcnt, uint32_t len, struct flash_loc *loc);

/*
 * Makes room in bucket b's buffer for a record of nkey and len bytes
 * (writing the buffer out, opening a page, as flash_write() would), so that
 * the next flash_write() of that size to b only copies: a caller that must
 * write while holding a lock others wait on does its I/O first, here.
 * false as flash_write().  Writer only.
 */
bool flash_reserve(struct flash *f, enum flash_bucket b, unsigned nkey, uint32_t len);

/* Writes out every bucket's buffer that holds records (the pages stay open).  Writer only. */
bool flash_flush(struct flash *f);

/*
 * Reads the value at loc into iov[0..iovcnt) (at least loc->len bytes of
 * room, else FLASH_IOERR, not counted).  FLASH_OK with the value whole (its CRC checked), FLASH_GONE when
 * the page has been taken back since (the record no longer exists),
 * FLASH_BADCRC when the bytes read are not what was written, FLASH_IOERR
 * when the file refused the read or cut it short.  Any thread.
 */
enum flash_read_result { FLASH_OK, FLASH_GONE, FLASH_BADCRC, FLASH_IOERR };
enum flash_read_result flash_read(struct flash *f, const struct flash_loc *loc,
                                  const struct iovec *iov, int iovcnt);

/*
 * The record at loc is no longer wanted (its item was deleted, replaced,
 * expired, or brought back to memory): its page's live bytes and objects
 * drop, which is what compaction and page reclaim go by.  Nothing when the
 * page has been taken back since.  Any thread.
 */
void flash_release(struct flash *f, const struct flash_loc *loc);

/* Whether loc still names a record (its page not taken back since). */
bool flash_live(struct flash *f, const struct flash_loc *loc);

/*
 * Compaction and reclaim (writer only).  flash_reclaim() frees every
 * closed page with no live object left (memcached's page_reclaims).
 * flash_compact_pick() names a closed page worth compacting, by
 * memcached's rule (see flash.c): with at most `under` pages free, the
 * oldest whose live bytes are below a share of a page, or with
 * drop_unread and at most drop_under free, the oldest (*drop set); -1:
 * none.  Which records to keep is the caller's business.  flash_compact_scan() calls fn for each record of that page in
 * order, with its key and location, reading the page into buf (page_size
 * bytes, the caller's); fn may rewrite what it wants kept (flash_write()
 * to FLASH_B_COMPACT) and release the old location.  A record whose value
 * fails its CRC is skipped.  False when the page is not closed (free or
 * open) or cannot be read.  flash_page_free() then takes the page back:
 * its locations read as gone from then on (nothing when it is not closed).
 */
unsigned flash_reclaim(struct flash *f);
int flash_compact_pick(struct flash *f, unsigned under, double max_frag, bool drop_unread,
                       unsigned drop_under, bool *drop);
typedef void (*flash_scan_fn)(void *arg, const char *key, unsigned nkey,
                              const struct flash_loc *loc, const char *value);
bool flash_compact_scan(struct flash *f, unsigned page, char *buf, flash_scan_fn fn, void *arg);
void flash_page_free(struct flash *f, unsigned page);

void flash_stats(struct flash *f, struct flash_stats *out);
/* Fills info[0..flash_pages()) for `stats extstore`. */
void flash_page_infos(struct flash *f, struct flash_page_info *info);

#endif
