/*
 * item_move.c -- the slab back end's page mover (memcached's slab
 * rebalancer and automover; "Scaling Memcache at Facebook" 6.2): takes a
 * page from one class and gives it to another or to the global page pool,
 * so that memory follows the sizes stored instead of staying where it
 * first landed.
 *
 *   engine_slabs_reassign / automover        item_move_step_locked (step_lock)
 *        |                                          |
 *   mv.signal = 1 (src, dst) ----------------> slab_move_begin(src): oldest page
 *                                                out of use, its free chunks cut
 *                                                   |
 *                                   +--> every linked item with a chunk there:
 *                                   |      refcount 1: rescued into a free chunk of
 *                                   |        its class (rescues, chunk_rescues), or
 *                                   |        unlinked (evictions_nomem); dead: unlinked
 *                                   |      held by a reader: busy_items, left for a
 *                                   |        later pass (after 2 s unlinked: busy_deletes)
 *                                   +--- walk of the hash table, `budget` per step,
 *                                        again while the page is not clear
 *                                                   |
 *                                   slab_move_finish(dst): cut into dst's chunks,
 *                                   or into the pool (pages over -m freed)
 *
 * A chunk that is freed while its page is moving is marked by slab.c, not
 * listed, so nothing in the page is handed out again; an item being
 * written (allocated, not yet linked) is found by a later pass once
 * linked.  The walk is of the hash table because a chain chunk does not
 * say whose it is (FIXME: a page-local scan would need self-describing
 * chunks; a pass costs one visit per bucket and item).
 *
 * The step holds step_lock; the walk takes each bucket's stripe, then the
 * class and slab locks as linking does (engine_int.h).  Nothing here runs
 * on a get or set: slab_free() tests one pointer while a page moves.
 */
#include <stdlib.h>
#include <string.h>

#include "storage/store_slab.h"

#define MOVE_BUSY_SECS 2                /* then items readers hold are unlinked */
#define MOVE_MIN_PAGES_SOURCE 2         /* an automove source keeps more pages */
#define MOVE_MIN_PAGES_RECLAIM 2.5      /* free pages' worth a class gives the pool */
#define MOVE_AGE_MARGIN 0.8             /* mode 3: evicting class 20% younger */

static bool in_page(const struct engine *e, const void *p) {
    return (const char *)p >= e->mv.lo && (const char *)p < e->mv.hi;
}

/* memcached's slabs_reassign_pick_any(): round robin over classes with a spare page. */
static int32_t pick_any_locked(struct engine *e, int32_t dst) {
    for (unsigned tries = e->nclasses; tries > 0; tries--) {
        if (++e->mv.pick > e->nclasses)
            e->mv.pick = 1;
        if ((int32_t)e->mv.pick == dst)
            continue;
        if (slab_class_pages(e->slab, e->mv.pick) > 1)
            return (int32_t)e->mv.pick;
    }
    return -1;
}

/* The answer and the checks of memcached's do_slabs_reassign(). */
enum engine_reassign item_move_request(struct engine *e, int32_t src, int32_t dst) {
    enum engine_reassign r = ENGINE_REASSIGN_OK;
    if (!mtx_trylock(&e->mv.lock))
        return ENGINE_REASSIGN_RUNNING;
    if (e->mv.signal != 0)
        r = ENGINE_REASSIGN_RUNNING;
    else if (src == dst)
        r = ENGINE_REASSIGN_SAME;
    if (r == ENGINE_REASSIGN_OK && src == -1)
        src = pick_any_locked(e, dst);
    if (r == ENGINE_REASSIGN_OK &&
        (src < 0 || src > (int32_t)e->nclasses || dst < 0 || dst > (int32_t)e->nclasses))
        r = ENGINE_REASSIGN_BADCLASS;
    if (r == ENGINE_REASSIGN_OK && slab_class_pages(e->slab, (unsigned)src) < 2)
        r = ENGINE_REASSIGN_NOSPARE;
    if (r == ENGINE_REASSIGN_OK) {
        e->mv.src = (unsigned)src;
        e->mv.dst = (unsigned)dst;
        e->mv.signal = 1;
    }
    mtx_unlock(&e->mv.lock);
    return r;
}

static struct item_chain chain_read(const struct item *it) {
    struct item_chain ch;
    memcpy(&ch, it->data + it->nkey, sizeof(ch));
    return ch;
}

/*
 * Copies each chain chunk of it that lies in the moving page into a free
 * chunk of its class elsewhere (item stripe held, nobody else holds it).
 * False when a class had no free chunk: the chunks moved so far stay
 * moved, and the caller unlinks the item.
 */
