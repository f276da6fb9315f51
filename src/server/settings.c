/*
 * settings.c -- memcached 1.6.18's command line, for cellard.
 *
 *   argv --getopt_long--> settings_opts[i].set()      -o a=1,b --> settings_subs[j].set()
 *                              |                                   |
 *                              +------------> struct settings <----+
 *                                                   |
 *                       finish(): memcached's cross-checks (-I vs -m,
 *                       slab_chunk_max, slab_sizes, LRU pcts, ports)
 *
 *   settings_usage.c: settings_opts + settings_subs --> -h (defaults from
 *   settings_init) and -i
 *   settings_show.c: stat_table --> settings_each_stat()  (`stats settings`)
 *
 * Every message a refusal prints is memcached 1.6.18's own wording, checked
 * against Debian's binary, and so is the exit code: 1 for what memcached
 * refuses while reading an option, 64 (EX_USAGE) for what it refuses after
 * reading them all.  Messages that start with "cellard:" are ours, for
 * cases memcached does not refuse (it wraps, hangs or crashes instead).
 *
 * getopt_long() prints its own complaints to stderr; we silence it
 * (opterr = 0) and print the same words to the caller's stream instead, so
 * tests can read them and the server can send them where it likes.
 *
 * Each of memcached's ninety-odd options and suboptions keeps its handler
 * and its table row here, next to the others it interacts with; how the
 * fields are shown is settings_show.c.
 */
#include "server/settings_int.h"

#include "core/httpd.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK_ALIGN_BYTES 8             /* memcached's slab size alignment */

/* Static defaults; any other string in the struct is an owned copy. */
static const char default_inter[] = SETTINGS_DEFAULT_INTER;
static const char default_policy[] = SETTINGS_DEFAULT_POLICY;
static const char flat_policy[] = SETTINGS_FLAT_POLICY;
static const char seg_policy[] = "fifo";

/* ------------------------------------------------------------------ */
/* Parsing state and the small helpers every option shares.            */

#define MAX_OPTS 64
#define MAX_SUBS 96

struct parse {
    struct settings *s;
    FILE *err;
    bool tcp_specified;         /* -p given: -U alone also sets the TCP port */
    bool udp_specified;
    bool chunk_changed;         /* slab_chunk_max given: -I > 1m keeps it */
    char *slab_sizes;           /* -o slab_sizes, checked once -n is known */
    int todo[MAX_OPTS + MAX_SUBS]; /* options given that we do not act on */
    int ntodo;                  /* (rows of settings_opts, then MAX_OPTS + settings_subs) */
};

/* Frees a string field unless it holds one of the static defaults. */
static void str_free(const char *p) {
    if (p != NULL && p != default_inter && p != default_policy && p != flat_policy &&
        p != seg_policy)
        free((void *)p);
}

/* Replaces a string field with a copy of v. */
static int str_set(struct parse *p, const char **field, const char *v) {
    char *copy = strdup(v);
    if (copy == NULL) {
        fprintf(p->err, "Failed to allocate memory\n");
        return 1;
    }
    str_free(*field);
    *field = copy;
    return 0;
}

/*
 * memcached reads most numbers with atoi(): optional blanks and sign, the
 * leading digits, the rest ignored, no digits meaning 0 ("-t 4x" is 4,
 * "-p abc" is 0).  We read them the same way, so every command line
 * memcached accepts means the same here, except that a number that does
 * not fit in [lo, hi] is refused where atoi() would wrap it around.
 */
static int num_read(struct parse *p, const char *what, const char *arg,
                    long long lo, long long hi, long long *out) {
    errno = 0;
    long long v = strtoll(arg, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi) {
        fprintf(p->err, "cellard: %s %s: number out of range\n", what, arg);
        return 1;
    }
    *out = v;
    return 0;
}

static int int_read(struct parse *p, const char *what, const char *arg, int *out) {
    long long v;
    if (num_read(p, what, arg, INT_MIN, INT_MAX, &v) != 0)
        return 1;
    *out = (int)v;
    return 0;
}

/* atof(), refusing infinities and NaN, which pass memcached's checks. */
static int double_read(struct parse *p, const char *what, const char *arg, double *out) {
    double v = strtod(arg, NULL);
    if (!isfinite(v)) {
        fprintf(p->err, "cellard: %s %s: number out of range\n", what, arg);
        return 1;
    }
    *out = v;
    return 0;
}

/*
 * memcached's safe_strtoul(): the whole string must be a decimal number
 * (trailing blanks allowed) that fits 32 bits; a minus sign is refused.
 */
static bool strict_u32(const char *arg, unsigned *out) {
    char *end;
    errno = 0;
    if (strchr(arg, '-') != NULL)
        return false;
    unsigned long long v = strtoull(arg, &end, 10);
    if (end == arg || errno == ERANGE || v > UINT32_MAX)
        return false;
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    if (*end != '\0')
        return false;
    *out = (unsigned)v;
    return true;
}

/* ------------------------------------------------------------------ */
/* Options.  Each returns 0, or an exit code after printing why.       */

static int opt_port(struct parse *p, const char *a) {
    p->tcp_specified = true;
    return int_read(p, "-p", a, &p->s->port);
}

static int opt_udp_port(struct parse *p, const char *a) {
    p->udp_specified = true;
    return int_read(p, "-U", a, &p->s->udpport);
}

static int opt_unix_socket(struct parse *p, const char *a) {
    return str_set(p, &p->s->socketpath, a);
}

/* -a is octal, as chmod takes it; memcached reads it with strtol(, 8). */
static int opt_unix_mask(struct parse *p, const char *a) {
    errno = 0;
    long v = strtol(a, NULL, 8);
    if (errno == ERANGE || v < 0 || v > 07777) {
        fprintf(p->err, "cellard: -a %s: number out of range\n", a);
        return 1;
    }
    p->s->access = (int)v;
    return 0;
}

/*
 * -l may be given many times and each may hold a comma list; memcached
 * joins them with commas into one string (`stats settings` inter prints
 * it) and the listener splits it again.  The first -l replaces our
 * 127.0.0.1 default.  memcached skips an -l whose text occurs anywhere in
 * the list so far (so "-l 10.0.0.1:5 -l 10.0.0.1" loses the second); we
 * skip only an address already listed exactly.
 */
static bool list_has(const char *list, const char *item, size_t n) {
    for (const char *q = list; q != NULL && *q != '\0';) {
        const char *comma = strchr(q, ',');
        size_t len = comma ? (size_t)(comma - q) : strlen(q);
        if (len == n && memcmp(q, item, n) == 0)
            return true;
        q = comma ? comma + 1 : NULL;
    }
    return false;
}

static int opt_listen(struct parse *p, const char *a) {
    const char *old = p->s->inter == default_inter ? "" : p->s->inter;
    char *list = malloc(strlen(old) + strlen(a) + 2);
    if (list == NULL) {
        fprintf(p->err, "Failed to allocate memory\n");
        return 1;
    }
    size_t len = strlen(old);
    memcpy(list, old, len + 1);
    for (const char *q = a;;) {
        const char *comma = strchr(q, ',');
        size_t n = comma ? (size_t)(comma - q) : strlen(q);
        if (n > 0 && !list_has(list, q, n)) {
            if (len > 0)
                list[len++] = ',';
            memcpy(list + len, q, n);
            len += n;
            list[len] = '\0';
        }
        if (comma == NULL)
            break;
        q = comma + 1;
    }
    str_free(p->s->inter);
    p->s->inter = list;
    return 0;
}

