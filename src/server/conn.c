/*
 * conn.c -- a connection's input beyond the request line: values read
 * into their item (CONN_NREAD), values skipped (CONN_SWALLOW), and the
 * read-ahead that hashes the keys of pipelined requests before they run.
 *
 *   dispatch*.c: conn_nread_begin() / conn_swallow() / conn_next_key()
 *   worker.c:    conn_nread_rbuf(), conn_nread_direct(), conn_swallow_rbuf(),
 *                conn_prefetch(), conn_pf_forget()
 *
 * Values are read straight into their item: from rbuf, or for a large
 * one by readv() into the item itself (net's read_direct), so a megabyte
 * value is not copied twice.  This file calls the engine and the text
 * codec only, never a dispatcher: the dispatchers start a value here, and
 * the parse loop (worker.c) finishes it and calls them back.
 */
#include <string.h>
#include <sys/uio.h>

#include "core/sys.h"
#include "server/conn.h"
#include "server/ctx.h"

/*
 * The bytes of c's rbuf are about to move or change: rescan for the
 * read-ahead, and forget the hashes it keeps for keys in there.
 */
void conn_pf_forget(struct conn *c) {
    c->pf_end = 0;
    if (c->ctx->pf.pf_conn == c)
        c->ctx->pf.pf_conn = NULL;
}

/*
 * Starts reading a value of vlen bytes straight into it (CONN_NREAD).  A
 * text or meta value must be followed by "\r\n"; a binary one is not, so
 * its terminator counts as already read.
 */
void conn_nread_begin(struct conn *c, struct item *it, uint32_t vlen, bool terminated) {
    c->nitem = it;
    c->ndone = 0;
    c->nlen = vlen;
    c->ncrlf[0] = '\r';
    c->ncrlf[1] = '\n';
    c->ncrlf_done = terminated ? 0 : 2;
    c->net.read_direct = true;
    conn_set_state(c, CONN_NREAD);
}

/* Skips the next n bytes of input (a value that will not be stored). */
void conn_swallow(struct conn *c, uint64_t n) {
    c->swallow = n;
    c->mc_flush = false;            /* memcached writes nothing while it swallows */
    conn_set_state(c, CONN_SWALLOW);
}

/*
 * Copies value bytes from rbuf into the item being read, then the two
 * bytes that must be "\r\n".  Returns true once the value is complete.
 */
bool conn_nread_rbuf(struct conn *c) {
    struct iovec *iov = c->ctx->iov;
    int n = engine_item_iov(c->nitem, iov, c->ctx->iov_max);
    size_t off = 0;
    for (int i = 0; i < n && c->ndone < c->nlen && c->net.rstart < c->net.rend; i++) {
        size_t len = iov[i].iov_len;
        if (c->ndone >= off + len) {
            off += len;
            continue;
        }
        size_t at = c->ndone - off;
        size_t take = len - at;
        size_t avail = c->net.rend - c->net.rstart;
        if (take > avail)
            take = avail;
        memcpy((char *)iov[i].iov_base + at, c->net.rbuf + c->net.rstart, take);
        c->net.rstart += take;
        c->ndone += take;
        off += len;
    }
    while (c->ndone == c->nlen && c->ncrlf_done < 2 && c->net.rstart < c->net.rend)
        c->ncrlf[c->ncrlf_done++] = c->net.rbuf[c->net.rstart++];
    return c->ndone == c->nlen && c->ncrlf_done == 2;
}

/*
 * Reads the rest of a large value straight into the item (and its
 * terminator into ncrlf), skipping rbuf, so a megabyte value is not
 * copied twice.  Returns bytes read, 0 on EOF, -1 on error/EAGAIN.
 */
ssize_t conn_nread_direct(struct conn *c) {
    struct iovec *iov = c->ctx->iov;
    int n = engine_item_iov(c->nitem, iov, c->ctx->iov_max);
    int k = 0;
    size_t off = 0;
    struct iovec rv[65];
    int i = 0;
    for (; i < n && k < 64; i++) {
        size_t len = iov[i].iov_len;
        if (c->ndone < off + len) {
            size_t at = c->ndone > off ? c->ndone - off : 0;
            rv[k++] = (struct iovec){(char *)iov[i].iov_base + at, len - at};
        }
        off += len;
    }
    if (i == n)     /* the whole rest of the value is covered: the terminator follows */
        rv[k++] = (struct iovec){c->ncrlf + c->ncrlf_done, 2 - c->ncrlf_done};
    ssize_t r = sys_readv(c->net.fd, rv, k);
    if (r <= 0)
        return r == 0 ? 0 : -1;
    size_t got = (size_t)r;
    size_t v = c->nlen - c->ndone;
    if (got <= v) {
        c->ndone += got;
    } else {
        c->ndone = c->nlen;
        c->ncrlf_done += got - v;
    }
    return r;
}

