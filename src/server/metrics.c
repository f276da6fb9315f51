/*
 * metrics.c -- cellard's Prometheus exposition (--metrics): `stats`,
 * `stats items` and `stats slabs` as text format 0.0.4, and a few
 * per-worker counters.
 *
 *   httpd thread (core/httpd.c) --> metrics_render()
 *     stats_collect(s, "" | "items" | "slabs") --emit--> struct lines
 *     (the very functions `stats` runs: same names, same values)
 *     rows below: stat name --> metric name, labels, type, help
 *     lines no row took --> cellard_<stat> (untyped), so none is lost
 *     per-worker counters (st - base, under stats_lock) --> cellard_worker_*
 *
 * Names shared with memcached_exporter (prometheus/memcached_exporter)
 * are used where it exports the same quantity, so a memcached dashboard
 * works unchanged; the rest are cellard_*.  doc/metrics.md lists them.
 * The table only names and types; what the values are, and how they are
 * summed over workers, stays in stats.c.
 *
 * It runs on the listener's thread, never on a worker: the sums read the
 * workers' relaxed atomics as `stats` from any connection does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/ctx.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/stats.h"
#include "server/worker.h"

/* One `STAT name value` line as stats_collect() emitted it. */
struct line {
    char name[56];                  /* without "items:N:" or "N:" */
    char val[40];
    unsigned cls;                   /* slab class; 0 for a general line */
    unsigned char group;            /* G_GENERAL, G_ITEMS, G_SLABS */
    bool used;                      /* a row printed it */
};

enum { G_GENERAL, G_ITEMS, G_SLABS };

struct lines {
    struct line *v;
    size_t n, cap;
    bool oom;
    unsigned char group;            /* of the lines being collected */
};

static void lines_emit(struct stat_sink *k, const char *name, const char *val) {
    struct lines *ls = k->ctx;
    if (ls->oom)
        return;
    if (ls->n == ls->cap) {
        size_t cap = ls->cap ? ls->cap * 2 : 256;
        struct line *v = realloc(ls->v, cap * sizeof(*v));
        if (v == NULL) {
            ls->oom = true;
            return;
        }
        ls->v = v;
        ls->cap = cap;
    }
    struct line *l = &ls->v[ls->n++];
    memset(l, 0, sizeof(*l));
    l->group = ls->group;
    unsigned cls = 0;
    int off = 0;
    if ((ls->group == G_ITEMS && sscanf(name, "items:%u:%n", &cls, &off) == 1 && off > 0) ||
        (ls->group == G_SLABS && sscanf(name, "%u:%n", &cls, &off) == 1 && off > 0)) {
        l->cls = cls;
        name += off;
    }
    snprintf(l->name, sizeof(l->name), "%s", name);
    snprintf(l->val, sizeof(l->val), "%s", val);
}

static struct line *find(struct lines *ls, int group, unsigned cls, const char *name) {
    for (size_t i = 0; i < ls->n; i++) {
        struct line *l = &ls->v[i];
        if (l->group == group && l->cls == cls && strcmp(l->name, name) == 0)
            return l;
    }
    return NULL;
}

/* A value Prometheus can read: a number, whole (rusage's "1.000200" too). */
static bool numeric(const char *v) {
    char *end;
    if (v[0] == '\0')
        return false;
    strtod(v, &end);
    return *end == '\0';
}

/*
 * One metric from one stat.  help starts a family (name, type, help are
 * its); a row with help NULL adds a sample to the family above.
 * type: 'c' counter, 'g' gauge.  labels: NULL, or what goes in {}.
 * A row whose stat is absent prints nothing (memcached, too, leaves some
 * lines out: idle_kicks without -o idle_timeout, the crawler's while off).
 */
struct row {
    const char *stat;
    const char *name;
    const char *labels;
    char type;
    const char *help;
};

#define CMD(stat, cmd, status) {stat, "memcached_commands_total", \
                                "command=\"" cmd "\",status=\"" status "\"", 'c', NULL}

