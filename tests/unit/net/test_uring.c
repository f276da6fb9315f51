/*
 * Unit tests for src/net/uring.c: the data path of a connection on the
 * io_uring back end, through the echo application of echo_app.h on one
 * real worker thread (net_server.io = NET_IO_URING): split and pipelined
 * requests parsed where the kernel put them (the rbuf_moved contract held
 * when a cut request is copied out), back-pressure, the ready list, pause,
 * running out of receive buffers, and a close with a send in the kernel.
 */
#include "echo_app.h"
#include "harness.h"

static struct app *start(int budget, size_t hiwat) {
    return app_start_io(budget, hiwat, NET_IO_URING);
}

/* One request a byte at a time, then cut at every point: one answer each, nothing lost. */
TEST(uring_request_split_at_every_byte_gets_one_answer) {
    struct app *a = start(0, 0);
    ASSERT(a != NULL);
    settle(a);
    ASSERT(a->w.ring != NULL);                   /* made on its thread: io_uring is here */
    int fd = app_connect(a);
    ASSERT(fd >= 0);
    const char req[] = "hello split world\n";
    size_t rl = sizeof(req) - 1;
    for (size_t i = 0; i < rl; i++) {
        uint64_t before = NET_STAT_GET(a->st.bytes_read);
        ASSERT_EQ(send_all(fd, req + i, 1, 5000), 1);
        WAIT_FOR(NET_STAT_GET(a->st.bytes_read) == before + 1);
        ASSERT_U64(NET_STAT_GET(a->st.bytes_read), before + 1);
    }
    char got[64];
    ASSERT_EQ(recv_n(fd, got, rl + 3), rl + 3);
    ASSERT_MEM(got, "ok hello split world\n", rl + 3);
    for (size_t k = 1; k < rl; k++) {
        uint64_t before = NET_STAT_GET(a->st.bytes_read);
        send_all(fd, req, k, 5000);
        WAIT_FOR(NET_STAT_GET(a->st.bytes_read) == before + k);
        send_all(fd, req + k, rl - k, 5000);
        ASSERT_EQ(recv_n(fd, got, rl + 3), rl + 3);
        ASSERT_MEM(got, "ok hello split world\n", rl + 3);
    }
    settle(a);
    ASSERT_EQ(a->nlog, (int)rl);
    ASSERT_EQ(a->moved_missed, 0);
    ASSERT_EQ(a->lost, 0);
    ASSERT_U64(rbufs_lent(a), 0);                /* nothing cut: no buffer kept */
    close(fd);
    app_stop(a);
    free(a);
}

/* A cut request keeps a buffer of its own (the ring's goes back); whole again, it is freed. */
TEST(uring_cut_request_kept_then_buffer_given_back) {
    struct app *a = start(0, 0);
    ASSERT(a != NULL);
    int fd = app_connect(a);
    char got[64];
    send_all(fd, "first\nsec", 9, 5000);
    ASSERT_EQ(recv_n(fd, got, 9), 9);
    ASSERT_MEM(got, "ok first\n", 9);
    settle(a);
    ASSERT_U64(rbufs_lent(a), 1);                /* "sec" waits in it */
    send_all(fd, "ond\n", 4, 5000);
    ASSERT_EQ(recv_n(fd, got, 10), 10);
    ASSERT_MEM(got, "ok second\n", 10);
    settle(a);
    ASSERT_EQ(a->moved_missed, 0);
    ASSERT_EQ(a->lost, 0);
    ASSERT_U64(rbufs_lent(a), 0);
    close(fd);
    app_stop(a);
    free(a);
}

TEST(uring_pipelined_requests_answered_in_order) {
    struct app *a = start(0, 0);
    ASSERT(a != NULL);
    int fd = app_connect(a);
    enum { N = 20000 };                          /* 200 KB: many receives */
    static char req[10 * N + 1], want[13 * N + 1], got[13 * N];
    for (int i = 0; i < N; i++) {
        sprintf(req + i * 10, "r%08d\n", i);
        sprintf(want + i * 13, "ok r%08d\n", i);
    }
    ASSERT_EQ(send_all(fd, req, 10 * N, 5000), 10 * N);
    ASSERT_EQ(recv_n(fd, got, 13 * N), 13 * N);
    ASSERT(memcmp(got, want, 13 * N) == 0);
    settle(a);
    ASSERT_EQ(a->moved_missed, 0);
    ASSERT_EQ(a->lost, 0);
    close(fd);
    app_stop(a);
    free(a);
}

