/*
 * conn.c -- one handle's connection to one server.
 *
 *   submit --> waiting --send (the handle's pump, under its window)--> sent
 *                                                                       |
 *        done(status, reply) <-- parse the oldest sent request's reply -+
 *
 * Replies come back in request order (each request is sent so that it
 * gets exactly one reply), so the oldest sent request is the only one a
 * reply can answer, and its deadline is the connection's next.
 *
 * Health, per server and per handle:
 *
 *   IDLE --submit--> CONNECTING --connected--> UP
 *     ^                 | refused                | timeout: fails += 1 (one
 *     |                 v                        | per deadline missed); EOF
 *     |    DOWN <-- (refused, or fails reach     |
 *     |     |        tko_timeouts) <-------------+---> IDLE (reconnect
 *     |     | probe_at: connect + version             on the next submit)
 *     |     v
 *     +-- probe answered (revived); probe failed: DOWN again, backoff x2
 *
 * A timeout or a broken connection fails everything the connection held,
 * sent or waiting, and closes the socket: a late reply can then never be
 * taken for the answer to a later request, and nothing waits longer than
 * one deadline.  While DOWN (or probing) submissions fail at once with
 * CELLAR_EDOWN; nothing is sent to another server in their place.
 *
 * A missed deadline counts once toward TKO however many pipelined
 * requests it fails: one stall of a busy connection (an incast's
 * retransmit timeout) is one event, not a server that stopped answering
 * (bench/incast saw healthy servers marked down when each request
 * counted).  A server is marked down after tko_timeouts deadlines missed
 * in a row, answers in between resetting the count.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/client_int.h"

#define RBUF_MIN 16384
#define RBUF_RING_MAX (1 << 20)     /* a receive filled its buffer: twice as much, up to this */
#define WBUF_MIN 16384

static uint64_t ms_ns(int ms) {
    return (uint64_t)ms * 1000000u;
}

/* Hands q back to its owner, counting what the handle (and the server's counters) count. */
/* Keeps a failure's status, server and words for cellar_last_error(). */
static void note_error(struct cl_conn *c, int status, const struct msg_reply *r) {
    struct cellar_error *e = &c->h->last_error;
    e->status = status;
    e->server = (int)(c - c->h->conns);
    if (r != NULL && r->msg.len > 0)
        snprintf(e->text, sizeof(e->text), "%s: %.*s", c->srv->name, (int)r->msg.len, r->msg.p);
    else
        snprintf(e->text, sizeof(e->text), "%s: %s", c->srv->name, cellar_strerror(status));
}

void cl_conn_complete(struct cl_conn *c, struct cl_req *q, int status, const struct msg_reply *r) {
    struct cellar_stats *st = &c->h->st;
    if (r && cl_op_reads(q->m.op)) {
        if (r->res == MSG_RES_HIT)
            st->hits++;
        else if (r->res == MSG_RES_MISS)
            st->misses++;
    } else if (status == CELLAR_ETIMEDOUT) {
        st->timeouts++;
        cl_count(&c->ctr.timeouts, 1);
        cl_count(&c->ctr.fails_run, 1);
    } else if (status == CELLAR_EDOWN) {
        st->down_fast_fails++;
        cl_count(&c->ctr.down_fails, 1);
    } else if (status < 0 && r == NULL && status != CELLAR_ENOTSUP && status != CELLAR_EINVAL) {
        st->errors++;               /* what went wrong on the way: not the caller's request */
        cl_count(&c->ctr.errors, 1);
        cl_count(&c->ctr.fails_run, 1);
    }
    if (r != NULL && cl_count_get(&c->ctr.fails_run) != 0)
        atomic_store_explicit(&c->ctr.fails_run, 0, memory_order_relaxed);
    if (status < 0)
        note_error(c, status, r);
    q->done(q, status, r);
}

/* Shows the connection's state to other threads (after every change of state or probing). */
static void publish(struct cl_conn *c) {
    cl_active_add(c->h, c);         /* a new state may bring a deadline: ticked from now */
    int health = c->probing ? CL_CONN_DOWN : (int)c->state;
    if (atomic_load_explicit(&c->ctr.health, memory_order_relaxed) != health)
        atomic_store_explicit(&c->ctr.health, health, memory_order_relaxed);
}