/* `stats`: memcached_exporter's names first, then cellard's own. */
static const struct row general_rows[] = {
    {"uptime", "memcached_uptime_seconds", NULL, 'c', "Seconds since the server started."},
    {"time", "memcached_time_seconds", NULL, 'g', "The server's clock, in Unix time."},
    {"rusage_user", "memcached_process_user_cpu_seconds_total", NULL, 'c',
     "User CPU time the process has used."},
    {"rusage_system", "memcached_process_system_cpu_seconds_total", NULL, 'c',
     "System CPU time the process has used."},
    {"bytes_read", "memcached_read_bytes_total", NULL, 'c', "Bytes read from the network."},
    {"bytes_written", "memcached_written_bytes_total", NULL, 'c',
     "Bytes written to the network."},
    {"curr_connections", "memcached_current_connections", NULL, 'g',
     "Open connections (as memcached counts them)."},
    {"max_connections", "memcached_max_connections", NULL, 'g',
     "Connections allowed at once (-c)."},
    {"total_connections", "memcached_connections_total", NULL, 'c',
     "Connections opened since the server started."},
    {"rejected_connections", "memcached_connections_rejected_total", NULL, 'c',
     "Connections refused at the -c limit."},
    {"conn_yields", "memcached_connections_yielded_total", NULL, 'c',
     "Times a connection yielded after -R requests in one event."},
    {"listen_disabled_num", "memcached_connections_listener_disabled_total", NULL, 'c',
     "Times the listener was disabled at the connection limit."},
    {"accepting_conns", "memcached_accepting_connections", NULL, 'g',
     "1 while the server accepts new connections."},
    {"bytes", "memcached_current_bytes", NULL, 'g', "Bytes the stored items take."},
    {"limit_maxbytes", "memcached_limit_bytes", NULL, 'g', "Bytes the items may take (-m)."},
    {"curr_items", "memcached_current_items", NULL, 'g', "Items stored now."},
    {"total_items", "memcached_items_total", NULL, 'c', "Items stored since the start."},
    {"evictions", "memcached_items_evicted_total", NULL, 'c',
     "Unexpired items evicted to make room."},
    {"reclaimed", "memcached_items_reclaimed_total", NULL, 'c',
     "Items stored in the memory of an expired one."},
    {"store_too_large", "memcached_item_too_large_total", NULL, 'c',
     "Stores refused for an item over the size limit (-I)."},
    {"store_no_memory", "memcached_item_no_memory_total", NULL, 'c',
     "Stores refused for want of memory."},
    {"lru_crawler_starts", "memcached_lru_crawler_starts_total", NULL, 'c',
     "Times the LRU crawler started."},
    {"crawler_items_checked", "memcached_lru_crawler_items_checked_total", NULL, 'c',
     "Items the LRU crawler examined."},
    {"crawler_reclaimed", "memcached_lru_crawler_reclaimed_total", NULL, 'c',
     "Expired items the LRU crawler freed."},
    {"moves_to_cold", "memcached_lru_crawler_moves_to_cold_total", NULL, 'c',
     "Items moved from HOT or WARM to COLD."},
    {"moves_to_warm", "memcached_lru_crawler_moves_to_warm_total", NULL, 'c',
     "Items moved from COLD to WARM."},
    {"moves_within_lru", "memcached_lru_crawler_moves_within_lru_total", NULL, 'c',
     "Items bumped within HOT or WARM."},
    {"direct_reclaims", "memcached_direct_reclaims_total", NULL, 'c',
     "Times a worker had to reclaim or evict memory itself."},
    {"round_robin_fallback", "memcached_round_robin_fallback_total", NULL, 'c',
     "memcached's NAPI round-robin fallbacks (always 0 here)."},
    {"unexpected_napi_ids", "memcached_unexpected_napi_ids_total", NULL, 'c',
     "memcached's unexpected NAPI ids (always 0 here)."},
    /* memcached_commands_total: the set row is computed (commands_rows) */
    {"get_hits", "memcached_commands_total", "command=\"get\",status=\"hit\"", 'c',
     "Requests by command and outcome."},
    CMD("get_misses", "get", "miss"),
    CMD("delete_hits", "delete", "hit"),
    CMD("delete_misses", "delete", "miss"),
    CMD("incr_hits", "incr", "hit"),
    CMD("incr_misses", "incr", "miss"),
    CMD("decr_hits", "decr", "hit"),
    CMD("decr_misses", "decr", "miss"),
    CMD("cas_hits", "cas", "hit"),
    CMD("cas_misses", "cas", "miss"),
    CMD("cas_badval", "cas", "badval"),
    CMD("touch_hits", "touch", "hit"),
    CMD("touch_misses", "touch", "miss"),
    CMD("cmd_flush", "flush", "hit"),
    /* cellard's own */
    {"cmd_get", "cellard_commands_total", "command=\"get\"", 'c',
     "Requests by command, as stats cmd_* counts them (a get of n keys counts n)."},
    {"cmd_set", "cellard_commands_total", "command=\"set\"", 'c', NULL},
    {"cmd_touch", "cellard_commands_total", "command=\"touch\"", 'c', NULL},
    {"cmd_flush", "cellard_commands_total", "command=\"flush\"", 'c', NULL},
    {"cmd_meta", "cellard_commands_total", "command=\"meta\"", 'c', NULL},
    {"get_expired", "cellard_get_expired_total", NULL, 'c',
     "Gets that found the item expired."},
    {"get_flushed", "cellard_get_flushed_total", NULL, 'c',
     "Gets that found the item flushed."},
    {"auth_cmds", "cellard_auth_commands_total", NULL, 'c', "Authentication requests."},
    {"auth_errors", "cellard_auth_errors_total", NULL, 'c', "Failed authentications."},
    {"idle_kicks", "cellard_idle_kicks_total", NULL, 'c',
     "Connections closed for idling past -o idle_timeout."},
    {"time_in_listen_disabled_us", "cellard_listen_disabled_microseconds_total", NULL, 'c',
     "Microseconds the listener spent disabled."},
    {"connection_structures", "cellard_connection_structures", NULL, 'g',
     "Connection structures allocated."},
    {"reserved_fds", "cellard_reserved_fds", NULL, 'g',
     "Descriptors kept back from clients."},
    {"threads", "cellard_threads", NULL, 'g', "Worker threads (-t)."},
    {"response_obj_count", "cellard_response_objects", NULL, 'g',
     "Reply blocks in use."},
    {"response_obj_bytes", "cellard_response_object_bytes", NULL, 'g',
     "Bytes of reply blocks held."},
    {"response_obj_oom", "cellard_response_object_oom_total", NULL, 'c',
     "Reply blocks that could not be allocated."},
    {"read_buf_count", "cellard_read_buffers", NULL, 'g', "Read buffers held by the workers."},
    {"read_buf_bytes", "cellard_read_buffer_bytes", NULL, 'g', "Their bytes."},
    {"read_buf_bytes_free", "cellard_read_buffer_free_bytes", NULL, 'g',
     "Bytes of read buffers held idle."},
    {"read_buf_oom", "cellard_read_buffer_oom_total", NULL, 'c',
     "Read buffers that could not be allocated."},
    {"hash_power_level", "cellard_hash_power_level", NULL, 'g',
     "The hash table has 2^this buckets."},
    {"hash_bytes", "cellard_hash_bytes", NULL, 'g', "Bytes of the hash table."},
    {"hash_is_expanding", "cellard_hash_is_expanding", NULL, 'g',
     "1 while the hash table grows."},
    {"slab_reassign_rescues", "cellard_slab_reassign_rescues_total", NULL, 'c',
     "Items rescued while moving a slab page."},
    {"slab_reassign_chunk_rescues", "cellard_slab_reassign_chunk_rescues_total", NULL, 'c',
     "Chunks rescued while moving a slab page."},
    {"slab_reassign_evictions_nomem", "cellard_slab_reassign_evictions_nomem_total", NULL,
     'c', "Items evicted while moving a slab page, for want of room."},
    {"slab_reassign_inline_reclaim", "cellard_slab_reassign_inline_reclaim_total", NULL, 'c',
     "Slab pages reclaimed inline."},
    {"slab_reassign_busy_items", "cellard_slab_reassign_busy_items_total", NULL, 'c',
     "Busy items met while moving a slab page."},
    {"slab_reassign_busy_deletes", "cellard_slab_reassign_busy_deletes_total", NULL, 'c',
     "Busy deletes met while moving a slab page."},
    {"slab_reassign_running", "cellard_slab_reassign_running", NULL, 'g',
     "1 while a slab page moves."},
    {"slabs_moved", "cellard_slabs_moved_total", NULL, 'c', "Slab pages moved."},
    {"lru_crawler_running", "cellard_lru_crawler_running", NULL, 'g',
     "1 while the LRU crawler runs."},
    {"lru_maintainer_juggles", "cellard_lru_maintainer_juggles_total", NULL, 'c',
     "Rounds of the maintenance thread."},
    {"malloc_fails", "cellard_malloc_fails_total", NULL, 'c', "Failed allocations."},
    {"log_worker_dropped", "cellard_log_worker_dropped_total", NULL, 'c',
     "Watch log lines dropped by the workers."},
    {"log_worker_written", "cellard_log_worker_written_total", NULL, 'c',
     "Watch log lines written by the workers."},
    {"log_watcher_skipped", "cellard_log_watcher_skipped_total", NULL, 'c',
     "Watch log lines skipped for slow watchers."},
    {"log_watcher_sent", "cellard_log_watcher_sent_total", NULL, 'c',
     "Watch log lines sent to watchers."},
    {"log_watchers", "cellard_log_watchers", NULL, 'g', "Connections watching the log."},
    {"slab_global_page_pool", "cellard_slab_global_page_pool", NULL, 'g',
     "Slab pages in the global pool."},
    {"expired_unfetched", "cellard_items_expired_unfetched_total", NULL, 'c',
     "Items that expired without being fetched."},
    {"evicted_unfetched", "cellard_items_evicted_unfetched_total", NULL, 'c',
     "Items evicted without being fetched."},
    {"evicted_active", "cellard_items_evicted_active_total", NULL, 'c',
     "Items evicted although recently used."},
    {"lrutail_reflocked", "cellard_lrutail_reflocked_total", NULL, 'c',
     "Items at an LRU's tail found referenced."},
    {"lru_bumps_dropped", "cellard_lru_bumps_dropped_total", NULL, 'c',
     "LRU bumps dropped."},
};

