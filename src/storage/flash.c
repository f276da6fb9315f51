/*
 * flash.c -- the flash tier's page store (flash.h): files cut into pages,
 * an open page and a write buffer per bucket, and page versions that tell
 * a reader when its record died.
 *
 *   flash_write(b), the writer                 flash_read(loc), any thread
 *     | record copied past the window's end,     | locked: page's version == loc's?
 *     | then published (used += rec) locked      |   no: FLASH_GONE
 *     v                                          | in a window not yet on file?
 *   wbuf[b]: [ window: page offsets start ..     |   yes: copy it out, locked
 *              start + used, not yet on file ]   | else: unlocked preadv, then
 *     | full: pwrite(window), no lock held;      |   locked: version still loc's?
 *     |   the window stays readable from memory  v
 *     | then, locked: start += used, used = 0  CRC-32C of what was read == loc's?
 *     v
 *   page full: write the window, close the page; open the lowest free
 *   page, else take back the closed page of lowest version (evicted)
 *
 * Why the window is safe to read while it is written out: only the writer
 * changes a buffer, and it does the pwrite itself, so during the pwrite
 * nobody writes the buffer's bytes; the window is marked as on the file
 * (locked) only once the pwrite has returned.  New records are copied
 * past `used`, where no reader looks, and become visible when `used`
 * grows under the mutex.  A reader of the file rechecks the version after
 * its pread: a page taken back gets its new version (locked) before the
 * writer writes a byte of its new life, so bytes of a newer life are
 * never returned as the old record's.
 *
 * Accounting: a page's bytes_used is what its live records charge, each
 * its value bytes plus the 9-byte frame head (len, crc, nkey).  The key
 * and the pad are not charged, because a location does not carry nkey and
 * flash_release() must drop what flash_write() added.
 */
#include "storage/flash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/hash.h"

#define FLASH_HEAD 9u           /* a record's len (u32), crc (u32), nkey (u8) */
#define FLASH_WBUF_ALIGN 4096   /* for O_DIRECT later */

struct flash_page {
    uint64_t version;           /* 0: free, and no location reads it */
    uint64_t bytes_used;        /* charged by live records (see above) */
    uint64_t objects;           /* live records */
    uint64_t foff;              /* where the page starts in its file */
    uint32_t fill;              /* end of the records of this life */
    int fd;
    unsigned bucket;
    bool free, open;
};

/* A bucket's write buffer: buf[0..used) holds page offsets start..start+used. */
struct flash_wbuf {
    char *buf;
    int page;                   /* the bucket's open page; -1: none */
    uint32_t start;             /* page offset of buf[0] */
    uint32_t used;              /* bytes of records not yet on the file */
};

struct flash {
    pthread_mutex_t mu;         /* the pages, the windows' bounds, st */
    struct flash_page *pages;
    unsigned npages, nfree, nfds;
    int fds[FLASH_MAX_FILES];
    uint32_t page_size, wbuf_size;
    uint64_t version_counter;   /* the last version given; never reused */
    bool failing;               /* a write failed: retry before taking more (writer's) */
    struct flash_wbuf wbufs[FLASH_NBUCKETS];
    struct flash_stats st;      /* counters; flash_stats() computes the rest */
};

static uint64_t rec_size(unsigned nkey, uint32_t len) { return (FLASH_HEAD + nkey + (uint64_t)len + 7) & ~7ull; }
static uint64_t rec_charge(uint32_t len) { return (uint64_t)len + FLASH_HEAD; }

/* ---------------------------------------------------------------------- */
/* Create and destroy                                                       */
/* ---------------------------------------------------------------------- */

/*
 * Checks the sizes before a file is touched and returns the number of
 * pages in all, 0 (err filled in) when the configuration cannot work.
 * memcached refuses 65,535 pages or more, since a page id is 16 bits.
 */
