/*
 * trace.c -- trace readers and synthetic generators (see trace.h).
 */
#include "tools/sim/trace.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "tools/sim/idmap.h"
#include "tools/sim/rng.h"

#define KEY_SEED 0x5eed5eedULL

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static bool push(struct trace *t, struct trace_req r) {
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1 << 16;
        struct trace_req *p = realloc(t->req, cap * sizeof(*p));
        if (p == NULL)
            return false;
        t->req = p;
        t->cap = cap;
    }
    t->req[t->n++] = r;
    return true;
}

void trace_free(struct trace *t) {
    free(t->req);
    *t = (struct trace){0};
}

/* An id from a token: the number itself when it is all digits, else a hash. */
static uint64_t id_of(const char *s, size_t n) {
    if (n > 0 && n < 20) {
        uint64_t v = 0;
        size_t i = 0;
        while (i < n && isdigit((unsigned char)s[i]))
            v = v * 10 + (uint64_t)(s[i++] - '0');
        if (i == n)
            return v;
    }
    return hash_bytes(s, n, KEY_SEED);
}

static uint32_t u32_of(const char *s, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n && isdigit((unsigned char)s[i]); i++)
        v = v * 10 + (uint64_t)(s[i] - '0');
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Splits line at delim (or runs of blanks when delim is 0) into fields. */
static int split(char *line, char delim, const char **f, size_t *len, int max) {
    int n = 0;
    char *p = line;
    while (*p != '\0' && *p != '\n' && *p != '\r' && n < max) {
        if (delim == 0) {
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p == '\0' || *p == '\n' || *p == '\r')
                break;
        }
        char *s = p;
        while (*p != '\0' && *p != '\n' && *p != '\r' &&
               (delim ? *p != delim : (*p != ' ' && *p != '\t')))
            p++;
        f[n] = s;
        len[n] = (size_t)(p - s);
        n++;
        if (delim != 0 && *p == delim)
            p++;
    }
    return n;
}

static int op_of(const char *s, size_t n) {
    static const struct {
        const char *name;
        int op;
    } ops[] = {{"get", TRACE_GET},         {"gets", TRACE_GET},      {"set", TRACE_SET},
               {"add", TRACE_SET},         {"replace", TRACE_SET},   {"cas", TRACE_SET},
               {"delete", TRACE_DELETE},   {"GET", TRACE_GET},       {"SET", TRACE_SET},
               {"DELETE", TRACE_DELETE}};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (strlen(ops[i].name) == n && memcmp(ops[i].name, s, n) == 0)
            return ops[i].op;
    return -1;
}

enum fmt { FMT_CELLAR, FMT_TXT, FMT_CSV, FMT_ORACLE };

/*
 * The three line formats.  Blank lines and lines starting with '#' are
 * skipped; a csv header line when told so.  Numbers are read as unsigned
 * decimals (a fractional time keeps its whole seconds).
 */
static int read_text(struct trace *t, FILE *f, enum fmt fmt, const struct trace_csv *csv,
                     char *err, size_t errlen) {
    char line[4096];
    unsigned long lineno = 0;
    const char *fld[32];
    size_t len[32];
    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        if (fmt == FMT_CSV && csv->header && lineno == 1)
            continue;
        if (line[0] == '#')
            continue;
        int n = split(line, fmt == FMT_CSV ? csv->delim : 0, fld, len, 32);
        if (n == 0)
            continue;
        struct trace_req r = {.size = 1, .op = TRACE_GET};
        if (fmt == FMT_TXT) {
            r.id = id_of(fld[0], len[0]);
            r.time = (uint32_t)lineno;
        } else if (fmt == FMT_CELLAR) {
            if (n < 4)
                return fail(err, errlen, "line %lu: want <time> <op> <key> <size> [<ttl>]",
                            lineno);
            int op = op_of(fld[1], len[1]);
            if (op < 0)
                return fail(err, errlen, "line %lu: unknown op \"%.*s\"", lineno,
                            (int)len[1], fld[1]);
            r.time = u32_of(fld[0], len[0]);
            r.op = (uint8_t)op;
            r.id = hash_bytes(fld[2], len[2], KEY_SEED);
            r.size = u32_of(fld[3], len[3]);
            if (n > 4)
                r.ttl = u32_of(fld[4], len[4]);
        } else {
            unsigned need = csv->id_col;
            if (csv->id_col == 0 || (int)need > n)
                return fail(err, errlen, "line %lu: no column %u", lineno, need);
            r.id = id_of(fld[csv->id_col - 1], len[csv->id_col - 1]);
            if (csv->time_col && (int)csv->time_col <= n)
                r.time = u32_of(fld[csv->time_col - 1], len[csv->time_col - 1]);
            else
                r.time = (uint32_t)lineno;
            if (csv->size_col && (int)csv->size_col <= n)
                r.size = u32_of(fld[csv->size_col - 1], len[csv->size_col - 1]);
            if (csv->ttl_col && (int)csv->ttl_col <= n)
                r.ttl = u32_of(fld[csv->ttl_col - 1], len[csv->ttl_col - 1]);
        }
        if (!push(t, r))
            return fail(err, errlen, "out of memory at line %lu", lineno);
    }
    return 0;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* oracleGeneral: 24-byte little-endian records; the next-access field is not needed. */
