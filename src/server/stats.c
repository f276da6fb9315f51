/*
 * stats.c -- the `stats` family, with memcached's names, order and meaning.
 *
 * Counters live per worker (stats.h) and in the engine; this file sums
 * them when asked and prints "STAT <name> <value>" lines into the asking
 * connection's output.  `stats reset` does not write into other workers'
 * counters (that would race their single-writer updates): it records a
 * baseline that later reports subtract.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "net/tls.h"
#include "protocol/mc_stat.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/detail.h"
#include "server/dump.h"
#include "server/extstore.h"
#include "server/server.h"
#include "server/stats.h"
#include "server/watch.h"
#include "server/worker.h"
#include "storage/item_size.h"


static uint64_t slab_get_hits(const struct slab_counters *sc) {
    uint64_t n = 0;
    for (int l = 0; l < EVICT_NLRU; l++)
        n += STAT_GET(sc->lru_hits[l]);
    return n;
}

static void raw_sum(struct server *s, struct worker_counters *out, bool base) {
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < s->nworkers; i++) {
        struct worker_counters *w = base ? &s->workers[i].base : &s->workers[i].ctx.st;
#define X(n) out->n += STAT_GET(w->n);
        WORKER_STATS(X)
#undef X
#define X(n) out->net.n += STAT_GET(w->net.n);
        NET_STATS(X)
#undef X
        for (int k = 0; k < ENGINE_MAX_CLASSES; k++) {
#define X(n) out->slab[k].n += STAT_GET(w->slab[k].n);
            SLAB_STATS(X)
#undef X
            for (int l = 0; l < EVICT_NLRU; l++)
                out->slab[k].lru_hits[l] += STAT_GET(w->slab[k].lru_hits[l]);
        }
    }
}

/* Sums every worker's counters since the last `stats reset`. */
void stats_sum(struct server *s, struct worker_counters *out) {
    struct worker_counters base;
    pthread_mutex_lock(&s->stats_lock);
    raw_sum(s, out, false);
    raw_sum(s, &base, true);
    pthread_mutex_unlock(&s->stats_lock);
#define X(n) out->n -= base.n;
    WORKER_STATS(X)
#undef X
#define X(n) out->net.n -= base.net.n;
    NET_STATS(X)
#undef X
    for (int k = 0; k < ENGINE_MAX_CLASSES; k++) {
#define X(n) out->slab[k].n -= base.slab[k].n;
        SLAB_STATS(X)
#undef X
        for (int l = 0; l < EVICT_NLRU; l++)
            out->slab[k].lru_hits[l] -= base.slab[k].lru_hits[l];
    }
}

static void stats_reset(struct server *s) {
    pthread_mutex_lock(&s->stats_lock);
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
#define X(n) atomic_store_explicit(&w->base.n, STAT_GET(w->ctx.st.n), memory_order_relaxed);
        WORKER_STATS(X)
#undef X
#define X(n) atomic_store_explicit(&w->base.net.n, STAT_GET(w->ctx.st.net.n), memory_order_relaxed);
        NET_STATS(X)
#undef X
        for (int k = 0; k < ENGINE_MAX_CLASSES; k++) {
#define X(n) atomic_store_explicit(&w->base.slab[k].n, STAT_GET(w->ctx.st.slab[k].n), \
                                   memory_order_relaxed);
            SLAB_STATS(X)
#undef X
            for (int l = 0; l < EVICT_NLRU; l++)
                atomic_store_explicit(&w->base.slab[k].lru_hits[l],
                                      STAT_GET(w->ctx.st.slab[k].lru_hits[l]), memory_order_relaxed);
        }
    }
    engine_stats_reset(s->engine);
    detail_reset(s);
    atomic_store(&s->maint_loops, 0);
    atomic_store(&s->net.total_conns, 0);
    atomic_store(&s->net.rejected_conns, 0);
    pthread_mutex_unlock(&s->stats_lock);
}

/*
 * Where stat lines go: the text protocol prints "STAT name value\r\n",
 * the binary protocol one packet per stat.  The functions below only
 * name values; the sink picks the framing.
 */
