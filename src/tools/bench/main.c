/*
 * main.c -- cellar-bench: options, phases, progress line, report.
 *
 *   parse options --> connect every thread's connections
 *     --> [preload: the key space split between threads, every key set once]
 *     --> run: threads start together; main sleeps a second at a time,
 *         prints the progress line (terminal only), says stop at the end
 *         of the duration; threads drain what is in flight and return
 *     --> merge the threads' totals --> text or JSON report
 *
 * Every run is bounded: by --duration, by --requests, or both (whichever
 * comes first), and a thread that waits --stall seconds for a reply gives
 * up.  The exit status is 0 only if no connection failed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/options.h"
#include "tools/bench/bench.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: cellar-bench [options]\n"
        "\n"
        "Target\n"
        "  -s, --server HOST        server address (127.0.0.1)\n"
        "  -p, --port PORT          server port (11211)\n"
        "  -P, --protocol NAME      text, meta or binary (text)\n"
        "Load\n"
        "  -t, --threads N          load threads, one epoll loop each (1)\n"
        "  -c, --conns N            connections per thread (50)\n"
        "  -d, --depth N            requests in flight per connection (1)\n"
        "  -D, --duration SECS      measure for SECS seconds (10 unless --requests)\n"
        "  -n, --requests N         stop after N requests in all\n"
        "  -w, --warmup SECS        run SECS seconds before measuring (with --duration)\n"
        "      --stall SECS         give up after SECS seconds without a reply (10)\n"
        "      --rate R             open loop: R requests a second in all, sent on a fixed\n"
        "                           schedule whatever the replies do (-d caps each\n"
        "                           connection's requests in flight); latency counts from\n"
        "                           the scheduled time.  Default: closed loop\n"
        "Workload\n"
        "  -r, --ratio SETS:GETS    share of sets and gets (0:1)\n"
        "  -m, --multiget N         keys per get (1)\n"
        "  -k, --keys N             key space size (100000)\n"
        "      --key-size N         bytes per key (16)\n"
        "      --key-prefix STR     start of every key (\"key:\")\n"
        "      --dist uniform|zipf  key popularity (uniform)\n"
        "      --alpha A            zipf exponent (0.99)\n"
        "  -v, --value-size N|A-B   value bytes, fixed or uniform in [A, B] (100)\n"
        "      --miss-ratio R       share of get keys drawn from a never-set range (0)\n"
        "      --preload            set every key of the key space before the run\n"
        "      --preload-only       preload, report, exit\n"
        "      --preload-depth N    pipeline depth while preloading (32)\n"
        "      --pool N             requests drawn ahead per thread and sent round and\n"
        "                           round (1000000, at most 32 MiB; 0: draw each one)\n"
        "      --seed N             random seed (1)\n"
        "      --io uring|epoll     how load threads drive their sockets (epoll): io_uring\n"
        "                           takes one system call a loop turn for all of them\n"
        "      --tls                speak TLS (the server's certificate is not checked;\n"
        "                           the handshake is done before the run; not with\n"
        "                           --io uring)\n"
        "      --spin               poll the sockets without ever sleeping (for a core of\n"
        "                           its own: saves the wake-ups, the CPU use reads 100%%)\n"
        "Output\n"
        "      --json               report as one JSON object\n"
        "      --progress/--no-progress  live line each second (default: if stdout is a tty)\n"
        "  -h, --help\n");
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static int parse_uint(const char *s, unsigned *out, unsigned lo, unsigned hi) {
    uint64_t v;
    if (parse_u64(s, &v) < 0 || v < lo || v > hi)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int parse_double(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

enum {
    OPT_STALL = 256, OPT_KEY_SIZE, OPT_KEY_PREFIX, OPT_DIST, OPT_ALPHA, OPT_MISS, OPT_PRELOAD,
    OPT_PRELOAD_ONLY, OPT_PRELOAD_DEPTH, OPT_POOL, OPT_SEED, OPT_SPIN, OPT_JSON, OPT_PROGRESS, OPT_NO_PROGRESS,
    OPT_RATE, OPT_IO, OPT_TLS,
};

static const struct option long_opts[] = {
    {"server", required_argument, 0, 's'},
    {"port", required_argument, 0, 'p'},
    {"protocol", required_argument, 0, 'P'},
    {"threads", required_argument, 0, 't'},
    {"conns", required_argument, 0, 'c'},
    {"depth", required_argument, 0, 'd'},
    {"duration", required_argument, 0, 'D'},
    {"requests", required_argument, 0, 'n'},
    {"warmup", required_argument, 0, 'w'},
    {"stall", required_argument, 0, OPT_STALL},
    {"rate", required_argument, 0, OPT_RATE},
    {"io", required_argument, 0, OPT_IO},
    {"tls", no_argument, 0, OPT_TLS},
    {"ratio", required_argument, 0, 'r'},
    {"multiget", required_argument, 0, 'm'},
    {"keys", required_argument, 0, 'k'},
    {"key-size", required_argument, 0, OPT_KEY_SIZE},
    {"key-prefix", required_argument, 0, OPT_KEY_PREFIX},
    {"dist", required_argument, 0, OPT_DIST},
    {"alpha", required_argument, 0, OPT_ALPHA},
    {"value-size", required_argument, 0, 'v'},
    {"miss-ratio", required_argument, 0, OPT_MISS},
    {"preload", no_argument, 0, OPT_PRELOAD},
    {"preload-only", no_argument, 0, OPT_PRELOAD_ONLY},
    {"preload-depth", required_argument, 0, OPT_PRELOAD_DEPTH},
    {"pool", required_argument, 0, OPT_POOL},
    {"seed", required_argument, 0, OPT_SEED},
    {"spin", no_argument, 0, OPT_SPIN},
    {"json", no_argument, 0, OPT_JSON},
    {"progress", no_argument, 0, OPT_PROGRESS},
    {"no-progress", no_argument, 0, OPT_NO_PROGRESS},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

#define BAD(...)                                                                   \
    do {                                                                           \
        fprintf(stderr, "cellar-bench: ");                                         \
        fprintf(stderr, __VA_ARGS__);                                              \
        fputc('\n', stderr);                                                       \
        return -1;                                                                 \
    } while (0)

static int parse_args(int argc, char **argv, struct bench_config *cfg) {
    *cfg = (struct bench_config){
        .host = "127.0.0.1", .port = "11211", .threads = 1, .conns = 50, .depth = 1,
        .stall = 10, .proto = &bench_proto_text, .preload_depth = 32, .pool = 1000000,
        .seed = 1,
        .progress = -1,
        .wl = {.keys = 100000, .key_size = 16, .prefix = "key:", .multiget = 1,
               .dist = KEY_UNIFORM, .alpha = 0.99, .vmin = 100, .vmax = 100},
    };
    int o;
    bool have_duration = false;
    static struct options_getopt g;
    char *arg;
    options_getopt_init(&g, "cellar-bench");
    options_getopt_table(&g, long_opts);
    while ((o = options_getopt_next(&g, argc, argv, &arg)) != -1) {
        if (o == '?' || o == ':')
            options_getopt_complain(&g, stderr, o, argv);
        switch (o) {
        case 's': cfg->host = optarg; break;
        case 'p': cfg->port = optarg; break;
        case 'P':
            cfg->proto = bench_proto_find(optarg);
            if (cfg->proto == NULL)
                BAD("protocol \"%s\" is not supported (text is)", optarg);
            break;
        case 't':
            if (parse_uint(optarg, &cfg->threads, 1, 1024) < 0) BAD("bad --threads");
            break;
        case 'c':
            if (parse_uint(optarg, &cfg->conns, 1, 100000) < 0) BAD("bad --conns");
            break;
        case 'd':
            if (parse_uint(optarg, &cfg->depth, 1, 65536) < 0) BAD("bad --depth");
            break;
        case 'D':
            if (parse_double(optarg, &cfg->duration) < 0) BAD("bad --duration");
            have_duration = true;
            break;
        case 'n':
            if (parse_u64(optarg, &cfg->requests) < 0) BAD("bad --requests");
            break;
        case 'w':
            if (parse_double(optarg, &cfg->warmup) < 0) BAD("bad --warmup");
            break;
        case OPT_STALL:
            if (parse_double(optarg, &cfg->stall) < 0 || cfg->stall <= 0) BAD("bad --stall");
            break;
        case OPT_TLS:
            cfg->tls = true;
            break;
        case OPT_IO:
            if (strcmp(optarg, "uring") != 0 && strcmp(optarg, "epoll") != 0)
                BAD("bad --io (uring or epoll)");
            cfg->uring = strcmp(optarg, "uring") == 0;
            break;
        case OPT_RATE:
            if (parse_double(optarg, &cfg->rate) < 0 || cfg->rate <= 0) BAD("bad --rate");
            break;
        case 'r': {
            unsigned s, g;
            char tail;
            if (sscanf(optarg, "%u:%u%c", &s, &g, &tail) != 2 || s + g == 0)
                BAD("bad --ratio (want SETS:GETS, e.g. 1:9)");
            cfg->wl.set_ratio = (double)s / ((double)s + (double)g);
            break;
        }
        case 'm':
            if (parse_uint(optarg, &cfg->wl.multiget, 1, WORKLOAD_MULTIGET_MAX) < 0)
                BAD("bad --multiget");
            break;
        case 'k':
            if (parse_u64(optarg, &cfg->wl.keys) < 0) BAD("bad --keys");
            break;
        case OPT_KEY_SIZE:
            if (parse_uint(optarg, &cfg->wl.key_size, 1, WORKLOAD_KEY_MAX) < 0)
                BAD("bad --key-size");
            break;
        case OPT_KEY_PREFIX:
            if (strlen(optarg) > WORKLOAD_PREFIX_MAX) BAD("--key-prefix too long");
            strcpy(cfg->wl.prefix, optarg);
            break;
        case OPT_DIST:
            if (strcmp(optarg, "uniform") == 0)
                cfg->wl.dist = KEY_UNIFORM;
            else if (strcmp(optarg, "zipf") == 0)
                cfg->wl.dist = KEY_ZIPF;
            else
                BAD("bad --dist (uniform or zipf)");
            break;
        case OPT_ALPHA:
            if (parse_double(optarg, &cfg->wl.alpha) < 0) BAD("bad --alpha");
            break;
        case 'v': {
            unsigned a, b;
            char tail;
            int n = sscanf(optarg, "%u-%u%c", &a, &b, &tail);
            if (n == 1 && strchr(optarg, '-') == NULL)
                b = a;
            else if (n != 2)
                BAD("bad --value-size (N or A-B)");
            cfg->wl.vmin = a;
            cfg->wl.vmax = b;
            break;
        }
        case OPT_MISS:
            if (parse_double(optarg, &cfg->wl.miss_ratio) < 0) BAD("bad --miss-ratio");
            break;
        case OPT_PRELOAD: cfg->preload = true; break;
        case OPT_PRELOAD_ONLY: cfg->preload = cfg->preload_only = true; break;
        case OPT_PRELOAD_DEPTH:
            if (parse_uint(optarg, &cfg->preload_depth, 1, 65536) < 0) BAD("bad --preload-depth");
            break;
        case OPT_POOL:
            if (parse_u64(optarg, &cfg->pool) < 0 || cfg->pool > 100000000) BAD("bad --pool");
            break;
        case OPT_SEED:
            if (parse_u64(optarg, &cfg->seed) < 0) BAD("bad --seed");
            break;
        case OPT_SPIN: cfg->spin = true; break;
        case OPT_JSON: cfg->json = true; break;
        case OPT_PROGRESS: cfg->progress = 1; break;
        case OPT_NO_PROGRESS: cfg->progress = 0; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind < argc)
        BAD("unexpected argument \"%s\"", argv[optind]);
    if (!have_duration && cfg->requests == 0)
        cfg->duration = 10;
    if (have_duration && cfg->duration <= 0 && cfg->requests == 0)
        BAD("a run needs a bound: --duration > 0 or --requests");
    if (cfg->warmup > 0 && cfg->duration <= 0)
        BAD("--warmup needs --duration");
    const char *why = workload_init(&cfg->wl);
    if (why)
        BAD("%s", why);
    if (cfg->progress < 0)
        cfg->progress = !cfg->json && isatty(STDOUT_FILENO);
    if (cfg->json)
        cfg->progress = 0;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Phases                                                                   */
