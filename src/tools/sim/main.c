/*
 * main.c -- cellar-sim: miss-ratio curves of cellar's eviction policies,
 * measured by running the storage engine itself over a trace.
 *
 *   trace (file or synthetic, in memory, read-only)
 *      |
 *      +--> job: policy x cache size --> its own struct engine --> hits/misses
 *      +--> job ...                       (worker threads take jobs in turn)
 *      +--> OPT x cache size (Belady, the lower bound)
 *      |
 *   table on stdout, --csv, --svg
 *
 * Every policy runs on a real engine with the code cellard runs, the
 * clock driven by trace time, engine_step() every --step requests.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/options.h"
#include "storage/evict.h"
#include "tools/sim/opt.h"
#include "tools/sim/replay.h"
#include "tools/sim/report.h"
#include "tools/sim/trace.h"

#define MAX_POLICIES 32
#define MAX_SIZES 64

struct opts {
    const char *trace, *format, *synth, *csv_out, *svg_out, *dump;
    struct trace_csv csv;
    uint64_t seed;
    const char *policies[MAX_POLICIES];
    char seg_names[MAX_POLICIES][32];   /* where policies[i] names a "seg-..." back end */
    size_t npol;
    double size_val[MAX_SIZES];
    bool size_frac[MAX_SIZES];
    size_t nsizes;
    bool bytes, opt, quiet;
    bool count_meta;            /* --count-meta: table or index inside the capacity */
    uint32_t page_size;
    unsigned step, threads;
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: cellar-sim (--trace FILE | --synth SPEC) [options]\n"
            "  -t, --trace FILE      replay a trace file\n"
            "  -F, --format NAME     cellar | txt | csv | oracle (default: guessed)\n"
            "      --csv-cols SPEC   csv columns, 1-based (default time=1,id=2,size=3;\n"
            "                        ttl=N adds a TTL column)\n"
            "      --csv-delim C     csv delimiter (default ',')\n"
            "      --csv-header      the csv's first line is a header\n"
            "  -g, --synth SPEC      generate a trace, e.g. zipf:alpha=0.9,objects=1M,\n"
            "                        requests=10M; kinds zipf, uniform, scan, shift, ttl\n"
            "                        (see src/tools/sim/trace.h)\n"
            "  -s, --seed N          seed for --synth (default 1)\n"
            "  -p, --policy LIST     policies, comma-separated, or all (default all); with\n"
            "                        --bytes, seg-fifo, seg-merge, seg-s3fifo: the segment\n"
            "                        back end\n"
            "  -c, --size LIST       cache sizes: absolute (1000, 64MiB) or fractions of\n"
            "                        the working set (0.001, 1%%) (default 0.001,0.01,0.1)\n"
            "  -b, --bytes           byte capacity through the slab allocator\n"
            "                        (default: object count, every object one slot)\n"
            "      --count-meta      with --bytes: the hash table (slab) or index (seg-*)\n"
            "                        counts against the capacity (equal total memory)\n"
            "      --page-size N     slab page size in byte mode (default: the cache / 128,\n"
            "                        a power of two from 4KiB to 1MiB)\n"
            "      --step N          engine_step() every N requests (default 1000)\n"
            "  -j, --threads N       engines run in parallel (default: CPUs)\n"
            "      --no-opt          leave out Belady's OPT (object mode only anyway)\n"
            "      --csv FILE        write CSV (- for stdout)\n"
            "      --svg FILE        write a miss-ratio chart\n"
            "      --dump FILE       write the trace (libCacheSim txt if FILE ends in .txt,\n"
            "                        else oracleGeneral) and stop\n"
            "  -q, --quiet           no progress line\n"
            "  -l, --list            list the policies\n"
            "  -h, --help            print this help and exit\n");
}

static int bad(const char *what, const char *v) {
    fprintf(stderr, "cellar-sim: bad %s \"%s\"\n", what, v);
    return 2;
}

/* A count with an optional K/M/G (x1000) or KiB/MiB/GiB (x1024) suffix. */
static bool parse_amount(const char *s, double *out) {
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (end == s || errno != 0 || d < 0)
        return false;
    static const struct {
        const char *suf;
        double mul;
    } sufs[] = {{"", 1},       {"K", 1e3},          {"M", 1e6},          {"G", 1e9},
                {"k", 1e3},    {"KiB", 1024.0},     {"MiB", 1048576.0},  {"GiB", 1073741824.0},
                {"KB", 1024.0}, {"MB", 1048576.0},  {"GB", 1073741824.0}};
    for (size_t i = 0; i < sizeof(sufs) / sizeof(sufs[0]); i++)
        if (strcmp(end, sufs[i].suf) == 0) {
            *out = d * sufs[i].mul;
            return true;
        }
    return false;
}

