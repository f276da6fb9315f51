/*
 * msg_bin.c -- the binary wire: struct msg as memcached's binary packets.
 *
 * Every op is sent as a loud opcode, so each request has exactly one
 * reply, and parse reads that reply whole (header, extras, key, value):
 *
 *   op                 opcode     extras                          header cas
 *   get, gets          GET 00     -                               0
 *   gat, gats          GAT 1d     exptime                         0
 *   touch              TOUCH 1c   exptime                         0
 *   set, add, replace  01 02 03   flags, exptime                  0
 *   cas                SET 01     flags, exptime                  m->cas
 *   append, prepend    0e 0f      -                               0
 *   delete             DELETE 04  -                               0
 *   incr, decr         05 06      delta, initial 0, exptime ~0    0
 *   flush_all          FLUSH 08   delay, only when exptime > 0    0
 *   version            VERSION 0b -                               0
 *   lease-get/-set     (none: fmt returns 0)
 *
 * A GET answers the item's cas whether or not it was asked for (binary has
 * no gets), so get and gets are one request.  incr/decr send exptime
 * 0xffffffff, which makes memcached answer a miss with 01 instead of
 * creating the item from `initial`, as the text protocol does.
 *
 * Exptimes.  Binary's exptime is unsigned 32-bit and read as the text
 * protocol reads its own (0 never, up to 30 days relative, else a unix
 * time).  A negative text exptime (already expired) cannot be said as
 * such: it is sent as MSG_BIN_EXPIRED, 30 days + 1 second, the smallest
 * value read as an absolute unix time -- one long past, so the item is
 * expired at once.  (1 would not do: it is read as "one second from now".)
 * A flush_all delay is sent only when positive: text's flush_all reads a
 * negative delay as "now", which binary says with no extras.  An exptime
 * past 2^32 - 1 cannot be said at all (fmt returns 0; text's memcached
 * refuses those too).  Nor can a cas of 0: a binary SET with cas 0 is a
 * plain set, while text's `cas k .. 0` never stores over another cas.
 *
 * Replies speak the text protocol's words (see msg.h):
 *
 *   status  op                         reply
 *   00      get family                 HIT: flags (4-byte extras), value, cas
 *           set add replace cas ...    STORED          delete   DELETED
 *           incr, decr                 NUMBER (8-byte value)
 *           touch TOUCHED  flush_all OK  version VERSION (msg = the value)
 *   01      get family                 MISS
 *           replace                    NOT_STORED
 *           cas delete incr decr touch NOT_FOUND
 *   02      add NOT_STORED            cas EXISTS
 *   05      storage ops                NOT_STORED
 *   06      incr, decr                 CLIENT_ERROR cannot increment or ...
 *   03      any                        SERVER_ERROR object too large for cache
 *   82      incr, decr                 SERVER_ERROR out of memory
 *           any other                  SERVER_ERROR out of memory storing object
 *   20      flush_all                  CLIENT_ERROR flush_all not allowed
 *   04      any                        CLIENT_ERROR, msg = the body
 *   81      any                        ERROR, msg = the body
 *   other                              SERVER_ERROR, msg = the body
 *
 * The fixed messages are spans into static text, not into the buffer.  A
 * status that is none of the above for its op is still a well-framed
 * answer to this request (its opcode and opaque say so): it becomes a
 * SERVER_ERROR with the server's own words rather than a lost stream.
 *
 * MC_PARSE_ERROR means framing is lost: a magic other than 0x81, an opaque
 * or opcode that is not the request's, keylen + extlen > bodylen (all
 * decided from the 24-byte header, before the body arrives), or a body
 * whose shape does not fit the answer (a GET hit without its 4 bytes of
 * flags, an incr answer that is not 8 bytes, an error with extras or a key).
 */
#include "protocol/msg.h"

#include <string.h>

#include "protocol/mc_bin.h"

#define MSG_BIN_EXPIRED 2592001u    /* 30 days + 1 s: an absolute time long past */