static unsigned config_pages(const struct flash_config *cfg, char *err, size_t errlen) {
    if (cfg->nfiles == 0 || cfg->nfiles > FLASH_MAX_FILES) {
        snprintf(err, errlen, "extstore needs 1 to %d files, not %u", FLASH_MAX_FILES, cfg->nfiles);
        return 0;
    }
    if (cfg->page_size == 0 || cfg->wbuf_size == 0 || cfg->page_size % cfg->wbuf_size != 0) {
        snprintf(err, errlen, "extstore page size (%u) must be a multiple of the write buffer size (%u), both above 0",
                 cfg->page_size, cfg->wbuf_size);
        return 0;
    }
    uint64_t total = 0;
    for (unsigned i = 0; i < cfg->nfiles; i++) {
        const struct flash_file *ff = &cfg->files[i];
        uint64_t n = ff->size / cfg->page_size;
        if (ff->path == NULL || n == 0) {
            snprintf(err, errlen, "extstore file %s: %llu bytes, less than one page (%u)",
                     ff->path ? ff->path : "(none)", (unsigned long long)ff->size, cfg->page_size);
            return 0;
        }
        total += n;
    }
    if (total > FLASH_MAX_PAGES) {
        snprintf(err, errlen, "extstore files hold %llu pages, more than %u: use larger pages",
                 (unsigned long long)total, FLASH_MAX_PAGES);
        return 0;
    }
    return (unsigned)total;
}

/*
 * Opens one file, takes its lock and sizes it; -1 with err filled in.
 * flock() rather than memcached's fcntl() lock: flock's lock belongs to
 * the open file, so a second flash_create() in the same process is
 * refused too (fcntl locks are per process).
 * FIXME: a block device cannot be ftruncate()d; it would need its size
 * checked instead (BLKGETSIZE64).
 */
static int file_open(const struct flash_file *ff, char *err, size_t errlen) {
    const char *step = "open", *hint = "";
    int fd = open(ff->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        step = "lock";
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            step = "size";
            if (ftruncate(fd, (off_t)ff->size) == 0)
                return fd;
        } else if (errno == EWOULDBLOCK) {
            hint = " (in use by another extstore)";
        }
    }
    int e = errno;
    snprintf(err, errlen, "failed to open extstore file %s (%s): %s%s", ff->path, step, strerror(e), hint);
    if (fd >= 0)
        close(fd);
    return -1;
}

/*
 * Lays the pages out file by file (page ids run through file 0, then file
 * 1: JBOD, where memcached interleaves the files), every page free.
 */
struct flash *flash_create(const struct flash_config *cfg, char *err, size_t errlen) {
    unsigned npages = config_pages(cfg, err, errlen);
    if (npages == 0)
        return NULL;
    struct flash *f = calloc(1, sizeof(*f));
    if (f == NULL || (f->pages = calloc(npages, sizeof(*f->pages))) == NULL) {
        free(f);
        snprintf(err, errlen, "extstore: out of memory");
        return NULL;
    }
    pthread_mutex_init(&f->mu, NULL);
    f->npages = f->nfree = npages;
    f->page_size = cfg->page_size;
    f->wbuf_size = cfg->wbuf_size;
    for (int b = 0; b < FLASH_NBUCKETS; b++)
        f->wbufs[b].page = -1;
    unsigned id = 0;
    for (unsigned i = 0; i < cfg->nfiles; i++) {
        int fd = file_open(&cfg->files[i], err, errlen);
        if (fd < 0)
            goto fail;
        f->fds[f->nfds++] = fd;
        for (uint64_t j = 0; j < cfg->files[i].size / cfg->page_size; j++, id++)
            f->pages[id] = (struct flash_page){.foff = j * cfg->page_size, .fd = fd, .free = true};
    }
    for (int b = 0; b < FLASH_NBUCKETS; b++) {
        void *p;
        if (posix_memalign(&p, FLASH_WBUF_ALIGN, cfg->wbuf_size) != 0) {
            snprintf(err, errlen, "extstore: out of memory for write buffers");
            goto fail;
        }
        f->wbufs[b].buf = p;
    }
    return f;
fail:
    flash_destroy(&f);
    return NULL;
}

/* Closing a file drops its lock.  Records still in a buffer are lost. */
void flash_destroy(struct flash **fp) {
    struct flash *f = fp ? *fp : NULL;
    if (f == NULL)
        return;
    for (unsigned i = 0; i < f->nfds; i++)
        close(f->fds[i]);
    for (int b = 0; b < FLASH_NBUCKETS; b++)
        free(f->wbufs[b].buf);
    pthread_mutex_destroy(&f->mu);
    free(f->pages);
    free(f);
    *fp = NULL;
}

unsigned flash_pages(const struct flash *f) { return f->npages; }

/* ---------------------------------------------------------------------- */
/* Pages and write buffers (the writer)                                     */
/* ---------------------------------------------------------------------- */

/* A page taken back or reclaimed: no location reads it from now on. */
static void page_free_locked(struct flash *f, struct flash_page *p) {
    p->version = 0;
    p->bytes_used = p->objects = 0;
    p->fill = 0;
    p->free = true;
    f->nfree++;
}

