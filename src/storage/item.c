/*
 * item.c -- the slab back end (store.h sends it each item operation when
 * storage=seg is off; store_slab.h lists what it offers): item memory and
 * allocation (evicting when memory is full), chained large items, linking
 * into the hash table and the class queue, freeing on the last reference,
 * and the slab's background work, dump and class counters.  item_value(),
 * item_ntotal() and item_copy_value() work on any item's memory.
 *
 *   store_alloc
 *        |
 *   item_alloc --> chunk_get(class) --> slab_alloc ... NULL?
 *                       ^                                |
 *                       +------ evict_pull(class) <------+  (up to 10 times)
 *                                 tail candidates: trylock, refcount == 1,
 *                                 dead -> reclaim, live -> evict (unless -M)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store_slab.h"

#define ITEM_MC_HEADER 48               /* sizeof(item) in 64-bit memcached */

size_t item_ntotal(const struct item *it) {
    return sizeof(struct item) + it->nkey + (size_t)it->nbytes;
}

static struct item_chain chain_get(const struct item *it) {
    struct item_chain ch;
    memcpy(&ch, it->data + it->nkey, sizeof(ch));
    return ch;
}

static char *chunk_data(struct item_chunk *ch) { return (char *)ch + sizeof(*ch); }

char *item_value(const struct item *it) {
    char *p = (char *)it->data + it->nkey;
    if (!item_has(it, ITEM_CHAINED))
        return p;
    struct item_chain ch = chain_get(it);
    return ch.ext != NULL ? ch.ext : p + sizeof(struct item_chain);
}

/* A walk over the pieces of an item's value, in order. */
struct piece {
    char *p;
    size_t n;
    struct item_chunk *next;
};

static void piece_first(const struct item *it, struct piece *pc) {
    pc->p = item_value(it);
    if (item_has(it, ITEM_CHAINED)) {
        struct item_chain ch = chain_get(it);
        pc->n = ch.ext != NULL ? it->nbytes : ch.head;
        pc->next = ch.first;
    } else {
        pc->n = it->nbytes;
        pc->next = NULL;
    }
}

static bool piece_next(struct piece *pc) {
    if (pc->next == NULL)
        return false;
    pc->p = chunk_data(pc->next);
    pc->n = pc->next->size;
    pc->next = pc->next->next;
    return true;
}

int engine_item_iov(const struct item *it, struct iovec *iov, int max) {
    struct piece pc;
    int n = 0;
    if (max <= 0)
        return 0;
    piece_first(it, &pc);
    do {
        iov[n].iov_base = pc.p;
        iov[n].iov_len = pc.n;
        n++;
    } while (n < max && piece_next(&pc));
    return n;
}

/*
 * The worst case is a chained item of item_size_max.  Its header chunk
 * holds chunk_max bytes less the header, key and chain header, and the key
 * counts against item_size_max too, so what goes to the chain is
 * item_size_max - chunk_max + sizeof(struct item_chain) whatever the key;
 * each chain chunk holds chunk_max - sizeof(struct item_chunk) of it.
 */
int engine_item_iov_max(const struct engine *e) {
    uint32_t cmax = e->cfg.slab_chunk_max, imax = e->cfg.item_size_max;
    if (imax <= cmax)
        return 1;
    size_t rest = imax - cmax + sizeof(struct item_chain);
    size_t per = cmax - sizeof(struct item_chunk);
    return 1 + (int)((rest + per - 1) / per);
}

/*
 * Copies src's whole value into dst's value at byte offset off, piece by
 * piece on both sides (either may be chained).
 */
void item_copy_value(struct item *dst, size_t off, const struct item *src) {
    struct piece d, s;
    piece_first(dst, &d);
    piece_first(src, &s);
    while (off > d.n) {
        off -= d.n;
        piece_next(&d);
    }
    d.p += off;
    d.n -= off;
    size_t left = src->nbytes;
    while (left > 0) {
        while (s.n == 0)
            piece_next(&s);
        while (d.n == 0)
            piece_next(&d);
        size_t k = s.n < d.n ? s.n : d.n;
        memcpy(d.p, s.p, k);
        d.p += k, d.n -= k;
        s.p += k, s.n -= k;
        left -= k;
    }
}

/*
 * Takes it out of its class queue and counts why (class lock held).  A
 * delete hold-off tombstone leaving the cache is the end of a delete, not
 * an expired, reclaimed or evicted value: it touches no counter.
 */
