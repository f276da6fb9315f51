/*
 * worker.c -- worker threads and the life of a connection.
 *
 * Each worker runs one event loop.  A connection is driven like this:
 *
 *   readable --> read() once into rbuf --> parse/dispatch every complete
 *   request (up to reqs_per_event) --> one writev() of all their replies
 *        ^                                     |
 *        |   socket full: stop reading, wait   v
 *        +---- for EV_WRITE, then go on <--- partial write
 *
 * The loop is level-triggered, so one read per wake-up is enough and no
 * read is wasted on EAGAIN.  A connection that still has parsed-but-not-
 * run requests after reqs_per_event goes on the worker's ready list and is
 * resumed after the other connections had their turn (conn_yields).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/sys.h"
#include "protocol/mc_bin.h"
#include "protocol/mc_meta.h"
#include "server/server.h"

#define RBUF_INIT WORKER_RBUF_SIZE
#define RBUF_MAX (64u << 20)    /* a get line with very many keys may grow this far */
#define RBUF_POOL 64            /* free read buffers a worker keeps */
#define OUT_POOL 64             /* free reply scratch blocks a worker keeps */
#define OUT_HIGH_WATER (1u << 20)

static void conn_close(struct conn *c);
static void conn_run(struct conn *c);

/*
 * Read buffers are lent to a connection only while it has unparsed bytes:
 * between requests it holds none, so an idle connection costs its struct
 * alone.  The worker keeps a few free buffers of the usual size so that
 * lending one is a pointer move, not a malloc.
 */
static char *rbuf_pool_get(struct worker *w) {
    if (w->nrbuf_free > 0) {
        char *b = w->rbuf_free[--w->nrbuf_free];
        atomic_store_explicit(&w->rbufs_idle, (uint64_t)w->nrbuf_free, memory_order_relaxed);
        return b;
    }
    char *b = malloc(RBUF_INIT);
    if (b == NULL)
        STAT_INC(w->st.read_buf_oom);
    else
        STAT_INC(w->rbufs);
    return b;
}

/* Frees a connection's read buffer (of any size: grown ones too). */
static void rbuf_drop(struct worker *w, char *b) {
    free(b);
    STAT_ADD(w->rbufs, -1);
}

static void rbuf_pool_put(struct worker *w, char *b) {
    if (w->nrbuf_free < RBUF_POOL) {
        w->rbuf_free[w->nrbuf_free++] = b;
        atomic_store_explicit(&w->rbufs_idle, (uint64_t)w->nrbuf_free, memory_order_relaxed);
    } else {
        rbuf_drop(w, b);
    }
}

/*
 * The bytes of c's rbuf are about to move or change: rescan for the
 * read-ahead, and forget the hashes it keeps for keys in there.
 */
static void pf_forget(struct conn *c) {
    c->pf_end = 0;
    if (c->w->pf_conn == c)
        c->w->pf_conn = NULL;
}

/* Gives an empty read buffer back (a grown one is freed). */
static void rbuf_release(struct conn *c) {
    if (c->rbuf == NULL || c->is_udp || c->rstart != c->rend)
        return;
    if (c->rsize == RBUF_INIT)
        rbuf_pool_put(c->w, c->rbuf);
    else
        rbuf_drop(c->w, c->rbuf);
    c->rbuf = NULL;
    c->rsize = c->rstart = c->rend = 0;
    pf_forget(c);
}

static struct conn *conn_new(struct worker *w, struct pending_fd *p) {
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->fd = p->fd;
    c->w = w;
    c->listen_fd = p->listen_fd;
    c->peer = p->peer;
    c->peerlen = p->peerlen;
    atomic_store(&c->last_cmd, engine_clock(w->srv->engine));
    out_init(&c->out, &w->outpool);
    if (evloop_add(w->loop, c->fd, EV_READ, c) < 0) {
        free(c);
        return NULL;
    }
    pthread_mutex_lock(&w->conns_lock);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    pthread_mutex_unlock(&w->conns_lock);
    atomic_fetch_add(&w->srv->conn_structs, 1);
    return c;
}

