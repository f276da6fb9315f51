/*
 * cellar-squeal -- the paper's mcsqueal: deletes from PostgreSQL's commit
 * stream to every cluster.
 *
 *   writer txn: UPDATE ...; pg_logical_emit_message(true, 'squeal', 'user:1 user:2')
 *        | COMMIT (a rollback never reaches the stream)
 *        v
 *   walsender (slot, pgoutput, messages 'true') --CopyData--> the reader
 *   (this file, the main thread):
 *     B: a transaction starts   M: its keys (prefix matched, each checked)
 *     C: committed at end_lsn -> its keys join the batch
 *        |  once no more data is waiting (or the batch is full)
 *        v
 *   the batch's transactions visible to new snapshots? (pg_current_snapshot)
 *        |  yes (else ask again in a moment)
 *        v
 *   the batch goes to every cluster's queue (cluster.c): one thread per
 *   cluster, its own libcellar handle and spool, so a cluster that stops
 *   answering holds up no other; its deletes go to its spool
 *   (--async-dir) or are retried
 *        |  each cluster's taken position (answered, or spooled and fsync'd)
 *        v
 *   standby status update: flush = the least taken position of all
 *
 * Delivery is at least once and in commit order per cluster: the slot's
 * confirmed position moves only past transactions every cluster has
 * taken, so a daemon killed at any point starts again from the first
 * transaction not confirmed, and may send some deletes twice.
 *
 * The slot.  A slot that is missing is made only with --create-slot (a
 * first start); otherwise it is lost (a failover to a standby loses
 * logical slots, PostgreSQL 15 does not copy them), as is one PostgreSQL
 * invalidated (max_slot_wal_keep_size).  A lost slot means the
 * invalidations since its position are gone: --on-lost-slot fail (the
 * default) exits with status 3 saying so; flush makes the slot again and
 * has every cluster flush_all before any later delete, and counts it in
 * /metrics.  If the stream breaks after it ran, the reader reconnects
 * with a backoff, and a slot missing then is lost whatever --create-slot
 * says.
 */
#include <errno.h>
#include <getopt.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cellar.h"
#include "core/clock.h"
#include "core/options.h"
#include "squeal/cluster.h"
#include "squeal/metrics.h"
#include "squeal/pgout.h"

#define SQUEAL_VERSION "0.2.0"
#define BATCH_MAX 4096                  /* keys delivered at once at most */
#define STATUS_EVERY_MS 10000           /* a status update at least this often */
#define CLUSTERS_MAX 64
#define RECONNECT_MAX_MS 10000          /* the reconnect backoff's ceiling */
#define EXIT_SLOT_LOST 3

enum lost_slot { LOST_FAIL, LOST_FLUSH };

/* What connect_stream() found. */
enum stream_rc { STREAM_OK, STREAM_ERROR, STREAM_LOST, STREAM_STOPPED };

struct squeal {
    PGconn *conn;
    PGconn *sql;                        /* an ordinary connection: snapshots, the slot's state */
    const char *dsn, *slot, *pub, *prefix;
    struct cluster *clusters[CLUSTERS_MAX];
    int nclusters;
    int wake_fd;                        /* the clusters' "taken more": an eventfd */
    int verbose;
    /* keys of committed transactions not yet dispatched [0, ncommitted), then the
       open transaction's [ncommitted, nkeys) */
    char **keys;
    size_t *lens;
    size_t nkeys, cap, ncommitted;
    int64_t *txn_ts;                    /* commit times of the batch's transactions with keys */
    size_t ntxn, captxn;
    bool in_txn;                        /* between a B and its C */
    uint32_t xid;                       /* the open transaction's */
    uint32_t *xids;                     /* the batch's transactions that carried keys */
    size_t nxids, capxids;
    uint64_t visibility_waits;          /* batches held until their commits were visible */
    _Atomic uint64_t visibility_timeouts; /* batches delivered after VISIBLE_WAIT_MS anyway */
    uint64_t last_visible_warn_ms;
    uint32_t xmin;                      /* the last snapshot's: every xid before it ended */
    bool have_xmin;
    uint64_t xmin_ms;                   /* when it was read: used for 10 s at most, so
                                           that the ids compared stay within 2^31 */
    uint64_t batch_end;                 /* end_lsn of the last committed transaction read */
    uint64_t dispatched;                /* end_lsn of the last batch queued to the clusters */
    bool dispatching;                   /* a batch is being queued (or was left half queued
                                           by a stop): confirm no further than the clusters' */
    _Atomic uint64_t received;          /* the furthest end_lsn read (for /metrics) */
    _Atomic uint64_t acked;             /* the position confirmed to the server */
    uint64_t last_status_ms;
    _Atomic uint64_t txns, keys_read, bad_keys, batches, stream_reconnects, lost_slots;
    size_t batch_max;                   /* --batch: deliver once this many keys are committed */
    enum lost_slot on_lost;             /* --on-lost-slot */
    bool create_slot;                   /* --create-slot: a missing slot is made (first start) */
    bool streamed;                      /* a stream has run: a missing slot is lost */
    bool markers;                       /* --markers: each key's remote marker goes too */
    bool queue_full_said;
    /* --report: every transaction's latency until the last cluster took it */
    bool report;
    pthread_mutex_t lat_lock;
    uint32_t *lat_us;
    size_t nlat, caplat;
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig) {
    (void)sig;
    stopping = 1;
}

/* Sleeps up to ms, in steps, unless told to stop; false on a stop. */
static bool nap(int ms) {
    for (int waited = 0; waited < ms && !stopping; waited += 10) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return !stopping;
}

