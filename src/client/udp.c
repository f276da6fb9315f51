/*
 * udp.c -- gets over UDP, as the paper's clients send them.
 *
 *   datagram out: [req id][seq 0][total 1][0] "mg <k1> v f\r\nmg <k2> v f\r\n..."
 *   datagrams in: [req id][seq i][total n][0] reply bytes, i = 0 .. n-1
 *
 * A pool with `udp` sends its get and gets requests this way, one socket
 * per server per handle (connected, so the kernel filters other senders);
 * everything that changes state stays on TCP.  The gets waiting for one
 * server go out together, one request line each (the pool's wire), as
 * many as fit in UDP_REQ_PAYLOAD bytes, in one datagram under the next
 * request id: a multi-get costs each server a datagram or a few, not one
 * per key.  The id's slot (id mod CL_UDP_SLOTS) gathers the reply's
 * datagrams in order and, each time a message is whole, the wire parses
 * as many of its gets' answers as it holds (memcached answers each
 * request line as a message of its own, each numbered from 0; cellard all
 * of them in one).  A datagram out of order, a reply that does not parse,
 * or no whole reply by the pool's server_timeout is the paper's dropped
 * get: every get of the datagram not yet answered answers CELLAR_DROPPED,
 * a miss the caller should not refill, and counts in udp_drops.  Drops
 * never mark a server down (only TCP does), but a late reply shrinks the
 * window as a timeout does.
 *
 * Ids are handed out in order and every get has the same timeout, so
 * deadlines grow with ids: the oldest id in flight has the next deadline.
 * A datagram whose id is no longer in flight (late, or a duplicate) is
 * ignored.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/client_int.h"
#include "protocol/mc_udp.h"

#define UDP_HDR MC_UDP_HDR
#define UDP_DATAGRAM_MAX 65536
#define SLOT_KEEP 4096          /* a slot keeps a reply buffer up to this size */
#define UDP_REQ_PAYLOAD 1400    /* a request datagram's lines at most: one Ethernet frame */
_Static_assert(MSG_HEAD_MAX <= UDP_REQ_PAYLOAD, "any one request line fits a datagram");

static struct cl_conn *conn_of(struct cl_udp *u) {
    return (struct cl_conn *)((char *)u - offsetof(struct cl_conn, udp));
}

/* A unix socket server has no UDP: its gets stay on the stream. */
bool cl_udp_wants(const struct cl_conn *c, const struct cl_req *q) {
    return c->pool->udp && c->srv->addr.ss_family != AF_UNIX && (q->m.op == MSG_GET || q->m.op == MSG_GETS);
}

void cl_udp_submit(struct cl_conn *c, struct cl_req *q) {
    cl_queue_push(&c->udp.waiting, q);
    cl_pump_add(c->h, c);
}

