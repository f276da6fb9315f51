/*
 * test_settings.c -- cellard's command line against memcached 1.6.18.
 *
 * The refusal rows hold what Debian's memcached 1.6.18 printed on stderr,
 * and the exit code it returned, for the same arguments (it was run as
 * root with -u root added, which changes nothing before the root check).
 * The stats rows are its `stats settings` answer.  Where cellard answers
 * differently on purpose, the row says what memcached does.
 */
#include "harness.h"
#include "server/settings.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXARGS 64

/* The result of one settings_parse(): its code, what it wrote to err, and
 * what it wrote to stdout (only -h, -V and -i write there). */
struct run {
    struct settings s;
    int rc;
    char err[8192];
    char out[32768];
};

/* Reads a stream written so far into buf. */
static void slurp(FILE *f, char *buf, size_t n) {
    fflush(f);
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
}

/*
 * Parses "cellard" followed by the NULL-terminated arguments, with err
 * and stdout both captured.  The struct is left parsed; call done().
 */
static struct run *parse(const char *first, ...) {
    static struct run r;
    char *argv[MAXARGS];
    char store[MAXARGS][512];
    int argc = 0;
    argv[argc++] = strcpy(store[0], "cellard");
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a != NULL && argc < MAXARGS - 1; a = va_arg(ap, const char *)) {
        snprintf(store[argc], sizeof(store[argc]), "%s", a);
        argv[argc] = store[argc];
        argc++;
    }
    va_end(ap);
    argv[argc] = NULL;

    FILE *err = tmpfile();
    FILE *out = tmpfile();
    fflush(stdout);
    int saved = dup(1);
    dup2(fileno(out), 1);
    r.rc = settings_parse(&r.s, argc, argv, err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    slurp(err, r.err, sizeof(r.err));
    slurp(out, r.out, sizeof(r.out));
    fclose(err);
    fclose(out);
    return &r;
}

#define P(...) parse(__VA_ARGS__, (const char *)NULL)
#define NOARGS (const char *)NULL

static void done(struct run *r) {
    settings_deinit(&r->s);
}

/* `stats settings` into one string, "name value\n" per line. */
struct statbuf {
    char text[8192];
    size_t len;
};

static void emit(void *ctx, const char *name, const char *value) {
    struct statbuf *b = ctx;
    b->len += (size_t)snprintf(b->text + b->len, sizeof(b->text) - b->len, "%s %s\n",
                               name, value);
}

static const char *stats_of(const struct settings *s) {
    static struct statbuf b;
    b.len = 0;
    b.text[0] = '\0';
    settings_each_stat(s, emit, &b);
    return b.text;
}

/* The value of one `stats settings` line. */
static const char *stat_of(const struct settings *s, const char *name) {
    static char v[256];
    const char *all = stats_of(s);
    size_t n = strlen(name);
    for (const char *l = all; *l != '\0'; l = strchr(l, '\n') + 1) {
        if (strncmp(l, name, n) == 0 && l[n] == ' ') {
            size_t len = strcspn(l + n + 1, "\n");
            memcpy(v, l + n + 1, len);
            v[len] = '\0';
            return v;
        }
    }
    return "(missing)";
}

/* ------------------------------------------------------------------ */

TEST(defaults_from_init_and_from_parse) {
    struct settings s;
    settings_init(&s);
    ASSERT_EQ(s.port, 11211);
    ASSERT_EQ(s.udpport, 0);
    ASSERT_STR(s.inter, "127.0.0.1");
    ASSERT(s.socketpath == NULL);
    ASSERT_EQ(s.access, 0700);
    ASSERT_EQ(s.backlog, 1024);
    ASSERT_EQ(s.binding_protocol, SETTINGS_PROTO_AUTO);
    ASSERT_EQ(s.maxconns, 1024);
    ASSERT_EQ(s.num_threads, 4);
    ASSERT_EQ(s.reqs_per_event, 20);
    ASSERT_U64(s.maxbytes, 64ull << 20);
    ASSERT(s.evict_to_free);
    ASSERT(s.factor == 1.25);
    ASSERT_EQ(s.chunk_size, 48);
    ASSERT_EQ(s.item_size_max, 1 << 20);
    ASSERT_EQ(s.slab_chunk_size_max, 1 << 19);
    ASSERT_EQ(s.slab_page_size, 1 << 20);
    ASSERT(s.use_cas);
    ASSERT_STR(s.evict_policy, "slru");
    ASSERT_EQ(s.hashpower_init, 0);
    ASSERT_EQ(s.verbose, 0);
    ASSERT_EQ(s.prefix_delimiter, ':');
    ASSERT(!s.detail_enabled && s.flush_enabled && s.dump_enabled && s.watch_enabled);
    ASSERT(!s.shutdown_command && !s.daemonize && s.username == NULL && s.pid_file == NULL);
    settings_deinit(&s);

    struct run *r = P(NOARGS);
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(r->err, "");
    ASSERT_EQ(r->s.port, 11211);
    ASSERT_STR(r->s.inter, "127.0.0.1");
    ASSERT_EQ(r->s.num_threads_per_udp, 4);
    done(r);
}

/*
 * memcached 1.6.18's `stats settings` for `memcached -u root -U 0 -p 11211`
 * (Debian's build, with its ext_* and ssl_* lines: extstore and TLS are
 * built in and off).  Ours differs in inter (memcached: NULL, all
 * interfaces) and adds evict_policy, delete_hold and io.
 */
