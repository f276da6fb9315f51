/*
 * spool.c -- reliable deletes: what a server could not take is kept on
 * disk and sent to it again, in order, once it answers (mcrouter's
 * asynclog, with the replayer mcrouter never published).
 *
 *   pool leaf --a spooled op (the pool's "spool" list: delete)--> conn
 *                                        | failed on the way (timeout,
 *                                        | refused, marked down, ...)
 *                                        v
 *       appended to DIR/<server>.spool: written (write(2)) before the
 *       caller hears, made durable (fdatasync) by the spool's thread
 *       within SYNC_MS; the caller is answered as mcrouter answers a
 *       logged delete: NOT_FOUND (a spooled write: NOT_STORED)
 *
 *   replay (cl_spool_tick, on any handle's thread): a connection to the
 *   server that is not marked down claims the server's spool (one
 *   handle at a time), reads up to REPLAY_BATCH records from where the
 *   replay stands, sends them pipelined, and moves the replay past every
 *   record answered, up to the first one that failed on the way (that
 *   one and the rest are sent again later).  A spool read to its end is
 *   truncated.  An answer that is an error of the request itself (a
 *   CLIENT_ERROR) would come again: the record is passed and counted in
 *   replay_errors.  A spool whose replayed part passes half its bound is
 *   compacted (the rest moved to the front).
 *
 * Ordering: records of one server are replayed in the order they were
 * spooled.  Requests that reach a server directly are not held back
 * while its spool drains, so a replayed delete may land after a newer
 * set of the same key (a miss where a hit could have been, never a stale
 * value); a spooled set, replayed late, could overwrite a newer value,
 * which is why only deletes are spooled unless a pool says otherwise.
 *
 * File: a header line "cellar-spool 1 <server name>\n", then records:
 *
 *   u32 len   bytes after this field      u32 sum   murmur3 of the bytes after it
 *   u8 op, u8 meta_cmd, u16 nkey, u32 flags, i64 exptime, u64 cas, u64 delta,
 *   u32 hold, u32 nvalue, u32 nmeta, then key, value, meta flags
 *
 * in the host's byte order (a spool is read back by the machine that
 * wrote it).  At open, a record that does not check out (a write torn by
 * a crash) ends the file there.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/client_int.h"
#include "core/hash.h"

#define SPOOL_MAGIC "cellar-spool 1 "
#define SYNC_MS 50                  /* appends reach the disk within this */
#define REPLAY_BATCH 64             /* records sent at once */
#define REPLAY_READ (256u * 1024)   /* bytes read at once (more for one larger record) */
#define RETRY_NS (200u * 1000000u)  /* a replay that could not start tries again after */
#define HEAD 52                     /* a record's fixed part, len and sum included */
#define SUM_SEED 0x5eed

struct cl_spool_dest {
    struct cellar_spool *sp;
    char *name;                     /* the server's name as configured */
    char *path;
    pthread_mutex_t lock;           /* fd, head, end */
    int fd;                         /* -1 until the first append (or a file found at open) */
    uint64_t hdr;                   /* the header's length: where records start */
    uint64_t head;                  /* the next record to replay */
    uint64_t end;                   /* where the next record goes */
    _Atomic uint64_t depth;         /* records in [head, end) */
    _Atomic uint64_t appended, replayed, dropped, replay_errors;
    atomic_bool dirty;              /* appended since the last fdatasync */
    atomic_bool sync_failed;        /* an fdatasync failed: what it covered may be lost */
    atomic_bool claimed;            /* a handle is replaying it */
    struct cl_spool_dest *next;
};

struct cellar_spool {
    char *dir;
    uint64_t max_bytes;             /* per server file */
    pthread_mutex_t lock;           /* dests, stop */
    pthread_cond_t wake;
    struct cl_spool_dest *dests;
    bool stop;
    pthread_t syncer;
};

/* One record being replayed: its request (first, so done() finds it) and where it ends. */
struct replay_rec {
    struct cl_req q;
    struct cl_replay *rp;
    uint64_t end;
};

