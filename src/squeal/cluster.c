/*
 * cluster.c -- one cluster's delivery thread (cluster.h).
 *
 *   cluster_main:  wait for batches (meanwhile: the handle's probes and
 *   spool replay, and watch() for the state changes worth a log line)
 *        | take the queued batches, up to batch_keys keys (--batch)
 *        v
 *   in_order(): while the spool replays to servers that answer, wait
 *        v
 *   cellar_mdelete -> a key not taken (timeout, down, spool full) is
 *   sent again after a backoff (50 ms .. 1 s), the rest are done
 *        v
 *   anything spooled: cellar_spool_sync (fsync) before it counts
 *        v
 *   taken_lsn = the last batch's end_lsn; the reader is woken (wake_fd)
 *
 * How a spooled delete is told from one the cluster answered: libcellar
 * answers both NOT_FOUND, but this handle is its spool's only user, so
 * the spool's "appended" counter moving is exactly what was spooled.
 * Lag (commit to the cluster's answer) is recorded for a delivery that
 * spooled nothing; spooled keys are counted instead.
 */
#include "squeal/cluster.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cellar.h"
#include "core/clock.h"
#include "squeal/pgout.h"

#define SPOOL_LOG_EVERY_MS 5000         /* a line on the spool's growth at most this often */
/* a server marked down is probed at least this often (libcellar's default backs off to
   60 s): its spool replays, and its deletes flow again, soon after it is back */
#define PROBE_MAX_MS 2000
#define REPLAY_STUCK_MS 5000            /* new deletes wait at most this for a replay that
                                           does not move */

const double cluster_lag_le[LAG_BUCKETS] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                            0.05,   0.1,   0.2,   0.5,   1,    2,
                                            5,      10,    30,    60};

struct cluster {
    char *name;
    struct cellar_config *cfg;
    struct cellar *h;                   /* the cluster thread's alone once started */
    struct cellar_spool *spool;
    char *spool_dir;
    uint64_t spool_max;
    int wake_fd;
    pthread_t thread;
    bool started;
    atomic_bool stop;
    _Atomic uint64_t taken_lsn;

    pthread_mutex_t lock;               /* the queue, busy, fig */
    pthread_cond_t more;                /* a batch queued, or stop */
    pthread_cond_t room;                /* keys left the queue */
    struct batch **q;                   /* a ring of qcap */
    size_t qhead, qlen, qcap, qkeys;
    bool busy;                          /* the thread holds batches it took */
    struct cluster_figures fig;

    /* the thread's own */
    bool down;                          /* logged as not answering */
    bool spooling, replaying, full;
    bool stuck_said;                    /* logged that a replay does not move ... */
    uint64_t stuck_replayed;            /* ... at this replayed count */
    uint64_t seen_fails, seen_revivals;
    bool answered;                      /* something answered since the last failure */
    uint64_t marked_down;               /* servers the handle has marked down */
    uint64_t seen_appended, synced_appended, seen_dropped, seen_replayed;
    uint64_t last_spool_log_ms, replay_from_ms, replay_from_count;
    size_t batch_keys;                  /* keys sent at once at most */
    bool keep_lags;
    uint32_t *lags;
    size_t nlags, caplags;
};

void batch_free(struct batch *b) {
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->nkeys; i++)
        free(b->keys[i]);
    free(b->keys);
    free(b->lens);
    free(b->commit_us);
    free(b);
}

static void batch_unref(struct batch *b) {
    if (atomic_fetch_sub(&b->refs, 1) == 1) {
        if (b->on_last)
            b->on_last(b->arg, b);
        batch_free(b);
    }
}

/* ---------------------------------------------------------------------- */
/* Watching the cluster                                                     */
/* ---------------------------------------------------------------------- */

/*
 * Reads the handle's and the spool's counters after a delivery round
 * (clean: every key of it taken) or an idle pass, and logs what changed:
 * the cluster stopped answering, its deletes are being spooled, the spool
 * is full, it answers again, a replay started or ended.  A failure makes
 * it not answering; it answers again once no server is marked down and
 * something answered since the last failure: a probe brought a server
 * back, a replayed record was answered, or a round went through without
 * a failure or a spooled key.  The thread's only; fig under the lock.
 */