/* ---------------------------------------------------------------------- */

struct phase_result {
    struct bench_stats st;
    struct histogram *h;
    double secs;            /* first request to last reply, over all threads */
    double cpu;             /* this process's CPU seconds during the phase */
    double busy;            /* threads' time outside epoll_wait / their wall time (mean) */
};

static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void sleep_until(uint64_t t_ns) {
    uint64_t now = bench_now_ns();
    if (t_ns <= now)
        return;
    uint64_t d = t_ns - now;
    struct timespec ts = {(time_t)(d / 1000000000ull), (long)(d % 1000000000ull)};
    nanosleep(&ts, NULL);
}

static void progress_line(struct bench_thread *th, unsigned n, double elapsed, double interval,
                          bool warm, struct histogram *h) {
    struct bench_stats s = {0};
    histogram_init(h);
    for (unsigned i = 0; i < n; i++)
        bench_thread_take(&th[i], &s, h);
    double ops = interval > 0 ? (double)s.reqs / interval : 0;
    double hit = s.keys ? 100.0 * (double)s.hits / (double)s.keys : 0;
    printf("\r%6.1fs %s %10.0f ops/s  hit %6.2f%%  p99 %9.1f us  errors %" PRIu64 "   ",
           elapsed, warm ? "warmup" : "      ", ops, hit,
           (double)histogram_percentile(h, 99) / 1e3, s.errors);
    fflush(stdout);
}