/* A connection's replay of its server's spool. */
struct cl_replay {
    struct cl_spool_dest *d;
    char *buf;                      /* the records read; the requests point into it */
    size_t cap;
    struct replay_rec recs[REPLAY_BATCH];
    unsigned left;                  /* records sent and not yet answered */
    unsigned good;                  /* answered in order before the first failure on the way */
    bool failed;
    bool active;                    /* a batch is out (d->claimed is ours) */
    uint64_t next_ns;               /* no new batch before */
};

/* ---------------------------------------------------------------------- */
/* Records                                                                  */
/* ---------------------------------------------------------------------- */

static void put32(char **p, uint32_t v) {
    memcpy(*p, &v, 4);
    *p += 4;
}

static void put64(char **p, uint64_t v) {
    memcpy(*p, &v, 8);
    *p += 8;
}

static uint32_t get32(const char **p) {
    uint32_t v;
    memcpy(&v, *p, 4);
    *p += 4;
    return v;
}

static uint64_t get64(const char **p) {
    uint64_t v;
    memcpy(&v, *p, 8);
    *p += 8;
    return v;
}

static size_t record_size(const struct msg *m) {
    return HEAD + m->key.len + m->value.len + m->meta_flags.len;
}

/* Writes m as a record into out (record_size(m) bytes). */
static void record_put(char *out, const struct msg *m) {
    size_t total = record_size(m);
    char *p = out;
    put32(&p, (uint32_t)(total - 4));
    p += 4;                         /* the sum, below */
    *p++ = (char)m->op;
    *p++ = m->meta_cmd;
    uint16_t nkey = (uint16_t)m->key.len;
    memcpy(p, &nkey, 2);
    p += 2;
    put32(&p, m->flags);
    put64(&p, (uint64_t)m->exptime);
    put64(&p, m->cas);
    put64(&p, m->delta);
    put32(&p, m->hold);
    put32(&p, (uint32_t)m->value.len);
    put32(&p, (uint32_t)m->meta_flags.len);
    memcpy(p, m->key.p, m->key.len);
    p += m->key.len;
    if (m->value.len)
        memcpy(p, m->value.p, m->value.len);
    p += m->value.len;
    if (m->meta_flags.len)
        memcpy(p, m->meta_flags.p, m->meta_flags.len);
    uint32_t sum = hash_murmur3_32(out + 8, total - 8, SUM_SEED);
    memcpy(out + 4, &sum, 4);
}

/*
 * The record at p (avail bytes there): its size in *size, and, when the
 * whole of it is there and checks out, its request in *m (spans into p).
 * 1: a record; 0: not all of it is there (*size says how much is needed,
 * or 0 when not even its length is); -1: not a record.
 */
static int record_get(const char *p, size_t avail, struct msg *m, size_t *size) {
    *size = 0;
    if (avail < 4)
        return 0;
    const char *q = p;
    uint32_t len = get32(&q);
    if (len < HEAD - 4)
        return -1;
    *size = (size_t)len + 4;
    if (avail < *size)
        return 0;
    uint32_t sum = get32(&q);
    if (sum != hash_murmur3_32(p + 8, *size - 8, SUM_SEED))
        return -1;
    *m = (struct msg){0};
    unsigned char op = (unsigned char)*q++;
    m->meta_cmd = *q++;
    uint16_t nkey;
    memcpy(&nkey, q, 2);
    q += 2;
    m->flags = get32(&q);
    m->exptime = (int64_t)get64(&q);
    m->cas = get64(&q);
    m->delta = get64(&q);
    m->hold = get32(&q);
    uint32_t nvalue = get32(&q), nmeta = get32(&q);
    if (op >= MSG_OP_COUNT || nkey == 0 || (uint64_t)HEAD + nkey + nvalue + nmeta != *size)
        return -1;
    m->op = (enum msg_op)op;
    m->key = (struct mc_span){q, nkey};
    q += nkey;
    m->value = (struct mc_span){q, nvalue};
    q += nvalue;
    m->meta_flags = (struct mc_span){q, nmeta};
    return 1;
}

