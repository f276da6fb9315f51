/*
 * settings_ext.c -- memcached 1.6.18's -o: the suboptions' handlers, their
 * table (in the order -h lists them) and the reading of an -o list.
 *
 * Each handler gets the value after '=' (NULL when the token had none)
 * and returns 0, or an exit code after printing memcached's words.  Some
 * only keep what they read for settings_finish.c, which checks it against
 * the other options once all are known (slab_sizes against -n and
 * slab_chunk_max; ext_path's files against the page and buffer sizes, -I
 * and -U).
 */
#include "server/settings_int.h"

#include "core/options.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* memcached's wording when a suboption needs a value and has none. */
static int need(struct parse *p, const char *v, const char *msg) {
    if (v != NULL)
        return 0;
    fprintf(p->err, "%s\n", msg);
    return 1;
}

static int sub_hashpower(struct parse *p, const char *v) {
    if (need(p, v, "Missing numeric argument for hashpower") ||
        settings_int_read(p, "-o hashpower", v, &p->s->hashpower_init))
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
    if (settings_int_read(p, "-o slab_automove", v, &p->s->slab_automove))
        return 1;
    /* 3 is cellard's: the paper's age-balanced rule */
    if (p->s->slab_automove < 0 || p->s->slab_automove > 3) {
        fprintf(p->err, "slab_automove must be between 0 and 3\n");
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
        settings_double_read(p, "-o slab_automove_ratio", v, &p->s->slab_automove_ratio))
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
        settings_int_read(p, "-o slab_automove_window", v, &w))
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
        settings_int_read(p, "-o tail_repair_time", v, &p->s->tail_repair_time))
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
        settings_int_read(p, "-o lru_crawler_sleep", v, &p->s->lru_crawler_sleep))
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
    if (!options_strtou32(v, &n)) {
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
    if (need(p, v, msg) || settings_int_read(p, name, v, out))
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
    if (need(p, v, msg) || settings_double_read(p, name, v, out))
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
        settings_int_read(p, "-o temporary_ttl", v, &p->s->temporary_ttl))
        return 1;
    p->s->temp_lru = true;
    return 0;
}

static int sub_idle_timeout(struct parse *p, const char *v) {
    return need(p, v, "Missing numeric argument for idle_timeout") ||
           settings_int_read(p, "-o idle_timeout", v, &p->s->idle_timeout);
}

