/*
 * client.c -- the handle: its loop, its window, and the blocking calls.
 *
 * A blocking call builds its requests (one per key), submits each to its
 * server's connection and runs the handle's loop until every one of them
 * is done:
 *
 *   submit all --> pump: while requests in flight < window, let each connection
 *        ^         with waiting requests write a share of them (round robin)
 *        |           |
 *        |         tick: every connection's deadlines (timeouts, probes);
 *        |           |   the earliest one bounds the wait
 *        |         epoll wait --> each ready connection reads and answers
 *        +---------- until the call's count of open requests is 0
 *
 * The window is the paper's incast control: it bounds the requests in
 * flight over all servers, grows by about one per window's worth of
 * answers (1/window per answer) and halves on a timeout, between the
 * configured bounds.  A timeout comes long after an incast's drops (the
 * retransmits recover them first: bench/incast), so what guards the
 * client's port is a second bound, on bytes: the window lets out at most
 * window_bytes of replies, each reckoned at the running mean of the
 * replies so far (1 KB before the first), whatever their count.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/handle_int.h"

#define EVENTS_MAX 64
/* What a reply is reckoned at before any came, and the running mean's weight (1/16). */
#define REPLY_BYTES_FIRST 1024.0

/* ---------------------------------------------------------------------- */
/* The handle                                                               */
/* ---------------------------------------------------------------------- */

int cellar_create(struct cellar **out, struct cellar_config *cfg) {
    *out = NULL;
    struct cellar *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return CELLAR_ENOMEM;
    h->loop = evloop_create();
    h->ring_done = cl_conn_ring_done;
    h->conns = calloc(cfg->nservers, sizeof(*h->conns));
    if (h->loop == NULL || h->conns == NULL) {
        evloop_destroy(&h->loop);
        free(h->conns);
        free(h);
        return CELLAR_ENOMEM;
    }
    h->nroutes = route_set_count(cfg->routes);
    h->route_requests = calloc(h->nroutes ? h->nroutes : 1, sizeof(*h->route_requests));
    if (h->route_requests == NULL) {
        evloop_destroy(&h->loop);
        free(h->conns);
        free(h);
        return CELLAR_ENOMEM;
    }
    h->cfg = cl_config_ref(cfg);
    h->nconns = cfg->nservers;
    for (unsigned i = 0; i < h->nconns; i++) {
        struct cl_conn *c = &h->conns[i];
        c->h = h;
        c->srv = &cfg->servers[i];
        c->pool = &cfg->pools[c->srv->pool];
        c->io = CL_IO_TCP;
        c->fd = -1;
        c->udp.io = CL_IO_UDP;
        c->udp.fd = -1;
        c->waiting.gauge = c->udp.waiting.gauge = &c->ctr.pending;
        c->sent.gauge = &c->ctr.inflight;
        c->probe_backoff_ms = c->pool->probe_min_ms;
    }
    h->window = cfg->window_init;
    h->reply_bytes = REPLY_BYTES_FIRST;
    if (cfg->io_uring && cfg->tls == NULL)
        cl_ring_create(h);          /* else epoll, as the option promises (TLS: tls.c) */
    *out = h;
    return CELLAR_OK;
}

void cellar_destroy(struct cellar **hp) {
    struct cellar *h = *hp;
    if (h == NULL)
        return;
    /*
     * Failing one connection's requests may make a route send them on to
     * another connection (a failover), one already closed: closing makes
     * every such submission fail at once, so nothing is left queued.
     */
    h->closing = true;
    while (h->timers != NULL) {     /* the waits end now: their requests fail */
        struct cl_timer *t = h->timers;
        h->timers = t->next;
        t->fire(t, true);
    }
    h->timers_tail = NULL;
    for (unsigned i = 0; i < h->nconns; i++) {
        cl_conn_deinit(&h->conns[i]);
        cl_spool_detach(&h->conns[i]);  /* once the connection failed what it held */
    }
    /* asynchronous requests answered inside cellar_submit() and not yet told
       (async.c): told now, through their own done */
    while (h->deferred != NULL) {
        struct cl_req *q = h->deferred;
        h->deferred = q->next;
        q->done(q, q->status, NULL);
    }
    cl_ring_destroy(h);
    while (h->blocks != NULL) {
        void *b = h->blocks;
        h->blocks = *(void **)b;
        free(b);
    }
    free(h->conns);
    free(h->udp_buf);
    free(h->route_requests);
    evloop_destroy(&h->loop);
    cellar_config_release(&h->cfg);
    free(h);
    *hp = NULL;
}