static void watch(struct cluster *c, bool clean) {
    struct cellar_stats st;
    cellar_stats(c->h, &st);
    struct cellar_spool_stats sp = {0};
    if (c->spool)
        cellar_spool_stats(c->spool, NULL, &sp);
    uint64_t now = clock_mono_ms();
    uint64_t fails = st.timeouts + st.errors + st.down_fast_fails;
    uint64_t marked_down = st.tko_events > st.revivals ? st.tko_events - st.revivals : 0;
    uint64_t new_fails = fails - c->seen_fails;
    c->seen_fails = fails;
    c->marked_down = marked_down;
    if (new_fails > 0 || sp.appended > c->seen_appended)
        clean = false;
    if (new_fails > 0)
        c->answered = false;
    if (clean || st.revivals > c->seen_revivals || sp.replayed > c->seen_replayed)
        c->answered = true;
    c->seen_revivals = st.revivals;
    bool outage = false, replay = false, full_event = false;
    if (!c->down && (new_fails > 0 || marked_down > 0)) {
        c->down = outage = true;
        fprintf(stderr, "cellar-squeal: cluster %s stopped answering (so far: timeouts %llu, "
                        "errors %llu; servers marked down: %llu of %u): %s\n",
                c->name, (unsigned long long)st.timeouts,
                (unsigned long long)(st.errors + st.down_fast_fails),
                (unsigned long long)marked_down, cellar_config_servers(c->cfg),
                c->spool ? "its deletes go to its spool"
                         : "its deletes are retried and the slot's position waits for them");
    } else if (c->down && marked_down == 0 && c->answered) {
        c->down = false;
        fprintf(stderr, "cellar-squeal: cluster %s answers again%s\n", c->name,
                sp.depth ? "" : " (nothing spooled)");
    }
    if (c->spool) {
        if (sp.appended > c->seen_appended) {
            if (!c->spooling || now - c->last_spool_log_ms >= SPOOL_LOG_EVERY_MS) {
                fprintf(stderr, "cellar-squeal: cluster %s: %s: %llu deletes spooled, %llu "
                                "waiting (%llu bytes) in %s\n",
                        c->name, c->spooling ? "still spooling" : "spooling its deletes",
                        (unsigned long long)sp.appended, (unsigned long long)sp.depth,
                        (unsigned long long)sp.bytes, c->spool_dir);
                c->last_spool_log_ms = now;
            }
            c->spooling = true;
            c->seen_appended = sp.appended;
        }
        if (sp.dropped > c->seen_dropped) {
            c->seen_dropped = sp.dropped;
            if (!c->full) {
                c->full = full_event = true;
                fprintf(stderr, "cellar-squeal: cluster %s: SPOOL FULL or not writable (%llu "
                                "bytes waiting, at most %llu in all): NOT CONFIRMING THE "
                                "SLOT past what it has taken; PostgreSQL keeps the WAL and its "
                                "deletes are retried until the spool takes them\n",
                        c->name, (unsigned long long)sp.bytes,
                        (unsigned long long)c->fig.spool_max_bytes);
            }
        }
        /* a replay answered (the server is back), or nothing fails and some wait */
        bool progress = sp.replayed > c->seen_replayed;
        if (!c->replaying && (progress || (!c->down && sp.depth > 0))) {
            c->replaying = replay = true;
            c->replay_from_ms = now;
            c->replay_from_count = c->seen_replayed;
            c->spooling = false;
            fprintf(stderr, "cellar-squeal: cluster %s: replay started: %llu spooled deletes "
                            "waiting\n",
                    c->name, (unsigned long long)(sp.depth + sp.replayed - c->seen_replayed));
        }
        c->seen_replayed = sp.replayed;
        if (c->replaying && sp.depth == 0) {
            c->replaying = false;
            fprintf(stderr, "cellar-squeal: cluster %s: replay done: %llu deletes replayed in "
                            "%.1f s\n",
                    c->name, (unsigned long long)(sp.replayed - c->replay_from_count),
                    (double)(now - c->replay_from_ms) / 1000.0);
        }
        if (!c->down && sp.depth == 0)
            c->spooling = false;
    }
    pthread_mutex_lock(&c->lock);
    c->fig.answering = !c->down;
    c->fig.spool_full = c->full;
    c->fig.outages += outage;
    c->fig.replays += replay;
    c->fig.spool_full_events += full_event;
    c->fig.errors = fails;
    c->fig.connects = st.connects;
    c->fig.tko_events = st.tko_events;
    c->fig.requests = st.requests;
    c->fig.writes = st.writes;
    pthread_mutex_unlock(&c->lock);
}

