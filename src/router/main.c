/*
 * main.c -- cellar-router: flags, listeners, the acceptor, reloads, signals.
 *
 *   main thread                        workers (-t): net/ loops, proxy.c
 *   parse flags, load the config       each with a libcellar handle over
 *   open listeners, start workers      the current configuration
 *   loop: accept -> hand to a worker,
 *         SIGHUP or a changed file -> load, swap (router_config_load),
 *         TERM/INT -> stop
 *   --metrics: its own thread (core/httpd.c) answering GET /metrics
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/options.h"
#include "router/router.h"

/*
 * The router's requests in flight over all servers, per worker: the
 * clients' own pipelines bound what they send, so the window (the
 * paper's incast control, for a client fanning out one page's gets) is
 * set out of their way unless the configuration says otherwise.
 */
#define ROUTER_WINDOW 65536

static void usage(FILE *f) {
    fprintf(f,
            "cellar-router " ROUTER_VERSION " -- a memcache router on libcellar's routes\n"
            "  --config FILE   mcrouter-format JSON (or a server list); \"file:PATH\" works too\n"
            "  -f, --config-file FILE  the same (mcrouter's names)\n"
            "  -R, --route-prefix=/REGION/CLUSTER/  this router's routing prefix: keys\n"
            "                          without one go to the routes of that alias\n"
            "                          (default /././, as mcrouter's)\n"
            "  --config-params=NAME:VALUE,...  values the config's macros see as %%NAME%%\n"
            "  --runtime-vars-file=FILE  mcrouter's runtime variables (JSON): a shadow's\n"
            "                          index_range_rv or key_fraction_range_rv names one\n"
            "                          whose value it takes; read again when it changes\n"
            "  --server-timeout=MS     a pool's server_timeout when it gives none (1000)\n"
            "  --timeouts-until-tko=N  a pool's tko_timeouts when it gives none (3)\n"
            "  -r, --probe-timeout-initial=MS  a pool's probe_min_ms when it gives none\n"
            "                          (1000): the first probe of a server marked down\n"
            "  --enable-flush-cmd      send flush_all on to every backend (default: refused,\n"
            "                          SERVER_ERROR Command disabled, as mcrouter does)\n"
            "  -A, --enable-shutdown   a client's `shutdown` stops the router (mcrouter's\n"
            "                          always does; default, as memcached: refused)\n"
            "  --big-value-split-threshold=N  values of more than N bytes are stored as\n"
            "                          pieces under keys of their own, as mcrouter's\n"
            "                          BigValueRoute (default 0: never)\n"
            "  --big-value-batch-size=N  of a value's pieces, N in flight at once (0: all)\n"
            "  --allow-only-gets       send only get-like requests on; the rest are\n"
            "                          answered as NullRoute answers them (mcrouter's)\n"
            "  --validate-config[=exit|run]  check the configuration and exit 0 (valid)\n"
            "                          or 1; with run, go on to serve when it is valid\n"
            "  --stats-logging-interval=MS  mcrouter's stats files: none here; only 0\n"
            "  --config-dump-root=DIR  mcrouter's dumped configurations: none here; only \"\"\n"
            "  --send-invalid-route-to-default  a key whose routing prefix names no\n"
            "                          route goes to the default route, not refused\n"
            "  -p, --port=N    TCP port to listen on (default 11211; 0: none)\n"
            "  -l, --listen=A  addresses to listen on, comma separated (default 127.0.0.1)\n"
            "  --listen-sock-fd=FD     accept on FD, a listening TCP socket given to the\n"
            "                          router (mcrouter's), instead of -p/-l/-s\n"
            "  --ssl-port=N[,N...]     also listen with TLS on these ports (mcrouter's);\n"
            "                          with --server-pem-cert-path=FILE (its chain),\n"
            "                          --server-pem-key-path=FILE, and optionally\n"
            "                          --server-pem-ca-path=FILE (the clients' CAs:\n"
            "                          a certificate a client gives is checked) and\n"
            "                          --ssl-require-peer-certs (a client must give one)\n"
            "  --auth-file=FILE        clients authenticate first, as cellard's -Y (memcached's\n"
            "                          user:password file and token), read again at SIGHUP\n"
            "  --pem-ca-path=FILE      TLS toward the pools with \"use_ssl\": the CAs a\n"
            "                          backend's certificate may come from (default: the\n"
            "                          system's; its name is checked too)\n"
            "  --pem-cert-path=FILE, --pem-key-path=FILE  a client certificate to present\n"
            "  -s, --unix-socket=PATH  listen on a unix socket instead\n"
            "  -a, --unix-mask=MASK    its permissions (octal, default 0700)\n"
            "  -c, --conn-limit=N      client connections at most (default 1024)\n"
            "  -b, --listen-backlog=N  (default 1024)\n"
            "  -t, --threads=N         workers (default 4)\n"
            "  -o io=MODE, --io=MODE   network core: uring (io_uring), epoll, or auto\n"
            "                          (default: io_uring where the kernel allows it)\n"
            "  -P, --pidfile=FILE\n"
            "  --metrics=HOST:PORT     answer GET /metrics (Prometheus text) over HTTP there\n"
            "                          (\":PORT\" for every address; default: off)\n"
            "  --async-dir=DIR         keep deletes a backend could not take in DIR, one file\n"
            "                          per backend, and replay them once it answers (default:\n"
            "                          off: such deletes get their error)\n"
            "  --mcrouter-errors       mcrouter's words for a line it cannot parse (CLIENT_ERROR\n"
            "                          malformed request, and the connection closed), a key\n"
            "                          over 250 bytes (CLIENT_ERROR bad key) and an unknown\n"
            "                          stats group (default: memcached's words)\n"
            "  --asynclog-disable      no spool, --async-dir or not (mcrouter's flag)\n"
            "  --async-max-bytes=N     a backend's spool file at most (default 64 MiB)\n"
            "  --client-max-bytes=N    a client's answers held and in flight, reckoned in\n"
            "                          bytes, past which it is not read from (default 1 MiB)\n"
            "  --client-hard-max-bytes=N  answers held for a client past which it is closed\n"
            "                          (default 64 MiB)\n"
            "  --client-output-timeout=S  close a client whose answers have waited S seconds\n"
            "                          without a byte of them read (default 0: never)\n"
            "  -v, --verbose\n"
            "  -V, --version\n"
            "  -h, --help\n"
            "Reloads the config on SIGHUP and when the file changes.\n");
}

