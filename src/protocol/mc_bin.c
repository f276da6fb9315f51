/*
 * mc_bin.c -- memcached's binary protocol: parse request headers, format
 * responses.
 *
 * One call looks at the bytes from a request's start and decides what the
 * request means, in the order memcached 1.6.18 decides it:
 *
 *   < 24 bytes ------------------------------> NEED_MORE
 *   magic != 0x80 ---------------------------> CLOSE
 *   24 + extlen + keylen > 16384 ------------> CLOSE (can never be buffered)
 *   extras or key incomplete ----------------> NEED_MORE
 *   keylen + extlen > bodylen ---------------> ERROR 0x81, close
 *   keylen > 250 ----------------------------> ERROR 0x04, close
 *   opcode unknown --------------------------> ERROR 0x81, skip bodylen
 *   shape (extlen/keylen/bodylen) wrong -----> ERROR 0x04, close
 *   SASL (memcached built without it) -------> ERROR 0x81, skip the value
 *   otherwise -------------------------------> OK, extras decoded
 *
 * Every decision needs only the bytes up to the end of the key, and a
 * call keeps nothing, so a request split at any byte parses the same once
 * it is whole.  No allocation, no I/O, no logging.
 */
#include "protocol/mc_bin.h"

#include <string.h>

/* ---------------------------------------------------------------------- */
/* Byte order                                                               */
/* ---------------------------------------------------------------------- */

static inline uint16_t load16(const char *p) {
    const unsigned char *u = (const unsigned char *)p;
    return (uint16_t)(u[0] << 8 | u[1]);
}

static inline char *put16(char *p, uint16_t v) {
    p[0] = (char)(v >> 8);
    p[1] = (char)v;
    return p + 2;
}

static inline char *put32(char *p, uint32_t v) {
    p[0] = (char)(v >> 24);
    p[1] = (char)(v >> 16);
    p[2] = (char)(v >> 8);
    p[3] = (char)v;
    return p + 4;
}

static inline char *put64(char *p, uint64_t v) {
    put32(p, (uint32_t)(v >> 32));
    return put32(p + 4, (uint32_t)v);
}

/* ---------------------------------------------------------------------- */
/* Opcodes                                                                  */
/* ---------------------------------------------------------------------- */

uint8_t mc_bin_loud(uint8_t op) {
    switch (op) {
    case MC_BIN_OP_GETQ: return MC_BIN_OP_GET;
    case MC_BIN_OP_GETKQ: return MC_BIN_OP_GETK;
    case MC_BIN_OP_SETQ: return MC_BIN_OP_SET;
    case MC_BIN_OP_ADDQ: return MC_BIN_OP_ADD;
    case MC_BIN_OP_REPLACEQ: return MC_BIN_OP_REPLACE;
    case MC_BIN_OP_DELETEQ: return MC_BIN_OP_DELETE;
    case MC_BIN_OP_INCREMENTQ: return MC_BIN_OP_INCREMENT;
    case MC_BIN_OP_DECREMENTQ: return MC_BIN_OP_DECREMENT;
    case MC_BIN_OP_QUITQ: return MC_BIN_OP_QUIT;
    case MC_BIN_OP_FLUSHQ: return MC_BIN_OP_FLUSH;
    case MC_BIN_OP_APPENDQ: return MC_BIN_OP_APPEND;
    case MC_BIN_OP_PREPENDQ: return MC_BIN_OP_PREPEND;
    case MC_BIN_OP_GATQ: return MC_BIN_OP_GAT;
    case MC_BIN_OP_GATKQ: return MC_BIN_OP_GATK;
    default: return op;
    }
}

bool mc_bin_is_quiet(uint8_t op) {
    return mc_bin_loud(op) != op;
}

/* ---------------------------------------------------------------------- */
/* Requests                                                                 */
/* ---------------------------------------------------------------------- */

static inline enum mc_parse fail(struct mc_bin_req *req, uint16_t status, bool close,
                                 uint32_t swallow) {
    req->status = status;
    req->close = close;
    req->swallow = swallow;
    return MC_PARSE_ERROR;
}

