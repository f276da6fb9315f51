/*
 * service.c -- the look-aside read and the invalidating update
 * (service.h says what the service is).
 *
 * The table:  lookaside(id bigint primary key, version bigint, value text)
 * The key:    "row:<id>", its value "<version>:<value>".
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service.h"

#define LEASE_TTL 3             /* seconds a lease winner has to fill the key */
#define VALUE_MAX 512

static int fail(char *err, size_t cap, const char *what, PGconn *db) {
    snprintf(err, cap, "%s: %s", what, db ? PQerrorMessage(db) : "out of memory");
    return -1;
}

int svc_init(struct svc *s, const char *dsn, struct cellar_config *cfg,
             const struct svc_options *opt, char *err, size_t cap) {
    memset(s, 0, sizeof(*s));
    s->opt = *opt;
    s->db = PQconnectdb(dsn);
    if (PQstatus(s->db) != CONNECTION_OK)
        return fail(err, cap, "connect", s->db);
    /* The read query holds its cost inside the database, as a real one would. */
    const char *rd = opt->query_us > 0
        ? "SELECT version, value FROM lookaside, pg_sleep($2::float8 / 1e6) WHERE id = $1"
        : "SELECT version, value FROM lookaside WHERE id = $1";
    PGresult *r = PQprepare(s->db, "rd", rd, 0, NULL);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok)
        return fail(err, cap, "prepare read", s->db);
    r = PQprepare(s->db, "up", "UPDATE lookaside SET version = version + 1, value = $2 "
                               "WHERE id = $1 RETURNING version", 0, NULL);
    ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok)
        return fail(err, cap, "prepare update", s->db);
    if (cellar_create(&s->cache, cfg) != CELLAR_OK)
        return fail(err, cap, "cellar_create", NULL);
    return 0;
}

void svc_deinit(struct svc *s) {
    cellar_destroy(&s->cache);
    if (s->db != NULL)
        PQfinish(s->db);
    s->db = NULL;
}

static int key_of(long id, char *key, size_t cap) {
    return snprintf(key, cap, "row:%ld", id);
}

/* SELECTs row id: its version and "<version>:<value>" into cached. */
static int db_read(struct svc *s, long id, int64_t *version, char *cached, size_t cap,
                   char *err, size_t errcap) {
    char ids[24], us[16];
    snprintf(ids, sizeof(ids), "%ld", id);
    snprintf(us, sizeof(us), "%d", s->opt.query_us);
    const char *params[2] = {ids, us};
    s->n.db_reads++;
    PGresult *r = PQexecPrepared(s->db, "rd", s->opt.query_us > 0 ? 2 : 1, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        snprintf(err, errcap, "read row %ld: %s", id,
                 PQresultStatus(r) == PGRES_TUPLES_OK ? "no such row\n" : PQerrorMessage(s->db));
        PQclear(r);
        return -1;
    }
    *version = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(cached, cap, "%" PRId64 ":%s", *version, PQgetvalue(r, 0, 1));
    PQclear(r);
    return 0;
}

/* A cached value's version: what precedes its ':'; -1 when it has none. */
static int64_t version_of(const struct cellar_item *it) {
    char *end;
    long long v = strtoll(it->value, &end, 10);
    return (end == it->value || *end != ':') ? -1 : v;
}

/*
 * With leases: a hit (or a value marked stale while someone refills it)
 * is served; the winner of a miss reads the database and fills with its
 * token, which a delete since the lease was handed out has voided (the
 * fill is refused: no stale set); a reader that waited lease_wait_ms for
 * another's fill in vain reads the database without filling.  Without
 * leases: get, and on a miss read the database and set, which can put
 * back a value older than a delete that came in between.
 */
int svc_read(struct svc *s, long id, struct svc_row *row, char *err, size_t cap) {
    char key[32], cached[VALUE_MAX];
    int nkey = key_of(id, key, sizeof(key));
    struct cellar_item it = {0};
    struct cellar_lease lease = {0};
    s->n.reads++;
    int rc = s->opt.leases ? cellar_lease_get(s->cache, key, nkey, LEASE_TTL, &it, &lease)
                           : cellar_get(s->cache, key, nkey, &it);
    bool hit = rc == CELLAR_OK &&
               (!s->opt.leases || lease.state == CELLAR_LEASE_HIT ||
                lease.state == CELLAR_LEASE_STALE);
    if (hit) {
        row->version = version_of(&it);
        row->from_cache = 1;
        cellar_item_clear(&it);
        s->n.hits++;
        if (row->version < 0) {
            snprintf(err, cap, "%s: cached value without a version", key);
            return -1;
        }
        return 0;
    }
    cellar_item_clear(&it);
    bool miss = s->opt.leases ? rc == CELLAR_OK && lease.state == CELLAR_LEASE_WIN
                              : rc == CELLAR_NOT_FOUND || rc == CELLAR_DROPPED;
    if (rc < 0) {
        s->n.cache_failures++;
        s->n.failures_by[-rc < 16 ? -rc : 0]++;
    }
    else if (s->opt.leases && lease.state == CELLAR_LEASE_WAIT)
        s->n.lease_waits++;
    if (miss)
        s->n.misses++;
    row->from_cache = 0;
    if (db_read(s, id, &row->version, cached, sizeof(cached), err, cap) < 0)
        return -1;
    if (miss && rc != CELLAR_DROPPED) {
        size_t n = strlen(cached);
        int st = s->opt.leases
            ? cellar_lease_set(s->cache, key, nkey, cached, n, 0, s->opt.cache_ttl, lease.token)
            : cellar_set(s->cache, key, nkey, cached, n, 0, s->opt.cache_ttl);
        s->n.fills++;
        s->n.fills_refused += st != CELLAR_OK;
    }
    return 0;
}

/*
 * One statement, so one transaction: committed when it returns.  The
 * application's own invalidation follows the commit (a delete before it
 * could be refilled from the old row); with cellar-squeal the table's
 * trigger has named the key inside the transaction instead.
 */
int svc_update(struct svc *s, long id, struct svc_write *w, char *err, size_t cap) {
    char ids[24], value[128];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(ids, sizeof(ids), "%ld", id);
    snprintf(value, sizeof(value), "row %ld written at %lld.%09ld", id, (long long)ts.tv_sec,
             ts.tv_nsec);
    const char *params[2] = {ids, value};
    PGresult *r = PQexecPrepared(s->db, "up", 2, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        snprintf(err, cap, "update row %ld: %s", id,
                 PQresultStatus(r) == PGRES_TUPLES_OK ? "no such row\n" : PQerrorMessage(s->db));
        PQclear(r);
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    w->committed_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    w->version = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    s->n.db_writes++;
    if (s->opt.app_invalidate) {
        char key[32];
        int st = cellar_delete(s->cache, key, key_of(id, key, sizeof(key)));
        s->n.invalidations++;
        s->n.invalidation_errors += st != CELLAR_OK && st != CELLAR_NOT_FOUND;
    }
    return 0;
}
