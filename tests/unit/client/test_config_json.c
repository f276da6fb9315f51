/*
 * test_config_json.c -- mcrouter's JSON configuration through the public
 * cellar_config_parse(): the route tree it builds (route_describe(), exact
 * strings), the pools' settings and weights, comments and trailing commas,
 * named handles (shared, inline, used before their definition), every
 * route kind in both the object and the string form, the example of
 * distributed.md 1.2 with and without its macro, mcrouter's macros, and a table of invalid
 * configurations, each with the place and the reason it is refused.
 * Nothing is connected: addresses are only resolved.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cellar.h"
#include "client/client_int.h"
#include "client/ring.h"
#include "client/ring_int.h"
#include "harness.h"

static char errbuf[1024];
static char descbuf[4096];

/* Parses text with opt and routing (NULL: defaults); NULL with errbuf set on error. */
static struct cellar_config *parse_routing(const char *text, const struct cellar_options *opt,
                                           const struct cellar_routing *routing) {
    struct cellar_config *cfg = NULL;
    errbuf[0] = '\0';
    if (cellar_config_parse_routing(&cfg, text, opt, routing, errbuf, sizeof(errbuf)) !=
        CELLAR_OK)
        return NULL;
    return cfg;
}

static struct cellar_config *parse_opt(const char *text, const struct cellar_options *opt) {
    return parse_routing(text, opt, NULL);
}

#define ASSERT_PARSED(cfg)                                                 \
    do {                                                                   \
        if ((cfg) == NULL)                                                 \
            TH_FAIL("parse failed: %s", errbuf);                           \
    } while (0)

static struct cellar_config *parse(const char *text) {
    return parse_opt(text, NULL);
}

static const char *desc(const struct cellar_config *cfg, const struct route *r) {
    route_describe(r, cfg, descbuf, sizeof(descbuf));
    return descbuf;
}

/* The root's description of text parsed with routing (NULL: none), or "ERROR: why". */
static const char *root_routing(const char *text, const struct cellar_routing *routing) {
    struct cellar_config *cfg = parse_routing(text, NULL, routing);
    if (cfg == NULL) {
        snprintf(descbuf, sizeof(descbuf), "ERROR: %s", errbuf);
        return descbuf;
    }
    desc(cfg, cfg->root);
    cellar_config_release(&cfg);
    return descbuf;
}

static const char *root_of(const char *text) {
    return root_routing(text, NULL);
}

#define POOLS_AB                                                                     \
    "\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:11301\", \"127.0.0.1:11302\"]},"  \
    " \"B\": {\"servers\": [\"127.0.0.1:11401\"]}, \"E\": {\"servers\": []},"               \
    " \"M\": {\"servers\": [\"127.0.0.1:11501\", {\"type\": \"ErrorRoute\"}]}}"

/* ---------------------------------------------------------------------- */
/* Pools                                                                    */
/* ---------------------------------------------------------------------- */

TEST(one_pool_with_defaults) {
    struct cellar_config *cfg = parse("{" POOLS_AB ", \"route\": \"PoolRoute|A\"}");
    ASSERT_PARSED(cfg);
    ASSERT_STR(desc(cfg, cfg->root), "PoolRoute(A)");
    ASSERT_EQ(cfg->npools, 4);     /* E has no servers, as mcrouter allows */
    ASSERT_EQ(cfg->nservers, 4);   /* M's ErrorRoute is none */
    ASSERT_STR(cfg->pools[0].name, "A");
    ASSERT_STR(cfg->pools[1].name, "B");
    ASSERT_EQ(cfg->pools[1].first, 2);
    ASSERT_STR(cellar_config_server_name(cfg, 1), "127.0.0.1:11302");
    const struct cl_pool *a = &cfg->pools[0];
    ASSERT_STR(a->wire->name, "ascii");   /* mcrouter's default */
    ASSERT_STR(ring_kind(a->ring), "ch3");
    ASSERT_EQ(a->server_timeout_ms, 1000);
    ASSERT_EQ(a->connect_timeout_ms, 1000);
    ASSERT_EQ(a->tko_timeouts, 3);
    ASSERT_EQ(a->probe_min_ms, 1000);
    ASSERT_EQ(a->probe_max_ms, 60000);
    ASSERT_EQ(a->spool_ops, 1u << MSG_DELETE);
    cellar_config_release(&cfg);
}

TEST(pool_settings_override_the_options) {
    struct cellar_options opt = {.protocol = "binary", .hash = "modula", .server_timeout_ms = 700,
                                 .tko_timeouts = 9};
    struct cellar_config *cfg = parse_opt(
        "{\"pools\": {"
        " \"a\": {\"servers\": [\"127.0.0.1:11301\"], \"protocol\": \"ascii\","
        "        \"server_timeout\": 250, \"hash\": \"rendezvous\", \"tko_timeouts\": 2,"
        "        \"probe_min_ms\": 50, \"probe_max_ms\": 400, \"spool\": [\"delete\", \"touch\"]},"
        " \"t\": {\"servers\": [\"127.0.0.1:11302\"], \"protocol\": \"text\","
        "        \"connect_timeout\": 30, \"spool\": []},"
        " \"m\": {\"servers\": [\"127.0.0.1:11303\"], \"protocol\": \"meta\", \"hash\": \"ch3\"},"
        " \"d\": {\"servers\": [\"127.0.0.1:11304\"]}},"
        " \"route\": {\"type\": \"AllSyncRoute\","
        "   \"children\": [\"PoolRoute|a\", \"PoolRoute|t\", \"PoolRoute|m\", \"PoolRoute|d\"]}}",
        &opt);
    ASSERT_PARSED(cfg);
    const struct cl_pool *p = cfg->pools;
    ASSERT_STR(p[0].wire->name, "ascii");     /* text, meta where text cannot say it */
    ASSERT_STR(ring_kind(p[0].ring), "rendezvous");
    ASSERT_EQ(p[0].server_timeout_ms, 250);
    ASSERT_EQ(p[0].connect_timeout_ms, 250);
    ASSERT_EQ(p[0].tko_timeouts, 2);
    ASSERT_EQ(p[0].probe_min_ms, 50);
    ASSERT_EQ(p[0].probe_max_ms, 400);
    ASSERT_EQ(p[0].spool_ops, (1u << MSG_DELETE) | (1u << MSG_TOUCH));
    ASSERT_EQ(p[1].spool_ops, 0);
    ASSERT_EQ(p[2].spool_ops, 1u << MSG_DELETE);
    ASSERT_STR(p[1].wire->name, "text");
    ASSERT_STR(ring_kind(p[1].ring), "modula");
    ASSERT_EQ(p[1].server_timeout_ms, 700);
    ASSERT_EQ(p[1].connect_timeout_ms, 30);
    ASSERT_EQ(p[1].tko_timeouts, 9);
    ASSERT_STR(p[2].wire->name, "meta");
    ASSERT_STR(ring_kind(p[2].ring), "ch3");
    ASSERT_STR(p[3].wire->name, "binary");
    ASSERT_STR(ring_kind(p[3].ring), "modula");
    ASSERT_EQ(p[3].server_timeout_ms, 700);
    cellar_config_release(&cfg);
}

TEST(weights_go_into_the_entries) {
    struct cellar_config *cfg = parse(
        "{\"pools\": {\"k\": {\"hash\": \"ketama\","
        "  \"servers\": [\"127.0.0.1:11301\", \"[::1]:11302\", \"localhost\", \"[::1]\"],"
        "  \"weights\": [1, 2, 3, 4]}},"
        " \"route\": \"PoolRoute|k\"}");
    ASSERT_PARSED(cfg);
    ASSERT_STR(ring_kind(cfg->pools[0].ring), "ketama");
    ASSERT_EQ(cfg->nservers, 4);
    ASSERT_STR(cfg->servers[0].name, "127.0.0.1:11301:1");
    ASSERT_STR(cfg->servers[1].name, "[::1]:11302:2");
    ASSERT_STR(cfg->servers[2].name, "localhost:11211:3");
    ASSERT_STR(cfg->servers[3].name, "[::1]:11211:4");
    for (unsigned i = 0; i < 4; i++)
        ASSERT_EQ(cfg->servers[i].weight, i + 1);
    ASSERT_EQ(cfg->servers[1].port, 11302);
    ASSERT_EQ(cfg->servers[2].port, 11211);
    ASSERT_STR(cfg->servers[1].host, "::1");
    cellar_config_release(&cfg);
}