static int run_phase(struct bench_thread *th, const struct bench_config *cfg,
                     struct bench_shared *sh, enum bench_phase phase, struct phase_result *res) {
    unsigned n = cfg->threads;
    atomic_store(&sh->stop, 0);
    atomic_store(&sh->done, 0);
    pthread_barrier_init(&sh->start, NULL, n + 1);
    uint64_t keys = cfg->wl.keys;
    for (unsigned i = 0; i < n; i++) {
        struct bench_thread *t = &th[i];
        t->phase = phase;
        t->issued = 0;
        t->next_key = keys * i / n;
        t->end_key = keys * (i + 1) / n;
        t->quota = cfg->requests ? cfg->requests / n + (i < cfg->requests % n) : UINT64_MAX;
        pthread_create(&t->tid, NULL, bench_thread_run, t);
    }
    double cpu0 = cpu_seconds();
    uint64_t t0 = bench_now_ns();
    sh->warm_end_ns = phase == BENCH_PHASE_RUN ? t0 + (uint64_t)(cfg->warmup * 1e9) : 0;
    pthread_barrier_wait(&sh->start);
    uint64_t deadline = phase == BENCH_PHASE_RUN && cfg->duration > 0
                            ? t0 + (uint64_t)((cfg->warmup + cfg->duration) * 1e9)
                            : UINT64_MAX;
    struct histogram *hp = sh->progress ? malloc(sizeof(*hp)) : NULL;
    uint64_t last = t0;
    bool warm = sh->warm_end_ns > t0;
    /* Bounded: ends at the deadline, or when every thread has run out of work. */
    while ((unsigned)atomic_load(&sh->done) < n) {
        uint64_t now = bench_now_ns();
        if (now >= deadline) {
            atomic_store(&sh->stop, 1);
            break;
        }
        uint64_t next = now + 100000000ull;     /* look at the threads every 100 ms */
        if (next > deadline)
            next = deadline;
        if (warm && next > sh->warm_end_ns)
            next = sh->warm_end_ns;
        sleep_until(next);
        now = bench_now_ns();
        if (warm && now >= sh->warm_end_ns) {
            warm = false;
            cpu0 = cpu_seconds();       /* the CPU used while warming up is not the run's */
        }
        if (hp && now - last >= 1000000000ull) {
            progress_line(th, n, (double)(now - t0) / 1e9, (double)(now - last) / 1e9,
                          now < sh->warm_end_ns, hp);
            last = now;
        }
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(th[i].tid, NULL);
    if (hp) {
        printf("\r%100s\r", "");
        fflush(stdout);
        free(hp);
    }
    pthread_barrier_destroy(&sh->start);

    res->cpu = cpu_seconds() - cpu0;
    memset(&res->st, 0, sizeof(res->st));
    histogram_init(res->h);
    uint64_t start = UINT64_MAX, end = 0;
    int failed = 0;
    double busy = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t wall = th[i].t_end > th[i].t_start ? th[i].t_end - th[i].t_start : 0;
        if (wall > 0)
            busy += 1.0 - (double)(th[i].wait_ns < wall ? th[i].wait_ns : wall) / (double)wall;
        bench_stats_add(&res->st, &th[i].total);
        histogram_merge(res->h, th[i].htotal);
        start = th[i].t_start < start ? th[i].t_start : start;
        end = th[i].t_end > end ? th[i].t_end : end;
        if (th[i].failed) {
            fprintf(stderr, "cellar-bench: thread %u: %s\n", i, th[i].err);
            failed = 1;
        }
    }
    res->secs = end > start ? (double)(end - start) / 1e9 : 0;
    res->busy = busy / n;
    return failed ? -1 : 0;
}

