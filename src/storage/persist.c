#include "storage/persist.h"

#include "core/hash.h"
#include "storage/store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/*
 * FILE's layout (native byte order; the version says which):
 *
 *   +----------+--------+-----+-------+--------+-----+-------+-- ...
 *   | CELLARMF | ver, 0 | rec | key   | value  | rec | key   |
 *   | 8 bytes  | 4 + 4  | 32  | nkey  | nbytes | 32  | nkey  |
 *   +----------+--------+-----+-------+--------+-----+-------+-- ...
 *
 * The hash is hash_bytes() over each PERSIST_BLOCK bytes of the file in
 * turn, each seeded with the hash of the blocks before it.
 */
static const char file_magic[8] = {'C', 'E', 'L', 'L', 'A', 'R', 'M', 'F'};
#define PERSIST_HEAD 16
#define PERSIST_BLOCK (1u << 20)
#define PERSIST_SEED 0x63656c6c61726d66ull      /* "cellarmf" */

/* The item's state bits in a record (their own values, not item.h's). */
enum {
    REC_FETCHED = 1,
    REC_TOKEN_SENT = 2,
    REC_STALE = 4,
    REC_KEY_BINARY = 8,
};

struct rec {
    uint64_t cas;
    int64_t exptime;                    /* unix time; 0 never */
    uint32_t nbytes, flags;
    uint8_t nkey, state;
    uint8_t pad[6];
};
_Static_assert(sizeof(struct rec) == 32, "a record header is 32 bytes");

static void meta_path(char *out, size_t n, const char *path, const char *ext) {
    snprintf(out, n, "%s.meta%s", path, ext);
}

/* ---- the stop: writing ---- */

struct writer {
    int fd;
    char *buf;                          /* one block */
    size_t n;                           /* bytes in buf */
    uint64_t hash, total, items;
    int err;                            /* errno of the first failed write; 0 none */
    struct iovec *iov;
    int iov_max;
};

static void w_flush(struct writer *w) {
    if (w->n == 0)
        return;
    w->hash = hash_bytes(w->buf, w->n, w->hash);
    for (size_t off = 0; off < w->n && w->err == 0;) {
        ssize_t k = write(w->fd, w->buf + off, w->n - off);
        if (k < 0 && errno != EINTR)
            w->err = errno;
        else if (k > 0)
            off += (size_t)k;
    }
    w->total += w->n;
    w->n = 0;
}

/* Appends bytes, flushing each block as it fills (the hash needs whole blocks). */
static void w_put(struct writer *w, const void *p, size_t n) {
    const char *s = p;
    while (n > 0 && w->err == 0) {
        size_t k = PERSIST_BLOCK - w->n < n ? PERSIST_BLOCK - w->n : n;
        memcpy(w->buf + w->n, s, k);
        w->n += k;
        s += k;
        n -= k;
        if (w->n == PERSIST_BLOCK)
            w_flush(w);
    }
}

static void save_one(const struct engine_dump_item *d, void *arg) {
    struct writer *w = arg;
    const struct item *it = d->it;
    struct rec r = {
        .cas = d->cas,
        .exptime = d->exptime,
        .nbytes = d->nbytes,
        .flags = d->flags,
        .nkey = (uint8_t)d->nkey,
        .state = (uint8_t)((d->fetched ? REC_FETCHED : 0) |
                           (item_has(it, ITEM_TOKEN_SENT) ? REC_TOKEN_SENT : 0) |
                           (item_has(it, ITEM_STALE) ? REC_STALE : 0) |
                           (item_has(it, ITEM_KEY_BINARY) ? REC_KEY_BINARY : 0)),
    };
    w_put(w, &r, sizeof(r));
    w_put(w, d->key, d->nkey);
    int n = engine_item_iov(it, w->iov, w->iov_max);
    for (int i = 0; i < n; i++)
        w_put(w, w->iov[i].iov_base, w->iov[i].iov_len);
    w->items++;
}