/*
 * Drops what rbuf holds of the value being swallowed.  Returns true once
 * all of it is gone (the caller then goes back to CONN_PARSE).
 */
bool conn_swallow_rbuf(struct conn *c) {
    size_t avail = c->net.rend - c->net.rstart;
    size_t take = avail < c->swallow ? avail : (size_t)c->swallow;
    c->net.rstart += take;
    c->swallow -= take;
    return c->swallow == 0;
}

/*
 * Read-ahead for pipelined text requests: the keys of the get/gets/set
 * lines waiting in rbuf (mc_text_scan_keys()) are hashed and the engine
 * starts loading their buckets and items all at once, so the requests then
 * find them in cache.  Each line is scanned once (pf_end).  Only a hint: a
 * line read wrong costs a wasted prefetch, nothing else.
 */
void conn_prefetch(struct conn *c) {
    if (c->pf_end > c->net.rstart)
        return;
    struct mc_ctx *x = c->ctx;
    struct conn_readahead *ra = &x->pf;
    ra->pf_conn = NULL;
    /* One line of one word or two ("get <key>") and nothing after it: nothing to overlap. */
    const char *p = c->net.rbuf + c->net.rstart;
    const char *nl = memchr(p, '\n', c->net.rend - c->net.rstart);
    if (nl != NULL && nl + 1 == c->net.rbuf + c->net.rend) {
        const char *sp = memchr(p, ' ', (size_t)(nl - p));
        if (sp == NULL || memchr(sp + 1, ' ', (size_t)(nl - sp - 1)) == NULL) {
            c->pf_end = c->net.rend;
            return;
        }
    }
    struct mc_span key[PREFETCH_KEYS];
    size_t used;
    uint64_t stores;
    unsigned n = mc_text_scan_keys(p, c->net.rend - c->net.rstart, key, PREFETCH_KEYS, &stores, &used);
    /* Scanned up to there; when nothing could be, just past rstart. */
    c->pf_end = c->net.rstart + used + (used == 0);
    if (n < 2) {            /* one request: only a store has work to overlap */
        if (n == 1 && stores != 0)
            engine_prefetch_one(x->engine, engine_key_hash(key[0].p, key[0].len));
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        ra->pf_key[i] = key[i].p;
        ra->pf_len[i] = (uint8_t)key[i].len;     /* <= MC_KEY_MAX */
        ra->pf_hv[i] = engine_key_hash(key[i].p, key[i].len);
    }
    ra->pf_conn = c;
    ra->pf_n = n;
    ra->pf_i = 0;
    engine_prefetch(x->engine, ra->pf_hv, n, stores);
}

/*
 * The keys come in the order the read-ahead found them, so the one for a
 * key starting at p is at or after pf_i.  It is taken only if it is that
 * whole word of the line: it starts at p and ends where [p, end) has a
 * space or ends (the read-ahead split the same bytes at the same spaces,
 * but may have seen a longer line: memcached ends a line at a NUL).
 */
bool conn_next_key(struct conn *c, struct mc_span *rest, struct mc_span *key, uint64_t *hv) {
    struct conn_readahead *ra = &c->ctx->pf;
    const char *p = rest->p, *end = p + rest->len;
    while (p < end && *p == ' ')
        p++;
    if (p < end && ra->pf_conn == c) {
        while (ra->pf_i < ra->pf_n && (uintptr_t)ra->pf_key[ra->pf_i] < (uintptr_t)p)
            ra->pf_i++;
        size_t len = ra->pf_i < ra->pf_n ? ra->pf_len[ra->pf_i] : 0;
        if (len > 0 && ra->pf_key[ra->pf_i] == p && len <= (size_t)(end - p) &&
            (len == (size_t)(end - p) || p[len] == ' ')) {
            *key = (struct mc_span){p, len};
            *hv = ra->pf_hv[ra->pf_i++];
            rest->p = p + len;
            rest->len = (size_t)(end - rest->p);
            return true;
        }
    }
    if (!mc_text_next_key(rest, key))
        return false;
    *hv = engine_key_hash(key->p, key->len);
    return true;
}

