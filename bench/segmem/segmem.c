/*
 * segmem.c -- the segment store's memory per item at bench/compare's
 * reference load (1,000,000 items, 16-byte keys, 100-byte values, flags 0,
 * no TTL), measured on an engine of its own (-o storage=seg, no server):
 * resident memory before and after, and the engine's account (the items'
 * bytes in segments, the index's bytes).  It stores through the engine
 * API, as cellard does; the item views the engine keeps per thread are a
 * few KiB in all.
 *
 *   make bench-segmem
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "storage/engine.h"

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
    struct engine_config c;
    engine_config_defaults(&c);
    c.seg = true;
    c.policy = "fifo";
    c.mem_limit = (size_t)1024 << 20;       /* bench/compare's -m 1024 */
    char err[128];
    struct engine *e = engine_create(&c, err, sizeof(err));
    if (e == NULL) {
        fprintf(stderr, "segmem: %s\n", err);
        return 1;
    }
    engine_clock_set(e, 1000000);
    long before = rss_kb();
    char val[100];
    memset(val, 'v', sizeof(val));
    struct iovec iov[8];
    for (long i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof(key), "key:%012ld", i % 1000000000000L);
        struct item *it = engine_item_alloc(e, key, 16, 0, 0, sizeof(val), NULL);
        int niov = it != NULL ? engine_item_iov(it, iov, 8) : 0;
        size_t off = 0;
        for (int k = 0; k < niov; k++) {
            memcpy(iov[k].iov_base, val + off, iov[k].iov_len);
            off += iov[k].iov_len;
        }
        enum engine_store_result r =
            it != NULL ? engine_store(e, it, ENGINE_SET, 0, NULL) : ENGINE_STORE_NO_MEMORY;
        engine_item_unref(e, it);
        if (r != ENGINE_STORED) {
            fprintf(stderr, "segmem: store %ld failed\n", i);
            return 1;
        }
        if (i % 64 == 0)
            engine_step(e, 1);              /* the index grows as the server's step would */
    }
    while (engine_step(e, 1) > 0)
        ;
    long after = rss_kb();
    struct engine_stats st;
    engine_stats(e, &st);
    double items = (double)st.curr_items;
    printf("segment store, %llu items of 16-byte keys and 100-byte values: %.1f bytes each in "
           "segments, %.2f in the index, %.1f resident\n",
           (unsigned long long)st.curr_items, (double)st.bytes / items,
           (double)st.hash_bytes / items, (double)(after - before) * 1024.0 / items);
    engine_destroy(&e);
    return 0;
}