static int opt_user(struct parse *p, const char *a) {
    return str_set(p, &p->s->username, a);
}

/*
 * -m is megabytes, read with atoi() like the rest ("-m 64k" is 64 MB and
 * "-m 1g" is 1 MB, as in memcached).  A negative value, which memcached
 * turns into 16 exabytes, is refused.
 */
static int opt_memory_limit(struct parse *p, const char *a) {
    long long v;
    if (num_read(p, "-m", a, 0, (long long)(SIZE_MAX / MB), &v) != 0)
        return 1;
    p->s->maxbytes = (size_t)v * MB;
    return 0;
}

static int opt_conn_limit(struct parse *p, const char *a) {
    if (int_read(p, "-c", a, &p->s->maxconns) != 0)
        return 1;
    if (p->s->maxconns <= 0) {
        fprintf(p->err, "Maximum connections must be greater than 0\n");
        return 1;
    }
    return 0;
}

/* -v counts; --verbose=N is accepted and counts once, as in memcached. */
static int opt_verbose(struct parse *p, const char *a) {
    (void)a;
    p->s->verbose++;
    return 0;
}

static int opt_pidfile(struct parse *p, const char *a) {
    return str_set(p, &p->s->pid_file, a);
}

static int opt_factor(struct parse *p, const char *a) {
    if (double_read(p, "-f", a, &p->s->factor) != 0)
        return 1;
    if (!(p->s->factor > 1.0)) {
        fprintf(p->err, "Factor must be greater than 1\n");
        return 1;
    }
    return 0;
}

/* memcached refuses only 0; a negative chunk size is refused here too. */
static int opt_chunk_size(struct parse *p, const char *a) {
    if (int_read(p, "-n", a, &p->s->chunk_size) != 0)
        return 1;
    if (p->s->chunk_size <= 0) {
        fprintf(p->err, "Chunk size must be greater than 0\n");
        return 1;
    }
    return 0;
}

static int opt_delimiter(struct parse *p, const char *a) {
    if (a == NULL || a[0] == '\0') {
        fprintf(p->err, "No delimiter specified\n");
        return 1;
    }
    p->s->prefix_delimiter = a[0];
    p->s->detail_enabled = true;
    return 0;
}

static int opt_threads(struct parse *p, const char *a) {
    if (int_read(p, "-t", a, &p->s->num_threads) != 0)
        return 1;
    if (p->s->num_threads <= 0) {
        fprintf(p->err, "Number of threads must be greater than 0\n");
        return 1;
    }
    if (p->s->num_threads > 64)
        fprintf(p->err, "WARNING: Setting a high number of worker"
                        "threads is not recommended.\n"
                        " Set this value to the number of cores in"
                        " your machine or less.\n");
    return 0;
}

/* memcached refuses only 0, and spins forever on a negative -R. */
static int opt_reqs_per_event(struct parse *p, const char *a) {
    if (int_read(p, "-R", a, &p->s->reqs_per_event) != 0)
        return 1;
    if (p->s->reqs_per_event <= 0) {
        fprintf(p->err, "Number of requests per event must be greater than 0\n");
        return 1;
    }
    return 0;
}

static int opt_backlog(struct parse *p, const char *a) {
    return int_read(p, "-b", a, &p->s->backlog);
}

static int opt_protocol(struct parse *p, const char *a) {
    if (strcmp(a, "auto") == 0) {
        p->s->binding_protocol = SETTINGS_PROTO_AUTO;
    } else if (strcmp(a, "binary") == 0) {
        p->s->binding_protocol = SETTINGS_PROTO_BINARY;
    } else if (strcmp(a, "ascii") == 0) {
        p->s->binding_protocol = SETTINGS_PROTO_ASCII;
    } else {
        fprintf(p->err, "Invalid value for binding protocol: %s\n"
                        " -- should be one of auto, binary, or ascii\n", a);
        return SETTINGS_EX_USAGE;
    }
    return 0;
}

/*
 * -I takes bytes, or a number ending in k/K or m/M; like memcached we read
 * the number with atoi() ("1.5m" is 1m, "2g" is 2 bytes) and leave the
 * range checks for after all options are read, when -m is known.
 */
static int opt_item_size(struct parse *p, const char *a) {
    size_t len = strlen(a);
    long long mult = 1;
    if (len > 0 && (a[len - 1] == 'k' || a[len - 1] == 'K'))
        mult = KB;
    else if (len > 0 && (a[len - 1] == 'm' || a[len - 1] == 'M'))
        mult = MB;
    long long v;
    if (num_read(p, "-I", a, INT_MIN / mult, INT_MAX / mult, &v) != 0)
        return 1;
    p->s->item_size_max = (int)(v * mult);
    return 0;
}

/* A memcached built without SASL answers -S so; so do we. */
static int opt_sasl(struct parse *p, const char *a) {
    (void)a;
    fprintf(p->err, "This server is not built with SASL support.\n");
    return SETTINGS_EX_USAGE;
}

/*
 * FIXME: ASCII authentication (-Y) is not implemented.  Starting without
 * it would leave open a cache its operator meant to close, so we refuse.
 */
static int opt_auth_file(struct parse *p, const char *a) {
    if (str_set(p, &p->s->auth_file, a) != 0)
        return 1;
    fprintf(p->err, "cellard: -Y (ASCII authentication) is not implemented yet; "
                    "refusing to start without it\n");
    return SETTINGS_EX_USAGE;
}

static int opt_memory_file(struct parse *p, const char *a) {
    return str_set(p, &p->s->memory_file, a);
}

/* cellard has no TLS; refuse -Z the way -S is refused without SASL. */
static int opt_ssl(struct parse *p, const char *a) {
    (void)a;
    fprintf(p->err, "This server is not built with TLS support.\n");
    return SETTINGS_EX_USAGE;
}

static int opt_napi_ids(struct parse *p, const char *a) {
    if (int_read(p, "-N", a, &p->s->num_napi_ids) != 0)
        return 1;
    if (p->s->num_napi_ids <= 0) {
        fprintf(p->err, "Maximum number of NAPI IDs must be greater than 0\n");
        return 1;
    }
    return 0;
}

static int opt_extended(struct parse *p, const char *a);

/* ------------------------------------------------------------------ */
/* -o suboptions.  v is NULL when the token had no '='.                */

/* memcached's wording when a suboption needs a value and has none. */
static int need(struct parse *p, const char *v, const char *msg) {
    if (v != NULL)
        return 0;
    fprintf(p->err, "%s\n", msg);
    return 1;
}

static int sub_hashpower(struct parse *p, const char *v) {
    if (need(p, v, "Missing numeric argument for hashpower") ||
        int_read(p, "-o hashpower", v, &p->s->hashpower_init))
        return 1;
    if (p->s->hashpower_init < 12) {
        fprintf(p->err, "Initial hashtable multiplier of %d is too low\n",
                p->s->hashpower_init);
        return 1;
    }
    if (p->s->hashpower_init > 32) {
        fprintf(p->err, "Initial hashtable multiplier of %d is too high\n"
                        "Choose a value based on \"STAT hash_power_level\" "
                        "from a running instance\n", p->s->hashpower_init);
        return 1;
    }
    return 0;
}