static int read_oracle(struct trace *t, FILE *f, char *err, size_t errlen) {
    unsigned char rec[24];
    while (fread(rec, 1, sizeof(rec), f) == sizeof(rec)) {
        struct trace_req r = {.op = TRACE_GET};
        r.time = le32(rec);
        r.id = (uint64_t)le32(rec + 4) | (uint64_t)le32(rec + 8) << 32;
        r.size = le32(rec + 12);
        if (r.size == 0)
            r.size = 1;
        if (!push(t, r))
            return fail(err, errlen, "out of memory");
    }
    return 0;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The format named, or guessed from the file name and its first line. */
static int pick_format(const char *path, const char *format, FILE *f) {
    if (format != NULL) {
        static const char *names[] = {"cellar", "txt", "csv", "oracle"};
        for (int i = 0; i < 4; i++)
            if (strcmp(format, names[i]) == 0)
                return i;
        if (strcmp(format, "oracleGeneral") == 0)
            return FMT_ORACLE;
        return -1;
    }
    if (strstr(path, "oracleGeneral") != NULL || ends_with(path, ".bin"))
        return FMT_ORACLE;
    if (ends_with(path, ".csv"))
        return FMT_CSV;
    char line[1024];
    long at = ftell(f);
    int fmt = FMT_TXT;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        const char *fld[8];
        size_t len[8];
        fmt = split(line, 0, fld, len, 8) >= 4 ? FMT_CELLAR : FMT_TXT;
        break;
    }
    fseek(f, at, SEEK_SET);
    return fmt;
}

int trace_load(struct trace *t, const char *path, const char *format,
               const struct trace_csv *csv, char *err, size_t errlen) {
    *t = (struct trace){0};
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return fail(err, errlen, "%s: %s", path, strerror(errno));
    int fmt = pick_format(path, format, f);
    struct trace_csv dflt = {.time_col = 1, .id_col = 2, .size_col = 3, .delim = ','};
    int rc;
    if (fmt < 0)
        rc = fail(err, errlen, "unknown trace format \"%s\"", format);
    else if (fmt == FMT_ORACLE)
        rc = read_oracle(t, f, err, errlen);
    else
        rc = read_text(t, f, (enum fmt)fmt, csv != NULL ? csv : &dflt, err, errlen);
    fclose(f);
    if (rc == 0 && t->n == 0)
        rc = fail(err, errlen, "%s: no requests", path);
    if (rc != 0) {
        trace_free(t);
        return rc;
    }
    const char *base = strrchr(path, '/');
    snprintf(t->name, sizeof(t->name), "%s", base != NULL ? base + 1 : path);
    return trace_count_unique(t) == 0 ? 0 : fail(err, errlen, "out of memory");
}

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

int trace_write(const struct trace *t, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return fail(err, errlen, "%s: %s", path, strerror(errno));
    int rc = 0;
    if (ends_with(path, ".txt")) {
        for (size_t i = 0; i < t->n; i++)
            fprintf(f, "%llu\n", (unsigned long long)t->req[i].id);
    } else {
        int64_t *next = malloc(t->n * sizeof(int64_t));
        struct idmap *m = idmap_create(t->unique);
        if (next == NULL || m == NULL) {
            rc = fail(err, errlen, "out of memory");
        } else {
            for (size_t i = t->n; i-- > 0;) {
                uint64_t *v = idmap_put(m, t->req[i].id, UINT64_MAX, NULL);
                if (v == NULL) {
                    rc = fail(err, errlen, "out of memory");
                    break;
                }
                next[i] = *v == UINT64_MAX ? -1 : (int64_t)*v;
                *v = i;
            }
            for (size_t i = 0; rc == 0 && i < t->n; i++) {
                unsigned char rec[24];
                put32(rec, t->req[i].time);
                put32(rec + 4, (uint32_t)t->req[i].id);
                put32(rec + 8, (uint32_t)(t->req[i].id >> 32));
                put32(rec + 12, t->req[i].size);
                put32(rec + 16, (uint32_t)(uint64_t)next[i]);
                put32(rec + 20, (uint32_t)((uint64_t)next[i] >> 32));
                fwrite(rec, 1, sizeof(rec), f);
            }
        }
        free(next);
        idmap_destroy(&m);
    }
    if (fclose(f) != 0 && rc == 0)
        rc = fail(err, errlen, "%s: %s", path, strerror(errno));
    return rc;
}

