/*
 * dispatch.c -- text-protocol requests into engine calls, and what the
 * three protocols' dispatchers share (dispatch.h).
 *
 * A request parsed by protocol/mc_text becomes engine calls, and engine
 * results become memcached's words; dispatch_meta.c and dispatch_bin.c do
 * the same for their codecs and call back here only for the bookkeeping
 * they share (dispatch_alloc_failed(), dispatch_count_arith()).  Admin
 * commands go on to their files (stats.c, tune.c, dump.c, watch.c,
 * detail.c).  The engine, settings and counters are reached through
 * c->ctx (ctx.h).  Replies are appended to the connection's pending
 * output (net/out.h); values go out by reference, except small ones,
 * which are copied next to their VALUE line (see OUT_COPY_MAX).
 * Counters follow memcached's per-thread stats.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "net/tls.h"
#include "protocol/mc_num.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/detail.h"
#include "server/dispatch.h"
#include "server/dump.h"
#include "server/extstore.h"
#include "server/server.h"
#include "server/stats.h"
#include "server/tune.h"
#include "server/watch.h"


static void reply(struct conn *c, bool noreply, const char *s, size_t len) {
    if (!noreply)
        out_copy(&c->net.out, s, len);
}

/* cache_memlimit <megabytes>: the engine's limit, and what stats settings shows. */
__attribute__((cold)) static void set_memlimit(struct conn *c, const struct mc_req *req) {
    struct server *s = c->ctx->srv;
    uint64_t bytes = req->delta * 1024 * 1024;
    pthread_mutex_lock(&s->tune_lock);
    s->cfg->maxbytes = bytes;
    engine_set_mem_limit(s->engine, bytes);
    pthread_mutex_unlock(&s->tune_lock);
    reply(c, req->noreply, S("OK\r\n"));
}

/*
 * Appends "VALUE ...", the item's value and "\r\n".  A small value is
 * copied into scratch with its header (OUT_COPY_MAX: one iovec for many
 * values costs less than an iovec and a held reference for each); a larger
 * one goes out by reference, held until written.  Takes over the caller's
 * reference either way.
 */
static void add_value(struct conn *c, struct item *it, bool with_cas) {
    struct engine *e = c->ctx->engine;
    const char *flat = item_value_flat(it);
    uint32_t nbytes = item_nbytes(it);
    bool copy = flat != NULL && nbytes <= OUT_COPY_MAX;
    char *line = out_reserve(&c->net.out, MC_VALUE_LINE_MAX + (copy ? nbytes + 2 : 0));
    if (line == NULL) {
        engine_item_unref(e, it);
        return;
    }
    size_t n = mc_text_fmt_value(line, item_key(it), item_nkey(it), item_flags(it), nbytes,
                                 with_cas, item_cas(it));
    if (copy) {
        memcpy(line + n, flat, nbytes);
        memcpy(line + n + nbytes, "\r\n", 2);
        out_commit(&c->net.out, line, n + nbytes + 2);
        engine_item_unref(e, it);
        return;
    }
    out_commit(&c->net.out, line, n);
    if (flat != NULL) {
        out_add(&c->net.out, flat, nbytes);
    } else {
        struct iovec *iov = c->ctx->iov;
        int k = engine_item_iov(it, iov, c->ctx->iov_max);
        for (int i = 0; i < k; i++)
            out_add(&c->net.out, iov[i].iov_base, iov[i].iov_len);
    }
    out_copy(&c->net.out, S("\r\n"));
    out_hold(&c->net.out, it);
}

/*
 * A small hit written straight from the cache under the key's lock
 * (engine_get_copy): its VALUE line, value and "\r\n" into room reserved
 * before, so no reference is taken and dropped, nor anything allocated
 * while the lock is held.
 */
struct value_copy {
    char *line;
    size_t len;
    bool with_cas;
    unsigned cls, lru;
};

static void value_copy(void *arg, const struct engine_hit *h) {
    struct value_copy *vc = arg;
    size_t n = mc_text_fmt_value(vc->line, h->key, h->nkey, h->flags, h->nbytes, vc->with_cas,
                                 h->cas);
    memcpy(vc->line + n, h->value, h->nbytes);
    memcpy(vc->line + n + h->nbytes, "\r\n", 2);
    vc->len = n + h->nbytes + 2;
    vc->cls = h->clsid;
    vc->lru = h->lru;
}