static int sub_slab_automove(struct parse *p, const char *v) {
    if (v == NULL) {
        p->s->slab_automove = 1;
        return 0;
    }
    if (int_read(p, "-o slab_automove", v, &p->s->slab_automove))
        return 1;
    if (p->s->slab_automove < 0 || p->s->slab_automove > 2) {
        fprintf(p->err, "slab_automove must be between 0 and 2\n");
        return 1;
    }
    return 0;
}

static int sub_no_slab_automove(struct parse *p, const char *v) {
    (void)v;
    p->s->slab_automove = 0;
    return 0;
}

static int sub_slab_automove_ratio(struct parse *p, const char *v) {
    if (need(p, v, "Missing slab_automove_ratio argument") ||
        double_read(p, "-o slab_automove_ratio", v, &p->s->slab_automove_ratio))
        return 1;
    if (p->s->slab_automove_ratio <= 0 || p->s->slab_automove_ratio > 1) {
        fprintf(p->err, "slab_automove_ratio must be > 0 and < 1\n");
        return 1;
    }
    return 0;
}

static int sub_slab_automove_window(struct parse *p, const char *v) {
    int w;
    if (need(p, v, "Missing slab_automove_window argument") ||
        int_read(p, "-o slab_automove_window", v, &w))
        return 1;
    if (w < 3) {
        fprintf(p->err, "slab_automove_window must be > 2\n");
        return 1;
    }
    p->s->slab_automove_window = (unsigned)w;
    return 0;
}

static int sub_tail_repair_time(struct parse *p, const char *v) {
    if (need(p, v, "Missing numeric argument for tail_repair_time") ||
        int_read(p, "-o tail_repair_time", v, &p->s->tail_repair_time))
        return 1;
    if (p->s->tail_repair_time < 10) {
        fprintf(p->err, "Cannot set tail_repair_time to less than 10 seconds\n");
        return 1;
    }
    return 0;
}

static int sub_hash_algorithm(struct parse *p, const char *v) {
    if (need(p, v, "Missing hash_algorithm argument"))
        return 1;
    if (strcmp(v, "jenkins") == 0) {
        p->s->hash_algorithm = SETTINGS_HASH_JENKINS;
    } else if (strcmp(v, "murmur3") == 0) {
        p->s->hash_algorithm = SETTINGS_HASH_MURMUR3;
    } else if (strcmp(v, "xxh3") == 0) {
        p->s->hash_algorithm = SETTINGS_HASH_XXH3;
    } else {
        fprintf(p->err, "Unknown hash_algorithm option (jenkins, murmur3, xxh3)\n");
        return 1;
    }
    return 0;
}

static int sub_lru_crawler_sleep(struct parse *p, const char *v) {
    if (need(p, v, "Missing lru_crawler_sleep value") ||
        int_read(p, "-o lru_crawler_sleep", v, &p->s->lru_crawler_sleep))
        return 1;
    if (p->s->lru_crawler_sleep > 1000000 || p->s->lru_crawler_sleep < 0) {
        fprintf(p->err, "LRU crawler sleep must be between 0 and 1 second\n");
        return 1;
    }
    return 0;
}

static int sub_lru_crawler_tocrawl(struct parse *p, const char *v) {
    unsigned n;
    if (need(p, v, "Missing lru_crawler_tocrawl value"))
        return 1;
    if (!strict_u32(v, &n)) {
        fprintf(p->err, "lru_crawler_tocrawl takes a numeric 32bit value\n");
        return 1;
    }
    p->s->lru_crawler_tocrawl = n;
    return 0;
}

static int sub_lru_maintainer(struct parse *p, const char *v) {
    (void)v;
    p->s->lru_maintainer_thread = true;
    p->s->lru_segmented = true;
    return 0;
}

static int sub_no_lru_maintainer(struct parse *p, const char *v) {
    (void)v;
    p->s->lru_maintainer_thread = false;
    p->s->lru_segmented = false;
    return 0;
}

/* hot_lru_pct and warm_lru_pct: memcached's message says "> 1" but 1 passes. */
static int lru_pct(struct parse *p, const char *v, const char *name, int *out) {
    char msg[64];
    snprintf(msg, sizeof(msg), "Missing %s argument", name);
    if (need(p, v, msg) || int_read(p, name, v, out))
        return 1;
    if (*out < 1 || *out >= 80) {
        fprintf(p->err, "%s must be > 1 and < 80\n", name);
        return 1;
    }
    return 0;
}

static int sub_hot_lru_pct(struct parse *p, const char *v) {
    return lru_pct(p, v, "hot_lru_pct", &p->s->hot_lru_pct);
}

static int sub_warm_lru_pct(struct parse *p, const char *v) {
    return lru_pct(p, v, "warm_lru_pct", &p->s->warm_lru_pct);
}

static int max_factor(struct parse *p, const char *v, const char *name, double *out) {
    char msg[64];
    snprintf(msg, sizeof(msg), "Missing %s argument", name);
    if (need(p, v, msg) || double_read(p, name, v, out))
        return 1;
    if (*out <= 0) {
        fprintf(p->err, "%s must be > 0\n", name);
        return 1;
    }
    return 0;
}

static int sub_hot_max_factor(struct parse *p, const char *v) {
    return max_factor(p, v, "hot_max_factor", &p->s->hot_max_factor);
}

static int sub_warm_max_factor(struct parse *p, const char *v) {
    return max_factor(p, v, "warm_max_factor", &p->s->warm_max_factor);
}

static int sub_temporary_ttl(struct parse *p, const char *v) {
    if (need(p, v, "Missing temporary_ttl argument") ||
        int_read(p, "-o temporary_ttl", v, &p->s->temporary_ttl))
        return 1;
    p->s->temp_lru = true;
    return 0;
}

static int sub_idle_timeout(struct parse *p, const char *v) {
    return need(p, v, "Missing numeric argument for idle_timeout") ||
           int_read(p, "-o idle_timeout", v, &p->s->idle_timeout);
}

/* Log buffer sizes are kilobytes; memcached stores bytes. */
static int logbuf(struct parse *p, const char *v, const char *name, unsigned *out) {
    char msg[64];
    unsigned n;
    snprintf(msg, sizeof(msg), "Missing %s argument", name);
    if (need(p, v, msg))
        return 1;
    if (!strict_u32(v, &n) || n > UINT32_MAX / KB) {
        fprintf(p->err, "could not parse argument to %s\n", name);
        return 1;
    }
    *out = n * KB;
    return 0;
}

static int sub_watcher_logbuf_size(struct parse *p, const char *v) {
    return logbuf(p, v, "watcher_logbuf_size", &p->s->watcher_logbuf_size);
}

/* (In memcached 1.6.18 this one falls through into slab_sizes; not here.) */
static int sub_worker_logbuf_size(struct parse *p, const char *v) {
    return logbuf(p, v, "worker_logbuf_size", &p->s->worker_logbuf_size);
}

/* Kept as text until -n and slab_chunk_max are final; see finish(). */
static int sub_slab_sizes(struct parse *p, const char *v) {
    if (need(p, v, "Missing slab_sizes argument"))
        return 1;
    char *copy = strdup(v);
    if (copy == NULL) {
        fprintf(p->err, "Failed to allocate memory\n");
        return 1;
    }
    free(p->slab_sizes);
    p->slab_sizes = copy;
    return 0;
}

/*
 * slab_chunk_max is in bytes: memcached 1.6.18 reads bytes although its
 * -h says kilobytes (later releases read kilobytes).  memcached goes on
 * after printing either complaint below, and divides by zero on 0; we stop.
 */
