/*
 * msg_serve.c -- client requests into struct msg, replies into the
 * client's own protocol (see msg_serve.h for the router's decisions).
 *
 *   text     get k1 k2 ..  -> one MSG_GET per key   -> VALUE lines, END
 *            set k f e n   -> MSG_SET               -> STORED, NOT_STORED ...
 *   meta     mg k v O1 q   -> MSG_META "mg k v"     -> "VA 2 O1" (q, O: here)
 *   binary   GETKQ k       -> MSG_GETS              -> 0x81 header, flags, key
 *            INCR k (create) -> MSG_INCR, then on NOT_FOUND an add of initial
 *
 * The words are cellard's (server/dispatch*.c), which are memcached
 * 1.6.18's.  Where a reply cannot carry what memcached would say, the
 * FIXMEs below say what the client sees instead.
 */
#include "protocol/msg_serve.h"

#include <string.h>

#include "protocol/mc_mcr.h"
#include "protocol/mc_put.h"

#define SPAN(lit) ((struct mc_span){lit, sizeof(lit) - 1})

static const struct mc_span crlf = SPAN("\r\n");

static inline bool is_retrieval(enum msg_op op) {
    return op == MSG_GET || op == MSG_GETS || op == MSG_GAT || op == MSG_GATS;
}

static inline bool span_is(struct mc_span s, const char *lit) {
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.p, lit, n) == 0;
}

/* ---------------------------------------------------------------------- */
/* Requests                                                                 */
/* ---------------------------------------------------------------------- */

static const enum msg_op text_op[] = {
    [MC_CMD_GET] = MSG_GET,         [MC_CMD_GETS] = MSG_GETS,
    [MC_CMD_GAT] = MSG_GAT,         [MC_CMD_GATS] = MSG_GATS,
    [MC_CMD_SET] = MSG_SET,         [MC_CMD_ADD] = MSG_ADD,
    [MC_CMD_REPLACE] = MSG_REPLACE, [MC_CMD_APPEND] = MSG_APPEND,
    [MC_CMD_PREPEND] = MSG_PREPEND, [MC_CMD_CAS] = MSG_CAS,
    [MC_CMD_DELETE] = MSG_DELETE,   [MC_CMD_INCR] = MSG_INCR,
    [MC_CMD_DECR] = MSG_DECR,       [MC_CMD_TOUCH] = MSG_TOUCH,
    [MC_CMD_FLUSH_ALL] = MSG_FLUSH_ALL, [MC_CMD_VERSION] = MSG_VERSION,
};

/*
 * mcrouter's lease-get (keys as get's; a lease of MSG_SERVE_LEASE_TTL),
 * lease-set (the token as the cas) and metaget (a get asking the TTL).
 */
__attribute__((noinline, cold)) static bool
mcr_from_text(struct msg *m, const struct mc_req *req, struct mc_span key, struct mc_span value) {
    switch (req->cmd) {
    case MC_CMD_LEASE_GET:
        m->op = MSG_LEASE_GET;
        m->key = key.p != NULL ? key : req->key;
        m->exptime = MSG_SERVE_LEASE_TTL;
        return true;
    case MC_CMD_LEASE_SET:
        m->op = MSG_LEASE_SET;
        m->key = req->key;
        m->flags = req->flags;
        m->exptime = req->exptime;
        m->value = value;
        m->cas = req->cas;
        return true;
    case MC_CMD_METAGET:
        m->op = MSG_GET;
        m->key = req->key;
        m->want_ttl = true;
        return true;
    default:
        return false;
    }
}