/* The text of FILE.meta, its check line included; its length. */
static int meta_format(char *out, size_t n, const struct persist_meta *m) {
    int k = snprintf(out, n,
                     "cellar memory file %d\n"
                     "items %" PRIu64 "\n"
                     "bytes %" PRIu64 "\n"
                     "hash %016" PRIx64 "\n"
                     "maxbytes %" PRIu64 "\n"
                     "item_size_max %" PRIu32 "\n"
                     "use_cas %d\n"
                     "hashpower %" PRIu32 "\n"
                     "cas %" PRIu64 "\n"
                     "saved %" PRId64 "\n"
                     "storage %s\n",
                     PERSIST_VERSION, m->items, m->bytes, m->hash, m->maxbytes, m->item_size_max,
                     m->use_cas ? 1 : 0, m->hashpower, m->cas, m->saved, m->storage);
    if (k < 0 || (size_t)k >= n)
        return -1;
    int c = snprintf(out + k, n - (size_t)k, "check %016" PRIx64 "\n",
                     hash_bytes(out, (size_t)k, PERSIST_SEED));
    return c < 0 || (size_t)(k + c) >= n ? -1 : k + c;
}

static bool write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/*
 * The old FILE.meta goes first, so that from here until the new one is
 * renamed in, a crash leaves a FILE that no start will read.
 */
bool persist_save(struct engine *e, const char *path, uint64_t *items, char *err, size_t errlen) {
    char meta[PATH_MAX], tmp[PATH_MAX];
    meta_path(meta, sizeof(meta), path, "");
    meta_path(tmp, sizeof(tmp), path, ".tmp");
    *items = 0;
    if (unlink(meta) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove %s: %s", meta, strerror(errno));
        return false;
    }
    struct writer w = {.hash = PERSIST_SEED, .iov_max = engine_item_iov_max(e)};
    w.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (w.fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return false;
    }
    w.buf = malloc(PERSIST_BLOCK);
    w.iov = calloc((size_t)w.iov_max, sizeof(*w.iov));
    if (w.buf == NULL || w.iov == NULL)
        w.err = ENOMEM;
    uint32_t head[2] = {PERSIST_VERSION, 0};
    w_put(&w, file_magic, sizeof(file_magic));
    w_put(&w, head, sizeof(head));
    struct engine_stats st;
    engine_stats(e, &st);
    uint64_t cursor;
    engine_dump_begin(e, &cursor);
    while (w.err == 0 && engine_dump_step(e, &cursor, 4096, save_one, &w))
        ;
    engine_dump_end(e);
    w_flush(&w);
    if (w.err == 0 && fdatasync(w.fd) != 0)
        w.err = errno;
    if (close(w.fd) != 0 && w.err == 0)
        w.err = errno;
    free(w.buf);
    free(w.iov);
    if (w.err != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(w.err));
        return false;
    }

    struct persist_meta m = {
        .items = w.items,
        .bytes = w.total,
        .hash = w.hash,
        .maxbytes = e->cfg.mem_limit,
        .item_size_max = e->cfg.item_size_max,
        .use_cas = e->cfg.use_cas,
        .hashpower = st.hash_power_level,
        .cas = atomic_load_explicit(&e->cas, memory_order_relaxed),
        .saved = atomic_load_explicit(&e->started, memory_order_relaxed) + expire_now(e),
    };
    snprintf(m.storage, sizeof(m.storage), "%s", e->seg != NULL ? "seg" : "slab");
    char text[1024];
    int len = meta_format(text, sizeof(text), &m);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = len > 0 && fd >= 0 && write_all(fd, text, (size_t)len) && fsync(fd) == 0;
    int saved_errno = errno;
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    if (ok && rename(tmp, meta) != 0) {
        saved_errno = errno;
        ok = false;
    }
    if (!ok) {
        unlink(tmp);
        snprintf(err, errlen, "cannot write %s: %s", meta, strerror(saved_errno));
        return false;
    }
    *items = w.items;
    return true;
}

bool persist_usable(const char *path, char *err, size_t errlen) {
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open the memory file %s: %s", path, strerror(errno));
        return false;
    }
    close(fd);
    return true;
}

/* ---- the start: reading ---- */

/* Reads "name value\n" at *p into *v (a number in base); false if the line is not that. */
static bool meta_num(const char **p, const char *name, int base, uint64_t *v) {
    size_t n = strlen(name);
    if (strncmp(*p, name, n) != 0 || (*p)[n] != ' ')
        return false;
    const char *s = *p + n + 1;
    if (*s < '0' || *s > (base == 16 ? 'f' : '9'))
        return false;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, base);
    if (errno != 0 || *end != '\n')
        return false;
    *v = x;
    *p = end + 1;
    return true;
}