static const char default_stats[] =
    "maxbytes 67108864\n" "maxconns 1024\n" "tcpport 11211\n" "udpport 0\n"
    "inter 127.0.0.1\n"                     /* memcached: NULL */
    "verbosity 0\n" "oldest 0\n" "evictions on\n" "domain_socket NULL\n" "umask 700\n"
    "shutdown_command no\n" "growth_factor 1.25\n" "chunk_size 48\n" "num_threads 4\n"
    "num_threads_per_udp 4\n" "stat_key_prefix :\n" "detail_enabled no\n"
    "reqs_per_event 20\n" "cas_enabled yes\n" "tcp_backlog 1024\n"
    "binding_protocol auto-negotiate\n" "auth_enabled_sasl no\n" "auth_enabled_ascii no\n"
    "item_size_max 1048576\n" "maxconns_fast yes\n" "hashpower_init 0\n"
    "slab_reassign yes\n" "slab_automove 1\n" "slab_automove_ratio 0.80\n"
    "slab_automove_window 30\n" "slab_chunk_max 524288\n" "lru_crawler yes\n"
    "lru_crawler_sleep 100\n" "lru_crawler_tocrawl 0\n" "tail_repair_time 0\n"
    "flush_enabled yes\n" "dump_enabled yes\n" "hash_algorithm murmur3\n"
    "lru_maintainer_thread yes\n" "lru_segmented yes\n" "hot_lru_pct 20\n"
    "warm_lru_pct 40\n" "hot_max_factor 0.20\n" "warm_max_factor 2.00\n" "temp_lru no\n"
    "temporary_ttl 61\n" "idle_timeout 0\n" "watcher_logbuf_size 262144\n"
    "worker_logbuf_size 65536\n" "read_buf_mem_limit 0\n" "track_sizes no\n"
    "inline_ascii_response no\n" "ext_item_size 512\n" "ext_item_age 4294967295\n"
    "ext_low_ttl 0\n" "ext_recache_rate 2000\n" "ext_wbuf_size 4194304\n"
    "ext_compact_under 0\n" "ext_drop_under 0\n" "ext_max_sleep 1000000\n"
    "ext_max_frag 0.80\n" "slab_automove_freeratio 0.010\n" "ext_drop_unread no\n"
    "ssl_enabled no\n" "ssl_chain_cert (null)\n" "ssl_key (null)\n" "ssl_verify_mode 0\n"
    "ssl_keyformat 1\n" "ssl_ciphers NULL\n" "ssl_ca_cert NULL\n" "ssl_wbuf_size 16384\n"
    "ssl_session_cache no\n" "ssl_kernel_tls no\n" "ssl_min_version tlsv1.2\n"
    "num_napi_ids (null)\n" "memory_file (null)\n"
    "evict_policy slru\n" "delete_hold no\n" "io auto\n"; /* cellar's three extra lines
                                                          (io: main() puts the one in use) */

TEST(stats_settings_defaults_match_memcached) {
    struct run *r = P(NOARGS);
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(stats_of(&r->s), default_stats);
    done(r);
}

/* Options memcached shows in `stats settings`, each with its line there. */
TEST(stats_settings_follow_options) {
    struct run *r = P("-X", "-F", "-A", "-M", "-C", "-D", "/", "-vv", "-R", "5", "-b", "99",
                      "-c", "99", "-t", "3", "-n", "64", "-f", "1.5", "-a", "640", "-B", "ascii",
                      "-e", "/tmp/mfile", "-s", "/tmp/sock", "-m", "128", "-I", "2m");
    ASSERT_EQ(r->rc, 0);
    const struct settings *s = &r->s;
    ASSERT_STR(stat_of(s, "maxconns"), "99");
    ASSERT_STR(stat_of(s, "verbosity"), "2");
    ASSERT_STR(stat_of(s, "evictions"), "off");
    ASSERT_STR(stat_of(s, "domain_socket"), "/tmp/sock");
    ASSERT_STR(stat_of(s, "umask"), "640");
    ASSERT_STR(stat_of(s, "shutdown_command"), "yes");
    ASSERT_STR(stat_of(s, "growth_factor"), "1.50");
    ASSERT_STR(stat_of(s, "chunk_size"), "64");
    ASSERT_STR(stat_of(s, "num_threads"), "3");
    ASSERT_STR(stat_of(s, "num_threads_per_udp"), "3");
    ASSERT_STR(stat_of(s, "stat_key_prefix"), "/");
    ASSERT_STR(stat_of(s, "detail_enabled"), "yes");
    ASSERT_STR(stat_of(s, "reqs_per_event"), "5");
    ASSERT_STR(stat_of(s, "cas_enabled"), "no");
    ASSERT_STR(stat_of(s, "tcp_backlog"), "99");
    ASSERT_STR(stat_of(s, "binding_protocol"), "ascii");
    ASSERT_STR(stat_of(s, "flush_enabled"), "no");
    ASSERT_STR(stat_of(s, "dump_enabled"), "no");
    ASSERT_STR(stat_of(s, "memory_file"), "/tmp/mfile");
    ASSERT_STR(stat_of(s, "maxbytes"), "134217728");
    ASSERT_STR(stat_of(s, "item_size_max"), "2097152");
    ASSERT_STR(stat_of(s, "slab_chunk_max"), "524288");
    done(r);

    /* Observed: growth_factor rounds as printf does ("-f 2.555" -> 2.56). */
    r = P("-f", "2.555");
    ASSERT_STR(stat_of(&r->s, "growth_factor"), "2.56");
    done(r);
}

