/*
 * mc_meta_resp.h -- the client's half of memcached's meta protocol.
 *
 * mc_meta_parse_resp() reads one reply of a meta server from a byte
 * buffer: a return code line with its return flags ("HD c5 t-1"), a VA
 * line together with its data block, or one of the error lines any
 * request may get.  The flags come back in the order the server wrote
 * them, each as its character and the token after it, so a caller (the
 * client's meta wire, the router) reads whichever it asked for.  Like the
 * other codecs it is pure: no allocation, no I/O, no state kept between
 * calls.  While a reply is incomplete it answers MC_PARSE_NEED_MORE and
 * consumes nothing; the caller parses again from the same place once more
 * bytes have arrived.
 *
 *   "VA 5 f7 c1\r\nhello\r\n"
 *    code=VA vlen=5 flags=[(f,"7"), (c,"1")] value="hello"
 *
 *   "HD Z X\r\n"           code=HD flags=[(Z,""), (X,"")]
 *   "CLIENT_ERROR bad data chunk\r\n"   code=CLIENT_ERROR msg="bad data chunk"
 *   "VERSION 1.6.18\r\n"   code=OTHER msg="VERSION 1.6.18" (a text
 *                          command's reply on a meta connection)
 *
 * Lines end with "\r\n" (a bare "\n" is accepted too, as the text codec
 * does); a data block must be followed by exactly "\r\n".  What a server
 * never sends -- an empty line, a line longer than MC_META_RESP_LINE_MAX,
 * a VA without its length, a flag that is not a letter, more than
 * MC_META_RESP_MAX_FLAGS flags -- is MC_PARSE_ERROR: the stream has lost
 * its framing and the connection should be closed.  A line that is no
 * meta code and no error (the "OK" of flush_all, "VERSION ...") is
 * MC_META_CODE_OTHER with the whole line in msg, for the caller to judge.
 */
#ifndef CELLAR_PROTOCOL_MC_META_RESP_H
#define CELLAR_PROTOCOL_MC_META_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_text.h"   /* struct mc_span, enum mc_parse */

#define MC_META_RESP_LINE_MAX 8192  /* a longer line without "\n" is an error */
#define MC_META_RESP_MAX_FLAGS 24   /* return flags on a line; memcached echoes at
                                       most one per request flag (17) plus W Z X */

enum mc_meta_code {
    MC_META_CODE_NONE = 0,      /* nothing recognised (only with MC_PARSE_ERROR) */
    MC_META_CODE_VA,            /* value follows: vlen, value */
    MC_META_CODE_HD,            /* success, no value */
    MC_META_CODE_EN,            /* mg miss; me miss */
    MC_META_CODE_NF,            /* not found */
    MC_META_CODE_NS,            /* not stored */
    MC_META_CODE_EX,            /* CAS mismatch */
    MC_META_CODE_MN,            /* mn: end of a pipeline */
    MC_META_CODE_ME,            /* me: msg = the rest of the line (key and key=value pairs) */
    MC_META_CODE_ERROR,         /* msg = text after "ERROR" (usually empty) */
    MC_META_CODE_CLIENT_ERROR,  /* msg = the message */
    MC_META_CODE_SERVER_ERROR,  /* msg = the message */
    MC_META_CODE_OTHER,         /* msg = the whole line, without its terminator */
    MC_META_CODE_COUNT
};

/* One return flag, in the order the server wrote it. */
struct mc_meta_rflag {
    char c;                     /* the flag character, a letter */
    struct mc_span arg;         /* the bytes after it up to the next space ("" for W) */
};

struct mc_meta_resp {
    enum mc_meta_code code;
    int nflags;                 /* VA HD EN NF NS EX MN: the return flags */
    struct mc_meta_rflag flags[MC_META_RESP_MAX_FLAGS];
    uint32_t vlen;              /* VA: data bytes */
    struct mc_span value;       /* VA: the data block, without its "\r\n" */
    struct mc_span msg;         /* see enum mc_meta_code */
    size_t need;                /* with NEED_MORE: total bytes this reply needs
                                   once known (a VA whose data is incomplete), else 0 */
};

/*
 * Parses the reply at buf[0..len).  Returns MC_PARSE_OK with *r filled
 * and the reply's bytes (line, data and their terminators) in *consumed;
 * MC_PARSE_NEED_MORE with nothing consumed (and r->need set when a VA
 * line told how long the reply is); or MC_PARSE_ERROR when the bytes
 * cannot be a reply (r->code says what was being parsed, NONE if nothing
 * was recognised).  *consumed is 0 unless OK.  Spans point into buf.
 */
enum mc_parse mc_meta_parse_resp(struct mc_meta_resp *r, const char *buf, size_t len,
                                 size_t *consumed);

/* The first return flag c of r, or NULL. */
const struct mc_meta_rflag *mc_meta_resp_flag(const struct mc_meta_resp *r, char c);

/* The name of a code ("VA", "CLIENT_ERROR", ...), for messages. */
const char *mc_meta_code_name(enum mc_meta_code code);

#endif