/* `stats slabs`' totals. */
static const struct row slabs_total_rows[] = {
    {"total_malloced", "memcached_malloced_bytes", NULL, 'g',
     "Bytes of memory given to slab pages."},
    {"active_slabs", "cellard_active_slabs", NULL, 'g', "Slab classes with pages."},
};

/* Per slab class (label slab): `stats items`, then `stats slabs`. */
static const struct row items_rows[] = {
    {"number", "memcached_slab_current_items", NULL, 'g', "Items stored in the class."},
    {"number_hot", "memcached_slab_hot_items", NULL, 'g', "Items in the class's HOT LRU."},
    {"number_warm", "memcached_slab_warm_items", NULL, 'g', "Items in the class's WARM LRU."},
    {"number_cold", "memcached_slab_cold_items", NULL, 'g', "Items in the class's COLD LRU."},
    {"age_hot", "memcached_slab_hot_age_seconds", NULL, 'g',
     "Age of the oldest item in the class's HOT LRU."},
    {"age_warm", "memcached_slab_warm_age_seconds", NULL, 'g',
     "Age of the oldest item in the class's WARM LRU."},
    {"age", "memcached_slab_items_age_seconds", NULL, 'g',
     "Age of the oldest item in the class."},
    {"mem_requested", "memcached_slab_mem_requested_bytes", NULL, 'g',
     "Bytes the class's items take (of their chunks)."},
    {"evicted", "memcached_slab_items_evicted_total", NULL, 'c',
     "Items of the class evicted before they expired."},
    {"evicted_nonzero", "memcached_slab_items_evicted_nonzero_total", NULL, 'c',
     "Items with an expiry time evicted before they expired."},
    {"evicted_time", "memcached_slab_items_evicted_time_seconds", NULL, 'g',
     "Seconds since the last access of the class's last evicted item."},
    {"outofmemory", "memcached_slab_items_outofmemory_total", NULL, 'c',
     "Times the class could not store an item for want of memory."},
    {"tailrepairs", "memcached_slab_items_tailrepairs_total", NULL, 'c',
     "Tail repairs (always 0 here)."},
    {"reclaimed", "memcached_slab_items_reclaimed_total", NULL, 'c',
     "Items stored in the memory of an expired one."},
    {"expired_unfetched", "memcached_slab_items_expired_unfetched_total", NULL, 'c',
     "Items that expired without being fetched."},
    {"evicted_unfetched", "memcached_slab_items_evicted_unfetched_total", NULL, 'c',
     "Items evicted without being fetched."},
    {"crawler_reclaimed", "memcached_slab_items_crawler_reclaimed_total", NULL, 'c',
     "Items the LRU crawler freed."},
    {"moves_to_cold", "memcached_slab_items_moves_to_cold", NULL, 'c',
     "Items moved from HOT or WARM to COLD."},
    {"moves_to_warm", "memcached_slab_items_moves_to_warm", NULL, 'c',
     "Items moved from COLD to WARM."},
    {"moves_within_lru", "memcached_slab_items_moves_within_lru", NULL, 'c',
     "Items bumped within HOT or WARM."},
    {"hits_to_hot", "memcached_slab_lru_hits_total", "lru=\"hot\"", 'c',
     "Get hits by the LRU the item was in."},
    {"hits_to_warm", "memcached_slab_lru_hits_total", "lru=\"warm\"", 'c', NULL},
    {"hits_to_cold", "memcached_slab_lru_hits_total", "lru=\"cold\"", 'c', NULL},
    {"hits_to_temp", "memcached_slab_lru_hits_total", "lru=\"temporary\"", 'c', NULL},
    {"evicted_active", "cellard_slab_items_evicted_active_total", NULL, 'c',
     "Items evicted although recently used."},
    {"crawler_items_checked", "cellard_slab_items_crawler_items_checked_total", NULL, 'c',
     "Items the LRU crawler examined."},
    {"lrutail_reflocked", "cellard_slab_items_lrutail_reflocked_total", NULL, 'c',
     "Items at the LRU's tail found referenced."},
    {"direct_reclaims", "cellard_slab_items_direct_reclaims_total", NULL, 'c',
     "Times a worker reclaimed memory itself."},
};