TEST(each_option_parses) {
    struct run *r = P("-p", "12345", "-U", "12346", "-l", "10.0.0.1", "-d", "-u", "nobody",
                      "-P", "/tmp/pid", "-k", "-L", "-r", "-W", "-N", "2", "-vvv");
    ASSERT_EQ(r->rc, 0);
    ASSERT_EQ(r->s.port, 12345);
    ASSERT_EQ(r->s.udpport, 12346);
    ASSERT_STR(r->s.inter, "10.0.0.1");
    ASSERT(r->s.daemonize);
    ASSERT_STR(r->s.username, "nobody");
    ASSERT_STR(r->s.pid_file, "/tmp/pid");
    ASSERT(r->s.lock_memory && r->s.large_pages && r->s.maxcore && !r->s.watch_enabled);
    ASSERT_EQ(r->s.num_napi_ids, 2);
    ASSERT_STR(stat_of(&r->s, "num_napi_ids"), "2");
    ASSERT_EQ(r->s.verbose, 3);
    done(r);

    /* Long forms, abbreviations, --verbose=N (counts once, as memcached). */
    r = P("--port=5", "--udp-port", "6", "--listen=::1", "--daemon", "--user=u", "--pidfile=p",
          "--memory-lim=100", "--disable-evictions", "--conn-limit=7", "--lock-memory",
          "--verbose=5", "--verbose", "--slab-growth-factor=1.3", "--slab-min-size=60",
          "--threads=6", "--max-reqs-per-event=9", "--disable-cas", "--listen-backlog=77",
          "--protocol=binary", "--max-item-size=2m", "--disable-flush-all",
          "--disable-dumping", "--disable-watch", "--unix-mask=600",
          "--extended=track_sizes", "--enable-shutdown", "--unix-socket=/s");
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(r->err, "");
    ASSERT_EQ(r->s.port, 5);
    ASSERT_EQ(r->s.udpport, 6);
    ASSERT_STR(r->s.inter, "::1");
    ASSERT_U64(r->s.maxbytes, 100ull << 20);
    ASSERT(!r->s.evict_to_free && !r->s.use_cas && !r->s.flush_enabled && !r->s.dump_enabled);
    ASSERT_EQ(r->s.maxconns, 7);
    ASSERT_EQ(r->s.verbose, 2);
    ASSERT(r->s.factor == 1.3);
    ASSERT_EQ(r->s.chunk_size, 60);
    ASSERT_EQ(r->s.num_threads, 6);
    ASSERT_EQ(r->s.reqs_per_event, 9);
    ASSERT_EQ(r->s.backlog, 77);
    ASSERT_EQ(r->s.binding_protocol, SETTINGS_PROTO_BINARY);
    ASSERT_EQ(r->s.item_size_max, 2 << 20);
    ASSERT_EQ(r->s.access, 0600);
    ASSERT(r->s.track_sizes && r->s.shutdown_command);
    ASSERT_STR(r->s.socketpath, "/s");
    done(r);
}

/* atoi() readings memcached accepts, with the values it showed. */
TEST(numbers_read_like_memcached) {
    struct run *r = P("-t", "1x", "-b", "abc", "-a", "999", "-m", "64k", "-D", "ab");
    ASSERT_EQ(r->rc, 0);
    ASSERT_EQ(r->s.num_threads, 1);
    ASSERT_EQ(r->s.backlog, 0);
    ASSERT_EQ(r->s.access, 0);              /* strtol(, 8) of "999" */
    ASSERT_U64(r->s.maxbytes, 64ull << 20); /* "64k" is 64 MB to memcached */
    ASSERT_EQ(r->s.prefix_delimiter, 'a');
    done(r);

    r = P("-b", "-1", "-p", "abc", "-o", "slab_automove=1=2,idle_timeout=abc");
    ASSERT_EQ(r->rc, 0);
    ASSERT_EQ(r->s.backlog, -1);
    ASSERT_EQ(r->s.port, 0);
    ASSERT_EQ(r->s.slab_automove, 1);
    ASSERT_EQ(r->s.idle_timeout, 0);
    done(r);
}

TEST(item_size_suffixes) {
    static const struct {
        const char *arg;
        int want;
    } rows[] = {
        {"2k", 2048}, {"2K", 2048}, {"2m", 2 << 20}, {"2M", 2 << 20}, {"1048576", 1 << 20},
        {"1536k", 1536 << 10}, {"1.5m", 1 << 20}, {"2 m", 2 << 20}, {"+2m", 2 << 20},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct run *r = P("-m", "128", "-I", rows[i].arg, "-o", "slab_chunk_max=1024");
        ASSERT_EQ(r->rc, 0);
        ASSERT_EQ(r->s.item_size_max, rows[i].want);
        done(r);
    }
    /* Above 1 MiB, the chunk limit returns to half a page unless it was set. */
    struct run *r = P("-m", "128", "-I", "4m");
    ASSERT_EQ(r->s.slab_chunk_size_max, 512 * 1024);
    done(r);
    r = P("-m", "128", "-I", "4m", "-o", "slab_chunk_max=16384");
    ASSERT_EQ(r->s.slab_chunk_size_max, 16384);
    done(r);
    r = P("-o", "no_chunked_items");
    ASSERT_EQ(r->s.slab_chunk_size_max, 1 << 20);
    done(r);
    r = P("-o", "no_chunked_items", "-I", "2m");
    ASSERT_EQ(r->s.slab_chunk_size_max, 512 * 1024);
    done(r);
}

