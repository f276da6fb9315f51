/*
 * dispatch.h -- a parsed request becomes engine calls and memcached's
 * answer: text (dispatch.c), meta (dispatch_meta.c) and binary
 * (dispatch_bin.c).
 *
 * The worker's parse loop (worker.c) calls these for each request it
 * parsed, and the *_nread_done() functions when a value has been read.
 * They run on the connection's worker, reach the engine, the settings and
 * the counters through c->ctx (ctx.h), append replies to c's output
 * (net/out.h), and may change c's state (conn.h) to read or skip a value.
 * They never block; values go out by reference.
 */
#ifndef CELLAR_SERVER_DISPATCH_H
#define CELLAR_SERVER_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_text.h"
#include "storage/engine.h"

struct conn;
struct mc_meta_req;
struct mc_bin_req;

/* Runs one parsed text request; may change c's state. */
void dispatch_text(struct conn *c, struct mc_req *req);
/* Answers a request line the codec refused. */
void dispatch_text_error(struct conn *c, struct mc_req *req);
/* A text value has been read completely (CONN_NREAD done). */
void dispatch_nread_done(struct conn *c);
/*
 * Bookkeeping every protocol shares when a store gets no item: counts it,
 * removes the old value when asked (a failed set must not leave stale
 * data behind) and skips the value.  The caller writes its answer.
 */
void dispatch_alloc_failed(struct conn *c, enum engine_alloc_err err, const char *key,
                           size_t nkey, enum engine_store_op op, bool drop_old, uint64_t skip);
/* Counts an incr/decr as a hit in class hit_cls, or a miss (hit_cls 0). */
void dispatch_count_arith(struct conn *c, bool decr, unsigned hit_cls);

/* dispatch_meta.c: runs one meta request (r: what mc_meta_parse answered for it,
   OK or ERROR); may change c's state. */
void dispatch_meta(struct conn *c, struct mc_meta_req *req, enum mc_parse r);
/* dispatch_meta.c: an ms value has been read completely (CONN_NREAD with nmeta). */
void dispatch_meta_nread_done(struct conn *c);

/* dispatch_bin.c: runs one binary request, or answers one the codec refused. */
void dispatch_bin(struct conn *c, struct mc_bin_req *r);
void dispatch_bin_error(struct conn *c, struct mc_bin_req *r);
/* dispatch_bin.c: a binary value has been read completely. */
void dispatch_bin_nread_done(struct conn *c);

#endif
