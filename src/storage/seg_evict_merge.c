/*
 * seg_evict_merge.c -- Segcache's merge eviction: the oldest SEG_MERGE_N
 * sealed segments become one, keeping the items read since they were
 * written (or last merged) while it has room (seg_move.c).  One segment is
 * set aside at create as the first merge's output; a store of fewer than
 * SEG_MERGE_N + 2 segments (-m 2 with 1 MiB items), or a merge that finds
 * fewer than two segments to take, evicts by FIFO.
 */
#include "storage/seg_int.h"

/*
 * Up to SEG_MERGE_N sealed segments nobody reads or writes, oldest first,
 * detached for a merge; fewer than two: none (the caller evicts instead).
 * Pool lock held.
 */
static unsigned merge_pick_locked(struct seg_store *s, uint32_t *ids) {
    unsigned n = 0;
    for (uint32_t id = s->q[Q_SMALL].head; id != NONE && n < SEG_MERGE_N;
         id = s->segs[id].next) {
        struct seg_meta *m = &s->segs[id];
        if (atomic_load(&m->pins) == 0 && atomic_load(&m->writers) == 0)
            ids[n++] = id;
    }
    if (n < 2)
        return 0;
    for (unsigned i = 0; i < n; i++)
        detach_locked(s, ids[i]);
    return n;
}

/*
 * Segcache's merge: the items of detached segments ids[0..n) go, oldest
 * first, into segment t (seg_relocate(): the ones read since they were
 * written or last merged, and tombstones, while it has room).  A stripe
 * that stays busy ends the merge there, and what was not reached goes
 * back to the FIFO's head.  Then t joins the FIFO's end, the emptied
 * segments come free, and one of them is the next merge's t.  No pool
 * lock is held while items move.
 */
static void merge(struct seg_store *s, const uint32_t *ids, unsigned n, uint32_t t,
                  struct mtx *held) {
    struct mover mv = {.out = {t, NONE}, .q = Q_SMALL, .budget = s->cfg.seg_size};
    atomic_store(&s->segs[t].write_off, 0);
    atomic_store(&s->segs[t].state, ST_CLEARING);   /* not to be walked half written */
    unsigned done = 0;
    while (done < n && seg_relocate(s, ids[done], &mv, held))
        done++;
    pthread_mutex_lock(&s->pool);
    for (unsigned i = n; i-- > done;)
        fifo_push_head_locked(s, ids[i]);
    if (mv.out[0] == NONE) {
        /* t filled up and went to the FIFO (out_room) */
    } else if (atomic_load(&s->segs[t].write_off) > 0) {
        fifo_push_tail_locked(s, t);
    } else {
        s->spare = t;
        atomic_store(&s->segs[t].state, ST_FREE);
    }
    for (unsigned i = 0; i < done; i++) {
        if (s->spare == NONE && atomic_load(&s->segs[ids[i]].pins) == 0) {
            s->spare = ids[i];
            atomic_store(&s->segs[ids[i]].state, ST_FREE);
        } else {
            seg_emptied_locked(s, ids[i]);
        }
    }
    pthread_mutex_unlock(&s->pool);
    seg_mover_count(s, &mv);
    atomic_fetch_add(&s->evicted_segments, done);
    atomic_fetch_add(&s->merges, 1);
}

/* One segment set aside for merges; a store too small to merge evicts by FIFO. */
static bool merge_init(struct seg_store *s) {
    if (s->nseg >= SEG_MERGE_N + 2) {
        s->spare = s->free_head;
        s->free_head = s->segs[s->spare].next;
        s->nfree--;
    }
    return true;
}

/* A merge when a spare segment waits for it and two segments can be had, else FIFO. */
static bool merge_evict(struct seg_store *s, struct mtx *held) {
    if (s->spare != NONE) {
        uint32_t ids[SEG_MERGE_N];
        unsigned n = merge_pick_locked(s, ids);
        if (n != 0) {
            uint32_t t = s->spare;
            s->spare = NONE;
            pthread_mutex_unlock(&s->pool);
            merge(s, ids, n, t, held);
            return true;
        }
    }
    return seg_evict_fifo.evict(s, held);
}

const struct seg_evict seg_evict_merge = {.name = "merge", .init = merge_init,
                                          .evict = merge_evict};
