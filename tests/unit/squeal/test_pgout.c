/*
 * test_pgout.c -- cellar-squeal's decoding of PostgreSQL's replication
 * messages: CopyData 'w' and 'k', pgoutput B, M and C (byte layouts from
 * PostgreSQL 15's protocol documentation), cut at every length; the keys
 * of a message's content; the status update's bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "squeal/pgout.h"

static size_t put64(char *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (char)(v & 0xff);
    return 8;
}

static size_t put32(char *p, uint32_t v) {
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (char)(v & 0xff);
    return 4;
}

/* An XLogData around payload. */
static size_t xlog(char *out, uint64_t start, uint64_t end, const char *payload, size_t n) {
    size_t at = 0;
    out[at++] = 'w';
    at += put64(out + at, start);
    at += put64(out + at, end);
    at += put64(out + at, 12345);
    memcpy(out + at, payload, n);
    return at + n;
}

static size_t msg_m(char *out, bool tx, uint64_t lsn, const char *prefix, const char *content,
                    size_t ncontent) {
    size_t at = 0;
    out[at++] = 'M';
    out[at++] = tx ? 1 : 0;
    at += put64(out + at, lsn);
    memcpy(out + at, prefix, strlen(prefix) + 1);
    at += strlen(prefix) + 1;
    at += put32(out + at, (uint32_t)ncontent);
    memcpy(out + at, content, ncontent);
    return at + ncontent;
}

TEST(copy_data_and_keepalive) {
    char buf[64], pay[] = "B123456789012345678901";
    size_t n = xlog(buf, 0x10, 0x20, pay, 21);
    struct pg_copy cp;
    ASSERT_EQ(pg_copy_parse(buf, n, &cp), 0);
    ASSERT_EQ(cp.kind, 'w');
    ASSERT_U64(cp.wal_start, 0x10);
    ASSERT_U64(cp.wal_end, 0x20);
    ASSERT_EQ(cp.npayload, 21);
    ASSERT(cp.payload == buf + 25);
    for (size_t cut = 0; cut < 25; cut++)
        ASSERT_EQ(pg_copy_parse(buf, cut, &cp), -1);
    char k[18] = {'k'};
    put64(k + 1, 0x0000000100000abcULL);
    put64(k + 9, 1);
    k[17] = 1;
    ASSERT_EQ(pg_copy_parse(k, 18, &cp), 0);
    ASSERT_EQ(cp.kind, 'k');
    ASSERT_U64(cp.wal_end, 0x0000000100000abcULL);
    ASSERT(cp.reply_requested);
    k[17] = 0;
    ASSERT_EQ(pg_copy_parse(k, 18, &cp), 0);
    ASSERT(!cp.reply_requested);
    ASSERT_EQ(pg_copy_parse(k, 17, &cp), -1);
    ASSERT_EQ(pg_copy_parse("x", 1, &cp), -1);
}

TEST(begin_message_commit) {
    char b[21] = {'B'};
    put64(b + 1, 0x1505300);
    put64(b + 9, 777);
    put32(b + 17, 727);
    struct pgo_msg m;
    ASSERT_EQ(pgo_parse(b, 21, &m), 0);
    ASSERT_EQ(m.kind, 'B');
    ASSERT_U64(m.lsn, 0x1505300);
    ASSERT_EQ(m.xid, 727);
    ASSERT(m.ts == 777);
    for (size_t cut = 0; cut < 21; cut++)
        ASSERT_EQ(pgo_parse(b, cut, &m), -1);

    char c[26] = {'C', 0};
    put64(c + 2, 0x1505300);
    put64(c + 10, 0x1505330);
    put64(c + 18, 777);
    ASSERT_EQ(pgo_parse(c, 26, &m), 0);
    ASSERT_EQ(m.kind, 'C');
    ASSERT_U64(m.lsn, 0x1505300);
    ASSERT_U64(m.end_lsn, 0x1505330);
    ASSERT(m.ts == 777);
    for (size_t cut = 0; cut < 26; cut++)
        ASSERT_EQ(pgo_parse(c, cut, &m), -1);

    char mm[64];
    size_t n = msg_m(mm, true, 0x15052c0, "squeal", "user:1 user:2", 13);
    ASSERT_EQ(pgo_parse(mm, n, &m), 0);
    ASSERT_EQ(m.kind, 'M');
    ASSERT(m.transactional);
    ASSERT_U64(m.lsn, 0x15052c0);
    ASSERT_STR(m.prefix, "squeal");
    ASSERT_EQ(m.ncontent, 13);
    ASSERT_MEM(m.content, "user:1 user:2", 13);
    for (size_t cut = 0; cut < n; cut++)
        ASSERT_EQ(pgo_parse(mm, cut, &m), -1);
    mm[n] = 'x';                        /* a byte past what the length says */
    ASSERT_EQ(pgo_parse(mm, n + 1, &m), -1);
    n = msg_m(mm, false, 1, "", "", 0);
    ASSERT_EQ(pgo_parse(mm, n, &m), 0);
    ASSERT(!m.transactional);
    ASSERT_STR(m.prefix, "");
    ASSERT_EQ(m.ncontent, 0);

    ASSERT_EQ(pgo_parse("R\0\0", 3, &m), 0);  /* another kind: its letter only */
    ASSERT_EQ(m.kind, 'R');
    ASSERT_EQ(pgo_parse("", 0, &m), -1);
}

