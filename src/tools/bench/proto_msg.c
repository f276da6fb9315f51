/*
 * proto_msg.c -- cellar-bench over the meta and binary protocols, through
 * the client library's wires (protocol/msg.h): the very bytes libcellar
 * sends and the very parser it reads replies with.
 *
 * A get of n keys is n single gets written back to back (mg k v f, or
 * binary GET), answered one reply each in order; a set is one set.  The
 * text protocol keeps its own file (proto_text.c): its get of n keys is
 * one "get k1 k2 ..." line, which the wires have no form for.
 */
#include "protocol/msg.h"
#include "tools/bench/proto.h"

/* n single gets, back to back; 0 if they do not all fit. */
static size_t fmt_gets(const struct msg_wire *w, char *out, size_t cap,
                       const struct mc_span *keys, size_t nkeys) {
    size_t off = 0;
    for (size_t i = 0; i < nkeys; i++) {
        struct msg m = {.op = MSG_GET, .key = keys[i]};
        size_t n = w->fmt(out + off, cap - off, &m, 0);
        if (n == 0)
            return 0;
        off += n;
    }
    return off;
}

/* A set's request without its value: fmt reads only the value's length. */
static size_t fmt_set(const struct msg_wire *w, char *out, size_t cap, struct mc_span key,
                      uint32_t vlen) {
    struct msg m = {.op = MSG_SET, .key = key, .value = {NULL, vlen}};
    return w->fmt(out, cap, &m, 0);
}

/*
 * The replies to one bench request: nkeys gets' (hits counted) or one
 * set's.  Keys are not compared (the bench keeps no keys per request; the
 * binary wire's opaque is 0 on every request), so a reply is only checked
 * to be a reply to that op.  While incomplete: NEED_MORE, with need past
 * what is there, so a full buffer grows.
 */
static enum mc_parse parse_replies(const struct msg_wire *w, const struct bench_req *req,
                                   const char *buf, size_t len, size_t *consumed,
                                   struct bench_reply *r, size_t *need) {
    struct msg m = {.op = req->op == BENCH_GET ? MSG_GET : MSG_SET, .key = {"k", 1}};
    uint32_t n = req->op == BENCH_GET ? req->nkeys : 1;
    size_t off = 0;
    *r = (struct bench_reply){0};
    *need = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct msg_reply rep;
        size_t used = 0;
        enum mc_parse rc = w->parse(&rep, &m, 0, buf + off, len - off, &used);
        if (rc == MC_PARSE_NEED_MORE) {
            *need = len + 1;
            return rc;
        }
        if (rc != MC_PARSE_OK)
            return MC_PARSE_ERROR;
        off += used;
        r->hits += rep.res == MSG_RES_HIT;
        r->error |= rep.res != MSG_RES_HIT && rep.res != MSG_RES_MISS &&
                    rep.res != MSG_RES_STORED;
    }
    *consumed = off;
    return MC_PARSE_OK;
}

static size_t meta_fmt_get(char *out, size_t cap, const struct mc_span *keys, size_t nkeys) {
    return fmt_gets(&msg_wire_meta, out, cap, keys, nkeys);
}

static size_t meta_fmt_set(char *out, size_t cap, struct mc_span key, uint32_t vlen) {
    return fmt_set(&msg_wire_meta, out, cap, key, vlen);
}

static enum mc_parse meta_parse(const struct bench_req *req, const char *buf, size_t len,
                                size_t *consumed, struct bench_reply *r, size_t *need) {
    return parse_replies(&msg_wire_meta, req, buf, len, consumed, r, need);
}

static size_t bin_fmt_get(char *out, size_t cap, const struct mc_span *keys, size_t nkeys) {
    return fmt_gets(&msg_wire_bin, out, cap, keys, nkeys);
}

static size_t bin_fmt_set(char *out, size_t cap, struct mc_span key, uint32_t vlen) {
    return fmt_set(&msg_wire_bin, out, cap, key, vlen);
}

static enum mc_parse bin_parse(const struct bench_req *req, const char *buf, size_t len,
                               size_t *consumed, struct bench_reply *r, size_t *need) {
    return parse_replies(&msg_wire_bin, req, buf, len, consumed, r, need);
}

const struct bench_proto bench_proto_meta = {
    .name = "meta",
    .fmt_get = meta_fmt_get,
    .fmt_set = meta_fmt_set,
    .set_trailer = "\r\n",
    .set_trailer_len = 2,
    .parse_reply = meta_parse,
};

const struct bench_proto bench_proto_binary = {
    .name = "binary",
    .fmt_get = bin_fmt_get,
    .fmt_set = bin_fmt_set,
    .set_trailer = "",
    .set_trailer_len = 0,
    .parse_reply = bin_parse,
};