static struct cl_conn *pump_pop(struct cellar *h) {
    struct cl_conn *c = h->pump_head;
    if (c) {
        h->pump_head = c->pump_next;
        if (h->pump_head == NULL)
            h->pump_tail = NULL;
        c->in_pump = false;
    }
    return c;
}

/*
 * Lets waiting requests out while the window has room, a share per
 * connection in turn, so that one server's long queue does not keep the
 * others' requests from the wire.
 */
static void pump(struct cellar *h, uint64_t now) {
    unsigned limit = cl_window_now(h);
    while (h->pump_head && h->outstanding < limit) {
        struct cl_conn *c = pump_pop(h);
        unsigned room = limit - h->outstanding, share = room / 4 + 1;
        if (cl_conn_send(c, share, now) > 0 &&
            ((c->waiting.n && c->state == CL_CONN_UP) || c->udp.waiting.n))
            cl_pump_add(h, c);
    }
    if (h->outstanding > h->st.window_peak)
        h->st.window_peak = h->outstanding;
}

/* Is anything in flight or due: requests held, connections opening, servers to probe? */
static bool busy(const struct cellar *h) {
    if (h->timers != NULL)
        return true;
    for (unsigned i = 0; i < h->nconns; i++) {
        const struct cl_conn *c = &h->conns[i];
        if (c->sent.n || c->waiting.n || c->state == CL_CONN_CONNECTING ||
            c->state == CL_CONN_DOWN || c->udp.inflight || c->udp.waiting.n)
            return true;
    }
    return false;
}

/* Hands the events evloop_wait() reported to their connections. */
static void handle_events(const struct ev_fired *ev, int n, uint64_t now) {
    for (int i = 0; i < n; i++) {
        const enum cl_io *io = ev[i].ptr;
        if (io == NULL)
            continue;
        if (*io == CL_IO_UDP)
            cl_udp_io(ev[i].ptr, now);
        else if (*io == CL_IO_RING)
            cl_ring_io(ev[i].ptr, now);
        else
            cl_conn_io(ev[i].ptr, ev[i].events, now);
    }
}

#define RING_PASSES 4

#define SPOOL_SCAN_MS 10

static uint64_t sooner(uint64_t a, uint64_t b) { return a == 0 || (b != 0 && b < a) ? b : a; }

/*
 * Ticks the active connections (struct cellar): each runs its due
 * deadlines and says its next one; one with none leaves the list.  A tick
 * may fail requests that a route sends on to another connection, which
 * then joins the list: it is ticked from the next turn.  Returns the
 * soonest deadline (0: none).
 */
static uint64_t tick_active(struct cellar *h, uint64_t now) {
    struct cl_conn *list = h->active, *kept = NULL, *kept_tail = NULL;
    uint64_t next = 0;
    h->active = NULL;
    while (list != NULL) {
        struct cl_conn *c = list;
        list = c->active_next;
        uint64_t d = cl_conn_tick(c, now);
        if (d == 0 && !c->in_pump) {
            c->in_active = false;
            continue;
        }
        next = sooner(next, d);
        c->active_next = NULL;
        if (kept_tail != NULL)
            kept_tail->active_next = c;
        else
            kept = c;
        kept_tail = c;
    }
    if (kept_tail != NULL) {            /* those that joined meanwhile, then the kept */
        kept_tail->active_next = h->active;
        h->active = kept;
    }
    return next;
}

/* Lets waiting requests out and runs the due deadlines; the next one (0: none). */
void cl_timer_add(struct cellar *h, struct cl_timer *t) {
    t->next = NULL;
    if (h->timers == NULL) {
        h->timers = h->timers_tail = t;
    } else if (t->due >= h->timers_tail->due) {     /* the common case: one delay */
        h->timers_tail->next = t;
        h->timers_tail = t;
    } else {
        struct cl_timer **pp = &h->timers;
        while ((*pp)->due <= t->due)
            pp = &(*pp)->next;
        t->next = *pp;
        *pp = t;
    }
}