bool msg_from_text(struct msg *m, const struct mc_req *req, struct mc_span key,
                   struct mc_span value) {
    *m = (struct msg){0};
    if (req->err != MC_ERR_NONE) {
        /* Only cellar's "delete <key> <hold>", which the codec refuses as memcached does. */
        if (req->cmd != MC_CMD_DELETE || req->err != MC_ERR_DELETE_USAGE ||
            req->exptime <= 0 || req->exptime > (int64_t)UINT32_MAX)
            return false;
        m->op = MSG_DELETE;
        m->key = req->key;
        m->hold = (uint32_t)req->exptime;
        return true;
    }
    if (req->cmd > MC_CMD_META)         /* mcrouter's own (mc_mcr.h), the last of them */
        return mcr_from_text(m, req, key, value);
    if ((unsigned)req->cmd > MC_CMD_VERSION || req->cmd == MC_CMD_NONE)
        return false;
    m->op = text_op[req->cmd];
    m->key = is_retrieval(m->op) ? (key.p != NULL ? key : req->key) : req->key;
    m->text_form = is_retrieval(m->op) || m->op == MSG_TOUCH ||  /* not an mg (msg.h) */
                   m->op == MSG_APPEND || m->op == MSG_PREPEND;
    switch (m->op) {
    case MSG_GAT: case MSG_GATS: case MSG_TOUCH: case MSG_FLUSH_ALL:
        m->exptime = req->exptime;
        break;
    case MSG_SET: case MSG_ADD: case MSG_REPLACE: case MSG_APPEND: case MSG_PREPEND:
    case MSG_CAS:
        m->flags = req->flags;
        m->exptime = req->exptime;
        m->value = value;
        m->cas = req->cas;
        break;
    case MSG_INCR: case MSG_DECR:
        m->delta = req->delta;
        break;
    default:
        break;
    }
    if (!msg_op_keyed(m->op))
        m->key = (struct mc_span){0};
    return true;
}

/* The key token of a meta line as the client wrote it: the second word. */
static struct mc_span raw_key(struct mc_span line) {
    const char *p = line.p, *end = line.p + line.len;
    while (p < end && *p != ' ')
        p++;
    while (p < end && *p == ' ')
        p++;
    const char *k = p;
    while (p < end && *p != ' ' && *p != '\r' && *p != '\n')
        p++;
    return (struct mc_span){k, (size_t)(p - k)};
}

/*
 * The client's flags go to the backend as they were, less q and O.  An mg
 * or ma with an over-long O keeps its O's and loses only q: memcached
 * acts on such a request up to the O and then answers CLIENT_ERROR, and
 * only the backend itself can stop where it would (an mg that went on
 * would take a stale item's win token).  When nothing is dropped the span
 * stays in the line; otherwise the kept tokens are joined with single
 * spaces in buf.
 */
bool msg_from_meta(struct msg *m, const struct mc_meta_req *req, struct mc_span line,
                   struct mc_span value, char *buf, size_t cap) {
    static const char cmd_char[] = {
        [MC_META_MG] = 'g', [MC_META_MS] = 's', [MC_META_MD] = 'd', [MC_META_MA] = 'a',
        [MC_META_ME] = 'e',
    };
    *m = (struct msg){0};
    if (req->cmd != MC_META_MG && req->cmd != MC_META_MS && req->cmd != MC_META_MD &&
        req->cmd != MC_META_MA && req->cmd != MC_META_ME)
        return false;
    m->op = MSG_META;
    m->meta_cmd = cmd_char[req->cmd];
    m->key = req->key_binary ? raw_key(line) : req->key;
    if (req->cmd == MC_META_ME) {   /* me <key> [b]: no other flags */
        if (req->key_binary)
            m->meta_flags = (struct mc_span){"b", 1};
        return true;
    }
    if (req->cmd == MC_META_MS)
        m->value = value;
    int end = req->nflags;
    bool late = mc_meta_late_error(req) >= 0;
    bool dropped = false;
    for (int i = 0; i < end; i++)
        dropped |= req->flags[i].c == 'q' || (req->flags[i].c == 'O' && !late);
    /* q goes to the server as its own q (and an mn), except an ms's, which
       the router applies (msg.h, meta_quiet); a late error shows whatever q */
    m->meta_quiet = req->cmd != MC_META_MS && mc_meta_has(req, 'q') && !late;
    if (!dropped) {
        if (end > 0) {
            const struct mc_span *a = &req->flags[0].tok, *z = &req->flags[end - 1].tok;
            m->meta_flags = (struct mc_span){a->p, (size_t)(z->p + z->len - a->p)};
        }
        return true;
    }
    struct mc_put w = MC_PUT_INIT(buf, cap);
    for (int i = 0; i < end; i++) {
        const struct mc_meta_flag *f = &req->flags[i];
        if (f->c == 'q' || (f->c == 'O' && !late))
            continue;
        if (w.p != buf)
            MC_PUT_LIT(&w, " ");
        mc_put(&w, f->tok.p, f->tok.len);
    }
    if (w.full)
        return false;
    m->meta_flags = (struct mc_span){buf, (size_t)(w.p - buf)};
    return true;
}

