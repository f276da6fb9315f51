/*
 * test_flash.c -- the flash tier's page store (storage/flash.h).
 *
 * Every test makes its files in one fresh directory under /tmp (mkdtemp
 * in main, emptied and removed at the end), with small pages: 8 KiB
 * pages of two 4 KiB write buffers, so a page holds a few dozen records
 * and rollover, eviction and compaction happen within a test.  Faults are
 * made from outside: bytes changed and the file cut short behind the
 * store's back, and RLIMIT_FSIZE to make a pwrite fail.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/hash.h"
#include "harness.h"
#include "storage/flash.h"

#define PAGE 8192u
#define WBUF 4096u

static char dir[] = "/tmp/test_flash.XXXXXX";
static unsigned file_seq;

struct fx {
    struct flash_config cfg;
    char path[FLASH_MAX_FILES][96];
    char err[256];
};

/* A flash tier on nfiles new files of size bytes each. */
static struct flash *fx_open(struct fx *x, unsigned nfiles, uint64_t size, uint32_t page, uint32_t wbuf) {
    memset(x, 0, sizeof(*x));
    for (unsigned i = 0; i < nfiles; i++) {
        snprintf(x->path[i], sizeof(x->path[i]), "%s/f%u", dir, file_seq++);
        x->cfg.files[i] = (struct flash_file){x->path[i], size};
    }
    x->cfg.nfiles = nfiles;
    x->cfg.page_size = page;
    x->cfg.wbuf_size = wbuf;
    struct flash *f = flash_create(&x->cfg, x->err, sizeof(x->err));
    if (f == NULL)
        fprintf(stderr, "  flash_create: %s\n", x->err);
    return f;
}

/* Value i: its length and bytes follow from i alone, so a reader can check any of them. */
static uint32_t val_len(unsigned i) { return 1 + (i * 37) % 900; }
static void val_fill(char *v, unsigned i, uint32_t len) {
    for (uint32_t j = 0; j < len; j++)
        v[j] = (char)(i * 131 + j * 7 + (j >> 8));
}

static bool put(struct flash *f, enum flash_bucket b, const char *key, const char *v, uint32_t len,
                struct flash_loc *loc) {
    struct iovec iov = {(void *)v, len};
    return flash_write(f, b, key, (unsigned)strlen(key), &iov, 1, len, loc);
}

/* Record i of the 100-byte test values, with key "k<i>". */
static bool put_n(struct flash *f, enum flash_bucket b, unsigned i, struct flash_loc *loc) {
    char key[16], v[100];
    snprintf(key, sizeof(key), "k%03u", i);
    val_fill(v, i, sizeof(v));
    return put(f, b, key, v, sizeof(v), loc);
}

/* Reads loc and checks its bytes are value i's: FLASH_OK only when they are. */
static enum flash_read_result get_n(struct flash *f, const struct flash_loc *loc, unsigned i) {
    char got[1024], want[1024];
    struct iovec iov = {got, loc->len};
    enum flash_read_result r = flash_read(f, loc, &iov, 1);
    val_fill(want, i, loc->len);
    if (r == FLASH_OK && memcmp(got, want, loc->len) != 0)
        return FLASH_BADCRC;
    return r;
}

static struct flash_stats stats_of(struct flash *f) {
    struct flash_stats st;
    flash_stats(f, &st);
    return st;
}

/* Record bytes of a 4-byte key and a 100-byte value: 9 + 4 + 100, padded to 8. */
#define REC100 120u
#define PER_WBUF (WBUF / REC100)                  /* 34 */
#define PER_PAGE (2 * PER_WBUF)                   /* 68: the second window ends the page */

