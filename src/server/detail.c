/*
 * detail.c -- `stats detail`: counts by key prefix, as memcached keeps them.
 *
 * With detail on (`stats detail on`, or -D at startup), every key of a
 * get, gets, gat or gats (hit or miss), of a storage command (whatever its
 * outcome) and of a delete is counted under its prefix: the bytes before
 * the first delimiter (-D, ':' by default), or before a NUL, as memcached
 * cuts it; a key without a delimiter is not counted.  The binary protocol
 * counts the same way; meta commands, touch and incr/decr are not counted
 * (memcached 1.6.18 counts none of them).  `stats detail dump` lists
 * "PREFIX <p> get <n> hit <n> set <n> del <n>" lines (in no set order),
 * then END.  Counts survive `stats detail off`; `stats reset` forgets every
 * prefix, as memcached's does.
 *
 * One table for the server under one mutex, like memcached's: detail is a
 * debugging aid, and with it off a request pays one relaxed load.  Unlike
 * memcached the table is bounded: past DETAIL_MAX prefixes, new ones are
 * not counted (their memory lies outside -m).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/detail.h"
#include "server/server.h"

#define DETAIL_BUCKETS 256
#define DETAIL_MAX 100000

struct prefix {
    struct prefix *next;
    uint64_t get, hit, set, del;
    size_t len;
    char name[];
};

struct detail {
    pthread_mutex_t lock;
    struct prefix *bucket[DETAIL_BUCKETS];
    unsigned n;
};

int detail_init(struct server *s) {
    s->detail = calloc(1, sizeof(*s->detail));
    if (s->detail == NULL)
        return -1;
    pthread_mutex_init(&s->detail->lock, NULL);
    atomic_store(&s->detail_on, s->cfg->detail_enabled);
    return 0;
}

/* Frees every prefix of d's table; the caller holds d->lock or owns d alone. */
static void prefixes_free(struct detail *d) {
    for (int b = 0; b < DETAIL_BUCKETS; b++) {
        for (struct prefix *p = d->bucket[b], *next; p != NULL; p = next) {
            next = p->next;
            free(p);
        }
        d->bucket[b] = NULL;
    }
    d->n = 0;
}

void detail_free(struct server *s) {
    if (s->detail == NULL)
        return;
    prefixes_free(s->detail);
    pthread_mutex_destroy(&s->detail->lock);
    free(s->detail);
    s->detail = NULL;
}

/* The prefix's counters, created on first sight; NULL when the key has none. */
static struct prefix *prefix_of(struct detail *d, char delim, const char *key, size_t nkey) {
    size_t len = 0;
    while (len < nkey && key[len] != '\0' && key[len] != delim)
        len++;
    if (len == nkey)
        return NULL;
    unsigned b = (unsigned)(hash_bytes(key, len, 0) % DETAIL_BUCKETS);
    for (struct prefix *p = d->bucket[b]; p != NULL; p = p->next)
        if (p->len == len && memcmp(p->name, key, len) == 0)
            return p;
    if (d->n >= DETAIL_MAX)
        return NULL;
    struct prefix *p = calloc(1, sizeof(*p) + len + 1);
    if (p == NULL)
        return NULL;
    memcpy(p->name, key, len);
    p->len = len;
    p->next = d->bucket[b];
    d->bucket[b] = p;
    d->n++;
    return p;
}

void detail_reset(struct server *s) {
    if (s->detail == NULL)
        return;
    pthread_mutex_lock(&s->detail->lock);
    prefixes_free(s->detail);
    pthread_mutex_unlock(&s->detail->lock);
}

void detail_count(struct server *s, const char *key, size_t nkey, enum detail_op op, bool hit) {
    struct detail *d = s->detail;
    pthread_mutex_lock(&d->lock);
    struct prefix *p = prefix_of(d, s->cfg->prefix_delimiter, key, nkey);
    if (p != NULL) {
        switch (op) {
        case DETAIL_GET:
            p->get++;
            p->hit += hit;
            break;
        case DETAIL_SET:
            p->set++;
            break;
        case DETAIL_DEL:
            p->del++;
            break;
        }
    }
    pthread_mutex_unlock(&d->lock);
}

void detail_command(struct conn *c, const struct mc_req *req) {
    struct server *s = c->ctx->srv;
    bool on = mc_req_word_is(req, 2, "on");
    if (on || mc_req_word_is(req, 2, "off")) {
        atomic_store(&s->detail_on, on);
        out_copy(&c->net.out, S("OK\r\n"));
    } else if (mc_req_word_is(req, 2, "dump")) {
        pthread_mutex_lock(&s->detail->lock);
        for (int b = 0; b < DETAIL_BUCKETS; b++)
            for (struct prefix *p = s->detail->bucket[b]; p != NULL; p = p->next)
                out_printf(&c->net.out,
                           "PREFIX %s get %" PRIu64 " hit %" PRIu64 " set %" PRIu64
                           " del %" PRIu64 "\r\n", p->name, p->get, p->hit, p->set, p->del);
        pthread_mutex_unlock(&s->detail->lock);
        out_copy(&c->net.out, S("END\r\n"));
    } else {
        out_copy(&c->net.out, S("CLIENT_ERROR usage: stats detail on|off|dump\r\n"));
    }
}