static void conn_free(struct conn *c) {
    struct worker *w = c->w;
    struct engine *e = w->srv->engine;
    pthread_mutex_lock(&w->conns_lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&w->conns_lock);
    if (c->nitem != NULL)
        engine_item_unref(e, c->nitem);
    watch_detach(c);
    dump_free(c);
    out_deinit(&c->out, e);
    pf_forget(c);
    free(c->mpend);
    if (c->is_udp)
        free(c->rbuf);          /* a datagram buffer, not one of the pool's */
    else if (c->rbuf != NULL)
        rbuf_drop(w, c->rbuf);
    free(c);
    atomic_fetch_sub(&w->srv->conn_structs, 1);
}

/* A UDP "connection" is never closed: it forgets the datagram in hand. */
static void udp_reset(struct conn *c) {
    if (c->nitem != NULL) {
        engine_item_unref(c->w->srv->engine, c->nitem);
        c->nitem = NULL;
    }
    c->nmeta = false;
    out_reset(&c->out, c->w->srv->engine);
    c->rstart = c->rend = 0;
    pf_forget(c);
    c->close_after_write = false;
    atomic_store_explicit(&c->state, CONN_PARSE, memory_order_relaxed);
}

static void conn_close(struct conn *c) {
    struct worker *w = c->w;
    if (c->is_udp) {
        udp_reset(c);
        return;
    }
    /* memcached reports a watcher's end as an error, whoever ended it */
    watch_conn_event(c, false, c->close_normal && c->watcher == NULL ? "normal" : "error");
    watch_detach(c);
    evloop_del(w->loop, c->fd);
    close(c->fd);
    atomic_fetch_sub(&w->srv->curr_conns, 1);
    /* Unlink from the ready list if it is there. */
    if (c->yielded) {
        struct conn **pp = &w->ready;
        while (*pp && *pp != c)
            pp = &(*pp)->ready_next;
        if (*pp)
            *pp = c->ready_next;
    }
    conn_free(c);
}

static void conn_want(struct conn *c, bool write) {
    if (c->want_write == write)
        return;
    c->want_write = write;
    evloop_mod(c->w->loop, c->fd, write ? EV_WRITE : EV_READ, c);
}

/* Writes pending output.  Returns false if the connection was closed. */
static bool conn_flush(struct conn *c) {
    if (c->is_udp) {
        udp_send_reply(c);
        return true;
    }
    size_t n = 0;
    int r = out_flush(&c->out, c->fd, c->w->srv->engine, &n);
    STAT_ADD(c->w->st.bytes_written, n);
    if (r < 0) {
        conn_close(c);
        return false;
    }
    if (r == 0) {
        conn_want(c, true);
        return true;
    }
    if (c->close_after_write) {
        conn_close(c);
        return false;
    }
    conn_want(c, false);
    return true;
}

/*
 * Starts reading a value of vlen bytes straight into it (CONN_NREAD).  A
 * text or meta value must be followed by "\r\n"; a binary one is not, so
 * its terminator counts as already read.
 */
void conn_nread_begin(struct conn *c, struct item *it, uint32_t vlen, bool terminated) {
    c->nitem = it;
    c->ndone = 0;
    c->nlen = vlen;
    c->ncrlf[0] = '\r';
    c->ncrlf[1] = '\n';
    c->ncrlf_done = terminated ? 0 : 2;
    atomic_store_explicit(&c->state, CONN_NREAD, memory_order_relaxed);
}

/* Skips the next n bytes of input (a value that will not be stored). */
void conn_swallow(struct conn *c, uint64_t n) {
    c->swallow = n;
    c->mc_flush = false;            /* memcached writes nothing while it swallows */
    atomic_store_explicit(&c->state, CONN_SWALLOW, memory_order_relaxed);
}

/*
 * Copies value bytes from rbuf into the item being read, then the two
 * bytes that must be "\r\n".  Returns true once the value is complete.
 */
static bool nread_from_rbuf(struct conn *c) {
    struct iovec *iov = c->w->iov;
    int n = engine_item_iov(c->nitem, iov, c->w->iov_max);
    size_t off = 0;
    for (int i = 0; i < n && c->ndone < c->nlen && c->rstart < c->rend; i++) {
        size_t len = iov[i].iov_len;
        if (c->ndone >= off + len) {
            off += len;
            continue;
        }
        size_t at = c->ndone - off;
        size_t take = len - at;
        size_t avail = c->rend - c->rstart;
        if (take > avail)
            take = avail;
        memcpy((char *)iov[i].iov_base + at, c->rbuf + c->rstart, take);
        c->rstart += take;
        c->ndone += take;
        off += len;
    }
    while (c->ndone == c->nlen && c->ncrlf_done < 2 && c->rstart < c->rend)
        c->ncrlf[c->ncrlf_done++] = c->rbuf[c->rstart++];
    return c->ndone == c->nlen && c->ncrlf_done == 2;
}

