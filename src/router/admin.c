/*
 * admin.c -- what cellar-router says about itself: `stats`, `stats
 * servers` and the Prometheus text of /metrics, from one gathering.
 *
 *   workers' counters (router_counters: relaxed atomics, one writer each)
 *   workers' handles, under each worker's lock in turn:     --> struct view
 *     every server's cl_conn_counters, summed; its health,       |
 *     the worst over workers; failovers                          v
 *                                             stats text / binary STATs
 *                                             Prometheus exposition
 *
 * Per-server figures are those of the current configuration's handles:
 * a worker still on an older configuration (it takes the new one at its
 * next round) is left out of them, and they start again from zero at a
 * reload, since every worker then makes new handles (Prometheus takes a
 * counter that falls as a restart).  Failovers are kept over reloads.
 *
 * The general statistics are declared once, in stat_defs below (and
 * ROUTER_STATS in router.h); `stats` and /metrics both print that table.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/route.h"
#include "core/md5.h"
#include "protocol/mc_bin.h"
#include "protocol/mc_stat.h"
#include "router/router.h"

/* One backend server as the workers see it together. */
struct server_view {
    const char *name;               /* the view's cfg holds it */
    int state;                      /* enum cl_conn_state, the worst: DOWN > UP > CONNECTING */
    unsigned workers_down;          /* workers that have it marked down now */
    uint64_t requests, replies, latency_ns, timeouts, errors, down_fails, tko_events, fails_run;
    uint64_t spool_depth;           /* its deletes waiting in the spool */
    uint64_t pending, inflight;     /* requests waiting to be written, and written */
    unsigned states[4];             /* handles whose connection is new, up, down, closed */
};

/* The general statistics, in stat_defs' order. */
enum {
#define X(n, ...) ST_##n,
    ROUTER_STATS(X)
#undef X
    ST_UPTIME, ST_THREADS, ST_CURR_CONNS, ST_TOTAL_CONNS, ST_REJECTED_CONNS, ST_BYTES_READ,
    ST_BYTES_WRITTEN, ST_RELOADS, ST_RELOAD_ERRORS, ST_FAILOVERS, ST_SERVERS, ST_SERVERS_DOWN,
    ST_SPOOL_DEPTH, ST_SPOOL_BYTES, ST_SPOOL_SERVERS, ST_SPOOL_APPENDED, ST_SPOOL_REPLAYED,
    ST_SPOOL_DROPPED, ST_SPOOL_REPLAY_ERRORS,
    ST_COUNT
};

struct stat_def {
    const char *name;               /* in `stats` */
    const char *family;             /* cellar_router_<family>, _total for a counter */
    const char *label;              /* NULL, or the member's label */
    const char *help;               /* NULL: the family's (its first member's) */
    bool gauge;
};

static const struct stat_def stat_defs[ST_COUNT] = {
#define X(n, fam, lab, help, gauge) {#n, fam, lab, help, gauge},
    ROUTER_STATS(X)
#undef X
    {"uptime", "uptime_seconds", NULL, "Seconds since the router started", true},
    {"threads", "threads", NULL, "Worker threads", true},
    {"curr_connections", "curr_connections", NULL, "Client connections open", true},
    {"total_connections", "connections", NULL, "Client connections accepted", false},
    {"rejected_connections", "rejected_connections", NULL,
     "Client connections refused at the connection limit", false},
    {"bytes_read", "read_bytes", NULL, "Bytes read from clients", false},
    {"bytes_written", "written_bytes", NULL, "Bytes written to clients", false},
    {"config_reloads", "config_reloads", NULL, "Configurations loaded after the first", false},
    {"config_reload_errors", "config_reload_errors", NULL,
     "New configurations refused (the old one kept)", false},
    {"failovers", "failovers", NULL,
     "Requests a failover route sent on to its next child after a failure (or a miss)", false},
    {"servers", "servers", NULL, "Backend servers in the current configuration", true},
    {"servers_down", "servers_down", NULL,
     "Backend servers marked down (TKO) now, the most any worker has", true},
    {"spool_depth", "spool_depth", NULL,
     "Deletes a backend could not take, waiting in --async-dir for it", true},
    {"spool_bytes", "spool_bytes", NULL, "Their bytes on disk", true},
    {"spool_servers", "spool_servers", NULL, "Backends with deletes waiting", true},
    {"spool_appended", "spool_appended", NULL, "Deletes written to the spool", false},
    {"spool_replayed", "spool_replayed", NULL,
     "Spooled deletes a backend answered once back", false},
    {"spool_dropped", "spool_dropped", NULL,
     "Failed deletes not spooled (a full spool file, a failed write): answered with the error",
     false},
    {"spool_replay_errors", "spool_replay_errors", NULL,
     "Replayed deletes a backend answered with an error (passed over)", false},
};

