/*
 * worker.c -- cellard on the network core: what a connection's bytes mean.
 *
 * net/ reads a connection's input into rbuf and calls conn_process() once
 * per read; conn_process() runs every complete request in it (up to
 * reqs_per_event) through the codecs and dispatch, and sends all their
 * replies with one writev():
 *
 *   net: readable --> read() once into rbuf --> conn_process():
 *        parse, dispatch, ..., parse --> net_conn_flush()
 *
 * A connection that still has parsed-but-not-run requests after its
 * budget yields (net puts it on the ready list) and is resumed after the
 * other connections had their turn (conn_yields).  Values are read
 * straight into their item (conn.c: from rbuf, or for a large one by
 * readv() into the item itself, net's read_direct).  A worker's UDP
 * sockets are connections too, each datagram run through the same
 * conn_process().  This file calls down into the dispatchers and conn.c;
 * nothing calls back into it but net (conn_ops) and main.c.
 */
#include <stdlib.h>
#include <sys/socket.h>

#include "protocol/mc_bin.h"
#include "protocol/mc_meta.h"
#include "server/auth.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/dispatch.h"
#include "server/dump.h"
#include "server/sasl.h"
#include "server/server.h"
#include "server/udp.h"
#include "server/watch.h"
#include "server/worker.h"

#define OUT_HIGH_WATER (1u << 20)

static void conn_close(struct conn *c);

/* The application's half of a connection's end: what it hangs off c (net frees the rest). */
static void conn_release(struct net_conn *nc) {
    struct conn *c = (struct conn *)nc;
    if (c->nitem != NULL)
        engine_item_unref(c->ctx->engine, c->nitem);
    watch_detach(c);
    dump_free(c);
    sasl_conn_end(c);
    conn_pf_forget(c);
    free(c->mpend);
    if (c->is_udp) {
        free(c->net.rbuf);      /* a datagram buffer, not one of the pool's */
        c->net.rbuf = NULL;
    }
}

/* memcached reports a watcher's end as an error, whoever ended it. */
static void conn_closing(struct net_conn *nc) {
    struct conn *c = (struct conn *)nc;
    c->ctx->cfd = c->net.fd;
    watch_conn_event(c, false, c->net.close_normal && c->watcher == NULL ? "normal" : "error");
    watch_detach(c);
}

static void conn_opened(struct net_conn *nc) {
    struct conn *c = (struct conn *)nc;
    c->ctx = &((struct worker *)nc->w)->ctx;
    atomic_store(&c->net.last_active, engine_clock(c->ctx->engine));
    watch_conn_event(c, true, NULL);
}

/* A UDP "connection" is never closed: it forgets the datagram in hand. */
static void udp_reset(struct conn *c) {
    if (c->nitem != NULL) {
        engine_item_unref(c->ctx->engine, c->nitem);
        c->nitem = NULL;
    }
    c->nmeta = false;
    out_reset(&c->net.out);
    c->net.rstart = c->net.rend = 0;
    conn_pf_forget(c);
    c->net.close_after_write = false;
    conn_set_state(c, CONN_PARSE);
}

static void conn_close(struct conn *c) {
    if (c->is_udp)
        udp_reset(c);
    else
        net_conn_close(&c->net);
}

/* Writes pending output.  Returns false if the connection was closed. */
static bool conn_flush(struct conn *c) {
    if (c->is_udp) {
        udp_send_reply(c);
        return true;
    }
    return net_conn_flush(&c->net);
}

/*
 * Parses and runs one binary request.  Returns false when it must wait
 * for more bytes.
 */
static bool conn_process_bin(struct conn *c) {
    struct mc_bin_req req;
    size_t used = 0;
    enum mc_parse r = mc_bin_parse(&req, c->net.rbuf + c->net.rstart, c->net.rend - c->net.rstart, &used);
    if (r == MC_PARSE_NEED_MORE)
        return false;
    if (r == MC_PARSE_CLOSE) {
        /* Answers to the requests before this one still go out (memcached's order). */
        c->net.close_after_write = true;
        return true;
    }
    c->net.rstart += used;
    atomic_store_explicit(&c->net.last_active, engine_clock(c->ctx->engine), memory_order_relaxed);
    if (!out_resp_take(&c->net.out, 1)) {
        conn_set_state(c, CONN_CLOSING);    /* read_buf_mem_limit spent: memcached closes */
        return true;
    }
    if (c->ctx->cfg->sasl && sasl_bin(c, &req, r))
        return true;                        /* -S: SASL's requests, or refused before them */
    if (r == MC_PARSE_ERROR)
        dispatch_bin_error(c, &req);
    else
        dispatch_bin(c, &req);
    return true;
}