static bool chain_rescue(struct engine *e, struct item *it) {
    struct item_chain ch = chain_read(it);
    bool ok = true;
    for (struct item_chunk **pp = &ch.first; *pp != NULL; pp = &(*pp)->next) {
        struct item_chunk *k = *pp;
        if (!in_page(e, k))
            continue;
        struct item_chunk *n = slab_alloc_spare(e->slab, k->clsid);
        if (n == NULL) {
            ok = false;
            break;
        }
        memcpy(n, k, sizeof(*k) + k->size);
        *pp = n;
        slab_free(e->slab, k->clsid, k);
        atomic_fetch_add_explicit(&e->mv.chunk_rescues, 1, memory_order_relaxed);
    }
    memcpy(it->data + it->nkey, &ch, sizeof(ch));
    return ok;
}

/*
 * Copies it (its header chunk, for a chained item) into a free chunk of
 * its class elsewhere and links the copy in its place with the same CAS,
 * as memcached's rescue does (item stripe held, nobody else holds it).
 * The old chunk no longer owns the chain, so freeing it frees only it.
 */
static bool head_rescue(struct engine *e, struct item *it, uint64_t hv) {
    struct item *n = slab_alloc_spare(e->slab, it->clsid);
    if (n == NULL)
        return false;
    bool chained = item_has(it, ITEM_CHAINED);
    memcpy(n, it, chained ? slab_chunk_size(e->slab, it->clsid) : item_ntotal(it));
    n->hnext = n->prev = n->next = NULL;
    atomic_store_explicit(&n->refcount, 1, memory_order_relaxed);
    atomic_store_explicit(&n->pbits, 0, memory_order_relaxed);    /* new to the policy */
    item_flag_clear(n, ITEM_LINKED);
    item_flag_clear(n, ITEM_TEMP);      /* item_replace_locked() decides the wheel anew */
    item_flag_clear(it, ITEM_CHAINED);
    item_flag_clear(it, ITEM_FLASH);    /* the copy keeps the record on flash */
    item_replace_locked(e, it, n, hv, item_cas(it));
    item_deref(e, n);                   /* the table's is the one left */
    atomic_fetch_add_explicit(&e->mv.rescues, 1, memory_order_relaxed);
    return true;
}

struct move_visit {
    struct engine *e;
    uint32_t now;
    bool force;                         /* unlink items readers hold */
};

/* One linked item met by the walk (its stripe held). */
static void move_visit(struct item *it, uint64_t hv, void *arg) {
    struct move_visit *v = arg;
    struct engine *e = v->e;
    bool head = in_page(e, it), chain = false;
    if (item_has(it, ITEM_CHAINED)) {
        for (struct item_chunk *k = chain_read(it).first; k != NULL && !chain; k = k->next)
            chain = in_page(e, k);
    }
    if (!head && !chain)
        return;
    if (atomic_load_explicit(&it->refcount, memory_order_acquire) != 1) {
        atomic_fetch_add_explicit(&e->mv.busy_items, 1, memory_order_relaxed);
        if (v->force) {
            atomic_fetch_add_explicit(&e->mv.busy_deletes, 1, memory_order_relaxed);
            item_unlink_locked(e, it, hv, UNLINK_DELETE);
        }
        return;
    }
    if (expire_dead(e, it, v->now) != ENGINE_MISS_NONE) {
        item_unlink_locked(e, it, hv, UNLINK_DELETE);
        return;
    }
    if ((chain && !chain_rescue(e, it)) || (head && !head_rescue(e, it, hv))) {
        atomic_fetch_add_explicit(&e->mv.evictions_nomem, 1, memory_order_relaxed);
        item_unlink_locked(e, it, hv, UNLINK_DELETE);
    }
}

/* ---- the automover ---- */

/* The automover's inputs for one class, now. */
struct am_class {
    uint64_t evicted, oom, pages, free, perpage, age, number;
};

/* A class that never had a page has nothing else to read: one lock, not three. */
static void am_read(struct engine *e, unsigned id, struct am_class *a) {
    struct engine_class_stats cs;
    if (slab_class_pages(e->slab, id) == 0 && e->mv.am_pages[id] == 0 &&
        e->mv.am_evicted[id] == 0) {
        *a = (struct am_class){0};
        return;
    }
    item_class_stats(e, id, &cs);
    *a = (struct am_class){cs.evicted, cs.outofmemory, cs.total_pages,
                           cs.free_chunks + cs.free_chunks_end, cs.chunks_per_page, cs.age,
                           cs.number};
}

