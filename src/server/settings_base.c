/*
 * settings_base.c -- what every file of the settings module shares, and
 * nothing that calls back into them: the string defaults, settings_init()
 * and settings_deinit(), the value readers every option uses, one table
 * row's application, the not-yet-implemented notes, --metrics's form
 * check, and the user checks main() makes.  settings.c, settings_ext.c,
 * settings_finish.c, settings_usage.c and settings_parse.c call down to
 * it; it calls none of them.
 */
#include "server/settings_int.h"

#include "core/httpd.h"
#include "core/options.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Static defaults; any other string in the struct is an owned copy. */
const char settings_default_inter[] = SETTINGS_DEFAULT_INTER;
const char settings_default_policy[] = SETTINGS_DEFAULT_POLICY;
const char settings_flat_policy[] = SETTINGS_FLAT_POLICY;
const char settings_seg_policy[] = "fifo";

/* ------------------------------------------------------------------ */
/* The small helpers every option shares.                              */

void settings_str_free(const char *p) {
    if (p != NULL && p != settings_default_inter && p != settings_default_policy &&
        p != settings_flat_policy && p != settings_seg_policy)
        free((void *)p);
}

int settings_str_set(struct parse *p, const char **field, const char *v) {
    char *copy = strdup(v);
    if (copy == NULL) {
        fprintf(p->err, "Failed to allocate memory\n");
        return 1;
    }
    settings_str_free(*field);
    *field = copy;
    return 0;
}

/* The one complaint every number out of range gets: ours, since memcached wraps. */
int settings_out_of_range(struct parse *p, const char *what, const char *arg) {
    fprintf(p->err, "cellard: %s %s: number out of range\n", what, arg);
    return 1;
}

int settings_num_read(struct parse *p, const char *what, const char *arg, long long lo,
                      long long hi, long long *out) {
    return options_atoll(arg, 10, lo, hi, out) ? 0 : settings_out_of_range(p, what, arg);
}

int settings_int_read(struct parse *p, const char *what, const char *arg, int *out) {
    return options_atoi(arg, out) ? 0 : settings_out_of_range(p, what, arg);
}

int settings_double_read(struct parse *p, const char *what, const char *arg, double *out) {
    return options_atof(arg, out) ? 0 : settings_out_of_range(p, what, arg);
}

/* ------------------------------------------------------------------ */
/* Options.  Each returns 0, or an exit code after printing why.       */

/*
 * --metrics=HOST:PORT and -o metrics=HOST:PORT (cellar): where to serve
 * the Prometheus /metrics page.  The form is checked here; main() binds it
 * and refuses to start when it cannot.
 */
int settings_opt_metrics(struct parse *p, const char *v) {
    char buf[256], *host, *port;
    if (v == NULL || strlen(v) >= sizeof(buf) ||
        !httpd_split_hostport(strcpy(buf, v), &host, &port)) {
        fprintf(p->err, "cellard: --metrics wants HOST:PORT, [IPv6]:PORT or :PORT "
                        "(port 1-65535), not \"%s\"\n", v ? v : "");
        return 1;
    }
    return settings_str_set(p, &p->s->metrics, v);
}

void settings_init(struct settings *s) {
    memset(s, 0, sizeof(*s));
    s->port = 11211;
    s->udpport = 0;
    s->inter = settings_default_inter;
    s->access = 0700;
    s->backlog = 1024;
    s->binding_protocol = SETTINGS_PROTO_AUTO;
    s->ssl_keyformat = 1;               /* PEM */
    s->ssl_wbuf_size = 16 * 1024;
    s->ssl_min_version = 2;             /* TLS 1.2 */
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
    s->evict_policy = settings_default_policy;
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
    s->ext_page_size = 64 * MB;         /* memcached's extstore defaults */
    s->ext_wbuf_size = 4 * MB;
    s->ext_threads = 1;
    s->ext_io_depth = 1;
    s->ext_item_size = 512;
    s->ext_item_age = UINT_MAX;
    s->ext_recache_rate = 2000;
    s->ext_max_sleep = 1000000;
    s->ext_max_frag = 0.8;
    s->slab_automove_freeratio = 0.01;
}

void settings_deinit(struct settings *s) {
    const char **owned[] = {&s->inter, &s->socketpath, &s->memory_file, &s->evict_policy,
                            &s->auth_file, &s->pid_file, &s->username, &s->metrics,
                            &s->ssl_chain_cert, &s->ssl_key, &s->ssl_ciphers, &s->ssl_ca_cert};
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
        settings_str_free(*owned[i]);
        *owned[i] = NULL;
    }
    for (unsigned i = 0; i < s->ext_nfiles; i++) {
        settings_str_free(s->ext_path[i]);
        s->ext_path[i] = NULL;
    }
    s->ext_nfiles = 0;
}

/* Runs one option's row: its set(), or the bool it stores. */
int settings_row_apply(struct parse *p, int (*set)(struct parse *, const char *), size_t off,
                       unsigned flags, const char *arg) {
    if (set != NULL)
        return set(p, arg);
    *(bool *)((char *)p->s + off) = (flags & OPT_TRUE) != 0;
    return 0;
}

/* Notes an accepted option we do not act on yet, once however often given. */
void settings_todo_note(struct parse *p, int row) {
    for (int i = 0; i < p->ntodo; i++)
        if (p->todo[i] == row)
            return;
    p->todo[p->ntodo++] = row;
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
