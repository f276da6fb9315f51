/*
 * msg_text.c -- the text wire: struct msg as memcached's classic commands.
 *
 *   get/gets k            VALUE k f n [cas] / data / END, or END
 *   gat/gats e k          the same, after touching
 *   set|add|...|cas ...   STORED NOT_STORED EXISTS NOT_FOUND
 *   delete k              DELETED NOT_FOUND
 *   incr|decr k d         <number> NOT_FOUND
 *   touch k e             TOUCHED NOT_FOUND
 *   flush_all [d]         OK
 *   version               VERSION <text>
 *   stats [group]         STAT <name> <value> ... END; RESET / OK (reset, detail on)
 *
 * Any request may also be answered by ERROR, CLIENT_ERROR or SERVER_ERROR.
 * Elements are read with the client half of the text codec (mc_text_resp);
 * this file only checks that they are the ones the request allows, in the
 * order it allows them.  Leases have no text form.
 */
#include "protocol/msg.h"

#include <limits.h>
#include <string.h>

#include "protocol/mc_put.h"
#include "protocol/mc_text_resp.h"

static const enum mc_cmd store_cmd[MSG_OP_COUNT] = {
    [MSG_SET] = MC_CMD_SET,         [MSG_ADD] = MC_CMD_ADD,
    [MSG_REPLACE] = MC_CMD_REPLACE, [MSG_APPEND] = MC_CMD_APPEND,
    [MSG_PREPEND] = MC_CMD_PREPEND, [MSG_CAS] = MC_CMD_CAS,
};

static enum msg_res status_of(enum msg_op op, enum mc_resp_kind k);

/* "<verb> <key>[ <num>]\r\n", or "<verb> <num> <key>\r\n" for gat/gats. */
static size_t fmt_keyed(char *out, size_t cap, const struct msg *m) {
    static const char *const verb[MSG_OP_COUNT] = {
        [MSG_GET] = "get ",       [MSG_GETS] = "gets ",     [MSG_GAT] = "gat ",
        [MSG_GATS] = "gats ",     [MSG_DELETE] = "delete ", [MSG_INCR] = "incr ",
        [MSG_DECR] = "decr ",     [MSG_TOUCH] = "touch ",
    };
    struct mc_put w = MC_PUT_INIT(out, cap);
    mc_put(&w, verb[m->op], strlen(verb[m->op]));
    if (m->op == MSG_GAT || m->op == MSG_GATS) {
        mc_put_i64(&w, m->exptime);
        MC_PUT_LIT(&w, " ");
    }
    mc_put(&w, m->key.p, m->key.len);
    if (m->op == MSG_INCR || m->op == MSG_DECR) {
        MC_PUT_LIT(&w, " ");
        mc_put_u64(&w, m->delta);
    } else if (m->op == MSG_TOUCH) {
        MC_PUT_LIT(&w, " ");
        mc_put_i64(&w, m->exptime);
    } else if (m->op == MSG_DELETE && m->hold) {
        MC_PUT_LIT(&w, " ");
        mc_put_u64(&w, m->hold);
    }
    MC_PUT_LIT(&w, "\r\n");
    return mc_put_len(&w, out);
}