static bool meta_parse(const char *text, size_t len, struct persist_meta *m) {
    const char *check = NULL;
    for (const char *s = text; s < text + len; s = strchr(s, '\n') + 1) {
        if (strncmp(s, "check ", 6) == 0)
            check = s;
        if (strchr(s, '\n') == NULL)
            return false;
    }
    uint64_t want;
    const char *c = check;
    if (check == NULL || !meta_num(&c, "check", 16, &want) || c != text + len ||
        hash_bytes(text, (size_t)(check - text), PERSIST_SEED) != want)
        return false;
    const char *p = text;
    uint64_t ver, use_cas, ismax, hp, saved;
    if (strncmp(p, "cellar memory ", 14) != 0)
        return false;
    p += 14;
    if (!meta_num(&p, "file", 10, &ver) || ver != PERSIST_VERSION ||
        !meta_num(&p, "items", 10, &m->items) || !meta_num(&p, "bytes", 10, &m->bytes) ||
        !meta_num(&p, "hash", 16, &m->hash) || !meta_num(&p, "maxbytes", 10, &m->maxbytes) ||
        !meta_num(&p, "item_size_max", 10, &ismax) || ismax > UINT32_MAX ||
        !meta_num(&p, "use_cas", 10, &use_cas) || use_cas > 1 ||
        !meta_num(&p, "hashpower", 10, &hp) || hp > 32 || !meta_num(&p, "cas", 10, &m->cas) ||
        !meta_num(&p, "saved", 10, &saved) || saved > INT64_MAX)
        return false;
    m->item_size_max = (uint32_t)ismax;
    m->use_cas = use_cas != 0;
    m->hashpower = (uint32_t)hp;
    m->saved = (int64_t)saved;
    if (strncmp(p, "storage ", 8) != 0)
        return false;
    const char *nl = strchr(p, '\n');
    size_t sn = (size_t)(nl - p - 8);
    if (sn == 0 || sn >= sizeof(m->storage))
        return false;
    memcpy(m->storage, p + 8, sn);
    m->storage[sn] = '\0';
    return nl + 1 == check;
}

enum persist_check persist_check(const char *path, const struct engine_config *cfg,
                                 struct persist_meta *m, char *why, size_t whylen) {
    char meta[PATH_MAX];
    meta_path(meta, sizeof(meta), path, "");
    *m = (struct persist_meta){0};
    int fd = open(meta, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        snprintf(why, whylen, "no metadata save file");
        return PERSIST_NONE;
    }
    char text[1024];
    ssize_t len = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
    int rerr = errno;
    if (fd >= 0)
        close(fd);
    if (len < 0) {
        snprintf(why, whylen, "cannot read %s: %s", meta, strerror(rerr));
        return PERSIST_CORRUPT;
    }
    text[len] = '\0';
    if ((size_t)len == sizeof(text) - 1 || strlen(text) != (size_t)len ||
        !meta_parse(text, (size_t)len, m)) {
        snprintf(why, whylen, "corrupt metadata file %s", meta);
        return PERSIST_CORRUPT;
    }
    unlink(meta);
    /* what would lose or change items that were stored: memcached's checks, less strict */
    if (cfg->mem_limit < m->maxbytes)
        snprintf(why, whylen, "memory limit %zu is below the saved cache's %" PRIu64,
                 cfg->mem_limit, m->maxbytes);
    else if (cfg->item_size_max < m->item_size_max)
        snprintf(why, whylen, "item size max %" PRIu32 " is below the saved cache's %" PRIu32,
                 cfg->item_size_max, m->item_size_max);
    else if (cfg->use_cas != m->use_cas)
        snprintf(why, whylen, "CAS is %s, the saved cache had it %s", cfg->use_cas ? "on" : "off",
                 m->use_cas ? "on" : "off");
    else
        return PERSIST_OK;
    return PERSIST_MISMATCH;
}

/* The record at off in [p, p + size), or NULL when it does not fit or is not one. */
static const struct rec *rec_at(const char *p, size_t size, size_t off, struct rec *r) {
    if (size - off < sizeof(*r))
        return NULL;
    memcpy(r, p + off, sizeof(*r));
    if (r->nkey == 0 || r->nkey > ENGINE_KEY_MAX ||
        size - off - sizeof(*r) < (uint64_t)r->nkey + r->nbytes ||
        (r->state & ~(REC_FETCHED | REC_TOKEN_SENT | REC_STALE | REC_KEY_BINARY)) != 0 ||
        r->exptime < 0)
        return NULL;
    return r;
}

/*
 * One item back, as a set with its own CAS would store it; its state bits
 * are set once it is linked (the segment back end writes them through).
 * false: no memory for it.
 */