int trace_count_unique(struct trace *t) {
    struct idmap *m = idmap_create(1024);
    if (m == NULL)
        return -1;
    uint64_t bytes = 0;
    for (size_t i = 0; i < t->n; i++) {
        bool fresh;
        if (idmap_put(m, t->req[i].id, 0, &fresh) == NULL) {
            idmap_destroy(&m);
            return -1;
        }
        if (fresh)
            bytes += t->req[i].size;
    }
    t->unique = idmap_count(m);
    t->unique_bytes = bytes;
    idmap_destroy(&m);
    return 0;
}

/* ---- synthetic traces ---- */

struct synth {
    char kind[16];
    double alpha, short_frac;
    uint64_t objects, requests, every, length, by, rate;
    uint32_t size_lo, size_hi, ttl;
};

static bool parse_num(const char *v, double *out) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || errno != 0)
        return false;
    if (*end == 'k' || *end == 'K')
        d *= 1e3, end++;
    else if (*end == 'm' || *end == 'M')
        d *= 1e6, end++;
    else if (*end == 'g' || *end == 'G')
        d *= 1e9, end++;
    *out = d;
    return *end == '\0';
}

static int parse_spec(const char *spec, struct synth *s, char *err, size_t errlen) {
    *s = (struct synth){.alpha = 1.0, .objects = 1000000, .requests = 10000000,
                        .every = 100000, .length = 0, .size_lo = 1, .size_hi = 1,
                        .rate = 10000, .short_frac = 0.3, .ttl = 60};
    const char *colon = strpbrk(spec, ":,");   /* "uniform,objects=.." reads too */
    size_t kn = colon ? (size_t)(colon - spec) : strlen(spec);
    if (kn >= sizeof(s->kind))
        return fail(err, errlen, "bad synthetic spec \"%s\"", spec);
    memcpy(s->kind, spec, kn);
    s->kind[kn] = '\0';
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", colon ? colon + 1 : "");
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv != NULL;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (eq == NULL)
            return fail(err, errlen, "bad synthetic parameter \"%s\"", kv);
        *eq = '\0';
        const char *k = kv, *v = eq + 1;
        double d = 0;
        if (strcmp(k, "size") == 0) {
            unsigned lo, hi;
            if (sscanf(v, "%u-%u", &lo, &hi) == 2 && lo >= 1 && hi >= lo)
                s->size_lo = lo, s->size_hi = hi;
            else if (sscanf(v, "%u", &lo) == 1 && lo >= 1)
                s->size_lo = s->size_hi = lo;
            else
                return fail(err, errlen, "bad size \"%s\"", v);
            continue;
        }
        if (!parse_num(v, &d) || d < 0)
            return fail(err, errlen, "bad value for %s: \"%s\"", k, v);
        if (strcmp(k, "alpha") == 0)
            s->alpha = d;
        else if (strcmp(k, "objects") == 0)
            s->objects = (uint64_t)d;
        else if (strcmp(k, "requests") == 0)
            s->requests = (uint64_t)d;
        else if (strcmp(k, "every") == 0)
            s->every = (uint64_t)d;
        else if (strcmp(k, "length") == 0)
            s->length = (uint64_t)d;
        else if (strcmp(k, "by") == 0)
            s->by = (uint64_t)d;
        else if (strcmp(k, "rate") == 0)
            s->rate = (uint64_t)d;
        else if (strcmp(k, "short") == 0)
            s->short_frac = d;
        else if (strcmp(k, "ttl") == 0)
            s->ttl = (uint32_t)d;
        else
            return fail(err, errlen, "unknown synthetic parameter \"%s\"", k);
    }
    if (s->objects == 0 || s->requests == 0 || s->rate == 0 || s->every == 0)
        return fail(err, errlen, "objects, requests, rate and every must be positive");
    return 0;
}

