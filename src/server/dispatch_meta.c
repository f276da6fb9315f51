/*
 * dispatch_meta.c -- meta-protocol requests (mg ms md ma mn me) into
 * engine calls.
 *
 * The meta twin of dispatch.c.  A line the text codec recognised as meta
 * (MC_CMD_META) is parsed again by protocol/mc_meta and lands here.  Who
 * decides what:
 *
 *   request flags --(this file: positions, low 32 bits of times)--> engine
 *   options --(engine, under the item lock: vivify, touch, recache, the
 *   TTL at t, W / Z / X)--> engine_item_meta --(this file: copied as they
 *   are)--> mc_meta_item_view --(codec: spelling, flag order, q)--> line
 *
 * The engine is the only place that knows the lease rules, and it applies
 * them atomically, so among any number of concurrent readers of a missing
 * key exactly one is told W.  The codec formats decisions, it never makes
 * them; this file translates between the two and picks nothing itself.
 *
 *   mg  engine_mget -> line, then the value by iovec straight from the
 *       item, with a reference held until written (out_hold)
 *   ms  engine_item_alloc -> CONN_NREAD (the value is read into the item)
 *       -> dispatch_meta_nread_done: engine_mstore -> line.  What the
 *       answer needs survives the wait in c->mpend, since rbuf may move.
 *   md  engine_mdelete -> line
 *   ma  engine_marith -> line, then the digits
 *   me  engine_mget (a look: no bump, no claim) -> line
 *   mn  "MN"
 *
 * Errors the codec finds are sent even with q, then req.swallow bytes of
 * ms data are skipped.  Counters follow memcached 1.6.18, which counts mg,
 * ms, md and ma in the classic counters (get, touch, set, cas, delete,
 * incr/decr) and only me in cmd_meta.
 */
#include <stdlib.h>
#include <string.h>

#include "protocol/mc_meta.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/dispatch.h"
#include "server/stats.h"
#include "storage/item_size.h"


/*
 * What an ms needs once its value is in: the engine's options, and the
 * request with only the flags its answer echoes (O, k, c; q stays in the
 * presence bits), their bytes copied here, because rbuf may be compacted
 * or grown while the value arrives.
 */
struct meta_pending {
    struct mc_meta_req req;
    struct engine_mstore_opts opts;
    bool cas_op;                /* compare on set/replace: memcached's NREAD_CAS (stats) */
    char text[MC_KEY_MAX + MC_META_MAX_FLAGS * (MC_META_OPAQUE_MAX + 1)];
};

/*
 * memcached keeps the low 32 bits of a T, N or R token (safe_strtol into an
 * int32_t): T4294967396 is T100.  The codec passes the whole number on.
 */
static int64_t meta_time(int64_t v) {
    return (int32_t)(uint32_t)(uint64_t)v;
}

/* The engine's TTL (-1 = never) as the codec's view spells it. */
static int64_t view_ttl(int64_t ttl) {
    return ttl == -1 ? MC_META_TTL_NEVER : ttl;
}

static void meta_error(struct conn *c, enum mc_meta_err err) {
    out_copy(&c->net.out, mc_meta_err_str(err), mc_meta_err_len(err));
}

/* Formats the answer line into scratch; returns whether a value must follow. */
static bool meta_reply(struct conn *c, const struct mc_meta_req *req,
                       const struct mc_meta_item_view *v) {
    char line[MC_META_RESP_MAX];
    bool value = false;
    size_t n = mc_meta_fmt(line, sizeof(line), req, v, &value);
    if (n > 0 && !out_copy(&c->net.out, line, n))
        return false;
    return value;
}

/* ---------------------------------------------------------------------- */
/* mg                                                                       */
/* ---------------------------------------------------------------------- */

/*
 * The request's flags as engine options, each at its place in the line
 * (position i + 1; 0 would mean "not placed").  An over-long opaque stops
 * the line from acting where it stands (mc_meta_late_error()): flags after
 * it are not passed on, except that N still vivifies -- memcached creates
 * the item before it writes the answer -- but sets no TTL: its step is put
 * first (position 0), where it leaves the new item's "no expiry" as it is.
 * Such a request claims no win, and an item memcached would have looked up
 * under its lock (T N R l h) is not bumped.
 */
