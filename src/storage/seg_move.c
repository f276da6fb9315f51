/*
 * seg_move.c -- moving the items an eviction keeps out of a detached
 * segment into output segments (Segcache's merge and S3-FIFO both do):
 * each item under its stripe, kept when it was read since written or last
 * moved, and room and budget allow; dropped when dead; evicted otherwise.
 */
#include "storage/ghost.h"
#include "storage/seg_int.h"

static bool dead_at(struct seg_store *s, const struct seg_at *at, uint32_t now) {
    if (s->cfg.dead != NULL)
        return s->cfg.dead(s->cfg.hook_arg, at);
    return at->h.exptime != 0 && at->h.exptime <= now;
}

/* Starts segment t as an output for items coming from segment from.  Nobody else writes it. */
static void out_start(struct seg_store *s, uint32_t t, uint32_t from, enum seg_queue q) {
    struct seg_meta *tm = &s->segs[t];
    atomic_store(&tm->write_off, 0);
    tm->cas_base = s->segs[from].cas_base;
    tm->created = s->segs[from].created;
    tm->bucket = s->segs[from].bucket;
    tm->queue = (uint8_t)q;
    atomic_store(&tm->max_exptime, 0);
    atomic_store(&tm->live_items, 0);
    atomic_store(&tm->live_bytes, 0);
    atomic_store(&tm->state, ST_OPEN);
}

/*
 * Room in the current output for item h from segment from: its length
 * there, or 0 when no output is left.  An output that cannot take it
 * (full, or closed by a flush_all while items from before it lie there)
 * is sealed into its FIFO and the next one started.  An output takes the
 * latest creation time of its sources: every item kept was live, so none
 * goes to the wrong side of a flush.
 */
static size_t out_room(struct seg_store *s, struct mover *mv, uint32_t from,
                       const struct seg_hdr *h) {
    for (;;) {
        uint32_t t = mv->out[0];
        if (t == NONE)
            return 0;
        struct seg_meta *tm = &s->segs[t];
        uint32_t off = atomic_load(&tm->write_off);
        if (off == 0)
            out_start(s, t, from, mv->q);
        size_t len = seg_item_len(h, tm->cas_base);
        if (off == 0 || (!closed_by_flush(s, t) && off + len <= s->cfg.seg_size)) {
            if (len > s->cfg.seg_size)
                return 0;
            if (s->segs[from].created > tm->created)
                tm->created = s->segs[from].created;
            return len;
        }
        pthread_mutex_lock(&s->pool);
        fifo_push_tail_locked(s, t);
        pthread_mutex_unlock(&s->pool);
        mv->out[0] = mv->out[1];
        mv->out[1] = NONE;
    }
}

/*
 * Moves or drops the items of detached segment id, oldest first, each
 * under its stripe (held: as clear()): an item is kept -- copied to the
 * mover's output with FETCHED and GHOST cleared (a second chance, as
 * CLOCK gives) -- if it was read since written or last moved (FETCHED),
 * stored while its key was a ghost (GHOST, small queue only) or is a
 * delete hold-off's tombstone, and there is room and budget; dead items
 * are dropped, the others evicted.  false when a stripe stayed busy: the
 * segment is left as it is from there.
 */
bool seg_relocate(struct seg_store *s, uint32_t id, struct mover *mv, struct mtx *held) {
    struct seg_meta *m = &s->segs[id];
    uint32_t now = atomic_load(&s->now);
    for (uint32_t off = 0; off < m->write_off;) {
        uint8_t klen;
        uint32_t vlen;
        uint64_t loc = loc_of(id, off), hv;
        size_t hl = walk_item(s, id, off, &klen, &vlen, &hv);
        struct mtx *x = lock_of(s->locks, hv);
        if (!stripe_take(x, held))
            return false;
        uint64_t *slot = seg_index_find_locked(s->ix, hv, match_loc, &loc);
        if (slot != NULL) {
            struct seg_at at;
            at_fill(s, loc, &at);
            bool dead = dead_at(s, &at, now), hold = (at.h.hflags & SEG_F_HOLD) != 0;
            bool read = (at.h.hflags & SEG_F_FETCHED) ||
                        (mv->small && (at.h.hflags & SEG_F_GHOST));
            struct seg_hdr h = at.h;
            h.hflags &= (uint16_t)~(SEG_F_FETCHED | SEG_F_GHOST | SEG_F_LAYOUT);
            size_t len = !dead && (hold || read) ? out_room(s, mv, id, &h) : 0;
            if (len != 0 && len <= mv->budget) {
                uint32_t t = mv->out[0];
                struct seg_meta *tm = &s->segs[t];
                uint8_t *p = (uint8_t *)seg_base(s, t) + tm->write_off;
                size_t w = seg_hdr_encode(p, &h, tm->cas_base);
                memcpy(p + w, at.key, (size_t)klen + vlen);    /* (as stored: a block's
                                                                   address moves with it) */
                seg_index_move_locked(slot, loc_of(t, tm->write_off));
                atomic_fetch_add(&tm->write_off, (uint32_t)len);
                atomic_fetch_add(&tm->live_items, 1);
                atomic_fetch_add(&tm->live_bytes, (int64_t)len);
                raise_max_exptime(tm, h.exptime);
                mv->budget -= (uint32_t)len;
                mv->kept += !hold;
            } else {
                if (!dead && !hold && s->cfg.evicted != NULL)
                    s->cfg.evicted(s->cfg.hook_arg, &at);
                seg_index_remove_locked(s->ix, slot);
                if (at.h.hflags & SEG_F_EXT)
                    seg_ext_put(s, ext_at(&at));
                if (!dead && !hold && mv->small) {
                    pthread_mutex_lock(&s->ghost_lock);
                    ghost_add(s->ghost, hv);
                    atomic_store(&s->ghost_n, ghost_count(s->ghost));
                    pthread_mutex_unlock(&s->ghost_lock);
                }
                mv->evicted += !dead && !hold;
                mv->expired += dead && !hold;
                mv->unfetched += !dead && !hold && !(at.h.hflags & SEG_F_FETCHED);
            }
            atomic_fetch_sub(&m->live_items, 1);
            atomic_fetch_sub(&m->live_bytes, (int64_t)(hl + klen + vlen));
        }
        stripe_give(x, held);
        off += (uint32_t)(hl + klen + vlen);
    }
    return true;
}

void seg_mover_count(struct seg_store *s, const struct mover *mv) {
    atomic_fetch_add(&s->evicted_items, mv->evicted);
    atomic_fetch_add(&s->evicted_unfetched, mv->unfetched);
    atomic_fetch_add(&s->expired_items, mv->expired);
}

/* A segment emptied by seg_relocate(): free, or draining while pinned.  Pool lock held. */
void seg_emptied_locked(struct seg_store *s, uint32_t id) {
    atomic_store(&s->segs[id].state, ST_DRAINING);
    if (atomic_load(&s->segs[id].pins) != 0) {
        s->segs[id].next = s->draining;
        s->draining = id;
    } else {
        free_locked(s, id);
    }
}
