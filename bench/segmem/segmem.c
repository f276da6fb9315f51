/*
 * segmem.c -- the segment store's memory per item at bench/compare's
 * reference load (1,000,000 items, 16-byte keys, 100-byte values, flags 0,
 * no TTL), measured on the store alone: resident memory before and after,
 * and the store's own account (bytes written in segments, index bytes).
 *
 *   make bench-segmem
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/seg.h"

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    while (f != NULL && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            v = atol(line + 6);
    if (f != NULL)
        fclose(f);
    return v;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    struct seg_config c;
    seg_config_defaults(&c);
    c.mem_limit = (size_t)1024 << 20;       /* bench/compare's -m 1024 */
    char err[128];
    struct seg_store *s = seg_store_create(&c, err, sizeof(err));
    if (s == NULL) {
        fprintf(stderr, "segmem: %s\n", err);
        return 1;
    }
    seg_store_clock_set(s, 1000000);
    long before = rss_kb();
    char val[100];
    memset(val, 'v', sizeof(val));
    for (long i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof(key), "key:%012ld", i % 1000000000000L);
        if (seg_store_set(s, SEG_SET, key, 16, val, sizeof(val), 0, 0, 0, NULL) != SEG_STORED) {
            fprintf(stderr, "segmem: store %ld failed\n", i);
            return 1;
        }
        if (i % 64 == 0)
            seg_store_step(s, 1);           /* the index grows as the server's step would */
    }
    while (seg_store_step(s, 1) > 0)
        ;
    long after = rss_kb();
    struct seg_stats st;
    seg_store_stats(s, &st);
    double items = (double)st.live_items;
    printf("segment store, %llu items of 16-byte keys and 100-byte values: %.1f bytes each in "
           "segments, %.2f in the index, %.1f resident\n",
           (unsigned long long)st.live_items, (double)st.written_bytes / items,
           (double)st.index_bytes / items, (double)(after - before) * 1024.0 / items);
    seg_store_destroy(&s);
    return 0;
}
