/*
 * fuzz_driver.h -- the skeleton every mutation fuzzer in tests/fuzz shares.
 *
 * Each fuzz_*.c file is its own program, so this header holds static
 * functions and macros rather than a library.  A driver includes it,
 * writes its check_one(in, len) (the invariants of its codec), a corpus,
 * optionally a list of words the line mutator splices in, and ends with
 *
 *     static const struct fuzz_config cfg = {.name = "fuzz_x", ...};
 *     FUZZ_DRIVER(&cfg)
 *
 * which becomes main() for a plain run:
 *
 *   fuzz_x N        N mutated inputs from the driver's fixed seed
 *   fuzz_x N SEED   another deterministic stream
 *
 * or, built with -DLIBFUZZER, the libFuzzer target LLVMFuzzerTestOneInput
 * running the same check_one on each input.  Either build also takes
 *
 *   fuzz_x -write_corpus=DIR   the corpus, one file an entry (DIR made if missing)
 *   fuzz_x -write_dict=FILE    the words, as a libFuzzer dictionary (-dict=FILE)
 *
 * and exits: `make fuzz` seeds libFuzzer's corpus and dictionary so.
 *
 *   corpus entry --copy--> buffer --mutate x 1..max--> check_one
 *   (one input in 50: random bytes instead)
 *
 * The random stream is one xorshift64 state, fuzz_rng, which a driver's
 * checks may draw from too (the meta driver invents item views with it);
 * a run is therefore fully determined by its seed.  CHECK(c) aborts with
 * the file, the line, the failed expression and the input being checked
 * (set by the skeleton before each check_one), escaped as text or as hex.
 * The buffer an input is mutated in holds FUZZ_CAP bytes: define it before
 * the include for another size.
 */
#ifndef CELLAR_FUZZ_DRIVER_H
#define CELLAR_FUZZ_DRIVER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FUZZ_CAP
#define FUZZ_CAP 8192
#endif

/* One corpus entry: bytes that may hold NULs, hence the length. */
struct fuzz_entry {
    const char *s;
    size_t len;
};
#define FUZZ_ENTRY(x) {x, sizeof(x) - 1}

/*
 * What a driver tells the skeleton.  The fields after `check` only shape
 * the plain run's stream; a zero means "none" (no words, no long runs, no
 * first byte forced) and mutate NULL means fuzz_mutate_line.
 */
struct fuzz_config {
    const char *name;                        /* prefix of every message */
    void (*check)(const char *in, size_t len);
    void (*report)(long iters);              /* the closing line of a plain run */
    bool dump_hex;                           /* binary input: show it as hex */
    uint64_t seed;                           /* the default seed */
    const struct fuzz_entry *corpus;
    size_t ncorpus;
    size_t max_mutations;                    /* 1..max mutations an input */
    size_t random_max;                       /* random inputs are 0..max-1 bytes */
    unsigned char random_first;              /* nonzero: random inputs start with it */
    size_t (*mutate)(char *b, size_t len);   /* one mutation in place */
    /* for fuzz_mutate_line */
    const char *const *words;
    size_t nwords;
    struct fuzz_entry interesting;           /* bytes that matter to the grammar */
    const size_t *run_sizes;                 /* lengths of long runs */
    size_t nrun_sizes;
    const char *run_fill;                    /* a long run is one of these bytes */
};

/* The one mutable state of a run: the config, the rng, the current input. */
static const struct fuzz_config *fuzz_cfg;
static uint64_t fuzz_rng = 1;
static const char *fuzz_cur_buf;
static size_t fuzz_cur_len;

/* ---------------------------------------------------------------------- */
/* Failing loudly                                                           */
/* ---------------------------------------------------------------------- */

/* The input that failed, at most 400 bytes of it, escaped or in hex. */
static inline void fuzz_dump(const char *buf, size_t len) {
    if (fuzz_cfg != NULL && fuzz_cfg->dump_hex) {
        fprintf(stderr, "input (%zu bytes): ", len);
        for (size_t i = 0; i < len && i < 400; i++)
            fprintf(stderr, "%02x", (unsigned char)buf[i]);
        fprintf(stderr, "%s\n", len > 400 ? "..." : "");
        return;
    }
    fprintf(stderr, "input (%zu bytes): \"", len);
    for (size_t i = 0; i < len && i < 400; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c >= 32 && c < 127 && c != '"' && c != '\\')
            fputc(c, stderr);
        else
            fprintf(stderr, "\\x%02x", c);
    }
    fprintf(stderr, "%s\"\n", len > 400 ? "..." : "");
}

