/*
 * dispatch_bin.c -- binary-protocol requests into engine calls.
 *
 * The binary twin of dispatch.c: a request parsed by protocol/mc_bin
 * becomes engine calls, and engine results become memcached's statuses.
 * Quiet opcodes leave out what mc_bin.h says they leave out (successes of
 * writes, misses of gets); nothing is reordered or held back, since
 * answers go out in request order with the batch's one writev anyway.
 */
#include <string.h>

#include "protocol/mc_bin.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/detail.h"
#include "server/dispatch.h"
#include "server/server.h"
#include "server/stats.h"

/* memcached writes an error answer at once (unless it swallows a body: conn_swallow()). */
static void bin_error(struct conn *c, uint8_t opcode, uint16_t status, uint32_t opaque) {
    c->mc_flush = true;
    char *p = out_reserve(&c->net.out, MC_BIN_ERROR_MAX);
    if (p != NULL)
        out_commit(&c->net.out, p, mc_bin_fmt_error(p, opcode, status, opaque));
}

static void bin_error_text(struct conn *c, uint8_t opcode, uint16_t status, uint32_t opaque,
                           const char *text) {
    size_t n = strlen(text);
    c->mc_flush = true;
    char *p = out_reserve(&c->net.out, MC_BIN_HDR_LEN + n);
    if (p != NULL)
        out_commit(&c->net.out, p, mc_bin_fmt_error_text(p, opcode, status, opaque, text, n));
}

/* An empty success answer (status 0), with a CAS for writes. */
static void bin_ok(struct conn *c, uint8_t opcode, uint32_t opaque, uint64_t cas) {
    char *p = out_reserve(&c->net.out, MC_BIN_HDR_LEN);
    if (p != NULL)
        out_commit(&c->net.out, p, mc_bin_fmt_header(p, opcode, 0, 0, 0, 0, opaque, cas));
}

static void bin_get(struct conn *c, struct mc_bin_req *r) {
    struct engine *e = c->ctx->engine;
    struct worker_counters *st = &c->ctx->st;
    bool touch = r->cmd == MC_BIN_OP_GAT || r->cmd == MC_BIN_OP_GATK || r->cmd == MC_BIN_OP_TOUCH;
    bool with_key = r->cmd == MC_BIN_OP_GETK || r->cmd == MC_BIN_OP_GATK;
    struct item *it = touch ? engine_get_touch(e, r->key.p, r->key.len, r->exptime, NULL)
                            : engine_get(e, r->key.p, r->key.len, NULL);
    if (detail_on(c->ctx->srv))       /* memcached counts a binary touch as a get here */
        detail_count(c->ctx->srv, r->key.p, r->key.len, DETAIL_GET, it != NULL);
    /* memcached counts GAT and GATK (and TOUCH) only as touches */
    if (touch)
        STAT_INC(st->touch_cmds);
    else
        STAT_INC(st->get_cmds);
    if (it == NULL) {
        if (touch)
            STAT_INC(st->touch_misses);
        else
            STAT_INC(st->get_misses);
        if (r->quiet)
            return;
        if (with_key) {
            char *p = out_reserve(&c->net.out, MC_BIN_HDR_LEN + r->key.len);
            if (p != NULL)
                out_commit(&c->net.out, p, mc_bin_fmt_getk_miss(p, r->opcode, r->opaque, r->key.p,
                                                            (uint16_t)r->key.len));
        } else {
            bin_error(c, r->opcode, MC_BIN_ST_KEY_ENOENT, r->opaque);
        }
        return;
    }
    unsigned cls = item_clsid(it);
    if (touch)
        STAT_INC(st->slab[cls].touch_hits);
    else
        STAT_HIT(st, e, it, cls);
    uint32_t nvalue = r->cmd == MC_BIN_OP_TOUCH ? 0 : item_nbytes(it);
    char *p = out_reserve(&c->net.out, 28 + item_nkey(it));
    if (p == NULL) {
        engine_item_unref(e, it);
        return;
    }
    out_commit(&c->net.out, p, mc_bin_fmt_get(p, r->opcode, r->opaque, item_cas(it), item_flags(it),
                                          with_key ? item_key(it) : NULL,
                                          (uint16_t)item_nkey(it), nvalue));
    if (nvalue > 0) {
        int k = engine_item_iov(it, c->ctx->iov, c->ctx->iov_max);
        for (int i = 0; i < k; i++)
            out_add(&c->net.out, c->ctx->iov[i].iov_base, c->ctx->iov[i].iov_len);
    }
    out_hold(&c->net.out, it);
}