/*
 * The shape memcached 1.6.18 demands of each loud opcode (quiet twins are
 * checked as their loud opcode), given that keylen + extlen <= bodylen and
 * keylen <= 250 already hold.  Returns 1 when the shape is right, 0 when
 * it is wrong (EINVAL and close), -1 for an opcode memcached does not
 * know.  memcached checks no body length for APPEND/PREPEND (the value is
 * what is left), STAT (the body past the key is then parsed as the next
 * request) or TOUCH/GAT/GATK (likewise).
 */
static int shape_ok(uint8_t cmd, unsigned ext, unsigned key, uint32_t body) {
    switch (cmd) {
    case MC_BIN_OP_VERSION:
    case MC_BIN_OP_NOOP:
    case MC_BIN_OP_QUIT:
    case MC_BIN_OP_SASL_LIST_MECHS:
        return ext == 0 && key == 0 && body == 0;
    case MC_BIN_OP_FLUSH:
        return key == 0 && body == ext && (ext == 0 || ext == 4);
    case MC_BIN_OP_SET:
    case MC_BIN_OP_ADD:
    case MC_BIN_OP_REPLACE:
        return ext == 8 && key != 0 && body >= key + 8;
    case MC_BIN_OP_GET:
    case MC_BIN_OP_GETK:
    case MC_BIN_OP_DELETE:
        return ext == 0 && key != 0 && body == key;
    case MC_BIN_OP_INCREMENT:
    case MC_BIN_OP_DECREMENT:
        return ext == 20 && key != 0 && body == key + 20;
    case MC_BIN_OP_APPEND:
    case MC_BIN_OP_PREPEND:
    case MC_BIN_OP_SASL_AUTH:
    case MC_BIN_OP_SASL_STEP:
        return ext == 0 && key != 0;
    case MC_BIN_OP_STAT:
        return ext == 0;
    case MC_BIN_OP_TOUCH:
    case MC_BIN_OP_GAT:
    case MC_BIN_OP_GATK:
        return ext == 4 && key != 0;
    default:
        return -1;
    }
}

/*
 * Reads the extras of a request whose shape was found right: a storage
 * command's flags and exptime, incr/decr's delta, initial and exptime,
 * the exptime of touch/gat/gatk and the optional delay of flush.
 */
static void decode_extras(struct mc_bin_req *req, const char *ext) {
    switch (req->cmd) {
    case MC_BIN_OP_SET:
    case MC_BIN_OP_ADD:
    case MC_BIN_OP_REPLACE:
        req->flags = mc_bin_load32(ext);
        req->exptime = mc_bin_load32(ext + 4);
        req->reads_value = true;
        break;
    case MC_BIN_OP_APPEND:
    case MC_BIN_OP_PREPEND:
        req->reads_value = true;
        break;
    case MC_BIN_OP_INCREMENT:
    case MC_BIN_OP_DECREMENT:
        req->delta = mc_bin_load64(ext);
        req->initial = mc_bin_load64(ext + 8);
        req->exptime = mc_bin_load32(ext + 16);
        break;
    case MC_BIN_OP_TOUCH:
    case MC_BIN_OP_GAT:
    case MC_BIN_OP_GATK:
        req->exptime = mc_bin_load32(ext);
        break;
    case MC_BIN_OP_FLUSH:
        if (req->extlen == 4)
            req->exptime = mc_bin_load32(ext);
        break;
    default:
        break;
    }
}

/*
 * The header is read as soon as 24 bytes are there, so that even a CLOSE
 * or a NEED_MORE leaves the caller the opcode and opaque.  memcached waits
 * for extras and key before it checks anything past the magic; so does
 * this, except that a request whose extras and key cannot fit memcached's
 * 16 KiB read buffer is refused at once (memcached refuses it once the
 * buffer is full, with the same silent close).  The value is never
 * waited for.
 *
 * Unknown opcodes are answered and then memcached discards bodylen bytes
 * counted from the end of the key, although extras and key were part of
 * the body: it skips extlen + keylen bytes too many.  The swallow field
 * reproduces that, since a client that sent such a request has already
 * lost the stream's framing either way.
 */
enum mc_parse mc_bin_parse(struct mc_bin_req *req, const char *buf, size_t len, size_t *consumed) {
    memset(req, 0, sizeof(*req));
    *consumed = 0;
    if (len < MC_BIN_HDR_LEN)
        return MC_PARSE_NEED_MORE;

