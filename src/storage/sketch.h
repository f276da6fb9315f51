/*
 * sketch.h -- a frequency sketch: how often a key has been seen lately,
 * approximately, in 4 bits per counter (W-TinyLFU's admission filter).
 *
 * This is Caffeine's FrequencySketch: a count-min sketch of depth 4 with
 * 4-bit counters packed 16 to a 64-bit word, a table of ceilPow2(n) words
 * for a cache of n items, and each key's four counters confined to one
 * 64-byte block (8 words) so a lookup touches one cache line.  Every
 * increment raises all four counters (standard, not conservative, update),
 * each saturating at 15; the estimate is the smallest of the four.  After
 * 10 x n increments that changed some counter (the sample), every counter
 * is halved, which ages old popularity away ("reset").
 *
 * Keys are given as 64-bit hashes (ht_hash()).
 *
 * Memory: sketch_ensure() allocates (and clears) a larger table when the
 * cache grows past the table; like Caffeine, counts seen before the resize
 * are forgotten.  8 bytes per item at most, outside the engine's -m.
 *
 * Threading: none of its own; the owner's lock covers it.
 */
#ifndef CELLAR_STORAGE_SKETCH_H
#define CELLAR_STORAGE_SKETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SKETCH_COUNTER_MAX 15

struct sketch;

/* An empty sketch with no table (every estimate 0), or NULL. */
struct sketch *sketch_create(void);
void sketch_destroy(struct sketch **s);

/*
 * Makes the table fit a cache of n items: when the table has fewer than n
 * words, a cleared one of ceilPow2(n) words (at least 8) replaces it and
 * the sample becomes 10 x n.  Returns false when memory is short (the old
 * table stays).
 */
bool sketch_ensure(struct sketch *s, uint64_t n);

/* Counts one occurrence of the key with hash h. */
void sketch_increment(struct sketch *s, uint64_t h);
/* The estimated recent count of h, 0..15. */
unsigned sketch_estimate(const struct sketch *s, uint64_t h);

/* Increments between resets (10 x n at the last resize; 0 with no table). */
uint64_t sketch_sample(const struct sketch *s);
/* Words in the table and bytes held. */
size_t sketch_words(const struct sketch *s);
size_t sketch_bytes(const struct sketch *s);

#endif