static enum engine_store_op bin_store_op(const struct mc_bin_req *r) {
    switch (r->cmd) {
    case MC_BIN_OP_APPEND: return ENGINE_APPEND;
    case MC_BIN_OP_PREPEND: return ENGINE_PREPEND;
    default: break;
    }
    if (r->cas != 0)
        return ENGINE_CAS;      /* set/add/replace with a CAS compare */
    return r->cmd == MC_BIN_OP_ADD ? ENGINE_ADD
         : r->cmd == MC_BIN_OP_REPLACE ? ENGINE_REPLACE : ENGINE_SET;
}

/* Storage requests allocate the item and read the value straight into it. */
static void bin_store(struct conn *c, struct mc_bin_req *r) {
    struct engine *e = c->ctx->engine;
    bool cat = r->cmd == MC_BIN_OP_APPEND || r->cmd == MC_BIN_OP_PREPEND;
    enum engine_alloc_err err = ENGINE_ALLOC_OK;
    if (detail_on(c->ctx->srv))
        detail_count(c->ctx->srv, r->key.p, r->key.len, DETAIL_SET, false);
    struct item *it = engine_item_alloc(e, r->key.p, r->key.len, cat ? 0 : r->flags,
                                        cat ? 0 : (int64_t)r->exptime, r->vlen, &err);
    if (it == NULL) {
        if (err == ENGINE_ALLOC_TOO_LARGE)
            bin_error(c, r->opcode, MC_BIN_ST_E2BIG, r->opaque);
        else
            bin_error_text(c, r->opcode, MC_BIN_ST_ENOMEM, r->opaque, MC_BIN_OOM_ITEM);
        dispatch_alloc_failed(c, err, r->key.p, r->key.len, bin_store_op(r),
                              r->cmd == MC_BIN_OP_SET, r->vlen);
        return;
    }
    c->nop = bin_store_op(r);
    c->ncas = r->cas;
    c->nnoreply = r->quiet;
    c->bop = r->opcode;
    c->bcmd = r->cmd;
    c->bopaque = r->opaque;
    conn_nread_begin(c, it, r->vlen, false);    /* binary values carry no terminator */
}

void dispatch_bin_nread_done(struct conn *c) {
    struct engine *e = c->ctx->engine;
    struct worker_counters *st = &c->ctx->st;
    struct item *it = c->nitem;
    c->nitem = NULL;
    conn_set_state(c, CONN_PARSE);
    unsigned cls = item_clsid(it);
    STAT_INC(st->slab[cls].set_cmds);
    uint64_t cas = 0;
    enum engine_store_result res = engine_store(e, it, c->nop, c->ncas, &cas);
    engine_item_unref(e, it);
    uint16_t status = MC_BIN_ST_OK;
    switch (res) {
    case ENGINE_STORED:
        if (c->nop == ENGINE_CAS)
            STAT_INC(st->slab[cls].cas_hits);
        break;
    case ENGINE_NOT_STORED:
        status = c->bcmd == MC_BIN_OP_ADD ? MC_BIN_ST_KEY_EEXISTS
               : c->bcmd == MC_BIN_OP_REPLACE ? MC_BIN_ST_KEY_ENOENT : MC_BIN_ST_NOT_STORED;
        break;
    case ENGINE_EXISTS:         /* memcached counts CAS results of a cas only, not an append's */
        if (c->nop == ENGINE_CAS)
            STAT_INC(st->slab[cls].cas_badval);
        status = MC_BIN_ST_KEY_EEXISTS;
        break;
    case ENGINE_NOT_FOUND:
        if (c->nop == ENGINE_CAS)
            STAT_INC(st->cas_misses);
        status = MC_BIN_ST_KEY_ENOENT;
        break;
    case ENGINE_STORE_NO_MEMORY:
        STAT_INC(st->store_no_memory);
        status = MC_BIN_ST_NOT_STORED;
        break;
    }
    if (status != MC_BIN_ST_OK)
        bin_error(c, c->bop, status, c->bopaque);
    else if (!c->nnoreply)
        bin_ok(c, c->bop, c->bopaque, cas);
}