/*
 * Binary opcodes (quiet twins already folded into req->cmd by the codec).
 * A header cas asks memcached to compare first: a store with one is
 * MSG_CAS, and append, prepend, delete, incr and decr carry it in msg.cas
 * (the meta and binary wires compare; a text pool answers ENOTSUP).
 */
/*
 * A binary exptime (unsigned 32 bits) as the text protocol says it.  Past
 * 2^31 - 1 the text and meta lines cannot say it (memcached reads them as
 * signed 32 bits: already expired); those are absolute times after 2038,
 * which memcached's binary protocol keeps for as long as a process lives,
 * so they are sent as 0, never.
 */
static int64_t bin_exptime(uint32_t e) {
    return e > INT32_MAX ? 0 : (int64_t)e;
}

enum msg_bin_plan msg_from_bin(struct msg *m, const struct mc_bin_req *req,
                               struct mc_span value) {
    /* memcached's binary answers carry the item's cas after a change: ask for it */
    *m = (struct msg){.key = req->key, .exptime = bin_exptime(req->exptime), .want_cas = true};
    switch (req->cmd) {
    case MC_BIN_OP_GET: case MC_BIN_OP_GETK:
        m->op = MSG_GETS;
        m->exptime = 0;
        return MSG_BIN_SEND;
    case MC_BIN_OP_GAT: case MC_BIN_OP_GATK:
        m->op = MSG_GATS;
        return MSG_BIN_SEND;
    case MC_BIN_OP_TOUCH:
        m->op = MSG_TOUCH;
        return MSG_BIN_SEND;
    case MC_BIN_OP_SET: case MC_BIN_OP_ADD: case MC_BIN_OP_REPLACE:
        m->op = req->cas != 0 ? MSG_CAS
              : req->cmd == MC_BIN_OP_SET ? MSG_SET
              : req->cmd == MC_BIN_OP_ADD ? MSG_ADD : MSG_REPLACE;
        m->flags = req->flags;
        m->cas = req->cas;
        m->value = value;
        return MSG_BIN_SEND;
    case MC_BIN_OP_APPEND: case MC_BIN_OP_PREPEND:
        m->op = req->cmd == MC_BIN_OP_APPEND ? MSG_APPEND : MSG_PREPEND;
        m->exptime = 0;
        m->value = value;
        m->cas = req->cas;          /* compared first (msg_op_compares) */
        return MSG_BIN_SEND;
    case MC_BIN_OP_DELETE:
        m->op = MSG_DELETE;
        m->exptime = 0;
        m->cas = req->cas;
        return MSG_BIN_SEND;
    case MC_BIN_OP_INCREMENT: case MC_BIN_OP_DECREMENT:
        m->op = req->cmd == MC_BIN_OP_INCREMENT ? MSG_INCR : MSG_DECR;
        m->delta = req->delta;
        m->exptime = 0;
        m->cas = req->cas;
        return req->exptime == MC_BIN_EXPTIME_NO_CREATE ? MSG_BIN_SEND : MSG_BIN_SEND_CREATE;
    case MC_BIN_OP_FLUSH:
        *m = (struct msg){.op = MSG_FLUSH_ALL, .exptime = bin_exptime(req->exptime)};
        return MSG_BIN_SEND;
    case MC_BIN_OP_VERSION:
        *m = (struct msg){.op = MSG_VERSION};
        return MSG_BIN_SEND;
    default:
        *m = (struct msg){0};
        return MSG_BIN_LOCAL;
    }
}

void msg_bin_create(struct msg *m, const struct mc_bin_req *req, char *digits) {
    struct mc_put w = MC_PUT_INIT(digits, MSG_SERVE_DIGITS);
    mc_put_u64(&w, req->initial);
    *m = (struct msg){.op = MSG_ADD, .key = req->key, .exptime = bin_exptime(req->exptime),
                      .value = {digits, mc_put_len(&w, digits)}, .want_cas = true};
}

