/*
 * driver.c -- bench/incast's client: one libcellar handle doing multi-gets
 * under a fixed window, timed one by one.
 *
 * bench/incast/run builds it against the static libcellar and calls it once
 * to preload the keys and once per window size to measure:
 *
 *   incast-driver --servers A:P,B:Q,... --preload        sets every key, checks them
 *   incast-driver --servers ... --window N               warm-up, then timed mgets
 *
 * A measuring run makes one handle with window_init = window_min =
 * window_max = N and no bound on bytes (so the window cannot move), does --warmup untimed
 * multi-gets of all --keys keys (they open the connections and grow the
 * TCP windows), then times multi-gets one after another until --iters
 * are done or --seconds have passed, whichever comes first.  Each is
 * timed with CLOCK_MONOTONIC around cellar_mget() alone.  It prints one
 * JSON object: every latency in microseconds, the count of items per
 * status over the timed multi-gets, and the handle's counters (cellar_stats)
 * taken around the timed part.
 *
 * --window 0 leaves the four window settings at zero, so the handle runs
 * the library's default adaptive window (what an application gets without
 * setting them); --window-init, --window-min, --window-max and
 * --window-bytes (-1: no bound on bytes) then set some of them, to try an
 * adaptive window with other bounds.
 *
 * tko_timeouts is set very high (unless --tko) so that a timeout never
 * marks a server down: a down server's keys fail at once, which would look
 * like a fast multi-get.  Timeouts are still counted and reported.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cellar.h"

#define STATUS_MIN (-12)
#define STATUS_MAX 3

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void usage(void) {
    fprintf(stderr,
            "usage: incast-driver --servers LIST (--preload | --window N)\n"
            "       [--keys 1000] [--value 1024] [--warmup 5] [--iters 300] [--min-iters 20]\n"
            "       [--seconds 15] [--timeout-ms 1000] [--tko N]\n"
            "--window 0: the library's own adaptive window (its defaults);\n"
            "--window-init/--window-min/--window-max N then set each bound (0: default)\n");
    exit(2);
}

static void die(const char *what, int rc) {
    fprintf(stderr, "incast-driver: %s: %s (%d)\n", what, cellar_strerror(rc), rc);
    exit(1);
}

static void print_stats(const char *name, const struct cellar_stats *a,
                        const struct cellar_stats *b) {
    printf("\"%s\": {\"requests\": %llu, \"hits\": %llu, \"misses\": %llu, \"timeouts\": %llu, "
           "\"errors\": %llu, \"down_fast_fails\": %llu, \"tko_events\": %llu, "
           "\"connects\": %llu, \"window\": %u, \"window_peak\": %u}",
           name, (unsigned long long)(b->requests - a->requests),
           (unsigned long long)(b->hits - a->hits), (unsigned long long)(b->misses - a->misses),
           (unsigned long long)(b->timeouts - a->timeouts),
           (unsigned long long)(b->errors - a->errors),
           (unsigned long long)(b->down_fast_fails - a->down_fast_fails),
           (unsigned long long)(b->tko_events - a->tko_events),
           (unsigned long long)(b->connects - a->connects), b->window, b->window_peak);
}

int main(int argc, char **argv) {
    const char *servers = NULL;
    int preload = 0, window = 0, nkeys = 1000, vsize = 1024, warmup = 5, iters = 300;
    int min_iters = 20, timeout_ms = 1000, tko = 1000000000, window_given = 0;
    int winit = -1, wmin = -1, wmax = -1, wbytes = 0;
    double seconds = 15;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--preload") == 0) {
            preload = 1;
            continue;
        }
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--servers") == 0) servers = v;
        else if (strcmp(a, "--window") == 0) window = atoi(v), window_given = 1;
        else if (strcmp(a, "--keys") == 0) nkeys = atoi(v);
        else if (strcmp(a, "--value") == 0) vsize = atoi(v);
        else if (strcmp(a, "--warmup") == 0) warmup = atoi(v);
        else if (strcmp(a, "--iters") == 0) iters = atoi(v);
        else if (strcmp(a, "--min-iters") == 0) min_iters = atoi(v);
        else if (strcmp(a, "--seconds") == 0) seconds = atof(v);
        else if (strcmp(a, "--timeout-ms") == 0) timeout_ms = atoi(v);
        else if (strcmp(a, "--tko") == 0) tko = atoi(v);
        else if (strcmp(a, "--window-init") == 0) winit = atoi(v);
        else if (strcmp(a, "--window-min") == 0) wmin = atoi(v);
        else if (strcmp(a, "--window-max") == 0) wmax = atoi(v);
        else if (strcmp(a, "--window-bytes") == 0) wbytes = atoi(v);
        else usage();
    }
    if (servers == NULL || (!preload && (!window_given || window < 0)) || nkeys <= 0 || vsize <= 0 || iters <= 0)
        usage();

    struct cellar_options opt = {
        .server_timeout_ms = timeout_ms,
        .connect_timeout_ms = timeout_ms,
        .tko_timeouts = tko,
        .window_init = preload ? 0 : window,      /* 0: the library's default */
        .window_min = preload ? 0 : window,
        .window_max = preload ? 0 : window,
        .window_bytes = preload ? 0 : -1,
    };
    if (!preload && window == 0) {
        opt.window_init = winit > 0 ? winit : 0;
        opt.window_min = wmin > 0 ? wmin : 0;
        opt.window_max = wmax > 0 ? wmax : 0;
        opt.window_bytes = wbytes;
    }
    struct cellar_config *cfg;
    char err[512];
    int rc = cellar_config_parse(&cfg, servers, &opt, err, sizeof err);
    if (rc != CELLAR_OK) {
        fprintf(stderr, "incast-driver: %s\n", err);
        return 1;
    }
    struct cellar *h;
    if ((rc = cellar_create(&h, cfg)) != CELLAR_OK)
        die("cellar_create", rc);
    unsigned nservers = cellar_config_servers(cfg);
    cellar_config_release(&cfg);

    char **keys = calloc((size_t)nkeys, sizeof(*keys));
    size_t *klen = calloc((size_t)nkeys, sizeof(*klen));
    struct cellar_item *items = calloc((size_t)nkeys, sizeof(*items));
    unsigned *per_server = calloc(nservers, sizeof(*per_server));
    char *value = malloc((size_t)vsize);
    if (!keys || !klen || !items || !per_server || !value)
        die("allocation", CELLAR_ENOMEM);
    for (int i = 0; i < nkeys; i++) {
        char buf[64];
        klen[i] = (size_t)snprintf(buf, sizeof buf, "incast:%06d", i);
        keys[i] = strdup(buf);
        int s = cellar_server_of(h, keys[i], klen[i]);
        if (s >= 0 && (unsigned)s < nservers)
            per_server[s]++;
    }

    if (preload) {
        for (int i = 0; i < nkeys; i++) {
            for (int j = 0; j < vsize; j++)
                value[j] = (char)('a' + (i + j) % 26);
            if ((rc = cellar_set(h, keys[i], klen[i], value, (size_t)vsize, 0, 0)) != CELLAR_OK)
                die("cellar_set", rc);
        }
        if ((rc = cellar_mget(h, (const char *const *)keys, klen, (size_t)nkeys, items)))
            die("cellar_mget", rc);
        int bad = 0;
        for (int i = 0; i < nkeys; i++) {
            if (items[i].status != CELLAR_OK || items[i].nvalue != (size_t)vsize)
                bad++;
            cellar_item_clear(&items[i]);
        }
        printf("{\"preloaded\": %d, \"bad\": %d, \"keys_per_server\": [", nkeys, bad);
        for (unsigned s = 0; s < nservers; s++)
            printf("%s%u", s ? ", " : "", per_server[s]);
        printf("]}\n");
        cellar_destroy(&h);
        return bad ? 1 : 0;
    }

    for (int w = 0; w < warmup; w++) {
        if ((rc = cellar_mget(h, (const char *const *)keys, klen, (size_t)nkeys, items)))
            die("cellar_mget", rc);
        for (int i = 0; i < nkeys; i++)
            cellar_item_clear(&items[i]);
    }

    uint64_t *lat = calloc((size_t)iters, sizeof(*lat));
    uint64_t counts[STATUS_MAX - STATUS_MIN + 1] = {0};
    uint64_t bad_values = 0;
    if (lat == NULL)
        die("allocation", CELLAR_ENOMEM);
    struct cellar_stats s0, s1;
    cellar_stats(h, &s0);
    uint64_t start = now_ns(), limit = (uint64_t)(seconds * 1e9);
    int n = 0;
    while (n < iters && (n < min_iters || now_ns() - start < limit)) {
        uint64_t t0 = now_ns();
        rc = cellar_mget(h, (const char *const *)keys, klen, (size_t)nkeys, items);
        uint64_t t1 = now_ns();
        if (rc != CELLAR_OK)
            die("cellar_mget", rc);
        lat[n++] = (t1 - t0) / 1000u;
        for (int i = 0; i < nkeys; i++) {
            int st = items[i].status;
            if (st >= STATUS_MIN && st <= STATUS_MAX)
                counts[st - STATUS_MIN]++;
            if (st == CELLAR_OK && items[i].nvalue != (size_t)vsize)
                bad_values++;
            cellar_item_clear(&items[i]);
        }
    }
    double elapsed = (double)(now_ns() - start) / 1e9;
    cellar_stats(h, &s1);

    printf("{\"window\": %d, \"keys\": %d, \"value\": %d, \"iters\": %d, \"elapsed_s\": %.3f, "
           "\"bad_values\": %llu, ",
           window, nkeys, vsize, n, elapsed, (unsigned long long)bad_values);
    printf("\"status_counts\": {");
    int first = 1;
    for (int st = STATUS_MIN; st <= STATUS_MAX; st++) {
        if (counts[st - STATUS_MIN] == 0)
            continue;
        printf("%s\"%d\": %llu", first ? "" : ", ", st,
               (unsigned long long)counts[st - STATUS_MIN]);
        first = 0;
    }
    printf("}, ");
    print_stats("cellar_stats", &s0, &s1);
    printf(", \"latency_us\": [");
    for (int i = 0; i < n; i++)
        printf("%s%llu", i ? ", " : "", (unsigned long long)lat[i]);
    printf("]}\n");

    cellar_destroy(&h);
    for (int i = 0; i < nkeys; i++)
        free(keys[i]);
    free(keys);
    free(klen);
    free(items);
    free(per_server);
    free(value);
    free(lat);
    return 0;
}