static void bin_delete(struct conn *c, struct mc_bin_req *r) {
    struct engine *e = c->ctx->engine;
    struct engine_mdelete_opts o = {.compare = r->cas != 0, .cas = r->cas};
    unsigned cls;
    if (detail_on(c->ctx->srv))
        detail_count(c->ctx->srv, r->key.p, r->key.len, DETAIL_DEL, false);
    switch (engine_mdelete(e, r->key.p, r->key.len, &o, &cls)) {
    case ENGINE_MDELETE_DELETED:
        STAT_INC(c->ctx->st.slab[cls].delete_hits);
        if (!r->quiet)
            bin_ok(c, r->opcode, r->opaque, 0);
        break;
    case ENGINE_MDELETE_EXISTS:
        bin_error(c, r->opcode, MC_BIN_ST_KEY_EEXISTS, r->opaque);
        break;
    case ENGINE_MDELETE_NOT_FOUND:
    case ENGINE_MDELETE_INVALIDATED:    /* needs invalidate: not here */
    case ENGINE_MDELETE_NO_MEMORY:      /* needs remove_value: not here */
        STAT_INC(c->ctx->st.delete_misses);
        bin_error(c, r->opcode, MC_BIN_ST_KEY_ENOENT, r->opaque);
        break;
    }
}

/*
 * incr/decr: a miss creates the key with `initial` (delta not applied)
 * unless exptime is 0xffffffff; a header CAS must match.  The engine's
 * meta arithmetic does all of it under one item lock.
 */
static void bin_arith(struct conn *c, struct mc_bin_req *r) {
    bool decr = r->cmd == MC_BIN_OP_DECREMENT;
    struct engine_marith_opts o = {
        .decr = decr,
        .delta = r->delta,
        .compare = r->cas != 0,
        .cas = r->cas,
        .vivify = r->exptime != MC_BIN_EXPTIME_NO_CREATE,
        .vivify_exptime = r->exptime,
        .initial = r->initial,
    };
    struct engine_marith_out res;
    memset(&res, 0, sizeof(res));
    switch (engine_marith(c->ctx->engine, r->key.p, r->key.len, &o, &res)) {
    case ENGINE_MARITH_OK: {
        if (!res.created)   /* memcached counts a create from the initial value nowhere */
            dispatch_count_arith(c, decr, res.clsid);
        if (r->quiet)
            break;
        char *p = out_reserve(&c->net.out, MC_BIN_INCR_LEN);
        if (p != NULL)
            out_commit(&c->net.out, p, mc_bin_fmt_incr(p, r->opcode, r->opaque, res.cas, res.value));
        break;
    }
    case ENGINE_MARITH_NOT_FOUND:
        dispatch_count_arith(c, decr, 0);
        bin_error(c, r->opcode, MC_BIN_ST_KEY_ENOENT, r->opaque);
        break;
    case ENGINE_MARITH_EXISTS:
        bin_error(c, r->opcode, MC_BIN_ST_KEY_EEXISTS, r->opaque);
        break;
    case ENGINE_MARITH_NON_NUMERIC:
        bin_error(c, r->opcode, MC_BIN_ST_DELTA_BADVAL, r->opaque);
        break;
    case ENGINE_MARITH_NOT_STORED:
        bin_error(c, r->opcode, MC_BIN_ST_NOT_STORED, r->opaque);
        break;
    case ENGINE_MARITH_NO_MEMORY:
        bin_error_text(c, r->opcode, MC_BIN_ST_ENOMEM, r->opaque,
                       res.created ? MC_BIN_OOM_NEW_ITEM : MC_BIN_OOM_INCR);
        break;
    }
}

static bool has_prefix(const struct mc_span *s, const char *lit) {
    size_t n = strlen(lit);
    return s->len >= n && memcmp(s->p, lit, n) == 0;
}