struct view {
    uint64_t v[ST_COUNT];
    struct cellar_config *cfg;      /* referenced: the servers' names */
    unsigned nservers;
    struct server_view *servers;
    unsigned nroutes;
    uint64_t *routes;               /* requests each route of cfg was given, by route id */
};

/* How bad a health is, for the worst over workers. */
static int health_rank(int state) {
    switch (state) {
    case CL_CONN_DOWN: return 3;
    case CL_CONN_UP: return 2;
    case CL_CONN_CONNECTING: return 1;
    default: return 0;
    }
}

/* mcrouter's states of a destination: new (connecting, never up), up, down, closed. */
static int mcr_state(int health) {
    return health == CL_CONN_CONNECTING ? 0 : health == CL_CONN_UP ? 1
         : health == CL_CONN_DOWN ? 2 : 3;
}

/* Adds worker w's handles to v: their servers (current configuration only) and failovers. */
static void view_worker(struct view *v, struct rworker *w) {
    unsigned down = 0;
    pthread_mutex_lock(&w->lock);
    v->v[ST_FAILOVERS] += w->failovers_gone;
    for (struct rhandle *rh = w->cur; rh != NULL; rh = rh->older) {
        const struct cellar *h = rh->h;
        v->v[ST_FAILOVERS] += cl_handle_failovers(h);
        if (cl_handle_config(h) != v->cfg)
            continue;
        for (unsigned i = 0; i < v->nroutes; i++)
            v->routes[i] += cl_handle_route_requests(h, i);
        for (unsigned i = 0; i < cl_handle_servers(h) && i < v->nservers; i++) {
            const struct cl_conn_counters *c = cl_handle_server_counters(h, i);
            struct server_view *s = &v->servers[i];
            int health = atomic_load_explicit(&c->health, memory_order_relaxed);
            if (health_rank(health) > health_rank(s->state))
                s->state = health;
            if (health == CL_CONN_DOWN) {
                s->workers_down++;
                down++;
            }
            s->requests += cl_count_get(&c->requests);
            s->replies += cl_count_get(&c->replies);
            s->latency_ns += cl_count_get(&c->latency_ns);
            s->timeouts += cl_count_get(&c->timeouts);
            s->errors += cl_count_get(&c->errors);
            s->down_fails += cl_count_get(&c->down_fails);
            s->tko_events += cl_count_get(&c->tko_events);
            s->fails_run += cl_count_get(&c->fails_run);
            s->pending += cl_count_get(&c->pending);
            s->inflight += cl_count_get(&c->inflight);
            s->states[mcr_state(health)]++;
        }
    }
    pthread_mutex_unlock(&w->lock);
    if (down > v->v[ST_SERVERS_DOWN])
        v->v[ST_SERVERS_DOWN] = down;
}