TEST(inline_pool_in_pool_route) {
    struct cellar_config *cfg = parse(
        "{\"route\": {\"type\": \"FailoverRoute\", \"children\": ["
        "  {\"type\": \"PoolRoute\", \"pool\": {\"name\": \"in\", \"protocol\": \"binary\","
        "   \"servers\": [\"127.0.0.1:11501\", \"127.0.0.1:11502\"]}},"
        "  \"Pool|in\"]}}");
    ASSERT_PARSED(cfg);
    ASSERT_STR(desc(cfg, cfg->root),
               "FailoverRoute[PoolRoute(in),Server(127.0.0.1:11501),Server(127.0.0.1:11502)]");
    ASSERT_STR(cfg->pools[0].wire->name, "binary");
    cellar_config_release(&cfg);
}

/* ---------------------------------------------------------------------- */
/* Comments and trailing commas                                             */
/* ---------------------------------------------------------------------- */

TEST(comments_and_trailing_commas) {
    const char *text =
        "// a line comment first\n"
        "{ /* a block\n"
        "     comment over lines, with \"quotes\" and a // inside */\n"
        "  \"pools\": {\n"
        "    \"A\": { \"servers\": [\"127.0.0.1:11301\", \"127.0.0.1:11302\",], }, // trailing\n"
        "    \"B\": { \"servers\": [\"127.0.0.1:11401\" /* one */ , /* more? */ ] },\n"
        "  },\n"
        "  \"route\": { \"type\": \"PrefixSelectorRoute\", \"policies\": {\n"
        "      \"a//b\": \"PoolRoute|A\",   // a // in a string is no comment\n"
        "      \"c/*d\": \"PoolRoute|B\",\n"
        "      \"e,]\": \"NullRoute\", },\n"
        "    \"wildcard\": \"PoolRoute|B\", // é comment with UTF-8\n"
        "  }, /* last */\n"
        "}\n";
    ASSERT_STR(root_of(text), "PrefixSelectorRoute{a//b:PoolRoute(A),c/*d:PoolRoute(B),"
                              "e,]:NullRoute,wildcard:PoolRoute(B)}");
}

TEST(syntax_errors_keep_their_line_and_column) {
    /* Comments before the error are blanked, not removed. */
    ASSERT_STR(root_of("{ /* one\n two \u00e9\u00e9 */ \"route\": \"NullRoute\"\n"
                       "  // three\n   , , }"),
               "ERROR: line 4, column 6: string or '}' expected near ','");
    /* A comment's UTF-8 characters count one column each, as jansson counts. */
    ASSERT_STR(root_of("{ /* \u00e9\u00e9 */ \"route\": 1 2}"),
               "ERROR: line 1, column 23: '}' expected near '2'");
    ASSERT_STR(root_of("{\"route\": [1,,]}"),
               "ERROR: line 1, column 14: unexpected token near ','");
    ASSERT_STR(root_of("{\"route\": \"NullRoute\"}\n/* open"),
               "ERROR: line 2, column 1: unterminated /* comment");
}

/* ---------------------------------------------------------------------- */
/* Named handles                                                            */
/* ---------------------------------------------------------------------- */

TEST(named_handles_are_shared) {
    struct cellar_config *cfg = parse(
        "{" POOLS_AB ","
        " \"named_handles\": [{\"type\": \"PoolRoute\", \"name\": \"wc\", \"pool\": \"A\"},"
        "                     {\"type\": \"NullRoute\", \"name\": \"unused\"}],"
        " \"route\": {\"type\": \"AllSyncRoute\", \"children\": [\"wc\", \"wc\", \"PoolRoute|B\"]}}");
    ASSERT_PARSED(cfg);
    ASSERT_STR(desc(cfg, cfg->root), "AllSyncRoute[PoolRoute(A),PoolRoute(A),PoolRoute(B)]");
    ASSERT(cfg->root->children[0] == cfg->root->children[1]);
    cellar_config_release(&cfg);
}

TEST(named_handles_as_an_object) {
    struct cellar_config *cfg = parse(
        "{" POOLS_AB ","
        " \"named_handles\": {\"x\": {\"type\": \"PoolRoute\", \"pool\": \"A\"},"
        "                     \"y\": {\"type\": \"FailoverRoute\", \"name\": \"y\","
        "                            \"children\": [\"x\", \"PoolRoute|B\"]}},"
        " \"route\": \"y\"}");
    ASSERT_PARSED(cfg);
    ASSERT_STR(desc(cfg, cfg->root), "FailoverRoute[PoolRoute(A),PoolRoute(B)]");
    cellar_config_release(&cfg);
    /* mcrouter's object form also takes a string or a list as a handle */
    ASSERT_STR(root_of("{" POOLS_AB ", \"named_handles\": {\"x\": \"PoolRoute|A\","
                       " \"y\": [\"PoolRoute|B\"], \"z\": \"x\"},"
                       " \"route\": {\"type\": \"FailoverRoute\", \"children\": [\"z\", \"y\"]}}"),
               "FailoverRoute[PoolRoute(A),PoolRoute(B)]");
    ASSERT(strstr(root_of("{" POOLS_AB ", \"named_handles\": {\"x\": \"x\"}, \"route\": \"x\"}"),
                  "used inside its own definition") != NULL);
}

TEST(inline_named_handles_before_and_after_use) {
    /* "late" is used in the first child and defined in the second; "g" is
     * defined inside a named handle that is referenced twice. */
    struct cellar_config *cfg = parse(
        "{" POOLS_AB ","
        " \"named_handles\": [{\"name\": \"outer\", \"type\": \"MissFailoverRoute\","
        "   \"children\": [{\"type\": \"PoolRoute\", \"name\": \"g\", \"pool\": \"B\"}, \"late\"]}],"
        " \"route\": {\"type\": \"AllInitialRoute\", \"children\": ["
        "   \"late\","
        "   {\"type\": \"FailoverRoute\", \"name\": \"late\", \"children\": \"Pool|A\"},"
        "   \"outer\", \"g\"]}}");
    ASSERT_PARSED(cfg);
    const char *late = "FailoverRoute[Server(127.0.0.1:11301),Server(127.0.0.1:11302)]";
    char want[1024];
    snprintf(want, sizeof(want), "AllInitialRoute[%s,%s,MissFailoverRoute[PoolRoute(B),%s],"
                                 "PoolRoute(B)]", late, late, late);
    ASSERT_STR(desc(cfg, cfg->root), want);
    struct route **c = cfg->root->children;
    ASSERT(c[0] == c[1]);
    ASSERT(c[2]->children[1] == c[0]);
    ASSERT(c[2]->children[0] == c[3]);
    cellar_config_release(&cfg);
}

/* ---------------------------------------------------------------------- */
/* Every route kind                                                         */
/* ---------------------------------------------------------------------- */

struct row {
    const char *route;          /* the value of "route", over POOLS_AB */
    const char *want;           /* route_describe() of the root */
};

