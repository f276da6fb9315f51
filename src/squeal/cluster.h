/*
 * cluster.h -- one cluster's delivery in cellar-squeal: its own thread,
 * its own libcellar handle and spool, fed batches of committed keys
 * through a bounded queue by the thread that reads the commit stream.
 *
 *   reader thread --cluster_push(batch)--> queue (at most QUEUE_MAX_KEYS
 *   keys waiting; the push waits for room) --> this cluster's thread:
 *   takes what is queued (up to batch_keys keys at once), cellar_mdelete,
 *   retries what was not taken, fsyncs what was spooled, then marks the
 *   batches taken: cluster_taken() moves to their last end_lsn
 *
 * A batch is shared by every cluster's queue and counted: the last
 * cluster to take it frees it.  A cluster that stops answering holds up
 * only its own queue: with a spool its deletes go to disk and count as
 * taken once fsync'd; without one, or while its spool is full, they are
 * retried, and its taken position (hence the slot's confirmed one) stays.
 * A cluster takes its batches in commit order; while its spool replays
 * and its servers answer, it sends nothing new, so its deletes also
 * reach it in commit order.
 *
 * Threading: cluster_push, cluster_stop, cluster_taken, cluster_figures
 * may be called from any thread; the handle is the cluster thread's
 * alone.  Everything here allocates; cluster_push blocks while the queue
 * is full (bounded by a timeout so the caller can keep its connection
 * alive).
 */
#ifndef CELLAR_SQUEAL_CLUSTER_H
#define CELLAR_SQUEAL_CLUSTER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QUEUE_MAX_KEYS (1u << 20)       /* keys waiting for one cluster at most */
#define BATCH_KEYS 4096                 /* keys sent to a cluster at once at most */
#define LAG_BUCKETS 16                  /* the lag histogram's finite buckets */

/* The lag histogram's upper bounds, in seconds (Prometheus "le"). */
extern const double cluster_lag_le[LAG_BUCKETS];

/*
 * Committed keys of one or more transactions, in commit order, shared by
 * every cluster's queue.  flush: instead of deletes, flush_all the cluster
 * (a lost slot's recovery); it carries no keys.
 */
struct batch {
    uint64_t end_lsn;                   /* the last transaction's end */
    char **keys;                        /* each malloc'd; freed with the batch */
    size_t *lens;
    size_t nkeys;
    int64_t *commit_us;                 /* each transaction's commit (µs since 2000) */
    size_t ntxn;
    bool flush;
    atomic_int refs;
    /* the last cluster to take it records the transactions' latency (--report) */
    void (*on_last)(void *arg, const struct batch *b);
    void *arg;
};

/* Frees a batch no queue holds any more (its keys too). */
void batch_free(struct batch *b);

/* What a cluster's state looks like now, for /metrics and the report. */
struct cluster_figures {
    const char *name;
    uint64_t taken_lsn;                 /* every batch up to here taken (or spooled) */
    uint64_t queued_keys, queued_batches;
    uint64_t deletes;                   /* keys the cluster answered */
    uint64_t spooled;                   /* keys its spool took instead */
    uint64_t replayed;                  /* spooled records replayed to it */
    uint64_t spool_depth, spool_bytes, spool_max_bytes;
    bool has_spool, spool_full, answering;
    uint64_t outages, replays, spool_full_events;
    uint64_t errors;                    /* requests failed: timeouts, errors, fast fails */
    uint64_t connects, tko_events, flushes;
    uint64_t requests, writes;          /* the handle's: deletes per socket write */
    uint64_t lag_count[LAG_BUCKETS + 1];/* per bucket, not cumulative; last: above all */
    double lag_sum;
};

struct cluster;

/*
 * A cluster named name (shown in logs and labels) over conf: a libcellar
 * configuration file, else a server list.  spool_dir: its spool's
 * directory (made when missing), NULL for none; spool_max: the spool's
 * bound in bytes, over all its servers (0: libcellar's default per
 * server).  batch_keys: queued batches are sent together up to this many
 * keys (1..BATCH_KEYS; a batch larger alone).  keep_lags: record every
 * transaction's lag for the report.
 * 0, or -1 with the reason in err.
 */
int cluster_create(struct cluster **out, const char *name, const char *conf,
                   const char *spool_dir, uint64_t spool_max, size_t batch_keys, bool keep_lags,
                   int wake_fd, char *err, size_t errlen);

/* Starts its thread: 0, or -1. */
int cluster_start(struct cluster *c);

/*
 * Queues b (taking one of its references); waits while the queue holds
 * QUEUE_MAX_KEYS keys, at most wait_ms: 1 queued, 0 still full (b not
 * queued, the reference still the caller's).
 */
int cluster_push(struct cluster *c, struct batch *b, int wait_ms);

/* Its name as given. */
const char *cluster_name(const struct cluster *c);

/* Where the cluster has taken every batch up to (0 before its first). */
uint64_t cluster_taken(struct cluster *c);

/* Nothing queued or in its hands. */
bool cluster_idle(struct cluster *c);

/* Its figures now. */
void cluster_figures(struct cluster *c, struct cluster_figures *out);

/* The latencies recorded with keep_lags (µs, unsorted); valid until destroy. */
const uint32_t *cluster_lags(struct cluster *c, size_t *n);

/* Asks its thread to stop (what it holds stays untaken) and joins it. */
void cluster_stop(struct cluster *c);

/* Stops it if running, drops its queue, frees it; NULL is fine. */
void cluster_destroy(struct cluster **c);

#endif
