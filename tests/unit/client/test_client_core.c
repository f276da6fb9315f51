/*
 * test_client_core.c -- libcellar end to end in one process, under the
 * sanitizers with leak detection on: every call of the public API against
 * small fake memcache servers, the faults a server can have, the route
 * kinds, and handles destroyed with requests still on their way.
 *
 *   test thread                        fake_mc.h: a thread per fake server
 *   cellar_*()  --- 127.0.0.1:port ---> poll: accept, read, mc_meta_parse(),
 *     (libcellar's loop)                  a tiny key -> item table, answer as
 *                                         memcached 1.6 answers what
 *                                         msg_meta.c sends; or misbehave:
 *                                         hang, close after N, garbage, slow,
 *                                         gated (hold replies until opened)
 *
 * Each test runs its body in a helper (ETEST) and cleans up after it
 * returns, also when an assertion failed: handles destroyed, fake servers
 * stopped and joined, so that a leak LeakSanitizer reports at exit is
 * libcellar's.  Route trees are built by hand with route.h's constructors
 * over a configuration with one pool per fake server (pool i = server i =
 * fake i); a JSON configuration, where config_json.c parses one, is
 * compared with them.
 *
 * test_client_core_ring.c builds the same tests with every handle's
 * connections on an io_uring of the handle's own (cl_async_ring(), what
 * cellar-router uses on io_uring).
 *
 * Timeouts are 50-150 ms; where a test waits for something that happens
 * in the background it polls for it (cellar_poll and the fake's table or
 * counters) up to a generous deadline.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellar.h"
#include "client/client_int.h"
#include "client/route.h"
#include "fake_mc.h"
#include "harness.h"

/* ---------------------------------------------------------------------- */
/* Waiting (now_ms and sleep_ms come with fake_mc.h)                        */
/* ---------------------------------------------------------------------- */

/* Polls cond every millisecond for up to ms milliseconds; its last value. */
#define WAIT_FOR(cond, ms)                                                 \
    ({                                                                     \
        int64_t wf_end = now_ms() + (ms);                                  \
        while (!(cond) && now_ms() < wf_end)                               \
            sleep_ms(1);                                                   \
        (cond);                                                            \
    })

/* The same, running handle h's loop meanwhile (background answers, probes). */
#define POLL_FOR(h, cond, ms)                                              \
    ({                                                                     \
        int64_t pf_end = now_ms() + (ms);                                  \
        while (!(cond) && now_ms() < pf_end)                               \
            cellar_poll((h), 2);                                           \
        (cond);                                                            \
    })

/* ---------------------------------------------------------------------- */
/* Test environments                                                        */
/* ---------------------------------------------------------------------- */

/* test_client_core_ring.c runs every test again with each handle on an io_uring of its own. */
#ifndef CORE_ON_RING
#define CORE_ON_RING 0
#endif

static int handle_create(struct cellar **h, struct cellar_config *cfg) {
    int rc = cellar_create(h, cfg);
    if (rc == CELLAR_OK && CORE_ON_RING && cl_async_ring(*h) != 0) {
        fprintf(stderr, "io_uring unavailable for the handle\n");
        abort();
    }
    return rc;
}

#define ENV_FAKES 8

struct env {
    struct fake *f[ENV_FAKES];
    unsigned nf;
    struct cellar_config *cfg;
    struct cellar *h;
    struct cellar *h2;
    struct cellar_near *near;
    struct cellar_flight *group;
    struct cellar_spool *spool;
    char spool_dir[64];             /* made by env_spool, removed by env_end */
};

static void env_end(struct env *e) {
    cellar_destroy(&e->h);
    cellar_destroy(&e->h2);
    cellar_config_release(&e->cfg);
    cellar_near_destroy(&e->near);
    cellar_flight_destroy(&e->group);
    cellar_spool_close(&e->spool);
    for (unsigned i = 0; i < ENV_FAKES; i++)
        fake_stop(&e->f[i]);
    if (e->spool_dir[0]) {
        char cmd[96];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->spool_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "  could not remove %s\n", e->spool_dir);
    }
}

/* Starts n fakes; false if one could not listen. */
static bool env_fakes(struct env *e, unsigned n) {
    for (unsigned i = 0; i < n; i++)
        if ((e->f[i] = fake_start()) == NULL)
            return false;
    e->nf = n;
    return true;
}

/* n fakes in one pool (a server list), and a handle over it. */
static int env_list(struct env *e, unsigned n, const struct cellar_options *opt) {
    if (!env_fakes(e, n))
        return -1;
    char list[ENV_FAKES * 32] = "", err[256];
    for (unsigned i = 0; i < n; i++) {
        strcat(list, i ? "," : "");
        strcat(list, e->f[i]->addr);
    }
    if (cellar_config_parse(&e->cfg, list, opt, err, sizeof(err)) != CELLAR_OK) {
        fprintf(stderr, "  config: %s\n", err);
        return -1;
    }
    return handle_create(&e->h, e->cfg);
}

/*
 * n fakes, each its own pool (pool i is server i is fake i: "default",
 * "p1", "p2", ...), root PoolRoute(default) until the test builds a tree;
 * no handle yet (env_handle, once cfg->root is set).
 */
__attribute__((unused)) static int env_pools(struct env *e, unsigned n, const struct cellar_options *opt) {
    if (!env_fakes(e, n))
        return -1;
    char err[256];
    if (cellar_config_parse(&e->cfg, e->f[0]->addr, opt, err, sizeof(err)) != CELLAR_OK) {
        fprintf(stderr, "  config: %s\n", err);
        return -1;
    }
    for (unsigned i = 1; i < n; i++) {
        char name[16];
        snprintf(name, sizeof(name), "p%u", i);
        const char *entry = e->f[i]->addr;
        const struct cellar_options none = {0};
        if (cl_config_add_pool(e->cfg, name, &entry, 1, opt ? opt : &none, err, sizeof(err)) !=
            (int)i) {
            fprintf(stderr, "  pool: %s\n", err);
            return -1;
        }
    }
    return 0;
}

__attribute__((unused)) static int env_handle(struct env *e) {
    return handle_create(&e->h, e->cfg);
}

__attribute__((unused)) static struct route *P(struct env *e, unsigned i) {
    return route_pool(e->cfg->routes, i);
}

/* A test whose body may fail an assertion and still be cleaned up after. */
#define ETEST(name)                                                        \
    static void name##_body(struct env *e, int *th_failed);                \
    TEST(name) {                                                           \
        struct env env;                                                    \
        memset(&env, 0, sizeof(env));                                      \
        name##_body(&env, th_failed);                                      \
        env_end(&env);                                                     \
    }                                                                      \
    static void name##_body(struct env *e, int *th_failed)

#define K(s) (s), strlen(s)

/* ---------------------------------------------------------------------- */
/* Every operation's happy path                                             */
/* ---------------------------------------------------------------------- */