/*
 * The page a bucket opens next: the free page of lowest id, else the
 * closed page of lowest version, evicted whole (its live records are
 * counted as evicted and its locations read as gone once it has its new
 * version).  -1 when no page is free and every page is open (fewer pages
 * than buckets writing).
 */
static int page_take_locked(struct flash *f) {
    int old = -1;
    for (unsigned i = 0; i < f->npages; i++) {
        struct flash_page *p = &f->pages[i];
        if (p->free) {
            p->free = false;
            f->nfree--;
            return (int)i;
        }
        if (!p->open && (old < 0 || p->version < f->pages[old].version))
            old = (int)i;
    }
    if (old >= 0) {
        f->st.page_evictions++;
        f->st.objects_evicted += f->pages[old].objects;
        f->st.bytes_evicted += f->pages[old].bytes_used;
    }
    return old;
}

/* Gives bucket b a page of its own, with a new version (the next of the counter). */
static bool page_open(struct flash *f, struct flash_wbuf *w, enum flash_bucket b) {
    pthread_mutex_lock(&f->mu);
    int id = page_take_locked(f);
    if (id >= 0) {
        struct flash_page *p = &f->pages[id];
        p->version = ++f->version_counter;
        p->bytes_used = p->objects = 0;
        p->fill = 0;
        p->bucket = b;
        p->open = true;
        f->st.page_allocs++;
        w->page = id;
        w->start = w->used = 0;
    }
    pthread_mutex_unlock(&f->mu);
    return id >= 0;
}

/*
 * Writes the window out where it belongs in its page, with no lock held
 * (readers keep copying from it meanwhile; nobody changes its bytes), and
 * only then marks it as on the file.  A failed or short write leaves the
 * window as it was, still served from memory, and puts the tier in its
 * failing state until a retry succeeds (flash_flush()).
 */
static bool wbuf_write(struct flash *f, struct flash_wbuf *w) {
    if (w->page < 0 || w->used == 0)
        return true;
    const struct flash_page *p = &f->pages[w->page];
    ssize_t n = pwrite(p->fd, w->buf, w->used, (off_t)(p->foff + w->start));
    pthread_mutex_lock(&f->mu);
    bool ok = n == (ssize_t)w->used;
    if (ok) {
        w->start += w->used;
        w->used = 0;
    } else {
        f->st.io_errors++;
        f->failing = true;
    }
    pthread_mutex_unlock(&f->mu);
    return ok;
}

/* A page is closed only once all of it is on the file (compaction reads it there). */
static bool page_close(struct flash *f, struct flash_wbuf *w) {
    if (!wbuf_write(f, w))
        return false;
    pthread_mutex_lock(&f->mu);
    f->pages[w->page].open = false;
    w->page = -1;
    w->start = 0;
    pthread_mutex_unlock(&f->mu);
    return true;
}

bool flash_flush(struct flash *f) {
    bool ok = true;
    for (int b = 0; b < FLASH_NBUCKETS; b++)
        ok = wbuf_write(f, &f->wbufs[b]) && ok;
    if (ok)
        f->failing = false;
    return ok;
}

/*
 * Frames the record at dst (head, key, value gathered from iov, zeroed
 * pad) and returns the value's CRC-32C through *crc; false when iov holds
 * fewer than len bytes.
 */
static bool rec_frame(char *dst, const char *key, unsigned nkey, const struct iovec *iov, int iovcnt,
                      uint32_t len, uint32_t *crc) {
    char *v = dst + FLASH_HEAD + nkey;
    uint32_t c = 0, left = len;
    for (int i = 0; i < iovcnt && left > 0; i++) {
        uint32_t n = iov[i].iov_len < left ? (uint32_t)iov[i].iov_len : left;
        if (n == 0)
            continue;               /* an empty piece may have no base */
        memcpy(v, iov[i].iov_base, n);
        c = hash_crc32c(c, v, n);
        v += n;
        left -= n;
    }
    if (left > 0)
        return false;
    uint32_t rlen = FLASH_HEAD + nkey + len;
    memcpy(dst, &rlen, 4);
    memcpy(dst + 4, &c, 4);
    dst[8] = (char)nkey;
    if (nkey > 0)
        memcpy(dst + FLASH_HEAD, key, nkey);
    memset(v, 0, rec_size(nkey, len) - rlen);
    *crc = c;
    return true;
}

