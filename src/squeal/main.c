/*
 * cellar-squeal -- the paper's mcsqueal: deletes from PostgreSQL's commit
 * stream to every cluster.
 *
 *   writer txn: UPDATE ...; pg_logical_emit_message(true, 'squeal', 'user:1 user:2')
 *        | COMMIT (a rollback never reaches the stream)
 *        v
 *   walsender (slot, pgoutput, messages 'true') --CopyData--> this loop:
 *     B: a transaction starts   M: its keys (prefix matched, each checked)
 *     C: committed at end_lsn -> its keys join the batch
 *        |  once no more data is waiting (or the batch is full)
 *        v
 *   the batch's transactions visible to new snapshots? (pg_current_snapshot)
 *        |  yes (else ask again in a moment)
 *        v
 *   every cluster: cellar_mdelete(batch) -- pipelined, one write per server;
 *   a cluster that cannot take a delete: its spool (--async-dir) keeps it
 *   and replays it when the cluster is back, else the batch is retried
 *        |  every cluster answered (or spooled and fsync'd)
 *        v
 *   standby status update: flush = the batch's last end_lsn
 *
 * Delivery is at least once and in commit order: the slot's confirmed
 * position moves only past transactions every cluster has taken, so a
 * daemon killed at any point starts again from the first transaction not
 * confirmed, and may send some deletes twice.
 */
#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <getopt.h>

#include "cellar.h"
#include "squeal/pgout.h"

#define SQUEAL_VERSION "0.1.0"
#define BATCH_MAX 4096                  /* keys delivered at once at most */
#define STATUS_EVERY_MS 10000           /* a status update at least this often */
#define CLUSTERS_MAX 64

struct cluster {
    const char *name;
    struct cellar_config *cfg;
    struct cellar *h;
};