static int sub_slab_chunk_max(struct parse *p, const char *v) {
    unsigned n;
    if (need(p, v, "Missing slab_chunk_max argument"))
        return 1;
    if (!strict_u32(v, &n) || n == 0 || n > INT_MAX) {
        fprintf(p->err, "could not parse argument to slab_chunk_max\n");
        return 1;
    }
    p->s->slab_chunk_size_max = (int)n;
    p->chunk_changed = true;
    return 0;
}

static int sub_nothing(struct parse *p, const char *v) {
    (void)p;
    (void)v;
    return 0;
}

/* memcached 1.4's defaults: one flat LRU, no background threads, jenkins. */
static int sub_no_modern(struct parse *p, const char *v) {
    (void)v;
    struct settings *s = p->s;
    if (!p->chunk_changed)
        s->slab_chunk_size_max = s->slab_page_size;
    s->slab_reassign = false;
    s->slab_automove = 0;
    s->maxconns_fast = false;
    s->lru_segmented = false;
    s->lru_crawler = false;
    s->lru_maintainer_thread = false;
    s->hash_algorithm = SETTINGS_HASH_JENKINS;
    return 0;
}

static int sub_no_chunked_items(struct parse *p, const char *v) {
    (void)v;
    p->s->slab_chunk_size_max = p->s->slab_page_size;
    return 0;
}

static int sub_resp_obj_mem_limit(struct parse *p, const char *v) {
    (void)v;
    fprintf(p->err, "DEPRECATED: resp_obj_mem_limit no longer used. See read_buf_mem_limit,\n");
    return 0;
}

static int sub_read_buf_mem_limit(struct parse *p, const char *v) {
    unsigned n;
    if (need(p, v, "Missing read_buf_mem_limit argument"))
        return 1;
    if (!strict_u32(v, &n) || n > UINT32_MAX / MB) {
        fprintf(p->err, "could not parse argument to read_buf_mem_limit\n");
        return 1;
    }
    p->s->read_buf_mem_limit = n * MB;
    return 0;
}

static int sub_sock_cookie_id(struct parse *p, const char *v) {
    unsigned n;
    if (need(p, v, "Missing sock_cookie_id argument"))
        return 1;
    if (!strict_u32(v, &n)) {
        fprintf(p->err, "could not parse argument to sock_cookie_id\n");
        return 1;
    }
    p->s->sock_cookie_id = n;
    return 0;
}

static int sub_storage(struct parse *p, const char *v) {
    if (need(p, v, "Missing storage argument"))
        return 1;
    if (strcmp(v, "slab") != 0 && strcmp(v, "seg") != 0) {
        fprintf(p->err, "cellard: -o storage is slab or seg, not \"%s\"\n", v);
        return 1;
    }
    p->s->storage_seg = strcmp(v, "seg") == 0;
    return 0;
}

static int sub_io(struct parse *p, const char *v) {
    static const char *names[] = {"auto", "uring", "epoll"};
    for (size_t i = 0; v != NULL && i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(v, names[i]) == 0) {
            p->s->io = names[i];
            return 0;
        }
    }
    fprintf(p->err, "cellard: -o io is auto, uring or epoll, not \"%s\"\n", v ? v : "");
    return 1;
}

static int sub_io_bufs(struct parse *p, const char *v) {
    unsigned n;
    if (need(p, v, "Missing io_bufs argument"))
        return 1;
    if (!strict_u32(v, &n) || n == 0 || n > 32768 || (n & (n - 1)) != 0) {
        fprintf(p->err, "cellard: -o io_bufs is a power of 2 up to 32768, not \"%s\"\n", v);
        return 1;
    }
    p->s->io_bufs = n;
    return 0;
}

/*
 * --metrics=HOST:PORT and -o metrics=HOST:PORT (cellar): where to serve
 * the Prometheus /metrics page.  The form is checked here; main() binds it
 * and refuses to start when it cannot.
 */
static int opt_metrics(struct parse *p, const char *v) {
    char buf[256], *host, *port;
    if (v == NULL || strlen(v) >= sizeof(buf) ||
        !httpd_split_hostport(strcpy(buf, v), &host, &port)) {
        fprintf(p->err, "cellard: --metrics wants HOST:PORT, [IPv6]:PORT or :PORT "
                        "(port 1-65535), not \"%s\"\n", v ? v : "");
        return 1;
    }
    return str_set(p, &p->s->metrics, v);
}

static int sub_evict_policy(struct parse *p, const char *v) {
    if (need(p, v, "Missing evict_policy argument"))
        return 1;
    if (v[0] == '\0') {
        fprintf(p->err, "cellard: -o evict_policy needs a policy name\n");
        return 1;
    }
    return str_set(p, &p->s->evict_policy, v);
}

/*
 * Debian's memcached is built with extstore, so configs written for it may
 * carry ext_* suboptions.  We accept them (with the not-implemented
 * warning) and keep nothing: the cache simply stays in memory.
 */
static int sub_ext_value(struct parse *p, const char *v) {
    (void)p;
    (void)v;
    return 0;
}

static int sub_ext_path(struct parse *p, const char *v) {
    return need(p, v, "missing argument to ext_path, ie: ext_path=/d/file:5G");
}

/* ------------------------------------------------------------------ */
/* The tables.                                                         */