static inline void fuzz_fail(const char *file, int line, const char *what) {
    fprintf(stderr, "%s: %s:%d: check failed: %s\n", fuzz_cfg ? fuzz_cfg->name : "fuzz", file,
            line, what);
    fuzz_dump(fuzz_cur_buf, fuzz_cur_len);
    abort();
}

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c))                                                                 \
            fuzz_fail(__FILE__, __LINE__, #c);                                    \
    } while (0)

/* Runs one input through the driver's checks, remembered for CHECK. */
static inline void fuzz_check(const char *in, size_t len) {
    fuzz_cur_buf = in;
    fuzz_cur_len = len;
    fuzz_cfg->check(in, len);
}

/* ---------------------------------------------------------------------- */
/* Randomness                                                               */
/* ---------------------------------------------------------------------- */

static inline uint64_t fuzz_rnd(void) {
    fuzz_rng ^= fuzz_rng << 13;
    fuzz_rng ^= fuzz_rng >> 7;
    fuzz_rng ^= fuzz_rng << 17;
    return fuzz_rng;
}

/* A number in [0, n); 0 when n is 0. */
static inline size_t fuzz_below(size_t n) {
    return n ? (size_t)(fuzz_rnd() % n) : 0;
}

/* ---------------------------------------------------------------------- */
/* Mutations: each takes the input in place and returns its new length.    */
/* The order of the draws in each is part of what a seed means, so a       */
/* driver's stream stays the same from one version to the next.            */
/* ---------------------------------------------------------------------- */

/* Inserts n bytes at `at`, cutting them short where the buffer ends. */
static inline size_t fuzz_insert(char *b, size_t len, size_t at, const char *s, size_t n) {
    if (len + n > FUZZ_CAP)
        n = FUZZ_CAP - len;
    memmove(b + at + n, b + at, len - at);
    memcpy(b + at, s, n);
    return len + n;
}

static inline size_t fuzz_flip_bit(char *b, size_t len) {
    if (len)
        b[fuzz_below(len)] ^= (char)(1u << (fuzz_rnd() % 8));
    return len;
}

static inline size_t fuzz_random_byte(char *b, size_t len) {
    if (len)
        b[fuzz_below(len)] = (char)fuzz_rnd();
    return len;
}

static inline size_t fuzz_insert_random(char *b, size_t len) {
    char r[8];
    size_t n = 1 + fuzz_below(sizeof(r));
    for (size_t i = 0; i < n; i++)
        r[i] = (char)fuzz_rnd();
    return fuzz_insert(b, len, fuzz_below(len + 1), r, n);
}

/* Another corpus entry inserted at `at`: pipelined requests. */
static inline size_t fuzz_splice_at(char *b, size_t len, size_t i, size_t at) {
    return fuzz_insert(b, len, at, fuzz_cfg->corpus[i].s, fuzz_cfg->corpus[i].len);
}

static inline size_t fuzz_delete_run(char *b, size_t len) {
    if (!len)
        return len;
    size_t at = fuzz_below(len), n = 1 + fuzz_below(len - at);
    memmove(b + at, b + at + n, len - at - n);
    return len - n;
}

static inline size_t fuzz_duplicate_chunk(char *b, size_t len) {
    if (!len)
        return len;
    static char tmp[FUZZ_CAP];
    size_t at = fuzz_below(len), n = 1 + fuzz_below(len - at);
    memcpy(tmp, b + at, n);
    return fuzz_insert(b, len, fuzz_below(len + 1), tmp, n);
}

/*
 * The mutator of the line protocols (text, meta, and the replies to them):
 * besides bit and byte noise it inserts the grammar's words, long runs
 * (keys and lines at their limits), other entries, and drops line ends.
 */
