/*
 * engine_arith.c -- incr/decr and meta arithmetic (ma), memcached's
 * do_add_delta() and process_marithmetic_command() on store.h's
 * operations: a number rewritten in place when only the table holds the
 * item, else a new item in its place; a missing key created on request;
 * then the meta steps (touch, vivify, ttl) in the request's order.
 */
#include <stdio.h>
#include <string.h>

#include "core/num.h"
#include "storage/store.h"

/*
 * memcached's do_add_delta() on the live item it (stripe held).  When the
 * new number is no longer than the stored bytes, memcached rewrites the
 * value in place: digits, then spaces up to the old length, and a new CAS.
 * We do the same when only the table holds the item (we hold its stripe,
 * so nobody can take a reference meanwhile).  When someone still holds it
 * -- typically a reply of the same connection not yet written -- rewriting
 * would change bytes already promised to that reader, so a new item with
 * the same padded bytes replaces it: the client sees exactly what memcached
 * shows, and nobody sees a torn value.  That copy stands for the item
 * memcached would have rewritten in place, so it keeps the item's state
 * (fetched, token sent, stale, binary key) and the meta steps act on it.
 * A longer number always gets a new item of exactly its digits, with no
 * state, as in memcached.  Checks run in memcached's order: empty or
 * chained value, then the CAS, then the number.  On success *linked is
 * the item that now stands for the one memcached updated in place (it, or
 * its copy), or NULL when memcached too would have made a new item (it
 * may be gone then).  A new item comes back in *made with a reference the
 * caller drops after the stripe.
 */
static enum engine_marith_result add_delta_locked(struct engine *e, struct item *it,
                                                  uint64_t hv, const struct engine_marith_opts *o,
                                                  struct engine_marith_out *res,
                                                  struct item **linked, struct item **made) {
    uint64_t v;
    if (it->nbytes == 0 || item_ntotal(it) > e->cfg.slab_chunk_max ||  /* chained in slab */
        item_has(it, ITEM_FLASH))       /* value on flash: memcached refuses it so too */
        return ENGINE_MARITH_NON_NUMERIC;
    if (o->compare && o->cas != 0 && it->cas != o->cas)
        return ENGINE_MARITH_EXISTS;
    if (!num_u64_value(item_value(it), it->nbytes, &v))
        return ENGINE_MARITH_NON_NUMERIC;
    if (!o->decr)
        v += o->delta;
    else
        v = o->delta > v ? 0 : v - o->delta;
    char buf[24];
    int len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
    bool fits = (uint32_t)len <= it->nbytes;
    *linked = NULL;
    if (fits && atomic_load_explicit(&it->refcount, memory_order_acquire) == 1) {
        char *p = item_value(it);
        memcpy(p, buf, (size_t)len);
        memset(p + len, ' ', it->nbytes - (size_t)len);
        it->cas = !e->cfg.use_cas ? 0 : o->new_cas != 0 ? o->new_cas : item_next_cas(e);
        store_sync_locked(e, it, hv);
        store_hit_locked(e, it);
        res->cas = it->cas;
        *linked = it;
    } else {
        enum engine_alloc_err err;
        uint32_t nlen = fits ? it->nbytes : (uint32_t)len;
        struct item *nit = store_alloc(e, item_key(it), it->nkey, it->flags, it->exptime, nlen,
                                      &err);
        if (nit == NULL)
            return ENGINE_MARITH_NO_MEMORY;
        memcpy(item_value(nit), buf, (size_t)len);
        memset(item_value(nit) + len, ' ', nlen - (size_t)len);
        if (fits) {
            static const uint8_t kept[] = {ITEM_FETCHED, ITEM_TOKEN_SENT, ITEM_STALE,
                                           ITEM_KEY_BINARY};
            for (size_t i = 0; i < sizeof(kept); i++)
                if (item_has(it, kept[i]))
                    item_flag_set(nit, kept[i]);
            *linked = nit;
        }
        if (!store_replace_locked(e, it, nit, hv, o->new_cas)) {
            *linked = NULL;
            store_unref(e, nit);
            return ENGINE_MARITH_NO_MEMORY;
        }
        if (fits) {
            /* the copy is the in-place rewrite: no new item to memcached's total_items */
            struct eclass *c = &e->cls[nit->clsid];
            mtx_lock(&c->lock);
            c->total_items--;
            mtx_unlock(&c->lock);
        }
        res->cas = nit->cas;
        *made = nit;
    }
    res->value = v;
    return ENGINE_MARITH_OK;
}

/*
 * A number for a missing key (ma with vivify, binary incr with an initial
 * value): its decimal digits in a new item with flags 0 and no exptime
 * (the vivify step sets that), linked with CAS cas.  Returns the item,
 * with a reference the caller drops after the stripe, or NULL when no
 * memory could be found.
 */
