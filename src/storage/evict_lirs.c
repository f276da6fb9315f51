/*
 * evict_lirs.c -- LIRS, Low Inter-reference Recency Set (Jiang & Zhang,
 * SIGMETRICS'02), with libCacheSim's LIRS.c parameters: hirs_ratio 0.01
 * (the resident HIR share Lhirs = max(1, 1% of C)), stack S capped at 2C
 * entries.
 *
 *   stack S, by recency                               list Q, resident HIR
 *   top [L] [h] [n] [L] [L] [n] [h] [L] bottom        end [h] [h] [h] front --> evicted
 *        L = LIR item   h = resident HIR item   n = non-resident HIR (a key, no item)
 *
 * The class's C resident items are split in two sets: LIR (C - Lhirs
 * items) and resident HIR (Lhirs items, in the FIFO Q; the only ones that
 * are evicted).  S orders by recency every LIR item, the HIR items read
 * since the bottom LIR was last read, and the keys of HIR items evicted
 * since then (non-resident entries).  Its bottom is always an LIR item:
 * "pruning" pops the HIR entries under the lowest LIR whenever that one
 * moves or leaves.  Per request:
 *   - hit on LIR: to the top of S, prune;
 *   - hit on resident HIR in S: leaves Q, becomes LIR at the top of S;
 *     when that makes more than C - Lhirs LIR items, the bottom LIR is
 *     demoted: out of S, to the end of Q as resident HIR; prune;
 *   - hit on resident HIR not in S: to the top of S and the end of Q, it
 *     stays HIR;
 *   - miss: Q's front is evicted (when it is in S it stays there as a
 *     non-resident entry).  A key found non-resident in S becomes LIR at
 *     the top of S (demoting the bottom LIR as above); any other key
 *     enters as resident HIR at the top of S and the end of Q (as LIR
 *     while the LIR set is under its share: cold start, deletes);
 *   - S holds at most 2C entries: past that, the non-resident entries
 *     evicted earliest are dropped (libCacheSim's limitStack).
 * One departure from libCacheSim, following the paper and eviction.md:
 * libCacheSim's hit on a resident HIR not in S also demotes the bottom
 * LIR, which evicts Q's front on a hit (Q is full) and leaves the LIR set
 * one short, so the next new key enters as LIR; here that hit only moves.
 *
 * Fitting the engine's seam:
 *   - C is the number of items linked (LIR + Q) at each victim(NULL), as
 *     S3-FIFO reads it; Lhirs = max(1, (uint64_t)(0.01 * C)).
 *   - Cold start.  C is unknown until the first eviction, so until then
 *     every new item is LIR at the top of S.  The first victim(NULL)
 *     splits: the LIR items nearest the top of S, as many as exceed
 *     C - Lhirs, turn into resident HIR (they stay in S) and join Q,
 *     oldest at its front.  When no item was read twice during the fill,
 *     that is libCacheSim's state (its first C - Lhirs distinct keys are
 *     LIR, the others resident HIR in S and Q); an item read during the
 *     fill moves to the top of S and may so be among the HIR ones, where
 *     libCacheSim keeps an LIR an LIR.  Later, when C shrinks, victim(NULL)
 *     demotes bottom LIRs until the LIR set fits its share again; when C
 *     grows (or LIR items are deleted), new keys enter as LIR until it is
 *     full.
 *   - The engine evicts before it links the new item, and victim() does
 *     not see its key.  LIRS's eviction does not depend on that key (it
 *     is always Q's front), so victim() returns Q's front and link() does
 *     the rest of the miss: a non-resident entry becomes LIR, with the
 *     demotion; that order is libCacheSim's too.
 *   - unlink() of the candidate victim() last handed out is an eviction
 *     (a dead candidate the engine reclaims counts as one): an item in S
 *     leaves a non-resident entry there.  Every other unlink
 *     (delete, replace, expiry) leaves nothing: the item goes from S and
 *     Q; an LIR departure prunes.  link() forgets a remembered candidate
 *     whose memory came back.
 *   - victim(q, prev) offers the next item toward Q's end; past it, the
 *     LIR items from the bottom of S up (every resident HIR was busy).  An
 *     LIR item evicted so leaves a non-resident entry like an HIR one.
 *     Finding the next LIR skips HIR entries in S, so that fallback is not
 *     O(1); it is taken only when all of Q is referenced or locked.
 *   - hit() always asks for bump(): every hit moves something in S.
 *
 * Memory.  S entries live in a side table keyed by ht_hash() of the key,
 * since an item has a single pair of links and a resident HIR item can be
 * in S and Q at once: an array of 32-byte nodes (hash, item or NULL when
 * non-resident, S links up/down, links of the FIFO of non-resident entries
 * for the cap) found through an open-addressing index of 4-byte slots,
 * twice as many slots as nodes (load at most 1/2; linear probing, deletion
 * by backward shift, as ghost.c).  It grows by doubling, amortised, in
 * link() and bump(), never shrinks, and is not counted in the engine's -m
 * limit; when growth fails the policy forgets: an item that gets no node
 * is a resident HIR outside S.  Every LIR item has a node and S is capped
 * at 2C, so the table holds between about C and 2C nodes, 40 bytes each
 * with their index: 40 to 80 bytes per cached item in use, and up to
 * twice that allocated, as the node count is a power of two (measured on
 * zipf traces: S at 1.7C to 2C, 82 to 131 bytes allocated per item).  In
 * the item: prev/next (Q's links for a
 * resident HIR; an LIR item is on no list, and its `next` holds the index
 * of its S node, which spares a hash per LIR hit) and 2 bits of pbits.
 * Two keys with the same 64-bit hash share an entry: a second resident one
 * gets no node (it stays HIR), a non-resident one reads as the other key.
 *
 * pbits: bit 0 = LIR, bit 1 = has an S node.
 */
