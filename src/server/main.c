/*
 * main.c -- cellard: settings, listeners, the acceptor, maintenance, signals.
 *
 *   main thread                     maintenance thread
 *   -----------                     ------------------
 *   parse settings, create engine   every ~10 ms: set the engine clock,
 *   open listeners, start workers   engine_step() (hash growth, expiry
 *   loop: accept -> hand fd to a    crawl), sleep longer when idle
 *         worker, round robin
 *         signalfd: TERM/INT -> stop  flash writer (-o ext_path, extstore.c):
 *                                   engine_ext_step(), resting when idle
 *   --metrics: core/httpd.c's thread answers GET /metrics (metrics.c)
 *
 * The only mutable globals of the program live here (none at the moment:
 * the server struct is on main's stack and passed to everyone).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/httpd.h"
#include "net/tls.h"
#include "server/auth.h"
#include "server/sasl.h"
#include "server/detail.h"
#include "server/extstore.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/stats.h"
#include "server/watch.h"
#include "server/worker.h"
#include "storage/persist.h"

static uint32_t unix_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint32_t)ts.tv_sec;
}

static int open_listeners(struct server *s) {
    const struct settings *cfg = s->cfg;
    int inherited = net_listen_inherited(&s->listeners);
    if (inherited != 0)             /* systemd's sockets stand for -p, -l and -s */
        return inherited < 0 ? -1 : 0;
    if (cfg->socketpath != NULL)
        return net_listen_unix(&s->listeners, cfg->socketpath, cfg->access, cfg->backlog);
    if (cfg->port == 0)
        return 0;
    return net_listen_tcp(&s->listeners, cfg->inter ? cfg->inter : "127.0.0.1", cfg->port,
                          cfg->backlog);
}