static bool restore_one(struct engine *e, const struct rec *r, const char *key, int iov_max,
                        struct iovec *iov) {
    enum engine_alloc_err aerr;
    uint32_t exptime = expire_realtime(e, r->exptime);
    struct item *it = store_alloc(e, key, r->nkey, r->flags, exptime, r->nbytes, &aerr);
    if (it == NULL)
        return false;
    const char *v = key + r->nkey;
    int n = engine_item_iov(it, iov, iov_max);
    for (int i = 0; i < n; i++) {
        memcpy(iov[i].iov_base, v, iov[i].iov_len);
        v += iov[i].iov_len;
    }
    uint64_t hv = ht_hash(key, r->nkey);
    struct mtx *m = lock_of(e->locks, hv);
    store_prewrite(e, it, r->cas);
    mtx_lock(m);
    bool ok = store_lookup_locked(e, key, r->nkey, hv) == NULL &&
              store_link_locked(e, it, hv, r->cas);
    if (ok && r->state != 0) {
        if (r->state & REC_FETCHED)
            item_flag_set(it, ITEM_FETCHED);
        if (r->state & REC_TOKEN_SENT)
            item_flag_set(it, ITEM_TOKEN_SENT);
        if (r->state & REC_STALE)
            item_flag_set(it, ITEM_STALE);
        if (r->state & REC_KEY_BINARY)
            item_flag_set(it, ITEM_KEY_BINARY);
        store_sync_locked(e, it, hv);
    }
    mtx_unlock(m);
    store_prewrite_drop(e, it);
    store_unref(e, it);
    return ok;
}

/*
 * Three passes over the mapped file: its hash, its records' shapes, then
 * the stores, so that nothing is stored from a file found wrong.
 */
bool persist_restore(struct engine *e, const char *path, const struct persist_meta *m,
                     uint64_t *restored, uint64_t *dropped, char *err, size_t errlen) {
    *restored = *dropped = 0;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return false;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size != m->bytes || m->bytes < PERSIST_HEAD) {
        snprintf(err, errlen, "%s is %lld bytes, its metadata says %" PRIu64, path,
                 (long long)sb.st_size, m->bytes);
        close(fd);
        return false;
    }
    size_t size = (size_t)m->bytes;
    char *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "cannot map %s: %s", path, strerror(errno));
        close(fd);
        return false;
    }
    madvise(p, size, MADV_SEQUENTIAL);
    bool ok = false;
    uint64_t h = PERSIST_SEED, count = 0;
    for (size_t off = 0; off < size; off += PERSIST_BLOCK)
        h = hash_bytes(p + off, size - off < PERSIST_BLOCK ? size - off : PERSIST_BLOCK, h);
    uint32_t head[2];
    memcpy(head, p + sizeof(file_magic), sizeof(head));
    struct rec r;
    size_t off = PERSIST_HEAD;
    if (h != m->hash || memcmp(p, file_magic, sizeof(file_magic)) != 0 ||
        head[0] != PERSIST_VERSION) {
        snprintf(err, errlen, "%s is damaged (its hash or header is not what was written)", path);
        goto out;
    }
    while (off < size && rec_at(p, size, off, &r) != NULL) {
        off += sizeof(r) + r.nkey + r.nbytes;
        count++;
    }
    if (off != size || count != m->items) {
        snprintf(err, errlen, "%s is damaged (record %" PRIu64 " at byte %zu)", path, count, off);
        goto out;
    }
    int iov_max = engine_item_iov_max(e);
    struct iovec *iov = calloc((size_t)iov_max, sizeof(*iov));
    if (iov == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    int64_t now = atomic_load_explicit(&e->started, memory_order_relaxed) + expire_now(e);
    for (off = PERSIST_HEAD; off < size; off += sizeof(r) + r.nkey + r.nbytes) {
        rec_at(p, size, off, &r);
        if (r.exptime != 0 && r.exptime <= now)
            continue;       /* expired while stopped */
        if (restore_one(e, &r, p + off + sizeof(r), iov_max, iov))
            (*restored)++;
        else
            (*dropped)++;
    }
    free(iov);
    uint64_t cas = atomic_load_explicit(&e->cas, memory_order_relaxed);
    if (m->cas > cas)
        atomic_store_explicit(&e->cas, m->cas, memory_order_relaxed);
    ok = true;
out:
    munmap(p, size);
    /* the items are in memory now: give the file's space back (on a tmpfs it
       is memory too); if that fails it is only space */
    if (ok && ftruncate(fd, 0) != 0)
        snprintf(err, errlen, "cannot truncate %s: %s", path, strerror(errno));
    close(fd);
    return ok;
}
