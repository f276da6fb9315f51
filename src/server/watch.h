/*
 * watch.h -- memcached's `watch`: live log lines for connections that ask
 * (watch.c).
 *
 * watch_command() answers a bad request or puts c in CONN_WATCH; once c
 * has sent all it owed, its worker calls watch_attach() (false: close
 * it), and watch_detach() before closing the fd.  From then on only the
 * watch thread (started by watch_init()) writes to the watcher, under the
 * hub's lock.  Each worker calls watch_bind_thread() once, on its own
 * thread, with its ring and the place where it keeps the fd of the client
 * it is serving (the cfd of the lines the engine's hook makes there).
 * The event functions run on the thread of the event and only format a
 * line into that thread's ring (dropped when the ring is full), and only
 * while somebody watches that kind.
 */
#ifndef CELLAR_SERVER_WATCH_H
#define CELLAR_SERVER_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_text.h"
#include "storage/engine.h"

struct conn;
struct server;

enum watch_kind {
    WATCH_FETCHERS = 1,
    WATCH_MUTATIONS = 2,
    WATCH_EVICTIONS = 4,
    WATCH_CONNEVENTS = 8,
    WATCH_SILENT = 16,          /* accepted words cellard has no lines for */
};
struct watch_counts {
    uint64_t worker_written, worker_dropped, watcher_skipped, watcher_sent, watchers;
};

int watch_init(struct server *s);
/* The calling thread is worker number worker; *cfd is the client fd it serves. */
void watch_bind_thread(struct server *s, int worker, const int *cfd);
void watch_stop(struct server *s);
void watch_free(struct server *s);
void watch_command(struct conn *c, const struct mc_req *req);
bool watch_attach(struct conn *c);
void watch_detach(struct conn *c);
/* connevents: a connection accepted (open) or closing for reason ("normal", "error") */
__attribute__((cold)) void watch_conn_event(struct conn *c, bool open, const char *reason);
/* mutations: a store from client fd cfd refused before it reached the engine (no item) */
__attribute__((cold)) void watch_refused_store(struct server *s, int cfd, const char *key,
                                               size_t nkey, enum engine_store_op op,
                                               bool too_large);
void watch_stats(struct server *s, struct watch_counts *out);

#endif
