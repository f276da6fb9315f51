/*
 * settings.c -- memcached 1.6.18's command line, for cellard: its option
 * letters and their table (settings_opts), which settings_parse.c reads
 * argv with.
 *
 *   argv --options_getopt--> settings_opts[i].set()    -o a=1,b --> settings_ext.c
 *                              |                                   |
 *                              +------------> struct settings <----+
 *                                                   |
 *                       settings_finish.c: memcached's cross-checks (-I
 *                       vs -m, slab_chunk_max, slab_sizes, LRU pcts, ports)
 *
 *   settings_parse.c: settings_parse(), the top: getopt, -h/-V/-i, each
 *   row, then settings_finish()
 *   settings_base.c: below them all: defaults, settings_init(), the value
 *   readers, a row's application, --metrics's form, the user checks
 *   settings_ext.c: -o's suboptions, their table and the -o list reader
 *   settings_usage.c: settings_opts + settings_subs --> -h (defaults from
 *   settings_init) and -i
 *   settings_show.c: stat_table --> settings_each_stat()  (`stats settings`)
 *   core/options.c: the number readers, getopt_long() from the table,
 *   glibc's complaints, the -o list splitter and the -h layout
 *
 * Every message a refusal prints is memcached 1.6.18's own wording, checked
 * against Debian's binary, and so is the exit code: 1 for what memcached
 * refuses while reading an option, 64 (EX_USAGE) for what it refuses after
 * reading them all.  Messages that start with "cellard:" are ours, for
 * cases memcached does not refuse (it wraps, hangs or crashes instead).
 *
 * getopt_long() prints its own complaints to stderr; we silence it
 * (core/options.c) and print the same words to the caller's stream
 * instead, so tests can read them and the server can send them where it
 * likes.
 */
#include "server/settings_int.h"

#include "core/options.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int opt_port(struct parse *p, const char *a) {
    p->tcp_specified = true;
    return settings_int_read(p, "-p", a, &p->s->port);
}

static int opt_udp_port(struct parse *p, const char *a) {
    p->udp_specified = true;
    return settings_int_read(p, "-U", a, &p->s->udpport);
}

static int opt_unix_socket(struct parse *p, const char *a) {
    return settings_str_set(p, &p->s->socketpath, a);
}

/* -a is octal, as chmod takes it; memcached reads it with strtol(, 8). */
static int opt_unix_mask(struct parse *p, const char *a) {
    long long v;
    if (!options_atoll(a, 8, 0, 07777, &v))
        return settings_out_of_range(p, "-a", a);
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
    const char *old = p->s->inter == settings_default_inter ? "" : p->s->inter;
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
    settings_str_free(p->s->inter);
    p->s->inter = list;
    return 0;
}

static int opt_user(struct parse *p, const char *a) {
    return settings_str_set(p, &p->s->username, a);
}

/*
 * -m is megabytes, read with atoi() like the rest ("-m 64k" is 64 MB and
 * "-m 1g" is 1 MB, as in memcached).  A negative value, which memcached
 * turns into 16 exabytes, is refused.
 */
static int opt_memory_limit(struct parse *p, const char *a) {
    long long v;
    if (settings_num_read(p, "-m", a, 0, (long long)(SIZE_MAX / MB), &v) != 0)
        return 1;
    p->s->maxbytes = (size_t)v * MB;
    return 0;
}

static int opt_conn_limit(struct parse *p, const char *a) {
    if (settings_int_read(p, "-c", a, &p->s->maxconns) != 0)
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
    return settings_str_set(p, &p->s->pid_file, a);
}

static int opt_factor(struct parse *p, const char *a) {
    if (settings_double_read(p, "-f", a, &p->s->factor) != 0)
        return 1;
    if (!(p->s->factor > 1.0)) {
        fprintf(p->err, "Factor must be greater than 1\n");
        return 1;
    }
    return 0;
}