static void unlink_q_locked(struct engine *e, struct eclass *c, struct item *it,
                            enum unlink_why why, uint32_t now) {
    if (item_has(it, ITEM_TEMP)) {
        wheel_remove(&c->wheel, it);
        item_flag_clear(it, ITEM_TEMP);
    } else {
        e->policy->unlink(c->q, it);
    }
    sizes_note(e, it, -1);
    c->number--;
    c->bytes -= item_ntotal(it);
    bool fetched = item_has(it, ITEM_FETCHED);
    if (item_has(it, ITEM_HOLD))
        why = UNLINK_DELETE;
    switch (why) {
    case UNLINK_RECLAIM:
        c->reclaimed++;
        c->expired_unfetched += !fetched;
        break;
    case UNLINK_CRAWL:
        c->crawler_reclaimed++;
        c->expired_unfetched += !fetched;
        break;
    case UNLINK_EVICT:
        c->evicted++;
        c->evicted_time = now > it->atime ? now - it->atime : 0;
        c->evicted_nonzero += it->exptime != 0;
        c->evicted_unfetched += !fetched;
        /* evicted_active stays 0: which items are active is the policy's own business */
        break;
    case UNLINK_DELETE:
        break;
    }
}

/* Out of line, so that store_unref()'s common path stays a decrement and a test. */
__attribute__((noinline)) void item_free(struct engine *e, struct item *it) {
    if (item_has(it, ITEM_FLASH)) {     /* a header: its record on flash goes with it */
        struct flash_loc loc = item_flash_loc(it);
        flash_release(e->flash, &loc);
    }
    if (item_has(it, ITEM_CHAINED)) {
        struct item_chunk *ch = chain_get(it).first;
        while (ch != NULL) {
            struct item_chunk *next = ch->next;
            slab_free(e->slab, ch->clsid, ch);
            ch = next;
        }
    }
    slab_free(e->slab, it->clsid, it);
}

static void item_unref(struct engine *e, struct item *it) {
    if (item_deref(e, it) == 1)
        item_free(e, it);
}

/*
 * Frees one item from the tail end of class id to make room.  Looks at up
 * to ENGINE_EVICT_TRIES candidates the policy offers, skipping those whose
 * item lock is busy (we hold the class lock, so we may only try-lock) or
 * that someone holds a reference on.  A dead (expired or flushed) candidate
 * is reclaimed; a live one is evicted, unless evictions are off (-M).
 * Returns true when an item went.
 */
/*
 * Takes a queue's candidate it out of the cache (class lock held) if its
 * item lock is free and nobody else holds it: a dead one is reclaimed, a
 * live one evicted when live is allowed.  *dead says which it was.  The
 * caller drops the table's reference once the class lock is released.
 */
static bool take_locked(struct engine *e, struct eclass *c, struct item *it, uint32_t now,
                        bool live, bool *dead) {
    uint64_t hv = ht_hash(it->data, it->nkey);
    if (!lock_try(e->locks, hv))
        return false;
    *dead = expire_dead(e, it, now) != ENGINE_MISS_NONE;
    if (atomic_load_explicit(&it->refcount, memory_order_acquire) != 1 || (!*dead && !live)) {
        mtx_unlock(lock_of(e->locks, hv));
        return false;
    }
    ht_delete_locked(e->ht, it, hv);
    unlink_q_locked(e, c, it, *dead ? UNLINK_RECLAIM : UNLINK_EVICT, now);
    item_flag_clear(it, ITEM_LINKED);
    mtx_unlock(lock_of(e->locks, hv));
    return true;
}

static bool evict_pull(struct engine *e, unsigned id) {
    struct eclass *c = &e->cls[id];
    uint32_t now = expire_now(e);
    struct item *gone = NULL, *it = NULL;
    bool dead = false;
    mtx_lock(&c->lock);
    for (int n = 0; n < ENGINE_EVICT_TRIES; n++) {
        it = e->policy->victim(c->q, it);
        if (it == NULL)
            break;
        if (take_locked(e, c, it, now, e->cfg.evict, &dead)) {
            gone = it;
            break;
        }
    }
    mtx_unlock(&c->lock);
    if (gone != NULL && !dead && watching(e, ENGINE_WATCH_EVICT)) {
        struct engine_watch_event ev = {
            .kind = ENGINE_WATCH_EVICT,
            .it = gone,
            .ttl = item_ttl(gone->exptime, now),
            .idle = now > gone->atime ? now - gone->atime : 0,
        };
        watch_report(e, &ev);
    }
    if (gone != NULL)
        item_unref(e, gone);        /* the table's reference, the last one */
    return gone != NULL;
}