const struct opt settings_opts[] = {
    {'p', "port", required_argument, "<num>",
     "TCP port to listen on (default: %s)", F_INT, FIELD(port), opt_port, 0},
    {'U', "udp-port", required_argument, "<num>",
     "UDP port to listen on (default: %s, off)", F_INT, FIELD(udpport), opt_udp_port, 0},
    {'s', "unix-socket", required_argument, "<file>",
     "UNIX socket to listen on (disables network support)", F_NONE, 0, opt_unix_socket, 0},
    {'a', "unix-mask", required_argument, "<mask>",
     "access mask for UNIX socket, in octal (default: %s)", F_OCT, FIELD(access),
     opt_unix_mask, 0},
    {'A', "enable-shutdown", no_argument, NULL,
     "enable ascii \"shutdown\" command", F_NONE, FIELD(shutdown_command), NULL, OPT_TRUE},
    {'l', "listen", required_argument, "<addr>",
     "interface to listen on (default: %s)\n"
     "repeat -l or separate addresses by commas;\n"
     "each may be <addr>:<port>", F_STR, FIELD(inter), opt_listen, 0},
    {'d', "daemon", no_argument, NULL, "run as a daemon", F_NONE, FIELD(daemonize), NULL, OPT_TRUE},
    {'r', "enable-coredumps", no_argument, NULL,
     "maximize core file limit", F_NONE, FIELD(maxcore), NULL, OPT_TRUE},
    {'u', "user", required_argument, "<user>",
     "assume identity of <username> (only when run as root)", F_NONE, 0, opt_user, 0},
    {'m', "memory-limit", required_argument, "<num>",
     "item memory in megabytes (default: %s)", F_SIZE_MB, FIELD(maxbytes),
     opt_memory_limit, 0},
    {'M', "disable-evictions", no_argument, NULL,
     "return error on memory exhausted instead of evicting",
     F_NONE, FIELD(evict_to_free), NULL, OPT_FALSE},
    {'c', "conn-limit", required_argument, "<num>",
     "max simultaneous connections (default: %s)", F_INT, FIELD(maxconns),
     opt_conn_limit, 0},
    {'k', "lock-memory", no_argument, NULL,
     "lock down all paged memory", F_NONE, FIELD(lock_memory), NULL, OPT_TRUE},
    {'v', "verbose", no_argument, NULL,
     "verbose (print errors/warnings while in event loop)", F_NONE, 0, opt_verbose,
     OPT_LONGOPTARG},
    {0, "-vv", 0, NULL, "very verbose (also print client commands/responses)", F_NONE, 0,
     NULL, 0},
    {0, "-vvv", 0, NULL, "extremely verbose (internal state transitions)", F_NONE, 0,
     NULL, 0},
    {OPT_HELP, "help", no_argument, NULL, "print this help and exit", F_NONE, 0, NULL, 0},
    {OPT_LICENSE, "license", no_argument, NULL, "print cellard's license and exit",
     F_NONE, 0, NULL, 0},
    {OPT_VERSION, "version", no_argument, NULL, "print version and exit", F_NONE, 0, NULL, 0},
    {'P', "pidfile", required_argument, "<file>",
     "save PID in <file>, only used with -d option", F_NONE, 0, opt_pidfile, 0},
    {'f', "slab-growth-factor", required_argument, "<num>",
     "chunk size growth factor (default: %s)", F_F2, FIELD(factor), opt_factor, 0},
    {'n', "slab-min-size", required_argument, "<bytes>",
     "min space used for key+value+flags (default: %s)", F_INT, FIELD(chunk_size),
     opt_chunk_size, 0},
    {'L', "enable-largepages", no_argument, NULL,
     "try to use large memory pages (if available)",
     F_NONE, FIELD(large_pages), NULL, OPT_TODO | OPT_TRUE},
    {'D', NULL, required_argument, "<char>",
     "Use <char> as the delimiter between key prefixes and IDs.\n"
     "This is used for per-prefix stats reporting. The default is\n"
     "\"%s\" (colon). If this option is specified, stats collection\n"
     "is turned on automatically; if not, then it may be turned on\n"
     "by sending the \"stats detail on\" command to the server.",
     F_CHAR, FIELD(prefix_delimiter), opt_delimiter, 0},
    {'t', "threads", required_argument, "<num>",
     "number of threads to use (default: %s)", F_INT, FIELD(num_threads), opt_threads, 0},
    {'R', "max-reqs-per-event", required_argument, "<num>",
     "maximum number of requests per event, limits the\n"
     "requests processed per connection to prevent\n"
     "starvation (default: %s)", F_INT, FIELD(reqs_per_event), opt_reqs_per_event, 0},
    {'C', "disable-cas", no_argument, NULL, "disable use of CAS",
     F_NONE, FIELD(use_cas), NULL, OPT_FALSE},
    {'b', "listen-backlog", required_argument, "<num>",
     "set the backlog queue limit (default: %s)", F_INT, FIELD(backlog), opt_backlog, 0},
    {'B', "protocol", required_argument, "<name>",
     "protocol - one of ascii, binary, or auto (default: %s)", F_PROTO,
     FIELD(binding_protocol), opt_protocol, 0},
    {'I', "max-item-size", required_argument, "<num>",
     "adjusts max item size\n"
     "(default: %s, min: 1k, max: 1024m)", F_ISIZE, FIELD(item_size_max), opt_item_size, 0},
    {'S', "enable-sasl", no_argument, NULL,
     "turn on Sasl authentication (not supported: refused)", F_NONE, 0, opt_sasl, 0},
    {'F', "disable-flush-all", no_argument, NULL,
     "disable flush_all command", F_NONE, FIELD(flush_enabled), NULL, OPT_FALSE},
    {'X', "disable-dumping", no_argument, NULL,
     "disable stats cachedump and lru_crawler metadump",
     F_NONE, FIELD(dump_enabled), NULL, OPT_FALSE},
    {'W', "disable-watch", no_argument, NULL,
     "disable watch commands (live logging)", F_NONE, FIELD(watch_enabled), NULL, OPT_FALSE},
    {'Y', "auth-file", required_argument, "<file>",
     "(EXPERIMENTAL) enable ASCII protocol authentication. format:\n"
     "user:pass\\nuser2:pass2\\n\n"
     "(not implemented yet: refused)", F_NONE, 0, opt_auth_file, 0},
    {'e', "memory-file", required_argument, "<file>",
     "(EXPERIMENTAL) mmap a file for item memory.\n"
     "use only in ram disks or persistent memory mounts!\n"
     "enables restartable cache (stop with SIGUSR1)", F_NONE, 0, opt_memory_file, OPT_TODO},
    {'Z', "enable-ssl", no_argument, NULL, "enable TLS/SSL", F_NONE, 0, opt_ssl, OPT_HIDDEN},
    {'o', "extended", required_argument, NULL,
     "comma separated list of extended options\n"
     "most options have a 'no_' prefix to disable", F_NONE, 0, opt_extended, 0},
    {'N', "napi-ids", required_argument, "<num>",
     "number of napi ids. see memcached's doc/napi_ids.txt", F_NONE, 0, opt_napi_ids,
     OPT_TODO},
    {OPT_METRICS, "metrics", required_argument, "<host:port>",
     "(cellar) serve stats as Prometheus text at\n"
     "http://<host:port>/metrics (\":port\" every address,\n"
     "\"[v6]:port\"); off by default. Also -o metrics=", F_NONE, 0, opt_metrics, 0},
};

#define NOPTS (sizeof(settings_opts) / sizeof(settings_opts[0]))
const size_t settings_nopts = NOPTS;
_Static_assert(NOPTS <= MAX_OPTS, "raise MAX_OPTS");