/*
 * Out of line on purpose: inlined into dispatch_text() (LTO does so when
 * the switch grows), add_value() stopped being inlined here and a 10-key
 * get cost ~190 more instructions (callgrind, w2 depth 1).
 */
__attribute__((noinline)) static void do_get(struct conn *c, struct mc_req *req) {
    struct engine *e = c->ctx->engine;
    struct worker_counters *st = &c->ctx->st;
    bool with_cas = req->cmd == MC_CMD_GETS || req->cmd == MC_CMD_GATS;
    bool touch = req->cmd == MC_CMD_GAT || req->cmd == MC_CMD_GATS;
    bool detail = detail_on(c->ctx->srv);
    struct mc_span rest = req->keys, key;
    uint64_t hv;
    struct value_copy vc = {.with_cas = with_cas};
    while (conn_next_key(c, &rest, &key, &hv)) {
        struct item *it;
        bool copied = false;
        enum engine_miss why;
        if (touch) {
            it = engine_get_touch(e, key.p, key.len, req->exptime, &why);
        } else {
            vc.line = out_reserve(&c->net.out, MC_VALUE_LINE_MAX + OUT_COPY_MAX + 2);
            it = vc.line != NULL ? engine_get_copy(e, key.p, key.len, hv, OUT_COPY_MAX,
                                                   value_copy, &vc, &copied, &why)
                                 : engine_get_hashed(e, key.p, key.len, hv, &why);
        }
        if (__builtin_expect(it == NULL && !copied && why == ENGINE_MISS_NOMEM, 0)) {
            /* a value on flash with no memory to read it into: memcached's
               answer, in place of the rest (it also drops the VALUEs before) */
            out_copy(&c->net.out, S("SERVER_ERROR out of memory writing get response\r\n"));
            c->mc_flush = true;
            return;
        }
        if (copied) {
            if (detail)
                detail_count(c->ctx->srv, key.p, key.len, DETAIL_GET, true);
            STAT_INC(st->slab[vc.cls].lru_hits[vc.lru]);
            STAT_INC(st->get_cmds);
            out_commit(&c->net.out, vc.line, vc.len);
            continue;
        }
        if (detail)
            detail_count(c->ctx->srv, key.p, key.len, DETAIL_GET, it != NULL);
        /* memcached counts a gat or gats only as a touch */
        if (it != NULL) {
            unsigned cls = item_clsid(it);
            if (touch)
                STAT_INC(st->slab[cls].touch_hits);
            else
                STAT_HIT(st, e, it, cls);
            add_value(c, it, with_cas);
        } else if (touch) {
            STAT_INC(st->touch_misses);
        } else {
            STAT_INC(st->get_misses);
        }
        if (touch)
            STAT_INC(st->touch_cmds);
        else
            STAT_INC(st->get_cmds);
    }
    out_copy(&c->net.out, S("END\r\n"));
    c->mc_flush = true;             /* memcached writes a get's answer at once */
}

static enum engine_store_op store_op(enum mc_cmd cmd) {
    switch (cmd) {
    case MC_CMD_ADD: return ENGINE_ADD;
    case MC_CMD_REPLACE: return ENGINE_REPLACE;
    case MC_CMD_APPEND: return ENGINE_APPEND;
    case MC_CMD_PREPEND: return ENGINE_PREPEND;
    case MC_CMD_CAS: return ENGINE_CAS;
    default: return ENGINE_SET;
    }
}

/*
 * Storage commands allocate the item first and read the value straight
 * into it.  When the item cannot be had, the value is swallowed, and a
 * set also removes the old value, so a failed set never leaves stale data
 * behind (memcached does the same).
 */