/*
 * memcached's LRU maintainer reclaims dead items it finds at the tails of
 * its queues, so an expired item leaves (counted as reclaimed) soon after
 * it expires, not when a request or the crawler meets it.  This is that
 * step for one class: the policy's oldest items, while they are dead, at
 * most max of them.  It stops at the first live one, as memcached's tail
 * pull does; the crawler finds dead items further in.  oldest() changes no
 * policy state, so this moves nothing a policy would decide.  With juggle,
 * the policy's maintain() (evict.h) runs first in the same hold of the
 * class lock: the maintainer's juggle of the queues.  A juggle that made
 * its most moves left some behind: those moves are added to *moved, so
 * that the maintenance thread comes back soon (as memcached's maintainer
 * speeds up while it finds work); one that kept up lets it rest, so that
 * steady stores do not keep the thread spinning.  Returns how many went.
 */
static unsigned item_reap_class(struct engine *e, unsigned id, unsigned max, bool juggle,
                                unsigned *moved) {
    struct eclass *c = &e->cls[id];
    uint32_t now = expire_now(e);
    unsigned n = 0;
    while (n < max) {
        bool dead = false;
        mtx_lock(&c->lock);
        if (c->number == 0) {       /* most classes, most of the time: nothing to look at */
            mtx_unlock(&c->lock);
            break;
        }
        if (juggle && n == 0 && e->policy->maintain != NULL) {
            unsigned m = e->policy->maintain(c->q, now, ENGINE_JUGGLE_MAX);
            if (m >= ENGINE_JUGGLE_MAX)
                *moved += m;
        }
        struct item *it = e->policy->oldest(c->q);
        if (it == NULL || !take_locked(e, c, it, now, false, &dead)) {   /* live, or busy */
            mtx_unlock(&c->lock);
            break;
        }
        mtx_unlock(&c->lock);
        item_unref(e, it);          /* the table's reference, the last one */
        n++;
    }
    return n;
}

/* One chunk of class id, evicting from that class while memory is full. */
static void *chunk_get(struct engine *e, unsigned id) {
    for (int i = 0; i < ENGINE_ALLOC_TRIES; i++) {
        void *p = slab_alloc(e->slab, id);
        if (p != NULL)
            return p;
        if (!evict_pull(e, id))
            break;
    }
    return NULL;
}

/*
 * Allocates the chain chunks of a large item whose header chunk (of the
 * largest class) is it, and writes the chain header after the key.  On
 * failure gives back what it took and returns false.
 */
static bool chain_alloc(struct engine *e, struct item *it, size_t nkey, uint32_t nbytes) {
    unsigned top = e->nclasses;
    uint32_t cmax = e->cfg.slab_chunk_max;
    struct item_chain ch = {
        .head = cmax - sizeof(struct item) - nkey - sizeof(struct item_chain),
    };
    struct item_chunk **tail = &ch.first;
    size_t left = nbytes - ch.head;
    while (left > 0) {
        size_t want = left + sizeof(struct item_chunk);
        unsigned id = want <= cmax ? slab_class_for(e->slab, want) : top;
        struct item_chunk *k = chunk_get(e, id);
        if (k == NULL && id != top)
            k = chunk_get(e, id = top);
        if (k == NULL) {
            for (struct item_chunk *f = ch.first, *next; f != NULL; f = next) {
                next = f->next;
                slab_free(e->slab, f->clsid, f);
            }
            return false;
        }
        size_t cap = slab_chunk_size(e->slab, id) - sizeof(struct item_chunk);
        k->size = left < cap ? left : cap;
        k->clsid = id;
        k->next = NULL;
        *tail = k;
        tail = &k->next;
        left -= k->size;
    }
    memcpy(it->data + nkey, &ch, sizeof(ch));
    return true;
}

