/*
 * mc_bin.h -- memcached's binary protocol: a pure codec.
 *
 * mc_bin_parse() reads one request's 24-byte header, its extras and its
 * key from a byte buffer into a plain struct whose key is a span into that
 * buffer.  It never allocates, never does I/O and keeps no state between
 * calls: while those bytes are incomplete it answers MC_PARSE_NEED_MORE
 * and the caller parses again, from the start of the request, once more
 * bytes have arrived.  The value (bodylen - extlen - keylen bytes) is not
 * part of the parse: for a storage command the caller reads it wherever it
 * wants it (straight into an item), as with the text codec's data block.
 * Formatting helpers build response headers and whole small responses
 * into caller buffers.  Everything below was checked against Debian's
 * memcached 1.6.18, whose answers this codec reproduces byte for byte.
 *
 * Wire format (all integers big-endian; request magic 0x80, response 0x81):
 *
 *   0 magic  1 opcode  2-3 keylen  4 extlen  5 datatype  6-7 vbucket|status
 *   8-11 bodylen (extras + key + value)  12-15 opaque  16-23 cas
 *   then: extras, key, value
 *
 * What memcached 1.6.18 answers, per opcode
 * -----------------------------------------
 * "shape" is what the header must say, else EINVAL "Invalid arguments"
 * and the connection is closed.  A quiet twin ("Q") behaves as its loud
 * opcode except for what it leaves unsaid (next section).  A response
 * echoes the request's opcode (the quiet one for a quiet request) and
 * opaque; its cas is 0 unless stated.
 *
 *   op        Q     shape (ext, key, body)        success answer
 *   GET 00    09    ext 0, key>0, body=key        ext 4 (flags), value; item cas
 *   GETK 0c   0d    same                          ext 4, key, value; item cas
 *   SET 01    11    ext 8, key>0, body>=key+8     empty; new cas
 *   ADD 02    12      (ext: flags, exptime)
 *   REPLACE 03 13     (a cas != 0 in the header makes any of the three a
 *                     compare-and-swap: mismatch 02, missing key 01)
 *   APPEND 0e 19    ext 0, key>0                  empty; new cas (value =
 *   PREPEND 0f 1a                                 body-key; header cas checked)
 *   DELETE 04 14    ext 0, key>0, body=key        empty; cas 0 (header cas != 0
 *                                                 must match, else 02)
 *   INCR 05   15    ext 20, key>0, body=key+20    8-byte value; new cas
 *   DECR 06   16      (ext: delta u64, initial u64, exptime u32; see below)
 *   QUIT 07   17    all zero                      empty, then close
 *   FLUSH 08  18    key 0, body=ext, ext 0 or 4   empty (ext: delay, see below)
 *   NOOP 0a   -     all zero                      empty
 *   VERSION 0b -    all zero                      value "1.6.18"
 *   STAT 10   -     ext 0 (key = group, optional) one packet per stat, then an
 *                                                 empty packet (see below)
 *   TOUCH 1c  -     ext 4, key>0 (body unchecked) ext 4 (flags), no value;
 *                                                 item cas
 *   GAT 1d    1e    ext 4, key>0 (body unchecked) as GET, after touching
 *   GATK 23   24    same                          as GETK, after touching
 *   SASL_LIST_MECHS 20   all zero                 81 "Unknown command"
 *   SASL_AUTH 21, SASL_STEP 22  ext 0, key>0      81 "Unknown command"; the
 *                                                 body-key value bytes are
 *                                                 skipped; connection kept
 *   anything else (VERBOSITY 1b included)         81 "Unknown command"; then
 *                                                 BODYLEN bytes after the key
 *                                                 are skipped (memcached's
 *                                                 over-skip); connection kept
 *
 * Misses and failures answer with a status and the text mc_bin_status_text()
 * gives: 01 "Not found" (a GETK/GATK miss instead carries the key as its
 * key and body, no text), 02 "Data exists for key." (add of an existing
 * key, cas mismatch), 03 "Too large.", 05 "Not stored." (append/prepend
 * of a missing key), 06 "Non-numeric server-side value for incr or decr",
 * 20 "Auth failure." (flush with -F), 82 with memcached's out-of-memory
 * sentence (MC_BIN_OOM_*).  A too-large or out-of-memory storage request
 * has its value bytes skipped; the connection stays open.
 *
 * Quiet commands: what is left unsaid
 * -----------------------------------
 *   - SETQ ADDQ REPLACEQ APPENDQ PREPENDQ DELETEQ INCRQ DECRQ FLUSHQ:
 *     the success answer is not sent; every failure is (status != 0).
 *   - GETQ GETKQ GATQ GATKQ: a miss is not sent; a hit always is.
 *   - QUITQ: nothing is sent; the connection is closed.
 *   - Header errors (EINVAL, Unknown command) are sent for quiet opcodes too.
 * Suppressed means never sent; nothing else is held back.  memcached
 * answers in request order and writes what it has accumulated when
 *   (1) no complete request is left in its read buffer (so a lone GETQ
 *       hit arrives without a NOOP behind it),
 *   (2) it answers a NOOP or a QUIT,
 *   (3) it answers a failure with a text and nothing to skip (every
 *       status != 0 except a GETK/GATK miss, which carries the key
 *       instead, and an answer followed by skipped bytes: Unknown command
 *       with a body, Too large, out of memory -- those wait for (1)),
 *   (4) it has processed 21 requests in one read event (-R 20, plus one).
 * A client that sends quiet requests and then a NOOP thus knows, when the
 * NOOP's answer arrives, that every earlier answer has arrived.  The
 * write points are visible in one place: an answer not yet written keeps
 * a reference to its item (GET/GETK/GAT/GATK/TOUCH hits, quiet or not),
 * and incr/decr of a referenced item stores a new item of the result's
 * exact length instead of rewriting the number in place padded with
 * spaces: "1000" decr 995 reads back "5" right after a pipelined GET of
 * it, "5   " after a NOOP in between.  A server that holds answers longer
 * or shorter than this differs there, and only there.
 *
 * Incr/decr
 * ---------
 * A hit adds delta (wrapping modulo 2^64) or subtracts it (stopping at
 * 0), as the text protocol does, and answers the new value as 8 bytes
 * with the item's new cas; a stored value that is not a number answers
 * 06.  A header cas != 0 must match the item (else 02).  A miss with
 * exptime 0xffffffff answers 01 "Not found"; a miss with any other
 * exptime stores `initial` (as decimal text, flags 0, that exptime) as if
 * by add and answers `initial` itself -- delta is not applied -- with the
 * new item's cas.  If that add loses a race the answer is 05 "Not stored.".
 *
 * Exptime, flush, stat
 * --------------------
 * Binary exptimes are unsigned 32-bit: never negative, and read as the
 * text protocol reads them (0 = never, up to 30 days relative, else an
 * absolute unix time).  FLUSH with a delay d > 0 invalidates, at now + d
 * (read as an exptime), everything stored before that moment; 0 or no
 * extras flushes now.
 *
 * STAT with no key sends the general stats; with a key the group named
 * by the key: "items", "slabs", "sizes" (exact), "settings" and "reset"
 * (compared as prefixes: "settingsX" is settings, "resetX" resets) and
 * "detail on" / "detail off" / "detail dump".  "reset" and "detail
 * on/off" answer only the terminator; "detail dump" one packet named
 * "detailed"; "items" with no items only the terminator.  Any other key
 * ("conns" included: binary STAT has no conns group) answers 01 "Not
 * found", with no terminator.
 * Each stat is a response with opcode 0x10, status 0, key = the name,
 * value = the text, the request's opaque, cas 0; the terminator is the
 * same with no key and no value.  STAT's body beyond the key is NOT
 * skipped: memcached parses those bytes as the next request (the same
 * holds for TOUCH/GAT/GATK's body beyond extras and key).
 *
 * Closing
 * -------
 *   - a magic other than 0x80 (once 24 bytes are there): close, no answer;
 *   - 24 + extlen + keylen > 16384 (memcached's read buffer): close, no
 *     answer (memcached closes once that buffer is full; we decide from
 *     the header, since the request can never fit);
 *   - keylen + extlen > bodylen: 81 "Unknown command", then close;
 *   - keylen > 250, or a shape wrong for the opcode: 04 "Invalid
 *     arguments", then close;
 *   - QUIT/QUITQ: after the answer (none for QUITQ).
 * The checks run in that order.  Answers already made are written before
 * an error answer closes the connection; a silent close (bad magic, too
 * long) drops those not yet written (see the write points above).  Which protocol a connection speaks is
 * the server's business: memcached picks binary when a connection's first
 * byte is 0x80 and text otherwise, for the life of the connection.
 */