/*
 * Cache sizes: "12%" and anything with a decimal point (0.001) are
 * fractions of the working set, resolved once the trace is read; plain
 * counts, with K/M/G or KiB/MiB/GiB, are absolute (objects, or bytes with
 * --bytes).
 */
static int parse_sizes(struct opts *o, const char *list) {
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", list);
    o->nsizes = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (o->nsizes == MAX_SIZES)
            return bad("size list (too long)", list);
        size_t n = strlen(tok);
        double v;
        if (n > 1 && tok[n - 1] == '%') {
            tok[n - 1] = '\0';
            if (!parse_amount(tok, &v))
                return bad("size", tok);
            o->size_val[o->nsizes] = v / 100;
            o->size_frac[o->nsizes++] = true;
        } else if (strchr(tok, '.') != NULL && strpbrk(tok, "KMGkiB") == NULL) {
            if (!parse_amount(tok, &v) || v > 1)
                return bad("size (a fraction is at most 1)", tok);
            o->size_val[o->nsizes] = v;
            o->size_frac[o->nsizes++] = true;
        } else {
            if (!parse_amount(tok, &v) || v < 1)
                return bad("size", tok);
            o->size_val[o->nsizes] = floor(v);
            o->size_frac[o->nsizes++] = false;
        }
    }
    return 0;
}

/* Policy names as evict.c lists them; "all" is every one, in that order. */
static int parse_policies(struct opts *o, const char *list) {
    char *buf = strdup(list);
    o->npol = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "all") == 0) {
            for (unsigned i = 0; i < evict_policy_count() && o->npol < MAX_POLICIES; i++)
                o->policies[o->npol++] = evict_policy_at(i)->name;
            continue;
        }
        if (strncmp(tok, "seg-", 4) == 0 &&
            (evict_policy_find(tok + 4) != NULL || strcmp(tok + 4, "merge") == 0)) {
            if (o->npol < MAX_POLICIES && strlen(tok) < sizeof(o->seg_names[0])) {
                /* the segment back end, with this policy */
                snprintf(o->seg_names[o->npol], sizeof(o->seg_names[0]), "%s", tok);
                o->policies[o->npol] = o->seg_names[o->npol];
                o->npol++;
            }
            continue;
        }
        const struct evict_policy *p = evict_policy_find(tok);
        if (p == NULL) {
            int rc = bad("policy (see --list)", tok);
            free(buf);
            return rc;
        }
        if (o->npol < MAX_POLICIES)
            o->policies[o->npol++] = p->name;
    }
    free(buf);
    return o->npol > 0 ? 0 : bad("policy list", list);
}

static int parse_csv_cols(struct opts *o, const char *spec) {
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", spec);
    o->csv.time_col = o->csv.id_col = o->csv.size_col = o->csv.ttl_col = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (eq == NULL)
            return bad("--csv-cols", spec);
        *eq = '\0';
        unsigned v = (unsigned)atoi(eq + 1);
        if (strcmp(tok, "time") == 0)
            o->csv.time_col = v;
        else if (strcmp(tok, "id") == 0 || strcmp(tok, "obj_id") == 0)
            o->csv.id_col = v;
        else if (strcmp(tok, "size") == 0 || strcmp(tok, "obj_size") == 0)
            o->csv.size_col = v;
        else if (strcmp(tok, "ttl") == 0)
            o->csv.ttl_col = v;
        else
            return bad("--csv-cols", spec);
    }
    return o->csv.id_col ? 0 : bad("--csv-cols (needs id=)", spec);
}

