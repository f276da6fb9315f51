/*
 * Unit tests for src/net/worker and src/net/uring: the data path of a
 * connection, driven through the echo application of echo_app.h on one
 * real worker thread, on each back end: split and pipelined requests,
 * rbuf lending and rbuf_moved (on io_uring: requests parsed where the
 * kernel put them, a cut one copied out), back-pressure, the ready list
 * (net_conn_yield()), net_conn_pause(), running out of io_uring receive
 * buffers, and a close or a stop while the kernel holds a send.
 */
#include "echo_app.h"
#include "harness.h"

/* One request sent a byte at a time, each byte its own read: one answer at the end. */
TEST(request_split_at_every_byte_gets_one_answer) {
    struct app *a = app_start(0, 0);
    ASSERT(a != NULL);
    settle(a);
    ASSERT((a->w.ring != NULL) == (app_io == NET_IO_URING));    /* io_uring works here */
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
    /* And at every split point in two writes, each read apart. */
    for (size_t k = 1; k < rl; k++) {
        uint64_t before = NET_STAT_GET(a->st.bytes_read);
        send_all(fd, req, k, 5000);
        WAIT_FOR(NET_STAT_GET(a->st.bytes_read) == before + k);
        send_all(fd, req + k, rl - k, 5000);
        ASSERT_EQ(recv_n(fd, got, rl + 3), rl + 3);
        ASSERT_MEM(got, "ok hello split world\n", rl + 3);
    }
    settle(a);
    ASSERT_EQ(a->nlog, (int)rl);                 /* one answer per request, no more */
    ASSERT_EQ(a->moved_missed, 0);
    ASSERT_EQ(a->lost, 0);
    ASSERT_U64(rbufs_lent(a), 0);
    ASSERT_EQ(read(fd, got, 1), -1);
    close(fd);
    app_stop(a);
    free(a);
}

/*
 * Bytes left in rbuf move only with rbuf_moved set: a partial line after
 * a consumed one is compacted to the front when more input comes.  An
 * empty rbuf goes back to the worker; a partial line keeps it lent.
 */
TEST(rbuf_lent_while_partial_and_moves_are_flagged) {
    struct app *a = app_start(0, 0);
    ASSERT(a != NULL);
    int fd = app_connect(a);
    char got[64];
    send_all(fd, "first\nsec", 9, 5000);
    ASSERT_EQ(recv_n(fd, got, 9), 9);
    ASSERT_MEM(got, "ok first\n", 9);
    settle(a);
    ASSERT_U64(rbufs_lent(a), 1);              /* "sec" waits in it */
    send_all(fd, "ond\n", 4, 5000);
    ASSERT_EQ(recv_n(fd, got, 10), 10);
    ASSERT_MEM(got, "ok second\n", 10);
    settle(a);
    ASSERT_EQ(a->moved_seen, 1);                 /* "sec" moved to the front */
    ASSERT_EQ(a->moved_missed, 0);
    ASSERT_EQ(a->lost, 0);
    ASSERT_U64(rbufs_lent(a), 0);              /* empty: given back */
    if (app_io == NET_IO_EPOLL)
        ASSERT_U64(rbufs(a), 1);               /* and kept in the pool */
    close(fd);
    app_stop(a);
    free(a);
}

