/*
 * mc_text_resp.h -- the client's half of memcached's text protocol.
 *
 * mc_text_parse_resp() reads one element of a server's reply from a byte
 * buffer: a `VALUE` line together with its data block, or one status line
 * (`END`, `STORED`, a number, `CLIENT_ERROR <msg>` ...).  Keys, values and
 * messages are spans into the buffer.  Like the request codec it is pure:
 * no allocation, no I/O, no state kept between calls.  While an element is
 * incomplete it answers MC_PARSE_NEED_MORE and consumes nothing; the caller
 * parses again from the same place once more bytes have arrived.  A reply
 * to `get k1 k2` is thus a sequence of calls: VALUE, VALUE, END.
 *
 *   "VALUE k 0 5\r\nhello\r\nEND\r\n"
 *    |--- one MC_RESP_VALUE ----||-END-|
 *         key="k" flags=0 vlen=5 value="hello"
 *
 * Lines end with "\r\n"; a bare "\n" is accepted too (memcached ends the
 * lines of `lru_crawler metadump` that way).  A data block must be
 * followed by exactly "\r\n".  What memcached never sends -- an empty
 * line, a malformed VALUE line, a line longer than MC_RESP_LINE_MAX -- is
 * MC_PARSE_ERROR: the stream has lost its framing and the connection
 * should be closed.  A well-formed line this codec has no name for (the
 * answers of admin commands: `BUSY ...`, `ITEM ...`, `OK` variants) is
 * MC_RESP_OTHER with the whole line in msg, so an admin tool can still
 * read it.
 *
 * The request formatters at the end write command lines into caller
 * buffers; a storage command's data block is the caller's to send after
 * the line (by iovec, without a copy, where it can).
 */
#ifndef CELLAR_PROTOCOL_MC_TEXT_RESP_H
#define CELLAR_PROTOCOL_MC_TEXT_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_text.h"   /* struct mc_span, enum mc_parse, enum mc_cmd, MC_KEY_MAX */

#define MC_RESP_LINE_MAX 8192   /* a longer line without "\n" is an error */

enum mc_resp_kind {
    MC_RESP_NONE = 0,
    MC_RESP_VALUE,              /* key, flags, vlen, cas (has_cas for gets), value */
    MC_RESP_END,
    MC_RESP_STORED,
    MC_RESP_NOT_STORED,
    MC_RESP_EXISTS,
    MC_RESP_NOT_FOUND,
    MC_RESP_DELETED,
    MC_RESP_TOUCHED,
    MC_RESP_OK,                 /* flush_all, verbosity, slabs, ... */
    MC_RESP_RESET,              /* stats reset */
    MC_RESP_NUMBER,             /* incr/decr: number */
    MC_RESP_VERSION,            /* msg = the version text */
    MC_RESP_STAT,               /* key = the name, msg = the value (may be empty) */
    MC_RESP_ERROR,              /* msg = text after "ERROR", "ERROR:" (usually empty) */
    MC_RESP_CLIENT_ERROR,       /* msg = the message */
    MC_RESP_SERVER_ERROR,       /* msg = the message */
    MC_RESP_OTHER,              /* msg = the whole line, without its terminator */
    MC_RESP_KIND_COUNT
};

struct mc_resp {
    enum mc_resp_kind kind;
    struct mc_span key;         /* VALUE: the key; STAT: the name */
    uint32_t flags;             /* VALUE: client flags */
    uint32_t vlen;              /* VALUE: data bytes */
    bool has_cas;               /* VALUE: a cas was on the line (gets, gats) */
    uint64_t cas;
    struct mc_span value;       /* VALUE: the data block, without its "\r\n" */
    uint64_t number;            /* NUMBER */
    struct mc_span msg;         /* see enum mc_resp_kind */
    size_t need;                /* with NEED_MORE: total bytes this element needs
                                   once known (a VALUE whose data is incomplete), else 0 */
};

/*
 * Parses the reply element at buf[0..len).  Returns MC_PARSE_OK with *r
 * filled and the element's bytes (line, data and their terminators) in
 * *consumed; MC_PARSE_NEED_MORE with nothing consumed (and r->need set
 * when the VALUE line told how long the element is); or MC_PARSE_ERROR
 * when the bytes cannot be a reply (r->kind says what was being parsed,
 * MC_RESP_NONE if nothing was recognised).
 */
enum mc_parse mc_text_parse_resp(struct mc_resp *r, const char *buf, size_t len, size_t *consumed);

/* The name of a kind ("VALUE", "END", ...), for messages. */
const char *mc_text_resp_kind_name(enum mc_resp_kind kind);

/*
 * Writes "<get|gets> <key> <key> ...\r\n" into out[0..cap).  cmd is
 * MC_CMD_GET or MC_CMD_GETS.  Returns the length, or 0 if it does not fit,
 * nkeys is 0, or a key is empty, longer than MC_KEY_MAX or holds a space
 * or a control character.
 */
size_t mc_text_fmt_get(char *out, size_t cap, enum mc_cmd cmd, const struct mc_span *keys,
                       size_t nkeys);

/*
 * Writes "<cmd> <key> <flags> <exptime> <vlen>[ <cas>][ noreply]\r\n" into
 * out[0..cap); cmd is one of MC_CMD_SET, ADD, REPLACE, APPEND, PREPEND or
 * CAS (which writes cas).  The caller sends vlen data bytes and "\r\n"
 * after it.  Returns the length, or 0 if it does not fit or the key is
 * not valid (as for mc_text_fmt_get).
 */
size_t mc_text_fmt_store(char *out, size_t cap, enum mc_cmd cmd, struct mc_span key,
                         uint32_t flags, int64_t exptime, uint32_t vlen, uint64_t cas,
                         bool noreply);

#endif