#include <stddef.h>
#include <stdlib.h>

#include "storage/evict.h"
#include "storage/evict_list.h"
#include "storage/ht.h"
#include "storage/slotindex.h"

#define LIRS_LIR 0x01
#define LIRS_INS 0x02
#define LIRS_HIRS_RATIO 0.01
#define LIRS_STACK_FACTOR 2

#define NIL SLOT_NIL
#define NODES_MIN 64

struct lirs_node {
    uint64_t h;                 /* ht_hash() of the key; first: slotindex.h reads it */
    struct item *it;            /* NULL: a non-resident HIR entry */
    uint32_t up, down;          /* S: toward the top, toward the bottom */
    uint32_t newer, older;      /* non-resident FIFO; free nodes chain by older */
};

_Static_assert(offsetof(struct lirs_node, h) == 0, "slotindex.h finds the hash first");

struct evict_queue {
    struct evict_list q;        /* Q: head = end (newest), tail = front */
    struct lirs_node *node;
    uint32_t *slot;             /* index: node numbers, NIL when empty */
    uint32_t mask;              /* slots - 1 */
    uint32_t ncap;              /* nodes allocated */
    uint32_t nused;             /* nodes in use = entries in S */
    uint32_t free;              /* first free node */
    uint32_t top, bottom;       /* S */
    uint32_t nr_newest, nr_oldest;  /* non-resident entries, by eviction */
    uint64_t lirs;              /* LIR items */
    uint64_t cap;               /* C at the last eviction; 0 before the first */
    struct item *cand;          /* last victim handed out */
};

static struct evict_queue *lirs_create(void) {
    struct evict_queue *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return NULL;
    q->free = q->top = q->bottom = q->nr_newest = q->nr_oldest = NIL;
    return q;
}

static void lirs_destroy(struct evict_queue *q) {
    free(q->node);
    free(q->slot);
    free(q);
}

static uint64_t key_hash(const struct item *it) { return ht_hash(it->data, it->nkey); }

/* ---- the side table: nodes found by hash ---- */

/* The slot holding h, or the empty slot where its probe ends (slotindex.h). */
static uint32_t find(const struct evict_queue *q, uint64_t h) {
    return slot_find(q->slot, q->mask, q->node, sizeof(struct lirs_node), h);
}

static void unslot(struct evict_queue *q, uint32_t i) {
    slot_delete(q->slot, q->mask, q->node, sizeof(struct lirs_node), i);
}

/*
 * Doubles the nodes and rebuilds the index at twice the node count.  Every
 * node in use is in S, so walking S finds them all.  On failure nothing
 * changes (a larger node array may be kept; harmless).
 */