ETEST(every_operation) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_list(e, 1, &opt), CELLAR_OK);
    struct fake *f = e->f[0];
    struct cellar *h = e->h;
    struct cellar_item it = {0};
    uint64_t n = 0;

    ASSERT_EQ(cellar_set(h, K("k1"), "hello", 5, 7, 100), CELLAR_OK);
    ASSERT(fake_is(f, "k1", "hello"));
    ASSERT_EQ(fake_exptime(f, "k1"), 100);
    ASSERT_EQ(cellar_get(h, K("k1"), &it), CELLAR_OK);
    ASSERT_EQ(it.status, CELLAR_OK);
    ASSERT_EQ(it.nvalue, 5);
    ASSERT_STR(it.value, "hello");
    ASSERT_EQ(it.flags, 7);
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_get(h, K("nope"), &it), CELLAR_NOT_FOUND);
    ASSERT_EQ(it.status, CELLAR_NOT_FOUND);
    ASSERT(it.value == NULL);

    /* gets / cas */
    ASSERT_EQ(cellar_gets(h, K("k1"), &it), CELLAR_OK);
    uint64_t cas = it.cas;
    ASSERT(cas != 0);
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_cas(h, K("k1"), "v2", 2, 1, 0, cas + 1), CELLAR_EXISTS);
    ASSERT_EQ(cellar_cas(h, K("k1"), "v2", 2, 1, 0, cas), CELLAR_OK);
    ASSERT(fake_is(f, "k1", "v2"));
    ASSERT_EQ(cellar_cas(h, K("missing"), "v", 1, 0, 0, 5), CELLAR_NOT_FOUND);

    /* add / replace / append / prepend */
    ASSERT_EQ(cellar_add(h, K("k1"), "x", 1, 0, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_add(h, K("k2"), "mid", 3, 3, 50), CELLAR_OK);
    ASSERT_EQ(cellar_replace(h, K("k3"), "x", 1, 0, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_replace(h, K("k1"), "r", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_append(h, K("k2"), "-post", 5), CELLAR_OK);
    ASSERT_EQ(cellar_prepend(h, K("k2"), "pre-", 4), CELLAR_OK);
    ASSERT_EQ(cellar_append(h, K("k3"), "x", 1), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_get(h, K("k2"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "pre-mid-post");
    ASSERT_EQ(it.flags, 3);
    cellar_item_clear(&it);
    ASSERT_EQ(fake_exptime(f, "k2"), 50);

    /* touch / gat / gats */
    ASSERT_EQ(cellar_touch(h, K("k2"), 77), CELLAR_OK);
    ASSERT_EQ(fake_exptime(f, "k2"), 77);
    ASSERT_EQ(cellar_touch(h, K("k3"), 77), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_gat(h, K("k2"), 88, &it), CELLAR_OK);
    ASSERT_STR(it.value, "pre-mid-post");
    cellar_item_clear(&it);
    ASSERT_EQ(fake_exptime(f, "k2"), 88);
    ASSERT_EQ(cellar_gats(h, K("k2"), 99, &it), CELLAR_OK);
    ASSERT(it.cas != 0);
    cellar_item_clear(&it);
    ASSERT_EQ(fake_exptime(f, "k2"), 99);
    ASSERT_EQ(cellar_gat(h, K("k3"), 1, &it), CELLAR_NOT_FOUND);

    /* incr / decr */
    ASSERT_EQ(cellar_incr(h, K("ctr"), 1, &n), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_set(h, K("ctr"), "10", 2, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_incr(h, K("ctr"), 5, &n), CELLAR_OK);
    ASSERT_U64(n, 15);
    ASSERT_EQ(cellar_decr(h, K("ctr"), 20, &n), CELLAR_OK);
    ASSERT_U64(n, 0);
    ASSERT_EQ(cellar_incr(h, K("ctr"), 3, NULL), CELLAR_OK);
    ASSERT(fake_is(f, "ctr", "3"));
    ASSERT_EQ(cellar_incr(h, K("k2"), 1, &n), CELLAR_ECLIENT);

    /* delete */
    ASSERT_EQ(cellar_delete(h, K("k1")), CELLAR_OK);
    ASSERT(!fake_has(f, "k1"));
    ASSERT_EQ(cellar_delete(h, K("k1")), CELLAR_NOT_FOUND);

    /* bad keys are refused unsent */
    unsigned before = fake_reqs(f);
    ASSERT_EQ(cellar_get(h, K("has space"), &it), CELLAR_EINVAL);
    ASSERT_EQ(it.status, CELLAR_EINVAL);
    ASSERT_EQ(cellar_set(h, "", 0, "v", 1, 0, 0), CELLAR_EINVAL);
    char longkey[300];
    memset(longkey, 'a', sizeof(longkey));
    ASSERT_EQ(cellar_delete(h, longkey, 251), CELLAR_EINVAL);
    ASSERT_EQ(cellar_delete(h, longkey, 250), CELLAR_NOT_FOUND);
    ASSERT_EQ(fake_reqs(f), before + 1);

    /* version, flush_all */
    char ver[64];
    ASSERT_EQ(cellar_version(h, 0, ver, sizeof(ver)), CELLAR_OK);
    ASSERT_STR(ver, "1.6.18-fake");
    ASSERT_EQ(cellar_version(h, 1, ver, sizeof(ver)), CELLAR_EINVAL);
    ASSERT_EQ(cellar_flush_all(h, 0), CELLAR_OK);
    ASSERT(!fake_has(f, "k2"));
    ASSERT_EQ(cellar_get(h, K("k2"), &it), CELLAR_NOT_FOUND);

    /* The handle counted what the server saw. */
    struct cellar_stats st;
    cellar_stats(h, &st);
    ASSERT_U64(st.requests, fake_reqs(f));
    ASSERT_U64(st.connects, 1);
    ASSERT_EQ(atomic_load(&f->accepted), 1);
    ASSERT_U64(st.timeouts + st.errors + st.down_fast_fails + st.tko_events, 0);
    ASSERT_U64(st.hits, 5);
    ASSERT_U64(st.misses, 3);
    /* and the server's own counters (cellar-router's `stats servers`) the same */
    const struct cl_conn_counters *ctr = &h->conns[0].ctr;
    ASSERT_U64(cl_count_get(&ctr->requests), st.requests);
    ASSERT_U64(cl_count_get(&ctr->replies), st.requests);
    ASSERT(cl_count_get(&ctr->latency_ns) > 0);
    ASSERT_U64(cl_count_get(&ctr->errors) + cl_count_get(&ctr->timeouts) +
                   cl_count_get(&ctr->down_fails) + cl_count_get(&ctr->tko_events), 0);
    ASSERT_EQ(atomic_load(&ctr->health), CL_CONN_UP);
    ASSERT_U64(cl_count_get(&h->failovers), 0);
    ASSERT_STR(cellar_strerror(CELLAR_EDOWN), "server marked down");
    ASSERT_STR(cellar_strerror(12345), "unknown status");
    ASSERT_EQ(cellar_config_servers(e->cfg), 1);
    ASSERT_STR(cellar_config_server_name(e->cfg, 0), f->addr);
    ASSERT(cellar_config_server_name(e->cfg, 1) == NULL);
}

ETEST(config_errors) {
    (void)e;
    struct cellar_config *cfg = (struct cellar_config *)1;
    char err[256];
    ASSERT_EQ(cellar_config_parse(&cfg, "", NULL, err, sizeof(err)), CELLAR_ECONFIG);
    ASSERT(cfg == NULL && err[0] != '\0');
    ASSERT_EQ(cellar_config_parse(&cfg, "127.0.0.1:99999", NULL, err, sizeof(err)),
              CELLAR_ECONFIG);
    struct cellar_options bad = {.protocol = "smoke-signals"};
    ASSERT_EQ(cellar_config_parse(&cfg, "127.0.0.1:1", &bad, err, sizeof(err)), CELLAR_ECONFIG);
    struct cellar_options io = {.io = "kqueue"};
    ASSERT_EQ(cellar_config_parse(&cfg, "127.0.0.1:1", &io, err, sizeof(err)), CELLAR_ECONFIG);
    ASSERT(strstr(err, "kqueue") != NULL);
    struct cellar_options win = {.window_min = 10, .window_max = 5};
    ASSERT_EQ(cellar_config_parse(&cfg, "127.0.0.1:1", &win, err, sizeof(err)), CELLAR_ECONFIG);
    ASSERT_EQ(cellar_config_parse(&cfg, NULL, NULL, err, sizeof(err)), CELLAR_ECONFIG);
    ASSERT_EQ(cellar_config_load(&cfg, "/nonexistent/cellar.conf", NULL, err, sizeof(err)),
              CELLAR_ECONFIG);
    cellar_config_release(&cfg);
    struct cellar *none = NULL;
    cellar_destroy(&none);        /* NULL is fine */
    cellar_flight_destroy(&(struct cellar_flight *){NULL});
}

/* io = "uring": the handle's connections on a ring of its own, a set and a multi-get through it. */
ETEST(io_uring_option) {
    struct cellar_options opt = {.io = "uring"};
    ASSERT_EQ(env_list(e, 2, &opt), CELLAR_OK);
    ASSERT(e->h->ring != NULL);
    const char *keys[40];
    size_t nkeys[40];
    char names[40][16];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof(names[i]), "ring%d", i);
        keys[i] = names[i];
        nkeys[i] = strlen(names[i]);
        ASSERT_EQ(cellar_set(e->h, keys[i], nkeys[i], names[i], nkeys[i], 0, 0), CELLAR_OK);
    }
    struct cellar_item items[40];
    uint64_t writes = e->h->st.writes;
    ASSERT_EQ(cellar_mget(e->h, keys, nkeys, 40, items), CELLAR_OK);
    ASSERT(e->h->st.writes - writes <= 10);     /* a turn's gets to a server in one send */
    for (int i = 0; i < 40; i++) {
        ASSERT_EQ(items[i].status, CELLAR_OK);
        ASSERT_MEM(items[i].value, names[i], nkeys[i]);
        cellar_item_clear(&items[i]);
    }
}

/* A multi-get over four healthy servers: each key its own status. */
ETEST(mget_happy) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_list(e, 4, &opt), CELLAR_OK);
    enum { N = 400 };
    static char kb[N][16];
    const char *keys[N];
    size_t nk[N];
    for (int i = 0; i < N; i++) {
        nk[i] = (size_t)snprintf(kb[i], sizeof(kb[i]), "key:%d", i);
        keys[i] = kb[i];
        if (i % 2 == 0)
            ASSERT_EQ(cellar_set(e->h, kb[i], nk[i], kb[i], nk[i], (uint32_t)i, 0), CELLAR_OK);
    }
    unsigned per[4] = {0};
    for (int i = 0; i < N; i++) {
        int s = cellar_server_of(e->h, kb[i], nk[i]);
        ASSERT(s >= 0 && s < 4);
        per[s]++;
        if (i % 2 == 0)
            ASSERT(fake_is(e->f[s], kb[i], kb[i]));
    }
    for (int s = 0; s < 4; s++)
        ASSERT(per[s] > 0);
    struct cellar_item *items = calloc(N, sizeof(*items));
    ASSERT(items != NULL);
    int rc = cellar_mget(e->h, keys, nk, N, items);
    int bad = -1;
    for (int i = 0; i < N && bad < 0; i++) {
        if (i % 2 == 0 ? items[i].status != CELLAR_OK || items[i].nvalue != nk[i] ||
                             memcmp(items[i].value, kb[i], nk[i]) != 0 ||
                             items[i].flags != (uint32_t)i
                       : items[i].status != CELLAR_NOT_FOUND || items[i].value != NULL)
            bad = i;
    }
    for (int i = 0; i < N; i++)
        cellar_item_clear(&items[i]);
    free(items);
    ASSERT_EQ(rc, CELLAR_OK);
    ASSERT_EQ(bad, -1);
    ASSERT_EQ(cellar_mget(e->h, keys, nk, 0, NULL), CELLAR_OK);
    /* A bad key among good ones fails alone, unsent. */
    const char *mixed[3] = {"key:0", "bad key", "key:1"};
    size_t nm[3] = {5, 7, 5};
    struct cellar_item three[3];
    ASSERT_EQ(cellar_mget(e->h, mixed, nm, 3, three), CELLAR_OK);
    int s0 = three[0].status, s1 = three[1].status, s2 = three[2].status;
    for (int i = 0; i < 3; i++)
        cellar_item_clear(&three[i]);
    ASSERT_EQ(s0, CELLAR_OK);
    ASSERT_EQ(s1, CELLAR_EINVAL);
    ASSERT_EQ(s2, CELLAR_NOT_FOUND);
}

/* ---------------------------------------------------------------------- */
/* Faults                                                                   */
/* ---------------------------------------------------------------------- */

/*
 * One multi-get over four servers: one answers, one hangs (its keys time
 * out after server_timeout), one closes the connection after a few
 * answers (the rest ECLOSED), one answers garbage (EPROTO).  Only the
 * failed servers' keys fail, and every connection works again on the
 * next call once its server behaves.
 */
ETEST(mget_faults) {
    struct cellar_options opt = {.server_timeout_ms = 100, .tko_timeouts = 100000};
    ASSERT_EQ(env_list(e, 4, &opt), CELLAR_OK);
    enum { N = 240, OK_S = 0, HANG_S = 1, CLOSE_S = 2, GARBAGE_S = 3, CLOSE_N = 5 };
    static char kb[N][16];
    const char *keys[N];
    size_t nk[N];
    int srv[N];
    unsigned per[4] = {0};
    for (int i = 0; i < N; i++) {
        nk[i] = (size_t)snprintf(kb[i], sizeof(kb[i]), "mk:%d", i);
        keys[i] = kb[i];
        srv[i] = cellar_server_of(e->h, kb[i], nk[i]);
        ASSERT(srv[i] >= 0 && srv[i] < 4);
        per[srv[i]]++;
        for (unsigned s = 0; s < 4; s++)
            fake_put(e->f[s], kb[i], kb[i], 0, 0);
    }
    for (int s = 0; s < 4; s++)
        ASSERT(per[s] > CLOSE_N + 1);
    atomic_store(&e->f[HANG_S]->mode, FK_HANG);
    fake_close_after(e->f[CLOSE_S], CLOSE_N);
    atomic_store(&e->f[GARBAGE_S]->mode, FK_GARBAGE);

    struct cellar_item *items = calloc(N, sizeof(*items));
    ASSERT(items != NULL);
    int64_t t0 = now_ms();
    int rc = cellar_mget(e->h, keys, nk, N, items);
    int64_t took = now_ms() - t0;
    unsigned count[4][16] = {{0}};     /* [server][-status] */
    int wrong = -1;
    for (int i = 0; i < N; i++) {
        int st = items[i].status;
        if (st == CELLAR_OK && (items[i].nvalue != nk[i] || memcmp(items[i].value, kb[i], nk[i])))
            wrong = i;
        if (st <= 0 && st > -16)
            count[srv[i]][-st]++;
        cellar_item_clear(&items[i]);
    }
    free(items);
    ASSERT_EQ(rc, CELLAR_OK);
    ASSERT_EQ(wrong, -1);
    ASSERT_EQ(count[OK_S][0], per[OK_S]);
    ASSERT_EQ(count[HANG_S][-CELLAR_ETIMEDOUT], per[HANG_S]);
    ASSERT_EQ(count[GARBAGE_S][-CELLAR_EPROTO], per[GARBAGE_S]);
    ASSERT(count[CLOSE_S][0] <= CLOSE_N);
    ASSERT(count[CLOSE_S][-CELLAR_ECLOSED] >= per[CLOSE_S] - CLOSE_N);
    ASSERT_EQ(count[CLOSE_S][0] + count[CLOSE_S][-CELLAR_ECLOSED], per[CLOSE_S]);
    ASSERT(took >= 95 && took < 1000);
    ASSERT(fake_reqs(e->f[HANG_S]) > 0);
    struct cellar_stats st;
    cellar_stats(e->h, &st);
    ASSERT_U64(st.timeouts, per[HANG_S]);
    ASSERT(st.errors >= per[GARBAGE_S] + count[CLOSE_S][-CELLAR_ECLOSED]);
    ASSERT_U64(st.tko_events, 0);
    ASSERT(st.window < 256);        /* halved by the timeout */

    /* Each connection recovers on the next call. */
    atomic_store(&e->f[HANG_S]->mode, FK_NORMAL);
    fake_close_after(e->f[CLOSE_S], 0);
    atomic_store(&e->f[GARBAGE_S]->mode, FK_NORMAL);
    for (int s = 0; s < 4; s++) {
        int i = 0;
        while (srv[i] != s)
            i++;
        struct cellar_item it;
        ASSERT_EQ(cellar_get(e->h, kb[i], nk[i], &it), CELLAR_OK);
        bool same = it.nvalue == nk[i] && memcmp(it.value, kb[i], nk[i]) == 0;
        cellar_item_clear(&it);
        ASSERT(same);
    }
}

/* A single request per fault: each status, and the connection after it. */
ETEST(single_faults) {
    struct cellar_options opt = {.server_timeout_ms = 60, .tko_timeouts = 100};
    ASSERT_EQ(env_list(e, 1, &opt), CELLAR_OK);
    struct fake *f = e->f[0];
    struct cellar_item it;
    fake_put(f, "a", "1", 0, 0);
    atomic_store(&f->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_get(e->h, K("a"), &it), CELLAR_EPROTO);
    ASSERT_EQ(cellar_set(e->h, K("a"), "2", 1, 0, 0), CELLAR_EPROTO);
    atomic_store(&f->mode, FK_NORMAL);
    ASSERT_EQ(cellar_get(e->h, K("a"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    fake_close_after(f, 1);
    ASSERT_EQ(cellar_get(e->h, K("a"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_get(e->h, K("a"), &it), CELLAR_ECLOSED);
    fake_close_after(f, 0);
    atomic_store(&f->mode, FK_HANG);
    int64_t t0 = now_ms();
    ASSERT_EQ(cellar_delete(e->h, K("a")), CELLAR_ETIMEDOUT);
    ASSERT(now_ms() - t0 >= 55);
    atomic_store(&f->mode, FK_NORMAL);
    atomic_store(&f->delay_ms, 20);     /* slow, but within the timeout */
    ASSERT_EQ(cellar_get(e->h, K("a"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    atomic_store(&f->delay_ms, 150);    /* slower than the timeout */
    ASSERT_EQ(cellar_get(e->h, K("a"), &it), CELLAR_ETIMEDOUT);
    atomic_store(&f->delay_ms, 0);
    ASSERT(WAIT_FOR(fake_idle(f), 1000));   /* done sleeping on the late reply */
    ASSERT_EQ(cellar_get(e->h, K("a"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    /* The late reply of the slow request never answers a later one. */
    ASSERT_EQ(cellar_set(e->h, K("a"), "3", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_get(e->h, K("a"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "3");
    cellar_item_clear(&it);
}

/*
 * TKO: tko_timeouts timeouts in a row mark the server down; its requests
 * then fail at once and nothing is sent; probes (probe_min_ms, then
 * doubling) revive it once it answers again.  A refused connection marks
 * it down at once, and a server back on the port revives.
 */
ETEST(tko_and_revival) {
    struct cellar_options opt = {.server_timeout_ms = 50, .tko_timeouts = 2, .probe_min_ms = 20,
                                 .probe_max_ms = 40};
    ASSERT_EQ(env_list(e, 1, &opt), CELLAR_OK);
    struct fake *f = e->f[0];
    struct cellar_item it;
    struct cellar_stats st;
    fake_put(f, "k", "v", 0, 0);
    atomic_store(&f->mode, FK_HANG);
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_ETIMEDOUT);
    ASSERT(!cellar_server_down(e->h, 0));
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_ETIMEDOUT);
    ASSERT(cellar_server_down(e->h, 0));
    ASSERT(!cellar_server_down(e->h, 7));
    cellar_stats(e->h, &st);
    ASSERT_U64(st.tko_events, 1);
    ASSERT_U64(st.timeouts, 2);
    const struct cl_conn_counters *ctr = &e->h->conns[0].ctr;
    ASSERT_EQ(atomic_load(&ctr->health), CL_CONN_DOWN);
    ASSERT_U64(cl_count_get(&ctr->tko_events), 1);
    ASSERT_U64(cl_count_get(&ctr->timeouts), 2);
    unsigned seen = fake_reqs(f);
    int64_t t0 = now_ms();
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_EDOWN);
    ASSERT_EQ(it.status, CELLAR_EDOWN);
    ASSERT_EQ(cellar_set(e->h, K("k"), "w", 1, 0, 0), CELLAR_EDOWN);
    ASSERT(now_ms() - t0 < 45);         /* at once, not after server_timeout */
    ASSERT_EQ(fake_reqs(f), seen);
    cellar_stats(e->h, &st);
    ASSERT_U64(st.down_fast_fails, 2);
    ASSERT_U64(cl_count_get(&ctr->down_fails), 2);

    /* Probes while it still hangs time out and keep it down. */
    ASSERT(POLL_FOR(e->h, (cellar_stats(e->h, &st), st.probes >= 2), 2000));
    ASSERT(cellar_server_down(e->h, 0));
    ASSERT_U64(st.revivals, 0);
    ASSERT(atomic_load(&f->ops[FK_VERSION]) >= 1);

    ASSERT_EQ(atomic_load(&ctr->health), CL_CONN_DOWN);        /* probing is down too */
    atomic_store(&f->mode, FK_NORMAL);
    ASSERT(POLL_FOR(e->h, !cellar_server_down(e->h, 0), 2000));
    ASSERT_EQ(atomic_load(&ctr->health), CL_CONN_UP);
    cellar_stats(e->h, &st);
    ASSERT_U64(st.revivals, 1);
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "v");
    cellar_item_clear(&it);

    /* Refused: down at once; back on the same port: revived. */
    uint16_t port = f->port;
    fake_stop(&e->f[0]);
    ASSERT_EQ(cellar_set(e->h, K("k"), "x", 1, 0, 0), CELLAR_ECLOSED);  /* the old connection */
    ASSERT(!cellar_server_down(e->h, 0));
    ASSERT_EQ(cellar_set(e->h, K("k"), "x", 1, 0, 0), CELLAR_ECONNECT);
    ASSERT(cellar_server_down(e->h, 0));
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_EDOWN);
    cellar_poll(e->h, 30);          /* a probe or two, refused */
    ASSERT(cellar_server_down(e->h, 0));
    e->f[0] = fake_start_on(port);
    ASSERT(e->f[0] != NULL);
    ASSERT(POLL_FOR(e->h, !cellar_server_down(e->h, 0), 2000));
    ASSERT_EQ(cellar_set(e->h, K("k"), "y", 1, 0, 0), CELLAR_OK);
    ASSERT(fake_is(e->f[0], "k", "y"));
    cellar_stats(e->h, &st);
    ASSERT_U64(st.tko_events, 2);
    ASSERT_U64(st.revivals, 2);
    ASSERT_U64(cl_count_get(&e->h->conns[0].ctr.tko_events), 2);
    ASSERT_U64(cl_count_get(&e->h->conns[0].ctr.errors), st.errors);
    ASSERT_U64(cl_count_get(&e->h->conns[0].ctr.requests), st.requests);
}

/* The window bounds the gets in flight over all servers, and halves on a timeout. */
ETEST(window_bound) {
    struct cellar_options opt = {.server_timeout_ms = 100, .window_init = 4, .window_min = 2,
                                 .window_max = 8, .tko_timeouts = 100000};
    ASSERT_EQ(env_list(e, 3, &opt), CELLAR_OK);
    enum { N = 600 };
    static char kb[N][16];
    const char *keys[N];
    size_t nk[N];
    for (int i = 0; i < N; i++) {
        nk[i] = (size_t)snprintf(kb[i], sizeof(kb[i]), "w:%d", i);
        keys[i] = kb[i];
        for (unsigned s = 0; s < 3; s++)
            fake_put(e->f[s], kb[i], "x", 0, 0);
    }
    struct cellar_stats st;
    cellar_stats(e->h, &st);
    ASSERT_EQ(st.window, 4);
    struct cellar_item *items = calloc(N, sizeof(*items));
    ASSERT(items != NULL);
    size_t nfailed = N;
    ASSERT_EQ(cellar_mget_failures(e->h, keys, nk, N, items, &nfailed), CELLAR_OK);
    ASSERT_EQ(nfailed, 0);
    int bad = -1;
    for (int i = 0; i < N; i++) {
        if (items[i].status != CELLAR_OK)
            bad = i;
        cellar_item_clear(&items[i]);
    }
    ASSERT_EQ(bad, -1);
    cellar_stats(e->h, &st);
    ASSERT(st.window_peak <= 8);
    ASSERT(st.window_peak >= 4);
    ASSERT_EQ(st.window, 8);
    /* A timeout halves it; the peak never passes the bound. */
    atomic_store(&e->f[1]->mode, FK_HANG);
    char key[16];
    int k = 0;
    do
        snprintf(key, sizeof(key), "h%d", k++);
    while (cellar_server_of(e->h, K(key)) != 1);
    struct cellar_item one;
    ASSERT_EQ(cellar_get(e->h, K(key), &one), CELLAR_ETIMEDOUT);
    cellar_stats(e->h, &st);
    ASSERT_EQ(st.window, 4);
    ASSERT_EQ(cellar_mget_failures(e->h, keys, nk, N, items, &nfailed), CELLAR_OK);
    unsigned timeouts = 0;
    for (int i = 0; i < N; i++) {
        timeouts += items[i].status == CELLAR_ETIMEDOUT;
        cellar_item_clear(&items[i]);
    }
    free(items);
    ASSERT(timeouts > 0);
    ASSERT_EQ(nfailed, timeouts);           /* the hung server's keys, and no others */
    struct cellar_error err;
    cellar_last_error(e->h, &err);
    ASSERT_EQ(err.status, CELLAR_ETIMEDOUT);
    ASSERT_EQ(err.server, 1);
    cellar_stats(e->h, &st);
    ASSERT(st.window_peak <= 8);
    ASSERT(st.window <= 8 && st.window >= 2);
}

/* What a healthy fake had answered a while into a multi-get (sampled from a thread). */
struct sample {
    struct fake *f;
    int after_ms;
    unsigned answered;
};

static void *sample_later(void *arg) {
    struct sample *s = arg;
    sleep_ms(s->after_ms);
    s->answered = atomic_load(&s->f->answered);
    return NULL;
}

/*
 * A server that accepts and never answers holds no one else's requests
 * behind the window: with a window of 8 and a timeout of 1 s, the healthy
 * server's keys of a multi-get are all answered a quarter of the way to
 * the timeout (its requests leave the window once it has answered nothing
 * for the stall time), and the hung server's keys time out together, once.
 */
ETEST(hung_server_leaves_the_window) {
    struct cellar_options opt = {.server_timeout_ms = 1000, .window_init = 8, .window_min = 8,
                                 .window_max = 8, .tko_timeouts = 100000};
    ASSERT_EQ(env_list(e, 2, &opt), CELLAR_OK);
    enum { N = 200 };
    static char kb[N][16];
    const char *keys[N];
    size_t nk[N];
    unsigned healthy = 0;
    for (int i = 0; i < N; i++) {
        nk[i] = (size_t)snprintf(kb[i], sizeof(kb[i]), "hw:%d", i);
        keys[i] = kb[i];
        fake_put(e->f[0], kb[i], "x", 0, 0);
        healthy += cellar_server_of(e->h, keys[i], nk[i]) == 0;
    }
    ASSERT(healthy > 50 && healthy < 150);
    atomic_store(&e->f[1]->mode, FK_HANG);
    struct sample smp = {.f = e->f[0], .after_ms = 250};
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, sample_later, &smp), 0);
    struct cellar_item *items = calloc(N, sizeof(*items));
    ASSERT(items != NULL);
    int64_t t0 = now_ms();
    ASSERT_EQ(cellar_mget(e->h, keys, nk, N, items), CELLAR_OK);
    int64_t took = now_ms() - t0;
    pthread_join(th, NULL);
    unsigned ok = 0, timeouts = 0;
    for (int i = 0; i < N; i++) {
        ok += items[i].status == CELLAR_OK;
        timeouts += items[i].status == CELLAR_ETIMEDOUT;
        cellar_item_clear(&items[i]);
    }
    free(items);
    ASSERT_EQ(ok, healthy);
    ASSERT_EQ(timeouts, N - healthy);
    ASSERT_EQ(smp.answered, healthy);           /* long before the timeout */
    ASSERT(took >= 1000 && took < 1900);        /* one timeout, not two */
    struct cellar_stats st;
    cellar_stats(e->h, &st);
    ASSERT(st.window_peak <= 8);
}

/* One multi-get of n keys "b:<i>" on e's handle: how many came back OK. */
static int mget_ok(struct env *e, int n) {
    static char kb[200][16];
    const char *keys[200] = {NULL};
    size_t nk[200] = {0};
    struct cellar_item items[200];
    for (int i = 0; i < n; i++) {
        nk[i] = (size_t)snprintf(kb[i], sizeof(kb[i]), "b:%d", i);
        keys[i] = kb[i];
    }
    int ok = 0;
    if (cellar_mget(e->h, keys, nk, (size_t)n, items) != CELLAR_OK)
        return -1;
    for (int i = 0; i < n; i++) {
        ok += items[i].status == CELLAR_OK;
        cellar_item_clear(&items[i]);
    }
    return ok;
}

/* Keys "b:0".."b:199" with value v on each of e's three fakes. */
static void put_b(struct env *e, const char *v) {
    for (int i = 0; i < 200; i++) {
        char k[16];
        snprintf(k, sizeof(k), "b:%d", i);
        for (unsigned s = 0; s < 3; s++)
            fake_put(e->f[s], k, v, 0, 0);
    }
}

/*
 * window_bytes bounds the replies' bytes in flight: 16 KB of 4 KB values
 * is 4 gets at a time whatever the count window; 1 KB is reckoned before
 * any reply came; small replies give the count window back; -1 is no bound.
 */
ETEST(window_bytes_bound) {
    struct cellar_options opt = {.window_init = 64, .window_min = 64, .window_max = 64,
                                 .window_bytes = 16384};
    ASSERT_EQ(env_list(e, 3, &opt), CELLAR_OK);
    static char big[4001];
    memset(big, 'v', 4000);
    struct cellar_stats st;
    cellar_stats(e->h, &st);
    ASSERT_EQ(st.window, 16);       /* 16 KB over the first guess, 1 KB */
    put_b(e, big);
    ASSERT_EQ(mget_ok(e, 200), 200);
    cellar_stats(e->h, &st);
    ASSERT(st.window_peak <= 16);
    ASSERT(st.window >= 3 && st.window <= 4);   /* 16384 / (4000 + the header) */
    put_b(e, "x");
    ASSERT_EQ(mget_ok(e, 200), 200);
    ASSERT_EQ(mget_ok(e, 200), 200);
    cellar_stats(e->h, &st);
    ASSERT_EQ(st.window, 64);       /* small replies: the count bounds */
    ASSERT_EQ(st.window_peak, 64);
    cellar_destroy(&e->h);
    cellar_config_release(&e->cfg);
    char list[3 * 32];
    snprintf(list, sizeof(list), "%s,%s,%s", e->f[0]->addr, e->f[1]->addr, e->f[2]->addr);
    opt.window_bytes = -1;
    ASSERT_EQ(cellar_config_parse(&e->cfg, list, &opt, NULL, 0), CELLAR_OK);
    ASSERT_EQ(handle_create(&e->h, e->cfg), CELLAR_OK);
    put_b(e, big);
    ASSERT_EQ(mget_ok(e, 200), 200);
    cellar_stats(e->h, &st);
    ASSERT_EQ(st.window, 64);
    ASSERT_EQ(st.window_peak, 64);
    opt.window_bytes = -2;
    struct cellar_config *bad = NULL;
    char err[256] = "";
    ASSERT_EQ(cellar_config_parse(&bad, list, &opt, err, sizeof(err)), CELLAR_ECONFIG);
    ASSERT(strstr(err, "window_bytes") != NULL);
}

/* 1 MB values in both directions, alone and in a multi-get. */
ETEST(large_values) {
    struct cellar_options opt = {.server_timeout_ms = 2000};
    ASSERT_EQ(env_list(e, 2, &opt), CELLAR_OK);
    enum { MB = 1 << 20 };
    char *big = malloc(MB);
    ASSERT(big != NULL);
    for (size_t i = 0; i < MB; i++)
        big[i] = (char)('a' + (i * 7 + i / 4096) % 26);
    int rc1 = cellar_set(e->h, K("big1"), big, MB, 9, 0);
    big[0] = 'Z';
    int rc2 = cellar_set(e->h, K("big2"), big, MB, 10, 0);
    int s1 = cellar_server_of(e->h, K("big1")), s2 = cellar_server_of(e->h, K("big2"));
    size_t n1 = 0;
    char *v1 = fake_value(e->f[s1], "big1", &n1, NULL);
    bool same1 = v1 && n1 == MB && memcmp(v1 + 1, big + 1, MB - 1) == 0 && v1[0] != 'Z';
    free(v1);
    struct cellar_item it = {0};
    int rc3 = cellar_get(e->h, K("big2"), &it);
    bool same2 = rc3 == CELLAR_OK && it.nvalue == MB && memcmp(it.value, big, MB) == 0 &&
                 it.value[MB] == '\0' && it.flags == 10;
    cellar_item_clear(&it);
    const char *keys[3] = {"big1", "small", "big2"};
    size_t nk[3] = {4, 5, 4};
    struct cellar_item items[3];
    int rc4 = cellar_mget(e->h, keys, nk, 3, items);
    bool same3 = items[0].status == CELLAR_OK && items[0].nvalue == MB &&
                 memcmp(items[0].value + 1, big + 1, MB - 1) == 0 &&
                 items[1].status == CELLAR_NOT_FOUND && items[2].status == CELLAR_OK &&
                 items[2].nvalue == MB && memcmp(items[2].value, big, MB) == 0;
    for (int i = 0; i < 3; i++)
        cellar_item_clear(&items[i]);
    free(big);
    ASSERT_EQ(rc1, CELLAR_OK);
    ASSERT_EQ(rc2, CELLAR_OK);
    ASSERT(s1 >= 0 && s2 >= 0);
    ASSERT(same1);
    ASSERT_EQ(rc3, CELLAR_OK);
    ASSERT(same2);
    ASSERT_EQ(rc4, CELLAR_OK);
    ASSERT(same3);
    /* Small requests after the large ones still work on the same connections. */
    ASSERT_EQ(cellar_set(e->h, K("small"), "s", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_get(e->h, K("small"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "s");
    cellar_item_clear(&it);
}

/*
 * cellar_destroy right after a timed-out call, with the hanging server
 * still holding its end of the connection, and right after a multi-get
 * whose hanging server's keys timed out: nothing leaks.
 */
ETEST(destroy_after_timeout) {
    struct cellar_options opt = {.server_timeout_ms = 50, .tko_timeouts = 1000};
    ASSERT_EQ(env_list(e, 2, &opt), CELLAR_OK);
    atomic_store(&e->f[0]->mode, FK_HANG);
    struct cellar_item it;
    char key[16];
    int k = 0;
    do
        snprintf(key, sizeof(key), "d%d", k++);
    while (cellar_server_of(e->h, K(key)) != 0);
    ASSERT_EQ(cellar_set(e->h, K(key), "v", 1, 0, 0), CELLAR_ETIMEDOUT);
    ASSERT_EQ(cellar_get(e->h, K(key), &it), CELLAR_ETIMEDOUT);
    ASSERT(WAIT_FOR(fake_reqs(e->f[0]) >= 2, 1000));
    cellar_destroy(&e->h);
    ASSERT(e->h == NULL);
    /* A second handle: a multi-get, then destroy. */
    ASSERT_EQ(handle_create(&e->h, e->cfg), CELLAR_OK);
    const char *keys[4] = {"a", "b", "c", key};
    size_t nk[4] = {1, 1, 1, strlen(key)};
    struct cellar_item items[4];
    ASSERT_EQ(cellar_mget(e->h, keys, nk, 4, items), CELLAR_OK);
    int last = items[3].status;
    for (int i = 0; i < 4; i++)
        cellar_item_clear(&items[i]);
    ASSERT_EQ(last, CELLAR_ETIMEDOUT);
    cellar_destroy(&e->h);
    /* A handle never used, and one whose server is down. */
    ASSERT_EQ(handle_create(&e->h, e->cfg), CELLAR_OK);
    cellar_destroy(&e->h);
}

/* ---------------------------------------------------------------------- */
/* Leases, single-flight, near-cache                                        */
/* ---------------------------------------------------------------------- */

ETEST(leases) {
    struct cellar_options opt = {.server_timeout_ms = 1000, .lease_retry_ms = 5,
                                 .lease_wait_ms = 40};
    ASSERT_EQ(env_list(e, 1, &opt), CELLAR_OK);
    ASSERT_EQ(handle_create(&e->h2, e->cfg), CELLAR_OK);
    struct fake *f = e->f[0];
    struct cellar_item it = {0};
    struct cellar_lease l;

    /* A miss wins the lease; another reader waits, then gives up. */
    ASSERT_EQ(cellar_lease_get(e->h, K("hot"), 30, &it, &l), CELLAR_OK);
    ASSERT_EQ(l.state, CELLAR_LEASE_WIN);
    ASSERT(l.token != 0);
    ASSERT_EQ(fake_exptime(f, "hot"), 30);
    cellar_item_clear(&it);
    uint64_t token = l.token;
    unsigned mg = atomic_load(&f->ops[FK_MG]);
    int64_t t0 = now_ms();
    ASSERT_EQ(cellar_lease_get(e->h2, K("hot"), 30, &it, &l), CELLAR_OK);
    ASSERT_EQ(l.state, CELLAR_LEASE_WAIT);
    ASSERT(now_ms() - t0 >= 35);
    ASSERT(atomic_load(&f->ops[FK_MG]) >= mg + 3);     /* it retried */
    cellar_item_clear(&it);
    /* The winner fills; everyone reads the value. */
    ASSERT_EQ(cellar_lease_set(e->h, K("hot"), "filled", 6, 4, 60, token), CELLAR_OK);
    ASSERT_EQ(fake_exptime(f, "hot"), 60);
    ASSERT_EQ(cellar_lease_get(e->h2, K("hot"), 30, &it, &l), CELLAR_OK);
    ASSERT_EQ(l.state, CELLAR_LEASE_HIT);
    ASSERT_STR(it.value, "filled");
    ASSERT_EQ(it.flags, 4);
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_lease_get(e->h2, K("hot"), 30, NULL, &l), CELLAR_OK);
    ASSERT_EQ(l.state, CELLAR_LEASE_HIT);
    /* A spent token fails. */
    ASSERT_EQ(cellar_lease_set(e->h, K("hot"), "again", 5, 0, 60, token), CELLAR_EXISTS);
    ASSERT(fake_is(f, "hot", "filled"));
    /* A delete between win and fill voids the lease. */
    ASSERT_EQ(cellar_lease_get(e->h, K("cold"), 30, NULL, &l), CELLAR_OK);
    ASSERT_EQ(l.state, CELLAR_LEASE_WIN);
    ASSERT_EQ(cellar_delete(e->h2, K("cold")), CELLAR_OK);
    ASSERT_EQ(cellar_lease_set(e->h, K("cold"), "late", 4, 0, 60, l.token), CELLAR_NOT_FOUND);
    ASSERT(!fake_has(f, "cold"));
    /* Bad arguments. */
    ASSERT_EQ(cellar_lease_get(e->h, K("x"), 0, &it, &l), CELLAR_EINVAL);
    ASSERT_EQ(it.status, CELLAR_EINVAL);
    ASSERT_EQ(cellar_lease_get(e->h, K("bad key"), 30, &it, &l), CELLAR_EINVAL);
}

struct flight_arg {
    struct cellar_config *cfg;
    struct cellar_flight *g;
    pthread_barrier_t *bar;
    atomic_int *ready;
    const char *key;
    int rounds;
    int status;
    int same;                   /* every answer was the expected value */
    uint64_t requests;          /* the handle's stats.requests */
};

static void *flight_thread(void *p) {
    struct flight_arg *a = p;
    struct cellar *h = NULL;
    a->status = handle_create(&h, a->cfg);
    pthread_barrier_wait(a->bar);
    if (a->status != CELLAR_OK)
        return NULL;
    a->same = 1;
    for (int r = 0; r < a->rounds; r++) {
        atomic_fetch_add(a->ready, 1);
        struct cellar_item it;
        int st = cellar_get_flight(h, a->g, a->key, strlen(a->key), &it);
        if (st != CELLAR_OK || it.status != CELLAR_OK || it.nvalue != 5 ||
            memcmp(it.value, "fresh", 6) != 0)
            a->same = 0, a->status = st;
        cellar_item_clear(&it);
    }
    struct cellar_stats st;
    cellar_stats(h, &st);
    a->requests = st.requests;
    cellar_destroy(&h);
    return NULL;
}

/*
 * Eight threads, each its own handle, read one key through one group
 * while the server holds its reply: one request reaches the server and
 * all eight get the value.  Then they read it over and over with the
 * server answering at once: every answer right, fewer requests than reads.
 */
ETEST(flight_8_threads) {
    enum { T = 8 };
    struct cellar_options opt = {.server_timeout_ms = 3000};
    ASSERT_EQ(env_list(e, 1, &opt), CELLAR_OK);
    ASSERT_EQ(cellar_flight_create(&e->group), CELLAR_OK);
    struct fake *f = e->f[0];
    fake_put(f, "fly", "fresh", 0, 0);
    struct flight_arg a[T];
    pthread_t th[T];
    pthread_barrier_t bar;
    atomic_int ready = 0;
    for (int round = 0; round < 2; round++) {
        int rounds = round == 0 ? 1 : 50;
        unsigned before = fake_reqs(f);
        atomic_store(&ready, 0);
        atomic_store(&f->gate_closed, round == 0);
        pthread_barrier_init(&bar, NULL, T);
        for (int i = 0; i < T; i++) {
            a[i] = (struct flight_arg){.cfg = e->cfg, .g = e->group, .bar = &bar,
                                       .ready = &ready, .key = "fly", .rounds = rounds};
            pthread_create(&th[i], NULL, flight_thread, &a[i]);
        }
        if (round == 0) {
            /*
             * Every thread is about to call, the leader's request is at the
             * server: a moment for the followers to join the flight (which
             * nothing outside the group can see), then the reply goes.
             */
            WAIT_FOR(atomic_load(&ready) == T && fake_reqs(f) > before, 2000);
            sleep_ms(50);
            atomic_store(&f->gate_closed, false);
        }
        uint64_t sent = 0;
        int ok = 1;
        for (int i = 0; i < T; i++) {
            pthread_join(th[i], NULL);
            sent += a[i].requests;
            ok &= a[i].same && a[i].status == CELLAR_OK;
        }
        pthread_barrier_destroy(&bar);
        ASSERT(ok);
        ASSERT_U64(sent, fake_reqs(f) - before);
        if (round == 0)
            ASSERT_U64(sent, 1);
        else
            ASSERT(sent >= 1 && sent <= (uint64_t)T * rounds);
    }
    /* Bad keys are refused before the group. */
    struct cellar_item it;
    ASSERT_EQ(cellar_get_flight(e->h, e->group, K("bad key"), &it), CELLAR_EINVAL);
    ASSERT_EQ(cellar_get_flight(e->h, e->group, K("missing"), &it), CELLAR_NOT_FOUND);
    ASSERT(it.value == NULL);
}

ETEST(near_cache) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_list(e, 2, &opt), CELLAR_OK);
    struct cellar_near *bad = NULL;
    ASSERT_EQ(cellar_near_create(&bad, 1000, 60, NULL), CELLAR_EINVAL);
    ASSERT_EQ(cellar_near_create(&bad, 1 << 20, 0, NULL), CELLAR_EINVAL);
    ASSERT_EQ(cellar_near_create(&bad, 1 << 20, 60, "no-such-policy"), CELLAR_EINVAL);
    ASSERT(bad == NULL);
    ASSERT_EQ(cellar_near_create(&e->near, 1 << 20, 60, NULL), CELLAR_OK);
    cellar_use_near(e->h, e->near);
    int s = cellar_server_of(e->h, K("n1"));
    ASSERT(s >= 0);
    struct fake *f = e->f[s];
    struct cellar_item it;
    struct cellar_stats st;
    fake_put(f, "n1", "one", 5, 0);

    /* get: the server once, then the near-cache (put). */
    unsigned r0 = fake_reqs(f);
    ASSERT_EQ(cellar_get(e->h, K("n1"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_get(e->h, K("n1"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "one");
    ASSERT_EQ(it.flags, 5);
    cellar_item_clear(&it);
    ASSERT_EQ(fake_reqs(f), r0 + 1);
    cellar_stats(e->h, &st);
    ASSERT_U64(st.near_hits, 1);
    /* Another client's write is not seen while the copy lives... */
    fake_put(f, "n1", "two", 5, 0);
    ASSERT_EQ(cellar_get(e->h, K("n1"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "one");
    cellar_item_clear(&it);
    /* ...but gets goes to the server. */
    ASSERT_EQ(cellar_gets(e->h, K("n1"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "two");
    cellar_item_clear(&it);
    /* Own writes forget the key first. */
    ASSERT_EQ(cellar_set(e->h, K("n1"), "three", 5, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_get(e->h, K("n1"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "three");
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_delete(e->h, K("n1")), CELLAR_OK);
    ASSERT_EQ(cellar_get(e->h, K("n1"), &it), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_set(e->h, K("n1"), "7", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_get(e->h, K("n1"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_incr(e->h, K("n1"), 1, NULL), CELLAR_OK);
    ASSERT_EQ(cellar_get(e->h, K("n1"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "8");
    cellar_item_clear(&it);

    /* mget asks the servers only for what the near-cache lacks. */
    for (int i = 0; i < 2; i++)
        fake_put(e->f[i], "m1", "a", 0, 0), fake_put(e->f[i], "m2", "b", 0, 0),
            fake_put(e->f[i], "m3", "c", 0, 0);
    ASSERT_EQ(cellar_get(e->h, K("m2"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    unsigned all0 = fake_reqs(e->f[0]) + fake_reqs(e->f[1]);
    const char *keys[4] = {"m1", "m2", "m3", "m4"};
    size_t nk[4] = {2, 2, 2, 2};
    struct cellar_item items[4];
    ASSERT_EQ(cellar_mget(e->h, keys, nk, 4, items), CELLAR_OK);
    int st0 = items[0].status, st1 = items[1].status, st2 = items[2].status,
        st3 = items[3].status;
    bool vals = st0 == 0 && st1 == 0 && st2 == 0 && strcmp(items[0].value, "a") == 0 &&
                strcmp(items[1].value, "b") == 0 && strcmp(items[2].value, "c") == 0;
    for (int i = 0; i < 4; i++)
        cellar_item_clear(&items[i]);
    ASSERT(vals);
    ASSERT_EQ(st3, CELLAR_NOT_FOUND);
    ASSERT_EQ(fake_reqs(e->f[0]) + fake_reqs(e->f[1]), all0 + 3);
    ASSERT_EQ(cellar_mget(e->h, keys, nk, 3, items), CELLAR_OK);  /* all three near */
    for (int i = 0; i < 3; i++)
        cellar_item_clear(&items[i]);
    ASSERT_EQ(fake_reqs(e->f[0]) + fake_reqs(e->f[1]), all0 + 3);

    /* A second handle shares it; detaching works. */
    ASSERT_EQ(handle_create(&e->h2, e->cfg), CELLAR_OK);
    cellar_use_near(e->h2, e->near);
    ASSERT_EQ(cellar_set(e->h2, K("shared"), "s", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_get(e->h2, K("shared"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    unsigned r1 = fake_reqs(e->f[0]) + fake_reqs(e->f[1]);
    ASSERT_EQ(cellar_get(e->h, K("shared"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    ASSERT_EQ(fake_reqs(e->f[0]) + fake_reqs(e->f[1]), r1);
    cellar_use_near(e->h, NULL);
    ASSERT_EQ(cellar_get(e->h, K("shared"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    ASSERT_EQ(fake_reqs(e->f[0]) + fake_reqs(e->f[1]), r1 + 1);
    /* flush_all empties it (and the servers). */
    cellar_use_near(e->h, e->near);
    ASSERT_EQ(cellar_get(e->h, K("m1"), &it), CELLAR_OK);    /* near */
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_flush_all(e->h, 0), CELLAR_OK);
    ASSERT_EQ(cellar_get(e->h, K("m1"), &it), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_get(e->h2, K("shared"), &it), CELLAR_NOT_FOUND);
    cellar_destroy(&e->h);
    cellar_destroy(&e->h2);
}

/* ---------------------------------------------------------------------- */
/* Routes (trees built by hand: pool i = server i = fake i)                 */
/* ---------------------------------------------------------------------- */

static void describe_is(struct env *e, const char *want, int *th_failed) {
    char got[512];
    route_describe(e->cfg->root, e->cfg, got, sizeof(got));
    ASSERT_STR(got, want);
}

/*
 * FailoverWithExptimeRoute: the normal pool first; on a failover error the
 * gutter pool, whose writes carry an exptime capped at failover_exptime.
 * Plain FailoverRoute passes the exptime on unchanged.
 */
ETEST(route_failover_exptime) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_pools(e, 3, &opt), 0);
    struct route *kids[2] = {P(e, 0), P(e, 1)};
    struct route *plain_kids[2] = {P(e, 0), P(e, 2)};
    struct route *gutter = route_failover(e->cfg->routes, kids, 2, 10);
    struct route *plain = route_failover(e->cfg->routes, plain_kids, 2, -1);
    const char *pre[1] = {"plain:"};
    e->cfg->root = route_prefix_selector(e->cfg->routes, pre, &plain, 1, gutter);
    ASSERT(e->cfg->root != NULL);
    describe_is(e, "PrefixSelectorRoute{plain::FailoverRoute[PoolRoute(default),PoolRoute(p2)],"
                   "wildcard:FailoverRoute(exptime=10)[PoolRoute(default),PoolRoute(p1)]}",
                th_failed);
    if (*th_failed)
        return;
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    struct fake *normal = e->f[0], *gut = e->f[1], *other = e->f[2];
    struct cellar_item it;

    /* Healthy: the normal pool, exptime as given. */
    ASSERT_EQ(cellar_set(e->h, K("a"), "1", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(fake_exptime(normal, "a"), 0);
    ASSERT(!fake_has(gut, "a"));

    /* Normal pool fails: the gutter, exptime capped. */
    atomic_store(&normal->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_set(e->h, K("g0"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(fake_exptime(gut, "g0"), 10);
    ASSERT_EQ(cellar_set(e->h, K("g1"), "v", 1, 0, 1000), CELLAR_OK);
    ASSERT_EQ(fake_exptime(gut, "g1"), 10);
    ASSERT_EQ(cellar_set(e->h, K("g2"), "v", 1, 0, 5), CELLAR_OK);
    ASSERT_EQ(fake_exptime(gut, "g2"), 5);
    int64_t far = (int64_t)time(NULL) + 86400;
    ASSERT_EQ(cellar_add(e->h, K("g3"), "v", 1, 0, far), CELLAR_OK);
    ASSERT_EQ(fake_exptime(gut, "g3"), 10);
    int64_t soon = (int64_t)time(NULL) + 3;       /* a unix time 3 s away stays */
    ASSERT_EQ(cellar_set(e->h, K("g4"), "v", 1, 0, soon), CELLAR_OK);
    ASSERT_EQ(fake_exptime(gut, "g4"), soon);
    ASSERT_EQ(cellar_set(e->h, K("g5"), "v", 1, 0, -1), CELLAR_OK);
    ASSERT_EQ(fake_exptime(gut, "g5"), -1);
    ASSERT_EQ(cellar_touch(e->h, K("g2"), 500), CELLAR_OK);
    ASSERT_EQ(fake_exptime(gut, "g2"), 10);
    ASSERT_EQ(cellar_get(e->h, K("g0"), &it), CELLAR_OK);          /* read from the gutter */
    ASSERT_STR(it.value, "v");
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_gat(e->h, K("g1"), 900, &it), CELLAR_OK);
    cellar_item_clear(&it);
    ASSERT_EQ(fake_exptime(gut, "g1"), 10);
    ASSERT_EQ(cellar_delete(e->h, K("g0")), CELLAR_OK);
    ASSERT(!fake_has(gut, "g0"));
    ASSERT_EQ(fake_reqs(other), 0);
    ASSERT_U64(cl_count_get(&e->h->failovers), 10);    /* each of the 10 above, once */
    ASSERT(cl_count_get(&e->h->conns[0].ctr.errors) >= 10);

    /* A miss or a refusal is an answer: no failover. */
    atomic_store(&normal->mode, FK_NORMAL);
    unsigned g = fake_reqs(gut);
    ASSERT_EQ(cellar_get(e->h, K("g1"), &it), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_add(e->h, K("a"), "2", 1, 0, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(fake_reqs(gut), g);

    /* Both fail: the last child's answer. */
    atomic_store(&normal->mode, FK_GARBAGE);
    atomic_store(&gut->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_set(e->h, K("g6"), "v", 1, 0, 0), CELLAR_EPROTO);
    atomic_store(&gut->mode, FK_NORMAL);

    /* Plain FailoverRoute: no cap. */
    ASSERT_EQ(cellar_set(e->h, K("plain:x"), "v", 1, 0, 1000), CELLAR_OK);
    ASSERT_EQ(fake_exptime(other, "plain:x"), 1000);
    ASSERT_EQ(cellar_set(e->h, K("plain:y"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(fake_exptime(other, "plain:y"), 0);
}

/*
 * AllSyncRoute: every child, and the worst answer (error > miss/refusal >
 * success).
 */
ETEST(route_all_sync) {
    struct cellar_options opt = {.server_timeout_ms = 100, .tko_timeouts = 1000};
    ASSERT_EQ(env_pools(e, 3, &opt), 0);
    struct route *kids[3] = {P(e, 0), P(e, 1), P(e, 2)};
    e->cfg->root = route_all(e->cfg->routes, ROUTE_ALL_SYNC, kids, 3);
    describe_is(e, "AllSyncRoute[PoolRoute(default),PoolRoute(p1),PoolRoute(p2)]", th_failed);
    if (*th_failed)
        return;
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    struct cellar_item it;
    ASSERT_EQ(cellar_set(e->h, K("k"), "val", 3, 2, 0), CELLAR_OK);
    for (int i = 0; i < 3; i++)
        ASSERT(fake_is(e->f[i], "k", "val"));
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_OK);          /* all hit */
    ASSERT_STR(it.value, "val");
    ASSERT_EQ(it.flags, 2);
    cellar_item_clear(&it);
    fake_put(e->f[1], "k", "other", 0, 0);
    fake_put(e->f[2], "only2", "x", 0, 0);
    ASSERT_EQ(cellar_get(e->h, K("only2"), &it), CELLAR_NOT_FOUND);   /* two miss */
    ASSERT(it.value == NULL);
    ASSERT_EQ(cellar_delete(e->h, K("only2")), CELLAR_NOT_FOUND);
    ASSERT(!fake_has(e->f[2], "only2"));
    ASSERT_EQ(cellar_add(e->h, K("k"), "z", 1, 0, 0), CELLAR_NOT_STORED);
    atomic_store(&e->f[2]->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_set(e->h, K("k2"), "v", 1, 0, 0), CELLAR_EPROTO);   /* error wins */
    ASSERT(fake_is(e->f[0], "k2", "v") && fake_is(e->f[1], "k2", "v"));
    ASSERT_EQ(cellar_get(e->h, K("k2"), &it), CELLAR_EPROTO);
    atomic_store(&e->f[2]->mode, FK_NORMAL);
    ASSERT_EQ(cellar_set(e->h, K("n"), "5", 1, 0, 0), CELLAR_OK);
    uint64_t n = 0;
    ASSERT_EQ(cellar_incr(e->h, K("n"), 2, &n), CELLAR_OK);
    ASSERT_U64(n, 7);
    /* A timeout is the worst of all; the others still counted. */
    atomic_store(&e->f[1]->mode, FK_HANG);
    int64_t t0 = now_ms();
    ASSERT_EQ(cellar_incr(e->h, K("n"), 1, &n), CELLAR_ETIMEDOUT);
    ASSERT(now_ms() - t0 >= 95);
    ASSERT(fake_is(e->f[0], "n", "8") && fake_is(e->f[2], "n", "8"));
    /* An error before a miss: */
    atomic_store(&e->f[1]->mode, FK_NORMAL);
    ASSERT(WAIT_FOR(fake_idle(e->f[1]), 1000));
    fake_put(e->f[0], "m", "x", 0, 0);
    atomic_store(&e->f[2]->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_get(e->h, K("m"), &it), CELLAR_EPROTO);
}

/* AllSyncRoute where no child's reply is kept (all fail): the sanitizers can watch it. */
ETEST(route_all_sync_failures) {
    struct cellar_options opt = {.server_timeout_ms = 60, .tko_timeouts = 1000};
    ASSERT_EQ(env_pools(e, 3, &opt), 0);
    struct route *kids[3] = {P(e, 0), P(e, 1), P(e, 2)};
    e->cfg->root = route_all(e->cfg->routes, ROUTE_ALL_SYNC, kids, 3);
    describe_is(e, "AllSyncRoute[PoolRoute(default),PoolRoute(p1),PoolRoute(p2)]", th_failed);
    if (*th_failed)
        return;
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    struct cellar_item it;
    atomic_store(&e->f[0]->mode, FK_GARBAGE);
    atomic_store(&e->f[1]->mode, FK_HANG);
    atomic_store(&e->f[2]->mode, FK_GARBAGE);
    int64_t t0 = now_ms();
    ASSERT_EQ(cellar_set(e->h, K("k"), "v", 1, 0, 0), CELLAR_EPROTO);  /* the first error */
    ASSERT(now_ms() - t0 >= 55);                                        /* waited for all */
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_EPROTO);
    ASSERT(it.value == NULL);
    ASSERT_EQ(fake_reqs(e->f[1]), 2);
}

/*
 * AllAsyncRoute answers at once as NullRoute would, its children finish
 * in the background (a slow one, a hanging one); AllInitialRoute answers
 * with the first child's reply while the others go on.  Children left in
 * flight when the handle is destroyed end there, without leaks.
 */
ETEST(route_all_async_initial) {
    struct cellar_options opt = {.server_timeout_ms = 150, .tko_timeouts = 1000};
    ASSERT_EQ(env_pools(e, 3, &opt), 0);
    struct route *kids[3] = {P(e, 0), P(e, 1), P(e, 2)};
    struct route *async = route_all(e->cfg->routes, ROUTE_ALL_ASYNC, kids, 3);
    struct route *initial = route_all(e->cfg->routes, ROUTE_ALL_INITIAL, kids, 3);
    const char *pre[1] = {"i:"};
    e->cfg->root = route_prefix_selector(e->cfg->routes, pre, &initial, 1, async);
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    struct fake *fast = e->f[0], *slow = e->f[1], *hang = e->f[2];
    /* slow, but its three pipelined answers within the 150 ms deadline (at 100
       ms each the later ones timed out, and whether the fake still applied the
       delete after the client hung up was a race) */
    atomic_store(&slow->delay_ms, 40);
    atomic_store(&hang->mode, FK_HANG);
    struct cellar_item it;

    /* AllAsync: the null answer now, the writes later. */
    int64_t t0 = now_ms();
    ASSERT_EQ(cellar_set(e->h, K("a1"), "v", 1, 0, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_get(e->h, K("a1"), &it), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_delete(e->h, K("a1")), CELLAR_NOT_FOUND);
    ASSERT(now_ms() - t0 < 90);
    ASSERT(POLL_FOR(e->h, fake_reqs(slow) >= 3 && fake_idle(slow), 2000));
    ASSERT(POLL_FOR(e->h, fake_reqs(hang) >= 3, 2000));
    ASSERT(!fake_has(fast, "a1") && !fake_has(slow, "a1"));   /* set, get, delete in order */
    ASSERT_EQ(cellar_set(e->h, K("a2"), "v", 1, 0, 0), CELLAR_NOT_STORED);
    ASSERT(POLL_FOR(e->h, fake_has(fast, "a2") && fake_has(slow, "a2"), 2000));
    /* The hanging child's requests time out in the background. */
    struct cellar_stats st;
    ASSERT(POLL_FOR(e->h, (cellar_stats(e->h, &st), st.timeouts >= 4), 2000));

    /* AllInitial: the first child's answer, the others after. */
    t0 = now_ms();
    ASSERT_EQ(cellar_set(e->h, K("i:1"), "w", 1, 0, 0), CELLAR_OK);
    ASSERT(now_ms() - t0 < 90);
    ASSERT(fake_is(fast, "i:1", "w"));
    ASSERT_EQ(cellar_get(e->h, K("i:1"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "w");
    cellar_item_clear(&it);
    ASSERT(POLL_FOR(e->h, fake_is(slow, "i:1", "w"), 2000));
    /* The first child slower than the others. */
    atomic_store(&slow->delay_ms, 0);
    ASSERT(POLL_FOR(e->h, fake_idle(slow), 2000));
    atomic_store(&fast->delay_ms, 30);
    ASSERT_EQ(cellar_set(e->h, K("i:2"), "x", 1, 0, 0), CELLAR_OK);
    ASSERT(fake_is(fast, "i:2", "x"));
    ASSERT(POLL_FOR(e->h, fake_is(slow, "i:2", "x"), 2000));
    atomic_store(&fast->delay_ms, 0);

    /* Destroyed with children in flight: the hanging ones, and a slow one. */
    atomic_store(&slow->delay_ms, 100);
    ASSERT_EQ(cellar_set(e->h, K("a3"), "v", 1, 0, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_set(e->h, K("i:3"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT(e->h->conns[1].sent.n + e->h->conns[1].waiting.n >= 2);
    ASSERT(e->h->conns[2].sent.n + e->h->conns[2].waiting.n >= 2);
    cellar_destroy(&e->h);
}

/* AllAsync children held back by the window when the handle goes. */
ETEST(route_all_async_queued_destroy) {
    struct cellar_options opt = {.server_timeout_ms = 150, .tko_timeouts = 1000,
                                 .window_init = 2, .window_min = 2, .window_max = 2};
    ASSERT_EQ(env_pools(e, 1, &opt), 0);
    struct route *kids[6];
    for (int i = 0; i < 6; i++)
        kids[i] = P(e, 0);
    e->cfg->root = route_all(e->cfg->routes, ROUTE_ALL_ASYNC, kids, 6);
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    atomic_store(&e->f[0]->mode, FK_HANG);
    static char big[100000];
    ASSERT_EQ(cellar_set(e->h, K("q"), big, sizeof(big), 0, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_set(e->h, K("r"), big, sizeof(big), 0, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(e->h->conns[0].sent.n + e->h->conns[0].waiting.n, 12);
    ASSERT(e->h->conns[0].waiting.n >= 10);
    cellar_destroy(&e->h);
}

/*
 * MissFailoverRoute: reads and deletes go on after a miss (or an error)
 * until a hit, as mcrouter's; writes go to the first.
 */
ETEST(route_miss_failover) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_pools(e, 3, &opt), 0);
    struct route *kids[3] = {P(e, 0), P(e, 1), P(e, 2)};
    e->cfg->root = route_miss_failover(e->cfg->routes, kids, 3);
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    struct cellar_item it;
    fake_put(e->f[1], "in1", "one", 0, 0);
    fake_put(e->f[2], "in1", "two", 0, 0);
    fake_put(e->f[2], "in2", "two", 0, 0);
    ASSERT_EQ(cellar_get(e->h, K("in1"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "one");
    cellar_item_clear(&it);
    unsigned r2 = fake_reqs(e->f[2]);
    ASSERT_EQ(cellar_get(e->h, K("in2"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "two");
    cellar_item_clear(&it);
    ASSERT_EQ(fake_reqs(e->f[2]), r2 + 1);
    ASSERT_EQ(cellar_gets(e->h, K("none"), &it), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_set(e->h, K("w"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT(fake_has(e->f[0], "w") && !fake_has(e->f[1], "w") && !fake_has(e->f[2], "w"));
    ASSERT_EQ(cellar_delete(e->h, K("in2")), CELLAR_OK);       /* found on the third */
    ASSERT(!fake_has(e->f[2], "in2"));
    ASSERT_EQ(cellar_delete(e->h, K("in2")), CELLAR_NOT_FOUND);
    atomic_store(&e->f[0]->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_get(e->h, K("in1"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_set(e->h, K("w"), "v", 1, 0, 0), CELLAR_EPROTO);
}

/*
 * RootRoute (routing prefixes): /r/c/key goes to that alias's route as
 * key; /r/fallback/ stands in for an unknown cluster; stars reach every
 * matching route once, the default first (its answer is the answer); an
 * unknown prefix fails, or goes to the default when told; a key without
 * a prefix goes to the default whole.
 */
ETEST(route_root_prefixes) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_pools(e, 4, &opt), 0);
    /* /a/a/ -> 0 (default), /a/b/ and /a/fallback/ -> 1, /b/a/ -> 2, /b/b/ -> 3 */
    const char *aliases[5] = {"/a/a/", "/a/b/", "/b/a/", "/b/b/", "/a/fallback/"};
    struct route *to[5] = {P(e, 0), P(e, 1), P(e, 2), P(e, 3), NULL};
    to[4] = to[1];
    e->cfg->root = route_root(e->cfg->routes, aliases, to, 5, 0, false);
    describe_is(e, "RootRoute(default=/a/a/){/a/a/:PoolRoute(default),/a/b/:PoolRoute(p1),"
                   "/b/a/:PoolRoute(p2),/b/b/:PoolRoute(p3),/a/fallback/:PoolRoute(p1)}",
                th_failed);
    if (*th_failed)
        return;
    ASSERT_EQ(e->cfg->root->nchildren, 4);
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    struct cellar_item it;
    /* no prefix: the default route, the key whole (a '/' or two are no prefix) */
    ASSERT_EQ(cellar_set(e->h, K("plain"), "v0", 2, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_set(e->h, K("/x/plain"), "v0", 2, 0, 0), CELLAR_OK);
    ASSERT(fake_is(e->f[0], "plain", "v0") && fake_is(e->f[0], "/x/plain", "v0"));
    /* an exact alias: its route, the prefix off */
    ASSERT_EQ(cellar_set(e->h, K("/b/a/k1"), "v1", 2, 0, 0), CELLAR_OK);
    ASSERT(fake_is(e->f[2], "k1", "v1") && !fake_has(e->f[0], "k1"));
    ASSERT_EQ(cellar_get(e->h, K("/b/a/k1"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "v1");
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_get(e->h, K("/b/b/k1"), &it), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_server_of(e->h, K("/b/b/k1")), 3);
    ASSERT_EQ(cellar_server_of(e->h, K("k1")), 0);
    /* an unknown cluster of a region with a fallback */
    ASSERT_EQ(cellar_set(e->h, K("/a/zz/k2"), "v2", 2, 0, 0), CELLAR_OK);
    ASSERT(fake_is(e->f[1], "k2", "v2"));
    /* unknown: refused, as mcrouter answers, with nothing sent */
    unsigned sent = fake_reqs(e->f[0]) + fake_reqs(e->f[1]) + fake_reqs(e->f[2]) +
                    fake_reqs(e->f[3]);
    ASSERT_EQ(cellar_set(e->h, K("/c/c/k3"), "v", 1, 0, 0), CELLAR_ESERVER);
    struct cellar_error err;
    cellar_last_error(e->h, &err);
    ASSERT_EQ(err.server, -1);
    ASSERT_STR(err.text, "RootRoute: No rh found");
    ASSERT_EQ(cellar_get(e->h, K("/c/c/k3"), &it), CELLAR_ESERVER);
    ASSERT_EQ(cellar_server_of(e->h, K("/c/c/k3")), CELLAR_ENOTSUP);
    ASSERT_EQ(cellar_set(e->h, K("/a/a/"), "v", 1, 0, 0), CELLAR_EINVAL);  /* no key */
    ASSERT_EQ(fake_reqs(e->f[0]) + fake_reqs(e->f[1]) + fake_reqs(e->f[2]) +
                  fake_reqs(e->f[3]), sent);
    /* every route once, the default's answer */
    ASSERT_EQ(cellar_set(e->h, K("/*/*/all"), "va", 2, 0, 0), CELLAR_OK);
    ASSERT(fake_is(e->f[0], "all", "va"));
    ASSERT(POLL_FOR(e->h, fake_is(e->f[1], "all", "va") && fake_is(e->f[2], "all", "va") &&
                              fake_is(e->f[3], "all", "va"), 2000));
    /* a region: its routes only */
    ASSERT_EQ(cellar_set(e->h, K("/b/*/reg"), "vr", 2, 0, 0), CELLAR_OK);
    ASSERT(POLL_FOR(e->h, fake_is(e->f[2], "reg", "vr") && fake_is(e->f[3], "reg", "vr"), 2000));
    ASSERT(!fake_has(e->f[0], "reg") && !fake_has(e->f[1], "reg"));
    /* other patterns: a star within one part */
    ASSERT_EQ(cellar_set(e->h, K("/*/a/pa"), "vp", 2, 0, 0), CELLAR_OK);
    ASSERT(fake_is(e->f[0], "pa", "vp"));                       /* the default, first */
    ASSERT(POLL_FOR(e->h, fake_is(e->f[2], "pa", "vp"), 2000));
    ASSERT_EQ(cellar_set(e->h, K("/b*/*b*/pb"), "vq", 2, 0, 0), CELLAR_OK);
    ASSERT(fake_is(e->f[3], "pb", "vq"));
    ASSERT_EQ(cellar_get(e->h, K("/b/a/pb"), &it), CELLAR_NOT_FOUND);
    ASSERT(!fake_has(e->f[0], "pb") && !fake_has(e->f[1], "pb") && !fake_has(e->f[2], "pb"));
    ASSERT_EQ(cellar_set(e->h, K("/*z/*/none"), "v", 1, 0, 0), CELLAR_ESERVER);
    cellar_destroy(&e->h);
    /* told to: an unknown prefix goes to the default, its prefix off */
    e->cfg->root = route_root(e->cfg->routes, aliases, to, 5, 3, true);
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    ASSERT_EQ(cellar_set(e->h, K("/c/c/k4"), "v4", 2, 0, 0), CELLAR_OK);
    ASSERT(fake_is(e->f[3], "k4", "v4"));
    ASSERT_EQ(cellar_server_of(e->h, K("/c/c/k4")), 3);
}

/* A JSON configuration over pools A (fake 0) and B (fake 1) whose route is route. */
static int env_json_ab(struct env *e, const char *route, int timeout_ms) {
    if (e->nf == 0 && !env_fakes(e, 2))
        return -1;
    char text[1024], err[256];
    snprintf(text, sizeof(text),
             "{\"pools\": {\"A\": {\"servers\": [\"%s\"], \"server_timeout\": %d,"
             " \"tko_timeouts\": 1000, \"protocol\": \"meta\"},"
             " \"B\": {\"servers\": [\"%s\"], \"protocol\": \"meta\"}}, \"route\": %s}",
             e->f[0]->addr, timeout_ms, e->f[1]->addr, route);
    if (cellar_config_parse(&e->cfg, text, NULL, err, sizeof(err)) != CELLAR_OK) {
        fprintf(stderr, "  config: %s\n", err);
        return -1;
    }
    return handle_create(&e->h, e->cfg);
}

/*
 * FailoverRoute's failover_errors: gets fail over on a remote error only,
 * updates never, deletes on any error (their list absent); and
 * failover_limit, a bucket of burst tokens that each request fills by
 * rate and each failover takes one of: with rate 0 and burst 1, one
 * failover, then a request stays on its first child.
 */
ETEST(route_failover_errors) {
    ASSERT_EQ(env_json_ab(e, "{\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\","
                             " \"PoolRoute|B\"], \"failover_errors\": {\"gets\": [\"remote_error\"],"
                             " \"updates\": []}}", 150), CELLAR_OK);
    struct cellar_item it;
    fake_put(e->f[1], "k", "b", 0, 0);
    atomic_store(&e->f[0]->mode, FK_GARBAGE);               /* a remote error */
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "b");
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_set(e->h, K("k"), "v", 1, 0, 0), CELLAR_EPROTO);  /* updates: none */
    ASSERT(fake_is(e->f[1], "k", "b"));
    cellar_destroy(&e->h);
    ASSERT_EQ(handle_create(&e->h, e->cfg), CELLAR_OK);
    atomic_store(&e->f[0]->mode, FK_HANG);                  /* a timeout */
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_ETIMEDOUT);   /* not a get's */
    ASSERT_EQ(cellar_delete(e->h, K("k")), CELLAR_OK);      /* deletes: every error */
    ASSERT(!fake_has(e->f[1], "k"));
    cellar_destroy(&e->h);
    cellar_config_release(&e->cfg);
    ASSERT_EQ(env_json_ab(e, "{\"type\": \"FailoverRoute\", \"children\": [\"PoolRoute|A\","
                             " \"PoolRoute|B\"], \"failover_limit\": {\"rate\": 0,"
                             " \"burst\": 1}}", 150), CELLAR_OK);
    fake_put(e->f[1], "k", "b", 0, 0);
    atomic_store(&e->f[0]->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_OK);   /* the one token */
    ASSERT_STR(it.value, "b");
    cellar_item_clear(&it);
    unsigned before = fake_reqs(e->f[1]);
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_EPROTO);
    ASSERT_EQ(fake_reqs(e->f[1]), before);
}

/* LatestRoute: host_id picks the first child; failover_count more are tried after it. */
ETEST(route_latest) {
    struct cellar_options opt = {.server_timeout_ms = 1000, .host_id = 4};
    ASSERT_EQ(env_pools(e, 3, &opt), 0);
    struct route *kids[3] = {P(e, 0), P(e, 1), P(e, 2)};
    e->cfg->root = route_latest(e->cfg->routes, kids, 3, 1);
    describe_is(e, "LatestRoute(failover_count=1)[PoolRoute(default),PoolRoute(p1),"
                   "PoolRoute(p2)]", th_failed);
    if (*th_failed)
        return;
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    struct cellar_item it;
    ASSERT_EQ(cellar_set(e->h, K("k"), "v", 1, 0, 0), CELLAR_OK);          /* 4 % 3 = 1 */
    ASSERT(!fake_has(e->f[0], "k") && fake_has(e->f[1], "k") && !fake_has(e->f[2], "k"));
    atomic_store(&e->f[1]->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_set(e->h, K("k2"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT(fake_has(e->f[2], "k2"));
    ASSERT_EQ(cellar_get(e->h, K("k2"), &it), CELLAR_OK);
    cellar_item_clear(&it);
    atomic_store(&e->f[2]->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_get(e->h, K("k2"), &it), CELLAR_EPROTO);   /* not a third try */
    ASSERT_EQ(fake_reqs(e->f[0]), 0);
    /* Another host id, another first child (wrapping around). */
    cellar_destroy(&e->h);
    e->cfg->host_id = 5;
    atomic_store(&e->f[1]->mode, FK_NORMAL);
    atomic_store(&e->f[2]->mode, FK_GARBAGE);
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    ASSERT_EQ(cellar_set(e->h, K("k3"), "v", 1, 0, 0), CELLAR_OK);          /* 2, then 0 */
    ASSERT(fake_has(e->f[0], "k3") && !fake_has(e->f[1], "k3"));
}

/* OperationSelectorRoute: by the operation, else the default (else NullRoute's answer). */
ETEST(route_operation_selector) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_pools(e, 3, &opt), 0);
    struct route *by_op[MSG_OP_COUNT] = {0}, *none[MSG_OP_COUNT] = {0};
    by_op[MSG_SET] = P(e, 1);
    by_op[MSG_GET] = P(e, 0);
    struct route *sel = route_operation_selector(e->cfg->routes, by_op, P(e, 2));
    none[MSG_DELETE] = P(e, 0);
    struct route *sel2 = route_operation_selector(e->cfg->routes, none, NULL);
    const char *pre[1] = {"n:"};
    e->cfg->root = route_prefix_selector(e->cfg->routes, pre, &sel2, 1, sel);
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    struct cellar_item it;
    ASSERT_EQ(cellar_set(e->h, K("k"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT(fake_has(e->f[1], "k") && !fake_has(e->f[0], "k") && !fake_has(e->f[2], "k"));
    fake_put(e->f[0], "k", "from0", 0, 0);
    fake_put(e->f[2], "k", "from2", 0, 0);
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "from0");
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_gets(e->h, K("k"), &it), CELLAR_OK);                /* default */
    ASSERT_STR(it.value, "from2");
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_delete(e->h, K("k")), CELLAR_OK);
    ASSERT(!fake_has(e->f[2], "k") && fake_has(e->f[0], "k") && fake_has(e->f[1], "k"));
    unsigned before = fake_reqs(e->f[0]) + fake_reqs(e->f[1]) + fake_reqs(e->f[2]);
    ASSERT_EQ(cellar_set(e->h, K("n:k"), "v", 1, 0, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_get(e->h, K("n:k"), &it), CELLAR_NOT_FOUND);
    ASSERT_EQ(fake_reqs(e->f[0]) + fake_reqs(e->f[1]) + fake_reqs(e->f[2]), before);
    fake_put(e->f[0], "n:k", "x", 0, 0);
    ASSERT_EQ(cellar_delete(e->h, K("n:k")), CELLAR_OK);
    ASSERT(!fake_has(e->f[0], "n:k"));
}

/* PrefixSelectorRoute: the longest matching prefix, else the wildcard (else null). */
ETEST(route_prefix_selector) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_pools(e, 3, &opt), 0);
    const char *pre[2] = {"a:", "a:b:"};
    struct route *to[2] = {P(e, 0), P(e, 1)};
    struct route *with = route_prefix_selector(e->cfg->routes, pre, to, 2, P(e, 2));
    struct route *without = route_prefix_selector(e->cfg->routes, pre, to, 2, NULL);
    const char *top[1] = {"x"};
    e->cfg->root = route_prefix_selector(e->cfg->routes, top, &without, 1, with);
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    ASSERT_EQ(cellar_set(e->h, K("a:b:c"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_set(e->h, K("a:x"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_set(e->h, K("a:b"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_set(e->h, K("zz"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT(fake_has(e->f[1], "a:b:c") && !fake_has(e->f[0], "a:b:c"));
    ASSERT(fake_has(e->f[0], "a:x") && fake_has(e->f[0], "a:b"));
    ASSERT(fake_has(e->f[2], "zz") && !fake_has(e->f[0], "zz"));
    ASSERT_EQ(cellar_set(e->h, K("xa:1"), "v", 1, 0, 0), CELLAR_NOT_STORED);  /* no wildcard */
    ASSERT_EQ(fake_reqs(e->f[0]) + fake_reqs(e->f[1]) + fake_reqs(e->f[2]), 4);
}

/*
 * WarmUpRoute: a cold miss reads warm (asking for the remaining TTL), answers
 * warm's hit and adds it into cold with that TTL (or the route's exptime
 * when warm has none); the next read hits cold.  Writes go to cold only.
 */
ETEST(route_warm_up) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_pools(e, 2, &opt), 0);
    e->cfg->root = route_warm_up(e->cfg->routes, P(e, 0), P(e, 1), 7, 0);
    describe_is(e, "WarmUpRoute(exptime=7)[PoolRoute(default),PoolRoute(p1)]", th_failed);
    if (*th_failed)
        return;
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    struct fake *cold = e->f[0], *warm = e->f[1];
    struct cellar_item it;
    fake_put(warm, "w1", "warm-one", 3, 100);
    fake_put(warm, "w2", "warm-two", 0, 0);
    ASSERT_EQ(cellar_get(e->h, K("w1"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "warm-one");
    ASSERT_EQ(it.flags, 3);
    cellar_item_clear(&it);
    ASSERT(POLL_FOR(e->h, fake_has(cold, "w1"), 2000));
    ASSERT_EQ(fake_exptime(cold, "w1"), 100);
    uint32_t fl = 0;
    size_t n = 0;
    char *v = fake_value(cold, "w1", &n, &fl);
    bool same = v && strcmp(v, "warm-one") == 0 && fl == 3;
    free(v);
    ASSERT(same);
    unsigned w = fake_reqs(warm);
    ASSERT_EQ(cellar_get(e->h, K("w1"), &it), CELLAR_OK);                 /* cold hit */
    cellar_item_clear(&it);
    ASSERT_EQ(fake_reqs(warm), w);
    /* No TTL on warm: the route's exptime. gat reads warm without touching it. */
    ASSERT_EQ(cellar_gat(e->h, K("w2"), 50, &it), CELLAR_OK);
    ASSERT_STR(it.value, "warm-two");
    cellar_item_clear(&it);
    ASSERT(POLL_FOR(e->h, fake_has(cold, "w2"), 2000));
    ASSERT_EQ(fake_exptime(cold, "w2"), 7);
    ASSERT_EQ(fake_exptime(warm, "w2"), 0);
    /* A miss in both: cold's miss. */
    ASSERT_EQ(cellar_get(e->h, K("none"), &it), CELLAR_NOT_FOUND);
    ASSERT(it.value == NULL);
    /* Writes: cold only. */
    ASSERT_EQ(cellar_set(e->h, K("w4"), "new", 3, 0, 0), CELLAR_OK);
    ASSERT(fake_has(cold, "w4") && !fake_has(warm, "w4"));
    ASSERT_EQ(cellar_delete(e->h, K("w1")), CELLAR_OK);
    ASSERT(!fake_has(cold, "w1") && fake_has(warm, "w1"));
    /* Warm failing: cold's miss. */
    atomic_store(&warm->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_get(e->h, K("none2"), &it), CELLAR_NOT_FOUND);
    /* Cold failing: its error. */
    atomic_store(&cold->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_get(e->h, K("w2"), &it), CELLAR_EPROTO);
    /* A background add still on its way (cold answers slowly) when the handle goes. */
    atomic_store(&cold->mode, FK_NORMAL);
    atomic_store(&warm->mode, FK_NORMAL);
    atomic_store(&cold->delay_ms, 100);
    fake_put(warm, "w5", "late", 0, 0);
    ASSERT_EQ(cellar_get(e->h, K("w5"), &it), CELLAR_OK);
    ASSERT_STR(it.value, "late");
    cellar_item_clear(&it);
    ASSERT_EQ(e->h->conns[0].sent.n + e->h->conns[0].waiting.n, 1);
    cellar_destroy(&e->h);
}

/* NullRoute: nothing sent; a miss, not stored, not found. */
ETEST(route_null) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_pools(e, 1, &opt), 0);
    e->cfg->root = route_null(e->cfg->routes);
    describe_is(e, "NullRoute", th_failed);
    if (*th_failed)
        return;
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    struct cellar_item it;
    uint64_t n = 99;
    struct cellar_lease l;
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_gats(e->h, K("k"), 5, &it), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_set(e->h, K("k"), "v", 1, 0, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_cas(e->h, K("k"), "v", 1, 0, 0, 9), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_delete(e->h, K("k")), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_touch(e->h, K("k"), 5), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_incr(e->h, K("k"), 1, &n), CELLAR_NOT_FOUND);
    ASSERT_U64(n, 99);
    ASSERT_EQ(cellar_lease_get(e->h, K("k"), 5, &it, &l), CELLAR_NOT_FOUND);
    const char *keys[2] = {"a", "b"};
    size_t nk[2] = {1, 1};
    struct cellar_item items[2];
    ASSERT_EQ(cellar_mget(e->h, keys, nk, 2, items), CELLAR_OK);
    ASSERT_EQ(items[0].status, CELLAR_NOT_FOUND);
    ASSERT_EQ(items[1].status, CELLAR_NOT_FOUND);
    ASSERT_EQ(fake_reqs(e->f[0]), 0);
    char ver[32];
    ASSERT_EQ(cellar_version(e->h, 0, ver, sizeof(ver)), CELLAR_OK);   /* servers, not routes */
    ASSERT_EQ(fake_reqs(e->f[0]), 1);
}

/*
 * The JSON form of a tree, where config_json.c parses one: the same
 * description as the hand-built tree, and the gutter's exptime cap at work.
 */
ETEST(json_config) {
    ASSERT(env_fakes(e, 2));
    char text[1024], err[256];
    snprintf(text, sizeof(text),
             "{ // mcrouter's format\n"
             "  \"pools\": {\"main\": {\"servers\": [\"%s\"], \"protocol\": \"meta\"},\n"
             "            \"gutter\": {\"servers\": [\"%s\"], \"protocol\": \"meta\"}},\n"
             "  \"route\": {\"type\": \"FailoverWithExptimeRoute\",\n"
             "            \"normal\": \"PoolRoute|main\",\n"
             "            \"failover\": \"PoolRoute|gutter\",\n"
             "            \"failover_exptime\": 10}\n"
             "}\n", e->f[0]->addr, e->f[1]->addr);
    struct cellar_options opt = {.server_timeout_ms = 1000};
    int rc = cellar_config_parse(&e->cfg, text, &opt, err, sizeof(err));
    if (rc != CELLAR_OK && strstr(err, "not supported")) {
        fprintf(stderr, "  json_config: %s (skipped)\n", err);
        return;
    }
    ASSERT_EQ(rc, CELLAR_OK);
    char got[256];
    route_describe(e->cfg->root, e->cfg, got, sizeof(got));
    ASSERT_STR(got, "FailoverRoute(exptime=10)[PoolRoute(main),PoolRoute(gutter)]");
    ASSERT_EQ(handle_create(&e->h, e->cfg), CELLAR_OK);
    ASSERT_EQ(cellar_set(e->h, K("j"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(fake_exptime(e->f[0], "j"), 0);
    atomic_store(&e->f[0]->mode, FK_GARBAGE);
    ASSERT_EQ(cellar_set(e->h, K("j"), "v", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(fake_exptime(e->f[1], "j"), 10);
}

/*
 * A request whose failover is still on its way when the handle is
 * destroyed: cellar_destroy() deinits the connections in index order, and
 * failing the failover's request on server 1 with ECLOSED makes
 * FailoverRoute send it on to server 0, already deinited.  That submission
 * must fail at once (the handle is closing) rather than open a new socket
 * and queue it for ever: LeakSanitizer caught the seq and the fan leaking.
 */
ETEST(destroy_with_failover_in_flight) {
    struct cellar_options opt = {.server_timeout_ms = 1000, .tko_timeouts = 1000};
    ASSERT_EQ(env_pools(e, 2, &opt), 0);
    struct route *fo_kids[2] = {P(e, 1), P(e, 0)};
    struct route *fo = route_failover(e->cfg->routes, fo_kids, 2, -1);
    struct route *kids[2] = {P(e, 0), fo};
    e->cfg->root = route_all(e->cfg->routes, ROUTE_ALL_INITIAL, kids, 2);
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    atomic_store(&e->f[1]->mode, FK_HANG);
    ASSERT_EQ(cellar_set(e->h, K("k"), "v", 1, 0, 0), CELLAR_OK);  /* server 0 answered */
    ASSERT_EQ(e->h->conns[1].sent.n + e->h->conns[1].waiting.n, 1);  /* the failover's */
    cellar_destroy(&e->h);      /* LeakSanitizer: the fan and the seq */
}

/*
 * AllSyncRoute keeps the worst reply's value and message; they are often
 * empty spans {NULL, 0} (a STORED, a miss, a hit's msg), and copying
 * those with memcpy(dst, NULL, 0) is undefined: UBSan stopped the program
 * at the first AllSync request a server answered.
 */
ETEST(all_sync_keeps_empty_replies) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_pools(e, 2, &opt), 0);
    struct route *kids[2] = {P(e, 0), P(e, 1)};
    e->cfg->root = route_all(e->cfg->routes, ROUTE_ALL_SYNC, kids, 2);
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    ASSERT_EQ(cellar_set(e->h, K("k"), "v", 1, 0, 0), CELLAR_OK);
}

/*
 * After cellar_flush_all() the near-cache keeps what is fetched in the
 * same second: with use_cas off, engine_flush() (expire.c) hid everything
 * stored up to the flush's whole second, so each get went to the servers
 * until the clock ticked.
 */
ETEST(near_keeps_values_after_flush) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_list(e, 1, &opt), CELLAR_OK);
    ASSERT_EQ(cellar_near_create(&e->near, 1 << 20, 60, NULL), CELLAR_OK);
    cellar_use_near(e->h, e->near);
    struct cellar_item it;
    ASSERT_EQ(cellar_flush_all(e->h, 0), CELLAR_OK);
    fake_put(e->f[0], "k", "v", 0, 0);
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_OK);     /* from the server, kept */
    cellar_item_clear(&it);
    unsigned r = fake_reqs(e->f[0]);
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_OK);     /* should be near */
    cellar_item_clear(&it);
    ASSERT_EQ(fake_reqs(e->f[0]), r);
}

/* ---------------------------------------------------------------------- */
/* The delete spool                                                         */
/* ---------------------------------------------------------------------- */

/* A spool in a fresh directory, given to e->h. */
static int env_spool(struct env *e, uint64_t max_bytes) {
    snprintf(e->spool_dir, sizeof(e->spool_dir), "/tmp/cellar-spool-XXXXXX");
    if (mkdtemp(e->spool_dir) == NULL) {
        e->spool_dir[0] = '\0';
        return -1;
    }
    int rc = cellar_spool_open(&e->spool, e->spool_dir, max_bytes);
    if (rc == CELLAR_OK && e->h)
        cellar_use_spool(e->h, e->spool);
    return rc;
}

static struct cellar_spool_stats spool_st(struct env *e) {
    struct cellar_spool_stats st;
    cellar_spool_stats(e->spool, NULL, &st);
    return st;
}

/* The one spool file's size (-1: none or several). */
static long spool_file_size(struct env *e) {
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "cat %s/*.spool 2>/dev/null | wc -c", e->spool_dir);
    FILE *p = popen(cmd, "r");
    long n = -1;
    if (p && fscanf(p, "%ld", &n) != 1)
        n = -1;
    if (p)
        pclose(p);
    return n;
}

static const struct cellar_options spool_opt = {.server_timeout_ms = 100, .tko_timeouts = 2,
                                                .probe_min_ms = 20, .probe_max_ms = 40};

/*
 * Deletes a server cannot take (its connection broken, refused, the
 * server marked down) are answered NOT_FOUND and spooled; once it is back
 * they reach it, and only they: the keys deleted meanwhile are gone, the
 * others kept, the file back to its header.
 */
ETEST(spool_deletes_replayed) {
    ASSERT_EQ(env_list(e, 1, &spool_opt), CELLAR_OK);
    ASSERT_EQ(env_spool(e, 0), CELLAR_OK);
    fake_put(e->f[0], "k0", "v", 0, 0);
    ASSERT_EQ(cellar_delete(e->h, K("k0")), CELLAR_OK);     /* up: not spooled */
    ASSERT_EQ(cellar_delete(e->h, K("k0")), CELLAR_NOT_FOUND);
    ASSERT_U64(spool_st(e).appended, 0);
    ASSERT_EQ(spool_file_size(e), 0);
    uint16_t port = e->f[0]->port;
    fake_stop(&e->f[0]);
    ASSERT_EQ(cellar_delete(e->h, K("k1")), CELLAR_NOT_FOUND);  /* ECLOSED, spooled */
    ASSERT_EQ(cellar_delete(e->h, K("k2")), CELLAR_NOT_FOUND);  /* ECONNECT */
    ASSERT(cellar_server_down(e->h, 0));
    ASSERT_EQ(cellar_delete(e->h, K("k3")), CELLAR_NOT_FOUND);  /* EDOWN */
    struct cellar_item it;
    ASSERT_EQ(cellar_get(e->h, K("k1"), &it), CELLAR_EDOWN);    /* gets are not spooled */
    struct cellar_spool_stats st = spool_st(e);
    ASSERT_U64(st.appended, 3);
    ASSERT_U64(st.depth, 3);
    ASSERT_U64(st.servers, 1);
    ASSERT_U64(st.dropped, 0);
    ASSERT(spool_file_size(e) > 3 * 52);
    struct cellar_stats hs;
    cellar_stats(e->h, &hs);

    /* Back, with what it held (a partition, not a restart). */
    e->f[0] = fake_start_on(port);
    ASSERT(e->f[0] != NULL);
    for (int i = 1; i <= 4; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k%d", i);
        fake_put(e->f[0], k, "old", 0, 0);
    }
    ASSERT(POLL_FOR(e->h, spool_st(e).depth == 0, 3000));
    st = spool_st(e);
    ASSERT_U64(st.replayed, 3);
    ASSERT_U64(st.replay_errors, 0);
    ASSERT(!fake_has(e->f[0], "k1") && !fake_has(e->f[0], "k2") && !fake_has(e->f[0], "k3"));
    ASSERT(fake_is(e->f[0], "k4", "old"));
    ASSERT_EQ(atomic_load(&e->f[0]->ops[FK_MD]), 3);
    long hdr = spool_file_size(e);
    ASSERT(hdr > 0 && hdr < 80);        /* the header line alone */
}

/* cellar_mdelete: one status per key, a down server's keys spooled like single deletes. */
ETEST(mdelete_statuses) {
    ASSERT_EQ(env_list(e, 2, &spool_opt), CELLAR_OK);
    for (int i = 0; i < 2; i++) {
        fake_put(e->f[i], "a", "1", 0, 0);
        fake_put(e->f[i], "b", "1", 0, 0);
    }
    const char *keys[] = {"a", "b", "nope", "bad key"};
    size_t lens[] = {1, 1, 4, 7};
    int st[4];
    ASSERT_EQ(cellar_mdelete(e->h, keys, lens, 4, st), CELLAR_OK);
    ASSERT_EQ(st[0], CELLAR_OK);
    ASSERT_EQ(st[1], CELLAR_OK);
    ASSERT_EQ(st[2], CELLAR_NOT_FOUND);
    ASSERT_EQ(st[3], CELLAR_EINVAL);
    /* each key left the one server it hashes to, and only that one */
    ASSERT_EQ(fake_has(e->f[0], "a") + fake_has(e->f[1], "a"), 1);
    ASSERT_EQ(fake_has(e->f[0], "b") + fake_has(e->f[1], "b"), 1);
    ASSERT_EQ(atomic_load(&e->f[0]->ops[FK_MD]) + atomic_load(&e->f[1]->ops[FK_MD]), 3);
    ASSERT_EQ(cellar_mdelete(e->h, keys, lens, 0, st), CELLAR_OK);
}

/* A pool's "spool" list: writes spooled too, replayed in their order; [] spools nothing. */
ETEST(spool_order_and_ops) {
    ASSERT_EQ(env_list(e, 1, &spool_opt), CELLAR_OK);
    ASSERT_EQ(env_spool(e, 0), CELLAR_OK);
    e->cfg->pools[0].spool_ops |= 1u << MSG_SET;
    uint16_t port = e->f[0]->port;
    fake_stop(&e->f[0]);
    ASSERT_EQ(cellar_set(e->h, K("a"), "1", 1, 0, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_delete(e->h, K("a")), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_set(e->h, K("a"), "2", 1, 7, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_set(e->h, K("b"), "1", 1, 0, 0), CELLAR_NOT_STORED);
    ASSERT_EQ(cellar_delete(e->h, K("b")), CELLAR_NOT_FOUND);
    char big[300000];
    memset(big, 'x', sizeof(big));      /* larger than one read of the replay */
    ASSERT_EQ(cellar_set(e->h, K("c"), big, sizeof(big), 3, 0), CELLAR_NOT_STORED);
    for (int i = 0; i < 150; i++) {     /* more than one batch */
        char k[16];
        snprintf(k, sizeof(k), "n%d", i);
        ASSERT_EQ(cellar_set(e->h, K(k), "v", 1, 0, 0), CELLAR_NOT_STORED);
    }
    ASSERT_EQ(cellar_incr(e->h, K("a"), 1, NULL), CELLAR_EDOWN);   /* not on the list */
    ASSERT_U64(spool_st(e).depth, 156);
    e->f[0] = fake_start_on(port);
    ASSERT(e->f[0] != NULL);
    ASSERT(POLL_FOR(e->h, spool_st(e).depth == 0, 3000));
    ASSERT(fake_is(e->f[0], "a", "2"));
    ASSERT(!fake_has(e->f[0], "b"));
    uint32_t flags = 0;
    size_t n = 0;
    char *v = fake_value(e->f[0], "c", &n, &flags);
    ASSERT(v != NULL && n == sizeof(big) && flags == 3 && memcmp(v, big, n) == 0);
    free(v);
    ASSERT(fake_is(e->f[0], "n149", "v"));
    ASSERT_U64(spool_st(e).replayed, 156);

    e->cfg->pools[0].spool_ops = 0;     /* "spool": [] */
    fake_stop(&e->f[0]);
    ASSERT_EQ(cellar_delete(e->h, K("a")), CELLAR_ECLOSED);
    ASSERT_U64(spool_st(e).appended, 156);
}

/*
 * Records outlive the process: a spool reopened counts them (a torn last
 * record cut off) and a new handle replays them.  A full file drops what
 * does not fit, and that request gets its error.
 */
ETEST(spool_reopened_and_full) {
    ASSERT_EQ(env_list(e, 1, &spool_opt), CELLAR_OK);
    ASSERT_EQ(env_spool(e, 0), CELLAR_OK);
    uint16_t port = e->f[0]->port;
    fake_stop(&e->f[0]);
    ASSERT_EQ(cellar_delete(e->h, K("r1")), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_delete(e->h, K("r2")), CELLAR_NOT_FOUND);
    cellar_destroy(&e->h);
    cellar_spool_close(&e->spool);
    long size = spool_file_size(e);
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "for f in %s/*.spool; do printf '\\060\\0\\0\\0torn' >> $f; done",
             e->spool_dir);
    ASSERT_EQ(system(cmd), 0);
    ASSERT_EQ(spool_file_size(e), size + 8);
    ASSERT_EQ(cellar_spool_open(&e->spool, e->spool_dir, 0), CELLAR_OK);
    ASSERT_U64(spool_st(e).depth, 2);
    ASSERT_EQ(spool_file_size(e), size);
    ASSERT_EQ(handle_create(&e->h, e->cfg), CELLAR_OK);
    cellar_use_spool(e->h, e->spool);
    e->f[0] = fake_start_on(port);
    ASSERT(e->f[0] != NULL);
    fake_put(e->f[0], "r1", "old", 0, 0);
    fake_put(e->f[0], "r3", "old", 0, 0);
    ASSERT(POLL_FOR(e->h, spool_st(e).depth == 0, 3000));
    ASSERT(!fake_has(e->f[0], "r1"));
    ASSERT(fake_is(e->f[0], "r3", "old"));

    /* Room for one record of 52 + 2 bytes, not two. */
    cellar_destroy(&e->h);
    cellar_spool_close(&e->spool);
    ASSERT_EQ(cellar_spool_open(&e->spool, e->spool_dir, 100), CELLAR_OK);
    ASSERT_EQ(handle_create(&e->h, e->cfg), CELLAR_OK);
    cellar_use_spool(e->h, e->spool);
    fake_stop(&e->f[0]);
    ASSERT_EQ(cellar_delete(e->h, K("f1")), CELLAR_NOT_FOUND);
    ASSERT_EQ(cellar_delete(e->h, K("f2")), CELLAR_EDOWN);
    struct cellar_spool_stats st = spool_st(e);
    ASSERT_U64(st.depth, 1);
    ASSERT_U64(st.dropped, 1);

    struct cellar_spool *bad = NULL;
    ASSERT_EQ(cellar_spool_open(&bad, "/nonexistent/dir", 0), CELLAR_EINVAL);
    ASSERT(bad == NULL);
}

/* Remote markers: a mark is "r:<key>" with its TTL; a marked read sees it and the key apart. */
ETEST(remote_markers) {
    ASSERT_EQ(env_list(e, 1, &spool_opt), CELLAR_OK);
    struct cellar_item it;
    int marked = -1;
    ASSERT_EQ(cellar_get_marked(e->h, K("u:1"), &it, &marked), CELLAR_NOT_FOUND);
    ASSERT_EQ(marked, 0);
    ASSERT_EQ(cellar_remote_mark(e->h, K("u:1"), 30), CELLAR_OK);
    ASSERT(fake_is(e->f[0], "r:u:1", "1"));
    ASSERT_EQ(fake_exptime(e->f[0], "r:u:1"), 30);
    ASSERT_EQ(cellar_get_marked(e->h, K("u:1"), &it, &marked), CELLAR_NOT_FOUND);
    ASSERT_EQ(marked, 1);
    fake_put(e->f[0], "u:1", "row", 0, 0);
    ASSERT_EQ(cellar_get_marked(e->h, K("u:1"), &it, &marked), CELLAR_OK);
    ASSERT_EQ(marked, 1);
    ASSERT_STR(it.value, "row");
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_delete(e->h, K("r:u:1")), CELLAR_OK);
    ASSERT_EQ(cellar_get_marked(e->h, K("u:1"), &it, &marked), CELLAR_OK);
    ASSERT_EQ(marked, 0);
    cellar_item_clear(&it);
    char big[CELLAR_KEY_MAX];
    memset(big, 'k', sizeof(big));
    ASSERT_EQ(cellar_remote_mark(e->h, big, CELLAR_KEY_MAX - 1, 30), CELLAR_EINVAL);
    ASSERT_EQ(cellar_remote_mark(e->h, big, CELLAR_KEY_MAX - 2, 30), CELLAR_OK);
    ASSERT_EQ(cellar_remote_mark(e->h, K("u:1"), 0), CELLAR_EINVAL);
    ASSERT_EQ(cellar_get_marked(e->h, big, CELLAR_KEY_MAX - 1, &it, &marked), CELLAR_EINVAL);
}

/*
 * Replay keeps a record the server did not take -- garbled answers
 * (EPROTO) keep it as timeouts do -- and a spool whose replayed part
 * passes half its bound is compacted: what is left still replays whole.
 */
ETEST(spool_replay_keeps_failures_and_compacts) {
    ASSERT_EQ(env_list(e, 1, &spool_opt), CELLAR_OK);
    ASSERT_EQ(env_spool(e, 8192), CELLAR_OK);
    uint16_t port = e->f[0]->port;
    fake_stop(&e->f[0]);
    char k[16];
    for (int i = 0; i < 130; i++) {     /* 130 records of 56 bytes: 7,280 of 8,192 */
        snprintf(k, sizeof(k), "c%03d", i);
        ASSERT_EQ(cellar_delete(e->h, K(k)), CELLAR_NOT_FOUND);
    }
    ASSERT_U64(spool_st(e).depth, 130);
    e->f[0] = fake_start_on(port);
    ASSERT(e->f[0] != NULL);
    atomic_store(&e->f[0]->mode, FK_GARBAGE);
    ASSERT(POLL_FOR(e->h, atomic_load(&e->f[0]->requests) >= 3, 3000));
    cellar_poll(e->h, 50);
    ASSERT_U64(spool_st(e).depth, 130);     /* nothing passed over */
    ASSERT_U64(spool_st(e).replayed, 0);
    for (int i = 0; i < 130; i++) {
        snprintf(k, sizeof(k), "c%03d", i);
        fake_put(e->f[0], k, "old", 0, 0);
    }
    atomic_store(&e->f[0]->mode, FK_NORMAL);
    ASSERT(POLL_FOR(e->h, spool_st(e).depth == 0, 5000));
    ASSERT_U64(spool_st(e).replayed, 130);
    ASSERT_U64(spool_st(e).replay_errors, 0);
    for (int i = 0; i < 130; i++) {
        snprintf(k, sizeof(k), "c%03d", i);
        ASSERT(!fake_has(e->f[0], k));
    }
    long hdr = spool_file_size(e);
    ASSERT(hdr > 0 && hdr < 80);
}

/* ---------------------------------------------------------------------- */
/* The asynchronous face (async.c)                                          */
/* ---------------------------------------------------------------------- */

struct got {
    int n;                          /* callbacks so far */
    int status[32];
    char value[32][16];
    uint32_t flags[32];
    uint64_t cas[32], number[32];
};

static void got_one(void *arg, int status, const struct cellar_reply *r) {
    struct got *g = arg;
    int i = g->n++;
    if (i >= 32)
        return;
    g->status[i] = status;
    snprintf(g->value[i], sizeof(g->value[i]), "%.*s", (int)r->nvalue,
             r->value ? r->value : "");
    g->flags[i] = r->flags;
    g->cas[i] = r->cas;
    g->number[i] = r->number;
}

/* Runs h as an event loop would (poll on cellar_fd), until nothing is pending. */
static bool run_until_idle(struct cellar *h, int ms) {
    int64_t end = now_ms() + ms;
    while (cellar_pending(h) > 0 && now_ms() < end) {
        int wait = cellar_run(h);
        if (cellar_pending(h) == 0)
            break;
        struct pollfd p = {cellar_fd(h), POLLIN, 0};
        poll(&p, 1, wait < 0 || wait > 50 ? 50 : wait);
    }
    return cellar_pending(h) == 0;
}

#define RQ(op_, k_, ...) (struct cellar_request){.op = (op_), .key = (k_), .nkey = strlen(k_), __VA_ARGS__}

/* Every op through cellar_submit, one after another, each answered as the blocking call is. */
ETEST(async_every_operation) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_list(e, 1, &opt), CELLAR_OK);
    struct cellar *h = e->h;
    struct got g = {0};
    const struct cellar_request rqs[] = {
        RQ(CELLAR_OP_SET, "a", .value = "hello", .nvalue = 5, .flags = 7, .exptime = 100),
        RQ(CELLAR_OP_GET, "a"),
        RQ(CELLAR_OP_GETS, "a"),
        RQ(CELLAR_OP_ADD, "a", .value = "x", .nvalue = 1),
        RQ(CELLAR_OP_REPLACE, "nope", .value = "x", .nvalue = 1),
        RQ(CELLAR_OP_APPEND, "a", .value = "!", .nvalue = 1),
        RQ(CELLAR_OP_PREPEND, "a", .value = "<", .nvalue = 1),
        RQ(CELLAR_OP_GET, "a"),
        RQ(CELLAR_OP_SET, "n", .value = "10", .nvalue = 2),
        RQ(CELLAR_OP_INCR, "n", .delta = 5),
        RQ(CELLAR_OP_DECR, "n", .delta = 20),
        RQ(CELLAR_OP_TOUCH, "a", .exptime = 50),
        RQ(CELLAR_OP_GAT, "a", .exptime = 60),
        RQ(CELLAR_OP_DELETE, "a"),
        RQ(CELLAR_OP_GET, "a"),
        RQ(CELLAR_OP_DELETE, "a"),
    };
    const int want[] = {CELLAR_OK, CELLAR_OK, CELLAR_OK, CELLAR_NOT_STORED, CELLAR_NOT_STORED,
                        CELLAR_OK, CELLAR_OK, CELLAR_OK, CELLAR_OK, CELLAR_OK, CELLAR_OK,
                        CELLAR_OK, CELLAR_OK, CELLAR_OK, CELLAR_NOT_FOUND, CELLAR_NOT_FOUND};
    for (size_t i = 0; i < sizeof(rqs) / sizeof(rqs[0]); i++) {
        ASSERT_EQ(cellar_submit(h, &rqs[i], got_one, &g), CELLAR_OK);
        ASSERT_EQ(g.n, (int)i);             /* never called back inside cellar_submit */
        ASSERT(run_until_idle(h, 2000));
        ASSERT_EQ(g.n, (int)i + 1);
        ASSERT_EQ(g.status[i], want[i]);
    }
    ASSERT_STR(g.value[1], "hello");
    ASSERT_EQ(g.flags[1], 7);
    ASSERT(g.cas[2] != 0);
    ASSERT_STR(g.value[7], "<hello!");
    ASSERT_U64(g.number[9], 15);
    ASSERT_U64(g.number[10], 0);
    ASSERT_STR(g.value[12], "<hello!");
    ASSERT_STR(g.value[14], "");
    /* a cas with the gets' cas of an item changed since: EXISTS; with its own: OK */
    struct cellar_item it = {0};
    ASSERT_EQ(cellar_set(h, K("c"), "1", 1, 0, 0), CELLAR_OK);
    ASSERT_EQ(cellar_gets(h, K("c"), &it), CELLAR_OK);
    struct cellar_request cas = RQ(CELLAR_OP_CAS, "c", .value = "2", .nvalue = 1, .cas = it.cas + 1);
    cellar_item_clear(&it);
    ASSERT_EQ(cellar_submit(h, &cas, got_one, &g), CELLAR_OK);
    ASSERT(run_until_idle(h, 2000));
    ASSERT_EQ(g.status[16], CELLAR_EXISTS);
    /* what cannot be taken is refused, and nobody is called back */
    struct cellar_request bad = RQ(CELLAR_OP_GET, "has space");
    ASSERT_EQ(cellar_submit(h, &bad, got_one, &g), CELLAR_EINVAL);
    bad = RQ(CELLAR_OP_DECR + 1, "k");
    ASSERT_EQ(cellar_submit(h, &bad, got_one, &g), CELLAR_EINVAL);
    /* fire and forget: no callback, still sent */
    struct cellar_request ff = RQ(CELLAR_OP_SET, "ff", .value = "v", .nvalue = 1);
    ASSERT_EQ(cellar_submit(h, &ff, NULL, NULL), CELLAR_OK);
    ASSERT(run_until_idle(h, 2000));
    ASSERT_EQ(g.n, 17);
    ASSERT(fake_is(e->f[0], "ff", "v"));
    ASSERT_EQ(cellar_run(h), -1);          /* nothing in flight, nothing due */
}

/* A request a route fails at once is told in cellar_run(), not in cellar_submit(). */
ETEST(async_fails_at_once_later) {
    struct cellar_options opt = {.server_timeout_ms = 200, .probe_min_ms = 60000};
    ASSERT_EQ(env_list(e, 1, &opt), CELLAR_OK);
    struct cellar_item it = {0};
    struct cellar_error err;
    cellar_last_error(e->h, &err);
    ASSERT_EQ(err.status, 0);
    ASSERT_EQ(cellar_set(e->h, K("k"), "v", 1, 0, 0), CELLAR_OK);
    char addr[64];
    snprintf(addr, sizeof(addr), "%s", e->f[0]->addr);
    fake_stop(&e->f[0]);
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_ECLOSED);
    ASSERT_EQ(cellar_get(e->h, K("k"), &it), CELLAR_ECONNECT);
    ASSERT(cellar_server_down(e->h, 0));
    /* where and what: the server, its name, the words */
    cellar_last_error(e->h, &err);
    ASSERT_EQ(err.status, CELLAR_ECONNECT);
    ASSERT_EQ(err.server, 0);
    char want[128];
    snprintf(want, sizeof(want), "%s: %s", addr, cellar_strerror(CELLAR_ECONNECT));
    ASSERT_STR(err.text, want);
    struct got g = {0};
    struct cellar_request rq = RQ(CELLAR_OP_GET, "k");
    ASSERT_EQ(cellar_submit(e->h, &rq, got_one, &g), CELLAR_OK);
    ASSERT_EQ(g.n, 0);
    ASSERT_U64(cellar_pending(e->h), 1);
    ASSERT(cellar_run(e->h) >= 0);          /* a probe is due some day */
    ASSERT_EQ(g.n, 1);
    ASSERT_EQ(g.status[0], CELLAR_EDOWN);
    ASSERT_U64(cellar_pending(e->h), 0);
}

/* A server's own words for a refusal are kept, with its name. */
ETEST(last_error_keeps_the_servers_words) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_list(e, 1, &opt), CELLAR_OK);
    ASSERT_EQ(cellar_set(e->h, K("word"), "abc", 3, 0, 0), CELLAR_OK);
    uint64_t n;
    ASSERT_EQ(cellar_incr(e->h, K("word"), 1, &n), CELLAR_ECLIENT);
    struct cellar_error err;
    cellar_last_error(e->h, &err);
    ASSERT_EQ(err.status, CELLAR_ECLIENT);
    ASSERT_EQ(err.server, 0);
    char want[128];
    snprintf(want, sizeof(want), "%s: cannot increment or decrement non-numeric value",
             e->f[0]->addr);
    ASSERT_STR(err.text, want);
}

/* Requests still in flight when the handle goes: each callback runs once, nothing leaks. */
ETEST(async_destroy_tells_what_is_in_flight) {
    struct cellar_options opt = {.server_timeout_ms = 5000};
    ASSERT_EQ(env_list(e, 2, &opt), CELLAR_OK);
    atomic_store(&e->f[0]->mode, FK_HANG);
    atomic_store(&e->f[1]->mode, FK_HANG);
    struct got g = {0};
    char k[16];
    for (int i = 0; i < 20; i++) {
        snprintf(k, sizeof(k), "k%d", i);
        struct cellar_request rq = RQ(i % 2 ? CELLAR_OP_GET : CELLAR_OP_SET, k, .value = "v",
                                      .nvalue = 1);
        ASSERT_EQ(cellar_submit(e->h, &rq, got_one, &g), CELLAR_OK);
    }
    cellar_run(e->h);                       /* out on the wire, unanswered */
    ASSERT_EQ(g.n, 0);
    cellar_destroy(&e->h);
    ASSERT_EQ(g.n, 20);
    for (int i = 0; i < 20; i++)
        ASSERT(g.status[i] < 0);
}

/* 10,000 gets in flight at once over 8 servers through one poll loop, every answer checked. */
struct many {
    int answered, wrong;
};

static void many_got(void *arg, int status, const struct cellar_reply *r) {
    struct many *m = arg;
    m->answered++;
    /* the key's number is in the value; the callback's arg says which it was */
    if (status != CELLAR_OK || r->nvalue < 2 || r->value[0] != 'v')
        m->wrong++;
}

struct many_key {
    struct many *m;
    int i;
};

static void many_got_key(void *arg, int status, const struct cellar_reply *r) {
    struct many_key *mk = arg;
    char want[32];
    int n = snprintf(want, sizeof(want), "v%d", mk->i);
    many_got(mk->m, status, r);
    if (status == CELLAR_OK && (r->nvalue != (size_t)n || memcmp(r->value, want, (size_t)n) != 0))
        mk->m->wrong++;
}

ETEST(async_ten_thousand_in_flight) {
    struct cellar_options opt = {.server_timeout_ms = 5000, .window_max = 16384,
                                 .window_init = 16384, .window_bytes = -1};
    ASSERT_EQ(env_list(e, 8, &opt), CELLAR_OK);
    enum { N = 10000 };
    struct many m = {0};
    struct many_key *keys = calloc(N, sizeof(*keys));
    ASSERT(keys != NULL);
    char k[32], v[32];
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof(k), "key:%d", i);
        snprintf(v, sizeof(v), "v%d", i);
        struct cellar_request rq = RQ(CELLAR_OP_SET, k, .value = v, .nvalue = strlen(v));
        ASSERT_EQ(cellar_submit(e->h, &rq, many_got, &m), CELLAR_OK);
    }
    ASSERT(run_until_idle(e->h, 20000));
    ASSERT_EQ(m.answered, N);
    m = (struct many){0};
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof(k), "key:%d", i);
        keys[i] = (struct many_key){&m, i};
        struct cellar_request rq = RQ(CELLAR_OP_GET, k);
        ASSERT_EQ(cellar_submit(e->h, &rq, many_got_key, &keys[i]), CELLAR_OK);
    }
    ASSERT_U64(cellar_pending(e->h), N);    /* all in flight (submitted, none answered) */
    ASSERT(run_until_idle(e->h, 20000));
    ASSERT_EQ(m.answered, N);
    ASSERT_EQ(m.wrong, 0);
    unsigned used = 0;
    for (unsigned i = 0; i < 8; i++)
        used += atomic_load(&e->f[i]->requests) > 0;
    ASSERT_EQ(used, 8);
    free(keys);
}

/* ---------------------------------------------------------------------- */
/* Handles for threads that come and go (handles.c)                        */
/* ---------------------------------------------------------------------- */

struct borrower {
    struct cellar_handles *set;
    int id, ok, wrong, timeouts;
    struct cellar *seen[64];            /* the distinct handles this thread was lent */
    int nseen;
};

static void *borrow_loop(void *arg) {
    struct borrower *b = arg;
    char k[32], v[32];
    for (int i = 0; i < 100; i++) {
        struct cellar *h;
        if (cellar_handles_take(b->set, 5000, &h) != CELLAR_OK) {
            b->timeouts++;
            continue;
        }
        bool known = false;
        for (int j = 0; j < b->nseen; j++)
            known = known || b->seen[j] == h;
        if (!known && b->nseen < 64)
            b->seen[b->nseen++] = h;
        snprintf(k, sizeof(k), "t%d:%d", b->id, i);
        snprintf(v, sizeof(v), "v%d", i);
        struct cellar_item it = {0};
        if (cellar_set(h, k, strlen(k), v, strlen(v), 0, 0) == CELLAR_OK &&
            cellar_get(h, k, strlen(k), &it) == CELLAR_OK && it.nvalue == strlen(v) &&
            memcmp(it.value, v, it.nvalue) == 0)
            b->ok++;
        else
            b->wrong++;
        cellar_item_clear(&it);
        if (cellar_handles_give(b->set, &h) != CELLAR_OK || h != NULL)
            b->wrong++;
    }
    return NULL;
}

/* 8 threads, 3 handles: every call answered, never more than 3 made, each lent to one at a time. */
ETEST(handle_set_lends_at_most_max) {
    struct cellar_options opt = {.server_timeout_ms = 2000};
    ASSERT_EQ(env_list(e, 2, &opt), CELLAR_OK);
    struct cellar_handles *set = NULL;
    ASSERT_EQ(cellar_handles_create(&set, e->cfg, 0), CELLAR_EINVAL);
    ASSERT_EQ(cellar_handles_create(&set, e->cfg, 3), CELLAR_OK);
    struct borrower b[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (struct borrower){.set = set, .id = i};
        ASSERT_EQ(pthread_create(&t[i], NULL, borrow_loop, &b[i]), 0);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    struct cellar *all[24];
    int nall = 0;
    for (int i = 0; i < 8; i++) {
        ASSERT_EQ(b[i].ok, 100);
        ASSERT_EQ(b[i].wrong, 0);
        ASSERT_EQ(b[i].timeouts, 0);
        for (int j = 0; j < b[i].nseen; j++) {
            bool known = false;
            for (int k = 0; k < nall; k++)
                known = known || all[k] == b[i].seen[j];
            if (!known && nall < 24)
                all[nall++] = b[i].seen[j];
        }
    }
    ASSERT(nall >= 1 && nall <= 3);
    /* all three out: the next waits, then gives up; a give wakes a waiter */
    struct cellar *h[4] = {NULL};
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(cellar_handles_take(set, 0, &h[i]), CELLAR_OK);
    int64_t t0 = now_ms();
    ASSERT_EQ(cellar_handles_take(set, 50, &h[3]), CELLAR_ETIMEDOUT);
    ASSERT(now_ms() - t0 >= 45);
    ASSERT_EQ(cellar_handles_take(set, 0, &h[3]), CELLAR_ETIMEDOUT);
    struct cellar *keep = h[1];
    ASSERT_EQ(cellar_handles_give(set, &h[1]), CELLAR_OK);
    ASSERT_EQ(cellar_handles_give(set, &keep), CELLAR_EINVAL);    /* given twice */
    struct cellar *other = NULL;
    ASSERT_EQ(cellar_create(&other, e->cfg), CELLAR_OK);
    ASSERT_EQ(cellar_handles_give(set, &other), CELLAR_EINVAL);   /* not the set's */
    cellar_destroy(&other);
    ASSERT_EQ(cellar_handles_take(set, 1000, &h[3]), CELLAR_OK);
    ASSERT(h[3] == keep);
    for (int i = 0; i < 4; i++)
        if (h[i] != NULL)
            ASSERT_EQ(cellar_handles_give(set, &h[i]), CELLAR_OK);
    cellar_handles_destroy(&set);
    ASSERT(set == NULL);
    cellar_handles_destroy(&set);
}

/* cellar_server_of() follows the routes: a selector's pick for a get, a failover's first child. */
ETEST(server_of_follows_the_routes) {
    struct cellar_options opt = {.server_timeout_ms = 1000};
    ASSERT_EQ(env_pools(e, 4, &opt), 0);
    struct route *rs_kids[2] = {P(e, 1), P(e, 2)};
    struct route *fo = route_failover(e->cfg->routes, rs_kids, 2, -1);
    struct route *by_op[MSG_OP_COUNT] = {NULL};
    by_op[MSG_GET] = P(e, 3);
    struct route *ops = route_operation_selector(e->cfg->routes, by_op, P(e, 0));
    struct route *null = route_null(e->cfg->routes);
    struct route *kids[2] = {fo, null};
    const char *pre[2] = {"a:", "none:"};
    e->cfg->root = route_prefix_selector(e->cfg->routes, pre, kids, 2, ops);
    struct route *warm = route_warm_up(e->cfg->routes, P(e, 2), P(e, 1), 0, 0);
    ASSERT(e->cfg->root != NULL && warm != NULL);
    ASSERT_EQ(env_handle(e), CELLAR_OK);
    ASSERT_EQ(cellar_server_of(e->h, K("a:x")), 1);     /* prefix -> failover's first: p1 */
    ASSERT_EQ(cellar_server_of(e->h, K("zz")), 3);      /* wildcard -> a get's pick: p3 */
    ASSERT_EQ(cellar_server_of(e->h, K("none:x")), CELLAR_ENOTSUP);
    ASSERT_EQ(cellar_server_of(e->h, K("bad key")), CELLAR_EINVAL);
    ASSERT_EQ(route_server_of(warm, e->cfg, K("k")), 2);     /* cold first */
    /* and a get of each goes there */
    ASSERT_EQ(cellar_set(e->h, K("zz"), "v", 1, 0, 0), CELLAR_OK);  /* a set: the default, p0 */
    ASSERT(fake_is(e->f[0], "zz", "v"));
}

/* A multi-set: every key's status, pipelined over the pool's servers; a dead server fails only its keys. */
ETEST(mset_sets_every_key) {
    struct cellar_options opt = {.server_timeout_ms = 500};
    ASSERT_EQ(env_list(e, 3, &opt), CELLAR_OK);
    enum { N = 60 };
    char kb[N][24], vb[N][24];
    const char *keys[N];
    const void *vals[N];
    size_t nk[N], nv[N];
    int st[N];
    for (int i = 0; i < N; i++) {
        snprintf(kb[i], sizeof(kb[i]), "ms%d", i);
        snprintf(vb[i], sizeof(vb[i]), "value%d", i);
        keys[i] = kb[i], nk[i] = strlen(kb[i]);
        vals[i] = vb[i], nv[i] = strlen(vb[i]);
    }
    ASSERT_EQ(cellar_mset(e->h, keys, nk, vals, nv, N, 9, 0, st), CELLAR_OK);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(st[i], CELLAR_OK);
        int s = cellar_server_of(e->h, kb[i], nk[i]);
        ASSERT(s >= 0 && fake_is(e->f[s], kb[i], vb[i]));
    }
    ASSERT_EQ(cellar_mset(e->h, keys, nk, vals, nv, 0, 0, 0, st), CELLAR_OK);
    fake_stop(&e->f[1]);
    ASSERT_EQ(cellar_mset(e->h, keys, nk, vals, nv, N, 0, 0, st), CELLAR_OK);
    int failed = 0;
    for (int i = 0; i < N; i++) {
        bool on_dead = cellar_server_of(e->h, kb[i], nk[i]) == 1;
        ASSERT(on_dead ? st[i] < 0 : st[i] == CELLAR_OK);
        failed += on_dead;
    }
    ASSERT(failed > 0 && failed < N);
}

int main(void) { return RUN_TESTS(); }
