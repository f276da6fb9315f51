/*
 * evict_arc.c -- ARC, the Adaptive Replacement Cache (Megiddo & Modha,
 * FAST'03), following libCacheSim's ARC.c.
 *
 *        B1 (ghost) <-- T1 (seen once, LRU) | T2 (seen twice+, LRU) --> B2 (ghost)
 *                       <------ p ------>   |
 *
 * T1 holds items seen once recently, T2 items seen at least twice; B1 and
 * B2 remember the keys evicted from each.  p is the target size of T1,
 * 0 <= p <= C.  A hit in T1 or T2 moves the item to T2's MRU end.  A miss
 * in B1 grows p by max(|B2|/|B1|, 1), a miss in B2 shrinks it by
 * max(|B1|/|B2|, 1) (integer division, as libCacheSim), and the item enters
 * T2.  Any other miss enters T1, after trimming the directory: when
 * |T1|+|B1| = C, drop B1's LRU key if |T1| < C, else evict T1's LRU
 * without a ghost; otherwise, when |T1|+|T2|+|B1|+|B2| = 2C, drop B2's LRU
 * key.  REPLACE evicts T1's LRU into B1 when |T1| > 0 and (|T1| > p, or
 * |T1| = p and the missed key was in B2), else T2's LRU into B2.
 *
 * Fitting the engine's seam: the engine evicts (victim()) before it links
 * the new item, and victim() does not see the key being inserted.  So:
 *   - victim() decides as for a plain miss (REPLACE with the current p and
 *     "key not in B2"), and notes the directory trim a plain miss needs;
 *   - link() looks the key up in B1/B2.  On a ghost hit it adapts p (with
 *     the ghost sizes as they were before this eviction's ghost entry, as
 *     libCacheSim computes them) and drops the noted trim, as a ghost hit
 *     does not trim; on a plain miss it applies the trim.
 * The eviction that precedes a ghost hit therefore uses p from before that
 * hit's adaptation (one step late) and ignores the |T1| = p tie rule; the
 * cache size C is the number of items linked at the last eviction.
 *
 * pbits: bit 0 = in T2.
 */
#include <stdlib.h>

#include "storage/evict.h"
#include "storage/evict_list.h"
#include "storage/ghost.h"
#include "storage/ht.h"

#define ARC_T2 0x01

enum arc_trim { TRIM_NONE, TRIM_B1, TRIM_B2 };

struct evict_queue {
    struct evict_list t1, t2;
    struct ghost *b1, *b2;
    uint64_t cap;               /* C: items at the last eviction; 0 before the first */
    uint64_t p;                 /* target size of T1 */
    struct item *cand;          /* last victim handed out */
    struct ghost *cand_ghost;   /* where its key goes when evicted, or NULL */
    struct ghost *ghosted;      /* where this round's eviction put its key */
    enum arc_trim trim;         /* trim owed if the next link is a plain miss */
};

static struct evict_queue *arc_create(void) {
    struct evict_queue *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return NULL;
    q->b1 = ghost_create();
    q->b2 = ghost_create();
    if (q->b1 == NULL || q->b2 == NULL) {
        ghost_destroy(&q->b1);
        ghost_destroy(&q->b2);
        free(q);
        return NULL;
    }
    return q;
}

static void arc_destroy(struct evict_queue *q) {
    ghost_destroy(&q->b1);
    ghost_destroy(&q->b2);
    free(q);
}

static uint64_t key_hash(const struct item *it) { return ht_hash(it->data, it->nkey); }

/* A ghost's size before this round's eviction added to it. */
static uint64_t before(const struct evict_queue *q, const struct ghost *g) {
    return ghost_count(g) - (q->ghosted == g);
}

/*
 * Keeps the directory within ARC's bounds even when the class shrinks or
 * items leave by delete: |T1|+|B1| <= C and |T1|+|T2|+|B1|+|B2| <= 2C.
 */
static void bound(struct evict_queue *q) {
    uint64_t t1 = q->t1.n, t2 = q->t2.n;
    while (ghost_count(q->b1) > 0 && t1 + ghost_count(q->b1) > q->cap)
        ghost_drop_oldest(q->b1);
    while (ghost_count(q->b2) > 0 &&
           t1 + t2 + ghost_count(q->b1) + ghost_count(q->b2) > 2 * q->cap)
        ghost_drop_oldest(q->b2);
}