/*
 * memcached's slab_automove_run() (automove 1): a window of samples per
 * class (age of the oldest item, whether it evicted, ran out of memory or
 * grew).  A class with more than 2.5 pages of free chunks and a clean
 * window gives a page to the pool; else once windows are full, when the
 * youngest evicting class's age is below ratio times the oldest's, the
 * oldest gives it a page.
 */
static void am_window(struct engine *e, double ratio, unsigned window, int *src, int *dst) {
    struct move *m = &e->mv;
    *src = *dst = -1;
    if (m->win == NULL || m->win_size != window || m->win_ratio != ratio) {
        free(m->win);
        m->win = calloc((size_t)window * ENGINE_MAX_CLASSES, sizeof(*m->win));
        m->win_size = window;
        m->win_ratio = ratio;
        m->win_cur = 0;
        if (m->win == NULL)
            return;
    }
    struct am_class now[ENGINE_MAX_CLASSES];
    uint64_t evicted_total = 0;
    for (unsigned n = 1; n <= e->nclasses; n++) {
        am_read(e, n, &now[n]);
        evicted_total += now[n].evicted - m->am_evicted[n];
    }
    m->win_cur++;
    int oldest = -1, youngest = -1;
    uint64_t oldest_age = 0, youngest_age = UINT64_MAX;
    bool youngest_evicting = false;
    for (unsigned n = 1; n <= e->nclasses; n++) {
        struct move_sample *w = &m->win[n * window];
        struct move_sample *d = &w[m->win_cur % window];
        memset(d, 0, sizeof(*d));
        uint64_t ev = now[n].evicted - m->am_evicted[n];
        if (ev > 0) {
            d->evicted_ratio = (float)ev / (float)evicted_total;
            d->evicted_seen = 1;
            d->dirty = 1;
        }
        if (now[n].oom > m->am_oom[n] || now[n].pages > m->am_pages[n])
            d->dirty = 1;
        d->age = now[n].age;
        uint64_t age = 0, dirty = 0, seen = 0;
        float ratio_sum = 0;
        for (unsigned i = 0; i < window; i++) {
            age += w[i].age;
            dirty += w[i].dirty;
            seen += w[i].evicted_seen;
            ratio_sum += w[i].evicted_ratio;
        }
        age /= window;
        if (now[n].free > now[n].perpage * MOVE_MIN_PAGES_RECLAIM && dirty == 0) {
            *src = (int)n;
            *dst = 0;
            oldest = youngest = -1;
            break;
        }
        if (age > oldest_age && now[n].pages > MOVE_MIN_PAGES_SOURCE) {
            oldest = (int)n;
            oldest_age = age;
        }
        if (age < youngest_age && (seen > window / 2 || ratio_sum / window > 0.25)) {
            youngest = (int)n;
            youngest_age = age;
            youngest_evicting = d->evicted_seen;
        }
    }
    for (unsigned n = 1; n <= e->nclasses; n++) {
        m->am_evicted[n] = now[n].evicted;
        m->am_oom[n] = now[n].oom;
        m->am_pages[n] = now[n].pages;
    }
    if (youngest != -1 && oldest != -1 && m->win_cur > window &&
        youngest_age < (double)oldest_age * ratio && youngest_evicting) {
        *src = oldest;
        *dst = youngest;
    }
}

/*
 * automove 2: memcached asks for a page (from any class) for each class
 * that evicts, at the eviction; here the step asks, for the first class
 * that evicted since it last looked.
 */
static void am_evicting(struct engine *e, int *src, int *dst) {
    struct move *m = &e->mv;
    *src = *dst = -1;
    for (unsigned n = 1; n <= e->nclasses; n++) {
        struct am_class a;
        am_read(e, n, &a);
        if (a.evicted > m->am_evicted[n] && *dst == -1)
            *dst = (int)n;
        m->am_evicted[n] = a.evicted;
    }
}

/*
 * automove 3, the paper's rule (6.2): a class that evicted since the last
 * run and whose oldest item is markedly younger (by 20% or more) than the
 * average oldest item of the other classes gets a page from the class
 * whose oldest item is oldest.
 */
static void am_age(struct engine *e, int *src, int *dst) {
    struct move *m = &e->mv;
    struct am_class now[ENGINE_MAX_CLASSES];
    int young = -1, old = -1;
    for (unsigned n = 1; n <= e->nclasses; n++) {
        am_read(e, n, &now[n]);
        bool evicting = now[n].evicted > m->am_evicted[n];
        m->am_evicted[n] = now[n].evicted;
        if (evicting && (young == -1 || now[n].age < now[young].age))
            young = (int)n;
    }
    *src = *dst = -1;
    if (young == -1)
        return;
    uint64_t sum = 0, k = 0;
    for (unsigned n = 1; n <= e->nclasses; n++) {
        if ((int)n == young || now[n].number == 0)
            continue;
        sum += now[n].age, k++;
        if (now[n].pages > MOVE_MIN_PAGES_SOURCE && (old == -1 || now[n].age > now[old].age))
            old = (int)n;
    }
    if (k == 0 || old == -1)
        return;
    if ((double)now[young].age <= (double)sum / (double)k * MOVE_AGE_MARGIN) {
        *src = old;
        *dst = young;
    }
}

