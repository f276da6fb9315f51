/*
 * lease.c -- leases and stale values: memcached 1.6.18's meta get and meta
 * delete, item metadata for meta return flags, and the paper's delete
 * hold-off.  Meta set and meta arithmetic share their paths with the
 * classic commands and live in engine.c.
 *
 * The state is two item bits (item.h): TOKEN_SENT, set when a reader is
 * told it won the right to recache, and STALE, set by an invalidating
 * delete.  A third bit, HOLD, marks delete hold-off tombstones, which
 * store_find_locked() hides from everybody but the add paths.  engine.h
 * draws the state machine.
 *
 * One meta get, with the item stripe held throughout:
 *
 *   find --miss--> vivify? --no / no memory / held--> miss
 *     |               | yes: link an empty item, created
 *     v               v
 *   read fetched, last access (before this call)
 *     |
 *   steps in request order: touch (set exptime), vivify (created: set
 *   exptime, won), recache (no token out, not created, exptime set and
 *   below the token's: won), ttl (read it for the reply)
 *     |
 *   token_sent = TOKEN_SENT; stale = STALE, and a stale item with no
 *   token out is won; a win sets TOKEN_SENT
 *     |
 *   unless no_bump: mark fetched, tell the eviction policy
 */
#include "storage/store.h"

/*
 * Orders n steps by position, stably (callers list them in kind order, so
 * ties keep it); a STEP_TTL at 0 goes last.  Returns n.
 */
unsigned steps_sort(struct step *s, unsigned n) {
    for (unsigned i = 0; i < n; i++)
        if (s[i].kind == STEP_TTL && s[i].at == 0)
            s[i].at = ~0u;
    for (unsigned i = 1; i < n; i++) {
        struct step t = s[i];
        unsigned j = i;
        for (; j > 0 && s[j - 1].at > t.at; j--)
            s[j] = s[j - 1];
        s[j] = t;
    }
    return n;
}

/* The parts of meta that only need the item (stripe held). */
static void meta_read_locked(const struct item *it, uint32_t now, struct engine_item_meta *m) {
    *m = (struct engine_item_meta){
        .ttl = item_ttl(it->exptime, now),
        .last_access = now > it->atime ? now - it->atime : 0,
        .fetched = item_has(it, ITEM_FETCHED),
        .token_sent = item_has(it, ITEM_TOKEN_SENT),
        .stale = item_has(it, ITEM_STALE),
    };
}

void engine_item_meta(struct engine *e, const struct item *it, struct engine_item_meta *m) {
    struct mtx *mx = lock_of(e->locks, ht_hash(item_key(it), it->nkey));
    mtx_lock(mx);
    meta_read_locked(it, expire_now(e), m);
    mtx_unlock(mx);
}

/*
 * memcached's process_mget_command(), as drawn at the top of this file.
 * The vivified item is allocated under the stripe, as memcached does, so
 * exactly one of many concurrent missing readers creates it; its
 * allocation reference becomes the caller's.
 */
struct item *engine_mget(struct engine *e, const char *key, size_t nkey,
                         const struct engine_mget_opts *o, struct engine_item_meta *meta,
                         enum engine_miss *why) {
    uint64_t hv = ht_hash(key, nkey);
    struct mtx *m = lock_of(e->locks, hv);
    struct item *hold;
    bool created = false;
    if (why != NULL)
        *why = ENGINE_MISS_NONE;
    mtx_lock(m);
    struct item *it = store_find_locked(e, key, nkey, hv, why, &hold);
    if (it == NULL && o->vivify && hold == NULL) {
        enum engine_alloc_err err;
        it = store_alloc(e, key, nkey, 0, 0, 0, &err);
        if (it != NULL && store_link_locked(e, it, hv, o->vivify_cas)) {
            created = true;
        } else if (it != NULL) {
            store_unref(e, it);
            it = NULL;
        }
    }
    if (it == NULL) {
        mtx_unlock(m);
        return NULL;
    }
    uint32_t now = expire_now(e), exp = it->exptime;
    struct engine_item_meta mt;
    meta_read_locked(it, now, &mt);
    mt.created = created;
    bool won = false;
    struct step st[4];
    unsigned n = 0;
    if (o->touch)
        st[n++] = (struct step){o->touch_at, STEP_TOUCH};
    if (o->vivify)
        st[n++] = (struct step){o->vivify_at, STEP_VIVIFY};
    if (o->recache)
        st[n++] = (struct step){o->recache_at, STEP_RECACHE};
    st[n++] = (struct step){o->ttl_at, STEP_TTL};
    n = steps_sort(st, n);
    for (unsigned i = 0; i < n; i++) {
        switch (st[i].kind) {
        case STEP_TOUCH:
            exp = expire_realtime(e, o->touch_exptime);
            break;
        case STEP_VIVIFY:
            if (created) {
                exp = expire_realtime(e, o->vivify_exptime);
                won = true;
            }
            break;
        case STEP_RECACHE:
            if (!mt.token_sent && !created && exp != 0 &&
                exp < expire_realtime(e, o->recache_exptime))
                won = true;
            break;
        case STEP_TTL:
            mt.ttl = item_ttl(exp, now);
            break;
        }
    }
    it->exptime = exp;
    if (mt.stale && !mt.token_sent)
        won = true;
    if (won && !o->no_claim)
        item_flag_set(it, ITEM_TOKEN_SENT);
    mt.won = won;
    bool again = item_has(it, ITEM_FETCHED);
    if (!o->no_bump)
        item_flag_set(it, ITEM_FETCHED);
    store_sync_locked(e, it, hv);
    if (!o->no_bump)
        store_hit_locked(e, it);
    if (!created)
        it = store_keep_locked(e, it);
    mtx_unlock(m);
    if (meta != NULL)
        *meta = mt;
    if (__builtin_expect(item_has(it, ITEM_FLASH), 0))
        it = ext_read(e, it, hv, again, why);   /* the value, read without the stripe */
    return it;
}