struct item *item_alloc(struct engine *e, const char *key, size_t nkey, uint32_t flags,
                        uint32_t exptime, uint32_t nbytes, enum engine_alloc_err *err) {
    size_t total = sizeof(struct item) + nkey + (size_t)nbytes;
    *err = ENGINE_ALLOC_OK;
    if (nkey > ENGINE_KEY_MAX || total > e->cfg.item_size_max) {
        *err = ENGINE_ALLOC_TOO_LARGE;
        return NULL;
    }
    bool chained = total > e->cfg.slab_chunk_max;
    unsigned id = chained ? e->nclasses : slab_class_for(e->slab, total);
    if (__builtin_expect(atomic_load_explicit(&e->lru_flat, memory_order_relaxed), 0))
        item_reap_class(e, id, ENGINE_FLAT_PULL, false, NULL);  /* memcached's flat-LRU pull */
    struct item *it = chunk_get(e, id);
    if (it != NULL && chained && !chain_alloc(e, it, nkey, nbytes)) {
        slab_free(e->slab, id, it);
        it = NULL;
    }
    if (it == NULL) {
        mtx_lock(&e->cls[id].lock);
        e->cls[id].outofmemory++;
        mtx_unlock(&e->cls[id].lock);
        *err = ENGINE_ALLOC_NO_MEMORY;
        return NULL;
    }
    it->hnext = it->prev = it->next = NULL;
    it->cas = 0;
    it->atime = expire_now(e);
    it->exptime = exptime;
    it->nbytes = nbytes;
    it->flags = flags;
    atomic_init(&it->refcount, 1);
    atomic_init(&it->iflags, chained ? ITEM_CHAINED : 0);
    it->clsid = (uint8_t)id;
    it->nkey = (uint8_t)nkey;
    atomic_init(&it->pbits, 0);
    memcpy(it->data, key, nkey);
    return it;
}

/*
 * A transient item enters its class's wheel instead of the policy's queue
 * (class lock held): marked ITEM_TEMP, and with pbits EVICT_TEMP so that a
 * segmented policy's engine_item_lru() counts its hits as hits_to_temp.
 */
__attribute__((noinline)) static void temp_link_locked(struct eclass *c, struct item *it) {
    item_flag_set(it, ITEM_TEMP);
    atomic_store_explicit(&it->pbits, EVICT_TEMP, memory_order_relaxed);
    wheel_add(&c->wheel, it);
}

/*
 * Links it under its key (item stripe held, key not present): CAS cas (0:
 * the next one; always 0 under -C), access time now, into the table and
 * the class queue, plus the table's reference.  An item whose TTL is at
 * most temp_ttl goes to the class's wheel instead (memcached's test,
 * exptime - now <= temporary_ttl in unsigned arithmetic, so exptime 0,
 * never, is not transient): this is the one place that decides.
 */
bool item_link_locked(struct engine *e, struct item *it, uint64_t hv, uint64_t cas) {
    uint32_t now = expire_now(e);
    struct eclass *c = &e->cls[it->clsid];
    cas = !e->cfg.use_cas ? 0 : cas != 0 ? cas : item_next_cas(e);
    it->cas = cas;
    it->atime = now;
    item_flag_set(it, ITEM_LINKED);
    item_ref(e, it);
    ht_insert_locked(e->ht, it, hv);
    mtx_lock(&c->lock);
    if (__builtin_expect((uint32_t)(it->exptime - now) <
                             atomic_load_explicit(&e->temp_lim, memory_order_relaxed), 0) &&
        c->wheel.slot != NULL)
        temp_link_locked(c, it);
    else
        e->policy->link(c->q, it, now);
    sizes_note(e, it, 1);
    c->number++;
    c->bytes += item_ntotal(it);
    c->total_items++;
    mtx_unlock(&c->lock);
    return true;
}

/* Unlinks it (item stripe held) and drops the table's reference. */
void item_unlink_locked(struct engine *e, struct item *it, uint64_t hv, enum unlink_why why) {
    if (!item_has(it, ITEM_LINKED))
        return;
    struct eclass *c = &e->cls[it->clsid];
    ht_delete_locked(e->ht, it, hv);
    mtx_lock(&c->lock);
    unlink_q_locked(e, c, it, why, expire_now(e));
    mtx_unlock(&c->lock);
    item_flag_clear(it, ITEM_LINKED);
    item_unref(e, it);
}