static void fail_queue(struct cl_conn *c, struct cl_queue *qu, int status) {
    struct cl_req *q;
    while ((q = cl_queue_pop(qu)) != NULL)
        cl_conn_complete(c, q, status, NULL);
}

static void watch(struct cl_conn *c, int events) {
    if (c->events == events)
        return;
    if (evloop_mod(c->h->loop, c->fd, events, c) == 0)
        c->events = events;
}

static void close_socket(struct cl_conn *c) {
    cl_tls_end(c);
    if (c->fd >= 0) {
        if (c->events)
            evloop_del(c->h->loop, c->fd);
        if (c->h->ring)
            cl_ring_retire(c);      /* closes now, or once the kernel is done with it */
        else
            close(c->fd);
    }
    c->fd = -1;
    c->events = 0;
    c->wlen = c->woff = 0;
    c->rlen = c->roff = 0;
    c->batch = NULL;
}

/*
 * Closes the socket and fails what it held: the sent requests with
 * status, the waiting ones with wait_status (0: they stay, for the next
 * connection).  The handle's count of requests in flight drops with them.
 */
/* Takes qu's requests into a queue of the caller's (the gauge goes with them). */
static struct cl_queue take_queue(struct cl_queue *qu) {
    struct cl_queue out = *qu;
    qu->head = qu->tail = NULL;
    qu->n = 0;
    return out;
}

static void drop(struct cl_conn *c, int status, int wait_status) {
    close_socket(c);
    c->h->outstanding -= c->windowed;
    c->windowed = 0;
    c->stalled = false;
    /* taken before any is told: an answer's callback may submit again and so
       reconnect at once, whose requests (a pool's auth token first) are the new
       connection's, not these */
    struct cl_queue sent = take_queue(&c->sent);
    struct cl_queue waiting = wait_status ? take_queue(&c->waiting) : (struct cl_queue){0};
    fail_queue(c, &sent, status);
    fail_queue(c, &waiting, wait_status);
}

static void schedule_probe(struct cl_conn *c, uint64_t now) {
    c->probe_at_ns = now + ms_ns(c->probe_backoff_ms);
    c->probe_backoff_ms *= 2;
    if (c->probe_backoff_ms > c->pool->probe_max_ms)
        c->probe_backoff_ms = c->pool->probe_max_ms;
}

/* TKO: nothing more goes to the server until a probe gets an answer. */
static void mark_down(struct cl_conn *c, int status, uint64_t now) {
    bool was_probing = c->probing;
    c->state = CL_CONN_DOWN;
    c->probing = false;
    publish(c);
    cl_count(&c->ctr.fails_run, 1);
    drop(c, status, status);
    if (!was_probing) {
        c->h->st.tko_events++;
        cl_count(&c->ctr.tko_events, 1);
        c->probe_backoff_ms = c->pool->probe_min_ms;
    }
    schedule_probe(c, now);
}

/*
 * The connection failed without the server refusing it: a timeout, a
 * reset, an EOF.  Timeouts count toward TKO; a probe that fails sends
 * the server back down with a longer backoff.
 */
static void conn_failed(struct cl_conn *c, int status, unsigned timeouts, uint64_t now) {
    if (status == CELLAR_ETIMEDOUT)
        cl_window_timeout(c->h);
    if (c->probing) {
        mark_down(c, status, now);
        return;
    }
    c->fails += timeouts;
    if (timeouts && c->fails >= (unsigned)c->pool->tko_timeouts) {
        mark_down(c, status, now);
        return;
    }
    c->state = CL_CONN_IDLE;
    publish(c);
    cl_count(&c->ctr.fails_run, 1);
    drop(c, status, status);
}

static void probe_done(struct cl_req *q, int status, const struct msg_reply *r) {
    struct cl_conn *c = q->arg;
    (void)r;
    if (status != CELLAR_OK || !c->probing)
        return;             /* a failed probe: conn_failed() has sent it back down */
    c->probing = false;
    publish(c);
    c->fails = 0;
    c->probe_backoff_ms = c->pool->probe_min_ms;
    c->h->st.revivals++;
}