/*
 * The record goes into the bucket's window at its end: first the page is
 * closed if the record would pass the page's end, or the window written
 * out if the record would pass the buffer's; then a page is opened if the
 * bucket has none.  The record is framed past `used` with no lock held
 * and published by growing `used` under the mutex.
 */
bool flash_reserve(struct flash *f, enum flash_bucket b, unsigned nkey, uint32_t len) {
    uint64_t rec = rec_size(nkey, len);
    if ((unsigned)b >= FLASH_NBUCKETS || nkey > UINT8_MAX || rec > f->wbuf_size)
        return false;
    if (f->failing && !flash_flush(f))
        return false;
    struct flash_wbuf *w = &f->wbufs[b];
    if (w->page >= 0 && w->start + w->used + rec > f->page_size && !page_close(f, w))
        return false;
    if (w->page >= 0 && w->used + rec > f->wbuf_size && !wbuf_write(f, w))
        return false;
    if (w->page < 0 && !page_open(f, w, b))
        return false;
    return true;
}

bool flash_write(struct flash *f, enum flash_bucket b, const char *key, unsigned nkey,
                 const struct iovec *iov, int iovcnt, uint32_t len, struct flash_loc *loc) {
    if (!flash_reserve(f, b, nkey, len))
        return false;
    struct flash_wbuf *w = &f->wbufs[b];
    uint64_t rec = rec_size(nkey, len);
    uint32_t crc, at = w->used;
    if (!rec_frame(w->buf + at, key, nkey, iov, iovcnt, len, &crc))
        return false;

    struct flash_page *p = &f->pages[w->page];
    pthread_mutex_lock(&f->mu);
    w->used += (uint32_t)rec;
    p->fill = w->start + w->used;
    p->objects++;
    p->bytes_used += rec_charge(len);
    f->st.objects_written++;
    f->st.bytes_written += rec_charge(len);
    pthread_mutex_unlock(&f->mu);
    *loc = (struct flash_loc){.version = p->version, .offset = w->start + at + FLASH_HEAD + nkey,
                              .page = (uint16_t)w->page, .len = len, .crc = crc};
    return true;
}

/* ---------------------------------------------------------------------- */
/* Reads and releases (any thread)                                          */
/* ---------------------------------------------------------------------- */

/* Whether loc names a record of its page's present life (version 0 names none). */
static bool loc_live_locked(const struct flash *f, const struct flash_loc *loc) {
    return loc->page < f->npages && loc->version != 0 && f->pages[loc->page].version == loc->version &&
           (uint64_t)loc->offset + loc->len <= f->page_size;
}

/* The value's bytes when they lie in a window not yet on the file, else NULL. */
static const char *wbuf_find_locked(const struct flash *f, const struct flash_loc *loc) {
    for (int b = 0; b < FLASH_NBUCKETS; b++) {
        const struct flash_wbuf *w = &f->wbufs[b];
        if (w->page == loc->page && loc->offset >= w->start &&
            (uint64_t)loc->offset + loc->len <= (uint64_t)w->start + w->used)
            return w->buf + (loc->offset - w->start);
    }
    return NULL;
}

static size_t iov_room(const struct iovec *iov, int iovcnt) {
    size_t n = 0;
    for (int i = 0; i < iovcnt; i++)
        n += iov[i].iov_len;
    return n;
}

/* Copies len bytes of src into iov, in order. */
static void iov_fill(const struct iovec *iov, int iovcnt, const char *src, size_t len) {
    for (int i = 0; i < iovcnt && len > 0; i++) {
        size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;
        if (n == 0)
            continue;
        memcpy(iov[i].iov_base, src, n);
        src += n;
        len -= n;
    }
}

static uint32_t iov_crc(const struct iovec *iov, int iovcnt, size_t len) {
    uint32_t crc = 0;
    for (int i = 0; i < iovcnt && len > 0; i++) {
        size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;
        crc = hash_crc32c(crc, iov[i].iov_base, n);
        len -= n;
    }
    return crc;
}

/*
 * Reads len bytes at off straight into iov: one preadv per 32 of its
 * entries, each cut to what is left of len.  False on an error or a short
 * read (the file is shorter than it was made).
 */
