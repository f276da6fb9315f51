/*
 * stats.c -- the `stats` family, with memcached's names, order and meaning.
 *
 * Counters live per worker (server.h) and in the engine; this file sums
 * them when asked and prints "STAT <name> <value>" lines into the asking
 * connection's output.  `stats reset` does not write into other workers'
 * counters (that would race their single-writer updates): it records a
 * baseline that later reports subtract.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "server/conn.h"
#include "server/ctx.h"
#include "server/detail.h"
#include "server/dump.h"
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

#define STAT_U(name, v) sink_printf(o, name, "%llu", (unsigned long long)(v))

static void stats_general(struct server *s, struct stat_sink *o) {
    struct worker_counters t;
    struct engine_stats es;
    stats_sum(s, &t);
    engine_stats(s->engine, &es);
    uint64_t get_hits = 0, set_cmds = 0, delete_hits = 0, incr_hits = 0, decr_hits = 0;
    uint64_t cas_hits = 0, cas_badval = 0, touch_hits = 0;
    for (int k = 0; k < ENGINE_MAX_CLASSES; k++) {
        get_hits += slab_get_hits(&t.slab[k]);
        set_cmds += t.slab[k].set_cmds;
        delete_hits += t.slab[k].delete_hits;
        incr_hits += t.slab[k].incr_hits;
        decr_hits += t.slab[k].decr_hits;
        cas_hits += t.slab[k].cas_hits;
        cas_badval += t.slab[k].cas_badval;
        touch_hits += t.slab[k].touch_hits;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint32_t now = engine_clock(s->engine);

    sink_printf(o, "pid", "%ld", (long)getpid());
    STAT_U("uptime", now - s->started);
    STAT_U("time", now);
    o->emit(o, "version", CELLAR_MC_VERSION);
    o->emit(o, "libevent", "none");
    sink_printf(o, "pointer_size", "%d", (int)(8 * sizeof(void *)));
    sink_printf(o, "rusage_user", "%ld.%06ld", (long)ru.ru_utime.tv_sec,
                (long)ru.ru_utime.tv_usec);
    sink_printf(o, "rusage_system", "%ld.%06ld", (long)ru.ru_stime.tv_sec,
                (long)ru.ru_stime.tv_usec);
    STAT_U("max_connections", s->cfg->maxconns);
    /* memcached counts its listeners and UDP sockets as connections, and
       shows one fewer current connection than it counts */
    STAT_U("curr_connections", atomic_load(&s->net.curr_conns) + s->fixed_conns - 1);
    STAT_U("total_connections", atomic_load(&s->net.total_conns));
    STAT_U("rejected_connections", atomic_load(&s->net.rejected_conns));
    STAT_U("connection_structures", atomic_load(&s->net.conn_structs) + (uint64_t)s->listeners.n);
    /* memcached's response objects are the reply scratch blocks here, its
       read buffers the workers' read buffers (16 KB each, as memcached's),
       the io_uring back end's receive buffers among them */
    uint64_t ro_oom = 0, ro_count = 0, ro_bytes = 0, rb = 0, rb_idle = 0;
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        ro_oom += STAT_GET(w->net.outpool.oom);
        /* blocks of the usual size out of the pool; larger ones are counted in bytes only */
        uint64_t blocks = STAT_GET(w->net.outpool.blocks), pooled = STAT_GET(w->net.outpool.n);
        ro_count += blocks > pooled ? blocks - pooled : 0;    /* read apart: may cross */
        ro_bytes += STAT_GET(w->net.outpool.bytes);
        rb += STAT_GET(w->net.rbufs);
        rb_idle += STAT_GET(w->net.rbufs_idle) + STAT_GET(w->net.rbufs_ring);
    }
    STAT_U("response_obj_oom", ro_oom);
    STAT_U("response_obj_count", ro_count);
    STAT_U("response_obj_bytes", ro_bytes);
    STAT_U("read_buf_count", rb);
    STAT_U("read_buf_bytes", rb * NET_RBUF_SIZE);
    STAT_U("read_buf_bytes_free", rb_idle * NET_RBUF_SIZE);
    STAT_U("read_buf_oom", t.net.read_buf_oom);
    STAT_U("reserved_fds", 20);
    STAT_U("cmd_get", t.get_cmds);
    STAT_U("cmd_set", set_cmds);
    STAT_U("cmd_flush", t.flush_cmds);
    STAT_U("cmd_touch", t.touch_cmds);
    STAT_U("cmd_meta", t.meta_cmds);
    STAT_U("get_hits", get_hits);
    STAT_U("get_misses", t.get_misses);
    STAT_U("get_expired", es.get_expired);
    STAT_U("get_flushed", es.get_flushed);
    STAT_U("delete_misses", t.delete_misses);
    STAT_U("delete_hits", delete_hits);
    STAT_U("incr_misses", t.incr_misses);
    STAT_U("incr_hits", incr_hits);
    STAT_U("decr_misses", t.decr_misses);
    STAT_U("decr_hits", decr_hits);
    STAT_U("cas_misses", t.cas_misses);
    STAT_U("cas_hits", cas_hits);
    STAT_U("cas_badval", cas_badval);
    STAT_U("touch_hits", touch_hits);
    STAT_U("touch_misses", t.touch_misses);
    STAT_U("store_too_large", t.store_too_large);
    STAT_U("store_no_memory", t.store_no_memory);
    STAT_U("auth_cmds", t.auth_cmds);
    STAT_U("auth_errors", t.auth_errors);
    if (s->cfg->idle_timeout > 0)
        STAT_U("idle_kicks", t.net.idle_kicks);
    STAT_U("bytes_read", t.net.bytes_read);
    STAT_U("bytes_written", t.net.bytes_written);
    STAT_U("limit_maxbytes", es.limit_maxbytes);
    STAT_U("accepting_conns", atomic_load(&s->accepting) ? 1 : 0);
    STAT_U("listen_disabled_num", 0);
    STAT_U("time_in_listen_disabled_us", 0);
    STAT_U("threads", s->nworkers);
    STAT_U("conn_yields", t.net.conn_yields);
    STAT_U("hash_power_level", es.hash_power_level);
    STAT_U("hash_bytes", es.hash_bytes);
    STAT_U("hash_is_expanding", es.hash_is_expanding ? 1 : 0);
    if (s->cfg->slab_reassign) {        /* no slab mover yet: nothing moves */
        STAT_U("slab_reassign_rescues", 0);
        STAT_U("slab_reassign_chunk_rescues", 0);
        STAT_U("slab_reassign_evictions_nomem", 0);
        STAT_U("slab_reassign_inline_reclaim", 0);
        STAT_U("slab_reassign_busy_items", 0);
        STAT_U("slab_reassign_busy_deletes", 0);
        STAT_U("slab_reassign_running", 0);
        STAT_U("slabs_moved", 0);
    }
    if (atomic_load(&s->crawler_on)) {  /* memcached lists these only while its crawler runs */
        STAT_U("lru_crawler_running", 0);
        STAT_U("lru_crawler_starts", es.crawler_starts);
    }
    if (s->cfg->lru_maintainer_thread)
        STAT_U("lru_maintainer_juggles", atomic_load_explicit(&s->maint_loops,
                                                              memory_order_relaxed));
    STAT_U("malloc_fails", 0);
    struct watch_counts wc;
    watch_stats(s, &wc);
    STAT_U("log_worker_dropped", wc.worker_dropped);
    STAT_U("log_worker_written", wc.worker_written);
    STAT_U("log_watcher_skipped", wc.watcher_skipped);
    STAT_U("log_watcher_sent", wc.watcher_sent);
    STAT_U("log_watchers", wc.watchers);
    STAT_U("unexpected_napi_ids", 0);
    STAT_U("round_robin_fallback", 0);
    STAT_U("bytes", es.bytes);
    STAT_U("curr_items", es.curr_items);
    STAT_U("total_items", es.total_items);
    STAT_U("slab_global_page_pool", 0);
    STAT_U("expired_unfetched", es.expired_unfetched);
    STAT_U("evicted_unfetched", es.evicted_unfetched);
    STAT_U("evicted_active", es.evicted_active);
    STAT_U("evictions", es.evictions);
    STAT_U("reclaimed", es.reclaimed);
    STAT_U("crawler_reclaimed", es.crawler_reclaimed);
    STAT_U("crawler_items_checked", es.crawler_items_checked);
    STAT_U("lrutail_reflocked", 0);
    STAT_U("moves_to_cold", es.moves_to_cold);
    STAT_U("moves_to_warm", es.moves_to_warm);
    STAT_U("moves_within_lru", es.moves_within_lru);
    STAT_U("direct_reclaims", 0);
    STAT_U("lru_bumps_dropped", 0);
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

