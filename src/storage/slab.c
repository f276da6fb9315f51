#include "storage/slab.h"

#include "storage/lock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * Under AddressSanitizer, chunks that are not handed out are poisoned, so a
 * use of an item after its last reference went is reported, not silent.
 */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* A free chunk's first bytes link it into its class's free list. */
struct free_chunk {
    struct free_chunk *next;
};

struct slab_class {
    struct mtx lock;
    uint32_t size;              /* chunk size */
    uint32_t perpage;           /* chunks per page */
    struct free_chunk *free;    /* free list */
    uint64_t nfree;
    char *end;                  /* next uncarved chunk of the newest page */
    uint32_t nend;              /* uncarved chunks left there */
    char **pages;               /* every page of this class, oldest first */
    uint64_t npages, cap;
    char *mv_lo;                /* the page being moved out (slab_move_begin()); NULL none */
};

/* Items up to this size find their class in a table, not by search. */
#define SMALL_MAX 4096

struct slab {
    struct slab_config cfg;
    unsigned n;                 /* classes 1..n */
    uint32_t small_max;         /* sizes up to this use small[]; 0: none */
    uint8_t small[SMALL_MAX / SLAB_ALIGN + 1]; /* class of a size, by size / SLAB_ALIGN rounded up */
    _Atomic uint64_t malloced;  /* bytes of pages taken */
    _Atomic uint64_t limit;     /* bytes of pages allowed (cfg.mem_limit, then slab_set_limit) */
    struct slab_class cls[SLAB_MAX_CLASSES];

    /* The global page pool (memcached's class 0), under pool_lock. */
    struct mtx pool_lock;
    char **pool;
    uint64_t npool, pool_cap;

    /* The page move under way (one at a time), see slab_move_begin(). */
    unsigned mv_src;            /* 0: none */
    uint8_t *mv_free;           /* per chunk of the page: 1 once free (src's lock) */
    uint32_t mv_nfree;
};

static unsigned slab_class_search(const struct slab *s, size_t size);

static uint32_t round_up(double size) {
    uint32_t s = (uint32_t)size;
    if (s % SLAB_ALIGN)
        s += SLAB_ALIGN - s % SLAB_ALIGN;
    return s;
}

/*
 * The class table follows memcached's slabs_init(): the running size is
 * kept unrounded-then-truncated exactly as memcached's integer arithmetic
 * does, so -f and -n give the same chunk sizes as memcached for the same
 * header size.
 */
struct slab *slab_create(const struct slab_config *cfg) {
    struct slab *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->cfg = *cfg;
    atomic_init(&s->limit, cfg->mem_limit);
    uint32_t size = cfg->min_chunk;
    unsigned i = 0;
    while (++i < SLAB_MAX_CLASSES - 1) {
        if (size >= cfg->chunk_max / cfg->growth_factor)
            break;
        size = round_up(size);
        s->cls[i].size = size;
        size = (uint32_t)(size * cfg->growth_factor);
    }
    s->cls[i].size = cfg->chunk_max;
    s->n = i;
    mtx_init(&s->pool_lock, !cfg->single_thread);
    for (i = 1; i <= s->n; i++) {
        mtx_init(&s->cls[i].lock, !cfg->single_thread);
        s->cls[i].perpage = cfg->page_size / s->cls[i].size;
    }
    /* The table needs every class it covers to be a multiple of SLAB_ALIGN. */
    s->small_max = SMALL_MAX < s->cls[s->n].size ? SMALL_MAX : s->cls[s->n].size;
    for (i = 1; i <= s->n && s->cls[i].size <= s->small_max; i++)
        if (s->cls[i].size % SLAB_ALIGN != 0)
            s->small_max = 0;
    for (uint32_t j = 0; j * SLAB_ALIGN <= s->small_max; j++)
        s->small[j] = (uint8_t)slab_class_search(s, (size_t)j * SLAB_ALIGN);
    return s;
}

void slab_destroy(struct slab **sp) {
    struct slab *s = *sp;
    if (s == NULL)
        return;
    for (unsigned i = 1; i <= s->n; i++) {
        struct slab_class *c = &s->cls[i];
        for (uint64_t p = 0; p < c->npages; p++)
            free(c->pages[p]);
        free(c->pages);
        mtx_destroy(&c->lock);
    }
    for (uint64_t p = 0; p < s->npool; p++)
        free(s->pool[p]);
    free(s->pool);
    free(s->mv_free);
    mtx_destroy(&s->pool_lock);
    free(s);
    *sp = NULL;
}

unsigned slab_nclasses(const struct slab *s) { return s->n; }

