/*
 * fuzz_config.c -- mutation fuzzer for libcellar's configuration parser,
 * which cellar-router and every application read their configuration
 * with: cellar_config_parse() and cellar_config_parse_routing() on a
 * server list or mcrouter's JSON (comments, macros, pools, named
 * handles, every route kind; config_text.c, config.c, config_json.c,
 * config_macro.c, config_pool.c, route_*.c).
 *
 *   fuzz_config N        N mutated inputs from a fixed seed
 *   fuzz_config N SEED   another deterministic stream
 *
 * Built with -DLIBFUZZER it is instead a libFuzzer target.  The run itself
 * (rng, mutations, corpus loop, CHECK) is tests/fuzz/fuzz_driver.h; the
 * corpus is every configuration written in tests/unit/client (the valid
 * ones and the table of refused ones), those tests/integration builds,
 * doc/libcellar.md's example, packaging/etc/router.json,
 * examples/router/regions.json, and server lists.
 *
 * Each input, up to its first NUL, is parsed without routing settings,
 * or (one in two) with a routing prefix, --config-params, built-in
 * parameters and a warning callback, and must keep:
 *   - the result is CELLAR_OK with a configuration, or CELLAR_ECONFIG with
 *     none and a message (non-empty, NUL-terminated inside the buffer);
 *   - a configuration has a root route whose description (route_describe())
 *     fits or is cut cleanly, servers that each have a name, pools that
 *     each have a name, and is released with nothing left (a sanitizer
 *     build, `make asan` or `make fuzz`, finds a leak or a double free);
 *   - every warning is a non-empty string.
 *
 * Host names are resolved while parsing, so this program brings its own
 * getaddrinfo() and freeaddrinfo(), which the library's calls bind to:
 * numeric addresses and "localhost" resolve, every other name fails at
 * once, as a name that does not resolve does.  A mutated name therefore
 * never waits on (or sends a query to) a name server.  An "@import" reads
 * the file it names, as it would in a configuration: paths are not
 * confined, so run this on a machine where reading any file is harmless.
 */
#include "cellar.h"
#include "client/route.h"
#include "client/route_api.h"

#define FUZZ_CAP 16384
#include "fuzz_driver.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

/* ---------------------------------------------------------------------- */
/* A resolver without a network                                             */
/* ---------------------------------------------------------------------- */

