/*
 * detail.h -- `stats detail`: counts by key prefix (detail.c).
 *
 * One table for the server under one mutex (a debugging aid, bounded):
 * detail_count() may be called from any worker; callers check detail_on()
 * (one relaxed load) first, so with detail off a request pays nothing
 * more.  detail_init() allocates the table; detail_free() frees it once
 * the workers have stopped.
 */
#ifndef CELLAR_SERVER_DETAIL_H
#define CELLAR_SERVER_DETAIL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "protocol/mc_text.h"
#include "server/server.h"

struct conn;

enum detail_op { DETAIL_GET, DETAIL_SET, DETAIL_DEL };

int detail_init(struct server *s);
void detail_free(struct server *s);
__attribute__((cold)) void detail_count(struct server *s, const char *key, size_t nkey,
                                        enum detail_op op, bool hit);
/* Forgets every prefix and its counts (`stats reset`); detail stays on or off. */
void detail_reset(struct server *s);
/* `stats detail on|off|dump`, answered on c's output. */
void detail_command(struct conn *c, const struct mc_req *req);

static inline bool detail_on(const struct server *s) {
    return atomic_load_explicit(&s->detail_on, memory_order_relaxed);
}

#endif