/*
 * Reads the rest of a large value straight into the item (and its
 * terminator into ncrlf), skipping rbuf, so a megabyte value is not
 * copied twice.  Returns bytes read, 0 on EOF, -1 on error/EAGAIN.
 */
static ssize_t nread_direct(struct conn *c) {
    struct iovec *iov = c->w->iov;
    int n = engine_item_iov(c->nitem, iov, c->w->iov_max);
    int k = 0;
    size_t off = 0;
    struct iovec rv[65];
    int i = 0;
    for (; i < n && k < 64; i++) {
        size_t len = iov[i].iov_len;
        if (c->ndone < off + len) {
            size_t at = c->ndone > off ? c->ndone - off : 0;
            rv[k++] = (struct iovec){(char *)iov[i].iov_base + at, len - at};
        }
        off += len;
    }
    if (i == n)     /* the whole rest of the value is covered: the terminator follows */
        rv[k++] = (struct iovec){c->ncrlf + c->ncrlf_done, 2 - c->ncrlf_done};
    ssize_t r = sys_readv(c->fd, rv, k);
    if (r <= 0)
        return r == 0 ? 0 : -1;
    size_t got = (size_t)r;
    size_t v = c->nlen - c->ndone;
    if (got <= v) {
        c->ndone += got;
    } else {
        c->ndone = c->nlen;
        c->ncrlf_done += got - v;
    }
    return r;
}

/*
 * Parses and runs one binary request.  Returns false when it must wait
 * for more bytes.
 */
static bool conn_process_bin(struct conn *c) {
    struct mc_bin_req req;
    size_t used = 0;
    enum mc_parse r = mc_bin_parse(&req, c->rbuf + c->rstart, c->rend - c->rstart, &used);
    if (r == MC_PARSE_NEED_MORE)
        return false;
    if (r == MC_PARSE_CLOSE) {
        /* Answers to the requests before this one still go out (memcached's order). */
        c->close_after_write = true;
        return true;
    }
    c->rstart += used;
    atomic_store_explicit(&c->last_cmd, engine_clock(c->w->srv->engine), memory_order_relaxed);
    if (r == MC_PARSE_ERROR)
        dispatch_bin_error(c, &req);
    else
        dispatch_bin(c, &req);
    return true;
}

/*
 * Read-ahead for pipelined text requests: the keys of the get/gets/set
 * lines waiting in rbuf (mc_text_scan_keys()) are hashed and the engine
 * starts loading their buckets and items all at once, so the requests then
 * find them in cache.  Each line is scanned once (pf_end).  Only a hint: a
 * line read wrong costs a wasted prefetch, nothing else.
 */
static void prefetch_requests(struct conn *c) {
    if (c->pf_end > c->rstart)
        return;
    struct worker *w = c->w;
    w->pf_conn = NULL;
    /* One line of one word or two ("get <key>") and nothing after it: nothing to overlap. */
    const char *p = c->rbuf + c->rstart;
    const char *nl = memchr(p, '\n', c->rend - c->rstart);
    if (nl != NULL && nl + 1 == c->rbuf + c->rend) {
        const char *sp = memchr(p, ' ', (size_t)(nl - p));
        if (sp == NULL || memchr(sp + 1, ' ', (size_t)(nl - sp - 1)) == NULL) {
            c->pf_end = c->rend;
            return;
        }
    }
    struct mc_span key[PREFETCH_KEYS];
    size_t used;
    uint64_t stores;
    unsigned n = mc_text_scan_keys(p, c->rend - c->rstart, key, PREFETCH_KEYS, &stores, &used);
    /* Scanned up to there; when nothing could be, just past rstart. */
    c->pf_end = c->rstart + used + (used == 0);
    if (n < 2) {            /* one request: only a store has work to overlap */
        if (n == 1 && stores != 0)
            engine_prefetch_one(w->srv->engine, engine_key_hash(key[0].p, key[0].len));
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        w->pf_key[i] = key[i].p;
        w->pf_len[i] = (uint8_t)key[i].len;     /* <= MC_KEY_MAX */
        w->pf_hv[i] = engine_key_hash(key[i].p, key[i].len);
    }
    w->pf_conn = c;
    w->pf_n = n;
    w->pf_i = 0;
    engine_prefetch(w->srv->engine, w->pf_hv, n, stores);
}

