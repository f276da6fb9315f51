/*
 * near.c -- the near-cache: an in-process cache in front of the servers.
 *
 * It is the project's storage engine (client/ may use storage/ for this
 * alone) with a byte bound and an eviction policy (s3fifo by default),
 * every entry stored with the near-cache's TTL as its exptime, so the
 * engine drops it once that many seconds have passed.  Staleness bound: a
 * value read through the near-cache is at most ttl (+1, the engine's clock
 * counts whole seconds) seconds older than what the servers had when it
 * was fetched; a handle's own writes (set, delete, incr, touch, ...)
 * remove its key first, so a handle reads its own writes, but another
 * client's writes become visible only when the entry expires.
 *
 * Read-your-writes across threads: a handle's write drops the key before
 * it is sent and again once it is answered, and a value fetched from the
 * servers is kept only if no drop of its key came in between (a
 * generation per key stripe, read before the fetch and checked after the
 * store, the store undone when it moved): another handle's read that
 * fetched the old value just before the write landed cannot leave it
 * behind for the writer to read back.
 *
 * Shared: any number of handles on any threads may use one near-cache
 * (the engine is thread-safe).  Only plain get and multi-get read it;
 * gets/gats (which want the servers' cas), gat and leases go to the
 * servers.  Values larger than what fits the engine's largest item are not
 * kept.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/handle_int.h"
#include "storage/engine.h"

#define NEAR_PAGE (64u * 1024)
#define NEAR_CHUNK_MAX (32u * 1024)
#define NEAR_ITEM_MAX (1024u * 1024)
#define NEAR_IOV 64               /* >= engine_item_iov_max() for these sizes */
#define NEAR_GENS 256             /* generation stripes (keys hash onto them) */

struct cellar_near {
    struct engine *e;
    int ttl;
    atomic_uint gens[NEAR_GENS];  /* bumped by every drop of a key of the stripe */
};

static atomic_uint *gen_of(struct cellar_near *n, const char *key, size_t nkey) {
    return &n->gens[engine_key_hash(key, nkey) % NEAR_GENS];
}

unsigned cl_near_gen(struct cellar_near *n, const char *key, size_t nkey) {
    return atomic_load_explicit(gen_of(n, key, nkey), memory_order_acquire);
}

int cellar_near_create(struct cellar_near **out, size_t bytes, int ttl_s, const char *policy) {
    *out = NULL;
    if (bytes < 2 * NEAR_PAGE || ttl_s <= 0)
        return CELLAR_EINVAL;
    struct engine_config cfg;
    engine_config_defaults(&cfg);
    size_t imax = bytes / 2 < NEAR_ITEM_MAX ? bytes / 2 : NEAR_ITEM_MAX;
    cfg.mem_limit = bytes;
    cfg.page_size = NEAR_PAGE;
    cfg.slab_chunk_max = NEAR_CHUNK_MAX;
    cfg.item_size_max = (uint32_t)(imax / NEAR_CHUNK_MAX * NEAR_CHUNK_MAX);
    cfg.policy = policy ? policy : "s3fifo";
    cfg.use_cas = true;         /* flush_all then spares what is stored in the same second */
    char err[256];
    struct cellar_near *n = calloc(1, sizeof(*n));
    if (n == NULL)
        return CELLAR_ENOMEM;
    n->e = engine_create(&cfg, err, sizeof(err));
    if (n->e == NULL || engine_item_iov_max(n->e) > NEAR_IOV) {
        engine_destroy(&n->e);
        free(n);
        return CELLAR_EINVAL;
    }
    n->ttl = ttl_s;
    *out = n;
    return CELLAR_OK;
}

void cellar_near_destroy(struct cellar_near **np) {
    struct cellar_near *n = *np;
    if (n == NULL)
        return;
    engine_destroy(&n->e);
    free(n);
    *np = NULL;
}

static void near_clock(struct cellar_near *n) {
    engine_clock_set(n->e, (uint32_t)time(NULL));
}

bool cl_near_get(struct cellar_near *n, const char *key, size_t nkey, struct cellar_item *it) {
    near_clock(n);
    struct item *x = engine_get(n->e, key, nkey, NULL);
    if (x == NULL)
        return false;
    struct iovec iov[NEAR_IOV];
    int k = engine_item_iov(x, iov, (int)(sizeof(iov) / sizeof(iov[0])));
    size_t len = item_nbytes(x);
    it->value = malloc(len + 1);
    if (it->value == NULL) {
        engine_item_unref(n->e, x);
        return false;
    }
    size_t off = 0;
    for (int i = 0; i < k; i++) {
        memcpy(it->value + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    it->value[len] = '\0';
    it->nvalue = len;
    it->flags = item_flags(x);
    it->cas = 0;
    it->status = CELLAR_OK;
    engine_item_unref(n->e, x);
    return true;
}

void cl_near_put(struct cellar_near *n, const char *key, size_t nkey, const char *value,
                 size_t nvalue, uint32_t flags, unsigned gen) {
    if (nvalue > UINT32_MAX || cl_near_gen(n, key, nkey) != gen)
        return;
    near_clock(n);
    enum engine_alloc_err why;
    struct item *x = engine_item_alloc(n->e, key, nkey, flags, n->ttl, (uint32_t)nvalue, &why);
    if (x == NULL)
        return;                 /* too large, or no room: it simply is not kept */
    struct iovec iov[NEAR_IOV];
    int k = engine_item_iov(x, iov, (int)(sizeof(iov) / sizeof(iov[0])));
    size_t off = 0;
    for (int i = 0; i < k; i++) {
        memcpy(iov[i].iov_base, value + off, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    engine_store(n->e, x, ENGINE_SET, 0, NULL);
    engine_item_unref(n->e, x);
    if (cl_near_gen(n, key, nkey) != gen)
        engine_delete(n->e, key, nkey, 0);   /* a drop came in between: undo */
}

void cl_near_forget(struct cellar_near *n, const char *key, size_t nkey) {
    atomic_fetch_add_explicit(gen_of(n, key, nkey), 1, memory_order_acq_rel);
    engine_delete(n->e, key, nkey, 0);
}

void cl_near_flush(struct cellar_near *n) {
    near_clock(n);
    engine_flush(n->e, 0);
}

void cellar_use_near(struct cellar *h, struct cellar_near *n) {
    h->near = n;
}