/* What the configuration has that is passed over, as mcrouter logs it. */
static void config_warn(void *arg, const char *msg) {
    fprintf(stderr, "cellar-router: %s: %s\n", (const char *)arg, msg);
}

int router_config_load(struct router *rt, const char *path, char *err, size_t errlen) {
    struct cellar_options opt = {.window_init = ROUTER_WINDOW, .window_min = ROUTER_WINDOW,
                                 .window_max = ROUTER_WINDOW, .window_bytes = -1,
                                 .server_timeout_ms = rt->server_timeout_ms,
                                 .tko_timeouts = rt->tko_timeouts,
                                 .probe_min_ms = rt->probe_min_ms};
    struct cellar_routing routing = {.route_prefix = rt->route_prefix,
                                     .config_params = rt->config_params,
                                     .send_invalid_route_to_default =
                                         rt->send_invalid_route_to_default,
                                     .big_value_split_threshold = rt->big_value_split,
                                     .big_value_batch_size = rt->big_value_batch,
                                     .warn = config_warn,
                                     .warn_arg = (void *)path};
    routing.runtime_vars_file = rt->runtime_vars_path;
    char builtins[96];              /* mcrouter's own parameters */
    snprintf(builtins, sizeof(builtins), "{\"router-info-name\": \"Memcache\", "
                                         "\"num-proxies\": %d}", rt->nworkers);
    routing.builtin_params = builtins;
    struct cellar_config *cfg = NULL;
    if (cellar_config_load_routing(&cfg, path, &opt, &routing, err, errlen) != CELLAR_OK)
        return -1;
    const struct cellar_tls *bt = &rt->backend_tls;
    if ((bt->ca_file || bt->cert_file || bt->key_file) &&
        cellar_config_tls(cfg, bt, err, errlen) != CELLAR_OK) {
        cellar_config_release(&cfg);
        return -1;
    }
    pthread_mutex_lock(&rt->cfg_lock);
    struct cellar_config *old = rt->cfg;
    rt->cfg = cfg;
    atomic_store(&rt->config_loaded, (int64_t)time(NULL));
    atomic_fetch_add_explicit(&rt->cfg_gen, 1, memory_order_release);
    pthread_mutex_unlock(&rt->cfg_lock);
    cellar_config_release(&old);
    return 0;
}

