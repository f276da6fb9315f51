/*
 * seg_ext.c -- values too large for a segment, kept out of line: a
 * malloc'd block per value, whose address the segment stores in the
 * value's place (SEG_F_EXT).  Its bytes are charged to the memory limit
 * by lending whole segments out of the pool (evicting as a store would),
 * given back as blocks go.  A block counts its references: the item that
 * links it, plus each reader holding it (seg_ext_hold()); the last one
 * frees it.  Blocks are listed under ext_lock; charges are under the pool
 * lock.
 */
#include <sys/mman.h>

#include "storage/seg_int.h"

/* Gives lent segments back while the others pay for what is left.  Pool lock held. */
static void ext_trim_locked(struct seg_store *s) {
    while (s->lent > 0 && (uint64_t)(s->lent - 1) * s->cfg.seg_size >= s->ext_bytes) {
        uint32_t id = s->lent_head;
        s->lent_head = s->segs[id].next;
        s->lent--;
        free_locked(s, id);
    }
}

/*
 * Charges bytes of an out-of-line value to the memory limit: whole
 * segments leave the pool (evicting as a store would) until the lent ones
 * cover every such byte; their pages go back to the kernel meanwhile.
 * false: not enough could be had.
 */
static bool ext_charge(struct seg_store *s, size_t bytes, struct mtx *held) {
    size_t tries_max = RESERVE_TRIES + 2 * (bytes / s->cfg.seg_size + 1);
    for (size_t tries = 0;;) {
        pthread_mutex_lock(&s->pool);
        reap_locked(s);
        if ((uint64_t)s->lent * s->cfg.seg_size >= s->ext_bytes + bytes) {
            s->ext_bytes += bytes;
            pthread_mutex_unlock(&s->pool);
            return true;
        }
        if (s->free_head != NONE) {
            uint32_t id = s->free_head;
            s->free_head = s->segs[id].next;
            s->nfree--;
            atomic_store(&s->segs[id].state, ST_LENT);
            atomic_store(&s->segs[id].write_off, 0);
            s->segs[id].next = s->lent_head;
            s->lent_head = id;
            s->lent++;
            /* (under the lock: a segment given back is not written before this) */
            madvise(seg_base(s, id), s->cfg.seg_size, MADV_DONTNEED);
            pthread_mutex_unlock(&s->pool);
            continue;
        }
        if (!evict_step(s, held) || ++tries > tries_max) {
            pthread_mutex_lock(&s->pool);
            ext_trim_locked(s);
            pthread_mutex_unlock(&s->pool);
            return false;
        }
    }
}

/* A new block holding value, charged; NULL when memory is short. */
struct seg_ext *seg_ext_new(struct seg_store *s, const void *value, uint32_t len,
                            struct mtx *held) {
    if (!ext_charge(s, ext_size(len), held))
        return NULL;
    struct seg_ext *x = malloc(ext_size(len));
    if (x == NULL) {
        pthread_mutex_lock(&s->pool);
        s->ext_bytes -= ext_size(len);
        ext_trim_locked(s);
        pthread_mutex_unlock(&s->pool);
        return NULL;
    }
    atomic_init(&x->refs, 1);
    x->len = len;
    memcpy(x->data, value, len);
    pthread_mutex_lock(&s->ext_lock);
    x->prev = NULL;
    x->next = s->ext_list;
    if (x->next != NULL)
        x->next->prev = x;
    s->ext_list = x;
    s->ext_items++;
    pthread_mutex_unlock(&s->ext_lock);
    return x;
}

/* Drops a reference to block x: the last one frees it and its charge. */
void seg_ext_put(struct seg_store *s, struct seg_ext *x) {
    if (atomic_fetch_sub(&x->refs, 1) != 1)
        return;
    pthread_mutex_lock(&s->ext_lock);
    if (x->prev != NULL)
        x->prev->next = x->next;
    else
        s->ext_list = x->next;
    if (x->next != NULL)
        x->next->prev = x->prev;
    s->ext_items--;
    pthread_mutex_unlock(&s->ext_lock);
    size_t bytes = ext_size(x->len);
    free(x);
    pthread_mutex_lock(&s->pool);
    s->ext_bytes -= bytes;
    ext_trim_locked(s);
    pthread_mutex_unlock(&s->pool);
}

struct seg_ext *seg_ext_hold(const struct seg_at *at) {
    if (!(at->h.hflags & SEG_F_EXT))
        return NULL;
    struct seg_ext *x = ext_at(at);
    atomic_fetch_add(&x->refs, 1);
    return x;
}

void seg_ext_release(struct seg_store *s, struct seg_ext *x) {
    if (x != NULL)
        seg_ext_put(s, x);
}
