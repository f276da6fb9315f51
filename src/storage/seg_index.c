/*
 * seg_index.c -- the segment engine's hash index (seg_index.h has the
 * layout, the growth rule and the locking).
 *
 *   find(hv):    home = addr(hv), alt = addr(alt_hash(hv))
 *                scan home's bucket and chain, then alt's, for the tag
 *
 *   bucket split (a split bucket s, level L):
 *     entries of s and its chain --rehash--> each goes to s or s + 2^L
 *     (where its home, or its alternate if that is where it was, now is)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "storage/seg_index.h"

#if defined(__SSE2__) && !defined(SEG_INDEX_SCALAR) && !defined(__SANITIZE_THREAD__)
#define SEG_INDEX_SSE2 1
#include <emmintrin.h>
#endif

#define SLOTS 8
#define TAG_SHIFT 52
#define TAG_MASK (~(uint64_t)0 << TAG_SHIFT)
#define CHUNK_BITS 12               /* home buckets: 4096 (256 KiB) a chunk */
#define OCHUNK_BITS 8               /* overflow buckets: 256 (16 KiB) a chunk */
#define LEVEL_MAX 31                /* 2^32 home buckets at most */
#define DIR_MAX ((size_t)1 << (LEVEL_MAX + 1 - CHUNK_BITS))
#define ODIR_MAX ((size_t)1 << (LEVEL_MAX + 1 - OCHUNK_BITS))

struct bucket {
    _Alignas(64) uint64_t slot[SLOTS];
};

struct seg_index {
    struct lock_stripes *locks;
    unsigned lock_power;
    seg_index_rehash_fn rehash;
    void *arg;
    _Atomic uint64_t *seq;          /* a sequence a stripe (seg_index_absent) */
    uint64_t seq_mask;              /* the stripes' */
    _Atomic uint64_t state;         /* level << 32 | split */
    _Atomic uint64_t items;
    struct bucket *_Atomic *dir;    /* home chunks, never moved */
    size_t nchunks;
    pthread_mutex_t step_lock;      /* one splitter at a time */
    uint64_t splits;
    pthread_mutex_t pool_lock;      /* the overflow pool: */
    struct bucket **odir;
    size_t nochunks;
    uint64_t ofree;                 /* free list: index + 1, chained through slot[0] */
    uint64_t oused;
};

