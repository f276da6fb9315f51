/*
 * msg.h -- one request and one reply, whatever the wire.
 *
 * The client library and the router speak to memcache servers in one of
 * three protocols (a pool's `protocol`): meta (memcached 1.6 and cellard),
 * text (older servers, twemproxy) or binary.  Above this layer a request
 * is a struct msg and its answer a struct msg_reply; each wire is a pair
 * of pure functions that turn the one into bytes and bytes into the other:
 *
 *     struct msg --fmt--> "set k 0 0 5\r\n" + value + "\r\n"    (text)
 *                         "ms k 5 F0 T0\r\n" + value + "\r\n"    (meta)
 *                         24-byte header, extras, key, value     (binary)
 *     bytes --parse--> struct msg_reply { res = MSG_RES_STORED }
 *
 * One request, one reply: each op is sent so that the server answers it
 * with exactly one reply (no noreply, no quiet opcodes, no `q` flag), so a
 * connection matches replies to requests by order alone.  A multi-get is
 * many single gets in one write.
 *
 * Replies speak the text protocol's words, whatever the wire said: a
 * binary ADD of an existing key (status 02) is MSG_RES_NOT_STORED, as the
 * text `add` says, while a CAS mismatch is MSG_RES_EXISTS on every wire;
 * a binary or meta error carries the text protocol's message where one
 * exists ("object too large for cache").  So a caller never needs to know
 * which wire a pool speaks.
 *
 * Like the other codecs: no allocation, no I/O, no state between calls.
 * fmt writes the request up to its value; the caller sends m->value (by
 * iovec or copy) and then wire->value_end.  parse reads one whole reply
 * from the start of a buffer: MC_PARSE_NEED_MORE (nothing consumed) until
 * all of it is there, then MC_PARSE_OK with spans into the buffer, or
 * MC_PARSE_ERROR when the bytes cannot be this request's reply (the
 * stream has lost its framing: close the connection).
 */
#ifndef CELLAR_PROTOCOL_MSG_H
#define CELLAR_PROTOCOL_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_text.h"   /* struct mc_span, enum mc_parse, MC_KEY_MAX */

#define MSG_HEAD_MAX 512        /* room for any request fmt writes, value excluded */

enum msg_op {
    MSG_GET = 0,                /* key */
    MSG_GETS,                   /* key; the reply carries cas */
    MSG_GAT,                    /* key, exptime: get and touch */
    MSG_GATS,                   /* key, exptime; the reply carries cas */
    MSG_SET,                    /* key, value, flags, exptime */
    MSG_ADD,
    MSG_REPLACE,
    MSG_APPEND,                 /* key, value (flags and exptime ignored) */
    MSG_PREPEND,
    MSG_CAS,                    /* key, value, flags, exptime, cas */
    MSG_DELETE,                 /* key */
    MSG_INCR,                   /* key, delta; a miss is NOT_FOUND (never creates) */
    MSG_DECR,
    MSG_TOUCH,                  /* key, exptime */
    MSG_FLUSH_ALL,              /* exptime = delay (0: now) */
    MSG_VERSION,
    MSG_LEASE_GET,              /* meta only: key, exptime = the lease's TTL (mg N) */
    MSG_LEASE_SET,              /* meta only: key, value, flags, exptime, cas = token */
    MSG_STATS,                  /* key = the group ("", "settings", "items", "detail dump"
                                   ...; no control bytes); answered STATS, or OK for
                                   the groups that only act (reset, detail on|off) */
    MSG_META,                   /* meta only, the raw command: meta_cmd ('g' 's' 'd' 'a'
                                   'e' for mg ms md ma me), key, meta_flags (the tokens
                                   as text; no q: every request is answered), value for
                                   ms; answered META (HD VA MN), or MISS / NOT_FOUND /
                                   NOT_STORED / EXISTS (EN NF NS EX), with code and the
                                   return flags in msg */
    MSG_OP_COUNT
};