/*
 * A watcher (watch.c): what it sends is dropped; once the replies it was
 * owed are out, the watch thread takes over its output.
 */
__attribute__((cold)) static bool conn_watch(struct conn *c) {
    c->net.rstart = c->net.rend;
    if (c->watcher != NULL)
        return true;
    if (!out_empty(&c->net.out)) {
        /* the watcher writes to the socket itself: what came before goes first */
        if (!net_conn_flush_wait(&c->net))
            return false;
        if (c->net.want_write)
            return true;
    }
    /* a TLS session is the watch thread's to write from now on: the worker reads the
       socket raw (dropped, as a watcher's input is) only to see its end */
    c->net.tls_raw = c->net.tls != NULL;
    if (!watch_attach(c)) {
        conn_close(c);
        return false;
    }
    return true;
}

/*
 * The per-event budget (-R), spent as memcached spends it, so conn_yields
 * counts what memcached's does.  memcached takes a step of its budget each
 * time a connection goes back to "new command": after every request, and
 * once more after it writes out replies it was holding.  It writes at once
 * after a text get (mc_flush), mn, a binary error or noop; other replies
 * wait until the input runs out or the budget does.  A step that overdraws
 * the budget is a yield.  Each worker still writes all replies of an event in
 * one go; this only decides when a connection gives the others a turn.
 * A connection that yielded with requests left begins its next turn with a
 * step (memcached resumes it in its "new command" state).
 */

/* The step after a request; true when the connection yields. */
static bool mc_step(struct conn *c, int *budget) {
    c->mc_pending = !c->mc_flush;
    c->mc_flush = false;
    if (--*budget >= 0)
        return false;
    c->mc_pending = false;          /* flushed before the yield */
    if (c->net.rstart < c->net.rend) {
        c->mc_resume = true;
        net_conn_yield(&c->net);
    } else {
        /* memcached yields with nothing left to read too (its next event
           spends a step finding nothing, and the one after reads afresh) */
        STAT_INC(c->ctx->st.net.conn_yields);
    }
    return true;
}

/* The input ran out: memcached writes what it holds, a step. */
static void mc_idle(struct conn *c, int *budget) {
    if (!c->mc_pending)
        return;
    c->mc_pending = false;
    if (--*budget < 0)
        STAT_INC(c->ctx->st.net.conn_yields);
}

/* After a request ran: a step, unless it goes on reading or swallowing a value. */
static bool mc_done(struct conn *c, int *budget) {
    if (conn_state(c) != CONN_PARSE)
        return false;
    return mc_step(c, budget);
}

/* What the rare states leave conn_process() to do next. */
enum rare_next {
    RARE_PARSE,     /* parse a text request (the ordinary path) */
    RARE_NEXT,      /* look at the state again */
    RARE_STOP,      /* stop reading: send what is pending */
    RARE_WAIT,      /* the socket is full or the connection yielded: return true */
    RARE_CLOSED,    /* the connection was closed: return false */
};

/*
 * Everything but the ordinary text request, in the order it must be
 * tested: a closing connection; output over the high-water mark (sent
 * before more is parsed); a watcher or a metadump, a slice at a time;
 * the rest of a value being read or swallowed; and for a connection in
 * CONN_PARSE, input run out, the first byte's protocol and the binary
 * protocol.  conn_process() comes here through one test, so the text
 * path ahead of it pays one predictable branch for all of them.
 */
