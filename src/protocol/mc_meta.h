/*
 * mc_meta.h -- memcached's meta protocol (mg ms md ma mn me): a pure codec.
 *
 * mc_meta_parse() reads one meta request line into a plain struct: the
 * command, the key (a span into the buffer, or into the struct's own
 * keybuf when the `b` flag asks for base64), ms's data length, every flag
 * in request order with its token, and the numbers of the flags that carry
 * one.  It never allocates, never does I/O and keeps no state between
 * calls: an incomplete line is NEED_MORE and is parsed again from its start
 * once more bytes have arrived.  ms's data block is not part of the parse:
 * req.vlen bytes and "\r\n" follow the line, and the caller reads them.
 *
 * Answers follow memcached 1.6.18 byte for byte, including its quirks:
 * which check comes first, which error text each command uses (md and ma
 * answer every flag error with "invalid or duplicate flag"), which errors
 * make the server swallow ms's data block (req.swallow), and that mg and ma
 * notice an over-long opaque only while writing their answer, after the
 * command has taken effect (see mc_meta_fmt).  Errors are always sent,
 * whatever `q` says.
 *
 * The formatters build the response line from the request and a view of
 * what the command came to (struct mc_meta_item_view): return code, then
 * the return flags in request order with memcached's spelling, then Z, X,
 * W.  They decide nothing about the item.  Leases are decided once, by the
 * engine, under the item lock (who wins W, whether T, N and R act, the TTL
 * t sees at its place in the line); the server copies those decisions
 * into the view and the formatter prints them.
 *
 * Threading: none; every function is pure and reentrant.
 */
#ifndef CELLAR_PROTOCOL_MC_META_H
#define CELLAR_PROTOCOL_MC_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_text.h"   /* enum mc_parse, struct mc_span, MC_KEY_MAX, MC_LINE_MAX */

#define MC_META_MAX_WORDS 19    /* words on a line (command, key, [datalen], flags); more is "too long" */
#define MC_META_MAX_FLAGS 17    /* flag tokens after "mg <key>" (ms: 16) */
#define MC_META_OPAQUE_MAX 32   /* longest O token, the 'O' included */
#define MC_META_RESP_MAX 1024   /* room for any line mc_meta_fmt / mc_meta_fmt_me writes */
#define MC_META_TTL_NEVER INT64_MIN /* "no expiry" in the TTL fields of the views */

enum mc_meta_cmd {
    MC_META_NONE = 0,           /* not a meta command (only with MC_PARSE_ERROR) */
    MC_META_MG,
    MC_META_MS,
    MC_META_MD,
    MC_META_MA,
    MC_META_MN,
    MC_META_ME,
};

/*
 * ms and ma modes (the M flag).  ms: MS set (default), ME add, MA append,
 * MP prepend, MR replace.  ma: MI or M+ incr (default), MD or M- decr.
 * mg and md accept an M token of length 2 and ignore it.
 */
enum mc_meta_mode {
    MC_META_MODE_SET = 0,
    MC_META_MODE_ADD,
    MC_META_MODE_APPEND,
    MC_META_MODE_PREPEND,
    MC_META_MODE_REPLACE,
    MC_META_MODE_INCR,
    MC_META_MODE_DECR,
};

/* Every error line a meta command can answer, with its text (mc_meta_err_str). */
enum mc_meta_err {
    MC_META_ERR_NONE = 0,
    MC_META_ERR_ERROR,          /* "ERROR": no key, or not a meta command */
    MC_META_ERR_BAD_FORMAT,     /* "CLIENT_ERROR bad command line format" */
    MC_META_ERR_TOO_LONG_MG,    /* "CLIENT_ERROR options flags are too long" (mg) */
    MC_META_ERR_TOO_LONG,       /* "CLIENT_ERROR options flags too long" (ms md ma) */
    MC_META_ERR_INVALID_FLAG,   /* "CLIENT_ERROR invalid flag" */
    MC_META_ERR_DUPLICATE_FLAG, /* "CLIENT_ERROR duplicate flag" (also a flag byte >= 127) */
    MC_META_ERR_BAD_TOKEN,      /* "CLIENT_ERROR bad token in command line format" (N T R C) */
    MC_META_ERR_DECODING_KEY,   /* "CLIENT_ERROR error decoding key" */
    MC_META_ERR_M_LENGTH,       /* "CLIENT_ERROR incorrect length for M token" */
    MC_META_ERR_BAD_INITIAL,    /* "CLIENT_ERROR invalid numeric initial value" (J) */
    MC_META_ERR_BAD_DELTA,      /* "CLIENT_ERROR invalid numeric delta value" (D) */
    MC_META_ERR_INVALID_OR_DUP, /* "CLIENT_ERROR invalid or duplicate flag" (md, ma: any flag error) */
    MC_META_ERR_OPAQUE_TOO_LONG,/* "CLIENT_ERROR opaque token too long" */
    MC_META_ERR_MS_MODE,        /* "CLIENT_ERROR invalid mode for ms M token" */
    MC_META_ERR_MA_MODE,        /* "CLIENT_ERROR invalid mode for ma M token" */
    /* Errors the server decides; the codec only holds their words. */
    MC_META_ERR_BAD_CHUNK,      /* "CLIENT_ERROR bad data chunk" (ms data not ended by \r\n) */
    MC_META_ERR_NON_NUMERIC,    /* "CLIENT_ERROR cannot increment or decrement non-numeric value" */
    MC_META_ERR_TOO_LARGE,      /* "SERVER_ERROR object too large for cache" (ms; swallow) */
    MC_META_ERR_NO_MEMORY,      /* "SERVER_ERROR out of memory storing object" (ms; swallow) */
    MC_META_ERR_DELTA_NO_MEMORY,/* "SERVER_ERROR out of memory" (ma) */
    MC_META_ERR_VIVIFY_NO_MEMORY,/* "SERVER_ERROR Out of memory allocating new item" (ma N) */
    MC_META_ERR_REFCOUNT,       /* "SERVER_ERROR refcount overflow during fetch" (mg) */
    MC_META_ERR_COUNT
};