    req->opcode = (uint8_t)buf[1];
    req->keylen = load16(buf + 2);
    req->extlen = (uint8_t)buf[4];
    req->datatype = (uint8_t)buf[5];
    req->vbucket = load16(buf + 6);
    req->bodylen = mc_bin_load32(buf + 8);
    req->opaque = mc_bin_load32(buf + 12);
    req->cas = mc_bin_load64(buf + 16);
    req->cmd = mc_bin_loud(req->opcode);
    req->quiet = req->cmd != req->opcode;

    if ((uint8_t)buf[0] != MC_BIN_REQ_MAGIC)
        return MC_PARSE_CLOSE;
    size_t head = MC_BIN_HDR_LEN + (size_t)req->extlen + req->keylen;
    if (head > MC_BIN_HEAD_MAX)
        return MC_PARSE_CLOSE;
    if (len < head)
        return MC_PARSE_NEED_MORE;

    *consumed = head;
    req->key.p = buf + MC_BIN_HDR_LEN + req->extlen;
    req->key.len = req->keylen;
    uint32_t ek = (uint32_t)req->extlen + req->keylen;
    if (ek > req->bodylen)
        return fail(req, MC_BIN_ST_UNKNOWN_COMMAND, true, 0);
    req->vlen = req->bodylen - ek;
    if (req->keylen > MC_BIN_KEY_MAX)
        return fail(req, MC_BIN_ST_EINVAL, true, 0);

    switch (shape_ok(req->cmd, req->extlen, req->keylen, req->bodylen)) {
    case -1:
        return fail(req, MC_BIN_ST_UNKNOWN_COMMAND, false, req->bodylen);
    case 0:
        return fail(req, MC_BIN_ST_EINVAL, true, 0);
    default:
        break;
    }
    if (req->cmd == MC_BIN_OP_SASL_LIST_MECHS || req->cmd == MC_BIN_OP_SASL_AUTH ||
        req->cmd == MC_BIN_OP_SASL_STEP)
        return fail(req, MC_BIN_ST_UNKNOWN_COMMAND, false, req->vlen);

    decode_extras(req, buf + MC_BIN_HDR_LEN);
    return MC_PARSE_OK;
}

/* ---------------------------------------------------------------------- */
/* Responses                                                                */
/* ---------------------------------------------------------------------- */

struct text {
    const char *s;
    size_t len;
};
#define T(s) {s, sizeof(s) - 1}

static struct text status_text(uint16_t status) {
    static const struct text none = T(""), unknown = T("Unknown command"),
                             enomem = T("Out of memory"), auth = T("Auth failure.");
    static const struct text low[] = {
        T(""),
        T("Not found"),
        T("Data exists for key."),
        T("Too large."),
        T("Invalid arguments"),
        T("Not stored."),
        T("Non-numeric server-side value for incr or decr"),
    };

    if (status < sizeof(low) / sizeof(low[0]))
        return low[status];
    switch (status) {
    case MC_BIN_ST_UNKNOWN_COMMAND: return unknown;
    case MC_BIN_ST_ENOMEM: return enomem;
    case MC_BIN_ST_AUTH_ERROR: return auth;
    default: return none;
    }
}

const char *mc_bin_status_text(uint16_t status) {
    return status_text(status).s;
}

size_t mc_bin_status_text_len(uint16_t status) {
    return status_text(status).len;
}

static size_t fmt_header(char *out, uint8_t magic, uint8_t opcode, uint16_t keylen,
                         uint8_t extlen, uint16_t status, uint32_t bodylen, uint32_t opaque,
                         uint64_t cas) {
    out[0] = (char)magic;
    out[1] = (char)opcode;
    put16(out + 2, keylen);
    out[4] = (char)extlen;
    out[5] = 0;
    put16(out + 6, status);
    put32(out + 8, bodylen);
    put32(out + 12, opaque);
    put64(out + 16, cas);
    return MC_BIN_HDR_LEN;
}

size_t mc_bin_fmt_header(char *out, uint8_t opcode, uint16_t keylen, uint8_t extlen,
                         uint16_t status, uint32_t bodylen, uint32_t opaque, uint64_t cas) {
    return fmt_header(out, MC_BIN_RES_MAGIC, opcode, keylen, extlen, status, bodylen, opaque,
                      cas);
}

