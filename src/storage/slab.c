#include "storage/slab.h"

#include "storage/lock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

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
    char **pages;               /* every page of this class, for destroy */
    uint64_t npages, cap;
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
 * class.
 */
static bool page_reserve(struct slab *s, const struct slab_class *c) {
    uint64_t page = s->cfg.page_size;
    uint64_t limit = atomic_load_explicit(&s->limit, memory_order_relaxed);
    uint64_t cur = atomic_load_explicit(&s->malloced, memory_order_relaxed);
    for (;;) {
        if (limit && cur + page > limit && c->npages > 0)
            return false;
        if (atomic_compare_exchange_weak_explicit(&s->malloced, &cur, cur + page,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
            return true;
    }
}

/* Takes a new page for class c (lock held); the page is carved lazily. */
static bool page_new_locked(struct slab *s, struct slab_class *c) {
    if (!page_reserve(s, c))
        return false;
    if (c->npages == c->cap) {
        uint64_t cap = c->cap ? c->cap * 2 : 16;
        char **pages = realloc(c->pages, cap * sizeof(*pages));
        if (pages == NULL)
            goto fail;
        c->pages = pages;
        c->cap = cap;
    }
    char *page = malloc(s->cfg.page_size);
    if (page == NULL)
        goto fail;
    POISON(page, s->cfg.page_size);
    c->pages[c->npages++] = page;
    c->end = page;
    c->nend = c->perpage;
    return true;
fail:
    atomic_fetch_sub_explicit(&s->malloced, s->cfg.page_size, memory_order_relaxed);
    return false;
}

void *slab_alloc(struct slab *s, unsigned id) {
    struct slab_class *c = &s->cls[id];
    void *p = NULL;
    mtx_lock(&c->lock);
    if (c->free != NULL) {
        struct free_chunk *f = c->free;
        UNPOISON(f, c->size);
        c->free = f->next;
        c->nfree--;
        p = f;
    } else if (c->nend > 0 || page_new_locked(s, c)) {
        p = c->end;
        UNPOISON(p, c->size);
        c->end += c->size;
        c->nend--;
    }
    mtx_unlock(&c->lock);
    return p;
}

void slab_free(struct slab *s, unsigned id, void *chunk) {
    struct slab_class *c = &s->cls[id];
    struct free_chunk *f = chunk;
    mtx_lock(&c->lock);
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

void slab_set_limit(struct slab *s, uint64_t bytes) {
    atomic_store_explicit(&s->limit, bytes, memory_order_relaxed);
}

uint64_t slab_limit(const struct slab *s) {
    return atomic_load_explicit(&s->limit, memory_order_relaxed);
}

uint64_t slab_total_malloced(const struct slab *s) {
    return atomic_load_explicit(&s->malloced, memory_order_relaxed);
}
