/*
 * dump.c -- `lru_crawler metadump`: one line per live item, streamed.
 *
 * memcached hands the connection to its crawler thread, which writes the
 * lines itself.  Here the connection stays with its worker: while c->dump
 * is set, conn_process() calls dump_fill() instead of parsing, and each
 * call walks a slice of the hash table (engine_dump_step()) into the
 * output; the worker sends it like any reply, waits for the socket when it
 * is full and serves its other connections in between.  A dump therefore
 * buffers at most a slice or two, however many items there are.  When the
 * walk is complete, "END" follows and the requests that came after the
 * metadump line are read.
 *
 * The lines are memcached's: key (URI-encoded), exp (unix time, -1 for
 * never), la (last access, unix time), cas, fetch, cls and size (cellard's
 * own item size).  Differences: the walk is in hash order for every form
 * (memcached walks each class's LRU for a class list or "all"), and
 * several dumps may run at once (memcached answers BUSY).  As memcached, a
 * dump that follows pipelined requests whose replies still wait answers
 * "ERROR cannot pipeline other commands before metadump" (dispatch.c).
 *
 * `stats cachedump <class> <limit>` is here too: the same walk, done at
 * once and cut at limit lines (0: no limit) or 2 MB, as memcached cuts it.
 * memcached lists only the newest (HOT) part of the class's LRU, newest
 * first; cellard lists the class's live items in hash order.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/mc_num.h"
#include "protocol/mc_uri.h"
#include "server/conn.h"
#include "server/ctx.h"
#include "server/dump.h"

#define DUMP_STEP 64                /* buckets and items per engine_dump_step() */
#define DUMP_STEPS 64               /* steps per dump_fill() at most */
#define DUMP_SLICE (64u << 10)      /* output bytes per dump_fill() */
#define DUMP_LINE_MAX (3 * ENGINE_KEY_MAX + 160)
#define CACHEDUMP_MAX (2u << 20)    /* memcached's cap on a cachedump's reply */

struct dump {
    uint64_t cursor;                /* engine_dump_step()'s */
    uint64_t classes;               /* bit i: dump slab class i */
};

/*
 * memcached's class list: "all", "hash", or class ids separated by commas
 * (empty pieces skipped), each read as safe_strtoul reads it and in
 * 1..63.  Sets *set (bit i: class i; 0 when only commas) and returns true,
 * or returns false for a bad id.
 */
bool dump_classes(const char *p, size_t len, uint64_t *set) {
    *set = 0;
    if ((len == 3 && memcmp(p, "all", 3) == 0) || (len == 4 && memcmp(p, "hash", 4) == 0)) {
        *set = ~(uint64_t)1;
        return true;
    }
    const char *end = p + len;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma != NULL ? comma : end;
        uint64_t id;
        if (stop > p) {
            if (!mc_num_u64(p, (size_t)(stop - p), &id) || id < 1 || id >= ENGINE_MAX_CLASSES)
                return false;
            *set |= (uint64_t)1 << id;
        }
        p = stop + (comma != NULL);
    }
    return true;
}

const char *dump_start(struct conn *c, const char *arg, size_t len) {
    uint64_t classes;
    if (!dump_classes(arg, len, &classes))
        return "BADCLASS invalid class id\r\n";
    if (classes == 0)
        return "NOTSTARTED no items to crawl\r\n";
    struct dump *d = malloc(sizeof(*d));
    if (d == NULL)
        return "SERVER_ERROR out of memory\r\n";
    d->classes = classes;
    engine_dump_begin(c->ctx->engine, &d->cursor);
    c->dump = d;
    conn_set_state(c, CONN_DUMP);
    return NULL;
}

void dump_free(struct conn *c) {
    if (c->dump == NULL)
        return;
    engine_dump_end(c->ctx->engine);
    free(c->dump);
    c->dump = NULL;
    conn_set_state(c, CONN_PARSE);
}

static void dump_line(const struct engine_dump_item *it, void *arg) {
    struct conn *c = arg;
    if (((c->dump->classes >> it->clsid) & 1) == 0)
        return;
    char *p = out_reserve(&c->net.out, DUMP_LINE_MAX);
    if (p == NULL)
        return;                     /* no memory: the line is lost, as in memcached */
    char *q = mc_uri_encode(memcpy(p, "key=", 4) + 4, it->key, it->nkey);
    q += snprintf(q, DUMP_LINE_MAX - (size_t)(q - p),
                  " exp=%" PRId64 " la=%" PRId64 " cas=%" PRIu64 " fetch=%s cls=%u size=%" PRIu64
                  "\n",
                  it->exptime != 0 ? it->exptime : -1, it->atime, it->cas,
                  it->fetched ? "yes" : "no", it->clsid, it->ntotal);
    out_commit(&c->net.out, p, (size_t)(q - p));
}

void dump_fill(struct conn *c) {
    struct engine *e = c->ctx->engine;
    size_t start = c->net.out.bytes;
    for (int i = 0; i < DUMP_STEPS && c->net.out.bytes - start < DUMP_SLICE; i++) {
        if (!engine_dump_step(e, &c->dump->cursor, DUMP_STEP, dump_line, c)) {
            dump_free(c);
            out_copy(&c->net.out, S("END\r\n"));
            return;
        }
    }
}

struct cachedump {
    struct conn *c;
    unsigned clsid;
    uint64_t limit, shown;
    size_t bytes;
    bool full;
};

static void cachedump_line(const struct engine_dump_item *it, void *arg) {
    struct cachedump *cd = arg;
    if (it->clsid != cd->clsid || cd->full)
        return;
    char line[ENGINE_KEY_MAX + 64];
    int n = snprintf(line, sizeof(line), "ITEM %.*s [%" PRIu32 " b; %" PRId64 " s]\r\n",
                     (int)it->nkey, it->key, it->nbytes, it->exptime);
    if (cd->bytes + (size_t)n + 5 > CACHEDUMP_MAX) {
        cd->full = true;
        return;
    }
    out_copy(&cd->c->net.out, line, (size_t)n);
    cd->bytes += (size_t)n;
    cd->full = ++cd->shown == cd->limit;
}

void dump_cachedump(struct conn *c, const struct mc_req *req) {
    struct engine *e = c->ctx->engine;
    uint64_t id, limit;
    if (!c->ctx->cfg->dump_enabled) {
        out_copy(&c->net.out, S("CLIENT_ERROR stats cachedump not allowed\r\n"));
    } else if (req->ntokens < 4) {
        out_copy(&c->net.out, S("CLIENT_ERROR bad command line\r\n"));
    } else if (!mc_num_u64(req->tok[2].p, req->tok[2].len, &id) || id > UINT32_MAX ||
               !mc_num_u64(req->tok[3].p, req->tok[3].len, &limit) || limit > UINT32_MAX) {
        out_copy(&c->net.out, S("CLIENT_ERROR bad command line format\r\n"));
    } else if (id >= ENGINE_MAX_CLASSES) {
        out_copy(&c->net.out, S("CLIENT_ERROR Illegal slab id\r\n"));
    } else {
        struct cachedump cd = {.c = c, .clsid = (unsigned)id, .limit = limit};
        uint64_t cursor;
        engine_dump_begin(e, &cursor);
        while (!cd.full && engine_dump_step(e, &cursor, DUMP_STEP, cachedump_line, &cd))
            ;
        engine_dump_end(e);
        out_copy(&c->net.out, S("END\r\n"));
    }
}