/* Runs the handle (probes, replay) for about ms; false on a stop. */
static bool run_for(struct cluster *c, int ms) {
    uint64_t until = clock_mono_ms() + (uint64_t)ms;
    do {
        if (atomic_load(&c->stop))
            return false;
        cellar_poll(c->h, 10);
        struct timespec ts = {0, 5 * 1000000};
        nanosleep(&ts, NULL);           /* cellar_poll returns at once when nothing is due */
        watch(c, false);
    } while (clock_mono_ms() < until);
    return !atomic_load(&c->stop);
}

/*
 * Commit order per cluster: while spooled deletes are being replayed to
 * servers that answer, a newer delete sent directly could arrive first,
 * so new deletes wait for the replay.  While a server is marked down, or
 * the replay itself fails (the server is not answering after all), new
 * deletes go on: they fail over to the spool behind the older ones.
 * false on a stop.
 */
static bool in_order(struct cluster *c) {
    if (c->spool == NULL)
        return true;
    uint64_t fails = c->seen_fails, replayed = UINT64_MAX, since = clock_mono_ms();
    for (;;) {
        struct cellar_spool_stats sp;
        cellar_spool_stats(c->spool, NULL, &sp);
        if (sp.depth == 0 || c->marked_down > 0 || c->seen_fails > fails)
            return true;
        if (c->stuck_said && sp.replayed == c->stuck_replayed)
            return true;                /* still stuck: not another wait per round */
        c->stuck_said = false;
        if (sp.replayed != replayed) {
            replayed = sp.replayed;
            since = clock_mono_ms();
        } else if (clock_mono_ms() - since >= REPLAY_STUCK_MS) {
            /* records no configured server replays (a server since taken out of
               the cluster, or moved), or a spool that cannot be read: order is
               given up for what remains rather than every delete after it */
            c->stuck_replayed = sp.replayed;
            if (!c->stuck_said) {
                c->stuck_said = true;
                fprintf(stderr, "cellar-squeal: cluster %s: its spool's replay has not moved "
                                "in %d s with %llu deletes waiting (for servers no longer in "
                                "the cluster?): new deletes go on without waiting for it\n",
                        c->name, REPLAY_STUCK_MS / 1000, (unsigned long long)sp.depth);
            }
            return true;
        }
        if (!run_for(c, 20))
            return false;
    }
}

/* A status that says the cluster did not take the delete (another try may). */
static bool not_taken(int status) {
    return status == CELLAR_ETIMEDOUT || status == CELLAR_ECONNECT || status == CELLAR_ECLOSED ||
           status == CELLAR_EDOWN || status == CELLAR_EPROTO || status == CELLAR_ESERVER ||
           status == CELLAR_ENOMEM;
}