static void mg_opts(const struct mc_meta_req *req, struct engine_mget_opts *o) {
    int late = mc_meta_late_error(req);
    bool locked = false;
    memset(o, 0, sizeof(*o));
    for (int i = 0; i < req->nflags; i++) {
        unsigned at = (unsigned)i + 1;
        bool acts = late < 0 || i < late;
        switch (req->flags[i].c) {
        case 'T':
            locked = true;
            if (acts) {
                o->touch = true;
                o->touch_exptime = meta_time(req->ttl);
                o->touch_at = at;
            }
            break;
        case 'N':
            locked = true;
            o->vivify = true;
            o->vivify_exptime = acts ? meta_time(req->vivify_ttl) : 0;
            o->vivify_at = acts ? at : 0;
            break;
        case 'R':
            locked = true;
            if (acts) {
                o->recache = true;
                o->recache_exptime = meta_time(req->recache);
                o->recache_at = at;
            }
            break;
        case 'l':
        case 'h':
            locked = true;
            break;
        case 't':
            o->ttl_at = at;
            break;
        case 'u':
            o->no_bump = true;
            break;
        default:
            break;
        }
    }
    if (late >= 0) {
        o->no_claim = true;
        if (locked)
            o->no_bump = true;
    }
}

static void meta_mg(struct conn *c, const struct mc_meta_req *req) {
    struct engine *e = c->ctx->engine;
    struct worker_counters *st = &c->ctx->st;
    struct engine_mget_opts o;
    struct engine_item_meta m;
    mg_opts(req, &o);
    struct item *it = engine_mget(e, req->key.p, req->key.len, &o, &m, NULL);
    struct mc_meta_item_view v = {.rc = MC_META_RC_EN};
    if (it == NULL) {
        STAT_INC(st->get_cmds);
        STAT_INC(st->get_misses);
        meta_reply(c, req, &v);
        return;
    }
    unsigned cls = item_clsid(it);
    if (mc_meta_late_error(req) < 0) {
        /* memcached counts a hit only once its answer is written. */
        if (mc_meta_has(req, 'T')) {
            STAT_INC(st->touch_cmds);
            STAT_INC(st->slab[cls].touch_hits);
        } else {
            STAT_INC(st->get_cmds);
            STAT_HIT(st, e, it, cls);
        }
    }
    v = (struct mc_meta_item_view){
        .rc = MC_META_RC_OK,
        .won = m.won,
        .token_sent = m.token_sent,
        .stale = m.stale,
        .key_binary = item_key_binary(it),
        .fetched = m.fetched,
        .vlen = item_nbytes(it),
        .client_flags = item_flags(it),
        .la = m.last_access,
        .cas = item_cas(it),
        .ttl = view_ttl(m.ttl),
    };
    if (!meta_reply(c, req, &v)) {
        engine_item_unref(e, it);
        return;
    }
    struct iovec *iov = c->ctx->iov;
    int k = engine_item_iov(it, iov, c->ctx->iov_max);
    for (int i = 0; i < k; i++)
        out_add(&c->net.out, iov[i].iov_base, iov[i].iov_len);
    out_copy(&c->net.out, S("\r\n"));
    out_hold(&c->net.out, it);
}

/* ---------------------------------------------------------------------- */
/* ms                                                                       */
/* ---------------------------------------------------------------------- */

static enum engine_mstore_mode ms_mode(enum mc_meta_mode m) {
    switch (m) {
    case MC_META_MODE_ADD: return ENGINE_MSTORE_ADD;
    case MC_META_MODE_APPEND: return ENGINE_MSTORE_APPEND;
    case MC_META_MODE_PREPEND: return ENGINE_MSTORE_PREPEND;
    case MC_META_MODE_REPLACE: return ENGINE_MSTORE_REPLACE;
    default: return ENGINE_MSTORE_SET;
    }
}

/* Appends n bytes of src to p->text; returns where they went. */
static const char *pending_put(struct meta_pending *p, size_t *used, const char *src, size_t n) {
    char *d = p->text + *used;
    memcpy(d, src, n);
    *used += n;
    return d;
}