#define SCMD(stat, cmd, status) {stat, "memcached_slab_commands_total", \
                                 "command=\"" cmd "\",status=\"" status "\"", 'c', NULL}

static const struct row slabs_rows[] = {
    {"chunk_size", "memcached_slab_chunk_size_bytes", NULL, 'g', "Bytes of each chunk."},
    {"chunks_per_page", "memcached_slab_chunks_per_page", NULL, 'g', "Chunks in a page."},
    {"total_pages", "memcached_slab_current_pages", NULL, 'g', "Pages given to the class."},
    {"total_chunks", "memcached_slab_current_chunks", NULL, 'g', "Chunks of the class."},
    {"used_chunks", "memcached_slab_chunks_used", NULL, 'g', "Chunks holding an item."},
    {"free_chunks", "memcached_slab_chunks_free", NULL, 'g', "Chunks free."},
    {"free_chunks_end", "memcached_slab_chunks_free_end", NULL, 'g',
     "Free chunks at the end of the last page."},
    /* the set row is computed (commands_rows) */
    {"get_hits", "memcached_slab_commands_total", "command=\"get\",status=\"hit\"", 'c',
     "Requests by slab class, command and outcome."},
    SCMD("delete_hits", "delete", "hit"),
    SCMD("incr_hits", "incr", "hit"),
    SCMD("decr_hits", "decr", "hit"),
    SCMD("cas_hits", "cas", "hit"),
    SCMD("cas_badval", "cas", "badval"),
    SCMD("touch_hits", "touch", "hit"),
    {"cmd_set", "cellard_slab_set_commands_total", NULL, 'c',
     "Stores of the class (stats slabs' cmd_set)."},
};