/* ---------------------------------------------------------------------- */
/* Files                                                                    */
/* ---------------------------------------------------------------------- */

static bool full_pwrite(int fd, const char *p, size_t n, uint64_t off) {
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return true;
}

static ssize_t full_pread(int fd, char *p, size_t n, uint64_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, p + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* The file name of a server's spool: its name with every odd byte as '_', and a hash. */
static char *dest_path(const char *dir, const char *name) {
    char safe[96];
    size_t n = 0;
    for (const char *p = name; *p && n < sizeof(safe) - 1; p++)
        safe[n++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                   (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'
                               ? *p
                               : '_');
    safe[n] = '\0';
    uint32_t h = hash_murmur3_32(name, strlen(name), SUM_SEED);
    size_t len = strlen(dir) + n + 32;
    char *path = malloc(len);
    if (path)
        snprintf(path, len, "%s/%s-%08x.spool", dir, safe, h);
    return path;
}

static struct cl_spool_dest *dest_new(struct cellar_spool *sp, const char *name) {
    struct cl_spool_dest *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return NULL;
    d->sp = sp;
    d->fd = -1;
    d->name = strdup(name);
    d->path = dest_path(sp->dir, name);
    if (d->name == NULL || d->path == NULL) {
        free(d->name);
        free(d->path);
        free(d);
        return NULL;
    }
    pthread_mutex_init(&d->lock, NULL);
    d->next = sp->dests;
    sp->dests = d;
    return d;
}

/*
 * Opens a spool file found in the directory: its server's name from the
 * header, its records counted, a torn tail cut off.  Files that are not
 * spools are left alone.
 */
static void load_file(struct cellar_spool *sp, const char *path) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    char *data = NULL;
    if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(SPOOL_MAGIC) ||
        (data = malloc((size_t)st.st_size)) == NULL ||
        full_pread(fd, data, (size_t)st.st_size, 0) != st.st_size ||
        memcmp(data, SPOOL_MAGIC, sizeof(SPOOL_MAGIC) - 1) != 0) {
        free(data);
        close(fd);
        return;
    }
    size_t size = (size_t)st.st_size;
    char *nl = memchr(data, '\n', size);
    if (nl == NULL) {
        free(data);
        close(fd);
        return;
    }
    *nl = '\0';
    const char *name = data + sizeof(SPOOL_MAGIC) - 1;
    struct cl_spool_dest *d = NULL;
    for (struct cl_spool_dest *e = sp->dests; e; e = e->next)
        if (strcmp(e->name, name) == 0)
            d = e;
    if (d == NULL)
        d = dest_new(sp, name);
    if (d == NULL || d->fd >= 0) {  /* no memory, or two files for one server */
        free(data);
        close(fd);
        return;
    }
    uint64_t off = (uint64_t)(nl + 1 - data), n = 0;
    d->hdr = off;
    for (;;) {
        struct msg m;
        size_t rs;
        if (record_get(data + off, size - off, &m, &rs) != 1)
            break;
        off += rs;
        n++;
    }
    if (off < size && ftruncate(fd, (off_t)off) < 0) {
        free(data);
        close(fd);
        d->hdr = 0;
        return;
    }
    free(data);
    d->fd = fd;
    d->head = d->hdr;
    d->end = off;
    atomic_store(&d->depth, n);
}

