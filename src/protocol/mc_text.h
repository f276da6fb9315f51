/*
 * mc_text.h -- memcached's text protocol: a pure codec.
 *
 * mc_text_parse() reads one request line from a byte buffer into a plain
 * struct whose keys and arguments are spans into that buffer.  It never
 * allocates, never does I/O and keeps no state between calls: when a line
 * is incomplete it answers MC_PARSE_NEED_MORE and the caller parses again,
 * from the start of the line, once more bytes have arrived.
 *
 * A storage command's data block is not part of the parse: the request
 * says how many value bytes follow the line (vlen; then "\r\n"), and the
 * caller reads them wherever it wants them (straight into an item).
 *
 * The answers follow memcached 1.6.18 byte for byte: which lines are
 * `ERROR`, which are `CLIENT_ERROR ...`, when noreply silences an error,
 * and when the connection must be closed.  Formatting helpers at the end
 * build response lines into caller buffers.
 */
#ifndef CELLAR_PROTOCOL_MC_TEXT_H
#define CELLAR_PROTOCOL_MC_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MC_KEY_MAX 250          /* longest key */
#define MC_LINE_MAX 2048        /* a longer line without \n closes the connection (not get/gets) */
#define MC_MAX_TOKENS 24        /* tokens kept in mc_req.tok for admin commands */
#define MC_VALUE_LINE_MAX (MC_KEY_MAX + 64) /* room for "VALUE <key> <flags> <bytes> <cas>\r\n" */

struct mc_span {
    const char *p;
    size_t len;
};

enum mc_cmd {
    MC_CMD_NONE = 0,
    /* retrieval: keys in mc_req.keys */
    MC_CMD_GET, MC_CMD_GETS, MC_CMD_GAT, MC_CMD_GATS,
    /* storage: key, flags, exptime, vlen (cas for MC_CMD_CAS) */
    MC_CMD_SET, MC_CMD_ADD, MC_CMD_REPLACE, MC_CMD_APPEND, MC_CMD_PREPEND, MC_CMD_CAS,
    /* single key */
    MC_CMD_DELETE,              /* key */
    MC_CMD_INCR, MC_CMD_DECR,   /* key, delta */
    MC_CMD_TOUCH,               /* key, exptime */
    /* admin */
    MC_CMD_FLUSH_ALL,           /* exptime = delay (0 if absent) */
    MC_CMD_VERSION,
    MC_CMD_VERBOSITY,           /* delta = level */
    MC_CMD_QUIT,
    MC_CMD_SHUTDOWN,            /* tok[1] = mode if ntokens > 1 */
    MC_CMD_STATS,               /* tok[1..] = arguments */
    MC_CMD_CACHE_MEMLIMIT,      /* delta = megabytes */
    MC_CMD_REFRESH_CERTS,       /* any words; noreply last hushes its OK (TLS) */
    MC_CMD_SLABS,               /* tok[1..] */
    MC_CMD_LRU,                 /* tok[1..] */
    MC_CMD_LRU_CRAWLER,         /* tok[1..] */
    MC_CMD_WATCH,               /* tok[1..] */
    MC_CMD_EXTSTORE,            /* tok[1..]: memcached's extstore knobs */
    MC_CMD_MISBEHAVE,           /* reserved */
    MC_CMD_META,                /* mg ms md ma mn me: hand the same line to the meta codec */
    /* mcrouter's own commands (mc_mcr.h: the router's; never mc_text_parse()'s) */
    MC_CMD_LEASE_GET,           /* keys, as get */
    MC_CMD_LEASE_SET,           /* key, cas = token, flags, exptime, vlen */
    MC_CMD_METAGET,             /* key */
};

enum mc_parse {
    MC_PARSE_OK = 0,            /* *req filled; *consumed = bytes of the line incl. \n */
    MC_PARSE_NEED_MORE,         /* no complete line yet; nothing consumed */
    MC_PARSE_ERROR,             /* answer with req->err (unless req->noreply); *consumed = line;
                                   req->cmd is the command named (MC_CMD_NONE if unknown) */
    MC_PARSE_CLOSE,             /* close the connection without an answer */
};

enum mc_err {
    MC_ERR_NONE = 0,
    MC_ERR_ERROR,               /* "ERROR" */
    MC_ERR_BAD_FORMAT,          /* "CLIENT_ERROR bad command line format" */
    MC_ERR_BAD_DELTA,           /* "CLIENT_ERROR invalid numeric delta argument" */
    MC_ERR_BAD_EXPTIME,         /* "CLIENT_ERROR invalid exptime argument" */
    MC_ERR_DELETE_USAGE,        /* "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]" */
    MC_ERR_LINE_TOO_LONG,       /* reserved */
    MC_ERR_BAD_KEY,             /* a key over 250 bytes: memcached's "CLIENT_ERROR bad command
                                   line format" (mcrouter's "CLIENT_ERROR bad key"); a
                                   storage command's vlen is set, its block not read */
    MC_ERR_COUNT
};

