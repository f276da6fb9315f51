/*
 * evloop.h -- a thin epoll wrapper: one loop per thread.
 *
 * A loop watches file descriptors, each registered with an opaque pointer
 * that evloop_wait() hands back with the ready events.  Level-triggered,
 * so a reader may take one bite per wake-up and come back.  A loop is used
 * by the thread that owns it; the only cross-thread call is evloop_wake(),
 * which makes a blocked evloop_wait() return.
 */
#ifndef CELLAR_CORE_EVLOOP_H
#define CELLAR_CORE_EVLOOP_H

#include <stdint.h>

enum { EV_READ = 1, EV_WRITE = 2, EV_ERROR = 4 };

struct ev_fired {
    void *ptr;          /* as registered; NULL for a wake-up */
    int events;         /* EV_* */
};

struct evloop;

struct evloop *evloop_create(void);
void evloop_destroy(struct evloop **l);

/* Registers or changes interest in fd (events = EV_READ|EV_WRITE). 0 or -1. */
int evloop_add(struct evloop *l, int fd, int events, void *ptr);
int evloop_mod(struct evloop *l, int fd, int events, void *ptr);
int evloop_del(struct evloop *l, int fd);

/*
 * Waits up to timeout_ms (-1 forever) and fills at most max events.
 * Returns the count (0 on timeout or interruption).  Wake-ups are
 * reported as one event with ptr NULL.
 */
int evloop_wait(struct evloop *l, struct ev_fired *out, int max, int timeout_ms);

/*
 * The loop's own descriptor: readable while it has events to report, so
 * one loop can be watched from another (a library's loop inside a
 * server's).
 */
int evloop_fd(const struct evloop *l);
/* How many descriptors are registered (evloop_add less evloop_del). */
unsigned evloop_count(const struct evloop *l);

/* Makes a blocked evloop_wait() return; safe from any thread. */
void evloop_wake(struct evloop *l);

#endif