/* The opcode each op is sent as; lease ops have none. */
static const uint8_t opcode_of[MSG_OP_COUNT] = {
    [MSG_GET] = MC_BIN_OP_GET,         [MSG_GETS] = MC_BIN_OP_GET,
    [MSG_GAT] = MC_BIN_OP_GAT,         [MSG_GATS] = MC_BIN_OP_GAT,
    [MSG_SET] = MC_BIN_OP_SET,         [MSG_ADD] = MC_BIN_OP_ADD,
    [MSG_REPLACE] = MC_BIN_OP_REPLACE, [MSG_APPEND] = MC_BIN_OP_APPEND,
    [MSG_PREPEND] = MC_BIN_OP_PREPEND, [MSG_CAS] = MC_BIN_OP_SET,
    [MSG_DELETE] = MC_BIN_OP_DELETE,   [MSG_INCR] = MC_BIN_OP_INCREMENT,
    [MSG_DECR] = MC_BIN_OP_DECREMENT,  [MSG_TOUCH] = MC_BIN_OP_TOUCH,
    [MSG_FLUSH_ALL] = MC_BIN_OP_FLUSH, [MSG_VERSION] = MC_BIN_OP_VERSION,
    [MSG_STATS] = MC_BIN_OP_STAT,
};

static inline bool bin_can_say(enum msg_op op) {
    return (unsigned)op < MSG_OP_COUNT && op != MSG_LEASE_GET && op != MSG_LEASE_SET &&
           op != MSG_META;
}

static inline bool is_retrieval(enum msg_op op) {
    return op == MSG_GET || op == MSG_GETS || op == MSG_GAT || op == MSG_GATS;
}

/* The text exptime as binary's unsigned field; false when it cannot be said. */
static bool wire_exptime(int64_t e, uint32_t *out) {
    if (e > (int64_t)UINT32_MAX)
        return false;
    *out = e < 0 ? MSG_BIN_EXPIRED : (uint32_t)e;
    return true;
}

/*
 * Writes m's extras at p and returns the byte after them, or NULL when
 * an exptime cannot be said.  Only the ops that read an exptime look at it.
 */
static char *put_extras(char *p, const struct msg *m) {
    uint32_t e = 0;
    switch (m->op) {
    case MSG_GAT: case MSG_GATS: case MSG_TOUCH:
        return wire_exptime(m->exptime, &e) ? mc_bin_store32(p, e) : NULL;
    case MSG_SET: case MSG_ADD: case MSG_REPLACE: case MSG_CAS:
        if (!wire_exptime(m->exptime, &e))
            return NULL;
        return mc_bin_store32(mc_bin_store32(p, m->flags), e);
    case MSG_INCR: case MSG_DECR:
        p = mc_bin_store64(mc_bin_store64(p, m->delta), 0);
        return mc_bin_store32(p, MC_BIN_EXPTIME_NO_CREATE);
    case MSG_FLUSH_ALL:
        if (m->exptime <= 0)
            return p;
        return wire_exptime(m->exptime, &e) ? mc_bin_store32(p, e) : NULL;
    default:
        return p;
    }
}

/*
 * Header, extras and key; bodylen also counts the value the caller sends
 * next.  0 for what binary cannot say, a bad key, or too little room.
 */
static size_t bin_fmt(char *out, size_t cap, const struct msg *m, uint32_t opaque) {
    if (!bin_can_say(m->op) || (m->op == MSG_CAS && m->cas == 0) ||
        (m->op == MSG_DELETE && m->hold))
        return 0;
    bool keyed = msg_op_keyed(m->op) || m->op == MSG_STATS;     /* STAT's key: the group */
    if ((msg_op_keyed(m->op) && !msg_key_any(m->key)) ||     /* binary keys are any bytes */
        (m->op == MSG_STATS && !msg_group_ok(m->key)))
        return 0;
    char ext[20];
    char *end = put_extras(ext, m);
    if (end == NULL)
        return 0;
    size_t extlen = (size_t)(end - ext), keylen = keyed ? m->key.len : 0;
    uint64_t body = (uint64_t)extlen + keylen + (msg_op_stores(m->op) ? m->value.len : 0);
    size_t n = MC_BIN_HDR_LEN + extlen + keylen;
    if (body > UINT32_MAX || n > cap)
        return 0;
    mc_bin_fmt_req_header(out, opcode_of[m->op], (uint16_t)keylen, (uint8_t)extlen,
                          (uint32_t)body, opaque,
                          m->op == MSG_CAS || msg_op_compares(m->op) ? m->cas : 0);
    memcpy(out + MC_BIN_HDR_LEN, ext, extlen);
    if (keylen)
        memcpy(out + MC_BIN_HDR_LEN + extlen, m->key.p, keylen);
    return n;
}

/* ---------------------------------------------------------------------- */
/* Replies                                                                  */
/* ---------------------------------------------------------------------- */

#define SPAN(lit) ((struct mc_span){lit, sizeof(lit) - 1})

static enum mc_parse say(struct msg_reply *r, enum msg_res res, struct mc_span msg) {
    r->res = res;
    r->msg = msg;
    return MC_PARSE_OK;
}