/* Keeps what the ms answer needs (see struct meta_pending). */
static void pending_fill(struct meta_pending *p, const struct mc_meta_req *req) {
    size_t used = 0;
    p->req = *req;
    if (req->key_binary)
        p->req.key.p = p->req.keybuf;
    else
        p->req.key.p = pending_put(p, &used, req->key.p, req->key.len);
    int n = 0;
    for (int i = 0; i < req->nflags; i++) {
        struct mc_meta_flag f = req->flags[i];
        if (f.c != 'O' && f.c != 'k' && f.c != 'c')
            continue;
        /*
         * O is echoed whole and is at most MC_META_OPAQUE_MAX bytes (a
         * longer one is a parse error for ms); of k and c only the letter
         * matters, whatever follows it.
         */
        size_t len = f.c == 'O' ? f.tok.len : 1;
        if (len > MC_META_OPAQUE_MAX)
            len = MC_META_OPAQUE_MAX;
        f.tok.p = pending_put(p, &used, f.tok.p, len);
        f.tok.len = len;
        p->req.flags[n++] = f;
    }
    p->req.nflags = n;
}

/*
 * ms: the item is allocated first and the value read straight into it.
 * When no item can be had, memcached deletes the key (whatever the mode)
 * so that a failed store never leaves an older value behind, answers the
 * error (even with q) and skips the data.
 */
static void meta_ms(struct conn *c, const struct mc_meta_req *req) {
    struct engine *e = c->ctx->engine;
    enum engine_alloc_err err = ENGINE_ALLOC_OK;
    int64_t exptime = mc_meta_has(req, 'T') ? meta_time(req->ttl) : 0;
    struct item *it = engine_item_alloc(e, req->key.p, req->key.len, req->client_flags, exptime,
                                        req->vlen, &err);
    if (it != NULL && c->mpend == NULL) {
        c->mpend = malloc(sizeof(*c->mpend));
        if (c->mpend == NULL) {
            engine_item_unref(e, it);
            it = NULL;
            err = ENGINE_ALLOC_NO_MEMORY;
        }
    }
    if (it == NULL) {
        meta_error(c, err == ENGINE_ALLOC_TOO_LARGE ? MC_META_ERR_TOO_LARGE
                                                    : MC_META_ERR_NO_MEMORY);
        dispatch_alloc_failed(c, err, req->key.p, req->key.len, ENGINE_SET, true,
                              (uint64_t)req->vlen + 2);
        return;
    }
    struct meta_pending *p = c->mpend;
    pending_fill(p, req);
    p->opts = (struct engine_mstore_opts){
        .mode = ms_mode(req->mode),
        .compare = mc_meta_has(req, 'C'),
        .cas = req->cas,
        .invalidate = mc_meta_has(req, 'I'),
        .key_binary = req->key_binary,
    };
    p->cas_op = p->opts.compare && (p->opts.mode == ENGINE_MSTORE_SET ||
                                    p->opts.mode == ENGINE_MSTORE_REPLACE);
    c->nmeta = true;
    conn_nread_begin(c, it, req->vlen, true);
}

void dispatch_meta_nread_done(struct conn *c) {
    struct engine *e = c->ctx->engine;
    struct worker_counters *st = &c->ctx->st;
    struct meta_pending *p = c->mpend;
    struct item *it = c->nitem;
    c->nitem = NULL;
    c->nmeta = false;
    conn_set_state(c, CONN_PARSE);
    unsigned cls = item_clsid(it);
    STAT_INC(st->slab[cls].set_cmds);
    if (c->ncrlf[0] != '\r' || c->ncrlf[1] != '\n') {
        meta_error(c, MC_META_ERR_BAD_CHUNK);
        engine_item_unref(e, it);
        return;
    }
    struct engine_mstore_out res;
    enum engine_store_result r = engine_mstore(e, it, &p->opts, &res);
    engine_item_unref(e, it);
    struct mc_meta_item_view v = {.rc = MC_META_RC_OK};
    switch (r) {
    case ENGINE_STORED:
        if (p->cas_op)
            STAT_INC(st->slab[cls].cas_hits);
        v.cas = res.cas;
        break;
    case ENGINE_NOT_STORED:
        v.rc = MC_META_RC_NS;
        break;
    case ENGINE_EXISTS:
        if (p->cas_op)
            STAT_INC(st->slab[cls].cas_badval);
        v.rc = MC_META_RC_EX;
        break;
    case ENGINE_NOT_FOUND:
        STAT_INC(st->cas_misses);
        v.rc = MC_META_RC_NF;
        break;
    case ENGINE_STORE_NO_MEMORY:
        /* append/prepend could not build the combined item: 1.6.18 answers NS. */
        STAT_INC(st->store_no_memory);
        v.rc = MC_META_RC_NS;
        break;
    }
    meta_reply(c, &p->req, &v);
}

