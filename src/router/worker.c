/*
 * worker.c -- a router worker's libcellar handles inside its net/ loop.
 *
 * Each worker owns one handle per configuration it has seen.  The
 * handle's own event loop is watched from the worker's (its epoll
 * descriptor is readable when a backend connection has something; on
 * io_uring the handle's connections go through a ring of its own, whose
 * descriptor is on that loop), and
 * after every round of events the worker runs the handle once more so
 * that requests its clients submitted go out and deadlines are kept:
 *
 *   worker loop round: client events (submit) ... handle's fd (answers)
 *                      tick: cl_async_run() on every handle; reload?
 *                      sleep no longer than the earliest handle deadline
 *
 * A reload makes a new handle, on which new requests go; the old one is
 * kept, still run, until nothing it was given is in flight, then
 * destroyed: requests in flight finish on the tree they started on.
 *
 * `stats servers` and /metrics read a worker's handles from other
 * threads: linking and unlinking a handle take the worker's lock, and a
 * handle is destroyed only once unlinked, so a reader holding the lock
 * sees live handles only.  Their counters are cl_conn_counters, written
 * here and read there without locks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "router/router.h"

/* The handle's descriptor is readable: read and answer. */
static void handle_io(struct net_handler *io, int events) {
    (void)events;
    struct rhandle *rh = (struct rhandle *)((char *)io - offsetof(struct rhandle, io));
    rh->deadline = cl_async_run(rh->h, true);
}

/* A handle over the router's current configuration (worker's thread). */
static struct rhandle *handle_new(struct rworker *w) {
    struct router *rt = w->rt;
    struct rhandle *rh = calloc(1, sizeof(*rh));
    if (rh == NULL)
        return NULL;
    pthread_mutex_lock(&rt->cfg_lock);
    int rc = cellar_create(&rh->h, rt->cfg);
    rh->gen = atomic_load(&rt->cfg_gen);
    pthread_mutex_unlock(&rt->cfg_lock);
    if (rc != CELLAR_OK) {
        free(rh);
        return NULL;
    }
    if (rt->spool)
        cellar_use_spool(rh->h, rt->spool);
    if (rt->net.io == NET_IO_URING)
        cl_async_ring(rh->h);       /* its backends on a ring too (else it stays on epoll) */
    rh->w = w;
    rh->io.on_event = handle_io;
    if (net_worker_watch(&w->net, cl_async_fd(rh->h), EV_READ, &rh->io) < 0) {
        cellar_destroy(&rh->h);
        free(rh);
        return NULL;
    }
    return rh;
}

/*
 * An old handle goes: a server it had marked down that the current
 * configuration no longer has (as the same destination: address, protocol,
 * timeout) is said in the log, as mcrouter says it.
 */
static void handle_say_gone(const struct rhandle *rh, const struct cellar_config *now) {
    const struct cellar_config *was = cl_handle_config(rh->h);
    if (now == was)
        return;
    for (unsigned i = 0; i < cl_handle_servers(rh->h); i++) {
        const struct cl_conn_counters *c = cl_handle_server_counters(rh->h, i);
        if (atomic_load_explicit(&c->health, memory_order_relaxed) != CL_CONN_DOWN)
            continue;
        char dest[300], other[300];
        cl_config_server_dest(was, i, dest, sizeof(dest));
        bool kept = false;
        for (unsigned j = 0; j < cellar_config_servers(now) && !kept; j++) {
            cl_config_server_dest(now, j, other, sizeof(other));
            kept = strcmp(dest, other) == 0;
        }
        if (!kept)
            fprintf(stderr, "cellar-router: %s was TKO, removed from config\n",
                    cellar_config_server_name(was, i));
    }
}

static void handle_free(struct rworker *w, struct rhandle *rh) {
    evloop_del(w->net.loop, cl_async_fd(rh->h));
    cellar_destroy(&rh->h);
    free(rh);
}

/*
 * After each round: every handle sends what its window lets out and keeps
 * its deadlines; a new configuration gets a new handle; an old handle
 * with nothing in flight goes.
 */
static void worker_tick(struct net_worker *nw) {
    struct rworker *w = (struct rworker *)nw;
    if (atomic_load_explicit(&w->rt->cfg_gen, memory_order_acquire) != w->cur->gen) {
        struct rhandle *rh = handle_new(w);
        if (rh != NULL) {
            rh->older = w->cur;
            pthread_mutex_lock(&w->lock);
            w->cur = rh;
            pthread_mutex_unlock(&w->lock);
        }
    }
    router_run_later(w);
    unsigned inflight = 0;
    for (struct rhandle *rh = w->cur; rh != NULL; rh = rh->older) {
        rh->deadline = cl_async_run(rh->h, false);
        inflight += rh->inflight;
    }
    /* the gauge, once a round rather than twice a key */
    atomic_store_explicit(&w->st.requests_inflight, inflight, memory_order_relaxed);
    uint32_t now = (uint32_t)time(NULL);
    if (now != w->slow_check) {
        w->slow_check = now;
        router_close_stuck(w, now);
        router_trim_heap(w);
    }
    struct rhandle **pp = &w->cur->older;
    while (*pp != NULL) {
        struct rhandle *rh = *pp;
        if (rh->inflight == 0) {
            pthread_mutex_lock(&w->lock);
            *pp = rh->older;
            w->failovers_gone += cl_handle_failovers(rh->h);
            pthread_mutex_unlock(&w->lock);
            handle_say_gone(rh, cl_handle_config(w->cur->h));
            handle_free(w, rh);
        } else {
            pp = &rh->older;
        }
    }
}

/* Sleep no longer than the earliest deadline of any handle. */
static int worker_wait_ms(struct net_worker *nw) {
    struct rworker *w = (struct rworker *)nw;
    uint64_t next = router_later_due(w);
    for (struct rhandle *rh = w->cur; rh != NULL; rh = rh->older) {
        if (rh->deadline && (next == 0 || rh->deadline < next))
            next = rh->deadline;
    }
    if (next == 0)
        return 1000;
    uint64_t now = clock_mono_ns();
    if (next <= now)
        return 0;
    uint64_t ms = (next - now + 999999) / 1000000;
    return ms > 1000 ? 1000 : (int)ms;
}

int router_worker_init(struct router *rt, struct rworker *w, int id) {
    w->rt = rt;
    pthread_mutex_init(&w->lock, NULL);
    if (net_worker_init(&w->net, &rt->net, id, &w->st.net, router_val_release, NULL) < 0)
        return -1;
    w->net.tick = worker_tick;
    w->net.wait_ms = worker_wait_ms;
    w->cur = handle_new(w);
    return w->cur != NULL ? 0 : -1;
}

void router_worker_deinit(struct rworker *w) {
    /* the clients are gone: every request still in flight is an orphan, failed here */
    router_drop_later(w);
    while (w->cur != NULL) {
        struct rhandle *rh = w->cur;
        pthread_mutex_lock(&w->lock);
        w->cur = rh->older;
        pthread_mutex_unlock(&w->lock);
        handle_free(w, rh);
    }
    net_worker_deinit(&w->net);
    pthread_mutex_destroy(&w->lock);
}