/* ---------------------------------------------------------------------- */
/* Failures and errors                                                      */
/* ---------------------------------------------------------------------- */

void msg_serve_error(struct msg_reply *r, enum msg_res res, const char *why) {
    *r = (struct msg_reply){.res = res, .ttl = -1, .msg = {why, strlen(why)}};
}

bool msg_serve_is_error(const struct msg_reply *r) {
    return r->res == MSG_RES_ERROR || r->res == MSG_RES_CLIENT_ERROR ||
           r->res == MSG_RES_SERVER_ERROR;
}

/* "ERROR[ <msg>]", "CLIENT_ERROR <msg>" or "SERVER_ERROR <msg>", with "\r\n". */
static size_t put_error(char *out, size_t cap, const struct msg_reply *r) {
    struct mc_put w = MC_PUT_INIT(out, cap);
    if (r->res == MSG_RES_ERROR)
        MC_PUT_LIT(&w, "ERROR");
    else if (r->res == MSG_RES_CLIENT_ERROR)
        MC_PUT_LIT(&w, "CLIENT_ERROR");
    else
        MC_PUT_LIT(&w, "SERVER_ERROR");
    if (r->msg.len) {
        MC_PUT_LIT(&w, " ");
        mc_put(&w, r->msg.p, r->msg.len);
    }
    MC_PUT_LIT(&w, "\r\n");
    return mc_put_len(&w, out);
}

/*
 * Can r answer op?  The wires already check this for the replies they
 * parse (msg_text.c's status_of, msg_bin.c's plain_failure); the
 * formatters check again so that a caller's slip is a SERVER_ERROR line
 * rather than a wrong answer.
 */
static bool res_fits(enum msg_op op, enum msg_res res) {
    switch (res) {
    case MSG_RES_HIT: case MSG_RES_MISS: return is_retrieval(op);
    case MSG_RES_STORED: case MSG_RES_NOT_STORED: return msg_op_stores(op);
    case MSG_RES_EXISTS: return op == MSG_CAS || msg_op_compares(op);
    case MSG_RES_NOT_FOUND:
        return op == MSG_CAS || op == MSG_DELETE || op == MSG_INCR || op == MSG_DECR ||
               op == MSG_TOUCH;
    case MSG_RES_DELETED: return op == MSG_DELETE;
    case MSG_RES_TOUCHED: return op == MSG_TOUCH;
    case MSG_RES_NUMBER: return op == MSG_INCR || op == MSG_DECR;
    case MSG_RES_OK: return op == MSG_FLUSH_ALL;
    case MSG_RES_VERSION: return op == MSG_VERSION;
    case MSG_RES_ERROR: case MSG_RES_CLIENT_ERROR: case MSG_RES_SERVER_ERROR: return true;
    default: return false;
    }
}

/* A reply that cannot answer this request (the wires already check, so: never). */
static size_t put_proto_error(char *out, size_t cap) {
    struct msg_reply e;
    msg_serve_error(&e, MSG_RES_SERVER_ERROR, "protocol error in server reply");
    return put_error(out, cap, &e);
}

/* ---------------------------------------------------------------------- */
/* Text                                                                     */
/* ---------------------------------------------------------------------- */

static const char *const text_words[MSG_RES_COUNT] = {
    [MSG_RES_STORED] = "STORED\r\n",       [MSG_RES_NOT_STORED] = "NOT_STORED\r\n",
    [MSG_RES_EXISTS] = "EXISTS\r\n",       [MSG_RES_NOT_FOUND] = "NOT_FOUND\r\n",
    [MSG_RES_DELETED] = "DELETED\r\n",     [MSG_RES_TOUCHED] = "TOUCHED\r\n",
    [MSG_RES_OK] = "OK\r\n",
};

/*
 * mcrouter's lease-get, lease-set and metaget (mc_mcr.h), from the meta
 * replies of msg_from_text's requests: a won lease is LVALUE with its
 * token, one another client holds LVALUE with token 1 (mcrouter's "hot
 * miss": ask again); a lease-set STORED or else NOT_STORED; a metaget's
 * exptime the TTL left from now (0: never).
 */