static void do_store(struct conn *c, struct mc_req *req) {
    struct engine *e = c->ctx->engine;
    enum engine_alloc_err err = ENGINE_ALLOC_OK;
    if (detail_on(c->ctx->srv))
        detail_count(c->ctx->srv, req->key.p, req->key.len, DETAIL_SET, false);
    struct item *it = engine_item_alloc(e, req->key.p, req->key.len, req->flags,
                                        req->exptime, req->vlen, &err);
    if (it == NULL) {
        if (err == ENGINE_ALLOC_TOO_LARGE)
            reply(c, req->noreply, S("SERVER_ERROR object too large for cache\r\n"));
        else
            reply(c, req->noreply, S("SERVER_ERROR out of memory storing object\r\n"));
        dispatch_alloc_failed(c, err, req->key.p, req->key.len, store_op(req->cmd),
                              req->cmd == MC_CMD_SET, (uint64_t)req->vlen + 2);
        return;
    }
    c->nop = store_op(req->cmd);
    c->ncas = req->cas;
    c->nnoreply = req->noreply;
    conn_nread_begin(c, it, req->vlen, true);
}

void dispatch_alloc_failed(struct conn *c, enum engine_alloc_err err, const char *key,
                           size_t nkey, enum engine_store_op op, bool drop_old, uint64_t skip) {
    if (!c->binary) {       /* memcached counts refused stores of the text protocols only */
        if (err == ENGINE_ALLOC_TOO_LARGE)
            STAT_INC(c->ctx->st.store_too_large);
        else
            STAT_INC(c->ctx->st.store_no_memory);
    }
    watch_refused_store(c->ctx->srv, c->net.fd, key, nkey, op, err == ENGINE_ALLOC_TOO_LARGE);
    if (drop_old)
        engine_delete(c->ctx->engine, key, nkey, 0);
    conn_swallow(c, skip);
}

void dispatch_nread_done(struct conn *c) {
    struct engine *e = c->ctx->engine;
    struct worker_counters *st = &c->ctx->st;
    struct item *it = c->nitem;
    bool nr = c->nnoreply;
    c->nitem = NULL;
    conn_set_state(c, CONN_PARSE);
    unsigned cls = item_clsid(it);
    STAT_INC(st->slab[cls].set_cmds);
    if (c->ncrlf[0] != '\r' || c->ncrlf[1] != '\n') {
        reply(c, nr, S("CLIENT_ERROR bad data chunk\r\n"));
        engine_item_unref(e, it);
        return;
    }
    enum engine_store_result r = engine_store(e, it, c->nop, c->ncas, NULL);
    engine_item_unref(e, it);
    switch (r) {
    case ENGINE_STORED:
        if (c->nop == ENGINE_CAS)
            STAT_INC(st->slab[cls].cas_hits);
        reply(c, nr, S("STORED\r\n"));
        break;
    case ENGINE_NOT_STORED:
        reply(c, nr, S("NOT_STORED\r\n"));
        break;
    case ENGINE_EXISTS:
        STAT_INC(st->slab[cls].cas_badval);
        reply(c, nr, S("EXISTS\r\n"));
        break;
    case ENGINE_NOT_FOUND:
        STAT_INC(st->cas_misses);
        reply(c, nr, S("NOT_FOUND\r\n"));
        break;
    case ENGINE_STORE_NO_MEMORY:
        /* append/prepend could not build the combined item: memcached keeps the old one. */
        STAT_INC(st->store_no_memory);
        reply(c, nr, S("NOT_STORED\r\n"));
        break;
    }
}

/*
 * delete <key>, and with -o delete_hold also delete <key> <seconds>: the
 * paper's hold-off for warming a cold cluster (engine_delete_hold()), for
 * the next <seconds> an add of the key is refused.
 */
static void do_delete(struct conn *c, struct mc_req *req, uint32_t hold) {
    struct engine *e = c->ctx->engine;
    unsigned cls;
    if (detail_on(c->ctx->srv))
        detail_count(c->ctx->srv, req->key.p, req->key.len, DETAIL_DEL, false);
    if (engine_delete_hold(e, req->key.p, req->key.len, hold, &cls) == ENGINE_DELETED) {
        STAT_INC(c->ctx->st.slab[cls].delete_hits);
        reply(c, req->noreply, S("DELETED\r\n"));
    } else {
        STAT_INC(c->ctx->st.delete_misses);
        reply(c, req->noreply, S("NOT_FOUND\r\n"));
    }
}

