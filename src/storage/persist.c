#include "storage/persist.h"

#include "core/hash.h"
#include "storage/store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/*
 * A part's layout (native byte order; the version says which):
 *
 *   +----------+-----------+-----+-------+--------+-----+-------+-- ...
 *   | CELLARMF | ver, part | rec | key   | value  | rec | key   |
 *   | 8 bytes  | 4 + 4     | 32  | nkey  | nbytes | 32  | nkey  |
 *   +----------+-----------+-----+-------+--------+-----+-------+-- ...
 *
 * The hash is block_hash() over each PERSIST_BLOCK bytes of the file in
 * turn, each seeded with the hash of the blocks before it.
 */
static const char file_magic[8] = {'C', 'E', 'L', 'L', 'A', 'R', 'M', 'F'};
#define PERSIST_HEAD 16
#define PERSIST_BLOCK (1u << 20)
#define PERSIST_SEED 0x63656c6c61726d66ull      /* "cellarmf" */
#define PERSIST_HASHPOWER_MAX 28                /* the most a save asks the next start for */

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

/*
 * The file's hash of one block: four multiply-xorshift lanes over 32-byte
 * strides, independent so that their multiplies overlap (hash_bytes() has
 * one chain, a quarter of the speed over hundreds of megabytes), folded
 * together with the tail by hash_bytes().
 */
static uint64_t block_hash(const char *p, size_t n, uint64_t seed) {
    const uint64_t k = 0x9e3779b97f4a7c15ull;
    uint64_t h[4] = {seed, seed ^ 1, seed ^ 2, seed ^ 3};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, sizeof(w));
        for (int j = 0; j < 4; j++) {
            h[j] = (h[j] ^ w[j]) * k;
            h[j] ^= h[j] >> 29;
        }
    }
    return hash_bytes(p + i, n - i, hash_bytes(h, sizeof(h), seed ^ n));
}

static void meta_path(char *out, size_t n, const char *path, const char *ext) {
    snprintf(out, n, "%s.meta%s", path, ext);
}

/* Part 0 is FILE itself, part i FILE.i. */
static void part_path(char *out, size_t n, const char *path, unsigned i) {
    if (i == 0)
        snprintf(out, n, "%s", path);
    else
        snprintf(out, n, "%s.%u", path, i);
}

/* ---- the stop: writing ---- */