#ifndef CELLAR_PROTOCOL_MC_BIN_H
#define CELLAR_PROTOCOL_MC_BIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_text.h" /* enum mc_parse, struct mc_span (FIXME: move both to msg.h) */

#define MC_BIN_HDR_LEN 24
#define MC_BIN_REQ_MAGIC 0x80
#define MC_BIN_RES_MAGIC 0x81
#define MC_BIN_KEY_MAX 250          /* longer keys: EINVAL and close */
#define MC_BIN_HEAD_MAX 16384       /* header + extras + key beyond this: close */
#define MC_BIN_TEXT_MAX 64          /* longest text mc_bin_status_text() gives */
#define MC_BIN_ERROR_MAX (MC_BIN_HDR_LEN + MC_BIN_TEXT_MAX) /* room for mc_bin_fmt_error() */
#define MC_BIN_INCR_LEN (MC_BIN_HDR_LEN + 8)                /* mc_bin_fmt_incr()'s length */
#define MC_BIN_EXPTIME_NO_CREATE 0xffffffffu /* incr/decr exptime: a miss is 01 */

/* Opcodes, with memcached's numbers. */
enum mc_bin_op {
    MC_BIN_OP_GET = 0x00,
    MC_BIN_OP_SET = 0x01,
    MC_BIN_OP_ADD = 0x02,
    MC_BIN_OP_REPLACE = 0x03,
    MC_BIN_OP_DELETE = 0x04,
    MC_BIN_OP_INCREMENT = 0x05,
    MC_BIN_OP_DECREMENT = 0x06,
    MC_BIN_OP_QUIT = 0x07,
    MC_BIN_OP_FLUSH = 0x08,
    MC_BIN_OP_GETQ = 0x09,
    MC_BIN_OP_NOOP = 0x0a,
    MC_BIN_OP_VERSION = 0x0b,
    MC_BIN_OP_GETK = 0x0c,
    MC_BIN_OP_GETKQ = 0x0d,
    MC_BIN_OP_APPEND = 0x0e,
    MC_BIN_OP_PREPEND = 0x0f,
    MC_BIN_OP_STAT = 0x10,
    MC_BIN_OP_SETQ = 0x11,
    MC_BIN_OP_ADDQ = 0x12,
    MC_BIN_OP_REPLACEQ = 0x13,
    MC_BIN_OP_DELETEQ = 0x14,
    MC_BIN_OP_INCREMENTQ = 0x15,
    MC_BIN_OP_DECREMENTQ = 0x16,
    MC_BIN_OP_QUITQ = 0x17,
    MC_BIN_OP_FLUSHQ = 0x18,
    MC_BIN_OP_APPENDQ = 0x19,
    MC_BIN_OP_PREPENDQ = 0x1a,
    MC_BIN_OP_VERBOSITY = 0x1b,     /* defined by the protocol; memcached: Unknown command */
    MC_BIN_OP_TOUCH = 0x1c,
    MC_BIN_OP_GAT = 0x1d,
    MC_BIN_OP_GATQ = 0x1e,
    MC_BIN_OP_SASL_LIST_MECHS = 0x20,
    MC_BIN_OP_SASL_AUTH = 0x21,
    MC_BIN_OP_SASL_STEP = 0x22,
    MC_BIN_OP_GATK = 0x23,
    MC_BIN_OP_GATKQ = 0x24,
};