static size_t text_fmt(char *out, size_t cap, const struct msg *m, uint32_t opaque) {
    (void)opaque;
    if ((unsigned)m->op >= MSG_OP_COUNT)
        return 0;                   /* not an op: fmt_keyed would index past verb[] */
    /* the text protocol takes any key but for the bytes that end a token or a line */
    if (msg_op_keyed(m->op) && !msg_key_line_ok(m->key))
        return 0;
    if (msg_op_compares(m->op) && m->cas != 0)
        return 0;                   /* the text protocol compares only in `cas` */
    switch (m->op) {
    case MSG_SET: case MSG_ADD: case MSG_REPLACE:
    case MSG_APPEND: case MSG_PREPEND: case MSG_CAS:
        /*
         * memcached reads <bytes> as an int and refuses more than
         * INT_MAX - 2 with CLIENT_ERROR, without swallowing the data
         * block: the value would then be read as commands.
         */
        if (m->value.len > INT_MAX - 2)
            return 0;
        return mc_text_fmt_store(out, cap, store_cmd[m->op], m->key, m->flags, m->exptime,
                                 (uint32_t)m->value.len, m->cas, false);
    case MSG_FLUSH_ALL: {
        struct mc_put w = MC_PUT_INIT(out, cap);
        MC_PUT_LIT(&w, "flush_all");
        if (m->exptime != 0) {
            MC_PUT_LIT(&w, " ");
            mc_put_i64(&w, m->exptime);
        }
        MC_PUT_LIT(&w, "\r\n");
        return mc_put_len(&w, out);
    }
    case MSG_VERSION: {
        struct mc_put w = MC_PUT_INIT(out, cap);
        MC_PUT_LIT(&w, "version\r\n");
        return mc_put_len(&w, out);
    }
    case MSG_STATS:
        return msg_text_fmt_stats(out, cap, m);
    case MSG_LEASE_GET: case MSG_LEASE_SET: case MSG_META:
        return 0;
    default:
        return fmt_keyed(out, cap, m);
    }
}

size_t msg_text_fmt_stats(char *out, size_t cap, const struct msg *m) {
    if (!msg_group_ok(m->key))
        return 0;
    struct mc_put w = MC_PUT_INIT(out, cap);
    MC_PUT_LIT(&w, "stats");
    if (m->key.len) {
        MC_PUT_LIT(&w, " ");
        mc_put(&w, m->key.p, m->key.len);
    }
    MC_PUT_LIT(&w, "\r\n");
    return mc_put_len(&w, out);
}

/*
 * A stats reply: STAT lines (and the other lines some groups send, such
 * as `stats cachedump`'s ITEM lines) up to END, kept whole as the value;
 * RESET or OK alone for the groups that only act; or an error.
 */
enum mc_parse msg_text_parse_stats(struct msg_reply *r, const char *buf, size_t len,
                                   size_t *consumed) {
    *r = (struct msg_reply){.ttl = -1};
    *consumed = 0;
    for (size_t off = 0;;) {
        struct mc_resp e;
        size_t n = 0;
        enum mc_parse rc = mc_text_parse_resp(&e, buf + off, len - off, &n);
        if (rc != MC_PARSE_OK)
            return rc == MC_PARSE_NEED_MORE ? rc : MC_PARSE_ERROR;
        if (e.kind == MC_RESP_STAT || e.kind == MC_RESP_OTHER) {
            off += n;
            continue;
        }
        if (e.kind == MC_RESP_END) {
            r->res = MSG_RES_STATS;
            r->value = (struct mc_span){buf, off};
        } else if (off == 0 && (e.kind == MC_RESP_RESET || e.kind == MC_RESP_OK)) {
            r->res = MSG_RES_OK;
        } else if (off == 0 && (e.kind == MC_RESP_ERROR || e.kind == MC_RESP_CLIENT_ERROR ||
                                e.kind == MC_RESP_SERVER_ERROR)) {
            r->res = status_of(MSG_STATS, e.kind);
            r->msg = e.msg;
        } else {
            return MC_PARSE_ERROR;
        }
        *consumed = off + n;
        return MC_PARSE_OK;
    }
}