static enum rare_next conn_process_rare(struct conn *c, int st, int *budget) {
    if (st == CONN_CLOSING) {
        conn_close(c);
        return RARE_CLOSED;
    }
    if (c->net.out.bytes > OUT_HIGH_WATER || c->net.out.niov > 4096) {
        if (!conn_flush(c))
            return RARE_CLOSED;
        if (c->net.want_write)
            return RARE_WAIT;
    }
    if (st >= CONN_DUMP) {
        /* The rare states (one test for both): a watcher, or a metadump,
           a slice at a time, each sent before the next (dump.c). */
        if (st == CONN_WATCH)
            return conn_watch(c) ? RARE_WAIT : RARE_CLOSED;
        if ((*budget)-- <= 0) {
            net_conn_yield(&c->net);
            return RARE_STOP;
        }
        dump_fill(c);
        if (!conn_flush(c))
            return RARE_CLOSED;
        if (c->net.want_write)
            return RARE_WAIT;
        return RARE_NEXT;
    }
    if (st == CONN_NREAD) {
        if (!conn_nread_rbuf(c))
            return RARE_STOP;
        if (c->binary && sasl_reading(c))
            sasl_nread_done(c);
        else if (c->binary)
            dispatch_bin_nread_done(c);
        else if (c->nmeta)
            dispatch_meta_nread_done(c);
        else
            dispatch_nread_done(c);
        return mc_done(c, budget) ? RARE_STOP : RARE_NEXT;
    }
    if (st == CONN_SWALLOW) {
        if (!conn_swallow_rbuf(c))
            return RARE_STOP;
        conn_set_state(c, CONN_PARSE);
        return mc_step(c, budget) ? RARE_STOP : RARE_NEXT;
    }
    if (c->net.rstart == c->net.rend || c->net.close_after_write) {
        mc_idle(c, budget);
        return RARE_STOP;
    }
    if (!c->proto_known) {
        struct authfile *a = c->ctx->srv->auth;
        if (a != NULL && !c->authed && !c->is_udp) {
            /* -Y: nothing but the authentication until it passed (auth.c) */
            if (!auth_step(c, a)) {
                mc_idle(c, budget);
                return RARE_STOP;
            }
            c->mc_flush = true;
            return mc_step(c, budget) ? RARE_STOP : RARE_NEXT;
        }
        /* memcached picks the protocol from a connection's first byte (-B auto). */
        enum settings_protocol p = c->ctx->cfg->binding_protocol;
        c->binary = p == SETTINGS_PROTO_BINARY ||
                    (p == SETTINGS_PROTO_AUTO &&
                     (unsigned char)c->net.rbuf[c->net.rstart] == MC_BIN_REQ_MAGIC);
        c->proto_known = !c->is_udp;    /* UDP decides per datagram */
    }
    if (c->binary) {
        if (!conn_process_bin(c)) {
            mc_idle(c, budget);
            return RARE_STOP;
        }
        return mc_done(c, budget) ? RARE_STOP : RARE_NEXT;
    }
    return RARE_PARSE;
}

/*
 * The keys of a get past its first: memcached takes a response object for
 * each (the first came with the request).
 */
static uint64_t get_extra_keys(const struct mc_req *req) {
    uint64_t n = 0;
    bool in = false;
    for (size_t i = 0; i < req->keys.len; i++) {
        bool sp = req->keys.p[i] == ' ';
        n += !sp && !in;
        in = !sp;
    }
    return n > 0 ? n - 1 : 0;
}

/*
 * Under -o read_buf_mem_limit, the response objects memcached would take
 * for a text or meta request (req NULL for meta): one for the request,
 * one more for each further key of a get (struct out_budget).  Past the
 * limit memcached closes the connection, or for a get answers that it ran
 * out (keeping none of the get's answers); then the request is not run and
 * false is returned.
 */
__attribute__((cold, noinline)) static bool conn_budget_take(struct conn *c,
                                                             const struct mc_req *req,
                                                             enum mc_parse r) {
    if (!out_resp_take(&c->net.out, 1)) {
        conn_set_state(c, CONN_CLOSING);
        return false;
    }
    if (req == NULL || r != MC_PARSE_OK)
        return true;
    switch (req->cmd) {
    case MC_CMD_GET:
    case MC_CMD_GETS:
    case MC_CMD_GAT:
    case MC_CMD_GATS:
        if (!out_resp_take(&c->net.out, get_extra_keys(req))) {
            out_copy(&c->net.out, S("SERVER_ERROR out of memory writing get response\r\n"));
            c->mc_flush = true;     /* written at once, as a get's answer is */
            return false;
        }
        return true;
    default:
        return true;
    }
}

/*
 * Runs every complete request in rbuf, within the per-event budget.
 * Leaves the connection waiting for input, for the socket to drain, or on
 * the ready list.  Returns false if the connection was closed.
 *
 * The ordinary request, a text or meta line on a connection in
 * CONN_PARSE with room in its output, comes first; everything else is
 * behind one test (conn_process_rare()).
 */