static int parse_args(struct opts *o, int argc, char **argv) {
    enum { O_CSV_COLS = 256, O_CSV_DELIM, O_CSV_HEADER, O_PAGE, O_STEP, O_NOOPT, O_CSV, O_SVG, O_META,
           O_DUMP };
    static const struct option longs[] = {
        {"trace", required_argument, 0, 't'},   {"format", required_argument, 0, 'F'},
        {"csv-cols", required_argument, 0, O_CSV_COLS},
        {"csv-delim", required_argument, 0, O_CSV_DELIM},
        {"csv-header", no_argument, 0, O_CSV_HEADER},
        {"synth", required_argument, 0, 'g'},   {"seed", required_argument, 0, 's'},
        {"policy", required_argument, 0, 'p'},  {"size", required_argument, 0, 'c'},
        {"bytes", no_argument, 0, 'b'},         {"page-size", required_argument, 0, O_PAGE},
        {"count-meta", no_argument, 0, O_META},
        {"step", required_argument, 0, O_STEP}, {"threads", required_argument, 0, 'j'},
        {"no-opt", no_argument, 0, O_NOOPT},    {"csv", required_argument, 0, O_CSV},
        {"svg", required_argument, 0, O_SVG},   {"quiet", no_argument, 0, 'q'},
        {"list", no_argument, 0, 'l'},          {"help", no_argument, 0, 'h'},
        {"dump", required_argument, 0, O_DUMP},
        {0, 0, 0, 0},
    };
    *o = (struct opts){.seed = 1, .opt = true, .step = 1000};
    o->csv = (struct trace_csv){.time_col = 1, .id_col = 2, .size_col = 3, .delim = ','};
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    o->threads = n > 0 ? (unsigned)n : 1;
    int rc, c;
    if ((rc = parse_policies(o, "all")) != 0 || (rc = parse_sizes(o, "0.001,0.01,0.1")) != 0)
        return rc;
    static struct options_getopt g;
    char *arg;
    options_getopt_init(&g, "cellar-sim");
    options_getopt_table(&g, longs);
    while ((c = options_getopt_next(&g, argc, argv, &arg)) != -1) {
        double v;
        if (c == '?' || c == ':')
            options_getopt_complain(&g, stderr, c, argv);
        switch (c) {
        case 't': o->trace = optarg; break;
        case 'F': o->format = optarg; break;
        case O_CSV_COLS:
            if ((rc = parse_csv_cols(o, optarg)) != 0)
                return rc;
            break;
        case O_CSV_DELIM:
            o->csv.delim = strcmp(optarg, "\\t") == 0 ? '\t' : optarg[0];
            break;
        case O_CSV_HEADER: o->csv.header = true; break;
        case 'g': o->synth = optarg; break;
        case 's': o->seed = strtoull(optarg, NULL, 0); break;
        case 'p':
            if ((rc = parse_policies(o, optarg)) != 0)
                return rc;
            break;
        case 'c':
            if ((rc = parse_sizes(o, optarg)) != 0)
                return rc;
            break;
        case 'b': o->bytes = true; break;
        case O_META: o->count_meta = true; break;
        case O_PAGE:
            if (!parse_amount(optarg, &v) || v < 1024 || v > (1 << 30))
                return bad("--page-size", optarg);
            o->page_size = (uint32_t)v;
            break;
        case O_STEP: o->step = (unsigned)strtoul(optarg, NULL, 0); break;
        case 'j':
            o->threads = (unsigned)strtoul(optarg, NULL, 0);
            if (o->threads == 0)
                o->threads = 1;
            break;
        case O_NOOPT: o->opt = false; break;
        case O_CSV: o->csv_out = optarg; break;
        case O_SVG: o->svg_out = optarg; break;
        case O_DUMP: o->dump = optarg; break;
        case 'q': o->quiet = true; break;
        case 'l':
            for (unsigned i = 0; i < evict_policy_count(); i++)
                printf("%s\n", evict_policy_at(i)->name);
            exit(0);
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 2;
        }
    }
    if ((o->trace == NULL) == (o->synth == NULL)) {
        fprintf(stderr, "cellar-sim: give one of --trace and --synth\n");
        usage(stderr);
        return 2;
    }
    return 0;
}

/* ---- running the jobs ---- */

struct runner {
    struct sim_grid *g;
    const struct opts *o;
    _Atomic size_t next, done;
    size_t total;
    pthread_mutex_t out;
    bool progress;
};

/* One cell of the grid: OPT, or a fresh engine for policy x size. */
static void run_job(struct runner *rn, struct sim_job *j) {
    if (j->capacity == 0) {
        j->rc = -1;
        snprintf(j->err, sizeof(j->err), "cache size rounds to 0");
        return;
    }
    if (strcmp(j->policy, "OPT") == 0) {
        if (rn->g->bytes) {
            j->rc = -1;
            snprintf(j->err, sizeof(j->err), "OPT is for object capacity only");
            return;
        }
        j->rc = opt_run(rn->g->trace, j->capacity, &j->res, j->err, sizeof(j->err));
        return;
    }
    struct replay_cfg c = {
        .policy = j->policy,
        .capacity = j->capacity,
        .bytes = rn->g->bytes,
        .page_size = rn->o->page_size,
        .step_every = rn->o->step,
        .step_budget = 64,
        .mean_size = rn->o->count_meta && rn->g->trace->unique != 0
                         ? rn->g->trace->unique_bytes / rn->g->trace->unique : 0,
    };
    if (strncmp(j->policy, "seg-", 4) == 0 && !rn->g->bytes) {
        j->rc = -1;
        snprintf(j->err, sizeof(j->err), "%s: segments hold bytes (--bytes)", j->policy);
        return;
    }
    j->rc = replay_run(rn->g->trace, &c, &j->res, j->err, sizeof(j->err));
}

