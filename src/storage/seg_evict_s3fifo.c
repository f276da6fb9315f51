/*
 * seg_evict_s3fifo.c -- S3-FIFO (Yang et al., SOSP'23) a segment at a
 * time: a small and a main FIFO of segments and a ghost of keys (seg.c's
 * seg_write() marks a store of a ghost key).  A store of fewer than
 * SEG_S3FIFO_MIN segments, or one whose queues give no victim, evicts by
 * FIFO.
 */
#include "storage/ghost.h"
#include "storage/seg_int.h"

/*
 * S3-FIFO (Yang et al., SOSP'23) a segment at a time.  New items go to the
 * small queue (the TTL buckets' segments, sealed into Q_SMALL); while it
 * holds small_target segments or more its oldest is evicted: the items
 * read there (or stored while their key was a ghost) move to the main
 * queue's output, the others are evicted and their keys kept in the
 * ghost.  Otherwise the main queue's oldest goes: its items read since
 * they were last moved go back to its end, the others are evicted.  A
 * move keeps at most 7/8 of a segment from the small queue and 1/2 from
 * the main one, so each eviction frees memory whatever was read.  Pool
 * lock held on entry, released.
 */
static bool s3_evict(struct seg_store *s, struct mtx *held) {
    bool small = s->q[Q_SMALL].n >= s->small_target || s->q[Q_MAIN].n == 0;
    uint32_t v = victim_in_locked(s, small ? Q_SMALL : Q_MAIN);
    if (v == NONE) {
        small = !small;
        v = victim_in_locked(s, small ? Q_SMALL : Q_MAIN);
    }
    if (v == NONE) {
        pthread_mutex_unlock(&s->pool);
        return false;
    }
    struct mover mv = {.out = {s->out[0], s->out[1]}, .q = Q_MAIN, .small = small,
                       .budget = small ? s->cfg.seg_size / 8 * 7 : s->cfg.seg_size / 2};
    s->out[0] = s->out[1] = NONE;
    pthread_mutex_unlock(&s->pool);
    uint64_t seen = (uint64_t)atomic_load(&s->segs[v].live_items);
    bool done = seg_relocate(s, v, &mv, held);
    pthread_mutex_lock(&s->pool);
    s->out[0] = mv.out[0];
    s->out[1] = mv.out[1];
    if (!done) {
        fifo_push_head_locked(s, v);
    } else if (s->out[1] == NONE && atomic_load(&s->segs[v].pins) == 0) {
        s->out[1] = v;              /* the next output; started on its first item */
        atomic_store(&s->segs[v].write_off, 0);
        atomic_store(&s->segs[v].state, ST_OPEN);
        if (s->out[0] == NONE) {
            s->out[0] = v;
            s->out[1] = NONE;
        }
    } else {
        seg_emptied_locked(s, v);
    }
    pthread_mutex_unlock(&s->pool);
    if (small) {                    /* the ghost holds about as many keys as the main queue */
        pthread_mutex_lock(&s->ghost_lock);
        ghost_trim(s->ghost, (size_t)(seen + 1) * (s->q[Q_MAIN].n + 1));
        atomic_store(&s->ghost_n, ghost_count(s->ghost));
        pthread_mutex_unlock(&s->ghost_lock);
    }
    seg_mover_count(s, &mv);
    atomic_fetch_add(small ? &s->promoted : &s->reinserted, mv.kept);
    if (done)
        atomic_fetch_add(&s->evicted_segments, 1);
    return true;
}

/*
 * Two outputs for the main queue (what one eviction keeps may spill into
 * the second) and the ghost; a store too small for the queues evicts by
 * FIFO.  false: out of memory.
 */
static bool s3fifo_init(struct seg_store *s) {
    if (s->nseg < SEG_S3FIFO_MIN)
        return true;
    if ((s->ghost = ghost_create()) == NULL)
        return false;
    s->small_target = s->nseg / 10 > 0 ? s->nseg / 10 : 1;
    for (int i = 0; i < 2; i++) {
        uint32_t id = s->out[i] = s->free_head;
        s->free_head = s->segs[id].next;
        s->nfree--;
        s->segs[id].queue = Q_MAIN;
        atomic_store(&s->segs[id].state, ST_OPEN);
    }
    return true;
}

static bool s3fifo_evict(struct seg_store *s, struct mtx *held) {
    if (s->out[0] != NONE) {
        if (s3_evict(s, held))
            return true;
        pthread_mutex_lock(&s->pool);
    }
    return seg_evict_fifo.evict(s, held);
}

const struct seg_evict seg_evict_s3fifo = {.name = "s3fifo", .init = s3fifo_init,
                                           .evict = s3fifo_evict};