__attribute__((noinline, cold)) static size_t
serve_mcr(char *out, size_t cap, const struct mc_req *req, const struct msg *m,
          const struct msg_reply *r, struct msg_serve_out *o) {
    struct mc_put w = MC_PUT_INIT(out, cap);
    if (req->cmd == MC_CMD_LEASE_SET) {
        if (r->res == MSG_RES_STORED)
            MC_PUT_LIT(&w, "STORED\r\n");
        else
            MC_PUT_LIT(&w, "NOT_STORED\r\n");
        return mc_put_len(&w, out);
    }
    if (r->res == MSG_RES_MISS)
        return 0;
    if (r->res != MSG_RES_HIT || cap < MC_VALUE_LINE_MAX + 96 || m->key.len > MC_KEY_MAX ||
        r->value.len > UINT32_MAX)
        return put_proto_error(out, cap);
    if (req->cmd == MC_CMD_METAGET)     /* its ttl made a unix time by the caller */
        return mc_mcr_fmt_meta(out, m->key.p, m->key.len, -1, r->ttl < 0 ? 0 : r->ttl);
    o->value = r->value;
    o->tail = crlf;
    if (r->won || r->token_sent)
        return mc_mcr_fmt_lvalue(out, m->key.p, m->key.len, r->won ? r->cas : 1, r->flags,
                                 (uint32_t)r->value.len);
    /* VALUE written here, not by mc_text_fmt_value(): a second caller would keep
       the compiler from inlining it into msg_serve_text() */
    MC_PUT_LIT(&w, "VALUE ");
    mc_put(&w, m->key.p, m->key.len);
    MC_PUT_LIT(&w, " ");
    mc_put_u64(&w, r->flags);
    MC_PUT_LIT(&w, " ");
    mc_put_u64(&w, r->value.len);
    MC_PUT_LIT(&w, "\r\n");
    return mc_put_len(&w, out);
}

size_t msg_serve_text(char *out, size_t cap, const struct mc_req *req, const struct msg *m,
                      const struct msg_reply *r, struct msg_serve_out *o) {
    *o = (struct msg_serve_out){.tail = {"", 0}};
    if (req->noreply)
        return 0;
    if (msg_serve_is_error(r))
        return put_error(out, cap, r);
    if (req->cmd > MC_CMD_META)         /* mcrouter's own (mc_mcr.h), the last of them */
        return serve_mcr(out, cap, req, m, r, o);
    if (!res_fits(m->op, r->res))
        return put_proto_error(out, cap);
    bool get = is_retrieval(m->op);
    if (get && r->res == MSG_RES_MISS)
        return 0;
    if (get && r->res == MSG_RES_HIT) {
        if (cap < MC_VALUE_LINE_MAX || m->key.len > MC_KEY_MAX || r->value.len > UINT32_MAX)
            return put_proto_error(out, cap);
        o->value = r->value;
        o->tail = crlf;
        return mc_text_fmt_value(out, m->key.p, m->key.len, r->flags, (uint32_t)r->value.len,
                                 m->op == MSG_GETS || m->op == MSG_GATS, r->cas);
    }
    struct mc_put w = MC_PUT_INIT(out, cap);
    if (r->res == MSG_RES_NUMBER) {
        mc_put_u64(&w, r->number);
        MC_PUT_LIT(&w, "\r\n");
    } else if (r->res == MSG_RES_VERSION) {
        MC_PUT_LIT(&w, "VERSION ");
        if (r->msg.len)
            mc_put(&w, r->msg.p, r->msg.len);
        MC_PUT_LIT(&w, "\r\n");
    } else if (text_words[r->res] != NULL) {
        mc_put(&w, text_words[r->res], strlen(text_words[r->res]));
    } else {
        return put_proto_error(out, cap);
    }
    return mc_put_len(&w, out);
}

/* ---------------------------------------------------------------------- */
/* Binary                                                                   */
/* ---------------------------------------------------------------------- */

#define MSG_BIN_EINTERNAL 0x84      /* memcached's PROTOCOL_BINARY_RESPONSE_EINTERNAL */