/*
 * A client that sends and never reads: the server's answers wait behind a
 * send the kernel cannot finish, the connection blocks, its receive goes,
 * and it reads no more; what it holds stays bounded.  Read, all arrive.
 */
TEST(uring_unread_answers_stop_reading_then_all_arrive) {
    struct app *a = start(0, 0);
    ASSERT(a != NULL);
    int fd = app_connect(a);
    enum { LINES = 400000, LINE = 10 };
    size_t total = (size_t)LINES * LINE, sent = 0;
    char *req = malloc(total + 1);
    ASSERT(req != NULL);
    for (int i = 0; i < LINES; i++)
        sprintf(req + (size_t)i * LINE, "%09d\n", i);
    while (sent < total && !atomic_load(&a->blocked)) {
        ssize_t n = write(fd, req + sent, total - sent < 4096 ? total - sent : 4096);
        if (n > 0)
            sent += (size_t)n;
        else
            sched_yield();
    }
    ASSERT(atomic_load(&a->blocked));
    ssize_t n;
    while ((n = write(fd, req + sent, total - sent)) > 0)
        sent += (size_t)n;
    ASSERT(n < 0 && errno == EAGAIN);
    settle(a);
    uint64_t read1 = NET_STAT_GET(a->st.bytes_read);
    settle(a);
    settle(a);
    ASSERT_U64(NET_STAT_GET(a->st.bytes_read), read1);
    ASSERT(read1 < sent);
    /* output waits behind one send: at most the flush's limit and one buffer's answers */
    ASSERT(atomic_load(&a->max_pending) <= (256u << 10) + 2 * (NET_RBUF_SIZE / LINE * 13));
    ASSERT(recv_answers(fd, 0, (int)(sent / LINE)));
    while (sent < total) {
        size_t chunk = total - sent < 50000 ? total - sent : 50000;
        ASSERT_EQ(send_all(fd, req + sent, chunk, 5000), chunk);
        int from = (int)(sent / LINE);
        sent += chunk;
        ASSERT(recv_answers(fd, from, (int)(sent / LINE) - from));
    }
    ASSERT_U64(NET_STAT_GET(a->st.bytes_read), total);
    free(req);
    close(fd);
    app_stop(a);
    free(a);
}

/* Budget 1: B gets its turn between A's lines, A's answers come in order. */
TEST(uring_yield_lets_another_connection_in) {
    struct app *a = start(1, 0);
    ASSERT(a != NULL);
    park(a);
    ASSERT(a->parked);
    int fa = app_connect(a), fb = app_connect(a);
    char req[600], got[1000], want[1000];
    for (int i = 0; i < 100; i++) {
        sprintf(req + i * 5, "A%03d\n", i);
        sprintf(want + i * 8, "ok A%03d\n", i);
    }
    send_all(fa, req, 500, 5000);
    send_all(fb, "B\n", 2, 5000);
    atomic_store(&a->park, false);
    ASSERT_EQ(recv_n(fb, got, 5), 5);
    ASSERT_MEM(got, "ok B\n", 5);
    ASSERT_EQ(recv_n(fa, got, 800), 800);
    ASSERT_MEM(got, want, 800);
    settle(a);
    ASSERT_EQ(a->nlog, 101);
    const char *b = memchr(a->log, 'B', 101);
    ASSERT(b != NULL);
    ASSERT(b - a->log <= 1);
    ASSERT_U64(rbufs_lent(a), 0);
    close(fa);
    close(fb);
    app_stop(a);
    free(a);
}