bool msg_text_stat_next(struct mc_span *rest, struct mc_span *name, struct mc_span *value) {
    while (rest->len) {
        const char *nl = memchr(rest->p, '\n', rest->len);
        size_t n = nl ? (size_t)(nl - rest->p) + 1 : rest->len;
        struct mc_span line = {rest->p, n};
        rest->p += n;
        rest->len -= n;
        while (line.len && (line.p[line.len - 1] == '\n' || line.p[line.len - 1] == '\r'))
            line.len--;
        if (line.len > 5 && memcmp(line.p, "STAT ", 5) == 0) {
            const char *p = line.p + 5, *end = line.p + line.len;
            const char *sp = memchr(p, ' ', (size_t)(end - p));
            *name = (struct mc_span){p, (size_t)((sp ? sp : end) - p)};
            *value = sp ? (struct mc_span){sp + 1, (size_t)(end - sp - 1)}
                        : (struct mc_span){end, 0};
        } else {
            *name = line;           /* a line of another kind: the whole of it */
            *value = (struct mc_span){line.p + line.len, 0};
        }
        return true;
    }
    return false;
}

/* The one status line a request may answer with, beside the errors. */
static enum msg_res status_of(enum msg_op op, enum mc_resp_kind k) {
    switch (k) {
    case MC_RESP_STORED:     return msg_op_stores(op) ? MSG_RES_STORED : MSG_RES_NONE;
    case MC_RESP_NOT_STORED: return msg_op_stores(op) ? MSG_RES_NOT_STORED : MSG_RES_NONE;
    case MC_RESP_EXISTS:     return op == MSG_CAS ? MSG_RES_EXISTS : MSG_RES_NONE;
    case MC_RESP_NOT_FOUND:
        return (op == MSG_CAS || op == MSG_DELETE || op == MSG_INCR || op == MSG_DECR ||
                op == MSG_TOUCH) ? MSG_RES_NOT_FOUND : MSG_RES_NONE;
    case MC_RESP_DELETED:    return op == MSG_DELETE ? MSG_RES_DELETED : MSG_RES_NONE;
    case MC_RESP_TOUCHED:    return op == MSG_TOUCH ? MSG_RES_TOUCHED : MSG_RES_NONE;
    case MC_RESP_NUMBER:
        return (op == MSG_INCR || op == MSG_DECR) ? MSG_RES_NUMBER : MSG_RES_NONE;
    case MC_RESP_OK:         return op == MSG_FLUSH_ALL ? MSG_RES_OK : MSG_RES_NONE;
    case MC_RESP_VERSION:    return op == MSG_VERSION ? MSG_RES_VERSION : MSG_RES_NONE;
    case MC_RESP_ERROR:      return MSG_RES_ERROR;
    case MC_RESP_CLIENT_ERROR: return MSG_RES_CLIENT_ERROR;
    case MC_RESP_SERVER_ERROR: return MSG_RES_SERVER_ERROR;
    default:                 return MSG_RES_NONE;
    }
}

static inline bool is_retrieval(enum msg_op op) {
    return op == MSG_GET || op == MSG_GETS || op == MSG_GAT || op == MSG_GATS;
}

/*
 * A retrieval's reply is one VALUE of the requested key then END, or END
 * alone.  The VALUE is read first and kept only once END is there too.
 */
static enum mc_parse parse_value(struct msg_reply *r, const struct msg *m,
                                 const struct mc_resp *v, const char *buf, size_t len,
                                 size_t *consumed) {
    if (v->key.len != m->key.len || memcmp(v->key.p, m->key.p, v->key.len) != 0)
        return MC_PARSE_ERROR;
    bool want_cas = m->op == MSG_GETS || m->op == MSG_GATS;
    if (v->has_cas != want_cas)
        return MC_PARSE_ERROR;
    struct mc_resp end;
    size_t n = 0;
    enum mc_parse rc = mc_text_parse_resp(&end, buf + *consumed, len - *consumed, &n);
    if (rc != MC_PARSE_OK)
        return rc == MC_PARSE_NEED_MORE ? rc : MC_PARSE_ERROR;
    if (end.kind != MC_RESP_END)
        return MC_PARSE_ERROR;
    r->res = MSG_RES_HIT;
    r->value = v->value;
    r->flags = v->flags;
    r->cas = v->cas;
    *consumed += n;
    return MC_PARSE_OK;
}