static struct item *arith_create_locked(struct engine *e, const char *key, size_t nkey,
                                        uint64_t hv, uint64_t value, uint64_t cas) {
    enum engine_alloc_err err;
    char buf[24];
    int len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)value);
    struct item *it = store_alloc(e, key, nkey, 0, 0, (uint32_t)len, &err);
    if (it == NULL)
        return NULL;
    memcpy(item_value(it), buf, (size_t)len);
    if (!store_link_locked(e, it, hv, cas)) {
        store_unref(e, it);
        return NULL;
    }
    /* memcached stores it as an add, whose own lookup and store it reports */
    if (watching(e, ENGINE_WATCH_FETCH))
        watch_fetch(e, key, nkey, NULL, ENGINE_MISS_NONE);
    if (watching(e, ENGINE_WATCH_STORE))
        watch_store(e, it, ENGINE_STORED, ENGINE_ADD);
    return it;
}

/*
 * memcached's process_marithmetic_command(): add_delta_locked(), or create
 * on a miss, then the request-ordered touch/vivify/ttl steps on the item
 * memcached has in hand -- the created or rewritten item, or, when a new
 * item replaced it, the old one, so that a touch then changes only what
 * the reply shows (see engine.h).
 */
enum engine_marith_result engine_marith(struct engine *e, const char *key, size_t nkey,
                                        const struct engine_marith_opts *o,
                                        struct engine_marith_out *out) {
    uint64_t hv = ht_hash(key, nkey);
    struct mtx *m = lock_of(e->locks, hv);
    enum engine_marith_result r;
    struct engine_marith_out res = {0};
    struct item *hold, *linked = NULL;  /* the item whose exptime the steps set */
    struct item *made = NULL;           /* a new item, ours to drop */
    uint32_t exp = 0;
    mtx_lock(m);
    struct item *it = store_find_locked(e, key, nkey, hv, NULL, &hold);
    if (it == NULL) {
        r = !o->vivify ? ENGINE_MARITH_NOT_FOUND
            : hold != NULL ? ENGINE_MARITH_NOT_STORED
                           : ENGINE_MARITH_OK;
        if (r == ENGINE_MARITH_OK) {
            res.created = true;
            linked = made = arith_create_locked(e, key, nkey, hv, o->initial, o->new_cas);
            if (linked == NULL)
                r = ENGINE_MARITH_NO_MEMORY;
            else
                res.value = o->initial, res.cas = linked->cas;
        }
    } else {
        exp = it->exptime;              /* read first: a replaced item may be freed */
        res.clsid = it->clsid;
        r = add_delta_locked(e, it, hv, o, &res, &linked, &made);
    }
    if (r == ENGINE_MARITH_OK) {
        uint32_t now = expire_now(e);
        struct step st[3];
        unsigned n = 0;
        if (o->touch)
            st[n++] = (struct step){o->touch_at, STEP_TOUCH};
        if (o->vivify)
            st[n++] = (struct step){o->vivify_at, STEP_VIVIFY};
        st[n++] = (struct step){o->ttl_at, STEP_TTL};
        n = steps_sort(st, n);
        for (unsigned i = 0; i < n; i++) {
            if (st[i].kind == STEP_TOUCH)
                exp = expire_realtime(e, o->touch_exptime);
            else if (st[i].kind == STEP_VIVIFY && res.created)
                exp = expire_realtime(e, o->vivify_exptime);
            else if (st[i].kind == STEP_TTL)
                res.ttl = item_ttl(exp, now);
        }
        if (linked != NULL) {
            linked->exptime = exp;
            store_sync_locked(e, linked, hv);
        }
    }
    mtx_unlock(m);
    if (made != NULL)
        store_unref(e, made);
    if (out != NULL)
        *out = res;
    return r;
}

/* incr/decr: engine_marith() without its options. */
enum engine_arith_result engine_arith(struct engine *e, const char *key, size_t nkey,
                                      bool incr, uint64_t delta, uint64_t *value,
                                      uint64_t *cas_out) {
    struct engine_marith_opts o = {.decr = !incr, .delta = delta};
    struct engine_marith_out out;
    switch (engine_marith(e, key, nkey, &o, &out)) {
    case ENGINE_MARITH_OK:
        if (value != NULL)
            *value = out.value;
        if (cas_out != NULL)
            *cas_out = out.cas;
        return ENGINE_ARITH_OK;
    case ENGINE_MARITH_NON_NUMERIC:
        return ENGINE_ARITH_NON_NUMERIC;
    case ENGINE_MARITH_NO_MEMORY:
        return ENGINE_ARITH_NO_MEMORY;
    case ENGINE_MARITH_NOT_FOUND:
    case ENGINE_MARITH_EXISTS:          /* needs compare: not here */
    case ENGINE_MARITH_NOT_STORED:      /* needs vivify: not here */
        break;
    }
    return ENGINE_ARITH_NOT_FOUND;
}
