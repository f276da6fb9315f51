/*
 * settings.h -- cellard's command line: memcached 1.6.18's options, parsed
 * into one struct, printed back by `-h` and by `stats settings`.
 *
 * This module owns struct settings: every option memcached 1.6.18 takes
 * (same letters, same long names, same -o suboptions, same messages and
 * exit codes when a value is refused), every value memcached prints under
 * `stats settings` (same names, same order, same formatting), and the
 * options cellar adds, `-o evict_policy=NAME` and `-o delete_hold` (the
 * latter not in `stats settings`).  Each option is declared once, in a
 * table that drives parsing, `-h` and the defaults `-h` shows (settings.c
 * for the letters, settings_ext.c for -o's suboptions); a third table, in
 * settings_show.c, drives `stats settings`.
 *
 * Deliberate differences from memcached, each for a reason:
 *   - cellard listens on 127.0.0.1 unless -l says otherwise (memcached: all
 *     interfaces), so a fresh server is not open to the network.
 *   - Options cellard accepts but does not act on yet print one warning
 *     line each; `-h` marks them.
 *   - Numbers are read like memcached reads them (atoi: leading digits,
 *     the rest ignored), except that a value that does not fit is an error
 *     where memcached silently wraps, and a few values that make memcached
 *     hang or misbehave (-R <= 0, -n <= 0, -m < 0, ports outside -1..65535)
 *     are refused.
 *   - -o ext_path: a file too small for one page (what a size without a
 *     unit makes: memcached starts and never stores there), a page size
 *     of 0 (memcached divides by zero) and more than
 *     SETTINGS_EXT_MAX_FILES files are refused (exit 1); ext_compact_under
 *     and ext_drop_under left at 0 become a quarter of all the files'
 *     pages each (memcached: of the last file's, and drop_under only along
 *     with compact_under); -o storage=seg with ext_path is refused.
 *   - -V prints "cellard 1.6.18": the second word is the memcached release
 *     whose behaviour we follow, which is what scripts that split
 *     `memcached -V` read, while the first word does not pretend to be
 *     memcached.  `-h` names cellar's own version on its first line.
 *
 * Threading: settings_parse() uses getopt_long(), whose state is global to
 * libc, so call it from one thread at a time (main() does, once).  main()
 * then sets io to the network core it started, before any other thread
 * runs, and from there the server shares one struct between its threads.
 * Every field is read-only from then on except these, which clients change
 * at run time, each write made under the server's tune_lock (struct server,
 * server.h); `stats settings` takes the same lock to read them, and so must
 * any other reader after start:
 *   - maxbytes: `cache_memlimit` (server/dispatch.c), which also sets the
 *     engine's limit inside the lock;
 *   - slab_automove, slab_automove_ratio: `slabs automove` (server/tune.c);
 *   - hot_lru_pct, warm_lru_pct, hot_max_factor, warm_max_factor:
 *     `lru tune`; lru_segmented: `lru mode`; temp_lru, temporary_ttl:
 *     `lru temp_ttl` (all server/tune.c);
 *   - ext_item_size, ext_item_age, ext_low_ttl, ext_recache_rate,
 *     ext_compact_under, ext_drop_under, ext_max_sleep, ext_max_frag,
 *     ext_drop_unread: `extstore` (server/extstore.c), which also hands
 *     them to the engine's flash tier inside the lock.
 * The other values memcached lets clients change are never written here:
 * verbose (`verbosity`), detail_enabled (`stats detail on|off`),
 * lru_crawler, lru_crawler_sleep and lru_crawler_tocrawl (`lru_crawler`)
 * only seed atomics of struct server at start, which those commands
 * change, and `stats settings` prints the atomics in their place (its emit
 * callback substitutes them).  oldest_live is not written either: the
 * flush_all point lives in the engine, so `stats settings` oldest stays 0.
 *
 * Memory: strings in the struct are either static defaults or owned heap
 * copies; settings_deinit() frees the owned ones.  Nothing else allocates.
 */
#ifndef CELLAR_SERVER_SETTINGS_H
#define CELLAR_SERVER_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifndef CELLAR_MC_VERSION
#define CELLAR_MC_VERSION "1.6.18"      /* the memcached release we answer as */
#endif
#ifndef CELLAR_VERSION
#define CELLAR_VERSION "0.1.0"
#endif

#define SETTINGS_EXIT_OK (-1)           /* -h, -V or -i was served: exit 0 */
#define SETTINGS_EX_USAGE 64            /* sysexits' EX_USAGE, as memcached */
#define SETTINGS_DEFAULT_INTER "127.0.0.1"
#define SETTINGS_DEFAULT_POLICY "slru"       /* memcached 1.6: segmented LRU */
#define SETTINGS_FLAT_POLICY "lru"           /* with -o no_lru_maintainer or no_modern */
#define SETTINGS_SLAB_PAGE_SIZE (1024 * 1024)
#define SETTINGS_MAX_SLAB_SIZES 63      /* -o slab_sizes entries, as memcached */
#define SETTINGS_EXT_MAX_FILES 16       /* -o ext_path files (storage/flash.h's FLASH_MAX_FILES) */
#define SETTINGS_EXT_MAX_PAGES 65534    /* pages of all of them together, as memcached */