void dispatch_count_arith(struct conn *c, bool decr, unsigned hit_cls) {
    struct worker_counters *st = &c->ctx->st;
    if (hit_cls != 0 && decr)
        STAT_INC(st->slab[hit_cls].decr_hits);
    else if (hit_cls != 0)
        STAT_INC(st->slab[hit_cls].incr_hits);
    else if (decr)
        STAT_INC(st->decr_misses);
    else
        STAT_INC(st->incr_misses);
}

static void do_arith(struct conn *c, struct mc_req *req) {
    struct engine *e = c->ctx->engine;
    bool decr = req->cmd != MC_CMD_INCR;
    struct engine_marith_opts o = {.decr = decr, .delta = req->delta};
    struct engine_marith_out res = {0};
    switch (engine_marith(e, req->key.p, req->key.len, &o, &res)) {
    case ENGINE_MARITH_OK: {
        dispatch_count_arith(c, decr, res.clsid);
        if (req->noreply)
            break;
        char *p = out_reserve(&c->net.out, 24);
        if (p != NULL)
            out_commit(&c->net.out, p, mc_text_fmt_u64_line(p, res.value));
        break;
    }
    case ENGINE_MARITH_NON_NUMERIC:
        reply(c, req->noreply, S("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"));
        break;
    case ENGINE_MARITH_NO_MEMORY:
        reply(c, req->noreply, S("SERVER_ERROR out of memory\r\n"));
        break;
    case ENGINE_MARITH_NOT_FOUND:
    case ENGINE_MARITH_EXISTS:          /* needs compare: not here */
    case ENGINE_MARITH_NOT_STORED:      /* needs vivify: not here */
        dispatch_count_arith(c, decr, 0);
        reply(c, req->noreply, S("NOT_FOUND\r\n"));
        break;
    }
}

static void do_touch(struct conn *c, struct mc_req *req) {
    struct engine *e = c->ctx->engine;
    STAT_INC(c->ctx->st.touch_cmds);
    unsigned cls = engine_touch(e, req->key.p, req->key.len, req->exptime);
    if (cls != 0) {
        STAT_INC(c->ctx->st.slab[cls].touch_hits);
        reply(c, req->noreply, S("TOUCHED\r\n"));
    } else {
        STAT_INC(c->ctx->st.touch_misses);
        reply(c, req->noreply, S("NOT_FOUND\r\n"));
    }
}

static void do_shutdown(struct conn *c, struct mc_req *req) {
    struct server *s = c->ctx->srv;
    if (!s->cfg->shutdown_command) {
        out_copy(&c->net.out, S("ERROR: shutdown not enabled\r\n"));
        return;
    }
    if (req->ntokens <= 1) {
        atomic_store(&s->net.stop, true);
        kill(getpid(), SIGUSR2);    /* wakes the acceptor */
        conn_set_state(c, CONN_CLOSING);
        return;
    }
    if (mc_req_word_is(req, 1, "graceful")) {
        kill(getpid(), SIGUSR1);    /* as memcached: the stop that saves a -e file */
        conn_set_state(c, CONN_CLOSING);
        return;
    }
    out_copy(&c->net.out, S("CLIENT_ERROR invalid shutdown mode\r\n"));
}

/*
 * lru_crawler, answered as memcached 1.6.18 answers it.  cellard's one
 * background crawl for expired items (engine_step()) stands in for
 * memcached's LRU crawler; it runs while the crawler or the maintainer is
 * on (server_crawl_runs()), and enable/disable switch it only under
 * -o no_lru_maintainer (or no_modern).  The maintainer's other reaping,
 * of dead items at the queue tails, is the engine's reap step.  crawl asks
 * the engine for a pass over the classes named (engine_crawl_request()),
 * reclaiming their dead items into the classes' crawler counters;
 * lru_crawler_running stays 1 until it is done.  sleep and tocrawl are
 * kept for `stats settings` only.
 * metadump streams its lines from the worker (dump.c).
 */