/* Several suboptions in one -o, and several -o. */
TEST(extended_lists) {
    struct run *r = P("-o", "hashpower=20,slab_automove=2,tail_repair_time=20,"
                      "hash_algorithm=jenkins,no_lru_crawler,lru_crawler_sleep=50,"
                      "lru_crawler_tocrawl=7,hot_lru_pct=10,warm_lru_pct=30,"
                      "hot_max_factor=0.5,warm_max_factor=3.25,idle_timeout=30,track_sizes,"
                      "slab_automove_ratio=0.5,slab_automove_window=10",
                      "-o", "evict_policy=clock,read_buf_mem_limit=5,watcher_logbuf_size=0",
                      "-o", "worker_logbuf_size=32,temporary_ttl=30,no_maxconns_fast,"
                      "slab_sizes=100-200-300");
    ASSERT_EQ(r->rc, 0);
    const char *want[][2] = {
        {"hashpower_init", "20"}, {"slab_automove", "2"}, {"tail_repair_time", "20"},
        {"hash_algorithm", "jenkins"}, {"lru_crawler", "no"}, {"lru_crawler_sleep", "50"},
        {"lru_crawler_tocrawl", "7"}, {"hot_lru_pct", "10"}, {"warm_lru_pct", "30"},
        {"hot_max_factor", "0.50"}, {"warm_max_factor", "3.25"}, {"idle_timeout", "30"},
        {"track_sizes", "yes"}, {"slab_automove_ratio", "0.50"},
        {"slab_automove_window", "10"}, {"evict_policy", "clock"},
        {"read_buf_mem_limit", "5242880"}, {"watcher_logbuf_size", "0"},
        {"worker_logbuf_size", "32768"}, {"temp_lru", "yes"}, {"temporary_ttl", "30"},
        {"maxconns_fast", "no"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        ASSERT_STR(stat_of(&r->s, want[i][0]), want[i][1]);
    ASSERT_EQ(r->s.nslab_sizes, 3);
    ASSERT_EQ(r->s.slab_sizes[2], 300);
    done(r);

    /* no_modern: memcached 1.4's defaults (inline_ascii_response stays "no"). */
    r = P("-o", "no_modern");
    ASSERT_EQ(r->rc, 0);
    const char *old[][2] = {
        {"maxconns_fast", "no"}, {"slab_reassign", "no"}, {"slab_automove", "0"},
        {"slab_chunk_max", "1048576"}, {"lru_crawler", "no"}, {"hash_algorithm", "jenkins"},
        {"lru_maintainer_thread", "no"}, {"lru_segmented", "no"},
        {"inline_ascii_response", "no"}, {"evict_policy", "lru"},
    };
    for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++)
        ASSERT_STR(stat_of(&r->s, old[i][0]), old[i][1]);
    done(r);

    /* Without segmented LRU the LRU is flat, unless a policy is named. */
    r = P("-o", "no_lru_maintainer");
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(r->s.evict_policy, "lru");
    done(r);
    r = P("-o", "evict=s3fifo,no_modern");
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(r->s.evict_policy, "s3fifo");
    done(r);

    /* No-ops and an empty list; a trailing comma ends the list. */
    r = P("-o", "modern,inline_ascii_resp,no_inline_ascii_resp,lru_crawler,lru_maintainer,"
          "slab_reassign,maxconns_fast,no_drop_privileges", "-o", "", "-o", "hashpower=20,");
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(r->err, "");
    ASSERT_EQ(r->s.hashpower_init, 20);
    done(r);
}

/*
 * Refusals: the arguments, memcached 1.6.18's exit code and its stderr
 * (with argv[0] "cellard" where glibc names the program).
 */
struct refusal {
    const char *args[8];
    int rc;
    const char *err;
};

static const struct refusal refusals[] = {
    {{"-t", "0"}, 1, "Number of threads must be greater than 0\n"},
    {{"-t", "-3"}, 1, "Number of threads must be greater than 0\n"},
    {{"-t", "abc"}, 1, "Number of threads must be greater than 0\n"},
    {{"-c", "0"}, 1, "Maximum connections must be greater than 0\n"},
    {{"-c", "-1"}, 1, "Maximum connections must be greater than 0\n"},
    {{"-R", "0"}, 1, "Number of requests per event must be greater than 0\n"},
    {{"-R", "abc"}, 1, "Number of requests per event must be greater than 0\n"},
    {{"-f", "1"}, 1, "Factor must be greater than 1\n"},
    {{"-f", "abc"}, 1, "Factor must be greater than 1\n"},
    {{"-n", "0"}, 1, "Chunk size must be greater than 0\n"},
    {{"-D", ""}, 1, "No delimiter specified\n"},
    {{"-N", "0"}, 1, "Maximum number of NAPI IDs must be greater than 0\n"},
    {{"-B", "foo"}, 64, "Invalid value for binding protocol: foo\n"
                        " -- should be one of auto, binary, or ascii\n"},
    {{"-x"}, 1, "cellard: invalid option -- 'x'\nIllegal argument \"?\"\n"},
    {{"-p"}, 1, "cellard: option requires an argument -- 'p'\nIllegal argument \"?\"\n"},
    {{"-D"}, 1, "cellard: option requires an argument -- 'D'\nIllegal argument \"?\"\n"},
    {{"--bogus"}, 1, "cellard: unrecognized option '--bogus'\nIllegal argument \"?\"\n"},
    {{"--napi_ids=1"}, 1,
     "cellard: unrecognized option '--napi_ids=1'\nIllegal argument \"?\"\n"},
    {{"--p=5"}, 1, "cellard: option '--p=5' is ambiguous; possibilities: '--port' "
                   "'--pidfile' '--protocol'\nIllegal argument \"?\"\n"},
    {{"--dis"}, 1, "cellard: option '--dis' is ambiguous; possibilities: "
                   "'--disable-evictions' '--disable-cas' '--disable-flush-all' "
                   "'--disable-dumping' '--disable-watch'\nIllegal argument \"?\"\n"},
    {{"--help=3"}, 1,
     "cellard: option '--help' doesn't allow an argument\nIllegal argument \"?\"\n"},
    {{"--port"}, 1, "cellard: option '--port' requires an argument\nIllegal argument \"?\"\n"},
    {{"-x", "-h"}, 1, "cellard: invalid option -- 'x'\nIllegal argument \"?\"\n"},
    /* -o */
    {{"-o", "bogus"}, 1, "Illegal suboption \"bogus\"\n"},
    {{"-o", "foo=bar"}, 1, "Illegal suboption \"foo=bar\"\n"},
    {{"-o", "hashpower=20,foo"}, 1, "Illegal suboption \"foo\"\n"},
    {{"-o", ","}, 1, "Illegal suboption \"\"\n"},
    {{"-o", "a,,b"}, 1, "Illegal suboption \"a\"\n"},
    {{"-o", "no_"}, 1, "Illegal suboption \"no_\"\n"},
    {{"-o", "hashexpand"}, 1, "Illegal suboption \"hashexpand\"\n"},
    {{"-o", "no_track_sizes"}, 1, "Illegal suboption \"no_track_sizes\"\n"},
    {{"-o", "chunked_items"}, 1, "Illegal suboption \"chunked_items\"\n"},
    {{"-o", "relaxed_privileges"}, 1, "Illegal suboption \"relaxed_privileges\"\n"},
    {{"-o", "proxy_config"}, 1, "Illegal suboption \"proxy_config\"\n"},
    {{"-o", "hashpower"}, 1, "Missing numeric argument for hashpower\n"},
    {{"-o", "hashpower=11"}, 1, "Initial hashtable multiplier of 11 is too low\n"},
    {{"-o", "hashpower=abc"}, 1, "Initial hashtable multiplier of 0 is too low\n"},
    {{"-o", "hashpower=33"}, 1, "Initial hashtable multiplier of 33 is too high\n"
                                "Choose a value based on \"STAT hash_power_level\" from a "
                                "running instance\n"},
    /* memcached stops at 2; cellard's 3 is the paper's age rule (doc/cellard.md) */
    {{"-o", "slab_automove=4"}, 1, "slab_automove must be between 0 and 3\n"},
    {{"-o", "slab_automove=-1"}, 1, "slab_automove must be between 0 and 3\n"},
    {{"-o", "slab_automove_ratio"}, 1, "Missing slab_automove_ratio argument\n"},
    {{"-o", "slab_automove_ratio=0"}, 1, "slab_automove_ratio must be > 0 and < 1\n"},
    {{"-o", "slab_automove_window"}, 1, "Missing slab_automove_window argument\n"},
    {{"-o", "slab_automove_window=2"}, 1, "slab_automove_window must be > 2\n"},
    {{"-o", "tail_repair_time"}, 1, "Missing numeric argument for tail_repair_time\n"},
    {{"-o", "tail_repair_time=5"}, 1, "Cannot set tail_repair_time to less than 10 seconds\n"},
    {{"-o", "tail_repair_time=0"}, 1, "Cannot set tail_repair_time to less than 10 seconds\n"},
    {{"-o", "hash_algorithm"}, 1, "Missing hash_algorithm argument\n"},
    {{"-o", "hash_algorithm=foo"}, 1, "Unknown hash_algorithm option (jenkins, murmur3, xxh3)\n"},
    {{"-o", "lru_crawler_sleep"}, 1, "Missing lru_crawler_sleep value\n"},
    {{"-o", "lru_crawler_sleep=1000001"}, 1, "LRU crawler sleep must be between 0 and 1 second\n"},
    {{"-o", "lru_crawler_sleep=-1"}, 1, "LRU crawler sleep must be between 0 and 1 second\n"},
    {{"-o", "lru_crawler_tocrawl"}, 1, "Missing lru_crawler_tocrawl value\n"},
    {{"-o", "lru_crawler_tocrawl=-1"}, 1, "lru_crawler_tocrawl takes a numeric 32bit value\n"},
    {{"-o", "lru_crawler_tocrawl=abc"}, 1, "lru_crawler_tocrawl takes a numeric 32bit value\n"},
    {{"-o", "hot_lru_pct"}, 1, "Missing hot_lru_pct argument\n"},
    {{"-o", "hot_lru_pct=80"}, 1, "hot_lru_pct must be > 1 and < 80\n"},
    {{"-o", "warm_lru_pct"}, 1, "Missing warm_lru_pct argument\n"},
    {{"-o", "warm_lru_pct=80"}, 1, "warm_lru_pct must be > 1 and < 80\n"},
    {{"-o", "hot_max_factor"}, 1, "Missing hot_max_factor argument\n"},
    {{"-o", "hot_max_factor=0"}, 1, "hot_max_factor must be > 0\n"},
    {{"-o", "warm_max_factor"}, 1, "Missing warm_max_factor argument\n"},
    {{"-o", "warm_max_factor=0"}, 1, "warm_max_factor must be > 0\n"},
    {{"-o", "temporary_ttl"}, 1, "Missing temporary_ttl argument\n"},
    {{"-o", "idle_timeout"}, 1, "Missing numeric argument for idle_timeout\n"},
    {{"-o", "watcher_logbuf_size"}, 1, "Missing watcher_logbuf_size argument\n"},
    {{"-o", "watcher_logbuf_size=abc"}, 1, "could not parse argument to watcher_logbuf_size\n"},
    {{"-o", "worker_logbuf_size"}, 1, "Missing worker_logbuf_size argument\n"},
    {{"-o", "worker_logbuf_size=x"}, 1, "could not parse argument to worker_logbuf_size\n"},
    {{"-o", "read_buf_mem_limit"}, 1, "Missing read_buf_mem_limit argument\n"},
    {{"-o", "read_buf_mem_limit=x"}, 1, "could not parse argument to read_buf_mem_limit\n"},
    {{"-o", "ext_path"}, 1, "missing argument to ext_path, ie: ext_path=/d/file:5G\n"},
    {{"-o", "ext_page_size"}, 1, "Missing ext_page_size argument\n"},
    {{"-o", "ssl_key"}, 1, "Missing ssl_key argument\n"},
    {{"-o", "ssl_verify_mode=4"}, 1, "Invalid ssl_verify_mode. Use help to see valid options.\n"},
    {{"-o", "ssl_verify_mode=x"}, 1, "could not parse argument to ssl_verify_mode\n"},
    {{"-o", "ssl_min_version=9"}, 1, "Invalid ssl_min_version. Use help to see valid options.\n"},
    {{"-o", "ssl_wbuf_size=x"}, 1, "could not parse argument to ssl_wbuf_size\n"},
    /* Checked once all options are read, in memcached's order, exit 64. */
    {{"-N", "5"}, 64, "Number of napi_ids(5) cannot be greater than number of threads(4)\n"},
    {{"-N", "5", "-I", "512"}, 64,
     "Number of napi_ids(5) cannot be greater than number of threads(4)\n"},
    {{"-I", "512"}, 64, "Item max size cannot be less than 1024 bytes.\n"},
    {{"-I", "2g"}, 64, "Item max size cannot be less than 1024 bytes.\n"},
    {{"-I", "m"}, 64, "Item max size cannot be less than 1024 bytes.\n"},
    {{"-I", "2mb", "-m", "100"}, 64, "Item max size cannot be less than 1024 bytes.\n"},
    {{"-I", "0x100000", "-m", "100"}, 64, "Item max size cannot be less than 1024 bytes.\n"},
    {{"-m", "1"}, 64, "Cannot set item size limit higher than 1/2 of memory max.\n"},
    {{"-m", "0"}, 64, "Cannot set item size limit higher than 1/2 of memory max.\n"},
    {{"-m", "1g"}, 64, "Cannot set item size limit higher than 1/2 of memory max.\n"},
    {{"-m", "1.5"}, 64, "Cannot set item size limit higher than 1/2 of memory max.\n"},
    {{"-I", "1025m", "-m", "4096"}, 64, "Cannot set item size limit higher than a gigabyte.\n"},
    {{"-I", "2047m", "-m", "10000"}, 64, "Cannot set item size limit higher than a gigabyte.\n"},
    {{"-I", "2k", "-m", "1"}, 64,
     "slab_chunk_max (bytes: 524288) cannot be larger than -I (item_size_max 2048)\n"},
    {{"-I", "1000k"}, 64, "-I (item_size_max: 1024000) must be evenly divisible by "
                          "slab_chunk_max (bytes: 524288)\n"},
    {{"-o", "slab_chunk_max=1000"}, 64, "-I (item_size_max: 1048576) must be evenly "
                                        "divisible by slab_chunk_max (bytes: 1000)\n"},
    {{"-o", "slab_chunk_max=1000", "-I", "1000k"}, 64,
     "slab_chunk_max (bytes: 1000) must divide evenly into 1048576 (slab_page_size)\n"},
    {{"-o", "slab_chunk_max=2097152"}, 64,
     "slab_chunk_max (bytes: 2097152) cannot be larger than -I (item_size_max 1048576)\n"},
    {{"-o", "slab_chunk_max=2097152", "-I", "2m"}, 64,
     "slab_chunk_max (bytes: 2097152) must divide evenly into 1048576 (slab_page_size)\n"},
    {{"-o", "slab_sizes=100-90"}, 64,
     "slab size 90 cannot be lower than or equal to a previous class size\n"},
    {{"-o", "slab_sizes=100-101"}, 64,
     "slab size 101 must be at least 8 bytes larger than previous class\n"},
    {{"-o", "slab_sizes=abc"}, 64, "slab size 0 is out of valid range\n"},
    {{"-o", "slab_sizes=1", "-o", "hashpower=20", "-I", "2k"}, 64,
     "slab_chunk_max (bytes: 524288) cannot be larger than -I (item_size_max 2048)\n"},
    {{"-o", "slab_chunk_max=16", "-I", "2k", "-o", "slab_sizes=10-20"}, 64,
     "slab size 10 is out of valid range\n"},
    {{"-o", "hot_lru_pct=50,warm_lru_pct=40", "-I", "512"}, 64,
     "Item max size cannot be less than 1024 bytes.\n"},
    {{"-o", "hot_lru_pct=50,warm_lru_pct=40", "-o", "slab_sizes=1-2"}, 64,
     "slab size 1 is out of valid range\n"},
    {{"-p", "70000", "-o", "hot_lru_pct=50,warm_lru_pct=40"}, 64,
     "hot_lru_pct + warm_lru_pct cannot be more than 80% combined\n"},
    {{"-o", "no_lru_maintainer,temporary_ttl=5", "-o", "hot_lru_pct=50,warm_lru_pct=40"}, 64,
     "hot_lru_pct + warm_lru_pct cannot be more than 80% combined\n"},
    {{"-o", "no_lru_maintainer,temporary_ttl=10"}, 64,
     "temporary_ttl requires lru_maintainer to be enabled\n"},
    {{"-p", "70000"}, 64, "ERROR: Invalid port number 70000.\n"},
    {{"-U", "70000"}, 64, "ERROR: Invalid port number 70000.\n"},   /* -U alone sets -p too */
    {{"-p", "70000", "-I", "512"}, 64, "Item max size cannot be less than 1024 bytes.\n"},
    /* -S speaks binary alone, and not over UDP */
    {{"-S", "-B", "ascii"}, 64, "ERROR: You cannot allow the ASCII protocol while using SASL.\n"},
    {{"-S", "-B", "auto"}, 64, "ERROR: You cannot allow the ASCII protocol while using SASL.\n"},
    {{"-B", "binary", "-S", "-B", "ascii"}, 64,
     "ERROR: You cannot allow the ASCII protocol while using SASL.\n"},
    {{"-S", "-U", "11211"}, 64,
     "ERROR: Cannot enable UDP while using binary SASL authentication.\n"},
};

TEST(refusals_match_memcached) {
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        const struct refusal *f = &refusals[i];
        const char *const *a = f->args;
        struct run *r = parse(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], NOARGS);
        if (r->rc != f->rc || strcmp(r->err, f->err) != 0)
            fprintf(stderr, "  row %zu: %s %s %s %s\n", i, a[0], a[1] ? a[1] : "",
                    a[1] && a[2] ? a[2] : "", a[1] && a[2] && a[3] ? a[3] : "");
        ASSERT_EQ(r->rc, f->rc);
        ASSERT_STR(r->err, f->err);
        ASSERT_STR(r->out, "");
        done(r);
    }
}