static void sink_printf(struct stat_sink *k, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sink_printf(struct stat_sink *k, const char *name, const char *fmt, ...) {
    char val[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(val, sizeof(val), fmt, ap);
    va_end(ap);
    k->emit(k, name, val);
}

/*
 * The lines of `stats`, in memcached 1.6.18's order, each declared once:
 *
 *   U(name, value)            an unsigned number
 *   F(name, fmt, args...)     a formatted value
 *   W(cond, name, value)      a number memcached shows only when cond holds
 *
 * The values read g, the figures gather_general() collects first (the
 * workers' sums, the engine's stats, the server's counts), and the
 * buffers' counts, which gather_buffers() reads where their lines start,
 * as memcached does.  Every sink
 * reads this one table: the text and binary writers (stats_run()) and
 * metrics.c's collector (stats_collect()).
 */
#define GENERAL_STATS(U, F, W)                                                          \
    F("pid", "%ld", (long)getpid())                                                     \
    U("uptime", g->now - s->started)                                                    \
    U("time", g->now)                                                                   \
    F("version", "%s", CELLAR_MC_VERSION)                                               \
    F("libevent", "%s", "none")                                                         \
    F("pointer_size", "%d", (int)(8 * sizeof(void *)))                                  \
    F("rusage_user", "%ld.%06ld", (long)g->ru.ru_utime.tv_sec,                          \
      (long)g->ru.ru_utime.tv_usec)                                                     \
    F("rusage_system", "%ld.%06ld", (long)g->ru.ru_stime.tv_sec,                        \
      (long)g->ru.ru_stime.tv_usec)                                                     \
    U("max_connections", s->cfg->maxconns)                                              \
    /* memcached counts its listeners and UDP sockets as connections, and                \
       shows one fewer current connection than it counts */                             \
    U("curr_connections", atomic_load(&s->net.curr_conns) + s->fixed_conns - 1)         \
    U("total_connections", atomic_load(&s->net.total_conns))                            \
    /* memcached lists it only with -o maxconns_fast (on by default) */                 \
    W(s->cfg->maxconns_fast, "rejected_connections", atomic_load(&s->net.rejected_conns)) \
    U("connection_structures", atomic_load(&s->net.conn_structs) + (uint64_t)s->listeners.n) \
    /* read only now: the lines above hold a block of the asking connection's output */ \
    U("response_obj_oom", gather_buffers(s, g)->ro_oom)                                 \
    U("response_obj_count", g->ro_count)                                                \
    U("response_obj_bytes", g->ro_bytes)                                                \
    U("read_buf_count", g->rb)                                                          \
    U("read_buf_bytes", g->rb * NET_RBUF_SIZE)                                          \
    U("read_buf_bytes_free", g->rb_idle * NET_RBUF_SIZE)                                \
    U("read_buf_oom", g->t.net.read_buf_oom)                                            \
    U("reserved_fds", 20)                                                               \
    U("cmd_get", g->t.get_cmds)                                                         \
    U("cmd_set", g->hits.set_cmds)                                                      \
    U("cmd_flush", g->t.flush_cmds)                                                     \
    U("cmd_touch", g->t.touch_cmds)                                                     \
    U("cmd_meta", g->t.meta_cmds)                                                       \
    U("get_hits", g->get_hits)                                                          \
    U("get_misses", g->t.get_misses)                                                    \
    U("get_expired", g->es.get_expired)                                                 \
    U("get_flushed", g->es.get_flushed)                                                 \
    /* these six and the extstore_ block: memcached's, with a flash tier only */        \
    W(g->es.ext_on, "get_extstore", g->es.get_extstore)                                 \
    W(g->es.ext_on, "get_aborted_extstore", g->t.get_aborted_extstore)                  \
    W(g->es.ext_on, "get_oom_extstore", g->es.get_oom_extstore)                         \
    W(g->es.ext_on, "recache_from_extstore", g->es.recache_from_extstore)               \
    W(g->es.ext_on, "miss_from_extstore", g->es.miss_from_extstore)                     \
    W(g->es.ext_on, "badcrc_from_extstore", g->es.badcrc_from_extstore)                 \
    U("delete_misses", g->t.delete_misses)                                              \
    U("delete_hits", g->hits.delete_hits)                                               \
    U("incr_misses", g->t.incr_misses)                                                  \
    U("incr_hits", g->hits.incr_hits)                                                   \
    U("decr_misses", g->t.decr_misses)                                                  \
    U("decr_hits", g->hits.decr_hits)                                                   \
    U("cas_misses", g->t.cas_misses)                                                    \
    U("cas_hits", g->hits.cas_hits)                                                     \
    U("cas_badval", g->hits.cas_badval)                                                 \
    U("touch_hits", g->hits.touch_hits)                                                 \
    U("touch_misses", g->t.touch_misses)                                                \
    U("store_too_large", g->t.store_too_large)                                          \
    U("store_no_memory", g->t.store_no_memory)                                          \
    U("auth_cmds", g->t.auth_cmds)                                                      \
    U("auth_errors", g->t.auth_errors)                                                  \
    W(s->cfg->idle_timeout > 0, "idle_kicks", g->t.net.idle_kicks)                      \
    U("bytes_read", g->t.net.bytes_read)                                                \
    U("bytes_written", g->t.net.bytes_written)                                          \
    U("limit_maxbytes", g->es.limit_maxbytes)                                           \
    U("accepting_conns", atomic_load(&s->accepting) ? 1 : 0)                            \
    U("listen_disabled_num", 0)                                                         \
    U("time_in_listen_disabled_us", 0)                                                  \
    U("threads", s->nworkers)                                                           \
    U("conn_yields", g->t.net.conn_yields)                                              \
    U("hash_power_level", g->es.hash_power_level)                                       \
    U("hash_bytes", g->es.hash_bytes)                                                   \
    U("hash_is_expanding", g->es.hash_is_expanding ? 1 : 0)                             \
    W(s->cfg->slab_reassign, "slab_reassign_rescues", g->es.slab_reassign_rescues)      \
    W(s->cfg->slab_reassign, "slab_reassign_chunk_rescues",                             \
      g->es.slab_reassign_chunk_rescues)                                                \
    W(s->cfg->slab_reassign, "slab_reassign_evictions_nomem",                           \
      g->es.slab_reassign_evictions_nomem)                                              \
    W(s->cfg->slab_reassign, "slab_reassign_inline_reclaim",                            \
      g->es.slab_reassign_inline_reclaim)                                               \
    W(s->cfg->slab_reassign, "slab_reassign_busy_items", g->es.slab_reassign_busy_items) \
    W(s->cfg->slab_reassign, "slab_reassign_busy_deletes",                              \
      g->es.slab_reassign_busy_deletes)                                                 \
    W(s->cfg->slab_reassign, "slab_reassign_running", g->es.slab_reassign_running ? 1 : 0) \
    W(s->cfg->slab_reassign, "slabs_moved", g->es.slabs_moved)                          \
    /* memcached lists these only while its crawler runs */                             \
    W(g->crawler_on, "lru_crawler_running", g->es.crawler_running)                      \
    W(g->crawler_on, "lru_crawler_starts", g->es.crawler_starts)                        \
    W(s->cfg->lru_maintainer_thread, "lru_maintainer_juggles",                          \
      atomic_load_explicit(&s->maint_loops, memory_order_relaxed))                      \
    U("malloc_fails", 0)                                                                \
    U("log_worker_dropped", g->wc.worker_dropped)                                       \
    U("log_worker_written", g->wc.worker_written)                                       \
    U("log_watcher_skipped", g->wc.watcher_skipped)                                     \
    U("log_watcher_sent", g->wc.watcher_sent)                                           \
    U("log_watchers", g->wc.watchers)                                                   \
    W(g->es.ext_on, "extstore_compact_lost", g->es.extstore_compact_lost)               \
    W(g->es.ext_on, "extstore_compact_rescues", g->es.extstore_compact_rescues)         \
    W(g->es.ext_on, "extstore_compact_skipped", g->es.extstore_compact_skipped)         \
    W(g->es.ext_on, "extstore_page_allocs", g->es.flash.page_allocs)                    \
    W(g->es.ext_on, "extstore_page_evictions", g->es.flash.page_evictions)              \
    W(g->es.ext_on, "extstore_page_reclaims", g->es.flash.page_reclaims)                \
    W(g->es.ext_on, "extstore_pages_free", g->es.flash.pages_free)                      \
    W(g->es.ext_on, "extstore_pages_used", g->es.flash.pages_used)                      \
    W(g->es.ext_on, "extstore_objects_evicted", g->es.flash.objects_evicted)            \
    W(g->es.ext_on, "extstore_objects_read", g->es.flash.objects_read)                  \
    W(g->es.ext_on, "extstore_objects_written", g->es.flash.objects_written)            \
    W(g->es.ext_on, "extstore_objects_used", g->es.flash.objects_used)                  \
    W(g->es.ext_on, "extstore_bytes_evicted", g->es.flash.bytes_evicted)                \
    W(g->es.ext_on, "extstore_bytes_written", g->es.flash.bytes_written)                \
    W(g->es.ext_on, "extstore_bytes_read", g->es.flash.bytes_read)                      \
    W(g->es.ext_on, "extstore_bytes_used", g->es.flash.bytes_used)                      \
    W(g->es.ext_on, "extstore_bytes_fragmented", g->es.flash.bytes_fragmented)          \
    W(g->es.ext_on, "extstore_limit_maxbytes", g->es.flash.limit_maxbytes)              \
    /* reads waiting for an IO thread: none, the engine reads in the worker */          \
    W(g->es.ext_on, "extstore_io_queue", 0)                                             \
    /* TLS: memcached lists these only with -Z, the first only with a session cache */  \
    W(s->net.tls && s->cfg->ssl_session_cache, "ssl_new_sessions",                      \
      net_tls_new_sessions(s->net.tls))                                                 \
    W(s->net.tls, "ssl_handshake_errors", net_tls_handshake_errors(s->net.tls))         \
    W(s->net.tls, "time_since_server_cert_refresh",                                     \
      (uint64_t)(time(NULL) - net_tls_refreshed(s->net.tls)))                           \
    U("unexpected_napi_ids", 0)                                                         \
    U("round_robin_fallback", 0)                                                        \
    U("bytes", g->es.bytes)                                                             \
    U("curr_items", g->es.curr_items)                                                   \
    U("total_items", g->es.total_items)                                                 \
    U("slab_global_page_pool", g->es.slab_global_page_pool)                             \
    U("expired_unfetched", g->es.expired_unfetched)                                     \
    U("evicted_unfetched", g->es.evicted_unfetched)                                     \
    /* this and the LRU moves: memcached lists them only with its LRU maintainer on */  \
    W(s->cfg->lru_maintainer_thread, "evicted_active", g->es.evicted_active)            \
    U("evictions", g->es.evictions)                                                     \
    U("reclaimed", g->es.reclaimed)                                                     \
    U("crawler_reclaimed", g->es.crawler_reclaimed)                                     \
    U("crawler_items_checked", g->es.crawler_items_checked)                             \
    U("lrutail_reflocked", 0)                                                           \
    W(s->cfg->lru_maintainer_thread, "moves_to_cold", g->es.moves_to_cold)              \
    W(s->cfg->lru_maintainer_thread, "moves_to_warm", g->es.moves_to_warm)              \
    W(s->cfg->lru_maintainer_thread, "moves_within_lru", g->es.moves_within_lru)        \
    W(s->cfg->lru_maintainer_thread, "direct_reclaims", 0)                              \
    W(s->cfg->lru_maintainer_thread, "lru_bumps_dropped", 0)

/* What the general lines are made of, gathered before any is written. */
struct general {
    struct worker_counters t;       /* the workers' counters since `stats reset` */
    struct engine_stats es;
    struct slab_totals {            /* the per-class counters summed over classes */
#define X(n) uint64_t n;
        SLAB_STATS(X)
#undef X
    } hits;
    uint64_t get_hits;
    struct rusage ru;
    uint32_t now;
    bool crawler_on;
    uint64_t ro_oom, ro_count, ro_bytes, rb, rb_idle;
    struct watch_counts wc;
};

static void gather_general(struct server *s, struct general *g) {
    memset(g, 0, sizeof(*g));
    stats_sum(s, &g->t);
    engine_stats(s->engine, &g->es);
    for (int k = 0; k < ENGINE_MAX_CLASSES; k++) {
        g->get_hits += slab_get_hits(&g->t.slab[k]);
#define X(n) g->hits.n += g->t.slab[k].n;
        SLAB_STATS(X)
#undef X
    }
    getrusage(RUSAGE_SELF, &g->ru);
    g->now = engine_clock(s->engine);
    g->crawler_on = atomic_load(&s->crawler_on);
    watch_stats(s, &g->wc);
}

static struct general *gather_buffers(struct server *s, struct general *g) {
    /* memcached's response objects are the reply scratch blocks here, its
       read buffers the workers' read buffers (16 KB each, as memcached's),
       the io_uring back end's receive buffers among them */
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        g->ro_oom += STAT_GET(w->net.outpool.oom);
        /* blocks of the usual size out of the pool; larger ones are counted in bytes only */
        uint64_t blocks = STAT_GET(w->net.outpool.blocks), pooled = STAT_GET(w->net.outpool.n);
        g->ro_count += blocks > pooled ? blocks - pooled : 0;    /* read apart: may cross */
        g->ro_bytes += STAT_GET(w->net.outpool.bytes);
        g->rb += STAT_GET(w->net.rbufs);
        g->rb_idle += STAT_GET(w->net.rbufs_idle) + STAT_GET(w->net.rbufs_ring);
    }
    return g;
}

#define STAT_U(name, v) sink_printf(o, name, "%llu", (unsigned long long)(v))
#define STAT_F(name, ...) sink_printf(o, name, __VA_ARGS__);
#define STAT_LINE_U(name, v) STAT_U(name, v);
#define STAT_LINE_W(cond, name, v) if (cond) STAT_U(name, v);

static void stats_general(struct server *s, struct stat_sink *o) {
    struct general gs, *g = &gs;
    gather_general(s, g);
    GENERAL_STATS(STAT_LINE_U, STAT_F, STAT_LINE_W)
}

/* Settings a client can change at run time are printed from their live value. */
static void emit_setting(void *ctx, const char *name, const char *value) {
    struct stat_sink *k = ctx;
    if (strcmp(name, "verbosity") == 0)
        sink_printf(k, "verbosity", "%d", atomic_load(&k->c->ctx->srv->verbose));
    else if (strcmp(name, "detail_enabled") == 0)     /* stats detail on|off */
        k->emit(k, name, atomic_load(&k->c->ctx->srv->detail_on) ? "yes" : "no");
    else if (strcmp(name, "lru_crawler") == 0)    /* these three: the lru_crawler command */
        k->emit(k, name, atomic_load(&k->c->ctx->srv->crawler_on) ? "yes" : "no");
    else if (strcmp(name, "lru_crawler_sleep") == 0)
        sink_printf(k, name, "%u", atomic_load(&k->c->ctx->srv->crawler_sleep));
    else if (strcmp(name, "lru_crawler_tocrawl") == 0)
        sink_printf(k, name, "%u", atomic_load(&k->c->ctx->srv->crawler_tocrawl));
    else
        k->emit(k, name, value);
}

/*
 * `stats items`: per class with items, "items:<class>:<name>", in
 * memcached's order.  cs is the engine's figures for the class, sc the
 * workers' counters for it.  As memcached, the segments' lines, evicted_active
 * and the moves and hits come only with the LRU maintainer, and number_temp
 * only with temp_lru.
 */
#define ITEMS_STATS_SEG(X)                                                              \
    X("number_hot", cs.seg.number[EVICT_HOT])                                           \
    X("number_warm", cs.seg.number[EVICT_WARM])                                         \
    X("number_cold", cs.seg.number[EVICT_COLD])
#define ITEMS_STATS_AGES(X)                                                             \
    X("age_hot", cs.seg.age_hot)                                                        \
    X("age_warm", cs.seg.age_warm)
#define ITEMS_STATS(X)                                                                  \
    X("age", cs.age)                                                                    \
    X("mem_requested", cs.mem_requested)                                                \
    X("evicted", cs.evicted)                                                            \
    X("evicted_nonzero", cs.evicted_nonzero)                                            \
    X("evicted_time", cs.evicted_time)                                                  \
    X("outofmemory", cs.outofmemory)                                                    \
    X("tailrepairs", 0)                                                                 \
    X("reclaimed", cs.reclaimed)                                                        \
    X("expired_unfetched", cs.expired_unfetched)                                        \
    X("evicted_unfetched", cs.evicted_unfetched)
#define ITEMS_STATS_CRAWL(X)                                                            \
    X("crawler_reclaimed", cs.crawler_reclaimed)                                        \
    X("crawler_items_checked", cs.crawler_items_checked)                                \
    X("lrutail_reflocked", 0)
#define ITEMS_STATS_MAINT(X)                                                            \
    X("moves_to_cold", cs.seg.moves_to_cold)                                            \
    X("moves_to_warm", cs.seg.moves_to_warm)                                            \
    X("moves_within_lru", cs.seg.moves_within_lru)                                      \
    X("direct_reclaims", 0)                                                             \
    X("hits_to_hot", STAT_GET(sc->lru_hits[EVICT_HOT]))                                 \
    X("hits_to_warm", STAT_GET(sc->lru_hits[EVICT_WARM]))                               \
    X("hits_to_cold", STAT_GET(sc->lru_hits[EVICT_COLD]))                               \
    X("hits_to_temp", STAT_GET(sc->lru_hits[EVICT_TEMP]))

/* `stats slabs`: per class with pages, "<class>:<name>", then the totals below. */
#define SLABS_STATS(X)                                                                  \
    X("chunk_size", cs.chunk_size)                                                      \
    X("chunks_per_page", cs.chunks_per_page)                                            \
    X("total_pages", cs.total_pages)                                                    \
    X("total_chunks", cs.total_chunks)                                                  \
    X("used_chunks", cs.used_chunks)                                                    \
    X("free_chunks", cs.free_chunks)                                                    \
    X("free_chunks_end", cs.free_chunks_end)                                            \
    X("get_hits", slab_get_hits(sc))                                                    \
    X("cmd_set", STAT_GET(sc->set_cmds))                                                \
    X("delete_hits", STAT_GET(sc->delete_hits))                                         \
    X("incr_hits", STAT_GET(sc->incr_hits))                                             \
    X("decr_hits", STAT_GET(sc->decr_hits))                                             \
    X("cas_hits", STAT_GET(sc->cas_hits))                                               \
    X("cas_badval", STAT_GET(sc->cas_badval))                                           \
    X("touch_hits", STAT_GET(sc->touch_hits))

/* `stats slabs`: the lines after the classes' (es: the engine's stats). */
#define SLABS_TOTAL_STATS(X)                                                            \
    X("active_slabs", es.active_slabs)                                                  \
    X("total_malloced", es.total_malloced)

/* One line of a class: "<prefix><class>:<name> <value>". */
static void class_line(struct stat_sink *o, const char *prefix, unsigned id, const char *name,
                       uint64_t v) {
    char n[64];
    snprintf(n, sizeof(n), "%s%u:%s", prefix, id, name);
    sink_printf(o, n, "%llu", (unsigned long long)v);
}

static void stats_items(struct server *s, struct stat_sink *o) {
    struct engine *e = s->engine;
    struct worker_counters t;
    stats_sum(s, &t);
    unsigned n = engine_nclasses(e);
    for (unsigned id = 1; id <= n; id++) {
        struct engine_class_stats cs;
        if (!engine_class_stats(e, id, &cs) || cs.number == 0)
            continue;
        const struct slab_counters *sc = &t.slab[id < ENGINE_MAX_CLASSES ? id : 0];
#define X(name, v) class_line(o, "items:", id, name, (v));
        X("number", cs.number)
        if (s->cfg->lru_maintainer_thread) {
            ITEMS_STATS_SEG(X)
            if (s->cfg->temp_lru)
                X("number_temp", cs.seg.number[EVICT_TEMP])
            ITEMS_STATS_AGES(X)
        }
        ITEMS_STATS(X)
        if (s->cfg->lru_maintainer_thread)
            X("evicted_active", cs.evicted_active)
        ITEMS_STATS_CRAWL(X)
        if (s->cfg->lru_maintainer_thread) {
            ITEMS_STATS_MAINT(X)
        }
#undef X
    }
}

static void stats_slabs(struct server *s, struct stat_sink *o) {
    struct engine *e = s->engine;
    struct worker_counters t;
    stats_sum(s, &t);
    unsigned n = engine_nclasses(e);
    for (unsigned id = 1; id <= n; id++) {
        struct engine_class_stats cs;
        if (!engine_class_stats(e, id, &cs) || cs.total_pages == 0)
            continue;
        const struct slab_counters *sc = &t.slab[id < ENGINE_MAX_CLASSES ? id : 0];
#define X(name, v) class_line(o, "", id, name, (v));
        SLABS_STATS(X)
#undef X
    }
    struct engine_stats es;
    engine_stats(e, &es);
#define X(name, v) STAT_U(name, v);
    SLABS_TOTAL_STATS(X)
#undef X
}

/* memcached's text for an address: "tcp:1.2.3.4:11211", "udp6:[::1]:11211", "unix:/path". */
static void addr_name(const struct sockaddr_storage *ss, socklen_t len, const char *proto,
                      char *buf, size_t n) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)ss;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
        snprintf(buf, n, "%s:%s:%u", proto, ip, ntohs(a->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const void *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
        snprintf(buf, n, "%s6:[%s]:%u", proto, ip, ntohs(a->sin6_port));
    } else if (ss->ss_family == AF_UNIX && len > sizeof(sa_family_t)) {
        const struct sockaddr_un *a = (const void *)ss;
        snprintf(buf, n, "unix:%s", a->sun_path);
    } else {
        snprintf(buf, n, "?:<AF %d>", (int)ss->ss_family);
    }
}