/* An error answer with its text, cut to what fits (cap >= MSG_SERVE_HEAD_MAX). */
static size_t bin_error_text(char *out, size_t cap, const struct mc_bin_req *req,
                             uint16_t status, struct mc_span text) {
    if (cap < MC_BIN_HDR_LEN)
        return 0;
    if (text.len > cap - MC_BIN_HDR_LEN)
        text.len = cap - MC_BIN_HDR_LEN;
    if (text.len == 0)
        text.p = "";            /* never hand memcpy a null span */
    return mc_bin_fmt_error_text(out, req->opcode, status, req->opaque, text.p, text.len);
}

static size_t bin_error(char *out, size_t cap, const struct mc_bin_req *req, uint16_t status) {
    struct mc_span t = {mc_bin_status_text(status), mc_bin_status_text_len(status)};
    return bin_error_text(out, cap, req, status, t);
}

/*
 * An error reply in memcached's binary statuses.  The text protocol's
 * words name the case: the non-numeric incr is 06, flush refused by -F is
 * 20, any other CLIENT_ERROR 04; too large 03; the out-of-memory answers
 * 82 with the sentence dispatch_bin.c sends for that op; ERROR 81.  A
 * SERVER_ERROR memcached has no status for (the router's own failures,
 * a backend's other messages) is 84 "internal error" with its words.
 */
static size_t bin_fail(char *out, size_t cap, const struct mc_bin_req *req, const struct msg *m,
                       const struct msg_reply *r) {
    bool delta = req->cmd == MC_BIN_OP_INCREMENT || req->cmd == MC_BIN_OP_DECREMENT;
    if (r->res == MSG_RES_ERROR)
        return bin_error(out, cap, req, MC_BIN_ST_UNKNOWN_COMMAND);
    if (r->res == MSG_RES_CLIENT_ERROR) {
        if (delta && span_is(r->msg, "cannot increment or decrement non-numeric value"))
            return bin_error(out, cap, req, MC_BIN_ST_DELTA_BADVAL);
        if (req->cmd == MC_BIN_OP_FLUSH && span_is(r->msg, "flush_all not allowed"))
            return bin_error(out, cap, req, MC_BIN_ST_AUTH_ERROR);
        return bin_error(out, cap, req, MC_BIN_ST_EINVAL);
    }
    if (span_is(r->msg, "object too large for cache"))
        return bin_error(out, cap, req, MC_BIN_ST_E2BIG);
    if (span_is(r->msg, "out of memory storing object") || span_is(r->msg, "out of memory")) {
        const char *oom = !delta ? MC_BIN_OOM_ITEM
                        : m->op == MSG_ADD ? MC_BIN_OOM_NEW_ITEM : MC_BIN_OOM_INCR;
        return bin_error_text(out, cap, req, MC_BIN_ST_ENOMEM, (struct mc_span){oom, strlen(oom)});
    }
    return bin_error_text(out, cap, req, MSG_BIN_EINTERNAL, r->msg);
}

/* An empty success (status 0), silent for a quiet opcode. */
static size_t bin_ok(char *out, const struct mc_bin_req *req, uint64_t cas) {
    if (req->quiet)
        return 0;
    return mc_bin_fmt_header(out, req->opcode, 0, 0, 0, 0, req->opaque, cas);
}

/*
 * The success statuses and the plain failures, per dispatch_bin.c.
 * FIXME: struct msg_reply carries no cas for stores, incr/decr and touch,
 * nor the flags of a touch, so those answers say cas 0 (and flags 0)
 * where memcached says the item's; clients read neither in practice.
 */