const struct subopt settings_subs[] = {
    {"maxconns_fast", "immediately close new connections after limit (default: %s)",
     F_ENABLED, FIELD(maxconns_fast), NULL, OPT_TRUE},
    {"no_maxconns_fast", NULL, F_NONE, FIELD(maxconns_fast), NULL, OPT_FALSE},
    {"hashpower", "an integer multiplier for how large the hash\n"
     "table should be. normally grows at runtime. (default starts at: %s)\n"
     "set based on \"STAT hash_power_level\"", F_INT, FIELD(hashpower_init), sub_hashpower, 0},
    {"tail_repair_time", "time in seconds for how long to wait before\n"
     "forcefully killing LRU tail item.\n"
     "disabled by default; very dangerous option.", F_NONE, 0, sub_tail_repair_time, OPT_TODO},
    {"hash_algorithm", "the hash table algorithm\n"
     "default is %s hash. options: jenkins, murmur3, xxh3", F_HASH, FIELD(hash_algorithm),
     sub_hash_algorithm, OPT_TODO},
    {"lru_crawler", NULL, F_NONE, FIELD(lru_crawler), NULL, OPT_TRUE},
    {"no_lru_crawler", "disable LRU Crawler background thread.",
     F_NONE, FIELD(lru_crawler), NULL, OPT_FALSE},
    {"lru_crawler_sleep", "microseconds to sleep between items\n"
     "default is %s.", F_INT, FIELD(lru_crawler_sleep), sub_lru_crawler_sleep, OPT_TODO},
    {"lru_crawler_tocrawl", "max items to crawl per slab per run\n"
     "default is %s (unlimited)", F_UINT, FIELD(lru_crawler_tocrawl), sub_lru_crawler_tocrawl,
     OPT_TODO},
    {"read_buf_mem_limit", "limit in megabytes for connection read/response buffers.\n"
     "do not adjust unless you have high (20k+) conn. limits.\n"
     "0 means unlimited (default: 0)", F_NONE, 0, sub_read_buf_mem_limit, OPT_TODO},
    {"lru_maintainer", NULL, F_NONE, 0, sub_lru_maintainer, 0},
    {"no_lru_maintainer", "disable new LRU system + background thread.", F_NONE, 0,
     sub_no_lru_maintainer, 0},
    {"hot_lru_pct", "pct of slab memory to reserve for hot lru.\n"
     "(requires lru_maintainer, default pct: %s)", F_INT, FIELD(hot_lru_pct),
     sub_hot_lru_pct, 0},
    {"warm_lru_pct", "pct of slab memory to reserve for warm lru.\n"
     "(requires lru_maintainer, default pct: %s)", F_INT, FIELD(warm_lru_pct),
     sub_warm_lru_pct, 0},
    {"hot_max_factor", "items idle > cold lru age * drop from hot lru. (default: %s)",
     F_F2, FIELD(hot_max_factor), sub_hot_max_factor, 0},
    {"warm_max_factor", "items idle > cold lru age * this drop from warm. (default: %s)",
     F_F2, FIELD(warm_max_factor), sub_warm_max_factor, 0},
    {"temporary_ttl", "TTL's below get separate LRU, can't be evicted.\n"
     "(requires lru_maintainer, default: %s)", F_INT, FIELD(temporary_ttl),
     sub_temporary_ttl, OPT_TODO},
    {"idle_timeout", "timeout for idle connections. (default: %s, no timeout)", F_INT,
     FIELD(idle_timeout), sub_idle_timeout, 0},
    {"slab_chunk_max", "(EXPERIMENTAL) largest slab chunk, in bytes (as 1.6.18\n"
     "reads it; its -h says kilobytes). use extreme care. (default: %s)", F_INT,
     FIELD(slab_chunk_size_max), sub_slab_chunk_max, 0},
    {"watcher_logbuf_size", "size in kilobytes of per-watcher write buffer. (default: %s)",
     F_UINT_KB, FIELD(watcher_logbuf_size), sub_watcher_logbuf_size, 0},
    {"worker_logbuf_size", "size in kilobytes of per-worker-thread buffer\n"
     "read by background thread, then written to watchers. (default: %s)", F_UINT_KB,
     FIELD(worker_logbuf_size), sub_worker_logbuf_size, 0},
    {"track_sizes", "enable dynamic reports for 'stats sizes' command.",
     F_NONE, FIELD(track_sizes), NULL, OPT_TRUE},
    {"no_hashexpand", "disables hash table expansion (dangerous)",
     F_NONE, FIELD(hash_expand), NULL, OPT_FALSE},
    {"modern", "enables options which will be default in future.\n"
     "currently: nothing", F_NONE, 0, sub_nothing, 0},
    {"no_modern", "uses defaults of previous major version (1.4.x)", F_NONE, 0,
     sub_no_modern, 0},
    {"sock_cookie_id", "attributes an ID to a socket for ip filtering/firewalls", F_NONE, 0,
     sub_sock_cookie_id, OPT_TODO},
    {"slab_reassign", "allow moving slab pages between classes (default: %s)",
     F_ENABLED, FIELD(slab_reassign), NULL, OPT_TRUE},
    {"no_slab_reassign", NULL, F_NONE, FIELD(slab_reassign), NULL, OPT_FALSE},
    {"slab_automove", "0 off, 1 move pages between classes by age, 2 move a page\n"
     "on every eviction (default: %s)", F_INT, FIELD(slab_automove), sub_slab_automove,
     OPT_TODO},
    {"no_slab_automove", NULL, F_NONE, 0, sub_no_slab_automove, 0},
    {"slab_automove_ratio", "age ratio between classes that triggers a move (default: %s)",
     F_F2, FIELD(slab_automove_ratio), sub_slab_automove_ratio, OPT_TODO},
    {"slab_automove_window", "samples the automover looks back over (default: %s)", F_UINT,
     FIELD(slab_automove_window), sub_slab_automove_window, OPT_TODO},
    {"slab_sizes", "explicit slab class sizes in bytes, as a-b-c", F_NONE, 0,
     sub_slab_sizes, OPT_TODO},
    {"no_chunked_items", "largest chunk is a whole page instead of half of one", F_NONE, 0,
     sub_no_chunked_items, 0},
    {"inline_ascii_resp", NULL, F_NONE, 0, sub_nothing, 0},        /* no-ops in 1.6 */
    {"no_inline_ascii_resp", NULL, F_NONE, 0, sub_nothing, 0},
    {"drop_privileges", "restrict system calls (seccomp) after startup",
     F_NONE, FIELD(drop_privileges), NULL, OPT_TODO | OPT_TRUE},
    {"no_drop_privileges", NULL, F_NONE, FIELD(drop_privileges), NULL, OPT_FALSE},
    {"resp_obj_mem_limit", NULL, F_NONE, 0, sub_resp_obj_mem_limit, 0},
    {"storage", "(cellar) slab (memcached's layout) or seg (items packed in\n"
     "segments, evicted a segment at a time: evict=fifo, merge or s3fifo)",
     F_NONE, 0, sub_storage, 0},
    {"io", "(cellar) network core: uring (io_uring), epoll, or auto (io_uring\n"
     "where the kernel allows it, else epoll)", F_NONE, 0, sub_io, 0},
    {"io_bufs", "(cellar) receive buffers of 16 KB each io_uring worker lends\n"
     "the kernel (a power of 2; default 128)", F_NONE, 0, sub_io_bufs, 0},
    {"evict_policy", "(cellar) eviction policy of every slab class (default: %s)",
     F_STR, FIELD(evict_policy), sub_evict_policy, 0},
    {"evict", "(cellar) the same as evict_policy", F_STR, FIELD(evict_policy),
     sub_evict_policy, 0},
    {"metrics", "(cellar) the same as --metrics=<host:port>", F_NONE, 0, opt_metrics, 0},
    {"delete_hold", "(cellar) \"delete <key> <seconds>\" deletes and refuses add\n"
     "of the key for <seconds> (cold cluster warm-up)",
     F_NONE, FIELD(delete_hold), NULL, OPT_TRUE},
    {"ext_path", NULL, F_NONE, 0, sub_ext_path, OPT_TODO | OPT_HIDDEN},
    {"ext_page_size", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_wbuf_size", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_threads", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_io_depth", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_item_size", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_item_age", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_low_ttl", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_recache_rate", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_compact_under", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_drop_under", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_max_frag", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_max_sleep", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"slab_automove_freeratio", NULL, F_NONE, 0, sub_ext_value, OPT_TODO | OPT_EXT},
    {"ext_drop_unread", NULL, F_NONE, 0, sub_ext_value, OPT_TODO},
};

#define NSUBS (sizeof(settings_subs) / sizeof(settings_subs[0]))
const size_t settings_nsubs = NSUBS;
_Static_assert(NSUBS <= MAX_SUBS, "raise MAX_SUBS");

/* ------------------------------------------------------------------ */
/* Parsing.                                                            */

void settings_init(struct settings *s) {
    memset(s, 0, sizeof(*s));
    s->port = 11211;
    s->udpport = 0;
    s->inter = default_inter;
    s->access = 0700;
    s->backlog = 1024;
    s->binding_protocol = SETTINGS_PROTO_AUTO;
    s->maxconns = 1024;
    s->maxconns_fast = true;
    s->num_threads = 4;
    s->num_threads_per_udp = 4;
    s->reqs_per_event = 20;
    s->maxbytes = (size_t)64 * MB;
    s->evict_to_free = true;
    s->factor = 1.25;
    s->chunk_size = 48;
    s->item_size_max = 1 * MB;
    s->slab_page_size = SETTINGS_SLAB_PAGE_SIZE;
    s->slab_chunk_size_max = SETTINGS_SLAB_PAGE_SIZE / 2;
    s->use_cas = true;
    s->evict_policy = default_policy;
    s->io = "auto";
    s->hash_expand = true;
    s->hash_algorithm = SETTINGS_HASH_MURMUR3;
    s->slab_reassign = true;
    s->slab_automove = 1;
    s->slab_automove_ratio = 0.8;
    s->slab_automove_window = 30;
    s->lru_crawler = true;
    s->lru_crawler_sleep = 100;
    s->lru_maintainer_thread = true;
    s->lru_segmented = true;
    s->hot_lru_pct = 20;
    s->warm_lru_pct = 40;
    s->hot_max_factor = 0.2;
    s->warm_max_factor = 2.0;
    s->temporary_ttl = 61;
    s->watcher_logbuf_size = 256 * KB;
    s->worker_logbuf_size = 64 * KB;
    s->prefix_delimiter = ':';
    s->dump_enabled = true;
    s->watch_enabled = true;
    s->flush_enabled = true;
}

void settings_deinit(struct settings *s) {
    const char **owned[] = {&s->inter, &s->socketpath, &s->memory_file, &s->evict_policy,
                            &s->auth_file, &s->pid_file, &s->username, &s->metrics};
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
        str_free(*owned[i]);
        *owned[i] = NULL;
    }
}