static void *syncer_main(void *arg) {
    struct cellar_spool *sp = arg;
    pthread_mutex_lock(&sp->lock);
    while (!sp->stop) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_nsec += SYNC_MS * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&sp->wake, &sp->lock, &t);
        /* dests are only ever added, at the head: walking them unlocked is safe */
        struct cl_spool_dest *first = sp->dests;
        pthread_mutex_unlock(&sp->lock);
        for (struct cl_spool_dest *d = first; d; d = d->next) {
            if (!atomic_exchange(&d->dirty, false))
                continue;
            pthread_mutex_lock(&d->lock);
            int fd = d->fd >= 0 ? dup(d->fd) : -1;
            pthread_mutex_unlock(&d->lock);
            if (fd >= 0) {
                if (fdatasync(fd) != 0)
                    atomic_store(&d->sync_failed, true);
                close(fd);
            }
        }
        pthread_mutex_lock(&sp->lock);
    }
    pthread_mutex_unlock(&sp->lock);
    return NULL;
}

int cellar_spool_open(struct cellar_spool **out, const char *dir, uint64_t max_bytes) {
    *out = NULL;
    struct stat st;
    if (dir == NULL || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK) < 0)
        return CELLAR_EINVAL;
    struct cellar_spool *sp = calloc(1, sizeof(*sp));
    if (sp == NULL || (sp->dir = strdup(dir)) == NULL) {
        free(sp);
        return CELLAR_ENOMEM;
    }
    sp->max_bytes = max_bytes ? max_bytes : CELLAR_SPOOL_MAX_BYTES;
    pthread_mutex_init(&sp->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&sp->wake, &ca);
    pthread_condattr_destroy(&ca);
    DIR *dp = opendir(dir);
    struct dirent *de;
    while (dp && (de = readdir(dp)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 6, ".spool") != 0)
            continue;
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path))
            load_file(sp, path);
    }
    if (dp)
        closedir(dp);
    /* the thread takes no signals: they stay the application's threads' */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&sp->syncer, NULL, syncer_main, sp);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        sp->syncer = 0;
        cellar_spool_close(&sp);
        return CELLAR_ENOMEM;
    }
    *out = sp;
    return CELLAR_OK;
}

void cellar_spool_close(struct cellar_spool **spp) {
    struct cellar_spool *sp = *spp;
    if (sp == NULL)
        return;
    *spp = NULL;
    pthread_mutex_lock(&sp->lock);
    sp->stop = true;
    pthread_cond_signal(&sp->wake);
    pthread_mutex_unlock(&sp->lock);
    if (sp->syncer)
        pthread_join(sp->syncer, NULL);
    struct cl_spool_dest *d = sp->dests;
    while (d) {
        struct cl_spool_dest *next = d->next;
        if (d->fd >= 0) {
            fdatasync(d->fd);
            close(d->fd);
        }
        pthread_mutex_destroy(&d->lock);
        free(d->name);
        free(d->path);
        free(d);
        d = next;
    }
    pthread_cond_destroy(&sp->wake);
    pthread_mutex_destroy(&sp->lock);
    free(sp->dir);
    free(sp);
}

/* The server's spool (made on first use), or NULL out of memory. */
static struct cl_spool_dest *dest_of(struct cellar_spool *sp, const char *name) {
    pthread_mutex_lock(&sp->lock);
    struct cl_spool_dest *d = sp->dests;
    while (d && strcmp(d->name, name) != 0)
        d = d->next;
    if (d == NULL)
        d = dest_new(sp, name);
    pthread_mutex_unlock(&sp->lock);
    return d;
}