/* ---------------------------------------------------------------------- */
/* Report                                                                   */
/* ---------------------------------------------------------------------- */

static double rate(uint64_t n, double secs) { return secs > 0 ? (double)n / secs : 0; }

static void report_text(const struct bench_config *cfg, const struct phase_result *pre,
                        const struct phase_result *run) {
    const struct workload *wl = &cfg->wl;
    printf("cellar-bench: %s %s:%s, %u thread%s x %u conns, depth %u\n", cfg->proto->name,
           cfg->host, cfg->port, cfg->threads, cfg->threads == 1 ? "" : "s", cfg->conns,
           cfg->depth);
    printf("workload:     %.0f%% get (%u key%s) / %.0f%% set, %" PRIu64 " keys %s",
           100 * (1 - wl->set_ratio), wl->multiget, wl->multiget == 1 ? "" : "s",
           100 * wl->set_ratio, wl->keys, wl->dist == KEY_ZIPF ? "zipf" : "uniform");
    if (wl->dist == KEY_ZIPF)
        printf(" %.2f", wl->alpha);
    if (wl->vmin == wl->vmax)
        printf(", values %u B", wl->vmin);
    else
        printf(", values %u-%u B", wl->vmin, wl->vmax);
    printf(", miss range %.0f%%\n", 100 * wl->miss_ratio);
    if (pre)
        printf("preload:      %" PRIu64 " sets in %.2f s (%.0f sets/s), errors %" PRIu64 "\n",
               pre->st.reqs, pre->secs, rate(pre->st.reqs, pre->secs), pre->st.errors);
    if (!run)
        return;
    const struct histogram *h = run->h;
    printf("requests:     %" PRIu64 " in %.2f s: %.0f requests/s, %.0f keys/s\n", run->st.reqs,
           run->secs, rate(run->st.reqs, run->secs),
           rate(run->st.keys + run->st.sets, run->secs));
    printf("              gets %" PRIu64 ", sets %" PRIu64 ", errors %" PRIu64 "\n", run->st.gets,
           run->st.sets, run->st.errors);
    if (run->st.keys)
        printf("hit ratio:    %.2f%% (%" PRIu64 " of %" PRIu64 " keys)\n",
               100.0 * (double)run->st.hits / (double)run->st.keys, run->st.hits, run->st.keys);
    printf("latency us:   p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  p99.99 %.1f  max %.1f"
           "  (mean %.1f)\n",
           histogram_percentile(h, 50) / 1e3, histogram_percentile(h, 90) / 1e3,
           histogram_percentile(h, 99) / 1e3, histogram_percentile(h, 99.9) / 1e3,
           histogram_percentile(h, 99.99) / 1e3, (double)h->max / 1e3, histogram_mean(h) / 1e3);
    printf("bench load:   threads busy %.0f%% of the time (outside epoll_wait); process cpu %.2f"
           " cores\n", 100 * run->busy, run->secs > 0 ? run->cpu / run->secs : 0);
}