/* Response statuses, with memcached's numbers. */
enum mc_bin_status {
    MC_BIN_ST_OK = 0x00,
    MC_BIN_ST_KEY_ENOENT = 0x01,        /* "Not found" */
    MC_BIN_ST_KEY_EEXISTS = 0x02,       /* "Data exists for key." */
    MC_BIN_ST_E2BIG = 0x03,             /* "Too large." */
    MC_BIN_ST_EINVAL = 0x04,            /* "Invalid arguments" */
    MC_BIN_ST_NOT_STORED = 0x05,        /* "Not stored." */
    MC_BIN_ST_DELTA_BADVAL = 0x06,      /* "Non-numeric server-side value for incr or decr" */
    MC_BIN_ST_AUTH_ERROR = 0x20,        /* "Auth failure." */
    MC_BIN_ST_AUTH_CONTINUE = 0x21,     /* SASL only; no text */
    MC_BIN_ST_UNKNOWN_COMMAND = 0x81,   /* "Unknown command" */
    MC_BIN_ST_ENOMEM = 0x82,            /* "Out of memory", or an MC_BIN_OOM_* sentence */
};

/* memcached's out-of-memory answers carry one of these texts (status 0x82). */
#define MC_BIN_OOM_ITEM "Out of memory allocating item"         /* set/add/.../append */
#define MC_BIN_OOM_INCR "Out of memory incrementing value"      /* incr/decr hit */
#define MC_BIN_OOM_NEW_ITEM "Out of memory allocating new item" /* incr/decr initial value */
#define MC_BIN_OOM_STATS "Out of memory generating stats"
#define MC_BIN_OOM_STATS_SEND "Out of memory preparing to send stats"