/* Makes a file's creation (or a rename) in dir durable: its directory entry fsync'd. */
static void sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* Appends m to d: true once written (the fdatasync follows within SYNC_MS). */
static bool dest_append(struct cl_spool_dest *d, const struct msg *m) {
    size_t size = record_size(m);
    char stack[1024], *rec = size <= sizeof(stack) ? stack : malloc(size);
    if (rec == NULL) {
        atomic_fetch_add(&d->dropped, 1);
        return false;
    }
    record_put(rec, m);
    bool ok = false;
    pthread_mutex_lock(&d->lock);
    if (d->fd < 0) {
        /* a file found at open but not read (no memory, a read error) is kept aside,
           never overwritten */
        int fd = open(d->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST) {
            char aside[4200];
            snprintf(aside, sizeof(aside), "%s.unread-%ld", d->path, (long)time(NULL));
            if (rename(d->path, aside) == 0)
                fd = open(d->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        }
        char hdr[512];
        int n = snprintf(hdr, sizeof(hdr), SPOOL_MAGIC "%s\n", d->name);
        if (fd >= 0 && n > 0 && n < (int)sizeof(hdr) && full_pwrite(fd, hdr, (size_t)n, 0)) {
            d->fd = fd;
            d->hdr = d->head = d->end = (uint64_t)n;
            sync_dir(d->sp->dir);   /* once per file: its name survives a crash */
        } else if (fd >= 0) {
            close(fd);
            unlink(d->path);
        }
    }
    if (d->fd >= 0 && d->end - d->head + size <= d->sp->max_bytes) {
        ok = full_pwrite(d->fd, rec, size, d->end);
        if (ok) {
            d->end += size;
            atomic_fetch_add(&d->depth, 1);
        } else if (ftruncate(d->fd, (off_t)d->end) < 0) {
            /* the torn record is cut off at the next open */
        }
    }
    pthread_mutex_unlock(&d->lock);
    if (rec != stack)
        free(rec);
    if (ok) {
        atomic_fetch_add(&d->appended, 1);
        atomic_store(&d->dirty, true);
    } else {
        atomic_fetch_add(&d->dropped, 1);
    }
    return ok;
}

int cellar_spool_sync(struct cellar_spool *sp) {
    int rc = 0;
    pthread_mutex_lock(&sp->lock);
    struct cl_spool_dest *first = sp->dests;
    pthread_mutex_unlock(&sp->lock);
    for (struct cl_spool_dest *d = first; d; d = d->next) {
        /* every file, dirty or not: the sync thread may have taken the flag and
           not be done with its fdatasync yet */
        atomic_store(&d->dirty, false);
        pthread_mutex_lock(&d->lock);
        if (d->fd >= 0 && fdatasync(d->fd) != 0)
            atomic_store(&d->sync_failed, true);
        pthread_mutex_unlock(&d->lock);
        if (atomic_load(&d->sync_failed))
            rc = -1;
    }
    return rc;
}

void cellar_spool_stats(struct cellar_spool *sp, const char *server,
                        struct cellar_spool_stats *out) {
    *out = (struct cellar_spool_stats){0};
    pthread_mutex_lock(&sp->lock);
    for (struct cl_spool_dest *d = sp->dests; d; d = d->next) {
        if (server && strcmp(server, d->name) != 0)
            continue;
        pthread_mutex_lock(&d->lock);
        out->bytes += d->end - d->head;
        pthread_mutex_unlock(&d->lock);
        out->depth += atomic_load(&d->depth);
        out->appended += atomic_load(&d->appended);
        out->replayed += atomic_load(&d->replayed);
        out->dropped += atomic_load(&d->dropped);
        out->replay_errors += atomic_load(&d->replay_errors);
        out->servers += atomic_load(&d->depth) > 0;
    }
    pthread_mutex_unlock(&sp->lock);
}

/* ---------------------------------------------------------------------- */
/* Spooling a request that failed                                           */
/* ---------------------------------------------------------------------- */

struct spooled {
    struct cl_req q;                /* first: done() finds the rest */
    struct cl_req *parent;
    struct cl_spool_dest *d;
};

static void spooled_done(struct cl_req *q, int status, const struct msg_reply *r) {
    struct spooled *s = (struct spooled *)q;
    struct cl_req *parent = s->parent;
    bool kept = cl_failover_error(status) && dest_append(s->d, &s->q.m);
    free(s);
    if (kept)
        cl_answer_null(parent);
    else
        parent->done(parent, status, r);
}

bool cl_spool_wants(const struct cl_conn *c, const struct msg *m) {
    if (c->spool == NULL)
        return false;
    enum msg_op op = m->op;
    if (op == MSG_META)             /* md, ms, ma as what they do */
        op = m->meta_cmd == 'd' ? MSG_DELETE : m->meta_cmd == 's' ? MSG_SET
           : m->meta_cmd == 'a' ? MSG_INCR : MSG_GET;
    return (c->pool->spool_ops >> op) & 1u;
}

void cl_spool_submit(struct cl_conn *c, struct cl_req *q) {
    struct spooled *s = malloc(sizeof(*s));
    if (s == NULL) {
        cl_conn_submit(c, q);       /* unspooled, rather than not at all */
        return;
    }
    *s = (struct spooled){.q = {.m = q->m, .done = spooled_done}, .parent = q, .d = c->spool};
    s->q.m.meta_quiet = false;      /* the answer decides whether to spool */
    cl_conn_submit(c, &s->q);
}

/* ---------------------------------------------------------------------- */
/* Replay                                                                   */
/* ---------------------------------------------------------------------- */

/*
 * The server may not have done it: the failures a request was spooled for
 * (a SERVER_ERROR too: a router answers so while its backend is down).
 */
static bool again_later(int status) {
    return cl_failover_error(status) || status == CELLAR_ENOMEM;
}

/*
 * Moves the records not yet replayed, [head, end), to the front (under
 * d->lock, by the claimer): the destination lies before the source, so a
 * copy front to back never overwrites what it has still to read.
 */
static void compact(struct cl_spool_dest *d) {
    char buf[65536];
    uint64_t from = d->head, to = d->hdr;
    while (from < d->end) {
        size_t n = d->end - from < sizeof(buf) ? (size_t)(d->end - from) : sizeof(buf);
        if (full_pread(d->fd, buf, n, from) != (ssize_t)n || !full_pwrite(d->fd, buf, n, to))
            return;                 /* left as it was: head and end still hold */
        from += n;
        to += n;
    }
    if (fdatasync(d->fd) != 0 || ftruncate(d->fd, (off_t)to) != 0)
        return;
    d->head = d->hdr;
    d->end = to;
}

/* Every record of the batch answered: the replay moves past the good ones. */
static void batch_done(struct cl_replay *rp) {
    struct cl_spool_dest *d = rp->d;
    if (rp->good > 0) {
        pthread_mutex_lock(&d->lock);
        d->head = rp->recs[rp->good - 1].end;
        atomic_fetch_sub(&d->depth, rp->good);
        if (d->head == d->end && ftruncate(d->fd, (off_t)d->hdr) == 0)
            d->head = d->end = d->hdr;
        else if (d->head - d->hdr > d->sp->max_bytes / 2)
            compact(d);
        pthread_mutex_unlock(&d->lock);
        atomic_fetch_add(&d->replayed, rp->good);
    }
    if (rp->failed)
        rp->next_ns = clock_mono_ns() + RETRY_NS;
    rp->active = false;
    atomic_store(&d->claimed, false);
}

static void replay_done(struct cl_req *q, int status, const struct msg_reply *r) {
    (void)r;
    struct replay_rec *rr = (struct replay_rec *)q;
    struct cl_replay *rp = rr->rp;
    unsigned i = (unsigned)(rr - rp->recs);
    if (again_later(status)) {
        rp->failed = true;          /* answers may come out of order (one failed at once) */
        if (i < rp->good)
            rp->good = i;
    } else if (status < 0) {
        atomic_fetch_add(&rp->d->replay_errors, 1);
    }
    if (--rp->left == 0)
        batch_done(rp);
}

/*
 * Reads the next records of d from head into rp->buf and makes their
 * requests; returns how many (0: none, or the spool unreadable).
 */
static unsigned read_batch(struct cl_replay *rp) {
    struct cl_spool_dest *d = rp->d;
    pthread_mutex_lock(&d->lock);
    uint64_t head = d->head, end = d->end;
    int fd = d->fd;
    pthread_mutex_unlock(&d->lock);
    if (fd < 0 || head >= end)
        return 0;
    size_t want = end - head < REPLAY_READ ? (size_t)(end - head) : REPLAY_READ;
    for (;;) {
        if (rp->cap < want) {
            char *b = realloc(rp->buf, want);
            if (b == NULL)
                return 0;
            rp->buf = b;
            rp->cap = want;
        }
        ssize_t got = full_pread(fd, rp->buf, want, head);
        if (got < 0)
            return 0;
        size_t off = 0;
        unsigned n = 0;
        while (n < REPLAY_BATCH) {
            struct msg m;
            size_t size;
            int rc = record_get(rp->buf + off, (size_t)got - off, &m, &size);
            if (rc < 0) {           /* damaged since it was checked: drop the rest */
                pthread_mutex_lock(&d->lock);
                if (d->head == head) {
                    atomic_fetch_add(&d->dropped, atomic_load(&d->depth) - n);
                    atomic_store(&d->depth, n);
                    d->end = head + off;
                    if (ftruncate(d->fd, (off_t)d->end) < 0) { /* cut at next open */ }
                }
                pthread_mutex_unlock(&d->lock);
                return n;
            }
            if (rc == 0)
                break;
            struct replay_rec *rr = &rp->recs[n++];
            off += size;
            *rr = (struct replay_rec){.q = {.m = m, .done = replay_done}, .rp = rp,
                                      .end = head + off};
            if (head + off >= end)
                break;
        }
        if (n > 0 || head + off >= end)
            return n;
        /* the first record is larger than what was read: read all of it */
        size_t size;
        struct msg m;
        record_get(rp->buf, (size_t)got, &m, &size);
        if (size == 0 || size <= want || head + size > end)
            return 0;
        want = size;
    }
}

uint64_t cl_spool_tick(struct cl_conn *c, uint64_t now) {
    struct cl_spool_dest *d = c->spool;
    if (d == NULL || atomic_load_explicit(&d->depth, memory_order_relaxed) == 0)
        return 0;
    if (c->state == CL_CONN_DOWN || c->probing)
        return 0;                   /* a probe brings it back first */
    struct cl_replay *rp = c->replay;
    if (rp == NULL) {
        rp = c->replay = calloc(1, sizeof(*rp));
        if (rp == NULL)
            return now + RETRY_NS;
        rp->d = d;
    }
    if (rp->active)
        return 0;                   /* its answers drive it */
    if (now < rp->next_ns)
        return rp->next_ns;
    if (atomic_exchange(&d->claimed, true)) {
        rp->next_ns = now + RETRY_NS;   /* another handle replays it */
        return rp->next_ns;
    }
    unsigned n = read_batch(rp);
    if (n == 0) {
        atomic_store(&d->claimed, false);
        rp->next_ns = now + RETRY_NS;
        return rp->next_ns;
    }
    rp->left = rp->good = n;
    rp->failed = false;
    rp->active = true;
    for (unsigned i = 0; i < n; i++)    /* may answer at once (batch_done inside) */
        cl_conn_submit_tcp(c, &rp->recs[i].q);
    return 0;
}

void cl_spool_attach(struct cellar *h, struct cellar_spool *sp) {
    if (sp != NULL)
        h->spooled = true;
    for (unsigned i = 0; i < h->nconns; i++) {
        struct cl_conn *c = &h->conns[i];
        if (c->replay && c->replay->active)
            continue;               /* its records are on the wire: this one stays */
        cl_spool_detach(c);
        c->spool = sp ? dest_of(sp, c->srv->name) : NULL;
    }
}

void cl_spool_detach(struct cl_conn *c) {
    struct cl_replay *rp = c->replay;
    if (rp && rp->active) {         /* only after the connection failed what it held */
        rp->active = false;
        atomic_store(&rp->d->claimed, false);
    }
    if (rp)
        free(rp->buf);
    free(rp);
    c->replay = NULL;
    c->spool = NULL;
}

void cellar_use_spool(struct cellar *h, struct cellar_spool *sp) {
    cl_spool_attach(h, sp);
}