/*
 * The keys come in the order the read-ahead found them, so the one for a
 * key starting at p is at or after pf_i.  It is taken only if it is that
 * whole word of the line: it starts at p and ends where [p, end) has a
 * space or ends (the read-ahead split the same bytes at the same spaces,
 * but may have seen a longer line: memcached ends a line at a NUL).
 */
bool conn_next_key(struct conn *c, struct mc_span *rest, struct mc_span *key, uint64_t *hv) {
    struct worker *w = c->w;
    const char *p = rest->p, *end = p + rest->len;
    while (p < end && *p == ' ')
        p++;
    if (p < end && w->pf_conn == c) {
        while (w->pf_i < w->pf_n && (uintptr_t)w->pf_key[w->pf_i] < (uintptr_t)p)
            w->pf_i++;
        size_t len = w->pf_i < w->pf_n ? w->pf_len[w->pf_i] : 0;
        if (len > 0 && w->pf_key[w->pf_i] == p && len <= (size_t)(end - p) &&
            (len == (size_t)(end - p) || p[len] == ' ')) {
            *key = (struct mc_span){p, len};
            *hv = w->pf_hv[w->pf_i++];
            rest->p = p + len;
            rest->len = (size_t)(end - rest->p);
            return true;
        }
    }
    if (!mc_text_next_key(rest, key))
        return false;
    *hv = engine_key_hash(key->p, key->len);
    return true;
}

/* Puts c on its worker's ready list, to go on after the others have had a turn. */
static void conn_yield(struct conn *c) {
    STAT_INC(c->w->st.conn_yields);
    if (!c->yielded) {
        c->yielded = true;
        c->ready_next = c->w->ready;
        c->w->ready = c;
    }
}

/*
 * A watcher (watch.c): what it sends is dropped; once the replies it was
 * owed are out, the watch thread takes over its output.
 */
__attribute__((cold)) static bool conn_watch(struct conn *c) {
    c->rstart = c->rend;
    if (c->watcher != NULL)
        return true;
    if (!out_empty(&c->out)) {
        if (!conn_flush(c))
            return false;
        if (c->want_write)
            return true;
    }
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
    if (c->rstart < c->rend) {
        c->mc_resume = true;
        conn_yield(c);
    } else {
        /* memcached yields with nothing left to read too (its next event
           spends a step finding nothing, and the one after reads afresh) */
        STAT_INC(c->w->st.conn_yields);
    }
    return true;
}

/* The input ran out: memcached writes what it holds, a step. */
static void mc_idle(struct conn *c, int *budget) {
    if (!c->mc_pending)
        return;
    c->mc_pending = false;
    if (--*budget < 0)
        STAT_INC(c->w->st.conn_yields);
}

/* After a request ran: a step, unless it goes on reading or swallowing a value. */
static bool mc_done(struct conn *c, int *budget) {
    if (atomic_load_explicit(&c->state, memory_order_relaxed) != CONN_PARSE)
        return false;
    return mc_step(c, budget);
}

/*
 * Runs every complete request in rbuf, within the per-event budget.
 * Leaves the connection waiting for input, for the socket to drain, or on
 * the ready list.  Returns false if the connection was closed.
 */