/* Puts it in old's place (item stripe held); cas as for item_link_locked(). */
bool item_replace_locked(struct engine *e, struct item *old, struct item *it, uint64_t hv,
                         uint64_t cas) {
    item_unlink_locked(e, old, hv, UNLINK_DELETE);
    return item_link_locked(e, it, hv, cas);
}

/*
 * Tells the policy about a hit on a linked item (item stripe held); only
 * when it asks for a queue move do we take the class lock.  A transient
 * item is never bumped (memcached's TEMP LRU): hit() may mark its pbits,
 * which the wheel does not use, and the move is skipped on the slow path,
 * so a hit costs no more than before.
 */
void item_hit_locked(struct engine *e, struct item *it) {
    uint32_t now = expire_now(e);
    if (!e->policy->hit(it, now))
        return;
    struct eclass *c = &e->cls[it->clsid];
    mtx_lock(&c->lock);
    if ((atomic_load_explicit(&it->iflags, memory_order_relaxed) & (ITEM_LINKED | ITEM_TEMP)) ==
        ITEM_LINKED) {
        e->policy->bump(c->q, it, now);
        it->atime = now;
    }
    mtx_unlock(&c->lock);
}

/* ---- create, the maintenance step, dump and stats of the slab back end ---- */

/*
 * The slab back end of engine_create(): the policy named by the config,
 * the slab allocator, the key stripes, the hash table and one eviction
 * queue per class.  On failure says so in err; the caller destroys e.
 */
bool item_create(struct engine *e, char *err, size_t errlen) {
    const struct engine_config *cfg = &e->cfg;
    e->policy = evict_policy_find(cfg->policy);
    e->lru_mask = e->policy->seg_mask;
    e->cfg.policy = e->policy->name;
    /* Class 1 is memcached's: its 48-byte item header plus -n, so that an item
       lands in the class it has in memcached (t/ reads classes by number).  Our
       header is 56 bytes with the CAS inside, memcached's 48 + 8 of CAS and 3 of
       terminators, so an item's total is never larger here.  The floor keeps
       room for a small key and value when -n is tiny (cellar-sim's 8). */
    uint32_t min_chunk = ITEM_MC_HEADER + cfg->chunk_min;
    if (min_chunk < sizeof(struct item) + 8)
        min_chunk = sizeof(struct item) + 8;
    struct slab_config sc = {
        .mem_limit = cfg->mem_limit,
        .growth_factor = cfg->growth_factor,
        .min_chunk = min_chunk,
        .page_size = cfg->page_size,
        .chunk_max = cfg->slab_chunk_max,
        .single_thread = cfg->single_thread,
    };
    e->slab = slab_create(&sc);
    e->locks = e->slab ? lock_create(e->cfg.lock_power, !cfg->single_thread) : NULL;
    e->ht = e->locks ? ht_create(e->cfg.hashpower_init, e->locks) : NULL;
    if (e->ht == NULL)
        goto fail;
    e->nclasses = slab_nclasses(e->slab);
    for (unsigned i = 1; i <= e->nclasses; i++) {
        mtx_init(&e->cls[i].lock, !cfg->single_thread);
        atomic_init(&e->cls[i].crawler_checked, 0);
        if ((e->cls[i].q = e->policy->create()) == NULL)
            goto fail;
        if (e->policy->tune != NULL)
            e->policy->tune(e->cls[i].q, &cfg->tune);
    }
    if (cfg->temp_ttl >= 0)
        item_lru_temp(e, cfg->temp_ttl);
    return true;
fail:
    snprintf(err, errlen, "out of memory creating the engine");
    return false;
}

/*
 * `lru temp_ttl` / -o temporary_ttl: gives every class its wheel (once;
 * the slots stay until the engine goes), then lets link put items there.
 * Off (ttl < 0), items already in the wheels stay there until reclaimed.
 */
void item_lru_temp(struct engine *e, int32_t ttl) {
    uint32_t now = expire_now(e);
    bool ok = true;
    for (unsigned i = 1; ttl >= 0 && i <= e->nclasses; i++) {
        struct eclass *c = &e->cls[i];
        mtx_lock(&c->lock);
        if (c->wheel.slot == NULL && !wheel_init(&c->wheel, now))
            ok = false;     /* that class keeps its items in the policy's queue */
        mtx_unlock(&c->lock);
    }
    (void)ok;
    if (ttl >= 0)
        atomic_store_explicit(&e->wheels, true, memory_order_release);
    atomic_store_explicit(&e->temp_lim, ttl >= 0 ? (uint32_t)ttl + 1 : 0, memory_order_relaxed);
}