/* One flag of the request, in request order. */
struct mc_meta_flag {
    char c;                     /* the flag character */
    struct mc_span tok;         /* the whole token, flag character included (O echoes it) */
};

struct mc_meta_req {
    enum mc_meta_cmd cmd;
    enum mc_meta_err err;       /* with MC_PARSE_ERROR */
    size_t swallow;             /* with MC_PARSE_ERROR: bytes after the line to discard
                                   unread (ms once its datalen was read: vlen + 2), else 0 */
    struct mc_span key;         /* the key: into buf, or into keybuf when key_binary */
    bool key_binary;            /* b: key was base64; k answers with base64 and " b" */
    uint32_t vlen;              /* ms: data bytes that follow the line (then \r\n) */
    uint64_t present;           /* bit (c - 'A') for each flag c present; see mc_meta_has() */
    int nflags;
    struct mc_meta_flag flags[MC_META_MAX_FLAGS];
    int opaque_late;            /* mg/ma: index in flags[] of an O token longer than
                                   MC_META_OPAQUE_MAX, else -1 (mc_meta_fmt reports it) */
    enum mc_meta_mode mode;     /* ms: SET unless M; ma: INCR unless M */
    /* Numbers of the flags that carry one (valid when the flag is present). */
    int64_t ttl;                /* T; memcached keeps only the low 32 bits (see below) */
    int64_t vivify_ttl;         /* N */
    int64_t recache;            /* R */
    uint32_t client_flags;      /* F (0 if absent) */
    uint64_t cas;               /* C */
    uint64_t delta;             /* D (1 if absent) */
    uint64_t initial;           /* J (0 if absent) */
    char keybuf[MC_KEY_MAX];    /* the decoded key when key_binary */
};

/* Is flag c ('A'..'z') present in the request? */
static inline bool mc_meta_has(const struct mc_meta_req *req, char c) {
    unsigned i = (unsigned)(unsigned char)c - 'A';
    return i < 64 && ((req->present >> i) & 1) != 0;
}

/*
 * Parses the meta request line at buf[0..len).  Returns
 *   MC_PARSE_OK         *req filled, *consumed = bytes of the line incl. \n;
 *   MC_PARSE_NEED_MORE  no complete line yet (nothing consumed);
 *   MC_PARSE_ERROR      answer mc_meta_err_str(req->err) (even with q),
 *                       *consumed = the line, then discard req->swallow
 *                       more bytes (ms data block) before the next command;
 *   MC_PARSE_CLOSE      more than MC_LINE_MAX bytes and no newline: close.
 * Numbers: T, N and R are accepted over the whole int64 range and passed
 * on whole (memcached 1.6.18 keeps their low 32 bits: T4294967396 is T100);
 * F above 2^32-1 and an ms datalen above INT_MAX-2 are refused, where
 * memcached keeps the low 32 bits.
 */
enum mc_parse mc_meta_parse(struct mc_meta_req *req, const char *buf, size_t len, size_t *consumed);

/* The full error line for an error code, with its "\r\n". */
const char *mc_meta_err_str(enum mc_meta_err err);
size_t mc_meta_err_len(enum mc_meta_err err);

/* ---------------------------------------------------------------------- */
/* Responses                                                                */
/* ---------------------------------------------------------------------- */

/* What the command came to; the formatter picks the two letters. */
enum mc_meta_rc {
    MC_META_RC_OK = 0,          /* mg hit (or created by N), ms stored, md deleted/marked,
                                   ma done: HD, or VA when the request has v (mg, ma) */
    MC_META_RC_EN,              /* mg miss */
    MC_META_RC_NF,              /* not found (md, ma; ms with C on a missing item) */
    MC_META_RC_NS,              /* not stored (ms add/append/prepend/replace) */
    MC_META_RC_EX,              /* CAS mismatch (ms md ma) */
};