enum settings_protocol {
    SETTINGS_PROTO_AUTO = 0,            /* -B auto: first byte decides */
    SETTINGS_PROTO_ASCII,
    SETTINGS_PROTO_BINARY,
};

enum settings_hash {
    SETTINGS_HASH_MURMUR3 = 0,
    SETTINGS_HASH_JENKINS,
    SETTINGS_HASH_XXH3,
};

struct settings {
    /* Listening (-p -U -l -s -a -b -B -c -t -R). */
    int port;                   /* -p tcpport; 0 off, -1 ephemeral (11211) */
    int udpport;                /* -U; 0 off (0) */
    const char *inter;          /* -l, comma list as given ("127.0.0.1") */
    const char *socketpath;     /* -s; NULL when not used */
    int access;                 /* -a umask of the unix socket (0700) */
    int backlog;                /* -b tcp_backlog (1024) */
    enum settings_protocol binding_protocol; /* -B */
    int maxconns;               /* -c (1024) */
    bool maxconns_fast;         /* -o maxconns_fast: reject over the limit (yes) */
    int num_threads;            /* -t workers (4) */
    int num_threads_per_udp;    /* derived: 1 when -l lists several, else -t */
    int reqs_per_event;         /* -R (20) */
    int idle_timeout;           /* -o idle_timeout seconds, 0 never (0) */
    unsigned read_buf_mem_limit;/* -o read_buf_mem_limit, bytes, 0 none (0) */
    unsigned sock_cookie_id;    /* -o sock_cookie_id (0) */

    /* Memory and items (-m -M -f -n -I -C -k -L -e). */
    size_t maxbytes;            /* -m, bytes (64 MiB); run time: tune_lock */
    bool evict_to_free;         /* false with -M: "evictions off" */
    double factor;              /* -f growth_factor (1.25) */
    int chunk_size;             /* -n (48) */
    int item_size_max;          /* -I, bytes (1 MiB) */
    int slab_chunk_size_max;    /* -o slab_chunk_max, bytes (512 KiB) */
    int slab_page_size;         /* fixed: 1 MiB */
    unsigned slab_sizes[SETTINGS_MAX_SLAB_SIZES]; /* -o slab_sizes=a-b-c */
    int nslab_sizes;            /* entries in slab_sizes; 0: use -f */
    bool use_cas;               /* false with -C */
    bool lock_memory;           /* -k */
    bool large_pages;           /* -L */
    const char *memory_file;    /* -e; NULL when not used */
    const char *evict_policy;   /* -o evict_policy (cellar; "slru", or "lru" when
                                   lru_segmented is turned off) */
    bool storage_seg;           /* -o storage=seg (cellar): the segment back end */
    const char *io;             /* -o io (cellar): "auto", "uring" or "epoll" (a literal);
                                   main() puts the one in use here */
    unsigned io_bufs;           /* -o io_bufs (cellar): io_uring receive buffers a worker
                                   (0: the network core's default) */
    const char *metrics;        /* --metrics / -o metrics (cellar): HOST:PORT of the
                                   Prometheus /metrics page; NULL: off */
    bool delete_hold;           /* -o delete_hold (cellar): "delete <key> <seconds>"
                                   refuses add of the key for that long */

    /* Hash table. */
    int hashpower_init;         /* -o hashpower; 0 = engine default (0) */
    bool hash_expand;           /* false with -o no_hashexpand */
    enum settings_hash hash_algorithm; /* -o hash_algorithm (murmur3) */

    /* Slab mover, LRU maintainer and crawler (-o ...). */
    bool slab_reassign;         /* (yes) */
    int slab_automove;          /* 0, 1 or 2 (1); run time: tune_lock */
    double slab_automove_ratio; /* (0.80); run time: tune_lock */
    unsigned slab_automove_window; /* (30) */
    bool lru_crawler;           /* (yes) */
    int lru_crawler_sleep;      /* microseconds (100) */
    uint32_t lru_crawler_tocrawl; /* 0 = unlimited (0) */
    bool lru_maintainer_thread; /* (yes) */
    bool lru_segmented;         /* hot/warm/cold (yes); run time: tune_lock */
    int hot_lru_pct;            /* (20); run time: tune_lock */
    int warm_lru_pct;           /* (40); run time: tune_lock */
    double hot_max_factor;      /* (0.20); run time: tune_lock */
    double warm_max_factor;     /* (2.00); run time: tune_lock */
    bool temp_lru;              /* set by -o temporary_ttl (no); run time: tune_lock */
    int temporary_ttl;          /* (61); run time: tune_lock */
    int tail_repair_time;       /* seconds, 0 off (0) */
    bool track_sizes;           /* -o track_sizes (no) */
    bool inline_ascii_response; /* (no) */

