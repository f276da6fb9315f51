/*
 * client_bench.c -- libcellar against libmemcached, over the same servers.
 *
 * One process, one thread, three clients over one server list:
 *
 *   libmemcached   text protocol (its default), weighted ketama, TCP_NODELAY,
 *                  NO_BLOCK (the behaviours its documentation gives for speed)
 *   cellar-meta    libcellar, protocol "meta", hash "ketama" (the same ring)
 *   cellar-text    libcellar, protocol "text", hash "ketama"
 *   cellar-ch3     libcellar's defaults: protocol "meta", hash "ch3" (mcrouter's
 *                  furc over MurmurHash64A instead of MD5; other servers per key)
 *   cellar-udp     cellar-meta with udp = 1: gets (single and multi) go over UDP
 *                  to the servers' -U port (the runner makes it the TCP port),
 *                  sets over TCP.  A dropped reply (CELLAR_DROPPED) is counted,
 *                  not fatal: UDP vs TCP get latency is its get row against
 *                  cellar-meta's.
 *   cellar-ring    cellar-meta with io = "uring": the handle's connections on
 *                  an io_uring of its own (a turn's sends in one system call,
 *                  receives always out)
 *
 * and six rows, each a blocking call repeated for a bounded time and count:
 *
 *   get        one key, a hit           memcached_get        / cellar_get
 *   mget10     10 keys, all hits        memcached_mget +     / cellar_mget
 *   mget100    100 keys                 memcached_fetch_result
 *   mget1000   1,000 keys                 until it returns NULL
 *   set100     a 100-byte value         memcached_set        / cellar_set
 *   set1k      a 1,024-byte value
 *
 * Per cell (row x client x round) it measures wall time, calls, keys, hits
 * and errors, the client's CPU time (getrusage(RUSAGE_THREAD): user + sys
 * of this, the only, thread), the servers' CPU time (utime + stime of each
 * server pid given, from /proc, in clock ticks) and each call's latency.
 * Rounds rotate the order of the clients within each row, so the clients
 * of a row are measured next to each other in time; ratios are taken per
 * round (libcellar / libmemcached) and their median reported.
 *
 *   client_bench -s 127.0.0.1:p1,...,127.0.0.1:p8 [--pids 1,2,...]
 *                [-D seconds per cell] [-r rounds] [-n max calls per cell]
 *                [-k keys] [--json PATH]
 *
 * Every loop is bounded both in count and in time; a cell stops at its
 * first error (and the run exits 1) rather than measure a broken client.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <libmemcached/memcached.h>

#include "cellar.h"

#define KEY_LEN 16              /* "cb:" + 13 digits, as bench/compare's keys */
#define GET_VALUE 100           /* the preloaded values the gets read */
#define MAX_SERVERS 64
#define MAX_MGET 1000
#define WARMUP_NS 100000000ull  /* 0.1 s of the same calls before each cell */
#define WARMUP_CALLS 10000