/* General lines that are no number to chart (or printed specially). */
static const char *const general_skip[] = {"pid", "libevent", "pointer_size", "version"};

static void sample(struct text *t, const char *name, const char *lab1, const char *lab2,
                   const char *val) {
    bool any = lab1 != NULL || lab2 != NULL;
    text_printf(t, "%s%s%s%s%s%s %s\n", name, any ? "{" : "", lab1 ? lab1 : "",
                lab1 && lab2 ? "," : "", lab2 ? lab2 : "", any ? "}" : "", val);
}

static void family(struct text *t, const struct row *r) {
    text_family(t, r->name, r->type == 'c' ? "counter" : "gauge", r->help);
}

/* "set" hits as the exporter derives them: stores less the CAS requests among them. */
static bool set_hits(struct lines *ls, int group, unsigned cls, const char *const *cas,
                     char *out, size_t n) {
    struct line *set = find(ls, group, cls, "cmd_set");
    if (set == NULL)
        return false;
    unsigned long long v = strtoull(set->val, NULL, 10), c = 0;
    for (; *cas != NULL; cas++) {
        struct line *l = find(ls, group, cls, *cas);
        c += l ? strtoull(l->val, NULL, 10) : 0;
    }
    snprintf(out, n, "%llu", v > c ? v - c : 0);
    return true;
}

