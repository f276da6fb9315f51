/*
 * pgout.c -- PostgreSQL's replication CopyData and pgoutput messages
 * (pgout.h): big-endian fields read with bounds checks, nothing else.
 */
#include "squeal/pgout.h"

#include <stdio.h>
#include <string.h>

#define KEY_MAX 250
#define EPOCH_2000_US 946684800000000LL   /* 2000-01-01 in unix microseconds */

static uint64_t be64(const char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (unsigned char)p[i];
    return v;
}

static uint32_t be32(const char *p) {
    return (uint32_t)(unsigned char)p[0] << 24 | (uint32_t)(unsigned char)p[1] << 16 |
           (uint32_t)(unsigned char)p[2] << 8 | (uint32_t)(unsigned char)p[3];
}

static void put64(char *p, uint64_t v) {
    for (int i = 7; i >= 0; i--) {
        p[i] = (char)(v & 0xff);
        v >>= 8;
    }
}

int pg_copy_parse(const char *buf, size_t n, struct pg_copy *out) {
    memset(out, 0, sizeof(*out));
    if (n < 1)
        return -1;
    out->kind = buf[0];
    if (buf[0] == 'w') {                /* 'w' start(8) end(8) time(8) payload */
        if (n < 25)
            return -1;
        out->wal_start = be64(buf + 1);
        out->wal_end = be64(buf + 9);
        out->payload = buf + 25;
        out->npayload = n - 25;
        return 0;
    }
    if (buf[0] == 'k') {                /* 'k' end(8) time(8) reply(1) */
        if (n < 18)
            return -1;
        out->wal_end = be64(buf + 1);
        out->reply_requested = buf[17] != 0;
        return 0;
    }
    return -1;
}

int pgo_parse(const char *p, size_t n, struct pgo_msg *out) {
    memset(out, 0, sizeof(*out));
    if (n < 1)
        return -1;
    out->kind = p[0];
    switch (p[0]) {
    case 'B':                           /* final_lsn(8) commit_ts(8) xid(4) */
        if (n < 21)
            return -1;
        out->lsn = be64(p + 1);
        out->ts = (int64_t)be64(p + 9);
        out->xid = be32(p + 17);
        return 0;
    case 'C':                           /* flags(1) commit_lsn(8) end_lsn(8) ts(8) */
        if (n < 26)
            return -1;
        out->lsn = be64(p + 2);
        out->end_lsn = be64(p + 10);
        out->ts = (int64_t)be64(p + 18);
        return 0;
    case 'M': {                         /* flags(1) lsn(8) prefix\0 len(4) content */
        if (n < 10)
            return -1;
        out->transactional = (p[1] & 1) != 0;
        out->lsn = be64(p + 2);
        const char *pre = p + 10, *nul = memchr(pre, '\0', n - 10);
        if (nul == NULL || (size_t)(p + n - (nul + 1)) < 4)
            return -1;
        uint32_t len = be32(nul + 1);
        const char *content = nul + 5;
        if ((size_t)(p + n - content) != len)
            return -1;
        out->prefix = pre;
        out->content = content;
        out->ncontent = len;
        return 0;
    }
    default:
        return 0;
    }
}

static bool is_sep(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int pgo_next_key(const char *content, size_t n, size_t *pos, const char **key, size_t *nkey,
                 bool *bad) {
    size_t i = *pos;
    while (i < n && is_sep(content[i]))
        i++;
    if (i >= n) {
        *pos = n;
        return 0;
    }
    size_t start = i;
    bool ok = true;
    while (i < n && !is_sep(content[i])) {
        unsigned char c = (unsigned char)content[i];
        if (c < 0x20 || c == 0x7f)
            ok = false;
        i++;
    }
    *pos = i;
    *bad = !ok || i - start > KEY_MAX;
    *key = content + start;
    *nkey = *bad ? 0 : i - start;
    return 1;
}

/* One id of a snapshot's text at *p, then past it; false when there is none. */
static bool snap_id(const char **p, uint32_t *out) {
    const char *q = *p;
    uint64_t v = 0;
    if (*q < '0' || *q > '9')
        return false;
    for (; *q >= '0' && *q <= '9'; q++) {
        if (v > UINT64_MAX / 10)
            return false;
        v = v * 10 + (uint64_t)(*q - '0');
    }
    *out = (uint32_t)v;             /* the low 32 bits: what an xid in the stream carries */
    *p = q;
    return true;
}

int pg_snapshot_running(const char *text, uint32_t xid) {
    const char *p = text;
    uint32_t xmin, xmax, x;
    if (!snap_id(&p, &xmin) || *p++ != ':' || !snap_id(&p, &xmax) || *p++ != ':')
        return -1;
    int running = (int32_t)(xid - xmax) >= 0;
    if (*p == '\0')
        return (int32_t)(xid - xmin) < 0 ? 0 : running;
    for (;;) {
        if (!snap_id(&p, &x))
            return -1;
        running |= x == xid;
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return -1;
    }
    return (int32_t)(xid - xmin) < 0 ? 0 : running;
}

int pg_snapshot_xmin(const char *text, uint32_t *xmin) {
    return pg_snapshot_running(text, 0) < 0 || !snap_id(&text, xmin) ? -1 : 0;
}

size_t pg_status_update(char out[34], uint64_t write, uint64_t flush, uint64_t apply,
                        int64_t now_us_since_2000, bool reply) {
    out[0] = 'r';
    put64(out + 1, write);
    put64(out + 9, flush);
    put64(out + 17, apply);
    put64(out + 25, (uint64_t)now_us_since_2000);
    out[33] = reply ? 1 : 0;
    return 34;
}

int64_t pg_time_from_unix_us(int64_t unix_us) {
    return unix_us - EPOCH_2000_US;
}

void pg_lsn_str(uint64_t lsn, char out[20]) {
    snprintf(out, 20, "%X/%X", (unsigned)(lsn >> 32), (unsigned)(lsn & 0xffffffffu));
}