struct mc_req {
    enum mc_cmd cmd;
    enum mc_err err;            /* with MC_PARSE_ERROR */
    bool noreply;
    struct mc_span key;         /* single-key commands; first key of a retrieval */
    struct mc_span keys;        /* retrieval: from the first key to the end of the line */
    uint32_t nkeys;             /* retrieval: number of keys */
    uint32_t flags;             /* storage: client flags */
    int64_t exptime;            /* storage, touch, gat, flush_all delay; any int64 (memcached
                                   accepts the same range but keeps only the low 32 bits).
                                   delete refused with MC_ERR_DELETE_USAGE: the seconds of
                                   "delete <key> <seconds> [noreply]" (1..2^32-1, key set),
                                   for cellar's -o delete_hold; else 0 */
    uint32_t vlen;              /* storage: value bytes that follow the line (then \r\n) */
    uint64_t cas;               /* cas */
    uint64_t delta;             /* incr/decr delta; verbosity level; cache_memlimit MB */
    int ntokens;                /* words of the line incl. the command name (at most MC_MAX_TOKENS - 1;
                                   memcached ignores words past that, except get's keys) */
    struct mc_span tok[MC_MAX_TOKENS];
};

/* Whether word i of the line is exactly w (for the subcommands of admin lines). */
static inline bool mc_req_word_is(const struct mc_req *req, int i, const char *w) {
    size_t n = strlen(w);
    return i < req->ntokens && req->tok[i].len == n && memcmp(req->tok[i].p, w, n) == 0;
}

/*
 * Parses the request line at buf[0..len).  Returns MC_PARSE_OK (and the
 * bytes the line took in *consumed), MC_PARSE_NEED_MORE, MC_PARSE_ERROR
 * (with req->err and *consumed) or MC_PARSE_CLOSE.  A line longer than
 * MC_LINE_MAX without a newline is NEED_MORE if it is a get/gets and
 * CLOSE otherwise, as memcached does.
 */
enum mc_parse mc_text_parse(struct mc_req *req, const char *buf, size_t len, size_t *consumed);

/*
 * Iterates over the keys of a retrieval: takes the next key off the front
 * of *rest into *key.  Returns false when no key is left.
 */
bool mc_text_next_key(struct mc_span *rest, struct mc_span *key);

/*
 * Does buf start with a meta command word (mg ms md ma mn me) and a space
 * or the line's end?  Such a line is the meta codec's to read (the text
 * codec only names its verb: MC_CMD_META).
 */
static inline bool mc_text_meta_line(const char *buf, size_t len) {
    return len >= 3 && buf[0] == 'm' && memchr("gsdnae", buf[1], 6) != NULL &&
           (buf[2] == ' ' || buf[2] == '\r' || buf[2] == '\n');
}

/*
 * For read-ahead: the keys of the complete get, gets and set lines, and
 * meta mg and ms lines (not those with a base64 key), at the start of buf,
 * up to max of them, stopping at the first other line (a set's or ms's
 * value block is stepped over by the length on its line, so a value is
 * never read as a command).  Returns how many keys; *used
 * gets the bytes of the lines taken, and bit i of *stores is set when key i
 * is a set's (max is at most 64).  Lines are read loosely (a malformed one
 * may give a wrong key): the result is a hint, never a request.
 */
unsigned mc_text_scan_keys(const char *buf, size_t len, struct mc_span *key, unsigned max,
                           uint64_t *stores, size_t *used);

/* The full response line for an error code, with its "\r\n". */
const char *mc_text_err_str(enum mc_err err);
size_t mc_text_err_len(enum mc_err err);

/*
 * Writes "VALUE <key> <flags> <bytes>[ <cas>]\r\n" into out (which must
 * hold MC_VALUE_LINE_MAX bytes).  Returns the length written.
 */
size_t mc_text_fmt_value(char *out, const char *key, size_t nkey, uint32_t flags,
                         uint32_t nbytes, bool with_cas, uint64_t cas);

/* Writes the decimal of v and "\r\n" into out (>= 22 bytes); returns the length. */
size_t mc_text_fmt_u64_line(char *out, uint64_t v);

#endif