/* Rows of one group without a class: a family's header once, then its samples. */
static void print_rows(struct text *t, struct lines *ls, int group, const struct row *rows,
                       size_t n) {
    for (size_t i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        struct line *l = find(ls, group, 0, r->stat);
        if (r->help != NULL && (l != NULL || strcmp(r->name, "memcached_commands_total") == 0))
            family(t, r);
        if (l == NULL || !numeric(l->val))
            continue;
        l->used = true;
        sample(t, r->name, r->labels, NULL, l->val);
        if (strcmp(r->stat, "cmd_flush") == 0 && r->labels != NULL &&
            strcmp(r->name, "memcached_commands_total") == 0) {
            static const char *const cas[] = {"cas_misses", "cas_hits", "cas_badval", NULL};
            char v[32];
            if (set_hits(ls, group, 0, cas, v, sizeof(v)))
                sample(t, r->name, "command=\"set\",status=\"hit\"", NULL, v);
        }
    }
}

/* Per-class rows: for each family, a sample per class that has the line. */
static void print_class_rows(struct text *t, struct lines *ls, int group,
                             const struct row *rows, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        if (r->help != NULL)
            family(t, r);
        for (size_t j = 0; j < ls->n; j++) {
            struct line *l = &ls->v[j];
            if (l->group != group || l->cls == 0 || strcmp(l->name, r->stat) != 0 ||
                !numeric(l->val))
                continue;
            char slab[32];
            snprintf(slab, sizeof(slab), "slab=\"%u\"", l->cls);
            l->used = true;
            sample(t, r->name, slab, r->labels, l->val);
            if (group == G_SLABS && strcmp(r->stat, "touch_hits") == 0) {
                static const char *const cas[] = {"cas_hits", "cas_badval", NULL};
                char v[32];
                if (set_hits(ls, group, l->cls, cas, v, sizeof(v)))
                    sample(t, r->name, slab, "command=\"set\",status=\"hit\"", v);
            }
        }
    }
}

/* Lines no row printed: cellard_<name> (per class: cellard_slab_<name>), untyped. */
static void print_rest(struct text *t, struct lines *ls) {
    for (size_t i = 0; i < ls->n; i++) {
        struct line *l = &ls->v[i];
        if (l->used || !numeric(l->val))
            continue;
        bool skip = false;
        for (size_t k = 0; k < sizeof(general_skip) / sizeof(general_skip[0]); k++)
            skip |= l->group == G_GENERAL && strcmp(l->name, general_skip[k]) == 0;
        if (skip)
            continue;
        char name[96];
        snprintf(name, sizeof(name), "cellard_%s%s", l->cls ? "slab_" : "", l->name);
        text_printf(t, "# HELP %s stats%s %s (no metric of its own yet)\n# TYPE %s untyped\n",
                    name, l->group == G_ITEMS ? " items" : l->group == G_SLABS ? " slabs" : "",
                    l->name, name);
        /* every class's sample of it, together */
        for (size_t j = i; j < ls->n; j++) {
            struct line *m = &ls->v[j];
            if (m->used || m->group != l->group || strcmp(m->name, l->name) != 0 ||
                !numeric(m->val))
                continue;
            m->used = true;
            char slab[32];
            snprintf(slab, sizeof(slab), "slab=\"%u\"", m->cls);
            sample(t, name, m->cls ? slab : NULL, NULL, m->val);
        }
    }
}