/* Log buffer sizes are kilobytes; memcached stores bytes. */
static int logbuf(struct parse *p, const char *v, const char *name, unsigned *out) {
    char msg[64];
    unsigned n;
    snprintf(msg, sizeof(msg), "Missing %s argument", name);
    if (need(p, v, msg))
        return 1;
    if (!options_strtou32(v, &n) || n > UINT32_MAX / KB) {
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

/* Kept as text until -n and slab_chunk_max are final; see settings_finish.c. */
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
    if (!options_strtou32(v, &n) || n == 0 || n > INT_MAX) {
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
    if (!options_strtou32(v, &n) || n > UINT32_MAX / MB) {
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
    if (!options_strtou32(v, &n)) {
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
    if (!options_strtou32(v, &n) || n == 0 || n > 32768 || (n & (n - 1)) != 0) {
        fprintf(p->err, "cellard: -o io_bufs is a power of 2 up to 32768, not \"%s\"\n", v);
        return 1;
    }
    p->s->io_bufs = n;
    return 0;
}


static int sub_evict_policy(struct parse *p, const char *v) {
    if (need(p, v, "Missing evict_policy argument"))
        return 1;
    if (v[0] == '\0') {
        fprintf(p->err, "cellard: -o evict_policy needs a policy name\n");
        return 1;
    }
    return settings_str_set(p, &p->s->evict_policy, v);
}

/* ------------------------------------------------------------------ */
/* The flash tier: memcached's extstore (its storage.c reads these).   */

/*
 * memcached's safe_strtoul() into an unsigned field: "could not parse
 * argument to <name>" for anything but a whole unsigned number.  A value
 * over 32 bits, which memcached wraps, is refused as out of range; so is
 * one whose unit (megabytes: unit MB) would take it past 32 bits.
 */
static int ext_u32(struct parse *p, const char *v, const char *name, unsigned unit,
                   unsigned *out) {
    uint64_t n;
    if (!options_strtou64(v, &n)) {
        fprintf(p->err, "could not parse argument to %s\n", name);
        return 1;
    }
    if (n > UINT32_MAX / unit) {
        char what[64];
        snprintf(what, sizeof(what), "-o %s", name);
        return settings_out_of_range(p, what, v);
    }
    *out = (unsigned)n * unit;
    return 0;
}

/* memcached's safe_strtod(): a whole double, or trailing blanks. */
static int ext_double(struct parse *p, const char *v, const char *name, double *out) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno == ERANGE || end == v || (*end != '\0' && !isspace((unsigned char)*end))) {
        fprintf(p->err, "could not parse argument to %s\n", name);
        return 1;
    }
    *out = d;
    return 0;
}

/* The page size cuts the files into pages as each ext_path is read, so it comes first. */
static int sub_ext_page_size(struct parse *p, const char *v) {
    if (p->s->ext_nfiles > 0) {
        fprintf(p->err, "Must specify ext_page_size before any ext_path arguments\n");
        return 1;
    }
    return need(p, v, "Missing ext_page_size argument") ||
           ext_u32(p, v, "ext_page_size", MB, &p->s->ext_page_size);
}

static int sub_ext_wbuf_size(struct parse *p, const char *v) {
    return ext_u32(p, v, "ext_wbuf_size", MB, &p->s->ext_wbuf_size);
}

static int sub_ext_threads(struct parse *p, const char *v) {
    return ext_u32(p, v, "ext_threads", 1, &p->s->ext_threads);
}

static int sub_ext_io_depth(struct parse *p, const char *v) {
    return ext_u32(p, v, "ext_io_depth", 1, &p->s->ext_io_depth);
}

static int sub_ext_item_size(struct parse *p, const char *v) {
    return ext_u32(p, v, "ext_item_size", 1, &p->s->ext_item_size);
}

static int sub_ext_item_age(struct parse *p, const char *v) {
    return ext_u32(p, v, "ext_item_age", 1, &p->s->ext_item_age);
}

static int sub_ext_low_ttl(struct parse *p, const char *v) {
    return ext_u32(p, v, "ext_low_ttl", 1, &p->s->ext_low_ttl);
}

static int sub_ext_recache_rate(struct parse *p, const char *v) {
    return ext_u32(p, v, "ext_recache_rate", 1, &p->s->ext_recache_rate);
}

static int sub_ext_compact_under(struct parse *p, const char *v) {
    return ext_u32(p, v, "ext_compact_under", 1, &p->s->ext_compact_under);
}

static int sub_ext_drop_under(struct parse *p, const char *v) {
    return ext_u32(p, v, "ext_drop_under", 1, &p->s->ext_drop_under);
}

static int sub_ext_max_sleep(struct parse *p, const char *v) {
    return ext_u32(p, v, "ext_max_sleep", 1, &p->s->ext_max_sleep);
}

static int sub_ext_max_frag(struct parse *p, const char *v) {
    return ext_double(p, v, "ext_max_frag", &p->s->ext_max_frag);
}

static int sub_slab_automove_freeratio(struct parse *p, const char *v) {
    return ext_double(p, v, "slab_automove_freeratio", &p->s->slab_automove_freeratio);
}

/*
 * FILE:SIZE[:BUCKET], cut as memcached cuts it (strtok_r on ':', so empty
 * fields vanish): SIZE is a number and a unit, m, g, t or p (either case);
 * memcached reads any other last character as a unit worth nothing, which
 * makes a file of no pages.  BUCKET may only be "default" in 1.6.18.  The
 * reason comes first, then memcached's "failed to parse" line.  Returns
 * false after printing the reason.
 */
static bool ext_path_cut(struct parse *p, char *arg, char **path, uint64_t *size) {
    char *save = NULL;
    *path = strtok_r(arg, ":", &save);
    if (*path == NULL)
        return false;
    char *sz = strtok_r(NULL, ":", &save);
    if (sz == NULL) {
        fprintf(p->err, "must supply size to ext_path, ie: ext_path=/f/e:64m "
                        "(M|G|T|P supported)\n");
        return false;
    }
    size_t n = strlen(sz);
    uint64_t unit = 0;
    switch (tolower((unsigned char)sz[n - 1])) {
    case 'm': unit = (uint64_t)1 << 20; break;
    case 'g': unit = (uint64_t)1 << 30; break;
    case 't': unit = (uint64_t)1 << 40; break;
    case 'p': unit = (uint64_t)1 << 50; break;
    }
    sz[n - 1] = '\0';
    int base;
    if (settings_int_read(p, "-o ext_path size", sz, &base))
        return false;
    *size = unit * (uint64_t)(int64_t)base;     /* memcached's arithmetic: -1g wraps */
    char *bucket = strtok_r(NULL, ",", &save);
    if (bucket == NULL || strcmp(bucket, "default") == 0)
        return true;
    if (strcmp(bucket, "compact") == 0 || strcmp(bucket, "lowttl") == 0 ||
        strcmp(bucket, "chunked") == 0)
        fprintf(p->err, "ext_path only presently supports the default bucket\n");
    else
        fprintf(p->err, "Unknown extstore bucket: %s\n", bucket);
    return false;
}

/*
 * One file of the flash tier; several make several (memcached's JBOD).
 * Beyond memcached, which starts on them and then fails or divides by
 * zero: more than SETTINGS_EXT_MAX_FILES files, a page size of 0 and a
 * file too small for one page (a size without a unit among them, which
 * memcached runs with, storing nothing there) are refused here.
 */
static int sub_ext_path(struct parse *p, const char *v) {
    struct settings *s = p->s;
    if (need(p, v, "missing argument to ext_path, ie: ext_path=/d/file:5G"))
        return 1;
    char *copy = strdup(v), *path;
    uint64_t size;
    if (copy == NULL) {
        fprintf(p->err, "Failed to allocate memory\n");
        return 1;
    }
    if (!ext_path_cut(p, copy, &path, &size)) {
        fprintf(p->err, "failed to parse ext_path argument\n");
        free(copy);
        return 1;
    }
    int rc = 1;
    if (s->ext_nfiles == SETTINGS_EXT_MAX_FILES) {
        fprintf(p->err, "cellard: at most %d ext_path files\n", SETTINGS_EXT_MAX_FILES);
    } else if (s->ext_page_size == 0) {
        fprintf(p->err, "cellard: ext_page_size must be at least 1 (megabyte)\n");
    } else if (size / s->ext_page_size == 0) {
        fprintf(p->err, "cellard: ext_path=%s holds no page of %u megabytes (give its size "
                        "a unit: m, g, t or p)\n", v, s->ext_page_size / MB);
    } else if ((s->ext_path[s->ext_nfiles] = strdup(path)) == NULL) {
        fprintf(p->err, "Failed to allocate memory\n");
    } else {
        s->ext_size[s->ext_nfiles++] = size;
        rc = 0;
    }
    free(copy);
    return rc;
}

/* -o memory_file=FILE: -e FILE by another name. */
static int sub_memory_file(struct parse *p, const char *v) {
    if (need(p, v != NULL && *v != '\0' ? v : NULL,
             "missing argument to memory_file, ie: memory_file=/dev/shm/cellard"))
        return 1;
    return settings_str_set(p, &p->s->memory_file, v);
}

/* -o ssl_*: memcached's TLS settings, checked as it checks them. */
static int sub_ssl_str(struct parse *p, const char *v, const char *name, const char **field) {
    if (v == NULL) {
        fprintf(p->err, "Missing %s argument\n", name);
        return 1;
    }
    return settings_str_set(p, field, v);
}

static int sub_ssl_chain_cert(struct parse *p, const char *v) {
    return sub_ssl_str(p, v, "ssl_chain_cert", &p->s->ssl_chain_cert);
}

static int sub_ssl_key(struct parse *p, const char *v) {
    return sub_ssl_str(p, v, "ssl_key", &p->s->ssl_key);
}

static int sub_ssl_ciphers(struct parse *p, const char *v) {
    return sub_ssl_str(p, v, "ssl_ciphers", &p->s->ssl_ciphers);
}

static int sub_ssl_ca_cert(struct parse *p, const char *v) {
    return sub_ssl_str(p, v, "ssl_ca_cert", &p->s->ssl_ca_cert);
}

/* A number in [0, max] (max < 0: any), memcached's words when it is not. */
static int sub_ssl_int(struct parse *p, const char *v, const char *name, int max, int *out) {
    if (v == NULL) {
        fprintf(p->err, "Missing %s argument\n", name);
        return 1;
    }
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < INT_MIN || n > INT_MAX) {
        fprintf(p->err, "could not parse argument to %s\n", name);
        return 1;
    }
    if (max >= 0 && (n < 0 || n > max)) {
        fprintf(p->err, "Invalid %s. Use help to see valid options.\n", name);
        return 1;
    }
    *out = (int)n;
    return 0;
}

static int sub_ssl_verify_mode(struct parse *p, const char *v) {
    return sub_ssl_int(p, v, "ssl_verify_mode", 3, &p->s->ssl_verify_mode);
}

static int sub_ssl_keyformat(struct parse *p, const char *v) {
    return sub_ssl_int(p, v, "ssl_keyformat", -1, &p->s->ssl_keyformat);
}

static int sub_ssl_min_version(struct parse *p, const char *v) {
    return sub_ssl_int(p, v, "ssl_min_version", 3, &p->s->ssl_min_version);
}

static int sub_ssl_wbuf_size(struct parse *p, const char *v) {
    uint32_t kb = 0;
    if (v == NULL) {
        fprintf(p->err, "Missing ssl_wbuf_size argument\n");
        return 1;
    }
    if (!options_strtou32(v, &kb) || kb == 0 || kb > 1024 * 1024) {
        fprintf(p->err, "could not parse argument to ssl_wbuf_size\n");
        return 1;
    }
    p->s->ssl_wbuf_size = kb * 1024;
    return 0;
}

/* ------------------------------------------------------------------ */
/* The table.                                                          */

const struct subopt settings_subs[] = {
    {"maxconns_fast", "immediately close new connections after limit (default: %s)",
     F_ENABLED, FIELD(maxconns_fast), NULL, OPT_TRUE},
    {"no_maxconns_fast", NULL, F_NONE, FIELD(maxconns_fast), NULL, OPT_FALSE},
    {"hashpower", "an integer multiplier for how large the hash\n"
     "table should be. normally grows at runtime. (default starts at: %s)\n"
     "set based on \"STAT hash_power_level\"", F_INT, FIELD(hashpower_init), sub_hashpower, 0},
    {"memory_file", NULL, F_NONE, 0, sub_memory_file, 0},
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
     "0 means unlimited (default: 0)", F_NONE, 0, sub_read_buf_mem_limit, 0},
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
     sub_temporary_ttl, 0},
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
     "on every eviction, 3 to an evicting class 20% younger than the others\n"
     "(default: %s)", F_INT, FIELD(slab_automove), sub_slab_automove, 0},
    {"no_slab_automove", NULL, F_NONE, 0, sub_no_slab_automove, 0},
    {"slab_automove_ratio", "age ratio between classes that triggers a move (default: %s)",
     F_F2, FIELD(slab_automove_ratio), sub_slab_automove_ratio, 0},
    {"slab_automove_window", "samples the automover looks back over (default: %s)", F_UINT,
     FIELD(slab_automove_window), sub_slab_automove_window, 0},
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
    {"metrics", "(cellar) the same as --metrics=<host:port>", F_NONE, 0, settings_opt_metrics, 0},
    {"delete_hold", "(cellar) \"delete <key> <seconds>\" deletes and refuses add\n"
     "of the key for <seconds> (cold cluster warm-up)",
     F_NONE, FIELD(delete_hold), NULL, OPT_TRUE},
    {"ssl_chain_cert", "certificate chain file in PEM format", F_NONE, 0, sub_ssl_chain_cert, 0},
    {"ssl_key", "private key, if not part of the ssl_chain_cert", F_NONE, 0, sub_ssl_key, 0},
    {"ssl_keyformat", "private key format (1: PEM, 2: DER) (default: %s)", F_INT,
     FIELD(ssl_keyformat), sub_ssl_keyformat, 0},
    {"ssl_verify_mode", "peer certificate verification mode, default is %s (none):\n"
     "0: none, 1: request, 2: require, 3: once", F_INT, FIELD(ssl_verify_mode),
     sub_ssl_verify_mode, 0},
    {"ssl_ciphers", "cipher list to be used", F_NONE, 0, sub_ssl_ciphers, 0},
    {"ssl_ca_cert", "PEM file of the client CAs accepted", F_NONE, 0, sub_ssl_ca_cert, 0},
    {"ssl_wbuf_size", "kilobytes each TLS write gathers (default: %s)", F_UINT_KB,
     FIELD(ssl_wbuf_size), sub_ssl_wbuf_size, 0},
    {"ssl_session_cache", "resume TLS sessions from a server-side cache", F_NONE,
     FIELD(ssl_session_cache), NULL, OPT_TRUE},
    {"ssl_kernel_tls", "the kernel's TLS offload", F_NONE, FIELD(ssl_kernel_tls), NULL,
     OPT_TRUE},
    {"ssl_min_version", "minimum protocol version accepted (default: %s):\n"
     "0: TLS 1.0, 1: TLS 1.1, 2: TLS 1.2, 3: TLS 1.3", F_INT, FIELD(ssl_min_version),
     sub_ssl_min_version, 0},
    {"ext_path", "file to write to for external storage.\n"
     "ie: ext_path=/mnt/d1/extstore:1G (several: one file each)", F_NONE, 0, sub_ext_path, 0},
    {"ext_page_size", "size in megabytes of storage pages. (default: %s)", F_UINT_MB,
     FIELD(ext_page_size), sub_ext_page_size, 0},
    {"ext_wbuf_size", "size in megabytes of page write buffers. (default: %s)", F_UINT_MB,
     FIELD(ext_wbuf_size), sub_ext_wbuf_size, OPT_EXT},
    {"ext_threads", "number of IO threads to run. (default: %s)", F_UINT, FIELD(ext_threads),
     sub_ext_threads, OPT_TODO | OPT_EXT},
    {"ext_io_depth", "reads each IO thread keeps in flight. (default: %s)", F_UINT,
     FIELD(ext_io_depth), sub_ext_io_depth, OPT_TODO | OPT_EXT},
    {"ext_item_size", "store items larger than this (bytes, default %s)", F_UINT,
     FIELD(ext_item_size), sub_ext_item_size, OPT_EXT},
    {"ext_item_age", "store items idle at least this long (seconds, default: no age limit)",
     F_NONE, 0, sub_ext_item_age, OPT_EXT},
    {"ext_low_ttl", "consider TTLs lower than this specially (default: %s)", F_UINT,
     FIELD(ext_low_ttl), sub_ext_low_ttl, OPT_EXT},
    {"ext_drop_unread", "don't re-write unread values during compaction (default: %s)",
     F_ENABLED, FIELD(ext_drop_unread), NULL, OPT_TRUE},
    {"ext_recache_rate", "recache an item every N accesses (default: %s)", F_UINT,
     FIELD(ext_recache_rate), sub_ext_recache_rate, OPT_EXT},
    {"ext_compact_under", "compact when fewer than this many free pages\n"
     "(default: 1/4th of the assigned storage)", F_NONE, 0, sub_ext_compact_under, OPT_EXT},
    {"ext_drop_under", "drop COLD items when fewer than this many free pages\n"
     "(default: 1/4th of the assigned storage)", F_NONE, 0, sub_ext_drop_under, OPT_EXT},
    {"ext_max_frag", "max page fragmentation to tolerate (default: %s)", F_F2,
     FIELD(ext_max_frag), sub_ext_max_frag, OPT_EXT},
    {"ext_max_sleep", "max sleep time of background threads in us (default: %s)", F_UINT,
     FIELD(ext_max_sleep), sub_ext_max_sleep, OPT_EXT},
    {"slab_automove_freeratio", "ratio of memory to hold free as buffer.\n"
     "(default: %s)", F_F3, FIELD(slab_automove_freeratio), sub_slab_automove_freeratio,
     OPT_TODO | OPT_EXT},
};