/* Runs one option's row: its set(), or the bool it stores. */
static int row_apply(struct parse *p, int (*set)(struct parse *, const char *), size_t off,
                     unsigned flags, const char *arg) {
    if (set != NULL)
        return set(p, arg);
    *(bool *)((char *)p->s + off) = (flags & OPT_TRUE) != 0;
    return 0;
}

/* Notes an accepted option we do not act on yet, once however often given. */
static void todo_note(struct parse *p, int row) {
    for (int i = 0; i < p->ntodo; i++)
        if (p->todo[i] == row)
            return;
    p->todo[p->ntodo++] = row;
}

/*
 * One warning line per such option, printed only once the command line
 * has been accepted, so a refused one shows memcached's message alone.
 */
static void todo_print(const struct parse *p) {
    for (int i = 0; i < p->ntodo; i++) {
        int row = p->todo[i];
        if (row < MAX_OPTS)
            fprintf(p->err, "cellard: option -%c accepted but not implemented yet\n",
                    settings_opts[row].key);
        else
            fprintf(p->err, "cellard: option -o %s accepted but not implemented yet\n",
                    settings_subs[row - MAX_OPTS].name);
    }
}

/*
 * -o takes a comma-separated list of name or name=value, read the way
 * getsubopt() reads it: the value runs to the next comma and may itself
 * hold '='; an empty list does nothing; an unknown name is reported with
 * its whole token, value included.
 */
static int opt_extended(struct parse *p, const char *a) {
    char *list = strdup(a);
    if (list == NULL) {
        fprintf(p->err, "Failed to allocate memory\n");
        return 1;
    }
    int rc = 0;
    for (char *tok = list; rc == 0 && *tok != '\0';) {
        char *comma = strchr(tok, ',');
        char *next = comma ? comma + 1 : tok + strlen(tok);
        if (comma)
            *comma = '\0';
        char *eq = strchr(tok, '=');
        size_t j;
        for (j = 0; j < NSUBS; j++) {
            size_t n = strlen(settings_subs[j].name);
            if (strncmp(tok, settings_subs[j].name, n) == 0 && (tok[n] == '\0' || tok[n] == '='))
                break;
        }
        if (j == NSUBS) {
            fprintf(p->err, "Illegal suboption \"%s\"\n", tok);
            rc = 1;
            break;
        }
        const struct subopt *so = &settings_subs[j];
        const char *v = eq ? eq + 1 : NULL;
        if ((so->flags & OPT_EXT) && v == NULL) {
            fprintf(p->err, "Missing %s argument\n", so->name);
            rc = 1;
            break;
        }
        rc = row_apply(p, so->set, so->off, so->flags, v);
        if (rc == 0 && (so->flags & OPT_TODO))
            todo_note(p, MAX_OPTS + (int)j);
        tok = next;
    }
    free(list);
    return rc;
}

/*
 * glibc's getopt_long() words for a bad option, which memcached leaves it
 * to print, followed by memcached's own line.  We ask getopt for silence
 * (opterr = 0, and a leading ':' so a missing argument returns ':') and
 * rebuild the words from what it leaves in optopt and argv[optind - 1].
 */
static int getopt_complaint(struct parse *p, int c, char **argv, const struct option *lo,
                            size_t nlo) {
    const char *prog = argv[0] ? argv[0] : "cellard";
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    bool is_long = arg != NULL && strncmp(arg, "--", 2) == 0;
    const struct opt *row = NULL;
    for (size_t i = 0; i < NOPTS; i++)
        if (settings_opts[i].key != 0 && settings_opts[i].key == optopt)
            row = &settings_opts[i];

    if (c == ':' && is_long && row && row->name) {
        fprintf(p->err, "%s: option '--%s' requires an argument\n", prog, row->name);
    } else if (c == ':') {
        fprintf(p->err, "%s: option requires an argument -- '%c'\n", prog, optopt);
    } else if (optopt == 0) {
        /* An unknown or ambiguous long option: count the names it abbreviates. */
        const char *name = arg + 2;
        size_t n = strcspn(name, "=");
        size_t hits = 0;
        for (size_t i = 0; i < nlo; i++)
            if (strncmp(lo[i].name, name, n) == 0)
                hits++;
        if (hits > 1) {
            fprintf(p->err, "%s: option '%s' is ambiguous; possibilities:", prog, arg);
            for (size_t i = 0; i < nlo; i++)
                if (strncmp(lo[i].name, name, n) == 0)
                    fprintf(p->err, " '--%s'", lo[i].name);
            fputc('\n', p->err);
        } else {
            fprintf(p->err, "%s: unrecognized option '%s'\n", prog, arg);
        }
    } else if (row != NULL && is_long && row->name) {
        fprintf(p->err, "%s: option '--%s' doesn't allow an argument\n", prog, row->name);
    } else {
        fprintf(p->err, "%s: invalid option -- '%c'\n", prog, optopt);
    }
    fprintf(p->err, "Illegal argument \"?\"\n");
    return 1;
}

/*
 * The class sizes of -o slab_sizes=a-b-c: each within [-n, slab_chunk_max],
 * each more than CHUNK_ALIGN_BYTES above the one before, fewer than 63.
 */
static int slab_sizes_parse(struct parse *p) {
    struct settings *s = p->s;
    char *save = NULL;
    unsigned last = 0;
    s->nslab_sizes = 0;
    for (char *tok = strtok_r(p->slab_sizes, "-", &save); tok != NULL;
         tok = strtok_r(NULL, "-", &save)) {
        unsigned size = 0;
        if (!strict_u32(tok, &size) || size < (unsigned)s->chunk_size ||
            size > (unsigned)s->slab_chunk_size_max) {
            fprintf(p->err, "slab size %u is out of valid range\n", size);
            return SETTINGS_EX_USAGE;
        }
        if (last >= size) {
            fprintf(p->err, "slab size %u cannot be lower than or equal to a previous "
                            "class size\n", size);
            return SETTINGS_EX_USAGE;
        }
        if (size <= last + CHUNK_ALIGN_BYTES) {
            fprintf(p->err, "slab size %u must be at least %d bytes larger than previous "
                            "class\n", size, CHUNK_ALIGN_BYTES);
            return SETTINGS_EX_USAGE;
        }
        s->slab_sizes[s->nslab_sizes++] = size;
        last = size;
        if (s->nslab_sizes >= SETTINGS_MAX_SLAB_SIZES) {
            fprintf(p->err, "too many slab classes specified\n");
            return SETTINGS_EX_USAGE;
        }
    }
    return 0;
}