    /* The flash tier (-o ext_*: memcached's extstore).  Off without ext_path. */
    const char *ext_path[SETTINGS_EXT_MAX_FILES]; /* the files, in the order given */
    uint64_t ext_size[SETTINGS_EXT_MAX_FILES];    /* bytes of each (FILE:SIZE) */
    unsigned ext_nfiles;        /* 0: no flash tier */
    unsigned ext_pages;         /* derived: pages of all files together */
    unsigned ext_page_size;     /* bytes, given in megabytes (64 MB) */
    unsigned ext_wbuf_size;     /* bytes, given in megabytes (4 MB) */
    unsigned ext_threads;       /* (1) */
    unsigned ext_io_depth;      /* (1) */
    unsigned ext_item_size;     /* smaller values stay in memory (512); run time: tune_lock */
    unsigned ext_item_age;      /* seconds idle before a value goes (UINT_MAX: only when
                                   memory is short); run time: tune_lock */
    unsigned ext_low_ttl;       /* (0); run time: tune_lock */
    unsigned ext_recache_rate;  /* (2000); run time: tune_lock */
    unsigned ext_compact_under; /* pages; 0: a quarter of them once known; run time: tune_lock */
    unsigned ext_drop_under;    /* pages; 0: a quarter of them once known; run time: tune_lock */
    unsigned ext_max_sleep;     /* microseconds (1000000); run time: tune_lock */
    double ext_max_frag;        /* (0.80); run time: tune_lock */
    bool ext_drop_unread;       /* (no); run time: tune_lock */
    double slab_automove_freeratio; /* (0.010; recorded, not acted on) */

    /* Logging and introspection (-v -D -X -W). */
    int verbose;                /* -v count */
    unsigned watcher_logbuf_size; /* bytes (256 KiB) */
    unsigned worker_logbuf_size;  /* bytes (64 KiB) */
    char prefix_delimiter;      /* -D (':') */
    bool detail_enabled;        /* set by -D */
    bool dump_enabled;          /* false with -X */
    bool watch_enabled;         /* false with -W */
    unsigned long oldest_live;  /* `stats settings` oldest; always 0 (see Threading) */

    /* Commands and access (-A -F -S -Y). */
    bool shutdown_command;      /* -A */
    bool flush_enabled;         /* false with -F */
    bool sasl;                  /* -S: binary-protocol SASL authentication (sasl.c) */
    const char *auth_file;      /* -Y: the user:password file (auth.c); NULL: none */

    /* TLS (-Z, -o ssl_*: net/tls.h's settings, in memcached's units). */
    bool ssl_enabled;           /* -Z */
    const char *ssl_chain_cert, *ssl_key, *ssl_ciphers, *ssl_ca_cert;
    int ssl_verify_mode;        /* 0..3 */
    int ssl_keyformat;          /* 1: PEM */
    unsigned ssl_wbuf_size;     /* bytes (given in kilobytes) */
    bool ssl_session_cache, ssl_kernel_tls;
    int ssl_min_version;        /* 0..3: TLS 1.0 .. 1.3 */

    /* The process (-d -P -u -r -N). */
    bool daemonize;             /* -d */
    const char *pid_file;       /* -P */
    const char *username;       /* -u */
    bool maxcore;               /* -r: raise the core file limit */
    bool drop_privileges;       /* -o drop_privileges (no) */
    int num_napi_ids;           /* -N; 0 unset */
};

/* Fills in the defaults (listed above).  Allocates nothing. */
void settings_init(struct settings *s);

/* Frees the strings parsing copied.  Safe after any settings_parse()
 * result, and on a struct that was only initialised. */
void settings_deinit(struct settings *s);

/*
 * Initialises s, then reads argv as memcached 1.6.18 does.  Returns 0 to
 * run; SETTINGS_EXIT_OK when -h, -V or -i printed their text on stdout
 * (exit 0); otherwise memcached's exit code for the refusal (1 or 64),
 * after writing memcached's message to err.  Warnings (options accepted
 * but not implemented, too many threads) also go to err.  argv may be
 * permuted, as getopt_long() does.
 */
int settings_parse(struct settings *s, int argc, char **argv, FILE *err);

/*
 * memcached refuses to run as root without -u; the server calls this
 * after settings_parse(), before binding anything.  Returns 0, or
 * SETTINGS_EX_USAGE after writing memcached's message to err.  The _ids
 * form takes the ids to judge, so it can be tested as any user.
 */
int settings_check_user(const struct settings *s, FILE *err);
int settings_check_user_ids(const struct settings *s, uid_t uid, uid_t euid, FILE *err);

/* Writes the `-h` text: memcached's layout, cellard's defaults. */
void settings_usage(FILE *out);

/*
 * Calls emit once per `stats settings` line, in memcached 1.6.18's order
 * and formatting (as Debian's build, with extstore and TLS, prints them),
 * then once each for cellar's evict_policy, delete_hold and io.  name and
 * value are valid only during the call.
 */
void settings_each_stat(const struct settings *s,
                        void (*emit)(void *ctx, const char *name, const char *value),
                        void *ctx);

#endif