/*
 * Where cellard refuses on purpose what memcached 1.6.18 accepts (or
 * crashes on).  Each row says what memcached does.
 */
static const struct refusal our_refusals[] = {
    /* memcached: spins at 100% CPU on a negative -R; takes a negative -n. */
    {{"-R", "-1"}, 1, "Number of requests per event must be greater than 0\n"},
    {{"-n", "-1"}, 1, "Chunk size must be greater than 0\n"},
    /* memcached: atoi() wraps these around. */
    {{"-t", "2147483648"}, 1, "cellard: -t 2147483648: number out of range\n"},
    {{"-c", "99999999999"}, 1, "cellard: -c 99999999999: number out of range\n"},
    {{"-m", "-1"}, 1, "cellard: -m -1: number out of range\n"},
    {{"-I", "4096m"}, 1, "cellard: -I 4096m: number out of range\n"},
    {{"-f", "inf"}, 1, "cellard: -f inf: number out of range\n"},
    {{"-a", "77777"}, 1, "cellard: -a 77777: number out of range\n"},
    /* memcached: crashes (no value), or goes on (bad value) then divides by 0. */
    {{"-o", "slab_sizes"}, 1, "Missing slab_sizes argument\n"},
    {{"-o", "slab_chunk_max"}, 1, "Missing slab_chunk_max argument\n"},
    {{"-o", "slab_chunk_max=x"}, 1, "could not parse argument to slab_chunk_max\n"},
    {{"-o", "slab_chunk_max=0"}, 1, "could not parse argument to slab_chunk_max\n"},
    {{"-o", "sock_cookie_id"}, 1, "Missing sock_cookie_id argument\n"},
    /* memcached: checks only the TCP port, and only above 65535. */
    {{"-U", "80000", "-p", "5"}, 64, "ERROR: Invalid port number 80000.\n"},
    {{"-p", "-5"}, 64, "ERROR: Invalid port number -5.\n"},
    /* cellar's own suboption. */
    {{"-o", "evict_policy"}, 1, "Missing evict_policy argument\n"},
    {{"-o", "evict_policy="}, 1, "cellard: -o evict_policy needs a policy name\n"},
};

