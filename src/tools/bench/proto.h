/*
 * proto.h -- the wire protocols cellar-bench can speak.
 *
 * The load loop knows requests only as "a get of n keys" or "a set of one
 * key with a value"; a protocol turns them into bytes and reads back the
 * whole reply to one request, saying how many keys hit.  Adding a protocol
 * is one file that fills a struct bench_proto and one line in
 * bench_proto_find() (proto_text.c).  text has its own file; meta and
 * binary (proto_msg.c) go through the client library's wires
 * (protocol/msg.h), so the project has one client codec.
 *
 * parse_reply() keeps no state: while a reply is incomplete it answers
 * MC_PARSE_NEED_MORE and is called again from the reply's first byte once
 * more bytes have arrived (*need, when non-zero, is how many bytes the
 * reply will take at least, so the caller can grow its buffer).  Replies
 * arrive in request order, so the caller passes the request each answers.
 */
#ifndef CELLAR_TOOLS_BENCH_PROTO_H
#define CELLAR_TOOLS_BENCH_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_text.h"   /* struct mc_span, enum mc_parse */

enum bench_op { BENCH_GET, BENCH_SET };

struct bench_req {
    uint64_t sent_ns;       /* when it was handed to the socket */
    uint32_t nkeys;         /* get: keys asked for */
    uint8_t op;             /* enum bench_op */
};

struct bench_reply {
    uint32_t hits;          /* get: keys that came back */
    bool error;             /* an error reply (ERROR, CLIENT_ERROR, SERVER_ERROR, NOT_STORED ...) */
};

struct bench_proto {
    const char *name;
    /* Writes a get of nkeys keys into out[0..cap); returns the bytes, 0 if it does not fit. */
    size_t (*fmt_get)(char *out, size_t cap, const struct mc_span *keys, size_t nkeys);
    /*
     * Writes what precedes a set's value into out[0..cap); the sender adds
     * the vlen value bytes and set_trailer.  Returns the bytes, 0 if it does
     * not fit.  (Split so that requests can be drawn ahead of time without
     * their values.)
     */
    size_t (*fmt_set)(char *out, size_t cap, struct mc_span key, uint32_t vlen);
    const char *set_trailer;
    size_t set_trailer_len;
    /*
     * Parses the reply to req at buf[0..len).  MC_PARSE_OK: *r filled and
     * *consumed bytes taken.  MC_PARSE_NEED_MORE: nothing taken (*need as
     * above).  MC_PARSE_ERROR: the stream makes no sense; close.
     */
    enum mc_parse (*parse_reply)(const struct bench_req *req, const char *buf, size_t len,
                                 size_t *consumed, struct bench_reply *r, size_t *need);
};

extern const struct bench_proto bench_proto_text;
extern const struct bench_proto bench_proto_meta;
extern const struct bench_proto bench_proto_binary;

/* The protocol called name ("text", "meta", "binary"); NULL if there is none by that name. */
const struct bench_proto *bench_proto_find(const char *name);

#endif