static bool grow(struct evict_queue *q) {
    if (q->ncap >= (NIL >> 2))
        return false;
    uint32_t ncap = q->ncap ? q->ncap * 2 : NODES_MIN;
    uint32_t nslots = ncap * 2;
    struct lirs_node *node = realloc(q->node, (size_t)ncap * sizeof(*node));
    if (node == NULL)
        return false;
    q->node = node;
    uint32_t *slot = malloc((size_t)nslots * sizeof(*slot));
    if (slot == NULL)
        return false;
    for (uint32_t i = 0; i < nslots; i++)
        slot[i] = NIL;
    free(q->slot);
    q->slot = slot;
    q->mask = nslots - 1;
    for (uint32_t n = q->top; n != NIL; n = q->node[n].down)
        q->slot[find(q, q->node[n].h)] = n;
    for (uint32_t n = ncap; n-- > q->ncap;) {
        q->node[n].older = q->free;
        q->free = n;
    }
    q->ncap = ncap;
    return true;
}

/* The node of hash h, or NIL. */
static uint32_t node_find(const struct evict_queue *q, uint64_t h) {
    return q->nused > 0 ? q->slot[find(q, h)] : NIL;
}

/*
 * A new node for h (absent) holding it, not yet in S; NIL when memory is
 * short.  The caller puts it in S at once (grow() finds nodes through S).
 */
static uint32_t node_new(struct evict_queue *q, uint64_t h, struct item *it) {
    if (q->free == NIL && !grow(q))
        return NIL;
    uint32_t n = q->free;
    q->free = q->node[n].older;
    q->node[n] = (struct lirs_node){.h = h, .it = it, .up = NIL, .down = NIL,
                                    .newer = NIL, .older = NIL};
    q->slot[find(q, h)] = n;
    q->nused++;
    return n;
}

/* Frees node n (already out of S and of the non-resident FIFO). */
static void node_free(struct evict_queue *q, uint32_t n) {
    unslot(q, find(q, q->node[n].h));
    q->node[n].older = q->free;
    q->free = n;
    q->nused--;
}

/* ---- S and the FIFO of non-resident entries ---- */

static void s_push_top(struct evict_queue *q, uint32_t n) {
    q->node[n].up = NIL;
    q->node[n].down = q->top;
    if (q->top != NIL)
        q->node[q->top].up = n;
    else
        q->bottom = n;
    q->top = n;
}

static void s_remove(struct evict_queue *q, uint32_t n) {
    struct lirs_node *x = &q->node[n];
    if (x->up != NIL)
        q->node[x->up].down = x->down;
    else
        q->top = x->down;
    if (x->down != NIL)
        q->node[x->down].up = x->up;
    else
        q->bottom = x->up;
}

static void s_move_top(struct evict_queue *q, uint32_t n) {
    if (q->top == n)
        return;
    s_remove(q, n);
    s_push_top(q, n);
}

static void nr_push(struct evict_queue *q, uint32_t n) {
    q->node[n].newer = NIL;
    q->node[n].older = q->nr_newest;
    if (q->nr_newest != NIL)
        q->node[q->nr_newest].newer = n;
    else
        q->nr_oldest = n;
    q->nr_newest = n;
}

static void nr_remove(struct evict_queue *q, uint32_t n) {
    struct lirs_node *x = &q->node[n];
    if (x->newer != NIL)
        q->node[x->newer].older = x->older;
    else
        q->nr_newest = x->older;
    if (x->older != NIL)
        q->node[x->older].newer = x->newer;
    else
        q->nr_oldest = x->newer;
}

/* ---- items and their entries ---- */

static bool is_lir(const struct item *it) { return (evict_bits(it) & LIRS_LIR) != 0; }

/* An LIR item is on no list: its next link holds its S node's number. */
static uint32_t lir_node(const struct item *it) { return (uint32_t)(uintptr_t)it->next; }

static void lir_set_node(struct item *it, uint32_t n) {
    it->prev = NULL;
    it->next = (struct item *)(uintptr_t)n;
}

