/*
 * proto_text.c -- cellar-bench over memcached's text protocol.
 *
 * A get is "get k1 k2 ...", answered by a VALUE element per hit and END; a
 * set is "set k 0 0 n" with its data, answered by one status line.  Both
 * are read with the client-side codec (protocol/mc_text_resp).
 */
#include <string.h>

#include "protocol/mc_text_resp.h"
#include "tools/bench/proto.h"

static size_t text_fmt_get(char *out, size_t cap, const struct mc_span *keys, size_t nkeys) {
    return mc_text_fmt_get(out, cap, MC_CMD_GET, keys, nkeys);
}

static size_t text_fmt_set(char *out, size_t cap, struct mc_span key, uint32_t vlen) {
    return mc_text_fmt_store(out, cap, MC_CMD_SET, key, 0, 0, vlen, 0, false);
}

/*
 * Walks the reply's elements from its start: VALUEs count as hits until
 * END; any single status line ends a set's reply (and a get's, when it is
 * an error).  An incomplete element anywhere makes the whole reply wait.
 */
static enum mc_parse text_parse_reply(const struct bench_req *req, const char *buf, size_t len,
                                      size_t *consumed, struct bench_reply *r, size_t *need) {
    size_t off = 0;
    uint32_t hits = 0;
    *need = 0;
    for (;;) {
        struct mc_resp e;
        size_t n = 0;
        enum mc_parse rc = mc_text_parse_resp(&e, buf + off, len - off, &n);
        if (rc == MC_PARSE_NEED_MORE) {
            if (e.need)
                *need = off + e.need;
            return rc;
        }
        if (rc != MC_PARSE_OK)
            return rc;
        off += n;
        switch (e.kind) {
        case MC_RESP_VALUE:
            if (req->op != BENCH_GET)
                return MC_PARSE_ERROR;
            hits++;
            continue;
        case MC_RESP_END:
            if (req->op != BENCH_GET)
                return MC_PARSE_ERROR;
            r->hits = hits;
            r->error = false;
            break;
        case MC_RESP_STORED:
            if (req->op != BENCH_SET || hits)
                return MC_PARSE_ERROR;
            r->hits = 0;
            r->error = false;
            break;
        case MC_RESP_NOT_STORED:
        case MC_RESP_ERROR:
        case MC_RESP_CLIENT_ERROR:
        case MC_RESP_SERVER_ERROR:
            r->hits = hits;
            r->error = true;
            break;
        default:
            return MC_PARSE_ERROR;
        }
        *consumed = off;
        return MC_PARSE_OK;
    }
}

const struct bench_proto bench_proto_text = {
    .name = "text",
    .fmt_get = text_fmt_get,
    .fmt_set = text_fmt_set,
    .set_trailer = "\r\n",
    .set_trailer_len = 2,
    .parse_reply = text_parse_reply,
};

const struct bench_proto *bench_proto_find(const char *name) {
    static const struct bench_proto *const all[] = {
        &bench_proto_text,
        &bench_proto_meta,
        &bench_proto_binary,
    };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}