static bool conn_process(struct conn *c) {
    struct mc_ctx *x = c->ctx;
    x->cfd = c->net.fd;
    if (c->net.rbuf_moved) {
        c->net.rbuf_moved = false;
        conn_pf_forget(c);
    }
    int budget = c->is_udp ? INT32_MAX : x->cfg->reqs_per_event;
    if (c->mc_resume) {
        c->mc_resume = false;
        budget--;
    }
    for (;;) {
        int st = conn_state(c);
        if (__builtin_expect(st != CONN_PARSE || c->binary || !c->proto_known ||
                                 c->net.out.bytes > OUT_HIGH_WATER || c->net.out.niov > 4096,
                             0)) {
            enum rare_next r = conn_process_rare(c, st, &budget);
            if (r == RARE_NEXT)
                continue;
            if (r == RARE_STOP)
                break;
            if (r != RARE_PARSE)
                return r == RARE_WAIT;
        } else if (c->net.rstart == c->net.rend || c->net.close_after_write) {
            mc_idle(c, &budget);
            break;
        }
        if (!c->is_udp)
            conn_prefetch(c);
        /*
         * A meta line goes straight to the meta codec; the text codec, for
         * any other line, only names the verb of a meta one (one with
         * leading spaces), which the meta codec then reads again.  Spans
         * point into rbuf, which stays put until the next read, so the
         * line is consumed before it runs (an ms then reads its value from
         * rbuf[rstart..]).
         */
        const char *line = c->net.rbuf + c->net.rstart;
        size_t avail = c->net.rend - c->net.rstart, used = 0;
        bool meta = mc_text_meta_line(line, avail);
        struct mc_req req;
        struct mc_meta_req mreq;
        enum mc_parse r = meta ? mc_meta_parse(&mreq, line, avail, &used)
                               : mc_text_parse(&req, line, avail, &used);
        if (r == MC_PARSE_NEED_MORE) {
            mc_idle(c, &budget);
            break;
        }
        if (r == MC_PARSE_CLOSE) {
            conn_set_state(c, CONN_CLOSING);
            continue;
        }
        atomic_store_explicit(&c->net.last_active, engine_clock(x->engine), memory_order_relaxed);
        if (!meta && r == MC_PARSE_OK && req.cmd == MC_CMD_META) {
            size_t mused = 0;
            r = mc_meta_parse(&mreq, line, used, &mused);
            meta = true;
        }
        c->net.rstart += used;
        if (out_budget_on(&c->net.out) && !conn_budget_take(c, meta ? NULL : &req, r)) {
            if (mc_done(c, &budget))
                break;
            continue;
        }
        if (meta)
            dispatch_meta(c, &mreq, r == MC_PARSE_OK ? MC_PARSE_OK : MC_PARSE_ERROR);
        else if (r == MC_PARSE_ERROR)
            dispatch_text_error(c, &req);
        else
            dispatch_text(c, &req);
        if (mc_done(c, &budget))
            break;
    }
    if (!out_empty(&c->net.out) || c->net.close_after_write)
        return conn_flush(c);
    out_resp_return(&c->net.out);   /* noreply requests: their slots, with nothing to write */
    return true;
}

/* net's read_direct: a large value's rest straight into its item. */
static ssize_t conn_read_direct(struct net_conn *nc) {
    struct conn *c = (struct conn *)nc;
    if (conn_state(c) != CONN_NREAD) {
        c->net.read_direct = false;
        return NET_READ_RBUF;
    }
    if (c->nlen - c->ndone < 4096)
        return NET_READ_RBUF;
    return conn_nread_direct(c);
}

static bool conn_process_net(struct net_conn *nc) {
    return conn_process((struct conn *)nc);
}

static const struct net_conn_ops conn_ops = {
    .conn_size = sizeof(struct conn),
    .process = conn_process_net,
    .read_direct = conn_read_direct,
    .opened = conn_opened,
    .closing = conn_closing,
    .release = conn_release,
};

/*
 * One datagram: frame check, then the same parse/dispatch path as a
 * stream, then the reply goes out framed.  Whatever is left half-done at
 * the end of the datagram (a value cut short) is dropped with it.
 */
static void udp_on_readable(struct net_handler *h, int events) {
    (void)events;
    struct conn *c = (struct conn *)h;
    c->net.peerlen = sizeof(c->net.peer);
    ssize_t n = recvfrom(c->net.fd, c->net.rbuf, c->net.rsize, 0,
                         (struct sockaddr *)&c->net.peer, &c->net.peerlen);
    if (n <= 0)
        return;
    NET_STAT_ADD(c->ctx->st.net.bytes_read, (uint64_t)n);
    int id = udp_frame_parse((const unsigned char *)c->net.rbuf, (size_t)n);
    if (id < 0)
        return;
    c->udp_reqid = (uint16_t)id;
    c->net.rstart = 8;
    c->net.rend = (size_t)n;
    conn_pf_forget(c);
    conn_process(c);
    udp_reset(c);
}