static const struct row kinds[] = {
    {"\"PoolRoute|A\"", "PoolRoute(A)"},
    {"{\"type\": \"PoolRoute\", \"pool\": \"B\"}", "PoolRoute(B)"},
    {"\"Pool|B\"", "Server(127.0.0.1:11401)"},
    {"\"NullRoute\"", "NullRoute"},
    {"{\"type\": \"NullRoute\"}", "NullRoute"},
    {"\"FailoverRoute|Pool|A\"",
     "FailoverRoute[Server(127.0.0.1:11301),Server(127.0.0.1:11302)]"},
    {"{\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\", \"PoolRoute|B\"]}",
     "FailoverRoute[PoolRoute(A),PoolRoute(B)]"},
    {"{\"type\": \"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|A\","
     " \"failover\": [\"PoolRoute|B\"], \"failover_exptime\": 10}",
     "FailoverRoute(exptime=10)[PoolRoute(A),PoolRoute(B)]"},
    {"{\"type\": \"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|A\","
     " \"failover\": \"Pool|A\"}",
     "FailoverRoute(exptime=60)[PoolRoute(A),Server(127.0.0.1:11301),Server(127.0.0.1:11302)]"},
    {"{\"type\": \"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|A\","
     " \"failover\": \"PoolRoute|B\", \"failover_exptime\": 0}",
     "FailoverRoute(exptime=0)[PoolRoute(A),PoolRoute(B)]"},
    {"\"MissFailoverRoute|Pool|A\"",
     "MissFailoverRoute[Server(127.0.0.1:11301),Server(127.0.0.1:11302)]"},
    {"{\"type\": \"MissFailoverRoute\", \"children\": [\"PoolRoute|B\", \"PoolRoute|A\"]}",
     "MissFailoverRoute[PoolRoute(B),PoolRoute(A)]"},
    {"\"AllSyncRoute|Pool|A\"",
     "AllSyncRoute[Server(127.0.0.1:11301),Server(127.0.0.1:11302)]"},
    {"{\"type\": \"AllSyncRoute\", \"children\": [\"Pool|A\", \"Pool|B\"]}",
     "AllSyncRoute[Server(127.0.0.1:11301),Server(127.0.0.1:11302),Server(127.0.0.1:11401)]"},
    {"\"AllAsyncRoute|Pool|B\"", "AllAsyncRoute[Server(127.0.0.1:11401)]"},
    {"{\"type\": \"AllAsyncRoute\", \"children\": \"Pool|A\"}",
     "AllAsyncRoute[Server(127.0.0.1:11301),Server(127.0.0.1:11302)]"},
    {"\"AllInitialRoute|PoolRoute|A\"", "AllInitialRoute[PoolRoute(A)]"},
    {"{\"type\": \"AllInitialRoute\", \"children\": [\"PoolRoute|A\", \"NullRoute\"]}",
     "AllInitialRoute[PoolRoute(A),NullRoute]"},
    {"\"LatestRoute|Pool|A\"",
     "LatestRoute(failover_count=5)[Server(127.0.0.1:11301),Server(127.0.0.1:11302)]"},
    {"{\"type\": \"LatestRoute\", \"children\": \"Pool|A\", \"failover_count\": 1}",
     "LatestRoute(failover_count=1)[Server(127.0.0.1:11301),Server(127.0.0.1:11302)]"},
    {"\"FailoverRoute|FailoverRoute|PoolRoute|A\"", "FailoverRoute[FailoverRoute[PoolRoute(A)]]"},
    {"{\"type\": \"OperationSelectorRoute\", \"operation_policies\": {"
     " \"get\": \"PoolRoute|A\", \"lease-set\": \"PoolRoute|B\", \"flush_all\": \"NullRoute\"},"
     " \"default_policy\": \"PoolRoute|B\"}",
     "OperationSelectorRoute{get:PoolRoute(A),flush_all:NullRoute,lease-set:PoolRoute(B),"
     "default:PoolRoute(B)}"},
    {"{\"type\": \"OperationSelectorRoute\", \"operation_policies\": {\"delete\": \"Pool|B\"}}",
     "OperationSelectorRoute{delete:Server(127.0.0.1:11401),default:-}"},
    {"{\"type\": \"PrefixPolicyRoute\", \"default_policy\": \"PoolRoute|A\"}",
     "OperationSelectorRoute{default:PoolRoute(A)}"},
    {"{\"type\": \"PrefixSelectorRoute\", \"policies\": {\"a:\": \"PoolRoute|A\","
     " \"ab:\": \"PoolRoute|B\"}, \"wildcard\": \"NullRoute\"}",
     "PrefixSelectorRoute{a::PoolRoute(A),ab::PoolRoute(B),wildcard:NullRoute}"},
    {"{\"type\": \"PrefixSelectorRoute\", \"policies\": {\"x\": \"PoolRoute|A\"}}",
     "PrefixSelectorRoute{x:PoolRoute(A),wildcard:-}"},
    {"{\"type\": \"WarmUpRoute\", \"cold\": \"PoolRoute|A\", \"warm\": \"PoolRoute|B\","
     " \"exptime\": 60}",
     "WarmUpRoute(exptime=60)[PoolRoute(A),PoolRoute(B)]"},
    {"{\"type\": \"WarmUpRoute\", \"cold\": [\"PoolRoute|A\"], \"warm\": \"Pool|B\"}",
     "WarmUpRoute(exptime=0)[PoolRoute(A),Server(127.0.0.1:11401)]"},
    {"[\"PoolRoute|A\"]", "PoolRoute(A)"},
    /* no children, as mcrouter builds them: NullRoute, or HashRoute's error */
    {"{\"type\": \"AllSyncRoute\", \"children\": []}", "NullRoute"},
    {"\"FailoverRoute|Pool|E\"", "NullRoute"},
    {"{\"type\": \"FailoverRoute\", \"children\": \"Pool|E\"}", "FailoverRoute"},
    {"\"HashRoute|Pool|E\"", "ErrorRoute(HashRoute with empty children, name: )"},
    {"\"PoolRoute|E\"", "ErrorRoute(HashRoute with empty children, name: E)"},
    {"{\"type\": \"PoolRoute\", \"pool\": \"E\", \"hash\": \"Crc32\"}",
     "ErrorRoute(HashRoute with empty children, name: E)"},
    /* routes among a pool's servers, as mcrouter's pools may have them */
    {"\"AllSyncRoute|Pool|M\"", "AllSyncRoute[Server(127.0.0.1:11501),ErrorRoute(local error)]"},
    {"\"PoolRoute|M\"", "HashRoute(ch3)[Server(127.0.0.1:11501),ErrorRoute(local error)]"},
    {"\"HostIdRoute|Pool|A\"",
     "LatestRoute(failover_count=0)[Server(127.0.0.1:11301),Server(127.0.0.1:11302)]"},
    {"{\"type\": \"AllSyncRoute\", \"children\": [{\"type\": \"Pool\", \"name\": \"C\","
     " \"servers\": [\"127.0.0.1:11501\"]}, \"PoolRoute|C\"]}",
     "AllSyncRoute[Server(127.0.0.1:11501),PoolRoute(C)]"},
    {"{\"type\": \"SaltedFailoverRoute\", \"pool\": \"A\", \"failover_policy\": {"
     "\"type\": \"DeterministicOrderPolicy\", \"max_tries\": 9, \"max_error_tries\": 2}}",
     "FailoverRoute(deterministic_order(ch3),max_error_tries=2,max_tries=3)"
     "[PoolRoute(A),Server(127.0.0.1:11301),Server(127.0.0.1:11302)]"},
};

static const char *with_pools(char *buf, size_t cap, const char *route) {
    snprintf(buf, cap, "{" POOLS_AB ", \"route\": %s}", route);
    return buf;
}

TEST(every_route_kind) {
    char text[2048];
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const char *got = root_of(with_pools(text, sizeof(text), kinds[i].route));
        if (strcmp(got, kinds[i].want) != 0)
            TH_FAIL("row %zu: %s\n    got  %s\n    want %s", i, kinds[i].route, got,
                    kinds[i].want);
    }
}

/* The root of text parsed with route prefix want (NULL: none), or "ERROR: why". */
static const char *root_with(const char *text, const char *want, int invalid_to_default) {
    struct cellar_routing r = {.route_prefix = want,
                               .send_invalid_route_to_default = invalid_to_default};
    return root_routing(text, &r);
}

/*
 * Routing prefixes: "routes" as a list or an object, aliases normalised,
 * the default from the options (else the first alias), a "route" under
 * the options' prefix; each route once among the root's children.
 */
TEST(routing_prefixes_make_a_root) {
    const char *list = "{" POOLS_AB ", \"routes\": ["
                       " {\"aliases\": [\"/r/a/\"], \"route\": \"PoolRoute|A\"},"
                       " {\"aliases\": [\"/r/b/\", \"s/b\"], \"route\": \"PoolRoute|B\"}]}";
    ASSERT_STR(root_of(list),
               "RootRoute(default=/r/a/){/r/a/:PoolRoute(A),/r/b/:PoolRoute(B),"
               "/s/b/:PoolRoute(B)}");
    ASSERT_STR(root_with(list, "/s/b/", 0),
               "RootRoute(default=/s/b/){/r/a/:PoolRoute(A),/r/b/:PoolRoute(B),"
               "/s/b/:PoolRoute(B)}");
    ASSERT_STR(root_with(list, "r/b", 1),
               "RootRoute(default=/r/b/,send_invalid_route_to_default){/r/a/:PoolRoute(A),"
               "/r/b/:PoolRoute(B),/s/b/:PoolRoute(B)}");
    ASSERT_STR(root_with("{" POOLS_AB ", \"routes\": {\"/x/y/\": \"PoolRoute|A\","
                         " \"/x/z/\": \"NullRoute\"}}", "/x/z/", 0),
               "RootRoute(default=/x/z/){/x/y/:PoolRoute(A),/x/z/:NullRoute}");
    ASSERT_STR(root_with("{" POOLS_AB ", \"route\": \"PoolRoute|A\"}", "/a/a/", 0),
               "RootRoute(default=/a/a/){/a/a/:PoolRoute(A)}");
    ASSERT_STR(root_of("{" POOLS_AB ", \"route\": \"PoolRoute|A\"}"), "PoolRoute(A)");
    /* the same route under two entries' aliases is one child */
    struct cellar_routing rb = {.route_prefix = "/r/b/"};
    struct cellar_config *cfg = parse_routing(list, NULL, &rb);
    ASSERT_PARSED(cfg);
    ASSERT_EQ(cfg->root->nchildren, 2);
    ASSERT_STR(desc(cfg, cfg->root->children[0]), "PoolRoute(B)");
    cellar_config_release(&cfg);
    /* what is refused */
    ASSERT_STR(root_with(list, "/q/q/", 0),
               "ERROR: invalid default route: no routes entry has the alias \"/q/q/\"");
    ASSERT_STR(root_with(list, "/q/", 0),
               "ERROR: route prefix \"/q/\" is not of the form /region/cluster/");
    ASSERT_STR(root_of("{" POOLS_AB ", \"routes\": ["
                       " {\"aliases\": [\"/r/a/\", \"/r/b/c/\"], \"route\": \"NullRoute\"}]}"),
               "ERROR: routes[0].aliases[1]: \"/r/b/c/\" is not a routing prefix "
               "(/region/cluster/)");
    ASSERT_STR(root_of("{" POOLS_AB ", \"routes\": ["
                       " {\"aliases\": [\"/r/a/\"], \"route\": \"NullRoute\"},"
                       " {\"aliases\": [\"r/a\"], \"route\": \"PoolRoute|A\"}]}"),
               "ERROR: routes[1].aliases[0]: routing prefix \"/r/a/\" is given twice");
    ASSERT_STR(root_of("{" POOLS_AB ", \"routes\": {}}"),
               "ERROR: routes: expected a list of {\"aliases\", \"route\"} entries, not an "
               "empty object");
}