/* ---------------------------------------------------------------------- */
/* Connecting                                                               */
/* ---------------------------------------------------------------------- */

static bool rbuf_room(struct cl_conn *c);

/* The token's answer: STORED lets the connection in; else the server says so to each request. */
static void auth_done(struct cl_req *q, int status, const struct msg_reply *r) {
    struct cl_conn *c = q->arg;
    (void)r;
    c->auth_queued = false;
    if (status != CELLAR_OK && status != CELLAR_ECLOSED && status != CELLAR_ETIMEDOUT)
        snprintf(c->h->last_error.text, sizeof(c->h->last_error.text),
                 "%s: authentication refused", c->srv->name);
}

static void connected(struct cl_conn *c, uint64_t now) {
    if (c->pool->tls) {             /* the handshake first, within the connect timeout */
        int want = 0, r = cl_tls_handshake(c, &want);
        if (r == 0) {
            watch(c, want);
            return;
        }
        if (r < 0) {
            mark_down(c, CELLAR_ECONNECT, now);
            return;
        }
    }
    c->state = CL_CONN_UP;
    publish(c);
    if (c->pool->auth != NULL && !c->auth_queued) {     /* memcached's -Y: the token first */
        c->auth = (struct cl_req){.m = {.op = MSG_SET, .key = {"auth", 4},
                                        .value = {c->pool->auth, strlen(c->pool->auth)}},
                                  .done = auth_done, .arg = c};
        c->auth_queued = true;
        cl_queue_push_front(&c->waiting, &c->auth);
    }
    if (c->h->ring) {               /* the ring's from now on: one receive always out */
        evloop_del(c->h->loop, c->fd);
        c->events = 0;
        if (!rbuf_room(c)) {
            conn_failed(c, CELLAR_ENOMEM, 0, now);
            return;
        }
        cl_ring_recv(c);
    } else {
        watch(c, EV_READ);
    }
    if (c->fd >= 0 && c->waiting.n)
        cl_pump_add(c->h, c);
}

/*
 * A connection that could not be started for reasons of our own (no
 * socket, no epoll slot) or for a moment (a unix socket's full backlog):
 * what waited fails, the server is not marked down -- but a probe that
 * fails so goes back to waiting for its next turn, or it would be
 * restarted at once, over and over.
 */
static void open_failed(struct cl_conn *c, uint64_t now) {
    if (c->probing)
        mark_down(c, CELLAR_ECONNECT, now);
    else
        drop(c, CELLAR_ECONNECT, CELLAR_ECONNECT);
}

/*
 * Starts a non-blocking connect.  A refusal that comes at once (a unix
 * socket nobody listens on) is a hard TKO, as a refusal that comes later
 * is; running out of sockets is no fault of the server's, nor is a unix
 * socket's full backlog (EAGAIN).
 */
static void conn_open(struct cl_conn *c, uint64_t now) {
    const struct cl_server *s = c->srv;
    int fd = socket(s->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        open_failed(c, now);
        return;
    }
    if (s->addr.ss_family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    c->h->st.connects++;
    int rc = connect(fd, (const struct sockaddr *)&s->addr, s->addrlen);
    if (rc < 0 && errno != EINPROGRESS) {
        int err = errno;
        close(fd);
        if (err == EAGAIN || err == EINTR)
            open_failed(c, now);
        else
            mark_down(c, CELLAR_ECONNECT, now);
        return;
    }
    if (evloop_add(c->h->loop, fd, EV_READ | EV_WRITE, c) < 0) {
        close(fd);
        open_failed(c, now);
        return;
    }
    c->fd = fd;
    c->events = EV_READ | EV_WRITE;
    c->state = CL_CONN_CONNECTING;
    publish(c);
    c->connect_deadline_ns = now + ms_ns(c->pool->connect_timeout_ms);
    if (rc == 0)
        connected(c, now);
}

static void connect_result(struct cl_conn *c, uint64_t now) {
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err == 0)
        connected(c, now);
    else if (err == EINPROGRESS || err == EINTR)
        return;
    else
        mark_down(c, CELLAR_ECONNECT, now);
}

