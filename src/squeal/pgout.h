/*
 * pgout.h -- what cellar-squeal reads from and writes to PostgreSQL's
 * logical replication stream, as pure functions over buffers (no I/O).
 *
 *   CopyData from the server                 pgoutput payload (proto_version 1)
 *   'w' start end time | payload  ------->   'B' final_lsn commit_ts xid
 *   'k' end time reply                       'M' flags lsn prefix\0 len content
 *                                            'C' flags commit_lsn end_lsn ts
 *   CopyData to the server                   (R I U D T Y O ...: other kinds,
 *   'r' write flush apply time reply          reported by their letter)
 *
 * All integers are big-endian.  A message's content is the text a writer
 * passed to pg_logical_emit_message(true, prefix, content): keys separated
 * by spaces, tabs or newlines.  Facts from PostgreSQL 15's "Streaming
 * Replication Protocol" and "Logical Replication Message Formats".
 */
#ifndef CELLAR_SQUEAL_PGOUT_H
#define CELLAR_SQUEAL_PGOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A CopyData message from the walsender. */
struct pg_copy {
    char kind;                      /* 'w' XLogData, 'k' keepalive */
    uint64_t wal_start;             /* 'w' */
    uint64_t wal_end;               /* both: the server's WAL end */
    bool reply_requested;           /* 'k': answer with a status update now */
    const char *payload;            /* 'w': the pgoutput message */
    size_t npayload;
};

/* 0, or -1 when buf is not a whole 'w' or 'k' message. */
int pg_copy_parse(const char *buf, size_t n, struct pg_copy *out);

/* One pgoutput message. */
struct pgo_msg {
    char kind;                      /* 'B', 'M', 'C', or another letter (not read further) */
    uint64_t lsn;                   /* B: the commit's LSN; M: the message's; C: commit LSN */
    uint64_t end_lsn;               /* C: the transaction's end: what progress is counted by */
    uint32_t xid;                   /* B */
    int64_t ts;                     /* B, C: the commit's time, µs since 2000-01-01 */
    bool transactional;             /* M */
    const char *prefix;             /* M: NUL-terminated inside the payload */
    const char *content;            /* M */
    size_t ncontent;
};

/* 0, or -1 when a B, M or C is cut short or malformed (other kinds: 0, kind set). */
int pgo_parse(const char *p, size_t n, struct pgo_msg *out);

/*
 * The next key of a message's content from *pos: 1 with it in *key and *nkey;
 * 1 with *nkey 0 and *bad set for a word that is no memcache key (longer
 * than 250 bytes, or with a control byte), skipped; 0 at the end.
 */
int pgo_next_key(const char *content, size_t n, size_t *pos, const char **key, size_t *nkey,
                 bool *bad);

/*
 * Is transaction xid (the 32 bits a 'B' carries) still running in a
 * snapshot, as pg_current_snapshot() prints it: "xmin:xmax:xip,xip,..."
 * with 64-bit ids?  1 running (xid >= xmax, or in the xip list), 0 not
 * (committed or aborted: its effects are visible to that snapshot or
 * never will be), -1 when text is no snapshot.  Ids are compared modulo
 * 2^32, as PostgreSQL compares them, so the answer holds for an xid
 * within 2^31 of the snapshot's.
 */
int pg_snapshot_running(const char *text, uint32_t xid);

/* The snapshot's xmin (low 32 bits): every xid before it has ended.  0, or -1 as above. */
int pg_snapshot_xmin(const char *text, uint32_t *xmin);

/* A standby status update ('r', 34 bytes) into out. */
size_t pg_status_update(char out[34], uint64_t write, uint64_t flush, uint64_t apply,
                        int64_t now_us_since_2000, bool reply);

/* Microseconds since 2000-01-01 UTC, the protocol's clock, for a unix time in µs. */
int64_t pg_time_from_unix_us(int64_t unix_us);

/* "X/Y" as PostgreSQL writes an LSN; out needs 20 bytes. */
void pg_lsn_str(uint64_t lsn, char out[20]);

#endif