struct squeal {
    PGconn *conn;
    PGconn *sql;                        /* an ordinary connection: snapshots */
    const char *prefix;
    struct cluster clusters[CLUSTERS_MAX];
    int nclusters;
    struct cellar_spool *spool;
    int verbose;
    /* keys of committed transactions not yet delivered [0, ncommitted), then the
       open transaction's [ncommitted, nkeys) */
    char **keys;
    size_t *lens;
    size_t nkeys, cap, ncommitted;
    bool in_txn;                        /* between a B and its C */
    uint32_t xid;                       /* the open transaction's */
    uint32_t *xids;                     /* the batch's transactions that carried keys */
    size_t nxids, capxids;
    uint64_t visibility_waits;          /* batches held until their commits were visible */
    uint64_t visibility_timeouts;       /* batches delivered after VISIBLE_WAIT_MS anyway */
    uint64_t last_visible_warn_ms;
    uint32_t xmin;                      /* the last snapshot's: every xid before it ended */
    bool have_xmin;
    uint64_t xmin_ms;                   /* when it was read: used for 10 s at most, so
                                           that the ids compared stay within 2^31 */
    uint64_t batch_end;                 /* end_lsn of the last committed transaction read */
    uint64_t acked;                     /* the position confirmed to the server */
    uint64_t last_status_ms;
    uint64_t txns, delivered, bad_keys;
    size_t batch_max;                   /* --batch: deliver once this many keys are committed */
    /* --report: commit times of the transactions in the batch; every delivered one's latency */
    int64_t *txn_ts;
    size_t ntxn, captxn;
    uint32_t *lat_us;
    size_t nlat, caplat;
    uint64_t batches;
    bool on_lost_flush;                 /* --on-lost-slot flush (else exit) */
    bool markers;                       /* --markers: each key's remote marker goes too */
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig) {
    (void)sig;
    stopping = 1;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits ms, running the cluster's background work (probes, replays) meanwhile; false on a stop. */
static bool wait_running(struct cellar *h, int ms) {
    for (int waited = 0; waited < ms; waited += 10) {
        if (stopping)
            return false;
        cellar_poll(h, 0);          /* returns at once when nothing is due */
        sleep_ms(10);
    }
    return !stopping;
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void usage(FILE *f) {
    fprintf(f,
            "cellar-squeal " SQUEAL_VERSION " -- deletes from PostgreSQL's commit stream to every "
            "cluster\n"
            "  --dsn CONNINFO        the database (libpq conninfo: \"host=/run/pg dbname=app\")\n"
            "  --cluster NAME=CONFIG a cluster: a libcellar configuration file (mcrouter JSON or\n"
            "                        a server list) or a server list; once per cluster\n"
            "  --slot NAME           the logical replication slot (default cellar_squeal; made\n"
            "                        when missing)\n"
            "  --publication NAME    pgoutput's publication (default cellar_squeal; an empty one\n"
            "                        is made when missing)\n"
            "  --prefix STR          the messages' prefix (default squeal)\n"
            "  --async-dir DIR       keep the deletes a cluster cannot take in DIR and replay\n"
            "                        them when it is back (default: hold the stream and retry)\n"
            "  --batch N             deliver once N keys are committed and waiting (default\n"
            "                        4096; and whenever nothing more is waiting)\n"
            "  --report FILE         at exit, write delivery figures as JSON there: latency\n"
            "                        from commit to every cluster's answer, deletes per write\n"
            "  --on-lost-slot flush|exit  a slot PostgreSQL invalidated (max_slot_wal_keep_size):\n"
            "                        make it again and flush_all every cluster (default), or\n"
            "                        refuse to start\n"
            "  --markers             delete each key's remote marker (\"r:<key>\", libcellar's\n"
            "                        cellar_remote_mark) with it\n"
            "  -v, --verbose         a line per transaction delivered\n"
            "  -V, --version, -h, --help\n");
}

/* An identifier PostgreSQL takes unquoted in the replication commands. */
static bool ident_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

/* ---------------------------------------------------------------------- */
/* Keys                                                                     */
/* ---------------------------------------------------------------------- */

static bool add_key(struct squeal *s, const char *k, size_t n) {
    if (s->nkeys == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        char **keys = realloc(s->keys, cap * sizeof(*keys));
        if (keys == NULL)
            return false;
        s->keys = keys;
        size_t *lens = realloc(s->lens, cap * sizeof(*lens));
        if (lens == NULL)
            return false;
        s->lens = lens;
        s->cap = cap;
    }
    char *copy = malloc(n ? n : 1);
    if (copy == NULL)
        return false;
    memcpy(copy, k, n);
    s->keys[s->nkeys] = copy;
    s->lens[s->nkeys++] = n;
    return true;
}

/* The key's remote marker (--markers), when the key leaves room for one. */
static bool add_marker(struct squeal *s, const char *k, size_t n) {
    char mk[256];
    size_t np = sizeof(CELLAR_REMOTE_MARKER) - 1;
    if (n + np > CELLAR_KEY_MAX)
        return true;
    memcpy(mk, CELLAR_REMOTE_MARKER, np);
    memcpy(mk + np, k, n);
    return add_key(s, mk, n + np);
}

/* Drops keys [0, n): delivered. */
static void drop_keys(struct squeal *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(s->keys[i]);
    memmove(s->keys, s->keys + n, (s->nkeys - n) * sizeof(*s->keys));
    memmove(s->lens, s->lens + n, (s->nkeys - n) * sizeof(*s->lens));
    s->nkeys -= n;
    s->ncommitted -= n;
}

static void log_bad_key(const struct pgo_msg *m, const char *k, size_t pos) {
    char lsn[20], shown[64];
    size_t j = 0;
    for (const char *p = k; p < m->content + pos && j < sizeof(shown) - 5; p++) {
        unsigned char c = (unsigned char)*p;
        j += (size_t)snprintf(shown + j, sizeof(shown) - j, c < 0x20 || c >= 0x7f ? "\\x%02x" : "%c",
                              c);
    }
    pg_lsn_str(m->lsn, lsn);
    fprintf(stderr, "cellar-squeal: skipping a bad key (over 250 bytes or a control byte) in the "
                    "message at %s: \"%s%s\"\n",
            lsn, shown, k + 60 < m->content + pos ? "..." : "");
}

/* ---------------------------------------------------------------------- */
/* The server                                                               */
/* ---------------------------------------------------------------------- */

static int send_status(struct squeal *s, bool reply) {
    char msg[34];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    int64_t unix_us = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
    size_t n = pg_status_update(msg, s->acked, s->acked, s->acked, pg_time_from_unix_us(unix_us),
                                reply);
    s->last_status_ms = now_ms();
    if (PQputCopyData(s->conn, msg, (int)n) != 1 || PQflush(s->conn) != 0) {
        fprintf(stderr, "cellar-squeal: sending a status update: %s", PQerrorMessage(s->conn));
        return -1;
    }
    return 0;
}

static int exec_ok(PGconn *c, const char *sql, ExecStatusType want, const char *ok_state) {
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    int rc = st == want || (ok_state && state && strcmp(state, ok_state) == 0) ? 0 : -1;
    if (rc < 0)
        fprintf(stderr, "cellar-squeal: %s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    return rc;
}

/* Makes the publication when missing (over an ordinary connection). */
static int ensure_publication(const char *dsn, const char *pub) {
    PGconn *c = PQconnectdb(dsn);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "cellar-squeal: connecting to %s: %s", dsn, PQerrorMessage(c));
        PQfinish(c);
        return -1;
    }
    char sql[160];
    snprintf(sql, sizeof(sql), "CREATE PUBLICATION %s", pub);
    int rc = exec_ok(c, sql, PGRES_COMMAND_OK, "42710");    /* duplicate_object: it exists */
    PQfinish(c);
    return rc;
}

/*
 * The slot was invalidated (max_slot_wal_keep_size): the changes since its
 * position are gone, so every cluster may hold values it will never hear
 * about.  A new slot is made first, then every cluster flushed, so any
 * commit from here on is delivered.  false when a flush did not get
 * through before a stop.
 */
static bool recover_lost_slot(struct squeal *s, PGconn *c, const char *slot) {
    fprintf(stderr, "cellar-squeal: SLOT %s WAS INVALIDATED (max_slot_wal_keep_size): the "
                    "invalidations since its last position are lost; making it again and "
                    "flushing every cluster (--on-lost-slot flush)\n", slot);
    char sql[256];
    snprintf(sql, sizeof(sql), "DROP_REPLICATION_SLOT %s", slot);
    if (exec_ok(c, sql, PGRES_COMMAND_OK, NULL) < 0)
        return false;
    snprintf(sql, sizeof(sql), "CREATE_REPLICATION_SLOT %s LOGICAL pgoutput (SNAPSHOT 'nothing')",
             slot);
    if (exec_ok(c, sql, PGRES_TUPLES_OK, NULL) < 0)
        return false;
    for (int i = 0; i < s->nclusters; i++) {
        int rc;
        while ((rc = cellar_flush_all(s->clusters[i].h, 0)) != CELLAR_OK) {
            fprintf(stderr, "cellar-squeal: flushing cluster %s: %s; retrying\n",
                    s->clusters[i].name, cellar_strerror(rc));
            if (!wait_running(s->clusters[i].h, 1000))
                return false;
        }
        fprintf(stderr, "cellar-squeal: flushed cluster %s\n", s->clusters[i].name);
    }
    return true;
}

static PGconn *start_stream(struct squeal *s, const char *dsn, const char *slot,
                            const char *pub) {
    /* the DSN as given (key=value or a postgresql:// URI), replication added */
    const char *const keys[] = {"dbname", "replication", "application_name", NULL};
    const char *const values[] = {dsn, "database", "cellar_squeal", NULL};
    PGconn *c = PQconnectdbParams(keys, values, 1);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "cellar-squeal: connecting for replication: %s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    char sql[256];
    snprintf(sql, sizeof(sql), "CREATE_REPLICATION_SLOT %s LOGICAL pgoutput (SNAPSHOT 'nothing')",
             slot);
    if (exec_ok(c, sql, PGRES_TUPLES_OK, "42710") < 0) {
        PQfinish(c);
        return NULL;
    }
    for (int attempt = 0;; attempt++) {
        snprintf(sql, sizeof(sql),
                 "START_REPLICATION SLOT %s LOGICAL 0/0 (proto_version '1', "
                 "publication_names '%s', messages 'true')",
                 slot, pub);
        PGresult *r = PQexec(c, sql);
        if (PQresultStatus(r) == PGRES_COPY_BOTH) {
            PQclear(r);
            return c;
        }
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        const char *msg = PQresultErrorMessage(r);
        bool lost = state && strcmp(state, "55000") == 0 && strstr(msg, "invalidated") != NULL;
        if (lost && attempt == 0 && s->on_lost_flush) {
            PQclear(r);
            if (recover_lost_slot(s, c, slot))
                continue;
            PQfinish(c);
            return NULL;
        }
        if (state && strcmp(state, "55006") == 0)   /* object_in_use */
            fprintf(stderr, "cellar-squeal: slot %s is already followed by another process "
                            "(one daemon per slot): %s", slot, msg);
        else if (lost)
            fprintf(stderr, "cellar-squeal: slot %s was invalidated (max_slot_wal_keep_size) "
                            "and --on-lost-slot is exit: drop it to start again: %s", slot, msg);
        else
            fprintf(stderr, "cellar-squeal: %s: %s", sql, msg);
        PQclear(r);
        PQfinish(c);
        return NULL;
    }
}

/* ---------------------------------------------------------------------- */
/* Delivery                                                                 */
/* ---------------------------------------------------------------------- */

/* A status that says the cluster did not take the delete (another try may). */
static bool not_taken(int status) {
    return status == CELLAR_ETIMEDOUT || status == CELLAR_ECONNECT || status == CELLAR_ECLOSED ||
           status == CELLAR_EDOWN || status == CELLAR_EPROTO || status == CELLAR_ESERVER ||
           status == CELLAR_ENOMEM;
}

/*
 * Sends keys [0, n) to cluster c until each is taken (deleted, not found,
 * or spooled); keeps the server's connection alive while it waits.
 * false when told to stop first.
 */
static bool deliver_to(struct squeal *s, struct cluster *c, size_t n) {
    const char **keys = malloc(n * sizeof(*keys));
    size_t *lens = malloc(n * sizeof(*lens));
    int *st = malloc(n * sizeof(*st));
    bool done = false;
    if (keys == NULL || lens == NULL || st == NULL)
        goto out;
    for (size_t i = 0; i < n; i++) {
        keys[i] = s->keys[i];
        lens[i] = s->lens[i];
    }
    int backoff = 50;
    for (size_t left = n; left > 0;) {
        if (cellar_mdelete(c->h, keys, lens, left, st) != CELLAR_OK) {
            st[0] = CELLAR_ENOMEM;
            for (size_t i = 1; i < left; i++)
                st[i] = CELLAR_ENOMEM;
        }
        size_t keep = 0;
        int why = CELLAR_OK;
        for (size_t i = 0; i < left; i++) {
            if (not_taken(st[i])) {
                why = st[i];
                keys[keep] = keys[i];
                lens[keep++] = lens[i];
            }
        }
        if (keep == 0)
            break;
        if (keep == left || backoff == 50)
            fprintf(stderr, "cellar-squeal: cluster %s did not take %zu deletes (%s); retrying\n",
                    c->name, keep, cellar_strerror(why));
        left = keep;
        if (!wait_running(c->h, backoff))
            goto out;
        if (backoff < 1000)
            backoff *= 2;
        if (now_ms() - s->last_status_ms >= STATUS_EVERY_MS && send_status(s, false) < 0)
            goto out;
    }
    done = true;
out:
    free(keys);
    free(lens);
    free(st);
    return done;
}

static int64_t now_pg_us(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return pg_time_from_unix_us((int64_t)tv.tv_sec * 1000000 + tv.tv_usec);
}

/* The batch's transactions are delivered: their latencies from commit (--report). */
static void record_latencies(struct squeal *s) {
    int64_t now = now_pg_us();
    for (size_t i = 0; i < s->ntxn; i++) {
        if (s->nlat == s->caplat) {
            size_t cap = s->caplat ? s->caplat * 2 : 4096;
            uint32_t *l = cap <= (size_t)1 << 26 ? realloc(s->lat_us, cap * sizeof(*l)) : NULL;
            if (l == NULL)
                break;
            s->lat_us = l;
            s->caplat = cap;
        }
        int64_t d = now - s->txn_ts[i];
        s->lat_us[s->nlat++] = d < 0 ? 0 : d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
    }
    s->ntxn = 0;
}

/*
 * The commit stream runs ahead of visibility: a backend writes its commit
 * record (which the walsender decodes and sends at once) before it takes
 * its transaction out of the running set, and a busy machine can hold it
 * between the two for milliseconds.  A delete delivered then lets a reader
 * miss, read the old row from a new snapshot and fill the cache with it,
 * under a lease nothing voids any more: a stale value until the key's next
 * invalidation (bench/lookaside saw it).  So a batch waits until none of
 * its transactions runs in a fresh snapshot.
 *
 * The wait is bounded (VISIBLE_WAIT_MS): a backend that waits for a
 * synchronous standby leaves the running set only once the standby
 * confirms, and if this daemon's walsender is that standby
 * (synchronous_standby_names = '*' picks it; it connects as
 * application_name cellar_squeal so a list can leave it out), waiting on
 * would deadlock.  It then delivers anyway and says so, at most once a
 * minute.  false on a stop.
 */
#define VISIBLE_WAIT_MS 500
static bool wait_visible(struct squeal *s) {
    bool waited = false;
    size_t done = 0;
    uint64_t start = now_ms();
    /* catching up on older WAL, a whole batch may precede the last snapshot seen */
    bool recent = s->have_xmin && now_ms() - s->xmin_ms < 10000;
    while (recent && done < s->nxids && (int32_t)(s->xids[done] - s->xmin) < 0)
        done++;
    const char *why = NULL;
    while (done < s->nxids) {
        if (stopping)
            return false;
        if (now_ms() - start >= VISIBLE_WAIT_MS) {
            why = "still not visible after 500 ms:";
            break;
        }
        PGresult *r = PQexec(s->sql, "SELECT pg_current_snapshot()");
        if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
            PQclear(r);
            if (PQstatus(s->sql) == CONNECTION_BAD)
                PQreset(s->sql);
            why = "cannot read a snapshot for";
            break;
        }
        const char *snap = PQgetvalue(r, 0, 0);
        s->have_xmin = pg_snapshot_xmin(snap, &s->xmin) == 0;
        s->xmin_ms = now_ms();
        int running = 0;
        while (done < s->nxids && (running = pg_snapshot_running(snap, s->xids[done])) == 0)
            done++;
        PQclear(r);
        if (running < 0) {
            why = "cannot read a snapshot for";
            break;
        }
        if (done < s->nxids) {
            waited = true;
            struct timespec ts = {0, 200 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (why != NULL) {
        s->visibility_timeouts++;
        if (s->last_visible_warn_ms == 0 || now_ms() - s->last_visible_warn_ms >= 60000) {
            s->last_visible_warn_ms = now_ms();
            fprintf(stderr, "cellar-squeal: %s transaction %u; delivering without waiting "
                            "(is this slot's walsender a synchronous standby? leave "
                            "application_name cellar_squeal out of synchronous_standby_names)%s%s",
                    why, s->xids[done], PQstatus(s->sql) == CONNECTION_OK ? "" : ": ",
                    PQstatus(s->sql) == CONNECTION_OK ? "\n" : PQerrorMessage(s->sql));
        }
    }
    s->visibility_waits += waited;
    s->nxids = 0;
    return true;
}

/* Delivers the committed keys to every cluster and confirms their position; -1 to stop. */
static int deliver(struct squeal *s) {
    size_t n = s->ncommitted;
    if (n > 0) {
        if (!wait_visible(s))
            return -1;
        for (int i = 0; i < s->nclusters; i++)
            if (!deliver_to(s, &s->clusters[i], n))
                return -1;
        if (s->spool && cellar_spool_sync(s->spool) != 0) {
            fprintf(stderr, "cellar-squeal: could not fsync the spool; not confirming\n");
            return -1;
        }
        s->delivered += n;
        s->batches++;
        drop_keys(s, n);
    }
    if (s->txn_ts)
        record_latencies(s);
    if (s->batch_end > s->acked) {
        s->acked = s->batch_end;
        if (s->verbose) {
            char lsn[20];
            pg_lsn_str(s->acked, lsn);
            fprintf(stderr, "cellar-squeal: confirmed %s (%zu keys)\n", lsn, n);
        }
        return send_status(s, false);
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* The stream                                                               */
/* ---------------------------------------------------------------------- */

static int on_xlog(struct squeal *s, const struct pg_copy *cp) {
    struct pgo_msg m;
    if (pgo_parse(cp->payload, cp->npayload, &m) < 0) {
        fprintf(stderr, "cellar-squeal: a malformed pgoutput message ('%c', %zu bytes)\n",
                cp->npayload ? cp->payload[0] : '?', cp->npayload);
        return -1;
    }
    switch (m.kind) {
    case 'B':
        s->in_txn = true;               /* keys from here to C are the transaction's */
        s->xid = m.xid;
        break;
    case 'M': {
        if (strcmp(m.prefix, s->prefix) != 0)
            break;
        if (!m.transactional) {
            fprintf(stderr, "cellar-squeal: ignoring a non-transactional message (a rollback "
                            "would not have stopped it): use pg_logical_emit_message(true, ...)\n");
            break;
        }
        size_t pos = 0, nk;
        const char *k;
        bool bad;
        while (pgo_next_key(m.content, m.ncontent, &pos, &k, &nk, &bad)) {
            if (bad) {
                s->bad_keys++;
                log_bad_key(&m, k, pos);
            } else if (!add_key(s, k, nk) || (s->markers && !add_marker(s, k, nk))) {
                fprintf(stderr, "cellar-squeal: out of memory\n");
                return -1;
            }
        }
        break;
    }
    case 'C':
        if (s->verbose) {
            char lsn[20];
            pg_lsn_str(m.end_lsn, lsn);
            fprintf(stderr, "cellar-squeal: commit %s:", lsn);
            for (size_t i = s->ncommitted; i < s->nkeys; i++)
                fprintf(stderr, " %.*s", (int)s->lens[i], s->keys[i]);
            fprintf(stderr, "\n");
        }
        if (s->nkeys > s->ncommitted) {
            if (s->nxids == s->capxids) {
                size_t cap = s->capxids ? s->capxids * 2 : 64;
                uint32_t *x = realloc(s->xids, cap * sizeof(*x));
                if (x == NULL)
                    return -1;
                s->xids = x;
                s->capxids = cap;
            }
            s->xids[s->nxids++] = s->xid;
        }
        s->ncommitted = s->nkeys;
        s->batch_end = m.end_lsn;
        s->in_txn = false;
        s->txns++;
        if (s->txn_ts) {
            if (s->ntxn == s->captxn) {
                int64_t *t = realloc(s->txn_ts, s->captxn * 2 * sizeof(*t));
                if (t == NULL)
                    return -1;
                s->txn_ts = t;
                s->captxn *= 2;
            }
            s->txn_ts[s->ntxn++] = m.ts;
        }
        break;
    default:
        break;                          /* table changes: not published, not read */
    }
    return 0;
}

/* Reads what the server has sent; 1 when the batch should go now, 0, -1 on an error. */
static int read_stream(struct squeal *s) {
    for (;;) {
        char *buf = NULL;
        int n = PQgetCopyData(s->conn, &buf, 1);
        if (n == 0)
            return 0;
        if (n < 0) {
            fprintf(stderr, "cellar-squeal: the replication stream ended: %s",
                    PQerrorMessage(s->conn));
            return -1;
        }
        struct pg_copy cp;
        int rc = pg_copy_parse(buf, (size_t)n, &cp);
        if (rc == 0 && cp.kind == 'w')
            rc = on_xlog(s, &cp);
        else if (rc == 0 && cp.kind == 'k') {
            /* between transactions with nothing undelivered, the server's end may be
               confirmed, so that an idle slot does not hold WAL */
            bool idle = !s->in_txn && s->nkeys == 0 && s->batch_end <= s->acked;
            if (idle && cp.wal_end > s->acked) {
                s->acked = s->batch_end = cp.wal_end;
                rc = send_status(s, false);
            } else if (cp.reply_requested) {
                rc = send_status(s, false);
            }
        }
        PQfreemem(buf);
        if (rc < 0)
            return -1;
        if (s->ncommitted >= s->batch_max || (s->ncommitted > 0 && s->ntxn >= s->batch_max))
            return 1;
    }
}

static int run(struct squeal *s) {
    while (!stopping) {
        int rc = read_stream(s);
        if (rc < 0)
            return -1;
        if (s->ncommitted > 0 || s->batch_end > s->acked) {
            if (deliver(s) < 0)
                return stopping ? 0 : -1;
            if (rc == 1)
                continue;
        }
        if (now_ms() - s->last_status_ms >= STATUS_EVERY_MS && send_status(s, false) < 0)
            return -1;
        /* the handles' background work: probes of down servers, spool replays */
        int wait_ms = 1000;
        for (int i = 0; i < s->nclusters; i++)
            cellar_poll(s->clusters[i].h, 0);
        if (s->spool) {
            struct cellar_spool_stats st;
            cellar_spool_stats(s->spool, NULL, &st);
            if (st.depth > 0)
                wait_ms = 20;
        }
        struct pollfd p = {.fd = PQsocket(s->conn), .events = POLLIN};
        if (poll(&p, 1, wait_ms) < 0 && errno != EINTR)
            return -1;
        if (PQconsumeInput(s->conn) != 1) {
            fprintf(stderr, "cellar-squeal: reading from the server: %s", PQerrorMessage(s->conn));
            return -1;
        }
    }
    return 0;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* --report: the delivery figures as one JSON object. */
static void write_report(struct squeal *s, const char *path) {
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "cellar-squeal: --report %s: %s\n", path, strerror(errno));
        return;
    }
    uint64_t within[3] = {0, 0, 0};
    for (size_t i = 0; i < s->nlat; i++) {
        within[0] += s->lat_us[i] <= 1000;
        within[1] += s->lat_us[i] <= 10000;
        within[2] += s->lat_us[i] <= 1000000;
    }
    if (s->nlat)
        qsort(s->lat_us, s->nlat, sizeof(*s->lat_us), cmp_u32);
    uint64_t requests = 0, writes = 0;
    for (int i = 0; i < s->nclusters; i++) {
        struct cellar_stats st;
        cellar_stats(s->clusters[i].h, &st);
        requests += st.requests;
        writes += st.writes;
    }
    double n = s->nlat ? (double)s->nlat : 1;
#define PCT(p) (s->nlat ? s->lat_us[(size_t)((double)(s->nlat - 1) * (p))] : 0)
    fprintf(f, "{\"transactions\": %llu, \"keys\": %llu, \"batches\": %llu, "
               "\"bad_keys\": %llu, \"clusters\": %d, \"requests\": %llu, \"writes\": %llu, "
               "\"deletes_per_write\": %.2f, \"visibility_waits\": %llu, "
               "\"visibility_timeouts\": %llu, \"measured\": %zu, "
               "\"within_1ms\": %.4f, "
               "\"within_10ms\": %.4f, \"within_1s\": %.4f, \"p50_us\": %u, \"p99_us\": %u, "
               "\"max_us\": %u}\n",
            (unsigned long long)s->txns, (unsigned long long)s->delivered,
            (unsigned long long)s->batches, (unsigned long long)s->bad_keys, s->nclusters,
            (unsigned long long)requests, (unsigned long long)writes,
            writes ? (double)requests / (double)writes : 0.0,
            (unsigned long long)s->visibility_waits,
            (unsigned long long)s->visibility_timeouts, s->nlat, (double)within[0] / n,
            (double)within[1] / n, (double)within[2] / n, PCT(0.5), PCT(0.99),
            s->nlat ? s->lat_us[s->nlat - 1] : 0);
#undef PCT
    fclose(f);
}

/* NAME=CONFIG: a file libcellar loads, else a server list. */
static int add_cluster(struct squeal *s, const char *arg) {
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg || eq[1] == '\0' || s->nclusters == CLUSTERS_MAX) {
        fprintf(stderr, "cellar-squeal: --cluster wants NAME=CONFIG, not \"%s\"\n", arg);
        return -1;
    }
    struct cluster *c = &s->clusters[s->nclusters];
    char *name = strndup(arg, (size_t)(eq - arg));
    const char *conf = eq + 1;
    char err[512] = "";
    struct stat st;
    /* deletes' answers are a few bytes: no incast to guard against, so a batch
       may be in flight whole */
    const struct cellar_options opt = {.window_init = 4096, .window_min = 4096,
                                       .window_max = 4096, .window_bytes = -1};
    int rc = stat(conf, &st) == 0 ? cellar_config_load(&c->cfg, conf, &opt, err, sizeof(err))
                                   : cellar_config_parse(&c->cfg, conf, &opt, err, sizeof(err));
    if (name == NULL || rc != CELLAR_OK || cellar_create(&c->h, c->cfg) != CELLAR_OK) {
        fprintf(stderr, "cellar-squeal: cluster %s: %s\n", name ? name : arg,
                err[0] ? err : "out of memory");
        free(name);
        cellar_config_release(&c->cfg);
        return -1;
    }
    c->name = name;
    s->nclusters++;
    return 0;
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"dsn", required_argument, NULL, 'd'},
        {"cluster", required_argument, NULL, 'c'},
        {"slot", required_argument, NULL, 's'},
        {"publication", required_argument, NULL, 'P'},
        {"prefix", required_argument, NULL, 'x'},
        {"async-dir", required_argument, NULL, 'A'},
        {"batch", required_argument, NULL, 'b'},
        {"report", required_argument, NULL, 'r'},
        {"on-lost-slot", required_argument, NULL, 'L'},
        {"markers", no_argument, NULL, 'm'},
        {"verbose", no_argument, NULL, 'v'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static struct squeal s = {.prefix = "squeal", .batch_max = BATCH_MAX, .on_lost_flush = true};
    const char *dsn = NULL, *slot = "cellar_squeal", *pub = "cellar_squeal", *async_dir = NULL,
               *report = NULL;
    int ch, status = 1;
    while ((ch = getopt_long(argc, argv, "vVh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'd': dsn = optarg; break;
        case 'c':
            if (add_cluster(&s, optarg) < 0)
                goto out;
            break;
        case 's': slot = optarg; break;
        case 'P': pub = optarg; break;
        case 'x': s.prefix = optarg; break;
        case 'A': async_dir = optarg; break;
        case 'b': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || v < 1 || v > BATCH_MAX) {
                fprintf(stderr, "cellar-squeal: --batch takes 1 to %d\n", BATCH_MAX);
                status = 64;
                goto out;
            }
            s.batch_max = (size_t)v;
            break;
        }
        case 'r': report = optarg; break;
        case 'm': s.markers = true; break;
        case 'L':
            if (strcmp(optarg, "flush") != 0 && strcmp(optarg, "exit") != 0) {
                fprintf(stderr, "cellar-squeal: --on-lost-slot takes flush or exit\n");
                status = 64;
                goto out;
            }
            s.on_lost_flush = strcmp(optarg, "flush") == 0;
            break;
        case 'v': s.verbose++; break;
        case 'V': printf("cellar-squeal " SQUEAL_VERSION "\n"); status = 0; goto out;
        case 'h': usage(stdout); status = 0; goto out;
        default: usage(stderr); status = 64; goto out;
        }
    }
    if (dsn == NULL || s.nclusters == 0 || optind < argc) {
        fprintf(stderr, "cellar-squeal: %s\n", dsn == NULL ? "--dsn is required"
                                               : optind < argc ? "unexpected arguments"
                                                               : "give at least one --cluster");
        usage(stderr);
        status = 64;
        goto out;
    }
    if (!ident_ok(slot) || !ident_ok(pub)) {
        fprintf(stderr, "cellar-squeal: --slot and --publication take 1-63 of a-z, 0-9, _\n");
        status = 64;
        goto out;
    }
    if (async_dir != NULL) {
        if (cellar_spool_open(&s.spool, async_dir, 0) != CELLAR_OK) {
            fprintf(stderr, "cellar-squeal: --async-dir %s: not a directory it can write\n",
                    async_dir);
            goto out;
        }
        for (int i = 0; i < s.nclusters; i++)
            cellar_use_spool(s.clusters[i].h, s.spool);
    }
    struct sigaction sa = {.sa_handler = on_signal};     /* no SA_RESTART: poll returns */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (ensure_publication(dsn, pub) < 0)
        goto out;
    s.sql = PQconnectdb(dsn);
    if (PQstatus(s.sql) != CONNECTION_OK) {
        fprintf(stderr, "cellar-squeal: connecting to %s: %s", dsn, PQerrorMessage(s.sql));
        goto out;
    }
    s.conn = start_stream(&s, dsn, slot, pub);
    if (s.conn == NULL)
        goto out;
    fprintf(stderr, "cellar-squeal: following slot %s (publication %s, prefix \"%s\") to %d "
                    "cluster%s\n",
            slot, pub, s.prefix, s.nclusters, s.nclusters == 1 ? "" : "s");
    if (report != NULL) {
        s.captxn = 1024;
        s.txn_ts = malloc(s.captxn * sizeof(*s.txn_ts));
        if (s.txn_ts == NULL)
            goto out;
    }
    s.last_status_ms = now_ms();
    status = run(&s) == 0 ? 0 : 1;
    if (report != NULL)
        write_report(&s, report);
    fprintf(stderr, "cellar-squeal: %s after %llu transactions, %llu keys delivered, %llu bad "
                    "keys skipped\n",
            status == 0 ? "stopped" : "stopping on an error", (unsigned long long)s.txns,
            (unsigned long long)s.delivered, (unsigned long long)s.bad_keys);
out:
    if (s.conn)
        PQfinish(s.conn);
    if (s.sql)
        PQfinish(s.sql);
    for (int i = 0; i < s.nclusters; i++) {
        cellar_destroy(&s.clusters[i].h);
        cellar_config_release(&s.clusters[i].cfg);
        free((char *)s.clusters[i].name);
    }
    cellar_spool_close(&s.spool);
    for (size_t i = 0; i < s.nkeys; i++)
        free(s.keys[i]);
    free(s.keys);
    free(s.lens);
    free(s.txn_ts);
    free(s.lat_us);
    free(s.xids);
    return status;
}