static void start_probe(struct cl_conn *c, uint64_t now) {
    c->probing = true;
    publish(c);
    c->h->st.probes++;
    c->probe = (struct cl_req){.m = {.op = MSG_VERSION}, .done = probe_done, .arg = c};
    cl_queue_push(&c->waiting, &c->probe);
    conn_open(c, now);
}

/* The clock is read only when a connection must be opened (not once per key of a multi-get). */
void cl_conn_submit_tcp(struct cl_conn *c, struct cl_req *q) {
    if (c->h->closing) {                /* a resend while the handle goes */
        cl_conn_complete(c, q, CELLAR_ECLOSED, NULL);
        return;
    }
    if (c->state == CL_CONN_DOWN || c->probing) {   /* a UDP get sent back to TCP */
        cl_conn_complete(c, q, CELLAR_EDOWN, NULL);
        return;
    }
    cl_queue_push(&c->waiting, q);
    if (c->state == CL_CONN_IDLE)
        conn_open(c, clock_mono_ns());
    else if (c->state == CL_CONN_UP)
        cl_pump_add(c->h, c);
}

/* ---------------------------------------------------------------------- */
/* Writing                                                                  */
/* ---------------------------------------------------------------------- */

static bool wbuf_room(struct cl_conn *c, size_t need) {
    if (c->woff > 0 && c->woff == c->wlen && !c->ring_send)
        c->woff = c->wlen = 0;
    if (c->wcap - c->wlen >= need)
        return true;
    if (c->ring_send)
        return false;               /* the kernel is reading the buffer: it stays put */
    size_t cap = c->wcap ? c->wcap : WBUF_MIN;
    while (cap - c->wlen < need)
        cap *= 2;
    char *b = realloc(c->wbuf, cap);
    if (b == NULL)
        return false;
    c->wbuf = b;
    c->wcap = cap;
    return true;
}

/*
 * Adds q's key to the batched get line that ends the write buffer, if q
 * can join it: the same op, the line not yet being written, room for
 * another key.  Requests that follow one another to a server -- a
 * multi-get's keys, a router's clients' gets -- then cost the server one
 * line and one END, not one per key.
 */
static bool join_batch(struct cl_conn *c, struct cl_req *q) {
    struct cl_req *b = c->batch;
    if (b == NULL || b->m.op != q->m.op ||
        c->batch_keys >= MSG_BATCH_KEY_MAX || !wbuf_room(c, q->m.key.len + 1))
        return false;
    c->wlen -= 2;                           /* the line's "\r\n" */
    c->wbuf[c->wlen++] = ' ';
    memcpy(c->wbuf + c->wlen, q->m.key.p, q->m.key.len);
    c->wlen += q->m.key.len;
    memcpy(c->wbuf + c->wlen, "\r\n", 2);
    c->wlen += 2;
    b->batch_last = false;
    q->batched = q->batch_last = true;
    c->batch = q;
    c->batch_keys++;
    return true;
}

/* Appends q's bytes to the write buffer: false when q cannot go (completed here). */
static bool put_request(struct cl_conn *c, struct cl_req *q) {
    const struct msg_wire *w = c->pool->wire;
    bool batches = w->batches != NULL && w->batches(&q->m);
    q->batched = false;
    if (batches && join_batch(c, q))
        return true;
    c->batch = NULL;
    size_t vlen = msg_carries_value(&q->m) ? q->m.value.len : 0;
    if (!wbuf_room(c, MSG_HEAD_MAX + vlen + w->value_end_len)) {
        cl_conn_complete(c, q, CELLAR_ENOMEM, NULL);
        return false;
    }
    q->opaque = c->next_opaque++;
    size_t n = w->fmt(c->wbuf + c->wlen, MSG_HEAD_MAX, &q->m, q->opaque);
    if (n == 0) {
        cl_conn_complete(c, q, msg_key_ok(q->m.key) || !msg_op_keyed(q->m.op) ? CELLAR_ENOTSUP
                                                                       : CELLAR_EINVAL, NULL);
        return false;
    }
    if (batches) {                  /* a line the next gets may join */
        q->batched = q->batch_last = true;
        c->batch = q;
        c->batch_at = c->wlen;
        c->batch_keys = 1;
    }
    c->wlen += n;
    if (msg_carries_value(&q->m)) {
        if (vlen)                   /* an empty value may be {NULL, 0} */
            memcpy(c->wbuf + c->wlen, q->m.value.p, vlen);
        memcpy(c->wbuf + c->wlen + vlen, w->value_end, w->value_end_len);
        c->wlen += vlen + w->value_end_len;
    }
    return true;
}