/*
 * STAT: one packet per stat, then an empty one.  Like memcached, the
 * group is matched as a prefix for "settings" and "reset", exactly for the
 * others; an unknown group is "Not found" with no terminator.
 */
static void bin_stat(struct conn *c, struct mc_bin_req *r) {
    struct stat_sink k = {.emit = stats_emit, .c = c, .binary = true, .opaque = r->opaque};
    const char *sub = r->key.p;
    size_t len = r->key.len;
    if (has_prefix(&r->key, "settings")) {
        len = 8;
    } else if (has_prefix(&r->key, "reset")) {
        len = 5;
    } else if (has_prefix(&r->key, "detail")) {
        /* FIXME: per-prefix detail stats are not collected yet. */
        stats_emit(&k, "", "");     /* just the terminator */
        return;
    }
    if (stats_run(c, &k, sub, len) == STATS_UNKNOWN) {
        bin_error(c, r->opcode, MC_BIN_ST_KEY_ENOENT, r->opaque);
        return;
    }
    char *p = out_reserve(&c->net.out, MC_BIN_HDR_LEN);
    if (p != NULL)
        out_commit(&c->net.out, p, mc_bin_fmt_stat(p, r->opaque, NULL, 0, NULL, 0));
}

void dispatch_bin(struct conn *c, struct mc_bin_req *r) {
    struct server *s = c->ctx->srv;
    switch (r->cmd) {
    case MC_BIN_OP_GET:
    case MC_BIN_OP_GETK:
    case MC_BIN_OP_GAT:
    case MC_BIN_OP_GATK:
    case MC_BIN_OP_TOUCH:
        bin_get(c, r);
        break;
    case MC_BIN_OP_SET:
    case MC_BIN_OP_ADD:
    case MC_BIN_OP_REPLACE:
    case MC_BIN_OP_APPEND:
    case MC_BIN_OP_PREPEND:
        bin_store(c, r);
        break;
    case MC_BIN_OP_DELETE:
        bin_delete(c, r);
        break;
    case MC_BIN_OP_INCREMENT:
    case MC_BIN_OP_DECREMENT:
        bin_arith(c, r);
        break;
    case MC_BIN_OP_QUIT:
        if (!r->quiet)
            bin_ok(c, r->opcode, r->opaque, 0);
        c->net.close_after_write = true;
        c->net.close_normal = true;
        break;
    case MC_BIN_OP_FLUSH:
        STAT_INC(c->ctx->st.flush_cmds);
        if (!s->cfg->flush_enabled) {
            bin_error(c, r->opcode, MC_BIN_ST_AUTH_ERROR, r->opaque);
            break;
        }
        engine_flush(s->engine, (int64_t)r->exptime);
        if (!r->quiet)
            bin_ok(c, r->opcode, r->opaque, 0);
        break;
    case MC_BIN_OP_NOOP:
        bin_ok(c, r->opcode, r->opaque, 0);
        c->mc_flush = true;         /* memcached flushes at a noop */
        break;
    case MC_BIN_OP_VERSION: {
        static const char v[] = CELLAR_MC_VERSION;
        char *p = out_reserve(&c->net.out, MC_BIN_HDR_LEN + sizeof(v) - 1);
        if (p != NULL) {
            size_t n = mc_bin_fmt_header(p, r->opcode, 0, 0, 0, sizeof(v) - 1, r->opaque, 0);
            memcpy(p + n, v, sizeof(v) - 1);
            out_commit(&c->net.out, p, n + sizeof(v) - 1);
        }
        break;
    }
    case MC_BIN_OP_STAT:
        bin_stat(c, r);
        break;
    default:
        bin_error(c, r->opcode, MC_BIN_ST_UNKNOWN_COMMAND, r->opaque);
        break;
    }
}

/* A request the codec refused: memcached's status, then skip and maybe close. */
void dispatch_bin_error(struct conn *c, struct mc_bin_req *r) {
    bin_error(c, r->opcode, r->status, r->opaque);
    if (r->swallow > 0)
        conn_swallow(c, r->swallow);
    if (r->close)
        c->net.close_after_write = true;
}