/*
 * The wheel's reclaim for one class: the slots of the seconds from the
 * wheel's cursor up to now, each item of them that is dead taken out
 * (counted in reclaimed and expired_unfetched, as memcached's TEMP tail
 * pull counts them).  A slot also holds items of later turns (a TTL over
 * WHEEL_SLOTS, or a touch), which stay.  At most budget items are looked
 * at; a slot cut short is walked again next time unless nothing could be
 * taken from it (all busy or live), so the cursor always advances.  The
 * current second's slot is walked on every step while it lasts, for an
 * item stored already due.  Busy items (referenced, stripe taken) are left
 * to the next turn, the crawler or the next lookup.  Returns the items
 * looked at.
 */
static unsigned item_temp_class(struct engine *e, unsigned id, unsigned budget) {
    struct eclass *c = &e->cls[id];
    uint32_t now = expire_now(e);
    struct item *gone[ENGINE_TEMP_BATCH];
    unsigned work = 0, ngone = 0;
    mtx_lock(&c->lock);
    struct wheel *w = &c->wheel;
    if (w->slot == NULL || w->n == 0) {
        if (w->slot != NULL)
            w->next = now;
        mtx_unlock(&c->lock);
        return 0;
    }
    if ((int32_t)(now - w->next) < 0)
        w->next = now;                      /* the clock went back */
    else if (now - w->next >= WHEEL_SLOTS)
        w->next = now - (WHEEL_SLOTS - 1);  /* a whole turn: each slot once */
    for (;;) {
        uint32_t sec = w->next;
        bool cut = false;
        unsigned before = ngone, examined = work;
        for (struct item *it = wheel_first(w, sec), *next; it != NULL; it = next) {
            if (work >= budget || ngone == ENGINE_TEMP_BATCH) {
                cut = true;
                break;
            }
            next = it->next;
            work++;
            bool dead;
            if (it->exptime <= now && take_locked(e, c, it, now, false, &dead))
                gone[ngone++] = it;
        }
        if (sec == now)
            break;
        if (cut) {
            /* items of this second were looked at and none could go (busy, or
               a later turn's): move on regardless; a slot cut before its
               first item was looked at is walked next time */
            if (ngone == before && work > examined)
                w->next = sec + 1;
            break;
        }
        w->next = sec + 1;
    }
    mtx_unlock(&c->lock);
    for (unsigned i = 0; i < ngone; i++)
        item_unref(e, gone[i]);     /* the table's reference, the last one */
    return work;
}

struct crawl {
    struct engine *e;
    uint32_t now;
    uint64_t classes;               /* bit i: class i is crawled */
};

static void crawl_visit(struct item *it, uint64_t hv, void *arg) {
    struct crawl *cr = arg;
    if (((cr->classes >> it->clsid) & 1) == 0)
        return;
    atomic_fetch_add_explicit(&cr->e->cls[it->clsid].crawler_checked, 1, memory_order_relaxed);
    if (expire_dead(cr->e, it, cr->now) != ENGINE_MISS_NONE)
        item_unlink_locked(cr->e, it, hv, UNLINK_CRAWL);
}

/*
 * One slice of the expiry crawler: walks hash buckets from where the last
 * slice stopped, one stripe lock at a time, unlinking dead items.  After a
 * full pass it rests ENGINE_CRAWL_REST seconds (returning 0, so the caller
 * may sleep).  A requested crawl (item_crawl_request_locked()) is a pass
 * that looks only at the classes asked for, and ends the request when it
 * wraps.  Called under step_lock.
 *
 * memcached's crawler walks each class's LRU from the tail; walking the
 * table instead meets the same items (every linked item is in both) and
 * needs no marker item linked into the queues of every eviction policy.
 *
 * FIXME: memcached schedules crawls per class from a histogram of coming
 * expiries; a fixed rest is simpler and bounds the cost the same way.
 */