/* Gives each of this worker's UDP sockets a pseudo-connection in the loop. */
static void worker_open_udp(struct worker *w) {
    static struct net_handler udp_handler = {udp_on_readable};
    for (int i = 0; i < w->nudp; i++) {
        struct net_conn *nc = net_conn_open(&w->net, w->udp_fds[i], w->udp_fds[i], NULL, 0,
                                            &udp_handler, false);
        if (nc == NULL)
            continue;
        struct conn *c = (struct conn *)nc;
        c->ctx = &w->ctx;
        c->is_udp = true;
        c->net.rbuf = malloc(65536);      /* the largest datagram */
        c->net.rsize = c->net.rbuf != NULL ? 65536 : 0;
    }
}

static void worker_started(struct net_worker *nw) {
    struct worker *w = (struct worker *)nw;
    worker_open_udp(w);
    watch_bind_thread(w->ctx.srv, w->net.id, &w->ctx.cfd);
}

/*
 * -o idle_timeout: once a second, close the connections that have sent no
 * command for longer than that, as memcached's timeout thread does: only
 * those waiting for a request (not mid-value, not blocked on output, not
 * watchers).  As in memcached, only a command line counts as activity (a
 * value that ends later does not), and the close is reported as normal.
 */
static void worker_tick(struct net_worker *nw) {
    struct worker *w = (struct worker *)nw;
    int limit = w->ctx.cfg->idle_timeout;
    uint32_t now = engine_clock(w->ctx.engine);
    if (limit <= 0 || now == w->idle_swept)
        return;
    w->idle_swept = now;
    net_worker_close_idle(&w->net, now, (uint32_t)limit);
}

static void release_item(void *engine, void *item) {
    engine_item_unref(engine, item);
}

/*
 * Makes the workers, their loops and their UDP sockets.  main() calls it
 * before the TCP listeners listen, as memcached binds its UDP port first:
 * a client that can connect over TCP can then also be answered over UDP
 * (a datagram sent to a port not yet bound is lost), and a privileged UDP
 * port is bound before privileges are dropped.
 */
/*
 * -o read_buf_mem_limit as memcached divides it: each worker gets an equal
 * share in 16 KB units (its read buffers and response objects), at least
 * one; 0 without the option.
 */
static unsigned budget_units(const struct settings *cfg) {
    if (cfg->read_buf_mem_limit == 0)
        return 0;
    unsigned share = cfg->read_buf_mem_limit / (unsigned)cfg->num_threads;
    return share < NET_RBUF_SIZE ? 1 : share / NET_RBUF_SIZE;
}

int worker_init_all(struct server *s) {
    s->net.ops = &conn_ops;
    s->workers = calloc((size_t)s->nworkers, sizeof(struct worker));
    s->net.workers = calloc((size_t)s->nworkers, sizeof(struct net_worker *));
    if (s->workers == NULL || s->net.workers == NULL)
        return -1;
    s->net.nworkers = s->nworkers;
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        s->net.workers[i] = &w->net;
        w->ctx.engine = s->engine;
        w->ctx.cfg = s->cfg;
        w->ctx.srv = s;
        w->ctx.cfd = -1;
        if (net_worker_init(&w->net, &s->net, i, &w->ctx.st.net, release_item, s->engine) < 0)
            return -1;
        w->net.started = worker_started;
        w->net.tick = worker_tick;
        w->ctx.iov_max = engine_item_iov_max(s->engine);
        w->ctx.iov = calloc((size_t)w->ctx.iov_max, sizeof(struct iovec));
        if (w->ctx.iov == NULL)
            return -1;
        if (udp_open_worker(s, w) < 0)
            return -1;
        net_worker_set_budget(&w->net, budget_units(s->cfg));
    }
    return 0;
}

int worker_start_all(struct server *s) {
    return net_workers_start(&s->net);
}

void worker_stop_all(struct server *s) {
    net_workers_stop(&s->net);
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        net_worker_deinit(&w->net);
        free(w->ctx.iov);
        free(w->udp_fds);
    }
    free(s->workers);
    free(s->net.workers);
    s->workers = NULL;
    s->net.workers = NULL;
}