struct mc_bin_req {
    uint8_t opcode;             /* as sent; echo it in the answer */
    uint8_t cmd;                /* opcode with a quiet twin mapped to its loud one */
    bool quiet;                 /* one of the quiet twins (see the top of this file) */
    bool reads_value;           /* storage command: vlen value bytes follow, read them */
    uint8_t extlen;
    uint8_t datatype;           /* ignored by memcached */
    uint16_t vbucket;           /* ignored by memcached */
    uint16_t keylen;
    uint32_t bodylen;
    uint32_t opaque;            /* echo it in the answer */
    uint64_t cas;
    struct mc_span key;         /* keylen bytes after the extras (STAT: the group) */
    uint32_t vlen;              /* bodylen - extlen - keylen (0 when that is negative) */
    uint32_t flags;             /* set/add/replace */
    uint32_t exptime;           /* set/add/replace, incr/decr, touch/gat/gatk, flush delay */
    uint64_t delta;             /* incr/decr */
    uint64_t initial;           /* incr/decr */
    /* With MC_PARSE_ERROR: answer `status` (mc_bin_fmt_error), then skip
     * `swallow` bytes that follow the consumed ones, then close if `close`. */
    uint16_t status;
    uint32_t swallow;
    bool close;
};

/*
 * Parses the request at buf[0..len).
 *   MC_PARSE_OK         *req filled; *consumed = 24 + extlen + keylen.  If
 *                       req->reads_value, req->vlen value bytes follow.
 *   MC_PARSE_NEED_MORE  header, extras or key incomplete; *consumed = 0.
 *   MC_PARSE_ERROR      answer req->status with mc_bin_fmt_error(req->opcode,
 *                       req->status, req->opaque); *consumed as for OK;
 *                       then req->swallow and req->close (see the struct).
 *   MC_PARSE_CLOSE      close without an answer; *consumed = 0.
 * opcode, opaque, keylen, extlen and bodylen are filled whenever 24 bytes
 * were there, whatever the result.
 */
enum mc_parse mc_bin_parse(struct mc_bin_req *req, const char *buf, size_t len, size_t *consumed);

/* The quiet twin's loud opcode (GETQ -> GET, ...); any other opcode as is. */
uint8_t mc_bin_loud(uint8_t opcode);
bool mc_bin_is_quiet(uint8_t opcode);

/* memcached's text for an error status ("" for OK and unknown statuses). */
const char *mc_bin_status_text(uint16_t status);
size_t mc_bin_status_text_len(uint16_t status);

/*
 * Writes a 24-byte response header (magic 0x81, datatype 0) into out and
 * returns 24.  bodylen counts extras, key and value.
 */