static bool conn_process(struct conn *c) {
    struct server *s = c->w->srv;
    int budget = c->is_udp ? INT32_MAX : s->cfg->reqs_per_event;
    if (c->mc_resume) {
        c->mc_resume = false;
        budget--;
    }
    for (;;) {
        int st = atomic_load_explicit(&c->state, memory_order_relaxed);
        if (st == CONN_CLOSING) {
            conn_close(c);
            return false;
        }
        if (c->out.bytes > OUT_HIGH_WATER || c->out.niov > 4096) {
            if (!conn_flush(c))
                return false;
            if (c->want_write)
                return true;
        }
        if (st >= CONN_DUMP) {
            /* The rare states (one test for both): a watcher, or a metadump,
               a slice at a time, each sent before the next (dump.c). */
            if (st == CONN_WATCH)
                return conn_watch(c);
            if (budget-- <= 0) {
                conn_yield(c);
                break;
            }
            dump_fill(c);
            if (!conn_flush(c))
                return false;
            if (c->want_write)
                return true;
            continue;
        }
        if (st == CONN_NREAD) {
            if (!nread_from_rbuf(c))
                break;
            if (c->binary)
                dispatch_bin_nread_done(c);
            else if (c->nmeta)
                dispatch_meta_nread_done(c);
            else
                dispatch_nread_done(c);
            if (mc_done(c, &budget))
                break;
            continue;
        }
        if (st == CONN_SWALLOW) {
            size_t avail = c->rend - c->rstart;
            size_t take = avail < c->swallow ? avail : (size_t)c->swallow;
            c->rstart += take;
            c->swallow -= take;
            if (c->swallow > 0)
                break;
            atomic_store_explicit(&c->state, CONN_PARSE, memory_order_relaxed);
            if (mc_step(c, &budget))
                break;
            continue;
        }
        if (c->rstart == c->rend || c->close_after_write) {
            mc_idle(c, &budget);
            break;
        }
        if (!c->proto_known) {
            /* memcached picks the protocol from a connection's first byte (-B auto). */
            enum settings_protocol p = s->cfg->binding_protocol;
            c->binary = p == SETTINGS_PROTO_BINARY ||
                        (p == SETTINGS_PROTO_AUTO &&
                         (unsigned char)c->rbuf[c->rstart] == MC_BIN_REQ_MAGIC);
            c->proto_known = !c->is_udp;    /* UDP decides per datagram */
        }
        if (c->binary) {
            if (!conn_process_bin(c)) {
                mc_idle(c, &budget);
                break;
            }
            if (mc_done(c, &budget))
                break;
            continue;
        }
        if (!c->is_udp)
            prefetch_requests(c);
        struct mc_req req;
        size_t used = 0;
        enum mc_parse r = mc_text_parse(&req, c->rbuf + c->rstart, c->rend - c->rstart, &used);
        if (r == MC_PARSE_NEED_MORE) {
            mc_idle(c, &budget);
            break;
        }
        if (r == MC_PARSE_CLOSE) {
            atomic_store_explicit(&c->state, CONN_CLOSING, memory_order_relaxed);
            continue;
        }
        atomic_store_explicit(&c->last_cmd, engine_clock(s->engine), memory_order_relaxed);
        if (r == MC_PARSE_OK && req.cmd == MC_CMD_META) {
            /*
             * The text codec only named the verb; the meta codec reads the
             * same line.  Its spans point into rbuf, which stays put until
             * the next read, so the line is consumed before it runs (an ms
             * then reads its value from rbuf[rstart..]).
             */
            struct mc_meta_req mreq;
            size_t mused = 0;
            enum mc_parse mr = mc_meta_parse(&mreq, c->rbuf + c->rstart, used, &mused);
            c->rstart += used;
            dispatch_meta(c, &mreq, mr == MC_PARSE_OK ? MC_PARSE_OK : MC_PARSE_ERROR);
        } else {
            c->rstart += used;
            if (r == MC_PARSE_ERROR)
                dispatch_text_error(c, &req);
            else
                dispatch_text(c, &req);
        }
        if (mc_done(c, &budget))
            break;
    }
    if (!out_empty(&c->out) || c->close_after_write)
        return conn_flush(c);
    return true;
}

/* Makes room in rbuf for more input: compacts, and grows a buffer holding one long line. */
static bool rbuf_make_room(struct conn *c) {
    pf_forget(c);
    if (c->rbuf == NULL) {
        c->rbuf = rbuf_pool_get(c->w);
        if (c->rbuf == NULL)
            return false;
        c->rsize = RBUF_INIT;
        c->rstart = c->rend = 0;
        return true;
    }
    if (c->rstart == c->rend) {
        c->rstart = c->rend = 0;
    } else if (c->rstart > 0) {
        memmove(c->rbuf, c->rbuf + c->rstart, c->rend - c->rstart);
        c->rend -= c->rstart;
        c->rstart = 0;
    }
    if (c->rend < c->rsize)
        return true;
    if (c->rsize >= RBUF_MAX)
        return false;
    char *n = realloc(c->rbuf, c->rsize * 2);
    if (n == NULL)
        return false;
    c->rbuf = n;
    c->rsize *= 2;
    return true;
}