TEST(refusals_of_our_own) {
    for (size_t i = 0; i < sizeof(our_refusals) / sizeof(our_refusals[0]); i++) {
        const struct refusal *f = &our_refusals[i];
        const char *const *a = f->args;
        struct run *r = parse(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], NOARGS);
        if (r->rc != f->rc || strcmp(r->err, f->err) != 0)
            fprintf(stderr, "  row %zu: %s %s\n", i, a[0], a[1] ? a[1] : "");
        ASSERT_EQ(r->rc, f->rc);
        ASSERT_STR(r->err, f->err);
        done(r);
    }
}

/* Warnings memcached prints and goes on. */
TEST(warnings_that_do_not_stop) {
    struct run *r = P("-t", "65");
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(r->err, "WARNING: Setting a high number of workerthreads is not recommended.\n"
                       " Set this value to the number of cores in your machine or less.\n");
    done(r);
    r = P("-o", "resp_obj_mem_limit=5");
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(r->err, "DEPRECATED: resp_obj_mem_limit no longer used. "
                       "See read_buf_mem_limit,\n");
    done(r);
}

/* -S alone makes the protocol binary; with -Y too, ASCII (-Y decides last, as in memcached). */
TEST(sasl_sets_the_protocol) {
    struct run *r = P("-S");
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(stat_of(&r->s, "binding_protocol"), "binary");
    ASSERT_STR(stat_of(&r->s, "auth_enabled_sasl"), "yes");
    done(r);
    r = P("-S", "-Y", "/etc/auth");
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(stat_of(&r->s, "binding_protocol"), "ascii");
    ASSERT_STR(stat_of(&r->s, "auth_enabled_sasl"), "yes");
    done(r);
}