/* Gathers everything; false when out of memory. */
static bool view_take(struct router *rt, struct view *v) {
    memset(v, 0, sizeof(*v));
    pthread_mutex_lock(&rt->cfg_lock);
    v->cfg = cl_config_ref(rt->cfg);
    pthread_mutex_unlock(&rt->cfg_lock);
    v->nservers = cellar_config_servers(v->cfg);
    v->servers = calloc(v->nservers ? v->nservers : 1, sizeof(*v->servers));
    v->nroutes = cl_config_nroutes(v->cfg);
    v->routes = calloc(v->nroutes ? v->nroutes : 1, sizeof(*v->routes));
    if (v->servers == NULL || v->routes == NULL) {
        free(v->servers);
        free(v->routes);
        cellar_config_release(&v->cfg);
        return false;
    }
    for (unsigned i = 0; i < v->nservers; i++)
        v->servers[i].name = cellar_config_server_name(v->cfg, i);
    for (int i = 0; i < rt->nworkers; i++) {
        struct rworker *w = &rt->workers[i];
#define X(n, ...) v->v[ST_##n] += NET_STAT_GET(w->st.n);
        ROUTER_STATS(X)
#undef X
        v->v[ST_BYTES_READ] += NET_STAT_GET(w->st.net.bytes_read);
        v->v[ST_BYTES_WRITTEN] += NET_STAT_GET(w->st.net.bytes_written);
        view_worker(v, w);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v->v[ST_UPTIME] = (uint64_t)(ts.tv_sec - rt->started);
    v->v[ST_THREADS] = (uint64_t)rt->nworkers;
    v->v[ST_CURR_CONNS] = atomic_load(&rt->net.curr_conns);
    v->v[ST_TOTAL_CONNS] = atomic_load(&rt->net.total_conns);
    v->v[ST_REJECTED_CONNS] = atomic_load(&rt->net.rejected_conns);
    v->v[ST_RELOADS] = atomic_load(&rt->reloads);
    v->v[ST_RELOAD_ERRORS] = atomic_load(&rt->reload_errors);
    v->v[ST_SERVERS] = v->nservers;
    if (rt->spool) {
        struct cellar_spool_stats sst;
        cellar_spool_stats(rt->spool, NULL, &sst);
        v->v[ST_SPOOL_DEPTH] = sst.depth;
        v->v[ST_SPOOL_BYTES] = sst.bytes;
        v->v[ST_SPOOL_SERVERS] = sst.servers;
        v->v[ST_SPOOL_APPENDED] = sst.appended;
        v->v[ST_SPOOL_REPLAYED] = sst.replayed;
        v->v[ST_SPOOL_DROPPED] = sst.dropped;
        v->v[ST_SPOOL_REPLAY_ERRORS] = sst.replay_errors;
        for (unsigned i = 0; i < v->nservers; i++) {
            cellar_spool_stats(rt->spool, v->servers[i].name, &sst);
            v->servers[i].spool_depth = sst.depth;
        }
    }
    return true;
}

static void view_release(struct view *v) {
    free(v->servers);
    v->servers = NULL;
    free(v->routes);
    v->routes = NULL;
    cellar_config_release(&v->cfg);
}

/* ---------------------------------------------------------------------- */
/* Output                                                                   */
/* ---------------------------------------------------------------------- */

/* Answers grow in a struct text (core/text.h). */

/* One statistic, as `STAT name value` or a binary STAT packet. */
struct stat_out {
    struct text t;
    bool binary;
    uint32_t opaque;
    const char *only;           /* NULL, or only the stats whose names start so */
};

__attribute__((format(printf, 3, 4))) static void stat_put(struct stat_out *o, const char *name,
                                                            const char *fmt, ...) {
    if (o->only && strncmp(name, o->only, strlen(o->only)) != 0)
        return;
    char val[512];
    va_list ap;
    va_start(ap, fmt);
    int vl = vsnprintf(val, sizeof(val), fmt, ap);
    va_end(ap);
    if (vl < 0)
        return;
    if ((size_t)vl >= sizeof(val))
        vl = (int)sizeof(val) - 1;
    size_t nname = strlen(name);
    if (text_room(&o->t, MC_STAT_MAX(nname, (size_t)vl)))
        o->t.len += mc_stat_fmt(o->t.p + o->t.len, o->binary, o->opaque, name, nname, val,
                                (size_t)vl);
}

static void stats_general(struct stat_out *o, const struct view *v) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    stat_put(o, "pid", "%ld", (long)getpid());
    stat_put(o, "uptime", "%llu", (unsigned long long)v->v[ST_UPTIME]);
    stat_put(o, "time", "%ld", (long)ts.tv_sec);
    stat_put(o, "version", "%s", MC_VERSION);
    stat_put(o, "router_version", "%s", "cellar-router " ROUTER_VERSION);
    for (int i = 0; i < ST_COUNT; i++) {
        if (i != ST_UPTIME)
            stat_put(o, stat_defs[i].name, "%llu", (unsigned long long)v->v[i]);
    }
}

