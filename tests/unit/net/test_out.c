/*
 * Unit tests for src/net/out: a connection's batched output, written to
 * one end of a socketpair and read back from the other.
 *
 * The writing end gets a small send buffer, so that a batch of a few
 * hundred kilobytes cannot go in one writev(): out_flush() then returns 0
 * (socket full) and the test drains the other end and flushes again, the
 * way a worker does on EV_WRITE.  Everything written is also appended to
 * a plain buffer, and what arrives must equal it byte for byte.
 *
 * Holds are plain tokens; the pool's release() counts them, so a test can
 * see that a hold is let go once, and only when its bytes have left.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "net/out.h"

/* The pool's release(): counts the calls and which holds were let go. */
struct holds {
    int released;
    int per_ref[16];
};

static void count_release(void *ctx, void *ref) {
    struct holds *h = ctx;
    h->released++;
    h->per_ref[(int)(intptr_t)ref]++;
}

/*
 * A non-blocking socketpair: fd[0] writes (with sndbuf bytes of send
 * buffer if sndbuf > 0), fd[1] reads.  SIGPIPE is ignored once, so that a
 * write to a closed peer is an EPIPE for out_flush() to report.
 */
static int pair(int fd[2], int sndbuf) {
    signal(SIGPIPE, SIG_IGN);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) < 0)
        return -1;
    if (sndbuf > 0)
        setsockopt(fd[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    return 0;
}

/* Reads what is there now (without waiting) into buf at *got; returns the bytes read. */
static size_t drain(int fd, char *buf, size_t cap, size_t *got) {
    size_t before = *got;
    while (*got < cap) {
        ssize_t n = read(fd, buf + *got, cap - *got);
        if (n <= 0)
            break;
        *got += (size_t)n;
    }
    return *got - before;
}

/* Deterministic bytes, so that a lost, doubled or reordered piece shows. */
static void fill(char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        p[i] = (char)('a' + (i * 7 + seed) % 26);
}

/* Every kind of append lands in scratch and joins its neighbour in one iovec. */
TEST(appends_merge_into_one_iovec) {
    struct holds h = {0};
    struct out_pool pool = {.release = count_release, .release_ctx = &h, .max = 4};
    struct out o;
    out_init(&o, &pool);
    ASSERT(out_copy(&o, "STORED\r\n", 8));
    ASSERT(out_copy(&o, "STORED\r\n", 8));
    char *p = out_reserve(&o, 64);
    ASSERT(p != NULL);
    memcpy(p, "VALUE k 0 5\r\nxxxx", 17);
    ASSERT(out_commit(&o, p, 13));              /* only the first 13 bytes count */
    ASSERT(out_printf(&o, "%s %d\r\n", "STAT pid", 42));
    ASSERT_EQ(o.niov, 1);
    const char want[] = "STORED\r\nSTORED\r\nVALUE k 0 5\r\nSTAT pid 42\r\n";
    ASSERT_EQ(o.bytes, sizeof(want) - 1);
    ASSERT_EQ(o.iov[0].iov_len, sizeof(want) - 1);
    ASSERT_MEM(o.iov[0].iov_base, want, sizeof(want) - 1);

    /* Bytes elsewhere get their own iovec; adjacent ones join it; scratch after it is new. */
    static const char value[2048] = "0123456789";
    ASSERT(out_add(&o, value, 1000));
    ASSERT(out_add(&o, value + 1000, 1000));
    ASSERT(out_add(&o, value, 0));              /* nothing, no iovec */
    ASSERT_EQ(o.niov, 2);
    ASSERT_EQ(o.iov[1].iov_len, 2000);
    ASSERT(out_copy(&o, "\r\nEND\r\n", 7));
    ASSERT_EQ(o.niov, 3);
    ASSERT_EQ(o.bytes, sizeof(want) - 1 + 2000 + 7);

    int fd[2];
    ASSERT(pair(fd, 0) == 0);
    size_t written = 0;
    ASSERT_EQ(out_flush(&o, fd[0], &written), 1);
    ASSERT_EQ(written, sizeof(want) - 1 + 2007);
    ASSERT(out_empty(&o));
    ASSERT_EQ(o.niov, 0);
    char got[4096];
    size_t n = 0;
    drain(fd[1], got, sizeof(got), &n);
    ASSERT_EQ(n, written);
    ASSERT_MEM(got, want, sizeof(want) - 1);
    ASSERT_MEM(got + sizeof(want) - 1, value, 2000);
    ASSERT_MEM(got + sizeof(want) - 1 + 2000, "\r\nEND\r\n", 7);
    out_deinit(&o);
    out_pool_drain(&pool);
    close(fd[0]);
    close(fd[1]);
}

/*
 * A batch far larger than the send buffer: flushes return 0 while the
 * socket is full, each hold is let go exactly when the last byte of what
 * was added before it has left (not before, and not only at the end), and
 * what arrives is the batch in order.
 */
TEST(partial_writes_resume_in_order_and_holds_wait) {
    struct holds h = {0};
    struct out_pool pool = {.release = count_release, .release_ctx = &h, .max = 64};
    struct out o;
    out_init(&o, &pool);
    enum { BIG = 100000, TOTAL_MAX = 1 << 20 };
    char *big = malloc(BIG), *want = malloc(TOTAL_MAX), *got = malloc(TOTAL_MAX);
    ASSERT(big != NULL && want != NULL && got != NULL);
    fill(big, BIG, 3);
    size_t total = 0, ends[3];
    for (int i = 0; i < 3000; i++) {            /* small replies, copied */
        char line[64];
        int n = snprintf(line, sizeof(line), "VALUE key:%d 0 %d\r\n", i, i % 97);
        ASSERT(out_copy(&o, line, (size_t)n));
        memcpy(want + total, line, (size_t)n);
        total += (size_t)n;
        if (i % 1000 == 999) {                  /* and a large value, pointed at and held */
            int ref = i / 1000;
            ASSERT(out_add(&o, big + ref, BIG - (size_t)ref));
            ASSERT(out_hold(&o, (void *)(intptr_t)ref));
            memcpy(want + total, big + ref, BIG - (size_t)ref);
            total += BIG - (size_t)ref;
            ends[ref] = total;
        }
    }
    ASSERT(out_printf(&o, "END %zu\r\n", total));
    int tail = snprintf(want + total, 64, "END %zu\r\n", total);
    total += (size_t)tail;
    ASSERT_EQ(o.bytes, total);

    int fd[2];
    ASSERT(pair(fd, 4096) == 0);
    size_t n = 0, sent = 0, written;
    int r, partials = 0, early = 0;
    while ((r = out_flush(&o, fd[0], &written)) == 0) {
        sent += written;
        partials++;
        int due = (sent >= ends[0]) + (sent >= ends[1]) + (sent >= ends[2]);
        ASSERT_EQ(h.released, due);             /* let go once its bytes have left */
        early += due > 0 && sent < total;
        ASSERT_EQ(o.bytes, total - sent);
        ASSERT(drain(fd[1], got, TOTAL_MAX, &n) > 0);
        ASSERT(partials < 100000);
    }
    ASSERT_EQ(r, 1);
    sent += written;
    ASSERT(partials > 2);
    ASSERT(early > 0);                          /* some before the batch had all left */
    ASSERT_EQ(sent, total);
    ASSERT_EQ(h.released, 3);                   /* each hold once, after the last byte */
    ASSERT(h.per_ref[0] == 1 && h.per_ref[1] == 1 && h.per_ref[2] == 1);
    drain(fd[1], got, TOTAL_MAX, &n);
    ASSERT_EQ(n, total);
    ASSERT(memcmp(got, want, total) == 0);
    out_deinit(&o);
    ASSERT_EQ(h.released, 3);                   /* not again */
    out_pool_drain(&pool);
    free(big);
    free(want);
    free(got);
    close(fd[0]);
    close(fd[1]);
}

/* Appends between partial flushes join the queue behind what is still unwritten. */
TEST(appends_after_partial_flush_follow_in_order) {
    struct holds h = {0};
    struct out_pool pool = {.release = count_release, .release_ctx = &h, .max = 8};
    struct out o;
    out_init(&o, &pool);
    enum { N = 200000 };
    char *want = malloc(N * 2), *got = malloc(N * 2);
    ASSERT(want != NULL && got != NULL);
    fill(want, N * 2, 11);
    for (size_t i = 0; i < N; i += 500)
        ASSERT(out_copy(&o, want + i, 500));
    int fd[2];
    ASSERT(pair(fd, 4096) == 0);
    size_t written, n = 0;
    ASSERT_EQ(out_flush(&o, fd[0], &written), 0);
    for (size_t i = N; i < 2 * N; i += 500)     /* more replies while blocked */
        ASSERT(out_copy(&o, want + i, 500));
    int r;
    while ((r = out_flush(&o, fd[0], &written)) == 0)
        drain(fd[1], got, N * 2, &n);
    ASSERT_EQ(r, 1);
    drain(fd[1], got, N * 2, &n);
    ASSERT_EQ(n, (size_t)N * 2);
    ASSERT(memcmp(got, want, N * 2) == 0);
    out_deinit(&o);
    out_pool_drain(&pool);
    free(want);
    free(got);
    close(fd[0]);
    close(fd[1]);
}

/* out_reset() and out_deinit() let go of holds whose bytes never left, once. */
TEST(holds_released_once_on_reset_and_deinit) {
    struct holds h = {0};
    struct out_pool pool = {.release = count_release, .release_ctx = &h, .max = 8};
    struct out o;
    out_init(&o, &pool);
    static const char v[1000];
    ASSERT(out_add(&o, v, sizeof(v)) && out_hold(&o, (void *)1));
    ASSERT(out_add(&o, v, sizeof(v)) && out_hold(&o, (void *)2));
    out_reset(&o);
    ASSERT_EQ(h.released, 2);
    ASSERT(out_empty(&o));
    out_reset(&o);
    ASSERT_EQ(h.released, 2);
    ASSERT(out_add(&o, v, sizeof(v)) && out_hold(&o, (void *)3));
    out_deinit(&o);
    ASSERT_EQ(h.released, 3);
    ASSERT(h.per_ref[1] == 1 && h.per_ref[2] == 1 && h.per_ref[3] == 1);
    out_pool_drain(&pool);
}

/*
 * Scratch blocks go back to the pool on reset and are taken again next
 * time, so a second batch of the same size makes no block; the gauges
 * come back to the same values.  Past the pool's max, blocks are freed.
 */
TEST(pool_reuses_blocks_and_gauges_return) {
    struct holds h = {0};
    struct out_pool pool = {.release = count_release, .release_ctx = &h, .max = 2};
    struct out o;
    out_init(&o, &pool);
    char line[100];
    fill(line, sizeof(line), 0);
    for (int i = 0; i < 2 * OUT_BLOCK / 100 + 1; i++)   /* 3 blocks' worth */
        ASSERT(out_copy(&o, line, sizeof(line)));
    ASSERT_U64(pool.blocks, 3);
    ASSERT_U64(pool.bytes, 3 * OUT_BLOCK);
    ASSERT_EQ(pool.n, 0);
    out_reset(&o);
    ASSERT_EQ(pool.n, 2);                       /* max 2 kept, the third freed */
    ASSERT_U64(pool.blocks, 2);
    ASSERT_U64(pool.bytes, 2 * OUT_BLOCK);
    for (int round = 0; round < 3; round++) {
        struct out_block *first = pool.free;
        ASSERT(out_copy(&o, line, sizeof(line)));
        ASSERT(o.head == first);                /* the block freed last, reused */
        ASSERT_EQ(pool.n, 1);
        ASSERT(out_copy(&o, line, sizeof(line)));
        ASSERT_U64(pool.blocks, 2);
        out_reset(&o);
        ASSERT_EQ(pool.n, 2);
        ASSERT_U64(pool.blocks, 2);
        ASSERT_U64(pool.bytes, 2 * OUT_BLOCK);
    }
    out_deinit(&o);
    out_pool_drain(&pool);
    ASSERT_EQ(pool.n, 0);
    ASSERT_U64(pool.blocks, 0);
    ASSERT_U64(pool.bytes, 0);
    ASSERT_U64(pool.oom, 0);
}

/*
 * The budget (memcached's read_buf_mem_limit per thread): lent read buffers
 * take a unit each, response slots 13 to a unit, until their out is reset;
 * what does not fit is refused (slots counted as oom).  No limit: nothing
 * is counted or refused.
 */
TEST(budget_counts_read_buffers_and_response_slots) {
    struct holds h = {0};
    struct out_pool pool = {.release = count_release, .release_ctx = &h, .max = 2};
    struct out a, b;
    out_init(&a, &pool);
    ASSERT(!out_budget_on(&a));
    ASSERT(out_resp_take(&a, 1000));            /* no limit */
    ASSERT_U64(pool.budget.resp, 0);
    ASSERT(out_budget_lend(&pool.budget));
    ASSERT_EQ(pool.budget.lent, 0);
    out_deinit(&a);

    pool.budget.units = 2;                      /* set before the outs are made */
    out_init(&a, &pool);
    out_init(&b, &pool);
    ASSERT(out_budget_on(&a));
    ASSERT(out_budget_lend(&pool.budget));      /* a read buffer: 1 unit */
    ASSERT(out_resp_take(&a, 13));              /* 13 slots: the second unit */
    ASSERT(!out_resp_take(&b, 1));              /* a 14th: a third unit */
    ASSERT_U64(pool.oom, 1);
    ASSERT(!out_budget_lend(&pool.budget));
    out_reset(&a);                              /* written: its slots come back */
    ASSERT_U64(pool.budget.resp, 0);
    ASSERT(out_resp_take(&b, 13));
    out_budget_return(&pool.budget);
    ASSERT(out_resp_take(&a, 13));              /* the read buffer's unit */
    ASSERT(!out_budget_lend(&pool.budget));
    out_budget_hold(&pool.budget);              /* counted without asking */
    ASSERT_EQ(pool.budget.lent, 1);
    out_budget_return(&pool.budget);
    out_deinit(&a);
    out_deinit(&b);
    ASSERT_U64(pool.budget.resp, 0);
    ASSERT_EQ(pool.budget.lent, 0);
    ASSERT(out_budget_lend(&pool.budget));
    out_pool_drain(&pool);
}

/* A reservation larger than a block gets a block of its own size, counted in bytes only. */
TEST(large_reservation_gets_its_own_block) {
    struct holds h = {0};
    struct out_pool pool = {.release = count_release, .release_ctx = &h, .max = 4};
    struct out o;
    out_init(&o, &pool);
    ASSERT(out_copy(&o, "HEAD\r\n", 6));
    struct out_block *small = o.cur;
    size_t big = 3 * OUT_BLOCK + 17;
    char *p = out_reserve(&o, big);
    ASSERT(p != NULL);
    ASSERT(o.cur != small && o.head == small);
    ASSERT_EQ(o.cur->size, big);
    fill(p, big, 5);                            /* all of it writable (ASan) */
    ASSERT(out_commit(&o, p, big));
    ASSERT_U64(pool.blocks, 1);
    ASSERT_U64(pool.bytes, OUT_BLOCK + big);
    ASSERT(out_copy(&o, "TAIL\r\n", 6));        /* the big block is full: a usual one follows */
    ASSERT_EQ(o.cur->size, OUT_BLOCK);
    ASSERT_U64(pool.blocks, 2);
    ASSERT_EQ(o.bytes, 6 + big + 6);

    int fd[2];
    ASSERT(pair(fd, 0) == 0);
    char *want = malloc(big + 12), *got = malloc(big + 12);
    ASSERT(want != NULL && got != NULL);
    memcpy(want, "HEAD\r\n", 6);
    fill(want + 6, big, 5);
    memcpy(want + 6 + big, "TAIL\r\n", 6);
    size_t written, n = 0;
    int r;
    while ((r = out_flush(&o, fd[0], &written)) == 0)
        drain(fd[1], got, big + 12, &n);
    ASSERT_EQ(r, 1);
    drain(fd[1], got, big + 12, &n);
    ASSERT_EQ(n, big + 12);
    ASSERT(memcmp(got, want, big + 12) == 0);
    ASSERT_U64(pool.bytes, 2 * OUT_BLOCK);      /* the big block freed, the usual ones kept */
    ASSERT_U64(pool.blocks, 2);
    ASSERT_EQ(pool.n, 2);
    out_deinit(&o);
    out_pool_drain(&pool);
    ASSERT_U64(pool.bytes, 0);
    free(want);
    free(got);
    close(fd[0]);
    close(fd[1]);
}

/*
 * More iovecs than one writev() takes (IOV_MAX): pieces that do not touch
 * in memory, so none merge, through a small send buffer, so that partial
 * writes fall inside and across the IOV_MAX batches.
 */
TEST(more_than_iov_max_iovecs_go_out_whole) {
    struct holds h = {0};
    struct out_pool pool = {.release = count_release, .release_ctx = &h, .max = 4};
    struct out o;
    out_init(&o, &pool);
    enum { PIECES = 3 * IOV_MAX + 7, LEN = 100 };
    char *src = malloc(PIECES * 2 * LEN), *want = malloc(PIECES * LEN), *got = malloc(PIECES * LEN);
    ASSERT(src != NULL && want != NULL && got != NULL);
    fill(src, PIECES * 2 * LEN, 9);
    for (int i = 0; i < PIECES; i++) {
        ASSERT(out_add(&o, src + (size_t)i * 2 * LEN, LEN));
        memcpy(want + (size_t)i * LEN, src + (size_t)i * 2 * LEN, LEN);
    }
    ASSERT_EQ(o.niov, PIECES);
    int fd[2];
    ASSERT(pair(fd, 4096) == 0);
    size_t written, n = 0;
    int r, partials = 0;
    while ((r = out_flush(&o, fd[0], &written)) == 0) {
        partials++;
        drain(fd[1], got, PIECES * LEN, &n);
    }
    ASSERT_EQ(r, 1);
    ASSERT(partials > 0);
    drain(fd[1], got, PIECES * LEN, &n);
    ASSERT_EQ(n, (size_t)PIECES * LEN);
    ASSERT(memcmp(got, want, (size_t)PIECES * LEN) == 0);

    /* And at once, with room for it all: one flush, many writev() calls. */
    int fd2[2];
    ASSERT(pair(fd2, 1 << 20) == 0);
    int rcv = 1 << 20;
    setsockopt(fd2[1], SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    for (int i = 0; i < 2 * IOV_MAX + 1; i++)
        ASSERT(out_add(&o, src + (size_t)i * 2 * LEN, 1));
    ASSERT_EQ(out_flush(&o, fd2[0], &written), 1);
    ASSERT_EQ(written, 2 * IOV_MAX + 1);
    n = 0;
    drain(fd2[1], got, PIECES * LEN, &n);
    ASSERT_EQ(n, 2 * IOV_MAX + 1);
    for (int i = 0; i < 2 * IOV_MAX + 1; i++)
        ASSERT_EQ(got[i], src[(size_t)i * 2 * LEN]);
    out_deinit(&o);
    out_pool_drain(&pool);
    free(src);
    free(want);
    free(got);
    for (int i = 0; i < 2; i++) {
        close(fd[i]);
        close(fd2[i]);
    }
}

/* A closed peer is an error (-1), and what was held stays held for the caller's reset. */
TEST(write_to_closed_peer_is_an_error) {
    struct holds h = {0};
    struct out_pool pool = {.release = count_release, .release_ctx = &h, .max = 4};
    struct out o;
    out_init(&o, &pool);
    int fd[2];
    ASSERT(pair(fd, 0) == 0);
    close(fd[1]);
    static const char v[600];
    ASSERT(out_copy(&o, "VALUE k 0 600\r\n", 15));
    ASSERT(out_add(&o, v, sizeof(v)) && out_hold(&o, (void *)4));
    size_t written = 1;
    errno = 0;
    ASSERT_EQ(out_flush(&o, fd[0], &written), -1);
    ASSERT_EQ(errno, EPIPE);
    ASSERT_EQ(written, 0);
    ASSERT_EQ(h.released, 0);
    out_deinit(&o);
    ASSERT_EQ(h.released, 1);
    out_pool_drain(&pool);
    close(fd[0]);
}

/* Nothing to write is done at once. */
TEST(empty_flush_is_done) {
    struct out_pool pool = {.max = 4};
    struct out o;
    out_init(&o, &pool);
    int fd[2];
    ASSERT(pair(fd, 0) == 0);
    size_t written = 7;
    ASSERT_EQ(out_flush(&o, fd[0], &written), 1);
    ASSERT_EQ(written, 0);
    out_deinit(&o);
    close(fd[0]);
    close(fd[1]);
}

int main(void) { return RUN_TESTS(); }