TEST(round_trip_from_buffer_then_file) {
    struct fx x;
    struct flash *f = fx_open(&x, 1, 4 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    ASSERT_EQ(flash_pages(f), 4);
    struct flash_loc loc[3];
    for (unsigned i = 0; i < 3; i++)
        ASSERT(put_n(f, FLASH_B_DEFAULT, i, &loc[i]));
    ASSERT_U64(loc[0].version, 1);
    ASSERT_EQ(loc[0].page, 0);
    ASSERT_EQ(loc[0].offset, 9 + 4);
    ASSERT_EQ(loc[1].offset, REC100 + 9 + 4);
    ASSERT_EQ(loc[0].len, 100);
    char v[100];
    val_fill(v, 0, 100);
    ASSERT_U64(loc[0].crc, hash_crc32c(0, v, 100));

    /* Nothing is on the file yet: these come from the buffer. */
    int fd = open(x.path[0], O_RDONLY);
    char disk[100];
    ASSERT(pread(fd, disk, 100, loc[0].offset) == 100);
    ASSERT(memcmp(disk, v, 100) != 0);
    for (unsigned i = 0; i < 3; i++)
        ASSERT_EQ(get_n(f, &loc[i], i), FLASH_OK);

    ASSERT(flash_flush(f));
    ASSERT(pread(fd, disk, 100, loc[0].offset) == 100);
    ASSERT_MEM(disk, v, 100);
    close(fd);
    for (unsigned i = 0; i < 3; i++)
        ASSERT_EQ(get_n(f, &loc[i], i), FLASH_OK);
    ASSERT(flash_live(f, &loc[2]));

    /* After a flush the window starts past the written records. */
    struct flash_loc l3;
    ASSERT(put_n(f, FLASH_B_DEFAULT, 3, &l3));
    ASSERT_EQ(l3.offset, 3 * REC100 + 9 + 4);
    ASSERT_EQ(get_n(f, &l3, 3), FLASH_OK);

    struct flash_stats st = stats_of(f);
    ASSERT_U64(st.objects_written, 4);
    ASSERT_U64(st.bytes_written, 4 * 109);
    ASSERT_U64(st.objects_read, 7);
    ASSERT_U64(st.bytes_read, 7 * 109);
    ASSERT_U64(st.objects_used, 4);
    ASSERT_U64(st.bytes_used, 4 * 109);
    ASSERT_U64(st.page_allocs, 1);
    ASSERT_U64(st.pages_free, 3);
    ASSERT_U64(st.pages_used, 1);
    ASSERT_U64(st.limit_maxbytes, 4 * PAGE);
    ASSERT_U64(st.page_size, PAGE);
    ASSERT_U64(st.io_errors, 0);
    flash_destroy(&f);
    ASSERT(f == NULL);
    flash_destroy(&f);
}

/* A value gathered from three pieces, read back into three pieces cut elsewhere. */
TEST(multi_iovec_write_and_read) {
    struct fx x;
    struct flash *f = fx_open(&x, 1, 2 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    char v[700];
    val_fill(v, 9, sizeof(v));
    struct iovec in[3] = {{v, 5}, {v + 5, 400}, {v + 405, 295}};
    struct flash_loc loc;
    ASSERT(flash_write(f, FLASH_B_CHUNKED, "multi", 5, in, 3, 700, &loc));
    ASSERT_U64(loc.crc, hash_crc32c(0, v, 700));
    for (int pass = 0; pass < 2; pass++) {
        char a[1], b[300], c[500];
        memset(c, 0, sizeof(c));
        struct iovec out[4] = {{a, 1}, {b, 300}, {NULL, 0}, {c, 500}};
        ASSERT_EQ(flash_read(f, &loc, out, 4), FLASH_OK);
        ASSERT_MEM(a, v, 1);
        ASSERT_MEM(b, v + 1, 300);
        ASSERT_MEM(c, v + 301, 399);
        struct iovec small = {c, 699};   /* less room than the value */
        ASSERT_EQ(flash_read(f, &loc, &small, 1), FLASH_IOERR);
        ASSERT(flash_flush(f));          /* the second pass reads the file */
    }
    flash_destroy(&f);
}

TEST(record_larger_than_a_buffer_refused) {
    struct fx x;
    struct flash *f = fx_open(&x, 1, 2 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    static char v[WBUF];
    memset(v, 'x', sizeof(v));
    struct flash_loc loc, small;
    ASSERT(put(f, FLASH_B_DEFAULT, "s", v, 10, &small));
    ASSERT(!put(f, FLASH_B_DEFAULT, "k", v, WBUF - 9, &loc));    /* 9 + 1 + 4087 > 4096 */
    ASSERT(put(f, FLASH_B_DEFAULT, "k", v, WBUF - 10, &loc));    /* exactly a buffer */
    ASSERT_EQ(loc.offset, 24 + 10);    /* the small one's window went out first */
    char got[WBUF];
    struct iovec out = {got, WBUF - 10};
    ASSERT_EQ(flash_read(f, &small, &out, 1), FLASH_OK);
    ASSERT_MEM(got, v, 10);
    ASSERT_EQ(flash_read(f, &loc, &out, 1), FLASH_OK);
    ASSERT_MEM(got, v, WBUF - 10);
    char key[300];
    memset(key, 'k', sizeof(key));
    struct iovec iov = {v, 1};
    ASSERT(!flash_write(f, FLASH_B_DEFAULT, key, 256, &iov, 1, 1, &loc));
    ASSERT(!flash_write(f, FLASH_B_DEFAULT, "k", 1, &iov, 1, 2, &loc));   /* iov holds less than len */
    ASSERT_U64(stats_of(f).objects_written, 2);
    flash_destroy(&f);
}

/* Records across windows and into a second page: each readable, from memory and from the file. */
TEST(page_rollover) {
    struct fx x;
    struct flash *f = fx_open(&x, 1, 4 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    struct flash_loc loc[PER_PAGE + 5];
    for (unsigned i = 0; i < PER_PAGE + 5; i++) {
        ASSERT(put_n(f, FLASH_B_DEFAULT, i, &loc[i]));
        ASSERT_EQ(loc[i].page, i < PER_PAGE ? 0 : 1);
        ASSERT_U64(loc[i].version, i < PER_PAGE ? 1 : 2);
    }
    ASSERT_EQ(loc[PER_WBUF].offset, PER_WBUF * REC100 + 13);
    ASSERT_EQ(loc[PER_PAGE].offset, 13);
    for (unsigned i = 0; i < PER_PAGE + 5; i++)
        ASSERT_EQ(get_n(f, &loc[i], i), FLASH_OK);
    struct flash_page_info info[4];
    flash_page_infos(f, info);
    ASSERT(!info[0].open && !info[0].free);
    ASSERT(info[1].open && !info[1].free);
    ASSERT(info[2].free && info[3].free);
    ASSERT_U64(info[0].objects, PER_PAGE);
    ASSERT_U64(info[0].bytes_used, PER_PAGE * 109);
    ASSERT_U64(info[1].version, 2);
    struct flash_stats st = stats_of(f);
    ASSERT_U64(st.page_allocs, 2);
    ASSERT_U64(st.bytes_fragmented, PAGE - PER_PAGE * 109);    /* the closed page only */
    flash_destroy(&f);
}

/* With every page used, the page of lowest version is taken back whole. */
TEST(eviction_of_the_oldest_page) {
    struct fx x;
    struct flash *f = fx_open(&x, 1, 3 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    enum { N = 3 * PER_PAGE + 2 };
    struct flash_loc loc[N];
    for (unsigned i = 0; i < N; i++)
        ASSERT(put_n(f, FLASH_B_DEFAULT, i, &loc[i]));
    ASSERT_EQ(loc[N - 1].page, 0);
    ASSERT_U64(loc[N - 1].version, 4);
    for (unsigned i = 0; i < N; i++)
        ASSERT_EQ(get_n(f, &loc[i], i), i < PER_PAGE ? FLASH_GONE : FLASH_OK);
    ASSERT(!flash_live(f, &loc[0]));
    flash_release(f, &loc[0]);          /* gone: changes nothing */
    struct flash_stats st = stats_of(f);
    ASSERT_U64(st.page_evictions, 1);
    ASSERT_U64(st.objects_evicted, PER_PAGE);
    ASSERT_U64(st.bytes_evicted, PER_PAGE * 109);
    ASSERT_U64(st.page_allocs, 4);
    ASSERT_U64(st.objects_used, 2 * PER_PAGE + 2);
    ASSERT_U64(st.pages_free, 0);
    ASSERT_U64(st.io_errors, 0);
    /* Next to go is page 1 (version 2), not page 2. */
    for (unsigned i = N; i < N + PER_PAGE; i++) {
        struct flash_loc l;
        ASSERT(put_n(f, FLASH_B_DEFAULT, i, &l));
    }
    ASSERT_EQ(get_n(f, &loc[PER_PAGE], PER_PAGE), FLASH_GONE);
    ASSERT_U64(stats_of(f).page_evictions, 2);
    flash_destroy(&f);
}

TEST(release_and_reclaim) {
    struct fx x;
    struct flash *f = fx_open(&x, 1, 4 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    struct flash_loc loc[PER_PAGE + 1];
    for (unsigned i = 0; i < PER_PAGE + 1; i++)
        ASSERT(put_n(f, FLASH_B_DEFAULT, i, &loc[i]));
    ASSERT_EQ(flash_reclaim(f), 0);
    for (unsigned i = 0; i < PER_PAGE; i++)
        flash_release(f, &loc[i]);
    flash_release(f, &loc[PER_PAGE]);   /* the open page stays, empty or not */
    struct flash_stats st = stats_of(f);
    ASSERT_U64(st.objects_used, 0);
    ASSERT_U64(st.bytes_used, 0);
    ASSERT_U64(st.bytes_fragmented, PAGE);
    ASSERT(flash_live(f, &loc[0]));     /* released, but not yet taken back */
    ASSERT_EQ(flash_reclaim(f), 1);
    ASSERT(!flash_live(f, &loc[0]));
    ASSERT_EQ(get_n(f, &loc[0], 0), FLASH_GONE);
    ASSERT_EQ(get_n(f, &loc[PER_PAGE], PER_PAGE), FLASH_OK);
    st = stats_of(f);
    ASSERT_U64(st.page_reclaims, 1);
    ASSERT_U64(st.pages_free, 3);
    ASSERT_U64(st.page_evictions, 0);
    /* The freed page is the lowest free one: the next page opened, with a new version. */
    struct flash_loc l;
    ASSERT(put_n(f, FLASH_B_LOWTTL, 0, &l));
    ASSERT_EQ(l.page, 0);
    ASSERT_U64(l.version, 3);
    ASSERT_EQ(get_n(f, &loc[0], 0), FLASH_GONE);
    flash_destroy(&f);
}

struct scan_ctx {
    struct flash *f;
    const struct flash_loc *orig;
    struct flash_loc moved[PER_PAGE];
    unsigned seen, bad;
};

/* Checks each record against what was written and rewrites the even ones to the compaction bucket. */
static void scan_fn(void *arg, const char *key, unsigned nkey, const struct flash_loc *loc, const char *value) {
    struct scan_ctx *c = arg;
    unsigned i = c->seen++;
    char want_key[16], want[100];
    snprintf(want_key, sizeof(want_key), "k%03u", i);
    val_fill(want, i, 100);
    const struct flash_loc *o = &c->orig[i];
    if (i >= PER_PAGE || nkey != 4 || memcmp(key, want_key, 4) != 0 || memcmp(value, want, 100) != 0 ||
        loc->version != o->version || loc->page != o->page || loc->offset != o->offset ||
        loc->len != o->len || loc->crc != o->crc) {
        c->bad++;
        return;
    }
    if (i % 2 == 0) {
        if (!put(c->f, FLASH_B_COMPACT, want_key, value, loc->len, &c->moved[i]))
            c->bad++;
        flash_release(c->f, loc);
    }
}

TEST(compact_pick_scan_free) {
    struct fx x;
    struct flash *f = fx_open(&x, 1, 4 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    struct flash_loc loc[PER_PAGE + 1];
    for (unsigned i = 0; i < PER_PAGE + 1; i++)
        ASSERT(put_n(f, FLASH_B_DEFAULT, i, &loc[i]));
    bool drop = true;
    ASSERT_EQ(flash_compact_pick(f, 10, 0.9, false, 0, &drop), -1);  /* full of live records */
    ASSERT(!drop);
    for (unsigned i = 1; i < PER_PAGE; i += 2)
        flash_release(f, &loc[i]);
    /* half live; 2 of 4 pages free halve the share: 0.9 -> 0.45 of a page */
    ASSERT_EQ(flash_compact_pick(f, 10, 0.9, false, 0, &drop), -1);
    ASSERT_EQ(flash_compact_pick(f, 10, 1.0, false, 0, &drop), 0);   /* 0.5: just over half */
    ASSERT(!drop);
    ASSERT_EQ(flash_compact_pick(f, 1, 1.0, false, 0, &drop), -1);   /* 2 free: more than 1 */
    ASSERT_EQ(flash_compact_pick(f, 10, 0.9, true, 2, &drop), 0);    /* the oldest, to drop */
    ASSERT(drop);
    ASSERT_EQ(flash_compact_pick(f, 10, 0.9, true, 1, &drop), -1);   /* 2 free: more than 1 */

    static char buf[PAGE];
    struct scan_ctx c = {.f = f, .orig = loc};
    ASSERT(!flash_compact_scan(f, 1, buf, scan_fn, &c));   /* open */
    ASSERT(!flash_compact_scan(f, 3, buf, scan_fn, &c));   /* free */
    ASSERT(flash_compact_scan(f, 0, buf, scan_fn, &c));
    ASSERT_EQ(c.bad, 0);
    ASSERT_EQ(c.seen, PER_PAGE);
    ASSERT_EQ(stats_of(f).objects_used, PER_PAGE / 2 + 1);
    flash_page_free(f, 0);
    flash_page_free(f, 1);              /* open: nothing */
    for (unsigned i = 0; i < PER_PAGE; i++)
        ASSERT_EQ(get_n(f, &loc[i], i), FLASH_GONE);
    for (unsigned i = 0; i < PER_PAGE; i += 2) {
        ASSERT_EQ(c.moved[i].page, 2);
        ASSERT_EQ(get_n(f, &c.moved[i], i), FLASH_OK);
    }
    ASSERT(flash_flush(f));
    for (unsigned i = 0; i < PER_PAGE; i += 2)
        ASSERT_EQ(get_n(f, &c.moved[i], i), FLASH_OK);
    ASSERT_EQ(get_n(f, &loc[PER_PAGE], PER_PAGE), FLASH_OK);
    struct flash_stats st = stats_of(f);
    ASSERT_U64(st.pages_free, 2);
    ASSERT_U64(st.page_reclaims, 0);
    ASSERT_U64(st.objects_used, PER_PAGE / 2 + 1);
    struct flash_page_info info[4];
    flash_page_infos(f, info);
    ASSERT(info[0].free);
    ASSERT_U64(info[0].version, 0);
    ASSERT_EQ(info[2].bucket, FLASH_B_COMPACT);
    ASSERT_EQ(info[0].free_bucket, 0);
    /* A freed page reopens with a version it never had. */
    ASSERT(put_n(f, FLASH_B_LOWTTL, 0, &loc[0]));
    ASSERT_EQ(loc[0].page, 0);
    ASSERT_U64(loc[0].version, 4);
    flash_destroy(&f);
}

TEST(changed_bytes_fail_the_crc) {
    struct fx x;
    struct flash *f = fx_open(&x, 1, 2 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    struct flash_loc loc[2];
    ASSERT(put_n(f, FLASH_B_DEFAULT, 0, &loc[0]));
    ASSERT(put_n(f, FLASH_B_DEFAULT, 1, &loc[1]));
    ASSERT(flash_flush(f));
    int fd = open(x.path[0], O_RDWR);
    ASSERT(fd >= 0);
    char c;
    ASSERT(pread(fd, &c, 1, loc[1].offset + 50) == 1);
    c ^= 0x10;
    ASSERT(pwrite(fd, &c, 1, loc[1].offset + 50) == 1);
    close(fd);
    ASSERT_EQ(get_n(f, &loc[0], 0), FLASH_OK);
    ASSERT_EQ(get_n(f, &loc[1], 1), FLASH_BADCRC);
    ASSERT_U64(stats_of(f).objects_read, 1);
    ASSERT_U64(stats_of(f).io_errors, 0);
    flash_destroy(&f);
}

TEST(file_cut_short_is_an_io_error) {
    struct fx x;
    struct flash *f = fx_open(&x, 1, 2 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    struct flash_loc loc[2];
    ASSERT(put_n(f, FLASH_B_DEFAULT, 0, &loc[0]));
    ASSERT(put_n(f, FLASH_B_DEFAULT, 1, &loc[1]));
    ASSERT(flash_flush(f));
    ASSERT(truncate(x.path[0], loc[1].offset + 10) == 0);
    ASSERT_EQ(get_n(f, &loc[0], 0), FLASH_OK);
    ASSERT_EQ(get_n(f, &loc[1], 1), FLASH_IOERR);
    ASSERT(truncate(x.path[0], 0) == 0);
    ASSERT_EQ(get_n(f, &loc[0], 0), FLASH_IOERR);
    ASSERT_U64(stats_of(f).io_errors, 2);
    flash_destroy(&f);
}

/*
 * RLIMIT_FSIZE at the page's second window: its pwrite fails (EFBIG), the
 * tier refuses writes while the retry fails, the window's records are
 * still read from memory, and all is well once the limit goes back.
 */
TEST(failed_write_keeps_the_buffer_and_retries) {
    struct fx x;
    struct flash *f = fx_open(&x, 1, 2 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    struct flash_loc loc[PER_WBUF + 3];
    for (unsigned i = 0; i < PER_WBUF + 2; i++)
        ASSERT(put_n(f, FLASH_B_DEFAULT, i, &loc[i]));    /* the first window went out */
    struct rlimit old, lim;
    ASSERT(getrlimit(RLIMIT_FSIZE, &old) == 0);
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = WBUF;
    ASSERT(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    bool flushed = flash_flush(f);
    bool wrote = put_n(f, FLASH_B_DEFAULT, PER_WBUF + 2, &loc[PER_WBUF + 2]);
    enum flash_read_result r = get_n(f, &loc[PER_WBUF + 1], PER_WBUF + 1);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, was);
    ASSERT(!flushed);
    ASSERT(!wrote);
    ASSERT_EQ(r, FLASH_OK);
    ASSERT_U64(stats_of(f).io_errors, 2);

    ASSERT(put_n(f, FLASH_B_DEFAULT, PER_WBUF + 2, &loc[PER_WBUF + 2]));
    ASSERT_EQ(loc[PER_WBUF + 2].offset, (PER_WBUF + 2) * REC100 + 13);
    ASSERT(flash_flush(f));
    int fd = open(x.path[0], O_RDONLY);
    char disk[100], want[100];
    val_fill(want, PER_WBUF + 1, 100);
    ASSERT(pread(fd, disk, 100, loc[PER_WBUF + 1].offset) == 100);
    close(fd);
    ASSERT_MEM(disk, want, 100);
    for (unsigned i = 0; i < PER_WBUF + 3; i++)
        ASSERT_EQ(get_n(f, &loc[i], i), FLASH_OK);
    ASSERT_U64(stats_of(f).io_errors, 2);
    flash_destroy(&f);
}

TEST(second_create_on_a_file_refused) {
    struct fx x;
    struct flash *f = fx_open(&x, 1, 2 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    char err[256] = "";
    struct flash *g = flash_create(&x.cfg, err, sizeof(err));
    ASSERT(g == NULL);
    ASSERT(strstr(err, "failed to open extstore file") != NULL);
    ASSERT(strstr(err, x.path[0]) != NULL);
    flash_destroy(&f);
    g = flash_create(&x.cfg, err, sizeof(err));
    ASSERT(g != NULL);
    flash_destroy(&g);

    /* The second of two files taken: the first is let go again. */
    struct fx y;
    f = fx_open(&y, 1, 2 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    struct flash_config two = x.cfg;
    two.files[1] = y.cfg.files[0];
    two.nfiles = 2;
    ASSERT(flash_create(&two, err, sizeof(err)) == NULL);
    ASSERT(strstr(err, y.path[0]) != NULL);
    g = flash_create(&x.cfg, err, sizeof(err));
    ASSERT(g != NULL);
    flash_destroy(&g);
    flash_destroy(&f);
}

TEST(bad_sizes_refused) {
    struct fx x;
    ASSERT(fx_open(&x, 1, 2 * PAGE, PAGE, 3000) == NULL);
    ASSERT(strstr(x.err, "multiple") != NULL);
    ASSERT(fx_open(&x, 1, 2 * PAGE, 0, 0) == NULL);
    ASSERT(fx_open(&x, 1, PAGE - 1, PAGE, WBUF) == NULL);
    ASSERT(strstr(x.err, "less than one page") != NULL);
    ASSERT(fx_open(&x, 1, (uint64_t)(FLASH_MAX_PAGES + 1) * PAGE, PAGE, WBUF) == NULL);
    ASSERT(strstr(x.err, "pages") != NULL);
    ASSERT(access(x.path[0], F_OK) != 0);      /* refused before a file was made */
    ASSERT(fx_open(&x, 0, PAGE, PAGE, WBUF) == NULL);
    struct flash *f = fx_open(&x, 2, (uint64_t)FLASH_MAX_PAGES / 2 * PAGE, PAGE, WBUF);
    ASSERT(f != NULL);
    ASSERT_EQ(flash_pages(f), FLASH_MAX_PAGES / 2 * 2);
    flash_destroy(&f);
}

/* Two files: page ids run through the first file's pages, then the second's. */
TEST(jbod_pages_span_files) {
    struct fx x;
    struct flash *f = fx_open(&x, 2, 2 * PAGE + 100, PAGE, WBUF);
    ASSERT(f != NULL);
    ASSERT_EQ(flash_pages(f), 4);
    enum { N = 3 * PER_PAGE + 1 };
    struct flash_loc loc[N];
    for (unsigned i = 0; i < N; i++) {
        ASSERT(put_n(f, FLASH_B_DEFAULT, i, &loc[i]));
        ASSERT_EQ(loc[i].page, i / PER_PAGE);
    }
    ASSERT(flash_flush(f));
    int fd = open(x.path[1], O_RDONLY);
    char disk[100], want[100];
    for (unsigned i = 2 * PER_PAGE; i < N; i++) {
        uint64_t at = (uint64_t)(loc[i].page - 2) * PAGE + loc[i].offset;
        val_fill(want, i, 100);
        ASSERT(pread(fd, disk, 100, (off_t)at) == 100);
        ASSERT_MEM(disk, want, 100);
    }
    close(fd);
    for (unsigned i = 0; i < N; i++)
        ASSERT_EQ(get_n(f, &loc[i], i), FLASH_OK);
    flash_destroy(&f);
}

/*
 * One writer, two readers.  The writer writes values of many lengths into
 * 8 small pages, so pages are taken back all the time, flushes now and
 * then (reads go to the file as well as to the buffer) and reclaims;
 * readers read random earlier records (recent ones, old ones whose page
 * is about to be taken back, any) at least CR times and on until the
 * writer is done (at most 10 CR), and release some.  Every read must be
 * the exact value or FLASH_GONE.  (Without flash_read()'s second version
 * check this failed about half the runs on two cores.)
 */
#define CW 20000
#define CR 30000

struct conc {
    struct flash *f;
    struct flash_loc loc[CW];
    atomic_uint published;
    atomic_bool done;
    atomic_uint ok, gone, bad;
};

static void *conc_writer(void *arg) {
    struct conc *c = arg;
    char key[16], v[1024];
    for (unsigned i = 0; i < CW; i++) {
        uint32_t len = val_len(i);
        snprintf(key, sizeof(key), "c%u", i);
        val_fill(v, i, len);
        if (!put(c->f, i % 3 ? FLASH_B_DEFAULT : FLASH_B_LOWTTL, key, v, len, &c->loc[i]))
            atomic_fetch_add(&c->bad, 1);
        atomic_store_explicit(&c->published, i + 1, memory_order_release);
        if (i % 16 == 15 && !flash_flush(c->f))
            atomic_fetch_add(&c->bad, 1);
        if (i % 200 == 199)
            flash_reclaim(c->f);
    }
    atomic_store(&c->done, true);
    return NULL;
}

struct conc_arg {
    struct conc *c;
    unsigned seed;
};

static void *conc_reader(void *arg) {
    struct conc *c = ((struct conc_arg *)arg)->c;
    unsigned seed = ((struct conc_arg *)arg)->seed;
    for (unsigned n = 0; n < 10 * CR && (n < CR || !atomic_load(&c->done)); n++) {
        unsigned have;
        while ((have = atomic_load_explicit(&c->published, memory_order_acquire)) == 0)
            sched_yield();
        unsigned i = (unsigned)rand_r(&seed) % have;
        if (n % 3 == 0 && have > 64)
            i = have - 1 - (unsigned)rand_r(&seed) % 64;     /* recent: often still in a buffer */
        else if (n % 3 == 1 && have > 400)
            i = have - 150 - (unsigned)rand_r(&seed) % 250;  /* old: its page soon taken back */
        enum flash_read_result r = get_n(c->f, &c->loc[i], i);
        if (r == FLASH_OK) {
            atomic_fetch_add(&c->ok, 1);
            if (n % 8 == 0)
                flash_release(c->f, &c->loc[i]);
        } else if (r == FLASH_GONE) {
            atomic_fetch_add(&c->gone, 1);
        } else {
            atomic_fetch_add(&c->bad, 1);
        }
    }
    return NULL;
}

TEST(concurrent_writer_and_readers) {
    struct fx x;
    static struct conc c;
    memset(&c, 0, sizeof(c));
    c.f = fx_open(&x, 1, 8 * 16384, 16384, WBUF);
    ASSERT(c.f != NULL);
    pthread_t w, r[2];
    struct conc_arg a[2] = {{&c, 1}, {&c, 2}};
    ASSERT(pthread_create(&w, NULL, conc_writer, &c) == 0);
    for (int i = 0; i < 2; i++)
        ASSERT(pthread_create(&r[i], NULL, conc_reader, &a[i]) == 0);
    pthread_join(w, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    struct flash_stats st = stats_of(c.f);
    fprintf(stderr, "  %u ok, %u gone, %llu evictions\n", atomic_load(&c.ok), atomic_load(&c.gone),
            (unsigned long long)st.page_evictions);
    ASSERT_EQ(atomic_load(&c.bad), 0);
    ASSERT(atomic_load(&c.ok) > 0);
    ASSERT(st.page_evictions > 0);
    ASSERT_U64(st.io_errors, 0);
    ASSERT_U64(st.objects_read, atomic_load(&c.ok));
    flash_destroy(&c.f);
}

/* Empties and removes the test directory (its files only: no subfolders are made). */
static void dir_remove(void) {
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    rmdir(dir);
}

int main(void) {
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    int rc = RUN_TESTS();
    dir_remove();
    return rc;
}