/*
 * `stats servers`, as mcrouter writes it: a line per destination (servers
 * of pools alike are one), "<host:port:protocol:plain:notcompressed-
 * timeout> avg_latency_us:F pending_reqs:N inflight_reqs:N [hard_tko; ]
 * <state>:<handles> ...; requests:N replies:N timeouts:N errors:N
 * down_fails:N tko_events:N spool_depth:N", summed over the workers.
 */
static void stats_servers(struct stat_out *o, const struct view *v) {
    char (*dest)[300] = calloc(v->nservers ? v->nservers : 1, sizeof(*dest));
    if (dest == NULL) {
        o->t.oom = true;
        return;
    }
    for (unsigned i = 0; i < v->nservers; i++)
        cl_config_server_dest(v->cfg, i, dest[i], sizeof(dest[i]));
    static const char *const states[4] = {"new", "up", "down", "closed"};
    for (unsigned i = 0; i < v->nservers; i++) {
        unsigned first = 0;
        while (strcmp(dest[first], dest[i]) != 0)
            first++;
        if (first < i)
            continue;               /* summed with its first */
        struct server_view s = {0};
        for (unsigned k = i; k < v->nservers; k++) {
            const struct server_view *x = &v->servers[k];
            if (k > i && strcmp(dest[k], dest[i]) != 0)
                continue;
            s.requests += x->requests, s.replies += x->replies, s.latency_ns += x->latency_ns;
            s.timeouts += x->timeouts, s.errors += x->errors, s.down_fails += x->down_fails;
            s.tko_events += x->tko_events, s.spool_depth += x->spool_depth;
            s.pending += x->pending, s.inflight += x->inflight;
            s.workers_down += x->workers_down;
            for (int t = 0; t < 4; t++)
                s.states[t] += x->states[t];
        }
        char line[512];
        int n = snprintf(line, sizeof(line),
                         "avg_latency_us:%.3f pending_reqs:%llu inflight_reqs:%llu%s",
                         s.replies ? (double)s.latency_ns / (double)s.replies / 1000.0 : 0.0,
                         (unsigned long long)s.pending, (unsigned long long)s.inflight,
                         s.workers_down ? " hard_tko;" : "");
        for (int t = 0; t < 4 && n < (int)sizeof(line); t++)
            if (s.states[t])
                n += snprintf(line + n, sizeof(line) - (size_t)n, " %s:%u", states[t],
                              s.states[t]);
        if (n < (int)sizeof(line))
            snprintf(line + n, sizeof(line) - (size_t)n,
                     "; requests:%llu replies:%llu timeouts:%llu errors:%llu down_fails:%llu "
                     "tko_events:%llu spool_depth:%llu",
                     (unsigned long long)s.requests, (unsigned long long)s.replies,
                     (unsigned long long)s.timeouts, (unsigned long long)s.errors,
                     (unsigned long long)s.down_fails, (unsigned long long)s.tko_events,
                     (unsigned long long)s.spool_depth);
        stat_put(o, dest[i], "%s", line);
    }
    free(dest);
}

/* A route's label with no spaces (a stat name cannot hold one). */
static void route_name(const struct view *v, unsigned i, char *out, size_t cap) {
    route_label(route_set_at(cl_config_routes(v->cfg), i), v->cfg, out, cap);
    for (char *p = out; *p; p++)
        if (*p == ' ' || (unsigned char)*p < 0x21)
            *p = '_';
}