static inline size_t fuzz_mutate_line(char *b, size_t len) {
    const struct fuzz_config *c = fuzz_cfg;
    switch (fuzz_rnd() % 10) {
    case 0:
        return fuzz_flip_bit(b, len);
    case 1: /* an interesting byte */
        if (len)
            b[fuzz_below(len)] = c->interesting.s[fuzz_below(c->interesting.len)];
        return len;
    case 2: /* truncate */
        return fuzz_below(len + 1);
    case 3: { /* insert a word; "" stands for one NUL */
        const char *w = c->words[fuzz_below(c->nwords)];
        size_t n = w[0] ? strlen(w) : 1;
        return fuzz_insert(b, len, fuzz_below(len + 1), w, n);
    }
    case 4:
        return fuzz_insert_random(b, len);
    case 5:
        return fuzz_delete_run(b, len);
    case 6: { /* a long run: long keys, long lines */
        static char run[FUZZ_CAP];
        size_t n = c->run_sizes[fuzz_below(c->nrun_sizes)];
        if (n > FUZZ_CAP)
            n = FUZZ_CAP;
        memset(run, c->run_fill[fuzz_rnd() % strlen(c->run_fill)], n);
        return fuzz_insert(b, len, fuzz_below(len + 1), run, n);
    }
    case 7: {
        size_t i = fuzz_below(c->ncorpus);
        return fuzz_splice_at(b, len, i, fuzz_below(len + 1));
    }
    case 8: /* drop the line end */
        while (len && (b[len - 1] == '\n' || b[len - 1] == '\r'))
            len--;
        return len;
    default:
        return fuzz_duplicate_chunk(b, len);
    }
}

/* ---------------------------------------------------------------------- */
/* The run                                                                  */
/* ---------------------------------------------------------------------- */

/* The next input: mutated corpus entry, or (one in 50) random bytes. */
static inline size_t fuzz_next_input(char *b) {
    const struct fuzz_config *c = fuzz_cfg;
    size_t len;
    if (fuzz_rnd() % 50 == 0) {
        len = fuzz_below(c->random_max);
        for (size_t i = 0; i < len; i++)
            b[i] = (char)fuzz_rnd();
        if (len && c->random_first)
            b[0] = (char)c->random_first;
        return len;
    }
    size_t e = fuzz_below(c->ncorpus);
    len = c->corpus[e].len;
    memcpy(b, c->corpus[e].s, len);
    size_t (*mutate)(char *, size_t) = c->mutate ? c->mutate : fuzz_mutate_line;
    for (size_t m = 1 + fuzz_below(c->max_mutations); m > 0; m--)
        len = mutate(b, len);
    return len;
}

/* ---------------------------------------------------------------------- */
/* The corpus and the words as files, for libFuzzer                         */
/* ---------------------------------------------------------------------- */

/* Each corpus entry into dir/seed-NNN; 0, or -1 with the reason said. */
static inline int fuzz_write_corpus(const struct fuzz_config *c, const char *dir) {
    char path[4096];
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        perror(dir);
        return -1;
    }
    for (size_t i = 0; i < c->ncorpus; i++) {
        snprintf(path, sizeof(path), "%s/seed-%03zu", dir, i);
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(c->corpus[i].s, 1, c->corpus[i].len, f) != c->corpus[i].len ||
            fclose(f) != 0) {
            perror(path);
            return -1;
        }
    }
    return 0;
}

