/*
 * msg_serve.h -- the server side of the struct msg seam, for the router.
 *
 * cellar-router reads its clients with cellard's own codecs (mc_text,
 * mc_meta, mc_bin), sends each keyed request down libcellar's route tree
 * as a struct msg, and answers the client in the client's protocol with
 * the bytes memcached would have sent.  This module owns the two
 * translations, and nothing else:
 *
 *   client bytes --codec parse--> mc_req / mc_meta_req / mc_bin_req
 *                --msg_from_*--> struct msg            (one per key)
 *   struct msg_reply (or a failure) --msg_serve_*--> head [+ value + tail]
 *
 * Everything here is pure: no allocation, no I/O, no state between calls.
 * A msg's spans point into the caller's request buffer (or into the
 * small buffer the caller lends msg_from_meta / msg_bin_create), and a
 * formatted answer's value is a span into the reply, so both stay valid
 * exactly as long as those buffers.  Threading: none; reentrant.
 *
 * What the router decides, and where this file sides with memcached or
 * mcrouter:
 *
 *   - A request that got no reply (server down, timeout, broken
 *     connection) is answered as an error: the router turns the route
 *     tree's status into a SERVER_ERROR reply (msg_serve_error()), which every
 *     formatter then spells in its protocol ("SERVER_ERROR server timed
 *     out", binary status 0x84 with that text, meta the same line).
 *   - A text multi-get in which any key's reply is an error (see
 *     msg_serve_is_error) is answered by that error's line alone, with no
 *     VALUE lines and no END, as mcrouter's MultiOpParent does: a client
 *     then sees the failure instead of a miss it would refill from the
 *     database.  Otherwise each key gets msg_serve_text() (a hit writes
 *     its VALUE, a miss nothing) and the caller ends with MSG_SERVE_END.
 *   - Binary incr/decr that may create the key (exptime != 0xffffffff)
 *     is two steps, because struct msg's incr never creates: msg_from_bin
 *     says MSG_BIN_SEND_CREATE; on a NOT_FOUND reply the caller sends the
 *     add msg_bin_create() builds and answers with that reply, which
 *     msg_serve_bin() spells as memcached's create (the 8-byte `initial`).
 *     When the add finds the key there (another request created it in
 *     between: NOT_STORED) the caller sends the incr again, so the result
 *     is the one memcached's single step gives.
 *   - Meta requests travel raw (MSG_META) without q and O: libcellar
 *     matches one reply per request, so the router applies q itself and
 *     puts O back where memcached prints it.  A `b` (base64) key travels
 *     as the client wrote it, with its b flag, so the backend decodes it
 *     and echoes k as memcached does.
 */
#ifndef CELLAR_PROTOCOL_MSG_SERVE_H
#define CELLAR_PROTOCOL_MSG_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_bin.h"
#include "protocol/mc_meta.h"
#include "protocol/mc_text.h"
#include "protocol/msg.h"

/*
 * Room for any head a formatter writes: a VALUE line, a binary header with
 * flags and key, an error line, or a meta line with the backend's return
 * flags and the client's opaque.  A meta head that would not fit (return
 * flags longer than a memcached backend ever sends) is answered with
 * "SERVER_ERROR protocol error in server reply" instead.
 */
/* The lease a router's lease-get takes on a miss, in seconds (mcrouter's
 * lease-get names none; the client that wins fills within it). */
#define MSG_SERVE_LEASE_TTL 10

#define MSG_SERVE_HEAD_MAX (MC_META_RESP_MAX + MC_META_OPAQUE_MAX + 32)

/* What a text retrieval ends with, once every key's VALUE is written. */
#define MSG_SERVE_END "END\r\n"
#define MSG_SERVE_END_LEN 5

/* Room msg_bin_create() needs for the digits of `initial`. */
#define MSG_SERVE_DIGITS 20

/*
 * What follows a formatted head: the value, sent by pointer (a span into
 * the reply; len 0 for none), then tail ("\r\n" after a text or meta
 * value, else empty).  A formatter that returns 0 leaves both empty:
 * nothing at all is sent for this reply (noreply, q, a quiet opcode's
 * success, a text retrieval's miss).
 */
struct msg_serve_out {
    struct mc_span value;
    struct mc_span tail;
};

/* ---------------------------------------------------------------------- */
/* Requests                                                                 */
/* ---------------------------------------------------------------------- */

/*
 * A text request as one msg.  req is mc_text_parse's result: MC_PARSE_OK,
 * or MC_PARSE_ERROR with MC_ERR_DELETE_USAGE and req->exptime > 0, which
 * is cellar's `delete <key> <hold>` (m->hold = the seconds; the router
 * decides whether it honours it, as cellard does with -o delete_hold).
 * key: for get/gets/gat/gats the key at hand (the caller walks req->keys
 * with mc_text_next_key and calls once per key), else ignored (req->key
 * is used).  value: a storage command's data block without its "\r\n".
 * flush_all and version become MSG_FLUSH_ALL and MSG_VERSION (no key:
 * msg_op_keyed() is false, the router broadcasts or picks a server).
 * Returns false for everything else (stats, verbosity, quit, admin
 * commands, meta lines, other parse errors): the router answers those.
 */
bool msg_from_text(struct msg *m, const struct mc_req *req, struct mc_span key,
                   struct mc_span value);

