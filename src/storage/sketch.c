/*
 * sketch.c -- Caffeine's 4-bit count-min sketch (see sketch.h).
 *
 *   table: words of 16 x 4-bit counters, in blocks of 8 words (64 bytes)
 *
 *   block = (h_lo & blockMask) * 8
 *   for row i in 0..3:  byte b = (h_hi >> 8i) & 0xff
 *       word    = block + 2i + (b & 1)      (two words per row)
 *       counter = (b >> 1) & 15             (which nibble in the word)
 */
#include "storage/sketch.h"

#include <stdlib.h>

#define RESET_MASK 0x7777777777777777ULL
#define ONE_MASK 0x1111111111111111ULL

struct sketch {
    uint64_t *table;
    uint64_t words;             /* a power of two, >= 8, or 0 */
    uint64_t block_mask;        /* blocks - 1 */
    uint64_t sample;            /* increments between resets */
    uint64_t size;              /* increments since the last reset, less aged */
};

struct sketch *sketch_create(void) { return calloc(1, sizeof(struct sketch)); }

void sketch_destroy(struct sketch **sp) {
    struct sketch *s = *sp;
    if (s == NULL)
        return;
    free(s->table);
    free(s);
    *sp = NULL;
}

size_t sketch_words(const struct sketch *s) { return s->words; }
uint64_t sketch_sample(const struct sketch *s) { return s->table != NULL ? s->sample : 0; }
size_t sketch_bytes(const struct sketch *s) { return sizeof(*s) + s->words * 8; }

bool sketch_ensure(struct sketch *s, uint64_t n) {
    if (s->words >= n && s->table != NULL)
        return true;
    uint64_t words = 8;
    while (words < n)
        words <<= 1;
    uint64_t *t = calloc(words, sizeof(*t));
    if (t == NULL)
        return false;
    free(s->table);
    s->table = t;
    s->words = words;
    s->block_mask = (words >> 3) - 1;
    s->sample = n == 0 ? 10 : 10 * n;
    s->size = 0;
    return true;
}

/* The word and nibble of row i for hash h. */
static inline uint64_t *cell(const struct sketch *s, uint64_t h, unsigned i, unsigned *shift) {
    uint64_t block = ((h & 0xffffffffu) & s->block_mask) << 3;
    unsigned b = (unsigned)(h >> (32 + 8 * i)) & 0xff;
    *shift = ((b >> 1) & 15) << 2;
    return &s->table[block + (i << 1) + (b & 1)];
}

/*
 * Halves every counter.  size follows Caffeine: the odd counters each lose
 * half a count to truncation, so a quarter of their number (four rows per
 * key) comes off before halving.
 */
static void sketch_reset(struct sketch *s) {
    uint64_t odd = 0;
    for (uint64_t i = 0; i < s->words; i++) {
        odd += (uint64_t)__builtin_popcountll(s->table[i] & ONE_MASK);
        s->table[i] = (s->table[i] >> 1) & RESET_MASK;
    }
    s->size = (s->size - (odd >> 2)) >> 1;
}

void sketch_increment(struct sketch *s, uint64_t h) {
    if (s->table == NULL)
        return;
    bool added = false;
    for (unsigned i = 0; i < 4; i++) {
        unsigned sh;
        uint64_t *w = cell(s, h, i, &sh);
        if (((*w >> sh) & 15) != SKETCH_COUNTER_MAX) {
            *w += 1ULL << sh;
            added = true;
        }
    }
    if (added && ++s->size >= s->sample)
        sketch_reset(s);
}

unsigned sketch_estimate(const struct sketch *s, uint64_t h) {
    if (s->table == NULL)
        return 0;
    unsigned m = SKETCH_COUNTER_MAX;
    for (unsigned i = 0; i < 4; i++) {
        unsigned sh;
        const uint64_t *w = cell(s, h, i, &sh);
        unsigned v = (unsigned)(*w >> sh) & 15;
        if (v < m)
            m = v;
    }
    return m;
}