/* The S node of linked item it, or NIL when it is not in S. */
static uint32_t node_of(const struct evict_queue *q, const struct item *it) {
    uint8_t b = evict_bits(it);
    if (b & LIRS_LIR)
        return lir_node(it);
    if (!(b & LIRS_INS))
        return NIL;
    uint32_t n = node_find(q, key_hash(it));
    return n != NIL && q->node[n].it == it ? n : NIL;
}

/* C - Lhirs, the LIR share; unbounded before C is known. */
static uint64_t lir_limit(const struct evict_queue *q) {
    if (q->cap == 0)
        return UINT64_MAX;
    uint64_t hirs = (uint64_t)((double)q->cap * LIRS_HIRS_RATIO);
    if (hirs < 1)
        hirs = 1;
    return q->cap > hirs ? q->cap - hirs : 0;
}

/*
 * Stack pruning: pops HIR entries off the bottom of S until an LIR item
 * is there (or S is empty).  A resident HIR popped stays in Q; a
 * non-resident entry is forgotten.  O(1) amortised: each entry is popped
 * once per push.
 */
static void prune(struct evict_queue *q) {
    while (q->bottom != NIL) {
        uint32_t n = q->bottom;
        struct item *it = q->node[n].it;
        if (it != NULL && is_lir(it))
            return;
        s_remove(q, n);
        if (it == NULL)
            nr_remove(q, n);
        else
            evict_bits_update(it, LIRS_INS, 0);
        node_free(q, n);
    }
}

/* The bottom LIR of S leaves S and goes to the end of Q as resident HIR. */
static void demote_bottom(struct evict_queue *q) {
    prune(q);
    uint32_t n = q->bottom;
    if (n == NIL)
        return;
    struct item *it = q->node[n].it;
    s_remove(q, n);
    node_free(q, n);
    q->lirs--;
    evict_bits_update(it, LIRS_LIR | LIRS_INS, 0);
    evict_list_push_head(&q->q, it);
    prune(q);
}

/*
 * it, resident and on no list, becomes LIR with node n at the top of S;
 * past the LIR share, bottom LIRs are demoted.  With a share of 0 (C = 1)
 * that demotes it too, which is right: then every item is HIR.
 */
static void make_lir(struct evict_queue *q, struct item *it, uint32_t n) {
    q->node[n].it = it;
    s_move_top(q, n);
    evict_bits_update(it, LIRS_LIR | LIRS_INS, LIRS_LIR | LIRS_INS);
    lir_set_node(it, n);
    q->lirs++;
    uint64_t limit = lir_limit(q);
    while (q->lirs > limit && q->bottom != NIL)
        demote_bottom(q);
}

/* libCacheSim's limitStack: at most 2C entries in S, dropping the
 * non-resident ones evicted earliest (never the bottom, which is LIR). */
static void limit_stack(struct evict_queue *q) {
    if (q->cap == 0)
        return;
    while (q->nused > LIRS_STACK_FACTOR * q->cap && q->nr_oldest != NIL) {
        uint32_t n = q->nr_oldest;
        nr_remove(q, n);
        s_remove(q, n);
        node_free(q, n);
    }
}

/* ---- the seam ---- */

/*
 * A miss (the eviction it needed, if any, is done): a key non-resident in
 * S comes back as LIR; a new key enters as LIR while the LIR set is under
 * its share, else as resident HIR at the end of Q and the top of S.
 */
static void lirs_link(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    if (q->cand == it)
        q->cand = NULL;
    uint64_t h = key_hash(it);
    uint32_t n = node_find(q, h);
    if (n != NIL && q->node[n].it == NULL) {
        nr_remove(q, n);
        make_lir(q, it, n);
    } else if (n == NIL && q->lirs < lir_limit(q) && (n = node_new(q, h, it)) != NIL) {
        s_push_top(q, n);
        make_lir(q, it, n);
    } else {
        /* a resident HIR; a node when memory allows and no other resident
         * key holds this hash */
        evict_bits_update(it, LIRS_LIR | LIRS_INS, 0);
        evict_list_push_head(&q->q, it);
        if (n == NIL && (n = node_new(q, h, it)) != NIL) {
            s_push_top(q, n);
            evict_bits_update(it, LIRS_INS, LIRS_INS);
        }
    }
    prune(q);           /* an HIR alone in S (no LIR below it) goes */
    limit_stack(q);
}