static void json_phase(const char *name, const struct phase_result *r) {
    const struct histogram *h = r->h;
    printf("\"%s\":{\"requests\":%" PRIu64 ",\"seconds\":%.6f,\"ops_per_sec\":%.1f,"
           "\"keys_per_sec\":%.1f,\"gets\":%" PRIu64 ",\"sets\":%" PRIu64 ",\"keys\":%" PRIu64
           ",\"hits\":%" PRIu64 ",\"misses\":%" PRIu64 ",\"hit_ratio\":%.6f,\"errors\":%" PRIu64
           ",\"latency_us\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,"
           "\"p9999\":%.3f,\"max\":%.3f,\"mean\":%.3f},\"cpu_seconds\":%.4f,\"cpu_util\":%.4f,"
           "\"busy\":%.4f}",
           name, r->st.reqs, r->secs, rate(r->st.reqs, r->secs),
           rate(r->st.keys + r->st.sets, r->secs), r->st.gets, r->st.sets, r->st.keys,
           r->st.hits, r->st.keys - r->st.hits,
           r->st.keys ? (double)r->st.hits / (double)r->st.keys : 0.0, r->st.errors,
           histogram_percentile(h, 50) / 1e3, histogram_percentile(h, 90) / 1e3,
           histogram_percentile(h, 99) / 1e3, histogram_percentile(h, 99.9) / 1e3,
           histogram_percentile(h, 99.99) / 1e3, (double)h->max / 1e3, histogram_mean(h) / 1e3,
           r->cpu,
           r->secs > 0 ? r->cpu / r->secs : 0.0, r->busy);
}