static void conn_on_readable(struct conn *c) {
    ssize_t r;
    int st = atomic_load_explicit(&c->state, memory_order_relaxed);
    if (st == CONN_NREAD && c->rstart == c->rend && c->nlen - c->ndone >= 4096) {
        r = nread_direct(c);
    } else {
        if (!rbuf_make_room(c)) {
            conn_close(c);
            return;
        }
        r = sys_read(c->fd, c->rbuf + c->rend, c->rsize - c->rend);
        if (r > 0)
            c->rend += (size_t)r;
    }
    if (r == 0) {
        c->close_normal = true;
        conn_close(c);
        return;
    }
    if (r < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            conn_close(c);
        return;
    }
    STAT_ADD(c->w->st.bytes_read, (uint64_t)r);
    if (conn_process(c))
        rbuf_release(c);
}

/*
 * One datagram: frame check, then the same parse/dispatch path as a
 * stream, then the reply goes out framed.  Whatever is left half-done at
 * the end of the datagram (a value cut short) is dropped with it.
 */
static void udp_on_readable(struct conn *c) {
    c->peerlen = sizeof(c->peer);
    ssize_t n = recvfrom(c->fd, c->rbuf, c->rsize, 0, (struct sockaddr *)&c->peer,
                         &c->peerlen);
    if (n <= 0)
        return;
    STAT_ADD(c->w->st.bytes_read, (uint64_t)n);
    int id = udp_frame_parse((const unsigned char *)c->rbuf, (size_t)n);
    if (id < 0)
        return;
    c->udp_reqid = (uint16_t)id;
    c->rstart = 8;
    c->rend = (size_t)n;
    pf_forget(c);
    conn_process(c);
    udp_reset(c);
}

static void conn_run(struct conn *c) {
    if (c->is_udp) {
        udp_on_readable(c);
        return;
    }
    if (c->want_write) {
        if (!conn_flush(c))
            return;
        if (c->want_write)
            return;
        /* Drained: go on with what was parsed while we waited. */
        conn_process(c);
        return;
    }
    conn_on_readable(c);
}

static void worker_accept_pending(struct worker *w) {
    pthread_mutex_lock(&w->queue_lock);
    struct pending_fd *p = w->queue;
    w->queue = NULL;
    pthread_mutex_unlock(&w->queue_lock);
    while (p != NULL) {
        struct pending_fd *next = p->next;
        struct conn *c = conn_new(w, p);
        if (c == NULL) {
            close(p->fd);
            atomic_fetch_sub(&w->srv->curr_conns, 1);
        } else {
            watch_conn_event(c, true, NULL);
        }
        free(p);
        p = next;
    }
}

/* Gives each of this worker's UDP sockets a pseudo-connection in the loop. */
static void worker_open_udp(struct worker *w) {
    for (int i = 0; i < w->nudp; i++) {
        struct pending_fd p = {.fd = w->udp_fds[i], .listen_fd = w->udp_fds[i]};
        struct conn *c = conn_new(w, &p);
        if (c == NULL)
            continue;
        c->is_udp = true;
        c->rbuf = malloc(65536);      /* the largest datagram */
        c->rsize = c->rbuf != NULL ? 65536 : 0;
    }
}

/*
 * -o idle_timeout: once a second, close the connections that have sent no
 * command for longer than that, as memcached's timeout thread does: only
 * those waiting for a request (not mid-value, not blocked on output, not
 * watchers).  As in memcached, only a command line counts as activity (a
 * value that ends later does not), and the close is reported as normal.
 */
