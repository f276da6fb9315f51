/*
 * driver.c -- the look-aside service under load: many concurrent readers
 * of Zipf-hot rows, a fraction of operations updating them, and what it
 * costs the database and what readers got.
 *
 *   lookaside --dsn DSN --config CONFIG [--threads 32] [--seconds 10]
 *             [--rate OPS] [--write-fraction 0.01] [--leases]
 *             [--invalidate app|squeal] ...         (--help lists all)
 *
 * Each thread is one web server's request loop: its own service (one
 * database connection, one libcellar handle), picking a row from a Zipf
 * distribution and reading it through the cache, or, with probability
 * --write-fraction, updating it.  With --rate the threads share a fixed
 * offered rate (each on its own schedule), so two runs put the same load
 * on the system and their database query rates compare; without it they
 * run closed loop.
 *
 * Stale reads.  Every update's version and the time its commit returned
 * are kept per row (a small ring).  A cache hit that returns version v
 * while a newer version has been committed is stale; it counts as stale
 * beyond the bound when version v+1's commit returned more than
 * --stale-bound-ms before the read did (the time an invalidation may
 * take).  The commit is visible a little before it returns, so staleness
 * is understated by at most that round trip (tens of microseconds here).
 *
 * Prints one JSON object: totals after --warmup seconds, database reads
 * per second (mean and the peak over --interval-ms slices), hit ratio,
 * stale reads, client-visible cache failures, and the series per slice.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service.h"

#define RING 16                 /* versions remembered per row */
#define SLICES_MAX 100000

struct series {                 /* per time slice, after the warm-up */
    _Atomic uint64_t reads, db_reads, failures, stale;
};

struct driver {
    const char *dsn;
    struct cellar_config *cfg;
    struct svc_options opt;
    int threads;
    double seconds, warmup, write_fraction, zipf, rate;
    long rows;
    int stale_bound_ms, interval_ms;
    double *cdf;                /* rows entries: P(rank <= i) */
    _Atomic int64_t *latest;    /* per row: the newest committed version */
    _Atomic uint64_t *sent;     /* per row, RING slots: version << 40 | µs since start
                                   of its commit */
    uint64_t t0_ns;             /* start of the run (the warm-up included) */
    struct series *slices;
    size_t nslices;
    _Atomic int failed;
    pthread_barrier_t done;     /* no thread tears down (its database backend exits)
                                   while another still measures */
    pthread_mutex_t lock;       /* sums below */
    struct svc_counts sum;
    uint64_t stale, stale_unknown, writes;
    double read_us;             /* sum of read latencies after the warm-up */
};