static unsigned crawl_step(struct engine *e, unsigned budget) {
    uint64_t req = atomic_load_explicit(&e->crawl_req, memory_order_relaxed);
    struct crawl cr = {e, expire_now(e), req != 0 ? req : ~(uint64_t)0};
    if (req == 0 && e->crawl_resting) {
        if (cr.now < e->crawl_next)
            return 0;
        e->crawl_resting = false;
    }
    if (!e->crawl_in_pass) {
        e->crawl_in_pass = true;
        atomic_fetch_add_explicit(&e->crawl_starts, 1, memory_order_relaxed);
    }
    bool wrapped;
    unsigned work = ht_visit(e->ht, &e->crawl_cursor, budget, &wrapped, crawl_visit, &cr);
    if (wrapped) {
        e->crawl_in_pass = false;
        e->crawl_resting = true;
        e->crawl_next = cr.now + ENGINE_CRAWL_REST;
        atomic_store_explicit(&e->crawl_req, 0, memory_order_release);
    }
    return work;
}

/*
 * `lru_crawler crawl`: a pass over the classes asked for, from the table's
 * start (a background pass under way gives way to it and starts over
 * later).  As memcached, a class with no items is crawled too (at once).
 */
enum engine_crawl_result item_crawl_request_locked(struct engine *e, uint64_t classes) {
    if (atomic_load_explicit(&e->crawl_req, memory_order_relaxed) != 0)
        return ENGINE_CRAWL_BUSY;
    e->crawl_cursor = 0;
    e->crawl_resting = false;
    e->crawl_in_pass = true;
    atomic_fetch_add_explicit(&e->crawl_starts, 1, memory_order_relaxed);
    atomic_store_explicit(&e->crawl_req, classes, memory_order_release);
    return ENGINE_CRAWL_OK;
}

/* Sums the class counters that say how many items are linked. */
static uint64_t curr_items(struct engine *e) {
    uint64_t n = 0;
    for (unsigned i = 1; i <= e->nclasses; i++) {
        mtx_lock(&e->cls[i].lock);
        n += e->cls[i].number;
        mtx_unlock(&e->cls[i].lock);
    }
    return n;
}

/*
 * The slab back end's maintenance slice (step_lock held).  Table growth
 * first: start doubling once there are more than 1.5 items per bucket,
 * then move up to `budget` buckets per call; while it moves, the crawler
 * waits.  Then the wheels' transient items of the seconds gone by (always),
 * the LRU maintainer's reclaim of dead tails and the policy's
 * juggle of its queues (evict.h's maintain(); both while the maintainer is
 * on, engine_config.reap), and
 * whatever budget is left goes to the expiry crawler.
 */
unsigned item_step_locked(struct engine *e, unsigned budget) {
    unsigned work = 0;
    uint32_t now = expire_now(e);
    if (!e->cfg.no_expand && !ht_expanding(e->ht) && now >= e->expand_next && e->dumpers == 0) {
        uint64_t buckets = (uint64_t)1 << ht_power(e->ht);
        if (curr_items(e) > buckets + buckets / 2 && !ht_expand_start(e->ht))
            e->expand_next = now + ENGINE_EXPAND_RETRY;
    }
    if (ht_expanding(e->ht))
        work += ht_expand_step(e->ht, budget);
    for (unsigned id = 1; atomic_load_explicit(&e->wheels, memory_order_acquire) &&
                          id <= e->nclasses && work < budget; id++)
        work += item_temp_class(e, id, budget - work);
    if (e->cfg.reap) {
        unsigned moved = 0;
        for (unsigned id = 1; id <= e->nclasses && work + moved < budget; id++)
            work += item_reap_class(e, id, ENGINE_REAP_MAX, true, &moved);
        work += moved;
    }
    if (work < budget &&
        (engine_crawl(e) || atomic_load_explicit(&e->crawl_req, memory_order_relaxed) != 0))
        work += crawl_step(e, budget - work);
    return work;
}

struct dump_visit {
    struct engine *e;
    uint32_t now;
    int64_t started;
    engine_dump_fn fn;
    void *arg;
};

static void dump_visit(struct item *it, uint64_t hv, void *arg) {
    (void)hv;
    struct dump_visit *dv = arg;
    /* As memcached's crawler: an item of the expiring second (exptime == now) is still listed. */
    enum engine_miss dead = expire_dead(dv->e, it, dv->now);
    if (item_has(it, ITEM_HOLD) || dead == ENGINE_MISS_FLUSHED ||
        (dead == ENGINE_MISS_EXPIRED && it->exptime < dv->now))
        return;
    struct engine_dump_item d = {
        .key = it->data,
        .nkey = it->nkey,
        .exptime = it->exptime != 0 ? dv->started + it->exptime : 0,
        .atime = dv->started + it->atime,
        .cas = item_cas(it),
        .nbytes = it->nbytes,
        .ntotal = item_ntotal(it),
        .clsid = it->clsid,
        .fetched = item_has(it, ITEM_FETCHED),
        .flags = it->flags,
        .it = it,
    };
    dv->fn(&d, dv->arg);
}