/* distributed.md 1.2, its macro call written out, on local addresses. */
static const char *const example =
    "{\n"
    "  \"pools\": {\n"
    "    \"wildcard\":   { \"servers\": [\"127.0.0.1:12001\", \"127.0.0.1:12002\"] },\n"
    "    \"replicated\": { \"servers\": [\"127.0.0.1:12101\", \"127.0.0.1:12102\"] },\n"
    "    \"gutter\":     { \"servers\": [\"127.0.0.1:12901\"] },\n"
    "    \"warm\":       { \"servers\": [\"127.0.0.1:13001\"] } },\n"
    "  \"named_handles\": [ { \"type\": \"PoolRoute\", \"name\": \"wc\", \"pool\": \"wildcard\" } ],\n"
    "  \"route\": { \"type\": \"PrefixSelectorRoute\",\n"
    "    \"policies\": {\n"
    "      \"rep:\":  { \"type\": \"OperationSelectorRoute\", \"operation_policies\": {\n"
    "                   \"get\": \"LatestRoute|Pool|replicated\",\n"
    "                   \"set\": \"AllSyncRoute|Pool|replicated\",\n"
    "                   \"delete\": \"AllSyncRoute|Pool|replicated\" } },\n"
    "      \"cold:\": { \"type\": \"WarmUpRoute\", \"cold\": \"wc\", \"warm\": \"PoolRoute|warm\","
    " \"exptime\": 60 } },\n"
    "    \"wildcard\": { \"type\": \"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|wildcard\",\n"
    "                  \"failover\": [\"PoolRoute|gutter\"], \"failover_exptime\": 10 } }\n"
    "}\n";

TEST(mcrouter_example) {
    struct cellar_config *cfg = parse(example);
    ASSERT_PARSED(cfg);
    ASSERT_STR(desc(cfg, cfg->root),
               "PrefixSelectorRoute{"
               "rep::OperationSelectorRoute{"
               "get:LatestRoute(failover_count=5)[Server(127.0.0.1:12101),Server(127.0.0.1:12102)],"
               "set:AllSyncRoute[Server(127.0.0.1:12101),Server(127.0.0.1:12102)],"
               "delete:AllSyncRoute[Server(127.0.0.1:12101),Server(127.0.0.1:12102)],"
               "default:-},"
               "cold::WarmUpRoute(exptime=60)[PoolRoute(wildcard),PoolRoute(warm)],"
               "wildcard:FailoverRoute(exptime=10)[PoolRoute(wildcard),PoolRoute(gutter)]}");
    ASSERT_EQ(cfg->npools, 4);
    ASSERT_EQ(cfg->nservers, 6);
    ASSERT_STR(cfg->pools[2].name, "gutter");
    ASSERT_STR(cellar_config_server_name(cfg, 4), "127.0.0.1:12901");
    cellar_config_release(&cfg);
}

/* FailoverRoute's failover_errors (a list, or by gets/updates/deletes) and failover_limit. */
TEST(failover_options) {
    ASSERT_STR(root_of("{" POOLS_AB ", \"route\": {\"type\": \"FailoverRoute\", \"children\":"
                       " [\"PoolRoute|A\", \"PoolRoute|B\"], \"failover_errors\": [\"remote_error\","
                       " \"tko\"], \"failover_limit\": {\"rate\": 0.25, \"burst\": 9.8}}}"),
               "FailoverRoute(failover_limit=0.25/9.8,failover_errors=9/9/9)"
               "[PoolRoute(A),PoolRoute(B)]");
    /* rate is clamped to 0..1 and burst to 1 or more, as mcrouter does; burst 1000 by default */
    ASSERT_STR(root_of("{" POOLS_AB ", \"route\": {\"type\": \"FailoverRoute\", \"children\":"
                       " [\"PoolRoute|A\"], \"failover_limit\": {\"rate\": 7}}}"),
               "FailoverRoute(failover_limit=1/1000)[PoolRoute(A)]");
    ASSERT_STR(root_of("{" POOLS_AB ", \"route\": {\"type\": \"FailoverRoute\", \"children\":"
                       " [\"PoolRoute|A\"], \"failover_limit\": {\"rate\": -1, \"burst\": 0}}}"),
               "FailoverRoute(failover_limit=0/1)[PoolRoute(A)]");
    ASSERT_STR(root_of("{" POOLS_AB ", \"route\": {\"type\": \"FailoverWithExptimeRoute\","
                       " \"normal\": \"PoolRoute|A\", \"failover\": \"PoolRoute|B\","
                       " \"failover_errors\": {\"gets\": [\"timeout\", \"connect_error\"],"
                       " \"updates\": []}}}"),
               "FailoverRoute(exptime=60,failover_errors=6/0/15)[PoolRoute(A),PoolRoute(B)]");
}

/*
 * mcrouter's pool weights: a ch3 pool with "weights" places keys by
 * WeightedCh3, a missing weight 0.5; a server of weight 0 gets no key.
 */
TEST(ch3_pool_weights_are_weighted_ch3) {
    struct cellar_config *cfg = parse(
        "{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:1\", \"127.0.0.1:2\", \"127.0.0.1:3\"],"
        " \"weights\": [0, 1]}}, \"route\": \"PoolRoute|A\"}");
    ASSERT_PARSED(cfg);
    ASSERT_STR(ring_kind(cfg->pools[0].ring), "wch3");
    ASSERT_EQ(cfg->servers[0].weight, 0);
    ASSERT_EQ(cfg->servers[1].weight, 4294967295u);
    ASSERT_EQ(cfg->servers[2].weight, 2147483647u);
    unsigned got[3] = {0};
    char key[16];
    for (int i = 0; i < 3000; i++) {
        int n = snprintf(key, sizeof(key), "k%d", i);
        got[route_server_of(cfg->root, cfg, key, (size_t)n)]++;
    }
    ASSERT_EQ(got[0], 0);
    ASSERT(got[1] > got[2] && got[2] > 500);
    cellar_config_release(&cfg);
}

/*
 * mcrouter's bucketize: a PoolRoute hashes the key's bucket (Ch3 of the
 * key over total_buckets, in decimal) instead of the key, by the pool's
 * weights (WeightedCh3) when its "hash" names the function alone.
 */
