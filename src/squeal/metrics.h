/*
 * metrics.h -- cellar-squeal's --metrics listener: HTTP/1.0 GET /metrics
 * answered with what a render callback writes (Prometheus text format
 * 0.0.4), as cellar-router's is; its own small copy, so squeal does not
 * link the router.
 *
 * One thread accepts and answers one scraper at a time (1 s per read or
 * write, 3 s for a request head); it calls render on that thread, so
 * render must only read what other threads publish under their locks.
 * metrics_stop() shuts the socket down, which wakes the accept().
 *
 * The helpers below build the exposition in a growable buffer (struct
 * text), for render to use.
 */
#ifndef CELLAR_SQUEAL_METRICS_H
#define CELLAR_SQUEAL_METRICS_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* A growable text; on out of memory it stops growing and says so in oom. */
struct text {
    char *p;
    size_t len, cap;
    bool oom;
};

void text_printf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "# HELP name help\n# TYPE name type\n" */
void text_family(struct text *t, const char *name, const char *type, const char *help);

/* Fills t with the exposition; runs on the listener's thread. */
typedef void (*metrics_render_fn)(void *arg, struct text *t);

struct metrics {
    int fd;                         /* -1: not listening */
    atomic_bool stop;
    pthread_t thread;
    metrics_render_fn render;
    void *arg;
};

/* Listens on HOST:PORT ("[v6]:port", ":port" for any): 0, or -1 with err set. */
int metrics_start(struct metrics *m, const char *hostport, metrics_render_fn render, void *arg,
                  char *err, size_t errlen);

/* Stops the listener and joins its thread; a no-op when not started. */
void metrics_stop(struct metrics *m);

#endif