/* -o memory_file= is -e by another name; empty, it is refused. */
TEST(memory_file_as_extended_option) {
    struct run *r = P("-o", "memory_file=/dev/shm/c");
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(stat_of(&r->s, "memory_file"), "/dev/shm/c");
    ASSERT_STR(r->err, "");
    done(r);
    r = P("-o", "memory_file=");
    ASSERT(r->rc != 0);
    ASSERT_STR(r->err, "missing argument to memory_file, ie: memory_file=/dev/shm/cellard\n");
    done(r);
}

/* One line per option accepted but not acted on, once, and only on success. */
TEST(not_implemented_warned_once_after_success) {
    /* (-e is implemented: no line for it) */
    struct run *r = P("-L", "-L", "-o", "lru_crawler_sleep=30,lru_crawler_sleep=31", "-e", "/f",
                      "-o", "ext_path=/x:1G,ext_threads=2", "-L");  /* -L again: no second line */
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(r->err, "cellard: option -L accepted but not implemented yet\n"
                       "cellard: option -o lru_crawler_sleep accepted but not implemented yet\n"
                       "cellard: option -o ext_threads accepted but not implemented yet\n");
    done(r);
    r = P("-L", "-I", "512");
    ASSERT_EQ(r->rc, 64);
    ASSERT_STR(r->err, "Item max size cannot be less than 1024 bytes.\n");
    done(r);
}

/*
 * -l: repeated or comma separated, joined with commas as memcached joins
 * them (the first replaces our default); an address already listed is
 * skipped.  Several listeners mean one UDP thread each.
 */