/* Fires the timers due by now; the next one's due, or 0. */
static uint64_t timers_run(struct cellar *h, uint64_t now) {
    while (h->timers != NULL && h->timers->due <= now) {
        struct cl_timer *t = h->timers;
        h->timers = t->next;
        if (h->timers == NULL)
            h->timers_tail = NULL;
        t->fire(t, false);          /* may add timers */
    }
    return h->timers != NULL ? h->timers->due : 0;
}

static uint64_t pump_and_tick(struct cellar *h, uint64_t now, uint64_t next) {
    next = sooner(next, timers_run(h, now));
    pump(h, now);
    next = sooner(next, tick_active(h, now));
    /* a spool fills from other threads: its servers are looked at now and then */
    if (h->spooled && now >= h->spool_scan_ns) {
        h->spool_scan_ns = now + (uint64_t)SPOOL_SCAN_MS * 1000000u;
        for (unsigned i = 0; i < h->nconns; i++)
            next = sooner(next, cl_spool_tick(&h->conns[i], now));
    }
    pump(h, now);
    /*
     * On a ring: what the pump and the completions prepared goes at once.
     * The kernel mostly finishes a send inside that call: taking its
     * completion here lets what waited behind it go in this turn too.
     */
    for (int pass = 0; h->ring && pass < RING_PASSES; pass++) {
        if (!cl_ring_submit(h))
            break;
        cl_ring_io(h->ring, now);
        if (h->pump_head == NULL)
            break;
        pump(h, now);
    }
    cl_ring_submit(h);
    return next;
}

/*
 * Runs the loop until *left reaches 0 (left != NULL), or until `until`
 * (a clock time, 0 for none) or until nothing is left to do (left NULL).
 */
static void run(struct cellar *h, const unsigned *left, uint64_t until) {
    struct ev_fired ev[EVENTS_MAX];
    for (;;) {
        uint64_t now = clock_mono_ns(), next = pump_and_tick(h, now, until);
        if (left ? *left == 0 : (!busy(h) || (until && now >= until)))
            return;
        int ms = 1000;
        if (next) {
            uint64_t wait = next > now ? next - now : 0;
            ms = wait >= 1000000000u ? 1000 : (int)((wait + 999999) / 1000000);
        }
        if (h->ring != NULL && evloop_count(h->loop) == 1) {
            cl_ring_wait(h, ms);    /* nothing but the ring to wait for: wait in it */
            continue;
        }
        int n = evloop_wait(h->loop, ev, EVENTS_MAX, ms);
        handle_events(ev, n, clock_mono_ns());
    }
}

int cl_async_fd(const struct cellar *h) {
    return evloop_fd(h->loop);
}

void cl_async_submit(struct cellar *h, struct cl_req *q) {
    /* a router's client may send any key its protocol can; each wire says
       which it can carry (msg_key_any) */
    if (msg_op_keyed(q->m.op) && !msg_key_any(q->m.key)) {
        q->done(q, CELLAR_EINVAL, NULL);
        return;
    }
    route_dispatch(h->cfg->root, h, q);
}

void cl_async_submit_to(struct cellar *h, unsigned server, struct cl_req *q) {
    cl_conn_submit(&h->conns[server], q);
}

uint64_t cl_async_run(struct cellar *h, bool io) {
    if (io && h->ring) {
        cl_ring_io(h->ring, clock_mono_ns());
        io = evloop_count(h->loop) > 1;     /* the loop has more than the ring's descriptor */
    }
    if (io) {
        struct ev_fired ev[EVENTS_MAX];
        int n = evloop_wait(h->loop, ev, EVENTS_MAX, 0);
        handle_events(ev, n, clock_mono_ns());
    }
    return pump_and_tick(h, clock_mono_ns(), 0);
}

void cellar_poll(struct cellar *h, int timeout_ms) {
    if (timeout_ms <= 0) {          /* one pass: what is ready, what is due */
        cl_async_run(h, true);
        return;
    }
    run(h, NULL, clock_mono_ns() + (uint64_t)timeout_ms * 1000000u);
}

void cellar_last_error(const struct cellar *h, struct cellar_error *out) {
    *out = h->last_error;
}

int cellar_server_of(struct cellar *h, const char *key, size_t nkey) {
    if (!msg_key_ok((struct mc_span){key, nkey}))
        return CELLAR_EINVAL;
    int s = route_server_of(h->cfg->root, h->cfg, key, nkey);
    return s >= 0 ? s : CELLAR_ENOTSUP;
}