/*
 * A meta request (mc_meta_parse's MC_PARSE_OK) as one raw MSG_META.  line
 * is the request line as parsed (the key is taken from it when req used
 * b, so the backend sees the base64 the client sent); value is ms's data
 * block without "\r\n".  meta_flags are the client's flag tokens in order
 * without q and O; for an mg or ma whose O is over-long (req->opaque_late)
 * only the flags before it, since memcached stops acting there.  When a
 * token is dropped the flags are copied into buf (cap >= line.len; MC_LINE_MAX
 * always does), else m->meta_flags points into line.  Returns false for mn
 * and me (the router answers them) and when buf is too small.
 */
bool msg_from_meta(struct msg *m, const struct mc_meta_req *req, struct mc_span line,
                   struct mc_span value, char *buf, size_t cap);

/* What the router does with a binary request after msg_from_bin. */
enum msg_bin_plan {
    MSG_BIN_LOCAL = 0,          /* no msg: noop, quit, stat, unknown opcodes; the
                                   router answers (mc_bin_fmt_* as dispatch_bin.c) */
    MSG_BIN_SEND,               /* send m; msg_serve_bin() spells its reply */
    MSG_BIN_SEND_CREATE,        /* incr/decr that creates: send m; on NOT_FOUND send
                                   msg_bin_create() instead and spell that reply; on
                                   NOT_STORED (another request created the key in
                                   between) send m again */
};

/*
 * A binary request (mc_bin_parse's MC_PARSE_OK) as one msg.  value is a
 * storage request's vlen value bytes.  get/getk and their quiet twins
 * become MSG_GETS and gat/gatk MSG_GATS, because memcached's binary GET
 * answers the item's cas and the reply must carry it; touch MSG_TOUCH;
 * set/add/replace with a header cas MSG_CAS (memcached compares for all
 * three); flush MSG_FLUSH_ALL; version MSG_VERSION.
 */
enum msg_bin_plan msg_from_bin(struct msg *m, const struct mc_bin_req *req,
                               struct mc_span value);

/*
 * The second step of a creating incr/decr: an add of req->initial as
 * decimal text (flags 0, exptime req->exptime), as memcached stores it.
 * digits (>= MSG_SERVE_DIGITS bytes) holds the text m->value points at.
 */
void msg_bin_create(struct msg *m, const struct mc_bin_req *req, char *digits);

/* ---------------------------------------------------------------------- */
/* Replies                                                                  */
/* ---------------------------------------------------------------------- */

/*
 * Fills *r as an error answer: res is MSG_RES_ERROR, MSG_RES_CLIENT_ERROR
 * or MSG_RES_SERVER_ERROR, why its words (static text, kept by pointer).
 * The caller picks the words: for a request that got no reply, the
 * router says what its route tree's status means.
 */
void msg_serve_error(struct msg_reply *r, enum msg_res res, const char *why);

/* Is r an error (ERROR, CLIENT_ERROR, SERVER_ERROR) rather than an answer? */
bool msg_serve_is_error(const struct msg_reply *r);

/*
 * The answer to text request req (for which msg_from_text made m) given
 * reply r: writes the head into out (cap >= MSG_SERVE_HEAD_MAX), returns
 * its length and sets *o.  Retrievals: a HIT is "VALUE <key> <flags>
 * <bytes>[ <cas>]" then the value and "\r\n"; a MISS writes nothing (the
 * caller ends the line's keys with MSG_SERVE_END); an error its line (see
 * the multi-get rule above).  Others: memcached's status line, the number
 * of incr/decr, "VERSION <text>", "ERROR", "CLIENT_ERROR <msg>",
 * "SERVER_ERROR <msg>".  noreply: 0, nothing is sent.
 */
size_t msg_serve_text(char *out, size_t cap, const struct mc_req *req, const struct msg *m,
                      const struct msg_reply *r, struct msg_serve_out *o);

/*
 * mcrouter's metaget answers an absolute exptime, and a codec reads no
 * clock: the caller makes a metaget reply's ttl (seconds left) the unix
 * time it ends, with now, before msg_serve_text().  Other replies as they are.
 */
static inline void msg_serve_expiry(const struct mc_req *req, struct msg_reply *r,
                                    int64_t now) {
    if (req->cmd == MC_CMD_METAGET && r->ttl >= 0)
        r->ttl += now;
}

/*
 * The answer to binary request req given reply r to m (m as msg_from_bin
 * made it, or the add of msg_bin_create).  Writes memcached's response
 * header with req's opcode and opaque (and the key for getk/gatk), as
 * dispatch_bin.c does; returns 0 when a quiet opcode says nothing (a
 * success of a write, a miss of getq/getkq/gatq/gatkq).
 */
size_t msg_serve_bin(char *out, size_t cap, const struct mc_bin_req *req, const struct msg *m,
                     const struct msg_reply *r, struct msg_serve_out *o);

/*
 * The answer to meta request req given reply r to its MSG_META: the code,
 * " <vlen>" for VA, the backend's return flags with the client's O put
 * back in request order (and "CLIENT_ERROR opaque token too long" in
 * place of the line for an over-long O on mg or ma, as memcached), then
 * the value and "\r\n" for VA.  q hides what memcached's q hides: EN of
 * mg, HD of ms and md, HD or VA of ma.  Errors are always sent.
 */
size_t msg_serve_meta(char *out, size_t cap, const struct mc_meta_req *req,
                      const struct msg_reply *r, struct msg_serve_out *o);

#endif