static void report_json(const struct bench_config *cfg, const struct phase_result *pre,
                        const struct phase_result *run) {
    const struct workload *wl = &cfg->wl;
    printf("{\"config\":{\"protocol\":\"%s\",\"server\":\"%s\",\"port\":\"%s\",\"threads\":%u,"
           "\"conns_per_thread\":%u,\"depth\":%u,\"duration\":%.3f,\"warmup\":%.3f,"
           "\"requests\":%" PRIu64 ",\"set_ratio\":%.6f,\"multiget\":%u,\"keys\":%" PRIu64
           ",\"key_size\":%u,\"dist\":\"%s\",\"alpha\":%.4f,\"value_min\":%u,\"value_max\":%u,"
           "\"miss_ratio\":%.6f,\"preload\":%s,\"pool\":%" PRIu64 ",\"seed\":%" PRIu64
           ",\"rate\":%.1f}",
           cfg->proto->name, cfg->host, cfg->port, cfg->threads, cfg->conns, cfg->depth,
           cfg->duration, cfg->warmup, cfg->requests, wl->set_ratio, wl->multiget, wl->keys,
           wl->key_size, wl->dist == KEY_ZIPF ? "zipf" : "uniform", wl->alpha, wl->vmin,
           wl->vmax, wl->miss_ratio, cfg->preload ? "true" : "false", cfg->pool, cfg->seed,
           cfg->rate);
    if (pre) {
        printf(",");
        json_phase("preload", pre);
    }
    if (run) {
        printf(",");
        json_phase("run", run);
    }
    printf("}\n");
}

int main(int argc, char **argv) {
    struct bench_config cfg;
    if (parse_args(argc, argv, &cfg) < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct bench_shared sh = {.progress = cfg.progress > 0};
    if (cfg.tls && cfg.uring) {
        fprintf(stderr, "cellar-bench: --tls takes --io epoll\n");
        return 2;
    }
    int gai = getaddrinfo(cfg.host, cfg.port, &hints, &sh.addr);
    if (gai != 0) {
        fprintf(stderr, "cellar-bench: %s:%s: %s\n", cfg.host, cfg.port, gai_strerror(gai));
        return 1;
    }
    if (cfg.tls && (sh.tls = bench_tls_ctx()) == NULL) {
        fprintf(stderr, "cellar-bench: out of memory\n");
        freeaddrinfo(sh.addr);
        return 1;
    }
    char *value = malloc(cfg.wl.vmax ? cfg.wl.vmax : 1);
    for (uint32_t i = 0; i < cfg.wl.vmax; i++)
        value[i] = (char)('a' + i % 26);
    sh.value = value;

    struct bench_thread *th = calloc(cfg.threads, sizeof(*th));
    int rc = 0;
    unsigned made = 0;
    for (; made < cfg.threads; made++) {
        if (bench_thread_setup(&th[made], &cfg, &sh, made) < 0) {
            fprintf(stderr, "cellar-bench: %s:%s: %s\n", cfg.host, cfg.port, th[made].err);
            made++;
            rc = 1;
            break;
        }
    }

    struct phase_result pre = {.h = malloc(sizeof(struct histogram))};
    struct phase_result run = {.h = malloc(sizeof(struct histogram))};
    bool did_pre = false, did_run = false;
    if (rc == 0 && cfg.preload) {
        if (cfg.progress) {
            printf("preloading %" PRIu64 " keys...", cfg.wl.keys);
            fflush(stdout);
        }
        rc = run_phase(th, &cfg, &sh, BENCH_PHASE_PRELOAD, &pre) < 0 ? 1 : 0;
        did_pre = true;
        if (rc == 0 && pre.st.errors) {
            fprintf(stderr, "cellar-bench: %" PRIu64 " preload sets failed\n", pre.st.errors);
            rc = 1;
        }
    }
    if (rc == 0 && !cfg.preload_only) {
        rc = run_phase(th, &cfg, &sh, BENCH_PHASE_RUN, &run) < 0 ? 1 : 0;
        did_run = true;
    }
    if (did_pre || did_run) {
        if (cfg.json)
            report_json(&cfg, did_pre ? &pre : NULL, did_run ? &run : NULL);
        else
            report_text(&cfg, did_pre ? &pre : NULL, did_run ? &run : NULL);
    }
    for (unsigned i = 0; i < made; i++)
        bench_thread_teardown(&th[i]);
    free(th);
    free(pre.h);
    free(run.h);
    free(value);
    freeaddrinfo(sh.addr);
    bench_tls_ctx_free(sh.tls);
    return rc;
}