static void stats_items(struct server *s, struct stat_sink *o) {
    struct engine *e = s->engine;
    struct worker_counters t;
    stats_sum(s, &t);
    unsigned n = engine_nclasses(e);
    for (unsigned id = 1; id <= n; id++) {
        struct engine_class_stats cs;
        if (!engine_class_stats(e, id, &cs) || cs.number == 0)
            continue;
#define I(name, v) do { char n_[64]; snprintf(n_, sizeof(n_), "items:%u:" name, id); \
                        sink_printf(o, n_, "%llu", (unsigned long long)(v)); } while (0)
        I("number", cs.number);
        const struct slab_counters *sc = &t.slab[id < ENGINE_MAX_CLASSES ? id : 0];
        I("number_hot", cs.seg.number[EVICT_HOT]);
        I("number_warm", cs.seg.number[EVICT_WARM]);
        I("number_cold", cs.seg.number[EVICT_COLD]);
        I("age_hot", cs.seg.age_hot);
        I("age_warm", cs.seg.age_warm);
        I("age", cs.age);
        I("mem_requested", cs.mem_requested);
        I("evicted", cs.evicted);
        I("evicted_nonzero", cs.evicted_nonzero);
        I("evicted_time", cs.evicted_time);
        I("outofmemory", cs.outofmemory);
        I("tailrepairs", 0);
        I("reclaimed", cs.reclaimed);
        I("expired_unfetched", cs.expired_unfetched);
        I("evicted_unfetched", cs.evicted_unfetched);
        I("evicted_active", cs.evicted_active);
        I("crawler_reclaimed", cs.crawler_reclaimed);
        I("crawler_items_checked", cs.crawler_items_checked);
        I("lrutail_reflocked", 0);
        I("moves_to_cold", cs.seg.moves_to_cold);
        I("moves_to_warm", cs.seg.moves_to_warm);
        I("moves_within_lru", cs.seg.moves_within_lru);
        I("direct_reclaims", 0);
        I("hits_to_hot", STAT_GET(sc->lru_hits[EVICT_HOT]));
        I("hits_to_warm", STAT_GET(sc->lru_hits[EVICT_WARM]));
        I("hits_to_cold", STAT_GET(sc->lru_hits[EVICT_COLD]));
        I("hits_to_temp", STAT_GET(sc->lru_hits[EVICT_TEMP]));
#undef I
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
#define L(name, v) do { char n_[64]; snprintf(n_, sizeof(n_), "%u:" name, id); \
                        sink_printf(o, n_, "%llu", (unsigned long long)(v)); } while (0)
        L("chunk_size", cs.chunk_size);
        L("chunks_per_page", cs.chunks_per_page);
        L("total_pages", cs.total_pages);
        L("total_chunks", cs.total_chunks);
        L("used_chunks", cs.used_chunks);
        L("free_chunks", cs.free_chunks);
        L("free_chunks_end", cs.free_chunks_end);
        L("get_hits", slab_get_hits(sc));
        L("cmd_set", STAT_GET(sc->set_cmds));
        L("delete_hits", STAT_GET(sc->delete_hits));
        L("incr_hits", STAT_GET(sc->incr_hits));
        L("decr_hits", STAT_GET(sc->decr_hits));
        L("cas_hits", STAT_GET(sc->cas_hits));
        L("cas_badval", STAT_GET(sc->cas_badval));
        L("touch_hits", STAT_GET(sc->touch_hits));