/* Status 0: the answer's shape must be the one this op gets. */
static enum mc_parse parse_success(struct msg_reply *r, enum msg_op op,
                                   const struct mc_bin_res *h, struct mc_span value) {
    bool bare = h->extlen == 0 && h->keylen == 0;
    if (is_retrieval(op)) {
        if (h->extlen != 4 || h->keylen != 0)
            return MC_PARSE_ERROR;
        r->res = MSG_RES_HIT;
        r->flags = mc_bin_load32(h->ext.p);
        r->value = value;
        r->cas = h->cas;
        return MC_PARSE_OK;
    }
    r->cas = h->cas;            /* the item's after the change (0 for what has none) */
    switch (op) {
    case MSG_INCR: case MSG_DECR:
        if (!bare || value.len != 8)
            return MC_PARSE_ERROR;
        r->number = mc_bin_load64(value.p);
        return say(r, MSG_RES_NUMBER, (struct mc_span){0});
    case MSG_TOUCH: /* memcached sends the flags; an empty answer says the same */
        if ((h->extlen != 0 && h->extlen != 4) || h->keylen != 0 || value.len != 0)
            return MC_PARSE_ERROR;
        if (h->extlen == 4)
            r->flags = mc_bin_load32(h->ext.p);
        return say(r, MSG_RES_TOUCHED, (struct mc_span){0});
    case MSG_VERSION:
        return bare ? say(r, MSG_RES_VERSION, value) : MC_PARSE_ERROR;
    default:
        break;
    }
    if (h->bodylen != 0)
        return MC_PARSE_ERROR;
    if (op == MSG_DELETE)
        return say(r, MSG_RES_DELETED, (struct mc_span){0});
    if (op == MSG_FLUSH_ALL)
        return say(r, MSG_RES_OK, (struct mc_span){0});
    return say(r, MSG_RES_STORED, (struct mc_span){0});
}

/*
 * A status that reads as one of the text protocol's plain answers for
 * this op (a miss, NOT_STORED, EXISTS, NOT_FOUND), or MSG_RES_NONE.
 */
static enum msg_res plain_failure(enum msg_op op, bool compares, uint16_t status) {
    switch (status) {
    case MC_BIN_ST_KEY_ENOENT:
        if (is_retrieval(op))
            return MSG_RES_MISS;
        if (op == MSG_REPLACE)
            return MSG_RES_NOT_STORED;
        if (op == MSG_CAS || op == MSG_DELETE || op == MSG_INCR || op == MSG_DECR ||
            op == MSG_TOUCH)
            return MSG_RES_NOT_FOUND;
        return MSG_RES_NONE;
    case MC_BIN_ST_KEY_EEXISTS:
        if (op == MSG_ADD)
            return MSG_RES_NOT_STORED;
        return op == MSG_CAS || compares ? MSG_RES_EXISTS : MSG_RES_NONE;
    case MC_BIN_ST_NOT_STORED:
        return msg_op_stores(op) ? MSG_RES_NOT_STORED : MSG_RES_NONE;
    default:
        return MSG_RES_NONE;
    }
}

/* Status != 0: the body is the server's text; errors get text's words. */
static enum mc_parse parse_failure(struct msg_reply *r, enum msg_op op, bool compares,
                                   const struct mc_bin_res *h, struct mc_span body) {
    if (h->extlen != 0 || h->keylen != 0)
        return MC_PARSE_ERROR;
    enum msg_res plain = plain_failure(op, compares, h->status);
    if (plain != MSG_RES_NONE)
        return say(r, plain, (struct mc_span){0});
    bool delta = op == MSG_INCR || op == MSG_DECR;
    switch (h->status) {
    case MC_BIN_ST_DELTA_BADVAL:
        if (delta)
            return say(r, MSG_RES_CLIENT_ERROR,
                       SPAN("cannot increment or decrement non-numeric value"));
        break;
    case MC_BIN_ST_E2BIG:
        return say(r, MSG_RES_SERVER_ERROR, SPAN("object too large for cache"));
    case MC_BIN_ST_ENOMEM:
        if (delta)
            return say(r, MSG_RES_SERVER_ERROR, SPAN("out of memory"));
        return say(r, MSG_RES_SERVER_ERROR, SPAN("out of memory storing object"));
    case MC_BIN_ST_AUTH_ERROR:
        if (op == MSG_FLUSH_ALL)
            return say(r, MSG_RES_CLIENT_ERROR, SPAN("flush_all not allowed"));
        break;
    case MC_BIN_ST_EINVAL:
        return say(r, MSG_RES_CLIENT_ERROR, body);
    case MC_BIN_ST_UNKNOWN_COMMAND:
        return say(r, MSG_RES_ERROR, body);
    default:
        break;
    }
    return say(r, MSG_RES_SERVER_ERROR, body);
}