/* Every transaction of take[0, n) answered now: its lag into the histogram (and the report's list). */
static void record_lags(struct cluster *c, struct batch *const *take, size_t n) {
    int64_t now = pg_time_from_unix_us(clock_unix_us());
    pthread_mutex_lock(&c->lock);
    for (size_t b = 0; b < n; b++) {
        for (size_t i = 0; i < take[b]->ntxn; i++) {
            int64_t d = now - take[b]->commit_us[i];
            if (d < 0)
                d = 0;
            double sec = (double)d / 1e6;
            size_t k = 0;
            while (k < LAG_BUCKETS && sec > cluster_lag_le[k])
                k++;
            c->fig.lag_count[k]++;
            c->fig.lag_sum += sec;
            if (!c->keep_lags)
                continue;
            if (c->nlags == c->caplags) {
                size_t cap = c->caplags ? c->caplags * 2 : 4096;
                uint32_t *l = cap <= (size_t)1 << 26 ? realloc(c->lags, cap * sizeof(*l)) : NULL;
                if (l == NULL)
                    continue;
                c->lags = l;
                c->caplags = cap;
            }
            c->lags[c->nlags++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
        }
    }
    pthread_mutex_unlock(&c->lock);
}

/* A lost slot's recovery: flush_all until every server has answered OK; false on a stop. */
static bool flush_cluster(struct cluster *c) {
    int rc;
    while ((rc = cellar_flush_all(c->h, 0)) != CELLAR_OK) {
        fprintf(stderr, "cellar-squeal: flushing cluster %s: %s; retrying\n", c->name,
                cellar_strerror(rc));
        if (!run_for(c, 1000))
            return false;
    }
    fprintf(stderr, "cellar-squeal: flushed cluster %s\n", c->name);
    pthread_mutex_lock(&c->lock);
    c->fig.flushes++;
    pthread_mutex_unlock(&c->lock);
    return true;
}

/*
 * Delivers the keys of take[0, n) until each is taken (the cluster
 * answered it, or its spool holds it, fsync'd).  false on a stop.
 */
static bool deliver(struct cluster *c, struct batch *const *take, size_t n) {
    if (n == 1 && take[0]->flush)
        return flush_cluster(c);
    size_t total = 0;
    for (size_t b = 0; b < n; b++)
        total += take[b]->nkeys;
    const char **keys;
    size_t *lens;
    int *st;
    bool done = false;
    for (;;) {                          /* out of memory: try again in a moment */
        keys = malloc((total ? total : 1) * sizeof(*keys));
        lens = malloc((total ? total : 1) * sizeof(*lens));
        st = malloc((total ? total : 1) * sizeof(*st));
        if (keys != NULL && lens != NULL && st != NULL)
            break;
        free(keys);
        free(lens);
        free(st);
        fprintf(stderr, "cellar-squeal: cluster %s: out of memory; retrying\n", c->name);
        if (!run_for(c, 1000))
            return false;
    }
    size_t k = 0;
    for (size_t b = 0; b < n; b++)
        for (size_t i = 0; i < take[b]->nkeys; i++) {
            keys[k] = take[b]->keys[i];
            lens[k++] = take[b]->lens[i];
        }
    struct cellar_spool_stats sp0 = {0}, sp1 = {0};
    if (c->spool)
        cellar_spool_stats(c->spool, NULL, &sp0);
    int backoff = 50;
    for (size_t left = total; left > 0;) {
        if (!in_order(c))
            goto out;
        if (cellar_mdelete(c->h, keys, lens, left, st) != CELLAR_OK)
            for (size_t i = 0; i < left; i++)
                st[i] = CELLAR_ENOMEM;
        size_t keep = 0;
        for (size_t i = 0; i < left; i++)
            if (not_taken(st[i])) {
                keys[keep] = keys[i];
                lens[keep++] = lens[i];
            }
        watch(c, keep == 0);
        if (keep == 0)
            break;
        left = keep;
        if (!run_for(c, backoff))
            goto out;
        if (backoff < 1000)
            backoff *= 2;
    }
    uint64_t spooled = 0;
    if (c->spool) {
        cellar_spool_stats(c->spool, NULL, &sp1);
        spooled = sp1.appended - sp0.appended;
        /*
         * What was spooled counts once it is on disk.  A failed fdatasync
         * cannot be retried (the kernel may have dropped the dirty pages and
         * libcellar's spool stays failed), so the daemon stops: started
         * again, it resumes from the slot's confirmed position, which is
         * before these deletes.
         */
        if (sp1.appended > c->synced_appended) {
            if (cellar_spool_sync(c->spool) != 0) {
                fprintf(stderr, "cellar-squeal: cluster %s: COULD NOT FSYNC ITS SPOOL in %s: "
                                "stopping (started again, the daemon resumes from the last "
                                "confirmed position)\n", c->name, c->spool_dir);
                exit(EXIT_FAILURE);
            }
            c->synced_appended = sp1.appended;
        }
        if (c->full) {
            c->full = false;
            fprintf(stderr, "cellar-squeal: cluster %s: its spool takes deletes again (%llu "
                            "waiting, %llu bytes): confirming resumes\n",
                    c->name, (unsigned long long)sp1.depth, (unsigned long long)sp1.bytes);
        }
    }
    if (spooled == 0)
        record_lags(c, take, n);
    pthread_mutex_lock(&c->lock);
    c->fig.deletes += total - (spooled < total ? spooled : total);
    c->fig.spooled += spooled;
    c->fig.spool_full = c->full;
    pthread_mutex_unlock(&c->lock);
    done = true;
out:
    free(keys);
    free(lens);
    free(st);
    return done;
}

static void wake(int fd) {
    uint64_t one = 1;
    if (fd >= 0 && write(fd, &one, sizeof(one)) < 0) { /* full counter: already woken */ }
}

/*
 * The cluster's thread (the diagram atop this file): waits for batches,
 * running the handle meanwhile; takes what is queued, delivers it, marks
 * it taken and wakes the reader.  Ends on cluster_stop(); what it holds
 * then stays untaken, so the slot is not confirmed past it.
 */
static void *cluster_main(void *arg) {
    struct cluster *c = arg;
    struct batch **take = NULL;
    size_t captake = 0;
    pthread_mutex_lock(&c->lock);
    while (!atomic_load(&c->stop)) {
        if (c->qlen == 0) {
            /* idle: the handle's background work, a few times a second (often while a
               spool replays) */
            pthread_mutex_unlock(&c->lock);
            cellar_poll(c->h, 0);
            watch(c, false);
            pthread_mutex_lock(&c->lock);
            if (c->qlen > 0 || atomic_load(&c->stop))
                continue;
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            long wait_ns = c->replaying || c->spooling || c->down ? 10 * 1000000L : 100 * 1000000L;
            until.tv_nsec += wait_ns;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&c->more, &c->lock, &until);
            continue;
        }
        /* what is queued, up to batch_keys keys; a flush alone */
        size_t n = 0, keys = 0;
        while (n < c->qlen) {
            struct batch *b = c->q[(c->qhead + n) % c->qcap];
            if (n > 0 && (b->flush || take[0]->flush || keys + b->nkeys > c->batch_keys))
                break;
            if (n == captake) {
                size_t cap = captake ? captake * 2 : 64;
                struct batch **t = realloc(take, cap * sizeof(*t));
                if (t == NULL)
                    break;
                take = t;
                captake = cap;
            }
            take[n++] = b;
            keys += b->nkeys;
        }
        if (n == 0) {                   /* out of memory: try again in a moment */
            pthread_mutex_unlock(&c->lock);
            run_for(c, 100);
            pthread_mutex_lock(&c->lock);
            continue;
        }
        c->qhead = (c->qhead + n) % c->qcap;
        c->qlen -= n;
        c->qkeys -= keys;
        c->busy = true;
        pthread_cond_broadcast(&c->room);
        pthread_mutex_unlock(&c->lock);
        bool ok = deliver(c, take, n);
        pthread_mutex_lock(&c->lock);
        c->busy = false;
        if (!ok) {                      /* stopping: what it held is not taken */
            for (size_t i = 0; i < n; i++)
                batch_unref(take[i]);
            break;
        }
        atomic_store(&c->taken_lsn, take[n - 1]->end_lsn);
        c->fig.taken_lsn = take[n - 1]->end_lsn;
        pthread_mutex_unlock(&c->lock);
        for (size_t i = 0; i < n; i++)
            batch_unref(take[i]);
        wake(c->wake_fd);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    free(take);
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* The API                                                                  */
/* ---------------------------------------------------------------------- */

int cluster_create(struct cluster **out, const char *name, const char *conf,
                   const char *spool_dir, uint64_t spool_max, size_t batch_keys, bool keep_lags,
                   int wake_fd, char *err, size_t errlen) {
    *out = NULL;
    struct cluster *c = calloc(1, sizeof(*c));
    if (c == NULL || (c->name = strdup(name)) == NULL) {
        free(c);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->wake_fd = wake_fd;
    c->keep_lags = keep_lags;
    c->batch_keys = batch_keys < 1 ? 1 : batch_keys > BATCH_KEYS ? BATCH_KEYS : batch_keys;
    c->spool_max = spool_max;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->more, NULL);
    pthread_cond_init(&c->room, NULL);
    *out = c;
    /* deletes' answers are a few bytes: no incast to guard against, so a batch
       may be in flight whole; a configuration file's own settings win */
    const struct cellar_options opt = {.window_init = BATCH_KEYS, .window_min = BATCH_KEYS,
                                       .window_max = BATCH_KEYS, .window_bytes = -1,
                                       .probe_max_ms = PROBE_MAX_MS};
    struct stat st;
    char why[512] = "";
    int rc = stat(conf, &st) == 0 ? cellar_config_load(&c->cfg, conf, &opt, why, sizeof(why))
                                   : cellar_config_parse(&c->cfg, conf, &opt, why, sizeof(why));
    if (rc != CELLAR_OK || cellar_create(&c->h, c->cfg) != CELLAR_OK) {
        snprintf(err, errlen, "%s", why[0] ? why : "out of memory");
        return -1;
    }
    c->fig.name = c->name;
    c->fig.answering = true;
    if (spool_dir == NULL)
        return 0;
    /* each cluster its own spool: its bound, its depth, its replay are its own */
    size_t n = strlen(spool_dir) + strlen(name) + 2;
    if ((c->spool_dir = malloc(n)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(c->spool_dir, n, "%s/%s", spool_dir, name);
    if (mkdir(c->spool_dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", c->spool_dir, strerror(errno));
        return -1;
    }
    unsigned servers = cellar_config_servers(c->cfg);
    uint64_t per_server = spool_max == 0 ? 0 : spool_max / (servers ? servers : 1);
    if (spool_max > 0 && per_server == 0)
        per_server = 1;
    if (cellar_spool_open(&c->spool, c->spool_dir, per_server) != CELLAR_OK) {
        snprintf(err, errlen, "%s: not a directory it can write", c->spool_dir);
        return -1;
    }
    cellar_use_spool(c->h, c->spool);
    struct cellar_spool_stats sp;
    cellar_spool_stats(c->spool, NULL, &sp);
    c->fig.has_spool = true;
    c->fig.spool_max_bytes = spool_max ? per_server * (servers ? servers : 1)
                                       : (uint64_t)CELLAR_SPOOL_MAX_BYTES * servers;
    if (sp.depth > 0)
        fprintf(stderr, "cellar-squeal: cluster %s: %llu deletes spooled by an earlier run "
                        "(%llu bytes in %s) are replayed when it answers\n",
                name, (unsigned long long)sp.depth, (unsigned long long)sp.bytes,
                c->spool_dir);
    return 0;
}

int cluster_start(struct cluster *c) {
    if (pthread_create(&c->thread, NULL, cluster_main, c) != 0)
        return -1;
    c->started = true;
    return 0;
}

int cluster_push(struct cluster *c, struct batch *b, int wait_ms) {
    pthread_mutex_lock(&c->lock);
    if (c->qkeys >= QUEUE_MAX_KEYS && wait_ms > 0) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += wait_ms / 1000;
        until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (c->qkeys >= QUEUE_MAX_KEYS && !atomic_load(&c->stop))
            if (pthread_cond_timedwait(&c->room, &c->lock, &until) != 0)
                break;
    }
    if (c->qkeys >= QUEUE_MAX_KEYS) {
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    if (c->qlen == c->qcap) {
        size_t cap = c->qcap ? c->qcap * 2 : 256;
        struct batch **q = malloc(cap * sizeof(*q));
        if (q == NULL) {
            pthread_mutex_unlock(&c->lock);
            return 0;
        }
        for (size_t i = 0; i < c->qlen; i++)
            q[i] = c->q[(c->qhead + i) % c->qcap];
        free(c->q);
        c->q = q;
        c->qhead = 0;
        c->qcap = cap;
    }
    c->q[(c->qhead + c->qlen++) % c->qcap] = b;
    c->qkeys += b->nkeys;
    pthread_cond_signal(&c->more);
    pthread_mutex_unlock(&c->lock);
    return 1;
}

const char *cluster_name(const struct cluster *c) {
    return c->name;
}

uint64_t cluster_taken(struct cluster *c) {
    return atomic_load(&c->taken_lsn);
}

bool cluster_idle(struct cluster *c) {
    pthread_mutex_lock(&c->lock);
    bool idle = c->qlen == 0 && !c->busy;
    pthread_mutex_unlock(&c->lock);
    return idle;
}

void cluster_figures(struct cluster *c, struct cluster_figures *out) {
    pthread_mutex_lock(&c->lock);
    *out = c->fig;
    out->queued_keys = c->qkeys;
    out->queued_batches = c->qlen;
    pthread_mutex_unlock(&c->lock);
    if (c->spool) {
        struct cellar_spool_stats sp;
        cellar_spool_stats(c->spool, NULL, &sp);
        out->spool_depth = sp.depth;
        out->spool_bytes = sp.bytes;
        out->replayed = sp.replayed;
    }
}

const uint32_t *cluster_lags(struct cluster *c, size_t *n) {
    *n = c->nlags;
    return c->lags;
}

void cluster_stop(struct cluster *c) {
    if (!c->started)
        return;
    pthread_mutex_lock(&c->lock);
    atomic_store(&c->stop, true);
    pthread_cond_broadcast(&c->more);
    pthread_cond_broadcast(&c->room);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    c->started = false;
}

void cluster_destroy(struct cluster **cp) {
    struct cluster *c = *cp;
    if (c == NULL)
        return;
    cluster_stop(c);
    for (size_t i = 0; i < c->qlen; i++)
        batch_unref(c->q[(c->qhead + i) % c->qcap]);
    free(c->q);
    cellar_destroy(&c->h);
    cellar_spool_close(&c->spool);
    cellar_config_release(&c->cfg);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->more);
    pthread_cond_destroy(&c->room);
    free(c->lags);
    free(c->spool_dir);
    free(c->name);
    free(c);
    *cp = NULL;
}