/*
 * memcached's name for a connection's state.  Between requests memcached
 * leaves a connection in conn_read while it waits for bytes; only the one
 * running a command (here: the one asking) is in conn_parse_cmd.
 */
static const char *state_name(int st, bool asking) {
    switch (st) {
    case CONN_NREAD: return "conn_nread";
    case CONN_SWALLOW: return "conn_swallow";
    case CONN_DUMP: return "conn_watch";        /* memcached's state for a metadump */
    case CONN_WATCH: return "conn_watch";
    case CONN_CLOSING: return "conn_closing";
    default: return asking ? "conn_parse_cmd" : "conn_read";
    }
}

static int by_fd(const void *a, const void *b) {
    int x = (*(struct net_conn *const *)a)->fd, y = (*(struct net_conn *const *)b)->fd;
    return (x > y) - (x < y);
}

/* One connection's lines. */
static void conn_lines(struct server *s, struct conn *c, struct conn *k, uint32_t now,
                       struct stat_sink *o) {
    char n[64], name[160];
    if (k->is_udp) {
        /* memcached: a UDP socket waiting for a datagram shows its own address */
        struct sockaddr_storage self;
        socklen_t len = sizeof(self);
        if (getsockname(k->net.fd, (struct sockaddr *)&self, &len) != 0)
            len = 0, self.ss_family = AF_UNSPEC;
        addr_name(&self, len, "udp", name, sizeof(name));
        snprintf(n, sizeof(n), "%d:UDP", k->net.fd);
        o->emit(o, n, "UDP");
    } else {
        addr_name(&k->net.peer, k->net.peerlen, "tcp", name, sizeof(name));
    }
    snprintf(n, sizeof(n), "%d:addr", k->net.fd);
    o->emit(o, n, name);
    for (int j = 0; j < s->listeners.n; j++) {
        if (s->listeners.l[j].fd == k->net.listen_fd) {
            snprintf(n, sizeof(n), "%d:listen_addr", k->net.fd);
            o->emit(o, n, s->listeners.l[j].name);
        }
    }
    snprintf(n, sizeof(n), "%d:state", k->net.fd);
    o->emit(o, n, k->is_udp ? "conn_read"
                            : state_name(atomic_load_explicit(&k->net.state,
                                                              memory_order_relaxed),
                                         k == c));
    snprintf(n, sizeof(n), "%d:secs_since_last_cmd", k->net.fd);
    sink_printf(o, n, "%u", now - atomic_load_explicit(&k->net.last_active,
                                                       memory_order_relaxed));
}