static void usage(FILE *f) {
    fprintf(f,
            "cellar-squeal " SQUEAL_VERSION " -- deletes from PostgreSQL's commit stream to every "
            "cluster\n"
            "  --dsn CONNINFO        the database (libpq conninfo: \"host=/run/pg dbname=app\")\n"
            "  --cluster NAME=CONFIG a cluster: a libcellar configuration file (mcrouter JSON or\n"
            "                        a server list) or a server list; once per cluster (NAME:\n"
            "                        1-64 of A-Z a-z 0-9 . _ -).  Each cluster is delivered to\n"
            "                        by its own thread: one that stops answering holds up no\n"
            "                        other\n"
            "  --slot NAME           the logical replication slot (default cellar_squeal)\n"
            "  --create-slot         make the slot when it is missing: for a first start only.\n"
            "                        Without it a missing slot is lost (see --on-lost-slot);\n"
            "                        once the stream has run, a missing slot is always lost\n"
            "  --on-lost-slot fail|flush  a slot that is missing (a failover) or that PostgreSQL\n"
            "                        invalidated (max_slot_wal_keep_size) has lost the\n"
            "                        invalidations since its position: fail says so and exits\n"
            "                        with status 3 (default; \"exit\" is the same); flush says so,\n"
            "                        makes the slot again and has every cluster flush_all\n"
            "                        before any later delete (cellar_squeal_slot_lost_total)\n"
            "  --publication NAME    pgoutput's publication (default cellar_squeal; an empty one\n"
            "                        is made when missing)\n"
            "  --prefix STR          the messages' prefix (default squeal)\n"
            "  --async-dir DIR       keep the deletes a cluster cannot take in DIR/<cluster> and\n"
            "                        replay them when it is back (default: hold that cluster's\n"
            "                        deletes and retry them; the slot's position waits)\n"
            "  --async-max-bytes N   bound each cluster's spool to N bytes (shared evenly by its\n"
            "                        servers; default 64 MiB a server).  A full spool is said\n"
            "                        in the log (SPOOL FULL); its deletes are retried and the\n"
            "                        slot is not confirmed past them (PostgreSQL keeps the\n"
            "                        WAL), nothing is dropped\n"
            "  --metrics HOST:PORT   serve Prometheus metrics at http://HOST:PORT/metrics: lag\n"
            "                        from commit to delete per cluster (a histogram), spool\n"
            "                        depth and bytes, received and confirmed LSN, deletes,\n"
            "                        errors, reconnects\n"
            "  --batch N             deliver once N keys are committed and waiting (default\n"
            "                        4096; and whenever nothing more is waiting); a cluster\n"
            "                        sends what waits for it in deletes of up to N keys\n"
            "  --report FILE         at exit, write delivery figures as JSON there: latency\n"
            "                        from commit to every cluster's answer, per cluster too,\n"
            "                        deletes per write\n"
            "  --markers             delete each key's remote marker (\"r:<key>\", libcellar's\n"
            "                        cellar_remote_mark) with it\n"
            "  -v, --verbose         a line per commit read and per position confirmed;\n"
            "                        twice: also when an idle stream's position is confirmed\n"
            "  -V, --version, -h, --help\n"
            "Exit status: 0 stopped by SIGTERM/SIGINT, 1 an error, 3 the slot is lost\n"
            "(--on-lost-slot fail), 64 a bad argument.\n");
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

/* A cluster's name: it names a directory and a Prometheus label value. */
static bool cluster_name_ok(const char *s, size_t n) {
    if (n == 0 || n > 64 || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
            return false;
    return true;
}

/* ---------------------------------------------------------------------- */
/* The server                                                               */
/* ---------------------------------------------------------------------- */

static int send_status(struct squeal *s, bool reply) {
    char msg[34];
    uint64_t acked = s->acked;
    size_t n = pg_status_update(msg, acked, acked, acked, pg_time_from_unix_us(clock_unix_us()), reply);
    s->last_status_ms = clock_mono_ms();
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

/* Does the slot exist?  1, 0, or -1 when that could not be asked. */
static int slot_exists(struct squeal *s) {
    if (PQstatus(s->sql) != CONNECTION_OK)
        PQreset(s->sql);
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT 1 FROM pg_replication_slots WHERE slot_name = '%s'",
             s->slot);
    PGresult *r = PQexec(s->sql, sql);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? PQntuples(r) > 0 : -1;
    if (rc < 0)
        fprintf(stderr, "cellar-squeal: reading pg_replication_slots: %s",
                PQresultErrorMessage(r));
    PQclear(r);
    return rc;
}

/*
 * Queues a flush_all to every cluster, behind whatever is queued and
 * before any delete read from here on (a lost slot's recovery).  false on
 * a stop.
 */
static bool queue_flush(struct squeal *s) {
    struct batch *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return false;
    b->flush = true;
    b->end_lsn = s->dispatched;         /* confirms nothing new */
    atomic_init(&b->refs, s->nclusters);
    for (int i = 0; i < s->nclusters; i++)
        while (cluster_push(s->clusters[i], b, 100) == 0)
            if (stopping) {
                if (atomic_fetch_sub(&b->refs, s->nclusters - i) == s->nclusters - i)
                    batch_free(b);
                return false;
            }
    return true;
}

/*
 * The slot is lost: missing (why "missing") or invalidated.  The
 * invalidations since its last position are gone, so every cluster may
 * hold values it will never hear about.  fail: say so, STREAM_LOST.
 * flush: say so, make a new slot, flush every cluster and wait until each
 * has, STREAM_OK (the caller then starts the stream, so every delete read
 * comes after the flush); STREAM_STOPPED when stopped first.
 */
static enum stream_rc slot_lost(struct squeal *s, PGconn *c, const char *why) {
    bool flush = s->on_lost == LOST_FLUSH;
    fprintf(stderr, "cellar-squeal: SLOT %s IS LOST (%s): the invalidations since its last "
                    "confirmed position cannot be delivered; %s\n",
            s->slot, why,
            flush ? "making it again and flushing every cluster (--on-lost-slot flush)"
                  : "exiting with status 3 (--on-lost-slot fail); to go on, start with "
                    "--on-lost-slot flush (every cluster is flushed), or drop the slot and "
                    "start with --create-slot if losing those invalidations is acceptable");
    if (!flush)
        return STREAM_LOST;
    char sql[256];
    if (strcmp(why, "missing") != 0) {
        snprintf(sql, sizeof(sql), "DROP_REPLICATION_SLOT %s", s->slot);
        if (exec_ok(c, sql, PGRES_COMMAND_OK, NULL) < 0)
            return STREAM_ERROR;
    }
    snprintf(sql, sizeof(sql), "CREATE_REPLICATION_SLOT %s LOGICAL pgoutput (SNAPSHOT 'nothing')",
             s->slot);
    if (exec_ok(c, sql, PGRES_TUPLES_OK, NULL) < 0)
        return STREAM_ERROR;
    s->lost_slots++;
    /*
     * The new slot is followed only once every cluster has flushed: a
     * daemon stopped before that drops the slot it made, so that the next
     * start finds it missing and flushes again, rather than follow a slot
     * whose start no cluster was flushed behind.  FIXME: a daemon killed
     * (SIGKILL, a crash) in that window leaves the new slot, and the
     * flush is not done again; a marker that outlives the process (in the
     * database, or the spool's directory) would close it.
     */
    uint64_t before[CLUSTERS_MAX];
    for (int i = 0; i < s->nclusters; i++) {
        struct cluster_figures f;
        cluster_figures(s->clusters[i], &f);
        before[i] = f.flushes;
    }
    bool queued = queue_flush(s);
    for (int i = 0; queued && i < s->nclusters;) {
        struct cluster_figures f;
        cluster_figures(s->clusters[i], &f);
        if (f.flushes > before[i])
            i++;
        else if (!nap(50))
            queued = false;
    }
    if (!queued) {
        fprintf(stderr, "cellar-squeal: stopped before every cluster was flushed: dropping "
                        "the new slot %s, so that the next start finds it lost again\n",
                s->slot);
        snprintf(sql, sizeof(sql), "DROP_REPLICATION_SLOT %s", s->slot);
        exec_ok(c, sql, PGRES_COMMAND_OK, NULL);
        return STREAM_STOPPED;
    }
    return STREAM_OK;
}

/* Connects for replication and starts streaming from the slot into s->conn. */
static enum stream_rc connect_stream(struct squeal *s) {
    /* the DSN as given (key=value or a postgresql:// URI), replication added */
    const char *const keys[] = {"dbname", "replication", "application_name", NULL};
    const char *const values[] = {s->dsn, "database", "cellar_squeal", NULL};
    PGconn *c = PQconnectdbParams(keys, values, 1);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "cellar-squeal: connecting for replication: %s", PQerrorMessage(c));
        PQfinish(c);
        return STREAM_ERROR;
    }
    char sql[256];
    int exists = slot_exists(s);
    if (exists < 0) {
        PQfinish(c);
        return STREAM_ERROR;
    }
    if (exists == 0 && s->create_slot && !s->streamed) {
        snprintf(sql, sizeof(sql),
                 "CREATE_REPLICATION_SLOT %s LOGICAL pgoutput (SNAPSHOT 'nothing')", s->slot);
        if (exec_ok(c, sql, PGRES_TUPLES_OK, "42710") < 0) {
            PQfinish(c);
            return STREAM_ERROR;
        }
        fprintf(stderr, "cellar-squeal: made slot %s (--create-slot)\n", s->slot);
    } else if (exists == 0) {
        enum stream_rc rc = slot_lost(s, c, "missing");
        if (rc != STREAM_OK) {
            PQfinish(c);
            return rc;
        }
    }
    for (int attempt = 0;; attempt++) {
        snprintf(sql, sizeof(sql),
                 "START_REPLICATION SLOT %s LOGICAL 0/0 (proto_version '1', "
                 "publication_names '%s', messages 'true')",
                 s->slot, s->pub);
        PGresult *r = PQexec(c, sql);
        if (PQresultStatus(r) == PGRES_COPY_BOTH) {
            PQclear(r);
            s->conn = c;
            return STREAM_OK;
        }
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        const char *msg = PQresultErrorMessage(r);
        bool lost = state && strcmp(state, "55000") == 0 && strstr(msg, "invalidated") != NULL;
        enum stream_rc rc = STREAM_ERROR;
        if (lost && attempt == 0) {
            fprintf(stderr, "cellar-squeal: %s", msg);
            PQclear(r);
            rc = slot_lost(s, c, "invalidated by PostgreSQL: max_slot_wal_keep_size");
            if (rc == STREAM_OK)
                continue;
            PQfinish(c);
            return rc;
        }
        if (state && strcmp(state, "55006") == 0)   /* object_in_use */
            fprintf(stderr, "cellar-squeal: slot %s is already followed by another process "
                            "(one daemon per slot): %s", s->slot, msg);
        else
            fprintf(stderr, "cellar-squeal: %s: %s", sql, msg);
        PQclear(r);
        PQfinish(c);
        return rc;
    }
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
    uint64_t start = clock_mono_ms();
    /* catching up on older WAL, a whole batch may precede the last snapshot seen */
    bool recent = s->have_xmin && clock_mono_ms() - s->xmin_ms < 10000;
    while (recent && done < s->nxids && (int32_t)(s->xids[done] - s->xmin) < 0)
        done++;
    const char *why = NULL;
    while (done < s->nxids) {
        if (stopping)
            return false;
        if (clock_mono_ms() - start >= VISIBLE_WAIT_MS) {
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
        s->xmin_ms = clock_mono_ms();
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
        if (s->last_visible_warn_ms == 0 || clock_mono_ms() - s->last_visible_warn_ms >= 60000) {
            s->last_visible_warn_ms = clock_mono_ms();
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

/* ---------------------------------------------------------------------- */
/* Dispatch and confirmation                                                */
/* ---------------------------------------------------------------------- */

/* The last cluster took b: its transactions' latency (--report). */
static void on_batch_taken(void *arg, const struct batch *b) {
    struct squeal *s = arg;
    int64_t now = pg_time_from_unix_us(clock_unix_us());
    pthread_mutex_lock(&s->lat_lock);
    for (size_t i = 0; i < b->ntxn; i++) {
        if (s->nlat == s->caplat) {
            size_t cap = s->caplat ? s->caplat * 2 : 4096;
            uint32_t *l = cap <= (size_t)1 << 26 ? realloc(s->lat_us, cap * sizeof(*l)) : NULL;
            if (l == NULL)
                break;
            s->lat_us = l;
            s->caplat = cap;
        }
        int64_t d = now - b->commit_us[i];
        s->lat_us[s->nlat++] = d < 0 ? 0 : d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
    }
    pthread_mutex_unlock(&s->lat_lock);
}

/*
 * Confirms what every cluster has taken: the least taken position; once
 * every cluster has taken all that was dispatched and nothing committed
 * waits, the end of the last transaction read (those after the last batch
 * carried no keys).  -1 when the status update could not be sent.
 */
static int confirm(struct squeal *s) {
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < s->nclusters; i++) {
        uint64_t t = cluster_taken(s->clusters[i]);
        if (t < least)
            least = t;
    }
    uint64_t to = least;
    /* (while a batch is being queued, ncommitted is already 0 and batch_end is
       that batch's end, which some cluster has not been given) */
    if (least >= s->dispatched && !s->dispatching)
        to = s->ncommitted == 0 ? s->batch_end : s->dispatched;
    if (to <= s->acked)
        return 0;
    s->acked = to;
    if (s->verbose) {
        char lsn[20];
        pg_lsn_str(to, lsn);
        fprintf(stderr, "cellar-squeal: confirmed %s\n", lsn);
    }
    return send_status(s, false);
}

/*
 * Hands the committed keys to every cluster's queue as one batch; a full
 * queue (a cluster far behind with no room in its spool) holds the
 * stream here, with the connection kept alive.  -1 on a stop or an error.
 */
static int dispatch(struct squeal *s) {
    size_t n = s->ncommitted;
    if (n == 0)
        return 0;
    if (!wait_visible(s))
        return -1;
    struct batch *b = calloc(1, sizeof(*b));
    if (b == NULL || (b->keys = malloc(n * sizeof(*b->keys))) == NULL ||
        (b->lens = malloc(n * sizeof(*b->lens))) == NULL ||
        (b->commit_us = malloc((s->ntxn ? s->ntxn : 1) * sizeof(*b->commit_us))) == NULL) {
        fprintf(stderr, "cellar-squeal: out of memory\n");
        batch_free(b);
        return -1;
    }
    memcpy(b->keys, s->keys, n * sizeof(*b->keys));
    memcpy(b->lens, s->lens, n * sizeof(*b->lens));
    b->nkeys = n;
    memcpy(b->commit_us, s->txn_ts, s->ntxn * sizeof(*b->commit_us));
    b->ntxn = s->ntxn;
    b->end_lsn = s->batch_end;
    if (s->report) {
        b->on_last = on_batch_taken;
        b->arg = s;
    }
    atomic_init(&b->refs, s->nclusters);
    uint64_t end = b->end_lsn;          /* b is the clusters' once queued: the last may free it */
    /* the open transaction's keys move to the front */
    memmove(s->keys, s->keys + n, (s->nkeys - n) * sizeof(*s->keys));
    memmove(s->lens, s->lens + n, (s->nkeys - n) * sizeof(*s->lens));
    s->nkeys -= n;
    s->ncommitted = 0;
    s->ntxn = 0;
    s->dispatching = true;              /* left set when a stop cuts the loop short */
    for (int i = 0; i < s->nclusters; i++) {
        while (cluster_push(s->clusters[i], b, 100) == 0) {
            if (!s->queue_full_said) {
                s->queue_full_said = true;
                fprintf(stderr, "cellar-squeal: cluster %s has %u keys queued: reading the "
                                "stream waits for it (every cluster waits)\n",
                        cluster_name(s->clusters[i]), QUEUE_MAX_KEYS);
            }
            if (stopping || (clock_mono_ms() - s->last_status_ms >= STATUS_EVERY_MS &&
                             (confirm(s) < 0 || send_status(s, false) < 0))) {
                if (atomic_fetch_sub(&b->refs, s->nclusters - i) == s->nclusters - i)
                    batch_free(b);
                return -1;
            }
        }
    }
    s->queue_full_said = false;
    s->dispatched = end;
    s->dispatching = false;
    s->batches++;
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
        s->in_txn = false;
        if (m.end_lsn <= s->dispatched) {
            /* sent again after a reconnect, and already in the clusters' queues */
            if (s->verbose) {
                char lsn[20];
                pg_lsn_str(m.end_lsn, lsn);
                fprintf(stderr, "cellar-squeal: commit %s: already queued, skipped\n", lsn);
            }
            for (size_t i = s->ncommitted; i < s->nkeys; i++)
                free(s->keys[i]);
            s->nkeys = s->ncommitted;
            break;
        }
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
            if (s->ntxn == s->captxn) {
                size_t cap = s->captxn ? s->captxn * 2 : 1024;
                int64_t *t = realloc(s->txn_ts, cap * sizeof(*t));
                if (t == NULL)
                    return -1;
                s->txn_ts = t;
                s->captxn = cap;
            }
            s->txn_ts[s->ntxn++] = m.ts;
        }
        s->keys_read += s->nkeys - s->ncommitted;
        s->ncommitted = s->nkeys;
        if (m.end_lsn > s->batch_end)
            s->batch_end = m.end_lsn;
        if (m.end_lsn > s->received)
            s->received = m.end_lsn;
        s->txns++;
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
                if (s->verbose > 1) {
                    char lsn[20];
                    pg_lsn_str(cp.wal_end, lsn);
                    fprintf(stderr, "cellar-squeal: idle, confirmed the server's %s\n", lsn);
                }
                if (cp.wal_end > s->received)
                    s->received = cp.wal_end;
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

/* Follows the stream until a stop (0) or until it breaks (-1). */
static int run(struct squeal *s) {
    while (!stopping) {
        int rc = read_stream(s);
        if (rc < 0)
            return -1;
        if (s->ncommitted > 0) {
            if (dispatch(s) < 0)
                return stopping ? 0 : -1;
            if (rc == 1)
                continue;
        }
        if (confirm(s) < 0)
            return -1;
        if (clock_mono_ms() - s->last_status_ms >= STATUS_EVERY_MS && send_status(s, false) < 0)
            return -1;
        struct pollfd p[2] = {{.fd = PQsocket(s->conn), .events = POLLIN},
                              {.fd = s->wake_fd, .events = POLLIN}};
        if (poll(p, 2, 1000) < 0 && errno != EINTR)
            return -1;
        if (p[1].revents & POLLIN) {
            uint64_t v;
            if (read(s->wake_fd, &v, sizeof(v)) < 0) { /* nothing to read: woken anyway */ }
        }
        if (PQconsumeInput(s->conn) != 1) {
            fprintf(stderr, "cellar-squeal: reading from the server: %s", PQerrorMessage(s->conn));
            return -1;
        }
    }
    return 0;
}

/*
 * After the stream broke: what was read and not dispatched is dropped
 * (the server sends it again from the confirmed position); what is in
 * the clusters' queues stays, and its transactions, sent again, are
 * skipped by their end_lsn.
 */
static void forget_undispatched(struct squeal *s) {
    for (size_t i = 0; i < s->nkeys; i++)
        free(s->keys[i]);
    s->nkeys = s->ncommitted = s->ntxn = s->nxids = 0;
    s->in_txn = false;
    s->batch_end = s->dispatched > s->acked ? s->dispatched : s->acked;
}

/* ---------------------------------------------------------------------- */
/* Figures: /metrics and --report                                           */
/* ---------------------------------------------------------------------- */

/* One sample a cluster of a per-cluster family. */
#define PER_CLUSTER(t, f, n, fam, type, help, fmt, expr)                                    \
    do {                                                                                    \
        text_family(t, fam, type, help);                                                    \
        for (int i_ = 0; i_ < (n); i_++)                                                    \
            text_printf(t, fam "{cluster=\"%s\"} " fmt "\n", (f)[i_].name, (expr));         \
    } while (0)

/*
 * The Prometheus exposition (text format 0.0.4), on the metrics thread:
 * the reader's figures are atomics, each cluster's are copied under its
 * lock.  LSNs are given as numbers (exact below 2^53).
 */
static void render_metrics(void *arg, struct text *t) {
    struct squeal *s = arg;
    struct cluster_figures f[CLUSTERS_MAX];
    int n = s->nclusters;
    for (int i = 0; i < n; i++)
        cluster_figures(s->clusters[i], &f[i]);
    text_metric(t, "cellar_squeal_received_lsn", "gauge",
                "The furthest WAL position read from the slot (a commit's end, or the "
                "server's end when idle).",
                s->received);
    text_metric(t, "cellar_squeal_confirmed_lsn", "gauge",
                "The position confirmed to PostgreSQL: every cluster has taken the deletes "
                "before it.",
                s->acked);
    text_metric(t, "cellar_squeal_transactions_total", "counter",
                "Committed transactions read from the stream.",
                s->txns);
    text_metric(t, "cellar_squeal_keys_total", "counter",
                "Keys read from committed messages.",
                s->keys_read);
    text_metric(t, "cellar_squeal_bad_keys_total", "counter",
                "Words skipped: not a memcache key.",
                s->bad_keys);
    text_metric(t, "cellar_squeal_stream_reconnects_total", "counter",
                "Times the replication stream broke and was connected again.",
                s->stream_reconnects);
    text_metric(t, "cellar_squeal_slot_lost_total", "counter",
                "Lost slots (missing or invalidated) made again with every cluster flushed "
                "(--on-lost-slot flush).",
                s->lost_slots);
    text_metric(t, "cellar_squeal_visibility_timeouts_total", "counter",
                "Batches delivered before their commits were seen visible (500 ms wait).",
                s->visibility_timeouts);

    text_family(t, "cellar_squeal_delete_lag_seconds", "histogram",
                "From a transaction's commit to its cluster answering its deletes (deliveries "
                "that spooled nothing).");
    for (int i = 0; i < n; i++) {
        uint64_t cum = 0;
        for (int k = 0; k < LAG_BUCKETS; k++) {
            cum += f[i].lag_count[k];
            text_printf(t, "cellar_squeal_delete_lag_seconds_bucket{cluster=\"%s\",le=\"%g\"} "
                           "%llu\n", f[i].name, cluster_lag_le[k], (unsigned long long)cum);
        }
        cum += f[i].lag_count[LAG_BUCKETS];
        text_printf(t, "cellar_squeal_delete_lag_seconds_bucket{cluster=\"%s\",le=\"+Inf\"} "
                       "%llu\n", f[i].name, (unsigned long long)cum);
        text_printf(t, "cellar_squeal_delete_lag_seconds_sum{cluster=\"%s\"} %.6f\n", f[i].name,
                    f[i].lag_sum);
        text_printf(t, "cellar_squeal_delete_lag_seconds_count{cluster=\"%s\"} %llu\n",
                    f[i].name, (unsigned long long)cum);
    }
    PER_CLUSTER(t, f, n, "cellar_squeal_deletes_total", "counter",
                "Deletes the cluster answered.", "%llu", (unsigned long long)f[i_].deletes);
    PER_CLUSTER(t, f, n, "cellar_squeal_spooled_total", "counter",
                "Deletes its spool took while it did not answer.", "%llu",
                (unsigned long long)f[i_].spooled);
    PER_CLUSTER(t, f, n, "cellar_squeal_replayed_total", "counter",
                "Spooled deletes replayed to it.", "%llu", (unsigned long long)f[i_].replayed);
    PER_CLUSTER(t, f, n, "cellar_squeal_spool_depth", "gauge",
                "Spooled deletes waiting for replay.", "%llu",
                (unsigned long long)f[i_].spool_depth);
    PER_CLUSTER(t, f, n, "cellar_squeal_spool_bytes", "gauge", "Their bytes.", "%llu",
                (unsigned long long)f[i_].spool_bytes);
    PER_CLUSTER(t, f, n, "cellar_squeal_spool_max_bytes", "gauge",
                "The spool's bound (0: no spool).", "%llu",
                (unsigned long long)f[i_].spool_max_bytes);
    PER_CLUSTER(t, f, n, "cellar_squeal_spool_full", "gauge",
                "1 while the spool is full: the slot is not confirmed past the cluster.", "%d",
                f[i_].spool_full ? 1 : 0);
    PER_CLUSTER(t, f, n, "cellar_squeal_spool_full_total", "counter",
                "Times the spool filled.", "%llu", (unsigned long long)f[i_].spool_full_events);
    PER_CLUSTER(t, f, n, "cellar_squeal_cluster_up", "gauge",
                "1 while the cluster answers: no server marked down, and something answered "
                "since the last failure.",
                "%d", f[i_].answering ? 1 : 0);
    PER_CLUSTER(t, f, n, "cellar_squeal_outages_total", "counter",
                "Times the cluster stopped answering.", "%llu",
                (unsigned long long)f[i_].outages);
    PER_CLUSTER(t, f, n, "cellar_squeal_replays_total", "counter",
                "Replays of its spool started.", "%llu", (unsigned long long)f[i_].replays);
    PER_CLUSTER(t, f, n, "cellar_squeal_errors_total", "counter",
                "Requests that failed: timeouts, connection errors, fast fails of a server "
                "marked down.", "%llu", (unsigned long long)f[i_].errors);
    PER_CLUSTER(t, f, n, "cellar_squeal_reconnects_total", "counter",
                "Connections opened to the cluster's servers.", "%llu",
                (unsigned long long)f[i_].connects);
    PER_CLUSTER(t, f, n, "cellar_squeal_servers_marked_down_total", "counter",
                "Servers marked down (TKO).", "%llu", (unsigned long long)f[i_].tko_events);
    PER_CLUSTER(t, f, n, "cellar_squeal_flushes_total", "counter",
                "flush_all sent for a lost slot.", "%llu", (unsigned long long)f[i_].flushes);
    PER_CLUSTER(t, f, n, "cellar_squeal_queued_keys", "gauge",
                "Keys queued for the cluster, not yet taken.", "%llu",
                (unsigned long long)f[i_].queued_keys);
    PER_CLUSTER(t, f, n, "cellar_squeal_taken_lsn", "gauge",
                "The position up to which the cluster has taken every delete.", "%llu",
                (unsigned long long)f[i_].taken_lsn);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Latencies (sorted here) as JSON fields: measured, within_*, p50/p90/p99/max. */
static void lat_json(FILE *f, uint32_t *lat, size_t n) {
    uint64_t within[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        within[0] += lat[i] <= 1000;
        within[1] += lat[i] <= 10000;
        within[2] += lat[i] <= 1000000;
    }
    if (n)
        qsort(lat, n, sizeof(*lat), cmp_u32);
    double d = n ? (double)n : 1;
#define PCT(p) (n ? lat[(size_t)((double)(n - 1) * (p))] : 0)
    fprintf(f, "\"measured\": %zu, \"within_1ms\": %.4f, \"within_10ms\": %.4f, "
               "\"within_1s\": %.4f, \"p50_us\": %u, \"p90_us\": %u, \"p99_us\": %u, "
               "\"max_us\": %u",
            n, (double)within[0] / d, (double)within[1] / d, (double)within[2] / d, PCT(0.5),
            PCT(0.9), PCT(0.99), n ? lat[n - 1] : 0);
#undef PCT
}

/*
 * --report: the delivery figures as one JSON object, after the clusters'
 * threads have stopped.  The top-level latency is until every cluster took
 * a transaction (answered or spooled); "clusters" has each cluster's own,
 * from commit to its answer (deliveries that spooled nothing).
 */
static void write_report(struct squeal *s, const char *path) {
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "cellar-squeal: --report %s: %s\n", path, strerror(errno));
        return;
    }
    uint64_t requests = 0, writes = 0;
    struct cluster_figures cf[CLUSTERS_MAX];
    for (int i = 0; i < s->nclusters; i++) {
        cluster_figures(s->clusters[i], &cf[i]);
        requests += cf[i].requests;
        writes += cf[i].writes;
    }
    fprintf(f, "{\"transactions\": %llu, \"keys\": %llu, \"batches\": %llu, "
               "\"bad_keys\": %llu, \"clusters\": %d, \"requests\": %llu, \"writes\": %llu, "
               "\"deletes_per_write\": %.2f, \"visibility_waits\": %llu, "
               "\"visibility_timeouts\": %llu, ",
            (unsigned long long)s->txns, (unsigned long long)s->keys_read,
            (unsigned long long)s->batches, (unsigned long long)s->bad_keys, s->nclusters,
            (unsigned long long)requests, (unsigned long long)writes,
            writes ? (double)requests / (double)writes : 0.0,
            (unsigned long long)s->visibility_waits,
            (unsigned long long)s->visibility_timeouts);
    lat_json(f, s->lat_us, s->nlat);
    fprintf(f, ", \"per_cluster\": {");
    for (int i = 0; i < s->nclusters; i++) {
        size_t n;
        uint32_t *lat = (uint32_t *)cluster_lags(s->clusters[i], &n);
        fprintf(f, "%s\"%s\": {\"deletes\": %llu, \"spooled\": %llu, \"replayed\": %llu, ",
                i ? ", " : "", cf[i].name, (unsigned long long)cf[i].deletes,
                (unsigned long long)cf[i].spooled, (unsigned long long)cf[i].replayed);
        lat_json(f, lat, n);
        fprintf(f, "}");
    }
    fprintf(f, "}}\n");
    fclose(f);
}

/* ---------------------------------------------------------------------- */
/* main                                                                     */
/* ---------------------------------------------------------------------- */

/* NAME=CONFIG: a file libcellar loads, else a server list. */
static int add_cluster(struct squeal *s, const char *arg, const char *async_dir,
                       uint64_t async_max) {
    const char *eq = strchr(arg, '=');
    if (eq == NULL || !cluster_name_ok(arg, (size_t)(eq - arg)) || eq[1] == '\0' ||
        s->nclusters == CLUSTERS_MAX) {
        fprintf(stderr, "cellar-squeal: --cluster wants NAME=CONFIG (NAME: 1-64 of A-Z a-z "
                        "0-9 . _ -), not \"%s\"\n", arg);
        return -1;
    }
    char name[65];
    snprintf(name, sizeof(name), "%.*s", (int)(eq - arg), arg);
    for (int i = 0; i < s->nclusters; i++)
        if (strcmp(cluster_name(s->clusters[i]), name) == 0) {
            fprintf(stderr, "cellar-squeal: cluster %s is given twice\n", name);
            return -1;
        }
    char err[512] = "";
    if (cluster_create(&s->clusters[s->nclusters], name, eq + 1, async_dir, async_max,
                       s->batch_max, s->report, s->wake_fd, err, sizeof(err)) < 0) {
        fprintf(stderr, "cellar-squeal: cluster %s: %s\n", name, err);
        cluster_destroy(&s->clusters[s->nclusters]);
        return -1;
    }
    s->nclusters++;
    return 0;
}

/* A byte count: digits with an optional k, m or g (powers of 1024); 0 when bad. */
static uint64_t parse_bytes(const char *arg) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (end == arg || errno != 0 || arg[0] == '-')
        return 0;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: return 0;
    }
    if (*end != '\0' || v > (UINT64_MAX >> shift))
        return 0;
    return (uint64_t)v << shift;
}