/* `stats routes`: route_<id>:<label> <requests>, every route of the current configuration. */
static void stats_routes(struct stat_out *o, const struct view *v) {
    for (unsigned i = 0; i < v->nroutes; i++) {
        char label[200], name[240];
        route_name(v, i, label, sizeof(label));
        snprintf(name, sizeof(name), "route_%u:%s", i, label);
        stat_put(o, name, "%llu", (unsigned long long)v->routes[i]);
    }
}

/* The routes' own counters (route_ops.counters), summed by name. */
struct route_sums {
    struct {
        const char *name;
        uint64_t v;
    } e[32];
    unsigned n;
};

static void route_sum(void *arg, const char *name, uint64_t v) {
    struct route_sums *t = arg;
    unsigned i = 0;
    while (i < t->n && strcmp(t->e[i].name, name) != 0)
        i++;
    if (i == t->n) {
        if (t->n == sizeof(t->e) / sizeof(t->e[0]))
            return;
        t->e[t->n++].name = name;
    }
    t->e[i].v += v;
}

/*
 * `stats all`: the general ones, then mcrouter's names for what cellar
 * counts too, so that monitoring written for mcrouter finds them.
 */
static void stats_mcrouter(struct stat_out *o, const struct view *v) {
    static const struct {
        const char *name;
        int st;
    } same[] = {
        {"cmd_get_count", ST_cmd_get},       {"cmd_set_count", ST_cmd_set},
        {"cmd_delete_count", ST_cmd_delete}, {"cmd_touch_count", ST_cmd_touch},
        {"cmd_incr_count", ST_cmd_incr},     {"cmd_decr_count", ST_cmd_decr},
        {"cmd_flush_all_count", ST_cmd_flush}, {"result_error_count", ST_errors},
        {"result_client_error_count", ST_client_errors},
        {"result_remote_error_count", ST_remote_errors},
        {"failover_all", ST_FAILOVERS},
        {"num_client_connections", ST_CURR_CONNS},
        {"proxy_reqs_processing", ST_requests_inflight}, {"num_proxies", ST_THREADS},
    };
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
        stat_put(o, same[i].name, "%llu", (unsigned long long)v->v[same[i].st]);
    /* mcrouter's states of a destination: new (never up yet: connecting), up, down
       (marked down), closed (idle, no connection now).  A destination is a server as
       one worker sees it, as mcrouter's is one per proxy; they add up to num_servers */
    unsigned long long by[4] = {0};     /* new, up, down, closed */
    for (unsigned i = 0; i < v->nservers; i++)
        for (int t = 0; t < 4; t++)
            by[t] += v->servers[i].states[t];
    stat_put(o, "num_servers", "%llu", by[0] + by[1] + by[2] + by[3]);
    stat_put(o, "num_servers_new", "%llu", by[0]);
    stat_put(o, "num_servers_up", "%llu", by[1]);
    stat_put(o, "num_servers_down", "%llu", by[2]);
    stat_put(o, "num_servers_closed", "%llu", by[3]);
    const struct route_set *rs = cl_config_routes(v->cfg);
    uint64_t dev_null = 0;
    for (unsigned i = 0; i < v->nroutes; i++)
        if (strcmp(route_set_at(rs, i)->ops->name, "DevNullRoute") == 0)
            dev_null += v->routes[i];
    stat_put(o, "dev_null_requests", "%llu", (unsigned long long)dev_null);
    struct route_sums sums = {.n = 0};
    for (unsigned i = 0; i < v->nroutes; i++) {
        const struct route *r = route_set_at(rs, i);
        if (r->ops->counters)
            r->ops->counters(r, route_sum, &sums);
    }
    for (unsigned i = 0; i < sums.n; i++)
        stat_put(o, sums.e[i].name, "%llu", (unsigned long long)sums.e[i].v);
}

/* mcrouter's suspect_servers: each server marked down now, with its failures so far. */
static void stats_suspect(struct stat_out *o, const struct view *v) {
    for (unsigned i = 0; i < v->nservers; i++) {
        const struct server_view *s = &v->servers[i];
        if (s->state == CL_CONN_DOWN)
            stat_put(o, s->name, "status:tko num_failures:%llu",
                     (unsigned long long)s->fails_run);
    }
}