TEST(bucketized_pool_route) {
    struct cellar_config *cfg = parse(
        "{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:1\", \"127.0.0.1:2\", \"127.0.0.1:3\","
        " \"127.0.0.1:4\"], \"weights\": [0.5, 1, 0.25, 0.75]}}, \"route\": {\"type\":"
        " \"PoolRoute\", \"pool\": \"A\", \"bucketize\": true, \"total_buckets\": 1000,"
        " \"bucketization_keyspace\": \"ks\", \"hash\": \"WeightedCh3\"}}");
    ASSERT_PARSED(cfg);
    ASSERT_STR(desc(cfg, cfg->root),
               "HashRoute(wch3,buckets=1000)[Server(127.0.0.1:1:2147483647),"
               "Server(127.0.0.1:2:4294967295),Server(127.0.0.1:3:1073741823),"
               "Server(127.0.0.1:4:3221225471)]");
    struct ring_server s[4];
    static const double w[4] = {0.5, 1, 0.25, 0.75};
    for (int i = 0; i < 4; i++)
        s[i] = (struct ring_server){"", (uint16_t)i, (uint32_t)(uint64_t)(w[i] * 4294967295.0)};
    struct ring *wch3 = ring_create("wch3", s, 4, NULL);
    ASSERT(wch3 != NULL);
    char key[16], bucket[12];
    unsigned differ = 0;
    for (int i = 0; i < 500; i++) {
        int n = snprintf(key, sizeof(key), "key%d", i);
        int m = snprintf(bucket, sizeof(bucket), "%u", ring_furc(key, (size_t)n, 1000));
        unsigned want = ring_pick(wch3, bucket, (size_t)m);
        ASSERT_EQ((unsigned)route_server_of(cfg->root, cfg, key, (size_t)n), want);
        differ += want != ring_pick(wch3, key, (size_t)n);
    }
    ASSERT(differ > 100);           /* the bucket, not the key, placed them */
    ring_destroy(&wch3);
    cellar_config_release(&cfg);
    ASSERT_STR(root_of("{" POOLS_AB ", \"route\": {\"type\": \"PoolRoute\", \"pool\": \"A\","
                       " \"bucketize\": true, \"total_buckets\": 10}}"),
               "ERROR: route: missing \"bucketization_keyspace\"");
}

/* mcrouter's port_override: every server on that port, a ketama weight kept. */
TEST(port_override) {
    struct cellar_config *cfg = parse(
        "{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\", \"127.0.0.2:11211\", \"[::1]:5\"],"
        " \"port_override\": 12345},"
        " \"K\": {\"servers\": [\"127.0.0.3:1\", \"127.0.0.4:2\"], \"weights\": [2, 3],"
        " \"hash\": \"ketama\", \"port_override\": 99}}, \"route\": \"PoolRoute|A\"}");
    ASSERT_PARSED(cfg);
    ASSERT_STR(cellar_config_server_name(cfg, 0), "127.0.0.1:12345");
    ASSERT_STR(cellar_config_server_name(cfg, 1), "127.0.0.2:12345");
    ASSERT_STR(cellar_config_server_name(cfg, 2), "[::1]:12345");
    ASSERT_EQ(cfg->servers[3].port, 99);
    ASSERT_EQ(cfg->servers[4].weight, 3);
    cellar_config_release(&cfg);
    ASSERT(strstr(root_of("{\"pools\": {\"A\": {\"servers\": [\"/tmp/s\"], \"port_override\": 1}},"
                          " \"route\": \"PoolRoute|A\"}"), "no port to override") != NULL);
}

/* distributed.md 1.2 as written, its macro and all: the same tree as above. */
TEST(the_example_with_its_macro) {
    const char *call = "\"wildcard\": { \"type\": \"FailoverWithExptimeRoute\", \"normal\": "
                       "\"PoolRoute|wildcard\",\n"
                       "                  \"failover\": [\"PoolRoute|gutter\"], "
                       "\"failover_exptime\": 10 } }\n";
    const char *at = strstr(example, call);
    ASSERT(at != NULL);
    char text[4096];
    snprintf(text, sizeof(text),
             "{ \"macros\": { \"gutter\": { \"type\": \"macroDef\", \"params\": [\"pool\"],\n"
             "  \"result\": { \"type\": \"FailoverWithExptimeRoute\", \"normal\": "
             "\"PoolRoute|%%pool%%\",\n"
             "  \"failover\": [\"PoolRoute|gutter\"], \"failover_exptime\": 10 } } },\n"
             "%.*s\"wildcard\": \"@gutter(wildcard)\" }\n}\n",
             (int)(at - (example + 1)), example + 1);
    struct cellar_config *cfg = parse(example), *m = parse(text);
    ASSERT_PARSED(cfg);
    if (m == NULL)
        cellar_config_release(&cfg);
    ASSERT_PARSED(m);
    char want[4096];
    snprintf(want, sizeof(want), "%s", desc(cfg, cfg->root));
    ASSERT_STR(desc(m, m->root), want);
    cellar_config_release(&cfg);
    cellar_config_release(&m);
}

/*
 * mcrouter's JSON with macros: parameters whole (any value) and inside
 * strings, defaults, constants, string and object calls, escapes, the
 * built-ins, --config-params; and what is refused, with where and why.
 */
/* Built-in parameters keep their types (mcrouter's num-proxies is a number); config_params win. */
TEST(builtin_params) {
    const char *text = "{\"route\": {\"type\": \"if\", \"condition\":"
                       " \"@equals(%num-proxies%,@int(17))\", \"is_true\": \"ErrorRoute|%router-info-name%\","
                       " \"is_false\": \"NullRoute\"}}";
    struct cellar_routing routing = {
        .builtin_params = "{\"router-info-name\": \"Memcache\", \"num-proxies\": 17}"};
    ASSERT_STR(root_routing(text, &routing), "ErrorRoute(Memcache)");
    routing.config_params = "num-proxies:17";       /* a string: no longer equal */
    ASSERT_STR(root_routing(text, &routing), "NullRoute");
    routing.config_params = NULL;
    routing.builtin_params = "[]";
    ASSERT(strstr(root_routing(text, &routing), "built-in params: not a JSON object") != NULL);
}