/* Runs the configured rule at most once an engine second (again at once after a pool move). */
static void automove_run(struct engine *e, uint32_t now) {
    mtx_lock(&e->mv.lock);
    int mode = e->mv.mode;
    double ratio = e->mv.ratio;
    unsigned window = e->mv.window < 1 ? 1 : e->mv.window;
    mtx_unlock(&e->mv.lock);
    if (mode == 0 || (now == e->mv.am_last && !e->mv.am_again))
        return;
    int src, dst;
    if (mode == 3)
        am_age(e, &src, &dst);
    else if (mode == 2)
        am_evicting(e, &src, &dst);
    else
        am_window(e, ratio, window, &src, &dst);
    e->mv.am_again = mode == 1 && src != -1 && dst == 0;
    if (!e->mv.am_again)
        e->mv.am_last = now;
    if (dst != -1 && (src != -1 || mode == 2))
        item_move_request(e, src, dst);     /* mode 2's src -1: any class */
}

/* ---- the step ---- */

static void move_end(struct engine *e) {
    mtx_lock(&e->mv.lock);
    e->mv.signal = 0;
    mtx_unlock(&e->mv.lock);
}

/*
 * One slice of the mover (step_lock held): starts an asked move, finishes
 * a move whose page is clear, else walks on over the hash table rescuing
 * what lies in the page.  When idle, gives the automover its turn.
 */
unsigned item_move_step_locked(struct engine *e, unsigned budget) {
    struct move *m = &e->mv;
    uint32_t now = expire_now(e);
    mtx_lock(&m->lock);
    int signal = m->signal;
    unsigned src = m->src, dst = m->dst;
    mtx_unlock(&m->lock);
    if (signal == 0) {
        automove_run(e, now);
        return 0;
    }
    if (signal == 1) {
        if (!slab_move_begin(e->slab, src, &m->lo, &m->hi)) {
            move_end(e);
            return 1;
        }
        m->cursor = 0;
        m->began = now;
        mtx_lock(&m->lock);
        m->signal = 2;
        mtx_unlock(&m->lock);
    }
    if (slab_move_clear(e->slab)) {
        slab_move_finish(e->slab, dst);
        m->lo = m->hi = NULL;
        atomic_fetch_add_explicit(&m->moved, 1, memory_order_relaxed);
        move_end(e);
        return 1;
    }
    struct move_visit v = {e, now, now - m->began >= MOVE_BUSY_SECS};
    bool wrapped;
    unsigned work = ht_visit(e->ht, &m->cursor, budget, &wrapped, move_visit, &v);
    return work > 0 ? work : 1;
}

/* Settings from the config at create and from `slabs automove` later. */
void item_move_set(struct engine *e, int mode, double ratio, unsigned window) {
    mtx_lock(&e->mv.lock);
    e->mv.mode = mode;
    e->mv.ratio = ratio;
    e->mv.window = window;
    mtx_unlock(&e->mv.lock);
}

/* The mover's counters and the pool for engine_stats(). */
void item_move_stats(struct engine *e, struct engine_stats *out) {
    struct move *m = &e->mv;
    out->slab_reassign_rescues = atomic_load_explicit(&m->rescues, memory_order_relaxed);
    out->slab_reassign_chunk_rescues =
        atomic_load_explicit(&m->chunk_rescues, memory_order_relaxed);
    out->slab_reassign_evictions_nomem =
        atomic_load_explicit(&m->evictions_nomem, memory_order_relaxed);
    out->slab_reassign_inline_reclaim =
        atomic_load_explicit(&m->inline_reclaim, memory_order_relaxed);
    out->slab_reassign_busy_items = atomic_load_explicit(&m->busy_items, memory_order_relaxed);
    out->slab_reassign_busy_deletes =
        atomic_load_explicit(&m->busy_deletes, memory_order_relaxed);
    out->slabs_moved = atomic_load_explicit(&m->moved, memory_order_relaxed);
    mtx_lock(&m->lock);
    out->slab_reassign_running = m->signal == 2;
    mtx_unlock(&m->lock);
    out->slab_global_page_pool = slab_pool_pages(e->slab);
}