static bool iov_pread(int fd, uint64_t off, const struct iovec *iov, int iovcnt, size_t len) {
    struct iovec v[32];
    int i = 0;
    while (len > 0) {
        int n = 0;
        size_t want = 0;
        for (; i < iovcnt && n < 32 && want < len; i++) {
            size_t k = iov[i].iov_len < len - want ? iov[i].iov_len : len - want;
            v[n++] = (struct iovec){iov[i].iov_base, k};
            want += k;
        }
        ssize_t r = preadv(fd, v, n, (off_t)off);
        if (r < 0 || (size_t)r != want)
            return false;
        off += want;
        len -= want;
    }
    return true;
}

/*
 * Decides under the mutex where the value is (a window: copied out there
 * and then; the file: read after the lock is dropped), checks its CRC with
 * no lock held, and settles the answer under the mutex again, where the
 * version is checked once more: a page taken back while the file was read
 * makes the record gone, whatever the bytes said.
 */
enum flash_read_result flash_read(struct flash *f, const struct flash_loc *loc, const struct iovec *iov,
                                  int iovcnt) {
    if (iov_room(iov, iovcnt) < loc->len)
        return FLASH_IOERR;
    pthread_mutex_lock(&f->mu);
    if (!loc_live_locked(f, loc)) {
        pthread_mutex_unlock(&f->mu);
        return FLASH_GONE;
    }
    const char *mem = wbuf_find_locked(f, loc);
    const struct flash_page *p = &f->pages[loc->page];
    int fd = p->fd;
    uint64_t off = p->foff + loc->offset;
    if (mem != NULL)
        iov_fill(iov, iovcnt, mem, loc->len);
    pthread_mutex_unlock(&f->mu);

    bool ok = mem != NULL || iov_pread(fd, off, iov, iovcnt, loc->len);
    bool crc_ok = ok && iov_crc(iov, iovcnt, loc->len) == loc->crc;

    enum flash_read_result r = FLASH_OK;
    pthread_mutex_lock(&f->mu);
    if (!ok) {
        f->st.io_errors++;
        r = FLASH_IOERR;
    } else if (!loc_live_locked(f, loc)) {
        r = FLASH_GONE;
    } else if (!crc_ok) {
        r = FLASH_BADCRC;
    } else {
        f->st.objects_read++;
        f->st.bytes_read += rec_charge(loc->len);   /* as bytes_written: value and head */
    }
    pthread_mutex_unlock(&f->mu);
    return r;
}

void flash_release(struct flash *f, const struct flash_loc *loc) {
    pthread_mutex_lock(&f->mu);
    if (loc_live_locked(f, loc)) {
        struct flash_page *p = &f->pages[loc->page];
        uint64_t c = rec_charge(loc->len);
        p->objects -= p->objects > 0;
        p->bytes_used -= c < p->bytes_used ? c : p->bytes_used;
    }
    pthread_mutex_unlock(&f->mu);
}

bool flash_live(struct flash *f, const struct flash_loc *loc) {
    pthread_mutex_lock(&f->mu);
    bool live = loc_live_locked(f, loc);
    pthread_mutex_unlock(&f->mu);
    return live;
}

/* ---------------------------------------------------------------------- */
/* Reclaim and compaction (the writer)                                      */
/* ---------------------------------------------------------------------- */

static bool page_closed(const struct flash_page *p) { return !p->free && !p->open; }