TEST(macros) {
    struct cellar_routing routing = {.config_params = "POOL:B,N:7"};
    struct {
        const char *text;
        const char *want;
    } cases[] = {
        {"{\"macros\": {\"p\": {\"type\": \"macroDef\", \"params\": [\"x\", {\"name\": \"y\","
         " \"default\": \"B\"}], \"result\": {\"type\": \"FailoverRoute\", \"children\":"
         " [\"PoolRoute|%x%\", \"PoolRoute|%y%\"]}}}, " POOLS_AB ", \"route\": \"@p(A)\"}",
         "FailoverRoute[PoolRoute(A),PoolRoute(B)]"},
        {"{\"macros\": {\"p\": {\"type\": \"macroDef\", \"params\": [\"x\", \"y\"],"
         " \"result\": \"%x%Route|%y%\"}}, " POOLS_AB ", \"route\": {\"type\": \"p\","
         " \"x\": \"Pool\", \"y\": \"B\"}}",
         "PoolRoute(B)"},
        {"{\"macros\": {\"c\": {\"type\": \"constDef\", \"result\": [\"PoolRoute|A\","
         " \"NullRoute\"]}}, " POOLS_AB ", \"route\": {\"type\": \"AllSyncRoute\","
         " \"children\": \"%c%\"}}",
         "AllSyncRoute[PoolRoute(A),NullRoute]"},
        {"{" POOLS_AB ", \"route\": {\"type\": \"AllSyncRoute\", \"children\":"
         " {\"type\": \"transform\", \"dictionary\": [\"A\", \"%POOL%\"],"
         " \"itemTransform\": \"PoolRoute|%item%\"}}}",
         "AllSyncRoute[PoolRoute(A),PoolRoute(B)]"},
        {"{" POOLS_AB ", \"route\": {\"type\": \"LatestRoute\", \"children\": {\"type\":"
         " \"merge\", \"params\": [[\"PoolRoute|A\"], [\"PoolRoute|B\"]]},"
         " \"failover_count\": \"@int(%N%)\"}}",
         "LatestRoute(failover_count=7)[PoolRoute(A),PoolRoute(B)]"},
        {"{" POOLS_AB ", \"route\": {\"type\": \"select\", \"dictionary\": {\"a\":"
         " \"PoolRoute|A\", \"b\": \"PoolRoute|B\"}, \"key\": \"b\"}}",
         "PoolRoute(B)"},
        {"{" POOLS_AB ", \"route\": {\"type\": \"if\", \"condition\": {\"type\": \"equals\","
         " \"A\": \"%POOL%\", \"B\": \"B\"}, \"is_true\": \"NullRoute\", \"is_false\":"
         " \"PoolRoute|A\"}}",
         "NullRoute"},
        {"{" POOLS_AB ", \"route\": {\"type\": \"PrefixSelectorRoute\", \"policies\":"
         " {\"\\\\@a\\\\%\": \"PoolRoute|A\"}}}",
         "PrefixSelectorRoute{@a%:PoolRoute(A),wildcard:-}"},
        /* refused */
        {"{\"route\": \"@nope(1)\"}", "ERROR: route: unknown macro \"nope\" in \"@nope(1)\""},
        {"{\"route\": \"%NOPE%\"}", "ERROR: route: unknown parameter \"NOPE\""},
        {"{\"route\": \"a%b\"}", "ERROR: route: an odd number of '%' in \"a%b\""},
        {"{\"route\": \"@import(/nonexistent/x.json)\"}",
         "ERROR: route: @import(/nonexistent/x.json): No such file or directory"},
        {"{\"route\": \"@range(1)\"}",
         "ERROR: route: mcrouter's built-in macro \"range\" is not supported"},
        {"{\"macros\": {\"p\": {\"type\": \"macroDef\", \"params\": [\"x\"], \"result\": \"%x%\"}},"
         " \"route\": \"@p(1,2)\"}",
         "ERROR: route: macro p takes at most 1 arguments, not 2"},
        {"{\"macros\": {\"p\": {\"type\": \"macroDef\", \"params\": [\"x\"], \"result\": \"%x%\"}},"
         " \"route\": {\"type\": \"p\"}}",
         "ERROR: route: macro p: parameter \"x\" is missing"},
        {"{\"macros\": {\"p\": {\"type\": \"macroDef\", \"params\": [], \"result\": \"@p\"}},"
         " \"route\": \"@p\"}",
         "ERROR: route: macros nested more than 200 deep"},
        {"{\"macros\": {\"p\": {\"type\": \"oops\"}}, \"route\": \"NullRoute\"}",
         "ERROR: macros.p: expected {\"type\": \"macroDef\" or \"constDef\", ...}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cellar_config *cfg = parse_routing(cases[i].text, NULL, &routing);
        if (cfg == NULL)
            snprintf(descbuf, sizeof(descbuf), "ERROR: %s", errbuf);
        else
            desc(cfg, cfg->root);
        cellar_config_release(&cfg);
        if (strcmp(descbuf, cases[i].want) != 0)
            TH_FAIL("case %zu: got \"%s\", want \"%s\"", i, descbuf, cases[i].want);
    }
}

/*
 * @import: another file's JSON (comments allowed, its macros expanded),
 * a relative path read beside the configuration's file, "file:" as it is;
 * a file that imports itself stops at the nesting bound.
 */
TEST(import_reads_beside_the_configuration) {
    char dir[] = "/tmp/cellar-import-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    char main_path[128], part[128], self[128];
    snprintf(main_path, sizeof(main_path), "%s/main.json", dir);
    snprintf(part, sizeof(part), "%s/part.json", dir);
    snprintf(self, sizeof(self), "%s/self.json", dir);
    FILE *f = fopen(part, "w");
    ASSERT(f != NULL);
    fputs("/* the routes */ {\"a\": \"PoolRoute|A\", \"b\": \"@str(PoolRoute|B)\",}", f);
    fclose(f);
    f = fopen(self, "w");
    ASSERT(f != NULL);
    fputs("\"@import(self.json)\"", f);
    fclose(f);
    f = fopen(main_path, "w");
    ASSERT(f != NULL);
    fprintf(f, "{" POOLS_AB ", \"route\": {\"type\": \"AllSyncRoute\", \"children\": ["
               "{\"type\": \"select\", \"dictionary\": \"@import(part.json)\", \"key\": \"b\"},"
               "{\"type\": \"select\", \"dictionary\": \"@import(file:%s)\", \"key\": \"a\"}]}}",
            part);
    fclose(f);
    struct cellar_config *cfg = NULL;
    char err[256] = "";
    ASSERT_EQ(cellar_config_load(&cfg, main_path, NULL, err, sizeof(err)), CELLAR_OK);
    ASSERT_STR(desc(cfg, cfg->root), "AllSyncRoute[PoolRoute(B),PoolRoute(A)]");
    cellar_config_release(&cfg);
    f = fopen(main_path, "w");
    ASSERT(f != NULL);
    fputs("{" POOLS_AB ", \"route\": \"@import(self.json)\"}", f);
    fclose(f);
    ASSERT_EQ(cellar_config_load(&cfg, main_path, NULL, err, sizeof(err)), CELLAR_ECONFIG);
    ASSERT(strstr(err, "nested more than 200 deep") != NULL);
    unlink(self);
    unlink(part);
    unlink(main_path);
    rmdir(dir);
}

/* ---------------------------------------------------------------------- */
/* Invalid configurations                                                   */
/* ---------------------------------------------------------------------- */

struct bad {
    const char *text;
    const char *want;           /* a substring of the error */
};

#define P "{" POOLS_AB ", "

static const struct bad bad[] = {
    /* Syntax and the top level. */
    {"{\"route\": \"NullRoute\",\n \"route\": \"NullRoute\"}", "line 2, column 8: duplicate object key"},
    {"{\"route\": \"NullRoute\"", "line 1, column 21: '}' expected near end of file"},
    {"// a list\n[\"NullRoute\"]", "the configuration is not a JSON object"},
    {"{\"pools\": {}}", "no route: give \"route\" or \"routes\""},
    {"{\"route\": \"NullRoute\", \"routes\": []}", "give \"route\" or \"routes\", not both"},
    {"{\"route\": \"NullRoute\", \"shadows\": []}", "unknown key \"shadows\" (the configuration"},
    {"{\"macros\": {\"m\": {}}, \"route\": \"NullRoute\"}", "macros.m: expected {\"type\""},
    {"{\"pools\": [], \"route\": \"NullRoute\"}", "pools: expected an object of pools, not a list"},
    /* Pools. */
    {P "\"route\": \"PoolRoute|C\"}", "route: unknown pool \"C\""},
    {"{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:1\", \"127.0.0.1:2\", \"127.0.0.1:x\"]}},"
     " \"route\": \"PoolRoute|A\"}",
     "pools.A.servers[2]: bad port (IPv6 addresses go in brackets) in \"127.0.0.1:x\""},
    {"{\"pools\": {\"A\": {\"servers\": [\"fe80::1:11211\"]}}, \"route\": \"NullRoute\"}",
     "pools.A.servers[0]: IPv6 addresses go in brackets"},
    {"{\"pools\": {\"A\": {\"servers\": {}}}, \"route\": \"NullRoute\"}",
     "pools.A.servers: expected a list of servers, not an object"},
    {"{\"pools\": {\"A\": {}}, \"route\": \"NullRoute\"}", "pools.A: missing \"servers\""},
    {"{\"pools\": {\"A\": {\"servers\": [11211]}}, \"route\": \"NullRoute\"}",
     "pools.A.servers[0]: expected a string or a route, not an integer"},
    {"{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"protocol\": \"caret\"}},"
     " \"route\": \"NullRoute\"}",
     "pools.A.protocol: expected \"ascii\", \"text\", \"meta\" or \"binary\""},
    {"{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"hash\": \"crc16\"}},"
     " \"route\": \"NullRoute\"}",
     "pools.A.hash: expected \"ch3\""},
    {"{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"server_timeout\": \"1s\"}},"
     " \"route\": \"NullRoute\"}",
     "pools.A.server_timeout: expected an integer, not a string"},
    {"{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"spool\": \"delete\"}},"
     " \"route\": \"NullRoute\"}",
     "pools.A.spool: expected a list of operations, not a string"},
    {"{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"spool\": [\"delete\", \"get\"]}},"
     " \"route\": \"NullRoute\"}",
     "pools.A.spool[1]: expected a write to spool (set add replace"},
    {"{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"tko_timeouts\": 0}},"
     " \"route\": \"NullRoute\"}",
     "pools.A.tko_timeouts: 0 is out of range"},
    {"{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"keep_routing_prefix\": 1}},"
     " \"route\": \"NullRoute\"}",
     "pools.A.keep_routing_prefix: expected true or false"},
    {"{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"pool_locality\": 1}},"
     " \"route\": \"NullRoute\"}",
     "pools.A.pool_locality: expected a string"},
    {"{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1\"], \"weights\": [2]}},"
     " \"route\": \"NullRoute\"}",
     "pools.A.weights[0]: a weight of a ch3 pool is a number in [0, 1]"},
    {"{\"pools\": {\"A\": {\"hash\": \"modula\", \"servers\": [\"127.0.0.1\"],"
     " \"weights\": [2]}}, \"route\": \"NullRoute\"}",
     "pools.A.weights: only ketama and ch3 (mcrouter's WeightedCh3) use weights (this pool "
     "hashes with modula)"},
    {"{\"pools\": {\"A\": {\"hash\": \"ketama\", \"servers\": [\"127.0.0.1\", \"127.0.0.2\"],"
     " \"weights\": [2]}}, \"route\": \"NullRoute\"}",
     "pools.A.weights: 1 weights for 2 servers"},
    {"{\"pools\": {\"A\": {\"hash\": \"ketama\", \"servers\": [\"127.0.0.1\", \"127.0.0.2\"],"
     " \"weights\": [2, 0.5]}}, \"route\": \"NullRoute\"}",
     "pools.A.weights[1]: a weight of a ketama pool is a whole number from 1"},
    {"{\"pools\": {\"A\": {\"hash\": \"ketama\", \"servers\": [\"127.0.0.1:5:3\"],"
     " \"weights\": [2]}}, \"route\": \"NullRoute\"}",
     "pools.A.servers[0]: has a weight already"},
    {"{\"pools\": {\"A\": {\"hash\": \"ketama\", \"servers\": [\"/tmp/mc.sock\"],"
     " \"weights\": [2]}}, \"route\": \"NullRoute\"}",
     "pools.A.servers[0]: a unix socket takes no weight"},
    {"{\"pools\": {\"A\": {\"servers\": [\"no-such-host.invalid:1\"]}}, \"route\": \"NullRoute\"}",
     "pools.A.servers[0]: cannot resolve \"no-such-host.invalid\""},
    {P "\"route\": {\"type\": \"PoolRoute\", \"pool\": {\"name\": \"A\", \"servers\": [\"127.0.0.1\"]}}}",
     "route.pool: pool \"A\" is defined twice"},
    {"{\"route\": {\"type\": \"PoolRoute\", \"pool\": {\"servers\": [\"127.0.0.1\"]}}}",
     "route.pool: an inline pool needs a \"name\""},
    /* Routes. */
    {P "\"route\": {\"type\": \"FooRoute\"}}", "route: unknown route type \"FooRoute\""},
    {P "\"route\": \"FooRoute|Pool|A\"}", "route: unknown route type \"FooRoute\" in"},
    {P "\"route\": \"nothing\"}", "route: unknown named handle or route \"nothing\""},
    {P "\"route\": {\"children\": []}}", "route: missing \"type\""},
    {P "\"route\": {\"type\": 7}}", "route.type: expected a string, not an integer"},
    {P "\"route\": 42}", "route: a route is an object or a string, not an integer"},
    {P "\"route\": {\"type\": \"FailoverRoute\"}}", "route: missing \"children\""},
    {P "\"route\": {\"type\": \"AllSyncRoute\", \"children\": [\"PoolRoute|A\", null]}}",
     "route.children[1]: a route is an object or a string, not null"},
    {"{\"pools\": {\"A\": {\"servers\": [\"127.0.0.1:1\", \"127.0.0.1:2\"], "
     "\"failure_domains\": [1]}}, \"route\": \"PoolRoute|A\"}",
     "pools.A.failure_domains: expected a list of 2 failure domains, one per server"},
    {P "\"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\", "
     "{\"type\": \"Pool\", \"servers\": [\"127.0.0.1:1\"]}]}}",
     "route.children[1]: an inline pool needs a \"name\""},
    {P "\"route\": {\"type\": \"SaltedFailoverRoute\", \"pool\": \"A\", "
     "\"failover_policy\": {\"type\": \"DeterministicOrderPolicy\", \"max_tries\": 2, "
     "\"max_error_tries\": 1, \"hash\": {\"hash_func\": \"Crc32\"}}}}",
     "route.failover_policy.hash: DeterministicOrderPolicy hashes with Ch3 or WeightedCh3, "
     "not \"Crc32\""},
    {P "\"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\"],"
     " \"failover_policy\": {\"type\": \"RendezvousPolicy\"}}}",
     "route.failover_policy: policy \"RendezvousPolicy\" is not one cellar implements"},
    {P "\"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\"],"
     " \"failover_shadow\": true}}",
     "route: unknown key \"failover_shadow\" (FailoverRoute takes: type name children "
     "failover_errors failover_limit failover_tag failover_policy enable_lease_pairing)"},
    {P "\"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\"],"
     " \"failover_errors\": [\"timeout\", \"oops\"]}}",
     "route.failover_errors[1]: \"oops\" is not a failover error"},
    {P "\"route\": {\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\"],"
     " \"failover_errors\": {\"sets\": []}}}",
     "route.failover_errors: unknown key \"sets\" (failover_errors takes: gets updates deletes)"},
    {P "\"route\": {\"type\": \"PoolRoute\", \"pool\": \"A\", \"hash\": {\"hash_func\": \"Md5\"}}}",
     "route.hash: hash function \"Md5\" is not one cellar knows"},
    {P "\"route\": {\"type\": \"PoolRoute\", \"pool\": \"A\", \"shards\": []}}",
     "route: unknown key \"shards\" (PoolRoute takes: type name pool hash shadows bucketize "
     "total_buckets bucketization_keyspace shard_splits slow_warmup)"},
    {P "\"route\": {\"type\": \"PoolRoute\", \"pool\": \"A\", \"shadows\": {}}}",
     "route.shadows: expected a list of shadows, not an object"},
    {P "\"route\": {\"type\": \"PoolRoute\"}}", "route: missing \"pool\""},
    {P "\"route\": {\"type\": \"LatestRoute\", \"children\": \"Pool|A\", \"failover_count\": -1}}",
     "route.failover_count: -1 is out of range"},
    {P "\"route\": {\"type\": \"FailoverWithExptimeRoute\", \"failover\": \"PoolRoute|B\"}}",
     "route: missing \"normal\""},
    {P "\"route\": {\"type\": \"FailoverWithExptimeRoute\", \"normal\": \"PoolRoute|A\","
     " \"failover_exptime\": 1.5}}",
     "route.failover_exptime: expected an integer, not a number"},
    {P "\"route\": {\"type\": \"WarmUpRoute\", \"cold\": \"PoolRoute|A\"}}", "route: missing \"warm\""},
    {P "\"route\": {\"type\": \"WarmUpRoute\", \"cold\": \"Pool|A\", \"warm\": \"PoolRoute|B\"}}",
     "route.cold: 2 routes where one is expected"},
    {P "\"route\": {\"type\": \"OperationSelectorRoute\", \"operation_policies\":"
     " {\"get\": \"PoolRoute|A\", \"metaget\": \"PoolRoute|A\"}}}",
     "route.operation_policies.metaget: unknown operation \"metaget\""},
    {P "\"route\": {\"type\": \"OperationSelectorRoute\", \"operation_policies\": [\"get\"]}}",
     "route.operation_policies: expected an object, not a list"},
    {P "\"route\": {\"type\": \"PrefixSelectorRoute\", \"policies\": {\"a:\": {"
     "\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\", \"PoolRoute|C\"]}}}}",
     "route.policies.\"a:\".children[1]: unknown pool \"C\""},
    {P "\"route\": \"WarmUpRoute|Pool|A\"}",
     "route: WarmUpRoute is written as an object, not as \"WarmUpRoute|Pool|A\""},
    {P "\"route\": \"FailoverRoute\"}", "route: \"FailoverRoute\" needs children"},
    {P "\"route\": \"AllSyncRoute|Pool|C\"}", "route: unknown pool \"C\""},
    {P "\"route\": \"PoolRoute\"}", "route: \"PoolRoute\" needs a pool"},
    {P "\"route\": \"NullRoute|x\"}", "route: NullRoute takes nothing after '|'"},
    {P "\"route\": \"Pool|A\"}", "route: 2 routes where one is expected"},
    /* Named handles. */
    {P "\"named_handles\": [{\"type\": \"FailoverRoute\", \"name\": \"x\","
     " \"children\": [\"PoolRoute|A\", \"x\"]}], \"route\": \"x\"}",
     "named_handles[0].children[1]: named handle \"x\" is used inside its own definition"},
    {P "\"named_handles\": [{\"type\": \"FailoverRoute\", \"name\": \"x\", \"children\": [\"y\"]},"
     " {\"type\": \"FailoverRoute\", \"name\": \"y\", \"children\": [\"x\"]}], \"route\": \"x\"}",
     "named_handles[1].children[0]: named handle \"x\" is used inside its own definition"},
    {P "\"named_handles\": [{\"type\": \"NullRoute\", \"name\": \"x\"}],"
     " \"route\": {\"type\": \"FailoverRoute\", \"children\": [{\"type\": \"PoolRoute\","
     " \"name\": \"x\", \"pool\": \"A\"}]}}",
     "route.children[0]: named handle \"x\" is defined twice (also at named_handles[0])"},
    {P "\"named_handles\": [{\"type\": \"NullRoute\"}], \"route\": \"NullRoute\"}",
     "named_handles[0]: a named handle needs a \"name\""},
    {P "\"named_handles\": [{\"type\": \"NullRoute\", \"name\": \"\"}], \"route\": \"NullRoute\"}",
     "named_handles[0]: a named handle's name is empty"},
    {P "\"named_handles\": [{\"type\": \"PoolRoute\", \"name\": \"n\", \"pool\": \"Z\"}],"
     " \"route\": \"NullRoute\"}",
     "named_handles[0].pool: unknown pool \"Z\""},
    {P "\"named_handles\": {\"a\": {\"type\": \"NullRoute\", \"name\": \"b\"}}, \"route\": \"a\"}",
     "named_handles.a: its \"name\" is not \"a\""},
    {P "\"route\": {\"type\": \"FailoverRoute\", \"name\": 3, \"children\": \"Pool|A\"}}",
     "route.name: expected a string, not an integer"},
    /* routes. */
    {P "\"routes\": []}", "routes: expected a list of {\"aliases\", \"route\"} entries, not an empty"},
    {P "\"routes\": [{\"aliases\": [\"/a/b/\"]}]}", "routes[0]: missing \"route\""},
    {P "\"routes\": [{\"route\": \"NullRoute\"}]}", "routes[0]: missing \"aliases\""},
    {P "\"routes\": [{\"aliases\": [\"/a/b/\"], \"route\": \"NullRoute\"},"
     " {\"aliases\": [1], \"route\": \"NullRoute\"}]}",
     "routes[1].aliases[0]: expected a string, not an integer"},
    {P "\"routes\": [{\"aliases\": [], \"route\": \"NullRoute\"},"
     " {\"aliases\": [], \"route\": \"PoolRoute|Q\"}]}",
     "routes[1].route: unknown pool \"Q\""},
};

/* What a warn callback was told, one message a line. */
static char warned[2048];

static void warn_into(void *arg, const char *msg) {
    (void)arg;
    size_t n = strlen(warned);
    snprintf(warned + n, sizeof(warned) - n, "%s\n", msg);
}

/*
 * A broken shadow is passed over, as mcrouter logs and passes it over,
 * and the caller's warn told where and why; the good ones stay.
 */
TEST(broken_shadows_are_passed_over_and_said) {
    struct cellar_routing routing = {.warn = warn_into};
    warned[0] = '\0';
    ASSERT_STR(root_routing("{" POOLS_AB ", \"route\": {\"type\": \"PoolRoute\", \"pool\":"
                            " \"B\", \"shadows\": [{\"target\": \"PoolRoute|A\","
                            " \"keys_to_shadow\": [\"k\"], \"index_range\": [0, 1]},"
                            " {\"target\": \"PoolRoute|A\", \"key_fraction_range\": [0.5, 0.1]},"
                            " {\"target\": \"nothere\"}, 12345,"
                            " {\"target\": \"PoolRoute|A\", \"index_range\": [0, 1]}]}}",
                            &routing),
               "PoolRoute(B)[ShadowRoute[Server(127.0.0.1:11401),PoolRoute(A)]]");
    ASSERT_STR(warned,
               "route.shadows[0].keys_to_shadow: keys_to_shadow cannot be mixed with index_range "
               "or key_fraction_range, as mcrouter says (this shadow is passed over, as mcrouter "
               "does)\n"
               "route.shadows[1].key_fraction_range: expected [a, b], 0 <= a <= b <= 1 (this "
               "shadow is passed over, as mcrouter does)\n"
               "route.shadows[2].target: unknown named handle or route \"nothere\" (this shadow "
               "is passed over, as mcrouter does)\n"
               "route.shadows[3]: a shadow is an object, not an integer (this shadow is passed "
               "over, as mcrouter does)\n");
}

/* mcrouter's runtime variables: a shadow's "..._rv" names one whose value wins. */
TEST(runtime_variables_override_shadow_ranges) {
    char path[] = "/tmp/cellar-rv-XXXXXX";
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    static const char vars[] = "{\"r\": [1, 2]}";
    ASSERT_EQ(write(fd, vars, sizeof(vars) - 1), (ssize_t)(sizeof(vars) - 1));
    close(fd);
    struct cellar_routing routing = {.runtime_vars_file = path};
    /* index_range [0, 1] written; the variable moves it to the second server */
    const char *text = "{" POOLS_AB ", \"route\": {\"type\": \"PoolRoute\", \"pool\": \"A\","
                       " \"hash\": \"Ch3\", \"shadows\": [{\"target\": \"PoolRoute|B\","
                       " \"index_range\": [0, 1], \"index_range_rv\": \"r\"}]}}";
    ASSERT_STR(root_routing(text, &routing),
               "HashRoute(ch3)[Server(127.0.0.1:11301),"
               "ShadowRoute[Server(127.0.0.1:11302),PoolRoute(B)]]");
    ASSERT_STR(root_routing(text, NULL),
               "HashRoute(ch3)[ShadowRoute[Server(127.0.0.1:11301),PoolRoute(B)],"
               "Server(127.0.0.1:11302)]");
    unlink(path);
    routing.runtime_vars_file = path;       /* gone: said, not passed over */
    ASSERT(strstr(root_routing(text, &routing), "ERROR: runtime variables /tmp/cellar-rv-") ==
           root_routing(text, &routing));
}

TEST(invalid_configs_say_where_and_why) {
    if (sizeof(bad) / sizeof(bad[0]) < 25)
        TH_FAIL("the table is too short");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cellar_config *cfg = (struct cellar_config *)1;
        char err[512] = "";
        int rc = cellar_config_parse(&cfg, bad[i].text, NULL, err, sizeof(err));
        if (rc != CELLAR_ECONFIG || cfg != NULL)
            TH_FAIL("row %zu accepted: %s", i, bad[i].text);
        if (strstr(err, bad[i].want) == NULL)
            TH_FAIL("row %zu: %s\n    got  \"%s\"\n    want \"%s\"", i, bad[i].text, err,
                    bad[i].want);
    }
}