static enum mc_parse text_parse(struct msg_reply *r, const struct msg *m, uint32_t opaque,
                                const char *buf, size_t len, size_t *consumed) {
    (void)opaque;
    if (m->op == MSG_STATS)
        return msg_text_parse_stats(r, buf, len, consumed);
    *consumed = 0;                  /* NEED_MORE and ERROR consume nothing, as msg.h says */
    *r = (struct msg_reply){.ttl = -1};
    struct mc_resp e;
    size_t n = 0;
    enum mc_parse rc = mc_text_parse_resp(&e, buf, len, &n);
    if (rc != MC_PARSE_OK)
        return rc == MC_PARSE_NEED_MORE ? rc : MC_PARSE_ERROR;
    if (is_retrieval(m->op) && e.kind == MC_RESP_VALUE) {
        size_t used = n;
        rc = parse_value(r, m, &e, buf, len, &used);
        if (rc == MC_PARSE_OK)
            *consumed = used;
        return rc;
    }
    if (is_retrieval(m->op) && e.kind == MC_RESP_END) {
        r->res = MSG_RES_MISS;
    } else {
        r->res = status_of(m->op, e.kind);
        if (r->res == MSG_RES_NONE)
            return MC_PARSE_ERROR;
        r->number = e.number;
        r->msg = e.msg;
    }
    *consumed = n;
    return MC_PARSE_OK;
}

/*
 * Batched gets: "get k1 k2 k3\r\n" is answered by a VALUE for each key
 * that hits, in the line's order (a key twice on the line, twice), then
 * END.  Walking the batch's requests in order, each either finds its
 * VALUE next or missed; an error line (a key memcached refused) ends the
 * line's answer and answers every request still waiting.
 */
bool msg_text_batches(const struct msg *m) {
    return (m->op == MSG_GET || m->op == MSG_GETS) && !m->want_ttl && msg_key_line_ok(m->key);
}

enum mc_parse msg_text_parse_batched(struct msg_reply *r, const struct msg *m, bool last,
                                     const char *buf, size_t len, size_t *consumed) {
    *consumed = 0;
    *r = (struct msg_reply){.ttl = -1};
    struct mc_resp e;
    size_t n = 0;
    enum mc_parse rc = mc_text_parse_resp(&e, buf, len, &n);
    if (rc != MC_PARSE_OK)
        return rc == MC_PARSE_NEED_MORE ? rc : MC_PARSE_ERROR;
    switch (e.kind) {
    case MC_RESP_VALUE:
        if (e.key.len != m->key.len || memcmp(e.key.p, m->key.p, e.key.len) != 0) {
            if (last)           /* a VALUE nobody on the line asked for */
                return MC_PARSE_ERROR;
            r->res = MSG_RES_MISS;
            return MC_PARSE_OK;
        }
        if (e.has_cas != (m->op == MSG_GETS))
            return MC_PARSE_ERROR;
        if (last) {             /* the line's END comes with its last key */
            size_t used = n;
            rc = parse_value(r, m, &e, buf, len, &used);
            if (rc == MC_PARSE_OK)
                *consumed = used;
            return rc;
        }
        r->res = MSG_RES_HIT;
        r->value = e.value;
        r->flags = e.flags;
        r->cas = e.cas;
        *consumed = n;
        return MC_PARSE_OK;
    case MC_RESP_END:
        r->res = MSG_RES_MISS;
        break;
    case MC_RESP_ERROR: case MC_RESP_CLIENT_ERROR: case MC_RESP_SERVER_ERROR:
        r->res = status_of(m->op, e.kind);
        r->msg = e.msg;
        break;
    default:
        return MC_PARSE_ERROR;
    }
    if (last)
        *consumed = n;
    return MC_PARSE_OK;
}

const struct msg_wire msg_wire_text = {"text", text_fmt, text_parse, "\r\n", 2,
                                       msg_text_stat_next, msg_text_batches,
                                       msg_text_parse_batched};