/*
 * The buckets of the part-th of nparts slices of a dump.  The table must
 * not change size under the slices: a doubling under way is finished first
 * (engine_dump_begin() lets none start).
 */
void item_dump_span(struct engine *e, unsigned part, unsigned nparts, uint64_t *lo,
                    uint64_t *hi) {
    mtx_lock(&e->step_lock);
    while (ht_expanding(e->ht))
        ht_expand_step(e->ht, 1u << 16);
    mtx_unlock(&e->step_lock);
    uint64_t n = (uint64_t)1 << ht_power(e->ht);
    *lo = n * part / nparts;
    *hi = n * (part + 1) / nparts;
}

/* One slice of a dump: the table's buckets from *cursor on; false once wrapped. */
bool item_dump_step(struct engine *e, uint64_t *cursor, unsigned budget, engine_dump_fn fn,
                    void *arg) {
    if (ht_expanding(e->ht)) {
        /* Begun while the table was doubling: finish that first (none starts now). */
        mtx_lock(&e->step_lock);
        if (ht_expanding(e->ht))
            ht_expand_step(e->ht, budget);
        mtx_unlock(&e->step_lock);
        return true;
    }
    struct dump_visit dv = {e, expire_now(e), atomic_load_explicit(&e->started,
                            memory_order_relaxed), fn, arg};
    bool wrapped;
    ht_visit(e->ht, cursor, budget, &wrapped, dump_visit, &dv);
    return !wrapped;
}

/* A slab class's counters: its pages and chunks, its queue's moves and counts. */
bool item_class_stats(struct engine *e, unsigned id, struct engine_class_stats *out) {
    struct slab_class_stats ss;
    slab_class_stats(e->slab, id, &ss);
    struct eclass *c = &e->cls[id];
    uint32_t now = expire_now(e);
    *out = (struct engine_class_stats){
        .chunk_size = ss.chunk_size,
        .chunks_per_page = ss.chunks_per_page,
        .total_pages = ss.total_pages,
        .total_chunks = ss.total_chunks,
        .used_chunks = ss.used_chunks,
        .free_chunks = ss.free_chunks,
        .free_chunks_end = ss.free_chunks_end,
    };
    mtx_lock(&c->lock);
    if (e->policy->segments != NULL) {
        e->policy->segments(c->q, &out->seg);
        out->seg.moves_to_cold -= c->lru_base.moves_to_cold;
        out->seg.moves_to_warm -= c->lru_base.moves_to_warm;
        out->seg.moves_within_lru -= c->lru_base.moves_within_lru;
    } else {
        out->seg.number[EVICT_COLD] = c->number - c->wheel.n;
    }
    out->seg.number[EVICT_TEMP] = c->wheel.n;
    struct item *old = e->policy->oldest(c->q);
    out->age = old != NULL && now > old->atime ? now - old->atime : 0;
    out->number = c->number;
    out->mem_requested = c->bytes;
    out->evicted = c->evicted;
    out->evicted_nonzero = c->evicted_nonzero;
    out->evicted_time = c->evicted_time;
    out->outofmemory = c->outofmemory;
    out->reclaimed = c->reclaimed;
    out->expired_unfetched = c->expired_unfetched;
    out->evicted_unfetched = c->evicted_unfetched;
    out->evicted_active = c->evicted_active;
    out->crawler_reclaimed = c->crawler_reclaimed;
    mtx_unlock(&c->lock);
    out->crawler_items_checked = atomic_load_explicit(&c->crawler_checked, memory_order_relaxed);
    return true;
}

/* The slab's memory and the hash table's figures for engine_stats(). */
void item_stats(struct engine *e, struct engine_stats *out) {
    out->total_malloced = slab_total_malloced(e->slab);
    out->limit_maxbytes = slab_limit(e->slab);
    out->hash_power_level = ht_power(e->ht);
    out->hash_bytes = ht_bytes(e->ht);
    out->hash_is_expanding = ht_expanding(e->ht);
}
