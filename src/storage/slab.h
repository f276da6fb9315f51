/*
 * slab.h -- size classes, pages and free chunks: the cellar's racks.
 *
 * Owns every byte that holds items.  Memory comes from the system one page
 * (page_size bytes) at a time; a page is given to the size class that asked
 * for it and stays there, cut into chunks of the class's size.  Chunks are
 * handed out from the class's free list first, then carved from the end of
 * its newest page, then from a new page.
 *
 * Classes are computed like memcached's: class 1 holds min_chunk bytes
 * rounded up to 8, each next class is the previous times growth_factor
 * (rounded up to 8) while it stays below chunk_max / growth_factor, and the
 * last class is exactly chunk_max.  Ids are 1-based; at most
 * SLAB_MAX_CLASSES - 1 classes.
 *
 * Memory bound: the bytes of all pages stay <= mem_limit (0 = no limit),
 * except that a class with no page at all may take its first one past the
 * limit, so that a tiny limit still works; hence the total never exceeds
 * the limit by more than one page per class.
 *
 * Pages move (memcached's slab mover): slab_move_begin() takes a class's
 * oldest page out of use, the caller empties it of items (the engine's
 * mover, item_move.c), and slab_move_finish() gives it to another class
 * or to the global page pool (memcached's class 0).  A class that needs a
 * page takes one from the pool first, even at the limit, since pool pages
 * are counted.  Pool pages above a lowered limit go back to the system
 * (slab_set_limit(), slab_move_finish()); other pages only at destroy.
 *
 * Threading: each class has its own mutex, taken only inside these calls
 * and never held while taking another engine lock; the pool's mutex is
 * taken after a class's (both leaves to the engine).  The page count is an
 * atomic.  slab_alloc() calls malloc for a new page, slab_move_begin() a
 * bitmap, slab_move_finish() may grow a page list.  One page moves at a
 * time, and the slab_move_*() calls come from one thread (the engine's
 * maintenance step).
 */
#ifndef CELLAR_STORAGE_SLAB_H
#define CELLAR_STORAGE_SLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLAB_MAX_CLASSES 64     /* ids 1..63, like memcached */
#define SLAB_ALIGN 8

struct slab;

struct slab_config {
    size_t mem_limit;           /* bytes of pages, 0 = unlimited */
    double growth_factor;       /* > 1 */
    uint32_t min_chunk;         /* smallest chunk before rounding */
    uint32_t page_size;
    uint32_t chunk_max;         /* largest chunk, <= page_size */
    bool single_thread;         /* one thread only: no locking (lock.h) */
};

/* Returns NULL when memory is short; the config must already be valid. */
struct slab *slab_create(const struct slab_config *cfg);
/* Frees every page: all chunks handed out become invalid. */
void slab_destroy(struct slab **s);

/* Number of classes (ids 1..n). */
unsigned slab_nclasses(const struct slab *s);
/* The smallest class whose chunks hold size bytes; 0 if size > chunk_max. */
unsigned slab_class_for(const struct slab *s, size_t size);
/* Chunk size of class id. */
uint32_t slab_chunk_size(const struct slab *s, unsigned id);

/*
 * One chunk of class id (8-byte aligned, contents undefined), or NULL when
 * the class has no free chunk and no page can be had within the limit.
 * Never evicts: that is the engine's business.
 */
void *slab_alloc(struct slab *s, unsigned id);
/* Gives a chunk back to its class. */
void slab_free(struct slab *s, unsigned id, void *chunk);
/* As slab_alloc(), from free or uncarved chunks only: never takes a page. */
void *slab_alloc_spare(struct slab *s, unsigned id);

struct slab_class_stats {
    uint32_t chunk_size, chunks_per_page;
    uint64_t total_pages, total_chunks, used_chunks, free_chunks, free_chunks_end;
};
void slab_class_stats(struct slab *s, unsigned id, struct slab_class_stats *out);
/* Bytes of pages taken from the system. */
uint64_t slab_total_malloced(const struct slab *s);
/* Changes the limit (0: none).  Pages already taken are kept; a lower limit
   only stops new ones. */
void slab_set_limit(struct slab *s, uint64_t bytes);
uint64_t slab_limit(const struct slab *s);

/* Takes every page the limit allows into the global pool now (memcached's
   slabs_prefill_global(), with extstore); before other threads use s. */
void slab_prefill(struct slab *s);
/* Pages in the global pool; pages of class id (0: the pool). */
uint64_t slab_pool_pages(struct slab *s);
uint64_t slab_class_pages(struct slab *s, unsigned id);

/*
 * Starts moving src's oldest page out (src 0: a pool page); false when src
 * has fewer than two pages, a move is under way, or memory is short.  The
 * page's bytes are [*lo, *hi) (both NULL for a pool page): the caller
 * frees every chunk there that is in use; nothing there is handed out
 * meanwhile.  slab_move_clear() says when all are free; then
 * slab_move_finish() gives the page to dst (0: the pool).
 */
bool slab_move_begin(struct slab *s, unsigned src, char **lo, char **hi);
bool slab_move_clear(struct slab *s);
void slab_move_finish(struct slab *s, unsigned dst);

#endif