/*
 * memcached's process_mdelete_command(): compare, then (HEAD) swap in an
 * empty item, then either invalidate -- keep the item, STALE, token
 * cleared so the next reader wins, new CAS, optional new exptime -- or
 * unlink (an emptied item stays).
 */
enum engine_mdelete_result engine_mdelete(struct engine *e, const char *key, size_t nkey,
                                          const struct engine_mdelete_opts *o, unsigned *clsid) {
    uint64_t hv = ht_hash(key, nkey);
    struct mtx *m = lock_of(e->locks, hv);
    enum engine_mdelete_result r = ENGINE_MDELETE_DELETED;
    struct item *made = NULL;
    mtx_lock(m);
    struct item *it = store_find_locked(e, key, nkey, hv, NULL, NULL);
    if (clsid != NULL)
        *clsid = it != NULL ? it->clsid : 0;
    if (it == NULL) {
        r = ENGINE_MDELETE_NOT_FOUND;
        goto out;
    }
    if (o->compare && it->cas != o->cas) {
        r = ENGINE_MDELETE_EXISTS;
        goto out;
    }
    if (o->remove_value) {
        enum engine_alloc_err err;
        uint32_t exptime = o->touch ? expire_realtime(e, o->touch_exptime) : 0;
        struct item *nit = store_alloc(e, key, nkey, o->flags, exptime, 0, &err);
        if (nit == NULL) {
            r = ENGINE_MDELETE_NO_MEMORY;
            goto out;
        }
        if (!store_replace_locked(e, it, nit, hv, o->new_cas != 0 ? o->new_cas : it->cas)) {
            store_unref(e, nit);
            r = ENGINE_MDELETE_NO_MEMORY;
            goto out;
        }
        it = made = nit;            /* ours to drop after the stripe */
    }
    if (o->invalidate) {
        if (o->touch)
            it->exptime = expire_realtime(e, o->touch_exptime);
        item_flag_set(it, ITEM_STALE);
        item_flag_clear(it, ITEM_TOKEN_SENT);
        it->cas = !e->cfg.use_cas ? 0 : o->new_cas != 0 ? o->new_cas : item_next_cas(e);
        store_sync_locked(e, it, hv);
        r = ENGINE_MDELETE_INVALIDATED;
    } else if (!o->remove_value) {
        store_unlink_locked(e, it, hv, UNLINK_DELETE);
    }
out:
    mtx_unlock(m);
    if (made != NULL)
        store_unref(e, made);
    return r;
}

/*
 * The tombstone is allocated before the stripe is taken (allocation may
 * evict); under the stripe it takes the place of the live item, of an
 * older tombstone, or of nothing.
 */
enum engine_delete_result engine_delete_hold(struct engine *e, const char *key, size_t nkey,
                                             uint32_t seconds, unsigned *clsid) {
    if (!e->cfg.delete_hold || seconds == 0) {
        struct engine_mdelete_opts plain = {0};
        return engine_mdelete(e, key, nkey, &plain, clsid) == ENGINE_MDELETE_DELETED
                   ? ENGINE_DELETED : ENGINE_DELETE_NOT_FOUND;
    }
    enum engine_alloc_err err;
    uint64_t until = (uint64_t)expire_now(e) + seconds;
    uint32_t exptime = until > UINT32_MAX ? UINT32_MAX : (uint32_t)until;
    struct item *tomb = store_alloc(e, key, nkey, 0, exptime, 0, &err);
    if (tomb != NULL)
        item_flag_set(tomb, ITEM_HOLD);
    uint64_t hv = ht_hash(key, nkey);
    struct mtx *m = lock_of(e->locks, hv);
    struct item *hold;
    mtx_lock(m);
    struct item *it = store_find_locked(e, key, nkey, hv, NULL, &hold);
    struct item *old = it != NULL ? it : hold;
    if (clsid != NULL)
        *clsid = it != NULL ? it->clsid : 0;
    bool placed = tomb != NULL && (old != NULL ? store_replace_locked(e, old, tomb, hv, 0)
                                               : store_link_locked(e, tomb, hv, 0));
    if (!placed && it != NULL)
        store_unlink_locked(e, it, hv, UNLINK_DELETE);
    mtx_unlock(m);
    if (tomb != NULL)
        store_unref(e, tomb);
    return it != NULL ? ENGINE_DELETED : ENGINE_DELETE_NOT_FOUND;
}