/*
 * `stats conns`: the listeners, then every connection in the order of its
 * descriptor, as memcached walks its table (the asker is usually last).
 * Every worker's list is held for the walk, taken in worker order.
 */
static void stats_conns(struct conn *c, struct stat_sink *o) {
    struct server *s = c->ctx->srv;
    char n[64];
    uint32_t now = engine_clock(s->engine);
    for (int i = 0; i < s->listeners.n; i++) {
        snprintf(n, sizeof(n), "%d:addr", s->listeners.l[i].fd);
        o->emit(o, n, s->listeners.l[i].name);
        snprintf(n, sizeof(n), "%d:state", s->listeners.l[i].fd);
        o->emit(o, n, "conn_listening");
        snprintf(n, sizeof(n), "%d:secs_since_last_cmd", s->listeners.l[i].fd);
        sink_printf(o, n, "%u", now - s->started);
    }
    size_t total = 0, k = 0;
    for (int i = 0; i < s->nworkers; i++) {
        pthread_mutex_lock(&s->workers[i].net.conns_lock);
        for (struct net_conn *nk = s->workers[i].net.conns; nk != NULL; nk = nk->next)
            total++;
    }
    struct net_conn **all = malloc((total ? total : 1) * sizeof(*all));
    for (int i = 0; i < s->nworkers && all != NULL; i++)
        for (struct net_conn *nk = s->workers[i].net.conns; nk != NULL; nk = nk->next)
            all[k++] = nk;
    if (all != NULL) {
        qsort(all, k, sizeof(*all), by_fd);
        for (size_t i = 0; i < k; i++)
            conn_lines(s, c, (struct conn *)all[i], now, o);
    }
    for (int i = s->nworkers - 1; i >= 0; i--)
        pthread_mutex_unlock(&s->workers[i].net.conns_lock);
    free(all);
}