int cellar_server_down(const struct cellar *h, unsigned i) {
    return i < h->nconns && (h->conns[i].state == CL_CONN_DOWN || h->conns[i].probing);
}

void cellar_stats(const struct cellar *h, struct cellar_stats *out) {
    *out = h->st;
    out->window = cl_window_now(h);
}

/* ---------------------------------------------------------------------- */
/* Blocking calls                                                           */
/* ---------------------------------------------------------------------- */

/* What one blocking call waits for and where its answers go. */
struct call {
    unsigned left;              /* requests not yet done */
    struct cl_req *reqs;        /* items[i] answers reqs[i] */
    struct cellar_item *items;  /* NULL: answers are not fetched values */
    int status;                 /* single requests: the status */
    struct cl_answer ans;       /* single requests: the reply's other fields */
    char *text;                 /* version: where the text goes */
    size_t text_cap;
    const struct msg_wire *wire;/* stats: the server's wire, to walk the reply */
    void (*each)(void *arg, const char *name, size_t nname, const char *value, size_t nvalue);
    void *each_arg;
    struct cellar_meta_reply *meta; /* a raw meta command's answer */
};

void cellar_item_clear(struct cellar_item *it) {
    free(it->value);
    memset(it, 0, sizeof(*it));
}

/* Copies a hit into the caller's item (NUL-terminated). */
static int take_value(struct cellar_item *it, const struct msg_reply *r) {
    it->value = malloc(r->value.len + 1);
    if (it->value == NULL)
        return CELLAR_ENOMEM;
    if (r->value.len)
        memcpy(it->value, r->value.p, r->value.len);
    it->value[r->value.len] = '\0';
    it->nvalue = r->value.len;
    it->flags = r->flags;
    it->cas = r->cas;
    return CELLAR_OK;
}

/* Copies a raw meta command's answer (code, return flags, value) for the caller. */
static int take_meta(struct cellar_meta_reply *out, int status, const struct msg_reply *r) {
    memcpy(out->code, r->code, 2);
    out->code[2] = '\0';
    out->flags = malloc(r->msg.len + 1);
    out->value = malloc(r->value.len + 1);
    if (out->flags == NULL || out->value == NULL)
        return CELLAR_ENOMEM;
    /* Spans may be {NULL, 0}; memcpy from NULL is undefined even for nothing. */
    if (r->msg.len)
        memcpy(out->flags, r->msg.p, r->msg.len);
    out->flags[r->msg.len] = '\0';
    if (r->value.len)
        memcpy(out->value, r->value.p, r->value.len);
    out->value[r->value.len] = '\0';
    out->nvalue = r->value.len;
    return status;
}

static void call_done(struct cl_req *q, int status, const struct msg_reply *r) {
    struct call *k = q->arg;
    if (r && r->res == MSG_RES_HIT && k->items)
        status = take_value(&k->items[q - k->reqs], r);
    if (k->items)
        k->items[q - k->reqs].status = status;
    if (r) {
        k->ans = (struct cl_answer){.number = r->number, .won = r->won,
                                    .token_sent = r->token_sent, .stale = r->stale,
                                    .ttl = r->ttl};
    }
    if (r && k->meta && r->code[0])
        status = take_meta(k->meta, status, r);
    if (r && r->res == MSG_RES_STATS && k->each) {
        struct mc_span rest = r->value, name, value;
        while (k->wire->stat_next(&rest, &name, &value))
            k->each(k->each_arg, name.p, name.len, value.p, value.len);
    }
    if (r && r->res == MSG_RES_VERSION && k->text_cap) {
        size_t n = r->msg.len < k->text_cap - 1 ? r->msg.len : k->text_cap - 1;
        if (n)
            memcpy(k->text, r->msg.p, n);
        k->text[n] = '\0';
    }
    /* A batch keeps its first failure (a single request: its status). */
    if (k->status == CELLAR_OK)
        k->status = status;
    k->left--;
}