/*
 * Workers take the next job until none is left; jobs share only the
 * read-only trace, so nothing else is locked (the progress line has its
 * own mutex).
 */
static void *worker(void *arg) {
    struct runner *rn = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&rn->next, 1);
        if (i >= rn->total)
            return NULL;
        struct sim_job *j = &rn->g->jobs[i];
        run_job(rn, j);
        size_t d = atomic_fetch_add(&rn->done, 1) + 1;
        if (rn->progress) {
            pthread_mutex_lock(&rn->out);
            fprintf(stderr, "\r\033[K[%zu/%zu] %s %llu: miss ratio %.4f, %.1f Mreq/s", d,
                    rn->total, j->policy, (unsigned long long)j->capacity,
                    miss_ratio(&j->res),
                    j->res.seconds > 0 ? (double)rn->g->trace->n / j->res.seconds / 1e6 : 0);
            pthread_mutex_unlock(&rn->out);
        }
    }
}

/*
 * Read or generate the trace, lay out the grid (sizes x policies, OPT as
 * the last column in object mode), run it on --threads workers, report.
 */
int main(int argc, char **argv) {
    struct opts o;
    int rc = parse_args(&o, argc, argv);
    if (rc != 0)
        return rc;
    struct trace t;
    char err[256];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (o.synth != NULL)
        rc = trace_synth(&t, o.synth, o.seed, err, sizeof(err));
    else
        rc = trace_load(&t, o.trace, o.format, &o.csv, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "cellar-sim: %s\n", err);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (o.dump != NULL) {
        rc = trace_write(&t, o.dump, err, sizeof(err));
        if (rc != 0)
            fprintf(stderr, "cellar-sim: %s\n", err);
        trace_free(&t);
        return rc != 0;
    }
    bool progress = !o.quiet && isatty(2);
    if (!o.quiet)
        fprintf(stderr, "trace ready: %zu requests, %llu objects (%.1f s)\n", t.n,
                (unsigned long long)t.unique,
                (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);

    const char *names[MAX_POLICIES + 1];
    size_t npol = 0;
    for (size_t p = 0; p < o.npol; p++)
        names[npol++] = o.policies[p];
    if (o.opt && !o.bytes)
        names[npol++] = "OPT";
    struct sim_grid g = {
        .trace = &t,
        .bytes = o.bytes,
        .policies = names,
        .npol = npol,
        .nsizes = o.nsizes,
        .jobs = calloc(o.nsizes * npol, sizeof(struct sim_job)),
    };
    if (g.jobs == NULL) {
        fprintf(stderr, "cellar-sim: out of memory\n");
        return 1;
    }
    uint64_t ws = o.bytes ? t.unique_bytes : t.unique;
    for (size_t s = 0; s < o.nsizes; s++) {
        uint64_t cap = o.size_frac[s] ? (uint64_t)((double)ws * o.size_val[s])
                                      : (uint64_t)o.size_val[s];
        for (size_t p = 0; p < npol; p++) {
            struct sim_job *j = grid_at(&g, s, p);
            j->policy = names[p];
            j->capacity = cap;
            j->frac = ws ? (double)cap / (double)ws : 0;
        }
    }

    struct runner rn = {.g = &g, .o = &o, .total = o.nsizes * npol, .progress = progress};
    atomic_init(&rn.next, 0);
    atomic_init(&rn.done, 0);
    pthread_mutex_init(&rn.out, NULL);
    unsigned nth = o.threads < rn.total ? o.threads : (unsigned)rn.total;
    pthread_t *th = calloc(nth ? nth : 1, sizeof(pthread_t));
    for (unsigned i = 0; i < nth; i++)
        pthread_create(&th[i], NULL, worker, &rn);
    for (unsigned i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    free(th);
    if (progress)
        fprintf(stderr, "\r\033[K");

    report_table(stdout, &g);
    if (o.csv_out != NULL) {
        FILE *f = strcmp(o.csv_out, "-") == 0 ? stdout : fopen(o.csv_out, "w");
        if (f == NULL) {
            fprintf(stderr, "cellar-sim: %s: %s\n", o.csv_out, strerror(errno));
            rc = 1;
        } else {
            report_csv(f, &g);
            if (f != stdout)
                fclose(f);
        }
    }
    if (o.svg_out != NULL && report_svg(o.svg_out, &g) != 0) {
        fprintf(stderr, "cellar-sim: %s: %s\n", o.svg_out, strerror(errno));
        rc = 1;
    }
    for (size_t i = 0; i < rn.total; i++)
        if (g.jobs[i].rc != 0 && g.jobs[i].capacity != 0)
            rc = rc ? rc : 1;
    pthread_mutex_destroy(&rn.out);
    free(g.jobs);
    trace_free(&t);
    return rc;
}