struct fake_ai {
    struct addrinfo ai;
    struct sockaddr_storage addr;
};

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res) {
    struct fake_ai *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return EAI_MEMORY;
    unsigned long port = service ? strtoul(service, NULL, 10) : 0;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&f->addr;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&f->addr;
    if (node != NULL && strcmp(node, "localhost") == 0)
        node = "127.0.0.1";
    if (node != NULL && inet_pton(AF_INET, node, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        f->ai.ai_addrlen = sizeof(*v4);
    } else if (node != NULL && inet_pton(AF_INET6, node, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        f->ai.ai_addrlen = sizeof(*v6);
    } else {
        free(f);
        return EAI_NONAME;
    }
    f->ai.ai_family = f->addr.ss_family;
    f->ai.ai_socktype = hints ? hints->ai_socktype : SOCK_STREAM;
    f->ai.ai_addr = (struct sockaddr *)&f->addr;
    *res = &f->ai;
    return 0;
}

void freeaddrinfo(struct addrinfo *res) {
    free(res);      /* the struct fake_ai it starts */
}

/* ---------------------------------------------------------------------- */
/* The invariants                                                           */
/* ---------------------------------------------------------------------- */

static long seen_ok, seen_refused, seen_routing, seen_warnings, seen_servers;

static void on_warn(void *arg, const char *msg) {
    (void)arg;
    CHECK(msg != NULL && msg[0] != '\0');
    seen_warnings++;
}

static void check_one(const char *in, size_t len) {
    char *text = malloc(len + 1);
    memcpy(text, in, len);
    text[len] = '\0';
    static const struct cellar_routing routing = {
        .route_prefix = "/a/b/",
        .send_invalid_route_to_default = 1,
        .config_params = "POOL:B,N:7",
        .builtin_params = "{\"router-info-name\": \"Memcache\", \"num-proxies\": 17}",
        .warn = on_warn,
    };
    bool with_routing = fuzz_rnd() % 2;
    static char not_set;
    struct cellar_config *cfg = (struct cellar_config *)&not_set;   /* must be overwritten */
    char err[256];
    memset(err, 'x', sizeof(err));
    int rc = cellar_config_parse_routing(&cfg, text, NULL, with_routing ? &routing : NULL, err,
                                         sizeof(err));
    seen_routing += with_routing;
    CHECK(rc == CELLAR_OK || rc == CELLAR_ECONFIG);
    if (rc != CELLAR_OK) {
        CHECK(cfg == NULL);
        CHECK(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0');
        seen_refused++;
        free(text);
        return;
    }
    CHECK(cfg != NULL && cl_config_root(cfg) != NULL);
    seen_ok++;
    char desc[1024];
    int n = route_describe(cl_config_root(cfg), cfg, desc, sizeof(desc));
    CHECK(memchr(desc, '\0', sizeof(desc)) != NULL);
    CHECK(n == -1 || (n >= 0 && (size_t)n == strlen(desc)));
    for (unsigned i = 0; i < cellar_config_servers(cfg); i++)
        CHECK(cellar_config_server_name(cfg, i) != NULL);
    CHECK(cellar_config_server_name(cfg, cellar_config_servers(cfg)) == NULL);
    for (unsigned i = 0; i < cl_config_npools(cfg); i++)
        CHECK(cl_config_pool_name(cfg, i) != NULL);
    seen_servers += cellar_config_servers(cfg);
    cellar_config_release(&cfg);
    CHECK(cfg == NULL);
    free(text);
}

/* ---------------------------------------------------------------------- */
/* Corpus and mutations                                                     */
/* ---------------------------------------------------------------------- */

#define C(x) FUZZ_ENTRY(x)
/* test_config_json.c's pools: two servers, one, none, and a route among servers */
#define POOLS_AB                                                                     \
    "\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:11301\", \"127.0.0.1:11302\"]},"  \
    " \"B\": {\"servers\": [\"127.0.0.1:11401\"]}, \"E\": {\"servers\": []},"          \
    " \"M\": {\"servers\": [\"127.0.0.1:11501\", {\"type\": \"ErrorRoute\"}]}}"
static const struct fuzz_entry corpus[] = {
    /* tests/unit/client/test_config_json.c: every route kind, over its pools */
    C("{" POOLS_AB ", \"route\": \"PoolRoute|A\"}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"PoolRoute\", \"pool\": \"B\"}}"),
    C("{" POOLS_AB ", \"route\": \"Pool|B\"}"),
    C("{" POOLS_AB ", \"route\": \"NullRoute\"}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"NullRoute\"}}"),
    C("{" POOLS_AB ", \"route\": \"FailoverRoute|Pool|A\"}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\", "
      "\"PoolRoute|B\"]}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|A\", "
      "\"failover\": [\"PoolRoute|B\"], \"failover_exptime\": 10}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|A\", "
      "\"failover\": \"Pool|A\"}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|A\", "
      "\"failover\": \"PoolRoute|B\", \"failover_exptime\": 0}}"),
    C("{" POOLS_AB ", \"route\": \"MissFailoverRoute|Pool|A\"}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"MissFailoverRoute\", \"children\": [\"PoolRoute|B\", "
      "\"PoolRoute|A\"]}}"),
    C("{" POOLS_AB ", \"route\": \"AllSyncRoute|Pool|A\"}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"AllSyncRoute\", \"children\": [\"Pool|A\", \"Pool|B\"]}}"),
    C("{" POOLS_AB ", \"route\": \"AllAsyncRoute|Pool|B\"}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"AllAsyncRoute\", \"children\": \"Pool|A\"}}"),
    C("{" POOLS_AB ", \"route\": \"AllInitialRoute|PoolRoute|A\"}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"AllInitialRoute\", \"children\": [\"PoolRoute|A\", "
      "\"NullRoute\"]}}"),
    C("{" POOLS_AB ", \"route\": \"LatestRoute|Pool|A\"}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"LatestRoute\", \"children\": \"Pool|A\", "
      "\"failover_count\": 1}}"),
    C("{" POOLS_AB ", \"route\": \"FailoverRoute|FailoverRoute|PoolRoute|A\"}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"OperationSelectorRoute\", \"operation_policies\": { "
      "\"get\": \"PoolRoute|A\", \"lease-set\": \"PoolRoute|B\", \"flush_all\": "
      "\"NullRoute\"}, \"default_policy\": \"PoolRoute|B\"}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"OperationSelectorRoute\", \"operation_policies\": "
      "{\"delete\": \"Pool|B\"}}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"PrefixPolicyRoute\", \"default_policy\": \"PoolRoute|A\"}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"PrefixSelectorRoute\", \"policies\": {\"a:\": "
      "\"PoolRoute|A\", \"ab:\": \"PoolRoute|B\"}, \"wildcard\": \"NullRoute\"}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"PrefixSelectorRoute\", \"policies\": {\"x\": "
      "\"PoolRoute|A\"}}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"WarmUpRoute\", \"cold\": \"PoolRoute|A\", \"warm\": "
      "\"PoolRoute|B\", \"exptime\": 60}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"WarmUpRoute\", \"cold\": [\"PoolRoute|A\"], \"warm\": "
      "\"Pool|B\"}}"),
    C("{" POOLS_AB ", \"route\": [\"PoolRoute|A\"]}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"AllSyncRoute\", \"children\": []}}"),
    C("{" POOLS_AB ", \"route\": \"FailoverRoute|Pool|E\"}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"FailoverRoute\", \"children\": \"Pool|E\"}}"),
    C("{" POOLS_AB ", \"route\": \"HashRoute|Pool|E\"}"),
    C("{" POOLS_AB ", \"route\": \"PoolRoute|E\"}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"PoolRoute\", \"pool\": \"E\", \"hash\": \"Crc32\"}}"),
    C("{" POOLS_AB ", \"route\": \"AllSyncRoute|Pool|M\"}"),
    C("{" POOLS_AB ", \"route\": \"PoolRoute|M\"}"),
    C("{" POOLS_AB ", \"route\": \"HostIdRoute|Pool|A\"}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"AllSyncRoute\", \"children\": [{\"type\": \"Pool\", "
      "\"name\": \"C\", \"servers\": [\"127.0.0.1:11501\"]}, \"PoolRoute|C\"]}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"SaltedFailoverRoute\", \"pool\": \"A\", "
      "\"failover_policy\": {\"type\": \"DeterministicOrderPolicy\", \"max_tries\": 9, "
      "\"max_error_tries\": 2}}}"),
    /* tests/unit/client/test_config_json.c: pools, comments, handles, macros, the refused */
    C("{\"pools\": { \"a\": {\"servers\": [\"127.0.0.1:11301\"], \"protocol\": \"ascii\",    "
      "    \"server_timeout\": 250, \"hash\": \"rendezvous\", \"tko_timeouts\": 2,        "
      "\"probe_min_ms\": 50, \"probe_max_ms\": 400, \"spool\": [\"delete\", \"touch\"]}, "
      "\"t\": {\"servers\": [\"127.0.0.1:11302\"], \"protocol\": \"text\",        "
      "\"connect_timeout\": 30, \"spool\": []}, \"m\": {\"servers\": [\"127.0.0.1:11303\"], "
      "\"protocol\": \"meta\", \"hash\": \"ch3\"}, \"d\": {\"servers\": "
      "[\"127.0.0.1:11304\"]}}, \"route\": {\"type\": \"AllSyncRoute\",   \"children\": "
      "[\"PoolRoute|a\", \"PoolRoute|t\", \"PoolRoute|m\", \"PoolRoute|d\"]}}"),
    C("{\"pools\": {\"k\": {\"hash\": \"ketama\",  \"servers\": [\"127.0.0.1:11301\", "
      "\"[::1]:11302\", \"localhost\", \"[::1]\"],  \"weights\": [1, 2, 3, 4]}}, \"route\": "
      "\"PoolRoute|k\"}"),
    C("{\"route\": {\"type\": \"FailoverRoute\", \"children\": [  {\"type\": \"PoolRoute\", "
      "\"pool\": {\"name\": \"in\", \"protocol\": \"binary\",   \"servers\": "
      "[\"127.0.0.1:11501\", \"127.0.0.1:11502\"]}},  \"Pool|in\"]}}"),
    C("// a line comment first\n" "{ /* a block\n"
      "     comment over lines, with \"quotes\" and a // inside */\n" "  \"pools\": {\n"
      "    \"A\": { \"servers\": [\"127.0.0.1:11301\", \"127.0.0.1:11302\",], }, // "
      "trailing\n"
      "    \"B\": { \"servers\": [\"127.0.0.1:11401\" /* one */ , /* more? */ ] },\n" "  },\n"
      "  \"route\": { \"type\": \"PrefixSelectorRoute\", \"policies\": {\n"
      "      \"a//b\": \"PoolRoute|A\",   // a // in a string is no comment\n"
      "      \"c/*d\": \"PoolRoute|B\",\n" "      \"e,]\": \"NullRoute\", },\n"
      "    \"wildcard\": \"PoolRoute|B\", // \xc3\xa9 comment with UTF-8\n" "  }, /* last */\n"
      "}\n"),
    C("{ /* one\n" " two \xc3\xa9\xc3\xa9 */ \"route\": \"NullRoute\"\n" "  // three\n"
      "   , , }"),
    C("{ /* \xc3\xa9\xc3\xa9 */ \"route\": 1 2}"),
    C("{\"route\": [1,,]}"),
    C("{\"route\": \"NullRoute\"}\n" "/* open"),
    C("{" POOLS_AB
      ", \"named_handles\": [{\"type\": \"PoolRoute\", \"name\": \"wc\", \"pool\": \"A\"},   "
      "                  {\"type\": \"NullRoute\", \"name\": \"unused\"}], \"route\": "
      "{\"type\": \"AllSyncRoute\", \"children\": [\"wc\", \"wc\", \"PoolRoute|B\"]}}"),
    C("{" POOLS_AB
      ", \"named_handles\": {\"x\": {\"type\": \"PoolRoute\", \"pool\": \"A\"},              "
      "       \"y\": {\"type\": \"FailoverRoute\", \"name\": \"y\",                          "
      "  \"children\": [\"x\", \"PoolRoute|B\"]}}, \"route\": \"y\"}"),
    C("{" POOLS_AB
      ", \"named_handles\": {\"x\": \"PoolRoute|A\", \"y\": [\"PoolRoute|B\"], \"z\": "
      "\"x\"}, \"route\": {\"type\": \"FailoverRoute\", \"children\": [\"z\", \"y\"]}}"),
    C("{" POOLS_AB ", \"named_handles\": {\"x\": \"x\"}, \"route\": \"x\"}"),
    C("{" POOLS_AB
      ", \"named_handles\": [{\"name\": \"outer\", \"type\": \"MissFailoverRoute\",   "
      "\"children\": [{\"type\": \"PoolRoute\", \"name\": \"g\", \"pool\": \"B\"}, "
      "\"late\"]}], \"route\": {\"type\": \"AllInitialRoute\", \"children\": [   \"late\",   "
      "{\"type\": \"FailoverRoute\", \"name\": \"late\", \"children\": \"Pool|A\"},   "
      "\"outer\", \"g\"]}}"),
    C("{" POOLS_AB ", \"route\": %s}"),
    C("{" POOLS_AB
      ", \"routes\": [ {\"aliases\": [\"/r/a/\"], \"route\": \"PoolRoute|A\"}, {\"aliases\": "
      "[\"/r/b/\", \"s/b\"], \"route\": \"PoolRoute|B\"}]}"),
    C("{" POOLS_AB ", \"routes\": {\"/x/y/\": \"PoolRoute|A\", \"/x/z/\": \"NullRoute\"}}"),
    C("{" POOLS_AB
      ", \"routes\": [ {\"aliases\": [\"/r/a/\", \"/r/b/c/\"], \"route\": \"NullRoute\"}]}"),
    C("{" POOLS_AB
      ", \"routes\": [ {\"aliases\": [\"/r/a/\"], \"route\": \"NullRoute\"}, {\"aliases\": "
      "[\"r/a\"], \"route\": \"PoolRoute|A\"}]}"),
    C("{" POOLS_AB ", \"routes\": {}}"),
    C("{\n" "  \"pools\": {\n"
      "    \"wildcard\":   { \"servers\": [\"127.0.0.1:12001\", \"127.0.0.1:12002\"] },\n"
      "    \"replicated\": { \"servers\": [\"127.0.0.1:12101\", \"127.0.0.1:12102\"] },\n"
      "    \"gutter\":     { \"servers\": [\"127.0.0.1:12901\"] },\n"
      "    \"warm\":       { \"servers\": [\"127.0.0.1:13001\"] } },\n"
      "  \"named_handles\": [ { \"type\": \"PoolRoute\", \"name\": \"wc\", \"pool\": "
      "\"wildcard\" } ],\n" "  \"route\": { \"type\": \"PrefixSelectorRoute\",\n"
      "    \"policies\": {\n"
      "      \"rep:\":  { \"type\": \"OperationSelectorRoute\", \"operation_policies\": {\n"
      "                   \"get\": \"LatestRoute|Pool|replicated\",\n"
      "                   \"set\": \"AllSyncRoute|Pool|replicated\",\n"
      "                   \"delete\": \"AllSyncRoute|Pool|replicated\" } },\n"
      "      \"cold:\": { \"type\": \"WarmUpRoute\", \"cold\": \"wc\", \"warm\": "
      "\"PoolRoute|warm\", \"exptime\": 60 } },\n"
      "    \"wildcard\": { \"type\": \"FailoverWithExptimeRoute\", \"normal\": "
      "\"PoolRoute|wildcard\",\n"
      "                  \"failover\": [\"PoolRoute|gutter\"], \"failover_exptime\": 10 } }\n"
      "}\n"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\", "
      "\"PoolRoute|B\"], \"failover_errors\": [\"remote_error\", \"tko\"], "
      "\"failover_limit\": {\"rate\": 0.25, \"burst\": 9.8}}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\"], "
      "\"failover_limit\": {\"rate\": 7}}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\"], "
      "\"failover_limit\": {\"rate\": -1, \"burst\": 0}}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|A\", "
      "\"failover\": \"PoolRoute|B\", \"failover_errors\": {\"gets\": [\"timeout\", "
      "\"connect_error\"], \"updates\": []}}}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:1\", \"127.0.0.1:2\", "
      "\"127.0.0.1:3\"], \"weights\": [0, 1]}}, \"route\": \"PoolRoute|A\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:1\", \"127.0.0.1:2\", \"127.0.0.1:3\", "
      "\"127.0.0.1:4\"], \"weights\": [0.5, 1, 0.25, 0.75]}}, \"route\": {\"type\": "
      "\"PoolRoute\", \"pool\": \"A\", \"bucketize\": true, \"total_buckets\": 1000, "
      "\"bucketization_keyspace\": \"ks\", \"hash\": \"WeightedCh3\"}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"PoolRoute\", \"pool\": \"A\", \"bucketize\": true, "
      "\"total_buckets\": 10}}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\", \"127.0.0.2:11211\", \"[::1]:5\"], "
      "\"port_override\": 12345}, \"K\": {\"servers\": [\"127.0.0.3:1\", \"127.0.0.4:2\"], "
      "\"weights\": [2, 3], \"hash\": \"ketama\", \"port_override\": 99}}, \"route\": "
      "\"PoolRoute|A\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"/tmp/s\"], \"port_override\": 1}}, \"route\": "
      "\"PoolRoute|A\"}"),
    C("{ \"macros\": { \"gutter\": { \"type\": \"macroDef\", \"params\": [\"pool\"],\n"
      "  \"result\": { \"type\": \"FailoverWithExptimeRoute\", \"normal\": "
      "\"PoolRoute|%%pool%%\",\n"
      "  \"failover\": [\"PoolRoute|gutter\"], \"failover_exptime\": 10 } } },\n"
      "%.*s\"wildcard\": \"@gutter(wildcard)\" }\n" "}\n"),
    C("{\"route\": {\"type\": \"if\", \"condition\": \"@equals(%num-proxies%,@int(17))\", "
      "\"is_true\": \"ErrorRoute|%router-info-name%\", \"is_false\": \"NullRoute\"}}"),
    C("{\"router-info-name\": \"Memcache\", \"num-proxies\": 17}"),
    C("{\"macros\": {\"p\": {\"type\": \"macroDef\", \"params\": [\"x\", {\"name\": \"y\", "
      "\"default\": \"B\"}], \"result\": {\"type\": \"FailoverRoute\", \"children\": "
      "[\"PoolRoute|%x%\", \"PoolRoute|%y%\"]}}}, " POOLS_AB ", \"route\": \"@p(A)\"}"),
    C("{\"macros\": {\"p\": {\"type\": \"macroDef\", \"params\": [\"x\", \"y\"], \"result\": "
      "\"%x%Route|%y%\"}}, " POOLS_AB
      ", \"route\": {\"type\": \"p\", \"x\": \"Pool\", \"y\": \"B\"}}"),
    C("{\"macros\": {\"c\": {\"type\": \"constDef\", \"result\": [\"PoolRoute|A\", "
      "\"NullRoute\"]}}, " POOLS_AB
      ", \"route\": {\"type\": \"AllSyncRoute\", \"children\": \"%c%\"}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"AllSyncRoute\", \"children\": {\"type\": \"transform\", "
      "\"dictionary\": [\"A\", \"%POOL%\"], \"itemTransform\": \"PoolRoute|%item%\"}}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"LatestRoute\", \"children\": {\"type\": \"merge\", "
      "\"params\": [[\"PoolRoute|A\"], [\"PoolRoute|B\"]]}, \"failover_count\": "
      "\"@int(%N%)\"}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"select\", \"dictionary\": {\"a\": \"PoolRoute|A\", \"b\": "
      "\"PoolRoute|B\"}, \"key\": \"b\"}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"if\", \"condition\": {\"type\": \"equals\", \"A\": "
      "\"%POOL%\", \"B\": \"B\"}, \"is_true\": \"NullRoute\", \"is_false\": \"PoolRoute|A\"}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"PrefixSelectorRoute\", \"policies\": {\"\\\\@a\\\\%\": "
      "\"PoolRoute|A\"}}}"),
    C("{\"route\": \"@nope(1)\"}"),
    C("{\"route\": \"%NOPE%\"}"),
    C("{\"route\": \"a%b\"}"),
    C("{\"route\": \"@import(/nonexistent/x.json)\"}"),
    C("{\"route\": \"@range(1)\"}"),
    C("{\"macros\": {\"p\": {\"type\": \"macroDef\", \"params\": [\"x\"], \"result\": "
      "\"%x%\"}}, \"route\": \"@p(1,2)\"}"),
    C("{\"macros\": {\"p\": {\"type\": \"macroDef\", \"params\": [\"x\"], \"result\": "
      "\"%x%\"}}, \"route\": {\"type\": \"p\"}}"),
    C("{\"macros\": {\"p\": {\"type\": \"macroDef\", \"params\": [], \"result\": \"@p\"}}, "
      "\"route\": \"@p\"}"),
    C("{\"macros\": {\"p\": {\"type\": \"oops\"}}, \"route\": \"NullRoute\"}"),
    C("/* the routes */ {\"a\": \"PoolRoute|A\", \"b\": \"@str(PoolRoute|B)\",}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"AllSyncRoute\", \"children\": [{\"type\": \"select\", "
      "\"dictionary\": \"@import(part.json)\", \"key\": \"b\"},{\"type\": \"select\", "
      "\"dictionary\": \"@import(file:%s)\", \"key\": \"a\"}]}}"),
    C("{" POOLS_AB ", \"route\": \"@import(self.json)\"}"),
    C("{\"route\": \"NullRoute\",\n" " \"route\": \"NullRoute\"}"),
    C("{\"route\": \"NullRoute\""),
    C("// a list\n" "[\"NullRoute\"]"),
    C("{\"pools\": {}}"),
    C("{\"route\": \"NullRoute\", \"routes\": []}"),
    C("{\"route\": \"NullRoute\", \"shadows\": []}"),
    C("{\"macros\": {\"m\": {}}, \"route\": \"NullRoute\"}"),
    C("{\"pools\": [], \"route\": \"NullRoute\"}"),
    C("{" POOLS_AB ", \"route\": \"PoolRoute|C\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:1\", \"127.0.0.1:2\", "
      "\"127.0.0.1:x\"]}}, \"route\": \"PoolRoute|A\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"fe80::1:11211\"]}}, \"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": {}}}, \"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {}}, \"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [11211]}}, \"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"protocol\": \"caret\"}}, "
      "\"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"hash\": \"crc16\"}}, \"route\": "
      "\"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"server_timeout\": \"1s\"}}, "
      "\"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"spool\": \"delete\"}}, "
      "\"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"spool\": [\"delete\", "
      "\"get\"]}}, \"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"tko_timeouts\": 0}}, \"route\": "
      "\"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"keep_routing_prefix\": 1}}, "
      "\"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"pool_locality\": 1}}, \"route\": "
      "\"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"weights\": [2]}}, \"route\": "
      "\"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"hash\": \"modula\", \"servers\": [\"127.0.0.1\"], \"weights\": "
      "[2]}}, \"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"hash\": \"ketama\", \"servers\": [\"127.0.0.1\", "
      "\"127.0.0.2\"], \"weights\": [2]}}, \"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"hash\": \"ketama\", \"servers\": [\"127.0.0.1\", "
      "\"127.0.0.2\"], \"weights\": [2, 0.5]}}, \"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"hash\": \"ketama\", \"servers\": [\"127.0.0.1:5:3\"], "
      "\"weights\": [2]}}, \"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"hash\": \"ketama\", \"servers\": [\"/tmp/mc.sock\"], "
      "\"weights\": [2]}}, \"route\": \"NullRoute\"}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"no-such-host.invalid:1\"]}}, \"route\": "
      "\"NullRoute\"}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"PoolRoute\", \"pool\": {\"name\": \"A\", \"servers\": "
      "[\"127.0.0.1\"]}}}"),
    C("{\"route\": {\"type\": \"PoolRoute\", \"pool\": {\"servers\": [\"127.0.0.1\"]}}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"FooRoute\"}}"),
    C("{" POOLS_AB ", \"route\": \"FooRoute|Pool|A\"}"),
    C("{" POOLS_AB ", \"route\": \"nothing\"}"),
    C("{" POOLS_AB ", \"route\": {\"children\": []}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": 7}}"),
    C("{" POOLS_AB ", \"route\": 42}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"FailoverRoute\"}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"AllSyncRoute\", \"children\": [\"PoolRoute|A\", null]}}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:1\", \"127.0.0.1:2\"], "
      "\"failure_domains\": [1]}}, \"route\": \"PoolRoute|A\"}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\", {\"type\": "
      "\"Pool\", \"servers\": [\"127.0.0.1:1\"]}]}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"SaltedFailoverRoute\", \"pool\": \"A\", "
      "\"failover_policy\": {\"type\": \"DeterministicOrderPolicy\", \"max_tries\": 2, "
      "\"max_error_tries\": 1, \"hash\": {\"hash_func\": \"Crc32\"}}}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\"], "
      "\"failover_policy\": {\"type\": \"RendezvousPolicy\"}}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\"], "
      "\"failover_shadow\": true}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\"], "
      "\"failover_errors\": [\"timeout\", \"oops\"]}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\"], "
      "\"failover_errors\": {\"sets\": []}}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"PoolRoute\", \"pool\": \"A\", \"hash\": {\"hash_func\": "
      "\"Md5\"}}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"PoolRoute\", \"pool\": \"A\", \"shards\": []}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"PoolRoute\", \"pool\": \"A\", \"shadows\": {}}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"PoolRoute\"}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"LatestRoute\", \"children\": \"Pool|A\", "
      "\"failover_count\": -1}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverWithExptimeRoute\", \"failover\": \"PoolRoute|B\"}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|A\", "
      "\"failover_exptime\": 1.5}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"WarmUpRoute\", \"cold\": \"PoolRoute|A\"}}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"WarmUpRoute\", \"cold\": \"Pool|A\", \"warm\": "
      "\"PoolRoute|B\"}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"OperationSelectorRoute\", \"operation_policies\": {\"get\": "
      "\"PoolRoute|A\", \"metaget\": \"PoolRoute|A\"}}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"OperationSelectorRoute\", \"operation_policies\": "
      "[\"get\"]}}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"PrefixSelectorRoute\", \"policies\": {\"a:\": {\"type\": "
      "\"FailoverRoute\", \"children\": [\"PoolRoute|A\", \"PoolRoute|C\"]}}}}"),
    C("{" POOLS_AB ", \"route\": \"WarmUpRoute|Pool|A\"}"),
    C("{" POOLS_AB ", \"route\": \"FailoverRoute\"}"),
    C("{" POOLS_AB ", \"route\": \"AllSyncRoute|Pool|C\"}"),
    C("{" POOLS_AB ", \"route\": \"PoolRoute\"}"),
    C("{" POOLS_AB ", \"route\": \"NullRoute|x\"}"),
    C("{" POOLS_AB ", \"route\": \"Pool|A\"}"),
    C("{" POOLS_AB
      ", \"named_handles\": [{\"type\": \"FailoverRoute\", \"name\": \"x\", \"children\": "
      "[\"PoolRoute|A\", \"x\"]}], \"route\": \"x\"}"),
    C("{" POOLS_AB
      ", \"named_handles\": [{\"type\": \"FailoverRoute\", \"name\": \"x\", \"children\": "
      "[\"y\"]}, {\"type\": \"FailoverRoute\", \"name\": \"y\", \"children\": [\"x\"]}], "
      "\"route\": \"x\"}"),
    C("{" POOLS_AB
      ", \"named_handles\": [{\"type\": \"NullRoute\", \"name\": \"x\"}], \"route\": "
      "{\"type\": \"FailoverRoute\", \"children\": [{\"type\": \"PoolRoute\", \"name\": "
      "\"x\", \"pool\": \"A\"}]}}"),
    C("{" POOLS_AB ", \"named_handles\": [{\"type\": \"NullRoute\"}], \"route\": \"NullRoute\"}"),
    C("{" POOLS_AB
      ", \"named_handles\": [{\"type\": \"NullRoute\", \"name\": \"\"}], \"route\": "
      "\"NullRoute\"}"),
    C("{" POOLS_AB
      ", \"named_handles\": [{\"type\": \"PoolRoute\", \"name\": \"n\", \"pool\": \"Z\"}], "
      "\"route\": \"NullRoute\"}"),
    C("{" POOLS_AB
      ", \"named_handles\": {\"a\": {\"type\": \"NullRoute\", \"name\": \"b\"}}, \"route\": "
      "\"a\"}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"FailoverRoute\", \"name\": 3, \"children\": \"Pool|A\"}}"),
    C("{" POOLS_AB ", \"routes\": []}"),
    C("{" POOLS_AB ", \"routes\": [{\"aliases\": [\"/a/b/\"]}]}"),
    C("{" POOLS_AB ", \"routes\": [{\"route\": \"NullRoute\"}]}"),
    C("{" POOLS_AB
      ", \"routes\": [{\"aliases\": [\"/a/b/\"], \"route\": \"NullRoute\"}, {\"aliases\": "
      "[1], \"route\": \"NullRoute\"}]}"),
    C("{" POOLS_AB
      ", \"routes\": [{\"aliases\": [], \"route\": \"NullRoute\"}, {\"aliases\": [], "
      "\"route\": \"PoolRoute|Q\"}]}"),
    C("{" POOLS_AB
      ", \"route\": {\"type\": \"PoolRoute\", \"pool\": \"B\", \"shadows\": [{\"target\": "
      "\"PoolRoute|A\", \"keys_to_shadow\": [\"k\"], \"index_range\": [0, 1]}, {\"target\": "
      "\"PoolRoute|A\", \"key_fraction_range\": [0.5, 0.1]}, {\"target\": \"nothere\"}, "
      "12345, {\"target\": \"PoolRoute|A\", \"index_range\": [0, 1]}]}}"),
    C("{\"r\": [1, 2]}"),
    C("{" POOLS_AB ", \"route\": {\"type\": \"PoolRoute\", \"pool\": \"A\", \"hash\": \"Ch3\", "
      "\"shadows\": [{\"target\": \"PoolRoute|B\", \"index_range\": [0, 1], "
      "\"index_range_rv\": \"r\"}]}}"),
    C("{" POOLS_AB ", \"route\": \"PoolRoute|Q\"}"),
    C("{" POOLS_AB ", \"route\": "),
    C("{\"type\": \"FailoverRoute\", \"children\": ["),
    C("{\"route\": \""),
    /* tests/unit/client/test_client_core.c */
    C("/*/*/all"),
    C("/*/a/pa"),
    C("/*z/*/none"),
    C("{\"pools\": {\"A\": {\"servers\": [\"%s\"], \"server_timeout\": %d, \"tko_timeouts\": "
      "1000, \"protocol\": \"meta\"}, \"B\": {\"servers\": [\"%s\"], \"protocol\": "
      "\"meta\"}}, \"route\": %s}"),
    C("{\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\", \"PoolRoute|B\"], "
      "\"failover_errors\": {\"gets\": [\"remote_error\"], \"updates\": []}}"),
    C("{\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\", \"PoolRoute|B\"], "
      "\"failover_limit\": {\"rate\": 0, \"burst\": 1}}"),
    C("{ // mcrouter's format\n"
      "  \"pools\": {\"main\": {\"servers\": [\"%s\"], \"protocol\": \"meta\"},\n"
      "            \"gutter\": {\"servers\": [\"%s\"], \"protocol\": \"meta\"}},\n"
      "  \"route\": {\"type\": \"FailoverWithExptimeRoute\",\n"
      "            \"normal\": \"PoolRoute|main\",\n"
      "            \"failover\": \"PoolRoute|gutter\",\n"
      "            \"failover_exptime\": 10}\n" "}\n"),
    /* tests/integration: what the client and router tests build (their ports as 11211, 11212) */
    C("{\"pools\": {\"main\": {\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}, "
      "\"gutter\": {\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}}, \"route\": "
      "{\"type\": \"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|main\", "
      "\"failover\": [\"PoolRoute|gutter\"], \"failover_exptime\": 10}}"),
    C("{\"pools\": {\"rep\": {\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}}, "
      "\"route\": {\"type\": \"OperationSelectorRoute\", \"operation_policies\": {\"get\": "
      "{\"type\": \"LatestRoute\", \"children\": \"Pool|rep\", \"failover_count\": 2}, "
      "\"set\": \"AllSyncRoute|Pool|rep\", \"delete\": \"AllSyncRoute|Pool|rep\"}, "
      "\"default_policy\": \"AllSyncRoute|Pool|rep\"}}"),
    C("{\"pools\": {\"cold\": {\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}, "
      "\"warm\": {\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}}, \"route\": "
      "{\"type\": \"WarmUpRoute\", \"cold\": \"PoolRoute|cold\", \"warm\": "
      "\"PoolRoute|warm\", \"exptime\": 100, \"delete_hold\": 2}}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:11211\"], \"server_timeout\": 1000}}, "
      "\"route\": \"PoolRoute|A\"}"),
    C("{\"pools\": {\"a\": {\"servers\": [\"127.0.0.1:11211\"], \"server_timeout\": 500}}, "
      "\"route\": \"PoolRoute|a\"}"),
    C("{\"pools\": {\"main\": {\"servers\": [\"127.0.0.1:11211\"]}}, \"route\": "
      "\"PoolRoute|main\"}"),
    C("{\"pools\": {\"main\": {\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}, "
      "\"gutter\": {\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}}, \"route\": "
      "{\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|main\", "
      "\"PoolRoute|gutter\"]}}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}, \"B\": "
      "{\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}}, \"route\": {\"type\": "
      "\"OperationSelectorRoute\", \"operation_policies\": {\"set\": "
      "\"AllSyncRoute|Pool|A\", \"get\": \"PoolRoute|B\"}, \"default_policy\": "
      "\"NullRoute\"}}"),
    C("{\"pools\": {\"main\": {\"servers\": [\"127.0.0.1:11211\"]}, \"gutter\": "
      "{\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}}, \"route\": {\"type\": "
      "\"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|main\", \"failover\": "
      "[\"PoolRoute|gutter\"], \"failover_exptime\": \"127.0.0.1:11211\"}}"),
    C("{\"pools\": {\"main\": {\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}}, "
      "\"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|main\"]}}"),
    C("{\"pools\": {\"a\": {\"servers\": [\"127.0.0.1:11211\"]}, \"b\": {\"servers\": "
      "[\"127.0.0.1:11211\"]}, \"c\": {\"servers\": [\"127.0.0.1:11211\"]}, \"dead\": "
      "{\"servers\": [\"127.0.0.1:11211\"]}}, \"route\": {\"type\": \"PrefixSelectorRoute\", "
      "\"policies\": {\"err:\": \"ErrorRoute|reject\", \"busy:\": {\"type\": \"ErrorRoute\", "
      "\"result\": \"mc_res_busy\"}, \"null:\": \"DevNullRoute\", \"exp:\": {\"type\": "
      "\"ModifyExptimeRoute\", \"target\": \"PoolRoute|a\", \"exptime\": -1}, \"min:\": "
      "{\"type\": \"ModifyExptimeRoute\", \"target\": \"PoolRoute|a\", \"action\": \"min\", "
      "\"exptime\": 1000}, \"fast:\": {\"type\": \"AllFastestRoute\", \"children\": "
      "[\"PoolRoute|dead\", \"PoolRoute|a\", \"PoolRoute|b\"]}, \"deadfast:\": {\"type\": "
      "\"AllFastestRoute\", \"children\": [\"PoolRoute|dead\", \"PoolRoute|dead\"]}, "
      "\"maj:\": {\"type\": \"AllMajorityRoute\", \"children\": [\"PoolRoute|a\", "
      "\"PoolRoute|b\", \"PoolRoute|c\"]}}, \"wildcard\": \"PoolRoute|a\"}}"),
    C("{\"pools\": {\"z\": {\"servers\": [\"localhost:0\"]}, \"m\": {\"servers\": "
      "[\"127.0.0.1:11211\"], \"server_timeout\": 200}}, \"route\": {\"type\": "
      "\"PrefixSelectorRoute\", \"policies\": {\"m:\": \"PoolRoute|m\"}, \"wildcard\": "
      "\"PoolRoute|z\"}}"),
    C("{\"pools\": {\"l1\": {\"servers\": [\"127.0.0.1:11211\"]}, \"l2\": {\"servers\": "
      "[\"127.0.0.1:11211\"]}}, \"route\": {\"type\": \"PrefixSelectorRoute\", \"policies\": "
      "{\"nc:\": {\"type\": \"L1L2CacheRoute\", \"l1\": \"PoolRoute|l1\", \"l2\": "
      "\"PoolRoute|l2\", \"upgradingL1Exptime\": 0, \"ncacheExptime\": 3600, "
      "\"ncacheUpdatePeriod\": 3}}, \"wildcard\": {\"type\": \"L1L2CacheRoute\", \"l1\": "
      "\"PoolRoute|l1\", \"l2\": \"PoolRoute|l2\", \"upgradingL1Exptime\": 100}}}"),
    C("{\"pools\": {\"a\": {\"servers\": [\"127.0.0.1:11211\"]}}, \"route\": \"PoolRoute|a\"}"),
    C("{\"pools\": {\"a\": {\"servers\": [\"127.0.0.1:1\"]}}, \"route\": \"PoolRoute|a\"}"),
    C("{\"pools\": {\"a\": {\"servers\": [\"127.0.0.1:1\"]}}, \"route\": \"PoolRoute|b\"}"),
    C("{\"pools\": {\"dead\": {\"servers\": [\"127.0.0.1:11211\"]}}, \"route\": "
      "\"PoolRoute|dead\"}"),
    C("{\"pools\": {\"p\": {\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"]}}, "
      "\"route\": {\"type\": \"PrefixSelectorRoute\", \"policies\": {\"c:\": {\"type\": "
      "\"PoolRoute\", \"pool\": \"p\", \"hash\": \"Crc32\"}, \"s:\": {\"type\": "
      "\"PoolRoute\", \"pool\": \"p\", \"hash\": {\"hash_func\": \"Crc32\", \"salt\": "
      "\"pepper\"}}, \"w:\": {\"type\": \"PoolRoute\", \"pool\": \"p\", \"hash\": "
      "{\"hash_func\": \"WeightedCh3\", \"weights\": [0, 1, 0.5, 0]}}, \"h:\": {\"type\": "
      "\"HashRoute\", \"hash_func\": \"Crc32\", \"salt\": \"x\", \"children\": "
      "[\"Pool|p\"]}}, \"wildcard\": \"PoolRoute|p\"}}"),
    C("{\"pools\": {\"old\": {\"servers\": [\"127.0.0.1:11211\"]}, \"new\": {\"servers\": "
      "[\"127.0.0.1:11211\"]}}, \"route\": {\"type\": \"PrefixSelectorRoute\", \"policies\": "
      "{\"before:\": \"127.0.0.1:11211\", \"after:\": \"127.0.0.1:11211\", \"during:\": "
      "\"127.0.0.1:11211\"}, \"wildcard\": \"PoolRoute|old\"}}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:11211\"]}, \"B\": {\"servers\": "
      "[\"127.0.0.1:11211\"]}}, \"routes\": [{\"aliases\": [\"/r/a/\"], \"route\": "
      "\"PoolRoute|A\"}, {\"aliases\": [\"/r/b/\"], \"route\": \"Pool|B\"}]}"),
    C("{\"pools\": {\"main\": {\"servers\": [\"127.0.0.1:11211\"]}, \"shadow\": "
      "{\"servers\": [\"127.0.0.1:11211\"]}, \"keys\": {\"servers\": "
      "[\"127.0.0.1:11211\"]}}, \"route\": {\"type\": \"PoolRoute\", \"pool\": \"main\", "
      "\"shadows\": [{\"target\": \"PoolRoute|shadow\", \"index_range\": [0, 1], "
      "\"key_fraction_range\": [0, 1], \"key_fraction_range_rv\": \"kfr\"}, {\"target\": "
      "\"PoolRoute|keys\", \"keys_to_shadow\": [\"k3\", \"k7\"]}]}}"),
    C("{\"pools\": {\"dead\": {\"servers\": [\"localhost:0\"]}, \"gut\": {\"servers\": "
      "[\"127.0.0.1:11211\"]}}, \"route\": {\"type\": \"FailoverRoute\", \"failover_tag\": "
      "true, \"children\": [\"PoolRoute|dead\", \"PoolRoute|gut\"]}}"),
    C("{\"pools\": \"127.0.0.1:11211\", \"route\": {\"type\": \"PrefixSelectorRoute\", "
      "\"policies\": {\"lf:\": {\"type\": \"FailoverRoute\", \"children\": "
      "\"127.0.0.1:11211\", \"failover_policy\": {\"type\": \"LeastFailuresPolicy\", "
      "\"max_tries\": 3}}, \"in:\": {\"type\": \"FailoverRoute\", \"children\": "
      "\"127.0.0.1:11211\", \"failover_policy\": {\"type\": \"InOrderPolicy\", "
      "\"max_tries\": 3}}}, \"wildcard\": {\"type\": \"FailoverRoute\", \"children\": "
      "\"127.0.0.1:11211\"}}}"),
    C("{\"pools\": {\"a\": {\"servers\": [\"127.0.0.1:11211\"]}, \"b\": {\"servers\": "
      "[\"127.0.0.1:11211\"]}, \"c\": {\"servers\": [\"127.0.0.1:11211\"]}, \"k\": "
      "{\"servers\": [\"127.0.0.1:11211\"]}}, \"route\": {\"type\": \"PrefixSelectorRoute\", "
      "\"policies\": {\"rp:\": {\"type\": \"ModifyKeyRoute\", \"target\": \"PoolRoute|k\", "
      "\"set_routing_prefix\": \"/x/y/\"}, \"p:\": {\"type\": \"ModifyKeyRoute\", "
      "\"target\": \"127.0.0.1:11211\", \"ensure_key_prefix\": \"p:x:\"}, \"r:\": {\"type\": "
      "\"ModifyKeyRoute\", \"target\": \"127.0.0.1:11211\", \"replace_key_prefix\": \"r:\", "
      "\"ensure_key_prefix\": \"new:\"}, \"i:\": {\"type\": \"ModifyKeyRoute\", \"target\": "
      "\"127.0.0.1:11211\", \"ensure_key_prefix\": \"j:\", \"modify_inplace\": true}, "
      "\"s:\": {\"type\": \"ModifyKeyRoute\", \"target\": \"127.0.0.1:11211\", "
      "\"set_key_suffix\": \":v2\"}, \"rnd:\": {\"type\": \"RandomRoute\", \"children\": "
      "[\"PoolRoute|a\", \"PoolRoute|b\", \"PoolRoute|c\"]}}, \"wildcard\": "
      "\"127.0.0.1:11211\"}}"),
    C("{\"pools\": {\"a\": {\"servers\": [\"127.0.0.1:11211\"]}}, \"route\": {\"type\": "
      "\"BigValueRoute\", \"target\": \"PoolRoute|a\", \"split_threshold\": 4, "
      "\"batch_size\": 0, \"hide_reply_flag\": true}}"),
    C("{\"pools\": {\"live\": {\"servers\": [\"127.0.0.1:11211\"]}, \"dead\": {\"servers\": "
      "[\"localhost:0\"]}}, \"route\": {\"type\": \"PrefixSelectorRoute\", \"policies\": "
      "{\"best:\": {\"type\": \"MissFailoverRoute\", \"children\": \"127.0.0.1:11211\", "
      "\"return_best_on_error\": true}}, \"wildcard\": {\"type\": \"MissFailoverRoute\", "
      "\"children\": \"127.0.0.1:11211\"}}}"),
    C("{\"pools\": {\"p\": {\"servers\": [\"127.0.0.1:11211\"]}}, \"route\": {\"type\": "
      "\"PoolRoute\", \"pool\": \"p\", \"shard_splits\": {\"1\": 3, \"7\": "
      "{\"new_split_size\": 1}}}}"),
    C("{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:11211\"], \"probe_min_ms\": 20, "
      "\"probe_max_ms\": 50}}, \"route\": {\"type\": \"FailoverRoute\", \"name\": \"lp\", "
      "\"enable_lease_pairing\": true, \"children\": \"Pool|A\"}}"),
    C("{\"pools\": {\"a\": {\"servers\": [\"127.0.0.1:11211\"]}}, \"route\": {\"type\": "
      "\"PoolRoute\", \"pool\": \"a\", \"slow_warmup\": {\"failoverTarget\": \"NullRoute\", "
      "\"settings\": {\"enable_threshold\": 0.5, \"disable_threshold\": 0.9, \"start\": 0.5, "
      "\"step\": 0.1, \"min_requests\": 10}}}}"),
    C("{\"pools\": {\"m\": {\"servers\": [\"127.0.0.1:11211\"]}, \"s\": {\"servers\": "
      "[\"127.0.0.1:11211\"]}}, \"route\": {\"type\": \"PoolRoute\", \"pool\": \"m\", "
      "\"shadows\": [{\"target\": \"PoolRoute|s\", \"index_range\": [0, 0], "
      "\"index_range_rv\": \"r\", \"key_fraction_range\": [0, 1]}]}}"),
    C("{\"pools\": {\"s\": {\"servers\": [\"127.0.0.1:11211\", \"127.0.0.1:11212\"], "
      "\"server_timeout\": 100, \"tko_timeouts\": 1000, \"failure_domains\": [1, 1, 2, 2, 3, "
      "3, 4, 4]}}, \"route\": {\"type\": \"SaltedFailoverRoute\", \"pool\": \"s\", "
      "\"failover_policy\": {\"type\": \"DeterministicOrderPolicy\", \"max_tries\": "
      "\"127.0.0.1:11211\", \"max_error_tries\": \"127.0.0.1:11211\", "
      "\"enable_failure_domains\": \"127.0.0.1:11211\"}}}"),
    C("{\"pools\": {\"a\": {\"servers\": [\"127.0.0.1:11211\"]}}, \"route\": {\"type\": "
      "\"PrefixSelectorRoute\", \"policies\": {\"slow:\": \"127.0.0.1:11211\"}, "
      "\"wildcard\": \"PoolRoute|a\"}}"),
    /* doc/libcellar.md */
    C("{\n" "  \"pools\": {\n"
      "    \"main\":   { \"servers\": [\"10.0.0.1:11211\", \"10.0.0.2:11211\"], \"udp\": "
      "true },\n" "    \"gutter\": { \"servers\": [\"10.0.9.1:11211\"] },\n"
      "    \"rep\":    { \"servers\": [\"10.0.1.1:11211\", \"10.0.1.2:11211\"] }\n" "  },\n"
      "  \"route\": { \"type\": \"PrefixSelectorRoute\",\n" "    \"policies\": {\n"
      "      \"rep:\": { \"type\": \"OperationSelectorRoute\",\n"
      "                \"operation_policies\": { \"get\": \"LatestRoute|Pool|rep\" },\n"
      "                \"default_policy\": \"AllSyncRoute|Pool|rep\" } },\n"
      "    \"wildcard\": { \"type\": \"FailoverWithExptimeRoute\", \"normal\": "
      "\"PoolRoute|main\",\n"
      "                  \"failover\": [\"PoolRoute|gutter\"], \"failover_exptime\": 10 } }\n"
      "}\n"),
    /* packaging/etc/router.json */
    C("{\n" "  \"pools\": {\n" "    \"main\": { \"servers\": [\"127.0.0.1:11211\"] }\n" "  },\n"
      "  \"route\": \"PoolRoute|main\"\n" "}\n"),
    /* examples/router/regions.json */
    C("// The layout of \"Scaling Memcache at Facebook\" (NSDI 2013) for cellar-router:\n"
      "// two regions, east and west, each with two front-end clusters (fe1, fe2)\n"
      "// and a regional pool that a region's clusters share; a gutter pool takes\n"
      "// a front-end cluster's keys while one of its servers is down.\n" "//\n"
      "// Each router runs with its own cluster's prefix, e.g.\n"
      "//   cellar-router --config regions.json -R /east/fe1/\n" "// and then:\n"
      "//   get k                 its cluster's pool (the gutter when that fails)\n"
      "//   get r:k               its region's regional pool (keys starting \"r:\")\n"
      "//   get /west/fe2/k       another cluster, asked for k\n"
      "//   delete /east/*/k      every cluster of a region\n"
      "//   delete /*/*/k         every cluster everywhere, each pool once\n"
      "// Addresses are on 127.0.0.1 so that the example runs as it is; the tests\n"
      "// (tests/integration/test_router_prefixes.py) start a cellard on each.\n" "{\n"
      "  \"pools\": {\n"
      "    \"east.fe1\":      { \"servers\": [\"127.0.0.1:21101\", \"127.0.0.1:21102\"] },\n"
      "    \"east.fe2\":      { \"servers\": [\"127.0.0.1:21201\", \"127.0.0.1:21202\"] },\n"
      "    \"east.regional\": { \"servers\": [\"127.0.0.1:21301\"] },\n"
      "    \"west.fe1\":      { \"servers\": [\"127.0.0.1:22101\", \"127.0.0.1:22102\"] },\n"
      "    \"west.fe2\":      { \"servers\": [\"127.0.0.1:22201\", \"127.0.0.1:22202\"] },\n"
      "    \"west.regional\": { \"servers\": [\"127.0.0.1:22301\"] },\n"
      "    \"gutter\":        { \"servers\": [\"127.0.0.1:23001\"] }\n" "  },\n"
      "  \"named_handles\": {\n"
      "    \"east\": { \"type\": \"FailoverWithExptimeRoute\", \"normal\": "
      "\"PoolRoute|east.regional\",\n"
      "              \"failover\": \"PoolRoute|gutter\", \"failover_exptime\": 10 },\n"
      "    \"west\": { \"type\": \"FailoverWithExptimeRoute\", \"normal\": "
      "\"PoolRoute|west.regional\",\n"
      "              \"failover\": \"PoolRoute|gutter\", \"failover_exptime\": 10 }\n" "  },\n"
      "  \"routes\": [\n" "    { \"aliases\": [\"/east/fe1/\"],\n"
      "      \"route\": { \"type\": \"PrefixSelectorRoute\", \"policies\": { \"r:\": "
      "\"east\" },\n"
      "                 \"wildcard\": { \"type\": \"FailoverWithExptimeRoute\",\n"
      "                               \"normal\": \"PoolRoute|east.fe1\",\n"
      "                               \"failover\": \"PoolRoute|gutter\", "
      "\"failover_exptime\": 10 } } },\n" "    { \"aliases\": [\"/east/fe2/\"],\n"
      "      \"route\": { \"type\": \"PrefixSelectorRoute\", \"policies\": { \"r:\": "
      "\"east\" },\n"
      "                 \"wildcard\": { \"type\": \"FailoverWithExptimeRoute\",\n"
      "                               \"normal\": \"PoolRoute|east.fe2\",\n"
      "                               \"failover\": \"PoolRoute|gutter\", "
      "\"failover_exptime\": 10 } } },\n" "    { \"aliases\": [\"/west/fe1/\"],\n"
      "      \"route\": { \"type\": \"PrefixSelectorRoute\", \"policies\": { \"r:\": "
      "\"west\" },\n"
      "                 \"wildcard\": { \"type\": \"FailoverWithExptimeRoute\",\n"
      "                               \"normal\": \"PoolRoute|west.fe1\",\n"
      "                               \"failover\": \"PoolRoute|gutter\", "
      "\"failover_exptime\": 10 } } },\n" "    { \"aliases\": [\"/west/fe2/\"],\n"
      "      \"route\": { \"type\": \"PrefixSelectorRoute\", \"policies\": { \"r:\": "
      "\"west\" },\n"
      "                 \"wildcard\": { \"type\": \"FailoverWithExptimeRoute\",\n"
      "                               \"normal\": \"PoolRoute|west.fe2\",\n"
      "                               \"failover\": \"PoolRoute|gutter\", "
      "\"failover_exptime\": 10 } } }\n" "  ]\n" "}\n"),
    /* server lists */
    C("10.0.0.1:11211,10.0.0.2:11211"),
    C("127.0.0.1:11301:1 127.0.0.1:11302"),
    C("[::1]:11211:4,[::1]:12345"),
    C("localhost:11211:3"),
    C("/tmp/cellar.sock"),
    C("unix:/tmp/cellar.sock"),
    C("127.0.0.1:99999"),
    C("127.0.0.1"),
    C("a:b:c"),
    C("fe80::1"),
    C("no-such-host.invalid:11211"),
    C("127.0.0.1:0"),
    C(" , ,"),
    C("[::1"),
    C("127.0.0.1:1:4294967296"),
    /* found by this fuzzer, each a crash until fixed: two pools without servers (the
       second's realloc to 0 bytes freed the servers, then freed again); a MissFailoverRoute
       over no children (a NullRoute, its best_on_error written past it); a pool's server
       that is an inline pool without a name (strcmp of NULL) */
    C("{\"pools\": {\"E\": {\"servers\": []}, \"F\": {\"servers\": []}}, "
      "\"route\": \"NullRoute\"}"),
    C("{\"route\": {\"type\": \"MissFailoverRoute\", \"children\": [], "
      "\"return_best_on_error\": true}}"),
    C("{\"pools\": {\"A\": {\"servers\": [{\"type\": \"Pool\"}]}}, "
      "\"route\": \"PoolRoute|A\"}"),
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static const char *const words[] = {
    "{", "}", "[", "]", ",", ":", "\"", "\\", "//", "/*", "*/", "null", "true", "false", "0",
    "-1", "1.5", "4294967296", "1e999", "\"pools\"", "\"servers\"", "\"route\"", "\"routes\"",
    "\"named_handles\"", "\"macros\"", "\"type\"", "\"name\"", "\"children\"",
    "\"policies\"", "\"wildcard\"", "\"aliases\"", "\"weights\"", "\"hash\"",
    "\"protocol\"", "\"shadows\"", "\"target\"", "\"failover\"", "\"normal\"",
    "\"failover_policy\"", "\"params\"", "\"result\"", "\"macroDef\"", "\"constDef\"",
    "%N%", "%POOL%", "@int(", "@str(", "@merge(", "@select(", "@if(", "@import(", ")",
    "\"PoolRoute|", "Pool|", "\"AllSyncRoute\"", "\"FailoverRoute\"", "\"HashRoute\"",
    "\"PrefixSelectorRoute\"", "\"OperationSelectorRoute\"", "\"ShadowRoute\"",
    "\"MigrateRoute\"", "\"WarmUpRoute\"", "\"BigValueRoute\"", "\"ModifyKeyRoute\"",
    "\"LatencyInjectionRoute\"", "\"SaltedFailoverRoute\"", "\"ShardSplitRoute\"",
    "\"L1L2CacheRoute\"", "\"ErrorRoute\"", "\"NullRoute\"", "\"ketama\"", "\"ch3\"",
    "\"wch3\"", "\"binary\"", "127.0.0.1:11211", "[::1]:1", "/tmp/s", "localhost", "/a/b/",
    "/*/*/", " ", "\n", "\t", "",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

/* Strings a mutation writes over a JSON string's contents. */
static const char *const names[] = {
    "A", "B", "E", "M", "C", "x", "", "pools", "servers", "route", "routes", "named_handles",
    "macros", "type", "name", "children", "policies", "wildcard", "aliases", "weights", "hash",
    "protocol", "pool", "shadows", "target", "normal", "failover", "failover_exptime",
    "failover_policy", "operation_policies", "default_policy", "params", "result", "default",
    "optional", "dictionary", "key", "macroDef", "constDef", "PoolRoute", "Pool", "PoolRoute|A",
    "Pool|B", "PoolRoute|E", "Pool|M", "NullRoute", "ErrorRoute", "AllSyncRoute|Pool|A",
    "FailoverRoute|Pool|A", "HashRoute", "LatestRoute", "MissFailoverRoute", "ShadowRoute",
    "MigrateRoute", "WarmUpRoute", "BigValueRoute", "ModifyKeyRoute", "ModifyExptimeRoute",
    "LatencyInjectionRoute", "SaltedFailoverRoute", "ShardSplitRoute", "RandomRoute",
    "HostIdRoute", "L1L2CacheRoute", "PrefixSelectorRoute", "OperationSelectorRoute",
    "DeterministicOrderPolicy", "LeastFailuresPolicy", "InOrderPolicy", "ch3", "wch3", "ketama",
    "modula", "rendezvous", "crc32", "Crc32", "ascii", "text", "meta", "binary", "get", "set",
    "delete", "lease-set", "127.0.0.1:11211", "127.0.0.1:0", "[::1]:1:2", "/tmp/cellar.sock",
    "localhost", "no-such-host.invalid", "/a/b/", "/*/*/", "/a/", "%N%", "%POOL%", "%x%",
    "a%b%c", "@p(A)", "@int(5)", "@str(x)", "@merge()", "@import(x.json)", "\\", "%",
};

static const char *const numbers[] = {
    "0", "1", "2", "-1", "3", "10", "0.5", "1.0", "100000", "65535", "65536", "2147483647",
    "4294967295", "4294967296", "9223372036854775807", "1e300", "-0",
};

/* Where the strings, numbers and balanced {...} / [...] of a JSON text are. */
struct json_spans {
    size_t str[64][2], nstr;        /* a string's contents: [start, end) inside its quotes */
    size_t num[32][2], nnum;
    size_t box[64][2], nbox;        /* from '{' or '[' to just past its closing match */
    bool listed[64];                /* that box is an element of a list */
};

static void json_spans(const char *b, size_t len, struct json_spans *s) {
    size_t open[64], depth = 0;
    s->nstr = s->nnum = s->nbox = 0;
    for (size_t i = 0; i < len; i++) {
        char c = b[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < len && b[j] != '"')
                j += b[j] == '\\' ? 2 : 1;
            if (j >= len)
                return;
            if (s->nstr < 64)
                s->str[s->nstr][0] = i + 1, s->str[s->nstr++][1] = j;
            i = j;
        } else if ((c >= '0' && c <= '9') || c == '-') {
            size_t j = i;
            while (j < len && strchr("0123456789+-.eE", b[j]) != NULL && b[j] != '\0')
                j++;
            if (s->nnum < 32)
                s->num[s->nnum][0] = i, s->num[s->nnum++][1] = j;
            i = j - 1;
        } else if (c == '{' || c == '[') {
            if (depth < 64)
                open[depth] = i;
            depth++;
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
            if (depth < 64 && s->nbox < 64) {
                s->listed[s->nbox] = depth > 0 && depth <= 64 && b[open[depth - 1]] == '[';
                s->box[s->nbox][0] = open[depth], s->box[s->nbox++][1] = i + 1;
            }
        }
    }
}