unsigned flash_reclaim(struct flash *f) {
    unsigned n = 0;
    pthread_mutex_lock(&f->mu);
    for (unsigned i = 0; i < f->npages; i++) {
        struct flash_page *p = &f->pages[i];
        if (page_closed(p) && p->objects == 0) {
            page_free_locked(f, p);
            n++;
        }
    }
    f->st.page_reclaims += n;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/*
 * memcached's storage_compact_check(): nothing while more than `under`
 * pages are free; else the oldest closed page (the low-TTL bucket's
 * aside: its records die soon anyway) whose live bytes are under
 * max_frag of a page, that share scaled down by the share of pages free,
 * so that a nearly empty tier compacts only nearly empty pages; failing
 * that, with drop_unread and at most drop_under pages free, the oldest
 * such page at all, *drop set: the caller keeps only what was read.
 */
int flash_compact_pick(struct flash *f, unsigned under, double max_frag, bool drop_unread,
                       unsigned drop_under, bool *drop) {
    int pick = -1, oldest = -1;
    *drop = false;
    pthread_mutex_lock(&f->mu);
    if (f->nfree <= under && f->nfree < f->npages) {
        double limit = (1.0 - (double)f->nfree / f->npages) * max_frag * f->page_size;
        for (unsigned i = 0; i < f->npages; i++) {
            const struct flash_page *p = &f->pages[i];
            if (!page_closed(p) || p->bucket == FLASH_B_LOWTTL)
                continue;
            if (oldest < 0 || p->version < f->pages[oldest].version)
                oldest = (int)i;
            if ((double)p->bytes_used < limit && (pick < 0 || p->version < f->pages[pick].version))
                pick = (int)i;
        }
        if (pick < 0 && drop_unread && f->nfree <= drop_under && oldest >= 0) {
            pick = oldest;
            *drop = true;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return pick;
}

/*
 * A closed page is all on the file (page_close()), so it is read from
 * there whole, up to the end of its records, and walked from buf: fn may
 * write (even take this page back) while the walk goes on.  A head whose
 * len is 0 or runs past the records ends the walk; a record whose value
 * fails its CRC is skipped, so that compaction never gives bad bytes a
 * fresh checksum.
 */
bool flash_compact_scan(struct flash *f, unsigned page, char *buf, flash_scan_fn fn, void *arg) {
    if (page >= f->npages)
        return false;
    pthread_mutex_lock(&f->mu);
    const struct flash_page *p = &f->pages[page];
    bool closed = page_closed(p);
    uint64_t version = p->version, foff = p->foff;
    uint32_t fill = p->fill;
    int fd = p->fd;
    pthread_mutex_unlock(&f->mu);
    if (!closed)
        return false;
    for (uint32_t got = 0; got < fill;) {
        ssize_t n = pread(fd, buf + got, fill - got, (off_t)(foff + got));
        if (n <= 0) {
            pthread_mutex_lock(&f->mu);
            f->st.io_errors++;
            pthread_mutex_unlock(&f->mu);
            return false;
        }
        got += (uint32_t)n;
    }
    for (uint32_t off = 0; fill - off >= FLASH_HEAD;) {
        uint32_t rlen, crc;
        memcpy(&rlen, buf + off, 4);
        memcpy(&crc, buf + off + 4, 4);
        unsigned nkey = (unsigned char)buf[off + 8];
        if (rlen < FLASH_HEAD + nkey || rlen > fill - off)
            break;
        uint32_t voff = off + FLASH_HEAD + nkey, vlen = rlen - FLASH_HEAD - nkey;
        if (hash_crc32c(0, buf + voff, vlen) == crc) {
            struct flash_loc loc = {.version = version, .offset = voff, .page = (uint16_t)page,
                                    .len = vlen, .crc = crc};
            fn(arg, buf + off + FLASH_HEAD, nkey, &loc, buf + voff);
        }
        off += (uint32_t)rec_size(nkey, vlen);
        if (off > fill)
            break;
    }
    return true;
}

void flash_page_free(struct flash *f, unsigned page) {
    pthread_mutex_lock(&f->mu);
    if (page < f->npages && page_closed(&f->pages[page]))
        page_free_locked(f, &f->pages[page]);
    pthread_mutex_unlock(&f->mu);
}

/* ---------------------------------------------------------------------- */
/* Statistics                                                               */
/* ---------------------------------------------------------------------- */

/* Counters as kept; pages, live objects and bytes, and fragmentation summed over the pages now. */
void flash_stats(struct flash *f, struct flash_stats *out) {
    pthread_mutex_lock(&f->mu);
    *out = f->st;
    out->pages_free = f->nfree;
    out->pages_used = f->npages - f->nfree;
    for (unsigned i = 0; i < f->npages; i++) {
        const struct flash_page *p = &f->pages[i];
        out->objects_used += p->objects;
        out->bytes_used += p->bytes_used;
        if (page_closed(p))
            out->bytes_fragmented += f->page_size - (p->bytes_used < f->page_size ? p->bytes_used : f->page_size);
    }
    pthread_mutex_unlock(&f->mu);
    out->limit_maxbytes = (uint64_t)f->npages * f->page_size;
    out->page_size = f->page_size;
}

void flash_page_infos(struct flash *f, struct flash_page_info *info) {
    pthread_mutex_lock(&f->mu);
    for (unsigned i = 0; i < f->npages; i++) {
        const struct flash_page *p = &f->pages[i];
        info[i] = (struct flash_page_info){.version = p->version, .bytes_used = p->bytes_used,
                                           .objects = p->objects, .bucket = p->bucket,
                                           .free_bucket = 0, .free = p->free, .open = p->open};
    }
    pthread_mutex_unlock(&f->mu);
}