unsigned slab_class_for(const struct slab *s, size_t size) {
    if (size <= s->small_max)
        return s->small[(size + SLAB_ALIGN - 1) / SLAB_ALIGN];
    return slab_class_search(s, size);
}

static unsigned slab_class_search(const struct slab *s, size_t size) {
    if (size > s->cls[s->n].size)
        return 0;
    unsigned lo = 1, hi = s->n;         /* binary search: first class >= size */
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (s->cls[mid].size >= size)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

uint32_t slab_chunk_size(const struct slab *s, unsigned id) { return s->cls[id].size; }

/*
 * Reserves a page's worth of the limit with a compare-and-swap, so classes
 * need no shared lock to grow.  A class without pages may go past the limit
 * (memcached does the same), which bounds the overshoot by one page per
 * class.  So may a class whose page is moving out (c's lock held), by one
 * page in all: while the mover empties that page its chunks serve nobody,
 * and a burst of stores would find no chunk free and nothing to evict
 * outside it; the page leaving then goes back to the system
 * (slab_move_finish()), which brings the total under the limit again.
 */
static bool page_reserve(struct slab *s, const struct slab_class *c) {
    uint64_t page = s->cfg.page_size;
    uint64_t limit = atomic_load_explicit(&s->limit, memory_order_relaxed);
    uint64_t cur = atomic_load_explicit(&s->malloced, memory_order_relaxed);
    for (;;) {
        if (limit && cur + page > limit && c->npages > 0 && (c->mv_lo == NULL || cur >= limit))
            return false;
        if (atomic_compare_exchange_weak_explicit(&s->malloced, &cur, cur + page,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
            return true;
    }
}

/* Makes room for one more page in a list of *cap (false: out of memory). */
static bool list_grow(char ***list, uint64_t n, uint64_t *cap) {
    if (n < *cap)
        return true;
    uint64_t ncap = *cap ? *cap * 2 : 16;
    char **l = realloc(*list, ncap * sizeof(*l));
    if (l == NULL)
        return false;
    *list = l;
    *cap = ncap;
    return true;
}

/*
 * memcached's slabs_prefill_global(), which it runs with extstore: every
 * page the limit allows is taken now, into the global pool, so that the
 * pool (and `slabs reassign 0 N`) holds what no class uses yet, and a
 * class is short only when the pool is empty.  The pages are malloc'd, not
 * touched: they cost address space, not memory, until a class writes them.
 * Called at create time, before other threads use s.
 */
void slab_prefill(struct slab *s) {
    uint64_t page = s->cfg.page_size;
    uint64_t limit = atomic_load_explicit(&s->limit, memory_order_relaxed);
    if (limit == 0)
        return;
    mtx_lock(&s->pool_lock);
    while (atomic_load_explicit(&s->malloced, memory_order_relaxed) + page <= limit &&
           list_grow(&s->pool, s->npool, &s->pool_cap)) {
        char *p = malloc(page);
        if (p == NULL)
            break;
        atomic_fetch_add_explicit(&s->malloced, page, memory_order_relaxed);
        s->pool[s->npool++] = p;
    }
    mtx_unlock(&s->pool_lock);
}

/* A page from the global pool (already counted in malloced), or NULL. */
static char *pool_take(struct slab *s) {
    char *page = NULL;
    mtx_lock(&s->pool_lock);
    if (s->npool > 0)
        page = s->pool[--s->npool];
    mtx_unlock(&s->pool_lock);
    return page;
}

/*
 * Takes a new page for class c (lock held); the page is carved lazily.  As
 * memcached's do_slabs_newslab(), a page in the global pool is taken first,
 * even when the limit is reached: it is already counted.
 */
static bool page_new_locked(struct slab *s, struct slab_class *c) {
    if (!list_grow(&c->pages, c->npages, &c->cap))
        return false;
    char *page = pool_take(s);
    if (page == NULL) {
        if (!page_reserve(s, c))
            return false;
        page = malloc(s->cfg.page_size);
        if (page == NULL) {
            atomic_fetch_sub_explicit(&s->malloced, s->cfg.page_size, memory_order_relaxed);
            return false;
        }
        POISON(page, s->cfg.page_size);
    }
    c->pages[c->npages++] = page;
    c->end = page;
    c->nend = c->perpage;
    return true;
}

/*
 * A chunk of class id: a freed one, else the next of its last page, else
 * (with grow) one of a new page.  slab_alloc_spare() is the page mover's:
 * it may not take a page, since the mover is giving pages away.  Inlined
 * into both, so the set path keeps its instruction count (callgrind: +1 %
 * on w4 at depth 16 when left to the compiler).
 */
static inline __attribute__((always_inline)) void *chunk_take(struct slab *s, unsigned id,
                                                             bool grow) {
    struct slab_class *c = &s->cls[id];
    void *p = NULL;
    mtx_lock(&c->lock);
    if (c->free != NULL) {
        struct free_chunk *f = c->free;
        UNPOISON(f, c->size);
        c->free = f->next;
        c->nfree--;
        p = f;
    } else if (c->nend > 0 || (grow && page_new_locked(s, c))) {
        p = c->end;
        UNPOISON(p, c->size);
        c->end += c->size;
        c->nend--;
    }
    mtx_unlock(&c->lock);
    return p;
}

void *slab_alloc(struct slab *s, unsigned id) { return chunk_take(s, id, true); }

void *slab_alloc_spare(struct slab *s, unsigned id) { return chunk_take(s, id, false); }

/* Whether chunk lies in the page c is moving out (lock held). */
static bool in_moving_page(const struct slab *s, const struct slab_class *c, const void *chunk) {
    const char *p = chunk;
    return p >= c->mv_lo && p < c->mv_lo + s->cfg.page_size;
}

/* A chunk of the moving page became free (src's lock held). */
static void move_mark_free_locked(struct slab *s, struct slab_class *c, void *chunk) {
    size_t i = (size_t)((char *)chunk - c->mv_lo) / c->size;
    POISON(chunk, c->size);
    if (!s->mv_free[i]) {
        s->mv_free[i] = 1;
        s->mv_nfree++;
    }
}

void slab_free(struct slab *s, unsigned id, void *chunk) {
    struct slab_class *c = &s->cls[id];
    struct free_chunk *f = chunk;
    mtx_lock(&c->lock);
    if (__builtin_expect(c->mv_lo != NULL, 0) && in_moving_page(s, c, chunk)) {
        move_mark_free_locked(s, c, chunk);
        mtx_unlock(&c->lock);
        return;
    }
    f->next = c->free;
    POISON(f, c->size);
    c->free = f;
    c->nfree++;
    mtx_unlock(&c->lock);
}

void slab_class_stats(struct slab *s, unsigned id, struct slab_class_stats *out) {
    struct slab_class *c = &s->cls[id];
    mtx_lock(&c->lock);
    out->chunk_size = c->size;
    out->chunks_per_page = c->perpage;
    out->total_pages = c->npages;
    out->total_chunks = c->npages * c->perpage;
    out->free_chunks = c->nfree;
    out->free_chunks_end = c->nend;
    out->used_chunks = out->total_chunks - c->nfree - c->nend;
    mtx_unlock(&c->lock);
}

/*
 * memcached's memory_release(): while more is taken than the limit allows,
 * pages of the global pool go back to the system.
 */
static void pool_release(struct slab *s) {
    uint64_t page = s->cfg.page_size;
    mtx_lock(&s->pool_lock);
    while (s->npool > 0) {
        uint64_t limit = atomic_load_explicit(&s->limit, memory_order_relaxed);
        if (limit == 0 || atomic_load_explicit(&s->malloced, memory_order_relaxed) <= limit)
            break;
        char *p = s->pool[--s->npool];
        UNPOISON(p, page);
        free(p);
        atomic_fetch_sub_explicit(&s->malloced, page, memory_order_relaxed);
    }
    mtx_unlock(&s->pool_lock);
}

void slab_set_limit(struct slab *s, uint64_t bytes) {
    atomic_store_explicit(&s->limit, bytes, memory_order_relaxed);
    pool_release(s);
}

uint64_t slab_pool_pages(struct slab *s) {
    mtx_lock(&s->pool_lock);
    uint64_t n = s->npool;
    mtx_unlock(&s->pool_lock);
    return n;
}

uint64_t slab_class_pages(struct slab *s, unsigned id) {
    if (id == 0)
        return slab_pool_pages(s);
    struct slab_class *c = &s->cls[id];
    mtx_lock(&c->lock);
    uint64_t n = c->npages;
    mtx_unlock(&c->lock);
    return n;
}

/*
 * Starts moving the oldest page of class src out (src 0: the pool's last
 * page, which needs no clearing).  The page's free chunks are cut out of
 * the free list, carving stops if it is the page being carved, and from
 * now on a chunk of it that slab_free() gets back is marked instead of
 * listed: so nothing in it can be handed out again, and the page is clear
 * once every chunk is marked (slab_move_clear()).  False when src has
 * fewer than two pages (memcached's NOSPARE) or memory is short.
 */
bool slab_move_begin(struct slab *s, unsigned src, char **lo, char **hi) {
    if (s->mv_src != 0)
        return false;
    if (src == 0) {
        if (slab_pool_pages(s) < 2)
            return false;
        s->mv_src = SLAB_MAX_CLASSES;      /* a pool page: nothing to clear */
        *lo = *hi = NULL;
        return true;
    }
    struct slab_class *c = &s->cls[src];
    uint8_t *bits = calloc(c->perpage, 1);
    if (bits == NULL)
        return false;
    mtx_lock(&c->lock);
    if (c->npages < 2) {
        mtx_unlock(&c->lock);
        free(bits);
        return false;
    }
    char *page = c->pages[0];
    free(s->mv_free);
    s->mv_free = bits;
    s->mv_nfree = 0;
    c->mv_lo = page;
    /* Rebuild the free list without the page's chunks, each chunk unpoisoned
       only while its link is read or written. */
    struct free_chunk *f = c->free, *head = NULL, *prev = NULL;
    while (f != NULL) {
        UNPOISON(f, sizeof(*f));
        struct free_chunk *next = f->next;
        if (in_moving_page(s, c, f)) {
            c->nfree--;
            move_mark_free_locked(s, c, f);
        } else {
            if (prev != NULL) {
                prev->next = f;
                POISON(prev, c->size);
            } else {
                head = f;
            }
            prev = f;
        }
        f = next;
    }
    if (prev != NULL) {
        prev->next = NULL;
        POISON(prev, c->size);
    }
    c->free = head;
    if (c->nend > 0 && in_moving_page(s, c, c->end)) {
        for (; c->nend > 0; c->nend--, c->end += c->size)
            move_mark_free_locked(s, c, c->end);
    }
    mtx_unlock(&c->lock);
    s->mv_src = src;
    *lo = page;
    *hi = page + (size_t)c->perpage * c->size;
    return true;
}

/* Whether every chunk of the moving page is free. */
bool slab_move_clear(struct slab *s) {
    if (s->mv_src == SLAB_MAX_CLASSES)
        return true;
    struct slab_class *c = &s->cls[s->mv_src];
    mtx_lock(&c->lock);
    bool clear = s->mv_nfree == c->perpage;
    mtx_unlock(&c->lock);
    return clear;
}

/* Cuts a free page into class c's free list (lock held), as memcached's split. */
static void page_split_locked(struct slab_class *c, char *page) {
    for (uint32_t i = c->perpage; i-- > 0;) {
        struct free_chunk *f = (struct free_chunk *)(page + (size_t)i * c->size);
        UNPOISON(f, sizeof(*f));
        f->next = c->free;
        POISON(f, c->size);
        c->free = f;
        c->nfree++;
    }
}

/*
 * Finishes the move slab_move_begin() started, once slab_move_clear():
 * the page leaves src and is cut into dst's chunks, or (dst 0) goes to the
 * global pool, after which pages above the limit go back to the system.
 */
void slab_move_finish(struct slab *s, unsigned dst) {
    char *page;
    if (s->mv_src == SLAB_MAX_CLASSES) {
        page = pool_take(s);
    } else {
        struct slab_class *c = &s->cls[s->mv_src];
        mtx_lock(&c->lock);
        page = c->pages[0];
        memmove(c->pages, c->pages + 1, (c->npages - 1) * sizeof(*c->pages));
        c->npages--;
        c->mv_lo = NULL;
        mtx_unlock(&c->lock);
    }
    s->mv_src = 0;
    if (page == NULL)
        return;
    uint64_t limit = atomic_load_explicit(&s->limit, memory_order_relaxed);
    if (dst != 0 && limit != 0 && atomic_load_explicit(&s->malloced, memory_order_relaxed) > limit)
        dst = 0;        /* src grew past the limit while it moved: the page pays for that */
    if (dst != 0) {
        struct slab_class *d = &s->cls[dst];
        mtx_lock(&d->lock);
        if (list_grow(&d->pages, d->npages, &d->cap)) {
            d->pages[d->npages++] = page;
            page_split_locked(d, page);
            page = NULL;
        }
        mtx_unlock(&d->lock);
        if (page == NULL)
            return;
    }
    mtx_lock(&s->pool_lock);
    if (list_grow(&s->pool, s->npool, &s->pool_cap)) {
        s->pool[s->npool++] = page;
        page = NULL;
    }
    mtx_unlock(&s->pool_lock);
    if (page != NULL) {                 /* no room to list it: give it back */
        UNPOISON(page, s->cfg.page_size);
        free(page);
        atomic_fetch_sub_explicit(&s->malloced, s->cfg.page_size, memory_order_relaxed);
    }
    pool_release(s);
}

uint64_t slab_limit(const struct slab *s) {
    return atomic_load_explicit(&s->limit, memory_order_relaxed);
}

uint64_t slab_total_malloced(const struct slab *s) {
    return atomic_load_explicit(&s->malloced, memory_order_relaxed);
}