struct msg {
    enum msg_op op;
    struct mc_span key;         /* 1..MC_KEY_MAX bytes, no space or control byte */
    struct mc_span value;       /* storage ops: the data, without a terminator */
    uint32_t flags;             /* storage ops: client flags */
    int64_t exptime;            /* as the text protocol reads it: 0 never, <= 30 days
                                   relative, else a unix time; negative: already expired */
    uint64_t cas;               /* MSG_CAS; MSG_LEASE_SET: the lease token; append,
                                   prepend, delete, incr, decr: when non-zero, done only
                                   if the item's cas is this (EXISTS otherwise; meta and
                                   binary wires: text cannot say it) */
    uint64_t delta;             /* incr/decr */
    bool want_ttl;              /* get, gets, gat, gats: ask for the remaining TTL (meta
                                   only; on the other wires the reply's ttl stays -1) */
    bool text_form;             /* get, gets, gat, gats, touch, append, prepend on the
                                   meta wire: sent as the text command, as a text client
                                   wrote it (the router's): an mg takes a stale item's win
                                   token (W), a get or touch does not; an ms MA too large
                                   for the server drops the item, an append keeps it */
    bool want_cas;              /* storage ops, incr/decr, touch: the reply carries the
                                   item's cas after the change (meta asks with c; binary
                                   always answers it; text cannot: cas stays 0) */
    char meta_cmd;              /* MSG_META: 'g', 's', 'd', 'a' or 'e' (me: answered ME
                                   with the rest of its line in msg, or EN) */
    struct mc_span meta_flags;  /* MSG_META: e.g. "v t f N30" */
    bool meta_quiet;            /* MSG_META 'g' 'd' 'a': sent with q and an mn after it,
                                   so the server's own q rules decide what is said; the
                                   reply is then the answer, or silent (only the MN) */
    uint16_t prefix_len;        /* a routing prefix taken off: the prefix_len bytes before
                                   key.p are the client's "/region/cluster/" (a pool with
                                   keep_routing_prefix sends them on) */
    uint32_t hold;              /* delete: cellard's delete hold-off (-o delete_hold), in
                                   seconds: adds of the key are refused meanwhile.  Sent
                                   as text `delete <key> <hold>` (text and meta wires;
                                   binary cannot say it); 0: a plain delete */
};

enum msg_res {
    MSG_RES_NONE = 0,
    MSG_RES_HIT,                /* get family: value, flags; cas for gets, gats, lease-get */
    MSG_RES_MISS,               /* get family */
    MSG_RES_STORED,
    MSG_RES_NOT_STORED,
    MSG_RES_EXISTS,             /* cas mismatch */
    MSG_RES_NOT_FOUND,          /* delete, incr/decr, touch, cas of a missing key */
    MSG_RES_DELETED,
    MSG_RES_TOUCHED,
    MSG_RES_NUMBER,             /* incr/decr: number */
    MSG_RES_OK,                 /* flush_all */
    MSG_RES_VERSION,            /* msg = the version text */
    MSG_RES_ERROR,              /* the server does not know the command; msg may say more */
    MSG_RES_CLIENT_ERROR,       /* msg = the message */
    MSG_RES_SERVER_ERROR,       /* msg = the message */
    MSG_RES_STATS,              /* value = the statistics in the wire's form: walk them
                                   with the wire's stat_next() */
    MSG_RES_META,               /* MSG_META answered HD, VA (value) or MN */
    MSG_RES_COUNT
};

struct msg_reply {
    enum msg_res res;
    struct mc_span value;       /* HIT: the data, without a terminator */
    uint32_t flags;             /* HIT: client flags; TOUCHED of a want_cas touch too */
    uint64_t cas;               /* HIT of gets/gats/lease-get: the item's cas (the lease
                                   token when won); STORED, NUMBER, TOUCHED of a want_cas
                                   request: the item's cas after the change */
    uint64_t number;            /* NUMBER */
    int64_t ttl;                /* lease-get HIT, or want_ttl on meta: remaining TTL,
                                   -1 for none or unknown */
    bool won;                   /* lease-get: this request won the right to fill (meta W) */
    bool token_sent;            /* lease-get: another request holds it (meta Z) */
    bool stale;                 /* lease-get: the value was invalidated (meta X) */
    struct mc_span msg;         /* VERSION, ERROR, CLIENT_ERROR, SERVER_ERROR; MSG_META:
                                   the return flags as text */
    char code[2];               /* MSG_META: the reply's two letters ("HD", "VA", "EN", ...) */
    bool silent;                /* MSG_META with meta_quiet: q hid the answer (res META,
                                   code "MN") */
};

/*
 * A wire protocol.  fmt writes m's request (value excluded) into
 * out[0..cap) for cap >= MSG_HEAD_MAX and returns its length, or 0 when
 * this wire cannot say it (a lease op on text or binary) or the request
 * is malformed (a bad key).  opaque is what the binary wire puts in its
 * header (the others ignore it).  parse reads m's reply at buf[0..len)
 * into *r; the binary wire also checks that it echoes opaque.
 */
