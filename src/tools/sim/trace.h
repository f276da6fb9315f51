/*
 * trace.h -- request traces for cellar-sim: read from files or generated.
 *
 * A trace is an array of requests held in memory (24 bytes each), shared
 * read-only by every engine the simulator runs.  Objects are 64-bit ids;
 * the simulator turns an id into an 8-byte key.  A string key read from a
 * file becomes the hash of its bytes (ids of distinct keys collide with
 * probability about n^2 / 2^65).
 *
 * Files (format, and the name --format takes):
 *   cellar   text, one request a line: <time> <op> <key> <size> [<ttl>]
 *            op: get|gets|set|add|replace|delete; '#' starts a comment
 *   txt      libCacheSim txt: one object id a line (time = line number)
 *   csv      libCacheSim csv: columns chosen by number (1-based) for time,
 *            id and size (and ttl), a delimiter, an optional header line
 *   oracle   libCacheSim oracleGeneral binary: little-endian records of
 *            u32 time, u64 id, u32 size, i64 next access (24 bytes)
 *
 * Synthetic (spec "kind:key=value,..."; every kind takes objects=,
 * requests=, size= (bytes, or lo-hi drawn per object), rate= (requests
 * per trace second, default 10000)):
 *   zipf:alpha=A        P(rank k) ~ k^-A over the objects (inverse CDF,
 *                       as libCacheSim's generator)
 *   uniform             every object equally likely
 *   scan:alpha=A,every=N,length=L
 *                       zipf, and every N requests a scan of L requests
 *                       to fresh objects never asked for again
 *   shift:alpha=A,every=N,by=B
 *                       zipf whose ranking moves by B ids every N requests
 *                       (a hot spot that wanders; B defaults to objects/2)
 *   ttl:alpha=A,short=F,ttl=T
 *                       zipf where a fraction F of objects (by id) is
 *                       stored with a TTL of T seconds, the rest forever
 *
 * Not thread-safe while loading; read-only afterwards.
 */
#ifndef CELLAR_SIM_TRACE_H
#define CELLAR_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum trace_op {
    TRACE_GET,          /* look up; on a miss the object is stored */
    TRACE_SET,          /* store (not counted as a hit or a miss) */
    TRACE_DELETE,       /* delete (not counted) */
};

struct trace_req {
    uint64_t id;
    uint32_t time;      /* trace seconds */
    uint32_t size;      /* object size, bytes (1 when the trace has none) */
    uint32_t ttl;       /* seconds, 0 = none */
    uint8_t op;         /* enum trace_op */
};

struct trace {
    struct trace_req *req;
    size_t n, cap;
    uint64_t unique;            /* distinct ids */
    uint64_t unique_bytes;      /* sum of each distinct id's first size */
    char name[160];
};

/* How to read a csv trace (columns 1-based, 0 = absent). */
struct trace_csv {
    unsigned time_col, id_col, size_col, ttl_col;
    char delim;
    bool header;
};

/* Reads a file in the named format (NULL: guess from name and content). */
int trace_load(struct trace *t, const char *path, const char *format,
               const struct trace_csv *csv, char *err, size_t errlen);
/* Generates a synthetic trace from spec with seed. */
int trace_synth(struct trace *t, const char *spec, uint64_t seed, char *err, size_t errlen);
/*
 * Writes the trace for other simulators: libCacheSim txt (ids only) when
 * path ends in .txt, else oracleGeneral binary with each request's next
 * access (the request index of the next request for the same id, -1 for
 * none).
 */
int trace_write(const struct trace *t, const char *path, char *err, size_t errlen);
/* Counts distinct objects (fills unique, unique_bytes). */
int trace_count_unique(struct trace *t);
void trace_free(struct trace *t);

#endif