/*
 * The cumulative distribution of zipf(alpha) over m ranks, normalised to
 * end at 1 (libCacheSim's generator: weights k^-alpha, cumulative sum,
 * divided by the total).  alpha 0 is uniform.
 */
static double *zipf_cdf(uint64_t m, double alpha) {
    double *cdf = malloc(m * sizeof(double));
    if (cdf == NULL)
        return NULL;
    double sum = 0;
    for (uint64_t k = 0; k < m; k++) {
        sum += pow((double)(k + 1), -alpha);
        cdf[k] = sum;
    }
    for (uint64_t k = 0; k < m; k++)
        cdf[k] /= sum;
    cdf[m - 1] = 1.0;
    return cdf;
}

/* The first rank whose cumulative probability reaches u. */
static uint64_t zipf_draw(const double *cdf, uint64_t m, double u) {
    uint64_t lo = 0, hi = m - 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] >= u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* An object's size and TTL, fixed per id so repeats agree. */
static uint32_t size_of(const struct synth *s, uint64_t id) {
    if (s->size_hi == s->size_lo)
        return s->size_lo;
    uint64_t x = id;
    return s->size_lo + (uint32_t)(rng_splitmix(&x) % (s->size_hi - s->size_lo + 1));
}

static uint32_t ttl_of(const struct synth *s, uint64_t id) {
    uint64_t x = id ^ 0x7777;
    return (double)(rng_splitmix(&x) >> 11) * 0x1.0p-53 < s->short_frac ? s->ttl : 0;
}

/*
 * All kinds are one loop: draw a rank (zipf by inverse CDF, or uniform),
 * or a fresh id inside a scan window; move the rank by the shift; time is
 * the request's index over the rate.  Ranks are ids, so object 0 is the
 * most popular (keys are hashed in the engine, so order does not matter).
 */
int trace_synth(struct trace *t, const char *spec, uint64_t seed, char *err, size_t errlen) {
    *t = (struct trace){0};
    struct synth s;
    if (parse_spec(spec, &s, err, errlen) != 0)
        return -1;
    bool zipf = strcmp(s.kind, "zipf") == 0 || strcmp(s.kind, "scan") == 0 ||
                strcmp(s.kind, "shift") == 0 || strcmp(s.kind, "ttl") == 0;
    if (!zipf && strcmp(s.kind, "uniform") != 0)
        return fail(err, errlen, "unknown synthetic trace \"%s\"", s.kind);
    if (strcmp(s.kind, "scan") == 0 && s.length == 0)
        s.length = s.objects / 10;
    if (s.by == 0)
        s.by = s.objects / 2;
    double *cdf = zipf ? zipf_cdf(s.objects, s.alpha) : NULL;
    if (zipf && cdf == NULL)
        return fail(err, errlen, "out of memory");
    t->cap = s.requests;
    t->req = malloc(t->cap * sizeof(*t->req));
    if (t->req == NULL) {
        free(cdf);
        return fail(err, errlen, "out of memory for %llu requests",
                    (unsigned long long)s.requests);
    }
    struct rng r;
    rng_seed(&r, seed);
    uint64_t scan_next = s.objects;     /* fresh ids for scans */
    bool scan = strcmp(s.kind, "scan") == 0, shift = strcmp(s.kind, "shift") == 0;
    bool ttl = strcmp(s.kind, "ttl") == 0;
    for (uint64_t i = 0; i < s.requests; i++) {
        uint64_t id;
        if (scan && i % s.every >= s.every - (s.length < s.every ? s.length : s.every - 1))
            id = scan_next++;
        else if (cdf != NULL)
            id = zipf_draw(cdf, s.objects, rng_unit(&r));
        else
            id = rng_below(&r, s.objects);
        if (shift)
            id = (id + (i / s.every) * s.by) % s.objects;
        t->req[t->n++] = (struct trace_req){
            .id = id,
            .time = (uint32_t)(i / s.rate),
            .size = size_of(&s, id),
            .ttl = ttl ? ttl_of(&s, id) : 0,
            .op = TRACE_GET,
        };
    }
    free(cdf);
    snprintf(t->name, sizeof(t->name), "%s seed=%llu", spec, (unsigned long long)seed);
    if (trace_count_unique(t) != 0) {
        trace_free(t);
        return fail(err, errlen, "out of memory");
    }
    return 0;
}
