/*
 * persist.h -- the memory file: the cache kept across a restart (-e FILE).
 *
 * What a graceful stop writes and the next start reads back, so that an
 * upgrade or a restart does not empty the cache ("Scaling Memcache at
 * Facebook", 6.4; memcached 1.6's -e).  Files beside the caller's path:
 *
 *   FILE, FILE.1, ...  every live item, one record after another: its key,
 *               value, client flags, CAS, expiry (a unix time, so the time
 *               spent stopped counts against the TTL) and its lease and
 *               stale state.  One file a part: the parts are written, and
 *               read back, by as many threads at once.  Only live items are
 *               written: the files are as large as the data, not as -m.
 *   FILE.meta   a short text written last, by rename, so that it exists
 *               only beside complete parts: the format version, the
 *               settings the items were stored under, the CAS counter, the
 *               hash table's size, and each part's items, length and 64-bit
 *               hash; its last line hashes the lines before it.
 *
 * The items are read back through the store interface (store.h), so a
 * file written by one back end or eviction policy restores into any other:
 * the slab classes and segments are rebuilt, not mapped.  persist_check()
 * is the start's decision, made before the engine exists (the hash table
 * is sized from the file):
 *
 *   no FILE.meta                       PERSIST_NONE      start empty
 *   FILE.meta unreadable or damaged    PERSIST_CORRUPT   refuse to start
 *                                                        (memcached aborts)
 *   settings that would lose items     PERSIST_MISMATCH  start empty
 *   (a smaller -m or -I, -C changed),
 *   or another format version
 *   else                               PERSIST_OK        persist_restore()
 *
 * A FILE.meta that was read (OK or MISMATCH) is removed at once, as
 * memcached does: a later crash must never bring back this old copy.
 * persist_restore() checks every part's length and hash before it stores a
 * single item, so a damaged or cut part restores nothing (never garbage).
 * A stop killed while writing leaves no FILE.meta (persist_save() removes
 * the old one first and renames the new one in last): the next start is
 * empty.
 *
 * Threading: both calls run with nothing else using the engine (before the
 * workers start, after they stopped), and start threads of their own, one
 * a part.  They allocate a write buffer a part, and block on the files.
 */
#ifndef CELLAR_STORAGE_PERSIST_H
#define CELLAR_STORAGE_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/engine.h"

#define PERSIST_VERSION 1
#define PERSIST_PARTS_MAX 8

/* What FILE.meta says. */
struct persist_meta {
    uint64_t items;                     /* records in all parts */
    unsigned parts;
    struct {
        uint64_t items, bytes, hash;    /* one part: records, length, hash */
    } part[PERSIST_PARTS_MAX];
    uint64_t maxbytes;                  /* the settings the items were stored under */
    uint32_t item_size_max;
    bool use_cas;
    uint32_t hashpower;                 /* the hash table's size at the stop */
    uint64_t cas;                       /* the last CAS handed out */
    int64_t saved;                      /* unix time of the stop */
    char storage[8];                    /* "slab" or "seg", to say so */
};

enum persist_check { PERSIST_NONE, PERSIST_OK, PERSIST_CORRUPT, PERSIST_MISMATCH };

/*
 * Reads path.meta and compares it with the settings in cfg.  why says
 * what was found for every result but PERSIST_OK.  Removes path.meta
 * unless PERSIST_NONE or PERSIST_CORRUPT.
 */
enum persist_check persist_check(const char *path, const struct engine_config *cfg,
                                 struct persist_meta *m, char *why, size_t whylen);

/*
 * Checks every part against m, then stores their unexpired items into e
 * (empty, clock set), a thread a part, with their CAS and state; raises
 * e's CAS counter to m's.  Frees the parts' space once read (they are
 * truncated).  *restored counts the items stored, *dropped those that
 * found no memory.  false with err when a part is missing, cut or
 * damaged: e is left empty.
 */
bool persist_restore(struct engine *e, const char *path, const struct persist_meta *m,
                     uint64_t *restored, uint64_t *dropped, char *err, size_t errlen);

/*
 * Writes every live item of e in nparts parts (1..PERSIST_PARTS_MAX), a
 * thread each, then path.meta.  false with err when a write fails (no
 * path.meta is left then).  *items counts the items written.
 */
bool persist_save(struct engine *e, const char *path, unsigned nparts, uint64_t *items,
                  char *err, size_t errlen);

/*
 * Whether path can be written, for a start that takes -e: a stop should
 * not be the first to find out.  false with err.
 */
bool persist_usable(const char *path, char *err, size_t errlen);

#endif