static void flush(struct cl_conn *c, uint64_t now) {
    if (c->h->ring) {               /* one send at a time; what is added meanwhile goes next */
        if (!c->ring_send && c->woff < c->wlen) {
            c->batch = NULL;
            cl_ring_send(c);
        }
        return;
    }
    c->batch = NULL;                /* the line is on its way: nothing may join it now */
    while (c->woff < c->wlen) {
        ssize_t n = c->tls ? cl_tls_send(c, c->wbuf + c->woff, c->wlen - c->woff)
                           : send(c->fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
        if (n > 0) {
            c->woff += (size_t)n;
            c->h->st.writes++;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            conn_failed(c, CELLAR_ECLOSED, 0, now);
            return;
        }
    }
    if (c->woff == c->wlen)
        c->woff = c->wlen = 0;
    watch(c, EV_READ | (c->woff < c->wlen ? EV_WRITE : 0));
}

/* Does q fit the write buffer as it is (a send is out: it may not move)? */
static bool fits(const struct cl_conn *c, const struct cl_req *q) {
    const struct msg_wire *w = c->pool->wire;
    size_t vlen = msg_carries_value(&q->m) ? q->m.value.len : 0;
    return c->wcap - c->wlen >= MSG_HEAD_MAX + vlen + w->value_end_len;
}

unsigned cl_tcp_send(struct cl_conn *c, unsigned room, uint64_t now) {
    unsigned sent = 0;
    if (c->state != CL_CONN_UP)
        return 0;
    uint64_t deadline = now + ms_ns(c->pool->server_timeout_ms);
    for (unsigned tcp = 0; tcp < room && c->waiting.head;) {
        if (c->ring_send && !fits(c, c->waiting.head)) {
            c->wbuf_short = true;
            break;                  /* after the send that is out (cl_conn_ring_done) */
        }
        struct cl_req *q = cl_queue_pop(&c->waiting);
        if (!put_request(c, q))
            continue;
        q->deadline_ns = deadline;
        cl_queue_push(&c->sent, q);
        if (!c->stalled) {
            c->h->outstanding++;
            c->windowed++;
        }
        c->h->st.requests++;
        cl_count(&c->ctr.requests, 1);
        tcp++;
        sent++;
    }
    if (c->wlen > c->woff)
        flush(c, now);
    return sent;
}

/* ---------------------------------------------------------------------- */
/* Reading                                                                  */
/* ---------------------------------------------------------------------- */

static bool rbuf_grow(struct cl_conn *c) {
    size_t cap = c->rcap ? c->rcap * 2 : RBUF_MIN;
    char *b = realloc(c->rbuf, cap);
    if (b == NULL)
        return false;
    c->rbuf = b;
    c->rcap = cap;
    return true;
}

/* Makes room to read into: compacts, and grows when half the buffer is one unparsed reply. */
static bool rbuf_room(struct cl_conn *c) {
    if (c->roff > 0) {
        memmove(c->rbuf, c->rbuf + c->roff, c->rlen - c->roff);
        c->rlen -= c->roff;
        c->roff = 0;
    }
    if (c->rcap && c->rlen < c->rcap / 2)
        return true;
    return rbuf_grow(c);
}

/* A large reply's buffer goes back once it is read and nothing more is asked. */
static void rbuf_shrink_idle(struct cl_conn *c) {
    if (c->sent.n == 0 && c->waiting.n == 0 && c->roff == c->rlen && c->rcap > RBUF_MIN) {
        c->roff = c->rlen = 0;
        free(c->rbuf);
        c->rbuf = NULL;
        c->rcap = 0;
    }
}

/* Answers the sent requests whose replies are whole; false when the connection failed. */
static bool parse_replies(struct cl_conn *c, uint64_t now) {
    const struct msg_wire *w = c->pool->wire;
    while (c->sent.head && c->roff < c->rlen) {
        struct cl_req *q = c->sent.head;
        struct msg_reply r;
        size_t used = 0;
        enum mc_parse rc =
            q->batched ? w->parse_batched(&r, &q->m, q->batch_last, c->rbuf + c->roff,
                                          c->rlen - c->roff, &used)
                       : w->parse(&r, &q->m, q->opaque, c->rbuf + c->roff, c->rlen - c->roff,
                                  &used);
        if (rc == MC_PARSE_NEED_MORE)
            return true;
        if (rc != MC_PARSE_OK) {
            conn_failed(c, CELLAR_EPROTO, 0, now);
            return false;
        }
        c->roff += used;
        if (c->sent.n <= c->windowed) {     /* the windowed ones are the newest */
            c->windowed--;
            c->h->outstanding--;
        }
        cl_queue_pop(&c->sent);
        c->stalled = false;
        c->fails = 0;
        /* sent at its deadline less the timeout: the latency costs no clock read */
        uint64_t sent_at = q->deadline_ns - ms_ns(c->pool->server_timeout_ms);
        cl_count(&c->ctr.replies, 1);
        cl_count(&c->ctr.latency_ns, now > sent_at ? now - sent_at : 0);
        cl_window_answered(c->h, used);
        cl_conn_complete(c, q, cl_status_of(&r), &r);
    }
    if (c->roff < c->rlen && c->sent.head == NULL) {
        conn_failed(c, CELLAR_EPROTO, 0, now);     /* bytes nobody asked for */
        return false;
    }
    return true;
}

static void conn_read(struct cl_conn *c, uint64_t now) {
    for (;;) {
        if (!rbuf_room(c)) {
            conn_failed(c, CELLAR_ENOMEM, 0, now);
            return;
        }
        size_t room = c->rcap - c->rlen;
        ssize_t n = c->tls ? cl_tls_recv(c, c->rbuf + c->rlen, room)
                           : recv(c->fd, c->rbuf + c->rlen, room, 0);
        if (n == 0) {
            conn_failed(c, CELLAR_ECLOSED, 0, now);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                conn_failed(c, CELLAR_ECLOSED, 0, now);
            return;
        }
        c->rlen += (size_t)n;
        if (!parse_replies(c, now))
            return;
        if (c->fd < 0 || c->state != CL_CONN_UP)
            return;                 /* an answer's callback closed or reopened it */
        if ((size_t)n < room && c->tls == NULL)
            return;                 /* (TLS: a record at a time, until it would block) */
    }
}

void cl_conn_io(struct cl_conn *c, int events, uint64_t now) {
    if (c->fd < 0)
        return;
    if (c->state == CL_CONN_CONNECTING) {
        connect_result(c, now);
        if (c->state != CL_CONN_UP || c->h->ring)
            return;                 /* (on a ring the pump writes, the ring reads) */
    }
    if (events & EV_WRITE)
        flush(c, now);
    if (c->fd >= 0 && (events & (EV_READ | EV_ERROR)))
        conn_read(c, now);
    if (c->fd >= 0 && c->state == CL_CONN_UP)
        rbuf_shrink_idle(c);
}

void cl_conn_ring_done(struct cl_conn *c, bool send, int res, uint64_t now) {
    if (c->fd < 0 || c->state != CL_CONN_UP)
        return;
    if (send) {
        if (res < 0 && res != -EINTR && res != -EAGAIN) {
            conn_failed(c, CELLAR_ECLOSED, 0, now);
            return;
        }
        if (res > 0) {
            c->woff += (size_t)res;
            c->h->st.writes++;
        }
        if (c->woff == c->wlen)
            c->woff = c->wlen = 0;
        if (c->wbuf_short) {        /* a turn's requests did not fit: room for twice as many */
            c->wbuf_short = false;
            if (!wbuf_room(c, 2 * c->wcap - c->wlen)) {
                conn_failed(c, CELLAR_ENOMEM, 0, now);
                return;
            }
        }
        if (c->woff < c->wlen)
            flush(c, now);          /* the rest, and what was added meanwhile */
        if (c->waiting.n)
            cl_pump_add(c->h, c);
        return;
    }
    if (res == 0 || (res < 0 && res != -EINTR && res != -EAGAIN)) {
        conn_failed(c, CELLAR_ECLOSED, 0, now);
        return;
    }
    bool filled = res > 0 && (size_t)res == c->rroom;   /* the socket may hold more */
    if (res > 0) {
        c->rlen += (size_t)res;
        if (!parse_replies(c, now))
            return;
    }
    if (c->fd < 0 || c->state != CL_CONN_UP || c->ring_recv)
        return;                     /* a callback closed it (or it reconnected) */
    rbuf_shrink_idle(c);
    if (!rbuf_room(c) || (filled && c->rcap < RBUF_RING_MAX && !rbuf_grow(c))) {
        conn_failed(c, CELLAR_ENOMEM, 0, now);
        return;
    }
    cl_ring_recv(c);
}

/* ---------------------------------------------------------------------- */
/* Deadlines                                                                */
/* ---------------------------------------------------------------------- */


/*
 * When a connection's oldest request has waited the stall time for its
 * reply.  The window bounds the replies a handle may have coming at once
 * (the paper's incast control); a server that has answered nothing for
 * that long sends none, and counting its requests would hold every other
 * server's behind them until its timeout.  So its requests then leave the
 * window (stall()), and the ones sent to it after do not join until it
 * answers again: a server that accepts and never answers costs the
 * requests sent to it, and no one else's.  A tenth of the timeout, at
 * most STALL_MAX_MS: far beyond a reply's time on a LAN, and short
 * beside the timeout.
 */
#define STALL_MAX_MS 20

static uint64_t stall_at(const struct cl_conn *c) {
    int t = c->pool->server_timeout_ms;
    int stall = t / 10 < STALL_MAX_MS ? t / 10 : STALL_MAX_MS;
    return c->sent.head->deadline_ns - ms_ns(t) + ms_ns(stall > 0 ? stall : 1);
}

static void stall(struct cl_conn *c) {
    c->h->outstanding -= c->windowed;
    c->windowed = 0;
    c->stalled = true;
}

uint64_t cl_tcp_tick(struct cl_conn *c, uint64_t now) {
    bool watch_stall = c->state == CL_CONN_UP && c->windowed && c->sent.head;
    if (watch_stall && now >= stall_at(c)) {
        stall(c);
        watch_stall = false;
    }
    if (c->state == CL_CONN_CONNECTING && now >= c->connect_deadline_ns)
        conn_failed(c, CELLAR_ETIMEDOUT, 1, now);
    else if (c->state == CL_CONN_UP && c->sent.head && now >= c->sent.head->deadline_ns)
        conn_failed(c, CELLAR_ETIMEDOUT, 1, now);
    if (c->state == CL_CONN_DOWN && now >= c->probe_at_ns)
        start_probe(c, now);
    switch (c->state) {
    case CL_CONN_CONNECTING:
        return c->connect_deadline_ns;
    case CL_CONN_UP:
        if (watch_stall && c->state == CL_CONN_UP && c->windowed && c->sent.head)
            return stall_at(c);
        return c->sent.head ? c->sent.head->deadline_ns : 0;
    case CL_CONN_DOWN:
        return c->probe_at_ns;
    default:
        return 0;
    }
}

void cl_tcp_reset(struct cl_conn *c, int status) {
    c->probing = false;
    drop(c, status, status);
    if (c->state != CL_CONN_DOWN)
        c->state = CL_CONN_IDLE;
    publish(c);
}

void cl_tcp_deinit(struct cl_conn *c) {
    free(c->wbuf);
    free(c->rbuf);
    c->wbuf = c->rbuf = NULL;
    c->wcap = c->rcap = 0;
}