/*
 * What the command came to, as the server (that is, the engine) decided
 * it.  The formatter decides nothing about the item: which request won
 * the right to recache (W), whether another holds it (Z), whether the
 * value is stale (X), and the TTL that t shows are the engine's answers,
 * taken under the item lock in the same step that changed the item, so
 * that among concurrent requests exactly one is told W.  The formatter
 * only spells them: the code, the return flags in request order, what q
 * hides, base64 keys, the echoed opaque, and memcached's quirks.  Fields a
 * command does not use are ignored.
 */
struct mc_meta_item_view {
    enum mc_meta_rc rc;
    bool won;                   /* mg: this request won the right to recache (W) */
    bool token_sent;            /* mg: another request won it earlier (Z) */
    bool stale;                 /* mg: the value is marked stale (X) */
    bool created;               /* ma: the item was made by N in this command (q
                                   does not hide the answer then) */
    bool key_binary;            /* mg hit: the item's key was stored with b */
    bool fetched;               /* mg h: fetched before this command */
    uint32_t vlen;              /* mg: value bytes; ma: digits of the new value */
    uint32_t client_flags;      /* mg f */
    uint32_t la;                /* mg l: seconds since last access */
    uint64_t cas;               /* mg/ma c: the item's CAS now; ms c: CAS of the stored
                                   item, 0 when nothing was stored */
    int64_t ttl;                /* mg/ma t: the remaining TTL as it stood where t is in
                                   the request (flags act in request order: "t T30"
                                   shows the old TTL, "T30 t" the new one), or
                                   MC_META_TTL_NEVER; a time in the past prints as
                                   memcached prints it (its low 32 bits, unsigned) */
};

/*
 * Writes the response line of an mg, ms, md, ma or mn into out (cap >=
 * MC_META_RESP_MAX) and returns its length, or 0 when q hides it (mg EN;
 * ms, md HD; ma HD or VA unless the item was just created) or when cap is
 * too small.  v may be NULL for mn.  *send_value (may be NULL) says
 * whether the value (v->vlen bytes, then "\r\n") must follow the line:
 * a VA line that is not hidden.
 *
 * An mg or ma whose O token is longer than MC_META_OPAQUE_MAX
 * (req->opaque_late >= 0) answers "CLIENT_ERROR opaque token too long" in
 * place of its line -- but only once the command has taken effect, as
 * memcached notices it while writing the answer (ma: only when it gets
 * that far, i.e. not for a non-numeric value or no memory).  See
 * mc_meta_late_error() for what the server must do differently then.
 */
size_t mc_meta_fmt(char *out, size_t cap, const struct mc_meta_req *req,
                   const struct mc_meta_item_view *v, bool *send_value);

/*
 * The position in req->flags at which an mg or ma stops taking effect, or
 * -1 when it runs to the end.  memcached applies an mg's or ma's T, N and
 * R while it writes the answer, flag by flag, and gives up at an over-long
 * O: flags before it have acted, flags after it have not, an mg's win is
 * not recorded (the item is not marked token-sent) and an mg that would
 * have bumped the item only under its lock (T N R l h) leaves it unbumped.
 * The server passes the engine only what acts.
 */
static inline int mc_meta_late_error(const struct mc_meta_req *req) {
    return (req->cmd == MC_META_MG || req->cmd == MC_META_MA) ? req->opaque_late : -1;
}

/* What me needs to know of the item (memcached's own fields). */
struct mc_meta_me_view {
    bool hit;
    bool key_binary;            /* the item's key was stored with b: printed in base64 */
    bool fetched;
    int64_t ttl;                /* remaining TTL, or MC_META_TTL_NEVER */
    uint32_t la;                /* seconds since last access */
    uint64_t cas;
    unsigned cls;               /* slab class id */
    uint64_t size;              /* bytes the item takes (header, key, suffix, value) */
};

/*
 * Writes me's answer: "ME <key> exp=<e> la=<s> cas=<n> fetch=yes|no
 * cls=<id> size=<bytes>\r\n" or "EN\r\n" into out (cap >=
 * MC_META_RESP_MAX); returns its length (0 if cap is too small).  As in
 * 1.6.18, exp is -1 for no expiry and otherwise the remaining TTL negated.
 */
size_t mc_meta_fmt_me(char *out, size_t cap, const struct mc_meta_req *req,
                      const struct mc_meta_me_view *v);

/* ---------------------------------------------------------------------- */
/* Base64, as memcached's base64.c reads and writes it                      */
/* ---------------------------------------------------------------------- */

/*
 * Decodes src into out (room for len * 3 / 4 bytes).  Like memcached:
 * bytes outside the alphabet are skipped, the alphabet bytes (with '=')
 * must number a non-zero multiple of 4, '=' anywhere counts as padding and
 * decoding stops after the first block that holds any, and three or more
 * '=' in that block are an error.  Returns the decoded length, 0 on error.
 */
size_t mc_meta_b64_decode(const char *src, size_t len, char *out);

/* Encodes src (with '=' padding) into out (room for 4 * ((len + 2) / 3)); returns the length. */
size_t mc_meta_b64_encode(const char *src, size_t len, char *out);

#endif