#define NSUBS (sizeof(settings_subs) / sizeof(settings_subs[0]))
const size_t settings_nsubs = NSUBS;
_Static_assert(NSUBS <= MAX_SUBS, "raise MAX_SUBS");

/*
 * -o takes a comma-separated list of name or name=value, read the way
 * getsubopt() reads it: the value runs to the next comma and may itself
 * hold '='; an empty list does nothing; an unknown name is reported with
 * its whole token, value included.
 */
int settings_opt_extended(struct parse *p, const char *a) {
    char *list = strdup(a);
    if (list == NULL) {
        fprintf(p->err, "Failed to allocate memory\n");
        return 1;
    }
    int rc = 0;
    char *cursor = list, *tok, *v;
    while (rc == 0 && options_sub_next(&cursor, &tok, &v)) {
        size_t j;
        for (j = 0; j < NSUBS; j++)
            if (options_sub_is(tok, settings_subs[j].name))
                break;
        if (j == NSUBS) {
            fprintf(p->err, "Illegal suboption \"%s\"\n", tok);
            rc = 1;
            break;
        }
        const struct subopt *so = &settings_subs[j];
        if ((so->flags & OPT_EXT) && v == NULL) {
            fprintf(p->err, "Missing %s argument\n", so->name);
            rc = 1;
            break;
        }
        rc = settings_row_apply(p, so->set, so->off, so->flags, v);
        if (rc == 0 && (so->flags & OPT_TODO))
            settings_todo_note(p, MAX_OPTS + (int)j);
    }
    free(list);
    return rc;
}