size_t msg_serve_bin(char *out, size_t cap, const struct mc_bin_req *req, const struct msg *m,
                     const struct msg_reply *r, struct msg_serve_out *o) {
    *o = (struct msg_serve_out){.tail = {"", 0}};
    bool with_key = req->cmd == MC_BIN_OP_GETK || req->cmd == MC_BIN_OP_GATK;
    bool create = m->op == MSG_ADD &&
                  (req->cmd == MC_BIN_OP_INCREMENT || req->cmd == MC_BIN_OP_DECREMENT);
    if (cap < MC_BIN_HDR_LEN + 4 + MC_BIN_KEY_MAX || req->key.len > MC_BIN_KEY_MAX)
        return 0;
    if (msg_serve_is_error(r))
        return bin_fail(out, cap, req, m, r);
    switch (res_fits(m->op, r->res) ? r->res : MSG_RES_NONE) {
    case MSG_RES_HIT:
        if (r->value.len > UINT32_MAX - 4 - MC_BIN_KEY_MAX)
            break;
        o->value = r->value;
        return mc_bin_fmt_get(out, req->opcode, req->opaque, r->cas, r->flags,
                              with_key ? req->key.p : NULL, (uint16_t)req->key.len,
                              (uint32_t)r->value.len);
    case MSG_RES_MISS:
        if (req->quiet)
            return 0;
        if (with_key)
            return mc_bin_fmt_getk_miss(out, req->opcode, req->opaque, req->key.p,
                                        (uint16_t)req->key.len);
        return bin_error(out, cap, req, MC_BIN_ST_KEY_ENOENT);
    case MSG_RES_TOUCHED:
        return mc_bin_fmt_get(out, req->opcode, req->opaque, r->cas, r->flags, NULL, 0, 0);
    case MSG_RES_STORED:
        if (create)         /* the key was made from `initial`, which is the answer */
            return req->quiet ? 0 : mc_bin_fmt_incr(out, req->opcode, req->opaque, r->cas,
                                                    req->initial);
        return bin_ok(out, req, r->cas);
    case MSG_RES_DELETED: case MSG_RES_OK:
        return bin_ok(out, req, 0);
    case MSG_RES_NUMBER:
        return req->quiet ? 0 : mc_bin_fmt_incr(out, req->opcode, req->opaque, r->cas, r->number);
    case MSG_RES_NOT_STORED:
        if (create)         /* another client made the key first: memcached says 05 too */
            return bin_error(out, cap, req, MC_BIN_ST_NOT_STORED);
        return bin_error(out, cap, req, req->cmd == MC_BIN_OP_ADD ? MC_BIN_ST_KEY_EEXISTS
                                      : req->cmd == MC_BIN_OP_REPLACE ? MC_BIN_ST_KEY_ENOENT
                                      : MC_BIN_ST_NOT_STORED);
    case MSG_RES_EXISTS:
        return bin_error(out, cap, req, MC_BIN_ST_KEY_EEXISTS);
    case MSG_RES_NOT_FOUND:
        return bin_error(out, cap, req, MC_BIN_ST_KEY_ENOENT);
    case MSG_RES_VERSION:
        o->value = r->msg;
        return mc_bin_fmt_header(out, req->opcode, 0, 0, 0, (uint32_t)r->msg.len,
                                 req->opaque, 0);
    default:
        break;
    }
    struct msg_reply e;
    msg_serve_error(&e, MSG_RES_SERVER_ERROR, "protocol error in server reply");
    return bin_fail(out, cap, req, m, &e);
}

/* ---------------------------------------------------------------------- */
/* Meta                                                                     */
/* ---------------------------------------------------------------------- */

/* Takes the next space-separated token off *rest; false when none is left. */
static bool next_token(struct mc_span *rest, struct mc_span *tok) {
    while (rest->len && rest->p[0] == ' ') {
        rest->p++;
        rest->len--;
    }
    if (rest->len == 0)
        return false;
    const char *sp = memchr(rest->p, ' ', rest->len);
    size_t n = sp ? (size_t)(sp - rest->p) : rest->len;
    *tok = (struct mc_span){rest->p, n};
    rest->p += n;
    rest->len -= n;
    return true;
}

/*
 * memcached prints the return flags in request order, O and k among
 * them, then Z, X and W.  The backend saw the request without O (and q),
 * so its flags are in that order with O missing; walking the client's
 * flags puts O back at its place: each client flag takes the backend's
 * next token if that token is its letter (a flag may print nothing: c of
 * a miss), O prints itself, and whatever is left (Z X W) goes last.  No
 * request flag repeats (the codec refuses duplicates) and none is W, Z or
 * X, so the letters match one way only.  k of a base64 key prints " b"
 * right after it, so a bare "b" token follows its k.
 */