/* A line of either protocol onto the asking connection (protocol/mc_stat.h). */
void stats_emit(struct stat_sink *k, const char *name, const char *val) {
    size_t nn = strlen(name), nv = strlen(val);
    char *p = out_reserve(&k->c->net.out, MC_STAT_MAX(nn, nv));
    if (p != NULL)
        out_commit(&k->c->net.out, p, mc_stat_fmt(p, k->binary, k->opaque, name, nn, val, nv));
}

/*
 * Runs one stats group for either protocol.  Returns false when the group
 * is unknown.  sub is the group name (empty for the general stats).
 */
static void size_line(void *arg, uint64_t bytes, uint64_t count) {
    struct stat_sink *k = arg;
    char name[24], val[24];
    snprintf(name, sizeof(name), "%" PRIu64, bytes);
    snprintf(val, sizeof(val), "%" PRIu64, count);
    k->emit(k, name, val);
}

/* Item sizes as memcached counts them: its header and terminators are the base. */
bool stats_sizes_start(struct server *s) {
    return engine_sizes_enable(s->engine, (unsigned)mc_item_size(0, 0, 0, s->cfg->use_cas));
}

/*
 * The read-only groups for a reader that is not a connection (metrics.c's
 * thread): the same functions, so the same names and values as `stats`.
 */