/*
 * Follows the slot until a stop: connects, runs, and when the stream
 * breaks after having run, reconnects with a backoff (1 s doubling to
 * RECONNECT_MAX_MS).  A first connection that fails ends the program.
 * Returns the exit status.
 */
static int follow(struct squeal *s) {
    int backoff = 1000;
    for (;;) {
        enum stream_rc rc = connect_stream(s);
        if (rc == STREAM_LOST)
            return EXIT_SLOT_LOST;
        if (rc == STREAM_STOPPED || (rc == STREAM_OK && stopping))
            return 0;
        if (rc == STREAM_ERROR && !s->streamed)
            return 1;
        if (rc == STREAM_OK) {
            if (!s->streamed)
                fprintf(stderr, "cellar-squeal: following slot %s (publication %s, prefix "
                                "\"%s\") to %d cluster%s\n",
                        s->slot, s->pub, s->prefix, s->nclusters, s->nclusters == 1 ? "" : "s");
            else
                fprintf(stderr, "cellar-squeal: following slot %s again\n", s->slot);
            s->streamed = true;
            backoff = 1000;
            s->last_status_ms = clock_mono_ms();
            int r = run(s);
            if (r == 0 || stopping) {
                confirm(s);
                return 0;
            }
            PQfinish(s->conn);
            s->conn = NULL;
            forget_undispatched(s);
        }
        fprintf(stderr, "cellar-squeal: connecting again in %.1f s\n", backoff / 1000.0);
        if (!nap(backoff))
            return 0;
        backoff = backoff * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : backoff * 2;
        s->stream_reconnects++;
    }
}