TEST(keys_of_a_content) {
    char long_key[300];
    memset(long_key, 'x', sizeof(long_key));
    char content[700];
    int n = snprintf(content, sizeof(content), "  a:1\tb:2\n\n%.*s bad\001key %.*s c:3 ", 251,
                     long_key, 250, long_key);
    size_t pos = 0, nk;
    const char *k;
    bool bad;
    const char *want[] = {"a:1", "b:2", NULL, NULL, "X250", "c:3"};
    for (int i = 0; i < 6; i++) {
        ASSERT_EQ(pgo_next_key(content, (size_t)n, &pos, &k, &nk, &bad), 1);
        if (want[i] == NULL) {
            ASSERT(bad);
            ASSERT_EQ(nk, 0);
        } else if (strcmp(want[i], "X250") == 0) {
            ASSERT(!bad);
            ASSERT_EQ(nk, 250);
        } else {
            ASSERT(!bad);
            ASSERT_EQ(nk, strlen(want[i]));
            ASSERT_MEM(k, want[i], nk);
        }
    }
    ASSERT_EQ(pgo_next_key(content, (size_t)n, &pos, &k, &nk, &bad), 0);
    pos = 0;
    ASSERT_EQ(pgo_next_key("   ", 3, &pos, &k, &nk, &bad), 0);
    pos = 0;
    ASSERT_EQ(pgo_next_key("", 0, &pos, &k, &nk, &bad), 0);
}

TEST(status_update_and_lsn) {
    char out[34];
    ASSERT_EQ(pg_status_update(out, 0x0102030405060708ULL, 0x10, 0x20, 0x30, true), 34);
    ASSERT_EQ(out[0], 'r');
    ASSERT_MEM(out + 1, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    ASSERT_MEM(out + 9, "\0\0\0\0\0\0\0\x10", 8);
    ASSERT_MEM(out + 17, "\0\0\0\0\0\0\0\x20", 8);
    ASSERT_MEM(out + 25, "\0\0\0\0\0\0\0\x30", 8);
    ASSERT_EQ(out[33], 1);
    ASSERT(pg_time_from_unix_us(946684800000000LL) == 0);
    char s[20];
    pg_lsn_str(0x1505330, s);
    ASSERT_STR(s, "0/1505330");
    pg_lsn_str(0x00000002000000ffULL, s);
    ASSERT_STR(s, "2/FF");
}

TEST(snapshot_running) {
    /* older than xmin: done; xmin..xmax: running only when listed; xmax on: running */
    ASSERT_EQ(pg_snapshot_running("750:760:", 749), 0);
    ASSERT_EQ(pg_snapshot_running("750:760:", 755), 0);
    ASSERT_EQ(pg_snapshot_running("750:760:", 760), 1);
    ASSERT_EQ(pg_snapshot_running("750:760:", 900), 1);
    ASSERT_EQ(pg_snapshot_running("750:760:750,757", 750), 1);
    ASSERT_EQ(pg_snapshot_running("750:760:750,757", 757), 1);
    ASSERT_EQ(pg_snapshot_running("750:760:750,757", 756), 0);
    ASSERT_EQ(pg_snapshot_running("750:760:750,757", 700), 0);
    /* 64-bit ids of a later epoch: compared by their low 32 bits, modulo 2^32 */
    ASSERT_EQ(pg_snapshot_running("4294967296001:4294967296010:4294967296005", 5), 1);
    ASSERT_EQ(pg_snapshot_running("4294967296001:4294967296010:4294967296005", 6), 0);
    ASSERT_EQ(pg_snapshot_running("4294967296001:4294967296010:", 0), 0);
    /* an xmin just before the wrap, an xid just after it */
    ASSERT_EQ(pg_snapshot_running("4294967290:4294967300:4294967297", 1), 1);
    ASSERT_EQ(pg_snapshot_running("4294967290:4294967300:4294967297", 2), 0);
    ASSERT_EQ(pg_snapshot_running("4294967290:4294967300:4294967297", 0xfffffff0u), 0);
    const char *bad[] = {"", "750", "750:760", "750:760:x", "750:760:751,", "750:760:751;752",
                         ":760:", "750::", "99999999999999999999999:1:"};
    uint32_t xmin = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ASSERT_EQ(pg_snapshot_running(bad[i], 751), -1);
        ASSERT_EQ(pg_snapshot_xmin(bad[i], &xmin), -1);
    }
    ASSERT_EQ(pg_snapshot_xmin("750:760:751", &xmin), 0);
    ASSERT_EQ(xmin, 750);
    ASSERT_EQ(pg_snapshot_xmin("4294967296001:4294967296010:", &xmin), 0);
    ASSERT_EQ(xmin, 1);
}

int main(void) { return RUN_TESTS(); }