/* Per worker: what shows one worker busier than the others. */
static void print_workers(struct text *t, struct server *s) {
    int n = s->nworkers;
    struct wsum {
        unsigned long long rd, wr, yields, cmd[5];
    } *w = calloc((size_t)n, sizeof(*w));
    if (w == NULL) {
        t->oom = true;
        return;
    }
    pthread_mutex_lock(&s->stats_lock);     /* against stats reset moving the base */
    for (int i = 0; i < n; i++) {
        struct worker_counters *st = &s->workers[i].ctx.st, *b = &s->workers[i].base;
#define D(f) (STAT_GET(st->f) - STAT_GET(b->f))
        w[i].rd = D(net.bytes_read);
        w[i].wr = D(net.bytes_written);
        w[i].yields = D(net.conn_yields);
        w[i].cmd[0] = D(get_cmds);
        for (int k = 0; k < ENGINE_MAX_CLASSES; k++)
            w[i].cmd[1] += D(slab[k].set_cmds);
        w[i].cmd[2] = D(touch_cmds);
        w[i].cmd[3] = D(flush_cmds);
        w[i].cmd[4] = D(meta_cmds);
#undef D
    }
    pthread_mutex_unlock(&s->stats_lock);
    text_family(t, "cellard_worker_read_bytes_total", "counter",
                "Bytes read from the network, by worker thread.");
    for (int i = 0; i < n; i++)
        text_printf(t, "cellard_worker_read_bytes_total{worker=\"%d\"} %llu\n", i, w[i].rd);
    text_family(t, "cellard_worker_written_bytes_total", "counter",
                "Bytes written to the network, by worker thread.");
    for (int i = 0; i < n; i++)
        text_printf(t, "cellard_worker_written_bytes_total{worker=\"%d\"} %llu\n", i, w[i].wr);
    text_family(t, "cellard_worker_connections_yielded_total", "counter",
                "Times a connection yielded after -R requests, by worker thread.");
    for (int i = 0; i < n; i++)
        text_printf(t, "cellard_worker_connections_yielded_total{worker=\"%d\"} %llu\n", i,
                    w[i].yields);
    static const char *const cmds[] = {"get", "set", "touch", "flush", "meta"};
    text_family(t, "cellard_worker_commands_total", "counter",
                "Requests by worker thread and command, as stats cmd_* counts them.");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 5; k++)
            text_printf(t, "cellard_worker_commands_total{worker=\"%d\",command=\"%s\"} %llu\n",
                        i, cmds[k], w[i].cmd[k]);
    free(w);
}

void metrics_render(void *arg, struct text *t) {
    struct server *s = arg;
    struct lines ls = {0};
    struct stat_sink k = {.emit = lines_emit, .ctx = &ls};
    static const char *const groups[] = {"", "items", "slabs"};
    for (unsigned char g = 0; g < 3; g++) {
        ls.group = g;
        stats_collect(s, &k, groups[g]);
    }
    if (ls.oom) {
        free(ls.v);
        t->oom = true;
        return;
    }
    text_family(t, "memcached_up", "gauge", "1: the server answered (this page is its own).");
    text_printf(t, "memcached_up 1\n");
    struct line *ver = find(&ls, G_GENERAL, 0, "version");
    if (ver != NULL) {
        text_family(t, "memcached_version", "gauge", "The memcached version the server speaks.");
        text_printf(t, "memcached_version{version=\"");
        text_label_value(t, ver->val);
        text_printf(t, "\"} 1\n");
    }
    print_rows(t, &ls, G_GENERAL, general_rows, sizeof(general_rows) / sizeof(general_rows[0]));
    print_rows(t, &ls, G_SLABS, slabs_total_rows,
               sizeof(slabs_total_rows) / sizeof(slabs_total_rows[0]));
    print_class_rows(t, &ls, G_ITEMS, items_rows, sizeof(items_rows) / sizeof(items_rows[0]));
    print_class_rows(t, &ls, G_SLABS, slabs_rows, sizeof(slabs_rows) / sizeof(slabs_rows[0]));
    print_rest(t, &ls);
    print_workers(t, s);
    free(ls.v);
}