/* A paused connection's receive is cancelled: what comes after waits in the socket. */
TEST(uring_paused_connection_is_not_read_until_resumed) {
    struct app *a = start(0, 0);
    ASSERT(a != NULL);
    int fd = app_connect(a);
    char got[64];
    send_all(fd, "pause\nA\n", 8, 5000);
    ASSERT_EQ(recv_n(fd, got, 9), 9);
    ASSERT_MEM(got, "ok pause\n", 9);
    settle(a);
    send_all(fd, "B\n", 2, 5000);
    settle(a);
    settle(a);
    ASSERT_U64(NET_STAT_GET(a->st.bytes_read), 8);
    ASSERT_EQ(a->nlog, 1);
    atomic_store(&a->resume, true);
    evloop_wake(a->w.loop);
    ASSERT_EQ(recv_n(fd, got, 10), 10);
    ASSERT_MEM(got, "ok A\nok B\n", 10);
    ASSERT_U64(NET_STAT_GET(a->st.bytes_read), 10);
    close(fd);
    app_stop(a);
    free(a);
}

/*
 * Clients that go away with answers the kernel still holds for them (a
 * send stuck on a full socket): each connection is closed, its send comes
 * back cancelled or failed, and only then is it freed.
 */
TEST(uring_close_with_a_send_in_the_kernel) {
    struct app *a = start(0, 0);
    ASSERT(a != NULL);
    enum { CONNS = 8, LINES = 100000, LINE = 10 };
    char *req = malloc((size_t)LINES * LINE + 1);
    ASSERT(req != NULL);
    for (int i = 0; i < LINES; i++)
        sprintf(req + (size_t)i * LINE, "%09d\n", i);
    int fds[CONNS];
    for (int i = 0; i < CONNS; i++) {
        fds[i] = app_connect(a);
        ASSERT(fds[i] >= 0);
        size_t sent = 0;
        while (sent < (size_t)LINES * LINE && atomic_load(&a->blocked) <= i) {
            size_t left = (size_t)LINES * LINE - sent;
            ssize_t n = write(fds[i], req + sent, left < 4096 ? left : 4096);
            if (n > 0)
                sent += (size_t)n;
            else
                sched_yield();
        }
    }
    WAIT_FOR(atomic_load(&a->blocked) == CONNS);
    ASSERT_EQ(atomic_load(&a->blocked), CONNS);
    for (int i = 0; i < CONNS; i++)
        close(fds[i]);
    WAIT_FOR(atomic_load(&a->released) == CONNS);
    ASSERT_EQ(atomic_load(&a->released), CONNS);
    ASSERT_EQ(atomic_load(&a->closing), CONNS);
    WAIT_FOR(atomic_load(&a->srv.conn_structs) == 0);   /* counted after release() */
    ASSERT_U64(atomic_load(&a->srv.conn_structs), 0);
    ASSERT_U64(atomic_load(&a->srv.curr_conns), 0);
    free(req);
    app_stop(a);
    free(a);
}

/* Stopped with connections holding receives and sends: all is taken back and freed. */
TEST(uring_stop_with_operations_in_the_kernel) {
    struct app *a = start(0, 0);
    ASSERT(a != NULL);
    int idle = app_connect(a), busy = app_connect(a);
    static char req[2000000 + 1];                /* more than the sockets hold */
    for (int i = 0; i < 200000; i++)
        sprintf(req + i * 10, "%09d\n", i);
    size_t sent = 0;
    while (sent < sizeof(req) - 1 && !atomic_load(&a->blocked)) {
        size_t left = sizeof(req) - 1 - sent;
        ssize_t n = write(busy, req + sent, left < 4096 ? left : 4096);
        if (n > 0)
            sent += (size_t)n;
        else
            sched_yield();
    }
    WAIT_FOR(atomic_load(&a->blocked) == 1);
    ASSERT_EQ(atomic_load(&a->blocked), 1);
    app_stop(a);                                  /* ASan: nothing leaked or touched after */
    ASSERT_U64(atomic_load(&a->srv.conn_structs), 0);
    free(a);
    close(idle);
    close(busy);
}

int main(void) { return RUN_TESTS(); }