#undef L
    }
    struct engine_stats es;
    engine_stats(e, &es);
    STAT_U("active_slabs", es.active_slabs);
    STAT_U("total_malloced", es.total_malloced);
}

static void addr_name(const struct sockaddr_storage *ss, socklen_t len, char *buf, size_t n) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)ss;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
        snprintf(buf, n, "tcp:%s:%u", ip, ntohs(a->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const void *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
        snprintf(buf, n, "tcp6:[%s]:%u", ip, ntohs(a->sin6_port));
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
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        pthread_mutex_lock(&w->net.conns_lock);
        for (struct net_conn *nk = w->net.conns; nk != NULL; nk = nk->next) {
            struct conn *k = (struct conn *)nk;
            char name[160];
            addr_name(&k->net.peer, k->net.peerlen, name, sizeof(name));
            snprintf(n, sizeof(n), "%d:addr", k->net.fd);
            o->emit(o, n, k->is_udp ? "udp" : name);
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
        pthread_mutex_unlock(&w->net.conns_lock);
    }
}


static void text_emit(struct stat_sink *k, const char *name, const char *val) {
    out_printf(&k->c->net.out, "STAT %s %s\r\n", name, val);
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
        /* memcached built with extstore, run without it: no lines */
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
    struct stat_sink k = {.emit = text_emit, .c = c};
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