bool stats_collect(struct server *s, struct stat_sink *k, const char *group) {
    if (group[0] == '\0')
        stats_general(s, k);
    else if (strcmp(group, "items") == 0)
        stats_items(s, k);
    else if (strcmp(group, "slabs") == 0)
        stats_slabs(s, k);
    else
        return false;
    return true;
}

enum stats_group stats_run(struct conn *c, struct stat_sink *k, const char *sub, size_t len) {
    struct server *s = c->ctx->srv;
#define IS(lit) (len == sizeof(lit) - 1 && memcmp(sub, lit, len) == 0)
    if (len == 0) {
        stats_general(s, k);
    } else if (IS("reset")) {
        stats_reset(s);
        return STATS_RESET;
    } else if (IS("settings")) {
        pthread_mutex_lock(&s->tune_lock);         /* slabs / lru change some (tune.c) */
        settings_each_stat(s->cfg, emit_setting, k);
        pthread_mutex_unlock(&s->tune_lock);
    } else if (IS("items")) {
        stats_items(s, k);
    } else if (IS("slabs")) {
        stats_slabs(s, k);
    } else if (IS("conns") && !k->binary) {
        stats_conns(c, k);
    } else if (IS("extstore")) {
        extstore_stats_pages(s, k);
    } else if (IS("sizes")) {
        if (!engine_sizes(s->engine, size_line, k))
            k->emit(k, "sizes_status", "disabled");
    } else if (IS("sizes_enable")) {
        if (!s->cfg->use_cas) {
            k->emit(k, "sizes_status", "error");
            k->emit(k, "sizes_error", "cas_support_disabled");
        } else if (!stats_sizes_start(s)) {
            k->emit(k, "sizes_status", "error");
            k->emit(k, "sizes_error", "no_memory");
        } else {
            k->emit(k, "sizes_status", "enabled");
        }
        return STATS_NOEND;
    } else if (IS("sizes_disable")) {
        engine_sizes_disable(s->engine);
        k->emit(k, "sizes_status", "disabled");
        return STATS_NOEND;
    } else {
        return STATS_UNKNOWN;
    }
#undef IS
    return STATS_LINES;
}

void stats_text(struct conn *c, struct mc_req *req) {
    struct stat_sink k = {.emit = stats_emit, .c = c};
    const char *sub = req->ntokens > 1 ? req->tok[1].p : "";
    size_t len = req->ntokens > 1 ? req->tok[1].len : 0;
    if (mc_req_word_is(req, 1, "cachedump")) {
        dump_cachedump(c, req);
        return;
    }
    if (mc_req_word_is(req, 1, "detail")) {
        detail_command(c, req);
        return;
    }
    switch (stats_run(c, &k, sub, len)) {
    case STATS_RESET:
        out_copy(&c->net.out, S("RESET\r\n"));
        break;
    case STATS_LINES:
        out_copy(&c->net.out, S("END\r\n"));
        break;
    case STATS_NOEND:
        break;
    case STATS_UNKNOWN:
        out_copy(&c->net.out, S("ERROR\r\n"));
        break;
    }
}