/* ---------------------------------------------------------------------- */
/* Small helpers                                                            */
/* ---------------------------------------------------------------------- */

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "client_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* User + system time of the calling thread. */
static uint64_t thread_cpu_ns(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

/* utime + stime of a whole process (all its threads), from /proc/<pid>/stat. */
static uint64_t proc_cpu_ns(long pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');    /* the command name may hold spaces */
    if (p == NULL)
        return 0;
    unsigned long long ut = 0, st = 0;
    /* after ")": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return 0;
    return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* xorshift64*: the keys each call reads, the same sequence for every client. */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* ---------------------------------------------------------------------- */
/* The clients: one interface, two libraries                                */
/* ---------------------------------------------------------------------- */

/*
 * Each call returns the number of hits (gets) or stored values (sets), or
 * -1 on an error, with the error's text in the client's err.
 */
struct client {
    const char *name;
    int (*get)(struct client *c, const char *key, size_t nkey);
    int (*mget)(struct client *c, const char *const *keys, const size_t *nkeys, size_t n);
    int (*set)(struct client *c, const char *key, size_t nkey, const char *v, size_t nv);
    memcached_st *mc;
    memcached_result_st res;    /* the caller's (not allocated): fetch_result frees an
                                   allocated one when it returns NULL at the end */
    struct cellar *h;
    struct cellar_item items[MAX_MGET];
    uint64_t drops;             /* UDP gets answered CELLAR_DROPPED */
    char err[256];
};

static int mc_get(struct client *c, const char *key, size_t nkey) {
    size_t vlen;
    uint32_t flags;
    memcached_return_t rc;
    char *v = memcached_get(c->mc, key, nkey, &vlen, &flags, &rc);
    free(v);
    if (rc == MEMCACHED_SUCCESS)
        return 1;
    if (rc == MEMCACHED_NOTFOUND)
        return 0;
    snprintf(c->err, sizeof c->err, "memcached_get: %s", memcached_strerror(c->mc, rc));
    return -1;
}

static int mc_mget(struct client *c, const char *const *keys, const size_t *nkeys, size_t n) {
    memcached_return_t rc = memcached_mget(c->mc, keys, nkeys, n);
    if (rc != MEMCACHED_SUCCESS) {
        snprintf(c->err, sizeof c->err, "memcached_mget: %s", memcached_strerror(c->mc, rc));
        return -1;
    }
    int hits = 0;
    /* Bounded: the server sends at most one value per key, then END. */
    for (size_t i = 0; i <= n; i++) {
        if (memcached_fetch_result(c->mc, &c->res, &rc) == NULL)
            break;
        hits++;
    }
    if (rc != MEMCACHED_END && rc != MEMCACHED_SUCCESS && rc != MEMCACHED_NOTFOUND) {
        snprintf(c->err, sizeof c->err, "memcached_fetch_result: %s",
                 memcached_strerror(c->mc, rc));
        return -1;
    }
    return hits;
}

static int mc_set(struct client *c, const char *key, size_t nkey, const char *v, size_t nv) {
    memcached_return_t rc = memcached_set(c->mc, key, nkey, v, nv, 0, 0);
    if (rc == MEMCACHED_SUCCESS)
        return 1;
    snprintf(c->err, sizeof c->err, "memcached_set: %s", memcached_strerror(c->mc, rc));
    return -1;
}

static int cl_get(struct client *c, const char *key, size_t nkey) {
    struct cellar_item it;
    int rc = cellar_get(c->h, key, nkey, &it);
    cellar_item_clear(&it);
    if (rc == CELLAR_OK || rc == CELLAR_NOT_FOUND)
        return rc == CELLAR_OK;
    if (rc == CELLAR_DROPPED) {
        c->drops++;
        return 0;
    }
    snprintf(c->err, sizeof c->err, "cellar_get: %s", cellar_strerror(rc));
    return -1;
}

static int cl_mget(struct client *c, const char *const *keys, const size_t *nkeys, size_t n) {
    int rc = cellar_mget(c->h, keys, nkeys, n, c->items);
    if (rc != CELLAR_OK) {
        snprintf(c->err, sizeof c->err, "cellar_mget: %s", cellar_strerror(rc));
        return -1;
    }
    int hits = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (c->items[i].status == CELLAR_OK)
            hits++;
        else if (c->items[i].status == CELLAR_DROPPED)
            c->drops++;
        else if (c->items[i].status != CELLAR_NOT_FOUND && bad == 0)
            bad = c->items[i].status;
        cellar_item_clear(&c->items[i]);
    }
    if (bad) {
        snprintf(c->err, sizeof c->err, "cellar_mget: a key: %s", cellar_strerror(bad));
        return -1;
    }
    return hits;
}

static int cl_set(struct client *c, const char *key, size_t nkey, const char *v, size_t nv) {
    int rc = cellar_set(c->h, key, nkey, v, nv, 0, 0);
    if (rc == CELLAR_OK)
        return 1;
    snprintf(c->err, sizeof c->err, "cellar_set: %s", cellar_strerror(rc));
    return -1;
}

static struct client *client_mc(char *const *hosts, const unsigned *ports, unsigned n) {
    struct client *c = calloc(1, sizeof *c);
    if (c == NULL || (c->mc = memcached_create(NULL)) == NULL)
        die("out of memory");
    c->name = "libmemcached";
    c->get = mc_get;
    c->mget = mc_mget;
    c->set = mc_set;
    /* KETAMA_WEIGHTED: consistent ketama distribution over MD5, the ring libcellar's
       "ketama" reproduces, so both send every key to the same server. */
    memcached_behavior_set(c->mc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
    memcached_behavior_set(c->mc, MEMCACHED_BEHAVIOR_NO_BLOCK, 1);
    memcached_behavior_set(c->mc, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
    for (unsigned i = 0; i < n; i++)
        if (memcached_server_add(c->mc, hosts[i], (in_port_t)ports[i]) != MEMCACHED_SUCCESS)
            die("memcached_server_add %s:%u failed", hosts[i], ports[i]);
    if (memcached_result_create(c->mc, &c->res) == NULL)
        die("out of memory");
    return c;
}

static struct client *client_cellar(const char *list, const char *name, const char *protocol,
                                    const char *hash, int udp, const char *io,
                                    int window_init) {
    struct client *c = calloc(1, sizeof *c);
    if (c == NULL)
        die("out of memory");
    c->name = name;
    c->get = cl_get;
    c->mget = cl_mget;
    c->set = cl_set;
    /* --window N pins the window at N (init and ceiling, no bound on bytes); 0 keeps the
       library's. */
    struct cellar_options opt = {.protocol = protocol, .hash = hash, .window_init = window_init,
                                 .window_max = window_init, .window_bytes = window_init ? -1 : 0,
                                 .udp = udp, .io = io};
    struct cellar_config *cfg;
    char err[256];
    if (cellar_config_parse(&cfg, list, &opt, err, sizeof err) != CELLAR_OK)
        die("cellar_config_parse: %s", err);
    if (cellar_create(&c->h, cfg) != CELLAR_OK)
        die("cellar_create: out of memory");
    cellar_config_release(&cfg);
    return c;
}

static void client_destroy(struct client *c) {
    if (c->mc) {
        memcached_result_free(&c->res);
        memcached_free(c->mc);
    }
    cellar_destroy(&c->h);
    free(c);
}

/* ---------------------------------------------------------------------- */
/* Rows and cells                                                           */
/* ---------------------------------------------------------------------- */

enum row_kind { ROW_GET, ROW_MGET, ROW_SET };

struct row {
    const char *name, *title;
    enum row_kind kind;
    unsigned n;                 /* keys per call (mget), value bytes (set) */
};

static const struct row ROWS[] = {
    {"get", "get, 1 key (hit)", ROW_GET, 1},
    {"mget10", "multi-get, 10 keys", ROW_MGET, 10},
    {"mget100", "multi-get, 100 keys", ROW_MGET, 100},
    {"mget1000", "multi-get, 1,000 keys", ROW_MGET, 1000},
    {"set100", "set, 100-byte value", ROW_SET, 100},
    {"set1k", "set, 1,024-byte value", ROW_SET, 1024},
};
#define NROWS (sizeof ROWS / sizeof ROWS[0])
#define NCLIENTS 6

/* One measurement: one row, one client, one round. */
struct cell {
    uint64_t calls, keys, hits, drops, wall_ns, cpu_ns, srv_cpu_ns;
    double p50_us, p99_us;
};

struct bench {
    char **get_keys, **set_keys;        /* "cb:%013u" (preloaded) and "cs:%013u" */
    unsigned nkeys;
    char value[1024];
    long pids[MAX_SERVERS];
    unsigned npids;
    double seconds;
    uint64_t max_calls;
    uint64_t *lat;                      /* max_calls latencies, reused by every cell */
    const char *kp[MAX_MGET];           /* one multi-get's keys */
    size_t kn[MAX_MGET];
    char *names[MAX_SERVERS];           /* "host:port", in the order given */
    unsigned nservers;
};

static uint64_t servers_cpu_ns(const struct bench *b) {
    uint64_t t = 0;
    for (unsigned i = 0; i < b->npids; i++)
        t += proc_cpu_ns(b->pids[i]);
    return t;
}

/*
 * One call of row r: a get of a random key, a multi-get of r->n keys
 * starting at a random one (consecutive numbers, so distinct keys spread
 * by the hash), or a set of a random key of the set range.  Returns hits
 * (or stored), -1 on an error; *keys gets the keys asked.
 */
static int one_call(struct bench *b, struct client *c, const struct row *r, uint64_t *rng,
                    unsigned *keys) {
    unsigned k = (unsigned)(rng_next(rng) % b->nkeys);
    switch (r->kind) {
    case ROW_GET:
        *keys = 1;
        return c->get(c, b->get_keys[k], KEY_LEN);
    case ROW_MGET:
        for (unsigned i = 0; i < r->n; i++) {
            b->kp[i] = b->get_keys[(k + i) % b->nkeys];
            b->kn[i] = KEY_LEN;
        }
        *keys = r->n;
        return c->mget(c, b->kp, b->kn, r->n);
    case ROW_SET:
        *keys = 1;
        return c->set(c, b->set_keys[k], KEY_LEN, b->value, r->n);
    }
    return -1;
}

/*
 * Runs row r on client c: a warm-up (WARMUP_NS or WARMUP_CALLS, whichever
 * comes first), then calls until b->seconds have passed or b->max_calls
 * were made.  Every call must find all its keys (or store its value).
 */
static void run_cell(struct bench *b, struct client *c, const struct row *r, uint64_t seed,
                     struct cell *out) {
    uint64_t rng = seed;
    unsigned keys;
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < WARMUP_CALLS && now_ns() - t0 < WARMUP_NS; i++)
        if (one_call(b, c, r, &rng, &keys) < 0)
            die("%s %s (warm-up): %s", c->name, r->name, c->err);

    memset(out, 0, sizeof *out);
    uint64_t drops0 = c->drops;
    uint64_t limit = (uint64_t)(b->seconds * 1e9);
    uint64_t srv0 = servers_cpu_ns(b), cpu0 = thread_cpu_ns();
    uint64_t start = now_ns(), t = start;
    while (out->calls < b->max_calls && t - start < limit) {
        int hits = one_call(b, c, r, &rng, &keys);
        uint64_t t1 = now_ns();
        if (hits < 0)
            die("%s %s: %s", c->name, r->name, c->err);
        b->lat[out->calls++] = t1 - t;
        out->keys += keys;
        out->hits += (uint64_t)hits;
        t = t1;
    }
    out->wall_ns = t - start;
    out->cpu_ns = thread_cpu_ns() - cpu0;
    out->srv_cpu_ns = servers_cpu_ns(b) - srv0;
    out->drops = c->drops - drops0;
    if (out->hits + out->drops != out->keys)
        die("%s %s: %llu of %llu keys hit; the preload is not all there", c->name, r->name,
            (unsigned long long)out->hits, (unsigned long long)out->keys);
    qsort(b->lat, out->calls, sizeof *b->lat, cmp_u64);
    out->p50_us = b->lat[out->calls / 2] / 1e3;
    out->p99_us = b->lat[out->calls * 99 / 100] / 1e3;
}

static double keys_per_s(const struct cell *x) {
    return x->wall_ns ? x->keys * 1e9 / x->wall_ns : 0;
}
static double calls_per_s(const struct cell *x) {
    return x->wall_ns ? x->calls * 1e9 / x->wall_ns : 0;
}
static double cpu_per_key(const struct cell *x) {
    return x->keys ? (double)x->cpu_ns / x->keys : 0;
}
static double srv_per_key(const struct cell *x) {
    return x->keys ? (double)x->srv_cpu_ns / x->keys : 0;
}

/* ---------------------------------------------------------------------- */
/* Setup: keys, the preload, the ring check                                 */
/* ---------------------------------------------------------------------- */

static char **make_keys(const char *prefix, unsigned n) {
    char **k = malloc(n * sizeof *k);
    if (k == NULL)
        die("out of memory");
    for (unsigned i = 0; i < n; i++) {
        k[i] = malloc(KEY_LEN + 1);
        if (k[i] == NULL)
            die("out of memory");
        snprintf(k[i], KEY_LEN + 1, "%s%013u", prefix, i);
    }
    return k;
}

/*
 * Stores every get key with a 100-byte value through client c (one set at
 * a time, each waiting for its STORED), so that the key is on the server
 * c's ring names.
 */
static void preload(struct bench *b, struct client *c) {
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < b->nkeys; i++)
        if (c->set(c, b->get_keys[i], KEY_LEN, b->value, GET_VALUE) < 0)
            die("preload: %s", c->err);
    fprintf(stderr, "preloaded %u keys of %d bytes through %s in %.2f s\n", b->nkeys, GET_VALUE,
            c->name, (now_ns() - t0) / 1e9);
}

/* How many of the first n keys both libraries place on the same server. */
static unsigned ring_agreement(struct bench *b, struct client *mc, struct client *cl,
                               unsigned n) {
    unsigned same = 0;
    for (unsigned i = 0; i < n && i < b->nkeys; i++) {
        memcached_return_t rc;
        const memcached_instance_st *s =
            memcached_server_by_key(mc->mc, b->get_keys[i], KEY_LEN, &rc);
        int j = cellar_server_of(cl->h, b->get_keys[i], KEY_LEN);
        if (s == NULL || j < 0)
            continue;
        char name[128];
        snprintf(name, sizeof name, "%s:%u", memcached_server_name(s),
                 (unsigned)memcached_server_port(s));
        /* cellar_server_of() indexes the list as given. */
        if ((unsigned)j < b->nservers && strcmp(name, b->names[j]) == 0)
            same++;
    }
    return same;
}

/* ---------------------------------------------------------------------- */
/* Report                                                                   */
/* ---------------------------------------------------------------------- */

struct summary {
    double kps, cps, cpu_key, srv_key, p50, p99;    /* medians over rounds */
    double r_kps, r_cpu, r_kps_min, r_kps_max;      /* vs libmemcached: per-round ratio medians */
    double r_srv;
};

static void summarize(struct cell *cells, int rounds, struct cell *base, struct summary *s) {
    double v[6][64], rk[64], rc[64], rs[64];
    for (int i = 0; i < rounds; i++) {
        v[0][i] = keys_per_s(&cells[i]);
        v[1][i] = calls_per_s(&cells[i]);
        v[2][i] = cpu_per_key(&cells[i]);
        v[3][i] = srv_per_key(&cells[i]);
        v[4][i] = cells[i].p50_us;
        v[5][i] = cells[i].p99_us;
        rk[i] = keys_per_s(&cells[i]) / keys_per_s(&base[i]);
        rc[i] = cpu_per_key(&cells[i]) / cpu_per_key(&base[i]);
        rs[i] = srv_per_key(&base[i]) > 0 ? srv_per_key(&cells[i]) / srv_per_key(&base[i]) : 0;
    }
    s->kps = median(v[0], rounds);
    s->cps = median(v[1], rounds);
    s->cpu_key = median(v[2], rounds);
    s->srv_key = median(v[3], rounds);
    s->p50 = median(v[4], rounds);
    s->p99 = median(v[5], rounds);
    s->r_kps = median(rk, rounds);          /* sorts rk */
    s->r_kps_min = rk[0];
    s->r_kps_max = rk[rounds - 1];
    s->r_cpu = median(rc, rounds);
    s->r_srv = median(rs, rounds);
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}


/* ---------------------------------------------------------------------- */
/* main                                                                     */
/* ---------------------------------------------------------------------- */

static void usage(void) {
    fprintf(stderr,
            "usage: client_bench -s host:port[,host:port...] [--pids pid,...] [-D seconds]\n"
            "                    [-r rounds] [-n max calls per cell] [-k keys] [--json PATH]\n"
            "  -s       the servers (the runner starts 8 cellard on 127.0.0.1)\n"
            "  --pids   the servers' pids, for their CPU time per key\n"
            "  -D       seconds per cell (row x client x round), default 1.0\n"
            "  -r       rounds, default 3 (the order of the clients rotates)\n"
            "  -n       at most this many calls per cell, default 1000000\n"
            "  -k       keys preloaded for the gets (100-byte values), default 20000\n"
            "  --json   also write the results as one JSON object\n"
            "  --only ROW:CLIENT  run that one cell (e.g. mget100:cellar-meta) for -D seconds,\n"
            "           print it and exit: for profilers\n"
            "  --no-preload  the servers already hold the keys (an earlier run's)\n"
            "  --window N    libcellar's window, init and ceiling, no bound on bytes\n"
            "                (default: the library's, 256..4096 and 32 KB)\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *servers = NULL, *json_path = NULL, *pids = NULL, *only = NULL;
    bool no_preload = false;
    int window_init = 0;        /* libcellar's default */
    struct bench b = {.nkeys = 20000, .seconds = 1.0, .max_calls = 1000000};
    int rounds = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-preload") == 0) {
            no_preload = true;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || v == NULL)
            usage();
        i++;
        if (strcmp(a, "-s") == 0)
            servers = v;
        else if (strcmp(a, "--pids") == 0)
            pids = v;
        else if (strcmp(a, "-D") == 0)
            b.seconds = atof(v);
        else if (strcmp(a, "-r") == 0)
            rounds = atoi(v);
        else if (strcmp(a, "-n") == 0)
            b.max_calls = strtoull(v, NULL, 10);
        else if (strcmp(a, "-k") == 0)
            b.nkeys = (unsigned)strtoul(v, NULL, 10);
        else if (strcmp(a, "--json") == 0)
            json_path = v;
        else if (strcmp(a, "--only") == 0)
            only = v;
        else if (strcmp(a, "--window") == 0)
            window_init = atoi(v);
        else
            usage();
    }
    if (servers == NULL || rounds < 1 || rounds > 64 || b.seconds <= 0 || b.seconds > 60 ||
        b.max_calls < 1 || b.nkeys < MAX_MGET)
        usage();

    /* The server list, as libcellar takes it and as host + port for libmemcached. */
    char *hosts[MAX_SERVERS];
    unsigned ports[MAX_SERVERS];
    char *list = strdup(servers), *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(t, ':');
        if (b.nservers == MAX_SERVERS || colon == NULL)
            die("bad server list %s (host:port,...)", servers);
        b.names[b.nservers] = strdup(t);
        *colon = '\0';
        hosts[b.nservers] = t;
        ports[b.nservers] = (unsigned)atoi(colon + 1);
        b.nservers++;
    }
    if (pids) {
        char *pl = strdup(pids), *ps = NULL;
        for (char *t = strtok_r(pl, ",", &ps); t && b.npids < MAX_SERVERS;
             t = strtok_r(NULL, ",", &ps))
            b.pids[b.npids++] = atol(t);
        free(pl);
    }

    b.get_keys = make_keys("cb:", b.nkeys);
    b.set_keys = make_keys("cs:", b.nkeys);
    for (size_t i = 0; i < sizeof b.value; i++)
        b.value[i] = (char)('a' + i % 26);
    b.lat = malloc(b.max_calls * sizeof *b.lat);
    if (b.lat == NULL)
        die("out of memory for %llu latencies", (unsigned long long)b.max_calls);

    struct client *clients[NCLIENTS] = {
        client_mc(hosts, ports, b.nservers),
        client_cellar(servers, "cellar-meta", "meta", "ketama", 0, NULL, window_init),
        client_cellar(servers, "cellar-text", "text", "ketama", 0, NULL, window_init),
        client_cellar(servers, "cellar-ch3", "meta", "ch3", 0, NULL, window_init),
        client_cellar(servers, "cellar-udp", "meta", "ketama", 1, NULL, window_init),
        client_cellar(servers, "cellar-ring", "meta", "ketama", 0, "uring", window_init),
    };
    unsigned agree = ring_agreement(&b, clients[0], clients[1], 1000);
    fprintf(stderr, "ring: libmemcached and libcellar place %u of 1000 keys on the same server\n",
            agree);
    /* The ketama clients share libmemcached's placement; ch3 places keys elsewhere. */
    if (!no_preload) {
        preload(&b, clients[0]);
        preload(&b, clients[3]);
    }

    if (only) {
        for (unsigned r = 0; r < NROWS; r++)
            for (int ci = 0; ci < NCLIENTS; ci++) {
                char name[64];
                snprintf(name, sizeof name, "%s:%s", ROWS[r].name, clients[ci]->name);
                if (strcmp(name, only) != 0)
                    continue;
                struct cell x;
                run_cell(&b, clients[ci], &ROWS[r], 1, &x);
                printf("%s: %.0f keys/s, %.0f calls/s, %.0f ns cpu/key, %.0f ns srv/key, "
                       "p50 %.1f us, p99 %.1f us\n", only, keys_per_s(&x), calls_per_s(&x),
                       cpu_per_key(&x), srv_per_key(&x), x.p50_us, x.p99_us);
                return 0;
            }
        die("--only %s: no such row:client", only);
    }

    char loadavg_start[64] = "";
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fgets(loadavg_start, sizeof loadavg_start, lf))
            loadavg_start[strcspn(loadavg_start, "\n")] = '\0';
        fclose(lf);
    }

    /* cells[row][client][round] */
    static struct cell cells[NROWS][NCLIENTS][64];
    uint64_t t_start = now_ns();
    for (int rd = 0; rd < rounds; rd++) {
        for (unsigned r = 0; r < NROWS; r++) {
            for (int j = 0; j < NCLIENTS; j++) {
                int ci = (j + rd) % NCLIENTS;
                /* The same keys for every client of a row and round. */
                uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(rd * NROWS + r + 1);
                run_cell(&b, clients[ci], &ROWS[r], seed, &cells[r][ci][rd]);
                struct cell *x = &cells[r][ci][rd];
                fprintf(stderr, "round %d %-9s %-13s %10.0f keys/s %8.0f ns cpu/key\n", rd + 1,
                        ROWS[r].name, clients[ci]->name, keys_per_s(x), cpu_per_key(x));
            }
        }
    }
    double elapsed = (now_ns() - t_start) / 1e9;

    struct cellar_stats cst[NCLIENTS];
    for (int ci = 1; ci < NCLIENTS; ci++)
        cellar_stats(clients[ci]->h, &cst[ci]);

    /* The table. */
    struct summary sum[NROWS][NCLIENTS];
    for (unsigned r = 0; r < NROWS; r++)
        for (int ci = 0; ci < NCLIENTS; ci++)
            summarize(cells[r][ci], rounds, cells[r][0], &sum[r][ci]);

    printf("\nlibcellar against libmemcached %s: %u servers, %d round%s of %.1f s per cell, "
           "medians\n", memcached_lib_version(), b.nservers, rounds, rounds > 1 ? "s" : "",
           b.seconds);
    printf("gets read %u preloaded keys of %d-byte values (all hits); sets write 100 B and 1 KB\n",
           b.nkeys, GET_VALUE);
    printf("cpu = the client's user+sys (getrusage) per key; srv = the servers' utime+stime per "
           "key; x = libcellar / libmemcached, per-round median\n\n");
    printf("%-22s %-13s %11s %10s %9s %9s %8s %8s | %6s %6s %6s\n", "row", "client", "keys/s",
           "calls/s", "cpu ns/k", "srv ns/k", "p50 us", "p99 us", "x keys", "x cpu", "x srv");
    for (unsigned r = 0; r < NROWS; r++) {
        for (int ci = 0; ci < NCLIENTS; ci++) {
            const struct summary *s = &sum[r][ci];
            printf("%-22s %-13s %11.0f %10.0f %9.0f %9.0f %8.1f %8.1f", ci ? "" : ROWS[r].title,
                   clients[ci]->name, s->kps, s->cps, s->cpu_key, s->srv_key, s->p50, s->p99);
            if (ci)
                printf(" | %6.2f %6.2f %6.2f\n", s->r_kps, s->r_cpu, s->r_srv);
            else
                printf(" |\n");
        }
    }

    /* Against the goals: per libcellar client, the per-round median ratio. */
    printf("\ngoals (libcellar / libmemcached, median of the rounds' ratios [min-max]):\n");
    for (int ci = 1; ci < NCLIENTS; ci++) {
        const struct summary *g = &sum[0][ci], *m = &sum[2][ci];
        printf("  %-12s 100-key mget keys/s >= 2x: %.2f %-7s  CPU/key <= 0.5x: %.2f %-7s  "
               "single get keys/s >= 1x: %.2f %s [%.2f-%.2f]\n",
               clients[ci]->name, m->r_kps, m->r_kps >= 2 ? "met" : "NOT met", m->r_cpu,
               m->r_cpu <= 0.5 ? "met" : "NOT met", g->r_kps, g->r_kps >= 1 ? "met" : "NOT met",
               g->r_kps_min, g->r_kps_max);
    }
    /* UDP against TCP: cellar-udp's gets against cellar-meta's, the same wire otherwise. */
    const struct summary *gu = &sum[0][4], *gt = &sum[0][1];
    uint64_t udp_drops = 0, udp_keys = 0;
    for (unsigned r = 0; r < NROWS; r++)
        for (int rd = 0; rd < rounds; rd++) {
            udp_drops += cells[r][4][rd].drops;
            udp_keys += ROWS[r].kind == ROW_SET ? 0 : cells[r][4][rd].keys;
        }
    printf("  UDP vs TCP single-get latency (cellar-udp / cellar-meta): p50 %.1f / %.1f us, "
           "p99 %.1f / %.1f us, keys/s %.0f / %.0f; %llu of %llu UDP gets dropped\n",
           gu->p50, gt->p50, gu->p99, gt->p99, gu->kps, gt->kps,
           (unsigned long long)udp_drops, (unsigned long long)udp_keys);
    for (int ci = 1; ci < NCLIENTS; ci++)
        printf("%s: window now %u, peak in flight %u, %llu connects, %llu timeouts, %llu errors\n",
               clients[ci]->name, cst[ci].window, cst[ci].window_peak,
               (unsigned long long)cst[ci].connects, (unsigned long long)cst[ci].timeouts,
               (unsigned long long)cst[ci].errors);

    if (json_path) {
        FILE *f = fopen(json_path, "w");
        if (f == NULL)
            die("%s: %s", json_path, strerror(errno));
        struct utsname u;
        uname(&u);
        char model[128] = "";
        FILE *ci_f = fopen("/proc/cpuinfo", "r");
        char line[256];
        while (ci_f && fgets(line, sizeof line, ci_f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *p = strchr(line, ':');
                snprintf(model, sizeof model, "%s", p ? p + 2 : "");
                model[strcspn(model, "\n")] = '\0';
                break;
            }
        }
        if (ci_f)
            fclose(ci_f);
        time_t now = time(NULL);
        char date[64];
        strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
        fprintf(f, "{\n  \"date\": ");
        json_str(f, date);
        fprintf(f, ",\n  \"machine\": {\"cpus\": %ld, \"model\": ", sysconf(_SC_NPROCESSORS_ONLN));
        json_str(f, model);
        fprintf(f, ", \"kernel\": ");
        json_str(f, u.release);
        fprintf(f, ", \"loadavg_at_start\": ");
        json_str(f, loadavg_start);
        fprintf(f, "},\n  \"config\": {\"servers\": %u, \"rounds\": %d, \"seconds_per_cell\": %g, "
                   "\"max_calls_per_cell\": %llu, \"get_keys\": %u, \"get_value_bytes\": %d, "
                   "\"key_bytes\": %d, \"libmemcached\": ",
                b.nservers, rounds, b.seconds, (unsigned long long)b.max_calls, b.nkeys,
                GET_VALUE, KEY_LEN);
        json_str(f, memcached_lib_version());
        fprintf(f, ", \"ring_agreement_of_1000\": %u, \"elapsed_s\": %.1f},\n", agree, elapsed);
        fprintf(f, "  \"rows\": [\n");
        for (unsigned r = 0; r < NROWS; r++) {
            fprintf(f, "    {\"row\": \"%s\", \"title\": ", ROWS[r].name);
            json_str(f, ROWS[r].title);
            fprintf(f, ", \"clients\": {\n");
            for (int ci = 0; ci < NCLIENTS; ci++) {
                const struct summary *s = &sum[r][ci];
                fprintf(f, "      \"%s\": {\"keys_per_s\": %.0f, \"calls_per_s\": %.0f, "
                           "\"cpu_ns_per_key\": %.1f, \"server_cpu_ns_per_key\": %.1f, "
                           "\"p50_us\": %.2f, \"p99_us\": %.2f",
                        clients[ci]->name, s->kps, s->cps, s->cpu_key, s->srv_key, s->p50, s->p99);
                if (ci)
                    fprintf(f, ", \"ratio_vs_libmemcached\": {\"keys_per_s\": %.3f, "
                               "\"keys_per_s_min\": %.3f, \"keys_per_s_max\": %.3f, "
                               "\"cpu_per_key\": %.3f, \"server_cpu_per_key\": %.3f}",
                            s->r_kps, s->r_kps_min, s->r_kps_max, s->r_cpu, s->r_srv);
                fprintf(f, ", \"rounds\": [");
                for (int rd = 0; rd < rounds; rd++) {
                    const struct cell *x = &cells[r][ci][rd];
                    fprintf(f, "%s{\"calls\": %llu, \"keys\": %llu, \"drops\": %llu, \"wall_ns\": %llu, "
                               "\"cpu_ns\": %llu, \"server_cpu_ns\": %llu, \"p50_us\": %.2f, "
                               "\"p99_us\": %.2f}",
                            rd ? ", " : "", (unsigned long long)x->calls,
                            (unsigned long long)x->keys, (unsigned long long)x->drops,
                            (unsigned long long)x->wall_ns,
                            (unsigned long long)x->cpu_ns, (unsigned long long)x->srv_cpu_ns,
                            x->p50_us, x->p99_us);
                }
                fprintf(f, "]}%s\n", ci + 1 < NCLIENTS ? "," : "");
            }
            fprintf(f, "    }}%s\n", r + 1 < NROWS ? "," : "");
        }
        fprintf(f, "  ],\n  \"goals\": {");
        for (int ci = 1; ci < NCLIENTS; ci++) {
            const struct summary *g = &sum[0][ci], *m = &sum[2][ci];
            fprintf(f, "%s\"%s\": {\"mget100_keys_per_s_ratio\": %.3f, \"mget100_keys_per_s_met\": %s, "
                       "\"mget100_cpu_per_key_ratio\": %.3f, \"mget100_cpu_per_key_met\": %s, "
                       "\"get_keys_per_s_ratio\": %.3f, \"get_keys_per_s_met\": %s}",
                    ci > 1 ? ", " : "", clients[ci]->name, m->r_kps, m->r_kps >= 2 ? "true" : "false",
                    m->r_cpu, m->r_cpu <= 0.5 ? "true" : "false", g->r_kps,
                    g->r_kps >= 1 ? "true" : "false");
        }
        fprintf(f, "},\n");
        fprintf(f, "  \"udp_vs_tcp_get\": {\"udp_p50_us\": %.2f, \"tcp_p50_us\": %.2f, "
                   "\"udp_p99_us\": %.2f, \"tcp_p99_us\": %.2f, \"udp_keys_per_s\": %.0f, "
                   "\"tcp_keys_per_s\": %.0f, \"udp_drops\": %llu, \"udp_gets\": %llu}\n}\n",
                gu->p50, gt->p50, gu->p99, gt->p99, gu->kps, gt->kps,
                (unsigned long long)udp_drops, (unsigned long long)udp_keys);
        fclose(f);
    }

    for (int ci = 0; ci < NCLIENTS; ci++)
        client_destroy(clients[ci]);
    for (unsigned i = 0; i < b.nkeys; i++) {
        free(b.get_keys[i]);
        free(b.set_keys[i]);
    }
    free(b.get_keys);
    free(b.set_keys);
    for (unsigned i = 0; i < b.nservers; i++)
        free(b.names[i]);
    free(b.lat);
    free(list);
    return 0;
}