/* Submits k's requests (each to server srv[i], or down the route tree when srv is NULL) and waits. */
static void call_run(struct cellar *h, struct call *k, unsigned n, const unsigned *srv) {
    k->left = n;
    for (unsigned i = 0; i < n; i++) {
        struct cl_req *q = &k->reqs[i];
        q->done = call_done;
        q->arg = k;
        if (msg_op_keyed(q->m.op) && !msg_key_ok(q->m.key)) {
            call_done(q, CELLAR_EINVAL, NULL);
            continue;
        }
        if (srv)
            cl_conn_submit(&h->conns[srv[i]], q);
        else
            route_dispatch(h->cfg->root, h, q);
    }
    run(h, &k->left, 0);
}

int cl_call_one(struct cellar *h, const struct msg *m, struct cellar_item *it,
                struct cl_answer *ans) {
    struct cl_req q = {.m = *m};
    struct call k = {.reqs = &q, .items = it, .ans = {.ttl = -1}};
    if (it)
        memset(it, 0, sizeof(*it));
    call_run(h, &k, 1, NULL);
    if (ans)
        *ans = k.ans;
    return k.status;
}

/* One keyed request; its item (for gets) and number (incr/decr) come back. */
static int call_one(struct cellar *h, struct msg m, struct cellar_item *it, uint64_t *number) {
    struct cl_answer ans;
    int status = cl_call_one(h, &m, it, &ans);
    if (number && status == CELLAR_OK)
        *number = ans.number;
    return status;
}

void cl_pause(struct cellar *h, int ms) {
    uint64_t until = clock_mono_ns() + (uint64_t)ms * 1000000u;
    run(h, NULL, until);
    uint64_t now = clock_mono_ns();
    if (now < until) {
        struct timespec ts = {(time_t)((until - now) / 1000000000u),
                              (long)((until - now) % 1000000000u)};
        nanosleep(&ts, NULL);
    }
}

static struct mc_span span(const void *p, size_t n) {
    return (struct mc_span){p, n};
}

static int get_op(struct cellar *h, enum msg_op op, const char *key, size_t nkey,
                  int64_t exptime, struct cellar_item *it) {
    return call_one(h, (struct msg){.op = op, .key = span(key, nkey), .exptime = exptime}, it,
                    NULL);
}

int cellar_get(struct cellar *h, const char *key, size_t nkey, struct cellar_item *it) {
    if (h->near && msg_key_ok(span(key, nkey))) {
        memset(it, 0, sizeof(*it));
        if (cl_near_get(h->near, key, nkey, it)) {
            h->st.near_hits++;
            return CELLAR_OK;
        }
    }
    unsigned gen = h->near ? cl_near_gen(h->near, key, nkey) : 0;
    int status = get_op(h, MSG_GET, key, nkey, 0, it);
    if (h->near && status == CELLAR_OK)
        cl_near_put(h->near, key, nkey, it->value, it->nvalue, it->flags, gen);
    return status;
}

int cellar_gets(struct cellar *h, const char *key, size_t nkey, struct cellar_item *it) {
    return get_op(h, MSG_GETS, key, nkey, 0, it);
}

int cellar_gat(struct cellar *h, const char *key, size_t nkey, int64_t exptime,
               struct cellar_item *it) {
    return get_op(h, MSG_GAT, key, nkey, exptime, it);
}

int cellar_gats(struct cellar *h, const char *key, size_t nkey, int64_t exptime,
                struct cellar_item *it) {
    return get_op(h, MSG_GATS, key, nkey, exptime, it);
}

int cellar_mget(struct cellar *h, const char *const *keys, const size_t *nkeys, size_t n,
                struct cellar_item *items) {
    if (n == 0)
        return CELLAR_OK;
    if (n > UINT32_MAX)
        return CELLAR_EINVAL;
    struct cl_req *reqs = calloc(n, sizeof(*reqs));
    if (reqs == NULL)
        return CELLAR_ENOMEM;
    memset(items, 0, n * sizeof(*items));
    /*
     * Keys the near-cache answers are left out of the requests; map[j]
     * says which key request j is, and the key's drop generation before
     * the fetch (cl_near_put keeps nothing a write dropped meanwhile).
     */
    struct { size_t idx; unsigned gen; } *map = h->near ? malloc(n * sizeof(*map)) : NULL;
    size_t m = 0;
    if (h->near && map == NULL) {
        free(reqs);
        return CELLAR_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        struct mc_span key = span(keys[i], nkeys[i]);
        if (map && msg_key_ok(key)) {
            map[m].gen = cl_near_gen(h->near, key.p, key.len);
            if (cl_near_get(h->near, key.p, key.len, &items[i])) {
                h->st.near_hits++;
                continue;
            }
        }
        if (map)
            map[m].idx = i;
        reqs[m++].m = (struct msg){.op = MSG_GET, .key = key};
    }
    struct cellar_item *got = map ? calloc(m ? m : 1, sizeof(*got)) : items;
    if (got == NULL) {
        free(reqs);
        free(map);
        return CELLAR_ENOMEM;
    }
    struct call k = {.reqs = reqs, .items = got};
    call_run(h, &k, (unsigned)m, NULL);
    if (map) {
        for (size_t j = 0; j < m; j++) {
            struct cellar_item *it = &got[j];
            if (it->status == CELLAR_OK)
                cl_near_put(h->near, reqs[j].m.key.p, reqs[j].m.key.len, it->value, it->nvalue,
                            it->flags, map[j].gen);
            items[map[j].idx] = *it;
        }
        free(got);
        free(map);
    }
    free(reqs);
    return CELLAR_OK;
}