/* ---------------------------------------------------------------------- */
/* md, ma                                                                   */
/* ---------------------------------------------------------------------- */

/* md: I keeps the item (stale, new CAS, T applies only then); else delete. */
static void meta_md(struct conn *c, const struct mc_meta_req *req) {
    struct worker_counters *st = &c->ctx->st;
    struct engine_mdelete_opts o = {
        .compare = mc_meta_has(req, 'C'),
        .cas = req->cas,
        .invalidate = mc_meta_has(req, 'I'),
        .touch = mc_meta_has(req, 'T'),
        .touch_exptime = meta_time(req->ttl),
    };
    struct mc_meta_item_view v = {.rc = MC_META_RC_OK};
    unsigned cls;
    switch (engine_mdelete(c->ctx->engine, req->key.p, req->key.len, &o, &cls)) {
    case ENGINE_MDELETE_DELETED:
        STAT_INC(st->slab[cls].delete_hits);
        break;
    case ENGINE_MDELETE_INVALIDATED:
        break;
    case ENGINE_MDELETE_NOT_FOUND:
        STAT_INC(st->delete_misses);
        v.rc = MC_META_RC_NF;
        break;
    case ENGINE_MDELETE_EXISTS:
        STAT_INC(st->delete_misses);
        v.rc = MC_META_RC_EX;
        break;
    case ENGINE_MDELETE_NO_MEMORY:      /* [HEAD] remove_value only: not asked for */
        v.rc = MC_META_RC_NS;
        break;
    }
    meta_reply(c, req, &v);
}

/*
 * ma: as for mg, T, N and t act at their places, and an over-long opaque
 * cuts the line there (N still creates, without its TTL).
 */
static void meta_ma(struct conn *c, const struct mc_meta_req *req) {
    int late = mc_meta_late_error(req);
    bool decr = req->mode == MC_META_MODE_DECR;
    struct engine_marith_opts o = {
        .decr = decr,
        .delta = req->delta,
        .compare = mc_meta_has(req, 'C'),
        .cas = req->cas,
        .initial = req->initial,
    };
    for (int i = 0; i < req->nflags; i++) {
        unsigned at = (unsigned)i + 1;
        bool acts = late < 0 || i < late;
        switch (req->flags[i].c) {
        case 'T':
            if (acts) {
                o.touch = true;
                o.touch_exptime = meta_time(req->ttl);
                o.touch_at = at;
            }
            break;
        case 'N':
            o.vivify = true;
            o.vivify_exptime = acts ? meta_time(req->vivify_ttl) : 0;
            o.vivify_at = acts ? at : 0;
            break;
        case 't':
            o.ttl_at = at;
            break;
        default:
            break;
        }
    }
    struct engine_marith_out res;
    memset(&res, 0, sizeof(res));
    struct mc_meta_item_view v = {.rc = MC_META_RC_OK};
    switch (engine_marith(c->ctx->engine, req->key.p, req->key.len, &o, &res)) {
    case ENGINE_MARITH_OK:
        if (!res.created)
            dispatch_count_arith(c, decr, res.clsid);
        break;
    case ENGINE_MARITH_NOT_FOUND:
        dispatch_count_arith(c, decr, 0);
        v.rc = MC_META_RC_NF;
        break;
    case ENGINE_MARITH_EXISTS:
        v.rc = MC_META_RC_EX;
        break;
    case ENGINE_MARITH_NOT_STORED:
        v.rc = MC_META_RC_NS;
        break;
    case ENGINE_MARITH_NON_NUMERIC:
        meta_error(c, MC_META_ERR_NON_NUMERIC);
        return;
    case ENGINE_MARITH_NO_MEMORY:
        meta_error(c, res.created ? MC_META_ERR_VIVIFY_NO_MEMORY : MC_META_ERR_DELTA_NO_MEMORY);
        return;
    }
    char digits[24];
    size_t nd = mc_text_fmt_u64_line(digits, res.value);     /* "<n>\r\n" */
    if (v.rc == MC_META_RC_OK) {
        v.created = res.created;
        v.vlen = (uint32_t)(nd - 2);
        v.cas = res.cas;
        v.ttl = view_ttl(res.ttl);
    }
    if (meta_reply(c, req, &v))
        out_copy(&c->net.out, digits, nd);
}