/* The file's modification time and size, to notice a change. */
static bool file_stamp(const char *path, struct timespec *mtime, off_t *size) {
    struct stat st;
    if (stat(path, &st) != 0)
        return false;
    *mtime = st.st_mtim;
    *size = st.st_size;
    return true;
}

static void reload(struct router *rt, const char *why) {
    char err[512] = "";
    if (router_config_load(rt, rt->config_path, err, sizeof(err)) == 0) {
        atomic_fetch_add(&rt->reloads, 1);
        fprintf(stderr, "cellar-router: reloaded %s (%s)\n", rt->config_path, why);
    } else {
        atomic_fetch_add(&rt->reload_errors, 1);
        fprintf(stderr, "cellar-router: refusing the new config in %s, keeping the old one: %s\n",
                rt->config_path, err);
    }
}

int main(int argc, char **argv) {
    /* the options: a short form and a long one, or a long one alone (core/options.h) */
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'C' | OPTIONS_LONG_ONLY},
        {"config-file", required_argument, NULL, 'f'},
        {"route-prefix", required_argument, NULL, 'R'},
        {"config-params", required_argument, NULL, 'Q' | OPTIONS_LONG_ONLY},
        {"runtime-vars-file", required_argument, NULL, 'L' | OPTIONS_LONG_ONLY},
        {"send-invalid-route-to-default", no_argument, NULL, 'S' | OPTIONS_LONG_ONLY},
        {"enable-flush-cmd", no_argument, NULL, 'E' | OPTIONS_LONG_ONLY},
        {"enable-shutdown", no_argument, NULL, 'A'},
        {"allow-only-gets", no_argument, NULL, 'G' | OPTIONS_LONG_ONLY},
        {"big-value-split-threshold", required_argument, NULL, 'Z' | OPTIONS_LONG_ONLY},
        {"big-value-batch-size", required_argument, NULL, 'N' | OPTIONS_LONG_ONLY},
        {"validate-config", optional_argument, NULL, 'Y' | OPTIONS_LONG_ONLY},
        {"stats-logging-interval", required_argument, NULL, 'J' | OPTIONS_LONG_ONLY},
        {"config-dump-root", required_argument, NULL, 'U' | OPTIONS_LONG_ONLY},
        {"server-timeout", required_argument, NULL, 'W' | OPTIONS_LONG_ONLY},
        {"timeouts-until-tko", required_argument, NULL, 'K' | OPTIONS_LONG_ONLY},
        {"probe-timeout-initial", required_argument, NULL, 'r'},
        {"port", required_argument, NULL, 'p'},
        {"listen", required_argument, NULL, 'l'},
        {"listen-sock-fd", required_argument, NULL, 'F' | OPTIONS_LONG_ONLY},
        {"ssl-port", required_argument, NULL, 'q' | OPTIONS_LONG_ONLY},
        {"server-pem-cert-path", required_argument, NULL, 'k' | OPTIONS_LONG_ONLY},
        {"server-pem-key-path", required_argument, NULL, 'j' | OPTIONS_LONG_ONLY},
        {"server-pem-ca-path", required_argument, NULL, 'y' | OPTIONS_LONG_ONLY},
        {"ssl-require-peer-certs", no_argument, NULL, 'z' | OPTIONS_LONG_ONLY},
        {"auth-file", required_argument, NULL, 'u' | OPTIONS_LONG_ONLY},
        {"pem-ca-path", required_argument, NULL, 'g' | OPTIONS_LONG_ONLY},
        {"pem-cert-path", required_argument, NULL, 'i' | OPTIONS_LONG_ONLY},
        {"pem-key-path", required_argument, NULL, 'm' | OPTIONS_LONG_ONLY},
        {"ssl-verify-peers", no_argument, NULL, 'n' | OPTIONS_LONG_ONLY},
        {"unix-socket", required_argument, NULL, 's'},
        {"unix-mask", required_argument, NULL, 'a'},
        {"conn-limit", required_argument, NULL, 'c'},
        {"listen-backlog", required_argument, NULL, 'b'},
        {"threads", required_argument, NULL, 't'},
        {"io", required_argument, NULL, 'I' | OPTIONS_LONG_ONLY},
        {"pidfile", required_argument, NULL, 'P'},
        {"metrics", required_argument, NULL, 'M' | OPTIONS_LONG_ONLY},
        {"async-dir", required_argument, NULL, 'D' | OPTIONS_LONG_ONLY},
        {"asynclog-disable", no_argument, NULL, 'O' | OPTIONS_LONG_ONLY},
        {"mcrouter-errors", no_argument, NULL, 'e' | OPTIONS_LONG_ONLY},
        {"async-max-bytes", required_argument, NULL, 'X' | OPTIONS_LONG_ONLY},
        {"client-max-bytes", required_argument, NULL, 'B' | OPTIONS_LONG_ONLY},
        {"client-hard-max-bytes", required_argument, NULL, 'H' | OPTIONS_LONG_ONLY},
        {"client-output-timeout", required_argument, NULL, 'T' | OPTIONS_LONG_ONLY},
        {"verbose", no_argument, NULL, 'v'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static struct options_getopt g;
    options_getopt_init(&g, "cellar-router");
    options_getopt_table(&g, longs);
    options_getopt_add(&g, 'o', NULL, required_argument, required_argument); /* -o io=MODE */
    const char *config = NULL, *metrics = NULL, *inter = "127.0.0.1", *socketpath = NULL,
               *pidfile = NULL, *async_dir = NULL, *io = "auto", *route_prefix = "/././",
               *config_params = NULL, *runtime_vars = NULL, *ssl_ports = NULL;
    struct net_tls_config tls = {.keyformat = 1, .min_version = 2};  /* PEM, TLS 1.2 */
    struct cellar_tls backend_tls = {0};
    const char *auth_file = NULL;
    bool invalid_to_default = false, enable_flush = false, enable_shutdown = false;
    bool only_gets = false, asynclog_off = false, mcrouter_errors = false;
    long big_value = 0, big_batch = 0;
    int validate = 0;                   /* 1: check and exit; 2: check, then serve */
    int rt_server_timeout = 0, rt_tko = 0, rt_probe = 0;
    unsigned long long async_max = 0, client_max = ROUTER_CLIENT_MAX_BYTES,
                       client_hard = ROUTER_CLIENT_HARD_BYTES, output_timeout = 0;
    int port = 11211, maxconns = 1024, backlog = 1024, threads = 4, mask = 0700, verbose = 0;
    int listen_fd = -1;
    int ch;
    char *optarg_;
    while ((ch = options_getopt_next(&g, argc, argv, &optarg_)) != -1) {
        if (ch == '?' || ch == ':') {
            options_getopt_complain(&g, stderr, ch, argv);
            usage(stderr);
            return 64;
        }
        ch &= ~OPTIONS_LONG_ONLY;           /* the long-only keys carry their letter */
        char *optarg = optarg_;
        char *end = NULL;
        bool numeric = optarg != NULL && strchr("pacbtFWKr", ch) != NULL;
        long v = numeric ? strtol(optarg, &end, ch == 'a' ? 8 : 10) : 0;
        bool bad = numeric && (end == optarg || *end != '\0');
        uint64_t u = 0;
        switch (ch) {
        case 'C':
        case 'f': config = strncmp(optarg, "file:", 5) == 0 ? optarg + 5 : optarg; break;
        case 'R': route_prefix = optarg; break;
        case 'Q': config_params = optarg; break;
        case 'L': runtime_vars = optarg; break;
        case 'S': invalid_to_default = true; break;
        case 'E': enable_flush = true; break;
        case 'A': enable_shutdown = true; break;
        case 'G': only_gets = true; break;
        case 'Z':
            big_value = strtol(optarg, &end, 10);
            bad = end == optarg || *end != '\0' || big_value < 0 || big_value > INT32_MAX;
            break;
        case 'N':
            big_batch = strtol(optarg, &end, 10);
            bad = end == optarg || *end != '\0' || big_batch < 0 || big_batch > INT32_MAX;
            break;
        case 'Y':
            validate = optarg == NULL || strcmp(optarg, "exit") == 0 ? 1
                     : strcmp(optarg, "run") == 0                   ? 2 : 0;
            bad = validate == 0;
            break;
        case 'J':   /* mcrouter's stats files: none here; 0 (off) is what there is */
            bad = strcmp(optarg, "0") != 0;
            break;
        case 'U':   /* mcrouter's dumped configurations: none here; "" (off) */
            bad = *optarg != '\0';
            break;
        case 'W': rt_server_timeout = (int)v; bad = bad || v <= 0 || v > 86400000; break;
        case 'K': rt_tko = (int)v; bad = bad || v <= 0 || v > 1000000; break;
        case 'r': rt_probe = (int)v; bad = bad || v <= 0 || v > 86400000; break;
        case 'p': port = (int)v; bad = bad || v < 0 || v > 65535; break;
        case 'l': inter = optarg; break;
        case 'F': listen_fd = (int)v; bad = bad || v < 0; break;
        case 's': socketpath = optarg; break;
        case 'q':
            ssl_ports = optarg;
            bad = strspn(optarg, "0123456789,") != strlen(optarg) || *optarg == '\0';
            break;
        case 'k': tls.chain_cert = optarg; break;
        case 'j': tls.key = optarg; break;
        case 'y': tls.ca_cert = optarg; break;
        case 'z': tls.verify_mode = 2; break;
        case 'u': auth_file = optarg; break;
        case 'g': backend_tls.ca_file = optarg; break;
        case 'i': backend_tls.cert_file = optarg; break;
        case 'm': backend_tls.key_file = optarg; break;
        case 'n': break;    /* mcrouter's: verifying is what cellar-router always does */
        case 'a': mask = (int)v; bad = bad || v < 0 || v > 0777; break;
        case 'c': maxconns = (int)v; bad = bad || v <= 0; break;
        case 'b': backlog = (int)v; bad = bad || v <= 0; break;
        case 't': threads = (int)v; bad = bad || v <= 0 || v > 256; break;
        case 'P': pidfile = optarg; break;
        case 'o':
        case 'I':
            io = ch == 'I' ? optarg : strncmp(optarg, "io=", 3) == 0 ? optarg + 3 : "";
            bad = strcmp(io, "auto") != 0 && strcmp(io, "uring") != 0 && strcmp(io, "epoll") != 0;
            break;
        case 'M': metrics = optarg; break;
        case 'D': async_dir = optarg; break;
        case 'O': asynclog_off = true; break;
        case 'e': mcrouter_errors = true; break;
        case 'X':
            bad = !options_strtou64(optarg, &u) || u < 1024;
            async_max = u;
            break;
        case 'B':
        case 'H':
        case 'T': {
            unsigned long long *to = ch == 'B' ? &client_max : ch == 'H' ? &client_hard
                                                                         : &output_timeout;
            bad = !options_strtou64(optarg, &u) || (ch != 'T' && u < 1024) ||
                  (ch == 'T' && u > 86400);
            *to = u;
            break;
        }
        case 'v': verbose++; break;
        case 'V': printf("cellar-router " ROUTER_VERSION "\n"); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 64;
        }
        if (bad) {
            if (ch == 'X')
                fprintf(stderr, "cellar-router: bad value for --async-max-bytes (1024 or "
                                "more): %s\n", optarg);
            else if (ch == 'B' || ch == 'H')
                fprintf(stderr, "cellar-router: bad value for --%s (1024 or more): %s\n",
                        ch == 'B' ? "client-max-bytes" : "client-hard-max-bytes", optarg);
            else if (ch == 'T')
                fprintf(stderr, "cellar-router: bad value for --client-output-timeout "
                                "(seconds, 0 to 86400): %s\n", optarg);
            else if (ch == 'I')
                fprintf(stderr, "cellar-router: bad value for --io: %s\n", optarg);
            else if (ch == 'F')
                fprintf(stderr, "cellar-router: bad value for --listen-sock-fd: %s\n", optarg);
            else if (ch == 'Z' || ch == 'N')
                fprintf(stderr, "cellar-router: bad value for --big-value-%s: %s\n",
                        ch == 'Z' ? "split-threshold" : "batch-size", optarg);
            else if (ch == 'Y')
                fprintf(stderr, "cellar-router: bad value for --validate-config: %s (exit or "
                                "run)\n", optarg);
            else if (ch == 'J')
                fprintf(stderr, "cellar-router: --stats-logging-interval %s: cellar-router "
                                "writes no stats files (0 only; use stats or --metrics)\n",
                        optarg);
            else if (ch == 'U')
                fprintf(stderr, "cellar-router: --config-dump-root %s: cellar-router dumps no "
                                "configurations (\"\" only)\n", optarg);
            else if (ch == 'W' || ch == 'K' || ch == 'r')
                fprintf(stderr, "cellar-router: bad value for --%s: %s\n",
                        ch == 'W' ? "server-timeout" : ch == 'K' ? "timeouts-until-tko"
                                                               : "probe-timeout-initial",
                        optarg);
            else
                fprintf(stderr, "cellar-router: bad value for -%c: %s\n", ch, optarg);
            return 64;
        }
    }
    if (config == NULL || optind < argc) {       /* (options_getopt_next() runs getopt_long) */
        fprintf(stderr, "cellar-router: %s\n",
                config == NULL ? "--config FILE is required" : "unexpected arguments");
        usage(stderr);
        return 64;
    }

    static struct router rt;
    rt.config_path = config;
    rt.route_prefix = route_prefix;
    rt.config_params = config_params;
    rt.runtime_vars_path = runtime_vars;
    rt.backend_tls = backend_tls;
    if (auth_file != NULL) {
        char why[512];
        if ((rt.auth = authfile_open(auth_file, why, sizeof(why))) == NULL) {
            fprintf(stderr, "cellar-router: --auth-file: %s\n", why);
            return 64;
        }
    }
    rt.send_invalid_route_to_default = invalid_to_default;
    rt.enable_flush = enable_flush;
    rt.enable_shutdown = enable_shutdown;
    rt.mcrouter_errors = mcrouter_errors;
    rt.allow_only_gets = only_gets;
    rt.big_value_split = big_value;
    rt.big_value_batch = big_batch;
    rt.server_timeout_ms = rt_server_timeout;
    rt.tko_timeouts = rt_tko;
    rt.probe_min_ms = rt_probe;
    rt.verbose = verbose;
    rt.nworkers = threads;
    rt.started = (uint32_t)time(NULL);
    rt.client_max_bytes = (size_t)client_max;
    rt.client_hard_bytes = (size_t)(client_hard > client_max ? client_hard : client_max);
    rt.client_output_timeout = (unsigned)output_timeout;
    /*
     * glibc raises its mmap and trim thresholds after a large block is
     * freed (a backend's read buffer grown for large answers), and then
     * keeps up to twice that at the top of a thread's heap: the memory a
     * burst of large answers took would stay.  Fixed thresholds keep the
     * heap's top given back.
     */
    mallopt(M_TRIM_THRESHOLD, 256 * 1024);
    pthread_mutex_init(&rt.cfg_lock, NULL);
    char err[512] = "";
    if (access(config, R_OK) != 0) {        /* mcrouter's words */
        fprintf(stderr, "cellar-router: Can not read config from %s: %s\n", config,
                strerror(errno));
        return 1;
    }
    if (router_config_load(&rt, config, err, sizeof(err)) != 0) {
        fprintf(stderr, "cellar-router: %s: %s\n", config, err);
        return 1;
    }
    if (validate == 1) {            /* --validate-config: the configuration is good */
        fprintf(stderr, "cellar-router: %s: valid\n", config);
        cellar_config_release(&rt.cfg);
        return 0;
    }
    struct timespec mtime = {0, 0}, vmtime = {0, 0};
    off_t size = 0, vsize = 0;
    file_stamp(config, &mtime, &size);
    if (runtime_vars)
        file_stamp(runtime_vars, &vmtime, &vsize);
    if (asynclog_off)
        async_dir = NULL;               /* mcrouter's --asynclog-disable: no spool */
    if (async_dir != NULL && cellar_spool_open(&rt.spool, async_dir, async_max) != CELLAR_OK) {
        fprintf(stderr, "cellar-router: --async-dir %s: not a directory the router can write\n",
                async_dir);
        return 1;
    }

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)maxconns + 64) {
        rl.rlim_cur = (rlim_t)maxconns + 64;
        if (rl.rlim_max < rl.rlim_cur)
            rl.rlim_max = rl.rlim_cur;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            fprintf(stderr, "cellar-router: cannot raise the open-files limit for -c %d\n",
                    maxconns);
            return 71;
        }
    }

    /* Signals are taken synchronously by the main loop; threads inherit the mask. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);

    rt.net.ops = &router_conn_ops;
    rt.workers = calloc((size_t)threads, sizeof(*rt.workers));
    rt.net.workers = calloc((size_t)threads, sizeof(*rt.net.workers));
    if (rt.workers == NULL || rt.net.workers == NULL) {
        fprintf(stderr, "cellar-router: out of memory\n");
        return 1;
    }
    rt.net.nworkers = threads;
    if (net_io_choose(&rt.net, io, "cellar-router", "--io=uring") < 0)
        return 1;
    for (int i = 0; i < threads; i++) {
        rt.net.workers[i] = &rt.workers[i].net;
        if (router_worker_init(&rt, &rt.workers[i], i) < 0) {
            fprintf(stderr, "cellar-router: failed to start worker threads\n");
            return 1;
        }
    }
    int lrc = listen_fd >= 0       ? net_listen_fd(&rt.listeners, listen_fd)
            : socketpath != NULL ? net_listen_unix(&rt.listeners, socketpath, mask, backlog)
            : port != 0          ? net_listen_tcp(&rt.listeners, inter, port, backlog)
                                 : 0;
    if (lrc >= 0 && ssl_ports != NULL) {
        /* --ssl-port: TLS listeners beside the others, on the same addresses */
        if (tls.verify_mode == 0 && tls.ca_cert != NULL)
            tls.verify_mode = 1;
        if ((rt.net.tls = net_tls_create(&tls, err, sizeof(err))) == NULL) {
            fprintf(stderr, "cellar-router: --ssl-port: %s\n", err);
            return 64;
        }
        rt.listeners.tls = true;
        char list[256];
        snprintf(list, sizeof(list), "%s", ssl_ports);
        char *save = NULL;
        for (char *t = strtok_r(list, ",", &save); t != NULL && lrc >= 0;
             t = strtok_r(NULL, ",", &save))
            lrc = net_listen_tcp(&rt.listeners, inter, atoi(t), backlog);
        rt.listeners.tls = false;
    }
    if (lrc < 0) {
        if (listen_fd >= 0)
            fprintf(stderr, "cellar-router: --listen-sock-fd %d is not a listening TCP socket\n",
                    listen_fd);
        else
            fprintf(stderr, "cellar-router: failed to listen\n");
        return 71;
    }
    /* the workers are made (not yet running): what the scraper reads exists */
    if (metrics != NULL &&
        (rt.metrics = httpd_create(metrics, "/metrics", admin_metrics, &rt, err,
                                   sizeof(err))) == NULL) {
        fprintf(stderr, "cellar-router: --metrics %s\n", err);
        return 71;
    }
    if (pidfile != NULL) {
        FILE *f = fopen(pidfile, "w");
        if (f != NULL) {
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
        }
    }
    if (net_workers_start(&rt.net) < 0) {
        fprintf(stderr, "cellar-router: failed to start worker threads\n");
        return 1;
    }

    struct evloop *loop = evloop_create();
    evloop_add(loop, sfd, EV_READ, &sfd);
    for (int i = 0; i < rt.listeners.n; i++)
        evloop_add(loop, rt.listeners.l[i].fd, EV_READ, &rt.listeners.l[i]);
    const struct net_accept_rules rules = {(uint64_t)maxconns,
                                           "SERVER_ERROR Too many open connections\r\n"};
    struct ev_fired ev[64];
    while (!atomic_load(&rt.net.stop)) {
        int n = evloop_wait(loop, ev, 64, 1000);
        for (int i = 0; i < n; i++) {
            if (ev[i].ptr == &sfd) {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                    if (si.ssi_signo == SIGHUP) {
                        reload(&rt, "SIGHUP");
                        char why[512];
                        if (rt.auth != NULL && !authfile_reload(rt.auth, why, sizeof(why)))
                            fprintf(stderr, "cellar-router: --auth-file: %s; keeping the one "
                                            "read before\n", why);
                    }
                    else
                        atomic_store(&rt.net.stop, true);
                }
            } else if (ev[i].ptr != NULL) {
                net_accept_all(&rt.net, ev[i].ptr, &rules);
            }
        }
        /* the file changed (checked once a second at most) */
        struct timespec m;
        off_t sz;
        if (file_stamp(config, &m, &sz) &&
            (m.tv_sec != mtime.tv_sec || m.tv_nsec != mtime.tv_nsec || sz != size)) {
            mtime = m;
            size = sz;
            reload(&rt, "file changed");
        }
        if (runtime_vars && file_stamp(runtime_vars, &m, &sz) &&
            (m.tv_sec != vmtime.tv_sec || m.tv_nsec != vmtime.tv_nsec || sz != vsize)) {
            vmtime = m;
            vsize = sz;
            reload(&rt, "runtime variables changed");
        }
    }

    httpd_destroy(&rt.metrics);
    net_listeners_close(&rt.listeners);
    net_workers_stop(&rt.net);
    for (int i = 0; i < threads; i++)
        router_worker_deinit(&rt.workers[i]);
    evloop_destroy(&loop);
    close(sfd);
    free(rt.workers);
    free(rt.net.workers);
    net_tls_destroy(&rt.net.tls);
    authfile_free(&rt.auth);
    cellar_config_release(&rt.cfg);
    cellar_spool_close(&rt.spool);
    pthread_mutex_destroy(&rt.cfg_lock);
    if (pidfile != NULL)
        unlink(pidfile);
    return 0;
}