static void put_rflags(struct mc_put *w, const struct mc_meta_req *req, struct mc_span rflags) {
    struct mc_span rest = rflags, tok = {0};
    bool have = next_token(&rest, &tok);
    for (int i = 0; i < req->nflags; i++) {
        const struct mc_meta_flag *f = &req->flags[i];
        if (f->c == 'O') {
            MC_PUT_LIT(w, " ");
            mc_put(w, f->tok.p, f->tok.len);
            continue;
        }
        if (!have || tok.p[0] != f->c)
            continue;
        /* k may echo the key's raw bytes (a b request for an item stored
           plain), spaces and all: take the whole key, not up to a space */
        size_t kl = req->key.len;
        const char *end = rflags.p + rflags.len;
        if (f->c == 'k' && (size_t)(end - tok.p) >= 1 + kl &&
            memcmp(tok.p + 1, req->key.p, kl) == 0 && (tok.p + 1 + kl == end || tok.p[1 + kl] == ' ')) {
            tok.len = 1 + kl;
            rest = (struct mc_span){tok.p + tok.len, (size_t)(end - tok.p - tok.len)};
        }
        MC_PUT_LIT(w, " ");
        mc_put(w, tok.p, tok.len);
        have = next_token(&rest, &tok);
        if (f->c == 'k' && have && span_is(tok, "b")) {
            MC_PUT_LIT(w, " b");
            have = next_token(&rest, &tok);
        }
    }
    while (have) {
        MC_PUT_LIT(w, " ");
        mc_put(w, tok.p, tok.len);
        have = next_token(&rest, &tok);
    }
}

/*
 * What q hides of an ms, as mc_meta_fmt: a success.  The other commands
 * carry their q to the server (meta_quiet), which decides, so that the
 * cases only it knows (an ma that created its item shows even with q) are
 * memcached's; their hidden answers come back silent.
 */
static bool q_hides(const struct mc_meta_req *req, const struct msg_reply *r) {
    if (r->silent)
        return true;
    return req->cmd == MC_META_MS && mc_meta_has(req, 'q') && memcmp(r->code, "HD", 2) == 0;
}

size_t msg_serve_meta(char *out, size_t cap, const struct mc_meta_req *req,
                      const struct msg_reply *r, struct msg_serve_out *o) {
    *o = (struct msg_serve_out){.tail = {"", 0}};
    if (msg_serve_is_error(r))
        return put_error(out, cap, r);
    if (r->res != MSG_RES_META && r->res != MSG_RES_MISS && r->res != MSG_RES_NOT_FOUND &&
        r->res != MSG_RES_NOT_STORED && r->res != MSG_RES_EXISTS)
        return put_proto_error(out, cap);
    if (mc_meta_late_error(req) >= 0) {
        /* memcached acted, then noticed the opaque while writing: the error replaces the line */
        size_t n = mc_meta_err_len(MC_META_ERR_OPAQUE_TOO_LONG);
        if (cap < n)
            return 0;
        memcpy(out, mc_meta_err_str(MC_META_ERR_OPAQUE_TOO_LONG), n);
        return n;
    }
    struct msg_reply coded;
    if (r->code[0] == '\0' && r->res != MSG_RES_META) {
        /* a route's own answer (NullRoute's), not a meta server's: its code */
        coded = *r;
        memcpy(coded.code, r->res == MSG_RES_MISS        ? "EN"
                           : r->res == MSG_RES_NOT_FOUND ? "NF"
                           : r->res == MSG_RES_EXISTS    ? "EX" : "NS", 2);
        r = &coded;
    }
    if (q_hides(req, r))
        return 0;
    if (memcmp(r->code, "ME", 2) == 0) {        /* me's line, as the server wrote it */
        struct mc_put w = MC_PUT_INIT(out, cap);
        MC_PUT_LIT(&w, "ME ");
        mc_put(&w, r->msg.p, r->msg.len);
        MC_PUT_LIT(&w, "\r\n");
        return w.full ? put_proto_error(out, cap) : mc_put_len(&w, out);
    }
    bool va = memcmp(r->code, "VA", 2) == 0;
    struct mc_put w = MC_PUT_INIT(out, cap);
    mc_put(&w, r->code, 2);
    if (va) {
        MC_PUT_LIT(&w, " ");
        mc_put_u64(&w, r->value.len);
    }
    put_rflags(&w, req, r->msg);
    MC_PUT_LIT(&w, "\r\n");
    if (w.full)
        return put_proto_error(out, cap);
    if (va) {
        o->value = r->value;
        o->tail = crlf;
    }
    return mc_put_len(&w, out);
}