/*
 * STAT's reply: one packet per statistic (key = name, value = text), then
 * a packet with neither, all with the request's opaque; or one failure
 * packet (01 for an unknown group: ERROR, as the text protocol answers).
 * The statistics, packets and all, are the value; bin_stat_next() walks
 * them.  "reset" and "detail on|off" answer the terminator alone: STATS
 * with nothing in it (text says RESET / OK).
 */
static enum mc_parse parse_stats(struct msg_reply *r, uint32_t opaque, const char *buf,
                                 size_t len, size_t *consumed) {
    for (size_t off = 0;;) {
        struct mc_bin_res h;
        size_t head = 0;
        enum mc_parse rc = mc_bin_parse_res(&h, buf + off, len - off, &head);
        if (rc == MC_PARSE_CLOSE ||
            (len - off >= MC_BIN_HDR_LEN && (h.opcode != MC_BIN_OP_STAT || h.opaque != opaque)))
            return MC_PARSE_ERROR;
        if (rc != MC_PARSE_OK || len - off - head < h.vlen)
            return MC_PARSE_NEED_MORE;
        if (h.status != MC_BIN_ST_OK) {
            if (off != 0)
                return MC_PARSE_ERROR;
            struct mc_span body = {buf + head, h.vlen};
            if (h.status == MC_BIN_ST_KEY_ENOENT)   /* no such group: text answers ERROR */
                rc = say(r, MSG_RES_ERROR, body);
            else
                rc = parse_failure(r, MSG_STATS, false, &h, body);
            if (rc == MC_PARSE_OK)
                *consumed = head + h.vlen;
            return rc;
        }
        if (h.keylen == 0 && h.bodylen == 0) {
            r->res = MSG_RES_STATS;
            r->value = (struct mc_span){buf, off};
            *consumed = off + head;
            return MC_PARSE_OK;
        }
        off += head + h.vlen;
    }
}

static bool bin_stat_next(struct mc_span *rest, struct mc_span *name, struct mc_span *value) {
    struct mc_bin_res h;
    size_t head = 0;
    if (rest->len == 0 || mc_bin_parse_res(&h, rest->p, rest->len, &head) != MC_PARSE_OK ||
        rest->len - head < h.vlen)
        return false;
    *name = h.key;
    *value = (struct mc_span){rest->p + head, h.vlen};
    rest->p += head + h.vlen;
    rest->len -= head + h.vlen;
    return true;
}

/*
 * One whole reply.  The header alone decides whether it can be this
 * request's (magic, opcode, opaque, lengths), so a lost stream is found
 * before waiting for a body it announces; the answer itself waits for
 * every body byte and consumes nothing until then.
 */
static enum mc_parse bin_parse(struct msg_reply *r, const struct msg *m, uint32_t opaque,
                               const char *buf, size_t len, size_t *consumed) {
    *r = (struct msg_reply){.ttl = -1};
    *consumed = 0;
    if (!bin_can_say(m->op))
        return MC_PARSE_ERROR;
    if (m->op == MSG_STATS)
        return parse_stats(r, opaque, buf, len, consumed);
    struct mc_bin_res h;
    size_t head = 0;
    enum mc_parse rc = mc_bin_parse_res(&h, buf, len, &head);
    if (rc == MC_PARSE_CLOSE)
        return MC_PARSE_ERROR;
    if (len >= MC_BIN_HDR_LEN && (h.opcode != opcode_of[m->op] || h.opaque != opaque))
        return MC_PARSE_ERROR;
    if (rc != MC_PARSE_OK || len - head < h.vlen)
        return MC_PARSE_NEED_MORE;
    struct mc_span value = {buf + head, h.vlen};
    rc = h.status == MC_BIN_ST_OK ? parse_success(r, m->op, &h, value)
                                  : parse_failure(r, m->op, msg_op_compares(m->op) && m->cas != 0,
                                                  &h, value);
    if (rc == MC_PARSE_OK)
        *consumed = head + h.vlen;
    else
        *r = (struct msg_reply){.ttl = -1};
    return rc;
}

const struct msg_wire msg_wire_bin = {"binary", bin_fmt, bin_parse, "", 0, bin_stat_next,
                                      NULL, NULL};