size_t mc_bin_fmt_header(char *out, uint8_t opcode, uint16_t keylen, uint8_t extlen,
                         uint16_t status, uint32_t bodylen, uint32_t opaque, uint64_t cas);

/*
 * An error answer: header (cas 0) and memcached's text for the status.
 * out must hold MC_BIN_ERROR_MAX bytes; returns the length.
 */
size_t mc_bin_fmt_error(char *out, uint8_t opcode, uint16_t status, uint32_t opaque);

/* The same with a text of one's own (the MC_BIN_OOM_* sentences); out holds 24 + ntext. */
size_t mc_bin_fmt_error_text(char *out, uint8_t opcode, uint16_t status, uint32_t opaque,
                             const char *text, size_t ntext);

/*
 * A hit of GET/GETK/GAT/GATK (and quiet twins) or TOUCH: header, 4 bytes
 * of flags, then the key when key != NULL (GETK, GATK); nvalue counts the
 * value bytes the caller sends after this (0 for TOUCH).  out holds
 * 28 + nkey bytes; returns the length written (not counting the value).
 */
size_t mc_bin_fmt_get(char *out, uint8_t opcode, uint32_t opaque, uint64_t cas, uint32_t flags,
                      const char *key, uint16_t nkey, uint32_t nvalue);

/* A GETK/GATK miss: status 01 with the key as key and body, no text.  out holds 24 + nkey. */
size_t mc_bin_fmt_getk_miss(char *out, uint8_t opcode, uint32_t opaque, const char *key,
                            uint16_t nkey);

/* An incr/decr answer: the value as 8 bytes.  Returns MC_BIN_INCR_LEN. */
size_t mc_bin_fmt_incr(char *out, uint8_t opcode, uint32_t opaque, uint64_t cas, uint64_t value);

/*
 * One STAT packet: key = name, value = val.  The terminator is
 * mc_bin_fmt_stat(out, opaque, NULL, 0, NULL, 0).  out holds 24 + nname + nval.
 */
size_t mc_bin_fmt_stat(char *out, uint32_t opaque, const char *name, size_t nname,
                       const char *val, size_t nval);

/*
 * A request header (magic 0x80, datatype 0, vbucket 0), for clients and
 * tests.  Returns 24.
 */
size_t mc_bin_fmt_req_header(char *out, uint8_t opcode, uint16_t keylen, uint8_t extlen,
                             uint32_t bodylen, uint32_t opaque, uint64_t cas);

/* A response as a client reads it: header, extras and key; the value follows. */
struct mc_bin_res {
    uint8_t opcode;
    uint8_t extlen;
    uint8_t datatype;
    uint16_t keylen;
    uint16_t status;
    uint32_t bodylen;
    uint32_t opaque;
    uint64_t cas;
    struct mc_span ext;
    struct mc_span key;
    uint32_t vlen;              /* bodylen - extlen - keylen: value bytes that follow */
};

/*
 * Parses a response's header, extras and key at buf[0..len): MC_PARSE_OK
 * with *consumed = 24 + extlen + keylen, MC_PARSE_NEED_MORE, or
 * MC_PARSE_CLOSE for a wrong magic or keylen + extlen > bodylen.
 */
enum mc_parse mc_bin_parse_res(struct mc_bin_res *res, const char *buf, size_t len,
                               size_t *consumed);

/* Big-endian loads, for extras and values. */
static inline uint32_t mc_bin_load32(const char *p) {
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}
static inline uint64_t mc_bin_load64(const char *p) {
    return (uint64_t)mc_bin_load32(p) << 32 | mc_bin_load32(p + 4);
}

/* Big-endian stores, for a client's extras; each returns the byte after. */
static inline char *mc_bin_store32(char *p, uint32_t v) {
    p[0] = (char)(v >> 24);
    p[1] = (char)(v >> 16);
    p[2] = (char)(v >> 8);
    p[3] = (char)v;
    return p + 4;
}
static inline char *mc_bin_store64(char *p, uint64_t v) {
    return mc_bin_store32(mc_bin_store32(p, (uint32_t)(v >> 32)), (uint32_t)v);
}

#endif