struct worker {
    struct driver *d;
    int index;
    pthread_t tid;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s) {        /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static double rng_unit(uint64_t *s) {
    return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

static long pick_row(const struct driver *d, uint64_t *rng) {
    double u = rng_unit(rng);
    long lo = 0, hi = d->rows - 1;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (d->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo + 1;              /* ids start at 1 */
}

/* Row id's version was committed at t (ns since start). */
static void note_update(struct driver *d, long id, int64_t version, uint64_t t) {
    atomic_store(&d->sent[(size_t)(id - 1) * RING + (size_t)version % RING],
                 (uint64_t)version << 40 | (t / 1000 & ((1ULL << 40) - 1)));
    int64_t cur = atomic_load(&d->latest[id - 1]);
    while (cur < version && !atomic_compare_exchange_weak(&d->latest[id - 1], &cur, version))
        ;
}

/*
 * A hit on row id gave version v at t: 1 when a newer version was sent
 * more than the bound before t, 0 when not, -1 when the ring no longer
 * (or not yet) holds version v+1's time.
 */
static int stale_beyond(struct driver *d, long id, int64_t v, uint64_t t) {
    int64_t latest = atomic_load(&d->latest[id - 1]);
    if (v >= latest)
        return 0;
    /* version v+1's commit time, or when the ring has moved past it, a later
       version's: v+1 came no later, so past the bound that one says stale */
    int64_t w = latest - v >= RING ? latest - RING + 1 : v + 1;
    uint64_t slot = atomic_load(&d->sent[(size_t)(id - 1) * RING + (size_t)w % RING]);
    if ((int64_t)(slot >> 40) != (w & ((1LL << 24) - 1)))
        return -1;
    uint64_t sent_us = slot & ((1ULL << 40) - 1);
    if (t / 1000 > sent_us + (uint64_t)d->stale_bound_ms * 1000)
        return 1;
    return w == v + 1 ? 0 : -1;
}

static void *worker_run(void *arg) {
    struct worker *w = arg;
    struct driver *d = w->d;
    struct svc s;
    char err[512];
    if (svc_init(&s, d->dsn, d->cfg, &d->opt, err, sizeof(err)) < 0) {
        fprintf(stderr, "lookaside: thread %d: %s", w->index, err);
        atomic_store(&d->failed, 1);
        svc_deinit(&s);
        pthread_barrier_wait(&d->done);
        return NULL;
    }
    uint64_t rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(w->index + 1);
    uint64_t end = d->t0_ns + (uint64_t)((d->warmup + d->seconds) * 1e9);
    uint64_t warm_end = d->t0_ns + (uint64_t)(d->warmup * 1e9);
    uint64_t gap = d->rate > 0 ? (uint64_t)(1e9 * d->threads / d->rate) : 0;
    /* Each schedule starts once its connections are up, so no thread begins in arrears. */
    uint64_t next = now_ns() + (gap ? rng_next(&rng) % gap : 0);
    struct svc_counts base = {0};
    uint64_t stale = 0, unknown = 0, writes = 0;
    double read_us = 0;
    bool measuring = false;
    for (;;) {
        uint64_t sched = 0;
        if (gap) {
            struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
            sched = next;
            next += gap;
        }
        uint64_t t = now_ns();
        if (t >= end || atomic_load(&d->failed))
            break;
        if (!measuring && t >= warm_end) {
            measuring = true;
            base = s.n;
        }
        long id = pick_row(d, &rng);
        if (rng_unit(&rng) < d->write_fraction) {
            struct svc_write wr;
            if (svc_update(&s, id, &wr, err, sizeof(err)) < 0)
                goto failed;
            note_update(d, id, wr.version, wr.committed_ns - d->t0_ns);
            writes += measuring;
            continue;
        }
        uint64_t db_before = s.n.db_reads, fail_before = s.n.cache_failures;
        struct svc_row row;
        if (svc_read(&s, id, &row, err, sizeof(err)) < 0)
            goto failed;
        uint64_t done = now_ns();
        int st = row.from_cache ? stale_beyond(d, id, row.version, done - d->t0_ns) : 0;
        if (!measuring)
            continue;
        struct series *sl = &d->slices[(t - warm_end) / 1000000u / (uint64_t)d->interval_ms];
        atomic_fetch_add(&sl->reads, 1);
        atomic_fetch_add(&sl->db_reads, s.n.db_reads - db_before);
        atomic_fetch_add(&sl->failures, s.n.cache_failures - fail_before);
        atomic_fetch_add(&sl->stale, st == 1);
        stale += st == 1;
        unknown += st < 0;
        /* open loop: from when the read was due, so time spent behind counts */
        read_us += (double)(done - (sched ? sched : t)) / 1000.0;
    }
    if (0) {
failed:
        fprintf(stderr, "lookaside: thread %d: %s", w->index, err);
        atomic_store(&d->failed, 1);
    }
    pthread_mutex_lock(&d->lock);
    if (!measuring)
        base = s.n;
#define ADD(f) d->sum.f += s.n.f - base.f
    ADD(reads); ADD(hits); ADD(misses); ADD(db_reads); ADD(db_writes); ADD(cache_failures);
    ADD(lease_waits); ADD(fills); ADD(fills_refused); ADD(invalidations);
    ADD(invalidation_errors);
    for (int i = 0; i < 16; i++)
        ADD(failures_by[i]);
#undef ADD
    d->stale += stale;
    d->stale_unknown += unknown;
    d->writes += writes;
    d->read_us += read_us;
    pthread_mutex_unlock(&d->lock);
    pthread_barrier_wait(&d->done);
    svc_deinit(&s);
    return NULL;
}

static void report(const struct driver *d) {
    const struct svc_counts *n = &d->sum;
    double secs = d->seconds, peak = 0;
    for (size_t i = 0; i < d->nslices; i++) {
        double r = (double)atomic_load(&d->slices[i].db_reads) * 1000.0 / d->interval_ms;
        peak = r > peak ? r : peak;
    }
    printf("{\"threads\": %d, \"seconds\": %.1f, \"rate\": %.0f, \"write_fraction\": %.4f, "
           "\"zipf\": %.2f, \"rows\": %ld, \"leases\": %d, \"app_invalidate\": %d, "
           "\"query_us\": %d, \"stale_bound_ms\": %d, \"interval_ms\": %d,\n",
           d->threads, secs, d->rate, d->write_fraction, d->zipf, d->rows, d->opt.leases,
           d->opt.app_invalidate, d->opt.query_us, d->stale_bound_ms, d->interval_ms);
    printf(" \"reads\": %" PRIu64 ", \"reads_per_s\": %.0f, \"hits\": %" PRIu64
           ", \"hit_ratio\": %.4f, \"writes\": %" PRIu64 ", \"db_reads\": %" PRIu64
           ", \"db_reads_per_s\": %.0f, \"db_reads_peak_per_s\": %.0f, \"stale_reads\": %" PRIu64
           ", \"stale_unknown\": %" PRIu64 ", \"cache_failures\": %" PRIu64
           ", \"lease_waits\": %" PRIu64 ", \"fills\": %" PRIu64 ", \"fills_refused\": %" PRIu64
           ", \"invalidations\": %" PRIu64 ", \"invalidation_errors\": %" PRIu64
           ", \"read_us_mean\": %.1f,\n",
           n->reads, (double)n->reads / secs, n->hits,
           n->reads ? (double)n->hits / (double)n->reads : 0.0, d->writes, n->db_reads,
           (double)n->db_reads / secs, peak, d->stale, d->stale_unknown, n->cache_failures,
           n->lease_waits, n->fills, n->fills_refused, n->invalidations, n->invalidation_errors,
           n->reads ? d->read_us / (double)n->reads : 0.0);
    printf(" \"failures_by\": {");
    for (int i = 1, first = 1; i < 16; i++) {
        if (n->failures_by[i]) {
            printf("%s\"%s\": %" PRIu64, first ? "" : ", ", cellar_strerror(-i),
                   n->failures_by[i]);
            first = 0;
        }
    }
    printf("},\n \"series\": {");
    static const struct { const char *name; size_t at; } fields[] = {
        {"reads", offsetof(struct series, reads)}, {"db_reads", offsetof(struct series, db_reads)},
        {"failures", offsetof(struct series, failures)}, {"stale", offsetof(struct series, stale)},
    };
    for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
        printf("%s\"%s\": [", f ? ",\n  " : "", fields[f].name);
        for (size_t i = 0; i < d->nslices; i++)
            printf("%s%" PRIu64, i ? ", " : "",
                   atomic_load((_Atomic uint64_t *)((char *)&d->slices[i] + fields[f].at)));
        printf("]");
    }
    printf("}}\n");
}

static void usage(FILE *f) {
    fprintf(f,
        "usage: lookaside --dsn DSN --config CONFIG [options]\n"
        "  --dsn DSN             the database (libpq connection string); its table\n"
        "                        lookaside(id bigint primary key, version bigint, value text)\n"
        "                        holds rows 1..--rows\n"
        "  --config CONFIG       libcellar's: a server list, or a JSON file (pools, routes)\n"
        "  --threads N           concurrent request loops, each its own connections: 32\n"
        "  --seconds S           measured for: 10\n"
        "  --warmup S            run before measuring: 2\n"
        "  --rate OPS            offered operations/s over all threads; 0: closed loop: 0\n"
        "  --rows N              rows read and written: 10000\n"
        "  --zipf S              skew of the rows picked (0: uniform): 1.0\n"
        "  --write-fraction F    of operations that update their row: 0.01\n"
        "  --leases              read with leases (else get, and set on a miss)\n"
        "  --invalidate app|squeal  who deletes an updated row's key: the application after\n"
        "                        commit, or the table's trigger and cellar-squeal: app\n"
        "  --query-us US         cost of a read query, slept inside the database: 1000\n"
        "  --ttl S               exptime of the cache fills: 600\n"
        "  --stale-bound-ms MS   a hit older than a commit by more than this is stale: 100\n"
        "  --interval-ms MS      slices of the series (peak database rate): 100\n");
}

int main(int argc, char **argv) {
    struct driver d = {
        .threads = 32, .seconds = 10, .warmup = 2, .write_fraction = 0.01, .zipf = 1.0,
        .rows = 10000, .stale_bound_ms = 100, .interval_ms = 100,
        .opt = {.app_invalidate = 1, .query_us = 1000, .cache_ttl = 600},
        .lock = PTHREAD_MUTEX_INITIALIZER,
    };
    const char *config = NULL;
    static const struct option longopts[] = {
        {"dsn", required_argument, NULL, 'd'}, {"config", required_argument, NULL, 'c'},
        {"threads", required_argument, NULL, 't'}, {"seconds", required_argument, NULL, 's'},
        {"warmup", required_argument, NULL, 'W'}, {"rate", required_argument, NULL, 'r'},
        {"rows", required_argument, NULL, 'n'}, {"zipf", required_argument, NULL, 'z'},
        {"write-fraction", required_argument, NULL, 'w'}, {"leases", no_argument, NULL, 'L'},
        {"invalidate", required_argument, NULL, 'i'},
        {"query-us", required_argument, NULL, 'q'}, {"ttl", required_argument, NULL, 'T'},
        {"stale-bound-ms", required_argument, NULL, 'b'},
        {"interval-ms", required_argument, NULL, 'I'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': d.dsn = optarg; break;
        case 'c': config = optarg; break;
        case 't': d.threads = atoi(optarg); break;
        case 's': d.seconds = atof(optarg); break;
        case 'W': d.warmup = atof(optarg); break;
        case 'r': d.rate = atof(optarg); break;
        case 'n': d.rows = atol(optarg); break;
        case 'z': d.zipf = atof(optarg); break;
        case 'w': d.write_fraction = atof(optarg); break;
        case 'L': d.opt.leases = 1; break;
        case 'i':
            if (strcmp(optarg, "app") != 0 && strcmp(optarg, "squeal") != 0) {
                fprintf(stderr, "lookaside: --invalidate is app or squeal, not \"%s\"\n",
                        optarg);
                return 2;
            }
            d.opt.app_invalidate = strcmp(optarg, "app") == 0;
            break;
        case 'q': d.opt.query_us = atoi(optarg); break;
        case 'T': d.opt.cache_ttl = atoi(optarg); break;
        case 'b': d.stale_bound_ms = atoi(optarg); break;
        case 'I': d.interval_ms = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (d.dsn == NULL || config == NULL || optind != argc || d.threads < 1 ||
        d.threads > 4096 || d.seconds <= 0 || d.warmup < 0 || d.rows < 1 ||
        d.interval_ms < 1 || d.rate < 0 || d.opt.query_us < 0 || d.zipf < 0 ||
        d.write_fraction < 0 || d.write_fraction > 1) {
        usage(stderr);
        return 2;
    }
    char err[512];
    int rc = config[0] == '/' || config[0] == '.' ? cellar_config_load(&d.cfg, config, NULL, err,
                                                                       sizeof(err))
                                                  : cellar_config_parse(&d.cfg, config, NULL, err,
                                                                        sizeof(err));
    if (rc != CELLAR_OK) {
        fprintf(stderr, "lookaside: --config: %s\n", err);
        return 2;
    }
    d.nslices = (size_t)(d.seconds * 1000 / d.interval_ms) + 1;
    d.cdf = malloc(sizeof(*d.cdf) * (size_t)d.rows);
    d.latest = calloc((size_t)d.rows, sizeof(*d.latest));
    d.sent = calloc((size_t)d.rows * RING, sizeof(*d.sent));
    d.slices = d.nslices <= SLICES_MAX ? calloc(d.nslices, sizeof(*d.slices)) : NULL;
    struct worker *w = calloc((size_t)d.threads, sizeof(*w));
    if (!d.cdf || !d.latest || !d.sent || !d.slices || !w) {
        fprintf(stderr, "lookaside: out of memory (or too many slices)\n");
        return 1;
    }
    double total = 0;
    for (long i = 0; i < d.rows; i++)
        total += pow((double)(i + 1), -d.zipf);
    double acc = 0;
    for (long i = 0; i < d.rows; i++)
        d.cdf[i] = (acc += pow((double)(i + 1), -d.zipf) / total);
    d.t0_ns = now_ns();
    pthread_barrier_init(&d.done, NULL, (unsigned)d.threads);
    for (int i = 0; i < d.threads; i++) {
        w[i] = (struct worker){.d = &d, .index = i};
        if (pthread_create(&w[i].tid, NULL, worker_run, &w[i]) != 0) {
            fprintf(stderr, "lookaside: cannot start thread %d\n", i);
            return 1;           /* the others would wait at the barrier for it */
        }
    }
    for (int i = 0; i < d.threads; i++)
        pthread_join(w[i].tid, NULL);
    pthread_barrier_destroy(&d.done);
    if (!atomic_load(&d.failed))
        report(&d);
    cellar_config_release(&d.cfg);
    free(w);
    free(d.slices);
    free(d.sent);
    free(d.latest);
    free(d.cdf);
    return atomic_load(&d.failed) ? 1 : 0;
}