/* One line of the port file: "TCP INET: 11211", or INET6 for an IPv6 socket. */
static void port_line(FILE *f, const char *transport, int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return;
    if (ss.ss_family == AF_INET)
        fprintf(f, "%s INET: %u\n", transport, ntohs(((struct sockaddr_in *)&ss)->sin_port));
    else if (ss.ss_family == AF_INET6)
        fprintf(f, "%s INET6: %u\n", transport, ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
}

/*
 * MEMCACHED_PORT_FILENAME names a file to write the ports listened on to,
 * ephemeral ones (-p -1, -U -1) included: memcached's way for a test
 * harness to find its server.  As memcached does, one line per TCP
 * listener, then one per UDP address (the workers share each), written to
 * "<name>.lck" (appended to) and renamed to <name> once complete, so a
 * reader polling for <name> never sees half of it; nothing with -s.
 */
static void ports_write(const struct server *s) {
    const char *name = getenv("MEMCACHED_PORT_FILENAME");
    if (name == NULL || s->cfg->socketpath != NULL)
        return;
    size_t n = strlen(name) + sizeof(".lck");
    char *tmp = malloc(n);
    if (tmp == NULL)
        return;
    snprintf(tmp, n, "%s.lck", name);
    FILE *f = fopen(tmp, "a");
    if (f == NULL) {
        fprintf(stderr, "Failed to open \"%s\": %s\n", tmp, strerror(errno));
        free(tmp);
        return;
    }
    for (int i = 0; i < s->listeners.n; i++)
        if (!s->listeners.l[i].is_unix)
            port_line(f, "TCP", s->listeners.l[i].fd);
    for (int i = 0; s->nworkers > 0 && i < s->workers[0].nudp; i++)
        port_line(f, "UDP", s->workers[0].udp_fds[i]);
    fclose(f);
    rename(tmp, name);
    free(tmp);
}

/*
 * Background work: keeps the engine clock within a few milliseconds of
 * the wall clock and gives the engine bounded slices of hash-table growth
 * and expiry crawling, sleeping longer when there was nothing to do.
 */
static void *maint_main(void *arg) {
    struct server *s = arg;
    unsigned idle = 0;
    while (!atomic_load(&s->net.stop)) {
        atomic_fetch_add_explicit(&s->maint_loops, 1, memory_order_relaxed);
        uint32_t now = unix_now();
        if (now != engine_clock(s->engine))
            engine_clock_set(s->engine, now);
        unsigned done = engine_step(s->engine, 1000);
        idle = done ? 0 : (idle < 10 ? idle + 1 : idle);
        struct timespec ts = {0, (long)(done ? 1 : 5 * (idle + 1)) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/*
 * memcached counts descriptors, not clients, against -c: it keeps room for
 * its own (listeners, per-thread pipes and event bases, reserved_fds), so
 * with -c N and -t T it takes N - 8 - 4T clients (observed on 1.6.18 with
 * T = 1, 4 and 8).  We take the same number, so an operator's -c means
 * what it meant.
 */
static uint64_t conn_limit(const struct server *s) {
    long n = (long)s->cfg->maxconns - 8 - 4L * s->nworkers;
    return n > 0 ? (uint64_t)n : 0;
}

static int drop_privileges(const struct settings *cfg) {
    if (getuid() != 0 && geteuid() != 0)
        return 0;
    if (cfg->username == NULL || strcmp(cfg->username, "root") == 0)
        return 0;
    struct passwd *pw = getpwnam(cfg->username);
    if (pw == NULL) {
        fprintf(stderr, "can't find the user %s to switch to\n", cfg->username);
        return -1;
    }
    if (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0) {
        fprintf(stderr, "failed to assume identity of user %s\n", cfg->username);
        return -1;
    }
    return 0;
}

static int daemonize(void) {
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0)
        _exit(0);
    if (setsid() < 0)
        return -1;
    if (chdir("/") != 0)
        return -1;
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2)
            close(fd);
    }
    return 0;
}

int main(int argc, char **argv) {
    static struct settings cfg;
    int rc = settings_parse(&cfg, argc, argv, stderr);
    if (rc == SETTINGS_EXIT_OK)
        return 0;
    if (rc != 0)
        return rc;
    rc = settings_check_user(&cfg, stderr);
    if (rc != 0)
        return rc;

    /*
     * Signals are taken synchronously by the main loop; threads inherit the
     * mask.  Blocked from the start: a TERM that comes once the port is open
     * but before the loop runs (-k's mlockall can take a while) waits for
     * the loop instead of killing the process.
     */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGUSR1);
    sigaddset(&mask, SIGUSR2);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* -r: as large a core file as the hard limit allows; memcached exits when none can be had. */
    if (cfg.maxcore) {
        struct rlimit core;
        if (getrlimit(RLIMIT_CORE, &core) == 0) {
            struct rlimit want = {RLIM_INFINITY, RLIM_INFINITY};
            if (setrlimit(RLIMIT_CORE, &want) != 0) {
                want.rlim_cur = want.rlim_max = core.rlim_max;
                (void)setrlimit(RLIMIT_CORE, &want);
            }
        }
        if (getrlimit(RLIMIT_CORE, &core) != 0 || core.rlim_cur == 0) {
            fprintf(stderr, "failed to ensure corefile creation\n");
            return 71;  /* EX_OSERR */
        }
    }

    /*
     * Descriptors for -c: like memcached, the limit is -c itself (the
     * connection limit keeps room for our own descriptors below it).
     */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)cfg.maxconns) {
        rl.rlim_cur = (rlim_t)cfg.maxconns;
        if (rl.rlim_max < rl.rlim_cur)
            rl.rlim_max = rl.rlim_cur;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            fprintf(stderr, "failed to set rlimit for open files. Try starting as root or "
                            "requesting smaller maxconns value.\n");
            return 71;  /* EX_OSERR, as memcached */
        }
    }

    /* memcached sizes its item lock table by -t and refuses a hashpower that is not larger. */
    int lock_power = cfg.num_threads < 3 ? 10 : cfg.num_threads < 4 ? 11 : cfg.num_threads < 5 ? 12
                   : cfg.num_threads <= 10 ? 13 : cfg.num_threads <= 20 ? 14 : 15;
    if (cfg.hashpower_init > 0 && lock_power >= cfg.hashpower_init) {
        fprintf(stderr, "Hash table power size (%d) cannot be equal to or less than item lock "
                        "table (%d)\nItem lock table grows with `-t N` (worker threadcount)\n"
                        "Hash table grows with `-o hashpower=N` \n",
                cfg.hashpower_init, lock_power);
        return 1;
    }
    struct engine_config ec;
    engine_config_defaults(&ec);
    ec.mem_limit = cfg.maxbytes;
    ec.growth_factor = cfg.factor;
    ec.chunk_min = (uint32_t)cfg.chunk_size;
    ec.item_size_max = (uint32_t)cfg.item_size_max;
    ec.slab_chunk_max = (uint32_t)cfg.slab_chunk_size_max;
    ec.evict = cfg.evict_to_free;
    ec.use_cas = cfg.use_cas;
    if (cfg.hashpower_init > 0)
        ec.hashpower_init = (uint32_t)cfg.hashpower_init;
    ec.policy = cfg.evict_policy;
    ec.tune = server_lru_tune(&cfg);
    ec.no_expand = !cfg.hash_expand;
    ec.delete_hold = cfg.delete_hold;
    ec.seg = cfg.storage_seg;
    ec.crawl = server_crawl_runs(&cfg, cfg.lru_crawler);
    ec.reap = cfg.lru_maintainer_thread;
    ec.automove = cfg.slab_reassign ? cfg.slab_automove : 0;
    ec.automove_ratio = cfg.slab_automove_ratio;
    ec.automove_window = cfg.slab_automove_window;
    ec.temp_ttl = cfg.temp_lru ? cfg.temporary_ttl : -1;
    ec.lru_flat = !cfg.lru_segmented;
    extstore_config(&cfg, &ec.ext);
    char err[1024] = "";
    /* -e: what the last graceful stop saved, read before the table is sized (persist.h) */
    struct persist_meta saved;
    enum persist_check restart = PERSIST_NONE;
    /* the path as the stop will need it: -d changes the directory */
    char memfile[PATH_MAX] = "";
    if (cfg.memory_file != NULL) {
        size_t at = 0;
        if (cfg.memory_file[0] != '/' && getcwd(memfile, sizeof(memfile)) != NULL) {
            at = strlen(memfile);
            memfile[at++] = '/';
        }
        if (at + strlen(cfg.memory_file) >= sizeof(memfile)) {
            fprintf(stderr, "[restart] the memory file's path is too long\n");
            return 1;
        }
        memcpy(memfile + at, cfg.memory_file, strlen(cfg.memory_file) + 1);
        restart = persist_check(memfile, &ec, &saved, err, sizeof(err));
        if (restart == PERSIST_CORRUPT) {
            fprintf(stderr, "[restart] %s: not starting; remove it to start with a clean cache\n",
                    err);
            return 1;
        }
        if (restart != PERSIST_OK)
            fprintf(stderr, "[restart] %s, starting with a clean cache\n", err);
        else if (saved.hashpower > ec.hashpower_init)
            ec.hashpower_init = saved.hashpower;
    }
    /* before the engine: a bad certificate, SASL setup or password file stops cellard with
       nothing made */
    struct net_tls *tls = NULL;
    struct authfile *auth = NULL;
    /* -Z: the TLS context, its certificates read now (memcached stops on a bad one) */
    if (cfg.ssl_enabled) {
        const struct net_tls_config tc = {
            .chain_cert = cfg.ssl_chain_cert, .key = cfg.ssl_key, .keyformat = cfg.ssl_keyformat,
            .verify_mode = cfg.ssl_verify_mode, .ciphers = cfg.ssl_ciphers,
            .ca_cert = cfg.ssl_ca_cert, .wbuf_size = cfg.ssl_wbuf_size,
            .session_cache = cfg.ssl_session_cache, .kernel_tls = cfg.ssl_kernel_tls,
            .min_version = cfg.ssl_min_version,
        };
        if ((tls = net_tls_create(&tc, err, sizeof(err))) == NULL) {
            fprintf(stderr, "%s\n", err);
            return 64;  /* EX_USAGE, as memcached */
        }
    }
    /* -S: Cyrus SASL, its configuration read (memcached stops when it finds none) */
    struct server srv;
    memset(&srv, 0, sizeof(srv));
    atomic_store(&srv.verbose, cfg.verbose);
    if (cfg.sasl && (srv.sasl = sasl_open(&srv.verbose, err, sizeof(err))) == NULL) {
        fprintf(stderr, "%s\n", err);
        net_tls_destroy(&tls);
        return 1;
    }
    /* -Y: the user:password file, read again at SIGHUP */
    if (cfg.auth_file != NULL && (auth = authfile_open(cfg.auth_file, err, sizeof(err))) == NULL) {
        fprintf(stderr, "%s\n", err);
        net_tls_destroy(&tls);
        sasl_close(&srv.sasl);
        return 1;
    }
    struct engine *engine = engine_create(&ec, err, sizeof(err));
    if (engine == NULL) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    engine_clock_set(engine, unix_now());
    if (restart == PERSIST_OK) {
        uint64_t restored, dropped, t0 = clock_mono_ms();
        bool ok = persist_restore(engine, memfile, &saved, &restored, &dropped, err,
                                  sizeof(err));
        if (!ok)
            fprintf(stderr, "[restart] %s, starting with a clean cache\n", err);
        else if (err[0] != '\0')
            fprintf(stderr, "[restart] warning: %s\n", err);
        if (ok && (dropped > 0 || cfg.verbose))
            fprintf(stderr, "[restart] restored %" PRIu64 " items saved %" PRId64
                    " seconds ago in %.3f s; %" PRIu64 " found no memory\n", restored,
                    (int64_t)unix_now() - saved.saved, (double)(clock_mono_ms() - t0) / 1e3,
                    dropped);
    }

    srv.cfg = &cfg;
    srv.engine = engine;
    srv.nworkers = cfg.num_threads;
    srv.net.tls = tls;
    srv.listeners.tls = tls != NULL;
    srv.auth = auth;
    srv.started = engine_clock(engine);
    atomic_store(&srv.verbose, cfg.verbose);
    atomic_store(&srv.crawler_on, cfg.lru_crawler);
    atomic_store(&srv.crawler_sleep, (uint32_t)cfg.lru_crawler_sleep);
    atomic_store(&srv.crawler_tocrawl, cfg.lru_crawler_tocrawl);
    atomic_store(&srv.accepting, true);
    pthread_mutex_init(&srv.stats_lock, NULL);
    pthread_mutex_init(&srv.tune_lock, NULL);
    if (detail_init(&srv) != 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    /* -o io: io_uring where it works (auto says so when it falls back), else epoll. */
    if (net_io_choose(&srv.net, cfg.io, "cellard", "-o io=uring") < 0)
        return 1;
    cfg.io = srv.net.io == NET_IO_URING ? "uring" : "epoll";
    srv.net.ring_bufs = cfg.io_bufs;

    if (worker_init_all(&srv) < 0) {
        fprintf(stderr, "failed to start worker threads\n");
        return 1;
    }
    if (open_listeners(&srv) < 0) {
        fprintf(stderr, "failed to listen\n");
        return 71;
    }
    ports_write(&srv);
    if (drop_privileges(&cfg) < 0)
        return 71;
    /* the stop writes as the user that runs: find out now, not then */
    if (cfg.memory_file != NULL && !persist_usable(memfile, err, sizeof(err))) {
        fprintf(stderr, "[restart] %s\n", err);
        return 1;
    }
    if (cfg.daemonize && daemonize() < 0) {
        fprintf(stderr, "failed to daemon() in order to daemonize\n");
        return 1;
    }
    /* -k: keep every page in memory; memcached warns and goes on when it cannot. */
    if (cfg.lock_memory && mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
        fprintf(stderr, "warning: -k invalid, mlockall() failed: %s\n", strerror(errno));
    if (cfg.pid_file != NULL) {
        FILE *f = fopen(cfg.pid_file, "w");
        if (f == NULL) {
            fprintf(stderr, "Could not open the pid file %s for writing: %s\n", cfg.pid_file,
                    strerror(errno));
        } else {
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
        }
    }

    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

    if (cfg.track_sizes && cfg.use_cas && !stats_sizes_start(&srv)) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    if (watch_init(&srv) != 0) {
        fprintf(stderr, "failed to start the watch thread\n");
        return 1;
    }
    if (worker_start_all(&srv) < 0) {
        fprintf(stderr, "failed to start worker threads\n");
        return 1;
    }
    srv.fixed_conns = (uint64_t)srv.listeners.n;
    for (int i = 0; i < srv.nworkers; i++)
        srv.fixed_conns += (uint64_t)srv.workers[i].nudp;
    atomic_store(&srv.net.total_conns, srv.fixed_conns);
    pthread_t maint;
    pthread_create(&maint, NULL, maint_main, &srv);
    rc = 0;
    bool save = false;
    struct evloop *loop = NULL;
    struct httpd *metrics = NULL;
    /* -o ext_path: the thread that moves values to flash (extstore.c) */
    if (extstore_start(&srv) != 0) {
        fprintf(stderr, "failed to start the flash writer thread\n");
        atomic_store(&srv.net.stop, true);
        rc = 1;
        goto stop;
    }
    /*
     * --metrics: its own thread (core/httpd.c) answers GET /metrics with
     * metrics.c's rendering of `stats`, now that everything it reads exists.
     * FIXME: it binds after -d and -u, so with -d a refusal goes where the
     * daemon's stderr goes, and a port below 1024 needs root kept.
     */
    if (cfg.metrics != NULL) {
        char err[300];
        metrics = httpd_create(cfg.metrics, "/metrics", metrics_render, &srv, err, sizeof(err));
        if (metrics == NULL) {
            /* everything started stops as at a signal (the pid file goes too) */
            fprintf(stderr, "cellard: --metrics %s\n", err);
            atomic_store(&srv.net.stop, true);
            rc = 71;
            goto stop;
        }
    }

    loop = evloop_create();
    evloop_add(loop, sfd, EV_READ, &sfd);
    for (int i = 0; i < srv.listeners.n; i++)
        evloop_add(loop, srv.listeners.l[i].fd, EV_READ, &srv.listeners.l[i]);
    const struct net_accept_rules rules = {conn_limit(&srv), "ERROR Too many open connections\r\n"};
    struct ev_fired ev[64];
    while (!atomic_load(&srv.net.stop)) {
        int n = evloop_wait(loop, ev, 64, 500);
        for (int i = 0; i < n; i++) {
            if (ev[i].ptr == &sfd) {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                    if (cfg.verbose)
                        fprintf(stderr, "Signal handled: %s.\n", strsignal((int)si.ssi_signo));
                    /* memcached's SIGHUP: the authentication file read again */
                    if (si.ssi_signo == SIGHUP) {
                        if (srv.auth != NULL && !authfile_reload(srv.auth, err, sizeof(err)))
                            fprintf(stderr, "%s; keeping the one read before\n", err);
                        continue;
                    }
                    /* memcached's graceful stop (also `shutdown graceful`): -e saves */
                    if (si.ssi_signo == SIGUSR1)
                        save = cfg.memory_file != NULL;
                    atomic_store(&srv.net.stop, true);
                }
            } else if (ev[i].ptr != NULL) {
                net_accept_all(&srv.net, ev[i].ptr, &rules);
            }
        }
    }

stop:
    httpd_destroy(&metrics);
    net_listeners_close(&srv.listeners);
    watch_stop(&srv);
    worker_stop_all(&srv);
    pthread_join(maint, NULL);
    extstore_stop(&srv);
    if (save) {
        uint64_t items, t0 = clock_mono_ms();
        /* a part a worker thread: the workers are stopped, their cores are free */
        if (!persist_save(engine, memfile, (unsigned)cfg.num_threads, &items, err,
                          sizeof(err))) {
            fprintf(stderr, "[restart] %s: the cache is not saved\n", err);
            rc = 1;
        } else if (cfg.verbose) {
            fprintf(stderr, "[restart] saved %" PRIu64 " items to %s in %.3f s\n", items,
                    memfile, (double)(clock_mono_ms() - t0) / 1e3);
        }
    }
    evloop_destroy(&loop);
    close(sfd);
    watch_free(&srv);
    engine_destroy(&srv.engine);
    detail_free(&srv);
    authfile_free(&srv.auth);
    sasl_close(&srv.sasl);
    net_tls_destroy(&srv.net.tls);
    pthread_mutex_destroy(&srv.stats_lock);
    pthread_mutex_destroy(&srv.tune_lock);
    if (cfg.pid_file != NULL)
        unlink(cfg.pid_file);
    settings_deinit(&cfg);
    return rc;
}