struct writer {
    struct engine *e;
    unsigned part, nparts;
    char path[PATH_MAX];
    pthread_t thread;
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
    w->hash = block_hash(w->buf, w->n, w->hash);
    for (size_t off = 0; off < w->n && w->err == 0;) {
        ssize_t k = write(w->fd, w->buf + off, w->n - off);
        if (k > 0)
            off += (size_t)k;
        else if (k == 0 || errno != EINTR)
            w->err = k == 0 ? EIO : errno;
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
    if (item_has(it, ITEM_FLASH))       /* values on flash do not outlive the process */
        return;
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
    int k = snprintf(out, n, "cellar memory file %d\nitems %" PRIu64 "\nparts %u\n",
                     PERSIST_VERSION, m->items, m->parts);
    for (unsigned i = 0; i < m->parts && k > 0 && (size_t)k < n; i++)
        k += snprintf(out + k, n - (size_t)k, "part %" PRIu64 " %" PRIu64 " %016" PRIx64 "\n",
                      m->part[i].items, m->part[i].bytes, m->part[i].hash);
    if (k < 0 || (size_t)k >= n)
        return -1;
    k += snprintf(out + k, n - (size_t)k,
                     "maxbytes %" PRIu64 "\n"
                     "item_size_max %" PRIu32 "\n"
                     "use_cas %d\n"
                     "hashpower %" PRIu32 "\n"
                     "cas %" PRIu64 "\n"
                     "saved %" PRId64 "\n"
                     "storage %s\n",
                     m->maxbytes, m->item_size_max, m->use_cas ? 1 : 0, m->hashpower, m->cas,
                     m->saved, m->storage);
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

/* One part of a save, on its own thread (part 0 on the caller's). */
static void *save_part(void *arg) {
    struct writer *w = arg;
    w->fd = open(w->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (w->fd < 0) {
        w->err = errno;
        return NULL;
    }
    w->buf = malloc(PERSIST_BLOCK);
    w->iov = calloc((size_t)w->iov_max, sizeof(*w->iov));
    if (w->buf == NULL || w->iov == NULL)
        w->err = ENOMEM;
    uint32_t head[2] = {PERSIST_VERSION, w->part};
    w_put(w, file_magic, sizeof(file_magic));
    w_put(w, head, sizeof(head));
    if (w->err == 0)
        engine_dump_part(w->e, w->part, w->nparts, save_one, w);
    w_flush(w);
    if (w->err == 0 && fdatasync(w->fd) != 0)
        w->err = errno;
    if (close(w->fd) != 0 && w->err == 0)
        w->err = errno;
    free(w->buf);
    free(w->iov);
    return NULL;
}

/*
 * The old FILE.meta goes first, so that from here until the new one is
 * renamed in, a crash leaves parts that no start will read.  Parts beyond
 * nparts that an earlier save left are removed.
 */
bool persist_save(struct engine *e, const char *path, unsigned nparts, uint64_t *items,
                  char *err, size_t errlen) {
    char meta[PATH_MAX], tmp[PATH_MAX];
    meta_path(meta, sizeof(meta), path, "");
    meta_path(tmp, sizeof(tmp), path, ".tmp");
    *items = 0;
    if (nparts < 1)
        nparts = 1;
    if (nparts > PERSIST_PARTS_MAX)
        nparts = PERSIST_PARTS_MAX;
    if (unlink(meta) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove %s: %s", meta, strerror(errno));
        return false;
    }
    struct writer w[PERSIST_PARTS_MAX];
    for (unsigned i = 0; i < PERSIST_PARTS_MAX; i++) {
        w[i] = (struct writer){.e = e, .part = i, .nparts = nparts, .hash = PERSIST_SEED,
                               .iov_max = engine_item_iov_max(e)};
        part_path(w[i].path, sizeof(w[i].path), path, i);
        if (i >= nparts)
            unlink(w[i].path);
    }
    struct engine_stats st;
    engine_stats(e, &st);
    uint64_t cursor;
    engine_dump_begin(e, &cursor);
    unsigned started = 1;
    for (; started < nparts; started++)
        if (pthread_create(&w[started].thread, NULL, save_part, &w[started]) != 0)
            break;
    for (unsigned i = started; i < nparts; i++)
        save_part(&w[i]);       /* no thread for it: here, after part 0 */
    save_part(&w[0]);
    for (unsigned i = 1; i < started; i++)
        pthread_join(w[i].thread, NULL);
    engine_dump_end(e);

    struct persist_meta m = {
        .parts = nparts,
        .maxbytes = e->cfg.mem_limit,
        .item_size_max = e->cfg.item_size_max,
        .use_cas = e->cfg.use_cas,
        .hashpower = st.hash_power_level,   /* raised below to what the items need */
        .cas = atomic_load_explicit(&e->cas, memory_order_relaxed),
        .saved = atomic_load_explicit(&e->started, memory_order_relaxed) + expire_now(e),
    };
    for (unsigned i = 0; i < nparts; i++) {
        if (w[i].err != 0) {
            snprintf(err, errlen, "cannot write %s: %s", w[i].path, strerror(w[i].err));
            return false;
        }
        m.part[i].items = w[i].items;
        m.part[i].bytes = w[i].total;
        m.part[i].hash = w[i].hash;
        m.items += w[i].items;
    }
    snprintf(m.storage, sizeof(m.storage), "%s", e->seg != NULL ? "seg" : "slab");
    /* a table of 2^hashpower buckets for the items (the segment index reports
       none), within what a start accepts */
    while (m.hashpower < PERSIST_HASHPOWER_MAX && ((uint64_t)1 << m.hashpower) < m.items)
        m.hashpower++;
    char text[2048];
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
    *items = m.items;
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

/* Reads a number in base at *p, ended by the character end; false if it is not that. */
static bool meta_word(const char **p, int base, char end, uint64_t *v) {
    const char *s = *p;
    if (*s < '0' || *s > (base == 16 ? 'f' : '9'))
        return false;
    char *e;
    errno = 0;
    unsigned long long x = strtoull(s, &e, base);
    if (errno != 0 || *e != end)
        return false;
    *v = x;
    *p = e + 1;
    return true;
}

/* Reads "name value\n" at *p into *v (a number in base); false if the line is not that. */
static bool meta_num(const char **p, const char *name, int base, uint64_t *v) {
    size_t n = strlen(name);
    if (strncmp(*p, name, n) != 0 || (*p)[n] != ' ')
        return false;
    *p += n + 1;
    return meta_word(p, base, '\n', v);
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
    uint64_t ver, parts, use_cas, ismax, hp, saved, sum = 0;
    if (strncmp(p, "cellar memory ", 14) != 0)
        return false;
    p += 14;
    if (!meta_num(&p, "file", 10, &ver) || ver != PERSIST_VERSION ||
        !meta_num(&p, "items", 10, &m->items) || !meta_num(&p, "parts", 10, &parts) ||
        parts < 1 || parts > PERSIST_PARTS_MAX)
        return false;
    m->parts = (unsigned)parts;
    for (unsigned i = 0; i < m->parts; i++) {
        if (strncmp(p, "part ", 5) != 0)
            return false;
        p += 5;
        if (!meta_word(&p, 10, ' ', &m->part[i].items) ||
            !meta_word(&p, 10, ' ', &m->part[i].bytes) ||
            !meta_word(&p, 16, '\n', &m->part[i].hash))
            return false;
        sum += m->part[i].items;
    }
    if (sum != m->items || !meta_num(&p, "maxbytes", 10, &m->maxbytes) ||
        !meta_num(&p, "item_size_max", 10, &ismax) || ismax > UINT32_MAX ||
        !meta_num(&p, "use_cas", 10, &use_cas) || use_cas > 1 ||
        !meta_num(&p, "hashpower", 10, &hp) || hp > PERSIST_HASHPOWER_MAX ||
        !meta_num(&p, "cas", 10, &m->cas) ||
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
    char text[2048];
    ssize_t len = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
    int rerr = errno;
    if (fd >= 0)
        close(fd);
    if (len < 0) {
        snprintf(why, whylen, "cannot read %s: %s", meta, strerror(rerr));
        return PERSIST_CORRUPT;
    }
    text[len] = '\0';
    /* another format (a newer or older cellard's): not damage, just not ours to read */
    unsigned ver;
    if (sscanf(text, "cellar memory file %u\n", &ver) == 1 && ver != PERSIST_VERSION) {
        unlink(meta);
        snprintf(why, whylen, "%s is format %u; this cellard reads format %d", meta, ver,
                 PERSIST_VERSION);
        return PERSIST_MISMATCH;
    }
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

/* One part of a restore, on its own thread (part 0 on the caller's). */
struct reader {
    struct engine *e;
    const struct persist_meta *m;
    unsigned part;
    char path[PATH_MAX];
    pthread_t thread;
    int fd;
    char *p;                            /* the part, mapped and checked; NULL: not */
    size_t size;
    bool loaded;                        /* every record was a record */
    uint64_t restored, dropped;
    char err[PATH_MAX + 128];
};

/* Maps the part and checks its length and hash; NULL with r->err. */
static char *part_check(struct reader *r, int fd, size_t *size) {
    struct stat sb;
    const uint64_t want = r->m->part[r->part].bytes;
    if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size != want || want < PERSIST_HEAD) {
        snprintf(r->err, sizeof(r->err), "%s is %lld bytes, its metadata says %" PRIu64, r->path,
                 (long long)sb.st_size, want);
        return NULL;
    }
    *size = (size_t)want;
    char *p = mmap(NULL, *size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
        snprintf(r->err, sizeof(r->err), "cannot map %s: %s", r->path, strerror(errno));
        return NULL;
    }
    madvise(p, *size, MADV_SEQUENTIAL);
    uint64_t h = PERSIST_SEED;
    for (size_t off = 0; off < *size; off += PERSIST_BLOCK)
        h = block_hash(p + off, *size - off < PERSIST_BLOCK ? *size - off : PERSIST_BLOCK, h);
    uint32_t head[2];
    memcpy(head, p + sizeof(file_magic), sizeof(head));
    if (h != r->m->part[r->part].hash || memcmp(p, file_magic, sizeof(file_magic)) != 0 ||
        head[0] != PERSIST_VERSION || head[1] != r->part) {
        snprintf(r->err, sizeof(r->err),
                 "%s is damaged (its hash or header is not what was written)", r->path);
        munmap(p, *size);
        return NULL;
    }
    return p;
}

/* Stores a checked part's unexpired records; false with r->err if one is not a record. */
static bool part_load(struct reader *r, const char *p, size_t size) {
    struct engine *e = r->e;
    int iov_max = engine_item_iov_max(e);
    struct iovec *iov = calloc((size_t)iov_max, sizeof(*iov));
    if (iov == NULL) {
        snprintf(r->err, sizeof(r->err), "out of memory");
        return false;
    }
    int64_t now = atomic_load_explicit(&e->started, memory_order_relaxed) + expire_now(e);
    uint64_t count = 0;
    struct rec rc;
    size_t off = PERSIST_HEAD;
    for (; off < size && rec_at(p, size, off, &rc) != NULL;
         off += sizeof(rc) + rc.nkey + rc.nbytes) {
        count++;
        if (rc.exptime != 0 && rc.exptime <= now)
            continue;       /* expired while stopped */
        if (restore_one(e, &rc, p + off + sizeof(rc), iov_max, iov))
            r->restored++;
        else
            r->dropped++;
    }
    free(iov);
    if (off != size || count != r->m->part[r->part].items) {
        /* a part whose hash holds is as written: only a writer's bug gets here */
        snprintf(r->err, sizeof(r->err), "%s is damaged (record %" PRIu64 " at byte %zu)",
                 r->path, count, off);
        return false;
    }
    return true;
}

/* The first pass, a part to a thread: open, map, check. */
static void *restore_check(void *arg) {
    struct reader *r = arg;
    r->fd = open(r->path, O_RDWR | O_CLOEXEC);
    if (r->fd < 0)
        snprintf(r->err, sizeof(r->err), "cannot open %s: %s", r->path, strerror(errno));
    else
        r->p = part_check(r, r->fd, &r->size);
    return NULL;
}

/* The second pass, once every part was found as written: the stores. */
static void *restore_load(void *arg) {
    struct reader *r = arg;
    r->loaded = part_load(r, r->p, r->size);
    return NULL;
}

/* Runs fn on every part, a thread each (inline where no thread could be had). */
static void parts_run(struct reader *r, unsigned n, void *(*fn)(void *)) {
    bool threaded[PERSIST_PARTS_MAX] = {false};
    for (unsigned i = 1; i < n; i++)
        threaded[i] = pthread_create(&r[i].thread, NULL, fn, &r[i]) == 0;
    fn(&r[0]);
    for (unsigned i = 1; i < n; i++) {
        if (threaded[i])
            pthread_join(r[i].thread, NULL);
        else
            fn(&r[i]);
    }
}

/*
 * Two passes over the mapped parts: their hashes, then (once every one
 * held) the stores, so that nothing is stored from a file found changed.
 * The table was sized from the metadata (persist_check()), so it need not
 * grow meanwhile.
 */
bool persist_restore(struct engine *e, const char *path, const struct persist_meta *m,
                     uint64_t *restored, uint64_t *dropped, char *err, size_t errlen) {
    *restored = *dropped = 0;
    struct reader r[PERSIST_PARTS_MAX];
    for (unsigned i = 0; i < m->parts; i++) {
        r[i] = (struct reader){.e = e, .m = m, .part = i, .fd = -1};
        part_path(r[i].path, sizeof(r[i].path), path, i);
    }
    parts_run(r, m->parts, restore_check);
    bool checked = true, loaded = true;
    for (unsigned i = 0; i < m->parts; i++)
        checked = checked && r[i].p != NULL;
    if (checked) {
        parts_run(r, m->parts, restore_load);
        for (unsigned i = 0; i < m->parts; i++) {
            loaded = loaded && r[i].loaded;
            *restored += r[i].restored;
            *dropped += r[i].dropped;
        }
    }
    err[0] = '\0';
    for (unsigned i = 0; i < m->parts; i++) {
        if (err[0] == '\0' && r[i].err[0] != '\0')
            snprintf(err, errlen, "%s", r[i].err);
        if (r[i].p != NULL)
            munmap(r[i].p, r[i].size);
        /* the items are in memory now: give the parts' space back (on a tmpfs
           it is memory too); if that fails it is only space */
        if (checked && loaded && r[i].fd >= 0 && ftruncate(r[i].fd, 0) != 0 && err[0] == '\0')
            snprintf(err, errlen, "cannot truncate %s: %s", r[i].path, strerror(errno));
        if (r[i].fd >= 0)
            close(r[i].fd);
    }
    if (!checked)
        return false;
    if (!loaded) {
        engine_flush(e, 0);     /* what was stored goes: all or nothing */
        *restored = 0;
        return false;
    }
    uint64_t cas = atomic_load_explicit(&e->cas, memory_order_relaxed);
    if (m->cas > cas)
        atomic_store_explicit(&e->cas, m->cas, memory_order_relaxed);
    return true;
}