static struct bucket *chunk_map(size_t nbuckets) {
    void *p = mmap(NULL, nbuckets * sizeof(struct bucket), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void chunk_unmap(struct bucket *c, size_t nbuckets) {
    if (c != NULL)
        munmap(c, nbuckets * sizeof(struct bucket));
}

static inline uint64_t tag_of(uint64_t hv) {
    uint64_t t = hv >> TAG_SHIFT;
    return (t ? t : 1) << TAG_SHIFT;
}

/* The alternate's hash: bits above the lock stripes flipped by a mask from the tag's bits. */
static inline uint64_t alt_hash(const struct seg_index *ix, uint64_t hv) {
    uint64_t mix = ((hv >> TAG_SHIFT) * 0x9E3779B97F4A7C15ULL) >> 24;
    return hv ^ ((mix | 1) << ix->lock_power);
}

static inline uint64_t addr(uint64_t state, uint64_t h) {
    unsigned level = (unsigned)(state >> 32);
    uint64_t split = state & 0xffffffffu;
    uint64_t a = h & (((uint64_t)1 << level) - 1);
    return a < split ? h & (((uint64_t)1 << (level + 1)) - 1) : a;
}

static inline struct bucket *home(struct seg_index *ix, uint64_t a) {
    struct bucket *c = atomic_load_explicit(&ix->dir[a >> CHUNK_BITS], memory_order_relaxed);
    return &c[a & (((uint64_t)1 << CHUNK_BITS) - 1)];
}

/* Not 0, no tag: v - 1 below ~TAG_MASK (0 wraps to the top). */
static inline bool is_link(uint64_t v) { return v - 1 < ~TAG_MASK; }

/* A slot read with no lock (seg_index_slot_store() writes them). */
static inline uint64_t peek(const uint64_t *slot) {
    return __atomic_load_n(slot, __ATOMIC_RELAXED);
}

/*
 * A stripe's sequence, for seg_index_absent(): odd while an insert or a
 * split puts entries into the stripe's buckets or moves them between
 * buckets; each such change adds 2.  Removing an entry or re-pointing one
 * (move, freq) leaves it alone: neither can make a key that is there look
 * absent.  Only the stripe's holder writes it, so no read-modify-write.
 */
static inline _Atomic uint64_t *seq_of(struct seg_index *ix, uint64_t h) {
    return &ix->seq[h & ix->seq_mask];
}

static inline void change_begin(_Atomic uint64_t *q) {
    atomic_store_explicit(q, atomic_load_explicit(q, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_release);  /* before the slots change */
}

static inline void change_end(_Atomic uint64_t *q) {
    atomic_store_explicit(q, atomic_load_explicit(q, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* Overflow bucket i; the pool's chunks are published under pool_lock before any link to them. */
static inline struct bucket *ovf(struct seg_index *ix, uint64_t i) {
    return &ix->odir[i >> OCHUNK_BITS][i & (((uint64_t)1 << OCHUNK_BITS) - 1)];
}

struct seg_index *seg_index_create(unsigned power, struct lock_stripes *locks,
                                   seg_index_rehash_fn rehash, void *arg) {
    unsigned lp = 0;
    while (((uint64_t)1 << lp) - 1 < locks->mask)
        lp++;
    if (power < lp + 2)
        power = lp + 2;             /* alternates differ from homes only above the lock bits */
    if (power > LEVEL_MAX)
        return NULL;
    struct seg_index *ix = calloc(1, sizeof(*ix));
    if (ix == NULL)
        return NULL;
    ix->locks = locks;
    ix->lock_power = lp;
    ix->rehash = rehash;
    ix->arg = arg;
    pthread_mutex_init(&ix->step_lock, NULL);
    pthread_mutex_init(&ix->pool_lock, NULL);
    ix->seq_mask = locks->mask;
    ix->seq = calloc(locks->mask + 1, sizeof(*ix->seq));
    ix->dir = calloc(DIR_MAX, sizeof(*ix->dir));
    ix->odir = calloc(ODIR_MAX, sizeof(*ix->odir));
    if (ix->seq == NULL || ix->dir == NULL || ix->odir == NULL)
        goto fail;
    size_t nb = (size_t)1 << power;
    for (size_t a = 0; a < nb; a += (size_t)1 << CHUNK_BITS) {
        struct bucket *c = chunk_map((size_t)1 << CHUNK_BITS);
        if (c == NULL)
            goto fail;
        atomic_store_explicit(&ix->dir[ix->nchunks++], c, memory_order_relaxed);
    }
    atomic_init(&ix->state, (uint64_t)power << 32);
    return ix;
fail:
    seg_index_destroy(&ix);
    return NULL;
}

void seg_index_destroy(struct seg_index **ixp) {
    struct seg_index *ix = *ixp;
    if (ix == NULL)
        return;
    for (size_t c = 0; ix->dir && c < ix->nchunks; c++)
        chunk_unmap(atomic_load_explicit(&ix->dir[c], memory_order_relaxed),
                    (size_t)1 << CHUNK_BITS);
    for (size_t c = 0; ix->odir && c < ix->nochunks; c++)
        chunk_unmap(ix->odir[c], (size_t)1 << OCHUNK_BITS);
    free(ix->seq);
    free(ix->dir);
    free(ix->odir);
    pthread_mutex_destroy(&ix->step_lock);
    pthread_mutex_destroy(&ix->pool_lock);
    free(ix);
    *ixp = NULL;
}

/* ---------------------------------------------------------------------- */
/* The overflow pool                                                        */
/* ---------------------------------------------------------------------- */

/* Slots are stored whole, overflow buckets' too: a stale hint may read any of them. */
static void bucket_clear(struct bucket *b) {
    for (int i = 0; i < SLOTS; i++)
        seg_index_slot_store(&b->slot[i], 0);
}

/* A free overflow bucket (zeroed) and its index in *idx; NULL when memory is short. */
static struct bucket *ovf_alloc(struct seg_index *ix, uint64_t *idx) {
    pthread_mutex_lock(&ix->pool_lock);
    if (ix->ofree == 0 && ix->nochunks < ODIR_MAX) {
        struct bucket *c = chunk_map((size_t)1 << OCHUNK_BITS);
        if (c != NULL) {
            uint64_t first = (uint64_t)ix->nochunks << OCHUNK_BITS;
            ix->odir[ix->nochunks++] = c;
            for (uint64_t i = ((uint64_t)1 << OCHUNK_BITS); i-- > 0;) {
                c[i].slot[0] = ix->ofree;
                ix->ofree = first + i + 1;
            }
        }
    }
    struct bucket *b = NULL;
    if (ix->ofree != 0) {
        *idx = ix->ofree - 1;
        b = ovf(ix, *idx);
        ix->ofree = b->slot[0];
        seg_index_slot_store(&b->slot[0], 0);
        ix->oused++;
    }
    pthread_mutex_unlock(&ix->pool_lock);
    return b;
}

static void ovf_free(struct seg_index *ix, uint64_t idx) {
    pthread_mutex_lock(&ix->pool_lock);
    struct bucket *b = ovf(ix, idx);
    bucket_clear(b);
    seg_index_slot_store(&b->slot[0], ix->ofree);
    ix->ofree = idx + 1;
    ix->oused--;
    pthread_mutex_unlock(&ix->pool_lock);
}

/* ---------------------------------------------------------------------- */
/* Buckets                                                                  */
/* ---------------------------------------------------------------------- */

/*
 * The slots of b whose tag is tag, as a mask: slot k is bit k << HIT_SHIFT
 * (take them lowest first with ctz).  With SSE2 the tags all lie in the
 * slots' high 32-bit halves: two shuffles gather the eight halves into two
 * registers, each compared at once, and a pack makes one byte pair a slot:
 * a miss's two buckets cost about 25 instructions instead of 90.
 * -DSEG_INDEX_SCALAR builds the plain loop instead (to test it), as does
 * ThreadSanitizer (it sees its loads: atomic, as the unlocked read-ahead's
 * must be).
 */
#ifdef SEG_INDEX_SSE2
#define HIT_SHIFT 1
static inline __m128i high_halves(const float *f) {
    return _mm_castps_si128(_mm_shuffle_ps(_mm_load_ps(f), _mm_load_ps(f + 4),
                                           _MM_SHUFFLE(3, 1, 3, 1)));
}

static inline unsigned tag_hits(const struct bucket *b, uint64_t tag) {
    const __m128i m = _mm_set1_epi32((int)(TAG_MASK >> 32)), t = _mm_set1_epi32((int)(tag >> 32));
    const float *f = (const float *)b->slot;
    __m128i e0 = _mm_cmpeq_epi32(_mm_and_si128(high_halves(f), m), t);
    __m128i e1 = _mm_cmpeq_epi32(_mm_and_si128(high_halves(f + 8), m), t);
    return (unsigned)_mm_movemask_epi8(_mm_packs_epi32(e0, e1));
}
#else
#define HIT_SHIFT 0
static inline unsigned tag_hits(const struct bucket *b, uint64_t tag) {
    unsigned h = 0;
    for (int k = 0; k < SLOTS; k++)
        h |= (unsigned)((peek(&b->slot[k]) & TAG_MASK) == tag) << k;
    return h;
}
#endif

static uint64_t *scan(struct seg_index *ix, struct bucket *b, uint64_t tag,
                      seg_index_match_fn match, void *arg) {
    for (;;) {
        for (unsigned h = tag_hits(b, tag); h != 0; h &= h - 1) {
            uint64_t *s = &b->slot[__builtin_ctz(h) >> HIT_SHIFT];
            uint64_t v = *s;
            if ((v & TAG_MASK) == tag && match(arg, v & SEG_LOC_MASK))
                return s;
        }
        uint64_t last = b->slot[SLOTS - 1];
        if (!is_link(last))
            return NULL;
        b = ovf(ix, last - 1);
    }
}

uint64_t *seg_index_find_locked(struct seg_index *ix, uint64_t hv, seg_index_match_fn match,
                                void *arg) {
    uint64_t st = atomic_load_explicit(&ix->state, memory_order_acquire);
    uint64_t tag = tag_of(hv);
    uint64_t a1 = addr(st, hv), a2 = addr(st, alt_hash(ix, hv));
    uint64_t *s = scan(ix, home(ix, a1), tag, match, arg);
    return (s != NULL || a2 == a1) ? s : scan(ix, home(ix, a2), tag, match, arg);
}

/*
 * Read-ahead, holding no lock: loads both buckets of each key, then gives
 * in loc[i] the location of the first slot of its home bucket whose tag
 * matches (SEG_LOC_MASK + 1: none), for the caller to load the item too.
 * A bucket split or changed meanwhile only makes the guess useless: home
 * chunks never move and slots are read whole (writers store them as
 * relaxed atomics under their stripes; the SSE2 loads read each aligned
 * half whole too).
 *
 * Returns the keys that look absent, bit i for hv[i]: neither head bucket
 * holds its tag or a chain, and seq[i], its stripe's sequence, read before
 * the buckets (and before the split position, so that a split it saw
 * finished is in the addresses used), was even.
 */
uint64_t seg_index_prefetch(struct seg_index *ix, const uint64_t *hv, unsigned n, uint64_t *loc,
                            uint64_t **slot, uint64_t *seq) {
    struct bucket *b[2][SEG_INDEX_PREFETCH_MAX];
    uint64_t absent = 0;
    if (n > SEG_INDEX_PREFETCH_MAX)
        n = SEG_INDEX_PREFETCH_MAX;
    for (unsigned i = 0; i < n; i++)
        seq[i] = atomic_load_explicit(seq_of(ix, hv[i]), memory_order_acquire);
    uint64_t st = atomic_load_explicit(&ix->state, memory_order_acquire);
    for (unsigned i = 0; i < n; i++) {
        b[0][i] = home(ix, addr(st, hv[i]));
        b[1][i] = home(ix, addr(st, alt_hash(ix, hv[i])));
        __builtin_prefetch(b[0][i]);
        __builtin_prefetch(b[1][i]);
    }
    /* the first tag match in home, else in the alternate (inserts fill either) */
    for (unsigned i = 0; i < n; i++) {
        uint64_t tag = tag_of(hv[i]);
        struct bucket *in = b[0][i];
        unsigned h = tag_hits(in, tag);
        if (h == 0)
            h = tag_hits(in = b[1][i], tag);
        if (h != 0) {
            slot[i] = &in->slot[__builtin_ctz(h) >> HIT_SHIFT];
            loc[i] = peek(slot[i]) & SEG_LOC_MASK;
        } else {
            slot[i] = NULL;
            loc[i] = SEG_LOC_MASK + 1;
            /* (a chain is not read here) */
            absent |= (uint64_t)(!is_link(peek(&b[0][i]->slot[SLOTS - 1])) &
                                 !is_link(peek(&b[1][i]->slot[SLOTS - 1])) &
                                 ((seq[i] & 1) == 0)) << i;
        }
    }
    return absent;
}

bool seg_index_absent(struct seg_index *ix, uint64_t hv, uint64_t seq) {
    atomic_thread_fence(memory_order_acquire);  /* the buckets were read before */
    return atomic_load_explicit(seq_of(ix, hv), memory_order_relaxed) == seq;
}

uint64_t *seg_index_check_locked(uint64_t *hint, uint64_t hv, seg_index_match_fn match,
                                 void *arg) {
    uint64_t v = *hint;
    return (v & TAG_MASK) == tag_of(hv) && match(arg, v & SEG_LOC_MASK) ? hint : NULL;
}

/*
 * Slots never move and stay mapped (home chunks and overflow chunks are
 * kept until the index is destroyed), so a stale hint is safe to read.  A
 * location is in the index once at most, so a slot holding loc is loc's
 * entry; the tag is checked too (a link has none), which also keeps an
 * overflow bucket since handed to another stripe's chain from passing.
 */
uint64_t *seg_index_still_locked(uint64_t *hint, uint64_t hv, uint64_t loc) {
    if (hint == NULL)
        return NULL;
    uint64_t v = peek(hint);
    return (v & TAG_MASK) == tag_of(hv) && (v & SEG_LOC_MASK) == loc ? hint : NULL;
}

static int free_slots(const struct bucket *b) {
    int n = 0;
    for (int i = 0; i < SLOTS; i++)
        n += b->slot[i] == 0;
    return n;
}

static bool place(struct bucket *b, uint64_t v) {
    for (int i = 0; i < SLOTS; i++) {
        if (b->slot[i] == 0) {
            seg_index_slot_store(&b->slot[i], v);
            return true;
        }
    }
    return false;
}

/*
 * Spare overflow buckets (their indices) a split holds, so that it never
 * fails half done: the old chain's k buckets and one more.  A bucket with
 * k of them held at most 7k + 8 entries; two heads with c overflow buckets
 * each hold 8 + 7c, so two buckets need at most k + 1 between them.
 */
struct reserve {
    uint64_t b[64];
    int n;
};

/*
 * Puts v in b's chain: the first free slot on it, else a new overflow
 * bucket at its end (the last slot's item moves there, the slot becomes
 * the link).  false when no overflow bucket could be had.
 */
static bool chain_place(struct seg_index *ix, struct bucket *b, uint64_t v, struct reserve *r) {
    for (;;) {
        if (place(b, v))
            return true;
        uint64_t last = b->slot[SLOTS - 1];
        if (!is_link(last))
            break;
        b = ovf(ix, last - 1);
    }
    uint64_t idx;
    struct bucket *nb;
    if (r != NULL && r->n > 0)
        nb = ovf(ix, idx = r->b[--r->n]);
    else if ((nb = ovf_alloc(ix, &idx)) == NULL)
        return false;
    seg_index_slot_store(&nb->slot[0], b->slot[SLOTS - 1]);
    seg_index_slot_store(&nb->slot[1], v);
    seg_index_slot_store(&b->slot[SLOTS - 1], idx + 1);
    return true;
}

/*
 * Both of a key's buckets are full: moves one of their entries to its own
 * other bucket when that has room (one cuckoo step; the entry's hash is
 * read again, a rare path) and puts v in the slot it left.  Entries of
 * these buckets share the key's stripe, so the move is under the lock held.
 */
static bool kick(struct seg_index *ix, uint64_t st, const uint64_t a[2], uint64_t v) {
    for (int j = 0; j < 2; j++) {
        struct bucket *b = home(ix, a[j]);
        for (int i = 0; i < SLOTS; i++) {
            uint64_t e = b->slot[i];
            if (is_link(e))
                continue;
            uint64_t hv = ix->rehash(ix->arg, e & SEG_LOC_MASK);
            uint64_t h1 = addr(st, hv), h2 = addr(st, alt_hash(ix, hv));
            uint64_t other = h1 == a[j] ? h2 : h1;
            if (other != a[j] && place(home(ix, other), e)) {
                seg_index_slot_store(&b->slot[i], v);
                return true;
            }
        }
        if (a[1] == a[0])
            break;
    }
    return false;
}

bool seg_index_insert_locked(struct seg_index *ix, uint64_t hv, uint64_t loc) {
    uint64_t st = atomic_load_explicit(&ix->state, memory_order_acquire);
    uint64_t v = tag_of(hv) | (loc & SEG_LOC_MASK);
    uint64_t a[2] = {addr(st, hv), addr(st, alt_hash(ix, hv))};
    struct bucket *b1 = home(ix, a[0]), *b2 = home(ix, a[1]);
    int f1 = free_slots(b1), f2 = a[1] != a[0] ? free_slots(b2) : 0;
    _Atomic uint64_t *q = seq_of(ix, hv);
    change_begin(q);
    bool ok = f2 > f1 ? place(b2, v)
              : f1 > 0 ? place(b1, v)
                       : kick(ix, st, a, v) || chain_place(ix, b1, v, NULL);
    change_end(q);
    if (ok)
        atomic_fetch_add_explicit(&ix->items, 1, memory_order_relaxed);
    return ok;
}

void seg_index_remove_locked(struct seg_index *ix, uint64_t *slot) {
    seg_index_slot_store(slot, 0);
    atomic_fetch_sub_explicit(&ix->items, 1, memory_order_relaxed);
}

/* ---------------------------------------------------------------------- */
/* Growth                                                                   */
/* ---------------------------------------------------------------------- */

/* Takes the entries of bucket b and its chain into out (grown as needed); frees the chain into r. */
static bool take_all(struct seg_index *ix, struct bucket *b, uint64_t **out, size_t *n,
                     size_t *cap, struct reserve *r) {
    struct bucket *cur = b;
    uint64_t cur_idx = 0;
    for (;;) {
        uint64_t last = cur->slot[SLOTS - 1];
        for (int i = 0; i < SLOTS; i++) {
            uint64_t v = cur->slot[i];
            if (v == 0 || is_link(v))
                continue;
            if (*n == *cap) {
                size_t c = *cap ? *cap * 2 : 64;
                uint64_t *p = realloc(*out, c * sizeof(*p));
                if (p == NULL)
                    return false;
                *out = p;
                *cap = c;
            }
            (*out)[(*n)++] = v;
        }
        if (cur != b && r->n < (int)(sizeof(r->b) / sizeof(r->b[0])) - 1)  /* room for the spare */
            r->b[r->n++] = cur_idx; /* emptied below, reused by the split */
        else if (cur != b)
            return false;           /* a chain past 64 buckets: not split */
        if (!is_link(last))
            return true;
        cur_idx = last - 1;
        cur = ovf(ix, cur_idx);
    }
}

/* Splits bucket `split`; false (nothing changed) when memory is short. */
static bool split_one(struct seg_index *ix) {
    uint64_t st = atomic_load_explicit(&ix->state, memory_order_relaxed);
    unsigned level = (unsigned)(st >> 32);
    uint64_t s = st & 0xffffffffu, t = s + ((uint64_t)1 << level);
    if (level + 1 > LEVEL_MAX)
        return false;
    if ((t >> CHUNK_BITS) >= ix->nchunks) {
        struct bucket *c = chunk_map((size_t)1 << CHUNK_BITS);
        if (c == NULL)
            return false;
        atomic_store_explicit(&ix->dir[ix->nchunks++], c, memory_order_release);
    }
    uint64_t nst = s + 1 == ((uint64_t)1 << level) ? (uint64_t)(level + 1) << 32
                                                   : ((uint64_t)level << 32) | (s + 1);
    struct mtx *m = lock_of(ix->locks, s);
    _Atomic uint64_t *q = seq_of(ix, s);
    mtx_lock(m);
    struct reserve r = {.n = 0};
    uint64_t *ent = NULL;
    size_t n = 0, cap = 0;
    struct bucket *bs = home(ix, s), *bt = home(ix, t);
    uint64_t spare;                 /* two buckets may need one more than one did */
    bool got = ovf_alloc(ix, &spare) != NULL;
    if (!got || !take_all(ix, bs, &ent, &n, &cap, &r)) {
        mtx_unlock(m);
        if (got)
            ovf_free(ix, spare);
        free(ent);
        return false;               /* the chain is as it was: take_all only read it */
    }
    r.b[r.n++] = spare;
    change_begin(q);
    for (int i = 0; i < r.n; i++)
        bucket_clear(ovf(ix, r.b[i]));
    bucket_clear(bs);
    for (size_t i = 0; i < n; i++) {
        uint64_t hv = ix->rehash(ix->arg, ent[i] & SEG_LOC_MASK);
        /* where it was is where its home was, else its alternate */
        uint64_t h = addr(st, hv) == s ? hv : alt_hash(ix, hv);
        uint64_t a = addr(nst, h);
        if (!chain_place(ix, a == s ? bs : bt, ent[i], &r))
            abort();                /* the reserve holds enough: a bug */
    }
    atomic_store_explicit(&ix->state, nst, memory_order_release);
    change_end(q);
    mtx_unlock(m);
    while (r.n > 0)
        ovf_free(ix, r.b[--r.n]);
    free(ent);
    ix->splits++;
    return true;
}

unsigned seg_index_step(struct seg_index *ix, unsigned budget) {
    unsigned done = 0;
    pthread_mutex_lock(&ix->step_lock);
    while (done < budget) {
        uint64_t st = atomic_load_explicit(&ix->state, memory_order_relaxed);
        uint64_t nb = ((uint64_t)1 << (st >> 32)) + (st & 0xffffffffu);
        uint64_t items = atomic_load_explicit(&ix->items, memory_order_relaxed);
        if (items * 8 <= nb * SLOTS * 7 || !split_one(ix))
            break;
        done++;
    }
    pthread_mutex_unlock(&ix->step_lock);
    return done;
}

void seg_index_stats(struct seg_index *ix, struct seg_index_stats *out) {
    pthread_mutex_lock(&ix->step_lock);
    uint64_t st = atomic_load_explicit(&ix->state, memory_order_relaxed);
    out->items = atomic_load_explicit(&ix->items, memory_order_relaxed);
    out->buckets = ((uint64_t)1 << (st >> 32)) + (st & 0xffffffffu);
    out->splits = ix->splits;
    pthread_mutex_lock(&ix->pool_lock);
    out->overflow = ix->oused;
    out->bytes = out->buckets * sizeof(struct bucket) +
                 ix->nochunks * ((size_t)1 << OCHUNK_BITS) * sizeof(struct bucket) +
                 (ix->nchunks + ix->nochunks) * sizeof(void *);
    pthread_mutex_unlock(&ix->pool_lock);
    pthread_mutex_unlock(&ix->step_lock);
}