/* The words as a libFuzzer dictionary: one "..." a line, bytes escaped as \xNN. */
static inline int fuzz_write_dict(const struct fuzz_config *c, const char *file) {
    FILE *f = fopen(file, "w");
    if (f == NULL) {
        perror(file);
        return -1;
    }
    for (size_t i = 0; i < c->nwords; i++) {
        const char *w = c->words[i];
        size_t n = w[0] ? strlen(w) : 1;        /* "" stands for one NUL */
        fputc('"', f);
        for (size_t j = 0; j < n; j++) {
            unsigned char ch = (unsigned char)w[j];
            if (ch >= 32 && ch < 127 && ch != '"' && ch != '\\')
                fputc(ch, f);
            else
                fprintf(f, "\\x%02x", ch);
        }
        fputs("\"\n", f);
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* -write_corpus=DIR or -write_dict=FILE among args: done (exit code), else -1. */
static inline int fuzz_write_asked(const struct fuzz_config *c, int argc, char **argv) {
    bool asked = false, failed = false;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-write_corpus=", 14) == 0) {
            asked = true;
            failed |= fuzz_write_corpus(c, argv[i] + 14) != 0;
        } else if (strncmp(argv[i], "-write_dict=", 12) == 0) {
            asked = true;
            failed |= fuzz_write_dict(c, argv[i] + 12) != 0;
        }
    }
    return !asked ? -1 : failed ? 1 : 0;
}

/* The corpus as it is, then N inputs from the seed; the driver reports. */
static inline int fuzz_main(int argc, char **argv, const struct fuzz_config *c) {
    static char b[FUZZ_CAP];
    int written = fuzz_write_asked(c, argc, argv);
    if (written >= 0)
        return written;
    long iters = argc > 1 ? atol(argv[1]) : 200000;

    fuzz_cfg = c;
    fuzz_rng = argc > 2 ? strtoull(argv[2], NULL, 0) : c->seed;
    if (fuzz_rng == 0)
        fuzz_rng = 1;
    for (size_t i = 0; i < c->ncorpus; i++)
        fuzz_check(c->corpus[i].s, c->corpus[i].len);
    for (long it = 0; it < iters; it++) {
        size_t len = fuzz_next_input(b);
        fuzz_check(b, len);
    }
    c->report(iters);
    return 0;
}

/*
 * For libFuzzer the rng restarts from the input's size, so a check that
 * draws from it (the meta driver's formatter views) is repeatable.
 * libFuzzer calls LLVMFuzzerInitialize before it reads its own flags, so
 * -write_corpus and -write_dict are done there, before it could refuse them.
 * Its mutations are, one time in two, its own (LLVMFuzzerMutate: bytes,
 * the dictionary, what comparisons in the code were seen to want) and
 * otherwise the driver's, which know the grammar (the line mutator's
 * words and runs, a JSON value swapped for another, a binary header's
 * fields); either way from libFuzzer's seed.
 */
#ifdef LIBFUZZER
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static inline size_t fuzz_custom_mutate(const struct fuzz_config *c, uint8_t *data, size_t size,
                                        size_t max_size, unsigned int seed) {
    static char b[FUZZ_CAP];
    fuzz_cfg = c;
    fuzz_rng = 0x9e3779b97f4a7c15ULL * ((uint64_t)seed + 1);
    if (fuzz_rnd() % 2 == 0)
        return LLVMFuzzerMutate(data, size, max_size);
    size_t len = size < FUZZ_CAP ? size : FUZZ_CAP;
    memcpy(b, data, len);
    len = (c->mutate ? c->mutate : fuzz_mutate_line)(b, len);
    len = len < max_size ? len : max_size;
    memcpy(data, b, len);
    return len;
}

#define FUZZ_DRIVER(cfgp)                                                         \
    int LLVMFuzzerInitialize(int *argc, char ***argv);                            \
    int LLVMFuzzerInitialize(int *argc, char ***argv) {                           \
        int written = fuzz_write_asked((cfgp), *argc, *argv);                     \
        if (written >= 0)                                                         \
            exit(written);                                                        \
        return 0;                                                                 \
    }                                                                             \
    size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,   \
                                   unsigned int seed);                            \
    size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,   \
                                   unsigned int seed) {                           \
        return fuzz_custom_mutate((cfgp), data, size, max_size, seed);            \
    }                                                                             \
    int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);           \
    int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {          \
        fuzz_cfg = (cfgp);                                                        \
        fuzz_rng = 0x9e3779b97f4a7c15ULL ^ size;                                  \
        fuzz_check((const char *)data, size);                                     \
        return 0;                                                                 \
    }
#else
#define FUZZ_DRIVER(cfgp)                                                         \
    int main(int argc, char **argv) {                                             \
        return fuzz_main(argc, argv, (cfgp));                                     \
    }
#endif

#endif