/*
 * Any departure.  The candidate victim() handed out is an eviction and
 * leaves a non-resident entry in S when it was there; anything else
 * leaves nothing.
 */
static void lirs_unlink(struct evict_queue *q, struct item *it) {
    bool evicted = it == q->cand;
    if (evicted)
        q->cand = NULL;
    bool lir = is_lir(it);
    uint32_t n = node_of(q, it);
    if (lir) {
        q->lirs--;
        it->prev = it->next = NULL;
    } else {
        evict_list_remove(&q->q, it);
    }
    if (n != NIL) {
        if (evicted) {
            q->node[n].it = NULL;
            nr_push(q, n);
        } else {
            s_remove(q, n);
            node_free(q, n);
        }
    }
    evict_bits_update(it, LIRS_LIR | LIRS_INS, 0);
    if (lir)
        prune(q);
}

static bool lirs_hit(struct item *it, uint32_t now) {
    (void)it, (void)now;
    return true;
}

static void lirs_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    if (is_lir(it)) {
        uint32_t n = lir_node(it);
        bool bottom = q->bottom == n;
        s_move_top(q, n);
        if (bottom)
            prune(q);
        return;
    }
    uint32_t n = node_of(q, it);
    if (n != NIL) {
        evict_list_remove(&q->q, it);
        make_lir(q, it, n);
        return;
    }
    evict_list_move_head(&q->q, it);
    uint64_t h = key_hash(it);
    if (node_find(q, h) == NIL && (n = node_new(q, h, it)) != NIL) {
        s_push_top(q, n);
        evict_bits_update(it, LIRS_INS, LIRS_INS);
    }
    prune(q);
    limit_stack(q);
}

/*
 * The first eviction: every item so far is LIR.  The ones nearest the top
 * of S beyond the LIR share become resident HIR in place, and go to Q
 * oldest first (each older one in front of the newer ones).
 */
static void split(struct evict_queue *q) {
    uint64_t limit = lir_limit(q);
    uint64_t over = q->lirs > limit ? q->lirs - limit : 0;
    for (uint32_t n = q->top; n != NIL && over > 0; n = q->node[n].down) {
        struct item *it = q->node[n].it;
        if (it == NULL || !is_lir(it))
            continue;
        evict_bits_update(it, LIRS_LIR, 0);
        evict_list_push_tail(&q->q, it);
        q->lirs--;
        over--;
    }
    prune(q);
}

/* The first LIR item at or above node n in S, or NULL. */
static struct item *lir_from(const struct evict_queue *q, uint32_t n) {
    for (; n != NIL; n = q->node[n].up) {
        struct item *it = q->node[n].it;
        if (it != NULL && is_lir(it))
            return it;
    }
    return NULL;
}

static struct item *lirs_victim(struct evict_queue *q, struct item *prev) {
    if (prev != NULL) {
        if (is_lir(prev))
            q->cand = lir_from(q, q->node[lir_node(prev)].up);
        else
            q->cand = prev->prev != NULL ? prev->prev : lir_from(q, q->bottom);
        return q->cand;
    }
    uint64_t linked = q->lirs + q->q.n;
    q->cand = NULL;
    if (linked == 0)
        return NULL;
    bool first = q->cap == 0;
    q->cap = linked;
    if (first)
        split(q);
    uint64_t limit = lir_limit(q);
    while (q->lirs > limit && q->bottom != NIL)
        demote_bottom(q);
    q->cand = q->q.tail != NULL ? q->q.tail : lir_from(q, q->bottom);
    return q->cand;
}

static struct item *lirs_oldest(struct evict_queue *q) {
    struct item *a = q->q.tail;
    struct item *b = q->bottom != NIL ? q->node[q->bottom].it : NULL;
    if (a == NULL)
        return b;
    if (b == NULL)
        return a;
    return a->atime <= b->atime ? a : b;
}

const struct evict_policy evict_lirs = {
    .name = "lirs",
    .create = lirs_create,
    .destroy = lirs_destroy,
    .link = lirs_link,
    .unlink = lirs_unlink,
    .hit = lirs_hit,
    .bump = lirs_bump,
    .victim = lirs_victim,
    .oldest = lirs_oldest,
};