/*
 * What memcached checks once every option is read, in its order (when
 * several are wrong, the same one is reported), all with exit code 64.
 */
static int finish(struct parse *p) {
    struct settings *s = p->s;
    FILE *err = p->err;

    if (s->num_napi_ids > s->num_threads) {
        fprintf(err, "Number of napi_ids(%d) cannot be greater than number of threads(%d)\n",
                s->num_napi_ids, s->num_threads);
        return SETTINGS_EX_USAGE;
    }
    if (s->item_size_max < 1024) {
        fprintf(err, "Item max size cannot be less than 1024 bytes.\n");
        return SETTINGS_EX_USAGE;
    }
    if ((size_t)s->item_size_max > s->maxbytes / 2) {
        fprintf(err, "Cannot set item size limit higher than 1/2 of memory max.\n");
        return SETTINGS_EX_USAGE;
    }
    if (s->item_size_max > 1024 * MB) {
        fprintf(err, "Cannot set item size limit higher than a gigabyte.\n");
        return SETTINGS_EX_USAGE;
    }
    /* Items over 1 MiB are chained from half-page chunks unless told otherwise. */
    if (s->item_size_max > MB && !p->chunk_changed)
        s->slab_chunk_size_max = s->slab_page_size / 2;
    if (s->slab_chunk_size_max > s->item_size_max) {
        fprintf(err, "slab_chunk_max (bytes: %d) cannot be larger than -I (item_size_max %d)\n",
                s->slab_chunk_size_max, s->item_size_max);
        return SETTINGS_EX_USAGE;
    }
    if (s->item_size_max % s->slab_chunk_size_max != 0) {
        fprintf(err, "-I (item_size_max: %d) must be evenly divisible by slab_chunk_max "
                     "(bytes: %d)\n", s->item_size_max, s->slab_chunk_size_max);
        return SETTINGS_EX_USAGE;
    }
    if (s->slab_page_size % s->slab_chunk_size_max != 0) {
        fprintf(err, "slab_chunk_max (bytes: %d) must divide evenly into %d (slab_page_size)\n",
                s->slab_chunk_size_max, s->slab_page_size);
        return SETTINGS_EX_USAGE;
    }
    if (p->slab_sizes != NULL) {
        int rc = slab_sizes_parse(p);
        if (rc != 0)
            return rc;
    }
    if (s->hot_lru_pct + s->warm_lru_pct > 80) {
        fprintf(err, "hot_lru_pct + warm_lru_pct cannot be more than 80%% combined\n");
        return SETTINGS_EX_USAGE;
    }
    if (s->temp_lru && !s->lru_maintainer_thread) {
        fprintf(err, "temporary_ttl requires lru_maintainer to be enabled\n");
        return SETTINGS_EX_USAGE;
    }
    /* Without segmented LRU (no_lru_maintainer, no_modern) memcached's LRU is
       flat; an explicit evict_policy wins. */
    if (s->evict_policy == default_policy && !s->lru_segmented)
        s->evict_policy = flat_policy;
    /* Segments are evicted whole, oldest first, unless a policy is named. */
    if (s->storage_seg && (s->evict_policy == default_policy || s->evict_policy == flat_policy))
        s->evict_policy = seg_policy;
    /* With only -U given, TCP listens on the same port, as in memcached. */
    if (p->udp_specified && !p->tcp_specified)
        s->port = s->udpport;
    /* memcached checks only the TCP port (and only above 65535). */
    if (s->port < -1 || s->port > 65535) {
        fprintf(err, "ERROR: Invalid port number %d.\n", s->port);
        return SETTINGS_EX_USAGE;
    }
    if (s->udpport < -1 || s->udpport > 65535) {
        fprintf(err, "ERROR: Invalid port number %d.\n", s->udpport);
        return SETTINGS_EX_USAGE;
    }
    /* One UDP thread per listener when several are listed. */
    s->num_threads_per_udp = s->inter && strchr(s->inter, ',') ? 1 : s->num_threads;
    return 0;
}

/*
 * Reads argv into s.  Options take effect in order, as in memcached: -h,
 * -V and -i answer at once (so "-h -x" prints help and "-x -h" refuses),
 * and the first refusal stops the reading.
 */
int settings_parse(struct settings *s, int argc, char **argv, FILE *err) {
    settings_init(s);
    struct parse p = {.s = s, .err = err};

    char shortopts[2 + 2 * NOPTS];
    struct option lo[NOPTS + 1];
    size_t ns = 0, nlo = 0;
    shortopts[ns++] = ':';
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt *o = &settings_opts[i];
        if (o->key == 0)
            continue;
        if (o->key < OPT_LONG_ONLY) {
            shortopts[ns++] = (char)o->key;
            if (o->has_arg == required_argument)
                shortopts[ns++] = ':';
        }
        if (o->name != NULL)
            lo[nlo++] = (struct option){o->name,
                                        (o->flags & OPT_LONGOPTARG) ? optional_argument
                                                                    : o->has_arg,
                                        NULL, o->key};
    }
    shortopts[ns] = '\0';
    lo[nlo] = (struct option){NULL, 0, NULL, 0};

    optind = 0;     /* 0, not 1: glibc then forgets any earlier scan */
    opterr = 0;
    int rc = 0, c;
    while (rc == 0 && (c = getopt_long(argc, argv, shortopts, lo, NULL)) != -1) {
        if (c == '?' || c == ':') {
            rc = getopt_complaint(&p, c, argv, lo, nlo);
            break;
        }
        if (c == OPT_HELP) {
            settings_usage(stdout);
            rc = SETTINGS_EXIT_OK;
            break;
        }
        if (c == OPT_VERSION) {
            printf("cellard %s\n", CELLAR_MC_VERSION);
            rc = SETTINGS_EXIT_OK;
            break;
        }
        if (c == OPT_LICENSE) {
            settings_license(stdout);
            rc = SETTINGS_EXIT_OK;
            break;
        }
        for (size_t i = 0; i < NOPTS; i++) {
            const struct opt *o = &settings_opts[i];
            if (o->key != c)
                continue;
            rc = row_apply(&p, o->set, o->off, o->flags, optarg);
            if (rc == 0 && (o->flags & OPT_TODO))
                todo_note(&p, (int)i);
            break;
        }
    }
    if (rc == 0)
        rc = finish(&p);
    if (rc == 0)
        todo_print(&p);
    free(p.slab_sizes);
    return rc;
}

int settings_check_user_ids(const struct settings *s, uid_t uid, uid_t euid, FILE *err) {
    if ((uid == 0 || euid == 0) && (s->username == NULL || s->username[0] == '\0')) {
        fprintf(err, "can't run as root without the -u switch\n");
        return SETTINGS_EX_USAGE;
    }
    return 0;
}

int settings_check_user(const struct settings *s, FILE *err) {
    return settings_check_user_ids(s, getuid(), geteuid(), err);
}