/* The socket and slots, made on first use; false when they cannot be. */
static bool udp_open(struct cl_conn *c) {
    struct cl_udp *u = &c->udp;
    if (u->fd >= 0)
        return true;
    if (u->slots == NULL && (u->slots = calloc(CL_UDP_SLOTS, sizeof(*u->slots))) == NULL)
        return false;
    const struct cl_server *s = c->srv;
    int fd = socket(s->addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    if (connect(fd, (const struct sockaddr *)&s->addr, s->addrlen) < 0 ||
        evloop_add(c->h->loop, fd, EV_READ, u) < 0) {
        close(fd);
        return false;
    }
    u->io = CL_IO_UDP;
    u->fd = fd;
    return true;
}

/*
 * Frees slot s (in flight); its requests, if any are left, are the
 * caller's to answer.  A reply buffer past SLOT_KEEP goes too, so 1,024
 * slots do not each keep the largest reply they ever gathered.
 */
static void slot_clear(struct cl_udp *u, struct cl_udp_slot *s) {
    s->q = NULL;
    u->inflight--;
    if (s->cap > SLOT_KEEP) {
        free(s->buf);
        s->buf = NULL;
        s->cap = 0;
    }
    s->len = 0;
    s->next_seq = s->total = 0;
}

/* Answers a chain of requests with status; sent: they were in flight. */
static void fail_chain(struct cl_conn *c, struct cl_req *q, int status, bool sent) {
    while (q != NULL) {
        struct cl_req *next = q->next;
        if (sent)
            c->h->outstanding--;
        if (status == CELLAR_DROPPED)
            c->h->st.udp_drops++;
        cl_conn_complete(c, q, status, NULL);
        q = next;
    }
}

/* Frees slot s and answers the requests it still holds with status. */
static void slot_fail(struct cl_conn *c, struct cl_udp_slot *s, int status) {
    struct cl_req *q = s->q;
    slot_clear(&c->udp, s);
    fail_chain(c, q, status, true);
}

static void drop(struct cl_conn *c, struct cl_udp_slot *s) { slot_fail(c, s, CELLAR_DROPPED); }

/*
 * Sends the gets waiting at the head of the queue, at most room of them,
 * in one datagram under the next id.  Returns the gets it took (sent, or
 * answered at once), 0 when the id's slot is busy (more than
 * CL_UDP_SLOTS datagrams in flight: the caller sends the rest over TCP).
 * A datagram the kernel will not take (a full socket buffer, no buffers:
 * what a shaped or congested link gives) drops its gets at once, as a
 * datagram lost on the way would: a get waiting for the socket to drain
 * would have no deadline.
 */
static unsigned send_batch(struct cl_conn *c, unsigned room, uint64_t deadline) {
    struct cl_udp *u = &c->udp;
    struct cl_udp_slot *s = &u->slots[u->next_id % CL_UDP_SLOTS];
    if (s->q)
        return 0;
    unsigned char d[UDP_HDR + UDP_REQ_PAYLOAD];
    char line[MSG_HEAD_MAX];
    struct cl_req *first = NULL, *last = NULL;
    size_t len = 0;
    unsigned taken = 0, n = 0;
    while (taken < room && u->waiting.head) {
        struct cl_req *q = u->waiting.head;
        size_t k = c->pool->wire->fmt(line, sizeof(line), &q->m, u->next_id);
        if (k != 0 && len + k > UDP_REQ_PAYLOAD && n > 0)
            break;                          /* the next datagram's */
        cl_queue_pop(&u->waiting);
        taken++;
        if (k == 0) {
            cl_conn_complete(c, q, msg_key_ok(q->m.key) ? CELLAR_ENOTSUP : CELLAR_EINVAL, NULL);
            continue;
        }
        memcpy(d + UDP_HDR + len, line, k);
        len += k;
        q->next = NULL;
        q->opaque = u->next_id;
        if (last)
            last->next = q;
        else
            first = q;
        last = q;
        n++;
    }
    if (n == 0)
        return taken;
    mc_udp_frame_fmt(d, (struct mc_udp_frame){u->next_id, 0, 1});
    if (send(u->fd, d, UDP_HDR + len, 0) < 0) {
        bool full = errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS;
        /* ECONNECT: e.g. an ICMP refusal noted */
        fail_chain(c, first, full ? CELLAR_DROPPED : CELLAR_ECONNECT, false);
        return taken;
    }
    *s = (struct cl_udp_slot){.q = first, .id = u->next_id, .buf = s->buf, .cap = s->cap,
                              .deadline_ns = deadline};
    if (u->inflight++ == 0)
        u->oldest_id = u->next_id;
    u->next_id++;
    c->h->outstanding += n;
    c->h->st.requests += n;
    cl_count(&c->ctr.requests, n);
    c->h->st.udp_gets += n;
    c->h->st.udp_sends++;
    return taken;
}

unsigned cl_udp_send(struct cl_conn *c, unsigned room, uint64_t now) {
    struct cl_udp *u = &c->udp;
    if (u->waiting.n == 0 || room == 0)
        return 0;
    if (!udp_open(c)) {
        struct cl_req *q;
        while ((q = cl_queue_pop(&u->waiting)) != NULL)
            cl_conn_complete(c, q, CELLAR_ECONNECT, NULL);
        return 0;
    }
    uint64_t deadline = now + (uint64_t)c->pool->server_timeout_ms * 1000000u;
    unsigned sent = 0;
    while (sent < room && u->waiting.head) {
        unsigned k = send_batch(c, room - sent, deadline);
        if (k == 0) {
            cl_conn_submit_tcp(c, cl_queue_pop(&u->waiting));
            continue;
        }
        sent += k;
    }
    return sent;
}

/* Appends a datagram's payload to the slot's reply; false when it does not fit memory. */
static bool gather(struct cl_udp_slot *s, const char *p, size_t n) {
    if (s->cap - s->len < n) {
        size_t cap = s->cap ? s->cap : 2048;
        while (cap - s->len < n)
            cap *= 2;
        char *b = realloc(s->buf, cap);
        if (b == NULL)
            return false;
        s->buf = b;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    return true;
}

/* One datagram from the server. */
static void datagram(struct cl_conn *c, const unsigned char *d, size_t n) {
    struct cl_udp *u = &c->udp;
    struct mc_udp_frame f;
    if (!mc_udp_frame_parse(d, n, &f))
        return;
    uint16_t id = f.id, seq = f.seq, total = f.total;
    struct cl_udp_slot *s = &u->slots[id % CL_UDP_SLOTS];
    if (s->q == NULL || s->id != id)
        return;                             /* late or duplicate: its get is answered */
    if (seq != s->next_seq || total == 0 || seq >= total || (s->total && total != s->total) ||
        !gather(s, (const char *)d + UDP_HDR, n - UDP_HDR)) {
        drop(c, s);                         /* out of order: the paper's clients give up */
        return;
    }
    s->total = total;
    if (++s->next_seq < total)
        return;
    /*
     * A message is whole: answer the gets it holds, in order.  The
     * replies' spans point into the slot's buffer, which stays put until
     * the loop is done; the request answered stays the slot's head during
     * its call, so the slot is not taken meanwhile.
     */
    size_t off = 0;
    while (s->q != NULL) {
        struct msg_reply r;
        size_t used = 0;
        enum mc_parse rc = c->pool->wire->parse(&r, &s->q->m, id, s->buf + off, s->len - off,
                                                &used);
        if (rc == MC_PARSE_NEED_MORE)
            break;
        if (rc != MC_PARSE_OK) {
            drop(c, s);
            return;
        }
        off += used;
        struct cl_req *q = s->q, *next = q->next;
        c->h->outstanding--;
        cl_window_answered(c->h, used);
        cl_conn_complete(c, q, cl_status_of(&r), &r);
        s->q = next;
    }
    if (s->q == NULL) {
        slot_clear(u, s);       /* (bytes past the last answer: nobody's; dropped) */
        return;
    }
    memmove(s->buf, s->buf + off, s->len - off);  /* the rest waits for the next message */
    s->len -= off;
    s->next_seq = s->total = 0;
}

void cl_udp_io(struct cl_udp *u, uint64_t now) {
    (void)now;
    struct cl_conn *c = conn_of(u);
    struct cellar *h = c->h;
    if (h->udp_buf == NULL && (h->udp_buf = malloc(UDP_DATAGRAM_MAX)) == NULL)
        return;                 /* the gets will be late: dropped, no worse */
    unsigned char *d = h->udp_buf;
    for (int i = 0; i < 256 && u->fd >= 0; i++) {
        ssize_t n = recv(u->fd, d, UDP_DATAGRAM_MAX, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;        /* EAGAIN; or an ICMP error: the gets it hit will be late */
        }
        datagram(c, d, (size_t)n);
    }
}

uint64_t cl_udp_tick(struct cl_conn *c, uint64_t now) {
    struct cl_udp *u = &c->udp;
    while (u->inflight) {
        struct cl_udp_slot *s = &u->slots[u->oldest_id % CL_UDP_SLOTS];
        if (s->q == NULL || s->id != u->oldest_id) {
            u->oldest_id++;
            continue;
        }
        if (now < s->deadline_ns)
            return s->deadline_ns;
        cl_window_timeout(c->h);
        drop(c, s);
        u->oldest_id++;
    }
    return 0;
}

void cl_udp_reset(struct cl_conn *c, int status) {
    struct cl_udp *u = &c->udp;
    for (unsigned i = 0; u->slots && i < CL_UDP_SLOTS && u->inflight; i++)
        if (u->slots[i].q)
            slot_fail(c, &u->slots[i], status);
    struct cl_req *q;
    while ((q = cl_queue_pop(&u->waiting)) != NULL)
        cl_conn_complete(c, q, status, NULL);
}

void cl_udp_deinit(struct cl_conn *c) {
    struct cl_udp *u = &c->udp;
    cl_udp_reset(c, CELLAR_ECLOSED);
    if (u->fd >= 0) {
        evloop_del(c->h->loop, u->fd);
        close(u->fd);
        u->fd = -1;
    }
    for (unsigned i = 0; u->slots && i < CL_UDP_SLOTS; i++)
        free(u->slots[i].buf);
    free(u->slots);
    u->slots = NULL;
}