/* ---------------------------------------------------------------------- */
/* me                                                                       */
/* ---------------------------------------------------------------------- */

/*
 * me prints memcached's own numbers for an item: ITEM_ntotal()
 * (storage/item_size.h) and the slab class memcached would keep it in,
 * from memcached's class table for the same -n, -f, -o slab_chunk_max and
 * -o slab_sizes (a chunked item lives under a header of its own size).
 * cellard's items and classes are laid out differently; a client
 * comparing me's answers with memcached's sees the same numbers.
 */
static unsigned mc_item_class(const struct settings *cfg, uint64_t size) {
    uint64_t sizes[64];
    unsigned n = 0;
    unsigned s = (unsigned)(MC_ITEM_HDR + cfg->chunk_size);
    while (++n < 63) {
        if (cfg->nslab_sizes > 0) {
            if ((int)n > cfg->nslab_sizes)
                break;
            s = cfg->slab_sizes[n - 1];
        } else if (s >= cfg->slab_chunk_size_max / cfg->factor) {
            break;
        }
        if (s % MC_CHUNK_ALIGN)
            s += MC_CHUNK_ALIGN - s % MC_CHUNK_ALIGN;
        sizes[n] = s;
        if (cfg->nslab_sizes == 0)
            s = (unsigned)(s * cfg->factor);
    }
    sizes[n] = (uint64_t)cfg->slab_chunk_size_max;
    for (unsigned i = 1; i <= n; i++)
        if (size <= sizes[i])
            return i;
    return n;
}

static void meta_me(struct conn *c, const struct mc_meta_req *req) {
    struct engine *e = c->ctx->engine;
    const struct settings *cfg = c->ctx->cfg;
    STAT_INC(c->ctx->st.meta_cmds);
    struct engine_mget_opts o = {.no_bump = true, .no_claim = true};
    struct engine_item_meta m;
    struct item *it = engine_mget(e, req->key.p, req->key.len, &o, &m, NULL);
    struct mc_meta_me_view v = {.hit = it != NULL};
    if (it != NULL) {
        uint64_t size = mc_item_size(item_nkey(it), item_flags(it), item_nbytes(it), cfg->use_cas);
        uint64_t head = size;
        if (size > (uint64_t)cfg->slab_chunk_size_max)
            head = MC_ITEM_HDR + item_nkey(it) + 1 + (item_flags(it) != 0 ? 4 : 0) + MC_CHUNK_HDR +
                   (cfg->use_cas ? 8 : 0);
        v.key_binary = item_key_binary(it);
        v.fetched = m.fetched;
        v.ttl = view_ttl(m.ttl);
        v.la = m.last_access;
        v.cas = item_cas(it);
        v.cls = mc_item_class(cfg, head);
        v.size = size;
        engine_item_unref(e, it);
    }
    char line[MC_META_RESP_MAX];
    size_t n = mc_meta_fmt_me(line, sizeof(line), req, &v);
    out_copy(&c->net.out, line, n);
}

/* ---------------------------------------------------------------------- */

void dispatch_meta(struct conn *c, struct mc_meta_req *req, enum mc_parse r) {
    if (r != MC_PARSE_OK) {
        meta_error(c, req->err);
        if (req->swallow > 0)
            conn_swallow(c, req->swallow);
        return;
    }
    switch (req->cmd) {
    case MC_META_MG:
        meta_mg(c, req);
        break;
    case MC_META_MS:
        meta_ms(c, req);
        break;
    case MC_META_MD:
        meta_md(c, req);
        break;
    case MC_META_MA:
        meta_ma(c, req);
        break;
    case MC_META_ME:
        meta_me(c, req);
        break;
    case MC_META_MN:
        out_copy(&c->net.out, S("MN\r\n"));
        c->mc_flush = true;         /* memcached flushes at mn */
        break;
    default:
        meta_error(c, MC_META_ERR_ERROR);
        break;
    }
}
