/*
 * service.h -- a look-aside service: rows of a PostgreSQL table read
 * through memcache, as the paper's web servers read theirs (section 2).
 *
 *   read id --cache hit--> the row as cached
 *      | miss (or, with leases, this reader won the lease)
 *      v
 *   SELECT from the database --> fill the cache (with the lease's token)
 *
 *   update id --> UPDATE ... version = version + 1 (one transaction)
 *                   |
 *                   +--> the application deletes the key after commit, or
 *                   +--> the table's trigger names the key in the commit
 *                        and cellar-squeal deletes it from every cluster
 *
 * The cached value is "<version>:<text>", so a reader can tell how old
 * what it got is.  One struct svc per thread: its own database connection
 * and its own libcellar handle (handles belong to one thread).  Every
 * call blocks until done.
 */
#ifndef LOOKASIDE_SERVICE_H
#define LOOKASIDE_SERVICE_H

#include <stdint.h>

#include <libpq-fe.h>

#include <cellar.h>

struct svc_options {
    int leases;                 /* read with cellar_lease_get / fill with the token */
    int app_invalidate;         /* update deletes the key itself once committed */
    int query_us;               /* extra cost of a read query, slept inside the
                                   database (pg_sleep): the paper's queries are
                                   expensive, a primary-key lookup here is not */
    int cache_ttl;              /* exptime of fills, seconds */
};

/* What a thread's service did: the load driver sums them. */
struct svc_counts {
    uint64_t reads, hits, misses;
    uint64_t db_reads;          /* SELECTs sent to the database */
    uint64_t db_writes;         /* UPDATEs committed */
    uint64_t cache_failures;    /* reads whose cache request failed (an error, not a miss):
                                   the paper's client-visible failures; read from the
                                   database instead, not filled */
    uint64_t failures_by[16];   /* of which, by -status (CELLAR_ETIMEDOUT: [3], ...) */
    uint64_t lease_waits;       /* lease-gets that gave up waiting for the winner */
    uint64_t fills, fills_refused;  /* sets after a miss; of which refused (a lease
                                   voided by a delete) */
    uint64_t invalidations, invalidation_errors;    /* deletes the application sent */
};

struct svc {
    PGconn *db;
    struct cellar *cache;
    struct svc_options opt;
    struct svc_counts n;
};

/* A row as read: its version, and where it came from. */
struct svc_row {
    int64_t version;
    int from_cache;             /* 1: a cache hit */
};

/* Connects to dsn and makes a handle over cfg.  Returns 0, or -1 with err filled. */
int svc_init(struct svc *s, const char *dsn, struct cellar_config *cfg,
             const struct svc_options *opt, char *err, size_t cap);
void svc_deinit(struct svc *s);

/* Reads row id.  Returns 0, or -1 when the database failed (err filled). */
int svc_read(struct svc *s, long id, struct svc_row *row, char *err, size_t cap);

/* An update as made: the version committed, and when the commit was known (CLOCK_MONOTONIC). */
struct svc_write {
    int64_t version;
    uint64_t committed_ns;
};

/* Updates row id (committed) and invalidates it as configured.  0 or -1. */
int svc_update(struct svc *s, long id, struct svc_write *w, char *err, size_t cap);

#endif