size_t mc_bin_fmt_req_header(char *out, uint8_t opcode, uint16_t keylen, uint8_t extlen,
                             uint32_t bodylen, uint32_t opaque, uint64_t cas) {
    return fmt_header(out, MC_BIN_REQ_MAGIC, opcode, keylen, extlen, 0, bodylen, opaque, cas);
}

size_t mc_bin_fmt_error_text(char *out, uint8_t opcode, uint16_t status, uint32_t opaque,
                             const char *text, size_t ntext) {
    size_t n = mc_bin_fmt_header(out, opcode, 0, 0, status, (uint32_t)ntext, opaque, 0);
    memcpy(out + n, text, ntext);
    return n + ntext;
}

size_t mc_bin_fmt_error(char *out, uint8_t opcode, uint16_t status, uint32_t opaque) {
    struct text t = status_text(status);
    return mc_bin_fmt_error_text(out, opcode, status, opaque, t.s, t.len);
}

size_t mc_bin_fmt_get(char *out, uint8_t opcode, uint32_t opaque, uint64_t cas, uint32_t flags,
                      const char *key, uint16_t nkey, uint32_t nvalue) {
    uint16_t kl = key != NULL ? nkey : 0;
    size_t n = mc_bin_fmt_header(out, opcode, kl, 4, MC_BIN_ST_OK, 4u + kl + nvalue, opaque, cas);
    put32(out + n, flags);
    n += 4;
    if (kl) {
        memcpy(out + n, key, kl);
        n += kl;
    }
    return n;
}

size_t mc_bin_fmt_getk_miss(char *out, uint8_t opcode, uint32_t opaque, const char *key,
                            uint16_t nkey) {
    size_t n = mc_bin_fmt_header(out, opcode, nkey, 0, MC_BIN_ST_KEY_ENOENT, nkey, opaque, 0);
    memcpy(out + n, key, nkey);
    return n + nkey;
}

size_t mc_bin_fmt_incr(char *out, uint8_t opcode, uint32_t opaque, uint64_t cas, uint64_t value) {
    size_t n = mc_bin_fmt_header(out, opcode, 0, 0, MC_BIN_ST_OK, 8, opaque, cas);
    put64(out + n, value);
    return n + 8;
}

size_t mc_bin_fmt_stat(char *out, uint32_t opaque, const char *name, size_t nname,
                       const char *val, size_t nval) {
    size_t n = mc_bin_fmt_header(out, MC_BIN_OP_STAT, (uint16_t)nname, 0, MC_BIN_ST_OK,
                                 (uint32_t)(nname + nval), opaque, 0);
    if (nname)
        memcpy(out + n, name, nname);
    if (nval)
        memcpy(out + n + nname, val, nval);
    return n + nname + nval;
}

/*
 * A client's view of a response: the same framing rules as a request,
 * read from the other side.  A response that breaks them means the
 * stream is lost, so there is no ERROR here, only CLOSE.
 */
enum mc_parse mc_bin_parse_res(struct mc_bin_res *res, const char *buf, size_t len,
                               size_t *consumed) {
    memset(res, 0, sizeof(*res));
    *consumed = 0;
    if (len < MC_BIN_HDR_LEN)
        return MC_PARSE_NEED_MORE;
    if ((uint8_t)buf[0] != MC_BIN_RES_MAGIC)
        return MC_PARSE_CLOSE;

    res->opcode = (uint8_t)buf[1];
    res->keylen = load16(buf + 2);
    res->extlen = (uint8_t)buf[4];
    res->datatype = (uint8_t)buf[5];
    res->status = load16(buf + 6);
    res->bodylen = mc_bin_load32(buf + 8);
    res->opaque = mc_bin_load32(buf + 12);
    res->cas = mc_bin_load64(buf + 16);

    uint32_t ek = (uint32_t)res->extlen + res->keylen;
    if (ek > res->bodylen)
        return MC_PARSE_CLOSE;
    size_t head = MC_BIN_HDR_LEN + (size_t)ek;
    if (len < head)
        return MC_PARSE_NEED_MORE;
    res->ext.p = buf + MC_BIN_HDR_LEN;
    res->ext.len = res->extlen;
    res->key.p = buf + MC_BIN_HDR_LEN + res->extlen;
    res->key.len = res->keylen;
    res->vlen = res->bodylen - ek;
    *consumed = head;
    return MC_PARSE_OK;
}