/* b[at, end) replaced by n bytes of s; cut short where the buffer ends. */
static size_t replace(char *b, size_t len, size_t at, size_t end, const char *s, size_t n) {
    memmove(b + at, b + end, len - end);
    return fuzz_insert(b, len - (end - at), at, s, n);
}

/*
 * Mutations that keep a configuration JSON most of the time, so that it
 * gets past the syntax to the pools and routes: a string's contents or a
 * number replaced by one the grammar knows, a {...} or [...] replaced by
 * one from another corpus entry, dropped to null, {} or [], or repeated
 * in its list; and one time in four, the line mutator's byte noise.
 */
static size_t mutate(char *b, size_t len) {
    struct json_spans s;
    json_spans(b, len, &s);
    switch (fuzz_rnd() % 8) {
    case 0:
    case 1:
    case 2:
        if (s.nstr) {
            size_t k = fuzz_below(s.nstr);
            const char *w = names[fuzz_below(sizeof(names) / sizeof(names[0]))];
            return replace(b, len, s.str[k][0], s.str[k][1], w, strlen(w));
        }
        break;
    case 3:
        if (s.nnum) {
            size_t k = fuzz_below(s.nnum);
            const char *w = numbers[fuzz_below(sizeof(numbers) / sizeof(numbers[0]))];
            return replace(b, len, s.num[k][0], s.num[k][1], w, strlen(w));
        }
        break;
    case 4:
        if (s.nbox) {
            const struct fuzz_entry *e = &fuzz_cfg->corpus[fuzz_below(fuzz_cfg->ncorpus)];
            static struct json_spans o;
            json_spans(e->s, e->len, &o);
            if (o.nbox) {
                size_t k = fuzz_below(s.nbox), j = fuzz_below(o.nbox);
                return replace(b, len, s.box[k][0], s.box[k][1], e->s + o.box[j][0],
                               o.box[j][1] - o.box[j][0]);
            }
        }
        break;
    case 5:
        if (s.nbox) {
            static const char *const empty[] = {"null", "{}", "[]", "\"\"", "1"};
            size_t k = fuzz_below(s.nbox);
            const char *w = empty[fuzz_below(5)];
            return replace(b, len, s.box[k][0], s.box[k][1], w, strlen(w));
        }
        break;
    case 6:
        for (size_t tries = 0; s.nbox && tries < 4; tries++) {
            static char twice[FUZZ_CAP + 1];
            size_t k = fuzz_below(s.nbox), n = s.box[k][1] - s.box[k][0];
            if (!s.listed[k])
                continue;
            twice[0] = ',';
            memcpy(twice + 1, b + s.box[k][0], n);
            return fuzz_insert(b, len, s.box[k][1], twice, n + 1);
        }
        break;
    default:
        break;
    }
    return fuzz_mutate_line(b, len);
}

static const size_t run_sizes[] = {16, 100, 250, 1000, 4096};

static void report(long iters) {
    printf("fuzz_config: %ld inputs (parsed %ld, with %ld servers in all; refused %ld; %ld with "
           "routing settings; %ld warnings), all invariants held\n",
           iters, seen_ok, seen_servers, seen_refused, seen_routing, seen_warnings);
}

static const struct fuzz_config cfg = {
    .name = "fuzz_config",
    .check = check_one,
    .report = report,
    .seed = 0xc0f16a11ce11a12ULL,
    .corpus = corpus,
    .ncorpus = NCORPUS,
    .max_mutations = 3,
    .random_max = 200,
    .random_first = '{',
    .mutate = mutate,
    .words = words,
    .nwords = NWORDS,
    .interesting = FUZZ_ENTRY("{}[],:\"\\/*%@|0 \n"),
    .run_sizes = run_sizes,
    .nrun_sizes = sizeof(run_sizes) / sizeof(run_sizes[0]),
    .run_fill = "[{a",
};

FUZZ_DRIVER(&cfg)