int main(int argc, char **argv) {
    /* every option long, but -v, -V and -h (core/options.h) */
    static const struct option longs[] = {
        {"dsn", required_argument, NULL, 'd' | OPTIONS_LONG_ONLY},
        {"cluster", required_argument, NULL, 'c' | OPTIONS_LONG_ONLY},
        {"slot", required_argument, NULL, 's' | OPTIONS_LONG_ONLY},
        {"create-slot", no_argument, NULL, 'C' | OPTIONS_LONG_ONLY},
        {"publication", required_argument, NULL, 'P' | OPTIONS_LONG_ONLY},
        {"prefix", required_argument, NULL, 'x' | OPTIONS_LONG_ONLY},
        {"async-dir", required_argument, NULL, 'A' | OPTIONS_LONG_ONLY},
        {"async-max-bytes", required_argument, NULL, 'B' | OPTIONS_LONG_ONLY},
        {"metrics", required_argument, NULL, 'M' | OPTIONS_LONG_ONLY},
        {"batch", required_argument, NULL, 'b' | OPTIONS_LONG_ONLY},
        {"report", required_argument, NULL, 'r' | OPTIONS_LONG_ONLY},
        {"on-lost-slot", required_argument, NULL, 'L' | OPTIONS_LONG_ONLY},
        {"markers", no_argument, NULL, 'm' | OPTIONS_LONG_ONLY},
        {"verbose", no_argument, NULL, 'v'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static struct options_getopt g;
    options_getopt_init(&g, "cellar-squeal");
    options_getopt_table(&g, longs);
    static struct squeal s = {.prefix = "squeal", .batch_max = BATCH_MAX, .on_lost = LOST_FAIL,
                              .slot = "cellar_squeal", .pub = "cellar_squeal", .wake_fd = -1};
    static struct metrics metrics = {NULL};
    const char *async_dir = NULL, *report = NULL, *metrics_at = NULL;
    const char *cluster_args[CLUSTERS_MAX];
    int ncluster_args = 0;
    uint64_t async_max = 0;
    int ch, status = 1;
    pthread_mutex_init(&s.lat_lock, NULL);
    char *optarg;
    while ((ch = options_getopt_next(&g, argc, argv, &optarg)) != -1) {
        if (ch == '?' || ch == ':')
            options_getopt_complain(&g, stderr, ch, argv);
        switch (ch & ~OPTIONS_LONG_ONLY) {
        case 'd': s.dsn = optarg; break;
        case 'c':
            if (ncluster_args == CLUSTERS_MAX) {
                fprintf(stderr, "cellar-squeal: at most %d clusters\n", CLUSTERS_MAX);
                status = 64;
                goto out;
            }
            cluster_args[ncluster_args++] = optarg;
            break;
        case 's': s.slot = optarg; break;
        case 'C': s.create_slot = true; break;
        case 'P': s.pub = optarg; break;
        case 'x': s.prefix = optarg; break;
        case 'A': async_dir = optarg; break;
        case 'B':
            if ((async_max = parse_bytes(optarg)) == 0) {
                fprintf(stderr, "cellar-squeal: --async-max-bytes takes a byte count above 0 "
                                "(k, m, g for KiB, MiB, GiB)\n");
                status = 64;
                goto out;
            }
            break;
        case 'M': metrics_at = optarg; break;
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
        case 'r': report = optarg; s.report = true; break;
        case 'm': s.markers = true; break;
        case 'L':
            if (strcmp(optarg, "flush") == 0)
                s.on_lost = LOST_FLUSH;
            else if (strcmp(optarg, "fail") == 0 || strcmp(optarg, "exit") == 0)
                s.on_lost = LOST_FAIL;
            else {
                fprintf(stderr, "cellar-squeal: --on-lost-slot takes fail or flush\n");
                status = 64;
                goto out;
            }
            break;
        case 'v': s.verbose++; break;
        case 'V': printf("cellar-squeal " SQUEAL_VERSION "\n"); status = 0; goto out;
        case 'h': usage(stdout); status = 0; goto out;
        default: usage(stderr); status = 64; goto out;
        }
    }
    if (s.dsn == NULL || ncluster_args == 0 || optind < argc) {
        fprintf(stderr, "cellar-squeal: %s\n", s.dsn == NULL ? "--dsn is required"
                                               : optind < argc ? "unexpected arguments"
                                                               : "give at least one --cluster");
        usage(stderr);
        status = 64;
        goto out;
    }
    if (!ident_ok(s.slot) || !ident_ok(s.pub)) {
        fprintf(stderr, "cellar-squeal: --slot and --publication take 1-63 of a-z, 0-9, _\n");
        status = 64;
        goto out;
    }
    if (async_max > 0 && async_dir == NULL) {
        fprintf(stderr, "cellar-squeal: --async-max-bytes bounds --async-dir's spools: give "
                        "--async-dir\n");
        status = 64;
        goto out;
    }
    struct stat dst;
    if (async_dir != NULL && (stat(async_dir, &dst) != 0 || !S_ISDIR(dst.st_mode) ||
                              access(async_dir, W_OK | X_OK) != 0)) {
        fprintf(stderr, "cellar-squeal: --async-dir %s: not a directory it can write\n",
                async_dir);
        goto out;
    }
    if ((s.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        fprintf(stderr, "cellar-squeal: eventfd: %s\n", strerror(errno));
        goto out;
    }
    /* The threads made from here on (spool syncers, metrics, clusters) take
       no SIGTERM or SIGINT: they come to this thread, whose poll() they end. */
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigaddset(&term, SIGINT);
    pthread_sigmask(SIG_BLOCK, &term, NULL);
    for (int i = 0; i < ncluster_args; i++)
        if (add_cluster(&s, cluster_args[i], async_dir, async_max) < 0) {
            status = 64;
            goto out;
        }
    struct sigaction sa = {.sa_handler = on_signal};     /* no SA_RESTART: poll returns */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (metrics_at != NULL) {
        char err[256];
        if (metrics_start(&metrics, metrics_at, render_metrics, &s, err, sizeof(err)) < 0) {
            fprintf(stderr, "cellar-squeal: --metrics %s\n", err);
            goto out;
        }
    }
    if (ensure_publication(s.dsn, s.pub) < 0)
        goto out;
    s.sql = PQconnectdb(s.dsn);
    if (PQstatus(s.sql) != CONNECTION_OK) {
        fprintf(stderr, "cellar-squeal: connecting to %s: %s", s.dsn, PQerrorMessage(s.sql));
        goto out;
    }
    for (int i = 0; i < s.nclusters; i++)
        if (cluster_start(s.clusters[i]) < 0) {
            fprintf(stderr, "cellar-squeal: cannot start cluster %s's thread\n",
                    cluster_name(s.clusters[i]));
            goto out;
        }
    pthread_sigmask(SIG_UNBLOCK, &term, NULL);
    status = follow(&s);
    /* what the clusters took while they stopped is confirmed too */
    for (int i = 0; i < s.nclusters; i++)
        cluster_stop(s.clusters[i]);
    if (s.conn && status == 0 && confirm(&s) < 0)
        fprintf(stderr, "cellar-squeal: could not confirm the last position\n");
    if (report != NULL)
        write_report(&s, report);
    if (status != EXIT_SLOT_LOST)
        fprintf(stderr, "cellar-squeal: %s after %llu transactions, %llu keys read, %llu bad "
                        "keys skipped\n",
                status == 0 ? "stopped" : "stopping on an error", (unsigned long long)s.txns,
                (unsigned long long)s.keys_read, (unsigned long long)s.bad_keys);
out:
    metrics_stop(&metrics);
    for (int i = 0; i < s.nclusters; i++)
        cluster_destroy(&s.clusters[i]);
    if (s.conn)
        PQfinish(s.conn);
    if (s.sql)
        PQfinish(s.sql);
    if (s.wake_fd >= 0)
        close(s.wake_fd);
    for (size_t i = 0; i < s.nkeys; i++)
        free(s.keys[i]);
    free(s.keys);
    free(s.lens);
    free(s.txn_ts);
    free(s.lat_us);
    free(s.xids);
    return status;
}