static void crawl_request(struct conn *c, struct mc_req *req) {
    uint64_t classes;
    const struct mc_span *t = &req->tok[2];
    if (!dump_classes(t->p, t->len, &classes)) {
        out_copy(&c->net.out, S("BADCLASS invalid class id\r\n"));
        return;
    }
    if (t->len == 4 && memcmp(t->p, "hash", 4) == 0) {     /* memcached: metadump only */
        out_copy(&c->net.out, S("ERROR an unknown error happened\r\n"));
        return;
    }
    switch (engine_crawl_request(c->ctx->srv->engine, classes)) {
    case ENGINE_CRAWL_OK:
        out_copy(&c->net.out, S("OK\r\n"));
        break;
    case ENGINE_CRAWL_BUSY:
        out_copy(&c->net.out, S("BUSY currently processing crawler request\r\n"));
        break;
    case ENGINE_CRAWL_NOTSTARTED:
        out_copy(&c->net.out, S("NOTSTARTED no items to crawl\r\n"));
        break;
    }
}

static void do_lru_crawler(struct conn *c, struct mc_req *req) {
    struct server *s = c->ctx->srv;
    bool on = atomic_load(&s->crawler_on);
    bool crawl = mc_req_word_is(req, 1, "crawl"), sleep = mc_req_word_is(req, 1, "sleep");
    bool enable = mc_req_word_is(req, 1, "enable");
    uint64_t v;
    if (req->ntokens == 3 && (crawl || mc_req_word_is(req, 1, "metadump"))) {
        if (!on) {
            out_copy(&c->net.out, S("CLIENT_ERROR lru crawler disabled\r\n"));
        } else if (crawl) {
            crawl_request(c, req);
        } else if (!s->cfg->dump_enabled) {
            out_copy(&c->net.out, S("ERROR metadump not allowed\r\n"));
        } else if (!out_empty(&c->net.out)) {
            /* memcached's resp_has_stack(): replies of earlier pipelined requests wait */
            out_copy(&c->net.out, S("ERROR cannot pipeline other commands before metadump\r\n"));
        } else if (c->is_udp) {
            out_copy(&c->net.out, S("CLIENT_ERROR metadump not available over UDP\r\n"));
        } else {
            const char *err = dump_start(c, req->tok[2].p, req->tok[2].len);
            if (err != NULL)
                out_copy(&c->net.out, err, strlen(err));
        }
    } else if (req->ntokens == 3 && (sleep || mc_req_word_is(req, 1, "tocrawl"))) {
        if (!mc_num_u64(req->tok[2].p, req->tok[2].len, &v)) {
            out_copy(&c->net.out, S("CLIENT_ERROR bad command line format\r\n"));
        } else if (sleep && (uint32_t)v > 1000000) {
            out_copy(&c->net.out, S("CLIENT_ERROR sleep must be one second or less\r\n"));
        } else {
            atomic_store(sleep ? &s->crawler_sleep : &s->crawler_tocrawl, (uint32_t)v);
            out_copy(&c->net.out, S("OK\r\n"));
        }
    } else if (req->ntokens == 2 && (enable || mc_req_word_is(req, 1, "disable"))) {
        if (enable && on) {
            out_copy(&c->net.out, S("ERROR failed to start lru crawler thread\r\n"));
            return;
        }
        atomic_store(&s->crawler_on, enable);
        engine_set_crawl(s->engine, server_crawl_runs(s->cfg, enable));
        out_copy(&c->net.out, S("OK\r\n"));
    } else {
        out_copy(&c->net.out, S("ERROR\r\n"));
    }
}

/*
 * Administrative commands that tune memcached's background machinery
 * (slabs and lru: tune.c; extstore: extstore.c).  cache_memlimit checks its argument as memcached
 * does and changes nothing (the README says so).
 */