TEST(listen_lists) {
    struct run *r = P("-l", "127.0.0.1:1,127.0.0.2:2", "-l", "127.0.0.2:2", "-t", "8");
    ASSERT_EQ(r->rc, 0);
    ASSERT_STR(r->s.inter, "127.0.0.1:1,127.0.0.2:2");
    ASSERT_STR(stat_of(&r->s, "inter"), "127.0.0.1:1,127.0.0.2:2");
    ASSERT_EQ(r->s.num_threads_per_udp, 1);
    done(r);
    /* memcached drops the second here (it is a substring of the first); we keep it. */
    r = P("-l", "127.0.0.1:5", "-l", "127.0.0.1", "-t", "8");
    ASSERT_STR(r->s.inter, "127.0.0.1:5,127.0.0.1");
    done(r);
    r = P("-l", "0.0.0.0", "-t", "8");
    ASSERT_STR(r->s.inter, "0.0.0.0");
    ASSERT_EQ(r->s.num_threads_per_udp, 8);
    done(r);
}

/* With only -U, TCP takes the same port (not -U 0's: TCP stays on 11211, as
   in memcached; -U -1 makes both ephemeral); with only -p, UDP stays off. */
TEST(udp_port_alone_sets_tcp_port) {
    struct run *r = P("-U", "23456");
    ASSERT_EQ(r->s.port, 23456);
    ASSERT_EQ(r->s.udpport, 23456);
    done(r);
    r = P("-U", "23456", "-p", "23457");
    ASSERT_EQ(r->s.port, 23457);
    done(r);
    r = P("-p", "23457");
    ASSERT_EQ(r->s.udpport, 0);
    done(r);
    r = P("-U", "0");
    ASSERT_EQ(r->s.port, 11211);
    ASSERT_EQ(r->s.udpport, 0);
    done(r);
    r = P("-U", "-1");
    ASSERT_EQ(r->s.port, -1);
    ASSERT_EQ(r->s.udpport, -1);
    done(r);
}

/* -h, -V and -i answer at once on stdout, whatever follows. */
TEST(help_version_license) {
    struct run *r = P("-V", "-h");
    ASSERT_EQ(r->rc, SETTINGS_EXIT_OK);
    ASSERT_STR(r->out, "cellard 1.6.18\n");
    ASSERT_STR(r->err, "");
    done(r);
    r = P("-h", "-x");
    ASSERT_EQ(r->rc, SETTINGS_EXIT_OK);
    ASSERT(strncmp(r->out, "cellard 1.6.18 (cellar ", 23) == 0);
    ASSERT_STR(r->err, "");
    done(r);
    r = P("--license");
    ASSERT_EQ(r->rc, SETTINGS_EXIT_OK);
    ASSERT(strstr(r->out, "none of memcached's code") != NULL);
    done(r);
}

/* -h shows memcached's layout with our defaults, read from settings_init(). */
TEST(usage_text) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    settings_usage(f);
    fclose(f);
    static const char *const lines[] = {
        "\n-p, --port=<num>          TCP port to listen on (default: 11211)\n",
        "\n-U, --udp-port=<num>      UDP port to listen on (default: 0, off)\n",
        "\n-a, --unix-mask=<mask>    access mask for UNIX socket, in octal (default: 700)\n",
        "\n-l, --listen=<addr>       interface to listen on (default: 127.0.0.1)\n",
        "\n-m, --memory-limit=<num>  item memory in megabytes (default: 64)\n",
        "\n-c, --conn-limit=<num>    max simultaneous connections (default: 1024)\n",
        "\n-f, --slab-growth-factor=<num> chunk size growth factor (default: 1.25)\n",
        "\n-t, --threads=<num>       number of threads to use (default: 4)\n",
        "\n-b, --listen-backlog=<num> set the backlog queue limit (default: 1024)\n",
        "(default: auto-negotiate)\n",
        "                          (default: 1m, min: 1k, max: 1024m)\n",
        "\n-vv                       very verbose",
        "\n   - hot_lru_pct:         pct of slab memory to reserve for hot lru.\n"
        "                          (requires lru_maintainer, default pct: 20)\n",
        "(default: slru)\n",
        "\n-L, --enable-largepages   try to use large memory pages (if available)\n"
        "                          (accepted; not implemented yet)\n",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (strstr(text, lines[i]) == NULL)
            fprintf(stderr, "  missing from -h: %s", lines[i]);
        ASSERT(strstr(text, lines[i]) != NULL);
    }
    ASSERT(strstr(text, "--enable-ssl") != NULL);   /* memcached's test suite looks for it */
    free(text);
}

TEST(root_needs_user) {
    struct run *r = P(NOARGS);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ASSERT_EQ(settings_check_user_ids(&r->s, 0, 0, f), 64);
    ASSERT_EQ(settings_check_user_ids(&r->s, 1000, 0, f), 64);
    ASSERT_EQ(settings_check_user_ids(&r->s, 1000, 1000, f), 0);
    fclose(f);
    ASSERT_STR(text, "can't run as root without the -u switch\n"
                     "can't run as root without the -u switch\n");
    free(text);
    done(r);

    r = P("-u", "root");
    ASSERT_EQ(settings_check_user_ids(&r->s, 0, 0, stderr), 0);
    done(r);
    r = P("-u", "");
    f = fopen("/dev/null", "w");
    ASSERT_EQ(settings_check_user_ids(&r->s, 0, 0, f), 64);
    fclose(f);
    done(r);
}

/* Parsing twice in one process starts afresh (getopt's state included). */
TEST(parse_again_starts_afresh) {
    struct run *r = P("-p", "1", "-vv", "-l", "10.0.0.1");
    ASSERT_EQ(r->s.port, 1);
    done(r);
    r = P("-vx");
    ASSERT_EQ(r->rc, 1);
    ASSERT_STR(r->err, "cellard: invalid option -- 'x'\nIllegal argument \"?\"\n");
    done(r);
    r = P(NOARGS);
    ASSERT_EQ(r->s.port, 11211);
    ASSERT_EQ(r->s.verbose, 0);
    ASSERT_STR(r->s.inter, "127.0.0.1");
    done(r);
}

int main(void) {
    return RUN_TESTS();
}