/* Many requests in one write are answered in order. */
TEST(pipelined_requests_answered_in_order) {
    struct app *a = app_start(0, 0);
    ASSERT(a != NULL);
    int fd = app_connect(a);
    enum { N = 20000 };                          /* 200 KB: many reads */
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
 * A client that sends and never reads: once the server's answers fill the
 * socket it stops reading (want_write), so the client's writes stop too,
 * and the server's pending output stays within one rbuf of requests'
 * answers (on io_uring: output waits behind a send the kernel cannot
 * finish, up to net/uring.c's 256 KB, and the receive is cancelled).  When
 * the client reads, every answer arrives, in order.
 */
TEST(unread_answers_stop_reading_then_all_arrive) {
    struct app *a = app_start(0, 0);
    ASSERT(a != NULL);
    int fd = app_connect(a);
    enum { LINES = 400000, LINE = 10 };         /* 4 MB: more than the sockets hold */
    size_t total = (size_t)LINES * LINE, sent = 0;
    char *req = malloc(total + 1);              /* + sprintf's last NUL */
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
    ASSERT(atomic_load(&a->blocked));           /* before it could take 4 MB */
    ssize_t n;
    while ((n = write(fd, req + sent, total - sent)) > 0)   /* fill the pipe to the server */
        sent += (size_t)n;
    ASSERT(n < 0 && errno == EAGAIN);
    settle(a);
    uint64_t read1 = NET_STAT_GET(a->st.bytes_read);
    settle(a);
    settle(a);
    ASSERT_U64(NET_STAT_GET(a->st.bytes_read), read1);       /* it reads no more */
    ASSERT(read1 < sent);
    ASSERT(atomic_load(&a->blocked));
    size_t bound = NET_RBUF_SIZE / LINE * 13 + 13;
    if (app_io == NET_IO_URING)
        bound += 256u << 10;
    ASSERT(atomic_load(&a->max_pending) <= bound);
    ASSERT(recv_answers(fd, 0, (int)(sent / LINE)));
    /* the rest of the stream, written and read in turn */
    while (sent < total) {
        size_t chunk = total - sent < 50000 ? total - sent : 50000;
        ASSERT_EQ(send_all(fd, req + sent, chunk, 5000), chunk);
        int from = (int)(sent / LINE);          /* answered so far */
        sent += chunk;
        ASSERT(recv_answers(fd, from, (int)(sent / LINE) - from));
    }
    ASSERT_U64(NET_STAT_GET(a->st.bytes_read), total);
    free(req);
    close(fd);
    app_stop(a);
    free(a);
}

/*
 * A connection that yields after each line leaves room for another: with
 * 100 lines waiting on A and one on B, B is answered within A's first two
 * turns, and A's answers still come in order.
 */
TEST(yield_lets_another_connection_in) {
    struct app *a = app_start(1, 0);
    ASSERT(a != NULL);
    park(a);
    ASSERT(a->parked);
    int fa = app_connect(a), fb = app_connect(a);
    char req[600], got[1000], want[1000];     /* + sprintf's NUL */
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
    ASSERT(b - a->log <= 1);                     /* between A's turns, not after them */
    ASSERT(NET_STAT_GET(a->st.conn_yields) >= 99);
    close(fa);
    close(fb);
    app_stop(a);
    free(a);
}

/*
 * The read buffer goes back to the worker after every process() that
 * leaves it empty: a read's, a turn's from the ready list (worker_main)
 * and the one after blocked output drains (conn_event), so a connection
 * whose last requests ran in such a turn holds no buffer while idle
 * (worker.h: "an idle connection holds its struct alone").  Found by this
 * test: only the read's gave it back.  Here: budget 1, three lines in one
 * write; lines 2 and 3 run from the ready list.
 */
TEST(rbuf_given_back_after_last_yielded_turn) {
    struct app *a = app_start(1, 0);
    ASSERT(a != NULL);
    int fd = app_connect(a);
    char got[64];
    send_all(fd, "x1\nx2\nx3\n", 9, 5000);
    ASSERT_EQ(recv_n(fd, got, 18), 18);
    ASSERT_MEM(got, "ok x1\nok x2\nok x3\n", 18);
    settle(a);
    uint64_t lent = rbufs_lent(a);
    close(fd);
    app_stop(a);
    free(a);
    ASSERT_U64(lent, 0);
}

/*
 * The same for drained output: 1500 lines in one read, answered with a send past
 * each 1 KB of output (as cellard's OUT_HIGH_WATER) into a 4 KB send
 * buffer: the process() stops while blocked, and the last lines run when
 * the output drains.  (On io_uring the sends of one process() go together
 * at the end of the turn, so nothing blocks mid-rbuf; the buffer still
 * goes back.)
 */
TEST(rbuf_given_back_after_blocked_output_drains) {
    struct app *a = app_start(0, 1024);
    ASSERT(a != NULL);
    static char req[1500 * 10 + 1];
    for (int i = 0; i < 1500; i++)
        sprintf(req + i * 10, "%09d\n", i);
    int fd = app_connect_with(a, 4096, req, 15000);     /* one read's worth */
    ASSERT(fd >= 0);
    if (app_io == NET_IO_EPOLL) {
        WAIT_FOR(atomic_load(&a->blocked));
        ASSERT(atomic_load(&a->blocked));       /* it stopped mid-rbuf */
    }
    ASSERT(recv_answers(fd, 0, 1500));
    settle(a);
    ASSERT_U64(NET_STAT_GET(a->st.bytes_read), 15000);
    uint64_t lent = rbufs_lent(a);
    close(fd);
    app_stop(a);
    free(a);
    ASSERT_U64(lent, 0);
}

/*
 * net_conn_pause(): a paused connection is not read from, though input
 * waits; resumed, it is read again, and what waited is answered in order.
 */
TEST(paused_connection_is_not_read_until_resumed) {
    struct app *a = app_start(0, 0);
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
    ASSERT_U64(NET_STAT_GET(a->st.bytes_read), 8);  /* "B\n" waits in the socket */
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
 * Clients that go away while their answers wait (on io_uring: a send the
 * kernel holds on a full socket): each connection is closed once, and
 * freed (on io_uring once its send has come back).
 */
TEST(close_with_answers_waiting) {
    struct app *a = app_start(0, 0);
    ASSERT(a != NULL);
    enum { CONNS = 8, LINES = 100000, LINE = 10 };
    size_t total = (size_t)LINES * LINE;
    char *req = malloc(total + 1);
    ASSERT(req != NULL);
    for (int i = 0; i < LINES; i++)
        sprintf(req + (size_t)i * LINE, "%09d\n", i);
    int fds[CONNS];
    for (int i = 0; i < CONNS; i++) {
        fds[i] = app_connect(a);
        ASSERT(fds[i] >= 0);
        size_t sent = 0;
        while (sent < total && atomic_load(&a->blocked) <= i) {
            ssize_t n = write(fds[i], req + sent, total - sent < 4096 ? total - sent : 4096);
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
    WAIT_FOR(atomic_load(&a->srv.conn_structs) == 0);   /* counted after release() */
    ASSERT_U64(atomic_load(&a->srv.conn_structs), 0);
    ASSERT_EQ(atomic_load(&a->released), CONNS);
    ASSERT_EQ(atomic_load(&a->closing), CONNS);
    ASSERT_U64(atomic_load(&a->srv.curr_conns), 0);
    free(req);
    app_stop(a);
    free(a);
}

/*
 * io_uring with two receive buffers for 40 connections whose lines all
 * arrive while the worker is parked: receives find no buffer, wait for the
 * others' to come back, and every connection is answered.  (On epoll the
 * same connections are read one after another.)
 */
TEST(receive_buffers_run_out_and_all_are_answered) {
    struct app *a = app_start_io(0, 0, app_io, 2);
    ASSERT(a != NULL);
    enum { CONNS = 40 };
    int fds[CONNS];
    park(a);
    ASSERT(a->parked);
    for (int i = 0; i < CONNS; i++) {
        fds[i] = app_connect(a);
        ASSERT(fds[i] >= 0);
    }
    atomic_store(&a->park, false);
    WAIT_FOR(atomic_load(&a->opened) == CONNS);
    park(a);
    for (int i = 0; i < CONNS; i++) {
        char line[32];
        int n = sprintf(line, "c%02d\n", i);
        ASSERT_EQ(send_all(fds[i], line, (size_t)n, 5000), (size_t)n);
    }
    atomic_store(&a->park, false);
    for (int i = 0; i < CONNS; i++) {
        char got[32], want[32];
        int n = sprintf(want, "ok c%02d\n", i);
        ASSERT_EQ(recv_n(fds[i], got, (size_t)n), (size_t)n);
        ASSERT_MEM(got, want, (size_t)n);
        close(fds[i]);
    }
    app_stop(a);
    free(a);
}

int main(void) { return app_run_both(__FILE__); }