struct msg_wire {
    const char *name;           /* "text", "meta", "binary" */
    size_t (*fmt)(char *out, size_t cap, const struct msg *m, uint32_t opaque);
    enum mc_parse (*parse)(struct msg_reply *r, const struct msg *m, uint32_t opaque,
                           const char *buf, size_t len, size_t *consumed);
    const char *value_end;      /* sent after a storage op's value: "\r\n", or "" */
    size_t value_end_len;
    /*
     * Takes the next statistic off *rest (a STATS reply's value, as parse
     * left it): its name and value.  false when none is left.
     */
    bool (*stat_next)(struct mc_span *rest, struct mc_span *name, struct mc_span *value);
    /*
     * Batched gets (NULL: the wire has none).  batches(m): m goes out as a
     * text retrieval line ("get <key>\r\n") that the next request of the
     * same op may extend with its own key (" <key>", MSG_BATCH_KEY_MAX keys
     * at most), so one line and one END serve many keys.  parse_batched
     * reads, for the batch's head request m, its share of the reply: a
     * VALUE of m's key (HIT), or nothing of it (MISS, nothing consumed:
     * the VALUE or END is the next request's), or an error line, which
     * answers every request of the batch; the END (or error line) is
     * consumed with the batch's last request (last).
     */
    bool (*batches)(const struct msg *m);
    enum mc_parse (*parse_batched)(struct msg_reply *r, const struct msg *m, bool last,
                                   const char *buf, size_t len, size_t *consumed);
};

#define MSG_BATCH_KEY_MAX 100       /* keys on one batched get line */

/* The text wire's batching, which the meta wire shares for its text-form gets. */
bool msg_text_batches(const struct msg *m);
enum mc_parse msg_text_parse_batched(struct msg_reply *r, const struct msg *m, bool last,
                                     const char *buf, size_t len, size_t *consumed);

extern const struct msg_wire msg_wire_text;

/*
 * The text form of stats, which the meta wire shares (a meta connection
 * reads the text command): the request line, the reply (whole, up to
 * END), and walking its STAT lines.
 */
size_t msg_text_fmt_stats(char *out, size_t cap, const struct msg *m);
enum mc_parse msg_text_parse_stats(struct msg_reply *r, const char *buf, size_t len,
                                   size_t *consumed);
bool msg_text_stat_next(struct mc_span *rest, struct mc_span *name, struct mc_span *value);
extern const struct msg_wire msg_wire_meta;
/* mcrouter's "ascii": the text command wherever text can say the request,
 * else meta (leases, raw meta, asked-back TTL or cas, compared cas). */
extern const struct msg_wire msg_wire_ascii;
extern const struct msg_wire msg_wire_bin;

/* The wire named name ("text", "ascii", "meta", "binary"), or NULL. */
const struct msg_wire *msg_wire_find(const char *name);

/* Does op carry a value (storage ops)?  (A raw meta ms carries one too: msg_carries_value.) */
static inline bool msg_op_stores(enum msg_op op) {
    return (op >= MSG_SET && op <= MSG_CAS) || op == MSG_LEASE_SET;
}

/* Does m carry a value: a storage op, or a raw meta ms? */
static inline bool msg_carries_value(const struct msg *m) {
    return msg_op_stores(m->op) || (m->op == MSG_META && m->meta_cmd == 's');
}

/* May op carry a cas to compare (msg.cas) besides MSG_CAS and MSG_LEASE_SET? */
static inline bool msg_op_compares(enum msg_op op) {
    return op == MSG_APPEND || op == MSG_PREPEND || op == MSG_DELETE || op == MSG_INCR ||
           op == MSG_DECR;
}

/* Does op name a key (everything but flush_all, version and stats)? */
static inline bool msg_op_keyed(enum msg_op op) {
    return op != MSG_FLUSH_ALL && op != MSG_VERSION && op != MSG_STATS;
}

/* Is group a stats group every wire can carry: at most MC_KEY_MAX bytes, no control byte? */
bool msg_group_ok(struct mc_span group);

/* Is key a key every wire can carry: 1..MC_KEY_MAX bytes, none a space or control byte? */
bool msg_key_ok(struct mc_span key);

/*
 * Is key a key some wire can carry: 1..MC_KEY_MAX bytes of anything, as a
 * binary client may send?  (cellar-router's keys.)  Beyond msg_key_ok the
 * binary wire sends it as it is, the meta wire in base64 with the b flag
 * (up to MSG_META_B64_KEY_MAX bytes), and the text wire not at all.
 */
static inline bool msg_key_any(struct mc_span key) {
    return key.len > 0 && key.len <= MC_KEY_MAX;
}
/*
 * Can a text or meta line carry key as it is: 1..MC_KEY_MAX bytes, none
 * that ends a token or a line (space, CR, LF, NUL)?  memcached takes other
 * control bytes in a key; the router passes its clients' keys on so.
 */
bool msg_key_line_ok(struct mc_span key);
#define MSG_META_B64_KEY_MAX 186    /* its base64 is MC_KEY_MAX (250) characters at most */

/*
 * Can a raw meta command say this: cmd one of g s d a e, flags free of
 * control bytes and of a q token (a quiet command may not answer, and a
 * connection matches replies to requests one for one)?
 */
bool msg_meta_ok(char cmd, struct mc_span flags);

/* Names, for messages and tests ("get", "HIT", ...). */
const char *msg_op_name(enum msg_op op);
/* The op msg_op_name() calls name, or -1. */
int msg_op_by_name(const char *name);
const char *msg_res_name(enum msg_res res);

#endif