static void arc_link(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    if (q->cand == it)
        q->cand = NULL;
    uint64_t h = q->cap != 0 ? key_hash(it) : 0;
    if (q->cap != 0 && ghost_contains(q->b1, h)) {
        uint64_t b1 = before(q, q->b1), b2 = before(q, q->b2);
        uint64_t d = b1 != 0 && b2 / b1 > 1 ? b2 / b1 : 1;
        q->p = q->p + d < q->cap ? q->p + d : q->cap;
        ghost_remove(q->b1, h);
        evict_bits_update(it, ARC_T2, ARC_T2);
        evict_list_push_head(&q->t2, it);
    } else if (q->cap != 0 && ghost_contains(q->b2, h)) {
        uint64_t b1 = before(q, q->b1), b2 = before(q, q->b2);
        uint64_t d = b2 != 0 && b1 / b2 > 1 ? b1 / b2 : 1;
        q->p = q->p > d ? q->p - d : 0;
        ghost_remove(q->b2, h);
        evict_bits_update(it, ARC_T2, ARC_T2);
        evict_list_push_head(&q->t2, it);
    } else {
        if (q->trim == TRIM_B1)
            ghost_drop_oldest(q->b1);
        else if (q->trim == TRIM_B2)
            ghost_drop_oldest(q->b2);
        evict_bits_update(it, ARC_T2, 0);
        evict_list_push_head(&q->t1, it);
    }
    q->trim = TRIM_NONE;
    q->ghosted = NULL;
    if (q->cap != 0)
        bound(q);
}

static void arc_unlink(struct evict_queue *q, struct item *it) {
    if (it == q->cand) {
        if (q->cand_ghost != NULL && ghost_add(q->cand_ghost, key_hash(it)))
            q->ghosted = q->cand_ghost;
        q->cand = NULL;
    }
    evict_list_remove(evict_bits(it) & ARC_T2 ? &q->t2 : &q->t1, it);
}

static bool arc_hit(struct item *it, uint32_t now) {
    (void)it, (void)now;
    return true;
}

static void arc_bump(struct evict_queue *q, struct item *it, uint32_t now) {
    (void)now;
    if (evict_bits(it) & ARC_T2) {
        evict_list_move_head(&q->t2, it);
    } else {
        evict_list_transfer(&q->t1, &q->t2, it);
        evict_bits_update(it, ARC_T2, ARC_T2);
    }
}

/* REPLACE for a key not in B2: T1's LRU into B1, or T2's LRU into B2. */
static struct item *replace(struct evict_queue *q) {
    if (q->t1.n > 0 && (q->t1.n > q->p || q->t2.n == 0)) {
        q->cand_ghost = q->b1;
        return q->t1.tail;
    }
    q->cand_ghost = q->b2;
    return q->t2.tail;
}

/*
 * One eviction, decided as for a plain miss (see the top of the file); the
 * ghost trim it implies waits for link(), which knows whether the new key
 * was a ghost.  A candidate the engine could not take is followed by the
 * next item toward the MRU end of the same list.
 */
static struct item *arc_victim(struct evict_queue *q, struct item *prev) {
    if (prev != NULL) {
        q->cand = prev->prev;
        return q->cand;
    }
    q->cap = q->t1.n + q->t2.n;
    uint64_t t1 = q->t1.n, b1 = ghost_count(q->b1), b2 = ghost_count(q->b2);
    q->trim = TRIM_NONE;
    q->ghosted = NULL;
    if (q->cap == 0)
        return NULL;
    if (t1 + b1 + 1 > q->cap) {
        if (t1 < q->cap) {
            q->trim = b1 > 0 ? TRIM_B1 : TRIM_NONE;
            q->cand = replace(q);
        } else {
            q->cand_ghost = NULL;
            q->cand = q->t1.tail;
        }
    } else {
        if (t1 + q->t2.n + b1 + b2 >= 2 * q->cap && b2 > 0)
            q->trim = TRIM_B2;
        q->cand = replace(q);
    }
    return q->cand;
}

static struct item *arc_oldest(struct evict_queue *q) {
    struct item *a = q->t1.tail, *b = q->t2.tail;
    if (a == NULL)
        return b;
    if (b == NULL)
        return a;
    return a->atime <= b->atime ? a : b;
}

const struct evict_policy evict_arc = {
    .name = "arc",
    .create = arc_create,
    .destroy = arc_destroy,
    .link = arc_link,
    .unlink = arc_unlink,
    .hit = arc_hit,
    .bump = arc_bump,
    .victim = arc_victim,
    .oldest = arc_oldest,
};