TEST(small_error_buffers_are_cut_not_overrun) {
    char err[8];
    struct cellar_config *cfg;
    ASSERT_EQ(cellar_config_parse(&cfg, P "\"route\": \"PoolRoute|Q\"}", NULL, err, sizeof(err)),
              CELLAR_ECONFIG);
    ASSERT_STR(err, "route: ");
    ASSERT_EQ(cellar_config_parse(&cfg, P "\"route\": \"PoolRoute|Q\"}", NULL, NULL, 0),
              CELLAR_ECONFIG);
}

TEST(deep_nesting_is_refused) {
    char text[8192];
    size_t n = (size_t)snprintf(text, sizeof(text), "{" POOLS_AB ", \"route\": ");
    for (int i = 0; i < 150; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n,
                              "{\"type\": \"FailoverRoute\", \"children\": [");
    n += (size_t)snprintf(text + n, sizeof(text) - n, "\"NullRoute\"");
    for (int i = 0; i < 150; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "]}");
    snprintf(text + n, sizeof(text) - n, "}");
    ASSERT(strstr(root_of(text), "routes nested more than 100 deep") != NULL);
    n = (size_t)snprintf(text, sizeof(text), "{\"route\": \"");
    for (int i = 0; i < 150; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "FailoverRoute|");
    snprintf(text + n, sizeof(text) - n, "NullRoute\"}");
    ASSERT(strstr(root_of(text), "routes nested more than 100 deep") != NULL);
}

/* ---------------------------------------------------------------------- */
/* Under the sanitizers: no leaks over parse, describe, release             */
/* ---------------------------------------------------------------------- */

TEST(parse_describe_release_loop) {
    char text[2048];
    for (int round = 0; round < 20; round++) {
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
            struct cellar_config *cfg = parse(with_pools(text, sizeof(text), kinds[i].route));
            ASSERT_PARSED(cfg);
            ASSERT_STR(desc(cfg, cfg->root), kinds[i].want);
            cellar_config_release(&cfg);
            ASSERT(cfg == NULL);
        }
        struct cellar_config *cfg = parse(example);
        ASSERT_PARSED(cfg);
        struct cellar_config *ref = cl_config_ref(cfg);
        cellar_config_release(&cfg);
        ASSERT(desc(ref, ref->root)[0] == 'P');
        cellar_config_release(&ref);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            char err[256];
            ASSERT_EQ(cellar_config_parse(&cfg, bad[i].text, NULL, err, sizeof(err)),
                      CELLAR_ECONFIG);
        }
    }
}

int main(void) {
    return RUN_TESTS();
}