int cellar_mget_failures(struct cellar *h, const char *const *keys, const size_t *nkeys,
                         size_t n, struct cellar_item *items, size_t *nfailed) {
    int rc = cellar_mget(h, keys, nkeys, n, items);
    size_t failed = 0;
    for (size_t i = 0; rc == CELLAR_OK && i < n; i++)
        failed += items[i].status != CELLAR_OK && items[i].status != CELLAR_NOT_FOUND;
    *nfailed = rc == CELLAR_OK ? failed : n;
    return rc;
}

/*
 * A write of the handle's own: its key leaves the near-cache before it is
 * sent and again once it is answered (near.c says why both).
 */
static void forget(struct cellar *h, const char *key, size_t nkey) {
    if (h->near && msg_key_ok(span(key, nkey)))
        cl_near_forget(h->near, key, nkey);
}

/*
 * Runs n writes at once (reqs from calloc, their msgs filled; both freed
 * here), pipelined per server under the window, the near-cache's copies
 * of their keys dropped before and after; statuses[i] is each one's.
 */
static int write_batch(struct cellar *h, struct cl_req *reqs, size_t n, int *statuses) {
    struct cellar_item *items = calloc(n, sizeof(*items));
    if (items == NULL) {
        free(reqs);
        return CELLAR_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        forget(h, reqs[i].m.key.p, reqs[i].m.key.len);
    struct call k = {.reqs = reqs, .items = items};
    call_run(h, &k, (unsigned)n, NULL);
    for (size_t i = 0; i < n; i++) {
        forget(h, reqs[i].m.key.p, reqs[i].m.key.len);
        statuses[i] = items[i].status;
    }
    free(reqs);
    free(items);
    return CELLAR_OK;
}

/* n requests for write_batch(); NULL with *rc (CELLAR_OK for none at all). */
static struct cl_req *batch_new(size_t n, int *rc) {
    struct cl_req *reqs = n == 0 || n > UINT32_MAX ? NULL : calloc(n, sizeof(*reqs));
    *rc = reqs != NULL || n == 0 ? CELLAR_OK : n > UINT32_MAX ? CELLAR_EINVAL : CELLAR_ENOMEM;
    return reqs;
}

int cellar_mdelete(struct cellar *h, const char *const *keys, const size_t *nkeys, size_t n,
                   int *statuses) {
    int rc = CELLAR_OK;
    struct cl_req *reqs = batch_new(n, &rc);
    if (reqs == NULL)
        return rc;
    for (size_t i = 0; i < n; i++)
        reqs[i].m = (struct msg){.op = MSG_DELETE, .key = span(keys[i], nkeys[i])};
    return write_batch(h, reqs, n, statuses);
}

int cellar_mset(struct cellar *h, const char *const *keys, const size_t *nkeys,
                const void *const *values, const size_t *nvalues, size_t n, uint32_t flags,
                int64_t exptime, int *statuses) {
    int rc = CELLAR_OK;
    struct cl_req *reqs = batch_new(n, &rc);
    if (reqs == NULL)
        return rc;
    for (size_t i = 0; i < n; i++)
        reqs[i].m = (struct msg){.op = MSG_SET, .key = span(keys[i], nkeys[i]),
                                 .value = span(values[i], nvalues[i]), .flags = flags,
                                 .exptime = exptime};
    return write_batch(h, reqs, n, statuses);
}

static int store_op(struct cellar *h, enum msg_op op, const char *key, size_t nkey,
                    const void *value, size_t nvalue, uint32_t flags, int64_t exptime,
                    uint64_t cas) {
    forget(h, key, nkey);
    struct msg m = {.op = op, .key = span(key, nkey), .value = span(value, nvalue),
                    .flags = flags, .exptime = exptime, .cas = cas};
    int status = call_one(h, m, NULL, NULL);
    forget(h, key, nkey);
    return status;
}

int cellar_set(struct cellar *h, const char *key, size_t nkey, const void *value, size_t nvalue,
               uint32_t flags, int64_t exptime) {
    return store_op(h, MSG_SET, key, nkey, value, nvalue, flags, exptime, 0);
}

/* CELLAR_REMOTE_MARKER + key into buf (CELLAR_KEY_MAX + 1 bytes); its length, or 0. */
static size_t marker_key(char *buf, const char *key, size_t nkey) {
    size_t np = sizeof(CELLAR_REMOTE_MARKER) - 1;
    if (nkey == 0 || nkey + np > CELLAR_KEY_MAX)
        return 0;
    memcpy(buf, CELLAR_REMOTE_MARKER, np);
    memcpy(buf + np, key, nkey);
    return np + nkey;
}

int cellar_remote_mark(struct cellar *h, const char *key, size_t nkey, int ttl) {
    char mk[CELLAR_KEY_MAX + 1];
    size_t n = marker_key(mk, key, nkey);
    if (n == 0 || ttl <= 0)
        return CELLAR_EINVAL;
    return cellar_set(h, mk, n, "1", 1, 0, ttl);
}

int cellar_get_marked(struct cellar *h, const char *key, size_t nkey, struct cellar_item *it,
                      int *marked) {
    char mk[CELLAR_KEY_MAX + 1];
    size_t n = marker_key(mk, key, nkey);
    *marked = 0;
    memset(it, 0, sizeof(*it));
    if (n == 0)
        return CELLAR_EINVAL;
    const char *keys[2] = {key, mk};
    size_t lens[2] = {nkey, n};
    struct cellar_item items[2];
    int rc = cellar_mget(h, keys, lens, 2, items);
    if (rc != CELLAR_OK)
        return rc;
    *marked = items[1].status == CELLAR_OK;
    cellar_item_clear(&items[1]);
    *it = items[0];
    return it->status;
}

int cellar_add(struct cellar *h, const char *key, size_t nkey, const void *value, size_t nvalue,
               uint32_t flags, int64_t exptime) {
    return store_op(h, MSG_ADD, key, nkey, value, nvalue, flags, exptime, 0);
}

int cellar_replace(struct cellar *h, const char *key, size_t nkey, const void *value,
                   size_t nvalue, uint32_t flags, int64_t exptime) {
    return store_op(h, MSG_REPLACE, key, nkey, value, nvalue, flags, exptime, 0);
}

int cellar_append(struct cellar *h, const char *key, size_t nkey, const void *value,
                  size_t nvalue) {
    return store_op(h, MSG_APPEND, key, nkey, value, nvalue, 0, 0, 0);
}

int cellar_prepend(struct cellar *h, const char *key, size_t nkey, const void *value,
                   size_t nvalue) {
    return store_op(h, MSG_PREPEND, key, nkey, value, nvalue, 0, 0, 0);
}

int cellar_cas(struct cellar *h, const char *key, size_t nkey, const void *value, size_t nvalue,
               uint32_t flags, int64_t exptime, uint64_t cas) {
    return store_op(h, MSG_CAS, key, nkey, value, nvalue, flags, exptime, cas);
}

/* A keyed write other than a store: the near-cache drops its key around it. */
static int write_op(struct cellar *h, struct msg m, uint64_t *number) {
    forget(h, m.key.p, m.key.len);
    int status = call_one(h, m, NULL, number);
    forget(h, m.key.p, m.key.len);
    return status;
}

int cellar_delete(struct cellar *h, const char *key, size_t nkey) {
    return write_op(h, (struct msg){.op = MSG_DELETE, .key = span(key, nkey)}, NULL);
}

int cellar_touch(struct cellar *h, const char *key, size_t nkey, int64_t exptime) {
    return write_op(h, (struct msg){.op = MSG_TOUCH, .key = span(key, nkey), .exptime = exptime},
                    NULL);
}

int cellar_incr(struct cellar *h, const char *key, size_t nkey, uint64_t delta, uint64_t *value) {
    return write_op(h, (struct msg){.op = MSG_INCR, .key = span(key, nkey), .delta = delta},
                    value);
}

int cellar_decr(struct cellar *h, const char *key, size_t nkey, uint64_t delta, uint64_t *value) {
    return write_op(h, (struct msg){.op = MSG_DECR, .key = span(key, nkey), .delta = delta},
                    value);
}

int cellar_flush_all(struct cellar *h, int64_t delay) {
    if (h->near)
        cl_near_flush(h->near);
    unsigned n = h->nconns;
    struct cl_req *reqs = calloc(n, sizeof(*reqs));
    unsigned *srv = calloc(n, sizeof(*srv));
    if (reqs == NULL || srv == NULL) {
        free(reqs);
        free(srv);
        return CELLAR_ENOMEM;
    }
    for (unsigned i = 0; i < n; i++) {
        reqs[i].m = (struct msg){.op = MSG_FLUSH_ALL, .exptime = delay};
        srv[i] = i;
    }
    struct call k = {.reqs = reqs};
    call_run(h, &k, n, srv);
    free(reqs);
    free(srv);
    return k.status;
}

int cellar_meta(struct cellar *h, char cmd, const char *key, size_t nkey, const char *flags,
                const void *value, size_t nvalue, struct cellar_meta_reply *out) {
    memset(out, 0, sizeof(*out));
    struct mc_span f = span(flags ? flags : "", flags ? strlen(flags) : 0);
    if (!msg_meta_ok(cmd, f)) {
        out->status = CELLAR_EINVAL;
        return CELLAR_EINVAL;
    }
    if (cmd == 's' || cmd == 'd' || cmd == 'a')
        forget(h, key, nkey);
    struct cl_req q = {.m = {.op = MSG_META, .meta_cmd = cmd, .key = span(key, nkey),
                             .meta_flags = f,
                             .value = span(value, nvalue)}};
    struct call k = {.reqs = &q, .meta = out};
    call_run(h, &k, 1, NULL);
    if (cmd == 's' || cmd == 'd' || cmd == 'a')
        forget(h, key, nkey);
    out->status = k.status;
    return k.status;
}

void cellar_meta_reply_clear(struct cellar_meta_reply *r) {
    free(r->flags);
    free(r->value);
    memset(r, 0, sizeof(*r));
}

int cellar_server_stats(struct cellar *h, unsigned i, const char *group,
                        void (*each)(void *arg, const char *name, size_t nname,
                                     const char *value, size_t nvalue),
                        void *arg) {
    if (i >= h->nconns)
        return CELLAR_EINVAL;
    struct mc_span g = span(group ? group : "", group ? strlen(group) : 0);
    if (!msg_group_ok(g))
        return CELLAR_EINVAL;
    struct cl_req q = {.m = {.op = MSG_STATS, .key = g}};
    struct call k = {.reqs = &q, .wire = h->conns[i].pool->wire, .each = each, .each_arg = arg};
    call_run(h, &k, 1, &i);
    return k.status;
}

int cellar_version(struct cellar *h, unsigned i, char *buf, size_t cap) {
    if (i >= h->nconns)
        return CELLAR_EINVAL;
    if (cap)
        buf[0] = '\0';
    struct cl_req q = {.m = {.op = MSG_VERSION}};
    struct call k = {.reqs = &q, .text = buf, .text_cap = cap};
    call_run(h, &k, 1, &i);
    return k.status;
}

/* ---- the route interface's accessors (route_api.h) ---- */

const struct cellar_config *cl_handle_config(const struct cellar *h) { return h->cfg; }

uint64_t cl_handle_failovers(const struct cellar *h) { return cl_count_get(&h->failovers); }

uint64_t cl_handle_route_requests(const struct cellar *h, unsigned i) {
    return i < h->nroutes ? cl_count_get(&h->route_requests[i]) : 0;
}

unsigned cl_handle_servers(const struct cellar *h) { return h->nconns; }

const struct cl_conn_counters *cl_handle_server_counters(const struct cellar *h, unsigned i) {
    return &h->conns[i].ctr;
}
