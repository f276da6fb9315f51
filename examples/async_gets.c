/*
 * async_gets.c -- libcellar inside a program's own event loop (epoll):
 * thousands of gets in flight at once from one thread, each answer
 * handled by a callback.
 *
 *   epoll_wait(ep, ..., timeout)     the program's loop, which could also
 *     |                              watch its own sockets, timers, pipes
 *     +-- cellar_fd(h) readable, or the timeout cellar_run() asked for
 *           --> cellar_run(h): reads the answers, calls got() for each,
 *               writes what the window lets out; returns the next timeout
 *
 *   cc -o async_gets examples/async_gets.c $(pkg-config --cflags --libs cellar)
 *   ./async_gets 127.0.0.1:11211,127.0.0.1:11212 10000
 *
 * It stores n keys (key:<i> = v<i>), then submits a get of every one
 * before running the loop at all, so all n are in flight together, and
 * checks every value that comes back.  Exit status 0 when every answer
 * was right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <cellar.h>

struct job {
    int i;                              /* the key's number */
    int *answered, *wrong;
};

/* A get's answer: the value must be v<i>. */
static void got(void *arg, int status, const struct cellar_reply *r) {
    struct job *j = arg;
    char want[32];
    int n = snprintf(want, sizeof(want), "v%d", j->i);
    (*j->answered)++;
    if (status != CELLAR_OK || r->nvalue != (size_t)n || memcmp(r->value, want, (size_t)n) != 0) {
        if (*j->wrong < 10)
            fprintf(stderr, "key:%d: %s, %.*s\n", j->i, cellar_strerror(status),
                    (int)r->nvalue, r->value ? r->value : "");
        (*j->wrong)++;
    }
}

/* A set's answer: only its status matters. */
static void stored(void *arg, int status, const struct cellar_reply *r) {
    (void)r;
    int *failed = arg;
    if (status != CELLAR_OK)
        (*failed)++;
}

/* Runs the handle in an epoll loop until nothing is in flight. */
static void loop(int ep, struct cellar *h) {
    int ms;
    while ((ms = cellar_run(h)) >= 0) {
        struct epoll_event ev;
        epoll_wait(ep, &ev, 1, ms);     /* readable or timed out: run it either way */
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s host:port[,host:port...] n\n", argv[0]);
        return 2;
    }
    char *end;
    unsigned long count = strtoul(argv[2], &end, 10);
    if (*end != '\0' || count < 1 || count > 10000000) {
        fprintf(stderr, "n: 1 to 10000000\n");
        return 2;
    }
    int n = (int)count;
    char err[256];
    struct cellar_config *cfg;
    /* a window as large as the batch: every get may be out at once */
    struct cellar_options opt = {.window_init = n, .window_max = n, .window_bytes = -1};
    if (cellar_config_parse(&cfg, argv[1], &opt, err, sizeof(err)) != CELLAR_OK) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    struct cellar *h;
    if (cellar_create(&h, cfg) != CELLAR_OK) {
        fprintf(stderr, "cannot create the handle\n");
        return 2;
    }
    cellar_config_release(&cfg);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    epoll_ctl(ep, EPOLL_CTL_ADD, cellar_fd(h), &ev);

    int failed = 0;
    char key[32], val[32];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "key:%d", i);
        snprintf(val, sizeof(val), "v%d", i);
        struct cellar_request rq = {.op = CELLAR_OP_SET, .key = key, .nkey = strlen(key),
                                    .value = val, .nvalue = strlen(val)};
        if (cellar_submit(h, &rq, stored, &failed) != CELLAR_OK)
            failed++;
    }
    loop(ep, h);

    struct job *jobs = calloc(count, sizeof(*jobs));
    int answered = 0, wrong = 0;
    for (int i = 0; i < n && jobs != NULL; i++) {
        jobs[i] = (struct job){i, &answered, &wrong};
        snprintf(key, sizeof(key), "key:%d", i);
        struct cellar_request rq = {.op = CELLAR_OP_GET, .key = key, .nkey = strlen(key)};
        if (cellar_submit(h, &rq, got, &jobs[i]) != CELLAR_OK)
            wrong++;
    }
    size_t in_flight = cellar_pending(h);
    loop(ep, h);
    struct cellar_stats st;
    cellar_stats(h, &st);
    printf("sets failed %d; gets in flight at once %zu, answered %d, wrong %d; "
           "most requests on the wire at once %u\n",
           failed, in_flight, answered, wrong, st.window_peak);
    free(jobs);
    cellar_destroy(&h);
    return failed == 0 && wrong == 0 && answered == n ? 0 : 1;
}