static void do_admin(struct conn *c, struct mc_req *req) {
    switch (req->cmd) {
    case MC_CMD_CACHE_MEMLIMIT:
        if (req->delta < 8)
            reply(c, req->noreply, S("MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n"));
        else if (req->delta > 1000000000)
            reply(c, req->noreply, S("MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n"));
        else
            set_memlimit(c, req);
        break;
    case MC_CMD_LRU:
        tune_lru(c, req);
        break;
    case MC_CMD_SLABS:
        tune_slabs(c, req);
        break;
    case MC_CMD_LRU_CRAWLER:
        do_lru_crawler(c, req);
        break;
    case MC_CMD_EXTSTORE:
        extstore_command(c, req);
        break;
    case MC_CMD_REFRESH_CERTS: {
        /* the certificates read again for connections to come; an error is not hushed */
        struct net_tls *tls = c->ctx->srv->net.tls;
        char err[600];
        if (tls == NULL) {
            out_copy(&c->net.out, S("Error TLS not enabled\r\n"));
        } else if (net_tls_refresh(tls, err, sizeof(err) - 2)) {
            reply(c, req->noreply, S("OK\r\n"));
        } else {
            size_t n = strlen(err);
            memcpy(err + n, "\r\n", 2);
            out_copy(&c->net.out, err, n + 2);
        }
        break;
    }
    case MC_CMD_WATCH:
        if (!c->ctx->cfg->watch_enabled) {
            reply(c, req->noreply, S("CLIENT_ERROR watch commands not allowed\r\n"));
            break;
        }
        watch_command(c, req);
        break;
    default:
        /* Meta lines (MC_CMD_META) never come here: worker.c hands them to dispatch_meta. */
        out_copy(&c->net.out, S("ERROR\r\n"));
        break;
    }
}

void dispatch_text_error(struct conn *c, struct mc_req *req) {
    /* cellar's extension: "delete <key> <seconds>", which memcached refuses. */
    if (req->cmd == MC_CMD_DELETE && req->err == MC_ERR_DELETE_USAGE && req->exptime > 0 &&
        c->ctx->cfg->delete_hold) {
        do_delete(c, req, (uint32_t)req->exptime);
        return;
    }
    /* memcached counts a flush_all with a bad delay (its word count was
       right), and with -F refuses it before it looks at the delay. */
    if (req->cmd == MC_CMD_FLUSH_ALL && req->err == MC_ERR_BAD_EXPTIME) {
        STAT_INC(c->ctx->st.flush_cmds);
        if (!c->ctx->cfg->flush_enabled) {
            reply(c, req->noreply, S("CLIENT_ERROR flush_all not allowed\r\n"));
            return;
        }
    }
    reply(c, req->noreply, mc_text_err_str(req->err), mc_text_err_len(req->err));
}

void dispatch_text(struct conn *c, struct mc_req *req) {
    struct server *s = c->ctx->srv;
    switch (req->cmd) {
    case MC_CMD_GET:
    case MC_CMD_GETS:
    case MC_CMD_GAT:
    case MC_CMD_GATS:
        do_get(c, req);
        break;
    case MC_CMD_SET:
    case MC_CMD_ADD:
    case MC_CMD_REPLACE:
    case MC_CMD_APPEND:
    case MC_CMD_PREPEND:
    case MC_CMD_CAS:
        do_store(c, req);
        break;
    case MC_CMD_DELETE:
        do_delete(c, req, 0);
        break;
    case MC_CMD_INCR:
    case MC_CMD_DECR:
        do_arith(c, req);
        break;
    case MC_CMD_TOUCH:
        do_touch(c, req);
        break;
    case MC_CMD_FLUSH_ALL:
        STAT_INC(c->ctx->st.flush_cmds);
        if (!s->cfg->flush_enabled) {
            reply(c, req->noreply, S("CLIENT_ERROR flush_all not allowed\r\n"));
            break;
        }
        engine_flush(s->engine, req->exptime);
        reply(c, req->noreply, S("OK\r\n"));
        break;
    case MC_CMD_VERSION:
        out_copy(&c->net.out, S("VERSION " CELLAR_MC_VERSION "\r\n"));
        break;
    case MC_CMD_VERBOSITY:
        atomic_store(&s->verbose, req->delta > 2 ? 2 : (int)req->delta);
        reply(c, req->noreply, S("OK\r\n"));
        break;
    case MC_CMD_QUIT:
        /* Replies to earlier pipelined requests still go out, then the close. */
        c->net.close_after_write = true;
        c->net.close_normal = true;
        break;
    case MC_CMD_SHUTDOWN:
        do_shutdown(c, req);
        break;
    case MC_CMD_STATS:
        stats_text(c, req);
        break;
    default:
        do_admin(c, req);
        break;
    }
}