static void idle_sweep(struct worker *w) {
    int limit = w->srv->cfg->idle_timeout;
    uint32_t now = engine_clock(w->srv->engine);
    if (limit <= 0 || now == w->idle_swept)
        return;
    w->idle_swept = now;
    struct conn *c = w->conns, *next;
    for (; c != NULL; c = next) {
        next = c->next;
        uint32_t last = atomic_load_explicit(&c->last_cmd, memory_order_relaxed);
        if (c->is_udp || c->want_write || c->yielded || c->watcher != NULL ||
            atomic_load_explicit(&c->state, memory_order_relaxed) != CONN_PARSE ||
            now - last <= (uint32_t)limit)
            continue;
        STAT_INC(w->st.idle_kicks);
        c->close_normal = true;
        conn_close(c);
    }
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    struct ev_fired ev[256];
    worker_open_udp(w);
    watch_bind_thread(w->srv, w->id);
    while (!atomic_load(&w->srv->stop)) {
        int n = evloop_wait(w->loop, ev, 256, w->ready ? 0 : 1000);
        for (int i = 0; i < n; i++) {
            if (ev[i].ptr == NULL) {
                worker_accept_pending(w);
            } else {
                struct conn *c = ev[i].ptr;
                watch_cfd = c->fd;
                conn_run(c);
            }
        }
        idle_sweep(w);
        /* Resume connections that yielded; they go to the back of the line. */
        struct conn *r = w->ready;
        w->ready = NULL;
        while (r != NULL) {
            struct conn *next = r->ready_next;
            r->yielded = false;
            watch_cfd = r->fd;
            if (!r->want_write)
                conn_process(r);
            r = next;
        }
    }
    return NULL;
}

void worker_hand_fd(struct worker *w, int fd, int listen_fd,
                    const struct sockaddr_storage *peer, socklen_t peerlen) {
    struct pending_fd *p = malloc(sizeof(*p));
    if (p == NULL) {
        close(fd);
        atomic_fetch_sub(&w->srv->curr_conns, 1);
        return;
    }
    p->fd = fd;
    p->listen_fd = listen_fd;
    p->peer = *peer;
    p->peerlen = peerlen;
    pthread_mutex_lock(&w->queue_lock);
    p->next = w->queue;
    w->queue = p;
    pthread_mutex_unlock(&w->queue_lock);
    evloop_wake(w->loop);
}

/*
 * Makes the workers, their loops and their UDP sockets.  main() calls it
 * before the TCP listeners listen, as memcached binds its UDP port first:
 * a client that can connect over TCP can then also be answered over UDP
 * (a datagram sent to a port not yet bound is lost), and a privileged UDP
 * port is bound before privileges are dropped.
 */
int worker_init_all(struct server *s) {
    s->workers = calloc((size_t)s->nworkers, sizeof(struct worker));
    if (s->workers == NULL)
        return -1;
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        w->srv = s;
        w->id = i;
        w->loop = evloop_create();
        w->iov_max = engine_item_iov_max(s->engine);
        w->iov = calloc((size_t)w->iov_max, sizeof(struct iovec));
        w->outpool.max = OUT_POOL;
        if (w->loop == NULL || w->iov == NULL)
            return -1;
        pthread_mutex_init(&w->queue_lock, NULL);
        pthread_mutex_init(&w->conns_lock, NULL);
        if (udp_open_worker(s, w) < 0)
            return -1;
    }
    return 0;
}

int worker_start_all(struct server *s) {
    for (int i = 0; i < s->nworkers; i++) {
        if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]) != 0)
            return -1;
    }
    return 0;
}

void worker_stop_all(struct server *s) {
    for (int i = 0; i < s->nworkers; i++)
        evloop_wake(s->workers[i].loop);
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        pthread_join(w->thread, NULL);
        while (w->conns != NULL) {
            struct conn *c = w->conns;
            close(c->fd);
            conn_free(c);
        }
        struct pending_fd *p = w->queue;
        while (p != NULL) {
            struct pending_fd *n = p->next;
            close(p->fd);
            free(p);
            p = n;
        }
        evloop_destroy(&w->loop);
        while (w->nrbuf_free > 0)
            free(w->rbuf_free[--w->nrbuf_free]);
        out_pool_drain(&w->outpool);
        free(w->iov);
        free(w->udp_fds);
        pthread_mutex_destroy(&w->queue_lock);
        pthread_mutex_destroy(&w->conns_lock);
    }
    free(s->workers);
    s->workers = NULL;
}