/* memcached refuses only 0; a negative chunk size is refused here too. */
static int opt_chunk_size(struct parse *p, const char *a) {
    if (settings_int_read(p, "-n", a, &p->s->chunk_size) != 0)
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
    if (settings_int_read(p, "-t", a, &p->s->num_threads) != 0)
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
    if (settings_int_read(p, "-R", a, &p->s->reqs_per_event) != 0)
        return 1;
    if (p->s->reqs_per_event <= 0) {
        fprintf(p->err, "Number of requests per event must be greater than 0\n");
        return 1;
    }
    return 0;
}

static int opt_backlog(struct parse *p, const char *a) {
    return settings_int_read(p, "-b", a, &p->s->backlog);
}

static int opt_protocol(struct parse *p, const char *a) {
    p->protocol_specified = true;
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
    long long v;
    if (!options_atosize(a, INT_MIN, INT_MAX, &v))
        return settings_out_of_range(p, "-I", a);
    p->s->item_size_max = (int)v;
    return 0;
}

/* ASCII authentication: the file is read once the options are (main.c, auth.c). */
static int opt_auth_file(struct parse *p, const char *a) {
    return settings_str_set(p, &p->s->auth_file, a);
}

static int opt_memory_file(struct parse *p, const char *a) {
    return settings_str_set(p, &p->s->memory_file, a);
}


static int opt_napi_ids(struct parse *p, const char *a) {
    if (settings_int_read(p, "-N", a, &p->s->num_napi_ids) != 0)
        return 1;
    if (p->s->num_napi_ids <= 0) {
        fprintf(p->err, "Maximum number of NAPI IDs must be greater than 0\n");
        return 1;
    }
    return 0;
}



/* ------------------------------------------------------------------ */
/* The table.                                                          */

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
    {'S', "enable-sasl", no_argument, NULL, "turn on Sasl authentication", F_NONE, FIELD(sasl),
     NULL, OPT_TRUE},
    {'F', "disable-flush-all", no_argument, NULL,
     "disable flush_all command", F_NONE, FIELD(flush_enabled), NULL, OPT_FALSE},
    {'X', "disable-dumping", no_argument, NULL,
     "disable stats cachedump and lru_crawler metadump",
     F_NONE, FIELD(dump_enabled), NULL, OPT_FALSE},
    {'W', "disable-watch", no_argument, NULL,
     "disable watch commands (live logging)", F_NONE, FIELD(watch_enabled), NULL, OPT_FALSE},
    {'Y', "auth-file", required_argument, "<file>",
     "(EXPERIMENTAL) enable ASCII protocol authentication. format:\n"
     "user:pass\\nuser2:pass2\\n", F_NONE, 0, opt_auth_file, 0},
    {'e', "memory-file", required_argument, "<file>",
     "(EXPERIMENTAL) mmap a file for item memory.\n"
     "use only in ram disks or persistent memory mounts!\n"
     "enables restartable cache (stop with SIGUSR1)", F_NONE, 0, opt_memory_file, 0},
    {'Z', "enable-ssl", no_argument, NULL, "enable TLS/SSL", F_NONE, FIELD(ssl_enabled), NULL,
     OPT_TRUE},
    {'o', "extended", required_argument, NULL,
     "comma separated list of extended options\n"
     "most options have a 'no_' prefix to disable", F_NONE, 0, settings_opt_extended, 0},
    {'N', "napi-ids", required_argument, "<num>",
     "number of napi ids. see memcached's doc/napi_ids.txt", F_NONE, 0, opt_napi_ids,
     OPT_TODO},
    {OPT_METRICS, "metrics", required_argument, "<host:port>",
     "(cellar) serve stats as Prometheus text at\n"
     "http://<host:port>/metrics (\":port\" every address,\n"
     "\"[v6]:port\"); off by default. Also -o metrics=", F_NONE, 0, settings_opt_metrics, 0},
};

#define NOPTS (sizeof(settings_opts) / sizeof(settings_opts[0]))
const size_t settings_nopts = NOPTS;
_Static_assert(NOPTS <= MAX_OPTS, "raise MAX_OPTS");
_Static_assert(MAX_OPTS <= OPTIONS_MAX, "options_getopt_add() would refuse rows");