int admin_stats(struct router *rt, const char *group, size_t ngroup, bool binary,
                uint32_t opaque, char **out, size_t *nout) {
    *out = NULL;
    *nout = 0;
    /* cellar's groups, and mcrouter's: detailed and ods are all here;
       cmd-error, count and suspect_servers their parts; external none */
    enum { G_GENERAL, G_SERVERS, G_ROUTES, G_ALL, G_CMD_ERROR, G_COUNT, G_SUSPECT, G_EXTERNAL,
           G_VERSION } g;
    static const char *const names[] = {"", "servers", "routes", "all", "cmd-error", "count",
                                        "suspect_servers", "external", "version", "detailed",
                                        "ods"};
    unsigned k = 0, n = sizeof(names) / sizeof(names[0]);
    while (k < n && !(strlen(names[k]) == ngroup && memcmp(names[k], group, ngroup) == 0))
        k++;
    if (k == n)
        return 1;
    g = k > G_VERSION ? G_ALL : k;
    struct view v;
    if (!view_take(rt, &v))
        return -1;
    struct stat_out o = {.binary = binary, .opaque = opaque};
    switch (g) {
    case G_SERVERS: stats_servers(&o, &v); break;
    case G_ROUTES: stats_routes(&o, &v); break;
    case G_GENERAL:
    case G_ALL:
        stats_general(&o, &v);
        stats_mcrouter(&o, &v);
        break;
    case G_CMD_ERROR:
    case G_COUNT:
        o.only = g == G_CMD_ERROR ? "result_" : "cmd_";
        stats_mcrouter(&o, &v);
        break;
    case G_SUSPECT: stats_suspect(&o, &v); break;
    case G_EXTERNAL: break;
    case G_VERSION: stat_put(&o, "mcrouter-version", "%s", "cellar-router " ROUTER_VERSION); break;
    }
    view_release(&v);
    if (binary) {
        if (text_room(&o.t, 24))
            o.t.len += mc_bin_fmt_stat(o.t.p + o.t.len, opaque, NULL, 0, NULL, 0);
    } else {
        text_add(&o.t, "END\r\n", 5);
    }
    if (o.t.oom) {
        free(o.t.p);
        return -1;
    }
    *out = o.t.p;
    *nout = o.t.len;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Prometheus                                                               */
/* ---------------------------------------------------------------------- */

static void prom_family(struct text *t, const char *name, const char *type, const char *help) {
    text_printf(t, "# HELP cellar_router_%s %s\n# TYPE cellar_router_%s %s\n", name, help, name,
                type);
}

/* The opening of a per-server sample: cellar_router_<name>{server="<s>"} (the value follows). */
static void prom_server(struct text *t, const char *name, const struct server_view *s) {
    text_printf(t, "cellar_router_%s{server=\"", name);
    text_label_value(t, s->name);
    text_add(t, "\"} ", 3);
}

void admin_metrics(void *arg, struct text *t) {
    struct router *rt = arg;
    struct view v;
    if (!view_take(rt, &v)) {
        t->oom = true;
        return;
    }
    for (int i = 0; i < ST_COUNT; i++) {
        const struct stat_def *d = &stat_defs[i];
        const char *suffix = d->gauge ? "" : "_total";
        if (d->help != NULL) {
            char fam[96];
            snprintf(fam, sizeof(fam), "%s%s", d->family, suffix);
            prom_family(t, fam, d->gauge ? "gauge" : "counter", d->help);
        }
        text_printf(t, "cellar_router_%s%s%s%s%s %llu\n", d->family, suffix,
                    d->label ? "{" : "", d->label ? d->label : "", d->label ? "}" : "",
                    (unsigned long long)v.v[i]);
    }
    /* one family per server figure: its HELP/TYPE, then a sample per server */
#define SERVERS(name, type, help, fmt, expr)                                    \
    do {                                                                        \
        prom_family(t, name, type, help);                                      \
        for (unsigned i = 0; i < v.nservers; i++) {                             \
            const struct server_view *s = &v.servers[i];                        \
            prom_server(t, name, s);                                           \
            text_printf(t, fmt "\n", expr);                                    \
        }                                                                       \
    } while (0)
    SERVERS("server_up", "gauge",
            "1 when some worker is connected to the server and none has it marked down", "%d",
            s->state == CL_CONN_UP);
    SERVERS("server_workers_down", "gauge", "Workers that have the server marked down (TKO) now",
            "%u", s->workers_down);
    SERVERS("server_requests_total", "counter", "Requests sent to the server", "%llu",
            (unsigned long long)s->requests);
    SERVERS("server_errors_total", "counter",
            "Requests to the server that failed on the way (connection, protocol)", "%llu",
            (unsigned long long)s->errors);
    SERVERS("server_timeouts_total", "counter", "Requests to the server that timed out", "%llu",
            (unsigned long long)s->timeouts);
    SERVERS("server_down_fails_total", "counter",
            "Requests failed at once because the server was marked down", "%llu",
            (unsigned long long)s->down_fails);
    SERVERS("server_tko_events_total", "counter", "Times a worker marked the server down", "%llu",
            (unsigned long long)s->tko_events);
    SERVERS("server_spool_depth", "gauge", "Deletes waiting in the spool for the server", "%llu",
            (unsigned long long)s->spool_depth);
    /* a summary without quantiles: the time from send to reply, summed, and the replies */
    prom_family(t, "server_latency_seconds", "summary",
                "Time from sending a request to the server to its reply");
    for (unsigned i = 0; i < v.nservers; i++) {
        const struct server_view *s = &v.servers[i];
        prom_server(t, "server_latency_seconds_sum", s);
        text_printf(t, "%.9f\n", (double)s->latency_ns / 1e9);
        prom_server(t, "server_latency_seconds_count", s);
        text_printf(t, "%llu\n", (unsigned long long)s->replies);
    }
#undef SERVERS
    prom_family(t, "route_requests_total", "counter",
                "Requests each route of the current configuration was given (id: its place in "
                "the configuration)");
    for (unsigned i = 0; i < v.nroutes; i++) {
        char label[200];
        route_name(&v, i, label, sizeof(label));
        text_printf(t, "cellar_router_route_requests_total{id=\"%u\",route=\"", i);
        text_label_value(t, label);
        text_printf(t, "\"} %llu\n", (unsigned long long)v.routes[i]);
    }
    view_release(&v);
}

/* ---------------------------------------------------------------------- */
/* __mcrouter__.* gets                                                      */
/* ---------------------------------------------------------------------- */

/* A growing text of the answer. */
struct walk_out {
    struct route_walk w;
    const struct cellar_config *cfg;
    struct text *t;
    bool servers_only;
    unsigned seen[64], nseen;       /* route(): each server once */
};

static void indent(struct text *t, unsigned depth) {
    for (unsigned i = 0; i < depth; i++)
        text_printf(t, "  ");
}

static void walk_route(struct route_walk *w, const struct route *r, unsigned depth) {
    struct walk_out *o = (struct walk_out *)w;
    char label[256];
    if (o->servers_only)
        return;
    route_label(r, o->cfg, label, sizeof(label));
    indent(o->t, depth);
    text_printf(o->t, "%s\r\n", label);
}

static void walk_server(struct route_walk *w, unsigned server, unsigned depth) {
    struct walk_out *o = (struct walk_out *)w;
    if (o->servers_only) {
        for (unsigned i = 0; i < o->nseen; i++)
            if (o->seen[i] == server)
                return;
        if (o->nseen < sizeof(o->seen) / sizeof(o->seen[0]))
            o->seen[o->nseen++] = server;
    } else {
        indent(o->t, depth);
    }
    text_printf(o->t, "%s\r\n", cellar_config_server_name(o->cfg, server));
}

/* "OP,KEY" (the key may hold commas) into op and key. */
static bool op_and_key(const char *a, size_t n, enum msg_op *op, const char **key,
                       size_t *nkey) {
    const char *comma = memchr(a, ',', n);
    char name[32];
    if (comma == NULL || (size_t)(comma - a) >= sizeof(name))
        return false;
    memcpy(name, a, (size_t)(comma - a));
    name[comma - a] = '\0';
    int o = msg_op_by_name(name);
    if (o < 0)
        return false;
    *op = (enum msg_op)o;
    *key = comma + 1;
    *nkey = n - (size_t)(comma + 1 - a);
    return true;
}

int admin_mcrouter_get(struct router *rt, const struct cellar_config *cfg, const char *key,
                       size_t n, char **out, size_t *nout) {
    static const char pre[] = "__mcrouter__.";
    *out = NULL;
    *nout = 0;
    if (n < sizeof(pre) - 1 || memcmp(key, pre, sizeof(pre) - 1) != 0)
        return 1;
    const char *name = key + sizeof(pre) - 1;
    size_t len = n - (sizeof(pre) - 1);
    struct text t = {0};
#define IS(s) (len == sizeof(s) - 1 && memcmp(name, s, len) == 0)
#define CALL(s) (len > sizeof(s) && memcmp(name, s "(", sizeof(s)) == 0 && name[len - 1] == ')')
    if (IS("version")) {
        text_printf(&t, "cellar-router " ROUTER_VERSION);
    } else if (IS("hostid")) {
        text_printf(&t, "%llu", (unsigned long long)(cl_config_host_id(cfg) & 0xffffffffu));
    } else if (IS("config_file")) {
        text_printf(&t, "%s", rt->config_path);
    } else if (IS("config") || IS("config_md5_digest")) {
        FILE *f = fopen(rt->config_path, "r");
        char buf[4096];
        size_t k;
        while (f && (k = fread(buf, 1, sizeof(buf), f)) > 0)
            text_add(&t, buf, k);
        if (f)
            fclose(f);
        if (IS("config_md5_digest") && !t.oom) {    /* of the file as it is now, in hex */
            uint8_t d[16];
            md5(t.p, t.len, d);
            t.len = 0;
            for (int i = 0; i < 16; i++)
                text_printf(&t, "%02x", d[i]);
        }
    } else if (IS("config_age")) {
        text_printf(&t, "%lld", (long long)(time(NULL) - atomic_load(&rt->config_loaded)));
    } else if (IS("pools")) {
        text_printf(&t, "{");
        for (unsigned p = 0; p < cl_config_npools(cfg); p++) {
            text_printf(&t, "%s\n  \"%s\": [", p ? "," : "", cl_config_pool_name(cfg, p));
            unsigned first, count;
            cl_config_pool_servers(cfg, p, &first, &count);
            for (unsigned i = 0; i < count; i++)
                text_printf(&t, "%s\"%s\"", i ? ", " : "",
                            cellar_config_server_name(cfg, first + i));
            text_printf(&t, "]");
        }
        text_printf(&t, "\n}");
    } else if (CALL("route") || CALL("route_handles")) {
        bool servers_only = CALL("route");
        size_t at = servers_only ? sizeof("route") : sizeof("route_handles");
        enum msg_op op;
        const char *k;
        size_t nk;
        if (!op_and_key(name + at, len - at - 1, &op, &k, &nk))
            return 1;
        struct walk_out o = {.w = {walk_route, walk_server}, .cfg = cfg, .t = &t,
                             .servers_only = servers_only};
        if (!servers_only)
            text_printf(&t, "root\r\n");
        route_traverse(cl_config_root(cfg), cfg, op, k, nk, &o.w, servers_only ? 0 : 1);
        if (t.len >= 2)             /* the last line's end is the value's own */
            t.len -= 2;
    } else {
        return 1;
    }
#undef IS
#undef CALL
    if (t.oom) {
        free(t.p);
        return -1;
    }
    *out = t.p;
    *nout = t.len;
    return 0;
}
